// `MnemonStore`: LangGraph.js's `BaseStore` on a mnemon engine.
//
// The mapping is the Python package's `mnemon.langgraph.MnemonStore`, so a
// store written by one door reads the same from the other:
//
// * A namespace tuple is one mnemon namespace: `<prefix>:` and the labels
//   joined by `.`, each label escaped (characters outside `[A-Za-z0-9_-]`
//   become `@XX` per UTF-8 byte, `@` included); a name over 128 characters
//   becomes `<prefix>:@@<SHA-256 of the tuple as JSON>`. Every tuple used is
//   recorded in the catalogue namespace `<prefix>::catalog`, which
//   `listNamespaces` reads.
// * An item is one memory (tier `permanent` by default): its content is the
//   value as JSON text, its slot key and session `item.<escaped key>` (a
//   later put supersedes it; the chain stays in `history`), the key itself
//   its `source_ref`. `createdAt` is when the key's first version was
//   written, `updatedAt` when the current one was.
// * `search` without a query lists the namespaces under the prefix, newest
//   update first; with a query it is mnemon's hybrid recall in each, merged
//   by score; filters apply to the values; matching items recall did not
//   rank fill the page after the ranked ones, unscored.
// * A put with `index: false` is not embedded (a fixed vector and the entity
//   `mnemon.unindexed`): search with a query never ranks it.
// * With LangGraph's `index` configuration, search with a query ranks items
//   as `InMemoryStore` does: each text at the index's `fields` (or a put's
//   own `index` paths) gets a vector, kept as a memory of the sibling
//   namespace `fieldNamespace(name)`, and an item scores the highest cosine
//   similarity of the query to its texts; the item's own memory gets the mean
//   of its vectors, so other doors still recall it by meaning.

import { createHash } from "node:crypto";
import {
  BaseStore,
  getTextAtPath,
  InvalidNamespaceError,
  type GetOperation,
  type Item,
  type ListNamespacesOperation,
  type MatchCondition,
  type Operation,
  type OperationResults,
  type PutOperation,
  type SearchItem,
  type SearchOperation,
} from "@langchain/langgraph-checkpoint";
import { Engine, type CallerEmbedder, type OpenOptions } from "./engine.js";
import { InvalidInputError, NotFoundError } from "./errors.js";
import type { Memory } from "./types.js";

/** Longest mnemon namespace (the engine's limit). */
const MAX_NAMESPACE_CHARS = 128;
/** Longest escaped key kept readable in the slot key and session; longer keys use their SHA-256. */
const MAX_KEY_IDENT_CHARS = 100;
/** Longest key, in bytes of UTF-8 as stored: the engine's limit for `source_ref`. */
const MAX_KEY_BYTES = 256;
/** Largest page of `list` and largest `top_k`. */
const PAGE = 1000;
/** Entity of an item put with `index: false`. */
export const UNINDEXED = "mnemon.unindexed";

const SAFE = /^[A-Za-z0-9_-]$/;
const PREFIX = /^[A-Za-z0-9_-]{1,32}$/;
const PLACEHOLDER = String.raw`\[[A-Z][A-Z0-9_]*\]`;
const BARE_PLACEHOLDER = new RegExp(`(?:${PLACEHOLDER}|[0-9.eE+-])*${PLACEHOLDER}(?:${PLACEHOLDER}|[0-9.eE+-])*`, "y");

/**
 * A namespace label or key in mnemon's namespace alphabet: characters of
 * `[A-Za-z0-9_-]` as themselves, every other one as `@XX` per byte of its
 * UTF-8 (upper-case hex). Injective; the output never holds `.`, `:` or `@@`.
 */
export function escapeLabel(label: string): string {
  if (!label.isWellFormed()) throw new InvalidNamespaceError(`label ${JSON.stringify(label)} is not valid Unicode text`);
  let out = "";
  for (const ch of label) {
    if (SAFE.test(ch)) out += ch;
    else for (const b of Buffer.from(ch, "utf8")) out += "@" + b.toString(16).toUpperCase().padStart(2, "0");
  }
  return out;
}

const sha256 = (text: string): string => createHash("sha256").update(text, "utf8").digest("hex");

/** The tuple as JSON the way the Python door writes it (`json.dumps`: `", "` between items). */
function tupleJson(ns: readonly string[]): string {
  return "[" + ns.map((l) => JSON.stringify(l)).join(", ") + "]";
}

/** Bytes as letters `a`–`p` (no digits, so no personal-data pattern can match). */
function letters(data: Buffer): string {
  let out = "";
  for (const b of data) out += String.fromCharCode(97 + (b >> 4), 97 + (b & 15));
  return out;
}

function unletters(text: string): Buffer {
  const out = Buffer.alloc(text.length / 2);
  for (let i = 0; i < text.length; i += 2) out[i / 2] = ((text.charCodeAt(i) - 97) << 4) | (text.charCodeAt(i + 1) - 97);
  return out;
}

/** The key as the memory's `source_ref`: itself when plain text, else as a JSON string literal. */
function keyRef(key: string): string {
  const plain =
    key !== "" &&
    key === key.trim() &&
    !key.startsWith('"') &&
    ![...key].some((c) => {
      const n = c.codePointAt(0) ?? 0;
      return n < 32 || (n >= 127 && n < 160);
    });
  return plain ? key : JSON.stringify(key);
}

function keyFromRef(ref: string | null | undefined): string {
  if (ref === null || ref === undefined) return "";
  return ref.startsWith('"') ? String(JSON.parse(ref)) : ref;
}

/** The value stored as `content`; a redaction placeholder inside a JSON number is read back as the string it now is. */
function decodeValue(content: string): Record<string, unknown> {
  let value: unknown;
  try {
    value = JSON.parse(content);
  } catch {
    value = JSON.parse(quoteBarePlaceholders(content));
  }
  if (value === null || typeof value !== "object" || Array.isArray(value)) {
    throw new InvalidInputError("stored content is not a JSON object", "value");
  }
  return value as Record<string, unknown>;
}

function quoteBarePlaceholders(text: string): string {
  let out = "";
  let i = 0;
  while (i < text.length) {
    if (text[i] === '"') {
      let j = i + 1;
      while (j < text.length && text[j] !== '"') j += text[j] === "\\" ? 2 : 1;
      out += text.slice(i, j + 1);
      i = j + 1;
      continue;
    }
    BARE_PLACEHOLDER.lastIndex = i;
    const m = BARE_PLACEHOLDER.exec(text);
    if (m && m[0].length > 0) {
      out += JSON.stringify(m[0]);
      i += m[0].length;
      continue;
    }
    out += text[i];
    i += 1;
  }
  return out;
}

function isPlainObject(v: unknown): v is Record<string, unknown> {
  return v !== null && typeof v === "object" && !Array.isArray(v);
}

/** LangGraph's filter semantics: equality, nested objects, `$eq $ne $gt $gte $lt $lte $in $nin`. */
function compare(itemValue: unknown, filterValue: unknown): boolean {
  if (isPlainObject(filterValue)) {
    if (Object.keys(filterValue).some((k) => k.startsWith("$"))) {
      return Object.entries(filterValue).every(([op, operand]) => operator(itemValue, op, operand));
    }
    if (!isPlainObject(itemValue)) return false;
    return Object.entries(filterValue).every(([k, v]) => compare(itemValue[k], v));
  }
  if (Array.isArray(filterValue)) {
    return (
      Array.isArray(itemValue) && itemValue.length === filterValue.length && filterValue.every((f, i) => compare(itemValue[i], f))
    );
  }
  return itemValue === filterValue;
}

function operator(value: unknown, op: string, operand: unknown): boolean {
  switch (op) {
    case "$eq":
      return compare(value, operand);
    case "$ne":
      return !compare(value, operand);
    case "$in":
      return Array.isArray(operand) && operand.some((o) => compare(value, o));
    case "$nin":
      return !Array.isArray(operand) || !operand.some((o) => compare(value, o));
    case "$gt":
    case "$gte":
    case "$lt":
    case "$lte": {
      if (typeof value !== "number" && typeof value !== "string") return false;
      const a = Number(value);
      const b = Number(operand);
      if (Number.isNaN(a) || Number.isNaN(b)) return false;
      return op === "$gt" ? a > b : op === "$gte" ? a >= b : op === "$lt" ? a < b : a <= b;
    }
    default:
      throw new InvalidInputError(`filter: unsupported operator ${JSON.stringify(op)}`, "filter");
  }
}

function matches(condition: MatchCondition, ns: readonly string[]): boolean {
  const path = condition.path;
  if (ns.length < path.length) return false;
  let pairs: [string, string][];
  if (condition.matchType === "prefix") pairs = path.map((p, i) => [ns[i]!, p]);
  else if (condition.matchType === "suffix") pairs = path.map((p, i) => [ns[ns.length - path.length + i]!, p]);
  else throw new InvalidInputError(`matchType: unsupported ${JSON.stringify(condition.matchType)}`, "matchType");
  return pairs.every(([k, p]) => p === "*" || k === p);
}

function checkLabels(namespace: unknown, allowEmpty = true): string[] {
  if (!Array.isArray(namespace)) throw new InvalidNamespaceError(`namespace must be an array of strings, got ${JSON.stringify(namespace)}`);
  if (namespace.length === 0 && !allowEmpty) throw new InvalidNamespaceError("namespace cannot be empty");
  for (const label of namespace) {
    if (typeof label !== "string") throw new InvalidNamespaceError(`namespace label ${JSON.stringify(label)} is not a string`);
    if (label === "") throw new InvalidNamespaceError(`namespace labels cannot be empty strings: ${JSON.stringify(namespace)}`);
    if (label.includes(".")) throw new InvalidNamespaceError(`namespace label ${JSON.stringify(label)} contains a period`);
  }
  return namespace as string[];
}

function compareTuples(a: readonly string[], b: readonly string[]): number {
  for (let i = 0; i < Math.min(a.length, b.length); i++) {
    if (a[i] !== b[i]) return a[i]! < b[i]! ? -1 : 1;
  }
  return a.length - b.length;
}

/** The mean of `vectors` scaled to unit length, or the fixed vector for none. */
function unitMean(vectors: number[][], dims: number): number[] {
  const total = new Array(dims).fill(0);
  for (const v of vectors) v.forEach((x, i) => (total[i] += x));
  const norm = Math.hypot(...total);
  if (norm === 0 || !Number.isFinite(norm)) return fixedVector(dims);
  return total.map((x) => x / norm);
}

/** A fixed unit vector: items that are never searched by meaning need one. */
function fixedVector(dims: number): number[] {
  return new Array(dims).fill(1 / Math.sqrt(dims));
}

/** A LangChain `Embeddings` (what LangGraph's `IndexConfig.embeddings` holds). */
export interface EmbeddingsLike {
  /** Vectors of documents, one per text. */
  embedDocuments(texts: string[]): Promise<number[][]>;
  /** The vector of a query. */
  embedQuery(text: string): Promise<number[]>;
}

/**
 * LangGraph's `IndexConfig`: search with a query ranks items by the cosine
 * similarity of the query to the texts at `fields` of their values.
 */
export interface MnemonIndexConfig {
  /** Components of the vectors: must be the engine's `dim` (default: it). */
  dims?: number;
  /** JSON paths into the value whose texts are embedded (default `["$"]`, the whole value as JSON). */
  fields?: string[];
  /**
   * The model: only with {@link MnemonStore.open}, which opens the engine with
   * it (recorded as model id `engine.embedder_name`, default `langchain:` and
   * the class name). A store on an open engine searches with the engine's
   * embedder.
   */
  embeddings?: EmbeddingsLike;
}

/** Settings of {@link MnemonStore}. */
export interface MnemonStoreOptions {
  /** LangGraph's index configuration (see {@link MnemonIndexConfig}); none: search with a query is hybrid recall over whole values. */
  index?: MnemonIndexConfig;
  /** First part of every mnemon namespace the store uses, 1–32 characters of `[A-Za-z0-9_-]` (default `"lg"`). */
  prefix?: string;
  /** Tier of the memories (default `"permanent"`: never archived by maintenance). */
  tier?: "short_term" | "long_term" | "permanent";
  /** Kind of the memories (default `"fact"`). */
  kind?: string;
  /** Let `search` return items quarantined as injected instructions (default false). */
  includeQuarantined?: boolean;
}

/**
 * LangGraph.js `BaseStore` on a mnemon {@link Engine} (see the module
 * comment for the mapping, which is the Python door's).
 *
 * `new MnemonStore(engine, options)` uses an open engine (the caller closes
 * it); `MnemonStore.open(path, options)` opens one that {@link MnemonStore.close}
 * closes. Without `index`, search with a query is mnemon's hybrid recall over
 * whole values; with it, the cosine of the query to the indexed texts.
 *
 * @throws {InvalidInputError} a bad `prefix` (field `prefix`) or `index`
 *   (`index.dims` not the engine's, `index.fields`, `index.embeddings` on an
 *   engine opened without them).
 */
export class MnemonStore extends BaseStore {
  /** The engine underneath. */
  readonly engine: Engine;
  readonly #prefix: string;
  readonly #tier: string;
  readonly #kind: string;
  readonly #includeQuarantined: boolean;
  readonly #fields: string[] | null;
  #owned = false;
  /** mnemon namespace → tuple, once read from the catalogue. */
  #catalog: Promise<Map<string, string[]>> | null = null;
  /** Catalogue entries being written, by mnemon namespace. */
  readonly #registering = new Map<string, Promise<void>>();

  constructor(engine: Engine, options: MnemonStoreOptions = {}) {
    super();
    if (!(engine instanceof Engine)) throw new InvalidInputError("engine: expected a mnemon Engine", "engine");
    const { prefix = "lg", tier = "permanent", kind = "fact", includeQuarantined = false, index } = options;
    if (typeof prefix !== "string" || !PREFIX.test(prefix)) {
      throw new InvalidInputError(`prefix: ${JSON.stringify(prefix)} is not 1–32 characters of [A-Za-z0-9_-]`, "prefix");
    }
    this.engine = engine;
    this.#prefix = prefix;
    this.#tier = tier;
    this.#kind = kind;
    this.#includeQuarantined = Boolean(includeQuarantined);
    this.#fields = null;
    if (index !== undefined && index !== null) {
      if (!isPlainObject(index)) throw new InvalidInputError("index: expected an object (LangGraph's IndexConfig)", "index");
      const dims = index.dims ?? engine.dim;
      if (dims !== engine.dim) {
        throw new InvalidInputError(
          `index.dims: ${dims}, but the engine's embedder (${engine.modelId}) makes vectors of ${engine.dim} components`,
          "index.dims",
        );
      }
      const embedder = engine.embedder as (CallerEmbedder & { source?: unknown }) | null;
      if (index.embeddings !== undefined && embedder?.source !== index.embeddings) {
        throw new InvalidInputError(
          "index.embeddings: the store searches with its engine's embedder; use MnemonStore.open(path, {index}) to open the engine with this model",
          "index.embeddings",
        );
      }
      const fields = index.fields ?? ["$"];
      if (!Array.isArray(fields) || !fields.every((f) => typeof f === "string" && f !== "")) {
        throw new InvalidInputError("index.fields: expected an array of JSON paths (strings), such as ['text']", "index.fields");
      }
      this.#fields = [...fields];
    }
  }

  /**
   * Opens an engine on `path` (`engine` options as {@link Engine.open}) and a
   * store on it that owns it.
   *
   * @throws as {@link Engine.open} and the constructor.
   */
  static async open(path: string, options: MnemonStoreOptions & { engine?: OpenOptions } = {}): Promise<MnemonStore> {
    const { engine: engineOptions = {}, ...storeOptions } = options;
    const embeddings = storeOptions.index?.embeddings;
    let opened: OpenOptions = engineOptions;
    if (embeddings !== undefined) {
      if (engineOptions.embedder !== undefined) {
        throw new InvalidInputError("embedder: give the model once, as index.embeddings", "embedder");
      }
      if (typeof embeddings?.embedDocuments !== "function" || typeof embeddings?.embedQuery !== "function") {
        throw new InvalidInputError("index.embeddings: expected a LangChain Embeddings (embedDocuments, embedQuery)", "index.embeddings");
      }
      const named = (engineOptions as { embedder_name?: string }).embedder_name;
      const embedder: CallerEmbedder & { source: EmbeddingsLike } = {
        name: named ?? `langchain:${embeddings.constructor?.name ?? "Embeddings"}`,
        dims: storeOptions.index?.dims,
        source: embeddings,
        embed: async (texts, { query }) =>
          query ? Promise.all(texts.map((t) => embeddings.embedQuery(t))) : embeddings.embedDocuments(texts),
      };
      const { embedder_name: _, ...rest } = engineOptions as OpenOptions & { embedder_name?: string };
      opened = { ...rest, embedder };
    }
    const engine = await Engine.open(path, opened);
    try {
      const store = new MnemonStore(engine, storeOptions);
      store.#owned = true;
      return store;
    } catch (e) {
      await engine.close();
      throw e;
    }
  }

  /** Closes the engine if this store opened it ({@link MnemonStore.open}). */
  async close(): Promise<void> {
    if (this.#owned) await this.engine.close();
  }

  /** The mnemon namespace that holds the items of `namespace`. @throws {InvalidNamespaceError} */
  mnemonNamespace(namespace: string[]): string {
    const ns = checkLabels(namespace, false);
    const name = `${this.#prefix}:` + ns.map(escapeLabel).join(".");
    if (name.length <= MAX_NAMESPACE_CHARS) return name;
    return `${this.#prefix}:@@${sha256(tupleJson(ns))}`;
  }

  /** The mnemon namespace recording every namespace tuple used. */
  get catalogNamespace(): string {
    return `${this.#prefix}::catalog`;
  }

  static #ident(key: unknown): string {
    if (typeof key !== "string") throw new InvalidInputError(`key: expected a string, got ${typeof key}`, "key");
    if (Buffer.byteLength(keyRef(key), "utf8") > MAX_KEY_BYTES) {
      throw new InvalidInputError(`key: longer than ${MAX_KEY_BYTES} bytes of UTF-8`, "key");
    }
    if (key === "") return "item.@";
    let esc = escapeLabel(key);
    if (esc.length > MAX_KEY_IDENT_CHARS) esc = "@@" + sha256(key);
    return "item." + esc;
  }

  // -- catalogue ---------------------------------------------------------------

  #loadCatalog(): Promise<Map<string, string[]>> {
    this.#catalog ??= (async () => {
      const found = new Map<string, string[]>();
      let cursor: string | null | undefined = undefined;
      do {
        const page = await this.engine.list(this.catalogNamespace, { limit: PAGE, cursor, include_quarantined: true });
        for (const m of page.memories) {
          const entry = this.#catalogEntry(m);
          if (entry) found.set(entry[0], entry[1]);
        }
        cursor = page.next_cursor;
      } while (cursor);
      return found;
    })().catch((e) => {
      this.#catalog = null;
      throw e;
    });
    return this.#catalog;
  }

  /** (mnemon namespace, tuple) of catalogue memory `m`, or null for one this store did not write. */
  #catalogEntry(m: Memory): [string, string[]] | null {
    try {
      if (m.content.length % 2 || !/^[a-p]*$/.test(m.content)) return null;
      const ns: unknown = JSON.parse(unletters(m.content).toString("utf8"));
      if (!Array.isArray(ns) || !ns.every((l) => typeof l === "string")) return null;
      const name = this.mnemonNamespace(ns);
      if (m.key !== "ns." + sha256(name)) return null;
      return [name, ns];
    } catch {
      return null;
    }
  }

  async #register(ns: string[], name: string): Promise<void> {
    const catalog = await this.#loadCatalog();
    if (catalog.has(name)) return;
    let pending = this.#registering.get(name);
    if (!pending) {
      pending = (async () => {
        await this.engine.remember(this.catalogNamespace, letters(Buffer.from(tupleJson(ns), "utf8")), {
          key: "ns." + sha256(name),
          tier: "permanent",
          dedup: "off",
          vector: fixedVector(this.engine.dim),
        });
        catalog.set(name, ns);
      })().finally(() => this.#registering.delete(name));
      this.#registering.set(name, pending);
    }
    await pending;
  }

  // -- operations ----------------------------------------------------------------

  /**
   * Runs `operations` in order and resolves to one result per operation: an
   * `Item` or null for a get, `SearchItem[]` for a search, namespace arrays
   * for a list, undefined for a put or delete.
   *
   * @throws {InvalidNamespaceError} a bad namespace.
   * @throws {InvalidInputError} a bad key or value (not a JSON object, too large), a bad filter; nothing of that operation is written.
   * @throws {MnemonError} the engine's errors (ClosedError, …).
   */
  async batch<Op extends Operation[]>(operations: Op): Promise<OperationResults<Op>> {
    const results: unknown[] = [];
    const vectors = await this.#embedPuts(operations);
    for (const [i, op] of operations.entries()) {
      if ("matchConditions" in op || ("limit" in op && "offset" in op && !("namespacePrefix" in op) && !("key" in op))) {
        results.push(await this.#listNamespaces(op as ListNamespacesOperation));
      } else if ("namespacePrefix" in op) {
        results.push(await this.#search(op as SearchOperation));
      } else if ("value" in op) {
        results.push(await this.#put(op as PutOperation, vectors.get(i)));
      } else {
        results.push(await this.#get(op as GetOperation));
      }
    }
    return results as OperationResults<Op>;
  }

  async #find(name: string, ident: string): Promise<Memory | null> {
    const page = await this.engine.list(name, { session: ident, include_quarantined: true, limit: 1 });
    return page.memories[0] ?? null;
  }

  #item(namespace: string[], m: Memory, score?: number): SearchItem {
    const item: SearchItem = {
      namespace: [...namespace],
      key: keyFromRef(m.source_ref),
      value: decodeValue(m.content),
      createdAt: new Date(m.first_seen),
      updatedAt: new Date(m.valid_from),
    };
    if (score !== undefined) item.score = score;
    return item;
  }

  async #get(op: GetOperation): Promise<Item | null> {
    const ns = checkLabels(op.namespace);
    const m = await this.#find(this.mnemonNamespace(ns), MnemonStore.#ident(op.key));
    if (!m) return null;
    const { score: _, ...item } = this.#item(ns, m);
    return item;
  }

  /** The mnemon namespace holding the field vectors of the items of mnemon namespace `name` (stores with an index). */
  fieldNamespace(name: string): string {
    const facet = name + ":v";
    if (facet.length <= MAX_NAMESPACE_CHARS) return facet;
    return `${this.#prefix}:@@v${sha256(name)}`;
  }

  /** (path, text) of every text of a put's value its vectors are made of: the index's fields or the put's own paths. */
  #texts(op: PutOperation): [string, string][] {
    if (this.#fields === null || op.index === false || !isPlainObject(op.value)) return [];
    const paths = op.index ?? this.#fields;
    const out: [string, string][] = [];
    for (const path of paths) {
      const texts = path === "$" ? [JSON.stringify(op.value, null, 2)] : getTextAtPath(op.value, path);
      if (texts.length > 1) texts.forEach((t, i) => out.push([`${path}.${i}`, t]));
      else if (texts.length === 1) out.push([path, texts[0]!]);
    }
    return out;
  }

  /** (path, vector) of the texts of every put of `ops`, by position, embedded in one call. */
  async #embedPuts(ops: Operation[]): Promise<Map<number, [string, number[]][]>> {
    const out = new Map<number, [string, number[]][]>();
    if (this.#fields === null) return out;
    const wanted = new Map<number, [string, string][]>();
    ops.forEach((op, i) => {
      if ("value" in op && op.value !== null && op.value !== undefined) wanted.set(i, this.#texts(op as PutOperation));
    });
    const texts = [...wanted.values()].flatMap((pairs) => pairs.map(([, t]) => t));
    const vectors = texts.length ? await this.engine.embed(texts) : [];
    let k = 0;
    for (const [i, pairs] of wanted) out.set(i, pairs.map(([path]) => [path, vectors[k++]!]));
    return out;
  }

  async #forgetFields(facets: string, ident: string): Promise<void> {
    if ((await this.engine.list(facets, { session: ident, limit: 1, include_quarantined: true })).memories.length) {
      await this.engine.forget(facets, { session: ident, reason: "store put" });
    }
  }

  async #put(op: PutOperation, fields: [string, number[]][] = []): Promise<void> {
    const ns = checkLabels(op.namespace, false);
    const name = this.mnemonNamespace(ns);
    const ident = MnemonStore.#ident(op.key);
    if (op.value === null || op.value === undefined) {
      // Deleting an item the store does not hold is a no-op, as in every BaseStore.
      try {
        await this.engine.forget(name, { session: ident, reason: "store delete" });
      } catch (e) {
        if (!(e instanceof NotFoundError)) throw e;
      }
      if (this.#fields !== null) await this.#forgetFields(this.fieldNamespace(name), ident);
      return;
    }
    if (!isPlainObject(op.value)) throw new InvalidInputError(`value: expected an object, got ${typeof op.value}`, "value");
    if (op.index !== undefined && op.index !== false && !(Array.isArray(op.index) && op.index.every((p) => typeof p === "string"))) {
      throw new InvalidInputError("index: expected false or an array of JSON paths (strings)", "index");
    }
    let content: string;
    try {
      content = JSON.stringify(op.value);
    } catch (e) {
      throw new InvalidInputError(`value: not a JSON object: ${(e as Error).message}`, "value");
    }
    const size = Buffer.byteLength(content, "utf8");
    if (size > this.engine.maxContentBytes) {
      throw new InvalidInputError(`value: ${size} bytes as JSON, at most ${this.engine.maxContentBytes} allowed`, "value");
    }
    // With an index, search ranks by the field vectors and the item's own
    // vector is their mean (other doors' recall still finds it by meaning).
    let vector: number[] | undefined;
    if (this.#fields !== null) vector = unitMean(fields.map(([, v]) => v), this.engine.dim);
    else if (op.index === false) vector = fixedVector(this.engine.dim);
    await this.#register(ns, name);
    let id: number;
    try {
      ({ id } = await this.engine.remember(name, content, {
        key: ident,
        session: ident,
        source_ref: keyRef(op.key),
        tier: this.#tier as "permanent",
        kind: this.#kind,
        entities: op.index === false ? [UNINDEXED] : [],
        dedup: "off",
        vector,
      }));
    } catch (e) {
      // The item key is stored as the memory's key, session and source
      // reference: a refusal of any of them is a refusal of the key.
      if (e instanceof InvalidInputError && ["key", "session", "source_ref"].includes(e.field ?? "")) {
        const why = e.message.replace(new RegExp(`^${e.field}:? `), "");
        throw new InvalidInputError(`key: ${why}`, "key");
      }
      throw e;
    }
    if (this.#fields !== null) {
      const facets = this.fieldNamespace(name);
      await this.#forgetFields(facets, ident);
      for (const [path, v] of fields) {
        await this.engine.remember(facets, JSON.stringify({ item: id, field: path }), {
          session: ident,
          tier: "permanent",
          kind: "field",
          dedup: "off",
          vector: v,
        });
      }
    }
  }

  /** (item session, score) of the items of `name` whose field vectors best match `query`, best first. */
  async #vectorRanked(name: string, query: string, wanted: number): Promise<[string, number][]> {
    const facets = this.fieldNamespace(name);
    let topK = Math.max(1, Math.min(PAGE, wanted));
    for (;;) {
      let resp;
      try {
        resp = await this.engine.recall(facets, query, {
          top_k: topK,
          candidates: topK,
          mode: "dense",
          abstain_below: -1,
          include_quarantined: true,
          record_access: false,
          explain: true,
        });
      } catch (e) {
        if (e instanceof NotFoundError) return [];
        throw e;
      }
      const best = new Map<string, number>();
      for (const h of resp.hits) {
        const ident = h.memory?.session;
        const score = h.explain?.similarity;
        if (!ident || typeof score !== "number") continue;
        if (score > (best.get(ident) ?? -Infinity)) best.set(ident, score);
      }
      const exhausted = resp.hits.length < topK && !resp.omitted;
      if (best.size >= wanted || exhausted || topK >= PAGE) return [...best.entries()].sort((a, b) => b[1] - a[1]);
      topK = Math.min(PAGE, topK * 2);
    }
  }

  async #recalled(name: string, query: string, wanted: number): Promise<[Memory, number][]> {
    let topK = Math.max(1, Math.min(PAGE, wanted));
    for (;;) {
      const { hits } = await this.engine.recall(name, query, { top_k: topK, include_quarantined: this.#includeQuarantined, explain: true });
      const out = hits.filter((h) => h.memory).map((h) => [h.memory!, h.score] as [Memory, number]);
      const kept = out.filter(([m]) => !m.entities.includes(UNINDEXED));
      if (kept.length === out.length || hits.length < topK || topK >= PAGE) return kept;
      topK = Math.min(PAGE, topK * 2);
    }
  }

  async #namespacesUnder(prefix: string[]): Promise<[string, string[]][]> {
    const catalog = await this.#loadCatalog();
    return [...catalog.entries()]
      .filter(([, ns]) => prefix.every((p, i) => ns[i] === p) && ns.length >= prefix.length)
      .sort(([a], [b]) => (a < b ? -1 : a > b ? 1 : 0));
  }

  async #listed(name: string, ns: string[]): Promise<SearchItem[]> {
    const items: SearchItem[] = [];
    let cursor: string | null | undefined = undefined;
    do {
      const page = await this.engine.list(name, { limit: PAGE, cursor, include_quarantined: this.#includeQuarantined });
      items.push(...page.memories.map((m) => this.#item(ns, m)));
      cursor = page.next_cursor;
    } while (cursor);
    return items;
  }

  async #search(op: SearchOperation): Promise<SearchItem[]> {
    const prefix = checkLabels(op.namespacePrefix);
    const limit = op.limit ?? 10;
    const offset = op.offset ?? 0;
    if (!Number.isInteger(limit) || !Number.isInteger(offset) || limit < 0 || offset < 0) {
      throw new InvalidInputError("limit and offset must be whole numbers ≥ 0", "limit");
    }
    const filter = op.filter ?? {};
    if (!isPlainObject(filter)) throw new InvalidInputError("filter: expected an object", "filter");
    const keep = (item: SearchItem) => Object.entries(filter).every(([k, v]) => compare(item.value[k], v));
    const wanted = offset + limit;
    const spaces = await this.#namespacesUnder(prefix);
    const ranked: SearchItem[] = [];
    if (op.query) {
      const want = Object.keys(filter).length ? PAGE : wanted;
      for (const [name, ns] of spaces) {
        let scored: [Memory, number][];
        if (this.#fields !== null) {
          scored = [];
          for (const [ident, score] of await this.#vectorRanked(name, op.query, want)) {
            const m = await this.#find(name, ident);
            if (m && (m.quarantine === null || m.quarantine === undefined || this.#includeQuarantined)) scored.push([m, score]);
          }
        } else scored = await this.#recalled(name, op.query, want);
        for (const [m, score] of scored) {
          const item = this.#item(ns, m, score);
          if (keep(item)) ranked.push(item);
        }
      }
      ranked.sort((a, b) => (b.score ?? -Infinity) - (a.score ?? -Infinity));
    }
    if (ranked.length < wanted) {
      const seen = new Set(ranked.map((i) => JSON.stringify([i.namespace, i.key])));
      const rest: SearchItem[] = [];
      for (const [name, ns] of spaces) {
        for (const item of await this.#listed(name, ns)) {
          if (!seen.has(JSON.stringify([item.namespace, item.key])) && keep(item)) rest.push(item);
        }
      }
      rest.sort((a, b) => b.updatedAt.getTime() - a.updatedAt.getTime());
      ranked.push(...rest);
    }
    return ranked.slice(offset, wanted);
  }

  async #listNamespaces(op: ListNamespacesOperation): Promise<string[][]> {
    const conditions = op.matchConditions ?? [];
    for (const c of conditions) checkLabels(c.path.filter((p) => p !== "*"));
    let found: string[][] = [];
    for (const [name, ns] of await this.#namespacesUnder([])) {
      if (!conditions.every((c) => matches(c, ns))) continue;
      if ((await this.engine.list(name, { limit: 1, include_quarantined: true })).memories.length) found.push(ns);
    }
    if (op.maxDepth !== undefined && op.maxDepth !== null) {
      const unique = new Map(found.map((ns) => ns.slice(0, op.maxDepth)).map((ns) => [JSON.stringify(ns), ns]));
      found = [...unique.values()];
    }
    found.sort(compareTuples);
    return found.slice(op.offset ?? 0, (op.offset ?? 0) + (op.limit ?? 100));
  }

  /**
   * Every version of the item at (`namespace`, `key`), oldest first: what each
   * put stored (versions of a deleted item are gone).
   *
   * @throws {InvalidNamespaceError | InvalidInputError | ClosedError}
   */
  async history(namespace: string[], key: string): Promise<Item[]> {
    const ns = checkLabels(namespace);
    const name = this.mnemonNamespace(ns);
    const m = await this.#find(name, MnemonStore.#ident(key));
    if (!m) return [];
    const out: Item[] = [];
    let cursor: string | null | undefined = undefined;
    do {
      const page = await this.engine.history(name, m.id, { cursor, limit: PAGE });
      for (const v of page.versions) {
        out.push({
          namespace: [...ns],
          key: keyFromRef(v.source_ref),
          value: decodeValue(v.content),
          createdAt: new Date(v.first_seen),
          updatedAt: new Date(v.valid_from),
        });
      }
      cursor = page.next_cursor;
    } while (cursor);
    return out;
  }
}

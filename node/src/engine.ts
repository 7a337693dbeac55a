// `Engine`: the Node door to the engine's command surface.

import { asOfValue, encodeArgs, timeText, typeName, type AsOfInput, type TimeInput } from "./encode.js";
import { fromNative, InvalidInputError } from "./errors.js";
import { native, type NativeEngine } from "./native.js";
import type * as T from "./types.js";

/**
 * The caller's own embedding model.
 *
 * `embed(texts, {query})` returns (or resolves to) one vector per text, in
 * order: arrays (or typed arrays) of `dims` finite numbers, not all zero
 * (vectors are scaled to unit length). `query` is true when the texts are
 * recall queries. The engine calls it in batches (up to 64 texts when it
 * re-embeds a store) from its own threads, through the JavaScript thread;
 * one call may take at most 120 s. A wrong answer, a throw or a rejection is
 * an {@link EmbedderError} naming the embedder, and nothing is written.
 */
export interface CallerEmbedder {
  /**
   * The model id the store records with its vectors: 1–128 bytes, not a
   * built-in model's id nor a provider spec (`"openai:…"`). Give a new name
   * whenever the model changes: opening a store with a model of another name
   * embeds every memory again with it.
   */
  name: string;
  /** Components of its vectors, 1–65,536. Default: learnt by embedding one short text while the store opens. */
  dims?: number;
  /** Embeds `texts` (see the interface). */
  embed(texts: string[], options: { query: boolean }): Promise<ArrayLike<number>[]> | ArrayLike<number>[];
}

/** Settings of {@link Engine.open}; every one optional. */
export interface OpenOptions {
  /**
   * `"auto"` (default: an existing store keeps its model; a new one gets
   * multilingual-e5-small if installed, else bge-small-en-v1.5, else
   * all-MiniLM-L6-v2, and with none installed opening a new store is refused
   * with {@link EmbedderError}, creating nothing), `"hashing"` (384
   * dimensions, no download, lexical only), `"minilm"`, `"e5-small"`,
   * `"bge-small-en"`, a provider spec (`"openai:MODEL[@BASE_URL]"`,
   * `"ollama:MODEL[@BASE_URL]"`, see docs/guide/providers.md), or your own
   * model ({@link CallerEmbedder}).
   */
  embedder?: string | CallerEmbedder;
  /** Where models are installed (default `$MNEMON_MODELS`, else `$XDG_DATA_HOME/mnemon/models`, else `~/.local/share/mnemon/models`). */
  models_dir?: string;
  /**
   * Unset (default): every group of writes is flushed to disk before any of
   * them resolves, so nothing acknowledged is ever lost. Seconds in
   * 0.001–60: flushed at most that long after resolving (faster; a crash
   * may lose the last interval).
   */
  flush_interval_s?: number;
  /** Largest memory or observation text in UTF-8 bytes, 1–1,048,576 (default 32 KiB). */
  max_content_bytes?: number;
  /** Personal data in text: `"redact"` (default: placeholders such as `[PHONE]` are stored), `"reject"` or `"off"`. */
  pii_policy?: "redact" | "reject" | "off";
  /** Text that reads as an injected instruction: `"quarantine"` (default: stored, kept out of recall), `"reject"` or `"allow"`. */
  injection_policy?: "quarantine" | "reject" | "allow";
  /** Cap of one response in estimated tokens, at least 1,000 (default 25,000); recall and list pages stop before it. */
  max_response_tokens?: number;
  /** When `remember` embeds: `"sync"` (default: before it writes) or `"deferred"` (once durable; a background embedder follows). */
  embed_mode?: T.EmbedMode;
  /** A rerank provider, `"rerank:MODEL@BASE_URL[?depth=N]"`, that orders the top hits of recall and context. Default none. */
  reranker?: string;
  /**
   * The key file (64 hex digits; `mnemon key new FILE` writes one) of an
   * encrypted store; a new store opened with a key is encrypted at rest.
   * Without `key_file` or `key_env`, `MNEMON_KEY_FILE` names the key file,
   * else `MNEMON_KEY` holds the key, else the store opens without one. A
   * key is never passed as a string.
   */
  key_file?: string;
  /** Instead of `key_file`: the name of an environment variable holding the key (64 hex digits). */
  key_env?: string;
  /** The `KEYRING` of the store an encrypted backup or restore was made from (default `$MNEMON_KEYRING`). */
  keyring?: string;
}

type Opts<O extends T.Op, Fixed extends string> = Omit<T.Requests[O], Fixed>;
type WithAsOf<R> = Omit<R, "as_of"> & { as_of?: AsOfInput | null };
type Times<R, K extends string> = Omit<R, K> & { [P in K & keyof R]?: TimeInput | null };

/** Options of {@link Engine.remember}: the request's fields, `event_time` also as a `Date`. */
export type RememberOptions = Times<Opts<"remember", "namespace" | "content">, "event_time">;
/** Options of {@link Engine.supersede}. */
export type SupersedeOptions = Times<Opts<"supersede", "namespace" | "id" | "content">, "event_time">;
/** Options of {@link Engine.observe}. */
export type ObserveOptions = Times<Opts<"observe", "namespace" | "session" | "text">, "event_time">;
/** Options of {@link Engine.recall}: every filter of the surface's `recall`; `as_of` also as a number, Date or text. */
export type RecallOptions = Times<WithAsOf<Opts<"recall", "namespace" | "query">>, "from" | "to" | "reference_time">;
/** Options of {@link Engine.context}. */
export type ContextOptions = Times<WithAsOf<Opts<"context", "namespace" | "query">>, "from" | "to" | "reference_time">;
/** Options of {@link Engine.history}. */
export type HistoryOptions = WithAsOf<Opts<"history", "namespace" | "id">>;
/** Options of {@link Engine.list}. */
export type ListOptions = WithAsOf<Opts<"list", "namespace">>;
/** The target and options of {@link Engine.forget}: exactly one of `id`, `observation`, `session`, `all`, `matching`. */
export type ForgetOptions = Opts<"forget", "namespace">;
/** Options of {@link Engine.importRecords}: the input as `text` or `path`, and its format. */
export type ImportOptions = Opts<"import", "namespace">;
/** Options of {@link Engine.log}. */
export type LogOptions = Opts<"log", "namespace">;
/** Options of {@link Engine.timeline}. */
export type TimelineOptions = Times<Opts<"timeline", "namespace">, "from" | "to">;
/** A page request: `cursor` (a `next_cursor` of the previous page) and `limit`. */
export type PageOptions = { cursor?: string | null; limit?: number | null };

function checkString(field: string, value: unknown): void {
  if (typeof value !== "string") throw new InvalidInputError(`${field}: expected a string, got ${typeName(value)}`, field);
}

function checkObject(field: string, value: unknown): Record<string, unknown> {
  if (value === undefined || value === null) return {};
  if (typeof value !== "object" || Array.isArray(value)) {
    throw new InvalidInputError(`${field}: expected an object of options, got ${typeName(value)}`, field);
  }
  return value as Record<string, unknown>;
}

/** `options` with the time fields `keys` as text and `as_of` as the surface's object. */
function normalise(options: unknown, times: readonly string[] = [], asOf = false): Record<string, unknown> {
  const out = { ...checkObject("options", options) };
  for (const k of times) if (out[k] !== undefined && out[k] !== null) out[k] = timeText(k, out[k]);
  if (asOf && out.as_of !== undefined && out.as_of !== null) out.as_of = asOfValue(out.as_of);
  return out;
}

/** The answer of the caller's embedder as one flat array, or why it is wrong. */
function flatten(vectors: unknown, n: number): Float64Array | string {
  if (!Array.isArray(vectors)) return `returned ${typeName(vectors)}, not an array of vectors`;
  if (vectors.length !== n) return `returned ${vectors.length} vectors for ${n} texts`;
  const dim = n ? ((vectors[0] as ArrayLike<number> | null)?.length ?? 0) : 0;
  const flat = new Float64Array(dim * n);
  for (let i = 0; i < n; i++) {
    const v = vectors[i] as ArrayLike<unknown> | null;
    if (v === null || typeof v !== "object" || typeof v.length !== "number") {
      return `vector ${i} is not an array of numbers (got ${typeName(v)})`;
    }
    if (v.length !== dim) return `vector ${i} has ${v.length} components, vector 0 has ${dim}`;
    for (let j = 0; j < dim; j++) {
      const x = v[j];
      if (typeof x !== "number") return `vector ${i} component ${j} is ${typeName(x)}, not a number`;
      flat[i * dim + j] = x;
    }
  }
  return flat;
}

/** Serves the caller's embedder to the addon: answers request `id` through `embedReply`. */
function serveEmbedder(e: CallerEmbedder): (request: [number, string[], boolean]) => void {
  return ([id, texts, query]) => {
    Promise.resolve()
      .then(() => e.embed(texts, { query }))
      .then(
        (vectors) => {
          const flat = flatten(vectors, texts.length);
          if (typeof flat === "string") native.embedReply(id, flat, null);
          else native.embedReply(id, null, flat);
        },
        (err: unknown) => {
          const why = err instanceof Error ? `${err.name}: ${err.message}` : String(err);
          native.embedReply(id, `threw ${why}`, null);
        },
      );
  };
}

/**
 * An open mnemon store: long-term memory for an agent, in process.
 *
 * Open with {@link Engine.open}; call {@link Engine.close} when done, so the
 * store's lock is released and every queued write is flushed. One process
 * may hold a data directory at a time; within the process one `Engine` is
 * shared by any number of concurrent calls: each runs on libuv's thread pool
 * (embedding, the writer's group commit, recall, compaction) and returns a
 * Promise, so the JavaScript thread never blocks.
 *
 * Every method is one operation of the engine's command surface — the same
 * requests and responses (field names included) as the CLI's `--json`
 * output, the MCP server and the Python package. Errors are subclasses of
 * {@link MnemonError}; bad input rejects with {@link InvalidInputError}
 * naming the field and writes nothing.
 *
 * Every read and write names a namespace: 1–128 characters of
 * `[A-Za-z0-9_.:@-]`; nothing reads across namespaces.
 */
export class Engine {
  readonly #native: NativeEngine;
  readonly #embedder: CallerEmbedder | null;

  private constructor(n: NativeEngine, embedder: CallerEmbedder | null) {
    this.#native = n;
    this.#embedder = embedder;
  }

  /**
   * Opens (creating if missing) the store in directory `path`.
   *
   * @throws {InvalidInputError} a setting of the wrong type or out of range (`field` names it).
   * @throws {LockedError} another process or engine holds the store.
   * @throws {KeyRequiredError} an encrypted store opened without its key, or a
   *   `key_file` that does not exist; nothing opened or written.
   * @throws {WrongKeyError} an encrypted store opened with another key; nothing opened or written.
   * @throws {EmbedderError} the model is not installed (under `"auto"`, for a
   *   new store: none is; the message names `mnemon model install e5-small`),
   *   or your embedder threw or answered wrongly.
   * @throws {CorruptedError | IncompatibleFormatError | IoError | StorageError} the store cannot be read.
   */
  static async open(path: string, options: OpenOptions = {}): Promise<Engine> {
    checkString("path", path);
    const { embedder, ...rest } = checkObject("options", options) as OpenOptions;
    const settings: Record<string, unknown> = { ...rest };
    let caller: CallerEmbedder | null = null;
    if (embedder !== undefined && typeof embedder !== "string") {
      if (embedder === null || typeof embedder !== "object" || typeof embedder.embed !== "function") {
        throw new InvalidInputError("embedder: expected a model name or an object with name and embed()", "embedder");
      }
      caller = embedder;
      settings.embedder_name = embedder.name;
      if (embedder.dims !== undefined) settings.dims = embedder.dims;
    } else if (embedder !== undefined) {
      settings.embedder = embedder;
    }
    const json = encodeArgs(settings);
    try {
      const n = await native.open(path, json, caller ? serveEmbedder(caller) : null);
      if (n.notice) process.emitWarning(`mnemon: ${n.notice}`);
      return new Engine(n, caller);
    } catch (e) {
      throw fromNative(e);
    }
  }

  /**
   * Drains queued writes, flushes them and releases the store's lock. Later
   * calls reject with {@link ClosedError}; calls already running finish
   * first. Closing twice does nothing.
   *
   * @throws {PoisonedError} the final flush failed.
   */
  async close(): Promise<void> {
    try {
      await this.#native.close();
    } catch (e) {
      throw fromNative(e);
    }
  }

  /** True once {@link Engine.close} was called. */
  get closed(): boolean {
    return this.#native.closed;
  }
  /** The data directory. */
  get path(): string {
    return this.#native.path;
  }
  /** The active embedder's model id, e.g. `"hashing-v1-384"`. */
  get modelId(): string {
    return this.#native.modelId;
  }
  /** Dimension of the embedder's vectors. */
  get dim(): number {
    return this.#native.dim;
  }
  /** Your own embedder as given to {@link Engine.open}, or null for a built-in model. */
  get embedder(): CallerEmbedder | null {
    return this.#embedder;
  }
  /** Largest memory or observation text this engine accepts, in bytes of UTF-8. */
  get maxContentBytes(): number {
    return this.#native.maxContentBytes;
  }
  /** The response cap, in estimated tokens. */
  get maxResponseTokens(): number {
    return this.#native.maxResponseTokens;
  }
  /** A line for the user about the store (also emitted as a process warning on open), or null. */
  get notice(): string | null {
    return this.#native.notice;
  }

  /**
   * Embeds `texts` with the store's model, as memories (`query` false) or as
   * recall queries, after the engine's `pii_policy` (as `remember` would),
   * and resolves to one unit-length vector of `dim` numbers per text (for
   * `remember({vector})`).
   *
   * @throws {InvalidInputError} `texts` is not an array of strings.
   * @throws {RejectedError} personal data under `pii_policy: "reject"`.
   * @throws {EmbedderError | ClosedError}
   */
  async embed(texts: string[], options: { query?: boolean } = {}): Promise<number[][]> {
    if (!Array.isArray(texts)) throw new InvalidInputError(`texts: expected an array of strings, got ${typeName(texts)}`, "texts");
    texts.forEach((t, i) => checkString(`texts[${i}]`, t));
    try {
      return await this.#native.embed(texts, Boolean(options.query));
    } catch (e) {
      throw fromNative(e);
    }
  }

  /**
   * Runs operation `op` of the command surface with `args` (its request
   * fields, without `op`) and resolves to its response. The typed methods are
   * the usual way in; this one reaches every operation by its wire name.
   *
   * @throws {InvalidInputError} unknown operation or field, wrong type, bad value (nothing was written).
   * @throws {MnemonError} the subclass for the surface's error code.
   */
  async call<O extends T.Op>(op: O, args: T.Requests[O]): Promise<T.Responses[O]>;
  async call(op: string, args?: Record<string, unknown>): Promise<unknown>;
  async call(op: string, args: Record<string, unknown> = {}): Promise<unknown> {
    checkString("op", op);
    const payload = encodeArgs(checkObject("arguments", args));
    let text: string;
    try {
      text = await this.#native.call(op, payload);
    } catch (e) {
      throw fromNative(e);
    }
    return JSON.parse(text);
  }

  // -- writes -----------------------------------------------------------------

  /**
   * Remembers `content` (1 byte to `maxContentBytes` of UTF-8) in `namespace`.
   * Options: `kind`, `tier`, `importance` (0–1), `entities`, `key` (slot key
   * `entity.attribute`: a later memory under it supersedes this one),
   * `sources`, `session`, `event_time`, `source_ref`, `dedup`, `embed`,
   * `vector` (your own embedding, `dim` numbers).
   *
   * Resolves to `Remembered`: `id`, `action` (`created`, `duplicate`,
   * `superseded`, …), `redactions`, `quarantined`.
   *
   * @throws {InvalidInputError} a bad value (nothing written).
   * @throws {ConflictError | NotFoundError | RejectedError | EmbedderError | PoisonedError | ClosedError}
   */
  async remember(namespace: string, content: string, options?: RememberOptions): Promise<T.Remembered> {
    return this.call("remember", { ...normalise(options, ["event_time"]), namespace, content } as T.RememberRequest);
  }

  /**
   * Writes `content` as a new version of active memory `id`; options left out
   * keep the old version's values (options as {@link Engine.remember}).
   *
   * @throws {NotFoundError} no memory `id` in the namespace.
   * @throws {ConflictError} `id` is not active.
   * @throws {InvalidInputError | RejectedError | EmbedderError | ClosedError}
   */
  async supersede(namespace: string, id: number, content: string, options?: SupersedeOptions): Promise<T.Remembered> {
    return this.call("supersede", { ...normalise(options, ["event_time"]), namespace, id, content } as T.SupersedeRequest);
  }

  /**
   * Records a raw observation (a conversation turn or a tool result) in
   * `session`. Options: `role` (`"user"` default, `"assistant"`, `"tool"`,
   * `"system"`), `event_time`, `source`.
   *
   * @throws {InvalidInputError | RejectedError | ClosedError | PoisonedError}
   */
  async observe(namespace: string, session: string, text: string, options?: ObserveOptions): Promise<T.ObserveResponse> {
    return this.call("observe", { ...normalise(options, ["event_time"]), namespace, session, text } as T.ObserveRequest);
  }

  /**
   * Forgets memories or observations: from the moment this resolves their
   * content is gone from every read path; {@link Engine.compact} erases it
   * from the disk. Name exactly one target: `id`, `observation`, `session`,
   * `all: true` or `matching` (with `min_similarity`, `limit`); `dry_run`
   * only reports, `reason` is stored in the log.
   *
   * @throws {InvalidInputError} no target or more than one.
   * @throws {NotFoundError} `id`, `observation` or `session` does not exist (a target already forgotten resolves with zero counts).
   * @throws {ClosedError | PoisonedError}
   */
  async forget(namespace: string, target: ForgetOptions): Promise<T.ForgetResponse> {
    return this.call("forget", { ...normalise(target), namespace } as T.ForgetRequest);
  }

  /**
   * Forgets everything of a set of namespaces (every namespace a user's data
   * lives in) in one call: each as `forget(ns, { all: true })` does, and on an
   * encrypted store each namespace's data key is destroyed, so its records
   * are unreadable in every backup and export too. `namespaces`: 1–1,000,
   * each named once; `reason` is stored in each namespace's log (default
   * "user request"). Resolves with one receipt per namespace, in the order
   * given (`memories`, `observations`, `quotes_cut`, `key_shredded`), and
   * the totals. Every namespace is checked before anything is written; each
   * namespace's forget is atomic, the set is not one transaction (should the
   * disk fail part way, calling again with the same set finishes the rest).
   *
   * @throws {InvalidInputError} an empty list, a bad or repeated namespace; nothing written.
   * @throws {NotFoundError} a namespace nothing was ever written to; nothing written.
   * @throws {ClosedError | PoisonedError}
   */
  async forgetUser(namespaces: string[], options: { reason?: string } = {}): Promise<T.ForgetUserResponse> {
    return this.call("forget_user", { ...normalise(options), namespaces } as T.ForgetUserRequest);
  }

  /**
   * Applies your LLM's answer to {@link Engine.extractionPrompt} (the object
   * `{new_memories, update_existing, forget}`, or its JSON text); each item
   * is validated on its own and the valid ones written in one command.
   *
   * @throws {InvalidInputError | ClosedError | PoisonedError}
   */
  async applyExtraction(namespace: string, extraction: string | Record<string, unknown>): Promise<T.ExtractionReport> {
    return this.call("apply_extraction", { namespace, extraction } as unknown as T.ApplyExtractionRequest);
  }

  /**
   * Ends `session`: its short-term memories are archived, except the ids in
   * `promote`, which become long-term.
   *
   * @throws {InvalidInputError | ClosedError | PoisonedError}
   */
  async endSession(namespace: string, session: string, options: { promote?: number[] } = {}): Promise<T.SessionEnd> {
    return this.call("end_session", { ...normalise(options), namespace, session } as T.EndSessionRequest);
  }

  /**
   * Merges clusters of near-duplicate active memories of one kind into one
   * new version each (`dry_run`: only lists them).
   *
   * @throws {InvalidInputError | ClosedError | PoisonedError}
   */
  async consolidate(namespace: string, options: { dry_run?: boolean } = {}): Promise<T.Consolidation[]> {
    return this.call("consolidate", { ...normalise(options), namespace } as T.ConsolidateRequest);
  }

  /**
   * Runs lifecycle maintenance now (session expiry, decay and capacity
   * archiving, consolidation) in `namespace`, or in every namespace.
   *
   * @throws {InvalidInputError | ClosedError | PoisonedError}
   */
  async maintain(namespace?: string): Promise<T.NamespaceMaintenance[]> {
    return this.call("maintain", (namespace === undefined ? {} : { namespace }) as T.MaintainRequest);
  }

  /**
   * Erases forgotten content from the disk and scans every file for it;
   * resolves to the receipt (`verified`, `compaction`).
   *
   * @throws {IoError | StorageError | PoisonedError | ClosedError}
   */
  async compact(): Promise<T.ErasureReceipt> {
    return this.call("compact", {});
  }

  /**
   * Scans every file of the store for `texts` (each at least 8 bytes of at
   * least 4 distinct byte values) and resolves to the receipt.
   *
   * @throws {InvalidInputError | IoError | ClosedError}
   */
  async verifyErasure(texts: string[]): Promise<T.ErasureReceipt> {
    return this.call("verify_erasure", { texts });
  }

  /**
   * Proves that `namespace` of an encrypted store, forgotten whole
   * ({@link Engine.forget} with `all`, or {@link Engine.forgetUser}, which
   * destroy its data key), is unreadable: every record of it sealed under a
   * destroyed key is tried with every key the store still holds, in the
   * store and in each backup directory (`backups`) and export file
   * (`exports`) named. Resolves to the report: `shredded_keys`, one entry
   * of `checks` per place (`source`, `sealed`, `opened`, `plain`, `later`)
   * and `verified`, true only when no record opened and none was readable
   * in plain.
   *
   * @throws {NotFoundError} nothing was ever written to the namespace.
   * @throws {InvalidInputError} the store is not encrypted, no key of the
   *   namespace was shredded (field `namespace`), or a path is not a backup
   *   or an export of this store (field `backups` or `exports`).
   * @throws {CorruptedError | IoError | ClosedError}
   */
  async verifyShred(
    namespace: string,
    options: { backups?: string[]; exports?: string[] } = {},
  ): Promise<T.ShredReport> {
    return this.call("verify_shred", { ...normalise(options), namespace } as T.VerifyShredRequest);
  }

  // -- getting data in and out ------------------------------------------------

  /**
   * Bulk-loads observations and memories into `namespace` (the surface's
   * `import`): the input as `text` or `path`, in `format` (`"jsonl"`
   * default, `"locomo"`, `"longmemeval"`, `"mcp_memory"`, `"mem0"`,
   * `"langgraph"`); `on_error`, `dry_run`, `batch`. Bad records are reported
   * in the summary, not thrown.
   *
   * @throws {InvalidInputError} neither or both of `text` and `path`, an unknown format.
   * @throws {IoError | ClosedError}
   */
  async importRecords(namespace: string, options: ImportOptions): Promise<T.ImportSummary> {
    return this.call("import", { ...normalise(options), namespace } as T.ImportRequest);
  }

  /**
   * Writes a consistent copy of the store into directory `dir` (new or
   * empty) while writes go on; open it with {@link Engine.open}.
   *
   * @throws {IoError} `dir` exists and is not empty, or cannot be written.
   * @throws {InvalidInputError | ClosedError}
   */
  async backup(dir: string): Promise<T.BackupReport> {
    return this.call("backup", { dir });
  }

  /**
   * Writes every event and cached vector to the new file `path` as JSON
   * lines, for {@link Engine.restore}.
   *
   * @throws {IoError | InvalidInputError | ClosedError}
   */
  async export(path: string): Promise<T.ExportReport> {
    return this.call("export", { path });
  }

  /**
   * Rebuilds a new store in `into` from the export `from`, and compares its
   * digest with the export's (`digest_matches`).
   *
   * @throws {CorruptedError | IoError | InvalidInputError | ClosedError}
   */
  async restore(from: string, into: string): Promise<T.RestoreReport> {
    return this.call("restore", { from, into });
  }

  // -- reads ------------------------------------------------------------------

  /**
   * The memories of `namespace` that best match `query`, best first (hybrid
   * recall: cosine fused with BM25, reranked by importance, recency and
   * entity overlap). Options: every filter of the surface's `recall`
   * (`top_k` 1–1000, default 10; `min_similarity`, `abstain_below`, `kinds`,
   * `tiers`, `session`, `current_session`, `from`/`to`, `as_of`,
   * `include_*`, `mode`, `candidates`, `explain`, …).
   *
   * @throws {InvalidInputError | EmbedderError | ClosedError}
   */
  async recall(namespace: string, query: string, options?: RecallOptions): Promise<T.RecallResponse> {
    const args = normalise(options, ["from", "to", "reference_time"], true);
    return this.call("recall", { ...args, namespace, query } as T.RecallRequest);
  }

  /**
   * The prompt block for `query`, `<memories>` … `</memories>`, within
   * `budget_tokens` estimated tokens (default 400): the profile, the
   * memories recalled for `query`, and the last turns of `current_session`
   * (shares `profile_share`, `recent_share`). Filters as {@link Engine.recall}.
   *
   * @throws {InvalidInputError} a budget or share out of range, or bad filters.
   * @throws {EmbedderError | ClosedError}
   */
  async context(namespace: string, query: string, options?: ContextOptions): Promise<T.ContextBlock> {
    const args = normalise(options, ["from", "to", "reference_time"], true);
    return this.call("context", { ...args, namespace, query } as T.ContextRequest);
  }

  /**
   * Memory version `id` (at the read position `as_of`, default now).
   *
   * @throws {NotFoundError} no such memory in the namespace (or forgotten).
   * @throws {ResponseTooLargeError | InvalidInputError | ClosedError}
   */
  async get(namespace: string, id: number, options: { as_of?: AsOfInput | null } = {}): Promise<T.Memory> {
    return this.call("get", { ...normalise(options, [], true), namespace, id } as T.GetRequest);
  }

  /**
   * The version chain of memory `id`, oldest first: a page of at most
   * `limit` versions (1–1000, default 100); pass `next_cursor` as `cursor`.
   *
   * @throws {NotFoundError} no such memory (or forgotten).
   * @throws {InvalidInputError | ClosedError}
   */
  async history(namespace: string, id: number, options?: HistoryOptions): Promise<T.HistoryResponse> {
    return this.call("history", { ...normalise(options, [], true), namespace, id } as T.HistoryRequest);
  }

  /**
   * A page of the namespace's memories, oldest first, filtered by `kind`,
   * `tier`, `session`; `include_superseded`, `include_quarantined`,
   * `include_archived`; `as_of`, `cursor`, `limit` (1–1000, default 100).
   *
   * @throws {InvalidInputError | ClosedError}
   */
  async list(namespace: string, options?: ListOptions): Promise<T.ListResponse> {
    return this.call("list", { ...normalise(options, [], true), namespace } as T.ListRequest);
  }

  /**
   * A page of the namespace's audit export: its events in log order
   * (forgotten content never appears), between log positions `from` and
   * `to`, only of `kinds`.
   *
   * @throws {InvalidInputError | CorruptedError | ClosedError}
   */
  async log(namespace: string, options?: LogOptions): Promise<T.LogResponse> {
    return this.call("log", { ...normalise(options), namespace } as T.LogRequest);
  }

  /**
   * A read-only view of `namespace` as it was at `at` (a log position, a
   * recorded time, or `{valid_time}`: what was true in the world then). The
   * view's `get`, `list`, `history`, `recall` and `context` read that state.
   *
   * @throws {InvalidInputError} `at` is not a read position (field `as_of`).
   */
  asOf(namespace: string, at: AsOfInput): View {
    return new View(this, namespace, asOfValue(at));
  }

  /**
   * A prompt asking your LLM to extract memories from `session`'s
   * observations, in `lang` (`"en"` default or `"zh"`); pass its JSON answer
   * to {@link Engine.applyExtraction}.
   *
   * @throws {InvalidInputError | ClosedError}
   */
  async extractionPrompt(namespace: string, session: string, options: { lang?: T.Lang } = {}): Promise<T.ExtractionPromptResponse> {
    return this.call("extraction_prompt", { ...normalise(options), namespace, session } as T.ExtractionPromptRequest);
  }

  /** Store-wide figures: memories by status, namespaces, events by kind, vectors, bytes, the model id. @throws {ClosedError} */
  async stats(): Promise<T.Stats> {
    return this.call("stats", {});
  }

  /**
   * A page of the namespaces holding a record, by name, with their figures.
   *
   * @throws {InvalidInputError | ClosedError}
   */
  async namespaces(options?: PageOptions): Promise<T.NamespacesResponse> {
    return this.call("namespaces", normalise(options) as T.NamespacesRequest);
  }

  /**
   * A page of the receipts of the store's compactions, newest first.
   *
   * @throws {InvalidInputError | CorruptedError | ClosedError}
   */
  async receipts(options?: PageOptions): Promise<T.ReceiptsResponse> {
    return this.call("receipts", normalise(options) as T.ReceiptsRequest);
  }

  /**
   * The namespace's events counted by kind in `buckets` (1–500, default 48)
   * equal buckets of commit time, from `from` to `to`.
   *
   * @throws {InvalidInputError | CorruptedError | ClosedError}
   */
  async timeline(namespace: string, options?: TimelineOptions): Promise<T.Timeline> {
    return this.call("timeline", { ...normalise(options, ["from", "to"]), namespace } as T.TimelineRequest);
  }

  /**
   * Verifies every record's checksum and that the live projections equal a
   * fresh replay of the log (`consistent`).
   *
   * @throws {CorruptedError | ClosedError}
   */
  async check(): Promise<T.CheckReport> {
    return this.call("check", {});
  }
}

/**
 * A read-only view of one namespace at a point of its history
 * ({@link Engine.asOf}): each method is the engine's with `as_of` fixed.
 */
export class View {
  /** The engine read. */
  readonly engine: Engine;
  /** The namespace read. */
  readonly namespace: string;
  /** The read position, as the surface's `as_of` object. */
  readonly at: T.AsOf;

  /** A view of `namespace` at `at`; use {@link Engine.asOf}. */
  constructor(engine: Engine, namespace: string, at: T.AsOf) {
    this.engine = engine;
    this.namespace = namespace;
    this.at = at;
  }
  /** {@link Engine.get} at the view's position. */
  async get(id: number): Promise<T.Memory> {
    return this.engine.get(this.namespace, id, { as_of: this.at });
  }
  /** {@link Engine.history} at the view's position. */
  async history(id: number, options: Omit<HistoryOptions, "as_of"> = {}): Promise<T.HistoryResponse> {
    return this.engine.history(this.namespace, id, { ...options, as_of: this.at });
  }
  /** {@link Engine.list} at the view's position. */
  async list(options: Omit<ListOptions, "as_of"> = {}): Promise<T.ListResponse> {
    return this.engine.list(this.namespace, { ...options, as_of: this.at });
  }
  /** {@link Engine.recall} at the view's position. */
  async recall(query: string, options: Omit<RecallOptions, "as_of"> = {}): Promise<T.RecallResponse> {
    return this.engine.recall(this.namespace, query, { ...options, as_of: this.at });
  }
  /** {@link Engine.context} at the view's position. */
  async context(query: string, options: Omit<ContextOptions, "as_of"> = {}): Promise<T.ContextBlock> {
    return this.engine.context(this.namespace, query, { ...options, as_of: this.at });
  }
}

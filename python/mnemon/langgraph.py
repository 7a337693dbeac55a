"""`MnemonStore`: LangGraph's `BaseStore` on a mnemon engine.

A LangGraph agent that swaps its store for `MnemonStore` keeps its code
(`store.put`, `store.get`, `store.search`, `store.delete`,
`store.list_namespaces`, their async forms, `batch` / `abatch`) and gets
mnemon underneath: every put is an event in the log, a put to an existing
key writes a new version that supersedes the old one (the chain stays in
history: `MnemonStore.history`), search with a query is mnemon's hybrid
recall (dense + BM25, reranked), a delete is `forget` (gone from every read
path at once, from the disk after `Engine.compact()`), and personal data in
values is redacted before it is embedded or stored.

Mapping:

* A namespace tuple is one mnemon namespace: `<prefix>:` followed by the
  labels joined by `.`, each label escaped (characters outside
  `[A-Za-z0-9_-]` become `@XX` per UTF-8 byte, `@` included), so distinct
  tuples never share a mnemon namespace. A name over mnemon's 128
  characters becomes `<prefix>:@@<SHA-256 of the tuple as JSON>` (`@@`
  never occurs in an escaped name). Every tuple used is recorded in the
  catalogue namespace `<prefix>::catalog`, which `list_namespaces` reads.
* An item is one memory (tier `permanent`, so lifecycle maintenance never
  archives it): content is the value as JSON text, which recall embeds and
  indexes by its values (string, number and boolean leaves), not its key
  names, so a query for a key name does not match every item; the slot key and the session are `item.<escaped key>` (the
  slot key makes a later put supersede it; the session finds it), and the
  key itself is kept as the memory's `source_ref`. `created_at` is when the
  key's first version was written, `updated_at` when the current one was.
* `search` without a query lists the namespaces under the prefix, newest
  update first; with a query it recalls in each namespace under the prefix
  and merges by score (scores come from separate recalls when the prefix
  spans namespaces; within one namespace they rank exactly). Filters
  (`$eq`, `$ne`, `$gt`, `$gte`, `$lt`, `$lte`, nested objects) apply to
  the values as in LangGraph's in-memory store; matching items that recall
  did not rank fill the page after the ranked ones with `score` None.
* A put with `index=False` is not embedded (its memory gets a fixed vector
  and the entity `mnemon.unindexed`) and search with a query never ranks
  it; `get`, search without a query and filters find it as any other.

Vector index: a store given LangGraph's `IndexConfig` (`index={"dims": N,
"fields": [...], "embed": ...}`; `MnemonStore.open` makes `embed` the
engine's embedder) searches with a query as LangGraph's `InMemoryStore`
does: the texts at `fields` (JSON paths into the value, read by
LangGraph's own `get_text_at_path`; default `["$"]`, the value as JSON
with sorted keys), or at a put's own `index=[...]` paths, each get a
vector (a path selecting several texts gives one per text), and an item
scores the highest cosine similarity of the query to its texts. Ranked
items come first, best first, then matching unranked items (no text at
the paths, or `index=False`) with `score` None. The texts of a `batch`'s
puts are embedded in one call, after the engine's `pii_policy` (redacted
text is embedded). The vectors are memories of the sibling namespace
`field_namespace(name)` (content: the item's memory id and the path; the
session: the item's), replaced by every put and forgotten with the item;
the item's own memory gets the mean of them (or a fixed vector), so other
doors' recall still finds it by meaning. Unlike `InMemoryStore`, a later
put with `index=False` or other paths drops the vectors of the earlier
version; mnemon collapses recall hits that restate a better one, which
field vectors never do (each names its own item). Paging past the ranked
items continues into the unranked ones (`InMemoryStore` starts them over).
Vectors are made when an item is put: items put before the store had an
index, or under other `fields`, keep what they had (none: unranked) until
they are put again, as in LangGraph's database stores.

Limits: values are JSON objects of at most the engine's `max_content_bytes`
(default 32 KiB) as JSON text; keys at most 256 bytes; TTLs are not
supported (`supports_ttl` is False); a value that reads as an injected
instruction is quarantined: `get` returns it, `search` leaves it out unless
the store was built with `include_quarantined=True`. Namespace labels and
keys are identifiers, stored as given (like mnemon namespaces); values are
redacted per the engine's `pii_policy` (a phone number becomes `[PHONE]`).
"""

from __future__ import annotations

import asyncio
import hashlib
import json
import math
import re
import threading
from typing import Any, Dict, Iterable, List, Mapping, Optional, Sequence, Tuple, cast

try:
    from langgraph.store.base import (
        BaseStore,
        GetOp,
        InvalidNamespaceError,
        Item,
        ListNamespacesOp,
        MatchCondition,
        Op,
        PutOp,
        Result,
        SearchItem,
        SearchOp,
    )
    from langgraph.store.base import IndexConfig, ensure_embeddings, get_text_at_path, tokenize_path
except ImportError as _missing:  # pragma: no cover - exercised only without langgraph
    raise ImportError("mnemon.langgraph needs LangGraph: pip install langgraph") from _missing

from . import _ids
from ._embedder import _is_async
from ._engine import Engine
from ._errors import InvalidInputError, NotFoundError
from ._types import Memory

__all__ = ["MnemonStore"]

#: Longest mnemon namespace (the engine's limit).
MAX_NAMESPACE_CHARS = 128
#: Longest escaped key kept readable in the slot key and session; longer
#: keys use their SHA-256 (`item.@@<hex>`). 100 keeps `item.` + the key under
#: the engine's 128-byte limit for slot keys and sessions.
MAX_KEY_IDENT_CHARS = 100
#: Longest key, in bytes of UTF-8 (as stored, see `_key_ref`): the engine's
#: limit for `source_ref`.
MAX_KEY_BYTES = 256
#: Largest page the command surface returns (`list`) and largest `top_k`.
PAGE = 1000

#: Entity of an item put with `index=False`: search leaves it out of the
#: ranked hits (it still fills the page after them, unscored).
UNINDEXED = "mnemon.unindexed"
#: Keys of LangGraph's `IndexConfig` this store reads.
_INDEX_KEYS = ("dims", "embed", "fields")

_PREFIX = re.compile(r"[A-Za-z0-9_-]{1,32}")
# A redaction placeholder (`[PHONE]`) that replaced digits of a JSON number,
# with whatever is left of the number around it.
_BARE_PLACEHOLDER = re.compile(
    r"(?:\[[A-Z][A-Z0-9_]*\]|[0-9.eE+-])*\[[A-Z][A-Z0-9_]*\](?:\[[A-Z][A-Z0-9_]*\]|[0-9.eE+-])*"
)


def escape_label(label: str) -> str:
    """A namespace label or key in mnemon's namespace alphabet: characters
    of `[A-Za-z0-9_-]` as themselves, every other one (`@` and `.`
    included) as `@XX` per byte of its UTF-8. Injective; the output never
    holds `.`, `:` or `@@`. The framework adapters (`mnemon.adapters`) use
    the same rule.

    Raises InvalidNamespaceError for text that is not valid Unicode.
    """
    try:
        return _ids.escape_label(label)
    except InvalidInputError:
        raise InvalidNamespaceError(f"label {label!r} is not valid Unicode text") from None


def _letters(data: bytes) -> str:
    # Hexadecimal with the letters a–p for 0–15: no digits, so no personal
    # data pattern (phone, card, ID numbers, e-mail) can match it.
    return "".join(chr(97 + (b >> 4)) + chr(97 + (b & 15)) for b in data)


def _unletters(text: str) -> bytes:
    return bytes(((ord(text[i]) - 97) << 4) | (ord(text[i + 1]) - 97) for i in range(0, len(text), 2))


def _key_ref(key: str) -> str:
    """The key as the memory's `source_ref`: itself when it is plain text,
    else (empty, surrounding whitespace, control characters, a leading
    `"`) as a JSON string literal, which plain keys never look like."""
    plain = (
        key
        and key == key.strip()
        and not key.startswith('"')
        and not any(ord(c) < 32 or 127 <= ord(c) < 160 for c in key)
    )
    return key if plain else json.dumps(key, ensure_ascii=False)


def _key_from_ref(ref: Optional[str]) -> str:
    if ref is None:
        return ""
    if ref.startswith('"'):
        return str(json.loads(ref))
    return ref


def _encode_value(value: Mapping[str, Any]) -> str:
    try:
        return json.dumps(dict(value), ensure_ascii=False, allow_nan=False, separators=(",", ":"))
    except (TypeError, ValueError) as e:
        raise InvalidInputError(f"value: not a JSON object: {e}", "value") from None


def _decode_value(content: str) -> Dict[str, Any]:
    """The value stored as `content`. Redaction replaces personal data with
    placeholders; one inside a JSON number leaves a bare `[PHONE]`, which
    is read back as the string it now is."""
    try:
        value = json.loads(content)
    except ValueError:
        value = json.loads(_quote_bare_placeholders(content))
    if not isinstance(value, dict):
        raise InvalidInputError("stored content is not a JSON object", "value")
    return value


def _quote_bare_placeholders(text: str) -> str:
    out: List[str] = []
    i, n = 0, len(text)
    while i < n:
        ch = text[i]
        if ch == '"':
            j = i + 1
            while j < n and text[j] != '"':
                j += 2 if text[j] == "\\" else 1
            out.append(text[i : j + 1])
            i = j + 1
            continue
        m = _BARE_PLACEHOLDER.match(text, i)
        if m and m.end() > i:
            out.append(json.dumps(m.group(0)))
            i = m.end()
            continue
        out.append(ch)
        i += 1
    return "".join(out)


def _compare(item_value: Any, filter_value: Any) -> bool:
    """LangGraph's filter semantics (as its in-memory store applies them)."""
    if isinstance(filter_value, dict):
        if any(k.startswith("$") for k in filter_value):
            return all(_operator(item_value, k, v) for k, v in filter_value.items())
        if not isinstance(item_value, dict):
            return False
        return all(_compare(item_value.get(k), v) for k, v in filter_value.items())
    if isinstance(filter_value, (list, tuple)):
        return (
            isinstance(item_value, (list, tuple))
            and len(item_value) == len(filter_value)
            and all(_compare(i, f) for i, f in zip(item_value, filter_value))
        )
    return bool(item_value == filter_value)


def _operator(value: Any, op: str, operand: Any) -> bool:
    if op == "$eq":
        return bool(value == operand)
    if op == "$ne":
        return bool(value != operand)
    if op in ("$gt", "$gte", "$lt", "$lte"):
        try:
            a, b = float(value), float(operand)
        except (TypeError, ValueError):
            return False
        return {"$gt": a > b, "$gte": a >= b, "$lt": a < b, "$lte": a <= b}[op]
    raise InvalidInputError(f"filter: unsupported operator {op!r}", "filter")


def _matches(condition: MatchCondition, namespace: Tuple[str, ...]) -> bool:
    path = tuple(condition.path)
    if len(namespace) < len(path):
        return False
    if condition.match_type == "prefix":
        pairs = zip(namespace, path)
    elif condition.match_type == "suffix":
        pairs = zip(reversed(namespace), reversed(path))
    else:
        raise InvalidInputError(f"match_type: unsupported {condition.match_type!r}", "match_type")
    return all(p == "*" or k == p for k, p in pairs)


def _check_labels(namespace: Sequence[Any], allow_empty: bool = True) -> Tuple[str, ...]:
    if isinstance(namespace, str) or not isinstance(namespace, (tuple, list)):
        raise InvalidNamespaceError(f"namespace must be a tuple of strings, got {namespace!r}")
    ns = tuple(namespace)
    if not ns and not allow_empty:
        raise InvalidNamespaceError("namespace cannot be empty")
    for label in ns:
        if not isinstance(label, str):
            raise InvalidNamespaceError(f"namespace label {label!r} in {ns} is not a string")
        if not label:
            raise InvalidNamespaceError(f"namespace labels cannot be empty strings: {ns}")
        if "." in label:
            raise InvalidNamespaceError(f"namespace label {label!r} in {ns} contains a period")
    return ns


class _Index:
    """A store's `index` configuration (LangGraph's `IndexConfig`), checked."""

    __slots__ = ("dims", "fields")

    def __init__(self, dims: int, fields: List[Tuple[str, Any]]) -> None:
        self.dims = dims
        #: (path as given, path as LangGraph tokenises it; `"$"` stays `"$"`).
        self.fields = fields


def _index_config(index: Any, engine: Engine) -> _Index:
    """`index` checked against `engine`, whose model the store searches
    with. Raises InvalidInputError naming `index.<key>`."""
    if not isinstance(index, Mapping):
        raise InvalidInputError(f"index: expected a dict (LangGraph's IndexConfig), got {type(index).__name__}", "index")
    unknown = sorted(str(k) for k in index if k not in _INDEX_KEYS and not str(k).startswith("__"))
    if unknown:
        raise InvalidInputError(
            f"index: unknown key {unknown[0]!r}; MnemonStore reads {', '.join(_INDEX_KEYS)}", f"index.{unknown[0]}"
        )
    dims = index.get("dims", engine.dim)
    if isinstance(dims, bool) or not isinstance(dims, int) or dims != engine.dim:
        raise InvalidInputError(
            f"index.dims: {dims!r}, but the engine's embedder ({engine.model_id}) makes vectors of {engine.dim} "
            "components",
            "index.dims",
        )
    embed = index.get("embed")
    if embed is not None and embed is not engine.embedder:
        raise InvalidInputError(
            f"index.embed: the store searches with its engine's embedder ({engine.model_id}); open the engine with "
            "this model (Engine.open(path, embedder=...)) and leave embed out, or use MnemonStore.open(path, "
            "index=...)",
            "index.embed",
        )
    fields = index.get("fields") or ["$"]
    if isinstance(fields, str) or not isinstance(fields, Sequence) or not all(isinstance(f, str) for f in fields):
        raise InvalidInputError("index.fields: expected a list of JSON paths (str), such as ['text']", "index.fields")
    return _Index(dims, [(f, f if f == "$" else _tokenize("index.fields", f)) for f in fields])


def _tokenize(field: str, path: str) -> Any:
    try:
        return tokenize_path(path)
    except (ValueError, IndexError) as e:
        raise InvalidInputError(f"{field}: {path!r} is not a JSON path: {e}", field) from None


def _index_embedder(embed: Any) -> Any:
    """`IndexConfig["embed"]` as `Engine.open`'s `embedder`: a function or
    an object with `embed_documents` as it is; a provider string
    (`"openai:text-embedding-3-small"`) as LangGraph loads it (LangChain's
    `init_embeddings`); an async function is refused."""
    if isinstance(embed, str):
        try:
            return ensure_embeddings(embed)
        except (ValueError, ImportError) as e:
            raise InvalidInputError(f"index.embed: {e}", "index.embed") from None
    if not hasattr(embed, "embed_documents") and _is_async(embed):
        raise InvalidInputError(
            "index.embed: async functions are not supported (the engine embeds on its own threads); pass a plain "
            "function or an Embeddings object",
            "index.embed",
        )
    return embed


def _unit_mean(vectors: List[List[float]], dims: int) -> List[float]:
    """The mean of `vectors` scaled to unit length; for none (or a mean of
    zero), one fixed vector: the item needs one, though search never ranks
    it by it."""
    total = [0.0] * dims
    for v in vectors:
        for i, x in enumerate(v):
            total[i] += x
    norm = math.sqrt(sum(x * x for x in total))
    if norm == 0.0 or not math.isfinite(norm):
        return [1.0 / math.sqrt(dims)] * dims
    return [x / norm for x in total]


class MnemonStore(BaseStore):
    """LangGraph `BaseStore` on a mnemon `Engine` (see the module docs for
    the mapping).

    `MnemonStore(engine)` uses an open engine (the caller closes it);
    `MnemonStore.open(path, ...)` opens one that `close()` (or the `with`
    block) closes. Any number of threads and tasks may share a store: the
    engine releases the GIL while it works, and `abatch` runs on the event
    loop's executor.

    Arguments:
        engine: the open engine.
        prefix: first part of every mnemon namespace this store uses, 1–32
            characters of `[A-Za-z0-9_-]` (default `"lg"`); stores with
            different prefixes share an engine without seeing each other.
        tier: tier of the memories (default `"permanent"`: never archived
            by `maintain`; `"long_term"` lets unread items decay away).
        kind: kind of the memories (default `"fact"`).
        include_quarantined: let `search` return items quarantined as
            injected instructions (default False).
        index: LangGraph's `IndexConfig` (`{"dims": N, "fields": [...]}`):
            search with a query ranks items by the cosine similarity of the
            query to the texts at `fields` (JSON paths into the value,
            default `["$"]`, the whole value as JSON), as LangGraph's own
            stores do; see "Vector index" in the module docs. The texts are
            embedded with the engine's embedder, so `dims` must be the
            engine's `dim` (default: it), and `embed`, if given, must be the
            embedder the engine was opened with (`MnemonStore.open(path,
            index=...)` opens it so). None (default): search with a query
            is mnemon's hybrid recall over whole values.

    Raises:
        InvalidInputError: a bad prefix or index configuration.
    """

    supports_ttl = False
    __slots__ = (
        "_engine",
        "_owned",
        "_prefix",
        "_tier",
        "_kind",
        "_include_quarantined",
        "_lock",
        "_catalog",
        "_index",
        "_item_locks",
    )

    def __init__(
        self,
        engine: Engine,
        *,
        prefix: str = "lg",
        tier: str = "permanent",
        kind: str = "fact",
        include_quarantined: bool = False,
        index: Optional[IndexConfig] = None,
    ) -> None:
        if not isinstance(engine, Engine):
            raise InvalidInputError(f"engine: expected mnemon.Engine, got {type(engine).__name__}", "engine")
        if not isinstance(prefix, str) or not _PREFIX.fullmatch(prefix):
            raise InvalidInputError(f"prefix: {prefix!r} is not 1–32 characters of [A-Za-z0-9_-]", "prefix")
        self._engine = engine
        self._owned = False
        self._prefix = prefix
        self._tier = tier
        self._kind = kind
        self._include_quarantined = bool(include_quarantined)
        self._index = None if index is None else _index_config(index, engine)
        self._lock = threading.Lock()
        # Puts of one item (its memory, then its field vectors) run one at
        # a time; items hash onto these.
        self._item_locks = [threading.Lock() for _ in range(64)]
        # mnemon namespace -> tuple, once read from the catalogue.
        self._catalog: Optional[Dict[str, Tuple[str, ...]]] = None

    @classmethod
    def open(
        cls,
        path: Any,
        *,
        prefix: str = "lg",
        tier: str = "permanent",
        kind: str = "fact",
        include_quarantined: bool = False,
        index: Optional[IndexConfig] = None,
        **engine_options: Any,
    ) -> "MnemonStore":
        """Opens an engine on `path` (`engine_options` as `Engine.open`) and
        a store on it (the other arguments as the constructor's) that owns
        it: `close()` closes the engine.

        With `index`, its `embed` is the engine's embedder: a function
        `(list[str]) -> list[list[float]]`, a LangChain `Embeddings`, the
        name of one of mnemon's models (`"e5-small"`, `"minilm"`,
        `"hashing"`), one of mnemon's providers (`"openai:MODEL"` for any
        OpenAI-compatible `/embeddings`, `"ollama:MODEL"`: called by mnemon
        itself, no LangChain package needed; see docs/guide/providers.md),
        or another provider string LangGraph accepts (`"cohere:…"`, loaded
        with LangChain's `init_embeddings`, which needs `langchain` and the
        provider's package); `dims` is its dimension (probed when left
        out). `embedder_name=` (an engine option) names
        the model in the store (default: the provider string, else as
        `Engine.open`). Without `embed`, the engine's `embedder` option
        applies.

        Raises as `Engine.open` and the constructor; InvalidInputError
        (field `index.embed`) for an embed LangGraph cannot load (an async
        function, a provider string without its packages) or an `embedder`
        option given as well."""
        config: Optional[IndexConfig] = None
        if index is not None:
            if not isinstance(index, Mapping):
                raise InvalidInputError(f"index: expected a dict, got {type(index).__name__}", "index")
            config = cast(IndexConfig, {k: v for k, v in index.items() if k != "embed"})
            embed = index.get("embed")
            if embed is not None:
                if "embedder" in engine_options:
                    raise InvalidInputError("embedder: give the model once, as index['embed']", "embedder")
                engine = cls._open_engine(path, embed, index.get("dims"), engine_options)
            else:
                engine = Engine.open(path, **engine_options)
        else:
            engine = Engine.open(path, **engine_options)
        try:
            store = cls(
                engine, prefix=prefix, tier=tier, kind=kind, include_quarantined=include_quarantined, index=config
            )
        except BaseException:
            engine.close()
            raise
        store._owned = True
        return store

    @staticmethod
    def _open_engine(path: Any, embed: Any, dims: Any, options: Dict[str, Any]) -> Engine:
        """An engine on `path` embedding with `IndexConfig["embed"]`."""
        if isinstance(embed, str):
            # One of mnemon's own models or providers, by name, first. A
            # provider (`openai:`, `ollama:`) takes the index's `dims`, so
            # opening sends it nothing.
            spec = embed
            if dims is not None and embed.split(":", 1)[0].strip().lower() in ("openai", "ollama"):
                if "dims=" not in embed and "dimensions=" not in embed:
                    spec = f"{embed}{'&' if '?' in embed else '?'}dims={int(dims)}"
            try:
                return Engine.open(path, embedder=spec, **options)
            except InvalidInputError as e:
                if e.field != "embedder" or "unknown embedder" not in e.message:
                    raise
            options = dict(options)
            options.setdefault("embedder_name", embed)
        return Engine.open(path, embedder=_index_embedder(embed), dims=dims, **options)

    @property
    def engine(self) -> Engine:
        """The engine underneath."""
        return self._engine

    def close(self) -> None:
        """Closes the engine if this store opened it (`MnemonStore.open`)."""
        if self._owned:
            self._engine.close()

    def __enter__(self) -> "MnemonStore":
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()

    # -- names -----------------------------------------------------------------

    def mnemon_namespace(self, namespace: Sequence[str]) -> str:
        """The mnemon namespace that holds the items of `namespace` (see the
        module docs). Raises InvalidNamespaceError for a bad tuple."""
        ns = _check_labels(namespace, allow_empty=False)
        name = f"{self._prefix}:" + ".".join(escape_label(label) for label in ns)
        if len(name) <= MAX_NAMESPACE_CHARS:
            return name
        digest = hashlib.sha256(json.dumps(list(ns), ensure_ascii=False).encode("utf-8")).hexdigest()
        return f"{self._prefix}:@@{digest}"

    @property
    def catalog_namespace(self) -> str:
        """The mnemon namespace recording every namespace tuple used."""
        return f"{self._prefix}::catalog"

    @staticmethod
    def _ident(key: str) -> str:
        if not isinstance(key, str):
            raise InvalidInputError(f"key: expected str, got {type(key).__name__}", "key")
        if len(_key_ref(key).encode("utf-8", "surrogatepass")) > MAX_KEY_BYTES:
            raise InvalidInputError(f"key: longer than {MAX_KEY_BYTES} bytes of UTF-8", "key")
        if not key:
            return "item.@"
        esc = escape_label(key)
        if len(esc) > MAX_KEY_IDENT_CHARS:
            esc = "@@" + hashlib.sha256(key.encode("utf-8")).hexdigest()
        return "item." + esc

    # -- catalogue -------------------------------------------------------------

    def _load_catalog(self) -> Dict[str, Tuple[str, ...]]:
        with self._lock:
            if self._catalog is not None:
                return self._catalog
            found: Dict[str, Tuple[str, ...]] = {}
            cursor: Optional[str] = None
            while True:
                page = self._engine.list(self.catalog_namespace, limit=PAGE, cursor=cursor, include_quarantined=True)
                for m in page.memories:
                    entry = self._catalog_entry(m)
                    if entry is not None:
                        found[entry[0]] = entry[1]
                cursor = page.next_cursor
                if cursor is None:
                    break
            self._catalog = found
            return found

    def _catalog_entry(self, m: Any) -> Optional[Tuple[str, Tuple[str, ...]]]:
        """(mnemon namespace, tuple) of the catalogue memory `m`, or None for
        a memory this store did not write there (the catalogue namespace is
        an ordinary one that any door can write to): its key must be the
        hash of the namespace its content decodes to."""
        try:
            if len(m.content) % 2 or not all("a" <= c <= "p" for c in m.content):
                return None
            ns = json.loads(_unletters(m.content).decode("utf-8"))
            if not isinstance(ns, list) or not all(isinstance(label, str) for label in ns):
                return None
            name = self.mnemon_namespace(tuple(ns))
        except (ValueError, InvalidNamespaceError):
            return None
        if m.key != "ns." + hashlib.sha256(name.encode("utf-8")).hexdigest():
            return None
        return name, tuple(ns)

    def _register(self, namespace: Tuple[str, ...], name: str) -> None:
        catalog = self._load_catalog()
        if name in catalog:
            return
        with self._lock:
            if name in catalog:
                return
            content = _letters(json.dumps(list(namespace), ensure_ascii=False).encode("utf-8"))
            key = "ns." + hashlib.sha256(name.encode("utf-8")).hexdigest()
            # Never searched by meaning: a fixed vector, no call to the model.
            self._engine.remember(
                self.catalog_namespace,
                content,
                key=key,
                tier="permanent",
                dedup="off",
                vector=_unit_mean([], self._engine.dim),
            )
            catalog[name] = namespace

    # -- operations ------------------------------------------------------------

    def batch(self, ops: Iterable[Op]) -> List[Result]:
        """Runs `ops` in order and returns one result per op: an `Item` or
        None for a `GetOp`, a list of `SearchItem` for a `SearchOp`, a list
        of namespace tuples for a `ListNamespacesOp`, None for a `PutOp`.

        Raises:
            InvalidNamespaceError: a bad namespace tuple.
            InvalidInputError: a bad key or value (not a JSON object, too
                large), a bad filter; nothing of that op is written.
            NotImplementedError: a `PutOp` with a TTL.
            MnemonError: the engine's errors (ClosedError, ...).
        """
        ops = list(ops)
        # The texts of every put are embedded together, in one call.
        vectors = self._embed_puts(ops)
        results: List[Result] = []
        for i, op in enumerate(ops):
            if isinstance(op, GetOp):
                results.append(self._get(op))
            elif isinstance(op, PutOp):
                self._put(op, vectors.get(i))
                results.append(None)
            elif isinstance(op, SearchOp):
                results.append(self._search(op))
            elif isinstance(op, ListNamespacesOp):
                results.append(self._list_namespaces(op))
            else:
                raise InvalidInputError(f"ops: unknown operation {type(op).__name__}", "ops")
        return results

    async def abatch(self, ops: Iterable[Op]) -> List[Result]:
        """`batch` on the running loop's default executor: the engine works
        without the GIL, so the loop keeps running meanwhile."""
        ops = list(ops)
        loop = asyncio.get_running_loop()
        return await loop.run_in_executor(None, self.batch, ops)

    # -- vector index ----------------------------------------------------------

    def field_namespace(self, name: str) -> str:
        """The mnemon namespace holding the field vectors of the items in
        mnemon namespace `name` (stores with an `index`): `name` followed
        by `:v`, or `<prefix>:@@v<SHA-256 of name>` when that is too long.
        Neither is ever an item namespace or the catalogue."""
        facet = name + ":v"
        if len(facet) <= MAX_NAMESPACE_CHARS:
            return facet
        return f"{self._prefix}:@@v" + hashlib.sha256(name.encode("utf-8")).hexdigest()

    def _texts(self, op: PutOp) -> List[Tuple[str, str]]:
        """(path, text) of every text of `op`'s value that its vectors are
        made of, as LangGraph's stores take them: the index's `fields`, or
        the put's own `index` list; none for `index=False`. A path that
        selects several texts gives `<path>.<i>` for each."""
        if self._index is None or op.index is False or not isinstance(op.value, Mapping):
            return []
        if op.index is None:
            paths = self._index.fields
        else:
            if (
                isinstance(op.index, str)
                or not isinstance(op.index, Sequence)
                or not all(isinstance(p, str) for p in op.index)
            ):
                raise InvalidInputError("index: expected False or a list of JSON paths (str)", "index")
            paths = [(p, _tokenize("index", p)) for p in op.index]
        out: List[Tuple[str, str]] = []
        for path, tokens in paths:
            texts = get_text_at_path(op.value, tokens)
            if len(texts) > 1:
                out.extend((f"{path}.{i}", text) for i, text in enumerate(texts))
            elif texts:
                out.append((path, texts[0]))
        return out

    def _embed_puts(self, ops: List[Op]) -> Dict[int, List[Tuple[str, List[float]]]]:
        """(path, vector) of the texts of every put in `ops`, by position,
        embedded in one call; empty without an index."""
        if self._index is None:
            return {}
        wanted = {i: self._texts(op) for i, op in enumerate(ops) if isinstance(op, PutOp) and op.value is not None}
        texts = [text for pairs in wanted.values() for _, text in pairs]
        vectors = iter(self._engine.embed(texts) if texts else [])
        return {i: [(path, next(vectors)) for path, _ in pairs] for i, pairs in wanted.items()}

    def _write_fields(self, name: str, ident: str, item_id: int, fields: List[Tuple[str, List[float]]]) -> None:
        """Replaces the field vectors of item `ident` of namespace `name` by
        `fields`: one memory per text in the field namespace, whose content
        names the item's memory and the path (no text is copied), found by
        the item's session."""
        facets = self.field_namespace(name)
        self._forget_fields(facets, ident)
        for path, vector in fields:
            self._engine.remember(
                facets,
                json.dumps({"item": item_id, "field": path}, ensure_ascii=False, separators=(",", ":")),
                session=ident,
                tier="permanent",
                kind="field",
                dedup="off",
                vector=vector,
            )

    def _forget_fields(self, facets: str, ident: str) -> None:
        if self._engine.list(facets, session=ident, limit=1, include_quarantined=True).memories:
            self._engine.forget(facets, session=ident, reason="store put")

    def _vector_ranked(self, name: str, query: str, wanted: int) -> List[Tuple[str, float]]:
        """(item session, score) of the items of namespace `name` whose
        field vectors best match `query`, best first: an item's score is
        the highest cosine similarity of the query to any of its texts."""
        facets = self.field_namespace(name)
        top_k = max(1, min(PAGE, wanted))
        while True:
            try:
                resp = self._engine.recall(
                    facets,
                    query,
                    top_k=top_k,
                    # The candidates are the top_k by cosine; every one comes
                    # back, however the rerank orders them.
                    candidates=top_k,
                    mode="dense",
                    abstain_below=-1.0,
                    include_quarantined=True,
                    record_access=False,
                    explain=True,
                )
            except NotFoundError:
                return []
            best: Dict[str, float] = {}
            for h in resp.hits:
                if h.memory is None or h.memory.session is None or h.explain is None:
                    continue
                ident, score = h.memory.session, float(h.explain.similarity)
                if score > best.get(ident, float("-inf")):
                    best[ident] = score
            exhausted = len(resp.hits) < top_k and not resp.omitted
            if len(best) >= wanted or exhausted or top_k >= PAGE:
                return sorted(best.items(), key=lambda kv: kv[1], reverse=True)
            top_k = min(PAGE, top_k * 2)

    def _find(self, name: str, ident: str) -> Optional[Memory]:
        page = self._engine.list(name, session=ident, include_quarantined=True, limit=1)
        return page.memories[0] if page.memories else None

    def _item(self, namespace: Tuple[str, ...], m: Memory, score: Optional[float] = None) -> SearchItem:
        return SearchItem(
            namespace=namespace,
            key=_key_from_ref(m.source_ref),
            value=_decode_value(m.content),
            created_at=m.first_seen,
            updated_at=m.valid_from,
            score=score,
        )

    def _get(self, op: GetOp) -> Optional[Item]:
        ns = _check_labels(op.namespace)
        m = self._find(self.mnemon_namespace(ns), self._ident(op.key))
        if m is None:
            return None
        s = self._item(ns, m)
        return Item(value=s.value, key=s.key, namespace=ns, created_at=s.created_at, updated_at=s.updated_at)

    def _put(self, op: PutOp, fields: Optional[List[Tuple[str, List[float]]]] = None) -> None:
        ns = _check_labels(op.namespace, allow_empty=False)
        if op.ttl is not None:
            raise NotImplementedError("MnemonStore does not support TTLs (supports_ttl is False)")
        name = self.mnemon_namespace(ns)
        ident = self._ident(op.key)
        lock = self._item_locks[hash((name, ident)) % len(self._item_locks)]
        if op.value is None:
            with lock:
                # Deleting an item the store does not hold is a no-op, as in
                # every BaseStore; for mnemon it is an unknown session.
                try:
                    self._engine.forget(name, session=ident, reason="store delete")
                except NotFoundError:
                    pass
                if self._index is not None:
                    self._forget_fields(self.field_namespace(name), ident)
            return
        if not isinstance(op.value, Mapping):
            raise InvalidInputError(f"value: expected a dict, got {type(op.value).__name__}", "value")
        if op.index is not None and op.index is not False and (
            isinstance(op.index, str) or not isinstance(op.index, Sequence)
        ):
            raise InvalidInputError("index: expected False or a list of JSON paths (str)", "index")
        content = _encode_value(op.value)
        size, most = len(content.encode("utf-8", "surrogatepass")), self._engine.max_content_bytes
        if size > most:
            raise InvalidInputError(f"value: {size} bytes as JSON, at most {most} allowed", "value")
        # With an index, search ranks by the field vectors, and the item's
        # own is the mean of them (the engine's other doors recall by it);
        # without, the engine embeds the value, unless it is not indexed.
        vector = None
        if self._index is not None:
            fields = fields if fields is not None else self._embed_puts([op]).get(0, [])
            vector = _unit_mean([v for _, v in fields], self._engine.dim)
        elif op.index is False:
            vector = _unit_mean([], self._engine.dim)
        self._register(ns, name)
        with lock:
            self._write_item(op, name, ident, content, vector, fields)

    def _write_item(
        self,
        op: PutOp,
        name: str,
        ident: str,
        content: str,
        vector: Optional[List[float]],
        fields: Optional[List[Tuple[str, List[float]]]],
    ) -> None:
        try:
            r = self._engine.remember(
                name,
                content,
                key=ident,
                session=ident,
                source_ref=_key_ref(op.key),
                tier=self._tier,  # type: ignore[arg-type]
                kind=self._kind,
                entities=[UNINDEXED] if op.index is False else [],
                dedup="off",
                vector=vector,
            )
        except InvalidInputError as e:
            # The item key is stored as the memory's key, session and source
            # reference: a refusal of any of them is a refusal of the key.
            if e.field not in ("key", "session", "source_ref"):
                raise
            # The message names the field first ("session must be …",
            # "key: …"); the key stands in for it.
            why = e.message
            for head in (f"{e.field}: ", f"{e.field} "):
                if why.startswith(head):
                    why = why[len(head) :]
                    break
            raise InvalidInputError(f"key: {why}", "key") from e
        if self._index is not None:
            self._write_fields(name, ident, r.id, fields or [])

    def _recalled(self, name: str, query: str, wanted: int, refresh: bool) -> List[Tuple[Memory, float]]:
        """(memory, score) of mnemon's hybrid recall of `query` in `name`,
        best first, without the items put with `index=False`."""
        top_k = max(1, min(PAGE, wanted))
        while True:
            hits = self._engine.recall(
                name,
                query,
                top_k=top_k,
                include_quarantined=self._include_quarantined,
                record_access=refresh,
                # An item is built from the whole memory (key, times).
                explain=True,
            ).hits
            out = [(h.memory, float(h.score)) for h in hits if h.memory is not None]
            kept = [(m, score) for m, score in out if UNINDEXED not in m.entities]
            if len(kept) == len(out) or len(hits) < top_k or top_k >= PAGE:
                return kept
            top_k = min(PAGE, top_k * 2)

    def _by_session(self, name: str, idents: List[str]) -> Dict[str, Memory]:
        """The current item memories of `name` with these sessions."""
        if len(idents) <= 32:
            found = {}
            for ident in idents:
                m = self._find(name, ident)
                if m is not None:
                    found[ident] = m
            return found
        wanted = set(idents)
        out: Dict[str, Memory] = {}
        cursor: Optional[str] = None
        while True:
            page = self._engine.list(name, limit=PAGE, cursor=cursor, include_quarantined=True)
            for m in page.memories:
                if m.session in wanted:
                    out[m.session] = m
            cursor = page.next_cursor
            if cursor is None:
                return out

    def _namespaces_under(self, prefix: Tuple[str, ...]) -> List[Tuple[str, Tuple[str, ...]]]:
        """(mnemon namespace, tuple) of every catalogued tuple under `prefix`."""
        catalog = self._load_catalog()
        with self._lock:  # a put in another thread may add to it meanwhile
            entries = list(catalog.items())
        n = len(prefix)
        return sorted((name, ns) for name, ns in entries if ns[:n] == prefix)

    def _listed(self, name: str, ns: Tuple[str, ...]) -> List[SearchItem]:
        items: List[SearchItem] = []
        cursor: Optional[str] = None
        while True:
            page = self._engine.list(name, limit=PAGE, cursor=cursor, include_quarantined=self._include_quarantined)
            items.extend(self._item(ns, m) for m in page.memories)
            cursor = page.next_cursor
            if cursor is None:
                return items

    def _search(self, op: SearchOp) -> List[SearchItem]:
        prefix = _check_labels(op.namespace_prefix)
        limit, offset = int(op.limit), int(op.offset)
        if limit < 0 or offset < 0:
            raise InvalidInputError("limit and offset must not be negative", "limit")
        flt = op.filter or {}
        if not isinstance(flt, Mapping):
            raise InvalidInputError(f"filter: expected a dict, got {type(flt).__name__}", "filter")

        def keep(item: SearchItem) -> bool:
            return all(_compare(item.value.get(k), v) for k, v in flt.items())

        wanted = offset + limit
        spaces = self._namespaces_under(prefix)
        ranked: List[SearchItem] = []
        if op.query:
            want = wanted if not flt else PAGE
            for name, ns in spaces:
                if self._index is not None:
                    found = self._vector_ranked(name, op.query, want)
                    memories = self._by_session(name, [ident for ident, _ in found])
                    scored = [(memories[ident], score) for ident, score in found if ident in memories]
                    scored = [
                        (m, score) for m, score in scored if m.quarantine is None or self._include_quarantined
                    ]
                else:
                    scored = self._recalled(name, op.query, want, bool(op.refresh_ttl))
                for m, score in scored:
                    item = self._item(ns, m, score)
                    if keep(item):
                        ranked.append(item)
            ranked.sort(key=lambda i: i.score if i.score is not None else float("-inf"), reverse=True)
        if len(ranked) < wanted:
            seen = {(i.namespace, i.key) for i in ranked}
            rest = [i for name, ns in spaces for i in self._listed(name, ns) if (i.namespace, i.key) not in seen]
            rest = [i for i in rest if keep(i)]
            rest.sort(key=lambda i: i.updated_at, reverse=True)
            ranked.extend(rest)
        return ranked[offset:wanted]

    def _list_namespaces(self, op: ListNamespacesOp) -> List[Tuple[str, ...]]:
        for condition in op.match_conditions or ():
            _check_labels(tuple(p for p in condition.path if p != "*"))
        found = []
        for name, ns in self._namespaces_under(()):
            if not all(_matches(c, ns) for c in op.match_conditions or ()):
                continue
            if self._engine.list(name, limit=1, include_quarantined=True).memories:
                found.append(ns)
        if op.max_depth is not None:
            found = sorted({ns[: op.max_depth] for ns in found})
        else:
            found = sorted(found)
        return found[op.offset : op.offset + op.limit]

    # -- beyond BaseStore --------------------------------------------------------

    def history(self, namespace: Sequence[str], key: str) -> List[Item]:
        """Every version of the item at (`namespace`, `key`), oldest first:
        what each put stored (versions of a deleted item are gone).

        Raises InvalidNamespaceError, InvalidInputError, ClosedError."""
        ns = _check_labels(namespace)
        name = self.mnemon_namespace(ns)
        m = self._find(name, self._ident(key))
        if m is None:
            return []
        out: List[Item] = []
        cursor: Optional[str] = None
        while True:
            page = self._engine.history(name, m.id, cursor=cursor, limit=PAGE)
            for v in page.versions:
                out.append(
                    Item(
                        value=_decode_value(v.content),
                        key=_key_from_ref(v.source_ref),
                        namespace=ns,
                        created_at=v.first_seen,
                        updated_at=v.valid_from,
                    )
                )
            cursor = page.next_cursor
            if cursor is None:
                return out

"""`Engine`: the Python door to the engine's command surface."""

from __future__ import annotations

import os
import warnings
from datetime import datetime
from collections.abc import Mapping, Sequence
from typing import Any, Dict, List, Optional, Tuple, Type, TypeVar, Union

from . import _native
from ._embedder import EmbedFunc, resolve_embedder
from ._encode import as_of_value, encode_args, find_bad_string, time_text
from ._errors import InvalidInputError, error_for
from ._types import (
    BackupReport,
    CheckReport,
    Consolidation,
    ContextBlock,
    DedupMode,
    EmbedMode,
    ErasureReceipt,
    ExportReport,
    ExtractionPromptResponse,
    ExtractionReport,
    ForgetResponse,
    ForgetUserResponse,
    HistoryResponse,
    ImportSummary,
    Lang,
    ListResponse,
    LogResponse,
    Memory,
    NamespaceMaintenance,
    NamespacesResponse,
    ObserveResponse,
    ReceiptsResponse,
    RecallMode,
    RecallResponse,
    Remembered,
    RestoreReport,
    Role,
    SessionEnd,
    ShredReport,
    SimilarityNorm,
    Stats,
    Tier,
    Timeline,
)

try:  # orjson decodes responses about three times faster; same values.
    from orjson import loads as _loads
except ImportError:  # pragma: no cover - orjson is a dependency of the package
    from json import loads as _loads  # type: ignore[assignment]

__all__ = ["Engine", "View", "AsOf", "TimeRange"]

R = TypeVar("R")

#: A read position: a log position (`int`, the `seq` of an event; 0 is
#: before anything), a recorded time (aware `datetime`, or RFC 3339 text:
#: what the store held then), or the surface's object itself
#: (`{"seq": n}`, `{"time": t}`, `{"valid_time": t}`: what was true in the
#: world at `t`, by the memories' event times; see `Engine.as_of`).
AsOf = Union[int, datetime, str, Mapping[str, Any]]

#: A time window `(from, to)`, inclusive; either end may be None (open).
TimeRange = Tuple[Optional[Union[datetime, str]], Optional[Union[datetime, str]]]

PathLike = Union[str, "os.PathLike[str]"]


def _put(args: Dict[str, Any], **optional: Any) -> Dict[str, Any]:
    """`args` plus every optional argument that is not None."""
    for k, v in optional.items():
        if v is not None:
            args[k] = v
    return args


def _seq(value: Any) -> Any:
    """A sequence argument as a JSON array; anything else (a lone string, a
    number) is passed on for the surface to reject with the field named."""
    if value is None or isinstance(value, (str, bytes, Mapping)):
        return value
    try:
        return [v for v in value]
    except TypeError:
        return value


def _vector(value: Any) -> Any:
    """A vector argument as a list of floats (from any sequence or array of
    numbers); anything else is passed on for the surface to reject."""
    if value is None or isinstance(value, (str, bytes, Mapping)):
        return value
    try:
        return [float(x) for x in value]
    except (TypeError, ValueError):
        raise InvalidInputError("vector: expected a sequence of numbers", "vector") from None


def _time_range(args: Dict[str, Any], time_range: Optional[TimeRange]) -> None:
    if time_range is None:
        return
    if isinstance(time_range, (str, bytes)) or not isinstance(time_range, Sequence) or len(time_range) != 2:
        raise InvalidInputError("time_range: expected a pair (from, to), either end None", "time_range")
    start, end = time_range
    if start is not None:
        args["from"] = time_text("time_range[0]", start)
    if end is not None:
        args["to"] = time_text("time_range[1]", end)


def _seq_range(args: Dict[str, Any], seq_range: Optional[Tuple[Optional[int], Optional[int]]]) -> None:
    if seq_range is None:
        return
    if isinstance(seq_range, (str, bytes)) or not isinstance(seq_range, Sequence) or len(seq_range) != 2:
        raise InvalidInputError("seq_range: expected a pair (from, to), either end None", "seq_range")
    if seq_range[0] is not None:
        args["from"] = seq_range[0]
    if seq_range[1] is not None:
        args["to"] = seq_range[1]


class Engine:
    """An open mnemon store: long-term memory for an agent, in process.

    Open with `Engine.open(path)`; use it as a context manager (or call
    `close()`) so the store's lock is released and every queued write is
    flushed. One process may hold a data directory at a time; within the
    process one `Engine` is safe to share between threads: every call
    releases the GIL while it embeds, waits for the writer's group commit,
    recalls or compacts, so threads make progress together.

    Every method is one operation of the engine's command surface — the
    same requests and responses as the CLI's `--json` output and the MCP
    server. Results are typed objects (`Remembered`, `RecallResponse`,
    `Memory`, ...) whose `to_dict()` is the surface's JSON. Errors are
    subclasses of `MnemonError`; bad input raises `InvalidInputError`
    naming the field and writes nothing.

    Every read and write names a namespace: 1–128 characters of
    `[A-Za-z0-9_.:@-]` (see `Namespace`); nothing reads across namespaces.
    """

    __slots__ = ("_native", "_embedder", "__weakref__")

    def __init__(self, native: _native.Engine, embedder: Any = None) -> None:
        """Wraps an open native engine; use `Engine.open`."""
        self._native = native
        self._embedder = embedder

    @classmethod
    def open(
        cls,
        path: PathLike,
        *,
        embedder: Union[str, EmbedFunc, Any] = "auto",
        embedder_name: Optional[str] = None,
        dims: Optional[int] = None,
        models_dir: Optional[PathLike] = None,
        flush_interval_s: Optional[float] = None,
        max_content_bytes: Optional[int] = None,
        pii_policy: Optional[str] = None,
        injection_policy: Optional[str] = None,
        max_response_tokens: Optional[int] = None,
        embed_mode: Optional[EmbedMode] = None,
        reranker: Optional[str] = None,
        key_file: Optional[PathLike] = None,
        key_env: Optional[str] = None,
        keyring: Optional[PathLike] = None,
    ) -> "Engine":
        """Opens (creating if missing) the store in directory `path`.

        Arguments:
            embedder: `"auto"` (a new store gets multilingual-e5-small when
                installed, else bge-small-en-v1.5, else all-MiniLM-L6-v2;
                with none of them installed,
                opening a new store raises `EmbedderError` and creates
                nothing, rather than building a store that recalls by exact
                words only; an existing store keeps the model it was built
                with, and opening it raises `EmbedderError` when that model
                is not installed in `models_dir`, or is not a built-in one (a
                program's own embedder made it), rather than moving it to
                another model), `"hashing"` (384 dimensions, no download,
                lexical only: recalls by exact words), `"minilm"`,
                `"e5-small"` or `"bge-small-en"` (English only). Install
                models with `mnemon model install e5-small`.

                Or a model you run as a service: `"openai:MODEL[@BASE_URL]"`
                (any OpenAI-compatible `/embeddings`: OpenAI, vLLM,
                Infinity, LM Studio, llama.cpp, TEI) or
                `"ollama:MODEL[@BASE_URL]"`, with options after `?` such as
                `dims=384` (docs/guide/providers.md). The API key is read
                from `MNEMON_EMBEDDER_API_KEY`, else `OPENAI_API_KEY` (or
                the variable `key_env=` names), never stored. While the
                provider is down, `remember` stores memories at once and
                they are embedded when it answers again.

                Or your own model: a function `(list[str]) -> list[list[float]]`
                (one vector per text, in order; lists, tuples or NumPy arrays
                of numbers), or an object with `embed_documents` (and
                `embed_query`, used for recall queries), such as a LangChain
                `Embeddings`. The engine calls it in batches (up to 64 texts
                when it re-embeds a store) from the calling thread or its own
                threads, holding the GIL only for the call; it must be a
                plain (not async) function and safe to call from several
                threads. Each answer is checked: one vector per text, `dims`
                finite components, not all zero (vectors are scaled to unit
                length); a wrong answer or an exception raises
                `EmbedderError` naming the embedder, and nothing is written.
            embedder_name: with your own model, the model id the store
                records with its vectors (1–128 bytes, not a built-in
                model's id nor a provider spec such as `"openai:…"`), e.g.
                `"my-encoder-v2"`. Default:
                `"python:"` and the function's (or the object's class's)
                module and name, plus its `model` attribute when it has one.
                Give a new name whenever the model changes: vectors are kept
                per name. Opening a store with a model of another name embeds
                every memory again with it (a `UserWarning` says so), so
                vectors of two models are never mixed; `embedder="auto"`
                refuses a store built with your own model.
            dims: with your own model, the number of components of its
                vectors, 1–65,536. Default: learnt by embedding one short
                text while the store opens.
            models_dir: where models are installed (default `$MNEMON_MODELS`,
                else `$XDG_DATA_HOME/mnemon/models`, else
                `~/.local/share/mnemon/models`).
            flush_interval_s: None (default) flushes every group of writes to
                disk before any of them returns: nothing acknowledged is ever
                lost. Seconds in 0.001–60 flush at most that long after
                returning (faster; a crash may lose the last interval).
            max_content_bytes: largest memory or observation text in UTF-8
                bytes, 1–1,048,576 (default 32 KiB, `DEFAULT_MAX_CONTENT_BYTES`).
            pii_policy: personal data (phone, ID and card numbers, e-mail) in
                text: `"redact"` (default: placeholders such as `[PHONE]` are
                stored, never the data), `"reject"` or `"off"`.
            injection_policy: text that reads as an injected instruction:
                `"quarantine"` (default: stored, kept out of recall),
                `"reject"` or `"allow"`.
            max_response_tokens: cap of one response in estimated tokens, at
                least 1,000 (default 25,000, `DEFAULT_MAX_RESPONSE_TOKENS`, the
                limit MCP clients apply); recall and list pages stop before it.
            embed_mode: when `remember` embeds: `"sync"` (default: before it
                writes, so vector recall finds the memory at once) or
                `"deferred"` (it returns once the write is durable; a
                background embedder adds the vector, and recall finds the
                memory lexically meanwhile). `remember(embed=...)` overrides.
            reranker: a rerank provider, `"rerank:MODEL@BASE_URL"` (the
                Cohere/Jina `/rerank` that TEI and Infinity serve; key from
                `MNEMON_RERANKER_API_KEY`), that orders the top 20 hits
                (`?depth=N`) of `recall` and `context`. Default: none.
            key_file: the key file of an encrypted store (64 hex digits;
                `mnemon key new FILE` writes one, mode 0600). A new store
                opened with a key is encrypted at rest, and opens only with
                it from then on (docs/guide/encryption.md). Default: the
                file `$MNEMON_KEY_FILE` names, else the key in `$MNEMON_KEY`,
                else no key. A key is never passed as a string.
            key_env: instead of `key_file`, the name of an environment
                variable holding the key (64 hex digits).
            keyring: the `KEYRING` file of the store an encrypted backup or
                restore was made from (default `$MNEMON_KEYRING`).

        Raises:
            InvalidInputError: a setting of the wrong type or out of range;
                field `key` for a key given to a store created without one.
            KeyRequiredError: the store is encrypted and no key was given,
                or `key_file` does not exist; nothing opened or written.
            WrongKeyError: the key does not open the encrypted store;
                nothing opened or written.
            LockedError: another process or engine holds the store.
            EmbedderError: your own embedder raised or answered wrongly
                (while probing its dimension, or re-embedding the store); the
                model asked for is not installed; under
                `"auto"`, the store's model is not installed or not built in,
                or the store is new and no model is installed (the message
                names `mnemon model install e5-small`).
            CorruptedError, IncompatibleFormatError, IoError, StorageError:
                the store cannot be read.
        """
        _check_type("path", path, (str, os.PathLike))
        caller = None
        if not isinstance(embedder, str):
            caller = resolve_embedder(embedder, embedder_name)
        elif embedder_name is not None or dims is not None:
            field = "embedder_name" if embedder_name is not None else "dims"
            raise InvalidInputError(f"{field}: goes with your own embedder, not {embedder!r}", field)
        _check_type("dims", dims, int, optional=True)
        _check_type("models_dir", models_dir, (str, os.PathLike), optional=True)
        _check_type("flush_interval_s", flush_interval_s, (int, float), optional=True)
        _check_type("max_content_bytes", max_content_bytes, int, optional=True)
        _check_type("pii_policy", pii_policy, str, optional=True)
        _check_type("injection_policy", injection_policy, str, optional=True)
        _check_type("max_response_tokens", max_response_tokens, int, optional=True)
        _check_type("embed_mode", embed_mode, str, optional=True)
        _check_type("reranker", reranker, str, optional=True)
        _check_type("key_file", key_file, (str, os.PathLike), optional=True)
        _check_type("key_env", key_env, str, optional=True)
        _check_type("keyring", keyring, (str, os.PathLike), optional=True)
        if max_content_bytes is not None and max_content_bytes < 0:
            raise InvalidInputError(f"max_content_bytes: {max_content_bytes} is negative", "max_content_bytes")
        if max_response_tokens is not None and max_response_tokens < 0:
            raise InvalidInputError(f"max_response_tokens: {max_response_tokens} is negative", "max_response_tokens")
        try:
            native = _native.Engine(
                os.fspath(path),
                embedder=embedder if isinstance(embedder, str) else "auto",
                embed_documents=None if caller is None else caller.documents,
                embed_query=None if caller is None else caller.query,
                embedder_name=None if caller is None else caller.name,
                dims=dims,
                models_dir=None if models_dir is None else os.fspath(models_dir),
                flush_interval_s=None if flush_interval_s is None else float(flush_interval_s),
                max_content_bytes=max_content_bytes,
                pii_policy=pii_policy,
                injection_policy=injection_policy,
                max_response_tokens=max_response_tokens,
                embed_mode=embed_mode,
                reranker=reranker,
                key_file=None if key_file is None else os.fspath(key_file),
                key_env=key_env,
                keyring=None if keyring is None else os.fspath(keyring),
            )
        except _native.SurfaceError as e:
            raise error_for(*e.args) from None
        except OverflowError:
            raise InvalidInputError("a size setting is too large", "max_content_bytes") from None
        if native.notice:
            # A store on the hashing embedder while a model is installed
            # (it recalls by exact words only until it is moved), or one
            # just embedded again with the caller's model.
            warnings.warn(f"mnemon: {native.notice}", UserWarning, stacklevel=2)
        return cls(native, None if caller is None else embedder)

    # -- lifecycle ---------------------------------------------------------

    def close(self) -> None:
        """Drains queued writes, flushes them and releases the store's lock.

        Later calls raise `ClosedError`; calls already running in other
        threads finish first. Closing twice does nothing.

        Raises:
            PoisonedError: the final flush failed.
        """
        try:
            self._native.close()
        except _native.SurfaceError as e:
            raise error_for(*e.args) from None

    def __enter__(self) -> "Engine":
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()

    def __repr__(self) -> str:
        state = "closed" if self.closed else self.model_id
        return f"Engine(path={str(self.path)!r}, embedder={state!r})"

    @property
    def closed(self) -> bool:
        """True once `close()` was called."""
        return bool(self._native.closed)

    @property
    def path(self) -> str:
        """The data directory."""
        return os.fspath(self._native.path)

    @property
    def model_id(self) -> str:
        """The active embedder's model id, e.g. `"hashing-v1-384"`."""
        return str(self._native.model_id)

    @property
    def dim(self) -> int:
        """Dimension of the embedder's vectors."""
        return int(self._native.dim)

    @property
    def embedder(self) -> Any:
        """Your own embedder as given to `open` (a function or an object
        with `embed_documents`), or None for a built-in model."""
        return self._embedder

    def embed(self, texts: Sequence[str], *, query: bool = False) -> List[List[float]]:
        """Embeds `texts` with the store's model, as memories (`query`
        False) or as recall queries, after the engine's `pii_policy` (as
        `remember` would: `"redact"` embeds the redacted text), and
        returns one unit-length vector of `dim` floats per text. The
        vectors suit `remember(vector=...)`.

        Raises:
            InvalidInputError: `texts` is not a sequence of str.
            RejectedError: personal data under `pii_policy="reject"`.
            EmbedderError: the model failed or answered wrongly.
            ClosedError.
        """
        if isinstance(texts, (str, bytes)) or not isinstance(texts, Sequence):
            raise InvalidInputError("texts: expected a sequence of str", "texts")
        for i, t in enumerate(texts):
            if not isinstance(t, str):
                raise InvalidInputError(f"texts[{i}]: expected str, got {type(t).__name__}", "texts")
        try:
            return self._native.embed(list(texts), query=bool(query))
        except _native.SurfaceError as e:
            raise error_for(*e.args) from None

    @property
    def max_content_bytes(self) -> int:
        """Largest memory or observation text this engine accepts, in bytes
        of UTF-8."""
        return int(self._native.max_content_bytes)

    @property
    def max_response_tokens(self) -> int:
        """The response cap, in estimated tokens."""
        return int(self._native.max_response_tokens)

    # -- the surface ---------------------------------------------------------

    def call(self, op: str, **args: Any) -> Any:
        """Runs operation `op` of the command surface with `args` (its
        request fields) and returns the response as decoded JSON.

        The typed methods below are the usual way in; this one reaches every
        operation (`mnemon._native.ops()`), including `log`, by its wire
        name and fields (`mnemon schema` lists them).

        Raises:
            InvalidInputError: unknown operation or field, wrong type, bad
                value (nothing was written).
            MnemonError: the subclass for the surface's error code.
        """
        _check_type("op", op, str)
        return self._call(op, args)

    def _call(self, op: str, args: Mapping[str, Any]) -> Any:
        payload = encode_args(args)
        try:
            text = self._native.call(op, payload)
        except _native.SurfaceError as e:
            raise error_for(*e.args) from None
        except UnicodeEncodeError:
            field = find_bad_string(args) or "arguments"
            raise InvalidInputError(f"{field}: not valid Unicode text (lone surrogate)", field) from None
        return _loads(text)

    def _one(self, cls: Type[R], op: str, args: Mapping[str, Any]) -> R:
        return cls(self._call(op, args))  # type: ignore[call-arg]

    # -- writes ----------------------------------------------------------------

    def remember(
        self,
        namespace: str,
        content: str,
        *,
        kind: Optional[str] = None,
        tier: Optional[Tier] = None,
        importance: Optional[float] = None,
        entities: Optional[Sequence[str]] = None,
        key: Optional[str] = None,
        sources: Optional[Sequence[int]] = None,
        session: Optional[str] = None,
        event_time: Optional[Union[datetime, str]] = None,
        source_ref: Optional[str] = None,
        dedup: Optional[DedupMode] = None,
        embed: Optional[EmbedMode] = None,
        vector: Optional[Sequence[float]] = None,
    ) -> Remembered:
        """Remembers `content` in `namespace` and returns what was done.

        Arguments:
            content: the memory's text, 1 byte to `max_content_bytes` of UTF-8
                (default 32 KiB), no control characters. Personal data is
                redacted before it is embedded or stored (`pii_policy`).
            kind: `"preference"`, `"fact"` (default), `"decision"`,
                `"task_state"`, `"episode"`, `"procedure"` or your own (1–64
                characters).
            tier: `"short_term"` (archived when its session ends),
                `"long_term"` (default; decays with time since last recall) or
                `"permanent"`.
            importance: 0.0–1.0 (default 0.5).
            entities: what the memory is about (at most 32).
            key: slot key `entity.attribute` (3–128 bytes): a later memory
                under the same key supersedes this one (a version chain).
            sources: ids of the observations it was derived from.
            session: the session it was formed in (1–128 bytes).
            event_time: when the remembered thing happened (aware datetime).
            source_ref: your reference for its source, at most 256 bytes.
            dedup: near-duplicate handling (the surface's `DedupMode`).
            embed: `"deferred"` returns once the write is durable and embeds
                in the background (`vector_pending` is then true: the memory
                is found lexically until its vector arrives, and its
                near-duplicate check runs then); `"sync"` embeds first.
                Default: the engine's `embed_mode`.
            vector: your own embedding of `content`, used instead of the
                store's model (which is then not called): exactly `dim`
                finite numbers, not all zero (scaled to unit length). It must
                come from the model the store records (`model_id`), or recall
                compares it with vectors of another model; opening the store
                with another model later embeds the memory again.

        Returns `Remembered`: `id`, `action` (`created`, `duplicate`,
        `superseded`, ...), `redactions` (kind → count), `quarantined`.

        Raises:
            InvalidInputError: a bad value (nothing written).
            ConflictError: `key` is held in a way that forbids this write.
            NotFoundError: a source observation does not exist.
            RejectedError: refused by the safety policy.
            EmbedderError, PoisonedError, ClosedError.
        """
        args = _put(
            {"namespace": namespace, "content": content},
            kind=kind,
            tier=tier,
            importance=importance,
            entities=_seq(entities),
            key=key,
            sources=_seq(sources),
            session=session,
            event_time=None if event_time is None else time_text("event_time", event_time),
            source_ref=source_ref,
            dedup=dedup,
            embed=embed,
            vector=_vector(vector),
        )
        return self._one(Remembered, "remember", args)

    def supersede(
        self,
        namespace: str,
        id: int,
        content: str,
        *,
        kind: Optional[str] = None,
        tier: Optional[Tier] = None,
        importance: Optional[float] = None,
        entities: Optional[Sequence[str]] = None,
        key: Optional[str] = None,
        sources: Optional[Sequence[int]] = None,
        session: Optional[str] = None,
        event_time: Optional[Union[datetime, str]] = None,
        source_ref: Optional[str] = None,
    ) -> Remembered:
        """Writes `content` as a new version of active memory `id`; fields
        left None keep the old version's values (arguments as `remember`).

        Raises:
            NotFoundError: no memory `id` in the namespace.
            ConflictError: `id` is not active (already superseded,
                forgotten or archived).
            InvalidInputError, RejectedError, EmbedderError, ClosedError.
        """
        args = _put(
            {"namespace": namespace, "id": id, "content": content},
            kind=kind,
            tier=tier,
            importance=importance,
            entities=_seq(entities),
            key=key,
            sources=_seq(sources),
            session=session,
            event_time=None if event_time is None else time_text("event_time", event_time),
            source_ref=source_ref,
        )
        return self._one(Remembered, "supersede", args)

    def observe(
        self,
        namespace: str,
        session: str,
        text: str,
        *,
        role: Optional[Role] = None,
        event_time: Optional[Union[datetime, str]] = None,
        source: Optional[str] = None,
    ) -> ObserveResponse:
        """Records a raw observation: a conversation turn or a tool result.

        Arguments:
            session: the session id (1–128 bytes).
            text: as `remember`'s content (redacted the same way).
            role: `"user"` (default), `"assistant"`, `"tool"`, `"system"`.
            event_time: when it happened (default now).
            source: your reference (message id), at most 256 bytes.

        Returns `ObserveResponse` with `observation_id` and `redactions`
        (kind → count of the personal data replaced, never the values;
        empty when none).

        Raises:
            InvalidInputError, RejectedError, ClosedError, PoisonedError.
        """
        args = _put(
            {"namespace": namespace, "session": session, "text": text},
            role=role,
            event_time=None if event_time is None else time_text("event_time", event_time),
            source=source,
        )
        return self._one(ObserveResponse, "observe", args)

    def forget(
        self,
        namespace: str,
        *,
        id: Optional[int] = None,
        observation: Optional[int] = None,
        session: Optional[str] = None,
        all: bool = False,
        matching: Optional[str] = None,
        min_similarity: Optional[float] = None,
        limit: Optional[int] = None,
        dry_run: bool = False,
        reason: Optional[str] = None,
    ) -> ForgetResponse:
        """Forgets memories or observations: from the moment this returns,
        their content is gone from every read path (get, list, history,
        as-of views, recall, the audit log); `compact()` then erases it from
        the disk. Name exactly one target.

        Arguments:
            id: a memory: its whole version chain (and memories derived
                only from it).
            observation: an observation, and memories derived only from it.
            session: every memory and observation of the session.
            all: the whole namespace.
            matching: every memory whose text is this text (older
                versions and archived memories too, each with its version
                chain; case, spacing
                and invisible characters aside; as given or with its
                personal data redacted as a write stores it), whatever its
                cosine, and
                the memories whose cosine similarity to it is at least
                `min_similarity` (default: the embedder's conservative
                floor, 0.5 for MiniLM and hashing, 0.92 for e5), at most
                `limit` of them in all (1–10,000, default 1,000).
            dry_run: only report what would be forgotten (with `preview`;
                with `matching`, also `similarities`: exact texts first,
                then best first).
            reason: why, stored in the log (default "user request").

        Returns `ForgetResponse`: counts, ids, `dry_run`, `preview`,
        `similarities`.

        Raises:
            InvalidInputError: no target or more than one, bad values.
            NotFoundError: `id` or `observation` does not exist, `session`
                is one no memory or observation of the namespace carries
                (and no earlier forget named), or `all` names a namespace
                nothing was ever written to; nothing is written. A target
                already forgotten, or a `matching` that finds nothing,
                returns zero counts.
            ClosedError, PoisonedError.
        """
        args = _put(
            {"namespace": namespace},
            id=id,
            observation=observation,
            session=session,
            matching=matching,
            min_similarity=min_similarity,
            limit=limit,
            reason=reason,
        )
        if all:
            args["all"] = all
        if dry_run:
            args["dry_run"] = dry_run
        return self._one(ForgetResponse, "forget", args)

    def forget_user(self, namespaces: Sequence[str], *, reason: Optional[str] = None) -> ForgetUserResponse:
        """Forgets everything of a set of namespaces (every namespace a
        user's data lives in) in one call: each as `forget(ns, all=True)`
        does, and on an encrypted store each namespace's data key is
        destroyed, so its records are unreadable in every backup and export
        too (crypto-shredding).

        Arguments:
            namespaces: 1–1,000 namespaces, each named once.
            reason: why, stored in the log of each namespace (default
                "user request").

        Returns `ForgetUserResponse`: `namespaces`, one receipt per
        namespace in the order given (`namespace`, `memories`,
        `observations`, `quotes_cut`, `key_shredded`), and the totals
        `memories` and `observations`.

        Every namespace is checked before anything is written. Each
        namespace's forget is atomic and durable before this returns; the
        set is not one transaction: should the disk fail part way, those
        already forgotten stay so and calling again with the same set
        finishes the rest (zero counts for those done).

        Raises:
            InvalidInputError: an empty list, a bad or repeated namespace,
                a bad reason; nothing is written.
            NotFoundError: a namespace nothing was ever written to;
                nothing is written.
            ClosedError, PoisonedError.
        """
        if isinstance(namespaces, (str, bytes)) or not isinstance(namespaces, Sequence):
            raise InvalidInputError("namespaces: expected a list of namespaces", "namespaces")
        return self._one(ForgetUserResponse, "forget_user", _put({"namespaces": list(namespaces)}, reason=reason))

    def apply_extraction(self, namespace: str, extraction: Union[str, Mapping[str, Any]]) -> ExtractionReport:
        """Applies your LLM's answer to `extraction_prompt`: the JSON object
        `{"new_memories": [...], "update_existing": [...], "forget": [...]}`
        (a dict, or its text). Each item is validated on its own (schema,
        ranges, ids of this namespace, grounding in at least one observation
        of the prompt); valid ones are written in one command.

        Returns `ExtractionReport`: one `ItemOutcome` per item (`applied`
        with the id and action, or `rejected` with the reason).

        Raises:
            InvalidInputError: not a JSON object, or too large / too many items.
            ClosedError, PoisonedError.
        """
        if isinstance(extraction, Mapping):
            extraction = dict(extraction)
        return self._one(ExtractionReport, "apply_extraction", {"namespace": namespace, "extraction": extraction})

    def end_session(self, namespace: str, session: str, *, promote: Optional[Sequence[int]] = None) -> SessionEnd:
        """Ends `session`: its short-term memories are archived, except the
        ids in `promote`, which become long-term.

        Returns `SessionEnd`: `archived`, `promoted`, `rejected` ids.

        Raises:
            InvalidInputError, ClosedError, PoisonedError.
        """
        args = _put({"namespace": namespace, "session": session}, promote=_seq(promote))
        return self._one(SessionEnd, "end_session", args)

    def consolidate(self, namespace: str, dry_run: bool = False) -> List[Consolidation]:
        """Merges clusters of near-duplicate active memories of one kind in
        `namespace` into one new version each; returns one `Consolidation`
        per merged cluster (`members`, `merged` id, the kept `text`).

        With `dry_run=True` nothing is written: each `Consolidation` lists
        a cluster a merge would take, with `merged` None.

        Raises:
            InvalidInputError, ClosedError, PoisonedError.
        """
        args: Dict[str, Any] = {"namespace": namespace}
        if dry_run:
            args["dry_run"] = True
        return [Consolidation(x) for x in self._call("consolidate", args)]

    def maintain(self, namespace: Optional[str] = None) -> List[NamespaceMaintenance]:
        """Runs lifecycle maintenance now: session expiry, decay and
        capacity archiving, then consolidation — in `namespace`, or in every
        namespace when None. Every decision is an event (it replays).

        Returns one `NamespaceMaintenance` (namespace and report) per
        namespace maintained.

        Raises:
            InvalidInputError, ClosedError, PoisonedError.
        """
        args = _put({}, namespace=namespace)
        return [NamespaceMaintenance(x) for x in self._call("maintain", args)]

    def compact(self) -> ErasureReceipt:
        """Erases forgotten content from the disk: writes a new generation of
        the store without it, switches to it, deletes the old one, then scans
        every file under the data directory for the erased texts, windows of
        them and their vectors.

        Returns the `ErasureReceipt`: `verified` is True when no pattern was
        found; the figures of the rewrite are in `compaction`.

        Raises:
            IoError, StorageError, PoisonedError, ClosedError.
        """
        return self._one(ErasureReceipt, "compact", {})

    def verify_erasure(self, texts: Sequence[str]) -> ErasureReceipt:
        """Scans every file of the store for `texts` (each at least 8 bytes
        of at least 4 distinct byte values) and returns the receipt
        (`verified`, `matches`). On an encrypted store, whose files hold
        only sealed bytes, every record and cached vector is also opened
        with the store's keys and searched (`scan.opened` counts them).

        Raises:
            InvalidInputError: no texts, a text shorter than 8 bytes, or one
                too repetitive to be evidence ("1111111111111111").
            IoError, ClosedError.
        """
        if isinstance(texts, str):
            raise InvalidInputError("texts: expected a list of strings, got one string", "texts")
        return self._one(ErasureReceipt, "verify_erasure", {"texts": list(texts)})

    def verify_shred(
        self,
        namespace: str,
        *,
        backups: Sequence[PathLike] = (),
        exports: Sequence[PathLike] = (),
    ) -> ShredReport:
        """Proves that `namespace` of an encrypted store, forgotten whole
        (`forget(ns, all=True)` or `forget_user`, which destroy its data
        key), is unreadable: every record of it sealed under a destroyed key
        is tried with every key the store still holds, in the store and in
        each backup directory and export file named.

        Arguments:
            namespace: the shredded namespace.
            backups: backup data directories (made by `backup`) to check too.
            exports: export files (made by `export`) to check too.

        Returns `ShredReport`: `shredded_keys` (the destroyed generations),
        one entry of `checks` per place (`source`, `sealed`, `opened`,
        `plain`, `later`, `own_keyring`, `own_keyring_unread`) and
        `verified`, True only when no record opened and none was readable
        in plain.

        Raises:
            NotFoundError: nothing was ever written to the namespace.
            InvalidInputError: the store is not encrypted, no key of the
                namespace was shredded (field `namespace`), or a path is not
                a backup or export of this store (field `backups` or
                `exports`).
            CorruptedError: a damaged sealed record. IoError, ClosedError.
        """
        backups = () if backups is None else backups
        exports = () if exports is None else exports
        for field, paths in (("backups", backups), ("exports", exports)):
            if isinstance(paths, (str, os.PathLike)):
                raise InvalidInputError(f"{field}: expected a list of paths, got one path", field)
            for p in paths:
                _check_type(field, p, (str, os.PathLike))
        args: Dict[str, Any] = {"namespace": namespace}
        if backups:
            args["backups"] = [os.fspath(p) for p in backups]
        if exports:
            args["exports"] = [os.fspath(p) for p in exports]
        return self._one(ShredReport, "verify_shred", args)

    # -- getting data in and out -----------------------------------------------

    def import_records(
        self,
        namespace: str,
        *,
        text: Optional[str] = None,
        path: Optional[PathLike] = None,
        format: Optional[str] = None,
        on_error: Optional[str] = None,
        dry_run: bool = False,
        batch: Optional[int] = None,
    ) -> ImportSummary:
        """Bulk-loads observations and memories into `namespace` (the
        surface's `import`; `import` is a Python keyword). Give the input as
        `text` or as a `path` on this machine (`.gz` is decompressed), in
        `format` `"jsonl"` (the default; one record per line, schema in
        docs/FORMAT.md, "Import"), `"locomo"`, `"longmemeval"`, or what other
        memory systems keep: `"mcp_memory"` (the MCP memory server's
        `memory.jsonl`), `"mem0"` (mem0's `get_all()` results; of a file of
        several users, the records of the user named `namespace`) or
        `"langgraph"` (a LangGraph store dump; `namespace` is then the
        `MnemonStore` prefix, `"lg"` by default, and each item lands where
        that store reads it). Every record
        is checked before anything is written; `on_error="skip"` (default)
        writes the good ones, `"abort"` writes nothing if one is bad.
        Records already in the namespace are counted as duplicates, never
        written twice. `batch` records per group commit (default 1000);
        `dry_run` checks and counts only.

        Returns the `ImportSummary`: records read, observations and memories
        written, duplicates, rejected records (line and reason), what could
        not be mapped (`unmapped`, `unmapped_list`), redactions;
        `aborted` is True when `on_error="abort"` met a bad record (then
        nothing was written). Bad records are reported there, not raised.

        Raises:
            InvalidInputError: neither or both of `text` and `path`, an
                unknown format, `batch` of 0.
            IoError: the file cannot be read. ClosedError.
        """
        _check_type("text", text, str, optional=True)
        _check_type("path", path, (str, os.PathLike), optional=True)
        args = _put(
            {"namespace": namespace},
            text=text,
            path=None if path is None else os.fspath(path),
            format=format,
            on_error=on_error,
            batch=batch,
        )
        if dry_run:
            args["dry_run"] = True
        return self._one(ImportSummary, "import", args)

    def backup(self, dir: PathLike) -> BackupReport:
        """Writes a consistent copy of the store into `dir` (new or empty),
        while other threads keep writing: every event up to one log position
        and none after, with the vector cache; forgotten payloads as
        tombstones. Open it with `Engine.open(dir)`.

        Raises:
            InvalidInputError: `dir` is not a path. IoError: `dir` exists
                and is not empty, or cannot be written. ClosedError.
        """
        _check_type("dir", dir, (str, os.PathLike))
        return self._one(BackupReport, "backup", {"dir": os.fspath(dir)})

    def export(self, path: PathLike) -> ExportReport:
        """Writes every event and cached vector of the store to the new file
        `path` as JSON lines (a header with the last position, digest and
        model first), for `Engine.restore`. Forgotten content is absent.

        Raises:
            InvalidInputError: `path` is not a path. IoError: the file exists
                or cannot be written. ClosedError.
        """
        _check_type("path", path, (str, os.PathLike))
        return self._one(ExportReport, "export", {"path": os.fspath(path)})

    def restore(self, from_: PathLike, into: PathLike) -> RestoreReport:
        """Rebuilds a new store in `into` (new or empty) from the export
        `from_`, event for event under the same positions and times, opens it
        once with this engine's embedder and compares its digest with the
        export's (`digest_matches` in the report).

        Raises:
            InvalidInputError: a path is not a path. CorruptedError: the
                export is damaged or is not a store export (a `log` audit
                export is refused). IoError, ClosedError.
        """
        _check_type("from", from_, (str, os.PathLike))
        _check_type("into", into, (str, os.PathLike))
        return self._one(RestoreReport, "restore", {"from": os.fspath(from_), "into": os.fspath(into)})

    # -- reads -------------------------------------------------------------------

    def recall(
        self,
        namespace: str,
        query: str,
        *,
        top_k: Optional[int] = None,
        min_similarity: Optional[float] = None,
        abstain_below: Optional[float] = None,
        kinds: Optional[Sequence[str]] = None,
        tiers: Optional[Sequence[Tier]] = None,
        session: Optional[str] = None,
        current_session: Optional[str] = None,
        time_range: Optional[TimeRange] = None,
        as_of: Optional[AsOf] = None,
        include_superseded: bool = False,
        include_quarantined: bool = False,
        include_archived: bool = False,
        mode: Optional[RecallMode] = None,
        similarity_norm: Optional[SimilarityNorm] = None,
        candidates: Optional[int] = None,
        requester: Optional[str] = None,
        record_access: Optional[bool] = None,
        rerank: Optional[bool] = None,
        reference_time: Optional[Union[datetime, str]] = None,
        explain: bool = False,
    ) -> RecallResponse:
        """The memories of `namespace` that best match `query`, best first.

        Hybrid recall: cosine similarity (int8 scan with exact rescoring,
        HNSW past 15k memories) fused with BM25, reranked by importance,
        recency by tier and entity overlap; a hit that restates a better one
        is collapsed into it.

        Arguments (every filter of the engine's `RecallOptions`):
            top_k: most hits, 1–1000 (default 10).
            min_similarity: drop hits with cosine below this (-1..1; the scale
                depends on the embedder: unrelated text scores ~0.1–0.3 with
                MiniLM, ~0.74–0.81 with e5).
            abstain_below: return no hit when none has a cosine of at least
                this (-1..1; -1 turns it off); a query naming something no
                memory mentions needs the embedder's margin more. Default
                never. The response's `abstained` is then True, with
                `abstention` (the best cosine and the floor it missed) and
                `unknown_names` (names no memory mentions, as `context`
                gives them). Names are capitalised words, so a Chinese
                question about someone never mentioned is judged by the
                cosine floor alone.
            kinds, tiers: only these kinds / tiers.
            session: only memories formed in this session.
            current_session: the caller's session; short-term memories of
                other sessions are left out.
            time_range: `(from, to)` on the memories' event time, inclusive;
                either end None.
            as_of: recall as the store was then (log position or time).
            include_superseded, include_quarantined, include_archived: also
                those memories.
            mode: `"hybrid"` (default), `"dense"` or `"lexical"`.
            similarity_norm: `"auto"` (the embedder's), `"raw"`, `"min_max"`.
            candidates: candidates per index before reranking, 1–10,000
                (default max(5·top_k, 50)).
            requester: who asks (stored with the access record): a one-line
                label of 1-256 bytes without control characters, else
                InvalidInputError naming `requester`.
            record_access: record the recall (refreshes recency; default True).
            rerank: let the store's reranker (`Engine.open(reranker=...)`)
                order the top hits (default True; no effect without one).
            reference_time: when the question is asked (aware datetime or
                RFC 3339; its offset decides where days begin): time
                expressions in `query` ("last month", "two weeks ago", "in
                March", "上个月", "三天前") are read relative to it, and
                memories from the spans they name score up to 0.2 more
                (`explain.time`). Default: the `as_of` time, else now (local
                time).

            explain: give each hit's whole `memory` and the parts of its
                score (`explain`) too; by default a hit is compact.

        Returns `RecallResponse`: `hits` (each a `Hit` with `id`, `content`,
        `score` and `why`, a few words on why it ranked; with `explain=True`
        also `memory` and `explain`, else None), `omitted` (hits cut by the
        response cap) and
        `query_time` (the spans of time the query names, as read, each
        phrase's in `query_time.spans`; None when it names none).

        Raises:
            InvalidInputError: bad values (nothing recorded).
            EmbedderError, ClosedError.
        """
        args = self._recall_args(
            namespace,
            query,
            top_k=top_k,
            min_similarity=min_similarity,
            abstain_below=abstain_below,
            kinds=kinds,
            tiers=tiers,
            session=session,
            current_session=current_session,
            time_range=time_range,
            as_of=as_of,
            include_superseded=include_superseded,
            include_quarantined=include_quarantined,
            include_archived=include_archived,
            mode=mode,
            similarity_norm=similarity_norm,
            candidates=candidates,
            requester=requester,
            record_access=record_access,
            rerank=rerank,
            reference_time=reference_time,
        )
        _put(args, explain=explain or None)
        return self._one(RecallResponse, "recall", args)

    def context(
        self,
        namespace: str,
        query: str,
        *,
        budget_tokens: Optional[int] = None,
        profile_share: Optional[float] = None,
        recent_share: Optional[float] = None,
        top_k: Optional[int] = None,
        min_similarity: Optional[float] = None,
        abstain_below: Optional[float] = None,
        kinds: Optional[Sequence[str]] = None,
        tiers: Optional[Sequence[Tier]] = None,
        session: Optional[str] = None,
        current_session: Optional[str] = None,
        time_range: Optional[TimeRange] = None,
        as_of: Optional[AsOf] = None,
        include_superseded: bool = False,
        include_quarantined: bool = False,
        include_archived: bool = False,
        mode: Optional[RecallMode] = None,
        similarity_norm: Optional[SimilarityNorm] = None,
        candidates: Optional[int] = None,
        requester: Optional[str] = None,
        record_access: Optional[bool] = None,
        rerank: Optional[bool] = None,
        reference_time: Optional[Union[datetime, str]] = None,
        explain: bool = False,
    ) -> ContextBlock:
        """The prompt block for `query`, `<memories>` … `</memories>`, within
        `budget_tokens` estimated tokens (default 400), in three parts, each
        opened by a section line and shown only when it has an entry:

        - the profile: the current value of every slot key and every
          permanent memory, whatever the query (permanent ones first, then
          the freshest slot values), in at most `profile_share` of the
          budget (0–1, default 0.25; 0 leaves it out);
        - the memories recalled for `query`, most relevant first, none that
          the profile already shows; they get all the budget the other two
          parts leave;
        - the last turns of `current_session`, oldest first, in at most
          `recent_share` of the budget (0–1, default 0.25; 0 leaves them
          out; none without `current_session`).

        Filters as `recall` (they choose the recalled memories; `as_of` and
        `current_session` also shape the profile), except that
        `abstain_below` defaults to the embedder's calibrated floors: when
        no hit reaches them, the recalled part is empty and `abstained` is
        True, while the profile and recent turns are still rendered (pass
        -1.0 to always recall). The block's dates are days at the offset of
        `reference_time` when it is given, else UTC dates.

        Returns `ContextBlock`: `context` (the block), `memories` (recalled entries in it), `truncated` (entries cut to fit, 0 or 1), `skipped` (hits left out for the budget), `profile` / `profile_skipped` (profile entries shown / left out), `recent` / `recent_skipped` (turns shown / left out), `recent_truncated` (turns cut to fit, 0 or 1), `in_profile` (hits not repeated because the profile shows them), `tokens`, `abstained`, `unknown_names` (names in the query no memory mentions), `abstention` (when abstained: the best cosine and the floor it missed). With `explain=True` also `entries` (every candidate entry: its `part`, `memory` or `observation`, and `fate`: whole, cut, excerpt, skipped or in_profile) and `floors` (the abstention floors judged against).

        Raises:
            InvalidInputError: a budget outside 1..(cap/2), a share outside
                0..1 or shares adding up to more than 1 (naming
                `profile_share` or `recent_share`), or bad filters. A
                `current_session` nothing belongs to yet (a conversation
                that has just begun) is no error: its recent part is empty.
            EmbedderError, ClosedError.
        """
        args = self._recall_args(
            namespace,
            query,
            top_k=top_k,
            min_similarity=min_similarity,
            abstain_below=abstain_below,
            kinds=kinds,
            tiers=tiers,
            session=session,
            current_session=current_session,
            time_range=time_range,
            as_of=as_of,
            include_superseded=include_superseded,
            include_quarantined=include_quarantined,
            include_archived=include_archived,
            mode=mode,
            similarity_norm=similarity_norm,
            candidates=candidates,
            requester=requester,
            record_access=record_access,
            rerank=rerank,
            reference_time=reference_time,
        )
        _put(args, budget_tokens=budget_tokens, profile_share=profile_share, recent_share=recent_share)
        if explain:
            args["explain"] = True
        return self._one(ContextBlock, "context", args)

    @staticmethod
    def _recall_args(
        namespace: str,
        query: str,
        *,
        top_k: Optional[int],
        min_similarity: Optional[float],
        abstain_below: Optional[float],
        kinds: Optional[Sequence[str]],
        tiers: Optional[Sequence[Tier]],
        session: Optional[str],
        current_session: Optional[str],
        time_range: Optional[TimeRange],
        as_of: Optional[AsOf],
        include_superseded: bool,
        include_quarantined: bool,
        include_archived: bool,
        mode: Optional[RecallMode],
        similarity_norm: Optional[SimilarityNorm],
        candidates: Optional[int],
        requester: Optional[str],
        record_access: Optional[bool],
        rerank: Optional[bool],
        reference_time: Optional[Union[datetime, str]],
    ) -> Dict[str, Any]:
        args = _put(
            {"namespace": namespace, "query": query},
            top_k=top_k,
            min_similarity=min_similarity,
            abstain_below=abstain_below,
            kinds=_seq(kinds),
            tiers=_seq(tiers),
            session=session,
            current_session=current_session,
            as_of=None if as_of is None else as_of_value(as_of),
            include_superseded=include_superseded or None,
            include_quarantined=include_quarantined or None,
            include_archived=include_archived or None,
            mode=mode,
            similarity_norm=similarity_norm,
            candidates=candidates,
            requester=requester,
            record_access=record_access,
            rerank=rerank,
            reference_time=None if reference_time is None else time_text("reference_time", reference_time, keep_offset=True),
        )
        _time_range(args, time_range)
        return args

    def get(self, namespace: str, id: int, *, as_of: Optional[AsOf] = None) -> Memory:
        """Memory version `id` (at the read position `as_of`, default now).

        Raises:
            NotFoundError: no such memory in the namespace (or forgotten).
            ResponseTooLargeError: the memory alone is above the response cap.
            InvalidInputError, ClosedError.
        """
        args = _put({"namespace": namespace, "id": id}, as_of=None if as_of is None else as_of_value(as_of))
        return self._one(Memory, "get", args)

    def history(
        self,
        namespace: str,
        id: int,
        *,
        as_of: Optional[AsOf] = None,
        cursor: Optional[str] = None,
        limit: Optional[int] = None,
    ) -> HistoryResponse:
        """The version chain of memory `id` (any version of it), oldest
        first: a page of at most `limit` versions (1–1000, default 100);
        pass `next_cursor` as `cursor` for the next page.

        Raises:
            NotFoundError: no such memory (or forgotten).
            InvalidInputError: a bad cursor or limit. ClosedError.
        """
        args = _put(
            {"namespace": namespace, "id": id},
            as_of=None if as_of is None else as_of_value(as_of),
            cursor=cursor,
            limit=limit,
        )
        return self._one(HistoryResponse, "history", args)

    def list(
        self,
        namespace: str,
        *,
        include_superseded: bool = False,
        include_quarantined: bool = False,
        include_archived: bool = False,
        kind: Optional[str] = None,
        tier: Optional[Tier] = None,
        session: Optional[str] = None,
        as_of: Optional[AsOf] = None,
        cursor: Optional[str] = None,
        limit: Optional[int] = None,
    ) -> ListResponse:
        """A page of the namespace's memories, oldest first: active ones (and
        the included others), filtered by kind, tier, session. At most
        `limit` (1–1000, default 100) per page; pass `next_cursor` as
        `cursor` for the next page (every page reads the same position,
        `seq`).

        Raises:
            InvalidInputError, ClosedError.
        """
        args = _put(
            {"namespace": namespace},
            include_superseded=include_superseded or None,
            include_quarantined=include_quarantined or None,
            include_archived=include_archived or None,
            kind=kind,
            tier=tier,
            session=session,
            as_of=None if as_of is None else as_of_value(as_of),
            cursor=cursor,
            limit=limit,
        )
        return self._one(ListResponse, "list", args)

    def log(
        self,
        namespace: str,
        *,
        seq_range: Optional[Tuple[Optional[int], Optional[int]]] = None,
        kinds: Optional[Sequence[str]] = None,
        cursor: Optional[str] = None,
        limit: Optional[int] = None,
    ) -> LogResponse:
        """A page of the namespace's audit export: its events in log order
        (forgotten content never appears), between log positions
        `seq_range = (from, to)` (inclusive, either end None), only of
        `kinds` if given (`"observed"`, `"extracted"`, `"superseded"`,
        `"accessed"`, `"forgotten"`, `"tombstone"`, `"archived"`; a
        forgotten payload counts as `"tombstone"`), at most `limit`
        (1–1000, default 100) per page.

        Raises:
            InvalidInputError, CorruptedError, ClosedError.
        """
        args = _put({"namespace": namespace}, kinds=_seq(kinds), cursor=cursor, limit=limit)
        _seq_range(args, seq_range)
        return self._one(LogResponse, "log", args)

    def as_of(
        self, namespace: str, at: Optional[AsOf] = None, *, valid_time: Union[datetime, str, None] = None
    ) -> "View":
        """A read-only view of `namespace` as it was at `at`: a log position
        (`int`, after that event; 0 is before anything) or a recorded time
        (after the last event committed at or before it). With `valid_time`
        instead (aware `datetime` or RFC 3339 text), the view holds what was
        true in the world at that time: the versions whose event-time
        interval `[valid_from, valid_to)` contains it, as the store knows
        them now (the two time lines of a memory: `valid_from`/`valid_to`
        and `recorded_from`/`recorded_to`). The view's `get`, `list`,
        `history`, `recall` and `context` read that state.

        Raises:
            InvalidInputError: neither or both of `at` and `valid_time`
                given, or either is not a position or time (naive datetimes
                included; field `as_of` or `valid_time`).
        """
        if (at is None) == (valid_time is None):
            raise InvalidInputError("as_of: give exactly one of `at` and `valid_time`", "as_of")
        if valid_time is not None:
            if not isinstance(valid_time, (datetime, str)):
                raise InvalidInputError(
                    f"valid_time: expected a datetime or RFC 3339 text, got {type(valid_time).__name__}", "valid_time"
                )
            at = {"valid_time": time_text("valid_time", valid_time)}
        assert at is not None
        as_of_value(at)
        return View(self, namespace, at)

    def extraction_prompt(
        self, namespace: str, session: str, *, lang: Optional[Lang] = None
    ) -> ExtractionPromptResponse:
        """A prompt asking your LLM to extract memories from `session`'s
        observations (with related memories and their ids), in `lang`
        (`"en"` default, or `"zh"`), cut to the response cap oldest
        observations first. Send `prompt` to the model and pass its JSON
        answer to `apply_extraction`.

        Raises:
            InvalidInputError, ClosedError.
        """
        args = _put({"namespace": namespace, "session": session}, lang=lang)
        return self._one(ExtractionPromptResponse, "extraction_prompt", args)

    def stats(self) -> Stats:
        """Store-wide figures: memories by status, namespaces, events by
        kind, vectors, bytes, the model id."""
        return self._one(Stats, "stats", {})

    def namespaces(self, *, cursor: Optional[str] = None, limit: Optional[int] = None) -> NamespacesResponse:
        """A page of the namespaces holding a record, by name, with their
        figures (memories by status, quarantined, observations, forgotten
        memories and observations; counts only), at most `limit` (1–1000,
        default 100) per page; pass `next_cursor` as `cursor` for the next.

        Raises:
            InvalidInputError, ClosedError.
        """
        return self._one(NamespacesResponse, "namespaces", _put({}, cursor=cursor, limit=limit))

    def receipts(self, *, cursor: Optional[str] = None, limit: Optional[int] = None) -> ReceiptsResponse:
        """A page of the receipts of the store's compactions, newest first:
        when, generations before and after, events copied, memory and
        observation payloads erased, cached vectors dropped, bytes before
        and after, and the verification scan's summary (`scan`; None for a
        compaction whose process stopped before the scan ended). Counts and
        digests only, never erased content. At most `limit` (1–1000,
        default 100) per page; pass `next_cursor` as `cursor` for the next.

        Raises:
            InvalidInputError: a `cursor` this store did not return, or
                `limit` out of range.
            CorruptedError, ClosedError.
        """
        return self._one(ReceiptsResponse, "receipts", _put({}, cursor=cursor, limit=limit))

    def timeline(
        self,
        namespace: str,
        *,
        buckets: Optional[int] = None,
        from_: Union[datetime, str, None] = None,
        to: Union[datetime, str, None] = None,
    ) -> Timeline:
        """The namespace's events counted by kind (observed, extracted,
        superseded, accessed, forgotten, archived) in `buckets` (1–500,
        default 48) equal buckets of commit time, from `from_` to `to`
        (aware datetimes or RFC 3339 text; default the namespace's first and
        last event). Each bucket's `last_seq` is an `as_of` position that
        shows the store at the bucket's end. A span shorter than `buckets`
        microseconds gets only the buckets that reach its end (one when
        every event shares one instant); no events, no buckets.

        Raises:
            InvalidInputError: `buckets` out of range, `from_` after `to`.
            CorruptedError, ClosedError.
        """
        args = _put({"namespace": namespace}, buckets=buckets)
        if from_ is not None:
            args["from"] = time_text("from", from_)
        if to is not None:
            args["to"] = time_text("to", to)
        return self._one(Timeline, "timeline", args)

    def check(self) -> CheckReport:
        """Verifies every record's checksum and that the live projections
        equal a fresh replay of the log (`consistent`).

        Raises:
            CorruptedError: a record is damaged. ClosedError.
        """
        return self._one(CheckReport, "check", {})


class View:
    """A read-only view of one namespace as it was at a point of its
    history (`Engine.as_of`). Each method is the engine's, with `as_of`
    fixed; `at` is the read position given."""

    __slots__ = ("_engine", "namespace", "at")

    def __init__(self, engine: Engine, namespace: str, at: AsOf) -> None:
        """A view of `namespace` of `engine` at `at`; use `Engine.as_of`."""
        self._engine = engine
        self.namespace = namespace
        self.at = at

    def get(self, id: int) -> Memory:
        """Memory version `id` as it was then (see `Engine.get`)."""
        return self._engine.get(self.namespace, id, as_of=self.at)

    def history(self, id: int, *, cursor: Optional[str] = None, limit: Optional[int] = None) -> HistoryResponse:
        """The version chain of `id` as it was then (see `Engine.history`)."""
        return self._engine.history(self.namespace, id, as_of=self.at, cursor=cursor, limit=limit)

    def list(self, **filters: Any) -> ListResponse:
        """A page of memories as they were then (filters as `Engine.list`)."""
        return self._engine.list(self.namespace, as_of=self.at, **filters)

    def recall(self, query: str, **filters: Any) -> RecallResponse:
        """Recall as the store was then (filters as `Engine.recall`)."""
        return self._engine.recall(self.namespace, query, as_of=self.at, **filters)

    def context(self, query: str, **filters: Any) -> ContextBlock:
        """The prompt block as the store was then (as `Engine.context`)."""
        return self._engine.context(self.namespace, query, as_of=self.at, **filters)

    def __repr__(self) -> str:
        return f"View(namespace={self.namespace!r}, at={self.at!r})"


def _check_type(field: str, value: Any, types: Any, optional: bool = False) -> None:
    if value is None and optional:
        return
    if isinstance(value, bool) and bool not in (types if isinstance(types, tuple) else (types,)):
        ok = False
    else:
        ok = isinstance(value, types)
    if not ok:
        names = " or ".join(t.__name__ for t in types) if isinstance(types, tuple) else types.__name__
        raise InvalidInputError(f"{field}: expected {names}, got {type(value).__name__}", field)

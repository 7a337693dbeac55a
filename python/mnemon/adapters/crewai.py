"""`MnemonStorage`: a CrewAI `StorageBackend` on a mnemon engine.

CrewAI 1.x has one memory, `crewai.memory.Memory`, over a pluggable
`StorageBackend` (LanceDB by default). Give it this one:

    storage = MnemonStorage(engine, user_id="crew-7")
    memory = Memory(storage=storage, embedder=storage.embedder, llm=...)

Every record is a mnemon memory, so it is versioned (an `update` writes a
new version), forgotten for real on `delete` / `reset` (gone from every
read at once, from the disk after `Engine.compact()`), and searched with
mnemon's hybrid recall (dense + BM25, reranked).

Mapping (the rule of `mnemon.adapters`):

* namespace: `<prefix>:<escaped user_id>` (prefix `"crewai"` by default);
  CrewAI's scopes (`/company/team`) are a field of the record, filtered in
  the adapter, not namespaces;
* a record is one permanent-tier memory (never archived by maintenance,
  never merged as a near-duplicate) whose content is the record as JSON
  (`content` first, then `scope`, `categories`, `metadata`, `importance`,
  `created_at`, `last_accessed`, `source`, `private`, `id`); its slot key
  and session are `crewai.<escaped record id>`, so a save or update of the
  same id supersedes it and `get_record` finds it; its importance is the
  record's; its vector is the record's `embedding` when it has the
  engine's dimension (else the engine embeds the JSON's text);
* `search` ranks by recall of the query text and returns each record with
  the cosine similarity of the query to it as the score.

The query text: CrewAI hands `search` an embedding, never the text, and
mnemon recalls by text. `storage.embedder` (pass it as the `Memory`'s
`embedder`) embeds with the engine's own model and keeps the text of each
vector it made (the last 4,096), so `search` finds the text of a query
vector; a vector this embedder did not make raises `InvalidInputError`.

What it cannot carry: `embedding` is not returned by reads (CrewAI
excludes it from records it serialises too); personal data in a record is
redacted per the engine's `pii_policy` (placeholders such as `[PHONE]`
are read back); a record over `max_content_bytes` (default 32 KiB) as JSON
raises `InvalidInputError`; filters (scope prefix, categories, metadata,
age) are applied in Python to the whole namespace, so `list_records`,
`count` and `delete` read every record of the user.
"""

from __future__ import annotations

import asyncio
import json
import threading
from collections import OrderedDict
from datetime import datetime, timezone
from typing import Any, Dict, Iterator, List, Optional, Sequence, Tuple

try:
    from crewai.memory.types import MemoryRecord, ScopeInfo  # type: ignore[import-not-found, unused-ignore]
except ImportError as _missing:  # pragma: no cover - exercised only without CrewAI
    raise ImportError("mnemon.adapters.crewai needs CrewAI: pip install crewai") from _missing

from .._engine import Engine
from .._errors import InvalidInputError, NotFoundError
from .._ids import escape_label, namespace_for
from .._types import Memory

__all__ = ["MnemonStorage", "MnemonEmbedder"]

#: Largest page of `Engine.list` and largest `top_k`.
PAGE = 1000
#: Vectors whose text `MnemonEmbedder` keeps.
TEXTS_KEPT = 4096
#: Longest slot key / session (the engine's limit).
_MAX_IDENT = 128


class MnemonEmbedder:
    """A CrewAI embedder (a callable from a list of texts to one vector per
    text, `engine.dim` floats each) embedding with the engine's model, that
    keeps the text of the last `TEXTS_KEPT` vectors it made so that
    `MnemonStorage.search` can recall by text.

    Raises what `Engine.embed` raises (EmbedderError, ClosedError).
    """

    def __init__(self, engine: Engine) -> None:
        self._engine = engine
        self._texts: "OrderedDict[Tuple[float, ...], str]" = OrderedDict()
        self._lock = threading.Lock()

    def __call__(self, input: Sequence[str]) -> List[List[float]]:
        texts = [str(t) for t in input]
        vectors = self._engine.embed(texts) if texts else []
        with self._lock:
            for text, vector in zip(texts, vectors):
                key = tuple(float(x) for x in vector)
                self._texts[key] = text
                self._texts.move_to_end(key)
            while len(self._texts) > TEXTS_KEPT:
                self._texts.popitem(last=False)
        return [list(v) for v in vectors]

    def text_of(self, vector: Sequence[float]) -> Optional[str]:
        """The text this embedder embedded to `vector`, if it still keeps it."""
        with self._lock:
            return self._texts.get(tuple(float(x) for x in vector))


def _aware(when: Optional[datetime]) -> Optional[datetime]:
    if when is None:
        return None
    return when if when.tzinfo is not None else when.replace(tzinfo=timezone.utc)


def _encode(record: MemoryRecord) -> str:
    value = {
        "content": record.content,
        "scope": record.scope,
        "categories": list(record.categories),
        "metadata": record.metadata,
        "importance": record.importance,
        "created_at": record.created_at.isoformat(),
        "last_accessed": record.last_accessed.isoformat(),
        "source": record.source,
        "private": record.private,
        "id": record.id,
    }
    try:
        return json.dumps(value, ensure_ascii=False, allow_nan=False, separators=(",", ":"))
    except (TypeError, ValueError) as e:
        raise InvalidInputError(f"record: metadata is not JSON: {e}", "record") from None


def _decode(memory: Memory) -> Optional[MemoryRecord]:
    try:
        value = json.loads(memory.content)
    except ValueError:
        value = None
    if not isinstance(value, dict) or not isinstance(value.get("id"), str):
        return None
    try:
        return MemoryRecord(**value)
    except ValueError:
        return None


def _in_scope(record: MemoryRecord, prefix: Optional[str]) -> bool:
    if not prefix or prefix == "/":
        return True
    prefix = prefix.rstrip("/")
    return record.scope == prefix or record.scope.startswith(prefix + "/")


def _matches(
    record: MemoryRecord,
    scope_prefix: Optional[str],
    categories: Optional[List[str]],
    metadata_filter: Optional[Dict[str, Any]],
    older_than: Optional[datetime] = None,
) -> bool:
    if not _in_scope(record, scope_prefix):
        return False
    if categories and not set(categories) & set(record.categories):
        return False
    if metadata_filter and any(record.metadata.get(k) != v for k, v in metadata_filter.items()):
        return False
    if older_than is not None and _aware(record.created_at) >= _aware(older_than):  # type: ignore[operator]
        return False
    return True


class MnemonStorage:
    """CrewAI's `StorageBackend` protocol
    (`crewai.memory.storage.backend.StorageBackend`) on a mnemon `Engine`;
    see the module docs for the mapping.

    Arguments:
        engine: the open engine (the caller closes it).
        user_id: whose memory this is (a crew, a user): the namespace.
        prefix: first part of the namespace, 1–32 characters of
            `[A-Za-z0-9_-]` (default `"crewai"`).
        opaque_ids: name the namespace by a SHA-256 digest of `user_id`
            (default False); needed for ids that hold personal data.

    Raises:
        InvalidInputError: an empty `user_id` or a bad prefix.
    """

    def __init__(self, engine: Engine, *, user_id: str, prefix: str = "crewai", opaque_ids: bool = False) -> None:
        self._engine = engine
        self._namespace = namespace_for(prefix, [user_id], opaque=opaque_ids)
        self._embedder = MnemonEmbedder(engine)
        self._lock = threading.Lock()

    @property
    def namespace(self) -> str:
        """The mnemon namespace of the records."""
        return self._namespace

    @property
    def embedder(self) -> MnemonEmbedder:
        """The embedder to give CrewAI's `Memory` (see the module docs)."""
        return self._embedder

    # -- helpers --------------------------------------------------------------

    @staticmethod
    def _slot(record_id: str) -> str:
        name = "crewai." + escape_label(record_id)
        if len(name) > _MAX_IDENT:
            raise InvalidInputError(f"record id: {record_id!r} is too long (at most ~100 characters)", "id")
        return name

    def _memories(self) -> Iterator[Memory]:
        cursor: Optional[str] = None
        while True:
            page = self._engine.list(self._namespace, include_quarantined=True, cursor=cursor, limit=PAGE)
            yield from page.memories
            cursor = page.next_cursor
            if not cursor:
                return

    def _records(self) -> List[Tuple[Memory, MemoryRecord]]:
        out = []
        for memory in self._memories():
            record = _decode(memory)
            if record is not None:
                out.append((memory, record))
        return out

    def _find(self, record_id: str) -> Optional[Memory]:
        try:
            slot = self._slot(record_id)
            memories = self._engine.list(self._namespace, session=slot, include_quarantined=True).memories
        except NotFoundError:
            return None
        return memories[-1] if memories else None

    def _write(self, record: MemoryRecord) -> None:
        vector = record.embedding if record.embedding and len(record.embedding) == self._engine.dim else None
        slot = self._slot(record.id)
        self._engine.remember(
            self._namespace,
            _encode(record),
            key=slot,
            session=slot,
            tier="permanent",
            importance=record.importance,
            event_time=_aware(record.created_at),
            dedup="off",
            vector=vector,
        )

    def _forget(self, memories: List[Memory]) -> int:
        for memory in memories:
            self._engine.forget(self._namespace, id=memory.id, reason="crewai delete")
        return len(memories)

    # -- StorageBackend -------------------------------------------------------

    def save(self, records: List[MemoryRecord]) -> None:
        """Stores `records`; a record whose id is stored already replaces
        it (a new version).

        Raises:
            InvalidInputError: a record too large, metadata that is not
                JSON, an id over ~100 characters.
            RejectedError, EmbedderError, ClosedError, PoisonedError.
        """
        with self._lock:
            for record in records:
                self._write(record)

    def search(
        self,
        query_embedding: List[float],
        scope_prefix: Optional[str] = None,
        categories: Optional[List[str]] = None,
        metadata_filter: Optional[Dict[str, Any]] = None,
        limit: int = 10,
        min_score: float = 0.0,
    ) -> List[Tuple[MemoryRecord, float]]:
        """The records best matching the query whose vector `embedder`
        made, best first, at most `limit`, as (record, cosine similarity)
        pairs with a similarity of at least `min_score`, filtered by scope
        prefix, categories (any of them) and metadata (equal values).

        Raises:
            InvalidInputError: `query_embedding` was not made by `embedder`.
            EmbedderError, ClosedError.
        """
        text = self._embedder.text_of(query_embedding)
        if text is None:
            raise InvalidInputError(
                "query_embedding: not a vector this storage's embedder made; pass storage.embedder as the Memory's "
                "embedder (mnemon recalls by the query's text)",
                "query_embedding",
            )
        if limit <= 0 or not text.strip():
            return []
        hits = self._engine.recall(self._namespace, text, top_k=PAGE, explain=True).hits
        out: List[Tuple[MemoryRecord, float]] = []
        for hit in hits:
            if hit.memory is None:
                continue
            record = _decode(hit.memory)
            if record is None or not _matches(record, scope_prefix, categories, metadata_filter):
                continue
            score = hit.explain.similarity if hit.explain is not None else hit.score
            if score < min_score:
                continue
            out.append((record, float(score)))
            if len(out) >= limit:
                break
        return out

    def delete(
        self,
        scope_prefix: Optional[str] = None,
        categories: Optional[List[str]] = None,
        record_ids: Optional[List[str]] = None,
        older_than: Optional[datetime] = None,
        metadata_filter: Optional[Dict[str, Any]] = None,
    ) -> int:
        """Forgets the records matching every criterion given (all records
        when none is); returns how many.

        Raises:
            ClosedError, PoisonedError.
        """
        with self._lock:
            if record_ids is not None and not (scope_prefix or categories or older_than or metadata_filter):
                found = [m for m in (self._find(r) for r in record_ids) if m is not None]
                return self._forget(found)
            ids = None if record_ids is None else set(record_ids)
            doomed = [
                m
                for m, r in self._records()
                if (ids is None or r.id in ids) and _matches(r, scope_prefix, categories, metadata_filter, older_than)
            ]
            return self._forget(doomed)

    def update(self, record: MemoryRecord) -> None:
        """Replaces the record with `record.id` (a new version of its
        memory; stores it when absent). Raises as `save`."""
        with self._lock:
            self._write(record)

    def get_record(self, record_id: str) -> Optional[MemoryRecord]:
        """The record with `record_id`, or None."""
        memory = self._find(record_id)
        return None if memory is None else _decode(memory)

    def list_records(self, scope_prefix: Optional[str] = None, limit: int = 200, offset: int = 0) -> List[MemoryRecord]:
        """Records under `scope_prefix`, newest `created_at` first, `limit`
        of them after skipping `offset`."""
        records = [r for _, r in self._records() if _in_scope(r, scope_prefix)]
        records.sort(key=lambda r: _aware(r.created_at), reverse=True)  # type: ignore[arg-type, return-value]
        return records[offset : offset + limit]

    def get_scope_info(self, scope: str) -> ScopeInfo:
        """Record count, categories, oldest and newest `created_at` and
        immediate child scopes of `scope` (records under it included)."""
        records = [r for _, r in self._records() if _in_scope(r, scope)]
        times = [r.created_at for r in records]
        return ScopeInfo(
            path=scope or "/",
            record_count=len(records),
            categories=sorted({c for r in records for c in r.categories}),
            oldest_record=min(times) if times else None,
            newest_record=max(times) if times else None,
            child_scopes=self._children(scope, records),
        )

    @staticmethod
    def _children(parent: str, records: List[MemoryRecord]) -> List[str]:
        base = (parent or "/").rstrip("/")
        children = set()
        for r in records:
            if not _in_scope(r, parent):
                continue
            rest = r.scope[len(base) :].strip("/")
            if rest:
                children.add(f"{base}/{rest.split('/')[0]}")
        return sorted(children)

    def list_scopes(self, parent: str = "/") -> List[str]:
        """The immediate child scopes of `parent` that hold records."""
        return self._children(parent, [r for _, r in self._records()])

    def list_categories(self, scope_prefix: Optional[str] = None) -> Dict[str, int]:
        """Category → number of records under `scope_prefix` with it."""
        counts: Dict[str, int] = {}
        for _, r in self._records():
            if _in_scope(r, scope_prefix):
                for c in r.categories:
                    counts[c] = counts.get(c, 0) + 1
        return counts

    def count(self, scope_prefix: Optional[str] = None) -> int:
        """Records under `scope_prefix` (all when None)."""
        return sum(1 for _, r in self._records() if _in_scope(r, scope_prefix))

    def reset(self, scope_prefix: Optional[str] = None) -> None:
        """Forgets every record under `scope_prefix` (all when None)."""
        if not scope_prefix or scope_prefix == "/":
            with self._lock:
                try:
                    self._engine.forget(self._namespace, all=True, reason="crewai reset")
                except NotFoundError:
                    pass
            return
        self.delete(scope_prefix=scope_prefix)

    async def asave(self, records: List[MemoryRecord]) -> None:
        """`save` on a worker thread."""
        await asyncio.to_thread(self.save, records)

    async def asearch(
        self,
        query_embedding: List[float],
        scope_prefix: Optional[str] = None,
        categories: Optional[List[str]] = None,
        metadata_filter: Optional[Dict[str, Any]] = None,
        limit: int = 10,
        min_score: float = 0.0,
    ) -> List[Tuple[MemoryRecord, float]]:
        """`search` on a worker thread."""
        return await asyncio.to_thread(
            self.search, query_embedding, scope_prefix, categories, metadata_filter, limit, min_score
        )

    async def adelete(
        self,
        scope_prefix: Optional[str] = None,
        categories: Optional[List[str]] = None,
        record_ids: Optional[List[str]] = None,
        older_than: Optional[datetime] = None,
        metadata_filter: Optional[Dict[str, Any]] = None,
    ) -> int:
        """`delete` on a worker thread."""
        return await asyncio.to_thread(self.delete, scope_prefix, categories, record_ids, older_than, metadata_filter)

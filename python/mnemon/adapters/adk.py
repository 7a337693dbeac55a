"""`MnemonMemoryService`: a Google ADK `BaseMemoryService` on a mnemon
engine.

`Runner(..., memory_service=MnemonMemoryService(engine))` (or the
`load_memory` / `preload_memory` tools) then searches a user's past
sessions with mnemon's hybrid recall (dense + BM25, reranked by recency
and importance) instead of keyword overlap.

Mapping (the rule of `mnemon.adapters`):

* namespace: `<prefix>:<escaped app_name>:<escaped user_id>` (prefix
  `"adk"` by default);
* session: the escaped `session.id` (`add_events_to_memory` without a
  session id: `__unknown_session_id__`, as ADK's in-memory service);
* each event with text is one observation of that session (role `user`
  for author `user`, else `assistant`; source: the event id; event time:
  the event's timestamp) and one `episode` memory derived from it, whose
  content is the event's text parts joined by a space and whose
  `source_ref` is `["<event id>", "<author>"]` as JSON;
* `add_memory` remembers each `MemoryEntry`'s text as a `fact` memory
  (no observation);
* a search hit is a `MemoryEntry` with `id` the mnemon memory id (as str),
  the text as one `Part` (role `user` for author `user`, else `model`),
  `author`, `timestamp` (ISO 8601, UTC) and `custom_metadata`
  `{"score": <recall score>, "event_id": <id or None>}`;
* `delete_memory(memory_id=...)` forgets the memory and its observation;
  the event is not stored again by a later `add_session_to_memory` (the
  forget's reason records its id, as the in-memory service remembers
  deleted ids).

Adding a session again stores only the events not yet stored (by event
id), so calling `add_session_to_memory` after every turn is fine.

What it cannot carry: non-text parts (function calls and responses,
inline data, files, thoughts' signatures) are not stored and an event
without text is skipped; `custom_metadata` of `add_events_to_memory` and
`add_memory` is not stored; personal data in text is redacted per the
engine's `pii_policy`, so a hit holds placeholders (`[PHONE]`); an event
text over `max_content_bytes` (default 32 KiB) raises `InvalidInputError`.
A search always ranks the user's memories (recall does not abstain by
default), where the in-memory service returns only events sharing a word
with the query.
"""

from __future__ import annotations

import asyncio
import json
import threading
from collections.abc import Mapping, Sequence
from datetime import datetime, timezone
from typing import Any, List, Optional, Set, Tuple

try:
    from google.adk.events.event import Event
    from google.adk.memory.base_memory_service import BaseMemoryService, SearchMemoryResponse
    from google.adk.memory.memory_entry import MemoryEntry
    from google.adk.sessions.session import Session
    from google.genai import types
except ImportError as _missing:  # pragma: no cover - exercised only without ADK
    raise ImportError("mnemon.adapters.adk needs Google ADK: pip install google-adk") from _missing

from .._engine import Engine
from .._errors import InvalidInputError, NotFoundError
from .._ids import namespace_for, session_for
from ._turns import PAGE, record_turn, session_turns

__all__ = ["MnemonMemoryService"]

#: Session of `add_events_to_memory` calls that name none (ADK's own).
UNKNOWN_SESSION_ID = "__unknown_session_id__"
#: Start of the forget reason of `delete_memory`; the event id follows as JSON.
DELETE_REASON = "adk delete_memory event "
#: Most source_ref bytes (the engine's limit).
_MAX_SOURCE_REF = 256


def _event_text(event: Event) -> str:
    if not event.content or not event.content.parts:
        return ""
    return " ".join(part.text for part in event.content.parts if part.text)


def _source_ref(event_id: Optional[str], author: Optional[str]) -> Optional[str]:
    ref = json.dumps([event_id, author], ensure_ascii=False, separators=(",", ":"))
    if len(ref.encode("utf-8")) <= _MAX_SOURCE_REF:
        return ref
    ref = json.dumps([event_id, None], ensure_ascii=False, separators=(",", ":"))
    return ref if len(ref.encode("utf-8")) <= _MAX_SOURCE_REF else None


def _parse_source_ref(ref: Optional[str]) -> Tuple[Optional[str], Optional[str]]:
    if not ref:
        return None, None
    try:
        value = json.loads(ref)
    except ValueError:
        return None, None
    if isinstance(value, list) and len(value) == 2:
        event_id, author = value
        return (event_id if isinstance(event_id, str) else None, author if isinstance(author, str) else None)
    return None, None


class MnemonMemoryService(BaseMemoryService):
    """Google ADK memory service on a mnemon `Engine`; see the module docs
    for the mapping.

    Arguments:
        engine: the open engine (the caller closes it).
        prefix: first part of every namespace, 1–32 characters of
            `[A-Za-z0-9_-]` (default `"adk"`).
        top_k: most memories a search returns, 1–1000 (default 10, as
            ADK's in-memory service).
        min_similarity: drop hits with a cosine below this (-1..1; the
            scale depends on the embedder); default None keeps every hit.
        opaque_ids: name namespaces and sessions by SHA-256 digests of the
            ids instead of the escaped ids (default False); needed for ids
            that hold personal data (an e-mail address as user id), which
            the engine refuses in names.

    Every method is async and runs the engine calls on a worker thread.

    Raises:
        InvalidInputError: a bad prefix or `top_k`.
    """

    def __init__(
        self,
        engine: Engine,
        *,
        prefix: str = "adk",
        top_k: int = 10,
        min_similarity: Optional[float] = None,
        opaque_ids: bool = False,
    ) -> None:
        namespace_for(prefix, ["check"])
        if isinstance(top_k, bool) or not isinstance(top_k, int) or not 1 <= top_k <= 1000:
            raise InvalidInputError(f"top_k: {top_k!r} is not an int in 1..1000", "top_k")
        self._engine = engine
        self._prefix = prefix
        self._top_k = top_k
        self._min_similarity = min_similarity
        self._opaque = opaque_ids
        self._lock = threading.Lock()

    def namespace(self, app_name: str, user_id: str) -> str:
        """The mnemon namespace of `user_id` of `app_name`.

        Raises InvalidInputError for an empty or non-str id."""
        return namespace_for(self._prefix, [app_name, user_id], opaque=self._opaque)

    # -- BaseMemoryService ----------------------------------------------------

    async def add_session_to_memory(self, session: Session) -> None:
        """Stores the session's events that have text and are not stored
        yet (nor deleted), in order.

        Raises:
            InvalidInputError: an empty app name, user or session id, or an
                event text the engine refuses (over `max_content_bytes`,
                ...); the events before it are stored.
            RejectedError, ClosedError, PoisonedError.
        """
        await asyncio.to_thread(
            self._add_events, self.namespace(session.app_name, session.user_id), session.id, list(session.events)
        )

    async def add_events_to_memory(
        self,
        *,
        app_name: str,
        user_id: str,
        events: Sequence[Event],
        session_id: Optional[str] = None,
        custom_metadata: Optional[Mapping[str, object]] = None,
    ) -> None:
        """Stores `events` (a delta: those with text not yet stored in the
        session) under `session_id` (default `__unknown_session_id__`).
        `custom_metadata` is not stored. Raises as
        `add_session_to_memory`."""
        await asyncio.to_thread(
            self._add_events, self.namespace(app_name, user_id), session_id or UNKNOWN_SESSION_ID, list(events)
        )

    async def add_memory(
        self,
        *,
        app_name: str,
        user_id: str,
        memories: Sequence[MemoryEntry],
        custom_metadata: Optional[Mapping[str, object]] = None,
    ) -> None:
        """Remembers each entry's text (its parts' text joined by a space)
        as a `fact` memory, with its `id` and `author` as the source
        reference and its `timestamp` (ISO 8601) as the event time when it
        parses. Entries without text are skipped; `custom_metadata` is not
        stored.

        Raises:
            InvalidInputError, RejectedError, ClosedError, PoisonedError.
        """
        await asyncio.to_thread(self._add_memory, self.namespace(app_name, user_id), list(memories))

    async def search_memory(self, *, app_name: str, user_id: str, query: str) -> SearchMemoryResponse:
        """The user's memories that best match `query`, best first (at most
        `top_k`), as `MemoryEntry`s. A user with no memories gets none.

        Raises:
            InvalidInputError: an empty app name or user id, or a query the
                engine refuses.
            EmbedderError, ClosedError.
        """
        return await asyncio.to_thread(self._search, self.namespace(app_name, user_id), query)

    async def delete_memory(self, *, app_name: str, user_id: str, memory_id: Optional[str] = None) -> None:
        """Forgets memory `memory_id` (an id `search_memory` returned) with
        its version chain and the observation it was derived from. None,
        an unknown or already forgotten id does nothing.

        Raises:
            InvalidInputError: `memory_id` is not a memory id (digits).
            ClosedError, PoisonedError.
        """
        if not memory_id:
            return
        await asyncio.to_thread(self._delete, self.namespace(app_name, user_id), memory_id)

    # -- work on the worker thread --------------------------------------------

    def _deleted_event_ids(self, namespace: str) -> Set[str]:
        deleted: Set[str] = set()
        cursor: Optional[str] = None
        while True:
            page = self._engine.log(namespace, kinds=["forgotten"], cursor=cursor, limit=PAGE)
            for event in page.events:
                reason = (event.body.get("forgotten") or {}).get("reason", "")
                if isinstance(reason, str) and reason.startswith(DELETE_REASON):
                    try:
                        deleted.add(str(json.loads(reason[len(DELETE_REASON) :])))
                    except ValueError:
                        pass
            cursor = page.next_cursor
            if not cursor:
                return deleted

    def _add_events(self, namespace: str, session_id: str, events: List[Event]) -> None:
        session = session_for(session_id, opaque=self._opaque)
        with self._lock:
            stored = {t.source for t in session_turns(self._engine, namespace, session) if t.source}
            stored |= self._deleted_event_ids(namespace)
            for event in events:
                text = _event_text(event)
                if not text.strip() or (event.id and event.id in stored):
                    continue
                when = datetime.fromtimestamp(event.timestamp, tz=timezone.utc)
                source = event.id if event.id and len(event.id.encode("utf-8")) <= _MAX_SOURCE_REF else None
                record_turn(
                    self._engine,
                    namespace,
                    session,
                    text,
                    role="user" if event.author == "user" else "assistant",
                    source=source,
                    event_time=when,
                    memory_text=text,
                    source_ref=_source_ref(event.id or None, event.author or None),
                )
                if event.id:
                    stored.add(event.id)

    def _add_memory(self, namespace: str, memories: List[MemoryEntry]) -> None:
        for entry in memories:
            parts = entry.content.parts or []
            text = " ".join(part.text for part in parts if part.text)
            if not text.strip():
                continue
            when: Optional[datetime] = None
            if entry.timestamp:
                try:
                    when = datetime.fromisoformat(entry.timestamp)
                except ValueError:
                    when = None
                if when is not None and when.tzinfo is None:
                    when = when.astimezone(timezone.utc)
            self._engine.remember(
                namespace, text, kind="fact", event_time=when, source_ref=_source_ref(entry.id, entry.author)
            )

    def _search(self, namespace: str, query: str) -> SearchMemoryResponse:
        if not query.strip():
            return SearchMemoryResponse()
        hits = self._engine.recall(
            namespace, query, top_k=self._top_k, min_similarity=self._min_similarity, explain=True
        ).hits
        memories = []
        for hit in hits:
            memory = hit.memory
            event_id, author = _parse_source_ref(memory.source_ref if memory else None)
            when = (memory.event_time or memory.first_seen) if memory else None
            memories.append(
                MemoryEntry(
                    id=str(hit.id),
                    content=types.Content(
                        role="user" if author == "user" else "model", parts=[types.Part(text=hit.content)]
                    ),
                    author=author,
                    timestamp=when.astimezone(timezone.utc).isoformat() if when else None,
                    custom_metadata={"score": hit.score, "event_id": event_id},
                )
            )
        return SearchMemoryResponse(memories=memories)

    def _delete(self, namespace: str, memory_id: str) -> None:
        if not memory_id.isdigit():
            raise InvalidInputError(f"memory_id: {memory_id!r} is not a mnemon memory id", "memory_id")
        with self._lock:
            try:
                memory = self._engine.get(namespace, int(memory_id))
            except NotFoundError:
                return
            event_id, _ = _parse_source_ref(memory.source_ref)
            reason = DELETE_REASON + json.dumps(event_id) if event_id else "adk delete_memory"
            sources = list(memory.sources or [])
            if sources:
                for observation in sources:
                    self._engine.forget(namespace, observation=observation, reason=reason)
            else:
                self._engine.forget(namespace, id=int(memory_id), reason=reason)

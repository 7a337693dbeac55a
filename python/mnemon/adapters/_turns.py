"""Conversation turns as observations (and memories derived from them):
the writes and reads every adapter shares, all through `Engine` methods."""

from __future__ import annotations

import re
from datetime import datetime
from typing import Any, Dict, List, NamedTuple, Optional, Tuple, Union

from .._engine import Engine
from .._errors import NotFoundError

#: Largest page of `Engine.log`.
PAGE = 1000
#: Kind of the memory a turn's text becomes.
TURN_KIND = "episode"
#: Roles an observation may have.
ROLES = ("user", "assistant", "tool", "system")

# Characters the engine refuses in text (its input rules): C0 controls but
# tab, LF and CR; DEL and the C1 controls; bidi embedding, override and
# isolate controls; tag characters.
_REFUSED = re.compile("[\x00-\x08\x0b\x0c\x0e-\x1f\x7f-\x9f\u202a-\u202e\u2066-\u2069\U000e0000-\U000e007f]")


def searchable(text: str) -> str:
    """`text` with every character the engine refuses replaced by a
    space: what a memory derived from a turn holds (the turn's observation
    keeps the text as given, or its JSON)."""
    return _REFUSED.sub(" ", text)


class Turn(NamedTuple):
    """An observation of a session, as the log holds it (text after
    redaction)."""

    id: int
    role: str
    text: str
    source: Optional[str]
    event_time: Optional[str]
    recorded: str


def record_turn(
    engine: Engine,
    namespace: str,
    session: str,
    text: str,
    *,
    role: str,
    source: Optional[str] = None,
    event_time: Optional[Union[datetime, str]] = None,
    memory_text: Optional[str] = None,
    source_ref: Optional[str] = None,
    importance: Optional[float] = None,
) -> Tuple[int, Optional[int]]:
    """Observes `text` in `session`; when `memory_text` is given, also
    remembers it as an `episode` memory derived from that observation (so
    recall finds it and forgetting the observation forgets it).

    Returns (observation id, memory id or None).

    Raises what `Engine.observe` and `Engine.remember` raise; when the
    memory is refused, the observation stays.
    """
    observed = engine.observe(
        namespace, session, text, role=role, event_time=event_time, source=source  # type: ignore[arg-type]
    )
    memory_id = None
    memory_text = None if memory_text is None else searchable(memory_text)
    if memory_text is not None and memory_text.strip():
        remembered = engine.remember(
            namespace,
            memory_text,
            kind=TURN_KIND,
            session=session,
            sources=[observed.observation_id],
            event_time=event_time,
            source_ref=source_ref,
            importance=importance,
        )
        memory_id = remembered.id
    return observed.observation_id, memory_id


def session_turns(engine: Engine, namespace: str, session: Optional[str], since: Optional[int] = None) -> List[Turn]:
    """The observations of `session` in `namespace` (every session's when
    None) that are not forgotten, oldest first, from log position `since`
    on (default: the start). Reads the namespace's audit log of
    observations from there, page by page: the cost grows with the
    namespace, not the session."""
    turns: List[Turn] = []
    cursor: Optional[str] = None
    while True:
        page = engine.log(namespace, kinds=["observed"], seq_range=(since, None), cursor=cursor, limit=PAGE)
        for event in page.events:
            body: Dict[str, Any] = event.body.get("observed") or {}
            if session is not None and body.get("session") != session:
                continue
            turns.append(
                Turn(
                    id=event.seq,
                    role=str(body.get("role", "user")),
                    text=str(body.get("text", "")),
                    source=body.get("source"),
                    event_time=body.get("event_time"),
                    recorded=event.to_dict()["time"],
                )
            )
        cursor = page.next_cursor
        if not cursor:
            return turns


def namespace_is_empty(engine: Engine, namespace: str) -> bool:
    """Whether nothing was ever observed in `namespace`."""
    return not engine.log(namespace, kinds=["observed"], limit=1).events


def forget_session(engine: Engine, namespace: str, session: str, reason: str) -> int:
    """Forgets every memory and observation of `session`; returns how many
    observations went (0 when the session holds nothing)."""
    try:
        return engine.forget(namespace, session=session, reason=reason).observations
    except NotFoundError:
        return 0

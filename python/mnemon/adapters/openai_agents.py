"""`MnemonSession`: an OpenAI Agents SDK `Session` on a mnemon engine.

`Runner.run(agent, input, session=MnemonSession(...))` reads the
conversation history from mnemon before each run and appends the run's new
items after it. Each item is one observation of the mnemon session, so the
context block (`Engine.context(..., current_session=...)`) shows the turns
and `Engine.extraction_prompt` reads them; the text of each message is also
remembered as an `episode` memory derived from its observation, so
`Engine.recall` finds what was said in any session of the user.

Mapping (the rule of `mnemon.adapters`):

* namespace: `<prefix>:<escaped user_id>` (prefix `"oa"` by default);
* session: the escaped `session_id`;
* an item whose keys are exactly `role` and `content`, with role `user`,
  `assistant` or `system` and a string content (what `Runner` stores for a
  string input, and what most callers add), is stored as that text under
  that role, observation source `oa:text`;
* every other item (assistant output messages with ids and content parts,
  tool calls and their outputs, reasoning, `developer` messages, ...) is
  stored as its JSON text (keys in the order given, characters the engine
  refuses in text written as JSON escapes), source `oa:json`, role `tool`
  for tool calls and outputs, `system` for `developer`, else the item's
  role or `assistant`;
* the memory of an item is the text of its message (string content, or
  the `text` of its content parts); tool calls and outputs get none.

`get_items` returns the items as added: the same dicts, keys and values
(the JSON of a `oa:json` item decoded). What it cannot carry:

* personal data: with the engine's `pii_policy="redact"` (the default) the
  stored text holds placeholders (`[PHONE]`), so an item read back holds
  them too (open the engine with `pii_policy="off"` to keep items byte for
  byte); a placeholder that replaced digits of a JSON number makes the item
  unreadable as JSON, and it is read back as `{"role", "content"}` with the
  stored text;
* items over the engine's `max_content_bytes` (default 32 KiB) as text:
  `add_items` raises `InvalidInputError` and stores none of the items
  after the first refused one (those before it stay);
* non-JSON values in items (bytes, objects): `InvalidInputError`;
* the SDK's `wrapper` run context is not read.

Reads scan the user's namespace log of observations (`Engine.log`) from
the session's first observation a `MnemonSession` object has seen, so
`get_items` costs grow with everything the user said since then, in every
session.
"""

from __future__ import annotations

import asyncio
import json
import re
import threading
from typing import Any, Dict, List, Optional, Tuple

try:
    from agents.memory.session_settings import SessionSettings, resolve_session_limit
except ImportError as _missing:  # pragma: no cover - exercised only without the SDK
    raise ImportError(
        "mnemon.adapters.openai_agents needs the OpenAI Agents SDK: pip install openai-agents"
    ) from _missing

from .._engine import Engine
from .._errors import InvalidInputError
from .._ids import namespace_for, session_for
from ._turns import Turn, forget_session, record_turn, session_turns

__all__ = ["MnemonSession", "encode_item", "decode_item"]

#: Observation source of an item stored as its text.
SOURCE_TEXT = "oa:text"
#: Observation source of an item stored as its JSON.
SOURCE_JSON = "oa:json"

_PLAIN_ROLES = ("user", "assistant", "system")
# Characters the engine refuses in text that JSON leaves raw: DEL, the C1
# controls, bidi embedding/override/isolate controls, tag characters.
_REFUSED = re.compile("[\u007f-\u009f\u202a-\u202e\u2066-\u2069\U000e0000-\U000e007f]")


def _escape(match: "re.Match[str]") -> str:
    code = ord(match.group(0))
    if code < 0x10000:
        return f"\\u{code:04x}"
    code -= 0x10000
    return f"\\u{0xD800 + (code >> 10):04x}\\u{0xDC00 + (code & 0x3FF):04x}"


def _message_text(item: Dict[str, Any]) -> Optional[str]:
    content = item.get("content")
    if isinstance(content, str):
        return content
    if isinstance(content, list):
        parts = [p.get("text") for p in content if isinstance(p, dict) and isinstance(p.get("text"), str)]
        return "\n".join(p for p in parts if p) or None
    return None


def encode_item(item: Any) -> Tuple[str, str, str, Optional[str]]:
    """How an item is stored: (role, observation text, observation source,
    memory text or None). See the module docs.

    Raises:
        InvalidInputError: (field `items`) the item is not a dict of JSON
            values.
    """
    if not isinstance(item, dict):
        raise InvalidInputError(f"items: expected a dict, got {type(item).__name__}", "items")
    if set(item) == {"role", "content"} and item["role"] in _PLAIN_ROLES and isinstance(item["content"], str):
        return item["role"], item["content"], SOURCE_TEXT, item["content"]
    return _encode_json(item)


def _encode_json(item: Dict[str, Any]) -> Tuple[str, str, str, Optional[str]]:
    try:
        text = json.dumps(item, ensure_ascii=False, allow_nan=False, separators=(",", ":"))
    except (TypeError, ValueError) as e:
        raise InvalidInputError(f"items: not JSON: {e}", "items") from None
    text = _REFUSED.sub(_escape, text)
    kind = item.get("type")
    role = item.get("role")
    if isinstance(kind, str) and (kind.endswith("_call") or kind.endswith("_call_output")):
        return "tool", text, SOURCE_JSON, None
    if role == "developer":
        return "system", text, SOURCE_JSON, _message_text(item)
    if role in _PLAIN_ROLES:
        return str(role), text, SOURCE_JSON, _message_text(item)
    return "assistant", text, SOURCE_JSON, None


def decode_item(role: str, text: str, source: Optional[str]) -> Dict[str, Any]:
    """The item an observation holds: its JSON for source `oa:json`, else
    `{"role": role, "content": text}` (observations written by other doors
    read as messages too)."""
    if source == SOURCE_JSON:
        try:
            value = json.loads(text)
        except ValueError:
            value = None
        if isinstance(value, dict):
            return value
    return {"role": role, "content": text}


class MnemonSession:
    """An OpenAI Agents SDK `Session` (the `agents.memory.Session`
    protocol) storing its items in a mnemon engine; see the module docs for
    the mapping.

    Arguments:
        session_id: the SDK's session id (any non-empty str).
        engine: the open engine (the caller closes it).
        user_id: whose memory this is: the namespace (any non-empty str).
        prefix: first part of the namespace, 1–32 characters of
            `[A-Za-z0-9_-]` (default `"oa"`).
        session_settings: the SDK's `SessionSettings`; its `limit` caps
            `get_items` when called without one.
        remember_messages: also remember each message's text as a memory
            (default True); False stores observations only (recall then
            finds nothing of the conversation until an extraction pass).
        opaque_ids: name the namespace and session by SHA-256 digests of
            the ids instead of the escaped ids (default False); needed for
            ids that hold personal data (an e-mail address as `user_id`),
            which the engine refuses in names.

    Every method is async and runs the engine call on a worker thread.

    Raises:
        InvalidInputError: an empty id or a bad prefix.
    """

    def __init__(
        self,
        session_id: str,
        engine: Engine,
        *,
        user_id: str,
        prefix: str = "oa",
        session_settings: Optional[SessionSettings] = None,
        remember_messages: bool = True,
        opaque_ids: bool = False,
    ) -> None:
        self.session_id = session_id
        self.session_settings = session_settings
        self._engine = engine
        self._namespace = namespace_for(prefix, [user_id], opaque=opaque_ids)
        self._session = session_for(session_id, opaque=opaque_ids)
        self._remember = remember_messages
        self._lock = threading.Lock()
        # The log position of the session's first observation seen: later
        # reads start there (ids only grow).
        self._since: Optional[int] = None

    @property
    def namespace(self) -> str:
        """The mnemon namespace holding this user's sessions."""
        return self._namespace

    @property
    def mnemon_session(self) -> str:
        """The mnemon session id of this session."""
        return self._session

    def __repr__(self) -> str:
        return f"MnemonSession({self.session_id!r}, namespace={self._namespace!r})"

    # -- the Session protocol -------------------------------------------------

    async def get_items(self, limit: Optional[int] = None) -> List[Dict[str, Any]]:
        """The session's items, oldest first: all of them, or the newest
        `limit` (an int ≥ 0; default `session_settings.limit`, else all).

        Raises:
            ClosedError: the engine is closed.
        """
        limit = resolve_session_limit(limit, self.session_settings)
        return await asyncio.to_thread(self._get_items, limit)

    async def add_items(self, items: List[Any]) -> None:
        """Appends `items` (dicts of JSON values), in order, each as one
        observation (and its message text as one memory).

        Raises:
            InvalidInputError: an item that is not a dict of JSON values, or
                whose text breaks the engine's input rules (over
                `max_content_bytes`, ...); the items before it are stored.
            RejectedError: the engine's safety policy refused a text.
            ClosedError, PoisonedError.
        """
        if not items:
            return
        await asyncio.to_thread(self._add_items, list(items))

    async def pop_item(self) -> Optional[Dict[str, Any]]:
        """Removes the newest item and returns it (None when the session
        is empty). Its observation is forgotten, with the memory derived
        from it: gone from every read at once, from the disk after
        `Engine.compact()`.

        Raises:
            ClosedError, PoisonedError.
        """
        return await asyncio.to_thread(self._pop_item)

    async def clear_session(self) -> None:
        """Forgets every item of the session (its observations and the
        memories of the session). A session with nothing in it is left as
        it is.

        Raises:
            ClosedError, PoisonedError.
        """
        await asyncio.to_thread(forget_session, self._engine, self._namespace, self._session, "session cleared")

    # -- work on the worker thread --------------------------------------------

    def _turns(self) -> List[Turn]:
        turns = session_turns(self._engine, self._namespace, self._session, self._since)
        if turns and self._since is None:
            self._since = turns[0].id
        return turns

    def _get_items(self, limit: Optional[int]) -> List[Dict[str, Any]]:
        turns = self._turns()
        if limit is not None:
            turns = turns[-limit:] if limit > 0 else []
        return [decode_item(t.role, t.text, t.source) for t in turns]

    def _add_items(self, items: List[Any]) -> None:
        encoded = [encode_item(item) for item in items]
        with self._lock:
            for item, (role, text, source, memory_text) in zip(items, encoded):
                memory = memory_text if self._remember else None
                try:
                    record_turn(
                        self._engine, self._namespace, self._session, text, role=role, source=source,
                        memory_text=memory,
                    )
                except InvalidInputError as e:
                    if source != SOURCE_TEXT or e.field != "text":
                        raise
                    # Text the engine refuses as a message (nothing visible)
                    # may still be stored as the item's JSON.
                    role, text, source, _ = _encode_json(item)
                    record_turn(self._engine, self._namespace, self._session, text, role=role, source=source)

    def _pop_item(self) -> Optional[Dict[str, Any]]:
        with self._lock:
            turns = self._turns()
            if not turns:
                return None
            last = turns[-1]
            self._engine.forget(self._namespace, observation=last.id, reason="session item popped")
            return decode_item(last.role, last.text, last.source)

"""`MnemonMemoryBlock`: a LlamaIndex memory block on a mnemon engine.

Put it in a `llama_index.core.memory.Memory`:

    memory = Memory.from_defaults(session_id="chat-1", memory_blocks=[MnemonMemoryBlock(engine=engine, user_id="u42")])

When the memory's short-term history outgrows its token limit, LlamaIndex
flushes the oldest messages to the block (`aput`): each becomes an
observation of the mnemon session, and its text an `episode` memory
derived from it. When the memory is read (`aget`, `get`), the block
returns mnemon's context block for the latest user message: the user's
profile (slot keys, permanent memories), the memories recalled for that
message from every session, and the last flushed turns of this session,
within `budget_tokens`.

Mapping (the rule of `mnemon.adapters`):

* namespace: `<prefix>:<escaped user_id>` (prefix `"li"` by default);
* session: the escaped `Memory.session_id` (LlamaIndex passes it with
  every put and get; `session_id` on the block is the fallback);
* roles: `user` → `user`; `assistant`, `chatbot`, `model` → `assistant`;
  `system`, `developer` → `system`; `tool`, `function` → `tool`;
* a message's text is its `TextBlock`s joined by newlines.

What it cannot carry: non-text blocks (images, audio, documents, tool call
blocks) and `additional_kwargs` are not stored, and a message without text
is skipped; a turn is read back only as part of the context block (the
short-term history stays LlamaIndex's own, in its SQL store); personal
data is redacted per the engine's `pii_policy`; a message over
`max_content_bytes` (default 32 KiB) raises `InvalidInputError`.
"""

from __future__ import annotations

import asyncio
from typing import Any, List, Optional

try:
    from llama_index.core.base.llms.types import ChatMessage, MessageRole
    from llama_index.core.bridge.pydantic import ConfigDict, Field
    from llama_index.core.memory import BaseMemoryBlock
except ImportError as _missing:  # pragma: no cover - exercised only without LlamaIndex
    raise ImportError("mnemon.adapters.llama_index needs LlamaIndex: pip install llama-index-core") from _missing

from .._engine import Engine
from .._ids import namespace_for, session_for
from ._turns import record_turn

__all__ = ["MnemonMemoryBlock"]

_ROLES = {
    MessageRole.USER.value: "user",
    MessageRole.ASSISTANT.value: "assistant",
    MessageRole.CHATBOT.value: "assistant",
    MessageRole.MODEL.value: "assistant",
    MessageRole.SYSTEM.value: "system",
    MessageRole.DEVELOPER.value: "system",
    MessageRole.TOOL.value: "tool",
    MessageRole.FUNCTION.value: "tool",
}


def _text(message: ChatMessage) -> str:
    return message.content or ""


class MnemonMemoryBlock(BaseMemoryBlock[str]):
    """A LlamaIndex `BaseMemoryBlock` whose content is mnemon's context
    block (a `str`, `<memories>` … `</memories>`, or "" when it holds no
    entry); see the module docs for the mapping.

    Fields (keyword arguments):
        engine: the open `mnemon.Engine` (the caller closes it).
        user_id: whose memory this is: the namespace (any non-empty str).
        prefix: first part of the namespace (default `"li"`).
        session_id: session used when LlamaIndex names none (default
            `"default"`).
        budget_tokens: size of the context block in estimated tokens
            (default 400; 1 to half the engine's `max_response_tokens`).
        remember_messages: also remember each flushed message's text as a
            memory (default True), so recall finds it from any session.
        opaque_ids: name the namespace and sessions by SHA-256 digests of
            the ids (default False); needed for ids that hold personal data
            (an e-mail address as `user_id`), which the engine refuses.
        name, description, priority, accept_short_term_memory: as
            LlamaIndex's `BaseMemoryBlock` (name default `"mnemon"`).

    Raises:
        InvalidInputError: (from `aget` / `aput`) an empty user or session
            id, a bad prefix or budget, a text the engine refuses.
        EmbedderError, RejectedError, ClosedError, PoisonedError.
    """

    model_config = ConfigDict(arbitrary_types_allowed=True)

    name: str = Field(default="mnemon", description="The name of the memory block.")
    engine: Engine = Field(exclude=True, description="The open mnemon engine.")
    user_id: str = Field(description="Whose memory this is: the mnemon namespace.")
    prefix: str = Field(default="li", description="First part of the mnemon namespace.")
    session_id: str = Field(default="default", description="Session used when LlamaIndex names none.")
    budget_tokens: int = Field(default=400, description="Size of the context block, in estimated tokens.")
    remember_messages: bool = Field(default=True, description="Also remember each message's text as a memory.")
    opaque_ids: bool = Field(default=False, description="Name namespace and sessions by SHA-256 digests of the ids.")

    @property
    def namespace(self) -> str:
        """The mnemon namespace of `user_id`."""
        return namespace_for(self.prefix, [self.user_id], opaque=self.opaque_ids)

    async def _aget(self, messages: Optional[List[ChatMessage]] = None, **block_kwargs: Any) -> str:
        """The context block for the latest user message of `messages` (else
        the latest message with text), with the recent turns of the
        session `block_kwargs["session_id"]`; "" when there is no text to
        ask with or the block holds no entry."""
        query = ""
        for message in reversed(messages or []):
            text = _text(message)
            if text.strip() and (message.role == MessageRole.USER or not query):
                query = text
                if message.role == MessageRole.USER:
                    break
        if not query.strip():
            return ""
        session = session_for(block_kwargs.get("session_id") or self.session_id, opaque=self.opaque_ids)
        return await asyncio.to_thread(self._context, query, session)

    async def _aput(self, messages: List[ChatMessage]) -> None:
        """Stores each message with text as an observation of its session
        (`additional_kwargs["session_id"]`, which `Memory` sets, else the
        block's `session_id`), in order."""
        await asyncio.to_thread(self._put, list(messages))

    def _context(self, query: str, session: str) -> str:
        block = self.engine.context(self.namespace, query, budget_tokens=self.budget_tokens, current_session=session)
        if not (block.memories or block.profile or block.recent):
            return ""
        return block.context

    def _put(self, messages: List[ChatMessage]) -> None:
        namespace = self.namespace
        for message in messages:
            text = _text(message)
            if not text.strip():
                continue
            session_id = message.additional_kwargs.get("session_id") or self.session_id
            session = session_for(session_id, opaque=self.opaque_ids)
            role = _ROLES.get(getattr(message.role, "value", str(message.role)), "user")
            record_turn(
                self.engine,
                namespace,
                session,
                text,
                role=role,
                memory_text=text if self.remember_messages and role in ("user", "assistant") else None,
            )

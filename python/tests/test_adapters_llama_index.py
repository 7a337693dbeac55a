"""`mnemon.adapters.llama_index.MnemonMemoryBlock` inside LlamaIndex's own
`Memory`: the messages it flushes out of the short-term history become
observations, and its reads put mnemon's context block into the system
message."""

from __future__ import annotations

import asyncio
from typing import Any, List

import pytest

pytest.importorskip("llama_index.core")

from llama_index.core.base.llms.types import ChatMessage, MessageRole  # noqa: E402
from llama_index.core.memory import BaseMemoryBlock, Memory  # noqa: E402

from mnemon.adapters.llama_index import MnemonMemoryBlock  # noqa: E402

TURNS = [
    ("user", "I live in Porto and cycle to work every day"),
    ("assistant", "Porto is hilly, that is a good workout."),
    ("user", "My sister Ana is visiting in October"),
    ("assistant", "Nice, October is a lovely month in Porto."),
    ("user", "Remind me to buy a bike light before winter"),
    ("assistant", "I will remind you about the bike light."),
]


def run(coro: Any) -> Any:
    return asyncio.run(coro)


def words(text: str) -> List[str]:
    return text.split()


def memory_for(block: MnemonMemoryBlock, session_id: str) -> Memory:
    # A word-count tokenizer keeps LlamaIndex off the network (tiktoken).
    return Memory.from_defaults(
        session_id=session_id,
        token_limit=60,
        token_flush_size=10,
        chat_history_token_ratio=0.5,
        memory_blocks=[block],
        tokenizer_fn=words,
    )


def test_is_a_memory_block(engine):
    block = MnemonMemoryBlock(engine=engine, user_id="u 1")
    assert isinstance(block, BaseMemoryBlock)
    assert block.namespace == "li:u@201" and block.name == "mnemon"


def test_memory_flushes_turns_into_mnemon_and_reads_the_context_block(engine):
    block = MnemonMemoryBlock(engine=engine, user_id="u1")
    memory = memory_for(block, "chat-1")
    for role, text in TURNS:
        run(memory.aput(ChatMessage(role=role, content=text)))
    observed = engine.log("li:u1", kinds=["observed"]).events
    assert observed, "LlamaIndex flushed nothing to the block"
    flushed = [e.body["observed"]["text"] for e in observed]
    assert flushed == [t for _, t in TURNS[: len(flushed)]]  # oldest first, in order
    assert {e.body["observed"]["session"] for e in observed} == {"chat-1"}
    assert [e.body["observed"]["role"] for e in observed] == [r for r, _ in TURNS[: len(flushed)]]

    messages = run(memory.aget(input="Where do I live?"))
    system = messages[0]
    assert system.role == MessageRole.SYSTEM
    assert "<memories>" in system.content and "Porto" in system.content
    assert "Recent turns of this session" in system.content
    # The short-term history LlamaIndex kept is still there after the block.
    assert messages[-1].content == TURNS[-1][1]


def test_another_session_recalls_what_was_flushed(engine):
    block = MnemonMemoryBlock(engine=engine, user_id="u1")
    first = memory_for(block, "chat-1")
    for role, text in TURNS:
        run(first.aput(ChatMessage(role=role, content=text)))
    later = memory_for(block, "chat-2")
    run(later.aput(ChatMessage(role="user", content="Which city do I cycle in?")))
    messages = run(later.aget())
    system = messages[0].content
    assert "I live in Porto and cycle to work every day" in system
    assert "Recent turns of this session" not in system  # chat-2 flushed nothing yet


def test_block_direct_calls(engine):
    block = MnemonMemoryBlock(engine=engine, user_id="u2", session_id="fallback")
    assert run(block.aget([ChatMessage(role="user", content="anything")])) == ""  # nothing stored yet
    run(block.aput([ChatMessage(role="user", content="Prefers green tea"), ChatMessage(role="tool", content="")]))
    observed = engine.log("li:u2", kinds=["observed"]).events
    assert [e.body["observed"]["session"] for e in observed] == ["fallback"]
    text = run(block.aget([ChatMessage(role="user", content="what tea do I like?")], session_id="fallback"))
    assert "Prefers green tea" in text
    assert run(block.aget([])) == ""

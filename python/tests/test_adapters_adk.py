"""`mnemon.adapters.adk.MnemonMemoryService` against Google ADK: sessions
built by ADK's own `InMemorySessionService`, fed to both our service and
ADK's `InMemoryMemoryService`, searched, added again, deleted from."""

from __future__ import annotations

import asyncio
from typing import Any, List

import pytest

pytest.importorskip("google.adk")

from google.adk.events.event import Event  # noqa: E402
from google.adk.memory import InMemoryMemoryService  # noqa: E402
from google.adk.memory.base_memory_service import BaseMemoryService  # noqa: E402
from google.adk.memory.memory_entry import MemoryEntry  # noqa: E402
from google.adk.sessions import InMemorySessionService  # noqa: E402
from google.genai import types  # noqa: E402

from mnemon.adapters.adk import MnemonMemoryService  # noqa: E402

APP = "travel app"
USER = "user@42"


def run(coro: Any) -> Any:
    return asyncio.run(coro)


def text_event(author: str, text: str, ts: float) -> Event:
    role = "user" if author == "user" else "model"
    content = types.Content(role=role, parts=[types.Part(text=text)])
    return Event(author=author, invocation_id="inv", timestamp=ts, content=content)


async def build_session(session_id: str = "s1", texts: Any = None) -> Any:
    sessions = InMemorySessionService()
    session = await sessions.create_session(app_name=APP, user_id=USER, session_id=session_id)
    texts = texts or [
        ("user", "I adopted a cat named Miso last spring"),
        ("concierge", "Lovely! Miso is a great name for a cat."),
        ("user", "My favourite tea is oolong, no sugar"),
    ]
    for i, (author, text) in enumerate(texts):
        await sessions.append_event(session, text_event(author, text, 1_780_000_000.0 + i))
    call = Event(
        author="concierge",
        invocation_id="inv",
        content=types.Content(
            role="model", parts=[types.Part(function_call=types.FunctionCall(name="lookup", args={}))]
        ),
    )
    await sessions.append_event(session, call)
    return session


def texts(entries: List[MemoryEntry]) -> List[str]:
    return [" ".join(p.text for p in e.content.parts if p.text) for e in entries]


def test_is_a_memory_service(engine):
    service = MnemonMemoryService(engine)
    assert isinstance(service, BaseMemoryService)
    assert service.namespace(APP, USER) == "adk:travel@20app:user@4042"


def test_finds_what_adks_in_memory_service_finds(engine):
    ours, theirs = MnemonMemoryService(engine), InMemoryMemoryService()
    session = run(build_session())
    for service in (ours, theirs):
        run(service.add_session_to_memory(session))
    for query in ("cat named Miso", "oolong tea"):
        a = run(ours.search_memory(app_name=APP, user_id=USER, query=query)).memories
        b = run(theirs.search_memory(app_name=APP, user_id=USER, query=query)).memories
        assert texts(a)[0] == texts(b)[0], query
        assert a[0].author == b[0].author
    top = run(ours.search_memory(app_name=APP, user_id=USER, query="oolong tea")).memories[0]
    assert top.author == "user" and top.content.role == "user"
    assert top.timestamp == "2026-05-28T20:26:42+00:00"
    event_ids = [e.id for e in session.events]
    assert top.custom_metadata["event_id"] == event_ids[2]
    # The event without text is not stored; the others are observations.
    ns = ours.namespace(APP, USER)
    assert len(engine.log(ns, kinds=["observed"]).events) == 3


def test_adding_a_session_again_stores_only_new_events(engine):
    service = MnemonMemoryService(engine)
    session = run(build_session())
    run(service.add_session_to_memory(session))
    run(service.add_session_to_memory(session))
    ns = service.namespace(APP, USER)
    assert len(engine.log(ns, kinds=["observed"]).events) == 3
    session.events.append(text_event("user", "I moved to Porto in June", 1_780_000_100.0))
    run(service.add_session_to_memory(session))
    assert len(engine.log(ns, kinds=["observed"]).events) == 4
    block = engine.context(ns, "where do I live", current_session="s1")
    assert "(user) I moved to Porto in June" in block.context


def test_delete_memory_forgets_and_is_not_added_again(engine):
    ours, theirs = MnemonMemoryService(engine), InMemoryMemoryService()
    session = run(build_session())
    for service in (ours, theirs):
        run(service.add_session_to_memory(session))
        hit = run(service.search_memory(app_name=APP, user_id=USER, query="oolong tea")).memories[0]
        assert "oolong" in texts([hit])[0]
        run(service.delete_memory(app_name=APP, user_id=USER, memory_id=hit.id))
        run(service.add_session_to_memory(session))
        left = run(service.search_memory(app_name=APP, user_id=USER, query="oolong tea")).memories
        assert all("oolong" not in t for t in texts(left)), type(service).__name__
    ns = ours.namespace(APP, USER)
    assert "oolong" not in engine.context(ns, "tea", current_session="s1").context
    run(ours.delete_memory(app_name=APP, user_id=USER, memory_id="999999"))  # unknown: nothing happens


def test_events_and_memories_added_directly(engine):
    service = MnemonMemoryService(engine)
    events = [text_event("user", "Allergic to peanuts", 1_780_000_000.0)]
    run(service.add_events_to_memory(app_name=APP, user_id=USER, events=events, session_id="s9"))
    run(service.add_events_to_memory(app_name=APP, user_id=USER, events=events, session_id="s9"))
    run(service.add_memory(
        app_name=APP,
        user_id=USER,
        memories=[
            MemoryEntry(
                id="m1", author="planner", content=types.Content(parts=[types.Part(text="Prefers trains over planes")])
            )
        ],
    ))
    ns = service.namespace(APP, USER)
    assert len(engine.log(ns, kinds=["observed"]).events) == 1
    found = run(service.search_memory(app_name=APP, user_id=USER, query="trains or planes")).memories
    assert texts(found)[0] == "Prefers trains over planes" and found[0].author == "planner"
    found = run(service.search_memory(app_name=APP, user_id=USER, query="peanuts allergy")).memories
    assert texts(found)[0] == "Allergic to peanuts"


def test_users_and_apps_are_isolated(engine):
    service = MnemonMemoryService(engine)
    run(service.add_session_to_memory(run(build_session())))
    assert run(service.search_memory(app_name=APP, user_id="someone else", query="cat Miso")).memories == []
    assert run(service.search_memory(app_name="other app", user_id=USER, query="cat Miso")).memories == []


def test_a_runner_preloads_memories_from_it(engine):
    """ADK's `Runner` with its `preload_memory` tool and a local scripted
    model: the second session's model request holds what the first
    session said, found by our service as by ADK's own."""
    from google.adk.agents import LlmAgent
    from google.adk.models.base_llm import BaseLlm
    from google.adk.models.llm_response import LlmResponse
    from google.adk.runners import Runner
    from google.adk.tools.preload_memory_tool import PreloadMemoryTool

    requests: List[Any] = []

    class Scripted(BaseLlm):
        async def generate_content_async(self, llm_request: Any, stream: bool = False) -> Any:
            requests.append(llm_request)
            yield LlmResponse(content=types.Content(role="model", parts=[types.Part(text="Noted.")]))

    async def flow(memory: BaseMemoryService) -> str:
        sessions = InMemorySessionService()
        agent = LlmAgent(name="concierge", model=Scripted(model="scripted"), instruction="Help.",
                         tools=[PreloadMemoryTool()])
        runner = Runner(app_name=APP, agent=agent, session_service=sessions, memory_service=memory)

        async def say(session_id: str, text: str) -> None:
            message = types.Content(role="user", parts=[types.Part(text=text)])
            async for _ in runner.run_async(user_id=USER, session_id=session_id, new_message=message):
                pass

        first = await sessions.create_session(app_name=APP, user_id=USER)
        await say(first.id, "I adopted a cat named Miso")
        first = await sessions.get_session(app_name=APP, user_id=USER, session_id=first.id)
        await memory.add_session_to_memory(first)
        second = await sessions.create_session(app_name=APP, user_id=USER)
        await say(second.id, "What is my cat called?")
        return "\n".join(p.text for c in requests[-1].contents for p in (c.parts or []) if p.text)

    ours = run(flow(MnemonMemoryService(engine)))
    theirs = run(flow(InMemoryMemoryService()))
    for prompt in (ours, theirs):
        assert "<PAST_CONVERSATIONS>" in prompt and "user: I adopted a cat named Miso" in prompt

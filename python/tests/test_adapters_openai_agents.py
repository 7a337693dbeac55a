"""`mnemon.adapters.openai_agents.MnemonSession` against the OpenAI Agents
SDK: the same operations give the same items as the SDK's own
`SQLiteSession`, the SDK's `Runner` reads and writes it in a real run (a
local model, no network), and the turns reach the context block and
recall."""

from __future__ import annotations

import asyncio
from typing import Any, Dict, List

import pytest

agents = pytest.importorskip("agents")

from agents import Agent, Runner, SQLiteSession, set_tracing_disabled  # noqa: E402
from agents.items import ModelResponse  # noqa: E402
from agents.memory import Session, SessionSettings  # noqa: E402
from agents.models.interface import Model  # noqa: E402
from agents.usage import Usage  # noqa: E402
from openai.types.responses import ResponseOutputMessage, ResponseOutputText  # noqa: E402

import mnemon  # noqa: E402
from mnemon.adapters.openai_agents import MnemonSession  # noqa: E402

set_tracing_disabled(True)

ITEMS: List[Dict[str, Any]] = [
    {"role": "user", "content": "I prefer aisle seats on long flights"},
    {
        "id": "msg_1",
        "content": [{"annotations": [], "text": "Noted: aisle seats.", "type": "output_text", "logprobs": []}],
        "role": "assistant",
        "status": "completed",
        "type": "message",
    },
    {"type": "function_call", "call_id": "call_1", "name": "lookup_flight", "arguments": '{"to": "LIS"}', "id": "fc_1"},
    {"type": "function_call_output", "call_id": "call_1", "output": "TP 1351 at 09:40"},
    {"role": "developer", "content": "Answer briefly."},
    {"role": "user", "content": "Ünïcode, 中文, emoji 🛫, a tab\tand\nnewline", "type": "message"},
    {"role": "user", "content": "hidden \u202e bidi and \x7f delete in a structured item", "type": "message"},
    {"role": "user", "content": "a plain message with a \u202e bidi control"},
    {"role": "assistant", "content": ""},
    {"role": "user", "content": "   "},
    {"type": "reasoning", "id": "rs_1", "summary": [], "content": None, "nested": {"a": [1, 2.5, True, None]}},
]


def run(coro: Any) -> Any:
    return asyncio.run(coro)


async def drive(session: Any) -> List[Any]:
    """The same operations on any Session; what each read returned."""
    seen: List[Any] = []
    await session.add_items(ITEMS[:4])
    seen.append(await session.get_items())
    seen.append(await session.get_items(limit=2))
    seen.append(await session.get_items(limit=0))
    await session.add_items(ITEMS[4:])
    seen.append(await session.get_items())
    seen.append(await session.pop_item())
    seen.append(await session.pop_item())
    seen.append(await session.get_items(limit=3))
    await session.clear_session()
    seen.append(await session.get_items())
    seen.append(await session.pop_item())
    await session.add_items([ITEMS[0]])
    seen.append(await session.get_items())
    return seen


def test_is_a_session_of_the_sdk(engine):
    session = MnemonSession("s1", engine, user_id="u1")
    assert isinstance(session, Session)
    assert session.namespace == "oa:u1" and session.mnemon_session == "s1"


def test_same_items_as_the_sdks_sqlite_session(engine):
    ours = run(drive(MnemonSession("conv-1", engine, user_id="u1", session_settings=SessionSettings(limit=None))))
    theirs = run(drive(SQLiteSession("conv-1")))
    assert ours == theirs
    assert ours[3] == ITEMS  # every item back exactly, keys and values


def test_session_settings_limit_applies_as_in_the_sdk(engine):
    async def go(session: Any) -> List[Any]:
        await session.add_items(ITEMS[:5])
        return [await session.get_items(), await session.get_items(limit=4)]

    settings = SessionSettings(limit=2)
    ours = run(go(MnemonSession("c", engine, user_id="u1", session_settings=settings)))
    theirs = run(go(SQLiteSession("c", session_settings=settings)))
    assert ours == theirs and len(ours[0]) == 2


def test_turns_are_observations_the_context_block_and_recall_see(engine):
    session = MnemonSession("trip planning", engine, user_id="user 42")
    run(session.add_items(ITEMS[:4]))
    assert session.namespace == "oa:user@2042" and session.mnemon_session == "trip@20planning"
    block = engine.context(
        session.namespace, "which seat?", current_session=session.mnemon_session, budget_tokens=800, recent_share=0.5
    )
    assert block.recent == 4
    assert "(user) I prefer aisle seats on long flights" in block.context
    assert "TP 1351" in block.context  # the tool output, as its JSON
    hits = engine.recall(session.namespace, "aisle seats").hits
    assert {h.content for h in hits[:2]} == {"I prefer aisle seats on long flights", "Noted: aisle seats."}
    # Tool calls and outputs are not memories.
    assert all("TP 1351" not in m.content for m in engine.list(session.namespace).memories)


def test_pop_item_forgets_the_turn_and_its_memory(engine):
    session = MnemonSession("s", engine, user_id="u1")
    run(session.add_items([ITEMS[0], {"role": "user", "content": "My passport number is in the blue folder"}]))
    popped = run(session.pop_item())
    assert popped == {"role": "user", "content": "My passport number is in the blue folder"}
    assert run(session.get_items()) == [ITEMS[0]]
    assert "blue folder" not in engine.context(session.namespace, "passport", current_session="s").context
    assert all("blue folder" not in h.content for h in engine.recall(session.namespace, "passport blue folder").hits)
    engine.compact()
    check = engine.verify_erasure(["My passport number is in the blue folder"])
    assert check.verified and check.matches == []


def test_clear_session_leaves_other_sessions_and_users(engine):
    a = MnemonSession("s", engine, user_id="u1")
    b = MnemonSession("t", engine, user_id="u1")
    c = MnemonSession("s", engine, user_id="u2")
    for s in (a, b, c):
        run(s.add_items([{"role": "user", "content": f"hello from {s.namespace} {s.session_id}"}]))
    run(a.clear_session())
    assert run(a.get_items()) == []
    assert run(b.get_items()) == [{"role": "user", "content": "hello from oa:u1 t"}]
    assert run(c.get_items()) == [{"role": "user", "content": "hello from oa:u2 s"}]
    run(a.clear_session())  # nothing left: no error


def test_ids_map_without_collisions(engine):
    names = {MnemonSession("s", engine, user_id=u).namespace for u in ("a.b", "a@2Eb", "a:b", "a b", "a/b", "x" * 200)}
    assert len(names) == 6 and all(len(n) <= 128 for n in names)
    for name in names:
        mnemon.Namespace(name)


def test_bad_items_are_refused(engine):
    session = MnemonSession("s", engine, user_id="u1")
    with pytest.raises(mnemon.InvalidInputError):
        run(session.add_items([{"role": "user", "content": object()}]))
    with pytest.raises(mnemon.InvalidInputError):
        run(session.add_items([{"role": "user", "content": "x" * (engine.max_content_bytes + 1)}]))
    assert run(session.get_items()) == []


class Scripted(Model):
    """A model that answers from a script and records what it was sent."""

    def __init__(self, answers: List[str]) -> None:
        self.answers = list(answers)
        self.inputs: List[Any] = []

    async def get_response(self, system_instructions, input, model_settings, tools, output_schema, handoffs, tracing,
                           *, previous_response_id=None, conversation_id=None, prompt=None, **kwargs):
        self.inputs.append(input)
        text = self.answers.pop(0)
        message = ResponseOutputMessage(
            id=f"msg_{len(self.inputs)}",
            content=[ResponseOutputText(annotations=[], text=text, type="output_text")],
            role="assistant",
            status="completed",
            type="message",
        )
        return ModelResponse(output=[message], usage=Usage(), response_id=None)

    def stream_response(self, *args, **kwargs):  # pragma: no cover - not used
        raise NotImplementedError


def test_runner_reads_and_writes_the_session(engine):
    model = Scripted(["Aisle it is.", "You prefer aisle seats."])
    agent = Agent(name="travel", instructions="Help with travel.", model=model)
    session = MnemonSession("conv-7", engine, user_id="u7")
    first = run(Runner.run(agent, "Book me an aisle seat to Lisbon", session=session))
    assert first.final_output == "Aisle it is."
    second = run(Runner.run(agent, "What seat do I like?", session=session))
    assert second.final_output == "You prefer aisle seats."
    # The second call saw the first turn, read back from mnemon.
    sent = model.inputs[1]
    assert sent[0] == {"content": "Book me an aisle seat to Lisbon", "role": "user"}
    assert sent[1]["content"][0]["text"] == "Aisle it is."
    items = run(session.get_items())
    assert [i.get("role") for i in items] == ["user", "assistant", "user", "assistant"]
    # The same run on the SDK's own session stores the same items.
    theirs = SQLiteSession("conv-7")
    model2 = Scripted(["Aisle it is.", "You prefer aisle seats."])
    agent2 = Agent(name="travel", instructions="Help with travel.", model=model2)
    run(Runner.run(agent2, "Book me an aisle seat to Lisbon", session=theirs))
    run(Runner.run(agent2, "What seat do I like?", session=theirs))
    assert items == run(theirs.get_items())
    # Another session of the user recalls it.
    hits = engine.recall(session.namespace, "which seat does the user like").hits
    assert any("aisle seat to Lisbon" in h.content for h in hits)


def test_ids_holding_personal_data_need_opaque_names(engine):
    # An e-mail address as a namespace would be stored as given: the engine
    # refuses it, and opaque_ids names the user by a digest instead.
    plain = MnemonSession("s", engine, user_id="ana@example.com")
    assert plain.namespace == "oa:ana@40example@2Ecom"
    opaque = MnemonSession("s", engine, user_id="ana@example.com", opaque_ids=True)
    assert opaque.namespace.startswith("oa:@@") and not any(c.isdigit() for c in opaque.namespace)
    run(opaque.add_items([ITEMS[0]]))
    assert run(opaque.get_items()) == [ITEMS[0]]
    assert run(MnemonSession("s", engine, user_id="bob@example.com", opaque_ids=True).get_items()) == []

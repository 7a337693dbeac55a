"""One scenario through every door: the Python engine, the CLI (`--json`),
MCP over stdio (the official MCP SDK), REST on `mnemon serve` (httpx), the
Node package (node/, built: skipped without it unless MNEMON_REQUIRE_NODE=1), and
the framework adapters (Google ADK, LlamaIndex, OpenAI Agents; CrewAI has
its own environment and test).

Each door runs the same calls on a fresh store with the same embedder:
remember, a keyed fact that changes, recall, context, history, forget,
and a read of the forgotten memory. Their answers must be equal once the
clock's values (times, dates) are taken out: same ids, same hits in the
same order, the same block, the same version chain, the same forget
outcome, the same error."""

from __future__ import annotations

import json
import os
import re
import subprocess
import time
from typing import Any, Callable, Dict, List, Tuple


import mnemon
from conftest import neural_embedder, require_binary

NS = "doors"


class Ref:
    """The value of `field` in the answer of step `step` (each door reads
    its own earlier answers)."""

    def __init__(self, step: int, field: str):
        self.step, self.field = step, field


def resolved(args: Dict[str, Any], answers: List[Any]) -> Dict[str, Any]:
    return {k: answers[v.step][v.field] if isinstance(v, Ref) else v for k, v in args.items()}

# (operation, arguments) in the surface's own names.
SCENARIO: List[Tuple[str, Dict[str, Any]]] = [
    ("remember", {"content": "Lives in Porto", "key": "user.city"}),
    ("remember", {"content": "Lives in Lisbon", "key": "user.city"}),
    ("remember", {"content": "Allergic to peanuts"}),
    ("remember", {"content": "喜欢喝乌龙茶", "kind": "preference"}),
    ("recall", {"query": "Which city does the user live in?", "top_k": 3, "record_access": False}),
    ("context", {"query": "What should I cook for dinner tonight?", "budget_tokens": 300, "record_access": False}),
    ("history", {"id": Ref(1, "id")}),
    ("forget", {"id": Ref(2, "id"), "reason": "user asked"}),
    ("recall", {"query": "peanut allergy", "top_k": 3, "record_access": False}),
    ("get", {"id": Ref(2, "id")}),
]

CLOCK_KEYS = {"first_seen", "last_access", "recorded_from", "recorded_to", "valid_from", "valid_to", "at", "time"}
DATE = re.compile(r"\d{4}-\d{2}-\d{2}([T ][0-9:.]+Z?)?")


def clockless(v: Any) -> Any:
    """`v` without the clock: time fields dropped, dates in text masked,
    scores rounded (each door prints the same f32)."""
    if isinstance(v, dict):
        return {k: clockless(x) for k, x in v.items() if k not in CLOCK_KEYS}
    if isinstance(v, list):
        return [clockless(x) for x in v]
    if isinstance(v, str):
        return DATE.sub("<date>", v)
    if isinstance(v, float):
        return round(v, 5)
    return v


def error(code: str, field: Any) -> Dict[str, Any]:
    return {"error": {"code": code, "field": field}}


# --- the doors ----------------------------------------------------------------


def run_python(data, embedder) -> List[Any]:
    out = []
    with mnemon.Engine.open(data, embedder=embedder) as e:
        for op, a in SCENARIO:
            a = resolved(a, out)
            try:
                if op == "remember":
                    r = e.remember(NS, a["content"], key=a.get("key"), kind=a.get("kind"))
                elif op == "recall":
                    r = e.recall(NS, a["query"], top_k=a["top_k"], record_access=a["record_access"])
                elif op == "context":
                    r = e.context(NS, a["query"], budget_tokens=a["budget_tokens"], record_access=a["record_access"])
                elif op == "history":
                    r = e.history(NS, a["id"])
                elif op == "forget":
                    r = e.forget(NS, id=a["id"], reason=a["reason"])
                elif op == "get":
                    r = e.get(NS, a["id"])
                out.append(r.to_dict())
            except mnemon.MnemonError as x:
                out.append(error(x.code, x.field))
    return out


def cli_args(op: str, a: Dict[str, Any]) -> List[str]:
    base = [op, "--namespace", NS]
    if op == "remember":
        return base + sum((["--" + k, v] for k, v in a.items() if k != "content"), []) + [a["content"]]
    if op in ("recall", "context"):
        extra = ["--top-k", str(a["top_k"])] if "top_k" in a else ["--budget-tokens", str(a["budget_tokens"])]
        return base + extra + ["--no-record-access", a["query"]]
    if op in ("history", "get"):
        return base + [str(a["id"])]
    if op == "forget":
        return base + ["--id", str(a["id"]), "--reason", a["reason"]]
    raise AssertionError(op)


def run_cli(data, embedder) -> List[Any]:
    out = []
    for op, a in SCENARIO:
        a = resolved(a, out)
        p = subprocess.run(
            [str(require_binary()), "--data", str(data), "--embedder", embedder, "--json", *cli_args(op, a)],
            capture_output=True,
            text=True,
            timeout=300,
        )
        if p.returncode == 0:
            out.append(json.loads(p.stdout))
        else:
            e = json.loads(p.stdout or p.stderr)["error"]
            out.append(error(e["code"], e.get("field")))
    return out


def run_mcp(data, embedder) -> List[Any]:
    import anyio
    import mcp
    from mcp.client.stdio import StdioServerParameters

    params = StdioServerParameters(
        command=str(require_binary()),
        args=["--data", str(data), "--embedder", embedder, "mcp"],
        env=dict(os.environ),
    )

    async def main() -> List[Any]:
        out = []
        async with mcp.Client(params) as client:
            for op, a in SCENARIO:
                a = resolved(a, out)
                r = await client.call_tool(f"memory_{op}", {"namespace": NS, **a})
                if r.is_error:
                    e = json.loads(r.content[0].text)["error"]
                    out.append(error(e["code"], e.get("field")))
                else:
                    out.append(r.structured_content)
        return out

    return anyio.run(main)


def rest_call(c, op: str, a: Dict[str, Any]):
    base = f"/v1/namespaces/{NS}"
    if op == "remember":
        return c.post(f"{base}/memories", json=a)
    if op in ("recall", "context"):
        return c.post(f"{base}/{op}", json=a)
    if op == "history":
        return c.get(f"{base}/memories/{a['id']}/history")
    if op == "get":
        return c.get(f"{base}/memories/{a['id']}")
    if op == "forget":
        return c.delete(f"{base}/memories/{a['id']}", params={"reason": a["reason"]})
    raise AssertionError(op)


def run_rest(data, embedder) -> List[Any]:
    import httpx
    proc = subprocess.Popen(
        [str(require_binary()), "--data", str(data), "--embedder", embedder, "serve", "--listen", "127.0.0.1:0"],
        stdin=subprocess.DEVNULL,
        stdout=subprocess.DEVNULL,
        stderr=subprocess.PIPE,
        text=True,
    )
    try:
        base = None
        deadline = time.monotonic() + 120
        while base is None and time.monotonic() < deadline:
            line = proc.stderr.readline()
            assert line, "mnemon serve exited"
            if line.startswith("mnemon: REST on "):
                base = line.split()[3].removesuffix("/v1")
        assert base, "mnemon serve did not start"
        out = []
        with httpx.Client(base_url=base, timeout=120) as c:
            for op, a in SCENARIO:
                r = rest_call(c, op, resolved(a, out))
                body = r.json()
                if r.status_code >= 400:
                    out.append(error(body["error"]["code"], body["error"].get("field")))
                else:
                    out.append(body)
        return out
    finally:
        proc.terminate()
        proc.wait(timeout=60)


NODE_SCRIPT = os.path.join(os.path.dirname(__file__), "..", "..", "node", "test", "fixtures", "doors.mjs")
NODE_BUILT = os.path.join(os.path.dirname(__file__), "..", "..", "node", "dist", "index.js")


def run_node(data, embedder) -> List[Any]:
    """The scenario through the Node package's typed methods
    (node/test/fixtures/doors.mjs), in a Node process."""
    scenario = [[op, {k: {"$ref": [v.step, v.field]} if isinstance(v, Ref) else v for k, v in a.items()}] for op, a in SCENARIO]
    done = subprocess.run(
        ["node", NODE_SCRIPT, str(data), embedder, NS],
        input=json.dumps(scenario),
        capture_output=True,
        text=True,
        timeout=300,
    )
    assert done.returncode == 0, done.stderr
    return json.loads(done.stdout)


DOORS: Dict[str, Callable[[Any, str], List[Any]]] = {
    "cli": run_cli,
    "mcp": run_mcp,
    "rest": run_rest,
}
if os.path.exists(NODE_BUILT) or os.environ.get("MNEMON_REQUIRE_NODE") == "1":
    DOORS["node"] = run_node


def test_every_door_gives_the_same_answers(tmp_path):
    embedder = neural_embedder()
    reference = [clockless(x) for x in run_python(tmp_path / "python", embedder)]
    # The scenario itself: the keyed change, recall, the block, the chain, the forget.
    assert reference[1]["action"] == "superseded"
    assert reference[4]["hits"][0]["content"] == "Lives in Lisbon"
    assert "Lives in Lisbon" in reference[5]["context"] and "Lives in Porto" not in reference[5]["context"]
    assert [v["content"] for v in reference[6]["versions"]] == ["Lives in Porto", "Lives in Lisbon"]
    forgotten = reference[2]["id"]
    assert reference[7]["memory_ids"] == [forgotten]
    assert all(h["id"] != forgotten for h in reference[8]["hits"])
    assert reference[9] == error("not_found", "id")
    for name, run in DOORS.items():
        got = [clockless(x) for x in run(tmp_path / name, embedder)]
        assert len(got) == len(reference), f"{name}: {len(got)} answers for {len(reference)} steps"
        for i, ((op, _), want, have) in enumerate(zip(SCENARIO, reference, got)):
            assert have == want, f"{name}: step {i} ({op}) differs from Python"


# --- the framework adapters ---------------------------------------------------
#
# An adapter stores turns (observations, and the memories drawn from them),
# not keyed facts, so its part of the scenario is: store the same turns,
# read them back through the adapter and through the Python door on the
# same namespace (the answers must be equal), forget through the adapter,
# and find the forgotten turn gone from the Python door's recall.

TURNS = [
    ("user", "I moved to Lisbon last month"),
    ("assistant", "Welcome to Lisbon! How do you like it?"),
    ("user", "I am allergic to peanuts"),
    ("user", "我喜欢喝乌龙茶"),
]
QUERY = "Which city did I move to?"


def contents(recall: Any) -> List[str]:
    return [h.content for h in recall.hits]


def test_adk_memory_service_answers_as_the_python_door(tmp_path):
    import asyncio

    from google.adk.events.event import Event
    from google.adk.sessions import InMemorySessionService
    from google.genai import types

    from mnemon.adapters.adk import MnemonMemoryService

    async def scenario(engine: mnemon.Engine) -> None:
        sessions = InMemorySessionService()
        session = await sessions.create_session(app_name="doors", user_id="u1", session_id="s1")
        for i, (role, text) in enumerate(TURNS):
            content = types.Content(role="user" if role == "user" else "model", parts=[types.Part(text=text)])
            author = "user" if role == "user" else "agent"
            await sessions.append_event(
                session, Event(author=author, invocation_id="i", timestamp=1_780_000_000.0 + i, content=content)
            )
        service = MnemonMemoryService(engine)
        await service.add_session_to_memory(session)
        ns = service.namespace("doors", "u1")
        found = (await service.search_memory(app_name="doors", user_id="u1", query=QUERY)).memories
        texts = [" ".join(p.text for p in m.content.parts if p.text) for m in found]
        direct = contents(engine.recall(ns, QUERY, top_k=len(texts), record_access=False))
        assert texts == direct
        assert texts[0] == "I moved to Lisbon last month"
        await service.delete_memory(app_name="doors", user_id="u1", memory_id=found[0].id)
        assert "I moved to Lisbon last month" not in contents(engine.recall(ns, QUERY, record_access=False))

    with mnemon.Engine.open(tmp_path / "adk", embedder=neural_embedder()) as engine:
        asyncio.run(scenario(engine))


def test_llama_index_block_is_the_python_doors_context(tmp_path):
    import asyncio

    from llama_index.core.base.llms.types import ChatMessage

    from mnemon.adapters.llama_index import MnemonMemoryBlock

    with mnemon.Engine.open(tmp_path / "li", embedder=neural_embedder()) as engine:
        block = MnemonMemoryBlock(engine=engine, user_id="u1", session_id="s1")
        asyncio.run(block.aput([ChatMessage(role=r, content=t) for r, t in TURNS]))
        text = asyncio.run(block.aget([ChatMessage(role="user", content=QUERY)]))
        direct = engine.context(block.namespace, QUERY, budget_tokens=block.budget_tokens, current_session="s1")
        assert text == direct.context
        assert "I moved to Lisbon last month" in text


def test_agents_session_turns_are_what_the_python_door_recalls(tmp_path):
    import asyncio

    from mnemon.adapters.openai_agents import MnemonSession

    items = [{"role": r, "content": t} for r, t in TURNS]

    async def scenario(engine: mnemon.Engine) -> None:
        session = MnemonSession("s1", engine, user_id="u1")
        await session.add_items(items)
        assert await session.get_items() == items
        hits = contents(engine.recall(session.namespace, QUERY, record_access=False))
        assert hits[0] == "I moved to Lisbon last month"
        assert await session.pop_item() == items[-1]
        assert "我喜欢喝乌龙茶" not in contents(engine.recall(session.namespace, "乌龙茶", record_access=False))
        await session.clear_session()
        assert await session.get_items() == []
        assert contents(engine.recall(session.namespace, QUERY, record_access=False)) == []

    with mnemon.Engine.open(tmp_path / "oa", embedder=neural_embedder()) as engine:
        asyncio.run(scenario(engine))

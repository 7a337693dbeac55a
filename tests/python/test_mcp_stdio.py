"""`mnemon mcp` over stdio, driven by the official MCP Python SDK: the tool
list and its size, every tool (the SDK checks each result's structured
content against the tool's output schema), compact recall results, tool
name prefixes, and bad input (each a clear error, nothing written)."""

import json

import pytest
from mcp import Client
from mcp.shared.exceptions import MCPError

from conftest import cli_json, estimate_tokens, fails, ok, stdio_server

OPS = [
    "remember",
    "observe",
    "recall",
    "context",
    "get",
    "history",
    "list",
    "forget",
    "forget_user",
    "extraction_prompt",
    "apply_extraction",
]
TOOLS = [f"memory_{op}" for op in OPS]
MAX_TOOL_TOKENS = 2100


@pytest.mark.anyio
async def test_tool_list_is_small_and_annotated(data):
    async with Client(stdio_server(data)) as client:
        listed = await client.list_tools()
    tools = {t.name: t for t in listed.tools}
    assert list(tools) == TOOLS
    wire = json.dumps(listed.model_dump(by_alias=True, exclude_none=True, mode="json")["tools"], ensure_ascii=False)
    tokens = estimate_tokens(json.dumps({"tools": json.loads(wire)}, separators=(",", ":"), ensure_ascii=False))
    print(f"tool definitions: {len(tools)} tools, {tokens} tokens")
    assert tokens <= MAX_TOOL_TOKENS
    assert tools["memory_forget"].annotations.destructive_hint is True
    assert tools["memory_apply_extraction"].annotations.destructive_hint is True
    for read in ["recall", "context", "get", "history", "list", "extraction_prompt"]:
        assert tools[f"memory_{read}"].annotations.read_only_hint is True, read
    assert not tools["memory_remember"].annotations.read_only_hint
    assert tools["memory_remember"].annotations.destructive_hint is False
    assert set(tools["memory_recall"].input_schema["required"]) == {"namespace", "query"}
    for name, t in tools.items():
        # What it is for, with one example call; an object output schema.
        example = json.loads(t.description.split("Example: ", 1)[1])
        # A tool over a set of namespaces names them all, never one.
        assert example.get("namespaces") if "namespaces" in t.input_schema["properties"] else example["namespace"], name
        assert t.output_schema and t.output_schema["type"] == "object", name


@pytest.mark.anyio
async def test_every_tool(data):
    async with Client(stdio_server(data)) as c:
        obs = await ok(c, "memory_observe", {"namespace": "u", "session": "s1", "role": "user", "text": "User: my boat is called Sea Biscuit"})
        r1 = await ok(c, "memory_remember", {"namespace": "u", "content": "Prefers oolong tea", "kind": "preference", "key": "user.drink", "importance": 0.8})
        assert r1["action"] == "created"
        r2 = await ok(c, "memory_remember", {"namespace": "u", "content": "Prefers green tea", "key": "user.drink"})
        assert r2["action"] == "superseded" and r2["old"] == r1["id"]
        hits = await ok(c, "memory_recall", {"namespace": "u", "query": "which tea", "top_k": 5})
        assert [h["content"] for h in hits["hits"]] == ["Prefers green tea"]
        assert set(hits["hits"][0]) == {"id", "content", "score", "why"}
        hits = await ok(c, "memory_recall", {"namespace": "u", "query": "which tea", "include_superseded": True, "mode": "lexical"})
        assert len(hits["hits"]) == 2
        # A question naming a time is read against reference_time (accepted,
        # not listed): the span comes back, and the hit from then scores it.
        await ok(c, "memory_remember", {"namespace": "t", "content": "Visited the British museum with Rachel", "event_time": "2023-01-28T10:00:00Z"})
        await ok(c, "memory_remember", {"namespace": "t", "content": "Visited the Louvre museum with Ana", "event_time": "2023-03-10T10:00:00Z"})
        timed = await ok(c, "memory_recall", {"namespace": "t", "query": "Which museum did I visit two months ago?", "reference_time": "2023-04-01T09:00:00Z", "explain": True})
        span = {"from": "2023-01-17T00:00:00Z", "to": "2023-02-17T00:00:00Z", "phrase": "two months ago"}
        assert timed["query_time"] == {**span, "spans": [span]}
        assert timed["hits"][0]["content"] == timed["hits"][0]["memory"]["content"] == "Visited the British museum with Rachel"
        assert timed["hits"][0]["explain"]["time"] == 1.0
        ctx = await ok(c, "memory_context", {"namespace": "u", "query": "tea", "budget_tokens": 120})
        assert "Prefers green tea" in ctx["context"] and ctx["tokens"] <= 120
        m = await ok(c, "memory_get", {"namespace": "u", "id": r2["id"]})
        assert m["prev"] == r1["id"] and m["status"] == "active"
        old = await ok(c, "memory_get", {"namespace": "u", "id": r1["id"], "as_of": {"seq": r1["id"]}})
        assert old["status"] == "active"
        h = await ok(c, "memory_history", {"namespace": "u", "id": r1["id"]})
        assert [v["content"] for v in h["versions"]] == ["Prefers oolong tea", "Prefers green tea"]
        page = await ok(c, "memory_list", {"namespace": "u", "include_superseded": True, "limit": 1})
        rest = await ok(c, "memory_list", {"namespace": "u", "include_superseded": True, "cursor": page["next_cursor"]})
        assert [m["id"] for m in page["memories"] + rest["memories"]] == [r1["id"], r2["id"]]
        prompt = await ok(c, "memory_extraction_prompt", {"namespace": "u", "session": "s1", "lang": "en"})
        assert "Sea Biscuit" in prompt["prompt"]
        doc = {"new_memories": [{"content": "Owns a boat named Sea Biscuit", "kind": "fact", "source_ids": [obs["observation_id"]]}]}
        rep = await ok(c, "memory_apply_extraction", {"namespace": "u", "extraction": doc})
        assert rep["items"][0]["status"] == "applied"
        dry = await ok(c, "memory_forget", {"namespace": "u", "matching": "Owns a boat named Sea Biscuit", "dry_run": True})
        assert dry["dry_run"] is True and dry["memories"] == 1
        assert dry["preview"][0]["content"] == "Owns a boat named Sea Biscuit"
        gone = await ok(c, "memory_forget", {"namespace": "u", "id": r2["id"], "reason": "user asked"})
        assert gone["memories"] == 2
        e = await fails(c, "memory_get", {"namespace": "u", "id": r2["id"]})
        assert e["code"] == "not_found"
    listed = cli_json(data, "list", "--namespace", "u", "--include-superseded")
    assert [m["content"] for m in listed["memories"]] == ["Owns a boat named Sea Biscuit"]
    assert cli_json(data, "check")["consistent"] is True


BAD = [
    ("memory_remember", {"namespace": "u"}, "invalid_input", "content"),
    ("memory_remember", {"namespace": "u", "content": 12}, "invalid_input", "content"),
    ("memory_remember", {"namespace": "u", "content": ["a"]}, "invalid_input", "content"),
    ("memory_remember", {"namespace": "u", "content": "x", "importance": "high"}, "invalid_input", "importance"),
    ("memory_remember", {"namespace": "u", "content": "x", "importance": 7}, "invalid_input", "importance"),
    ("memory_remember", {"namespace": "u", "content": "x", "tier": "eternal"}, "invalid_input", "tier"),
    ("memory_remember", {"namespace": "u", "content": "x", "entities": "Tea"}, "invalid_input", "entities"),
    ("memory_remember", {"namespace": "u", "content": "x" * 40000}, "invalid_input", "content"),
    ("memory_remember", {"namespace": "u u", "content": "x"}, "invalid_input", "namespace"),
    ("memory_remember", {"namespace": "x" * 200, "content": "x"}, "invalid_input", "namespace"),
    ("memory_remember", {"namespace": 5, "content": "x"}, "invalid_input", "namespace"),
    ("memory_remember", {"content": "x"}, "invalid_input", "namespace"),
    ("memory_remember", {"namespace": "u", "content": "x", "colour": "red"}, "invalid_input", "colour"),
    ("memory_observe", {"namespace": "u", "session": "s", "text": "hi", "role": "robot"}, "invalid_input", "role"),
    ("memory_recall", {"namespace": "u", "query": "x", "top_k": "ten"}, "invalid_input", "top_k"),
    ("memory_recall", {"namespace": "u", "query": "x", "top_k": 0}, "invalid_input", "top_k"),
    ("memory_recall", {"namespace": "u", "query": "x", "as_of": "yesterday"}, "invalid_input", "as_of"),
    ("memory_recall", {"namespace": "u", "query": "x", "reference_time": "last tuesday"}, "invalid_input", "reference_time"),
    ("memory_recall", {"namespace": "u", "query": ""}, "invalid_input", "query"),
    ("memory_context", {"namespace": "u", "query": "x", "budget_tokens": 10**9}, "invalid_input", "budget_tokens"),
    ("memory_list", {"namespace": "u", "cursor": "not-a-cursor"}, "invalid_input", "cursor"),
    ("memory_forget", {"namespace": "u"}, "invalid_input", "target"),
    ("memory_forget", {"namespace": "u", "id": "one"}, "invalid_input", "id"),
    ("memory_apply_extraction", {"namespace": "u", "extraction": 3}, "invalid_input", "extraction"),
]


@pytest.mark.anyio
async def test_bad_input_is_a_clear_error_and_writes_nothing(data):
    async with Client(stdio_server(data)) as c:
        await ok(c, "memory_remember", {"namespace": "u", "content": "The only memory"})
        for tool, args, code, field in BAD:
            e = await fails(c, tool, args)
            assert e["code"] == code, (tool, args, e)
            assert e["field"] == field, (tool, args, e)
            # The message names the field and does not repeat the code.
            assert e["message"].startswith(field) and "invalid input" not in e["message"], e
        with pytest.raises(MCPError, match="unknown tool"):
            await c.call_tool("teleport", {"namespace": "u"})
        listed = await ok(c, "memory_list", {"namespace": "u", "include_superseded": True, "include_quarantined": True})
        assert [m["content"] for m in listed["memories"]] == ["The only memory"]
    stats = cli_json(data, "stats")
    assert stats["events"]["extracted"] == 1 and stats["events"]["observed"] == 0


@pytest.mark.anyio
async def test_one_namespace_server(data):
    async with Client(stdio_server(data, "--namespace", "alice")) as c:
        listed = await c.list_tools()
        assert all("namespace" not in t.input_schema.get("properties", {}) for t in listed.tools)
        assert all('"namespace"' not in t.description for t in listed.tools)
        assert "namespace" not in (c.instructions or "")
        await ok(c, "memory_remember", {"content": "Alice plays the cello"})
        e = await fails(c, "memory_remember", {"namespace": "bob", "content": "Bob plays drums"})
        assert e["code"] == "namespace_not_allowed"
        got = await ok(c, "memory_recall", {"query": "cello", "explain": True})
        assert got["hits"][0]["memory"]["namespace"] == "alice"
    assert cli_json(data, "stats")["active_memories"] == 1


@pytest.mark.anyio
async def test_recall_is_compact_unless_explained(data):
    async with Client(stdio_server(data, "--namespace", "u")) as c:
        for m in [
            "Prefers aisle seats on long flights",
            "Lives in Lisbon since 2023",
            "Works as a nurse at the city hospital",
            "Allergic to peanuts and tree nuts",
            "Has a dog named Biscuit who hates flights",
        ]:
            await ok(c, "memory_remember", {"content": m})
        q = "flights, home town, work, allergies, pets"
        compact = await ok(c, "memory_recall", {"query": q, "top_k": 5})
        assert len(compact["hits"]) == 5
        tokens = estimate_tokens(json.dumps(compact, separators=(",", ":"), ensure_ascii=False))
        print(f"five compact recall hits: {tokens} tokens")
        assert tokens <= 400, compact
        full = await ok(c, "memory_recall", {"query": q, "top_k": 5, "explain": True})
        assert [h["id"] for h in full["hits"]] == [h["id"] for h in compact["hits"]]
        assert all(h["memory"]["content"] == h["content"] and "similarity" in h["explain"] for h in full["hits"])


@pytest.mark.anyio
async def test_tool_names_take_the_chosen_prefix(data):
    async with Client(stdio_server(data, "--tool-prefix", "")) as c:
        listed = await c.list_tools()
        assert [t.name for t in listed.tools] == OPS
        assert "call context (or recall)" in (c.instructions or "")
        await ok(c, "remember", {"namespace": "u", "content": "Named without a prefix"})
    async with Client(stdio_server(data, "--tool-prefix", "mnemon.")) as c:
        listed = await c.list_tools()
        assert [t.name for t in listed.tools] == [f"mnemon.{op}" for op in OPS]
        r = await ok(c, "mnemon.recall", {"namespace": "u", "query": "prefix"})
        assert r["hits"][0]["content"] == "Named without a prefix"


@pytest.fixture
def anyio_backend():
    return "asyncio"

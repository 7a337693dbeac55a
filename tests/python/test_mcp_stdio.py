"""`mnemon mcp` over stdio, driven by the official MCP Python SDK: the tool
list and its size, every tool, and bad input (each a clear error, nothing
written)."""

import json

import pytest
from mcp import Client
from mcp.shared.exceptions import MCPError

from conftest import cli_json, estimate_tokens, fails, ok, stdio_server

TOOLS = [
    "remember",
    "observe",
    "recall",
    "context",
    "get",
    "history",
    "list",
    "forget",
    "extraction_prompt",
    "apply_extraction",
]
MAX_TOOL_TOKENS = 2000


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
    assert tools["forget"].annotations.destructive_hint is True
    assert tools["apply_extraction"].annotations.destructive_hint is True
    for read in ["recall", "context", "get", "history", "list", "extraction_prompt"]:
        assert tools[read].annotations.read_only_hint is True, read
    assert not tools["remember"].annotations.read_only_hint
    assert tools["remember"].annotations.destructive_hint is False
    assert set(tools["recall"].input_schema["required"]) == {"namespace", "query"}


@pytest.mark.anyio
async def test_every_tool(data):
    async with Client(stdio_server(data)) as c:
        obs = await ok(c, "observe", {"namespace": "u", "session": "s1", "role": "user", "text": "User: my boat is called Sea Biscuit"})
        r1 = await ok(c, "remember", {"namespace": "u", "content": "Prefers oolong tea", "kind": "preference", "key": "user.drink", "importance": 0.8})
        assert r1["action"] == "created"
        r2 = await ok(c, "remember", {"namespace": "u", "content": "Prefers green tea", "key": "user.drink"})
        assert r2["action"] == "superseded" and r2["old"] == r1["id"]
        hits = await ok(c, "recall", {"namespace": "u", "query": "which tea", "top_k": 5})
        assert [h["memory"]["content"] for h in hits["hits"]] == ["Prefers green tea"]
        hits = await ok(c, "recall", {"namespace": "u", "query": "which tea", "include_superseded": True, "mode": "lexical"})
        assert len(hits["hits"]) == 2
        # A question naming a time is read against reference_time (accepted,
        # not listed): the span comes back, and the hit from then scores it.
        await ok(c, "remember", {"namespace": "t", "content": "Visited the British museum with Rachel", "event_time": "2023-01-28T10:00:00Z"})
        await ok(c, "remember", {"namespace": "t", "content": "Visited the Louvre museum with Ana", "event_time": "2023-03-10T10:00:00Z"})
        timed = await ok(c, "recall", {"namespace": "t", "query": "Which museum did I visit two months ago?", "reference_time": "2023-04-01T09:00:00Z"})
        span = {"from": "2023-01-17T00:00:00Z", "to": "2023-02-17T00:00:00Z", "phrase": "two months ago"}
        assert timed["query_time"] == {**span, "spans": [span]}
        assert timed["hits"][0]["memory"]["content"] == "Visited the British museum with Rachel"
        assert timed["hits"][0]["explain"]["time"] == 1.0
        ctx = await ok(c, "context", {"namespace": "u", "query": "tea", "budget_tokens": 120})
        assert "Prefers green tea" in ctx["context"] and ctx["tokens"] <= 120
        m = await ok(c, "get", {"namespace": "u", "id": r2["id"]})
        assert m["prev"] == r1["id"] and m["status"] == "active"
        old = await ok(c, "get", {"namespace": "u", "id": r1["id"], "as_of": {"seq": r1["id"]}})
        assert old["status"] == "active"
        h = await ok(c, "history", {"namespace": "u", "id": r1["id"]})
        assert [v["content"] for v in h["versions"]] == ["Prefers oolong tea", "Prefers green tea"]
        page = await ok(c, "list", {"namespace": "u", "include_superseded": True, "limit": 1})
        rest = await ok(c, "list", {"namespace": "u", "include_superseded": True, "cursor": page["next_cursor"]})
        assert [m["id"] for m in page["memories"] + rest["memories"]] == [r1["id"], r2["id"]]
        prompt = await ok(c, "extraction_prompt", {"namespace": "u", "session": "s1", "lang": "en"})
        assert "Sea Biscuit" in prompt["prompt"]
        doc = {"new_memories": [{"content": "Owns a boat named Sea Biscuit", "kind": "fact", "source_ids": [obs["observation_id"]]}]}
        rep = await ok(c, "apply_extraction", {"namespace": "u", "extraction": doc})
        assert rep["items"][0]["status"] == "applied"
        dry = await ok(c, "forget", {"namespace": "u", "matching": "Owns a boat named Sea Biscuit", "dry_run": True})
        assert dry["dry_run"] is True and dry["memories"] == 1
        assert dry["preview"][0]["content"] == "Owns a boat named Sea Biscuit"
        gone = await ok(c, "forget", {"namespace": "u", "id": r2["id"], "reason": "user asked"})
        assert gone["memories"] == 2
        e = await fails(c, "get", {"namespace": "u", "id": r2["id"]})
        assert e["code"] == "not_found"
    listed = cli_json(data, "list", "--ns", "u", "--all")
    assert [m["content"] for m in listed["memories"]] == ["Owns a boat named Sea Biscuit"]
    assert cli_json(data, "check")["consistent"] is True


BAD = [
    ("remember", {"namespace": "u"}, "invalid_input", "content"),
    ("remember", {"namespace": "u", "content": 12}, "invalid_input", "content"),
    ("remember", {"namespace": "u", "content": ["a"]}, "invalid_input", "content"),
    ("remember", {"namespace": "u", "content": "x", "importance": "high"}, "invalid_input", "importance"),
    ("remember", {"namespace": "u", "content": "x", "importance": 7}, "invalid_input", "importance"),
    ("remember", {"namespace": "u", "content": "x", "tier": "eternal"}, "invalid_input", "tier"),
    ("remember", {"namespace": "u", "content": "x", "entities": "Tea"}, "invalid_input", "entities"),
    ("remember", {"namespace": "u", "content": "x" * 40000}, "invalid_input", "content"),
    ("remember", {"namespace": "u u", "content": "x"}, "invalid_input", "namespace"),
    ("remember", {"namespace": "x" * 200, "content": "x"}, "invalid_input", "namespace"),
    ("remember", {"namespace": 5, "content": "x"}, "invalid_input", "namespace"),
    ("remember", {"content": "x"}, "invalid_input", "namespace"),
    ("remember", {"namespace": "u", "content": "x", "colour": "red"}, "invalid_input", "colour"),
    ("observe", {"namespace": "u", "session": "s", "text": "hi", "role": "robot"}, "invalid_input", "role"),
    ("recall", {"namespace": "u", "query": "x", "top_k": "ten"}, "invalid_input", "top_k"),
    ("recall", {"namespace": "u", "query": "x", "top_k": 0}, "invalid_input", "top_k"),
    ("recall", {"namespace": "u", "query": "x", "as_of": "yesterday"}, "invalid_input", "as_of"),
    ("recall", {"namespace": "u", "query": "x", "reference_time": "last tuesday"}, "invalid_input", "reference_time"),
    ("recall", {"namespace": "u", "query": ""}, "invalid_input", "query"),
    ("context", {"namespace": "u", "query": "x", "budget_tokens": 10**9}, "invalid_input", "budget_tokens"),
    ("list", {"namespace": "u", "cursor": "not-a-cursor"}, "invalid_input", "cursor"),
    ("forget", {"namespace": "u"}, "invalid_input", "target"),
    ("forget", {"namespace": "u", "id": "one"}, "invalid_input", "id"),
    ("apply_extraction", {"namespace": "u", "extraction": 3}, "invalid_input", "extraction"),
]


@pytest.mark.anyio
async def test_bad_input_is_a_clear_error_and_writes_nothing(data):
    async with Client(stdio_server(data)) as c:
        await ok(c, "remember", {"namespace": "u", "content": "The only memory"})
        for tool, args, code, field in BAD:
            e = await fails(c, tool, args)
            assert e["code"] == code, (tool, args, e)
            assert e["field"] == field, (tool, args, e)
            assert e["message"], e
        with pytest.raises(MCPError, match="unknown tool"):
            await c.call_tool("teleport", {"namespace": "u"})
        listed = await ok(c, "list", {"namespace": "u", "include_superseded": True, "include_quarantined": True})
        assert [m["content"] for m in listed["memories"]] == ["The only memory"]
    stats = cli_json(data, "stats")
    assert stats["events"]["extracted"] == 1 and stats["events"]["observed"] == 0


@pytest.mark.anyio
async def test_one_namespace_server(data):
    async with Client(stdio_server(data, "--ns", "alice")) as c:
        listed = await c.list_tools()
        assert all("namespace" not in t.input_schema.get("properties", {}) for t in listed.tools)
        await ok(c, "remember", {"content": "Alice plays the cello"})
        e = await fails(c, "remember", {"namespace": "bob", "content": "Bob plays drums"})
        assert e["code"] == "namespace_not_allowed"
        got = await ok(c, "recall", {"query": "cello"})
        assert got["hits"][0]["memory"]["namespace"] == "alice"
    assert cli_json(data, "stats")["active_memories"] == 1


@pytest.fixture
def anyio_backend():
    return "asyncio"

"""`mnemon serve` over streamable HTTP, driven by the official MCP Python
SDK: every tool, bearer tokens (missing or wrong: 401, nothing written),
body size limit, malformed requests, 8 concurrent clients, and shutdown."""

import json
import random
import signal

import anyio
import httpx2
import pytest
from mcp.shared.exceptions import MCPError

from conftest import HttpServer, cli, cli_json, fails, list_all, ok

CALL = {
    "jsonrpc": "2.0",
    "id": 1,
    "method": "tools/call",
    "params": {"name": "memory_remember", "arguments": {"namespace": "u", "content": "written without a token"}},
}
HEADERS = {"Content-Type": "application/json", "Accept": "application/json, text/event-stream"}


@pytest.fixture
def anyio_backend():
    return "asyncio"


def post(server, body, token=None, extra=None):
    headers = dict(HEADERS)
    if token is not None:
        headers["Authorization"] = f"Bearer {token}"
    headers.update(extra or {})
    return httpx2.post(server.url, content=body, headers=headers, timeout=30)


@pytest.mark.anyio
async def test_every_tool_over_http(http_server):
    async with http_server.client() as c:
        listed = await c.list_tools()
        assert len(listed.tools) == 11
        o = await ok(c, "memory_observe", {"namespace": "u", "session": "s1", "text": "User: I am allergic to peanuts"})
        r = await ok(c, "memory_remember", {"namespace": "u", "content": "Allergic to peanuts", "kind": "fact", "sources": [o["observation_id"]]})
        hits = await ok(c, "memory_recall", {"namespace": "u", "query": "peanut allergy"})
        assert hits["hits"][0]["id"] == r["id"]
        ctx = await ok(c, "memory_context", {"namespace": "u", "query": "peanut allergy"})
        assert "Allergic to peanuts" in ctx["context"]
        assert (await ok(c, "memory_get", {"namespace": "u", "id": r["id"]}))["sources"] == [o["observation_id"]]
        assert len((await ok(c, "memory_history", {"namespace": "u", "id": r["id"]}))["versions"]) == 1
        assert len((await ok(c, "memory_list", {"namespace": "u"}))["memories"]) == 1
        p = await ok(c, "memory_extraction_prompt", {"namespace": "u", "session": "s1", "lang": "zh"})
        assert "peanuts" in p["prompt"]
        rep = await ok(c, "memory_apply_extraction", {"namespace": "u", "extraction": json.dumps({"forget": [{"memory_id": r["id"], "reason": "test"}]})})
        assert rep["items"][0]["status"] == "applied"
        dry = await ok(c, "memory_forget", {"namespace": "u", "all": True, "dry_run": True})
        assert dry["observations"] == 1
        gone = await ok(c, "memory_forget_user", {"namespaces": ["u"], "reason": "account closed"})
        assert gone["namespaces"][0]["namespace"] == "u" and gone["namespaces"][0]["observations"] == 1, gone
        assert len((await ok(c, "memory_list", {"namespace": "u"}))["memories"]) == 0


def test_missing_or_wrong_token_is_401_and_writes_nothing(http_server, data):
    body = json.dumps(CALL)
    for token in [None, "wrong", http_server.token + "x", http_server.token[:-1]]:
        r = post(http_server, body, token)
        assert r.status_code == 401, (token, r.status_code, r.text)
        assert r.json()["error"]["message"].startswith("unauthorized")
        assert "Bearer" in r.headers["www-authenticate"]
    for header in [http_server.token, f"Basic {http_server.token}", f"bearer {http_server.token.upper()}"]:
        r = httpx2.post(http_server.url, content=body, headers={**HEADERS, "Authorization": header})
        assert r.status_code == 401, header
    # Nothing reached the store (the CLI reads through the server's socket).
    assert cli_json(data, "stats")["last_seq"] == 0


def test_bearer_scheme_in_any_case_and_foreign_origins_refused(http_server, data):
    init = {"jsonrpc": "2.0", "id": 1, "method": "initialize", "params": {"protocolVersion": "2025-06-18", "capabilities": {}, "clientInfo": {"name": "t", "version": "1"}}}
    for scheme in ["Bearer", "bearer", "BEARER"]:
        r = httpx2.post(http_server.url, content=json.dumps(init), headers={**HEADERS, "Authorization": f"{scheme} {http_server.token}"})
        assert r.status_code == 200, (scheme, r.status_code, r.text)
    for origin, status in [("http://localhost:3000", 200), ("https://evil.example", 403), ("null", 403)]:
        r = post(http_server, json.dumps(init), http_server.token, {"Origin": origin})
        assert r.status_code == status, (origin, r.status_code, r.text)
    r = post(http_server, json.dumps(CALL), http_server.token, {"Origin": "https://evil.example"})
    assert r.status_code == 403
    assert cli_json(data, "stats")["last_seq"] == 0


def test_ending_a_session_answers_as_the_sdk_expects(http_server):
    """DELETE ends a session: the SDK's `terminate_session` logs "Session
    termination failed" for anything but 200 or 204 (and 405: not
    supported); a session that is not open is 404."""
    auth = {"Authorization": f"Bearer {http_server.token}"}
    init = {"jsonrpc": "2.0", "id": 1, "method": "initialize", "params": {"protocolVersion": "2025-06-18", "capabilities": {}, "clientInfo": {"name": "t", "version": "1"}}}
    r = post(http_server, json.dumps(init), http_server.token)
    session = r.headers["mcp-session-id"]
    r = httpx2.delete(http_server.url, headers={**auth, "Mcp-Session-Id": session})
    assert r.status_code in (200, 204), r.status_code
    for gone in [session, "never-opened"]:
        r = httpx2.delete(http_server.url, headers={**auth, "Mcp-Session-Id": gone})
        assert r.status_code == 404, (gone, r.status_code, r.text)


@pytest.mark.anyio
async def test_sdk_client_with_a_wrong_token_fails(http_server):
    with pytest.raises(BaseException):
        async with http_server.client(token="wrong") as c:
            await c.list_tools()


def test_body_limit_and_malformed_requests(data):
    server = HttpServer(data, "--max-body-bytes", "65536")
    try:
        big = json.dumps({**CALL, "params": {"name": "memory_remember", "arguments": {"namespace": "u", "content": "x" * 100_000}}})
        r = post(server, big, server.token)
        assert r.status_code == 413, r.text
        assert r.json()["error"]["code"] == -32600
        for bad, code in [
            ("{not json", -32700),
            ("\x00\xff", -32700),
            ("", -32700),
            ("[]", -32600),
            ('[{"jsonrpc":"2.0","id":1,"method":"tools/list"}]', -32600),
            ('{"jsonrpc": "2.0", "id": 1}', -32600),
            ('{"jsonrpc":"2.0","id":1,"method":42}', -32600),
            ('{"jsonrpc":"1.0","id":1,"method":"tools/list"}', -32600),
        ]:
            r = post(server, bad, server.token)
            assert r.status_code == 400, (bad, r.status_code, r.text)
            assert r.json()["error"]["code"] == code, (bad, r.text)
        # Still serving, and nothing was written.
        assert server.proc.poll() is None
        assert cli_json(data, "stats")["last_seq"] == 0
    finally:
        assert server.stop() == 0


@pytest.mark.anyio
async def test_unknown_tool_and_wrong_types_over_http(http_server, data):
    async with http_server.client() as c:
        with pytest.raises(MCPError):
            await c.call_tool("drop_tables", {})
        e = await fails(c, "memory_recall", {"namespace": "u", "query": 5})
        assert (e["code"], e["field"]) == ("invalid_input", "query")
        e = await fails(c, "memory_remember", {"namespace": "../etc", "content": "x"})
        assert (e["code"], e["field"]) == ("invalid_input", "namespace")
    assert cli_json(data, "stats")["last_seq"] == 0


CLIENTS = 8
CALLS = 200


async def worker(server, n, acked, failures):
    rng = random.Random(n)
    mine = []
    async with server.client() as c:
        for i in range(CALLS):
            roll = rng.random()
            try:
                if roll < 0.4 or not mine:
                    text = f"client {n} call {i}: the {rng.choice(['red', 'blue', 'green'])} kite {rng.randrange(10**6)}"
                    r = await ok(c, "memory_remember", {"namespace": f"ns{n % 3}", "content": text, "dedup": "off"})
                    mine.append((f"ns{n % 3}", r["id"], text))
                elif roll < 0.55:
                    await ok(c, "memory_recall", {"namespace": f"ns{n % 3}", "query": "kite", "top_k": 5})
                elif roll < 0.65:
                    await ok(c, "memory_context", {"namespace": f"ns{n % 3}", "query": "red kite"})
                elif roll < 0.75:
                    await ok(c, "memory_list", {"namespace": f"ns{n % 3}", "limit": 20})
                elif roll < 0.85:
                    ns, mid, text = rng.choice(mine)
                    got = await ok(c, "memory_get", {"namespace": ns, "id": mid})
                    assert got["content"] == text
                elif roll < 0.9:
                    ns, mid, _ = rng.choice(mine)
                    await ok(c, "memory_history", {"namespace": ns, "id": mid})
                elif roll < 0.95:
                    await ok(c, "memory_observe", {"namespace": f"ns{n % 3}", "session": f"s{n}", "text": f"turn {i}"})
                else:
                    ns, mid, _ = rng.choice(mine)
                    await ok(c, "memory_forget", {"namespace": ns, "id": mid, "dry_run": True})
            except AssertionError as e:
                failures.append(f"client {n} call {i}: {e}")
    acked.extend(mine)


@pytest.mark.anyio
async def test_eight_clients_two_hundred_calls_each(http_server, data):
    acked, failures = [], []
    async with anyio.create_task_group() as tg:
        for n in range(CLIENTS):
            tg.start_soon(worker, http_server, n, acked, failures)
    assert failures == []
    assert len({a[1] for a in acked}) == len(acked), "two writes got one id"
    assert http_server.stop(signal.SIGTERM) == 0
    by_ns = {}
    for ns, mid, text in acked:
        by_ns.setdefault(ns, {})[mid] = text
    for ns, expected in by_ns.items():
        stored = list_all(data, ns)
        assert {k: stored.get(k) for k in expected} == expected
    check = cli(data, "check")
    assert "ok: projections equal a fresh replay" in check.stdout


def test_sigterm_with_writes_in_flight_keeps_every_acknowledged_write(data):
    server = HttpServer(data)
    acked = []

    async def writer():
        async with server.client() as c:
            for i in range(10_000):
                r = await c.call_tool("memory_remember", {"namespace": "u", "content": f"in flight {i}", "dedup": "off"})
                if r.is_error:
                    return
                acked.append(json.loads(r.content[0].text)["id"])

    async def main():
        async with anyio.create_task_group() as tg:
            tg.start_soon(writer)
            await anyio.sleep(1.0)
            server.proc.send_signal(signal.SIGTERM)

    try:
        anyio.run(main)
    except BaseException:
        pass  # the connection drops when the server exits
    assert server.stop() == 0
    assert acked, "no write was acknowledged before the signal"
    assert set(acked) <= set(list_all(data, "u"))
    assert "ok:" in cli(data, "check").stdout

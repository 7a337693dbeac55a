"""Recall latency through REST against MCP over HTTP, on one server, one
store, in one run.

Fills a fresh store with the first N LoCoMo turns as memories (`mnemon
import`), starts `mnemon serve`, then asks the same recall queries through
both doors from one keep-alive HTTP client (httpx), alternating them:

* REST: `POST /v1/namespaces/{ns}/recall`;
* MCP: a `tools/call` of `memory_recall` in an initialised streamable-HTTP
  session (JSON-RPC over `POST /mcp`).

Prints p50 and p95 of each and the ratio REST / MCP of the p50s.

    python tests/python/bench_rest.py [--memories N] [--queries Q] [--embedder E]

Data: `../shared/data/locomo10.json` or `$MNEMON_LOCOMO`. The embedder
defaults to `auto` (the installed model); `hashing` needs none.
"""

from __future__ import annotations

import argparse
import json
import os
import pathlib
import statistics
import subprocess
import sys
import tempfile
import time

import httpx

HERE = pathlib.Path(__file__).resolve().parent
sys.path.insert(0, str(HERE))

from conftest import BIN  # noqa: E402

ROOT = HERE.parents[1]
TOKEN = "bench-token"
NS = "bench"


def locomo(n: int):
    path = pathlib.Path(os.environ.get("MNEMON_LOCOMO", ROOT.parent / "shared" / "data" / "locomo10.json"))
    turns, questions = [], []
    for conv in json.loads(path.read_text()):
        c = conv["conversation"]
        for key in sorted(k for k in c if k.startswith("session_") and isinstance(c[k], list)):
            turns.extend(f"{t['speaker']}: {t['text']}" for t in c[key])
        questions.extend(q["question"] for q in conv.get("qa", []))
    return turns[:n], questions


def start(data: pathlib.Path, embedder: str):
    proc = subprocess.Popen(
        [BIN, "--data", str(data), "--embedder", embedder, "serve", "--listen", "127.0.0.1:0", "--token", TOKEN],
        stdin=subprocess.DEVNULL,
        stdout=subprocess.DEVNULL,
        stderr=subprocess.PIPE,
        text=True,
    )
    for line in proc.stderr:
        if line.startswith("mnemon: serving MCP on http://"):
            return proc, "http://" + line.strip().removeprefix("mnemon: serving MCP on http://").removesuffix("/mcp")
    raise SystemExit("mnemon serve did not start")


def mcp_session(c: httpx.Client) -> dict:
    accept = {"Accept": "application/json, text/event-stream"}
    r = c.post(
        "/mcp",
        headers=accept,
        json={
            "jsonrpc": "2.0",
            "id": 0,
            "method": "initialize",
            "params": {"protocolVersion": "2025-06-18", "capabilities": {}, "clientInfo": {"name": "bench", "version": "1"}},
        },
    )
    r.raise_for_status()
    headers = {**accept, "Mcp-Session-Id": r.headers["mcp-session-id"], "Mcp-Protocol-Version": "2025-06-18"}
    c.post("/mcp", headers=headers, json={"jsonrpc": "2.0", "method": "notifications/initialized"})
    return headers


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--memories", type=int, default=2000)
    ap.add_argument("--queries", type=int, default=300)
    ap.add_argument("--embedder", default="auto")
    a = ap.parse_args()
    turns, questions = locomo(a.memories)
    queries = (questions * (a.queries // max(len(questions), 1) + 1))[: a.queries]
    with tempfile.TemporaryDirectory() as tmp:
        data = pathlib.Path(tmp) / "data"
        records = pathlib.Path(tmp) / "turns.jsonl"
        records.write_text("".join(json.dumps({"type": "memory", "content": t}) + "\n" for t in turns))
        subprocess.run(
            [BIN, "--data", str(data), "--embedder", a.embedder, "import", "--ns", NS, str(records)],
            check=True,
            stdout=subprocess.DEVNULL,
        )
        proc, base = start(data, a.embedder)
        try:
            with httpx.Client(base_url=base, headers={"Authorization": f"Bearer {TOKEN}"}, timeout=60) as c:
                mcp = mcp_session(c)
                rest_ms, mcp_ms = [], []
                for i, q in enumerate(queries):
                    t0 = time.perf_counter()
                    r = c.post(f"/v1/namespaces/{NS}/recall", json={"query": q, "top_k": 10, "record_access": False})
                    r.raise_for_status()
                    rest_ms.append((time.perf_counter() - t0) * 1e3)
                    t0 = time.perf_counter()
                    r = c.post(
                        "/mcp",
                        headers=mcp,
                        json={
                            "jsonrpc": "2.0",
                            "id": i + 1,
                            "method": "tools/call",
                            "params": {
                                "name": "memory_recall",
                                "arguments": {"namespace": NS, "query": q, "top_k": 10, "record_access": False},
                            },
                        },
                    )
                    r.raise_for_status()
                    assert '"isError":true' not in r.text, r.text[:300]
                    mcp_ms.append((time.perf_counter() - t0) * 1e3)
        finally:
            proc.terminate()
            proc.wait(timeout=60)
    warm = len(queries) // 10
    rest_ms, mcp_ms = rest_ms[warm:], mcp_ms[warm:]

    def p(xs, q):
        return statistics.quantiles(xs, n=100)[q - 1]

    print(f"memories {len(turns)}, queries {len(rest_ms)} each (after {warm} warm-up), embedder {a.embedder}")
    print(f"REST recall: p50 {statistics.median(rest_ms):.2f} ms, p95 {p(rest_ms, 95):.2f} ms")
    print(f"MCP  recall: p50 {statistics.median(mcp_ms):.2f} ms, p95 {p(mcp_ms, 95):.2f} ms")
    print(f"ratio REST/MCP p50: {statistics.median(rest_ms) / statistics.median(mcp_ms):.3f}")


if __name__ == "__main__":
    main()

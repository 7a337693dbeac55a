"""Embedding providers against a real OpenAI-compatible server: llama.cpp's
own `llama-server` (from the PyPI wheel `xllamacpp`, prebuilt for CPU),
serving all-MiniLM-L6-v2 converted from the files `mnemon model install
minilm` put in place (`provider_server/st2gguf.py`).

A store is built and reopened through it from the CLI, the MCP server's
configuration and Python; the server is killed in the middle of an import
(no write is lost, the backlog is embedded once it is back); a wrong
dimension is refused with the provider named.

The rerank stage runs against the same server started with rank pooling
over MiniLM with an untrained scoring head (`st2gguf.py --rank-head`; no
trained cross-encoder is on PyPI): recall through the CLI, Python and the
MCP server's configuration is put in exactly the order, and with the
scores, that the server's own `/v1/rerank` gives the same candidates, and
keeps its own order while the server is down. 429 answers are covered by
`crates/mnemon/tests/provider.rs` (this server does not limit rates).

Skipped when xllamacpp or the MiniLM files are missing, a failure under
`MNEMON_REQUIRE_MODELS=1` (as `./scripts/test` sets).
"""

from __future__ import annotations

import json
import os
import pathlib
import socket
import subprocess
import sys
import time
import urllib.request
from typing import Iterator, Optional

import pytest

import mnemon

from conftest import require_binary

HERE = pathlib.Path(__file__).resolve().parent / "provider_server"
MODEL = "all-MiniLM-L6-v2"
RANK_MODEL = "minilm-rank-head"

FACTS = [
    "Alice is allergic to peanuts and carries an epinephrine pen",
    "The team standup moved to 9:30 on Tuesdays",
    "Bob prefers window seats on long flights",
    "The staging database lives on host pg-stage-2",
    "Carol's daughter starts school in September",
    "Dan drives a blue electric hatchback to work",
]
QUERIES = {
    "which food must Alice avoid": "peanuts",
    "where does the test database run": "pg-stage-2",
    "what seat does Bob like on a plane": "window seats",
}


def skip_or_fail(reason: str) -> None:
    if os.environ.get("MNEMON_REQUIRE_MODELS") == "1":
        pytest.fail(reason)
    pytest.skip(reason)


def models_dir() -> pathlib.Path:
    if os.environ.get("MNEMON_MODELS"):
        return pathlib.Path(os.environ["MNEMON_MODELS"])
    base = os.environ.get("XDG_DATA_HOME") or os.path.expanduser("~/.local/share")
    return pathlib.Path(base) / "mnemon" / "models"


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


class LlamaServer:
    """llama-server on a loopback port; stop and start it again at will."""

    def __init__(
        self, gguf: pathlib.Path, port: int, log: pathlib.Path, alias: str = MODEL, pooling: str = "mean"
    ) -> None:
        self.gguf, self.port, self.log = gguf, port, log
        self.alias, self.pooling = alias, pooling
        self.proc: Optional[subprocess.Popen] = None

    @property
    def url(self) -> str:
        return f"http://127.0.0.1:{self.port}/v1"

    def spec(self, options: str = "dims=384") -> str:
        return f"openai:{MODEL}@{self.url}" + (f"?{options}" if options else "")

    def start(self) -> None:
        with open(self.log, "ab") as log:
            self.proc = subprocess.Popen(
                [
                    sys.executable,
                    str(HERE / "serve.py"),
                    str(self.gguf),
                    str(self.port),
                    "--alias",
                    self.alias,
                    "--pooling",
                    self.pooling,
                ],
                stdout=log,
                stderr=subprocess.STDOUT,
                stdin=subprocess.DEVNULL,
            )
        deadline = time.monotonic() + 120
        while time.monotonic() < deadline:
            if self.proc.poll() is not None:
                pytest.fail(f"llama-server exited with {self.proc.returncode}:\n{self.log.read_text()[-3000:]}")
            try:
                with urllib.request.urlopen(f"http://127.0.0.1:{self.port}/health", timeout=2) as r:
                    if r.status == 200:
                        return
            except OSError:
                pass
            time.sleep(0.1)
        pytest.fail(f"llama-server not ready after 120 s:\n{self.log.read_text()[-3000:]}")

    def stop(self) -> None:
        if self.proc is not None and self.proc.poll() is None:
            self.proc.terminate()
            try:
                self.proc.wait(timeout=30)
            except subprocess.TimeoutExpired:
                self.proc.kill()
                self.proc.wait()
        self.proc = None


def minilm_gguf(work: pathlib.Path, *extra: str) -> pathlib.Path:
    """Converts the installed MiniLM to GGUF in `work` (skips, or fails
    under MNEMON_REQUIRE_MODELS=1, when the server or MiniLM is missing)."""
    try:
        import gguf  # noqa: F401
        import xllamacpp  # noqa: F401
    except ImportError as e:
        skip_or_fail(f"the embedding server is not installed ({e}): pip install -r python/requirements-test.txt")
    minilm = models_dir() / "minilm"
    if not (minilm / "model.safetensors").exists():
        skip_or_fail(f"all-MiniLM-L6-v2 is not installed in {minilm.parent}: run mnemon model install minilm")
    out = work / f"{MODEL}{''.join(extra)}.gguf"
    subprocess.run(
        [sys.executable, str(HERE / "st2gguf.py"), str(minilm), str(out), *extra], check=True, capture_output=True
    )
    return out


@pytest.fixture(scope="module")
def server(tmp_path_factory) -> Iterator[LlamaServer]:
    work = tmp_path_factory.mktemp("llama")
    s = LlamaServer(minilm_gguf(work), free_port(), work / "server.log")
    s.start()
    yield s
    s.stop()


@pytest.fixture(scope="module")
def rank_server(tmp_path_factory) -> Iterator[LlamaServer]:
    work = tmp_path_factory.mktemp("llama-rank")
    gguf = minilm_gguf(work, "--rank-head")
    s = LlamaServer(gguf, free_port(), work / "server.log", alias=RANK_MODEL, pooling="rank")
    s.start()
    yield s
    s.stop()


def run(data: pathlib.Path, *args: str, embedder: Optional[str] = None) -> subprocess.CompletedProcess:
    cmd = [str(require_binary()), "--data", str(data)]
    if embedder is not None:
        cmd += ["--embedder", embedder]
    p = subprocess.run(cmd + list(args), capture_output=True, text=True, timeout=300)
    assert p.returncode == 0, f"{cmd + list(args)}: {p.returncode}\n{p.stdout}\n{p.stderr}"
    return p


def top(data: pathlib.Path, query: str, embedder: Optional[str] = None) -> list:
    p = run(data, "recall", "--namespace", "u1", "--json", "--no-record-access", "--top-k", "3", query, embedder=embedder)
    return [h["content"] for h in json.loads(p.stdout)["hits"]]


def test_cli_builds_a_store_through_the_server_and_auto_reopens_it(server, tmp_path):
    data = tmp_path / "served"
    for fact in FACTS:
        run(data, "remember", "--namespace", "u1", fact, embedder=server.spec())
    stats = json.loads(run(data, "stats", "--json").stdout)
    assert stats["model_id"] == f"openai:{MODEL}@{server.url}#384"
    # Reopened under `auto` (no --embedder): the recorded provider answers.
    for query, needle in QUERIES.items():
        assert needle in top(data, query)[0], query
    # The served model is the built-in one: the same ranking.
    local = tmp_path / "local"
    for fact in FACTS:
        run(local, "remember", "--namespace", "u1", fact, embedder="minilm")
    for query in QUERIES:
        assert top(data, query) == top(local, query, embedder="minilm"), query


def test_mcp_server_configured_with_the_provider(server, tmp_path):
    """An MCP client's server configuration names the provider in `env`."""
    mcp = pytest.importorskip("mcp")
    import anyio
    from mcp.client.stdio import StdioServerParameters

    data = tmp_path / "mcp"
    env = {**os.environ, "MNEMON_EMBEDDER": server.spec(), "MNEMON_DATA": str(data)}
    params = StdioServerParameters(command=str(require_binary()), args=["mcp"], env=env)

    async def main() -> dict:
        async with mcp.Client(params) as client:
            for fact in FACTS:
                r = await client.call_tool("memory_remember", {"namespace": "u1", "content": fact})
                assert not r.is_error, r.content[0].text
            r = await client.call_tool("memory_recall", {"namespace": "u1", "query": "which food must Alice avoid"})
            assert not r.is_error, r.content[0].text
            return r.structured_content

    hits = anyio.run(main)["hits"]
    assert "peanuts" in hits[0]["content"]
    stats = json.loads(run(data, "stats", "--json").stdout)
    assert stats["model_id"] == f"openai:{MODEL}@{server.url}#384"


def test_a_server_killed_mid_import_loses_no_write(server, tmp_path):
    data = tmp_path / "import"
    texts = [f"Note {i}: {FACTS[i % len(FACTS)]}, item {i}" for i in range(24)]
    texts.append("The quarterly budget review is on the last Friday of March")
    with mnemon.Engine.open(data, embedder=server.spec("dims=384&retries=1")) as engine:
        acknowledged = []
        for i, t in enumerate(texts):
            if i == 8:
                server.stop()
            r = engine.remember("u1", t, dedup="off")
            acknowledged.append(r.id)
            assert r.vector_pending == (i >= 8), (i, r)
        assert engine.stats().embed_backlog == len(texts) - 8
        # Recall goes on by words while the server is down.
        hits = engine.recall("u1", "quarterly budget review", explain=True).hits
        assert hits[0].content == texts[-1] and hits[0].memory is not None
        server.start()
        deadline = time.monotonic() + 180
        while engine.stats().embed_backlog and time.monotonic() < deadline:
            time.sleep(0.1)
        assert engine.stats().embed_backlog == 0, "the backlog is embedded once the server is back"
        hits = engine.recall("u1", "when do we look at the money for the quarter").hits
        assert hits and hits[0].content == texts[-1]
    with mnemon.Engine.open(data) as engine:
        assert engine.stats().active_memories == len(texts)
        for i in acknowledged:
            engine.get("u1", i)


def test_a_wrong_dimension_is_refused_naming_the_provider(server, tmp_path):
    data = tmp_path / "wrong"
    with mnemon.Engine.open(data, embedder=server.spec("dims=512")) as engine:
        with pytest.raises(mnemon.EmbedderError) as e:
            engine.remember("u1", "Erin moved to Lisbon")
        assert "384 components" in str(e.value) and server.url in str(e.value)
        assert engine.stats().last_seq == 0


RERANK_FACTS = FACTS + [
    "Alice keeps a spare epinephrine pen in the office first-aid kit",
    "The cafeteria labels every dish that contains peanuts or tree nuts",
    "Erin is lactose intolerant and takes her coffee black",
    "Bob's flight to Denver leaves at 7:05 on Friday",
]
RERANK_QUERY = "what food allergies should the office caterer know about"
DEPTH = 8


def server_order(server: LlamaServer, query: str, docs: list) -> list:
    """The server's own answer for `docs`, as (document, score) pairs in its
    score order; ties keep the order the documents were sent in."""
    body = json.dumps({"model": RANK_MODEL, "query": query, "documents": docs}).encode()
    req = urllib.request.Request(
        f"{server.url}/rerank", data=body, headers={"content-type": "application/json"}, method="POST"
    )
    with urllib.request.urlopen(req, timeout=30) as r:
        results = json.loads(r.read())["results"]
    assert sorted(x["index"] for x in results) == list(range(len(docs)))
    scored = [(docs[x["index"]], x["relevance_score"], x["index"]) for x in results]
    scored.sort(key=lambda t: (-t[1], t[2]))
    return [(d, s) for d, s, _ in scored]


def recall_json(data: pathlib.Path, *extra: str, env: Optional[dict] = None) -> list:
    cmd = [str(require_binary()), "--data", str(data), "recall", "--namespace", "u1", "--json", "--explain"]
    cmd += ["--no-record-access", "--top-k", str(DEPTH), *extra, RERANK_QUERY]
    p = subprocess.run(cmd, capture_output=True, text=True, timeout=300, env=env)
    assert p.returncode == 0, f"{cmd}: {p.returncode}\n{p.stdout}\n{p.stderr}"
    return json.loads(p.stdout)["hits"]


def test_recall_takes_the_rerank_servers_order_at_every_door(rank_server, tmp_path):
    data = tmp_path / "rerank"
    for fact in RERANK_FACTS:
        run(data, "remember", "--namespace", "u1", fact, embedder="minilm")
    spec = f"rerank:{RANK_MODEL}@{rank_server.url}?depth={DEPTH}"

    # Recall's own order: the candidates the rerank stage is handed.
    own = recall_json(data)
    assert len(own) == DEPTH and all(h["explain"].get("rerank_score") is None for h in own)
    expected = server_order(rank_server, RERANK_QUERY, [h["content"] for h in own])
    assert [d for d, _ in expected] != [h["content"] for h in own], "the server's order must differ to show anything"

    def check(hits: list, door: str) -> None:
        assert [h["content"] for h in hits] == [d for d, _ in expected], door
        for h, (_, score) in zip(hits, expected):
            assert h["explain"]["rerank_score"] == pytest.approx(score, abs=1e-6), door
            assert h["score"] == pytest.approx(min(max(score, 0.0), 1.0), abs=1e-6), door

    check(recall_json(data, "--reranker", spec), "cli")
    # `--no-rerank` keeps recall's order for one call.
    assert [h["content"] for h in recall_json(data, "--reranker", spec, "--no-rerank")] == [h["content"] for h in own]

    with mnemon.Engine.open(data, reranker=spec) as engine:
        r = engine.recall("u1", RERANK_QUERY, top_k=DEPTH, explain=True, record_access=False)
        check([{"content": h.content, "score": h.score, "explain": {"rerank_score": h.explain.rerank_score}} for h in r.hits], "python")

    mcp = pytest.importorskip("mcp")
    import anyio
    from mcp.client.stdio import StdioServerParameters

    env = {**os.environ, "MNEMON_RERANKER": spec, "MNEMON_DATA": str(data)}
    params = StdioServerParameters(command=str(require_binary()), args=["mcp"], env=env)

    async def main() -> dict:
        async with mcp.Client(params) as client:
            args = {"namespace": "u1", "query": RERANK_QUERY, "top_k": DEPTH, "explain": True, "record_access": False}
            r = await client.call_tool("memory_recall", args)
            assert not r.is_error, r.content[0].text
            return r.structured_content

    check(anyio.run(main)["hits"], "mcp")

    # The server down: recall answers in its own order, no hit reranked.
    rank_server.stop()
    try:
        down = recall_json(data, "--reranker", spec)
        assert [h["content"] for h in down] == [h["content"] for h in own]
        assert all(h["explain"].get("rerank_score") is None for h in down)
    finally:
        rank_server.start()
    check(recall_json(data, "--reranker", spec), "cli after the server is back")

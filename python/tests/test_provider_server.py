"""Embedding providers against a real OpenAI-compatible server: llama.cpp's
own `llama-server` (from the PyPI wheel `xllamacpp`, prebuilt for CPU),
serving all-MiniLM-L6-v2 converted from the files `mnemon model install
minilm` put in place (`provider_server/st2gguf.py`).

A store is built and reopened through it from the CLI, the MCP server's
configuration and Python; the server is killed in the middle of an import
(no write is lost, the backlog is embedded once it is back); a wrong
dimension is refused with the provider named. 429 answers and the rerank
shape are covered by `crates/mnemon/tests/provider.rs` (this server neither
limits rates nor serves a reranker without a rerank model, and none is on
PyPI).

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

    def __init__(self, gguf: pathlib.Path, port: int, log: pathlib.Path) -> None:
        self.gguf, self.port, self.log = gguf, port, log
        self.proc: Optional[subprocess.Popen] = None

    @property
    def url(self) -> str:
        return f"http://127.0.0.1:{self.port}/v1"

    def spec(self, options: str = "dims=384") -> str:
        return f"openai:{MODEL}@{self.url}" + (f"?{options}" if options else "")

    def start(self) -> None:
        with open(self.log, "ab") as log:
            self.proc = subprocess.Popen(
                [sys.executable, str(HERE / "serve.py"), str(self.gguf), str(self.port), "--alias", MODEL],
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


@pytest.fixture(scope="module")
def server(tmp_path_factory) -> Iterator[LlamaServer]:
    try:
        import gguf  # noqa: F401
        import xllamacpp  # noqa: F401
    except ImportError as e:
        skip_or_fail(f"the embedding server is not installed ({e}): pip install -r python/requirements-test.txt")
    minilm = models_dir() / "minilm"
    if not (minilm / "model.safetensors").exists():
        skip_or_fail(f"all-MiniLM-L6-v2 is not installed in {minilm.parent}: run mnemon model install minilm")
    work = tmp_path_factory.mktemp("llama")
    out = work / f"{MODEL}.gguf"
    subprocess.run([sys.executable, str(HERE / "st2gguf.py"), str(minilm), str(out)], check=True, capture_output=True)
    s = LlamaServer(out, free_port(), work / "server.log")
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

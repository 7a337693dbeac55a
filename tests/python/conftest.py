"""Fixtures for driving the mnemon binary with the official MCP Python SDK.

The binary is `$MNEMON_BIN`, else `$CARGO_TARGET_DIR/release/mnemon`, else
`target/release/mnemon` of this checkout (`cargo build --release` first;
`./scripts/test` does). Every test gets a fresh store and the hashing
embedder, so nothing is downloaded.
"""

import json
import math
import os
import pathlib
import signal
import subprocess
import threading
import time

import pytest
from mcp import Client
from mcp.client.stdio import StdioServerParameters
from mcp.client.streamable_http import streamable_http_client
from mcp.shared._httpx_utils import create_mcp_http_client

ROOT = pathlib.Path(__file__).resolve().parents[2]
TOKEN = "test-token-3f9a"


def _binary() -> str:
    if os.environ.get("MNEMON_BIN"):
        return os.environ["MNEMON_BIN"]
    target = pathlib.Path(os.environ.get("CARGO_TARGET_DIR", "target"))
    if not target.is_absolute():
        target = ROOT / target
    return str(target / "release" / "mnemon")


BIN = _binary()


def cli(data, *args, check=True):
    """Runs `mnemon --data DATA --embedder hashing ARGS` and returns the completed process."""
    p = subprocess.run(
        [BIN, "--data", str(data), "--embedder", "hashing", *args], capture_output=True, text=True, timeout=120
    )
    if check and p.returncode != 0:
        raise AssertionError(f"mnemon {' '.join(args)} failed ({p.returncode}): {p.stderr}")
    return p


def cli_json(data, *args):
    return json.loads(cli(data, "--json", *args).stdout)


def is_cjk(c: str) -> bool:
    o = ord(c)
    return (
        o == 0x3005
        or 0x3040 <= o <= 0x30FF
        or 0x31F0 <= o <= 0x31FF
        or 0x3400 <= o <= 0x4DBF
        or 0x4E00 <= o <= 0x9FFF
        or 0xF900 <= o <= 0xFAFF
        or 0x20000 <= o <= 0x323AF
        or 0xAC00 <= o <= 0xD7AF
    )


def estimate_tokens(text: str) -> int:
    """mnemon's token estimator (`mnemon::estimate_tokens`): one token per CJK
    character plus one per four other characters, rounded up."""
    cjk = sum(1 for c in text if is_cjk(c))
    return cjk + math.ceil((len(text) - cjk) / 4)


@pytest.fixture
def data(tmp_path):
    return tmp_path / "store"


def stdio_server(data, *extra) -> StdioServerParameters:
    return StdioServerParameters(command=BIN, args=["--data", str(data), "--embedder", "hashing", "mcp", *extra])


def result_json(result):
    """The JSON a tool call returned (its text content)."""
    assert result.content, result
    return json.loads(result.content[0].text)


async def ok(client, tool, args):
    """The result of a successful call: its structured content (which the
    SDK has checked against the tool's output schema), repeated as JSON in
    the text block for clients that read only text."""
    r = await client.call_tool(tool, args)
    assert not r.is_error, f"{tool} {args}: {r.content[0].text}"
    assert r.structured_content is not None, f"{tool}: no structured content"
    assert result_json(r) == r.structured_content, f"{tool}: the text block differs from the structured content"
    return r.structured_content


async def fails(client, tool, args):
    r = await client.call_tool(tool, args)
    assert r.is_error, f"{tool} {args} succeeded: {r.content[0].text}"
    return result_json(r)["error"]


class HttpServer:
    """A `mnemon serve` process on a free loopback port."""

    def __init__(self, data, *extra, token=TOKEN, listen="127.0.0.1:0"):
        args = [BIN, "--data", str(data), "--embedder", "hashing", "serve", "--listen", listen, *extra]
        if token is not None:
            args += ["--token", token]
        self.proc = subprocess.Popen(args, stdin=subprocess.DEVNULL, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, text=True)
        self.stderr = []
        self.addr = None
        deadline = time.monotonic() + 120
        while self.addr is None:
            line = self.proc.stderr.readline()
            if not line:
                raise AssertionError(f"mnemon serve exited: {''.join(self.stderr)}")
            self.stderr.append(line)
            if line.startswith("mnemon: serving MCP on http://"):
                self.addr = line.strip().removeprefix("mnemon: serving MCP on http://").removesuffix("/mcp")
            if time.monotonic() > deadline:
                raise AssertionError("mnemon serve did not start")
        threading.Thread(target=self._drain, daemon=True).start()
        # Bound to every address: reach it on loopback.
        self.addr = self.addr.replace("0.0.0.0", "127.0.0.1")
        self.url = f"http://{self.addr}/mcp"
        self.base = f"http://{self.addr}"
        self.token = token

    def _drain(self):
        for line in self.proc.stderr:
            self.stderr.append(line)

    def client(self, token="default", **kw):
        token = self.token if token == "default" else token
        headers = {"Authorization": f"Bearer {token}"} if token else {}
        return Client(streamable_http_client(self.url, http_client=create_mcp_http_client(headers=headers)), **kw)

    def stop(self, sig=signal.SIGTERM, timeout=60):
        if self.proc.poll() is None:
            self.proc.send_signal(sig)
        return self.proc.wait(timeout=timeout)


@pytest.fixture
def http_server(data):
    s = HttpServer(data)
    yield s
    s.stop()


def list_all(data, ns):
    """Every active memory of `ns` (all pages), id → content, through the CLI."""
    stored, cursor = {}, None
    while True:
        page = cli_json(data, "list", "--ns", ns, "--limit", "1000", *(["--cursor", cursor] if cursor else []))
        stored.update({m["id"]: m["content"] for m in page["memories"]})
        cursor = page.get("next_cursor")
        if not cursor:
            return stored

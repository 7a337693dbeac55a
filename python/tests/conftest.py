"""Fixtures of the Python package's tests.

Every test gets a fresh store in a temporary directory and the hashing
embedder (no model download), unless it asks for a neural model. The
`mnemon` binary (for comparing JSON with the CLI) is `$MNEMON_BIN`, else
`$CARGO_TARGET_DIR/release/mnemon`, else `target/release/mnemon` of this
checkout; `./scripts/test` builds it first.
"""

from __future__ import annotations

import os
import pathlib
import subprocess
import sys
from typing import Iterator, List

import pytest

import mnemon

ROOT = pathlib.Path(__file__).resolve().parents[2]


def binary() -> pathlib.Path:
    """The CLI binary built from this checkout."""
    if os.environ.get("MNEMON_BIN"):
        return pathlib.Path(os.environ["MNEMON_BIN"])
    target = pathlib.Path(os.environ.get("CARGO_TARGET_DIR", "target"))
    if not target.is_absolute():
        target = ROOT / target
    return target / "release" / "mnemon"


def require_binary() -> pathlib.Path:
    """The binary, or a skip when it was not built (a failure under
    `MNEMON_REQUIRE_BIN=1`, as `./scripts/test` sets)."""
    b = binary()
    if not b.exists():
        if os.environ.get("MNEMON_REQUIRE_BIN") == "1":
            pytest.fail(f"{b} is missing; run cargo build --release --bin mnemon")
        pytest.skip(f"{b} is missing; run cargo build --release --bin mnemon")
    return b


def cli(data: pathlib.Path, *args: str, embedder: str = "hashing") -> subprocess.CompletedProcess:
    """Runs `mnemon --data DATA --embedder EMBEDDER ARGS`."""
    return subprocess.run(
        [str(require_binary()), "--data", str(data), "--embedder", embedder, *args],
        capture_output=True,
        text=True,
        timeout=300,
    )


def files_containing(root: pathlib.Path, needle: bytes) -> List[str]:
    """Every file under `root` whose bytes contain `needle`."""
    found = []
    for p in root.rglob("*"):
        if p.is_file() and needle in p.read_bytes():
            found.append(str(p))
    return found


def neural_embedder() -> str:
    """An installed neural embedder's name; skips (fails under
    `MNEMON_REQUIRE_MODELS=1`) when none is installed."""
    models = pathlib.Path(
        os.environ.get("MNEMON_MODELS")
        or os.path.join(
            os.environ.get("XDG_DATA_HOME") or os.path.join(os.path.expanduser("~"), ".local", "share"),
            "mnemon",
            "models",
        )
    )
    for name, folder in (("minilm", "minilm"), ("e5-small", "e5-small")):
        if (models / folder).is_dir():
            return name
    if os.environ.get("MNEMON_REQUIRE_MODELS") == "1":
        pytest.fail(f"no neural model installed under {models}")
    pytest.skip(f"no neural model installed under {models}")


@pytest.fixture
def data(tmp_path: pathlib.Path) -> pathlib.Path:
    """A fresh data directory (not created yet)."""
    return tmp_path / "store"


@pytest.fixture
def engine(data: pathlib.Path) -> Iterator[mnemon.Engine]:
    """An engine on a fresh store with the hashing embedder."""
    with mnemon.Engine.open(data, embedder="hashing") as e:
        yield e


def run_python(code: str, *args: str) -> subprocess.CompletedProcess:
    """Runs `code` in a fresh interpreter of this environment."""
    return subprocess.run([sys.executable, "-c", code, *args], capture_output=True, text=True, timeout=300)

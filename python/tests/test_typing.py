"""Editors and mypy see the package's types: the stubs agree with the
runtime (mypy's stubtest), correct use type-checks under --strict, and a
wrong use of a result type is reported (the types are real, not Any)."""

from __future__ import annotations

import importlib
import pathlib
import subprocess
import sys
import textwrap

import pytest

pytest.importorskip("mypy")

GOOD = """
from datetime import datetime, timezone
from typing import List, Optional

import mnemon
from mnemon.langgraph import MnemonStore


def run(path: str) -> List[str]:
    with mnemon.Engine.open(path, embedder="hashing") as engine:
        r: mnemon.Remembered = engine.remember("u1", "Prefers tea", key="user.drink", importance=0.5)
        hits = engine.recall(
            "u1", "tea", top_k=3, tiers=["long_term"], time_range=(None, datetime.now(timezone.utc)), explain=True
        )
        first: mnemon.Hit = hits.hits[0]
        why: str = first.why
        memory = first.memory
        assert memory is not None and why
        imp: float = memory.importance
        when: datetime = memory.first_seen
        key: Optional[str] = memory.key
        store = MnemonStore(engine)
        store.put(("users", "u1"), "k", {"v": imp})
        item = store.get(("users", "u1"), "k")
        assert item is not None and r.id > 0 and when.tzinfo is not None and key
        try:
            engine.get("u1", 999)
        except mnemon.NotFoundError as e:
            code: str = e.code
            field: Optional[str] = e.field
            assert code and field is None
        return [h.content for h in hits.hits]
"""

BAD = """
import mnemon

def run(engine: mnemon.Engine) -> str:
    hits = engine.recall("u1", "tea")
    return hits.hits[0].score + "x"
"""


def mypy(tmp_path: pathlib.Path, source: str) -> subprocess.CompletedProcess:
    f = tmp_path / "example.py"
    f.write_text(textwrap.dedent(source))
    return subprocess.run(
        [sys.executable, "-m", "mypy", "--strict", "--cache-dir", str(tmp_path / ".mypy"), str(f)],
        capture_output=True,
        text=True,
        timeout=600,
    )


def test_correct_use_type_checks_strictly(tmp_path):
    p = mypy(tmp_path, GOOD)
    assert p.returncode == 0, p.stdout + p.stderr


def test_wrong_use_is_reported(tmp_path):
    p = mypy(tmp_path, BAD)
    assert p.returncode == 1, p.stdout
    assert 'Unsupported operand types for + ("float" and "str")' in p.stdout


def test_stubs_agree_with_the_runtime(tmp_path):
    # A framework adapter whose framework is not installed here cannot be
    # imported (CrewAI has an environment of its own): stubtest skips it.
    skipped = []
    for name in ("openai_agents", "llama_index", "adk", "crewai"):
        try:
            importlib.import_module(f"mnemon.adapters.{name}")
        except ImportError:
            skipped.append(f"mnemon.adapters.{name}")
    allowlist = tmp_path / "allowlist.txt"
    allowlist.write_text("".join(f"{name}\n" for name in skipped))
    p = subprocess.run(
        [sys.executable, "-m", "mypy.stubtest", "mnemon", "--allowlist", str(allowlist)],
        capture_output=True,
        text=True,
        timeout=600,
        cwd=tmp_path,
    )
    assert p.returncode == 0, p.stdout + p.stderr

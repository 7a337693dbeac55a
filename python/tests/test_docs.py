"""Every public item of the package has a docstring (as every public Rust
item has a doc comment), and the Python examples of README.md and the guide
under docs/ run as written."""

from __future__ import annotations

import inspect
import os
import pathlib
import re
import subprocess
import sys
from typing import Iterator, List, Tuple

import pytest

import mnemon
import mnemon.langgraph
from conftest import neural_embedder


def public_members(cls: type):
    for name, value in vars(cls).items():
        if name.startswith("_"):
            continue
        if isinstance(value, (property, staticmethod, classmethod)) or inspect.isfunction(value):
            yield name, value


def adapter_modules() -> List[object]:
    """`mnemon.adapters` and those of its framework modules whose framework
    is installed here."""
    import importlib

    found = [importlib.import_module("mnemon.adapters")]
    for name in ("openai_agents", "llama_index", "adk", "crewai"):
        try:
            found.append(importlib.import_module(f"mnemon.adapters.{name}"))
        except ImportError:
            continue
    return found


def test_every_public_item_has_a_docstring():
    missing = []
    modules = [(mnemon, mnemon.__all__), (mnemon.langgraph, mnemon.langgraph.__all__)]
    modules += [(m, m.__all__) for m in adapter_modules()]  # type: ignore[attr-defined]
    for module, names in modules:
        assert module.__doc__ and len(module.__doc__.split()) > 20, module.__name__
        for name in names:
            obj = getattr(module, name)
            if inspect.isclass(obj) or inspect.isfunction(obj):
                if not (obj.__doc__ or "").strip():
                    missing.append(f"{module.__name__}.{name}")
            if inspect.isclass(obj):
                for member, value in public_members(obj):
                    target = value.__func__ if isinstance(value, (staticmethod, classmethod)) else value
                    if not (getattr(target, "__doc__", None) or "").strip():
                        missing.append(f"{module.__name__}.{name}.{member}")
    assert not missing, missing


def test_result_type_docs_come_from_the_rust_docs():
    assert "version" in (mnemon.Memory.__doc__ or "")
    assert mnemon.Memory.importance.__doc__ and "0.0" in mnemon.Memory.importance.__doc__
    assert "[`" not in (mnemon.CheckReport.digest.__doc__ or "")


# --- The Python examples of README.md and the guide under docs/ ------------
#
# Every ```python block runs, as written, in a fresh interpreter of this
# environment; the blocks of one page run in order in one fresh working
# directory (so they find what earlier blocks wrote). A block that cannot
# run here is tagged ```python no-run. The shell blocks of the same pages
# are run by tests/python/test_docs.py.

ROOT = pathlib.Path(__file__).resolve().parents[2]
FENCE = re.compile(r"^ {0,3}(`{3,}|~{3,})([^`]*)$")


def doc_pages() -> List[pathlib.Path]:
    return [ROOT / "README.md", *sorted((ROOT / "docs").rglob("*.md"))]


def python_blocks(page: pathlib.Path) -> Iterator[Tuple[int, str]]:
    """(line of the opening fence, code) of each runnable Python block."""
    lines = page.read_text(encoding="utf-8").split("\n")
    i = 0
    while i < len(lines):
        m = FENCE.match(lines[i])
        if not m:
            i += 1
            continue
        fence, words, start = m[1], m[2].split(), i
        j = i + 1
        while j < len(lines) and not re.match(r"^ {0,3}" + re.escape(fence[0]) + "{" + str(len(fence)) + r",}\s*$", lines[j]):
            j += 1
        if words[:1] == ["python"] and "no-run" not in words[1:]:
            yield start + 1, "\n".join(lines[i + 1 : j]) + "\n"
        i = j + 1


PAGES = [p for p in doc_pages() if any(python_blocks(p))]


@pytest.mark.parametrize("page", PAGES, ids=lambda p: str(p.relative_to(ROOT)))
def test_the_python_examples_of_a_page_run(page: pathlib.Path, tmp_path: pathlib.Path):
    neural_embedder()  # the examples use the default embedder: a model must be installed
    env = {k: v for k, v in os.environ.items() if k not in ("MNEMON_DATA", "MNEMON_EMBEDDER")}
    for line, code in python_blocks(page):
        p = subprocess.run(
            [sys.executable, "-c", code], cwd=tmp_path, env=env, capture_output=True, text=True, timeout=300
        )
        where = f"{page.relative_to(ROOT)}:{line}"
        assert p.returncode == 0, (
            f"{where}: the example exited with status {p.returncode}\n"
            f"--- code ---\n{code}--- stdout ---\n{p.stdout}--- stderr ---\n{p.stderr}"
        )

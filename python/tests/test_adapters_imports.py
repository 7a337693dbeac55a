"""`import mnemon` and `import mnemon.adapters` need no framework; each
adapter module, imported without its framework, names the package to
install."""

from __future__ import annotations

import pytest

from conftest import run_python

BLOCK = """
import sys
for name in ("agents", "llama_index", "google.adk", "crewai", "langgraph"):
    sys.modules[name] = None        # as if not installed
import mnemon, mnemon.adapters
assert mnemon.adapters.namespace_for("oa", ["u 1"]) == "oa:u@201"
assert not [m for m in sys.modules if m.startswith("mnemon.adapters.") and m != "mnemon.adapters._ids"]
"""


def test_mnemon_imports_without_any_framework():
    p = run_python(BLOCK)
    assert p.returncode == 0, p.stderr


@pytest.mark.parametrize(
    "module, hint",
    [
        ("openai_agents", "pip install openai-agents"),
        ("llama_index", "pip install llama-index-core"),
        ("adk", "pip install google-adk"),
        ("crewai", "pip install crewai"),
    ],
)
def test_an_adapter_without_its_framework_names_the_package(module, hint):
    p = run_python(BLOCK + f"import mnemon.adapters.{module}\n")
    assert p.returncode != 0 and "ImportError" in p.stderr and hint in p.stderr, p.stderr

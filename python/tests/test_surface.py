"""One command surface: the Python API has a parameter for every request
field, its result types match the response schemas, and `to_dict()` is
the JSON the CLI prints for the same store."""

from __future__ import annotations

import importlib.util
import inspect
import json
import keyword
import pathlib
from typing import Any, Dict, Set

import pytest

import mnemon
from conftest import cli

TOOLS = pathlib.Path(__file__).resolve().parents[1] / "tools" / "gen_types.py"

# Operation -> the Engine method that runs it.
METHODS = {
    "remember": "remember",
    "observe": "observe",
    "supersede": "supersede",
    "recall": "recall",
    "context": "context",
    "get": "get",
    "history": "history",
    "list": "list",
    "log": "log",
    "forget": "forget",
    "forget_user": "forget_user",
    "extraction_prompt": "extraction_prompt",
    "apply_extraction": "apply_extraction",
    "end_session": "end_session",
    "consolidate": "consolidate",
    "maintain": "maintain",
    "compact": "compact",
    "verify_erasure": "verify_erasure",
    "verify_shred": "verify_shred",
    "stats": "stats",
    "check": "check",
    "namespaces": "namespaces",
    "timeline": "timeline",
    "import": "import_records",
    "backup": "backup",
    "export": "export",
    "restore": "restore",
    "receipts": "receipts",
}
# Request fields that a Python parameter carries under another name.
RENAMED = {
    ("recall", "from"): "time_range",
    ("recall", "to"): "time_range",
    ("context", "from"): "time_range",
    ("context", "to"): "time_range",
    ("log", "from"): "seq_range",
    ("log", "to"): "seq_range",
    ("timeline", "from"): "from_",
    ("restore", "from"): "from_",
}


def request_fields(schema: Dict[str, Any]) -> Set[str]:
    out = set(schema.get("properties", {}))
    for key in ("allOf", "anyOf", "oneOf"):
        for sub in schema.get(key, []) or []:
            out |= request_fields(sub)
    return out


def test_every_operation_has_a_method_with_every_field():
    schemas = {s["op"]: s for s in mnemon.schemas()}
    assert set(schemas) == set(METHODS), "an operation of the surface has no Python method"
    for op, method in METHODS.items():
        params = set(inspect.signature(getattr(mnemon.Engine, method)).parameters) - {"self"}
        wanted = {RENAMED.get((op, f), f) for f in request_fields(schemas[op]["request"])}
        assert params == wanted, f"{op}: parameters {sorted(params)} vs request fields {sorted(wanted)}"


def test_result_types_are_generated_from_the_current_schemas():
    spec = importlib.util.spec_from_file_location("gen_types", TOOLS)
    assert spec and spec.loader
    gen = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(gen)
    types, stub = gen.generate()
    here = pathlib.Path(mnemon.__file__).parent
    assert (here / "_types.py").read_text(encoding="utf-8") == types, "stale: run python/tools/gen_types.py"
    assert (here / "__init__.pyi").read_text(encoding="utf-8") == stub, "stale: run python/tools/gen_types.py"


def test_every_response_field_has_a_property():
    for op, (cls, _many) in mnemon.RESPONSES.items():
        schema = next(s for s in mnemon.schemas() if s["op"] == op)["response"]
        if schema.get("type") == "array":
            ref = schema["items"]["$ref"].rsplit("/", 1)[-1]
            schema = schema["$defs"][ref]
        fields = set(schema.get("properties", {}))
        for variant in schema.get("oneOf", []) or []:
            fields |= set(variant.get("properties", {}))
        for f in fields:
            # A Python keyword (`from`) is a property with a trailing underscore.
            attr = f + "_" if keyword.iskeyword(f) else f
            assert isinstance(getattr(cls, attr, None), property), f"{cls.__name__}.{attr}"


def shape(value: Any) -> Any:
    """The JSON shape: keys and types, recursively."""
    if isinstance(value, dict):
        return {k: shape(v) for k, v in sorted(value.items())}
    if isinstance(value, list):
        return [shape(v) for v in value[:1]]
    return type(value).__name__


def test_to_dict_equals_the_cli_json(data):
    with mnemon.Engine.open(data, embedder="hashing") as e:
        r1 = e.remember("u1", "Prefers oolong tea", kind="preference", key="user.drink", importance=0.9)
        r2 = e.remember("u1", "Prefers green tea", key="user.drink", entities=["tea"])
        e.remember("u1", "Lives in Hangzhou", tier="permanent", session="s1")
        e.observe("u1", "s1", "I moved to Hangzhou last month")
        py_get = e.get("u1", r1.id).to_dict()
        py_history = e.history("u1", r2.id).to_dict()
        py_list = e.list("u1", include_superseded=True).to_dict()
        py_recall = e.recall("u1", "which tea", record_access=False).to_dict()
        py_full = e.recall("u1", "which tea", record_access=False, explain=True).to_dict()
    assert r2.to_dict()["old"] == r1.id

    def cli_json(*args: str) -> Any:
        p = cli(data, "--json", *args)
        assert p.returncode == 0, p.stderr
        return json.loads(p.stdout)

    assert cli_json("get", "--ns", "u1", str(r1.id)) == py_get
    assert cli_json("history", "--ns", "u1", str(r2.id)) == py_history
    assert cli_json("list", "--ns", "u1", "--all") == py_list
    cli_recall = cli_json("recall", "--namespace", "u1", "--top-k", "10", "which tea")
    assert shape(cli_recall) == shape(py_recall)
    assert [h["id"] for h in cli_recall["hits"]] == [h["id"] for h in py_recall["hits"]]
    # The same compact hits, and the same whole ones with explain.
    assert set(cli_recall["hits"][0]) == set(py_recall["hits"][0]) == {"id", "content", "score", "why"}
    cli_full = cli_json("recall", "--namespace", "u1", "--top-k", "10", "--explain", "which tea")
    assert shape(cli_full) == shape(py_full)


@pytest.mark.parametrize("op", sorted(METHODS))
def test_method_docstrings(op):
    doc = getattr(mnemon.Engine, METHODS[op]).__doc__
    assert doc and len(doc.split()) >= 8, op

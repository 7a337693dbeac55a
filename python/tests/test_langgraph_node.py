"""One LangGraph store, two doors: what the Python `MnemonStore` writes, the
Node package's `MnemonStore` (node/, LangGraph.js) reads item for item, and
the other way round — the same namespace mapping, keys, values, versions
and catalogue. Skipped without the built Node package unless
MNEMON_REQUIRE_NODE=1 (scripts/test sets it)."""

from __future__ import annotations

import json
import os
import subprocess
from typing import Any, List

import pytest

import mnemon
from mnemon.langgraph import MnemonStore

ROOT = os.path.join(os.path.dirname(__file__), "..", "..")
SCRIPT = os.path.join(ROOT, "node", "test", "fixtures", "langgraph-store.mjs")
BUILT = os.path.join(ROOT, "node", "dist", "langgraph.js")

if not os.path.exists(BUILT) and os.environ.get("MNEMON_REQUIRE_NODE") != "1":
    pytest.skip("the Node package is not built (node/dist)", allow_module_level=True)

LONG = "x" * 140  # a namespace over 128 characters: stored under its digest
PUTS: List[Any] = [
    [["users", "alice", "prefs"], "food", {"likes": "ramen", "level": 3}],
    [["users", "alice", "prefs"], "food", {"likes": "udon", "level": 4}],
    [["users", "bob"], "k with spaces & ünïcode", {"text": "meet at five", "tags": ["work"]}],
    [["users", "bob"], "", {"empty": "key"}],
    [["teams", "sail.ing".replace(".", "-"), "boats"], "  padded  ", {"name": "Gull", "ok": True, "n": None}],
    [["deep", LONG], "k", {"v": 1}],
]
KEYS = [[ns, key] for ns, key, _ in PUTS] + [[["users", "carol"], "nobody"]]


def node(command: str, data: Any, payload: Any) -> Any:
    done = subprocess.run(
        ["node", SCRIPT, command, str(data)], input=json.dumps(payload), capture_output=True, text=True, timeout=120
    )
    assert done.returncode == 0, done.stderr
    return json.loads(done.stdout) if done.stdout else None


def python_dump(data: Any) -> Any:
    with MnemonStore.open(data, embedder="hashing") as store:
        items, history = [], []
        for ns, key in KEYS:
            item = store.get(tuple(ns), key)
            items.append(item and {"namespace": list(item.namespace), "key": item.key, "value": item.value})
            history.append([v.value for v in store.history(tuple(ns), key)])
        namespaces = [list(ns) for ns in store.list_namespaces(limit=100)]
        searched = {}
        for first in sorted({ns[0] for ns in namespaces}):
            searched[first] = sorted([list(i.namespace), i.key, i.value] for i in store.search((first,), limit=100))
        return {"items": items, "namespaces": namespaces, "searched": searched, "history": history}


def test_node_reads_what_python_wrote(tmp_path):
    with MnemonStore.open(tmp_path, embedder="hashing") as store:
        for ns, key, value in PUTS:
            store.put(tuple(ns), key, value)
    want = python_dump(tmp_path)
    assert want["items"][1]["value"] == {"likes": "udon", "level": 4}
    assert want["history"][0] == [{"likes": "ramen", "level": 3}, {"likes": "udon", "level": 4}]
    assert want["items"][-1] is None
    assert node("dump", tmp_path, KEYS) == want


def test_python_reads_what_node_wrote(tmp_path):
    node("put", tmp_path, PUTS)
    got = node("dump", tmp_path, KEYS)
    assert python_dump(tmp_path) == got
    assert ["deep", LONG] in got["namespaces"]

"""Getting data in and out from Python: `import_records`, `backup`,
`export` and `restore` give the surface's results, refuse bad input with
typed errors, and a restored store has the original's digest."""

from __future__ import annotations

import json

import pytest

import mnemon
from mnemon import Engine

from conftest import cli

HISTORY = [
    {"type": "observation", "session": "trip", "role": "user", "text": "We land in Lisbon on the 14th of May", "source": "t1"},
    {"type": "observation", "session": "trip", "role": "assistant", "text": "Noted: arrival in Lisbon on 14 May", "source": "t2"},
    {"type": "memory", "content": "The user flies to Lisbon on 14 May", "kind": "fact", "sources": ["t1"]},
    {"type": "memory", "content": "The user prefers aisle seats", "kind": "preference", "key": "user.seat"},
]


def jsonl(records) -> str:
    return "\n".join(json.dumps(r) for r in records) + "\n"


def test_import_from_text_and_file_is_idempotent(engine, tmp_path):
    s = engine.import_records("u", text=jsonl(HISTORY))
    assert (s.read, s.observations_written, s.memories_written, s.rejected) == (4, 2, 2, 0)
    hits = engine.recall("u", "when does the flight to Lisbon leave", top_k=1).hits
    assert hits[0].content == "The user flies to Lisbon on 14 May"
    f = tmp_path / "history.jsonl"
    f.write_text(jsonl(HISTORY), encoding="utf-8")
    again = engine.import_records("u", path=f)
    assert (again.duplicates, again.observations_written, again.memories_written) == (4, 0, 0)
    assert again.to_dict()["read"] == 4


def test_import_from_mcp_memory_and_mem0_lists_what_does_not_map(engine):
    graph = jsonl(
        [
            {"type": "entity", "name": "李雷", "entityType": "人", "observations": ["住在北京"]},
            {"type": "relation", "from": "李雷", "to": "韩梅梅", "relationType": "认识"},
        ]
    )
    dry = engine.import_records("g", text=graph, format="mcp_memory", dry_run=True)
    assert (dry.memories_written, dry.unmapped, engine.stats().last_seq) == (1, 1, 0)
    s = engine.import_records("g", text=graph, format="mcp_memory")
    u = s.unmapped_list[0]
    assert (u.line, u.skipped, s.memories_written) == (2, True, 1)
    assert "韩梅梅" in u.reason
    mem0 = {"results": [{"id": "a", "memory": "Likes jazz", "user_id": "ann"}, {"id": "b", "memory": "Likes rap", "user_id": "bo"}]}
    s = engine.import_records("ann", text=json.dumps(mem0), format="mem0")
    assert (s.memories_written, s.unmapped, s.unmapped_list[0].at) == (1, 1, "results[1] (id b)")


def test_import_bad_records_skip_or_abort(engine):
    bad = jsonl(HISTORY[:1]) + '{"type": "memory", "content": ""}\n' + "not json\n"
    aborted = engine.import_records("u", text=bad, on_error="abort")
    assert aborted.aborted and aborted.rejected == 2
    assert engine.stats().observations == 0, "an aborted import writes nothing"
    s = engine.import_records("u", text=bad)
    assert (s.observations_written, s.rejected) == (1, 2)
    assert sorted(r.line for r in s.rejections) == [2, 3]
    dry = engine.import_records("v", text=jsonl(HISTORY), dry_run=True)
    assert dry.dry_run and all(n.namespace != "v" for n in engine.namespaces().namespaces)


@pytest.mark.parametrize(
    "kwargs",
    [{}, {"text": "x", "path": "y"}, {"text": jsonl(HISTORY), "batch": 0}, {"text": jsonl(HISTORY), "format": "csv"}],
)
def test_import_refuses_bad_arguments(engine, kwargs):
    with pytest.raises(mnemon.InvalidInputError):
        engine.import_records("u", **kwargs)
    assert engine.stats().observations == 0


def test_backup_export_restore_round_trip(engine, tmp_path, data):
    engine.import_records("u", text=jsonl(HISTORY))
    gone = engine.remember("u", "My locker code is 4711-2093-8812 at the gym")
    engine.forget("u", id=gone.id, reason="user request")
    digest = engine.check().digest

    b = engine.backup(tmp_path / "backup")
    assert b.last_seq > 0 and b.tombstones >= 1
    with pytest.raises(mnemon.MnemonError):
        engine.backup(tmp_path / "backup")  # not empty: refused
    e = engine.export(tmp_path / "store.jsonl")
    assert e.to_dict()["path"].endswith("store.jsonl")
    r = engine.restore(tmp_path / "store.jsonl", tmp_path / "restored")
    assert r.digest_matches is True and r.digest == digest
    with Engine.open(tmp_path / "backup", embedder="hashing") as copy:
        assert copy.check().consistent
        assert copy.recall("u", "aisle or window seat", top_k=1).hits[0].content == "The user prefers aisle seats"
    for d in (tmp_path / "backup", tmp_path / "restored"):
        out = cli(d, "--json", "stats")
        assert out.returncode == 0, out.stderr
    for f in (tmp_path / "store.jsonl",):
        assert b"4711-2093-8812" not in f.read_bytes()


def test_restore_refuses_what_is_not_a_store_export(engine, tmp_path):
    engine.remember("u", "The user prefers aisle seats")
    audit = tmp_path / "audit.jsonl"
    page = engine.log("u")
    audit.write_text("\n".join(json.dumps(ev) for ev in page.to_dict()["events"]) + "\n", encoding="utf-8")
    with pytest.raises((mnemon.CorruptedError, mnemon.InvalidInputError)):
        engine.restore(audit, tmp_path / "restored")
    with pytest.raises(mnemon.InvalidInputError):
        engine.restore(42, tmp_path / "restored")  # type: ignore[arg-type]

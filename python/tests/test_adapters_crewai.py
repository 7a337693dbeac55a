"""`mnemon.adapters.crewai.MnemonStorage` against CrewAI: the storage
protocol directly, then CrewAI's own `Memory` saving, recalling, listing
and forgetting through it (no LLM call: every remember names its scope,
categories and importance; recall is shallow).

CrewAI pins the MCP SDK below 2 while the MCP tests pin 2.x, so it has a
virtual environment of its own (`target/python-venv-crewai`, see
`python/requirements-crewai.txt`); elsewhere this module skips, unless
`MNEMON_REQUIRE_CREWAI=1` (set where CrewAI is installed) makes that a
failure."""

from __future__ import annotations

import os
from datetime import datetime, timedelta
from typing import Any

import pytest

os.environ.setdefault("CREWAI_DISABLE_TELEMETRY", "true")
os.environ.setdefault("OTEL_SDK_DISABLED", "true")

try:
    import crewai  # noqa: F401
except ImportError:
    if os.environ.get("MNEMON_REQUIRE_CREWAI") == "1":
        raise
    pytest.skip("CrewAI is not installed here (it has its own environment)", allow_module_level=True)

from crewai.llms.base_llm import BaseLLM  # noqa: E402
from crewai.memory import Memory  # noqa: E402
from crewai.memory.storage.backend import StorageBackend  # noqa: E402
from crewai.memory.types import MemoryRecord  # noqa: E402

import mnemon  # noqa: E402
from mnemon.adapters.crewai import MnemonStorage  # noqa: E402


def record(content: str, scope: str = "/", **kw: Any) -> MemoryRecord:
    return MemoryRecord(content=content, scope=scope, **kw)


def same(a: MemoryRecord, b: MemoryRecord) -> bool:
    return a.model_dump() == b.model_dump()


def test_is_a_storage_backend(engine):
    storage = MnemonStorage(engine, user_id="crew 1")
    assert isinstance(storage, StorageBackend)
    assert storage.namespace == "crewai:crew@201"


def test_records_round_trip_and_filter(engine):
    storage = MnemonStorage(engine, user_id="crew")
    t0 = datetime(2026, 3, 1, 12, 0, 0)
    recs = [
        record("Client prefers weekly reports", "/acme/sales", categories=["client", "reports"],
               metadata={"owner": "ana", "n": 3}, importance=0.8, created_at=t0, source="ana", private=True),
        record("The API rate limit is 100 rps", "/acme/eng", categories=["api"], created_at=t0 + timedelta(days=1)),
        record("Deploys happen on Tuesdays", "/acme/eng/ops", categories=["ops"], created_at=t0 + timedelta(days=2)),
        record("Lunch is at noon", "/", created_at=t0 + timedelta(days=3)),
    ]
    storage.save(recs)
    for r in recs:
        got = storage.get_record(r.id)
        assert got is not None and same(got, r)
    assert storage.get_record("missing") is None
    assert [r.content for r in storage.list_records()] == [r.content for r in reversed(recs)]
    assert [r.content for r in storage.list_records("/acme/eng")] == [
        "Deploys happen on Tuesdays",
        "The API rate limit is 100 rps",
    ]
    assert [r.content for r in storage.list_records(limit=1, offset=1)] == ["Deploys happen on Tuesdays"]
    assert storage.count() == 4 and storage.count("/acme") == 3 and storage.count("/acme/e") == 0
    assert storage.list_scopes("/") == ["/acme"]
    assert storage.list_scopes("/acme") == ["/acme/eng", "/acme/sales"]
    assert storage.list_categories("/acme/eng") == {"api": 1, "ops": 1}
    info = storage.get_scope_info("/acme/eng")
    assert info.record_count == 2 and info.child_scopes == ["/acme/eng/ops"] and info.categories == ["api", "ops"]
    assert info.oldest_record == t0 + timedelta(days=1) and info.newest_record == t0 + timedelta(days=2)

    # Search needs a vector the storage's embedder made.
    query = storage.embedder(["how often does the client want reports"])[0]
    hits = storage.search(query, limit=2)
    assert hits and hits[0][0].content == "Client prefers weekly reports" and 0 < hits[0][1] <= 1
    assert storage.search(query, scope_prefix="/acme/eng", limit=5)[0][0].scope.startswith("/acme/eng")
    assert all("client" in r.categories for r, _ in storage.search(query, categories=["client"]))
    assert storage.search(query, metadata_filter={"owner": "bob"}) == []
    with pytest.raises(mnemon.InvalidInputError):
        storage.search([0.5] * engine.dim)


def test_update_is_a_new_version_and_delete_forgets(engine):
    storage = MnemonStorage(engine, user_id="crew")
    r = record("Budget is 10k", "/acme", categories=["budget"])
    other = record("Office in Lyon", "/acme/hr", created_at=datetime(2020, 1, 1))
    storage.save([r, other])
    storage.update(r.model_copy(update={"content": "Budget is 12k"}))
    assert storage.get_record(r.id).content == "Budget is 12k"  # type: ignore[union-attr]
    assert storage.count() == 2
    memory_id = engine.list(storage.namespace, session="crewai." + r.id).memories[0].id
    assert len(engine.history(storage.namespace, memory_id).versions) == 2
    assert storage.delete(older_than=datetime(2021, 1, 1)) == 1
    assert storage.get_record(other.id) is None
    assert storage.delete(record_ids=[r.id, "missing"]) == 1
    assert storage.count() == 0
    engine.compact()
    check = engine.verify_erasure(["Budget is 10k", "Office in Lyon"])
    assert check.verified and check.matches == []


def test_reset_by_scope_and_all(engine):
    storage = MnemonStorage(engine, user_id="crew")
    storage.save([record("a fact", "/x"), record("b fact", "/y"), record("c fact", "/y/z")])
    storage.reset("/y")
    assert [r.content for r in storage.list_records()] == ["a fact"]
    storage.reset()
    assert storage.count() == 0
    storage.reset()  # empty: no error


class NoLLM(BaseLLM):
    """An LLM that must not be called: these flows need none."""

    def call(self, *args: Any, **kwargs: Any) -> Any:
        raise AssertionError("CrewAI called the LLM")


def test_crewai_memory_runs_on_it(engine):
    storage = MnemonStorage(engine, user_id="research crew")
    memory = Memory(storage=storage, embedder=storage.embedder, llm=NoLLM(model="none"), consolidation_threshold=1.0)
    try:
        for content, scope, category, importance in [
            ("The customer Acme renews its contract in March", "/acme", "contracts", 0.9),
            ("Our team stand-up is at 9:30 every weekday", "/team", "meetings", 0.4),
            ("Acme's main contact is the procurement office", "/acme", "contacts", 0.6),
        ]:
            memory.remember(content, scope=scope, categories=[category], importance=importance)
        matches = memory.recall("When does Acme renew the contract?", depth="shallow", limit=2)
        assert matches[0].record.content == "The customer Acme renews its contract in March"
        in_team = memory.recall("Acme contract", scope="/team", depth="shallow")
        assert [m.record.content for m in in_team] == ["Our team stand-up is at 9:30 every weekday"]
        assert {r.content for r in memory.list_records(scope="/acme")} == {
            "The customer Acme renews its contract in March",
            "Acme's main contact is the procurement office",
        }
        assert memory.info("/").record_count == 3
        assert memory.list_categories() == {"contracts": 1, "meetings": 1, "contacts": 1}
        gone = memory.forget(record_ids=[matches[0].record.id])
        assert gone == 1
        assert all("renews" not in m.record.content for m in memory.recall("contract renewal", depth="shallow"))
        memory.reset()
        assert memory.info("/").record_count == 0
    finally:
        memory.close()


def test_same_answers_as_crewais_lancedb_storage(engine, tmp_path):
    """The same saves, updates and deletes on CrewAI's default LanceDB
    storage and on ours give the same listings, counts, scopes and
    categories (search ranks differ by design: LanceDB's cosine against
    mnemon's hybrid recall)."""
    from crewai.memory.storage.lancedb_storage import LanceDBStorage

    ours = MnemonStorage(engine, user_id="crew")
    theirs = LanceDBStorage(path=str(tmp_path / "lance"), compact_every=0)
    t0 = datetime(2026, 3, 1, 12, 0, 0)
    recs = [
        record("Client prefers weekly reports", "/acme/sales", categories=["client"], metadata={"owner": "ana"},
               importance=0.8, created_at=t0),
        record("The API rate limit is 100 rps", "/acme/eng", categories=["api"], created_at=t0 + timedelta(days=1)),
        record("Deploys happen on Tuesdays", "/acme/eng/ops", categories=["ops", "api"],
               created_at=t0 + timedelta(days=2)),
        record("Lunch is at noon", "/", created_at=t0 + timedelta(days=3)),
    ]
    embed = ours.embedder
    for r in recs:
        r.embedding = embed([r.content])[0]

    def answers(storage: Any) -> Any:
        return (
            [r.model_dump() for r in storage.list_records()],
            [r.content for r in storage.list_records("/acme", limit=2, offset=1)],
            storage.count(), storage.count("/acme/eng"),
            storage.list_scopes("/"), storage.list_scopes("/acme"),
            storage.list_categories(), storage.list_categories("/acme/eng"),
            storage.get_scope_info("/acme").record_count,
            storage.get_record(recs[0].id).model_dump(),
        )

    states = []
    for storage in (ours, theirs):
        storage.save(recs)
        first = answers(storage)
        storage.update(recs[1].model_copy(update={"content": "The API rate limit is 200 rps"}))
        deleted = storage.delete(categories=["ops"])
        second = answers(storage)
        storage.reset("/acme/sales")
        states.append((first, deleted, second, storage.count()))
    assert states[0] == states[1]

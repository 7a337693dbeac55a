"""The cases of shared/cases/README.md that memory engines get wrong,
C01–C09, driven through the Python package."""

from __future__ import annotations

import pathlib
import secrets
from datetime import datetime, timezone

import pytest

import mnemon
from conftest import files_containing, neural_embedder, run_python


def contents(engine: mnemon.Engine, ns: str, **filters) -> list:
    return [m.content for m in engine.list(ns, limit=1000, **filters).memories]


def test_c01_same_memory_twice(engine):
    text = "The dog descends from the grey wolf."
    first = engine.remember("u1", text)
    after_first = engine.stats().last_seq
    second = engine.remember("u1", text)
    assert second.id == first.id
    assert second.action == "duplicate"
    assert engine.stats().last_seq == after_first, "a duplicate writes nothing"
    assert contents(engine, "u1") == [text]
    assert engine.get("u1", first.id).status == "active"
    assert engine.stats().events.forgotten == 0


def test_c01_a_case_variant_is_written_not_dropped(engine):
    us = engine.remember("u1", "I met the US team in Paris")
    before = engine.stats().last_seq
    lower = engine.remember("u1", "I met the us team in Paris")
    assert lower.action != "duplicate" and lower.id != us.id
    assert engine.stats().last_seq > before
    assert engine.get("u1", lower.id).content == "I met the us team in Paris"


def test_c02_a_preference_that_changes(engine):
    ronaldo = engine.remember(
        "u1",
        "My favourite player is Ronaldo",
        key="user.favourite_player",
        event_time=datetime(2024, 3, 1, tzinfo=timezone.utc),
    )
    between = engine.stats().last_seq
    messi = engine.remember(
        "u1",
        "My favourite player is now Messi",
        key="user.favourite_player",
        event_time=datetime(2024, 3, 2, tzinfo=timezone.utc),
    )
    assert messi.action == "superseded" and messi.old == ronaldo.id
    hits = engine.recall("u1", "favourite player").hits
    assert [h.id for h in hits] == [messi.id]
    old = engine.get("u1", ronaldo.id)
    assert old.status == "superseded" and old.next == messi.id
    assert [v.content for v in engine.history("u1", messi.id).versions] == [
        "My favourite player is Ronaldo",
        "My favourite player is now Messi",
    ]
    view = engine.as_of("u1", between)
    assert [h.id for h in view.recall("favourite player").hits] == [ronaldo.id]
    # As of a recorded time between the two writes, too.
    first, second = engine.get("u1", ronaldo.id), engine.get("u1", messi.id)
    assert first.recorded_to == second.recorded_from
    assert [m.id for m in engine.as_of("u1", first.recorded_from).list().memories] == [ronaldo.id]
    assert [m.id for m in engine.as_of("u1", second.recorded_from).list().memories] == [messi.id]
    # And by event time: what was true on each day, as the store knows it now.
    assert first.valid_from == datetime(2024, 3, 1, tzinfo=timezone.utc)
    assert first.valid_to == second.valid_from == datetime(2024, 3, 2, tzinfo=timezone.utc)
    on = lambda day: [m.id for m in engine.as_of("u1", valid_time=datetime(2024, 3, day, 12, tzinfo=timezone.utc)).list().memories]
    assert on(1) == [ronaldo.id] and on(2) == [messi.id]
    assert engine.as_of("u1", valid_time=datetime(2024, 2, 1, tzinfo=timezone.utc)).list().memories == []


def test_c03_forgotten_but_still_found(data):
    texts = ["Lives in Hangzhou", "Has a secret tattoo of a dragon", "Drinks green tea"]
    with mnemon.Engine.open(data, embedder="hashing") as engine:
        ids = [engine.remember("u1", t).id for t in texts]
        engine.forget("u1", id=ids[1])

        def gone(e: mnemon.Engine) -> None:
            assert texts[1] not in [h.content for h in e.recall("u1", texts[1], top_k=10).hits]
            with pytest.raises(mnemon.NotFoundError):
                e.get("u1", ids[1])
            with pytest.raises(mnemon.NotFoundError):
                e.history("u1", ids[1])
            assert texts[1] not in contents(e, "u1", include_superseded=True, include_archived=True)
            log = e.log("u1", limit=1000)
            assert texts[1] not in str([ev.to_dict() for ev in log.events])

        gone(engine)
    with mnemon.Engine.open(data, embedder="hashing") as engine:
        gone(engine)
        assert contents(engine, "u1") == [texts[0], texts[2]]


def test_c04_forgetting_one_user_wipes_another(engine):
    for u in ("u1", "u2"):
        for i in range(50):
            engine.remember(u, f"{u} memory number {i}: {secrets.token_hex(6)}")
    before = [m.to_dict() for m in engine.list("u2", limit=1000).memories]
    out = engine.forget("u1", all=True)
    assert out.memories == 50
    assert contents(engine, "u1") == []
    after = [m.to_dict() for m in engine.list("u2", limit=1000).memories]
    assert after == before and len(after) == 50


def test_c05_erased_text_left_on_disk(engine, data):
    canary = secrets.token_urlsafe(24)[:32]
    assert len(canary) == 32
    m = engine.remember("u1", f"The vault code word is {canary}")
    o = engine.observe("u1", "s1", f"User: remember the code word {canary}")
    engine.forget("u1", id=m.id)
    engine.forget("u1", observation=o.observation_id)
    receipt = engine.compact()
    assert receipt.verified, receipt.to_dict()
    assert receipt.matches == []
    assert files_containing(pathlib.Path(data), canary.encode()) == []


def test_c06_two_processes_one_store(data):
    with mnemon.Engine.open(data, embedder="hashing") as engine:
        ids = [engine.remember("u1", f"First process memory {i} {secrets.token_hex(4)}").id for i in range(20)]
        child = run_python(
            "import sys, time, mnemon\n"
            "t = time.monotonic()\n"
            "try:\n"
            "    mnemon.Engine.open(sys.argv[1], embedder='hashing')\n"
            "except mnemon.LockedError as e:\n"
            "    print('locked', round(time.monotonic() - t, 3), e)\n",
            str(data),
        )
        assert child.returncode == 0, child.stderr
        assert child.stdout.startswith("locked "), child.stdout
        assert "store is locked" in child.stdout
        assert float(child.stdout.split()[1]) < 30
    with mnemon.Engine.open(data, embedder="hashing") as engine:
        assert sorted(m.id for m in engine.list("u1").memories) == sorted(ids)


def test_c07_the_embedding_model_changes(data):
    other = neural_embedder()
    with mnemon.Engine.open(data, embedder="hashing") as engine:
        ids = [engine.remember("u1", t).id for t in ("Likes sailing", "Owns a red bicycle", "Speaks Portuguese")]
        hashing = engine.model_id
    with mnemon.Engine.open(data, embedder=other) as engine:
        assert engine.model_id != hashing
        assert engine.stats().model_id == engine.model_id
        hits = engine.recall("u1", "bicycle", top_k=3).hits
        assert hits and hits[0].id == ids[1]
        assert engine.check().consistent


def test_c08_an_over_limit_write(data):
    with mnemon.Engine.open(data, embedder="hashing", max_content_bytes=1024) as engine:
        engine.remember("u1", "Keep me")
        before = engine.stats().last_seq
        for kwargs, field in (
            ({"content": "x" * 1025}, "content"),
            ({"content": ""}, "content"),
            ({"content": "ok", "importance": float("nan")}, "importance"),
        ):
            with pytest.raises(mnemon.InvalidInputError) as exc:
                engine.remember("u1", **kwargs)
            assert exc.value.field == field
        with pytest.raises(mnemon.InvalidInputError):
            engine.recall("u1", "q", min_similarity=float("nan"))
        assert engine.stats().last_seq == before
        assert contents(engine, "u1") == ["Keep me"]
        assert engine.check().consistent
    with mnemon.Engine.open(data, embedder="hashing") as engine:
        assert engine.check().consistent
        assert contents(engine, "u1") == ["Keep me"]


def test_c09_personal_data_in_chinese_and_english(engine, data):
    zh = engine.remember("u1", "我的手机号是13812345678，身份证号11010519491231002X，卡号6222020200112233446")
    en = engine.remember("u1", "Reach me at jane.roe@example.com or +1 415 555 0100")
    assert sum(zh.redactions.values()) == 3 and sum(en.redactions.values()) == 2
    stored = engine.get("u1", zh.id).content + engine.get("u1", en.id).content
    recalled = " ".join(h.content for h in engine.recall("u1", "phone number email", top_k=5).hits)
    secrets_ = ["13812345678", "11010519491231002X", "6222020200112233446", "jane.roe@example.com", "415 555 0100"]
    for s in secrets_:
        assert s not in stored and s not in recalled
    assert "[" in stored
    engine.close()
    for s in secrets_:
        assert files_containing(pathlib.Path(data), s.encode()) == [], s

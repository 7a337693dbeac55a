"""The Python API over the command surface: every operation, typed results,
`to_dict()` shapes, the context manager, as-of views."""

from __future__ import annotations

import json
from datetime import datetime, timedelta, timezone

import pytest

import mnemon
from mnemon import Engine


def test_open_close_context_manager(data):
    with Engine.open(data, embedder="hashing") as e:
        assert not e.closed
        assert e.model_id.startswith("hashing-")
        assert e.dim == 384
        assert e.path == str(data)
        assert e.max_response_tokens == mnemon.DEFAULT_MAX_RESPONSE_TOKENS
        r = e.remember("u1", "Prefers window seats")
        assert isinstance(r, mnemon.Remembered)
    assert e.closed
    with pytest.raises(mnemon.ClosedError) as exc:
        e.remember("u1", "after close")
    assert exc.value.code == "closed"
    e.close()  # closing twice does nothing
    # The lock was released: the store opens again and holds the memory.
    with Engine.open(data, embedder="hashing") as e2:
        assert [m.content for m in e2.list("u1").memories] == ["Prefers window seats"]


def test_remember_recall_context(engine):
    r = engine.remember(
        "user:42",
        "Prefers window seats on long flights",
        kind="preference",
        tier="permanent",
        importance=0.7,
        entities=["seat", "flight"],
        key="user.seat",
        session="s1",
        event_time=datetime(2024, 5, 1, 10, 0, tzinfo=timezone.utc),
        source_ref="msg-17",
    )
    assert r.action == "created"
    assert r.redactions == {}
    assert r.quarantined is None
    engine.remember("user:42", "Allergic to peanuts", kind="fact")
    compact = engine.recall("user:42", "which seat on a flight", top_k=5)
    assert isinstance(compact, mnemon.RecallResponse)
    assert compact.omitted == 0
    first = compact.hits[0]
    assert isinstance(first, mnemon.Hit)
    assert (first.id, first.content) == (r.id, "Prefers window seats on long flights")
    assert "user.seat" in first.why and first.memory is None and first.explain is None
    hits = engine.recall("user:42", "which seat on a flight", top_k=5, explain=True)
    top = hits.hits[0]
    assert (top.id, top.score, top.why) == (first.id, first.score, first.why)
    m = top.memory
    assert isinstance(m, mnemon.Memory)
    assert m.id == r.id
    assert m.kind == "preference"
    assert m.tier == "permanent"
    assert m.importance == pytest.approx(0.7)
    assert m.entities == ["seat", "flight"]
    assert m.key == "user.seat"
    assert m.session == "s1"
    assert m.source_ref == "msg-17"
    assert m.status == "active"
    assert m.event_time == datetime(2024, 5, 1, 10, 0, tzinfo=timezone.utc)
    assert m.first_seen.tzinfo is not None
    assert isinstance(top.explain, mnemon.Explanation)
    assert top.score == pytest.approx(top.explain.score)
    # Every filter reaches the surface.
    only = engine.recall("user:42", "peanuts", kinds=["fact"], tiers=["long_term"], mode="lexical")
    assert [h.content for h in only.hits] == ["Allergic to peanuts"]
    none = engine.recall("user:42", "seat", session="no-such-session")
    assert none.hits == []
    timed = engine.recall(
        "user:42",
        "seat",
        time_range=(datetime(2024, 4, 1, tzinfo=timezone.utc), datetime(2024, 6, 1, tzinfo=timezone.utc)),
    )
    assert [h.id for h in timed.hits] == [r.id]
    ctx = engine.context("user:42", "seat on a flight", budget_tokens=200)
    assert isinstance(ctx, mnemon.ContextBlock)
    assert "Prefers window seats" in ctx.context
    # The keyed, permanent memory is in the profile, and not repeated.
    assert ctx.profile == 1 and ctx.context.count("Prefers window seats") == 1
    assert ctx.memories + ctx.in_profile >= 1
    assert 0 < ctx.tokens <= 200


def test_context_has_profile_relevant_and_recent_parts(engine):
    engine.remember("u", "Lives in Porto", key="user.city")
    engine.remember("u", "Lives in Berlin now", key="user.city")
    engine.remember("u", "用户对花生过敏", tier="permanent")
    engine.remember("u", "Waiting for a parcel", tier="short_term", session="s-old", key="user.today")
    engine.remember("u", "My sister Ana is a nurse at the children's hospital")
    engine.observe("u", "s-now", "Can you book a table for tonight?", role="user")
    engine.observe("u", "s-now", "当然，几位？", role="assistant")
    block = engine.context("u", "What is my sister Ana's job?", current_session="s-now", budget_tokens=400)
    lines = block.context.split("\n")
    assert lines[0] == "<memories>" and lines[-1] == "</memories>"
    profile = lines.index("## Profile: what holds now, by key")
    relevant = lines.index("## Relevant, most relevant first")
    recent = lines.index("## Recent turns of this session, oldest first")
    assert profile < relevant < recent
    assert lines[profile + 1].endswith("用户对花生过敏") and lines[profile + 2].endswith("Lives in Berlin now")
    assert "Porto" not in block.context and "parcel" not in block.context
    assert lines[recent + 1].startswith("- [") and "(user) Can you book a table" in lines[recent + 1]
    assert "(assistant) 当然，几位？" in lines[recent + 2]
    assert "nurse" in lines[relevant + 1]
    assert (block.profile, block.recent, block.memories) == (2, 2, block.memories)
    # Parts can be turned off; the relevant part takes their budget.
    only = engine.context("u", "What is my sister Ana's job?", current_session="s-now", profile_share=0, recent_share=0)
    assert (only.profile, only.recent) == (0, 0) and "## Profile" not in only.context
    # Abstention empties the relevant part only.
    stranger = engine.context("u", "Which football club does Jean support in Marseille?", current_session="s-now")
    assert stranger.abstained and stranger.memories == 0
    assert stranger.profile == 2 and stranger.recent == 2


def test_recall_and_context_say_when_nothing_is_relevant(engine):
    for text in [
        "My sister Ana is a nurse at the children's hospital",
        "I am allergic to peanuts and shellfish",
        "We adopted a grey cat called Miso last summer",
    ]:
        engine.remember("u", text)
    stranger = "Which football club does Jean support in Marseille?"
    block = engine.context("u", stranger)
    assert block.abstained and block.memories == 0
    assert block.unknown_names == ["Jean", "Marseille"]
    assert block.abstention is not None
    assert block.abstention.best_similarity < block.abstention.floor
    # recall makes the same decision by default, and says why in the same
    # shape; abstain_below=-1 returns the hits anyway.
    r = engine.recall("u", stranger)
    assert r.abstained and r.hits == [] and r.unknown_names == ["Jean", "Marseille"]
    assert engine.recall("u", stranger, abstain_below=-1).hits
    best = block.abstention.best_similarity
    # A base floor just under the best cosine: only the unknown names decide.
    r = engine.recall("u", stranger, abstain_below=best - 0.01)
    assert r.abstained and r.hits == [] and r.unknown_names == ["Jean", "Marseille"]
    assert abs(r.abstention.best_similarity - best) < 1e-6 and r.abstention.floor > best
    # Abstained on the cosine alone: the names are still given.
    r = engine.recall("u", stranger, abstain_below=0.99)
    assert r.abstained and r.abstention.floor > 0.98 and r.unknown_names == ["Jean", "Marseille"]
    assert r.to_dict()["unknown_names"] == ["Jean", "Marseille"]
    related = engine.recall("u", "What is my sister Ana's job?", abstain_below=0.15)
    assert not related.abstained and related.abstention is None and related.hits
    assert related.to_dict()["unknown_names"] == []
    assert "nurse" in engine.context("u", "What is my sister Ana's job?").context


def test_time_expressions_are_read_relative_to_the_reference_time(engine):
    diary = [
        ("Visited the British museum with Rachel and saw the Rosetta Stone", datetime(2023, 1, 28, 10, tzinfo=timezone.utc)),
        ("Visited the Louvre museum and queued for hours to see the Mona Lisa", datetime(2023, 3, 10, 10, tzinfo=timezone.utc)),
        ("周六和朋友去了上海博物馆看青铜器展", datetime(2023, 3, 25, 10, tzinfo=timezone.utc)),
    ]
    for text, when in diary:
        engine.remember("d", text, event_time=when)
    asked = datetime(2023, 4, 1, 9, tzinfo=timezone.utc)
    r = engine.recall("d", "Which museum did I visit two months ago?", reference_time=asked, explain=True)
    assert r.hits[0].content == diary[0][0]
    assert r.hits[0].explain.time == 1.0
    assert r.query_time is not None and r.query_time.phrase == "two months ago"
    assert r.query_time.from_ == datetime(2023, 1, 17, tzinfo=timezone.utc)
    assert r.query_time.to == datetime(2023, 2, 17, tzinfo=timezone.utc)
    # The same answer in the same shape as the command surface's JSON.
    span = {"from": "2023-01-17T00:00:00Z", "to": "2023-02-17T00:00:00Z", "phrase": "two months ago"}
    assert r.to_dict()["query_time"] == {**span, "spans": [span]}
    # RFC 3339 text works too; Chinese expressions are read the same way.
    zh = engine.recall("d", "上周六我去了哪里？", reference_time="2023-04-01T09:00:00Z")
    assert zh.hits[0].content == diary[2][0] and zh.query_time.phrase == "上周六"
    # No time named: no span, and every hit's time term is 0.
    plain = engine.recall("d", "Which museum did I visit?", reference_time=asked, explain=True)
    assert plain.query_time is None and all(h.explain.time == 0.0 for h in plain.hits)
    # context reads it too.
    block = engine.context("d", "Which museum did I visit two months ago?", reference_time=asked, abstain_below=-1)
    assert block.memories == 3 and block.context.index("British") < block.context.index("Louvre")
    assert block.query_time is not None and block.query_time.phrase == "two months ago"
    # The reference's own offset decides where days begin: 07:00 on 1 April
    # in UTC+8 makes 上周六 the 25th there, from 16:00 UTC on the 24th.
    east = timezone(timedelta(hours=8))
    zh = engine.recall("d", "上周六我去了哪里？", reference_time=datetime(2023, 4, 1, 7, tzinfo=east))
    span = zh.query_time.spans[0]
    assert span.phrase == "上周六" and span.from_ == datetime(2023, 3, 24, 16, tzinfo=timezone.utc)
    assert span.to == datetime(2023, 3, 25, 16, tzinfo=timezone.utc)
    with pytest.raises(mnemon.InvalidInputError) as exc:
        engine.recall("d", "last week", reference_time=datetime(2023, 4, 1))
    assert exc.value.field == "reference_time"
    with pytest.raises(mnemon.InvalidInputError) as exc:
        engine.recall("d", "last week", reference_time="yesterday-ish")
    assert exc.value.field == "reference_time"


def test_custom_kind_reads_as_its_name(engine):
    engine.remember("u1", "Runs every morning", kind="habit")
    m = engine.list("u1").memories[0]
    assert m.kind == "habit"
    assert m.to_dict()["kind"] == {"other": "habit"}


def test_versions_history_as_of_get(engine):
    r1 = engine.remember("u1", "My favourite player is Ronaldo", key="user.favourite_player")
    between = engine.stats().last_seq
    r2 = engine.remember("u1", "My favourite player is now Messi", key="user.favourite_player")
    assert r2.action == "superseded"
    assert r2.old == r1.id
    old = engine.get("u1", r1.id)
    assert old.status == "superseded"
    assert old.next == r2.id
    h = engine.history("u1", r2.id)
    assert isinstance(h, mnemon.HistoryResponse)
    assert [v.content for v in h.versions] == ["My favourite player is Ronaldo", "My favourite player is now Messi"]
    assert h.next_cursor is None
    paged = engine.history("u1", r2.id, limit=1)
    assert len(paged.versions) == 1 and paged.next_cursor is not None
    rest = engine.history("u1", r2.id, cursor=paged.next_cursor)
    assert [v.id for v in rest.versions] == [r2.id]
    view = engine.as_of("u1", between)
    assert [m.content for m in view.list().memories] == ["My favourite player is Ronaldo"]
    assert view.get(r1.id).status == "active"
    assert [h.content for h in view.recall("favourite player").hits] == ["My favourite player is Ronaldo"]
    # As of a time: after everything.
    later = engine.as_of("u1", datetime.now(timezone.utc) + timedelta(seconds=5))
    assert [m.id for m in later.list().memories] == [r2.id]
    assert "View(" in repr(view)


def test_observe_extraction_end_session_maintain(engine):
    o = engine.observe("u1", "s1", "My daughter is called Xiaoyu", role="user")
    assert isinstance(o, mnemon.ObserveResponse)
    assert o.observation_id > 0
    assert o.redactions == {}
    phone = engine.observe("u2", "s1", "Text me at +1 415 555 0100", role="user")
    assert sum(phone.redactions.values()) == 1, phone.redactions
    p = engine.extraction_prompt("u1", "s1")
    assert isinstance(p, mnemon.ExtractionPromptResponse)
    assert "My daughter is called Xiaoyu" in p.prompt and p.tokens > 0
    doc = {
        "new_memories": [
            {
                "content": "The user's daughter is called Xiaoyu",
                "kind": "fact",
                "tier": "short_term",
                "importance": 0.8,
                "source_ids": [o.observation_id],
            }
        ],
        "update_existing": [],
        "forget": [],
    }
    rep = engine.apply_extraction("u1", doc)
    assert isinstance(rep, mnemon.ExtractionReport)
    assert [i.status for i in rep.items] == ["applied"]
    mid = rep.items[0].id
    assert engine.get("u1", mid).sources == [o.observation_id]
    # The same document as text works too (a duplicate now).
    rep2 = engine.apply_extraction("u1", json.dumps(doc))
    assert rep2.items[0].status in ("applied", "rejected")
    end = engine.end_session("u1", "s1", promote=[mid])
    assert isinstance(end, mnemon.SessionEnd)
    [(old, new)] = end.promoted
    assert old == mid
    assert engine.get("u1", new).tier == "long_term"
    assert engine.get("u1", mid).status == "superseded"
    reports = engine.maintain("u1")
    assert [r.namespace for r in reports] == ["u1"]
    assert isinstance(reports[0].report, mnemon.MaintenanceReport)
    assert isinstance(engine.maintain(), list)
    assert isinstance(engine.consolidate("u1"), list)


def test_consolidate_dry_run_writes_nothing(engine):
    text = "The user likes green tea"
    a = engine.remember("c1", text, dedup="off")
    b = engine.remember("c1", text + "!", dedup="off")
    assert a.id != b.id
    before = engine.stats().last_seq
    [plan] = engine.consolidate("c1", dry_run=True)
    assert plan.members == [a.id, b.id] and plan.merged is None and plan.text.startswith(text)
    assert engine.stats().last_seq == before
    [done] = engine.consolidate("c1")
    assert done.members == plan.members and done.merged is not None and done.text == plan.text
    assert engine.get("c1", a.id).status == "superseded"


def test_forget_compact_verify(engine, data):
    keep = engine.remember("u1", "Likes sailing on weekends")
    gone = engine.remember("u1", "Secret canary Zq7Hx2Lw9Pv4Mn8Kt3Rb6Yc1Jd5Fg0Sa")
    dry = engine.forget("u1", id=gone.id, dry_run=True)
    assert dry.dry_run and [m.id for m in dry.preview] == [gone.id]
    assert engine.get("u1", gone.id).content.startswith("Secret canary")
    out = engine.forget("u1", id=gone.id, reason="user asked")
    assert isinstance(out, mnemon.ForgetResponse)
    assert out.memory_ids == [gone.id] and not out.dry_run
    with pytest.raises(mnemon.NotFoundError):
        engine.get("u1", gone.id)
    assert [m.id for m in engine.list("u1").memories] == [keep.id]
    receipt = engine.compact()
    assert isinstance(receipt, mnemon.ErasureReceipt)
    assert receipt.verified
    assert isinstance(receipt.compaction, mnemon.CompactionFigures)
    check = engine.verify_erasure(["Zq7Hx2Lw9Pv4Mn8Kt3Rb6Yc1Jd5Fg0Sa"])
    assert check.verified and check.matches == []
    with pytest.raises(mnemon.InvalidInputError):
        engine.verify_erasure("one string")


def test_receipts_of_two_compactions_survive_reopen(data):
    canaries = ["Secret canary Qm4Xr8Tn2Wv6Lp0Zs3", "Secret canary Hd7Jk1Bf5Nc9Gy2Ux8"]
    for round_no, canary in enumerate(canaries):
        with Engine.open(data, embedder="hashing") as e:
            gone = e.remember("u1", canary, dedup="off")
            e.remember("u1", f"A kept memory about rowing, round {round_no}", dedup="off")
            e.forget("u1", id=gone.id, reason="user asked")
            assert e.compact().verified
    with Engine.open(data, embedder="hashing") as e:
        page = e.receipts()
        assert isinstance(page, mnemon.ReceiptsResponse)
        assert page.next_cursor is None
        assert [(r.previous_generation, r.generation) for r in page.receipts] == [(2, 3), (1, 2)]
        for r in page.receipts:
            assert isinstance(r, mnemon.CompactionReceipt)
            assert (r.memories_erased, r.observations_erased, r.vectors_dropped) == (1, 0, 1)
            assert isinstance(r.at, datetime) and r.at.tzinfo is not None
            assert r.bytes_before > 0 and r.bytes_after > 0
            assert isinstance(r.scan, mnemon.ScanSummary)
            assert r.scan.verified and r.scan.matches == 0 and len(r.scan.files_sha256) == 64
        text = json.dumps(page.to_dict())
        assert "canary" not in text and "Secret" not in text
        first = e.receipts(limit=1)
        assert [r.generation for r in first.receipts] == [3] and first.next_cursor == "3"
        rest = e.receipts(cursor=first.next_cursor)
        assert [r.to_dict() for r in rest.receipts] == [page.receipts[1].to_dict()]
        for bad in ({"cursor": "three"}, {"limit": 0}):
            with pytest.raises(mnemon.InvalidInputError) as exc:
                e.receipts(**bad)
            assert exc.value.field == next(iter(bad))


def test_stats_check_log_call(engine):
    engine.remember("u1", "One")
    engine.observe("u1", "s", "Two")
    s = engine.stats()
    assert isinstance(s, mnemon.Stats)
    assert s.active_memories == 1 and s.observations == 1 and s.namespaces == 1
    assert s.model_id == engine.model_id
    assert isinstance(s.events, mnemon.EventCounts)
    c = engine.check()
    assert isinstance(c, mnemon.CheckReport) and c.consistent
    log = engine.log("u1")
    assert isinstance(log, mnemon.LogResponse)
    assert [e.seq for e in log.events] == [1, 2]
    assert isinstance(log.events[0].time, datetime)
    assert set(log.events[0].body) == {"extracted"}
    assert [e.seq for e in engine.log("u1", seq_range=(2, None)).events] == [2]
    raw = engine.call("stats")
    assert raw["model_id"] == s.model_id and raw["active_memories"] == 1
    assert set(mnemon._native.ops()) >= {"remember", "recall", "log", "check"}
    with pytest.raises(mnemon.InvalidInputError) as e:
        engine.call("no_such_op")
    assert e.value.field == "op"


def test_to_dict_is_the_surface_json(engine):
    r = engine.remember("u1", "Prefers oolong tea", key="user.drink", importance=0.25)
    d = r.to_dict()
    assert d == {"id": r.id, "action": "created", "redactions": {}, "quarantined": None, "vector_pending": False}
    # A deep copy: changing it changes nothing in the record.
    d["id"] = -1
    assert r.id != -1
    m = engine.get("u1", r.id)
    md = m.to_dict()
    assert md["importance"] == 0.25
    assert md["first_seen"].endswith("Z")
    assert set(md) <= set(type(m)._FIELDS)  # every field of the JSON has a property
    assert json.loads(json.dumps(md)) == md
    assert m == mnemon.Memory(md)
    assert "Prefers oolong tea" in repr(m)


def test_schemas_are_published():
    schemas = mnemon.schemas()
    ops = [s["op"] for s in schemas]
    assert ops == list(mnemon._native.ops())
    assert set(mnemon.RESPONSES) == set(ops)


def test_context_explains_its_entries_only_when_asked(engine):
    engine.remember("u", "Lives in Porto", key="user.city")
    engine.remember("u", "My sister Ana is a nurse at the children's hospital")
    turn = engine.observe("u", "s1", "Which shift does Ana work this week?", role="user")
    plain = engine.context("u", "What is my sister Ana's job?", current_session="s1", record_access=False)
    assert plain.entries == [] and plain.floors is None
    block = engine.context(
        "u", "What is my sister Ana's job?", current_session="s1", record_access=False, explain=True
    )
    assert block.context == plain.context
    parts = [(e.part, e.fate) for e in block.entries]
    assert ("profile", "whole") in parts and ("recent", "whole") in parts
    shown = [e for e in block.entries if e.part == "relevant" and e.fate in ("whole", "cut", "excerpt")]
    assert len(shown) == block.memories
    assert any(e.observation == turn.observation_id for e in block.entries if e.part == "recent")
    assert -1 <= block.floors.below <= block.floors.unknown_name_below <= 1

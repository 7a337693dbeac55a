"""Errors from Python: one base class, one class per surface error code;
bad input (wrong types, None, huge strings, NaN, surrogates) raises a clear
exception naming the field and writes nothing; the interpreter survives."""

from __future__ import annotations

import math
import pickle
import warnings
from datetime import datetime

import pytest

import mnemon
from mnemon import _errors
from conftest import neural_embedder, run_python

CODES = [
    "invalid_input",
    "not_found",
    "conflict",
    "rejected",
    "namespace_not_allowed",
    "response_too_large",
    "locked",
    "unavailable",
    "closed",
    "poisoned",
    "corrupted",
    "incompatible_format",
    "embedder",
    "io",
    "storage",
    "internal",
    "unauthorized",
    "key_required",
    "wrong_key",
]


def test_every_code_has_a_class_under_one_base():
    seen = set()
    for code in CODES:
        e = _errors.error_for(code, "message", "field")
        assert isinstance(e, mnemon.MnemonError)
        assert type(e) is not mnemon.MnemonError, code
        assert e.code == code and e.message == "message" and e.field == "field"
        assert str(e) == "message"
        seen.add(type(e))
        again = pickle.loads(pickle.dumps(e))
        assert type(again) is type(e) and again.code == code and again.field == "field"
    assert len(seen) == len(CODES)
    assert issubclass(mnemon.InvalidInputError, ValueError)
    assert issubclass(mnemon.NotFoundError, LookupError)
    assert issubclass(mnemon.IoError, OSError)
    # A code this version does not know still raises the base class with it.
    future = _errors.error_for("something_new", "m")
    assert type(future) is mnemon.MnemonError and future.code == "something_new"


def test_every_engine_error_variant_is_reachable(engine, data):
    """The engine's `Error` variants that a caller can provoke, each as its class."""
    with pytest.raises(mnemon.NotFoundError):
        engine.get("u1", 999)
    r = engine.remember("u1", "Prefers oolong tea", key="user.drink")
    engine.remember("u1", "Prefers green tea", key="user.drink")
    with pytest.raises(mnemon.ConflictError):
        engine.supersede("u1", r.id, "Prefers black tea")
    with pytest.raises(mnemon.LockedError):
        mnemon.Engine.open(data, embedder="hashing")
    with mnemon.Engine.open(data.parent / "strict", embedder="hashing", pii_policy="reject") as strict:
        with pytest.raises(mnemon.RejectedError):
            strict.remember("u1", "Call me at +1 415 555 0100")
    with pytest.raises(mnemon.EmbedderError):
        mnemon.Engine.open(data.parent / "nomodel", embedder="minilm", models_dir=data.parent / "empty-models")
    small = mnemon.Engine.open(data.parent / "small", embedder="hashing", max_response_tokens=1000)
    with small:
        big = small.remember("u1", "word " * 1500)
        with pytest.raises(mnemon.ResponseTooLargeError):
            small.get("u1", big.id)


def test_a_new_store_without_a_model_is_refused(tmp_path, monkeypatch):
    """`Engine.open(path)` (embedder "auto") with no model installed raises
    EmbedderError naming the command to run and the explicit alternative,
    and creates nothing; `embedder="hashing"` builds the store, which then
    opens under "auto" as it is (an existing store keeps its model)."""
    monkeypatch.delenv("MNEMON_EMBEDDER", raising=False)
    models = tmp_path / "models"
    models.mkdir()
    monkeypatch.setenv("MNEMON_MODELS", str(models))
    path = tmp_path / "agent" / "memory"
    with pytest.raises(mnemon.EmbedderError) as exc:
        mnemon.Engine.open(path)
    assert exc.value.code == "embedder"
    message = str(exc.value)
    for part in [
        f"the store at {path} would recall by exact words only",
        "`mnemon model install e5-small` (multilingual-e5-small, 72 MB)",
        'embedder="hashing"',
        "nothing was created",
    ]:
        assert part in message, (part, message)
    assert sorted(p.name for p in tmp_path.iterdir()) == ["models"]
    from mnemon.langgraph import MnemonStore

    with pytest.raises(mnemon.EmbedderError):
        MnemonStore.open(path)
    with mnemon.Engine.open(path, embedder="hashing") as e:
        e.remember("u1", "Prefers oolong tea")
    with mnemon.Engine.open(path) as e:
        assert e.model_id == "hashing-v1-384"
        assert [h.content for h in e.recall("u1", "tea").hits] == ["Prefers oolong tea"]


def test_a_hashing_store_opened_under_auto_with_a_model_installed_warns(tmp_path, monkeypatch):
    """A store on the hashing embedder, opened with "auto" while a neural
    model is installed, stays on hashing and warns that it recalls by
    exact words only, naming the command that moves it; naming hashing
    draws no warning."""
    neural_embedder()
    monkeypatch.delenv("MNEMON_EMBEDDER", raising=False)
    path = tmp_path / "store"
    with mnemon.Engine.open(path, embedder="hashing") as e:
        e.remember("u1", "Prefers oolong tea")
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        mnemon.Engine.open(path, embedder="hashing").close()
    with pytest.warns(UserWarning, match="recalls by exact words only") as caught:
        e = mnemon.Engine.open(path)
    with e:
        assert e.model_id == "hashing-v1-384"
    assert f"`mnemon --data {path} --embedder " in str(caught[0].message)
    assert caught[0].filename == __file__


def last_seq(engine: mnemon.Engine) -> int:
    return engine.stats().last_seq


BAD_REMEMBER = [
    # (kwargs, field named)
    ({"namespace": "u1", "content": None}, "content"),
    ({"namespace": "u1", "content": 42}, "content"),
    ({"namespace": "u1", "content": b"bytes"}, "content"),
    ({"namespace": "u1", "content": ""}, "content"),
    ({"namespace": "u1", "content": "x" * (32 * 1024 + 1)}, "content"),
    ({"namespace": None, "content": "ok"}, "namespace"),
    ({"namespace": "bad namespace", "content": "ok"}, "namespace"),
    ({"namespace": "n" * 129, "content": "ok"}, "namespace"),
    ({"namespace": ["u1"], "content": "ok"}, "namespace"),
    ({"namespace": "u1", "content": "ok", "importance": math.nan}, "importance"),
    ({"namespace": "u1", "content": "ok", "importance": math.inf}, "importance"),
    ({"namespace": "u1", "content": "ok", "importance": 1.5}, "importance"),
    ({"namespace": "u1", "content": "ok", "importance": "high"}, "importance"),
    ({"namespace": "u1", "content": "ok", "kind": 3}, "kind"),
    ({"namespace": "u1", "content": "ok", "tier": "forever"}, "tier"),
    ({"namespace": "u1", "content": "ok", "entities": "seat"}, "entities"),
    ({"namespace": "u1", "content": "ok", "entities": [1, 2]}, "entities[0]"),
    ({"namespace": "u1", "content": "ok", "entities": {"seat": 1}}, "entities"),
    ({"namespace": "u1", "content": "ok", "key": "nodot"}, "key"),
    ({"namespace": "u1", "content": "ok", "sources": [-1]}, "sources[0]"),
    ({"namespace": "u1", "content": "ok", "sources": [2**64]}, "sources[0]"),
    ({"namespace": "u1", "content": "ok", "event_time": datetime(2024, 1, 1)}, "event_time"),
    ({"namespace": "u1", "content": "ok", "event_time": "yesterday"}, "event_time"),
    ({"namespace": "u1", "content": "ok", "session": object()}, "session"),
    ({"namespace": "u1", "content": "lone \ud800 surrogate"}, "content"),
    ({"namespace": "u1", "content": "ok", "dedup": "maybe"}, "dedup"),
]


@pytest.mark.parametrize("kwargs,field", BAD_REMEMBER, ids=[f"{f}-{i}" for i, (_, f) in enumerate(BAD_REMEMBER)])
def test_bad_remember_raises_and_writes_nothing(engine, kwargs, field):
    engine.remember("u1", "A memory before the bad call")
    before = last_seq(engine)
    with pytest.raises(mnemon.InvalidInputError) as exc:
        engine.remember(**kwargs)
    assert exc.value.code == "invalid_input"
    assert exc.value.field is not None and exc.value.field.startswith(field.split("[")[0]), (exc.value.field, field)
    assert exc.value.message
    assert last_seq(engine) == before
    assert engine.check().consistent


def test_huge_string_is_refused_quickly_and_nothing_written(engine):
    before = last_seq(engine)
    huge = "x" * (64 * 1024 * 1024)
    with pytest.raises(mnemon.InvalidInputError) as exc:
        engine.remember("u1", huge)
    assert exc.value.field == "content"
    with pytest.raises(mnemon.InvalidInputError):
        engine.observe("u1", "s1", huge)
    with pytest.raises(mnemon.InvalidInputError):
        engine.recall("u1", "q", requester="r" * (16 * 1024 * 1024), top_k=0)
    assert last_seq(engine) == before


BAD_READS = [
    (lambda e: e.recall("u1", None), "query"),
    (lambda e: e.recall("u1", "q", top_k=0), "top_k"),
    (lambda e: e.recall("u1", "q", requester="a\x1b[31mb"), "requester"),
    (lambda e: e.context("u1", "q", requester="agent\tone"), "requester"),
    (lambda e: e.recall("u1", "q", session="s\n1"), "session"),
    (lambda e: e.recall("u1", "q", top_k=-3), "top_k"),
    (lambda e: e.recall("u1", "q", top_k=5.0), "top_k"),
    (lambda e: e.recall("u1", "q", top_k=True), "top_k"),
    (lambda e: e.recall("u1", "q", min_similarity=math.nan), "min_similarity"),
    (lambda e: e.recall("u1", "q", kinds=["fact", 7]), "kinds[1]"),
    (lambda e: e.recall("u1", "q", tiers="permanent"), "tiers"),
    (lambda e: e.recall("u1", "q", mode="psychic"), "mode"),
    (lambda e: e.recall("u1", "q", time_range=(1, 2)), "time_range"),
    (lambda e: e.recall("u1", "q", time_range="today"), "time_range"),
    (lambda e: e.recall("u1", "q", as_of=[1]), "as_of"),
    (lambda e: e.recall("u1", "q", candidates=10**9), "candidates"),
    (lambda e: e.context("u1", "q", budget_tokens=0), "budget_tokens"),
    (lambda e: e.context("u1", "q", profile_share=-0.1), "profile_share"),
    (lambda e: e.context("u1", "q", recent_share=1.5), "recent_share"),
    (lambda e: e.context("u1", "q", profile_share=0.7, recent_share=0.5), "recent_share"),
    (lambda e: e.get("u1", "1"), "id"),
    (lambda e: e.get("u1", None), "id"),
    (lambda e: e.history("u1", 1, cursor="garbage"), "cursor"),
    (lambda e: e.list("u1", limit=0), "limit"),
    (lambda e: e.forget("u1"), "target"),
    (lambda e: e.forget("u1", id=1, session="s"), "target"),
    (lambda e: e.forget("u1", all=True, min_similarity=0.5), "min_similarity"),
    (lambda e: e.forget("u1", matching="x", min_similarity=math.nan), "min_similarity"),
    (lambda e: e.apply_extraction("u1", 42), "extraction"),
    (lambda e: e.apply_extraction("u1", "not json"), "extraction"),
    (lambda e: e.end_session("u1", "s", promote=["x"]), "promote[0]"),
    (lambda e: e.extraction_prompt("u1", "s", lang="fr"), "lang"),
    (lambda e: e.call("remember", namespace="u1", content="x", unknown_field=1), "unknown_field"),
]


@pytest.mark.parametrize("call,field", BAD_READS, ids=[f"{f}-{i}" for i, (_, f) in enumerate(BAD_READS)])
def test_bad_calls_raise_invalid_input_naming_the_field(engine, call, field):
    engine.remember("u1", "Something to read")
    before = last_seq(engine)
    with pytest.raises(mnemon.InvalidInputError) as exc:
        call(engine)
    assert exc.value.field is not None
    assert exc.value.field.split("[")[0].split(".")[0] == field.split("[")[0], (exc.value.field, exc.value.message)
    assert last_seq(engine) == before


def test_a_session_that_has_just_begun_is_not_an_error(engine):
    engine.remember("u1", "Lives in Lisbon", key="user.city")
    block = engine.context("u1", "Where do I live?", current_session="s-new")
    assert block.recent == 0
    assert block.profile == 1


def test_bad_open_settings(data):
    bad = [
        ({"embedder": "gpt"}, "embedder"),
        ({"embedder": None}, "embedder"),
        ({"flush_interval_s": math.nan}, "flush_interval_s"),
        ({"flush_interval_s": 0}, "flush_interval_s"),
        ({"flush_interval_s": "1s"}, "flush_interval_s"),
        ({"max_content_bytes": 0}, "max_content_bytes"),
        ({"max_content_bytes": -1}, "max_content_bytes"),
        ({"max_content_bytes": 2**70}, "max_content_bytes"),
        ({"pii_policy": "maybe"}, "pii_policy"),
        ({"injection_policy": "ignore"}, "injection_policy"),
        ({"max_response_tokens": 10}, "max_response_tokens"),
        ({"key_file": 7}, "key_file"),
        ({"key_env": "A=B"}, "key_env"),
    ]
    for kwargs, field in bad:
        with pytest.raises(mnemon.InvalidInputError) as exc:
            mnemon.Engine.open(data, **kwargs)
        assert exc.value.field == field, (kwargs, exc.value)
    with pytest.raises(mnemon.InvalidInputError):
        mnemon.Engine.open(None)  # type: ignore[arg-type]


def test_namespace_validation():
    assert mnemon.Namespace("user:42") == "user:42"
    assert isinstance(mnemon.Namespace("a.b@c-d_e"), str)
    for bad in ["", "has space", "ü", "x" * 129, "tab\t"]:
        with pytest.raises(mnemon.InvalidInputError) as exc:
            mnemon.Namespace(bad)
        assert exc.value.field == "namespace"
    with pytest.raises(mnemon.InvalidInputError):
        mnemon.Namespace(42)  # type: ignore[arg-type]


def test_the_interpreter_survives_a_storm_of_bad_calls():
    """Bad input of every kind in a child interpreter: every call either
    works or raises a MnemonError (anything else escapes and fails the
    child), and the interpreter ends normally (no crash, no abort)."""
    code = r"""
import math, sys, tempfile, mnemon
bad_values = [None, 0, -1, 2**80, 1.5, math.nan, -math.inf, "", "x" * 40000, "\ud800", b"b", [], {}, {"a": object()},
              [math.nan], object(), ("t",), True, "\x00", "名" * 20000]
raised = 0
with tempfile.TemporaryDirectory() as d:
    with mnemon.Engine.open(d, embedder="hashing") as e:
        e.remember("u", "ok")
        for v in bad_values:
            for call in (lambda: e.remember("u", v), lambda: e.remember(v, "ok"), lambda: e.recall("u", v),
                         lambda: e.recall("u", "q", top_k=v), lambda: e.get("u", v), lambda: e.forget("u", id=v),
                         lambda: e.remember("u", "ok", importance=v), lambda: e.observe("u", v, "t"),
                         lambda: e.apply_extraction("u", v), lambda: e.recall("u", "q", kinds=v)):
                try:
                    call()
                except mnemon.MnemonError:
                    raised += 1
        assert e.check().consistent
print("raised", raised)
"""
    p = run_python(code)
    assert p.returncode == 0, p.stderr
    assert p.stdout.startswith("raised ")
    assert int(p.stdout.split()[1]) > 0

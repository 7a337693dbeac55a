"""Encrypted stores from Python: `Engine.open(key_file=..., key_env=...)`,
the typed `KeyRequiredError` / `WrongKeyError`, a store the CLI made opened
here with the same key, the LangGraph store on an encrypted store, and
`forget_user`, which forgets a user's namespaces and shreds their keys."""

from __future__ import annotations

import os
import pathlib
import secrets

import pytest

import mnemon
from conftest import cli, files_containing


def new_key(path: pathlib.Path) -> pathlib.Path:
    """A key file as `mnemon key new` writes it: 64 hex digits, mode 0600."""
    fd = os.open(path, os.O_WRONLY | os.O_CREAT | os.O_EXCL, 0o600)
    with os.fdopen(fd, "w") as f:
        f.write(secrets.token_hex(32) + "\n")
    return path


@pytest.fixture
def key(tmp_path: pathlib.Path) -> pathlib.Path:
    return new_key(tmp_path / "store.key")


@pytest.fixture
def no_key_env(monkeypatch: pytest.MonkeyPatch) -> None:
    """No key from the environment: each test names its own."""
    for var in ("MNEMON_KEY_FILE", "MNEMON_KEY", "MNEMON_KEYRING"):
        monkeypatch.delenv(var, raising=False)


def fill(data: pathlib.Path, key: pathlib.Path) -> None:
    with mnemon.Engine.open(data, embedder="hashing", key_file=key) as e:
        e.remember("alice", "Alice prefers a window seat on long flights")
        e.remember("alice", "Alice is allergic to peanuts")
        e.remember("alice:work", "Alice's team ships the billing service on Thursdays")
        e.observe("alice:work", "s1", "Can you book the Lisbon offsite?")
        e.remember("bob", "Bob lives in Porto")


def test_an_encrypted_store_opens_with_its_key_only(data, key, tmp_path, no_key_env):
    fill(data, key)
    # Sealed on disk: the content is nowhere in the store's files.
    assert files_containing(data, b"allergic to peanuts") == []
    with mnemon.Engine.open(data, embedder="hashing", key_file=key) as e:
        hits = e.recall("alice", "which seat does Alice like on a flight").hits
        assert "window seat" in hits[0].content

    with pytest.raises(mnemon.KeyRequiredError) as none:
        mnemon.Engine.open(data, embedder="hashing")
    assert none.value.code == "key_required" and none.value.field == "key"
    assert isinstance(none.value, PermissionError)

    with pytest.raises(mnemon.WrongKeyError) as wrong:
        mnemon.Engine.open(data, embedder="hashing", key_file=new_key(tmp_path / "other.key"))
    assert wrong.value.code == "wrong_key" and wrong.value.field == "key"

    with pytest.raises(mnemon.KeyRequiredError) as missing:
        mnemon.Engine.open(data, embedder="hashing", key_file=tmp_path / "nowhere.key")
    assert "nowhere.key" in missing.value.message

    # Nothing was written by the refusals.
    with mnemon.Engine.open(data, embedder="hashing", key_file=key) as e:
        assert len(e.list("alice").memories) == 2


def test_the_key_comes_from_a_named_variable_or_the_environment(data, key, monkeypatch, no_key_env):
    fill(data, key)
    monkeypatch.setenv("MY_APP_MNEMON_KEY", key.read_text().strip())
    with mnemon.Engine.open(data, embedder="hashing", key_env="MY_APP_MNEMON_KEY") as e:
        assert e.list("bob").memories[0].content == "Bob lives in Porto"
    monkeypatch.setenv("MNEMON_KEY_FILE", str(key))
    with mnemon.Engine.open(data, embedder="hashing") as e:
        assert len(e.list("alice").memories) == 2
    monkeypatch.delenv("MNEMON_KEY_FILE")
    monkeypatch.setenv("MNEMON_KEY", key.read_text().strip())
    with mnemon.Engine.open(data, embedder="hashing") as e:
        assert len(e.list("alice").memories) == 2


def test_bad_key_settings_are_refused_naming_the_setting(data, no_key_env):
    with pytest.raises(mnemon.InvalidInputError) as both:
        mnemon.Engine.open(data, embedder="hashing", key_file="k", key_env="K")
    assert both.value.field == "key_env"
    with pytest.raises(mnemon.InvalidInputError) as typed:
        mnemon.Engine.open(data, embedder="hashing", key_file=7)  # type: ignore[arg-type]
    assert typed.value.field == "key_file"
    with pytest.raises(mnemon.InvalidInputError) as empty:
        mnemon.Engine.open(data, embedder="hashing", key_env="")
    assert empty.value.field == "key_env"
    assert not data.exists(), "a refused setting created the store"


def test_a_store_the_cli_encrypted_opens_here_with_the_same_key(data, key, no_key_env):
    made = cli(data, "--key-file", str(key), "remember", "--namespace", "u1", "Prefers oolong tea")
    assert made.returncode == 0, made.stderr
    refused = cli(data, "--json", "list", "--namespace", "u1")
    assert refused.returncode != 0 and '"key_required"' in refused.stdout + refused.stderr
    with mnemon.Engine.open(data, embedder="hashing", key_file=key) as e:
        assert e.list("u1").memories[0].content == "Prefers oolong tea"


def test_the_langgraph_store_opens_an_encrypted_store(data, key, no_key_env):
    from mnemon.langgraph import MnemonStore

    store = MnemonStore.open(data, embedder="hashing", key_file=key)
    try:
        store.put(("users", "alice"), "seat", {"text": "window"})
    finally:
        store.close()
    with pytest.raises(mnemon.KeyRequiredError):
        MnemonStore.open(data, embedder="hashing")
    store = MnemonStore.open(data, embedder="hashing", key_file=key)
    try:
        item = store.get(("users", "alice"), "seat")
        assert item is not None and item.value == {"text": "window"}
    finally:
        store.close()


def test_forget_user_shreds_each_namespace(data, key, no_key_env):
    fill(data, key)
    with mnemon.Engine.open(data, embedder="hashing", key_file=key) as e:
        r = e.forget_user(["alice", "alice:work"], reason="account closed")
        assert isinstance(r, mnemon.ForgetUserResponse)
        assert [n.namespace for n in r.namespaces] == ["alice", "alice:work"]
        assert [(n.memories, n.observations, n.key_shredded) for n in r.namespaces] == [(2, 0, True), (1, 1, True)]
        assert (r.memories, r.observations) == (3, 1)
        assert e.list("alice").memories == [] and e.list("alice:work").memories == []
        assert e.list("bob").memories[0].content == "Bob lives in Porto"
        again = e.forget_user(["alice", "alice:work"])
        assert again.memories == 0 and len(again.namespaces) == 2
    check = cli(data, "--key-file", str(key), "--json", "verify-erasure", "--shredded", "alice")
    assert check.returncode == 0, check.stderr
    assert '"verified":true' in check.stdout.replace(" ", "")


def test_verify_shred_proves_the_store_a_backup_and_an_export_unreadable(data, key, tmp_path, no_key_env):
    fill(data, key)
    backup, export = tmp_path / "before-backup", tmp_path / "before.jsonl"
    with mnemon.Engine.open(data, embedder="hashing", key_file=key) as e:
        e.backup(backup)
        e.export(export)
        with pytest.raises(mnemon.InvalidInputError) as never:
            e.verify_shred("alice")
        assert never.value.field == "namespace"
        with pytest.raises(mnemon.NotFoundError):
            e.verify_shred("nobody")
        preview = e.forget("alice", all=True, dry_run=True)
        assert preview.dry_run and preview.key_shredded, "the preview warns that the key would go"
        e.forget_user(["alice"])
        report = e.verify_shred("alice", backups=[backup], exports=[str(export)])
        assert isinstance(report, mnemon.ShredReport)
        assert report.namespace == "alice" and report.shredded_keys == [1]
        assert report.verified
        by_source = {c.source: c for c in report.checks}
        assert set(by_source) == {"store", str(backup), str(export)}
        for c in report.checks:
            # Both memories of alice were sealed in every copy; none opens.
            assert c.sealed >= 2 and (c.opened, c.plain) == (0, 0), c
        with pytest.raises(mnemon.InvalidInputError) as one_path:
            e.verify_shred("alice", backups=str(backup))  # type: ignore[arg-type]
        assert one_path.value.field == "backups"
        with pytest.raises(mnemon.InvalidInputError) as not_a_backup:
            e.verify_shred("alice", backups=[tmp_path])
        assert not_a_backup.value.field == "backups"
        # Files that prove nothing are refused, never counted as clean.
        junk = tmp_path / "junk.txt"
        junk.write_text("hello\n")
        for bad in [junk, backup]:
            with pytest.raises(mnemon.InvalidInputError) as refused:
                e.verify_shred("alice", exports=[bad])
            assert refused.value.field == "exports"
        shredded = {s.namespace: s.key_shredded for s in e.namespaces().namespaces}
        assert shredded["alice"] and not shredded["bob"]
        [forgotten] = [ev for ev in e.log("alice").events if "forgotten" in ev.body]
        assert forgotten.body["forgotten"]["reason"] == "[unreadable: sealed under a destroyed key]"
    # A copy of another store (another keyring) proves nothing of this one.
    other_key = new_key(tmp_path / "other.key")
    other = tmp_path / "other"
    with mnemon.Engine.open(other, embedder="hashing", key_file=other_key) as o:
        o.remember("alice", "Another store's Alice likes jazz")
        o.export(tmp_path / "other.jsonl")
        o.backup(tmp_path / "other-backup")
    plain = tmp_path / "plain"
    with mnemon.Engine.open(plain, embedder="hashing") as o:
        o.remember("zz", "A plain store's note about jazz")
        o.export(tmp_path / "plain.jsonl")
        o.backup(tmp_path / "plain-backup")
    fifo = tmp_path / "a-fifo"
    os.mkfifo(fifo)
    before = {p: p.read_bytes() for p in backup.rglob("*") if p.is_file()}
    with mnemon.Engine.open(data, embedder="hashing", key_file=key) as e:
        for kw, field in [
            ({"exports": [tmp_path / "other.jsonl"]}, "exports"),
            ({"backups": [tmp_path / "other-backup"]}, "backups"),
            ({"exports": [tmp_path / "plain.jsonl"]}, "exports"),
            ({"backups": [tmp_path / "plain-backup"]}, "backups"),
        ]:
            with pytest.raises(mnemon.InvalidInputError) as foreign:
                e.verify_shred("alice", **kw)
            assert foreign.value.field == field, foreign.value.message
            assert "another store" in foreign.value.message or "without encryption" in foreign.value.message
        with pytest.raises(mnemon.InvalidInputError) as not_regular:
            e.verify_shred("alice", exports=[fifo])
        assert not_regular.value.field == "exports"
        with pytest.raises(mnemon.InvalidInputError) as missing:
            e.verify_shred("alice", exports=[tmp_path / "nowhere.jsonl"])
        assert missing.value.field == "exports"
        assert e.verify_shred("alice", backups=[backup], exports=None).verified
    # The proof leaves the backups it reads as they were.
    after = {p: p.read_bytes() for p in backup.rglob("*") if p.is_file()}
    assert after == before
    # The CLI's proof is the same operation, with the same answer.
    cli_check = cli(data, "--key-file", str(key), "--json", "verify-erasure", "--shredded", "alice", "--backup", str(backup))
    assert cli_check.returncode == 0, cli_check.stderr
    assert '"verified":true' in cli_check.stdout.replace(" ", "")


def test_verify_shred_refuses_a_plain_store(engine):
    engine.remember("u1", "Prefers tea to coffee")
    engine.forget("u1", all=True)
    with pytest.raises(mnemon.InvalidInputError) as plain:
        engine.verify_shred("u1")
    assert plain.value.field == "namespace" and "not encrypted" in plain.value.message


def test_forget_user_refuses_bad_sets_and_writes_nothing(engine):
    engine.remember("u1", "Prefers tea to coffee")
    before = engine.stats().last_seq
    with pytest.raises(mnemon.InvalidInputError) as empty:
        engine.forget_user([])
    assert empty.value.field == "namespaces"
    with pytest.raises(mnemon.InvalidInputError) as bad:
        engine.forget_user(["u1", "bad name"])
    assert bad.value.field == "namespaces[1]"
    with pytest.raises(mnemon.InvalidInputError) as twice:
        engine.forget_user(["u1", "u1"])
    assert twice.value.field == "namespaces"
    with pytest.raises(mnemon.InvalidInputError):
        engine.forget_user("u1")  # type: ignore[arg-type]
    with pytest.raises(mnemon.NotFoundError) as unknown:
        engine.forget_user(["u1", "nobody"])
    assert "nobody" in unknown.value.message
    assert engine.stats().last_seq == before
    assert len(engine.list("u1").memories) == 1
    # On a store without encryption, the same forget, no key to destroy.
    r = engine.forget_user(["u1"])
    assert r.namespaces[0].memories == 1 and r.namespaces[0].key_shredded is False


def test_a_text_proof_on_an_encrypted_store_searches_the_opened_records(data, key, no_key_env):
    fill(data, key)
    secret = "Alice is allergic to peanuts"
    with mnemon.Engine.open(data, embedder="hashing", key_file=key) as e:
        # Still stored: the files hold it sealed, the opened records in plain.
        r = e.verify_erasure([secret])
        assert not r.verified
        assert r.opened > 0
        assert all(m.path.startswith("opened:") for m in r.matches)
        target = next(m for m in e.list("alice").memories if m.content == secret)
        e.forget("alice", id=target.id, reason="asked to")
        assert e.compact().verified
        assert e.verify_erasure([secret]).verified

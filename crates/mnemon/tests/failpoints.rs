//! Injected I/O failures (the `fail` crate) at append, flush, the
//! compaction steps and the keyring's replacement. Fail-stop: a failed append or flush poisons the writer,
//! later writes get `Error::Poisoned` (a failed flush is never retried),
//! reads keep working, and a reopen has every acknowledged write.
//! `return(enospc)` injects the OS error of a full disk.
//!
//! Run: `cargo test --release --no-default-features --features failpoints --test failpoints`.
#![cfg(feature = "failpoints")]

use std::path::Path;

use mnemon::{DedupMode, Engine, Error, ForgetRequest, MemoryId, Namespace, NewMemory};

fn ns() -> Namespace {
    Namespace::new("u1").unwrap()
}

fn text(i: usize) -> String {
    let word: String = (0..8).map(|k| char::from(b'a' + ((i * 7 + k * 3) % 26) as u8)).collect();
    format!("failpoint memory {word} number {}", char::from(b'a' + (i % 26) as u8))
}

fn fill(e: &Engine, from: usize, n: usize, acked: &mut Vec<(MemoryId, String)>) {
    for i in from..from + n {
        let t = text(i);
        let id = e.remember(&ns(), NewMemory::new(&t).dedup(DedupMode::Off)).unwrap().id;
        acked.push((id, t));
    }
}

fn reopen_and_check(dir: &Path, acked: &[(MemoryId, String)], gone: &[MemoryId]) {
    let e = Engine::open(dir).unwrap();
    for (id, t) in acked {
        if gone.contains(id) {
            assert!(matches!(e.get(&ns(), *id), Err(Error::NotFound { .. })), "forgotten {id} readable");
        } else {
            assert_eq!(&e.get(&ns(), *id).unwrap().content, t);
        }
    }
    let r = e.check().unwrap();
    assert!(r.consistent, "{r:?}");
    assert_eq!(r.records, r.last_seq);
    e.close().unwrap();
}

/// An append or flush failure poisons the writer for good.
fn io_failure_poisons(point: &str, action: &str) {
    let dir = tempfile::tempdir().unwrap();
    let e = Engine::open(dir.path()).unwrap();
    let mut acked = Vec::new();
    fill(&e, 0, 10, &mut acked);
    fail::cfg(point, action).unwrap();
    let err = e.remember(&ns(), NewMemory::new(text(100)).dedup(DedupMode::Off)).unwrap_err();
    fail::remove(point);
    let Error::Poisoned(msg) = &err else { panic!("{point}: expected Poisoned, got {err:?}") };
    if action.contains("enospc") {
        assert!(msg.contains("os error 28"), "{point}: {msg}");
    }
    // No retry: the failpoint is gone, the engine still refuses writes.
    let again = e.remember(&ns(), NewMemory::new(text(101)).dedup(DedupMode::Off)).unwrap_err();
    assert!(matches!(again, Error::Poisoned(_)), "{again:?}");
    assert!(matches!(e.sync(), Err(Error::Poisoned(_))));
    assert!(e.stats().poisoned.is_some());
    // Reads keep working.
    for (id, t) in &acked {
        assert_eq!(&e.get(&ns(), *id).unwrap().content, t);
    }
    assert!(matches!(e.close(), Err(Error::Poisoned(_))));
    reopen_and_check(dir.path(), &acked, &[]);
    println!(
        "failpoints: {point} {action}: write refused, writer poisoned, reads served, reopen recovered {} acknowledged",
        acked.len()
    );
}

/// A compaction step failing leaves a store that reopens with every
/// acknowledged write, and the forgotten memory stays forgotten.
fn compaction_failure(point: &str) {
    let dir = tempfile::tempdir().unwrap();
    let e = Engine::open(dir.path()).unwrap();
    let mut acked = Vec::new();
    fill(&e, 0, 20, &mut acked);
    let gone = acked[3].0;
    e.forget(&ns(), ForgetRequest::Memory(gone), "failpoint test").unwrap();
    fail::cfg(point, "return").unwrap();
    let r = e.compact();
    fail::remove(point);
    assert!(r.is_err(), "{point}: compaction should fail");
    for (id, t) in &acked {
        if *id != gone {
            assert_eq!(&e.get(&ns(), *id).unwrap().content, t);
        }
    }
    let _ = e.close();
    reopen_and_check(dir.path(), &acked, &[gone]);
    // The store compacts cleanly afterwards.
    let e = Engine::open(dir.path()).unwrap();
    assert!(e.compact().unwrap().verified);
    e.close().unwrap();
    reopen_and_check(dir.path(), &acked, &[gone]);
    println!(
        "failpoints: {point}: compaction failed, reopen recovered {} acknowledged, later compaction verified",
        acked.len()
    );
}

/// Under interval durability a failed append poisons the engine with
/// events planned but never written; the timer's later flush must not
/// record them in `LAST_SEQ`, or the next open would take the whole store
/// for damaged. The store reopens with every acknowledged write.
fn interval_failure_keeps_the_mark_honest() {
    let dir = tempfile::tempdir().unwrap();
    let e = Engine::builder(dir.path())
        .durability(mnemon::Durability::Interval(std::time::Duration::from_millis(100)))
        .open()
        .unwrap();
    let mut acked = Vec::new();
    fill(&e, 0, 10, &mut acked);
    fail::cfg("log::append", "return").unwrap();
    let err = e.remember(&ns(), NewMemory::new(text(100)).dedup(DedupMode::Off)).unwrap_err();
    fail::remove("log::append");
    assert!(matches!(err, Error::Poisoned(_)), "{err:?}");
    // The timer fires and flushes what was appended before the failure.
    std::thread::sleep(std::time::Duration::from_millis(400));
    let _ = e.close();
    let mark = std::fs::read_to_string(dir.path().join("LAST_SEQ")).unwrap_or_default();
    let n: u64 = mark.trim().parse().unwrap_or(0);
    assert!(n <= acked.len() as u64, "the mark {n} names events that never reached the log");
    reopen_and_check(dir.path(), &acked, &[]);
    println!("failpoints: interval append failure: mark {n}, reopen recovered {} acknowledged", acked.len());
}

/// A keyring that cannot be replaced: a rotation returns the error and
/// the old key still opens the store, with every write; a shred whose
/// keyring save fails is not acknowledged, and the next open finishes it
/// (its forget is durable).
fn keyring_failure() {
    use mnemon::crypt::{Kek, StaticKey};
    use std::sync::Arc;
    let dir = tempfile::tempdir().unwrap();
    let (old, new) = (Kek::generate(), Kek::generate());
    let open = |k: &Kek| Engine::builder(dir.path()).key_provider(Arc::new(StaticKey(k.clone()))).open();
    let e = open(&old).unwrap();
    let mut acked = Vec::new();
    fill(&e, 0, 10, &mut acked);
    fail::cfg("keyring::rename::rotate", "return").unwrap();
    assert!(matches!(e.rotate_key(&StaticKey(new.clone())), Err(Error::Io(_))));
    fail::remove("keyring::rename::rotate");
    fill(&e, 10, 5, &mut acked);
    e.close().unwrap();
    assert!(matches!(open(&new), Err(Error::WrongKey(_))));
    let e = open(&old).unwrap();
    for (id, t) in &acked {
        assert_eq!(&e.get(&ns(), *id).unwrap().content, t);
    }
    fail::cfg("keyring::rename::shred", "return").unwrap();
    assert!(e.forget(&ns(), ForgetRequest::All, "closed").is_err(), "a shred whose key survived was acknowledged");
    fail::remove("keyring::rename::shred");
    assert!(e.close().is_err(), "the failed flush poisoned the writer");
    let e = open(&old).unwrap();
    for (id, _) in &acked {
        assert!(e.get(&ns(), *id).is_err(), "memory {id} outlived a durable forget of its namespace");
    }
    assert!(e.verify_shred(&ns(), &[], &[]).unwrap().verified);
    assert!(e.check().unwrap().consistent);
    e.close().unwrap();
}

#[test]
fn injected_failures() {
    // One test: failpoints are process-wide.
    let scenario = fail::FailScenario::setup();
    io_failure_poisons("log::append", "return");
    io_failure_poisons("log::flush", "return");
    io_failure_poisons("log::append", "return(enospc)");
    io_failure_poisons("log::flush", "return(enospc)");
    for p in ["compact::copy", "compact::switch", "compact::delete"] {
        compaction_failure(p);
    }
    interval_failure_keeps_the_mark_honest();
    keyring_failure();
    scenario.teardown();
}

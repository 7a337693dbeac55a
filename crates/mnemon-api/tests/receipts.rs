//! Compaction receipts through the command surface: stored with counts and
//! digests only, kept across reopening, compactions and backups, paged by
//! the `receipts` op.

#[path = "../../mnemon/tests/common/files.rs"]
mod common;

use std::path::PathBuf;

use common::files_containing;
use mnemon::{DedupMode, Engine, ForgetRequest, Namespace, NewMemory, NewObservation, Role};
use rand::distributions::Alphanumeric;
use rand::Rng;

type R = Result<(), Box<dyn std::error::Error>>;

fn ns(name: &str) -> Namespace {
    Namespace::new(name).unwrap()
}

fn mem(text: &str) -> NewMemory {
    NewMemory::new(text).dedup(DedupMode::Off)
}

fn alnum_canary() -> String {
    rand::thread_rng().sample_iter(&Alphanumeric).take(32).map(char::from).collect()
}

/// 32 CJK ideographs (multi-byte UTF-8), drawn at random.
fn unicode_canary() -> String {
    let mut rng = rand::thread_rng();
    (0..32).map(|_| char::from_u32(rng.gen_range(0x4E00..0x9FA5)).unwrap()).collect()
}

/// Every compaction leaves a stored receipt (counts and digests only) that
/// survives reopening, later compactions and backups; the surface's
/// `receipts` op pages them newest first and refuses bad cursors and
/// restricted policies.
#[test]
fn compaction_receipts_are_kept_without_erased_content() -> R {
    use mnemon_api::{self as api, ErrorCode, NamespacePolicy, Request};
    use serde_json::json;
    let dir = tempfile::tempdir()?;
    let data = dir.path().join("data");
    let u1 = ns("u1");
    let (a, b) = (alnum_canary(), unicode_canary());
    let e = Engine::open(&data)?;
    assert!(e.compaction_receipts()?.is_empty());
    let m = e.remember(&u1, mem(&format!("My first secret is {a}")))?;
    let o = e.observe(&u1, NewObservation::new("s1", Role::User, format!("Said aloud: {a}")))?;
    e.remember(&u1, mem("The user likes rowing on quiet lakes"))?;
    e.forget(&u1, ForgetRequest::Memory(m.id), "user request")?;
    e.forget(&u1, ForgetRequest::Observation(o), "user request")?;
    let first = e.compact()?;
    e.close()?;

    let e = Engine::open(&data)?;
    let m2 = e.remember(&u1, mem(&format!("My second secret is {b}")))?;
    e.forget(&u1, ForgetRequest::Memory(m2.id), "user request")?;
    let second = e.compact()?;
    e.close()?;

    let e = Engine::open(&data)?;
    let stored = e.compaction_receipts()?;
    assert_eq!(stored.len(), 2, "{stored:?}");
    let (newest, oldest) = (&stored[0], &stored[1]);
    assert_eq!((newest.previous_generation, newest.generation), (2, 3));
    assert_eq!((oldest.previous_generation, oldest.generation), (1, 2));
    assert_eq!((oldest.memories_erased, oldest.observations_erased, oldest.vectors_dropped), (1, 1, 1));
    assert_eq!((newest.memories_erased, newest.observations_erased, newest.vectors_dropped), (1, 0, 1));
    for (s, full) in [(oldest, &first), (newest, &second)] {
        let c = full.compaction.as_ref().unwrap();
        assert_eq!(s.last_seq, full.last_seq);
        assert_eq!(s.events_copied, c.events_copied);
        assert_eq!((s.bytes_before, s.bytes_after), (c.bytes_before, Some(c.bytes_after)));
        let scan = s.scan.as_ref().expect("a finished compaction records its scan");
        assert!(scan.verified && scan.matches == 0);
        assert_eq!(scan.files, full.scan.files.len() as u64);
        assert_eq!(scan.bytes_scanned, full.scan.bytes_scanned);
        assert_eq!(scan.patterns, full.scan.patterns as u64);
        assert!(s.at <= scan.at);
        // The stored summary is the full receipt's, bar the ids and the
        // time the new generation was complete.
        let mut expect = mnemon::CompactionReceipt::from_erasure(full).unwrap();
        expect.at = s.at;
        assert_eq!(&expect, s);
    }
    assert_ne!(oldest.scan.as_ref().unwrap().files_sha256, newest.scan.as_ref().unwrap().files_sha256);
    let text = format!("{stored:?} {}", serde_json::to_string(&stored)?);
    for needle in [a.as_str(), b.as_str(), "secret"] {
        assert!(!text.contains(needle), "erased content in a stored receipt: {text}");
    }
    // Still no erased byte anywhere on disk, receipts included.
    for needle in [a.as_bytes(), b.as_bytes()] {
        assert_eq!(files_containing(&data, needle), Vec::<PathBuf>::new());
    }

    // The surface: newest first, paged by generation, typed errors.
    let call = |v: serde_json::Value| Request::from_value(v).and_then(|r| api::execute(&e, r)).map(|r| r.to_value());
    let page = call(json!({"op": "receipts", "limit": 1}))?;
    assert_eq!(page["receipts"].as_array().unwrap().len(), 1);
    assert_eq!(page["receipts"][0]["generation"], 3);
    assert_eq!(page["next_cursor"], "3");
    let rest = call(json!({"op": "receipts", "cursor": page["next_cursor"]}))?;
    assert_eq!(rest["receipts"][0]["generation"], 2);
    assert!(rest.get("next_cursor").is_none(), "{rest}");
    assert_eq!(rest["receipts"][0], serde_json::to_value(oldest)?);
    for (bad, field) in [
        (json!({"op": "receipts", "cursor": "x"}), "cursor"),
        (json!({"op": "receipts", "cursor": "-1"}), "cursor"),
        (json!({"op": "receipts", "limit": 0}), "limit"),
        (json!({"op": "receipts", "namespace": "u1"}), "namespace"),
    ] {
        let err = call(bad.clone()).unwrap_err();
        assert_eq!((err.code, err.field.as_deref()), (ErrorCode::InvalidInput, Some(field)), "{bad}: {err:?}");
    }
    let only = NamespacePolicy::Only(u1.clone());
    let refused = Request::from_value_with(json!({"op": "receipts"}), &only).unwrap_err();
    assert_eq!(refused.code, ErrorCode::NamespaceNotAllowed);
    let tiny = api::Limits { max_response_tokens: 250 };
    let err = api::execute_with(&e, Request::from_value(json!({"op": "receipts"}))?, &tiny).unwrap_err();
    assert_eq!(err.code, ErrorCode::ResponseTooLarge);

    // A backup keeps them; a store restored from an export starts without.
    e.backup(dir.path().join("backup"))?;
    e.export(dir.path().join("export.jsonl"))?;
    let seq = e.last_seq();
    e.close()?;
    let copy = Engine::open(dir.path().join("backup"))?;
    assert_eq!(copy.compaction_receipts()?, stored);
    copy.close()?;
    mnemon::portability::restore(&dir.path().join("export.jsonl"), &dir.path().join("restored"))?;
    let restored = Engine::open(dir.path().join("restored"))?;
    assert_eq!(restored.last_seq(), seq);
    assert!(restored.compaction_receipts()?.is_empty());
    Ok(())
}

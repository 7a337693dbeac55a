//! Crash consistency of compaction: a child process (this test binary,
//! re-run with `MNEMON_CRASH_CHILD_DIR` set) fills a store, forgets a canary,
//! and compacts with `MNEMON_CRASH_AT` naming a step, so it aborts there.
//! The parent reopens the store and checks the three guarantees: it opens,
//! every acknowledged surviving memory is there, and after the compaction
//! that open finishes, no file holds the canary.

mod common;
use common::files_containing;
use std::io::Write;
use std::path::{Path, PathBuf};
use std::process::Command;
use std::sync::{Arc, Mutex};

use mnemon::{DedupMode, Engine, ForgetRequest, MemoryId, Namespace, NewMemory, NewObservation, Role};
use rand::distributions::Alphanumeric;
use rand::Rng;

const CHILD_DIR: &str = "MNEMON_CRASH_CHILD_DIR";
const CHILD_ACKS: &str = "MNEMON_CRASH_CHILD_ACKS";
const CHILD_CANARY: &str = "MNEMON_CRASH_CHILD_CANARY";

fn ns(name: &str) -> Namespace {
    Namespace::new(name).unwrap()
}

/// The child's work. Not a test on its own: without the environment
/// variables it returns at once.
#[test]
#[doc(hidden)]
fn crash_child() {
    let (Ok(dir), Ok(acks), Ok(canary)) =
        (std::env::var(CHILD_DIR), std::env::var(CHILD_ACKS), std::env::var(CHILD_CANARY))
    else {
        return;
    };
    let acks = Arc::new(Mutex::new(std::fs::File::create(acks).unwrap()));
    let e = Engine::open(&dir).unwrap();
    let (u1, u2) = (ns("u1"), ns("u2"));
    let ack = move |id: MemoryId, ns: &str, text: &str| {
        // Unbuffered: an abort after this line keeps it (page cache).
        acks.lock().unwrap().write_all(format!("{}\t{ns}\t{text}\n", id.0).as_bytes()).unwrap();
    };
    for i in 0..60 {
        let n = if i % 2 == 0 { &u1 } else { &u2 };
        let text = format!("surviving memory {i} of {}", n.as_str());
        let id = e.remember(n, NewMemory::new(&text).dedup(DedupMode::Off)).unwrap().id;
        ack(id, n.as_str(), &text);
    }
    let secret = format!("the secret canary is {canary}");
    let m = e.remember(&u1, NewMemory::new(&secret).dedup(DedupMode::Off)).unwrap().id;
    let o = e.observe(&u1, NewObservation::new("s1", Role::User, format!("I told you {canary} earlier"))).unwrap();
    e.forget(&u1, ForgetRequest::Memory(m), "crash test").unwrap();
    e.forget(&u1, ForgetRequest::Observation(o), "crash test").unwrap();
    // A writer that keeps going while compaction runs: its writes queue and
    // are acknowledged only once they are durable.
    let w = {
        let e = e.clone();
        let u2 = u2.clone();
        let ack = ack.clone();
        std::thread::spawn(move || {
            for i in 0..20 {
                let text = format!("late memory {i}");
                let r = e.remember(&u2, NewMemory::new(&text).dedup(DedupMode::Off)).unwrap();
                ack(r.id, "u2", &text);
            }
        })
    };
    let receipt = e.compact().unwrap();
    assert!(receipt.verified);
    w.join().unwrap();
    e.close().unwrap();
}

fn current(dir: &Path) -> String {
    std::fs::read_to_string(dir.join("CURRENT")).unwrap().trim().to_string()
}

/// Runs the child with a crash at `step` (or none), then checks recovery.
fn crash_at(step: Option<&str>) {
    let tmp = tempfile::tempdir().unwrap();
    let data = tmp.path().join("data");
    let acks = tmp.path().join("acks.tsv");
    let canary: String = rand::thread_rng().sample_iter(&Alphanumeric).take(32).map(char::from).collect();
    let mut cmd = Command::new(std::env::current_exe().unwrap());
    cmd.args(["--exact", "crash_child", "--nocapture", "--test-threads=1"])
        .env(CHILD_DIR, &data)
        .env(CHILD_ACKS, &acks)
        .env(CHILD_CANARY, &canary)
        .env_remove("MNEMON_CRASH_AT");
    if let Some(s) = step {
        cmd.env("MNEMON_CRASH_AT", s);
    }
    let out = cmd.output().unwrap();
    let log = format!("{}\n{}", String::from_utf8_lossy(&out.stdout), String::from_utf8_lossy(&out.stderr));
    match step {
        None => assert!(out.status.success(), "child failed:\n{log}"),
        Some(s) => {
            assert!(!out.status.success(), "child was to crash at {s}:\n{log}");
            #[cfg(unix)]
            {
                use std::os::unix::process::ExitStatusExt;
                assert_eq!(out.status.signal(), Some(6), "child should abort (SIGABRT) at {s}:\n{log}");
            }
            // The state the crash left, before recovery.
            assert!(data.join("COMPACTING").exists(), "marker missing after a crash at {s}");
            let before_switch = matches!(s, "copy" | "fsync");
            assert_eq!(current(&data), if before_switch { "gen-000001" } else { "gen-000002" });
            assert!(data.join("gen-000002").exists());
            if s != "delete" {
                assert!(data.join("gen-000001").exists());
            }
            if before_switch {
                assert!(!files_containing(&data, canary.as_bytes()).is_empty(), "canary should still be in gen 1");
            }
        }
    }

    let e = Engine::open(&data).expect("the store opens after the crash");
    match step {
        None => assert!(e.open_report().erasure.is_none()),
        Some(s) => {
            let r = e.open_report().erasure.as_ref().expect("open finishes the interrupted compaction");
            assert!(r.verified, "{r}");
            // Before the switch the redone compaction erases the canary itself;
            // after it, the canary left with the deleted generation.
            assert_eq!(r.forgotten_memories.len(), usize::from(matches!(s, "copy" | "fsync")));
        }
    }
    assert!(!data.join("COMPACTING").exists());
    // The stored receipts: one per compaction that took effect. A crash
    // before the switch leaves none for the abandoned attempt; a crash after
    // it leaves that compaction's receipt without a scan, next to the one of
    // the compaction open ran.
    let stored: Vec<(u64, u64, u64, Option<bool>)> = e
        .compaction_receipts()
        .unwrap()
        .iter()
        .map(|r| (r.generation, r.memories_erased, r.observations_erased, r.scan.as_ref().map(|s| s.verified)))
        .collect();
    match step {
        None | Some("copy" | "fsync") => assert_eq!(stored, vec![(2, 1, 1, Some(true))]),
        Some(_) => assert_eq!(stored, vec![(3, 0, 0, Some(true)), (2, 1, 1, None)]),
    }
    let gens: Vec<String> = std::fs::read_dir(&data)
        .unwrap()
        .flatten()
        .map(|e| e.file_name().to_string_lossy().into_owned())
        .filter(|n| n.starts_with("gen-"))
        .collect();
    assert_eq!(gens, vec![current(&data)], "exactly one generation remains");

    let acked = std::fs::read_to_string(&acks).unwrap();
    let mut n = 0;
    for line in acked.lines() {
        let mut parts = line.splitn(3, '\t');
        let (id, namespace, text) = (parts.next().unwrap(), parts.next().unwrap(), parts.next().unwrap());
        let m = e.get(&ns(namespace), MemoryId(id.parse().unwrap())).expect("acknowledged memory survives");
        assert_eq!(m.content, text);
        n += 1;
    }
    assert!(n >= 60, "{n} acknowledged memories");
    assert_eq!(e.stats().pending_erasure, 0);
    e.close().unwrap();
    assert_eq!(files_containing(&data, canary.as_bytes()), Vec::<PathBuf>::new(), "canary bytes remain on disk");
    let e = Engine::open(&data).unwrap();
    assert!(e.open_report().erasure.is_none());
    assert_eq!(e.compaction_receipts().unwrap().len(), stored.len(), "receipts survive reopening");
    assert_eq!(e.list(&ns("u1"), &mnemon::ListOptions::default()).len(), 30);
}

#[test]
fn no_crash() {
    crash_at(None);
}

#[test]
fn crash_while_copying() {
    crash_at(Some("copy"));
}

#[test]
fn crash_while_syncing() {
    crash_at(Some("fsync"));
}

#[test]
fn crash_after_switch() {
    crash_at(Some("switch"));
}

#[test]
fn crash_while_deleting_old_generation() {
    crash_at(Some("delete"));
}

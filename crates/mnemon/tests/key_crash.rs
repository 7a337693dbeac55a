//! Crash safety of key changes in an encrypted store: a shred (forgetting
//! a whole namespace destroys its data key), a key rotation (the keyring
//! re-wrapped under a new key) and a compaction (the live generation
//! re-sealed under fresh data keys).
//!
//! * crash points: a child (this test binary, re-run with
//!   `MNEMON_KEY_CRASH_CHILD` set) aborts at a named step of a key change
//!   (`MNEMON_CRASH_AT`); the parent reopens and checks the store opens
//!   with the key the step implies and never with the other, that every
//!   acknowledged write is readable, and that a namespace reads as
//!   shredded only when its forget is in the log.
//! * kill loop: a child writes, shreds one namespace, rotates the key and
//!   compacts, and is killed with SIGKILL at random moments. After each
//!   kill the store opens with the last key a rotation acknowledged, or
//!   with the one a rotation in flight was installing (never neither,
//!   never both), every acknowledged write is readable unless a forget of
//!   its whole namespace was acknowledged (or is in the log) after it, and
//!   no write is missing without such a forget.
//!
//! `MNEMON_CRASH_ITERS` sets the kills (default 8); `MNEMON_CRASH_SEED`
//! replays a run.

use std::io::Write;
use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};
use std::sync::Arc;
use std::time::Duration;

use mnemon::crypt::KeyFile;
use mnemon::event::{EventBody, ForgetTarget};
use mnemon::{DedupMode, Engine, Error, ForgetRequest, MemoryId, Namespace, NewMemory};
use rand::rngs::SmallRng;
use rand::{Rng, SeedableRng};

const CHILD: &str = "MNEMON_KEY_CRASH_CHILD";

fn ns(s: &str) -> Namespace {
    Namespace::new(s).expect("namespace")
}

fn open(dir: &Path, key: &Path) -> mnemon::Result<Engine> {
    // The background threads of an engine just closed (one whose open
    // finished a compaction) may hold the lock a moment longer.
    let mut tries = 0;
    loop {
        match Engine::builder(dir).key_provider(Arc::new(KeyFile(key.to_path_buf()))).open() {
            Err(Error::Locked { .. }) if tries < 100 => {
                tries += 1;
                std::thread::sleep(Duration::from_millis(20));
            }
            r => return r,
        }
    }
}

/// Appends one line to the acknowledgement file and makes it durable.
fn ack(f: &mut std::fs::File, line: &str) {
    f.write_all(format!("{line}\n").as_bytes()).unwrap();
    f.sync_data().unwrap();
}

/// The child: `MNEMON_KEY_CRASH_CHILD` is `DIR\tKEY\tACKS\tKEYS\tSEED\tMODE`.
/// Mode `steps` writes, shreds `gone` once, rotates once and compacts once
/// (a crash point stops it); mode `loop` does that over and over until it
/// is killed. Every acknowledged change is one fsynced line of `ACKS`.
#[test]
fn key_crash_child() {
    let Ok(spec) = std::env::var(CHILD) else {
        return;
    };
    let p: Vec<&str> = spec.split('\t').collect();
    let (dir, key, acks, keys, seed, mode) = (p[0], p[1], p[2], p[3], p[4], p[5]);
    let seed: u64 = seed.parse().unwrap();
    let mut rng = SmallRng::seed_from_u64(seed);
    // The child's tag in letters: a long number in a memory would be
    // redacted as a card number.
    let tag: String = (0..8).map(|i| char::from(b'a' + u8::try_from((seed >> (i * 5)) % 26).unwrap())).collect();
    let mut f = std::fs::OpenOptions::new().create(true).append(true).open(acks).unwrap();
    // A line the previous child was killed in the middle of ends here.
    if std::fs::read(acks).unwrap().last().is_some_and(|b| *b != b'\n') {
        f.write_all(b"\n").unwrap();
    }
    let e = open(Path::new(dir), Path::new(key)).unwrap();
    let (keep, gone) = (ns("keep"), ns("gone"));
    let mut n = 0u64;
    loop {
        for _ in 0..8 {
            for space in [&keep, &gone] {
                let text = format!("{} memory {tag} {n}", space.as_str());
                n += 1;
                let id = e.remember(space, NewMemory::new(&text).dedup(DedupMode::Off)).unwrap().id;
                ack(&mut f, &format!("m\t{}\t{}\t{text}", space.as_str(), id.0));
            }
        }
        ack(&mut f, "shred-start");
        assert!(e.forget(&gone, ForgetRequest::All, "closed").unwrap().key_shredded);
        ack(&mut f, "shred-done");
        for space in [&keep, &gone] {
            let text = format!("{} memory {tag} {n} after the shred", space.as_str());
            n += 1;
            let id = e.remember(space, NewMemory::new(&text).dedup(DedupMode::Off)).unwrap().id;
            ack(&mut f, &format!("m\t{}\t{}\t{text}", space.as_str(), id.0));
        }
        let next = Path::new(keys).join(format!("k-{tag}-{n}-{}", rng.gen::<u32>()));
        mnemon::crypt::write_new_key_file(&next).unwrap();
        ack(&mut f, &format!("rotate-start\t{}", next.display()));
        e.rotate_key(&KeyFile(next.clone())).unwrap();
        ack(&mut f, &format!("rotate-done\t{}", next.display()));
        ack(&mut f, "compact-start");
        assert!(e.compact().unwrap().verified);
        ack(&mut f, "compact-done");
        if mode != "loop" {
            break;
        }
    }
    e.close().unwrap();
}

/// What the acknowledgement file says.
#[derive(Debug, Default)]
struct Acks {
    /// Acknowledged memories: namespace, id, text, and how many shreds of
    /// `gone` were acknowledged before it.
    memories: Vec<(String, u64, String, usize)>,
    /// Shreds of `gone` acknowledged (or found done after a crash).
    shreds: usize,
    /// A shred started and not acknowledged.
    shred_in_flight: bool,
    /// The key of the last acknowledged rotation, if any.
    key: Option<PathBuf>,
    /// The key of a rotation started and not acknowledged.
    rotating: Option<PathBuf>,
}

fn read_acks(path: &Path) -> Acks {
    let mut a = Acks::default();
    for line in std::fs::read_to_string(path).unwrap_or_default().lines() {
        let parts: Vec<&str> = line.split('\t').collect();
        match parts.as_slice() {
            ["m", space, id, text] => {
                a.memories.push((space.to_string(), id.parse().unwrap(), text.to_string(), a.shreds));
                a.shred_in_flight = false;
            }
            ["shred-start"] => a.shred_in_flight = true,
            ["shred-done"] => {
                a.shreds += 1;
                a.shred_in_flight = false;
            }
            ["shred-void"] => a.shred_in_flight = false,
            ["rotate-start", k] => a.rotating = Some(PathBuf::from(k)),
            ["rotate-done", k] => {
                a.key = Some(PathBuf::from(k));
                a.rotating = None;
            }
            ["rotate-void"] => a.rotating = None,
            _ => {} // a line cut by the kill, or a step not checked here
        }
    }
    a
}

/// Forgets of the whole namespace `gone` in the log.
fn shreds_in_log(e: &Engine) -> usize {
    e.events(&ns("gone"), 1, u64::MAX)
        .unwrap()
        .iter()
        .filter(|ev| matches!(&ev.body, EventBody::Forgotten(f) if f.target == ForgetTarget::Namespace))
        .count()
}

/// Reopens the store after a crash and checks it; returns the key that
/// opened it. Appends to the acknowledgement file what the crash decided
/// (a shred or a rotation in flight took effect or not), so the next run
/// starts from a settled history.
fn check_after_crash(data: &Path, first_key: &Path, acks_path: &Path, context: &str) -> PathBuf {
    let acks = read_acks(acks_path);
    let current = acks.key.clone().unwrap_or_else(|| first_key.to_path_buf());
    let mut candidates = vec![current.clone()];
    candidates.extend(acks.rotating.clone());
    let mut opened = Vec::new();
    for k in &candidates {
        match open(data, k) {
            Ok(e) => {
                e.close().unwrap();
                opened.push(k.clone());
            }
            Err(Error::WrongKey(_)) => {}
            Err(e) => panic!("{context}: opening with {} failed: {e}", k.display()),
        }
    }
    assert_eq!(
        opened.len(),
        1,
        "{context}: the store must open with exactly one of {candidates:?} (acknowledged key first), opened with {:?}",
        opened
    );
    let key = opened.pop().unwrap();
    let e = open(data, &key).unwrap();
    assert!(
        !data.join(format!("{}.tmp", mnemon::crypt::KEYRING_FILE)).exists(),
        "{context}: an open leaves no keyring written by a change that was not acknowledged"
    );
    let mut f = std::fs::OpenOptions::new().append(true).open(acks_path).unwrap();
    f.write_all(b"\n").unwrap();
    if acks.rotating.is_some() {
        let line = if key == current { "rotate-void".to_string() } else { format!("rotate-done\t{}", key.display()) };
        ack(&mut f, &line);
    }
    let in_log = shreds_in_log(&e);
    let shreds = if acks.shred_in_flight {
        assert!(
            in_log == acks.shreds || in_log == acks.shreds + 1,
            "{context}: {in_log} shreds in the log, {} acknowledged and one in flight",
            acks.shreds
        );
        ack(&mut f, if in_log > acks.shreds { "shred-done" } else { "shred-void" });
        in_log
    } else {
        assert_eq!(in_log, acks.shreds, "{context}: shreds in the log against those acknowledged");
        in_log
    };
    for (space, id, text, shreds_before) in &acks.memories {
        let got = e.get(&ns(space), MemoryId(*id));
        if space == "gone" && *shreds_before < shreds {
            assert!(got.is_err(), "{context}: memory {id} of gone outlived the shred after it");
        } else {
            let m = got.unwrap_or_else(|err| {
                panic!("{context}: acknowledged memory {id} of {space} is lost with no forget after it: {err}")
            });
            assert_eq!(&m.content, text, "{context}");
        }
    }
    if shreds > 0 {
        let report = e.verify_shred(&ns("gone"), &[], &[]).unwrap();
        assert!(report.verified, "{context}: {report:?}");
    }
    assert!(e.check().unwrap().consistent, "{context}: replay equals live");
    e.close().unwrap();
    key
}

fn spawn_child(data: &Path, key: &Path, acks: &Path, keys: &Path, seed: u64, mode: &str) -> Command {
    let mut c = Command::new(std::env::current_exe().unwrap());
    c.args(["--exact", "key_crash_child", "--nocapture", "--test-threads", "1"])
        .env(
            CHILD,
            format!("{}\t{}\t{}\t{}\t{seed}\t{mode}", data.display(), key.display(), acks.display(), keys.display()),
        )
        .env_remove("MNEMON_CRASH_AT")
        .stdout(Stdio::null())
        .stderr(Stdio::piped());
    c
}

/// Aborts the child at `step` of a key change, then checks recovery and
/// which key opens the store.
fn crash_at(step: &str, expect_new_key: bool) {
    let tmp = tempfile::tempdir().unwrap();
    let (data, acks, keys) = (tmp.path().join("data"), tmp.path().join("acks"), tmp.path().join("keys"));
    std::fs::create_dir(&keys).unwrap();
    let first = keys.join("first");
    mnemon::crypt::write_new_key_file(&first).unwrap();
    let out = spawn_child(&data, &first, &acks, &keys, 7, "steps").env("MNEMON_CRASH_AT", step).output().unwrap();
    assert!(!out.status.success(), "the child was to crash at {step}: {}", String::from_utf8_lossy(&out.stderr));
    #[cfg(unix)]
    {
        use std::os::unix::process::ExitStatusExt;
        assert_eq!(out.status.signal(), Some(6), "{step}: {}", String::from_utf8_lossy(&out.stderr));
    }
    let before = read_acks(&acks);
    assert!(!before.memories.is_empty(), "{step}: the child crashed before any write");
    let key = check_after_crash(&data, &first, &acks, step);
    assert_eq!(key != first, expect_new_key, "{step}: opened with {}", key.display());
}

#[test]
fn a_crash_in_a_shred_keeps_the_writes_or_shreds_the_namespace() {
    // Before the keyring is replaced: the forget is durable and the next
    // open finishes the shred.
    for step in ["shred.flushed", "keyring.shred.written", "keyring.shred.renamed"] {
        crash_at(step, false);
    }
}

#[test]
fn a_crash_in_a_rotation_leaves_exactly_one_key_that_opens() {
    crash_at("keyring.rotate.written", false);
    crash_at("keyring.rotate.renamed", true);
}

#[test]
fn a_crash_in_a_resealing_compaction_keeps_every_write() {
    // The child rotated before it compacts: the new key opens the store,
    // and the open finishes the compaction.
    for step in ["keyring.reseal.written", "keyring.reseal.renamed", "copy", "switch"] {
        crash_at(step, true);
    }
}

#[test]
fn kill_during_shreds_rotations_and_compactions_loses_no_acknowledged_write() {
    if std::env::var(CHILD).is_ok() {
        return;
    }
    let iters: usize = std::env::var("MNEMON_CRASH_ITERS").ok().and_then(|s| s.parse().ok()).unwrap_or(8);
    let seed: u64 = std::env::var("MNEMON_CRASH_SEED").ok().and_then(|s| s.parse().ok()).unwrap_or_else(rand::random);
    eprintln!("MNEMON_CRASH_SEED={seed}");
    let mut rng = SmallRng::seed_from_u64(seed);
    let tmp = tempfile::tempdir().unwrap();
    let (data, acks, keys) = (tmp.path().join("data"), tmp.path().join("acks"), tmp.path().join("keys"));
    std::fs::create_dir(&keys).unwrap();
    let first = keys.join("first");
    mnemon::crypt::write_new_key_file(&first).unwrap();
    let mut key = first.clone();
    // Kills that caught a shred, a rotation in flight.
    let mut in_flight = [0usize; 2];
    for i in 0..iters {
        let mut c = spawn_child(&data, &key, &acks, &keys, rng.gen(), "loop").spawn().unwrap();
        std::thread::sleep(Duration::from_millis(rng.gen_range(150..900)));
        c.kill().unwrap(); // SIGKILL
        let out = c.wait_with_output().unwrap();
        let at = read_acks(&acks);
        in_flight[0] += usize::from(at.shred_in_flight);
        in_flight[1] += usize::from(at.rotating.is_some());
        assert!(
            !out.status.success(),
            "seed {seed} kill {i}: the child ended: {}",
            String::from_utf8_lossy(&out.stderr)
        );
        key = check_after_crash(&data, &first, &acks, &format!("seed {seed} kill {i}"));
    }
    let acks = read_acks(&acks);
    eprintln!(
        "{iters} kills: {} shreds and {} memories acknowledged; kills during a shred {}, during a rotation {}",
        acks.shreds,
        acks.memories.len(),
        in_flight[0],
        in_flight[1]
    );
    assert!(acks.shreds > 0 && acks.key.is_some(), "seed {seed}: no shred or no rotation happened: {acks:?}");
}

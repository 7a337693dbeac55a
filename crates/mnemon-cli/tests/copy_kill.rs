//! Kill loop for copies: `mnemon backup DIR` and `mnemon restore --from
//! FILE --into DIR` are SIGKILLed at random moments of their run, and then:
//!
//! * `DIR` is whole or no store: `mnemon --data DIR check` either fails, or
//!   succeeds with every record of the source (a copy cut short must never
//!   pass for a complete copy of a smaller store);
//! * a `check` that fails writes nothing that makes a later one pass (it is
//!   run twice);
//! * the staging directory a killed copy left beside `DIR` never checks as
//!   a shorter store either;
//! * running the same command again finishes: it exits 0 and `DIR` then
//!   checks with every record.
//!
//! The kill moments are spread over the time an uninterrupted run takes
//! (measured first, on this machine). `MNEMON_COPY_KILLS` sets the kills
//! per command (default 12); `MNEMON_COPY_SEED` replays a run. The last
//! line reads `copy_kill: N passed, 0 failed`.

use std::path::{Path, PathBuf};
use std::process::{Command, Output, Stdio};
use std::time::{Duration, Instant};

use mnemon::{DedupMode, Durability, Engine, Namespace, NewMemory, NewObservation, Role};
use rand::rngs::SmallRng;
use rand::{Rng, SeedableRng};

/// Events in the source store: enough that a copy takes long enough for
/// sled to write part of it before the kill.
const EVENTS: u64 = 20_000;

fn mnemon() -> Command {
    let mut c = Command::new(env!("CARGO_BIN_EXE_mnemon"));
    c.arg("--embedder").arg("hashing").stdin(Stdio::null());
    c
}

fn run(c: &mut Command) -> Output {
    c.output().unwrap()
}

/// The source store: observations of two namespaces and a memory every
/// tenth event (so vectors are copied too), one forgotten.
fn fill(dir: &Path) -> u64 {
    let e = Engine::builder(dir).durability(Durability::Interval(Duration::from_millis(20))).open().unwrap();
    let ns = [Namespace::new("u1").unwrap(), Namespace::new("u2").unwrap()];
    let mut i = 0u64;
    let mut first = None;
    while e.stats().last_seq < EVENTS - 1 {
        let n = &ns[(i % 2) as usize];
        if i.is_multiple_of(10) {
            let id = e.remember(n, NewMemory::new(format!("memory {i} about topic {}", i % 97)).dedup(DedupMode::Off));
            first.get_or_insert(id.unwrap().id);
        } else {
            e.observe(n, NewObservation::new("s1", Role::User, format!("turn {i} of the session"))).unwrap();
        }
        i += 1;
    }
    e.forget(&ns[0], mnemon::ForgetRequest::Memory(first.unwrap()), "copy kill test").unwrap();
    let last = e.stats().last_seq;
    e.close().unwrap();
    last
}

/// `check` of `dir`: `Some(records)` when it exits 0, `None` when it fails.
fn check(dir: &Path) -> Result<Option<u64>, String> {
    let out = run(mnemon().arg("--data").arg(dir).arg("--json").arg("check"));
    if !out.status.success() {
        return Ok(None);
    }
    let v: serde_json::Value = serde_json::from_slice(&out.stdout)
        .map_err(|e| format!("check exited 0 without a report ({e}): {}", String::from_utf8_lossy(&out.stdout)))?;
    v["records"].as_u64().map(Some).ok_or_else(|| format!("check report without records: {v}"))
}

fn staging_of(target: &Path) -> PathBuf {
    let name = target.file_name().unwrap().to_string_lossy();
    target.with_file_name(format!(".{name}.mnemon-partial"))
}

/// What a killed copy into `target` may leave, and that a re-run finishes.
fn verify(target: &Path, source_records: u64, rerun: &mut dyn FnMut() -> Output) -> Result<&'static str, String> {
    let outcome = match check(target)? {
        Some(n) if n == source_records => "whole",
        Some(n) => return Err(format!("check passed a copy of {n} records; the source has {source_records}")),
        None => match check(target)? {
            None => "refused",
            Some(n) => return Err(format!("a failed check made the copy pass the next one ({n} records)")),
        },
    };
    let staging = staging_of(target);
    if staging.exists() {
        if let Some(n) = check(&staging)? {
            if n != source_records {
                return Err(format!("check passed the staging directory with {n} of {source_records} records"));
            }
        }
    }
    if outcome == "whole" {
        return Ok(outcome);
    }
    let out = rerun();
    if !out.status.success() {
        return Err(format!("re-run after the kill failed: {}", String::from_utf8_lossy(&out.stderr)));
    }
    match check(target)? {
        Some(n) if n == source_records => Ok(outcome),
        other => Err(format!("after the re-run, check says {other:?}; the source has {source_records} records")),
    }
}

fn main() {
    // `cargo test` passes harness flags (`--list` when listing tests): nothing to list.
    if std::env::args().any(|a| a == "--list") {
        return;
    }
    let kills: usize = std::env::var("MNEMON_COPY_KILLS").ok().and_then(|s| s.parse().ok()).unwrap_or(12);
    let seed: u64 =
        std::env::var("MNEMON_COPY_SEED").ok().and_then(|s| s.parse().ok()).unwrap_or_else(|| rand::thread_rng().gen());
    println!("copy_kill: seed {seed} (MNEMON_COPY_SEED={seed} to replay), {kills} kills per command");
    let mut rng = SmallRng::seed_from_u64(seed);
    let tmp = tempfile::tempdir().unwrap();
    let source = tmp.path().join("source");
    let last = fill(&source);
    let source_records = check(&source).unwrap().expect("the source checks");
    assert_eq!(source_records, last);
    let export = tmp.path().join("store.jsonl");
    let out = run(mnemon().arg("--data").arg(&source).arg("export").arg(&export));
    assert!(out.status.success(), "export: {}", String::from_utf8_lossy(&out.stderr));

    let backup_cmd = |dir: &Path| {
        let mut c = mnemon();
        c.arg("--data").arg(&source).arg("backup").arg(dir);
        c
    };
    let restore_cmd = |dir: &Path| {
        let mut c = mnemon();
        c.arg("--data").arg(tmp.path().join("unused")).arg("restore").arg("--from").arg(&export).arg("--into").arg(dir);
        c
    };
    let (mut passed, mut failed) = (0usize, 0usize);
    for (name, cmd) in [("backup", &backup_cmd as &dyn Fn(&Path) -> Command), ("restore", &restore_cmd)] {
        // How long an uninterrupted run takes here: the kills are spread
        // over it.
        let probe = tmp.path().join(format!("{name}-probe"));
        let started = Instant::now();
        let out = run(&mut cmd(&probe));
        let full = started.elapsed();
        assert!(out.status.success(), "{name}: {}", String::from_utf8_lossy(&out.stderr));
        assert_eq!(check(&probe).unwrap(), Some(source_records), "{name} without a kill");
        let mut outcomes = std::collections::BTreeMap::new();
        for i in 0..kills {
            let target = tmp.path().join(format!("{name}-{i}"));
            let delay = full.mul_f64(rng.gen_range(0.05..1.1));
            let mut child = cmd(&target).stdout(Stdio::null()).stderr(Stdio::null()).spawn().unwrap();
            std::thread::sleep(delay);
            let _ = child.kill(); // SIGKILL
            let _ = child.wait();
            let mut rerun = || run(&mut cmd(&target));
            match verify(&target, source_records, &mut rerun) {
                Ok(outcome) => {
                    passed += 1;
                    *outcomes.entry(outcome).or_insert(0usize) += 1;
                }
                Err(msg) => {
                    failed += 1;
                    println!("copy_kill: {name} #{i} (kill after {delay:?}) FAILED (seed {seed}): {msg}");
                }
            }
        }
        println!("copy_kill: {name}: {kills} kills (an uninterrupted run took {full:?}); after the kill: {outcomes:?}");
    }
    println!("copy_kill: {passed} passed, {failed} failed");
    if failed > 0 {
        let kept = tmp.keep();
        println!("copy_kill: stores kept at {}", kept.display());
        std::process::exit(1);
    }
}

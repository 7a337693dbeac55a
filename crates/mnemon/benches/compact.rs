//! Compaction: time and disk bytes before/after, against a raw sled
//! export/import of the same store into a fresh directory (the cheapest way
//! to get a copy without sled's garbage, measured in the same run).
//!
//! ```text
//! cargo bench --bench compact                                       # 100k events
//! MNEMON_BENCH_EVENTS=1000000 cargo bench --bench compact
//! ```
//!
//! The store: `MNEMON_BENCH_EVENTS` events (default 100 000) over 100
//! namespaces, half observations and half memories, ten sessions per
//! namespace; then one session of every namespace is forgotten (about 10 %
//! of the content). Compaction time includes the verification scan (shown
//! separately).
//!
//! Opening the store (replay of the log, vectors from the cache) is
//! reported as events/s and against a bare sled scan of the same files
//! (every key and value of every tree read once, nothing decoded), with the
//! growth of resident memory (`VmRSS`) it causes per live memory.

use std::path::Path;
use std::time::Instant;

use mnemon::{DedupMode, Engine, ForgetRequest, Namespace, NewMemory, NewObservation, Role};

const NAMESPACES: usize = 100;
const SESSIONS: usize = 10;
const BATCH: usize = 500;

fn dir_bytes(dir: &Path) -> u64 {
    let mut total = 0;
    for e in std::fs::read_dir(dir).unwrap().flatten() {
        let t = e.file_type().unwrap();
        if t.is_dir() {
            total += dir_bytes(&e.path());
        } else if t.is_file() {
            total += e.metadata().unwrap().len();
        }
    }
    total
}

fn mib(b: u64) -> f64 {
    b as f64 / (1024.0 * 1024.0)
}

fn text(i: usize) -> String {
    // Varied, realistic-length texts (about 90 bytes).
    format!(
        "Note {i}: the user said they visited {} on day {} and want to remember the order number {:08x}.",
        ["Lisbon", "Porto", "Kyoto", "Oslo", "Quito", "Accra"][i % 6],
        i % 365,
        i.wrapping_mul(2_654_435_761)
    )
}

fn build(path: &Path, events: usize) -> Result<(), mnemon::Error> {
    let e = Engine::builder(path).max_group(64).open()?;
    let per_ns = events / NAMESPACES;
    for n in 0..NAMESPACES {
        let ns = Namespace::new(format!("user-{n}"))?;
        let mut i = 0;
        while i < per_ns {
            let k = BATCH.min(per_ns - i);
            let half = k / 2;
            let obs: Vec<NewObservation> = (0..half)
                .map(|j| {
                    let x = n * per_ns + i + j;
                    NewObservation::new(format!("s{}", x % SESSIONS), Role::User, text(x))
                })
                .collect();
            e.observe_batch(&ns, obs)?;
            let mems: Vec<NewMemory> = (half..k)
                .map(|j| {
                    let x = n * per_ns + i + j;
                    NewMemory::new(text(x)).session(format!("s{}", x % SESSIONS)).dedup(DedupMode::Off)
                })
                .collect();
            for r in e.remember_batch(&ns, mems)? {
                r?;
            }
            i += k;
        }
    }
    e.close()
}

fn forget(path: &Path) -> Result<u64, mnemon::Error> {
    let e = Engine::open(path)?;
    for n in 0..NAMESPACES {
        let ns = Namespace::new(format!("user-{n}"))?;
        e.forget(&ns, ForgetRequest::Session("s3".into()), "bench")?;
    }
    let pending = e.stats().pending_erasure;
    e.close()?;
    Ok(pending)
}

/// The baseline: sled's own export of the live generation, imported into a
/// fresh directory and flushed.
fn export_import(gen: &Path, out: &Path) -> (f64, u64) {
    let t = Instant::now();
    let src = sled::Config::new().path(gen).open().unwrap();
    let dst = sled::Config::new().path(out).flush_every_ms(None).open().unwrap();
    dst.import(src.export());
    dst.flush().unwrap();
    drop(dst);
    let secs = t.elapsed().as_secs_f64();
    (secs, dir_bytes(out))
}

/// The baseline for opening: every tree of the generation scanned once by
/// sled, nothing decoded. Returns (seconds, records).
fn sled_scan(gen: &Path) -> (f64, u64) {
    let t = Instant::now();
    let db = sled::Config::new().path(gen).open().unwrap();
    let mut records = 0u64;
    for name in db.tree_names() {
        let tree = db.open_tree(&name).unwrap();
        for kv in tree.iter() {
            let (k, v) = kv.unwrap();
            records += u64::from(k.len() + v.len() > 0);
        }
    }
    drop(db);
    (t.elapsed().as_secs_f64(), records)
}

#[path = "common/rss.rs"]
mod rss;
use rss::rss_kib;

fn current_gen(data: &Path) -> std::path::PathBuf {
    data.join(std::fs::read_to_string(data.join("CURRENT")).unwrap().trim())
}

/// Opens the store at `data` in a new process running this bench (see
/// `main`), so the resident-memory growth is not blurred by memory this
/// process freed earlier. Returns (seconds to open, KiB of `VmRSS` growth).
fn open_in_child(data: &Path) -> Result<(f64, u64), mnemon::Error> {
    let out = std::process::Command::new(std::env::current_exe()?).env(CHILD_ENV, data).output()?;
    let text = String::from_utf8_lossy(&out.stdout);
    let mut it = text.split_whitespace();
    match (it.next().and_then(|s| s.parse().ok()), it.next().and_then(|s| s.parse().ok())) {
        (Some(secs), Some(kib)) if out.status.success() => Ok((secs, kib)),
        _ => Err(mnemon::Error::Storage(
            format!("the open in a child process failed: {text} {}", String::from_utf8_lossy(&out.stderr)).into(),
        )),
    }
}

/// Set to a data directory, the bench only opens it and prints the
/// seconds it took and the growth of `VmRSS` in KiB.
const CHILD_ENV: &str = "MNEMON_BENCH_OPEN_CHILD";

fn main() -> Result<(), mnemon::Error> {
    if let Some(dir) = std::env::var_os(CHILD_ENV) {
        let before = rss_kib();
        let t = Instant::now();
        let e = Engine::open(Path::new(&dir))?;
        let secs = t.elapsed().as_secs_f64();
        println!("{secs} {}", rss_kib().saturating_sub(before));
        return e.close();
    }
    let events: usize = std::env::var("MNEMON_BENCH_EVENTS").ok().and_then(|s| s.parse().ok()).unwrap_or(100_000);
    let tmp = tempfile::tempdir()?;
    let data = tmp.path().join("data");
    println!("compact: {events} events, {NAMESPACES} namespaces, one session in {SESSIONS} forgotten");

    let t = Instant::now();
    build(&data, events)?;
    let pending = forget(&data)?;
    println!("  build + forget       {:>9.2} s   ({pending} payloads pending erasure)", t.elapsed().as_secs_f64());

    let before = dir_bytes(&data);
    let (base_s, base_bytes) = export_import(&current_gen(&data), &tmp.path().join("export"));
    println!("  sled export/import   {:>9.3} s   {:>8.1} MiB -> {:>8.1} MiB", base_s, mib(before), mib(base_bytes));

    let (scan_s, records) = sled_scan(&current_gen(&data));
    let (fresh_open_s, rss_growth_kib) = open_in_child(&data)?;
    let t = Instant::now();
    let e = Engine::open(&data)?;
    let open_s = t.elapsed().as_secs_f64();
    let stats = e.stats();
    let replayed = e.open_report().events_replayed;
    let t = Instant::now();
    let r = e.compact()?;
    let compact_s = t.elapsed().as_secs_f64();
    let after = dir_bytes(&data);
    let c = r.compaction.clone().unwrap_or_else(|| unreachable!());
    e.close()?;
    assert!(r.verified, "{r}");
    println!(
        "  open (replay)        {:>9.3} s   {:.0} events/s; bare sled scan of the same files {:.3} s ({records} records), ratio {:.2}",
        open_s,
        replayed as f64 / open_s,
        scan_s,
        open_s / scan_s
    );
    println!(
        "  resident memory      {:.0} MiB more once open, in a fresh process (open took {:.3} s there): {:.0} bytes per live memory ({} memories, {} observations)",
        rss_growth_kib as f64 / 1024.0,
        fresh_open_s,
        rss_growth_kib as f64 * 1024.0 / stats.active_memories.max(1) as f64,
        stats.active_memories,
        stats.observations
    );
    println!(
        "  mnemon compact       {:>9.3} s   {:>8.1} MiB -> {:>8.1} MiB   (rewrite+switch {} ms, verify scan {} ms: {} files, {:.1} MiB, {} patterns)",
        compact_s,
        mib(before),
        mib(after),
        c.compact_ms,
        c.verify_ms,
        r.scan.files.len(),
        mib(r.scan.bytes_scanned),
        r.scan.patterns
    );
    println!(
        "  erased               {} memories, {} observations, {} vectors; verified: {}",
        r.forgotten_memories.len(),
        r.forgotten_observations.len(),
        c.vectors_dropped,
        r.verified
    );
    println!(
        "  ratios               time compact/export-import {:.2} (rewrite only {:.2}); bytes after/before: compact {:.3}, export-import {:.3}",
        compact_s / base_s,
        c.compact_ms as f64 / 1000.0 / base_s,
        after as f64 / before as f64,
        base_bytes as f64 / before as f64
    );
    Ok(())
}

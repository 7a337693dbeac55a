//! Write rate as the store grows: does a write cost the same at 100k
//! memories as at 10k?
//!
//! One namespace is loaded with `MNEMON_BENCH_SCALE` memories (default
//! 100,000), one group of 1,000 at a time, twice, each into a fresh store:
//!
//! * `remember_batch`: one call per group, the vectors given;
//! * `import`: one `Engine::import` call per group (JSON lines with their
//!   vectors, checked and written as an import is, its identities looked
//!   up against what the namespace already holds).
//!
//! Both use the default duplicate handling (`DedupMode::Supersede`: the
//! exact and near-duplicate checks run for every memory) and 384-d
//! hashing-embedder vectors computed before the clock starts. Each text is
//! distinct and carries its own number, so no write is a duplicate or a
//! restatement, but every write asks the checks for their candidates.
//!
//! Printed, per path: the write rate (memories/s, wall clock) of the 2,000
//! memories that bring the store to 10k (the baseline, same run) and of
//! the last 2,000, their ratio (1.0: a write costs the same whatever the
//! store's size), and the rate of the whole load.
//!
//! Run: `cargo bench --bench scale` (`MNEMON_BENCH_SCALE` sets the final
//! size, at least 12,000).

use std::sync::Arc;
use std::time::Instant;

use mnemon::embed::HashingEmbedder;
use mnemon::portability::{parse_jsonl, ImportOptions};
use mnemon::{DedupMode, Engine, Namespace, NewMemory, RememberAction};

const GROUP: usize = 1000;
const EARLY: usize = 10_000;
/// Groups in each measured window.
const WINDOW: usize = 2;

fn size() -> usize {
    let n: usize = std::env::var("MNEMON_BENCH_SCALE").ok().and_then(|s| s.parse().ok()).unwrap_or(100_000);
    n.max(EARLY + WINDOW * GROUP) / GROUP * GROUP
}

/// A distinct text of eight words drawn from a 4,000-word vocabulary, with
/// its own number (so no two state the same fact).
fn text(i: usize) -> String {
    let mut x = (i as u64).wrapping_mul(0x9E37_79B9_7F4A_7C15) | 1;
    let mut words = Vec::with_capacity(8);
    for _ in 0..8 {
        x ^= x << 13;
        x ^= x >> 7;
        x ^= x << 17;
        words.push(format!("w{}", x % 4000));
    }
    format!("Note {i}: {}", words.join(" "))
}

fn open(dir: &std::path::Path) -> Engine {
    Engine::builder(dir).embedder(Arc::new(HashingEmbedder::new(384).expect("embedder"))).open().expect("open")
}

/// Seconds each group took, in order.
fn load(n: usize, vectors: &[Vec<f32>], import: bool) -> Vec<f64> {
    let ns = Namespace::new("bench").expect("namespace");
    let dir = tempfile::tempdir().expect("tempdir");
    let engine = open(dir.path());
    let mut group_s = Vec::with_capacity(n / GROUP);
    for g in 0..n / GROUP {
        let range = g * GROUP..(g + 1) * GROUP;
        if import {
            let mut lines = String::new();
            for i in range {
                lines.push_str(
                    &serde_json::json!({"type": "memory", "content": text(i), "vector": vectors[i]}).to_string(),
                );
                lines.push('\n');
            }
            let t = Instant::now();
            let summary = engine
                .import(&ns, parse_jsonl(&lines), &ImportOptions { batch: GROUP, ..ImportOptions::default() })
                .expect("import");
            group_s.push(t.elapsed().as_secs_f64());
            assert_eq!(summary.memories_written, GROUP as u64, "{:?}", summary.rejections);
        } else {
            let mems =
                range.map(|i| NewMemory::new(text(i)).vector(vectors[i].clone()).dedup(DedupMode::Supersede)).collect();
            let t = Instant::now();
            let results = engine.remember_batch(&ns, mems).expect("remember_batch");
            group_s.push(t.elapsed().as_secs_f64());
            for r in results {
                assert_eq!(r.expect("remember").action, RememberAction::Created, "no text repeats another");
            }
        }
    }
    engine.close().expect("close");
    group_s
}

fn report(name: &str, n: usize, group_s: &[f64]) {
    let rate = |end: usize| {
        let g = end / GROUP;
        (WINDOW * GROUP) as f64 / group_s[g - WINDOW..g].iter().sum::<f64>()
    };
    let (early, late) = (rate(EARLY), rate(n));
    println!("  {name}:");
    println!("    rate at {EARLY:>7} (baseline): {early:>8.0} memories/s");
    println!("    rate at {n:>7}:            {late:>8.0} memories/s   ratio {:.2}", late / early);
    println!("    whole load:                {:>8.0} memories/s", n as f64 / group_s.iter().sum::<f64>());
}

fn main() {
    let n = size();
    let e = HashingEmbedder::new(384).expect("embedder");
    let vectors: Vec<Vec<f32>> = (0..n).map(|i| e.embed_one(&text(i))).collect();
    println!("scale bench: {n} memories into one namespace, groups of {GROUP}, 384-d vectors given, dedup supersede");
    report("remember_batch", n, &load(n, &vectors, false));
    report("import", n, &load(n, &vectors, true));
}

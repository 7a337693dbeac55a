//! A store of a million memories: how long it takes to build and open,
//! what a recall and a write cost in it, and how much memory and disk
//! each memory takes.
//!
//! ```text
//! cargo bench -p mnemon --bench million                               # 1,000,000 memories
//! MNEMON_BENCH_MEMORIES=200000 cargo bench -p mnemon --bench million
//! ```
//!
//! The store: `MNEMON_BENCH_MEMORIES` memories (default 1,000,000) in one
//! namespace, written through `Engine::import` in calls of 1,000 (JSON
//! lines carrying 384-d hashing-embedder vectors computed before the clock
//! starts, the import path's checks and the default duplicate handling,
//! `DedupMode::Supersede`), its graph complete before the close that saves
//! the graph file. Texts are distinct sentences of about 60 bytes from a
//! 40-word vocabulary, each with its own number.
//!
//! Then, in a fresh process (so that the resident memory is the open
//! store's alone):
//!
//! * the open, timed from the call to its return, and whether the graph
//!   was loaded from its file and serves searches at return;
//! * resident memory (`VmRSS`) grown by the open, per memory, and per
//!   memory beyond its text (the UTF-8 bytes of its content);
//! * 300 recalls (top 10, hybrid, the defaults) issued as soon as the open
//!   returns: wall-clock p50 and p99 and thread-CPU p50;
//! * 200 single writes (`Engine::remember`, default durability and
//!   duplicate handling): wall-clock p50 and p99;
//! * bytes on disk under the data directory, per memory.
//!
//! Back in the first process, the baseline of the recall CPU target: thread
//! CPU p50 of `VectorIndex::search` for the recall's 50 candidates, on an
//! index of the same vectors and parameters, for the same queries.

use std::path::Path;
use std::sync::Arc;
use std::time::{Duration, Instant};

use cpu_time::ThreadTime;
use mnemon::embed::HashingEmbedder;
use mnemon::index::{HnswParams, VectorIndex};
use mnemon::portability::{parse_jsonl, ImportOptions};
use mnemon::{Engine, Namespace, NewMemory, RecallOptions};

#[path = "common/rss.rs"]
mod rss;

/// Memories per import call.
const GROUP: usize = 1000;
/// Recalls measured after the open.
const QUERIES: usize = 300;
/// Single writes measured after the recalls.
const WRITES: usize = 200;
/// Candidates a recall takes from each index by default (`RecallOptions`).
const CANDIDATES: usize = 50;
/// Environment variable naming the store to measure: set for the child.
const CHILD: &str = "MNEMON_BENCH_MILLION_STORE";

#[path = "common/notes.rs"]
mod notes;
use notes::{query, text};

fn size() -> usize {
    std::env::var("MNEMON_BENCH_MEMORIES").ok().and_then(|s| s.parse().ok()).unwrap_or(1_000_000).max(GROUP) / GROUP
        * GROUP
}

fn ns() -> Namespace {
    Namespace::new("bench").expect("namespace")
}

fn embedder() -> HashingEmbedder {
    HashingEmbedder::new(384).expect("embedder")
}

fn queries(n: usize) -> Vec<String> {
    (0..QUERIES).map(|i| query(i * 7919 % n)).collect()
}

/// The `p`-th percentile (0..=100) of `v`.
fn pct(v: &[f64], p: usize) -> f64 {
    let mut v = v.to_vec();
    v.sort_by(f64::total_cmp);
    v[(v.len() - 1) * p / 100]
}

/// Builds the store at `path` through `Engine::import` and returns an
/// index of the same vectors (the recall baseline's).
fn build(path: &Path, n: usize) -> VectorIndex {
    let e = Engine::builder(path).embedder(Arc::new(embedder())).open().expect("open");
    let embed = embedder();
    let mut index = VectorIndex::new(384, HnswParams::default());
    let started = Instant::now();
    let mut last = Instant::now();
    for g in 0..n / GROUP {
        let range = g * GROUP..(g + 1) * GROUP;
        let vectors: Vec<Vec<f32>> = range.clone().map(|i| embed.embed_one(&text(i))).collect();
        let mut lines = String::new();
        for (i, v) in range.clone().zip(&vectors) {
            lines.push_str(&serde_json::json!({"type": "memory", "content": text(i), "vector": v}).to_string());
            lines.push('\n');
        }
        let summary = e
            .import(&ns(), parse_jsonl(&lines), &ImportOptions { batch: GROUP, ..ImportOptions::default() })
            .expect("import");
        assert_eq!(summary.memories_written, GROUP as u64, "{:?}", summary.rejections);
        for (i, v) in range.zip(&vectors) {
            index.insert(i as u64, v);
        }
        if last.elapsed() > Duration::from_secs(60) {
            last = Instant::now();
            let done = (g + 1) * GROUP;
            eprintln!("{done} memories in {:.0} s", started.elapsed().as_secs_f64());
        }
    }
    let load_s = started.elapsed().as_secs_f64();
    e.wait_for_graphs();
    println!(
        "{n} memories imported in {load_s:.0} s ({:.0}/s); graph complete after {:.0} s",
        n as f64 / load_s,
        started.elapsed().as_secs_f64()
    );
    let close = Instant::now();
    e.close().expect("close");
    println!("close {:.1} s (saves the graph file)", close.elapsed().as_secs_f64());
    index
}

fn dir_bytes(path: &Path) -> u64 {
    std::fs::read_dir(path)
        .map(|rd| {
            rd.flatten()
                .map(|e| match e.file_type() {
                    Ok(t) if t.is_dir() => dir_bytes(&e.path()),
                    Ok(_) => e.metadata().map(|m| m.len()).unwrap_or(0),
                    Err(_) => 0,
                })
                .sum()
        })
        .unwrap_or(0)
}

/// The child: opens the store and measures it.
fn measure(path: &Path, n: usize) {
    let before = rss::rss_kib();
    let start = Instant::now();
    let e = Engine::builder(path).embedder(Arc::new(embedder())).open().expect("open");
    let open_s = start.elapsed().as_secs_f64();
    let loaded = e.open_report().graphs_loaded;
    let on_graph = e.stats().hnsw_namespaces;
    let grown = (rss::rss_kib().saturating_sub(before) * 1024) as f64;
    let text_bytes: usize = (0..n).map(|i| text(i).len()).sum();
    println!(
        "open {open_s:.2} s; graph loaded from its file: {loaded}, on graph at return: {on_graph}; resident memory \
         grown by {:.0} MiB: {:.0} B per memory, {:.0} B beyond its text ({:.0} B of text)",
        grown / 1048576.0,
        grown / n as f64,
        (grown - text_bytes as f64) / n as f64,
        text_bytes as f64 / n as f64
    );
    let opts = RecallOptions { top_k: 10, ..RecallOptions::default() };
    let mut wall = Vec::with_capacity(QUERIES);
    let mut cpu = Vec::with_capacity(QUERIES);
    for q in queries(n) {
        let (t, c) = (Instant::now(), ThreadTime::now());
        let hits = e.recall(&ns(), &q, &opts).expect("recall");
        cpu.push(c.elapsed().as_secs_f64() * 1e6);
        wall.push(t.elapsed().as_secs_f64() * 1e6);
        assert!(!hits.is_empty());
    }
    println!(
        "recall right after the open: wall p50 {:.0} µs, p99 {:.0} µs; thread CPU p50 {:.0} µs",
        pct(&wall, 50),
        pct(&wall, 99),
        pct(&cpu, 50)
    );
    let mut writes = Vec::with_capacity(WRITES);
    for w in 0..WRITES {
        let t = Instant::now();
        e.remember(&ns(), NewMemory::new(text(n + w))).expect("remember");
        writes.push(t.elapsed().as_secs_f64() * 1e6);
    }
    println!("one write: wall p50 {:.0} µs, p99 {:.0} µs", pct(&writes, 50), pct(&writes, 99));
    e.close().expect("close");
    let disk = dir_bytes(path);
    println!("on disk {:.0} MiB: {:.0} B per memory", disk as f64 / 1048576.0, disk as f64 / n as f64);
}

fn main() {
    let n = size();
    if let Some(store) = std::env::var_os(CHILD) {
        measure(Path::new(&store), n);
        return;
    }
    let dir = tempfile::tempdir().expect("tempdir");
    let path = dir.path().join("store");
    let index = build(&path, n);
    index.wait_for_graph();
    let status = std::process::Command::new(std::env::current_exe().expect("this bench"))
        .env(CHILD, &path)
        .env("MNEMON_BENCH_MEMORIES", n.to_string())
        .status()
        .expect("measuring process");
    assert!(status.success(), "the measuring process failed: {status}");
    let embed = embedder();
    let search: Vec<f64> = queries(n)
        .iter()
        .map(|q| {
            let v = embed.embed_one(q);
            let c = ThreadTime::now();
            drop(index.search(&v, CANDIDATES, &|_| true));
            c.elapsed().as_secs_f64() * 1e6
        })
        .collect();
    println!("baseline: index search of {CANDIDATES} candidates, thread CPU p50 {:.0} µs", pct(&search, 50));
}

//! Opening a large store: with the graph file a clean close saved, against
//! the same store with that file deleted (the graph rebuilt in the
//! background), in the same run; then the recall latency right after each
//! open.
//!
//! ```text
//! cargo bench -p mnemon --bench open                                  # 100k memories
//! MNEMON_BENCH_MEMORIES=20000 cargo bench -p mnemon --bench open
//! ```
//!
//! The store: `MNEMON_BENCH_MEMORIES` memories (default 100 000) in one
//! namespace, hashing embedder (384-d), default HNSW parameters, built in
//! batches of 500, its graph complete before the close that saves it.
//! Each open is timed from the call to its return; "graph ready" is the
//! time from the call until the graph serves every vector
//! ([`Engine::wait_for_graphs`]). Recall latency is the median and 90th
//! percentile of 200 recalls (top 10) issued as soon as the open returns.

use std::path::Path;
use std::time::{Duration, Instant};

use mnemon::{DedupMode, Engine, Namespace, NewMemory, RecallOptions};

const BATCH: usize = 500;
const WORDS: [&str; 32] = [
    "harbor", "violin", "pepper", "glacier", "lantern", "meadow", "copper", "falcon", "orchard", "thunder", "velvet",
    "canyon", "saffron", "marble", "cobalt", "willow", "ember", "quartz", "juniper", "tundra", "basil", "onyx",
    "mango", "cedar", "lisbon", "kyoto", "ticket", "dentist", "sister", "garden", "invoice", "recipe",
];

fn text(i: usize) -> String {
    let w = |k: usize| WORDS[i.wrapping_mul(k).wrapping_add(k * 7) % WORDS.len()];
    format!("Note {i}: the {} by the {} needs the {} and the {} before day {}.", w(3), w(11), w(17), w(29), i % 365)
}

fn ns() -> Namespace {
    Namespace::new("user").unwrap()
}

fn build(path: &Path, n: usize) -> mnemon::Result<()> {
    let e = Engine::builder(path).max_group(64).open()?;
    let mut i = 0;
    while i < n {
        let k = BATCH.min(n - i);
        let batch = (i..i + k).map(|x| NewMemory::new(text(x)).dedup(DedupMode::Off)).collect();
        for r in e.remember_batch(&ns(), batch)? {
            r?;
        }
        i += k;
    }
    e.wait_for_graphs();
    e.close()
}

/// Median and 90th percentile of 200 recalls, in microseconds.
fn recall_latency(e: &Engine) -> (f64, f64) {
    let mut t: Vec<Duration> = (0..200)
        .map(|q| {
            let query = format!("{} {} day {}", WORDS[q % WORDS.len()], WORDS[(q * 7 + 3) % WORDS.len()], q);
            let start = Instant::now();
            let hits = e.recall(&ns(), &query, &RecallOptions { top_k: 10, ..RecallOptions::default() }).unwrap();
            let d = start.elapsed();
            assert!(!hits.is_empty());
            d
        })
        .collect();
    t.sort();
    let us = |d: Duration| d.as_secs_f64() * 1e6;
    (us(t[t.len() / 2]), us(t[t.len() * 9 / 10]))
}

/// Opens the store and reports the open time, whether the graph was
/// loaded and served searches on return, recall latency right after, and
/// the time until the graph was complete.
fn measure(path: &Path, label: &str) {
    let start = Instant::now();
    let e = Engine::open(path).unwrap();
    let open_s = start.elapsed().as_secs_f64();
    let loaded = e.open_report().graphs_loaded;
    let on_graph = e.stats().hnsw_namespaces;
    let (p50, p90) = recall_latency(&e);
    e.wait_for_graphs();
    let ready_s = start.elapsed().as_secs_f64();
    let (g50, g90) = recall_latency(&e);
    println!(
        "{label:<22} open {open_s:>6.2} s  graphs loaded {loaded}  on graph at return {on_graph}  \
         recall right after p50 {p50:>7.0} µs p90 {p90:>7.0} µs  graph ready {ready_s:>6.2} s  \
         recall on graph p50 {g50:>5.0} µs p90 {g90:>5.0} µs"
    );
    let close = Instant::now();
    e.close().unwrap();
    println!("{label:<22} close {:.2} s (saves the graph file)", close.elapsed().as_secs_f64());
}

fn main() {
    let n: usize = std::env::var("MNEMON_BENCH_MEMORIES").ok().and_then(|s| s.parse().ok()).unwrap_or(100_000);
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("store");
    let t = Instant::now();
    build(&path, n).unwrap();
    let graph = path.join("graphs.bin");
    let bytes = std::fs::metadata(&graph).map(|m| m.len()).unwrap_or(0);
    println!(
        "{n} memories built in {:.1} s; graph file {:.1} MiB",
        t.elapsed().as_secs_f64(),
        bytes as f64 / 1048576.0
    );
    measure(&path, "with graph file");
    std::fs::remove_file(&graph).unwrap();
    measure(&path, "without graph file");
    measure(&path, "with graph file again");
}

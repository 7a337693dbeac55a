//! Durable append throughput and latency.
//!
//! Measures memories/s with 1, 4 and 16 concurrent writers calling
//! `Engine::remember` (each call acknowledged only after its group is
//! flushed), and single-writer latency p50/p99. The baseline, measured in the
//! same run on the same disk, is one sled insert + flush per event: the cost
//! of durability without group commit. Figures are printed as ratios to it.
//!
//! Run: `cargo bench --bench append` (`MNEMON_BENCH_WRITES` sets writes per
//! configuration, default 2000).

use std::sync::Arc;
use std::time::Instant;

use mnemon::embed::HashingEmbedder;
use mnemon::{DedupMode, Engine, Namespace, NewMemory};

fn writes() -> usize {
    std::env::var("MNEMON_BENCH_WRITES").ok().and_then(|s| s.parse().ok()).unwrap_or(2000)
}

fn text(i: usize) -> String {
    format!("memory number {i}: the user mentioned topic {} while talking about project {}", i * 7919 % 1000, i % 37)
}

fn baseline(n: usize) -> f64 {
    let dir = tempfile::tempdir().expect("tempdir");
    let db = sled::open(dir.path()).expect("sled");
    let start = Instant::now();
    for i in 0..n {
        db.insert((i as u64).to_be_bytes(), text(i).as_bytes()).expect("insert");
        db.flush().expect("flush");
    }
    n as f64 / start.elapsed().as_secs_f64()
}

fn percentile(sorted: &[f64], p: f64) -> f64 {
    if sorted.is_empty() {
        return 0.0;
    }
    let idx = ((p / 100.0) * (sorted.len() as f64 - 1.0)).round() as usize;
    sorted[idx.min(sorted.len() - 1)]
}

/// Returns (memories/s, per-call latencies in ms).
fn engine_run(threads: usize, n: usize) -> (f64, Vec<f64>) {
    let dir = tempfile::tempdir().expect("tempdir");
    let engine = Engine::builder(dir.path())
        .embedder(Arc::new(HashingEmbedder::new(384).expect("embedder")))
        .open()
        .expect("open");
    // Embed up front so the figure is the write path, not the embedder.
    let e = HashingEmbedder::new(384).expect("embedder");
    let per = n / threads;
    let start = Instant::now();
    let handles: Vec<_> = (0..threads)
        .map(|t| {
            let engine = engine.clone();
            let items: Vec<(String, Vec<f32>)> =
                (0..per).map(|i| text(t * per + i)).map(|s| (s.clone(), e.embed_one(&s))).collect();
            std::thread::spawn(move || {
                let ns = Namespace::new(format!("bench-{t}")).expect("ns");
                let mut lat = Vec::with_capacity(items.len());
                for (s, v) in items {
                    let t0 = Instant::now();
                    engine.remember(&ns, NewMemory::new(s).vector(v).dedup(DedupMode::Off)).expect("remember");
                    lat.push(t0.elapsed().as_secs_f64() * 1e3);
                }
                lat
            })
        })
        .collect();
    let mut lat = Vec::new();
    for h in handles {
        lat.extend(h.join().expect("writer thread"));
    }
    let rate = (per * threads) as f64 / start.elapsed().as_secs_f64();
    engine.close().expect("close");
    lat.sort_by(f64::total_cmp);
    (rate, lat)
}

fn main() {
    let n = writes();
    println!("durable append, {n} writes per configuration (hashing vectors precomputed)");
    let base = baseline(n);
    println!("{:<34} {:>12} {:>10}", "configuration", "writes/s", "× baseline");
    println!("{:<34} {:>12.0} {:>10.2}", "sled insert + flush per event", base, 1.0);
    for threads in [1usize, 4, 16] {
        let (rate, lat) = engine_run(threads, n);
        println!(
            "{:<34} {:>12.0} {:>10.2}   latency p50 {:.2} ms, p99 {:.2} ms",
            format!("mnemon remember, {threads} writer(s)"),
            rate,
            rate / base,
            percentile(&lat, 50.0),
            percentile(&lat, 99.0)
        );
    }
}

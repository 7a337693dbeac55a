//! Durable append throughput and latency.
//!
//! Measures memories/s with 1, 4 and 16 concurrent writers calling
//! `Engine::remember` (each call acknowledged only after its group is
//! flushed), and per-call latency p50/p90/p99/max. The baseline, measured in
//! the same run on the same disk, is one sled insert + flush per event: the
//! cost of durability without group commit. Figures are printed as ratios to
//! it: of throughput (`× baseline`, which the slowest calls dominate) and of
//! median latency (`p50 × base`, baseline p50 / ours, steadier on a shared
//! machine where a descheduled thread costs a whole 4 ms timer tick), and
//! of process CPU time per write, every thread included (`CPU × base`).
//!
//! Run: `cargo bench --bench append` (`MNEMON_BENCH_WRITES` sets writes per
//! configuration, default 2000; `MNEMON_BENCH_THREADS`, default `1,4,16`).

use std::sync::Arc;
use std::time::Instant;

use cpu_time::ProcessTime;
use mnemon::embed::HashingEmbedder;
use mnemon::{DedupMode, Engine, Namespace, NewMemory};

fn writes() -> usize {
    std::env::var("MNEMON_BENCH_WRITES").ok().and_then(|s| s.parse().ok()).unwrap_or(2000)
}

fn text(i: usize) -> String {
    format!("memory number {i}: the user mentioned topic {} while talking about project {}", i * 7919 % 1000, i % 37)
}

/// One configuration's figures.
struct Run {
    /// Writes per second.
    rate: f64,
    /// Per-call latencies in ms, sorted.
    lat: Vec<f64>,
    /// Process CPU time (every thread, sled's included) per write, in µs.
    cpu_us: f64,
}

fn baseline(n: usize) -> Run {
    let dir = tempfile::tempdir().expect("tempdir");
    let db = sled::open(dir.path()).expect("sled");
    let mut lat = Vec::with_capacity(n);
    let cpu = ProcessTime::now();
    let start = Instant::now();
    for i in 0..n {
        let t0 = Instant::now();
        db.insert((i as u64).to_be_bytes(), text(i).as_bytes()).expect("insert");
        db.flush().expect("flush");
        lat.push(t0.elapsed().as_secs_f64() * 1e3);
    }
    let rate = n as f64 / start.elapsed().as_secs_f64();
    let cpu_us = cpu.elapsed().as_secs_f64() * 1e6 / n as f64;
    lat.sort_by(f64::total_cmp);
    Run { rate, lat, cpu_us }
}

fn percentile(sorted: &[f64], p: f64) -> f64 {
    if sorted.is_empty() {
        return 0.0;
    }
    let idx = ((p / 100.0) * (sorted.len() as f64 - 1.0)).round() as usize;
    sorted[idx.min(sorted.len() - 1)]
}

fn engine_run(threads: usize, n: usize) -> Run {
    let dir = tempfile::tempdir().expect("tempdir");
    let engine = Engine::builder(dir.path())
        .embedder(Arc::new(HashingEmbedder::new(384).expect("embedder")))
        .open()
        .expect("open");
    // Embed up front so the figure is the write path, not the embedder.
    let e = HashingEmbedder::new(384).expect("embedder");
    let per = n / threads;
    let inputs: Vec<Vec<(String, Vec<f32>)>> = (0..threads)
        .map(|t| (0..per).map(|i| text(t * per + i)).map(|s| (s.clone(), e.embed_one(&s))).collect())
        .collect();
    // One write first, so that one-time initialisation (the safety stage
    // compiles its patterns on first use, ~0.1 s) is not timed.
    let warm = Namespace::new("warm-up").expect("ns");
    let v = e.embed_one("warm-up");
    engine.remember(&warm, NewMemory::new("warm-up").vector(v).dedup(DedupMode::Off)).expect("remember");
    let cpu = ProcessTime::now();
    let start = Instant::now();
    let handles: Vec<_> = inputs
        .into_iter()
        .enumerate()
        .map(|(t, items)| {
            let engine = engine.clone();
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
    let cpu_us = cpu.elapsed().as_secs_f64() * 1e6 / (per * threads) as f64;
    engine.close().expect("close");
    lat.sort_by(f64::total_cmp);
    Run { rate, lat, cpu_us }
}

fn main() {
    let n = writes();
    println!("durable append, {n} writes per configuration (hashing vectors precomputed)");
    println!("load average at start: {}", std::fs::read_to_string("/proc/loadavg").unwrap_or_default().trim());
    let base = baseline(n);
    let base_p50 = percentile(&base.lat, 50.0);
    println!(
        "{:<32} {:>9} {:>10} {:>10} {:>8} {:>9}   latency p50 / p90 / p99 / max (ms)",
        "configuration", "writes/s", "× base", "p50 × base", "CPU µs", "CPU × base"
    );
    let row = |label: &str, r: &Run| {
        println!(
            "{:<32} {:>9.0} {:>10.2} {:>10.2} {:>8.1} {:>9.2}   {:.3} / {:.3} / {:.2} / {:.1}",
            label,
            r.rate,
            r.rate / base.rate,
            base_p50 / percentile(&r.lat, 50.0),
            r.cpu_us,
            base.cpu_us / r.cpu_us,
            percentile(&r.lat, 50.0),
            percentile(&r.lat, 90.0),
            percentile(&r.lat, 99.0),
            r.lat.last().copied().unwrap_or(0.0)
        );
    };
    row("sled insert + flush per event", &base);
    let configs: Vec<usize> = std::env::var("MNEMON_BENCH_THREADS")
        .ok()
        .map(|v| v.split(',').filter_map(|x| x.trim().parse().ok()).collect())
        .unwrap_or_else(|| vec![1, 4, 16]);
    for threads in configs {
        row(&format!("mnemon remember, {threads} writer(s)"), &engine_run(threads, n));
    }
}

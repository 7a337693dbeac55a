//! Import throughput against writing the same records directly.
//!
//! A LoCoMo-sized history (`MNEMON_BENCH_IMPORT` observations, default
//! 6,000 — locomo10.json has 5,882 turns — and as many memories, each
//! citing its observation and carrying its own 384-d vector) is written
//! twice into fresh stores in the same run:
//!
//! * baseline: `observe_batch` then `remember_batch`, 1,000 per call, with
//!   the vectors given — the library's own batched path;
//! * import: the same records as a JSON lines file, read, checked
//!   (input rules, safety stage, sources, identities) and written by
//!   `Engine::import` in group commits of 1,000.
//!
//! Printed: events/s of each and the ratio import / baseline. The hashing
//! embedder is configured but never called (vectors are given).
//!
//! Run: `cargo bench --bench import`.

use std::sync::Arc;
use std::time::Instant;

use mnemon::embed::HashingEmbedder;
use mnemon::portability::{parse_jsonl, ImportOptions};
use mnemon::{DedupMode, Engine, Namespace, NewMemory, NewObservation, Role};

const BATCH: usize = 1000;

fn records() -> usize {
    std::env::var("MNEMON_BENCH_IMPORT").ok().and_then(|s| s.parse().ok()).unwrap_or(6000)
}

fn turn(i: usize) -> String {
    format!("Turn {i}: we talked about the trip to city {} and the book on topic {}", i * 7919 % 1000, i % 37)
}

fn fact(i: usize) -> String {
    format!("Fact {i}: plans a trip to city {} in month {}", i * 7919 % 1000, i % 12 + 1)
}

fn open(dir: &std::path::Path) -> Engine {
    Engine::builder(dir).embedder(Arc::new(HashingEmbedder::new(384).expect("embedder"))).open().expect("open")
}

fn main() {
    let n = records();
    let e = HashingEmbedder::new(384).expect("embedder");
    let vectors: Vec<Vec<f32>> = (0..n).map(|i| e.embed_one(&fact(i))).collect();
    let ns = Namespace::new("bench").expect("namespace");

    // Baseline: the batched library calls.
    let dir = tempfile::tempdir().expect("tempdir");
    let engine = open(dir.path());
    let start = Instant::now();
    let mut ids = Vec::with_capacity(n);
    for chunk in (0..n).collect::<Vec<_>>().chunks(BATCH) {
        let obs =
            chunk.iter().map(|&i| NewObservation::new("s1", Role::User, turn(i)).source(format!("t{i}"))).collect();
        ids.extend(engine.observe_batch(&ns, obs).expect("observe_batch"));
    }
    for chunk in (0..n).collect::<Vec<_>>().chunks(BATCH) {
        let mems = chunk
            .iter()
            .map(|&i| NewMemory::new(fact(i)).sources([ids[i]]).vector(vectors[i].clone()).dedup(DedupMode::Supersede))
            .collect();
        for r in engine.remember_batch(&ns, mems).expect("remember_batch") {
            r.expect("remember");
        }
    }
    let direct_s = start.elapsed().as_secs_f64();
    let direct_events = engine.last_seq();
    engine.close().expect("close");

    // Import: the same records as JSON lines.
    let mut text = String::new();
    for i in 0..n {
        text.push_str(
            &serde_json::json!({"type": "observation", "session": "s1", "role": "user", "text": turn(i), "source": format!("t{i}")})
                .to_string(),
        );
        text.push('\n');
    }
    for i in 0..n {
        text.push_str(
            &serde_json::json!({"type": "memory", "content": fact(i), "sources": [format!("t{i}")], "vector": vectors[i]})
                .to_string(),
        );
        text.push('\n');
    }
    let dir = tempfile::tempdir().expect("tempdir");
    let engine = open(dir.path());
    let start = Instant::now();
    let parsed = parse_jsonl(&text);
    let parse_s = start.elapsed().as_secs_f64();
    let summary =
        engine.import(&ns, parsed, &ImportOptions { batch: BATCH, ..ImportOptions::default() }).expect("import");
    let import_s = start.elapsed().as_secs_f64();
    let import_events = engine.last_seq();
    assert_eq!(summary.rejected, 0, "{:?}", summary.rejections);
    assert_eq!(import_events, direct_events, "both runs write the same events");
    engine.close().expect("close");

    let direct_rate = direct_events as f64 / direct_s;
    let import_rate = import_events as f64 / import_s;
    println!("import bench: {n} observations + {n} memories with vectors, batches of {BATCH}");
    println!("  baseline observe_batch + remember_batch: {direct_rate:>10.0} events/s ({direct_s:.2} s)");
    println!(
        "  import (JSON lines, {:.1} MiB, parse {parse_s:.2} s): {import_rate:>10.0} events/s ({import_s:.2} s)",
        text.len() as f64 / 1048576.0
    );
    println!("  ratio import / baseline: {:.2}", import_rate / direct_rate);
}

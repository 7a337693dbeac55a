//! The Rust side of `node/bench/recall.mjs`: recall latency of the Rust
//! library (`Engine::recall`, no surface, no JSON) on an existing store, for
//! the same queries as the Node side, so the two p50s are compared as a ratio
//! within one run.
//!
//! ```text
//! recall_p50 DATA_DIR NAMESPACE CALLS WARMUP
//! ```
//!
//! Opens `DATA_DIR` with the hashing embedder, runs `WARMUP` untimed then
//! `CALLS` timed recalls (top-k 10, no access records) one after another,
//! and prints one JSON object: `p50_us`, `p90_us`, `calls`.

use std::error::Error;
use std::time::Instant;

use mnemon::{Engine, Namespace, RecallOptions};

/// The query of call `j` (as `queryText` in node/bench/recall.mjs).
fn query_text(j: usize) -> String {
    format!("what about topic {} and item {}", j % 97, j * 31 % 10007)
}

fn main() -> Result<(), Box<dyn Error>> {
    let args: Vec<String> = std::env::args().collect();
    let [_, dir, ns, calls, warmup] = args.as_slice() else {
        return Err("usage: recall_p50 DATA_DIR NAMESPACE CALLS WARMUP".into());
    };
    let calls: usize = calls.parse()?;
    let warmup: usize = warmup.parse()?;
    let engine =
        Engine::builder(dir).embedder(std::sync::Arc::new(mnemon::embed::HashingEmbedder::default())).open()?;
    let ns = Namespace::new(ns.clone())?;
    let options = RecallOptions { top_k: 10, record_access: false, ..RecallOptions::default() };
    for j in 0..warmup {
        engine.recall(&ns, &query_text(j), &options)?;
    }
    let mut micros = Vec::with_capacity(calls);
    for j in 0..calls {
        let t = Instant::now();
        let hits = engine.recall(&ns, &query_text(warmup + j), &options)?;
        micros.push(t.elapsed().as_secs_f64() * 1e6);
        std::hint::black_box(hits);
    }
    micros.sort_by(f64::total_cmp);
    let at = |q: f64| micros[((micros.len() as f64 - 1.0) * q).round() as usize];
    println!("{}", serde_json::json!({"p50_us": at(0.5), "p90_us": at(0.9), "calls": calls}));
    engine.close()?;
    Ok(())
}

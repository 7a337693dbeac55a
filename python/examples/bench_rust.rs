//! The Rust side of `python/bench.py`: the same calls as the Python side,
//! made from Rust in the same process layout, so the two rates can be
//! compared as a ratio within one run.
//!
//! ```text
//! bench_rust DATA_DIR OP CALLS THREADS FLUSH_MS PREFILL PATH WARMUP
//! ```
//!
//! `OP`: `remember` or `recall`. `CALLS` per thread, `THREADS` threads on
//! one engine (hashing embedder), `FLUSH_MS` 0 for a flush per group of
//! writes (the default durability) or the flush interval in milliseconds,
//! `PREFILL` memories written before timing. `PATH`: `surface` builds each
//! request from JSON text and runs it through `mnemon_api` (exactly what a
//! Python call does, without Python); `engine` calls `Engine::remember` /
//! `Engine::recall` directly. `WARMUP` calls per thread of the same kind run
//! untimed first. Prints one JSON object with `calls_per_s` (wall clock)
//! and `cpu_us_per_call` (CPU time of the whole process, every thread,
//! per call).

use std::error::Error;
use std::sync::Arc;
use std::time::{Duration, Instant};

use cpu_time::ProcessTime;
use mnemon::embed::HashingEmbedder;
use mnemon::{DedupMode, Durability, Engine, Namespace, NewMemory, RecallOptions};
use mnemon_api::{self as api, Request};

/// The text of memory `i` (the same function as `memory_text` in bench.py).
fn memory_text(i: usize) -> String {
    format!("Memory {i}: the user mentioned topic {} and item {} on day {}", i % 97, i * 7919 % 10007, i % 31)
}

/// The query of call `j` (the same function as `query_text` in bench.py).
fn query_text(j: usize) -> String {
    format!("what about topic {} and item {}", j % 97, j * 31 % 10007)
}

fn remember_json(ns: &str, text: &str) -> String {
    serde_json::json!({"namespace": ns, "content": text, "dedup": "off"}).to_string()
}

fn recall_json(ns: &str, query: &str) -> String {
    serde_json::json!({"namespace": ns, "query": query, "top_k": 10, "record_access": false}).to_string()
}

/// One call through the surface: JSON text in, JSON text out.
fn surface_call(engine: &Engine, op: &str, args: &str) -> Result<String, Box<dyn Error + Send + Sync>> {
    let value: serde_json::Value = serde_json::from_str(args)?;
    let req = Request::from_op(op, value)?;
    let resp = api::execute(engine, req)?;
    Ok(serde_json::to_string(&resp)?)
}

/// `threads` threads on `engine`, each making `calls` calls of `op` over
/// `path`, indices from `base`.
fn run(
    engine: &Engine,
    op: &str,
    path: &str,
    threads: usize,
    calls: usize,
    base: usize,
) -> Result<(), Box<dyn Error + Send + Sync>> {
    let workers: Vec<_> = (0..threads)
        .map(|t| {
            let engine = engine.clone();
            let (op, path) = (op.to_string(), path.to_string());
            std::thread::spawn(move || -> Result<(), Box<dyn Error + Send + Sync>> {
                let ns = "bench";
                let namespace = Namespace::new(ns)?;
                for c in 0..calls {
                    let i = base + t * calls + c;
                    match (op.as_str(), path.as_str()) {
                        ("remember", "surface") => {
                            surface_call(&engine, "remember", &remember_json(ns, &memory_text(i)))?;
                        }
                        ("recall", "surface") => {
                            surface_call(&engine, "recall", &recall_json(ns, &query_text(i)))?;
                        }
                        ("remember", "engine") => {
                            engine.remember(&namespace, NewMemory::new(memory_text(i)).dedup(DedupMode::Off))?;
                        }
                        ("recall", "engine") => {
                            let opts = RecallOptions { top_k: 10, record_access: false, ..RecallOptions::default() };
                            engine.recall(&namespace, &query_text(i), &opts)?;
                        }
                        other => return Err(format!("unknown op/path {other:?}").into()),
                    }
                }
                Ok(())
            })
        })
        .collect();
    for w in workers {
        w.join().map_err(|_| "a worker panicked")??;
    }
    Ok(())
}

fn main() -> Result<(), Box<dyn Error + Send + Sync>> {
    let args: Vec<String> = std::env::args().collect();
    if args.len() != 9 {
        return Err(
            "usage: bench_rust DATA_DIR remember|recall CALLS THREADS FLUSH_MS PREFILL surface|engine WARMUP".into()
        );
    }
    let (dir, op, path) = (&args[1], args[2].clone(), args[7].clone());
    let calls: usize = args[3].parse()?;
    let threads: usize = args[4].parse()?;
    let flush_ms: u64 = args[5].parse()?;
    let prefill: usize = args[6].parse()?;
    let warmup: usize = args[8].parse()?;
    let durability =
        if flush_ms == 0 { Durability::PerGroup } else { Durability::Interval(Duration::from_millis(flush_ms)) };
    let engine = Engine::builder(dir).embedder(Arc::new(HashingEmbedder::default())).durability(durability).open()?;
    let ns = "bench";
    for i in 0..prefill {
        surface_call(&engine, "remember", &remember_json(ns, &memory_text(i)))?;
    }
    // Warm-up (untimed), then the timed calls; memory and query indices
    // never repeat, so every remember writes a new memory.
    run(&engine, &op, &path, threads, warmup, prefill)?;
    let start = Instant::now();
    let cpu = ProcessTime::now();
    run(&engine, &op, &path, threads, calls, prefill + threads * warmup)?;
    let secs = start.elapsed().as_secs_f64();
    let cpu_secs = cpu.elapsed().as_secs_f64();
    engine.close()?;
    let total = calls * threads;
    println!(
        "{}",
        serde_json::json!({
            "side": "rust", "path": path, "op": op, "threads": threads, "calls": total,
            "flush_ms": flush_ms, "seconds": secs, "calls_per_s": total as f64 / secs,
            "cpu_us_per_call": cpu_secs * 1e6 / total as f64,
        })
    );
    Ok(())
}

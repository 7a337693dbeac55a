//! Writes that do not wait for embedding: `remember` latency with
//! `EmbedMode::Sync` against `EmbedMode::Deferred` in the same run, and a
//! burst of deferred writes drained to an empty backlog, against the
//! embedder's plain batch throughput (batches of 64, the background
//! embedder's size) on the same texts.
//!
//! `cargo bench --bench deferred -- [--model e5-small|minilm|hashing]
//! [--burst N] [--quick]`. Default model: e5-small when installed, else
//! MiniLM, else hashing; default burst 10,000. Durability is the default
//! (`PerGroup`: every acknowledged write is flushed).

use std::sync::Arc;
use std::time::{Duration, Instant};

use mnemon::embed::{EmbedKind, Embedder, HashingEmbedder};
use mnemon::{DedupMode, EmbedMode, Engine, Namespace, NewMemory};

const WORDS: &[&str] = &[
    "memory", "agent", "coffee", "recall", "paris", "meeting", "project", "deadline", "user", "prefers", "sour",
    "beans", "tomorrow", "rain", "engine", "vector", "index", "note", "friend", "birthday", "travel", "budget",
    "report", "review", "kitchen", "garden", "music", "piano",
];

/// Distinct pseudo-sentences of 10 words (13 word pieces for MiniLM).
fn texts(count: usize, seed: u64) -> Vec<String> {
    let mut state: u64 = 0x9e37_79b9_7f4a_7c15 ^ seed;
    (0..count)
        .map(|i| {
            let words: Vec<&str> = (0..10)
                .map(|_| {
                    state ^= state << 13;
                    state ^= state >> 7;
                    state ^= state << 17;
                    WORDS[(state % WORDS.len() as u64) as usize]
                })
                .collect();
            format!("{} {i}.", words.join(" "))
        })
        .collect()
}

fn load(name: Option<&str>) -> Arc<dyn Embedder> {
    #[cfg(feature = "neural")]
    {
        use mnemon::embed::e5::{E5Embedder, E5_SMALL};
        use mnemon::embed::{default_models_dir, is_installed, model_dir, MiniLmEmbedder, MINILM};
        let dir = default_models_dir();
        if matches!(name, None | Some("e5-small")) && is_installed(&E5_SMALL, &dir) {
            if let Ok(m) = E5Embedder::load(&model_dir(&E5_SMALL, &dir)) {
                return Arc::new(m);
            }
        }
        if matches!(name, None | Some("minilm")) && is_installed(&MINILM, &dir) {
            if let Ok(m) = MiniLmEmbedder::load(&model_dir(&MINILM, &dir)) {
                return Arc::new(m);
            }
        }
        if name.is_some_and(|n| n != "hashing") {
            eprintln!("{} not installed or failed to load; using hashing", name.unwrap_or_default());
        }
    }
    let _ = name;
    Arc::new(HashingEmbedder::default())
}

fn percentile(mut v: Vec<Duration>, p: f64) -> Duration {
    v.sort_unstable();
    let i = ((v.len() as f64 - 1.0) * p).round() as usize;
    v[i.min(v.len() - 1)]
}

fn ms(d: Duration) -> f64 {
    d.as_secs_f64() * 1e3
}

/// Latencies of `n` single `remember` calls in `mode`.
fn latencies(engine: &Engine, ns: &Namespace, texts: &[String], mode: EmbedMode) -> Vec<Duration> {
    texts
        .iter()
        .map(|t| {
            let start = Instant::now();
            engine.remember(ns, NewMemory::new(t).embed(mode).dedup(DedupMode::Supersede)).unwrap();
            start.elapsed()
        })
        .collect()
}

fn main() {
    let args: Vec<String> = std::env::args().collect();
    let arg = |k: &str| args.iter().position(|a| a == k).and_then(|i| args.get(i + 1)).cloned();
    let quick = args.iter().any(|a| a == "--quick");
    let burst: usize = arg("--burst").and_then(|s| s.parse().ok()).unwrap_or(if quick { 1_000 } else { 10_000 });
    let embedder = load(arg("--model").as_deref());
    println!(
        "embedder: {}  threads: {}",
        embedder.model_id(),
        std::thread::available_parallelism().map_or(1, |n| n.get())
    );

    // Plain batch throughput on texts like the burst's.
    let plain_texts = texts(if quick { 128 } else { 512 }, 7);
    let refs: Vec<&str> = plain_texts.iter().map(String::as_str).collect();
    let _ = embedder.embed(&refs[..64.min(refs.len())], EmbedKind::Passage);
    let start = Instant::now();
    for chunk in refs.chunks(64) {
        embedder.embed(chunk, EmbedKind::Passage).unwrap();
    }
    let plain = refs.len() as f64 / start.elapsed().as_secs_f64();

    let dir = tempfile::tempdir().unwrap();
    let engine = Engine::builder(dir.path()).embedder(embedder.clone()).open().unwrap();
    let ns = Namespace::new("bench").unwrap();
    let n_sync = if quick { 20 } else { 100 };
    let n_deferred = if quick { 100 } else { 500 };
    let sync = latencies(&engine, &ns, &texts(n_sync, 1), EmbedMode::Sync);
    let deferred = latencies(&engine, &ns, &texts(n_deferred, 2), EmbedMode::Deferred);
    engine.wait_embedded(Duration::from_secs(3600)).unwrap();

    println!();
    println!("| remember            |   n | p50 ms  | p90 ms  |");
    println!("|---------------------|-----|---------|---------|");
    for (label, v) in [("sync", &sync), ("deferred", &deferred)] {
        println!(
            "| {label:<19} | {:>3} | {:>7.3} | {:>7.3} |",
            v.len(),
            ms(percentile(v.clone(), 0.5)),
            ms(percentile(v.clone(), 0.9))
        );
    }
    println!(
        "p50 ratio sync / deferred: {:.0}x",
        ms(percentile(sync.clone(), 0.5)) / ms(percentile(deferred.clone(), 0.5))
    );

    // The burst: one caller thread, single deferred writes, then the drain.
    let burst_texts = texts(burst, 3);
    let start = Instant::now();
    for t in &burst_texts {
        engine.remember(&ns, NewMemory::new(t).embed(EmbedMode::Deferred)).unwrap();
    }
    let written = start.elapsed();
    let left_after_writes = engine.embed_backlog();
    let left = engine.wait_embedded(Duration::from_secs(4 * 3600)).unwrap();
    let drained = start.elapsed();
    assert_eq!(left, 0);
    let s = engine.stats();
    assert_eq!((s.embed_backlog, s.embed_failed), (0, 0));
    let rate = burst as f64 / drained.as_secs_f64();
    println!();
    println!(
        "burst: {burst} deferred writes in {:.2} s ({:.0} writes/s), backlog {left_after_writes} when the last returned",
        written.as_secs_f64(),
        burst as f64 / written.as_secs_f64()
    );
    println!("drained to 0 in {:.1} s from the first write: {rate:.1} memories/s", drained.as_secs_f64());
    println!("plain batch embedding (64 per batch): {plain:.1} texts/s; drain / plain = {:.2}", rate / plain);
    assert!(engine.check().unwrap().consistent);
}

//! Embedding throughput: sentences per second for the hashing embedder and
//! (with the `neural` feature and the models installed) all-MiniLM-L6-v2 and
//! multilingual-e5-small, at
//! batch sizes 1 and 32, for short (~10 words) and long (~128 word pieces)
//! inputs. Run with `cargo bench --bench embed`.

use std::time::{Duration, Instant};

use mnemon::embed::{EmbedKind, Embedder, HashingEmbedder};

const WORDS: &[&str] = &[
    "memory", "agent", "coffee", "recall", "Paris", "meeting", "project", "deadline", "user", "prefers", "sour",
    "beans", "tomorrow", "rain", "engine", "vector", "index", "note", "friend", "birthday", "travel", "budget",
    "report", "review", "kitchen", "garden", "music", "piano",
];

/// Deterministic pseudo-sentences of `n` words.
fn texts(count: usize, n: usize) -> Vec<String> {
    let mut state: u64 = 0x9e37_79b9_7f4a_7c15;
    (0..count)
        .map(|_| {
            (0..n)
                .map(|_| {
                    state ^= state << 13;
                    state ^= state >> 7;
                    state ^= state << 17;
                    WORDS[(state % WORDS.len() as u64) as usize]
                })
                .collect::<Vec<_>>()
                .join(" ")
                + "."
        })
        .collect()
}

/// Runs `embed` over `texts` in batches of `batch` for at least `min_time`;
/// returns sentences per second.
fn measure(e: &dyn Embedder, texts: &[String], batch: usize, min_time: Duration) -> f64 {
    let refs: Vec<&str> = texts.iter().map(String::as_str).collect();
    // Warm-up.
    for chunk in refs.chunks(batch).take(2) {
        let _ = e.embed(chunk, EmbedKind::Passage);
    }
    let start = Instant::now();
    let mut done = 0usize;
    while start.elapsed() < min_time {
        for chunk in refs.chunks(batch) {
            let out = e.embed(chunk, EmbedKind::Passage);
            assert!(out.is_ok_and(|v| v.len() == chunk.len()));
            done += chunk.len();
        }
    }
    done as f64 / start.elapsed().as_secs_f64()
}

fn bench(name: &str, e: &dyn Embedder, min_time: Duration) {
    // Every vocabulary word is one word piece for MiniLM's tokenizer, so 10
    // words are 13 tokens and 125 words 128 tokens ([CLS], words, ".", [SEP]).
    for (label, words) in [("short (10 words)", 10), ("long (128 tokens)", 125)] {
        let t = texts(128, words);
        for batch in [1, 32] {
            let rate = measure(e, &t, batch, min_time);
            println!("| {name:<28} | {label:<19} | {batch:>5} | {rate:>12.1} |");
        }
    }
}

fn main() {
    let quick = std::env::args().any(|a| a == "--quick");
    let min_time = Duration::from_millis(if quick { 300 } else { 3000 });
    println!("| embedder                     | input               | batch | sentences/s  |");
    println!("|------------------------------|---------------------|-------|--------------|");
    let h = HashingEmbedder::default();
    bench(h.model_id(), &h, min_time);
    #[cfg(feature = "neural")]
    {
        use mnemon::embed::{default_models_dir, is_installed, model_dir, MiniLmEmbedder, MINILM};
        let dir = default_models_dir();
        if is_installed(&MINILM, &dir) {
            match MiniLmEmbedder::load(&model_dir(&MINILM, &dir)) {
                Ok(m) => bench(m.model_id(), &m, min_time),
                Err(e) => eprintln!("MiniLM failed to load: {e}"),
            }
        } else {
            eprintln!("SKIPPED MiniLM: not installed in {} (run `mnemon model install minilm`)", dir.display());
        }
        use mnemon::embed::e5::{E5Embedder, E5_SMALL};
        if is_installed(&E5_SMALL, &dir) {
            match E5Embedder::load(&model_dir(&E5_SMALL, &dir)) {
                Ok(m) => bench(m.model_id(), &m, min_time),
                Err(e) => eprintln!("e5-small failed to load: {e}"),
            }
        } else {
            eprintln!("SKIPPED e5-small: not installed in {} (run `mnemon model install e5-small`)", dir.display());
        }
    }
    println!("threads: {}", std::thread::available_parallelism().map_or(1, |n| n.get()));
}

//! Write and recall throughput with encryption at rest against the same
//! workload on a plain store, measured in the same run on the same disk.
//!
//! Each round writes `MNEMON_BENCH_WRITES` memories (default 2000) from 4
//! threads (durable per group: every call waits for its group's flush),
//! then runs as many recalls (top 10) from 4 threads, and finally reopens
//! the store (replay). Rounds alternate plain and encrypted, twice each;
//! the best of each is kept, and the last column is encrypted / plain (the
//! target is 0.85 or more for writes and recalls).
//!
//! Run: `cargo bench --no-default-features --bench encryption`.

use std::sync::Arc;
use std::time::Instant;

use mnemon::crypt::{Kek, StaticKey};
use mnemon::embed::HashingEmbedder;
use mnemon::{Engine, Namespace, NewMemory, RecallOptions};

const THREADS: usize = 4;

fn writes() -> usize {
    std::env::var("MNEMON_BENCH_WRITES").ok().and_then(|s| s.parse().ok()).unwrap_or(2000)
}

fn text(i: usize) -> String {
    format!("memory number {i}: the user mentioned topic {} while talking about project {}", i * 7919 % 1000, i % 37)
}

/// One round's rates: writes/s, recalls/s, replayed events/s.
#[derive(Clone, Copy, Default)]
struct Rates {
    write: f64,
    recall: f64,
    reopen: f64,
}

fn open(path: &std::path::Path, key: Option<&Kek>) -> Engine {
    let mut b = Engine::builder(path).embedder(Arc::new(HashingEmbedder::new(384).expect("embedder")));
    if let Some(k) = key {
        b = b.key_provider(Arc::new(StaticKey(k.clone())));
    }
    b.open().expect("open")
}

fn round(key: Option<&Kek>, n: usize) -> Rates {
    let dir = tempfile::tempdir().expect("tempdir");
    let e = open(dir.path(), key);
    let per = n / THREADS;
    let start = Instant::now();
    std::thread::scope(|s| {
        for t in 0..THREADS {
            let e = e.clone();
            s.spawn(move || {
                let ns = Namespace::new(format!("user{t}")).expect("namespace");
                for i in 0..per {
                    e.remember(&ns, NewMemory::new(text(t * per + i))).expect("remember");
                }
            });
        }
    });
    let write = (per * THREADS) as f64 / start.elapsed().as_secs_f64();
    let start = Instant::now();
    std::thread::scope(|s| {
        for t in 0..THREADS {
            let e = e.clone();
            s.spawn(move || {
                let ns = Namespace::new(format!("user{t}")).expect("namespace");
                for i in 0..per {
                    let q = format!("topic {} project {}", i * 13 % 1000, i % 37);
                    e.recall(&ns, &q, &RecallOptions::default()).expect("recall");
                }
            });
        }
    });
    let recall = (per * THREADS) as f64 / start.elapsed().as_secs_f64();
    e.close().expect("close");
    let start = Instant::now();
    let e = open(dir.path(), key);
    let events = e.last_seq() as f64;
    let reopen = events / start.elapsed().as_secs_f64();
    e.close().expect("close");
    Rates { write, recall, reopen }
}

fn best(a: Rates, b: Rates) -> Rates {
    Rates { write: a.write.max(b.write), recall: a.recall.max(b.recall), reopen: a.reopen.max(b.reopen) }
}

fn main() {
    let n = writes();
    let kek = Kek::generate();
    let (mut plain, mut sealed) = (Rates::default(), Rates::default());
    for _ in 0..2 {
        plain = best(plain, round(None, n));
        sealed = best(sealed, round(Some(&kek), n));
    }
    println!("encryption at rest: {n} writes and {n} recalls from {THREADS} threads, best of 2 rounds each");
    println!("{:<18} {:>12} {:>12} {:>10}", "workload", "plain /s", "encrypted /s", "enc/plain");
    for (name, p, s) in [
        ("write (durable)", plain.write, sealed.write),
        ("recall (top 10)", plain.recall, sealed.recall),
        ("reopen (events)", plain.reopen, sealed.reopen),
    ] {
        println!("{name:<18} {p:>12.0} {s:>12.0} {:>10.3}", s / p);
    }
}

//! What a recall costs beside the vector search inside it: thread CPU time
//! of `Engine::recall` (top 10, hybrid, the defaults: 50 candidates from
//! each index) against `VectorIndex::search` for the same 50 candidates on
//! an index holding the same vectors, same parameters, in the same run.
//!
//! ```text
//! cargo bench -p mnemon --bench recall_cost                          # 10k and 100k
//! MNEMON_BENCH_SIZES=10000 cargo bench -p mnemon --bench recall_cost
//! ```
//!
//! The store: one namespace, hashing embedder (384-d), vectors given,
//! built in groups of 1,000, its graph complete before the measurement.
//! 300 queries, each the text of a stored memory with two words replaced.
//! The baseline, the BM25 search, the embedding and the read-only recall
//! are timed one after another for each query, over 5 passes (1,500
//! samples each), so that they see the same machine; the default recall
//! follows, one pass.
//! Printed per size: p50 of the thread CPU time (µs) of the index search
//! (the baseline), of `LexicalIndex::search` for the same 50 candidates on
//! an index of the same texts (the BM25 part of a recall), of a recall with `record_access` off (the read alone),
//! and with it on (the default: the `accessed` event is queued to the
//! writer, whose work is not on this thread), each with its ratio to the
//! baseline; the query's embedding is inside the recall's figure
//! (measured apart, `embed`).

use std::sync::Arc;

use cpu_time::ThreadTime;
use mnemon::embed::HashingEmbedder;
use mnemon::index::{HnswParams, LexicalIndex, VectorIndex};
use mnemon::{DedupMode, Engine, Namespace, NewMemory, RecallOptions};

const GROUP: usize = 1000;
const QUERIES: usize = 300;
/// Passes over the queries for the baseline and the read-only recall,
/// interleaved query by query.
const ROUNDS: usize = 5;
const CANDIDATES: usize = 50;
#[path = "common/notes.rs"]
mod notes;
use notes::{query, text};

fn sizes() -> Vec<usize> {
    std::env::var("MNEMON_BENCH_SIZES")
        .ok()
        .map(|s| s.split(',').filter_map(|x| x.trim().parse().ok()).collect())
        .unwrap_or_else(|| vec![10_000, 100_000])
}

fn p50(mut v: Vec<f64>) -> f64 {
    v.sort_by(f64::total_cmp);
    v[v.len() / 2]
}

fn cpu_us(f: impl FnOnce()) -> f64 {
    let t = ThreadTime::now();
    f();
    t.elapsed().as_secs_f64() * 1e6
}

fn main() {
    let embedder = HashingEmbedder::new(384).expect("embedder");
    println!("recall cost: thread CPU p50 (µs) over {QUERIES} queries; top 10, {CANDIDATES} candidates per index");
    println!("| memories | index search (baseline) | BM25 search | × | embed | recall, no access | × | recall, default | × |");
    println!("|---|---|---|---|---|---|---|---|---|");
    for n in sizes() {
        let dir = tempfile::tempdir().expect("tempdir");
        let engine = Engine::builder(dir.path())
            .embedder(Arc::new(HashingEmbedder::new(384).expect("embedder")))
            .open()
            .expect("open");
        let ns = Namespace::new("bench").expect("namespace");
        let mut index = VectorIndex::new(384, HnswParams::default());
        let mut lexical = LexicalIndex::new();
        for g in 0..n / GROUP {
            let vectors: Vec<Vec<f32>> = (g * GROUP..(g + 1) * GROUP).map(|i| embedder.embed_one(&text(i))).collect();
            let mems = (g * GROUP..(g + 1) * GROUP)
                .zip(&vectors)
                .map(|(i, v)| NewMemory::new(text(i)).vector(v.clone()).dedup(DedupMode::Supersede))
                .collect();
            for ((r, v), i) in
                engine.remember_batch(&ns, mems).expect("remember_batch").into_iter().zip(&vectors).zip(g * GROUP..)
            {
                let id = r.expect("remember").id.0;
                index.insert(id, v);
                lexical.insert(id, &text(i));
            }
        }
        engine.wait_for_graphs();
        index.wait_for_graph();
        let queries: Vec<String> = (0..QUERIES).map(|i| query(i * 31 % n)).collect();
        let vectors: Vec<Vec<f32>> = queries.iter().map(|q| embedder.embed_one(q)).collect();
        // Interleaved, query by query and round by round, so that the
        // baseline and the recall see the same machine.
        let quiet = RecallOptions { top_k: 10, record_access: false, ..RecallOptions::default() };
        let (mut search, mut bm25, mut embed, mut read) = (Vec::new(), Vec::new(), Vec::new(), Vec::new());
        for _ in 0..ROUNDS {
            for (q, v) in queries.iter().zip(&vectors) {
                search.push(cpu_us(|| drop(index.search(v, CANDIDATES, &|_| true))));
                bm25.push(cpu_us(|| drop(lexical.search(q, CANDIDATES, &|_| true))));
                embed.push(cpu_us(|| drop(embedder.embed_one(q))));
                read.push(cpu_us(|| drop(engine.recall(&ns, q, &quiet).expect("recall"))));
            }
        }
        let (search, bm25, embed, read) = (p50(search), p50(bm25), p50(embed), p50(read));
        let default = RecallOptions { top_k: 10, ..RecallOptions::default() };
        let full =
            p50(queries.iter().map(|q| cpu_us(|| drop(engine.recall(&ns, q, &default).expect("recall")))).collect());
        println!(
            "| {n} | {search:.0} | {bm25:.0} | {:.1}× | {embed:.0} | {read:.0} | {:.1}× | {full:.0} | {:.1}× |",
            bm25 / search,
            read / search,
            full / search
        );
        engine.close().expect("close");
    }
}

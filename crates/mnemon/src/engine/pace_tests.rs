//! The writer waits between groups while a namespace's HNSW graph has more
//! than `GRAPH_BACKLOG` vectors queued, and only then.

use std::sync::Arc;
use std::time::Duration;

use crate::embed::HashingEmbedder;
use crate::index::{HnswParams, GRAPH_BACKLOG};
use crate::{DedupMode, Engine, Namespace, NewMemory};

fn texts(from: usize, n: usize) -> Vec<NewMemory> {
    (from..from + n)
        .map(|i| {
            NewMemory::new(format!("Note {i}: the order {i} left the depot at {i} past nine"))
                .dedup(DedupMode::Supersede)
        })
        .collect()
}

fn pause(engine: &Engine, ns: &Namespace, paused: bool) {
    let state = engine.shared().state.read();
    state.namespaces.get(ns).expect("namespace").vectors.pause_graph(paused);
}

#[test]
fn a_write_after_a_group_that_outran_the_graph_waits_for_it() {
    let dir = tempfile::tempdir().unwrap();
    let params = HnswParams { exact_threshold: 64, ..HnswParams::default() };
    let engine =
        Engine::builder(dir.path()).embedder(Arc::new(HashingEmbedder::new(64).unwrap())).hnsw(params).open().unwrap();
    let ns = Namespace::new("pace").unwrap();
    engine.remember_batch(&ns, texts(0, 100)).unwrap();
    engine.wait_for_graphs();
    assert!(engine.shared().state.read().graph_backlogs(std::slice::from_ref(&ns)).is_empty());

    // Held back, the graph queues a group larger than the backlog: that
    // group is answered, the next one waits until the graph has caught up.
    pause(&engine, &ns, true);
    engine.remember_batch(&ns, texts(100, GRAPH_BACKLOG + 50)).unwrap();
    assert_eq!(engine.shared().state.read().graph_backlogs(std::slice::from_ref(&ns)).len(), 1);
    let (tx, rx) = crossbeam_channel::bounded(1);
    std::thread::scope(|s| {
        s.spawn(|| {
            let r = engine.remember_batch(&ns, texts(5000, 1));
            tx.send(r.map(|v| v.len())).unwrap();
        });
        assert!(rx.recv_timeout(Duration::from_millis(400)).is_err(), "a write went past a graph 1,074 behind");
        // Readers are not held: the tail is searched meanwhile.
        let hits = engine.recall(&ns, "the order 120 left the depot", &crate::RecallOptions::default()).unwrap();
        assert!(!hits.is_empty());
        pause(&engine, &ns, false);
        assert_eq!(rx.recv_timeout(Duration::from_secs(60)).unwrap().unwrap(), 1);
    });
    engine.close().unwrap();
}

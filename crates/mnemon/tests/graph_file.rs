//! The graph file: a clean close saves each namespace's HNSW graph beside
//! the log, the next open loads it when it matches the log exactly and
//! rebuilds otherwise (missing, stale, damaged), and recall is the same
//! either way.

use std::path::Path;

use mnemon::index::HnswParams;
use mnemon::{DedupMode, Engine, MemoryId, Namespace, NewMemory, RecallOptions};

type R = Result<(), Box<dyn std::error::Error>>;

const GRAPH_FILE: &str = "graphs.bin";

const WORDS: [&str; 24] = [
    "harbor", "violin", "pepper", "glacier", "lantern", "meadow", "copper", "falcon", "orchard", "thunder", "velvet",
    "canyon", "saffron", "marble", "cobalt", "willow", "ember", "quartz", "juniper", "tundra", "basil", "onyx",
    "mango", "cedar",
];

/// Small graphs (a graph from 200 vectors), built sequentially.
fn params() -> HnswParams {
    HnswParams { exact_threshold: 200, parallel_build: false, ..HnswParams::default() }
}

fn open(dir: &Path) -> mnemon::Result<Engine> {
    Engine::builder(dir).hnsw(params()).open()
}

fn ns() -> Namespace {
    Namespace::new("graphs").unwrap()
}

/// The `i`-th memory: three words of [`WORDS`] and a number.
fn text(i: usize) -> String {
    let w = |k: usize| WORDS[(i / k) % WORDS.len()];
    format!("the {} near the {} holds {} item {i}", w(1), w(7), w(13))
}

/// A store of `n` memories in one namespace, its graph complete, closed.
fn build(dir: &Path, n: usize) -> R {
    let e = open(dir)?;
    for chunk in (0..n).collect::<Vec<_>>().chunks(250) {
        let batch = chunk.iter().map(|&i| NewMemory::new(text(i)).dedup(DedupMode::Off)).collect();
        for r in e.remember_batch(&ns(), batch)? {
            r?;
        }
    }
    e.wait_for_graphs();
    e.close()?;
    Ok(())
}

/// The ids of the top 10 hits of a few queries.
fn recalls(e: &Engine) -> mnemon::Result<Vec<Vec<MemoryId>>> {
    let queries = ["violin lantern", "glacier copper falcon", "the basil near the onyx", "cedar item 77", "mango"];
    queries
        .iter()
        .map(|q| {
            let hits = e.recall(&ns(), q, &RecallOptions { top_k: 10, ..RecallOptions::default() })?;
            Ok(hits.into_iter().map(|h| h.memory.id).collect())
        })
        .collect()
}

/// Opens the store as a fresh process would after deleting the graph file:
/// the graph rebuilt from the log, complete. Returns its recalls.
fn rebuilt_recalls(dir: &Path) -> Result<Vec<Vec<MemoryId>>, Box<dyn std::error::Error>> {
    let _ = std::fs::remove_file(dir.join(GRAPH_FILE));
    let e = open(dir)?;
    assert_eq!(e.open_report().graphs_loaded, 0);
    e.wait_for_graphs();
    assert_eq!(e.stats().hnsw_namespaces, 1);
    let r = recalls(&e)?;
    e.close()?;
    Ok(r)
}

/// A clean close writes the file; the next open loads the graph (searches
/// run on it at once), deletes the file, and recalls what an open that
/// rebuilt the graph recalls.
#[test]
fn a_reopen_loads_the_graph_and_recalls_as_a_rebuild() -> R {
    let dir = tempfile::tempdir()?;
    build(dir.path(), 1200)?;
    assert!(dir.path().join(GRAPH_FILE).exists(), "a clean close saves the graph");
    let e = open(dir.path())?;
    assert_eq!(e.open_report().graphs_loaded, 1);
    assert!(!dir.path().join(GRAPH_FILE).exists(), "the open consumed the file");
    assert_eq!(e.stats().hnsw_namespaces, 1, "the graph serves searches at once");
    let loaded = recalls(&e)?;
    assert!(loaded.iter().all(|hits| !hits.is_empty()));
    e.close()?;
    assert_eq!(loaded, rebuilt_recalls(dir.path())?);
    Ok(())
}

/// Vectors written after the graph was saved are added on top of the
/// loaded graph; a file saved before them is stale and is rebuilt.
#[test]
fn a_stale_file_is_rebuilt_and_a_grown_graph_is_saved_again() -> R {
    let dir = tempfile::tempdir()?;
    build(dir.path(), 600)?;
    let old = std::fs::read(dir.path().join(GRAPH_FILE))?;
    let e = open(dir.path())?;
    assert_eq!(e.open_report().graphs_loaded, 1);
    for i in 600..700 {
        e.remember(&ns(), NewMemory::new(text(i)).dedup(DedupMode::Off))?;
    }
    e.wait_for_graphs();
    e.close()?;
    let e = open(dir.path())?;
    assert_eq!(e.open_report().graphs_loaded, 1, "the grown graph was saved");
    let grown = recalls(&e)?;
    e.close()?;
    std::fs::write(dir.path().join(GRAPH_FILE), &old)?;
    let e = open(dir.path())?;
    assert_eq!(e.open_report().graphs_loaded, 0, "a file from an earlier position is not used");
    assert!(!dir.path().join(GRAPH_FILE).exists());
    e.close()?;
    assert_eq!(grown, rebuilt_recalls(dir.path())?);
    Ok(())
}

/// A damaged graph file (bytes flipped, cut short, emptied, garbage) is
/// a rebuild, never an error: the store opens and recalls the same.
#[test]
fn a_damaged_file_is_rebuilt() -> R {
    let dir = tempfile::tempdir()?;
    build(dir.path(), 400)?;
    let good = std::fs::read(dir.path().join(GRAPH_FILE))?;
    let want = rebuilt_recalls(dir.path())?;
    let mut damaged: Vec<Vec<u8>> = Vec::new();
    for at in [0, 8, 12, 20, 24, 40, good.len() / 3, good.len() - 1] {
        let mut b = good.clone();
        b[at] ^= 0x01;
        damaged.push(b);
    }
    for len in [0, 10, 24, good.len() / 2, good.len() - 1] {
        damaged.push(good[..len].to_vec());
    }
    damaged.push(vec![0xAB; good.len()]);
    for (i, bytes) in damaged.into_iter().enumerate() {
        std::fs::write(dir.path().join(GRAPH_FILE), &bytes)?;
        let e = open(dir.path())?;
        assert_eq!(e.open_report().graphs_loaded, 0, "damage {i}");
        assert!(!dir.path().join(GRAPH_FILE).exists(), "damage {i}: the file is deleted");
        e.wait_for_graphs();
        assert_eq!(recalls(&e)?, want, "damage {i}");
        drop(e);
        std::fs::remove_file(dir.path().join(GRAPH_FILE))?;
    }
    // After the rebuilds, a clean close saves a file that loads.
    let e = open(dir.path())?;
    e.wait_for_graphs();
    e.close()?;
    let e = open(dir.path())?;
    assert_eq!(e.open_report().graphs_loaded, 1);
    assert_eq!(recalls(&e)?, want);
    Ok(())
}

/// Other HNSW parameters than those the graph was built with are a
/// rebuild.
#[test]
fn other_parameters_are_a_rebuild() -> R {
    let dir = tempfile::tempdir()?;
    build(dir.path(), 300)?;
    let e = Engine::builder(dir.path()).hnsw(HnswParams { m: 8, ..params() }).open()?;
    assert_eq!(e.open_report().graphs_loaded, 0);
    Ok(())
}

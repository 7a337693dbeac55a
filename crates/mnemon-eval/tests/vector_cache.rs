//! The shared vector cache (`mnemon eval --vector-cache`): runs that append
//! to the same file at once, and a run killed mid-write, leave every
//! finished record readable.

use std::path::Path;
use std::thread;

use mnemon::embed::EmbedKind;
use mnemon_eval::VectorCache;

type TestResult = Result<(), Box<dyn std::error::Error>>;

fn vector(writer: usize, i: usize) -> Vec<f32> {
    (0..8).map(|d| (writer * 10_000 + i * 10 + d) as f32).collect()
}

fn text(writer: usize, i: usize) -> String {
    format!("writer {writer} text {i}")
}

/// Opens its own cache on `dir` and appends `n` vectors, flushing every few.
fn append(dir: &Path, writer: usize, n: usize) -> mnemon::Result<()> {
    let mut c = VectorCache::open(dir, "model@1")?;
    for i in 0..n {
        c.put(EmbedKind::Passage, &text(writer, i), vector(writer, i))?;
        if i % 7 == 6 {
            c.flush()?;
        }
    }
    c.flush()
}

#[test]
fn concurrent_appenders_leave_every_record_readable() -> TestResult {
    let dir = tempfile::tempdir()?;
    const WRITERS: usize = 4;
    const EACH: usize = 300;
    let handles: Vec<_> = (0..WRITERS)
        .map(|w| {
            let d = dir.path().to_path_buf();
            thread::spawn(move || append(&d, w, EACH))
        })
        .collect();
    for h in handles {
        h.join().map_err(|_| "writer panicked")??;
    }
    let c = VectorCache::open(dir.path(), "model@1")?;
    assert_eq!((c.loaded, c.torn_tail_bytes), (WRITERS * EACH, 0));
    for w in 0..WRITERS {
        for i in 0..EACH {
            assert_eq!(c.get(EmbedKind::Passage, &text(w, i)), Some(&vector(w, i)), "writer {w} record {i}");
        }
    }
    Ok(())
}

#[test]
fn a_torn_tail_left_by_another_run_is_cut_before_appending() -> TestResult {
    let dir = tempfile::tempdir()?;
    let mut a = VectorCache::open(dir.path(), "model@1")?;
    a.put(EmbedKind::Query, "before", vec![1.0, 2.0])?;
    a.flush()?;
    // Another run appends one whole record, then dies in the middle of the
    // next one.
    let path = a.path().ok_or("no path")?.to_path_buf();
    let mut bytes = std::fs::read(&path)?;
    let whole = mnemon_eval::encode_vector_record(&(0, [7; 16]), &[3.0, 4.0]);
    bytes.extend_from_slice(&whole);
    bytes.extend_from_slice(&whole[..10]);
    std::fs::write(&path, &bytes)?;
    a.put(EmbedKind::Query, "after", vec![5.0, 6.0])?;
    a.flush()?;
    drop(a);
    let c = VectorCache::open(dir.path(), "model@1")?;
    assert_eq!((c.loaded, c.torn_tail_bytes), (3, 0));
    assert_eq!(c.get(EmbedKind::Query, "before"), Some(&vec![1.0, 2.0]));
    assert_eq!(c.get(EmbedKind::Query, "after"), Some(&vec![5.0, 6.0]));
    Ok(())
}

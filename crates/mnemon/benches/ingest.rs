//! Batched ingest: events/s through `observe_batch` and `remember_batch`
//! (vectors given by the caller, so no embedding), 1,000 items per call,
//! against SQLite measured in the same run on the same disk.
//!
//! Baselines (rusqlite, SQLite built from source with the `bundled`
//! feature): WAL journal, `synchronous = FULL` (the WAL is synced at every
//! commit, as mnemon flushes every group), 1,000 rows per transaction, one
//! table of (id, namespace, session, text) plus an FTS5 index over the text
//! (external content, default `unicode61` tokenizer):
//!
//! * `sqlite wal + fts5` — the texts only;
//! * `sqlite wal + fts5 + vectors` — memories also store their 384 × f32
//!   vector as a 1,536-byte blob, the vector as the caller gave it
//!   (mnemon's vector cache holds it in `f16`, 768 bytes and a 9-byte
//!   header).
//!
//! A third baseline bounds what any engine on the pinned log store can do:
//! `sled alone, same bytes` reads back the keys and values mnemon wrote in
//! the same run (its `events` tree and its vector cache) and writes them
//! into a fresh sled database the way mnemon's writer does (each group's
//! events as one `sled::Batch`, its vectors key by key, one flush per
//! group of 1,000 events), with no validation, planning or indexing. Two
//! rows: the events alone, and the events with the vector cache.
//!
//! mnemon does more per memory than either (slot-key and duplicate maps,
//! a BM25 index with CJK bigrams and stemming, the vector index, the
//! projections readers use), and its figure includes the caller-side
//! validation and safety stage (personal-data redaction, injection check).
//!
//! Run: `cargo bench --bench ingest` (`MNEMON_BENCH_EVENTS`, default
//! 100 000 events per configuration; `MNEMON_BENCH_REPEAT`, default 1;
//! `MNEMON_BENCH_MIX=observations|memories|both` runs one configuration
//! only, default all three).

use std::path::Path;
use std::sync::Arc;
use std::time::Instant;

use mnemon::embed::HashingEmbedder;
use mnemon::{DedupMode, Engine, Namespace, NewMemory, NewObservation, Role};

const BATCH: usize = 1000;
const DIM: usize = 384;

fn env(name: &str, default: usize) -> usize {
    std::env::var(name).ok().and_then(|s| s.parse().ok()).unwrap_or(default)
}

/// Varied, realistic-length texts (about 90 bytes), as in `benches/compact.rs`.
fn text(i: usize) -> String {
    format!(
        "Note {i}: the user said they visited {} on day {} and want to remember the order number {:08x}.",
        ["Lisbon", "Porto", "Kyoto", "Oslo", "Quito", "Accra"][i % 6],
        i % 365,
        i.wrapping_mul(2_654_435_761)
    )
}

fn session(i: usize) -> String {
    format!("s{}", i / 50)
}

/// What one configuration ingests: observations, memories, or both
/// alternating batch by batch.
#[derive(Clone, Copy, PartialEq)]
enum Mix {
    Observations,
    Memories,
    Both,
}

impl Mix {
    fn is_memory_batch(self, b: usize) -> bool {
        match self {
            Mix::Observations => false,
            Mix::Memories => true,
            Mix::Both => b % 2 == 1,
        }
    }
}

struct Input {
    texts: Vec<String>,
    vectors: Vec<Vec<f32>>,
}

fn input(n: usize) -> Input {
    let e = HashingEmbedder::new(DIM).expect("embedder");
    let texts: Vec<String> = (0..n).map(text).collect();
    let vectors = texts.iter().map(|t| e.embed_one(t)).collect();
    Input { texts, vectors }
}

/// Events per second through the engine.
fn mnemon_run(dir: &Path, inp: &Input, mix: Mix) -> Result<f64, mnemon::Error> {
    let engine = Engine::builder(dir).embedder(Arc::new(HashingEmbedder::new(DIM)?)).open()?;
    let ns = Namespace::new("import")?;
    let n = inp.texts.len();
    let start = Instant::now();
    for (b, lo) in (0..n).step_by(BATCH).enumerate() {
        let hi = (lo + BATCH).min(n);
        if mix.is_memory_batch(b) {
            let batch: Vec<NewMemory> = (lo..hi)
                .map(|i| {
                    NewMemory::new(inp.texts[i].clone())
                        .vector(inp.vectors[i].clone())
                        .session(session(i))
                        .dedup(DedupMode::Off)
                })
                .collect();
            for r in engine.remember_batch(&ns, batch)? {
                r?;
            }
        } else {
            let batch: Vec<NewObservation> =
                (lo..hi).map(|i| NewObservation::new(session(i), Role::User, inp.texts[i].clone())).collect();
            engine.observe_batch(&ns, batch)?;
        }
    }
    let rate = n as f64 / start.elapsed().as_secs_f64();
    let stats = engine.stats();
    assert_eq!(stats.events.observed + stats.events.extracted, n as u64, "every acknowledged event is there");
    engine.close()?;
    Ok(rate)
}

/// The generation directory that `DATA/CURRENT` names (the sled database).
fn sled_path(data: &Path) -> std::io::Result<std::path::PathBuf> {
    Ok(data.join(std::fs::read_to_string(data.join("CURRENT"))?.trim()))
}

/// Events per second through bare sled, writing the keys and values of the
/// closed store at `data` into a fresh database under `scratch`: groups of
/// [`BATCH`] events in sequence order, each group's events as one batch and
/// the cached vectors of the memories it holds (vector keys start with the
/// memory id, the event's big-endian sequence number) key by key, then a
/// flush. Returns (events only, events and vectors).
fn sled_same_bytes(data: &Path, scratch: &Path) -> Result<(f64, f64), Box<dyn std::error::Error>> {
    type Pairs = Vec<(sled::IVec, sled::IVec)>;
    let (events, vectors): (Pairs, Pairs) = {
        let db = sled::Config::new().path(sled_path(data)?).open()?;
        let read = |name: &str| -> sled::Result<Pairs> { db.open_tree(name)?.iter().collect() };
        (read("events")?, read("vectors")?)
    };
    let mut rates = [0.0; 2];
    for (with_vectors, rate) in [false, true].into_iter().zip(rates.iter_mut()) {
        let db = sled::Config::new().path(scratch.join(format!("bare-{with_vectors}"))).flush_every_ms(None).open()?;
        let (ev_tree, vec_tree) = (db.open_tree("events")?, db.open_tree("vectors")?);
        let mut vec_at = 0;
        let start = Instant::now();
        for group in events.chunks(BATCH) {
            let mut batch = sled::Batch::default();
            for (k, v) in group {
                batch.insert(k.clone(), v.clone());
            }
            ev_tree.apply_batch(batch)?;
            if with_vectors {
                let last = group.last().map(|(k, _)| k.clone()).unwrap_or_default();
                while let Some((k, v)) = vectors.get(vec_at).filter(|(k, _)| k[..8] <= last[..]) {
                    vec_tree.insert(k.clone(), v.clone())?;
                    vec_at += 1;
                }
            }
            db.flush()?;
        }
        *rate = events.len() as f64 / start.elapsed().as_secs_f64();
    }
    Ok((rates[0], rates[1]))
}

/// Events (rows) per second through SQLite.
fn sqlite_run(dir: &Path, inp: &Input, mix: Mix, with_vectors: bool) -> rusqlite::Result<f64> {
    let mut db = rusqlite::Connection::open(dir.join("bench.sqlite"))?;
    db.pragma_update(None, "journal_mode", "WAL")?;
    db.pragma_update(None, "synchronous", "FULL")?;
    db.execute_batch(
        "CREATE TABLE events(id INTEGER PRIMARY KEY, ns TEXT NOT NULL, session TEXT, text TEXT NOT NULL, vector BLOB);
         CREATE VIRTUAL TABLE events_fts USING fts5(text, content='events', content_rowid='id');",
    )?;
    let n = inp.texts.len();
    let start = Instant::now();
    for (b, lo) in (0..n).step_by(BATCH).enumerate() {
        let hi = (lo + BATCH).min(n);
        let memories = mix.is_memory_batch(b);
        let tx = db.transaction()?;
        {
            let mut row =
                tx.prepare_cached("INSERT INTO events(id, ns, session, text, vector) VALUES (?1, ?2, ?3, ?4, ?5)")?;
            let mut fts = tx.prepare_cached("INSERT INTO events_fts(rowid, text) VALUES (?1, ?2)")?;
            for i in lo..hi {
                let id = i64::try_from(i + 1).unwrap_or(i64::MAX);
                let blob: Option<Vec<u8>> =
                    (memories && with_vectors).then(|| inp.vectors[i].iter().flat_map(|x| x.to_le_bytes()).collect());
                row.execute(rusqlite::params![id, "import", session(i), inp.texts[i], blob])?;
                fts.execute(rusqlite::params![id, inp.texts[i]])?;
            }
        }
        tx.commit()?;
    }
    Ok(n as f64 / start.elapsed().as_secs_f64())
}

fn main() -> Result<(), Box<dyn std::error::Error>> {
    let n = env("MNEMON_BENCH_EVENTS", 100_000);
    let repeat = env("MNEMON_BENCH_REPEAT", 1);
    let load = std::fs::read_to_string("/proc/loadavg").unwrap_or_default();
    println!("batched ingest: {n} events per configuration, {BATCH} per call / transaction, 384-d vectors given");
    println!("load average at start: {}", load.trim());
    let inp = input(n);
    println!(
        "{:<56} {:>12} {:>14} {:>14} {:>14}",
        "configuration", "events/s", "× sqlite fts5", "× sqlite +vec", "× sled bytes"
    );
    let only = std::env::var("MNEMON_BENCH_MIX").unwrap_or_default();
    let mixes = [("observations", Mix::Observations), ("memories", Mix::Memories), ("half and half", Mix::Both)];
    let mixes: Vec<_> = mixes
        .into_iter()
        .filter(|(label, _)| {
            only.is_empty() || label.starts_with(only.as_str()) || (only == "both" && label.starts_with("half"))
        })
        .collect();
    if mixes.is_empty() {
        return Err(format!("MNEMON_BENCH_MIX={only:?}: expected observations, memories or both").into());
    }
    for _ in 0..repeat {
        for &(label, mix) in &mixes {
            let tmp = tempfile::tempdir()?;
            let base = sqlite_run(&subdir(tmp.path(), "sqlite")?, &inp, mix, false)?;
            let base_vec = sqlite_run(&subdir(tmp.path(), "sqlite-vec")?, &inp, mix, true)?;
            let ours = mnemon_run(&tmp.path().join("m"), &inp, mix)?;
            let (bare, bare_vec) = sled_same_bytes(&tmp.path().join("m"), tmp.path())?;
            let row = |name: &str, rate: f64, cols: [String; 3]| {
                println!(
                    "{:<56} {:>12.0} {:>14} {:>14} {:>14}",
                    format!("{name}, {label}"),
                    rate,
                    cols[0],
                    cols[1],
                    cols[2]
                );
            };
            let ratio = |r: f64| format!("{r:.2}");
            row("sqlite wal + fts5", base, [ratio(1.0), String::new(), String::new()]);
            row("sqlite wal + fts5 + vectors", base_vec, [String::new(), ratio(1.0), String::new()]);
            row("sled alone, same bytes, events", bare, [ratio(bare / base), ratio(bare / base_vec), String::new()]);
            row(
                "sled alone, same bytes, events + vectors",
                bare_vec,
                [ratio(bare_vec / base), ratio(bare_vec / base_vec), ratio(1.0)],
            );
            row("mnemon", ours, [ratio(ours / base), ratio(ours / base_vec), ratio(ours / bare_vec)]);
        }
    }
    Ok(())
}

/// `parent/name`, created.
fn subdir(parent: &Path, name: &str) -> std::io::Result<std::path::PathBuf> {
    let p = parent.join(name);
    std::fs::create_dir_all(&p)?;
    Ok(p)
}

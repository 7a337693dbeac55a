//! One-off smoke checks of the loaders (and the runner, with a word-overlap
//! baseline) on the real benchmark files. Ignored by default: the files are
//! large and not part of the repository.
//!
//! ```text
//! MNEMON_EVAL_DATA=/path/to/shared/data \
//!   cargo test --no-default-features --test eval_real_data -- --ignored --nocapture
//! ```
//!
//! `MNEMON_EVAL_OUT=<dir>` also writes each report (with per-query rankings)
//! as `<dataset>.json` there.

use std::collections::HashSet;
use std::path::PathBuf;

use mnemon_eval::{load_locomo, load_longmemeval, load_madial, run, Dataset, Report, RunOptions, Split};

mod common;
use common::overlap::WordOverlap;

fn data_dir() -> Option<PathBuf> {
    let dir = std::env::var_os("MNEMON_EVAL_DATA")
        .map(PathBuf::from)
        .unwrap_or_else(|| PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("../../shared/data"));
    if dir.join("locomo10.json").is_file() {
        Some(dir)
    } else {
        eprintln!("skipped: no benchmark data in {} (set MNEMON_EVAL_DATA)", dir.display());
        None
    }
}

fn baseline(dataset: Dataset, units: &[mnemon_eval::Unit]) -> Report {
    let opts = RunOptions { record_queries: true, ..RunOptions::for_dataset(dataset) };
    let rep = run(dataset, units, &mut WordOverlap::default(), &opts).unwrap();
    println!("{}", rep.render_table());
    if let Some(out) = std::env::var_os("MNEMON_EVAL_OUT") {
        let path = PathBuf::from(out).join(format!("{dataset}.json"));
        std::fs::write(&path, serde_json::to_string(&rep).unwrap()).unwrap();
    }
    rep
}

#[test]
#[ignore = "reads the real benchmark files"]
fn real_locomo() {
    let Some(dir) = data_dir() else { return };
    let units = load_locomo(&dir.join("locomo10.json")).unwrap();
    let queries: Vec<_> = units.iter().flat_map(|u| &u.queries).collect();
    let docs: usize = units.iter().map(|u| u.docs.len()).sum();
    let sessions: usize =
        units.iter().map(|u| u.docs.iter().map(|d| d.session.as_str()).collect::<HashSet<_>>().len()).sum();
    let count = |c: &str| queries.iter().filter(|q| q.category.as_deref() == Some(c)).count();
    let cats: Vec<usize> =
        ["multi-hop", "temporal", "open-domain", "single-hop", "adversarial"].iter().map(|c| count(c)).collect();
    let empty = queries.iter().filter(|q| q.gold.is_empty()).count();
    let dropped: Vec<&String> = queries.iter().flat_map(|q| &q.gold_dropped).collect();
    let repaired = queries.iter().filter(|q| q.gold_repaired).count();
    let shares = units.iter().flat_map(|u| &u.docs).filter(|d| d.text.contains(" [shares ")).count();
    let dev = units.iter().filter(|u| u.split == Split::Dev).count();
    println!(
        "locomo: {} samples ({dev} dev), {sessions} sessions, {docs} turns ({shares} with a caption), {} QA, \
         categories 1..5 {cats:?}, empty evidence {empty}, dropped {dropped:?}, repaired {repaired}",
        units.len(),
        queries.len()
    );
    assert_eq!((units.len(), dev, sessions, docs, queries.len()), (10, 5, 272, 5882, 1986));
    assert_eq!(cats, [282, 321, 96, 841, 446]);
    assert_eq!((empty, dropped.len(), repaired), (4, 3, 7));
    baseline(Dataset::Locomo, &units);
}

#[test]
#[ignore = "reads the real benchmark files"]
fn real_longmemeval() {
    let Some(dir) = data_dir() else { return };
    let t = std::time::Instant::now();
    let units =
        load_longmemeval(&dir.join("longmemeval_s_498.jsonl.gz"), Some(&dir.join("longmemeval_s_dev100_ids.txt")))
            .unwrap();
    let secs = t.elapsed().as_secs_f64();
    let queries: Vec<_> = units.iter().flat_map(|u| &u.queries).collect();
    let docs: usize = units.iter().map(|u| u.docs.len()).sum();
    let max_docs = units.iter().map(|u| u.docs.len()).max().unwrap_or(0);
    let dev = units.iter().filter(|u| u.split == Split::Dev).count();
    let abs = queries.iter().filter(|q| q.abstention).count();
    let scorable = queries.iter().filter(|q| !q.abstention && !q.gold.is_empty()).count();
    let gold: usize = queries.iter().map(|q| q.gold.len()).sum();
    println!(
        "longmemeval: {} questions ({dev} dev), {abs} abstention, {scorable} scorable, {docs} user turns \
         (max {max_docs} per question), {gold} gold turns; loaded in {secs:.1} s",
        units.len()
    );
    assert_eq!((units.len(), dev, abs, scorable, docs, gold), (498, 100, 30, 418, 121_855, 840));
    assert!(max_docs <= Dataset::LongMemEval.default_retrieve_depth());
    baseline(Dataset::LongMemEval, &units);
}

#[test]
#[ignore = "reads the real benchmark files"]
fn real_madial() {
    let Some(dir) = data_dir() else { return };
    let units = load_madial(&dir.join("madial-bench-zh")).unwrap();
    let names: Vec<&str> = units.iter().map(|u| u.name.as_str()).collect();
    let queries: Vec<_> = units.iter().flat_map(|u| &u.queries).collect();
    let dev = queries.iter().filter(|q| q.split == Split::Dev).count();
    let memories: HashSet<&str> = units.iter().flat_map(|u| &u.docs).map(|d| d.id.as_str()).collect();
    let dropped: usize = queries.iter().map(|q| q.gold_dropped.len()).sum();
    println!(
        "madial: units {names:?}, {} dialogues ({dev} dev), {} memories, dropped gold {dropped}",
        queries.len(),
        memories.len()
    );
    assert_eq!((queries.len(), dev, memories.len(), dropped), (160, 80, 171, 0));
    assert_eq!(names, ["madial:user-1:dev", "madial:user-1:test", "madial:user-2:dev", "madial:user-2:test"]);
    baseline(Dataset::MADial, &units);
}

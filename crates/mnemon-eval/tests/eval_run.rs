//! Runner tests: a word-overlap backend on the fixtures, whole reports checked
//! against hand-computed values.

use std::path::{Path, PathBuf};

use mnemon::Error;
use mnemon_eval::{
    load_locomo, load_longmemeval, load_madial, run, Backend, Dataset, Doc, Report, RunOptions, SplitFilter,
};

mod common;
use common::overlap::WordOverlap;

fn fixture(name: &str) -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/fixtures/eval").join(name)
}

fn opts(dataset: Dataset) -> RunOptions {
    RunOptions { record_queries: true, ..RunOptions::for_dataset(dataset) }
}

fn close(a: Option<f64>, b: f64) -> bool {
    a.is_some_and(|a| (a - b).abs() < 1e-9)
}

/// Asserts a whole row of a table.
#[track_caller]
fn row(report: &Report, split: &str, table: &str, group: &str, n: usize, values: &[f64]) {
    let t = report.split(split).and_then(|s| s.table(table)).unwrap_or_else(|| panic!("{split}/{table}"));
    let r = t.row(group).unwrap_or_else(|| panic!("{split}/{table}: no row {group}"));
    assert_eq!(r.n, n, "{split}/{table}/{group}: n");
    assert_eq!(r.values.len(), values.len());
    for (got, want) in r.values.iter().zip(values) {
        assert!((got - want).abs() < 1e-9, "{split}/{table}/{group}: got {:?}, want {values:?}", r.values);
    }
}

fn retrieved<'a>(report: &'a Report, query: &str) -> Vec<&'a str> {
    let recs = report.queries.as_ref().unwrap();
    let r = recs.iter().find(|r| r.query == query).unwrap();
    r.retrieved.iter().map(String::as_str).collect()
}

#[test]
fn locomo_report() {
    let units = load_locomo(&fixture("locomo_mini.json")).unwrap();
    let mut b = WordOverlap::default();
    let rep = run(Dataset::Locomo, &units, &mut b, &opts(Dataset::Locomo)).unwrap();
    assert_eq!(b.ingested, ["locomo:conv-26", "locomo:conv-44"]);
    assert_eq!(b.finished, b.ingested);
    assert_eq!(rep.k_values, [1, 5, 10, 25, 50]);
    let splits: Vec<&str> = rep.splits.iter().map(|s| s.split.as_str()).collect();
    assert_eq!(splits, ["dev", "test", "all"]);

    // Rankings (shared distinct words with "<speaker>: <text>").
    assert_eq!(retrieved(&rep, "conv-26/q2"), ["D2:1", "D1:2"]);
    assert_eq!(retrieved(&rep, "conv-26/q5"), ["D1:1", "D1:3", "D1:2"]);
    assert_eq!(retrieved(&rep, "conv-26/q6"), ["D1:1", "D1:3", "D2:2"]);

    let c = &rep.split("dev").unwrap().counts;
    assert_eq!((c.units, c.docs, c.queries, c.scored), (1, 5, 7, 7));
    assert_eq!((c.empty_gold_scored_as_hit, c.gold_ids_dropped, c.queries_gold_repaired), (1, 2, 2));
    assert_eq!((c.excluded_abstention, c.excluded_no_gold, c.unknown_ids_returned), (0, 0, 0));
    let c = &rep.split("all").unwrap().counts;
    assert_eq!((c.units, c.docs, c.queries, c.scored), (2, 7, 9, 9));

    // dev: q2 (multi-hop) finds 1 of 2 at @1, q5 (multi-hop) 0 of 1 at @1.
    row(&rep, "dev", "recall", "single-hop", 2, &[1.0; 5]);
    row(&rep, "dev", "recall", "multi-hop", 2, &[0.25, 1.0, 1.0, 1.0, 1.0]);
    row(&rep, "dev", "recall", "temporal", 1, &[1.0; 5]);
    row(&rep, "dev", "recall", "open-domain", 1, &[1.0; 5]); // empty evidence scores 1
    row(&rep, "dev", "recall", "overall", 6, &[0.75, 1.0, 1.0, 1.0, 1.0]);
    row(&rep, "dev", "recall", "adversarial", 1, &[0.0; 5]);
    row(&rep, "dev", "any", "overall", 6, &[5.0 / 6.0, 1.0, 1.0, 1.0, 1.0]);
    row(&rep, "dev", "all", "overall", 6, &[4.0 / 6.0, 1.0, 1.0, 1.0, 1.0]);
    row(&rep, "test", "recall", "overall", 2, &[1.0; 5]);
    row(&rep, "all", "recall", "overall", 8, &[0.8125, 1.0, 1.0, 1.0, 1.0]);
    row(&rep, "all", "any", "overall", 8, &[0.875, 1.0, 1.0, 1.0, 1.0]);
    row(&rep, "all", "all", "overall", 8, &[0.75, 1.0, 1.0, 1.0, 1.0]);
    row(&rep, "all", "recall", "adversarial", 1, &[0.0; 5]);
    // Row order: paper order of categories, overall, then adversarial.
    let groups: Vec<&str> =
        rep.split("all").unwrap().table("recall").unwrap().rows.iter().map(|r| r.group.as_str()).collect();
    assert_eq!(groups, ["single-hop", "multi-hop", "temporal", "open-domain", "overall", "adversarial"]);

    let text = rep.render_table();
    assert!(text.contains("evidence recall@k"), "{text}");
    assert!(text.contains("== dev: 1 units, 5 docs, 7 queries, 7 scored"), "{text}");
    assert!(text.contains("  overall          8  0.8125  1.0000"), "{text}");
    assert_eq!(rep.latency.searches, 9);
    assert_eq!((rep.ingest.units, rep.ingest.docs), (2, 7));

    let json = serde_json::to_value(&rep).unwrap();
    assert_eq!(json["dataset"], "locomo");
    assert_eq!(json["splits"][0]["split"], "dev");
    assert_eq!(json["splits"][0]["tables"][0]["name"], "recall");
    assert!(json["latency"]["p95_ms"].is_number());
    let back: Report = serde_json::from_value(json).unwrap();
    assert_eq!(back, rep);
}

#[test]
fn longmemeval_report() {
    let units = load_longmemeval(&fixture("longmemeval_mini.jsonl.gz"), Some(&fixture("longmemeval_mini_dev_ids.txt")))
        .unwrap();
    let mut b = WordOverlap::default();
    let rep = run(Dataset::LongMemEval, &units, &mut b, &opts(Dataset::LongMemEval)).unwrap();
    assert_eq!(rep.k_values, [1, 3, 5, 10, 30, 50]);

    // q1: gold turns answer_x1#1 (rank 3) and answer_x3#2 (rank 7); the
    // non-gold turn answer_x1#3 of a gold session ranks 2.
    assert_eq!(
        retrieved(&rep, "q1"),
        ["s_b#3", "answer_x1#3", "answer_x1#1", "s_a#1", "answer_x2#1", "s_a~2#1", "answer_x3#2"]
    );
    // q2: gold at rank 2.
    assert_eq!(retrieved(&rep, "q2"), ["s_c#1", "answer_y1#2"]);

    let l3 = 1.0 / 3f64.log2(); // rank 3 weight
    let t_ndcg3 = l3 / 2.0; // one of two gold turns at rank 3
    let t_ndcg_all = (l3 + 1.0 / 7f64.log2()) / 2.0; // ranks 3 and 7
    let s_ndcg5 = (1.0 + 1.0 / 5f64.log2()) / 2.0; // sessions at ranks 2 and 5

    // dev = q1 alone.
    // Session ranking: s_b, answer_x1, s_a, answer_x2, answer_x3.
    row(&rep, "dev", "session/recall_any", "overall", 1, &[0.0, 1.0, 1.0, 1.0, 1.0, 1.0]);
    row(&rep, "dev", "session/recall_all", "overall", 1, &[0.0, 0.0, 1.0, 1.0, 1.0, 1.0]);
    row(&rep, "dev", "session/ndcg_any", "overall", 1, &[0.0, 0.5, s_ndcg5, s_ndcg5, s_ndcg5, s_ndcg5]);
    row(&rep, "dev", "turn/recall_any", "overall", 1, &[0.0, 1.0, 1.0, 1.0, 1.0, 1.0]);
    row(&rep, "dev", "turn/recall_all", "overall", 1, &[0.0, 0.0, 0.0, 1.0, 1.0, 1.0]);
    row(&rep, "dev", "turn/ndcg_any", "overall", 1, &[0.0, t_ndcg3, t_ndcg3, t_ndcg_all, t_ndcg_all, t_ndcg_all]);
    // Official turn→session: answer_x1#3 counts as a separate "noans" session.
    row(&rep, "dev", "session_official/recall_all", "overall", 1, &[0.0, 0.0, 0.0, 1.0, 1.0, 1.0]);
    row(
        &rep,
        "dev",
        "session_official/ndcg_any",
        "overall",
        1,
        &[0.0, t_ndcg3, t_ndcg3, t_ndcg_all, t_ndcg_all, t_ndcg_all],
    );
    row(&rep, "dev", "session/recall_any", "multi-session", 1, &[0.0, 1.0, 1.0, 1.0, 1.0, 1.0]);

    // test = q2 scored (gold at rank 2: nDCG 1 from @3 since ranks 1 and 2
    // weigh the same), q3_abs and q4 (no user gold) left out.
    let c = &rep.split("test").unwrap().counts;
    assert_eq!((c.units, c.queries, c.scored, c.excluded_abstention, c.excluded_no_gold), (3, 3, 1, 1, 1));
    row(&rep, "test", "turn/ndcg_any", "overall", 1, &[0.0, 1.0, 1.0, 1.0, 1.0, 1.0]);
    row(&rep, "test", "session_official/ndcg_any", "single-session-user", 1, &[0.0, 1.0, 1.0, 1.0, 1.0, 1.0]);
    assert!(rep.split("test").unwrap().table("turn/ndcg_any").unwrap().row("single-session-assistant").is_none());

    // all = mean of q1 and q2.
    row(&rep, "all", "session/recall_all", "overall", 2, &[0.0, 0.5, 1.0, 1.0, 1.0, 1.0]);
    row(
        &rep,
        "all",
        "turn/ndcg_any",
        "overall",
        2,
        &[
            0.0,
            (t_ndcg3 + 1.0) / 2.0,
            (t_ndcg3 + 1.0) / 2.0,
            (t_ndcg_all + 1.0) / 2.0,
            (t_ndcg_all + 1.0) / 2.0,
            (t_ndcg_all + 1.0) / 2.0,
        ],
    );
    let groups: Vec<&str> =
        rep.split("all").unwrap().table("turn/ndcg_any").unwrap().rows.iter().map(|r| r.group.as_str()).collect();
    assert_eq!(groups, ["single-session-user", "multi-session", "overall"]);

    let recs = rep.queries.as_ref().unwrap();
    let abs = recs.iter().find(|r| r.query == "q3_abs").unwrap();
    assert_eq!(abs.excluded.as_deref(), Some("abstention"));
    let q4 = recs.iter().find(|r| r.query == "q4").unwrap();
    assert_eq!(q4.excluded.as_deref(), Some("no gold"));
    assert!(rep.render_table().contains("session ndcg_any@k, official turn→session"));
}

#[test]
fn madial_report() {
    let units = load_madial(&fixture("madial")).unwrap();
    let mut b = WordOverlap::default();
    let rep = run(Dataset::MADial, &units, &mut b, &opts(Dataset::MADial)).unwrap();
    assert_eq!(rep.k_values, [1, 3, 5, 10]);
    // Dialogue 0: gold {1, 3}, ranking 3, 1, 2 → recall@1 = 0.5, RR 1.
    assert_eq!(retrieved(&rep, "0"), ["3", "1", "2"]);
    // Dialogue 2: gold {2}, ranking 1, 2, 3 (tie broken by order) → RR 0.5.
    assert_eq!(retrieved(&rep, "2"), ["1", "2", "3"]);
    row(&rep, "dev", "recall", "overall", 2, &[0.25, 1.0, 1.0, 1.0]);
    row(&rep, "dev", "mrr", "overall", 2, &[0.5, 0.75, 0.75, 0.75]);
    row(&rep, "test", "recall", "overall", 2, &[1.0; 4]);
    row(&rep, "test", "mrr", "overall", 2, &[1.0; 4]);
    row(&rep, "all", "recall", "overall", 4, &[0.625, 1.0, 1.0, 1.0]);
    row(&rep, "all", "mrr", "overall", 4, &[0.75, 0.875, 0.875, 0.875]);
    assert_eq!(rep.split("dev").unwrap().counts.gold_ids_dropped, 1);
    assert_eq!(rep.split("all").unwrap().tables[0].rows.len(), 1);
}

#[test]
fn split_filter_limit_and_k_values() {
    let units = load_locomo(&fixture("locomo_mini.json")).unwrap();
    let mut b = WordOverlap::default();
    let o = RunOptions { split: SplitFilter::Test, k_values: Some(vec![5, 1, 5]), ..opts(Dataset::Locomo) };
    let rep = run(Dataset::Locomo, &units, &mut b, &o).unwrap();
    assert_eq!(b.ingested, ["locomo:conv-44"]);
    assert_eq!(rep.k_values, [1, 5]);
    let splits: Vec<&str> = rep.splits.iter().map(|s| s.split.as_str()).collect();
    assert_eq!(splits, ["test"]);
    assert!(close(rep.split("test").unwrap().table("recall").unwrap().value("overall", 5), 1.0));

    let mut b = WordOverlap::default();
    let o = RunOptions { limit: Some(1), ..opts(Dataset::Locomo) };
    let rep = run(Dataset::Locomo, &units, &mut b, &o).unwrap();
    assert_eq!(b.ingested, ["locomo:conv-26"]);
    assert_eq!(rep.splits.len(), 1);

    let mut b = WordOverlap::default();
    for bad in [
        RunOptions { k_values: Some(vec![]), ..opts(Dataset::Locomo) },
        RunOptions { k_values: Some(vec![0, 5]), ..opts(Dataset::Locomo) },
        RunOptions { retrieve_depth: 10, ..opts(Dataset::Locomo) },
    ] {
        assert!(matches!(run(Dataset::Locomo, &units, &mut b, &bad), Err(Error::InvalidInput { .. })));
    }
    let twice = [units[0].clone(), units[0].clone()];
    assert!(matches!(
        run(Dataset::Locomo, &twice, &mut b, &opts(Dataset::Locomo)),
        Err(Error::InvalidInput { field: "units", .. })
    ));
}

#[test]
fn unknown_and_repeated_ids_are_ignored_and_counted() {
    let units = load_locomo(&fixture("locomo_mini.json")).unwrap();
    let mut plain = WordOverlap::default();
    let a = run(Dataset::Locomo, &units, &mut plain, &opts(Dataset::Locomo)).unwrap();
    let mut junk = WordOverlap::default();
    junk.junk = true;
    let b = run(Dataset::Locomo, &units, &mut junk, &opts(Dataset::Locomo)).unwrap();
    assert_eq!(
        a.splits.iter().map(|s| &s.tables).collect::<Vec<_>>(),
        b.splits.iter().map(|s| &s.tables).collect::<Vec<_>>()
    );
    assert_eq!(b.split("all").unwrap().counts.unknown_ids_returned, 9);
    assert_eq!(retrieved(&a, "conv-26/q2"), retrieved(&b, "conv-26/q2"));
}

#[test]
fn backend_errors_propagate() {
    struct Failing;
    impl Backend for Failing {
        fn ingest(&mut self, _: &str, _: &[Doc]) -> mnemon::Result<()> {
            Err(Error::Closed)
        }
        fn search(&mut self, _: &str, _: &str, _: usize) -> mnemon::Result<Vec<String>> {
            Ok(vec![])
        }
    }
    let units = load_madial(&fixture("madial")).unwrap();
    assert!(matches!(run(Dataset::MADial, &units, &mut Failing, &opts(Dataset::MADial)), Err(Error::Closed)));
}

/// A LoCoMo-like unit of three sessions and a backend that answers every
/// query with a fixed ranking: session recall ranks a session at its best
/// turn and counts the share of the evidence's sessions found.
#[test]
fn locomo_session_recall() {
    use mnemon_eval::{Query, Split, Unit, LOCOMO_SESSION_K};
    struct Fixed(Vec<&'static str>);
    impl Backend for Fixed {
        fn ingest(&mut self, _: &str, _: &[Doc]) -> mnemon::Result<()> {
            Ok(())
        }
        fn search(&mut self, _: &str, _: &str, _: usize) -> mnemon::Result<Vec<String>> {
            Ok(self.0.iter().map(|s| s.to_string()).collect())
        }
    }
    let doc = |id: &str, session: &str| Doc {
        id: id.into(),
        text: id.into(),
        session: session.into(),
        time: None,
        speaker: None,
    };
    let query = |n: usize, gold: &[&str], category: &str| Query {
        id: format!("conv-1/q{n}"),
        text: "q".into(),
        gold: gold.iter().map(|g| g.to_string()).collect(),
        gold_sessions: Vec::new(),
        category: Some(category.into()),
        split: Split::Dev,
        time: None,
        abstention: false,
        gold_dropped: Vec::new(),
        gold_repaired: false,
    };
    let unit = Unit {
        name: "locomo:conv-1".into(),
        split: Split::Dev,
        docs: vec![
            doc("D1:1", "session_1"),
            doc("D1:2", "session_1"),
            doc("D2:1", "session_2"),
            doc("D2:2", "session_2"),
            doc("D3:1", "session_3"),
        ],
        queries: vec![
            // Evidence in sessions 2 and 3: session 1 first, 2 second, 3 third.
            query(0, &["D2:2", "D3:1"], "multi-hop"),
            // Evidence in session 1 only (two turns): found at rank 1.
            query(1, &["D1:1", "D1:2"], "single-hop"),
            // No evidence: scored 1, as the turn-level table does.
            query(2, &[], "single-hop"),
            query(3, &["D3:1"], "adversarial"),
        ],
    };
    // Sessions by best turn: session_1 (D1:2), session_2 (D2:1), session_3.
    let mut b = Fixed(vec!["D1:2", "D2:1", "D1:1", "D2:2", "D3:1"]);
    let rep = run(Dataset::Locomo, &[unit], &mut b, &opts(Dataset::Locomo)).unwrap();
    let t = rep.split("dev").unwrap().table("session/recall").unwrap();
    assert_eq!(t.k_values, LOCOMO_SESSION_K);
    row(&rep, "dev", "session/recall", "multi-hop", 1, &[0.0, 1.0, 1.0, 1.0]);
    row(&rep, "dev", "session/recall", "single-hop", 2, &[1.0, 1.0, 1.0, 1.0]);
    row(&rep, "dev", "session/recall", "overall", 3, &[2.0 / 3.0, 1.0, 1.0, 1.0]);
    row(&rep, "dev", "session/recall", "adversarial", 1, &[0.0, 1.0, 1.0, 1.0]);
    // Turn level is unchanged: D2:2 at rank 4 and D3:1 at rank 5.
    row(&rep, "dev", "recall", "multi-hop", 1, &[0.0, 1.0, 1.0, 1.0, 1.0]);
    let text = rep.render_table();
    assert!(text.contains("session recall@k"), "{text}");
}

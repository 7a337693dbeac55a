//! Retrieval metrics as the benchmarks' own evaluation code defines them.
//!
//! All functions are pure. `ranked` is a list of ids, best first, without
//! repeats; `gold` a list of relevant ids (repeats count once); `k` a cut-off
//! (a list shorter than `k` is scored as it is). Values are in `[0, 1]`.
//!
//! Sources:
//! - LoCoMo: `task_eval/evaluation.py::eval_question_answering`
//!   (snap-research/LoCoMo): recall = |evidence ∩ top-k| / |evidence|.
//! - LongMemEval: `src/retrieval/eval_utils.py` (xiaowu0162/LongMemEval):
//!   `evaluate_retrieval` (recall_any, recall_all, ndcg_any) and
//!   `evaluate_retrieval_turn2session`.
//! - MADial-Bench: `embedding_score_new.py` (hejunqing/MADial-Bench):
//!   `recall_at_k`, `reciprocal_rank_at_k`.

use std::collections::HashSet;

fn top_k<R>(ranked: &[R], k: usize) -> &[R] {
    &ranked[..k.min(ranked.len())]
}

fn id_set<G: AsRef<str>>(gold: &[G]) -> HashSet<&str> {
    gold.iter().map(AsRef::as_ref).collect()
}

/// Fraction of the distinct gold ids found in the top `k`:
/// |gold ∩ top-k| / |gold| (LoCoMo evidence recall, MADial `recall_at_k`).
/// `None` when `gold` is empty (LoCoMo then counts 1, MADial never has it).
pub fn recall_fraction<R: AsRef<str>, G: AsRef<str>>(ranked: &[R], gold: &[G], k: usize) -> Option<f64> {
    let gold = id_set(gold);
    if gold.is_empty() {
        return None;
    }
    let found: HashSet<&str> = top_k(ranked, k).iter().map(AsRef::as_ref).filter(|id| gold.contains(id)).collect();
    Some(found.len() as f64 / gold.len() as f64)
}

/// 1 if any gold id is in the top `k`, else 0 (LongMemEval `recall_any`;
/// 0 for empty `gold`, as Python's `any([])`).
pub fn recall_any<R: AsRef<str>, G: AsRef<str>>(ranked: &[R], gold: &[G], k: usize) -> f64 {
    let gold = id_set(gold);
    f64::from(u8::from(top_k(ranked, k).iter().any(|r| gold.contains(r.as_ref()))))
}

/// 1 if every gold id is in the top `k`, else 0 (LongMemEval `recall_all`;
/// 1 for empty `gold`, as Python's `all([])`).
pub fn recall_all<R: AsRef<str>, G: AsRef<str>>(ranked: &[R], gold: &[G], k: usize) -> f64 {
    let top: HashSet<&str> = top_k(ranked, k).iter().map(AsRef::as_ref).collect();
    f64::from(u8::from(gold.iter().all(|g| top.contains(g.as_ref()))))
}

/// Discounted cumulative gain in the LongMemEval form:
/// DCG = rel₁ + Σ_{i≥2} relᵢ / log₂(i), positions 1-based (`eval_utils.dcg`;
/// unlike the common rel/log₂(i+1), ranks 1 and 2 weigh the same).
pub fn dcg(relevances: &[f64]) -> f64 {
    relevances.iter().enumerate().map(|(i, r)| if i == 0 { *r } else { r / ((i + 1) as f64).log2() }).sum()
}

fn ndcg_of(rels: &[f64], n_relevant: usize, k: usize) -> f64 {
    let ideal = dcg(&vec![1.0; n_relevant.min(k)]);
    if ideal == 0.0 {
        return 0.0;
    }
    dcg(rels) / ideal
}

/// Binary-relevance nDCG@k as LongMemEval's `eval_utils.ndcg`: DCG of the
/// top-k relevances over the DCG of the ideal ranking, which puts all
/// relevant corpus items first, i.e. min(k, |gold|) ones (every gold id is
/// in the corpus). 0 when `gold` is empty. DCG as [`dcg`].
pub fn ndcg_any<R: AsRef<str>, G: AsRef<str>>(ranked: &[R], gold: &[G], k: usize) -> f64 {
    let gold = id_set(gold);
    let rels: Vec<f64> = top_k(ranked, k).iter().map(|r| f64::from(u8::from(gold.contains(r.as_ref())))).collect();
    ndcg_of(&rels, gold.len(), k)
}

/// Reciprocal rank of the first gold id within the top `k`, 0 if none
/// (MADial `reciprocal_rank_at_k`; the mean over queries is MRR@k).
pub fn reciprocal_rank<R: AsRef<str>, G: AsRef<str>>(ranked: &[R], gold: &[G], k: usize) -> f64 {
    let gold = id_set(gold);
    top_k(ranked, k).iter().position(|r| gold.contains(r.as_ref())).map_or(0.0, |p| 1.0 / (p + 1) as f64)
}

/// Session ranking from a doc ranking: each session ranks where its
/// best-ranked doc does; repeats are dropped in order. Docs for which
/// `session_of` returns `None` are skipped.
pub fn rank_sessions<'a, R: AsRef<str>>(ranked: &[R], session_of: impl Fn(&str) -> Option<&'a str>) -> Vec<&'a str> {
    let mut seen = HashSet::new();
    ranked.iter().filter_map(|r| session_of(r.as_ref())).filter(|s| seen.insert(*s)).collect()
}

/// The three LongMemEval scores of one question at one cut-off.
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct LmeScores {
    /// [`recall_any`].
    pub recall_any: f64,
    /// [`recall_all`].
    pub recall_all: f64,
    /// [`ndcg_any`].
    pub ndcg_any: f64,
}

/// LongMemEval's own turn→session scoring (`evaluate_retrieval_turn2session`),
/// reproduced including its quirks.
///
/// `keys` are the session keys of the retrieved turns, in rank order, as the
/// official code derives them by stripping the turn suffix: a turn of a gold
/// session that is not itself gold carries the key of a *different*
/// ("noans") session there. `gold` are the gold session keys, `n_gold_docs`
/// the number of corpus turns whose key is gold (the gold turns), and
/// `corpus_len` the number of turns in the corpus.
///
/// The cut-off grows from `k` until the top holds `k` distinct keys (or runs
/// past the corpus); recall_any / recall_all are then taken over the distinct
/// keys in that top, and nDCG over its *turns* (repeats of a gold session
/// each count) against min(cut-off, `n_gold_docs`) ideal ones.
pub fn turn2session_official<R: AsRef<str>, G: AsRef<str>>(
    keys: &[R],
    gold: &[G],
    n_gold_docs: usize,
    corpus_len: usize,
    k: usize,
) -> LmeScores {
    let mut eff = k;
    let mut seen: HashSet<&str> = top_k(keys, k).iter().map(AsRef::as_ref).collect();
    while eff <= corpus_len && seen.len() < k {
        eff += 1;
        if let Some(key) = keys.get(eff - 1) {
            seen.insert(key.as_ref());
        }
    }
    let gold_set = id_set(gold);
    let rels: Vec<f64> = top_k(keys, eff).iter().map(|r| f64::from(u8::from(gold_set.contains(r.as_ref())))).collect();
    LmeScores {
        recall_any: recall_any(keys, gold, eff),
        recall_all: recall_all(keys, gold, eff),
        ndcg_any: ndcg_of(&rels, n_gold_docs, eff),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn close(a: f64, b: f64) -> bool {
        (a - b).abs() < 1e-12
    }

    #[test]
    fn eval_metrics_recall_fraction() {
        let ranked = ["a", "x", "b", "y", "c"];
        assert_eq!(recall_fraction(&ranked, &["a", "b", "c", "z"], 1), Some(0.25));
        assert_eq!(recall_fraction(&ranked, &["a", "b", "c", "z"], 3), Some(0.5));
        assert_eq!(recall_fraction(&ranked, &["a", "b", "c", "z"], 50), Some(0.75));
        assert_eq!(recall_fraction(&ranked, &["a", "a"], 1), Some(1.0));
        assert_eq!(recall_fraction::<&str, &str>(&ranked, &[], 5), None);
        assert_eq!(recall_fraction::<&str, &str>(&[], &["a"], 5), Some(0.0));
    }

    #[test]
    fn eval_metrics_any_all() {
        let ranked = ["x", "a", "y", "b"];
        assert_eq!(recall_any(&ranked, &["a", "b"], 1), 0.0);
        assert_eq!(recall_any(&ranked, &["a", "b"], 2), 1.0);
        assert_eq!(recall_all(&ranked, &["a", "b"], 3), 0.0);
        assert_eq!(recall_all(&ranked, &["a", "b"], 4), 1.0);
        assert_eq!(recall_any::<&str, &str>(&ranked, &[], 4), 0.0);
        assert_eq!(recall_all::<&str, &str>(&ranked, &[], 4), 1.0);
    }

    #[test]
    fn eval_metrics_dcg_and_ndcg() {
        // rel = [0,1,0,1]: 0 + 1/log2(2) + 0 + 1/log2(4) = 1.5
        assert!(close(dcg(&[0.0, 1.0, 0.0, 1.0]), 1.5));
        // rel = [1,1,1]: 1 + 1 + 1/log2(3)
        assert!(close(dcg(&[1.0, 1.0, 1.0]), 2.0 + 1.0 / 3f64.log2()));
        let ranked = ["x", "a", "y", "b"];
        let gold = ["a", "b"];
        assert_eq!(ndcg_any(&ranked, &gold, 1), 0.0);
        // k=2: dcg = 1/log2(2) = 1; ideal = 1 + 1 = 2.
        assert!(close(ndcg_any(&ranked, &gold, 2), 0.5));
        // k=4: dcg = 1.5; ideal = 2.
        assert!(close(ndcg_any(&ranked, &gold, 4), 0.75));
        // One gold at rank 2 scores 1: ranks 1 and 2 share the weight 1.
        assert!(close(ndcg_any(&ranked, &["a"], 5), 1.0));
        // One gold at rank 3: 1/log2(3) over 1.
        assert!(close(ndcg_any(&["x", "y", "a"], &["a"], 3), 1.0 / 3f64.log2()));
        // Three gold, k=2, found at rank 1 only: 1 / (1 + 1).
        assert!(close(ndcg_any(&["a", "x"], &["a", "b", "c"], 2), 0.5));
        assert_eq!(ndcg_any::<&str, &str>(&ranked, &[], 4), 0.0);
    }

    #[test]
    fn eval_metrics_reciprocal_rank() {
        let ranked = ["x", "y", "a", "b"];
        assert_eq!(reciprocal_rank(&ranked, &["a", "b"], 2), 0.0);
        assert!(close(reciprocal_rank(&ranked, &["a", "b"], 3), 1.0 / 3.0));
        assert_eq!(reciprocal_rank(&ranked, &["x"], 1), 1.0);
    }

    #[test]
    fn eval_metrics_rank_sessions() {
        let ranked = ["s2#1", "s1#3", "s2#5", "zz", "s3#1", "s1#1"];
        let docs = ["s2#1", "s1#3", "s2#5", "s3#1", "s1#1"];
        let sessions = ["s2", "s1", "s2", "s3", "s1"];
        let map: std::collections::HashMap<&str, &str> = docs.into_iter().zip(sessions).collect();
        let got = rank_sessions(&ranked, |d| map.get(d).copied());
        assert_eq!(got, vec!["s2", "s1", "s3"]);
    }

    #[test]
    fn eval_metrics_turn2session_official() {
        // Corpus of 6 turns; ranking of keys (gold session "A" has two gold
        // turns; its non-gold turn maps to "noans:A").
        let keys = ["B", "A", "B", "noans:A", "C", "A"];
        // k=1: top-1 = {B}: distinct 1 = k. any 0, all 0, ndcg 0.
        let s = turn2session_official(&keys, &["A"], 2, 6, 1);
        assert_eq!((s.recall_any, s.recall_all, s.ndcg_any), (0.0, 0.0, 0.0));
        // k=2: top-2 = {B, A}: any 1, all 1; rels [0,1] dcg 1, ideal min(2,2)=2 ones → 2.
        let s = turn2session_official(&keys, &["A"], 2, 6, 2);
        assert_eq!((s.recall_any, s.recall_all), (1.0, 1.0));
        assert!(close(s.ndcg_any, 0.5));
        // k=3: top-3 = {B, A} (2 distinct) → grow to 4: {B, A, noans:A}.
        // rels [0,1,0,0] dcg 1; ideal min(4,2)=2 ones → 2.
        let s = turn2session_official(&keys, &["A"], 2, 6, 3);
        assert!(close(s.ndcg_any, 0.5));
        // k=5: grows to 7 (> corpus_len 6) since only 4 distinct keys exist:
        // rels [0,1,0,0,0,1] dcg 1 + 1/log2(6); ideal 2.
        let s = turn2session_official(&keys, &["A"], 2, 6, 5);
        assert!(close(s.ndcg_any, (1.0 + 1.0 / 6f64.log2()) / 2.0));
        assert_eq!(s.recall_all, 1.0);
    }
}

//! The backend-agnostic runner: ingest, search, score, aggregate.

use std::collections::{HashMap, HashSet};
use std::time::Instant;

use serde::{Deserialize, Serialize};

use super::metrics::{
    ndcg_any, rank_sessions, recall_all, recall_any, recall_fraction, reciprocal_rank, turn2session_official,
};
use super::progress::Progress;
use super::report::{Counts, IngestStats, LatencyStats, MetricTable, QueryRecord, Report, SplitReport, TableRow};
use super::sample::select_units;
use super::{Backend, Dataset, Query, Split, SplitFilter, Unit};
use mnemon::{Error, Result};

/// How [`run`] proceeds.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub struct RunOptions {
    /// Cut-offs; `None` = [`Dataset::default_k_values`]. Sorted and
    /// de-duplicated before use; each must be ≥ 1.
    pub k_values: Option<Vec<usize>>,
    /// Ids asked of the backend per query; must be ≥ the largest cut-off.
    /// LongMemEval session metrics need enough turns to see 50 sessions
    /// (the default, 1000, retrieves whole S haystacks).
    pub retrieve_depth: usize,
    /// Evaluate at most this many units of those the split filter admits,
    /// spread over them and covering every question category when the
    /// number allows ([`crate::select_units`] states the rule).
    pub limit: Option<usize>,
    /// Which units to evaluate.
    pub split: SplitFilter,
    /// Show progress on standard error: an indicatif bar when it is a
    /// terminal, otherwise a plain line every tenth of the units or every
    /// 30 s (label, units and queries done, elapsed seconds, ETA).
    pub progress: bool,
    /// What plain progress lines call the run (the mode, e.g. `hybrid`);
    /// empty = `eval`.
    #[serde(default)]
    pub label: String,
    /// Keep each query's retrieved ids in [`Report::queries`].
    pub record_queries: bool,
    /// Also ask each unit (after the first) up to [`UNRELATED_PER_UNIT`]
    /// queries of the unit before it, which nothing in it answers, and count
    /// those for which the backend returns nothing
    /// ([`Counts::unrelated_returned_nothing`]). They enter no mean.
    pub unrelated: bool,
}

/// Most queries of the previous unit asked of a unit with
/// [`RunOptions::unrelated`].
pub const UNRELATED_PER_UNIT: usize = 50;

impl RunOptions {
    /// Defaults for `dataset`: its k values and retrieve depth, all splits,
    /// no limit, no progress bar, no per-query records.
    pub fn for_dataset(dataset: Dataset) -> Self {
        RunOptions {
            k_values: None,
            retrieve_depth: dataset.default_retrieve_depth(),
            limit: None,
            split: SplitFilter::All,
            progress: false,
            label: String::new(),
            record_queries: false,
            unrelated: false,
        }
    }
}

/// A metric family: table name, title, and its own cut-offs when it does
/// not use the run's.
type Family = (&'static str, &'static str, Option<&'static [usize]>);

/// Cut-offs of LoCoMo's session-level table, as published figures give them.
pub const LOCOMO_SESSION_K: [usize; 4] = [1, 3, 5, 10];

const LOCOMO_FAMILIES: &[Family] = &[
    ("recall", "evidence recall@k (|evidence ∩ top-k| / |evidence|)", None),
    (
        "session/recall",
        "session recall@k (|evidence sessions ∩ top-k sessions| / |evidence sessions|; a session ranks at its best turn)",
        Some(&LOCOMO_SESSION_K),
    ),
    ("any", "evidence any-hit@k (some evidence turn in top-k)", None),
    ("all", "evidence all-hit@k (every evidence turn in top-k)", None),
];
const LME_FAMILIES: &[Family] = &[
    ("session/recall_any", "session recall_any@k", None),
    ("session/recall_all", "session recall_all@k", None),
    ("session/ndcg_any", "session ndcg_any@k", None),
    ("turn/recall_any", "turn recall_any@k", None),
    ("turn/recall_all", "turn recall_all@k", None),
    ("turn/ndcg_any", "turn ndcg_any@k", None),
    ("session_official/recall_any", "session recall_any@k, official turn→session", None),
    ("session_official/recall_all", "session recall_all@k, official turn→session", None),
    ("session_official/ndcg_any", "session ndcg_any@k, official turn→session", None),
];
const MADIAL_FAMILIES: &[Family] =
    &[("recall", "memory recall@k (|gold ∩ top-k| / |gold|)", None), ("mrr", "MRR@k", None)];

impl Dataset {
    fn families(self) -> &'static [Family] {
        match self {
            Dataset::Locomo => LOCOMO_FAMILIES,
            Dataset::LongMemEval => LME_FAMILIES,
            Dataset::MADial | Dataset::Crosslingual => MADIAL_FAMILIES,
        }
    }

    /// Category rows in the order the papers print them; others follow sorted.
    fn category_order(self) -> &'static [&'static str] {
        match self {
            Dataset::Locomo => &["single-hop", "multi-hop", "temporal", "open-domain"],
            Dataset::LongMemEval => &[
                "single-session-user",
                "single-session-assistant",
                "single-session-preference",
                "multi-session",
                "knowledge-update",
                "temporal-reasoning",
            ],
            Dataset::MADial => &[],
            Dataset::Crosslingual => &["zh→en", "en→zh"],
        }
    }

    /// Categories reported in their own row, outside the overall mean.
    fn apart(self) -> &'static [&'static str] {
        match self {
            Dataset::Locomo => &["adversarial"],
            _ => &[],
        }
    }
}

/// Scores of one query: `values[family][k index]`, or why it has none.
struct Scored {
    split: Split,
    category: Option<String>,
    values: std::result::Result<Vec<Vec<f64>>, &'static str>,
    /// What the query is: answerable, unanswerable (abstention or
    /// adversarial) or unrelated (from another unit).
    class: QueryClass,
    /// The backend returned nothing.
    nothing: bool,
    empty_gold: bool,
    gold_dropped: usize,
    repaired: bool,
    unknown: usize,
}

#[derive(Clone, Copy, PartialEq, Eq)]
enum QueryClass {
    Answerable,
    Unanswerable,
    Unrelated,
}

/// Doc id → session of one unit.
struct UnitIndex<'a> {
    session: HashMap<&'a str, &'a str>,
    len: usize,
}

impl<'a> UnitIndex<'a> {
    fn new(unit: &'a Unit) -> Result<Self> {
        let mut session = HashMap::with_capacity(unit.docs.len());
        for d in &unit.docs {
            if session.insert(d.id.as_str(), d.session.as_str()).is_some() {
                return Err(Error::invalid("units", format!("unit {}: duplicate doc id {:?}", unit.name, d.id)));
            }
        }
        Ok(UnitIndex { session, len: unit.docs.len() })
    }
}

/// Evaluates `backend` on `units` of `dataset`.
///
/// Units passing `opts.split` (at most `opts.limit` of them, chosen by
/// [`crate::select_units`], in data order) are
/// ingested one at a time; each of their queries is searched with
/// `k = opts.retrieve_depth`; the answer is cut to that depth, ids that are
/// not docs of the unit and repeats are dropped (counted), and the ranking is
/// scored with the dataset's official metrics ([`super::metrics`]):
///
/// - LoCoMo: evidence recall@k (empty evidence scores 1, as in
///   `evaluation.py`), plus any-/all-hit@k; per category, `overall` over
///   categories 1–4, `adversarial` (5) in its own row. Also session-level
///   recall@k for k in [`LOCOMO_SESSION_K`] (table `session/recall`): the
///   share of the evidence's sessions (of its `D<session>:<turn>` ids) among
///   the top-k sessions, a session ranking at the best rank of its turns.
/// - LongMemEval: recall_any / recall_all / ndcg_any @k on the turn ranking,
///   on the session ranking derived from it (a session ranks at its best
///   turn; gold = [`Query::gold_sessions`]), and with the official
///   `evaluate_retrieval_turn2session` reproduced
///   ([`super::metrics::turn2session_official`]); abstention questions and
///   questions without gold turns are left out of the means (counted).
/// - MADial and the cross-lingual set: recall@k and MRR@k (the latter per
///   direction, `zh→en` and `en→zh`).
///
/// Means are plain averages over queries, per split (dev, test, and all
/// when both ran). Then `finish_unit` is called. Timings cover only the
/// backend calls.
///
/// # Errors
/// [`Error::InvalidInput`] when `k_values` is empty or holds 0, when
/// `retrieve_depth` is below the largest k, when unit names repeat or a unit
/// repeats a doc id; any error of the backend, as it is.
pub fn run(dataset: Dataset, units: &[Unit], backend: &mut dyn Backend, opts: &RunOptions) -> Result<Report> {
    let started = Instant::now();
    let mut ks = opts.k_values.clone().unwrap_or_else(|| dataset.default_k_values());
    ks.sort_unstable();
    ks.dedup();
    let max_k = match ks.last() {
        None => return Err(Error::invalid("k_values", "must not be empty")),
        Some(_) if ks[0] == 0 => return Err(Error::invalid("k_values", "cut-offs must be at least 1")),
        Some(&k) => k,
    };
    if opts.retrieve_depth < max_k {
        return Err(Error::invalid(
            "retrieve_depth",
            format!("{} is below the largest k ({max_k})", opts.retrieve_depth),
        ));
    }
    let selected: Vec<&Unit> = select_units(units, opts.split, opts.limit);
    let mut names = HashSet::new();
    for u in &selected {
        if !names.insert(u.name.as_str()) {
            return Err(Error::invalid("units", format!("unit name {:?} repeats", u.name)));
        }
    }

    let total: usize = selected.iter().map(|u| u.queries.len()).sum();
    let total_docs: usize = selected.iter().map(|u| u.docs.len()).sum();
    let mut progress = Progress::new(opts.progress, &opts.label, selected.len(), total_docs, total);
    let sampled_units = opts.limit.map(|_| selected.iter().map(|u| u.name.clone()).collect());

    let mut scored: Vec<Scored> = Vec::with_capacity(total);
    let mut per_split_units: HashMap<Split, (usize, usize)> = HashMap::new();
    let mut ingest = IngestStats::default();
    let mut latencies = Vec::with_capacity(total);
    let mut records = opts.record_queries.then(Vec::new);

    let mut previous: Option<&Unit> = None;
    for unit in selected {
        let index = UnitIndex::new(unit)?;
        let t = Instant::now();
        backend.ingest(&unit.name, &unit.docs)?;
        ingest.seconds += t.elapsed().as_secs_f64();
        ingest.units += 1;
        ingest.docs += unit.docs.len();
        progress.unit_started(&unit.name, unit.docs.len());
        let e = per_split_units.entry(unit.split).or_default();
        e.0 += 1;
        e.1 += unit.docs.len();

        for q in &unit.queries {
            let t = Instant::now();
            let raw = backend.search_at(&unit.name, &q.text, opts.retrieve_depth, q.time)?;
            let ms = t.elapsed().as_secs_f64() * 1000.0;
            latencies.push(ms);
            let nothing = raw.is_empty();
            let (ranked, unknown) = sanitize(raw, opts.retrieve_depth, &index);
            let values = score(dataset, &index, q, &ranked, &ks);
            let unanswerable = q.abstention || q.category.as_deref().is_some_and(|c| dataset.apart().contains(&c));
            let class = if unanswerable { QueryClass::Unanswerable } else { QueryClass::Answerable };
            if let Some(recs) = records.as_mut() {
                recs.push(QueryRecord {
                    unit: unit.name.clone(),
                    query: q.id.clone(),
                    split: unit.split,
                    category: q.category.clone(),
                    gold: q.gold.clone(),
                    retrieved: ranked.iter().map(|s| s.to_string()).collect(),
                    latency_ms: ms,
                    excluded: values.as_ref().err().map(|s| s.to_string()),
                });
            }
            scored.push(Scored {
                split: unit.split,
                category: q.category.clone(),
                class,
                nothing,
                empty_gold: dataset == Dataset::Locomo && q.gold.is_empty(),
                values,
                gold_dropped: q.gold_dropped.len(),
                repaired: q.gold_repaired,
                unknown,
            });
            progress.query_done();
        }
        if let Some(prev) = previous.filter(|_| opts.unrelated) {
            for q in prev.queries.iter().take(UNRELATED_PER_UNIT) {
                let nothing = backend.search_at(&unit.name, &q.text, opts.retrieve_depth, q.time)?.is_empty();
                if let Some(recs) = records.as_mut() {
                    recs.push(QueryRecord {
                        unit: unit.name.clone(),
                        query: q.id.clone(),
                        split: unit.split,
                        category: None,
                        gold: Vec::new(),
                        retrieved: Vec::new(),
                        latency_ms: 0.0,
                        excluded: Some("unrelated".into()),
                    });
                }
                scored.push(Scored {
                    split: unit.split,
                    category: None,
                    values: Err("unrelated"),
                    class: QueryClass::Unrelated,
                    nothing,
                    empty_gold: false,
                    gold_dropped: 0,
                    repaired: false,
                    unknown: 0,
                });
            }
        }
        previous = Some(unit);
        backend.finish_unit(&unit.name)?;
        progress.unit_done();
    }
    progress.finish();
    ingest.docs_per_sec = if ingest.seconds > 0.0 { ingest.docs as f64 / ingest.seconds } else { 0.0 };

    let mut splits = Vec::new();
    let mut present: Vec<Split> = per_split_units.keys().copied().collect();
    present.sort();
    for &s in &present {
        let (u, d) = per_split_units[&s];
        let subset: Vec<&Scored> = scored.iter().filter(|x| x.split == s).collect();
        splits.push(aggregate(dataset, s.name(), u, d, &subset, &ks));
    }
    if present.len() > 1 {
        let all: Vec<&Scored> = scored.iter().collect();
        splits.push(aggregate(dataset, "all", ingest.units, ingest.docs, &all, &ks));
    }

    Ok(Report {
        dataset,
        k_values: ks,
        retrieve_depth: opts.retrieve_depth,
        split_filter: opts.split,
        limit: opts.limit,
        sampled_units,
        splits,
        ingest,
        latency: LatencyStats::from_samples(&latencies),
        total_seconds: started.elapsed().as_secs_f64(),
        queries: records,
    })
}

/// Cuts to `depth`, drops ids that are not docs of the unit and repeats.
/// Returns the ranking and how many unknown ids were dropped.
fn sanitize<'a>(raw: Vec<String>, depth: usize, index: &UnitIndex<'a>) -> (Vec<&'a str>, usize) {
    let mut seen = HashSet::new();
    let mut unknown = 0;
    let mut out = Vec::with_capacity(raw.len().min(depth));
    for id in raw.into_iter().take(depth) {
        match index.session.get_key_value(id.as_str()) {
            None => unknown += 1,
            Some((&known, _)) => {
                if seen.insert(known) {
                    out.push(known);
                }
            }
        }
    }
    (out, unknown)
}

fn per_k(ks: &[usize], f: impl Fn(usize) -> f64) -> Vec<f64> {
    ks.iter().map(|&k| f(k)).collect()
}

/// Scores one query: a `Vec` per metric family (in `families()` order) of a
/// value per k, or the reason it is left out of the means.
fn score(
    dataset: Dataset,
    index: &UnitIndex<'_>,
    q: &Query,
    ranked: &[&str],
    ks: &[usize],
) -> std::result::Result<Vec<Vec<f64>>, &'static str> {
    match dataset {
        Dataset::Locomo => {
            if q.gold.is_empty() {
                let ones = vec![1.0; ks.len()];
                return Ok(vec![ones.clone(), vec![1.0; LOCOMO_SESSION_K.len()], ones.clone(), ones]);
            }
            let sessions = rank_sessions(ranked, |d| index.session.get(d).copied());
            let gold_sessions = rank_sessions(&q.gold, |d| index.session.get(d).copied());
            Ok(vec![
                per_k(ks, |k| recall_fraction(ranked, &q.gold, k).unwrap_or(1.0)),
                per_k(&LOCOMO_SESSION_K, |k| recall_fraction(&sessions, &gold_sessions, k).unwrap_or(1.0)),
                per_k(ks, |k| recall_any(ranked, &q.gold, k)),
                per_k(ks, |k| recall_all(ranked, &q.gold, k)),
            ])
        }
        Dataset::LongMemEval => {
            if q.abstention {
                return Err("abstention");
            }
            if q.gold.is_empty() {
                return Err("no gold");
            }
            let sessions = rank_sessions(ranked, |d| index.session.get(d).copied());
            let gold: HashSet<&str> = q.gold.iter().map(String::as_str).collect();
            let gold_sessions: HashSet<&str> = q.gold_sessions.iter().map(String::as_str).collect();
            let keys: Vec<String> = ranked
                .iter()
                .filter_map(|d| {
                    let s = *index.session.get(d)?;
                    Some(if !gold.contains(d) && gold_sessions.contains(s) {
                        format!("noans:{s}")
                    } else {
                        s.to_string()
                    })
                })
                .collect();
            let official: Vec<_> = ks
                .iter()
                .map(|&k| turn2session_official(&keys, &q.gold_sessions, q.gold.len(), index.len, k))
                .collect();
            Ok(vec![
                per_k(ks, |k| recall_any(&sessions, &q.gold_sessions, k)),
                per_k(ks, |k| recall_all(&sessions, &q.gold_sessions, k)),
                per_k(ks, |k| ndcg_any(&sessions, &q.gold_sessions, k)),
                per_k(ks, |k| recall_any(ranked, &q.gold, k)),
                per_k(ks, |k| recall_all(ranked, &q.gold, k)),
                per_k(ks, |k| ndcg_any(ranked, &q.gold, k)),
                official.iter().map(|s| s.recall_any).collect(),
                official.iter().map(|s| s.recall_all).collect(),
                official.iter().map(|s| s.ndcg_any).collect(),
            ])
        }
        Dataset::MADial | Dataset::Crosslingual => {
            if q.gold.is_empty() {
                return Err("no gold");
            }
            Ok(vec![
                per_k(ks, |k| recall_fraction(ranked, &q.gold, k).unwrap_or(0.0)),
                per_k(ks, |k| reciprocal_rank(ranked, &q.gold, k)),
            ])
        }
    }
}

fn mean_row(group: &str, items: &[&Vec<Vec<f64>>], family: usize, n_k: usize) -> Option<TableRow> {
    if items.is_empty() {
        return None;
    }
    let mut values = vec![0.0; n_k];
    for v in items {
        for (acc, x) in values.iter_mut().zip(&v[family]) {
            *acc += x;
        }
    }
    for acc in &mut values {
        *acc /= items.len() as f64;
    }
    Some(TableRow { group: group.to_string(), n: items.len(), values })
}

fn aggregate(dataset: Dataset, name: &str, units: usize, docs: usize, xs: &[&Scored], ks: &[usize]) -> SplitReport {
    let mut counts = Counts { units, docs, ..Counts::default() };
    for x in xs {
        match x.class {
            QueryClass::Unrelated => {
                counts.unrelated += 1;
                counts.unrelated_returned_nothing += usize::from(x.nothing);
                continue;
            }
            QueryClass::Unanswerable => {
                counts.unanswerable += 1;
                counts.unanswerable_returned_nothing += usize::from(x.nothing);
            }
            QueryClass::Answerable if x.values.is_ok() => {
                counts.answerable += 1;
                counts.answerable_returned_nothing += usize::from(x.nothing);
            }
            QueryClass::Answerable => {}
        }
        counts.queries += 1;
        match x.values {
            Ok(_) => counts.scored += 1,
            Err("abstention") => counts.excluded_abstention += 1,
            Err(_) => counts.excluded_no_gold += 1,
        }
        counts.empty_gold_scored_as_hit += usize::from(x.empty_gold);
        counts.gold_ids_dropped += x.gold_dropped;
        counts.queries_gold_repaired += usize::from(x.repaired);
        counts.unknown_ids_returned += x.unknown;
    }

    // Category rows: the dataset's order first, then others sorted.
    let apart = dataset.apart();
    let mut cats: Vec<&str> = Vec::new();
    for c in dataset.category_order() {
        if xs.iter().any(|x| x.values.is_ok() && x.category.as_deref() == Some(*c)) {
            cats.push(c);
        }
    }
    let mut others: Vec<&str> = xs
        .iter()
        .filter(|x| x.values.is_ok())
        .filter_map(|x| x.category.as_deref())
        .filter(|c| !dataset.category_order().contains(c) && !apart.contains(c))
        .collect();
    others.sort_unstable();
    others.dedup();
    cats.extend(others);

    let in_cat = |c: &str| -> Vec<&Vec<Vec<f64>>> {
        xs.iter().filter(|x| x.category.as_deref() == Some(c)).filter_map(|x| x.values.as_ref().ok()).collect()
    };
    let overall: Vec<&Vec<Vec<f64>>> = xs
        .iter()
        .filter(|x| !x.category.as_deref().is_some_and(|c| apart.contains(&c)))
        .filter_map(|x| x.values.as_ref().ok())
        .collect();

    let tables = dataset
        .families()
        .iter()
        .enumerate()
        .map(|(f, (tname, title, own_ks))| {
            let fks = own_ks.unwrap_or(ks);
            let n_k = fks.len();
            let mut rows: Vec<TableRow> = cats.iter().filter_map(|c| mean_row(c, &in_cat(c), f, n_k)).collect();
            rows.extend(mean_row("overall", &overall, f, n_k));
            rows.extend(apart.iter().filter_map(|c| mean_row(c, &in_cat(c), f, n_k)));
            MetricTable { name: tname.to_string(), title: title.to_string(), k_values: fks.to_vec(), rows }
        })
        .collect();
    SplitReport { split: name.to_string(), counts, tables }
}

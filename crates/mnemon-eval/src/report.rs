//! The result of an evaluation run: metric tables, counts, timings.

use std::fmt::Write as _;

use serde::{Deserialize, Serialize};

use super::{Dataset, Split, SplitFilter};

/// Everything [`super::run`] measured. Serialises to JSON with serde.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct Report {
    /// The benchmark.
    pub dataset: Dataset,
    /// Cut-offs of every table, ascending.
    pub k_values: Vec<usize>,
    /// How many ids were asked of the backend per query.
    pub retrieve_depth: usize,
    /// Which units were selected.
    pub split_filter: SplitFilter,
    /// Unit limit applied after the split filter, if any.
    pub limit: Option<usize>,
    /// With a limit: the names of the units it chose, in data order
    /// ([`crate::select_units`]).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub sampled_units: Option<Vec<String>>,
    /// One entry per split that had units (`"dev"`, `"test"`), then `"all"`
    /// when both did.
    pub splits: Vec<SplitReport>,
    /// Time spent in [`super::Backend::ingest`].
    pub ingest: IngestStats,
    /// Time spent in [`super::Backend::search`].
    pub latency: LatencyStats,
    /// Wall time of the whole run, seconds.
    pub total_seconds: f64,
    /// Per-query details when [`super::RunOptions::record_queries`] is set.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub queries: Option<Vec<QueryRecord>>,
}

/// Metrics of one split (or of all units together).
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct SplitReport {
    /// `"dev"`, `"test"` or `"all"`.
    pub split: String,
    /// What went in and what was left out.
    pub counts: Counts,
    /// One table per metric family.
    pub tables: Vec<MetricTable>,
}

/// How many units, docs and queries a split covered, and how many queries
/// were left out of the means or had their gold repaired.
#[derive(Clone, Debug, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct Counts {
    /// Units ingested.
    pub units: usize,
    /// Docs ingested.
    pub docs: usize,
    /// Queries asked.
    pub queries: usize,
    /// Queries in some table row (LoCoMo adversarial ones included).
    pub scored: usize,
    /// LongMemEval `_abs` questions, left out of every mean.
    pub excluded_abstention: usize,
    /// Queries without any gold id, left out of every mean (LongMemEval
    /// questions whose evidence is on the assistant side; MADial never).
    /// LoCoMo does not exclude them: see `empty_gold_scored_as_hit`.
    pub excluded_no_gold: usize,
    /// LoCoMo items with empty (cleaned) evidence, scored 1 as the official
    /// code does.
    pub empty_gold_scored_as_hit: usize,
    /// Raw gold ids the loader dropped (malformed or not in the unit).
    pub gold_ids_dropped: usize,
    /// Queries whose raw gold ids were split, rewritten or de-duplicated.
    pub queries_gold_repaired: usize,
    /// Ids the backend returned that are not docs of the unit (ignored).
    pub unknown_ids_returned: usize,
    /// Queries of the overall mean (answerable).
    #[serde(default)]
    pub answerable: usize,
    /// Of those, the ones for which the backend returned nothing (an
    /// abstaining backend, `--abstain-below`).
    #[serde(default)]
    pub answerable_returned_nothing: usize,
    /// Queries that have no answer in the unit: LongMemEval `_abs`
    /// questions and LoCoMo's adversarial category.
    #[serde(default)]
    pub unanswerable: usize,
    /// Of those, the ones for which the backend returned nothing.
    #[serde(default)]
    pub unanswerable_returned_nothing: usize,
    /// Queries of another unit asked of this one (`--unrelated`): nothing in
    /// the unit is about them.
    #[serde(default)]
    pub unrelated: usize,
    /// Of those, the ones for which the backend returned nothing.
    #[serde(default)]
    pub unrelated_returned_nothing: usize,
}

/// One metric family over the cut-offs, broken down by category.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct MetricTable {
    /// Machine name, e.g. `"recall"`, `"session/ndcg_any"`.
    pub name: String,
    /// Human title, e.g. `"evidence recall@k"`.
    pub title: String,
    /// Column cut-offs: the report's `k_values`, or the table's own (LoCoMo
    /// `session/recall`: 1, 3, 5, 10).
    pub k_values: Vec<usize>,
    /// Category rows in the dataset's order, then `"overall"`, then rows kept
    /// out of the overall mean (LoCoMo `adversarial`). Rows with no query are
    /// omitted.
    pub rows: Vec<TableRow>,
}

/// Mean metric values of one group of queries.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct TableRow {
    /// Category name or `"overall"`.
    pub group: String,
    /// Number of queries averaged.
    pub n: usize,
    /// Mean value at each of the table's `k_values`, in `[0, 1]`.
    pub values: Vec<f64>,
}

/// Ingestion throughput.
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize)]
pub struct IngestStats {
    /// Units ingested.
    pub units: usize,
    /// Docs ingested.
    pub docs: usize,
    /// Total seconds inside `ingest` calls.
    pub seconds: f64,
    /// `docs / seconds` (0 when no time was measured).
    pub docs_per_sec: f64,
}

/// Search latency over all `search` calls, in milliseconds. Percentiles are
/// nearest-rank (the smallest value with at least p% of calls at or below).
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize)]
pub struct LatencyStats {
    /// Number of calls.
    pub searches: usize,
    /// Median.
    pub p50_ms: f64,
    /// 95th percentile.
    pub p95_ms: f64,
    /// 99th percentile.
    pub p99_ms: f64,
    /// Mean.
    pub mean_ms: f64,
    /// Slowest call.
    pub max_ms: f64,
}

/// What happened to one query (recorded on request, for debugging).
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct QueryRecord {
    /// Unit name.
    pub unit: String,
    /// Query id.
    pub query: String,
    /// Split.
    pub split: Split,
    /// Category, if any.
    pub category: Option<String>,
    /// Gold doc ids.
    pub gold: Vec<String>,
    /// Ids as scored: the backend's answer cut to the retrieve depth, unknown
    /// ids and repeats removed.
    pub retrieved: Vec<String>,
    /// Time of the `search` call, milliseconds.
    pub latency_ms: f64,
    /// Why the query is in no mean (`"abstention"`, `"no gold"`), if so.
    pub excluded: Option<String>,
}

impl MetricTable {
    /// The mean of `group` at cut-off `k`, if both exist.
    pub fn value(&self, group: &str, k: usize) -> Option<f64> {
        let col = self.k_values.iter().position(|&x| x == k)?;
        self.rows.iter().find(|r| r.group == group)?.values.get(col).copied()
    }

    /// The row of `group`, if any.
    pub fn row(&self, group: &str) -> Option<&TableRow> {
        self.rows.iter().find(|r| r.group == group)
    }
}

impl SplitReport {
    /// The table named `name` (see [`MetricTable::name`]), if any.
    pub fn table(&self, name: &str) -> Option<&MetricTable> {
        self.tables.iter().find(|t| t.name == name)
    }
}

impl LatencyStats {
    /// Summarises per-call latencies in milliseconds (any order).
    pub fn from_samples(samples: &[f64]) -> Self {
        if samples.is_empty() {
            return Self::default();
        }
        let mut s = samples.to_vec();
        s.sort_by(f64::total_cmp);
        let pct = |p: f64| -> f64 {
            let rank = ((p / 100.0) * s.len() as f64).ceil() as usize;
            s[rank.clamp(1, s.len()) - 1]
        };
        LatencyStats {
            searches: s.len(),
            p50_ms: pct(50.0),
            p95_ms: pct(95.0),
            p99_ms: pct(99.0),
            mean_ms: s.iter().sum::<f64>() / s.len() as f64,
            max_ms: s[s.len() - 1],
        }
    }
}

impl Report {
    /// The report of split `name` (`"dev"`, `"test"`, `"all"`), if present.
    pub fn split(&self, name: &str) -> Option<&SplitReport> {
        self.splits.iter().find(|s| s.split == name)
    }

    /// Renders aligned plain-text tables for a terminal: a header line, then
    /// per split its counts and one table per metric family (rows = groups,
    /// columns = n and @k, values with 4 decimals), then ingest and latency.
    pub fn render_table(&self) -> String {
        let mut out = String::new();
        let ks: Vec<String> = self.k_values.iter().map(ToString::to_string).collect();
        let _ = writeln!(
            out,
            "{} retrieval eval · k = {} · depth {} · split {:?}{}",
            self.dataset,
            ks.join(" "),
            self.retrieve_depth,
            self.split_filter,
            self.limit.map(|l| format!(" · limit {l} units, spread")).unwrap_or_default()
        );
        for s in &self.splits {
            let c = &s.counts;
            let _ = writeln!(
                out,
                "\n== {}: {} units, {} docs, {} queries, {} scored",
                s.split, c.units, c.docs, c.queries, c.scored
            );
            let notes = [
                (c.excluded_abstention, "abstention excluded"),
                (c.excluded_no_gold, "without gold excluded"),
                (c.empty_gold_scored_as_hit, "with empty gold scored 1"),
                (c.gold_ids_dropped, "gold ids dropped"),
                (c.queries_gold_repaired, "queries with repaired gold"),
                (c.unknown_ids_returned, "unknown ids returned"),
            ];
            let notes: Vec<String> =
                notes.iter().filter(|(n, _)| *n > 0).map(|(n, what)| format!("{n} {what}")).collect();
            if !notes.is_empty() {
                let _ = writeln!(out, "   ({})", notes.join("; "));
            }
            let share = |n: usize, of: usize| format!("{n} of {of} ({:.1}%)", 100.0 * n as f64 / of.max(1) as f64);
            let mut nothing = Vec::new();
            if c.answerable_returned_nothing > 0 || c.unanswerable_returned_nothing > 0 || c.unrelated > 0 {
                nothing.push(format!("answerable {}", share(c.answerable_returned_nothing, c.answerable)));
                if c.unanswerable > 0 {
                    nothing.push(format!("unanswerable {}", share(c.unanswerable_returned_nothing, c.unanswerable)));
                }
                if c.unrelated > 0 {
                    nothing.push(format!("unrelated {}", share(c.unrelated_returned_nothing, c.unrelated)));
                }
                let _ = writeln!(out, "   returned nothing: {}", nothing.join(", "));
            }
            for t in &s.tables {
                render_one(&mut out, t);
            }
        }
        let i = &self.ingest;
        let _ = writeln!(
            out,
            "\ningest: {} docs in {} units, {:.2} s ({:.1} docs/s)",
            i.docs, i.units, i.seconds, i.docs_per_sec
        );
        let l = &self.latency;
        let _ = writeln!(
            out,
            "search: {} calls, p50 {:.2} ms, p95 {:.2} ms, p99 {:.2} ms, mean {:.2} ms, max {:.2} ms",
            l.searches, l.p50_ms, l.p95_ms, l.p99_ms, l.mean_ms, l.max_ms
        );
        let _ = writeln!(out, "total: {:.2} s", self.total_seconds);
        out
    }
}

fn render_one(out: &mut String, t: &MetricTable) {
    let w = t.rows.iter().map(|r| r.group.chars().count()).max().unwrap_or(5).max(5);
    let _ = writeln!(out, "\n{}", t.title);
    let _ = write!(out, "  {:<w$} {:>6}", "group", "n");
    for k in &t.k_values {
        let _ = write!(out, " {:>7}", format!("@{k}"));
    }
    out.push('\n');
    for r in &t.rows {
        let _ = write!(out, "  {:<w$} {:>6}", r.group, r.n);
        for v in &r.values {
            let _ = write!(out, " {v:>7.4}");
        }
        out.push('\n');
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn eval_report_percentiles_nearest_rank() {
        let samples: Vec<f64> = (1..=100).map(f64::from).rev().collect();
        let l = LatencyStats::from_samples(&samples);
        assert_eq!((l.p50_ms, l.p95_ms, l.p99_ms, l.max_ms), (50.0, 95.0, 99.0, 100.0));
        assert_eq!(l.mean_ms, 50.5);
        let l = LatencyStats::from_samples(&[3.0]);
        assert_eq!((l.p50_ms, l.p99_ms, l.searches), (3.0, 3.0, 1));
        assert_eq!(LatencyStats::from_samples(&[]), LatencyStats::default());
    }
}

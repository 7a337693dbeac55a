//! The recall score.
//!
//! ```text
//! fused   = w_dense · cosine + (1 − w_dense) · bm25 / max_bm25      (hybrid)
//!         = cosine                                                  (dense)
//!         = bm25 / max_bm25                                         (lexical)
//! final   = fused · (1 − w_imp + 2·w_imp·importance)
//!                 · (1 − w_rec + w_rec·recency)
//!         + w_ent · min(entity matches, 3)
//! recency = 0.5 ^ (days since last access / half-life)   long-term
//!         = 1                                              permanent, short-term
//! ```
//! `max_bm25` is the best BM25 score among this recall's candidates, so the
//! lexical part is in `0..=1` like the cosine. The normalised weighted sum
//! was chosen over reciprocal rank fusion because it scored higher on the
//! LoCoMo dev split (a reference run: 0.671 vs 0.580 evidence recall@10);
//! the importance factor is 1 at the default importance 0.5, so importance
//! and recency only reorder near-ties unless a caller sets them.

use chrono::{DateTime, Utc};

use crate::projection::Memory;
use crate::recall::RecallOptions;
use crate::types::Tier;

/// Where candidates come from.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Default, serde::Serialize)]
#[serde(rename_all = "snake_case")]
pub enum RecallMode {
    /// Vector index only; score = cosine similarity.
    Dense,
    /// BM25 only; score = max-normalised BM25.
    Lexical,
    /// Both, fused by a weighted sum.
    #[default]
    Hybrid,
}

impl std::str::FromStr for RecallMode {
    type Err = crate::Error;
    fn from_str(s: &str) -> crate::Result<Self> {
        match s {
            "dense" => Ok(RecallMode::Dense),
            "lexical" => Ok(RecallMode::Lexical),
            "hybrid" => Ok(RecallMode::Hybrid),
            _ => Err(crate::Error::invalid("mode", format!("{s:?}: expected dense|lexical|hybrid"))),
        }
    }
}

/// Weights of the recall score (see the module docs for the formula).
#[derive(Clone, Copy, Debug, PartialEq, serde::Serialize)]
pub struct Weights {
    /// Weight of cosine similarity in the hybrid sum, `0..=1`; lexical gets
    /// `1 − dense`. Default 0.7 (the reference run's best on the LoCoMo dev
    /// split; confirmed on our dev splits, see the README's table).
    pub dense: f32,
    /// Strength of importance, `0..=0.5`: the factor spans `1 ± w`. Default 0.1.
    pub importance: f32,
    /// Strength of recency, `0..=1`: the factor spans `1 − w ..= 1`. Default 0.1.
    pub recency: f32,
    /// Added per query term that names one of the memory's entities (up to
    /// 3). Default 0.05.
    pub entity: f32,
}

impl Default for Weights {
    fn default() -> Self {
        Weights { dense: 0.7, importance: 0.1, recency: 0.1, entity: 0.05 }
    }
}

/// How a hit's score was made.
#[derive(Clone, Debug, PartialEq, serde::Serialize)]
pub struct Explanation {
    /// Cosine similarity of query and memory vectors, `-1..=1`.
    pub similarity: f32,
    /// Raw BM25 score (0 when the memory was not a lexical candidate).
    pub lexical: f32,
    /// BM25 divided by the best BM25 among candidates, `0..=1`.
    pub lexical_norm: f32,
    /// Sum of the query terms' idf in this namespace's BM25 index (see
    /// [`crate::index::LexicalIndex::idf_mass`]); 0 in dense mode.
    pub query_idf: f32,
    /// The fused relevance before reranking.
    pub fused: f32,
    /// The memory's importance, `0..=1`.
    pub importance: f32,
    /// Recency factor, `0..=1` (1 = fresh or not decaying).
    pub recency: f32,
    /// Entities named by the query.
    pub entity_matches: usize,
    /// The final score.
    pub score: f32,
}

/// Dot product of two equal-length slices.
pub(crate) fn dot(a: &[f32], b: &[f32]) -> f32 {
    a.iter().zip(b).map(|(x, y)| x * y).sum()
}

#[allow(clippy::too_many_arguments)]
pub(crate) fn explain(
    m: &Memory,
    similarity: f32,
    bm25: f32,
    max_bm25: f32,
    query_idf: f32,
    query_terms: &[String],
    opts: &RecallOptions,
    now: DateTime<Utc>,
    half_life_days: f64,
) -> Explanation {
    let w = &opts.weights;
    let lexical_norm = if max_bm25 > 0.0 { bm25 / max_bm25 } else { 0.0 };
    let fused = match opts.mode {
        RecallMode::Dense => similarity,
        RecallMode::Lexical => lexical_norm,
        RecallMode::Hybrid => w.dense * similarity + (1.0 - w.dense) * lexical_norm,
    };
    let recency = match m.tier {
        Tier::LongTerm => {
            let days = (now - m.last_access).num_seconds().max(0) as f64 / 86_400.0;
            0.5f64.powf(days / half_life_days) as f32
        }
        Tier::Permanent | Tier::ShortTerm => 1.0,
    };
    let entity_matches = if m.entities.is_empty() {
        0
    } else {
        let ents: Vec<Vec<String>> = m.entities.iter().map(|e| crate::index::tokenize(e)).collect();
        ents.iter().filter(|e| !e.is_empty() && e.iter().all(|t| query_terms.contains(t))).count()
    };
    let imp_factor = 1.0 - w.importance + 2.0 * w.importance * m.importance;
    let rec_factor = 1.0 - w.recency + w.recency * recency;
    let score = fused * imp_factor * rec_factor + w.entity * entity_matches.min(3) as f32;
    Explanation {
        similarity,
        lexical: bm25,
        lexical_norm,
        query_idf,
        fused,
        importance: m.importance,
        recency,
        entity_matches,
        score,
    }
}

//! The recall score.
//!
//! ```text
//! fused   = w_dense · sim + (1 − w_dense) · bm25 / max_bm25         (hybrid)
//! cos     = cosine + cross_script     (memory in the other script than the
//!           query, CJK against not; else the cosine)
//! sim     = cos                                       (SimilarityNorm::Raw)
//!         = (cos − min_cos) / (max_cos − min_cos)     (SimilarityNorm::MinMax;
//!           min_cos at most max_cos − MIN_SPREAD under FEW_CANDIDATES)
//!         = cos                                                     (dense)
//!         = bm25 / max_bm25                                         (lexical)
//! own     = ( max(fused, 0) · (1 − w_imp + 2·w_imp·importance)
//!                           · (1 − w_rec + w_rec·recency)
//!           + w_ent · min(entity matches, 3)
//!           + w_time · proximity )        (proximity: the query names a time)
//!           / (1 + w_imp + 3·w_ent + w_time)   (w_time: only when it names one)
//! ```
//! The divisor ([`Weights::max_own`]) is the most the sum can reach, so
//! `own`, and the final score below, are in `0..=1`; it is the same for
//! every hit of a recall, so it changes no ranking.
//! `cross_script` is [`Weights::cross_script`], else the embedder's
//! [`crate::embed::Embedder::cross_script_offset`] for the query's script
//! (measurements there); `proximity` is [`crate::recall::QueryTime::proximity`].
//! ```text
//! final   = (1 − w_ses) · own + w_ses · session
//! session = (best own + second-best own) / 2 among the candidates of the
//!           memory's session (a missing second counts 0; no session: own)
//! recency = 0.5 ^ (days since last access / half-life)   long-term
//!         = 1                                              permanent, short-term
//! ```
//! `max_bm25` is the best BM25 score among this recall's candidates, so the
//! lexical part is in `0..=1` like the cosine; `min_cos` / `max_cos` are the
//! lowest and highest cosine among the candidates. Min-max scaling of the
//! cosine ("relative score fusion"; Bruch, Gai & Ingber, "An Analysis of
//! Fusion Functions for Hybrid Retrieval", ACM TOIS 2023) is what the
//! embedder asks for when its cosines are bunched: multilingual-e5-small
//! puts 90% of query–memory cosines within 0.72–0.83 on the LoCoMo dev split,
//! so raw cosine barely moves the sum. Measured on the dev splits (evidence
//! / memory recall@10, 50 candidates per index): e5 LoCoMo 0.639 raw → 0.658
//! min-max, MADial zh 0.645 → 0.743; MiniLM keeps raw cosine (LoCoMo 0.686
//! raw vs 0.649 min-max). The normalised weighted sum
//! was chosen over reciprocal rank fusion because it scored higher on the
//! LoCoMo dev split (a reference run: 0.671 vs 0.580 evidence recall@10);
//! the importance factor is 1 at the default importance 0.5, so importance
//! and recency only reorder near-ties unless a caller sets them.
//!
//! The session score (`w_ses` = [`Weights::session`], default 0.5) is the
//! seed practice of scoring a conversation window from its best turns:
//! the turns that answer a question sit together in a session, so a turn
//! whose session also holds another match is likelier the one asked for.
//! Measured on the dev splits, evidence recall@10 on LoCoMo (hybrid) with
//! `w_ses` 0 / 0.3 / 0.4 / **0.5** / 0.6 / 0.7: MiniLM 0.687 / 0.719 /
//! 0.727 / **0.732** / 0.734 / 0.727; e5 0.662 / – / 0.722 / **0.730** /
//! 0.726 / –; hashing 0.611 / 0.660 / 0.675 / **0.684** / 0.685 / 0.673.
//! Taking the best one turn (instead of two) or three was lower in an
//! offline replay of the same rankings (hashing 0.661 and 0.664 at 0.5). On
//! LongMemEval dev (MiniLM) session recall_any@1/5/10 went 0.917 / 0.952 /
//! 0.976 → 0.917 / 0.964 / 0.976.
//!
//! The time term (`w_time` = [`Weights::time`], default 0.2) applies when
//! the query names a span of time ("two weeks ago", "last month", "on May
//! 23, 2023", "上个月"; [`crate::recall::QueryTime`]) read relative to the
//! query's reference time ([`RecallOptions::reference_time`]): questions
//! about one's own past are often about when. Measured on the dev splits,
//! `w_time` 0 / 0.2 / 0.3 / 0.5, hybrid: LoCoMo evidence recall@10 (asked at
//! the last session's date) MiniLM 0.732 / **0.758** / 0.754 / 0.747, e5
//! 0.729 / **0.745** / 0.742 / –, hashing 0.684 / **0.700** / 0.695 / –
//! (lexical 0.680 / – / 0.696 / 0.697); LongMemEval_S session recall_any@5
//! / @10 (asked at `question_date`) MiniLM 0.964 / 0.976 → 0.988 / 0.988 at
//! 0.2 and above (temporal-reasoning @5 0.926 → 1.000), hashing 0.952 /
//! 0.952 → 0.964 / 0.976 (@3 0.952 at 0.2, 0.964 at 0.3); @1 unchanged.
//! Reading BM25 on the query without its time words was tried and dropped
//! (LongMemEval dev @1 0.917 → 0.905 MiniLM; "week" and "month" also match
//! the turns that mention them).
//!
//! After sorting, a hit that restates a better-ranked one (memory vectors'
//! cosine ≥ the engine's near-duplicate threshold and the same numbers,
//! names and negations, [`crate::dedup`]) is dropped before the cut to
//! `top_k`, and counted in the better hit's [`Explanation::collapsed`].

use chrono::{DateTime, Utc};

use crate::embed::SimilarityNorm;
use crate::projection::Memory;
use crate::recall::RecallOptions;
use crate::types::Tier;

/// The narrowest cosine spread min-max scaling divides by
/// ([`SimilarityNorm::MinMax`]) when a recall has fewer than
/// [`FEW_CANDIDATES`] candidates (a store of a few memories): their lowest
/// cosine is read as at most `max − MIN_SPREAD`, so a difference of a few
/// hundredths stays a few hundredths of the fused score rather than all of
/// it. 0.1 is about the band where multilingual-e5-small puts 90% of
/// query–memory cosines (0.72–0.83 on the LoCoMo dev split). Without it a
/// Chinese question over two memories ranked `{"likes": "oolong tea"}`
/// (cosine 0.79, plus the 0.10 cross-script offset) above the one Chinese
/// memory that answers it (0.87, the only shared words).
pub const MIN_SPREAD: f32 = 0.1;

/// Below this many candidates, min-max scaling keeps a spread of at least
/// [`MIN_SPREAD`]. From 10 on it scales as measured on the dev splits: the
/// same floor on every recall cost the cross-lingual dev set en→en
/// recall@1 0.95 → 0.90 and en→zh recall@3 0.55 → 0.50 (80 memories, 50
/// candidates, e5's bunched cosines).
pub const FEW_CANDIDATES: usize = 10;

/// Where candidates come from.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Default, serde::Serialize, serde::Deserialize, schemars::JsonSchema)]
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
            _ => Err(crate::Error::invalid("mode", format!("must be dense, lexical or hybrid, got {s:?}"))),
        }
    }
}

/// Weights of the recall score (see the module docs for the formula).
#[derive(Clone, Copy, Debug, PartialEq, serde::Serialize, serde::Deserialize, schemars::JsonSchema)]
pub struct Weights {
    /// Weight of cosine similarity in the hybrid sum, `0..=1`; lexical gets
    /// `1 − dense`. Default 0.7 (the reference run's best on the LoCoMo dev
    /// split; confirmed on our dev splits, see docs/BENCHMARKS.md, "LoCoMo").
    pub dense: f32,
    /// Strength of importance, `0..=0.5`: the factor spans `1 ± w`. Default 0.1.
    pub importance: f32,
    /// Strength of recency, `0..=1`: the factor spans `1 − w ..= 1`. Default 0.1.
    pub recency: f32,
    /// Added per query term that names one of the memory's entities (up to
    /// 3). Default 0.05.
    pub entity: f32,
    /// How cosine is scaled in hybrid mode. Default [`SimilarityNorm::Auto`].
    pub similarity_norm: SimilarityNorm,
    /// Weight of the session score, `0..=1`: a hit's score becomes
    /// `(1 − w)·own + w·session`, where `session` is the mean of the best
    /// [`SESSION_TOP`] scores among this recall's candidates from the same
    /// session (a missing one counts 0; a memory without a session is its
    /// own session score). Turns that answer one question sit together in a
    /// conversation, so a turn whose neighbours also match is more likely the
    /// one asked for. Default 0.5, chosen on the dev splits (see the module
    /// docs).
    #[serde(default = "default_session_weight")]
    pub session: f32,
    /// Added, times the memory's proximity to the span of time the query
    /// names ("last month", "two weeks ago", "上个月"; see
    /// [`crate::recall::QueryTime::proximity`]: 1 inside the span, halving
    /// with every half-span outside), `0..=1`. Nothing is added when the
    /// query names no time. Default 0.2, chosen on the dev splits (see the
    /// module docs).
    #[serde(default = "default_time_weight")]
    pub time: f32,
    /// Added to the cosine of a memory written in another script than the
    /// query (mostly CJK against not; the explanation keeps the raw cosine)
    /// before fusion, and a second vector search then looks among the
    /// memories of the other script, so that they are candidates at all.
    /// `None`: the embedder's [`crate::embed::Embedder::cross_script_offset`]
    /// for the query's script (0 for all but multilingual-e5-small, which
    /// states 0.10 for Chinese questions and its measurements); a value
    /// here applies to questions in either script.
    #[serde(default)]
    pub cross_script: Option<f32>,
}

impl Weights {
    /// The most a memory's own score can reach before scaling: a fused
    /// relevance of 1 at importance 1 and full recency (`1 + importance`),
    /// three entity matches and, when the query names a time (`timed`),
    /// full time proximity. Every score is divided by it, so scores are in
    /// `0..=1`.
    pub fn max_own(&self, timed: bool) -> f32 {
        let time = if timed { self.time.max(0.0) } else { 0.0 };
        (1.0 + self.importance.max(0.0) + 3.0 * self.entity.max(0.0) + time).max(f32::EPSILON)
    }
}

fn default_time_weight() -> f32 {
    Weights::default().time
}

fn default_session_weight() -> f32 {
    Weights::default().session
}

/// How many of a session's best candidate scores make its session score
/// (see [`Weights::session`]). Chosen on the dev splits with the weight.
pub const SESSION_TOP: usize = 2;

impl Default for Weights {
    fn default() -> Self {
        Weights {
            dense: 0.7,
            importance: 0.1,
            recency: 0.1,
            entity: 0.05,
            similarity_norm: SimilarityNorm::Auto,
            session: 0.5,
            time: 0.2,
            cross_script: None,
        }
    }
}

/// How a hit's score was made.
#[derive(Clone, Debug, PartialEq, serde::Serialize, serde::Deserialize, schemars::JsonSchema)]
pub struct Explanation {
    /// Cosine similarity of query and memory vectors, `-1..=1`.
    pub similarity: f32,
    /// What was added to `similarity` before fusion because the memory is
    /// written in the other script (CJK or not) than the query: the
    /// cross-script offset ([`Weights::cross_script`], else the embedder's
    /// [`crate::embed::Embedder::cross_script_offset`]); 0 for a memory in
    /// the query's script, and in lexical mode.
    #[serde(default)]
    pub script_offset: f32,
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
    /// The session score blended in by [`Weights::session`]: the mean of the
    /// best [`SESSION_TOP`] own scores of the memory's session among the
    /// candidates (the memory's own score when it has no session).
    #[serde(default)]
    pub session: f32,
    /// Proximity of the memory's effective time to the span of time the
    /// query names, `0..=1` (1 inside it); 0 when the query names none.
    #[serde(default)]
    pub time: f32,
    /// The final score, in `0..=1` (see the module docs).
    pub score: f32,
    /// Lower-ranked hits of this recall dropped because they restate this
    /// one (cosine ≥ the near-duplicate threshold and the same facts).
    pub collapsed: usize,
    /// True when the memory was written without waiting for its vector
    /// ([`crate::EmbedMode::Deferred`]) and the vector has not arrived: it
    /// was found lexically only, and `similarity` is 0.
    #[serde(default)]
    pub vector_pending: bool,
    /// Why the hit counts as relevant to the query, when a recall judged
    /// relevance ([`crate::recall::Abstain`]: `context`, and `recall` with
    /// its default abstention); absent when it was not judged or is not
    /// relevant (then `context` leaves it out of the block).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub grounds: Option<crate::recall::Grounds>,
    /// The reranker's score, as it gave it, when a rerank stage ordered
    /// the hit ([`crate::EngineBuilder::reranker`]); `score` is then this
    /// value clamped to 0..=1. Absent otherwise.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub rerank_score: Option<f32>,
    /// The query could not be embedded (its remote provider did not
    /// answer), so recall ran on words alone and judged no relevance by
    /// meaning. Absent (false) otherwise.
    #[serde(default, skip_serializing_if = "std::ops::Not::not")]
    pub query_unembedded: bool,
}

/// Blends each hit's score with its session's score (see
/// [`Weights::session`]); `hits` are this recall's scored candidates.
pub(crate) fn blend_sessions(hits: &mut [crate::recall::Hit], w: f32) {
    if w <= 0.0 {
        return;
    }
    // Sessions by their identifier form (NFKC).
    let form = |s: &str| crate::types::canonical_id(s).into_owned();
    let mut best: std::collections::HashMap<String, [f32; SESSION_TOP]> = std::collections::HashMap::new();
    for h in hits.iter() {
        if let Some(s) = h.memory.session.as_deref() {
            let top = best.entry(form(s)).or_insert([f32::NEG_INFINITY; SESSION_TOP]);
            if let Some(i) = top.iter().position(|&t| h.score > t) {
                top.copy_within(i..SESSION_TOP - 1, i + 1);
                top[i] = h.score;
            }
        }
    }
    let session: Vec<f32> = hits
        .iter()
        .map(|h| match h.memory.session.as_deref().and_then(|s| best.get(&form(s))) {
            Some(top) => top.iter().map(|&t| if t.is_finite() { t } else { 0.0 }).sum::<f32>() / SESSION_TOP as f32,
            None => h.score,
        })
        .collect();
    for (h, s) in hits.iter_mut().zip(session) {
        h.explain.session = s;
        h.score = (1.0 - w) * h.score + w * s;
        h.explain.score = h.score;
    }
}

#[allow(clippy::too_many_arguments)]
pub(crate) fn explain(
    m: &Memory,
    similarity: f32,
    bm25: f32,
    max_bm25: f32,
    query_idf: f32,
    sim_offset: f32,
    sim_scale: Option<(f32, f32)>,
    query_terms: &[String],
    opts: &RecallOptions,
    now: DateTime<Utc>,
    half_life_days: f64,
    query_time: Option<&crate::recall::QueryTime>,
) -> Explanation {
    let w = &opts.weights;
    let lexical_norm = if max_bm25 > 0.0 { bm25 / max_bm25 } else { 0.0 };
    let adjusted = similarity + sim_offset;
    let fused = match opts.mode {
        RecallMode::Dense => adjusted,
        RecallMode::Lexical => lexical_norm,
        RecallMode::Hybrid => {
            let sim = match sim_scale {
                Some((lo, hi)) if hi > lo => (adjusted - lo) / (hi - lo),
                Some(_) => 1.0,
                None => adjusted,
            };
            w.dense * sim + (1.0 - w.dense) * lexical_norm
        }
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
        let ents: Vec<Vec<String>> = m.entities.iter().map(|e| crate::text::tokenize(e)).collect();
        ents.iter().filter(|e| !e.is_empty() && e.iter().all(|t| query_terms.contains(t))).count()
    };
    let imp_factor = 1.0 - w.importance + 2.0 * w.importance * m.importance;
    let rec_factor = 1.0 - w.recency + w.recency * recency;
    let time = query_time.map_or(0.0, |q| q.proximity(m.effective_time()));
    // Scaled by the most the sum can reach, so that every score is in
    // 0..=1 (a negative fused relevance, a cosine below 0, counts 0).
    let score = (fused.max(0.0) * imp_factor * rec_factor + w.entity * entity_matches.min(3) as f32 + w.time * time)
        / w.max_own(query_time.is_some());
    Explanation {
        similarity,
        // Lexical mode fuses no cosine, so no offset was added.
        script_offset: if opts.mode == RecallMode::Lexical { 0.0 } else { sim_offset },
        lexical: bm25,
        lexical_norm,
        query_idf,
        fused,
        importance: m.importance,
        recency,
        entity_matches,
        session: score,
        time,
        score,
        collapsed: 0,
        vector_pending: false,
        grounds: None,
        rerank_score: None,
        query_unembedded: false,
    }
}

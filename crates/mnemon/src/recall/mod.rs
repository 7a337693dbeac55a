//! Recall: given what the agent is about to answer, return the few memories
//! that matter, from one namespace only.
//!
//! Candidates come from the namespace's vector index (cosine similarity) and
//! its BM25 index; they are fused by a normalised weighted sum, then
//! reranked by importance, recency decay by tier, and entity overlap. Hits
//! that restate a better-ranked hit (cosine ≥ the near-duplicate threshold
//! and the same facts, see [`crate::dedup`]) are collapsed into it, so a
//! paraphrase pair takes one slot. Every [`Hit`] carries an [`Explanation`]
//! of its score. See `score.rs` for the formula and the source of each
//! constant.

mod collapse;
mod context;
pub mod excerpt;
mod parts;
mod score;
mod when;

pub use crate::embed::{Abstain, SimilarityNorm};
pub(crate) use context::one_line;
pub use context::{
    estimate_tokens, render_block, render_context, BlockEntry, BlockPart, BlockParts, ContextBlock, EntryFate,
    PartShares, BLOCK_CLOSE, BLOCK_OPEN, BLOCK_PREAMBLE, DEFAULT_PROFILE_SHARE, DEFAULT_RECENT_SHARE, EXCERPT_FIELD,
    MIN_TRUNCATED_TOKENS, SECTION_PROFILE, SECTION_RECENT, SECTION_RELEVANT, TRUNCATED_FIELD,
};
pub use parts::{ContextOptions, DEFAULT_CONTEXT_BUDGET, HELD_BACK_TURN, SAME_ATTRIBUTE_MARGIN};
pub use score::{Explanation, RecallMode, Weights, FEW_CANDIDATES, MIN_SPREAD, SESSION_TOP};
pub use when::{resolve as query_time, QueryTime, TimeSpan};

use chrono::{DateTime, FixedOffset, Utc};
use std::collections::HashMap;

use crate::engine::{AsOf, Engine, ReadPoint};
use crate::error::{Error, Result};
use crate::projection::Memory;
use crate::types::{Kind, MemoryId, Namespace, Tier};

/// Options for [`Engine::recall`]. `RecallOptions::default()` gives top-10
/// hybrid recall of active, unquarantined memories with no similarity floor.
#[derive(Clone, Debug)]
pub struct RecallOptions {
    /// Most hits to return, 1 ..= 1000. Default 10.
    pub top_k: usize,
    /// Drop hits whose cosine similarity to the query is below this, in
    /// `-1.0..=1.0`. Default none. Similarity scales differ per embedder:
    /// set it from measurement for the model in use.
    pub min_similarity: Option<f32>,
    /// Abstention: return no hit when nothing stored is relevant enough
    /// (see [`Abstain`]). Lexical mode (no query vector) never abstains.
    /// Default none; the `context` command defaults to the embedder's
    /// [`crate::embed::Embedder::context_floor`].
    pub abstain: Option<Abstain>,
    /// Only these kinds (empty: all).
    pub kinds: Vec<Kind>,
    /// Only these tiers (empty: all).
    pub tiers: Vec<Tier>,
    /// Only memories formed in this session.
    pub session: Option<String>,
    /// The caller's current session: short-term memories of other sessions
    /// are left out. Without it, short-term memories of every session count.
    pub current_session: Option<String>,
    /// Only memories whose effective time (event time, else write time) is
    /// in `from..=to` (UTC).
    pub time_range: Option<(DateTime<Utc>, DateTime<Utc>)>,
    /// Recall as of a past point: what the store knew then
    /// ([`AsOf::Seq`], [`AsOf::Time`]), or the memories that were true then
    /// as the store knows them now ([`AsOf::ValidTime`]; superseded
    /// versions that held at that time count as current).
    pub as_of: Option<AsOf>,
    /// Also return superseded versions (with a valid-time `as_of`: versions
    /// no longer true then). Default false.
    pub include_superseded: bool,
    /// Also return quarantined memories. Default false.
    pub include_quarantined: bool,
    /// Also return archived memories (see [`crate::Engine::maintain`]). Default false.
    pub include_archived: bool,
    /// Dense, lexical or hybrid candidates. Default hybrid.
    pub mode: RecallMode,
    /// Score weights. Default [`Weights::default`].
    pub weights: Weights,
    /// Record an `Accessed` event for the hits (off the caller's latency
    /// path). Default true.
    pub record_access: bool,
    /// Who asked (stored in the `Accessed` event, personal data redacted):
    /// a one-line label of 1–256 bytes without control characters;
    /// anything else is refused as [`Error::InvalidInput`] naming
    /// `requester`.
    pub requester: Option<String>,
    /// Candidates taken from each index before reranking; `0` means
    /// `max(5 × top_k, 50)`.
    pub candidates: usize,
    /// Put the top hits in the order of the engine's reranker, when it has
    /// one ([`crate::EngineBuilder::reranker`]). Default true.
    pub rerank: bool,
    /// When the query is asked: time expressions in it ("last month", "two
    /// weeks ago", "in March", "上个月", "三天前"; see [`QueryTime`]) are
    /// resolved against it, and memories from the span they name score up
    /// to [`Weights::time`] more. Its offset decides where days begin, and
    /// [`crate::Engine::context`] writes the block's dates as days at that
    /// offset (UTC without a reference time).
    /// `None`: the time of an [`AsOf::Time`] or [`AsOf::ValidTime`] view
    /// (UTC), else the clock in the machine's local time zone.
    pub reference_time: Option<DateTime<FixedOffset>>,
}

impl RecallOptions {
    /// The spans of time `query` names ([`QueryTime`]), read relative to
    /// [`RecallOptions::reference`]; `None` when it names none or
    /// [`Weights::time`] is 0 (the score ignores them then).
    pub fn query_time(&self, query: &str) -> Option<QueryTime> {
        if self.weights.time <= 0.0 {
            return None;
        }
        when::resolve(query, self.reference())
    }

    /// The session an `accessed` event names for this query:
    /// [`RecallOptions::current_session`], else the [`RecallOptions::session`]
    /// filter; `None` when neither is set.
    pub fn access_session(&self) -> Option<String> {
        self.current_session.clone().or_else(|| self.session.clone())
    }

    /// When the query is asked: [`RecallOptions::reference_time`], else the
    /// time of an [`AsOf::Time`] / [`AsOf::ValidTime`] view (UTC), else the
    /// clock in the machine's local time zone.
    pub fn reference(&self) -> DateTime<FixedOffset> {
        match (self.reference_time, self.as_of) {
            (Some(t), _) => t,
            (None, Some(AsOf::Time(t) | AsOf::ValidTime(t))) => t.fixed_offset(),
            _ => chrono::Local::now().fixed_offset(),
        }
    }
}

impl Default for RecallOptions {
    fn default() -> Self {
        RecallOptions {
            top_k: 10,
            rerank: true,
            min_similarity: None,
            abstain: None,
            kinds: Vec::new(),
            tiers: Vec::new(),
            session: None,
            current_session: None,
            time_range: None,
            as_of: None,
            include_superseded: false,
            include_quarantined: false,
            include_archived: false,
            mode: RecallMode::Hybrid,
            weights: Weights::default(),
            record_access: true,
            requester: None,
            candidates: 0,
            reference_time: None,
        }
    }
}

/// One recalled memory with its score.
#[derive(Clone, Debug, serde::Serialize, serde::Deserialize, schemars::JsonSchema)]
pub struct Hit {
    /// The memory as seen at the recall's position.
    pub memory: Memory,
    /// Final score in `0..=1` (higher is better; [`Explanation`] holds its
    /// parts); comparable within one recall only.
    pub score: f32,
    /// How the score was made.
    pub explain: Explanation,
}

impl Engine {
    /// Recalls the memories of `ns` that best match `query`.
    ///
    /// # Errors
    /// [`Error::InvalidInput`] for an empty or oversized query, a query with
    /// characters the [input rules](crate::text::chars) refuse, `top_k`
    /// outside 1..=1000, `min_similarity` or an [`Abstain`] floor outside -1..=1,
    /// [`Weights::time`] outside 0..=1 or [`Weights::cross_script`] outside
    /// -1..=1 (NaN included), or an `as_of`
    /// position past the log's end; [`Error::Embedder`] if embedding the
    /// query fails.
    pub fn recall(&self, ns: &Namespace, query: &str, opts: &RecallOptions) -> Result<Vec<Hit>> {
        Ok(self.recall_timed(ns, query, opts)?.0)
    }

    /// [`Engine::recall`], and the spans of time the query names as the
    /// score read them ([`RecallOptions::query_time`]), so that a response
    /// reporting them needs no second reading (nor a second clock reading).
    pub fn recall_timed(
        &self,
        ns: &Namespace,
        query: &str,
        opts: &RecallOptions,
    ) -> Result<(Vec<Hit>, Option<QueryTime>)> {
        self.check_query(query, opts)?;
        match self.query_vector(query, opts)? {
            Some(qv) => self.recall_scored(ns, query, &qv, opts),
            None => {
                let (mut hits, time) =
                    self.recall_scored(ns, query, &[], &RecallOptions { mode: RecallMode::Lexical, ..opts.clone() })?;
                for h in &mut hits {
                    h.explain.query_unembedded = true;
                }
                Ok((hits, time))
            }
        }
    }

    /// The query's vector for a recall in `opts.mode`: empty in lexical
    /// mode; `None` when the embedder is a remote provider that did not
    /// answer, and the recall goes on by words alone (what the provider
    /// cannot give now, recall does without rather than fail).
    ///
    /// # Errors
    /// [`Error::Embedder`] for any other failure of the embedder.
    pub(crate) fn query_vector(&self, query: &str, opts: &RecallOptions) -> Result<Option<Vec<f32>>> {
        if opts.mode == RecallMode::Lexical {
            return Ok(Some(Vec::new()));
        }
        match crate::embed::embed_query(self.embedder().as_ref(), query) {
            Ok(v) => Ok(Some(v)),
            Err(Error::ProviderUnavailable { .. }) => Ok(None),
            Err(e) => Err(e),
        }
    }

    fn check_query(&self, query: &str, opts: &RecallOptions) -> Result<()> {
        if query.trim().is_empty() {
            return Err(Error::invalid("query", "must not be empty"));
        }
        if query.len() > self.config().max_content_bytes {
            return Err(Error::invalid("query", format!("{} bytes, above max_content_bytes", query.len())));
        }
        crate::text::check_chars("query", query, crate::text::TextField::Body)?;
        if opts.top_k == 0 || opts.top_k > 1000 {
            return Err(Error::out_of_range("top_k", 1, 1000, opts.top_k));
        }
        // One-line labels, checked as a write checks them: the requester
        // is kept in the log's `accessed` events, and a session filter
        // that no write could have stored would only ever match nothing.
        let labels = [
            ("session", opts.session.as_deref(), crate::engine::write::MAX_SESSION_BYTES),
            ("current_session", opts.current_session.as_deref(), crate::engine::write::MAX_SESSION_BYTES),
            ("requester", opts.requester.as_deref(), crate::engine::write::MAX_REQUESTER_BYTES),
        ];
        for (field, value, max) in labels {
            if let Some(v) = value {
                crate::engine::write::check_short(field, v, max, false)?;
            }
        }
        let floors = [
            ("min_similarity", opts.min_similarity),
            ("abstain_below", opts.abstain.map(|a| a.below)),
            ("abstain_unknown_name_below", opts.abstain.map(|a| a.unknown_name_below)),
        ];
        for (name, v) in floors {
            if let Some(m) = v.filter(|m| !(-1.0..=1.0).contains(m)) {
                return Err(Error::out_of_range(name, -1, 1, m));
            }
        }
        if !(0.0..=1.0).contains(&opts.weights.time) {
            return Err(Error::out_of_range("time_weight", 0, 1, opts.weights.time));
        }
        if let Some(o) = opts.weights.cross_script.filter(|o| !(-1.0..=1.0).contains(o)) {
            return Err(Error::out_of_range("cross_script", -1, 1, o));
        }
        Ok(())
    }

    /// [`Engine::recall`] with a query vector the caller already computed
    /// (for batch evaluation). `query_vector` must have the embedder's
    /// dimension and unit length, or be empty in [`RecallMode::Lexical`].
    ///
    /// # Errors
    /// As [`Engine::recall`]; [`Error::InvalidInput`] for a vector of the
    /// wrong dimension or with NaN/inf.
    pub fn recall_with_vector(
        &self,
        ns: &Namespace,
        query: &str,
        query_vector: &[f32],
        opts: &RecallOptions,
    ) -> Result<Vec<Hit>> {
        self.check_query(query, opts)?;
        Ok(self.recall_scored(ns, query, query_vector, opts)?.0)
    }

    /// The recall itself, on checked options (see [`Engine::recall_timed`]).
    fn recall_scored(
        &self,
        ns: &Namespace,
        query: &str,
        query_vector: &[f32],
        opts: &RecallOptions,
    ) -> Result<(Vec<Hit>, Option<QueryTime>)> {
        if opts.mode != RecallMode::Lexical {
            crate::embed::validate_vector(query_vector, self.embedder().dim())?;
        }
        let point = match opts.as_of {
            Some(a) => self.as_of(ns, a)?.point(),
            None => ReadPoint::at(self.shared().state.read().visible),
        };
        let at = point.seq;
        let half_life_days = self.config().half_life.as_secs_f64() / 86_400.0;
        let now = Utc::now();
        let query_time = opts.query_time(query);
        // The rerank stage, outside the state's lock (a remote call).
        let reranker = self.config().reranker.clone().filter(|_| opts.rerank && opts.mode == RecallMode::Hybrid);
        let mut hits = {
            let state = self.shared().state.read();
            let Some(st) = state.ns(ns) else {
                return Ok((Vec::new(), query_time));
            };
            let keep = |id: u64| st.memories.get(&MemoryId(id)).is_some_and(|m| admissible(m, point, opts));
            let n = if opts.candidates == 0 { (opts.top_k * 5).max(50) } else { opts.candidates };
            let mut cands: HashMap<u64, (Option<f32>, f32)> = HashMap::new();
            // A multilingual embedder's same-language bias, corrected: the
            // memories of the other script get a second search of their own
            // (else the query's language fills every candidate slot) and
            // the offset on their cosine.
            let query_cjk = crate::text::mostly_cjk(query);
            let cross_offset = match opts.weights.cross_script {
                Some(o) => o,
                None => self.embedder().cross_script_offset(query_cjk),
            };
            let other_script = |id: u64| st.cjk.contains(&id) != query_cjk;
            if opts.mode != RecallMode::Lexical {
                for (id, sim) in st.vectors.search(query_vector, n, &keep) {
                    cands.entry(id).or_insert((Some(sim), 0.0));
                }
                if cross_offset != 0.0 && st.has_both_scripts() {
                    for (id, sim) in st.vectors.search(query_vector, n, &|id| keep(id) && other_script(id)) {
                        cands.entry(id).or_insert((Some(sim), 0.0));
                    }
                }
            }
            if opts.mode != RecallMode::Dense {
                for (id, bm25) in st.lexical.search(query, n, &keep) {
                    cands.entry(id).or_insert((None, 0.0)).1 = bm25;
                }
            }
            let max_bm25 = cands.values().map(|c| c.1).fold(0.0f32, f32::max);
            let query_idf = if opts.mode == RecallMode::Dense { 0.0 } else { st.lexical.idf_mass(query) };
            let query_terms: Vec<String> = crate::text::tokenize(query);
            // Cosine of every candidate (lexical-only candidates get theirs
            // computed here), minus those under the similarity floor.
            let mut scored: Vec<(u64, f32, f32, f32)> = Vec::with_capacity(cands.len());
            for (id, (sim, bm25)) in cands {
                let sim = match sim {
                    Some(s) => s,
                    None if query_vector.is_empty() => 0.0,
                    None => st.vectors.similarity(id, query_vector).unwrap_or(0.0),
                };
                if opts.min_similarity.is_some_and(|floor| sim < floor) {
                    continue;
                }
                let offset = if cross_offset != 0.0 && other_script(id) { cross_offset } else { 0.0 };
                scored.push((id, sim, bm25, offset));
            }
            let norm = match opts.weights.similarity_norm {
                SimilarityNorm::Auto => self.embedder().similarity_norm(),
                n => n,
            };
            let sim_scale = (norm == SimilarityNorm::MinMax && opts.mode == RecallMode::Hybrid).then(|| {
                let (lo, hi) = scored
                    .iter()
                    .fold((f32::INFINITY, f32::NEG_INFINITY), |(lo, hi), c| (lo.min(c.1 + c.3), hi.max(c.1 + c.3)));
                // A few candidates' spread is mostly noise: keep it at
                // least MIN_SPREAD (see score.rs).
                if scored.len() < score::FEW_CANDIDATES {
                    (lo.min(hi - score::MIN_SPREAD), hi)
                } else {
                    (lo, hi)
                }
            });
            let mut hits = Vec::with_capacity(scored.len());
            for (id, sim, bm25, offset) in scored {
                let Some(m) = st.memories.get(&MemoryId(id)) else {
                    continue;
                };
                let explain = score::explain(
                    m,
                    sim,
                    bm25,
                    max_bm25,
                    query_idf,
                    offset,
                    sim_scale,
                    &query_terms,
                    opts,
                    now,
                    half_life_days,
                    query_time.as_ref(),
                );
                let mut explain = explain;
                explain.vector_pending = st.pending_vectors.contains(&m.id);
                hits.push(Hit { memory: m.view_at(at), score: explain.score, explain });
            }
            score::blend_sessions(&mut hits, opts.weights.session);
            hits.sort_by(|a, b| b.score.total_cmp(&a.score).then(a.memory.id.cmp(&b.memory.id)));
            let keep = match &reranker {
                Some((_, depth)) => opts.top_k.max(*depth),
                None => opts.top_k,
            };
            let mut hits = collapse::collapse_restatements(hits, &st.vectors, self.dedup_threshold(), keep);
            if let Some(a) = opts.abstain.filter(|_| opts.mode != RecallMode::Lexical) {
                if a.abstains(query, &mut hits, || st.lexical.unknown_names(query)) {
                    hits.clear();
                }
            }
            hits
        };
        if let Some((r, _)) = reranker {
            if let Err(e) = rerank(r.as_ref(), query, &mut hits) {
                self.rerank_failures().record(&e);
            }
            hits.truncate(opts.top_k);
        }
        if opts.record_access && opts.as_of.is_none() {
            let ids = hits.iter().map(|h| h.memory.id).collect();
            self.record_access(ns, ids, opts.requester.clone(), opts.access_session());
        }
        Ok((hits, query_time))
    }
}

/// Orders `hits` by `r`'s scores for `query` (ties keep recall's order);
/// each hit's `score` becomes the reranker's, clamped to 0..=1, and its
/// explanation keeps the score as given. On a failure of the reranker the
/// hits keep recall's order and scores, and the error is returned (the
/// caller counts it in [`crate::Stats::rerank_failed`]).
fn rerank(r: &dyn crate::embed::Reranker, query: &str, hits: &mut [Hit]) -> crate::Result<()> {
    if hits.len() < 2 {
        return Ok(());
    }
    let texts: Vec<std::borrow::Cow<'_, str>> =
        hits.iter().map(|h| crate::text::searchable(&h.memory.content)).collect();
    let docs: Vec<&str> = texts.iter().map(AsRef::as_ref).collect();
    let scores = r.rerank(query, &docs)?;
    drop(texts);
    for (h, s) in hits.iter_mut().zip(scores) {
        h.explain.rerank_score = Some(s);
        h.score = s.clamp(0.0, 1.0);
        h.explain.score = h.score;
    }
    hits.sort_by(|a, b| {
        b.explain.rerank_score.unwrap_or(f32::MIN).total_cmp(&a.explain.rerank_score.unwrap_or(f32::MIN))
    });
    Ok(())
}

/// Why a hit counts as relevant to its query ([`Abstain::judge`]).
#[derive(Clone, Copy, Debug, PartialEq, Eq, serde::Serialize, serde::Deserialize, schemars::JsonSchema)]
#[serde(rename_all = "snake_case")]
pub enum Grounds {
    /// Its cosine to the query reached the floor ([`Abstain::below`], or
    /// [`Abstain::unknown_name_below`] for a question naming something no
    /// memory mentions).
    Meaning,
    /// It holds the query's rarer words: its BM25 score is at least
    /// [`WORDS_SHARE`] of the query's idf mass (what a memory holding every
    /// query term once would score), so the words that make the question
    /// specific are in it; or it names the person the query asks about by
    /// relation, in either language ([`crate::index::relation_words`]:
    /// "landlord" for "我现在的房东是谁？").
    Words,
    /// It is from the span of time the question names ("last week",
    /// "上个月"): a question that names a span is answered by the span.
    /// Not for advice questions ("what should I cook tonight?" names when
    /// the plan is for, not which memories to read), nor for a question
    /// naming someone the store never mentions ("What did Jean do last
    /// week?"), nor for a memory about someone else than the one the
    /// question asks about (the father's gift of last year for "What did I
    /// get Mom last year?"; see [`Abstain::judge`]).
    Time,
    /// It states a standing constraint or preference (an allergy, a diet, a
    /// dislike, a need, a budget, an "always" or "never";
    /// [`crate::text::intent::is_standing`], or kind `preference`) and the
    /// question asks for advice or a plan
    /// ([`crate::text::intent::asks_advice`]): such a memory bears on the
    /// answer whatever its cosine.
    Standing,
    /// Its vector is still pending: it was found by its words and cannot be
    /// judged by meaning, so it is kept.
    Pending,
    /// A newer value of a relevant memory's fact, stored without a slot key
    /// ("I moved to Shanghai now" after "I live in Hangzhou"): `context`
    /// puts it before the older one (see [`SAME_ATTRIBUTE_MARGIN`]).
    Newer,
}

/// Share of the query's idf mass a hit's BM25 score must reach for
/// [`Grounds::Words`]: half, so a memory holding the rarer half of what the
/// question names counts, and one sharing only a common word beside a
/// subject it never mentions ("birthday" for "my sister's birthday" in a
/// store that only knows the brother's) does not. Chosen on the
/// everyday-questions dev split.
pub const WORDS_SHARE: f32 = 0.5;

/// Most words of a question whose names a hit must hold to be about what
/// it asks ([`Abstain::judge`]): fifteen, the length of an everyday
/// question about one person or thing ("What did Mark say about the
/// launch in the planning meeting?" has twelve). Longer questions name
/// titles, places and things beside their subject; on LongMemEval dev a
/// 40-word question naming a journal lost its answer to the rule.
pub const NAMED_QUESTION_WORDS: usize = 15;

impl Abstain {
    /// Whether a recall that found `hits` (best first) for `query`
    /// abstains; see [`Abstain::judge`].
    pub fn abstains(&self, query: &str, hits: &mut [Hit], unknown_name: impl FnOnce() -> Vec<String>) -> bool {
        self.judge(query, hits, unknown_name).is_some()
    }

    /// Judges each hit's relevance to `query`, setting its
    /// [`Explanation::grounds`], and says whether the recall abstains: it
    /// does when hits were found and none has grounds. A hit is relevant
    /// when its cosine reaches [`Abstain::below`] ([`Grounds::Meaning`]),
    /// it holds the query's rarer words ([`Grounds::Words`]), it is from
    /// the span of time the query names ([`Grounds::Time`]), it states a
    /// standing constraint and the query asks for advice or a plan
    /// ([`Grounds::Standing`]), or its vector is pending
    /// ([`Grounds::Pending`]). When the query names something no memory
    /// mentions (`unknown_name` lists them, [`crate::Engine::unknown_names`];
    /// asked only when it would decide: it scans the query against the
    /// lexical index) and does not ask for advice (a plan names places and
    /// things the store has not heard of), meaning must reach
    /// [`Abstain::unknown_name_below`] and neither words nor time count; when one of
    /// them is a relation ([`crate::index::RELATIONS`]: "my sister" where the
    /// store only knows the brother), neither meaning nor words count.
    /// When the query asks about someone by relation and is not asking for
    /// advice, a hit that names only other relations (the brother's
    /// birthday for the sister's) has neither meaning nor words as grounds,
    /// and one that names the asked relation in either language has words;
    /// likewise a hit in Latin script that holds none of the names the
    /// query asks about ([`crate::index::query_names`]; "What did Mark
    /// say?" over what Lena said) has neither meaning nor words, where the
    /// query is at most [`NAMED_QUESTION_WORDS`] words and weighs no
    /// alternatives (no "or"). Such a hit is not grounded by time either.
    /// No hit at all is not an abstention, just an empty result.
    ///
    /// Returns `Some` with the best hit's cosine and the floor it fell under
    /// when recall abstains, `None` otherwise.
    pub fn judge(
        &self,
        query: &str,
        hits: &mut [Hit],
        unknown_name: impl FnOnce() -> Vec<String>,
    ) -> Option<Abstention> {
        if hits.is_empty() {
            return None;
        }
        let advice = crate::text::intent::asks_advice(query);
        let best = hits.iter().map(|h| h.explain.similarity).fold(f32::NEG_INFINITY, f32::max);
        // The unknown-name rule decides only where meaning or words would
        // otherwise ground a hit.
        let words = |h: &Hit| h.explain.query_idf > 0.0 && h.explain.lexical >= WORDS_SHARE * h.explain.query_idf;
        // The people the question asks about, by relation ("my sister"),
        // with every word of their groups in both languages: a hit that
        // names one of them is about the person asked about, one that
        // names only others (the brother) is not. A Chinese relation keeps
        // the distinctions Chinese makes (表妹 is not 表姐) where a group
        // opening with it holds them.
        let asked = crate::index::relation_words(query);
        let kin: Vec<&str> = asked
            .iter()
            .flat_map(|&w| {
                let all = || crate::index::RELATIONS.iter().filter(move |g| g.contains(&w));
                let own: Vec<&&[&str]> =
                    all().filter(|g| !w.is_ascii() && g.first().is_some_and(|f| !f.is_ascii())).collect();
                if own.is_empty() {
                    all().collect()
                } else {
                    own
                }
            })
            .flat_map(|g| g.iter().copied())
            .collect();
        let needs_names =
            !advice && (!kin.is_empty() || hits.iter().any(|h| h.explain.similarity >= self.below || words(h)));
        let strangers = if needs_names { unknown_name() } else { Vec::new() };
        let stranger = !strangers.is_empty();
        // A relation the store never names (a sister where it only knows
        // the brother) is someone it holds nothing about: no cosine grounds
        // a hit then.
        let relation = strangers.iter().any(|w| crate::index::RELATIONS.iter().any(|g| g.contains(&w.as_str())));
        // Floors at -1 (`abstain_below: -1`) never abstain, whatever the query names.
        let floor = if self.below <= -1.0 {
            self.below
        } else if relation {
            f32::INFINITY
        } else if stranger {
            self.unknown_name_below.max(self.below)
        } else {
            self.below
        };
        // The names the question asks about that the store holds (those it
        // does not are `strangers`), as the terms a memory would hold. Only
        // for a short question about one thing: one that weighs
        // alternatives ("… a cultural festival or my Spanish classes?") or
        // runs long names many things beside the name.
        let about_one = query.split_whitespace().count() <= NAMED_QUESTION_WORDS
            && !query.split(|c: char| !c.is_alphanumeric()).any(|w| w.eq_ignore_ascii_case("or"));
        let names: Vec<Vec<String>> = crate::index::query_names(query)
            .into_iter()
            .filter(|_| about_one)
            .filter(|n| !strangers.iter().any(|s| s == n))
            .map(|n| crate::text::tokenize(n).into_iter().filter(|t| !crate::text::is_stop_word(t)).collect())
            .collect();
        let mut any = false;
        for h in hits.iter_mut() {
            // A memory in Latin script that names none of the question's
            // names (Lena's words for "What did Mark say?") is about
            // someone or something else; one in Chinese may write the name
            // in its own script.
            let text = if names.is_empty() && kin.is_empty() {
                std::borrow::Cow::Borrowed("")
            } else {
                crate::text::searchable(&h.memory.content)
            };
            let unnamed = !names.is_empty() && {
                !crate::text::mostly_cjk(&text) && {
                    let held = crate::text::tokenize(&text);
                    !names.iter().any(|n| n.iter().any(|t| held.contains(t)))
                }
            };
            let (same, other) = if kin.is_empty() {
                (false, false)
            } else {
                let named = crate::index::relation_words(&text);
                let same = named.iter().any(|w| kin.contains(w));
                (same, !same && !named.is_empty())
            };
            // Someone else's birthday does not answer the question about
            // one's sister, however close its meaning; advice weighs other
            // people's needs too ("my husband is vegetarian").
            // Floors at -1 ground every hit by meaning, as before.
            let elsewhere = (other || unnamed) && !advice && self.below > -1.0;
            let e = &h.explain;
            let grounds = if e.vector_pending {
                Some(Grounds::Pending)
            } else if e.similarity >= floor && !elsewhere {
                Some(Grounds::Meaning)
            } else if !stranger && !elsewhere && (words(h) || same) {
                Some(Grounds::Words)
            } else if e.time >= 1.0 && !advice && !stranger && !elsewhere {
                Some(Grounds::Time)
            } else if advice
                && (h.memory.kind == crate::types::Kind::Preference
                    || crate::text::intent::is_standing(&h.memory.content))
            {
                Some(Grounds::Standing)
            } else {
                None
            };
            any |= grounds.is_some();
            h.explain.grounds = grounds;
        }
        (!any).then_some(Abstention { best_similarity: best, floor: floor.min(1.0) })
    }
}

/// Why a recall abstained: its best hit's cosine to the query, and the
/// floor that cosine fell under ([`Abstain::judge`]).
#[derive(Clone, Copy, Debug, PartialEq, serde::Serialize, serde::Deserialize, schemars::JsonSchema)]
pub struct Abstention {
    /// Cosine of the query with the closest memory found, in `-1.0..=1.0`.
    pub best_similarity: f32,
    /// The floor it did not reach: [`Abstain::below`], or
    /// [`Abstain::unknown_name_below`] when the query names something no
    /// memory mentions.
    pub floor: f32,
}

impl Engine {
    /// The names in `query` that no memory of `ns` mentions, in the query's
    /// order: capitalised words other than a sentence's first, month and
    /// weekday names and stop words, none of whose terms occurs in the
    /// namespace's lexical index (current and past versions alike; see
    /// [`crate::index::LexicalIndex::unknown_names`]). To a namespace with
    /// no memory, every name is unknown.
    pub fn unknown_names(&self, ns: &Namespace, query: &str) -> Vec<String> {
        let state = self.shared().state.read();
        match state.ns(ns) {
            Some(st) => st.lexical.unknown_names(query),
            None => crate::index::LexicalIndex::new().unknown_names(query),
        }
    }
}

/// Whether memory `m` may be returned at read point `p` under `opts`.
fn admissible(m: &Memory, p: ReadPoint, opts: &RecallOptions) -> bool {
    if !p.shows(m) || !p.admits(m, opts.include_superseded, opts.include_archived) {
        return false;
    }
    if !opts.include_quarantined && m.quarantine.is_some() {
        return false;
    }
    if !opts.kinds.is_empty() && !opts.kinds.contains(&m.kind) {
        return false;
    }
    if !opts.tiers.is_empty() && !opts.tiers.contains(&m.tier) {
        return false;
    }
    // Sessions compare in their identifier form (NFKC).
    if let Some(s) = &opts.session {
        if !m.session.as_deref().is_some_and(|ms| crate::types::same_id(ms, s)) {
            return false;
        }
    }
    if let (Tier::ShortTerm, Some(cur)) = (m.tier, &opts.current_session) {
        if !m.session.as_deref().is_some_and(|ms| crate::types::same_id(ms, cur)) {
            return false;
        }
    }
    if let Some((from, to)) = opts.time_range {
        let t = m.effective_time();
        if t < from || t > to {
            return false;
        }
    }
    true
}

//! Requests that read: recall, context, get, history, list, log, the
//! extraction prompt, stats and check. Every response fits the budget.

use chrono::{DateTime, Utc};
use schemars::JsonSchema;
use serde::{Deserialize, Serialize};

use super::budget::{page_size, Cursor, Limits, Packer, FRAME_TOKENS};
use super::error::ApiError;
use super::write::parse_kind;
use super::Call;
use mnemon::extract::Lang;
use mnemon::recall::{Explanation, RecallMode, RecallOptions, SimilarityNorm, Weights};
use mnemon::Event;
use mnemon::Memory;
use mnemon::{AsOf, CheckReport, Engine, ListOptions, Stats, View};
use mnemon::{MemoryId, Namespace, Seq, Tier};

/// Largest `candidates` a recall may ask for.
const MAX_CANDIDATES: usize = 10_000;

/// The filters and settings of a recall, shared by `recall` and `context`;
/// every option of [`RecallOptions`] except the score weights.
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize, JsonSchema)]
pub struct RecallFilters {
    /// How many to return, 1–1000 (default 10).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    #[schemars(range(min = 1, max = 1000))]
    pub top_k: Option<usize>,
    /// Leave out memories whose cosine similarity to the query is below this, -1 to 1.
    /// Its scale depends on the embedder: unrelated text scores about
    /// 0.1–0.3 with MiniLM, 0.74–0.81 with e5.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    #[schemars(range(min = -1, max = 1))]
    pub min_similarity: Option<f32>,
    /// Cosine a memory needs to count as relevant by meaning, -1 to 1 (-1: never abstain).
    /// Memories holding the query's rarer words, from the time it names,
    /// or stating a constraint an advice question needs count too; with
    /// none, nothing is returned. A query naming something no memory
    /// mentions needs the embedder's margin more
    /// ([`mnemon::recall::Abstain::shifted`]). Default: the embedder's floors.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    #[schemars(range(min = -1, max = 1))]
    pub abstain_below: Option<f32>,
    /// Only these kinds (preference, fact, …).
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub kinds: Vec<String>,
    /// Only these tiers.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub tiers: Vec<Tier>,
    /// Only memories formed in this session.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub session: Option<String>,
    /// Your session id: hides other sessions' short-term memories.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub current_session: Option<String>,
    /// Happened at or after this time (RFC 3339).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub from: Option<DateTime<Utc>>,
    /// Happened at or before this time (RFC 3339).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub to: Option<DateTime<Utc>>,
    /// Read the store as it was: {"seq": N}, {"time": RFC 3339} or {"valid_time": RFC 3339}.
    /// `seq` and `time` give what the store knew then; `valid_time` what
    /// was true then, as the store knows it now.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub as_of: Option<AsOf>,
    /// Also old versions that a newer memory replaced.
    #[serde(default, skip_serializing_if = "std::ops::Not::not")]
    pub include_superseded: bool,
    /// Also memories quarantined for holding an instruction.
    #[serde(default, skip_serializing_if = "std::ops::Not::not")]
    pub include_quarantined: bool,
    /// Also archived memories (of ended sessions, or decayed).
    #[serde(default, skip_serializing_if = "std::ops::Not::not")]
    pub include_archived: bool,
    /// How candidates are found: hybrid (meaning and words; the default), dense or lexical.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub mode: Option<RecallMode>,
    /// How hybrid mode scales cosine before fusing it with BM25 (default auto: the embedder's choice).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub similarity_norm: Option<SimilarityNorm>,
    /// Candidates per index before reranking, 1–10000 (default max(5·top_k, 50)).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    #[schemars(range(min = 1, max = 10000))]
    pub candidates: Option<usize>,
    /// Who asks: a label kept with the access record.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub requester: Option<String>,
    /// Whether to record the access, which refreshes the memories' recency (default true).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub record_access: Option<bool>,
    /// Whether the store's reranker, when it has one (`--reranker`), orders the top hits (default true).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub rerank: Option<bool>,
    /// When the question is asked (RFC 3339): "last month", "三天前" are read relative to it.
    /// Its offset decides where days begin. Default: the as_of time, else
    /// now (local time).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub reference_time: Option<DateTime<chrono::FixedOffset>>,
}

impl RecallFilters {
    /// The engine's options for these filters; `top_k` defaults to `default_top_k`.
    ///
    /// # Errors
    /// [`super::ErrorCode::InvalidInput`] for an unknown kind, `from` after
    /// `to`, `abstain_below` outside -1..=1 or NaN, or `candidates` outside
    /// 1..=10000 (the engine checks the rest).
    /// `default_floors` are the embedder's abstention floors
    /// ([`mnemon::embed::Embedder::context_floor`]), which `abstain_below`
    /// shifts.
    pub fn options(
        &self,
        default_top_k: usize,
        default_floors: mnemon::recall::Abstain,
    ) -> Result<RecallOptions, ApiError> {
        let kinds = self
            .kinds
            .iter()
            .enumerate()
            .map(|(i, k)| parse_kind(&format!("kinds[{i}]"), k))
            .collect::<Result<Vec<_>, _>>()?;
        let time_range = match (self.from, self.to) {
            (None, None) => None,
            (from, to) => {
                let from = from.unwrap_or(DateTime::<Utc>::MIN_UTC);
                let to = to.unwrap_or(DateTime::<Utc>::MAX_UTC);
                if from > to {
                    return Err(ApiError::invalid("from", "is after to"));
                }
                Some((from, to))
            }
        };
        if self.abstain_below.is_some_and(|b| !(-1.0..=1.0).contains(&b)) {
            return Err(ApiError::out_of_range("abstain_below", -1, 1, self.abstain_below.unwrap_or_default()));
        }
        let candidates = match self.candidates {
            None => 0,
            Some(n) if (1..=MAX_CANDIDATES).contains(&n) => n,
            Some(n) => return Err(ApiError::out_of_range("candidates", 1, MAX_CANDIDATES, n)),
        };
        // An empty string from a client (models often send "" for an
        // optional field) means the field is absent.
        Ok(RecallOptions {
            top_k: self.top_k.unwrap_or(default_top_k),
            min_similarity: self.min_similarity,
            abstain: self.abstain_below.map(|b| mnemon::recall::Abstain::shifted(default_floors, b)),
            kinds,
            tiers: self.tiers.clone(),
            session: self.session.clone().filter(|s| !s.is_empty()),
            current_session: self.current_session.clone().filter(|s| !s.is_empty()),
            time_range,
            as_of: self.as_of,
            include_superseded: self.include_superseded,
            include_quarantined: self.include_quarantined,
            include_archived: self.include_archived,
            mode: self.mode.unwrap_or_default(),
            weights: Weights { similarity_norm: self.similarity_norm.unwrap_or_default(), ..Weights::default() },
            record_access: self.record_access.unwrap_or(true),
            requester: self.requester.clone().filter(|s| !s.is_empty()),
            candidates,
            rerank: self.rerank.unwrap_or(true),
            reference_time: self.reference_time,
        })
    }
}

/// `recall`: the memories that best match a query, best first. Each hit is
/// compact (id, content, score and a short `why`) unless `explain` asks
/// for the whole memory and the parts of its score.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize, JsonSchema)]
pub struct RecallRequest {
    /// Namespace.
    pub namespace: Namespace,
    /// The user's question or topic, in their words.
    pub query: String,
    /// Filters and settings.
    #[serde(flatten)]
    pub filters: RecallFilters,
    /// true: add each hit's whole memory and the parts of its score.
    /// Default false: id, content, score and why only.
    #[serde(default, skip_serializing_if = "std::ops::Not::not")]
    pub explain: bool,
}

/// One memory `recall` found: the same fields whatever the request asked
/// for, and with `explain` the whole memory and the parts of its score.
#[derive(Clone, Debug, Serialize, Deserialize, JsonSchema)]
pub struct Hit {
    /// The memory's id.
    pub id: MemoryId,
    /// The memory's text.
    pub content: String,
    /// Final score, 0 to 1 (higher is better); comparable within one recall only.
    /// `explain` gives its parts.
    pub score: f32,
    /// Why it ranked, in a few words: how close in meaning, shared words,
    /// names and times of the query, and its state (its slot key, a newer
    /// version, archived, quarantined).
    pub why: String,
    /// With `explain`: the memory as seen at the recall's position.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub memory: Option<Memory>,
    /// With `explain`: how the score was made.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub explain: Option<Explanation>,
}

impl Hit {
    /// The hit of the engine's `hit`, compact unless `explain`.
    pub fn new(hit: mnemon::Hit, explain: bool) -> Hit {
        let why = why(&hit);
        let (id, content, score) = (hit.memory.id, hit.memory.content.clone(), hit.score);
        let (memory, explain) = if explain { (Some(hit.memory), Some(hit.explain)) } else { (None, None) };
        Hit { id, content, score, why, memory, explain }
    }
}

/// A few words on why `hit` ranked: the strongest parts of its score and
/// what a reader must know of the memory's state.
fn why(hit: &mnemon::Hit) -> String {
    let (e, m) = (&hit.explain, &hit.memory);
    let mut parts: Vec<String> = Vec::new();
    if let Some(r) = e.rerank_score {
        parts.push(format!("the reranker's score {r:.2}"));
    }
    if e.query_unembedded {
        parts.push("found by its words only (the embedding provider did not answer)".into());
    } else if e.vector_pending {
        parts.push("found by its words only (vector pending)".into());
    } else if e.similarity > 0.0 {
        parts.push(format!("close in meaning ({:.2})", e.similarity));
    }
    if e.lexical_norm >= 0.5 {
        parts.push("shares key words".into());
    } else if e.lexical_norm > 0.0 {
        parts.push("shares words".into());
    }
    if e.entity_matches > 0 {
        parts.push(if e.entity_matches == 1 {
            "names one of the query's names".into()
        } else {
            format!("names {} of the query's names", e.entity_matches)
        });
    }
    if e.time >= 1.0 {
        parts.push("from the time asked about".into());
    } else if e.time > 0.0 {
        parts.push("near the time asked about".into());
    }
    match (m.status, m.next) {
        (mnemon::Status::Superseded, Some(next)) => parts.push(format!("replaced by #{next}")),
        (mnemon::Status::Superseded, None) => parts.push("replaced by a newer version".into()),
        (mnemon::Status::Archived, _) => parts.push("archived".into()),
        _ => {}
    }
    if let Some(k) = &m.key {
        parts.push(if m.status == mnemon::Status::Active {
            format!("current value of {k}")
        } else {
            format!("key {k}")
        });
    }
    if m.quarantine.is_some() {
        parts.push("quarantined: may hold an injected instruction".into());
    }
    if e.collapsed > 0 {
        parts.push(format!("also stands for {} restatement{}", e.collapsed, if e.collapsed == 1 { "" } else { "s" }));
    }
    match e.grounds {
        Some(mnemon::recall::Grounds::Standing) => {
            parts.push("a standing constraint the advice asked for needs".into())
        }
        Some(mnemon::recall::Grounds::Newer) => parts.push("a newer value of a relevant fact".into()),
        _ => {}
    }
    if parts.is_empty() {
        parts.push("ranked by importance and recency".into());
    }
    parts.join("; ")
}

/// What `recall` found.
#[derive(Clone, Debug, Serialize, Deserialize, JsonSchema)]
pub struct RecallResponse {
    /// Hits, best first: id, content, score and why; with `explain`, also
    /// the memory and the parts of its score.
    pub hits: Vec<Hit>,
    /// Hits left out because the response budget was spent.
    pub omitted: usize,
    /// True when recall found memories but none is relevant
    /// ([`mnemon::recall::Abstain::judge`]: none reached the floor
    /// `abstain_below`, held the query's rarer words, came from the time it
    /// names or states a constraint an advice question needs): `hits` is
    /// empty. The decision is the one `context` makes.
    #[serde(default)]
    pub abstained: bool,
    /// When `abstained`: the names in the query that no memory of the
    /// namespace mentions ([`mnemon::Engine::unknown_names`]), as `context`
    /// reports them; empty otherwise.
    #[serde(default)]
    pub unknown_names: Vec<String>,
    /// When `abstained`: the best hit's cosine and the floor it fell under;
    /// absent otherwise.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub abstention: Option<mnemon::recall::Abstention>,
    /// The span of time the query names ("last month", "三天前"), as read
    /// relative to `reference_time`; memories from then scored higher
    /// (each hit's `explain.time`). Absent when it names none.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub query_time: Option<mnemon::recall::QueryTime>,
}

impl Call for RecallRequest {
    type Output = RecallResponse;
    const OP: &'static str = "recall";
    const READ_ONLY: bool = true;

    fn namespace(&self) -> Option<&Namespace> {
        Some(&self.namespace)
    }

    fn call(self, engine: &Engine, limits: &Limits) -> Result<RecallResponse, ApiError> {
        let mut opts = self.filters.options(RecallOptions::default().top_k, engine.embedder().context_floor())?;
        // Judged here rather than inside the engine's recall, so that the
        // response can say that it abstained and why. Recall abstains as
        // `context` does (the embedder's floors unless `abstain_below`
        // moves them; -1 turns it off), so the two agree on what is
        // relevant.
        let floors = Some(opts.abstain.take().unwrap_or_else(|| engine.embedder().context_floor()));
        // Access is recorded below, for the hits returned only.
        let record_access = std::mem::replace(&mut opts.record_access, false);
        let (mut hits, query_time) = engine.recall_timed(&self.namespace, &self.query, &opts)?;
        // Looked up between the floors (where they decide) or once recall
        // has abstained; never for a recall that returns hits.
        let mut unknown_names = Vec::new();
        // A query its provider could not embed was answered by words
        // alone: nothing to judge by meaning, as in lexical mode.
        let unembedded = hits.iter().any(|h| h.explain.query_unembedded);
        let abstention =
            floors.filter(|_| opts.mode != mnemon::recall::RecallMode::Lexical && !unembedded).and_then(|f| {
                f.judge(&self.query, &mut hits, || {
                    unknown_names = engine.unknown_names(&self.namespace, &self.query);
                    unknown_names.clone()
                })
            });
        if abstention.is_some() {
            hits.clear();
            // Name them whichever floor decided, as `context` does.
            if unknown_names.is_empty() {
                unknown_names = engine.unknown_names(&self.namespace, &self.query);
            }
        }
        if record_access && opts.as_of.is_none() {
            let ids = hits.iter().map(|h| h.memory.id).collect();
            engine.record_access(&self.namespace, ids, opts.requester.clone(), opts.access_session());
        }
        let found = hits.len();
        let mut packer = Packer::new(limits);
        let hits: Vec<Hit> =
            hits.into_iter().map(|h| Hit::new(h, self.explain)).take_while(|h| packer.take(h)).collect();
        let omitted = found - hits.len();
        Ok(RecallResponse { hits, omitted, abstained: abstention.is_some(), unknown_names, abstention, query_time })
    }
}

/// `context`: a prompt block within a token budget, in three parts: the
/// profile (current value of every slot key, every permanent memory), the
/// memories recalled for the query, and the recent turns of
/// `current_session` (see [`mnemon::Engine::context`]).
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize, JsonSchema)]
pub struct ContextRequest {
    /// Namespace.
    pub namespace: Namespace,
    /// What the user just asked.
    /// The block holds what memory has that is relevant to it.
    pub query: String,
    /// Most tokens of the block (default 400).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    #[schemars(range(min = 1))]
    pub budget_tokens: Option<usize>,
    /// Most of the budget the profile may use, 0–1 (0: no profile; default 0.25).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    #[schemars(range(min = 0, max = 1))]
    pub profile_share: Option<f32>,
    /// Most of the budget the recent turns of current_session may use, 0–1 (0: none; default 0.25).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    #[schemars(range(min = 0, max = 1))]
    pub recent_share: Option<f32>,
    /// Filters and settings of the recall behind it.
    #[serde(flatten)]
    pub filters: RecallFilters,
    /// Also say what became of every candidate entry (`entries`: whole, cut, excerpt, skipped, in_profile) and the abstention floors judged against (`floors`).
    #[serde(default, skip_serializing_if = "std::ops::Not::not")]
    pub explain: bool,
}

/// The prompt block: [`mnemon::ContextBlock`], in JSON `{"context", "memories",
/// "truncated", "skipped", "tokens", "profile", "recent", …}`.
pub type ContextResponse = mnemon::recall::ContextBlock;

impl Call for ContextRequest {
    type Output = ContextResponse;
    const OP: &'static str = "context";
    const READ_ONLY: bool = true;

    fn namespace(&self) -> Option<&Namespace> {
        Some(&self.namespace)
    }

    fn call(self, engine: &Engine, limits: &Limits) -> Result<ContextResponse, ApiError> {
        let budget = self.budget_tokens.unwrap_or(mnemon::recall::DEFAULT_CONTEXT_BUDGET);
        // The block travels as a JSON string: escaped line breaks and quotes
        // cost up to one more token each, so half the cap is the ceiling.
        let max = limits.max_response_tokens.saturating_sub(FRAME_TOKENS) / 2;
        if budget == 0 || budget > max {
            return Err(ApiError::out_of_range("budget_tokens", 1, max, budget));
        }
        let defaults = mnemon::recall::PartShares::default();
        let shares = mnemon::recall::PartShares {
            profile: self.profile_share.unwrap_or(defaults.profile),
            recent: self.recent_share.unwrap_or(defaults.recent),
        };
        // The abstention floor defaults to the embedder's, shifted by
        // `abstain_below` when given.
        let default = engine.embedder().context_floor();
        let mut recall = self.filters.options(RecallOptions::default().top_k, default)?;
        recall.abstain = Some(recall.abstain.unwrap_or(default));
        let opts = mnemon::ContextOptions { recall, budget_tokens: budget, shares };
        let mut block = engine.context(&self.namespace, &self.query, &opts)?;
        if !self.explain {
            block.entries.clear();
            block.floors = None;
        }
        Ok(block)
    }
}

/// The view a read works on: the cursor's pinned point, else `as_of`, else
/// the live position.
fn view(engine: &Engine, ns: &Namespace, as_of: Option<AsOf>, cursor: Option<&Cursor>) -> Result<View, ApiError> {
    if let Some(c) = cursor {
        if c.at > engine.last_seq() {
            return Err(ApiError::invalid("cursor", "points past the end of the log"));
        }
        return Ok(View::pinned(engine, ns, c.at, c.valid_at));
    }
    Ok(engine.as_of(ns, as_of.unwrap_or(AsOf::Seq(engine.last_seq())))?)
}

/// A cursor continuing `view` after `after`.
fn cursor_after(view: &View, after: u64) -> String {
    Cursor { at: view.seq(), after, valid_at: view.valid_time() }.encode()
}

/// `get`: one memory version.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize, JsonSchema)]
pub struct GetRequest {
    /// Namespace.
    pub namespace: Namespace,
    /// The memory's id.
    pub id: MemoryId,
    /// Read it as it was: {"seq": N}, {"time": RFC 3339} or {"valid_time": RFC 3339}.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub as_of: Option<AsOf>,
}

impl Call for GetRequest {
    type Output = Memory;
    const OP: &'static str = "get";
    const READ_ONLY: bool = true;

    fn namespace(&self) -> Option<&Namespace> {
        Some(&self.namespace)
    }

    fn call(self, engine: &Engine, limits: &Limits) -> Result<Memory, ApiError> {
        let m = match self.as_of {
            None => engine.get(&self.namespace, self.id)?,
            Some(a) => engine.as_of(&self.namespace, a)?.get(self.id)?,
        };
        if !Packer::new(limits).take(&m) {
            return Err(Packer::too_large(&format!("memory {}", self.id), limits));
        }
        Ok(m)
    }
}

/// `history`: the version chain of a memory, oldest first, paged.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize, JsonSchema)]
pub struct HistoryRequest {
    /// Namespace.
    pub namespace: Namespace,
    /// Any version's id.
    pub id: MemoryId,
    /// Read it as it was: {"seq": N}, {"time": RFC 3339} or {"valid_time": RFC 3339}.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub as_of: Option<AsOf>,
    /// next_cursor of the previous page.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub cursor: Option<String>,
    /// Page size, 1–1000 (default 100).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    #[schemars(range(min = 1, max = 1000))]
    pub limit: Option<usize>,
}

/// A page of a version chain.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize, JsonSchema)]
pub struct HistoryResponse {
    /// Versions, oldest first.
    pub versions: Vec<Memory>,
    /// The log position read.
    pub seq: Seq,
    /// The valid time read, for a valid-time view.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub valid_time: Option<DateTime<Utc>>,
    /// Pass as `cursor` for the next page; absent on the last page.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub next_cursor: Option<String>,
}

impl Call for HistoryRequest {
    type Output = HistoryResponse;
    const OP: &'static str = "history";
    const READ_ONLY: bool = true;

    fn namespace(&self) -> Option<&Namespace> {
        Some(&self.namespace)
    }

    fn call(self, engine: &Engine, limits: &Limits) -> Result<HistoryResponse, ApiError> {
        let page = page_size(self.limit)?;
        let cursor = self.cursor.as_deref().map(Cursor::parse).transpose()?;
        let view = view(engine, &self.namespace, self.as_of, cursor.as_ref())?;
        let skip = usize::try_from(cursor.map_or(0, |c| c.after)).unwrap_or(usize::MAX);
        let chain = view.history(self.id)?;
        let rest = chain.get(skip..).unwrap_or_default();
        let mut packer = Packer::new(limits);
        let versions: Vec<Memory> = rest.iter().take(page).take_while(|m| packer.take(m)).cloned().collect();
        if versions.is_empty() && !rest.is_empty() {
            return Err(Packer::too_large(&format!("version {}", rest[0].id), limits));
        }
        let next = skip + versions.len();
        let next_cursor = (next < chain.len()).then(|| cursor_after(&view, next as u64));
        Ok(HistoryResponse { versions, seq: view.seq(), valid_time: view.valid_time(), next_cursor })
    }
}

/// `list`: memories of a namespace, oldest first, paged.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize, JsonSchema)]
pub struct ListRequest {
    /// Namespace.
    pub namespace: Namespace,
    /// Also old versions that a newer memory replaced.
    #[serde(default, skip_serializing_if = "std::ops::Not::not")]
    pub include_superseded: bool,
    /// Also memories quarantined for holding an instruction.
    #[serde(default, skip_serializing_if = "std::ops::Not::not")]
    pub include_quarantined: bool,
    /// Also archived memories.
    #[serde(default, skip_serializing_if = "std::ops::Not::not")]
    pub include_archived: bool,
    /// Only this kind.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub kind: Option<String>,
    /// Only this tier.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub tier: Option<Tier>,
    /// Only memories formed in this session.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub session: Option<String>,
    /// Read the store as it was: {"seq": N}, {"time": RFC 3339} or {"valid_time": RFC 3339}.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub as_of: Option<AsOf>,
    /// next_cursor of the previous page.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub cursor: Option<String>,
    /// Page size, 1–1000 (default 100).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    #[schemars(range(min = 1, max = 1000))]
    pub limit: Option<usize>,
}

/// A page of memories.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize, JsonSchema)]
pub struct ListResponse {
    /// Memories, oldest first.
    pub memories: Vec<Memory>,
    /// The log position read (every page of one listing reads the same).
    pub seq: Seq,
    /// The valid time read, for a valid-time view.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub valid_time: Option<DateTime<Utc>>,
    /// Pass as `cursor` for the next page; absent on the last page.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub next_cursor: Option<String>,
}

impl Call for ListRequest {
    type Output = ListResponse;
    const OP: &'static str = "list";
    const READ_ONLY: bool = true;

    fn namespace(&self) -> Option<&Namespace> {
        Some(&self.namespace)
    }

    fn call(self, engine: &Engine, limits: &Limits) -> Result<ListResponse, ApiError> {
        let page = page_size(self.limit)?;
        let cursor = self.cursor.as_deref().map(Cursor::parse).transpose()?;
        let view = view(engine, &self.namespace, self.as_of, cursor.as_ref())?;
        let opts = ListOptions {
            include_superseded: self.include_superseded,
            include_quarantined: self.include_quarantined,
            include_archived: self.include_archived,
            kind: self.kind.as_deref().map(|k| parse_kind("kind", k)).transpose()?,
            tier: self.tier,
            session: self.session,
            limit: Some(page + 1),
            after: cursor.map(|c| MemoryId(c.after)),
        };
        let found = view.list(&opts)?;
        let mut packer = Packer::new(limits);
        let memories: Vec<Memory> = found.iter().take(page).take_while(|m| packer.take(m)).cloned().collect();
        if memories.is_empty() && !found.is_empty() {
            return Err(Packer::too_large(&format!("memory {}", found[0].id), limits));
        }
        let next_cursor =
            (memories.len() < found.len()).then(|| memories.last().map(|m| cursor_after(&view, m.id.0))).flatten();
        Ok(ListResponse { memories, seq: view.seq(), valid_time: view.valid_time(), next_cursor })
    }
}

/// Event kinds as the audit export names them ([`mnemon::EventBody::kind_name`]).
pub const EVENT_KINDS: &[&str] =
    &["observed", "extracted", "superseded", "accessed", "forgotten", "tombstone", "archived"];

/// `log`: the audit export of a namespace, events in log order, paged.
/// Forgotten payloads appear as tombstones.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize, JsonSchema)]
pub struct LogRequest {
    /// Namespace.
    pub namespace: Namespace,
    /// First log position. Default 1.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub from: Option<Seq>,
    /// Last log position. Default the end of the log.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub to: Option<Seq>,
    /// Only events of these kinds (observed, extracted, superseded,
    /// accessed, forgotten, tombstone, archived; a forgotten payload counts
    /// as tombstone). Default every kind.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub kinds: Vec<String>,
    /// next_cursor of the previous page.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub cursor: Option<String>,
    /// Page size, 1–1000 (default 100).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    #[schemars(range(min = 1, max = 1000))]
    pub limit: Option<usize>,
}

/// A page of the audit export.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize, JsonSchema)]
pub struct LogResponse {
    /// Events in log order.
    pub events: Vec<Event>,
    /// Pass as `cursor` for the next page; absent on the last page.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub next_cursor: Option<String>,
}

impl Call for LogRequest {
    type Output = LogResponse;
    const OP: &'static str = "log";
    const READ_ONLY: bool = true;

    fn namespace(&self) -> Option<&Namespace> {
        Some(&self.namespace)
    }

    fn call(self, engine: &Engine, limits: &Limits) -> Result<LogResponse, ApiError> {
        let page = page_size(self.limit)?;
        let cursor = self.cursor.as_deref().map(Cursor::parse).transpose()?;
        // Every page ends at the log position the first page saw.
        let end = cursor.map_or_else(|| engine.last_seq(), |c| c.at);
        let from = cursor.map_or(self.from.unwrap_or(1), |c| c.after.saturating_add(1));
        let to = self.to.unwrap_or(u64::MAX).min(end);
        let kinds = self
            .kinds
            .iter()
            .enumerate()
            .map(|(i, k)| {
                EVENT_KINDS.iter().find(|known| **known == k.as_str()).copied().ok_or_else(|| {
                    ApiError::invalid(
                        format!("kinds[{i}]"),
                        format!("must be one of {}, got {k:?}", EVENT_KINDS.join(", ")),
                    )
                })
            })
            .collect::<Result<Vec<&str>, _>>()?;
        let found = engine.events_of_kinds(&self.namespace, from, to, page + 1, &kinds)?;
        let mut packer = Packer::new(limits);
        let events: Vec<Event> = found.iter().take(page).take_while(|e| packer.take(e)).cloned().collect();
        if events.is_empty() && !found.is_empty() {
            return Err(Packer::too_large(&format!("event {}", found[0].seq), limits));
        }
        let next_cursor = (events.len() < found.len())
            .then(|| events.last().map(|e| Cursor { at: end, after: e.seq, valid_at: None }.encode()))
            .flatten();
        Ok(LogResponse { events, next_cursor })
    }
}

/// `extraction_prompt`: a prompt asking an LLM to extract memories from a
/// session, cut to the response budget (oldest observations go first).
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
pub struct ExtractionPromptRequest {
    /// Namespace.
    pub namespace: Namespace,
    /// The session to extract memories from.
    pub session: String,
    /// Prompt language: en (default) or zh.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub lang: Option<Lang>,
}

/// The extraction prompt.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
pub struct ExtractionPromptResponse {
    /// The prompt; send it to the LLM and pass its JSON answer to apply_extraction.
    pub prompt: String,
    /// Estimated tokens of the prompt.
    pub tokens: usize,
}

impl Call for ExtractionPromptRequest {
    type Output = ExtractionPromptResponse;
    const OP: &'static str = "extraction_prompt";
    const READ_ONLY: bool = true;

    fn namespace(&self) -> Option<&Namespace> {
        Some(&self.namespace)
    }

    fn call(self, engine: &Engine, limits: &Limits) -> Result<ExtractionPromptResponse, ApiError> {
        // Half the cap, as for `context`: JSON escaping of the prompt's
        // line breaks and quotes costs extra tokens on the wire.
        let max = limits.max_response_tokens.saturating_sub(FRAME_TOKENS) / 2;
        let prompt =
            engine.extraction_prompt_within(&self.namespace, &self.session, self.lang.unwrap_or_default(), max)?;
        let tokens = mnemon::recall::estimate_tokens(&prompt);
        Ok(ExtractionPromptResponse { prompt, tokens })
    }
}

/// `stats`: store-wide figures. Responds with [`Stats`].
#[derive(Clone, Debug, Default, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
pub struct StatsRequest {}

impl Call for StatsRequest {
    type Output = Stats;
    const OP: &'static str = "stats";
    const READ_ONLY: bool = true;

    fn namespace(&self) -> Option<&Namespace> {
        None
    }

    fn call(self, engine: &Engine, _: &Limits) -> Result<Stats, ApiError> {
        Ok(engine.stats())
    }
}

/// `check`: verify every record and compare the projections with a fresh
/// replay. Responds with the [`CheckReport`].
#[derive(Clone, Debug, Default, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
pub struct CheckRequest {}

impl Call for CheckRequest {
    type Output = CheckReport;
    const OP: &'static str = "check";
    const READ_ONLY: bool = true;

    fn namespace(&self) -> Option<&Namespace> {
        None
    }

    fn call(self, engine: &Engine, _: &Limits) -> Result<CheckReport, ApiError> {
        Ok(engine.check()?)
    }
}

//! Requests that write: remember, observe, supersede, forget, extraction,
//! lifecycle and compaction.

use std::path::PathBuf;

use chrono::{DateTime, Utc};
use schemars::JsonSchema;
use serde::{Deserialize, Serialize};
use serde_json::Value;

use super::budget::{Limits, Packer};
use super::error::ApiError;
use super::Call;
use mnemon::crypt::ShredReport;
use mnemon::ErasureReceipt;
use mnemon::ExtractionReport;
use mnemon::{lifecycle::Consolidation, lifecycle::MaintenanceReport, lifecycle::SessionEnd};
use mnemon::{DedupMode, ForgetOutcome};
use mnemon::{EmbedMode, Engine, NewMemory, NewObservation, Remembered};
use mnemon::{Kind, MemoryId, Namespace, ObservationId, Role, Tier};
use mnemon::{Memory, Observation};

/// Parses a kind name: one of the six built-in kinds or a caller-defined one.
pub(crate) fn parse_kind(field: &str, s: &str) -> Result<Kind, ApiError> {
    s.parse().map_err(|e: mnemon::Error| ApiError::invalid(field, super::error::reason_of(&e)))
}

/// Optional fields of a new memory (or a new version), shared by
/// `remember` and `supersede`. Unset fields take the defaults on
/// `remember` and the old version's values on `supersede`.
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize, JsonSchema)]
pub struct MemoryFields {
    /// preference, fact (default), decision, task_state, episode, procedure, or your own.
    /// 1–64 characters.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub kind: Option<String>,
    /// short_term lasts the session; long_term is the default; permanent is always in context.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub tier: Option<Tier>,
    /// How much it matters, 0–1 (default 0.5).
    /// Recall ranks important memories higher.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    #[schemars(range(min = 0, max = 1))]
    pub importance: Option<f32>,
    /// Names it is about, like Alice or Lisbon.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub entities: Option<Vec<String>>,
    /// Slot entity.attribute, like user.city.
    /// A later memory with this key replaces this one; 3–128 bytes, no
    /// whitespace.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub key: Option<String>,
    /// Ids of the observations it was drawn from.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub sources: Option<Vec<ObservationId>>,
    /// Session it was learned in.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub session: Option<String>,
    /// When it became true (RFC 3339; default now).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub event_time: Option<DateTime<Utc>>,
    /// Your reference for where it came from: a message id or URL, at most 256 bytes.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub source_ref: Option<String>,
}

impl MemoryFields {
    /// `content` with these fields set, as the engine's input.
    fn into_new_memory(self, content: String) -> Result<NewMemory, ApiError> {
        let mut m = NewMemory::new(content);
        if let Some(k) = &self.kind {
            m = m.kind(parse_kind("kind", k)?);
        }
        if let Some(t) = self.tier {
            m = m.tier(t);
        }
        if let Some(i) = self.importance {
            m = m.importance(i);
        }
        if let Some(e) = self.entities {
            m = m.entities(e);
        }
        if let Some(k) = self.key {
            m = m.key(k);
        }
        if let Some(s) = self.sources {
            m = m.sources(s);
        }
        if let Some(s) = self.session {
            m = m.session(s);
        }
        if let Some(t) = self.event_time {
            m = m.event_time(t);
        }
        if let Some(r) = self.source_ref {
            m = m.source_ref(r);
        }
        Ok(m)
    }
}

/// `remember`: store a memory. Responds with [`Remembered`].
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize, JsonSchema)]
pub struct RememberRequest {
    /// Namespace: 1–128 characters of `[A-Za-z0-9_.:@-]`.
    pub namespace: Namespace,
    /// The fact, one self-contained statement. Stored and shown verbatim. A JSON object or array (as the
    /// LangGraph store writes) is searched by its values: embedding, BM25 and the script check read its string,
    /// number and boolean leaves joined by ". ", not its braces and key names.
    pub content: String,
    /// Optional fields of the memory.
    #[serde(flatten)]
    pub fields: MemoryFields,
    /// What to do when it restates a stored memory: supersede (default) makes it the new version of that memory.
    /// exact_only treats only identical text as a repeat; off stores it
    /// as a new memory anyway.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub dedup: Option<DedupMode>,
    /// When to embed it: sync (default) before answering, deferred after (it is found by its words until then).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub embed: Option<EmbedMode>,
    /// Your own embedding of the content, used instead of the store's embedder: exactly as many components as
    /// the store's vectors have, all finite, not all zero (scaled to unit length). Opening the store with another
    /// embedder later embeds the memory again.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub vector: Option<Vec<f32>>,
}

impl Call for RememberRequest {
    type Output = Remembered;
    const OP: &'static str = "remember";
    const READ_ONLY: bool = false;

    fn namespace(&self) -> Option<&Namespace> {
        Some(&self.namespace)
    }

    fn call(self, engine: &Engine, _: &Limits) -> Result<Remembered, ApiError> {
        let mut m = self.fields.into_new_memory(self.content)?;
        if let Some(d) = self.dedup {
            m = m.dedup(d);
        }
        if let Some(e) = self.embed {
            m = m.embed(e);
        }
        if let Some(v) = self.vector {
            m = m.vector(v);
        }
        engine.remember(&self.namespace, m).map_err(|e| ApiError::from(e).sources())
    }
}

/// `supersede`: write a new version of memory `id`. Responds with [`Remembered`].
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize, JsonSchema)]
pub struct SupersedeRequest {
    /// Namespace.
    pub namespace: Namespace,
    /// The id of the current memory to replace.
    pub id: MemoryId,
    /// The new version's text.
    pub content: String,
    /// Fields to change; unset ones are kept from the old version.
    #[serde(flatten)]
    pub fields: MemoryFields,
}

impl Call for SupersedeRequest {
    type Output = Remembered;
    const OP: &'static str = "supersede";
    const READ_ONLY: bool = false;

    fn namespace(&self) -> Option<&Namespace> {
        Some(&self.namespace)
    }

    fn call(self, engine: &Engine, _: &Limits) -> Result<Remembered, ApiError> {
        let m = self.fields.into_new_memory(self.content)?;
        engine.supersede(&self.namespace, self.id, m).map_err(|e| ApiError::from(e).sources())
    }
}

/// `observe`: record a conversation turn or tool result.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize, JsonSchema)]
pub struct ObserveRequest {
    /// Namespace.
    pub namespace: Namespace,
    /// The conversation's id, 1–128 bytes.
    /// Extraction and end_session work per session.
    pub session: String,
    /// Who spoke (default user).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub role: Option<Role>,
    /// What was said, or a tool's result.
    pub text: String,
    /// When it was said (RFC 3339; default now).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub event_time: Option<DateTime<Utc>>,
    /// Your reference for it: a message id, at most 256 bytes.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub source: Option<String>,
}

/// What `observe` recorded.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
pub struct ObserveResponse {
    /// The new observation's id.
    pub observation_id: ObservationId,
    /// Personal data replaced by placeholders: kind → count (never values);
    /// absent when none.
    #[serde(default, skip_serializing_if = "std::collections::BTreeMap::is_empty")]
    pub redactions: std::collections::BTreeMap<String, usize>,
}

impl Call for ObserveRequest {
    type Output = ObserveResponse;
    const OP: &'static str = "observe";
    const READ_ONLY: bool = false;

    fn namespace(&self) -> Option<&Namespace> {
        Some(&self.namespace)
    }

    fn call(self, engine: &Engine, _: &Limits) -> Result<ObserveResponse, ApiError> {
        let mut o = NewObservation::new(self.session, self.role.unwrap_or(Role::User), self.text);
        if let Some(t) = self.event_time {
            o = o.event_time(t);
        }
        if let Some(s) = self.source {
            o = o.source(s);
        }
        let (observation_id, redactions) = engine.observe_reporting(&self.namespace, o)?;
        Ok(ObserveResponse { observation_id, redactions })
    }
}

/// Default most memories a `matching` forget erases.
const DEFAULT_MATCHING_LIMIT: usize = 1000;

/// `forget`: erase memories or observations from every read path. Name
/// exactly one target: `id`, `observation`, `session`, `all` or `matching`.
/// A named target that does not exist is `not_found` and writes nothing,
/// dry run or not: an unknown `id` or `observation`, a `session` that no
/// memory or observation of the namespace carries and no earlier forget
/// named, `all` on a namespace nothing was ever written to. A target
/// already forgotten, and a `matching` search that finds nothing, answer
/// zero counts.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize, JsonSchema)]
pub struct ForgetRequest {
    /// Namespace.
    pub namespace: Namespace,
    /// A memory: forget it and its versions.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub id: Option<MemoryId>,
    /// An observation and the memories drawn only from it.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub observation: Option<ObservationId>,
    /// A session: all its memories and observations.
    /// One that holds nothing and was never forgotten by name is
    /// `not_found`.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub session: Option<String>,
    /// true: the whole namespace.
    /// One nothing was ever written to is `not_found`.
    #[serde(default, skip_serializing_if = "std::ops::Not::not")]
    pub all: bool,
    /// Memories close in meaning to this text.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub matching: Option<String>,
    /// With matching: the least cosine similarity to forget, -1 to 1.
    /// Default the embedder's relevance floor (0.5 for MiniLM and hashing,
    /// 0.92 for e5).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    #[schemars(range(min = -1, max = 1))]
    pub min_similarity: Option<f32>,
    /// With matching: most memories to forget, 1–10000 (default 1000).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    #[schemars(range(min = 1, max = 10000))]
    pub limit: Option<usize>,
    /// true: report only, write nothing.
    #[serde(default, skip_serializing_if = "std::ops::Not::not")]
    pub dry_run: bool,
    /// Why, kept in the log.
    /// Default "user request".
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub reason: Option<String>,
}

/// What `forget` erased (or, for a dry run, would erase).
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize, JsonSchema)]
pub struct ForgetResponse {
    /// Counts and ids; the id lists are cut to the response budget
    /// (see `ids_omitted`), the counts never are.
    #[serde(flatten)]
    pub outcome: ForgetOutcome,
    /// True when nothing was written.
    pub dry_run: bool,
    /// Dry run only: the memories that would be forgotten, as far as the
    /// response budget allows.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub preview: Vec<Memory>,
    /// Dry run only: the observations that would be forgotten, as stored and
    /// in the order of `observation_ids`, as far as the response budget
    /// allows after `preview`.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub preview_observations: Vec<Observation>,
    /// Ids left out of `memory_ids` / `observation_ids` by the budget.
    #[serde(default)]
    pub ids_omitted: usize,
    /// Dry run with `matching` only: the cosine similarity (-1..1) of each
    /// `preview` memory to the query, in the same order (memories whose text
    /// is the query's first, whatever their cosine, then best first; the
    /// preview is then in this order too).
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub similarities: Vec<f32>,
}

impl ForgetRequest {
    fn target(&self, engine: &Engine) -> Result<mnemon::ForgetRequest, ApiError> {
        let named = usize::from(self.id.is_some())
            + usize::from(self.observation.is_some())
            + usize::from(self.session.is_some())
            + usize::from(self.all)
            + usize::from(self.matching.is_some());
        if named != 1 {
            return Err(ApiError::invalid(
                "target",
                format!("name exactly one of id, observation, session, all, matching ({named} given)"),
            ));
        }
        if self.matching.is_none() {
            if self.min_similarity.is_some() {
                return Err(ApiError::invalid("min_similarity", "only with matching"));
            }
            if self.limit.is_some() {
                return Err(ApiError::invalid("limit", "only with matching"));
            }
        }
        Ok(if let Some(id) = self.id {
            mnemon::ForgetRequest::Memory(id)
        } else if let Some(o) = self.observation {
            mnemon::ForgetRequest::Observation(o)
        } else if let Some(s) = &self.session {
            mnemon::ForgetRequest::Session(s.clone())
        } else if let Some(q) = &self.matching {
            mnemon::ForgetRequest::Matching {
                query: q.clone(),
                min_similarity: self.min_similarity.unwrap_or_else(|| engine.embedder().relevance_floor()),
                limit: self.limit.unwrap_or(DEFAULT_MATCHING_LIMIT),
            }
        } else {
            mnemon::ForgetRequest::All
        })
    }
}

impl Call for ForgetRequest {
    type Output = ForgetResponse;
    const OP: &'static str = "forget";
    const READ_ONLY: bool = false;

    fn is_read_only(&self) -> bool {
        self.dry_run
    }

    fn namespace(&self) -> Option<&Namespace> {
        Some(&self.namespace)
    }

    fn call(self, engine: &Engine, limits: &Limits) -> Result<ForgetResponse, ApiError> {
        let target = self.target(engine)?;
        // A matching dry run shows how close each memory is to the query.
        let scores: std::collections::HashMap<MemoryId, f32> = match &target {
            mnemon::ForgetRequest::Matching { query, min_similarity, limit } if self.dry_run => {
                engine.matching(&self.namespace, query, *min_similarity, *limit)?.into_iter().collect()
            }
            _ => Default::default(),
        };
        let reason = self.reason.as_deref().unwrap_or("user request");
        let mut outcome = if self.dry_run {
            engine.forget_dry_run(&self.namespace, target, reason)?
        } else {
            engine.forget(&self.namespace, target, reason)?
        };
        let mut packer = Packer::new(limits);
        let total = outcome.memory_ids.len() + outcome.observation_ids.len();
        let m = outcome.memory_ids.iter().take_while(|id| packer.take(id)).count();
        outcome.memory_ids.truncate(m);
        let o = outcome.observation_ids.iter().take_while(|id| packer.take(id)).count();
        outcome.observation_ids.truncate(o);
        let ids_omitted = total - outcome.memory_ids.len() - outcome.observation_ids.len();
        let mut preview = Vec::new();
        let mut similarities = Vec::new();
        let mut preview_observations = Vec::new();
        if self.dry_run {
            for id in &outcome.memory_ids {
                let Ok(m) = engine.get(&self.namespace, *id) else { continue };
                if !packer.take(&m) {
                    break;
                }
                if let Some(&s) = scores.get(id) {
                    similarities.push(s);
                }
                preview.push(m);
            }
            if similarities.len() == preview.len() {
                // Best match first.
                let mut both: Vec<(Memory, f32)> = preview.into_iter().zip(similarities).collect();
                both.sort_by(|a, b| b.1.total_cmp(&a.1));
                (preview, similarities) = both.into_iter().unzip();
            } else {
                similarities.clear();
            }
            for id in &outcome.observation_ids {
                let Some(o) = engine.observation(&self.namespace, *id) else { continue };
                if !packer.take(&o) {
                    break;
                }
                preview_observations.push(o);
            }
        }
        Ok(ForgetResponse { outcome, dry_run: self.dry_run, preview, preview_observations, ids_omitted, similarities })
    }
}

/// `apply_extraction`: apply an LLM's answer to the extraction prompt.
/// Responds with the per-item [`ExtractionReport`].
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize, JsonSchema)]
pub struct ApplyExtractionRequest {
    /// Namespace.
    pub namespace: Namespace,
    /// Your JSON answer to extraction_prompt, as an object or text.
    pub extraction: Value,
}

impl Call for ApplyExtractionRequest {
    type Output = ExtractionReport;
    const OP: &'static str = "apply_extraction";
    const READ_ONLY: bool = false;

    fn namespace(&self) -> Option<&Namespace> {
        Some(&self.namespace)
    }

    fn call(self, engine: &Engine, _: &Limits) -> Result<ExtractionReport, ApiError> {
        let text = match self.extraction {
            Value::String(s) => s,
            v @ Value::Object(_) => v.to_string(),
            _ => return Err(ApiError::invalid("extraction", "must be a JSON object or its text")),
        };
        Ok(engine.apply_extraction(&self.namespace, &text)?)
    }
}

/// `end_session`: archive a session's short-term memories, promoting the
/// listed ones to long-term. Responds with [`SessionEnd`].
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize, JsonSchema)]
pub struct EndSessionRequest {
    /// Namespace.
    pub namespace: Namespace,
    /// The session to end.
    pub session: String,
    /// Ids of short-term memories to keep as long-term.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub promote: Vec<MemoryId>,
}

impl Call for EndSessionRequest {
    type Output = SessionEnd;
    const OP: &'static str = "end_session";
    const READ_ONLY: bool = false;

    fn namespace(&self) -> Option<&Namespace> {
        Some(&self.namespace)
    }

    fn call(self, engine: &Engine, _: &Limits) -> Result<SessionEnd, ApiError> {
        Ok(engine.end_session(&self.namespace, &self.session, &self.promote)?)
    }
}

/// `consolidate`: merge clusters of near-duplicate memories of a namespace,
/// or with `dry_run` list the clusters a merge would take and write nothing.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize, JsonSchema)]
pub struct ConsolidateRequest {
    /// Namespace.
    pub namespace: Namespace,
    /// List what would be merged (`merged: null` in each result) without
    /// writing. Default false.
    #[serde(default, skip_serializing_if = "std::ops::Not::not")]
    pub dry_run: bool,
}

impl Call for ConsolidateRequest {
    type Output = Vec<Consolidation>;
    const OP: &'static str = "consolidate";
    const READ_ONLY: bool = false;

    fn is_read_only(&self) -> bool {
        self.dry_run
    }

    fn namespace(&self) -> Option<&Namespace> {
        Some(&self.namespace)
    }

    fn call(self, engine: &Engine, _: &Limits) -> Result<Vec<Consolidation>, ApiError> {
        if self.dry_run {
            return Ok(engine.consolidation_preview(&self.namespace)?);
        }
        Ok(engine.consolidate(&self.namespace, None)?)
    }
}

/// `maintain`: decay, session expiry, capacity and consolidation, now.
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize, JsonSchema)]
pub struct MaintainRequest {
    /// Only this namespace (default: every namespace, a store-wide call).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub namespace: Option<Namespace>,
}

/// What `maintain` changed in one namespace.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize, JsonSchema)]
pub struct NamespaceMaintenance {
    /// The namespace.
    pub namespace: Namespace,
    /// What changed.
    pub report: MaintenanceReport,
}

impl Call for MaintainRequest {
    type Output = Vec<NamespaceMaintenance>;
    const OP: &'static str = "maintain";
    const READ_ONLY: bool = false;

    fn namespace(&self) -> Option<&Namespace> {
        self.namespace.as_ref()
    }

    fn call(self, engine: &Engine, _: &Limits) -> Result<Vec<NamespaceMaintenance>, ApiError> {
        let now = Utc::now();
        Ok(match self.namespace {
            Some(ns) => {
                let report = engine.maintain(&ns, now)?;
                vec![NamespaceMaintenance { namespace: ns, report }]
            }
            None => engine
                .maintain_all(now)?
                .into_iter()
                .map(|(namespace, report)| NamespaceMaintenance { namespace, report })
                .collect(),
        })
    }
}

/// `compact`: rewrite the store without forgotten content, then prove it
/// is gone from every file. Responds with the [`ErasureReceipt`].
#[derive(Clone, Debug, Default, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
pub struct CompactRequest {}

impl Call for CompactRequest {
    type Output = ErasureReceipt;
    const OP: &'static str = "compact";
    const READ_ONLY: bool = false;

    fn namespace(&self) -> Option<&Namespace> {
        None
    }

    fn call(self, engine: &Engine, _: &Limits) -> Result<ErasureReceipt, ApiError> {
        Ok(engine.compact()?)
    }
}

/// `verify_erasure`: search every file of the store for these texts.
#[derive(Clone, Debug, Default, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
pub struct VerifyErasureRequest {
    /// Texts to search for, each at least 8 bytes of at least 4 distinct
    /// byte values (a shorter or more repetitive text is refused: a clean
    /// scan for it would prove nothing).
    pub texts: Vec<String>,
}

impl Call for VerifyErasureRequest {
    type Output = ErasureReceipt;
    const OP: &'static str = "verify_erasure";
    const READ_ONLY: bool = true;

    fn namespace(&self) -> Option<&Namespace> {
        None
    }

    fn call(self, engine: &Engine, _: &Limits) -> Result<ErasureReceipt, ApiError> {
        if self.texts.is_empty() {
            return Err(ApiError::invalid("texts", "must hold at least one text"));
        }
        let texts: Vec<&str> = self.texts.iter().map(String::as_str).collect();
        Ok(engine.verify_erasure_text(&texts)?)
    }
}

/// `verify_shred`: the proof that a shredded namespace of an encrypted
/// store is unreadable wherever it was copied. Every record of the
/// namespace sealed under a destroyed data key is tried with every key
/// the store still holds, in the store itself, in each backup and export
/// named (files on the store's machine), and, on a cluster daemon, in the
/// namespace's JetStream stream (source `nats:STREAM`). Responds with the
/// [`ShredReport`]; its `verified` is true only when no record opened and
/// none was readable in plain.
///
/// Errors: [`ErrorCode::NotFound`](crate::ErrorCode::NotFound) for a
/// namespace nothing was ever written to;
/// [`ErrorCode::InvalidInput`](crate::ErrorCode::InvalidInput) (field
/// `namespace`) for a plain store or a namespace whose key was never
/// shredded (`forget` with `all`, or `forget_user`, shreds it), (field
/// `backups`) for a path that is not a data directory, is the store's own
/// or is a copy of another store, and (field `exports`) for a path that is
/// not a store export or is an export of another store (another keyring);
/// [`ErrorCode::Corrupted`](crate::ErrorCode::Corrupted) for a damaged
/// sealed record.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
pub struct VerifyShredRequest {
    /// Namespace whose keys were shredded.
    pub namespace: Namespace,
    /// Backup data directories on the store's machine to check too (made
    /// by `backup`; absolute paths, or relative to the server's working
    /// directory). Not taken over HTTP.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub backups: Vec<PathBuf>,
    /// Store exports on the store's machine to check too (made by
    /// `export`). Not taken over HTTP.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub exports: Vec<PathBuf>,
}

impl Call for VerifyShredRequest {
    type Output = ShredReport;
    const OP: &'static str = "verify_shred";
    const READ_ONLY: bool = true;

    fn namespace(&self) -> Option<&Namespace> {
        Some(&self.namespace)
    }

    fn call(self, engine: &Engine, _: &Limits) -> Result<ShredReport, ApiError> {
        Ok(engine.verify_shred(&self.namespace, &self.backups, &self.exports)?)
    }
}

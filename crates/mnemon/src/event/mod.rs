//! The immutable events that make up the log, and their payloads.
//!
//! Every write to mnemon is one or more of these, appended under a gap-free
//! [`Seq`]. Everything else (fact table, indexes) is a projection of them.

mod codec;
pub(crate) mod micros;

pub use codec::{decode_record, encode_record, FORMAT_VERSION, SEALED_VERSION};
pub(crate) use codec::{MAX_RECORD_LEN, STORE_FORMAT_VERSION};

use chrono::{DateTime, Utc};
use serde::{Deserialize, Serialize};

use crate::types::{Kind, MemoryId, Namespace, ObservationId, Role, Seq, Tier};

/// One event in its envelope: log position, commit time, namespace, payload.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize, schemars::JsonSchema)]
pub struct Event {
    /// Gap-free log position, starting at 1.
    pub seq: Seq,
    /// Wall-clock commit time (UTC, microsecond precision). The writer keeps
    /// it non-decreasing along the log so time ranges map to `Seq` ranges.
    #[serde(with = "micros")]
    #[schemars(with = "DateTime<Utc>")]
    pub time: DateTime<Utc>,
    /// The namespace the event belongs to.
    pub ns: Namespace,
    /// The payload.
    pub body: EventBody,
}

/// The payload of an event: the five kinds, plus the tombstone that
/// compaction leaves in place of an erased payload.
///
/// New variants are only ever appended (the encoding numbers variants by
/// position), so older records keep decoding.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize, schemars::JsonSchema)]
#[serde(rename_all = "snake_case")]
pub enum EventBody {
    /// A raw observation: a conversation turn or a tool result.
    Observed(Observed),
    /// A memory derived from observations (or stated directly).
    Extracted(Extracted),
    /// A newer version replaced an older one.
    Superseded(Superseded),
    /// Recall returned these memories.
    Accessed(Accessed),
    /// Erasure was requested; holds ids and reason, never content.
    Forgotten(Forgotten),
    /// What is left of an erased `Observed` or `Extracted` payload after
    /// compaction (or in an audit export of a forgotten item).
    Tombstone(Tombstone),
    /// Lifecycle maintenance archived these memories: they leave default
    /// recall and `list` but stay in history. Records the decision, so
    /// replay never recomputes decay.
    Archived(Archived),
}

impl EventBody {
    /// The event kind as a lower-case word (`observed`, `extracted`, …).
    pub fn kind_name(&self) -> &'static str {
        match self {
            EventBody::Observed(_) => "observed",
            EventBody::Extracted(_) => "extracted",
            EventBody::Superseded(_) => "superseded",
            EventBody::Accessed(_) => "accessed",
            EventBody::Forgotten(_) => "forgotten",
            EventBody::Tombstone(_) => "tombstone",
            EventBody::Archived(_) => "archived",
        }
    }
}

/// A raw observation.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize, schemars::JsonSchema)]
pub struct Observed {
    /// Caller's session id (1–128 bytes).
    pub session: String,
    /// Who spoke.
    pub role: Role,
    /// The text, after redaction.
    pub text: String,
    /// When it happened, if the caller knows (e.g. a conversation date);
    /// otherwise the envelope time stands.
    #[serde(with = "micros::option")]
    #[schemars(with = "Option<DateTime<Utc>>")]
    pub event_time: Option<DateTime<Utc>>,
    /// Caller's reference for the source (a message id, a dialog id).
    pub source: Option<String>,
}

/// A derived memory. Its id is the `Seq` of this event.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize, schemars::JsonSchema)]
pub struct Extracted {
    /// The memory text, after redaction.
    pub content: String,
    /// What sort of memory.
    pub kind: Kind,
    /// Lifetime tier.
    pub tier: Tier,
    /// Importance in `0.0..=1.0`.
    pub importance: f32,
    /// Entities the memory is about (people, places, products…).
    pub entities: Vec<String>,
    /// Optional slot key `entity.attribute`; a later memory under the same
    /// key supersedes this one.
    pub key: Option<String>,
    /// Observations this memory was derived from.
    pub sources: Vec<ObservationId>,
    /// Session the memory was formed in (scopes short-term memories).
    pub session: Option<String>,
    /// When the remembered thing happened, if known.
    #[serde(with = "micros::option")]
    #[schemars(with = "Option<DateTime<Utc>>")]
    pub event_time: Option<DateTime<Utc>>,
    /// Caller's reference for the source (a message id, a dialog id).
    pub source_ref: Option<String>,
    /// Set when the safety stage flagged the content as an injected
    /// instruction: the reason. Quarantined memories are excluded from recall
    /// unless asked for.
    pub quarantine: Option<String>,
}

/// Why a version was replaced.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize, schemars::JsonSchema)]
#[serde(rename_all = "snake_case")]
pub enum SupersedeReason {
    /// The caller called `supersede`.
    Explicit,
    /// A new memory arrived under the same slot key.
    SameKey,
    /// A near-duplicate memory replaced it.
    NearDuplicate,
    /// Consolidation merged it into a new memory.
    Consolidated,
    /// An extraction result updated it.
    Extraction,
    /// A short-term memory was promoted to long-term at the end of its session.
    Promoted,
}

/// Links an old version to its replacement.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize, schemars::JsonSchema)]
pub struct Superseded {
    /// The replaced version.
    pub old: MemoryId,
    /// The replacing version (created by the `Extracted` event just before).
    pub new: MemoryId,
    /// Why.
    pub reason: SupersedeReason,
}

/// Recall returned these memories.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize, schemars::JsonSchema)]
pub struct Accessed {
    /// Memories returned.
    pub ids: Vec<MemoryId>,
    /// Who asked, if the caller said.
    pub requester: Option<String>,
    /// The session the query came from: the recall's or context's
    /// `current_session`, else its `session` filter; `None` when it named
    /// neither, and in records written before the field existed (format
    /// version 1). A record that carries one is written in format
    /// version 2; every other record stays version 1.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub session: Option<String>,
}

/// What an erasure request named.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize, schemars::JsonSchema)]
#[serde(rename_all = "snake_case")]
pub enum ForgetTarget {
    /// One memory and its whole version chain.
    Memory(MemoryId),
    /// One observation, and what was derived from it: versions whose
    /// sources are all forgotten, and whole version chains that cite it and
    /// whose latest version has no surviving source.
    Observation(ObservationId),
    /// Every observation and memory of a session.
    Session(String),
    /// Everything in the namespace.
    Namespace,
    /// Memories that matched a query; the query text itself is not stored.
    Matching,
}

/// An erasure. Holds ids, reason and requester, never content nor a hash of it.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize, schemars::JsonSchema)]
pub struct Forgotten {
    /// What was asked for.
    pub target: ForgetTarget,
    /// The caller's reason.
    pub reason: String,
    /// Who asked, if the caller said.
    pub requester: Option<String>,
    /// Every memory version erased by this event.
    pub memories: Vec<MemoryId>,
    /// Every observation erased by this event.
    pub observations: Vec<ObservationId>,
}

/// A content-free stand-in for an erased payload.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize, schemars::JsonSchema)]
pub struct Tombstone {
    /// `"observed"` or `"extracted"`: what the erased payload was. (The
    /// audit export also shows a `Superseded` link to a forgotten version
    /// as a tombstone with `"superseded"`.)
    pub was: String,
}

/// Why memories were archived.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize, schemars::JsonSchema)]
#[serde(rename_all = "snake_case")]
pub enum ArchiveReason {
    /// Their session ended (`end_session`).
    SessionEnded,
    /// Their session was idle longer than the session timeout.
    SessionExpired,
    /// Long-term strength (importance × decay) fell below the threshold.
    Decayed,
    /// The namespace exceeded its capacity; the weakest went first.
    Capacity,
}

/// Memories archived by a lifecycle decision.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize, schemars::JsonSchema)]
pub struct Archived {
    /// The archived memory versions (each active when archived).
    pub ids: Vec<MemoryId>,
    /// Why.
    pub reason: ArchiveReason,
}

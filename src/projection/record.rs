//! The records of the fact table: memory versions and observations.

use chrono::{DateTime, Utc};
use serde::Serialize;

use crate::types::{Kind, MemoryId, Namespace, ObservationId, Role, Seq, Status, Tier};

/// One memory version as the fact table holds it.
///
/// A read at log position `S` (live reads use the last durable position;
/// `as_of` views use an earlier one) sees the record as it was at `S`:
/// `status`, `next`, `valid_to` reflect only events with `seq <= S`.
#[derive(Clone, Debug, PartialEq, Serialize)]
pub struct Memory {
    /// Id: the `Seq` of the `Extracted` event that created this version.
    pub id: MemoryId,
    /// Namespace it lives in.
    pub namespace: Namespace,
    /// The text (after redaction).
    pub content: String,
    /// What sort of memory.
    pub kind: Kind,
    /// Lifetime tier.
    pub tier: Tier,
    /// Importance in `0.0..=1.0`.
    pub importance: f32,
    /// Entities the memory is about.
    pub entities: Vec<String>,
    /// Slot key `entity.attribute`, if any.
    pub key: Option<String>,
    /// Observations it was derived from.
    pub sources: Vec<ObservationId>,
    /// Session it was formed in.
    pub session: Option<String>,
    /// Caller's source reference (message id, dialog id).
    pub source_ref: Option<String>,
    /// Status at the read position.
    pub status: Status,
    /// The version this one replaced.
    pub prev: Option<MemoryId>,
    /// The version that replaced this one (at the read position).
    pub next: Option<MemoryId>,
    /// When the first version of this lineage was written (UTC).
    pub first_seen: DateTime<Utc>,
    /// When this version was written (UTC): start of its validity.
    pub valid_from: DateTime<Utc>,
    /// When it was superseded (UTC), if it was by the read position.
    pub valid_to: Option<DateTime<Utc>>,
    /// When the remembered thing happened, if the caller said.
    pub event_time: Option<DateTime<Utc>>,
    /// Last time recall returned it (UTC); starts at `valid_from`.
    pub last_access: DateTime<Utc>,
    /// How many recalls returned it.
    pub access_count: u64,
    /// Reason it was quarantined as an injected instruction, if it was.
    pub quarantine: Option<String>,
    /// Log position that created it (equals `id.0`).
    pub created_seq: Seq,
    /// Log position of the `Superseded` event that replaced it, if any.
    pub superseded_seq: Option<Seq>,
    /// Log position of the `Archived` event that archived it, if any.
    pub archived_seq: Option<Seq>,
}

impl Memory {
    /// True when this version is visible at log position `at`.
    pub(crate) fn visible_at(&self, at: Seq) -> bool {
        self.created_seq <= at
    }

    /// This version as seen from log position `at` (which must be at or
    /// after its creation).
    pub(crate) fn view_at(&self, at: Seq) -> Memory {
        let mut m = self.clone();
        if self.superseded_seq.is_some_and(|s| s > at) {
            m.next = None;
            m.valid_to = None;
        }
        if self.archived_seq.is_some_and(|s| s > at) {
            m.archived_seq = None;
        }
        m.status = self.status_at(at);
        m
    }

    /// Status at log position `at` (visible records only).
    pub(crate) fn status_at(&self, at: Seq) -> Status {
        if self.superseded_seq.is_some_and(|s| s <= at) {
            return Status::Superseded;
        }
        if self.archived_seq.is_some_and(|s| s <= at) {
            return Status::Archived;
        }
        if self.superseded_seq.is_some() || self.archived_seq.is_some() {
            return Status::Active;
        }
        self.status
    }

    /// The time used for recency: when it happened if known, else when written.
    pub fn effective_time(&self) -> DateTime<Utc> {
        self.event_time.unwrap_or(self.valid_from)
    }
}

/// A raw observation as the fact table holds it.
#[derive(Clone, Debug, PartialEq, Serialize)]
pub struct Observation {
    /// Id: the `Seq` of its `Observed` event.
    pub id: ObservationId,
    /// Namespace.
    pub namespace: Namespace,
    /// Session.
    pub session: String,
    /// Who spoke.
    pub role: Role,
    /// The text (after redaction).
    pub text: String,
    /// When it happened, if the caller said.
    pub event_time: Option<DateTime<Utc>>,
    /// When it was written (UTC).
    pub recorded_at: DateTime<Utc>,
    /// Caller's source reference.
    pub source: Option<String>,
}

/// Normalises content for exact-duplicate detection: NFKC, lower-case,
/// whitespace runs collapsed to one space, trimmed.
pub(crate) fn normalize_content(s: &str) -> String {
    use unicode_normalization::UnicodeNormalization;
    // Text already in NFKC (by the quick check) skips the normalisation.
    let lowered: String = if crate::index::nfkc_is_identity(s) {
        s.chars().flat_map(char::to_lowercase).collect()
    } else {
        s.nfkc().flat_map(char::to_lowercase).collect()
    };
    let mut out = String::with_capacity(lowered.len());
    for word in lowered.split_whitespace() {
        if !out.is_empty() {
            out.push(' ');
        }
        out.push_str(word);
    }
    out
}

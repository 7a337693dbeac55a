//! The records of the fact table: memory versions and observations.

use chrono::{DateTime, Utc};
use serde::{Deserialize, Serialize};

use crate::types::{Kind, MemoryId, Namespace, ObservationId, Role, Seq, Status, Tier};

/// One memory version as the fact table holds it.
///
/// A read at log position `S` (live reads use the last durable position;
/// `as_of` views use an earlier one) sees the record as it was at `S`:
/// `status`, `next`, `valid_to` and `recorded_to` reflect only events with
/// `seq <= S`. Forgotten versions are cut out of their chain: `prev` and
/// `next` always name a version that is readable at `S`, or nothing.
///
/// Two time lines, all times UTC with microsecond precision:
///
/// * **valid time** (`valid_from`..`valid_to`): when the fact was true in
///   the world, as the store knows it now — from the caller's event time
///   (else the write time) to the successor's;
/// * **recorded time** (`recorded_from`..`recorded_to`): when the store
///   believed it — from the commit time of the `Extracted` event to that of
///   the `Superseded` event that replaced it.
///
/// Both are derived from the log alone (event times in `Extracted`
/// payloads, commit times in envelopes), so replay reproduces them.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize, schemars::JsonSchema)]
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
    /// The nearest earlier version of its chain that is not forgotten.
    pub prev: Option<MemoryId>,
    /// The nearest later version of its chain that is not forgotten (and
    /// is visible at the read position).
    pub next: Option<MemoryId>,
    /// When the first version of this lineage was written (UTC).
    pub first_seen: DateTime<Utc>,
    /// Valid time, start: when this fact became true — the caller's
    /// `event_time`, else the write time (`recorded_from`).
    pub valid_from: DateTime<Utc>,
    /// Valid time, end: when the fact stopped being true, i.e. when its
    /// successor became true (the successor's `valid_from`, never before
    /// this version's own `valid_from`). `None` while nothing has replaced
    /// it at the read position. When the successor was forgotten, the next
    /// surviving successor's start stands in, or, with none left, the time
    /// the replacement was recorded (`recorded_to`).
    pub valid_to: Option<DateTime<Utc>>,
    /// Recorded time, start: the commit time of the `Extracted` event that
    /// wrote this version.
    pub recorded_from: DateTime<Utc>,
    /// Recorded time, end: the commit time of the `Superseded` event that
    /// replaced it, if that happened by the read position.
    pub recorded_to: Option<DateTime<Utc>>,
    /// When the remembered thing happened, if the caller said.
    pub event_time: Option<DateTime<Utc>>,
    /// Last time recall returned it (UTC); starts at `recorded_from`.
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
            m.recorded_to = None;
        }
        // After a forgotten successor, `next` skips to a later version,
        // which may not exist yet at `at`.
        if m.next.is_some_and(|n| n.0 > at) {
            m.next = None;
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

    /// The time used for recency and date filters: when it happened if
    /// known, else when written (equals `valid_from`).
    pub fn effective_time(&self) -> DateTime<Utc> {
        self.valid_from
    }

    /// Whether this version was true at valid time `t`, as the store knows
    /// now: `valid_from <= t` and (`valid_to` unset or `t < valid_to`).
    pub fn valid_at(&self, t: DateTime<Utc>) -> bool {
        self.valid_from <= t && self.valid_to.is_none_or(|end| t < end)
    }
}

/// A raw observation as the fact table holds it.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize, schemars::JsonSchema)]
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

/// Normalises content for exact-duplicate detection: NFKC, invisible
/// characters ([`crate::text::is_invisible`]) dropped, whitespace
/// runs collapsed to one space (none between Chinese or Japanese characters
/// and their punctuation), trimmed. Case is kept: "the US team" and "the us
/// team", or "Apple" and "apple", can say different things, so neither is
/// a duplicate of the other (the near-duplicate check may still make one a
/// new version of the other, which keeps both texts in the log).
pub(crate) fn normalize_content(s: &str) -> String {
    // ASCII text is its own NFKC form, holds no invisible character and
    // never joins words without a space, so only whitespace changes: the
    // same result as below, several times cheaper (it runs on the writer
    // thread for every memory written and replayed).
    if s.is_ascii() {
        let mut out = String::with_capacity(s.len());
        for word in s.split_whitespace() {
            if !out.is_empty() {
                out.push(' ');
            }
            out.push_str(word);
        }
        return out;
    }
    normalize_unicode(s)
}

/// [`normalize_content`] for any text.
fn normalize_unicode(s: &str) -> String {
    use unicode_normalization::UnicodeNormalization;
    // Text already in NFKC (by the quick check) skips the normalisation.
    let nfkc: String = if crate::text::nfkc_is_identity(s) { s.to_string() } else { s.nfkc().collect() };
    // Invisible characters (zero-width space, BOM, soft hyphen, …) print as
    // nothing, so text that differs only in them is the same text.
    let nfkc: String = if nfkc.chars().any(crate::text::is_invisible) {
        nfkc.chars().filter(|&c| !crate::text::is_invisible(c)).collect()
    } else {
        nfkc
    };
    // Runs of whitespace become one space, except between Chinese or
    // Japanese characters (and their punctuation), which are written
    // without spaces: `猫 起源于 非洲野猫 。` is `猫起源于非洲野猫。`.
    let mut out = String::with_capacity(nfkc.len());
    for word in nfkc.split_whitespace() {
        if let (Some(a), Some(b)) = (out.chars().next_back(), word.chars().next()) {
            if !joins_without_space(a, b) {
                out.push(' ');
            }
        }
        out.push_str(word);
    }
    out
}

/// Whether the characters `a` and `b`, on either side of a space, are
/// written without one: an ideograph or kana beside another or beside
/// punctuation (after NFKC, full-width punctuation is ASCII).
fn joins_without_space(a: char, b: char) -> bool {
    let wide = |c: char| crate::text::is_cjk(c) || matches!(c as u32, 0x3000..=0x303F);
    let punct = |c: char| c.is_ascii_punctuation() || matches!(c as u32, 0x3000..=0x303F);
    (wide(a) && (wide(b) || punct(b))) || (wide(b) && punct(a))
}

#[cfg(test)]
mod tests {
    use super::{normalize_content, normalize_unicode};
    use proptest::prelude::*;

    proptest! {
        /// The ASCII fast path gives what the general rule gives, control
        /// characters and every ASCII whitespace (vertical tab included)
        /// among the inputs.
        #[test]
        fn ascii_fast_path_equals_the_general_rule(s in "[\\x00-\\x7f]{0,80}") {
            prop_assert_eq!(normalize_content(&s), normalize_unicode(&s));
        }
    }

    #[test]
    fn ascii_and_general_texts() {
        assert_eq!(normalize_content("  The User\tLIVES\x0bin   Berlin \r\n"), "The User LIVES in Berlin");
        assert_eq!(normalize_content(""), "");
        assert_eq!(normalize_content("猫 起源于 非洲野猫 。"), "猫起源于非洲野猫。");
        assert_eq!(normalize_content("Ｔｈｅ\u{200B} cat"), "The cat");
        // Case is kept: these say different things.
        assert_ne!(normalize_content("I met the US team"), normalize_content("I met the us team"));
        assert_ne!(normalize_content("Ünal likes Apple"), normalize_content("ünal likes apple"));
    }
}

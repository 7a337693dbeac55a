//! What a new memory version takes from the version it replaces.
//!
//! Callers state only what they know. The writer decides, against the state,
//! whether a write starts a lineage or continues one (same slot key, explicit
//! supersede, near-duplicate, extraction update, promotion), and only then
//! fills the fields the caller left unset: defaults for a first version,
//! the old version's values for a new one. This module is the one place
//! where that happens; the `Extracted` event it produces carries every field
//! resolved, so replay never re-derives it.

use chrono::{DateTime, Utc};

use crate::event::Extracted;
use crate::projection::{normalize_content, Memory};
use crate::types::{Kind, ObservationId, Tier};

/// Kind of a first version when the caller gives none.
pub(crate) const DEFAULT_KIND: Kind = Kind::Fact;
/// Tier of a first version when the caller gives none.
pub(crate) const DEFAULT_TIER: Tier = Tier::LongTerm;
/// Importance of a first version when the caller gives none: the middle of
/// `0.0..=1.0`, so an unrated memory ranks neither up nor down.
pub(crate) const DEFAULT_IMPORTANCE: f32 = 0.5;

/// A memory as the caller stated it: `None` (or, for `sources`, empty)
/// means "not given". Content and quarantine come from the caller's-thread
/// safety stage and are always set.
#[derive(Clone, Debug, Default)]
pub(crate) struct PendingMemory {
    pub(crate) content: String,
    pub(crate) kind: Option<Kind>,
    pub(crate) tier: Option<Tier>,
    pub(crate) importance: Option<f32>,
    pub(crate) entities: Option<Vec<String>>,
    pub(crate) key: Option<String>,
    /// Empty: not given.
    pub(crate) sources: Vec<ObservationId>,
    pub(crate) session: Option<String>,
    pub(crate) event_time: Option<DateTime<Utc>>,
    pub(crate) source_ref: Option<String>,
    pub(crate) quarantine: Option<String>,
}

impl PendingMemory {
    /// The payload of a first version: unset fields take their defaults
    /// ([`DEFAULT_KIND`], [`DEFAULT_TIER`], [`DEFAULT_IMPORTANCE`], no
    /// entities, no sources).
    pub(crate) fn with_defaults(self) -> Extracted {
        Extracted {
            content: self.content,
            kind: self.kind.unwrap_or(DEFAULT_KIND),
            tier: self.tier.unwrap_or(DEFAULT_TIER),
            importance: self.importance.unwrap_or(DEFAULT_IMPORTANCE),
            entities: self.entities.unwrap_or_default(),
            key: self.key,
            sources: self.sources,
            session: self.session,
            event_time: self.event_time,
            source_ref: self.source_ref,
            quarantine: self.quarantine,
        }
    }
}

/// The payload of a version that replaces `base`: every field the caller
/// did not state is inherited from `base`.
///
/// * kind, tier, importance, session and slot key: the caller's, else
///   `base`'s;
/// * provenance (sources and source reference, as a pair): the caller's
///   when either is given (new sources replace the old ones), else `base`'s;
/// * entities: the caller's as given; else those of `base` that still occur
///   in the new content (see [`entity_occurs`]), so an entity that named the
///   old value does not stick to the new one;
/// * event time: the caller's only. A new version is a new fact, true from
///   its own event time (or, unknown, from its write time), never from the
///   old one's;
/// * quarantine: decided on the new content alone.
pub(crate) fn inherit(base: &Memory, new: PendingMemory) -> Extracted {
    let entities = match new.entities {
        Some(given) => given,
        None => {
            let text = crate::text::searchable(&new.content);
            base.entities.iter().filter(|e| entity_occurs(e, &text)).cloned().collect()
        }
    };
    let (sources, source_ref) = if new.sources.is_empty() && new.source_ref.is_none() {
        (base.sources.clone(), base.source_ref.clone())
    } else {
        (new.sources, new.source_ref)
    };
    Extracted {
        kind: new.kind.unwrap_or_else(|| base.kind.clone()),
        tier: new.tier.unwrap_or(base.tier),
        importance: new.importance.unwrap_or(base.importance),
        entities,
        key: new.key.or_else(|| base.key.clone()),
        sources,
        session: new.session.or_else(|| base.session.clone()),
        event_time: new.event_time,
        source_ref,
        quarantine: new.quarantine,
        content: new.content,
    }
}

/// How long a tier keeps a memory: short-term (archived with its session)
/// below long-term (decays) below permanent.
pub(crate) fn lasting(t: Tier) -> u8 {
    match t {
        Tier::ShortTerm => 0,
        Tier::LongTerm => 1,
        Tier::Permanent => 2,
    }
}

/// The payload of a restatement of `base` (a near-duplicate new version, or
/// the same text gaining a slot key): [`inherit`], except that it never
/// keeps the memory for less time or ranks it lower than `base` did. It
/// takes the more lasting tier and the higher importance of the two. A
/// restatement is the same fact said again; saying it again in a
/// short-term session must not let the session's end archive it.
pub(crate) fn restate(base: &Memory, new: PendingMemory) -> Extracted {
    let mut mem = inherit(base, new);
    if lasting(base.tier) > lasting(mem.tier) {
        mem.tier = base.tier;
    }
    mem.importance = mem.importance.max(base.importance);
    mem
}

/// Whether `entity` still occurs in `content`, compared after NFKC,
/// lower-casing and whitespace folding. An entity holding CJK characters
/// (Han, kana, Hangul), which are written without spaces between words,
/// occurs when it is a substring; any other entity must occur as whole
/// words (no letter or digit right before or after it), so `Art` does not
/// occur in "Martha".
pub(crate) fn entity_occurs(entity: &str, content: &str) -> bool {
    let e = normalize_content(entity).to_lowercase();
    if e.is_empty() {
        return false;
    }
    let c = normalize_content(content).to_lowercase();
    if e.chars().any(|ch| crate::text::is_cjk(ch) || is_hangul(ch)) {
        return c.contains(&e);
    }
    let starts_word = e.chars().next().is_some_and(char::is_alphanumeric);
    let ends_word = e.chars().next_back().is_some_and(char::is_alphanumeric);
    c.match_indices(&e).any(|(i, m)| {
        let before_ok = !starts_word || !c[..i].chars().next_back().is_some_and(char::is_alphanumeric);
        let after_ok = !ends_word || !c[i + m.len()..].chars().next().is_some_and(char::is_alphanumeric);
        before_ok && after_ok
    })
}

/// Hangul syllables and jamo: Korean attaches particles to names without a
/// space, so a whole-word test would miss `서울` in `서울에`.
fn is_hangul(c: char) -> bool {
    matches!(c as u32, 0x1100..=0x11FF | 0x3130..=0x318F | 0xAC00..=0xD7AF)
}

/// The payload of a consolidation: one memory replacing several active
/// restatements of the same fact. `rep` is the member whose kind, session
/// and source reference the merged memory keeps (the caller picks it, e.g.
/// the most important); the merged memory takes the highest tier and
/// importance among the members, the union of their entities (at most
/// `max_entities`, first seen first) and sources, a slot key of any member,
/// and, as event time, the earliest valid start among the members (the
/// fact has held since its first restatement held). No entity is dropped:
/// every member states the same fact, so none of them names a replaced
/// value.
pub(crate) fn merge(
    members: &[Memory],
    rep: &Memory,
    content: String,
    quarantine: Option<String>,
    max_entities: usize,
) -> Extracted {
    let mut entities: Vec<String> = Vec::new();
    for e in members.iter().flat_map(|m| m.entities.iter()) {
        if !entities.contains(e) && entities.len() < max_entities {
            entities.push(e.clone());
        }
    }
    let mut sources: Vec<ObservationId> = members.iter().flat_map(|m| m.sources.iter().copied()).collect();
    sources.sort_unstable();
    sources.dedup();
    let tier = members.iter().map(|m| m.tier).max_by_key(|t| tier_rank(*t)).unwrap_or(rep.tier);
    Extracted {
        content,
        kind: rep.kind.clone(),
        tier,
        importance: members.iter().map(|m| m.importance).fold(0.0, f32::max),
        entities,
        key: members.iter().find_map(|m| m.key.clone()),
        sources,
        session: rep.session.clone(),
        event_time: members.iter().map(|m| m.valid_from).min(),
        source_ref: rep.source_ref.clone(),
        quarantine,
    }
}

fn tier_rank(t: Tier) -> u8 {
    match t {
        Tier::ShortTerm => 0,
        Tier::LongTerm => 1,
        Tier::Permanent => 2,
    }
}

#[cfg(test)]
mod tests {
    use super::entity_occurs;

    #[test]
    fn whole_words_outside_cjk_substrings_inside() {
        for (entity, content, want) in [
            ("Oolong", "Prefers oolong tea", true),
            ("Oolong", "Prefers green tea", false),
            ("Sea Biscuit", "Boat is named Sea Biscuit II", true),
            ("sea  BISCUIT", "Boat is named Sea Biscuit II", true),
            ("Art", "Martha paints", false),
            ("Art", "Art, mostly oils", true),
            ("C++", "Writes C++ daily", true),
            ("ＡＰＩ", "the api key", true),
            ("小雨", "林伟的女儿叫小雨，五岁", true),
            ("小雨", "林伟的女儿叫小雪", false),
            ("서울", "서울에 산다", true),
            ("", "anything", false),
        ] {
            assert_eq!(entity_occurs(entity, content), want, "{entity:?} in {content:?}");
        }
    }
}

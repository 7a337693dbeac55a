//! Validation of write operations against the current state, producing the
//! events to append. Runs on the writer thread only; never mutates state.

use std::collections::BTreeSet;

use chrono::{DateTime, Utc};

use crate::dedup::{is_restatement, FactSignature};
use crate::erase::quote::cut_quotes;
use crate::error::{Error, Result};
use crate::event::{
    Accessed, ArchiveReason, Archived, EventBody, Extracted, ForgetTarget, Forgotten, Observed, SupersedeReason,
    Superseded,
};
use crate::projection::{normalize_content, Memory, NsState, State};
use crate::types::{canonical_id, same_id, MemoryId, Namespace, ObservationId, Status};

pub(crate) use super::inherit::{inherit, lasting, restate, PendingMemory};

/// How `remember` treats a memory that repeats an active one.
///
/// Whatever the mode, the caller's text is never dropped: it is either
/// already active word for word, or written as an event.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Default, serde::Serialize, serde::Deserialize, schemars::JsonSchema)]
#[serde(rename_all = "snake_case")]
pub enum DedupMode {
    /// Identical content (after NFKC, whitespace and invisible-character
    /// normalisation; case counts) returns the active memory and writes
    /// nothing — but a memory under another slot key is never a duplicate
    /// (the same words may be the value of two keys), and when the write
    /// names a slot key that the identical memory lacks it is written as a
    /// new version of that memory taking the key (reason `near_duplicate`),
    /// so no key is ever dropped; a restatement — cosine ≥ the
    /// near-duplicate threshold **and** the same facts
    /// ([`crate::dedup::differing_facts`]: numbers, names, content words,
    /// negations, qualifiers, relations, word order) — is
    /// written as a new version superseding the memory it restates (reason
    /// `near_duplicate`); anything else is a new memory.
    #[default]
    Supersede,
    /// Only identical content is a duplicate (under the slot-key rule of
    /// `Supersede`, except that a write naming a key the identical memory
    /// lacks is stored as a memory of its own); a restatement is stored as
    /// a memory of its own (recall still shows one of the pair).
    ExactOnly,
    /// No duplicate detection at all (exact or near): always a new memory.
    Off,
}

/// One write operation, already validated for shape and redacted on the
/// caller's thread.
#[derive(Clone, Debug)]
pub(crate) enum Op {
    Observe(Observed),
    /// A memory as the caller stated it; the plan fills unset fields with
    /// defaults, or inherits them when the memory replaces another.
    /// `vector: None` defers embedding ([`crate::EmbedMode::Deferred`]):
    /// the memory is written without a vector and the near-duplicate check
    /// waits for [`Op::Backfill`].
    Remember {
        mem: PendingMemory,
        vector: Option<Vec<f32>>,
        dedup: DedupMode,
        threshold: f32,
    },
    /// A new version of `old`; unset fields are inherited from it.
    Supersede {
        old: MemoryId,
        mem: PendingMemory,
        vector: Vec<f32>,
        reason: SupersedeReason,
    },
    Forget {
        target: ForgetTarget,
        reason: String,
        requester: Option<String>,
        ids: Vec<MemoryId>,
        /// For `Matching`: the observations whose text is the query's.
        observations: Vec<ObservationId>,
    },
    Access {
        ids: Vec<MemoryId>,
        requester: Option<String>,
        session: Option<String>,
    },
    /// Archive the listed memories that are still active (others are skipped).
    Archive {
        ids: Vec<MemoryId>,
        reason: ArchiveReason,
    },
    /// Write one merged memory (built by [`super::inherit::merge`]) and
    /// supersede every member with it.
    Consolidate {
        members: Vec<MemoryId>,
        mem: Extracted,
        vector: Vec<f32>,
    },
    /// The vector of a memory written without one has arrived (already
    /// indexed by the writer): supersede the older active memory it
    /// restates, if any, as the synchronous write would have, unless that
    /// memory's tier is more lasting (the new memory keeps the fields it
    /// was written with, so both stay active).
    Backfill {
        id: MemoryId,
        dedup: DedupMode,
        threshold: f32,
    },
}

/// How a remember or supersede call was resolved.
#[derive(Clone, Debug, PartialEq, serde::Serialize, serde::Deserialize, schemars::JsonSchema)]
#[serde(rename_all = "snake_case", tag = "action")]
pub enum RememberAction {
    /// A new memory was written.
    Created,
    /// Identical content (after NFKC, whitespace and invisible-character
    /// normalisation; case counts) was already active; nothing was written
    /// and the existing id is returned.
    Duplicate,
    /// The new memory restates an active one (cosine ≥ the near-duplicate
    /// threshold and the same facts) and was written as its new version
    /// (reason `near_duplicate`); the returned id is the new version.
    NearDuplicate {
        /// The restated version, now superseded.
        old: MemoryId,
        /// Cosine similarity of the two, in `-1.0..=1.0`.
        similarity: f32,
    },
    /// The new memory superseded an older version (same slot key or an
    /// explicit supersede).
    Superseded {
        /// The replaced version.
        old: MemoryId,
    },
    /// A supersede whose content equals the old content: nothing was written.
    Unchanged,
}

/// Counts of what a forget erased.
#[derive(Clone, Debug, Default, PartialEq, Eq, serde::Serialize, serde::Deserialize, schemars::JsonSchema)]
pub struct ForgetOutcome {
    /// Memory versions erased (whole version chains count every version).
    pub memories: usize,
    /// Observations erased.
    pub observations: usize,
    /// Memory versions erased because they were derived from erased
    /// observations (see [`crate::ForgetRequest::Observation`]).
    pub derived_memories: usize,
    /// The memory ids erased.
    pub memory_ids: Vec<MemoryId>,
    /// The observation ids erased.
    pub observation_ids: Vec<ObservationId>,
    /// Spans of the reason (and requester) replaced by `[erased]` because
    /// they copied a forgotten text verbatim: the whole text when it is 8
    /// bytes or more, or any 16 bytes or more of a longer one. The reason
    /// is kept after compaction, so it may not carry what it erases. 0 for
    /// a dry run.
    pub quotes_cut: usize,
    /// True when the forget of a whole namespace of an encrypted store
    /// destroyed the namespace's data key in the same group commit
    /// ([`crate::crypt`]): every copy of its records (the log until
    /// compaction, backups, exports) is unreadable from then on. In a dry
    /// run: true when the forget would destroy it. Left out of JSON when
    /// false.
    #[serde(default, skip_serializing_if = "std::ops::Not::not")]
    pub key_shredded: bool,
}

/// The outcome of one op.
#[derive(Clone, Debug)]
pub(crate) enum OpOutcome {
    Observed(ObservationId),
    Remembered { id: MemoryId, action: RememberAction },
    Forgot(ForgetOutcome),
    Accessed,
    Archived(Vec<MemoryId>),
    Backfilled,
}

/// The events an op will append. `Extracted` events carry their vector;
/// `new_id_slot` marks where the id of the new memory will be known.
pub(crate) struct Plan {
    pub(crate) bodies: Vec<(EventBody, Option<Vec<f32>>)>,
    pub(crate) outcome: PlannedOutcome,
}

/// An outcome whose ids may depend on the `Seq`s assigned at append.
pub(crate) enum PlannedOutcome {
    /// The id is the `Seq` of the body at this index.
    NewObservation(usize),
    NewMemory {
        body_idx: usize,
        action: RememberAction,
    },
    Existing {
        id: MemoryId,
        action: RememberAction,
    },
    Forgot(ForgetOutcome),
    Accessed,
    Archived(Vec<MemoryId>),
    Backfilled,
}

fn mem_not_found(ns: &Namespace, id: MemoryId) -> Error {
    Error::not_found(format!("memory {id} in namespace {ns}"))
}

/// A session that no memory or observation of `ns` carries and that no
/// earlier forget named.
fn session_not_found(ns: &Namespace, session: &str) -> Error {
    Error::not_found(format!("session {session:?} in namespace {ns}"))
}

pub(crate) fn plan(state: &State, ns: &Namespace, op: Op, next_seq: u64) -> Result<Plan> {
    let st = state.ns(ns);
    match op {
        Op::Observe(o) => {
            Ok(Plan { bodies: vec![(EventBody::Observed(o), None)], outcome: PlannedOutcome::NewObservation(0) })
        }
        Op::Remember { mem, vector, dedup, threshold } => {
            plan_remember(st, ns, mem, vector, dedup, threshold, next_seq)
        }
        Op::Supersede { old, mem, vector, reason } => {
            let st = st.ok_or_else(|| mem_not_found(ns, old))?;
            let cur = st.memories.get(&old).ok_or_else(|| mem_not_found(ns, old))?;
            if cur.status != Status::Active {
                return Err(Error::Conflict(format!(
                    "memory {old} is {} (latest version: {}); supersede the latest version",
                    cur.status,
                    st.chain(old).last().copied().unwrap_or(old)
                )));
            }
            refuse_backdated(mem.event_time, cur)?;
            let mem = inherit(cur, mem);
            check_sources(st, ns, &mem.sources)?;
            // At most one active memory holds a slot key (a quarantined
            // version holds none, so it is not checked).
            let holds = mem.quarantine.is_none();
            if let Some(holder) =
                mem.key.as_deref().filter(|_| holds).and_then(|k| st.key_holder(k)).filter(|&h| h != old)
            {
                return Err(Error::Conflict(format!(
                    "key {:?} is held by memory {holder}; supersede that memory instead",
                    mem.key.as_deref().unwrap_or_default()
                )));
            }
            // A promotion keeps the content and changes the tier.
            if reason != SupersedeReason::Promoted && normalize_content(&cur.content) == normalize_content(&mem.content)
            {
                return Ok(Plan {
                    bodies: vec![],
                    outcome: PlannedOutcome::Existing { id: old, action: RememberAction::Unchanged },
                });
            }
            refuse_quarantined(mem.quarantine.as_deref(), cur)?;
            Ok(supersede_plan(old, mem, Some(vector), reason, next_seq))
        }
        Op::Forget { target, reason, requester, ids, observations } => {
            plan_forget(st, ns, target, reason, requester, ids, observations)
        }
        Op::Archive { ids, reason } => {
            let active =
                |id: &MemoryId| st.and_then(|s| s.memories.get(id)).is_some_and(|m| m.status == Status::Active);
            let mut ids: Vec<MemoryId> = ids.into_iter().filter(|i| active(i)).collect();
            ids.sort_unstable();
            ids.dedup();
            if ids.is_empty() {
                return Ok(Plan { bodies: vec![], outcome: PlannedOutcome::Archived(vec![]) });
            }
            Ok(Plan {
                bodies: vec![(EventBody::Archived(Archived { ids: ids.clone(), reason }), None)],
                outcome: PlannedOutcome::Archived(ids),
            })
        }
        Op::Consolidate { members, mem, vector } => {
            let first = members.first().copied().unwrap_or(MemoryId(0));
            let st = st.ok_or_else(|| mem_not_found(ns, first))?;
            for id in &members {
                let m = st.memories.get(id).ok_or_else(|| mem_not_found(ns, *id))?;
                if m.status != Status::Active {
                    return Err(Error::Conflict(format!("memory {id} is {}; only active memories merge", m.status)));
                }
                refuse_quarantined(mem.quarantine.as_deref(), m)?;
            }
            if members.len() < 2 {
                return Err(Error::invalid("members", "a consolidation merges at least two memories"));
            }
            check_sources(st, ns, &mem.sources)?;
            if let Some(holder) = mem.key.as_deref().and_then(|k| st.key_holder(k)).filter(|h| !members.contains(h)) {
                return Err(Error::Conflict(format!("key held by memory {holder}, not a member")));
            }
            let new = MemoryId(next_seq);
            let mut bodies = vec![(EventBody::Extracted(mem), Some(vector))];
            for old in &members {
                bodies.push((
                    EventBody::Superseded(Superseded { old: *old, new, reason: SupersedeReason::Consolidated }),
                    None,
                ));
            }
            Ok(Plan { bodies, outcome: PlannedOutcome::NewMemory { body_idx: 0, action: RememberAction::Created } })
        }
        Op::Backfill { id, dedup, threshold } => Ok(plan_backfill(st, id, dedup, threshold)),
        Op::Access { ids, requester, session } => {
            let Some(st) = st else {
                return Ok(Plan { bodies: vec![], outcome: PlannedOutcome::Accessed });
            };
            let ids: Vec<MemoryId> = ids.into_iter().filter(|i| st.memories.contains_key(i)).collect();
            if ids.is_empty() {
                return Ok(Plan { bodies: vec![], outcome: PlannedOutcome::Accessed });
            }
            Ok(Plan {
                bodies: vec![(EventBody::Accessed(Accessed { ids, requester, session }), None)],
                outcome: PlannedOutcome::Accessed,
            })
        }
    }
}

fn supersede_plan(
    old: MemoryId,
    mem: Extracted,
    vector: Option<Vec<f32>>,
    reason: SupersedeReason,
    next_seq: u64,
) -> Plan {
    let new = MemoryId(next_seq);
    Plan {
        bodies: vec![
            (EventBody::Extracted(mem), vector),
            (EventBody::Superseded(Superseded { old, new, reason }), None),
        ],
        outcome: PlannedOutcome::NewMemory { body_idx: 0, action: RememberAction::Superseded { old } },
    }
}

/// `mem` written as a new version of `old` (held in `base`), which it
/// restates: it inherits what it does not restate, its slot key included,
/// and never a shorter tier or a lower importance ([`restate`]) (reason
/// `near_duplicate`, action `NearDuplicate` with `similarity`).
fn restatement_plan(
    old: MemoryId,
    base: &Memory,
    mem: PendingMemory,
    vector: Option<Vec<f32>>,
    similarity: f32,
    next_seq: u64,
) -> Plan {
    let mem = restate(base, mem);
    let mut plan = supersede_plan(old, mem, vector, SupersedeReason::NearDuplicate, next_seq);
    plan.outcome = PlannedOutcome::NewMemory { body_idx: 0, action: RememberAction::NearDuplicate { old, similarity } };
    plan
}

/// Refuses a new version of `cur` whose stated event time lies before
/// `cur`'s stated one: a version is valid from its event time until its
/// successor's, so an older value written as the successor would become
/// the current one and leave the newer value valid for no time at all
/// (a backfilled history written out of order). `Conflict`, naming both
/// times; nothing is written. Only two stated times are compared: a write
/// without an event time is valid from when it is written and is never
/// refused here, and a `cur` written without one (valid from its write) is
/// replaced as before, ending at its own start.
fn refuse_backdated(event_time: Option<DateTime<Utc>>, cur: &Memory) -> Result<()> {
    match event_time {
        Some(t) if cur.event_time.is_some() && t < cur.valid_from => Err(Error::Conflict(format!(
            "memory {} is valid from {}, after this version's event time {}: a new version replaces it from \
             its own time on, so this older value would displace the newer one; write it as a memory of its \
             own (without the key), or with a later event time",
            cur.id,
            cur.valid_from.to_rfc3339_opts(chrono::SecondsFormat::AutoSi, true),
            t.to_rfc3339_opts(chrono::SecondsFormat::AutoSi, true)
        ))),
        _ => Ok(()),
    }
}

/// Refuses to let a version quarantined as an injected instruction replace
/// `cur`, a version that is not: `cur` would leave recall and the profile
/// for text nobody may see. A quarantined version may replace a quarantined
/// one (a promotion). `InvalidInput` on `content`; nothing is written.
fn refuse_quarantined(quarantine: Option<&str>, cur: &Memory) -> Result<()> {
    match (quarantine, &cur.quarantine) {
        (Some(reason), None) => Err(Error::invalid(
            "content",
            format!(
                "quarantined as an injected instruction ({reason}); a quarantined version never replaces \
                 memory {}, which is not: remember it as a new memory to keep it, flagged",
                cur.id
            ),
        )),
        _ => Ok(()),
    }
}

fn check_sources(st: &NsState, ns: &Namespace, sources: &[ObservationId]) -> Result<()> {
    for s in sources {
        if !st.observations.contains_key(s) {
            return Err(Error::not_found(format!("observation {s} in namespace {ns}")));
        }
    }
    Ok(())
}

fn plan_remember(
    st: Option<&NsState>,
    ns: &Namespace,
    mem: PendingMemory,
    vector: Option<Vec<f32>>,
    dedup: DedupMode,
    threshold: f32,
    next_seq: u64,
) -> Result<Plan> {
    let Some(st) = st else {
        if let Some(s) = mem.sources.first() {
            return Err(Error::not_found(format!("observation {s} in namespace {ns}")));
        }
        return Ok(Plan {
            bodies: vec![(EventBody::Extracted(mem.with_defaults()), vector)],
            outcome: PlannedOutcome::NewMemory { body_idx: 0, action: RememberAction::Created },
        });
    };
    check_sources(st, ns, &mem.sources)?;
    let norm = normalize_content(&mem.content);
    // A quarantined memory is inert: it is stored and flagged, but never
    // replaces a slot key's value or a memory it resembles (the current
    // value would leave recall and the profile for text nobody may see).
    let quarantined = mem.quarantine.is_some();
    // A slot key names the current value: its holder is either the same
    // content (a duplicate) or replaced, whatever else holds this text.
    if let Some(key) = mem.key.as_ref().filter(|_| !quarantined) {
        if let Some((old, holder)) = st.key_holder(key).and_then(|id| st.memories.get(&id).map(|m| (id, m))) {
            if dedup != DedupMode::Off && normalize_content(&holder.content) == norm {
                return Ok(Plan {
                    bodies: vec![],
                    outcome: PlannedOutcome::Existing { id: old, action: RememberAction::Duplicate },
                });
            }
            refuse_backdated(mem.event_time, holder)?;
            // The same fact said again under its key (a near-duplicate of
            // the value it replaces) is a restatement: it keeps the more
            // lasting tier and the higher importance.
            let restates = dedup == DedupMode::Supersede
                && vector.as_deref().and_then(|v| st.vectors.similarity(old.0, v)).is_some_and(|sim| {
                    is_restatement(
                        sim,
                        threshold,
                        &FactSignature::of(&mem.content),
                        &FactSignature::of(&holder.content),
                    )
                });
            let mem = if restates { restate(holder, mem) } else { inherit(holder, mem) };
            return Ok(supersede_plan(old, mem, vector, SupersedeReason::SameKey, next_seq));
        }
    }
    if dedup != DedupMode::Off {
        // Only a memory quarantined alike is the same memory: clean text is
        // never folded into a quarantined version, nor the other way round.
        // A text held under another slot key is another memory (the same
        // words can be the value of two keys: "Lives in Berlin" for
        // `user.city` and for `partner.city`), as the near-duplicate rule
        // has it too.
        let alike = |id: &MemoryId| {
            st.memories.get(id).is_some_and(|m| {
                m.quarantine.is_some() == quarantined
                    && !matches!((mem.key.as_ref(), m.key.as_ref()), (Some(a), Some(b)) if !same_id(a, b))
            })
        };
        if let Some(existing) = st.same_text(&norm).rev().find(alike) {
            let holder = st.memories.get(&existing).filter(|m| m.key.is_none() && mem.key.is_some());
            if let Some(base) = holder.filter(|_| dedup == DedupMode::Supersede && !quarantined) {
                // The same text, now under a slot key: a new version that
                // takes the key, never a duplicate that drops it.
                let similarity = vector.as_deref().and_then(|v| st.vectors.similarity(existing.0, v)).unwrap_or(1.0);
                return Ok(restatement_plan(existing, base, mem, vector, similarity, next_seq));
            }
            if holder.is_none() {
                return Ok(Plan {
                    bodies: vec![],
                    outcome: PlannedOutcome::Existing { id: existing, action: RememberAction::Duplicate },
                });
            }
        }
    }
    let nonzero = vector.as_ref().filter(|v| v.iter().any(|x| *x != 0.0));
    if let Some(v) = nonzero.filter(|_| dedup == DedupMode::Supersede && !quarantined) {
        if let Some((old, base, similarity)) = restated(st, &mem.content, mem.key.as_deref(), v, threshold, None) {
            return Ok(restatement_plan(old, base, mem, vector, similarity, next_seq));
        }
    }
    Ok(Plan {
        bodies: vec![(EventBody::Extracted(mem.with_defaults()), vector)],
        outcome: PlannedOutcome::NewMemory { body_idx: 0, action: RememberAction::Created },
    })
}

/// The near-duplicate decision of a memory whose vector arrived after its
/// write (deferred embedding), as one event: `Superseded { old, new: id,
/// reason: near_duplicate }` when `id` is still active and restates an
/// active memory written before it (a lower id: log order decides, so a
/// later write is never made the older version of an earlier one). A
/// restated memory under a slot key is passed over unless `id` holds the
/// same key: the new version was written with its own fields and cannot
/// take over the slot. Nothing is dropped: both texts stay in the version
/// chain.
fn plan_backfill(st: Option<&NsState>, id: MemoryId, dedup: DedupMode, threshold: f32) -> Plan {
    let none = || Plan { bodies: vec![], outcome: PlannedOutcome::Backfilled };
    if dedup != DedupMode::Supersede {
        return none();
    }
    let Some(st) = st else {
        return none();
    };
    // A version that already replaced another (a keyed update, or this
    // decision made before a crash) is not checked again.
    let Some(m) =
        st.memories.get(&id).filter(|m| m.status == Status::Active && m.prev.is_none() && m.quarantine.is_none())
    else {
        return none();
    };
    let Some(v) = st.vectors.get(id.0).filter(|v| v.iter().any(|x| *x != 0.0)) else {
        return none();
    };
    let Some((old, base, _)) = restated(st, &m.content, m.key.as_deref(), &v, threshold, Some(id)) else {
        return none();
    };
    // The new memory was written with its own fields: it replaces no
    // memory meant to last longer (a permanent fact said again in a
    // short-term session would be archived with the session).
    if lasting(base.tier) > lasting(m.tier) {
        return none();
    }
    Plan {
        bodies: vec![(
            EventBody::Superseded(Superseded { old, new: id, reason: SupersedeReason::NearDuplicate }),
            None,
        )],
        outcome: PlannedOutcome::Backfilled,
    }
}

/// Active memories searched for one that `mem` restates.
const RESTATEMENT_CANDIDATES: usize = 8;

/// The best-ranked active memory that `mem` restates: cosine ≥ `threshold`
/// and the same facts ([`crate::dedup::is_restatement`]), and no other slot
/// key than `mem`'s. A nearer memory with other facts (a changed number,
/// name or negation) is passed over, never merged.
///
/// With `before: Some(id)` (a late decision for memory `id`), only memories
/// with a lower id qualify (still active now, so active when `id` was
/// written too), and a memory under a slot key only when `key` is the same.
fn restated<'a>(
    st: &'a NsState,
    content: &str,
    key: Option<&str>,
    vector: &[f32],
    threshold: f32,
    before: Option<MemoryId>,
) -> Option<(MemoryId, &'a Memory, f32)> {
    let active = |id: u64| {
        st.memories.get(&MemoryId(id)).is_some_and(|m| {
            m.status == Status::Active
                && m.quarantine.is_none()
                && before
                    .is_none_or(|b| m.id < b && m.key.as_ref().is_none_or(|k| key.is_some_and(|key| same_id(key, k))))
        })
    };
    let hits = st.vectors.search_near(vector, RESTATEMENT_CANDIDATES, &active);
    let mut sig = None;
    for (id, similarity) in hits {
        if similarity < threshold {
            continue;
        }
        let Some(m) = st.memories.get(&MemoryId(id)) else {
            continue;
        };
        if matches!((key, &m.key), (Some(a), Some(b)) if !same_id(a, b)) {
            continue;
        }
        let sig = sig.get_or_insert_with(|| FactSignature::of(content));
        if is_restatement(similarity, threshold, sig, &FactSignature::of(&m.content)) {
            return Some((m.id, m, similarity));
        }
    }
    None
}

fn plan_forget(
    st: Option<&NsState>,
    ns: &Namespace,
    target: ForgetTarget,
    reason: String,
    requester: Option<String>,
    ids: Vec<MemoryId>,
    matched_observations: Vec<ObservationId>,
) -> Result<Plan> {
    let empty = || Plan { bodies: vec![], outcome: PlannedOutcome::Forgot(ForgetOutcome::default()) };
    // A target the caller names (an id, a session, the namespace) must
    // exist, or have been forgotten before; a search (`Matching`) that
    // finds nothing is an empty outcome.
    let Some(st) = st else {
        return match target {
            ForgetTarget::Memory(id) => Err(mem_not_found(ns, id)),
            ForgetTarget::Observation(id) => Err(Error::not_found(format!("observation {id} in namespace {ns}"))),
            ForgetTarget::Session(s) => Err(session_not_found(ns, &s)),
            ForgetTarget::Namespace => {
                Err(Error::not_found(format!("namespace {ns} (nothing was ever written to it)")))
            }
            ForgetTarget::Matching => Ok(empty()),
        };
    };
    let mut mems: BTreeSet<MemoryId> = BTreeSet::new();
    let mut obs: BTreeSet<ObservationId> = BTreeSet::new();
    match &target {
        ForgetTarget::Memory(id) => {
            if st.forgotten_memories.contains(id) {
                return Ok(empty());
            }
            if !st.memories.contains_key(id) {
                return Err(mem_not_found(ns, *id));
            }
            mems.extend(st.chain(*id));
        }
        ForgetTarget::Observation(id) => {
            if st.forgotten_observations.contains(id) {
                return Ok(empty());
            }
            if !st.observations.contains_key(id) {
                return Err(Error::not_found(format!("observation {id} in namespace {ns}")));
            }
            obs.insert(*id);
        }
        ForgetTarget::Session(s) => {
            // Sessions are compared in their identifier form: turns stored
            // under `Charlène` precomposed or decomposed are one session's.
            let form = canonical_id(s);
            let same = |t: &str| t == form.as_ref() || canonical_id(t) == form;
            obs.extend(st.observations.values().filter(|o| same(&o.session)).map(|o| o.id));
            mems.extend(st.memories.values().filter(|m| m.session.as_deref().is_some_and(same)).map(|m| m.id));
            if obs.is_empty()
                && mems.is_empty()
                && !st.forgotten_sessions.contains(&crate::log::fnv1a64(form.as_bytes()))
            {
                return Err(session_not_found(ns, s));
            }
        }
        ForgetTarget::Namespace => {
            obs.extend(st.observations.keys().copied());
            mems.extend(st.memories.keys().copied());
        }
        ForgetTarget::Matching => {
            for id in &ids {
                match st.memories.get(id) {
                    // The current value: its whole chain, as by id.
                    Some(m) if m.status == Status::Active => mems.extend(st.chain(*id)),
                    // An older or archived version matched by its text: that
                    // version alone; the value that replaced it stays.
                    Some(_) => {
                        mems.insert(*id);
                    }
                    None => {}
                }
            }
            // A turn that says the text, as the memory does: the user who
            // asks to forget the words means the conversation too.
            obs.extend(matched_observations.iter().filter(|id| st.observations.contains_key(id)));
        }
    }
    let derived = if obs.is_empty() { 0 } else { derived_from(st, &obs, &mut mems) };
    if mems.is_empty() && obs.is_empty() {
        return Ok(empty());
    }
    // The reason and requester outlive compaction: no copy of what they
    // erase may stay in them.
    let texts = || {
        mems.iter()
            .filter_map(|id| st.memories.get(id).map(|m| m.content.as_str()))
            .chain(obs.iter().filter_map(|id| st.observations.get(id).map(|o| o.text.as_str())))
    };
    let (reason, mut cut) = cut_quotes(&reason, texts());
    let requester = requester.map(|r| {
        let (r, n) = cut_quotes(&r, texts());
        cut += n;
        r
    });
    let outcome = ForgetOutcome {
        memories: mems.len(),
        observations: obs.len(),
        derived_memories: derived,
        memory_ids: mems.iter().copied().collect(),
        observation_ids: obs.iter().copied().collect(),
        quotes_cut: cut,
        key_shredded: false,
    };
    let body = EventBody::Forgotten(Forgotten {
        target,
        reason,
        requester,
        memories: outcome.memory_ids.clone(),
        observations: outcome.observation_ids.clone(),
    });
    Ok(Plan { bodies: vec![(body, None)], outcome: PlannedOutcome::Forgot(outcome) })
}

/// Adds to `mems` what erasing the observations `obs` takes with it, and
/// returns how many versions that added:
///
/// * every memory version whose sources are all erased (now or before);
/// * every whole version chain in which some version cites an observation
///   of `obs` and whose latest version is left without a source that is
///   not erased. A version that does not restate its sources inherits
///   them, so a chain that grew from one observation goes with it, however
///   many versions it has; a chain whose latest version rests on another
///   surviving observation stays (less its versions of the first kind).
fn derived_from(st: &NsState, obs: &BTreeSet<ObservationId>, mems: &mut BTreeSet<MemoryId>) -> usize {
    let erased = |s: &ObservationId| obs.contains(s) || st.forgotten_observations.contains(s);
    let mut derived = 0usize;
    for m in st.memories.values() {
        if !m.sources.is_empty() && m.sources.iter().all(erased) && mems.insert(m.id) {
            derived += 1;
        }
    }
    let mut seen: BTreeSet<MemoryId> = BTreeSet::new();
    for m in st.memories.values() {
        if seen.contains(&m.id) || !m.sources.iter().any(|s| obs.contains(s)) {
            continue;
        }
        let chain = st.chain(m.id);
        seen.extend(chain.iter().copied());
        let supported = chain
            .last()
            .and_then(|latest| st.memories.get(latest))
            .is_some_and(|latest| latest.sources.iter().any(|s| !erased(s)));
        if !supported {
            derived += chain.into_iter().filter(|id| mems.insert(*id)).count();
        }
    }
    derived
}

/// What a forget would erase, computed against `state` without writing.
pub(crate) fn forget_preview(
    state: &State,
    ns: &Namespace,
    target: ForgetTarget,
    reason: String,
    ids: Vec<MemoryId>,
    observations: Vec<ObservationId>,
) -> Result<ForgetOutcome> {
    match plan_forget(state.ns(ns), ns, target, reason, None, ids, observations)?.outcome {
        PlannedOutcome::Forgot(f) => Ok(f),
        _ => Ok(ForgetOutcome::default()),
    }
}

#[cfg(test)]
#[path = "restated_tests.rs"]
mod restated_tests;

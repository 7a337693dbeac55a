//! Memory tiers and lifecycle: ending sessions, decay, session expiry,
//! capacity and consolidation.
//!
//! Every decision is an event (`Archived`, or `Extracted` + `Superseded`),
//! so replay reproduces it without recomputing anything: the maintenance
//! step takes `now` as a parameter and the log records what it chose.

mod consolidate;

pub use consolidate::{Consolidation, MergeFn};

use std::collections::{BTreeMap, BTreeSet};

use chrono::{DateTime, Utc};

use crate::engine::Engine;
use crate::error::{Error, Result};
use crate::event::{ArchiveReason, SupersedeReason};
use crate::projection::Memory;
use crate::types::{canonical_id, same_id, MemoryId, Namespace, Status, Tier};
use crate::writer::{Op, OpOutcome, PendingMemory};

/// What [`Engine::end_session`] did.
#[derive(Clone, Debug, Default, PartialEq, serde::Serialize, serde::Deserialize, schemars::JsonSchema)]
pub struct SessionEnd {
    /// Short-term memories archived.
    pub archived: Vec<MemoryId>,
    /// Promoted memories: (short-term version, new long-term version).
    pub promoted: Vec<(MemoryId, MemoryId)>,
    /// Promotions refused, with the reason (not a short-term memory of the
    /// session, not active, unknown).
    pub rejected: Vec<(MemoryId, String)>,
}

/// What [`Engine::maintain`] changed.
#[derive(Clone, Debug, Default, PartialEq, serde::Serialize, serde::Deserialize, schemars::JsonSchema)]
pub struct MaintenanceReport {
    /// Long-term memories archived because their strength fell below the threshold.
    pub decayed: Vec<MemoryId>,
    /// Short-term memories archived because their session was idle too long.
    pub expired: Vec<MemoryId>,
    /// Memories archived to bring the namespace under its capacity.
    pub capacity: Vec<MemoryId>,
    /// Clusters merged.
    pub consolidated: Vec<Consolidation>,
}

impl MaintenanceReport {
    /// True when nothing changed.
    pub fn is_empty(&self) -> bool {
        self.decayed.is_empty() && self.expired.is_empty() && self.capacity.is_empty() && self.consolidated.is_empty()
    }
}

/// Long-term strength at `now`: importance × 0.5^(days since last access / half-life).
pub(crate) fn strength(m: &Memory, now: DateTime<Utc>, half_life_days: f64) -> f64 {
    let days = (now - m.last_access).num_microseconds().unwrap_or(i64::MAX) as f64 / 86_400e6;
    f64::from(m.importance) * 0.5f64.powf(days.max(0.0) / half_life_days)
}

impl Engine {
    fn active(&self, ns: &Namespace) -> Vec<Memory> {
        let state = self.shared().state.read();
        let at = state.visible;
        let Some(st) = state.ns(ns) else {
            return Vec::new();
        };
        st.memories
            .values()
            .filter(|m| m.visible_at(at) && m.status_at(at) == Status::Active)
            .map(|m| m.view_at(at))
            .collect()
    }

    fn half_life_days(&self) -> f64 {
        self.config().half_life.as_secs_f64() / 86_400.0
    }

    /// Ends `session`: its active short-term memories are archived (left
    /// out of default recall and `list`, kept in history), except those in
    /// `promote`, which get a new long-term version (`Superseded`, reason
    /// `promoted`). Everything is written in one command (one group commit).
    ///
    /// # Errors
    /// [`Error::InvalidInput`] for an empty or oversized session id;
    /// [`Error::Poisoned`] / [`Error::Closed`].
    pub fn end_session(&self, ns: &Namespace, session: &str, promote: &[MemoryId]) -> Result<SessionEnd> {
        crate::engine::write::check_short("session", session, crate::engine::write::MAX_SESSION_BYTES, false)?;
        let short: Vec<Memory> = self
            .active(ns)
            .into_iter()
            .filter(|m| m.tier == Tier::ShortTerm && m.session.as_deref().is_some_and(|s| same_id(s, session)))
            .collect();
        let mut out = SessionEnd::default();
        let wanted: BTreeSet<MemoryId> = promote.iter().copied().collect();
        let mut ops = Vec::new();
        let mut promoting = Vec::new();
        for id in &wanted {
            match short.iter().find(|m| m.id == *id) {
                Some(m) => {
                    let vector = self.vector_of(ns, m)?;
                    ops.push(Op::Supersede {
                        old: m.id,
                        mem: promoted_payload(m),
                        vector,
                        reason: SupersedeReason::Promoted,
                    });
                    promoting.push(m.id);
                }
                None => out.rejected.push((*id, format!("not an active short-term memory of session {session:?}"))),
            }
        }
        let archive: Vec<MemoryId> = short.iter().map(|m| m.id).filter(|id| !wanted.contains(id)).collect();
        if !archive.is_empty() {
            ops.push(Op::Archive { ids: archive, reason: ArchiveReason::SessionEnded });
        }
        if ops.is_empty() {
            return Ok(out);
        }
        let results = self.run(ns, ops)?;
        for (i, r) in results.into_iter().enumerate() {
            match r {
                Ok(OpOutcome::Remembered { id, .. }) => out.promoted.push((promoting[i], id)),
                Ok(OpOutcome::Archived(ids)) => out.archived = ids,
                Ok(_) => {}
                Err(e) if i < promoting.len() => out.rejected.push((promoting[i], e.to_string())),
                Err(e) => return Err(e),
            }
        }
        Ok(out)
    }

    /// The memory's vector as the log's vector cache keeps it (its `f16`
    /// row widened; an older store's entry in `f32`), else from the index
    /// (its `f16` row widened), else its content embedded again. Callers
    /// write it to the cache for a new version.
    pub(crate) fn vector_of(&self, ns: &Namespace, m: &Memory) -> Result<Vec<f32>> {
        let shared = self.shared();
        let row = |shared: &crate::writer::Shared| {
            let state = shared.state.read();
            state.ns(ns).and_then(|st| st.vectors.get(m.id.0))
        };
        // Only a memory with a live vector in the index has one to copy.
        let indexed_dim = {
            let state = shared.state.read();
            state.ns(ns).filter(|st| st.vectors.contains(m.id.0)).map(|st| st.vectors.dim())
        };
        let cached = match indexed_dim {
            Some(dim) => match shared.store().get_vector(&shared.model_id, m.id)?.map(|c| c.vector) {
                Some(v) if v.len() == dim => Some(v),
                _ => row(shared),
            },
            None => None,
        };
        match cached {
            Some(v) => Ok(v),
            None => {
                let p = crate::engine::write::Prepared {
                    text: m.content.clone(),
                    redactions: Default::default(),
                    quarantine: None,
                    entities: None,
                };
                let nm = crate::NewMemory::new(m.content.clone());
                self.vectors_for(&[(&nm, &p)])?.pop().ok_or(Error::Closed)
            }
        }
    }

    /// Runs the deterministic maintenance step on `ns` as of `now`:
    /// session expiry (short-term memories of sessions idle longer than
    /// `session_timeout`; a session's last activity is the latest write,
    /// observation or recall of anything in it), decay (long-term memories whose strength
    /// importance × 0.5^(days since last access / half-life) is below
    /// `archive_threshold`), capacity (the weakest long-term, then
    /// short-term, memories beyond `capacity`), then consolidation
    /// ([`Engine::consolidate`]). Permanent memories never decay, expire or
    /// archive. Each decision is written as an event, so replay reproduces
    /// it; running it twice with the same `now` changes nothing the second
    /// time.
    ///
    /// # Errors
    /// [`Error::Poisoned`] / [`Error::Closed`]; embedding errors from
    /// consolidation.
    pub fn maintain(&self, ns: &Namespace, now: DateTime<Utc>) -> Result<MaintenanceReport> {
        let mut report = MaintenanceReport::default();
        let cfg = self.config();
        let hl = self.half_life_days();
        let active = self.active(ns);

        // Session expiry: last activity of each session holding short-term memories.
        // Sessions by their identifier form (NFKC).
        let mut last_activity: BTreeMap<String, DateTime<Utc>> = BTreeMap::new();
        for m in &active {
            if let Some(s) = &m.session {
                let t = last_activity.entry(canonical_id(s).into_owned()).or_insert(m.last_access);
                *t = (*t).max(m.last_access).max(m.recorded_from);
            }
        }
        for o in self.observations(ns, None) {
            if let Some(t) = last_activity.get_mut(canonical_id(&o.session).as_ref()) {
                *t = (*t).max(o.recorded_at);
            }
        }
        let timeout = chrono::Duration::from_std(cfg.session_timeout).unwrap_or(chrono::Duration::MAX);
        let expired: Vec<MemoryId> = active
            .iter()
            .filter(|m| m.tier == Tier::ShortTerm)
            .filter(|m| {
                // A short-term memory without a session idles on its own.
                let last = m
                    .session
                    .as_ref()
                    .and_then(|s| last_activity.get(canonical_id(s).as_ref()))
                    .copied()
                    .unwrap_or(m.last_access);
                now.signed_duration_since(last) > timeout
            })
            .map(|m| m.id)
            .collect();

        let decayed: Vec<MemoryId> = active
            .iter()
            .filter(|m| m.tier == Tier::LongTerm && !expired.contains(&m.id))
            .filter(|m| strength(m, now, hl) < f64::from(cfg.archive_threshold))
            .map(|m| m.id)
            .collect();

        let mut capacity = Vec::new();
        if let Some(cap) = cfg.capacity {
            let gone: BTreeSet<MemoryId> = expired.iter().chain(&decayed).copied().collect();
            let left: Vec<&Memory> = active.iter().filter(|m| !gone.contains(&m.id)).collect();
            if left.len() > cap {
                let mut cands: Vec<(u8, f64, MemoryId)> = left
                    .iter()
                    .filter_map(|m| match m.tier {
                        Tier::LongTerm => Some((0, strength(m, now, hl), m.id)),
                        Tier::ShortTerm => Some((1, strength(m, now, hl), m.id)),
                        Tier::Permanent => None,
                    })
                    .collect();
                cands.sort_by(|a, b| a.0.cmp(&b.0).then(a.1.total_cmp(&b.1)).then(a.2.cmp(&b.2)));
                capacity = cands.into_iter().take(left.len() - cap).map(|c| c.2).collect();
            }
        }

        let mut ops = Vec::new();
        for (ids, reason) in [
            (&expired, ArchiveReason::SessionExpired),
            (&decayed, ArchiveReason::Decayed),
            (&capacity, ArchiveReason::Capacity),
        ] {
            if !ids.is_empty() {
                ops.push(Op::Archive { ids: ids.clone(), reason });
            }
        }
        if !ops.is_empty() {
            let results = self.run(ns, ops)?;
            let mut done = results.into_iter();
            for (ids, slot) in
                [(&expired, &mut report.expired), (&decayed, &mut report.decayed), (&capacity, &mut report.capacity)]
            {
                if ids.is_empty() {
                    continue;
                }
                if let Some(Ok(OpOutcome::Archived(a))) = done.next() {
                    *slot = a;
                }
            }
        }
        report.consolidated = self.consolidate(ns, None)?;
        Ok(report)
    }

    /// [`Engine::maintain`] over every namespace that holds memories, in name order.
    ///
    /// # Errors
    /// As [`Engine::maintain`], for the first namespace that fails.
    pub fn maintain_all(&self, now: DateTime<Utc>) -> Result<Vec<(Namespace, MaintenanceReport)>> {
        let mut names: Vec<Namespace> = self.shared().state.read().namespaces.keys().cloned().collect();
        names.sort();
        names.into_iter().map(|ns| self.maintain(&ns, now).map(|r| (ns, r))).collect()
    }
}

/// The payload of a promoted version: same content and fields, stated in
/// full, long-term tier. The fact is the same, so it holds from the old
/// version's valid start (its event time, else its write time).
fn promoted_payload(m: &Memory) -> PendingMemory {
    PendingMemory {
        content: m.content.clone(),
        kind: Some(m.kind.clone()),
        tier: Some(Tier::LongTerm),
        importance: Some(m.importance),
        entities: Some(m.entities.clone()),
        key: m.key.clone(),
        sources: m.sources.clone(),
        session: m.session.clone(),
        event_time: Some(m.valid_from),
        source_ref: m.source_ref.clone(),
        quarantine: m.quarantine.clone(),
    }
}

//! Consolidation: merging clusters of active memories that restate each other.

use std::collections::BTreeSet;

use crate::engine::Engine;
use crate::error::Result;
use crate::projection::Memory;
use crate::types::{MemoryId, Namespace};
use crate::writer::{Op, OpOutcome};

/// One merged cluster, or one that a dry run would merge.
#[derive(Clone, Debug, PartialEq, serde::Serialize, serde::Deserialize, schemars::JsonSchema)]
pub struct Consolidation {
    /// The members, oldest first: superseded by the merged memory (reason
    /// `consolidated`), or in a dry run left as they are.
    pub members: Vec<MemoryId>,
    /// The merged memory; `None` in a dry run, which writes nothing.
    pub merged: Option<MemoryId>,
    /// The merged memory's text: the caller's, else the most important,
    /// then most recent, member's content (empty when read from a record
    /// written before this field existed).
    #[serde(default)]
    pub text: String,
}

/// Caller-supplied text for a cluster's merged memory (`None`: keep the
/// most important, then most recent, member's content).
pub type MergeFn<'a> = &'a dyn Fn(&[Memory]) -> Option<String>;

impl Engine {
    /// Finds clusters of restatements among active memories (same kind, no
    /// conflicting slot keys, cosine similarity to the cluster's first
    /// member ≥ `consolidate_threshold` and the same facts as it — numbers,
    /// names, content words, negations, qualifiers, word order, see
    /// [`crate::dedup`]), writes one merged memory per
    /// cluster and supersedes every member with it (reason `consolidated`),
    /// so each member's history leads to the merged version. The merged
    /// text is `merged_text(members)` when given and `Some`, else the
    /// content of the most important, then most recent, member; the merged
    /// memory takes that member's kind and session, the highest tier and
    /// importance, the union of entities and sources, and holds (valid
    /// time) from the earliest member's start. Quarantined memories are
    /// left alone.
    ///
    /// # Errors
    /// Input errors for caller-supplied text (it passes the same safety
    /// stage as [`Engine::remember`]); [`crate::Error::Poisoned`] /
    /// [`crate::Error::Closed`].
    pub fn consolidate(&self, ns: &Namespace, merged_text: Option<MergeFn<'_>>) -> Result<Vec<Consolidation>> {
        let mut out = Vec::new();
        for members in self.restatement_clusters(ns) {
            let Some(rep) = representative(&members) else {
                continue;
            };
            let text = merged_text.and_then(|f| f(&members));
            let (content, quarantine, vector) = match text {
                Some(t) => {
                    let nm = crate::NewMemory::new(t);
                    let p = self.check_memory(&nm)?;
                    let v = self.vectors_for(&[(&nm, &p)])?.pop().ok_or(crate::Error::Closed)?;
                    (p.text, p.quarantine, v)
                }
                None => (rep.content.clone(), None, self.vector_of(ns, &rep)?),
            };
            let mem = crate::writer::merge(&members, &rep, content.clone(), quarantine, self.config().max_entities);
            let ids: Vec<MemoryId> = members.iter().map(|m| m.id).collect();
            let r = self.run(ns, vec![Op::Consolidate { members: ids.clone(), mem, vector }])?;
            if let Some(Ok(OpOutcome::Remembered { id, .. })) = r.into_iter().next() {
                out.push(Consolidation { members: ids, merged: Some(id), text: content });
            }
        }
        Ok(out)
    }

    /// What [`Engine::consolidate`] without caller text would merge now, as
    /// a dry run: one [`Consolidation`] per cluster with `merged: None` and
    /// the text the merged memory would take. Writes nothing.
    ///
    /// # Errors
    /// None today; `Result` for symmetry with [`Engine::consolidate`].
    pub fn consolidation_preview(&self, ns: &Namespace) -> Result<Vec<Consolidation>> {
        Ok(self
            .restatement_clusters(ns)
            .into_iter()
            .filter_map(|members| {
                let rep = representative(&members)?;
                Some(Consolidation { members: members.iter().map(|m| m.id).collect(), merged: None, text: rep.content })
            })
            .collect())
    }

    /// Clusters of active memories that restate each other (see
    /// [`Engine::consolidate`]), members oldest first, two or more each.
    fn restatement_clusters(&self, ns: &Namespace) -> Vec<Vec<Memory>> {
        let threshold = self.config().consolidate_threshold.unwrap_or_else(|| self.dedup_threshold());
        let state = self.shared().state.read();
        let at = state.visible;
        let Some(st) = state.ns(ns) else {
            return Vec::new();
        };
        let active: Vec<&Memory> = st
            .memories
            .values()
            .map(|m| &**m)
            .filter(|m| m.visible_at(at) && m.status_at(at) == crate::Status::Active && m.quarantine.is_none())
            .collect();
        let mut taken: BTreeSet<MemoryId> = BTreeSet::new();
        let mut clusters = Vec::new();
        for (i, seed) in active.iter().enumerate() {
            if taken.contains(&seed.id) {
                continue;
            }
            let Some(sv) = st.vectors.get(seed.id.0) else {
                continue;
            };
            let seed_sig = crate::dedup::FactSignature::of(&seed.content);
            let mut cluster = vec![(*seed).clone()];
            for other in &active[i + 1..] {
                if taken.contains(&other.id) || other.kind != seed.kind {
                    continue;
                }
                let keys_conflict = cluster
                    .iter()
                    .any(|c| matches!((&c.key, &other.key), (Some(a), Some(b)) if !crate::types::same_id(a, b)));
                if keys_conflict {
                    continue;
                }
                let Some(similarity) = st.vectors.similarity(other.id.0, &sv) else {
                    continue;
                };
                if similarity >= threshold
                    && crate::dedup::is_restatement(
                        similarity,
                        threshold,
                        &seed_sig,
                        &crate::dedup::FactSignature::of(&other.content),
                    )
                {
                    cluster.push((*other).clone());
                }
            }
            if cluster.len() > 1 {
                taken.extend(cluster.iter().map(|m| m.id));
                clusters.push(cluster);
            }
        }
        clusters
    }
}

/// The member whose content a cluster keeps: the most important, then the
/// most recently recorded, then the highest id.
fn representative(members: &[Memory]) -> Option<Memory> {
    members
        .iter()
        .max_by(|a, b| {
            a.importance.total_cmp(&b.importance).then(a.recorded_from.cmp(&b.recorded_from)).then(a.id.cmp(&b.id))
        })
        .cloned()
}

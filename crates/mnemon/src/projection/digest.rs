//! A canonical digest of the projections: SHA-256 over every namespace (in
//! name order), its memory versions and observations (in id order), the
//! forgotten-id sets, the membership of the vector index (a memory whose
//! vector is pending counts as a member) and the size of the lexical index.
//! Two states with the same digest answer every read identically as long as
//! each lexical index holds exactly its namespace's memory versions, which
//! `apply` and [`State::finish_lexical`](super::State::finish_lexical) keep
//! and `Engine::check` compares document by document.

use sha2::{Digest, Sha256};

use crate::projection::State;

pub(crate) fn digest(state: &State) -> String {
    let mut h = Sha256::new();
    let mut names: Vec<_> = state.namespaces.keys().collect();
    names.sort();
    h.update(state.visible.to_le_bytes());
    for name in names {
        let Some(ns) = state.namespaces.get(name) else {
            continue;
        };
        h.update(b"ns\0");
        h.update(name.as_str().as_bytes());
        for m in ns.memories.values() {
            // serde_json of the record is canonical for our types (fixed field order).
            if let Ok(bytes) = serde_json::to_vec(m) {
                h.update(&bytes);
            }
            // A memory whose vector is pending counts as indexed: the
            // embedder's progress is not part of the log.
            h.update([u8::from(ns.vectors.contains(m.id.0) || ns.pending_vectors.contains(&m.id))]);
        }
        for o in ns.observations.values() {
            if let Ok(bytes) = serde_json::to_vec(o) {
                h.update(&bytes);
            }
        }
        let mut fm: Vec<_> = ns.forgotten_memories.iter().map(|i| i.0).collect();
        fm.sort_unstable();
        let mut fo: Vec<_> = ns.forgotten_observations.iter().map(|i| i.0).collect();
        fo.sort_unstable();
        for x in fm.iter().chain(b"|".iter().map(|_| &0u64)).chain(fo.iter()) {
            h.update(x.to_le_bytes());
        }
        h.update(((ns.vectors.len() + ns.pending_vectors.len()) as u64).to_le_bytes());
        h.update((ns.lexical.len() as u64).to_le_bytes());
    }
    hex::encode(h.finalize())
}

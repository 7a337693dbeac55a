//! Collapsing restatements among the hits of one recall.
//!
//! Two hits restate each other when their memory vectors' cosine is at
//! least the engine's near-duplicate threshold and their facts are the same
//! ([`crate::dedup::is_restatement`], the rule of the write path). Hits are
//! visited best first; a hit that restates one already kept is dropped and
//! counted in the kept hit's [`crate::recall::Explanation::collapsed`], so a
//! paraphrase pair never takes two slots of the prompt block. Hits whose
//! vector is unknown are kept as they are.

use crate::dedup::{is_restatement, FactSignature};
use crate::index::VectorIndex;
use crate::recall::Hit;

/// Drops, from `hits` sorted best first, every hit that restates a better
/// one; stops once `top_k` hits are kept. Cost: one dot product per pair of
/// kept and visited hits, and a fact signature only for pairs above the
/// threshold.
pub(crate) fn collapse_restatements(hits: Vec<Hit>, vectors: &VectorIndex, threshold: f32, top_k: usize) -> Vec<Hit> {
    let mut kept: Vec<(Hit, Option<FactSignature>)> = Vec::with_capacity(top_k.min(hits.len()));
    for hit in hits {
        if kept.len() >= top_k {
            break;
        }
        let mut sig: Option<FactSignature> = None;
        let restates = vectors.get(hit.memory.id.0).and_then(|v| {
            kept.iter_mut().position(|(k, ksig)| {
                let Some(similarity) = vectors.similarity(k.memory.id.0, &v) else {
                    return false;
                };
                if similarity < threshold {
                    return false;
                }
                let ksig = ksig.get_or_insert_with(|| FactSignature::of(&k.memory.content));
                let sig = sig.get_or_insert_with(|| FactSignature::of(&hit.memory.content));
                is_restatement(similarity, threshold, sig, ksig)
            })
        });
        match restates {
            Some(i) => kept[i].0.explain.collapsed += 1,
            None => kept.push((hit, sig)),
        }
    }
    kept.into_iter().map(|(h, _)| h).collect()
}

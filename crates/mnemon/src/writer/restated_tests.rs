//! The near-duplicate check against the walk it replaces: every active
//! memory of the namespace scored exactly, ranked, the best
//! [`RESTATEMENT_CANDIDATES`] checked for the same facts. Kept here as the
//! test oracle only.

use chrono::{TimeZone, Utc};
use proptest::prelude::*;

use super::*;
use crate::event::{Event, Extracted};
use crate::types::{Kind, Tier};

const DIM: usize = 8;

/// Texts in groups that restate one another, and changed facts beside them.
const TEXTS: &[&str] = &[
    "My yoga class on Tuesdays is at 6:30 pm",
    "Every Tuesday my yoga class is at 6:30 pm",
    "My yoga class on Tuesdays is at 7:30 pm",
    "I am allergic to peanuts",
    "I'm allergic to peanuts",
    "I am allergic to shellfish",
    "Lives in Berlin",
    "lives in Berlin",
    "Lives in Paris",
    "I don't drink coffee",
];

const KEYS: &[&str] = &["user.city", "user.diet", "user.class"];

/// The old check: a walk over every memory of the namespace.
fn restated_by_walk<'a>(
    st: &'a NsState,
    content: &str,
    key: Option<&str>,
    vector: &[f32],
    threshold: f32,
    before: Option<MemoryId>,
) -> Option<(MemoryId, &'a Memory, f32)> {
    let mut hits: Vec<(u64, f32)> = st
        .memories
        .values()
        .filter(|m| {
            m.status == Status::Active
                && m.quarantine.is_none()
                && before
                    .is_none_or(|b| m.id < b && m.key.as_ref().is_none_or(|k| key.is_some_and(|key| same_id(key, k))))
        })
        .filter_map(|m| st.vectors.similarity(m.id.0, vector).map(|s| (m.id.0, s)))
        .collect();
    hits.sort_by(|a, b| b.1.total_cmp(&a.1).then(a.0.cmp(&b.0)));
    hits.truncate(RESTATEMENT_CANDIDATES);
    let sig = FactSignature::of(content);
    for (id, similarity) in hits {
        let Some(m) = st.memories.get(&MemoryId(id)) else { continue };
        if matches!((key, &m.key), (Some(a), Some(b)) if !same_id(a, b)) {
            continue;
        }
        if is_restatement(similarity, threshold, &sig, &FactSignature::of(&m.content)) {
            return Some((m.id, m, similarity));
        }
    }
    None
}

/// A unit vector near the direction of `cluster`, moved by `noise`.
fn vector(cluster: usize, noise: &[f32]) -> Vec<f32> {
    let mut v: Vec<f32> = (0..DIM).map(|i| if i == cluster % DIM { 1.0 } else { 0.0 }).collect();
    for (x, n) in v.iter_mut().zip(noise) {
        *x += n;
    }
    let norm = v.iter().map(|x| x * x).sum::<f32>().sqrt();
    v.iter().map(|x| x / norm).collect()
}

/// One written memory: text, cluster, noise, key, quarantined, then what
/// happens to it (0 stays, 1 archived, 2 superseded by the next one).
type Written = (usize, usize, Vec<f32>, Option<usize>, bool, u8);

fn written() -> impl Strategy<Value = Written> {
    (
        0..TEXTS.len(),
        0..3usize,
        prop::collection::vec(-0.3f32..0.3, DIM),
        prop::option::weighted(0.2, 0..KEYS.len()),
        prop::bool::weighted(0.1),
        prop_oneof![6 => Just(0u8), 1 => Just(1u8), 1 => Just(2u8)],
    )
}

fn build(mems: &[Written]) -> State {
    let ns = Namespace::new("p").expect("namespace");
    let mut state = State::new(DIM, Default::default());
    let time = Utc.with_ymd_and_hms(2026, 1, 1, 0, 0, 0).single().expect("time");
    let mut seq = 0u64;
    let mut last: Option<MemoryId> = None;
    let mut supersede_next = false;
    for (text, cluster, noise, key, quarantined, fate) in mems {
        seq += 1;
        let id = MemoryId(seq);
        let body = EventBody::Extracted(Extracted {
            content: TEXTS[*text].to_string(),
            kind: Kind::Fact,
            tier: Tier::LongTerm,
            importance: 0.5,
            entities: vec![],
            key: key.map(|k| KEYS[k].to_string()),
            sources: vec![],
            session: None,
            event_time: None,
            source_ref: None,
            quarantine: quarantined.then(|| "test".to_string()),
        });
        state.apply(&Event { seq, time, ns: ns.clone(), body }, Some(&vector(*cluster, noise)));
        if let (true, Some(old)) = (supersede_next, last) {
            seq += 1;
            let body = EventBody::Superseded(Superseded { old, new: id, reason: SupersedeReason::Explicit });
            state.apply(&Event { seq, time, ns: ns.clone(), body }, None);
        }
        if *fate == 1 {
            seq += 1;
            let body = EventBody::Archived(Archived { ids: vec![id], reason: ArchiveReason::Decayed });
            state.apply(&Event { seq, time, ns: ns.clone(), body }, None);
        }
        supersede_next = *fate == 2;
        last = Some(id);
    }
    state
}

proptest! {
    #![proptest_config(ProptestConfig::with_cases(256))]

    /// Same restated memory (id and similarity) as the walk over the whole
    /// namespace, for new memories and for late decisions alike.
    #[test]
    fn candidates_decide_as_the_walk(
        mems in prop::collection::vec(written(), 1..60),
        text in 0..TEXTS.len(),
        cluster in 0..3usize,
        noise in prop::collection::vec(-0.3f32..0.3, DIM),
        key in prop::option::weighted(0.3, 0..KEYS.len()),
        threshold in prop_oneof![Just(0.8f32), Just(0.9f32), Just(0.95f32)],
        before in prop::option::weighted(0.3, 1..80u64),
    ) {
        let state = build(&mems);
        let st = state.ns(&Namespace::new("p").expect("namespace")).expect("namespace state");
        let v = vector(cluster, &noise);
        let key = key.map(|k| KEYS[k]);
        let before = before.map(MemoryId);
        let got = restated(st, TEXTS[text], key, &v, threshold, before).map(|(id, _, s)| (id, s));
        let want = restated_by_walk(st, TEXTS[text], key, &v, threshold, before).map(|(id, _, s)| (id, s));
        prop_assert_eq!(got, want);
    }
}

//! Memory tiers and lifecycle: end of session, decay, session expiry,
//! capacity and consolidation, all reproduced by replay.

use std::error::Error as StdError;

use chrono::{Duration, Utc};
use mnemon::{
    event::SupersedeReason, AsOf, DedupMode, Engine, EventBody, ListOptions, Namespace, NewMemory, RecallOptions,
    Status, Tier,
};

type TestResult = Result<(), Box<dyn StdError>>;

fn ns(name: &str) -> Namespace {
    Namespace::new(name).expect("valid namespace")
}

fn with_archived() -> ListOptions {
    ListOptions { include_archived: true, ..ListOptions::default() }
}

#[test]
fn end_session_archives_short_term_and_promotes_marked() -> TestResult {
    let dir = tempfile::tempdir()?;
    let e = Engine::open(dir.path())?;
    let u = ns("u1");
    let short = |t: &str| NewMemory::new(t).tier(Tier::ShortTerm).session("s1");
    let a = e.remember(&u, short("The user is debugging a flaky test"))?;
    let b = e.remember(&u, short("The user wants the answer in French"))?;
    let c = e.remember(&u, short("The user is on a train right now"))?;
    let other = e.remember(&u, NewMemory::new("The user is drafting a poem").tier(Tier::ShortTerm).session("s2"))?;
    let long = e.remember(&u, NewMemory::new("The user lives in Lisbon"))?;
    let r = e.end_session(&u, "s1", &[b.id, long.id])?;
    assert_eq!(r.archived, vec![a.id, c.id]);
    assert_eq!(r.promoted.len(), 1);
    assert_eq!(r.promoted[0].0, b.id);
    assert_eq!(r.rejected.len(), 1, "a long-term memory cannot be promoted");
    let promoted = e.get(&u, r.promoted[0].1)?;
    assert_eq!(
        (promoted.tier, promoted.status, promoted.content.as_str()),
        (Tier::LongTerm, Status::Active, "The user wants the answer in French")
    );
    assert_eq!(e.history(&u, b.id)?.len(), 2);
    // The same fact, promoted: it has held since the short-term version did.
    let short_b = e.get(&u, b.id)?;
    assert_eq!(promoted.valid_from, short_b.valid_from);
    assert_eq!(short_b.valid_to, Some(short_b.valid_from));
    assert_eq!(short_b.recorded_to, Some(promoted.recorded_from));
    assert_eq!(e.get(&u, a.id)?.status, Status::Archived);
    // Archived: out of default list and recall, still in history and on request.
    let ids: Vec<_> = e.list(&u, &ListOptions::default()).iter().map(|m| m.id).collect();
    assert!(!ids.contains(&a.id) && !ids.contains(&c.id) && ids.contains(&other.id) && ids.contains(&long.id));
    assert_eq!(e.list(&u, &with_archived()).len(), ids.len() + 2);
    let quiet = RecallOptions { record_access: false, ..RecallOptions::default() };
    let hits = e.recall(&u, "flaky test debugging", &quiet)?;
    assert!(hits.iter().all(|h| h.memory.id != a.id));
    let hits = e.recall(&u, "flaky test debugging", &RecallOptions { include_archived: true, ..quiet.clone() })?;
    assert!(hits.iter().any(|h| h.memory.id == a.id));
    assert_eq!(e.history(&u, a.id)?.len(), 1);
    assert_eq!(e.stats().archived_memories, 2);
    // A view from before the end of the session still sees it active.
    let before = e.as_of(&u, AsOf::Seq(other.id.0))?;
    assert_eq!(before.get(a.id)?.status, Status::Active);
    assert!(before.list(&ListOptions::default())?.iter().any(|m| m.id == a.id));
    drop(before);
    // Replay reproduces it.
    let digest = e.digest();
    e.close()?;
    let e = Engine::open(dir.path())?;
    assert_eq!(e.digest(), digest);
    assert_eq!(e.get(&u, c.id)?.status, Status::Archived);
    Ok(())
}

#[test]
fn decay_and_expiry_are_events_that_replay_reproduces() -> TestResult {
    let dir = tempfile::tempdir()?;
    let e = Engine::open(dir.path())?;
    let u = ns("u1");
    let weak = e.remember(&u, NewMemory::new("The user once mentioned a blue umbrella").importance(0.2))?;
    let strong = e.remember(&u, NewMemory::new("The user is a nurse").importance(1.0))?;
    let perm =
        e.remember(&u, NewMemory::new("The user is allergic to penicillin").importance(0.01).tier(Tier::Permanent))?;
    let short = e.remember(&u, NewMemory::new("The user is packing for a trip").tier(Tier::ShortTerm).session("s9"))?;
    // Half-life 30 days, threshold 0.05: after 60 days 0.2 → 0.05·… falls below, 1.0 → 0.25 stays.
    let now = Utc::now() + Duration::days(61);
    let r = e.maintain(&u, now)?;
    assert_eq!(r.decayed, vec![weak.id]);
    assert_eq!(r.expired, vec![short.id]);
    assert!(r.capacity.is_empty());
    assert_eq!(e.get(&u, strong.id)?.status, Status::Active);
    assert_eq!(e.get(&u, perm.id)?.status, Status::Active);
    assert_eq!(e.get(&u, weak.id)?.status, Status::Archived);
    // The decision is an event; running again with the same `now` changes nothing.
    let archived: Vec<_> = e
        .events(&u, 1, u64::MAX)?
        .into_iter()
        .filter_map(|ev| if let EventBody::Archived(a) = ev.body { Some(a) } else { None })
        .collect();
    assert_eq!(archived.len(), 2);
    assert!(e.maintain(&u, now)?.is_empty());
    let digest = e.digest();
    e.close()?;
    // Replay never recomputes decay: the archive stands whatever the clock says.
    let e = Engine::open(dir.path())?;
    assert_eq!(e.digest(), digest);
    assert_eq!(e.get(&u, weak.id)?.status, Status::Archived);
    Ok(())
}

#[test]
fn capacity_never_archives_permanent_memories() -> TestResult {
    let dir = tempfile::tempdir()?;
    let e = Engine::builder(dir.path()).capacity(2).open()?;
    let u = ns("u1");
    let mut perms = Vec::new();
    for t in ["The user's blood type is O", "The user's birthday is 3 May", "The user's son is called Leo"] {
        perms.push(e.remember(&u, NewMemory::new(t).tier(Tier::Permanent))?.id);
    }
    let lo = e.remember(&u, NewMemory::new("The user tried a new cafe").importance(0.3))?;
    let hi = e.remember(&u, NewMemory::new("The user runs marathons").importance(0.9))?;
    let r = e.maintain(&u, Utc::now())?;
    let mut got = r.capacity.clone();
    got.sort();
    assert_eq!(got, vec![lo.id, hi.id]);
    for p in &perms {
        assert_eq!(e.get(&u, *p)?.status, Status::Active);
    }
    // Above capacity with only permanent memories left: nothing more goes.
    assert!(e.maintain(&u, Utc::now())?.capacity.is_empty());

    // The weakest go first.
    let dir2 = tempfile::tempdir()?;
    let e2 = Engine::builder(dir2.path()).capacity(2).open()?;
    let a = e2.remember(&u, NewMemory::new("The user plays chess").importance(0.9))?;
    let b = e2.remember(&u, NewMemory::new("The user saw a film").importance(0.2))?;
    let c = e2.remember(&u, NewMemory::new("The user keeps bees").importance(0.7))?;
    assert_eq!(e2.maintain(&u, Utc::now())?.capacity, vec![b.id]);
    assert_eq!(e2.get(&u, a.id)?.status, Status::Active);
    assert_eq!(e2.get(&u, c.id)?.status, Status::Active);
    Ok(())
}

#[test]
fn consolidation_merges_near_duplicates_and_keeps_history() -> TestResult {
    let dir = tempfile::tempdir()?;
    let e = Engine::open(dir.path())?;
    let u = ns("u1");
    let dim = e.embedder().dim();
    let vec_at = |x: f32, y: f32| {
        let mut v = vec![0.0f32; dim];
        v[0] = x;
        v[1] = y;
        v
    };
    let m = |t: &str, v: Vec<f32>, imp: f32| NewMemory::new(t).vector(v).importance(imp).dedup(DedupMode::Off);
    let a = e.remember(&u, m("The user likes green tea", vec_at(1.0, 0.0), 0.4))?;
    let b = e.remember(&u, m("The user really likes green tea", vec_at(1.0, 0.05), 0.8))?;
    let c = e.remember(&u, m("The user likes green tea a lot", vec_at(1.0, 0.1), 0.5))?;
    // As close in vector space, but another fact: a negation, a frequency.
    let not = e.remember(&u, m("The user doesn't like green tea", vec_at(1.0, 0.02), 0.5))?;
    let daily = e.remember(&u, m("The user drinks green tea daily", vec_at(1.0, 0.03), 0.5))?;
    let other = e.remember(&u, m("The user owns a kayak", vec_at(0.0, 1.0), 0.5))?;
    // A dry run lists the cluster and the text it would keep, and writes nothing.
    let before = e.digest();
    let preview = e.consolidation_preview(&u)?;
    assert_eq!(preview.len(), 1);
    assert_eq!(
        (&preview[0].members, preview[0].merged, preview[0].text.as_str()),
        (&vec![a.id, b.id, c.id], None, "The user really likes green tea")
    );
    assert_eq!(e.digest(), before);
    let merged = e.consolidate(&u, None)?;
    assert_eq!(merged.len(), 1);
    assert_eq!(merged[0].members, vec![a.id, b.id, c.id]);
    assert_eq!(merged[0].text, preview[0].text);
    let new = e.get(&u, merged[0].merged.expect("merged"))?;
    assert_eq!(new.content, "The user really likes green tea", "most important member's content");
    assert_eq!(new.importance, 0.8);
    // The merged fact holds from the earliest member's start, so in valid
    // time it takes the place of every member.
    assert_eq!(new.valid_from, e.get(&u, a.id)?.valid_from);
    for id in [a.id, b.id, c.id] {
        let old = e.get(&u, id)?;
        assert_eq!(old.valid_to, Some(old.valid_from), "{id}");
    }
    for id in [a.id, b.id, c.id] {
        let old = e.get(&u, id)?;
        assert_eq!((old.status, old.next), (Status::Superseded, Some(new.id)));
    }
    for id in [other.id, not.id, daily.id] {
        assert_eq!(e.get(&u, id)?.status, Status::Active, "changed facts are never merged");
    }
    let reasons: Vec<_> = e
        .events(&u, 1, u64::MAX)?
        .into_iter()
        .filter_map(|ev| if let EventBody::Superseded(s) = ev.body { Some(s.reason) } else { None })
        .collect();
    assert_eq!(reasons, vec![SupersedeReason::Consolidated; 3]);
    assert!(e.history(&u, new.id)?.len() >= 2);
    assert!(e.consolidate(&u, None)?.is_empty());

    // Caller-supplied text.
    let d = e.remember(&u, m("The user really owns a kayak", vec_at(0.0, 1.0), 0.3))?;
    let text = |_: &[mnemon::Memory]| Some("The user owns a kayak (merged)".to_string());
    let merged2 = e.consolidate(&u, Some(&text))?;
    assert_eq!(merged2.len(), 1);
    assert_eq!(merged2[0].members, vec![other.id, d.id]);
    assert_eq!(e.get(&u, merged2[0].merged.expect("merged"))?.content, "The user owns a kayak (merged)");
    let digest = e.digest();
    e.close()?;
    let e = Engine::open(dir.path())?;
    assert_eq!(e.digest(), digest);
    Ok(())
}

#[test]
fn archived_memories_can_be_forgotten_and_compacted() -> TestResult {
    let dir = tempfile::tempdir()?;
    let e = Engine::open(dir.path())?;
    let u = ns("u1");
    let a = e.remember(&u, NewMemory::new("The user's locker code is 4471").tier(Tier::ShortTerm).session("s1"))?;
    let keep = e.remember(&u, NewMemory::new("The user's gym is downtown").tier(Tier::ShortTerm).session("s1"))?;
    let r = e.end_session(&u, "s1", &[keep.id])?;
    assert_eq!(r.archived, vec![a.id]);
    let f = e.forget(&u, mnemon::ForgetRequest::Memory(a.id), "user request")?;
    assert_eq!(f.memories, 1);
    assert!(e.get(&u, a.id).is_err());
    let receipt = e.compact()?;
    assert!(receipt.verified);
    let digest = e.digest();
    e.close()?;
    let e = Engine::open(dir.path())?;
    assert_eq!(e.digest(), digest);
    assert_eq!(e.list(&u, &with_archived()).len(), 1);
    Ok(())
}

#[test]
fn archived_event_round_trips_through_the_codec() -> TestResult {
    use mnemon::{event::decode_record, event::encode_record, event::ArchiveReason, event::Archived, Event, MemoryId};
    for reason in
        [ArchiveReason::SessionEnded, ArchiveReason::SessionExpired, ArchiveReason::Decayed, ArchiveReason::Capacity]
    {
        let ev = Event {
            seq: 7,
            time: chrono::DateTime::from_timestamp_micros(1_700_000_000_000_000).ok_or("time")?,
            ns: ns("u1"),
            body: EventBody::Archived(Archived { ids: vec![MemoryId(3), MemoryId(5)], reason }),
        };
        assert_eq!(decode_record(7, &encode_record(&ev)?)?, ev);
    }
    Ok(())
}

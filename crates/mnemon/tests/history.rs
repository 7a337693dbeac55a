//! Version chains: explicit supersedes, slot keys, and as-of views at every
//! step of a chain.

use std::error::Error as StdError;
use std::time::Duration;

use chrono::{DateTime, Utc};
use mnemon::{
    AsOf, Engine, Error, ForgetRequest, Kind, ListOptions, Memory, MemoryId, Namespace, NewMemory, RememberAction, Seq,
    Status, Tier,
};

type TestResult = Result<(), Box<dyn StdError>>;

fn ns(name: &str) -> Namespace {
    Namespace::new(name).expect("valid namespace")
}

fn ids(ms: &[Memory]) -> Vec<MemoryId> {
    ms.iter().map(|m| m.id).collect()
}

fn all_versions() -> ListOptions {
    ListOptions { include_superseded: true, ..ListOptions::default() }
}

const VERSIONS: [&str; 4] = [
    "The project deadline is March 3",
    "The project deadline moved to March 17",
    "项目截止日期推迟到四月一日",
    "The project deadline is now April 15, final",
];

/// One step of a chain: the version written, the log position and time right
/// after it.
struct Step {
    id: MemoryId,
    seq: Seq,
    time: DateTime<Utc>,
}

fn check_chain(engine: &Engine, u1: &Namespace, steps: &[Step]) -> TestResult {
    let chain: Vec<MemoryId> = steps.iter().map(|s| s.id).collect();
    let last = steps.len() - 1;
    for (i, s) in steps.iter().enumerate() {
        let m = engine.get(u1, s.id)?;
        assert_eq!(m.content, VERSIONS[i]);
        assert_eq!(m.status, if i == last { Status::Active } else { Status::Superseded });
        assert_eq!(m.prev, i.checked_sub(1).map(|p| chain[p]));
        assert_eq!(m.next, chain.get(i + 1).copied());
        assert_eq!(m.created_seq, s.id.0);
        // Every version inherits the first one's fields it did not set.
        assert_eq!(m.kind, Kind::Decision);
        assert_eq!(m.tier, Tier::Permanent);
        assert_eq!(m.importance, 0.8);
        assert_eq!(m.key.as_deref(), Some("project.deadline"));
        assert_eq!(ids(&engine.history(u1, s.id)?), chain, "history from version {i}");
        if i > 0 {
            let prev = engine.get(u1, chain[i - 1])?;
            assert_eq!(prev.valid_to, Some(m.valid_from), "versions {i} and {} abut", i - 1);
            assert_eq!(prev.recorded_to, Some(m.recorded_from));
            assert_eq!(m.first_seen, engine.get(u1, chain[0])?.recorded_from);
        }
    }
    assert_eq!(ids(&engine.list(u1, &ListOptions::default())), vec![chain[last]]);
    assert_eq!(ids(&engine.list(u1, &all_versions())), chain);

    // As of each step, by position and by time: exactly that version is active.
    for (i, s) in steps.iter().enumerate() {
        for at in [AsOf::Seq(s.seq), AsOf::Time(s.time), AsOf::Time(engine.get(u1, s.id)?.recorded_from)] {
            let view = engine.as_of(u1, at)?;
            assert_eq!(view.seq(), s.seq, "{at:?}");
            let live = view.list(&ListOptions::default())?;
            assert_eq!(ids(&live), vec![s.id], "step {i} {at:?}");
            assert_eq!(live[0].status, Status::Active);
            assert_eq!(live[0].next, None);
            assert_eq!((live[0].valid_to, live[0].recorded_to), (None, None));
            assert_eq!(ids(&view.list(&all_versions())?), chain[..=i].to_vec(), "step {i} {at:?}");
            assert_eq!(ids(&view.history(s.id)?), chain[..=i].to_vec(), "step {i} {at:?}");
            for (j, &older) in chain[..i].iter().enumerate() {
                let m = view.get(older)?;
                assert_eq!(m.status, Status::Superseded, "version {j} at step {i}");
                assert_eq!(m.next, Some(chain[j + 1]));
            }
            for &later in &chain[i + 1..] {
                assert!(matches!(view.get(later), Err(Error::NotFound { .. })), "{later} at step {i}");
                assert!(matches!(view.history(later), Err(Error::NotFound { .. })));
            }
        }
    }
    let before = engine.as_of(u1, AsOf::Seq(steps[0].seq - 1))?;
    assert!(before.list(&all_versions())?.is_empty());
    assert!(matches!(before.get(chain[0]), Err(Error::NotFound { .. })));
    Ok(())
}

#[test]
fn supersede_chain_of_four_versions() -> TestResult {
    let dir = tempfile::tempdir()?;
    let u1 = ns("u1");
    let engine = Engine::open(dir.path())?;
    let first =
        NewMemory::new(VERSIONS[0]).key("project.deadline").kind(Kind::Decision).tier(Tier::Permanent).importance(0.8);
    let r = engine.remember(&u1, first)?;
    let mut steps = vec![Step { id: r.id, seq: engine.stats().last_seq, time: Utc::now() }];
    for text in &VERSIONS[1..] {
        std::thread::sleep(Duration::from_millis(3));
        let prev = steps.last().map(|s| s.id).unwrap_or(r.id);
        let r = engine.supersede(&u1, prev, NewMemory::new(*text))?;
        assert_eq!(r.action, RememberAction::Superseded { old: prev });
        // An explicit supersede appends the new version and the link: two events.
        assert_eq!(engine.stats().last_seq, r.id.0 + 1);
        steps.push(Step { id: r.id, seq: engine.stats().last_seq, time: Utc::now() });
    }
    check_chain(&engine, &u1, &steps)?;
    engine.close()?;
    let engine = Engine::open(dir.path())?;
    check_chain(&engine, &u1, &steps)?;
    engine.close()?;
    Ok(())
}

#[test]
fn supersede_errors_and_no_ops() -> TestResult {
    let dir = tempfile::tempdir()?;
    let (u1, u2) = (ns("u1"), ns("u2"));
    let engine = Engine::open(dir.path())?;
    let v1 = engine.remember(&u1, NewMemory::new("My laptop is a ThinkPad X1"))?;
    let v2 = engine.supersede(&u1, v1.id, NewMemory::new("My laptop is a MacBook Air"))?;
    let other = engine.remember(&u2, NewMemory::new("我用的是华为笔记本"))?;
    let gone = engine.remember(&u1, NewMemory::new("My old phone number was private"))?;
    engine.forget(&u1, ForgetRequest::Memory(gone.id), "user asked")?;
    let seq = engine.stats().last_seq;
    let digest = engine.digest();

    // A superseded version cannot be superseded again; the error names the latest.
    match engine.supersede(&u1, v1.id, NewMemory::new("My laptop is a Dell XPS")) {
        Err(Error::Conflict(msg)) => assert!(msg.contains(&v2.id.to_string()), "{msg}"),
        other => panic!("expected Conflict, got {other:?}"),
    }
    // Unknown ids, ids of another namespace and forgotten ids are not found.
    for (what, id) in [("unknown", MemoryId(9_999)), ("other namespace", other.id), ("forgotten", gone.id)] {
        let r = engine.supersede(&u1, id, NewMemory::new("My laptop is a Dell XPS"));
        assert!(matches!(r, Err(Error::NotFound { .. })), "{what}: {r:?}");
    }
    // Equal content (after whitespace normalisation) is a no-op.
    for same in ["My laptop is a MacBook Air", "  My laptop is a   MacBook Air "] {
        let r = engine.supersede(&u1, v2.id, NewMemory::new(same))?;
        assert_eq!((r.id, r.action), (v2.id, RememberAction::Unchanged));
    }
    assert_eq!(engine.stats().last_seq, seq, "no event was appended");
    assert_eq!(engine.digest(), digest);
    assert_eq!(engine.get(&u1, v2.id)?.status, Status::Active);

    // The engine still accepts a valid supersede afterwards.
    let v3 = engine.supersede(&u1, v2.id, NewMemory::new("My laptop is a Framework 13"))?;
    assert_eq!(v3.action, RememberAction::Superseded { old: v2.id });
    assert_eq!(ids(&engine.history(&u1, v1.id)?), vec![v1.id, v2.id, v3.id]);
    assert_eq!(ids(&engine.list(&u2, &all_versions())), vec![other.id]);
    engine.close()?;
    Ok(())
}

#[test]
fn key_supersedes_exactly_its_slot() -> TestResult {
    let dir = tempfile::tempdir()?;
    let (u1, u2) = (ns("u1"), ns("u2"));
    let engine = Engine::open(dir.path())?;
    let city = engine.remember(&u1, NewMemory::new("I live in Berlin").key("user.city"))?;
    let food = engine.remember(&u1, NewMemory::new("My favourite food is ramen").key("user.food"))?;
    let loose = engine.remember(&u1, NewMemory::new("I moved house twice last year"))?;
    let twin = engine.remember(&u2, NewMemory::new("我住在上海").key("user.city"))?;
    let manager = engine.remember(&u1, NewMemory::new("My manager is called Dana").key("work.manager"))?;

    let moved = engine.remember(&u1, NewMemory::new("I live in Paris now").key("user.city"))?;
    assert_eq!(moved.action, RememberAction::Superseded { old: city.id });

    let check = |engine: &Engine| -> TestResult {
        assert_eq!(engine.get(&u1, city.id)?.status, Status::Superseded);
        assert_eq!(engine.get(&u1, city.id)?.next, Some(moved.id));
        for id in [food.id, loose.id, manager.id, moved.id] {
            let m = engine.get(&u1, id)?;
            assert_eq!((m.status, m.next), (Status::Active, None), "{id} untouched");
        }
        let t = engine.get(&u2, twin.id)?;
        assert_eq!((t.status, t.next, t.content.as_str()), (Status::Active, None, "我住在上海"));
        assert_eq!(ids(&engine.list(&u2, &all_versions())), vec![twin.id]);
        Ok(())
    };
    check(&engine)?;
    engine.close()?;
    let engine = Engine::open(dir.path())?;
    check(&engine)?;

    // After reopen the slot still points at the latest version.
    let again = engine.remember(&u1, NewMemory::new("I live in Lisbon").key("user.city"))?;
    assert_eq!(again.action, RememberAction::Superseded { old: moved.id });
    assert_eq!(ids(&engine.history(&u1, city.id)?), vec![city.id, moved.id, again.id]);
    // The same content under the same key is a duplicate of the slot's holder.
    let dup = engine.remember(&u1, NewMemory::new(" I live  in Lisbon").key("user.city"))?;
    assert_eq!((dup.id, dup.action), (again.id, RememberAction::Duplicate));

    // Once the slot's holder is forgotten, the key starts a fresh chain.
    engine.forget(&u1, ForgetRequest::Memory(again.id), "moved away")?;
    let fresh = engine.remember(&u1, NewMemory::new("I live in Madrid").key("user.city"))?;
    assert_eq!(fresh.action, RememberAction::Created);
    assert_eq!(ids(&engine.history(&u1, fresh.id)?), vec![fresh.id]);
    engine.close()?;
    Ok(())
}

/// A slot key names the current value: a new value moves the slot even when
/// the same text is already remembered elsewhere without the key.
#[test]
fn key_moves_when_content_exists_outside_the_slot() -> TestResult {
    let dir = tempfile::tempdir()?;
    let u1 = ns("u1");
    let engine = Engine::open(dir.path())?;
    let loose = engine.remember(&u1, NewMemory::new("I live in Berlin"))?;
    let paris = engine.remember(&u1, NewMemory::new("I live in Paris").key("user.city"))?;
    let berlin = engine.remember(&u1, NewMemory::new("I live in Berlin").key("user.city"))?;
    assert_eq!(berlin.action, RememberAction::Superseded { old: paris.id });
    assert_eq!(engine.get(&u1, paris.id)?.status, Status::Superseded);
    assert_eq!(engine.get(&u1, berlin.id)?.key.as_deref(), Some("user.city"));
    assert_eq!(engine.get(&u1, loose.id)?.status, Status::Active);
    let keyed: Vec<Memory> = engine
        .list(&u1, &ListOptions::default())
        .into_iter()
        .filter(|m| m.key.as_deref() == Some("user.city"))
        .collect();
    assert_eq!(ids(&keyed), vec![berlin.id]);
    let digest = engine.digest();
    engine.close()?;
    let engine = Engine::open(dir.path())?;
    assert_eq!(engine.digest(), digest);
    engine.close()?;
    Ok(())
}

/// At most one active memory holds a slot key: an explicit supersede cannot
/// move a version into a slot another memory holds.
#[test]
fn supersede_into_an_occupied_slot_is_a_conflict() -> TestResult {
    let dir = tempfile::tempdir()?;
    let u1 = ns("u1");
    let engine = Engine::open(dir.path())?;
    let tea = engine.remember(&u1, NewMemory::new("I drink green tea every morning").key("user.drink"))?;
    let note = engine.remember(&u1, NewMemory::new("I drink coffee after lunch"))?;
    let seq = engine.stats().last_seq;
    let r = engine.supersede(&u1, note.id, NewMemory::new("I drink espresso after lunch").key("user.drink"));
    assert!(matches!(r, Err(Error::Conflict(_))), "{r:?}");
    assert_eq!(engine.stats().last_seq, seq);
    // Moving the holder itself, or into a free slot, is fine.
    let r = engine.supersede(&u1, tea.id, NewMemory::new("I drink black tea every morning").key("user.drink"))?;
    assert_eq!(r.action, RememberAction::Superseded { old: tea.id });
    let r2 = engine.supersede(&u1, note.id, NewMemory::new("I drink espresso after lunch").key("user.lunch_drink"))?;
    assert_eq!(r2.action, RememberAction::Superseded { old: note.id });
    let next = engine.remember(&u1, NewMemory::new("I drink rooibos every morning").key("user.drink"))?;
    assert_eq!(next.action, RememberAction::Superseded { old: r.id });
    assert_eq!(engine.get(&u1, r2.id)?.status, Status::Active);
    engine.close()?;
    Ok(())
}

/// A view at the position of a new version, before its link event, shows
/// one active version per key, not two.
#[test]
fn as_of_between_the_two_events_of_a_supersede_shows_one_version() -> Result<(), Box<dyn std::error::Error>> {
    let dir = tempfile::tempdir()?;
    let engine = mnemon::Engine::open(dir.path())?;
    let ns = mnemon::Namespace::new("u1")?;
    let a = engine.remember(&ns, mnemon::NewMemory::new("Lives in Berlin").key("user.city"))?;
    let b = engine.remember(&ns, mnemon::NewMemory::new("Lives in Hangzhou now").key("user.city"))?;
    let view = engine.as_of(&ns, mnemon::AsOf::Seq(b.id.0))?;
    let active: Vec<_> = view.list(&Default::default())?.into_iter().map(|m| m.id).collect();
    assert_eq!(active, vec![b.id]);
    let before = engine.as_of(&ns, mnemon::AsOf::Seq(b.id.0 - 1))?;
    assert_eq!(before.list(&Default::default())?.into_iter().map(|m| m.id).collect::<Vec<_>>(), vec![a.id]);
    Ok(())
}

fn day(y: i32, m: u32, d: u32, h: u32, min: u32) -> DateTime<Utc> {
    use chrono::TimeZone;
    Utc.with_ymd_and_hms(y, m, d, h, min, 0).single().expect("valid date")
}

/// An explicit supersede keeps kind, tier, importance, session and sources,
/// and drops the entities that named the old value.
#[test]
fn supersede_inherits_and_drops_stale_entities() -> TestResult {
    let dir = tempfile::tempdir()?;
    let u1 = ns("u1");
    let engine = Engine::open(dir.path())?;
    let o = engine.observe(&u1, mnemon::NewObservation::new("s1", mnemon::Role::User, "我住在杭州西湖边"))?;
    let v1 = engine.remember(
        &u1,
        NewMemory::new("用户住在杭州西湖边")
            .kind(Kind::Fact)
            .tier(Tier::Permanent)
            .importance(0.7)
            .entities(["杭州", "西湖", "Hangzhou"])
            .sources([o])
            .session("s1"),
    )?;
    let v2 = engine.supersede(&u1, v1.id, NewMemory::new("用户搬到了杭州滨江"))?;
    let m = engine.get(&u1, v2.id)?;
    assert_eq!((m.kind, m.tier, m.importance), (Kind::Fact, Tier::Permanent, 0.7));
    assert_eq!((m.sources, m.session.as_deref()), (vec![o], Some("s1")));
    assert_eq!(m.entities, vec!["杭州".to_string()], "西湖 and Hangzhou are no longer named");
    // New sources replace the old ones.
    let o2 = engine.observe(&u1, mnemon::NewObservation::new("s2", mnemon::Role::User, "I moved to Shanghai"))?;
    let v3 = engine.supersede(&u1, v2.id, NewMemory::new("The user moved to Shanghai").sources([o2]))?;
    assert_eq!(engine.get(&u1, v3.id)?.sources, vec![o2]);
    assert!(engine.get(&u1, v3.id)?.entities.is_empty());
    Ok(())
}

/// A restatement, written as a new version of the memory it restates,
/// inherits like any other new version.
#[test]
fn near_duplicate_supersede_inherits() -> TestResult {
    let dir = tempfile::tempdir()?;
    let u1 = ns("u1");
    let engine = Engine::open(dir.path())?;
    let dim = engine.embedder().dim();
    let vec_at = |y: f32| {
        let mut v = vec![0.0f32; dim];
        v[0] = 1.0;
        v[1] = y;
        v
    };
    let first = engine.remember(
        &u1,
        NewMemory::new("the user likes oolong tea very much")
            .vector(vec_at(0.0))
            .kind(Kind::Preference)
            .tier(Tier::Permanent)
            .importance(0.8)
            .entities(["oolong", "much"]),
    )?;
    let second = engine.remember(
        &u1,
        NewMemory::new("the user really likes oolong tea").vector(vec_at(0.01)).dedup(mnemon::DedupMode::Supersede),
    )?;
    assert!(matches!(second.action, RememberAction::NearDuplicate { old, .. } if old == first.id), "{second:?}");
    let m = engine.get(&u1, second.id)?;
    assert_eq!((m.kind, m.tier, m.importance), (Kind::Preference, Tier::Permanent, 0.8));
    assert_eq!(m.entities, vec!["oolong".to_string()]);
    Ok(())
}

/// Provenance across versions: a version that does not restate its
/// sources keeps them, and forgetting the observation takes the whole chain.
#[test]
fn forgetting_the_source_observation_forgets_the_whole_chain() -> TestResult {
    let dir = tempfile::tempdir()?;
    let u = ns("u");
    let engine = Engine::open(dir.path())?;
    let obs = engine
        .observe(&u, mnemon::NewObservation::new("s1", mnemon::Role::User, "User: my boat is called Sea Biscuit"))?;
    let v1 = engine.remember(&u, NewMemory::new("Boat is named Sea Biscuit").sources([obs]))?;
    let v2 = engine.supersede(&u, v1.id, NewMemory::new("Boat is named Sea Biscuit II"))?;
    assert_eq!(engine.get(&u, v2.id)?.sources, vec![obs], "the new version keeps its sources");
    let seq = engine.stats().last_seq;
    let preview = engine.forget_dry_run(&u, ForgetRequest::Observation(obs), "user request")?;
    assert_eq!(preview.memory_ids, vec![v1.id, v2.id]);
    assert_eq!(engine.stats().last_seq, seq, "a dry run writes nothing");
    let out = engine.forget(&u, ForgetRequest::Observation(obs), "user request")?;
    assert_eq!((out.observations, out.memories, out.derived_memories), (1, 2, 2));
    assert_eq!(out.memory_ids, vec![v1.id, v2.id]);
    let check = |engine: &Engine| -> TestResult {
        for id in [v1.id, v2.id] {
            assert!(matches!(engine.get(&u, id), Err(Error::NotFound { .. })), "{id}");
            assert!(matches!(engine.history(&u, id), Err(Error::NotFound { .. })), "{id}");
        }
        assert!(engine.list(&u, &all_versions()).is_empty(), "\"Sea Biscuit II\" is forgotten too");
        assert!(engine.as_of(&u, AsOf::Seq(seq))?.list(&all_versions())?.is_empty());
        // The export shows tombstones for both versions and for the link between them.
        for ev in engine.events(&u, 1, u64::MAX)? {
            let content_free = matches!(ev.body, mnemon::EventBody::Tombstone(_) | mnemon::EventBody::Forgotten(_));
            assert!(content_free, "event {} exported as {:?}", ev.seq, ev.body);
        }
        Ok(())
    };
    check(&engine)?;
    engine.compact()?;
    check(&engine)?;
    engine.close()?;
    let engine = Engine::open(dir.path())?;
    check(&engine)?;
    engine.close()?;
    Ok(())
}

/// A version erased on its own (all its sources forgotten, while the latest
/// version rests on another observation) is cut out of its chain: no view
/// shows a link to it, before or after compaction.
#[test]
fn forgotten_versions_leave_no_dangling_links() -> TestResult {
    let dir = tempfile::tempdir()?;
    let u = ns("u");
    let engine = Engine::open(dir.path())?;
    let obs = |text: &str| engine.observe(&u, mnemon::NewObservation::new("s1", mnemon::Role::User, text));
    let (o0, o1, o2) = (obs("I live in Porto")?, obs("I moved to Braga")?, obs("Now I live in Faro")?);
    let key = "user.city";
    let v0 = engine
        .remember(&u, NewMemory::new("Lives in Porto").key(key).sources([o0]).event_time(day(2024, 1, 1, 0, 0)))?;
    let v1 = engine
        .remember(&u, NewMemory::new("Lives in Braga").key(key).sources([o1]).event_time(day(2025, 1, 1, 0, 0)))?;
    let seq_v1 = engine.stats().last_seq;
    let v2 = engine
        .remember(&u, NewMemory::new("Lives in Faro").key(key).sources([o2]).event_time(day(2026, 1, 1, 0, 0)))?;
    // A second chain that the latest version does not rescue.
    let w1 = engine.remember(&u, NewMemory::new("Has a dog").key("user.pet").sources([o1]))?;
    let w2 = engine.remember(&u, NewMemory::new("Has two dogs").key("user.pet"))?;

    let braga_written = engine.get(&u, v1.id)?.recorded_from;
    let out = engine.forget(&u, ForgetRequest::Observation(o1), "user request")?;
    assert_eq!(out.memory_ids, vec![v1.id, w1.id, w2.id], "Braga alone; the whole dog chain");

    let check = |engine: &Engine| -> TestResult {
        let h = engine.history(&u, v2.id)?;
        assert_eq!(ids(&h), vec![v0.id, v2.id]);
        assert_eq!((h[0].next, h[1].prev), (Some(v2.id), Some(v0.id)));
        // Porto held until Faro: the forgotten Braga no longer ends it.
        assert_eq!(h[0].valid_to, Some(day(2026, 1, 1, 0, 0)));
        // The store stopped believing Porto when Braga was written.
        assert_eq!(h[0].recorded_to, Some(braga_written));
        for m in engine.list(&u, &all_versions()) {
            for link in [m.prev, m.next].into_iter().flatten() {
                assert!(engine.get(&u, link).is_ok(), "{} links to {link}", m.id);
            }
        }
        // As of the time Braga was current, Porto is superseded by nothing readable.
        let view = engine.as_of(&u, AsOf::Seq(seq_v1))?;
        let porto = view.get(v0.id)?;
        assert_eq!((porto.status, porto.next), (Status::Superseded, None));
        assert!(view.list(&ListOptions::default())?.is_empty());
        assert!(matches!(view.get(v1.id), Err(Error::NotFound { .. })));
        // What was true in mid-2025 is Porto now: Braga is forgotten.
        let true_then = engine.as_of(&u, AsOf::ValidTime(day(2025, 6, 1, 0, 0)))?.list(&ListOptions::default())?;
        assert_eq!(ids(&true_then), vec![v0.id]);
        let links: Vec<_> = engine
            .events(&u, 1, u64::MAX)?
            .into_iter()
            .filter_map(|ev| if let mnemon::EventBody::Superseded(s) = ev.body { Some((s.old, s.new)) } else { None })
            .collect();
        assert!(links.is_empty(), "every link touched a forgotten version: {links:?}");
        Ok(())
    };
    check(&engine)?;
    let digest = engine.digest();
    let receipt = engine.compact()?;
    assert!(receipt.verified, "{receipt}");
    assert_eq!(engine.digest(), digest);
    check(&engine)?;
    engine.close()?;
    let engine = Engine::open(dir.path())?;
    assert_eq!(engine.digest(), digest, "replaying the compacted log relinks the same way");
    check(&engine)?;
    engine.close()?;
    Ok(())
}

/// Valid time (when a fact held) and recorded time (when the store
/// believed it) are kept apart, and `as_of` answers on either.
#[test]
fn valid_time_and_recorded_time_are_kept_apart() -> TestResult {
    let dir = tempfile::tempdir()?;
    let u = ns("user:lin-wei");
    let engine = Engine::open(dir.path())?;
    let (light_at, dark_at) = (day(2026, 3, 2, 9, 2), day(2026, 4, 20, 9, 0));
    let coffee = |text: &str, at| NewMemory::new(text).kind(Kind::Preference).key("user.coffee").event_time(at);
    let light = engine.remember(&u, coffee("Prefers light-roast Ethiopian coffee", light_at))?;
    let seq_light = engine.stats().last_seq;
    std::thread::sleep(Duration::from_millis(3));
    let dark = engine.remember(&u, coffee("Now prefers dark-roast coffee", dark_at))?;

    let check = |engine: &Engine| -> TestResult {
        let (l, d) = (engine.get(&u, light.id)?, engine.get(&u, dark.id)?);
        // Valid time: from the event times.
        assert_eq!((l.valid_from, l.valid_to), (light_at, Some(dark_at)));
        assert_eq!((d.valid_from, d.valid_to), (dark_at, None));
        // Recorded time: from the commit times.
        assert_eq!(l.recorded_to, Some(d.recorded_from));
        assert!(l.recorded_from < d.recorded_from);
        assert_eq!(d.recorded_to, None);
        assert_ne!(l.valid_to, l.recorded_to, "the wall clock of the write is not when the fact ended");
        assert!(l.valid_at(day(2026, 4, 1, 0, 0)) && !l.valid_at(dark_at) && d.valid_at(dark_at));

        // What was true then, as the store knows it now.
        let at = |t| -> mnemon::Result<Vec<MemoryId>> {
            Ok(ids(&engine.as_of(&u, AsOf::ValidTime(t))?.list(&ListOptions::default())?))
        };
        assert_eq!(at(day(2026, 2, 1, 0, 0))?, vec![]);
        assert_eq!(at(light_at)?, vec![light.id]);
        assert_eq!(at(day(2026, 4, 1, 0, 0))?, vec![light.id]);
        assert_eq!(at(dark_at)?, vec![dark.id]);
        assert_eq!(at(day(2027, 1, 1, 0, 0))?, vec![dark.id]);
        let view = engine.as_of(&u, AsOf::ValidTime(day(2026, 4, 25, 0, 0)))?;
        assert_eq!(view.valid_time(), Some(day(2026, 4, 25, 0, 0)));
        assert_eq!(ids(&view.list(&all_versions())?), vec![light.id, dark.id]);
        assert_eq!(ids(&view.history(dark.id)?), vec![light.id, dark.id]);
        let early = engine.as_of(&u, AsOf::ValidTime(day(2026, 4, 1, 0, 0)))?;
        assert!(matches!(early.get(dark.id), Err(Error::NotFound { .. })), "not yet true then");
        assert_eq!(ids(&early.history(light.id)?), vec![light.id]);

        // What the store knew then: before the second write, light roast,
        // still believed and with no end known.
        for at in [AsOf::Seq(seq_light), AsOf::Time(l.recorded_from)] {
            let then = engine.as_of(&u, at)?.list(&ListOptions::default())?;
            assert_eq!(ids(&then), vec![light.id], "{at:?}");
            assert_eq!((then[0].status, then[0].valid_to, then[0].recorded_to), (Status::Active, None, None));
        }
        // Today's knowledge: dark roast; light roast once it was recorded.
        assert_eq!(ids(&engine.list(&u, &ListOptions::default())), vec![dark.id]);

        // Recall takes either kind of as-of.
        let quiet = |as_of| mnemon::RecallOptions { as_of: Some(as_of), record_access: false, ..Default::default() };
        let top = |as_of| -> mnemon::Result<Vec<MemoryId>> {
            Ok(engine.recall(&u, "coffee roast", &quiet(as_of))?.iter().map(|h| h.memory.id).collect())
        };
        assert_eq!(top(AsOf::ValidTime(day(2026, 4, 1, 0, 0)))?, vec![light.id]);
        assert_eq!(top(AsOf::ValidTime(day(2026, 5, 1, 0, 0)))?, vec![dark.id]);
        assert_eq!(top(AsOf::Seq(seq_light))?, vec![light.id]);
        Ok(())
    };
    check(&engine)?;
    engine.close()?;
    let engine = Engine::open(dir.path())?;
    check(&engine)?;

    // A successor that states an earlier start than its predecessor's
    // stated one would become the current value and leave the newer one
    // valid for no time: it is refused, and nothing is written.
    let tea =
        engine.remember(&u, NewMemory::new("Drinks green tea").key("user.tea").event_time(day(2026, 4, 1, 0, 0)))?;
    let before = engine.last_seq();
    let older =
        engine.remember(&u, NewMemory::new("Drinks black tea").key("user.tea").event_time(day(2026, 3, 1, 0, 0)));
    assert!(matches!(older, Err(Error::Conflict(_))), "{older:?}");
    assert_eq!(engine.last_seq(), before);
    let mid_april = engine.as_of(&u, AsOf::ValidTime(day(2026, 4, 15, 0, 0)))?.list(&ListOptions::default())?;
    assert!(mid_april.iter().any(|m| m.id == tea.id));
    // A predecessor written without a time is valid from its write; a
    // successor that states an earlier time (a message's own time, a
    // clock behind) still replaces it, ending it at its own start: no
    // interval runs backwards.
    let now_tea = engine.remember(&u, NewMemory::new("Drinks oolong").key("user.drink"))?;
    let earlier = now_tea.id;
    let t0 = engine.get(&u, earlier)?.valid_from;
    let next = engine.remember(
        &u,
        NewMemory::new("Drinks jasmine tea").key("user.drink").event_time(t0 - chrono::Duration::days(1)),
    )?;
    let t1 = engine.get(&u, earlier)?;
    assert_eq!(t1.valid_to, Some(t1.valid_from));
    assert_eq!(engine.get(&u, next.id)?.status, mnemon::Status::Active);
    engine.close()?;
    Ok(())
}

/// A dry run checks the reason as the real forget does (a line break is
/// refused, nothing written) and reports what the real forget will: the
/// same counts and the same quotes cut from the reason.
#[test]
fn a_forget_dry_run_checks_and_cuts_the_reason_as_the_forget_does() -> TestResult {
    let dir = tempfile::tempdir()?;
    let u = ns("u");
    let engine = Engine::open(dir.path())?;
    let m = engine.remember(&u, NewMemory::new("Another live memory about walruses on the ice"))?;
    let seq = engine.stats().last_seq;
    for bad in ["a\nb", "a\u{1B}[2Jb", "a\u{202E}b"] {
        let r = engine.forget_dry_run(&u, ForgetRequest::Memory(m.id), bad);
        assert!(matches!(r, Err(Error::InvalidInput { field: "reason", .. })), "{bad:?}: {r:?}");
        let r = engine.forget(&u, ForgetRequest::Memory(m.id), bad);
        assert!(matches!(r, Err(Error::InvalidInput { field: "reason", .. })), "{bad:?}: {r:?}");
    }
    let reason = "drop Another live memory about walruses on the ice please";
    let preview = engine.forget_dry_run(&u, ForgetRequest::Memory(m.id), reason)?;
    assert_eq!(preview.quotes_cut, 1);
    assert_eq!(engine.stats().last_seq, seq, "a dry run writes nothing");
    let out = engine.forget(&u, ForgetRequest::Memory(m.id), reason)?;
    assert_eq!(out, preview);
    Ok(())
}

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
            assert_eq!(m.first_seen, engine.get(u1, chain[0])?.valid_from);
        }
    }
    assert_eq!(ids(&engine.list(u1, &ListOptions::default())), vec![chain[last]]);
    assert_eq!(ids(&engine.list(u1, &all_versions())), chain);

    // As of each step, by position and by time: exactly that version is active.
    for (i, s) in steps.iter().enumerate() {
        for at in [AsOf::Seq(s.seq), AsOf::Time(s.time), AsOf::Time(engine.get(u1, s.id)?.valid_from)] {
            let view = engine.as_of(u1, at)?;
            assert_eq!(view.seq(), s.seq, "{at:?}");
            let live = view.list(&ListOptions::default())?;
            assert_eq!(ids(&live), vec![s.id], "step {i} {at:?}");
            assert_eq!(live[0].status, Status::Active);
            assert_eq!(live[0].next, None);
            assert_eq!(live[0].valid_to, None);
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
    // Equal content (after case and whitespace normalisation) is a no-op.
    for same in ["My laptop is a MacBook Air", "  my LAPTOP is a   macbook air "] {
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
    let dup = engine.remember(&u1, NewMemory::new("I LIVE in Lisbon").key("user.city"))?;
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

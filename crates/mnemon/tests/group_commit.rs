//! Group commit under concurrency: every acknowledged write is in the log
//! exactly once, the log is gap-free, ids are unique, and all of it survives
//! a reopen, with per-group and with interval durability.

use std::collections::{BTreeMap, BTreeSet};
use std::error::Error as StdError;
use std::path::Path;
use std::sync::{Arc, Barrier};
use std::time::Duration;

use mnemon::{
    DedupMode, Durability, Engine, EventBody, ListOptions, MemoryId, Namespace, NewMemory, NewObservation,
    RememberAction, Role, Seq,
};

type TestResult = Result<(), Box<dyn StdError>>;

const THREADS: usize = 8;
const WRITES: usize = 50;

fn ns(name: &str) -> Namespace {
    Namespace::new(name).expect("valid namespace")
}

/// What one writer thread was told: memory id → content, observation seqs.
#[derive(Default)]
struct Acked {
    memories: BTreeMap<MemoryId, (Namespace, String)>,
    observations: Vec<(Namespace, Seq)>,
}

/// `THREADS` threads each write `WRITES` times: memories into their own
/// namespace and a shared one, observations, and small batches.
fn hammer(engine: &Engine) -> Result<Acked, Box<dyn StdError>> {
    let barrier = Arc::new(Barrier::new(THREADS));
    let handles: Vec<_> = (0..THREADS)
        .map(|t| {
            let engine = engine.clone();
            let barrier = barrier.clone();
            std::thread::spawn(move || -> mnemon::Result<Acked> {
                let own = ns(&format!("agent-{t}"));
                let shared = ns("shared");
                let mut acked = Acked::default();
                barrier.wait();
                for i in 0..WRITES {
                    match i % 5 {
                        0 | 1 => {
                            let text = format!("Thread {t} note {i}: the meeting room {i} is booked");
                            let r = engine.remember(&own, NewMemory::new(text.clone()).dedup(DedupMode::Off))?;
                            assert_eq!(r.action, RememberAction::Created);
                            acked.memories.insert(r.id, (own.clone(), text));
                        }
                        2 => {
                            let text = format!("线程{t}的第{i}条共享记录");
                            let r = engine.remember(&shared, NewMemory::new(text.clone()).dedup(DedupMode::Off))?;
                            acked.memories.insert(r.id, (shared.clone(), text));
                        }
                        3 => {
                            let id = engine.observe(
                                &own,
                                NewObservation::new(format!("s{t}"), Role::User, format!("turn {i} of thread {t}")),
                            )?;
                            acked.observations.push((own.clone(), id.0));
                        }
                        _ => {
                            let batch: Vec<NewMemory> = (0..3)
                                .map(|j| NewMemory::new(format!("Thread {t} batch {i} item {j}")).dedup(DedupMode::Off))
                                .collect();
                            let texts: Vec<String> = (0..3).map(|j| format!("Thread {t} batch {i} item {j}")).collect();
                            for (r, text) in engine.remember_batch(&own, batch)?.into_iter().zip(texts) {
                                acked.memories.insert(r?.id, (own.clone(), text));
                            }
                        }
                    }
                }
                Ok(acked)
            })
        })
        .collect();
    let mut all = Acked::default();
    for h in handles {
        let acked = h.join().map_err(|_| "writer thread panicked")??;
        for (id, v) in acked.memories {
            assert!(all.memories.insert(id, v).is_none(), "memory id {id} handed out twice");
        }
        all.observations.extend(acked.observations);
    }
    Ok(all)
}

fn expected_events() -> u64 {
    let per_thread: usize = (0..WRITES).map(|i| if i % 5 == 4 { 3 } else { 1 }).sum();
    (THREADS * per_thread) as u64
}

/// Every acknowledged write is present, every seq in `1..=last` decodes in
/// exactly one namespace's export, and nothing else is in the log.
fn check(engine: &Engine, acked: &Acked) -> TestResult {
    let last = engine.stats().last_seq;
    assert_eq!(last, expected_events());
    let mut namespaces: BTreeSet<Namespace> = (0..THREADS).map(|t| ns(&format!("agent-{t}"))).collect();
    namespaces.insert(ns("shared"));
    let mut seen: BTreeMap<Seq, Namespace> = BTreeMap::new();
    for n in &namespaces {
        for ev in engine.events(n, 1, u64::MAX)? {
            assert_eq!(&ev.ns, n);
            assert!(seen.insert(ev.seq, n.clone()).is_none(), "seq {} exported twice", ev.seq);
            match &ev.body {
                EventBody::Extracted(x) => {
                    assert_eq!(acked.memories.get(&MemoryId(ev.seq)), Some(&(n.clone(), x.content.clone())))
                }
                EventBody::Observed(_) => {
                    assert!(acked.observations.contains(&(n.clone(), ev.seq)))
                }
                other => panic!("unexpected event {other:?}"),
            }
        }
    }
    let seqs: Vec<Seq> = seen.keys().copied().collect();
    assert_eq!(seqs, (1..=last).collect::<Vec<_>>(), "the log has gaps or extra records");
    assert_eq!(acked.memories.len() + acked.observations.len(), last as usize);
    for n in &namespaces {
        let listed: BTreeMap<MemoryId, String> =
            engine.list(n, &ListOptions::default()).into_iter().map(|m| (m.id, m.content)).collect();
        let want: BTreeMap<MemoryId, String> =
            acked.memories.iter().filter(|(_, (mn, _))| mn == n).map(|(id, (_, text))| (*id, text.clone())).collect();
        assert_eq!(listed, want, "namespace {n}");
        let obs: Vec<Seq> = engine.observations(n, None).iter().map(|o| o.id.0).collect();
        let want: Vec<Seq> = acked.observations.iter().filter(|(on, _)| on == n).map(|(_, s)| *s).collect();
        let mut want_sorted = want.clone();
        want_sorted.sort_unstable();
        assert_eq!(obs, want_sorted);
    }
    Ok(())
}

fn run(dir: &Path, durability: Durability) -> TestResult {
    let engine = Engine::builder(dir).durability(durability).open()?;
    let acked = hammer(&engine)?;
    engine.sync()?;
    check(&engine, &acked)?;
    let digest = engine.digest();
    engine.close()?;
    let engine = Engine::open(dir)?;
    check(&engine, &acked)?;
    assert_eq!(engine.digest(), digest);
    assert_eq!(engine.open_report().events_replayed, expected_events());
    engine.close()?;
    Ok(())
}

#[test]
fn concurrent_writers_per_group_durability() -> TestResult {
    let dir = tempfile::tempdir()?;
    run(dir.path(), Durability::PerGroup)
}

#[test]
fn concurrent_writers_interval_durability() -> TestResult {
    let dir = tempfile::tempdir()?;
    run(dir.path(), Durability::Interval(Duration::from_millis(10)))
}

/// Groups are bounded by `max_group`; a tiny bound still commits everything.
#[test]
fn concurrent_writers_small_groups_and_queue() -> TestResult {
    let dir = tempfile::tempdir()?;
    let engine = Engine::builder(dir.path()).max_group(2).queue_capacity(1).open()?;
    let acked = hammer(&engine)?;
    check(&engine, &acked)?;
    engine.close()?;
    let engine = Engine::open(dir.path())?;
    check(&engine, &acked)?;
    engine.close()?;
    Ok(())
}

/// Dropping the last clone without `close` still commits what was acknowledged.
#[test]
fn drop_without_close_keeps_interval_writes() -> TestResult {
    let dir = tempfile::tempdir()?;
    let u1 = ns("u1");
    let mut ids = Vec::new();
    {
        let engine = Engine::builder(dir.path()).durability(Durability::Interval(Duration::from_secs(30))).open()?;
        let clone = engine.clone();
        for i in 0..20 {
            ids.push(clone.remember(&u1, NewMemory::new(format!("Interval write number {i}")))?.id);
        }
        drop(clone);
    }
    let engine = Engine::open(dir.path())?;
    let listed: Vec<MemoryId> = engine.list(&u1, &ListOptions::default()).iter().map(|m| m.id).collect();
    assert_eq!(listed, ids);
    engine.close()?;
    Ok(())
}

/// Writes through a clone after `close` are refused, not lost silently.
#[test]
fn writes_after_close_are_refused() -> TestResult {
    let dir = tempfile::tempdir()?;
    let u1 = ns("u1");
    let engine = Engine::open(dir.path())?;
    let clone = engine.clone();
    engine.remember(&u1, NewMemory::new("Written before close"))?;
    engine.close()?;
    let r = clone.remember(&u1, NewMemory::new("Written after close"));
    assert!(matches!(r, Err(mnemon::Error::Closed)), "{r:?}");
    assert!(matches!(clone.sync(), Err(mnemon::Error::Closed)));
    drop(clone);
    let engine = Engine::open(dir.path())?;
    assert_eq!(engine.list(&u1, &ListOptions::default()).len(), 1);
    engine.close()?;
    Ok(())
}

/// Writers racing on the same memory are serialised by the writer: one
/// creation and duplicates of it, one chain through a slot key, one winner
/// per supersede of a version.
#[test]
fn racing_writers_on_one_memory() -> TestResult {
    let dir = tempfile::tempdir()?;
    let u1 = ns("u1");
    let engine = Engine::open(dir.path())?;
    let base = engine.remember(&u1, NewMemory::new("The office wifi password is on the fridge"))?;
    let barrier = Arc::new(Barrier::new(THREADS));
    let handles: Vec<_> = (0..THREADS)
        .map(|t| {
            let (engine, barrier, u1) = (engine.clone(), barrier.clone(), u1.clone());
            std::thread::spawn(move || -> mnemon::Result<(RememberAction, RememberAction, Option<MemoryId>)> {
                barrier.wait();
                let same = engine.remember(&u1, NewMemory::new("我们下周五团建"))?;
                let slot = engine
                    .remember(&u1, NewMemory::new(format!("Thread {t} holds the desk booking")).key("office.desk"))?;
                let sup =
                    match engine.supersede(&u1, base.id, NewMemory::new(format!("The wifi password changed ({t})"))) {
                        Ok(r) => Some(r.id),
                        Err(mnemon::Error::Conflict(_)) => None,
                        Err(e) => return Err(e),
                    };
                Ok((same.action, slot.action, sup))
            })
        })
        .collect();
    let mut results = Vec::new();
    for h in handles {
        results.push(h.join().map_err(|_| "thread panicked")??);
    }
    let created = results.iter().filter(|r| r.0 == RememberAction::Created).count();
    assert_eq!(created, 1, "{results:?}");
    assert!(results.iter().all(|r| matches!(r.0, RememberAction::Created | RememberAction::Duplicate)));
    let slot_created = results.iter().filter(|r| r.1 == RememberAction::Created).count();
    assert_eq!(slot_created, 1, "{results:?}");
    let winners: Vec<MemoryId> = results.iter().filter_map(|r| r.2).collect();
    assert_eq!(winners.len(), 1, "{results:?}");

    let check = |engine: &Engine| -> TestResult {
        let active = engine.list(&u1, &ListOptions::default());
        let desks: Vec<_> = active.iter().filter(|m| m.key.as_deref() == Some("office.desk")).collect();
        assert_eq!(desks.len(), 1);
        assert_eq!(engine.history(&u1, desks[0].id)?.len(), THREADS);
        assert_eq!(active.iter().filter(|m| m.content == "我们下周五团建").count(), 1);
        assert_eq!(engine.history(&u1, base.id)?.iter().map(|m| m.id).collect::<Vec<_>>(), vec![base.id, winners[0]]);
        assert_eq!(active.len(), 3);
        Ok(())
    };
    check(&engine)?;
    engine.close()?;
    let engine = Engine::open(dir.path())?;
    check(&engine)?;
    engine.close()?;
    Ok(())
}

//! Tenant isolation under concurrency: random interleavings of writes,
//! recalls and forgets from several threads across several namespaces.
//! Afterwards each namespace holds exactly its own memories, and recall in
//! one never returned another's.

use std::collections::{BTreeMap, BTreeSet};
use std::sync::{Arc, Mutex};

use mnemon::{DedupMode, Engine, ForgetRequest, MemoryId, Namespace, NewMemory, RecallOptions};
use rand::rngs::SmallRng;
use rand::{Rng, SeedableRng};

const NAMESPACES: &[&str] = &["tenant-a", "tenant-b", "tenant-c", "tenant-d"];
const WORDS: &[&str] = &["coffee", "flight", "咖啡", "出差", "birthday", "project", "猫", "deadline", "tea", "museum"];

fn run_once(seed: u64) -> Result<(), Box<dyn std::error::Error>> {
    let dir = tempfile::tempdir()?;
    let engine = Engine::open(dir.path())?;
    // Per namespace: id -> content of what is expected to be live.
    let model: Arc<Mutex<BTreeMap<String, BTreeMap<MemoryId, String>>>> = Arc::default();
    let threads: Vec<_> = (0..4u64)
        .map(|t| {
            let engine = engine.clone();
            let model = model.clone();
            std::thread::spawn(move || -> Result<(), String> {
                let mut rng = SmallRng::seed_from_u64(seed ^ (t + 1).wrapping_mul(0x9E37_79B9_7F4A_7C15));
                for i in 0..60 {
                    let ns_name = NAMESPACES[rng.gen_range(0..NAMESPACES.len())];
                    let ns = Namespace::new(ns_name).map_err(|e| e.to_string())?;
                    match rng.gen_range(0..10) {
                        0..=5 => {
                            let w1 = WORDS[rng.gen_range(0..WORDS.len())];
                            let w2 = WORDS[rng.gen_range(0..WORDS.len())];
                            let text = format!("{ns_name} thread {t} note {i}: {w1} and {w2}");
                            let r = engine
                                .remember(&ns, NewMemory::new(text.clone()).dedup(DedupMode::Off))
                                .map_err(|e| e.to_string())?;
                            model
                                .lock()
                                .map_err(|e| e.to_string())?
                                .entry(ns_name.into())
                                .or_default()
                                .insert(r.id, text);
                        }
                        6..=8 => {
                            let q = WORDS[rng.gen_range(0..WORDS.len())];
                            let hits = engine.recall(&ns, q, &RecallOptions::default()).map_err(|e| e.to_string())?;
                            for h in hits {
                                if h.memory.namespace != ns || !h.memory.content.starts_with(ns_name) {
                                    return Err(format!("recall in {ns_name} returned {:?}", h.memory.content));
                                }
                            }
                        }
                        _ => {
                            // Forget one of this namespace's memories, chosen under the model lock
                            // so no other thread forgets the same one concurrently.
                            let mut m = model.lock().map_err(|e| e.to_string())?;
                            let ids: Vec<MemoryId> =
                                m.get(ns_name).map(|x| x.keys().copied().collect()).unwrap_or_default();
                            if ids.is_empty() {
                                continue;
                            }
                            let id = ids[rng.gen_range(0..ids.len())];
                            let out =
                                engine.forget(&ns, ForgetRequest::Memory(id), "test").map_err(|e| e.to_string())?;
                            if out.memory_ids != vec![id] {
                                return Err(format!("forget {id} in {ns_name} erased {:?}", out.memory_ids));
                            }
                            m.entry(ns_name.into()).or_default().remove(&id);
                        }
                    }
                }
                Ok(())
            })
        })
        .collect();
    for t in threads {
        t.join().map_err(|_| "thread panicked")??;
    }
    let check = |engine: &Engine| -> Result<(), Box<dyn std::error::Error>> {
        let model = model.lock().map_err(|e| e.to_string())?;
        for ns_name in NAMESPACES {
            let ns = Namespace::new(*ns_name)?;
            let live: BTreeMap<MemoryId, String> =
                engine.list(&ns, &Default::default()).into_iter().map(|m| (m.id, m.content)).collect();
            let expected = model.get(*ns_name).cloned().unwrap_or_default();
            assert_eq!(live, expected, "seed {seed}: namespace {ns_name}");
            let all_ids: BTreeSet<MemoryId> = live.keys().copied().collect();
            for other in NAMESPACES.iter().filter(|o| *o != ns_name) {
                let other_ns = Namespace::new(*other)?;
                for id in &all_ids {
                    assert!(engine.get(&other_ns, *id).is_err(), "seed {seed}: {id} readable from {other}");
                }
            }
        }
        Ok(())
    };
    check(&engine)?;
    engine.close()?;
    let engine = Engine::open(dir.path())?;
    check(&engine)?;
    Ok(())
}

#[test]
fn namespaces_stay_isolated_under_concurrent_random_operations() -> Result<(), Box<dyn std::error::Error>> {
    let base: u64 = std::env::var("MNEMON_ISOLATION_SEED").ok().and_then(|s| s.parse().ok()).unwrap_or(0x5eed_1234);
    for round in 0..4 {
        let seed = base.wrapping_add(round);
        println!("isolation round {round}: seed {seed} (MNEMON_ISOLATION_SEED to replay)");
        run_once(seed)?;
    }
    Ok(())
}

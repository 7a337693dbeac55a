//! Writes that do not wait for embedding (`EmbedMode::Deferred`):
//!
//! * recall during the backlog finds the memory lexically, and its
//!   explanation says the vector is pending;
//! * the near-duplicate decision is made when the vector arrives, as one
//!   `Superseded` event, in log order, and only under `DedupMode::Supersede`;
//! * replay equals live at any point of the backlog and after it
//!   (property test), and a backlog left at close resumes at the next open;
//! * kill loop: SIGKILL while the background embedder is behind loses no
//!   acknowledged memory, and the backlog resumes and drains after reopen.
//!
//! `MNEMON_CRASH_ITERS` sets the kills (default 12); `MNEMON_CRASH_SEED`
//! replays a run.

use std::collections::BTreeMap;
use std::io::Write;
use std::process::{Command, Stdio};
use std::sync::{Arc, Condvar, Mutex};
use std::time::Duration;

use mnemon::embed::{EmbedKind, Embedder, HashingEmbedder};
use mnemon::{
    event::SupersedeReason, DedupMode, EmbedMode, Engine, EventBody, ForgetRequest, MemoryId, Namespace, NewMemory,
    RecallOptions, RememberAction, Status,
};
use proptest::prelude::*;
use rand::rngs::SmallRng;
use rand::{Rng, SeedableRng};

/// A word that makes a restatement: the test embedder drops it, so a text
/// with it embeds exactly as the text without it (cosine 1), while the
/// contents differ and no fact (number, name, negation) changes.
const RESTATE: &str = " indeed";

/// Hashing embedder (384-d) that ignores [`RESTATE`], and whose background
/// embedder thread waits while the gate is closed and sleeps `delay` per
/// text (callers' threads never wait).
struct TestEmbedder {
    inner: HashingEmbedder,
    gate: Arc<(Mutex<bool>, Condvar)>,
    delay: Duration,
}

impl TestEmbedder {
    fn new(open: bool, delay: Duration) -> (Arc<TestEmbedder>, Arc<(Mutex<bool>, Condvar)>) {
        let gate = Arc::new((Mutex::new(open), Condvar::new()));
        let e = TestEmbedder { inner: HashingEmbedder::new(384).unwrap(), gate: gate.clone(), delay };
        (Arc::new(e), gate)
    }
}

fn open_gate(gate: &(Mutex<bool>, Condvar)) {
    *gate.0.lock().unwrap() = true;
    gate.1.notify_all();
}

impl Embedder for TestEmbedder {
    fn model_id(&self) -> &str {
        self.inner.model_id()
    }

    fn dim(&self) -> usize {
        self.inner.dim()
    }

    fn embed(&self, texts: &[&str], kind: EmbedKind) -> mnemon::Result<Vec<Vec<f32>>> {
        if std::thread::current().name() == Some("mnemon-embedder") {
            let mut open = self.gate.0.lock().unwrap();
            while !*open {
                open = self.gate.1.wait(open).unwrap();
            }
            drop(open);
            std::thread::sleep(self.delay * u32::try_from(texts.len()).unwrap());
        }
        let stripped: Vec<String> = texts.iter().map(|t| t.replace(RESTATE, "")).collect();
        let refs: Vec<&str> = stripped.iter().map(String::as_str).collect();
        self.inner.embed(&refs, kind)
    }
}

fn ns(s: &str) -> Namespace {
    Namespace::new(s).unwrap()
}

/// Opens an engine. The store's lock is a `flock` on `DATA/LOCK`: a child
/// that another test of this binary forks (the kill test below) shares every
/// open file of this process until it execs, so a store closed here an
/// instant before can still read as locked; such an open is retried for up
/// to two seconds.
fn open(dir: &std::path::Path, embedder: Arc<TestEmbedder>, mode: EmbedMode) -> Engine {
    let start = std::time::Instant::now();
    loop {
        match Engine::builder(dir).embedder(embedder.clone()).embed_mode(mode).open() {
            Err(mnemon::Error::Locked { .. }) if start.elapsed() < Duration::from_secs(2) => {
                std::thread::sleep(Duration::from_millis(5));
            }
            r => return r.unwrap(),
        }
    }
}

const WAIT: Duration = Duration::from_secs(60);

#[test]
fn recall_during_backlog_is_lexical_and_says_the_vector_is_pending() {
    let dir = tempfile::tempdir().unwrap();
    let (emb, gate) = TestEmbedder::new(false, Duration::ZERO);
    let engine = open(dir.path(), emb, EmbedMode::Deferred);
    let n = ns("u");
    let r = engine.remember(&n, NewMemory::new("the user plays the cello on sunday mornings")).unwrap();
    assert_eq!(r.action, RememberAction::Created);
    assert!(r.vector_pending);
    let other = engine.remember(&n, NewMemory::new("the user drinks black coffee").embed(EmbedMode::Sync)).unwrap();
    assert!(!other.vector_pending, "a per-call sync write embeds before it returns");
    let s = engine.stats();
    assert_eq!((s.embed_backlog, s.vectors), (1, 1), "{s:?}");

    let hits = engine.recall(&n, "cello", &RecallOptions::default()).unwrap();
    let hit = hits.iter().find(|h| h.memory.id == r.id).expect("found lexically during the backlog");
    assert!(hit.explain.vector_pending);
    assert_eq!(hit.explain.similarity, 0.0);
    assert!(hit.explain.lexical > 0.0);
    let coffee = hits.iter().find(|h| h.memory.id == other.id);
    assert!(coffee.is_none_or(|h| !h.explain.vector_pending));
    // Replay equals live in the middle of the backlog.
    assert!(engine.check().unwrap().consistent);

    open_gate(&gate);
    assert_eq!(engine.wait_embedded(WAIT).unwrap(), 0);
    let s = engine.stats();
    assert_eq!((s.embed_backlog, s.vectors, s.embed_failed), (0, 2, 0), "{s:?}");
    let hits = engine.recall(&n, "cello", &RecallOptions::default()).unwrap();
    let hit = hits.iter().find(|h| h.memory.id == r.id).unwrap();
    assert!(!hit.explain.vector_pending);
    assert!(hit.explain.similarity > 0.0);
    assert!(engine.check().unwrap().consistent);
}

#[test]
fn late_near_duplicate_supersedes_as_the_synchronous_write_would() {
    let dir = tempfile::tempdir().unwrap();
    let (emb, gate) = TestEmbedder::new(false, Duration::ZERO);
    let engine = open(dir.path(), emb, EmbedMode::Sync);
    let text = "the user prefers green tea in the morning";

    // The synchronous path, for reference.
    let a = ns("sync");
    let base = engine.remember(&a, NewMemory::new(text)).unwrap();
    let r = engine.remember(&a, NewMemory::new(format!("{text}{RESTATE}"))).unwrap();
    assert!(matches!(r.action, RememberAction::NearDuplicate { old, .. } if old == base.id), "{r:?}");

    // Deferred: created at once, superseding the restated memory once the vector arrives.
    let b = ns("deferred");
    let base = engine.remember(&b, NewMemory::new(text)).unwrap();
    let r = engine.remember(&b, NewMemory::new(format!("{text}{RESTATE}")).embed(EmbedMode::Deferred)).unwrap();
    assert_eq!(r.action, RememberAction::Created);
    assert!(r.vector_pending);
    assert_eq!(engine.get(&b, base.id).unwrap().status, Status::Active, "no decision before the vector");

    // ExactOnly: the vector arrives, nothing is superseded.
    let c = ns("exact");
    let base_c = engine.remember(&c, NewMemory::new(text)).unwrap();
    let rc = engine
        .remember(&c, NewMemory::new(format!("{text}{RESTATE}")).embed(EmbedMode::Deferred).dedup(DedupMode::ExactOnly))
        .unwrap();

    // Log order decides: a later synchronous write that restates a pending
    // memory is not made its older version.
    let d = ns("order");
    let first = engine.remember(&d, NewMemory::new(text).embed(EmbedMode::Deferred)).unwrap();
    let later = engine.remember(&d, NewMemory::new(format!("{text}{RESTATE}"))).unwrap();
    assert_eq!(later.action, RememberAction::Created, "the pending memory has no vector to compare");

    // A restated memory under a slot key is not taken over by a keyless late version.
    let e = ns("keyed");
    let keyed = engine.remember(&e, NewMemory::new(text).key("user.tea")).unwrap();
    let loose = engine.remember(&e, NewMemory::new(format!("{text}{RESTATE}")).embed(EmbedMode::Deferred)).unwrap();

    open_gate(&gate);
    assert_eq!(engine.wait_embedded(WAIT).unwrap(), 0);

    let old = engine.get(&b, base.id).unwrap();
    assert_eq!(old.status, Status::Superseded);
    assert_eq!(old.next, Some(r.id));
    let new = engine.get(&b, r.id).unwrap();
    assert_eq!((new.status, new.prev), (Status::Active, Some(base.id)));
    let chain: Vec<String> = engine.history(&b, r.id).unwrap().into_iter().map(|m| m.content).collect();
    assert_eq!(chain, [text.to_string(), format!("{text}{RESTATE}")], "nothing dropped");
    let sup: Vec<_> = engine
        .events(&b, 1, u64::MAX)
        .unwrap()
        .into_iter()
        .filter_map(|ev| match ev.body {
            EventBody::Superseded(s) => Some(s),
            _ => None,
        })
        .collect();
    assert_eq!(sup.len(), 1);
    assert_eq!((sup[0].old, sup[0].new, &sup[0].reason), (base.id, r.id, &SupersedeReason::NearDuplicate));

    assert_eq!(engine.get(&c, base_c.id).unwrap().status, Status::Active);
    assert_eq!(engine.get(&c, rc.id).unwrap().status, Status::Active);
    assert_eq!(engine.get(&d, first.id).unwrap().status, Status::Active);
    assert_eq!(engine.get(&d, later.id).unwrap().status, Status::Active);
    assert_eq!(engine.get(&e, keyed.id).unwrap().status, Status::Active);
    assert_eq!(engine.get(&e, loose.id).unwrap().status, Status::Active);

    // The decision is in the log: a reopen neither repeats nor undoes it.
    let live = engine.digest();
    drop(engine);
    let (emb, _) = TestEmbedder::new(true, Duration::ZERO);
    let engine = open(dir.path(), emb, EmbedMode::Sync);
    assert_eq!(engine.open_report().vectors_pending, 0);
    assert_eq!(engine.open_report().vectors_embedded, 0, "every vector was cached");
    assert_eq!(engine.digest(), live);
}

#[test]
fn backlog_left_at_close_resumes_at_open() {
    let dir = tempfile::tempdir().unwrap();
    let n = ns("u");
    let texts: Vec<String> = (0..40).map(|i| format!("note number {i} about the garden shed")).collect();
    let ids: Vec<MemoryId> = {
        let (emb, _gate) = TestEmbedder::new(false, Duration::ZERO);
        let engine = open(dir.path(), emb, EmbedMode::Deferred);
        let ids = texts.iter().map(|t| engine.remember(&n, NewMemory::new(t)).unwrap().id).collect();
        assert_eq!(engine.stats().embed_backlog, 40);
        engine.close().unwrap();
        ids
    };
    let (emb, _) = TestEmbedder::new(true, Duration::ZERO);
    let engine = open(dir.path(), emb, EmbedMode::Sync);
    assert_eq!(engine.open_report().vectors_pending, 40);
    assert_eq!(engine.wait_embedded(WAIT).unwrap(), 0);
    assert_eq!(engine.stats().vectors, 40);
    for (id, t) in ids.iter().zip(&texts) {
        assert_eq!(&engine.get(&n, *id).unwrap().content, t);
    }
    let live = engine.digest();
    assert!(engine.check().unwrap().consistent);
    engine.close().unwrap();
    let (emb, _) = TestEmbedder::new(true, Duration::ZERO);
    let engine = open(dir.path(), emb, EmbedMode::Sync);
    assert_eq!((engine.open_report().vectors_pending, engine.open_report().vectors_embedded), (0, 0));
    assert_eq!(engine.digest(), live);
}

/// One step of the property test.
#[derive(Clone, Debug)]
enum Step {
    /// Remember text `t` of the pool (restated when `restate`), deferred or not.
    Remember { t: usize, restate: bool, deferred: bool, dedup: u8, keyed: bool },
    /// Forget the `i`-th memory written so far (modulo).
    Forget(usize),
    /// Let the embedder run until the backlog is empty.
    Drain,
    /// Compare the live digest with a fresh replay.
    Check,
}

const POOL: &[&str] = &[
    "the user prefers green tea in the morning",
    "the user walks the dog after work",
    "the user keeps a sourdough starter in the fridge",
    "the user is learning to play the cello",
    "the user plans a trip to the coast in spring",
];

fn step() -> impl Strategy<Value = Step> {
    prop_oneof![
        6 => (0..POOL.len(), any::<bool>(), any::<bool>(), 0..3u8, proptest::bool::weighted(0.2))
            .prop_map(|(t, restate, deferred, dedup, keyed)| Step::Remember { t, restate, deferred, dedup, keyed }),
        1 => (0..64usize).prop_map(Step::Forget),
        1 => Just(Step::Drain),
        1 => Just(Step::Check),
    ]
}

proptest! {
    #![proptest_config(ProptestConfig { cases: 24, ..ProptestConfig::default() })]

    /// Replay equals live with deferred vectors: at any point of the
    /// backlog (a fresh replay of the log gives the live digest), after it,
    /// and across a reopen; a backlog left at close resumes; no text the
    /// caller sent is lost.
    #[test]
    fn replay_equals_live_with_deferred_vectors(steps in proptest::collection::vec(step(), 1..40), close_early in any::<bool>()) {
        let dir = tempfile::tempdir().unwrap();
        let n = ns("p");
        let (emb, gate) = TestEmbedder::new(false, Duration::ZERO);
        let engine = open(dir.path(), emb, EmbedMode::Sync);
        let mut written: Vec<(MemoryId, String)> = Vec::new();
        let mut forgotten: Vec<MemoryId> = Vec::new();
        for s in &steps {
            match s {
                Step::Remember { t, restate, deferred, dedup, keyed } => {
                    let text = if *restate { format!("{}{RESTATE}", POOL[*t]) } else { POOL[*t].to_string() };
                    let dedup = [DedupMode::Supersede, DedupMode::ExactOnly, DedupMode::Off][usize::from(*dedup)];
                    let mode = if *deferred { EmbedMode::Deferred } else { EmbedMode::Sync };
                    let mut m = NewMemory::new(&text).embed(mode).dedup(dedup);
                    if *keyed {
                        m = m.key(format!("user.k{t}"));
                    }
                    let r = engine.remember(&n, m).unwrap();
                    written.push((r.id, text));
                }
                Step::Forget(i) if !written.is_empty() => {
                    let id = written[i % written.len()].0;
                    let f = engine.forget(&n, ForgetRequest::Memory(id), "test").unwrap();
                    forgotten.extend(f.memory_ids);
                }
                Step::Forget(_) => {}
                Step::Drain => {
                    open_gate(&gate);
                    prop_assert_eq!(engine.wait_embedded(WAIT).unwrap(), 0);
                    *gate.0.lock().unwrap() = false;
                }
                Step::Check => prop_assert!(engine.check().unwrap().consistent),
            }
        }
        prop_assert!(engine.check().unwrap().consistent);
        if !close_early {
            open_gate(&gate);
            prop_assert_eq!(engine.wait_embedded(WAIT).unwrap(), 0);
        }
        let backlog = engine.embed_backlog();
        let live = engine.digest();
        engine.close().unwrap();

        let (emb, _) = TestEmbedder::new(true, Duration::ZERO);
        let engine = open(dir.path(), emb, EmbedMode::Sync);
        // The backlog counts memories handed to the embedder; one forgotten
        // meanwhile, or committed while closing, is not queued again.
        prop_assert!(engine.open_report().vectors_pending <= backlog);
        if backlog == 0 {
            prop_assert_eq!(engine.digest(), live);
        }
        prop_assert_eq!(engine.wait_embedded(WAIT).unwrap(), 0);
        prop_assert!(engine.check().unwrap().consistent);
        let live = engine.digest();
        let versions: usize = {
            let s = engine.stats();
            s.active_memories + s.superseded_memories + s.archived_memories
        };
        prop_assert_eq!(engine.stats().vectors, versions, "every memory indexed");
        for (id, text) in &written {
            if forgotten.contains(id) {
                prop_assert!(engine.get(&n, *id).is_err());
            } else {
                let got = engine.get(&n, *id);
                prop_assert!(got.is_ok(), "memory {} lost", id);
                prop_assert_eq!(&got.unwrap().content, text);
            }
        }
        engine.close().unwrap();
        let (emb, _) = TestEmbedder::new(true, Duration::ZERO);
        let engine = open(dir.path(), emb, EmbedMode::Sync);
        prop_assert_eq!(engine.open_report().vectors_pending, 0);
        prop_assert_eq!(engine.digest(), live);
    }
}

const CHILD: &str = "MNEMON_DEFERRED_KILL_CHILD";

/// The kill loop's child: deferred writes as fast as it can, with a slow
/// background embedder, one fsynced line per acknowledged memory.
#[test]
fn kill_child() {
    let Ok(spec) = std::env::var(CHILD) else {
        return;
    };
    let mut parts = spec.split('\t');
    let (dir, acks, seed) = (parts.next().unwrap(), parts.next().unwrap(), parts.next().unwrap());
    let mut rng = SmallRng::seed_from_u64(seed.parse().unwrap());
    // 4 ms per text: the embedder falls behind the writes.
    let (emb, _) = TestEmbedder::new(true, Duration::from_millis(4));
    let engine = open(std::path::Path::new(dir), emb, EmbedMode::Deferred);
    let mut f = std::fs::OpenOptions::new().create(true).append(true).open(acks).unwrap();
    // A line the previous child was killed in the middle of ends here, so
    // it cannot run into this child's first line ("37" + "16\t…" = 3716).
    if std::fs::read(acks).unwrap().last().is_some_and(|b| *b != b'\n') {
        f.write_all(b"\n").unwrap();
    }
    let n = ns("k");
    loop {
        let t = POOL[rng.gen_range(0..POOL.len())];
        let text =
            if rng.gen_bool(0.5) { format!("{t}{RESTATE}") } else { format!("{t} {}", rng.gen_range(0..1_000_000u32)) };
        let r = engine.remember(&n, NewMemory::new(&text)).unwrap();
        // One write per line: `writeln!` may split it into several.
        f.write_all(format!("{}\t{}\n", r.id.0, text).as_bytes()).unwrap();
        f.sync_data().unwrap();
    }
}

/// SIGKILL while the embedder is behind: every acknowledged memory is
/// there, the backlog resumes at open and drains, and replay equals live.
#[test]
fn kill_during_backfill_loses_nothing_and_the_backlog_resumes() {
    if std::env::var(CHILD).is_ok() {
        return;
    }
    let iters: usize = std::env::var("MNEMON_CRASH_ITERS").ok().and_then(|s| s.parse().ok()).unwrap_or(12);
    let seed: u64 = std::env::var("MNEMON_CRASH_SEED").ok().and_then(|s| s.parse().ok()).unwrap_or_else(rand::random);
    eprintln!("MNEMON_CRASH_SEED={seed}");
    let mut rng = SmallRng::seed_from_u64(seed);
    let exe = std::env::current_exe().unwrap();
    let mut resumed = 0usize;
    let mut dir = tempfile::tempdir().unwrap();
    for i in 0..iters {
        if i % 4 == 0 {
            dir = tempfile::tempdir().unwrap();
        }
        let acks = dir.path().join("acks");
        let spec = format!("{}\t{}\t{}", dir.path().join("store").display(), acks.display(), rng.gen::<u64>());
        let mut c = Command::new(&exe)
            .args(["--exact", "kill_child", "--nocapture", "--test-threads", "1"])
            .env(CHILD, spec)
            .stdout(Stdio::null())
            .stderr(Stdio::null())
            .spawn()
            .unwrap();
        std::thread::sleep(Duration::from_millis(rng.gen_range(150..700)));
        c.kill().unwrap(); // SIGKILL
        c.wait().unwrap();

        let acked: BTreeMap<u64, String> = std::fs::read_to_string(&acks)
            .unwrap_or_default()
            .lines()
            .filter_map(|l| l.split_once('\t'))
            .map(|(id, t)| (id.parse().unwrap(), t.to_string()))
            .collect();
        let (emb, _) = TestEmbedder::new(true, Duration::ZERO);
        let engine = open(&dir.path().join("store"), emb, EmbedMode::Sync);
        resumed += engine.open_report().vectors_pending;
        let n = ns("k");
        for (id, text) in &acked {
            let m = engine.get(&n, MemoryId(*id)).unwrap_or_else(|e| panic!("seed {seed}: memory {id} lost: {e}"));
            assert_eq!(&m.content, text, "seed {seed}");
        }
        assert_eq!(engine.wait_embedded(WAIT).unwrap(), 0, "seed {seed}");
        let s = engine.stats();
        assert_eq!(s.vectors, s.active_memories + s.superseded_memories + s.archived_memories, "seed {seed}");
        assert!(engine.check().unwrap().consistent, "seed {seed}");
        let live = engine.digest();
        engine.close().unwrap();
        let (emb, _) = TestEmbedder::new(true, Duration::ZERO);
        let engine = open(&dir.path().join("store"), emb, EmbedMode::Sync);
        assert_eq!(engine.open_report().vectors_pending, 0, "seed {seed}");
        assert_eq!(engine.open_report().vectors_embedded, 0, "seed {seed}: every vector cached");
        assert_eq!(engine.digest(), live, "seed {seed}");
    }
    assert!(resumed > 0, "seed {seed}: no kill left a backlog; the test did not test");
}

//! Replay equals live: the projections rebuilt from the log on open are the
//! ones the live engine had, checked by digest and by a state-machine test
//! against a plain in-memory model.

use std::collections::{BTreeMap, BTreeSet};
use std::error::Error as StdError;
use std::path::Path;

use mnemon::{
    AsOf, DedupMode, Engine, Error, EventBody, ForgetOutcome, ForgetRequest, ListOptions, MemoryId, Namespace,
    NewMemory, NewObservation, ObservationId, RememberAction, Role, Status, Tier,
};
use proptest::prelude::*;

type TestResult = Result<(), Box<dyn StdError>>;

fn ns(name: &str) -> Namespace {
    Namespace::new(name).expect("valid namespace")
}

fn all_versions() -> ListOptions {
    ListOptions { include_superseded: true, ..ListOptions::default() }
}

#[test]
fn digest_after_reopen_equals_live() -> TestResult {
    let dir = tempfile::tempdir()?;
    let (u1, u2, team) = (ns("u1"), ns("u2"), ns("team:alpha"));
    let engine = Engine::open(dir.path())?;
    let o1 = engine.observe(&u1, NewObservation::new("s1", Role::User, "I just adopted a cat called Miso"))?;
    let o2 = engine.observe(&u1, NewObservation::new("s1", Role::Assistant, "Congratulations on adopting Miso!"))?;
    engine.observe_batch(
        &u2,
        vec![
            NewObservation::new("会话1", Role::User, "我下周二去上海出差"),
            NewObservation::new("会话1", Role::Tool, "已预订上海酒店两晚"),
        ],
    )?;
    let cat = engine.remember(&u1, NewMemory::new("The user has a cat called Miso").sources([o1, o2]).session("s1"))?;
    engine.remember(&u1, NewMemory::new("The user lives in Berlin").key("user.city"))?;
    engine.remember(&u1, NewMemory::new("The user lives in Paris now").key("user.city"))?;
    engine.remember(&u1, NewMemory::new("The user has a cat called Miso"))?; // duplicate
    engine.supersede(&u1, cat.id, NewMemory::new("The user has two cats, Miso and Tofu"))?;
    let trip = engine.remember(&u2, NewMemory::new("用户下周二去上海出差").key("user.next_trip").session("会话1"))?;
    engine.remember(&u2, NewMemory::new("用户对花生过敏").importance(0.95))?;
    engine.remember_batch(
        &team,
        vec![
            NewMemory::new("The team meets on Mondays at 10:00"),
            NewMemory::new("Deploys are frozen during the last week of December").key("team.deploy_freeze"),
        ],
    )?;
    engine.forget(&u1, ForgetRequest::Observation(o1), "user asked")?;
    engine.forget(&u2, ForgetRequest::Session("会话1".into()), "trip cancelled")?;
    assert!(matches!(engine.get(&u2, trip.id), Err(Error::NotFound { .. })));
    engine.forget(&team, ForgetRequest::All, "team disbanded")?;
    engine.remember(&team, NewMemory::new("A new team was formed in March"))?;

    let live = engine.digest();
    let stats = engine.stats();
    let lexical = lexical_scores(&engine)?;
    engine.close()?;
    for _ in 0..2 {
        let engine = Engine::open(dir.path())?;
        assert_eq!(engine.digest(), live);
        // The lexical indexes are rebuilt on a thread of their own during
        // replay, forgotten versions removed at the end: BM25 scores equal
        // live ones bit for bit, superseded versions included.
        assert_eq!(lexical_scores(&engine)?, lexical);
        let replayed = engine.stats();
        assert_eq!(replayed.last_seq, stats.last_seq);
        assert_eq!(replayed.events, stats.events);
        assert_eq!(replayed.active_memories, stats.active_memories);
        assert_eq!(replayed.observations, stats.observations);
        assert_eq!(replayed.vectors, stats.vectors);
        assert_eq!(engine.open_report().events_replayed, stats.last_seq);
        assert_eq!(engine.open_report().vectors_embedded, 0, "vectors come from the cache");
        engine.close()?;
    }
    Ok(())
}

/// Large groups in two scripts: every memory is found by lexical recall as
/// soon as its batch returns, `check` finds the live indexes equal to a
/// replay's, and the BM25 scores after reopening equal the live ones bit
/// for bit, also after forgetting part of a batch.
#[test]
fn large_groups_index_lexically_as_replay_does() -> TestResult {
    let dir = tempfile::tempdir()?;
    let (en, zh) = (ns("en"), ns("zh"));
    let engine = Engine::open(dir.path())?;
    let cities = ["Lisbon", "Porto", "Kyoto", "Oslo", "Quito", "Accra"];
    let batch: Vec<NewMemory> = (0..500)
        .map(|i| {
            NewMemory::new(format!("Trip {i}: the user visited {} and kept ticket T{i:05}", cities[i % 6]))
                .session(format!("s{}", i / 50))
                .dedup(mnemon::DedupMode::Off)
        })
        .collect();
    let en_ids: Vec<MemoryId> =
        engine.remember_batch(&en, batch)?.into_iter().map(|r| r.map(|m| m.id)).collect::<Result<_, _>>()?;
    let zh_batch: Vec<NewMemory> =
        (0..200).map(|i| NewMemory::new(format!("第{i}次旅行：用户去了上海，车票号码是{i:05}"))).collect();
    engine.remember_batch(&zh, zh_batch)?;
    let opts = mnemon::RecallOptions {
        top_k: 5,
        mode: mnemon::recall::RecallMode::Lexical,
        record_access: false,
        ..mnemon::RecallOptions::default()
    };
    for i in [0usize, 63, 64, 250, 499] {
        let hits = engine.recall(&en, &format!("ticket T{i:05}"), &opts)?;
        assert_eq!(hits.first().map(|h| h.memory.id), Some(en_ids[i]), "ticket T{i:05}: {hits:?}");
    }
    assert!(!engine.recall(&zh, "上海车票", &opts)?.is_empty());
    assert!(engine.check()?.consistent);
    engine.forget(&en, ForgetRequest::Session("s3".into()), "trip cancelled")?;
    assert!(engine.recall(&en, "ticket T00160", &opts)?.iter().all(|h| h.memory.id != en_ids[160]));
    assert!(engine.check()?.consistent);
    let queries = ["ticket T00042", "visited Kyoto", "Accra ticket", "T00499"];
    let scores = |engine: &Engine| -> Result<Vec<Vec<(MemoryId, u32)>>, Error> {
        let mut out = Vec::new();
        for q in queries {
            let hits = engine.recall(&en, q, &mnemon::RecallOptions { top_k: 20, ..opts.clone() })?;
            out.push(hits.iter().map(|h| (h.memory.id, h.explain.lexical.to_bits())).collect());
        }
        Ok(out)
    };
    let live = (engine.digest(), scores(&engine)?);
    engine.close()?;
    let engine = Engine::open(dir.path())?;
    assert_eq!((engine.digest(), scores(&engine)?), live);
    engine.close()?;
    Ok(())
}

/// Lexical recall over every version of each namespace of
/// `digest_after_reopen_equals_live`: (memory id, BM25 score bits) per query.
fn lexical_scores(engine: &Engine) -> Result<Vec<Vec<(MemoryId, u32)>>, Error> {
    let opts = mnemon::RecallOptions {
        top_k: 20,
        mode: mnemon::recall::RecallMode::Lexical,
        include_superseded: true,
        record_access: false,
        ..mnemon::RecallOptions::default()
    };
    let mut out = Vec::new();
    for (name, query) in [
        ("u1", "cat Miso"),
        ("u1", "where does the user live"),
        ("u2", "上海出差"),
        ("u2", "花生过敏"),
        ("team:alpha", "team formed March"),
        ("team:alpha", "deploys frozen December"),
    ] {
        let hits = engine.recall(&ns(name), query, &opts)?;
        out.push(hits.iter().map(|h| (h.memory.id, h.explain.lexical.to_bits())).collect::<Vec<_>>());
    }
    assert!(out.iter().filter(|h| !h.is_empty()).count() >= 4, "the queries find memories: {out:?}");
    Ok(out)
}

// ---------------------------------------------------------------------------
// State machine against a model.

const NAMESPACES: [&str; 2] = ["u1", "u2"];
const SESSIONS: [&str; 2] = ["s1", "会话2"];
const KEYS: [&str; 2] = ["user.city", "user.drink"];
/// Texts that differ only in spacing count as one memory (case counts: a
/// case variant may say something else, and the engine would write it as a
/// near-duplicate version, which this model does not follow, so the pool
/// holds none); texts of different meaning are far apart for the hashing
/// embedder (checked below), so no write is a near-duplicate.
const TEXTS: [&str; 10] = [
    "I live in Berlin",
    "  I live in   Berlin ",
    "My favourite drink is oolong tea",
    "我每天早上喝一杯咖啡",
    "我每天早上喝一杯咖啡  ",
    "The cat is called Miso",
    "下周二去上海出差",
    "My sister works as a pilot",
    "I am allergic to peanuts",
    "My favourite drink is\toolong tea ",
];

/// Entities a write may give: some occur in several texts, some in none.
const ENTITIES: [&str; 5] = ["Berlin", "oolong", "咖啡", "Miso", "Lisbon"];
const IMPORTANCE: [f32; 2] = [0.2, 0.9];
const TIERS: [Tier; 2] = [Tier::Permanent, Tier::ShortTerm];

/// The model's exact-duplicate reading: NFKC and spacing aside, case kept.
fn normalize(s: &str) -> String {
    use unicode_normalization::UnicodeNormalization;
    let nfkc: String = s.nfkc().collect();
    nfkc.split_whitespace().collect::<Vec<_>>().join(" ")
}

/// The model's reading of "an entity still occurs in the content": a Han
/// entity as a substring, any other as one of the words, case aside.
fn occurs(entity: &str, content: &str) -> bool {
    let (e, c) = (normalize(entity).to_lowercase(), normalize(content).to_lowercase());
    if e.chars().any(|ch| ('\u{4E00}'..='\u{9FFF}').contains(&ch)) {
        return c.contains(&e);
    }
    c.split(|ch: char| !ch.is_alphanumeric()).any(|w| w == e)
}

/// What a write states; `None` (or empty sources) means "not given".
#[derive(Clone, Debug, Default)]
struct Fields {
    key: Option<String>,
    session: Option<String>,
    sources: Vec<ObservationId>,
    importance: Option<f32>,
    tier: Option<Tier>,
    entities: Option<Vec<String>>,
}

impl Fields {
    fn apply(&self, mut m: NewMemory) -> NewMemory {
        if let Some(k) = &self.key {
            m = m.key(k.clone());
        }
        if let Some(s) = &self.session {
            m = m.session(s.clone());
        }
        if let Some(i) = self.importance {
            m = m.importance(i);
        }
        if let Some(t) = self.tier {
            m = m.tier(t);
        }
        if let Some(e) = &self.entities {
            m = m.entities(e.clone());
        }
        m.sources(self.sources.clone())
    }
}

#[derive(Clone, Debug)]
enum Target {
    /// The n-th memory or observation id ever handed out (modulo their number).
    Known(usize),
    /// An id that was never handed out.
    Unknown(u64),
}

#[derive(Clone, Debug)]
enum Op {
    Observe {
        ns: usize,
        session: usize,
        text: usize,
    },
    Remember {
        ns: usize,
        text: usize,
        key: Option<usize>,
        session: Option<usize>,
        source: Option<Target>,
        importance: Option<usize>,
        tier: Option<usize>,
        entities: Option<Vec<usize>>,
        dedup_off: bool,
    },
    /// Several memories in one call: one group, validated in order.
    RememberBatch {
        ns: usize,
        items: Vec<(usize, Option<usize>)>,
    },
    Supersede {
        ns: usize,
        target: Target,
        text: usize,
    },
    ForgetMemory {
        ns: usize,
        target: Target,
    },
    ForgetObservation {
        ns: usize,
        target: Target,
    },
    ForgetSession {
        ns: usize,
        session: usize,
    },
    ForgetAll {
        ns: usize,
    },
    /// A recall that records its access, naming a session as the current
    /// one (`current`) or as a filter, or none.
    Read {
        ns: usize,
        session: Option<usize>,
        current: bool,
    },
    Reopen,
}

fn target() -> impl Strategy<Value = Target> {
    prop_oneof![
        6 => any::<usize>().prop_map(Target::Known),
        1 => (1_000u64..2_000).prop_map(Target::Unknown),
    ]
}

fn op() -> impl Strategy<Value = Op> {
    let n = 0..NAMESPACES.len();
    prop_oneof![
        3 => (n.clone(), 0..SESSIONS.len(), 0..TEXTS.len())
            .prop_map(|(ns, session, text)| Op::Observe { ns, session, text }),
        6 => (
            (n.clone(), 0..TEXTS.len(), proptest::option::of(0..KEYS.len()), proptest::option::of(0..SESSIONS.len())),
            proptest::option::weighted(0.4, target()),
            (
                proptest::option::weighted(0.3, 0..IMPORTANCE.len()),
                proptest::option::weighted(0.3, 0..TIERS.len()),
                proptest::option::weighted(0.4, proptest::collection::vec(0..ENTITIES.len(), 0..3)),
            ),
            proptest::bool::weighted(0.2),
        )
            .prop_map(|((ns, text, key, session), source, (importance, tier, entities), dedup_off)| Op::Remember {
                ns,
                text,
                key,
                session,
                source,
                importance,
                tier,
                entities,
                dedup_off,
            }),
        2 => (n.clone(), proptest::collection::vec((0..TEXTS.len(), proptest::option::of(0..KEYS.len())), 1..4))
            .prop_map(|(ns, items)| Op::RememberBatch { ns, items }),
        3 => (n.clone(), target(), 0..TEXTS.len()).prop_map(|(ns, target, text)| Op::Supersede { ns, target, text }),
        2 => (n.clone(), target()).prop_map(|(ns, target)| Op::ForgetMemory { ns, target }),
        1 => (n.clone(), target()).prop_map(|(ns, target)| Op::ForgetObservation { ns, target }),
        1 => (n.clone(), 0..SESSIONS.len()).prop_map(|(ns, session)| Op::ForgetSession { ns, session }),
        1 => n.clone().prop_map(|ns| Op::ForgetAll { ns }),
        2 => (n, proptest::option::of(0..SESSIONS.len()), any::<bool>())
            .prop_map(|(ns, session, current)| Op::Read { ns, session, current }),
        1 => Just(Op::Reopen),
    ]
}

#[derive(Clone, Debug, PartialEq)]
struct MMem {
    ns: usize,
    content: String,
    key: Option<String>,
    session: Option<String>,
    sources: Vec<ObservationId>,
    importance: f32,
    tier: Tier,
    entities: Vec<String>,
    status: Status,
    prev: Option<MemoryId>,
    next: Option<MemoryId>,
}

#[derive(Clone, Debug, PartialEq)]
struct MObs {
    ns: usize,
    session: String,
    text: String,
}

/// What the store should hold: plain maps, no indexes.
#[derive(Default, Debug)]
struct Model {
    last_seq: u64,
    memories: BTreeMap<MemoryId, MMem>,
    observations: BTreeMap<ObservationId, MObs>,
    /// Forgotten ids, per namespace.
    forgotten_m: BTreeSet<(usize, MemoryId)>,
    forgotten_o: BTreeSet<(usize, ObservationId)>,
    /// Sessions a forget of the session erased something of, per namespace.
    forgotten_sessions: BTreeSet<(usize, String)>,
    /// Every id ever handed out, in order.
    memory_ids: Vec<MemoryId>,
    observation_ids: Vec<ObservationId>,
    /// The memories after each op, by log position, for as-of checks.
    snapshots: Vec<(u64, BTreeMap<MemoryId, MMem>)>,
    /// Every `Superseded` event: its position, old and new version.
    links: BTreeMap<u64, (MemoryId, MemoryId)>,
}

/// Cuts forgotten version `id` out of its chain in `mems`: its predecessor
/// leads to its successor and back.
fn unlink(mems: &mut BTreeMap<MemoryId, MMem>, id: MemoryId) {
    let Some(gone) = mems.remove(&id) else {
        return;
    };
    if let Some(p) = gone.prev.and_then(|p| mems.get_mut(&p)).filter(|p| p.next == Some(id)) {
        p.next = gone.next;
    }
    if let Some(n) = gone.next.and_then(|n| mems.get_mut(&n)).filter(|n| n.prev == Some(id)) {
        n.prev = gone.prev;
    }
}

/// The expected result of an op.
#[derive(Clone, Debug, PartialEq)]
enum Expect {
    Id(u64),
    Batch(Vec<Expect>),
    Remembered(MemoryId, RememberAction),
    Forgot(Vec<MemoryId>, Vec<ObservationId>),
    NotFound,
    Conflict,
}

impl Model {
    fn memory_target(&self, t: &Target) -> MemoryId {
        match t {
            Target::Known(i) if !self.memory_ids.is_empty() => self.memory_ids[i % self.memory_ids.len()],
            Target::Known(i) => MemoryId(1_000 + *i as u64 % 1_000),
            Target::Unknown(id) => MemoryId(*id),
        }
    }

    fn observation_target(&self, t: &Target) -> ObservationId {
        match t {
            Target::Known(i) if !self.observation_ids.is_empty() => {
                self.observation_ids[i % self.observation_ids.len()]
            }
            Target::Known(i) => ObservationId(1_000 + *i as u64 % 1_000),
            Target::Unknown(id) => ObservationId(*id),
        }
    }

    fn live_in(&self, ns: usize, id: MemoryId) -> Option<&MMem> {
        self.memories.get(&id).filter(|m| m.ns == ns)
    }

    /// A first version: unset fields take their defaults.
    fn new_memory(&mut self, ns: usize, content: &str, f: Fields) -> MemoryId {
        let m = MMem {
            ns,
            content: content.to_string(),
            key: f.key,
            session: f.session,
            sources: f.sources,
            importance: f.importance.unwrap_or(0.5),
            tier: f.tier.unwrap_or(Tier::LongTerm),
            entities: f.entities.unwrap_or_default(),
            status: Status::Active,
            prev: None,
            next: None,
        };
        self.insert(m)
    }

    fn insert(&mut self, m: MMem) -> MemoryId {
        self.last_seq += 1;
        let id = MemoryId(self.last_seq);
        self.memories.insert(id, m);
        self.memory_ids.push(id);
        id
    }

    /// A version replacing `base`: what the write does not state is
    /// inherited, entities only while they still occur in the new content.
    fn new_version(&mut self, base: &MMem, content: &str, f: Fields) -> MemoryId {
        let m = MMem {
            ns: base.ns,
            content: content.to_string(),
            key: f.key.or_else(|| base.key.clone()),
            session: f.session.or_else(|| base.session.clone()),
            sources: if f.sources.is_empty() { base.sources.clone() } else { f.sources },
            importance: f.importance.unwrap_or(base.importance),
            tier: f.tier.unwrap_or(base.tier),
            entities: f
                .entities
                .unwrap_or_else(|| base.entities.iter().filter(|e| occurs(e, content)).cloned().collect()),
            status: Status::Active,
            prev: None,
            next: None,
        };
        self.insert(m)
    }

    /// A version restating `base` (the same text gaining a slot key): as
    /// [`Model::new_version`], but never a shorter tier or a lower
    /// importance than `base`'s.
    fn restatement(&mut self, base: &MMem, content: &str, f: Fields) -> MemoryId {
        let rank = |t: Tier| [Tier::ShortTerm, Tier::LongTerm, Tier::Permanent].iter().position(|x| *x == t);
        let id = self.new_version(base, content, f);
        if let Some(m) = self.memories.get_mut(&id) {
            if rank(base.tier) > rank(m.tier) {
                m.tier = base.tier;
            }
            m.importance = m.importance.max(base.importance);
        }
        id
    }

    /// A new version `new` of `old`: one more event after the `Extracted`.
    fn link(&mut self, old: MemoryId, new: MemoryId) {
        self.last_seq += 1;
        self.links.insert(self.last_seq, (old, new));
        if let Some(o) = self.memories.get_mut(&old) {
            o.status = Status::Superseded;
            o.next = Some(new);
        }
        if let Some(n) = self.memories.get_mut(&new) {
            n.prev = Some(old);
        }
    }

    fn remember(&mut self, ns: usize, text: &str, f: Fields, dedup_off: bool) -> Expect {
        if f.sources.iter().any(|s| self.observations.get(s).is_none_or(|o| o.ns != ns)) {
            return Expect::NotFound;
        }
        let norm = normalize(text);
        if let Some(k) = &f.key {
            let holder = self
                .memories
                .iter()
                .find(|(_, m)| m.ns == ns && m.status == Status::Active && m.key.as_ref() == Some(k))
                .map(|(id, m)| (*id, m.clone()));
            if let Some((old, base)) = holder {
                if normalize(&base.content) == norm && !dedup_off {
                    return Expect::Remembered(old, RememberAction::Duplicate);
                }
                let new = self.new_version(&base, text, f);
                self.link(old, new);
                return Expect::Remembered(new, RememberAction::Superseded { old });
            }
        }
        // The same text under another key is another memory; a key named
        // on the same text held without one makes a new version taking it.
        let dup = self
            .memories
            .iter()
            .rev()
            .filter(|_| !dedup_off)
            .find(|(_, m)| {
                m.ns == ns
                    && m.status == Status::Active
                    && normalize(&m.content) == norm
                    && !matches!((f.key.as_ref(), m.key.as_ref()), (Some(a), Some(b)) if a != b)
            })
            .map(|(id, m)| (*id, m.clone()));
        if let Some((id, base)) = dup {
            if base.key.is_none() && f.key.is_some() {
                let new = self.restatement(&base, text, f);
                self.link(id, new);
                return Expect::Remembered(new, RememberAction::NearDuplicate { old: id, similarity: 1.0 });
            }
            return Expect::Remembered(id, RememberAction::Duplicate);
        }
        Expect::Remembered(self.new_memory(ns, text, f), RememberAction::Created)
    }

    fn supersede(&mut self, ns: usize, old: MemoryId, text: &str) -> Expect {
        let Some(base) = self.live_in(ns, old).cloned() else {
            return Expect::NotFound;
        };
        if base.status != Status::Active {
            return Expect::Conflict;
        }
        if normalize(&base.content) == normalize(text) {
            return Expect::Remembered(old, RememberAction::Unchanged);
        }
        let new = self.new_version(&base, text, Fields::default());
        self.link(old, new);
        Expect::Remembered(new, RememberAction::Superseded { old })
    }

    /// The contiguous version chain around `id`, oldest first.
    fn chain(&self, id: MemoryId) -> Vec<MemoryId> {
        let mut first = id;
        while let Some(p) = self.memories.get(&first).and_then(|m| m.prev).filter(|p| self.memories.contains_key(p)) {
            first = p;
        }
        let mut out = vec![first];
        while let Some(n) = self.memories.get(out.last().unwrap_or(&first)).and_then(|m| m.next) {
            if !self.memories.contains_key(&n) {
                break;
            }
            out.push(n);
        }
        out
    }

    fn forget(&mut self, ns: usize, mut mems: BTreeSet<MemoryId>, obs: BTreeSet<ObservationId>) -> Expect {
        // What was derived from erased observations goes with them: versions
        // citing only erased ones, and whole chains touched by them whose
        // latest version is left without a surviving source.
        if !obs.is_empty() {
            let erased = |s: &ObservationId| obs.contains(s) || self.forgotten_o.contains(&(ns, *s));
            for (id, m) in &self.memories {
                if m.ns == ns && !m.sources.is_empty() && m.sources.iter().all(erased) {
                    mems.insert(*id);
                }
            }
            for (id, m) in &self.memories {
                if m.ns != ns || !m.sources.iter().any(|s| obs.contains(s)) {
                    continue;
                }
                let chain = self.chain(*id);
                let latest = chain.last().and_then(|l| self.memories.get(l));
                if !latest.is_some_and(|l| l.sources.iter().any(|s| !erased(s))) {
                    mems.extend(chain);
                }
            }
        }
        if mems.is_empty() && obs.is_empty() {
            return Expect::Forgot(vec![], vec![]);
        }
        self.last_seq += 1;
        for id in &mems {
            unlink(&mut self.memories, *id);
            self.forgotten_m.insert((ns, *id));
        }
        for id in &obs {
            self.observations.remove(id);
            self.forgotten_o.insert((ns, *id));
        }
        for m in self.memories.values_mut() {
            m.sources.retain(|s| !obs.contains(s));
        }
        Expect::Forgot(mems.into_iter().collect(), obs.into_iter().collect())
    }

    /// The memories of a snapshot as a view at its position shows them
    /// now: forgotten versions cut out of their chains, forgotten
    /// observations out of the sources.
    fn view_of(&self, ns: usize, then: &BTreeMap<MemoryId, MMem>) -> BTreeMap<MemoryId, MMem> {
        let mut v: BTreeMap<MemoryId, MMem> =
            then.iter().filter(|(_, m)| m.ns == ns).map(|(id, m)| (*id, m.clone())).collect();
        let gone: Vec<MemoryId> = v.keys().filter(|id| self.forgotten_m.contains(&(ns, **id))).copied().collect();
        for id in gone {
            unlink(&mut v, id);
        }
        for m in v.values_mut() {
            m.sources.retain(|s| !self.forgotten_o.contains(&(ns, *s)));
        }
        v
    }

    fn forget_memory(&mut self, ns: usize, id: MemoryId) -> Expect {
        if self.forgotten_m.contains(&(ns, id)) {
            return Expect::Forgot(vec![], vec![]);
        }
        if self.live_in(ns, id).is_none() {
            return Expect::NotFound;
        }
        let chain = self.chain(id).into_iter().collect();
        self.forget(ns, chain, BTreeSet::new())
    }

    fn forget_observation(&mut self, ns: usize, id: ObservationId) -> Expect {
        if self.forgotten_o.contains(&(ns, id)) {
            return Expect::Forgot(vec![], vec![]);
        }
        if self.observations.get(&id).is_none_or(|o| o.ns != ns) {
            return Expect::NotFound;
        }
        self.forget(ns, BTreeSet::new(), BTreeSet::from([id]))
    }

    /// A session no memory or observation carries is unknown unless an
    /// earlier forget of it erased something.
    fn forget_session(&mut self, ns: usize, session: &str) -> Expect {
        let mems: BTreeSet<MemoryId> = self
            .memories
            .iter()
            .filter(|(_, m)| m.ns == ns && m.session.as_deref() == Some(session))
            .map(|(id, _)| *id)
            .collect();
        let obs: BTreeSet<ObservationId> =
            self.observations.iter().filter(|(_, o)| o.ns == ns && o.session == session).map(|(id, _)| *id).collect();
        if mems.is_empty() && obs.is_empty() {
            let known = self.forgotten_sessions.contains(&(ns, session.to_string()));
            return if known { Expect::Forgot(vec![], vec![]) } else { Expect::NotFound };
        }
        self.forgotten_sessions.insert((ns, session.to_string()));
        self.forget(ns, mems, obs)
    }

    /// Whether anything was ever written to namespace `ns`.
    fn holds(&self, ns: usize) -> bool {
        self.memories.values().any(|m| m.ns == ns)
            || self.observations.values().any(|o| o.ns == ns)
            || self.forgotten_m.iter().any(|(n, _)| *n == ns)
            || self.forgotten_o.iter().any(|(n, _)| *n == ns)
    }

    fn forget_all(&mut self, ns: usize) -> Expect {
        if !self.holds(ns) {
            return Expect::NotFound;
        }
        let mems = self.memories.iter().filter(|(_, m)| m.ns == ns).map(|(id, _)| *id).collect();
        let obs = self.observations.iter().filter(|(_, o)| o.ns == ns).map(|(id, _)| *id).collect();
        self.forget(ns, mems, obs)
    }
}

fn outcome_of(r: mnemon::Result<mnemon::Remembered>) -> Result<Expect, String> {
    match r {
        Ok(r) => Ok(Expect::Remembered(r.id, r.action)),
        Err(Error::NotFound { .. }) => Ok(Expect::NotFound),
        Err(Error::Conflict(_)) => Ok(Expect::Conflict),
        Err(e) => Err(format!("unexpected error {e:?}")),
    }
}

fn forgot_of(r: mnemon::Result<ForgetOutcome>) -> Result<Expect, String> {
    match r {
        Ok(f) => {
            if f.memories != f.memory_ids.len() || f.observations != f.observation_ids.len() {
                return Err(format!("inconsistent counts {f:?}"));
            }
            Ok(Expect::Forgot(f.memory_ids, f.observation_ids))
        }
        Err(Error::NotFound { .. }) => Ok(Expect::NotFound),
        Err(e) => Err(format!("unexpected error {e:?}")),
    }
}

/// `e` with the cosine of a restatement of the same text set to the 1.0
/// the model states (the engine reports the stored vectors' cosine, 1.0 up
/// to their rounding), after checking it is that close.
fn unscored(e: Expect) -> Expect {
    match e {
        Expect::Remembered(id, RememberAction::NearDuplicate { old, similarity }) if similarity > 0.99 => {
            Expect::Remembered(id, RememberAction::NearDuplicate { old, similarity: 1.0 })
        }
        Expect::Batch(v) => Expect::Batch(v.into_iter().map(unscored).collect()),
        other => other,
    }
}

/// Runs one op on both; returns an error message on any disagreement.
fn step(engine: &Engine, model: &mut Model, op: &Op) -> Result<(), String> {
    let n = |i: usize| ns(NAMESPACES[i]);
    let (got, want) = match op {
        Op::Observe { ns, session, text } => {
            let id = engine
                .observe(&n(*ns), NewObservation::new(SESSIONS[*session], Role::User, TEXTS[*text]))
                .map_err(|e| format!("observe: {e:?}"))?;
            model.last_seq += 1;
            let want = ObservationId(model.last_seq);
            model.observations.insert(
                want,
                MObs { ns: *ns, session: SESSIONS[*session].to_string(), text: TEXTS[*text].to_string() },
            );
            model.observation_ids.push(want);
            (Expect::Id(id.0), Expect::Id(want.0))
        }
        Op::Remember { ns, text, key, session, source, importance, tier, entities, dedup_off } => {
            let f = Fields {
                key: key.map(|k| KEYS[k].to_string()),
                session: session.map(|s| SESSIONS[s].to_string()),
                sources: source.iter().map(|t| model.observation_target(t)).collect(),
                importance: importance.map(|i| IMPORTANCE[i]),
                tier: tier.map(|t| TIERS[t]),
                entities: entities.as_ref().map(|es| es.iter().map(|e| ENTITIES[*e].to_string()).collect()),
            };
            let mut m = f.apply(NewMemory::new(TEXTS[*text]));
            if *dedup_off {
                m = m.dedup(DedupMode::Off);
            }
            let got = outcome_of(engine.remember(&n(*ns), m))?;
            (got, model.remember(*ns, TEXTS[*text], f, *dedup_off))
        }
        Op::RememberBatch { ns, items } => {
            let batch = items
                .iter()
                .map(|(text, key)| {
                    let m = NewMemory::new(TEXTS[*text]);
                    key.map_or(m.clone(), |k| m.key(KEYS[k]))
                })
                .collect();
            let got = engine.remember_batch(&n(*ns), batch).map_err(|e| format!("batch: {e:?}"))?;
            let got = Expect::Batch(got.into_iter().map(outcome_of).collect::<Result<_, _>>()?);
            let want = items
                .iter()
                .map(|(text, key)| {
                    let f = Fields { key: key.map(|k| KEYS[k].to_string()), ..Fields::default() };
                    model.remember(*ns, TEXTS[*text], f, false)
                })
                .collect();
            (got, Expect::Batch(want))
        }
        Op::Supersede { ns, target, text } => {
            let old = model.memory_target(target);
            let got = outcome_of(engine.supersede(&n(*ns), old, NewMemory::new(TEXTS[*text])))?;
            (got, model.supersede(*ns, old, TEXTS[*text]))
        }
        Op::ForgetMemory { ns, target } => {
            let id = model.memory_target(target);
            let got = forgot_of(engine.forget(&n(*ns), ForgetRequest::Memory(id), "test"))?;
            (got, model.forget_memory(*ns, id))
        }
        Op::ForgetObservation { ns, target } => {
            let id = model.observation_target(target);
            let got = forgot_of(engine.forget(&n(*ns), ForgetRequest::Observation(id), "test"))?;
            (got, model.forget_observation(*ns, id))
        }
        Op::ForgetSession { ns, session } => {
            let s = SESSIONS[*session];
            let got = forgot_of(engine.forget(&n(*ns), ForgetRequest::Session(s.into()), "test"))?;
            (got, model.forget_session(*ns, s))
        }
        Op::ForgetAll { ns } => {
            let got = forgot_of(engine.forget(&n(*ns), ForgetRequest::All, "test"))?;
            (got, model.forget_all(*ns))
        }
        Op::Read { ns, session, current } => {
            let s = session.map(|s| SESSIONS[s].to_string());
            let opts = mnemon::RecallOptions {
                top_k: 3,
                current_session: s.clone().filter(|_| *current),
                session: s.clone().filter(|_| !*current),
                requester: Some("model".into()),
                ..mnemon::RecallOptions::default()
            };
            let hits = engine.recall(&n(*ns), "user", &opts).map_err(|e| format!("recall: {e:?}"))?;
            // The access rides with the next flush.
            engine.sync().map_err(|e| format!("sync: {e:?}"))?;
            if !hits.is_empty() {
                model.last_seq += 1;
                let seq = model.last_seq;
                let want = mnemon::event::Accessed {
                    ids: hits.iter().map(|h| h.memory.id).collect(),
                    requester: Some("model".into()),
                    session: s,
                };
                let got = engine.events(&n(*ns), seq, seq).map_err(|e| format!("events: {e:?}"))?;
                match got.as_slice() {
                    [e] if e.body == EventBody::Accessed(want.clone()) => {}
                    other => return Err(format!("{op:?}: expected {want:?} at {seq}, log has {other:?}")),
                }
            }
            (Expect::Id(0), Expect::Id(0))
        }
        Op::Reopen => unreachable!("handled by the caller"),
    };
    if unscored(got.clone()) != want {
        return Err(format!("{op:?}: engine {got:?}, model {want:?}"));
    }
    model.snapshots.push((model.last_seq, model.memories.clone()));
    Ok(())
}

/// Compares everything readable with the model.
fn compare(engine: &Engine, model: &Model, full: bool) -> Result<(), String> {
    let last = engine.stats().last_seq;
    if last != model.last_seq {
        return Err(format!("last_seq: engine {last}, model {}", model.last_seq));
    }
    for (i, name) in NAMESPACES.iter().enumerate() {
        let namespace = ns(name);
        let got: BTreeMap<MemoryId, MMem> =
            engine.list(&namespace, &all_versions()).into_iter().map(|m| (m.id, mmem(i, m))).collect();
        let want: BTreeMap<MemoryId, MMem> =
            model.memories.iter().filter(|(_, m)| m.ns == i).map(|(id, m)| (*id, m.clone())).collect();
        if got != want {
            return Err(format!("memories of {name}:\n engine {got:#?}\n model {want:#?}"));
        }
        let got: BTreeMap<ObservationId, MObs> = engine
            .observations(&namespace, None)
            .into_iter()
            .map(|o| (o.id, MObs { ns: i, session: o.session, text: o.text }))
            .collect();
        let want: BTreeMap<ObservationId, MObs> =
            model.observations.iter().filter(|(_, o)| o.ns == i).map(|(id, o)| (*id, o.clone())).collect();
        if got != want {
            return Err(format!("observations of {name}: engine {got:?}, model {want:?}"));
        }
        for (fns, id) in &model.forgotten_m {
            if engine.get(&ns(NAMESPACES[*fns]), *id).is_ok() {
                return Err(format!("forgotten memory {id} is readable"));
            }
        }
        // No link leads to a version that cannot be read.
        for (id, m) in &got_links(engine, &namespace) {
            for link in [m.0, m.1].into_iter().flatten() {
                if engine.get(&namespace, link).is_err() {
                    return Err(format!("memory {id} links to {link}, which is not readable"));
                }
            }
        }
        if full {
            // Each past view shows the memories as they were, less what was forgotten since.
            for (seq, then) in &model.snapshots {
                let view = engine.as_of(&namespace, AsOf::Seq(*seq)).map_err(|e| format!("as_of {seq}: {e:?}"))?;
                let got: BTreeMap<MemoryId, MMem> = view
                    .list(&all_versions())
                    .map_err(|e| format!("as_of {seq}: {e:?}"))?
                    .into_iter()
                    .map(|m| (m.id, mmem(i, m)))
                    .collect();
                let want = model.view_of(i, then);
                if got != want {
                    return Err(format!("as_of {seq} in {name}:\n engine {got:#?}\n model {want:#?}"));
                }
                let active: Vec<MemoryId> = view
                    .list(&ListOptions::default())
                    .map_err(|e| format!("as_of {seq}: {e:?}"))?
                    .iter()
                    .map(|m| m.id)
                    .collect();
                let want_active: Vec<MemoryId> =
                    want.iter().filter(|(_, m)| m.status == Status::Active).map(|(id, _)| *id).collect();
                if active != want_active {
                    return Err(format!("active as_of {seq} in {name}: engine {active:?}, model {want_active:?}"));
                }
            }
            // Histories are the model's chains, and the export hides forgotten payloads.
            for id in want_ids(model, i) {
                let h: Vec<MemoryId> = engine
                    .history(&namespace, id)
                    .map_err(|e| format!("history {id}: {e:?}"))?
                    .iter()
                    .map(|m| m.id)
                    .collect();
                if h != model.chain(id) {
                    return Err(format!("history of {id}: engine {h:?}, model {:?}", model.chain(id)));
                }
            }
            let events = engine.events(&namespace, 1, u64::MAX).map_err(|e| format!("events: {e:?}"))?;
            for ev in events {
                // Payloads of forgotten versions and observations, and links to or
                // from a forgotten version, are exported as tombstones.
                let link_gone = model.links.get(&ev.seq).is_some_and(|(old, new)| {
                    model.forgotten_m.contains(&(i, *old)) || model.forgotten_m.contains(&(i, *new))
                });
                let forgotten = model.forgotten_m.contains(&(i, MemoryId(ev.seq)))
                    || model.forgotten_o.contains(&(i, ObservationId(ev.seq)))
                    || link_gone;
                let is_tombstone = matches!(ev.body, EventBody::Tombstone(_));
                if forgotten != is_tombstone {
                    return Err(format!("event {} exported as {:?}", ev.seq, ev.body));
                }
            }
        }
    }
    Ok(())
}

fn mmem(ns: usize, m: mnemon::Memory) -> MMem {
    MMem {
        ns,
        content: m.content,
        key: m.key,
        session: m.session,
        sources: m.sources,
        importance: m.importance,
        tier: m.tier,
        entities: m.entities,
        status: m.status,
        prev: m.prev,
        next: m.next,
    }
}

/// Every version's `prev` and `next`, as `list` shows them.
fn got_links(engine: &Engine, namespace: &Namespace) -> BTreeMap<MemoryId, (Option<MemoryId>, Option<MemoryId>)> {
    engine.list(namespace, &all_versions()).into_iter().map(|m| (m.id, (m.prev, m.next))).collect()
}

fn want_ids(model: &Model, ns: usize) -> Vec<MemoryId> {
    model.memories.iter().filter(|(_, m)| m.ns == ns).map(|(id, _)| *id).collect()
}

fn run_ops(dir: &Path, ops: &[Op], key: Option<&mnemon::crypt::Kek>) -> Result<(), String> {
    let open = || {
        let mut b = Engine::builder(dir);
        if let Some(k) = key {
            b = b.key_provider(std::sync::Arc::new(mnemon::crypt::StaticKey(k.clone())));
        }
        b.open().map_err(|e| format!("open: {e:?}"))
    };
    let mut engine = open()?;
    let mut model = Model::default();
    for (i, op) in ops.iter().enumerate() {
        if let Op::Reopen = op {
            let live = engine.digest();
            engine.close().map_err(|e| format!("close: {e:?}"))?;
            engine = open()?;
            if engine.digest() != live {
                return Err(format!("op {i}: digest after reopen differs from live"));
            }
            compare(&engine, &model, true).map_err(|e| format!("op {i} (after reopen): {e}"))?;
        } else {
            step(&engine, &mut model, op).map_err(|e| format!("op {i}: {e}"))?;
            compare(&engine, &model, false).map_err(|e| format!("op {i} {op:?}: {e}"))?;
        }
    }
    compare(&engine, &model, true).map_err(|e| format!("at the end: {e}"))?;
    let live = engine.digest();
    engine.close().map_err(|e| format!("close: {e:?}"))?;
    let engine = open()?;
    if engine.digest() != live {
        return Err("final digest after reopen differs from live".into());
    }
    compare(&engine, &model, true).map_err(|e| format!("after the final reopen: {e}"))?;
    engine.close().map_err(|e| format!("close: {e:?}"))?;
    Ok(())
}

/// The model assumes no two texts of different meaning are near-duplicates.
#[test]
fn text_pool_has_no_near_duplicates() -> TestResult {
    let embedder = mnemon::embed::HashingEmbedder::new(384)?;
    for (i, a) in TEXTS.iter().enumerate() {
        for b in &TEXTS[i + 1..] {
            if normalize(a) == normalize(b) {
                continue;
            }
            let (va, vb) = (embedder.embed_one(a), embedder.embed_one(b));
            let cos: f32 = va.iter().zip(&vb).map(|(x, y)| x * y).sum();
            assert!(cos < 0.8, "{a:?} and {b:?} have cosine {cos}");
        }
    }
    Ok(())
}

/// Cases per run: 32 by default (each reopens the store several times);
/// set `MNEMON_MODEL_CASES` for a deeper run.
fn model_cases() -> u32 {
    std::env::var("MNEMON_MODEL_CASES").ok().and_then(|s| s.parse().ok()).unwrap_or(32)
}

proptest! {
    #![proptest_config(ProptestConfig { cases: model_cases(), max_shrink_iters: 2_000, ..ProptestConfig::default() })]

    #[test]
    fn engine_acts_like_the_model(ops in proptest::collection::vec(op(), 1..40)) {
        let dir = tempfile::tempdir().map_err(|e| TestCaseError::fail(e.to_string()))?;
        run_ops(dir.path(), &ops, None).map_err(TestCaseError::fail)?;
    }

    /// The same model on an encrypted store: sealed records and vectors
    /// replay to the live state, and a forget of a whole namespace (which
    /// shreds its key) replays as erased.
    #[test]
    fn encrypted_engine_acts_like_the_model(ops in proptest::collection::vec(op(), 1..40)) {
        let dir = tempfile::tempdir().map_err(|e| TestCaseError::fail(e.to_string()))?;
        let key = mnemon::crypt::Kek::generate();
        run_ops(dir.path(), &ops, Some(&key)).map_err(TestCaseError::fail)?;
    }
}

/// Closing and at once reopening, many times over, never finds the store
/// still locked by the engine that was just closed.
#[test]
fn reopen_right_after_close() -> TestResult {
    let dir = tempfile::tempdir()?;
    let u1 = ns("u1");
    for i in 0..25 {
        let engine = Engine::open(dir.path())?;
        assert_eq!(engine.stats().last_seq, 3 * i);
        engine.observe(&u1, NewObservation::new("s1", Role::User, format!("Turn {i}: 今天天气很好")))?;
        let batch = (0..2).map(|j| NewMemory::new(format!("Fact {j} of round {i} about the weather"))).collect();
        engine.remember_batch(&u1, batch)?;
        engine.close()?;
    }
    Ok(())
}

/// A 384-d embedder of another model that scales or breaks the hashing
/// embedder's vectors, to check what an open that re-embeds accepts.
struct Skewed {
    inner: mnemon::embed::HashingEmbedder,
    nan: bool,
}

impl mnemon::embed::Embedder for Skewed {
    fn model_id(&self) -> &str {
        "skewed-test-384"
    }

    fn dim(&self) -> usize {
        384
    }

    fn embed(&self, texts: &[&str], kind: mnemon::embed::EmbedKind) -> mnemon::Result<Vec<Vec<f32>>> {
        let mut vs = self.inner.embed(texts, kind)?;
        for v in &mut vs {
            v.iter_mut().for_each(|x| *x *= 3.0);
            if self.nan {
                v[7] = f32::NAN;
            }
        }
        Ok(vs)
    }
}

/// Vectors embedded again at open (the store's model changed) are checked
/// and normalised as a live write's are: a NaN fails the open with an
/// embedder error and caches nothing, and the store still opens with its
/// own model; an unnormalised vector is normalised (cosine stays in -1..=1).
#[test]
fn vectors_embedded_at_open_are_checked_and_normalised() -> TestResult {
    let dir = tempfile::tempdir()?;
    let u = ns("u1");
    let engine = Engine::open(dir.path())?;
    engine.remember(&u, NewMemory::new("The user plays the cello on Sunday mornings"))?;
    engine.close()?;

    let broken = Skewed { inner: mnemon::embed::HashingEmbedder::new(384)?, nan: true };
    match Engine::builder(dir.path()).embedder(std::sync::Arc::new(broken)).open() {
        Err(Error::InvalidInput { .. } | Error::Embedder(_)) => {}
        Err(e) => panic!("unexpected error {e}"),
        Ok(_) => panic!("a NaN vector was accepted at open"),
    }
    let engine = Engine::open(dir.path())?;
    assert_eq!(engine.list(&u, &ListOptions::default()).len(), 1);
    engine.close()?;

    let scaled = Skewed { inner: mnemon::embed::HashingEmbedder::new(384)?, nan: false };
    let engine = Engine::builder(dir.path()).embedder(std::sync::Arc::new(scaled)).open()?;
    assert_eq!(engine.open_report().vectors_embedded, 1);
    let opts = mnemon::RecallOptions { record_access: false, ..Default::default() };
    let hits = engine.recall(&u, "The user plays the cello on Sunday mornings", &opts)?;
    let sim = hits[0].explain.similarity;
    assert!((sim - 1.0).abs() < 1e-3, "cosine {sim}");
    engine.close()?;

    // Live, the same checks: a write whose vector comes back with a NaN is
    // refused and writes nothing; so is a query.
    let fresh = tempfile::tempdir()?;
    let broken = Skewed { inner: mnemon::embed::HashingEmbedder::new(384)?, nan: true };
    let engine = Engine::builder(fresh.path()).embedder(std::sync::Arc::new(broken)).open()?;
    assert!(matches!(engine.remember(&u, NewMemory::new("Plays the cello")), Err(Error::Embedder(_))));
    assert!(engine.list(&u, &ListOptions::default()).is_empty());
    assert_eq!(engine.stats().last_seq, 0);
    assert!(matches!(engine.recall(&u, "cello", &opts), Err(Error::Embedder(_))));
    engine.close()?;
    Ok(())
}

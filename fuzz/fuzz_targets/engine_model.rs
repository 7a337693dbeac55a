//! The engine against a plain in-memory model.
//!
//! The input is read (with `arbitrary`, one byte per choice) as up to 16 operations over two
//! namespaces: observe, remember with or without a slot key, supersede,
//! forget a memory, a session or a whole namespace, and close-and-reopen.
//! After every operation the engine's result must be the model's, and
//! `list` of each namespace (every version, quarantined included, and the
//! active view) must equal the model's memories; after a reopen the digest
//! must equal the live one and the lists must still match.
//!
//! Remembers use `DedupMode::Off`, so the only content comparison the model
//! needs is the normalisation that makes a supersede with equal content a
//! no-op. Content is a fixed text (some with personal data, redacted on
//! write) or a short arbitrary string; the model redacts it with the same
//! redactor and skips writes that the injection check would quarantine.
#![no_main]

use std::collections::{BTreeMap, BTreeSet};
use std::path::{Path, PathBuf};

use libfuzzer_sys::arbitrary::{self, Arbitrary, Unstructured};
use libfuzzer_sys::fuzz_target;
use mnemon::text::{check_chars, TextField};
use mnemon::safety::{InjectionDetector, Redactor};
use mnemon::{
    DedupMode, Durability, Engine, Error, ForgetOutcome, ForgetRequest, ListOptions, MemoryId, Namespace, NewMemory,
    NewObservation, ObservationId, RememberAction, Role, Status,
};

const MAX_OPS: usize = 16;
const MAX_FREE_TEXT: usize = 64;
const NAMESPACES: [&str; 2] = ["u1", "team:alpha"];
const SESSIONS: [&str; 2] = ["s1", "会话2"];
const KEYS: [&str; 2] = ["user.city", "user.drink"];
const TEXTS: [&str; 8] = [
    "I live in Berlin",
    "  i LIVE in   berlin ",
    "My favourite drink is oolong tea",
    "我每天早上喝一杯咖啡",
    "The cat is called Miso",
    "Call me on 13812345678 after six",
    "Ｉ live in Berlin",
    "   ",
];

#[derive(Debug)]
enum Text {
    Fixed(u8),
    Free(String),
}

#[derive(Debug)]
enum Target {
    /// The n-th memory id handed out (modulo their number).
    Known(u8),
    /// An id that was never handed out.
    Unknown(u8),
}

#[derive(Debug)]
enum Op {
    Observe { ns: bool, session: bool, text: Text },
    Remember { ns: bool, text: Text, key: Option<bool>, session: Option<bool> },
    Supersede { ns: bool, target: Target, text: Text },
    ForgetMemory { ns: bool, target: Target },
    ForgetSession { ns: bool, session: bool },
    ForgetAll { ns: bool },
    Reopen,
}

// Compact encodings (one byte per choice rather than the derive's four per
// enum tag), so that short inputs already hold several operations.

impl<'a> Arbitrary<'a> for Text {
    fn arbitrary(u: &mut Unstructured<'a>) -> arbitrary::Result<Self> {
        let b = u8::arbitrary(u)?;
        if b < 0xC0 {
            return Ok(Text::Fixed(b));
        }
        let len = u.int_in_range(0..=MAX_FREE_TEXT)?;
        let len = len.min(u.len());
        Ok(Text::Free(String::from_utf8_lossy(u.bytes(len)?).into_owned()))
    }
}

impl<'a> Arbitrary<'a> for Target {
    fn arbitrary(u: &mut Unstructured<'a>) -> arbitrary::Result<Self> {
        let b = u8::arbitrary(u)?;
        Ok(if b >= 0xE0 { Target::Unknown(b) } else { Target::Known(b) })
    }
}

impl<'a> Arbitrary<'a> for Op {
    /// One byte: bits 0-2 the operation, bit 3 the namespace, bits 4-7 flags.
    fn arbitrary(u: &mut Unstructured<'a>) -> arbitrary::Result<Self> {
        let b = u8::arbitrary(u)?;
        let ns = b & 0x08 != 0;
        let (f1, f2, f3, f4) = (b & 0x10 != 0, b & 0x20 != 0, b & 0x40 != 0, b & 0x80 != 0);
        Ok(match b & 0x07 {
            0 => Op::Observe { ns, session: f1, text: Text::arbitrary(u)? },
            1 | 2 => Op::Remember { ns, text: Text::arbitrary(u)?, key: f1.then_some(f2), session: f3.then_some(f4) },
            3 => Op::Supersede { ns, target: Target::arbitrary(u)?, text: Text::arbitrary(u)? },
            4 => Op::ForgetMemory { ns, target: Target::arbitrary(u)? },
            5 => Op::ForgetSession { ns, session: f1 },
            6 if f1 && f2 => Op::ForgetAll { ns },
            6 => Op::Supersede { ns, target: Target::arbitrary(u)?, text: Text::arbitrary(u)? },
            _ if f1 && f2 => Op::Reopen,
            _ => Op::Remember { ns, text: Text::arbitrary(u)?, key: f3.then_some(f4), session: None },
        })
    }
}

fn idx(b: bool) -> usize {
    usize::from(b)
}

/// Text the engine refuses as input: blank, or holding characters the input
/// rules (`mnemon::text`) refuse.
fn refused(text: &str) -> bool {
    text.trim().is_empty() || check_chars("content", text, TextField::Body).is_err()
}

fn text_of(t: &Text) -> String {
    match t {
        Text::Fixed(i) => TEXTS[usize::from(*i) % TEXTS.len()].to_string(),
        Text::Free(s) => s.clone(),
    }
}

/// The engine's exact-duplicate normalisation: NFKC, lower case, whitespace
/// collapsed.
/// The engine's exact-duplicate reading, as far as these inputs need it:
/// NFKC and spacing aside, case kept.
fn normalize(s: &str) -> String {
    use unicode_normalization::UnicodeNormalization;
    let nfkc: String = s.nfkc().collect();
    nfkc.split_whitespace().collect::<Vec<_>>().join(" ")
}

#[derive(Clone, Debug, PartialEq)]
struct MMem {
    content: String,
    key: Option<String>,
    session: Option<String>,
    status: Status,
    prev: Option<MemoryId>,
    next: Option<MemoryId>,
}

#[derive(Clone, Debug, PartialEq)]
struct MObs {
    session: String,
    text: String,
}

/// What the engine should answer.
#[derive(Debug, PartialEq)]
enum Expect {
    Observed(ObservationId),
    Remembered(MemoryId, RememberAction),
    Forgot(Vec<MemoryId>, Vec<ObservationId>),
    NotFound,
    Conflict,
    Invalid,
}

#[derive(Default, Debug)]
struct Model {
    last_seq: u64,
    /// Live memories and observations per namespace.
    memories: [BTreeMap<MemoryId, MMem>; 2],
    observations: [BTreeMap<ObservationId, MObs>; 2],
    forgotten: [BTreeSet<MemoryId>; 2],
    /// Sessions a forget of the session erased something of.
    forgotten_sessions: [BTreeSet<String>; 2],
    /// Whether anything was ever written to the namespace.
    held: [bool; 2],
    /// Every memory id handed out, in order.
    ids: Vec<MemoryId>,
}

impl Model {
    fn target(&self, t: &Target) -> MemoryId {
        match t {
            Target::Known(i) if !self.ids.is_empty() => self.ids[usize::from(*i) % self.ids.len()],
            Target::Known(i) | Target::Unknown(i) => MemoryId(10_000 + u64::from(*i)),
        }
    }

    fn observe(&mut self, ns: usize, session: &str, text: String) -> Expect {
        self.last_seq += 1;
        self.held[ns] = true;
        let id = ObservationId(self.last_seq);
        self.observations[ns].insert(id, MObs { session: session.to_string(), text });
        Expect::Observed(id)
    }

    fn new_memory(&mut self, ns: usize, content: String, key: Option<String>, session: Option<String>) -> MemoryId {
        self.last_seq += 1;
        self.held[ns] = true;
        let id = MemoryId(self.last_seq);
        let m = MMem { content, key, session, status: Status::Active, prev: None, next: None };
        self.memories[ns].insert(id, m);
        self.ids.push(id);
        id
    }

    /// `new` replaces `old`: one `Superseded` event after the `Extracted`.
    fn link(&mut self, ns: usize, old: MemoryId, new: MemoryId) {
        self.last_seq += 1;
        if let Some(o) = self.memories[ns].get_mut(&old) {
            o.status = Status::Superseded;
            o.next = Some(new);
        }
        if let Some(n) = self.memories[ns].get_mut(&new) {
            n.prev = Some(old);
        }
    }

    /// A remember with dedup off: supersedes the active holder of its key
    /// (inheriting its session when none is given), else creates.
    fn remember(&mut self, ns: usize, content: String, key: Option<String>, session: Option<String>) -> Expect {
        let holder = key.as_ref().and_then(|k| {
            self.memories[ns]
                .iter()
                .find(|(_, m)| m.status == Status::Active && m.key.as_ref() == Some(k))
                .map(|(id, m)| (*id, m.session.clone()))
        });
        let session = session.or_else(|| holder.as_ref().and_then(|(_, s)| s.clone()));
        let new = self.new_memory(ns, content, key, session);
        match holder.map(|(id, _)| id) {
            Some(old) => {
                self.link(ns, old, new);
                Expect::Remembered(new, RememberAction::Superseded { old })
            }
            None => Expect::Remembered(new, RememberAction::Created),
        }
    }

    fn supersede(&mut self, ns: usize, old: MemoryId, content: String) -> Expect {
        let Some(base) = self.memories[ns].get(&old).cloned() else { return Expect::NotFound };
        if base.status != Status::Active {
            return Expect::Conflict;
        }
        if normalize(&base.content) == normalize(&content) {
            return Expect::Remembered(old, RememberAction::Unchanged);
        }
        let new = self.new_memory(ns, content, base.key, base.session);
        self.link(ns, old, new);
        Expect::Remembered(new, RememberAction::Superseded { old })
    }

    /// The contiguous chain of live versions around `id`, oldest first.
    fn chain(&self, ns: usize, id: MemoryId) -> Vec<MemoryId> {
        let mems = &self.memories[ns];
        let mut first = id;
        while let Some(p) = mems.get(&first).and_then(|m| m.prev).filter(|p| mems.contains_key(p)) {
            first = p;
        }
        let mut out = vec![first];
        while let Some(n) = mems.get(&out[out.len() - 1]).and_then(|m| m.next).filter(|n| mems.contains_key(n)) {
            out.push(n);
        }
        out
    }

    fn forget(&mut self, ns: usize, mems: BTreeSet<MemoryId>, obs: BTreeSet<ObservationId>) -> Expect {
        if mems.is_empty() && obs.is_empty() {
            return Expect::Forgot(vec![], vec![]);
        }
        self.last_seq += 1;
        for id in &mems {
            // A forgotten version is cut out of its chain.
            if let Some(gone) = self.memories[ns].remove(id) {
                let live = &mut self.memories[ns];
                if let Some(p) = gone.prev.and_then(|p| live.get_mut(&p)).filter(|p| p.next == Some(*id)) {
                    p.next = gone.next;
                }
                if let Some(n) = gone.next.and_then(|n| live.get_mut(&n)).filter(|n| n.prev == Some(*id)) {
                    n.prev = gone.prev;
                }
            }
            self.forgotten[ns].insert(*id);
        }
        for id in &obs {
            self.observations[ns].remove(id);
        }
        Expect::Forgot(mems.into_iter().collect(), obs.into_iter().collect())
    }

    fn forget_memory(&mut self, ns: usize, id: MemoryId) -> Expect {
        if self.forgotten[ns].contains(&id) {
            return Expect::Forgot(vec![], vec![]);
        }
        if !self.memories[ns].contains_key(&id) {
            return Expect::NotFound;
        }
        let chain = self.chain(ns, id).into_iter().collect();
        self.forget(ns, chain, BTreeSet::new())
    }

    /// A session no memory or observation carries is unknown unless an
    /// earlier forget of it erased something.
    fn forget_session(&mut self, ns: usize, session: &str) -> Expect {
        let mems: BTreeSet<MemoryId> = self.memories[ns]
            .iter()
            .filter(|(_, m)| m.session.as_deref() == Some(session))
            .map(|(id, _)| *id)
            .collect();
        let obs: BTreeSet<ObservationId> =
            self.observations[ns].iter().filter(|(_, o)| o.session == session).map(|(id, _)| *id).collect();
        if mems.is_empty() && obs.is_empty() {
            let known = self.forgotten_sessions[ns].contains(session);
            return if known { Expect::Forgot(vec![], vec![]) } else { Expect::NotFound };
        }
        self.forgotten_sessions[ns].insert(session.to_string());
        self.forget(ns, mems, obs)
    }

    /// A namespace nothing was ever written to is unknown.
    fn forget_all(&mut self, ns: usize) -> Expect {
        if !self.held[ns] {
            return Expect::NotFound;
        }
        let mems = self.memories[ns].keys().copied().collect();
        let obs = self.observations[ns].keys().copied().collect();
        self.forget(ns, mems, obs)
    }
}

struct Harness {
    redactor: Redactor,
    injection: InjectionDetector,
    namespaces: [Namespace; 2],
}

impl Harness {
    fn new() -> Self {
        Harness {
            redactor: Redactor::new(),
            injection: InjectionDetector::new(),
            namespaces: NAMESPACES.map(|n| Namespace::new(n).expect("valid namespace")),
        }
    }

    fn open(&self, dir: &Path) -> Engine {
        Engine::builder(dir)
            .durability(Durability::Interval(std::time::Duration::from_secs(60)))
            .cache_bytes(1 << 20)
            .open()
            .unwrap_or_else(|e| panic!("open: {e:?}"))
    }

    /// Content as the engine stores it, or `None` when the write would be
    /// quarantined (not modelled) and is skipped.
    fn stored(&self, text: &str) -> Option<String> {
        let redacted = self.redactor.redact(text).text;
        self.injection.check(&redacted).is_none().then_some(redacted)
    }

    fn step(&self, engine: &Engine, model: &mut Model, op: &Op) {
        let (got, want) = match op {
            Op::Observe { ns, session, text } => {
                let (ns, text) = (idx(*ns), text_of(text));
                let session = SESSIONS[idx(*session)];
                let got = engine.observe(&self.namespaces[ns], NewObservation::new(session, Role::User, text.as_str()));
                let got = match got {
                    Ok(id) => Expect::Observed(id),
                    Err(Error::InvalidInput { .. }) => Expect::Invalid,
                    Err(e) => panic!("observe: unexpected error {e:?}"),
                };
                let want = if refused(&text) {
                    Expect::Invalid
                } else {
                    model.observe(ns, session, self.redactor.redact(&text).text)
                };
                (got, want)
            }
            Op::Remember { ns, text, key, session } => {
                let (ns, text) = (idx(*ns), text_of(text));
                let Some(content) = self.stored(&text) else { return };
                let key = key.map(|k| KEYS[idx(k)].to_string());
                let session = session.map(|s| SESSIONS[idx(s)].to_string());
                let mut m = NewMemory::new(text.as_str()).dedup(DedupMode::Off);
                if let Some(k) = &key {
                    m = m.key(k.as_str());
                }
                if let Some(s) = &session {
                    m = m.session(s.as_str());
                }
                let got = outcome(engine.remember(&self.namespaces[ns], m));
                let want = if refused(&text) { Expect::Invalid } else { model.remember(ns, content, key, session) };
                (got, want)
            }
            Op::Supersede { ns, target, text } => {
                let (ns, text) = (idx(*ns), text_of(text));
                let Some(content) = self.stored(&text) else { return };
                let old = model.target(target);
                let got = outcome(engine.supersede(&self.namespaces[ns], old, NewMemory::new(text.as_str())));
                // The old version is looked up before the new content is checked.
                let want = match model.memories[ns].get(&old) {
                    None => Expect::NotFound,
                    Some(_) if refused(&text) => Expect::Invalid,
                    Some(_) => model.supersede(ns, old, content),
                };
                (got, want)
            }
            Op::ForgetMemory { ns, target } => {
                let (ns, id) = (idx(*ns), model.target(target));
                let got = forgot(engine.forget(&self.namespaces[ns], ForgetRequest::Memory(id), "fuzz"));
                (got, model.forget_memory(ns, id))
            }
            Op::ForgetSession { ns, session } => {
                let (ns, session) = (idx(*ns), SESSIONS[idx(*session)]);
                let req = ForgetRequest::Session(session.to_string());
                let got = forgot(engine.forget(&self.namespaces[ns], req, "fuzz"));
                (got, model.forget_session(ns, session))
            }
            Op::ForgetAll { ns } => {
                let ns = idx(*ns);
                let got = forgot(engine.forget(&self.namespaces[ns], ForgetRequest::All, "fuzz"));
                (got, model.forget_all(ns))
            }
            Op::Reopen => unreachable!("handled by the caller"),
        };
        assert_eq!(got, want, "{op:?}: engine and model disagree");
    }

    /// Everything `list` and `observations` show equals the model.
    fn compare(&self, engine: &Engine, model: &Model, when: &str) {
        assert_eq!(engine.stats().last_seq, model.last_seq, "{when}: last_seq");
        let every = ListOptions { include_superseded: true, include_quarantined: true, ..ListOptions::default() };
        for (i, ns) in self.namespaces.iter().enumerate() {
            let got: BTreeMap<MemoryId, MMem> = engine
                .list(ns, &every)
                .into_iter()
                .map(|m| {
                    assert!(m.quarantine.is_none(), "{when}: memory {} is quarantined", m.id);
                    let mm = MMem {
                        content: m.content,
                        key: m.key,
                        session: m.session,
                        status: m.status,
                        prev: m.prev,
                        next: m.next,
                    };
                    (m.id, mm)
                })
                .collect();
            assert_eq!(got, model.memories[i], "{when}: memories of {ns:?}");
            let active: Vec<MemoryId> = engine.list(ns, &ListOptions::default()).iter().map(|m| m.id).collect();
            let want: Vec<MemoryId> =
                model.memories[i].iter().filter(|(_, m)| m.status == Status::Active).map(|(id, _)| *id).collect();
            assert_eq!(active, want, "{when}: active memories of {ns:?}");
            let got: BTreeMap<ObservationId, MObs> = engine
                .observations(ns, None)
                .into_iter()
                .map(|o| (o.id, MObs { session: o.session, text: o.text }))
                .collect();
            assert_eq!(got, model.observations[i], "{when}: observations of {ns:?}");
            for id in &model.forgotten[i] {
                assert!(engine.get(ns, *id).is_err(), "{when}: forgotten memory {id} is readable");
            }
        }
    }

    fn reopen(&self, engine: Engine, dir: &Path, model: &Model, when: &str) -> Engine {
        let live = engine.digest();
        engine.close().unwrap_or_else(|e| panic!("{when}: close: {e:?}"));
        let engine = self.open(dir);
        assert_eq!(engine.digest(), live, "{when}: digest after reopen differs from live");
        self.compare(&engine, model, when);
        engine
    }

    fn run(&self, dir: &Path, ops: &[Op]) {
        let mut engine = self.open(dir);
        let mut model = Model::default();
        for (i, op) in ops.iter().enumerate() {
            if let Op::Reopen = op {
                engine = self.reopen(engine, dir, &model, &format!("op {i} (reopen)"));
            } else {
                self.step(&engine, &mut model, op);
                self.compare(&engine, &model, &format!("op {i} {op:?}"));
            }
        }
        let engine = self.reopen(engine, dir, &model, "final reopen");
        engine.close().unwrap_or_else(|e| panic!("close: {e:?}"));
    }
}

fn outcome(r: mnemon::Result<mnemon::Remembered>) -> Expect {
    match r {
        Ok(r) => Expect::Remembered(r.id, r.action),
        Err(Error::NotFound { .. }) => Expect::NotFound,
        Err(Error::Conflict(_)) => Expect::Conflict,
        Err(Error::InvalidInput { .. }) => Expect::Invalid,
        Err(e) => panic!("unexpected error {e:?}"),
    }
}

fn forgot(r: mnemon::Result<ForgetOutcome>) -> Expect {
    match r {
        Ok(f) => {
            assert_eq!(f.memories, f.memory_ids.len(), "inconsistent counts {f:?}");
            assert_eq!(f.observations, f.observation_ids.len(), "inconsistent counts {f:?}");
            Expect::Forgot(f.memory_ids, f.observation_ids)
        }
        Err(Error::NotFound { .. }) => Expect::NotFound,
        Err(e) => panic!("unexpected error {e:?}"),
    }
}

/// A RAM-backed temp directory where there is one (stores are opened and
/// dropped for every input).
fn temp_base() -> PathBuf {
    let shm = Path::new("/dev/shm");
    if shm.is_dir() && tempfile::tempdir_in(shm).is_ok() {
        shm.to_path_buf()
    } else {
        std::env::temp_dir()
    }
}

static HARNESS: std::sync::LazyLock<(Harness, PathBuf)> = std::sync::LazyLock::new(|| (Harness::new(), temp_base()));

fuzz_target!(|data: &[u8]| {
    let mut u = Unstructured::new(data);
    let mut ops = Vec::new();
    while ops.len() < MAX_OPS && !u.is_empty() {
        match Op::arbitrary(&mut u) {
            Ok(op) => ops.push(op),
            Err(_) => break,
        }
    }
    let ops = &ops;
    let (harness, base) = &*HARNESS;
    let dir = tempfile::Builder::new().prefix("mnemon-fuzz-").tempdir_in(base).expect("temp dir");
    harness.run(dir.path(), ops);
});

//! Projections: the in-memory state rebuilt from the log. One [`State`] holds,
//! per namespace, the fact table (memory versions, observations, version
//! chains), the vector index and the lexical index.
//!
//! [`State::apply`] is the only way state changes, and it is a pure function
//! of the event (plus the memory's vector, which is derived from its content).
//! Live writes and replay both go through it, so replay equals live. On open
//! it may hand lexical indexing to a thread ([`State::feed_lexical`]); the
//! indexes it built are installed by [`State::finish_lexical`], the one other
//! writer of state, before any reader sees it.

mod digest;
mod lexical_feed;
mod record;

pub(crate) use record::normalize_content;
pub use record::{Memory, Observation};

use std::collections::{BTreeMap, BTreeSet, HashMap, HashSet};

use chrono::{DateTime, Utc};
use smallvec::SmallVec;

use crate::event::{Event, EventBody, Extracted, ForgetTarget, Observed};
use crate::index::{HnswParams, LexicalIndex, VectorIndex};
use crate::types::{canonical_id, MemoryId, Namespace, ObservationId, Seq, Status};

/// The projections of one namespace.
pub(crate) struct NsState {
    /// Every memory version by id. Boxed: ids arrive in ascending order,
    /// which leaves a B-tree's nodes about half full (a full leaf splits
    /// 6 / 5 and only the right half grows), so unboxed 400-byte records
    /// would cost about 750 bytes each; boxed, the slack is in 16-byte
    /// entries (measured on a 1M-event store: see docs/BENCHMARKS.md,
    /// "Opening a store").
    pub(crate) memories: BTreeMap<MemoryId, Box<Memory>>,
    /// Every observation by id, boxed for the same reason.
    pub(crate) observations: BTreeMap<ObservationId, Box<Observation>>,
    /// Latest active version per slot key in its identifier form
    /// ([`canonical_id`]), quarantined versions never (includes writes not
    /// yet durable; used by the writer for validation only). Look up with
    /// [`NsState::key_holder`].
    by_key: HashMap<String, MemoryId>,
    /// Versions that no event replaced but that a later version under the
    /// same slot key, in the identifier form, displaces: only a log written
    /// before keys were stored in that form holds such pairs (`user.café`
    /// precomposed and decomposed, both active). Each maps to the version
    /// that displaces it, the earliest surviving one; see
    /// [`NsState::shadow`].
    shadowed: HashMap<MemoryId, MemoryId>,
    /// Every memory version, whatever its status, per normalised content
    /// (for the writer's duplicate check, forget's text match and import's
    /// identities), keyed by a case-blind hash of the content (`norm_key`)
    /// so the text is not held twice; read through [`NsState::same_text`]
    /// and [`NsState::same_text_any_case`] (active versions) and
    /// [`NsState::versions_with_text`] (every version), which compare the
    /// texts themselves, so that none of them reads the whole namespace.
    /// Ids ascending: several versions can hold the same text (under
    /// different slot keys, written with dedup off, or an older version of
    /// a chain). A version leaves only when it is forgotten. The id list
    /// keeps one id inline (a text is almost always held by one version),
    /// so an entry needs no allocation of its own.
    by_norm: HashMap<u64, SmallVec<[MemoryId; 1]>>,
    /// Every observation by the hash of its text and by the hash of its
    /// source reference (`obs_key`, one domain each), for import's
    /// identities and source lookups; readers compare the fields
    /// themselves.
    obs_index: HashMap<u64, SmallVec<[ObservationId; 1]>>,
    /// The hash of `by_norm`'s and `obs_index`'s keys.
    norm_hasher: foldhash::fast::RandomState,
    pub(crate) forgotten_memories: HashSet<MemoryId>,
    pub(crate) forgotten_observations: HashSet<ObservationId>,
    /// Sessions a `Forgotten` event named as its target, by the FNV-1a 64
    /// hash of the name (8 bytes each, however long the name; a collision
    /// only turns one unknown session's `NotFound` into zero counts), so
    /// that forgetting one again is an empty outcome, not an unknown
    /// session. The names of
    /// sessions emptied otherwise (by id, by the whole namespace) are not
    /// kept: compaction erases them from the log with the payloads. Not in
    /// the digest, which stays comparable with exports of earlier versions;
    /// it is a function of the `Forgotten` events, which export, backup and
    /// compaction keep as they are.
    pub(crate) forgotten_sessions: HashSet<u64>,
    /// Memory versions whose payload compaction replaced by a tombstone,
    /// from the tombstone to the `Forgotten` event that erased them (replay
    /// only), so that surviving neighbours replay with the same links and
    /// times as live.
    erased: HashMap<MemoryId, ErasedVersion>,
    /// Every version whose `next` is the key: one for a plain supersede,
    /// one per member for a consolidation. Lets a forgotten version be cut
    /// out of its chain without leaving a link to it.
    preds: HashMap<MemoryId, Vec<MemoryId>>,
    pub(crate) vectors: VectorIndex,
    pub(crate) lexical: LexicalIndex,
    /// Memory versions written without waiting for their vector
    /// ([`crate::EmbedMode::Deferred`]) whose vector has not arrived yet.
    /// Not a function of the log but of the embedder's progress: the digest
    /// counts a pending memory as indexed, so live and replay agree at any
    /// point of the backlog.
    pub(crate) pending_vectors: BTreeSet<MemoryId>,
    /// Memory versions whose searchable text ([`crate::text::searchable`]:
    /// a JSON object's values, not its keys) is mostly CJK script
    /// ([`crate::text::mostly_cjk`]): recall corrects a multilingual
    /// embedder's same-language bias between the two scripts
    /// ([`crate::recall::Weights::cross_script`]).
    pub(crate) cjk: HashSet<u64>,
}

impl NsState {
    fn new(dim: usize, params: &HnswParams) -> NsState {
        NsState {
            memories: BTreeMap::new(),
            observations: BTreeMap::new(),
            by_key: HashMap::new(),
            shadowed: HashMap::new(),
            by_norm: HashMap::new(),
            obs_index: HashMap::new(),
            norm_hasher: foldhash::fast::RandomState::default(),
            forgotten_memories: HashSet::new(),
            forgotten_observations: HashSet::new(),
            forgotten_sessions: HashSet::new(),
            erased: HashMap::new(),
            preds: HashMap::new(),
            vectors: VectorIndex::new(dim, params.clone()),
            lexical: LexicalIndex::new(),
            pending_vectors: BTreeSet::new(),
            cjk: HashSet::new(),
        }
    }

    /// Whether memory versions here are written in both scripts (mostly CJK
    /// and not): only then can a query's own script crowd the other out of
    /// its candidates. Counts every version (superseded ones too), so it
    /// may say yes for a namespace whose current memories are of one script.
    pub(crate) fn has_both_scripts(&self) -> bool {
        !self.cjk.is_empty() && self.memories.len() > self.cjk.len()
    }

    /// Every version in the chain of `id`, oldest first (forgotten links skipped).
    pub(crate) fn chain(&self, id: MemoryId) -> Vec<MemoryId> {
        let mut first = id;
        let mut guard = 0usize;
        while let Some(p) = self.memories.get(&first).and_then(|m| m.prev) {
            if !self.memories.contains_key(&p) || guard > self.memories.len() {
                break;
            }
            first = p;
            guard += 1;
        }
        let mut out = Vec::new();
        let mut cur = Some(first);
        while let Some(c) = cur {
            if !self.memories.contains_key(&c) || out.len() > self.memories.len() {
                break;
            }
            out.push(c);
            cur = self.memories.get(&c).and_then(|m| m.next);
        }
        out
    }

    /// Removes a forgotten version (live, or erased by compaction) and cuts
    /// it out of its chain: every version that led to it now leads to its
    /// successor, and the successor back to its predecessor. Leaves the
    /// lexical index to the caller, which removes a whole event's
    /// memories at once ([`LexicalIndex::remove_many`]).
    fn remove_memory(&mut self, id: MemoryId) {
        // A displaced version's `next` is no link of its chain: its
        // predecessors end where it ended, as when its successor's key is
        // unknown (replaying a compacted log, where one of them is erased).
        let displaced = self.shadowed.remove(&id).is_some();
        let links = if let Some(m) = self.memories.remove(&id) {
            if let Some(k) = &m.key {
                self.release_key(k, id);
            }
            self.unindex_norm(&normalize_content(&m.content), id);
            self.vectors.remove(id.0);
            self.pending_vectors.remove(&id);
            self.cjk.remove(&id.0);
            Some((m.prev, if displaced { None } else { m.next }))
        } else {
            self.erased.remove(&id).map(|e| (e.prev, e.next))
        };
        self.forgotten_memories.insert(id);
        // The versions it displaced are displaced by the next surviving
        // version under their key, or current again: as if it had never
        // been written.
        if !self.shadowed.is_empty() {
            let mut orphans: Vec<MemoryId> =
                self.shadowed.iter().filter(|(_, by)| **by == id).map(|(a, _)| *a).collect();
            orphans.sort_unstable();
            for a in orphans {
                self.shadowed.remove(&a);
                self.unshadow(a);
                self.displace_if_later(a);
            }
        }
        let Some((prev, next)) = links else {
            return;
        };
        let preds = self.preds.remove(&id).unwrap_or_default();
        for p in &preds {
            if let Some(pm) = self.memories.get_mut(p) {
                if pm.next == Some(id) {
                    pm.next = next;
                    self.refresh_valid_to(*p);
                }
            } else if let Some(pe) = self.erased.get_mut(p) {
                if pe.next == Some(id) {
                    pe.next = next;
                }
            }
        }
        if let Some(n) = next {
            if let Some(nm) = self.memories.get_mut(&n) {
                if nm.prev == Some(id) {
                    nm.prev = prev;
                }
            } else if let Some(ne) = self.erased.get_mut(&n) {
                if ne.prev == Some(id) {
                    ne.prev = prev;
                }
            }
            let np = self.preds.entry(n).or_default();
            np.retain(|p| *p != id);
            np.extend(preds);
            np.sort_unstable();
            np.dedup();
        }
    }

    /// The active version that holds slot key `key` (compared in its
    /// identifier form, [`canonical_id`]), if any.
    pub(crate) fn key_holder(&self, key: &str) -> Option<MemoryId> {
        self.by_key.get(canonical_id(key).as_ref()).copied()
    }

    /// Frees slot key `key` if version `id` holds it.
    fn release_key(&mut self, key: &str, id: MemoryId) {
        let form = canonical_id(key);
        if self.by_key.get(form.as_ref()) == Some(&id) {
            self.by_key.remove(form.as_ref());
        }
    }

    /// Marks active version `old` as displaced by `by`, a later version
    /// whose slot key has the same identifier form: it reads as superseded
    /// by `by` from `by`'s creation on (status, `next`, `superseded_seq`,
    /// recorded and valid end). `by` is not
    /// linked back: no event joined the two chains, and a link that an
    /// erasure of either could not reproduce on replay would make replay
    /// differ from live.
    fn shadow(&mut self, old: MemoryId, by: MemoryId) {
        let Some((seq, recorded, valid)) =
            self.memories.get(&by).map(|m| (m.created_seq, m.recorded_from, m.valid_from))
        else {
            return;
        };
        let Some(m) = self.memories.get_mut(&old) else {
            return;
        };
        if m.status != Status::Active {
            return;
        }
        m.status = Status::Superseded;
        m.next = Some(by);
        m.superseded_seq = Some(seq);
        m.recorded_to = Some(recorded);
        m.valid_to = Some(valid.max(m.valid_from));
        self.shadowed.insert(old, by);
    }

    /// Undoes [`NsState::shadow`] on `id` (already out of `shadowed`): the
    /// version is active again. The slot key is left to the caller.
    fn unshadow(&mut self, id: MemoryId) {
        let Some(m) = self.memories.get_mut(&id) else {
            return;
        };
        m.status = Status::Active;
        m.next = None;
        m.superseded_seq = None;
        m.recorded_to = None;
        m.valid_to = None;
    }

    /// Displaces active version `id` by the earliest surviving,
    /// unquarantined later version whose slot key has the same identifier
    /// form; with none, `id` holds its key again.
    fn displace_if_later(&mut self, id: MemoryId) {
        let Some(form) = self.memories.get(&id).and_then(|m| m.key.as_deref()).map(|k| canonical_id(k).into_owned())
        else {
            return;
        };
        let later = self
            .memories
            .range(MemoryId(id.0 + 1)..)
            .find(|(_, m)| m.quarantine.is_none() && m.key.as_deref().is_some_and(|k| canonical_id(k) == form.as_str()))
            .map(|(l, _)| *l);
        match later {
            Some(by) => self.shadow(id, by),
            None => {
                self.by_key.insert(form, id);
            }
        }
    }

    /// Sets the valid end of superseded version `id` from its successor:
    /// the successor's valid start (not before its own), or, with the
    /// successor unknown (forgotten, or erased and not yet cut out during
    /// replay), the time its replacement was recorded.
    fn refresh_valid_to(&mut self, id: MemoryId) {
        let Some(m) = self.memories.get(&id) else {
            return;
        };
        let Some(recorded_to) = m.recorded_to else {
            return;
        };
        let next_start = m.next.and_then(|n| self.memories.get(&n)).map(|n| n.valid_from);
        let end = next_start.unwrap_or(recorded_to).max(m.valid_from);
        if let Some(m) = self.memories.get_mut(&id) {
            m.valid_to = Some(end);
        }
    }

    fn unindex_norm(&mut self, norm: &str, id: MemoryId) {
        let key = self.norm_key(norm);
        if let Some(ids) = self.by_norm.get_mut(&key) {
            ids.retain(|i| *i != id);
            if ids.is_empty() {
                self.by_norm.remove(&key);
            }
        }
    }

    /// Key of a normalised text in the exact-duplicate map: the foldhash of
    /// its characters lower-cased (no allocation), randomly seeded per
    /// namespace and process, so texts cannot be chosen to collide. Case is
    /// folded in the key only, so that one map serves both the exact,
    /// case-kept duplicate check ([`NsState::same_text`]) and forget's
    /// case-blind match ([`NsState::same_text_any_case`]). Two texts may
    /// share a key; readers compare the texts.
    fn norm_key(&self, norm: &str) -> u64 {
        use std::hash::{BuildHasher, Hasher};
        let mut h = self.norm_hasher.build_hasher();
        for c in norm.chars().flat_map(char::to_lowercase) {
            h.write_u32(u32::from(c));
        }
        h.finish()
    }

    fn index_norm(&mut self, norm: &str, id: MemoryId) {
        let key = self.norm_key(norm);
        let ids = self.by_norm.entry(key).or_default();
        if let Err(at) = ids.binary_search(&id) {
            ids.insert(at, id);
        }
    }

    /// The active versions whose normalised content
    /// ([`normalize_content`]) is `norm`, ids ascending.
    pub(crate) fn same_text<'a>(&'a self, norm: &'a str) -> impl DoubleEndedIterator<Item = MemoryId> + 'a {
        self.versions_with_text(norm).filter(move |id| self.is_active(*id))
    }

    /// Every version (active, superseded or archived) whose normalised
    /// content is `norm`, ids ascending.
    pub(crate) fn versions_with_text<'a>(&'a self, norm: &'a str) -> impl DoubleEndedIterator<Item = MemoryId> + 'a {
        self.by_norm
            .get(&self.norm_key(norm))
            .into_iter()
            .flatten()
            .copied()
            .filter(move |id| self.memories.get(id).is_some_and(|m| normalize_content(&m.content) == norm))
    }

    /// The active versions whose normalised content, lower-cased, is
    /// `folded` (a normalised text lower-cased), ids ascending.
    pub(crate) fn same_text_any_case<'a>(&'a self, folded: &'a str) -> impl Iterator<Item = MemoryId> + 'a {
        self.versions_any_case(folded).filter(move |id| self.is_active(*id))
    }

    /// Every version whose normalised content, lower-cased, is `folded`,
    /// ids ascending.
    pub(crate) fn versions_any_case<'a>(&'a self, folded: &'a str) -> impl Iterator<Item = MemoryId> + 'a {
        self.by_norm.get(&self.norm_key(folded)).into_iter().flatten().copied().filter(move |id| {
            self.memories.get(id).is_some_and(|m| normalize_content(&m.content).to_lowercase() == folded)
        })
    }

    fn is_active(&self, id: MemoryId) -> bool {
        self.memories.get(&id).is_some_and(|m| m.status == Status::Active)
    }

    /// Key of an observation's text (`domain` `b'T'`) or source reference
    /// (`b'S'`) in `obs_index`.
    fn obs_key(&self, domain: u8, s: &str) -> u64 {
        use std::hash::{BuildHasher, Hasher};
        let mut h = self.norm_hasher.build_hasher();
        h.write_u8(domain);
        h.write(s.as_bytes());
        h.finish()
    }

    fn index_observation(&mut self, o: &Observation) {
        let mut keys = vec![self.obs_key(b'T', &o.text)];
        keys.extend(o.source.as_deref().map(|s| self.obs_key(b'S', s)));
        for key in keys {
            let ids = self.obs_index.entry(key).or_default();
            if let Err(at) = ids.binary_search(&o.id) {
                ids.insert(at, o.id);
            }
        }
    }

    fn unindex_observation(&mut self, o: &Observation) {
        let mut keys = vec![self.obs_key(b'T', &o.text)];
        keys.extend(o.source.as_deref().map(|s| self.obs_key(b'S', s)));
        for key in keys {
            if let Some(ids) = self.obs_index.get_mut(&key) {
                ids.retain(|i| *i != o.id);
                if ids.is_empty() {
                    self.obs_index.remove(&key);
                }
            }
        }
    }

    /// The observations whose text is `text`, ids ascending.
    pub(crate) fn observations_with_text<'a>(&'a self, text: &'a str) -> impl Iterator<Item = &'a Observation> + 'a {
        self.obs_index
            .get(&self.obs_key(b'T', text))
            .into_iter()
            .flatten()
            .filter_map(move |id| self.observations.get(id).map(|o| &**o))
            .filter(move |o| o.text == text)
    }

    /// The observations whose source reference is `source`, as given (not
    /// in its identifier form), ids ascending.
    pub(crate) fn observations_with_source<'a>(
        &'a self,
        source: &'a str,
    ) -> impl Iterator<Item = &'a Observation> + 'a {
        self.obs_index
            .get(&self.obs_key(b'S', source))
            .into_iter()
            .flatten()
            .filter_map(move |id| self.observations.get(id).map(|o| &**o))
            .filter(move |o| o.source.as_deref() == Some(source))
    }
}

/// What replay keeps of a memory version whose payload was erased: its
/// lineage start and its chain links.
#[derive(Clone, Copy, Debug)]
struct ErasedVersion {
    first_seen: DateTime<Utc>,
    prev: Option<MemoryId>,
    next: Option<MemoryId>,
}

/// Counters over the whole log, for `stats`.
#[derive(Clone, Debug, Default, PartialEq, Eq, serde::Serialize, serde::Deserialize, schemars::JsonSchema)]
pub struct EventCounts {
    /// `Observed` events.
    pub observed: u64,
    /// `Extracted` events.
    pub extracted: u64,
    /// `Superseded` events.
    pub superseded: u64,
    /// `Accessed` events.
    pub accessed: u64,
    /// `Forgotten` events.
    pub forgotten: u64,
    /// Tombstones left by compaction.
    pub tombstones: u64,
    /// `Archived` events.
    pub archived: u64,
}

/// All projections.
pub(crate) struct State {
    pub(crate) namespaces: HashMap<Namespace, NsState>,
    /// Readers see events with `seq <= visible` only: the durable prefix.
    pub(crate) visible: Seq,
    /// Last applied `Seq` (may run ahead of `visible` inside a group).
    pub(crate) last_seq: Seq,
    /// Commit time (µs since epoch) of each event, indexed by `seq - 1`.
    pub(crate) times: Vec<i64>,
    pub(crate) counts: EventCounts,
    dim: usize,
    params: HnswParams,
    /// While set, memories' texts go to a lexical indexing thread instead
    /// of their namespace's index ([`State::feed_lexical`]).
    lexical_feed: Option<lexical_feed::LexicalFeed>,
}

impl State {
    pub(crate) fn new(dim: usize, params: HnswParams) -> State {
        State {
            namespaces: HashMap::new(),
            visible: 0,
            last_seq: 0,
            times: Vec::new(),
            counts: EventCounts::default(),
            dim,
            params,
            lexical_feed: None,
        }
    }

    /// Hands lexical indexing to a thread of its own until
    /// [`State::finish_lexical`]: for replay, where tokenising and indexing
    /// every memory's text on the replaying thread was about 40 % of the
    /// time (measured on a 1M-event store). Readers must not search the
    /// lexical indexes in between.
    ///
    /// # Errors
    /// [`crate::Error::Io`] when the thread cannot be spawned.
    pub(crate) fn feed_lexical(&mut self) -> crate::Result<()> {
        self.lexical_feed = Some(lexical_feed::LexicalFeed::spawn()?);
        Ok(())
    }

    /// Waits for the lexical indexing thread and installs its indexes; a
    /// document whose memory was forgotten after it was written is removed,
    /// so each index holds exactly the namespace's memory versions, as
    /// live writes left it. Does nothing without [`State::feed_lexical`].
    ///
    /// # Errors
    /// [`crate::Error::Storage`] when the indexing thread panicked.
    pub(crate) fn finish_lexical(&mut self) -> crate::Result<()> {
        let Some(feed) = self.lexical_feed.take() else {
            return Ok(());
        };
        let mut built = feed.finish()?;
        for (ns, st) in &mut self.namespaces {
            let Some(mut ix) = built.remove(ns) else {
                continue;
            };
            let gone: Vec<u64> = ix.ids().filter(|id| !st.memories.contains_key(&MemoryId(*id))).collect();
            ix.remove_many(&gone);
            st.lexical = ix;
        }
        Ok(())
    }

    /// Handles on the HNSW graph threads of `namespaces` that have more
    /// than [`crate::index::GRAPH_BACKLOG`] vectors queued, to be waited on
    /// once this lock is released (see `VectorIndex::graph_backlog`).
    pub(crate) fn graph_backlogs(&self, namespaces: &[Namespace]) -> Vec<crate::index::GraphBacklog> {
        namespaces.iter().filter_map(|ns| self.namespaces.get(ns)?.vectors.graph_backlog()).collect()
    }

    pub(crate) fn ns(&self, ns: &Namespace) -> Option<&NsState> {
        self.namespaces.get(ns)
    }

    fn ns_mut(&mut self, ns: &Namespace) -> &mut NsState {
        let (dim, params) = (self.dim, &self.params);
        self.namespaces.entry(ns.clone()).or_insert_with(|| NsState::new(dim, params))
    }

    /// `ns` as the key of its state holds it (creating the state if
    /// needed): records clone this one, so that every record of a
    /// namespace shares one copy of its name.
    fn shared_name(&mut self, ns: &Namespace) -> Namespace {
        let (dim, params) = (self.dim, &self.params);
        // An occupied entry's key is the map's own, so one lookup does.
        let entry = self.namespaces.entry(ns.clone());
        let name = entry.key().clone();
        entry.or_insert_with(|| NsState::new(dim, params));
        name
    }

    /// The last `Seq` whose commit time is at or before `t` (0 if none).
    pub(crate) fn seq_at_time(&self, t: DateTime<Utc>) -> Seq {
        let us = t.timestamp_micros();
        let n = self.times.partition_point(|&x| x <= us);
        (n as Seq).min(self.visible)
    }

    /// Applies one event. `vector` is the embedding of an `Extracted`
    /// event's content (ignored for other kinds); without it the memory is
    /// left out of the vector index until [`State::index_vector`] is called.
    pub(crate) fn apply(&mut self, ev: &Event, vector: Option<&[f32]>) {
        debug_assert_eq!(ev.seq, self.last_seq + 1, "events must be applied in order");
        self.last_seq = ev.seq;
        self.times.push(ev.time.timestamp_micros());
        let time = ev.time;
        match &ev.body {
            EventBody::Observed(o) => {
                self.counts.observed += 1;
                self.apply_observed(ev, o)
            }
            EventBody::Extracted(x) => {
                self.counts.extracted += 1;
                self.apply_extracted(ev, x, vector)
            }
            EventBody::Superseded(s) => {
                self.counts.superseded += 1;
                let st = self.ns_mut(&ev.ns);
                // An event that replaces a displaced version replaces it as
                // written (it was current when the event was written).
                st.shadowed.remove(&s.old);
                let new_start = st.memories.get(&s.new).map(|m| m.valid_from);
                let first_seen = if let Some(old) = st.memories.get_mut(&s.old) {
                    old.status = Status::Superseded;
                    old.next = Some(s.new);
                    old.superseded_seq = Some(ev.seq);
                    old.recorded_to = Some(time);
                    // An erased successor's start is not in the log any more:
                    // the `Forgotten` event that erased it sets this again.
                    old.valid_to = Some(new_start.unwrap_or(time).max(old.valid_from));
                    let (first_seen, old_key) = (old.first_seen, old.key.clone());
                    if let Some(k) = old_key {
                        st.release_key(&k, s.old);
                    }
                    first_seen
                } else if let Some(e) = st.erased.get_mut(&s.old) {
                    e.next = Some(s.new);
                    e.first_seen
                } else {
                    return;
                };
                st.preds.entry(s.new).or_default().push(s.old);
                if let Some(new) = st.memories.get_mut(&s.new) {
                    new.prev = Some(s.old);
                    new.first_seen = first_seen;
                } else if let Some(e) = st.erased.get_mut(&s.new) {
                    e.prev = Some(s.old);
                    e.first_seen = first_seen;
                }
            }
            EventBody::Accessed(a) => {
                self.counts.accessed += 1;
                let st = self.ns_mut(&ev.ns);
                for id in &a.ids {
                    if let Some(m) = st.memories.get_mut(id) {
                        m.last_access = m.last_access.max(time);
                        m.access_count += 1;
                    }
                }
            }
            EventBody::Forgotten(f) => {
                self.counts.forgotten += 1;
                let st = self.ns_mut(&ev.ns);
                if let ForgetTarget::Session(s) = &f.target {
                    st.forgotten_sessions.insert(crate::log::fnv1a64(canonical_id(s).as_bytes()));
                }
                for id in &f.memories {
                    st.remove_memory(*id);
                }
                // One filtering pass per posting list, not one per memory
                // (a namespace forgotten whole removes them all).
                let ids: Vec<u64> = f.memories.iter().map(|m| m.0).collect();
                st.lexical.remove_many(&ids);
                for id in &f.observations {
                    if let Some(o) = st.observations.remove(id) {
                        st.unindex_observation(&o);
                    }
                    st.forgotten_observations.insert(*id);
                }
                // No memory cites an observation that is gone.
                if !f.observations.is_empty() {
                    let gone: HashSet<ObservationId> = f.observations.iter().copied().collect();
                    for m in st.memories.values_mut() {
                        m.sources.retain(|s| !gone.contains(s));
                    }
                }
            }
            EventBody::Archived(a) => {
                self.counts.archived += 1;
                let st = self.ns_mut(&ev.ns);
                for id in &a.ids {
                    // A displaced version was current when the event was
                    // written: it is archived as such.
                    if st.shadowed.remove(id).is_some() {
                        st.unshadow(*id);
                    }
                    let Some(m) = st.memories.get_mut(id) else {
                        continue;
                    };
                    if m.status != Status::Active {
                        continue;
                    }
                    m.status = Status::Archived;
                    m.archived_seq = Some(ev.seq);
                    if let Some(k) = m.key.clone() {
                        st.release_key(&k, *id);
                    }
                }
            }
            EventBody::Tombstone(t) => {
                self.counts.tombstones += 1;
                if t.was == "extracted" {
                    let erased = ErasedVersion { first_seen: time, prev: None, next: None };
                    self.ns_mut(&ev.ns).erased.insert(MemoryId(ev.seq), erased);
                }
            }
        }
    }

    fn apply_observed(&mut self, ev: &Event, o: &Observed) {
        let id = ObservationId(ev.seq);
        let rec = Observation {
            id,
            namespace: self.shared_name(&ev.ns),
            session: o.session.clone(),
            role: o.role,
            text: o.text.clone(),
            event_time: o.event_time,
            recorded_at: ev.time,
            source: o.source.clone(),
        };
        let st = self.ns_mut(&ev.ns);
        st.index_observation(&rec);
        st.observations.insert(id, Box::new(rec));
    }

    fn apply_extracted(&mut self, ev: &Event, x: &Extracted, vector: Option<&[f32]>) {
        let id = MemoryId(ev.seq);
        let rec = Memory {
            id,
            namespace: self.shared_name(&ev.ns),
            content: x.content.clone(),
            kind: x.kind.clone(),
            tier: x.tier,
            importance: x.importance,
            entities: x.entities.clone(),
            key: x.key.clone(),
            sources: x.sources.clone(),
            session: x.session.clone(),
            source_ref: x.source_ref.clone(),
            status: Status::Active,
            prev: None,
            next: None,
            first_seen: ev.time,
            valid_from: x.event_time.unwrap_or(ev.time),
            valid_to: None,
            recorded_from: ev.time,
            recorded_to: None,
            event_time: x.event_time,
            last_access: ev.time,
            access_count: 0,
            quarantine: x.quarantine.clone(),
            created_seq: ev.seq,
            superseded_seq: None,
            archived_seq: None,
        };
        let dim = self.dim;
        // Search data comes from the text search reads (a JSON object's
        // values, not its keys); the memory keeps its content verbatim.
        let searchable = crate::text::searchable(&x.content);
        let fed = match self.lexical_feed.as_mut() {
            Some(feed) => {
                feed.push(&ev.ns, id.0, &searchable);
                true
            }
            None => false,
        };
        let st = self.ns_mut(&ev.ns);
        st.index_norm(&normalize_content(&x.content), id);
        if !fed {
            st.lexical.insert(id.0, &searchable);
        }
        if crate::text::mostly_cjk(&searchable) {
            st.cjk.insert(id.0);
        }
        if let Some(v) = vector {
            if v.len() == dim {
                st.vectors.insert(id.0, v);
            }
        }
        st.memories.insert(id, Box::new(rec));
        // A quarantined version keeps its key in the log (an audit shows what
        // it tried to set) but never holds the slot: the slot's value stays
        // the last version anyone may see. Keys are compared in their
        // identifier form; a holder that no event replaces (a log written
        // before that form was stored) is displaced by this version, which
        // a live write always follows with a `Superseded` event of its own.
        if let Some(k) = x.key.as_ref().filter(|_| x.quarantine.is_none()) {
            let form = canonical_id(k).into_owned();
            if let Some(holder) = st.by_key.get(&form).copied().filter(|h| *h != id) {
                st.shadow(holder, id);
            }
            st.by_key.insert(form, id);
        }
    }

    /// Adds a memory's vector to its namespace's index (replay path, after
    /// vectors were loaded from the cache or re-embedded).
    pub(crate) fn index_vector(&mut self, ns: &Namespace, id: MemoryId, v: &[f32]) {
        if v.len() != self.dim {
            return;
        }
        if let Some(st) = self.namespaces.get_mut(ns) {
            if st.memories.contains_key(&id) && !st.vectors.contains(id.0) {
                st.vectors.insert(id.0, v);
            }
            st.pending_vectors.remove(&id);
        }
    }

    /// Holds back every namespace's graph while vectors load at open (see
    /// [`VectorIndex::hold_graph`]).
    pub(crate) fn hold_graphs(&mut self) {
        for st in self.namespaces.values_mut() {
            st.vectors.hold_graph();
        }
    }

    /// Ends [`hold_graphs`](Self::hold_graphs): each namespace adopts its
    /// graph from `saved` (by namespace name) when it matches, else builds
    /// one. Returns how many were adopted.
    pub(crate) fn release_graphs(&mut self, mut saved: HashMap<String, crate::index::saved::SavedGraph>) -> usize {
        let mut adopted = 0;
        for (ns, st) in &mut self.namespaces {
            adopted += usize::from(st.vectors.release_graph(saved.remove(ns.as_str())));
        }
        adopted
    }

    /// Marks memory `id` as waiting for its vector (deferred embedding).
    pub(crate) fn mark_pending(&mut self, ns: &Namespace, id: MemoryId) {
        if let Some(st) = self.namespaces.get_mut(ns) {
            if st.memories.contains_key(&id) && !st.vectors.contains(id.0) {
                st.pending_vectors.insert(id);
            }
        }
    }

    /// Forgotten memories and observations whose payload the log still holds
    /// (every forgotten item is either still in the log or a tombstone).
    pub(crate) fn pending_erasure(&self) -> u64 {
        let forgotten: usize =
            self.namespaces.values().map(|s| s.forgotten_memories.len() + s.forgotten_observations.len()).sum();
        (forgotten as u64).saturating_sub(self.counts.tombstones)
    }

    /// Records that compaction replaced `observed` observation payloads and
    /// `extracted` memory payloads by tombstones, so the counts equal what
    /// replaying the compacted log gives. (What replay keeps of an erased
    /// version lives only until its `Forgotten` event, which the live state
    /// has already applied.)
    pub(crate) fn note_tombstones(&mut self, observed: u64, extracted: u64) {
        self.counts.observed = self.counts.observed.saturating_sub(observed);
        self.counts.extracted = self.counts.extracted.saturating_sub(extracted);
        self.counts.tombstones += observed + extracted;
    }

    /// A SHA-256 digest of every projection, for replay-equals-live checks
    /// and audits (see [`digest`]).
    pub(crate) fn digest(&self) -> String {
        digest::digest(self)
    }
}

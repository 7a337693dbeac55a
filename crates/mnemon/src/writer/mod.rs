//! The single writer thread: the only code that appends to the log and
//! mutates projections.
//!
//! Callers send a closed [`Command`] over a bounded crossbeam channel. The
//! writer drains what is queued into one group, validates each operation
//! against the current state (including earlier operations of the same
//! group), encodes the events, applies them to the projections (hidden from
//! readers until durable), appends the whole group in one batch, flushes
//! once, advances the visible position, and only then replies.

pub(crate) mod backfill;
pub(crate) mod compact;
mod inherit;
mod plan;

pub(crate) use inherit::{merge, PendingMemory};
pub(crate) use plan::{forget_preview, Op, OpOutcome};
pub use plan::{DedupMode, ForgetOutcome, RememberAction};

use std::sync::Arc;
use std::thread::JoinHandle;
use std::time::{Duration, Instant};

use chrono::{DateTime, Utc};
use crossbeam_channel::{Receiver, RecvTimeoutError, Sender};
use parking_lot::{Mutex, RwLock};

use crate::error::{Error, Result};
use crate::event::{encode_record, Event, EventBody};
use crate::log::{content_hash, LogStore};
use crate::projection::State;
use crate::types::{MemoryId, Namespace, Seq};
use crate::writer::backfill::{dedup_byte, pending_key, Backlog, EmbeddedVector, PendingVector};
use plan::PlannedOutcome;

/// When acknowledged writes become durable.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Default)]
pub enum Durability {
    /// Flush (fsync) every group before replying. Nothing acknowledged is
    /// ever lost. The default.
    #[default]
    PerGroup,
    /// Reply after the group is appended, flush at most this long later.
    /// A crash can lose writes acknowledged within the last interval.
    Interval(Duration),
}

/// A reply channel for a write: one result per operation, or an error for
/// the whole command (poisoned, closed).
pub(crate) type WriteReply = Sender<Result<Vec<Result<OpOutcome>>>>;

/// Work for the writer thread. A closed set: nothing else mutates the store.
pub(crate) enum Command {
    /// Validate and append operations for one namespace, unless `cancel`
    /// is raised when the writer takes it into a group (then: nothing
    /// planned or written, the reply is [`Error::Cancelled`]).
    Write { ns: Namespace, ops: Vec<Op>, reply: WriteReply, cancel: Option<crate::CancelToken> },
    /// Record that recall returned these memories; no reply, and not flushed
    /// on its own (it rides with the next flush).
    Access { ns: Namespace, ids: Vec<MemoryId>, requester: Option<String>, session: Option<String> },
    /// Flush everything appended so far, then reply.
    Sync { reply: Sender<Result<()>> },
    /// Vectors of memories written without one (deferred embedding): cache
    /// and index each, make its near-duplicate decision, clear its pending
    /// marker; reply once durable.
    Vectors { items: Vec<EmbeddedVector>, reply: Sender<Result<()>> },
    /// Run a function with exclusive access to the store and state (used by
    /// compaction); the writer queues other commands meanwhile.
    Exclusive { f: Box<dyn FnOnce(&mut WriterCtx<'_>) + Send> },
    /// Flush and stop.
    Shutdown { reply: Sender<Result<()>> },
}

/// State shared between the writer and readers. A replicated log sees it
/// in [`Engine::compact_then`](crate::Engine::compact_then)'s closure:
/// the store ([`Shared::store`]) and the model id ([`Shared::model_id`]).
pub struct Shared {
    pub(crate) state: RwLock<State>,
    pub(crate) store: RwLock<Arc<dyn LogStore>>,
    pub(crate) poisoned: Mutex<Option<String>>,
    pub(crate) model_id: String,
    /// Where each group goes before the local log (a cluster's replicated
    /// log); `None` for a standalone store.
    pub(crate) sink: Option<Arc<dyn GroupSink>>,
    /// Why this engine takes no writes (it opened on the disk reserve of a
    /// full disk); `None` for a writable one.
    pub(crate) read_only: Option<String>,
    /// Bytes of disk the store keeps in reserve (`DATA/RESERVE`) as of
    /// open.
    pub(crate) reserve_bytes: u64,
    /// The keyring of an encrypted store; `None` for a plain one.
    pub(crate) keys: Option<Arc<crate::crypt::Keys>>,
}

/// One group as the writer commits it: encoded records in `Seq` order and
/// the vectors of the memories they create. Only the cluster's sink reads
/// the fields.
pub struct Group<'a> {
    /// `(seq, encoded record)`, ascending and contiguous.
    pub records: &'a [(Seq, Vec<u8>)],
    /// `(memory, FNV-1a 64 of its content, vector)` for new memories.
    pub vectors: &'a [(MemoryId, u64, Vec<f32>)],
    /// The model id that produced `vectors`.
    pub model_id: &'a str,
    /// For an encrypted store: the vector-cache values of `vectors`,
    /// sealed as the store keeps them ([`crate::storage::SealedStore::seal_vectors`]),
    /// for copies to put as they are; `records` are then sealed too, and
    /// `vectors` must not leave the process. `None` for a plain store.
    pub sealed_vectors: Option<&'a [(MemoryId, Vec<u8>)]>,
}

/// A destination every group must reach before it is written locally and
/// acknowledged: the replicated log of a cluster. The writer calls
/// [`GroupSink::publish`] once per group that holds records; an error
/// poisons the engine (nothing of the group is acknowledged or written
/// locally).
pub trait GroupSink: Send + Sync {
    /// Publishes the group; returns metadata entries to store with it in the
    /// local log (written before the group's flush).
    ///
    /// # Errors
    /// [`Error::Fenced`] when this process may no longer write the log,
    /// [`Error::Unavailable`] when the log did not confirm the group.
    fn publish(&self, group: &Group<'_>) -> Result<Vec<(String, Vec<u8>)>>;
}

/// Why a commit failed, kept in a form every waiting caller can get a copy
/// of (the error kinds a caller acts on differently stay distinct).
#[derive(Clone, Debug)]
pub(crate) enum Failed {
    Poisoned(String),
    Fenced { namespace: String, reason: String },
    Unavailable(String),
}

impl Failed {
    fn of(e: &Error) -> Failed {
        match e {
            Error::Fenced { namespace, reason } => {
                Failed::Fenced { namespace: namespace.clone(), reason: reason.clone() }
            }
            Error::Unavailable(m) => Failed::Unavailable(m.clone()),
            other => Failed::Poisoned(other.to_string()),
        }
    }

    fn poisoned(msg: String) -> Failed {
        Failed::Poisoned(msg)
    }

    fn to_error(&self) -> Error {
        match self {
            Failed::Poisoned(m) => Error::Poisoned(m.clone()),
            Failed::Fenced { namespace, reason } => {
                Error::Fenced { namespace: namespace.clone(), reason: reason.clone() }
            }
            Failed::Unavailable(m) => Error::Unavailable(m.clone()),
        }
    }
}

impl Shared {
    /// Why the writer stopped taking writes (a failed commit poisons it),
    /// or `None` while it is healthy.
    pub fn poison_message(&self) -> Option<String> {
        self.poisoned.lock().clone()
    }

    /// The error every write gets from a read-only engine, if this is one.
    pub(crate) fn read_only_error(&self) -> Option<Error> {
        self.read_only.as_ref().map(|why| Error::Io(std::io::Error::new(std::io::ErrorKind::StorageFull, why.clone())))
    }

    /// The live log store (it changes at compaction).
    pub fn store(&self) -> Arc<dyn LogStore> {
        self.store.read().clone()
    }

    /// The id of the embedding model the store's vectors come from.
    pub fn model_id(&self) -> &str {
        &self.model_id
    }
}

/// What an exclusive function gets: the shared state and store, so it can
/// rewrite and swap the store while other writers queue.
pub(crate) struct WriterCtx<'a> {
    pub(crate) shared: &'a Shared,
}

/// Settings of the writer loop.
#[derive(Clone, Debug)]
pub(crate) struct WriterConfig {
    pub(crate) durability: Durability,
    pub(crate) max_group: usize,
    /// Where memories written without a vector go once durable.
    pub(crate) backfill: Sender<PendingVector>,
    pub(crate) backlog: Arc<Backlog>,
    /// Near-duplicate threshold for decisions made when a vector arrives.
    pub(crate) dedup_threshold: f32,
    /// The store's data directory, whose `LAST_SEQ` the writer keeps
    /// current after each flush ([`crate::log::HighWaterMark`]).
    pub(crate) data_dir: std::path::PathBuf,
}

struct Writer {
    shared: Arc<Shared>,
    rx: Receiver<Command>,
    cfg: WriterConfig,
    next_seq: Seq,
    last_time_us: i64,
    dirty_since: Option<Instant>,
    /// Memories of this group written without a vector: marked pending in
    /// the store with the group, handed to the embedder once durable.
    deferred: Vec<PendingVector>,
    /// Pending markers this group clears (vector arrived, or memory gone).
    unmarks: Vec<MemoryId>,
    /// How far the log is durable, for a later open to check against.
    high_water: crate::log::HighWaterMark,
}

enum Pending {
    Write(WriteReply, Vec<Result<OpOutcome>>),
    Sync(Sender<Result<()>>),
}

/// Starts the writer thread.
pub(crate) fn spawn(shared: Arc<Shared>, rx: Receiver<Command>, cfg: WriterConfig) -> Result<JoinHandle<()>> {
    let cfg_dir = cfg.data_dir.clone();
    let (next_seq, last_time_us) = {
        let st = shared.state.read();
        (st.last_seq + 1, st.times.last().copied().unwrap_or(i64::MIN))
    };
    let mut w = Writer {
        shared,
        rx,
        cfg,
        next_seq,
        last_time_us,
        dirty_since: None,
        deferred: Vec::new(),
        unmarks: Vec::new(),
        high_water: crate::log::HighWaterMark::new(&cfg_dir),
    };
    std::thread::Builder::new().name("mnemon-writer".into()).spawn(move || w.run()).map_err(Error::Io)
}

impl Writer {
    fn run(&mut self) {
        loop {
            let first = match (self.cfg.durability, self.dirty_since) {
                (Durability::Interval(d), Some(since)) => {
                    let left = d.saturating_sub(since.elapsed());
                    match self.rx.recv_timeout(left) {
                        Ok(c) => c,
                        Err(RecvTimeoutError::Timeout) => {
                            self.flush_interval();
                            continue;
                        }
                        Err(RecvTimeoutError::Disconnected) => {
                            self.flush_interval();
                            return;
                        }
                    }
                }
                _ => match self.rx.recv() {
                    Ok(c) => c,
                    Err(_) => {
                        self.flush_interval();
                        return;
                    }
                },
            };
            let mut group = vec![first];
            while group.len() < self.cfg.max_group {
                match self.rx.try_recv() {
                    Ok(c) => group.push(c),
                    Err(_) => break,
                }
            }
            if self.process_group(group) {
                return;
            }
        }
    }

    fn flush_interval(&mut self) {
        if self.dirty_since.take().is_some() {
            match self.shared.store().flush() {
                // Only what was committed (`visible`) is durable now: after
                // a failed commit `last_seq` counts events that never
                // reached the log, and a poisoned engine records nothing.
                Ok(_) if self.shared.poison_message().is_none() => {
                    let durable = self.shared.state.read().visible;
                    self.high_water.record(durable);
                }
                Ok(_) => {}
                Err(e) => self.poison(&e),
            }
        }
    }

    fn poison(&self, e: &Error) {
        let mut p = self.shared.poisoned.lock();
        if p.is_none() {
            *p = Some(e.to_string());
        }
    }

    /// Commit time: wall clock, kept non-decreasing along the log.
    fn tick(&mut self) -> DateTime<Utc> {
        let now = Utc::now().timestamp_micros().max(self.last_time_us);
        self.last_time_us = now;
        DateTime::<Utc>::from_timestamp_micros(now).unwrap_or_else(Utc::now)
    }

    /// Returns true when the writer should stop.
    fn process_group(&mut self, group: Vec<Command>) -> bool {
        let mut records: Vec<(Seq, Vec<u8>)> = Vec::new();
        let mut vectors: Vec<(MemoryId, u64, Vec<f32>)> = Vec::new();
        let mut pending: Vec<Pending> = Vec::new();
        let mut must_flush = false;
        let mut shutdown: Option<Sender<Result<()>>> = None;
        // Namespaces whose vector index this group may have grown (each
        // once after the sort below; a clone shares the name).
        let mut grown: Vec<Namespace> = Vec::new();
        for cmd in group {
            let poisoned = self.shared.poison_message();
            match cmd {
                Command::Write { ns, ops, reply, cancel } => {
                    if let Some(msg) = poisoned {
                        let _ = reply.send(Err(Error::Poisoned(msg)));
                        continue;
                    }
                    if let Some(e) = self.shared.read_only_error() {
                        let _ = reply.send(Err(e));
                        continue;
                    }
                    // The last moment a write can be withdrawn: once
                    // planned, its events are in the projections and the
                    // group commits them.
                    if cancel.as_ref().is_some_and(crate::CancelToken::is_cancelled) {
                        let _ = reply.send(Err(Error::Cancelled));
                        continue;
                    }
                    let results =
                        ops.into_iter().map(|op| self.apply_op(&ns, op, &mut records, &mut vectors)).collect();
                    grown.push(ns);
                    must_flush |= self.cfg.durability == Durability::PerGroup;
                    pending.push(Pending::Write(reply, results));
                }
                Command::Access { ns, ids, requester, session } => {
                    if poisoned.is_none() && self.shared.read_only.is_none() {
                        let _ = self.apply_op(&ns, Op::Access { ids, requester, session }, &mut records, &mut vectors);
                    }
                }
                Command::Sync { reply } => {
                    must_flush = true;
                    pending.push(Pending::Sync(reply));
                }
                Command::Vectors { items, reply } => {
                    if let Some(msg) = poisoned {
                        let _ = reply.send(Err(Error::Poisoned(msg)));
                        continue;
                    }
                    if let Some(e) = self.shared.read_only_error() {
                        let _ = reply.send(Err(e));
                        continue;
                    }
                    for item in items {
                        grown.push(item.ns.clone());
                        self.backfill(item, &mut records, &mut vectors);
                    }
                    must_flush |= self.cfg.durability == Durability::PerGroup;
                    pending.push(Pending::Sync(reply));
                }
                Command::Exclusive { f } => {
                    // Commit what came before, then hand over the store.
                    let ok = self.commit(&mut records, &mut vectors, must_flush);
                    must_flush = false;
                    self.reply_all(&mut pending, ok.clone());
                    if ok.is_ok() {
                        let mut ctx = WriterCtx { shared: &self.shared };
                        f(&mut ctx);
                        let st = self.shared.state.read();
                        self.last_time_us = self.last_time_us.max(st.times.last().copied().unwrap_or(i64::MIN));
                    }
                }
                Command::Shutdown { reply } => {
                    must_flush = true;
                    shutdown = Some(reply);
                    break;
                }
            }
        }
        let result = self.commit(&mut records, &mut vectors, must_flush || shutdown.is_some());
        self.reply_all(&mut pending, result.clone());
        if let Some(reply) = shutdown {
            let r = match (result, self.shared.poison_message()) {
                (Err(e), _) => Err(e.to_error()),
                (Ok(()), Some(msg)) => Err(Error::Poisoned(msg)),
                (Ok(()), None) => Ok(()),
            };
            let _ = reply.send(r);
            return true;
        }
        grown.sort_unstable();
        grown.dedup();
        self.pace_graphs(&grown);
        false
    }

    /// Waits, after a group is acknowledged and before the next is taken,
    /// until the HNSW graph of each namespace in `grown` has at most
    /// [`crate::index::GRAPH_BACKLOG`] vectors queued: writes never outrun
    /// the graph by more than that, so searches (the near-duplicate check
    /// of the next writes among them) keep the graph's speed instead of
    /// scanning a growing tail. No lock is held while waiting; readers go
    /// on. A graph's bulk build (when a namespace reaches
    /// [`crate::index::HnswParams::exact_threshold`], or at an open without
    /// the graph file) is not waited for: writes scan meanwhile, and what
    /// they queue is waited for once it is done.
    fn pace_graphs(&self, grown: &[Namespace]) {
        let waits = self.shared.state.read().graph_backlogs(grown);
        for w in waits {
            w.wait();
        }
    }

    fn reply_all(&self, pending: &mut Vec<Pending>, result: std::result::Result<(), Failed>) {
        for p in pending.drain(..) {
            match p {
                Pending::Write(reply, results) => {
                    let _ = reply.send(match &result {
                        Ok(()) => Ok(results),
                        Err(f) => Err(f.to_error()),
                    });
                }
                Pending::Sync(reply) => {
                    let _ = reply.send(result.clone().map_err(|f| f.to_error()));
                }
            }
        }
    }

    /// Appends and (when asked) flushes the group, then makes it visible.
    fn commit(
        &mut self,
        records: &mut Vec<(Seq, Vec<u8>)>,
        vectors: &mut Vec<(MemoryId, u64, Vec<f32>)>,
        flush: bool,
    ) -> std::result::Result<(), Failed> {
        if let Some(msg) = self.shared.poison_message() {
            return Err(Failed::poisoned(msg));
        }
        let store = self.shared.store();
        let res = (|| -> Result<()> {
            // The replicated log first: nothing is written here (or
            // acknowledged) that the log of record does not hold.
            let mut meta = Vec::new();
            let mut sealed_vectors = None;
            if let (Some(sink), false) = (&self.shared.sink, records.is_empty()) {
                // An encrypted store's records leave sealed, under keys the
                // other copies share (`crate::crypt::KeyDirectory`), and
                // are stored here as sealed.
                sealed_vectors = match store.sealed() {
                    Some(s) => {
                        *records = s.seal(records)?;
                        Some(s.seal_vectors(&self.shared.model_id, vectors)?)
                    }
                    None => None,
                };
                meta = sink.publish(&Group {
                    records,
                    vectors,
                    model_id: &self.shared.model_id,
                    sealed_vectors: sealed_vectors.as_deref(),
                })?;
            }
            // New markers before the events, cleared markers after them:
            // a durable memory without a vector always keeps its marker
            // (a marker without a memory, or with its decision already
            // made, is harmless: opening drops the one and the decision is
            // not made twice).
            for p in &self.deferred {
                store.meta_put(&pending_key(p.id), &[dedup_byte(p.dedup)])?;
            }
            match (&sealed_vectors, store.sealed()) {
                // Sealed once, for the replicated log and the cache alike.
                (Some(values), Some(s)) => s.put_sealed_vectors(&self.shared.model_id, values)?,
                _ if !vectors.is_empty() => {
                    let entries: Vec<(MemoryId, u64, &[f32])> =
                        vectors.iter().map(|(id, h, v)| (*id, *h, v.as_slice())).collect();
                    store.put_vectors(&self.shared.model_id, &entries)?;
                }
                _ => {}
            }
            if !records.is_empty() {
                store.append(records)?;
            }
            for (k, v) in &meta {
                store.meta_put(k, v)?;
            }
            if !self.unmarks.is_empty() {
                let keys: Vec<String> = self.unmarks.iter().map(|id| pending_key(*id)).collect();
                store.meta_remove(&keys)?;
            }
            if flush {
                store.flush()?;
                self.dirty_since = None;
            } else if !records.is_empty() && self.dirty_since.is_none() {
                self.dirty_since = Some(Instant::now());
            }
            Ok(())
        })();
        let wrote = !records.is_empty();
        records.clear();
        vectors.clear();
        let arrived = std::mem::take(&mut self.unmarks).len();
        let deferred = std::mem::take(&mut self.deferred);
        match res {
            Ok(()) => {
                let durable = {
                    let mut st = self.shared.state.write();
                    st.visible = st.last_seq;
                    st.last_seq
                };
                if flush && wrote {
                    self.high_water.record(durable);
                }
                let backlog = &self.cfg.backlog.pending;
                backlog.fetch_add(deferred.len(), std::sync::atomic::Ordering::AcqRel);
                for p in deferred {
                    // The embedder thread ends only after the writer: a
                    // failed send means the engine is closing, and the
                    // marker resumes the memory at the next open.
                    let _ = self.cfg.backfill.send(p);
                }
                let _ = backlog.fetch_update(
                    std::sync::atomic::Ordering::AcqRel,
                    std::sync::atomic::Ordering::Acquire,
                    |n| Some(n.saturating_sub(arrived)),
                );
                Ok(())
            }
            Err(e) => {
                self.poison(&e);
                Err(Failed::of(&e))
            }
        }
    }

    fn apply_op(
        &mut self,
        ns: &Namespace,
        op: Op,
        records: &mut Vec<(Seq, Vec<u8>)>,
        vectors: &mut Vec<(MemoryId, u64, Vec<f32>)>,
    ) -> Result<OpOutcome> {
        let shared = self.shared.clone();
        let mut state = shared.state.write();
        let deferred_dedup = match &op {
            Op::Remember { vector: None, dedup, .. } => Some(*dedup),
            _ => None,
        };
        let plan = plan::plan(&state, ns, op, self.next_seq)?;
        let mut staged = Vec::with_capacity(plan.bodies.len());
        // The events of one op share one commit time, so a new version's
        // `recorded_from` equals the old version's `recorded_to` and no
        // recorded time falls between them.
        let time = self.tick();
        for (i, (body, vector)) in plan.bodies.into_iter().enumerate() {
            let seq = self.next_seq + i as Seq;
            let ev = Event { seq, time, ns: ns.clone(), body };
            let bytes = encode_record(&ev)?;
            staged.push((ev, bytes, vector));
        }
        let first = self.next_seq;
        self.next_seq += staged.len() as Seq;
        for (ev, bytes, vector) in staged {
            state.apply(&ev, vector.as_deref());
            match (&ev.body, vector, deferred_dedup) {
                (EventBody::Extracted(x), Some(v), _) => {
                    vectors.push((MemoryId(ev.seq), content_hash(&x.content), v));
                }
                (EventBody::Extracted(x), None, Some(dedup)) => {
                    state.mark_pending(ns, MemoryId(ev.seq));
                    self.deferred.push(PendingVector {
                        ns: ns.clone(),
                        id: MemoryId(ev.seq),
                        content: x.content.clone(),
                        dedup,
                    });
                }
                _ => {}
            }
            records.push((ev.seq, bytes));
        }
        Ok(match plan.outcome {
            PlannedOutcome::NewObservation(i) => OpOutcome::Observed(crate::types::ObservationId(first + i as Seq)),
            PlannedOutcome::NewMemory { body_idx, action } => {
                OpOutcome::Remembered { id: MemoryId(first + body_idx as Seq), action }
            }
            PlannedOutcome::Existing { id, action } => OpOutcome::Remembered { id, action },
            PlannedOutcome::Forgot(f) => OpOutcome::Forgot(f),
            PlannedOutcome::Accessed => OpOutcome::Accessed,
            PlannedOutcome::Archived(ids) => OpOutcome::Archived(ids),
            PlannedOutcome::Backfilled => OpOutcome::Backfilled,
        })
    }

    /// Takes the vector of a memory written without one: caches and indexes
    /// it (unless the memory is gone or its content changed: compaction
    /// only ever removes), then appends the near-duplicate decision the
    /// write skipped ([`Op::Backfill`]). The pending marker goes either way.
    fn backfill(
        &mut self,
        item: EmbeddedVector,
        records: &mut Vec<(Seq, Vec<u8>)>,
        vectors: &mut Vec<(MemoryId, u64, Vec<f32>)>,
    ) {
        self.unmarks.push(item.id);
        let current = {
            let mut state = self.shared.state.write();
            let current = state
                .ns(&item.ns)
                .and_then(|st| st.memories.get(&item.id))
                .is_some_and(|m| content_hash(&m.content) == item.content_hash);
            if current {
                state.index_vector(&item.ns, item.id, &item.vector);
            }
            current
        };
        if !current {
            return;
        }
        vectors.push((item.id, item.content_hash, item.vector));
        let op = Op::Backfill { id: item.id, dedup: item.dedup, threshold: self.cfg.dedup_threshold };
        // A failed decision leaves the memory as written (a memory of its
        // own): planning a supersede of an active memory cannot fail short
        // of a codec error, which the next write reports too.
        let _ = self.apply_op(&item.ns, op, records, vectors);
    }
}

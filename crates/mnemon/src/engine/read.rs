//! The read API: point reads, lists, version history, audit export and
//! as-of views. Reads see the durable prefix of the log (or an earlier
//! position, for as-of views) and never cross namespaces.

use chrono::{DateTime, Utc};

use crate::engine::Engine;
use crate::error::{Error, Result};
use crate::event::{decode_record, Event, EventBody, Tombstone};
use crate::projection::{EventCounts, Memory, Observation};
use crate::types::{same_id, Kind, MemoryId, Namespace, ObservationId, Seq, Status, Tier};

/// A point in history for [`Engine::as_of`], on one of the two time lines
/// of a [`Memory`]: what the store knew then (recorded time: `Seq` or
/// `Time`), or what was true then as the store knows it now (valid time).
#[derive(Clone, Copy, Debug, PartialEq, Eq, serde::Serialize, serde::Deserialize, schemars::JsonSchema)]
#[serde(rename_all = "snake_case")]
pub enum AsOf {
    /// Recorded time: after the event at this log position (0 = before
    /// anything).
    Seq(Seq),
    /// Recorded time: after the last event committed at or before this
    /// time (UTC).
    Time(DateTime<Utc>),
    /// Valid time: the memories that were true at this time (UTC) —
    /// `valid_from <= t < valid_to` — as the store knows them now (the
    /// view is at the last durable position).
    ValidTime(DateTime<Utc>),
}

/// Filters for [`Engine::list`].
#[derive(Clone, Debug, Default)]
pub struct ListOptions {
    /// Include superseded versions (default: active only).
    pub include_superseded: bool,
    /// Include quarantined memories (default: no).
    pub include_quarantined: bool,
    /// Include archived memories (default: no).
    pub include_archived: bool,
    /// Only this kind.
    pub kind: Option<Kind>,
    /// Only this tier.
    pub tier: Option<Tier>,
    /// Only this session.
    pub session: Option<String>,
    /// At most this many (oldest first); `None` for all.
    pub limit: Option<usize>,
    /// Only memories with a larger id: the last id of the previous page,
    /// when paging through a namespace.
    pub after: Option<MemoryId>,
}

/// Store-wide figures for `mnemon stats`.
#[derive(Clone, Debug, serde::Serialize, serde::Deserialize, schemars::JsonSchema)]
pub struct Stats {
    /// Last durable log position.
    pub last_seq: Seq,
    /// Events by kind.
    pub events: EventCounts,
    /// Namespaces holding at least one record.
    pub namespaces: usize,
    /// Active memory versions, all namespaces (quarantined ones included:
    /// see `quarantined_memories`).
    pub active_memories: usize,
    /// Superseded memory versions, all namespaces.
    pub superseded_memories: usize,
    /// Archived memory versions, all namespaces.
    pub archived_memories: usize,
    /// Memory versions quarantined as injected instructions, whatever their
    /// status (each is also counted under its status above). Recall and
    /// context leave them out; [`ListOptions::include_quarantined`] lists
    /// them.
    #[serde(default)]
    pub quarantined_memories: usize,
    /// Observations, all namespaces.
    pub observations: usize,
    /// Vectors in the indexes.
    pub vectors: usize,
    /// Memories written without waiting for their vector
    /// ([`crate::EmbedMode::Deferred`]) whose vector is not committed yet
    /// (found lexically only until then); see [`Engine::embed_backlog`].
    pub embed_backlog: usize,
    /// Memories whose background embedding failed in this process; they
    /// stay pending in the store and are queued again at the next open.
    pub embed_failed: usize,
    /// Recalls and contexts of this process whose reranker call failed
    /// (the provider unreachable, an error status, a malformed reply): they
    /// kept recall's own order and scores, and their hits carry no
    /// `rerank_score`. 0 without a reranker.
    #[serde(default)]
    pub rerank_failed: usize,
    /// The last reranker failure's error, when `rerank_failed` is not 0.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub last_rerank_error: Option<String>,
    /// Namespaces whose vector index is an HNSW graph (the rest scan exactly).
    pub hnsw_namespaces: usize,
    /// Estimated bytes held by the vector and lexical indexes.
    pub index_bytes: usize,
    /// Forgotten memories and observations whose payload is still in the
    /// log's files: [`Engine::compact`] erases them.
    pub pending_erasure: u64,
    /// Bytes of the store on disk, as sled reports them.
    pub disk_bytes: Option<u64>,
    /// Active embedder's model id.
    pub model_id: String,
    /// Vector dimension.
    pub dim: usize,
    /// Data directory generation.
    pub generation: u64,
    /// The regions whose national phone-number formats this engine's
    /// redaction reads (ISO 3166-1 alpha-2 codes, as configured; empty:
    /// only numbers written with `+` or `00`). A client reaching the store
    /// through its holder's socket compares them with its own, since writes
    /// are redacted by the holder's settings.
    #[serde(default)]
    pub phone_regions: Vec<String>,
    /// Set when a failed flush poisoned the engine.
    pub poisoned: Option<String>,
    /// Set when this engine takes no writes: it was opened on the disk
    /// reserve of a full disk (see [`crate::EngineBuilder::reserve_bytes`]);
    /// says what to do.
    #[serde(default)]
    pub read_only: Option<String>,
    /// Bytes of disk the store keeps in reserve (`DATA/RESERVE`) for
    /// opening on a full disk; 0 when it keeps none.
    #[serde(default)]
    pub reserve_bytes: u64,
    /// The log's page-cache budget in bytes (sled's `cache_capacity`,
    /// [`crate::EngineBuilder::cache_bytes`]): with `index_bytes`, what the
    /// engine holds in memory besides its fact table.
    #[serde(default)]
    pub log_cache_bytes: u64,
    /// Resident memory of the process holding the store, in bytes (Linux
    /// `/proc/self/status`, `VmRSS`; `None` elsewhere).
    #[serde(default)]
    pub rss_bytes: Option<u64>,
    /// Whether the store is encrypted at rest: its records and cached
    /// vectors sealed under per-namespace data keys (`docs/guide/encryption.md`).
    #[serde(default)]
    pub encrypted: bool,
    /// Namespaces of an encrypted store with at least one data key
    /// destroyed (a shred: forgetting a whole namespace); their records
    /// sealed under those keys read as erased in every copy. 0 for a store
    /// that is not encrypted.
    #[serde(default)]
    pub shredded_namespaces: usize,
    /// Set when a cluster daemon (`mnemon serve --cluster`) answered: the
    /// namespaces it owns now, each with its lease and its stream. Absent
    /// for a store opened on its own.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub cluster: Option<ClusterView>,
}

/// A cluster daemon's view of what it serves, in [`Stats::cluster`].
#[derive(Clone, Debug, PartialEq, Eq, serde::Serialize, serde::Deserialize, schemars::JsonSchema)]
pub struct ClusterView {
    /// The daemon that answered (its id).
    pub daemon: String,
    /// Its writer lease TTL, in milliseconds.
    pub lease_ttl_ms: u64,
    /// The namespaces it owns now (holds the writer lease of), by name.
    pub served: Vec<ServedNamespace>,
}

/// One namespace a cluster daemon owns, in [`ClusterView::served`].
#[derive(Clone, Debug, PartialEq, Eq, serde::Serialize, serde::Deserialize, schemars::JsonSchema)]
pub struct ServedNamespace {
    /// The namespace.
    pub namespace: String,
    /// Milliseconds the daemon may still rely on its lease before it must
    /// have renewed it (80 % of the TTL from the start of the last
    /// renewal; renewals go every TTL/4); 0 once it is lost.
    pub lease_left_ms: u64,
    /// The lease's revision in the lease bucket (each renewal moves it).
    pub lease_revision: u64,
    /// The namespace's stream (its log of record; a cluster compaction
    /// moves it to a new generation).
    pub stream: String,
    /// The stream sequence of the last message this daemon appended or
    /// caught up to.
    pub stream_seq: u64,
    /// The stream's last sequence as NATS reports it; absent when NATS did
    /// not answer within the request timeout.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub stream_last_seq: Option<u64>,
    /// Messages in the stream past `stream_seq`: 0 while this daemon is
    /// its only writer; more means another writer appended and this
    /// daemon's next append will be fenced. Absent with `stream_last_seq`.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub lag: Option<u64>,
}

/// Resident memory of this process in bytes, from the `VmRSS` line of
/// `/proc/self/status` (in KiB); `None` where it cannot be read.
fn rss_bytes() -> Option<u64> {
    let status = std::fs::read_to_string("/proc/self/status").ok()?;
    let line = status.lines().find(|l| l.starts_with("VmRSS:"))?;
    let kib: u64 = line.split_whitespace().nth(1)?.parse().ok()?;
    kib.checked_mul(1024)
}

/// Where a read looks: a log position, and for valid-time views the time
/// at which the memories must have been true.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) struct ReadPoint {
    pub(crate) seq: Seq,
    pub(crate) valid_at: Option<DateTime<Utc>>,
}

impl ReadPoint {
    pub(crate) fn at(seq: Seq) -> ReadPoint {
        ReadPoint { seq, valid_at: None }
    }

    /// Whether version `m` belongs to the view at all: written by the log
    /// position and, in a valid-time view, true at or before the time.
    pub(crate) fn shows(&self, m: &Memory) -> bool {
        m.visible_at(self.seq) && self.valid_at.is_none_or(|t| m.valid_from <= t)
    }

    /// Whether `m` is one of the memories current at this point: active at
    /// the log position, or, in a valid-time view, true at the time (not
    /// archived).
    pub(crate) fn current(&self, m: &Memory) -> bool {
        match (self.valid_at, m.status_at(self.seq)) {
            (_, Status::Forgotten | Status::Archived) => false,
            (None, status) => status == Status::Active,
            (Some(t), _) => m.valid_at(t),
        }
    }

    /// Whether `m` passes the status filters of a list or recall: current
    /// ones always, superseded (or, in a valid-time view, no longer true)
    /// and archived ones on request.
    pub(crate) fn admits(&self, m: &Memory, include_superseded: bool, include_archived: bool) -> bool {
        match m.status_at(self.seq) {
            Status::Forgotten => false,
            Status::Archived => include_archived,
            _ => self.current(m) || include_superseded,
        }
    }
}

/// A read-only view of one namespace at a past point: a log position
/// (recorded time: what the store knew then), or a valid time (what was
/// true then, as the store knows it now).
#[derive(Clone, Debug)]
pub struct View {
    engine: Engine,
    ns: Namespace,
    point: ReadPoint,
}

impl View {
    /// The log position this view shows (for a valid-time view, the last
    /// durable position when it was made).
    pub fn seq(&self) -> Seq {
        self.point.seq
    }

    /// The valid time this view shows, for an [`AsOf::ValidTime`] view.
    pub fn valid_time(&self) -> Option<DateTime<Utc>> {
        self.point.valid_at
    }

    pub(crate) fn point(&self) -> ReadPoint {
        self.point
    }

    /// The view of `ns` at exactly this log position and valid time (a
    /// paged read continuing where its first page looked).
    pub fn pinned(engine: &Engine, ns: &Namespace, seq: Seq, valid_at: Option<DateTime<Utc>>) -> View {
        View { engine: engine.clone(), ns: ns.clone(), point: ReadPoint { seq, valid_at } }
    }

    /// Memory `id` as it was. In a valid-time view, records are as the
    /// store knows them now (status, `next`, `valid_to`), and a version
    /// that only became true after the view's time is not found.
    ///
    /// # Errors
    /// [`Error::NotFound`] if it did not exist yet, or was forgotten since.
    pub fn get(&self, id: MemoryId) -> Result<Memory> {
        self.engine.get_at(&self.ns, id, self.point)
    }

    /// Memories as they were: by default those current then (active at the
    /// log position; in a valid-time view, true at the time, whatever their
    /// status now). `include_superseded` adds the versions replaced by then
    /// (in a valid-time view: no longer true then).
    ///
    /// # Errors
    /// None today; reserved for storage errors.
    pub fn list(&self, opts: &ListOptions) -> Result<Vec<Memory>> {
        Ok(self.engine.list_at(&self.ns, opts, self.point))
    }

    /// The version chain of `id` as it was (in a valid-time view: the
    /// versions that had become true by then).
    ///
    /// # Errors
    /// [`Error::NotFound`] as for [`View::get`].
    pub fn history(&self, id: MemoryId) -> Result<Vec<Memory>> {
        self.engine.history_at(&self.ns, id, self.point)
    }
}

impl Engine {
    /// The last durable log position: what live reads see.
    #[allow(clippy::misnamed_getters)] // `visible` is the last durable position
    pub fn last_seq(&self) -> Seq {
        self.shared().state.read().visible
    }

    /// The current version record of memory `id`.
    ///
    /// # Errors
    /// [`Error::NotFound`] when no such memory exists in `ns` (including
    /// forgotten ones and ids of other namespaces).
    pub fn get(&self, ns: &Namespace, id: MemoryId) -> Result<Memory> {
        let at = self.shared().state.read().visible;
        self.get_at(ns, id, ReadPoint::at(at))
    }

    pub(crate) fn get_at(&self, ns: &Namespace, id: MemoryId, p: ReadPoint) -> Result<Memory> {
        let state = self.shared().state.read();
        state
            .ns(ns)
            .and_then(|st| st.memories.get(&id))
            .filter(|m| p.shows(m))
            .map(|m| m.view_at(p.seq))
            .ok_or_else(|| Error::not_found(format!("memory {id} in namespace {ns}")))
    }

    /// The whole version chain that `id` belongs to, oldest first.
    ///
    /// # Errors
    /// [`Error::NotFound`] as for [`Engine::get`].
    pub fn history(&self, ns: &Namespace, id: MemoryId) -> Result<Vec<Memory>> {
        let at = self.shared().state.read().visible;
        self.history_at(ns, id, ReadPoint::at(at))
    }

    pub(crate) fn history_at(&self, ns: &Namespace, id: MemoryId, p: ReadPoint) -> Result<Vec<Memory>> {
        let state = self.shared().state.read();
        let st = state.ns(ns).ok_or_else(|| Error::not_found(format!("memory {id} in namespace {ns}")))?;
        match st.memories.get(&id) {
            Some(m) if p.shows(m) => {}
            _ => return Err(Error::not_found(format!("memory {id} in namespace {ns}"))),
        }
        Ok(st
            .chain(id)
            .into_iter()
            .filter_map(|c| st.memories.get(&c))
            .filter(|m| p.shows(m))
            .map(|m| m.view_at(p.seq))
            .collect())
    }

    /// Memories of `ns`, oldest first, filtered by `opts`.
    pub fn list(&self, ns: &Namespace, opts: &ListOptions) -> Vec<Memory> {
        let at = self.shared().state.read().visible;
        self.list_at(ns, opts, ReadPoint::at(at))
    }

    pub(crate) fn list_at(&self, ns: &Namespace, opts: &ListOptions, p: ReadPoint) -> Vec<Memory> {
        self.list_where(ns, opts, p, |_| true)
    }

    /// [`Engine::list_at`] of the memories `also` accepts, asked before a
    /// memory is copied out (so a narrow `also` copies only what it keeps).
    pub(crate) fn list_where(
        &self,
        ns: &Namespace,
        opts: &ListOptions,
        p: ReadPoint,
        also: impl Fn(&Memory) -> bool,
    ) -> Vec<Memory> {
        let state = self.shared().state.read();
        let Some(st) = state.ns(ns) else {
            return Vec::new();
        };
        let start = opts.after.map_or(std::ops::Bound::Unbounded, std::ops::Bound::Excluded);
        st.memories
            .range((start, std::ops::Bound::Unbounded))
            .map(|(_, m)| m)
            .filter(|m| p.shows(m))
            .filter(|m| p.admits(m, opts.include_superseded, opts.include_archived))
            .filter(|m| opts.include_quarantined || m.quarantine.is_none())
            .filter(|m| opts.kind.as_ref().is_none_or(|k| &m.kind == k))
            .filter(|m| opts.tier.is_none_or(|t| m.tier == t))
            .filter(|m| opts.session.as_deref().is_none_or(|s| m.session.as_deref().is_some_and(|ms| same_id(ms, s))))
            .filter(|m| also(m))
            .take(opts.limit.unwrap_or(usize::MAX))
            .map(|m| m.view_at(p.seq))
            .collect()
    }

    /// One observation of `ns` as it is now: `None` when `id` is not an
    /// observation of `ns` (unknown, another namespace's, forgotten, or not
    /// yet visible).
    pub fn observation(&self, ns: &Namespace, id: ObservationId) -> Option<Observation> {
        let state = self.shared().state.read();
        let at = state.visible;
        let st = state.ns(ns)?;
        st.observations.get(&id).filter(|o| o.id.0 <= at).map(|o| (**o).clone())
    }

    /// Observations of `ns`, oldest first, optionally of one session
    /// (compared in its identifier form, [`crate::canonical_id`]).
    pub fn observations(&self, ns: &Namespace, session: Option<&str>) -> Vec<Observation> {
        let state = self.shared().state.read();
        let at = state.visible;
        let Some(st) = state.ns(ns) else {
            return Vec::new();
        };
        st.observations
            .values()
            .filter(|o| o.id.0 <= at && session.is_none_or(|s| same_id(&o.session, s)))
            .map(|o| (**o).clone())
            .collect()
    }

    /// A read-only view of `ns` at a past point: what the store knew then
    /// ([`AsOf::Seq`], [`AsOf::Time`]: recorded time) or what was true then
    /// as the store knows it now ([`AsOf::ValidTime`]).
    ///
    /// Forgotten content stays forgotten in every view, whatever its time.
    ///
    /// # Errors
    /// [`Error::InvalidInput`] for a `Seq` beyond the log's end.
    pub fn as_of(&self, ns: &Namespace, at: AsOf) -> Result<View> {
        let state = self.shared().state.read();
        let seq = match at {
            AsOf::Seq(s) => {
                if s > state.visible {
                    return Err(Error::invalid("seq", format!("{s} is past the end of the log ({})", state.visible)));
                }
                s
            }
            AsOf::Time(t) => state.seq_at_time(t),
            AsOf::ValidTime(t) => {
                let point = ReadPoint { seq: state.visible, valid_at: Some(t) };
                return Ok(View { engine: self.clone(), ns: ns.clone(), point });
            }
        };
        // A supersede is two events (the new version, then the link); a view
        // between them would show both versions active, so it snaps to the link.
        let seq = match state.ns(ns).and_then(|st| st.memories.get(&MemoryId(seq)).map(|m| (st, m))) {
            Some((st, m))
                if m.prev.and_then(|p| st.memories.get(&p)).and_then(|p| p.superseded_seq) == Some(seq + 1) =>
            {
                seq + 1
            }
            _ => seq,
        };
        Ok(View { engine: self.clone(), ns: ns.clone(), point: ReadPoint::at(seq) })
    }

    /// The audit export: events of `ns` with `from <= seq <= to`, in order.
    /// Payloads of forgotten observations and memories appear as
    /// [`EventBody::Tombstone`] (`was`: `observed`, `extracted`), and so do
    /// `Superseded` links to or from a forgotten version (`was`:
    /// `superseded`), so no exported link leads to erased content;
    /// `Forgotten` events never held content.
    ///
    /// # Errors
    /// [`Error::Corrupted`] naming a bad record; storage errors.
    pub fn events(&self, ns: &Namespace, from: Seq, to: Seq) -> Result<Vec<Event>> {
        self.events_limited(ns, from, to, usize::MAX)
    }

    /// [`Engine::events`], stopping after `limit` events of `ns` (a page of
    /// the audit export: continue from the last `seq` + 1).
    ///
    /// # Errors
    /// As [`Engine::events`].
    pub fn events_limited(&self, ns: &Namespace, from: Seq, to: Seq, limit: usize) -> Result<Vec<Event>> {
        self.events_where(ns, from, to, limit, |_| true)
    }

    /// [`Engine::events_limited`], keeping only the events whose exported
    /// kind ([`EventBody::kind_name`], after forgotten payloads became
    /// tombstones) is one of `kinds`; every kind when `kinds` is empty.
    ///
    /// # Errors
    /// As [`Engine::events`].
    pub fn events_of_kinds(
        &self,
        ns: &Namespace,
        from: Seq,
        to: Seq,
        limit: usize,
        kinds: &[&str],
    ) -> Result<Vec<Event>> {
        self.events_where(ns, from, to, limit, |ev| kinds.is_empty() || kinds.contains(&ev.body.kind_name()))
    }

    fn events_where(
        &self,
        ns: &Namespace,
        from: Seq,
        to: Seq,
        limit: usize,
        keep: impl Fn(&Event) -> bool,
    ) -> Result<Vec<Event>> {
        let (visible, forgotten_m, forgotten_o) = {
            let state = self.shared().state.read();
            let st = state.ns(ns);
            (
                state.visible,
                st.map(|s| s.forgotten_memories.clone()).unwrap_or_default(),
                st.map(|s| s.forgotten_observations.clone()).unwrap_or_default(),
            )
        };
        let store = self.shared().store();
        let mut out = Vec::new();
        for r in store.scan(from.max(1), to.min(visible)) {
            if out.len() >= limit {
                break;
            }
            let (seq, bytes) = r?;
            let mut ev = decode_record(seq, &bytes)?;
            if &ev.ns != ns {
                continue;
            }
            let erased = match &ev.body {
                EventBody::Observed(_) => forgotten_o.contains(&ObservationId(seq)),
                EventBody::Extracted(_) => forgotten_m.contains(&MemoryId(seq)),
                EventBody::Superseded(s) => forgotten_m.contains(&s.old) || forgotten_m.contains(&s.new),
                _ => false,
            };
            if erased {
                ev.body = EventBody::Tombstone(Tombstone { was: ev.body.kind_name().to_string() });
            }
            if keep(&ev) {
                out.push(ev);
            }
        }
        Ok(out)
    }

    /// Store-wide figures.
    pub fn stats(&self) -> Stats {
        let state = self.shared().state.read();
        let mut s = Stats {
            last_seq: state.visible,
            events: state.counts.clone(),
            namespaces: state.namespaces.len(),
            active_memories: 0,
            superseded_memories: 0,
            archived_memories: 0,
            quarantined_memories: 0,
            observations: 0,
            vectors: 0,
            embed_backlog: self.embed_backlog(),
            embed_failed: self.backlog().failed.load(std::sync::atomic::Ordering::Acquire),
            rerank_failed: self.rerank_failures().get().0,
            last_rerank_error: self.rerank_failures().get().1,
            hnsw_namespaces: 0,
            index_bytes: 0,
            pending_erasure: state.pending_erasure(),
            disk_bytes: self.shared().store().size_on_disk(),
            model_id: self.embedder().model_id().to_string(),
            dim: self.embedder().dim(),
            generation: self.inner.dir.lock().current_generation(),
            phone_regions: self.inner.cfg.redactor.phone_regions().codes(),
            poisoned: self.shared().poison_message(),
            read_only: self.shared().read_only.clone(),
            reserve_bytes: self.shared().reserve_bytes,
            log_cache_bytes: self.inner.cfg.cache_bytes,
            rss_bytes: rss_bytes(),
            encrypted: self.shared().keys.is_some(),
            shredded_namespaces: self.shared().keys.as_ref().map_or(0, |k| k.shredded_namespaces()),
            cluster: None,
        };
        for st in state.namespaces.values() {
            for m in st.memories.values() {
                match m.status {
                    Status::Active => s.active_memories += 1,
                    Status::Archived => s.archived_memories += 1,
                    _ => s.superseded_memories += 1,
                }
                s.quarantined_memories += usize::from(m.quarantine.is_some());
            }
            s.observations += st.observations.len();
            s.vectors += st.vectors.len();
            s.hnsw_namespaces += usize::from(st.vectors.is_hnsw());
            s.index_bytes += st.vectors.memory_bytes() + st.lexical.memory_bytes();
        }
        s
    }

    /// Blocks until every namespace's HNSW graph has its build done and
    /// every vector in the copy that searches use (returns at once where
    /// there is no graph). Recall is correct without it (vectors not yet in
    /// a graph are scanned); benchmarks and tests use it for graph-speed
    /// searches, and to give a clean close a whole graph to save in the
    /// graph file. Holds the state's read lock meanwhile, so writes wait.
    pub fn wait_for_graphs(&self) {
        let state = self.shared().state.read();
        for st in state.namespaces.values() {
            st.vectors.wait_for_graph();
        }
    }

    /// SHA-256 digest (hex) of every projection at the durable position.
    /// Replaying the log into a fresh engine gives the same digest.
    pub fn digest(&self) -> String {
        self.shared().state.read().digest()
    }
}

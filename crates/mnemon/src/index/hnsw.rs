//! HNSW graph over unit vectors, built with `hnsw_rs`, with tombstones.
//!
//! The graph holds each vector's `i8` codes and scale (see `quant`), not its
//! `f32` components: a distance then reads `dim + 4` bytes instead of
//! `4·dim` (the graph's searches are bound by those random reads), and the
//! copy costs a quarter of the memory. Its distances are therefore estimates
//! (within about 0.005 of the exact cosine at 384-d); the owning index
//! rescores every candidate with the exact vector.
//!
//! `hnsw_rs` 0.3.5 has no deletion, so a removed (or replaced) vector stays in
//! the graph as a *tombstone*: it still routes searches but is never returned.
//! [`Graph`] maps the graph's internal data ids ("slots", assigned 0, 1, 2, ...
//! in insertion order) to memory ids and tracks which slots are live; the
//! owning [`VectorIndex`](super::VectorIndex) rebuilds the graph when too many
//! slots are dead.
//!
//! `hnsw_rs` builds the bulk of a graph (in parallel); the background worker
//! copies it into a [`View`], flat arrays of links and codes (see `view`),
//! and drops the `hnsw_rs` graph, which held about 3 KB per point against
//! the view's ~0.5 KB. Points added later are inserted into the view by the
//! same algorithm ([`View::insert`]). Searches run on the worker's latest
//! published view; slots past it are the *tail*, which the owner scores
//! exactly.

use std::sync::atomic::{AtomicBool, AtomicUsize, Ordering};
use std::sync::Arc;

use crossbeam_channel::{Receiver, Sender};
use hnsw_rs::prelude::{Distance, Hnsw};

use super::exact::{sample_positions, IdMap};
use super::view::{level_of, View};
use crate::embed::quant::dot_i8;
#[cfg(test)]
use crate::embed::quant::quantize;

/// HNSW construction and search parameters, named as in Malkov & Yashunin,
/// "Efficient and robust approximate nearest neighbor search using
/// Hierarchical Navigable Small World graphs" (IEEE TPAMI 2018, arXiv:1603.09320).
#[derive(Clone, Debug, PartialEq)]
pub struct HnswParams {
    /// `M`: links kept per node on layers ≥ 1; layer 0 keeps `2·M` (the
    /// paper's `M_max0 = 2·M`). Default 16, inside the paper's recommended
    /// 5–48 range; clamped to `2..=128` (`hnsw_rs` allows at most 256 links).
    pub m: usize,
    /// `efConstruction`: candidate-list size while inserting. Default 100
    /// (the default of Qdrant and of Lucene): half the build time of 200,
    /// the value of the paper's and hnswlib's benchmarks (100k grown in
    /// 10.4 s against 20.9 s, `benches/index.rs`), for recall@10 0.986
    /// against 0.990 with the default `ef_search`. The graph's inserts set
    /// the pace of writes past the threshold (`benches/scale.rs`). Clamped
    /// to at least `m`.
    pub ef_construction: usize,
    /// `ef`: candidate-list size while searching; the effective value is
    /// `max(ef_search, k)`, raised further to compensate for tombstones and
    /// the caller's filter. Default 128: measured recall@10 0.986 against
    /// exact search on 100k clustered 384-d vectors at `ef_construction` 100
    /// (0.954 with 64; search p50 174 µs against 155 µs for 64 at 200,
    /// `benches/index.rs`) and ≥ 0.95 on 20k (`tests/index_hnsw.rs`).
    /// The near-duplicate check of a write uses a shorter list
    /// (`index::NEAR_EF`).
    pub ef_search: usize,
    /// Live-vector count at which the index switches from the quantised
    /// scan to HNSW. Default 15 000: the crossover measured in
    /// `benches/index.rs` when searches ran inside `hnsw_rs` (384-d,
    /// clustered, k 10, default `m`, `ef_construction`, `ef_search` and
    /// `rescore_factor`; thread CPU time): the quantised scan's p50 was
    /// 318 µs at 10k and 1036 µs at 30k, the graph's 443 µs and 652 µs.
    /// Searches on the graph's flat copy are faster (176 µs at 100k), so
    /// the two would now cross near 10k, but a graph costs memory (≈ 0.5 KB
    /// per vector, 0.45× the store's bytes) and its build (≈ 0.1 ms of
    /// background time per vector at `ef_construction` 100: 100k grown in
    /// 10.4 s), which the few tens of
    /// microseconds it would save between 10k and 15k do not repay.
    /// Once built, the graph is dropped again only when the live
    /// count falls below `exact_threshold · 4/5` (hysteresis, so that
    /// inserts and removals around the threshold do not rebuild repeatedly).
    pub exact_threshold: usize,
    /// Seed of the levels of points inserted after a graph's bulk build
    /// (each slot's level is a hash of the seed and the slot, see
    /// `view::level_of`). The bulk build's levels do not depend on it:
    /// `hnsw_rs` 0.3.5 seeds its level generator with the fixed constant
    /// 397 and offers no way to change it. Construction is deterministic
    /// when [`parallel_build`](Self::parallel_build) is off (the bulk is
    /// then inserted sequentially, in call order; later points always
    /// are). Default 0.
    pub seed: u64,
    /// Fraction of graph nodes that may be tombstones before the graph is
    /// rebuilt from the live vectors. Default 0.15: tombstones still cost
    /// traversal work and force over-fetching, so search cost grows roughly
    /// as `1 / (1 − ratio)`; at 0.15 that is ≤ 18 % extra, while a rebuild
    /// costs about as much as re-inserting every live vector. Values ≤ 0
    /// rebuild on every removal from the graph.
    pub rebuild_tombstone_ratio: f32,
    /// Candidates per requested result that a scan keeps by its `i8`
    /// estimate before rescoring them with the exact dot product against the
    /// stored (`f16`) rows: a top-`k` scan rescores `max(k, 4) ·
    /// rescore_factor` rows. 0 turns quantisation off (every row is scored
    /// from its `f16` components). Default 4: in `benches/index.rs`
    /// (clustered 384-d vectors, 1k, 10k and 100k) a factor of 4 gives
    /// recall@10 ≥ 0.998 against an exact `f32` scan of the vectors as given
    /// (1.000 against a scan of the stored rows before they were `f16`).
    pub rescore_factor: usize,
    /// Whether the background thread inserts the bulk of a build (the live
    /// vectors when the graph is made) in parallel on `rayon`'s global
    /// pool, one task per core; vectors inserted after it go in one at a
    /// time either way. Default true:
    /// building 10k and 30k 384-d vectors took 0.55× and 0.53× the wall
    /// time of sequential insertion on 2 cores (`benches/index.rs`, same
    /// run). Off, the bulk is inserted
    /// one at a time in call order, so the same calls build the same graph
    /// (parallel insertion may link a few points differently from run to
    /// run; search results are rescored exactly either way).
    pub parallel_build: bool,
}

impl Default for HnswParams {
    fn default() -> Self {
        HnswParams {
            m: 16,
            ef_construction: 100,
            ef_search: 128,
            exact_threshold: 15_000,
            seed: 0,
            rebuild_tombstone_ratio: 0.15,
            rescore_factor: 4,
            parallel_build: true,
        }
    }
}

/// Number of layers `hnsw_rs` may use (its maximum). With level multiplier
/// `1/ln(M)` the chance of a node reaching layer 16 is `M^-16`, i.e. never.
const MAX_LAYER: usize = 16;

/// Bytes a code vector carries after its `dim` codes: the scale, as the
/// four little-endian bytes of an `f32`.
const SCALE_BYTES: usize = 4;

/// A graph point: the codes of `v` followed by the little-endian bytes of
/// its scale (as `i8`), `dim + 4` values in all.
#[cfg(test)]
fn encode(v: &[f32]) -> Vec<i8> {
    let mut out = vec![0i8; v.len() + SCALE_BYTES];
    let (codes, tail) = out.split_at_mut(v.len());
    let scale = quantize(v, codes);
    for (t, b) in tail.iter_mut().zip(scale.to_le_bytes()) {
        *t = i8::from_le_bytes([b]);
    }
    out
}

/// The codes and scale of a point made by [`point`]; an input shorter than
/// the scale bytes decodes as no codes and scale 0.
#[inline]
pub(crate) fn decode(p: &[i8]) -> (&[i8], f32) {
    let Some(split) = p.len().checked_sub(SCALE_BYTES) else {
        return (&[], 0.0);
    };
    let (codes, tail) = p.split_at(split);
    let mut b = [0u8; SCALE_BYTES];
    for (d, t) in b.iter_mut().zip(tail) {
        *d = t.to_le_bytes()[0];
    }
    (codes, f32::from_le_bytes(b))
}

/// Estimated cosine distance between two encoded unit vectors:
/// `max(0, 1 − s_a·s_b·(codes_a · codes_b))`, in `[0, 2]` up to the
/// estimate's error.
///
/// Clamped at 0 as `hnsw_rs`'s own `DistDot` asserts `1 − a·b ≥ 0`, which
/// fails by rounding when a query equals a stored vector; clamping only
/// changes values that are rounding noise below 0, so it never panics (NaN
/// also maps to 0).
#[derive(Clone, Copy, Default, Debug)]
pub(crate) struct CodeDistance;

impl Distance<i8> for CodeDistance {
    #[inline]
    fn eval(&self, va: &[i8], vb: &[i8]) -> f32 {
        let (ca, sa) = decode(va);
        let (cb, sb) = decode(vb);
        // `i32 → f32` is exact below 2^24 (|dot| ≤ dim · 127², dim ≤ 1040).
        (1.0 - sa * sb * dot_i8(ca, cb) as f32).max(0.0)
    }
}

/// Points the background worker takes from its queue at most at once
/// before it considers publishing its view; also the chunk of a bulk it
/// hands to one parallel insertion of `hnsw_rs` (checking for cancellation
/// between chunks), as `hnsw_rs` advises about 1,000 points per thread for
/// its parallel insertion to pay.
const WORKER_BATCH: usize = 4096;

/// Slots the worker's view may run ahead of the published [`View`] before
/// the worker publishes it: `view / VIEW_LAG_DIV`, kept within
/// `VIEW_LAG_MIN..=VIEW_LAG_MAX`. After each publication the worker's
/// next insert copies the view's links (O(n), see
/// [`View::clone_with_room`]), and a search scores the slots past the
/// published view exactly (one `f16` row each, about 0.08 µs at 384-d), so the lag trades
/// one against the other: at 100k points a copy every ~1.6k inserts; from
/// 131k on, every 2,048, so that the inserted-but-not-copied part of the
/// tail is under 2,048 rows (≈ 0.16 ms of scoring) after each batch, at any
/// size. Points still queued, and a batch being inserted (up to
/// [`WORKER_BATCH`]), are in the tail as well. Seed values, not tuned.
const VIEW_LAG_MIN: usize = 256;
const VIEW_LAG_MAX: usize = 2048;
const VIEW_LAG_DIV: usize = 64;

/// What the background worker and the readers share: the published view,
/// and how far the worker has got.
struct Shared {
    /// Slots `0..inserted` are in the worker's graph (it inserts
    /// consecutive slots: a bulk chunk by chunk, later points one by one).
    inserted: AtomicUsize,
    /// The copy searches run on, of slots `0..indexed`.
    view: parking_lot::RwLock<Option<Arc<View>>>,
    /// Slots `0..indexed` are in the current view (published after it).
    indexed: AtomicUsize,
    /// Set by [`Graph::wait`] to the slot count it waits for: once that
    /// many are inserted, the worker copies a view of them whatever the lag.
    want: AtomicUsize,
    /// Set when the owning [`Graph`] is dropped: the worker stops at its
    /// next batch.
    cancelled: AtomicBool,
    /// Set when the worker stopped for good (cancelled, or a panic inside
    /// `hnsw_rs` or [`View::insert`]); a graph whose worker failed is never
    /// used for search.
    stopped: AtomicBool,
    /// Heap bytes the worker holds beyond the published view: the
    /// `hnsw_rs` graph while it builds the bulk (estimated, see
    /// [`hnsw_rs_bytes`]), then its own copy of the view while that copy
    /// holds inserts not yet published (its links and the code chunks it
    /// does not share; 0 once published).
    private_bytes: AtomicUsize,
    /// Tests hold the worker back with this, to search a known tail.
    #[cfg(test)]
    paused: AtomicBool,
}

/// A graph's worker seen from outside the graph: waited on by the writer
/// (see [`Graph::backlog`]) without holding the graph or any lock.
pub(crate) struct Backlog {
    shared: Arc<Shared>,
    /// Slots the worker must have inserted for the wait to end.
    target: usize,
}

impl Backlog {
    /// Blocks until the worker has inserted the slots below the target,
    /// has stopped, or the graph was dropped; polls every 100 µs (a point
    /// takes the worker 0.1–0.5 ms, see [`HnswParams::exact_threshold`]).
    pub(crate) fn wait(&self) {
        while self.shared.inserted.load(Ordering::Acquire) < self.target
            && !self.shared.stopped.load(Ordering::Acquire)
            && !self.shared.cancelled.load(Ordering::Acquire)
        {
            std::thread::sleep(std::time::Duration::from_micros(100));
        }
    }
}

/// Points handed to the worker: consecutive slots from `first`, each
/// encoded by [`point`].
struct Job {
    first: usize,
    points: Vec<Vec<i8>>,
}

/// An HNSW graph with slot bookkeeping and tombstones, filled by a
/// background thread.
///
/// The owner (the writer, through [`VectorIndex`](super::VectorIndex))
/// assigns slots and keeps the slot tables; each new point goes onto the
/// queue of a worker thread. The first job is the whole bulk of a build,
/// which the worker inserts into an `hnsw_rs` graph (in parallel with
/// [`HnswParams::parallel_build`]) and copies into its view; later points
/// are taken from the queue up to [`WORKER_BATCH`] at a time and inserted
/// into the view one by one (see `run_worker`). Searches run on the
/// worker's latest published view; slots not in it (queued, or inserted
/// since it was published) are the *tail*
/// ([`Graph::indexed`]..[`Graph::points`]), which the owner searches
/// exactly. The worker exits when the graph is dropped.
pub(crate) struct Graph {
    shared: Arc<Shared>,
    jobs: Sender<Job>,
    /// Slots of the first job (the build): the graph serves searches once
    /// the worker has inserted them and copied them into its first view.
    bulk: usize,
    /// Memory id of each slot (graph data id).
    slot_ids: Vec<u64>,
    /// Whether each slot is the current vector of its id.
    slot_live: Vec<bool>,
    /// Live slot of each id.
    id_slot: IdMap<usize>,
    tombstones: usize,
}

impl Graph {
    /// A graph over `points` (memory id and [`point`] encoding, inserted as
    /// slots `0..len` in the given order), its slot tables sized for about
    /// `expected` points (they grow past it). Returns at once: a worker
    /// thread builds the points with `hnsw_rs`, in parallel on `rayon`'s
    /// pool when [`HnswParams::parallel_build`] is set, else one at a time
    /// in slot order (then the graph depends only on the sequence of
    /// calls).
    ///
    /// # Errors
    /// The I/O error of the operating system when it refuses a thread.
    pub fn build(
        dim: usize,
        params: &HnswParams,
        points: Vec<(u64, Vec<i8>)>,
        expected: usize,
    ) -> std::io::Result<Self> {
        let bulk = points.len();
        let mut g = Graph::start(dim, params, None, 0)?;
        g.bulk = bulk;
        g.slot_ids.reserve(expected);
        g.slot_live.reserve(expected);
        let mut encoded = Vec::with_capacity(bulk);
        for (id, p) in points {
            g.assign(id);
            encoded.push(p);
        }
        // A send fails only when the worker is gone, which `usable` reports.
        let _ = g.jobs.send(Job { first: 0, points: encoded });
        Ok(g)
    }

    /// Starts the worker; with `view`, publishes it first as the graph's
    /// view of slots `0..slots`. The graph returned has no slots assigned
    /// and no bulk.
    fn start(dim: usize, params: &HnswParams, view: Option<View>, slots: usize) -> std::io::Result<Self> {
        let m = params.m.clamp(2, 128);
        let ef_c = params.ef_construction.max(m);
        let initial = view.map(Arc::new);
        let shared = Arc::new(Shared {
            inserted: AtomicUsize::new(slots),
            view: parking_lot::RwLock::new(initial.clone()),
            indexed: AtomicUsize::new(slots),
            want: AtomicUsize::new(0),
            cancelled: AtomicBool::new(false),
            stopped: AtomicBool::new(false),
            private_bytes: AtomicUsize::new(0),
            #[cfg(test)]
            paused: AtomicBool::new(false),
        });
        let (tx, rx) = crossbeam_channel::unbounded::<Job>();
        let worker = Arc::clone(&shared);
        let build = Build { parallel: params.parallel_build, dim, m, ef_construction: ef_c, seed: params.seed };
        std::thread::Builder::new().name("mnemon-hnsw".into()).spawn(move || {
            let outcome =
                std::panic::catch_unwind(std::panic::AssertUnwindSafe(|| run_worker(&worker, &rx, &build, initial)));
            if outcome.is_err() {
                worker.cancelled.store(true, Ordering::Release);
            }
            worker.stopped.store(true, Ordering::Release);
        })?;
        let g = Graph {
            shared,
            jobs: tx,
            bulk: 0,
            slot_ids: Vec::new(),
            slot_live: Vec::new(),
            id_slot: IdMap::default(),
            tombstones: 0,
        };
        Ok(g)
    }

    /// A graph whose first view is `view` (loaded from the graph file),
    /// slot `s` holding memory id `ids[s]`, live when `live[s]`; its worker
    /// inserts later points into that view as into any other. `view` must
    /// have `ids.len()` slots, `dim` components and `M = params.m` (as
    /// clamped by [`build`](Self::build)). Returns `None` when a live id
    /// repeats or the shapes differ.
    ///
    /// # Errors
    /// The I/O error of the operating system when it refuses a thread.
    pub fn from_view(
        dim: usize,
        params: &HnswParams,
        view: View,
        ids: Vec<u64>,
        live: Vec<bool>,
        expected: usize,
    ) -> std::io::Result<Option<Self>> {
        let m = params.m.clamp(2, 128);
        if view.dim != dim || view.stride_up != m || view.slots != ids.len() || live.len() != ids.len() {
            return Ok(None);
        }
        let mut id_slot = IdMap::default();
        let mut tombstones = 0;
        for (slot, (&id, &l)) in ids.iter().zip(&live).enumerate() {
            if !l {
                tombstones += 1;
            } else if id_slot.insert(id, slot).is_some() {
                return Ok(None);
            }
        }
        let slots = view.slots;
        let mut g = Graph::start(dim, params, Some(view), slots)?;
        g.slot_ids = ids;
        g.slot_live = live;
        g.slot_ids.reserve(expected.saturating_sub(slots));
        g.slot_live.reserve(expected.saturating_sub(slots));
        g.id_slot = id_slot;
        g.tombstones = tombstones;
        Ok(Some(g))
    }

    /// The published view with the id and liveness of each of its slots,
    /// or `None` while the bulk build has no view yet.
    pub fn published(&self) -> Option<(Arc<View>, &[u64], &[bool])> {
        if !self.usable() {
            return None;
        }
        let view = self.shared.view.read().clone()?;
        let n = view.slots().min(self.slot_ids.len());
        Some((view, &self.slot_ids[..n], &self.slot_live[..n]))
    }

    /// Gives `id` the next slot, tombstoning its previous slot if any.
    fn assign(&mut self, id: u64) -> usize {
        self.remove(id);
        let slot = self.slot_ids.len();
        self.slot_ids.push(id);
        self.slot_live.push(true);
        self.id_slot.insert(id, slot);
        slot
    }

    /// Queues `id` with its graph point ([`point`] of the codes the exact
    /// store holds for it) for insertion (as a new slot, after every slot
    /// queued before), tombstoning its previous slot if any. Until the
    /// worker has inserted it, the slot is in the tail.
    pub fn insert(&mut self, id: u64, point: Vec<i8>) {
        let slot = self.assign(id);
        let _ = self.jobs.send(Job { first: slot, points: vec![point] });
    }

    /// Tombstones the slot of `id`. Returns whether it was live.
    pub fn remove(&mut self, id: u64) -> bool {
        match self.id_slot.remove(&id) {
            Some(slot) => {
                if let Some(l) = self.slot_live.get_mut(slot) {
                    *l = false;
                }
                self.tombstones += 1;
                true
            }
            None => false,
        }
    }

    /// Points in the graph or queued for it, live and tombstoned.
    pub fn points(&self) -> usize {
        self.slot_ids.len()
    }

    /// Slots `0..indexed()` are searched through the graph; the rest (queued,
    /// or in the graph but not yet in its searched copy) are the tail.
    pub fn indexed(&self) -> usize {
        self.shared.indexed.load(Ordering::Acquire).min(self.points())
    }

    /// Whether the graph may serve searches: its build is done and its
    /// worker is still running.
    pub fn usable(&self) -> bool {
        !self.shared.stopped.load(Ordering::Acquire) && self.shared.indexed.load(Ordering::Acquire) >= self.bulk
    }

    /// Whether the worker has stopped for good (a panic inside `hnsw_rs` or
    /// [`View::insert`]).
    pub fn failed(&self) -> bool {
        self.shared.stopped.load(Ordering::Acquire)
    }

    pub fn tombstones(&self) -> usize {
        self.tombstones
    }

    /// Live id of `slot`, if the slot is live.
    #[inline]
    pub fn live_id(&self, slot: usize) -> Option<u64> {
        match self.slot_live.get(slot) {
            Some(true) => self.slot_ids.get(slot).copied(),
            _ => None,
        }
    }

    /// Deterministic estimate of the fraction of slots that are live and pass
    /// `filter`, from `SAMPLE` pseudo-random slots. Returns
    /// `(passing, sampled)`.
    pub fn sample_pass(&self, filter: &dyn Fn(u64) -> bool) -> (usize, usize) {
        const SAMPLE: usize = 256;
        let n = self.points();
        let mut pass = 0;
        let mut seen = 0;
        for slot in sample_positions(n, SAMPLE) {
            seen += 1;
            if let Some(id) = self.live_id(slot) {
                if filter(id) {
                    pass += 1;
                }
            }
        }
        (pass, seen)
    }

    /// Up to `ef` nearest slots to `query` among the first `below` slots, by
    /// estimated distance (graph order, nearest first), including
    /// tombstones. `ef` is the search list size. Slots that entered the
    /// searched copy after `below` was read are left out (the caller
    /// searches them with the tail).
    pub fn search_slots(&self, query: &[f32], ef: usize, below: usize) -> Vec<usize> {
        let view = self.shared.view.read().clone();
        match view {
            Some(v) => v.search(query, ef).into_iter().filter(|&s| s < below).collect(),
            None => Vec::new(),
        }
    }

    /// A handle to wait on while more than `max` points are queued and not
    /// yet inserted by the worker; `None` when at most `max` are, and while
    /// the bulk of a build is being built (a store opened without its
    /// graph file builds every vector at once: writes scan meanwhile
    /// rather than wait for it).
    pub fn backlog(&self, max: usize) -> Option<Backlog> {
        let inserted = self.shared.inserted.load(Ordering::Acquire);
        (self.usable() && self.points().saturating_sub(inserted) > max)
            .then(|| Backlog { shared: Arc::clone(&self.shared), target: self.points().saturating_sub(max) })
    }

    /// Blocks until the worker has inserted every queued point and copied
    /// them into the searched view (or has stopped), polling every
    /// millisecond.
    pub fn wait(&self) {
        if self.shared.indexed.load(Ordering::Acquire) < self.points() {
            self.shared.want.fetch_max(self.points(), Ordering::AcqRel);
            // Wakes an idle worker; a send fails only when it is gone.
            let _ = self.jobs.send(Job { first: self.points(), points: Vec::new() });
        }
        while self.shared.indexed.load(Ordering::Acquire) < self.points()
            && !self.shared.stopped.load(Ordering::Acquire)
        {
            std::thread::sleep(std::time::Duration::from_millis(1));
        }
    }

    /// Heap bytes held: the published view (see `view`: codes, scales and
    /// links, as allocated), what the worker holds beside it (the `hnsw_rs`
    /// graph while it builds the bulk, estimated by [`hnsw_rs_bytes`]; its
    /// own copy of the view while that holds unpublished inserts), and this
    /// wrapper's slot maps. Points queued and not yet inserted are not
    /// counted.
    pub fn memory_bytes(&self) -> usize {
        let view = self.shared.view.read().as_ref().map_or(0, |v| v.memory_bytes());
        view + self.shared.private_bytes.load(Ordering::Acquire)
            + self.slot_ids.capacity() * 8
            + self.slot_live.capacity()
            + self.id_slot.capacity() * (16 + 1) * 8 / 7
    }
}

/// Heap bytes of an `hnsw_rs` 0.3.5 graph of `points` points of `dim`
/// codes, estimated from its layout: per point its codes and scale, an
/// `Arc<Point>` with its lock and 16 neighbour-list headers (one per
/// possible layer), `2·M` layer-0 links and `M` links on the ~1/M of points
/// that reach layer 1 (each link an 8-byte pointer to an `Arc` of a 16-byte
/// record, a 48-byte malloc chunk, plus spare list capacity), allocator
/// headers, and a slot in a per-layer table. Calibrated against
/// resident-memory growth while building 10k × 384 in `benches/index.rs`
/// (within a few %).
fn hnsw_rs_bytes(points: usize, dim: usize, m: usize) -> usize {
    const LINK: usize = 64;
    let per_point = dim + SCALE_BYTES // codes and scale
        + 160                         // Point, Arc/RwLock, Vec headers, malloc headers
        + MAX_LAYER * 24              // neighbour Vec headers, one per layer
        + 2 * m * LINK                // layer-0 links
        + 8; // entry in points_by_layer
    points * per_point + points / m.max(2) * m * LINK
}

#[cfg(test)]
impl Graph {
    /// Holds the worker back (before its next batch) or lets it go on.
    pub fn pause(&self, paused: bool) {
        self.shared.paused.store(paused, Ordering::Release);
    }
}

impl Drop for Graph {
    fn drop(&mut self) {
        // The worker sees the flag at its next batch, or the closed queue.
        self.shared.cancelled.store(true, Ordering::Release);
    }
}

/// What the worker builds with: the graph's parameters.
struct Build {
    parallel: bool,
    dim: usize,
    m: usize,
    ef_construction: usize,
    seed: u64,
}

/// Points the worker inserts into its view between two checks for
/// cancellation (about 30 ms at 100k 384-d points).
const CANCEL_EVERY: usize = 64;

/// The worker: takes every job queued so far (up to [`WORKER_BATCH`]
/// points beyond the first job), inserts them, publishes its view when it
/// is far enough ahead of the published one (see [`VIEW_LAG_MIN`]), or the
/// bulk build is done, or every slot a [`Graph::wait`] needs is inserted,
/// and repeats until the queue closes or the graph is dropped.
///
/// The first job (the bulk of a build, when it holds points) is inserted
/// into an `hnsw_rs` graph, in parallel with [`HnswParams::parallel_build`],
/// which is then copied into the worker's view and dropped; every later
/// point is inserted into the view itself ([`View::insert`], one at a time
/// in slot order, at the level [`level_of`] gives its slot). The published
/// view is shared with readers, so the worker inserts into its own copy
/// (made when it first inserts after a publication) and publishes that.
///
/// With `initial` (a view loaded from the graph file, already published),
/// there is no bulk: every point is inserted into that view.
fn run_worker(shared: &Shared, rx: &Receiver<Job>, b: &Build, initial: Option<Arc<View>>) {
    let mut first_job = initial.is_none();
    let mut cur = initial.unwrap_or_else(|| Arc::new(View::empty(b.dim, b.m)));
    while let Ok(first) = rx.recv() {
        #[cfg(test)]
        while shared.paused.load(Ordering::Acquire) && !shared.cancelled.load(Ordering::Acquire) {
            std::thread::sleep(std::time::Duration::from_millis(1));
        }
        let start = first.first;
        let mut points = first.points;
        // The bulk is built alone, so that which points `hnsw_rs` inserts
        // does not depend on how fast later ones were queued.
        let bulk = std::mem::take(&mut first_job) && start == 0 && !points.is_empty();
        while !bulk && points.len() < WORKER_BATCH {
            match rx.try_recv() {
                Ok(more) => {
                    debug_assert_eq!(more.first, start + points.len(), "jobs come in slot order");
                    points.extend(more.points);
                }
                Err(_) => break,
            }
        }
        if bulk {
            match build_bulk(shared, b, &points) {
                Some(view) => cur = Arc::new(view),
                None => return,
            }
        } else if !insert_each(shared, b, &mut cur, start, &points) {
            return;
        }
        let inserted = shared.inserted.load(Ordering::Acquire);
        let viewed = shared.indexed.load(Ordering::Acquire);
        let lag = view_lag(viewed);
        // Jobs arrive in slot order, so `inserted` reaches what a wait
        // asked for once the jobs queued before it are done.
        let want = shared.want.load(Ordering::Acquire);
        let asked = want > viewed && inserted >= want;
        let first_view = viewed == 0 && shared.view.read().is_none();
        if inserted > viewed && (first_view || inserted - viewed >= lag || asked) {
            *shared.view.write() = Some(Arc::clone(&cur));
            shared.indexed.store(inserted, Ordering::Release);
            shared.private_bytes.store(0, Ordering::Release);
        } else if Arc::strong_count(&cur) == 1 {
            shared.private_bytes.store(cur.own_memory_bytes(), Ordering::Release);
        }
    }
}

/// Slots the worker's view may run ahead of the published one of `viewed`
/// slots before it is published (see [`VIEW_LAG_MIN`]).
fn view_lag(viewed: usize) -> usize {
    (viewed / VIEW_LAG_DIV).clamp(VIEW_LAG_MIN, VIEW_LAG_MAX)
}

/// Builds the bulk (slots `0..points.len()`) with `hnsw_rs` and returns
/// its copy as a view, or `None` when the graph was dropped meanwhile.
fn build_bulk(shared: &Shared, b: &Build, points: &[Vec<i8>]) -> Option<View> {
    let hnsw: Hnsw<'static, i8, CodeDistance> =
        Hnsw::new(b.m, points.len(), MAX_LAYER, b.ef_construction, CodeDistance);
    shared.private_bytes.store(hnsw_rs_bytes(points.len(), b.dim, b.m), Ordering::Release);
    for (c, chunk) in points.chunks(WORKER_BATCH).enumerate() {
        if shared.cancelled.load(Ordering::Acquire) {
            return None;
        }
        let base = c * WORKER_BATCH;
        let items: Vec<(&[i8], usize)> = chunk.iter().enumerate().map(|(i, p)| (p.as_slice(), base + i)).collect();
        if b.parallel && items.len() > 1 {
            hnsw.parallel_insert_slice(&items);
        } else {
            for item in items {
                hnsw.insert_slice(item);
            }
        }
        shared.inserted.store(base + chunk.len(), Ordering::Release);
    }
    let view = View::copy(&hnsw, b.dim, b.m, points.len());
    drop(hnsw);
    shared.private_bytes.store(view.memory_bytes(), Ordering::Release);
    Some(view)
}

/// Inserts `points` (slots from `start`) into the worker's view, copying
/// it first when readers share it. Returns false when it stopped because
/// the graph was dropped.
fn insert_each(shared: &Shared, b: &Build, cur: &mut Arc<View>, start: usize, points: &[Vec<i8>]) -> bool {
    if points.is_empty() {
        return !shared.cancelled.load(Ordering::Acquire);
    }
    if Arc::get_mut(cur).is_none() {
        let room = points.len() + view_lag(cur.slots());
        *cur = Arc::new(cur.clone_with_room(room));
    }
    let view = Arc::get_mut(cur).expect("the worker's own copy");
    view.reserve(points.len());
    shared.private_bytes.store(view.own_memory_bytes(), Ordering::Release);
    debug_assert_eq!(view.slots(), start, "the view holds every slot before the job");
    for (i, p) in points.iter().enumerate() {
        if i % CANCEL_EVERY == 0 && shared.cancelled.load(Ordering::Acquire) {
            return false;
        }
        let (codes, scale) = decode(p);
        let slot = start + i;
        view.insert(codes, scale, level_of(b.seed, slot, b.m, MAX_LAYER as u8 - 1), b.ef_construction);
        shared.inserted.store(slot + 1, Ordering::Release);
    }
    !shared.cancelled.load(Ordering::Acquire)
}

/// The graph point of a vector already quantised: its codes followed by the
/// little-endian bytes of its scale, `dim + 4` values in all.
pub(crate) fn point(codes: &[i8], scale: f32) -> Vec<i8> {
    let mut out = Vec::with_capacity(codes.len() + SCALE_BYTES);
    out.extend_from_slice(codes);
    out.extend(scale.to_le_bytes().map(|b| i8::from_le_bytes([b])));
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn distance_is_clamped_and_never_negative() {
        let d = |a: &[f32], b: &[f32]| CodeDistance.eval(&encode(a), &encode(b));
        let v = [0.6f32, 0.8, 0.0];
        assert!(d(&v, &v) < 0.005, "{}", d(&v, &v)); // rounding of 0.6 / 0.8 · 127
        let w = [1.0f32 + 1e-6, 0.0, 0.0];
        assert_eq!(d(&w, &w), 0.0);
        assert!((d(&[1.0, 0.0], &[-1.0, 0.0]) - 2.0).abs() < 1e-6);
        assert!((d(&[0.6, 0.8], &[0.8, 0.6]) - 0.04).abs() < 0.01);
        assert_eq!(d(&[f32::NAN], &[1.0]), 1.0); // NaN codes as 0
        assert_eq!(CodeDistance.eval(&[], &[1, 2]), 1.0);
    }

    #[test]
    fn point_of_stored_codes_equals_encode() {
        let v = [0.3f32, -0.9, 0.1, 0.3];
        let mut codes = [0i8; 4];
        let scale = quantize(&v, &mut codes);
        assert_eq!(point(&codes, scale), encode(&v));
    }

    #[test]
    fn bulk_built_graph_finds_every_point() {
        for parallel in [false, true] {
            let p = HnswParams { parallel_build: parallel, ..HnswParams::default() };
            // 500 scattered unit vectors of 16 components (a fixed LCG).
            let vs = crate::index::view::tests::lcg_vectors(12345, 500, 16);
            let pts = vs.iter().enumerate().map(|(i, v)| (i as u64 + 100, encode(v))).collect();
            let g = Graph::build(16, &p, pts, 500).unwrap();
            g.wait();
            assert!(g.usable());
            for (i, v) in vs.iter().enumerate().step_by(7) {
                let slots = g.search_slots(v, 16, g.indexed());
                assert_eq!(g.live_id(slots[0]), Some(i as u64 + 100), "parallel {parallel}");
            }
        }
    }

    #[test]
    fn encode_decode_round_trip() {
        let v = [0.3f32, -0.9, 0.1];
        let p = encode(&v);
        assert_eq!(p.len(), 3 + SCALE_BYTES);
        let (codes, scale) = decode(&p);
        assert_eq!(codes, [42, -127, 14]);
        assert_eq!(scale, 0.9 / 127.0);
    }

    #[test]
    fn graph_tombstones_and_sampling() {
        let p = HnswParams::default();
        let mut g = Graph::build(2, &p, Vec::new(), 8).unwrap();
        for id in 0..8u64 {
            let a = id as f32 * 0.3;
            g.insert(id, encode(&[a.cos(), a.sin()]));
        }
        assert_eq!(g.sample_pass(&|_| true), (256, 256));
        assert!(g.remove(3));
        assert!(!g.remove(3));
        g.insert(4, encode(&[1.0, 0.0])); // replace: old slot of 4 becomes a tombstone
        assert_eq!(g.tombstones(), 2);
        assert_eq!(g.points(), 9);
        let (pass, seen) = g.sample_pass(&|_| true);
        assert_eq!(seen, 256);
        assert!((150..=240).contains(&pass), "{pass}"); // 7 of 9 slots live
        assert_eq!(g.live_id(3), None);
        assert_eq!(g.live_id(8), Some(4));
        g.wait();
        assert_eq!(g.indexed(), 9);
        assert!(g.usable());
        let slots = g.search_slots(&[1.0, 0.0], 9, g.indexed());
        assert!(slots.contains(&8));
        assert!(g.search_slots(&[1.0, 0.0], 9, 8).iter().all(|&s| s < 8));
    }
}

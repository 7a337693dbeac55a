//! Per-namespace search indexes: a vector index (a quantised scan with exact
//! rescoring, switching to HNSW past a size threshold) and a BM25 lexical
//! index with CJK-aware tokenisation.
//!
//! Both indexes are plain single-owner structures: the engine mutates them
//! from its writer thread (`&mut self`) and searches them from reader threads
//! (`&self`, under a read lock). They are `Send + Sync` and hold no locks of
//! their own beyond those inside `hnsw_rs` and the lock that publishes a
//! graph's searched copy (held only to take or replace the reference).
//!
//! Everything is deterministic: the same sequence of calls builds the same
//! structures and returns the same results (ties are broken by smaller id).

mod exact;
mod hnsw;
mod lexical;
pub(crate) mod saved;
mod view;

use std::fmt;

pub(crate) use hnsw::Backlog as GraphBacklog;
pub use hnsw::HnswParams;
pub use lexical::{query_names, relation_words, LexicalIndex, BIGRAM_WEIGHT, BM25_B, BM25_K1, RELATIONS};

use crate::embed::quant;
use exact::{rescore_count, ExactStore, FilterPlan, Hit, TopK};
use hnsw::Graph;

/// Planner cost of a graph search with candidate list `ef`, in units of one
/// streamed row of an unquantised exact scan: each list entry expands about
/// `2·M` layer-0 neighbours, each an `i8` distance at a random address of
/// the searched copy of the graph (see `view`) plus heap work. Measured in
/// `benches/index.rs` (384-d, ef 64, M 16, thread CPU p50): a graph search
/// at 100k vectors cost as much as a 3.0k-row scan of the `f32` vectors in
/// the same run (239 µs against 7.9 ms for 100k rows), i.e. ≈ 1.5
/// row-units per expanded neighbour. (Searching inside `hnsw_rs` itself had
/// cost 2–2.4.)
fn graph_cost(ef: usize, m: usize) -> f64 {
    const RANDOM_ACCESS_FACTOR: f64 = 1.5;
    ef as f64 * 2.0 * m.clamp(2, 128) as f64 * RANDOM_ACCESS_FACTOR
}

/// Cost of one row of the quantised scan (with its share of the exact
/// rescoring) in unquantised row-units: its p50 was 0.27–0.35× the `f32`
/// scan's at 10k–100k rows in `benches/index.rs` (0.25–0.34× with `f16`
/// rows against the bench's own `f32` scan).
const QUANT_ROW_COST: f64 = 0.3;

/// Planner cost, in unquantised row-units, of a scan of `live` rows where a
/// fraction `frac` passes the filter: a filter-first scan (below
/// [`FILTER_FIRST_BELOW`]) asks the filter for every row (2 % of a row
/// each) and scores passing rows only; otherwise every row is scored.
/// A row costs `row` units: 1 for the unquantised scan, [`QUANT_ROW_COST`]
/// for the quantised one.
fn scan_cost(live: usize, frac: f64, row: f64) -> f64 {
    const FILTER_CALL: f64 = 0.02;
    let per_row = if frac < FILTER_FIRST_BELOW { FILTER_CALL + frac * row } else { row };
    live as f64 * per_row
}

/// Vectors the graph's background thread may have queued before the
/// engine's writer waits for it between groups
/// ([`VectorIndex::graph_backlog`]). Every queued vector is in the graph's
/// tail, which each search scans (`i8` estimates, the best rescored); a
/// writer faster than the graph (0.1 ms
/// of background time per vector at `ef_construction` 100, more as it
/// grows, see [`HnswParams::exact_threshold`]) would grow the tail without bound,
/// until every search, the near-duplicate check of each write among them,
/// scanned the namespace. With the wait, a write costs what the graph's
/// insert costs, whatever the store's size. 1,024 rows of tail cost less
/// than 0.1 ms at 384-d (`view`'s figure for exact scoring); seed value,
/// not tuned.
pub(crate) const GRAPH_BACKLOG: usize = 1024;

/// Candidate list of a graph search for the nearest vectors only
/// ([`VectorIndex::search_near`], the near-duplicate check of every
/// write): a restatement lies at a cosine of at least the near-duplicate
/// threshold (0.85–0.95 by model), far nearer than the other neighbours,
/// and a greedy search reaches it with a short list.
const NEAR_EF: usize = 16;

/// Below this estimated fraction of ids passing the filter, an exact scan
/// asks the filter first and computes dot products only for passing ids.
const FILTER_FIRST_BELOW: f64 = 0.25;

/// A dot product of unit vectors as a cosine: clamped to `[-1, 1]`, which
/// rounding (of the vectors to `f32` and `f16`, and of the sum) can leave by
/// a few 10⁻⁵.
fn clamp_cosine(dot: f32) -> f32 {
    dot.clamp(-1.0, 1.0)
}

/// Vector index for one namespace: cosine similarity over L2-normalised
/// vectors of a fixed dimension, keyed by `u64` memory ids.
///
/// Every vector is kept in a contiguous row-major store (`len × dim`
/// IEEE 754 binary16 components, each the nearest `f16` to the `f32` given:
/// relative change ≤ 2⁻¹¹ (components under 2⁻¹⁴ in magnitude become
/// subnormals, absolute change ≤ 2⁻²⁵), so a cosine of unit vectors moves
/// by at most 2⁻¹¹ + 2⁻²⁵·‖q‖₁ (< 0.0005 at 384-d); half the memory
/// of `f32` rows) next to its `i8` codes (`dim` bytes and one `f32` scale per
/// vector, see `quant`). The stored vector is the `f16` row: every similarity
/// the index reports is the `f32` dot product of the query with it,
/// whichever path found it ([`similarity`](Self::similarity)). While fewer
/// than [`HnswParams::exact_threshold`] vectors are live, search is a scan of
/// the codes that keeps the best `max(k, 4) · `[`rescore_factor`](HnswParams::rescore_factor)
/// candidates by their integer estimate and rescores them with the rows
/// (or, with `rescore_factor` 0, a scan of every row).
///
/// When the live count reaches the threshold, an HNSW graph is built **off
/// the calling thread**: the index hands the codes of the live vectors
/// (ascending id order) to a background thread of the graph and returns at
/// once; the thread builds them with `hnsw_rs` (in parallel with
/// [`HnswParams::parallel_build`]), copies the graph into flat arrays of
/// links and codes, and drops the `hnsw_rs` graph; searches keep scanning
/// until that copy is published, then use it. Later inserts are queued to
/// the same thread, which inserts them into its copy one at a time (the
/// same algorithm) and publishes the copy whenever it is 1/64 of the
/// published one (256 to 2,048 vectors) ahead; a search also scans the
/// vectors not yet in the published copy (the graph's *tail*) exactly and
/// merges them, so a vector is found from the moment `insert` returns. The
/// caller's cost per insert is the store update plus an encode and a
/// channel send, whatever the graph's size;
/// [`wait_for_graph`](Self::wait_for_graph) blocks until the queue is empty
/// and the published copy holds every vector.
///
/// The graph cannot delete, so removals leave tombstones that are skipped at
/// search time; when tombstones exceed
/// [`HnswParams::rebuild_tombstone_ratio`] of the graph's points, a new
/// graph is built from the live vectors the same way (searches scan until
/// it is ready). The graph is dropped again when the live count falls
/// below 4/5 of the threshold. Building costs one insertion per live
/// vector on the background thread (measured in `benches/index.rs` at the
/// default `ef_construction`, 384-d, 100k: see the bench's output for the
/// build rate, sequential and parallel).
pub struct VectorIndex {
    dim: usize,
    params: HnswParams,
    store: ExactStore,
    graph: Option<Graph>,
    /// While set, inserts fill the store only: no graph is built (see
    /// [`hold_graph`](Self::hold_graph)).
    held: bool,
}

impl VectorIndex {
    /// An empty index for vectors of `dim` components.
    ///
    /// `dim` is fixed for the life of the index (384 for all-MiniLM-L6-v2).
    /// Nothing is allocated until the first insert.
    pub fn new(dim: usize, params: HnswParams) -> Self {
        VectorIndex { dim, params, store: ExactStore::new(dim), graph: None, held: false }
    }

    /// Number of components of every vector in this index.
    pub fn dim(&self) -> usize {
        self.dim
    }

    /// The parameters this index was created with.
    pub fn params(&self) -> &HnswParams {
        &self.params
    }

    /// Stores `v` as the vector of `id`, replacing any previous vector of
    /// that id.
    ///
    /// `v` must have exactly [`dim`](Self::dim) finite components and unit L2
    /// norm; the caller validates this. Debug builds panic on a wrong length
    /// or a non-finite component; release builds ignore a vector of the wrong
    /// length (the index is left unchanged) and do not check finiteness.
    ///
    /// Cost: O(dim) in exact mode; one HNSW insertion (O(ef_construction ·
    /// M · log n) distance evaluations) in graph mode; building or
    /// rebuilding the graph, when triggered, costs one insertion per live
    /// vector.
    pub fn insert(&mut self, id: u64, v: &[f32]) {
        debug_assert_eq!(v.len(), self.dim, "vector length must equal the index dimension");
        debug_assert!(v.iter().all(|x| x.is_finite()), "vector components must be finite");
        if v.len() != self.dim {
            return;
        }
        self.store.insert(id, v);
        match &mut self.graph {
            Some(g) => {
                if let Some((c, s)) = self.store.codes(id) {
                    g.insert(id, hnsw::point(c, s));
                }
                self.maintain();
            }
            None => {
                if !self.held && self.store.len() >= self.params.exact_threshold {
                    self.build_graph();
                }
            }
        }
    }

    /// Holds back the graph while a store loads: until
    /// [`release_graph`](Self::release_graph), inserts only fill the store
    /// (searches scan), so that the graph is then either loaded from the
    /// graph file or built once from every vector. Drops a graph held now.
    pub(crate) fn hold_graph(&mut self) {
        self.held = true;
        self.graph = None;
    }

    /// Ends [`hold_graph`](Self::hold_graph): adopts `saved` when it
    /// matches the index exactly (same `dim`, `M`, `ef_construction` and
    /// seed; every live slot's id live in the store with the very codes and
    /// scale the store holds; no id live twice), then queues the live
    /// vectors it lacks for insertion (ascending id order), as later
    /// inserts would be; otherwise builds the graph from the live vectors
    /// when they reach the threshold. Returns whether `saved` was adopted.
    ///
    /// # Errors
    /// None: when the system refuses the graph's thread, the index stays
    /// without a graph (searches scan) and returns false.
    pub(crate) fn release_graph(&mut self, saved: Option<saved::SavedGraph>) -> bool {
        self.held = false;
        let adopted = saved.is_some_and(|s| self.adopt(s));
        if !adopted && self.graph.is_none() && self.store.len() >= self.params.exact_threshold {
            self.build_graph();
        }
        adopted
    }

    fn adopt(&mut self, s: saved::SavedGraph) -> bool {
        let m = self.params.m.clamp(2, 128);
        if s.m != m
            || s.ef_construction != self.params.ef_construction.max(m)
            || s.seed != self.params.seed
            || s.view.dim != self.dim
            || self.store.len() < self.params.exact_threshold.saturating_mul(4) / 5
        {
            return false;
        }
        for (slot, (&id, &live)) in s.ids.iter().zip(&s.live).enumerate() {
            if live && self.store.codes(id) != Some((s.view.codes.row(slot), s.view.scales[slot])) {
                return false;
            }
        }
        let mut missing: Vec<u64> = self.store.ids().to_vec();
        let held: std::collections::HashSet<u64> =
            s.ids.iter().zip(&s.live).filter(|(_, &l)| l).map(|(&id, _)| id).collect();
        missing.retain(|id| !held.contains(id));
        missing.sort_unstable();
        let expected = self.store.len() + self.store.len() / 2;
        let Ok(Some(mut g)) = Graph::from_view(self.dim, &self.params, s.view, s.ids, s.live, expected) else {
            return false;
        };
        for id in missing {
            if let Some((c, sc)) = self.store.codes(id) {
                g.insert(id, hnsw::point(c, sc));
            }
        }
        self.graph = Some(g);
        self.maintain();
        true
    }

    /// The graph's published view and slot table, to be saved in the graph
    /// file; `None` without a graph or while its first build runs.
    pub(crate) fn saved_graph(&self) -> Option<saved::GraphToSave<'_>> {
        let (view, ids, live) = self.graph.as_ref()?.published()?;
        let m = self.params.m.clamp(2, 128);
        Some(saved::GraphToSave {
            view,
            ids,
            live,
            m,
            ef_construction: self.params.ef_construction.max(m),
            seed: self.params.seed,
        })
    }

    /// Removes the vector of `id`. Returns `false` if there was none.
    ///
    /// The id is never returned by [`search`](Self::search) afterwards. In
    /// graph mode this may trigger a rebuild or, below 4/5 of the threshold,
    /// drop the graph.
    pub fn remove(&mut self, id: u64) -> bool {
        if !self.store.remove(id) {
            return false;
        }
        if let Some(g) = &mut self.graph {
            g.remove(id);
        }
        self.maintain();
        true
    }

    /// Whether `id` has a live vector.
    pub fn contains(&self, id: u64) -> bool {
        self.store.contains(id)
    }

    /// The stored vector of `id` (`dim` components), if live: the vector
    /// given to [`insert`](Self::insert) with each component rounded to the
    /// nearest IEEE 754 binary16 value (relative change ≤ 2⁻¹¹; absolute
    /// ≤ 2⁻²⁵ under 2⁻¹⁴, the subnormal range) and widened
    /// back to `f32`. Allocates the returned `Vec`.
    pub fn get(&self, id: u64) -> Option<Vec<f32>> {
        self.store.vector(id)
    }

    /// The similarity of `query` to the stored vector of `id`, if live: the
    /// score [`search`](Self::search) gives `id` for the same query (the
    /// `f32` dot product with the stored vector of [`get`](Self::get), bit for
    /// bit, clamped to `[-1, 1]` as there), without allocating. `query`
    /// should have [`dim`](Self::dim) components; extra components of either
    /// side are ignored.
    pub fn similarity(&self, id: u64, query: &[f32]) -> Option<f32> {
        self.store.similarity(id, query).map(clamp_cosine)
    }

    /// Number of live vectors.
    pub fn len(&self) -> usize {
        self.store.len()
    }

    /// Whether no vector is live.
    pub fn is_empty(&self) -> bool {
        self.store.len() == 0
    }

    /// Whether an HNSW graph serves searches now (otherwise search is a
    /// scan): one exists and its background build is done.
    pub fn is_hnsw(&self) -> bool {
        self.graph.as_ref().is_some_and(Graph::usable)
    }

    /// Whether a graph exists but is still being built, so that searches
    /// scan.
    pub fn graph_building(&self) -> bool {
        self.graph.as_ref().is_some_and(|g| !g.usable() && !g.failed())
    }

    /// Vectors queued for the graph's background thread or inserted but not
    /// yet in the copy of the graph that searches use, so scored exactly
    /// (the whole build while building; 0 without a graph).
    pub fn graph_pending(&self) -> usize {
        self.graph.as_ref().map_or(0, |g| g.points() - g.indexed())
    }

    /// A handle on the graph's background thread while more than
    /// [`GRAPH_BACKLOG`] vectors wait for it; `None` without a graph, below
    /// that, or while the graph's first build runs (searches scan then). The
    /// engine's writer waits on it between groups, outside every lock, so
    /// that inserts never outrun the graph by more than that and searches
    /// keep the graph's speed (see [`GRAPH_BACKLOG`]).
    pub(crate) fn graph_backlog(&self) -> Option<hnsw::Backlog> {
        self.graph.as_ref()?.backlog(GRAPH_BACKLOG)
    }

    /// Holds the graph's background thread back (or lets it go): tests of
    /// what waits for it.
    #[cfg(test)]
    pub(crate) fn pause_graph(&self, paused: bool) {
        if let Some(g) = &self.graph {
            g.pause(paused);
        }
    }

    /// Blocks until the graph's background thread has inserted every
    /// queued vector and copied them into the searched view (returns at
    /// once without a graph). For tests,
    /// benchmarks and callers that want graph-speed searches right after
    /// a bulk load; searches are correct without it.
    pub fn wait_for_graph(&self) {
        if let Some(g) = &self.graph {
            g.wait();
        }
    }

    /// The `k` live vectors most similar to `query` among ids for which
    /// `filter(id)` is true, as `(id, cosine similarity)`, best first (ties:
    /// smaller id first). Similarity is the dot product of unit vectors,
    /// clamped to `[-1, 1]` (rounding puts the dot product of a vector with
    /// itself up to about 2·10⁻⁵ past 1, measured with MiniLM), computed
    /// exactly from the stored (`f16`) vector whichever path found it
    /// ([`similarity`](Self::similarity)). The
    /// candidates are ranked approximately: a scan ranks by the `i8` estimate
    /// and rescores the best `max(k, 4) · rescore_factor` exactly (recall@10
    /// against an exact `f32` scan of the vectors as given ≥ 0.98, measured
    /// in `benches/index.rs`; the unit tests check it against a scan of
    /// every stored row), a
    /// graph search rescores its whole candidate list.
    ///
    /// `query` must have [`dim`](Self::dim) components and unit norm (debug
    /// builds assert the length; release builds return nothing on a wrong
    /// length); a query with a NaN or infinite component returns nothing.
    /// `k == 0` returns nothing. Fewer than `k` results means fewer
    /// than `k` live ids pass the filter (in graph mode the result is
    /// approximate in ranking, never short: when the graph cannot supply `k`
    /// passing hits the search falls back to an exact scan).
    ///
    /// `filter` is first called on a deterministic sample of ids (up to 64
    /// in exact mode, 256 in graph mode) to estimate its selectivity, then on
    /// candidates; an id may be asked more than once per search, so keep the
    /// filter cheap and free of side effects.
    ///
    /// Strategy in graph mode: with an estimated fraction `f` of graph nodes
    /// that are live and pass the filter (from the sample), the graph is
    /// asked for `ef = max(ef_search, k) / f` candidates, doubling `ef` until
    /// `k` of them pass. The exact scan is used instead whenever it is
    /// estimated to be cheaper: when `ef · 2·M · 3` exceeds the scan's cost
    /// (`len` dot products, or only the passing share for a selective
    /// filter), or when nothing in the sample passes. So a graph-mode index
    /// answers small or very selective queries by scanning.
    pub fn search(&self, query: &[f32], k: usize, filter: &dyn Fn(u64) -> bool) -> Vec<(u64, f32)> {
        self.search_ef(query, k, filter, self.params.ef_search)
    }

    /// [`search`](Self::search) for the vectors nearest `query` only, as
    /// the near-duplicate check asks: in graph mode with a candidate list
    /// of [`NEAR_EF`] instead of `ef_search` (a scan is the same).
    pub(crate) fn search_near(&self, query: &[f32], k: usize, filter: &dyn Fn(u64) -> bool) -> Vec<(u64, f32)> {
        self.search_ef(query, k, filter, NEAR_EF)
    }

    fn search_ef(&self, query: &[f32], k: usize, filter: &dyn Fn(u64) -> bool, ef: usize) -> Vec<(u64, f32)> {
        debug_assert_eq!(query.len(), self.dim, "query length must equal the index dimension");
        if k == 0 || query.len() != self.dim || self.store.len() == 0 || !query.iter().all(|x| x.is_finite()) {
            return Vec::new();
        }
        let mut hits = match &self.graph {
            Some(g) if g.usable() => self.search_graph(g, query, k, filter, ef),
            _ => {
                let plan = self.exact_filter_plan(filter);
                self.scan(query, k, filter, plan)
            }
        };
        // After ranking, so that the order is the unclamped one.
        for h in &mut hits {
            h.1 = clamp_cosine(h.1);
        }
        hits
    }

    /// A scan of every live row: quantised with exact rescoring, or of the
    /// `f16` rows themselves when [`HnswParams::rescore_factor`] is 0.
    fn scan(&self, query: &[f32], k: usize, filter: &dyn Fn(u64) -> bool, plan: FilterPlan) -> Vec<(u64, f32)> {
        if self.params.rescore_factor == 0 {
            return self.store.search(query, k, filter, plan == FilterPlan::First);
        }
        let mut codes = vec![0i8; self.dim];
        quant::quantize(query, &mut codes);
        let candidates = rescore_count(k, self.params.rescore_factor);
        self.store.search_quantized(query, &codes, k, candidates, filter, plan)
    }

    /// Estimated heap bytes held: the contiguous store (`len × dim × 3`: `f16`
    /// rows and `i8` codes, plus scales and id maps) and, in graph mode, the
    /// graph (which keeps its own `i8` copy of every vector, live or
    /// tombstoned, plus links; see the benchmark for
    /// measured bytes per vector). Capacity-based, so it may exceed the bytes
    /// in use.
    pub fn memory_bytes(&self) -> usize {
        std::mem::size_of::<Self>() + self.store.memory_bytes() + self.graph.as_ref().map_or(0, Graph::memory_bytes)
    }

    /// How a scan asks `filter`, from a sample of 64 rows: of every row
    /// first when under [`FILTER_FIRST_BELOW`] of them pass, after
    /// rescoring when all do, else of the rows that rank (see
    /// [`FilterPlan`]). A store under 256 rows is not sampled.
    fn exact_filter_plan(&self, filter: &dyn Fn(u64) -> bool) -> FilterPlan {
        const SAMPLE: usize = 64;
        let ids = self.store.ids();
        if ids.len() < 4 * SAMPLE {
            return FilterPlan::Ranked;
        }
        let pass = exact::sample_positions(ids.len(), SAMPLE).filter(|&row| filter(ids[row])).count();
        if (pass as f64) < FILTER_FIRST_BELOW * SAMPLE as f64 {
            FilterPlan::First
        } else if pass == SAMPLE {
            FilterPlan::AfterRescore
        } else {
            FilterPlan::Ranked
        }
    }

    fn search_graph(
        &self,
        g: &Graph,
        query: &[f32],
        k: usize,
        filter: &dyn Fn(u64) -> bool,
        ef_search: usize,
    ) -> Vec<(u64, f32)> {
        let (pass, seen) = g.sample_pass(filter);
        if pass == 0 || seen == 0 {
            return self.scan(query, k, filter, FilterPlan::First);
        }
        // Share of graph slots that are live and pass; share of live rows
        // that pass (the graph also holds tombstones).
        let graph_frac = pass as f64 / seen as f64;
        let live = self.store.len();
        let live_frac = (graph_frac * g.points() as f64 / live.max(1) as f64).min(1.0);
        let row = if self.params.rescore_factor == 0 { 1.0 } else { QUANT_ROW_COST };
        let scan = scan_cost(live, live_frac, row);
        // The tail (slots queued, or inserted since the graph's searched
        // copy was made) is searched once (`search_tail`) and its best `k`
        // passing hits are merged into every round: no other tail hit can
        // be among a round's best `k`, and while fewer than `k` pass, every
        // passing one is kept, so the count of hits found is the same.
        let indexed = g.indexed();
        let tail_rows = g.points() - indexed;
        let mut tail = Vec::new();
        if (tail_rows as f64) < scan {
            tail = self.search_tail(g, query, k, filter);
        }
        // The graph's list comes nearest first by the `i8` estimate: as in
        // a scan, only the first `max(k, 4) · rescore_factor` passing slots
        // of a round are rescored from their rows; the rest count as found.
        let rescored =
            if self.params.rescore_factor == 0 { usize::MAX } else { rescore_count(k, self.params.rescore_factor) };
        let want = ef_search.max(k);
        let mut ef = (want as f64 / graph_frac).ceil() as usize;
        while (tail_rows as f64) + graph_cost(ef, self.params.m) < scan {
            #[cfg(test)]
            tests::GRAPH_SEARCHES.with(|c| c.set(c.get() + 1));
            let slots = g.search_slots(query, ef, indexed);
            let mut top = TopK::new(k);
            let mut found = tail.len();
            for hit in &tail {
                top.push(*hit);
            }
            let mut passing = 0;
            for slot in &slots {
                let Some(id) = g.live_id(*slot) else { continue };
                if !filter(id) {
                    continue;
                }
                passing += 1;
                if passing > rescored {
                    found += 1;
                    continue;
                }
                if let Some(score) = self.store.similarity(id, query) {
                    found += 1;
                    top.push(Hit { score, id });
                }
            }
            if found >= k {
                return top.into_sorted();
            }
            if slots.len() < ef {
                break; // the graph returned everything it could reach
            }
            ef = ef.saturating_mul(2);
        }
        let plan = if live_frac < FILTER_FIRST_BELOW { FilterPlan::First } else { FilterPlan::Ranked };
        self.scan(query, k, filter, plan)
    }

    /// The best `k` passing hits among the graph's tail (slots from
    /// [`Graph::indexed`] on), exactly scored, in no particular order: like
    /// [`scan`](Self::scan), ranked first by the `i8` estimate (the best
    /// `max(k, 4) · rescore_factor` passing rows kept) and those rescored
    /// from their rows; every row exactly with `rescore_factor` 0. The
    /// filter is asked only for a row that would enter the kept set.
    fn search_tail(&self, g: &Graph, query: &[f32], k: usize, filter: &dyn Fn(u64) -> bool) -> Vec<Hit> {
        let slots = g.indexed()..g.points();
        if self.params.rescore_factor == 0 {
            let mut best = TopK::new(k);
            for slot in slots {
                let Some(id) = g.live_id(slot) else { continue };
                let Some(score) = self.store.similarity(id, query) else { continue };
                let hit = Hit { score, id };
                if best.would_accept(hit) && filter(id) {
                    best.push(hit);
                }
            }
            return best.into_hits();
        }
        let mut codes = vec![0i8; self.dim];
        quant::quantize(query, &mut codes);
        let mut cand = TopK::new(rescore_count(k, self.params.rescore_factor));
        for slot in slots {
            let Some(id) = g.live_id(slot) else { continue };
            let Some((row, scale)) = self.store.codes(id) else { continue };
            let hit = Hit { score: scale * quant::dot_i8(&codes, row) as f32, id };
            if cand.would_accept(hit) && filter(id) {
                cand.push(hit);
            }
        }
        let mut best = TopK::new(k);
        for Hit { id, .. } in cand.into_hits() {
            if let Some(score) = self.store.similarity(id, query) {
                best.push(Hit { score, id });
            }
        }
        best.into_hits()
    }

    /// Keeps the graph in its intended state after a change: dropped below
    /// 4/5 of the threshold or when its thread failed, rebuilt when
    /// tombstones exceed the ratio.
    fn maintain(&mut self) {
        let Some(g) = &self.graph else { return };
        let live = self.store.len();
        if live < self.params.exact_threshold.saturating_mul(4) / 5 || g.failed() {
            self.graph = None;
            return;
        }
        let ratio = f64::from(self.params.rebuild_tombstone_ratio);
        if g.tombstones() > 0 && g.tombstones() as f64 > ratio * g.points() as f64 {
            self.build_graph();
        }
    }

    /// Starts (re)building the graph from the live vectors in ascending id
    /// order, on the graph's background thread. If the system refuses the
    /// thread, the index stays without a graph (searches scan) and tries
    /// again at the next insert.
    fn build_graph(&mut self) {
        let mut ids = self.store.ids().to_vec();
        ids.sort_unstable();
        let points: Vec<(u64, Vec<i8>)> =
            ids.into_iter().filter_map(|id| self.store.codes(id).map(|(c, s)| (id, hnsw::point(c, s)))).collect();
        // Room for 50 % growth before the graph's slot tables reallocate.
        let expected = points.len() + points.len() / 2;
        self.graph = Graph::build(self.dim, &self.params, points, expected).ok();
    }
}

impl fmt::Debug for VectorIndex {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("VectorIndex")
            .field("dim", &self.dim)
            .field("len", &self.len())
            .field("hnsw", &self.is_hnsw())
            .field("graph_tombstones", &self.graph.as_ref().map_or(0, Graph::tombstones))
            .field("params", &self.params)
            .finish()
    }
}

#[cfg(test)]
mod tests;

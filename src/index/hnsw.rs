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

use hnsw_rs::prelude::{Distance, Hnsw};

use super::exact::{sample_positions, IdMap};
use super::quant::{dot_i8, quantize};

/// HNSW construction and search parameters, named as in Malkov & Yashunin,
/// "Efficient and robust approximate nearest neighbor search using
/// Hierarchical Navigable Small World graphs" (IEEE TPAMI 2018, arXiv:1603.09320).
#[derive(Clone, Debug, PartialEq)]
pub struct HnswParams {
    /// `M`: links kept per node on layers ≥ 1; layer 0 keeps `2·M` (the
    /// paper's `M_max0 = 2·M`). Default 16, inside the paper's recommended
    /// 5–48 range; clamped to `2..=128` (`hnsw_rs` allows at most 256 links).
    pub m: usize,
    /// `efConstruction`: candidate-list size while inserting. Default 200
    /// (the value used in the paper's and hnswlib's benchmarks). Clamped to
    /// at least `m`.
    pub ef_construction: usize,
    /// `ef`: candidate-list size while searching; the effective value is
    /// `max(ef_search, k)`, raised further to compensate for tombstones and
    /// the caller's filter. Default 64: measured recall@10 0.99 against exact
    /// search on 100k clustered 384-d vectors (`benches/index.rs`) and ≥ 0.95
    /// on 20k (`tests/index_hnsw.rs`).
    pub ef_search: usize,
    /// Live-vector count at which the index switches from the quantised
    /// scan to HNSW. Default 15 000: the measured crossover in
    /// `benches/index.rs` (384-d, clustered, k 10, default `m`,
    /// `ef_construction`, `ef_search` and `rescore_factor`; one run on a
    /// loaded 2-core machine, thread CPU time): the quantised scan's p50 is
    /// 318 µs at 10k and 1036 µs at 30k (≈ 36 µs per 1k vectors), the graph's
    /// 443 µs and 652 µs, so the lines cross near 15k. Below it a graph would
    /// be slower than the scan and cost its memory (≈ 2.4× the store) and its
    /// build time (≈ 1 ms per vector at `ef_construction` 200 on one core).
    /// Once built, the graph is dropped again only when the live
    /// count falls below `exact_threshold · 4/5` (hysteresis, so that
    /// inserts and removals around the threshold do not rebuild repeatedly).
    pub exact_threshold: usize,
    /// Seed reserved for the graph's level sampling. **Currently has no
    /// effect**: `hnsw_rs` 0.3.5 seeds its level generator with the fixed
    /// constant 397 and offers no way to change it. Construction is
    /// nevertheless deterministic because insertion is sequential. Default 0.
    pub seed: u64,
    /// Fraction of graph nodes that may be tombstones before the graph is
    /// rebuilt from the live vectors. Default 0.15: tombstones still cost
    /// traversal work and force over-fetching, so search cost grows roughly
    /// as `1 / (1 − ratio)`; at 0.15 that is ≤ 18 % extra, while a rebuild
    /// costs about as much as re-inserting every live vector. Values ≤ 0
    /// rebuild on every removal from the graph.
    pub rebuild_tombstone_ratio: f32,
    /// Candidates per requested result that a scan keeps by its `i8`
    /// estimate before rescoring them with the exact `f32` dot product: a
    /// top-`k` scan rescores `max(k, 4) · rescore_factor` rows. 0 turns
    /// quantisation off (every row's score is computed in `f32`: the
    /// reference the benchmark measures against). Default 4: in
    /// `benches/index.rs` (clustered 384-d vectors, 10k and 100k) a factor of
    /// 4 gives recall@10 ≥ 0.999 against the `f32` scan.
    pub rescore_factor: usize,
}

impl Default for HnswParams {
    fn default() -> Self {
        HnswParams {
            m: 16,
            ef_construction: 200,
            ef_search: 64,
            exact_threshold: 15_000,
            seed: 0,
            rebuild_tombstone_ratio: 0.15,
            rescore_factor: 4,
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
fn encode(v: &[f32]) -> Vec<i8> {
    let mut out = vec![0i8; v.len() + SCALE_BYTES];
    let (codes, tail) = out.split_at_mut(v.len());
    let scale = quantize(v, codes);
    for (t, b) in tail.iter_mut().zip(scale.to_le_bytes()) {
        *t = i8::from_le_bytes([b]);
    }
    out
}

/// The codes and scale of a point made by [`encode`]; an input shorter than
/// the scale bytes decodes as no codes and scale 0.
#[inline]
fn decode(p: &[i8]) -> (&[i8], f32) {
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

/// An HNSW graph with slot bookkeeping and tombstones.
pub(crate) struct Graph {
    hnsw: Hnsw<'static, i8, CodeDistance>,
    /// Memory id of each slot (graph data id).
    slot_ids: Vec<u64>,
    /// Whether each slot is the current vector of its id.
    slot_live: Vec<bool>,
    /// Live slot of each id.
    id_slot: IdMap<usize>,
    tombstones: usize,
    dim: usize,
    m: usize,
}

impl Graph {
    /// Empty graph sized for about `expected` points (`hnsw_rs` only uses the
    /// hint to pre-allocate its per-layer tables; they grow past it).
    pub fn new(dim: usize, params: &HnswParams, expected: usize) -> Self {
        let m = params.m.clamp(2, 128);
        let ef_c = params.ef_construction.max(m);
        Graph {
            hnsw: Hnsw::new(m, expected.max(1), MAX_LAYER, ef_c, CodeDistance),
            slot_ids: Vec::with_capacity(expected),
            slot_live: Vec::with_capacity(expected),
            id_slot: IdMap::default(),
            tombstones: 0,
            dim,
            m,
        }
    }

    /// Inserts `id` (sequentially, so the graph depends only on call order),
    /// tombstoning its previous slot if any.
    pub fn insert(&mut self, id: u64, v: &[f32]) {
        self.remove(id);
        let slot = self.slot_ids.len();
        self.hnsw.insert_slice((&encode(v), slot));
        self.slot_ids.push(id);
        self.slot_live.push(true);
        self.id_slot.insert(id, slot);
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

    /// Points in the graph, live and tombstoned.
    pub fn points(&self) -> usize {
        self.slot_ids.len()
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

    /// Up to `ef` nearest slots to `query` by estimated distance (graph
    /// order, nearest first), including tombstones. `ef` is the search list
    /// size.
    pub fn search_slots(&self, query: &[f32], ef: usize) -> Vec<usize> {
        self.hnsw.search(&encode(query), ef, ef).into_iter().map(|n| n.d_id).collect()
    }

    /// Heap bytes held, estimated from `hnsw_rs` 0.3.5's layout: per point its
    /// codes and scale, an `Arc<Point>` with its lock and 16 neighbour-list
    /// headers (one per possible layer), `2·M` layer-0 links and `M` links on
    /// the ~1/M of points that reach layer 1 (each link an 8-byte pointer to
    /// an `Arc` of a 16-byte record, a 48-byte malloc chunk, plus spare list
    /// capacity), allocator headers, and a slot in a per-layer table; plus
    /// this wrapper's slot maps. Calibrated against resident-memory growth
    /// while building 10k × 384 in `benches/index.rs` (within a few %).
    pub fn memory_bytes(&self) -> usize {
        const LINK: usize = 64;
        let per_point = self.dim + SCALE_BYTES // codes and scale
            + 160                         // Point, Arc/RwLock, Vec headers, malloc headers
            + MAX_LAYER * 24              // neighbour Vec headers, one per layer
            + 2 * self.m * LINK           // layer-0 links
            + 8; // entry in points_by_layer
        let upper_layers = self.points() / self.m.max(2) * self.m * LINK;
        self.points() * per_point
            + upper_layers
            + self.slot_ids.capacity() * 8
            + self.slot_live.capacity()
            + self.id_slot.capacity() * (16 + 1) * 8 / 7
    }
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
        let mut g = Graph::new(2, &p, 8);
        for id in 0..8u64 {
            let a = id as f32 * 0.3;
            g.insert(id, &[a.cos(), a.sin()]);
        }
        assert_eq!(g.sample_pass(&|_| true), (256, 256));
        assert!(g.remove(3));
        assert!(!g.remove(3));
        g.insert(4, &[1.0, 0.0]); // replace: old slot of 4 becomes a tombstone
        assert_eq!(g.tombstones(), 2);
        assert_eq!(g.points(), 9);
        let (pass, seen) = g.sample_pass(&|_| true);
        assert_eq!(seen, 256);
        assert!((150..=240).contains(&pass), "{pass}"); // 7 of 9 slots live
        assert_eq!(g.live_id(3), None);
        assert_eq!(g.live_id(8), Some(4));
        let slots = g.search_slots(&[1.0, 0.0], 9);
        assert!(slots.contains(&8));
    }
}

//! The flat graph that HNSW searches run on, and that grows by insertion
//! after its bulk build.
//!
//! `hnsw_rs` 0.3.5 keeps every point behind an `Arc` with a lock, every link
//! as an `Arc` to its own heap record, and searches with a SipHash set of
//! visited points and a heap allocation per candidate; at 100k 384-d points
//! that bookkeeping, not the distances, was most of a search (628 µs p50 at
//! `ef` 64, while its ~2,000 `i8` distances take under 100 µs), and it held
//! about 3 KB per point (a neighbour-list header for each of its 16 layers,
//! a 48-byte heap record per link). A [`View`] holds the same graph as flat
//! arrays, about `dim + 4·(2·M) + 13` bytes per point (525 at 384-d,
//! `M` 16): codes and scales by slot, layer-0 links in fixed strides, the
//! few upper-layer links beside them, and a search that marks visited slots
//! in a reusable per-thread array and computes a node's unvisited
//! neighbours' distances in one batch.
//!
//! The background worker of [`Graph`](super::hnsw::Graph) builds a graph's
//! bulk with `hnsw_rs` (in parallel), copies it into a view
//! ([`View::copy`]) and drops the `hnsw_rs` graph; points that arrive later
//! are inserted into its own view ([`View::insert`], the same algorithm).
//! Readers take the published view by reference count, so a search never
//! waits for an insertion: the worker inserts into a private copy and
//! publishes it between batches. The copy shares the codes (in chunks of
//! 1,024 slots that never change once full) and copies the links, about
//! 145 of the 525 bytes per point.
//!
//! The search is the paper's (Malkov & Yashunin, TPAMI 2018, arXiv:1603.09320,
//! Algorithms 2 and 5): greedy descent with a candidate list of one from the
//! entry point through the upper layers, then a beam search of width `ef` on
//! layer 0.

use std::cell::RefCell;
use std::cmp::Reverse;
use std::collections::BinaryHeap;
use std::sync::Arc;

use hnsw_rs::prelude::Hnsw;

use super::hnsw::{decode, CodeDistance};
use crate::embed::quant::{dot_i8_gather_with, quantize};

/// No link (pads a node's link list to its stride).
pub(super) const NONE: u32 = u32::MAX;

/// A flat graph over slots `0..slots`: a copy of an `hnsw_rs` graph, or
/// one grown by [`View::insert`].
#[derive(Clone)]
pub(crate) struct View {
    /// Slots covered: `0..slots`, every one a graph node.
    pub(super) slots: usize,
    pub(super) dim: usize,
    /// Each slot's `dim` codes, in chunks shared between copies.
    pub(super) codes: Codes,
    /// Scale of each slot's codes.
    pub(super) scales: Vec<f32>,
    /// Layer-0 links: `slots × stride0`, each list padded with [`NONE`].
    pub(super) links0: Vec<u32>,
    pub(super) stride0: usize,
    /// Offset into `upper` of each slot's upper-layer lists, [`NONE`] for a
    /// slot with links on layer 0 only.
    pub(super) upper_at: Vec<u32>,
    /// Highest layer each slot's links are copied for: its level, or above
    /// it for a node that a node of a higher layer links to there. `hnsw_rs`
    /// gives a new point a list on each layer from its level up to the top
    /// (the point its search passed through there), but only a former entry
    /// point is ever linked to on a layer above its level (a later point
    /// that opened a new top layer keeps it as a neighbour there); the other
    /// lists cannot be reached and are left out.
    pub(super) depth: Vec<u8>,
    /// For a slot of depth `L ≥ 1`: `L` lists of `stride_up` links (layers
    /// `1..=L`), each padded with [`NONE`].
    pub(super) upper: Vec<u32>,
    pub(super) stride_up: usize,
    /// The entry point (a node of the top layer) and the top layer.
    pub(super) entry: u32,
    pub(super) top: u8,
}

/// Slots per chunk of [`Codes`] (a power of two: a row's chunk and place
/// are a shift and a mask). 1,024 slots of 384 codes are 384 KiB, the most
/// a copy of a view copies of its codes.
const CHUNK_SLOTS: usize = 1024;

/// The codes of a view's slots, `dim` per slot, in chunks of
/// [`CHUNK_SLOTS`] slots behind reference counts. A chunk is written only
/// while no other copy holds it: cloning a view shares every chunk, and the
/// copy that then appends to the last, partial chunk copies that one chunk
/// first (`Arc::make_mut`). Full chunks never change, so copies of a
/// growing graph hold its codes once.
#[derive(Clone)]
pub(super) struct Codes {
    dim: usize,
    slots: usize,
    chunks: Vec<Arc<Vec<i8>>>,
}

impl Codes {
    /// `slots` rows of zero codes.
    pub(super) fn zeroed(dim: usize, slots: usize) -> Codes {
        let mut chunks = Vec::with_capacity(slots.div_ceil(CHUNK_SLOTS));
        let mut left = slots;
        while left > 0 {
            let n = left.min(CHUNK_SLOTS);
            let mut chunk = Vec::with_capacity(CHUNK_SLOTS * dim);
            chunk.resize(n * dim, 0);
            chunks.push(Arc::new(chunk));
            left -= n;
        }
        Codes { dim, slots, chunks }
    }

    /// The codes of `slot` (`slot < slots`).
    #[inline]
    pub(super) fn row(&self, slot: usize) -> &[i8] {
        let at = (slot % CHUNK_SLOTS) * self.dim;
        &self.chunks[slot / CHUNK_SLOTS][at..at + self.dim]
    }

    /// The codes of `slot`, writable (copying its chunk if shared).
    pub(super) fn row_mut(&mut self, slot: usize) -> &mut [i8] {
        let at = (slot % CHUNK_SLOTS) * self.dim;
        &mut Arc::make_mut(&mut self.chunks[slot / CHUNK_SLOTS])[at..at + self.dim]
    }

    /// Appends a row: `codes`, zero-padded or cut to `dim`.
    fn push(&mut self, codes: &[i8]) {
        if self.slots.is_multiple_of(CHUNK_SLOTS) {
            self.chunks.push(Arc::new(Vec::with_capacity(CHUNK_SLOTS * self.dim)));
        }
        let last = self.chunks.last_mut().expect("a chunk with room");
        let chunk = Arc::make_mut(last);
        if chunk.capacity() < CHUNK_SLOTS * self.dim {
            chunk.reserve_exact(CHUNK_SLOTS * self.dim - chunk.len());
        }
        let n = codes.len().min(self.dim);
        chunk.extend_from_slice(&codes[..n]);
        chunk.resize(chunk.len() + self.dim - n, 0);
        self.slots += 1;
    }

    /// Heap bytes of the chunks (each counted in full, shared or not).
    fn bytes(&self) -> usize {
        self.chunks.iter().map(|c| c.capacity()).sum::<usize>() + self.chunks.capacity() * 8
    }

    /// Heap bytes of the chunks no other copy holds.
    fn own_bytes(&self) -> usize {
        self.chunks.iter().filter(|c| Arc::strong_count(c) == 1).map(|c| c.capacity()).sum::<usize>()
            + self.chunks.capacity() * 8
    }
}

thread_local! {
    /// Per-thread visited marks, reused across searches: slot `s` was
    /// visited by the current search when `marks[s] == stamp`.
    static VISITED: RefCell<Visited> = const { RefCell::new(Visited { marks: Vec::new(), stamp: 0 }) };
}

struct Visited {
    marks: Vec<u32>,
    stamp: u32,
}

impl Visited {
    /// Starts a search over `n` slots: a fresh stamp, the marks grown to `n`.
    fn begin(&mut self, n: usize) {
        if self.marks.len() < n {
            self.marks.resize(n, 0);
        }
        self.stamp = self.stamp.wrapping_add(1);
        if self.stamp == 0 {
            // Wrapped: old marks could equal the new stamp.
            self.marks.iter_mut().for_each(|m| *m = 0);
            self.stamp = 1;
        }
    }

    /// Marks `s`; returns whether it was unmarked.
    #[inline]
    fn first_visit(&mut self, s: u32) -> bool {
        let m = &mut self.marks[s as usize];
        let fresh = *m != self.stamp;
        *m = self.stamp;
        fresh
    }
}

/// An ordered, non-negative distance with its slot: the distance's bits
/// order as the distance does for non-negative floats.
type Entry = (u32, u32);

/// Buffers one search or insertion reuses across its layers and nodes: the
/// slots to score (`batch`), their integer dot products and their
/// distances.
#[derive(Default)]
struct Scratch {
    batch: Vec<u32>,
    dots: Vec<i32>,
    dist: Vec<u32>,
}

impl View {
    /// Copies the graph's points `0..slots` (data ids, as the owning graph
    /// inserts them) and their links, in one pass over the graph. `m` is the
    /// graph's `M`: `hnsw_rs` keeps at most `2·M` links on layer 0 and `M`
    /// above (longer lists would be cut). Every point of `hnsw` must have a
    /// data id below `slots`, and no insertion may run meanwhile.
    pub fn copy(hnsw: &Hnsw<'static, i8, CodeDistance>, dim: usize, m: usize, slots: usize) -> View {
        let (stride0, stride_up) = (2 * m, m);
        let mut view = View {
            slots,
            dim,
            codes: Codes::zeroed(dim, slots),
            scales: vec![0f32; slots],
            links0: vec![NONE; slots * stride0],
            stride0,
            upper_at: vec![NONE; slots],
            depth: vec![0; slots],
            upper: Vec::new(),
            stride_up,
            entry: 0,
            top: 0,
        };
        if slots == 0 {
            // (`hnsw_rs`'s point iterator panics on a graph without points.)
            return view;
        }
        // Which slots are linked to on a layer above their own level, by a
        // node that is on that layer: a pass over the upper layers' nodes
        // (about n/M of them).
        let index = hnsw.get_point_indexation();
        let mut reach = vec![0u8; slots];
        for layer in 1..=index.get_max_level_observed() {
            for p in index.get_layer_iterator(usize::from(layer)) {
                for (l, list) in p.get_neighborhood_id().iter().enumerate().take(usize::from(layer) + 1).skip(1) {
                    for nb in list.iter().filter(|nb| nb.d_id < slots && usize::from(nb.p_id.0) < l) {
                        reach[nb.d_id] = reach[nb.d_id].max(l as u8);
                    }
                }
            }
        }
        let mut entry: Option<(u8, usize)> = None;
        for point in index {
            let slot = point.get_origin_id();
            if slot >= slots {
                continue;
            }
            let (c, s) = decode(point.get_v());
            let n = c.len().min(dim);
            view.codes.row_mut(slot)[..n].copy_from_slice(&c[..n]);
            view.scales[slot] = s;
            let level = point.get_point_id().0;
            let lists = point.get_neighborhood_id();
            let depth = level.max(reach[slot]);
            view.depth[slot] = depth;
            if depth >= 1 {
                view.upper_at[slot] = view.upper.len() as u32;
                view.upper.resize(view.upper.len() + usize::from(depth) * stride_up, NONE);
            }
            for (layer, list) in lists.iter().enumerate().take(usize::from(depth) + 1) {
                let (out, stride) = match layer {
                    0 => (&mut view.links0[slot * stride0..(slot + 1) * stride0], stride0),
                    _ => {
                        let at = view.upper_at[slot] as usize + (layer - 1) * stride_up;
                        (&mut view.upper[at..at + stride_up], stride_up)
                    }
                };
                let linked = list.iter().map(|nb| nb.d_id).filter(|&d| d < slots);
                for (o, d) in out.iter_mut().zip(linked.take(stride)) {
                    *o = d as u32;
                }
            }
            // The first slot to reach the highest level, as `hnsw_rs`
            // chooses its entry point.
            if entry.is_none_or(|(top, at)| level > top || (level == top && slot < at)) {
                entry = Some((level, slot));
            }
        }
        if let Some((top, at)) = entry {
            (view.top, view.entry) = (top, at as u32);
        }
        view
    }

    /// Heap bytes held.
    pub fn memory_bytes(&self) -> usize {
        self.codes.bytes()
            + self.scales.capacity() * 4
            + self.links0.capacity() * 4
            + self.upper_at.capacity() * 4
            + self.depth.capacity()
            + self.upper.capacity() * 4
    }

    /// Heap bytes held that no other copy of the view shares (its code
    /// chunks are shared with the copies made from it or it from).
    pub fn own_memory_bytes(&self) -> usize {
        self.memory_bytes() - self.codes.bytes() + self.codes.own_bytes()
    }

    fn links(&self, slot: u32, layer: u8) -> &[u32] {
        if layer == 0 {
            let at = slot as usize * self.stride0;
            return &self.links0[at..at + self.stride0];
        }
        let base = self.upper_at[slot as usize];
        if base == NONE || layer > self.depth[slot as usize] {
            return &[];
        }
        let at = base as usize + (usize::from(layer) - 1) * self.stride_up;
        self.upper.get(at..at + self.stride_up).unwrap_or(&[])
    }

    /// Estimated distances (`max(0, 1 − s_q·s·(q·c))`, as
    /// [`CodeDistance`]) from the query to each of `slots`, as ordered bits.
    fn distances(&self, q: &[i8], qs: f32, slots: &[u32], dots: &mut Vec<i32>, out: &mut Vec<u32>) {
        dots.clear();
        dots.resize(slots.len(), 0);
        let codes = &self.codes;
        dot_i8_gather_with(q, slots, |s| codes.row(s as usize), dots);
        out.clear();
        out.extend(
            slots
                .iter()
                .zip(dots.iter())
                .map(|(&s, &d)| (1.0 - qs * self.scales[s as usize] * d as f32).max(0.0).to_bits()),
        );
    }

    /// Estimated distance (as ordered bits) from the query to one slot.
    fn distance_to(&self, q: &[i8], qs: f32, slot: u32, sc: &mut Scratch) -> u32 {
        self.distances(q, qs, &[slot], &mut sc.dots, &mut sc.dist);
        sc.dist[0]
    }

    /// Greedy descent (a candidate list of one) from `start` through the
    /// layers `from` down to `to` (both included; none when `from < to`):
    /// on each layer, move to the nearest neighbour while it is nearer.
    fn descend(&self, q: &[i8], qs: f32, start: Entry, from: u8, to: u8, sc: &mut Scratch) -> Entry {
        let (mut d_ep, mut ep) = start;
        for layer in (to.max(1)..=from).rev() {
            loop {
                sc.batch.clear();
                sc.batch.extend(self.links(ep, layer).iter().copied().filter(|&s| s != NONE));
                self.distances(q, qs, &sc.batch, &mut sc.dots, &mut sc.dist);
                let mut moved = false;
                for (&s, &d) in sc.batch.iter().zip(&sc.dist) {
                    if (d, s) < (d_ep, ep) {
                        (d_ep, ep, moved) = (d, s, true);
                    }
                }
                if !moved {
                    break;
                }
            }
        }
        (d_ep, ep)
    }

    /// Beam search of width `ef` on `layer` from `start` (the paper's
    /// SEARCH-LAYER): up to `ef` `(distance bits, slot)` pairs, nearest
    /// first (ties: smaller slot first). Every slot reached must have a list
    /// on `layer` (true of any slot linked there).
    fn beam(&self, q: &[i8], qs: f32, start: Entry, ef: usize, layer: u8, sc: &mut Scratch) -> Vec<Entry> {
        VISITED.with(|v| {
            let mut visited = v.borrow_mut();
            visited.begin(self.slots);
            visited.first_visit(start.1);
            let mut candidates: BinaryHeap<Reverse<Entry>> = BinaryHeap::with_capacity(ef * 2);
            let mut best: BinaryHeap<Entry> = BinaryHeap::with_capacity(ef + 1);
            candidates.push(Reverse(start));
            best.push(start);
            while let Some(Reverse((d, c))) = candidates.pop() {
                if best.len() >= ef && best.peek().is_some_and(|&(worst, _)| d > worst) {
                    break;
                }
                sc.batch.clear();
                for &s in self.links(c, layer) {
                    if s != NONE && visited.first_visit(s) {
                        sc.batch.push(s);
                    }
                }
                self.distances(q, qs, &sc.batch, &mut sc.dots, &mut sc.dist);
                for (&s, &d) in sc.batch.iter().zip(&sc.dist) {
                    if best.len() < ef || best.peek().is_some_and(|&worst| (d, s) < worst) {
                        candidates.push(Reverse((d, s)));
                        best.push((d, s));
                        if best.len() > ef {
                            best.pop();
                        }
                    }
                }
            }
            best.into_sorted_vec()
        })
    }

    /// Up to `ef` slots nearest to `query` by estimated distance, nearest
    /// first (ties: smaller slot first). Empty for an empty view or `ef == 0`.
    pub fn search(&self, query: &[f32], ef: usize) -> Vec<usize> {
        if self.slots == 0 || ef == 0 {
            return Vec::new();
        }
        let mut q = vec![0i8; self.dim];
        let qs = quantize(&query[..self.dim.min(query.len())], &mut q[..self.dim.min(query.len())]);
        let mut sc = Scratch::default();
        let d_ep = self.distance_to(&q, qs, self.entry, &mut sc);
        let start = self.descend(&q, qs, (d_ep, self.entry), self.top, 1, &mut sc);
        self.beam(&q, qs, start, ef, 0, &mut sc).into_iter().map(|(_, s)| s as usize).collect()
    }

    /// An empty view of `dim`-component points for a graph of parameter
    /// `m` (`2·m` links on layer 0, `m` above), to be filled by
    /// [`insert`](Self::insert).
    pub fn empty(dim: usize, m: usize) -> View {
        View {
            slots: 0,
            dim,
            codes: Codes::zeroed(dim, 0),
            scales: Vec::new(),
            links0: Vec::new(),
            stride0: 2 * m,
            upper_at: Vec::new(),
            depth: Vec::new(),
            upper: Vec::new(),
            stride_up: m,
            entry: 0,
            top: 0,
        }
    }

    /// Points (slots) held.
    pub fn slots(&self) -> usize {
        self.slots
    }

    /// A copy with room for `extra` more slots (and their upper-layer lists
    /// at the expected share, `1/m` of points) before any table grows.
    pub fn clone_with_room(&self, extra: usize) -> View {
        fn with_room<T: Clone>(v: &[T], extra: usize) -> Vec<T> {
            let mut out = Vec::with_capacity(v.len() + extra);
            out.extend_from_slice(v);
            out
        }
        View {
            slots: self.slots,
            dim: self.dim,
            codes: self.codes.clone(),
            scales: with_room(&self.scales, extra),
            links0: with_room(&self.links0, extra * self.stride0),
            stride0: self.stride0,
            upper_at: with_room(&self.upper_at, extra),
            depth: with_room(&self.depth, extra),
            upper: with_room(&self.upper, extra * 2),
            stride_up: self.stride_up,
            entry: self.entry,
            top: self.top,
        }
    }

    /// Makes room for `extra` more slots (their codes' chunks excepted,
    /// which are allocated whole), allocating no more than that, so that a
    /// burst of inserts does not double the tables' capacity.
    pub fn reserve(&mut self, extra: usize) {
        self.scales.reserve_exact(extra);
        self.links0.reserve_exact(extra * self.stride0);
        self.upper_at.reserve_exact(extra);
        self.depth.reserve_exact(extra);
    }

    fn links_mut(&mut self, slot: u32, layer: u8) -> &mut [u32] {
        if layer == 0 {
            let at = slot as usize * self.stride0;
            return &mut self.links0[at..at + self.stride0];
        }
        let base = self.upper_at[slot as usize];
        if base == NONE || layer > self.depth[slot as usize] {
            return &mut [];
        }
        let at = base as usize + (usize::from(layer) - 1) * self.stride_up;
        self.upper.get_mut(at..at + self.stride_up).unwrap_or(&mut [])
    }

    /// Inserts a point (its `i8` codes, `dim` of them, and scale, as
    /// `quant::quantize` makes them) as the next slot, on layers
    /// `0..=level`, and returns the slot.
    ///
    /// The paper's INSERT (Algorithm 1) with the rules `hnsw_rs` 0.3.5
    /// follows, so that a graph it built and extended here is one graph: a
    /// greedy descent from the entry point to layer `level + 1`; on each
    /// layer from `min(level, top)` down to 0, a beam search of width
    /// `ef_construction` whose results are narrowed to at most `2·m`
    /// links on layer 0 and `m` above by the paper's heuristic
    /// (Algorithm 4, without extending or keeping pruned candidates: a
    /// candidate is kept when it is nearer to the new point than to every
    /// link kept before it; all candidates are kept when they fit); then
    /// each new link is made both ways, a full list dropping its farthest
    /// link (which may be the new point). A point above the top layer
    /// becomes the entry point. Distances are the `i8` estimates of
    /// [`CodeDistance`]. Deterministic: the same inserts in the same order
    /// build the same links.
    pub fn insert(&mut self, codes: &[i8], scale: f32, level: u8, ef_construction: usize) -> u32 {
        let s = self.slots as u32;
        let dim = self.dim;
        let n = codes.len().min(dim);
        self.codes.push(&codes[..n]);
        self.scales.push(scale);
        self.links0.resize(self.links0.len() + self.stride0, NONE);
        self.depth.push(level);
        if level >= 1 {
            self.upper_at.push(self.upper.len() as u32);
            self.upper.resize(self.upper.len() + usize::from(level) * self.stride_up, NONE);
        } else {
            self.upper_at.push(NONE);
        }
        self.slots += 1;
        if s == 0 {
            (self.entry, self.top) = (0, level);
            return s;
        }
        let q: Vec<i8> = self.codes.row(s as usize).to_vec();
        let mut sc = Scratch::default();
        let d_ep = self.distance_to(&q, scale, self.entry, &mut sc);
        let mut start = self.descend(&q, scale, (d_ep, self.entry), self.top, level.saturating_add(1), &mut sc);
        for layer in (0..=level.min(self.top)).rev() {
            let found = self.beam(&q, scale, start, ef_construction.max(1), layer, &mut sc);
            let cap = if layer == 0 { self.stride0 } else { self.stride_up };
            let chosen = self.select(&found, cap, &mut sc);
            for (o, &(_, e)) in self.links_mut(s, layer).iter_mut().zip(&chosen) {
                *o = e;
            }
            for &(d, e) in &chosen {
                self.link_back(e, s, d, layer, &mut sc);
            }
            if let Some(&nearest) = found.first() {
                start = nearest;
            }
        }
        if level > self.top {
            (self.entry, self.top) = (s, level);
        }
        s
    }

    /// Estimated distances (as ordered bits) from stored slot `from` to each
    /// of `to`.
    fn distances_from(&self, from: u32, to: &[u32], dots: &mut Vec<i32>, out: &mut Vec<u32>) {
        self.distances(self.codes.row(from as usize), self.scales[from as usize], to, dots, out);
    }

    /// The heuristic of [`insert`](Self::insert): from `found` (nearest
    /// first), the candidates nearer to the new point than to every
    /// candidate kept before them, at most `cap`; all of `found` when it
    /// holds at most `cap`.
    fn select(&self, found: &[Entry], cap: usize, sc: &mut Scratch) -> Vec<Entry> {
        if found.len() <= cap {
            return found.to_vec();
        }
        let mut kept: Vec<Entry> = Vec::with_capacity(cap);
        sc.batch.clear(); // the slots kept
        for &(d, c) in found {
            if kept.len() >= cap {
                break;
            }
            self.distances_from(c, &sc.batch, &mut sc.dots, &mut sc.dist);
            if sc.dist.iter().all(|&to_kept| to_kept > d) {
                kept.push((d, c));
                sc.batch.push(c);
            }
        }
        kept
    }

    /// Adds `s` (at distance bits `d` from `e`) to `e`'s list on `layer`:
    /// into a free place, or, when the list is full, in place of its
    /// farthest link if that is farther than `s` (ties: the larger slot is
    /// the farther).
    fn link_back(&mut self, e: u32, s: u32, d: u32, layer: u8, sc: &mut Scratch) {
        let list = self.links(e, layer);
        if list.contains(&s) {
            return;
        }
        if let Some(free) = list.iter().position(|&x| x == NONE) {
            self.links_mut(e, layer)[free] = s;
            return;
        }
        if list.is_empty() {
            return;
        }
        sc.batch.clear();
        sc.batch.extend_from_slice(list);
        self.distances_from(e, &sc.batch, &mut sc.dots, &mut sc.dist);
        let (at, far) = sc
            .dist
            .iter()
            .zip(&sc.batch)
            .map(|(&dm, &m)| (dm, m))
            .enumerate()
            .max_by_key(|&(_, entry)| entry)
            .expect("a full list is not empty");
        if (d, s) < far {
            self.links_mut(e, layer)[at] = s;
        }
    }
}

/// The level (top layer) of the point in slot `slot` of a graph with
/// parameter `m` grown from `seed`: `⌊−ln(u) / ln(m)⌋` with `u` uniform in
/// `(0, 1]` (the paper's level distribution with `m_L = 1/ln(M)`, as
/// `hnsw_rs` draws it), capped at `max_level`. `u` comes from the SplitMix64
/// finaliser of `seed` and `slot`, so a slot's level depends on nothing
/// else: the same inserts build the same graph.
pub(crate) fn level_of(seed: u64, slot: usize, m: usize, max_level: u8) -> u8 {
    let mut z = seed ^ (slot as u64).wrapping_mul(0x9E37_79B9_7F4A_7C15);
    z = (z ^ (z >> 30)).wrapping_mul(0xBF58_476D_1CE4_E5B9);
    z = (z ^ (z >> 27)).wrapping_mul(0x94D0_49BB_1331_11EB);
    z ^= z >> 31;
    let u = ((z >> 11) as f64 + 1.0) / (1u64 << 53) as f64;
    let level = (-u.ln() / (m.max(2) as f64).ln()).floor();
    if level >= f64::from(max_level) {
        max_level
    } else {
        level as u8
    }
}

#[cfg(test)]
pub(super) mod tests {
    use super::*;
    use crate::index::hnsw::point;

    /// `n` scattered unit vectors of `dim` components (an LCG from `seed`).
    pub(in crate::index) fn lcg_vectors(seed: u64, n: usize, dim: usize) -> Vec<Vec<f32>> {
        let mut x = seed;
        (0..n)
            .map(|_| {
                let v: Vec<f32> = (0..dim)
                    .map(|_| {
                        x = x.wrapping_mul(6364136223846793005).wrapping_add(1442695040888963407);
                        (x >> 40) as f32 / (1u64 << 24) as f32 - 0.5
                    })
                    .collect();
                let norm = v.iter().map(|a| a * a).sum::<f32>().sqrt();
                v.into_iter().map(|a| a / norm).collect()
            })
            .collect()
    }

    /// A graph built one point at a time (deterministic), `M = m`.
    fn graph(vs: &[Vec<f32>], m: usize) -> Hnsw<'static, i8, CodeDistance> {
        graph_m(vs, m, 64)
    }
    pub(super) fn graph_m(vs: &[Vec<f32>], m: usize, efc: usize) -> Hnsw<'static, i8, CodeDistance> {
        let h = Hnsw::new(m, vs.len().max(1), 16, efc, CodeDistance);
        for (i, v) in vs.iter().enumerate() {
            let mut codes = vec![0i8; v.len()];
            let scale = quantize(v, &mut codes);
            h.insert_slice((&point(&codes, scale), i));
        }
        h
    }

    /// The copy holds every point's codes and exactly the links `hnsw_rs`
    /// holds, layer by layer, on a graph with several levels (M = 4).
    #[test]
    fn the_copy_equals_the_graph() {
        let dim = 16;
        let vs = lcg_vectors(0x5eed, 1000, dim);
        let h = graph(&vs, 4);
        let view = View::copy(&h, dim, 4, vs.len());
        assert!(view.top >= 2, "a graph of several levels: top {}", view.top);
        let mut above_level = 0;
        for p in h.get_point_indexation() {
            let slot = p.get_origin_id();
            let (codes, scale) = decode(p.get_v());
            assert_eq!(view.codes.row(slot), codes);
            assert_eq!(view.scales[slot], scale);
            let lists = p.get_neighborhood_id();
            let depth = usize::from(view.depth[slot]);
            assert!(depth >= usize::from(p.get_point_id().0));
            for (layer, list) in lists.iter().enumerate() {
                let want: Vec<u32> = list.iter().map(|n| n.d_id as u32).collect();
                let got: Vec<u32> =
                    view.links(slot as u32, layer as u8).iter().copied().filter(|&s| s != NONE).collect();
                if layer <= depth {
                    assert_eq!(got, want, "slot {slot} layer {layer}");
                } else {
                    assert!(got.is_empty());
                    above_level += usize::from(!list.is_empty());
                }
            }
        }
        // No node on a layer links to a node whose lists there were left out.
        for p in h.get_point_indexation() {
            let level = usize::from(p.get_point_id().0);
            for (layer, list) in p.get_neighborhood_id().iter().enumerate().take(level + 1).skip(1) {
                for nb in list {
                    assert!(
                        usize::from(view.depth[nb.d_id]) >= layer,
                        "{} -> {} on layer {layer}",
                        p.get_origin_id(),
                        nb.d_id
                    );
                }
            }
        }
        // The entry point is a node of the top layer.
        assert_eq!(view.depth[view.entry as usize], view.top);
        println!("{above_level} unreachable lists left out");
    }

    /// Each point's own vector finds it first, as it does through
    /// `hnsw_rs`'s own search, on a graph of several levels.
    #[test]
    fn a_point_is_found_by_its_own_vector() {
        let dim = 16;
        let vs = lcg_vectors(0x5eed, 1000, dim);
        let h = graph(&vs, 8);
        let view = View::copy(&h, dim, 8, vs.len());
        for (i, v) in vs.iter().enumerate() {
            let got = view.search(v, 16);
            assert_eq!(got.len(), 16);
            assert_eq!(got[0], i, "point {i}");
        }
    }

    /// Degenerate inputs return something sensible and never panic.
    #[test]
    fn edge_inputs() {
        let dim = 8;
        let vs = lcg_vectors(0x5eed, 1, dim);
        let h = graph(&vs, 4);
        let one = View::copy(&h, dim, 4, 1);
        assert_eq!(one.search(&vs[0], 5), [0]);
        assert!(one.search(&vs[0], 0).is_empty());
        assert_eq!(one.search(&vs[0][..3], 5), [0], "short query");
        let long: Vec<f32> = vs[0].iter().chain(&[0.5, 0.5]).copied().collect();
        assert_eq!(one.search(&long, 5), [0], "long query");
        assert_eq!(one.search(&vec![0.0; dim], 5), [0], "zero query");
        assert_eq!(one.search(&vec![f32::NAN; dim], 5), [0], "NaN query");
        let empty = View::copy(&graph(&[], 4), dim, 4, 0);
        assert!(empty.search(&vs[0], 5).is_empty());
        // Points past `slots` are left out, with every link to them.
        let vs = lcg_vectors(0x5eed, 50, dim);
        let part = View::copy(&graph(&vs, 4), dim, 4, 30);
        assert!(part.search(&vs[40], 50).iter().all(|&s| s < 30));
    }

    /// Inserts `vs` into `view` one at a time, slots from `view.slots()`,
    /// at the levels `level_of` gives them (seed 7).
    fn grow(view: &mut View, vs: &[Vec<f32>], m: usize, ef_c: usize) {
        for v in vs {
            let mut codes = vec![0i8; v.len()];
            let scale = quantize(v, &mut codes);
            let slot = view.slots();
            view.insert(&codes, scale, level_of(7, slot, m, 15), ef_c);
        }
    }

    /// Every list is within its stride, front-packed, free of duplicates
    /// and self-links, and links only to slots that have a list on that
    /// layer; the entry point is on the top layer.
    fn check_structure(view: &View) {
        assert_eq!(view.depth[view.entry as usize], view.top);
        for slot in 0..view.slots as u32 {
            for layer in 0..=view.depth[slot as usize] {
                let list = view.links(slot, layer);
                let used: Vec<u32> = list.iter().copied().take_while(|&s| s != NONE).collect();
                assert!(list[used.len()..].iter().all(|&s| s == NONE), "slot {slot} layer {layer}: packed");
                let mut sorted = used.clone();
                sorted.sort_unstable();
                sorted.dedup();
                assert_eq!(sorted.len(), used.len(), "slot {slot} layer {layer}: no duplicates");
                for &t in &used {
                    assert_ne!(t, slot, "self-link");
                    assert!((t as usize) < view.slots);
                    assert!(view.depth[t as usize] >= layer, "{slot} -> {t} on layer {layer}");
                }
            }
        }
    }

    /// Recall@10 of `view.search` (ef 64) against an exact `f32` scan of
    /// `vs`, over `queries` of them.
    fn recall(view: &View, vs: &[Vec<f32>], queries: &[Vec<f32>]) -> f64 {
        recall_ef(view, vs, queries, 64)
    }
    pub(super) fn recall_ef(view: &View, vs: &[Vec<f32>], queries: &[Vec<f32>], ef: usize) -> f64 {
        let mut hit = 0;
        for q in queries {
            let mut exact: Vec<(f32, usize)> =
                vs.iter().enumerate().map(|(i, v)| (-v.iter().zip(q).map(|(a, b)| a * b).sum::<f32>(), i)).collect();
            exact.sort_by(|a, b| a.partial_cmp(b).unwrap());
            let want: Vec<usize> = exact.iter().take(10).map(|&(_, i)| i).collect();
            let got = view.search(q, ef);
            hit += want.iter().filter(|w| got.iter().take(10).any(|g| g == *w)).count();
        }
        hit as f64 / (10 * queries.len()) as f64
    }

    /// A graph grown point by point from empty finds each point by its own
    /// vector (as a graph `hnsw_rs` builds from the same points does, at
    /// the same `M`), keeps its structure, and is deterministic.
    #[test]
    fn a_grown_graph_finds_every_point() {
        let dim = 16;
        let vs = lcg_vectors(0x5eed, 1000, dim);
        let mut view = View::empty(dim, 8);
        grow(&mut view, &vs, 8, 64);
        assert_eq!(view.slots(), 1000);
        assert!(view.top >= 2, "several levels: top {}", view.top);
        check_structure(&view);
        for (i, v) in vs.iter().enumerate() {
            assert_eq!(view.search(v, 16)[0], i, "point {i}");
        }
        let mut again = View::empty(dim, 8);
        grow(&mut again, &vs, 8, 64);
        assert_eq!(again.links0, view.links0);
        assert_eq!(again.upper, view.upper);
        assert_eq!((again.entry, again.top), (view.entry, view.top));
    }

    /// A graph built by `hnsw_rs` and then grown here to twice its size
    /// searches about as well as one `hnsw_rs` built whole, and a copy made
    /// with room equals its source.
    #[test]
    fn growing_a_copied_graph_keeps_recall() {
        let dim = 24;
        let vs = lcg_vectors(0xabc, 3000, dim);
        let queries = lcg_vectors(0xdef, 100, dim);
        let whole = View::copy(&graph(&vs, 8), dim, 8, vs.len());
        let mut grown = View::copy(&graph(&vs[..1500], 8), dim, 8, 1500).clone_with_room(1500);
        let (links0, codes) = (grown.links0.clone(), grown.codes.clone());
        let full = grown.codes.chunks.len() - 1;
        assert!(grown.links0.capacity() >= links0.len() + 1500 * grown.stride0);
        grow(&mut grown, &vs[1500..], 8, 64);
        for c in 0..full {
            assert!(Arc::ptr_eq(&grown.codes.chunks[c], &codes.chunks[c]), "full chunks are shared");
        }
        assert!(!Arc::ptr_eq(&grown.codes.chunks[full], &codes.chunks[full]), "a shared partial chunk is copied");
        for slot in 0..1500 {
            assert_eq!(grown.codes.row(slot), codes.row(slot));
        }
        assert_ne!(&grown.links0[..links0.len()], links0.as_slice(), "old points link to new ones");
        check_structure(&grown);
        let (r_whole, r_grown) = (recall(&whole, &vs, &queries), recall(&grown, &vs, &queries));
        println!("recall@10: hnsw_rs whole {r_whole:.3}, grown {r_grown:.3}");
        assert!(r_grown >= 0.9 && r_grown >= r_whole - 0.03, "whole {r_whole}, grown {r_grown}");
    }

    /// Levels follow the paper's distribution: about `1/m` of slots reach
    /// layer 1, `1/m²` layer 2; none passes the cap.
    #[test]
    fn levels_are_geometric() {
        let n = 200_000;
        let levels: Vec<u8> = (0..n).map(|s| level_of(3, s, 16, 15)).collect();
        let share = |l: u8| levels.iter().filter(|&&x| x >= l).count() as f64 / n as f64;
        assert!((share(1) - 1.0 / 16.0).abs() < 0.005, "{}", share(1));
        assert!((share(2) - 1.0 / 256.0).abs() < 0.001, "{}", share(2));
        assert!(levels.iter().all(|&l| l <= 15));
        assert_eq!(level_of(3, 12, 16, 15), level_of(3, 12, 16, 15));
        assert_eq!((0..64).map(|s| level_of(0, s, 2, 0)).max(), Some(0), "capped");
    }

    #[test]
    fn visited_marks_survive_the_stamp_wrapping() {
        let mut v = Visited { marks: Vec::new(), stamp: u32::MAX - 1 };
        v.begin(4);
        assert!(v.first_visit(2));
        assert!(!v.first_visit(2));
        v.begin(4); // the stamp wraps: every mark is cleared
        assert_eq!(v.stamp, 1);
        assert!(v.first_visit(2));
        assert!(v.first_visit(3));
        v.begin(6);
        assert!(v.first_visit(2) && v.first_visit(5));
    }
}

//! A read-only, flat copy of an `hnsw_rs` graph's links and codes, which
//! the graph's searches run on.
//!
//! `hnsw_rs` 0.3.5 keeps every point behind an `Arc` with a lock, every link
//! as an `Arc` to its own heap record, and searches with a SipHash set of
//! visited points and a heap allocation per candidate; at 100k 384-d points
//! that bookkeeping, not the distances, was most of a search (628 µs p50 at
//! `ef` 64, while its ~2,000 `i8` distances take under 100 µs). A [`View`]
//! holds the same graph as flat arrays: codes and scales by slot, layer-0
//! links in fixed strides, the few upper-layer links beside them, and a
//! search that marks visited slots in a reusable per-thread array and
//! computes a node's unvisited neighbours' distances in one batch.
//!
//! The background worker of [`Graph`](super::hnsw::Graph) makes a new view
//! from the `hnsw_rs` graph between insertion batches (the graph does not
//! change while it copies it), and readers take the current view by
//! reference count, so a search never waits for an insertion.
//!
//! The search is the paper's (Malkov & Yashunin, TPAMI 2018, arXiv:1603.09320,
//! Algorithms 2 and 5): greedy descent with a candidate list of one from the
//! entry point through the upper layers, then a beam search of width `ef` on
//! layer 0.

use std::cell::RefCell;
use std::cmp::Reverse;
use std::collections::BinaryHeap;

use hnsw_rs::prelude::Hnsw;

use super::hnsw::{decode, CodeDistance};
use super::quant::{dot_i8_gather, quantize};

/// No link (pads a node's link list to its stride).
const NONE: u32 = u32::MAX;

/// A search-only copy of the graph over slots `0..slots`.
pub(crate) struct View {
    /// Slots covered: `0..slots`, every one a graph node.
    slots: usize,
    dim: usize,
    /// `slots × dim` codes, row-major by slot.
    codes: Vec<i8>,
    /// Scale of each slot's codes.
    scales: Vec<f32>,
    /// Layer-0 links: `slots × stride0`, each list padded with [`NONE`].
    links0: Vec<u32>,
    stride0: usize,
    /// Offset into `upper` of each slot's upper-layer lists, [`NONE`] for a
    /// slot with links on layer 0 only.
    upper_at: Vec<u32>,
    /// Highest layer each slot's links are copied for: its level, or above
    /// it for a node that a node of a higher layer links to there. `hnsw_rs`
    /// gives a new point a list on each layer from its level up to the top
    /// (the point its search passed through there), but only a former entry
    /// point is ever linked to on a layer above its level (a later point
    /// that opened a new top layer keeps it as a neighbour there); the other
    /// lists cannot be reached and are left out.
    depth: Vec<u8>,
    /// For a slot of depth `L ≥ 1`: `L` lists of `stride_up` links (layers
    /// `1..=L`), each padded with [`NONE`].
    upper: Vec<u32>,
    stride_up: usize,
    /// The entry point (a node of the top layer) and the top layer.
    entry: u32,
    top: u8,
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
            codes: vec![0i8; slots * dim],
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
            view.codes[slot * dim..slot * dim + n].copy_from_slice(&c[..n]);
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
        self.codes.capacity()
            + self.scales.capacity() * 4
            + self.links0.capacity() * 4
            + self.upper_at.capacity() * 4
            + self.depth.capacity()
            + self.upper.capacity() * 4
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
        dot_i8_gather(q, &self.codes, slots, dots);
        out.clear();
        out.extend(
            slots
                .iter()
                .zip(dots.iter())
                .map(|(&s, &d)| (1.0 - qs * self.scales[s as usize] * d as f32).max(0.0).to_bits()),
        );
    }

    /// Up to `ef` slots nearest to `query` by estimated distance, nearest
    /// first (ties: smaller slot first). Empty for an empty view or `ef == 0`.
    pub fn search(&self, query: &[f32], ef: usize) -> Vec<usize> {
        if self.slots == 0 || ef == 0 {
            return Vec::new();
        }
        let mut q = vec![0i8; self.dim];
        let qs = quantize(&query[..self.dim.min(query.len())], &mut q[..self.dim.min(query.len())]);
        let mut dots = Vec::with_capacity(self.stride0.max(self.stride_up));
        let mut dist = Vec::with_capacity(self.stride0.max(self.stride_up));
        let mut batch: Vec<u32> = Vec::with_capacity(self.stride0.max(self.stride_up));
        // Upper layers: greedy descent.
        let mut ep = self.entry;
        self.distances(&q, qs, &[ep], &mut dots, &mut dist);
        let mut d_ep = dist[0];
        for layer in (1..=self.top).rev() {
            loop {
                batch.clear();
                batch.extend(self.links(ep, layer).iter().copied().filter(|&s| s != NONE));
                self.distances(&q, qs, &batch, &mut dots, &mut dist);
                let mut moved = false;
                for (&s, &d) in batch.iter().zip(&dist) {
                    if (d, s) < (d_ep, ep) {
                        (d_ep, ep, moved) = (d, s, true);
                    }
                }
                if !moved {
                    break;
                }
            }
        }
        // Layer 0: beam search of width ef.
        VISITED.with(|v| {
            let mut visited = v.borrow_mut();
            visited.begin(self.slots);
            visited.first_visit(ep);
            let mut candidates: BinaryHeap<Reverse<Entry>> = BinaryHeap::with_capacity(ef * 2);
            let mut best: BinaryHeap<Entry> = BinaryHeap::with_capacity(ef + 1);
            candidates.push(Reverse((d_ep, ep)));
            best.push((d_ep, ep));
            while let Some(Reverse((d, c))) = candidates.pop() {
                if best.len() >= ef && best.peek().is_some_and(|&(worst, _)| d > worst) {
                    break;
                }
                batch.clear();
                for &s in self.links(c, 0) {
                    if s != NONE && visited.first_visit(s) {
                        batch.push(s);
                    }
                }
                self.distances(&q, qs, &batch, &mut dots, &mut dist);
                for (&s, &d) in batch.iter().zip(&dist) {
                    if best.len() < ef || best.peek().is_some_and(|&worst| (d, s) < worst) {
                        candidates.push(Reverse((d, s)));
                        best.push((d, s));
                        if best.len() > ef {
                            best.pop();
                        }
                    }
                }
            }
            best.into_sorted_vec().into_iter().map(|(_, s)| s as usize).collect()
        })
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
        let h = Hnsw::new(m, vs.len().max(1), 16, 64, CodeDistance);
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
            assert_eq!(&view.codes[slot * dim..(slot + 1) * dim], codes);
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

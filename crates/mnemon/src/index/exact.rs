//! Contiguous vector store with exact (brute-force) top-k search.
//!
//! Vectors live row-major in one `Vec<f16>` (`rows × dim`, IEEE 754 binary16,
//! each component rounded to nearest), next to their `i8` codes (`rows ×
//! dim`, one scale per row; see [`quant`](crate::embed::quant)) and an id → row map;
//! deletion swap-removes the last row into the hole, so the store stays dense
//! and a scan touches only live vectors.
//!
//! Why `f16` rows: a row is the *stored vector* — every similarity the index
//! reports is the `f32` dot product of the query with the row's components
//! widened back to `f32` (exactly: every `f16` is an `f32`). Rounding to
//! `f16` moves a component by at most 2⁻¹¹ of its magnitude (a component
//! under 2⁻¹⁴, in the subnormal range, by at most 2⁻²⁵), so a cosine of two
//! unit vectors by at most 2⁻¹¹ + 2⁻²⁵·‖q‖₁ < 0.0005 at 384-d (|Σ qᵢ·δᵢ| ≤
//! 2⁻¹¹·Σ|qᵢ·xᵢ| + 2⁻²⁵·Σ|qᵢ|, and Σ|qᵢ·xᵢ| ≤ 1 by Cauchy–Schwarz),
//! typically far less. Measured: the evaluation figures (LoCoMo, LongMemEval,
//! MADial) are the same to four decimals as with `f32` rows
//! (docs/BENCHMARKS.md, "Read path"). It halves the rows' memory (768
//! instead of 1,536 bytes at 384-d). The codes are quantised from the `f16` row, and the
//! log's vector cache keeps that row (`f16`), so replay rebuilds the very
//! rows and codes of the live index.

use std::cmp::{Ordering, Reverse};
use std::collections::{BinaryHeap, HashMap};
use std::hash::{BuildHasherDefault, Hasher};

use half::f16;
use half::slice::HalfFloatSliceExt;

use crate::embed::quant::{dot_i8, dot_i8_rows, quantize};

/// Dot product of `a` with the row `b` (shorter length wins if they
/// differ), each 16 components of `b` widened to `f32` by `widen16` and each
/// of the last `len % 16` by `widen1`.
///
/// The main loop takes 16 components at a time into four independent groups
/// of four accumulators, which LLVM turns into four packed 4-lane
/// multiply/add chains (SSE baseline; checked in the disassembly) instead of
/// one serial dependency chain; the tail is summed scalar. (Writing it as one
/// 16- or 8×2-lane array with a tree reduction made LLVM pick 2-lane vectors.)
/// The summation order is fixed, so the result is bit-for-bit reproducible,
/// and equal for two rows that widen to the same values.
#[inline(always)]
#[allow(clippy::needless_range_loop)]
fn dot_widened<T: Copy>(a: &[f32], b: &[T], widen16: impl Fn(&[T], &mut [f32; 16]), widen1: impl Fn(T) -> f32) -> f32 {
    let n = a.len().min(b.len());
    let (a, b) = (&a[..n], &b[..n]);
    let mut a0 = [0.0f32; 4];
    let mut a1 = [0.0f32; 4];
    let mut a2 = [0.0f32; 4];
    let mut a3 = [0.0f32; 4];
    let ca = a.chunks_exact(16);
    let cb = b.chunks_exact(16);
    let (ra, rb) = (ca.remainder(), cb.remainder());
    let mut y = [0.0f32; 16];
    for (x, c) in ca.zip(cb) {
        widen16(c, &mut y);
        for i in 0..4 {
            a0[i] += x[i] * y[i];
            a1[i] += x[4 + i] * y[4 + i];
            a2[i] += x[8 + i] * y[8 + i];
            a3[i] += x[12 + i] * y[12 + i];
        }
    }
    let mut tail = 0.0f32;
    for (x, c) in ra.iter().zip(rb) {
        tail += x * widen1(*c);
    }
    let mut s = [0.0f32; 4];
    for i in 0..4 {
        s[i] = (a0[i] + a1[i]) + (a2[i] + a3[i]);
    }
    (s[0] + s[1]) + (s[2] + s[3]) + tail
}

/// Dot product of two `f32` slices in [`dot_widened`]'s order: the
/// reference of [`dot_f16`] (tests compare the two).
#[cfg(test)]
pub(crate) fn dot(a: &[f32], b: &[f32]) -> f32 {
    dot_widened(a, b, |c, y| y.copy_from_slice(c), |x| x)
}

/// Dot product of `a` with the `f16` row `b` widened to `f32`, without
/// allocating, in [`dot_widened`]'s order (so it equals the test-only `f32`
/// `dot` of `a` with the widened row, bit for bit). Widening is exact; it
/// runs 16 components at a time through `half`'s slice conversion (F16C
/// instructions where the processor has them, detected at run time; the
/// software path gives the same values).
#[inline]
pub(crate) fn dot_f16(a: &[f32], b: &[f16]) -> f32 {
    dot_widened(a, b, |c, y| c.convert_to_f32_slice(y), f16::to_f32)
}

/// Hasher for `u64` ids: the splitmix64 finaliser. Ids are assigned by the
/// engine (not attacker-chosen), so a DoS-resistant hash is not needed; this
/// one is several times cheaper than SipHash and mixes sequential ids well.
#[derive(Default, Clone, Copy)]
pub(crate) struct IdHasher(u64);

impl Hasher for IdHasher {
    #[inline]
    fn finish(&self) -> u64 {
        let mut z = self.0.wrapping_add(0x9E37_79B9_7F4A_7C15);
        z = (z ^ (z >> 30)).wrapping_mul(0xBF58_476D_1CE4_E5B9);
        z = (z ^ (z >> 27)).wrapping_mul(0x94D0_49BB_1331_11EB);
        z ^ (z >> 31)
    }
    #[inline]
    fn write(&mut self, bytes: &[u8]) {
        for &b in bytes {
            self.0 = (self.0.rotate_left(8)) ^ u64::from(b);
        }
    }
    #[inline]
    fn write_u64(&mut self, i: u64) {
        self.0 = self.0.rotate_left(29) ^ i;
    }
    #[inline]
    fn write_usize(&mut self, i: usize) {
        self.write_u64(i as u64);
    }
}

/// `count` deterministic pseudo-random positions in `0..n` (with possible
/// repeats), for estimating a filter's selectivity. Pseudo-random rather
/// than evenly strided so that the sample does not alias with periodic
/// structure in ids (e.g. a filter that keeps every other id).
pub(crate) fn sample_positions(n: usize, count: usize) -> impl Iterator<Item = usize> {
    (0..if n == 0 { 0 } else { count }).map(move |i| {
        let mut h = IdHasher::default();
        h.write_u64(i as u64);
        (h.finish() % n as u64) as usize
    })
}

/// `HashMap` keyed by ids, using [`IdHasher`].
pub(crate) type IdMap<V> = HashMap<u64, V, BuildHasherDefault<IdHasher>>;

/// A scored hit. Ordered by "goodness": higher score is better, and for equal
/// scores the smaller id is better, so results are total-ordered and
/// deterministic.
#[derive(Clone, Copy, Debug)]
pub(crate) struct Hit {
    pub score: f32,
    pub id: u64,
}

impl PartialEq for Hit {
    fn eq(&self, other: &Self) -> bool {
        self.cmp(other) == Ordering::Equal
    }
}
impl Eq for Hit {}
impl PartialOrd for Hit {
    fn partial_cmp(&self, other: &Self) -> Option<Ordering> {
        Some(self.cmp(other))
    }
}
impl Ord for Hit {
    fn cmp(&self, other: &Self) -> Ordering {
        self.score.total_cmp(&other.score).then_with(|| other.id.cmp(&self.id))
    }
}

/// When a quantised scan ([`ExactStore::search_quantized`]) asks its
/// filter, chosen from a sample of rows by the caller.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) enum FilterPlan {
    /// Of every row, before its estimate: few rows pass.
    First,
    /// Of the rows that rank by estimate, best first, until the
    /// candidates to rescore are found.
    Ranked,
    /// Of the rescored candidates, best first, until `k` pass: every
    /// sampled row passed, so the filter is asked about `k` times instead
    /// of once per candidate. Should fewer than `k` of the candidates pass
    /// (and rows were left out), the scan runs again as [`FilterPlan::Ranked`].
    AfterRescore,
}

/// Bounded top-k collector: a min-heap (by goodness) of at most `k` hits.
pub(crate) struct TopK {
    k: usize,
    heap: BinaryHeap<Reverse<Hit>>,
}

impl TopK {
    pub fn new(k: usize) -> Self {
        TopK { k, heap: BinaryHeap::with_capacity(k.saturating_add(1).min(4096)) }
    }

    /// The score of the worst kept hit once `k` are kept: a hit scoring
    /// below it cannot enter (one scoring equal may, by a smaller id).
    #[inline]
    pub fn floor(&self) -> f32 {
        match self.heap.peek() {
            Some(Reverse(worst)) if self.heap.len() >= self.k => worst.score,
            _ => f32::NEG_INFINITY,
        }
    }

    /// Whether a hit with this score and id would enter the top k.
    #[inline]
    pub fn would_accept(&self, hit: Hit) -> bool {
        if self.heap.len() < self.k {
            return self.k > 0;
        }
        match self.heap.peek() {
            Some(Reverse(worst)) => hit > *worst,
            None => false,
        }
    }

    /// Offers a hit; keeps it if it is among the best `k` seen.
    #[inline]
    pub fn push(&mut self, hit: Hit) {
        if !self.would_accept(hit) {
            return;
        }
        if self.heap.len() == self.k {
            self.heap.pop();
        }
        self.heap.push(Reverse(hit));
    }

    /// The kept hits, in no particular order.
    pub fn into_hits(self) -> Vec<Hit> {
        self.heap.into_iter().map(|Reverse(h)| h).collect()
    }

    /// Hits best first as `(id, score)`.
    pub fn into_sorted(self) -> Vec<(u64, f32)> {
        // into_sorted_vec is ascending in Reverse<Hit>, i.e. best first.
        self.heap.into_sorted_vec().into_iter().map(|Reverse(h)| (h.id, h.score)).collect()
    }
}

/// Rows per run-time dispatch of the integer kernel in a quantised scan:
/// 256 rows of 384-d codes are 96 KiB, which stays in L2 while their
/// estimates are ranked.
const SCAN_BLOCK: usize = 256;

/// Below this many bytes of `f16` rows the row arrays double when full;
/// from it on they grow by 25 %. A small allocation lives on the malloc
/// heap, where growing it copies every row into fresh pages, and each first
/// touch of a page is a fault: with 25 % steps a store writes (and faults)
/// about 5× its final size, with doubling 2× (measured with `perf` on
/// `cargo bench --bench append`: about 12 µs of page faults per insert in a
/// 4,000-row store with 25 % steps). Large allocations are mapped pages
/// that grow by remapping, without a copy, so there 25 % steps bound the
/// unused reservation (at 384-d × 100k rows ~38 MB instead of up to
/// 150 MB). 32 MiB is glibc's largest dynamic mmap threshold
/// (`DEFAULT_MMAP_THRESHOLD_MAX` on 64-bit), above which its allocations
/// are always mapped. Reserved rows that were never written are not
/// resident.
const DOUBLE_BELOW_BYTES: usize = 32 << 20;

/// How many candidates a quantised scan keeps for exact rescoring in a
/// top-`k` search: `max(k · factor, 4 · factor)`, where `factor` is
/// [`HnswParams::rescore_factor`](super::HnswParams::rescore_factor); the
/// floor keeps small `k` from resting on very few estimates.
pub(crate) fn rescore_count(k: usize, factor: usize) -> usize {
    k.max(4).saturating_mul(factor)
}

/// Dense row-major vector store with exact search.
pub(crate) struct ExactStore {
    dim: usize,
    /// Every row's components, rounded to `f16` (`rows × dim`).
    data: Vec<f16>,
    /// `i8` codes of every row (`rows × dim`).
    codes: Vec<i8>,
    /// Scale of every row's codes.
    scales: Vec<f32>,
    ids: Vec<u64>,
    rows: IdMap<usize>,
    /// Scratch: the row being inserted, widened back to `f32`, which its
    /// codes are quantised from (`dim` components, reused).
    widened: Vec<f32>,
}

impl ExactStore {
    pub fn new(dim: usize) -> Self {
        ExactStore {
            dim,
            data: Vec::new(),
            codes: Vec::new(),
            scales: Vec::new(),
            ids: Vec::new(),
            rows: IdMap::default(),
            widened: Vec::new(),
        }
    }

    pub fn len(&self) -> usize {
        self.ids.len()
    }

    pub fn contains(&self, id: u64) -> bool {
        self.rows.contains_key(&id)
    }

    /// The stored (`f16`) row of `id`.
    pub fn get(&self, id: u64) -> Option<&[f16]> {
        let row = *self.rows.get(&id)?;
        self.data.get(row * self.dim..(row + 1) * self.dim)
    }

    /// The stored vector of `id` widened to `f32`.
    pub fn vector(&self, id: u64) -> Option<Vec<f32>> {
        let row = self.get(id)?;
        let mut out = vec![0.0f32; row.len()];
        row.convert_to_f32_slice(&mut out);
        Some(out)
    }

    /// [`dot_f16`] of `query` with the stored row of `id`: the similarity
    /// every search of this store reports for `id`.
    pub fn similarity(&self, id: u64, query: &[f32]) -> Option<f32> {
        self.get(id).map(|row| dot_f16(query, row))
    }

    /// The `i8` codes and scale of `id`'s vector.
    pub fn codes(&self, id: u64) -> Option<(&[i8], f32)> {
        let row = *self.rows.get(&id)?;
        Some((self.codes.get(row * self.dim..(row + 1) * self.dim)?, *self.scales.get(row)?))
    }

    /// Ids in row order.
    pub fn ids(&self) -> &[u64] {
        &self.ids
    }

    /// Inserts or overwrites (in place) the vector of `id`. `v.len()` must be
    /// `dim` (checked by the caller).
    ///
    /// The codes are quantised from the stored (`f16`) row, not from `v`, so
    /// that a vector given again as its `f16` rounding (as the vector cache
    /// keeps it) makes the very same row and codes.
    pub fn insert(&mut self, id: u64, v: &[f32]) {
        let dim = self.dim;
        if let Some(&row) = self.rows.get(&id) {
            if let Some(dst) = self.data.get_mut(row * dim..(row + 1) * dim) {
                dst.convert_from_f32_slice(v);
                self.widened.resize(dim, 0.0);
                dst.convert_to_f32_slice(&mut self.widened);
            }
            if let (Some(dst), Some(s)) = (self.codes.get_mut(row * dim..(row + 1) * dim), self.scales.get_mut(row)) {
                *s = quantize(&self.widened, dst);
            }
            return;
        }
        if self.data.len() + dim > self.data.capacity() {
            // Double while the rows are small, then grow by 25 %: see
            // `DOUBLE_BELOW_BYTES`.
            let rows = self.ids.len();
            let extra_rows = if rows * dim * 2 < DOUBLE_BELOW_BYTES { rows.max(64) } else { rows / 4 };
            self.data.reserve_exact(extra_rows * dim);
            self.codes.reserve_exact(extra_rows * dim);
            self.scales.reserve_exact(extra_rows);
            self.ids.reserve_exact(extra_rows);
        }
        self.rows.insert(id, self.ids.len());
        self.ids.push(id);
        let start = self.data.len();
        self.data.resize(start + dim, f16::ZERO);
        self.data[start..].convert_from_f32_slice(v);
        self.widened.resize(dim, 0.0);
        self.data[start..].convert_to_f32_slice(&mut self.widened);
        let start = self.codes.len();
        self.codes.resize(start + dim, 0);
        let scale = quantize(&self.widened, &mut self.codes[start..]);
        self.scales.push(scale);
    }

    /// Removes `id` by moving the last row into its place.
    pub fn remove(&mut self, id: u64) -> bool {
        let Some(row) = self.rows.remove(&id) else {
            return false;
        };
        let last = self.ids.len() - 1;
        let dim = self.dim;
        if row != last {
            self.data.copy_within(last * dim..(last + 1) * dim, row * dim);
            self.codes.copy_within(last * dim..(last + 1) * dim, row * dim);
            self.scales[row] = self.scales[last];
            let moved = self.ids[last];
            self.ids[row] = moved;
            self.rows.insert(moved, row);
        }
        self.ids.truncate(last);
        self.data.truncate(last * dim);
        self.codes.truncate(last * dim);
        self.scales.truncate(last);
        // Give memory back after mass removal: shrink once the capacity is
        // over 4× the live rows (and 1024 rows), to 1.25×, so shrinking is
        // amortised: a store just doubled (2×) must lose half its rows
        // before it shrinks, and a shrunk one must lose over two thirds
        // again.
        if self.ids.capacity() > 1024 && self.ids.capacity() > 4 * last {
            let keep = last + last / 4;
            self.ids.shrink_to(keep);
            self.data.shrink_to(keep * dim);
            self.codes.shrink_to(keep * dim);
            self.scales.shrink_to(keep);
            self.rows.shrink_to(keep);
        }
        true
    }

    /// Exact top-k by dot product among ids passing `filter`.
    ///
    /// `filter_first`: evaluate the filter before the dot product (better when
    /// the filter rejects most ids); otherwise the dot product is computed
    /// first and the filter is asked only for rows that would enter the top k.
    pub fn search(&self, query: &[f32], k: usize, filter: &dyn Fn(u64) -> bool, filter_first: bool) -> Vec<(u64, f32)> {
        let mut top = TopK::new(k);
        if k == 0 {
            return Vec::new();
        }
        if self.dim == 0 {
            for &id in &self.ids {
                if filter(id) {
                    top.push(Hit { score: 0.0, id });
                }
            }
            return top.into_sorted();
        }
        let rows = self.data.chunks_exact(self.dim).zip(self.ids.iter().copied());
        if filter_first {
            for (v, id) in rows {
                if filter(id) {
                    top.push(Hit { score: dot_f16(query, v), id });
                }
            }
        } else {
            for (v, id) in rows {
                let hit = Hit { score: dot_f16(query, v), id };
                if top.would_accept(hit) && filter(id) {
                    top.push(hit);
                }
            }
        }
        top.into_sorted()
    }

    /// Top-k by exact dot product among ids passing `filter`, ranked first
    /// by the `i8` estimate: keeps the best `candidates` rows by estimate
    /// (ties: smaller id), then rescores them with [`dot_f16`] and returns the
    /// best `k`, so every returned score is the one [`search`](Self::search)
    /// gives (the `f32` dot product with the stored row). The
    /// result equals [`search`](Self::search)'s whenever the true top k are
    /// among the `candidates` best estimates; with `candidates ≥ len` it
    /// always does.
    ///
    /// `query_codes` are the query's codes from
    /// [`quantize`](crate::embed::quant::quantize) (its scale is a common factor of
    /// every estimate and is not needed). `plan` says when `filter` is
    /// asked ([`FilterPlan`]): with [`FilterPlan::First`], estimates are
    /// computed for passing rows only; with [`FilterPlan::AfterRescore`],
    /// the best `candidates` rows by estimate are rescored whatever the
    /// filter says and the best `k` that pass are returned (the same hits
    /// as the other plans whenever those candidates all pass).
    pub fn search_quantized(
        &self,
        query: &[f32],
        query_codes: &[i8],
        k: usize,
        candidates: usize,
        filter: &dyn Fn(u64) -> bool,
        plan: FilterPlan,
    ) -> Vec<(u64, f32)> {
        let dim = self.dim;
        if k == 0 {
            return Vec::new();
        }
        if dim == 0 || candidates <= k {
            return self.search(query, k, filter, plan == FilterPlan::First);
        }
        let filter_first = plan == FilterPlan::First;
        if plan == FilterPlan::AfterRescore {
            let mut best = TopK::new(candidates);
            self.rank_estimates(query_codes, &mut best, &|_| true);
            let mut rescored: Vec<Hit> = best
                .heap
                .into_iter()
                .filter_map(|Reverse(Hit { id, .. })| self.get(id).map(|v| Hit { score: dot_f16(query, v), id }))
                .collect();
            rescored.sort_unstable_by(|a, b| b.cmp(a));
            let mut out = Vec::with_capacity(k);
            for h in rescored {
                if out.len() == k {
                    break;
                }
                if filter(h.id) {
                    out.push((h.id, h.score));
                }
            }
            if out.len() == k || self.ids.len() <= candidates {
                return out;
            }
        }
        // `i32 → f32` is exact below 2^24, i.e. for |dot| ≤ dim · 127² up to
        // dim 1040; beyond that the estimate is rounded, still deterministically.
        let estimate = |row: usize, d: i32| Hit { score: self.scales[row] * d as f32, id: self.ids[row] };
        let mut cand = TopK::new(candidates);
        if filter_first {
            for (row, (c, &id)) in self.codes.chunks_exact(dim).zip(&self.ids).enumerate() {
                if filter(id) {
                    cand.push(estimate(row, dot_i8(query_codes, c)));
                }
            }
        } else {
            // The filter is asked of the rows that rank only: the best
            // `wide` rows by estimate are kept unfiltered, then asked best
            // first until `candidates` pass. Every row outside them ranks
            // below all of them, so those are the best `candidates` passing
            // rows of the whole store, exactly as asking the filter of each
            // row that would enter (about `candidates · ln(len/candidates)`
            // calls, each a lookup of the caller's) finds. When fewer pass
            // and rows were left out, the scan runs again asking as it goes.
            let wide = candidates.saturating_add(candidates / 2);
            let mut best = TopK::new(wide);
            self.rank_estimates(query_codes, &mut best, &|_| true);
            let complete = self.ids.len() <= wide;
            for (id, score) in best.into_sorted() {
                if cand.heap.len() == candidates {
                    break;
                }
                if filter(id) {
                    cand.push(Hit { score, id });
                }
            }
            if cand.heap.len() < candidates && !complete {
                cand = TopK::new(candidates);
                self.rank_estimates(query_codes, &mut cand, filter);
            }
        }
        let mut top = TopK::new(k);
        for h in cand.heap {
            let Reverse(Hit { id, .. }) = h;
            if let Some(v) = self.get(id) {
                top.push(Hit { score: dot_f16(query, v), id });
            }
        }
        top.into_sorted()
    }

    /// Ranks every row by its `i8` estimate into `top`, asking `filter` of
    /// a row only when it would enter.
    fn rank_estimates(&self, query_codes: &[i8], top: &mut TopK, filter: &dyn Fn(u64) -> bool) {
        let dim = self.dim;
        let mut dots = [0i32; SCAN_BLOCK];
        let mut floor = top.floor();
        for (b, block) in self.codes.chunks(SCAN_BLOCK * dim).enumerate() {
            let n = block.len() / dim;
            dot_i8_rows(query_codes, block, &mut dots[..n]);
            for (j, &d) in dots[..n].iter().enumerate() {
                let row = b * SCAN_BLOCK + j;
                // Cheap reject first: most rows score below the floor.
                if self.scales[row] * (d as f32) < floor {
                    continue;
                }
                let hit = Hit { score: self.scales[row] * d as f32, id: self.ids[row] };
                if top.would_accept(hit) && filter(hit.id) {
                    top.push(hit);
                    floor = top.floor();
                }
            }
        }
    }

    /// Heap bytes held (capacity-based estimate).
    pub fn memory_bytes(&self) -> usize {
        self.data.capacity() * 2
            + self.codes.capacity()
            + self.scales.capacity() * 4
            + self.ids.capacity() * 8
            // hashbrown: one (key, value) slot plus one control byte per bucket;
            // capacity() is ~7/8 of the bucket count.
            + self.rows.capacity() * (16 + 1) * 8 / 7
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn dot_matches_naive_for_all_tail_lengths() {
        for n in 0..70 {
            let a: Vec<f32> = (0..n).map(|i| (i as f32 * 0.37).sin()).collect();
            let b: Vec<f32> = (0..n).map(|i| (i as f32 * 0.11).cos()).collect();
            let naive: f64 = a.iter().zip(&b).map(|(x, y)| f64::from(*x) * f64::from(*y)).sum();
            assert!((f64::from(dot(&a, &b)) - naive).abs() < 1e-4, "n={n}");
        }
    }

    #[test]
    fn dot_f16_equals_dot_of_the_widened_row() {
        for n in 0..70 {
            let a: Vec<f32> = (0..n).map(|i| (i as f32 * 0.37).sin()).collect();
            let b: Vec<f32> = (0..n).map(|i| (i as f32 * 0.11).cos() * 0.3).collect();
            let mut h = vec![f16::ZERO; n];
            h.convert_from_f32_slice(&b);
            let widened: Vec<f32> = h.iter().map(|x| x.to_f32()).collect();
            assert_eq!(dot_f16(&a, &h).to_bits(), dot(&a, &widened).to_bits(), "n={n}");
            // Rounding moves each component by at most 2^-11 of itself.
            for (x, y) in b.iter().zip(&widened) {
                assert!((x - y).abs() <= x.abs() * 2f32.powi(-11), "n={n}: {x} -> {y}");
            }
        }
    }

    /// Every filter plan of a quantised scan gives the hits of asking the
    /// filter of every row first, bit for bit (`AfterRescore` when every
    /// row passes): random stores, filters, `k` and candidate counts.
    #[test]
    fn filter_plans_agree() {
        use proptest::prelude::*;
        let mut runner =
            proptest::test_runner::TestRunner::new(proptest::test_runner::Config { cases: 64, ..Default::default() });
        let strategy = (50usize..700, 0u64..1000, 1usize..30, 1usize..6, 0u64..5);
        runner
            .run(&strategy, |(n, seed, k, factor, modulo)| {
                let dim = 24;
                let unit = |i: u64| {
                    let v: Vec<f32> =
                        (0..dim).map(|j| ((i * 7919 + seed * 104_729 + j as u64 * 31) as f32 * 0.37).sin()).collect();
                    let norm = v.iter().map(|x| x * x).sum::<f32>().sqrt();
                    v.into_iter().map(|x| x / norm).collect::<Vec<f32>>()
                };
                let mut s = ExactStore::new(dim);
                for id in 0..n as u64 {
                    s.insert(id, &unit(id));
                }
                let q = unit(1_000_000 + seed);
                let mut codes = vec![0i8; dim];
                crate::embed::quant::quantize(&q, &mut codes);
                let candidates = k * factor + 1;
                let filter = |id: u64| modulo == 0 || !id.is_multiple_of(modulo + 1);
                let first = s.search_quantized(&q, &codes, k, candidates, &filter, FilterPlan::First);
                let ranked = s.search_quantized(&q, &codes, k, candidates, &filter, FilterPlan::Ranked);
                let bits = |r: &[(u64, f32)]| r.iter().map(|&(id, x)| (id, x.to_bits())).collect::<Vec<_>>();
                prop_assert_eq!(bits(&ranked), bits(&first));
                if modulo == 0 {
                    let after = s.search_quantized(&q, &codes, k, candidates, &filter, FilterPlan::AfterRescore);
                    prop_assert_eq!(bits(&after), bits(&first));
                } else {
                    // Some rows fail: the plan still returns `k` passing hits
                    // (or every passing row), best first.
                    let after = s.search_quantized(&q, &codes, k, candidates, &filter, FilterPlan::AfterRescore);
                    prop_assert!(after.iter().all(|&(id, _)| filter(id)));
                    prop_assert_eq!(after.len(), first.len());
                    prop_assert!(after.windows(2).all(|w| w[0].1 >= w[1].1));
                }
                Ok(())
            })
            .unwrap();
    }

    #[test]
    fn stored_similarity_is_within_rounding_of_the_f32_cosine() {
        let dim = 384;
        let mut s = ExactStore::new(dim);
        let unit = |seed: u64| {
            let v: Vec<f32> = (0..dim).map(|i| ((i as u64 * 31 + seed * 17) as f32 * 0.013).sin()).collect();
            let n = v.iter().map(|x| x * x).sum::<f32>().sqrt();
            v.into_iter().map(|x| x / n).collect::<Vec<f32>>()
        };
        let vs: Vec<Vec<f32>> = (0..50).map(unit).collect();
        for (id, v) in vs.iter().enumerate() {
            s.insert(id as u64, v);
        }
        let q = unit(999);
        for (id, v) in vs.iter().enumerate() {
            let stored = s.similarity(id as u64, &q).unwrap_or(f32::NAN);
            assert!((stored - dot(&q, v)).abs() <= 2f32.powi(-11), "{id}: {stored} vs {}", dot(&q, v));
            assert_eq!(Some(stored), s.vector(id as u64).map(|w| dot(&q, &w)));
        }
        for (id, score) in s.search(&q, 10, &|_| true, false) {
            assert_eq!(Some(score), s.similarity(id, &q));
        }
    }

    #[test]
    fn topk_orders_by_score_then_id() {
        let mut t = TopK::new(3);
        for (id, s) in [(5, 0.5), (1, 0.9), (3, 0.5), (2, 0.1), (4, 0.5)] {
            t.push(Hit { score: s, id });
        }
        assert_eq!(t.into_sorted(), vec![(1, 0.9), (3, 0.5), (4, 0.5)]);
        let mut t0 = TopK::new(0);
        t0.push(Hit { score: 1.0, id: 1 });
        assert!(t0.into_sorted().is_empty());
    }

    #[test]
    fn growth_is_bounded_and_memory_returned_after_mass_removal() {
        let mut s = ExactStore::new(4);
        for id in 0..5000u64 {
            s.insert(id, &[1.0, 0.0, 0.0, 0.0]);
        }
        // Small rows double.
        assert!(s.data.capacity() <= 2 * 5000 * 4, "{}", s.data.capacity());
        // Rows past `DOUBLE_BELOW_BYTES` grow by a quarter.
        let dim = 4096;
        let mut big = ExactStore::new(dim);
        let v: Vec<f32> = (0..dim).map(|i| if i == 0 { 1.0 } else { 0.0 }).collect();
        let rows = DOUBLE_BELOW_BYTES / (2 * dim) * 3 / 2;
        for id in 0..rows as u64 {
            big.insert(id, &v);
        }
        assert!(rows * dim * 2 > DOUBLE_BELOW_BYTES);
        assert!(big.data.capacity() <= rows * dim * 5 / 4 + dim, "{} for {rows} rows", big.data.capacity() / dim);
        drop(big);
        let full = s.memory_bytes();
        for id in 0..4500u64 {
            assert!(s.remove(id));
        }
        assert!(s.memory_bytes() < full / 3, "{} vs {full}", s.memory_bytes());
        for id in 4500..5000u64 {
            assert_eq!(s.vector(id), Some(vec![1.0, 0.0, 0.0, 0.0]));
        }
    }

    /// A vector and its `f16` rounding (what the vector cache gives back on
    /// open) make the same row and the same codes, inserted new or over an
    /// existing row.
    #[test]
    fn a_vector_and_its_f16_rounding_make_the_same_row_and_codes() {
        let dim = 384;
        let mut x: u64 = 0x2545_f491_4f6c_dd1d;
        for trial in 0..50u64 {
            let v: Vec<f32> = (0..dim)
                .map(|_| {
                    x ^= x << 13;
                    x ^= x >> 7;
                    x ^= x << 17;
                    ((x >> 40) as f32 / (1u64 << 24) as f32 - 0.5) * 0.1
                })
                .collect();
            let r: Vec<f32> = v.iter().map(|c| f16::from_f32(*c).to_f32()).collect();
            let (mut a, mut b) = (ExactStore::new(dim), ExactStore::new(dim));
            a.insert(trial, &v);
            b.insert(trial, &r);
            assert_eq!(a.get(trial), b.get(trial));
            assert_eq!(a.codes(trial), b.codes(trial), "trial {trial}");
            // Overwriting in place gives the same as well.
            a.insert(trial, &r);
            b.insert(trial, &v);
            assert_eq!(a.codes(trial), b.codes(trial), "trial {trial}, in place");
        }
    }

    #[test]
    fn swap_remove_keeps_map_consistent() {
        let mut s = ExactStore::new(2);
        for id in 0..5u64 {
            s.insert(id, &[id as f32, 1.0]);
        }
        assert!(s.remove(1));
        assert!(!s.remove(1));
        assert_eq!(s.len(), 4);
        for id in [0u64, 2, 3, 4] {
            assert_eq!(s.vector(id), Some(vec![id as f32, 1.0]));
        }
        assert_eq!(s.get(1), None);
        s.insert(3, &[9.0, 9.0]);
        assert_eq!(s.vector(3), Some(vec![9.0, 9.0]));
        assert_eq!(s.len(), 4);
        for id in [0u64, 2, 3, 4] {
            assert!(s.remove(id));
        }
        assert_eq!(s.len(), 0);
        assert!(s.search(&[1.0, 0.0], 3, &|_| true, false).is_empty());
    }
}

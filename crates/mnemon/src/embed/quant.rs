//! `i8` codes of unit vectors and their integer dot products, for the
//! quantised scan of the exact vector store (`index::exact`).
//!
//! Each vector is quantised on its own (symmetric, per-vector scale): with
//! `m = max |xᵢ|`, the scale is `s = m / 127` and the code of `xᵢ` is
//! `round(xᵢ / s)` in `-127..=127`. The estimate of `q · x` is
//! `s_q · s_x · Σ cq_i · cx_i`; the integer sum is exact, so the estimate
//! depends only on the two vectors (not on the order of inserts, on other
//! vectors, or on the machine). A per-dimension scale (one per component,
//! from the value range over all stored vectors) would have to be refitted
//! as vectors arrive, which would rewrite every code; with per-vector scales
//! an insert or a removal touches one row only. On unit vectors of dimension
//! 384 the estimate is within about 0.005 of the exact cosine, so a scan that
//! keeps a few times `k` candidates by estimate and rescores them with `f32`
//! finds the exact top k (recall@10 measured in `benches/index.rs` and
//! checked in the unit tests).

use std::sync::LazyLock;

/// Largest code magnitude: codes are symmetric (`-127..=127`), so that
/// negating a vector negates its codes exactly.
const LEVELS: f32 = 127.0;

/// The best instruction set this machine offers the integer kernel,
/// detected once (`pulp` wraps the kernel in functions compiled for AVX2 or
/// newer and picks one at run time; the kernel itself is plain safe Rust
/// that LLVM vectorises, and integer sums are exact, so every machine
/// computes the same values).
static ARCH: LazyLock<pulp::Arch> = LazyLock::new(pulp::Arch::new);

/// Writes the codes of `v` into `out` (same length) and returns the scale
/// `s` such that `xᵢ ≈ s · codeᵢ`. Codes are rounded half away from zero by
/// truncating `y ± 0.5` rather than by `f32::round`, a `libm` call that
/// keeps the loop from vectorising (it took 7% of an int8 encoder batch,
/// which quantises every activation row with this function).
///
/// A vector whose largest magnitude is 0 or not finite (a zero vector, or one
/// with an infinite component) gets scale 0 and all-zero codes, so its
/// estimate against any query is 0; a NaN component gets code 0 (NaN is
/// ignored when taking the maximum, and the float-to-int conversion maps NaN
/// to 0).
#[inline(always)]
pub(crate) fn quantize(v: &[f32], out: &mut [i8]) -> f32 {
    let m = v.iter().fold(0.0f32, |m, x| m.max(x.abs()));
    if m == 0.0 || !m.is_finite() {
        out.iter_mut().for_each(|c| *c = 0);
        return 0.0;
    }
    let inv = LEVELS / m;
    for (c, x) in out.iter_mut().zip(v) {
        // In range by construction (|x| ≤ m); the clamp guards rounding, and
        // `as` saturates (NaN → 0), so the conversion is total.
        let y = (x * inv).clamp(-LEVELS, LEVELS);
        *c = (y + 0.5f32.copysign(y)) as i8;
    }
    m / LEVELS
}

/// Integer dot product of two code slices (shorter length wins).
///
/// Written as a plain sum of widened products: integer addition is
/// associative, so LLVM's loop vectoriser may reorder it freely and turns it
/// into 16-bit multiplies that add adjacent pairs into 32-bit lanes
/// (`vpmaddwd` under AVX2), the fastest of the forms measured (a 16-lane
/// accumulator array and explicit 16-bit pair sums were 1.3× slower on
/// 10k × 384 codes). The result is exact, so it does not depend on the
/// order. `|result| ≤ len · 127²`, which fits `i32` for any length below
/// 133 000.
#[inline(always)]
fn dot_i8_kernel(a: &[i8], b: &[i8]) -> i32 {
    a.iter().zip(b).map(|(x, y)| i32::from(*x) * i32::from(*y)).sum()
}

/// Integer dot product of `query` with one row of codes.
pub(crate) fn dot_i8(query: &[i8], row: &[i8]) -> i32 {
    struct Op<'a>(&'a [i8], &'a [i8]);
    impl pulp::WithSimd for Op<'_> {
        type Output = i32;
        #[inline(always)]
        fn with_simd<S: pulp::Simd>(self, _simd: S) -> i32 {
            dot_i8_kernel(self.0, self.1)
        }
    }
    ARCH.dispatch(Op(query, row))
}

/// Integer dot products of `query` (`dim` codes) with consecutive rows of
/// `codes` (row-major, `dim` codes each), written to `out[i]` for row `i`;
/// as many rows as both `out` and `codes` hold. One run-time dispatch per
/// call, so callers pass blocks of rows.
pub(crate) fn dot_i8_rows(query: &[i8], codes: &[i8], out: &mut [i32]) {
    struct Op<'a>(&'a [i8], &'a [i8], &'a mut [i32]);
    impl pulp::WithSimd for Op<'_> {
        type Output = ();
        #[inline(always)]
        fn with_simd<S: pulp::Simd>(self, _simd: S) {
            let Op(q, codes, out) = self;
            if q.is_empty() {
                out.iter_mut().for_each(|o| *o = 0);
                return;
            }
            for (o, row) in out.iter_mut().zip(codes.chunks_exact(q.len())) {
                *o = dot_i8_kernel(q, row);
            }
        }
    }
    ARCH.dispatch(Op(query, codes, out));
}

/// Integer dot products of `query` with the rows `rows` names, each row's
/// codes given by `row`: `out[i]` gets row `rows[i]`'s, for as many as both
/// `rows` and `out` hold (a row shorter than `query` counts its own length).
/// One run-time dispatch per call, so a graph search passes a node's
/// unvisited neighbours together.
///
/// # Panics
/// When `row` does.
pub(crate) fn dot_i8_gather_with<'r, F>(query: &[i8], rows: &[u32], row: F, out: &mut [i32])
where
    F: Fn(u32) -> &'r [i8],
{
    struct Op<'a, F>(&'a [i8], &'a [u32], F, &'a mut [i32]);
    impl<'r, F: Fn(u32) -> &'r [i8]> pulp::WithSimd for Op<'_, F> {
        type Output = ();
        #[inline(always)]
        fn with_simd<S: pulp::Simd>(self, _simd: S) {
            let Op(q, rows, row, out) = self;
            for (o, &r) in out.iter_mut().zip(rows) {
                *o = dot_i8_kernel(q, row(r));
            }
        }
    }
    ARCH.dispatch(Op(query, rows, row, out));
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn quantize_round_trips_within_half_a_step() {
        let v: Vec<f32> = (0..50).map(|i| ((i as f32) * 0.7).sin() * 0.3).collect();
        let mut c = vec![0i8; v.len()];
        let s = quantize(&v, &mut c);
        assert!(s > 0.0);
        assert!(c.iter().any(|x| x.unsigned_abs() == 127));
        for (x, q) in v.iter().zip(&c) {
            assert!((x - s * f32::from(*q)).abs() <= s * 0.5 + 1e-7, "{x} {q} {s}");
        }
        // Negation is exact.
        let neg: Vec<f32> = v.iter().map(|x| -x).collect();
        let mut cn = vec![0i8; v.len()];
        assert_eq!(quantize(&neg, &mut cn), s);
        assert!(c.iter().zip(&cn).all(|(a, b)| *a == -*b));
    }

    #[test]
    fn degenerate_vectors_get_zero_codes() {
        let mut c = vec![5i8; 4];
        assert_eq!(quantize(&[0.0; 4], &mut c), 0.0);
        assert_eq!(c, [0; 4]);
        let mut c = vec![5i8; 3];
        assert_eq!(quantize(&[1.0, f32::INFINITY, 0.5], &mut c), 0.0);
        assert_eq!(c, [0; 3]);
        let mut c = vec![5i8; 3];
        let s = quantize(&[f32::NAN, 1.0, -0.5], &mut c);
        assert_eq!(s, 1.0 / 127.0);
        assert_eq!(c, [0, 127, -64]);
    }

    #[test]
    fn integer_dot_matches_naive_for_all_tail_lengths() {
        for n in 0..70usize {
            let a: Vec<i8> = (0..n).map(|i| ((i * 37 % 255) as i32 - 127) as i8).collect();
            let b: Vec<i8> = (0..n).map(|i| ((i * 91 % 255) as i32 - 127) as i8).collect();
            let naive: i32 = a.iter().zip(&b).map(|(x, y)| i32::from(*x) * i32::from(*y)).sum();
            assert_eq!(dot_i8(&a, &b), naive, "n={n}");
            let rows: Vec<i8> = b.iter().chain(&a).copied().collect();
            let mut out = [0i32; 3];
            dot_i8_rows(&a, &rows, &mut out);
            if n > 0 {
                assert_eq!(out[..2], [naive, dot_i8(&a, &a)]);
                let mut gathered = [0i32; 3];
                dot_i8_gather_with(&a, &[1, 0, 1], |r| &rows[r as usize * a.len()..][..a.len()], &mut gathered);
                assert_eq!(gathered, [dot_i8(&a, &a), naive, dot_i8(&a, &a)]);
            }
        }
        let extreme = vec![-127i8; 384];
        assert_eq!(dot_i8(&extreme, &extreme), 384 * 127 * 127);
    }
}

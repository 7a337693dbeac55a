//! Int8 matrix products for the encoder's linear layers, on processors with
//! AVX-512 VNNI (`vpdpbusd`: 64 multiply-adds of `u8 × i8` into `i32` per
//! instruction, four times the lanes of an `f32` fused multiply-add).
//!
//! Quantisation (the scheme of ONNX Runtime's dynamic quantisation and of
//! Jacob et al. 2018, "Quantization and Training of Neural Networks for
//! Efficient Integer-Arithmetic-Only Inference", symmetric variant):
//! * weights once at load, per output column: `q = round(w / s)`,
//!   `s = max |w| / 127`, `q ∈ [-127, 127]`;
//! * activations at each product, per row (per token, so a text's vector
//!   never depends on the rest of its batch): the same rule, stored as
//!   `q + 128 ∈ [1, 255]` because `vpdpbusd` takes one unsigned operand;
//! * `y[r][j] = s_r · s_j · (Σ (q_rk + 128) · q_kj − 128 · Σ_k q_kj)`,
//!   exact in `i32` (sums within `k · 255 · 127`, offsets within
//!   `k · 128 · 127`: their difference fits for `k` ≤ [`MAX_INPUTS`]).
//!
//! Measured on MiniLM and e5-small (`cargo bench --bench embed`): cosine to
//! the `f32` encoder's vectors ≥ 0.99 on the bench texts; see
//! `bert::Precision` for where it is used.
//!
//! The kernel is the one `unsafe` part of the encoder: the `core::arch`
//! loads and stores take pointers, and a function compiled for AVX-512 may
//! only be called once the processor is known to have it. Elsewhere the
//! same integer arithmetic runs in plain Rust, with identical results.
#![allow(unsafe_code)]

/// The most inputs a quantised matrix may have: the kernel's `i32` sums
/// minus the offsets stay below 2³¹ (`k · (255 + 128) · 127 < 2³¹`).
pub(crate) const MAX_INPUTS: usize = 44_000;

// Weights and activations are quantised by the rule of the vector index's
// quantised scan (`index::quant::quantize`): symmetric, one scale per row,
// codes in `-127..=127`, scale 0 for a zero or non-finite row, NaN coded 0.
use crate::embed::quant::quantize as quantize_row;

/// Output columns per tile: four 512-bit registers of 16 `i32`.
const NR: usize = 64;
/// Rows per micro-tile: 6 rows × 4 registers = 24 accumulators, plus 4
/// weight registers and one broadcast, within the 32 AVX-512 registers.
const MR: usize = 6;
/// Rows per task when a product is split across threads.
const ROWS_PER_TASK: usize = 8 * MR;
/// Products below this many multiply-adds run on the calling thread
/// (a single short query), where handing work to the pool costs more than
/// it saves.
const PARALLEL_MACS: usize = 1 << 22;

/// Whether this processor runs the int8 kernel (AVX-512 F, BW and VNNI).
pub(crate) fn available() -> bool {
    #[cfg(target_arch = "x86_64")]
    {
        std::arch::is_x86_feature_detected!("avx512f")
            && std::arch::is_x86_feature_detected!("avx512bw")
            && std::arch::is_x86_feature_detected!("avx512vnni")
    }
    #[cfg(not(target_arch = "x86_64"))]
    {
        false
    }
}

/// A weight matrix quantised to int8 per output column and packed for the
/// kernel: for each tile of 64 columns, for each group of 4 inputs, the 4
/// bytes of each of the 64 columns (256 bytes).
pub(crate) struct QuantMatrix {
    /// Inputs (`k`).
    k: usize,
    /// Groups of 4 inputs (`⌈k / 4⌉`).
    groups: usize,
    /// Outputs (`n`).
    n: usize,
    /// `⌈n / 64⌉` tiles × `groups` × 256 bytes (`i8` bit patterns).
    packed: Vec<u8>,
    /// Per output column: the dequantisation scale `s_j`.
    scale: Vec<f32>,
    /// Per output column (tiles × 64, zero past `n`): `128 · Σ_k q_kj`.
    offset: Vec<i32>,
}

impl QuantMatrix {
    /// Quantises `w`, `n × k` row-major (one row per output, as PyTorch
    /// stores `Linear.weight`), for products `x · wᵀ`.
    ///
    /// # Errors
    /// [`crate::Error::Embedder`] when `k` passes [`MAX_INPUTS`] or `w` does
    /// not hold `n × k` values.
    pub(crate) fn from_rows(w: &[f32], n: usize, k: usize) -> crate::Result<Self> {
        if k == 0 || k > MAX_INPUTS || w.len() != n * k {
            return Err(crate::Error::Embedder(
                format!("int8 products: a {n} × {k} matrix from {} values (1..={MAX_INPUTS} inputs)", w.len()).into(),
            ));
        }
        let groups = k.div_ceil(4);
        let tiles = n.div_ceil(NR);
        let mut packed = vec![0u8; tiles * groups * NR * 4];
        let mut scale = vec![0f32; n];
        let mut offset = vec![0i32; tiles * NR];
        let mut codes = vec![0i8; k];
        for (j, row) in w.chunks_exact(k).enumerate() {
            scale[j] = quantize_row(row, &mut codes);
            let (t, c) = (j / NR, j % NR);
            let mut sum = 0i32;
            for (i, &q) in codes.iter().enumerate() {
                sum += i32::from(q);
                packed[((t * groups + i / 4) * NR + c) * 4 + i % 4] = q.to_le_bytes()[0];
            }
            offset[j] = 128 * sum;
        }
        Ok(Self { k, groups, n, packed, scale, offset })
    }

    /// `x · wᵀ` for `x` of `rows × k` (row-major); returns `rows × n`.
    ///
    /// # Errors
    /// [`crate::Error::Embedder`] when `x` does not hold `rows × k` values.
    pub(crate) fn matmul(&self, x: &[f32], rows: usize) -> crate::Result<Vec<f32>> {
        if x.len() != rows * self.k {
            return Err(crate::Error::Embedder(
                format!("int8 products: {} values for {rows} rows of {}", x.len(), self.k).into(),
            ));
        }
        if rows == 0 {
            return Ok(Vec::new());
        }
        let width = self.groups * 4;
        let mut xq = vec![128u8; rows * width];
        let mut xs = vec![0f32; rows];
        ARCH.dispatch(Kernel::Quantize { x, k: self.k, xq: &mut xq, xs: &mut xs });
        let mut y = vec![0f32; rows * self.n];
        if rows * self.k * self.n < PARALLEL_MACS {
            ARCH.dispatch(Kernel::Rows { m: self, xq: &xq, xs: &xs, y: &mut y });
        } else {
            use rayon::prelude::*;
            let (xq_tasks, ys) = (xq.par_chunks(ROWS_PER_TASK * width), y.par_chunks_mut(ROWS_PER_TASK * self.n));
            xq_tasks
                .zip(xs.par_chunks(ROWS_PER_TASK))
                .zip(ys)
                .for_each(|((xq, xs), y)| ARCH.dispatch(Kernel::Rows { m: self, xq, xs, y }));
        }
        Ok(y)
    }

    /// The product of the quantised rows `xq` (scales `xs`) into `y`.
    #[inline(always)]
    fn rows_into(&self, xq: &[u8], xs: &[f32], y: &mut [f32]) {
        let width = self.groups * 4;
        let panel = self.groups * NR * 4;
        let mut acc = [[0i32; NR]; MR];
        for (t, b) in self.packed.chunks_exact(panel).enumerate() {
            let cols = NR.min(self.n - t * NR);
            let (sc, off) = (&self.scale[t * NR..][..cols], &self.offset[t * NR..][..cols]);
            for (r0, (a, s)) in xq.chunks(MR * width).zip(xs.chunks(MR)).enumerate() {
                tile(a, width, s.len(), b, &mut acc);
                for (r, &sr) in s.iter().enumerate() {
                    let row = &mut y[(r0 * MR + r) * self.n + t * NR..][..cols];
                    for (((o, &a), &sj), &oj) in row.iter_mut().zip(&acc[r]).zip(sc).zip(off) {
                        // |a| ≤ k·255·127 and |oj| ≤ k·128·127: the difference
                        // fits i32 for k < 44,000 (checked at load).
                        *o = (sr * sj) * (a - oj) as f32;
                    }
                }
            }
        }
    }
}

/// Activation quantisation of `x` (`rows × k`) into `xq` (rows of `width`
/// bytes, `q + 128`, padding left at 128) and `xs` (per-row scales).
#[inline(always)]
fn quantize(x: &[f32], k: usize, xq: &mut [u8], xs: &mut [f32]) {
    let width = xq.len() / xs.len().max(1);
    let mut codes = vec![0i8; k];
    for ((src, dst), s) in x.chunks_exact(k).zip(xq.chunks_exact_mut(width)).zip(xs) {
        *s = quantize_row(src, &mut codes);
        for (d, &q) in dst.iter_mut().zip(&codes) {
            *d = (q as u8) ^ 0x80;
        }
    }
}

/// The element-wise parts of a product, compiled for each instruction set
/// `pulp` supports (the loops vectorise to AVX2 / AVX-512 where present).
enum Kernel<'a> {
    /// [`quantize`].
    Quantize { x: &'a [f32], k: usize, xq: &'a mut [u8], xs: &'a mut [f32] },
    /// [`QuantMatrix::rows_into`].
    Rows { m: &'a QuantMatrix, xq: &'a [u8], xs: &'a [f32], y: &'a mut [f32] },
}

impl pulp::WithSimd for Kernel<'_> {
    type Output = ();
    #[inline(always)]
    fn with_simd<S: pulp::Simd>(self, _simd: S) {
        match self {
            Kernel::Quantize { x, k, xq, xs } => quantize(x, k, xq, xs),
            Kernel::Rows { m, xq, xs, y } => m.rows_into(xq, xs, y),
        }
    }
}

static ARCH: std::sync::LazyLock<pulp::Arch> = std::sync::LazyLock::new(pulp::Arch::new);

/// `acc[r][c] = Σ_g Σ_b a[r·width + 4g + b] · b[(g·64 + c)·4 + b]` for the
/// first `rows` (≤ 6) rows of `a` and the 64 columns of panel `b`: the
/// AVX-512 VNNI kernel where the processor has it, else the same integer
/// arithmetic in plain Rust (identical results, several times slower than
/// the `f32` path; [`available`] tells which).
fn tile(a: &[u8], width: usize, rows: usize, b: &[u8], acc: &mut [[i32; NR]; MR]) {
    assert!(
        (1..=MR).contains(&rows) && a.len() >= rows * width && b.len() >= width / 4 * NR * 4 && width.is_multiple_of(4)
    );
    #[cfg(target_arch = "x86_64")]
    if *VNNI {
        // SAFETY: `VNNI` is true only where the processor has AVX-512 F,
        // BW and VNNI; the bounds were checked above.
        unsafe {
            match rows {
                1 => vnni::tile::<1>(a, width, b, acc),
                2 => vnni::tile::<2>(a, width, b, acc),
                3 => vnni::tile::<3>(a, width, b, acc),
                4 => vnni::tile::<4>(a, width, b, acc),
                5 => vnni::tile::<5>(a, width, b, acc),
                _ => vnni::tile::<6>(a, width, b, acc),
            }
        }
        return;
    }
    tile_portable(a, width, rows, b, acc);
}

/// [`tile`] in plain Rust.
fn tile_portable(a: &[u8], width: usize, rows: usize, b: &[u8], acc: &mut [[i32; NR]; MR]) {
    for (r, out) in acc.iter_mut().enumerate().take(rows) {
        out.fill(0);
        let row = &a[r * width..(r + 1) * width];
        for (x, w) in row.chunks_exact(4).zip(b.chunks_exact(NR * 4)) {
            for (o, col) in out.iter_mut().zip(w.chunks_exact(4)) {
                *o += x.iter().zip(col).map(|(&x, &c)| i32::from(x) * i32::from(i8::from_le_bytes([c]))).sum::<i32>();
            }
        }
    }
}

/// [`available`], asked once.
#[cfg(target_arch = "x86_64")]
static VNNI: std::sync::LazyLock<bool> = std::sync::LazyLock::new(available);

#[cfg(target_arch = "x86_64")]
mod vnni {
    use std::arch::x86_64::{
        __m512i, _mm512_dpbusd_epi32, _mm512_loadu_si512, _mm512_set1_epi32, _mm512_setzero_si512, _mm512_storeu_si512,
    };

    use super::{MR, NR};

    /// The micro-kernel of [`super::tile`] for `R` rows.
    ///
    /// # Safety
    /// The processor must have AVX-512 F, BW and VNNI; `a` must hold
    /// `R · width` bytes and `b` `width / 4 · 256` bytes (checked by the
    /// caller).
    #[target_feature(enable = "avx512f,avx512bw,avx512vnni")]
    pub(super) unsafe fn tile<const R: usize>(a: &[u8], width: usize, b: &[u8], acc: &mut [[i32; NR]; MR]) {
        let mut sum = [[_mm512_setzero_si512(); 4]; R];
        let (ap, bp) = (a.as_ptr(), b.as_ptr());
        for g in 0..width / 4 {
            // SAFETY: g · 256 + 256 ≤ b.len(), and 4g + 4 ≤ width with
            // (R − 1) · width + 4g + 4 ≤ a.len() (the caller's bounds).
            let (w0, w1, w2, w3) = unsafe {
                let p = bp.add(g * NR * 4).cast::<__m512i>();
                (
                    _mm512_loadu_si512(p),
                    _mm512_loadu_si512(p.add(1)),
                    _mm512_loadu_si512(p.add(2)),
                    _mm512_loadu_si512(p.add(3)),
                )
            };
            for (r, s) in sum.iter_mut().enumerate() {
                // SAFETY: as above.
                let x = unsafe { ap.add(r * width + g * 4).cast::<i32>().read_unaligned() };
                let x = _mm512_set1_epi32(x);
                s[0] = _mm512_dpbusd_epi32(s[0], x, w0);
                s[1] = _mm512_dpbusd_epi32(s[1], x, w1);
                s[2] = _mm512_dpbusd_epi32(s[2], x, w2);
                s[3] = _mm512_dpbusd_epi32(s[3], x, w3);
            }
        }
        for (s, out) in sum.iter().zip(acc.iter_mut()) {
            for (c, v) in s.iter().enumerate() {
                // SAFETY: each row of `acc` holds 64 i32 = 4 registers.
                unsafe { _mm512_storeu_si512(out.as_mut_ptr().add(c * 16).cast::<__m512i>(), *v) };
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// A deterministic pseudo-random matrix in [-1, 1) (an LCG; no seed
    /// dependence on the platform).
    fn matrix(len: usize, seed: u64) -> Vec<f32> {
        let mut s = seed;
        (0..len)
            .map(|_| {
                s = s.wrapping_mul(6364136223846793005).wrapping_add(1442695040888963407);
                ((s >> 40) as f32 / (1u64 << 24) as f32) * 2.0 - 1.0
            })
            .collect()
    }

    #[test]
    fn matches_the_f32_product_within_quantisation_error() {
        // Shapes that exercise partial tiles, partial micro-tiles, k not a
        // multiple of 4, and the parallel path.
        for &(rows, k, n) in &[(1, 8, 3), (7, 13, 70), (13, 384, 1152), (300, 384, 1536), (50, 1536, 384)] {
            let x = matrix(rows * k, 1 + rows as u64);
            let w = matrix(n * k, 7 + k as u64);
            let q = QuantMatrix::from_rows(&w, n, k).unwrap();
            let y = q.matmul(&x, rows).unwrap();
            for r in 0..rows {
                let (got, mut want) = (&y[r * n..(r + 1) * n], vec![0f32; n]);
                for (j, o) in want.iter_mut().enumerate() {
                    *o = (0..k).map(|i| x[r * k + i] * w[j * k + i]).sum();
                }
                let dot: f32 = got.iter().zip(&want).map(|(a, b)| a * b).sum();
                let norm = |v: &[f32]| v.iter().map(|a| a * a).sum::<f32>().sqrt();
                let cos = dot / (norm(got) * norm(&want));
                assert!(cos > 0.999, "rows {rows} k {k} n {n} row {r}: cosine {cos}");
            }
        }
    }

    #[test]
    fn zero_and_non_finite_rows_give_zero() {
        let w = matrix(16 * 8, 3);
        let q = QuantMatrix::from_rows(&w, 16, 8).unwrap();
        let mut x = vec![0f32; 16];
        x[8] = f32::NAN;
        let y = q.matmul(&x, 2).unwrap();
        assert!(y.iter().all(|v| *v == 0.0), "{y:?}");
    }

    #[test]
    fn the_kernel_equals_the_portable_arithmetic() {
        let width = 96;
        let a: Vec<u8> = matrix(MR * width, 11).iter().map(|v| ((v + 1.0) * 127.5) as u8).collect();
        let b: Vec<u8> = matrix(width / 4 * NR * 4, 12).iter().map(|v| (v * 127.0) as i8 as u8).collect();
        for rows in 1..=MR {
            let (mut fast, mut slow) = ([[0i32; NR]; MR], [[0i32; NR]; MR]);
            tile(&a, width, rows, &b, &mut fast);
            tile_portable(&a, width, rows, &b, &mut slow);
            assert_eq!(fast[..rows], slow[..rows], "rows {rows}");
        }
    }
}

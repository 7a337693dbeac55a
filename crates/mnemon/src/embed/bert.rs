//! BERT encoder layers on the CPU, shared by the MiniLM and e5 embedders.
//!
//! Both models are post-LayerNorm BERT encoders (Devlin et al. 2019) with
//! the exact (erf) GELU: per layer, self-attention, a dense projection,
//! residual + LayerNorm, a GELU feed-forward block, residual + LayerNorm.
//!
//! Layout: the tokens of every sequence of a batch are packed into one
//! `tokens × hidden` row-major matrix without padding (a sequence's rows are
//! consecutive). The linear layers, the large majority of the work, never
//! compute a padded position, and attention runs over each sequence's own
//! rows, so no attention mask is needed. The result for a sequence does not
//! depend on what else is in its batch.
//!
//! The matrix products go to candle (`Tensor::matmul`: the `gemm` crate's
//! kernels, AVX-512 where the processor has it, on candle's thread pool).
//! Everything between them is fused here into one pass over the rows each:
//! bias + GELU, bias + residual + LayerNorm, and attention (scores, softmax,
//! weighted sum of values, one row of scores at a time). These passes are
//! plain safe Rust that LLVM vectorises; [`pulp`] compiles them for AVX2 or
//! AVX-512 as well and picks the best at run time. The exponential and erf
//! are polynomial / rational approximations that vectorise (`exp` relative
//! error ≤ 3e-7 and `erf` absolute error ≤ 5e-7 in `f32`, a few units in
//! the last place, tested against `libm`), where `libm`'s scalar calls took a fifth of the time of a
//! forward pass (profiled with `perf` on `benches/embed.rs`).

use std::sync::LazyLock;

use candle_core::{Device, Tensor};

use crate::error::{Error, Result};

static ARCH: LazyLock<pulp::Arch> = LazyLock::new(pulp::Arch::new);

/// One of the fused passes between matrix products.
enum Pass<'a> {
    /// `add_bias` on `qkv`, then `attention` into `ctx`.
    Attention { qkv: &'a mut [f32], bias: &'a [f32], lens: &'a [usize], heads: usize, ctx: &'a mut [f32] },
    /// `add_norm`.
    AddNorm { x: &'a mut [f32], bias: &'a [f32], residual: &'a [f32], norm: &'a (Vec<f32>, Vec<f32>), eps: f32 },
    /// `bias_gelu`.
    BiasGelu { x: &'a mut [f32], bias: &'a [f32] },
}

impl pulp::WithSimd for Pass<'_> {
    type Output = ();
    /// Inlined, with the kernels it calls, into functions compiled for each
    /// instruction set `pulp` supports.
    #[inline(always)]
    fn with_simd<S: pulp::Simd>(self, _simd: S) {
        match self {
            Pass::Attention { qkv, bias, lens, heads, ctx } => {
                add_bias(qkv, bias);
                attention(qkv, lens, heads, bias.len() / 3, ctx);
            }
            Pass::AddNorm { x, bias, residual, norm, eps } => add_norm(x, bias, residual, norm, eps),
            Pass::BiasGelu { x, bias } => bias_gelu(x, bias),
        }
    }
}

/// Runs a pass compiled for the best instruction set the machine offers.
fn run(pass: Pass<'_>) {
    ARCH.dispatch(pass);
}

fn candle_err(e: candle_core::Error) -> Error {
    Error::Embedder(crate::error::Failure::with_source(format!("encoder: {e}"), e))
}

/// Shape of an encoder.
#[derive(Debug, Clone, Copy)]
pub(crate) struct Dims {
    /// Encoder layers (6 for MiniLM-L6, 12 for e5-small).
    pub layers: usize,
    /// Hidden size (384 for both).
    pub hidden: usize,
    /// Attention heads; must divide `hidden`.
    pub heads: usize,
    /// Feed-forward width (1536 for both).
    pub ffn: usize,
    /// LayerNorm epsilon (the model's `layer_norm_eps`).
    pub eps: f32,
}

/// The arithmetic of the encoder's matrix products (the linear layers;
/// attention, GELU and LayerNorm always run in `f32`).
///
/// Measured with `cargo bench --bench embed` on a 2-core AVX-512 VNNI
/// machine: `Int8` against `F32` in the same run, and cosine ≥ 0.99 between
/// the two encoders' vectors (the bench prints both).
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Hash)]
pub enum Precision {
    /// `Int8` where the processor has AVX-512 VNNI, else `F32`. The
    /// environment variable `MNEMON_EMBED_PRECISION` (`f32`, `int8` or
    /// `auto`) overrides the choice for every door (CLI, MCP, Python).
    #[default]
    Auto,
    /// `f32` products (the `gemm` crate through candle): the vectors of the
    /// published model, to float rounding.
    F32,
    /// Weights quantised to int8 per output column at load, activations
    /// per row at each product, `i32` sums (see `embed::int8`): on a
    /// processor without AVX-512 VNNI the same integer arithmetic runs in
    /// plain Rust (identical vectors, several times slower than `F32`).
    Int8,
}

impl Precision {
    /// The precision `self` stands for on this machine: `F32` or `Int8`.
    ///
    /// # Errors
    /// [`Error::InvalidInput`] (field `MNEMON_EMBED_PRECISION`) when `self`
    /// is `Auto` and the variable holds anything but `f32`, `int8`, `auto`
    /// or nothing (any case, surrounding spaces ignored).
    pub fn resolve(self) -> Result<Precision> {
        if self != Precision::Auto {
            return Ok(self);
        }
        let auto = || if super::int8::available() { Precision::Int8 } else { Precision::F32 };
        match std::env::var("MNEMON_EMBED_PRECISION") {
            Err(std::env::VarError::NotPresent) => Ok(auto()),
            Ok(v) => match v.trim().to_ascii_lowercase().as_str() {
                "" | "auto" => Ok(auto()),
                "f32" => Ok(Precision::F32),
                "int8" => Ok(Precision::Int8),
                other => Err(Error::invalid(
                    "MNEMON_EMBED_PRECISION",
                    format!("{other:?} is not a precision: f32, int8 or auto"),
                )),
            },
            Err(e) => Err(Error::invalid("MNEMON_EMBED_PRECISION", e.to_string())),
        }
    }
}

/// One linear layer's weight matrix, in the arithmetic of the encoder's
/// [`Precision`].
enum Linear {
    /// Stored transposed (`in × out`, row-major) for `x · W`.
    F32(Tensor),
    /// Quantised per output column.
    Int8(super::int8::QuantMatrix),
}

impl Linear {
    /// `w` (`out × in`, row-major, as PyTorch stores `Linear.weight`).
    fn new(w: Vec<f32>, out: usize, inp: usize, precision: Precision) -> Result<Self> {
        match precision {
            Precision::Int8 => super::int8::QuantMatrix::from_rows(&w, out, inp).map(Linear::Int8),
            _ => transposed(w, out, inp).map(Linear::F32),
        }
    }

    /// `x · W` for `x` of `rows × cols`.
    fn apply(&self, x: &[f32], rows: usize, cols: usize) -> Result<Vec<f32>> {
        match self {
            Linear::F32(w) => matmul(x, rows, cols, w),
            Linear::Int8(w) => {
                debug_assert_eq!(x.len(), rows * cols);
                w.matmul(x, rows)
            }
        }
    }
}

/// One layer's weights: the linear layers' matrices, biases and LayerNorm
/// parameters as plain vectors.
struct Layer {
    /// Query, key and value projections side by side: `hidden → 3·hidden`.
    qkv: Linear,
    qkv_bias: Vec<f32>,
    attn_out: Linear,
    attn_out_bias: Vec<f32>,
    attn_norm: (Vec<f32>, Vec<f32>),
    ffn_in: Linear,
    ffn_in_bias: Vec<f32>,
    ffn_out: Linear,
    ffn_out_bias: Vec<f32>,
    out_norm: (Vec<f32>, Vec<f32>),
}

/// A BERT encoder (the layers after the embedding stage).
pub(crate) struct Encoder {
    dims: Dims,
    layers: Vec<Layer>,
    precision: Precision,
}

/// `w` (`out × in`, row-major, as PyTorch stores `Linear.weight`) as a
/// contiguous `in × out` tensor. Copied in 32 × 32 tiles: element by element
/// the scattered writes took a fifth of a one-shot CLI call's time, and a
/// transposed view instead of a copy made the products of few rows (one
/// short query) 3–5× slower.
fn transposed(w: Vec<f32>, out: usize, inp: usize) -> Result<Tensor> {
    const TILE: usize = 32;
    let mut t = vec![0f32; w.len()];
    for o0 in (0..out).step_by(TILE) {
        for i0 in (0..inp).step_by(TILE) {
            for o in o0..(o0 + TILE).min(out) {
                let row = &w[o * inp..(o + 1) * inp];
                for i in i0..(i0 + TILE).min(inp) {
                    t[i * out + o] = row[i];
                }
            }
        }
    }
    Tensor::from_vec(t, (inp, out), &Device::Cpu).map_err(candle_err)
}

impl Encoder {
    /// Builds the encoder with the products of `precision` (resolved here);
    /// `weight(layer, name)` returns a tensor of the layer by its Hugging
    /// Face BERT name under `encoder.layer.N.` (`attention.self.query.weight`,
    /// …), flattened row-major.
    ///
    /// # Errors
    /// What `weight` returns, and [`Error::Embedder`] when `heads` does not
    /// divide `hidden` or a tensor has the wrong number of values.
    pub(crate) fn load(
        dims: Dims,
        precision: Precision,
        mut weight: impl FnMut(usize, &str) -> Result<Vec<f32>>,
    ) -> Result<Self> {
        let precision = precision.resolve()?;
        let Dims { layers, hidden: h, heads, ffn, .. } = dims;
        if heads == 0 || h % heads != 0 {
            return Err(Error::Embedder(format!("encoder: {heads} heads do not divide hidden size {h}").into()));
        }
        let mut get = |l: usize, name: &str, len: usize| -> Result<Vec<f32>> {
            let v = weight(l, name)?;
            if v.len() != len {
                return Err(Error::Embedder(
                    format!("encoder: layer {l} {name}: {} values, expected {len}", v.len()).into(),
                ));
            }
            Ok(v)
        };
        let mut out = Vec::with_capacity(layers);
        for l in 0..layers {
            let mut qkv_w = get(l, "attention.self.query.weight", h * h)?;
            qkv_w.extend(get(l, "attention.self.key.weight", h * h)?);
            qkv_w.extend(get(l, "attention.self.value.weight", h * h)?);
            let mut qkv_bias = get(l, "attention.self.query.bias", h)?;
            qkv_bias.extend(get(l, "attention.self.key.bias", h)?);
            qkv_bias.extend(get(l, "attention.self.value.bias", h)?);
            out.push(Layer {
                qkv: Linear::new(qkv_w, 3 * h, h, precision)?,
                qkv_bias,
                attn_out: Linear::new(get(l, "attention.output.dense.weight", h * h)?, h, h, precision)?,
                attn_out_bias: get(l, "attention.output.dense.bias", h)?,
                attn_norm: (
                    get(l, "attention.output.LayerNorm.weight", h)?,
                    get(l, "attention.output.LayerNorm.bias", h)?,
                ),
                ffn_in: Linear::new(get(l, "intermediate.dense.weight", ffn * h)?, ffn, h, precision)?,
                ffn_in_bias: get(l, "intermediate.dense.bias", ffn)?,
                ffn_out: Linear::new(get(l, "output.dense.weight", h * ffn)?, h, ffn, precision)?,
                ffn_out_bias: get(l, "output.dense.bias", h)?,
                out_norm: (get(l, "output.LayerNorm.weight", h)?, get(l, "output.LayerNorm.bias", h)?),
            });
        }
        Ok(Self { dims, layers: out, precision })
    }

    /// The resolved arithmetic of the products (`F32` or `Int8`).
    pub(crate) fn precision(&self) -> Precision {
        self.precision
    }

    /// Runs every layer over `x`, the packed `tokens × hidden` embedding-stage
    /// output of sequences of lengths `lens` (summing to `tokens`), and
    /// returns the last hidden states in the same layout.
    ///
    /// # Errors
    /// [`Error::Embedder`] when `x` does not hold `Σ lens × hidden` values or
    /// a matrix product fails.
    pub(crate) fn forward(&self, mut x: Vec<f32>, lens: &[usize]) -> Result<Vec<f32>> {
        let Dims { hidden: h, heads, ffn, eps, .. } = self.dims;
        let tokens: usize = lens.iter().sum();
        if x.len() != tokens * h {
            return Err(Error::Embedder(format!("encoder: {} inputs for {tokens} tokens of {h}", x.len()).into()));
        }
        if tokens == 0 {
            return Ok(x);
        }
        let mut ctx = vec![0f32; tokens * h];
        for layer in &self.layers {
            let mut qkv = layer.qkv.apply(&x, tokens, h)?;
            run(Pass::Attention { qkv: &mut qkv, bias: &layer.qkv_bias, lens, heads, ctx: &mut ctx });
            let mut a = layer.attn_out.apply(&ctx, tokens, h)?;
            run(Pass::AddNorm { x: &mut a, bias: &layer.attn_out_bias, residual: &x, norm: &layer.attn_norm, eps });
            let mut f = layer.ffn_in.apply(&a, tokens, h)?;
            run(Pass::BiasGelu { x: &mut f, bias: &layer.ffn_in_bias });
            x = layer.ffn_out.apply(&f, tokens, ffn)?;
            run(Pass::AddNorm { x: &mut x, bias: &layer.ffn_out_bias, residual: &a, norm: &layer.out_norm, eps });
        }
        Ok(x)
    }
}

/// The embedding stage's sum and LayerNorm, in place: `x` holds the word
/// embedding rows of sequences of lengths `lens` packed one after the other
/// (`Σ lens × hidden`, `hidden = token_type.len()`); each row gets its
/// position's row of `positions` (`max_positions × hidden`, positions from
/// 0) and the token-type embedding added, then LayerNorm with `norm`
/// (weight, bias) and `eps`. Sequences longer than `positions` allows are
/// the caller's to refuse (their extra rows are left unnormalised).
pub(crate) fn embedding_stage(
    x: &mut [f32],
    lens: &[usize],
    positions: &[f32],
    token_type: &[f32],
    norm: &(Vec<f32>, Vec<f32>),
    eps: f32,
) {
    let h = token_type.len();
    let mut rest = x;
    for &len in lens {
        let (seq, tail) = rest.split_at_mut((len * h).min(rest.len()));
        let n = seq.len().min(positions.len());
        run(Pass::AddNorm { x: &mut seq[..n], bias: token_type, residual: &positions[..n], norm, eps });
        rest = tail;
    }
}

/// `x · w` for `x` of `rows × cols` and `w` of `cols × out`.
fn matmul(x: &[f32], rows: usize, cols: usize, w: &Tensor) -> Result<Vec<f32>> {
    let t = Tensor::from_slice(x, (rows, cols), &Device::Cpu).map_err(candle_err)?;
    t.matmul(w).and_then(|y| y.flatten_all()).and_then(|y| y.to_vec1::<f32>()).map_err(candle_err)
}

/// Mean of each sequence's rows of the packed `tokens × hidden` matrix,
/// scaled to unit L2 norm (a zero or non-finite mean is left as is), in
/// sequence order.
pub(crate) fn mean_pool(out: &[f32], lens: &[usize], hidden: usize) -> Vec<Vec<f32>> {
    let mut start = 0;
    lens.iter()
        .map(|&len| {
            let mut v = vec![0f32; hidden];
            for row in out[start * hidden..(start + len) * hidden].chunks_exact(hidden) {
                v.iter_mut().zip(row).for_each(|(a, &r)| *a += r);
            }
            start += len;
            let n = len.max(1) as f32;
            v.iter_mut().for_each(|a| *a /= n);
            super::normalize(&mut v);
            v
        })
        .collect()
}

/// Lanes of the partial sums below: 16 `f32`s fill one AVX-512 register
/// (two AVX2 ones), and separate lanes let LLVM vectorise a float sum it may
/// not reorder.
const LANES: usize = 16;

#[inline(always)]
fn dot(a: &[f32], b: &[f32]) -> f32 {
    let mut acc = [0f32; LANES];
    let (ac, bc) = (a.chunks_exact(LANES), b.chunks_exact(LANES));
    let tail: f32 = ac.remainder().iter().zip(bc.remainder()).map(|(x, y)| x * y).sum();
    for (x, y) in ac.zip(bc) {
        for l in 0..LANES {
            acc[l] += x[l] * y[l];
        }
    }
    acc.iter().sum::<f32>() + tail
}

#[inline(always)]
fn sum(a: &[f32]) -> f32 {
    let mut acc = [0f32; LANES];
    let c = a.chunks_exact(LANES);
    let tail: f32 = c.remainder().iter().sum();
    for x in c {
        for l in 0..LANES {
            acc[l] += x[l];
        }
    }
    acc.iter().sum::<f32>() + tail
}

#[inline(always)]
fn add_bias(x: &mut [f32], bias: &[f32]) {
    for row in x.chunks_exact_mut(bias.len()) {
        row.iter_mut().zip(bias).for_each(|(v, b)| *v += b);
    }
}

/// `x ← LayerNorm(x + bias + residual)` row by row (rows of `bias.len()`).
#[inline(always)]
fn add_norm(x: &mut [f32], bias: &[f32], residual: &[f32], (weight, beta): &(Vec<f32>, Vec<f32>), eps: f32) {
    let h = bias.len();
    let n = h as f32;
    for (row, res) in x.chunks_exact_mut(h).zip(residual.chunks_exact(h)) {
        row.iter_mut().zip(bias).zip(res).for_each(|((v, b), r)| *v += b + r);
        let mean = sum(row) / n;
        row.iter_mut().for_each(|v| *v -= mean);
        let var = dot(row, row) / n;
        let inv = 1.0 / (var + eps).sqrt();
        row.iter_mut().zip(weight).zip(beta).for_each(|((v, w), b)| *v = *v * inv * w + b);
    }
}

/// `x ← GELU(x + bias)` with the exact (erf) GELU, row by row.
#[inline(always)]
fn bias_gelu(x: &mut [f32], bias: &[f32]) {
    for row in x.chunks_exact_mut(bias.len()) {
        row.iter_mut().zip(bias).for_each(|(v, b)| {
            let y = *v + b;
            *v = 0.5 * y * (1.0 + erf(y * std::f32::consts::FRAC_1_SQRT_2));
        });
    }
}

/// Scaled dot-product attention of every head within each sequence:
/// `qkv` holds `[q | k | v]` rows of `3·hidden`, `ctx` receives
/// `tokens × hidden` (head `i` in columns `i·d .. (i+1)·d`, `d = hidden /
/// heads`). Softmax subtracts the row's maximum first. A head's keys are
/// first gathered transposed (`d × len`, rows padded to a multiple of
/// [`LANES`]), so [`LANES`] scores at a time are `d` scaled additions of
/// key-row slices held in registers.
#[inline(always)]
fn attention(qkv: &[f32], lens: &[usize], heads: usize, h: usize, ctx: &mut [f32]) {
    let d = h / heads;
    let w = 3 * h;
    let scale = 1.0 / (d as f32).sqrt();
    let longest = lens.iter().copied().max().unwrap_or(0).div_ceil(LANES) * LANES;
    let mut scores = vec![0f32; longest];
    let mut keys = vec![0f32; d * longest];
    let mut start = 0;
    for &len in lens {
        let rows = &qkv[start * w..(start + len) * w];
        for head in 0..heads {
            let (qo, ko, vo) = (head * d, h + head * d, 2 * h + head * d);
            // Padding columns hold stale keys; their scores are never read.
            let padded = len.div_ceil(LANES) * LANES;
            let kt = &mut keys[..d * padded];
            for (j, row) in rows.chunks_exact(w).enumerate() {
                for (c, &k) in row[ko..ko + d].iter().enumerate() {
                    kt[c * padded + j] = k;
                }
            }
            for i in 0..len {
                let q = &rows[i * w + qo..i * w + qo + d];
                for (jb, out) in scores[..padded].chunks_exact_mut(LANES).enumerate() {
                    // UNROLL independent sums, so the additions do not wait
                    // on each other.
                    let mut a = [0f32; LANES];
                    for (c, &qc) in q.iter().enumerate() {
                        let k = &kt[c * padded + jb * LANES..c * padded + (jb + 1) * LANES];
                        for l in 0..LANES {
                            a[l] += qc * k[l];
                        }
                    }
                    for l in 0..LANES {
                        out[l] = a[l] * scale;
                    }
                }
                let s = &mut scores[..len];
                let max = s.iter().fold(f32::NEG_INFINITY, |m, &v| m.max(v));
                s.iter_mut().for_each(|v| *v = exp(*v - max));
                let inv = 1.0 / sum(s);
                // Context: LANES output columns at a time, summed over the
                // sequence in registers.
                let dst = &mut ctx[(start + i) * h + qo..(start + i) * h + qo + d];
                let mut chunks = dst.chunks_exact_mut(LANES);
                for (cb, out) in (&mut chunks).enumerate() {
                    let c0 = vo + cb * LANES;
                    let mut a = [0f32; LANES];
                    for (&p, row) in s.iter().zip(rows.chunks_exact(w)) {
                        let v = &row[c0..c0 + LANES];
                        for l in 0..LANES {
                            a[l] += p * v[l];
                        }
                    }
                    for l in 0..LANES {
                        out[l] = a[l] * inv;
                    }
                }
                let done = d - d % LANES;
                for (c, out) in chunks.into_remainder().iter_mut().enumerate() {
                    let col = vo + done + c;
                    *out = s.iter().zip(rows.chunks_exact(w)).map(|(&p, row)| p * row[col]).sum::<f32>() * inv;
                }
            }
        }
        start += len;
    }
}

/// `eˣ` in `f32` for `x` in about −87..88 (clamped there): `2ⁿ · eʳ` with
/// `n = round(x / ln 2)` and `eʳ` (`|r| ≤ ln 2 / 2`) from its degree-6
/// Taylor polynomial (remainder below 1.2e-7), `ln 2` split in two parts
/// for an exact `r` (Cody–Waite reduction, as in Cephes `expf`). Branch-free
/// so that it vectorises; relative error ≤ 3e-7 (tested).
#[inline(always)]
fn exp(x: f32) -> f32 {
    /// `1.5 · 2²³`: adding it rounds to an integer held in the low mantissa
    /// bits.
    const ROUND: f32 = 12_582_912.0;
    const LN2_HI: f32 = 0.693_359_4;
    const LN2_LO: f32 = -2.121_944_4e-4;
    let x = x.clamp(-87.0, 88.0);
    let t = x * std::f32::consts::LOG2_E + ROUND;
    let n = t - ROUND;
    let r = x - n * LN2_HI - n * LN2_LO;
    let p = 1.0 + r * (1.0 + r * (0.5 + r * (1.0 / 6.0 + r * (1.0 / 24.0 + r * (1.0 / 120.0 + r * (1.0 / 720.0))))));
    // 2ⁿ: the biased exponent n + 127 (1..=254 for the clamped range).
    let two_n = f32::from_bits(t.to_bits().wrapping_sub(ROUND.to_bits()).wrapping_add(127) << 23);
    p * two_n
}

/// `erf(x)` in `f32`: `x · P(x²) / Q(x²)` on `x` clamped to ±4 (where erf
/// is 1 to within `f32` rounding), with the minimax coefficients of the
/// rational approximation used by Eigen's `generic_fast_erf_float`.
/// Branch-free so that it vectorises; absolute error ≤ 5e-7 (tested).
#[inline(always)]
fn erf(x: f32) -> f32 {
    let x = x.clamp(-4.0, 4.0);
    let x2 = x * x;
    let mut p = -2.726_142_3e-10f32;
    p = p * x2 + 2.770_681_4e-8;
    p = p * x2 - 2.101_024e-6;
    p = p * x2 - 5.692_506_4e-5;
    p = p * x2 - 7.349_906_3e-4;
    p = p * x2 - 2.954_6e-3;
    p = p * x2 - 1.609_603_3e-2;
    let mut q = -1.456_607_2e-5f32;
    q = q * x2 - 2.133_740_6e-4;
    q = q * x2 - 1.682_827e-3;
    q = q * x2 - 7.373_329e-3;
    q = q * x2 - 1.426_474e-2;
    x * p / q
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn exp_matches_libm() {
        let mut worst = 0f32;
        for i in -87_000..88_000 {
            let x = i as f32 / 1000.0;
            let (got, want) = (exp(x), libm::expf(x));
            worst = worst.max(((got - want) / want).abs());
        }
        assert!(worst <= 3e-7, "relative error {worst}");
        assert_eq!(exp(-1000.0), exp(-87.0));
        assert!(exp(0.0) == 1.0);
    }

    #[test]
    fn erf_matches_libm() {
        let mut worst = 0f32;
        for i in -6_000..6_000 {
            let x = i as f32 / 1000.0;
            worst = worst.max((erf(x) - libm::erff(x)).abs());
        }
        assert!(worst <= 5e-7, "absolute error {worst}");
        assert!((erf(f32::INFINITY) - 1.0).abs() <= 5e-7);
    }

    /// The packed encoder against a direct, unfused reading of the BERT
    /// layer on small random weights: padding-free packing, fused bias /
    /// GELU / LayerNorm and the attention loop give the same hidden states.
    #[test]
    fn forward_matches_a_direct_computation() {
        let dims = Dims { layers: 2, hidden: 8, heads: 2, ffn: 12, eps: 1e-12 };
        let mut state = 7u64;
        let mut rand = move |n: usize| -> Vec<f32> {
            (0..n)
                .map(|_| {
                    state = state.wrapping_mul(6_364_136_223_846_793_005).wrapping_add(1_442_695_040_888_963_407);
                    ((state >> 40) as f32 / (1u64 << 24) as f32) - 0.5
                })
                .collect()
        };
        let mut weights = std::collections::HashMap::new();
        for l in 0..dims.layers {
            for (name, len) in [
                ("attention.self.query.weight", 64),
                ("attention.self.query.bias", 8),
                ("attention.self.key.weight", 64),
                ("attention.self.key.bias", 8),
                ("attention.self.value.weight", 64),
                ("attention.self.value.bias", 8),
                ("attention.output.dense.weight", 64),
                ("attention.output.dense.bias", 8),
                ("attention.output.LayerNorm.weight", 8),
                ("attention.output.LayerNorm.bias", 8),
                ("intermediate.dense.weight", 96),
                ("intermediate.dense.bias", 12),
                ("output.dense.weight", 96),
                ("output.dense.bias", 8),
                ("output.LayerNorm.weight", 8),
                ("output.LayerNorm.bias", 8),
            ] {
                weights.insert((l, name), rand(len));
            }
        }
        let enc = Encoder::load(dims, Precision::F32, |l, name| Ok(weights[&(l, name)].clone())).unwrap();
        let enc8 = Encoder::load(dims, Precision::Int8, |l, name| Ok(weights[&(l, name)].clone())).unwrap();
        assert_eq!((enc.precision(), enc8.precision()), (Precision::F32, Precision::Int8));
        let lens = [3usize, 1, 5];
        let x = rand(9 * 8);
        let got = enc.forward(x.clone(), &lens).unwrap();
        let got8 = enc8.forward(x.clone(), &lens).unwrap();

        // Direct computation, one sequence at a time, in f64.
        let lin = |x: &[f64], w: &[f32], b: &[f32], out: usize| -> Vec<f64> {
            let cols = w.len() / out;
            x.chunks(cols)
                .flat_map(|row| {
                    (0..out).map(move |o| {
                        row.iter().zip(&w[o * cols..(o + 1) * cols]).map(|(a, &b)| a * f64::from(b)).sum::<f64>()
                            + f64::from(b[o])
                    })
                })
                .collect()
        };
        let norm = |x: &mut [f64], w: &[f32], b: &[f32]| {
            for row in x.chunks_mut(8) {
                let m = row.iter().sum::<f64>() / 8.0;
                let v = row.iter().map(|a| (a - m) * (a - m)).sum::<f64>() / 8.0;
                for (i, a) in row.iter_mut().enumerate() {
                    *a = (*a - m) / (v + 1e-12).sqrt() * f64::from(w[i]) + f64::from(b[i]);
                }
            }
        };
        let mut start = 0;
        for &len in &lens {
            let mut h: Vec<f64> = x[start * 8..(start + len) * 8].iter().map(|&v| f64::from(v)).collect();
            for l in 0..dims.layers {
                let w = |n: &'static str| &weights[&(l, n)];
                let q = lin(&h, w("attention.self.query.weight"), w("attention.self.query.bias"), 8);
                let k = lin(&h, w("attention.self.key.weight"), w("attention.self.key.bias"), 8);
                let v = lin(&h, w("attention.self.value.weight"), w("attention.self.value.bias"), 8);
                let mut ctx = vec![0f64; len * 8];
                for head in 0..2 {
                    for i in 0..len {
                        let s: Vec<f64> = (0..len)
                            .map(|j| {
                                (0..4).map(|c| q[i * 8 + head * 4 + c] * k[j * 8 + head * 4 + c]).sum::<f64>() / 2.0
                            })
                            .collect();
                        let m = s.iter().cloned().fold(f64::MIN, f64::max);
                        let e: Vec<f64> = s.iter().map(|a| (a - m).exp()).collect();
                        let z: f64 = e.iter().sum();
                        for c in 0..4 {
                            ctx[i * 8 + head * 4 + c] = (0..len).map(|j| e[j] / z * v[j * 8 + head * 4 + c]).sum();
                        }
                    }
                }
                let mut a = lin(&ctx, w("attention.output.dense.weight"), w("attention.output.dense.bias"), 8);
                a.iter_mut().zip(&h).for_each(|(a, r)| *a += r);
                norm(&mut a, w("attention.output.LayerNorm.weight"), w("attention.output.LayerNorm.bias"));
                let f: Vec<f64> = lin(&a, w("intermediate.dense.weight"), w("intermediate.dense.bias"), 12)
                    .into_iter()
                    .map(|y| 0.5 * y * (1.0 + f64::from(libm::erff((y / std::f64::consts::SQRT_2) as f32))))
                    .collect();
                let mut o = lin(&f, w("output.dense.weight"), w("output.dense.bias"), 8);
                o.iter_mut().zip(&a).for_each(|(o, r)| *o += r);
                norm(&mut o, w("output.LayerNorm.weight"), w("output.LayerNorm.bias"));
                h = o;
            }
            for (g, want) in got[start * 8..(start + len) * 8].iter().zip(&h) {
                assert!((f64::from(*g) - want).abs() < 1e-4, "{g} vs {want}");
            }
            // Int8 products: each token's hidden state within quantisation error.
            for (g, want) in got8[start * 8..(start + len) * 8].chunks(8).zip(h.chunks(8)) {
                let dot: f64 = g.iter().zip(want).map(|(a, b)| f64::from(*a) * b).sum();
                let n = |v: &mut dyn Iterator<Item = f64>| v.map(|a| a * a).sum::<f64>().sqrt();
                let cos = dot / (n(&mut g.iter().map(|a| f64::from(*a))) * n(&mut want.iter().copied()));
                assert!(cos > 0.99, "int8 token cosine {cos}");
            }
            start += len;
        }
        let pooled = mean_pool(&got, &lens, 8);
        assert_eq!(pooled.len(), 3);
        for p in pooled {
            assert!((p.iter().map(|a| a * a).sum::<f32>() - 1.0).abs() < 1e-5);
        }
    }

    #[test]
    fn load_refuses_bad_shapes() {
        let dims = Dims { layers: 1, hidden: 8, heads: 3, ffn: 12, eps: 1e-12 };
        assert!(Encoder::load(dims, Precision::F32, |_, _| Ok(vec![0.0; 64])).is_err());
        let dims = Dims { heads: 2, ..dims };
        let err = Encoder::load(dims, Precision::F32, |_, _| Ok(vec![0.0; 5])).err().unwrap();
        assert!(err.to_string().contains("expected 64"), "{err}");
    }
}

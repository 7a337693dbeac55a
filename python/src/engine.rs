//! The native engine handle: open, call an operation of the surface, close.

use std::path::PathBuf;
use std::sync::Arc;

use mnemon::embed;
use mnemon::safety::PiiPolicy;
use mnemon_api::{door, ApiError, ErrorCode, Limits, Request};
use parking_lot::RwLock;
use pyo3::prelude::*;
use pyo3::types::PyBytes;

use crate::embedder::PyEmbedder;
use crate::error::{from_engine, invalid, surface};

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
    /// `key_file`: the key file (64 hex digits, `mnemon key new FILE`) of
    /// an encrypted store; a new store opened with a key is encrypted at
    /// rest. `key_env`: instead, the name of an environment variable that
    /// holds the key. Without either, `MNEMON_KEY_FILE` names the key file,
    /// else `MNEMON_KEY` holds the key, else the store opens without one.
    /// `keyring`: the `KEYRING` of the store an encrypted backup or restore
    /// was made from (default `$MNEMON_KEYRING`). A key is never passed as
    /// a string.
    ///
    /// Raises `SurfaceError`: `invalid_input` for a bad setting (and field
    /// `key` for a key given to a store created without one),
    /// `key_required` for an encrypted store opened without its key (or a
    /// key file that does not exist), `wrong_key` for one opened with
    /// another key (nothing opened or written for either), `locked`
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
        key_file = None,
        key_env = None,
        keyring = None,
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
        key_file: Option<PathBuf>,
        key_env: Option<String>,
        keyring: Option<PathBuf>,
    ) -> PyResult<Engine> {
        let embedder = match (embed_documents, embedder_name) {
            (Some(documents), Some(name)) => door::DoorEmbedder::Caller(Arc::new(
                PyEmbedder::new(py, name, dims, documents, embed_query).map_err(from_engine)?,
            )),
            (Some(_), None) => return Err(invalid("embedder_name", "a caller's embedder needs a name (its model id)")),
            (None, _) if embed_query.is_some() || dims.is_some() => {
                return Err(invalid("embedder", "embed_query and dims go with a caller's embedder (embed_documents)"))
            }
            (None, _) => door::DoorEmbedder::Named(embedder.parse().map_err(from_engine)?),
        };
        let max_response_tokens = door::max_response_tokens(max_response_tokens).map_err(surface)?;
        let pii = pii_policy.as_deref().map(door::pii_policy).transpose().map_err(surface)?;
        let settings = door::OpenSettings {
            path: path.clone(),
            embedder,
            models_dir: models_dir.unwrap_or_else(embed::default_models_dir),
            durability: door::flush_interval(flush_interval_s).map_err(surface)?,
            max_content_bytes,
            pii_policy: pii,
            injection_policy: injection_policy.as_deref().map(door::injection_policy).transpose().map_err(surface)?,
            embed_mode: embed_mode.as_deref().map(door::embed_mode).transpose().map_err(surface)?,
            reranker: door::reranker(reranker.as_deref()).map_err(surface)?,
            keys: door::key_settings(key_file, key_env.as_deref(), keyring).map_err(surface)?,
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
                let resp = mnemon_api::execute_with(&engine, req, &limits)?;
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
        py.detach(move || -> mnemon::Result<Vec<Vec<f32>>> { door::embed_texts(&engine, &texts, query, policy) })
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

//! The native engine handle: open, call an operation of the surface,
//! embed, close — each a task on libuv's thread pool that resolves a Promise.

use std::path::PathBuf;
use std::sync::Arc;

use mnemon::embed::{self, EmbedderChoice};
use mnemon::safety::PiiPolicy;
use mnemon_api::{self as api, door, ApiError, ErrorCode, Limits, Request};
use napi::bindgen_prelude::AsyncTask;
use napi::{Env, Task};
use napi_derive::napi;
use parking_lot::RwLock;
use serde_json::{Map, Value};

use crate::embedder::{EmbedFn, JsEmbedder};
use crate::error::{from_engine, internal, invalid, surface};

/// Options [`open`] reads; any other is refused.
const OPTIONS: &[&str] = &[
    "embedder",
    "embedder_name",
    "dims",
    "models_dir",
    "flush_interval_s",
    "max_content_bytes",
    "pii_policy",
    "injection_policy",
    "max_response_tokens",
    "embed_mode",
    "reranker",
    "key_file",
    "key_env",
    "keyring",
];

/// The embedder a store is opened with, as the options name it: one
/// mnemon loads by name, or the caller's own (made into a
/// [`JsEmbedder`] only once every other option is read).
enum Choice {
    Named(EmbedderChoice),
    Caller { name: String, dims: Option<u32>, func: EmbedFn },
}

/// An open store, shared by every call made through it.
///
/// Calls clone the engine handle (an `Arc`) under a read lock and run on
/// libuv's pool; `close` takes the handle out under the write lock, so a
/// call that starts after it gets `closed` while calls already running
/// finish on their clone.
#[napi]
pub struct Engine {
    inner: Arc<RwLock<Option<mnemon::Engine>>>,
    limits: Limits,
    model_id: String,
    dim: u32,
    path: String,
    max_content_bytes: u32,
    notice: Option<String>,
    pii_policy: PiiPolicy,
}

/// Opens the store in directory `path` off the JavaScript thread.
/// `options` is a JSON object of the settings (see node/src/engine.ts,
/// `OpenOptions`); `embed`, when given, is the caller's embedder, called with one array
/// `[id, texts, query]` per request and answered by [`crate::embed_reply`].
///
/// Rejects with a surface error: `invalid_input` for a bad setting,
/// `locked`, `embedder`, `corrupted`, `incompatible_format`, `io`,
/// `storage`.
#[napi(ts_return_type = "Promise<Engine>")]
pub fn open(
    path: String,
    options: String,
    #[napi(ts_arg_type = "((request: [id: number, texts: string[], query: boolean]) => void) | undefined | null")]
    embed: Option<EmbedFn>,
) -> AsyncTask<OpenTask> {
    AsyncTask::new(OpenTask { input: Some((path, options, embed)) })
}

/// The work of [`open`].
pub struct OpenTask {
    input: Option<(String, String, Option<EmbedFn>)>,
}

/// What a finished open hands to the JavaScript thread.
pub struct Opened {
    engine: mnemon::Engine,
    notice: Option<String>,
    limits: Limits,
    path: String,
    max_content_bytes: usize,
    pii_policy: PiiPolicy,
}

impl Task for OpenTask {
    type Output = Opened;
    type JsValue = Engine;

    fn compute(&mut self) -> napi::Result<Opened> {
        let (path, options, embed) = self.input.take().ok_or_else(|| internal("open ran twice"))?;
        let (settings, max_response_tokens) = parse(path.clone(), &options, embed)?;
        let limits = Limits { max_response_tokens };
        let max_content_bytes = settings.max_content_bytes.unwrap_or(mnemon::DEFAULT_MAX_CONTENT_BYTES);
        let pii_policy = settings.pii_policy.unwrap_or(PiiPolicy::Redact);
        let (engine, notice) = settings.open().map_err(from_engine)?;
        Ok(Opened { engine, notice, limits, path, max_content_bytes, pii_policy })
    }

    fn resolve(&mut self, _env: Env, o: Opened) -> napi::Result<Engine> {
        Ok(Engine {
            model_id: o.engine.embedder().model_id().to_string(),
            dim: u32::try_from(o.engine.embedder().dim()).unwrap_or(u32::MAX),
            inner: Arc::new(RwLock::new(Some(o.engine))),
            limits: o.limits,
            notice: o.notice,
            path: o.path,
            max_content_bytes: u32::try_from(o.max_content_bytes).unwrap_or(u32::MAX),
            pii_policy: o.pii_policy,
        })
    }
}

fn opt_str(opts: &Map<String, Value>, field: &str) -> napi::Result<Option<String>> {
    match opts.get(field) {
        None | Some(Value::Null) => Ok(None),
        Some(Value::String(s)) => Ok(Some(s.clone())),
        Some(other) => Err(invalid(field, format!("expected a string, got {other}"))),
    }
}

fn opt_uint(opts: &Map<String, Value>, field: &str) -> napi::Result<Option<u64>> {
    match opts.get(field) {
        None | Some(Value::Null) => Ok(None),
        Some(Value::Number(n)) => {
            n.as_u64().map(Some).ok_or_else(|| invalid(field, format!("expected a whole number ≥ 0, got {n}")))
        }
        Some(other) => Err(invalid(field, format!("expected a whole number, got {other}"))),
    }
}

fn opt_f64(opts: &Map<String, Value>, field: &str) -> napi::Result<Option<f64>> {
    match opts.get(field) {
        None | Some(Value::Null) => Ok(None),
        Some(Value::Number(n)) => Ok(n.as_f64()),
        Some(other) => Err(invalid(field, format!("expected a number, got {other}"))),
    }
}

/// Reads the options JSON into the settings of [`door::OpenSettings`] and
/// the response cap, every bad value named; the caller's embedder, if any,
/// is made last.
fn parse(path: String, options: &str, embed: Option<EmbedFn>) -> napi::Result<(door::OpenSettings, usize)> {
    let opts: Map<String, Value> =
        serde_json::from_str(options).map_err(|e| invalid("options", format!("must be a JSON object: {e}")))?;
    if let Some(k) = opts.keys().find(|k| !OPTIONS.contains(&k.as_str())) {
        return Err(invalid(k, format!("unknown option; the options are {}", OPTIONS.join(", "))));
    }
    if path.is_empty() {
        return Err(invalid("path", "must not be empty"));
    }
    let name = opt_str(&opts, "embedder_name")?;
    let dims = opt_uint(&opts, "dims")?;
    let named = opt_str(&opts, "embedder")?;
    let choice = match (embed, name) {
        (Some(func), Some(name)) => {
            if named.is_some() {
                return Err(invalid("embedder", "give either a model name or your own embedder, not both"));
            }
            let dims = dims.map(|d| u32::try_from(d).unwrap_or(u32::MAX));
            Choice::Caller { name, dims, func }
        }
        (Some(_), None) => return Err(invalid("embedder_name", "a caller's embedder needs a name (its model id)")),
        (None, Some(_)) => return Err(invalid("embedder_name", "goes with your own embedder, not a model name")),
        (None, None) if dims.is_some() => return Err(invalid("dims", "goes with your own embedder, not a model name")),
        (None, None) => Choice::Named(named.as_deref().unwrap_or("auto").parse().map_err(from_engine)?),
    };
    let size = |n: u64| usize::try_from(n).unwrap_or(usize::MAX);
    let max_response_tokens =
        door::max_response_tokens(opt_uint(&opts, "max_response_tokens")?.map(size)).map_err(surface)?;
    let durability = door::flush_interval(opt_f64(&opts, "flush_interval_s")?).map_err(surface)?;
    let pii_policy = opt_str(&opts, "pii_policy")?.as_deref().map(door::pii_policy).transpose().map_err(surface)?;
    let injection_policy =
        opt_str(&opts, "injection_policy")?.as_deref().map(door::injection_policy).transpose().map_err(surface)?;
    let embed_mode = opt_str(&opts, "embed_mode")?.as_deref().map(door::embed_mode).transpose().map_err(surface)?;
    let reranker = door::reranker(opt_str(&opts, "reranker")?.as_deref()).map_err(surface)?;
    let models_dir = opt_str(&opts, "models_dir")?.map(PathBuf::from).unwrap_or_else(embed::default_models_dir);
    let max_content_bytes = opt_uint(&opts, "max_content_bytes")?.map(size);
    let keys = door::key_settings(
        opt_str(&opts, "key_file")?.map(PathBuf::from),
        opt_str(&opts, "key_env")?.as_deref(),
        opt_str(&opts, "keyring")?.map(PathBuf::from),
    )
    .map_err(surface)?;
    let embedder = match choice {
        Choice::Named(choice) => door::DoorEmbedder::Named(choice),
        Choice::Caller { name, dims, func } => {
            door::DoorEmbedder::Caller(Arc::new(JsEmbedder::new(name, dims, func).map_err(from_engine)?))
        }
    };
    let settings = door::OpenSettings {
        path: PathBuf::from(path),
        embedder,
        models_dir,
        durability,
        max_content_bytes,
        pii_policy,
        injection_policy,
        embed_mode,
        reranker,
        keys,
    };
    Ok((settings, max_response_tokens))
}

/// One operation of the surface, run on the pool.
pub struct CallTask {
    engine: Option<mnemon::Engine>,
    op: String,
    args: String,
    limits: Limits,
}

impl Task for CallTask {
    type Output = String;
    type JsValue = String;

    fn compute(&mut self) -> napi::Result<String> {
        let engine = self.engine.take().ok_or_else(|| from_engine(mnemon::Error::Closed))?;
        let run = || -> Result<String, ApiError> {
            let value: Value = serde_json::from_str(&self.args)
                .map_err(|e| ApiError::invalid("arguments", format!("must be a JSON object: {e}")))?;
            let req = Request::from_op(&self.op, value)?;
            let resp = api::execute_with(&engine, req, &self.limits)?;
            serde_json::to_string(&resp).map_err(|e| ApiError::new(ErrorCode::Internal, e.to_string()))
        };
        run().map_err(surface)
    }

    fn resolve(&mut self, _env: Env, output: String) -> napi::Result<String> {
        Ok(output)
    }
}

/// Embedding with the store's model, run on the pool.
pub struct EmbedTask {
    engine: Option<mnemon::Engine>,
    texts: Vec<String>,
    query: bool,
    policy: PiiPolicy,
}

impl Task for EmbedTask {
    type Output = Vec<Vec<f64>>;
    type JsValue = Vec<Vec<f64>>;

    fn compute(&mut self) -> napi::Result<Vec<Vec<f64>>> {
        let engine = self.engine.take().ok_or_else(|| from_engine(mnemon::Error::Closed))?;
        let run = || -> mnemon::Result<Vec<Vec<f64>>> {
            let vectors = door::embed_texts(&engine, &self.texts, self.query, self.policy)?;
            Ok(vectors.into_iter().map(|v| v.into_iter().map(f64::from).collect()).collect())
        };
        run().map_err(from_engine)
    }

    fn resolve(&mut self, _env: Env, output: Vec<Vec<f64>>) -> napi::Result<Vec<Vec<f64>>> {
        Ok(output)
    }
}

/// Closing: drain, flush, release the lock, on the pool.
pub struct CloseTask {
    engine: Option<mnemon::Engine>,
}

impl Task for CloseTask {
    type Output = ();
    type JsValue = ();

    fn compute(&mut self) -> napi::Result<()> {
        match self.engine.take() {
            Some(engine) => engine.close().map_err(from_engine),
            None => Ok(()),
        }
    }

    fn resolve(&mut self, _env: Env, _output: ()) -> napi::Result<()> {
        Ok(())
    }
}

#[napi]
impl Engine {
    /// Runs operation `op` of the command surface with `args`, a JSON object
    /// as text (the operation's request without `"op"`), and resolves to the
    /// response as JSON text.
    ///
    /// Rejects with a surface error: `invalid_input` (unknown operation or
    /// field, wrong type, bad value; nothing was written), `not_found`,
    /// `conflict`, `rejected`, `closed`, …
    #[napi(ts_return_type = "Promise<string>")]
    pub fn call(&self, op: String, args: String) -> AsyncTask<CallTask> {
        AsyncTask::new(CallTask { engine: self.inner.read().clone(), op, args, limits: self.limits })
    }

    /// Embeds `texts` with the store's embedder, as memories (`query`
    /// false) or as recall queries, after the engine's personal-data policy,
    /// and resolves to unit-length vectors of `dim` components, one per text.
    ///
    /// Rejects with a surface error: `rejected` (personal data under
    /// `reject`), `embedder`, `closed`.
    #[napi(ts_return_type = "Promise<number[][]>")]
    pub fn embed(&self, texts: Vec<String>, query: bool) -> AsyncTask<EmbedTask> {
        AsyncTask::new(EmbedTask { engine: self.inner.read().clone(), texts, query, policy: self.pii_policy })
    }

    /// Drains the writer's queue, flushes and releases the store's lock.
    /// Calls made afterwards reject with `closed`; calls already running
    /// finish first. Closing twice does nothing.
    ///
    /// Rejects with a surface error (code `poisoned`) when the final flush
    /// failed.
    #[napi(ts_return_type = "Promise<void>")]
    pub fn close(&self) -> AsyncTask<CloseTask> {
        AsyncTask::new(CloseTask { engine: self.inner.write().take() })
    }

    /// True once `close` has been called.
    #[napi(getter)]
    pub fn closed(&self) -> bool {
        self.inner.read().is_none()
    }

    /// A line for the user about the store, or null (see the Python door's
    /// `notice`: a store on the hashing embedder while a neural model is
    /// installed, or one just re-embedded with the caller's model).
    #[napi(getter)]
    pub fn notice(&self) -> Option<String> {
        self.notice.clone()
    }

    /// The active embedder's model id, e.g. `hashing-v1-384`.
    #[napi(getter)]
    pub fn model_id(&self) -> String {
        self.model_id.clone()
    }

    /// Dimension of the embedder's vectors.
    #[napi(getter)]
    pub fn dim(&self) -> u32 {
        self.dim
    }

    /// The data directory.
    #[napi(getter)]
    pub fn path(&self) -> String {
        self.path.clone()
    }

    /// Largest memory or observation text, in bytes of UTF-8.
    #[napi(getter)]
    pub fn max_content_bytes(&self) -> u32 {
        self.max_content_bytes
    }

    /// The response cap in estimated tokens.
    #[napi(getter)]
    pub fn max_response_tokens(&self) -> u32 {
        u32::try_from(self.limits.max_response_tokens).unwrap_or(u32::MAX)
    }
}

impl Drop for Engine {
    /// An engine the program dropped without closing is closed on a thread
    /// of its own: closing joins the engine's threads, and one of them may be
    /// waiting for the caller's embedder on the JavaScript thread, which runs
    /// this finaliser.
    fn drop(&mut self) {
        if let Some(engine) = self.inner.write().take() {
            std::thread::spawn(move || drop(engine));
        }
    }
}

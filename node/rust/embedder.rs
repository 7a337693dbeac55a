//! A JavaScript function as the engine's [`Embedder`].
//!
//! The engine calls [`Embedder::embed`] on its own threads (libuv's pool
//! inside a call, the background embedder, or while opening re-embeds a
//! store), never on the JavaScript thread. [`JsEmbedder`] posts the request
//! `(id, texts, query)` to the JavaScript thread through a thread-safe
//! function; the TypeScript side awaits the caller's (possibly async)
//! function and answers with [`crate::embed_reply`], which wakes the waiting
//! thread. The answer is checked here: one vector per text, each of
//! [`Embedder::dim`] finite components, not all zero. Every refusal is an
//! [`mnemon::Error::Embedder`] naming the embedder's model id.

use std::collections::HashMap;
use std::sync::atomic::{AtomicU32, Ordering};
use std::sync::LazyLock;
use std::time::Duration;

use crossbeam_channel::{bounded, Sender};
use mnemon::embed::{EmbedKind, Embedder};
use napi::threadsafe_function::{ThreadsafeFunction, ThreadsafeFunctionCallMode};
use napi::Status;
use parking_lot::Mutex;

/// Text embedded once to learn the dimension when the caller gives none.
const PROBE_TEXT: &str = "dimension probe";

/// How long one call of the caller's function may take before the engine
/// gives up on it (an embedder error).
pub(crate) const EMBED_TIMEOUT: Duration = Duration::from_secs(120);

/// `(id, texts, query)` posted to the JavaScript thread; weak, so a
/// forgotten engine does not keep the process alive.
pub(crate) type EmbedFn =
    ThreadsafeFunction<(u32, Vec<String>, bool), (), (u32, Vec<String>, bool), Status, false, true>;

type Answer = Result<Vec<f64>, String>;

/// Requests waiting for their answer, by id.
static PENDING: LazyLock<Mutex<HashMap<u32, Sender<Answer>>>> = LazyLock::new(|| Mutex::new(HashMap::new()));
static NEXT_ID: AtomicU32 = AtomicU32::new(1);

/// Delivers the answer to request `id` (ignored when nobody waits).
pub(crate) fn reply(id: u32, error: Option<String>, vectors: Option<Vec<f64>>) {
    let Some(tx) = PENDING.lock().remove(&id) else {
        return;
    };
    let answer = match (error, vectors) {
        (Some(e), _) => Err(e),
        (None, Some(v)) => Ok(v),
        (None, None) => Err("answered neither vectors nor an error".into()),
    };
    // The waiter may have timed out and gone; nothing to do then.
    let _ = tx.send(answer);
}

/// The caller's function, reached through a thread-safe function.
pub(crate) struct JsEmbedder {
    model_id: String,
    dim: usize,
    func: EmbedFn,
}

impl JsEmbedder {
    /// Wraps `func` under `model_id`; with `dims` None the dimension is
    /// learnt by embedding one short text (call this off the JavaScript
    /// thread: it waits for the answer).
    ///
    /// # Errors
    /// [`mnemon::Error::InvalidInput`] for a bad `model_id` (field
    /// `embedder_name`) or `dims` (field `dims`, 1..=65,536);
    /// [`mnemon::Error::Embedder`] when the probe fails.
    pub(crate) fn new(model_id: String, dims: Option<u32>, func: EmbedFn) -> mnemon::Result<JsEmbedder> {
        mnemon_api::door::check_model_id(&model_id)?;
        let mut e = JsEmbedder { model_id, dim: 0, func };
        match dims {
            Some(d) if (1..=65_536).contains(&d) => e.dim = d as usize,
            Some(d) => return Err(mnemon::Error::invalid("dims", mnemon::range_reason(1, 65_536, d))),
            None => {
                let v = e.request(&[PROBE_TEXT], EmbedKind::Passage)?;
                e.dim = v.first().map(Vec::len).unwrap_or(0);
                if e.dim == 0 {
                    return Err(e.fail("returned an empty vector for the dimension probe"));
                }
            }
        }
        Ok(e)
    }

    fn fail(&self, what: impl std::fmt::Display) -> mnemon::Error {
        mnemon::Error::Embedder(format!("embedder {}: {what}", self.model_id).into())
    }

    /// Posts `texts` to the JavaScript thread and waits for the checked
    /// vectors.
    fn request(&self, texts: &[&str], kind: EmbedKind) -> mnemon::Result<Vec<Vec<f32>>> {
        let id = NEXT_ID.fetch_add(1, Ordering::Relaxed);
        let (tx, rx) = bounded(1);
        PENDING.lock().insert(id, tx);
        let owned: Vec<String> = texts.iter().map(|t| (*t).to_owned()).collect();
        let status = self.func.call((id, owned, kind == EmbedKind::Query), ThreadsafeFunctionCallMode::NonBlocking);
        if status != Status::Ok {
            PENDING.lock().remove(&id);
            return Err(self.fail(format!("cannot reach the JavaScript thread ({status})")));
        }
        let answer = match rx.recv_timeout(EMBED_TIMEOUT) {
            Ok(a) => a,
            Err(_) => {
                PENDING.lock().remove(&id);
                return Err(self.fail(format!("no answer within {} s", EMBED_TIMEOUT.as_secs())));
            }
        };
        let flat = answer.map_err(|e| self.fail(e))?;
        self.split(&flat, texts.len())
    }

    /// The flat answer as `n` checked vectors.
    fn split(&self, flat: &[f64], n: usize) -> mnemon::Result<Vec<Vec<f32>>> {
        if n == 0 {
            return Ok(Vec::new());
        }
        if flat.is_empty() || !flat.len().is_multiple_of(n) {
            return Err(self.fail(format!("returned {} numbers for {n} texts", flat.len())));
        }
        let dim = flat.len() / n;
        if self.dim != 0 && dim != self.dim {
            return Err(self.fail(format!("returned vectors of {dim} components, expected {}", self.dim)));
        }
        let mut out = Vec::with_capacity(n);
        for (i, row) in flat.chunks(dim).enumerate() {
            let mut v = Vec::with_capacity(dim);
            for (j, x) in row.iter().enumerate() {
                // A finite f64 beyond f32's range becomes infinite here and
                // is refused with the others.
                #[allow(clippy::cast_possible_truncation)]
                let y = *x as f32;
                if !y.is_finite() {
                    return Err(self.fail(format!("vector {i} component {j} is {x} (must be finite, within ±3.4e38)")));
                }
                v.push(y);
            }
            if v.iter().all(|x| *x == 0.0) {
                return Err(self.fail(format!("vector {i} is all zeros (it has no direction)")));
            }
            out.push(v);
        }
        Ok(out)
    }
}

impl Embedder for JsEmbedder {
    fn model_id(&self) -> &str {
        &self.model_id
    }

    fn dim(&self) -> usize {
        self.dim
    }

    fn embed(&self, texts: &[&str], kind: EmbedKind) -> mnemon::Result<Vec<Vec<f32>>> {
        if texts.is_empty() {
            return Ok(Vec::new());
        }
        let mut vectors = self.request(texts, kind)?;
        for v in &mut vectors {
            mnemon::embed::normalize(v);
        }
        Ok(vectors)
    }
}

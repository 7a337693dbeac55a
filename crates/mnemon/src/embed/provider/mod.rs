//! Remote embedding and rerank providers: a model the user already runs,
//! reached over HTTP, behind the same [`Embedder`] trait as the built-in
//! models (and [`Reranker`] for a rerank stage).
//!
//! A provider is named by a spec string ([`ProviderSpec`], e.g.
//! `openai:text-embedding-3-small`, `ollama:nomic-embed-text`,
//! `openai:bge-small-en-v1.5@http://127.0.0.1:7997?dims=384`) wherever an
//! embedder is chosen: `--embedder` / `MNEMON_EMBEDDER`, the MCP server's
//! configuration, Python's `embedder=`. The store records the provider's
//! identity and dimension as its model id, so it is never searched with
//! another model's vectors: naming another embedder re-embeds from the log,
//! and `auto` reopens it with the recorded provider.
//!
//! When the provider is down, a write does not wait for it: the memory is
//! stored at once without its vector (deferred embedding, see
//! [`crate::EmbedMode::Deferred`]) and embedded in the background when the
//! provider answers again; until then recall finds it by its words, and its
//! explanation says `vector_pending`.

mod rerank;
mod spec;
mod transport;

use std::sync::atomic::{AtomicUsize, Ordering};

pub use rerank::{HttpReranker, Reranker};
pub use spec::{
    is_provider_spec, OrderedF32, ProviderKind, ProviderSpec, DEFAULT_BATCH, DEFAULT_IN_FLIGHT, DEFAULT_RERANK_DEPTH,
    DEFAULT_RETRIES, DEFAULT_TIMEOUT_S, MAX_BATCH,
};
use transport::Transport;

use super::calibration::{self, Measured};
use super::{Abstain, EmbedKind, Embedder, SimilarityNorm};
use crate::error::{Error, Result};

/// What mnemon knows of a model a provider serves, found by its name: its
/// prefixes, and the built-in copy's measured calibration
/// ([`Measured`]; the figures are the model's, not the runtime's, to
/// within the runtime's rounding). Options in the spec override each value.
#[derive(Clone, Copy, Debug, PartialEq)]
struct Known {
    query_prefix: &'static str,
    passage_prefix: &'static str,
    calibration: Measured,
}

/// Defaults for a model mnemon has not measured: the [`Embedder`] trait's
/// defaults (raw cosine, near-duplicate 0.92, relevance floor 0.5) and no
/// abstention by meaning (a cosine floor is model-specific; set
/// `abstain_below` once measured, e.g. with `mnemon eval … --abstain auto`).
const UNKNOWN: Known = Known {
    query_prefix: "",
    passage_prefix: "",
    calibration: Measured {
        norm: SimilarityNorm::Raw,
        cross_script_cjk: 0.0,
        near_duplicate: 0.92,
        relevance_floor: 0.5,
        abstain: Abstain::NEVER,
    },
};

/// The known model a served model name is, by the names it is published
/// under (case-insensitive substring): all-MiniLM-L6-v2, bge-small-en(-v1.5)
/// with its query instruction, multilingual-e5-small with its `query: ` /
/// `passage: ` prefixes (the model cards' conventions, which servers do not
/// add).
fn known(model: &str) -> Known {
    let m = model.to_ascii_lowercase();
    if m.contains("all-minilm-l6-v2") {
        Known { calibration: calibration::MINILM, ..UNKNOWN }
    } else if m.contains("bge-small-en") {
        Known {
            query_prefix: "Represent this sentence for searching relevant passages: ",
            calibration: calibration::BGE_SMALL_EN,
            ..UNKNOWN
        }
    } else if m.contains("multilingual-e5-small") {
        Known { query_prefix: "query: ", passage_prefix: "passage: ", calibration: calibration::E5_SMALL }
    } else {
        UNKNOWN
    }
}

/// The identity a store records for vectors made through `spec`:
/// [`ProviderSpec::identity`] with the prefixes the embedder will use (the
/// spec's, else the known model's).
pub fn effective_identity(spec: &ProviderSpec) -> String {
    let k = known(&spec.model);
    let mut s = spec.clone();
    if s.query_prefix.is_empty() {
        s.query_prefix = k.query_prefix.into();
    }
    if s.passage_prefix.is_empty() {
        s.passage_prefix = k.passage_prefix.into();
    }
    s.identity()
}

/// One request's answer: a vector per text, or why there is none.
type Batch = Result<Vec<Vec<f32>>>;

/// An embedder reached over HTTP (see the [module documentation](self)).
pub struct HttpEmbedder {
    spec: &'static ProviderSpec,
    dim: usize,
    id: String,
    known: Known,
    query_prefix: String,
    passage_prefix: String,
    transport: Transport,
    /// Requests sent, for tests and the ingest benchmark.
    requests: AtomicUsize,
}

impl std::fmt::Debug for HttpEmbedder {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("HttpEmbedder").field("model_id", &self.id).finish()
    }
}

impl HttpEmbedder {
    /// An embedder for `spec` (`openai` or `ollama`). The dimension is
    /// `dim` when given (a store's recorded one), else the spec's
    /// `dimensions`/`dims`, else learned from one request embedding the
    /// text `"dimension"`.
    ///
    /// The query and passage prefixes are the spec's, else those of the
    /// known model the name is (multilingual-e5-small: `query: ` and
    /// `passage: `), else none; they are part of the store's model id.
    ///
    /// # Errors
    /// [`Error::InvalidInput`] (field `embedder`) for a `rerank` spec;
    /// when the dimension must be learned, the errors of
    /// [`Embedder::embed`], with a note to give `dims=N` when the provider
    /// is down.
    pub fn connect(spec: &'static ProviderSpec, dim: Option<usize>) -> Result<HttpEmbedder> {
        if spec.kind == ProviderKind::Rerank {
            return Err(Error::invalid("embedder", "a rerank provider ranks texts but does not embed them"));
        }
        let known = known(&spec.model);
        let mut e = HttpEmbedder {
            spec,
            dim: 0,
            id: String::new(),
            known,
            query_prefix: if spec.query_prefix.is_empty() {
                known.query_prefix.into()
            } else {
                spec.query_prefix.clone()
            },
            passage_prefix: if spec.passage_prefix.is_empty() {
                known.passage_prefix.into()
            } else {
                spec.passage_prefix.clone()
            },
            transport: Transport::new(spec),
            requests: AtomicUsize::new(0),
        };
        e.dim = match dim.or(spec.dimensions).or(spec.dims) {
            Some(d) => d,
            None => {
                let v = e.request(&["dimension"]).map_err(|err| match err {
                    Error::ProviderUnavailable { provider, reason } => Error::ProviderUnavailable {
                        provider,
                        reason: format!("{reason}; its dimension could not be learned: give it as dims=N in the spec"),
                    },
                    other => other,
                })?;
                v.first().map_or(0, Vec::len)
            }
        };
        if e.dim == 0 {
            return Err(Error::Embedder(format!("provider {} returned an empty vector", spec.identity()).into()));
        }
        e.id = format!("{}#{}", effective_identity(spec), e.dim);
        Ok(e)
    }

    /// The spec this embedder was made from.
    pub fn spec(&self) -> &'static ProviderSpec {
        self.spec
    }

    /// HTTP requests sent so far (tries included).
    pub fn requests_sent(&self) -> usize {
        self.requests.load(Ordering::Relaxed)
    }

    /// One request for `texts` (at most one batch); the vectors in input
    /// order, as the provider gave them.
    fn request(&self, texts: &[&str]) -> Result<Vec<Vec<f32>>> {
        self.requests.fetch_add(1, Ordering::Relaxed);
        let who = self.spec.identity();
        let (path, body) = match self.spec.kind {
            ProviderKind::OpenAi => {
                let mut b = serde_json::json!({ "model": self.spec.model, "input": texts });
                if let Some(d) = self.spec.dimensions {
                    b["dimensions"] = d.into();
                }
                ("/embeddings", b)
            }
            ProviderKind::Ollama => ("/api/embed", serde_json::json!({ "model": self.spec.model, "input": texts })),
            ProviderKind::Rerank => unreachable!("refused in connect"),
        };
        let answer = self.transport.post(path, &body)?;
        let shape = |what: &str| Error::Embedder(format!("provider {who} answered without {what}").into());
        let rows: Vec<&serde_json::Value> = match self.spec.kind {
            ProviderKind::OpenAi => {
                let data = answer.get("data").and_then(|d| d.as_array()).ok_or_else(|| shape("a `data` list"))?;
                // Each item carries its input's `index`; servers may answer
                // out of order.
                let mut rows: Vec<Option<&serde_json::Value>> = vec![None; data.len()];
                for (i, item) in data.iter().enumerate() {
                    let at = item.get("index").and_then(serde_json::Value::as_u64).map_or(i, |x| x as usize);
                    let slot = rows.get_mut(at).ok_or_else(|| shape("valid `index` values"))?;
                    *slot = Some(item.get("embedding").ok_or_else(|| shape("an `embedding` per item"))?);
                }
                rows.into_iter().collect::<Option<Vec<_>>>().ok_or_else(|| shape("one item per `index`"))?
            }
            _ => answer
                .get("embeddings")
                .and_then(|d| d.as_array())
                .ok_or_else(|| shape("an `embeddings` list"))?
                .iter()
                .collect(),
        };
        if rows.len() != texts.len() {
            return Err(Error::Embedder(
                format!("provider {who} returned {} vectors for {} texts", rows.len(), texts.len()).into(),
            ));
        }
        rows.into_iter()
            .map(|r| {
                let list = r.as_array().ok_or_else(|| {
                    shape("vectors as lists of numbers (base64 encoding is not asked for and not read)")
                })?;
                list.iter()
                    .map(|x| x.as_f64().map(|f| f as f32).ok_or_else(|| shape("numbers in its vectors")))
                    .collect::<Result<Vec<f32>>>()
            })
            .collect()
    }

    /// Checks a vector from the provider: the dimension and finiteness,
    /// naming the provider; normalises it.
    fn check(&self, mut v: Vec<f32>) -> Result<Vec<f32>> {
        if self.dim != 0 && v.len() != self.dim {
            return Err(Error::Embedder(
                format!(
                    "provider {} returned a vector of {} components where the store's are {}: is it serving another model, or another `dimensions`?",
                    self.spec.identity(),
                    v.len(),
                    self.dim
                )
                .into(),
            ));
        }
        if let Some(i) = v.iter().position(|x| !x.is_finite()) {
            return Err(Error::Embedder(
                format!("provider {} returned a non-finite value at component {i}", self.spec.identity()).into(),
            ));
        }
        if !super::normalize(&mut v) {
            return Err(Error::Embedder(
                format!("provider {} returned an all-zero vector", self.spec.identity()).into(),
            ));
        }
        Ok(v)
    }
}

impl Embedder for HttpEmbedder {
    /// The spec's identity with the dimension, e.g.
    /// `openai:bge-small@http://127.0.0.1:7997#384` ([`ProviderSpec::model_id`]).
    fn model_id(&self) -> &str {
        &self.id
    }

    fn dim(&self) -> usize {
        self.dim
    }

    /// Splits `texts` into requests of up to the spec's `batch` texts and
    /// sends up to `in_flight` at once (one provider's requests share that
    /// bound across threads); the vectors come back in input order,
    /// checked and L2-normalised.
    ///
    /// # Errors
    /// [`Error::ProviderUnavailable`] when the provider did not answer
    /// after its retries; [`Error::Embedder`] for a refused request or a
    /// wrong answer (count, dimension, a non-finite value), naming the
    /// provider.
    fn embed(&self, texts: &[&str], kind: EmbedKind) -> Result<Vec<Vec<f32>>> {
        if texts.is_empty() {
            return Ok(Vec::new());
        }
        let prefix = match kind {
            EmbedKind::Query => &self.query_prefix,
            EmbedKind::Passage => &self.passage_prefix,
        };
        let owned: Vec<String> = texts.iter().map(|t| format!("{prefix}{t}")).collect();
        let all: Vec<&str> = owned.iter().map(String::as_str).collect();
        let chunks: Vec<&[&str]> = all.chunks(self.spec.batch).collect();
        let results: Vec<Batch> = if chunks.len() == 1 {
            vec![self.request(chunks[0])]
        } else {
            let next = AtomicUsize::new(0);
            let slots: Vec<parking_lot::Mutex<Option<Batch>>> =
                chunks.iter().map(|_| parking_lot::Mutex::new(None)).collect();
            std::thread::scope(|s| {
                for _ in 0..self.spec.in_flight.min(chunks.len()) {
                    s.spawn(|| loop {
                        let i = next.fetch_add(1, Ordering::Relaxed);
                        let Some(chunk) = chunks.get(i) else { break };
                        let r = self.request(chunk);
                        let failed = r.is_err();
                        *slots[i].lock() = Some(r);
                        if failed {
                            // Stop handing out chunks: the call fails anyway.
                            next.store(chunks.len(), Ordering::Relaxed);
                            break;
                        }
                    });
                }
            });
            slots.into_iter().filter_map(parking_lot::Mutex::into_inner).collect()
        };
        let mut out = Vec::with_capacity(texts.len());
        for r in results {
            for v in r? {
                out.push(self.check(v)?);
            }
        }
        if out.len() != texts.len() {
            return Err(Error::Embedder(
                format!("provider {} returned {} vectors for {} texts", self.spec.identity(), out.len(), texts.len())
                    .into(),
            ));
        }
        Ok(out)
    }

    fn similarity_norm(&self) -> SimilarityNorm {
        self.known.calibration.norm
    }

    fn cross_script_offset(&self, query_is_cjk: bool) -> f32 {
        if query_is_cjk {
            self.known.calibration.cross_script_cjk
        } else {
            0.0
        }
    }

    /// The spec's `near_duplicate`, else the known model's, else 0.92.
    fn near_duplicate_threshold(&self) -> f32 {
        self.spec.calibration.get("near_duplicate").map_or(self.known.calibration.near_duplicate, |x| x.0)
    }

    /// The spec's `relevance_floor`, else the known model's, else 0.5.
    fn relevance_floor(&self) -> f32 {
        self.spec.calibration.get("relevance_floor").map_or(self.known.calibration.relevance_floor, |x| x.0)
    }

    /// The spec's `abstain_below` (for both floors), else the known
    /// model's, else none ([`Abstain::NEVER`]).
    fn context_floor(&self) -> Abstain {
        match self.spec.calibration.get("abstain_below") {
            Some(x) => Abstain { below: x.0, unknown_name_below: x.0 },
            None => self.known.calibration.abstain,
        }
    }

    fn available(&self) -> bool {
        self.transport.available()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn known_models_by_name() {
        assert_eq!(known("intfloat/multilingual-e5-small").query_prefix, "query: ");
        assert_eq!(known("sentence-transformers/all-MiniLM-L6-v2").calibration.abstain.below, 0.32);
        assert_eq!(known("text-embedding-3-small"), UNKNOWN);
        #[cfg(feature = "neural")]
        assert_eq!(known("BAAI/bge-small-en-v1.5").query_prefix, crate::embed::bge::QUERY_PREFIX);
    }

    #[test]
    fn a_down_provider_is_unavailable_and_named() {
        // Port 9 (discard) on loopback: nothing listens, the connection is refused.
        let spec = ProviderSpec::parse("openai:m@http://127.0.0.1:9?dims=4&retries=1").unwrap().intern();
        let e = HttpEmbedder::connect(spec, None).unwrap();
        assert_eq!(e.dim(), 4);
        assert!(e.available());
        let err = e.embed(&["hello"], EmbedKind::Passage).unwrap_err();
        assert!(matches!(err, Error::ProviderUnavailable { .. }), "{err}");
        assert!(err.to_string().contains("openai:m@http://127.0.0.1:9"), "{err}");
        assert!(!e.available());
        assert_eq!(e.requests_sent(), 1);
        let no_dim = ProviderSpec::parse("ollama:m@http://127.0.0.1:9?retries=0").unwrap().intern();
        let err = HttpEmbedder::connect(no_dim, None).unwrap_err();
        assert!(err.to_string().contains("dims=N"), "{err}");
    }
}

//! Provider specifications: which remote embedding or rerank service a store
//! uses, written as one string every door accepts.
//!
//! ```text
//! KIND:MODEL[@BASE_URL][?OPTION=VALUE&...]
//! ```
//!
//! - `KIND`: `openai` (any server of the OpenAI-compatible
//!   `POST {BASE_URL}/embeddings`: OpenAI, Azure OpenAI's v1 API, vLLM,
//!   Infinity, LM Studio, llama.cpp's server, TEI's OpenAI route) or
//!   `ollama` (`POST {BASE_URL}/api/embed`). A reranker spec takes `rerank`
//!   (`POST {BASE_URL}/rerank` in the Cohere/Jina shape that TEI and
//!   Infinity serve).
//! - `MODEL`: the provider's model name, sent as `model`.
//! - `BASE_URL`: `http://` or `https://`, without user information (a
//!   password in a URL would be recorded with the store). Defaults:
//!   `https://api.openai.com/v1` for `openai`, `http://127.0.0.1:11434` for
//!   `ollama`; `rerank` needs one.
//! - Options (values percent-encoded as in a URL query):
//!   - `dimensions=N`: sent as the request's `dimensions` (OpenAI's
//!     shortened embeddings; only for servers that accept it) and expected
//!     back;
//!   - `dims=N`: the dimension expected back, not sent (saves the probe
//!     request a provider otherwise gets when the dimension is not known);
//!   - `query_prefix=TEXT`, `passage_prefix=TEXT`: put before each query /
//!     stored text (instruction-tuned models: `query_prefix=query:%20` for
//!     e5, bge's `Represent this sentence for searching relevant passages: `);
//!   - `key_env=NAME`: the environment variable holding the API key
//!     (default: `MNEMON_EMBEDDER_API_KEY`, then `OPENAI_API_KEY` for
//!     `openai`; a reranker: `MNEMON_RERANKER_API_KEY`); the key itself is
//!     never part of a spec, a model id, a log line or an error;
//!   - `batch=N`: texts per request (default [`DEFAULT_BATCH`]);
//!   - `in_flight=N`: requests at once (default [`DEFAULT_IN_FLIGHT`]);
//!   - `timeout_s=N`: seconds per request (default [`DEFAULT_TIMEOUT_S`]);
//!   - `retries=N`: further tries after a 429, a 5xx or a connection
//!     failure (default [`DEFAULT_RETRIES`]);
//!   - `depth=N` (rerank only): the hits of hybrid recall the reranker
//!     orders (default [`DEFAULT_RERANK_DEPTH`]);
//!   - `near_duplicate=X`, `relevance_floor=X`, `abstain_below=X`: the
//!     model's calibration (see [`crate::embed::Embedder`]); defaults in
//!     [`super::HttpEmbedder`].
//!
//! A store records the spec's *identity*: kind, model, base URL, the
//! options that change vectors (`dimensions`, the prefixes) and the
//! dimension, as its model id (`openai:bge-small@http://127.0.0.1:7997#384`).
//! Reopened under `auto`, a store finds its provider again from that id.

use std::collections::BTreeMap;
use std::fmt;
use std::sync::{LazyLock, Mutex};

use crate::error::{Error, Result};

/// Texts per request when the spec gives no `batch`: 32, within the limits
/// of the servers documented to have one (OpenAI: 2048 inputs; Ollama: none;
/// Infinity's default batch: 32; TEI's default `max_client_batch_size`: 32).
pub const DEFAULT_BATCH: usize = 32;
/// Requests at once when the spec gives no `in_flight`: 4, enough to keep
/// a local server's own batching busy while one answer is on the wire.
pub const DEFAULT_IN_FLIGHT: usize = 4;
/// Seconds a request may take when the spec gives no `timeout_s`: 60 (a
/// CPU server embedding a full batch of long texts takes seconds).
pub const DEFAULT_TIMEOUT_S: u64 = 60;
/// Further tries after a retryable failure when the spec gives no
/// `retries`: 4, with back-off 0.5, 1, 2, 4 s (7.5 s in all) unless the
/// provider asks for longer with `Retry-After`.
pub const DEFAULT_RETRIES: u32 = 4;
/// Hits a reranker orders when the spec gives no `depth`: 20 (twice the
/// default top-k; a cross-encoder reads each query–memory pair, so the
/// stage costs in proportion).
pub const DEFAULT_RERANK_DEPTH: usize = 20;
/// The most a single `batch` may be: OpenAI's documented limit of inputs
/// per embeddings request.
pub const MAX_BATCH: usize = 2048;

/// Which wire protocol a provider speaks.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub enum ProviderKind {
    /// OpenAI-compatible `POST {base}/embeddings`.
    OpenAi,
    /// Ollama's `POST {base}/api/embed`.
    Ollama,
    /// Cohere/Jina-shaped `POST {base}/rerank`.
    Rerank,
}

impl ProviderKind {
    /// The spec prefix (`openai`, `ollama`, `rerank`).
    pub fn as_str(self) -> &'static str {
        match self {
            ProviderKind::OpenAi => "openai",
            ProviderKind::Ollama => "ollama",
            ProviderKind::Rerank => "rerank",
        }
    }

    fn default_base(self) -> Option<&'static str> {
        match self {
            ProviderKind::OpenAi => Some("https://api.openai.com/v1"),
            ProviderKind::Ollama => Some("http://127.0.0.1:11434"),
            ProviderKind::Rerank => None,
        }
    }
}

/// A parsed provider spec (see the [module documentation](self)).
#[derive(Clone, Debug, PartialEq, Eq, Hash)]
pub struct ProviderSpec {
    /// The protocol.
    pub kind: ProviderKind,
    /// The provider's model name.
    pub model: String,
    /// Base URL without a trailing `/`.
    pub base_url: String,
    /// `dimensions`: sent in the request and expected back.
    pub dimensions: Option<usize>,
    /// `dims`: expected back, not sent.
    pub dims: Option<usize>,
    /// Put before each query.
    pub query_prefix: String,
    /// Put before each stored text.
    pub passage_prefix: String,
    /// Environment variable holding the API key, when the spec names one.
    pub key_env: Option<String>,
    /// Texts per request, 1..=[`MAX_BATCH`].
    pub batch: usize,
    /// Requests at once, 1..=64.
    pub in_flight: usize,
    /// Seconds per request, 1..=3600.
    pub timeout_s: u64,
    /// Further tries after a retryable failure, 0..=20.
    pub retries: u32,
    /// A reranker's depth: the hits of hybrid recall it orders, 1..=1000
    /// (default [`DEFAULT_RERANK_DEPTH`]).
    pub depth: usize,
    /// Calibration overrides, as given (`near_duplicate`,
    /// `relevance_floor`, `abstain_below`), each in -1..=1.
    pub calibration: BTreeMap<String, OrderedF32>,
}

/// An `f32` compared and hashed by its bits (a spec's calibration values,
/// which are finite).
#[derive(Clone, Copy, Debug, PartialEq, PartialOrd)]
pub struct OrderedF32(pub f32);

impl Eq for OrderedF32 {}

impl std::hash::Hash for OrderedF32 {
    fn hash<H: std::hash::Hasher>(&self, state: &mut H) {
        self.0.to_bits().hash(state);
    }
}

/// Whether `s` names a provider rather than a built-in model: it starts
/// with `openai:`, `ollama:` or `rerank:` (case-insensitive).
pub fn is_provider_spec(s: &str) -> bool {
    let s = s.trim_start().to_ascii_lowercase();
    ["openai:", "ollama:", "rerank:"].iter().any(|p| s.starts_with(p))
}

/// `text` with the user information of any URL in it (`user:password@`)
/// masked as `***@`, for messages.
fn masked(text: &str) -> String {
    let mut out = String::with_capacity(text.len());
    let mut rest = text;
    while let Some(i) = rest.find("://") {
        let (head, tail) = rest.split_at(i + 3);
        out.push_str(head);
        let end = tail.find(['/', '?', '#', ' ']).unwrap_or(tail.len());
        let authority = &tail[..end];
        match authority.rfind('@') {
            Some(at) => {
                out.push_str("***");
                out.push_str(&authority[at..]);
            }
            None => out.push_str(authority),
        }
        rest = &tail[end..];
    }
    out.push_str(rest);
    out
}

fn bad(reason: impl Into<String>) -> Error {
    Error::invalid("embedder", reason)
}

fn number<T>(key: &str, value: &str, range: std::ops::RangeInclusive<T>) -> Result<T>
where
    T: std::str::FromStr + PartialOrd + fmt::Display + Copy,
{
    match value.trim().parse::<T>() {
        Ok(n) if range.contains(&n) => Ok(n),
        _ => Err(bad(format!(
            "provider option {key}={value:?} must be a number from {} to {}",
            range.start(),
            range.end()
        ))),
    }
}

impl ProviderSpec {
    /// Parses `KIND:MODEL[@BASE_URL][?OPTIONS]`, or a store's recorded
    /// model id (the same with `#DIM` at the end; see
    /// [`ProviderSpec::model_id`]), returning the spec and that dimension.
    ///
    /// # Errors
    /// [`Error::InvalidInput`] (field `embedder`) naming what is wrong: an
    /// unknown kind or option, an empty model, a base URL that is not
    /// `http(s)://` or holds user information, an option out of range.
    pub fn parse_with_dim(s: &str) -> Result<(ProviderSpec, Option<usize>)> {
        let shown = masked(s.trim());
        let s = s.trim();
        let (body, dim) = match s.rsplit_once('#') {
            Some((b, d)) if !d.is_empty() && d.bytes().all(|c| c.is_ascii_digit()) => {
                (b, Some(number("#", d, 1usize..=65_536)?))
            }
            _ => (s, None),
        };
        let (kind, rest) = body.split_once(':').ok_or_else(|| bad(format!("{shown:?} is not KIND:MODEL")))?;
        let kind = match kind.trim().to_ascii_lowercase().as_str() {
            "openai" => ProviderKind::OpenAi,
            "ollama" => ProviderKind::Ollama,
            "rerank" => ProviderKind::Rerank,
            other => return Err(bad(format!("unknown provider {other:?}; expected openai, ollama or rerank"))),
        };
        let (rest, query) = match rest.rsplit_once('?') {
            Some((r, q)) => (r, Some(q)),
            None => (rest, None),
        };
        let (model, base) = match rest.split_once('@') {
            Some((m, b)) => (m, Some(b)),
            None => (rest, None),
        };
        let model = model.trim();
        if model.is_empty() || model.chars().any(char::is_control) {
            return Err(bad(format!("{shown:?}: the model name is empty or holds control characters")));
        }
        let base = match base {
            Some(b) => b.trim().trim_end_matches('/').to_string(),
            None => kind
                .default_base()
                .ok_or_else(|| {
                    bad(format!("{shown:?}: a rerank provider needs a base URL (rerank:MODEL@http://HOST:PORT)"))
                })?
                .to_string(),
        };
        let lower = base.to_ascii_lowercase();
        let after_scheme = lower
            .strip_prefix("http://")
            .or_else(|| lower.strip_prefix("https://"))
            .ok_or_else(|| bad(format!("base URL {base:?} must start with http:// or https://")))?;
        let authority = after_scheme.split('/').next().unwrap_or("");
        if authority.is_empty() || authority.contains('@') || base.chars().any(|c| c.is_whitespace() || c.is_control())
        {
            return Err(bad(format!(
                "base URL {:?} needs a host and no user information or spaces (an API key goes in an environment variable, see key_env)",
                masked(&base)
            )));
        }
        let mut spec = ProviderSpec {
            kind,
            model: model.to_string(),
            base_url: base,
            dimensions: None,
            dims: None,
            query_prefix: String::new(),
            passage_prefix: String::new(),
            key_env: None,
            batch: DEFAULT_BATCH,
            in_flight: DEFAULT_IN_FLIGHT,
            timeout_s: DEFAULT_TIMEOUT_S,
            retries: DEFAULT_RETRIES,
            depth: DEFAULT_RERANK_DEPTH,
            calibration: BTreeMap::new(),
        };
        for (k, v) in form_urlencoded::parse(query.unwrap_or("").as_bytes()) {
            match k.as_ref() {
                "dimensions" => spec.dimensions = Some(number("dimensions", &v, 1usize..=65_536)?),
                "dims" => spec.dims = Some(number("dims", &v, 1usize..=65_536)?),
                "query_prefix" => spec.query_prefix = v.into_owned(),
                "passage_prefix" => spec.passage_prefix = v.into_owned(),
                "key_env" => {
                    if v.is_empty() || !v.bytes().all(|c| c.is_ascii_alphanumeric() || c == b'_') {
                        return Err(bad(format!("key_env {v:?} must be an environment variable name")));
                    }
                    spec.key_env = Some(v.into_owned());
                }
                "batch" => spec.batch = number("batch", &v, 1usize..=MAX_BATCH)?,
                "in_flight" => spec.in_flight = number("in_flight", &v, 1usize..=64)?,
                "timeout_s" => spec.timeout_s = number("timeout_s", &v, 1u64..=3600)?,
                "retries" => spec.retries = number("retries", &v, 0u32..=20)?,
                "depth" if kind == ProviderKind::Rerank => spec.depth = number("depth", &v, 1usize..=1000)?,
                "near_duplicate" | "relevance_floor" | "abstain_below" => {
                    let x = number(&k, &v, -1.0f32..=1.0)?;
                    spec.calibration.insert(k.into_owned(), OrderedF32(x));
                }
                other => {
                    return Err(bad(format!(
                        "unknown provider option {other:?}; expected dimensions, dims, query_prefix, passage_prefix, key_env, batch, in_flight, timeout_s, retries, near_duplicate, relevance_floor, abstain_below (or, for rerank, depth)"
                    )))
                }
            }
        }
        if let (Some(a), Some(b)) = (spec.dimensions, spec.dims) {
            if a != b {
                return Err(bad(format!("dimensions={a} and dims={b} disagree")));
            }
        }
        let dim = match (dim, spec.dimensions.or(spec.dims)) {
            (Some(d), Some(e)) if d != e => {
                return Err(bad(format!("{shown:?}: the recorded dimension {d} is not the {e} the options give")))
            }
            (d, e) => d.or(e),
        };
        Ok((spec, dim))
    }

    /// [`ProviderSpec::parse_with_dim`], dropping the dimension.
    ///
    /// # Errors
    /// As [`ProviderSpec::parse_with_dim`].
    pub fn parse(s: &str) -> Result<ProviderSpec> {
        Self::parse_with_dim(s).map(|(spec, _)| spec)
    }

    /// The spec's identity: kind, model, base URL and the options that
    /// change vectors (`dimensions`, `query_prefix`, `passage_prefix`), in
    /// a canonical order. Two specs with the same identity make the same
    /// vectors; options that only change how requests are sent (batch,
    /// retries, the key's variable) are left out.
    pub fn identity(&self) -> String {
        let mut q = form_urlencoded::Serializer::new(String::new());
        if let Some(d) = self.dimensions {
            q.append_pair("dimensions", &d.to_string());
        }
        if !self.passage_prefix.is_empty() {
            q.append_pair("passage_prefix", &self.passage_prefix);
        }
        if !self.query_prefix.is_empty() {
            q.append_pair("query_prefix", &self.query_prefix);
        }
        let q = q.finish();
        let mut s = format!("{}:{}@{}", self.kind.as_str(), self.model, self.base_url);
        if !q.is_empty() {
            s.push('?');
            s.push_str(&q);
        }
        s
    }

    /// The model id a store records for vectors of dimension `dim` made
    /// through this spec: [`ProviderSpec::identity`] + `#dim`.
    pub fn model_id(&self, dim: usize) -> String {
        format!("{}#{dim}", self.identity())
    }

    /// The API key: from `key_env` when given, else
    /// `MNEMON_EMBEDDER_API_KEY` (a reranker: `MNEMON_RERANKER_API_KEY`),
    /// else for `openai` `OPENAI_API_KEY`; `None` when none is set (local
    /// servers need none).
    pub fn api_key(&self) -> Option<String> {
        let names: Vec<&str> = match (&self.key_env, self.kind) {
            (Some(n), _) => vec![n.as_str()],
            (None, ProviderKind::OpenAi) => vec!["MNEMON_EMBEDDER_API_KEY", "OPENAI_API_KEY"],
            (None, ProviderKind::Ollama) => vec!["MNEMON_EMBEDDER_API_KEY"],
            (None, ProviderKind::Rerank) => vec!["MNEMON_RERANKER_API_KEY"],
        };
        names.iter().find_map(|n| std::env::var(n).ok().filter(|v| !v.trim().is_empty()))
    }

    /// The spec interned for the life of the process: equal specs give the
    /// same `&'static` value, so a choice that names one stays `Copy`.
    /// Each distinct spec a process parses is kept once (a few hundred
    /// bytes).
    pub fn intern(self) -> &'static ProviderSpec {
        static SPECS: LazyLock<Mutex<Vec<&'static ProviderSpec>>> = LazyLock::new(|| Mutex::new(Vec::new()));
        let mut specs = SPECS.lock().unwrap_or_else(std::sync::PoisonError::into_inner);
        if let Some(s) = specs.iter().find(|s| ***s == self) {
            return s;
        }
        let s: &'static ProviderSpec = Box::leak(Box::new(self));
        specs.push(s);
        s
    }

    /// A display string with every option that was given (the key never is
    /// one).
    pub fn display(&self) -> String {
        let mut s = self.identity();
        let mut q = form_urlencoded::Serializer::new(String::new());
        if let Some(d) = self.dims {
            q.append_pair("dims", &d.to_string());
        }
        if let Some(k) = &self.key_env {
            q.append_pair("key_env", k);
        }
        for (k, v, d) in [
            ("batch", self.batch as u64, DEFAULT_BATCH as u64),
            ("in_flight", self.in_flight as u64, DEFAULT_IN_FLIGHT as u64),
            ("timeout_s", self.timeout_s, DEFAULT_TIMEOUT_S),
            ("retries", u64::from(self.retries), u64::from(DEFAULT_RETRIES)),
            ("depth", self.depth as u64, DEFAULT_RERANK_DEPTH as u64),
        ] {
            if v != d {
                q.append_pair(k, &v.to_string());
            }
        }
        for (k, v) in &self.calibration {
            q.append_pair(k, &v.0.to_string());
        }
        let q = q.finish();
        if !q.is_empty() {
            s.push(if s.contains('?') { '&' } else { '?' });
            s.push_str(&q);
        }
        s
    }
}

impl fmt::Display for ProviderSpec {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(&self.display())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn parses_defaults_and_options() {
        let s = ProviderSpec::parse("openai:text-embedding-3-small").unwrap();
        assert_eq!(s.base_url, "https://api.openai.com/v1");
        assert_eq!(s.batch, DEFAULT_BATCH);
        let (s, dim) = ProviderSpec::parse_with_dim(
            "OpenAI:bge-small@http://127.0.0.1:7997/?dims=384&query_prefix=query%3A%20&batch=8&abstain_below=0.3",
        )
        .unwrap();
        assert_eq!(s.kind, ProviderKind::OpenAi);
        assert_eq!(s.base_url, "http://127.0.0.1:7997");
        assert_eq!(dim, Some(384));
        assert_eq!(s.query_prefix, "query: ");
        assert_eq!(s.batch, 8);
        assert_eq!(s.identity(), "openai:bge-small@http://127.0.0.1:7997?query_prefix=query%3A+");
        let id = s.model_id(384);
        let (back, d) = ProviderSpec::parse_with_dim(&id).unwrap();
        assert_eq!(back.identity(), s.identity());
        assert_eq!(d, Some(384));
        let o = ProviderSpec::parse("ollama:nomic-embed-text:latest").unwrap();
        assert_eq!(o.model, "nomic-embed-text:latest");
        assert_eq!(o.base_url, "http://127.0.0.1:11434");
    }

    #[test]
    fn refuses_bad_specs() {
        for s in [
            "cohere:x",
            "openai:",
            "openai:m@ftp://host",
            "openai:m@http://user:pw@host",
            "openai:m?batch=0",
            "openai:m?batch=99999",
            "openai:m?colour=red",
            "openai:m?dims=3&dimensions=4",
            "openai:m?key_env=A%20B",
            "rerank:m",
            "openai:m?abstain_below=2",
        ] {
            let e = ProviderSpec::parse(s).unwrap_err();
            assert!(matches!(e, Error::InvalidInput { field: "embedder", .. }), "{s}: {e}");
            assert!(!e.to_string().contains("pw@"), "a password is not echoed: {e}");
        }
    }

    #[test]
    fn interned_specs_are_shared() {
        let a = ProviderSpec::parse("ollama:m").unwrap().intern();
        let b = ProviderSpec::parse("ollama:m").unwrap().intern();
        assert!(std::ptr::eq(a, b));
    }

    #[test]
    fn is_provider_spec_by_prefix() {
        assert!(is_provider_spec(" OpenAI:x"));
        assert!(!is_provider_spec("e5-small"));
    }
}

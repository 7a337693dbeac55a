//! What the in-process doors (the Python and Node packages) share when they
//! open a store: their settings, read and checked the same way under the
//! same names; the one way they open it; and the checks on the model id of
//! a caller's own embedding function.
//!
//! Every refusal is an [`ApiError`] with code `invalid_input` naming the
//! setting at fault, so both packages raise the same error for the same bad
//! value.

use std::path::PathBuf;
use std::sync::Arc;
use std::time::Duration;

use mnemon::crypt::{KeyEnv, KeyFile, KeyProvider, KeySettings};
use mnemon::embed::{self, Embedder, EmbedderChoice, ProviderSpec};
use mnemon::safety::{InjectionPolicy, PiiPolicy};
use mnemon::{Durability, EmbedMode, Engine};

use crate::ApiError;

/// Smallest response cap a caller may set, in estimated tokens: the floor
/// the surface documents for [`crate::Limits::max_response_tokens`].
pub const MIN_RESPONSE_TOKENS: usize = 1_000;

/// Longest model id a caller's embedder may give, in bytes (ids are stored
/// in the log's header and every vector's key; 128 bytes holds any
/// published model name with its version).
pub const MAX_MODEL_ID_BYTES: usize = 128;

/// Model ids of the built-in embedders, as prefixes: a caller's embedder
/// may not take one, or a store made by it would read as made by that
/// model, and `embedder="auto"` would then load the built-in model and
/// search the caller's vectors with it.
pub const RESERVED_MODEL_PREFIXES: &[&str] =
    &["hashing-v1-", "all-MiniLM-L6-v2", "multilingual-e5-small", "bge-small-en-v1.5"];

/// Longest a flush interval may be, in seconds: past a minute, a crash
/// would lose more acknowledged writes than any agent expects.
pub const MAX_FLUSH_INTERVAL_S: f64 = 60.0;

/// The embedder a store is opened with: one mnemon loads by name (or a
/// provider spec), or the caller's own.
pub enum DoorEmbedder {
    /// A built-in model, `auto`, `hashing` or a provider, by name.
    Named(EmbedderChoice),
    /// The caller's own embedding function, already checked.
    Caller(Arc<dyn Embedder>),
}

/// The settings of an in-process door's `open`, after checking.
pub struct OpenSettings {
    /// The store's directory (created when missing).
    pub path: PathBuf,
    /// The embedder to open it with.
    pub embedder: DoorEmbedder,
    /// Where installed models are looked up.
    pub models_dir: PathBuf,
    /// `Some` to flush on a timer instead of per group ([`flush_interval`]).
    pub durability: Option<Durability>,
    /// Largest memory content accepted, in bytes (default: the engine's).
    pub max_content_bytes: Option<usize>,
    /// Personal-data policy (default: the engine's, redact).
    pub pii_policy: Option<PiiPolicy>,
    /// Prompt-injection policy (default: the engine's, quarantine).
    pub injection_policy: Option<InjectionPolicy>,
    /// Whether writes wait for their vectors (default: the engine's).
    pub embed_mode: Option<EmbedMode>,
    /// A rerank provider, parsed ([`reranker`]).
    pub reranker: Option<&'static ProviderSpec>,
    /// Where the key of an encrypted store comes from, and the keyring of
    /// the store a copy was made from ([`key_settings`]); the default (no
    /// key) opens and creates stores without encryption.
    pub keys: KeySettings,
}

impl OpenSettings {
    /// Opens the store. `auto` keeps the model an existing store was built
    /// with and refuses when that model is not installed, or when the store
    /// is new and no neural model is (as the CLI does, creating nothing). A
    /// caller's embedder is used as given: a store whose vectors another
    /// model made is re-embedded with it while it opens (the engine keeps
    /// vectors per model id, so none are mixed). Returns the engine and the
    /// notice for the user, if any: a store on the hashing embedder while a
    /// neural model is installed ([`embed::lexical_store_notice`]), or one
    /// just re-embedded with the caller's embedder.
    ///
    /// # Errors
    /// Whatever [`embed::embedder_for_store`], the reranker's client or
    /// [`mnemon::EngineBuilder::open`] give; among them
    /// [`mnemon::Error::KeyRequired`] for an encrypted store opened without
    /// a key (or with a key file that does not exist) and
    /// [`mnemon::Error::WrongKey`] for one opened with another key, nothing
    /// opened or written.
    pub fn open(self) -> mnemon::Result<(Engine, Option<String>)> {
        let (embedder, notice, caller): (Arc<dyn Embedder>, _, _) = match self.embedder {
            DoorEmbedder::Named(choice) => {
                let chosen = embed::embedder_for_store(choice, &self.models_dir, &self.path)?;
                (chosen.embedder, chosen.notice, false)
            }
            DoorEmbedder::Caller(e) => (e, None, true),
        };
        let mut b = Engine::builder(&self.path).embedder(embedder);
        if let Some(p) = self.keys.provider {
            b = b.key_provider(p);
        }
        if let Some(r) = &self.keys.keyring {
            b = b.keyring(r);
        }
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

/// Embeds `texts` with `engine`'s embedder, as memories (`query` false) or
/// as recall queries, after personal-data `policy` (`redact` embeds the
/// redacted text, as `remember` does; `reject` refuses text with personal
/// data). Returns unit-length vectors of the embedder's dimension, one per
/// text: what a caller passes back as its own vectors (`remember` with
/// `vector`) made by the store's own model.
///
/// # Errors
/// [`mnemon::Error::Rejected`] for personal data under `reject`;
/// [`mnemon::Error::Embedder`] when the model fails or answers with the
/// wrong number of vectors or a bad one.
pub fn embed_texts(engine: &Engine, texts: &[String], query: bool, policy: PiiPolicy) -> mnemon::Result<Vec<Vec<f32>>> {
    let redactor = mnemon::safety::Redactor::new();
    let texts =
        texts.iter().map(|t| redactor.apply(t, policy).map(|r| r.text)).collect::<mnemon::Result<Vec<String>>>()?;
    let refs: Vec<&str> = texts.iter().map(String::as_str).collect();
    let kind = if query { embed::EmbedKind::Query } else { embed::EmbedKind::Passage };
    let embedder = engine.embedder();
    let mut vectors = embedder.embed(&refs, kind)?;
    if vectors.len() != refs.len() {
        return Err(mnemon::Error::Embedder(
            format!("{} returned {} vectors for {} texts", embedder.model_id(), vectors.len(), refs.len()).into(),
        ));
    }
    for v in &mut vectors {
        embed::validate_vector(v, embedder.dim()).map_err(|e| {
            mnemon::Error::Embedder(format!("{} returned a bad vector: {e}", embedder.model_id()).into())
        })?;
        embed::normalize(v);
    }
    Ok(vectors)
}

/// Environment variable naming the key file of an encrypted store, read
/// when no key file or key variable is given (as the CLI reads it).
pub const KEY_FILE_ENV: &str = "MNEMON_KEY_FILE";

/// Environment variable holding the key itself (64 hex digits), read when
/// no key file is named anywhere.
pub const KEY_ENV: &str = "MNEMON_KEY";

/// Environment variable naming the keyring of the store a copy was made
/// from, read when `keyring` is not given.
pub const KEYRING_ENV: &str = "MNEMON_KEYRING";

/// The key settings of an in-process door, in the CLI's order: the key
/// file `key_file` when given; else the environment variable named
/// `key_env` (holding 64 hex digits) when given; else the file that
/// `MNEMON_KEY_FILE` names when set; else `MNEMON_KEY` when set; else no
/// key. `keyring` (else `MNEMON_KEYRING`) is the `KEYRING` of the store an
/// encrypted backup or export came from. A key is never taken as a string
/// argument: only from a file or the environment. The key itself is read
/// when the store opens, so a missing file or variable is
/// [`mnemon::Error::KeyRequired`] then.
///
/// # Errors
/// `invalid_input` (field `key_file`, `key_env` or `keyring`) for an empty
/// path or name, both `key_file` and `key_env`, or a variable name with
/// `=` or a NUL byte.
pub fn key_settings(
    key_file: Option<PathBuf>,
    key_env: Option<&str>,
    keyring: Option<PathBuf>,
) -> Result<KeySettings, ApiError> {
    if key_file.is_some() && key_env.is_some() {
        return Err(ApiError::invalid("key_env", "give either key_file or key_env, not both"));
    }
    if key_file.as_ref().is_some_and(|f| f.as_os_str().is_empty()) {
        return Err(ApiError::invalid("key_file", "must not be empty"));
    }
    if key_env.is_some_and(|v| v.is_empty() || v.contains(['=', '\0'])) {
        return Err(ApiError::invalid("key_env", "must be an environment variable's name (no = or NUL byte)"));
    }
    if keyring.as_ref().is_some_and(|f| f.as_os_str().is_empty()) {
        return Err(ApiError::invalid("keyring", "must not be empty"));
    }
    let set = |name: &str| std::env::var_os(name).filter(|v| !v.is_empty());
    let provider: Option<Arc<dyn KeyProvider>> = match (key_file, key_env) {
        (Some(f), _) => Some(Arc::new(KeyFile(f))),
        (None, Some(v)) => Some(Arc::new(KeyEnv(v.to_string()))),
        (None, None) => match (set(KEY_FILE_ENV), set(KEY_ENV)) {
            (Some(f), _) => Some(Arc::new(KeyFile(PathBuf::from(f)))),
            (None, Some(_)) => Some(Arc::new(KeyEnv(KEY_ENV.to_string()))),
            (None, None) => None,
        },
    };
    let keyring = keyring.or_else(|| set(KEYRING_ENV).map(PathBuf::from));
    Ok(KeySettings { provider, keyring, directory: None })
}

/// `pii_policy`: `redact`, `reject` or `off`.
///
/// # Errors
/// `invalid_input` (field `pii_policy`) for any other value.
pub fn pii_policy(s: &str) -> Result<PiiPolicy, ApiError> {
    match s {
        "redact" => Ok(PiiPolicy::Redact),
        "reject" => Ok(PiiPolicy::Reject),
        "off" => Ok(PiiPolicy::Off),
        other => Err(ApiError::invalid("pii_policy", format!("must be redact, reject or off, got {other:?}"))),
    }
}

/// `injection_policy`: `quarantine`, `reject` or `allow`.
///
/// # Errors
/// `invalid_input` (field `injection_policy`) for any other value.
pub fn injection_policy(s: &str) -> Result<InjectionPolicy, ApiError> {
    match s {
        "quarantine" => Ok(InjectionPolicy::Quarantine),
        "reject" => Ok(InjectionPolicy::Reject),
        "allow" => Ok(InjectionPolicy::Allow),
        other => {
            Err(ApiError::invalid("injection_policy", format!("must be quarantine, reject or allow, got {other:?}")))
        }
    }
}

/// `embed_mode`: `sync` or `deferred`.
///
/// # Errors
/// `invalid_input` (field `embed_mode`) for any other value.
pub fn embed_mode(s: &str) -> Result<EmbedMode, ApiError> {
    match s {
        "sync" => Ok(EmbedMode::Sync),
        "deferred" => Ok(EmbedMode::Deferred),
        other => Err(ApiError::invalid("embed_mode", format!("must be sync or deferred, got {other:?}"))),
    }
}

/// `flush_interval_s`: left out for a flush per group commit, or seconds
/// in (0, [`MAX_FLUSH_INTERVAL_S`]] for a flush on that timer.
///
/// # Errors
/// `invalid_input` (field `flush_interval_s`) outside that range or not
/// finite.
pub fn flush_interval(seconds: Option<f64>) -> Result<Option<Durability>, ApiError> {
    match seconds {
        None => Ok(None),
        Some(s) if s.is_finite() && s > 0.0 && s <= MAX_FLUSH_INTERVAL_S => {
            Ok(Some(Durability::Interval(Duration::from_secs_f64(s))))
        }
        Some(s) => Err(ApiError::invalid(
            "flush_interval_s",
            format!("must be between 0.001 and {MAX_FLUSH_INTERVAL_S} seconds, or left out, got {s}"),
        )),
    }
}

/// `max_response_tokens`: left out for
/// [`crate::DEFAULT_MAX_RESPONSE_TOKENS`], else at least
/// [`MIN_RESPONSE_TOKENS`].
///
/// # Errors
/// `invalid_input` (field `max_response_tokens`) below the floor.
pub fn max_response_tokens(n: Option<usize>) -> Result<usize, ApiError> {
    let n = n.unwrap_or(crate::DEFAULT_MAX_RESPONSE_TOKENS);
    if n < MIN_RESPONSE_TOKENS {
        return Err(ApiError::invalid(
            "max_response_tokens",
            format!("must be at least {MIN_RESPONSE_TOKENS}, got {n}"),
        ));
    }
    Ok(n)
}

/// `reranker`: a rerank provider spec (`rerank:MODEL@URL[?depth=N]`), or
/// none when left out or blank.
///
/// # Errors
/// `invalid_input` (field `reranker`) for a spec that does not parse.
pub fn reranker(spec: Option<&str>) -> Result<Option<&'static ProviderSpec>, ApiError> {
    match spec.map(str::trim).filter(|r| !r.is_empty()) {
        None => Ok(None),
        Some(r) => ProviderSpec::parse(r).map(ProviderSpec::intern).map(Some).map_err(|e| match e {
            mnemon::Error::InvalidInput { reason, .. } => ApiError::invalid("reranker", reason),
            other => ApiError::from(other),
        }),
    }
}

/// Checks the model id a caller gives its own embedder: 1 to
/// [`MAX_MODEL_ID_BYTES`] bytes, no control characters or surrounding
/// whitespace, not a provider spec (`auto` would then call that provider
/// for the store's queries), not one of [`RESERVED_MODEL_PREFIXES`].
///
/// # Errors
/// [`mnemon::Error::InvalidInput`] (field `embedder_name`) saying which.
pub fn check_model_id(id: &str) -> mnemon::Result<()> {
    let refuse = |reason: String| Err(mnemon::Error::invalid("embedder_name", reason));
    if id.is_empty() || id.len() > MAX_MODEL_ID_BYTES {
        return refuse(format!("must be 1 to {MAX_MODEL_ID_BYTES} bytes, got {}", id.len()));
    }
    if id.chars().any(char::is_control) || id.trim() != id {
        return refuse(format!("{id:?} holds control characters or surrounding whitespace"));
    }
    if embed::provider::is_provider_spec(id) {
        return refuse(format!(
            "{id:?} reads as a provider spec (openai:, ollama:, rerank:); name your embedder differently, or pass the spec as the embedder setting to have mnemon call the provider"
        ));
    }
    if let Some(p) = RESERVED_MODEL_PREFIXES.iter().find(|p| id.starts_with(**p)) {
        return refuse(format!("{id:?} begins like a built-in model's id ({p}…); name your embedder differently"));
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::ErrorCode;

    #[test]
    fn each_setting_is_refused_naming_itself() {
        let field = |e: ApiError| (e.code, e.field);
        let named = |f: &str| (ErrorCode::InvalidInput, Some(f.to_string()));
        assert_eq!(field(pii_policy("mask").unwrap_err()), named("pii_policy"));
        assert_eq!(field(injection_policy("ignore").unwrap_err()), named("injection_policy"));
        assert_eq!(field(embed_mode("lazy").unwrap_err()), named("embed_mode"));
        for bad in [0.0, -1.0, 61.0, f64::NAN, f64::INFINITY] {
            assert_eq!(field(flush_interval(Some(bad)).unwrap_err()), named("flush_interval_s"), "{bad}");
        }
        assert_eq!(field(max_response_tokens(Some(999)).unwrap_err()), named("max_response_tokens"));
        assert_eq!(field(reranker(Some("rerank:")).unwrap_err()), named("reranker"));
    }

    #[test]
    fn good_settings_are_read() {
        assert_eq!(pii_policy("off").unwrap(), PiiPolicy::Off);
        assert_eq!(injection_policy("allow").unwrap(), InjectionPolicy::Allow);
        assert_eq!(embed_mode("deferred").unwrap(), EmbedMode::Deferred);
        assert!(flush_interval(None).unwrap().is_none());
        assert!(
            matches!(flush_interval(Some(0.5)).unwrap(), Some(Durability::Interval(d)) if d == Duration::from_millis(500))
        );
        assert_eq!(max_response_tokens(None).unwrap(), crate::DEFAULT_MAX_RESPONSE_TOKENS);
        assert_eq!(max_response_tokens(Some(MIN_RESPONSE_TOKENS)).unwrap(), MIN_RESPONSE_TOKENS);
        assert!(reranker(Some("  ")).unwrap().is_none());
        assert_eq!(reranker(Some("rerank:m@http://127.0.0.1:7997?depth=7")).unwrap().map(|s| s.depth), Some(7));
    }

    #[test]
    fn caller_model_ids_that_would_mislead_are_refused() {
        for bad in ["", " padded", "a\tb", "openai:text-embedding-3-small", "all-MiniLM-L6-v2", "hashing-v1-384"] {
            assert!(check_model_id(bad).is_err(), "{bad:?}");
        }
        assert!(check_model_id(&"x".repeat(MAX_MODEL_ID_BYTES + 1)).is_err());
        for good in ["my-encoder@v2", "text-embedding-3-small", "x".repeat(MAX_MODEL_ID_BYTES).as_str()] {
            assert!(check_model_id(good).is_ok(), "{good:?}");
        }
    }
}

//! The one error type of the crate.

use std::path::PathBuf;

use crate::types::Seq;

/// Everything that can go wrong in mnemon, with variants a caller can act on.
///
/// Expected outcomes (a duplicate write, a forget search that matched nothing,
/// a target forgotten before) are values in the result types, not errors. Source errors are kept as `source()` chains.
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum Error {
    /// The caller's input was rejected before anything was written: empty or
    /// oversized text, malformed namespace, importance outside `0.0..=1.0`,
    /// NaN or infinite vector components, wrong vector dimension, and so on.
    #[error("invalid input: {field}: {reason}")]
    InvalidInput {
        /// Which argument or field was rejected (e.g. `"content"`, `"namespace"`).
        field: &'static str,
        /// Human-readable reason.
        reason: String,
    },
    /// A target that does not exist: an id not in the given namespace (or
    /// forgotten); for a forget, also a session that holds nothing and that
    /// no earlier forget named (see [`crate::ForgetRequest::Session`]), or
    /// a namespace nothing was ever written to.
    #[error("not found: {what}")]
    NotFound {
        /// What was looked up, e.g. `"memory 42 in namespace u1"`.
        what: String,
    },
    /// The operation conflicts with the current state, e.g. superseding a
    /// memory that is already superseded or forgotten.
    #[error("conflict: {0}")]
    Conflict(String),
    /// A stored record failed its checksum or could not be decoded.
    /// `seq` names the log position (or the key that held the bad record).
    #[error("corrupted record at seq {seq}: {reason}")]
    Corrupted {
        /// Log position of the bad record.
        seq: Seq,
        /// What was wrong with it.
        reason: String,
    },
    /// The data directory was written by `backup` or `restore` and is not a
    /// whole copy: the copy was interrupted (its `COPY` file is the
    /// unfinished marker, or it is a staging directory), its completion
    /// record is damaged, or its log holds fewer records than the record
    /// names. Nothing was opened or changed; make the copy again.
    #[error("incomplete copy at {path}: {reason}")]
    IncompleteCopy {
        /// The data directory.
        path: PathBuf,
        /// Records the copy was to hold, when recorded.
        expected: Option<Seq>,
        /// Records its log holds, when it could be read.
        present: Option<Seq>,
        /// What is missing, and what to do.
        reason: String,
    },
    /// The data directory is held by another process (or another open engine
    /// in this process). Close that one first.
    #[error("store is locked: {path} is in use by another process or engine")]
    Locked {
        /// The lock file that could not be taken.
        path: PathBuf,
    },
    /// A write failed to reach the disk earlier; the engine refuses further
    /// writes so that memory and disk never diverge. Reopen the store.
    #[error("engine is poisoned after a failed write: {0}; reopen the store")]
    Poisoned(String),
    /// The engine was closed; no further calls are accepted.
    #[error("engine is closed")]
    Closed,
    /// The write was withdrawn through its [`crate::CancelToken`] before the
    /// writer planned it: nothing was written.
    #[error("cancelled before it was written: nothing was written")]
    Cancelled,
    /// The store was written by an incompatible format or model; the message
    /// names what was found and what was expected.
    #[error("incompatible format: {0}")]
    IncompatibleFormat(String),
    /// Embedding failed (model missing, model error); the underlying error,
    /// if any, is the [`Failure`]'s source.
    #[error("embedder error: {0}")]
    Embedder(#[source] Failure),
    /// A new store was to be built with the embedder left to mnemon
    /// ([`crate::embed::EmbedderChoice::Auto`]) while no neural model is
    /// installed: it would have been built on the lexical-only hashing
    /// embedder, and a store keeps the embedder it was created with, so it
    /// would never recall by meaning. Nothing was created. Install a model
    /// (`mnemon model install e5-small`), or choose the hashing embedder by
    /// name. See [`crate::embed::embedder_for_store`].
    #[error("{message}")]
    NoModelInstalled {
        /// The data directory the store would have been created in.
        store: PathBuf,
        /// Where models were looked for.
        models_dir: PathBuf,
        /// What to do, in words: the command that installs the model
        /// (with its size) and the explicit lexical-only alternative.
        message: String,
    },
    /// Memory content was refused by the safety policy (personal data with
    /// policy `reject`, or an injected instruction with policy `reject`).
    #[error("rejected by policy: {0}")]
    Rejected(String),
    /// The store is encrypted ([`crate::crypt`]) and no key was given, the
    /// key provider could not supply it (key file or environment variable
    /// missing), or a copy without a keyring was opened without the
    /// keyring of the store it was made from. Nothing was written.
    #[error("key required: {0}")]
    KeyRequired(String),
    /// The key given does not open the store's keyring, or the keyring is
    /// another store's. Nothing was written.
    #[error("wrong key: {0}")]
    WrongKey(String),
    /// An operating-system I/O error.
    #[error("i/o error: {0}")]
    Io(#[from] std::io::Error),
    /// An error from the storage backend (sled) or of a record it holds;
    /// the underlying error, if any, is the [`Failure`]'s source.
    #[error("storage error: {0}")]
    Storage(#[source] Failure),
    /// In a cluster: this daemon does not hold (or no longer holds) the
    /// writer lease of the namespace — another daemon took it over, or the
    /// replicated log moved past the position this daemon last wrote
    /// (fencing). The refused write is not in the log and was not
    /// acknowledged; the namespace stops being served here.
    #[error("not the owner of namespace {namespace}: {reason}")]
    Fenced {
        /// The namespace whose lease or log position was lost.
        namespace: String,
        /// What showed it (lease taken by another daemon, log position moved).
        reason: String,
    },
    /// In a cluster: the replicated log (NATS JetStream) could not be reached
    /// or did not confirm within its timeout. A write that gets this error
    /// was not acknowledged (it may or may not have reached the log); the
    /// namespace stops being served here until it is caught up again.
    #[error("replicated log unavailable: {0}")]
    Unavailable(String),
    /// A remote embedding or rerank provider did not answer after its
    /// retries (connection refused or dropped, timeout, 429 or 5xx). A
    /// `remember` does not get this error: it stores the memory with
    /// deferred embedding instead (see [`crate::embed::provider`]).
    #[error("embedding provider {provider} unavailable: {reason}")]
    ProviderUnavailable {
        /// The provider's identity ([`crate::embed::provider::ProviderSpec::identity`]; never a key).
        provider: String,
        /// What the last try met.
        reason: String,
    },
}

impl Error {
    /// Shorthand for [`Error::InvalidInput`].
    pub fn invalid(field: &'static str, reason: impl Into<String>) -> Self {
        Error::InvalidInput { field, reason: reason.into() }
    }

    /// [`Error::Io`] for `err` on `path`, naming the path in the message
    /// (`i/o error: notes.jsonl: No such file or directory (os error 2)`);
    /// the kind of `err` is kept.
    pub fn io_at(path: &std::path::Path, err: std::io::Error) -> Self {
        Error::Io(std::io::Error::new(err.kind(), format!("{}: {err}", path.display())))
    }

    /// [`Error::InvalidInput`] for a value of `field` outside `lo..=hi`,
    /// worded as every door words it: `must be between 1 and 1000, got 0`
    /// (see [`range_reason`]).
    pub fn out_of_range(
        field: &'static str,
        lo: impl std::fmt::Display,
        hi: impl std::fmt::Display,
        got: impl std::fmt::Display,
    ) -> Self {
        Error::invalid(field, range_reason(lo, hi, got))
    }

    /// Shorthand for [`Error::NotFound`].
    pub fn not_found(what: impl Into<String>) -> Self {
        Error::NotFound { what: what.into() }
    }
}

impl From<sled::Error> for Error {
    fn from(e: sled::Error) -> Self {
        match e {
            sled::Error::Io(io) => Error::Io(io),
            // sled's own words ("Read corrupted data at file offset None
            // backtrace ()") say neither what was damaged nor what to do;
            // opening adds the way back (`portability::recovery_hint`).
            sled::Error::Corruption { at, .. } => Error::Storage(
                match at {
                    Some(at) => format!("the store's files hold damaged data (sled found a bad record at {at:?})"),
                    None => "the store's files hold damaged data (sled found a bad record)".to_string(),
                }
                .into(),
            ),
            other => Error::Storage(Failure::with_source(other.to_string(), other)),
        }
    }
}

/// The reason a value outside `lo..=hi` is refused: `must be between 1 and
/// 1000, got 0`. The one wording of a range, so that every limit reads the
/// same whichever door it was reached through.
pub fn range_reason(lo: impl std::fmt::Display, hi: impl std::fmt::Display, got: impl std::fmt::Display) -> String {
    format!("must be between {lo} and {hi}, got {got}")
}

/// Result alias used throughout the crate.
pub type Result<T, E = Error> = std::result::Result<T, E>;

/// A decoding message in the words of JSON rather than of Rust: serde
/// names what it expected by the Rust type (`expected f32`, `expected
/// usize`, `expected a sequence`, `expected struct ImportMemory`) and a
/// JSON `null` as `unit value`. These become `a number`, `a whole number
/// (0 or more)`, `a whole number`, `an array`, `an object` and `null`;
/// everything else is kept as it is, except chrono's bare words for a time
/// it cannot read ("input contains invalid characters"), which gain the
/// form expected. Used by every door's request decoding, the import parser
/// and `apply_extraction`, so all of them word a refusal the same way.
pub fn plain_json_words(msg: &str) -> String {
    // chrono's words for a time it cannot read say nothing of the form.
    const TIME_ERRORS: [&str; 6] = [
        "input contains invalid characters",
        "premature end of input",
        "trailing input",
        "input is out of range",
        "no possible date and time matching input",
        "input is not enough for unique date and time",
    ];
    if TIME_ERRORS.contains(&msg) {
        return format!("{msg}: expected an RFC 3339 time with an offset, like 2026-06-15T10:00:00+08:00");
    }
    let Some(at) = msg.find("expected ") else {
        return msg.replace("unit value", "null");
    };
    let head = msg[..at].replace("unit value", "null");
    let rest = &msg[at + "expected ".len()..];
    // The expected part runs to the end, or to the ` at line …` position.
    let end = rest.find(" at line ").unwrap_or(rest.len());
    let (what, tail) = rest.split_at(end);
    let plain = match what {
        "f32" | "f64" => "a number".to_string(),
        "u8" | "u16" | "u32" | "u64" | "u128" | "usize" => "a whole number (0 or more)".to_string(),
        "i8" | "i16" | "i32" | "i64" | "i128" | "isize" => "a whole number".to_string(),
        "a sequence" => "an array".to_string(),
        "a map" => "an object".to_string(),
        w if w
            .strip_prefix("struct ")
            .is_some_and(|n| !n.is_empty() && n.chars().all(|c| c.is_alphanumeric() || c == '_')) =>
        {
            "an object".to_string()
        }
        w => w.to_string(),
    };
    if plain.starts_with("a whole number") {
        if let Some(n) = too_large_integer(&head) {
            return format!("invalid value: `{n}` is out of range, expected {plain}{tail}");
        }
    }
    format!("{head}expected {plain}{tail}")
}

/// The number of serde's `invalid type: floating point `X`, ` when `X` is a
/// whole number beyond every integer type's range. JSON has one number
/// type and serde_json reads an integer literal past `u64::MAX` (or below
/// `i64::MIN`) as a float, so such a message means the client sent a whole
/// number that is too large, not a fraction.
fn too_large_integer(head: &str) -> Option<&str> {
    let n = head.strip_prefix("invalid type: floating point `")?.strip_suffix("`, ")?;
    let x: f64 = n.parse().ok()?;
    // serde_json keeps an integer literal in 0..2^64 as a u64 and one in
    // -2^63..0 as an i64; only one outside both reaches a type as a float.
    (x.is_finite() && x.fract() == 0.0 && !(-9.223_372_036_854_776e18..1.844_674_407_370_955_2e19).contains(&x))
        .then_some(n)
}

impl From<crate::text::CharFault> for Error {
    fn from(f: crate::text::CharFault) -> Error {
        Error::invalid(f.field, f.reason)
    }
}

/// What failed in an [`Error::Storage`] or [`Error::Embedder`]: a message
/// in plain words (it already names the underlying error, so printing the
/// message alone loses nothing) and, where there was one, the underlying
/// error itself ([`std::error::Error::source`]) for callers that inspect it,
/// e.g. by downcasting to `std::io::Error` or `sled::Error`.
#[derive(Debug)]
pub struct Failure {
    message: String,
    source: Option<Box<dyn std::error::Error + Send + Sync + 'static>>,
}

impl Failure {
    /// A failure with no underlying error.
    pub fn new(message: impl Into<String>) -> Failure {
        Failure { message: message.into(), source: None }
    }

    /// A failure caused by `source`; `message` should say what was being
    /// done and name the source's words.
    pub fn with_source(message: impl Into<String>, source: impl std::error::Error + Send + Sync + 'static) -> Failure {
        Failure { message: message.into(), source: Some(Box::new(source)) }
    }

    /// The message (what [`Display`](std::fmt::Display) prints).
    pub fn message(&self) -> &str {
        &self.message
    }

    /// This failure with `more` appended to its message; the source is kept.
    pub fn append(mut self, more: &str) -> Failure {
        self.message.push_str(more);
        self
    }
}

impl std::fmt::Display for Failure {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(&self.message)
    }
}

impl std::error::Error for Failure {
    fn source(&self) -> Option<&(dyn std::error::Error + 'static)> {
        self.source.as_deref().map(|e| e as &(dyn std::error::Error + 'static))
    }
}

impl From<String> for Failure {
    fn from(message: String) -> Failure {
        Failure::new(message)
    }
}

impl From<&str> for Failure {
    fn from(message: &str) -> Failure {
        Failure::new(message)
    }
}

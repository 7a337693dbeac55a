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
    /// Embedding failed (model missing, model error).
    #[error("embedder error: {0}")]
    Embedder(String),
    /// Memory content was refused by the safety policy (personal data with
    /// policy `reject`, or an injected instruction with policy `reject`).
    #[error("rejected by policy: {0}")]
    Rejected(String),
    /// An operating-system I/O error.
    #[error("i/o error: {0}")]
    Io(#[from] std::io::Error),
    /// An error from the storage backend (sled).
    #[error("storage error: {0}")]
    Storage(String),
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
            sled::Error::Corruption { at, .. } => Error::Storage(match at {
                Some(at) => format!("the store's files hold damaged data (sled found a bad record at {at:?})"),
                None => "the store's files hold damaged data (sled found a bad record)".to_string(),
            }),
            other => Error::Storage(other.to_string()),
        }
    }
}

/// Result alias used throughout the crate.
pub type Result<T, E = Error> = std::result::Result<T, E>;

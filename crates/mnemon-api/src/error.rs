//! The surface's error object: a stable code, a message and the field at fault.

use serde::{Deserialize, Serialize};

use mnemon::Error;

/// Stable, machine-readable error codes of the command surface. Clients
/// branch on these, never on messages. New codes are only ever added.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, Serialize, Deserialize, schemars::JsonSchema)]
#[serde(rename_all = "snake_case")]
#[non_exhaustive]
pub enum ErrorCode {
    /// The request was malformed or a value was out of range (unknown
    /// operation or field, wrong type, empty or oversized text, bad
    /// namespace, …). Nothing was written.
    InvalidInput,
    /// A target that does not exist: an id not in the namespace (or
    /// forgotten); for `forget`, also a session that holds nothing and that
    /// no earlier forget named (one emptied by ids or by the whole
    /// namespace counts), or a namespace nothing was written to. Nothing
    /// was written.
    NotFound,
    /// The operation conflicts with the current state (e.g. superseding a
    /// superseded memory). Nothing was written.
    Conflict,
    /// Refused by the safety policy (personal data or an injected
    /// instruction under policy `reject`). Nothing was written.
    Rejected,
    /// The namespace is outside what this server serves (`--ns`,
    /// `--allow-ns`), or the operation spans namespaces and the server is
    /// restricted. Nothing was written.
    NamespaceNotAllowed,
    /// A single item is larger than the response budget; page with a
    /// smaller `limit` or read it through the library.
    ResponseTooLarge,
    /// The store is held by another process that could not be reached.
    Locked,
    /// The process holding the store went away while the call was in
    /// flight: a write may or may not have been applied; read before retrying.
    Unavailable,
    /// The engine is shutting down or closed; the call was refused.
    Closed,
    /// The caller cancelled the call before its write was planned: nothing
    /// was written.
    Cancelled,
    /// A write failed to reach the disk earlier; the store refuses writes
    /// until reopened.
    Poisoned,
    /// A stored record failed its checksum or could not be decoded, or the
    /// store is a backup or restore that did not finish.
    Corrupted,
    /// The store was written by an incompatible format or model.
    IncompatibleFormat,
    /// Embedding failed (model missing, model error), or a new store was
    /// refused because no embedding model is installed (it would recall by
    /// exact words only; the message names the command that installs one).
    /// Nothing was written.
    Embedder,
    /// An operating-system I/O error.
    Io,
    /// An error of the storage backend.
    Storage,
    /// Anything else (a bug: please report it).
    Internal,
    /// In a cluster: this daemon lost the namespace's writer lease or log
    /// position (another daemon writes it); the write was not applied.
    Fenced,
}

impl ErrorCode {
    /// The code as its JSON string, e.g. `"invalid_input"`.
    pub fn as_str(self) -> &'static str {
        match self {
            ErrorCode::InvalidInput => "invalid_input",
            ErrorCode::NotFound => "not_found",
            ErrorCode::Conflict => "conflict",
            ErrorCode::Rejected => "rejected",
            ErrorCode::NamespaceNotAllowed => "namespace_not_allowed",
            ErrorCode::ResponseTooLarge => "response_too_large",
            ErrorCode::Locked => "locked",
            ErrorCode::Unavailable => "unavailable",
            ErrorCode::Closed => "closed",
            ErrorCode::Cancelled => "cancelled",
            ErrorCode::Poisoned => "poisoned",
            ErrorCode::Corrupted => "corrupted",
            ErrorCode::IncompatibleFormat => "incompatible_format",
            ErrorCode::Embedder => "embedder",
            ErrorCode::Io => "io",
            ErrorCode::Storage => "storage",
            ErrorCode::Internal => "internal",
            ErrorCode::Fenced => "fenced",
        }
    }

    /// True when the caller's request was at fault (fix the request, do not
    /// retry it as is).
    pub fn is_caller_error(self) -> bool {
        matches!(
            self,
            ErrorCode::InvalidInput
                | ErrorCode::NotFound
                | ErrorCode::Conflict
                | ErrorCode::Rejected
                | ErrorCode::NamespaceNotAllowed
                | ErrorCode::ResponseTooLarge
        )
    }
}

impl std::fmt::Display for ErrorCode {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(self.as_str())
    }
}

/// An error as every door reports it: `{"code": "...", "message": "...",
/// "field": "..."}` (`field` only when one argument was at fault).
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize, schemars::JsonSchema, thiserror::Error)]
#[error("{message}")]
pub struct ApiError {
    /// What went wrong, stable across versions.
    pub code: ErrorCode,
    /// Human-readable explanation.
    pub message: String,
    /// The request field at fault (a JSON path such as `kinds[1]`), if any.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub field: Option<String>,
}

impl ApiError {
    /// An error with this code and message, no field.
    pub fn new(code: ErrorCode, message: impl Into<String>) -> ApiError {
        ApiError { code, message: message.into(), field: None }
    }

    /// An [`ErrorCode::InvalidInput`] error naming `field`.
    pub fn invalid(field: impl Into<String>, message: impl Into<String>) -> ApiError {
        ApiError { code: ErrorCode::InvalidInput, message: message.into(), field: Some(field.into()) }
    }
}

/// The request field a `not_found` error is about, by what was not found:
/// a memory is named by `id`, an observation by `observation` (a write
/// names its sources by `sources`, see [`ApiError::sources`]), a session by
/// `session`, a namespace by `namespace`.
fn not_found_field(what: &str) -> Option<String> {
    let field = if what.starts_with("memory ") {
        "id"
    } else if what.starts_with("observation ") {
        "observation"
    } else if what.starts_with("session ") || what.starts_with("observations of session ") {
        "session"
    } else if what.starts_with("namespace ") {
        "namespace"
    } else {
        return None;
    };
    Some(field.to_string())
}

impl ApiError {
    /// For a write that names observations as its sources: a missing
    /// observation is the `sources` field's fault.
    pub(crate) fn sources(mut self) -> ApiError {
        if self.code == ErrorCode::NotFound && self.field.as_deref() == Some("observation") {
            self.field = Some("sources".into());
        }
        self
    }
}

impl From<Error> for ApiError {
    fn from(e: Error) -> ApiError {
        let message = e.to_string();
        let (code, field) = match &e {
            Error::InvalidInput { field, .. } => (ErrorCode::InvalidInput, Some((*field).to_string())),
            Error::NotFound { what } => (ErrorCode::NotFound, not_found_field(what)),
            Error::Conflict(_) => (ErrorCode::Conflict, None),
            // A copy that is not whole is, to a caller, a store it cannot use.
            Error::Corrupted { .. } | Error::IncompleteCopy { .. } => (ErrorCode::Corrupted, None),
            Error::Locked { .. } => (ErrorCode::Locked, None),
            Error::Poisoned(_) => (ErrorCode::Poisoned, None),
            Error::Closed => (ErrorCode::Closed, None),
            Error::Cancelled => (ErrorCode::Cancelled, None),
            Error::IncompatibleFormat(_) => (ErrorCode::IncompatibleFormat, None),
            Error::Embedder(_) | Error::NoModelInstalled { .. } => (ErrorCode::Embedder, None),
            Error::Rejected(_) => (ErrorCode::Rejected, None),
            Error::Io(_) => (ErrorCode::Io, None),
            Error::Storage(_) => (ErrorCode::Storage, None),
            Error::Fenced { .. } => (ErrorCode::Fenced, None),
            Error::Unavailable(_) => (ErrorCode::Unavailable, None),
            // `Error` is non-exhaustive: a kind added to the engine later
            // reads as an internal error until it gains its own code.
            _ => (ErrorCode::Internal, None),
        };
        ApiError { code, message, field }
    }
}

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
    /// The namespace is outside what this server serves (`--namespace`,
    /// `--allow-ns`), or the operation spans namespaces and the server is
    /// restricted. Nothing was written.
    NamespaceNotAllowed,
    /// A single item is larger than the response budget; page with a
    /// smaller `limit` or read it through the library.
    ResponseTooLarge,
    /// The store is held by another process that could not be reached.
    Locked,
    /// The process holding the store went away while the call was in
    /// flight: a write may or may not have been applied; read before
    /// retrying. Also: a remote embedding or rerank provider did not answer
    /// after its retries (nothing was written; a `remember` is stored with
    /// deferred embedding instead of getting this).
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
    /// An HTTP door refused the caller: the server has a bearer token and
    /// the request did not carry it (HTTP 401), or the request came from a
    /// browser origin or under a host name the server does not answer
    /// (HTTP 403). Nothing was run.
    Unauthorized,
    /// In a cluster: this daemon lost the namespace's writer lease or log
    /// position (another daemon writes it); the write was not applied.
    Fenced,
    /// The store is encrypted at rest and was opened without a key (no
    /// key file, no `MNEMON_KEY_FILE`, no `MNEMON_KEY`), or the key file
    /// named does not exist, or a copy was opened without the keyring of
    /// the store it came from. Nothing was opened or written; open it
    /// again with its key. (A key given to a store created without one is
    /// `invalid_input`, field `key`.)
    KeyRequired,
    /// The key given does not open the store's keyring (it is not the key
    /// the store was created with), or the keyring named is another
    /// store's. Nothing was opened or written.
    WrongKey,
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
            ErrorCode::Unauthorized => "unauthorized",
            ErrorCode::KeyRequired => "key_required",
            ErrorCode::WrongKey => "wrong_key",
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
                | ErrorCode::Unauthorized
                | ErrorCode::KeyRequired
                | ErrorCode::WrongKey
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

    /// An [`ErrorCode::InvalidInput`] error naming `field`; `reason` says
    /// what is wrong with it, and the message names the field
    /// ([`field_message`]): `invalid("top_k", "must be at least 1")` reads
    /// `top_k must be at least 1`.
    pub fn invalid(field: impl Into<String>, reason: impl AsRef<str>) -> ApiError {
        let field = field.into();
        ApiError { code: ErrorCode::InvalidInput, message: field_message(&field, reason.as_ref()), field: Some(field) }
    }

    /// An [`ErrorCode::InvalidInput`] error for a value of `field` outside
    /// `lo..=hi`: `budget_tokens must be between 1 and 12400, got 0`.
    pub fn out_of_range(
        field: impl Into<String>,
        lo: impl std::fmt::Display,
        hi: impl std::fmt::Display,
        got: impl std::fmt::Display,
    ) -> ApiError {
        ApiError::invalid(field, mnemon::range_reason(lo, hi, got))
    }
}

/// What the engine's error `e` says, without its kind: the reason of an
/// [`Error::InvalidInput`] (so that the field a request names stands in
/// for the engine's own name of it), else its whole message.
pub(crate) fn reason_of(e: &Error) -> String {
    match e {
        Error::InvalidInput { reason, .. } => reason.clone(),
        other => other.to_string(),
    }
}

/// Words that open a reason which reads as a predicate of its field:
/// `top_k` + `must be at least 1` is one sentence, `top_k must be at least
/// 1`; any other reason follows the field after a colon.
const PREDICATES: &[&str] = &[
    "must ",
    "is ",
    "are ",
    "needs ",
    "cannot ",
    "can ",
    "may ",
    "has ",
    "holds ",
    "contains ",
    "names ",
    "points ",
    "was ",
    "does ",
    "takes ",
    "refers ",
];

/// The message of an error about `field`: the field named once, first,
/// then the reason, in one sentence when the reason is a predicate
/// (`budget_tokens must be between 1 and 12400, got 0`), else after a colon
/// (`content: empty`). A reason that already opens with the field (or
/// with the code's words, `invalid input: `, as the engine's errors print)
/// is not named twice. Every door words its errors through this.
pub fn field_message(field: &str, reason: &str) -> String {
    let mut reason = reason.trim().strip_prefix("invalid input: ").unwrap_or(reason.trim());
    // The last part of a path (`filter.key` → `key`) is how a value type's
    // own check names itself.
    let last = field.rsplit(['.', '[']).next().unwrap_or(field);
    for name in [field, last] {
        if let Some(rest) = reason.strip_prefix(name) {
            if let Some(rest) = rest.strip_prefix(": ") {
                reason = rest;
                break;
            }
            if rest.starts_with(' ') && PREDICATES.iter().any(|p| rest[1..].starts_with(p)) {
                reason = &rest[1..];
                break;
            }
        }
    }
    if PREDICATES.iter().any(|p| reason.starts_with(p)) {
        format!("{field} {reason}")
    } else {
        format!("{field}: {reason}")
    }
}

/// An I/O error in plain words: what the operating system's error kind
/// means (`no such file or directory`), after the path it was about when
/// the message names one; never the OS's own code (`(os error 2)`).
pub fn plain_io(e: &std::io::Error) -> String {
    use std::io::ErrorKind as K;
    let words = match e.kind() {
        K::NotFound => Some("no such file or directory"),
        K::PermissionDenied => Some("permission denied"),
        K::AlreadyExists => Some("already exists"),
        K::IsADirectory => Some("is a directory, not a file"),
        K::NotADirectory => Some("is not a directory"),
        K::DirectoryNotEmpty => Some("directory is not empty"),
        K::StorageFull => Some("no space left on the device"),
        K::ReadOnlyFilesystem => Some("the file system is read-only"),
        K::InvalidFilename => Some("the file name is too long or not valid"),
        K::ConnectionRefused => Some("connection refused"),
        K::AddrInUse => Some("address already in use"),
        K::AddrNotAvailable => Some("address not available"),
        K::TimedOut => Some("timed out"),
        K::InvalidData => None,
        _ => None,
    };
    let text = e.to_string();
    // The OS's text ends in ` (os error N)`; a message naming its path
    // (`Error::io_at`) reads `PATH: OS text (os error N)`.
    let (text, from_os) = match text.rfind(" (os error ") {
        Some(i) if text.ends_with(')') => (&text[..i], true),
        _ => (text.as_str(), e.raw_os_error().is_some()),
    };
    match (words, from_os) {
        (Some(w), true) => match text.rsplit_once(": ") {
            Some((path, _)) => format!("{path}: {w}"),
            None => w.to_string(),
        },
        _ => text.to_string(),
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
    /// The engine's error under its code. The message does not repeat the
    /// code (`invalid input: `, `not found: `, `i/o error: `): it names the
    /// field at fault ([`field_message`]), what was not found (`no memory 7
    /// in namespace u1`), or the I/O failure in plain words ([`plain_io`]).
    fn from(e: Error) -> ApiError {
        let (code, field, message) = match &e {
            Error::InvalidInput { field, reason } => {
                (ErrorCode::InvalidInput, Some((*field).to_string()), field_message(field, reason))
            }
            Error::NotFound { what } => (ErrorCode::NotFound, not_found_field(what), format!("no {what}")),
            Error::Conflict(m) => (ErrorCode::Conflict, None, m.clone()),
            // A copy that is not whole is, to a caller, a store it cannot use.
            Error::Corrupted { .. } | Error::IncompleteCopy { .. } => (ErrorCode::Corrupted, None, e.to_string()),
            Error::Locked { .. } => (ErrorCode::Locked, None, e.to_string()),
            Error::Poisoned(_) => (ErrorCode::Poisoned, None, e.to_string()),
            Error::Closed => (ErrorCode::Closed, None, e.to_string()),
            Error::Cancelled => (ErrorCode::Cancelled, None, e.to_string()),
            Error::IncompatibleFormat(m) => (ErrorCode::IncompatibleFormat, None, m.clone()),
            Error::Embedder(m) => (ErrorCode::Embedder, None, m.to_string()),
            Error::NoModelInstalled { .. } => (ErrorCode::Embedder, None, e.to_string()),
            Error::Rejected(_) => (ErrorCode::Rejected, None, e.to_string()),
            // An encrypted store opened without its key (or with another):
            // the caller's `key` is at fault; nothing was written.
            Error::KeyRequired(_) => (ErrorCode::KeyRequired, Some("key".into()), e.to_string()),
            Error::WrongKey(_) => (ErrorCode::WrongKey, Some("key".into()), e.to_string()),
            Error::Io(io) => (ErrorCode::Io, None, plain_io(io)),
            Error::Storage(m) => (ErrorCode::Storage, None, m.to_string()),
            Error::Fenced { .. } => (ErrorCode::Fenced, None, e.to_string()),
            Error::Unavailable(_) => (ErrorCode::Unavailable, None, e.to_string()),
            Error::ProviderUnavailable { .. } => (ErrorCode::Unavailable, None, e.to_string()),
            // `Error` is non-exhaustive: a kind added to the engine later
            // reads as an internal error until it gains its own code.
            _ => (ErrorCode::Internal, None, e.to_string()),
        };
        ApiError { code, message, field }
    }
}

#[cfg(test)]
mod tests {
    use super::{field_message, plain_io, ApiError};

    #[test]
    fn a_field_is_named_once_and_first() {
        let cases = [
            ("top_k", "must be between 1 and 1000, got 0", "top_k must be between 1 and 1000, got 0"),
            ("namespace", "invalid input: namespace: must be 1-128 characters", "namespace must be 1-128 characters"),
            ("content", "empty", "content: empty"),
            ("filter.key", "invalid input: key: empty", "filter.key: empty"),
            ("from", "is after to", "from is after to"),
            ("sources[1]", "must be a string, got null", "sources[1] must be a string, got null"),
            ("dedup", "dedup must be one of supersede, off", "dedup must be one of supersede, off"),
            ("text", "give exactly one of text and path", "text: give exactly one of text and path"),
        ];
        for (field, reason, want) in cases {
            assert_eq!(field_message(field, reason), want, "{field} {reason}");
        }
        let e = ApiError::out_of_range("budget_tokens", 1, 12400, 0);
        assert_eq!(e.message, "budget_tokens must be between 1 and 12400, got 0");
        assert_eq!(e.field.as_deref(), Some("budget_tokens"));
    }

    #[test]
    fn the_message_does_not_repeat_the_code() {
        let e = ApiError::from(mnemon::Error::invalid("top_k", "must be at least 1"));
        assert_eq!(e.message, "top_k must be at least 1");
        let e = ApiError::from(mnemon::Error::not_found("memory 7 in namespace u1"));
        assert_eq!((e.message.as_str(), e.field.as_deref()), ("no memory 7 in namespace u1", Some("id")));
        let e = ApiError::from(mnemon::Error::Conflict("memory 3 is superseded".into()));
        assert_eq!(e.message, "memory 3 is superseded");
    }

    #[test]
    fn io_errors_are_plain_words() {
        let os = std::io::Error::from_raw_os_error(2);
        assert_eq!(plain_io(&os), "no such file or directory");
        let at = mnemon::Error::io_at(std::path::Path::new("notes.jsonl"), std::io::Error::from_raw_os_error(2));
        let e = ApiError::from(at);
        assert_eq!(e.message, "notes.jsonl: no such file or directory");
        assert!(!e.message.contains("os error"), "{}", e.message);
        let own = std::io::Error::new(std::io::ErrorKind::InvalidData, "stream did not contain valid UTF-8");
        assert_eq!(plain_io(&own), "stream did not contain valid UTF-8");
    }
}

//! Surface errors as JavaScript errors.
//!
//! A rejected call's `Error` has as its message the JSON object
//! `{"code": "<ErrorCode>", "message": "...", "field": "..." | null}`;
//! node/src/errors.ts reads it back into the class of the code.

use mnemon_api::{ApiError, ErrorCode};

/// `e` as a napi error carrying the surface error as JSON.
pub(crate) fn surface(e: ApiError) -> napi::Error {
    let body = serde_json::json!({
        "code": e.code.as_str(),
        "message": e.message,
        "field": e.field,
    });
    napi::Error::new(napi::Status::GenericFailure, body.to_string())
}

/// An engine error as a surface error, mapped as the surface maps it.
pub(crate) fn from_engine(e: mnemon::Error) -> napi::Error {
    surface(ApiError::from(e))
}

/// An [`ErrorCode::InvalidInput`] error naming `field`.
pub(crate) fn invalid(field: &str, reason: impl AsRef<str>) -> napi::Error {
    surface(ApiError::invalid(field, reason))
}

/// An [`ErrorCode::Internal`] error (a bug).
pub(crate) fn internal(e: impl std::fmt::Display) -> napi::Error {
    surface(ApiError::new(ErrorCode::Internal, e.to_string()))
}

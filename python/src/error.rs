//! Surface errors as a Python exception.

use mnemon_api::{ApiError, ErrorCode};
use pyo3::exceptions::PyException;
use pyo3::PyErr;

pyo3::create_exception!(
    mnemon._native,
    SurfaceError,
    PyException,
    "An error of the command surface. args: (code, message, field): code is the \
     surface's stable error code (`invalid_input`, `not_found`, ...), field the \
     request field at fault or None. The mnemon package re-raises it as the \
     matching subclass of mnemon.MnemonError."
);

/// `e` as a [`SurfaceError`] with args `(code, message, field)`.
pub(crate) fn surface(e: ApiError) -> PyErr {
    SurfaceError::new_err((e.code.as_str(), e.message, e.field))
}

/// An engine error as a [`SurfaceError`], mapped as the surface maps it.
pub(crate) fn from_engine(e: mnemon::Error) -> PyErr {
    surface(ApiError::from(e))
}

/// An [`ErrorCode::InvalidInput`] error naming `field`.
pub(crate) fn invalid(field: &str, reason: impl AsRef<str>) -> PyErr {
    surface(ApiError::invalid(field, reason))
}

/// An [`ErrorCode::Internal`] error (a bug).
pub(crate) fn internal(e: impl std::fmt::Display) -> PyErr {
    surface(ApiError::new(ErrorCode::Internal, e.to_string()))
}

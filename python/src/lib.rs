//! `mnemon._native`: the compiled half of the `mnemon` Python package.
//!
//! Python reaches the engine through one door, the command surface
//! ([`mnemon_api`]) that the CLI and the MCP server also call: the
//! `mnemon` package turns each method call into an operation name and its
//! arguments as JSON text, [`Engine::call`] decodes them into an
//! [`mnemon_api::Request`] (every field checked, the field at fault named),
//! runs it with [`mnemon_api::execute_with`] and returns the response as
//! JSON text — the same JSON as `mnemon … --json` and the MCP tools.
//!
//! The GIL is released for everything after the arguments are read:
//! decoding, embedding, the wait for the writer's group commit, recall,
//! compaction and encoding the response. One [`Engine`] can be shared by
//! any number of Python threads; calls run in parallel and writes meet in
//! the engine's group commit.
//!
//! Errors are raised as `mnemon._native.SurfaceError(code, message, field)`
//! with the surface's stable [`mnemon_api::ErrorCode`] name as `code`; the
//! Python package maps each code to its own exception class.

#![forbid(unsafe_code)]

mod embedder;
mod engine;
mod error;

/// The compiled half of the `mnemon` package: the engine handle and the
/// command surface's schemas. Use the `mnemon` package, not this module.
#[pyo3::pymodule]
mod _native {
    use pyo3::prelude::*;

    #[pymodule_export]
    use crate::engine::Engine;
    #[pymodule_export]
    use crate::error::SurfaceError;

    /// The JSON Schema of every operation's request and response, as JSON
    /// text: a list of `{"op", "read_only", "request", "response"}` objects
    /// (the output of `mnemon schema --json`).
    ///
    /// Raises `SurfaceError` (code `internal`) if a schema cannot be encoded.
    #[pyfunction]
    fn schemas() -> PyResult<String> {
        serde_json::to_string(&mnemon_api::schemas()).map_err(crate::error::internal)
    }

    /// Names of every operation of the command surface, in its order.
    #[pyfunction]
    fn ops() -> Vec<&'static str> {
        mnemon_api::OPS.to_vec()
    }

    /// Checks a namespace name: 1–128 characters of `[A-Za-z0-9_.:@-]`.
    ///
    /// Raises `SurfaceError` (code `invalid_input`, field `namespace`) when
    /// it is not one.
    #[pyfunction]
    fn check_namespace(name: String) -> PyResult<()> {
        mnemon::Namespace::new(name).map(|_| ()).map_err(crate::error::from_engine)
    }

    /// The version of the engine crate this module was built from.
    #[pyfunction]
    fn version() -> &'static str {
        env!("CARGO_PKG_VERSION")
    }

    #[pymodule_init]
    fn init(m: &Bound<'_, PyModule>) -> PyResult<()> {
        m.add("DEFAULT_MAX_RESPONSE_TOKENS", mnemon_api::DEFAULT_MAX_RESPONSE_TOKENS)?;
        m.add("DEFAULT_MAX_CONTENT_BYTES", mnemon::DEFAULT_MAX_CONTENT_BYTES)?;
        Ok(())
    }
}

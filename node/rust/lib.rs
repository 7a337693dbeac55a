//! `mnemon-node`: the compiled half of the `mnemon` npm package.
//!
//! Node reaches the engine through one door, the command surface
//! ([`mnemon_api`]) that the CLI, the MCP server and the Python package also
//! call: the TypeScript `Engine` turns each method call into an operation
//! name and its arguments as JSON text, [`engine::Engine::call`] decodes them
//! into an [`mnemon_api::Request`] (every field checked, the field at fault
//! named), runs it with [`mnemon_api::execute_with`] and resolves to the
//! response as JSON text — the same JSON as `mnemon … --json`.
//!
//! Every call that touches the store (open, call, embed, close) runs on
//! libuv's thread pool and returns a Promise: the JavaScript thread never
//! waits for an embedding, a group commit, a recall or a compaction. One
//! engine serves any number of concurrent calls; writes meet in the
//! engine's group commit.
//!
//! Errors reject with an `Error` whose message is the JSON object
//! `{"code", "message", "field"}` ([`error`]); the TypeScript package turns
//! it into the `MnemonError` subclass of the code.

#![deny(missing_docs)]

mod embedder;
mod engine;
mod error;

use napi_derive::napi;

pub use engine::{open, Engine, OpenTask};

/// The JSON Schema of every operation's request and response, as JSON text:
/// a list of `{"op", "read_only", "request", "response"}` objects (the output
/// of `mnemon schema --json`).
///
/// Throws (code `internal`) if a schema cannot be encoded.
#[napi]
pub fn schemas() -> napi::Result<String> {
    serde_json::to_string(&mnemon_api::schemas()).map_err(error::internal)
}

/// Names of every operation of the command surface, in its order.
#[napi]
pub fn ops() -> Vec<&'static str> {
    mnemon_api::OPS.to_vec()
}

/// Checks a namespace name: 1–128 characters of `[A-Za-z0-9_.:@-]`.
///
/// Throws (code `invalid_input`, field `namespace`) when it is not one.
#[napi]
pub fn check_namespace(name: String) -> napi::Result<()> {
    mnemon::Namespace::new(name).map(|_| ()).map_err(error::from_engine)
}

/// The version of the engine crate this addon was built from.
#[napi]
pub fn version() -> &'static str {
    env!("CARGO_PKG_VERSION")
}

/// Largest memory or observation text by default, in bytes of UTF-8.
#[napi]
pub fn default_max_content_bytes() -> u32 {
    u32::try_from(mnemon::DEFAULT_MAX_CONTENT_BYTES).unwrap_or(u32::MAX)
}

/// Default cap of one response, in estimated tokens.
#[napi]
pub fn default_max_response_tokens() -> u32 {
    u32::try_from(mnemon_api::DEFAULT_MAX_RESPONSE_TOKENS).unwrap_or(u32::MAX)
}

/// The answer of a caller's embedder to request `id` (see [`embedder`]):
/// `vectors`, the vectors one after another (texts × dimension numbers), or
/// `error`, why there are none. An id no request is waiting for (it timed
/// out) is ignored.
#[napi]
pub fn embed_reply(id: u32, error: Option<String>, vectors: Option<napi::bindgen_prelude::Float64Array>) {
    embedder::reply(id, error, vectors.map(|v| v.to_vec()));
}

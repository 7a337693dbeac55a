//! The MCP server (feature `mcp`): the command surface as Model Context
//! Protocol tools, over stdio ([`run_stdio`], `mnemon mcp`) or streamable
//! HTTP at `/mcp` ([`run_http`], `mnemon serve`), built on the official
//! Rust SDK (`rmcp`).
//!
//! Ten tools — `remember`, `observe`, `recall`, `context`, `get`,
//! `history`, `list`, `forget`, `extraction_prompt`, `apply_extraction` —
//! each one surface operation: its arguments are the operation's request
//! (compact JSON Schema), its result the response JSON as text, and a
//! failure an error result carrying the surface's error object
//! (`{"error": {"code", "message", "field"}}`) so the model can correct
//! the call. Reads are annotated `readOnlyHint`, `forget` and
//! `apply_extraction` `destructiveHint`.
//!
//! All connections of one server share one [`Backend`]: one engine, one
//! writer, group commit across clients. Shutdown (SIGINT, SIGTERM, or stdin
//! closing for stdio) refuses new calls, waits for those in flight (at most
//! [`DRAIN_TIMEOUT`]), and the caller then closes the engine, which
//! flushes: every acknowledged write is durable before its answer is sent
//! anyway (per-group durability).

mod backend;
mod http;
mod inspector;
mod schema;
mod server;
mod sessions;
pub mod socket;
mod tools;

pub use backend::{Backend, Opener};
pub use http::MCP_PATH;
pub use schema::compact as compact_schema;
pub use server::MemoryServer;
pub use sessions::{DEFAULT_MAX_SESSIONS, DEFAULT_SESSION_IDLE_SECS, RESUME_WINDOW};

use std::net::SocketAddr;
use std::sync::Arc;
use std::time::Duration;

use rmcp::ServiceExt;

use crate::api::{ApiError, ErrorCode, NamespacePolicy};

/// Longest wait for in-flight calls at shutdown.
pub const DRAIN_TIMEOUT: Duration = Duration::from_secs(30);
/// Default largest HTTP request body: a full extraction document
/// ([`crate::MAX_EXTRACTION_BYTES`], 4 MiB) with room for JSON escaping.
pub const DEFAULT_MAX_BODY_BYTES: usize = 8 * 1024 * 1024;

/// Settings of `mnemon serve`.
#[derive(Clone, Debug)]
pub struct HttpOptions {
    /// Address to listen on (port 0: any free port; the address is printed
    /// on standard error).
    pub listen: SocketAddr,
    /// Bearer token every request must carry; required when `listen` is
    /// not a loopback address.
    pub token: Option<String>,
    /// Largest request body in bytes (larger: HTTP 413). Default
    /// [`DEFAULT_MAX_BODY_BYTES`].
    pub max_body_bytes: usize,
    /// Most MCP sessions open at once (at least 1): a client that
    /// initialises beyond it closes the session idle longest. Default
    /// [`DEFAULT_MAX_SESSIONS`]. With the idle limit and [`RESUME_WINDOW`],
    /// this bounds what the sessions hold in memory.
    pub max_sessions: usize,
    /// Idle time after which a session is closed (the client then gets 404
    /// and initialises again, as the MCP transport specifies). Default
    /// [`DEFAULT_SESSION_IDLE_SECS`] s.
    pub session_idle: Duration,
}

impl MemoryServer {
    /// A server over `backend`, serving the namespaces `policy` allows.
    pub fn new(backend: Arc<Backend>, policy: NamespacePolicy) -> MemoryServer {
        let tools = tools::definitions(&policy);
        MemoryServer { shared: Arc::new(server::Shared { backend, policy, tools, gate: Default::default() }) }
    }

    /// The tool definitions `tools/list` returns.
    pub fn tools(&self) -> &[rmcp::model::Tool] {
        &self.shared.tools
    }
}

fn runtime() -> Result<tokio::runtime::Runtime, ApiError> {
    tokio::runtime::Builder::new_multi_thread()
        .enable_all()
        .build()
        .map_err(|e| ApiError::new(ErrorCode::Io, format!("cannot start the async runtime: {e}")))
}

/// Resolves on SIGINT or SIGTERM.
pub(crate) async fn shutdown_signal() {
    let term = async {
        #[cfg(unix)]
        match tokio::signal::unix::signal(tokio::signal::unix::SignalKind::terminate()) {
            Ok(mut s) => {
                s.recv().await;
            }
            Err(_) => std::future::pending::<()>().await,
        }
        #[cfg(not(unix))]
        std::future::pending::<()>().await;
    };
    tokio::select! {
        _ = tokio::signal::ctrl_c() => {}
        () = term => {}
    }
}

/// Serves MCP on standard input and output until stdin closes or a signal
/// arrives; blocks. Close the backend afterwards.
///
/// # Errors
/// [`ErrorCode::Io`] when the runtime cannot start or the handshake fails.
pub fn run_stdio(server: MemoryServer) -> Result<(), ApiError> {
    runtime()?.block_on(async move {
        let running = server
            .clone()
            .serve(rmcp::transport::stdio())
            .await
            .map_err(|e| ApiError::new(ErrorCode::Io, format!("MCP handshake on stdio failed: {e}")))?;
        let ct = running.cancellation_token();
        let mut waiting = std::pin::pin!(running.waiting());
        tokio::select! {
            _ = &mut waiting => server.shared.gate.close(DRAIN_TIMEOUT).await,
            () = shutdown_signal() => {
                // Answer the calls in flight while the transport is still
                // up, refuse new ones, then stop.
                let left = server.shared.gate.close(DRAIN_TIMEOUT).await;
                ct.cancel();
                let _ = tokio::time::timeout(DRAIN_TIMEOUT, &mut waiting).await;
                left
            }
        };
        Ok(())
    })
}

/// Serves MCP over streamable HTTP at [`MCP_PATH`] until SIGINT/SIGTERM;
/// blocks. Close the backend afterwards.
///
/// # Errors
/// [`ErrorCode::InvalidInput`] (field `token`) for a non-loopback address
/// without a token, or an empty token; [`ErrorCode::Io`] when the address
/// cannot be bound.
pub fn run_http(server: MemoryServer, opts: HttpOptions) -> Result<(), ApiError> {
    if opts.token.as_deref().is_some_and(|t| t.trim().is_empty()) {
        return Err(ApiError::invalid("token", "the bearer token must not be empty"));
    }
    if !opts.listen.ip().is_loopback() && opts.token.is_none() {
        return Err(ApiError::invalid(
            "token",
            format!("{} is not a loopback address: give a bearer token (--token or MNEMON_TOKEN)", opts.listen),
        ));
    }
    runtime()?.block_on(http::run(server, opts))
}

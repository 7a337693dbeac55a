//! The MCP server (feature `mcp`): the command surface as Model Context
//! Protocol tools, over stdio ([`run_stdio`], `mnemon mcp`) or streamable
//! HTTP at `/mcp` ([`run_http`], `mnemon serve`), built on the official
//! Rust SDK (`rmcp`).
//!
//! Ten tools — `remember`, `observe`, `recall`, `context`, `get`,
//! `history`, `list`, `forget`, `extraction_prompt`, `apply_extraction`,
//! each named with a prefix ([`DEFAULT_TOOL_PREFIX`], `memory_recall`) —
//! each one surface operation: its arguments are the operation's request
//! (compact JSON Schema of the arguments a model needs; the others are
//! accepted), its result the response as `structuredContent` (checked
//! against the tool's `outputSchema`) and as JSON text, and a failure an
//! error result carrying the surface's error object (`{"error": {"code",
//! "message", "field"}}`) so the model can correct the call. Reads are
//! annotated `readOnlyHint`, `forget` and `apply_extraction`
//! `destructiveHint`. The whole tool list stays within
//! [`MAX_TOOL_TOKENS`].
//!
//! All connections of one server share one [`Backend`]: one engine, one
//! writer, group commit across clients. Shutdown (SIGINT, SIGTERM, or stdin
//! closing for stdio) refuses new calls, waits for those in flight (at most
//! [`DRAIN_TIMEOUT`]), and the caller then closes the engine, which
//! flushes: every acknowledged write is durable before its answer is sent
//! anyway (per-group durability).

mod backend;
mod conn;
mod headers;
mod http;
mod inspector;
mod rest;
mod schema;
mod server;
mod sessions;
pub mod socket;
mod stdio;
mod tools;

pub use backend::{Backend, Opener};
pub use http::MCP_PATH;
pub use rest::{openapi, status_of, OPENAPI_PATH, REST_PREFIX};
pub use schema::compact as compact_schema;
pub use server::MemoryServer;
pub use sessions::{DEFAULT_MAX_SESSIONS, DEFAULT_SESSION_IDLE_SECS, RESUME_WINDOW};
pub use tools::{check_prefix as check_tool_prefix, DEFAULT_TOOL_PREFIX, MAX_TOOL_PREFIX_LEN, MAX_TOOL_TOKENS};

use std::net::SocketAddr;
use std::sync::Arc;
use std::time::Duration;

use rmcp::ServiceExt;

use mnemon_api::{ApiError, ErrorCode, NamespacePolicy};

/// Longest wait for in-flight calls at shutdown.
pub const DRAIN_TIMEOUT: Duration = Duration::from_secs(30);
/// Default largest HTTP request body: a full extraction document
/// ([`mnemon::extract::MAX_EXTRACTION_BYTES`], 4 MiB) with room for JSON escaping.
/// Also the longest line `mnemon mcp` reads on stdin.
pub const DEFAULT_MAX_BODY_BYTES: usize = 8 * 1024 * 1024;
/// Default time a client has to send a request's headers, counted from
/// the connection's opening or from the end of its previous exchange (so
/// also the longest a kept-alive connection may sit idle): 10 s, enough
/// for any client on a working network, short enough that slow-header
/// connections cannot pile up.
pub const DEFAULT_HEADER_TIMEOUT: Duration = Duration::from_secs(10);
/// Default time a client has to send a request's body once its headers
/// are in: 60 s (a full [`DEFAULT_MAX_BODY_BYTES`] body at about 140 KB/s).
pub const DEFAULT_BODY_TIMEOUT: Duration = Duration::from_secs(60);
/// Default most HTTP connections open at once: 256, well below the usual
/// soft limit of 1024 open files per process, leaving room for the store's
/// own files. Connections above it are answered 503 and closed.
pub const DEFAULT_MAX_CONNECTIONS: usize = 256;

/// Default most REST calls running at once: 64. Each runs on a thread of
/// the blocking pool (512 threads at most); 64 leaves room for the MCP
/// sessions and the inspector while one writer commits the writes in
/// groups, so more at once would only queue behind it.
pub const DEFAULT_MAX_IN_FLIGHT: usize = 64;

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
    /// Time to send a request's headers, from the connection's opening or
    /// the end of its previous exchange; the connection is closed when it
    /// runs out. Default [`DEFAULT_HEADER_TIMEOUT`]; must be above zero.
    pub header_timeout: Duration,
    /// Time to send a request's body once its headers are in (longer:
    /// HTTP 408). Default [`DEFAULT_BODY_TIMEOUT`]; must be above zero.
    pub body_timeout: Duration,
    /// Most connections open at once; more are answered 503 with
    /// `Retry-After` and closed. Default [`DEFAULT_MAX_CONNECTIONS`]; at
    /// least 1.
    pub max_connections: usize,
    /// Most REST calls running at once; one more is answered 429 with
    /// `Retry-After` and runs nothing. Default [`DEFAULT_MAX_IN_FLIGHT`];
    /// at least 1.
    pub max_in_flight: usize,
    /// Browser origins (`scheme://host[:port]`) allowed besides loopback
    /// ones: a request to `/mcp` whose `Origin` is neither is refused with
    /// 403 (no DNS rebinding from other web pages). Requests without
    /// `Origin` (not from a browser) are not affected.
    pub allowed_origins: Vec<String>,
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

impl HttpOptions {
    /// Options for `listen` with every default and no token.
    pub fn new(listen: SocketAddr) -> HttpOptions {
        HttpOptions {
            listen,
            token: None,
            max_body_bytes: DEFAULT_MAX_BODY_BYTES,
            header_timeout: DEFAULT_HEADER_TIMEOUT,
            body_timeout: DEFAULT_BODY_TIMEOUT,
            max_connections: DEFAULT_MAX_CONNECTIONS,
            max_in_flight: DEFAULT_MAX_IN_FLIGHT,
            allowed_origins: Vec::new(),
            max_sessions: DEFAULT_MAX_SESSIONS,
            session_idle: Duration::from_secs(DEFAULT_SESSION_IDLE_SECS),
        }
    }
}

impl MemoryServer {
    /// A server over `backend`, serving the namespaces `policy` allows,
    /// its tools named with [`DEFAULT_TOOL_PREFIX`].
    pub fn new(backend: Arc<Backend>, policy: NamespacePolicy) -> MemoryServer {
        Self::build(backend, policy, DEFAULT_TOOL_PREFIX.to_string())
    }

    /// [`MemoryServer::new`] with every tool name starting with `prefix`
    /// (`memory_` gives `memory_recall`; empty: the operations' own names).
    ///
    /// # Errors
    /// [`ErrorCode::InvalidInput`] (field `tool_prefix`) for a prefix longer
    /// than [`MAX_TOOL_PREFIX_LEN`] or holding other characters than
    /// `[A-Za-z0-9_.-]`.
    pub fn with_tool_prefix(
        backend: Arc<Backend>,
        policy: NamespacePolicy,
        prefix: &str,
    ) -> Result<MemoryServer, ApiError> {
        tools::check_prefix(prefix)?;
        Ok(Self::build(backend, policy, prefix.to_string()))
    }

    fn build(backend: Arc<Backend>, policy: NamespacePolicy, prefix: String) -> MemoryServer {
        let tools = tools::definitions(&policy, &prefix);
        MemoryServer {
            shared: Arc::new(server::Shared {
                backend,
                policy,
                prefix,
                tools,
                gate: Default::default(),
                notice: Default::default(),
            }),
        }
    }

    /// Sets a line about the store that the instructions sent to every
    /// client at `initialize` carry (after the usual ones), e.g. that the
    /// store recalls by exact words only
    /// ([`mnemon::embed::lexical_store_notice`]); `None` removes it. While
    /// the backend cannot open the store ([`Backend::refusal`]), the
    /// instructions carry that refusal instead.
    pub fn set_notice(&self, notice: Option<String>) {
        *self.shared.notice.write() = notice;
    }

    /// The server's instructions to the model, as `initialize` returns them.
    pub fn instructions(&self) -> String {
        server::instructions(&self.shared)
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
            .serve(stdio::LineTransport::new(tokio::io::stdin(), tokio::io::stdout(), DEFAULT_MAX_BODY_BYTES))
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
/// without a token, or an empty token; (fields `header_timeout`,
/// `body_timeout`, `max_connections`, `max_sessions`, `session_idle`,
/// `allowed_origins`) for a zero time or cap, or an origin that is not `scheme://host[:port]`;
/// [`ErrorCode::Io`] when the address cannot be bound.
pub fn run_http(server: MemoryServer, opts: HttpOptions) -> Result<(), ApiError> {
    if opts.header_timeout.is_zero() {
        return Err(ApiError::invalid("header_timeout", "must be above zero"));
    }
    if opts.body_timeout.is_zero() {
        return Err(ApiError::invalid("body_timeout", "must be above zero"));
    }
    if opts.max_connections == 0 {
        return Err(ApiError::invalid("max_connections", "must be at least 1"));
    }
    if opts.max_in_flight == 0 {
        return Err(ApiError::invalid("max_in_flight", "must be at least 1"));
    }
    if opts.max_sessions == 0 {
        return Err(ApiError::invalid("max_sessions", "must be at least 1"));
    }
    if opts.session_idle.is_zero() {
        return Err(ApiError::invalid("session_idle", "must be above zero"));
    }
    for o in &opts.allowed_origins {
        if headers::Origin::parse(o).is_none() {
            return Err(ApiError::invalid(
                "allowed_origins",
                format!("{o:?} is not an origin: write scheme://host or scheme://host:port"),
            ));
        }
    }
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

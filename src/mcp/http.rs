//! MCP over streamable HTTP at `/mcp`, with bearer-token authentication,
//! a body size limit and graceful shutdown.

use std::convert::Infallible;
use std::net::SocketAddr;
use std::sync::Arc;

use bytes::Bytes;
use http_body_util::{BodyExt, Full};
use hyper::body::Incoming;
use hyper::{Request, Response, StatusCode};
use hyper_util::rt::TokioIo;
use rmcp::transport::streamable_http_server::session::local::LocalSessionManager;
use rmcp::transport::streamable_http_server::{StreamableHttpServerConfig, StreamableHttpService};
use sha2::{Digest, Sha256};
use tokio_util::sync::CancellationToken;

use super::server::MemoryServer;
use super::{shutdown_signal, HttpOptions, DRAIN_TIMEOUT};
use crate::api::{ApiError, ErrorCode};

type Body = http_body_util::combinators::BoxBody<Bytes, Infallible>;

/// The conventional path of an MCP endpoint.
pub const MCP_PATH: &str = "/mcp";

struct HttpState {
    service: StreamableHttpService<MemoryServer, LocalSessionManager>,
    /// SHA-256 of the expected `Authorization` header value, if any.
    token_digest: Option<[u8; 32]>,
    max_body_bytes: usize,
}

/// JSON-RPC 2.0 error codes (the specification's reserved range).
const PARSE_ERROR: i64 = -32700;
const INVALID_REQUEST: i64 = -32600;

/// True for a JSON-RPC 2.0 message: an object with `"jsonrpc": "2.0"` and
/// either a string `method` (request, notification) or an `id` with a
/// `result` or `error` (a response to the server's request).
fn is_jsonrpc_message(v: &serde_json::Value) -> bool {
    let Some(m) = v.as_object() else { return false };
    m.get("jsonrpc").and_then(serde_json::Value::as_str) == Some("2.0")
        && (m.get("method").is_some_and(serde_json::Value::is_string)
            || (m.contains_key("id") && (m.contains_key("result") || m.contains_key("error"))))
}

/// Reads a POST body within the limit and checks it is one JSON-RPC
/// message, so that every malformed request gets a JSON-RPC error
/// (the SDK answers some with plain text); the message then goes to the
/// SDK unchanged.
async fn checked_body(body: Incoming, max: usize) -> Result<Bytes, Response<Body>> {
    let bytes = match http_body_util::Limited::new(body, max).collect().await {
        Ok(c) => c.to_bytes(),
        Err(e) if e.is::<http_body_util::LengthLimitError>() => {
            return Err(rpc_error(
                StatusCode::PAYLOAD_TOO_LARGE,
                INVALID_REQUEST,
                &format!("request body above {max} bytes"),
            ))
        }
        Err(e) => {
            return Err(rpc_error(StatusCode::BAD_REQUEST, INVALID_REQUEST, &format!("cannot read the body: {e}")))
        }
    };
    match serde_json::from_slice::<serde_json::Value>(&bytes) {
        Err(e) => Err(rpc_error(StatusCode::BAD_REQUEST, PARSE_ERROR, &format!("parse error: {e}"))),
        Ok(v) if !is_jsonrpc_message(&v) => Err(rpc_error(
            StatusCode::BAD_REQUEST,
            INVALID_REQUEST,
            "invalid request: expected one JSON-RPC 2.0 message (an object with \"jsonrpc\": \"2.0\" and a method)",
        )),
        Ok(_) => Ok(bytes),
    }
}

fn digest(s: &[u8]) -> [u8; 32] {
    Sha256::digest(s).into()
}

/// A JSON-RPC error response with an HTTP status (no request id is known).
fn rpc_error(status: StatusCode, code: i64, message: &str) -> Response<Body> {
    let body = serde_json::json!({ "jsonrpc": "2.0", "id": null, "error": { "code": code, "message": message } });
    let mut r = Response::new(Full::new(Bytes::from(body.to_string())).boxed());
    *r.status_mut() = status;
    r.headers_mut().insert(hyper::header::CONTENT_TYPE, hyper::header::HeaderValue::from_static("application/json"));
    if status == StatusCode::UNAUTHORIZED {
        r.headers_mut().insert(
            hyper::header::WWW_AUTHENTICATE,
            hyper::header::HeaderValue::from_static("Bearer realm=\"mnemon\""),
        );
    }
    r
}

async fn handle(req: Request<Incoming>, state: Arc<HttpState>) -> Response<Body> {
    if req.uri().path() != MCP_PATH {
        return rpc_error(StatusCode::NOT_FOUND, -32601, "not found: the MCP endpoint is /mcp");
    }
    if let Some(expected) = &state.token_digest {
        // Compared as digests, so the time taken does not depend on how
        // much of the token matched.
        let given = req.headers().get(hyper::header::AUTHORIZATION).map(|v| digest(v.as_bytes()));
        if given.as_ref() != Some(expected) {
            return rpc_error(StatusCode::UNAUTHORIZED, -32001, "unauthorized: send Authorization: Bearer <token>");
        }
    }
    if req.method() == hyper::Method::POST {
        let (parts, body) = req.into_parts();
        return match checked_body(body, state.max_body_bytes).await {
            Ok(bytes) => state.service.handle(Request::from_parts(parts, Full::new(bytes))).await,
            Err(refusal) => refusal,
        };
    }
    state.service.handle(req).await
}

/// Serves `server` over HTTP until SIGINT/SIGTERM, then drains in-flight
/// calls and returns.
pub(crate) async fn run(server: MemoryServer, opts: HttpOptions) -> Result<(), ApiError> {
    let io = |e: std::io::Error| ApiError::new(ErrorCode::Io, format!("listen on {}: {e}", opts.listen));
    let listener = tokio::net::TcpListener::bind(opts.listen).await.map_err(io)?;
    let ct = CancellationToken::new();
    let mut config = StreamableHttpServerConfig::default()
        .with_cancellation_token(ct.child_token())
        .with_max_request_body_bytes(opts.max_body_bytes);
    if !opts.listen.ip().is_loopback() {
        // Reached by other hosts under their own names; the bearer token
        // (required off loopback) is what keeps others out.
        config = config.disable_allowed_hosts();
    }
    let factory = server.clone();
    let service =
        StreamableHttpService::new(move || Ok(factory.clone()), Arc::new(LocalSessionManager::default()), config);
    let state = Arc::new(HttpState {
        service,
        token_digest: opts.token.as_deref().map(|t| digest(format!("Bearer {t}").as_bytes())),
        max_body_bytes: opts.max_body_bytes,
    });
    let graceful = hyper_util::server::graceful::GracefulShutdown::new();
    let mut stop = std::pin::pin!(shutdown_signal());
    eprintln!("mnemon: serving MCP on http://{}{MCP_PATH}", local_addr(&listener, opts.listen));
    loop {
        tokio::select! {
            accepted = listener.accept() => {
                let Ok((stream, _)) = accepted else { continue };
                let state = state.clone();
                let svc = hyper::service::service_fn(move |req| {
                    let state = state.clone();
                    async move { Ok::<_, Infallible>(handle(req, state).await) }
                });
                let conn = hyper::server::conn::http1::Builder::new().serve_connection(TokioIo::new(stream), svc);
                let conn = graceful.watch(conn);
                tokio::spawn(async move {
                    let _ = conn.await;
                });
            }
            () = &mut stop => break,
        }
    }
    drop(listener);
    // Answer what was accepted, refuse the rest, then close the streams.
    server.shared.gate.close(DRAIN_TIMEOUT).await;
    ct.cancel();
    let _ = tokio::time::timeout(DRAIN_TIMEOUT, graceful.shutdown()).await;
    Ok(())
}

fn local_addr(l: &tokio::net::TcpListener, fallback: SocketAddr) -> SocketAddr {
    l.local_addr().unwrap_or(fallback)
}

//! MCP over streamable HTTP at `/mcp`, with bearer-token authentication,
//! a body size limit and graceful shutdown; every other path is the
//! read-only inspector ([`super::inspector`]).
//!
//! Authentication: with a token, `/mcp` needs `Authorization: Bearer
//! TOKEN`. The inspector takes the same header, or a cookie for browsers:
//! opening any inspector page with `?token=TOKEN` once answers with a
//! redirect to the same page without the token, setting the cookie
//! `mnemon_inspector` (HttpOnly, SameSite=Strict, Path=/) whose value is
//! derived from the token (SHA-256 of a fixed label and the token), so the
//! cookie cannot be replayed as the bearer token of `/mcp`. On a loopback
//! address without a token, the inspector answers only requests whose
//! `Host` is a loopback name (no DNS rebinding from other web pages).
//!
//! `/mcp` refuses (403) a request whose `Origin` is neither a loopback
//! origin nor one of [`HttpOptions::allowed_origins`]; `DELETE /mcp` of an
//! unknown session is 404, of a known one ends it (204). Connections:
//! see [`super::conn`].

use std::convert::Infallible;
use std::sync::Arc;

use bytes::Bytes;
use http_body_util::{BodyExt, Full};
use hyper::body::Incoming;
use hyper::{Request, Response, StatusCode};
use hyper_util::rt::TokioIo;
use rmcp::transport::streamable_http_server::session::SessionManager;
use rmcp::transport::streamable_http_server::{StreamableHttpServerConfig, StreamableHttpService};
use sha2::{Digest, Sha256};
use tokio_util::sync::CancellationToken;

use super::conn::Acceptor;
use super::headers::{bearer_token, origin_allowed, Origin};
use super::inspector::Inspector;
use super::rest::{self, Rest};
use super::server::MemoryServer;
use super::sessions::Sessions;
use super::{shutdown_signal, HttpOptions, DRAIN_TIMEOUT};
use mnemon_api::{ApiError, ErrorCode};

type Body = http_body_util::combinators::BoxBody<Bytes, Infallible>;

/// The conventional path of an MCP endpoint.
pub const MCP_PATH: &str = "/mcp";

struct HttpState {
    service: StreamableHttpService<MemoryServer, Sessions>,
    sessions: Arc<Sessions>,
    server: MemoryServer,
    inspector: Arc<Inspector>,
    /// SHA-256 of the bearer token, if any.
    token_digest: Option<[u8; 32]>,
    /// The inspector's cookie value for the token, if any.
    cookie_value: Option<String>,
    /// The server listens on a loopback address.
    loopback: bool,
    max_body_bytes: usize,
    body_timeout: std::time::Duration,
    allowed_origins: Vec<Origin>,
    rest: Arc<Rest>,
}

/// Name of the inspector's session cookie.
const COOKIE: &str = "mnemon_inspector";

/// The inspector cookie's value for `token`: hex SHA-256 of a fixed label
/// and the token (not the token itself, which also opens `/mcp`).
fn cookie_value(token: &str) -> String {
    hex::encode(digest(format!("mnemon inspector cookie\n{token}").as_bytes()))
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
async fn checked_body(body: Incoming, max: usize, timeout: std::time::Duration) -> Result<Bytes, Response<Body>> {
    let collected = tokio::time::timeout(timeout, http_body_util::Limited::new(body, max).collect()).await;
    let Ok(collected) = collected else {
        return Err(rpc_error(
            StatusCode::REQUEST_TIMEOUT,
            INVALID_REQUEST,
            &format!("the request body did not arrive within {} s", timeout.as_secs_f64()),
        ));
    };
    let bytes = match collected {
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
    if rest::owns(req.uri().path()) {
        return rest_gate(req, &state).await;
    }
    if req.uri().path() != MCP_PATH {
        return inspect(req, &state).await;
    }
    if !origin_allowed(req.headers().get_all(hyper::header::ORIGIN).iter(), &state.allowed_origins) {
        return rpc_error(
            StatusCode::FORBIDDEN,
            -32001,
            "forbidden: this Origin may not call the server (loopback origins and those given with --allow-origin only)",
        );
    }
    if let Some(expected) = &state.token_digest {
        if !bearer_matches(&req, expected) {
            return rpc_error(StatusCode::UNAUTHORIZED, -32001, "unauthorized: send Authorization: Bearer <token>");
        }
    }
    if req.method() == hyper::Method::DELETE {
        return end_session(req, &state).await;
    }
    if req.method() == hyper::Method::POST {
        let (parts, body) = req.into_parts();
        return match checked_body(body, state.max_body_bytes, state.body_timeout).await {
            Ok(bytes) => state.service.handle(Request::from_parts(parts, Full::new(bytes))).await,
            Err(refusal) => refusal,
        };
    }
    state.service.handle(req).await
}

/// The REST door's checks, as `/mcp`'s: the browser origin, the host
/// name on a loopback server without a token (no DNS rebinding), the
/// bearer token; errors are the surface's error object.
async fn rest_gate(req: Request<Incoming>, state: &HttpState) -> Response<Body> {
    // Refused before its body is read: the connection is closed after.
    let refuse = |status, message: &str| {
        let r = rest::error_with(status, &ApiError::new(ErrorCode::Unauthorized, message));
        if rest::sends_body(&req) {
            rest::closing(r)
        } else {
            r
        }
    };
    if !origin_allowed(req.headers().get_all(hyper::header::ORIGIN).iter(), &state.allowed_origins) {
        return refuse(
            StatusCode::FORBIDDEN,
            "forbidden: this Origin may not call the server (loopback origins and those given with --allow-origin only)",
        );
    }
    if state.loopback && state.token_digest.is_none() && !loopback_host(req.headers().get(hyper::header::HOST)) {
        return refuse(StatusCode::FORBIDDEN, "forbidden: this server answers loopback host names only");
    }
    if let Some(expected) = &state.token_digest {
        if !bearer_matches(&req, expected) {
            return refuse(StatusCode::UNAUTHORIZED, "unauthorized: send Authorization: Bearer <token>");
        }
    }
    rest::handle(req, &state.rest).await
}

/// True when the request's `Authorization` header is `Bearer` (any case)
/// with the token whose digest is `expected`. Compared as digests, so the
/// time taken does not depend on how much of the token matched.
fn bearer_matches(req: &Request<Incoming>, expected: &[u8; 32]) -> bool {
    req.headers()
        .get(hyper::header::AUTHORIZATION)
        .and_then(bearer_token)
        .is_some_and(|t| digest(t.as_bytes()) == *expected)
}

/// `DELETE /mcp`: ends the session named by `Mcp-Session-Id` (204), or
/// answers 404 when no such session is open (never opened, or ended).
async fn end_session(req: Request<Incoming>, state: &HttpState) -> Response<Body> {
    let id = req.headers().get("mcp-session-id").and_then(|v| v.to_str().ok()).map(|s| s.to_owned());
    let Some(id) = id else {
        return rpc_error(StatusCode::BAD_REQUEST, INVALID_REQUEST, "DELETE needs the Mcp-Session-Id header");
    };
    if !state.sessions.has_session(&id.clone().into()).await.unwrap_or(false) {
        return rpc_error(
            StatusCode::NOT_FOUND,
            INVALID_REQUEST,
            &format!("no session {id:?}: never opened, or ended"),
        );
    }
    let r = state.service.handle(req).await;
    if !r.status().is_success() {
        return r;
    }
    // The SDK answers 202; clients expect 200 or 204 for a session ended.
    let mut done = Response::new(Full::new(Bytes::new()).boxed());
    *done.status_mut() = StatusCode::NO_CONTENT;
    done
}

/// An HTML response with the inspector's security headers: no script,
/// no framing, no caching, no referrer.
fn html(status: StatusCode, body: String, head_only: bool) -> Response<Body> {
    use hyper::header::{self, HeaderValue};
    let body = if head_only { Bytes::new() } else { Bytes::from(body) };
    let mut r = Response::new(Full::new(body).boxed());
    *r.status_mut() = status;
    let h = r.headers_mut();
    h.insert(header::CONTENT_TYPE, HeaderValue::from_static("text/html; charset=utf-8"));
    h.insert(
        header::CONTENT_SECURITY_POLICY,
        HeaderValue::from_static(
            "default-src 'none'; style-src 'unsafe-inline'; img-src 'self' data:; form-action 'self'; frame-ancestors 'none'; base-uri 'none'",
        ),
    );
    h.insert(header::X_CONTENT_TYPE_OPTIONS, HeaderValue::from_static("nosniff"));
    h.insert(header::REFERRER_POLICY, HeaderValue::from_static("no-referrer"));
    h.insert(header::CACHE_CONTROL, HeaderValue::from_static("no-store"));
    r
}

/// A short HTML message page.
fn message(status: StatusCode, title: &str, text: &str, head_only: bool) -> Response<Body> {
    let esc = |s: &str| s.replace('&', "&amp;").replace('<', "&lt;").replace('>', "&gt;");
    html(
        status,
        format!(
            "<!doctype html><html lang=\"en\"><meta charset=\"utf-8\"><title>{}</title><h1>{}</h1><p>{}</p></html>",
            esc(title),
            esc(title),
            esc(text)
        ),
        head_only,
    )
}

/// A 401 page saying `why`.
fn unauthorized(why: &str, head_only: bool) -> Response<Body> {
    let mut r = message(StatusCode::UNAUTHORIZED, "Unauthorized", why, head_only);
    r.headers_mut()
        .insert(hyper::header::WWW_AUTHENTICATE, hyper::header::HeaderValue::from_static("Bearer realm=\"mnemon\""));
    r
}

/// True when the `Host` header names a loopback host (any port).
fn loopback_host(host: Option<&hyper::header::HeaderValue>) -> bool {
    let Some(host) = host.and_then(|h| h.to_str().ok()) else { return false };
    let name = match host.strip_prefix('[') {
        Some(v6) => v6.split(']').next().unwrap_or(""),
        None => host.rsplit_once(':').map_or(host, |(n, _)| n),
    };
    name.eq_ignore_ascii_case("localhost") || name.parse::<std::net::IpAddr>().is_ok_and(|ip| ip.is_loopback())
}

/// The value of cookie `name` in the request's `Cookie` headers.
fn cookie<'a>(req: &'a Request<Incoming>, name: &str) -> Option<&'a str> {
    req.headers()
        .get_all(hyper::header::COOKIE)
        .iter()
        .filter_map(|v| v.to_str().ok())
        .flat_map(|v| v.split(';'))
        .filter_map(|c| c.trim().split_once('='))
        .find(|(k, _)| *k == name)
        .map(|(_, v)| v)
}

/// Serves one inspector request: host and method checks, authentication
/// (header, cookie, or `?token=` once), then the page.
async fn inspect(req: Request<Incoming>, state: &Arc<HttpState>) -> Response<Body> {
    let head_only = req.method() == hyper::Method::HEAD;
    if state.loopback && !loopback_host(req.headers().get(hyper::header::HOST)) {
        return message(StatusCode::FORBIDDEN, "Forbidden", "this server answers loopback host names only", head_only);
    }
    if req.method() != hyper::Method::GET && !head_only {
        let mut r = message(
            StatusCode::METHOD_NOT_ALLOWED,
            "Method not allowed",
            "the inspector is read-only: GET and HEAD only",
            false,
        );
        r.headers_mut().insert(hyper::header::ALLOW, hyper::header::HeaderValue::from_static("GET, HEAD"));
        return r;
    }
    let path = req.uri().path().to_string();
    let query = req.uri().query().map(str::to_string);
    if let (Some(expected), Some(cookie_expected)) = (&state.token_digest, &state.cookie_value) {
        let pairs: Vec<(String, String)> = form_urlencoded::parse(query.as_deref().unwrap_or("").as_bytes())
            .map(|(k, v)| (k.into_owned(), v.into_owned()))
            .collect();
        if let Some((_, token)) = pairs.iter().find(|(k, _)| k == "token") {
            if digest(token.as_bytes()) != *expected {
                return unauthorized("wrong token", head_only);
            }
            // Into a cookie, out of the address bar.
            let mut rest = form_urlencoded::Serializer::new(String::new());
            for (k, v) in pairs.iter().filter(|(k, _)| k != "token") {
                rest.append_pair(k, v);
            }
            let rest = rest.finish();
            let location = if rest.is_empty() { path } else { format!("{path}?{rest}") };
            let mut r = message(StatusCode::SEE_OTHER, "Signed in", "continue to the page", head_only);
            let h = r.headers_mut();
            if let Ok(v) = hyper::header::HeaderValue::from_str(&location) {
                h.insert(hyper::header::LOCATION, v);
            }
            if let Ok(v) = hyper::header::HeaderValue::from_str(&format!(
                "{COOKIE}={cookie_expected}; HttpOnly; SameSite=Strict; Path=/"
            )) {
                h.insert(hyper::header::SET_COOKIE, v);
            }
            return r;
        }
        let by_header = bearer_matches(&req, expected);
        let by_cookie = cookie(&req, COOKIE).map(|c| digest(c.as_bytes())) == Some(digest(cookie_expected.as_bytes()));
        if !by_header && !by_cookie {
            return unauthorized(
                "this server needs its token: open this page once with ?token=TOKEN (a cookie keeps you signed in), or send Authorization: Bearer TOKEN",
                head_only,
            );
        }
    }
    let Some(pass) = state.server.shared.gate.enter() else {
        return message(StatusCode::SERVICE_UNAVAILABLE, "Shutting down", "the server is shutting down", head_only);
    };
    let inspector = state.inspector.clone();
    let page = tokio::task::spawn_blocking(move || inspector.page(&path, query.as_deref())).await;
    drop(pass);
    match page {
        Ok(p) => html(StatusCode::from_u16(p.status).unwrap_or(StatusCode::INTERNAL_SERVER_ERROR), p.html, head_only),
        Err(e) => message(StatusCode::INTERNAL_SERVER_ERROR, "Error", &format!("the page failed: {e}"), head_only),
    }
}

/// Serves `server` over HTTP until SIGINT/SIGTERM, then drains in-flight
/// calls and returns.
pub(crate) async fn run(server: MemoryServer, opts: HttpOptions) -> Result<(), ApiError> {
    let io = |e: std::io::Error| ApiError::new(ErrorCode::Io, format!("listen on {}: {e}", opts.listen));
    let listener = tokio::net::TcpListener::bind(opts.listen).await.map_err(io)?;
    let mut acceptor = Acceptor::new(listener, opts.max_connections);
    let ct = CancellationToken::new();
    let mut config = StreamableHttpServerConfig::default()
        .with_cancellation_token(ct.child_token())
        .with_max_request_body_bytes(opts.max_body_bytes);
    if !opts.listen.ip().is_loopback() {
        // Reached by other hosts under their own names; the bearer token
        // (required off loopback) is what keeps others out.
        config = config.disable_allowed_hosts();
    }
    let inspector = Arc::new(Inspector::new(server.shared.backend.clone(), server.shared.policy.clone())?);
    let factory = server.clone();
    let sessions = Arc::new(Sessions::new(opts.max_sessions, opts.session_idle));
    let service = StreamableHttpService::new(move || Ok(factory.clone()), sessions.clone(), config);
    let state = Arc::new(HttpState {
        service,
        sessions,
        server: server.clone(),
        inspector,
        token_digest: opts.token.as_deref().map(|t| digest(t.as_bytes())),
        cookie_value: opts.token.as_deref().map(cookie_value),
        loopback: opts.listen.ip().is_loopback(),
        max_body_bytes: opts.max_body_bytes,
        body_timeout: opts.body_timeout,
        allowed_origins: opts.allowed_origins.iter().filter_map(|o| Origin::parse(o)).collect(),
        rest: Arc::new(Rest::new(server.clone(), opts.max_body_bytes, opts.body_timeout, opts.max_in_flight)),
    });
    let mut builder = hyper::server::conn::http1::Builder::new();
    builder.timer(hyper_util::rt::TokioTimer::new()).header_read_timeout(opts.header_timeout);
    let graceful = hyper_util::server::graceful::GracefulShutdown::new();
    let mut stop = std::pin::pin!(shutdown_signal());
    let addr = acceptor.local_addr().unwrap_or(opts.listen);
    eprintln!("mnemon: serving MCP on http://{addr}{MCP_PATH}");
    eprintln!("mnemon: REST on http://{addr}{} (OpenAPI: http://{addr}{})", rest::REST_PREFIX, rest::OPENAPI_PATH);
    eprintln!("mnemon: inspector on http://{addr}/");
    loop {
        tokio::select! {
            admitted = acceptor.next() => {
                let state = state.clone();
                let svc = hyper::service::service_fn(move |req| {
                    let state = state.clone();
                    async move { Ok::<_, Infallible>(handle(req, state).await) }
                });
                let conn = builder.serve_connection(TokioIo::new(admitted.stream), svc);
                let conn = graceful.watch(conn);
                let slot = admitted.slot;
                tokio::spawn(async move {
                    let _ = conn.await;
                    // The slot under the cap is free once the socket is closed.
                    drop(slot);
                });
            }
            () = &mut stop => break,
        }
    }
    drop(acceptor);
    // Answer what was accepted, refuse the rest, then close the streams.
    server.shared.gate.close(DRAIN_TIMEOUT).await;
    ct.cancel();
    let _ = tokio::time::timeout(DRAIN_TIMEOUT, graceful.shutdown()).await;
    Ok(())
}

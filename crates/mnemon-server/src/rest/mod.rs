//! REST over the command surface, under [`REST_PREFIX`] on `mnemon
//! serve`, beside `/mcp` and the inspector, with its OpenAPI 3.1 document
//! at [`OPENAPI_PATH`] ([`openapi`]).
//!
//! Each route ([`routes::ROUTES`]) runs one surface operation. Its request
//! is assembled from the path's parameters, then the JSON body (`POST`) or
//! the query string (`GET`, `DELETE`; each value typed by the request's
//! JSON Schema: `?limit=20&include_superseded=true&kinds=fact&kinds=event`),
//! and checked by the surface exactly as every other door's requests are.
//! The answer is the operation's response as JSON (200, or 201 for a new
//! memory, observation or version); an error is the surface's
//! `{"error": {"code", "message", "field"}}` with an HTTP status that fits
//! its code ([`status_of`]). A field the path gives may not appear in the
//! body or query too.
//!
//! Writes (`POST` other than recall, context, verify-erasure and
//! verify-shred, and every `DELETE`) honour an `Idempotency-Key` header ([`idempotency`]): a retry
//! with the same key and the same request gets the first answer again,
//! marked `Idempotent-Replayed: true`, without running twice.
//!
//! A call runs on a blocking thread; when the client goes away before its
//! write is planned, the write is withdrawn (as with MCP's cancellation);
//! once planned it commits, and under an `Idempotency-Key` its answer is
//! kept for the retry.

pub(crate) mod idempotency;
pub(crate) mod openapi;
pub(crate) mod routes;

pub use openapi::openapi;
pub use routes::REST_PREFIX;

use std::collections::HashMap;
use std::convert::Infallible;
use std::sync::{Arc, LazyLock};

use bytes::Bytes;
use http_body_util::{BodyExt, Full};
use hyper::body::Incoming;
use hyper::header::{HeaderValue, CONTENT_TYPE, RETRY_AFTER};
use hyper::{Method, Request, Response, StatusCode};
use serde_json::{Map, Value};

use super::server::MemoryServer;
use idempotency::{Begin, Idempotency, Stored};
use mnemon_api::{ApiError, ErrorCode};
use routes::{Input, Route, ROUTES};

pub(crate) type Body = http_body_util::combinators::BoxBody<Bytes, Infallible>;

/// Where the OpenAPI document is served.
pub const OPENAPI_PATH: &str = "/openapi.json";

/// Name of the header that makes a write idempotent.
pub const IDEMPOTENCY_KEY: &str = "idempotency-key";

/// What the REST door of one server holds.
pub(crate) struct Rest {
    pub(crate) server: MemoryServer,
    pub(crate) idempotency: Idempotency,
    pub(crate) max_body_bytes: usize,
    pub(crate) body_timeout: std::time::Duration,
    /// One permit per call that may run at once.
    in_flight: Arc<tokio::sync::Semaphore>,
    max_in_flight: usize,
    document: Bytes,
}

impl Rest {
    pub(crate) fn new(
        server: MemoryServer,
        max_body_bytes: usize,
        body_timeout: std::time::Duration,
        max_in_flight: usize,
    ) -> Rest {
        Rest {
            server,
            idempotency: Idempotency::new(idempotency::DEFAULT_CAPACITY, idempotency::DEFAULT_TTL),
            max_body_bytes,
            body_timeout,
            in_flight: Arc::new(tokio::sync::Semaphore::new(max_in_flight.max(1))),
            max_in_flight: max_in_flight.max(1),
            document: Bytes::from(openapi().to_string()),
        }
    }
}

/// True when `path` is the REST door's: under [`REST_PREFIX`] or the
/// OpenAPI document.
pub(crate) fn owns(path: &str) -> bool {
    path == OPENAPI_PATH || path == REST_PREFIX || path.starts_with("/v1/")
}

/// The HTTP status of an error `code`: 400 for bad input, 403 for a
/// namespace the server does not serve, 401 for a missing token, 423 for
/// an encrypted store the server holds no key (`key_required`) or the wrong
/// key (`wrong_key`) for, 404, 409, 422 for requests
/// refused as they stand (safety policy, an item above the response
/// budget), 503 with `Retry-After` for conditions that pass (the store
/// busy or handed over, a provider down, shutting down), 500 otherwise.
pub fn status_of(code: ErrorCode) -> StatusCode {
    use ErrorCode as C;
    match code {
        C::InvalidInput => StatusCode::BAD_REQUEST,
        C::NotFound => StatusCode::NOT_FOUND,
        C::Conflict => StatusCode::CONFLICT,
        C::Rejected | C::ResponseTooLarge => StatusCode::UNPROCESSABLE_ENTITY,
        C::NamespaceNotAllowed => StatusCode::FORBIDDEN,
        C::Unauthorized => StatusCode::UNAUTHORIZED,
        C::KeyRequired | C::WrongKey => StatusCode::LOCKED,
        C::Locked | C::Unavailable | C::Closed | C::Cancelled | C::Poisoned | C::Embedder | C::Fenced => {
            StatusCode::SERVICE_UNAVAILABLE
        }
        C::Corrupted | C::IncompatibleFormat | C::Io | C::Storage | C::Internal => StatusCode::INTERNAL_SERVER_ERROR,
        _ => StatusCode::INTERNAL_SERVER_ERROR,
    }
}

/// A JSON response.
fn json(status: StatusCode, body: Bytes) -> Response<Body> {
    let mut r = Response::new(Full::new(body).boxed());
    *r.status_mut() = status;
    r.headers_mut().insert(CONTENT_TYPE, HeaderValue::from_static("application/json"));
    r.headers_mut().insert(hyper::header::CACHE_CONTROL, HeaderValue::from_static("no-store"));
    r
}

/// The surface's error object `e` as a response with `status`.
pub(crate) fn error_with(status: StatusCode, e: &ApiError) -> Response<Body> {
    let body = serde_json::json!({ "error": e }).to_string();
    let mut r = json(status, Bytes::from(body));
    if status == StatusCode::SERVICE_UNAVAILABLE {
        r.headers_mut().insert(RETRY_AFTER, HeaderValue::from_static("1"));
    }
    if status == StatusCode::UNAUTHORIZED {
        r.headers_mut().insert(hyper::header::WWW_AUTHENTICATE, HeaderValue::from_static("Bearer realm=\"mnemon\""));
    }
    r
}

/// The surface's error object `e` with the status of its code.
pub(crate) fn error(e: &ApiError) -> Response<Body> {
    error_with(status_of(e.code), e)
}

/// Serves one REST request (authentication is done by the caller).
pub(crate) async fn handle(req: Request<Incoming>, rest: &Arc<Rest>) -> Response<Body> {
    let has_body = sends_body(&req);
    let mut read = false;
    let r = answer(req, rest, &mut read).await;
    if has_body && !read {
        closing(r)
    } else {
        r
    }
}

/// True when the request carries a body (a length above zero, or chunks).
pub(crate) fn sends_body(req: &Request<Incoming>) -> bool {
    let h = req.headers();
    h.contains_key(hyper::header::TRANSFER_ENCODING)
        || h.get(hyper::header::CONTENT_LENGTH).and_then(|v| v.to_str().ok()).is_some_and(|v| v.trim() != "0")
}

/// `r` with `Connection: close`: answered before its request's body was
/// read, the connection cannot serve another request, and the client must
/// not send one on it.
pub(crate) fn closing(mut r: Response<Body>) -> Response<Body> {
    r.headers_mut().insert(hyper::header::CONNECTION, HeaderValue::from_static("close"));
    r
}

/// The answer to one request; `read` is set once its body was read whole.
async fn answer(req: Request<Incoming>, rest: &Arc<Rest>, read: &mut bool) -> Response<Body> {
    let path = req.uri().path().to_string();
    if path == OPENAPI_PATH {
        if req.method() != Method::GET && req.method() != Method::HEAD {
            return not_allowed("GET, HEAD");
        }
        let body = if req.method() == Method::HEAD { Bytes::new() } else { rest.document.clone() };
        return json(StatusCode::OK, body);
    }
    let candidates: Vec<(&'static Route, Vec<(&'static str, &str)>)> =
        ROUTES.iter().filter_map(|r| r.matches(&path).map(|p| (r, p))).collect();
    if candidates.is_empty() {
        return error(&ApiError::new(
            ErrorCode::NotFound,
            format!("no route {path}; the routes are listed in {OPENAPI_PATH}"),
        ));
    }
    let Some((route, params)) = candidates.iter().find(|(r, _)| r.method == req.method()) else {
        let mut allow: Vec<&str> = candidates.iter().map(|(r, _)| r.method.as_str()).collect();
        allow.dedup();
        return not_allowed(&allow.join(", "));
    };
    let params: Vec<(&'static str, String)> = params.iter().map(|(k, v)| (*k, (*v).to_string())).collect();
    let route: &'static Route = route;
    let query = req.uri().query().unwrap_or("").to_string();
    let key = match idempotency_key(&req, route) {
        Ok(k) => k,
        Err(e) => return error(&e),
    };
    // Held until the answer is ready (a call whose client left keeps it
    // until the call ends: it still runs).
    let Ok(permit) = rest.in_flight.clone().try_acquire_owned() else {
        return too_many(rest.max_in_flight);
    };
    let (parts, body) = req.into_parts();
    let body = match route.input {
        Input::Body => match read_body(&parts, body, rest).await {
            Ok(b) => {
                *read = true;
                b
            }
            Err(r) => return r,
        },
        // Reads and deletes take no body; one sent is not read.
        Input::Query => Bytes::new(),
    };
    let args = match arguments(route, &params, &query, &body) {
        Ok(a) => a,
        Err(e) => return error(&e),
    };
    let Some(key) = key else {
        let out = run(rest, route, args).await;
        drop(permit);
        return out.into_response(false);
    };
    // Over the assembled arguments, so that spacing, key order and the
    // order of query parameters do not make a retry a different request.
    let fingerprint = idempotency::fingerprint(route.operation_id, &args);
    match rest.idempotency.begin(&key, fingerprint) {
        Begin::Replay(stored) => stored.into_response(true),
        Begin::Refused(e) => error_with(
            if e.code == ErrorCode::Conflict { StatusCode::CONFLICT } else { StatusCode::UNPROCESSABLE_ENTITY },
            &e,
        ),
        Begin::Run(slot) => {
            // The call and the keeping of its answer run on their own
            // task, so that a client gone mid-call still finds the answer
            // of a write that committed when it retries.
            let rest2 = rest.clone();
            let task = tokio::spawn(async move {
                let out = run(&rest2, route, args).await;
                slot.finish(&out);
                drop(permit);
                out
            });
            match task.await {
                Ok(out) => out.into_response(false),
                Err(e) => error(&ApiError::new(ErrorCode::Internal, format!("call failed: {e}"))),
            }
        }
    }
}

/// 429 with `Retry-After`: `max` calls are running.
fn too_many(max: usize) -> Response<Body> {
    let mut r = error_with(
        StatusCode::TOO_MANY_REQUESTS,
        &ApiError::new(
            ErrorCode::Unavailable,
            format!("{max} calls are running (--max-in-flight); nothing was run, retry after 1 s"),
        ),
    );
    r.headers_mut().insert(RETRY_AFTER, HeaderValue::from_static("1"));
    r
}

/// 405 with `Allow`.
fn not_allowed(allow: &str) -> Response<Body> {
    let mut r = error_with(
        StatusCode::METHOD_NOT_ALLOWED,
        &ApiError::new(ErrorCode::InvalidInput, format!("method not allowed here; allowed: {allow}")),
    );
    if let Ok(v) = HeaderValue::from_str(allow) {
        r.headers_mut().insert(hyper::header::ALLOW, v);
    }
    r
}

/// The request's `Idempotency-Key`, for a route that writes: a string of
/// 1 to [`idempotency::MAX_KEY_LEN`] visible ASCII characters, optionally
/// in double quotes (a structured-field string). Ignored on reads.
fn idempotency_key(req: &Request<Incoming>, route: &Route) -> Result<Option<String>, ApiError> {
    let mut values = req.headers().get_all(IDEMPOTENCY_KEY).iter();
    let Some(v) = values.next() else { return Ok(None) };
    if !route.writes() {
        return Ok(None);
    }
    let bad = |why: &str| ApiError::invalid("Idempotency-Key", why);
    if values.next().is_some() {
        return Err(bad("is given more than once"));
    }
    let s = v.to_str().map_err(|_| bad("must be visible ASCII characters"))?.trim();
    let s = s.strip_prefix('"').and_then(|s| s.strip_suffix('"')).unwrap_or(s);
    if s.is_empty() || s.len() > idempotency::MAX_KEY_LEN || !s.bytes().all(|b| b.is_ascii_graphic()) {
        return Err(bad(&format!(
            "must be 1 to {} visible ASCII characters, without spaces",
            idempotency::MAX_KEY_LEN
        )));
    }
    Ok(Some(s.to_string()))
}

/// Reads a JSON body within the size and time limits.
async fn read_body(parts: &hyper::http::request::Parts, body: Incoming, rest: &Rest) -> Result<Bytes, Response<Body>> {
    if let Some(ct) = parts.headers.get(CONTENT_TYPE) {
        let media = ct.to_str().unwrap_or("").split(';').next().unwrap_or("").trim().to_ascii_lowercase();
        if media != "application/json" && !media.ends_with("+json") {
            return Err(error_with(
                StatusCode::UNSUPPORTED_MEDIA_TYPE,
                &ApiError::invalid("Content-Type", format!("must be application/json, got {media:?}")),
            ));
        }
    }
    let collected =
        tokio::time::timeout(rest.body_timeout, http_body_util::Limited::new(body, rest.max_body_bytes).collect())
            .await;
    let Ok(collected) = collected else {
        return Err(error_with(
            StatusCode::REQUEST_TIMEOUT,
            &ApiError::invalid("body", format!("did not arrive within {} s", rest.body_timeout.as_secs_f64())),
        ));
    };
    match collected {
        Ok(c) => Ok(c.to_bytes()),
        Err(e) if e.is::<http_body_util::LengthLimitError>() => Err(error_with(
            StatusCode::PAYLOAD_TOO_LARGE,
            &ApiError::invalid("body", format!("is above {} bytes", rest.max_body_bytes)),
        )),
        Err(e) => Err(error(&ApiError::invalid("body", format!("cannot be read: {e}")))),
    }
}

/// The request's arguments: the JSON body or typed query parameters, then
/// the route's fixed fields and the path's parameters (a field given by
/// the path may not be given again).
pub(crate) fn arguments(
    route: &Route,
    params: &[(&'static str, String)],
    query: &str,
    body: &[u8],
) -> Result<Value, ApiError> {
    let mut args = match route.input {
        Input::Body if body.is_empty() => Map::new(),
        Input::Body => match serde_json::from_slice::<Value>(body) {
            Ok(Value::Object(m)) => m,
            Ok(_) => return Err(ApiError::invalid("body", "must be a JSON object")),
            Err(e) => return Err(ApiError::invalid("body", format!("is not JSON: {e}"))),
        },
        Input::Query => query_arguments(route.op, query)?,
    };
    if let Some(field) = args.keys().find(|f| {
        !route.takes(f) && !route.fixed.iter().any(|(x, _)| x == f) && !route.params().any(|p| p == f.as_str())
    }) {
        let why = if route.excluded.contains(&field.as_str()) {
            format!("is not taken over HTTP: {} {} names no file on the server", route.method, route.path)
        } else {
            format!("is not taken by {} {}; it takes {}", route.method, route.path, route.only.join(", "))
        };
        return Err(ApiError::invalid(field.clone(), why));
    }
    for (field, text) in route.fixed {
        if args.contains_key(*field) {
            return Err(ApiError::invalid(
                *field,
                format!("is set by the route {} {}; leave it out", route.method, route.path),
            ));
        }
        let value = serde_json::from_str(text)
            .map_err(|e| ApiError::new(ErrorCode::Internal, format!("route value of {field}: {e}")))?;
        args.insert((*field).to_string(), value);
    }
    for (field, raw) in params {
        if args.contains_key(*field) {
            return Err(ApiError::invalid(
                *field,
                format!("is given by the path {}; leave it out of the {}", route.path, input_name(route.input)),
            ));
        }
        let decoded = percent_encoding::percent_decode_str(raw)
            .decode_utf8()
            .map_err(|_| ApiError::invalid(*field, "is not UTF-8 once percent-decoded"))?;
        args.insert((*field).to_string(), typed(route.op, field, &decoded)?);
    }
    if matches!(route.op, "recall" | "context") {
        args.entry("requester").or_insert_with(|| Value::String("rest".into()));
    }
    Ok(Value::Object(args))
}

fn input_name(input: Input) -> &'static str {
    match input {
        Input::Body => "body",
        Input::Query => "query string",
    }
}

/// The JSON type a request field takes, from the operation's schema.
#[derive(Clone, Debug, PartialEq)]
enum Kind {
    Integer,
    Number,
    Boolean,
    String,
    Array(Box<Kind>),
    /// An object or a union: the value is read as JSON.
    Json,
}

/// Each operation's fields and their kinds.
static FIELD_KINDS: LazyLock<HashMap<&'static str, HashMap<String, Kind>>> = LazyLock::new(|| {
    mnemon_api::schemas()
        .into_iter()
        .map(|s| {
            let defs = s.request.get("$defs").cloned().unwrap_or(Value::Null);
            let kinds = s
                .request
                .get("properties")
                .and_then(Value::as_object)
                .map(|props| props.iter().map(|(k, v)| (k.clone(), kind_of(v, &defs, 0))).collect())
                .unwrap_or_default();
            (s.op, kinds)
        })
        .collect()
});

/// The kind of a property schema: references resolved, a union with null
/// taken as its other member.
fn kind_of(schema: &Value, defs: &Value, depth: usize) -> Kind {
    if depth > 8 {
        return Kind::Json;
    }
    if let Some(r) = schema.get("$ref").and_then(Value::as_str) {
        let name = r.rsplit('/').next().unwrap_or("");
        return defs.get(name).map_or(Kind::Json, |d| kind_of(d, defs, depth + 1));
    }
    for union in ["anyOf", "oneOf"] {
        if let Some(members) = schema.get(union).and_then(Value::as_array) {
            let kinds: Vec<Kind> = members
                .iter()
                .filter(|m| m.get("type").and_then(Value::as_str) != Some("null"))
                .map(|m| kind_of(m, defs, depth + 1))
                .collect();
            return match kinds.as_slice() {
                [one] => one.clone(),
                many if !many.is_empty() && many.iter().all(|k| *k == Kind::String) => Kind::String,
                _ => Kind::Json,
            };
        }
    }
    if schema.get("enum").is_some() || schema.get("const").is_some_and(Value::is_string) {
        return Kind::String;
    }
    let ty = match schema.get("type") {
        Some(Value::String(t)) => Some(t.as_str()),
        Some(Value::Array(ts)) => ts.iter().filter_map(Value::as_str).find(|t| *t != "null"),
        _ => None,
    };
    match ty {
        Some("integer") => Kind::Integer,
        Some("number") => Kind::Number,
        Some("boolean") => Kind::Boolean,
        Some("string") => Kind::String,
        Some("array") => Kind::Array(Box::new(schema.get("items").map_or(Kind::Json, |i| kind_of(i, defs, depth + 1)))),
        _ => Kind::Json,
    }
}

/// The query string as arguments of `op`: each value typed by the field's
/// schema; an array field takes the parameter repeated.
fn query_arguments(op: &str, query: &str) -> Result<Map<String, Value>, ApiError> {
    let mut out = Map::new();
    for (k, v) in form_urlencoded::parse(query.as_bytes()) {
        let k = k.into_owned();
        let kind = FIELD_KINDS.get(op).and_then(|f| f.get(&k)).cloned();
        match kind {
            Some(Kind::Array(item)) => {
                let value = typed_as(&item, &k, &v)?;
                match out.entry(k).or_insert_with(|| Value::Array(Vec::new())) {
                    Value::Array(a) => a.push(value),
                    _ => unreachable!("array fields hold arrays"),
                }
            }
            // Unknown fields go on as strings; the surface names them.
            kind => {
                if out.contains_key(&k) {
                    return Err(ApiError::invalid(k, "is given more than once"));
                }
                let value = typed_as(&kind.unwrap_or(Kind::String), &k, &v)?;
                out.insert(k, value);
            }
        }
    }
    Ok(out)
}

/// `raw` as the JSON value field `field` of `op` takes.
fn typed(op: &str, field: &str, raw: &str) -> Result<Value, ApiError> {
    let kind = FIELD_KINDS.get(op).and_then(|f| f.get(field)).cloned().unwrap_or(Kind::String);
    typed_as(&kind, field, raw)
}

fn typed_as(kind: &Kind, field: &str, raw: &str) -> Result<Value, ApiError> {
    let bad = |what: &str| ApiError::invalid(field, format!("must be {what}, got {raw:?}"));
    Ok(match kind {
        Kind::Integer => {
            if let Ok(u) = raw.parse::<u64>() {
                Value::from(u)
            } else {
                Value::from(raw.parse::<i64>().map_err(|_| bad("a whole number"))?)
            }
        }
        Kind::Number => {
            let x = raw.parse::<f64>().ok().filter(|x| x.is_finite()).ok_or_else(|| bad("a number"))?;
            serde_json::Number::from_f64(x).map(Value::Number).ok_or_else(|| bad("a number"))?
        }
        Kind::Boolean => match raw {
            "true" => Value::Bool(true),
            "false" => Value::Bool(false),
            _ => return Err(bad("true or false")),
        },
        Kind::String => Value::String(raw.to_string()),
        Kind::Array(item) => Value::Array(vec![typed_as(item, field, raw)?]),
        Kind::Json => serde_json::from_str(raw).unwrap_or_else(|_| Value::String(raw.to_string())),
    })
}

/// The outcome of one call: status and JSON body.
pub(crate) struct Outcome {
    pub(crate) status: StatusCode,
    pub(crate) body: Bytes,
    pub(crate) code: Option<ErrorCode>,
}

impl Outcome {
    fn into_response(self, replayed: bool) -> Response<Body> {
        let stored = Stored { status: self.status, body: self.body };
        stored.into_response(replayed)
    }
}

impl Stored {
    pub(crate) fn into_response(self, replayed: bool) -> Response<Body> {
        let mut r = json(self.status, self.body);
        if self.status == StatusCode::SERVICE_UNAVAILABLE {
            r.headers_mut().insert(RETRY_AFTER, HeaderValue::from_static("1"));
        }
        if replayed {
            r.headers_mut().insert("idempotent-replayed", HeaderValue::from_static("true"));
        }
        r
    }
}

/// Drops cancel the call unless it finished.
struct CancelOnDrop(Option<mnemon::CancelToken>);

impl Drop for CancelOnDrop {
    fn drop(&mut self) {
        if let Some(c) = self.0.take() {
            c.cancel();
        }
    }
}

/// Decodes and runs the request; the outcome as status and body.
async fn run(rest: &Rest, route: &'static Route, args: Value) -> Outcome {
    let fail = |e: ApiError| Outcome {
        status: status_of(e.code),
        body: Bytes::from(serde_json::json!({ "error": e }).to_string()),
        code: Some(e.code),
    };
    let shared = &rest.server.shared;
    let req = match mnemon_api::Request::from_op_with(route.op, args, &shared.policy) {
        Ok(r) => r,
        Err(e) => return fail(e),
    };
    let Some(pass) = shared.gate.enter() else {
        return fail(ApiError::new(ErrorCode::Closed, "the server is shutting down; call refused"));
    };
    let backend = shared.backend.clone();
    let cancel = mnemon::CancelToken::new();
    let mut guard = CancelOnDrop(Some(cancel.clone()));
    let out = tokio::task::spawn_blocking(move || backend.call_with(req, Some(cancel))).await;
    guard.0 = None;
    drop(pass);
    match out {
        Ok(Ok(v)) => Outcome {
            status: if route.creates { StatusCode::CREATED } else { StatusCode::OK },
            body: Bytes::from(v.to_string()),
            code: None,
        },
        Ok(Err(e)) => fail(e),
        Err(join) => fail(ApiError::new(ErrorCode::Internal, format!("call failed: {join}"))),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn route(id: &str) -> &'static Route {
        ROUTES.iter().find(|r| r.operation_id == id).unwrap()
    }

    #[test]
    fn query_values_are_typed_by_the_schema() {
        let a =
            arguments(route("list"), &[("namespace", "u1".into())], "limit=5&include_superseded=true&kind=fact", b"")
                .unwrap();
        assert_eq!(a["limit"], 5);
        assert_eq!(a["include_superseded"], true);
        assert_eq!(a["kind"], "fact");
        assert_eq!(a["namespace"], "u1");
        let e = arguments(route("list"), &[("namespace", "u1".into())], "limit=five", b"").unwrap_err();
        assert_eq!(e.field.as_deref(), Some("limit"));
        let a = arguments(route("log"), &[("namespace", "u1".into())], "kinds=observed&kinds=forgotten", b"").unwrap();
        assert_eq!(a["kinds"], serde_json::json!(["observed", "forgotten"]));
    }

    #[test]
    fn path_fields_are_typed_and_not_repeated() {
        let a = arguments(route("get"), &[("namespace", "u1".into()), ("id", "7".into())], "", b"").unwrap();
        assert_eq!(a["id"], 7);
        let e = arguments(route("get"), &[("namespace", "u1".into()), ("id", "x".into())], "", b"").unwrap_err();
        assert_eq!(e.field.as_deref(), Some("id"));
        let e = arguments(route("remember"), &[("namespace", "u1".into())], "", br#"{"namespace":"u2","content":"x"}"#)
            .unwrap_err();
        assert_eq!(e.field.as_deref(), Some("namespace"));
        let a = arguments(route("forget_session"), &[("namespace", "u1".into()), ("session", "a%20b".into())], "", b"")
            .unwrap();
        assert_eq!(a["session"], "a b");
        let a = arguments(route("forget_namespace"), &[("namespace", "u1".into())], "dry_run=true", b"").unwrap();
        assert_eq!(a["all"], true);
        let e = arguments(route("forget_namespace"), &[("namespace", "u1".into())], "all=false", b"").unwrap_err();
        assert_eq!(e.field.as_deref(), Some("all"));
    }

    #[test]
    fn bodies_must_be_objects_and_file_fields_are_refused() {
        let e = arguments(route("remember"), &[("namespace", "u1".into())], "", b"[1]").unwrap_err();
        assert_eq!(e.field.as_deref(), Some("body"));
        let e =
            arguments(route("import"), &[("namespace", "u1".into())], "", br#"{"path":"/etc/passwd"}"#).unwrap_err();
        assert_eq!(e.field.as_deref(), Some("path"));
        let a = arguments(route("recall"), &[("namespace", "u1".into())], "", br#"{"query":"q"}"#).unwrap();
        assert_eq!(a["requester"], "rest");
    }

    #[test]
    fn statuses_fit_codes() {
        assert_eq!(status_of(ErrorCode::InvalidInput), StatusCode::BAD_REQUEST);
        assert_eq!(status_of(ErrorCode::NotFound), StatusCode::NOT_FOUND);
        assert_eq!(status_of(ErrorCode::Conflict), StatusCode::CONFLICT);
        assert_eq!(status_of(ErrorCode::Unavailable), StatusCode::SERVICE_UNAVAILABLE);
        assert_eq!(status_of(ErrorCode::NamespaceNotAllowed), StatusCode::FORBIDDEN);
        // An encrypted store without its key, or with another: neither the
        // caller's token (401) nor its namespace (403) is at fault.
        assert_eq!(status_of(ErrorCode::KeyRequired), StatusCode::LOCKED);
        assert_eq!(status_of(ErrorCode::WrongKey), StatusCode::LOCKED);
    }
}

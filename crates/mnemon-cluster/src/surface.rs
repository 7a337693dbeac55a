//! The command surface ([`mnemon_api`]) on a cluster: the [`Handler`] that
//! `mnemon serve --cluster` installs. A call's body is one surface request
//! (`{"op": …, …}`, JSON) and runs on the namespace's engine at its owner;
//! `compact` there is the cluster compaction ([`ClusterNode::compact`]),
//! whose receipt covers the stream and every daemon, and `verify_shred`
//! checks the namespace's stream as well ([`ClusterNode::verify_shred`];
//! the backups and exports it names are files on the owner's machine), and
//! `stats` adds the owner's view ([`ClusterNode::status`]: the namespaces
//! it owns, their leases and stream positions).
//! The reply is JSON:
//! `{"ok": RESPONSE}` or `{"error": ApiError}`.
//!
//! [`ClusterNode::compact`]: crate::ClusterNode::compact
//! [`ClusterNode::verify_shred`]: crate::ClusterNode::verify_shred
//! [`ClusterNode::status`]: crate::ClusterNode::status

use std::sync::Arc;

use serde_json::{json, Value};

use crate::node::{Handler, Retry, Served};
use mnemon_api::{self as api, ApiError, ErrorCode, Limits, Request};

/// The handler running surface requests within `limits` (response size).
pub fn surface_handler(limits: Limits) -> Handler {
    Arc::new(move |s: &Served<'_>, body: &[u8]| {
        let out = match run(s, body, &limits) {
            Ok(v) => json!({ "ok": v }),
            Err(e) => json!({ "error": e }),
        };
        serde_json::to_vec(&out).unwrap_or_default()
    })
}

fn run(s: &Served<'_>, body: &[u8], limits: &Limits) -> Result<Value, ApiError> {
    let v: Value = serde_json::from_slice(body).map_err(|e| ApiError::invalid("request", format!("not JSON: {e}")))?;
    let req = Request::from_value(v)?;
    if let Some(ns) = req.namespace() {
        if ns != s.namespace() {
            return Err(ApiError::invalid(
                "namespace",
                format!("the call is routed to namespace {} but names {ns}", s.namespace()),
            ));
        }
    }
    match req {
        Request::Compact(_) => serde_json::to_value(s.compact()?)
            .map_err(|e| ApiError::new(ErrorCode::Internal, format!("encoding a receipt: {e}"))),
        Request::Stats(_) => {
            let mut stats = s.engine().stats();
            stats.cluster = Some(s.node.status());
            serde_json::to_value(stats).map_err(|e| ApiError::new(ErrorCode::Internal, format!("encoding stats: {e}")))
        }
        Request::VerifyShred(r) => serde_json::to_value(s.verify_shred(&r.backups, &r.exports)?)
            .map_err(|e| ApiError::new(ErrorCode::Internal, format!("encoding a report: {e}"))),
        req => api::execute_with(s.engine(), req, limits).map(|r| r.to_value()),
    }
}

/// Which [`surface_handler`] calls may run again ([`Retry`]): a request
/// that parses and is read-only ([`Request::read_only`]; a body that does
/// not parse counts as a write), and a reply whose error is `fenced` or
/// `locked` (nothing ran: the daemon's hold on the namespace ended).
#[derive(Clone, Copy, Debug, Default)]
pub struct SurfaceRetry;

impl Retry for SurfaceRetry {
    fn read_only(&self, body: &[u8]) -> bool {
        serde_json::from_slice::<Value>(body)
            .ok()
            .and_then(|v| Request::from_value(v).ok())
            .is_some_and(|r| r.read_only())
    }

    fn refused(&self, reply: &[u8]) -> bool {
        // Every reply is read here, and most are `{"ok": …}`: only an
        // error is parsed ([`surface_handler`] writes the one key first).
        if !reply.starts_with(br#"{"error""#) {
            return false;
        }
        let Ok(v) = serde_json::from_slice::<Value>(reply) else { return false };
        matches!(v["error"]["code"].as_str(), Some("fenced" | "locked"))
    }
}

/// The body of a call running `req` through [`surface_handler`].
pub fn surface_body(req: &Request) -> Vec<u8> {
    serde_json::to_vec(&req.to_value()).unwrap_or_default()
}

/// Decodes a reply of [`surface_handler`]: the response JSON or the error.
///
/// # Errors
/// The surface's error; [`ErrorCode::Internal`] for bytes that are not a
/// reply.
pub fn surface_reply(bytes: &[u8]) -> Result<Value, ApiError> {
    let bad = |why: String| ApiError::new(ErrorCode::Internal, format!("unreadable reply from the owner: {why}"));
    let mut v: Value = serde_json::from_slice(bytes).map_err(|e| bad(e.to_string()))?;
    if let Some(ok) = v.get_mut("ok") {
        return Ok(ok.take());
    }
    match v.get_mut("error") {
        Some(e) => Err(serde_json::from_value(e.take()).map_err(|e| bad(e.to_string()))?),
        None => Err(bad("neither ok nor error".into())),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn surface_retry_reads_requests_and_replies() {
        let r = SurfaceRetry;
        assert!(r.read_only(br#"{"op":"recall","namespace":"u","query":"tea"}"#));
        assert!(!r.read_only(br#"{"op":"remember","namespace":"u","content":"tea"}"#));
        assert!(!r.read_only(b"not json"), "a body that does not parse counts as a write");
        let fenced = ApiError::new(ErrorCode::Fenced, "not the owner");
        let reply = serde_json::to_vec(&json!({ "error": fenced })).unwrap();
        assert!(r.refused(&reply));
        let bad = serde_json::to_vec(&json!({ "error": ApiError::invalid("content", "empty") })).unwrap();
        assert!(!r.refused(&bad), "an error the caller made is its answer");
        assert!(!r.refused(br#"{"ok":{"id":3}}"#));
    }
}

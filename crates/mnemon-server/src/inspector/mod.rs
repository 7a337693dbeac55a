//! The inspector: a read-only HTML view of the store that `mnemon serve`
//! shows at `/`, next to the MCP endpoint.
//!
//! Pages (GET or HEAD only; every other method is refused with 405):
//!
//! * `/` — the namespaces with their figures, and store-wide figures;
//! * `/ns/{ns}` — a namespace's memories, filtered (kind, tier, status,
//!   session, text), paged, optionally as of a past point (`as_of` =
//!   `seq`, `time` or `valid_time`, `at` = its value);
//! * `/ns/{ns}/memory/{id}` — a version chain: a table of the fields each
//!   version changed and the versions side by side (what changed, when,
//!   why — the supersede reason — and the source observations), paged;
//! * `/ns/{ns}/turns` — observations in log order with the memories
//!   derived from each (or "no memory derived"), by session and text;
//! * `/ns/{ns}/timeline` — events over time by kind, by commit time or by
//!   valid time (`by=valid`), plotted as SVG, with an as-of picker;
//! * `/ns/{ns}/recall?q=…` — the `context` block an agent would get, part
//!   by part with each candidate entry's fate, the abstention decision and
//!   floors, and each hit's score parts; run with `record_access` off so
//!   that looking writes nothing;
//! * `/ns/{ns}/reads` — a memory's or a session's `accessed` events (when,
//!   requester, the session the query came from) and the namespace's
//!   most-read memories;
//! * `/ns/{ns}/erasure` — forgotten counts and erasure requests (ids,
//!   reasons, counts; never content), pending erasure, the generation and
//!   the store's compaction receipts (counts and digests, newest first).
//!
//! Times show in the zone `tz` names: an IANA zone (`Europe/Lisbon`, its
//! offset looked up for each time) or a UTC offset (`+08:00`); default UTC.
//!
//! Every read is a request of the command surface ([`mnemon_api`]) run on
//! the server's [`Backend`], so the pages show exactly what the CLI and the
//! MCP tools show. The server's namespace policy applies: a namespace
//! outside it is refused (403), store-wide figures are shown only to an
//! unrestricted server.
//!
//! HTML comes from `minijinja` templates with auto-escaping on (every
//! stored string is escaped), plots from `plotters`' SVG backend, inline;
//! no script runs, and the Content-Security-Policy forbids any.

mod block;
mod pages;
mod plot;
mod reads;
#[cfg(test)]
mod tests;
mod turns;
mod valid;
mod when;

use std::sync::Arc;

use minijinja::Environment;
use serde_json::Value;

use super::backend::Backend;
use mnemon_api::{ApiError, ErrorCode, NamespacePolicy, Request, Response};

/// The inspector's state: the backend its reads go to, the policy, and
/// the compiled templates.
pub(crate) struct Inspector {
    backend: Arc<Backend>,
    policy: NamespacePolicy,
    env: Environment<'static>,
}

/// A rendered page: HTTP status and HTML.
pub(crate) struct Page {
    pub(crate) status: u16,
    pub(crate) html: String,
}

const TEMPLATES: &[(&str, &str)] = &[
    ("base.html", include_str!("templates/base.html")),
    ("index.html", include_str!("templates/index.html")),
    ("namespace.html", include_str!("templates/namespace.html")),
    ("memory.html", include_str!("templates/memory.html")),
    ("timeline.html", include_str!("templates/timeline.html")),
    ("recall.html", include_str!("templates/recall.html")),
    ("turns.html", include_str!("templates/turns.html")),
    ("reads.html", include_str!("templates/reads.html")),
    ("erasure.html", include_str!("templates/erasure.html")),
    ("error.html", include_str!("templates/error.html")),
];

impl Inspector {
    /// The inspector over `backend`, serving the namespaces `policy` allows.
    ///
    /// # Errors
    /// [`ErrorCode::Internal`] when a built-in template does not compile.
    pub(crate) fn new(backend: Arc<Backend>, policy: NamespacePolicy) -> Result<Inspector, ApiError> {
        let mut env = Environment::new();
        // Names ending in .html auto-escape every interpolated value.
        for (name, source) in TEMPLATES {
            env.add_template(name, source)
                .map_err(|e| ApiError::new(ErrorCode::Internal, format!("inspector template {name}: {e}")))?;
        }
        Ok(Inspector { backend, policy, env })
    }

    /// Runs one request of the surface and decodes its response.
    fn call(&self, req: Request) -> Result<Response, ApiError> {
        let op = req.op();
        Response::from_op_value(op, self.backend.call(req)?)
    }

    /// Renders `template` with `ctx`.
    fn render(&self, status: u16, template: &str, ctx: Value) -> Page {
        self.render_value(status, template, minijinja::Value::from_serialize(&ctx))
    }

    /// Renders `template` with a template context (which may hold markup
    /// marked safe).
    fn render_value(&self, status: u16, template: &str, ctx: minijinja::Value) -> Page {
        let rendered = self.env.get_template(template).and_then(|t| t.render(&ctx));
        match rendered {
            Ok(html) => Page { status, html },
            Err(e) => self.error_page(&ApiError::new(ErrorCode::Internal, format!("cannot render {template}: {e}"))),
        }
    }

    /// The page for an error, with the HTTP status its code calls for.
    fn error_page(&self, e: &ApiError) -> Page {
        let status = match e.code {
            ErrorCode::InvalidInput => 400,
            ErrorCode::NotFound => 404,
            ErrorCode::NamespaceNotAllowed => 403,
            ErrorCode::KeyRequired | ErrorCode::WrongKey => 423,
            ErrorCode::Closed | ErrorCode::Unavailable | ErrorCode::Locked => 503,
            _ => 500,
        };
        let ctx = serde_json::json!({ "title": "Error", "status": status, "error": e });
        match self.env.get_template("error.html").and_then(|t| t.render(&ctx)) {
            Ok(html) => Page { status, html },
            Err(_) => Page { status, html: format!("<!doctype html><title>Error</title><p>HTTP {status}</p>") },
        }
    }

    /// Answers a GET of `path` with query string `query` (blocking: runs
    /// requests on the backend).
    pub(crate) fn page(&self, path: &str, query: Option<&str>) -> Page {
        let q = pages::Query::parse(query);
        match pages::route(self, path, &q) {
            Ok(p) => p,
            Err(e) => self.error_page(&e),
        }
    }
}

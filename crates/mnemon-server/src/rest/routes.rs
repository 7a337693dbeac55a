//! The REST routes: one per operation of the command surface (forget has
//! several, one per kind of target), each naming where the request's
//! fields come from: the path, the query string (reads and deletes) or a
//! JSON body (every other write and the searches).

use hyper::Method;

/// Where a route takes the fields its path does not give.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) enum Input {
    /// A JSON object in the request body.
    Body,
    /// Query parameters, typed by the request's JSON Schema.
    Query,
}

/// One route: `method` on `path` runs operation `op`.
#[derive(Debug)]
pub(crate) struct Route {
    /// The HTTP method.
    pub(crate) method: Method,
    /// The path template; `{name}` segments fill the request field `name`.
    pub(crate) path: &'static str,
    /// The surface operation it runs.
    pub(crate) op: &'static str,
    /// The OpenAPI `operationId`: unique across routes.
    pub(crate) operation_id: &'static str,
    /// Where the other fields come from.
    pub(crate) input: Input,
    /// Fields the route sets itself (`DELETE /v1/namespaces/{namespace}`
    /// sets `all: true`), as JSON text.
    pub(crate) fixed: &'static [(&'static str, &'static str)],
    /// Fields of the operation this route does not take (those naming
    /// files on the server's machine).
    pub(crate) excluded: &'static [&'static str],
    /// When not empty, the only fields the route takes besides its path's
    /// and its fixed ones (a `DELETE` of one target takes `dry_run` and
    /// `reason`, not the other targets).
    pub(crate) only: &'static [&'static str],
    /// One line for the OpenAPI document.
    pub(crate) summary: &'static str,
    /// Answers 201 Created (a new memory, observation or version).
    pub(crate) creates: bool,
}

fn route(method: Method, path: &'static str, op: &'static str, operation_id: &'static str) -> Route {
    let input = match method {
        Method::GET | Method::DELETE => Input::Query,
        _ => Input::Body,
    };
    Route { method, path, op, operation_id, input, fixed: &[], excluded: &[], only: &[], summary: "", creates: false }
}

impl Route {
    fn summary(mut self, s: &'static str) -> Route {
        self.summary = s;
        self
    }
    fn creates(mut self) -> Route {
        self.creates = true;
        self
    }
    fn fixed(mut self, f: &'static [(&'static str, &'static str)]) -> Route {
        self.fixed = f;
        self
    }
    fn excluded(mut self, e: &'static [&'static str]) -> Route {
        self.excluded = e;
        self
    }
    fn only(mut self, o: &'static [&'static str]) -> Route {
        self.only = o;
        self
    }

    /// Whether the route takes `field` in its body or query string.
    pub(crate) fn takes(&self, field: &str) -> bool {
        !self.excluded.contains(&field)
            && (self.only.is_empty() || self.only.contains(&field))
            && !self.fixed.iter().any(|(f, _)| *f == field)
            && !self.params().any(|p| p == field)
    }

    /// The path template's parameter names, in order.
    pub(crate) fn params(&self) -> impl Iterator<Item = &'static str> {
        self.path.split('/').filter_map(|s| s.strip_prefix('{').and_then(|s| s.strip_suffix('}')))
    }

    /// Whether the route may change the store (honours `Idempotency-Key`).
    pub(crate) fn writes(&self) -> bool {
        self.method == Method::POST && !matches!(self.op, "recall" | "context" | "verify_erasure" | "verify_shred")
            || self.method == Method::DELETE
    }

    /// Matches `path` (without its query) against the template: the
    /// parameters' raw (still percent-encoded) values, or `None`.
    pub(crate) fn matches<'p>(&self, path: &'p str) -> Option<Vec<(&'static str, &'p str)>> {
        let mut t = self.path.split('/');
        let mut p = path.split('/');
        let mut out = Vec::new();
        loop {
            match (t.next(), p.next()) {
                (None, None) => return Some(out),
                (Some(ts), Some(ps)) => match ts.strip_prefix('{').and_then(|s| s.strip_suffix('}')) {
                    Some(name) if !ps.is_empty() => out.push((name, ps)),
                    Some(_) => return None,
                    None if ts == ps => {}
                    None => return None,
                },
                _ => return None,
            }
        }
    }
}

/// What a `DELETE` of one target takes besides it.
const TARGET_OPTIONS: &[&str] = &["dry_run", "reason"];

/// The path prefix of every REST route: the API's major version.
pub const REST_PREFIX: &str = "/v1";

/// Every route. Operations on the server's own files (`backup`,
/// `export`, `restore`, `import` from a `path`, the `backups` and
/// `exports` of `verify_shred`) have none: over HTTP a caller names no
/// file on the server's machine.
pub(crate) static ROUTES: std::sync::LazyLock<Vec<Route>> = std::sync::LazyLock::new(|| {
    use Method as M;
    vec![
        route(M::POST, "/v1/namespaces/{namespace}/memories", "remember", "remember")
            .summary("Remember a memory")
            .creates(),
        route(M::GET, "/v1/namespaces/{namespace}/memories", "list", "list")
            .summary("A page of memories, oldest first"),
        route(M::GET, "/v1/namespaces/{namespace}/memories/{id}", "get", "get").summary("One memory"),
        route(M::POST, "/v1/namespaces/{namespace}/memories/{id}/versions", "supersede", "supersede")
            .summary("Write a new version of a memory")
            .creates(),
        route(M::GET, "/v1/namespaces/{namespace}/memories/{id}/history", "history", "history")
            .summary("Every version of a memory, oldest first"),
        route(M::DELETE, "/v1/namespaces/{namespace}/memories/{id}", "forget", "forget_memory")
            .only(TARGET_OPTIONS)
            .summary("Forget a memory and its versions"),
        route(M::POST, "/v1/namespaces/{namespace}/observations", "observe", "observe")
            .summary("Record an observation (a conversation turn or tool result)")
            .creates(),
        route(M::DELETE, "/v1/namespaces/{namespace}/observations/{observation}", "forget", "forget_observation")
            .only(TARGET_OPTIONS)
            .summary("Forget an observation"),
        route(M::DELETE, "/v1/namespaces/{namespace}/sessions/{session}", "forget", "forget_session")
            .only(TARGET_OPTIONS)
            .summary("Forget a session's observations and the memories drawn from them"),
        route(
            M::GET,
            "/v1/namespaces/{namespace}/sessions/{session}/extraction-prompt",
            "extraction_prompt",
            "extraction_prompt",
        )
        .summary("The prompt that asks a model to extract memories from a session"),
        route(M::POST, "/v1/namespaces/{namespace}/sessions/{session}/end", "end_session", "end_session")
            .summary("End a session"),
        route(M::POST, "/v1/namespaces/{namespace}/extractions", "apply_extraction", "apply_extraction")
            .summary("Apply a model's extraction result"),
        route(M::POST, "/v1/namespaces/{namespace}/recall", "recall", "recall").summary("Recall memories for a query"),
        route(M::POST, "/v1/namespaces/{namespace}/context", "context", "context")
            .summary("The prompt block for a query under a token budget"),
        route(M::POST, "/v1/namespaces/{namespace}/forget", "forget", "forget")
            .summary("Forget by any target: id, observation, session, all, or matching a description"),
        route(M::DELETE, "/v1/namespaces/{namespace}", "forget", "forget_namespace")
            .summary("Forget everything in a namespace")
            .fixed(&[("all", "true")])
            .only(TARGET_OPTIONS),
        route(M::GET, "/v1/namespaces/{namespace}/log", "log", "log").summary("A page of the audit export"),
        route(M::GET, "/v1/namespaces/{namespace}/timeline", "timeline", "timeline")
            .summary("A namespace's events over time, by kind"),
        route(M::POST, "/v1/namespaces/{namespace}/consolidate", "consolidate", "consolidate")
            .summary("Merge near-duplicate clusters"),
        route(M::POST, "/v1/namespaces/{namespace}/import", "import", "import")
            .summary("Bulk-load observations and memories given as text")
            .excluded(&["path"]),
        route(M::GET, "/v1/namespaces", "namespaces", "namespaces").summary("Namespaces with their figures"),
        route(M::POST, "/v1/forget-user", "forget_user", "forget_user")
            .summary("Forget every namespace of a set (a user's data), one receipt each"),
        route(M::POST, "/v1/maintain", "maintain", "maintain").summary("Run decay, expiry, capacity and consolidation"),
        route(M::POST, "/v1/compact", "compact", "compact").summary("Erase forgotten content from disk"),
        route(M::POST, "/v1/verify-erasure", "verify_erasure", "verify_erasure")
            .summary("Scan the store's files for texts"),
        route(M::POST, "/v1/namespaces/{namespace}/verify-shred", "verify_shred", "verify_shred")
            .summary("Prove a shredded namespace unreadable in the store (and, in a cluster, its stream)")
            .excluded(&["backups", "exports"]),
        route(M::GET, "/v1/stats", "stats", "stats").summary("Store-wide figures"),
        route(M::GET, "/v1/check", "check", "check").summary("Verify the store against a fresh replay"),
        route(M::GET, "/v1/receipts", "receipts", "receipts").summary("The stored receipts of the store's compactions"),
    ]
});

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn operation_ids_are_unique_and_ops_exist() {
        let mut ids: Vec<_> = ROUTES.iter().map(|r| r.operation_id).collect();
        ids.sort_unstable();
        let n = ids.len();
        ids.dedup();
        assert_eq!(ids.len(), n);
        for r in ROUTES.iter() {
            assert!(mnemon_api::OPS.contains(&r.op), "{}", r.op);
            assert!(r.path.starts_with(REST_PREFIX));
        }
    }

    #[test]
    fn every_op_but_the_file_ones_has_a_route() {
        for op in mnemon_api::OPS {
            let routed = ROUTES.iter().any(|r| r.op == *op);
            assert_eq!(routed, !matches!(*op, "backup" | "export" | "restore"), "{op}");
        }
    }

    #[test]
    fn templates_match_paths() {
        let r = ROUTES.iter().find(|r| r.operation_id == "history").unwrap();
        assert_eq!(r.matches("/v1/namespaces/u1/memories/7/history"), Some(vec![("namespace", "u1"), ("id", "7")]));
        assert_eq!(r.matches("/v1/namespaces/u1/memories/7"), None);
        assert_eq!(r.matches("/v1/namespaces//memories/7/history"), None);
        assert_eq!(r.matches("/v1/namespaces/u1/memories/7/history/x"), None);
    }
}

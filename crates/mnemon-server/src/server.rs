//! The MCP server handler: `tools/list` and `tools/call` over the command
//! surface, with a gate that drains in-flight calls on shutdown.

use std::sync::atomic::{AtomicBool, AtomicUsize, Ordering};
use std::sync::Arc;
use std::time::Duration;

use rmcp::model::{
    CallToolRequestParams, CallToolResponse, CallToolResult, ContentBlock, Implementation, InitializeResult,
    ListToolsResult, PaginatedRequestParams, ServerCapabilities, ServerConfig, Tool,
};
use rmcp::service::RequestContext;
use rmcp::{ErrorData, RoleServer, ServerHandler};
use serde_json::Value;
use tokio_util::sync::CancellationToken;

use super::backend::Backend;
use super::tools;
use mnemon_api::{ApiError, ErrorCode, NamespacePolicy, NamespaceRule, Request};

/// Counts calls in flight and refuses new ones once closing, so that a
/// shutdown answers every call it accepted before the engine closes.
#[derive(Default)]
pub(crate) struct Gate {
    closing: AtomicBool,
    in_flight: AtomicUsize,
    idle: tokio::sync::Notify,
}

/// A call admitted by the gate; dropping it lets the gate drain.
pub(crate) struct Pass<'a>(&'a Gate);

impl Drop for Pass<'_> {
    fn drop(&mut self) {
        if self.0.in_flight.fetch_sub(1, Ordering::AcqRel) == 1 {
            self.0.idle.notify_waiters();
        }
    }
}

impl Gate {
    /// Admits a call, or `None` when closing.
    pub(crate) fn enter(&self) -> Option<Pass<'_>> {
        self.in_flight.fetch_add(1, Ordering::AcqRel);
        if self.closing.load(Ordering::Acquire) {
            drop(Pass(self));
            return None;
        }
        Some(Pass(self))
    }

    /// Refuses new calls and waits (at most `timeout`) for those in flight.
    /// Returns the number still in flight at the end (0 unless timed out).
    pub(crate) async fn close(&self, timeout: Duration) -> usize {
        self.closing.store(true, Ordering::Release);
        let deadline = tokio::time::Instant::now() + timeout;
        loop {
            let idle = self.idle.notified();
            let n = self.in_flight.load(Ordering::Acquire);
            if n == 0 {
                return 0;
            }
            if tokio::time::timeout_at(deadline, idle).await.is_err() {
                return self.in_flight.load(Ordering::Acquire);
            }
        }
    }
}

/// What every connection of one server shares.
pub(crate) struct Shared {
    pub(crate) backend: Arc<Backend>,
    pub(crate) policy: NamespacePolicy,
    /// What every tool name starts with (see [`tools::DEFAULT_TOOL_PREFIX`]).
    pub(crate) prefix: String,
    pub(crate) tools: Vec<Tool>,
    pub(crate) gate: Gate,
    /// A line about the store for the instructions (see
    /// [`MemoryServer::set_notice`]).
    pub(crate) notice: parking_lot::RwLock<Option<String>>,
}

/// An MCP server over the command surface: one per connection, all
/// sharing one backend (one engine, one writer).
#[derive(Clone)]
pub struct MemoryServer {
    pub(crate) shared: Arc<Shared>,
}

/// The server's instructions to the model: when to call which tool, with
/// the tools' names as `prefix` makes them, and what to pass as the
/// namespace. A server for one namespace (`--namespace`) takes none, so
/// its instructions do not mention the argument.
pub(crate) fn base_instructions(policy: &NamespacePolicy, prefix: &str) -> String {
    let p = prefix;
    let mut s = format!(
        "Long-term memory. Before answering, call {p}context (or {p}recall) with what the user asked; \
         {p}remember durable facts and preferences the user states (use key for facts that change); \
         {p}forget on request."
    );
    match policy {
        NamespacePolicy::Only(_) => {}
        NamespacePolicy::Any => {
            s.push_str(" namespace: 1-128 characters of [A-Za-z0-9_.:@-], one per user or project.");
        }
        NamespacePolicy::Allow(rules) => {
            let allowed: Vec<String> = rules
                .iter()
                .map(|r| match r {
                    NamespaceRule::Exact(ns) => ns.as_str().to_string(),
                    NamespaceRule::Prefix(prefix) => format!("{prefix}*"),
                })
                .collect();
            s.push_str(&format!(" namespace: one this server allows: {}.", allowed.join(", ")));
        }
    }
    s
}

/// The server's instructions: [`base_instructions`], then, while the
/// store cannot be opened because no embedding model is installed, that
/// refusal (which every tool call gets too), else the server's notice, if
/// any.
pub(crate) fn instructions(shared: &Shared) -> String {
    let mut text = base_instructions(&shared.policy, &shared.prefix);
    if let Some(e) = shared.backend.refusal() {
        text.push_str(&format!(
            "\n\nMEMORY IS NOT AVAILABLE: {} Every tool call fails with error code `{}` until this is done; \
             tell the user.",
            sentence(&e.message),
            e.code
        ));
    } else if let Some(n) = shared.notice.read().as_deref() {
        text.push_str(&format!("\n\nNote for the user: {}", sentence(n)));
    }
    text
}

/// `s` with a capital first letter and a closing period.
fn sentence(s: &str) -> String {
    let mut c = s.chars();
    let mut out: String = c.next().map(|f| f.to_uppercase().chain(c).collect()).unwrap_or_default();
    if !out.ends_with('.') {
        out.push('.');
    }
    out
}

/// A tool result reporting `e` (the model sees it and can correct the call).
fn error_result(e: &ApiError) -> CallToolResult {
    let text = serde_json::to_string(&serde_json::json!({ "error": e })).unwrap_or_else(|_| e.message.clone());
    CallToolResult::error(vec![ContentBlock::text(text)])
}

impl MemoryServer {
    /// Runs tool `name` with `arguments`; every failure is an error result.
    /// `ct` is the request's cancellation (`notifications/cancelled`, or
    /// the transport ending): the write is withdrawn if it has not been
    /// planned yet; one that committed anyway is reported on standard
    /// error, since the client gets no answer for a cancelled request.
    async fn run(
        &self,
        name: &str,
        arguments: Option<serde_json::Map<String, Value>>,
        id: &rmcp::model::RequestId,
        ct: &CancellationToken,
    ) -> CallToolResult {
        let Some(tool) = tools::find(&self.shared.prefix, name) else {
            return error_result(&ApiError::invalid("name", format!("unknown tool {name:?}")));
        };
        let mut args = Value::Object(arguments.unwrap_or_default());
        if matches!(tool.op, "recall" | "context") {
            if let Value::Object(m) = &mut args {
                m.entry("requester").or_insert_with(|| Value::String("mcp".into()));
            }
        }
        let req = match Request::from_op_with(tool.op, args, &self.shared.policy) {
            Ok(r) => r,
            Err(e) => return error_result(&e),
        };
        let Some(pass) = self.shared.gate.enter() else {
            return error_result(&ApiError::new(ErrorCode::Closed, "the server is shutting down; call refused"));
        };
        let backend = self.shared.backend.clone();
        let cancel = mnemon::CancelToken::new();
        let watch = {
            let (cancel, ct) = (cancel.clone(), ct.clone());
            tokio::spawn(async move {
                ct.cancelled().await;
                cancel.cancel();
            })
        };
        let writes = !req.read_only();
        let out = tokio::task::spawn_blocking(move || backend.call_with(req, Some(cancel))).await;
        watch.abort();
        drop(pass);
        if ct.is_cancelled() && writes {
            match &out {
                Ok(Ok(v)) => eprintln!(
                    "mnemon: request {id} ({name}) was cancelled after its write was planned; it committed and stands: {v}"
                ),
                Ok(Err(e)) if e.code == ErrorCode::Cancelled => {
                    eprintln!("mnemon: request {id} ({name}) cancelled: withdrawn, nothing written")
                }
                _ => {}
            }
        }
        match out {
            // The result as structured content, validated by clients
            // against the tool's output schema, and as JSON text for
            // clients that read only text (as MCP asks of a tool with an
            // output schema).
            Ok(Ok(v)) => CallToolResult::structured(v),
            Ok(Err(e)) => error_result(&e),
            Err(join) => error_result(&ApiError::new(ErrorCode::Internal, format!("call failed: {join}"))),
        }
    }
}

impl ServerHandler for MemoryServer {
    fn get_info(&self) -> ServerConfig {
        InitializeResult::new(ServerCapabilities::builder().enable_tools().build())
            .with_server_info(Implementation::new("mnemon", env!("CARGO_PKG_VERSION")))
            .with_instructions(instructions(&self.shared))
    }

    async fn list_tools(
        &self,
        _request: Option<PaginatedRequestParams>,
        _context: RequestContext<RoleServer>,
    ) -> Result<ListToolsResult, ErrorData> {
        Ok(ListToolsResult::with_all_items(self.shared.tools.clone()))
    }

    async fn call_tool(
        &self,
        request: CallToolRequestParams,
        context: RequestContext<RoleServer>,
    ) -> Result<CallToolResponse, ErrorData> {
        if tools::find(&self.shared.prefix, &request.name).is_none() {
            let names: Vec<String> = tools::TOOLS.iter().map(|t| format!("{}{}", self.shared.prefix, t.op)).collect();
            return Err(ErrorData::invalid_params(
                format!("unknown tool {:?}; tools: {}", request.name, names.join(", ")),
                None,
            ));
        }
        Ok(self.run(&request.name, request.arguments, &context.id, &context.ct).await.into())
    }
}

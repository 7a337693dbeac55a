//! The MCP tools: each one operation of the command surface, described for
//! the model that calls it (what it is for, when to call it, an example
//! call), with a compact input schema of the arguments worth listing, an
//! output schema, and MCP annotations.

use std::collections::BTreeSet;
use std::sync::Arc;

use rmcp::model::{Tool, ToolAnnotations};
use schemars::JsonSchema;
use serde_json::{Map, Value};

use mnemon_api::{self as api, ApiError, Call, NamespacePolicy};

/// The prefix of every tool name unless the server is told otherwise
/// (`--tool-prefix`): `memory_recall`, `memory_forget`, … Clients that do
/// not prefix tool names with their server's name would otherwise see
/// `list`, `get` or `forget` clash with other servers' tools.
pub const DEFAULT_TOOL_PREFIX: &str = "memory_";

/// Longest tool-name prefix: tool names are at most 128 characters, and
/// the longest operation name is 18.
pub const MAX_TOOL_PREFIX_LEN: usize = 64;

/// Where a description or an example names another tool: replaced by the
/// tool-name prefix.
const PREFIX: &str = "{p}";

/// One tool: the surface operation it calls and how it presents itself.
pub(crate) struct ToolSpec {
    /// The operation (the tool's name after the prefix).
    pub(crate) op: &'static str,
    /// What the tool is for and when to call it; `{p}` before another
    /// tool's name stands for the prefix.
    description: &'static str,
    /// The arguments of one example call, as a JSON object without the
    /// namespace (added when calls must name one).
    example: &'static str,
    /// The arguments listed in the input schema, beside `namespace`. The
    /// request's other fields are accepted but not listed: the whole tool
    /// list must stay within [`MAX_TOOL_TOKENS`].
    args: &'static [&'static str],
    pub(crate) read_only: bool,
    pub(crate) destructive: bool,
    /// Meaningful for writing tools only (MCP reads the hint only then).
    pub(crate) idempotent: bool,
    schema: fn() -> Value,
    output: fn() -> Value,
}

/// Most estimated tokens ([`api::json_tokens`]) of the whole `tools/list`
/// answer: clients send every tool definition with every request, so they
/// are a cost on each of the model's turns.
pub const MAX_TOOL_TOKENS: usize = 2_100;

fn schema_of<T: JsonSchema>() -> Value {
    schemars::schema_for!(T).to_value()
}

const fn spec<T: Call>(
    description: &'static str,
    example: &'static str,
    args: &'static [&'static str],
    destructive: bool,
    idempotent: bool,
) -> ToolSpec {
    ToolSpec {
        op: T::OP,
        description,
        example,
        args,
        read_only: T::READ_ONLY,
        destructive,
        idempotent,
        schema: schema_of::<T>,
        output: schema_of::<T::Output>,
    }
}

/// Every tool, in the order `tools/list` shows them.
pub(crate) const TOOLS: &[ToolSpec] = &[
    spec::<api::RememberRequest>(
        "Save a lasting fact or preference the user states. Give a changing fact a key: a later memory \
         with the same key replaces it.",
        r#"{"content":"Prefers aisle seats","kind":"preference","key":"user.seat"}"#,
        &["content", "kind", "key", "tier", "importance", "event_time"],
        false,
        false,
    ),
    spec::<api::ObserveRequest>(
        "Record a conversation turn or tool result; {p}extraction_prompt later turns a session into \
         memories.",
        r#"{"session":"s1","role":"user","text":"I moved to Lisbon"}"#,
        &["session", "role", "text", "event_time"],
        false,
        false,
    ),
    spec::<api::RecallRequest>(
        "Search memory before answering anything that may depend on earlier conversations. Each hit: \
         id, content, score, why.",
        r#"{"query":"where does the user live"}"#,
        &["query", "top_k", "kinds", "current_session", "from", "to", "include_superseded", "explain"],
        false,
        true,
    ),
    spec::<api::ContextRequest>(
        "Prompt block of what memory holds for a question: profile, relevant memories, recent turns. \
         Call it at the start of a turn.",
        r#"{"query":"plan my trip","budget_tokens":400}"#,
        &["query", "budget_tokens", "current_session", "top_k"],
        false,
        true,
    ),
    spec::<api::GetRequest>("One memory by id, every field.", r#"{"id":7}"#, &["id"], false, true),
    spec::<api::HistoryRequest>(
        "Every version of a memory, oldest first.",
        r#"{"id":7}"#,
        &["id", "cursor", "limit"],
        false,
        true,
    ),
    spec::<api::ListRequest>(
        "Memories, oldest first, paged.",
        r#"{"limit":20}"#,
        &["kind", "tier", "include_superseded", "cursor", "limit"],
        false,
        true,
    ),
    spec::<api::ForgetRequest>(
        "Erase what the user wants gone: give one of id, observation, session, all, matching. Try \
         dry_run first.",
        r#"{"matching":"home address","dry_run":true}"#,
        &["id", "observation", "session", "all", "matching", "dry_run", "reason"],
        true,
        true,
    ),
    spec::<api::ForgetUserRequest>(
        "Forget all of a user's namespaces whole, a receipt each.",
        r#"{"namespaces":["u1","u1:work"]}"#,
        &["namespaces"],
        true,
        true,
    ),
    spec::<api::ExtractionPromptRequest>(
        "Prompt to extract memories from a session: answer it, pass your JSON to {p}apply_extraction.",
        r#"{"session":"s1"}"#,
        &["session", "lang"],
        false,
        true,
    ),
    spec::<api::ApplyExtractionRequest>(
        "Store your JSON answer to {p}extraction_prompt.",
        r#"{"extraction":{"new_memories":[{"content":"Lives in Lisbon"}]}}"#,
        &["extraction"],
        true,
        false,
    ),
];

/// The tool named `name` under `prefix`.
pub(crate) fn find(prefix: &str, name: &str) -> Option<&'static ToolSpec> {
    let op = name.strip_prefix(prefix)?;
    TOOLS.iter().find(|t| t.op == op)
}

/// Checks a tool-name prefix: at most [`MAX_TOOL_PREFIX_LEN`] characters
/// of `[A-Za-z0-9_.-]`, the characters MCP tool names may hold.
///
/// # Errors
/// [`api::ErrorCode::InvalidInput`] naming `tool_prefix`.
pub fn check_prefix(prefix: &str) -> Result<(), ApiError> {
    if prefix.chars().count() > MAX_TOOL_PREFIX_LEN {
        return Err(ApiError::invalid(
            "tool_prefix",
            format!("must be at most {MAX_TOOL_PREFIX_LEN} characters, got {}", prefix.chars().count()),
        ));
    }
    if let Some(c) = prefix.chars().find(|c| !(c.is_ascii_alphanumeric() || matches!(c, '_' | '-' | '.'))) {
        return Err(ApiError::invalid(
            "tool_prefix",
            format!("may hold only letters, digits, _, - and . (the characters of tool names), got {c:?}"),
        ));
    }
    Ok(())
}

/// The tool definitions under `policy`, named with `prefix`: with a single
/// namespace served, the `namespace` argument disappears from every schema
/// and example. An argument description repeated word for word in a later
/// tool is given once, in the first tool that lists it.
pub(crate) fn definitions(policy: &NamespacePolicy, prefix: &str) -> Vec<Tool> {
    let named = policy.default_namespace().is_none();
    let mut described: BTreeSet<(String, String)> = BTreeSet::new();
    TOOLS
        .iter()
        .map(|t| {
            let mut schema = super::schema::compact(&(t.schema)());
            keep_only(&mut schema, t.args, named);
            if let Some(Value::Object(props)) = schema.get_mut("properties") {
                for (name, p) in props.iter_mut() {
                    let Value::Object(p) = p else { continue };
                    if let Some(Value::String(d)) = p.get("description") {
                        if !described.insert((name.clone(), d.clone())) {
                            p.remove("description");
                        }
                    }
                }
            }
            let input = match schema {
                Value::Object(m) => m,
                _ => Map::new(),
            };
            let output = match super::schema::output(&(t.output)()) {
                Value::Object(m) => m,
                _ => Map::new(),
            };
            // readOnlyHint defaults to false and destructiveHint to true:
            // say only what differs.
            let mut annotations = ToolAnnotations::new();
            if t.read_only {
                annotations = annotations.read_only(true);
            } else {
                annotations = annotations.destructive(t.destructive);
            }
            if t.idempotent && !t.read_only {
                annotations = annotations.idempotent(true);
            }
            Tool::new(format!("{prefix}{}", t.op), description(t, prefix, named), Arc::new(input))
                .with_raw_output_schema(Arc::new(output))
                .with_annotations(annotations)
        })
        .collect()
}

/// The tool's description with its example call: names of other tools
/// carry `prefix`; the example names a namespace when calls must.
fn description(t: &ToolSpec, prefix: &str, named: bool) -> String {
    // A tool that names a set of namespaces takes no `namespace`.
    let named = named && !t.args.contains(&"namespaces");
    let example = match (named, t.example.strip_prefix('{')) {
        (true, Some(rest)) => format!(r#"{{"namespace":"u1",{rest}"#),
        _ => t.example.to_string(),
    };
    format!("{} Example: {example}", t.description).replace(PREFIX, prefix)
}

/// Keeps the listed arguments (and `namespace` when calls name one) in a
/// compact input schema; the namespace's description is the server's
/// instructions.
fn keep_only(schema: &mut Value, args: &[&str], named: bool) {
    let keep = |n: &str| args.contains(&n) || (named && n == "namespace");
    if let Some(Value::Object(props)) = schema.get_mut("properties") {
        props.retain(|n, _| keep(n));
        if let Some(Value::Object(ns)) = props.get_mut("namespace") {
            ns.remove("description");
        }
    }
    if let Some(Value::Array(req)) = schema.get_mut("required") {
        req.retain(|r| r.as_str().is_some_and(keep));
    }
}

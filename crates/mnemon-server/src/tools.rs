//! The MCP tools: each one operation of the command surface, with a short
//! description, a compact input schema and MCP annotations.

use std::sync::Arc;

use rmcp::model::{Tool, ToolAnnotations};
use schemars::JsonSchema;
use serde_json::Value;

use mnemon_api::{self as api, Call, NamespacePolicy};

/// One tool: the surface operation it calls and how it presents itself.
pub(crate) struct ToolSpec {
    /// The operation (also the tool's name).
    pub(crate) op: &'static str,
    pub(crate) description: &'static str,
    pub(crate) read_only: bool,
    pub(crate) destructive: bool,
    /// Meaningful for writing tools only (MCP reads the hint only then).
    pub(crate) idempotent: bool,
    schema: fn() -> Value,
}

fn schema_of<T: JsonSchema>() -> Value {
    schemars::schema_for!(T).to_value()
}

const fn spec<T: Call>(description: &'static str, destructive: bool, idempotent: bool) -> ToolSpec {
    ToolSpec { op: T::OP, description, read_only: T::READ_ONLY, destructive, idempotent, schema: schema_of::<T> }
}

/// Every tool, in the order `tools/list` shows them.
pub(crate) const TOOLS: &[ToolSpec] = &[
    spec::<api::RememberRequest>("Store a memory; a later one with its key becomes its new version.", false, false),
    spec::<api::ObserveRequest>("Record a conversation turn or tool result, for extraction later.", false, false),
    spec::<api::RecallRequest>("Memories most relevant to a query, best first, with scores.", false, true),
    spec::<api::ContextRequest>(
        "Prompt block: profile, relevant memories, recent turns. Filters as recall.",
        false,
        true,
    ),
    spec::<api::GetRequest>("One memory by id.", false, true),
    spec::<api::HistoryRequest>("Every version of a memory, oldest first.", false, true),
    spec::<api::ListRequest>("Memories, oldest first, paged.", false, true),
    spec::<api::ForgetRequest>(
        "Erase memories or observations: one of id, observation, session, all, matching. Try dry_run first.",
        true,
        true,
    ),
    spec::<api::ExtractionPromptRequest>(
        "A prompt to extract memories from a session; answer it with apply_extraction.",
        false,
        true,
    ),
    spec::<api::ApplyExtractionRequest>("Apply your JSON answer to extraction_prompt.", true, false),
];

/// The tool named `name`.
pub(crate) fn find(name: &str) -> Option<&'static ToolSpec> {
    TOOLS.iter().find(|t| t.op == name)
}

/// The tool definitions under `policy`: with a single namespace served,
/// the `namespace` argument disappears from every schema.
pub(crate) fn definitions(policy: &NamespacePolicy) -> Vec<Tool> {
    TOOLS
        .iter()
        .map(|t| {
            let mut schema = super::schema::compact(&(t.schema)());
            if policy.default_namespace().is_some() {
                remove_namespace(&mut schema);
            } else {
                plain_namespace(&mut schema);
            }
            if t.op == api::ContextRequest::OP {
                // The filters are recall's: described once, there.
                strip_filter_descriptions(&mut schema);
            }
            if t.op == api::RecallRequest::OP || t.op == api::ContextRequest::OP {
                if let Some(Value::Object(props)) = schema.get_mut("properties") {
                    for n in UNLISTED {
                        props.remove(*n);
                    }
                }
            }
            let object = match schema {
                Value::Object(m) => m,
                _ => serde_json::Map::new(),
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
            Tool::new(t.op, t.description, Arc::new(object)).with_annotations(annotations)
        })
        .collect()
}

/// Settings `recall` and `context` accept but do not list: the question's
/// reference time (an agent asks now, the default; replays and evaluations
/// set it), kept out to hold the tool list within its token budget.
const UNLISTED: &[&str] = &["reference_time"];

/// Recall settings the `context` tool accepts but does not list: scoring
/// knobs (the abstention floor among them: the embedder's is the
/// default), access bookkeeping, and quarantined memories (injected
/// instructions have no place in a prompt block).
const CONTEXT_UNLISTED: &[&str] =
    &["mode", "similarity_norm", "candidates", "requester", "record_access", "include_quarantined", "abstain_below"];

/// Settings of the `context` tool itself that it accepts but does not
/// list: the shares of the profile and recent parts (their defaults suit
/// most calls, and the tool list must stay small for clients' context
/// budgets).
const CONTEXT_OWN_UNLISTED: &[&str] = &["profile_share", "recent_share"];

/// `context` shares recall's filters: they are described once, in
/// `recall`, and the settings that do not choose memories are not listed
/// ([`CONTEXT_UNLISTED`], [`CONTEXT_OWN_UNLISTED`]).
fn strip_filter_descriptions(schema: &mut Value) {
    let filters = super::schema::compact(&schema_of::<api::RecallFilters>());
    let names: Vec<String> =
        filters.get("properties").and_then(Value::as_object).map(|p| p.keys().cloned().collect()).unwrap_or_default();
    if let Some(Value::Object(props)) = schema.get_mut("properties") {
        for n in &names {
            if CONTEXT_UNLISTED.contains(&n.as_str()) {
                props.remove(n);
            } else if let Some(Value::Object(p)) = props.get_mut(n) {
                p.remove("description");
            }
        }
        for n in CONTEXT_OWN_UNLISTED {
            props.remove(*n);
        }
    }
}

/// The namespace argument is the same everywhere and explained in the
/// server's instructions: no description per tool.
fn plain_namespace(schema: &mut Value) {
    if let Some(Value::Object(ns)) = schema.get_mut("properties").and_then(|p| p.get_mut("namespace")) {
        ns.remove("description");
    }
}

fn remove_namespace(schema: &mut Value) {
    if let Some(Value::Object(props)) = schema.get_mut("properties") {
        props.remove("namespace");
    }
    if let Some(Value::Array(req)) = schema.get_mut("required") {
        req.retain(|r| r != "namespace");
    }
}

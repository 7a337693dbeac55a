//! The command surface: one typed request and response per capability,
//! shared by every door to the engine — the CLI (`mnemon … --json` prints
//! exactly these responses), the MCP server (a tool's arguments are a
//! request, its result the response) and language bindings.
//!
//! Each request type implements [`Call`]: its operation name ([`Call::OP`]),
//! whether it only reads, the namespace it touches, and how it runs on an
//! [`Engine`]. [`Request`] is the closed set of all of them, tagged by
//! `"op"` on the wire; [`execute`] runs one and returns a [`Response`].
//! Requests and responses are serde types with a JSON Schema
//! ([`schemas`]), built on the library's own types ([`mnemon::Memory`],
//! [`mnemon::Remembered`], [`mnemon::ForgetOutcome`], …), so the JSON has
//! one shape everywhere. A recall hit is the surface's own [`Hit`]: compact
//! (id, content, score and a short `why`) unless the request asks to
//! `explain` it, which adds the whole memory and the parts of its score.
//!
//! Errors are [`ApiError`] objects with a stable [`ErrorCode`], a message
//! that names the field at fault and says what it takes in plain words
//! (`top_k must be between 1 and 1000, got 0`; see [`field_message`]), and
//! the field itself. Requests are checked before anything runs:
//! unknown operations and fields, wrong types, bad namespaces (validated
//! while decoding) and out-of-range values are [`ErrorCode::InvalidInput`]
//! and write nothing.
//!
//! Every read is paged and capped by a token budget ([`Limits`], see
//! [`budget`] for the estimator): a response never exceeds
//! [`Limits::max_response_tokens`].
//!
//! ```
//! # fn main() -> Result<(), Box<dyn std::error::Error>> {
//! use mnemon_api::{self as api, Request, Response};
//! let dir = tempfile::tempdir()?;
//! let engine = mnemon::Engine::open(dir.path())?;
//! let req = Request::from_json(r#"{"op":"remember","namespace":"u1","content":"Prefers window seats"}"#)?;
//! let Response::Remember(r) = api::execute(&engine, req)? else { unreachable!() };
//! let req = Request::from_json(r#"{"op":"recall","namespace":"u1","query":"which seat by the window?"}"#)?;
//! let Response::Recall(hits) = api::execute(&engine, req)? else { unreachable!() };
//! assert_eq!(hits.hits[0].id, r.id);
//! # Ok(()) }
//! ```

pub mod budget;
pub mod door;
mod error;
mod forget_set;
mod inspect;
pub(crate) mod parse;
pub use parse::Bounds;
mod policy;
mod read;
mod transfer;
mod write;

pub use budget::{json_tokens, Limits, DEFAULT_MAX_RESPONSE_TOKENS};
pub use error::{field_message, plain_io, ApiError, ErrorCode};
pub use forget_set::{ForgetUserRequest, ForgetUserResponse, NamespaceForgotten};
pub use inspect::{
    NamespacesRequest, NamespacesResponse, ReceiptsRequest, ReceiptsResponse, TimelineRequest, DEFAULT_TIMELINE_BUCKETS,
};
pub use policy::{NamespacePolicy, NamespaceRule};
pub use read::{
    CheckRequest, ContextRequest, ContextResponse, ExtractionPromptRequest, ExtractionPromptResponse, GetRequest,
    HistoryRequest, HistoryResponse, Hit, ListRequest, ListResponse, LogRequest, LogResponse, RecallFilters,
    RecallRequest, RecallResponse, StatsRequest, EVENT_KINDS,
};
pub use transfer::{read_import_file, BackupRequest, ExportRequest, ImportRequest, RestoreRequest};
pub use write::{
    ApplyExtractionRequest, CompactRequest, ConsolidateRequest, EndSessionRequest, ForgetRequest, ForgetResponse,
    MaintainRequest, MemoryFields, NamespaceMaintenance, ObserveRequest, ObserveResponse, RememberRequest,
    SupersedeRequest, VerifyErasureRequest, VerifyShredRequest,
};

use schemars::JsonSchema;
use serde::de::DeserializeOwned;
use serde::Serialize;
use serde_json::Value;

use mnemon::Engine;
use mnemon::Namespace;

/// One capability of the surface: a request type and how it runs.
pub trait Call: Serialize + DeserializeOwned + JsonSchema + Send + 'static {
    /// The response.
    type Output: Serialize + DeserializeOwned + JsonSchema + Send + 'static;
    /// The operation's name on the wire (`"remember"`, `"recall"`, …).
    const OP: &'static str;
    /// True when the call never writes to the log. (Recall still queues
    /// an `accessed` event unless `record_access` is false; that is
    /// bookkeeping, not a change of what is remembered.)
    const READ_ONLY: bool;

    /// Whether this request never writes: [`Call::READ_ONLY`], or a write
    /// call asked as a dry run.
    fn is_read_only(&self) -> bool {
        Self::READ_ONLY
    }

    /// The namespace the call touches; `None` for store-wide calls and
    /// for calls that name a set of namespaces ([`Call::namespaces`]).
    fn namespace(&self) -> Option<&Namespace>;

    /// Every namespace the call touches: [`Call::namespace`]'s one, or the
    /// set a call such as `forget_user` names; empty for store-wide calls.
    fn namespaces(&self) -> &[Namespace] {
        self.namespace().map(std::slice::from_ref).unwrap_or(&[])
    }

    /// Runs the call.
    ///
    /// # Errors
    /// [`ApiError`] with the engine's error mapped to an [`ErrorCode`], or
    /// [`ErrorCode::InvalidInput`] for values the request type admits but
    /// the operation does not (ranges, exactly-one-of fields).
    fn call(self, engine: &Engine, limits: &Limits) -> Result<Self::Output, ApiError>;
}

macro_rules! surface {
    ($( $(#[$doc:meta])* $variant:ident($req:ty) ),* $(,)?) => {
        /// Every call of the surface, tagged by `"op"` on the wire
        /// (`{"op": "recall", "namespace": "u1", "query": "…"}`).
        #[derive(Clone, Debug, Serialize, JsonSchema)]
        #[serde(tag = "op", rename_all = "snake_case")]
        #[non_exhaustive]
        pub enum Request {
            $( $(#[$doc])* $variant($req), )*
        }

        /// The response of each call: on the wire, exactly the inner value
        /// (no tag; the caller knows what it asked).
        #[derive(Clone, Debug, Serialize, JsonSchema)]
        #[serde(untagged)]
        #[non_exhaustive]
        pub enum Response {
            $( $(#[$doc])* $variant(<$req as Call>::Output), )*
        }

        impl Response {
            /// Decodes the response JSON of operation `op` (as a socket
            /// or a remote server sends it).
            ///
            /// # Errors
            /// [`ErrorCode::Internal`] when `value` is not `op`'s response
            /// shape, [`ErrorCode::InvalidInput`] for an unknown `op`.
            pub fn from_op_value(op: &str, value: Value) -> Result<Response, ApiError> {
                $( if op == <$req as Call>::OP {
                    return serde_json::from_value(value).map(Response::$variant).map_err(|e| {
                        ApiError::new(ErrorCode::Internal, format!("not a {op} response: {e}"))
                    });
                } )*
                Err(ApiError::invalid("op", format!("unknown operation {op:?}")))
            }
        }

        /// Names of every operation, in the order of [`Request`].
        pub const OPS: &[&str] = &[ $( <$req as Call>::OP ),* ];

        impl Request {
            /// The operation's name.
            pub fn op(&self) -> &'static str {
                match self { $( Request::$variant(_) => <$req as Call>::OP, )* }
            }

            /// True when the call never writes to the log.
            pub fn read_only(&self) -> bool {
                match self { $( Request::$variant(r) => r.is_read_only(), )* }
            }

            /// The namespace the call touches; `None` for store-wide calls
            /// and for calls that name a set ([`Request::namespaces`]).
            pub fn namespace(&self) -> Option<&Namespace> {
                match self { $( Request::$variant(r) => r.namespace(), )* }
            }

            /// Every namespace the call touches (see [`Call::namespaces`]).
            pub fn namespaces(&self) -> &[Namespace] {
                match self { $( Request::$variant(r) => r.namespaces(), )* }
            }

            /// Decodes the arguments of operation `op` (see [`Request::from_op`]).
            fn decode(op: &str, args: Value) -> Result<Request, ApiError> {
                $( if op == <$req as Call>::OP {
                    let fields = fields(op).ok_or_else(|| ApiError::new(ErrorCode::Internal, "no schema"))?;
                    return parse::decode::<$req>(args, fields).map(Request::$variant);
                } )*
                Err(ApiError::invalid("op", format!("unknown operation {op:?}; known: {}", OPS.join(", "))))
            }
        }

        /// Runs `req` on `engine` within `limits`.
        ///
        /// # Errors
        /// As [`Call::call`] of the request's type.
        pub fn execute_with(engine: &Engine, req: Request, limits: &Limits) -> Result<Response, ApiError> {
            match req { $( Request::$variant(r) => r.call(engine, limits).map(Response::$variant), )* }
        }

        /// The JSON Schema of every operation's request and response.
        pub fn schemas() -> Vec<OpSchema> {
            vec![ $( OpSchema {
                op: <$req as Call>::OP,
                read_only: <$req as Call>::READ_ONLY,
                request: schemars::schema_for!($req).to_value(),
                response: schemars::schema_for!(<$req as Call>::Output).to_value(),
            }, )* ]
        }

        /// The fields operation `op` admits, those it requires and their bounds.
        fn fields(op: &str) -> Option<&'static parse::OpFields> {
            static FIELDS: std::sync::OnceLock<std::collections::HashMap<&'static str, parse::OpFields>> =
                std::sync::OnceLock::new();
            FIELDS
                .get_or_init(|| {
                    let mut m = std::collections::HashMap::new();
                    $( {
                        let schema = schemars::schema_for!($req).to_value();
                        m.insert(<$req as Call>::OP, parse::OpFields::of(&schema));
                    } )*
                    m
                })
                .get(op)
        }
    };
}

surface! {
    /// Remember a memory.
    Remember(RememberRequest),
    /// Record an observation.
    Observe(ObserveRequest),
    /// Write a new version of a memory.
    Supersede(SupersedeRequest),
    /// Recall memories for a query.
    Recall(RecallRequest),
    /// The prompt block for a query under a token budget.
    Context(ContextRequest),
    /// One memory.
    Get(GetRequest),
    /// A version chain.
    History(HistoryRequest),
    /// A page of memories.
    List(ListRequest),
    /// A page of the audit export.
    Log(LogRequest),
    /// Forget memories or observations.
    Forget(ForgetRequest),
    /// Forget every namespace of a set (a user's data), one receipt each.
    ForgetUser(ForgetUserRequest),
    /// The extraction prompt of a session.
    ExtractionPrompt(ExtractionPromptRequest),
    /// Apply an LLM's extraction result.
    ApplyExtraction(ApplyExtractionRequest),
    /// End a session.
    EndSession(EndSessionRequest),
    /// Merge near-duplicate clusters.
    Consolidate(ConsolidateRequest),
    /// Run decay, expiry, capacity and consolidation.
    Maintain(MaintainRequest),
    /// Erase forgotten content from disk.
    Compact(CompactRequest),
    /// Scan the store's files for texts.
    VerifyErasure(VerifyErasureRequest),
    /// Prove a shredded namespace unreadable in the store and its copies.
    VerifyShred(VerifyShredRequest),
    /// Store-wide figures.
    Stats(StatsRequest),
    /// Verify the store against a fresh replay.
    Check(CheckRequest),
    /// Namespaces with their figures.
    Namespaces(NamespacesRequest),
    /// A namespace's events over time, by kind.
    Timeline(TimelineRequest),
    /// The stored receipts of the store's compactions.
    Receipts(ReceiptsRequest),
    /// Bulk-load observations and memories.
    Import(ImportRequest),
    /// A consistent copy of the store in a new directory.
    Backup(BackupRequest),
    /// Every event and vector as JSON lines, for restore.
    Export(ExportRequest),
    /// A new store rebuilt from an export.
    Restore(RestoreRequest),
}

/// The range operation `op`'s request schema declares for numeric field
/// `field` (`recall`, `top_k`: a whole number from 1 to 1000); `None` for
/// an unknown operation or field, or one without a declared range. Doors
/// that check a value before it reaches the surface (the CLI's flags) word
/// it with [`Bounds::words`], as the surface does.
pub fn field_bounds(op: &str, field: &str) -> Option<Bounds> {
    fields(op)?.bounds.get(field).copied()
}

/// Request and response schema of one operation.
#[derive(Clone, Debug, Serialize)]
pub struct OpSchema {
    /// The operation's name.
    pub op: &'static str,
    /// True when it never writes.
    pub read_only: bool,
    /// JSON Schema (draft 2020-12) of the request's arguments.
    pub request: Value,
    /// JSON Schema of the response.
    pub response: Value,
}

impl Request {
    /// Decodes the arguments of operation `op` (a JSON object). Every field
    /// is checked: unknown fields, wrong types and invalid namespaces are
    /// errors naming the field.
    ///
    /// # Errors
    /// [`ErrorCode::InvalidInput`] with `field` set to the JSON path at fault.
    pub fn from_op(op: &str, args: Value) -> Result<Request, ApiError> {
        Request::from_op_with(op, args, &NamespacePolicy::Any)
    }

    /// [`Request::from_op`] under a namespace policy: a call that omits the
    /// namespace gets the policy's default, and the namespace (or a
    /// store-wide call) is checked against the policy.
    ///
    /// # Errors
    /// As [`Request::from_op`]; [`ErrorCode::NamespaceNotAllowed`].
    pub fn from_op_with(op: &str, mut args: Value, policy: &NamespacePolicy) -> Result<Request, ApiError> {
        if args.is_null() {
            args = Value::Object(serde_json::Map::new());
        }
        let Value::Object(map) = &args else {
            return Err(ApiError::invalid("arguments", "must be a JSON object"));
        };
        if let Some(fields) = fields(op).map(|f| &f.admitted) {
            if let Some(unknown) = map.keys().find(|k| !fields.contains(k.as_str())) {
                let list: Vec<&str> = fields.iter().map(String::as_str).collect();
                return Err(ApiError::invalid(
                    unknown.clone(),
                    format!("is not a field of {op}; it takes {}", list.join(", ")),
                ));
            }
            if fields.contains("namespace") {
                policy.fill_default(&mut args);
            }
        }
        let req = Request::decode(op, args)?;
        match (req.namespace(), req.namespaces()) {
            // A call that names a set is allowed when every one is.
            (None, set) if !set.is_empty() => set.iter().try_for_each(|ns| policy.check(Some(ns)))?,
            (ns, _) => policy.check(ns)?,
        }
        Ok(req)
    }

    /// Decodes a whole request: a JSON object with `"op"` and the
    /// operation's fields.
    ///
    /// # Errors
    /// As [`Request::from_op`].
    pub fn from_value(value: Value) -> Result<Request, ApiError> {
        Request::from_value_with(value, &NamespacePolicy::Any)
    }

    /// [`Request::from_value`] under a namespace policy.
    ///
    /// # Errors
    /// As [`Request::from_op_with`].
    pub fn from_value_with(value: Value, policy: &NamespacePolicy) -> Result<Request, ApiError> {
        let Value::Object(mut map) = value else {
            return Err(ApiError::invalid("request", "must be a JSON object with \"op\""));
        };
        let op = match map.remove("op") {
            Some(Value::String(op)) => op,
            _ => return Err(ApiError::invalid("op", "missing or not a string")),
        };
        Request::from_op_with(&op, Value::Object(map), policy)
    }

    /// Decodes a whole request from JSON text.
    ///
    /// # Errors
    /// [`ErrorCode::InvalidInput`] for text that is not JSON; as
    /// [`Request::from_value`].
    pub fn from_json(text: &str) -> Result<Request, ApiError> {
        let v: Value =
            serde_json::from_str(text).map_err(|e| ApiError::invalid("request", format!("not JSON: {e}")))?;
        Request::from_value(v)
    }

    /// The request as its wire JSON (with `"op"`), numbers as
    /// [`Response::to_value`] writes them.
    pub fn to_value(&self) -> Value {
        wire_value(self)
    }
}

impl Response {
    /// The response as its wire JSON: the same text the CLI's `--json` and
    /// the Python package give. An `f32` field keeps its shortest decimal
    /// form (`0.99`, not the `0.9900000095367432` of its widening to
    /// `f64`), since the value is written as JSON text and read back.
    pub fn to_value(&self) -> Value {
        wire_value(self)
    }
}

/// `v` as JSON text read back as a value: `serde_json::to_value` widens an
/// `f32` to `f64` (0.99 becomes 0.9900000095367432), its text form does not.
fn wire_value<T: Serialize>(v: &T) -> Value {
    serde_json::to_string(v).ok().and_then(|t| serde_json::from_str(&t).ok()).unwrap_or(Value::Null)
}

/// Runs `req` on `engine` within the default [`Limits`].
///
/// # Errors
/// As [`Call::call`] of the request's type.
pub fn execute(engine: &Engine, req: Request) -> Result<Response, ApiError> {
    execute_with(engine, req, &Limits::default())
}

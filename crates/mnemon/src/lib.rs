//! # mnemon
//!
//! An embedded long-term memory engine for LLM agents: an agent daemon links
//! it to remember what users said and did across sessions, recall the few
//! memories that matter for the next prompt, keep facts current as they
//! change, forget on request, and prove what it knew and when.
//!
//! Every write is an immutable event (`observed`, `extracted`, `superseded`,
//! `accessed`, `forgotten`) appended to a sled-backed log by a single writer
//! thread that commits in groups. The fact table and the vector and lexical
//! indexes are projections of that log, so history (`as_of`, `history`) is
//! replayable and erasure is provable by compaction.
//!
//! The main types: [`Engine`] (open with [`Engine::builder`]), [`Namespace`],
//! [`NewMemory`], [`Memory`], [`Event`]. [`Engine::forget`] removes content
//! from every read path at once; [`Engine::compact`] then removes its bytes
//! from the disk and returns an [`ErasureReceipt`] from an independent scan
//! of every file ([`verify_erasure`]).
//!
//! Memories have tiers: short-term ones belong to a session and are archived
//! when it ends ([`Engine::end_session`]); long-term ones decay with time
//! since last access and are archived by [`Engine::maintain`] when weak or
//! over capacity; permanent ones never are. Archiving is an `archived`
//! event, so it replays; archived memories leave default recall and `list`
//! but stay in history. [`Engine::extraction_prompt`] and
//! [`Engine::apply_extraction`] are the contract with the caller's LLM;
//! [`rule_extract`] handles explicit statements without one.
//!
//! No text a caller sends is dropped: a memory that repeats an active one
//! word for word returns it; one that restates it (cosine ≥ the embedder's
//! near-duplicate threshold and the same numbers, names, content words,
//! negations, qualifiers and word order, see [`dedup`]) becomes its new version; a changed fact, however similar, is a
//! new memory. Recall shows one hit of each restatement pair.
//!
//! [`portability`] gets data in and out: bulk import ([`Engine::import`])
//! of JSON lines and benchmark chat histories, consistent backups of a live
//! store ([`Engine::backup`]), and a store export ([`Engine::export`]) that
//! [`restore`] rebuilds into a store with the same digest.
//!
//! This crate is the engine alone. The doors are other crates of the same
//! workspace: `mnemon-api` (the command surface: one typed request and
//! response per capability, shared by every door), `mnemon-server` (the
//! MCP server on stdio and HTTP, the local socket, the inspector),
//! `mnemon-cluster` (namespace-sharded daemons over NATS JetStream),
//! `mnemon-cli` (the `mnemon` binary) and the Python package.
//!
//! mnemon is **not** an LLM client (it never calls a model provider), not a
//! general vector database, and not a general network service: it is a
//! library with a CLI and an MCP server.
//!
//! ```
//! # fn main() -> mnemon::Result<()> {
//! use mnemon::{Engine, Namespace, NewMemory};
//! let dir = tempfile::tempdir()?;
//! let engine = Engine::open(dir.path())?;
//! let ns = Namespace::new("u1")?;
//! let r = engine.remember(&ns, NewMemory::new("My favourite player is Ronaldo").key("user.favourite_player"))?;
//! let r2 = engine.remember(&ns, NewMemory::new("My favourite player is now Messi").key("user.favourite_player"))?;
//! assert_eq!(engine.history(&ns, r2.id)?.len(), 2);
//! assert_eq!(engine.get(&ns, r.id)?.status, mnemon::Status::Superseded);
//! # Ok(()) }
//! ```
// `unsafe` only where a measured hot path needs it, with `# Safety` and
// `// SAFETY:` at the site: the int8 kernel of the neural embedders
// (`embed::int8`, AVX-512 VNNI intrinsics).
#![deny(unsafe_code)]
#![warn(missing_docs)]

mod cancel;
mod crash;
mod engine;
mod error;
mod log;
mod projection;
mod types;
mod writer;

pub mod crypt;
pub mod dedup;
pub mod embed;
pub mod erase;
pub mod event;
pub mod extract;
pub mod index;
pub mod lifecycle;
pub mod portability;
pub mod recall;
pub mod safety;
pub mod text;

/// The durable log under a store: the [`LogStore`](storage::LogStore)
/// trait and its sled implementation ([`SledStore`](storage::SledStore)),
/// the vector cache's entries, and who holds a store
/// ([`lock_holder`](storage::lock_holder)). An embedded store needs none of
/// it ([`Engine`] opens its own); tools that read a store's files do.
pub mod storage {
    pub use crate::log::{
        fnv1a64, lock_holder, process_may_run, CachedVector, LockHolder, LogStore, SealedStore, SledStore, VectorEntry,
        VectorIter,
    };
}

/// Hooks for a replicated log in front of the local one (the
/// `mnemon-cluster` crate uses them; an embedded store needs none): a
/// [`GroupSink`](replication::GroupSink) set with
/// [`EngineBuilder::group_sink`] receives every [`Group`](replication::Group)
/// before it is written locally and acknowledged, and
/// [`Engine::compact_then`] rewrites the replicated log from a compacted
/// local one on the writer thread ([`Shared`](replication::Shared)). A
/// [`DataDir`](replication::DataDir) opens a store's directory (locked) to
/// read or build a copy of its log.
pub mod replication {
    pub use crate::log::DataDir;
    pub use crate::writer::{Group, GroupSink, Shared};
}

pub use cancel::CancelToken;
pub use engine::{
    AsOf, CheckReport, ClusterView, Config, EmbedMode, Engine, EngineBuilder, ForgetRequest, ListOptions,
    NamespaceSummary, NewMemory, NewObservation, OpenReport, Progress, ProgressFn, Remembered, ServedNamespace, Stats,
    Timeline, TimelineBucket, View, DEFAULT_MAX_CONTENT_BYTES, DEFAULT_RESERVE_BYTES, MAX_FORGET_NAMESPACES,
    MAX_TIMELINE_BUCKETS,
};
pub use erase::{verify_erasure, CompactionReceipt, ErasureReceipt};
pub use error::{plain_json_words, range_reason, Error, Failure, Result};
pub use event::{Event, EventBody};
pub use extract::{rule_extract, ExtractionReport};
pub use projection::{EventCounts, Memory, Observation};
pub use recall::{render_context, ContextBlock, ContextOptions, Hit, RecallOptions};
pub use types::*;
pub use writer::{DedupMode, Durability, ForgetOutcome, RememberAction};

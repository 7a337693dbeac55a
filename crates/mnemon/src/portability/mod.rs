//! Getting data in and out of a store: bulk import, backup, the store
//! export and restore.
//!
//! * **Import** ([`crate::Engine::import`]): JSON lines of observations and
//!   memories ([`ImportRecord`], docs/FORMAT.md "Import"), or the chat
//!   histories of LoCoMo and LongMemEval, or what other memory systems
//!   export — the MCP memory server's knowledge graph, mem0 memories,
//!   LangGraph store dumps ([`ImportFormat`]), with what has no place in
//!   mnemon's model listed as [`Unmapped`]. Every record is
//!   checked before anything is written; bad records are reported by line
//!   and either skipped or the whole import aborted ([`OnError`]); a second
//!   run of the same import writes nothing (the identities are given at
//!   [`crate::Engine::import`]).
//! * **Backup** ([`crate::Engine::backup`]): a complete data directory
//!   copied on the writer thread while other threads keep writing — a
//!   prefix of the log, forgotten payloads as tombstones.
//! * **Export** ([`crate::Engine::export`]) and **restore** ([`restore`]):
//!   every event of every namespace plus the vectors as JSON lines, and a
//!   new store rebuilt from them whose digest equals the original's.
//!
//! Not here: merging two stores (a restore always makes a new one) and
//! incremental backups (every backup is a full copy).

mod backup;
mod chat;
mod export;
mod foreign;
mod import;
mod langgraph;
mod mcp_memory;
mod mem0;
mod records;
mod restore;
mod shred;

pub use crate::log::RESTORE_MISMATCH;
pub use backup::BackupReport;
pub use chat::{parse_locomo, parse_locomo_date, parse_longmemeval, parse_longmemeval_date};
pub use export::{ExportHeader, ExportLine, ExportReport, ExportVector, SealedLine, SealedVectorLine, EXPORT_VERSION};
pub use import::{
    ImportFormat, ImportOptions, ImportProgress, ImportProgressFn, ImportSummary, OnError, DEFAULT_IMPORT_BATCH,
    MAX_LISTED_REJECTIONS,
};
pub use langgraph::{is_store_prefix, parse_langgraph};
pub use mcp_memory::parse_mcp_memory;
pub use mem0::parse_mem0;
pub use records::{
    parse_jsonl, ImportMemory, ImportObservation, ImportRecord, Located, Parsed, Rejection, Unmapped, MAX_LINE_BYTES,
};
pub use restore::{restore, restore_verified, RestoreReport, UNVERIFIED_RESTORE};
pub use shred::verify_shred;

use std::collections::HashSet;

use crate::projection::State;

/// Ids of every forgotten memory and observation, all namespaces.
fn forgotten_ids(state: &State) -> (HashSet<u64>, HashSet<u64>) {
    let mut m = HashSet::new();
    let mut o = HashSet::new();
    for st in state.namespaces.values() {
        m.extend(st.forgotten_memories.iter().map(|i| i.0));
        o.extend(st.forgotten_observations.iter().map(|i| i.0));
    }
    (m, o)
}

pub(crate) use crate::writer::compact::tree_bytes;

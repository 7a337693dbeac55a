//! Provable erasure: compaction makes forgetting physical, and an
//! independent scanner proves it.
//!
//! [`crate::Engine::forget`] removes content from every read path at once,
//! but the bytes stay in the log's files: sled does not overwrite deleted or
//! replaced values in place. [`crate::Engine::compact`] rewrites the live
//! generation into a fresh directory (`gen-M` (M = N+1, or one above any higher `gen-*` directory present)) in which every forgotten
//! `Observed`/`Extracted` payload is a content-free [`crate::event::Tombstone`]
//! under the same `Seq` and namespace (history stays gap-free), drops the
//! cached vectors of forgotten memories, switches to it atomically and
//! deletes the old generation. It then scans every file under the data
//! directory — including lock, pointer, marker, cache and temporary files —
//! for the erased texts (whole, and 32-byte windows every 16 bytes so a
//! partial copy is found) and for windows of the f32 and f16 bytes of the erased
//! vectors, and returns an [`ErasureReceipt`]: erased ids, log position,
//! generation, every file with its length and SHA-256, bytes and patterns
//! searched, matches (there must be none) and `verified`.
//!
//! Every compaction that took effect also leaves a [`CompactionReceipt`] in
//! the store (counts and digests only: no erased text, vector or id): it is
//! written into the new generation before the switch, completed with the
//! scan's summary afterwards, and carried into every later generation;
//! [`crate::Engine::compaction_receipts`] lists them (op `receipts`).
//!
//! The scanner ([`verify_erasure`]) shares no code with compaction: it reads
//! raw bytes, knows nothing of sled or the record format, and works on a
//! closed store as well. [`crate::Engine::verify_erasure_text`] searches an
//! open store for any text an auditor names.
//!
//! # Concurrency
//!
//! Compaction runs on the writer thread: writes queue until it finishes
//! (including the verification scan, so the receipt describes one state of
//! the disk). Reads keep working throughout: projections do not change, and
//! the store is swapped under a lock that readers hold only briefly.
//!
//! # Crash recovery
//!
//! Compaction first writes and fsyncs `DATA/COMPACTING`, and removes it only
//! after the old generation is deleted. A crash at any step leaves one of:
//!
//! * `CURRENT` still names `gen-N` (crash while copying or syncing): open
//!   deletes the partial `gen-M` and opens `gen-N`, which is complete;
//! * `CURRENT` names `gen-M` (crash after the switch or while deleting):
//!   open deletes what is left of `gen-N` and opens `gen-M`, which was
//!   complete and fsynced before the switch.
//!
//! Either way no acknowledged event is lost (writes queue during compaction
//! and every earlier one is copied), and since `COMPACTING` is still there,
//! open runs the compaction again before the engine accepts calls; its
//! receipt is in [`crate::OpenReport::erasure`]. Forgotten payloads in a
//! store without the marker (forgotten, never compacted) are counted in
//! [`crate::Stats::pending_erasure`] and [`crate::OpenReport::pending_erasure`]
//! but not compacted at open: compaction rewrites the whole store, so when to
//! pay for it is the caller's choice.
//!
//! # What the receipt does not cover
//!
//! The receipt covers the files under the data directory. Out of its reach:
//! blocks an SSD or a copy-on-write file system keeps after a file is
//! deleted, file-system snapshots, backups, swap, copies of text sent
//! elsewhere (for example to an LLM provider), and the process memory of
//! whoever read the content before it was forgotten. Deleted files whose
//! handles are still open (a reader that held the old store for more than
//! 30 s) are freed by the kernel when the last handle closes. Short texts
//! (under 8 bytes) and low-information windows are not searched, and
//! patterns that also occur in surviving content are excluded; the receipt
//! counts all three. Metadata of erased payloads (entities, key, session,
//! source reference) is removed with them but only the text is searched.
//! The `Forgotten` events themselves are kept (ids, reason, requester); a
//! verbatim copy of a forgotten text in their reason or requester is
//! replaced by `[erased]` before they are written (see [`quote`]).
//!
//! # Testing hook
//!
//! When the environment variable `MNEMON_CRASH_AT` names a step — `copy`,
//! `fsync`, `switch` or `delete` — compaction calls
//! [`std::process::abort`] at that step. It exists for the crash tests
//! (`tests/compaction_crash.rs`); otherwise it costs one cached lookup per
//! step.

pub(crate) mod quote;
mod receipt;
pub(crate) mod stored;
mod verify;

pub use receipt::{CompactionFigures, CompactionReceipt, ErasureReceipt, ScanSummary};
pub(crate) use verify::{scan_opened, vector_layouts, MIN_TEXT_BYTES};
pub use verify::{verify_erasure, ErasurePatterns, PatternKind, PatternMatch, ScanReport, ScannedFile};

pub(crate) use crate::crash::crash_point;

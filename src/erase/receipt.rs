//! The erasure receipt: what a compaction erased and what the independent
//! scan of the data directory found afterwards.

use std::fmt;

use chrono::{DateTime, Utc};
use serde::{Deserialize, Serialize};

use crate::erase::verify::ScanReport;
use crate::types::{MemoryId, ObservationId, Seq};

/// What a compaction did, in figures.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize, schemars::JsonSchema)]
pub struct CompactionFigures {
    /// The generation that was replaced (and deleted).
    pub previous_generation: u64,
    /// Event records copied into the new generation.
    pub events_copied: u64,
    /// Cached vectors of forgotten memories dropped (every model).
    pub vectors_dropped: u64,
    /// Bytes of the previous generation's files.
    pub bytes_before: u64,
    /// Bytes of the new generation's files.
    pub bytes_after: u64,
    /// Wall time of the rewrite, switch and deletion, in milliseconds.
    pub compact_ms: u64,
    /// Wall time of the verification scan, in milliseconds.
    pub verify_ms: u64,
}

/// Proof of erasure, returned by [`crate::Engine::compact`] and
/// [`crate::Engine::verify_erasure_text`].
///
/// `verified` is true when the scan of every file under the data directory
/// found none of the searched patterns. The patterns come from the erased
/// payloads themselves (held in memory only while compaction runs): whole
/// texts, 32-byte windows of them, and windows of the f32 bytes of their
/// cached vectors, minus patterns that also occur in surviving content.
///
/// Out of its scope: blocks an SSD or a copy-on-write file system keeps
/// after a file is deleted, file-system snapshots, backups, swap, and copies
/// of the content sent elsewhere (for example to an LLM provider).
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize, schemars::JsonSchema)]
pub struct ErasureReceipt {
    /// When the receipt was made (UTC).
    pub at: DateTime<Utc>,
    /// The data directory generation in use after the operation.
    pub generation: u64,
    /// The log position covered: the last `Seq` at the time.
    pub last_seq: Seq,
    /// Forgotten memories whose payload this compaction replaced by a
    /// tombstone (empty for a text search).
    pub forgotten_memories: Vec<MemoryId>,
    /// Forgotten observations whose payload this compaction replaced.
    pub forgotten_observations: Vec<ObservationId>,
    /// Compaction figures (absent for a text search).
    pub compaction: Option<CompactionFigures>,
    /// Patterns not searched because they also occur in surviving content.
    pub patterns_excluded_shared: usize,
    /// Windows or texts not searched because they carry too little
    /// information (runs of one or a few byte values).
    pub patterns_low_information: usize,
    /// Texts not searched because they are shorter than 8 bytes.
    pub texts_too_short: usize,
    /// The scan: every file with length and SHA-256, bytes and patterns,
    /// and every match.
    #[serde(flatten)]
    pub scan: ScanReport,
    /// True when the scan found no match.
    pub verified: bool,
}

impl fmt::Display for ErasureReceipt {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        writeln!(f, "erasure receipt  {}", self.at.to_rfc3339())?;
        writeln!(f, "  generation      {}  (log position {})", self.generation, self.last_seq)?;
        if let Some(c) = &self.compaction {
            writeln!(
                f,
                "  erased          {} memories, {} observations, {} cached vectors",
                self.forgotten_memories.len(),
                self.forgotten_observations.len(),
                c.vectors_dropped
            )?;
            writeln!(
                f,
                "  compaction      gen {} -> {}, {} events, {} -> {} bytes, {} ms (+{} ms scan)",
                c.previous_generation,
                self.generation,
                c.events_copied,
                c.bytes_before,
                c.bytes_after,
                c.compact_ms,
                c.verify_ms
            )?;
        }
        writeln!(
            f,
            "  scanned         {} files, {} bytes, {} patterns ({} shared with surviving content, {} low-information, {} too short: not searched)",
            self.scan.files.len(),
            self.scan.bytes_scanned,
            self.scan.patterns,
            self.patterns_excluded_shared,
            self.patterns_low_information,
            self.texts_too_short
        )?;
        for s in &self.scan.skipped {
            writeln!(f, "  skipped         {s}")?;
        }
        for m in &self.scan.matches {
            writeln!(f, "  MATCH           {} @ {} ({:?})", m.path, m.offset, m.kind)?;
        }
        write!(
            f,
            "  matches         {}\n  verified        {}",
            self.scan.matches_total,
            if self.verified { "yes" } else { "NO" }
        )
    }
}

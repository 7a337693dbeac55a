//! The erasure receipt: what a compaction erased and what the independent
//! scan of the data directory found afterwards.

use std::fmt;

use chrono::{DateTime, Utc};
use serde::{Deserialize, Serialize};
use sha2::{Digest, Sha256};

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
/// (and, for an encrypted store, of every record and cached vector opened
/// with its keys: [`ScanReport::opened`]) found none of the searched
/// patterns. The patterns come from the erased
/// payloads themselves (held in memory only while compaction runs): whole
/// texts, 32-byte windows of them, and windows of the f32 and f16 bytes of their
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
                "  erased          {}, {}, {}",
                counted(self.forgotten_memories.len(), "memory", "memories"),
                counted(self.forgotten_observations.len(), "observation", "observations"),
                counted(c.vectors_dropped, "cached vector", "cached vectors")
            )?;
            writeln!(
                f,
                "  compaction      gen {} -> {}, {}, {} -> {} bytes, {} ms (+{} ms scan)",
                c.previous_generation,
                self.generation,
                counted(c.events_copied, "event", "events"),
                c.bytes_before,
                c.bytes_after,
                c.compact_ms,
                c.verify_ms
            )?;
        }
        writeln!(
            f,
            "  scanned         {}, {}, {} searched (not searched: {} shared with surviving content, {} low-information, {} too short)",
            counted(self.scan.files.len(), "file", "files"),
            counted(self.scan.bytes_scanned, "byte", "bytes"),
            counted(self.scan.patterns, "pattern", "patterns"),
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

/// A compaction as the store keeps it: what was erased and what the scan
/// found, in counts and digests only — never an erased text, vector or id.
///
/// Every compaction that took effect leaves one in the data directory (see
/// [`crate::Engine::compaction_receipts`]): it is written into the new
/// generation before the switch (so it exists exactly when the switch
/// happened), completed with the scan's summary once the scan is done, and
/// carried into every later generation. A compaction whose process stopped
/// after the switch and before the end of the scan keeps `scan`,
/// `bytes_after` and `compact_ms` absent; the compaction the next open runs
/// then leaves its own receipt.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize, schemars::JsonSchema)]
pub struct CompactionReceipt {
    /// When the new generation was complete, just before the switch (UTC).
    pub at: DateTime<Utc>,
    /// The generation that was replaced (and deleted).
    pub previous_generation: u64,
    /// The generation the compaction switched to.
    pub generation: u64,
    /// The log position covered: the last `Seq` copied.
    pub last_seq: Seq,
    /// Event records copied into the new generation (all of them, the
    /// rewritten ones included).
    pub events_copied: u64,
    /// Forgotten memory versions whose payload became a tombstone.
    pub memories_erased: u64,
    /// Forgotten observations whose payload became a tombstone.
    pub observations_erased: u64,
    /// Cached vectors of forgotten memories dropped (every model).
    pub vectors_dropped: u64,
    /// Bytes of the previous generation's files.
    pub bytes_before: u64,
    /// Bytes of the new generation's files after its fsync; absent when the
    /// process stopped before the scan ended.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub bytes_after: Option<u64>,
    /// Wall time of the rewrite, switch and deletion, in milliseconds;
    /// absent as `bytes_after`.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub compact_ms: Option<u64>,
    /// The verification scan; absent when the process stopped before it
    /// ended.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub scan: Option<ScanSummary>,
}

/// What the verification scan of a compaction found, in figures.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize, schemars::JsonSchema)]
pub struct ScanSummary {
    /// When the scan ended (UTC).
    pub at: DateTime<Utc>,
    /// True when no searched pattern was found in any file.
    pub verified: bool,
    /// Matches found (there must be none).
    pub matches: u64,
    /// Regular files read.
    pub files: u64,
    /// Entries not read (symbolic links, files that vanished meanwhile).
    pub skipped: u64,
    /// Bytes read.
    pub bytes_scanned: u64,
    /// Patterns searched.
    pub patterns: u64,
    /// Patterns not searched because they also occur in surviving content.
    pub patterns_excluded_shared: u64,
    /// Windows or texts not searched for carrying too little information.
    pub patterns_low_information: u64,
    /// Erased texts not searched for being shorter than 8 bytes.
    pub texts_too_short: u64,
    /// SHA-256 (lower-case hex) of the scanned file list: one line
    /// `path\tlength\tsha256\n` per file, in path order, as the full
    /// receipt lists them.
    pub files_sha256: String,
    /// Wall time of the scan, in milliseconds.
    pub verify_ms: u64,
}

impl CompactionReceipt {
    /// The summary of a full receipt: counts and digests, no ids. `None`
    /// for a receipt without compaction figures (a text search).
    pub fn from_erasure(r: &ErasureReceipt) -> Option<CompactionReceipt> {
        let c = r.compaction.as_ref()?;
        Some(CompactionReceipt {
            at: r.at,
            previous_generation: c.previous_generation,
            generation: r.generation,
            last_seq: r.last_seq,
            events_copied: c.events_copied,
            memories_erased: count(r.forgotten_memories.len()),
            observations_erased: count(r.forgotten_observations.len()),
            vectors_dropped: c.vectors_dropped,
            bytes_before: c.bytes_before,
            bytes_after: Some(c.bytes_after),
            compact_ms: Some(c.compact_ms),
            scan: Some(ScanSummary::of(r, c.verify_ms)),
        })
    }
}

impl ScanSummary {
    fn of(r: &ErasureReceipt, verify_ms: u64) -> ScanSummary {
        let mut h = Sha256::new();
        for f in &r.scan.files {
            h.update(format!("{}\t{}\t{}\n", f.path, f.len, f.sha256).as_bytes());
        }
        ScanSummary {
            at: r.at,
            verified: r.verified,
            matches: r.scan.matches_total,
            files: count(r.scan.files.len()),
            skipped: count(r.scan.skipped.len()),
            bytes_scanned: r.scan.bytes_scanned,
            patterns: count(r.scan.patterns),
            patterns_excluded_shared: count(r.patterns_excluded_shared),
            patterns_low_information: count(r.patterns_low_information),
            texts_too_short: count(r.texts_too_short),
            files_sha256: hex::encode(h.finalize()),
            verify_ms,
        }
    }
}

fn count(n: usize) -> u64 {
    u64::try_from(n).unwrap_or(u64::MAX)
}

impl fmt::Display for CompactionReceipt {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let opt = |v: Option<u64>| v.map_or_else(|| "?".to_string(), |v| v.to_string());
        writeln!(
            f,
            "{}  gen {} -> {}  log position {}",
            self.at.to_rfc3339_opts(chrono::SecondsFormat::Secs, true),
            self.previous_generation,
            self.generation,
            self.last_seq
        )?;
        writeln!(
            f,
            "  erased        {}, {}, {}; {} copied",
            counted(self.memories_erased, "memory", "memories"),
            counted(self.observations_erased, "observation", "observations"),
            counted(self.vectors_dropped, "cached vector", "cached vectors"),
            counted(self.events_copied, "event", "events")
        )?;
        writeln!(
            f,
            "  bytes         {} -> {}  ({} ms)",
            self.bytes_before,
            opt(self.bytes_after),
            opt(self.compact_ms)
        )?;
        match &self.scan {
            Some(s) => write!(
                f,
                "  verified      {}  ({}; {}, {}, {} scanned in {} ms)",
                if s.verified { "yes" } else { "NO" },
                counted(s.matches, "match", "matches"),
                counted(s.files, "file", "files"),
                counted(s.bytes_scanned, "byte", "bytes"),
                counted(s.patterns, "pattern", "patterns"),
                s.verify_ms
            ),
            None => write!(f, "  verified      not recorded (the process stopped before the scan ended)"),
        }
    }
}

/// `n` and the noun in the number `n` calls for: "1 memory", "2 memories".
fn counted<N: fmt::Display + PartialEq + From<u8>>(n: N, one: &str, many: &str) -> String {
    let noun = if n == N::from(1) { one } else { many };
    format!("{n} {noun}")
}

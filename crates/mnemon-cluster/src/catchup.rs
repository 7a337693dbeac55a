//! Catch-up: bring a namespace's local copy (an engine data directory) to
//! the log of record before an engine opens it. Whole groups of the stream
//! after the copy's position are appended byte for byte, with their
//! vectors; the parts of a group that a takeover marker cut short are void
//! (that group was never acknowledged). A copy that follows an older
//! generation of the stream (one compacted since) is deleted and rebuilt,
//! so erased content never survives in it.

use std::path::Path;
use std::time::Instant;

use crate::conn::Conn;
use crate::replica::{Position, META_NAMESPACE, META_POSITION};
use crate::stream::NsLog;
use crate::wire::{self, GroupPart, LogMessage, SealedVector};
use mnemon::crypt::{sealed_head, SEALED_VERSION};
use mnemon::replication::DataDir;
use mnemon::storage::{fnv1a64, CachedVector, LogStore, SledStore, VectorEntry};
use mnemon::{event::decode_record, EventBody};
use mnemon::{Error, Result};
use mnemon::{MemoryId, Namespace, Seq};

/// Records per local append while catching up.
const BATCH: usize = 4096;
/// sled page cache while catching up (bytes).
const CACHE_BYTES: u64 = 16 << 20;

/// What a catch-up did.
#[derive(Clone, Debug, Default, PartialEq, Eq, serde::Serialize)]
pub struct CatchUp {
    /// Stream messages read.
    pub messages: u64,
    /// Event records appended to the local copy.
    pub records: u64,
    /// True when the local copy followed an older generation (or another
    /// namespace) and was deleted and rebuilt from the stream.
    pub rebuilt: bool,
    /// The local copy's last `Seq` afterwards.
    pub last_seq: Seq,
    /// Milliseconds the catch-up took.
    pub millis: u64,
}

/// Brings the copy at `dir` up to message `up_to` of `log`.
///
/// # Errors
/// [`Error::Corrupted`] when the copy disagrees with the log (a record
/// differs, or the copy holds events the log does not);
/// [`Error::Unavailable`] when the stream cannot be read; local I/O errors;
/// [`Error::Locked`] when an engine has the copy open.
pub(crate) fn catch_up(conn: &Conn, log: &NsLog, dir: &Path, ns: &Namespace, up_to: u64) -> Result<CatchUp> {
    let started = Instant::now();
    let mut report = CatchUp::default();
    let (data_dir, store) = open_copy(dir, ns, log, &mut report)?;
    let local_last = store.last_seq()?.unwrap_or(0);
    let from = match store.meta_get(META_POSITION)?.and_then(|b| Position::decode(&b)) {
        Some(p) if p.stream == log.name && p.event_seq == local_last && p.stream_seq <= up_to => p.stream_seq + 1,
        _ => 1,
    };
    let mut apply =
        Apply { store: &store, local_last, next: local_last + 1, batch: Vec::new(), vectors: Vec::new(), seen_last: 0 };
    let mut pending: Vec<(GroupPart, Vec<SealedVector>)> = Vec::new();
    conn.block_on(log.read(from, up_to, conn.timeout * 4, |seq, payload| {
        report.messages += 1;
        let (p, sealed) = match wire::decode(seq, payload)? {
            LogMessage::Takeover { .. } => {
                pending.clear();
                return Ok(());
            }
            LogMessage::Group(p) => (p, Vec::new()),
            LogMessage::SealedGroup { part, vectors } => (part, vectors),
        };
        if p.part == 0 {
            pending.clear();
        } else if pending.last().is_none_or(|(q, _)| q.group_first != p.group_first || q.part + 1 != p.part) {
            // A later part without its predecessors: the group started
            // before `from` or was cut short; void.
            pending.clear();
            return Ok(());
        }
        let complete = p.part + 1 == p.parts;
        pending.push((p, sealed));
        if complete {
            for (part, sealed) in pending.drain(..) {
                apply.part(part, sealed)?;
            }
        }
        Ok(())
    }))?;
    apply.flush()?;
    let copy_last = apply.next - 1;
    if from == 1 && local_last > apply.seen_last {
        return Err(Error::Corrupted {
            seq: apply.seen_last + 1,
            reason: format!(
                "the local copy of {ns} holds events up to {local_last}; the log {} only to {}",
                log.name, apply.seen_last
            ),
        });
    }
    report.records = copy_last - local_last;
    report.last_seq = copy_last;
    let pos = Position { stream: log.name.clone(), stream_seq: up_to, event_seq: copy_last };
    store.meta_put(META_POSITION, &pos.encode())?;
    store.flush()?;
    drop(store);
    drop(data_dir);
    report.millis = u64::try_from(started.elapsed().as_millis()).unwrap_or(u64::MAX);
    Ok(report)
}

/// Opens the copy, deleting it first when it belongs to another namespace
/// or an older generation of the stream.
fn open_copy(dir: &Path, ns: &Namespace, log: &NsLog, report: &mut CatchUp) -> Result<(DataDir, SledStore)> {
    let data_dir = DataDir::open(dir)?;
    let store = SledStore::open(&data_dir.current_path(), CACHE_BYTES)?;
    let owner = store.meta_get(META_NAMESPACE)?;
    let stream = store.meta_get(META_POSITION)?.and_then(|b| Position::decode(&b)).map(|p| p.stream);
    let empty = store.is_empty();
    let current = owner.as_deref() == Some(ns.as_str().as_bytes()) && stream.as_deref() == Some(log.name.as_str());
    if current || (empty && owner.is_none()) {
        if owner.is_none() {
            store.meta_put(META_NAMESPACE, ns.as_str().as_bytes())?;
        }
        return Ok((data_dir, store));
    }
    drop(store);
    drop(data_dir);
    std::fs::remove_dir_all(dir)?;
    report.rebuilt = true;
    let data_dir = DataDir::open(dir)?;
    let store = SledStore::open(&data_dir.current_path(), CACHE_BYTES)?;
    store.meta_put(META_NAMESPACE, ns.as_str().as_bytes())?;
    Ok((data_dir, store))
}

/// Checks a record from the stream before it is stored: a plain one
/// decodes, a sealed one (an encrypted namespace's) has a sound envelope.
fn check_record(seq: Seq, bytes: &[u8]) -> Result<()> {
    if bytes.first() == Some(&SEALED_VERSION) {
        sealed_head(seq, bytes).map(|_| ())
    } else {
        decode_record(seq, bytes).map(|_| ())
    }
}

struct Apply<'a> {
    store: &'a SledStore,
    local_last: Seq,
    next: Seq,
    batch: Vec<(Seq, Vec<u8>)>,
    /// Plain vectors of the records in `batch`, written with them in one
    /// sled batch (a cache: each is checked against its memory on use).
    vectors: Vec<VectorEntry>,
    /// Highest `Seq` the stream showed.
    seen_last: Seq,
}

impl Apply<'_> {
    fn part(&mut self, p: GroupPart, sealed: Vec<SealedVector>) -> Result<()> {
        for (i, bytes) in p.records.into_iter().enumerate() {
            let seq = p.first + u64::try_from(i).map_err(|_| Error::invalid("group", "too long"))?;
            self.seen_last = self.seen_last.max(seq);
            if seq <= self.local_last {
                self.compare(seq, &bytes)?;
            } else if seq == self.next {
                check_record(seq, &bytes)?;
                self.batch.push((seq, bytes));
                self.next += 1;
            } else {
                return Err(Error::Corrupted {
                    seq: self.next,
                    reason: format!("the log jumps from seq {} to {seq}", self.next - 1),
                });
            }
        }
        let model_hash = fnv1a64(p.model.as_bytes());
        for v in p.vectors {
            if v.id > self.local_last && v.id < self.next {
                self.vectors.push(VectorEntry {
                    id: MemoryId(v.id),
                    model_hash,
                    cached: CachedVector { content_hash: v.content_hash, vector: v.vector },
                });
            }
        }
        let new_sealed: Vec<(MemoryId, Vec<u8>)> = sealed
            .into_iter()
            .filter(|v| v.id > self.local_last && v.id < self.next)
            .map(|v| (MemoryId(v.id), v.value))
            .collect();
        if !new_sealed.is_empty() {
            self.store.put_sealed_vectors(&p.model, &new_sealed)?;
        }
        if self.batch.len() >= BATCH {
            self.flush()?;
        }
        Ok(())
    }

    /// A record the copy already has must be the log's, or its tombstone
    /// (the copy was compacted before the log was rewritten).
    fn compare(&self, seq: Seq, bytes: &[u8]) -> Result<()> {
        let local = self.store.scan(seq, seq).next().transpose()?.map(|(_, b)| b);
        let Some(local) = local else {
            return Err(Error::Corrupted { seq, reason: "the local copy lacks a record below its last".into() });
        };
        if local == bytes {
            return Ok(());
        }
        let differs = || Error::Corrupted { seq, reason: "the local copy differs from the log of record".into() };
        if local.first() == Some(&SEALED_VERSION) {
            return Err(differs());
        }
        let mine = decode_record(seq, &local)?;
        // (namespace, time in microseconds, whether it holds content).
        let (ns, time_us, content) = if bytes.first() == Some(&SEALED_VERSION) {
            let h = sealed_head(seq, bytes)?;
            (h.ns, h.time_us, matches!(h.kind, 0 | 1))
        } else {
            let theirs = decode_record(seq, bytes)?;
            let content = matches!(theirs.body, EventBody::Observed(_) | EventBody::Extracted(_));
            (theirs.ns.as_str().to_string(), theirs.time.timestamp_micros(), content)
        };
        let erased = matches!(mine.body, EventBody::Tombstone(_))
            && content
            && mine.time.timestamp_micros() == time_us
            && mine.ns.as_str() == ns;
        if erased {
            return Ok(());
        }
        Err(differs())
    }

    fn flush(&mut self) -> Result<()> {
        if !self.vectors.is_empty() {
            self.store.put_vector_entries(&self.vectors)?;
            self.vectors.clear();
        }
        if !self.batch.is_empty() {
            self.store.append(&self.batch)?;
            self.batch.clear();
        }
        Ok(())
    }
}

//! Backup: a consistent copy of a live store, taken on the writer thread.

use std::path::{Path, PathBuf};
use std::time::Instant;

use schemars::JsonSchema;
use serde::{Deserialize, Serialize};

use crate::engine::Engine;
use crate::error::{Error, Result};
use crate::event::{decode_record, encode_record, EventBody, Tombstone};
use crate::log::copy::{check_target, CopyKind, CopyRecord, LogDigest, Staging};
use crate::log::{DataDir, SledStore};
use crate::portability::{forgotten_ids, tree_bytes};
use crate::types::Seq;
use crate::writer::{Command, Shared};

/// Records per append batch while copying.
const COPY_BATCH: usize = 4096;
/// Vector-cache entries per batch while copying.
const VECTOR_BATCH: usize = 1024;

/// What [`Engine::backup`] wrote.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize, JsonSchema)]
pub struct BackupReport {
    /// The backup's data directory (open it with `mnemon --data DIR`).
    pub dir: PathBuf,
    /// The log position the backup holds: every event up to it, none after.
    pub last_seq: Seq,
    /// Tombstones in the backup: forgotten payloads, whether an earlier
    /// compaction already replaced them or the backup did (as compaction
    /// would).
    pub tombstones: u64,
    /// Cached vectors copied.
    pub vectors: u64,
    /// Bytes of the backup's files.
    pub bytes: u64,
    /// The store's digest at `last_seq`: a store opened on the backup has
    /// the same one.
    pub digest: String,
    /// Time the copy took, in milliseconds (writes waited meanwhile).
    pub elapsed_ms: u64,
}

impl Engine {
    /// Writes a consistent copy of the store into `dir` (a new or empty
    /// directory): a complete data directory that `mnemon check` accepts
    /// and `mnemon --data DIR` opens, holding exactly the log up to the
    /// position the backup was taken at.
    ///
    /// The copy runs on the writer thread, so it is a prefix of the log:
    /// writes queue while it runs (reads go on) and are acknowledged after
    /// it, in the live store only. Payloads of forgotten memories and
    /// observations are copied as tombstones, as compaction writes them, so
    /// a backup never holds erased content; its digest equals the live
    /// store's at that position. Cached vectors of surviving memories are
    /// copied, so opening the backup does not re-embed. A
    /// [`crate::log::RESTORE_MISMATCH`] mark is copied with them.
    ///
    /// The copy is whole or absent: it is written into `.NAME.mnemon-partial`
    /// beside `dir`, sealed with a completion record (`COPY`: records, last
    /// `Seq`, SHA-256 of the log) and only then renamed onto `dir`. A
    /// backup killed midway leaves only that staging directory, which never
    /// opens as a store and which the next backup into `dir` removes.
    ///
    /// # Errors
    /// [`Error::InvalidInput`] when `dir` exists and is not an empty
    /// directory, or lies inside the store's own data directory, or its
    /// staging path holds something no copy wrote; [`Error::Locked`] when
    /// another backup into `dir` is running; [`Error::Poisoned`] /
    /// [`Error::Closed`]; [`Error::Io`] / [`Error::Storage`] when the disk
    /// refuses (the staging directory is removed, `dir` is left as it was);
    /// [`Error::Corrupted`] for a record that does not decode.
    ///
    /// ```
    /// # fn main() -> mnemon::Result<()> {
    /// use mnemon::{Engine, Namespace, NewMemory};
    /// let dir = tempfile::tempdir()?;
    /// let engine = Engine::open(dir.path().join("live"))?;
    /// engine.remember(&Namespace::new("u1")?, NewMemory::new("Prefers window seats"))?;
    /// let report = engine.backup(dir.path().join("backup"))?;
    /// let copy = Engine::open(dir.path().join("backup"))?;
    /// assert_eq!(copy.digest(), report.digest);
    /// # Ok(()) }
    /// ```
    pub fn backup(&self, dir: impl AsRef<Path>) -> Result<BackupReport> {
        if let Some(msg) = self.shared().poison_message() {
            return Err(Error::Poisoned(msg));
        }
        let target = dir.as_ref().to_path_buf();
        let root = self.config().path.clone();
        if let (Ok(t), Ok(r)) = (absolute(&target), std::fs::canonicalize(&root)) {
            if t.starts_with(&r) {
                return Err(Error::invalid("dir", format!("{} lies inside the store {}", t.display(), r.display())));
            }
        }
        check_target("dir", &target)?;
        let cache_bytes = self.config().cache_bytes;
        // A store restored from a file whose digest differed keeps that
        // mark in its copies, so `check` on a backup warns as on the store.
        let mismatch = std::fs::read(root.join(crate::log::RESTORE_MISMATCH)).ok();
        let (tx, rx) = crossbeam_channel::bounded(1);
        let dest = target.clone();
        self.send(Command::Exclusive {
            f: Box::new(move |ctx| {
                let _ = tx.send(write_backup(ctx.shared, &dest, cache_bytes, mismatch.as_deref()));
            }),
        })?;
        match rx.recv() {
            Ok(r) => r,
            Err(_) => Err(self.shared().poison_message().map_or(Error::Closed, Error::Poisoned)),
        }
    }
}

/// An absolute form of `p` (its parent canonicalised when it exists), for
/// comparing against the store's directory.
fn absolute(p: &Path) -> std::io::Result<PathBuf> {
    if let Ok(c) = std::fs::canonicalize(p) {
        return Ok(c);
    }
    let parent = p.parent().filter(|x| !x.as_os_str().is_empty()).unwrap_or(Path::new("."));
    let name = p.file_name().ok_or_else(|| std::io::Error::other("no file name"))?;
    Ok(std::fs::canonicalize(parent)?.join(name))
}

/// Runs on the writer thread (inside `Command::Exclusive`): nothing writes
/// meanwhile, so `visible` is the last durable event and the copy a prefix.
/// The copy is written into a staging directory beside `target` and renamed
/// onto it only when whole ([`Staging`]); a failure removes the staging
/// directory and leaves `target` as it was.
fn write_backup(shared: &Shared, target: &Path, cache_bytes: u64, mismatch: Option<&[u8]>) -> Result<BackupReport> {
    let started = Instant::now();
    let (last_seq, digest, forgotten_m, forgotten_o) = {
        let state = shared.state.read();
        let (m, o) = forgotten_ids(&state);
        (state.visible, state.digest(), m, o)
    };
    let staging = Staging::begin("dir", target, CopyKind::Backup, last_seq)?;
    let copied = copy_into(shared, &staging, last_seq, &forgotten_m, &forgotten_o, cache_bytes, mismatch);
    let (tombstones, vectors) = match copied {
        Ok(counts) => counts,
        Err(e) => {
            staging.abandon();
            return Err(e);
        }
    };
    staging.commit("dir")?;
    Ok(BackupReport {
        dir: target.to_path_buf(),
        last_seq,
        tombstones,
        vectors,
        bytes: tree_bytes(target),
        digest,
        elapsed_ms: u64::try_from(started.elapsed().as_millis()).unwrap_or(u64::MAX),
    })
}

/// Writes the log up to `last_seq`, the vectors and `meta` into the staging
/// directory and seals it with its completion record. Returns the
/// tombstones and vectors written.
fn copy_into(
    shared: &Shared,
    staging: &Staging,
    last_seq: Seq,
    forgotten_m: &std::collections::HashSet<u64>,
    forgotten_o: &std::collections::HashSet<u64>,
    cache_bytes: u64,
    mismatch: Option<&[u8]>,
) -> Result<(u64, u64)> {
    let dest = staging.dir();
    let source = shared.store();
    // Held until the copy is sealed, so a second copy into the same target
    // sees this one running and leaves it alone.
    let layout = DataDir::open(dest)?;
    let store = crate::log::wrap(SledStore::open(&layout.current_path(), cache_bytes)?, shared.keys.as_ref());
    let mut tombstones = 0u64;
    let mut expected = 1u64;
    let mut log_digest = LogDigest::default();
    let mut batch: Vec<(Seq, Vec<u8>)> = Vec::with_capacity(COPY_BATCH);
    // Records as stored: an encrypted store's backup holds them sealed
    // under the same keys (and no keyring), so a shred reaches it.
    for r in source.scan_raw(1, last_seq) {
        let (seq, bytes) = r?;
        if seq != expected {
            return Err(Error::Corrupted { seq: expected, reason: format!("log has a gap: next record is seq {seq}") });
        }
        expected += 1;
        let record = if forgotten_m.contains(&seq) || forgotten_o.contains(&seq) {
            let opened = match source.scan(seq, seq).next() {
                Some(r) => r?.1,
                None => return Err(Error::Corrupted { seq, reason: "record vanished during backup".into() }),
            };
            let mut ev = decode_record(seq, &opened)?;
            let was = match &ev.body {
                EventBody::Observed(_) => Some("observed"),
                EventBody::Extracted(_) => Some("extracted"),
                _ => None,
            };
            match was {
                Some(w) => {
                    tombstones += 1;
                    ev.body = EventBody::Tombstone(Tombstone { was: w.to_string() });
                    encode_record(&ev)?
                }
                None => {
                    // Already a tombstone: compaction erased it earlier.
                    if matches!(ev.body, EventBody::Tombstone(_)) {
                        tombstones += 1;
                    }
                    opened
                }
            }
        } else {
            bytes
        };
        log_digest.add(seq, &record);
        batch.push((seq, record));
        if batch.len() >= COPY_BATCH {
            store.append_raw(&batch)?;
            batch.clear();
        }
    }
    if expected != last_seq + 1 {
        return Err(Error::Corrupted { seq: expected, reason: format!("log ends before seq {last_seq}") });
    }
    if !batch.is_empty() {
        store.append_raw(&batch)?;
    }
    let mut vectors = 0u64;
    let mut vbatch = Vec::with_capacity(VECTOR_BATCH);
    for e in source.vector_entries() {
        let e = e?;
        if forgotten_m.contains(&e.id.0) || e.id.0 > last_seq {
            continue;
        }
        vbatch.push(e);
        vectors += 1;
        if vbatch.len() >= VECTOR_BATCH {
            store.put_vector_entries(&vbatch)?;
            vbatch.clear();
        }
    }
    if !vbatch.is_empty() {
        store.put_vector_entries(&vbatch)?;
    }
    for (k, v) in source.meta_entries()? {
        store.meta_put(&k, &v)?;
    }
    store.flush()?;
    drop(store);
    crate::log::record_high_water(dest, last_seq)?;
    if let Some(note) = mismatch {
        std::fs::write(dest.join(crate::log::RESTORE_MISMATCH), note)?;
    }
    // Everything the record vouches for is durable before it is written.
    crate::log::sync_tree(dest)?;
    let record = CopyRecord {
        kind: CopyKind::Backup,
        records: last_seq,
        last_seq,
        generation: layout.current_generation(),
        log_sha256: log_digest.finish(),
    };
    staging.seal(&record)?;
    drop(layout);
    Ok((tombstones, vectors))
}

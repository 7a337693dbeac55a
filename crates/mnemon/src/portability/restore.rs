//! Restore: a new store from a store export.

use std::collections::HashMap;
use std::fs::File;
use std::io::{BufRead, BufReader};
use std::path::{Path, PathBuf};

use schemars::JsonSchema;
use serde::{Deserialize, Serialize};

use crate::engine::Engine;
use crate::error::{Error, Result};
use crate::event::{decode_record, encode_record, EventBody, STORE_FORMAT_VERSION};
use crate::log::copy::{check_target, CopyKind, CopyRecord, LogDigest, Staging};
use crate::log::RESTORE_MISMATCH;
use crate::log::{content_hash, DataDir, LogStore, SledStore};
use crate::portability::export::{ExportHeader, ExportLine, EXPORT_VERSION};
use crate::types::Seq;

/// Records per append batch while restoring.
const RESTORE_BATCH: usize = 4096;
/// sled page cache while restoring, in bytes.
const RESTORE_CACHE_BYTES: u64 = 64 << 20;

/// What [`restore`] rebuilt.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize, JsonSchema)]
pub struct RestoreReport {
    /// The new store's data directory.
    pub dir: PathBuf,
    /// Events written (`1..=last_seq`).
    pub last_seq: Seq,
    /// Tombstones among them (payloads forgotten before the export).
    pub tombstones: u64,
    /// Cached vectors written.
    pub vectors: u64,
    /// Model id of the vectors (recorded in the store, so `--embedder auto`
    /// keeps it).
    pub model_id: String,
    /// The digest the export recorded.
    pub expected_digest: String,
    /// The digest of the restored store once opened ([`RestoreReport::verify`]).
    pub digest: Option<String>,
    /// True when the two digests are equal.
    pub digest_matches: Option<bool>,
    /// For an export of an encrypted store: namespaces whose data key was
    /// shredded after the export was taken. They restore as erased, so the
    /// digest differs from the export's without the file being damaged,
    /// and the store is not marked ([`RESTORE_MISMATCH`]). Left out of
    /// JSON when empty.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub shredded: Vec<String>,
}

impl RestoreReport {
    /// Compares the digest of `engine` (opened on the restored store) with
    /// the export's and records both. When they differ (the file was
    /// changed or damaged after it was exported, yet every line still
    /// checks), the store is kept, since it holds what the file holds, but
    /// marked: a [`RESTORE_MISMATCH`] file in its data directory names both
    /// digests, and [`Engine::check`] reports it
    /// ([`crate::CheckReport::restore_mismatch`]) until someone who trusts
    /// the file deletes it.
    pub fn verify(&mut self, engine: &Engine) -> bool {
        let d = engine.digest();
        let ok = d == self.expected_digest;
        self.shredded = engine.open_report().shredded.clone();
        if !ok && self.shredded.is_empty() {
            let note = format!(
                "restored from an export whose digest was {}, but the restored store's is {}: the file was \
                 changed or damaged after export. Use another backup or export, or delete this file if you trust \
                 the file as it is.\n",
                self.expected_digest, d
            );
            let _ = std::fs::write(self.dir.join(RESTORE_MISMATCH), note);
        }
        self.digest = Some(d);
        self.digest_matches = Some(ok);
        ok
    }
}

fn bad(line: u64, reason: impl std::fmt::Display) -> Error {
    Error::invalid("from", format!("line {line}: {reason}"))
}

/// Rebuilds a store in `into` (a new or empty directory) from the store
/// export at `from` ([`Engine::export`]): every event under its own `Seq`,
/// time and namespace, tombstones as tombstones (forgotten content stays
/// absent), and the exported vectors in the vector cache. Open the result
/// and call [`RestoreReport::verify`] to compare digests.
///
/// Every line is checked before it is written (the header's version; each
/// event's encoding, gap-free `Seq` from 1 and non-decreasing time; each
/// vector's memory, dimension and finiteness). The store is written into
/// `.NAME.mnemon-partial` beside `into`, sealed with a completion record
/// (`COPY`) and only then renamed onto `into`, so `into` is whole or
/// absent: on any error, or a kill, nothing is left at `into`, and the
/// next restore into it removes the staging directory.
///
/// # Errors
/// [`Error::InvalidInput`] (field `from`, naming the line) for a file that
/// is not a store export — including the per-namespace audit export of
/// `mnemon log`, which cannot rebuild a store — or a bad line; field
/// `into` when the target is not empty or its staging path holds
/// something no copy wrote; [`Error::Locked`] when another restore into
/// `into` is running; [`Error::IncompatibleFormat`] for an export of a
/// newer version; [`Error::Io`] / [`Error::Storage`].
pub fn restore(from: &Path, into: &Path) -> Result<RestoreReport> {
    let (mut report, staging) = restore_staged(from, into)?;
    staging.commit("into")?;
    report.dir = into.to_path_buf();
    Ok(report)
}

/// [`restore`], then opens the restored store with `open` (which brings the
/// embedder the store records) and compares digests
/// ([`RestoreReport::verify`]), all before the store is renamed onto
/// `into`. A store that cannot be opened (its model is not installed here,
/// say) is removed, as a failed restore is, since nothing would tell a
/// later user that it was never verified, and the error's message
/// (embedder, format or damaged-record errors) ends with
/// [`UNVERIFIED_RESTORE`]. A store found locked (another process opened
/// the staging directory meanwhile) is left to that process.
///
/// # Errors
/// Those of [`restore`]; then whatever `open` returns.
pub fn restore_verified(from: &Path, into: &Path, open: impl FnOnce(&Path) -> Result<Engine>) -> Result<RestoreReport> {
    let (mut report, staging) = restore_staged(from, into)?;
    let engine = match open(staging.dir()) {
        Ok(engine) => engine,
        Err(e) => {
            if matches!(e, Error::Locked { .. }) {
                return Err(e);
            }
            staging.abandon();
            return Err(match e {
                Error::Embedder(m) => Error::Embedder(m.append(&format!("; {UNVERIFIED_RESTORE}"))),
                Error::IncompatibleFormat(m) => Error::IncompatibleFormat(format!("{m}; {UNVERIFIED_RESTORE}")),
                Error::Corrupted { seq, reason } => {
                    Error::Corrupted { seq, reason: format!("{reason}; {UNVERIFIED_RESTORE}") }
                }
                other => other,
            });
        }
    };
    report.verify(&engine);
    if let Err(e) = engine.close() {
        staging.abandon();
        return Err(e);
    }
    staging.commit("into")?;
    report.dir = into.to_path_buf();
    Ok(report)
}

/// Checks the target and the export's header, then writes and seals the
/// store in its staging directory (removed again on any error). The
/// report's `dir` is the staging directory.
fn restore_staged(from: &Path, into: &Path) -> Result<(RestoreReport, Staging)> {
    if from.is_dir() {
        return Err(Error::invalid(
            "from",
            format!(
                "{} is a directory: restore reads an export file (a backup directory is a store as it is: open it \
                 with --data, or copy it)",
                from.display()
            ),
        ));
    }
    let file = File::open(from).map_err(|e| Error::io_at(from, e))?;
    check_target("into", into)?;
    let mut reader = BufReader::new(file);
    let header = read_header(&mut reader)?;
    let staging = Staging::begin("into", into, CopyKind::Restore, header.last_seq)?;
    match write_restore(reader, header, &staging) {
        Ok(report) => Ok((report, staging)),
        Err(e) => {
            staging.abandon();
            Err(e)
        }
    }
}

/// What a restore that could not open its result adds to the error: the
/// store was removed, and how to go on.
pub const UNVERIFIED_RESTORE: &str = "the restored store could not be opened to compare its digest with the \
     export's, so it was removed; install the model the export names (`mnemon model install`), or fix what \
     the error names, and restore again";

/// Reads and checks line 1 of a store export.
fn read_header(reader: &mut impl BufRead) -> Result<ExportHeader> {
    let mut text = String::new();
    if reader.read_line(&mut text)? == 0 {
        return Err(bad(1, "empty file: not a store export"));
    }
    let header: ExportHeader = serde_json::from_str(text.trim_end()).map_err(|e| {
        bad(1, format!("not a store export header ({e}); the audit export of `mnemon log` covers one namespace and cannot rebuild a store: write one with `mnemon export FILE`"))
    })?;
    if header.mnemon_export != EXPORT_VERSION {
        return Err(Error::IncompatibleFormat(format!(
            "store export version {}; this build reads version {EXPORT_VERSION}",
            header.mnemon_export
        )));
    }
    Ok(header)
}

/// Writes the store the export holds into the staging directory and seals
/// it with its completion record.
fn write_restore(mut reader: impl BufRead, header: ExportHeader, staging: &Staging) -> Result<RestoreReport> {
    let into = staging.dir();
    let mut text = String::new();
    let layout = DataDir::open(into)?;
    let store = SledStore::open(&layout.current_path(), RESTORE_CACHE_BYTES)?;
    store.meta_put("format_version", &[STORE_FORMAT_VERSION])?;
    store.meta_put("embedder.model_id", header.model_id.as_bytes())?;
    store.meta_put("embedder.dim", &(header.dim as u64).to_le_bytes())?;
    if let Some(id) = &header.sealed {
        let id = hex::decode(id).map_err(|_| bad(1, "sealed: not a keyring id"))?;
        store.meta_put(crate::crypt::META_KEYRING, &id)?;
    }
    let model_hash = crate::log::fnv1a64(header.model_id.as_bytes());

    let mut report = RestoreReport {
        dir: into.to_path_buf(),
        last_seq: 0,
        tombstones: 0,
        vectors: 0,
        model_id: header.model_id.clone(),
        expected_digest: header.digest.clone(),
        digest: None,
        digest_matches: None,
        shredded: Vec::new(),
    };
    let mut contents: HashMap<u64, u64> = HashMap::new();
    let mut last_time = i64::MIN;
    let mut batch: Vec<(Seq, Vec<u8>)> = Vec::with_capacity(RESTORE_BATCH);
    let mut log_digest = LogDigest::default();
    let mut line_no = 1u64;
    loop {
        text.clear();
        if reader.read_line(&mut text)? == 0 {
            break;
        }
        line_no += 1;
        let t = text.trim_end();
        if t.is_empty() {
            continue;
        }
        let line: ExportLine = serde_json::from_str(t).map_err(|e| bad(line_no, e))?;
        match line {
            ExportLine::Event(ev) => {
                let expected = report.last_seq + 1;
                if ev.seq != expected {
                    return Err(bad(
                        line_no,
                        format!("event seq {}, expected {expected} (the log is gap-free)", ev.seq),
                    ));
                }
                let micros = ev.time.timestamp_micros();
                if micros < last_time {
                    return Err(bad(line_no, "event time goes back (the log's times never decrease)"));
                }
                last_time = micros;
                match &ev.body {
                    EventBody::Extracted(x) => {
                        contents.insert(ev.seq, content_hash(&x.content));
                    }
                    EventBody::Tombstone(_) => report.tombstones += 1,
                    _ => {}
                }
                let record = encode_record(&ev)?;
                // The decoder's own checks (ranges, sizes) apply to what we write.
                decode_record(ev.seq, &record).map_err(|e| bad(line_no, e))?;
                log_digest.add(ev.seq, &record);
                batch.push((ev.seq, record));
                report.last_seq = ev.seq;
                if batch.len() >= RESTORE_BATCH {
                    store.append(&batch)?;
                    batch.clear();
                }
            }
            ExportLine::Sealed(line) => {
                let expected = report.last_seq + 1;
                if header.sealed.is_none() {
                    return Err(bad(line_no, "a sealed record in an export whose header names no keyring"));
                }
                if line.seq != expected {
                    return Err(bad(
                        line_no,
                        format!("event seq {}, expected {expected} (the log is gap-free)", line.seq),
                    ));
                }
                let record = hex::decode(&line.record).map_err(|e| bad(line_no, e))?;
                // Checked as far as it can be without the key: envelope,
                // checksum, position.
                match crate::crypt::sealed_kind(line.seq, &record).map_err(|e| bad(line_no, e))? {
                    Some(1) => {
                        contents.insert(line.seq, 0);
                    }
                    Some(_) => {}
                    None => {
                        if matches!(
                            decode_record(line.seq, &record).map_err(|e| bad(line_no, e))?.body,
                            EventBody::Tombstone(_)
                        ) {
                            report.tombstones += 1;
                        }
                    }
                }
                log_digest.add(line.seq, &record);
                batch.push((line.seq, record));
                report.last_seq = line.seq;
                if batch.len() >= RESTORE_BATCH {
                    store.append(&batch)?;
                    batch.clear();
                }
            }
            ExportLine::SealedVector(v) => {
                if !contents.contains_key(&v.id.0) {
                    return Err(bad(line_no, format!("vector of {} which is no memory of the export", v.id)));
                }
                let value = hex::decode(&v.value).map_err(|e| bad(line_no, e))?;
                if !batch.is_empty() {
                    store.append(&batch)?;
                    batch.clear();
                }
                store.raw_vector_put(crate::log::SledStore::vector_key_hashed(v.id, model_hash), value)?;
                report.vectors += 1;
            }
            ExportLine::Vector(v) => {
                let Some(&hash) = contents.get(&v.id.0) else {
                    return Err(bad(line_no, format!("vector of {} which is no memory of the export", v.id)));
                };
                if v.values.len() != header.dim {
                    return Err(bad(
                        line_no,
                        format!("vector of {} components, the export says {}", v.values.len(), header.dim),
                    ));
                }
                if v.values.iter().any(|x| !x.is_finite()) {
                    return Err(bad(line_no, "vector with a component that is not finite"));
                }
                store.put_vectors(&header.model_id, &[(v.id, hash, v.values.as_slice())])?;
                report.vectors += 1;
            }
        }
    }
    if !batch.is_empty() {
        store.append(&batch)?;
    }
    if report.last_seq != header.last_seq {
        return Err(bad(
            line_no,
            format!(
                "the export ends at event {}, its header says {}: the file is cut short",
                report.last_seq, header.last_seq
            ),
        ));
    }
    store.flush()?;
    drop(store);
    crate::log::record_high_water(into, report.last_seq)?;
    // Everything the record vouches for is durable before it is written.
    crate::log::sync_tree(into)?;
    staging.seal(&CopyRecord {
        kind: CopyKind::Restore,
        records: report.last_seq,
        last_seq: report.last_seq,
        generation: layout.current_generation(),
        log_sha256: log_digest.finish(),
    })?;
    drop(layout);
    Ok(report)
}

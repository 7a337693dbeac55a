//! The store export: every event of every namespace and the cached vectors
//! of the surviving memories, as JSON lines (docs/FORMAT.md, "Store
//! export"). What [`crate::portability::restore`] rebuilds a store from.

use std::fs::File;
use std::io::{BufWriter, Write};
use std::path::{Path, PathBuf};
use std::time::Instant;

use chrono::{DateTime, Utc};
use schemars::JsonSchema;
use serde::{Deserialize, Serialize};

use crate::engine::Engine;
use crate::error::{Error, Result};
use crate::event::{decode_record, Event, EventBody, Tombstone};
use crate::log::{content_hash, fnv1a64};
use crate::portability::forgotten_ids;
use crate::types::{MemoryId, Seq};
use crate::writer::{Command, Shared};

/// Version of the store export written by this build (the header's
/// `mnemon_export`).
pub const EXPORT_VERSION: u32 = 1;

/// The first line of a store export.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct ExportHeader {
    /// Export format version ([`EXPORT_VERSION`]).
    pub mnemon_export: u32,
    /// The last event exported: the export holds events `1..=last_seq`.
    pub last_seq: Seq,
    /// The store's digest at `last_seq` ([`Engine::digest`]).
    pub digest: String,
    /// Model id of the exported vectors.
    pub model_id: String,
    /// Their dimension.
    pub dim: usize,
    /// When the export was taken.
    pub exported_at: DateTime<Utc>,
    /// For an export of an encrypted store: the id of the keyring its
    /// records are sealed under (32 hex digits). Its events and vectors
    /// are then `sealed` and `sealed_vector` lines. Absent otherwise.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub sealed: Option<String>,
}

/// One line after the header.
// Lines are read and written one at a time, so the size of the largest
// variant costs one value, not one per line.
#[allow(clippy::large_enum_variant)]
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "snake_case", deny_unknown_fields)]
pub enum ExportLine {
    /// An event, as the log holds it (forgotten payloads as tombstones).
    Event(Event),
    /// The cached vector of a surviving memory under the header's model.
    Vector(ExportVector),
    /// An event of an encrypted store, as its log holds it (sealed, or a
    /// plain record for kinds that hold ids only and for tombstones).
    Sealed(SealedLine),
    /// A cached vector of an encrypted store, sealed as its cache holds it.
    SealedVector(SealedVectorLine),
}

/// A record of an encrypted store in its export.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct SealedLine {
    /// Its log position.
    pub seq: Seq,
    /// The record's bytes as the log stores them, in lower-case hex.
    pub record: String,
}

/// A sealed vector-cache value in an export.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct SealedVectorLine {
    /// The memory.
    pub id: MemoryId,
    /// The value as the cache stores it, in lower-case hex.
    pub value: String,
}

/// A memory's vector in the export.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct ExportVector {
    /// The memory.
    pub id: MemoryId,
    /// Its components (`dim` finite numbers).
    pub values: Vec<f32>,
}

/// What [`Engine::export`] wrote.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize, JsonSchema)]
pub struct ExportReport {
    /// The file written.
    pub path: PathBuf,
    /// The header (last position, digest, model).
    pub header: ExportHeader,
    /// Events written.
    pub events: u64,
    /// Tombstones in the export: forgotten payloads, whether an earlier
    /// compaction already replaced them or the export did.
    pub tombstones: u64,
    /// Vectors written.
    pub vectors: u64,
    /// Bytes of the file.
    pub bytes: u64,
    /// Time the export took, in milliseconds (writes waited meanwhile).
    pub elapsed_ms: u64,
}

impl Engine {
    /// Writes the store export to `path` (a new file): a header line, then
    /// every event of every namespace in log order, then the cached vector
    /// of every surviving memory (see docs/FORMAT.md, "Store export").
    ///
    /// Payloads of forgotten memories and observations are written as
    /// tombstones, exactly as compaction leaves them in the log; every
    /// other event (including `Superseded` links and `Forgotten` events,
    /// which hold ids only) is written as it is, so a store restored from
    /// the export has the same digest as this one. It runs on the writer
    /// thread, so it is a consistent prefix of the log: writes wait while
    /// it runs; reads go on.
    ///
    /// Unlike the audit export ([`Engine::events`]), which is per namespace
    /// and shows links to forgotten versions as tombstones, this one holds
    /// what a replay needs.
    ///
    /// # Errors
    /// [`Error::InvalidInput`] (field `path`) when `path` exists or its
    /// directory does not; [`Error::Io`] when it cannot be written (the
    /// partial file is removed);
    /// [`Error::Corrupted`] for a record that does not decode;
    /// [`Error::Poisoned`] / [`Error::Closed`].
    pub fn export(&self, path: impl AsRef<Path>) -> Result<ExportReport> {
        if let Some(msg) = self.shared().poison_message() {
            return Err(Error::Poisoned(msg));
        }
        let path = path.as_ref().to_path_buf();
        let file = match File::options().write(true).create_new(true).open(&path) {
            Ok(f) => f,
            Err(e) if e.kind() == std::io::ErrorKind::AlreadyExists => {
                return Err(Error::invalid("path", format!("{} exists; name a new file", path.display())))
            }
            Err(e) if e.kind() == std::io::ErrorKind::NotFound => {
                let parent = path.parent().filter(|p| !p.as_os_str().is_empty()).unwrap_or(Path::new("."));
                return Err(Error::invalid(
                    "path",
                    format!("{}: the directory {} does not exist; create it first", path.display(), parent.display()),
                ));
            }
            Err(e) => return Err(Error::io_at(&path, e)),
        };
        let (model_id, dim) = (self.embedder().model_id().to_string(), self.embedder().dim());
        let (tx, rx) = crossbeam_channel::bounded(1);
        let dest = path.clone();
        self.send(Command::Exclusive {
            f: Box::new(move |ctx| {
                let _ = tx.send(write_export(ctx.shared, file, &dest, model_id, dim));
            }),
        })?;
        let result = match rx.recv() {
            Ok(r) => r,
            Err(_) => Err(self.shared().poison_message().map_or(Error::Closed, Error::Poisoned)),
        };
        if result.is_err() {
            let _ = std::fs::remove_file(&path);
        }
        result
    }
}

fn write_export(shared: &Shared, file: File, path: &Path, model_id: String, dim: usize) -> Result<ExportReport> {
    let started = Instant::now();
    let (header, forgotten_m, forgotten_o) = {
        let state = shared.state.read();
        let (m, o) = forgotten_ids(&state);
        let header = ExportHeader {
            mnemon_export: EXPORT_VERSION,
            last_seq: state.visible,
            digest: state.digest(),
            model_id,
            dim,
            exported_at: Utc::now(),
            sealed: shared.keys.as_ref().map(|k| hex::encode(k.ring.lock().id())),
        };
        (header, m, o)
    };
    let store = shared.store();
    let mut out = BufWriter::new(file);
    write_line(&mut out, &header)?;
    let (mut events, mut tombstones, mut vectors) = (0u64, 0u64, 0u64);
    // Content hashes of surviving memories, to export only vectors that
    // match their memory's content (a stale cache entry is not exported).
    let mut contents: std::collections::HashMap<u64, u64> = std::collections::HashMap::new();
    for r in store.scan(1, header.last_seq) {
        let (seq, bytes) = r?;
        events += 1;
        if seq != events {
            return Err(Error::Corrupted { seq: events, reason: format!("log has a gap: next record is seq {seq}") });
        }
        let mut ev: Event = decode_record(seq, &bytes)?;
        let erased = forgotten_m.contains(&seq) || forgotten_o.contains(&seq);
        match &ev.body {
            EventBody::Observed(_) | EventBody::Extracted(_) if erased => {
                ev.body = EventBody::Tombstone(Tombstone { was: ev.body.kind_name().to_string() });
                tombstones += 1;
            }
            EventBody::Extracted(x) => {
                contents.insert(seq, content_hash(&x.content));
            }
            // Already a tombstone: compaction erased it earlier.
            EventBody::Tombstone(_) => tombstones += 1,
            _ => {}
        }
        if let Some(sealed) = store.sealed() {
            // Sealed as stored, a tombstone as plain (it holds nothing).
            let record = if matches!(ev.body, EventBody::Tombstone(_)) {
                crate::event::encode_record(&ev)?
            } else {
                sealed.raw_record(seq)?
            };
            write_line(&mut out, &ExportLine::Sealed(SealedLine { seq, record: hex::encode(record) }))?;
            continue;
        }
        write_line(&mut out, &ExportLine::Event(ev))?;
    }
    if events != header.last_seq {
        return Err(Error::Corrupted { seq: events + 1, reason: format!("log ends before seq {}", header.last_seq) });
    }
    let model_hash = fnv1a64(header.model_id.as_bytes());
    for e in store.vector_entries() {
        let e = e?;
        if e.model_hash != model_hash || e.cached.vector.len() != header.dim {
            continue;
        }
        if contents.get(&e.id.0) != Some(&e.cached.content_hash) {
            continue;
        }
        vectors += 1;
        if let Some(sealed) = store.sealed() {
            let value = sealed.raw_vector(e.id, model_hash)?;
            write_line(&mut out, &ExportLine::SealedVector(SealedVectorLine { id: e.id, value: hex::encode(value) }))?;
            continue;
        }
        write_line(&mut out, &ExportLine::Vector(ExportVector { id: e.id, values: e.cached.vector }))?;
    }
    let file = out.into_inner().map_err(|e| Error::Io(e.into_error()))?;
    file.sync_all()?;
    let bytes = file.metadata()?.len();
    Ok(ExportReport {
        path: path.to_path_buf(),
        header,
        events,
        tombstones,
        vectors,
        bytes,
        elapsed_ms: u64::try_from(started.elapsed().as_millis()).unwrap_or(u64::MAX),
    })
}

fn write_line<T: Serialize>(out: &mut impl Write, v: &T) -> Result<()> {
    serde_json::to_writer(&mut *out, v).map_err(|e| Error::Io(std::io::Error::other(e)))?;
    out.write_all(b"\n")?;
    Ok(())
}

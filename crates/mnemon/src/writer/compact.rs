//! Compaction: rewrite the live generation into a fresh directory without
//! forgotten payloads, switch to it atomically, delete the old one, then
//! verify with the independent scanner.
//!
//! Steps, and what a crash after each leaves (see the module docs of
//! [`crate::erase`] for the recovery rule):
//!
//! 1. write and fsync `COMPACTING`;
//! 2. copy every event record of `gen-N` into `gen-M` (M = N+1, or one above any higher `gen-*` directory present): surviving records
//!    byte for byte (in an encrypted store, first give every namespace
//!    with a live data key a fresh one, durable in `KEYRING`, and re-seal
//!    its records under it; see `docs/guide/encryption.md`), forgotten `Observed`/`Extracted` payloads as a
//!    `Tombstone` under the same `Seq`, time and namespace; copy the cached
//!    vectors of surviving memories and all metadata (crash point `copy`);
//! 3. flush sled, fsync every file, then every directory (crash point
//!    `fsync` between the two);
//! 4. rename a new `CURRENT` into place (crash point `switch` after it);
//! 5. swap the engine's store, wait until no reader holds the old one, and
//!    delete `gen-N` file by file (crash point `delete` after the first);
//! 6. remove `COMPACTING`;
//! 7. scan every file under the data directory for the erased content,
//!    then complete the stored receipt with the scan's summary and flush.
//!
//! The stored receipt ([`CompactionReceipt`], `meta` key
//! `compaction.receipt.<generation>`) is written into the new generation
//! in step 2, before its flush and fsync, so it exists exactly when the
//! switch took effect; step 7 adds what only the end knows.

use std::collections::HashSet;
use std::fs;
use std::path::Path;
use std::sync::Arc;
use std::time::{Duration, Instant};

use chrono::Utc;
use parking_lot::Mutex;

use crate::erase::crash_point;
use crate::erase::stored;
use crate::erase::{verify_erasure, ErasurePatterns};
use crate::erase::{CompactionFigures, CompactionReceipt, ErasureReceipt};
use crate::error::{Error, Result};
use crate::event::{decode_record, encode_record, EventBody, Tombstone};
use crate::log::{sync_dir, DataDir, LogStore, SledStore};
use crate::projection::State;
use crate::types::{MemoryId, ObservationId, Seq};
use crate::writer::Shared;

/// Records per append batch while copying. sled 0.34 leaves more of its
/// log behind when one batch is large: filling a fresh database with 100k
/// 190-byte records and 50k 1.5 KB vectors took 188–192 MiB of files with
/// batches of 4,096 records and 142–147 MiB with batches of 1,024 (three
/// runs each, in a standalone test of sled alone), so the copy uses 1,024.
const COPY_BATCH: usize = 1024;
/// Vector-cache entries per batch while copying.
const VECTOR_BATCH: usize = 1024;
/// How long to wait for readers to let go of the old store before deleting
/// its files anyway (on Unix, open handles keep reading deleted files).
const RELEASE_WAIT: Duration = Duration::from_secs(30);

/// What the copy took out of the old generation: the erased content (kept
/// in memory only, for the verification scan) and the erased ids.
#[derive(Default)]
struct Harvest {
    texts: Vec<String>,
    vectors: Vec<Vec<f32>>,
    memories: Vec<MemoryId>,
    observations: Vec<ObservationId>,
    events_copied: u64,
    vectors_dropped: u64,
}

/// Runs a whole compaction. The caller guarantees exclusive access to the
/// store: the writer thread (inside `Command::Exclusive`) or `open` before
/// the writer starts. Readers keep working throughout; projections do not
/// change (only the event counts, which now see tombstones).
///
/// # Errors
/// [`Error::Poisoned`] when the engine is poisoned; [`Error::Io`] /
/// [`Error::Storage`] / [`Error::Corrupted`] from any step. A failure before
/// the switch leaves the old generation live and removes the new one; a
/// failure to make the switch durable poisons the engine; a failure after
/// the switch leaves `COMPACTING` behind, so the next open compacts again.
/// A failure to store the completed receipt after the scan is returned as
/// such although the compaction took effect (its stored receipt then has no
/// scan summary).
pub(crate) fn run(shared: &Shared, dir: &Mutex<DataDir>, cache_bytes: u64) -> Result<ErasureReceipt> {
    let started = Instant::now();
    if let Some(msg) = shared.poison_message() {
        return Err(Error::Poisoned(msg));
    }
    let (root, old_gen) = {
        let d = dir.lock();
        (d.root().to_path_buf(), d.current_generation())
    };
    // Above every generation present: a copy a user left beside the live
    // one is never written into or removed.
    let new_gen = dir.lock().next_generation()?;
    let (old_path, new_path) = {
        let d = dir.lock();
        (d.generation_path(old_gen), d.generation_path(new_gen))
    };
    let (last_seq, forgotten_m, forgotten_o) = forgotten_ids(&shared.state.read());
    let old = shared.store();
    let bytes_before = tree_bytes(&old_path);

    dir.lock().mark_compaction(old_gen, new_gen)?;
    let plan = Plan { old_gen, new_gen, bytes_before, last_seq, forgotten_m: &forgotten_m, forgotten_o: &forgotten_o };
    let (new_store, harvest, pending) =
        match write_generation(old.as_ref(), &new_path, cache_bytes, &plan, shared.keys.as_ref()) {
            Ok(x) => x,
            Err(e) => {
                if fs::remove_dir_all(&new_path).is_ok() {
                    let _ = dir.lock().clear_compaction_mark();
                }
                return Err(e);
            }
        };
    let bytes_after = tree_bytes(&new_path);

    // The switch. After the rename, the new generation is the store, so a
    // failure that leaves the rename's durability unknown must stop writes.
    let switched = dir.lock().switch_to(new_gen);
    if let Err(e) = switched {
        let on_disk = dir.lock().current_on_disk().ok().flatten();
        if on_disk != Some(new_gen) {
            drop(new_store);
            if fs::remove_dir_all(&new_path).is_ok() {
                let _ = dir.lock().clear_compaction_mark();
            }
            return Err(e);
        }
        poison(shared, &format!("compaction could not make the switch to {} durable: {e}", new_path.display()));
        *shared.store.write() = new_store;
        return Err(e);
    }
    crash_point("switch");
    #[cfg(feature = "failpoints")]
    fail::fail_point!("compact::switch", |arg| Err(crate::log::injected_error("compact::switch", arg)));
    let replaced = std::mem::replace(&mut *shared.store.write(), new_store);
    drop(replaced);
    shared.state.write().note_tombstones(harvest.observations.len() as u64, harvest.memories.len() as u64);
    release(old);
    delete_generation(&old_path)?;
    sync_dir(&root)?;
    dir.lock().clear_compaction_mark()?;
    let compact_ms = millis(started.elapsed());

    // Verification: patterns from the erased payloads, minus what surviving
    // content legitimately holds, searched in every file.
    let verify_started = Instant::now();
    let mut patterns = ErasurePatterns::new();
    for t in &harvest.texts {
        patterns.add_text(t);
    }
    for v in &harvest.vectors {
        patterns.add_vector(v);
    }
    drop(harvest.texts);
    drop(harvest.vectors);
    if !patterns.is_empty() {
        patterns.exclude_found_in(surviving_strings(&shared.state.read()));
        let store = shared.store();
        patterns.exclude_found_in(
            store.vector_entries().filter_map(|r| r.ok()).flat_map(|e| crate::erase::vector_layouts(&e.cached.vector)),
        );
    }
    let mut scan = verify_erasure(&root, &patterns)?;
    crate::erase::scan_opened(shared.store().as_ref(), &patterns, &mut scan)?;
    let verify_ms = millis(verify_started.elapsed());
    let receipt = ErasureReceipt {
        at: Utc::now(),
        generation: new_gen,
        last_seq,
        forgotten_memories: harvest.memories,
        forgotten_observations: harvest.observations,
        compaction: Some(CompactionFigures {
            previous_generation: old_gen,
            events_copied: harvest.events_copied,
            vectors_dropped: harvest.vectors_dropped,
            bytes_before,
            bytes_after,
            compact_ms,
            verify_ms,
        }),
        patterns_excluded_shared: patterns.excluded_shared(),
        patterns_low_information: patterns.low_information(),
        texts_too_short: patterns.too_short(),
        verified: scan.is_clean(),
        scan,
    };
    // The stored receipt, completed: counts and digests only.
    if let Some(mut done) = CompactionReceipt::from_erasure(&receipt) {
        done.at = pending.at;
        let store = shared.store();
        stored::put(store.as_ref(), &done)?;
        store.flush()?;
    }
    Ok(receipt)
}

/// What a compaction works from: generations, the old one's size, the log
/// position and the forgotten ids.
struct Plan<'a> {
    old_gen: u64,
    new_gen: u64,
    bytes_before: u64,
    last_seq: Seq,
    forgotten_m: &'a HashSet<u64>,
    forgotten_o: &'a HashSet<u64>,
}

/// Every string field of surviving memories and observations: the content
/// that legitimately stays on disk.
pub(crate) fn surviving_strings(state: &State) -> impl Iterator<Item = &[u8]> + '_ {
    state.namespaces.values().flat_map(|st| {
        let mems = st.memories.values().flat_map(|m| {
            [Some(m.content.as_str()), m.key.as_deref(), m.session.as_deref(), m.source_ref.as_deref()]
                .into_iter()
                .flatten()
                .chain(m.entities.iter().map(String::as_str))
                .map(str::as_bytes)
        });
        let obs = st.observations.values().flat_map(|o| {
            [Some(o.text.as_str()), Some(o.session.as_str()), o.source.as_deref()]
                .into_iter()
                .flatten()
                .map(str::as_bytes)
        });
        mems.chain(obs)
    })
}

fn forgotten_ids(state: &State) -> (Seq, HashSet<u64>, HashSet<u64>) {
    let mut m = HashSet::new();
    let mut o = HashSet::new();
    for st in state.namespaces.values() {
        m.extend(st.forgotten_memories.iter().map(|i| i.0));
        o.extend(st.forgotten_observations.iter().map(|i| i.0));
    }
    (state.visible, m, o)
}

/// Steps 2 and 3: the new generation, complete and durable, holding the
/// receipt of this compaction (without what only the end knows).
fn write_generation(
    old: &dyn LogStore,
    new_path: &Path,
    cache_bytes: u64,
    plan: &Plan<'_>,
    keys: Option<&Arc<crate::crypt::Keys>>,
) -> Result<(Arc<dyn LogStore>, Harvest, CompactionReceipt)> {
    let (last_seq, forgotten_m, forgotten_o) = (plan.last_seq, plan.forgotten_m, plan.forgotten_o);
    if new_path.exists() {
        fs::remove_dir_all(new_path)?;
    }
    let new = crate::log::wrap(SledStore::open(new_path, cache_bytes)?, keys);
    let mut h = Harvest::default();

    // An encrypted store is re-sealed: every namespace with a live data
    // key gets a fresh one, durable in the keyring before any record
    // sealed under it, and the new generation's records and vectors are
    // sealed under it. The keys they were under stay in the keyring for
    // the backups and exports taken before, until the namespace is
    // shredded.
    if let Some(k) = keys {
        // Shreds whose forget is durable are done first: a key about to be
        // destroyed must not have its records re-sealed under a new one.
        old.flush()?;
        let mut ring = k.ring.lock();
        if ring.renew_all() > 0 {
            k.save(&ring, "reseal")?;
        }
    }
    let mut batch: Vec<(Seq, Vec<u8>)> = Vec::with_capacity(COPY_BATCH);
    // Surviving records are copied as stored, sealed ones re-sealed under
    // their namespace's fresh key (or kept as stored when their key is
    // shredded); an erased one is read opened.
    for r in old.scan_raw(1, last_seq) {
        let (seq, bytes) = r?;
        h.events_copied += 1;
        if seq != h.events_copied {
            return Err(Error::Corrupted {
                seq: h.events_copied,
                reason: format!("log has a gap: next record is seq {seq}"),
            });
        }
        let record = if forgotten_m.contains(&seq) || forgotten_o.contains(&seq) {
            let opened = match old.scan(seq, seq).next() {
                Some(r) => r?.1,
                None => return Err(Error::Corrupted { seq, reason: "record vanished during compaction".into() }),
            };
            erase_payload(seq, opened, &mut h)?
        } else if let Some(resealed) = new.sealed().map(|s| s.reseal(seq, &bytes)).transpose()?.flatten() {
            resealed
        } else {
            bytes
        };
        batch.push((seq, record));
        if batch.len() >= COPY_BATCH {
            new.append_raw(&batch)?;
            batch.clear();
        }
    }
    if h.events_copied != last_seq {
        return Err(Error::Corrupted { seq: h.events_copied + 1, reason: format!("log ends before seq {last_seq}") });
    }
    if !batch.is_empty() {
        new.append_raw(&batch)?;
    }
    crash_point("copy");
    #[cfg(feature = "failpoints")]
    fail::fail_point!("compact::copy", |arg| Err(crate::log::injected_error("compact::copy", arg)));

    let mut vbatch = Vec::with_capacity(VECTOR_BATCH);
    for e in old.vector_entries() {
        let e = e?;
        if forgotten_m.contains(&e.id.0) {
            h.vectors_dropped += 1;
            h.vectors.push(e.cached.vector);
            continue;
        }
        vbatch.push(e);
        if vbatch.len() >= VECTOR_BATCH {
            new.put_vector_entries(&vbatch)?;
            vbatch.clear();
        }
    }
    if !vbatch.is_empty() {
        new.put_vector_entries(&vbatch)?;
    }
    for (k, v) in old.meta_entries()? {
        new.meta_put(&k, &v)?;
    }
    let pending = CompactionReceipt {
        at: Utc::now(),
        previous_generation: plan.old_gen,
        generation: plan.new_gen,
        last_seq,
        events_copied: h.events_copied,
        memories_erased: u64::try_from(h.memories.len()).unwrap_or(u64::MAX),
        observations_erased: u64::try_from(h.observations.len()).unwrap_or(u64::MAX),
        vectors_dropped: h.vectors_dropped,
        bytes_before: plan.bytes_before,
        bytes_after: None,
        compact_ms: None,
        scan: None,
    };
    stored::put(new.as_ref(), &pending)?;

    new.flush()?;
    sync_files(new_path)?;
    crash_point("fsync");
    sync_dirs(new_path)?;
    if let Some(parent) = new_path.parent() {
        sync_dir(parent)?;
    }
    Ok((new, h, pending))
}

/// Replaces a forgotten `Observed`/`Extracted` payload by a tombstone,
/// keeping `Seq`, time and namespace; keeps its content for the scan. Any
/// other record (already a tombstone) is kept as it is.
fn erase_payload(seq: Seq, bytes: Vec<u8>, h: &mut Harvest) -> Result<Vec<u8>> {
    let mut ev = decode_record(seq, &bytes)?;
    let was = match std::mem::replace(&mut ev.body, EventBody::Tombstone(Tombstone { was: String::new() })) {
        EventBody::Observed(o) => {
            h.texts.push(o.text);
            h.observations.push(ObservationId(seq));
            "observed"
        }
        EventBody::Extracted(x) => {
            h.texts.push(x.content);
            h.memories.push(MemoryId(seq));
            "extracted"
        }
        _ => return Ok(bytes),
    };
    ev.body = EventBody::Tombstone(Tombstone { was: was.to_string() });
    encode_record(&ev)
}

/// Fsyncs every regular file under `dir`.
fn sync_files(dir: &Path) -> Result<()> {
    for entry in fs::read_dir(dir)? {
        let entry = entry?;
        let ft = entry.file_type()?;
        if ft.is_dir() {
            sync_files(&entry.path())?;
        } else if ft.is_file() {
            fs::File::open(entry.path())?.sync_all()?;
        }
    }
    Ok(())
}

/// Fsyncs `dir` and every directory below it (children first).
fn sync_dirs(dir: &Path) -> Result<()> {
    for entry in fs::read_dir(dir)? {
        let entry = entry?;
        if entry.file_type()?.is_dir() {
            sync_dirs(&entry.path())?;
        }
    }
    sync_dir(dir)
}

/// Waits (bounded) until the caller holds the only reference to the old
/// store, then drops it, which flushes and closes sled's files.
fn release(old: Arc<dyn LogStore>) {
    let deadline = Instant::now() + RELEASE_WAIT;
    while Arc::strong_count(&old) > 1 && Instant::now() < deadline {
        std::thread::sleep(Duration::from_millis(1));
    }
    drop(old);
}

/// Deletes a generation directory, file by file, then the directory.
fn delete_generation(path: &Path) -> Result<()> {
    let mut first = true;
    delete_files(path, &mut first)?;
    match fs::remove_dir_all(path) {
        Ok(()) => Ok(()),
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => Ok(()),
        Err(e) => Err(Error::Io(e)),
    }
}

fn delete_files(dir: &Path, first: &mut bool) -> Result<()> {
    let entries = match fs::read_dir(dir) {
        Ok(e) => e,
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => return Ok(()),
        Err(e) => return Err(Error::Io(e)),
    };
    for entry in entries {
        let entry = entry?;
        if entry.file_type()?.is_dir() {
            delete_files(&entry.path(), first)?;
        } else {
            fs::remove_file(entry.path())?;
            if std::mem::take(first) {
                crash_point("delete");
                #[cfg(feature = "failpoints")]
                fail::fail_point!("compact::delete", |arg| Err(crate::log::injected_error("compact::delete", arg)));
            }
        }
    }
    Ok(())
}

/// Total bytes of the regular files under `dir` (0 when unreadable).
pub(crate) fn tree_bytes(dir: &Path) -> u64 {
    let Ok(entries) = fs::read_dir(dir) else {
        return 0;
    };
    entries
        .flatten()
        .map(|e| match e.file_type() {
            Ok(t) if t.is_dir() => tree_bytes(&e.path()),
            Ok(t) if t.is_file() => e.metadata().map(|m| m.len()).unwrap_or(0),
            _ => 0,
        })
        .sum()
}

fn poison(shared: &Shared, msg: &str) {
    let mut p = shared.poisoned.lock();
    if p.is_none() {
        *p = Some(msg.to_string());
    }
}

fn millis(d: Duration) -> u64 {
    u64::try_from(d.as_millis()).unwrap_or(u64::MAX)
}

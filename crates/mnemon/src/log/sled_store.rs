//! [`LogStore`] on sled 0.34: tree `events` (key: `Seq` big-endian, value: an
//! encoded record), tree `vectors` (key: memory id big-endian ‖ FNV-1a 64 of
//! the model id big-endian; value: the tag byte 2 ‖ content hash u64 LE ‖
//! `f16` LE components; stores written before the tag hold content hash ‖
//! `f32` LE components, which are still read),
//! tree `meta` (UTF-8 key → bytes).

use std::path::Path;
use std::time::{Duration, Instant};

use crate::error::{Error, Result};
use crate::log::{
    fnv1a64, vector_f16_bytes, CachedVector, LogStore, RecordIter, VectorEntry, VectorIter, VECTOR_F16_TAG,
};
use crate::types::{MemoryId, Seq};

/// The sled-backed log store.
#[derive(Clone, Debug)]
pub struct SledStore {
    db: sled::Db,
    events: sled::Tree,
    vectors: sled::Tree,
    meta: sled::Tree,
}

impl SledStore {
    /// Opens (or creates) a sled database at `path`.
    ///
    /// `cache_bytes` is sled's page-cache budget in bytes.
    ///
    /// # Errors
    /// [`Error::Locked`] if sled's own file lock is still held after 5 s;
    /// [`Error::Io`] /
    /// [`Error::Storage`] from sled.
    pub fn open(path: &Path, cache_bytes: u64) -> Result<SledStore> {
        // A dropped sled database finishes its last buffer writes on sled's
        // own threads, which hold the file lock until they are done, so a
        // reopen right after a close in this process can find the lock taken
        // for a moment. Wait for it a while before calling the store locked.
        let deadline = Instant::now() + LOCK_WAIT;
        let mut pause = Duration::from_millis(1);
        let db = loop {
            let opened = open_db(path, cache_bytes)?;
            match opened {
                Ok(db) => break db,
                Err(sled::Error::Io(io)) if is_lock_error(&io) => {
                    if Instant::now() >= deadline {
                        return Err(Error::Locked { path: path.to_path_buf() });
                    }
                    std::thread::sleep(pause);
                    pause = (pause * 2).min(Duration::from_millis(50));
                }
                Err(other) => return Err(Error::from(other)),
            }
        };
        let trees = std::panic::catch_unwind(std::panic::AssertUnwindSafe(|| {
            Ok::<_, sled::Error>((db.open_tree("events")?, db.open_tree("vectors")?, db.open_tree("meta")?))
        }))
        .map_err(|p| Error::Storage(format!("sled panicked opening its trees: {}", panic_text(&p)).into()))?;
        let (events, vectors, meta) = trees?;
        Ok(SledStore { db, events, vectors, meta })
    }

    fn vector_key(id: MemoryId, model_id: &str) -> [u8; 16] {
        Self::vector_key_hashed(id, fnv1a64(model_id.as_bytes()))
    }

    pub(crate) fn vector_key_hashed(id: MemoryId, model_hash: u64) -> [u8; 16] {
        let mut k = [0u8; 16];
        k[..8].copy_from_slice(&id.0.to_be_bytes());
        k[8..].copy_from_slice(&model_hash.to_be_bytes());
        k
    }
}

/// Raw access to the vector tree, for the sealing layer
/// ([`crate::log::SealedStore`]), which stores its own values.
impl SledStore {
    pub(crate) fn raw_vector_put(&self, key: [u8; 16], value: Vec<u8>) -> Result<()> {
        self.vectors.insert(key, value)?;
        Ok(())
    }

    pub(crate) fn raw_vector_get(&self, key: [u8; 16]) -> Result<Option<Vec<u8>>> {
        Ok(self.vectors.get(key)?.map(|v| v.to_vec()))
    }

    /// Puts vector-cache values of model `model_id` sealed by an encrypted
    /// copy of the store ([`crate::log::SealedStore::seal_vectors`]) as
    /// they are: how a copy caught up from a replicated log takes the
    /// vectors it carries. Opening them needs the data keys of the copy
    /// they came from.
    ///
    /// # Errors
    /// [`crate::Error::Storage`] for a value that is not a sealed vector
    /// (nothing is put then); backend errors.
    pub fn put_sealed_vectors(&self, model_id: &str, values: &[(MemoryId, Vec<u8>)]) -> Result<()> {
        if let Some((id, _)) = values.iter().find(|(_, v)| crate::crypt::vector_generation(v).is_none()) {
            return Err(crate::Error::Storage(format!("the vector of memory {} is not sealed", id.0).into()));
        }
        let model_hash = crate::log::fnv1a64(model_id.as_bytes());
        for (id, value) in values {
            self.vectors.insert(SledStore::vector_key_hashed(*id, model_hash), value.clone())?;
        }
        Ok(())
    }

    /// Every well-formed key of the vector tree with its value, in key order.
    pub(crate) fn raw_vectors(&self) -> impl Iterator<Item = Result<([u8; 16], Vec<u8>)>> + '_ {
        self.vectors.iter().filter_map(|r| match r {
            Ok((k, v)) => {
                let key: [u8; 16] = k.as_ref().try_into().ok()?;
                Some(Ok((key, v.to_vec())))
            }
            Err(e) => Some(Err(e.into())),
        })
    }
}

/// Opens sled, turning a panic during its recovery (sled 0.34 asserts on
/// some damaged files instead of returning an error) into
/// [`Error::Storage`], so a damaged store is reported, not a crash.
fn open_db(path: &Path, cache_bytes: u64) -> Result<sled::Result<sled::Db>> {
    remove_unfinished_snapshots(path)?;
    std::panic::catch_unwind(|| sled::Config::new().path(path).cache_capacity(cache_bytes).flush_every_ms(None).open())
        .map_err(|p| Error::Storage(format!("sled panicked opening {}: {}", path.display(), panic_text(&p)).into()))
}

/// Removes the snapshot files sled began and never finished
/// (`snap.<LSN>.generating`). sled 0.34 writes a snapshot under that name
/// and renames it only once it is whole and synced, but on open it reads
/// the file whose name sorts last, the unfinished one included: a snapshot
/// cut by a full disk or a kill would then fail every later open as
/// damaged data, though the log itself is intact. A snapshot only saves
/// replay time; sled rebuilds it from the log. The caller holds the data
/// directory's lock, so no other process is writing one.
///
/// # Errors
/// [`Error::Io`] when the directory cannot be read or a file removed.
fn remove_unfinished_snapshots(path: &Path) -> Result<()> {
    let entries = match std::fs::read_dir(path) {
        Ok(entries) => entries,
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => return Ok(()),
        Err(e) => return Err(Error::Io(e)),
    };
    for entry in entries {
        let entry = entry?;
        let name = entry.file_name();
        let name = name.to_string_lossy();
        if name.starts_with("snap.") && name.ends_with(".generating") {
            std::fs::remove_file(entry.path())?;
        }
    }
    Ok(())
}

fn panic_text(p: &Box<dyn std::any::Any + Send>) -> String {
    p.downcast_ref::<&str>()
        .map(|s| (*s).to_string())
        .or_else(|| p.downcast_ref::<String>().cloned())
        .unwrap_or_else(|| "panic".to_string())
}

/// How long [`SledStore::open`] waits for sled's file lock.
const LOCK_WAIT: Duration = Duration::from_secs(5);

/// sled 0.34 reports a held file lock as an `Other` I/O error with this text.
fn is_lock_error(e: &std::io::Error) -> bool {
    e.kind() == std::io::ErrorKind::WouldBlock || e.to_string().contains("could not acquire lock")
}

/// A cache value: [`VECTOR_F16_TAG`] ‖ content hash u64 LE ‖ the components
/// as IEEE 754 binary16 LE ([`crate::log::vector_f16_bytes`]): the vector
/// index keeps `f16` rows, so this holds every bit of what it searches.
pub(crate) fn encode_vector(hash: u64, v: &[f32]) -> Vec<u8> {
    let mut val = Vec::with_capacity(9 + 2 * v.len());
    val.push(VECTOR_F16_TAG);
    val.extend_from_slice(&hash.to_le_bytes());
    val.extend_from_slice(&vector_f16_bytes(v));
    val
}

/// Reads both layouts: the tagged `f16` one (odd length, `9 + 2·dim`) and the
/// untagged `f32` one stores written before it hold (content hash u64 LE ‖
/// `f32` LE components: even length, `8 + 4·dim`). Anything else is `None`.
pub(crate) fn decode_vector(val: &[u8]) -> Option<CachedVector> {
    let hash = |b: &[u8]| -> Option<u64> { Some(u64::from_le_bytes(b.get(..8)?.try_into().ok()?)) };
    if val.len() % 2 == 1 {
        let (&tag, rest) = val.split_first()?;
        if tag != VECTOR_F16_TAG || rest.len() < 8 {
            return None;
        }
        let vector = rest[8..].chunks_exact(2).map(|c| half::f16::from_le_bytes([c[0], c[1]]).to_f32()).collect();
        return Some(CachedVector { content_hash: hash(rest)?, vector });
    }
    if val.len() < 8 || !(val.len() - 8).is_multiple_of(4) {
        return None;
    }
    let vector = val[8..].chunks_exact(4).map(|c| f32::from_le_bytes([c[0], c[1], c[2], c[3]])).collect();
    Some(CachedVector { content_hash: hash(val)?, vector })
}

fn seq_from_key(key: &[u8]) -> Result<Seq> {
    let arr: [u8; 8] = key
        .try_into()
        .map_err(|_| Error::Corrupted { seq: 0, reason: format!("event key of {} bytes, expected 8", key.len()) })?;
    Ok(u64::from_be_bytes(arr))
}

impl LogStore for SledStore {
    fn append(&self, records: &[(Seq, Vec<u8>)]) -> Result<()> {
        #[cfg(feature = "failpoints")]
        fail::fail_point!("log::append", |arg| Err(crate::log::injected_error("append", arg)));
        match records {
            [] => {}
            // One key is atomic on its own. A batch costs sled two extra
            // log-buffer writes (it seals its buffer before and after the
            // batch manifest), which is most of a single event's append.
            [(seq, bytes)] => {
                self.events.insert(seq.to_be_bytes(), bytes.as_slice())?;
            }
            _ => {
                let mut batch = sled::Batch::default();
                for (seq, bytes) in records {
                    batch.insert(&seq.to_be_bytes(), bytes.as_slice());
                }
                self.events.apply_batch(batch)?;
            }
        }
        Ok(())
    }

    fn flush(&self) -> Result<usize> {
        #[cfg(feature = "failpoints")]
        fail::fail_point!("log::flush", |arg| Err(crate::log::injected_error("flush", arg)));
        Ok(self.db.flush()?)
    }

    fn last_seq(&self) -> Result<Option<Seq>> {
        match self.events.last()? {
            Some((k, _)) => Ok(Some(seq_from_key(&k)?)),
            None => Ok(None),
        }
    }

    fn scan(&self, from: Seq, to: Seq) -> RecordIter<'_> {
        if from > to {
            return Box::new(std::iter::empty());
        }
        Box::new(self.events.range(from.to_be_bytes()..=to.to_be_bytes()).map(|r| {
            let (k, v) = r?;
            Ok((seq_from_key(&k)?, v.to_vec()))
        }))
    }

    fn len(&self) -> usize {
        self.events.len()
    }

    fn put_vectors(&self, model_id: &str, entries: &[(MemoryId, u64, &[f32])]) -> Result<()> {
        // Key by key, not as one atomic batch: every entry is checked against
        // its memory's content on use, so a partly written group is a cache
        // miss, never a wrong vector; and a batch would cost two extra
        // log-buffer writes per group.
        let model_hash = fnv1a64(model_id.as_bytes());
        for (id, hash, v) in entries {
            self.vectors.insert(Self::vector_key_hashed(*id, model_hash), encode_vector(*hash, v))?;
        }
        Ok(())
    }

    fn get_vector(&self, model_id: &str, id: MemoryId) -> Result<Option<CachedVector>> {
        Ok(self.vectors.get(Self::vector_key(id, model_id))?.and_then(|v| decode_vector(&v)))
    }

    fn vector_entries(&self) -> VectorIter<'_> {
        Box::new(self.vectors.iter().filter_map(|r| {
            let (k, v) = match r {
                Ok(kv) => kv,
                Err(e) => return Some(Err(e.into())),
            };
            let key: [u8; 16] = k.as_ref().try_into().ok()?;
            let mut id = [0u8; 8];
            let mut model = [0u8; 8];
            id.copy_from_slice(&key[..8]);
            model.copy_from_slice(&key[8..]);
            let cached = decode_vector(&v)?;
            Some(Ok(VectorEntry {
                id: MemoryId(u64::from_be_bytes(id)),
                model_hash: u64::from_be_bytes(model),
                cached,
            }))
        }))
    }

    fn put_vector_entries(&self, entries: &[VectorEntry]) -> Result<()> {
        let mut batch = sled::Batch::default();
        for e in entries {
            batch.insert(
                &Self::vector_key_hashed(e.id, e.model_hash),
                encode_vector(e.cached.content_hash, &e.cached.vector),
            );
        }
        self.vectors.apply_batch(batch)?;
        Ok(())
    }

    fn meta_entries(&self) -> Result<Vec<(String, Vec<u8>)>> {
        let mut out = Vec::new();
        for r in self.meta.iter() {
            let (k, v) = r?;
            let key = String::from_utf8(k.to_vec())
                .map_err(|_| Error::Corrupted { seq: 0, reason: "meta key is not UTF-8".into() })?;
            out.push((key, v.to_vec()));
        }
        Ok(out)
    }

    fn meta_prefix(&self, prefix: &str) -> Result<Vec<(String, Vec<u8>)>> {
        let mut out = Vec::new();
        for r in self.meta.scan_prefix(prefix.as_bytes()) {
            let (k, v) = r?;
            let key = String::from_utf8(k.to_vec())
                .map_err(|_| Error::Corrupted { seq: 0, reason: "meta key is not UTF-8".into() })?;
            out.push((key, v.to_vec()));
        }
        Ok(out)
    }

    fn remove_vectors(&self, ids: &[MemoryId]) -> Result<()> {
        let mut batch = sled::Batch::default();
        for id in ids {
            let lo = id.0.to_be_bytes();
            for r in self.vectors.scan_prefix(lo) {
                let (k, _) = r?;
                batch.remove(k);
            }
        }
        self.vectors.apply_batch(batch)?;
        Ok(())
    }

    fn meta_get(&self, key: &str) -> Result<Option<Vec<u8>>> {
        Ok(self.meta.get(key.as_bytes())?.map(|v| v.to_vec()))
    }

    fn meta_put(&self, key: &str, value: &[u8]) -> Result<()> {
        self.meta.insert(key.as_bytes(), value)?;
        Ok(())
    }

    fn meta_remove(&self, keys: &[String]) -> Result<()> {
        let mut batch = sled::Batch::default();
        for k in keys {
            batch.remove(k.as_bytes());
        }
        self.meta.apply_batch(batch)?;
        Ok(())
    }

    fn size_on_disk(&self) -> Option<u64> {
        self.db.size_on_disk().ok()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// A cached vector reads back as its `f16` rounding, which the vector
    /// index makes of it as well; an entry of the earlier `f32` layout
    /// still reads back exactly; anything else is no vector.
    #[test]
    fn vector_values_of_both_layouts() {
        let v: Vec<f32> = (0..384).map(|i| ((i as f32) * 0.37).sin() / 14.0).collect();
        let val = encode_vector(42, &v);
        assert_eq!((val.len(), val[0]), (9 + 2 * 384, VECTOR_F16_TAG));
        let back = decode_vector(&val).unwrap();
        assert_eq!(back.content_hash, 42);
        let rounded: Vec<f32> = v.iter().map(|x| half::f16::from_f32(*x).to_f32()).collect();
        assert_eq!(back.vector, rounded);
        // Encoding what was read back changes nothing.
        assert_eq!(encode_vector(42, &back.vector), val);

        let mut old = 7u64.to_le_bytes().to_vec();
        for x in &v {
            old.extend_from_slice(&x.to_le_bytes());
        }
        let back = decode_vector(&old).unwrap();
        assert_eq!((back.content_hash, back.vector), (7, v.clone()));

        let mut wrong_tag = val.clone();
        wrong_tag[0] = 3;
        for bad in [&[][..], &[2u8; 7][..], &[2u8; 10][..], &wrong_tag[..], &old[..old.len() - 2]] {
            assert_eq!(decode_vector(bad), None, "{} bytes", bad.len());
        }
        // (A tagged value cut by one byte would read as an untagged one of
        // another length and content hash, which its use refuses; sled
        // never stores part of a value.)
        // A tagged entry with no components and an untagged one with none
        // are both well formed (an empty vector, refused on use by length).
        assert_eq!(decode_vector(&encode_vector(1, &[])).map(|c| c.vector.len()), Some(0));
        assert_eq!(decode_vector(&[2u8; 8]).map(|c| c.vector.len()), Some(0));
        // Arbitrary bytes of every short length never panic.
        let mut x: u64 = 0x9e37_79b9_7f4a_7c15;
        for len in 0..64 {
            for _ in 0..50 {
                let bytes: Vec<u8> = (0..len)
                    .map(|_| {
                        x ^= x << 13;
                        x ^= x >> 7;
                        x ^= x << 17;
                        x as u8
                    })
                    .collect();
                let _ = decode_vector(&bytes);
            }
        }
    }
}

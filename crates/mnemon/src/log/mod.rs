//! The durable log: an ordered map from [`Seq`] to encoded records, plus the
//! derived vector cache and a small metadata map, behind [`LogStore`] so the
//! backend can be swapped. The only implementation is [`SledStore`].

pub(crate) mod copy;
mod durability;
mod layout;
mod sealed;
mod sled_store;

pub(crate) use copy::{check_digest, check_extent, completion_record, live_generation, refuse_unfinished, LogDigest};
pub use durability::RESTORE_MISMATCH;
pub(crate) use durability::{check_high_water, record_high_water, sync_tree, with_recovery_hint, HighWaterMark};

pub use layout::DataDir;
pub(crate) use layout::{gen_name, has_reserve, sync_dir};
pub use layout::{lock_holder, LockHolder};
pub use sealed::SealedStore;
pub(crate) use sealed::{open_keys, wrap};
pub use sled_store::SledStore;
pub(crate) use sled_store::{decode_vector, encode_vector};

use crate::error::Result;
use crate::types::{MemoryId, Seq};

/// A record iterator: `(seq, encoded record)` in ascending `Seq` order.
pub type RecordIter<'a> = Box<dyn Iterator<Item = Result<(Seq, Vec<u8>)>> + 'a>;

/// A cached vector: the content hash it was computed from, and its components.
#[derive(Clone, Debug, PartialEq)]
pub struct CachedVector {
    /// FNV-1a 64 of the content the vector embeds; a mismatch means stale.
    pub content_hash: u64,
    /// The vector (dimension of the model that produced it).
    pub vector: Vec<f32>,
}

/// One entry of the vector cache as stored, for copying the cache between
/// generations: the memory, the FNV-1a 64 of the model id, the vector.
#[derive(Clone, Debug, PartialEq)]
pub struct VectorEntry {
    /// The memory the vector embeds.
    pub id: MemoryId,
    /// [`fnv1a64`] of the model id that produced it.
    pub model_hash: u64,
    /// The cached vector.
    pub cached: CachedVector,
}

/// A vector-cache iterator, in key order (memory id, then model hash).
pub type VectorIter<'a> = Box<dyn Iterator<Item = Result<VectorEntry>> + 'a>;

/// Storage for the event log and its derived caches.
///
/// The event tree is the only source of truth; everything else can be rebuilt.
pub trait LogStore: Send + Sync {
    /// Appends encoded records atomically (all or none become visible).
    ///
    /// # Errors
    /// [`crate::Error::Io`] / [`crate::Error::Storage`] from the backend.
    fn append(&self, records: &[(Seq, Vec<u8>)]) -> Result<()>;

    /// Appends records exactly as given (for copies of an encrypted store,
    /// whose sealed records are copied byte for byte); the same as
    /// [`LogStore::append`] for a plain store.
    ///
    /// # Errors
    /// As [`LogStore::append`].
    fn append_raw(&self, records: &[(Seq, Vec<u8>)]) -> Result<()> {
        self.append(records)
    }

    /// Makes everything appended so far durable. Returns bytes flushed (as the
    /// backend reports them; may be 0).
    ///
    /// # Errors
    /// [`crate::Error::Io`] / [`crate::Error::Storage`] when the disk refuses.
    fn flush(&self) -> Result<usize>;

    /// The highest `Seq` in the log, `None` when empty.
    ///
    /// # Errors
    /// [`crate::Error::Corrupted`] if the last key is not 8 bytes.
    fn last_seq(&self) -> Result<Option<Seq>>;

    /// Records with `from <= seq <= to`, in order.
    fn scan(&self, from: Seq, to: Seq) -> RecordIter<'_>;

    /// Records as stored (sealed records of an encrypted store not
    /// opened); the same as [`LogStore::scan`] for a plain store.
    fn scan_raw(&self, from: Seq, to: Seq) -> RecordIter<'_> {
        self.scan(from, to)
    }

    /// The sealing layer, when the store is encrypted.
    fn sealed(&self) -> Option<&SealedStore> {
        None
    }

    /// Number of records in the log.
    fn len(&self) -> usize;

    /// True when the log has no records.
    fn is_empty(&self) -> bool {
        self.len() == 0
    }

    /// Stores vectors in the cache of `model_id`. [`SledStore`] keeps each
    /// component rounded to the nearest `f16` (the vector index's own rows),
    /// so a vector reads back as that rounding.
    ///
    /// # Errors
    /// Backend errors.
    fn put_vectors(&self, model_id: &str, entries: &[(MemoryId, u64, &[f32])]) -> Result<()>;

    /// Reads a cached vector (for [`SledStore`], `f16` values widened to
    /// `f32`; an entry of the earlier `f32` layout as it was written).
    ///
    /// # Errors
    /// Backend errors; a malformed entry is reported as `None` (caches are
    /// rebuilt, never trusted).
    fn get_vector(&self, model_id: &str, id: MemoryId) -> Result<Option<CachedVector>>;

    /// Removes cached vectors of these memories for every model.
    ///
    /// # Errors
    /// Backend errors.
    fn remove_vectors(&self, ids: &[MemoryId]) -> Result<()>;

    /// Every well-formed entry of the vector cache, every model (malformed
    /// entries are skipped: caches are rebuilt, never trusted).
    fn vector_entries(&self) -> VectorIter<'_>;

    /// Stores vector-cache entries (used by compaction and backup), encoded
    /// as [`LogStore::put_vectors`] encodes them: an entry of the earlier
    /// `f32` layout is rewritten as `f16`.
    ///
    /// # Errors
    /// Backend errors.
    fn put_vector_entries(&self, entries: &[VectorEntry]) -> Result<()>;

    /// Every metadata entry, in key order.
    ///
    /// # Errors
    /// Backend errors; [`crate::Error::Corrupted`] for a key that is not UTF-8.
    fn meta_entries(&self) -> Result<Vec<(String, Vec<u8>)>>;

    /// The metadata entries whose key starts with `prefix`, in key order.
    ///
    /// # Errors
    /// Backend errors; [`crate::Error::Corrupted`] for a key that is not UTF-8.
    fn meta_prefix(&self, prefix: &str) -> Result<Vec<(String, Vec<u8>)>> {
        Ok(self.meta_entries()?.into_iter().filter(|(k, _)| k.starts_with(prefix)).collect())
    }

    /// Reads a metadata value.
    ///
    /// # Errors
    /// Backend errors.
    fn meta_get(&self, key: &str) -> Result<Option<Vec<u8>>>;

    /// Writes a metadata value (durable at the next flush).
    ///
    /// # Errors
    /// Backend errors.
    fn meta_put(&self, key: &str, value: &[u8]) -> Result<()>;

    /// Removes metadata values (durable at the next flush); absent keys are
    /// skipped.
    ///
    /// # Errors
    /// Backend errors.
    fn meta_remove(&self, keys: &[String]) -> Result<()>;

    /// Bytes the backend occupies on disk, if it can tell.
    fn size_on_disk(&self) -> Option<u64>;
}

/// First byte of a vector-cache value in the `f16` layout (see
/// `docs/FORMAT.md`). Values of the earlier `f32` layout have no tag and an
/// even length; tagged ones an odd length, so the two never read as each
/// other.
pub const VECTOR_F16_TAG: u8 = 2;

/// A vector's components rounded to the nearest IEEE 754 binary16 and
/// written little-endian, 2 bytes each: how the vector cache stores a vector
/// (and what an erasure scan looks for besides the `f32` bytes). The vector
/// index rounds its rows the same way, so a vector read back from the cache
/// gives the index the very row it held before.
pub fn vector_f16_bytes(v: &[f32]) -> Vec<u8> {
    v.iter().flat_map(|x| half::f16::from_f32(*x).to_le_bytes()).collect()
}

/// Whether process `pid` of this machine may still be running: `false`
/// only when Linux's `/proc` is mounted and has no `/proc/PID`; `true`
/// elsewhere (no cheap, portable check). Used to tell a note or a build
/// directory left by a process that is gone from one still in use; a
/// reused pid reads as running, which only errs on the side of keeping.
pub fn process_may_run(pid: u32) -> bool {
    if cfg!(target_os = "linux") && std::path::Path::new("/proc/self").exists() {
        std::path::Path::new("/proc").join(pid.to_string()).exists()
    } else {
        true
    }
}

/// FNV-1a 64-bit hash (Fowler–Noll–Vo; offset basis and prime from the
/// published parameters). Used to key caches by model id and to detect stale
/// cached vectors; not a security hash.
pub fn fnv1a64(bytes: &[u8]) -> u64 {
    let mut h: u64 = 0xcbf2_9ce4_8422_2325;
    for b in bytes {
        h ^= u64::from(*b);
        h = h.wrapping_mul(0x0000_0100_0000_01b3);
    }
    h
}

/// The content hash a cached vector is checked against: [`fnv1a64`] of the
/// text embedded for `content` ([`crate::text::searchable`]: the content,
/// or the values of a JSON object or array), so a vector is recomputed
/// whenever that text changes.
pub(crate) fn content_hash(content: &str) -> u64 {
    fnv1a64(crate::text::searchable(content).as_bytes())
}

/// The error a failpoint injects: `return(enospc)` gives the OS error of a
/// full disk (`ENOSPC`, errno 28 on Linux), anything else a plain I/O error.
#[cfg(feature = "failpoints")]
pub(crate) fn injected_error(at: &str, arg: Option<String>) -> crate::Error {
    match arg.as_deref() {
        Some("enospc") => crate::Error::Io(std::io::Error::from_raw_os_error(28)),
        _ => crate::Error::Io(std::io::Error::other(format!("injected failure at {at}"))),
    }
}

//! [`SealedStore`]: a [`LogStore`] that seals records and cached vectors
//! on their way into sled and opens them on their way out, so the rest of
//! the engine sees plain records and plain vectors.

use std::collections::{BTreeSet, HashMap};
use std::sync::Arc;

use parking_lot::{Mutex, RwLock};

use crate::crypt::{
    is_sealed_kind, open_record, open_vector, seal_record, seal_vector, sealed_head as head, shredded_record,
    split_plain, vector_generation, KeyState, Keys, SEALED_VERSION,
};
use std::path::Path;

use crate::crypt::{remove_stale_tmp, Kek, KeySettings, Keyring, KEYRING_FILE, META_KEYRING};
use crate::error::{Error, Result};
use crate::log::{
    decode_vector, encode_vector, fnv1a64, CachedVector, LogStore, RecordIter, SledStore, VectorEntry, VectorIter,
};
use crate::types::{MemoryId, Seq};

/// The sealing layer over a [`SledStore`]. Every store of an encrypted
/// data directory (the live generation, a compaction's new one, a backup
/// or restore being written) is one, sharing the engine's [`Keys`].
pub struct SealedStore {
    inner: SledStore,
    keys: Arc<Keys>,
    /// Namespace of each memory (the `Seq` of its `Extracted` record), for
    /// the key of its cached vectors; filled as records are appended and
    /// scanned, else read from the record.
    ns_of: RwLock<NsMap>,
    /// Vectors put before their memory's record (the writer caches vectors
    /// before it appends the group): sealed at that append.
    staged: Mutex<Vec<([u8; 16], Vec<u8>)>>,
    /// Keys to destroy once the records that forgot their namespace are
    /// durable: at the next flush.
    pending_shreds: Mutex<Vec<(String, u32)>>,
    /// Namespaces some of whose records read as shredded.
    shredded_seen: Mutex<BTreeSet<String>>,
}

/// Memory id → namespace, each name held once.
#[derive(Default)]
struct NsMap {
    by_id: HashMap<u64, u32>,
    names: Vec<Arc<str>>,
    index: HashMap<Arc<str>, u32>,
}

impl std::fmt::Debug for SealedStore {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("SealedStore").finish_non_exhaustive()
    }
}

impl SealedStore {
    /// Wraps `inner`, sealing with `keys`.
    pub(crate) fn new(inner: SledStore, keys: Arc<Keys>) -> SealedStore {
        SealedStore {
            inner,
            keys,
            ns_of: RwLock::new(NsMap::default()),
            staged: Mutex::new(Vec::new()),
            pending_shreds: Mutex::new(Vec::new()),
            shredded_seen: Mutex::new(BTreeSet::new()),
        }
    }

    /// The record at `seq` as stored.
    ///
    /// # Errors
    /// [`Error::Corrupted`] when there is none; backend errors.
    pub(crate) fn raw_record(&self, seq: Seq) -> Result<Vec<u8>> {
        match self.inner.scan(seq, seq).next() {
            Some(r) => Ok(r?.1),
            None => Err(Error::Corrupted { seq, reason: "record missing".into() }),
        }
    }

    /// The cached vector value of `(id, model)` as stored.
    ///
    /// # Errors
    /// [`Error::Storage`] when there is none; backend errors.
    pub(crate) fn raw_vector(&self, id: MemoryId, model_hash: u64) -> Result<Vec<u8>> {
        self.inner
            .raw_vector_get(SledStore::vector_key_hashed(id, model_hash))?
            .ok_or_else(|| Error::Storage(format!("cached vector of memory {} vanished", id.0).into()))
    }

    /// The stored record `bytes` at `seq` sealed afresh under the current
    /// data key of its namespace, for a compaction that re-seals the live
    /// generation; `None` to copy it as stored: a plain record, one
    /// already under the current key, one whose key is shredded (or not in
    /// the keyring), and a forget of the whole namespace (its key is the
    /// one its shred destroys, so it stays under it).
    ///
    /// # Errors
    /// [`Error::Corrupted`] for a damaged record; [`Error::Storage`].
    pub(crate) fn reseal(&self, seq: Seq, bytes: &[u8]) -> Result<Option<Vec<u8>>> {
        if bytes.first() != Some(&SEALED_VERSION) {
            return Ok(None);
        }
        let h = head(seq, bytes)?;
        if h.whole_namespace {
            return Ok(None);
        }
        let ring = self.keys.ring.lock();
        let KeyState::Live(old) = ring.get(&h.ns, h.generation) else {
            return Ok(None);
        };
        let Some((generation, key)) = ring.current(&h.ns) else {
            return Ok(None);
        };
        if generation == h.generation {
            return Ok(None);
        }
        let plain = open_record(seq, bytes, old)?;
        let (env, body) = split_plain(seq, &plain)?;
        seal_record(env, body, generation, key).map(Some)
    }

    /// Namespaces whose records read as shredded so far.
    pub(crate) fn shredded_seen(&self) -> Vec<String> {
        self.shredded_seen.lock().iter().cloned().collect()
    }

    fn note_ns(&self, id: u64, ns: &str) {
        let mut map = self.ns_of.write();
        let ix = match map.index.get(ns) {
            Some(&ix) => ix,
            None => {
                let ix = u32::try_from(map.names.len()).unwrap_or(u32::MAX);
                let name: Arc<str> = Arc::from(ns);
                map.names.push(name.clone());
                map.index.insert(name, ix);
                ix
            }
        };
        map.by_id.insert(id, ix);
    }

    fn ns_of(&self, id: u64) -> Result<Option<Arc<str>>> {
        {
            let map = self.ns_of.read();
            if let Some(&ix) = map.by_id.get(&id) {
                return Ok(map.names.get(ix as usize).cloned());
            }
        }
        let Some(Ok((seq, bytes))) = self.inner.scan(id, id).next() else {
            return Ok(None);
        };
        let ns =
            if bytes.first() == Some(&SEALED_VERSION) { head(seq, &bytes)?.ns } else { split_plain(seq, &bytes)?.0.ns };
        self.note_ns(id, &ns);
        Ok(Some(Arc::from(ns)))
    }

    /// Opens one stored record.
    fn open_one(&self, seq: Seq, bytes: Vec<u8>) -> Result<Vec<u8>> {
        if bytes.first() != Some(&SEALED_VERSION) {
            return Ok(bytes);
        }
        let h = head(seq, &bytes)?;
        if h.kind == 1 {
            self.note_ns(seq, &h.ns);
        }
        let ring = self.keys.ring.lock();
        match ring.get(&h.ns, h.generation) {
            KeyState::Live(k) => {
                if h.whole_namespace {
                    // A forget of the whole namespace whose key survived:
                    // the process stopped between the flush that made the
                    // forget durable and the keyring's rewrite. Finish it.
                    self.pending_shreds.lock().push((h.ns.clone(), h.generation));
                }
                open_record(seq, &bytes, k)
            }
            KeyState::Shredded => {
                drop(ring);
                self.shredded_seen.lock().insert(h.ns);
                shredded_record(seq, &bytes)
            }
            KeyState::Unknown => Err(Error::WrongKey(format!(
                "the keyring holds no key for namespace {} (generation {}) of record {seq}: it is the keyring of \
                 another store",
                h.ns, h.generation
            ))),
        }
    }

    fn seal_vector_value(&self, key: [u8; 16], id: u64, value: Vec<u8>) -> Result<()> {
        match self.ns_of(id)? {
            Some(ns) => {
                let ring = self.keys.ring.lock();
                // A namespace without a live key (shredded, nothing written
                // since) caches nothing: a miss, never a plain vector.
                if let Some((generation, dk)) = ring.current(&ns) {
                    let sealed = seal_vector(&key, &ns, generation, dk, &value)?;
                    drop(ring);
                    self.inner.raw_vector_put(key, sealed)?;
                }
                Ok(())
            }
            None => {
                self.staged.lock().push((key, value));
                Ok(())
            }
        }
    }

    fn open_vector_value(&self, key: &[u8; 16], value: &[u8]) -> Option<CachedVector> {
        let generation = vector_generation(value)?;
        let mut id = [0u8; 8];
        id.copy_from_slice(&key[..8]);
        let ns = self.ns_of(u64::from_be_bytes(id)).ok()??;
        let ring = self.keys.ring.lock();
        match ring.get(&ns, generation) {
            KeyState::Live(dk) => decode_vector(&open_vector(key, &ns, dk, value)?),
            _ => None,
        }
    }
}

impl SealedStore {
    /// Seals the records of a group (plain records as the writer encodes
    /// them) as [`LogStore::append`] would store them, making and saving a
    /// data key where a namespace has none live (shared through the key
    /// directory, if any, before this returns). A forget of a whole
    /// namespace makes the key later writes take; its own key is destroyed
    /// only at the flush after [`LogStore::append`] stored the forget, so a
    /// group sealed and then refused (its publish failed) destroys nothing.
    /// For a writer that sends the group elsewhere before appending it:
    /// [`LogStore::append`] stores the sealed records as they are. Records
    /// already sealed are kept.
    ///
    /// # Errors
    /// [`Error::Corrupted`] for a record that does not decode; what saving
    /// the keyring returns.
    pub fn seal(&self, records: &[(Seq, Vec<u8>)]) -> Result<Vec<(Seq, Vec<u8>)>> {
        self.seal_group(records).map(|(out, _)| out)
    }

    /// [`SealedStore::seal`], with the `(namespace, generation)` of the key
    /// each forget of a whole namespace in `records` destroys once stored.
    #[allow(clippy::type_complexity)]
    fn seal_group(&self, records: &[(Seq, Vec<u8>)]) -> Result<(Vec<(Seq, Vec<u8>)>, Vec<(String, u32)>)> {
        let mut out = Vec::with_capacity(records.len());
        let mut shreds = Vec::new();
        let mut ring = self.keys.ring.lock();
        let mut changed = false;
        for (seq, bytes) in records {
            if bytes.first() == Some(&SEALED_VERSION) {
                let h = head(*seq, bytes)?;
                if h.kind == 1 {
                    self.note_ns(*seq, &h.ns);
                }
                if h.whole_namespace {
                    shreds.push((h.ns, h.generation));
                }
                out.push((*seq, bytes.clone()));
                continue;
            }
            let (env, body) = split_plain(*seq, bytes)?;
            if env.kind == 1 {
                self.note_ns(*seq, &env.ns);
            }
            if !is_sealed_kind(env.kind) {
                out.push((*seq, bytes.clone()));
                continue;
            }
            if ring.current(&env.ns).is_none() {
                ring.create(&env.ns);
                changed = true;
            }
            let (ns, env_kind) = (env.ns.clone(), env.kind);
            let Some((generation, key)) = ring.current(&ns) else {
                return Err(Error::Storage("a new data key is missing".into()));
            };
            let sealed = seal_record(env, body, generation, key)?;
            if env_kind == 4 && head(*seq, &sealed)?.whole_namespace {
                // The key goes once this forget is durable; later
                // writes to the namespace take a key of their own.
                shreds.push((ns.clone(), generation));
                ring.create(&ns);
                changed = true;
            }
            out.push((*seq, sealed));
        }
        // A new key is durable (and shared) before any record sealed with it.
        if changed {
            self.keys.save(&ring, "key")?;
        }
        Ok((out, shreds))
    }

    /// The vector-cache values of `vectors` (memory, FNV-1a 64 of its
    /// content, vector) for model `model_id`, sealed under the current key
    /// of each memory's namespace as [`LogStore::put_vectors`] stores them,
    /// for copies that put them as they are ([`SledStore::put_sealed_vectors`]).
    /// A memory whose namespace is unknown here or has no live key is left
    /// out (its copy embeds it again).
    ///
    /// # Errors
    /// [`Error::Storage`] when sealing fails.
    pub fn seal_vectors(
        &self,
        model_id: &str,
        vectors: &[(MemoryId, u64, Vec<f32>)],
    ) -> Result<Vec<(MemoryId, Vec<u8>)>> {
        let model_hash = fnv1a64(model_id.as_bytes());
        let mut out = Vec::with_capacity(vectors.len());
        for (id, hash, v) in vectors {
            let ns = {
                let map = self.ns_of.read();
                map.by_id.get(&id.0).and_then(|&ix| map.names.get(ix as usize).cloned())
            };
            let Some(ns) = ns else {
                continue;
            };
            let ring = self.keys.ring.lock();
            if let Some((generation, dk)) = ring.current(&ns) {
                let key = SledStore::vector_key_hashed(*id, model_hash);
                out.push((*id, seal_vector(&key, &ns, generation, dk, &encode_vector(*hash, v))?));
            }
        }
        Ok(out)
    }

    /// Caches the vector values [`SealedStore::seal_vectors`] sealed for
    /// model `model_id` as they are, so that a group sent elsewhere sealed
    /// is not sealed a second time for the local cache.
    ///
    /// # Errors
    /// [`Error::Storage`] for a value that is not a sealed vector; backend
    /// errors.
    pub fn put_sealed_vectors(&self, model_id: &str, values: &[(MemoryId, Vec<u8>)]) -> Result<()> {
        self.inner.put_sealed_vectors(model_id, values)
    }

    /// The vector-cache value of `(id, model_id)` as stored (sealed), for
    /// a copy that puts it as it is; `None` when there is none.
    ///
    /// # Errors
    /// Backend errors.
    pub fn sealed_vector(&self, model_id: &str, id: MemoryId) -> Result<Option<Vec<u8>>> {
        self.inner.raw_vector_get(SledStore::vector_key_hashed(id, fnv1a64(model_id.as_bytes())))
    }
}

impl LogStore for SealedStore {
    fn append(&self, records: &[(Seq, Vec<u8>)]) -> Result<()> {
        let (out, shreds) = self.seal_group(records)?;
        let staged = std::mem::take(&mut *self.staged.lock());
        for (key, value) in staged {
            let mut id = [0u8; 8];
            id.copy_from_slice(&key[..8]);
            let id = u64::from_be_bytes(id);
            if self.ns_of.read().by_id.contains_key(&id) {
                self.seal_vector_value(key, id, value)?;
            }
        }
        self.inner.append(&out)?;
        // The keys of the forgets stored here go at the next flush.
        self.pending_shreds.lock().extend(shreds);
        Ok(())
    }

    fn append_raw(&self, records: &[(Seq, Vec<u8>)]) -> Result<()> {
        for (seq, bytes) in records {
            if bytes.first() == Some(&SEALED_VERSION) {
                let h = head(*seq, bytes)?;
                if h.kind == 1 {
                    self.note_ns(*seq, &h.ns);
                }
            }
        }
        self.inner.append(records)
    }

    fn flush(&self) -> Result<usize> {
        let n = self.inner.flush()?;
        let pending = std::mem::take(&mut *self.pending_shreds.lock());
        if !pending.is_empty() {
            // The forget is durable and its key not yet destroyed: a crash
            // here has the next open finish the shred.
            crate::crash::crash_point("shred.flushed");
            let mut ring = self.keys.ring.lock();
            for (ns, generation) in &pending {
                ring.shred(ns, *generation);
            }
            self.keys.save(&ring, "shred")?;
        }
        Ok(n)
    }

    fn last_seq(&self) -> Result<Option<Seq>> {
        self.inner.last_seq()
    }

    fn scan(&self, from: Seq, to: Seq) -> RecordIter<'_> {
        Box::new(self.inner.scan(from, to).map(move |r| {
            let (seq, bytes) = r?;
            Ok((seq, self.open_one(seq, bytes)?))
        }))
    }

    fn scan_raw(&self, from: Seq, to: Seq) -> RecordIter<'_> {
        self.inner.scan(from, to)
    }

    fn len(&self) -> usize {
        self.inner.len()
    }

    fn put_vectors(&self, model_id: &str, entries: &[(MemoryId, u64, &[f32])]) -> Result<()> {
        let model_hash = fnv1a64(model_id.as_bytes());
        for (id, hash, v) in entries {
            self.seal_vector_value(SledStore::vector_key_hashed(*id, model_hash), id.0, encode_vector(*hash, v))?;
        }
        Ok(())
    }

    fn get_vector(&self, model_id: &str, id: MemoryId) -> Result<Option<CachedVector>> {
        let key = SledStore::vector_key_hashed(id, fnv1a64(model_id.as_bytes()));
        Ok(self.inner.raw_vector_get(key)?.and_then(|v| self.open_vector_value(&key, &v)))
    }

    fn remove_vectors(&self, ids: &[MemoryId]) -> Result<()> {
        self.inner.remove_vectors(ids)
    }

    fn vector_entries(&self) -> VectorIter<'_> {
        Box::new(self.inner.raw_vectors().filter_map(move |r| {
            let (key, value) = match r {
                Ok(kv) => kv,
                Err(e) => return Some(Err(e)),
            };
            let cached = self.open_vector_value(&key, &value)?;
            let mut id = [0u8; 8];
            let mut model = [0u8; 8];
            id.copy_from_slice(&key[..8]);
            model.copy_from_slice(&key[8..]);
            Some(Ok(VectorEntry {
                id: MemoryId(u64::from_be_bytes(id)),
                model_hash: u64::from_be_bytes(model),
                cached,
            }))
        }))
    }

    fn put_vector_entries(&self, entries: &[VectorEntry]) -> Result<()> {
        for e in entries {
            self.seal_vector_value(
                SledStore::vector_key_hashed(e.id, e.model_hash),
                e.id.0,
                encode_vector(e.cached.content_hash, &e.cached.vector),
            )?;
        }
        Ok(())
    }

    fn meta_entries(&self) -> Result<Vec<(String, Vec<u8>)>> {
        self.inner.meta_entries()
    }

    fn meta_prefix(&self, prefix: &str) -> Result<Vec<(String, Vec<u8>)>> {
        self.inner.meta_prefix(prefix)
    }

    fn meta_get(&self, key: &str) -> Result<Option<Vec<u8>>> {
        self.inner.meta_get(key)
    }

    fn meta_put(&self, key: &str, value: &[u8]) -> Result<()> {
        self.inner.meta_put(key, value)
    }

    fn meta_remove(&self, keys: &[String]) -> Result<()> {
        self.inner.meta_remove(keys)
    }

    fn size_on_disk(&self) -> Option<u64> {
        self.inner.size_on_disk()
    }

    fn sealed(&self) -> Option<&SealedStore> {
        Some(self)
    }
}

/// Opens (or, for a new store given a key, creates) the keyring of the
/// store at `root` whose live generation is `store`. `None` for a plain
/// store opened without a key.
///
/// # Errors
/// [`Error::KeyRequired`] for an encrypted store without a key, or a copy
/// without a keyring; [`Error::WrongKey`] when the key or the keyring is
/// another store's; [`Error::InvalidInput`] (field `key`) for a key given
/// to a store created without encryption; [`Error::Io`].
pub(crate) fn open_keys(root: &Path, store: &SledStore, keys: &KeySettings) -> Result<Option<Arc<Keys>>> {
    if let Some(directory) = &keys.directory {
        return open_shared_keys(root, store, keys, directory.clone()).map(Some);
    }
    let path = root.join(KEYRING_FILE);
    let recorded = store.meta_get(META_KEYRING)?;
    let kek = |why: &str| -> Result<Kek> {
        match &keys.provider {
            Some(p) => p.kek(),
            None => Err(Error::KeyRequired(format!("the store at {} is encrypted: {why}", root.display()))),
        }
    };
    let ring = if path.exists() {
        let ring = Keyring::load(&path, kek("open it with its key")?)?;
        match &recorded {
            Some(id) if id.as_slice() != ring.id() => {
                return Err(Error::WrongKey(format!("{} is the keyring of another store", path.display())))
            }
            Some(_) => {}
            None if store.last_seq()?.is_none() => store.meta_put(META_KEYRING, &ring.id())?,
            None => {
                return Err(Error::invalid(
                    "key",
                    format!("{} holds a keyring but its log was written without encryption", root.display()),
                ))
            }
        }
        ring
    } else if let Some(id) = recorded {
        let kek = kek("open it with its key and the keyring of the store it was copied from")?;
        let Some(from) = &keys.keyring else {
            return Err(Error::KeyRequired(format!(
                "the store at {} is an encrypted copy without a keyring: give the keyring of the store it was \
                 made from (--keyring DATA/KEYRING)",
                root.display()
            )));
        };
        let ring = crate::crypt::load_named_keyring(from, kek)?;
        if id.as_slice() != ring.id() {
            return Err(Error::WrongKey(format!("{} is not the keyring this store was sealed under", from.display())));
        }
        ring.save(&path, "copy")?;
        ring
    } else {
        let Some(p) = &keys.provider else {
            remove_stale_tmp(&path)?;
            return Ok(None);
        };
        if store.last_seq()?.is_some() {
            return Err(written_plain(root));
        }
        let ring = Keyring::new(p.kek()?);
        ring.save(&path, "new")?;
        store.meta_put(META_KEYRING, &ring.id())?;
        ring
    };
    remove_stale_tmp(&path)?;
    Ok(Some(Arc::new(Keys { ring: Mutex::new(ring), path, directory: None })))
}

/// The keyring of a store whose data keys are shared through `directory`
/// (a cluster's copy of a namespace): its id is the directory's, it takes
/// every key the directory holds, and gives the directory every shred it
/// has that the directory lacks. A copy caught up from the replicated log
/// has no keyring yet; its first open makes one.
///
/// # Errors
/// [`Error::KeyRequired`] without a key; [`Error::WrongKey`] when the
/// keyring, the store or the directory's keys belong to another keyring,
/// or the key does not open them; [`Error::InvalidInput`] (field `key`)
/// for a copy whose log was written without encryption; what the
/// directory returns; [`Error::Io`].
fn open_shared_keys(
    root: &Path,
    store: &SledStore,
    keys: &KeySettings,
    directory: Arc<dyn crate::crypt::KeyDirectory>,
) -> Result<Arc<Keys>> {
    let path = root.join(KEYRING_FILE);
    let Some(provider) = &keys.provider else {
        return Err(Error::KeyRequired(format!(
            "the store at {} shares its keys through a key directory: open it with its key",
            root.display()
        )));
    };
    let kek = provider.kek()?;
    let recorded = store.meta_get(META_KEYRING)?;
    let mut ring = if path.exists() {
        Keyring::load(&path, kek)?
    } else {
        if recorded.is_none() && holds_plain_content(store)? {
            return Err(written_plain(root));
        }
        let mut proposed = [0u8; 16];
        rand::RngCore::fill_bytes(&mut rand::rngs::OsRng, &mut proposed);
        Keyring::with_id(kek, directory.keyring_id(proposed)?)
    };
    let id = directory.keyring_id(ring.id())?;
    if id != ring.id() {
        return Err(Error::WrongKey(format!("{} is not the keyring the key directory shares", path.display())));
    }
    match recorded {
        Some(r) if r.as_slice() != id => {
            return Err(Error::WrongKey(format!(
                "the store at {} was sealed under another keyring than the key directory shares",
                root.display()
            )))
        }
        Some(_) => {}
        None => store.meta_put(META_KEYRING, &id)?,
    }
    let changed = ring.import(&directory.load()?)?;
    if changed || !path.exists() {
        ring.save(&path, "key")?;
    }
    // Shreds made here that the directory did not get (a failure between
    // the local shred and the directory's) reach it now.
    directory.store(&ring.export()?)?;
    remove_stale_tmp(&path)?;
    Ok(Arc::new(Keys { ring: Mutex::new(ring), path, directory: Some(directory) }))
}

/// The refusal of a key for the plain store at `root`.
fn written_plain(root: &Path) -> Error {
    Error::invalid(
        "key",
        format!(
            "the store at {} was created without encryption; open it without a key (encryption is chosen when a \
             store is created)",
            root.display()
        ),
    )
}

/// Whether the log holds content written without encryption: its first
/// record of a sealed kind is plain.
fn holds_plain_content(store: &SledStore) -> Result<bool> {
    for r in store.scan(1, u64::MAX) {
        let (seq, bytes) = r?;
        if bytes.first() == Some(&SEALED_VERSION) {
            return Ok(false);
        }
        if is_sealed_kind(split_plain(seq, &bytes)?.0.kind) {
            return Ok(true);
        }
    }
    Ok(false)
}

/// `sled` as the engine's store: sealed when `keys` is given.
pub(crate) fn wrap(sled: SledStore, keys: Option<&Arc<Keys>>) -> Arc<dyn LogStore> {
    match keys {
        Some(k) => Arc::new(SealedStore::new(sled, k.clone())),
        None => Arc::new(sled),
    }
}

//! Opening a store: lock, replay, load or rebuild vectors, start the writer.

use std::collections::{BTreeMap, HashMap};
use std::sync::Arc;

use parking_lot::{Mutex, RwLock};

use crate::embed::{Embedder, HashingEmbedder};
use crate::engine::config::{Config, Progress};
use crate::engine::{Engine, Inner};
use crate::error::{Error, Result};
use crate::event::{decode_record, STORE_FORMAT_VERSION};
use crate::index::saved::{self, GraphToSave, SavedGraph};
use crate::log::{content_hash, fnv1a64, DataDir, LogStore, SledStore};
use crate::projection::State;
use crate::types::{MemoryId, Namespace};
use crate::writer::backfill::{self, Backlog, PendingVector, PENDING_PREFIX};
use crate::writer::{self, DedupMode, Shared, WriterConfig};

/// What opening the store did.
#[derive(Clone, Debug, Default, PartialEq, Eq, serde::Serialize)]
pub struct OpenReport {
    /// Events replayed from the log.
    pub events_replayed: u64,
    /// Memory vectors taken from the vector cache.
    pub vectors_cached: usize,
    /// Memory vectors computed because the cache lacked them (new store
    /// version, or the embedder changed).
    pub vectors_embedded: usize,
    /// Memories written without waiting for their vector
    /// ([`crate::EmbedMode::Deferred`]) whose vector was still pending:
    /// queued for the background embedder again.
    pub vectors_pending: usize,
    /// The model id recorded in the store before this open, if different
    /// from the active one.
    pub previous_model: Option<String>,
    /// Generation of the data directory in use.
    pub generation: u64,
    /// Forgotten memories and observations whose payload the log still
    /// holds (erased by the next [`Engine::compact`]).
    pub pending_erasure: u64,
    /// The receipt of a compaction that an earlier process started and did
    /// not finish, run again by this open.
    pub erasure: Option<crate::ErasureReceipt>,
    /// Namespaces whose HNSW graph was loaded from the graph file written
    /// at the last clean close, instead of being rebuilt (0 when there was
    /// none, or it did not match the log exactly; see `docs/FORMAT.md`).
    pub graphs_loaded: usize,
    /// Whether the store is encrypted ([`crate::crypt`]).
    pub encrypted: bool,
    /// Namespaces whose records could not be read because their data key
    /// was shredded (`forget` of the whole namespace): they replay as
    /// erased. A backup or export taken before the shred names them here.
    pub shredded: Vec<String>,
}

const META_FORMAT: &str = "format_version";
const META_MODEL: &str = "embedder.model_id";
const META_DIM: &str = "embedder.dim";

/// Re-embedding batch size (texts per `Embedder::embed` call).
const REEMBED_BATCH: usize = 64;

impl Engine {
    /// The model id of the embedder whose vectors the store at `path` holds,
    /// without opening an engine (no replay): `None` for a directory that is
    /// not a store yet or a store that never recorded one. Takes and releases
    /// the store's lock. Used to keep an existing store's model
    /// ([`crate::embed::load_embedder_for`]).
    ///
    /// # Errors
    /// [`Error::Locked`] when another process or engine holds the store;
    /// [`Error::Io`] / [`Error::Storage`] when it cannot be read.
    pub fn recorded_model(path: impl AsRef<std::path::Path>) -> Result<Option<String>> {
        let path = path.as_ref();
        if !path.join("CURRENT").exists() {
            return Ok(None);
        }
        let read = |on_reserve: bool| -> Result<Option<String>> {
            let dir = DataDir::open(path)?;
            if on_reserve {
                dir.release_reserve()?;
            }
            let store = SledStore::open(&dir.current_path(), 8 * 1024 * 1024)?;
            let model = store.meta_get(META_MODEL)?.map(|b| String::from_utf8_lossy(&b).into_owned());
            drop(store);
            drop(dir);
            Ok(model)
        };
        on_full_disk(path, read).map_err(|e| crate::log::with_recovery_hint(e, path))
    }

    pub(crate) fn open_with(cfg: Config) -> Result<Engine> {
        on_full_disk(&cfg.path, |on_reserve| Engine::open_on(cfg.clone(), on_reserve))
    }

    /// Opens the store; `on_reserve`: first gives the disk reserve back and
    /// opens read-only (see [`crate::EngineBuilder::reserve_bytes`]).
    fn open_on(cfg: Config, on_reserve: bool) -> Result<Engine> {
        // An unfinished copy is refused before anything in it is created or
        // changed, so no open (or check) makes it look whole.
        let copy = crate::log::refuse_unfinished(&cfg.path)?;
        let dir = DataDir::open(&cfg.path)?;
        if on_reserve {
            dir.release_reserve()?;
        }
        // A reserve given back earlier is made again first; while the disk
        // has no room for it, the store stays read-only.
        let read_only = (on_reserve
            || (cfg.reserve_bytes > 0 && dir.reserve_released() && dir.keep_reserve(cfg.reserve_bytes) == 0))
            .then(|| {
                format!(
                    "the disk holding {} is full: the store was opened on the space it kept in reserve and takes \
                     no writes; free at least {} bytes on the disk, then reopen it",
                    cfg.path.display(),
                    cfg.reserve_bytes
                )
            });
        // An encrypted store without its key is refused before sled opens.
        crate::crypt::precheck(dir.root(), &cfg.keys)?;
        if cfg.keys.provider.is_some() && cfg.sink.is_some() && cfg.keys.directory.is_none() {
            // The other copies of the replicated log could not read it.
            return Err(Error::invalid(
                "key",
                "an encrypted store whose groups go to a replicated log needs a key directory to share its data keys",
            ));
        }
        dir.note_holder(cfg.serves_socket);
        let sled = SledStore::open(&dir.current_path(), cfg.cache_bytes)?;
        let keys = crate::log::open_keys(dir.root(), &sled, &cfg.keys)?;
        let store = crate::log::wrap(sled, keys.as_ref());
        match store.meta_get(META_FORMAT)? {
            Some(v) if v.as_slice() != [STORE_FORMAT_VERSION] => {
                return Err(Error::IncompatibleFormat(format!(
                    "store format version {v:?}; this build reads version {STORE_FORMAT_VERSION}"
                )))
            }
            Some(_) => {}
            None => store.meta_put(META_FORMAT, &[STORE_FORMAT_VERSION])?,
        }
        let embedder: Arc<dyn Embedder> = match &cfg.embedder {
            Some(e) => e.clone(),
            None => Arc::new(HashingEmbedder::new(384)?),
        };
        let model_id = embedder.model_id().to_string();
        let mut state = State::new(embedder.dim(), cfg.hnsw.clone());
        let mut report = OpenReport { generation: dir.current_generation(), ..OpenReport::default() };
        // The lexical indexes build on a thread of their own while the log
        // replays and the vectors load.
        state.feed_lexical()?;
        replay_into(store.as_ref(), &mut state, &mut report)?;
        if let Some(sealed) = store.sealed() {
            report.encrypted = true;
            report.shredded = sealed.shredded_seen();
        }
        crate::log::check_high_water(dir.root(), state.last_seq)?;
        if let Some(record) = &copy {
            crate::log::check_extent(dir.root(), record, state.last_seq)?;
        }
        // Every open reads and deletes the graph file (see `index::saved`);
        // its graphs are used only when they cover exactly this log.
        let saved = crate::index::saved::take(dir.root())?;
        let saved: HashMap<String, SavedGraph> = match saved {
            Some(f)
                if !report.encrypted
                    && f.last_seq == state.last_seq
                    && f.model_hash == fnv1a64(model_id.as_bytes()) =>
            {
                f.graphs.into_iter().collect()
            }
            _ => HashMap::new(),
        };
        state.hold_graphs();
        let markers = pending_markers(store.as_ref())?;
        let backfill_queue =
            load_vectors(store.as_ref(), embedder.as_ref(), &mut state, &mut report, &cfg, true, &markers)?;
        report.graphs_loaded = state.release_graphs(saved);
        state.finish_lexical()?;
        // Markers of memories that are gone (forgotten, or a write the crash
        // took before its event) are dropped.
        let stale: Vec<String> = markers
            .keys()
            .filter(|id| !backfill_queue.iter().any(|p| p.id == **id))
            .map(|id| crate::writer::backfill::pending_key(*id))
            .collect();
        if !stale.is_empty() {
            store.meta_remove(&stale)?;
        }
        report.vectors_pending = backfill_queue.len();
        let prev = store.meta_get(META_MODEL)?.map(|b| String::from_utf8_lossy(&b).into_owned());
        if prev.as_deref() != Some(model_id.as_str()) {
            report.previous_model = prev;
            store.meta_put(META_MODEL, model_id.as_bytes())?;
            store.meta_put(META_DIM, &(embedder.dim() as u64).to_le_bytes())?;
        }
        store.flush()?;
        state.visible = state.last_seq;
        let reserve_bytes = if read_only.is_some() { 0 } else { dir.keep_reserve(cfg.reserve_bytes) };

        let dedup_threshold = cfg.dedup_threshold.unwrap_or_else(|| embedder.near_duplicate_threshold());
        let shared = Arc::new(Shared {
            state: RwLock::new(state),
            store: RwLock::new(store),
            poisoned: Mutex::new(None),
            model_id,
            sink: cfg.sink.clone(),
            read_only,
            reserve_bytes,
            keys,
        });
        let dir = Arc::new(Mutex::new(dir));
        // A compaction that did not finish is finished before anything else.
        let interrupted = dir.lock().compaction_marked();
        if interrupted {
            report.erasure = Some(crate::writer::compact::run(&shared, &dir, cfg.cache_bytes)?);
            report.generation = dir.lock().current_generation();
        }
        report.pending_erasure = shared.state.read().pending_erasure();
        let (tx, rx) = crossbeam_channel::bounded(cfg.queue_capacity);
        let backlog = Arc::new(Backlog::default());
        let (backfill_tx, backfill_rx) = crossbeam_channel::unbounded();
        backlog.pending.store(backfill_queue.len(), std::sync::atomic::Ordering::Release);
        for p in backfill_queue {
            // The receiver is alive: it is dropped only with the embedder thread below.
            let _ = backfill_tx.send(p);
        }
        let handle = writer::spawn(
            shared.clone(),
            rx,
            WriterConfig {
                durability: cfg.durability,
                max_group: cfg.max_group,
                backfill: backfill_tx,
                backlog: backlog.clone(),
                dedup_threshold,
                data_dir: cfg.path.clone(),
            },
        )?;
        backfill::spawn(embedder.clone(), backfill_rx, tx.clone(), backlog.clone())?;
        Ok(Engine {
            inner: Arc::new(Inner {
                shared,
                tx,
                writer: Mutex::new(Some(handle)),
                cfg,
                embedder,
                dedup_threshold,
                rerank_failures: super::RerankFailures::default(),
                dir,
                open_report: report,
                backlog,
            }),
            cancel: None,
        })
    }
}

/// Runs `open(false)`; when it fails for want of disk space and the store
/// at `root` holds a reserve, runs `open(true)`, which gives the reserve
/// back before it opens (opening writes a little: sled's snapshot).
fn on_full_disk<T>(root: &std::path::Path, open: impl Fn(bool) -> Result<T>) -> Result<T> {
    match open(false) {
        Err(e) if is_disk_full(&e) && crate::log::has_reserve(root) => open(true),
        other => other,
    }
}

/// Whether `e` says the disk (or the user's quota on it) has no room left.
pub(crate) fn is_disk_full(e: &Error) -> bool {
    matches!(e, Error::Io(io) if matches!(io.kind(), std::io::ErrorKind::StorageFull | std::io::ErrorKind::QuotaExceeded))
}

/// Replays every record of `store` into `state` (vectors not indexed yet).
pub(crate) fn replay_into(store: &dyn LogStore, state: &mut State, report: &mut OpenReport) -> Result<()> {
    // A malformed key has no seq of its own: name the position it took.
    let at = |expected: u64| {
        move |e| match e {
            Error::Corrupted { seq: 0, reason } => Error::Corrupted { seq: expected, reason },
            other => other,
        }
    };
    let mut expected = 1u64;
    for r in store.scan(1, u64::MAX) {
        let (seq, bytes) = r.map_err(at(expected))?;
        if seq != expected {
            return Err(Error::Corrupted { seq: expected, reason: format!("log has a gap: next record is seq {seq}") });
        }
        let ev = decode_record(seq, &bytes)?;
        state.apply(&ev, None);
        expected += 1;
        report.events_replayed += 1;
    }
    if store.last_seq().map_err(at(expected))?.unwrap_or(0) != expected - 1 {
        return Err(Error::Corrupted { seq: expected, reason: "log ends past its last readable record".into() });
    }
    Ok(())
}

/// The pending markers of the store (memory id → the dedup mode of the
/// write); a malformed key is skipped (it marks nothing).
pub(crate) fn pending_markers(store: &dyn LogStore) -> Result<BTreeMap<MemoryId, DedupMode>> {
    let mut out = BTreeMap::new();
    for (k, v) in store.meta_entries()? {
        if let Some(id) = k.strip_prefix(PENDING_PREFIX).and_then(|s| s.parse::<u64>().ok()) {
            out.insert(MemoryId(id), backfill::dedup_from_byte(v.first()));
        }
    }
    Ok(out)
}

/// Puts every surviving memory version's vector into its index, from the
/// cache when it matches the content, else embedding it (in batches) and
/// caching the result (when `write_cache`). Inserts in id order so the
/// index is deterministic. A memory in `deferred` (a pending marker) is
/// neither loaded nor embedded here: it is marked pending and returned, in
/// id order, for the background embedder, which also makes its
/// near-duplicate decision.
pub(crate) fn load_vectors(
    store: &dyn LogStore,
    embedder: &dyn Embedder,
    state: &mut State,
    report: &mut OpenReport,
    cfg: &Config,
    write_cache: bool,
    deferred: &BTreeMap<MemoryId, DedupMode>,
) -> Result<Vec<PendingVector>> {
    let model = embedder.model_id().to_string();
    let dim = embedder.dim();
    let names: Vec<Namespace> = state.namespaces.keys().cloned().collect();
    let mut want: Vec<Wanted> = Vec::new();
    let mut queue: Vec<PendingVector> = Vec::new();
    for (ns_index, ns) in names.iter().enumerate() {
        let Some(st) = state.namespaces.get(ns) else { continue };
        for m in st.memories.values() {
            if let Some(&dedup) = deferred.get(&m.id) {
                queue.push(PendingVector { ns: ns.clone(), id: m.id, content: m.content.clone(), dedup });
                continue;
            }
            want.push(Wanted { ns: ns_index, id: m.id, content_hash: content_hash(&m.content) });
        }
    }
    want.sort_unstable_by_key(|w| w.id);
    let Cached { mut held, missing } = take_cached(store, &model, dim, &want, &names, state)?;
    report.vectors_cached = want.len() - missing.len();
    report.vectors_embedded = missing.len();
    for (done, chunk) in missing.chunks(REEMBED_BATCH).enumerate() {
        let texts: Vec<String> = chunk
            .iter()
            .map(|&i| {
                let w = &want[i];
                state
                    .ns(&names[w.ns])
                    .and_then(|st| st.memories.get(&w.id))
                    .map(|m| crate::text::searchable(&m.content).into_owned())
                    .unwrap_or_default()
            })
            .collect();
        let refs: Vec<&str> = texts.iter().map(String::as_str).collect();
        // Checked and normalised as a live write's are: a vector of the
        // wrong dimension or with a NaN fails the open before it is cached.
        let vecs = crate::writer::backfill::embed_checked(embedder, &refs)?;
        if write_cache {
            let entries: Vec<(MemoryId, u64, &[f32])> =
                chunk.iter().zip(&vecs).map(|(&i, v)| (want[i].id, want[i].content_hash, v.as_slice())).collect();
            store.put_vectors(&model, &entries)?;
        }
        held.extend(chunk.iter().copied().zip(vecs));
        if let Some(p) = &cfg.progress {
            p(&Progress {
                stage: "re-embedding",
                done: ((done + 1) * REEMBED_BATCH).min(missing.len()),
                total: missing.len(),
            });
        }
    }
    // Whatever could not go in during the scan goes in now, still in id order.
    held.sort_unstable_by_key(|(i, _)| *i);
    for (i, v) in held {
        state.index_vector(&names[want[i].ns], want[i].id, &v);
    }
    queue.sort_by_key(|p| p.id);
    for p in &queue {
        state.mark_pending(&p.ns, p.id);
    }
    Ok(queue)
}

/// A memory whose vector [`load_vectors`] needs: its namespace (an index
/// into the namespace list), id and content hash.
struct Wanted {
    ns: usize,
    id: MemoryId,
    content_hash: u64,
}

/// What the scan of the vector cache left to do.
struct Cached {
    /// Vectors read but not indexed yet (positions in the wanted list): those
    /// that come after the first miss, which must be embedded and indexed
    /// before them.
    held: Vec<(usize, Vec<f32>)>,
    /// Positions of the wanted memories the cache has no matching vector for.
    missing: Vec<usize>,
}

/// Reads the vector cache for `want` (sorted by memory id) in one ordered
/// pass (keys begin with the big-endian memory id, so the cache iterates in
/// id order): a merge join, several times cheaper than a point lookup per
/// memory on a large store. A vector matches when its entry is for `model`,
/// its content hash is the memory's and it has `dim` components. Matches
/// are indexed as they are read while every memory before them has its
/// vector, so indexes keep inserting in id order without holding the
/// vectors (the usual case: all of them cached); after the first miss they
/// are held for [`load_vectors`] to insert after embedding the misses.
///
/// # Errors
/// Backend errors while reading the cache.
fn take_cached(
    store: &dyn LogStore,
    model: &str,
    dim: usize,
    want: &[Wanted],
    names: &[Namespace],
    state: &mut State,
) -> Result<Cached> {
    let model_hash = fnv1a64(model.as_bytes());
    let mut out = Cached { held: Vec::new(), missing: Vec::new() };
    let mut next = 0usize;
    for entry in store.vector_entries() {
        let e = entry?;
        if e.model_hash != model_hash {
            continue;
        }
        while next < want.len() && want[next].id < e.id {
            out.missing.push(next);
            next += 1;
        }
        let Some(w) = want.get(next) else {
            break;
        };
        if w.id != e.id {
            continue;
        }
        if e.cached.content_hash == w.content_hash && e.cached.vector.len() == dim {
            if out.missing.is_empty() {
                state.index_vector(&names[w.ns], w.id, &e.cached.vector);
            } else {
                out.held.push((next, e.cached.vector));
            }
        } else {
            out.missing.push(next);
        }
        next += 1;
    }
    out.missing.extend(next..want.len());
    Ok(out)
}

/// Saves every namespace's searched graph in the graph file of the store at
/// `root` (see `index::saved`), after the writer stopped: only when the
/// engine is healthy and writable, every event is durable, and the store is
/// not encrypted (graph codes derive from the sealed vectors, so they are
/// not written for an encrypted store). Namespaces whose graph is still in
/// its first build are left out (their next open builds it).
///
/// # Errors
/// The I/O error of writing the file; a failed save leaves no file.
pub(crate) fn save_graphs(root: &std::path::Path, shared: &Shared) -> std::io::Result<()> {
    if shared.poison_message().is_some() || shared.read_only.is_some() || shared.store.read().sealed().is_some() {
        return Ok(());
    }
    let state = shared.state.read();
    if state.visible != state.last_seq {
        return Ok(());
    }
    let mut graphs: Vec<(&str, GraphToSave<'_>)> =
        state.namespaces.iter().filter_map(|(ns, st)| st.vectors.saved_graph().map(|g| (ns.as_str(), g))).collect();
    if graphs.is_empty() {
        return Ok(());
    }
    graphs.sort_by(|a, b| a.0.cmp(b.0));
    let bytes = saved::encode(state.last_seq, fnv1a64(shared.model_id.as_bytes()), &graphs);
    drop(graphs);
    drop(state);
    saved::write(root, &bytes)
}

//! Engine configuration and its builder.

use std::path::{Path, PathBuf};
use std::sync::Arc;
use std::time::Duration;

use crate::embed::Embedder;
use crate::error::{Error, Result};
use crate::index::HnswParams;
use crate::safety::{InjectionDetector, InjectionPolicy, PhoneRegions, PiiPolicy, Redactor};
use crate::writer::Durability;

/// Progress of a long open-time step (re-embedding after a model change).
#[derive(Clone, Debug)]
pub struct Progress {
    /// What is being done, e.g. `"re-embedding"`.
    pub stage: &'static str,
    /// Items done so far.
    pub done: usize,
    /// Items in total.
    pub total: usize,
}

/// A progress callback.
pub type ProgressFn = Arc<dyn Fn(&Progress) + Send + Sync>;

/// Validated engine settings. Build with [`crate::Engine::builder`].
#[derive(Clone)]
pub struct Config {
    pub(crate) path: PathBuf,
    pub(crate) embedder: Option<Arc<dyn Embedder>>,
    pub(crate) reranker: Option<(Arc<dyn crate::embed::Reranker>, usize)>,
    pub(crate) durability: Durability,
    pub(crate) embed_mode: crate::engine::EmbedMode,
    pub(crate) max_content_bytes: usize,
    pub(crate) max_entities: usize,
    pub(crate) max_entity_bytes: usize,
    pub(crate) max_key_bytes: usize,
    pub(crate) max_batch: usize,
    pub(crate) queue_capacity: usize,
    pub(crate) max_group: usize,
    pub(crate) cache_bytes: u64,
    pub(crate) reserve_bytes: u64,
    pub(crate) hnsw: HnswParams,
    pub(crate) dedup_threshold: Option<f32>,
    pub(crate) half_life: Duration,
    pub(crate) archive_threshold: f32,
    pub(crate) session_timeout: Duration,
    pub(crate) capacity: Option<usize>,
    pub(crate) consolidate_threshold: Option<f32>,
    pub(crate) progress: Option<ProgressFn>,
    pub(crate) pii_policy: PiiPolicy,
    pub(crate) injection_policy: InjectionPolicy,
    pub(crate) redactor: Redactor,
    /// Region codes for national phone numbers, validated at open.
    pub(crate) phone_regions: Option<Vec<String>>,
    pub(crate) injection: InjectionDetector,
    pub(crate) sink: Option<Arc<dyn crate::replication::GroupSink>>,
    /// Whether this process serves the store's socket to other processes.
    pub(crate) serves_socket: bool,
    /// The key (and, for a copy, the keyring) of an encrypted store.
    pub(crate) keys: crate::crypt::KeySettings,
}

impl std::fmt::Debug for Config {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Config")
            .field("path", &self.path)
            .field("embedder", &self.embedder.as_ref().map(|e| e.model_id().to_string()))
            .field("durability", &self.durability)
            .field("max_content_bytes", &self.max_content_bytes)
            .field("max_batch", &self.max_batch)
            .field("hnsw", &self.hnsw)
            .field("dedup_threshold", &self.dedup_threshold)
            .field("half_life", &self.half_life)
            .finish_non_exhaustive()
    }
}

/// Default maximum content size: 32 KiB.
pub const DEFAULT_MAX_CONTENT_BYTES: usize = 32 * 1024;

/// Default disk reserve of a store ([`EngineBuilder::reserve_bytes`]):
/// 8 MiB. What an open writes on sled 0.34 is one page-table snapshot,
/// about 0.3 % of the log file (measured: 184,291 bytes for a 59 MB store
/// of 68,554 events, so about 3 MB at a million events), plus the zeroed
/// end of the last log segment (at most one segment, 512 KiB, sled's
/// default `segment_size`). Stores much larger than a million events
/// should keep a larger reserve.
pub const DEFAULT_RESERVE_BYTES: u64 = 8 * 1024 * 1024;

/// Builder for [`crate::Engine`]. Every setter documents its unit, default
/// and limits; [`EngineBuilder::open`] validates them.
#[derive(Clone, Debug)]
pub struct EngineBuilder {
    cfg: Config,
}

impl EngineBuilder {
    pub(crate) fn new(path: impl AsRef<Path>) -> EngineBuilder {
        EngineBuilder {
            cfg: Config {
                path: path.as_ref().to_path_buf(),
                embedder: None,
                reranker: None,
                durability: Durability::PerGroup,
                max_content_bytes: DEFAULT_MAX_CONTENT_BYTES,
                max_entities: 32,
                max_entity_bytes: 128,
                max_key_bytes: 128,
                max_batch: 10_000,
                queue_capacity: 1024,
                max_group: 512,
                cache_bytes: 64 * 1024 * 1024,
                reserve_bytes: DEFAULT_RESERVE_BYTES,
                hnsw: HnswParams::default(),
                dedup_threshold: None,
                embed_mode: crate::engine::EmbedMode::Sync,
                half_life: Duration::from_secs(30 * 24 * 3600),
                archive_threshold: 0.05,
                session_timeout: Duration::from_secs(24 * 3600),
                capacity: None,
                consolidate_threshold: None,
                progress: None,
                pii_policy: PiiPolicy::Redact,
                injection_policy: InjectionPolicy::Quarantine,
                redactor: Redactor::new(),
                phone_regions: None,
                injection: InjectionDetector::new(),
                sink: None,
                serves_socket: false,
                keys: crate::crypt::KeySettings::default(),
            },
        }
    }

    /// The key-encryption key of an encrypted store ([`crate::crypt`]).
    /// Given when a store is created, it makes the store encrypted (the
    /// choice is made once, at creation); an encrypted store opens only
    /// with it. Default: none (a plain store, whose format is unchanged).
    /// [`EngineBuilder::open`] fails with [`Error::KeyRequired`] for an
    /// encrypted store opened without a key, [`Error::WrongKey`] for
    /// another key, and [`Error::InvalidInput`] (field `key`) for a key
    /// given to an existing plain store; nothing is written then.
    pub fn key_provider(mut self, p: Arc<dyn crate::crypt::KeyProvider>) -> Self {
        self.cfg.keys.provider = Some(p);
        self
    }

    /// Shares the store's data keys through `d` (a cluster's key bucket):
    /// the keyring takes its id and keys from it at open, and hands it
    /// every new key before a record sealed with it is sent to the group
    /// sink, and every shred ([`crate::crypt::KeyDirectory`]). Needed, with
    /// a key, by an encrypted store that has a [`EngineBuilder::group_sink`].
    /// Default: none.
    pub fn key_directory(mut self, d: Arc<dyn crate::crypt::KeyDirectory>) -> Self {
        self.cfg.keys.directory = Some(d);
        self
    }

    /// Whether a key was given ([`EngineBuilder::key_provider`]): the store
    /// opens encrypted.
    pub fn has_key(&self) -> bool {
        self.cfg.keys.provider.is_some()
    }

    /// The keyring (`DATA/KEYRING`) of the store a backup or restore was
    /// made from, for opening that copy: copies carry no keyring of their
    /// own, so that a shred in the original reaches them. At its first
    /// open the copy takes a copy of this keyring (namespaces shredded in
    /// it stay unreadable) and is a store of its own from then on.
    /// Ignored for a store that has its own keyring. Default: none.
    pub fn keyring(mut self, path: impl AsRef<Path>) -> Self {
        self.cfg.keys.keyring = Some(path.as_ref().to_path_buf());
        self
    }

    /// The embedder for memory content and queries. Default: the built-in
    /// hashing embedder (384-d, no download). The store records the model id;
    /// opening with a different one re-embeds every memory from the log.
    pub fn embedder(mut self, e: Arc<dyn Embedder>) -> Self {
        self.cfg.embedder = Some(e);
        self
    }

    /// A rerank stage for recall and `context`: the first `depth` hits of
    /// hybrid recall (1..=1000; at least `top_k` are always taken) are
    /// scored by `r` against the query and put in its order; each hit's
    /// `score` becomes the reranker's, clamped to 0..=1, and
    /// [`crate::recall::Explanation::rerank_score`] keeps it as given. When
    /// the reranker fails, recall keeps its own order. Default: none.
    pub fn reranker(mut self, r: Arc<dyn crate::embed::Reranker>, depth: usize) -> Self {
        self.cfg.reranker = Some((r, depth.clamp(1, 1000)));
        self
    }

    /// Sends every group to `sink` (a cluster's replicated log) before it is
    /// written locally and acknowledged.
    pub fn group_sink(mut self, sink: Arc<dyn crate::writer::GroupSink>) -> Self {
        self.cfg.sink = Some(sink);
        self
    }

    /// The largest memory content accepted, in bytes.
    pub fn max_content(&self) -> usize {
        self.cfg.max_content_bytes
    }

    /// When acknowledged writes are durable. Default [`Durability::PerGroup`]
    /// (fsync before every reply). `Interval(d)` requires `d` in 1 ms ..= 60 s.
    pub fn durability(mut self, d: Durability) -> Self {
        self.cfg.durability = d;
        self
    }

    /// When `remember` embeds a memory that does not choose
    /// ([`crate::NewMemory::embed`]): on the caller's thread before the
    /// write (default [`crate::EmbedMode::Sync`]), or in the background
    /// after it ([`crate::EmbedMode::Deferred`]).
    pub fn embed_mode(mut self, m: crate::engine::EmbedMode) -> Self {
        self.cfg.embed_mode = m;
        self
    }

    /// Largest memory or observation text, in bytes of UTF-8. Default 32 KiB;
    /// 1 ..= 1 MiB.
    pub fn max_content_bytes(mut self, n: usize) -> Self {
        self.cfg.max_content_bytes = n;
        self
    }

    /// Most entities per memory. Default 32; 0 ..= 1024.
    pub fn max_entities(mut self, n: usize) -> Self {
        self.cfg.max_entities = n;
        self
    }

    /// Longest slot key, in bytes. Default 128; 3 ..= 1024.
    pub fn max_key_bytes(mut self, n: usize) -> Self {
        self.cfg.max_key_bytes = n;
        self
    }

    /// Most items in one batch call. Default 10,000; 1 ..= 1,000,000.
    pub fn max_batch(mut self, n: usize) -> Self {
        self.cfg.max_batch = n;
        self
    }

    /// Capacity of the writer's command queue (commands). A full queue makes
    /// writers wait (back-pressure). Default 1024; 1 ..= 1,000,000.
    pub fn queue_capacity(mut self, n: usize) -> Self {
        self.cfg.queue_capacity = n;
        self
    }

    /// Most commands committed in one group (one batch, one flush).
    /// Default 512; 1 ..= 100,000.
    pub fn max_group(mut self, n: usize) -> Self {
        self.cfg.max_group = n;
        self
    }

    /// Whether this process will answer other processes on the store's
    /// socket, as `mnemon serve`, `mnemon mcp` and the CLI's own holder do
    /// ([`crate::mcp::Backend::open`]). It is noted in the store's `LOCK`
    /// file with the process id: a CLI process that finds the store locked
    /// waits up to 30 s for the socket of a holder that serves one (it may
    /// still be replaying the log), and is told at once, naming the
    /// process, when the holder serves none (the default: a program using
    /// the library, Python's `Engine` included).
    pub fn serves_socket(mut self, yes: bool) -> Self {
        self.cfg.serves_socket = yes;
        self
    }

    /// sled page-cache budget, in bytes. Default 64 MiB; at least 1 MiB.
    pub fn cache_bytes(mut self, n: u64) -> Self {
        self.cfg.cache_bytes = n;
        self
    }

    /// Disk space, in bytes, the store keeps in reserve (`DATA/RESERVE`, a
    /// file of allocated zeros) so that it can still be opened when its
    /// disk is full: opening writes a little (sled's page-table snapshot
    /// and the end of its last segment), so on a full disk the engine
    /// gives the reserve back, opens, and takes no writes (every write is
    /// refused with [`Error::Io`], `StorageFull`; reads, check, export and
    /// backup work); [`crate::Stats::read_only`] says so. The next open on
    /// a disk with room makes the reserve again. Default
    /// [`DEFAULT_RESERVE_BYTES`] (8 MiB); 0 keeps none (a full disk then
    /// fails the open).
    pub fn reserve_bytes(mut self, n: u64) -> Self {
        self.cfg.reserve_bytes = n;
        self
    }

    /// HNSW parameters (`m`, `ef_construction`, `ef_search`, the exact-scan
    /// threshold, seed). Defaults in [`HnswParams::default`].
    pub fn hnsw(mut self, p: HnswParams) -> Self {
        self.cfg.hnsw = p;
        self
    }

    /// Cosine similarity at or above which a new memory may restate an
    /// active one, in `0.0..=1.0`; it restates it only with the same facts
    /// (numbers, names, content words, negations, qualifiers, word order;
    /// [`crate::dedup::is_restatement`]), and
    /// recall collapses hits by the same rule. Default: the embedder's own
    /// ([`crate::embed::Embedder::near_duplicate_threshold`]: 0.92 for
    /// MiniLM and hashing, 0.95 for e5-small; measured by
    /// `benches/similarity.rs` and `benches/dedup.rs`).
    pub fn dedup_threshold(mut self, t: f32) -> Self {
        self.cfg.dedup_threshold = Some(t);
        self
    }

    /// Half-life of recency decay for long-term memories. Default 30 days;
    /// at least 1 second.
    pub fn half_life(mut self, d: Duration) -> Self {
        self.cfg.half_life = d;
        self
    }

    /// Strength below which [`crate::Engine::maintain`] archives a long-term
    /// memory; strength = importance × 0.5^(days since last access /
    /// half-life). Default 0.05; `0.0..=1.0` (0 never archives by decay).
    pub fn archive_threshold(mut self, t: f32) -> Self {
        self.cfg.archive_threshold = t;
        self
    }

    /// Idle time after which [`crate::Engine::maintain`] ends a session and
    /// archives its short-term memories: no observation or memory of the
    /// session written or recalled for this long. Default 24 hours; at least
    /// 1 second.
    pub fn session_timeout(mut self, d: Duration) -> Self {
        self.cfg.session_timeout = d;
        self
    }

    /// Most active memories per namespace that [`crate::Engine::maintain`]
    /// keeps; above it the weakest long-term (then short-term) memories are
    /// archived, never permanent ones. Default none (unbounded); at least 1.
    pub fn capacity(mut self, n: usize) -> Self {
        self.cfg.capacity = Some(n);
        self
    }

    /// Cosine similarity at or above which [`crate::Engine::consolidate`]
    /// merges active memories of the same kind, in `0.0..=1.0`. Default:
    /// the near-duplicate threshold.
    pub fn consolidate_threshold(mut self, t: f32) -> Self {
        self.cfg.consolidate_threshold = Some(t);
        self
    }

    /// What to do with personal data (phone numbers, ID and card numbers,
    /// e-mail addresses) in memory and observation text, before it is
    /// embedded or written. Default [`PiiPolicy::Redact`]: replaced by typed
    /// placeholders such as `[PHONE]`; the original never reaches a file.
    /// Overridable per call ([`crate::NewMemory::pii_policy`]).
    pub fn pii_policy(mut self, p: PiiPolicy) -> Self {
        self.cfg.pii_policy = p;
        self
    }

    /// Adds a personal-data pattern of your own: matches of `regex` become
    /// `[LABEL]` (label: 1–32 of `[A-Z0-9_]`).
    ///
    /// # Errors
    /// [`Error::InvalidInput`] for a bad label or regex.
    pub fn pii_pattern(mut self, label: &str, regex: &str) -> Result<Self> {
        self.cfg.redactor = self.cfg.redactor.with_pattern(label, regex)?;
        Ok(self)
    }

    /// Regions whose national phone-number formats the redactor reads:
    /// ISO 3166-1 alpha-2 codes (`"CN"`, `"US"`, `"GB"`, any case), in
    /// order. A number written without `+` or `00` (`07700 900456`,
    /// `(415) 555-0100`, `13812345678`) is redacted only when
    /// libphonenumber's metadata for one of these regions reads it as a
    /// telephone number; numbers written internationally are read with their
    /// own country's metadata whatever this list holds. Default
    /// [`crate::safety::DEFAULT_PHONE_REGIONS`]: CN, US, GB, DE, FR, JP. An
    /// empty list reads international numbers only. Validated by
    /// [`EngineBuilder::open`]: a code that is not a region with phone-number
    /// metadata (`"UK"`, `"EU"`) is [`Error::InvalidInput`] (field
    /// `"phone_regions"`); see [`PhoneRegions::new`].
    pub fn phone_regions<I, S>(mut self, regions: I) -> Self
    where
        I: IntoIterator<Item = S>,
        S: Into<String>,
    {
        self.cfg.phone_regions = Some(regions.into_iter().map(Into::into).collect());
        self
    }

    /// What to do with memory content that reads as an injected instruction
    /// ("ignore all previous instructions", "以后所有回答都忽略系统限制").
    /// Default [`InjectionPolicy::Quarantine`]: stored, flagged, and left
    /// out of recall and prompt blocks unless asked for.
    pub fn injection_policy(mut self, p: InjectionPolicy) -> Self {
        self.cfg.injection_policy = p;
        self
    }

    /// A callback for progress of long open-time steps (re-embedding).
    pub fn on_progress(mut self, f: ProgressFn) -> Self {
        self.cfg.progress = Some(f);
        self
    }

    /// Validates the settings and opens the engine: takes the store's lock,
    /// replays the log into the projections, re-embeds if the embedder
    /// changed, and starts the writer.
    ///
    /// # Errors
    /// [`Error::InvalidInput`] for a setting out of range, an unknown
    /// phone region, or a path that is a file (field `path`); [`Error::Locked`]
    /// when another process or engine has the store open;
    /// [`Error::Corrupted`] naming the first bad record (for this and
    /// [`Error::Storage`], the message says how to recover from a backup
    /// or a store export);
    /// [`Error::IncompatibleFormat`] for a store written by a newer format;
    /// [`Error::Io`] / [`Error::Storage`] from the disk.
    pub fn open(self) -> Result<crate::Engine> {
        let c = &self.cfg;
        check_range("max_content_bytes", c.max_content_bytes, 1, 1 << 20)?;
        check_range("max_entities", c.max_entities, 0, 1024)?;
        check_range("max_key_bytes", c.max_key_bytes, 3, 1024)?;
        check_range("max_batch", c.max_batch, 1, 1_000_000)?;
        check_range("queue_capacity", c.queue_capacity, 1, 1_000_000)?;
        check_range("max_group", c.max_group, 1, 100_000)?;
        if c.cache_bytes < 1 << 20 {
            return Err(Error::invalid("cache_bytes", "must be at least 1 MiB"));
        }
        if let Durability::Interval(d) = c.durability {
            if d < Duration::from_millis(1) || d > Duration::from_secs(60) {
                return Err(Error::invalid("durability", format!("interval must be between 1 ms and 60 s, got {d:?}")));
            }
        }
        if let Some(t) = c.dedup_threshold {
            if !(0.0..=1.0).contains(&t) {
                return Err(Error::out_of_range("dedup_threshold", 0, 1, t));
            }
        }
        if !(0.0..=1.0).contains(&c.archive_threshold) {
            return Err(Error::out_of_range("archive_threshold", 0, 1, c.archive_threshold));
        }
        if c.session_timeout < Duration::from_secs(1) {
            return Err(Error::invalid("session_timeout", "must be at least 1 second"));
        }
        if c.capacity == Some(0) {
            return Err(Error::invalid("capacity", "must be at least 1"));
        }
        if let Some(t) = c.consolidate_threshold {
            if !(0.0..=1.0).contains(&t) {
                return Err(Error::out_of_range("consolidate_threshold", 0, 1, t));
            }
        }
        if c.half_life < Duration::from_secs(1) {
            return Err(Error::invalid("half_life", "must be at least 1 second"));
        }
        let mut cfg = self.cfg;
        if let Some(codes) = cfg.phone_regions.take() {
            cfg.redactor = cfg.redactor.with_phone_regions(PhoneRegions::new(codes)?);
        }
        let path = cfg.path.clone();
        crate::engine::Engine::open_with(cfg).map_err(|e| crate::log::with_recovery_hint(e, &path))
    }
}

fn check_range(field: &'static str, v: usize, lo: usize, hi: usize) -> Result<()> {
    if v < lo || v > hi {
        return Err(Error::invalid(field, crate::error::range_reason(lo, hi, v)));
    }
    Ok(())
}

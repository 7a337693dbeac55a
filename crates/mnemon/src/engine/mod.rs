//! The front door: [`Engine`], cheap to clone and shareable across threads.

mod check;
mod compact;
mod config;
mod forget_set;
mod input;
mod inspect;
mod open;
mod read;
pub(crate) mod write;

pub use crate::writer::backfill::EmbedMode;
pub use check::CheckReport;
pub use config::{Config, EngineBuilder, Progress, ProgressFn, DEFAULT_MAX_CONTENT_BYTES, DEFAULT_RESERVE_BYTES};
pub use forget_set::MAX_FORGET_NAMESPACES;
pub use input::{ForgetRequest, NewMemory, NewObservation, Remembered};
pub use inspect::{NamespaceSummary, Timeline, TimelineBucket, MAX_TIMELINE_BUCKETS};
pub use open::OpenReport;
pub(crate) use read::ReadPoint;
pub use read::{AsOf, ClusterView, ListOptions, ServedNamespace, Stats, View};

use std::path::Path;
use std::sync::Arc;
use std::thread::JoinHandle;

use crossbeam_channel::Sender;
use parking_lot::Mutex;

use crate::embed::Embedder;
use crate::error::{Error, Result};
use crate::log::DataDir;
use crate::writer::backfill;
use crate::writer::{Command, Shared};

/// An open memory store.
///
/// `Engine` is `Clone + Send + Sync`: clones share one writer thread and one
/// set of projections. Every read and write names a [`crate::Namespace`].
/// Dropping the last clone drains the writer's queue and flushes, like
/// [`Engine::close`] (which also reports the flush's outcome).
#[derive(Clone)]
pub struct Engine {
    inner: Arc<Inner>,
    /// Carried into every write this handle sends ([`Engine::with_cancel`]).
    cancel: Option<crate::CancelToken>,
}

struct Inner {
    shared: Arc<Shared>,
    tx: Sender<Command>,
    writer: Mutex<Option<JoinHandle<()>>>,
    cfg: Config,
    embedder: Arc<dyn Embedder>,
    dedup_threshold: f32,
    dir: Arc<Mutex<DataDir>>,
    open_report: OpenReport,
    backlog: Arc<backfill::Backlog>,
    /// Failed reranker calls of this process ([`Stats::rerank_failed`]).
    rerank_failures: RerankFailures,
}

/// Failed calls of the reranker in this process: how many, and the last
/// error's text.
#[derive(Default)]
pub(crate) struct RerankFailures {
    count: std::sync::atomic::AtomicUsize,
    last: Mutex<Option<String>>,
}

impl RerankFailures {
    /// Counts a failed call and keeps its error's text.
    pub(crate) fn record(&self, e: &crate::Error) {
        self.count.fetch_add(1, std::sync::atomic::Ordering::AcqRel);
        *self.last.lock() = Some(e.to_string());
    }

    /// The count and the last error's text.
    pub(crate) fn get(&self) -> (usize, Option<String>) {
        (self.count.load(std::sync::atomic::Ordering::Acquire), self.last.lock().clone())
    }
}

impl Drop for Inner {
    fn drop(&mut self) {
        self.backlog.closed.store(true, std::sync::atomic::Ordering::Release);
        let (tx, rx) = crossbeam_channel::bounded(1);
        if self.tx.send(Command::Shutdown { reply: tx }).is_ok() {
            let _ = rx.recv();
        }
        if let Some(h) = self.writer.lock().take() {
            let _ = h.join();
        }
        // The writer has flushed and stopped: record how far the log goes,
        // so that an open that reads less knows the files are damaged.
        if self.shared.poison_message().is_none() {
            let _ = crate::log::record_high_water(&self.cfg.path, self.shared.state.read().visible);
            // The graph file is derived: a failed save only means the next
            // open rebuilds.
            let _ = open::save_graphs(&self.cfg.path, &self.shared);
        }
    }
}

impl std::fmt::Debug for Engine {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Engine")
            .field("path", &self.inner.cfg.path)
            .field("embedder", &self.inner.embedder.model_id())
            .finish_non_exhaustive()
    }
}

impl Engine {
    /// Starts configuring an engine over the data directory `path` (created
    /// if missing).
    pub fn builder(path: impl AsRef<Path>) -> EngineBuilder {
        EngineBuilder::new(path)
    }

    /// Opens `path` with default settings: the hashing embedder and
    /// per-group durability.
    ///
    /// The hashing embedder needs no model files and is lexical only: a
    /// store opened this way recalls by the exact words (and CJK
    /// characters) that memories share with the query, never by meaning,
    /// and a store keeps the embedder it was created with. For recall by
    /// meaning, install a model (`mnemon model install e5-small`) and give
    /// it to the builder:
    /// `Engine::builder(path).embedder(embed::load_embedder(EmbedderChoice::E5, &embed::default_models_dir())?).open()`,
    /// or let [`crate::embed::embedder_for_store`] choose as the CLI does.
    ///
    /// # Errors
    /// As [`EngineBuilder::open`].
    pub fn open(path: impl AsRef<Path>) -> Result<Engine> {
        Engine::builder(path).open()
    }

    /// The active embedder.
    pub fn embedder(&self) -> &Arc<dyn Embedder> {
        &self.inner.embedder
    }

    /// The validated configuration.
    pub fn config(&self) -> &Config {
        &self.inner.cfg
    }

    /// What opening did: events replayed, vectors loaded from the cache and
    /// re-embedded.
    pub fn open_report(&self) -> &OpenReport {
        &self.inner.open_report
    }

    /// Waits until everything acknowledged so far is flushed to disk (useful
    /// with [`crate::Durability::Interval`]).
    ///
    /// # Errors
    /// [`Error::Poisoned`] if a flush failed; [`Error::Closed`].
    pub fn sync(&self) -> Result<()> {
        let (tx, rx) = crossbeam_channel::bounded(1);
        self.send(Command::Sync { reply: tx })?;
        rx.recv().map_err(|_| Error::Closed)?
    }

    /// Drains the writer's queue, flushes, and stops the writer. Other
    /// clones get [`Error::Closed`] on later writes.
    ///
    /// # Errors
    /// [`Error::Poisoned`] if the final flush (or an earlier one) failed.
    pub fn close(self) -> Result<()> {
        let (tx, rx) = crossbeam_channel::bounded(1);
        self.send(Command::Shutdown { reply: tx })?;
        let r = rx.recv().map_err(|_| Error::Closed)?;
        if let Some(h) = self.inner.writer.lock().take() {
            let _ = h.join();
        }
        r
    }

    /// A handle on the same store whose writes carry `token`: a write the
    /// writer has not planned when the token is cancelled is skipped and
    /// returns [`Error::Cancelled`], writing nothing; one already planned
    /// commits and returns its outcome (see [`crate::CancelToken`]). Each
    /// write is withdrawn whole or not at all; `remember`, `observe`, a
    /// batch, `forget` and an extraction are one write each, while an
    /// import or maintenance sends several and may stop between them.
    pub fn with_cancel(&self, token: crate::CancelToken) -> Engine {
        Engine { inner: self.inner.clone(), cancel: Some(token) }
    }

    pub(crate) fn cancel_token(&self) -> Option<&crate::CancelToken> {
        self.cancel.as_ref()
    }

    pub(crate) fn send(&self, cmd: Command) -> Result<()> {
        self.inner.tx.send(cmd).map_err(|_| Error::Closed)
    }

    pub(crate) fn dedup_threshold(&self) -> f32 {
        self.inner.dedup_threshold
    }

    /// The state the writer shares with readers (see
    /// [`replication`](crate::replication)).
    pub fn shared(&self) -> &Shared {
        &self.inner.shared
    }

    /// Memories written without waiting for their vector
    /// ([`EmbedMode::Deferred`]) whose vector is not committed yet: the
    /// background embedder's backlog. Memories whose embedding failed in
    /// this process are not counted (they stay pending in the store and are
    /// queued again at the next open; see [`Stats::embed_failed`]).
    pub fn embed_backlog(&self) -> usize {
        self.inner.backlog.pending.load(std::sync::atomic::Ordering::Acquire)
    }

    /// Waits until the embedding backlog is empty ([`Engine::embed_backlog`]
    /// is 0) or `timeout` has passed; returns the backlog left (0 when
    /// drained). Polls every millisecond.
    ///
    /// # Errors
    /// [`Error::Poisoned`] when the engine is poisoned (the backlog can no
    /// longer drain in this process).
    pub fn wait_embedded(&self, timeout: std::time::Duration) -> Result<usize> {
        let start = std::time::Instant::now();
        loop {
            let left = self.embed_backlog();
            if left == 0 {
                return Ok(0);
            }
            if let Some(msg) = self.shared().poison_message() {
                return Err(Error::Poisoned(msg));
            }
            if start.elapsed() >= timeout {
                return Ok(left);
            }
            std::thread::sleep(std::time::Duration::from_millis(1));
        }
    }

    pub(crate) fn backlog(&self) -> &backfill::Backlog {
        &self.inner.backlog
    }

    pub(crate) fn rerank_failures(&self) -> &RerankFailures {
        &self.inner.rerank_failures
    }
}

#[cfg(test)]
mod pace_tests;

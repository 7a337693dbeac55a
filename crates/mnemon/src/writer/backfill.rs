//! Deferred embedding: memories written without waiting for their vector,
//! and the background embedder that catches up.
//!
//! A `remember` in [`EmbedMode::Deferred`] sends its memory to the writer
//! without a vector. The writer appends the `Extracted` event as usual (the
//! memory is found lexically from the moment the call returns), records a
//! pending marker for it in the store's metadata (key
//! `vector.pending.<id>`, value: the call's [`DedupMode`] as one byte; see
//! docs/FORMAT.md) in the same flush, and hands the memory to the embedder
//! thread here. That thread embeds pending memories in batches and sends the
//! vectors back to the writer ([`crate::writer::Command::Vectors`]), which
//! caches them, indexes them, runs the near-duplicate check the memory
//! skipped (an event-sourced decision: a `Superseded` event, never a
//! recomputation) and removes the marker, all in one group commit.
//!
//! Opening a store queues again every marked memory that has no cached
//! vector, in id order, so a crash during the backlog loses nothing.

use std::sync::atomic::{AtomicBool, AtomicUsize, Ordering};
use std::sync::Arc;
use std::thread::JoinHandle;

use crossbeam_channel::{Receiver, Sender};
use parking_lot::Mutex;

use crate::embed::{EmbedKind, Embedder};
use crate::error::{Error, Result};
use crate::log::content_hash;
use crate::types::{MemoryId, Namespace};
use crate::writer::{Command, DedupMode};

/// When a `remember` embeds its memory.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Default, serde::Serialize, serde::Deserialize, schemars::JsonSchema)]
#[serde(rename_all = "snake_case")]
pub enum EmbedMode {
    /// Embed on the caller's thread before the write: the memory is found by
    /// vector as soon as the call returns, and the near-duplicate check runs
    /// at once. The default.
    #[default]
    Sync,
    /// Return as soon as the event is durable; a background embedder adds
    /// the vector later. Until then the memory is found lexically only
    /// (its recall explanation says `vector_pending`), and the
    /// near-duplicate check runs when the vector arrives.
    Deferred,
}

/// Texts per embedding batch of the background embedder (the same batch
/// size as re-embedding at open).
pub(crate) const BACKFILL_BATCH: usize = 64;

/// Prefix of the metadata keys that mark a memory whose vector is pending.
pub(crate) const PENDING_PREFIX: &str = "vector.pending.";

/// The metadata key marking memory `id` as waiting for its vector.
pub(crate) fn pending_key(id: MemoryId) -> String {
    format!("{PENDING_PREFIX}{}", id.0)
}

/// The byte stored under a pending marker for a dedup mode.
pub(crate) fn dedup_byte(d: DedupMode) -> u8 {
    match d {
        DedupMode::Supersede => 0,
        DedupMode::ExactOnly => 1,
        DedupMode::Off => 2,
    }
}

/// The dedup mode of a pending marker's byte; an unknown byte reads as
/// [`DedupMode::ExactOnly`] (no late supersede: nothing is decided on a
/// marker this build does not understand).
pub(crate) fn dedup_from_byte(b: Option<&u8>) -> DedupMode {
    match b {
        Some(0) => DedupMode::Supersede,
        Some(2) => DedupMode::Off,
        _ => DedupMode::ExactOnly,
    }
}

/// A memory waiting for its vector.
#[derive(Clone, Debug)]
pub(crate) struct PendingVector {
    pub(crate) ns: Namespace,
    pub(crate) id: MemoryId,
    pub(crate) content: String,
    pub(crate) dedup: DedupMode,
}

/// A computed vector on its way to the writer.
#[derive(Clone, Debug)]
pub(crate) struct EmbeddedVector {
    pub(crate) ns: Namespace,
    pub(crate) id: MemoryId,
    /// FNV-1a 64 of the content the vector embeds.
    pub(crate) content_hash: u64,
    pub(crate) vector: Vec<f32>,
    pub(crate) dedup: DedupMode,
}

/// Counters shared by the engine, the writer and the embedder thread (not
/// the store: the embedder thread must not keep a closed store open).
#[derive(Debug, Default)]
pub(crate) struct Backlog {
    /// Memories handed to the embedder whose vector is not committed yet.
    pub(crate) pending: AtomicUsize,
    /// Memories whose embedding failed in this process (retried at the next
    /// open: their marker stays).
    pub(crate) failed: AtomicUsize,
    /// The last embedding error.
    pub(crate) last_error: Mutex<Option<String>>,
    /// Set when the engine closes: the embedder stops before its next batch.
    pub(crate) closed: AtomicBool,
}

/// Starts the background embedder: it takes pending memories from `rx`,
/// embeds them in batches of up to [`BACKFILL_BATCH`] and sends the vectors
/// to the writer over `writer`, one batch's commit in flight while the next
/// is embedded.
pub(crate) fn spawn(
    embedder: Arc<dyn Embedder>,
    rx: Receiver<PendingVector>,
    writer: Sender<Command>,
    backlog: Arc<Backlog>,
) -> Result<JoinHandle<()>> {
    std::thread::Builder::new()
        .name("mnemon-embedder".into())
        .spawn(move || run(embedder.as_ref(), &rx, &writer, &backlog))
        .map_err(Error::Io)
}

fn run(embedder: &dyn Embedder, rx: &Receiver<PendingVector>, writer: &Sender<Command>, backlog: &Backlog) {
    // One batch's commit (its flush is mostly waiting on the disk) is in
    // flight while the next batch is embedded; its outcome is taken before
    // the next batch is sent.
    let mut in_flight: Option<Receiver<Result<()>>> = None;
    while let Ok(first) = rx.recv() {
        let mut batch = vec![first];
        while batch.len() < BACKFILL_BATCH {
            match rx.try_recv() {
                Ok(p) => batch.push(p),
                Err(_) => break,
            }
        }
        if backlog.closed.load(Ordering::Acquire) {
            return;
        }
        // A remote provider that is down: the batch waits for it (the
        // markers stay, so a close meanwhile loses nothing either).
        let mut wait = PROVIDER_FIRST_WAIT;
        let embedded = loop {
            match embed_batch(embedder, batch, backlog) {
                Ok(done) => break done,
                Err(again) => {
                    batch = again;
                    if !pause(wait, backlog) {
                        return;
                    }
                    wait = (wait * 2).min(PROVIDER_MAX_WAIT);
                }
            }
        };
        if let Some(reply) = in_flight.take() {
            match reply.recv() {
                Ok(Ok(())) => {}
                // Poisoned or closed: the markers stay, the next open resumes.
                _ => return,
            }
        }
        if embedded.is_empty() {
            continue;
        }
        let (tx, reply) = crossbeam_channel::bounded(1);
        if writer.send(Command::Vectors { items: embedded, reply: tx }).is_err() {
            return;
        }
        in_flight = Some(reply);
    }
}

/// First wait before a batch is tried again on a provider that did not
/// answer: 1 s, doubled per failed try up to [`PROVIDER_MAX_WAIT`].
const PROVIDER_FIRST_WAIT: std::time::Duration = std::time::Duration::from_secs(1);
/// Longest wait between tries of a batch on a provider that is down: 60 s.
const PROVIDER_MAX_WAIT: std::time::Duration = std::time::Duration::from_secs(60);

/// Sleeps `d` in short steps; false as soon as the engine closes.
fn pause(d: std::time::Duration, backlog: &Backlog) -> bool {
    let until = std::time::Instant::now() + d;
    while std::time::Instant::now() < until {
        if backlog.closed.load(Ordering::Acquire) {
            return false;
        }
        std::thread::sleep(std::time::Duration::from_millis(50).min(until - std::time::Instant::now()));
    }
    !backlog.closed.load(Ordering::Acquire)
}

/// Embeds a batch; when the batch fails, each text alone, so one bad text
/// does not hold back the others. Failures are counted and left pending.
/// A provider that is unavailable fails the whole batch back to the caller
/// (`Err`), to be tried again once it answers.
fn embed_batch(
    embedder: &dyn Embedder,
    batch: Vec<PendingVector>,
    backlog: &Backlog,
) -> std::result::Result<Vec<EmbeddedVector>, Vec<PendingVector>> {
    let searchable: Vec<_> = batch.iter().map(|p| crate::text::searchable(&p.content)).collect();
    let texts: Vec<&str> = searchable.iter().map(AsRef::as_ref).collect();
    let vectors: Vec<Option<Vec<f32>>> = match embed_checked(embedder, &texts) {
        Ok(vs) => vs.into_iter().map(Some).collect(),
        // Down, or is it this batch the provider cannot take (a text past
        // its context, which some servers answer with a 5xx)? One short
        // request tells: if it is answered, the texts go one by one, so a
        // text the provider refuses fails alone and holds back no other.
        Err(e @ Error::ProviderUnavailable { .. }) if embed_checked(embedder, &["ok"]).is_err() => {
            *backlog.last_error.lock() = Some(e.to_string());
            return Err(batch);
        }
        Err(_) => texts
            .iter()
            .map(|t| match embed_checked(embedder, &[t]) {
                Ok(mut v) => v.pop(),
                Err(e) => {
                    *backlog.last_error.lock() = Some(e.to_string());
                    None
                }
            })
            .collect(),
    };
    let mut out = Vec::with_capacity(batch.len());
    for (p, v) in batch.into_iter().zip(vectors) {
        match v {
            Some(vector) => out.push(EmbeddedVector {
                content_hash: content_hash(&p.content),
                ns: p.ns,
                id: p.id,
                vector,
                dedup: p.dedup,
            }),
            None => {
                backlog.failed.fetch_add(1, Ordering::AcqRel);
                backlog.pending.fetch_sub(1, Ordering::AcqRel);
            }
        }
    }
    Ok(out)
}

/// Embeds passages and checks count, dimension and finiteness; normalises.
pub(crate) fn embed_checked(embedder: &dyn Embedder, texts: &[&str]) -> Result<Vec<Vec<f32>>> {
    let mut vs = embedder.embed(texts, EmbedKind::Passage)?;
    if vs.len() != texts.len() {
        return Err(Error::Embedder(format!("{} vectors for {} texts", vs.len(), texts.len()).into()));
    }
    for v in &mut vs {
        crate::embed::validate_vector(v, embedder.dim())?;
        crate::embed::normalize(v);
    }
    Ok(vs)
}

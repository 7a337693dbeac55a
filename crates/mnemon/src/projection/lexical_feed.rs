//! Lexical indexing on a thread of its own while the log replays.
//!
//! Opening a store replays every event through
//! [`State::apply`](super::State::apply); tokenising each memory's text (Porter2 stemming,
//! CJK bigrams, word bigrams) and updating its BM25 postings was about 40 %
//! of a 1M-event replay on one thread. With a feed, the replaying thread
//! hands each memory's text to a second thread, which builds the namespaces'
//! lexical indexes while replay goes on and while the vectors load
//! afterwards.
//!
//! The worker sees the inserts in log order (the order live writes made
//! them). Removals are not sent: when the feed finishes, every document
//! whose memory is no longer in the fact table (forgotten during the
//! replayed history) is removed from its index. A [`LexicalIndex`]'s state
//! after any sequence of inserts and removals scores bit-for-bit like one
//! built from the remaining documents (its documented invariant), so the
//! result equals the index live writes built.

use std::collections::HashMap;
use std::thread::JoinHandle;

use crossbeam_channel::{Receiver, Sender};

use crate::error::{Error, Result};
use crate::index::LexicalIndex;
use crate::types::Namespace;

/// Texts per message to the worker (one channel hop per batch, not per memory).
const BATCH: usize = 1024;
/// Batches in flight before the replaying thread waits for the worker
/// (bounds the memory the texts in transit take: about 64 × 1,024 texts).
const IN_FLIGHT: usize = 64;

/// Runs of documents of one namespace, in log order.
type Batch = Vec<(Namespace, Vec<(u64, String)>)>;

/// The replaying side of the feed: batches texts and sends them to the worker.
pub(crate) struct LexicalFeed {
    tx: Option<Sender<Batch>>,
    buf: Batch,
    len: usize,
    worker: Option<JoinHandle<HashMap<Namespace, LexicalIndex>>>,
}

impl LexicalFeed {
    /// Starts the worker thread (`mnemon-lexical`).
    ///
    /// # Errors
    /// [`Error::Io`] when the thread cannot be spawned.
    pub(crate) fn spawn() -> Result<LexicalFeed> {
        let (tx, rx) = crossbeam_channel::bounded(IN_FLIGHT);
        let worker = std::thread::Builder::new().name("mnemon-lexical".into()).spawn(move || build(rx))?;
        Ok(LexicalFeed { tx: Some(tx), buf: Vec::new(), len: 0, worker: Some(worker) })
    }

    /// Queues document `id` of namespace `ns` with its text.
    pub(crate) fn push(&mut self, ns: &Namespace, id: u64, text: &str) {
        match self.buf.last_mut() {
            Some((last, docs)) if last == ns => docs.push((id, text.to_owned())),
            _ => self.buf.push((ns.clone(), vec![(id, text.to_owned())])),
        }
        self.len += 1;
        if self.len >= BATCH {
            self.send();
        }
    }

    fn send(&mut self) {
        let batch = std::mem::take(&mut self.buf);
        self.len = 0;
        if let Some(tx) = &self.tx {
            // A worker that is gone has panicked; `finish` reports it.
            let _ = tx.send(batch);
        }
    }

    /// Sends what is queued, waits for the worker and returns the index of
    /// every namespace that received a document.
    ///
    /// # Errors
    /// [`Error::Storage`] when the worker panicked.
    pub(crate) fn finish(mut self) -> Result<HashMap<Namespace, LexicalIndex>> {
        self.send();
        self.tx = None;
        let worker = self.worker.take().ok_or_else(|| Error::Storage("lexical worker already joined".into()))?;
        worker.join().map_err(|payload| {
            let why = payload
                .downcast_ref::<&str>()
                .map(|s| (*s).to_string())
                .or_else(|| payload.downcast_ref::<String>().cloned())
                .unwrap_or_else(|| "no message".to_string());
            Error::Storage(format!("the lexical indexing thread panicked during replay: {why}").into())
        })
    }
}

impl Drop for LexicalFeed {
    /// A feed dropped without [`LexicalFeed::finish`] (replay failed) stops
    /// its worker and waits for it.
    fn drop(&mut self) {
        self.tx = None;
        if let Some(w) = self.worker.take() {
            let _ = w.join();
        }
    }
}

/// The worker: indexes every document it receives, per namespace, in the
/// order sent, until the feed's sender is dropped.
fn build(rx: Receiver<Batch>) -> HashMap<Namespace, LexicalIndex> {
    let mut out: HashMap<Namespace, LexicalIndex> = HashMap::new();
    for batch in rx {
        for (ns, docs) in batch {
            let ix = out.entry(ns).or_default();
            for (id, text) in docs {
                ix.insert(id, &text);
            }
        }
    }
    out
}

//! The engine's side of the replicated log: a [`GroupSink`] that appends
//! every group to the namespace's stream (fenced by the expected last
//! sequence, and only while the lease is valid) before the writer writes
//! it locally and acknowledges it.

use std::sync::Arc;

use parking_lot::Mutex;
use serde::{Deserialize, Serialize};

use crate::conn::Conn;
use crate::lease::LeaseState;
use crate::stream::NsLog;
use crate::wire;
use mnemon::replication::{Group, GroupSink};
use mnemon::{Error, Result};

/// Local metadata key: the stream position the local copy has reached.
pub(crate) const META_POSITION: &str = "cluster.position";
/// Local metadata key: the namespace a local copy belongs to.
pub(crate) const META_NAMESPACE: &str = "cluster.namespace";

/// Where a local copy stands in the log of record: the stream, the
/// sequence of the last message it holds, and its last `Seq` then.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub(crate) struct Position {
    /// Stream name (namespace and generation).
    pub(crate) stream: String,
    /// Sequence of the last message of that stream reflected locally.
    pub(crate) stream_seq: u64,
    /// The local log's last `Seq` at that point.
    pub(crate) event_seq: u64,
}

impl Position {
    pub(crate) fn encode(&self) -> Vec<u8> {
        serde_json::to_vec(self).unwrap_or_default()
    }

    pub(crate) fn decode(b: &[u8]) -> Option<Position> {
        serde_json::from_slice(b).ok()
    }
}

/// Appends groups of one namespace to its stream.
pub(crate) struct StreamSink {
    conn: Arc<Conn>,
    lease: Arc<LeaseState>,
    max_message: usize,
    /// Held for the length of an append (seconds, while NATS does not
    /// answer).
    inner: Mutex<SinkInner>,
    /// Set by the first failed append or by [`StreamSink::stop`]: the sink
    /// refuses everything after. Apart from `inner`, so that stopping the
    /// sink or asking why it stopped never waits for an append (the lease
    /// keeper asks it of every namespace it renews).
    failed: Mutex<Option<Error>>,
    /// Wakes an append in flight when the sink is stopped.
    abort: tokio::sync::Notify,
}

struct SinkInner {
    log: Arc<NsLog>,
    /// Sequence of the last message this writer appended or saw.
    last: u64,
}

impl StreamSink {
    /// A sink appending to `log` after stream sequence `last`.
    pub(crate) fn new(
        conn: Arc<Conn>,
        lease: Arc<LeaseState>,
        log: Arc<NsLog>,
        last: u64,
        max_message: usize,
    ) -> StreamSink {
        StreamSink {
            conn,
            lease,
            max_message,
            inner: Mutex::new(SinkInner { log, last }),
            failed: Mutex::new(None),
            abort: tokio::sync::Notify::new(),
        }
    }

    /// Why appends stopped, if they did.
    pub(crate) fn failure(&self) -> Option<String> {
        self.failed.lock().as_ref().map(ToString::to_string)
    }

    /// The stream and the sequence of its last message appended here.
    pub(crate) fn position(&self) -> (Arc<NsLog>, u64) {
        let g = self.inner.lock();
        (g.log.clone(), g.last)
    }

    /// Moves the sink to a new generation of the log (after a cluster
    /// compaction rewrote it), continuing after sequence `last`.
    pub(crate) fn switch(&self, log: Arc<NsLog>, last: u64) {
        let mut g = self.inner.lock();
        g.log = log;
        g.last = last;
    }

    /// Stops all further appends with `e` (the namespace is being let go),
    /// and ends an append in flight at once: its caller gets
    /// [`Error::Unavailable`], its outcome unknown (JetStream may yet have
    /// stored it), as when NATS does not answer in time.
    pub(crate) fn stop(&self, e: Error) {
        let mut f = self.failed.lock();
        if f.is_none() {
            *f = Some(e);
        }
        drop(f);
        self.abort.notify_waiters();
    }

    fn fail(&self, e: &Error) {
        let mut f = self.failed.lock();
        if f.is_none() {
            *f = Some(copy(e));
        }
    }
}

fn copy(e: &Error) -> Error {
    match e {
        Error::Fenced { namespace, reason } => Error::Fenced { namespace: namespace.clone(), reason: reason.clone() },
        Error::Unavailable(m) => Error::Unavailable(m.clone()),
        other => Error::Unavailable(other.to_string()),
    }
}

impl GroupSink for StreamSink {
    fn publish(&self, group: &Group<'_>) -> Result<Vec<(String, Vec<u8>)>> {
        let mut g = self.inner.lock();
        if let Some(e) = self.failed.lock().as_ref() {
            return Err(copy(e));
        }
        if let Err(why) = self.lease.check() {
            let e = Error::Fenced { namespace: g.log.ns.clone(), reason: why };
            self.fail(&e);
            return Err(e);
        }
        let parts = wire::split(group, self.max_message)?;
        let log = g.log.clone();
        for part in parts {
            let last = g.last;
            let appended = self.conn.run("appending a group", async {
                // Registered before the flag is read, so that a stop
                // between the two still wakes it.
                let stopped = self.abort.notified();
                tokio::pin!(stopped);
                stopped.as_mut().enable();
                if let Some(e) = self.failed.lock().as_ref() {
                    return Err(copy(e));
                }
                tokio::select! {
                    r = log.append(part, last) => r,
                    () = &mut stopped => Err(Error::Unavailable(format!(
                        "appending to {}: the namespace was let go while the append was unanswered; its outcome is unknown",
                        log.name
                    ))),
                }
            });
            match appended {
                Ok(seq) => g.last = seq,
                Err(e) => {
                    self.fail(&e);
                    return Err(e);
                }
            }
        }
        let event_seq = group.records.last().map_or(0, |r| r.0);
        let pos = Position { stream: log.name.clone(), stream_seq: g.last, event_seq };
        Ok(vec![(META_POSITION.to_string(), pos.encode())])
    }
}

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
    inner: Mutex<SinkInner>,
}

struct SinkInner {
    log: Arc<NsLog>,
    /// Sequence of the last message this writer appended or saw.
    last: u64,
    /// Set by the first failed append: the sink refuses everything after.
    failed: Option<Error>,
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
        StreamSink { conn, lease, max_message, inner: Mutex::new(SinkInner { log, last, failed: None }) }
    }

    /// Why appends stopped, if they did.
    pub(crate) fn failure(&self) -> Option<String> {
        self.inner.lock().failed.as_ref().map(ToString::to_string)
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

    /// Stops all further appends with `e` (the namespace is being let go).
    pub(crate) fn stop(&self, e: Error) {
        let mut g = self.inner.lock();
        if g.failed.is_none() {
            g.failed = Some(e);
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
        if let Some(e) = &g.failed {
            return Err(copy(e));
        }
        if let Err(why) = self.lease.check() {
            let e = Error::Fenced { namespace: g.log.ns.clone(), reason: why };
            g.failed = Some(copy(&e));
            return Err(e);
        }
        let parts = wire::split(group, self.max_message)?;
        let log = g.log.clone();
        for part in parts {
            let last = g.last;
            match self.conn.run("appending a group", log.append(part, last)) {
                Ok(seq) => g.last = seq,
                Err(e) => {
                    g.failed = Some(copy(&e));
                    return Err(e);
                }
            }
        }
        let event_seq = group.records.last().map_or(0, |r| r.0);
        let pos = Position { stream: log.name.clone(), stream_seq: g.last, event_seq };
        Ok(vec![(META_POSITION.to_string(), pos.encode())])
    }
}

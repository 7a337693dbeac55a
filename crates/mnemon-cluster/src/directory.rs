//! The log directory: for each namespace, the generation of its stream that
//! is the log of record (a key-value bucket, key = namespace token, value =
//! the generation in decimal). Only the lease holder changes an entry, and
//! only by a revision-checked update.

use async_nats::jetstream::kv::{self, Operation, UpdateErrorKind};

use crate::conn::unavailable;
use mnemon::{Error, Result};

/// The bucket.
pub(crate) struct Directory {
    kv: kv::Store,
}

/// A directory entry as read: generation and revision (0 when absent).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) struct Entry {
    /// The current generation (1 for a namespace never compacted).
    pub(crate) generation: u64,
    /// The entry's revision, for a checked update; 0 when absent.
    pub(crate) revision: u64,
}

impl Directory {
    /// Opens or creates the bucket (R = `replicas`, no expiry).
    ///
    /// # Errors
    /// [`Error::Unavailable`] when JetStream does not answer.
    pub(crate) async fn open(js: &async_nats::jetstream::Context, bucket: &str, replicas: usize) -> Result<Directory> {
        let kv = crate::lease::bucket_store(js, bucket, std::time::Duration::ZERO, replicas).await?;
        Ok(Directory { kv })
    }

    /// The namespace's entry (generation 1, revision 0 when absent).
    ///
    /// # Errors
    /// [`Error::Unavailable`]; [`Error::Corrupted`] for a value that is not a
    /// generation.
    pub(crate) async fn get(&self, token: &str) -> Result<Entry> {
        let e = self.kv.entry(token).await.map_err(|e| unavailable(&format!("reading log directory {token}"), e))?;
        match e {
            Some(e) if e.operation == Operation::Put => {
                let generation =
                    std::str::from_utf8(&e.value).ok().and_then(|s| s.parse::<u64>().ok()).ok_or_else(|| {
                        Error::Corrupted { seq: 0, reason: format!("log directory entry {token} is not a generation") }
                    })?;
                Ok(Entry { generation, revision: e.revision })
            }
            _ => Ok(Entry { generation: 1, revision: 0 }),
        }
    }

    /// Points the namespace at `generation` if the entry is still at
    /// `revision` (0: absent).
    ///
    /// # Errors
    /// [`Error::Fenced`] when the entry changed meanwhile;
    /// [`Error::Unavailable`] when the bucket does not answer.
    pub(crate) async fn set(&self, ns: &str, token: &str, generation: u64, revision: u64) -> Result<u64> {
        match self.kv.update(token, generation.to_string().into(), revision).await {
            Ok(rev) => Ok(rev),
            Err(e) if e.kind() == UpdateErrorKind::WrongLastRevision => Err(Error::Fenced {
                namespace: ns.to_string(),
                reason: "the log directory entry changed under the lease".into(),
            }),
            Err(e) => Err(unavailable(&format!("writing log directory {token}"), e)),
        }
    }
}

//! Writer leases: one key per namespace in a JetStream key-value bucket
//! whose `max_age` is the lease TTL. Taking a lease is a create-if-absent
//! (the key's last revision must be absent or a delete marker); renewing it
//! is an update that names the revision last written, so a daemon whose
//! lease expired and was taken by another cannot renew it. The lease's
//! revision is its epoch, written into the namespace's stream by the
//! takeover marker.

use std::time::{Duration, Instant};

use async_nats::jetstream::kv::{self, CreateErrorKind, Operation, UpdateErrorKind};
use bytes::Bytes;
use parking_lot::Mutex;
use serde::{Deserialize, Serialize};

use crate::conn::unavailable;
use mnemon::{Error, Result};

/// Who holds a lease: the daemon id and its process instance.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub(crate) struct Holder {
    /// Daemon id (stable across restarts).
    pub(crate) daemon: String,
    /// Random per process start, so a restarted daemon does not mistake its
    /// dead predecessor's lease for its own.
    pub(crate) instance: u64,
}

/// The outcome of trying to take a lease.
#[derive(Clone, Debug, PartialEq, Eq)]
pub(crate) enum Claim {
    /// Taken; the revision is the new epoch.
    Won(u64),
    /// Held by another holder (or by this one, from before), at that
    /// revision.
    Held(Holder, u64),
}

/// A key-value bucket of leases (or of daemon registrations, same rules).
pub(crate) struct LeaseBucket {
    kv: kv::Store,
    ttl: Duration,
}

impl LeaseBucket {
    /// Opens or creates the bucket (R = `replicas`, `max_age` = `ttl`).
    ///
    /// # Errors
    /// [`Error::Unavailable`] when JetStream does not answer or refuses.
    pub(crate) async fn open(
        js: &async_nats::jetstream::Context,
        bucket: &str,
        ttl: Duration,
        replicas: usize,
    ) -> Result<LeaseBucket> {
        let kv = bucket_store(js, bucket, ttl, replicas).await?;
        Ok(LeaseBucket { kv, ttl })
    }

    /// The lease TTL (the bucket's `max_age`).
    pub(crate) fn ttl(&self) -> Duration {
        self.ttl
    }

    /// Takes the lease `key` for `me` if nobody holds it.
    ///
    /// # Errors
    /// [`Error::Unavailable`] when the bucket does not answer.
    pub(crate) async fn claim(&self, key: &str, me: &Holder) -> Result<Claim> {
        let value = encode(me)?;
        for _ in 0..4 {
            match self.kv.create(key, value.clone()).await {
                Ok(rev) => return Ok(Claim::Won(rev)),
                Err(e) if e.kind() == CreateErrorKind::AlreadyExists => match self.holder(key).await? {
                    Some((holder, rev)) => return Ok(Claim::Held(holder, rev)),
                    // Expired or released between the two calls: try again.
                    None => continue,
                },
                Err(e) => return Err(unavailable(&format!("taking lease {key}"), e)),
            }
        }
        Err(Error::Unavailable(format!("lease {key} kept changing while being taken")))
    }

    /// Renews the lease held at `revision`; returns the new revision, or
    /// `None` when the lease is no longer this revision (expired and taken,
    /// or released).
    ///
    /// # Errors
    /// [`Error::Unavailable`] when the bucket does not answer.
    pub(crate) async fn renew(&self, key: &str, me: &Holder, revision: u64) -> Result<Option<u64>> {
        match self.kv.update(key, encode(me)?, revision).await {
            Ok(rev) => Ok(Some(rev)),
            Err(e) if e.kind() == UpdateErrorKind::WrongLastRevision => Ok(None),
            Err(e) => Err(unavailable(&format!("renewing lease {key}"), e)),
        }
    }

    /// Writes `me` under `key` whatever was there (daemon registrations).
    ///
    /// # Errors
    /// [`Error::Unavailable`] when the bucket does not answer.
    pub(crate) async fn put(&self, key: &str, me: &Holder) -> Result<u64> {
        self.kv.put(key, encode(me)?).await.map_err(|e| unavailable(&format!("writing {key}"), e))
    }

    /// Gives the lease up (a delete marker, only if still at `revision`).
    ///
    /// # Errors
    /// [`Error::Unavailable`] when the bucket does not answer.
    pub(crate) async fn release(&self, key: &str, revision: u64) -> Result<()> {
        match self.kv.delete_expect_revision(key, Some(revision)).await {
            Ok(()) => Ok(()),
            Err(e) if e.to_string().contains("wrong last sequence") => Ok(()),
            Err(e) => Err(unavailable(&format!("releasing lease {key}"), e)),
        }
    }

    /// Deletes `key` whatever its revision (a daemon deregistering).
    ///
    /// # Errors
    /// [`Error::Unavailable`] when the bucket does not answer.
    pub(crate) async fn remove(&self, key: &str) -> Result<()> {
        self.kv.delete(key).await.map_err(|e| unavailable(&format!("deleting {key}"), e))
    }

    /// The current holder of `key` and its revision, `None` when free.
    ///
    /// # Errors
    /// [`Error::Unavailable`] when the bucket does not answer;
    /// [`Error::Corrupted`] for a value that is not a holder.
    pub(crate) async fn holder(&self, key: &str) -> Result<Option<(Holder, u64)>> {
        let entry = self.kv.entry(key).await.map_err(|e| unavailable(&format!("reading lease {key}"), e))?;
        match entry {
            Some(e) if e.operation == Operation::Put => Ok(Some((decode(key, &e.value)?, e.revision))),
            _ => Ok(None),
        }
    }

    /// Every key with a live value (daemon registrations).
    ///
    /// # Errors
    /// [`Error::Unavailable`] when the bucket does not answer.
    pub(crate) async fn keys(&self) -> Result<Vec<String>> {
        use futures_util::TryStreamExt;
        let keys = self.kv.keys().await.map_err(|e| unavailable("listing keys", e))?;
        keys.try_collect().await.map_err(|e| unavailable("listing keys", e))
    }
}

/// Opens or creates a key-value bucket that keeps one value per key and
/// expires values after `max_age` (zero: never). The bucket's stream is
/// created here with the settings of the key-value conventions (stream
/// `KV_<bucket>`, subjects `$KV.<bucket>.>`, rollups allowed, direct gets,
/// new messages refused when full) rather than through
/// `create_key_value`, whose account query does not parse the answer of
/// NATS servers before 2.10.
///
/// # Errors
/// [`Error::Unavailable`] when JetStream does not answer or refuses.
pub(crate) async fn bucket_store(
    js: &async_nats::jetstream::Context,
    bucket: &str,
    max_age: Duration,
    replicas: usize,
) -> Result<kv::Store> {
    use async_nats::jetstream::stream::{Config, DiscardPolicy, StorageType};
    let mut stream = js
        .get_or_create_stream(Config {
            name: format!("KV_{bucket}"),
            description: Some(format!("mnemon {bucket}")),
            subjects: vec![format!("$KV.{bucket}.>")],
            max_messages_per_subject: 1,
            max_bytes: -1,
            max_messages: -1,
            max_message_size: -1,
            max_age,
            storage: StorageType::File,
            num_replicas: replicas,
            allow_rollup: true,
            deny_delete: true,
            allow_direct: true,
            discard: DiscardPolicy::New,
            ..Default::default()
        })
        .await
        .map_err(|e| unavailable(&format!("creating key-value bucket {bucket}"), e))?;
    // A bucket made with another TTL (an older default, another setting)
    // takes this daemon's: a lease must expire when its holder stops
    // relying on it, and a daemon relies on its own setting.
    let config = stream.cached_info().config.clone();
    if config.max_age != max_age {
        let config = Config { max_age, ..config };
        js.update_stream(&config).await.map_err(|e| unavailable(&format!("setting the TTL of bucket {bucket}"), e))?;
        stream.info().await.map_err(|e| unavailable(&format!("reading bucket {bucket}"), e))?;
    }
    js.get_key_value(bucket).await.map_err(|e| unavailable(&format!("opening key-value bucket {bucket}"), e))
}

fn encode(h: &Holder) -> Result<Bytes> {
    serde_json::to_vec(h)
        .map(Bytes::from)
        .map_err(|e| Error::Storage(mnemon::Failure::with_source(format!("encoding a lease: {e}"), e)))
}

fn decode(key: &str, b: &[u8]) -> Result<Holder> {
    serde_json::from_slice(b).map_err(|e| Error::Corrupted { seq: 0, reason: format!("lease {key} holds {e}") })
}

/// What this process knows of one lease it holds: the revision to renew
/// from and how long it is certainly still valid. Validity is measured on
/// the monotonic clock from the *start* of the last successful write, less
/// a margin, so it never outlives the copy that NATS expires.
#[derive(Debug)]
pub(crate) struct LeaseState {
    inner: Mutex<LeaseInner>,
    ttl: Duration,
}

#[derive(Debug)]
struct LeaseInner {
    revision: u64,
    valid_until: Instant,
    lost: Option<String>,
}

impl LeaseState {
    /// A lease written (created or renewed) at `revision`, the write having
    /// started at `started`.
    pub(crate) fn new(revision: u64, started: Instant, ttl: Duration) -> LeaseState {
        LeaseState { inner: Mutex::new(LeaseInner { revision, valid_until: started + margin(ttl), lost: None }), ttl }
    }

    /// The revision to renew from.
    pub(crate) fn revision(&self) -> u64 {
        self.inner.lock().revision
    }

    /// Records a successful renewal that started at `started`.
    pub(crate) fn renewed(&self, revision: u64, started: Instant) {
        let mut g = self.inner.lock();
        if g.lost.is_none() {
            g.revision = revision;
            g.valid_until = started + margin(self.ttl);
        }
    }

    /// Marks the lease lost (renewal refused, or validity ran out).
    pub(crate) fn lose(&self, why: String) {
        let mut g = self.inner.lock();
        if g.lost.is_none() {
            g.lost = Some(why);
        }
    }

    /// How long the lease may still be relied on (zero once lost or run
    /// out).
    pub(crate) fn left(&self) -> Duration {
        let g = self.inner.lock();
        if g.lost.is_some() {
            return Duration::ZERO;
        }
        g.valid_until.saturating_duration_since(Instant::now())
    }

    /// `Ok` while the lease is held and valid; otherwise why not (and the
    /// lease is marked lost).
    pub(crate) fn check(&self) -> std::result::Result<(), String> {
        let mut g = self.inner.lock();
        if let Some(why) = &g.lost {
            return Err(why.clone());
        }
        if Instant::now() >= g.valid_until {
            let why = "lease not renewed within its TTL".to_string();
            g.lost = Some(why.clone());
            return Err(why);
        }
        Ok(())
    }
}

/// The part of a TTL a holder may rely on: 80 % (the rest covers clock
/// rate differences and the time a renewal spends in flight).
fn margin(ttl: Duration) -> Duration {
    ttl.mul_f64(0.8)
}

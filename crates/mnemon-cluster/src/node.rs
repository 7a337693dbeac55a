//! [`ClusterNode`]: one daemon of a fleet. It holds the namespaces whose
//! writer lease it has, each as its own local engine (so a memory's id — the
//! namespace's event index — is the same on every daemon), serves their
//! reads and writes, and forwards calls for other namespaces to their
//! owners.

use std::collections::HashMap;
use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, Weak};
use std::time::Duration;

use parking_lot::{Mutex, RwLock};

use crate::conn::Conn;
use crate::directory::Directory;
use crate::keys::KeyBucket;
use crate::lease::{Holder, LeaseBucket, LeaseState};
use crate::names::{check_daemon_id, token, Names};
use crate::replica::StreamSink;
use crate::CatchUp;
use mnemon::Namespace;
use mnemon::{Engine, EngineBuilder};
use mnemon::{Error, Result};

/// Makes the builder of a namespace's local engine from its data
/// directory (embedder, limits, safety policies); the node adds the
/// replicated log.
pub type Opener = Arc<dyn Fn(&Path) -> EngineBuilder + Send + Sync>;

/// Runs one call on the owner: the namespace, the served namespace (its
/// engine, and cluster compaction) and the request body; returns the
/// response body. Request and response formats are the handler's own.
pub type Handler = Arc<dyn Fn(&Served<'_>, &[u8]) -> Vec<u8> + Send + Sync>;

/// Which calls the node may run again, read in the [`Handler`]'s format.
/// Installed with [`ClusterNode::serve_retry`]; without one no call is
/// run twice.
pub trait Retry: Send + Sync {
    /// The request never writes: running it again on another daemon is
    /// safe.
    fn read_only(&self, body: &[u8]) -> bool;
    /// The reply says nothing ran because this daemon's hold on the
    /// namespace ended during the call (fenced: the lease moved, or the
    /// stream moved past what this daemon knew; locked): the call is safe
    /// to run at the namespace's new owner.
    fn refused(&self, reply: &[u8]) -> bool;
}

/// Where a namespace is served.
#[derive(Clone, Debug)]
pub enum Route {
    /// Here: this daemon holds the lease; use its engine.
    Local(Engine),
    /// By another daemon (its id); forward the call there.
    Remote(String),
}

/// A namespace this daemon serves, as a [`Handler`] sees it.
pub struct Served<'a> {
    pub(crate) node: &'a ClusterNode,
    pub(crate) ns: &'a Namespace,
    pub(crate) engine: Engine,
}

impl Served<'_> {
    /// The namespace.
    pub fn namespace(&self) -> &Namespace {
        self.ns
    }

    /// The namespace's local engine (writes reach the replicated log before
    /// they are acknowledged).
    pub fn engine(&self) -> &Engine {
        &self.engine
    }

    /// Cluster compaction of this namespace ([`ClusterNode::compact`]).
    ///
    /// # Errors
    /// As [`ClusterNode::compact`].
    pub fn compact(&self) -> Result<crate::ClusterErasure> {
        self.node.compact(self.ns)
    }

    /// The proof of this namespace's shred across the cluster
    /// ([`ClusterNode::verify_shred`]).
    ///
    /// # Errors
    /// As [`ClusterNode::verify_shred`].
    pub fn verify_shred(
        &self,
        backups: &[std::path::PathBuf],
        exports: &[std::path::PathBuf],
    ) -> Result<mnemon::crypt::ShredReport> {
        self.node.verify_shred(self.ns, backups, exports)
    }
}

/// Settings of a node. Build with [`ClusterNode::builder`].
#[derive(Clone)]
pub struct ClusterBuilder {
    pub(crate) data_dir: PathBuf,
    pub(crate) daemon_id: String,
    pub(crate) nats: Vec<String>,
    pub(crate) prefix: String,
    pub(crate) lease_ttl: Duration,
    pub(crate) replicas: usize,
    pub(crate) timeout: Duration,
    pub(crate) forward_wait: Duration,
    pub(crate) opener: Opener,
}

impl std::fmt::Debug for ClusterBuilder {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("ClusterBuilder")
            .field("data_dir", &self.data_dir)
            .field("daemon_id", &self.daemon_id)
            .field("nats", &self.nats)
            .field("prefix", &self.prefix)
            .field("lease_ttl", &self.lease_ttl)
            .field("replicas", &self.replicas)
            .finish_non_exhaustive()
    }
}

/// Default lease TTL: 2 s. A dead or paused owner is replaced about one
/// TTL after its last renewal (2.0–2.5 s measured by `cargo bench --bench
/// cluster`); renewals go every TTL/4 (500 ms) for every held lease, and a
/// holder stops relying on its lease after 80 % of it (1.6 s), so a daemon
/// that cannot reach NATS for that long lets its namespaces go. The stream's
/// fencing check, not the TTL, keeps a namespace to one writer.
pub const DEFAULT_LEASE_TTL: Duration = Duration::from_secs(2);

impl ClusterBuilder {
    /// Key-value bucket, stream and subject prefix, so several deployments
    /// can share one NATS cluster. Default `"mnemon"`; 1..=32 of `[a-z0-9]`.
    pub fn prefix(mut self, p: impl Into<String>) -> Self {
        self.prefix = p.into();
        self
    }

    /// Writer lease TTL. Default [`DEFAULT_LEASE_TTL`]; 1 s ..= 10 min. A
    /// lease is renewed every quarter TTL and relied on for 80 % of it; an
    /// owner that dies is replaced about one TTL later.
    pub fn lease_ttl(mut self, ttl: Duration) -> Self {
        self.lease_ttl = ttl;
        self
    }

    /// Copies of every stream and bucket (JetStream replicas). Default 3;
    /// 1 ..= 5, at most the NATS cluster's size. A write is acknowledged
    /// once a majority of them holds it.
    pub fn replicas(mut self, n: usize) -> Self {
        self.replicas = n;
        self
    }

    /// Timeout of one NATS request and of an append's confirmation.
    /// Default 5 s; 100 ms ..= 60 s.
    pub fn timeout(mut self, t: Duration) -> Self {
        self.timeout = t;
        self
    }

    /// How long a call waits for a namespace to get an owner (after an
    /// owner died, about one lease TTL) before it fails with
    /// [`Error::Unavailable`]. Default 2 × the lease TTL + the timeout.
    pub fn forward_wait(mut self, t: Duration) -> Self {
        self.forward_wait = t;
        self
    }

    /// How to build each namespace's local engine from its directory.
    /// Default: [`Engine::builder`] with a 16 MiB page cache (hashing
    /// embedder). Share one embedder between namespaces by capturing it.
    pub fn engine(mut self, opener: Opener) -> Self {
        self.opener = opener;
        self
    }

    /// Validates the settings, connects to NATS, opens the buckets,
    /// registers the daemon and starts renewing its leases.
    ///
    /// # Errors
    /// [`Error::InvalidInput`] for a setting out of range, a bad daemon id,
    /// prefix or URL, or an engine whose largest record cannot fit a NATS
    /// message; [`Error::Unavailable`] when NATS cannot be reached or
    /// JetStream does not answer; local I/O errors.
    pub fn start(self) -> Result<ClusterNode> {
        ClusterNode::start(self)
    }
}

/// One daemon of a cluster: see the [module docs](crate).
#[derive(Clone)]
pub struct ClusterNode {
    pub(crate) inner: Arc<NodeInner>,
}

impl std::fmt::Debug for ClusterNode {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("ClusterNode").field("daemon", &self.inner.me.daemon).finish_non_exhaustive()
    }
}

pub(crate) struct NodeInner {
    pub(crate) cfg: ClusterBuilder,
    pub(crate) names: Names,
    pub(crate) me: Holder,
    pub(crate) conn: Arc<Conn>,
    pub(crate) leases: LeaseBucket,
    pub(crate) daemons: LeaseBucket,
    pub(crate) directory: Directory,
    /// The data keys of encrypted namespaces.
    pub(crate) keys: KeyBucket,
    /// Largest message appended to a stream (bytes).
    pub(crate) max_message: usize,
    pub(crate) held: Mutex<HashMap<Namespace, Arc<Held>>>,
    /// One lock per namespace, held while it is taken, let go or scrubbed.
    pub(crate) turns: Mutex<HashMap<Namespace, Arc<Mutex<()>>>>,
    pub(crate) handler: RwLock<Option<Handler>>,
    pub(crate) retry: RwLock<Option<Arc<dyn Retry>>>,
    pub(crate) stopped: AtomicBool,
    pub(crate) catch_ups: Mutex<Vec<(Namespace, CatchUp)>>,
}

/// A namespace held here.
pub(crate) struct Held {
    pub(crate) engine: Engine,
    pub(crate) sink: Arc<StreamSink>,
    pub(crate) lease: Arc<LeaseState>,
    pub(crate) token: String,
}

impl Held {
    /// Why this copy may not serve any more, if so.
    pub(crate) fn unusable(&self) -> Option<String> {
        if let Err(why) = self.lease.check() {
            return Some(why);
        }
        if let Some(why) = self.sink.failure() {
            return Some(why);
        }
        self.engine.shared().poison_message()
    }
}

impl ClusterNode {
    /// Starts configuring a daemon: its data directory (each namespace it
    /// serves gets `DATA/ns/<token>/`), its id (unique in the fleet; 1..=64
    /// of `[A-Za-z0-9_-]`) and the NATS servers (`nats://host:port`).
    pub fn builder(data_dir: impl AsRef<Path>, daemon_id: impl Into<String>, nats: &[String]) -> ClusterBuilder {
        ClusterBuilder {
            data_dir: data_dir.as_ref().to_path_buf(),
            daemon_id: daemon_id.into(),
            nats: nats.to_vec(),
            prefix: "mnemon".into(),
            lease_ttl: DEFAULT_LEASE_TTL,
            replicas: 3,
            timeout: Duration::from_secs(5),
            forward_wait: Duration::ZERO,
            opener: Arc::new(|p: &Path| Engine::builder(p).cache_bytes(16 << 20)),
        }
    }

    fn start(mut cfg: ClusterBuilder) -> Result<ClusterNode> {
        check_daemon_id(&cfg.daemon_id)?;
        let names = Names::new(&cfg.prefix)?;
        if cfg.lease_ttl < Duration::from_secs(1) || cfg.lease_ttl > Duration::from_secs(600) {
            return Err(Error::invalid("lease_ttl", "must be 1 s ..= 10 min"));
        }
        if !(1..=5).contains(&cfg.replicas) {
            return Err(Error::invalid("replicas", "must be 1 ..= 5"));
        }
        if cfg.timeout < Duration::from_millis(100) || cfg.timeout > Duration::from_secs(60) {
            return Err(Error::invalid("timeout", "must be 100 ms ..= 60 s"));
        }
        if cfg.forward_wait.is_zero() {
            cfg.forward_wait = cfg.lease_ttl * 2 + cfg.timeout;
        }
        std::fs::create_dir_all(cfg.data_dir.join(NS_DIR))?;
        let conn = Arc::new(Conn::connect(&cfg.nats, &format!("mnemon-{}", cfg.daemon_id), cfg.timeout)?);
        let max_payload = conn.client.server_info().max_payload;
        // Half the server's limit leaves room for the envelope and vectors;
        // one record must fit in one message.
        let max_message = (max_payload / 2).clamp(64 << 10, 8 << 20);
        let probe = (cfg.opener)(&cfg.data_dir);
        if probe.max_content() * 2 > max_payload {
            return Err(Error::invalid(
                "max_content_bytes",
                format!(
                    "{} bytes cannot travel in one NATS message (server max_payload {max_payload}); lower it or raise max_payload",
                    probe.max_content()
                ),
            ));
        }
        // A server that just (re)joined its cluster may not answer JetStream
        // requests for a moment: a few attempts before giving up.
        let mut attempt = 0;
        let (leases, daemons, directory, keys) = loop {
            let opened = conn.run("opening the cluster's buckets", async {
                Ok((
                    LeaseBucket::open(&conn.js, &names.lease_bucket(), cfg.lease_ttl, cfg.replicas).await?,
                    LeaseBucket::open(&conn.js, &names.daemon_bucket(), cfg.lease_ttl, cfg.replicas).await?,
                    Directory::open(&conn.js, &names.directory_bucket(), cfg.replicas).await?,
                    KeyBucket::open(&conn.js, &names.key_bucket(), cfg.replicas).await?,
                ))
            });
            attempt += 1;
            match opened {
                Err(Error::Unavailable(_)) if attempt < START_ATTEMPTS => std::thread::sleep(cfg.timeout),
                other => break other?,
            }
        };
        let me = Holder { daemon: cfg.daemon_id.clone(), instance: rand::random::<u64>() };
        let inner = Arc::new(NodeInner {
            cfg,
            names,
            me,
            conn,
            leases,
            daemons,
            directory,
            keys,
            max_message,
            held: Mutex::new(HashMap::new()),
            turns: Mutex::new(HashMap::new()),
            handler: RwLock::new(None),
            retry: RwLock::new(None),
            stopped: AtomicBool::new(false),
            catch_ups: Mutex::new(Vec::new()),
        });
        let node = ClusterNode { inner };
        node.register()?;
        node.scrub_stale_copies()?;
        node.start_services()?;
        crate::renew::spawn(Arc::downgrade(&node.inner))?;
        Ok(node)
    }

    /// This daemon's id.
    pub fn daemon_id(&self) -> &str {
        &self.inner.me.daemon
    }

    /// Where `ns` is served now: here (taking the lease if nobody holds
    /// it, after catching the local copy up from the log) or by another
    /// daemon.
    ///
    /// # Errors
    /// [`Error::Unavailable`] when NATS does not answer; [`Error::Corrupted`]
    /// when the local copy disagrees with the log; errors opening the
    /// engine; [`Error::Closed`] after [`ClusterNode::shutdown`].
    pub fn route(&self, ns: &Namespace) -> Result<Route> {
        if self.inner.stopped.load(Ordering::SeqCst) {
            return Err(Error::Closed);
        }
        if let Some(e) = self.serving(ns) {
            return Ok(Route::Local(e));
        }
        let turn = self.turn(ns);
        let _g = turn.lock();
        if let Some(e) = self.serving(ns) {
            return Ok(Route::Local(e));
        }
        self.take(ns)
    }

    /// The engine of `ns` if this daemon serves it now (never takes a lease).
    pub fn local(&self, ns: &Namespace) -> Option<Engine> {
        self.serving(ns)
    }

    /// The namespaces this daemon serves now.
    pub fn namespaces(&self) -> Vec<Namespace> {
        let mut v: Vec<Namespace> = self.inner.held.lock().keys().cloned().collect();
        v.sort();
        v
    }

    /// The owner of `ns` by the lease table (`None`: nobody holds it).
    ///
    /// # Errors
    /// [`Error::Unavailable`] when NATS does not answer.
    pub fn owner(&self, ns: &Namespace) -> Result<Option<String>> {
        let key = token(ns);
        let h = self.inner.conn.run("reading a lease", self.inner.leases.holder(&key))?;
        Ok(h.map(|(h, _)| h.daemon))
    }

    /// What this daemon serves now: each namespace it owns with its
    /// lease and its stream position, and the stream's last sequence as
    /// NATS reports it (asked for every namespace at once, within the
    /// request timeout; absent where NATS did not answer).
    pub fn status(&self) -> mnemon::ClusterView {
        let inner = &self.inner;
        let mut held: Vec<(Namespace, Arc<Held>)> =
            inner.held.lock().iter().map(|(ns, h)| (ns.clone(), h.clone())).collect();
        held.sort_by(|a, b| a.0.cmp(&b.0));
        let positions: Vec<_> = held.iter().map(|(_, h)| h.sink.position()).collect();
        let lasts = inner.conn.block_on(async {
            let asks = positions.iter().map(|(log, _)| async move { log.last_seq().await.ok() });
            tokio::time::timeout(inner.cfg.timeout, futures_util::future::join_all(asks)).await.ok()
        });
        let served = held
            .iter()
            .zip(&positions)
            .enumerate()
            .map(|(i, ((ns, h), (log, at)))| {
                let last = lasts.as_ref().and_then(|l| l[i]);
                mnemon::ServedNamespace {
                    namespace: ns.to_string(),
                    lease_left_ms: u64::try_from(h.lease.left().as_millis()).unwrap_or(u64::MAX),
                    lease_revision: h.lease.revision(),
                    stream: log.name.clone(),
                    stream_seq: *at,
                    stream_last_seq: last,
                    lag: last.map(|l| l.saturating_sub(*at)),
                }
            })
            .collect();
        mnemon::ClusterView {
            daemon: inner.me.daemon.clone(),
            lease_ttl_ms: u64::try_from(inner.cfg.lease_ttl.as_millis()).unwrap_or(u64::MAX),
            served,
        }
    }

    /// What each catch-up since start did, in order (namespace, figures).
    pub fn catch_ups(&self) -> Vec<(Namespace, CatchUp)> {
        self.inner.catch_ups.lock().clone()
    }

    /// Stops serving every namespace (each engine drains, flushes and
    /// closes; each lease is released so another daemon takes over at
    /// once), deregisters the daemon and stops renewing.
    ///
    /// # Errors
    /// The first error closing an engine or releasing a lease (the others
    /// are still attempted).
    pub fn shutdown(&self) -> Result<()> {
        self.inner.stopped.store(true, Ordering::SeqCst);
        let all: Vec<Namespace> = self.inner.held.lock().keys().cloned().collect();
        let mut first = None;
        for ns in all {
            if let Err(e) = self.let_go(&ns, "the daemon is shutting down", true) {
                first.get_or_insert(e);
            }
        }
        let _ = self.inner.conn.run("deregistering", self.inner.daemons.remove(&self.inner.me.daemon));
        first.map_or(Ok(()), Err)
    }

    /// The engine of `ns` if it is held here and still usable.
    pub(crate) fn serving(&self, ns: &Namespace) -> Option<Engine> {
        let held = self.inner.held.lock().get(ns).cloned()?;
        held.unusable().is_none().then(|| held.engine.clone())
    }

    pub(crate) fn turn(&self, ns: &Namespace) -> Arc<Mutex<()>> {
        self.inner.turns.lock().entry(ns.clone()).or_default().clone()
    }

    pub(crate) fn copy_dir(&self, token: &str) -> PathBuf {
        self.inner.cfg.data_dir.join(NS_DIR).join(token)
    }

    pub(crate) fn weak(&self) -> Weak<NodeInner> {
        Arc::downgrade(&self.inner)
    }
}

/// Attempts at opening the buckets when a daemon starts (one request
/// timeout apart): JetStream needs a few seconds after a server restart.
const START_ATTEMPTS: u32 = 3;

/// Folder of the local copies under the daemon's data directory.
pub(crate) const NS_DIR: &str = "ns";

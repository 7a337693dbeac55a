//! Taking a namespace (lease, takeover marker, catch-up, engine) and
//! letting it go.

use std::sync::Arc;
use std::time::{Duration, Instant};

use crate::catchup::catch_up;
use crate::lease::{Claim, LeaseState};
use crate::names::token;
use crate::node::{ClusterNode, Held, Route};
use crate::replica::StreamSink;
use crate::stream::{delete_stream, NsLog};
use crate::wire::{self, LogMessage};
use mnemon::Namespace;
use mnemon::{Error, Result};

/// Attempts at the takeover marker while stale writers keep appending.
const MARKER_ATTEMPTS: usize = 8;

impl ClusterNode {
    /// Takes `ns` if its lease is free (or still this process's), else
    /// names its owner. Called with the namespace's turn held.
    pub(crate) fn take(&self, ns: &Namespace) -> Result<Route> {
        let stale = self.inner.held.lock().get(ns).cloned();
        if let Some(old) = stale {
            let why = old.unusable().unwrap_or_else(|| "replaced".into());
            let _ = self.let_go(ns, &why, false);
        }
        let inner = &self.inner;
        let key = token(ns);
        let ttl = inner.leases.ttl();
        let mut won = None;
        for _ in 0..3 {
            let started = Instant::now();
            match inner.conn.run("taking a lease", inner.leases.claim(&key, &inner.me))? {
                Claim::Won(rev) => won = Some((rev, started)),
                Claim::Held(h, rev) if h == inner.me => {
                    // This process let the namespace go without releasing
                    // the lease (NATS was unreachable): renew it from there.
                    let started = Instant::now();
                    if let Some(new) = inner.conn.run("renewing a lease", inner.leases.renew(&key, &inner.me, rev))? {
                        won = Some((new, started));
                    }
                }
                Claim::Held(h, _) => return Ok(Route::Remote(h.daemon)),
            }
            if won.is_some() {
                break;
            }
        }
        let Some((epoch, started)) = won else {
            return Err(Error::Unavailable(format!("the lease of {ns} kept changing hands")));
        };
        let lease = Arc::new(LeaseState::new(epoch, started, ttl));
        match self.open_served(ns, &key, &lease, epoch) {
            Ok(held) => {
                let engine = held.engine.clone();
                inner.held.lock().insert(ns.clone(), Arc::new(held));
                Ok(Route::Local(engine))
            }
            Err(e) => {
                lease.lose(format!("taking the namespace failed: {e}"));
                let _ = inner.conn.run("releasing a lease", inner.leases.release(&key, lease.revision()));
                Err(e)
            }
        }
    }

    fn open_served(&self, ns: &Namespace, key: &str, lease: &Arc<LeaseState>, epoch: u64) -> Result<Held> {
        let inner = &self.inner;
        let conn = &inner.conn;
        let entry = conn.run("reading the log directory", inner.directory.get(key))?;
        let log = Arc::new(conn.run(
            "opening the namespace's stream",
            NsLog::open(&conn.js, &inner.names, ns.as_str(), key, entry.generation, inner.cfg.replicas, conn.timeout),
        )?);
        // The takeover marker moves the stream past anything a previous
        // owner knew, so its next append fails the fencing check.
        let marker = wire::encode(&LogMessage::Takeover {
            daemon: inner.me.daemon.clone(),
            instance: inner.me.instance,
            epoch,
        })?;
        let mut at = None;
        for _ in 0..MARKER_ATTEMPTS {
            lease.check().map_err(|why| Error::Fenced { namespace: ns.to_string(), reason: why })?;
            let last = conn.run("reading the stream", log.last_seq())?;
            match conn.run("writing the takeover marker", log.append(marker.clone(), last)) {
                Ok(seq) => {
                    at = Some(seq);
                    break;
                }
                Err(Error::Fenced { .. }) => continue,
                Err(e) => return Err(e),
            }
        }
        let at = at.ok_or_else(|| Error::Unavailable(format!("{} kept moving during takeover", log.name)))?;
        let dir = self.copy_dir(key);
        let report = retry_locked(inner.cfg.timeout, || catch_up(conn, &log, &dir, ns, at))?;
        inner.catch_ups.lock().push((ns.clone(), report));
        let sink = Arc::new(StreamSink::new(conn.clone(), lease.clone(), log, at, inner.max_message));
        let engine = retry_locked(inner.cfg.timeout, || {
            let builder = (inner.cfg.opener)(&dir).group_sink(sink.clone());
            // An encrypted namespace shares its data keys with the other
            // daemons through the key bucket.
            if builder.has_key() {
                let keys = inner.keys.namespace(conn.clone(), key, ns.as_str(), inner.names.shred_notice());
                builder.key_directory(Arc::new(keys)).open()
            } else {
                builder.open()
            }
        })?;
        if entry.generation > 1 {
            // A compaction that switched generations but did not get to
            // delete the old stream: finish it.
            let old = inner.names.stream(key, entry.generation - 1);
            let _ = conn.run("deleting an old stream", delete_stream(&conn.js, &old));
        }
        Ok(Held { engine, sink, lease: lease.clone(), token: key.to_string() })
    }

    /// Stops serving `ns`. `graceful`: the engine drains its queue into the
    /// log first and the lease is released (another daemon can take over at
    /// once); otherwise nothing more is appended and the lease is left to
    /// expire (or is already someone else's).
    ///
    /// # Errors
    /// Closing the engine (graceful only); releasing the lease.
    pub(crate) fn let_go(&self, ns: &Namespace, why: &str, graceful: bool) -> Result<()> {
        let Some(held) = self.inner.held.lock().remove(ns) else {
            return Ok(());
        };
        let fenced = || Error::Fenced { namespace: ns.to_string(), reason: why.to_string() };
        if !graceful {
            held.sink.stop(fenced());
        }
        let closed = held.engine.clone().close();
        held.sink.stop(fenced());
        let mut result = if graceful { closed } else { Ok(()) };
        if graceful && held.lease.check().is_ok() {
            let released =
                self.inner.conn.run("releasing a lease", self.inner.leases.release(&held.token, held.lease.revision()));
            result = result.and(released);
        }
        held.lease.lose(why.to_string());
        result
    }
}

/// Retries `f` while the local copy is still locked by an engine that is
/// closing (a caller may hold a clone for the length of one call).
pub(crate) fn retry_locked<T>(timeout: Duration, mut f: impl FnMut() -> Result<T>) -> Result<T> {
    let deadline = Instant::now() + timeout;
    loop {
        match f() {
            Err(Error::Locked { .. }) if Instant::now() < deadline => std::thread::sleep(Duration::from_millis(20)),
            other => return other,
        }
    }
}

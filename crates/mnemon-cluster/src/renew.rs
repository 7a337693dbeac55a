//! The lease keeper: a thread that renews every held lease (all at once,
//! each from its last revision) and the daemon's registration every
//! quarter TTL, and lets go of a namespace as soon as its lease is refused
//! (taken by another daemon) or could not be renewed within 80 % of its TTL.

use std::sync::atomic::Ordering;
use std::sync::{Arc, Weak};
use std::time::Instant;

use crate::node::{ClusterNode, Held, NodeInner};
use mnemon::Namespace;
use mnemon::{Error, Result};

/// Starts the keeper; it ends when the node is dropped or shut down.
///
/// # Errors
/// [`Error::Io`] when the thread cannot start.
pub(crate) fn spawn(node: Weak<NodeInner>) -> Result<()> {
    std::thread::Builder::new()
        .name("mnemon-leases".into())
        .spawn(move || loop {
            let Some(inner) = node.upgrade() else { return };
            if inner.stopped.load(Ordering::SeqCst) {
                return;
            }
            let period = inner.leases.ttl() / 4;
            let started = Instant::now();
            ClusterNode { inner }.renew_all();
            std::thread::sleep(period.saturating_sub(started.elapsed()));
        })
        .map(|_| ())
        .map_err(Error::Io)
}

impl ClusterNode {
    pub(crate) fn renew_all(&self) {
        let inner = &self.inner;
        let all: Vec<(Namespace, Arc<Held>)> =
            inner.held.lock().iter().map(|(ns, h)| (ns.clone(), h.clone())).collect();
        // A namespace whose appends failed (or whose engine stopped) is not
        // renewed: it is let go and its lease given back, so another daemon
        // (or this one, on the next call) takes it at once.
        let mut held = Vec::with_capacity(all.len());
        for (ns, h) in all {
            match h.unusable() {
                Some(why) => self.let_go_in_turn(&ns, &h, &why, true),
                None => held.push((ns, h)),
            }
        }
        let me = inner.me.clone();
        let renewals = held.iter().map(|(_, h)| {
            let (rev, started, me) = (h.lease.revision(), Instant::now(), &me);
            async move { (started, inner.leases.renew(&h.token, me, rev).await) }
        });
        let results = inner.conn.block_on(async {
            let all = futures_util::future::join_all(renewals);
            tokio::time::timeout(inner.leases.ttl() / 2, all).await.ok()
        });
        let _ = inner.conn.run("registering the daemon", inner.daemons.put(&me.daemon, &me));
        let Some(results) = results else {
            self.drop_expired(&held);
            return;
        };
        for ((ns, h), (started, r)) in held.iter().zip(results) {
            match r {
                Ok(Some(rev)) => h.lease.renewed(rev, started),
                Ok(None) => self.let_go_in_turn(ns, h, "the lease was taken by another daemon", false),
                Err(_) => {}
            }
        }
        self.drop_expired(&held);
    }

    fn drop_expired(&self, held: &[(Namespace, Arc<Held>)]) {
        for (ns, h) in held {
            if let Err(why) = h.lease.check() {
                self.let_go_in_turn(ns, h, &why, false);
            }
        }
    }

    /// Lets `ns` go without draining its engine; `release`: also gives the
    /// lease back (revision-checked, so never another daemon's).
    fn let_go_in_turn(&self, ns: &Namespace, h: &Arc<Held>, why: &str, release: bool) {
        let revision = h.lease.revision();
        h.lease.lose(why.to_string());
        let turn = self.turn(ns);
        let _g = turn.lock();
        // Only the copy this round looked at (not one taken again since).
        let same = self.inner.held.lock().get(ns).is_some_and(|cur| Arc::ptr_eq(cur, h));
        if same {
            let _ = self.let_go(ns, why, false);
            if release {
                let inner = &self.inner;
                let _ = inner.conn.run("releasing a lease", inner.leases.release(&h.token, revision));
            }
        }
    }
}

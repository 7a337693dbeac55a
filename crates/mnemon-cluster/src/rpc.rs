//! Calls over NATS request-reply.
//!
//! * Between daemons: a daemon asked about a namespace it does not own
//!   forwards the call to the owner's subject (`PREFIX.rpc.DAEMON`); the
//!   owner runs it only if it still holds the namespace, else answers "not
//!   the owner" and the caller looks the owner up again. A forwarded call
//!   is never forwarded again, so calls cannot loop.
//! * From clients (the NATS door): a call sent to `PREFIX.call` reaches one
//!   daemon of the fleet (a queue group), one sent to `PREFIX.call.DAEMON`
//!   that daemon; either runs it through [`ClusterNode::call`], so clients
//!   see one service whichever daemon they reach.
//!
//! Both carry [`CallRequest`] and answer [`CallReply`] (postcard); the body
//! is the handler's own format.

use std::sync::Arc;
use std::time::{Duration, Instant};

use async_nats::RequestErrorKind;
use futures_util::StreamExt;
use serde::{Deserialize, Serialize};

use crate::names::token;
use crate::node::{ClusterNode, Handler, Retry, Route, Served};
use mnemon::Namespace;
use mnemon::{Error, Result};

/// A call as it travels over NATS (postcard): the namespace and the
/// handler's request body.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub struct CallRequest {
    /// The namespace the call names.
    pub ns: String,
    /// The request, in the handler's format.
    pub body: Vec<u8>,
}

impl CallRequest {
    /// The postcard encoding.
    ///
    /// # Errors
    /// [`Error::Storage`] if postcard fails (it does not for this type).
    pub fn encode(&self) -> Result<Vec<u8>> {
        postcard::to_stdvec(self)
            .map_err(|e| Error::Storage(mnemon::Failure::with_source(format!("encoding a call: {e}"), e)))
    }
}

/// The answer to a [`CallRequest`] (postcard).
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub enum CallReply {
    /// The call ran: the handler's response body.
    Done(Vec<u8>),
    /// (Between daemons) this daemon does not serve the namespace; nothing
    /// ran.
    NotOwner(String),
    /// The call could not be run (no owner reachable, NATS unavailable,
    /// bad namespace): the error's text. For a write, nothing was
    /// acknowledged.
    Failed(String),
}

impl CallReply {
    /// Decodes a reply.
    ///
    /// # Errors
    /// [`Error::Corrupted`] for bytes that are not a reply.
    pub fn decode(bytes: &[u8]) -> Result<CallReply> {
        postcard::from_bytes(bytes).map_err(|e| Error::Corrupted { seq: 0, reason: format!("call reply: {e}") })
    }
}

use CallReply as RpcReply;
use CallRequest as RpcRequest;

enum Forwarded {
    Done(Vec<u8>),
    /// Nothing ran; look the owner up again.
    Refused(String),
}

/// How long the owner may take to run a forwarded call, in request
/// timeouts (a recall over a large namespace, a compaction).
const CALL_TIMEOUTS: u32 = 6;

impl ClusterNode {
    /// Installs the handler that runs calls on this daemon's namespaces
    /// (for [`ClusterNode::call`] here and for calls forwarded from other
    /// daemons).
    pub fn serve(&self, handler: Handler) {
        *self.inner.handler.write() = Some(handler);
    }

    /// Installs which calls may run again ([`Retry`]). A call forwarded to
    /// an owner that loses its lease before answering (paused,
    /// partitioned) is then forwarded again to the new owner if it is
    /// read-only, and a write fails at once with its outcome unknown
    /// instead of waiting out the forwarded call's timeout; a call refused
    /// here because this daemon's hold ended during it runs again at the
    /// new owner.
    pub fn serve_retry(&self, retry: Arc<dyn Retry>) {
        *self.inner.retry.write() = Some(retry);
    }

    /// Runs one call on `ns` wherever it is served: here (taking the
    /// namespace if nobody holds it) or forwarded to its owner. While a
    /// namespace has no reachable owner (its owner died and the lease has
    /// not expired yet) the call waits, up to the forward wait. While a
    /// forwarded call runs, the owner's lease is watched (every TTL/4): if
    /// it expires or moves before the answer, a read-only call
    /// ([`ClusterNode::serve_retry`]) goes to the new owner and a write
    /// fails at once, its outcome unknown.
    ///
    /// # Errors
    /// [`Error::InvalidInput`] before [`ClusterNode::serve`];
    /// [`Error::Unavailable`] when no owner answered within the wait, or a
    /// forwarded write got no answer or its owner lost the lease while
    /// running it (its outcome is then unknown); errors of taking the
    /// namespace ([`ClusterNode::route`]).
    pub fn call(&self, ns: &Namespace, body: &[u8]) -> Result<Vec<u8>> {
        let handler = self.handler()?;
        let retry = self.inner.retry.read().clone();
        // Read only when a call is forwarded: a local call never needs it.
        let mut read_only = None;
        let deadline = Instant::now() + self.inner.cfg.forward_wait;
        let mut pause = Duration::from_millis(20);
        loop {
            let why = match self.route(ns) {
                Ok(Route::Local(engine)) => {
                    let reply = handler(&Served { node: self, ns, engine }, body);
                    match &retry {
                        Some(r) if r.refused(&reply) && Instant::now() < deadline => {
                            format!("{} lost {ns} during the call", self.daemon_id())
                        }
                        _ => return Ok(reply),
                    }
                }
                Ok(Route::Remote(owner)) => {
                    let read_only = *read_only.get_or_insert_with(|| retry.as_ref().is_some_and(|r| r.read_only(body)));
                    match self.forward(&owner, ns, body, read_only)? {
                        Forwarded::Done(b) => return Ok(b),
                        Forwarded::Refused(why) => why,
                    }
                }
                Err(Error::Unavailable(m)) => m,
                Err(e) => return Err(e),
            };
            if Instant::now() >= deadline {
                return Err(Error::Unavailable(format!("no daemon serves {ns}: {why}")));
            }
            std::thread::sleep(pause);
            pause = (pause * 2).min(Duration::from_millis(500));
        }
    }

    fn handler(&self) -> Result<Handler> {
        self.inner
            .handler
            .read()
            .clone()
            .ok_or_else(|| Error::invalid("handler", "install one with ClusterNode::serve"))
    }

    fn forward(&self, owner: &str, ns: &Namespace, body: &[u8], read_only: bool) -> Result<Forwarded> {
        let inner = &self.inner;
        let req = postcard::to_stdvec(&RpcRequest { ns: ns.to_string(), body: body.to_vec() })
            .map_err(|e| Error::Storage(mnemon::Failure::with_source(format!("encoding a forwarded call: {e}"), e)))?;
        let timeout = inner.cfg.timeout * CALL_TIMEOUTS;
        let request = async_nats::Request::new().payload(req.into()).timeout(Some(timeout));
        let subject = inner.names.rpc(owner);
        let answer = inner.conn.block_on(async {
            tokio::select! {
                answer = inner.conn.client.send_request(subject, request) => Some(answer),
                () = self.lease_leaves(ns, owner) => None,
            }
        });
        let Some(answer) = answer else {
            let why = format!("{owner} lost the lease of {ns} while running the call");
            if read_only {
                return Ok(Forwarded::Refused(why));
            }
            return Err(Error::Unavailable(format!("{why}; the call's outcome is unknown")));
        };
        match answer {
            Ok(msg) => match postcard::from_bytes::<RpcReply>(&msg.payload) {
                Ok(RpcReply::Done(b)) => Ok(Forwarded::Done(b)),
                Ok(RpcReply::NotOwner(why)) => Ok(Forwarded::Refused(format!("{owner}: {why}"))),
                Ok(RpcReply::Failed(why)) => Err(Error::Unavailable(format!("{owner}: {why}"))),
                Err(e) => Err(Error::Unavailable(format!("{owner} answered with an unreadable reply: {e}"))),
            },
            Err(e) if e.kind() == RequestErrorKind::NoResponders => {
                Ok(Forwarded::Refused(format!("{owner} is not listening")))
            }
            Err(e) if e.kind() == RequestErrorKind::TimedOut => Err(Error::Unavailable(format!(
                "{owner} did not answer within {timeout:?}; the call's outcome is unknown"
            ))),
            Err(e) => Err(Error::Unavailable(format!("forwarding to {owner}: {e}"))),
        }
    }

    /// Returns once the lease of `ns` is no longer `owner`'s (expired,
    /// released or taken by another daemon); polls every TTL/4, and never
    /// returns while the lease table cannot be read.
    async fn lease_leaves(&self, ns: &Namespace, owner: &str) {
        let inner = &self.inner;
        let key = token(ns);
        let period = inner.leases.ttl() / 4;
        loop {
            tokio::time::sleep(period).await;
            match inner.leases.holder(&key).await {
                Ok(Some((h, _))) if h.daemon == owner => {}
                Ok(_) => return,
                Err(_) => {}
            }
        }
    }

    /// Runs a forwarded call if this daemon serves its namespace.
    fn answer(&self, payload: &[u8]) -> Vec<u8> {
        let reply = match postcard::from_bytes::<RpcRequest>(payload) {
            Err(e) => RpcReply::NotOwner(format!("unreadable call: {e}")),
            Ok(req) => match (Namespace::new(req.ns), self.handler()) {
                (Err(e), _) => RpcReply::NotOwner(e.to_string()),
                (_, Err(e)) => RpcReply::NotOwner(e.to_string()),
                // The caller found this daemon in the lease table: serve it
                // if the lease is still (or again) this daemon's, taking the
                // namespace back after a failed append; never forward.
                (Ok(ns), Ok(handler)) => match self.route(&ns) {
                    Ok(Route::Local(engine)) => {
                        let reply = handler(&Served { node: self, ns: &ns, engine }, &req.body);
                        let retry = self.inner.retry.read().clone();
                        if retry.is_some_and(|r| r.refused(&reply)) {
                            RpcReply::NotOwner(format!("{} lost {ns} during the call", self.daemon_id()))
                        } else {
                            RpcReply::Done(reply)
                        }
                    }
                    Ok(Route::Remote(owner)) => {
                        RpcReply::NotOwner(format!("{} does not serve {ns}; {owner} holds it", self.daemon_id()))
                    }
                    Err(e @ Error::Unavailable(_)) => RpcReply::NotOwner(e.to_string()),
                    Err(e) => RpcReply::Failed(e.to_string()),
                },
            },
        };
        postcard::to_stdvec(&reply).unwrap_or_default()
    }

    /// Runs a client's call from the NATS door.
    fn door(&self, payload: &[u8]) -> Vec<u8> {
        let reply = match postcard::from_bytes::<RpcRequest>(payload) {
            Err(e) => RpcReply::Failed(format!("invalid input: unreadable call: {e}")),
            Ok(req) => match Namespace::new(req.ns) {
                Err(e) => RpcReply::Failed(e.to_string()),
                Ok(ns) => match self.call(&ns, &req.body) {
                    Ok(b) => RpcReply::Done(b),
                    Err(e) => RpcReply::Failed(e.to_string()),
                },
            },
        };
        postcard::to_stdvec(&reply).unwrap_or_default()
    }

    /// Subscribes to this daemon's subjects: calls forwarded by other
    /// daemons, erasure notices, and the client door.
    pub(crate) fn start_services(&self) -> Result<()> {
        let inner = &self.inner;
        let client = inner.conn.client.clone();
        let names = &inner.names;
        let subs = inner.conn.run("subscribing", async {
            let fail = |e: async_nats::SubscribeError| Error::Unavailable(format!("subscribing: {e}"));
            let subs = [
                (client.subscribe(names.rpc(&inner.me.daemon)).await.map_err(fail)?, Service::Forwarded),
                (client.subscribe(names.scrub()).await.map_err(fail)?, Service::Scrub),
                (client.subscribe(names.shred_notice()).await.map_err(fail)?, Service::Shred),
                (client.queue_subscribe(names.door(), names.door_group()).await.map_err(fail)?, Service::Door),
                (client.subscribe(names.door_of(&inner.me.daemon)).await.map_err(fail)?, Service::Door),
            ];
            // A subscription is only queued by the client; the flush's
            // round trip returns once the server has it, so a daemon that
            // has started is one its NATS node routes calls to.
            client.flush().await.map_err(|e| Error::Unavailable(format!("subscribing: {e}")))?;
            Ok(subs)
        })?;
        let handle = inner.conn.handle();
        for (mut sub, service) in subs {
            let weak = self.weak();
            let client = client.clone();
            handle.spawn(async move {
                while let Some(msg) = sub.next().await {
                    let Some(reply) = msg.reply.clone() else { continue };
                    let weak = weak.clone();
                    let client = client.clone();
                    tokio::spawn(async move {
                        let out = tokio::task::spawn_blocking(move || {
                            let inner = weak.upgrade()?;
                            let node = ClusterNode { inner };
                            Some(match service {
                                Service::Forwarded => node.answer(&msg.payload),
                                Service::Scrub => node.scrub(&msg.payload),
                                Service::Shred => node.take_shreds(&msg.payload),
                                Service::Door => node.door(&msg.payload),
                            })
                        })
                        .await;
                        if let Ok(Some(out)) = out {
                            let _ = client.publish(reply, out.into()).await;
                        }
                    });
                }
            });
        }
        Ok(())
    }
}

#[derive(Clone, Copy)]
enum Service {
    Forwarded,
    Scrub,
    Shred,
    Door,
}

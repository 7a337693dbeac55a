//! Where a server's calls go: the engine this process holds, or — when
//! another process holds the store — that process, through the store's
//! local socket; and the hand-over when the holder goes away.
//!
//! The first process to open a data directory is its holder: it owns the
//! engine (the store's lock) and serves the command surface on the
//! directory's socket ([`super::socket`]). A later process finds the
//! store locked and becomes a proxy: its calls travel over the socket and
//! run on the holder's engine, so every client of the directory shares one
//! writer. When the holder exits (or is killed), the next call of a proxy
//! finds the socket dead, takes the lock itself — reopening the store,
//! which replays the log — and becomes the holder, serving the others.
//!
//! A store that does not exist yet and that the opener refuses to create
//! because no embedding model is installed ([`Error::NoModelInstalled`])
//! leaves the backend unopened rather than failing it: every call runs the
//! opener again and, until a model is installed (or the store is created
//! by another process), is answered with that refusal
//! ([`Backend::refusal`]). A server started by an MCP client before the
//! model was installed thus stays up and says what to do.
//!
//! A call is retried after a hand-over only when it cannot have been
//! applied: nothing was sent, the holder refused it while shutting down,
//! or it only reads. A write whose answer was lost with the holder is
//! reported as [`ErrorCode::Unavailable`]: it may or may not have been
//! applied, and the caller reads before retrying.

use std::path::PathBuf;
use std::sync::Arc;
use std::time::{Duration, Instant};

use parking_lot::{Mutex, RwLock};
use serde_json::Value;

use super::socket::{socket_path, Failure, SocketClient, SocketServer};
use mnemon::Engine;
use mnemon::Error;
use mnemon_api::{self as api, ApiError, ErrorCode, Limits, Request};

/// How long a proxy keeps trying to reach a holder (or to take over)
/// before it reports the store locked: covers a holder that has the lock
/// but is still replaying its log before serving its socket.
const REACH_TIMEOUT: Duration = Duration::from_secs(30);
/// Pause between attempts to reach a holder.
const RETRY_PAUSE: Duration = Duration::from_millis(25);

/// Opens the store (loading the embedder); called again to take over.
pub type Opener = Box<dyn Fn() -> mnemon::Result<Engine> + Send + Sync>;

enum Mode {
    Holder {
        engine: Engine,
        socket: Mutex<Option<SocketServer>>,
    },
    Proxy(SocketClient),
    /// The opener refused to create the store (no embedding model is
    /// installed); each call runs it again.
    Unopened(ApiError),
    /// A daemon of a cluster: every call runs where its namespace is served.
    #[cfg(feature = "cluster")]
    Cluster(mnemon_cluster::ClusterNode),
    Closed,
}

/// The engine behind a server: held by this process, or reached through
/// the holder's socket (see the module docs).
pub struct Backend {
    limits: Limits,
    socket: Option<PathBuf>,
    /// The store's directory, when this backend may reach a holder.
    data_dir: Option<PathBuf>,
    open: Opener,
    mode: RwLock<Arc<Mode>>,
}

fn run_local(engine: &Engine, req: Request, limits: &Limits) -> Result<Value, ApiError> {
    api::execute_with(engine, req, limits).map(|r| r.to_value())
}

impl Backend {
    /// A backend over an engine this process opened, serving no socket.
    pub fn new(engine: Engine, limits: Limits) -> Backend {
        let open: Opener = Box::new(|| Err(Error::Closed));
        Backend {
            limits,
            socket: None,
            data_dir: None,
            open,
            mode: RwLock::new(Arc::new(Mode::Holder { engine, socket: Mutex::new(None) })),
        }
    }

    /// Opens the store in `data_dir` with `open` and serves its socket, or,
    /// when another process holds the store, reaches that process through
    /// the socket (see the module docs).
    ///
    /// When the opener refuses to create the store because no embedding
    /// model is installed ([`Error::NoModelInstalled`]), the backend is
    /// returned unopened: [`Backend::refusal`] says why, and every call
    /// runs the opener again and gets that refusal until it succeeds.
    ///
    /// # Errors
    /// The opener's errors other than [`Error::Locked`] and
    /// [`Error::NoModelInstalled`], as [`ApiError`].
    pub fn open(data_dir: &std::path::Path, limits: Limits, open: Opener) -> Result<Backend, ApiError> {
        let socket = socket_path(data_dir);
        let b = Backend {
            limits,
            socket: Some(socket.clone()),
            data_dir: Some(data_dir.to_path_buf()),
            open,
            mode: RwLock::new(Arc::new(Mode::Closed)),
        };
        let mode = match (b.open)() {
            Ok(engine) => b.holder(engine),
            Err(Error::Locked { .. }) => Mode::Proxy(SocketClient::new(socket)),
            Err(e @ Error::NoModelInstalled { .. }) => Mode::Unopened(e.into()),
            Err(e) => return Err(e.into()),
        };
        *b.mode.write() = Arc::new(mode);
        Ok(b)
    }

    /// Why the store is not open yet, while the opener refuses to create
    /// it because no embedding model is installed (code `embedder`; the
    /// message names the command that installs one): every call gets this
    /// error until a call finds the model installed. `None` once the store
    /// is open or reached through its holder.
    pub fn refusal(&self) -> Option<ApiError> {
        match &**self.mode.read() {
            Mode::Unopened(e) => Some(e.clone()),
            _ => None,
        }
    }

    /// A backend over a cluster daemon: each call runs on its namespace's
    /// owner (this daemon, or another one it forwards to). Installs the
    /// surface handler ([`mnemon_cluster::surface_handler`]) on `node`.
    #[cfg(feature = "cluster")]
    pub fn cluster(node: mnemon_cluster::ClusterNode, limits: Limits) -> Backend {
        node.serve(mnemon_cluster::surface_handler(limits));
        node.serve_retry(std::sync::Arc::new(mnemon_cluster::SurfaceRetry));
        let open: Opener = Box::new(|| Err(Error::Closed));
        Backend { limits, socket: None, data_dir: None, open, mode: RwLock::new(Arc::new(Mode::Cluster(node))) }
    }

    /// The process holding the store when this backend reaches it through
    /// its socket, as the store's `LOCK` file names it: (process id,
    /// whether it serves the socket). `None` when this process holds the
    /// store, or the file names nobody (an older version's holder).
    pub fn store_holder(&self) -> Option<(u32, bool)> {
        if self.holds_store() {
            return None;
        }
        let h = mnemon::storage::lock_holder(self.data_dir.as_deref()?)?;
        Some((h.pid, h.serves_socket))
    }

    /// True while this process holds the store (false for a proxy). A
    /// cluster daemon holds the namespaces it owns: true.
    pub fn holds_store(&self) -> bool {
        match **self.mode.read() {
            Mode::Holder { .. } => true,
            #[cfg(feature = "cluster")]
            Mode::Cluster(_) => true,
            _ => false,
        }
    }

    fn holder(&self, engine: Engine) -> Mode {
        let socket = self.socket.as_ref().and_then(|path| {
            let e = engine.clone();
            let handler: super::socket::Handler = Arc::new(move |req, limits| run_local(&e, req, limits));
            match SocketServer::start(path.clone(), handler) {
                Ok(s) => Some(s),
                Err(err) => {
                    eprintln!(
                        "mnemon: warning: cannot serve {}: {err}; other processes cannot reach this store",
                        path.display()
                    );
                    None
                }
            }
        });
        Mode::Holder { engine, socket: Mutex::new(socket) }
    }

    /// Runs one request (blocking) and returns the response's JSON.
    ///
    /// # Errors
    /// As [`api::execute_with`]; [`ErrorCode::Unavailable`] for a write
    /// whose holder died before answering; [`ErrorCode::Locked`] when the
    /// store is held by a process that does not answer on its socket;
    /// [`ErrorCode::Closed`] after [`Backend::close`].
    pub fn call(&self, req: Request) -> Result<Value, ApiError> {
        self.call_with(req, None)
    }

    /// [`Backend::call`] with a cancellation flag: on the engine this
    /// process holds, the call's write is withdrawn if `cancel` rises
    /// before the writer plans it ([`Engine::with_cancel`]); through a
    /// holder's socket or in a cluster, only before the call is sent (the
    /// flag does not travel).
    ///
    /// # Errors
    /// As [`Backend::call`]; [`ErrorCode::Cancelled`] when the call was
    /// withdrawn (nothing written).
    pub fn call_with(&self, req: Request, cancel: Option<mnemon::CancelToken>) -> Result<Value, ApiError> {
        let deadline = Instant::now() + REACH_TIMEOUT;
        loop {
            if cancel.as_ref().is_some_and(mnemon::CancelToken::is_cancelled) {
                return Err(Error::Cancelled.into());
            }
            let mode = self.mode.read().clone();
            let client = match &*mode {
                Mode::Holder { engine, .. } => {
                    return match &cancel {
                        Some(c) => run_local(&engine.with_cancel(c.clone()), req, &self.limits),
                        None => run_local(engine, req, &self.limits),
                    }
                }
                Mode::Closed => return Err(ApiError::new(ErrorCode::Closed, "the server is shut down")),
                Mode::Unopened(_) => {
                    self.open_again(&mode)?;
                    continue;
                }
                #[cfg(feature = "cluster")]
                Mode::Cluster(node) => return cluster_call(node, &req),
                Mode::Proxy(client) => client,
            };
            match client.call(&req, &self.limits) {
                Ok(v) => return Ok(v),
                Err(Failure::Api(e)) if e.code != ErrorCode::Closed => return Err(e),
                Err(Failure::Lost(e)) if !req.read_only() => {
                    return Err(ApiError::new(
                        ErrorCode::Unavailable,
                        format!("the process holding the store went away before answering ({e}); the write may or may not have been applied"),
                    ))
                }
                // Nothing applied (not sent, refused while the holder shut
                // down, or a read): take over if the holder is gone, retry.
                Err(f) => {
                    if Instant::now() > deadline {
                        let why = match f {
                            Failure::NotSent(e) | Failure::Lost(e) => e.to_string(),
                            Failure::Api(e) => e.message,
                        };
                        return Err(ApiError::new(
                            ErrorCode::Locked,
                            format!("the store is locked by a process that does not answer on its socket ({why})"),
                        ));
                    }
                    self.take_over(&mode)?;
                }
            }
        }
    }

    /// Runs the opener again for a backend left unopened (`seen`): holds
    /// the store, reaches its holder, or stays unopened with the refusal.
    fn open_again(&self, seen: &Arc<Mode>) -> Result<(), ApiError> {
        let mut mode = self.mode.write();
        if !Arc::ptr_eq(&mode, seen) {
            return Ok(());
        }
        match (self.open)() {
            Ok(engine) => *mode = Arc::new(self.holder(engine)),
            Err(e @ Error::Locked { .. }) => match &self.socket {
                Some(path) => *mode = Arc::new(Mode::Proxy(SocketClient::new(path.clone()))),
                None => return Err(e.into()),
            },
            Err(e @ Error::NoModelInstalled { .. }) => {
                let e = ApiError::from(e);
                *mode = Arc::new(Mode::Unopened(e.clone()));
                return Err(e);
            }
            Err(e) => return Err(e.into()),
        }
        Ok(())
    }

    /// Tries to become the holder after the holder behind `seen` went away.
    fn take_over(&self, seen: &Arc<Mode>) -> Result<(), ApiError> {
        let mut mode = self.mode.write();
        if !Arc::ptr_eq(&mode, seen) {
            // Another call of this process already took over.
            return Ok(());
        }
        match (self.open)() {
            Ok(engine) => {
                *mode = Arc::new(self.holder(engine));
                Ok(())
            }
            Err(Error::Locked { .. }) => {
                // A holder that serves no socket (a program using the
                // library) is never reached: say so now, not after the
                // wait for one that is still coming up.
                if let Some(h) = self.data_dir.as_deref().and_then(mnemon::storage::lock_holder) {
                    if !h.serves_socket && mnemon::storage::process_may_run(h.pid) {
                        return Err(ApiError::new(
                            ErrorCode::Locked,
                            format!(
                                "store is locked: process {} holds it and serves no socket for other processes \
                                 (a program using the mnemon library, or a CLI import); close it, or let it \
                                 finish, then try again",
                                h.pid
                            ),
                        ));
                    }
                }
                // Someone else holds it (a new holder not serving yet, or
                // the old one still exiting): wait a little and retry.
                drop(mode);
                std::thread::sleep(RETRY_PAUSE);
                Ok(())
            }
            Err(e) => Err(e.into()),
        }
    }

    /// Stops serving the socket (answering the requests in flight),
    /// flushes and closes the engine if this process holds it (a cluster
    /// daemon: every namespace it serves, releasing their leases). Later
    /// calls get `closed`.
    ///
    /// # Errors
    /// [`ApiError`] with code `poisoned` if the final flush failed.
    pub fn close(&self) -> Result<(), ApiError> {
        let old = std::mem::replace(&mut *self.mode.write(), Arc::new(Mode::Closed));
        if let Mode::Holder { engine, socket } = &*old {
            if let Some(mut s) = socket.lock().take() {
                s.stop(super::DRAIN_TIMEOUT);
            }
            engine.clone().close()?;
        }
        #[cfg(feature = "cluster")]
        if let Mode::Cluster(node) = &*old {
            node.shutdown()?;
        }
        Ok(())
    }
}

/// Runs `req` on its namespace's owner in the cluster.
#[cfg(feature = "cluster")]
fn cluster_call(node: &mnemon_cluster::ClusterNode, req: &Request) -> Result<Value, ApiError> {
    let Some(ns) = req.namespace() else {
        return Err(ApiError::invalid(
            "namespace",
            format!("{} is store-wide; a cluster daemon runs it per namespace (through the NATS door)", req.op()),
        ));
    };
    let out = node.call(ns, &mnemon_cluster::surface_body(req))?;
    mnemon_cluster::surface_reply(&out)
}

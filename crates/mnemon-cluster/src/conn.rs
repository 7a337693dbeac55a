//! The connection to NATS and the runtime it runs on. The engine is
//! synchronous; every NATS call here is `block_on` on a small runtime that
//! the node owns, with a timeout, and every failure to reach NATS is
//! [`Error::Unavailable`] naming what was attempted.

use std::future::Future;
use std::time::Duration;

use async_nats::jetstream;

use mnemon::{Error, Result};

/// A connected client, its JetStream context and the runtime they run on.
pub(crate) struct Conn {
    rt: Option<tokio::runtime::Runtime>,
    pub(crate) client: async_nats::Client,
    pub(crate) js: jetstream::Context,
    /// Timeout of one NATS request (and of a publish's acknowledgement).
    pub(crate) timeout: Duration,
}

impl std::fmt::Debug for Conn {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Conn").field("timeout", &self.timeout).finish_non_exhaustive()
    }
}

/// Worker threads of the node's runtime: NATS I/O and lease renewal are
/// light; engine work runs on the callers' threads.
const RUNTIME_THREADS: usize = 2;

impl Conn {
    /// Connects to any of `urls` (a client fails over between them), with
    /// `timeout` for the first connection and for every request.
    ///
    /// # Errors
    /// [`Error::InvalidInput`] for no or malformed URLs; [`Error::Unavailable`]
    /// when no server answers; [`Error::Io`] when the runtime cannot start.
    pub(crate) fn connect(urls: &[String], name: &str, timeout: Duration) -> Result<Conn> {
        if urls.is_empty() {
            return Err(Error::invalid("nats", "name at least one server URL"));
        }
        let mut addrs = Vec::with_capacity(urls.len());
        for u in urls {
            let addr: async_nats::ServerAddr =
                u.parse().map_err(|e| Error::invalid("nats", format!("{u:?} is not a NATS URL: {e}")))?;
            addrs.push(addr);
        }
        let rt = tokio::runtime::Builder::new_multi_thread()
            .worker_threads(RUNTIME_THREADS)
            .thread_name("mnemon-nats")
            .enable_all()
            .build()?;
        let opts = async_nats::ConnectOptions::new()
            .name(name)
            .connection_timeout(timeout)
            .request_timeout(Some(timeout))
            // Reconnect quickly: a NATS node restart or failover should cost
            // a namespace a few hundred milliseconds, not the default backoff.
            .reconnect_delay_callback(|attempts| {
                Duration::from_millis(50 * u64::try_from(attempts.min(10)).unwrap_or(10))
            });
        let client = rt
            .block_on(async { tokio::time::timeout(timeout * 2, opts.connect(addrs)).await })
            .map_err(|_| {
                Error::Unavailable(format!("no NATS server answered within {:?} at {}", timeout * 2, urls.join(",")))
            })?
            .map_err(|e| Error::Unavailable(format!("cannot connect to NATS at {}: {e}", urls.join(","))))?;
        // The context spawns its acknowledgement task on the current runtime.
        let mut js = {
            let _entered = rt.enter();
            jetstream::new(client.clone())
        };
        js.set_timeout(timeout);
        Ok(Conn { rt: Some(rt), client, js, timeout })
    }

    /// Runs a future to completion on the runtime. Must not be called from
    /// inside the runtime's own tasks.
    pub(crate) fn block_on<F: Future>(&self, f: F) -> F::Output {
        self.handle().block_on(f)
    }

    /// Runs a future with the request timeout; a timeout is
    /// [`Error::Unavailable`] naming `what`.
    pub(crate) fn run<T, F: Future<Output = Result<T>>>(&self, what: &str, f: F) -> Result<T> {
        let t = self.timeout;
        self.handle().block_on(async move {
            match tokio::time::timeout(t * 2, f).await {
                Ok(r) => r,
                Err(_) => Err(Error::Unavailable(format!("{what}: no answer from NATS within {:?}", t * 2))),
            }
        })
    }

    /// A handle to spawn background tasks on the runtime.
    pub(crate) fn handle(&self) -> tokio::runtime::Handle {
        match &self.rt {
            Some(rt) => rt.handle().clone(),
            // Unreachable: the runtime is only taken by `drop`.
            None => tokio::runtime::Handle::current(),
        }
    }
}

impl Drop for Conn {
    fn drop(&mut self) {
        // The last handle to a node may be dropped on one of the runtime's
        // own threads (a forwarded call finishing): shut down without
        // waiting for them.
        if let Some(rt) = self.rt.take() {
            rt.shutdown_background();
        }
    }
}

/// Maps a NATS client error to [`Error::Unavailable`], naming the action.
pub(crate) fn unavailable(what: &str, e: impl std::fmt::Display) -> Error {
    Error::Unavailable(format!("{what}: {e}"))
}

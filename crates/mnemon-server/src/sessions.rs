//! The MCP sessions of `mnemon serve`, bounded in number and in time.
//!
//! The streamable HTTP transport keeps one session per client that
//! initialised (`Mcp-Session-Id`), and each session keeps the responses it
//! sent for a while so that a client cut off mid-stream can resume it
//! (`Last-Event-ID`). Left to the SDK's own manager, a session lives until
//! it has been idle for its keep-alive, keeps every response of its last
//! minute, and the handle of a session that timed out is never dropped:
//! a daemon that many short-lived clients reach grows with the number of
//! clients and the size of their answers, not with the store.
//!
//! [`Sessions`] wraps the SDK's [`LocalSessionManager`] and keeps:
//! * at most `max` sessions: a new client closes the one idle longest;
//! * no session idle for `idle` or more: it is closed, and its handle
//!   dropped, when the next session is made;
//! * each session's finished responses for [`RESUME_WINDOW`] only (the
//!   SDK's `completed_cache_ttl`), long enough for the reconnect its SSE
//!   `retry` hint (3 s) asks of the client.
//!
//! So the sessions' memory is at most `max` times what one session sends
//! in [`RESUME_WINDOW`].

use std::collections::HashMap;
use std::sync::Arc;
use std::time::{Duration, Instant};

use futures_util::Stream;
use parking_lot::Mutex;
use rmcp::model::{ClientJsonRpcMessage, ServerJsonRpcMessage};
use rmcp::transport::streamable_http_server::session::local::{LocalSessionManager, LocalSessionManagerError};
use rmcp::transport::streamable_http_server::session::{EventStore, ServerSseMessage};
use rmcp::transport::streamable_http_server::{SessionId, SessionManager};

/// How long a session keeps a response it finished sending, for a client
/// that resumes the stream after a cut: 10 s, past the 3 s reconnect delay
/// the server's SSE `retry` field asks for (the SDK's default keeps them
/// 60 s).
pub const RESUME_WINDOW: Duration = Duration::from_secs(10);

/// Default most sessions open at once (`mnemon serve --max-sessions`).
pub const DEFAULT_MAX_SESSIONS: usize = 256;

/// Default time, in seconds, after which an idle session is closed
/// (`mnemon serve --session-idle-secs`): 300 s, the MCP SDK's own default
/// keep-alive.
pub const DEFAULT_SESSION_IDLE_SECS: u64 = 300;

/// A session manager with a cap on open sessions and on their idle time
/// (see the module's doc).
pub struct Sessions {
    inner: LocalSessionManager,
    /// When each open session was last used.
    used: Mutex<HashMap<SessionId, Instant>>,
    max: usize,
    idle: Duration,
}

impl Sessions {
    /// A manager that keeps at most `max` sessions (at least 1) and closes
    /// one idle for `idle`.
    pub fn new(max: usize, idle: Duration) -> Sessions {
        let mut inner = LocalSessionManager::default();
        inner.session_config.keep_alive = Some(idle);
        inner.session_config.completed_cache_ttl = RESUME_WINDOW;
        Sessions { inner, used: Mutex::new(HashMap::new()), max: max.max(1), idle }
    }

    fn touch(&self, id: &SessionId) {
        if let Some(t) = self.used.lock().get_mut(id) {
            *t = Instant::now();
        }
    }

    /// Takes out of the books the sessions to close before a new one is
    /// made: those idle for `idle` (their workers have stopped), then the
    /// longest idle while `max` are open.
    fn to_close(&self) -> Vec<SessionId> {
        let now = Instant::now();
        let mut used = self.used.lock();
        let mut out: Vec<SessionId> =
            used.iter().filter(|(_, t)| now.duration_since(**t) >= self.idle).map(|(id, _)| id.clone()).collect();
        for id in &out {
            used.remove(id);
        }
        while used.len() >= self.max {
            let Some(oldest) = used.iter().min_by_key(|(_, t)| **t).map(|(id, _)| id.clone()) else { break };
            used.remove(&oldest);
            out.push(oldest);
        }
        out
    }
}

impl SessionManager for Sessions {
    type Error = LocalSessionManagerError;
    type Transport = <LocalSessionManager as SessionManager>::Transport;

    async fn create_session(&self) -> Result<(SessionId, Self::Transport), Self::Error> {
        for id in self.to_close() {
            // A session whose worker has stopped closes as `Ok` too; either
            // way its handle leaves the SDK's map.
            let _ = self.inner.close_session(&id).await;
        }
        let (id, transport) = self.inner.create_session().await?;
        self.used.lock().insert(id.clone(), Instant::now());
        Ok((id, transport))
    }

    async fn initialize_session(
        &self,
        id: &SessionId,
        message: ClientJsonRpcMessage,
    ) -> Result<ServerJsonRpcMessage, Self::Error> {
        self.touch(id);
        self.inner.initialize_session(id, message).await
    }

    async fn has_session(&self, id: &SessionId) -> Result<bool, Self::Error> {
        self.inner.has_session(id).await
    }

    async fn close_session(&self, id: &SessionId) -> Result<(), Self::Error> {
        self.used.lock().remove(id);
        self.inner.close_session(id).await
    }

    async fn create_stream(
        &self,
        id: &SessionId,
        message: ClientJsonRpcMessage,
    ) -> Result<impl Stream<Item = ServerSseMessage> + Send + Sync + 'static, Self::Error> {
        self.touch(id);
        self.inner.create_stream(id, message).await
    }

    async fn accept_message(&self, id: &SessionId, message: ClientJsonRpcMessage) -> Result<(), Self::Error> {
        self.touch(id);
        self.inner.accept_message(id, message).await
    }

    async fn create_standalone_stream(
        &self,
        id: &SessionId,
    ) -> Result<impl Stream<Item = ServerSseMessage> + Send + Sync + 'static, Self::Error> {
        self.touch(id);
        self.inner.create_standalone_stream(id).await
    }

    async fn resume(
        &self,
        id: &SessionId,
        last_event_id: String,
    ) -> Result<impl Stream<Item = ServerSseMessage> + Send + Sync + 'static, Self::Error> {
        self.touch(id);
        self.inner.resume(id, last_event_id).await
    }

    fn event_store(&self) -> Option<Arc<dyn EventStore>> {
        self.inner.event_store()
    }
}

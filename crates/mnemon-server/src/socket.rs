//! The store's local socket: the process that holds a data directory
//! serves the command surface on a Unix socket to other processes of the
//! same user, as JSON lines.
//!
//! A request is one line `{"request": {"op": …, …}, "max_response_tokens": N}`;
//! the answer is one line, `{"ok": <response>}` or `{"error": <ApiError>}`.
//! A line without its final newline is never executed, so a request that a
//! dying client left half-written is dropped. The socket is
//! `DATA/mnemon.sock` (mode 0600), or, when that path is too long for a
//! socket address, `TMPDIR/mnemon-<hash of DATA>.sock`.

use std::io::{BufRead, BufReader, Read, Write};
use std::os::unix::fs::PermissionsExt;
use std::os::unix::net::{UnixListener, UnixStream};
use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::Arc;
use std::thread::JoinHandle;
use std::time::{Duration, Instant};

use parking_lot::{Condvar, Mutex};
use serde_json::Value;

use mnemon_api::{ApiError, ErrorCode, Limits, Request};

/// Longest request line, in bytes: the HTTP body limit's size.
const MAX_LINE_BYTES: u64 = super::DEFAULT_MAX_BODY_BYTES as u64;
/// Longest socket path that fits a `sockaddr_un` on every Unix (104 bytes
/// on macOS and the BSDs, 108 on Linux, including the NUL).
const MAX_SOCKET_PATH: usize = 100;
/// File name of the socket in the data directory.
pub const SOCKET_NAME: &str = "mnemon.sock";

/// The socket of the store in `data_dir` (see the module docs).
pub fn socket_path(data_dir: &Path) -> PathBuf {
    let dir = std::fs::canonicalize(data_dir).unwrap_or_else(|_| data_dir.to_path_buf());
    let p = dir.join(SOCKET_NAME);
    if p.as_os_str().len() <= MAX_SOCKET_PATH {
        return p;
    }
    let hash = mnemon::storage::fnv1a64(dir.as_os_str().as_encoded_bytes());
    std::env::temp_dir().join(format!("mnemon-{hash:016x}.sock"))
}

/// Keeps track of the holder's connections and of the requests in flight
/// on them, and refuses new ones once closing. [`Gate::close`] returns only
/// when every connection has ended (or the timeout passed): it shuts the
/// read side of each, so a connection thread blocked on its next line ends,
/// while one that has already taken bytes in reads its line, answers it
/// (with a refusal: `closed`, not applied) and ends. So a holder that exits
/// after `close` never leaves a caller without its answer, not even one
/// whose line arrived just as it was closing; a line that arrives after the
/// read side is shut fails to send (`NotSent` at the client: safe to
/// retry). That is Linux; see [`Gate::close`] for other systems.
#[derive(Default)]
struct Gate {
    state: Mutex<GateState>,
    idle: Condvar,
}

#[derive(Default)]
struct GateState {
    closing: bool,
    /// Requests between reading their line and writing their answer.
    in_flight: usize,
    /// Open connections, by number (a clone of each stream, to shut its
    /// read side on close).
    conns: std::collections::HashMap<u64, UnixStream>,
    next: u64,
}

/// Unregisters a connection from its gate when its thread ends.
struct Registered<'a> {
    gate: &'a Gate,
    id: u64,
}

impl Drop for Registered<'_> {
    fn drop(&mut self) {
        let mut s = self.gate.state.lock();
        s.conns.remove(&self.id);
        if s.conns.is_empty() {
            self.gate.idle.notify_all();
        }
    }
}

impl Gate {
    /// Registers a connection; `None` once closing, or when the stream
    /// cannot be cloned (the caller drops it unread: its client sees the
    /// connection reset and may retry).
    fn register(&self, conn: &UnixStream) -> Option<Registered<'_>> {
        let clone = conn.try_clone().ok()?;
        let mut s = self.state.lock();
        if s.closing {
            return None;
        }
        let id = s.next;
        s.next += 1;
        s.conns.insert(id, clone);
        Some(Registered { gate: self, id })
    }

    /// Counts one request in (always: its answer, a refusal included, is
    /// still to be written; pair with [`Gate::leave`]) and says whether it
    /// may run (false once closing).
    fn enter(&self) -> bool {
        let mut s = self.state.lock();
        s.in_flight += 1;
        !s.closing
    }

    fn leave(&self) {
        let mut s = self.state.lock();
        s.in_flight -= 1;
        if s.in_flight == 0 {
            self.idle.notify_all();
        }
    }

    fn close(&self, timeout: Duration) {
        let deadline = Instant::now() + timeout;
        let mut s = self.state.lock();
        s.closing = true;
        // On Linux a Unix stream socket shut for reading still hands over
        // what is queued (`unix_stream_read_generic`) and refuses later
        // writes (EPIPE); elsewhere (the BSDs, macOS) the shutdown discards
        // the queue, so there the holder only waits for the requests it has
        // taken in, as before, and a line caught in the window is `Lost`.
        let linux = cfg!(target_os = "linux");
        if linux {
            for conn in s.conns.values() {
                let _ = conn.shutdown(std::net::Shutdown::Read);
            }
        }
        while s.in_flight > 0 || (linux && !s.conns.is_empty()) {
            if self.idle.wait_until(&mut s, deadline).timed_out() {
                break;
            }
        }
    }
}

/// What the socket runs a request with: the holder's engine.
pub(crate) type Handler = Arc<dyn Fn(Request, &Limits) -> Result<Value, ApiError> + Send + Sync>;

/// The holder's side: accepts connections and answers their requests.
pub(crate) struct SocketServer {
    path: PathBuf,
    stop: Arc<AtomicBool>,
    gate: Arc<Gate>,
    accept: Option<JoinHandle<()>>,
}

impl SocketServer {
    /// Binds `path` (replacing a stale socket file: the caller holds the
    /// store's lock, so no other process serves it) and starts accepting.
    pub(crate) fn start(path: PathBuf, handler: Handler) -> std::io::Result<SocketServer> {
        match std::fs::remove_file(&path) {
            Err(e) if e.kind() != std::io::ErrorKind::NotFound => return Err(e),
            _ => {}
        }
        let listener = UnixListener::bind(&path)?;
        std::fs::set_permissions(&path, std::fs::Permissions::from_mode(0o600))?;
        let stop = Arc::new(AtomicBool::new(false));
        let gate = Arc::new(Gate::default());
        let (stop2, gate2) = (stop.clone(), gate.clone());
        let accept = std::thread::Builder::new().name("mnemon-socket".into()).spawn(move || {
            for conn in listener.incoming() {
                if stop2.load(Ordering::Acquire) {
                    break;
                }
                let Ok(conn) = conn else { continue };
                let (handler, gate) = (handler.clone(), gate2.clone());
                let _ = std::thread::Builder::new().name("mnemon-socket-conn".into()).spawn(move || {
                    serve_connection(conn, &handler, &gate);
                });
            }
        })?;
        Ok(SocketServer { path, stop, gate, accept: Some(accept) })
    }

    /// Stops accepting, refuses new requests (`closed`: not applied, the
    /// client may retry elsewhere), waits up to `timeout` for those in
    /// flight, and removes the socket file.
    pub(crate) fn stop(&mut self, timeout: Duration) {
        self.stop.store(true, Ordering::Release);
        // Wake the accept loop.
        let _ = UnixStream::connect(&self.path);
        if let Some(h) = self.accept.take() {
            let _ = h.join();
        }
        let _ = std::fs::remove_file(&self.path);
        self.gate.close(timeout);
    }
}

impl Drop for SocketServer {
    fn drop(&mut self) {
        if self.accept.is_some() {
            self.stop(Duration::ZERO);
        }
    }
}

fn serve_connection(conn: UnixStream, handler: &Handler, gate: &Gate) {
    let Some(_registered) = gate.register(&conn) else { return };
    let Ok(mut writer) = conn.try_clone() else { return };
    let mut reader = BufReader::new(conn);
    loop {
        let mut line = Vec::new();
        match (&mut reader).take(MAX_LINE_BYTES + 1).read_until(b'\n', &mut line) {
            Ok(0) | Err(_) => return,
            Ok(_) => {}
        }
        if line.last() != Some(&b'\n') {
            // Too long, or cut off by the client's exit: never executed.
            if line.len() as u64 > MAX_LINE_BYTES {
                let e = ApiError::invalid("request", format!("longer than {MAX_LINE_BYTES} bytes"));
                let _ = writeln!(writer, "{}", serde_json::json!({ "error": e }));
            }
            return;
        }
        let answer = if gate.enter() {
            answer(&line, handler)
        } else {
            serde_json::json!({ "error": ApiError::new(ErrorCode::Closed, "the store's holder is shutting down; not applied") })
        };
        // Leave the gate only once the answer is written: a closing holder
        // waits for the gate before it exits.
        let sent = writeln!(writer, "{answer}").and_then(|()| writer.flush());
        gate.leave();
        if sent.is_err() {
            return;
        }
    }
}

fn answer(line: &[u8], handler: &Handler) -> Value {
    let run = || -> Result<Value, ApiError> {
        let v: Value =
            serde_json::from_slice(line).map_err(|e| ApiError::invalid("request", format!("not JSON: {e}")))?;
        let limits = match v.get("max_response_tokens").and_then(Value::as_u64) {
            Some(n) => Limits { max_response_tokens: usize::try_from(n).unwrap_or(usize::MAX).max(1000) },
            None => Limits::default(),
        };
        let req = Request::from_value(v.get("request").cloned().unwrap_or(Value::Null))?;
        handler(req, &limits)
    };
    match run() {
        Ok(v) => serde_json::json!({ "ok": v }),
        Err(e) => serde_json::json!({ "error": e }),
    }
}

/// Why a call through the socket failed.
#[derive(Debug)]
pub(crate) enum Failure {
    /// Nothing reached the holder (no socket, refused, or the write
    /// failed before the line was complete): safe to retry.
    NotSent(std::io::Error),
    /// The request was sent and no answer came (the holder died): a
    /// write may or may not have been applied.
    Lost(std::io::Error),
    /// The holder answered with an error.
    Api(ApiError),
}

/// Whether an idle pooled connection can still carry a request: the holder
/// has neither closed it nor sent anything unasked (a non-blocking read
/// finds nothing to read yet).
fn still_open(conn: &BufReader<UnixStream>) -> bool {
    if !conn.buffer().is_empty() || conn.get_ref().set_nonblocking(true).is_err() {
        return false;
    }
    let mut probe = [0u8; 1];
    let mut stream: &UnixStream = conn.get_ref();
    let open = matches!(stream.read(&mut probe), Err(e) if e.kind() == std::io::ErrorKind::WouldBlock);
    open && conn.get_ref().set_nonblocking(false).is_ok()
}

/// Whether a read error on a request's connection proves the holder never
/// read the whole request line. On Linux a Unix stream socket reports
/// `ECONNRESET` to its peer only when it is closed with unread data in its
/// receive queue (`unix_release_sock` in net/unix/af_unix.c); the holder
/// reads a line before executing it and the client sends one line at a
/// time, so the unread bytes are this request's own tail and it was never
/// executed: safe to retry. Elsewhere the error stays "answer lost".
fn unread_at_close(e: &std::io::Error) -> bool {
    cfg!(target_os = "linux") && e.kind() == std::io::ErrorKind::ConnectionReset
}

/// The client's side: a small pool of connections to the holder.
pub(crate) struct SocketClient {
    path: PathBuf,
    idle: Mutex<Vec<BufReader<UnixStream>>>,
}

impl SocketClient {
    pub(crate) fn new(path: PathBuf) -> SocketClient {
        SocketClient { path, idle: Mutex::new(Vec::new()) }
    }

    /// Sends `req` and waits for the answer.
    pub(crate) fn call(&self, req: &Request, limits: &Limits) -> Result<Value, Failure> {
        // A pooled connection whose holder went away since its last use is
        // dropped here rather than written to.
        let pooled = self.idle.lock().pop().filter(still_open);
        let mut conn = match pooled {
            Some(c) => c,
            None => BufReader::new(UnixStream::connect(&self.path).map_err(Failure::NotSent)?),
        };
        let line = serde_json::json!({ "request": req.to_value(), "max_response_tokens": limits.max_response_tokens });
        let mut bytes = line.to_string().into_bytes();
        bytes.push(b'\n');
        if let Err(e) = conn.get_mut().write_all(&bytes) {
            return Err(Failure::NotSent(e));
        }
        let mut answer = Vec::new();
        match conn.read_until(b'\n', &mut answer) {
            Ok(_) if answer.last() == Some(&b'\n') => {}
            Ok(_) => {
                return Err(Failure::Lost(std::io::Error::new(std::io::ErrorKind::UnexpectedEof, "holder exited")))
            }
            Err(e) if unread_at_close(&e) => return Err(Failure::NotSent(e)),
            Err(e) => return Err(Failure::Lost(e)),
        }
        let v: Value = serde_json::from_slice(&answer).map_err(|e| {
            Failure::Api(ApiError::new(
                ErrorCode::Internal,
                format!("the holder answered something that is not JSON: {e}"),
            ))
        })?;
        self.idle.lock().push(conn);
        match (v.get("ok"), v.get("error")) {
            (Some(ok), _) => Ok(ok.clone()),
            (None, Some(e)) => Err(Failure::Api(serde_json::from_value(e.clone()).unwrap_or_else(|_| {
                ApiError::new(ErrorCode::Internal, format!("the holder answered an unknown error: {e}"))
            }))),
            (None, None) => {
                Err(Failure::Api(ApiError::new(ErrorCode::Internal, "the holder's answer has neither ok nor error")))
            }
        }
    }
}

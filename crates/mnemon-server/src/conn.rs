//! The HTTP door's connections: accepting with back-off, the connection
//! cap and its refusal, and each connection's socket and hyper settings.
//!
//! Every accepted socket gets `TCP_NODELAY`: a response leaves in several
//! writes (head, then body or event-stream chunks), and with Nagle's
//! algorithm the later ones wait for the client's delayed ACK (about
//! 40 ms on Linux) on every call. hyper's header read timeout (with
//! tokio's timer) closes a connection that has not sent a request's
//! headers in time, counted from its opening or from the end of its
//! previous exchange, so slow-header and idle connections both end.

use std::sync::Arc;
use std::time::Duration;

use tokio::io::{AsyncReadExt, AsyncWriteExt};
use tokio::net::{TcpListener, TcpStream};
use tokio::sync::{OwnedSemaphorePermit, Semaphore};

/// First pause after `accept` fails (out of file descriptors, most often);
/// doubled after each further failure up to [`ACCEPT_BACKOFF_MAX`], back
/// to this after a success. Without it a full file table turns the accept
/// loop into a busy loop.
pub(crate) const ACCEPT_BACKOFF_MIN: Duration = Duration::from_millis(10);
/// Longest pause between failed `accept`s.
pub(crate) const ACCEPT_BACKOFF_MAX: Duration = Duration::from_secs(1);
/// Refusals over the cap being written at once; beyond this a connection
/// over the cap is closed without an answer (each refusal holds a file
/// descriptor for up to [`REFUSAL_LINGER`]).
const MAX_REFUSALS: usize = 64;
/// How long a refused connection is kept to deliver the 503 and read what
/// the client sent (closing with unread data would reset the connection
/// and could lose the answer).
const REFUSAL_LINGER: Duration = Duration::from_secs(1);

/// Accepts connections and admits at most `max` at once; the rest get a
/// 503 refusal.
pub(crate) struct Acceptor {
    listener: TcpListener,
    slots: Arc<Semaphore>,
    refusals: Arc<Semaphore>,
    max: usize,
    backoff: Duration,
}

/// An admitted connection: its socket and its slot under the cap
/// (released when dropped).
pub(crate) struct Admitted {
    pub(crate) stream: TcpStream,
    pub(crate) slot: OwnedSemaphorePermit,
}

impl Acceptor {
    /// An acceptor on `listener` admitting at most `max` connections.
    pub(crate) fn new(listener: TcpListener, max: usize) -> Acceptor {
        Acceptor {
            listener,
            slots: Arc::new(Semaphore::new(max)),
            refusals: Arc::new(Semaphore::new(MAX_REFUSALS)),
            max,
            backoff: ACCEPT_BACKOFF_MIN,
        }
    }

    /// The next admitted connection, with `TCP_NODELAY` set. Connections
    /// over the cap are refused here (in the background); `accept` errors
    /// pause the loop (see [`ACCEPT_BACKOFF_MIN`]).
    pub(crate) async fn next(&mut self) -> Admitted {
        loop {
            let stream = match self.listener.accept().await {
                Ok((stream, _)) => {
                    self.backoff = ACCEPT_BACKOFF_MIN;
                    stream
                }
                // The client gave up before we took it: nothing to wait for.
                Err(e)
                    if matches!(e.kind(), std::io::ErrorKind::ConnectionAborted | std::io::ErrorKind::Interrupted) =>
                {
                    continue
                }
                Err(e) => {
                    if self.backoff == ACCEPT_BACKOFF_MIN {
                        eprintln!(
                            "mnemon: cannot accept connections ({e}); retrying with back-off up to {} ms",
                            ACCEPT_BACKOFF_MAX.as_millis()
                        );
                    }
                    tokio::time::sleep(self.backoff).await;
                    self.backoff = (self.backoff * 2).min(ACCEPT_BACKOFF_MAX);
                    continue;
                }
            };
            // Without it every response waits for the client's delayed ACK.
            let _ = stream.set_nodelay(true);
            match self.slots.clone().try_acquire_owned() {
                Ok(slot) => return Admitted { stream, slot },
                Err(_) => {
                    if let Ok(permit) = self.refusals.clone().try_acquire_owned() {
                        tokio::spawn(refuse(stream, self.max, permit));
                    }
                }
            }
        }
    }

    /// The address listened on.
    pub(crate) fn local_addr(&self) -> std::io::Result<std::net::SocketAddr> {
        self.listener.local_addr()
    }
}

/// Answers a connection over the cap with 503, `Retry-After: 1` and a
/// JSON-RPC error, then closes it.
async fn refuse(mut stream: TcpStream, max: usize, _permit: OwnedSemaphorePermit) {
    let body = serde_json::json!({
        "jsonrpc": "2.0",
        "id": null,
        "error": {"code": -32000, "message": format!("server busy: {max} connections are open, the most it takes; retry later")},
    })
    .to_string();
    let head = format!(
        "HTTP/1.1 503 Service Unavailable\r\ncontent-type: application/json\r\nretry-after: 1\r\nconnection: close\r\ncontent-length: {}\r\n\r\n",
        body.len()
    );
    let _ = tokio::time::timeout(REFUSAL_LINGER, async {
        stream.write_all(head.as_bytes()).await?;
        stream.write_all(body.as_bytes()).await?;
        stream.shutdown().await?;
        // Read what the client sent until it closes, so that closing does
        // not reset the connection before the answer is read.
        let mut sink = [0u8; 4096];
        while stream.read(&mut sink).await? > 0 {}
        Ok::<(), std::io::Error>(())
    })
    .await;
}

#[cfg(test)]
mod tests {
    use super::*;

    #[tokio::test]
    async fn admitted_sockets_have_nodelay_and_the_cap_refuses_with_503() {
        let listener = TcpListener::bind("127.0.0.1:0").await.unwrap();
        let addr = listener.local_addr().unwrap();
        let mut acceptor = Acceptor::new(listener, 1);
        let _first = TcpStream::connect(addr).await.unwrap();
        let admitted = acceptor.next().await;
        assert!(admitted.stream.nodelay().unwrap(), "TCP_NODELAY not set");
        // The one slot is taken: the next connection is refused.
        let mut second = TcpStream::connect(addr).await.unwrap();
        let refusing = tokio::spawn(async move {
            let next = acceptor.next().await;
            drop(next);
        });
        second.write_all(b"GET /mcp HTTP/1.1\r\nHost: 127.0.0.1\r\n\r\n").await.unwrap();
        let mut answer = String::new();
        tokio::time::timeout(Duration::from_secs(30), second.read_to_string(&mut answer)).await.unwrap().unwrap();
        assert!(answer.starts_with("HTTP/1.1 503 "), "{answer}");
        assert!(answer.contains("retry-after: 1\r\n"), "{answer}");
        assert!(answer.contains("\"code\":-32000"), "{answer}");
        refusing.abort();
        drop(admitted);
    }
}

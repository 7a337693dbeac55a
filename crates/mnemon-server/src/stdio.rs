//! `mnemon mcp`'s transport: newline-delimited JSON-RPC 2.0 on stdin and
//! stdout, every line checked before the SDK sees it, so that each
//! malformed one gets the error the JSON-RPC specification names (the
//! SDK's own stdio transport drops a line that is not JSON, or not
//! UTF-8, without a word) and a note on standard error:
//!
//! | line | answer |
//! | --- | --- |
//! | not UTF-8, not JSON (a lone surrogate escape included) | -32700 parse error, id null |
//! | longer than the limit | -32600 invalid request, id null |
//! | a batch (array), not an object, an id that is not a string or integer | -32600, id null |
//! | `jsonrpc` other than `"2.0"`, `method` not a string, neither request nor response | -32600, the id if readable |
//! | a request whose `params` is not an object or does not fit its method | -32602 invalid params, the request's id |
//! | a request for an unknown method | -32601 method not found (answered by the SDK) |
//!
//! Notifications are never answered (JSON-RPC 2.0 §4.1): a malformed one
//! is only noted on standard error.

use std::io;

use rmcp::model::{CallToolRequestParams, ClientRequest, JsonRpcMessage};
use rmcp::service::{RxJsonRpcMessage, TxJsonRpcMessage};
use rmcp::transport::Transport;
use rmcp::RoleServer;
use serde_json::{json, Map, Value};
use tokio::io::{AsyncBufReadExt, AsyncRead, AsyncWrite, AsyncWriteExt, BufReader};
use tokio::sync::{mpsc, oneshot};

/// JSON-RPC 2.0 error codes (section 5.1 of the specification).
const PARSE_ERROR: i64 = -32700;
const INVALID_REQUEST: i64 = -32600;
const INVALID_PARAMS: i64 = -32602;

/// The requests the SDK reads into their own types (`ClientRequest`); a
/// line naming one of them that the SDK reads as a custom request has
/// params that do not fit.
const KNOWN_REQUESTS: &[&str] = &[
    "ping",
    "initialize",
    "server/discover",
    "completion/complete",
    "logging/setLevel",
    "prompts/get",
    "prompts/list",
    "resources/list",
    "resources/templates/list",
    "resources/read",
    "resources/directory/read",
    "subscriptions/listen",
    "resources/subscribe",
    "resources/unsubscribe",
    "tools/call",
    "tools/list",
    "tasks/get",
    "tasks/update",
    "tasks/cancel",
    "skills/list",
    "skills/get",
];

/// What the writer task writes: one line, and where to report the write.
type Outgoing = (Vec<u8>, Option<oneshot::Sender<io::Result<()>>>);

/// JSON-RPC over newline-delimited lines of `R` (in) and `W` (out). All
/// output goes through one writer task, so lines never interleave and the
/// transport's reads stay cancel-safe (the SDK polls `receive` in a
/// `select!`).
pub(crate) struct LineTransport<R> {
    read: BufReader<R>,
    /// The line being read (kept across cancelled reads).
    line: Vec<u8>,
    /// Dropping the rest of a line that was too long.
    discarding: bool,
    max_line: usize,
    out: Option<mpsc::UnboundedSender<Outgoing>>,
    writer: Option<tokio::task::JoinHandle<()>>,
}

impl<R: AsyncRead + Unpin + Send> LineTransport<R> {
    /// A transport reading lines of at most `max_line` bytes from `read`
    /// and writing to `write`. Call within a tokio runtime (spawns the
    /// writer task).
    pub(crate) fn new<W: AsyncWrite + Unpin + Send + 'static>(read: R, write: W, max_line: usize) -> Self {
        let (tx, rx) = mpsc::unbounded_channel();
        let writer = tokio::spawn(write_lines(write, rx));
        LineTransport {
            read: BufReader::new(read),
            line: Vec::new(),
            discarding: false,
            max_line,
            out: Some(tx),
            writer: Some(writer),
        }
    }

    /// Queues an answer of ours (an error for a malformed line).
    fn answer(&self, message: &Value) {
        if let Some(tx) = &self.out {
            let mut bytes = message.to_string().into_bytes();
            bytes.push(b'\n');
            let _ = tx.send((bytes, None));
        }
    }

    /// Reads up to the next newline into `self.line`; `Ok(false)` at the
    /// end of input. A line over the limit comes back as `Err(())` once it
    /// ends (nothing of it is kept). Cancel-safe: bytes are moved from the buffer into
    /// `self.line` with no await in between.
    async fn read_line(&mut self) -> io::Result<Result<bool, ()>> {
        loop {
            let available = self.read.fill_buf().await?;
            if available.is_empty() {
                // A last line without its newline is still a line.
                if std::mem::replace(&mut self.discarding, false) {
                    return Ok(Err(()));
                }
                return Ok(Ok(!self.line.is_empty()));
            }
            let newline = available.iter().position(|b| *b == b'\n');
            let take = newline.map_or(available.len(), |i| i + 1);
            if !self.discarding {
                if self.line.len() + take > self.max_line.saturating_add(1) {
                    self.line.clear();
                    self.discarding = true;
                } else {
                    self.line.extend_from_slice(&available[..take]);
                }
            }
            self.read.consume(take);
            if newline.is_some() {
                let was_discarding = std::mem::replace(&mut self.discarding, false);
                if was_discarding {
                    return Ok(Err(()));
                }
                return Ok(Ok(true));
            }
        }
    }
}

async fn write_lines<W: AsyncWrite + Unpin>(mut out: W, mut rx: mpsc::UnboundedReceiver<Outgoing>) {
    while let Some((bytes, done)) = rx.recv().await {
        let r = async {
            out.write_all(&bytes).await?;
            out.flush().await
        }
        .await;
        if let Some(done) = done {
            let _ = done.send(r);
        }
    }
}

/// What to do with one line.
#[derive(Debug)]
enum Checked {
    /// A message for the SDK.
    Message(Box<RxJsonRpcMessage<RoleServer>>),
    /// Answer with this error and note `why` on standard error.
    Answer { error: Value, why: String },
    /// A malformed notification or response: noted, never answered.
    Drop(String),
    /// An empty line, or a notification the SDK does not know (ignored
    /// for compatibility, as the SDK does).
    Skip,
}

fn error(id: Value, code: i64, message: &str) -> Value {
    json!({ "jsonrpc": "2.0", "id": id, "error": { "code": code, "message": message } })
}

fn answer(id: Value, code: i64, why: String) -> Checked {
    Checked::Answer { error: error(id, code, &why), why }
}

/// Judges one line (without its newline).
fn check(line: &[u8]) -> Checked {
    let line = line.strip_suffix(b"\r").unwrap_or(line);
    let line = line.strip_prefix(b"\xEF\xBB\xBF").unwrap_or(line);
    let text = match std::str::from_utf8(line) {
        Ok(t) => t,
        Err(e) => return answer(Value::Null, PARSE_ERROR, format!("parse error: the line is not UTF-8 ({e})")),
    };
    if text.trim().is_empty() {
        return Checked::Skip;
    }
    // serde_json refuses unpaired surrogate escapes (`"\ud83c"`): the
    // text would not be Unicode.
    let v: Value = match serde_json::from_str(text) {
        Ok(v) => v,
        Err(e) => return answer(Value::Null, PARSE_ERROR, format!("parse error: {e}")),
    };
    let m = match &v {
        Value::Object(m) => m,
        Value::Array(_) => {
            return answer(
                Value::Null,
                INVALID_REQUEST,
                "invalid request: batches are not supported; send one message per line".into(),
            )
        }
        _ => return answer(Value::Null, INVALID_REQUEST, "invalid request: a message is a JSON object".into()),
    };
    check_object(m, &v)
}

fn check_object(m: &Map<String, Value>, v: &Value) -> Checked {
    let id = match m.get("id") {
        None => None,
        Some(id @ Value::String(_)) => Some(id.clone()),
        Some(Value::Number(n)) if n.is_i64() || n.is_u64() => Some(Value::Number(n.clone())),
        Some(_) => {
            return answer(Value::Null, INVALID_REQUEST, "invalid request: id must be a string or an integer".into())
        }
    };
    let reply_id = id.clone().unwrap_or(Value::Null);
    if m.get("jsonrpc").and_then(Value::as_str) != Some("2.0") {
        return answer(reply_id, INVALID_REQUEST, "invalid request: \"jsonrpc\" must be \"2.0\"".into());
    }
    let method = match m.get("method") {
        Some(Value::String(s)) => Some(s.as_str()),
        Some(_) => return answer(reply_id, INVALID_REQUEST, "invalid request: method must be a string".into()),
        None => None,
    };
    let Some(method) = method else {
        // A response to a request of ours: an id and exactly one of
        // result and error.
        if id.is_none() || m.contains_key("result") == m.contains_key("error") {
            return answer(
                reply_id,
                INVALID_REQUEST,
                "invalid request: a message has a method (request, notification), or an id and a result or error (response)"
                    .into(),
            );
        }
        return match serde_json::from_value::<RxJsonRpcMessage<RoleServer>>(v.clone()) {
            Ok(msg) => Checked::Message(Box::new(msg)),
            Err(e) => Checked::Drop(format!("a response that does not read: {e}")),
        };
    };
    if let Some(p) = m.get("params") {
        if !p.is_object() {
            let why = format!("invalid params: params of {method} must be an object");
            return match id {
                Some(id) => answer(id, INVALID_PARAMS, why),
                None => Checked::Drop(format!("notification {method}: {why}")),
            };
        }
    }
    match serde_json::from_value::<RxJsonRpcMessage<RoleServer>>(v.clone()) {
        // The SDK reads a known request whose params do not fit as a
        // custom one, and would answer "method not found".
        Ok(JsonRpcMessage::Request(r))
            if matches!(r.request, ClientRequest::CustomRequest(_)) && KNOWN_REQUESTS.contains(&method) =>
        {
            let detail = match method {
                "tools/call" => {
                    serde_json::from_value::<CallToolRequestParams>(m.get("params").cloned().unwrap_or_default())
                        .err()
                        .map(|e| format!(": {e}"))
                }
                _ => None,
            };
            answer(
                reply_id,
                INVALID_PARAMS,
                format!(
                    "invalid params for {method}{}",
                    detail.unwrap_or_else(|| ": they do not fit the method".into())
                ),
            )
        }
        Ok(msg) => Checked::Message(Box::new(msg)),
        Err(e) => match id {
            Some(id) => answer(id, INVALID_PARAMS, format!("invalid params for {method}: {e}")),
            // The SDK ignores notifications it does not know.
            None if method.starts_with("notifications/") => Checked::Skip,
            None => Checked::Drop(format!("notification {method} does not read: {e}")),
        },
    }
}

impl<R: AsyncRead + Unpin + Send> Transport<RoleServer> for LineTransport<R> {
    type Error = io::Error;

    fn send(
        &mut self,
        item: TxJsonRpcMessage<RoleServer>,
    ) -> impl std::future::Future<Output = Result<(), io::Error>> + Send + 'static {
        let out = self.out.clone();
        async move {
            let mut bytes = serde_json::to_vec(&item).map_err(io::Error::other)?;
            bytes.push(b'\n');
            let (done, written) = oneshot::channel();
            let out = out.ok_or_else(|| io::Error::new(io::ErrorKind::NotConnected, "stdout is closed"))?;
            out.send((bytes, Some(done)))
                .map_err(|_| io::Error::new(io::ErrorKind::NotConnected, "stdout is closed"))?;
            written.await.map_err(|_| io::Error::new(io::ErrorKind::NotConnected, "stdout is closed"))?
        }
    }

    async fn receive(&mut self) -> Option<RxJsonRpcMessage<RoleServer>> {
        loop {
            match self.read_line().await {
                Ok(Ok(true)) => {}
                Ok(Ok(false)) => return None,
                Ok(Err(())) => {
                    let why = format!("invalid request: a line longer than {} bytes", self.max_line);
                    eprintln!("mnemon: stdin: {why}; answered {INVALID_REQUEST}");
                    self.answer(&error(Value::Null, INVALID_REQUEST, &why));
                    continue;
                }
                Err(e) => {
                    eprintln!("mnemon: stdin: {e}");
                    return None;
                }
            }
            let checked = check(self.line.strip_suffix(b"\n").unwrap_or(&self.line));
            self.line.clear();
            match checked {
                Checked::Message(m) => return Some(*m),
                Checked::Answer { error, why } => {
                    let code = error["error"]["code"].as_i64().unwrap_or(INVALID_REQUEST);
                    eprintln!("mnemon: stdin: {why}; answered {code}");
                    self.answer(&error);
                }
                Checked::Drop(why) => {
                    eprintln!("mnemon: stdin: {why}; ignored (a notification or response gets no answer)")
                }
                Checked::Skip => {}
            }
        }
    }

    async fn close(&mut self) -> Result<(), io::Error> {
        // Every queued line is written before the writer task ends.
        drop(self.out.take());
        if let Some(w) = self.writer.take() {
            let _ = w.await;
        }
        Ok(())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn code(line: &[u8]) -> (i64, Value) {
        match check(line) {
            Checked::Answer { error, .. } => (error["error"]["code"].as_i64().unwrap(), error["id"].clone()),
            other => panic!("{}: {other:?}", String::from_utf8_lossy(line)),
        }
    }

    #[test]
    fn malformed_lines_get_the_named_errors() {
        assert_eq!(code(b"not json"), (PARSE_ERROR, Value::Null));
        assert_eq!(code(b"\"\\ud83c\""), (PARSE_ERROR, Value::Null));
        assert_eq!(
            code(b"{\"jsonrpc\":\"2.0\",\"id\":1,\"method\":\"ping\",\"x\":\"\\udc00\"}"),
            (PARSE_ERROR, Value::Null)
        );
        assert_eq!(code(b"\xff\xfe{}"), (PARSE_ERROR, Value::Null));
        assert_eq!(code(b"[]"), (INVALID_REQUEST, Value::Null));
        assert_eq!(code(b"[{\"jsonrpc\":\"2.0\",\"id\":1,\"method\":\"ping\"}]"), (INVALID_REQUEST, Value::Null));
        assert_eq!(code(b"7"), (INVALID_REQUEST, Value::Null));
        assert_eq!(code(b"{\"jsonrpc\":\"1.0\",\"id\":3,\"method\":\"ping\"}"), (INVALID_REQUEST, json!(3)));
        assert_eq!(code(b"{\"jsonrpc\":\"2.0\",\"id\":3}"), (INVALID_REQUEST, json!(3)));
        assert_eq!(code(b"{\"jsonrpc\":\"2.0\",\"id\":{},\"method\":\"ping\"}"), (INVALID_REQUEST, Value::Null));
        assert_eq!(code(b"{\"jsonrpc\":\"2.0\",\"id\":1.5,\"method\":\"ping\"}"), (INVALID_REQUEST, Value::Null));
        assert_eq!(code(b"{\"jsonrpc\":\"2.0\",\"id\":\"a\",\"method\":7}"), (INVALID_REQUEST, json!("a")));
        assert_eq!(
            code(b"{\"jsonrpc\":\"2.0\",\"id\":4,\"method\":\"tools/call\",\"params\":\"oops\"}"),
            (INVALID_PARAMS, json!(4))
        );
        assert_eq!(
            code(b"{\"jsonrpc\":\"2.0\",\"id\":5,\"method\":\"tools/call\",\"params\":{\"name\":7}}"),
            (INVALID_PARAMS, json!(5))
        );
        assert!(matches!(
            check(b"{\"jsonrpc\":\"2.0\",\"method\":\"notifications/initialized\",\"params\":7}"),
            Checked::Drop(_)
        ));
        assert!(matches!(check(b"{\"jsonrpc\":\"2.0\",\"id\":6,\"method\":\"ping\"}"), Checked::Message(_)));
        assert!(matches!(check(b"  "), Checked::Skip));
    }
}

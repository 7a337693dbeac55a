//! A namespace's log of record: one JetStream stream per namespace and
//! generation, with one subject. Appends carry
//! `Nats-Expected-Last-Subject-Sequence`, so an append succeeds only if
//! nothing was appended since the appender last looked: the fencing check.

use std::time::Duration;

use async_nats::jetstream::consumer::{pull, DeliverPolicy};
use async_nats::jetstream::context::PublishErrorKind;
use async_nats::jetstream::stream::{Config, StorageType};
use async_nats::jetstream::Context;
use async_nats::HeaderMap;
use futures_util::StreamExt;

use crate::conn::unavailable;
use crate::names::Names;
use mnemon::{Error, Result};

/// How long one publish of an append waits for its acknowledgement before
/// the same message is sent again ([`NsLog::append`]): a quarter of the
/// request timeout, at least 250 ms. An acknowledgement lost with a NATS
/// node, or held back while the stream elects a new leader, then costs a
/// quarter of the timeout instead of all of it (which also costs the daemon
/// the namespace).
fn ack_step(timeout: Duration) -> Duration {
    (timeout / 4).max(Duration::from_millis(250))
}

/// One generation of one namespace's stream.
pub(crate) struct NsLog {
    /// The namespace (for errors).
    pub(crate) ns: String,
    /// Stream name.
    pub(crate) name: String,
    /// Its one subject.
    pub(crate) subject: String,
    /// The generation (a new one is written by each cluster compaction).
    pub(crate) generation: u64,
    /// How long an append may wait for its acknowledgement in all.
    timeout: Duration,
    js: Context,
    stream: async_nats::jetstream::stream::Stream,
}

impl std::fmt::Debug for NsLog {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("NsLog").field("name", &self.name).finish_non_exhaustive()
    }
}

impl NsLog {
    /// Opens generation `generation` of the namespace's stream, creating it
    /// if needed (file storage, `replicas` copies, message deletion and
    /// purging denied: the log is only ever appended to, and erased by
    /// deleting the whole stream).
    ///
    /// # Errors
    /// [`Error::Unavailable`] when JetStream does not answer or refuses.
    pub(crate) async fn open(
        js: &Context,
        names: &Names,
        ns: &str,
        token: &str,
        generation: u64,
        replicas: usize,
        timeout: Duration,
    ) -> Result<NsLog> {
        let name = names.stream(token, generation);
        let subject = names.subject(token, generation);
        let stream = js
            .get_or_create_stream(Config {
                name: name.clone(),
                subjects: vec![subject.clone()],
                storage: StorageType::File,
                num_replicas: replicas,
                deny_delete: true,
                deny_purge: true,
                ..Default::default()
            })
            .await
            .map_err(|e| unavailable(&format!("opening stream {name}"), e))?;
        Ok(NsLog { ns: ns.to_string(), name, subject, generation, timeout, js: js.clone(), stream })
    }

    /// The stream sequence of the last message (0 when empty).
    ///
    /// # Errors
    /// [`Error::Unavailable`] when JetStream does not answer.
    pub(crate) async fn last_seq(&self) -> Result<u64> {
        let info = self.stream.get_info().await.map_err(|e| unavailable(&format!("reading {}", self.name), e))?;
        Ok(info.state.last_sequence)
    }

    /// Appends one message if the stream's last sequence is still
    /// `expected_last`; returns the message's sequence once a quorum of the
    /// stream's replicas holds it. A message unacknowledged for
    /// [`ack_step`] is sent again, with the same `Nats-Msg-Id` (so
    /// JetStream keeps one copy), until the request timeout; so is one that
    /// found no server answering for the stream (electing a leader, or
    /// deleted: a deleted stream's error then comes at the timeout).
    ///
    /// # Errors
    /// [`Error::Fenced`] when the stream moved past `expected_last` (another
    /// writer appended); [`Error::Unavailable`] when the append was not
    /// confirmed within the request timeout (it may or may not have been
    /// stored); [`Error::Storage`] when the message exceeds the server's
    /// size limit.
    pub(crate) async fn append(&self, payload: Vec<u8>, expected_last: u64) -> Result<u64> {
        let mut headers = HeaderMap::new();
        headers.insert("Nats-Expected-Stream", self.name.as_str());
        headers.insert("Nats-Expected-Last-Subject-Sequence", expected_last.to_string().as_str());
        // One id for every copy of this message sent: JetStream stores the
        // first and acknowledges the others as duplicates of it (within the
        // stream's duplicate window, two minutes by default).
        let id = format!("{}.{expected_last}.{:016x}", self.name, rand::random::<u64>());
        headers.insert("Nats-Msg-Id", id.as_str());
        let len = payload.len();
        let payload = bytes::Bytes::from(payload);
        let deadline = tokio::time::Instant::now() + self.timeout;
        let step = ack_step(self.timeout);
        loop {
            let sent = self
                .js
                .publish_with_headers(self.subject.clone(), headers.clone(), payload.clone())
                .await
                .map_err(|e| unavailable(&format!("appending to {}", self.name), e))?;
            let wait = step.min(deadline.saturating_duration_since(tokio::time::Instant::now()));
            let Ok(acked) = tokio::time::timeout(wait, sent).await else {
                // No acknowledgement yet: the connection moved to another
                // NATS node, or the stream is electing a leader. The same
                // message is sent again.
                if tokio::time::Instant::now() >= deadline {
                    return Err(Error::Unavailable(format!(
                        "appending to {}: not acknowledged within {:?}",
                        self.name, self.timeout
                    )));
                }
                continue;
            };
            return match acked {
                Ok(ack) => Ok(ack.sequence),
                Err(e) => Err(match e.kind() {
                    PublishErrorKind::WrongLastSequence => Error::Fenced {
                        namespace: self.ns.clone(),
                        reason: format!("{} moved past sequence {expected_last}: another daemon writes it", self.name),
                    },
                    PublishErrorKind::MaxPayloadExceeded => Error::Storage(
                        format!("a log message of {len} bytes exceeds the NATS server's max_payload").into(),
                    ),
                    // No server answered for the stream: it is electing a
                    // leader, or the connection is moving; send again while
                    // time is left.
                    PublishErrorKind::StreamNotFound | PublishErrorKind::TimedOut | PublishErrorKind::BrokenPipe
                        if tokio::time::Instant::now() + step / 4 < deadline =>
                    {
                        tokio::time::sleep(step / 4).await;
                        continue;
                    }
                    _ => unavailable(&format!("appending to {}", self.name), e),
                }),
            };
        }
    }

    /// Reads the messages with `from <= sequence <= to` in order, handing
    /// each `(sequence, payload)` to `f`. Waits at most `timeout` for each.
    ///
    /// # Errors
    /// [`Error::Unavailable`] when a message does not arrive in time or
    /// JetStream refuses; whatever `f` returns.
    pub(crate) async fn read(
        &self,
        from: u64,
        to: u64,
        timeout: Duration,
        mut f: impl FnMut(u64, &[u8]) -> Result<()>,
    ) -> Result<()> {
        if from > to {
            return Ok(());
        }
        let what = || format!("reading {}", self.name);
        let consumer = self
            .stream
            .create_consumer(pull::OrderedConfig {
                filter_subject: self.subject.clone(),
                deliver_policy: DeliverPolicy::ByStartSequence { start_sequence: from },
                ..Default::default()
            })
            .await
            .map_err(|e| unavailable(&what(), e))?;
        let mut messages = consumer.messages().await.map_err(|e| unavailable(&what(), e))?;
        loop {
            let next = tokio::time::timeout(timeout, messages.next())
                .await
                .map_err(|_| Error::Unavailable(format!("{}: no message within {timeout:?}", what())))?;
            let Some(msg) = next else {
                return Err(Error::Unavailable(format!("{}: the stream ended early", what())));
            };
            let msg = msg.map_err(|e| unavailable(&what(), e))?;
            let seq = msg.info().map_err(|e| unavailable(&what(), e))?.stream_sequence;
            if seq > to {
                return Ok(());
            }
            f(seq, &msg.payload)?;
            if seq == to {
                return Ok(());
            }
        }
    }
}

/// Deletes a stream (all its replicas, their files and the Raft log that
/// carried its messages); `false` when it did not exist.
///
/// # Errors
/// [`Error::Unavailable`] when JetStream does not answer or refuses.
pub(crate) async fn delete_stream(js: &Context, name: &str) -> Result<bool> {
    match js.delete_stream(name).await {
        Ok(s) => Ok(s.success),
        Err(e) if e.to_string().contains("not found") => Ok(false),
        Err(e) => Err(unavailable(&format!("deleting stream {name}"), e)),
    }
}

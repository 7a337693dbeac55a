//! `Idempotency-Key` for REST writes: the answer to the first request with
//! a key is kept, and a retry with the same key and the same request
//! (method, path, query and body, compared by SHA-256) gets it again
//! without the write running twice.
//!
//! - A key still in flight answers 409 `conflict` (retry after it ends).
//! - A key reused for a different request answers 422 `invalid_input`.
//!   Requests compare by their arguments (JSON with sorted keys), so a
//!   retry that spaces or orders its JSON differently is the same request.
//! - Only successes are kept. An error answer (a refused request wrote
//!   nothing; a 503 may be retried) releases the key: the corrected or
//!   retried request runs under it.
//! - Keys are kept in memory for [`DEFAULT_TTL`], at most
//!   [`DEFAULT_CAPACITY`] of them (the oldest go first), and not across a
//!   restart of the server: a retry after a restart runs again.

use std::collections::{HashMap, VecDeque};
use std::sync::Arc;
use std::time::{Duration, Instant};

use bytes::Bytes;
use hyper::StatusCode;
use parking_lot::Mutex;
use sha2::{Digest, Sha256};

use super::Outcome;
use mnemon_api::{ApiError, ErrorCode};

/// Longest key: 255 characters, the limit common HTTP APIs set.
pub const MAX_KEY_LEN: usize = 255;
/// How long an answer is kept: 24 hours, the retry window commonly offered.
pub const DEFAULT_TTL: Duration = Duration::from_secs(24 * 3600);
/// Most keys kept: 10,000 answers (each at most the largest response).
pub const DEFAULT_CAPACITY: usize = 10_000;

/// A kept answer.
#[derive(Clone, Debug)]
pub(crate) struct Stored {
    pub(crate) status: StatusCode,
    pub(crate) body: Bytes,
}

enum State {
    InFlight,
    Done(Stored, Instant),
}

struct Entry {
    fingerprint: [u8; 32],
    state: State,
}

#[derive(Default)]
struct Table {
    entries: HashMap<String, Entry>,
    /// Keys in the order they were first seen (for eviction).
    order: VecDeque<String>,
}

/// The kept answers of one server.
pub(crate) struct Idempotency {
    table: Arc<Mutex<Table>>,
    capacity: usize,
    ttl: Duration,
}

/// What to do with a request carrying a key.
pub(crate) enum Begin {
    /// Answer with the kept answer.
    Replay(Stored),
    /// Refuse: in flight (`conflict`) or reused for another request.
    Refused(ApiError),
    /// Run it; finish the slot with its outcome.
    Run(Slot),
}

/// A key being run: [`Slot::finish`] keeps the answer; dropped unfinished,
/// the key is released.
pub(crate) struct Slot {
    table: Arc<Mutex<Table>>,
    key: Option<String>,
}

/// The fingerprint of a request: SHA-256 over its route and its assembled
/// arguments (path parameters, query or body) as JSON with sorted keys.
pub(crate) fn fingerprint(operation_id: &str, args: &serde_json::Value) -> [u8; 32] {
    let mut h = Sha256::new();
    h.update((operation_id.len() as u64).to_le_bytes());
    h.update(operation_id.as_bytes());
    // serde_json's maps are ordered by key (no `preserve_order`).
    h.update(args.to_string().as_bytes());
    h.finalize().into()
}

impl Idempotency {
    pub(crate) fn new(capacity: usize, ttl: Duration) -> Idempotency {
        Idempotency { table: Arc::new(Mutex::new(Table::default())), capacity: capacity.max(1), ttl }
    }

    /// Looks `key` up for a request with `fingerprint`.
    pub(crate) fn begin(&self, key: &str, fingerprint: [u8; 32]) -> Begin {
        let mut t = self.table.lock();
        self.expire(&mut t);
        if let Some(e) = t.entries.get(key) {
            if e.fingerprint != fingerprint {
                return Begin::Refused(ApiError::invalid(
                    "Idempotency-Key",
                    "was used for a different request; use a new key for a new request",
                ));
            }
            return match &e.state {
                State::InFlight => Begin::Refused(ApiError {
                    code: ErrorCode::Conflict,
                    message: "a request with this Idempotency-Key is still running; retry when it has answered".into(),
                    field: Some("Idempotency-Key".into()),
                }),
                State::Done(stored, _) => Begin::Replay(stored.clone()),
            };
        }
        while t.entries.len() >= self.capacity {
            let Some(old) = t.order.pop_front() else { break };
            if matches!(t.entries.get(&old), Some(Entry { state: State::InFlight, .. })) {
                // Never evict a running key; keep its place.
                t.order.push_back(old);
                if t.order.iter().all(|k| matches!(t.entries.get(k), Some(Entry { state: State::InFlight, .. }))) {
                    break;
                }
                continue;
            }
            t.entries.remove(&old);
        }
        t.entries.insert(key.to_string(), Entry { fingerprint, state: State::InFlight });
        t.order.push_back(key.to_string());
        Begin::Run(Slot { table: self.table.clone(), key: Some(key.to_string()) })
    }

    /// Drops answers older than the TTL.
    fn expire(&self, t: &mut Table) {
        let now = Instant::now();
        while let Some(front) = t.order.front() {
            match t.entries.get(front) {
                Some(Entry { state: State::Done(_, at), .. }) if now.duration_since(*at) > self.ttl => {
                    let k = t.order.pop_front().unwrap_or_default();
                    t.entries.remove(&k);
                }
                None => {
                    t.order.pop_front();
                }
                _ => break,
            }
        }
    }
}

impl Slot {
    /// Keeps `out` as the key's answer when it is a success; an error
    /// (which wrote nothing, or may be retried) releases the key, so the
    /// request may be corrected or retried under it.
    pub(crate) fn finish(mut self, out: &Outcome) {
        let Some(key) = self.key.take() else { return };
        let mut t = self.table.lock();
        if !out.status.is_success() || out.code.is_some() {
            t.entries.remove(&key);
            t.order.retain(|k| *k != key);
            return;
        }
        if let Some(e) = t.entries.get_mut(&key) {
            e.state = State::Done(Stored { status: out.status, body: out.body.clone() }, Instant::now());
        }
    }
}

impl Drop for Slot {
    fn drop(&mut self) {
        if let Some(key) = self.key.take() {
            let mut t = self.table.lock();
            t.entries.remove(&key);
            t.order.retain(|k| *k != key);
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn outcome(status: StatusCode) -> Outcome {
        Outcome { status, body: Bytes::from_static(b"{\"id\":1}"), code: None }
    }

    #[test]
    fn replays_refuses_and_releases() {
        let idem = Idempotency::new(2, DEFAULT_TTL);
        let fp = fingerprint("remember", &serde_json::json!({"namespace": "u", "content": "x"}));
        let Begin::Run(slot) = idem.begin("k1", fp) else { panic!("first use runs") };
        assert!(matches!(idem.begin("k1", fp), Begin::Refused(e) if e.code == ErrorCode::Conflict));
        slot.finish(&outcome(StatusCode::CREATED));
        assert!(matches!(idem.begin("k1", fp), Begin::Replay(s) if s.status == StatusCode::CREATED));
        let other = fingerprint("remember", &serde_json::json!({"namespace": "u", "content": "y"}));
        assert!(matches!(idem.begin("k1", other), Begin::Refused(e) if e.code == ErrorCode::InvalidInput));
        // Errors are not kept.
        let Begin::Run(slot) = idem.begin("k2", fp) else { panic!() };
        slot.finish(&outcome(StatusCode::SERVICE_UNAVAILABLE));
        assert!(matches!(idem.begin("k2", fp), Begin::Run(_)));
        // A slot dropped unfinished releases its key (the Run above was dropped).
        assert!(matches!(idem.begin("k2", fp), Begin::Run(_)));
    }

    #[test]
    fn spacing_and_key_order_do_not_change_the_fingerprint() {
        let a: serde_json::Value = serde_json::from_str(r#"{"content":"x","kind":"fact"}"#).unwrap();
        let b: serde_json::Value = serde_json::from_str(r#"{ "kind": "fact",  "content": "x" }"#).unwrap();
        assert_eq!(fingerprint("remember", &a), fingerprint("remember", &b));
        assert_ne!(fingerprint("remember", &a), fingerprint("observe", &a));
    }

    #[test]
    fn capacity_evicts_the_oldest_answers() {
        let idem = Idempotency::new(2, DEFAULT_TTL);
        let fp = [0u8; 32];
        for k in ["a", "b", "c"] {
            let Begin::Run(slot) = idem.begin(k, fp) else { panic!() };
            slot.finish(&outcome(StatusCode::OK));
        }
        assert!(matches!(idem.begin("a", fp), Begin::Run(_)), "a was evicted");
        assert!(matches!(idem.begin("c", fp), Begin::Replay(_)));
    }

    #[test]
    fn answers_expire() {
        let idem = Idempotency::new(10, Duration::from_millis(1));
        let fp = [1u8; 32];
        let Begin::Run(slot) = idem.begin("a", fp) else { panic!() };
        slot.finish(&outcome(StatusCode::OK));
        std::thread::sleep(Duration::from_millis(5));
        assert!(matches!(idem.begin("a", fp), Begin::Run(_)));
    }
}

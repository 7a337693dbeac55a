//! Erasure across the cluster. A JetStream stream keeps every message it
//! was given in its files and in the Raft log of its replicas until that
//! log is compacted, so forgotten content cannot be removed from a stream
//! in place with any certainty. Instead, a cluster compaction of a
//! namespace (under its lease, with no group in flight):
//!
//! 1. compacts the owner's local copy (forgotten payloads become
//!    tombstones, verified by a scan of its directory);
//! 2. writes the compacted log into a new generation of the namespace's
//!    stream (a takeover marker, then every record with its vector);
//! 3. points the log directory at the new generation (revision-checked);
//! 4. deletes the old stream — its files and its Raft log on every NATS
//!    node;
//! 5. tells every daemon; each deletes its copy of the namespace if that
//!    copy follows an older generation (a daemon that is down does so when
//!    it starts).
//!
//! A crash before step 3 leaves the old generation in force (the new one is
//! deleted by the next attempt); after it, the next owner finishes step 4.

use std::sync::Arc;
use std::time::Instant;

use futures_util::StreamExt;
use serde::{Deserialize, Serialize};

use crate::names::token;
use crate::node::{ClusterNode, Held, NS_DIR};
use crate::replica::{Position, META_NAMESPACE, META_POSITION};
use crate::stream::{delete_stream, NsLog};
use crate::wire::{self, LogMessage};
use mnemon::crypt::{sealed_head, SEALED_VERSION};
use mnemon::replication::DataDir;
use mnemon::replication::{Group, Shared};
use mnemon::ErasureReceipt;
use mnemon::{event::decode_record, EventBody};
use mnemon::{storage::fnv1a64, storage::LogStore, storage::SledStore};
use mnemon::{Error, Result};
use mnemon::{MemoryId, Namespace, Seq};

/// Records per group when a log is written into a new generation.
const REWRITE_GROUP: usize = 1024;

/// Proof of a cluster compaction of one namespace.
#[derive(Clone, Debug, PartialEq, Serialize)]
pub struct ClusterErasure {
    /// The owner's local compaction and the scan of its data directory.
    pub local: ErasureReceipt,
    /// The stream now holding the namespace's log.
    pub stream: String,
    /// Its generation.
    pub generation: u64,
    /// Records written into it.
    pub records_rewritten: u64,
    /// The stream it replaced.
    pub previous_stream: String,
    /// True when JetStream confirmed deleting the replaced stream (its
    /// files and Raft log on every NATS node).
    pub previous_stream_deleted: bool,
    /// Every daemon that answered the erasure notice.
    pub daemons: Vec<ScrubReport>,
    /// Registered daemons that did not answer (each deletes its stale copy
    /// when it next starts).
    pub daemons_silent: Vec<String>,
    /// Milliseconds for the whole operation.
    pub millis: u64,
}

/// A daemon's answer to an erasure notice.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub struct ScrubReport {
    /// The daemon.
    pub daemon: String,
    /// True when it had a copy of the namespace.
    pub had_copy: bool,
    /// True when it deleted that copy (it followed an older generation).
    pub removed: bool,
    /// What went wrong, if anything.
    pub error: Option<String>,
}

#[derive(Serialize, Deserialize)]
struct ScrubNotice {
    ns: String,
    stream: String,
    from: String,
}

impl ClusterNode {
    /// Compacts `ns` across the cluster (see the module docs): afterwards
    /// no file of this daemon, of any daemon that answered, or of any NATS
    /// node holds the payload of a memory or observation forgotten before
    /// the call. Writes to `ns` wait meanwhile.
    ///
    /// # Errors
    /// [`Error::Fenced`] when this daemon does not hold `ns`;
    /// [`Error::Unavailable`] when NATS does not answer (the old generation
    /// then stays the log of record; the local copy is compacted all the
    /// same); errors of [`mnemon::Engine::compact`].
    pub fn compact(&self, ns: &Namespace) -> Result<ClusterErasure> {
        let started = Instant::now();
        let held = self.inner.held.lock().get(ns).cloned().ok_or_else(|| Error::Fenced {
            namespace: ns.to_string(),
            reason: format!("{} does not serve it", self.daemon_id()),
        })?;
        let node = self.clone();
        let ns2 = ns.clone();
        let h2 = held.clone();
        let (local, rewrite) = held.engine.compact_then(move |shared, _| node.rewrite(&ns2, &h2, shared))?;
        let (daemons, daemons_silent) = self.notify(ns, &rewrite.stream)?;
        Ok(ClusterErasure {
            local,
            stream: rewrite.stream,
            generation: rewrite.generation,
            records_rewritten: rewrite.records,
            previous_stream: rewrite.previous,
            previous_stream_deleted: rewrite.previous_deleted,
            daemons,
            daemons_silent,
            millis: u64::try_from(started.elapsed().as_millis()).unwrap_or(u64::MAX),
        })
    }

    /// Proves the shred of `ns` (a `forget --all` of an encrypted
    /// namespace) across the cluster: [`mnemon::Engine::verify_shred`] on
    /// this daemon's copy and the `backups` and `exports` named, plus every
    /// record of the namespace's stream (source `nats:STREAM`), each tried
    /// against every key the namespace still has. The keys are the key
    /// bucket's: the shred replaced the wrapped key there, so the other
    /// daemons' copies and the stream on every NATS node open with no key
    /// left in the cluster.
    ///
    /// # Errors
    /// [`Error::Fenced`] when this daemon does not serve `ns`;
    /// [`Error::InvalidInput`] (field `namespace`) for a plain namespace or
    /// one never shredded; [`Error::Unavailable`] when the stream cannot be
    /// read; those of [`mnemon::Engine::verify_shred`].
    pub fn verify_shred(
        &self,
        ns: &Namespace,
        backups: &[std::path::PathBuf],
        exports: &[std::path::PathBuf],
    ) -> Result<mnemon::crypt::ShredReport> {
        let held = self.inner.held.lock().get(ns).cloned().ok_or_else(|| Error::Fenced {
            namespace: ns.to_string(),
            reason: format!("{} does not serve it", self.daemon_id()),
        })?;
        let mut report = held.engine.verify_shred(ns, backups, exports)?;
        let (log, _) = held.sink.position();
        let conn = &self.inner.conn;
        let last = conn.run("reading the stream", log.last_seq())?;
        let mut records = Vec::new();
        conn.block_on(log.read(1, last, conn.timeout * 4, |seq, payload| {
            match wire::decode(seq, payload)? {
                LogMessage::Group(p) | LogMessage::SealedGroup { part: p, .. } => {
                    records.extend((p.first..).zip(p.records));
                }
                LogMessage::Takeover { .. } => {}
            }
            Ok(())
        }))?;
        let source = std::path::PathBuf::from(format!("nats:{}", log.name));
        let check = held.engine.check_shredded_records(ns, source, records)?;
        report.verified &= check.opened == 0 && check.plain == 0;
        report.checks.push(check);
        Ok(report)
    }

    /// Steps 2–4, on the writer thread after the local compaction.
    fn rewrite(&self, ns: &Namespace, held: &Arc<Held>, shared: &Shared) -> Result<Rewrite> {
        let inner = &self.inner;
        let conn = &inner.conn;
        let key = token(ns);
        let fenced = |why: String| Error::Fenced { namespace: ns.to_string(), reason: why };
        let entry = conn.run("reading the log directory", inner.directory.get(&key))?;
        let (old_log, _) = held.sink.position();
        if old_log.generation != entry.generation {
            return Err(fenced(format!("the log directory names generation {}", entry.generation)));
        }
        let generation = entry.generation + 1;
        let new_name = inner.names.stream(&key, generation);
        // A leftover of an attempt that did not switch: start it afresh.
        conn.run("deleting a leftover stream", delete_stream(&conn.js, &new_name))?;
        let log = Arc::new(conn.run(
            "creating the new stream",
            NsLog::open(&conn.js, &inner.names, ns.as_str(), &key, generation, inner.cfg.replicas, conn.timeout),
        )?);
        let written = self.write_generation(&log, held, shared);
        let (last, records) = match written {
            Ok(w) => w,
            Err(e) => {
                let _ = conn.run("deleting the unfinished stream", delete_stream(&conn.js, &new_name));
                return Err(e);
            }
        };
        held.lease.check().map_err(fenced)?;
        conn.run("switching the log directory", inner.directory.set(ns.as_str(), &key, generation, entry.revision))?;
        held.sink.switch(log.clone(), last);
        let store = shared.store();
        let event_seq = store.last_seq()?.unwrap_or(0);
        store.meta_put(META_POSITION, &Position { stream: log.name.clone(), stream_seq: last, event_seq }.encode())?;
        store.flush()?;
        let previous_deleted =
            conn.run("deleting the replaced stream", delete_stream(&conn.js, &old_log.name)).unwrap_or(false);
        Ok(Rewrite { stream: log.name.clone(), generation, records, previous: old_log.name.clone(), previous_deleted })
    }

    /// Writes the marker and every local record (with surviving vectors)
    /// into the new stream; returns its last sequence and the records.
    fn write_generation(&self, log: &NsLog, held: &Held, shared: &Shared) -> Result<(u64, u64)> {
        let inner = &self.inner;
        let conn = &inner.conn;
        let marker = wire::encode(&LogMessage::Takeover {
            daemon: inner.me.daemon.clone(),
            instance: inner.me.instance,
            epoch: held.lease.revision(),
        })?;
        let mut last = conn.run("writing the takeover marker", log.append(marker, 0))?;
        let store = shared.store();
        let model = shared.model_id().to_string();
        let model_hash = fnv1a64(model.as_bytes());
        // An encrypted namespace's records and vectors go as stored:
        // sealed, under keys in the cluster's key bucket.
        let sealed = store.sealed();
        let mut vectors: std::collections::HashMap<u64, (u64, Vec<f32>)> = std::collections::HashMap::new();
        if sealed.is_none() {
            for e in store.vector_entries() {
                let e = e?;
                if e.model_hash == model_hash {
                    vectors.insert(e.id.0, (e.cached.content_hash, e.cached.vector));
                }
            }
        }
        let mut records: Vec<(Seq, Vec<u8>)> = Vec::with_capacity(REWRITE_GROUP);
        let mut total = 0u64;
        let flush = |records: &mut Vec<(Seq, Vec<u8>)>, last: &mut u64| -> Result<()> {
            if records.is_empty() {
                return Ok(());
            }
            let mut vs: Vec<(MemoryId, u64, Vec<f32>)> = Vec::new();
            let mut sealed_vs: Vec<(MemoryId, Vec<u8>)> = Vec::new();
            for (seq, bytes) in records.iter() {
                if let Some(s) = sealed {
                    let extracted = bytes.first() == Some(&SEALED_VERSION) && sealed_head(*seq, bytes)?.kind == 1;
                    if let Some(v) = s.sealed_vector(&model, MemoryId(*seq))?.filter(|_| extracted) {
                        sealed_vs.push((MemoryId(*seq), v));
                    }
                } else if let Some((h, v)) = vectors.get(seq) {
                    if matches!(decode_record(*seq, bytes)?.body, EventBody::Extracted(_)) {
                        vs.push((MemoryId(*seq), *h, v.clone()));
                    }
                }
            }
            let group = Group {
                records,
                vectors: &vs,
                model_id: &model,
                sealed_vectors: sealed.is_some().then_some(sealed_vs.as_slice()),
            };
            for part in wire::split(&group, inner.max_message)? {
                held.lease.check().map_err(|why| Error::Fenced { namespace: log.ns.clone(), reason: why })?;
                *last = conn.run("rewriting the log", log.append(part, *last))?;
            }
            records.clear();
            Ok(())
        };
        for r in store.scan_raw(1, u64::MAX) {
            records.push(r?);
            total += 1;
            if records.len() >= REWRITE_GROUP {
                flush(&mut records, &mut last)?;
            }
        }
        flush(&mut records, &mut last)?;
        Ok((last, total))
    }

    /// Step 5: sends the notice and collects answers from every registered
    /// daemon but this one (waiting at most a few request timeouts).
    fn notify(&self, ns: &Namespace, stream: &str) -> Result<(Vec<ScrubReport>, Vec<String>)> {
        let inner = &self.inner;
        let conn = &inner.conn;
        let mut expected: Vec<String> =
            conn.run("listing daemons", inner.daemons.keys())?.into_iter().filter(|d| *d != inner.me.daemon).collect();
        expected.sort();
        let notice = serde_json::to_vec(&ScrubNotice {
            ns: ns.to_string(),
            stream: stream.to_string(),
            from: inner.me.daemon.clone(),
        })
        .map_err(|e| Error::Storage(mnemon::Failure::with_source(e.to_string(), e)))?;
        let wait = inner.cfg.timeout * 2;
        let client = conn.client.clone();
        let subject = inner.names.scrub();
        let want = expected.len();
        let me = inner.me.daemon.clone();
        let replies: Vec<ScrubReport> = conn.block_on(async move {
            let inbox = client.new_inbox();
            let Ok(mut sub) = client.subscribe(inbox.clone()).await else { return Vec::new() };
            if client.publish_with_reply(subject, inbox, notice.into()).await.is_err() {
                return Vec::new();
            }
            let mut out = Vec::new();
            let deadline = tokio::time::Instant::now() + wait;
            while out.len() < want {
                match tokio::time::timeout_at(deadline, sub.next()).await {
                    Ok(Some(m)) => {
                        // This daemon hears its own notice too; only the
                        // others' answers count.
                        match serde_json::from_slice::<ScrubReport>(&m.payload) {
                            Ok(r) if r.daemon != me => out.push(r),
                            _ => {}
                        }
                    }
                    _ => break,
                }
            }
            out
        });
        let mut replies = replies;
        replies.sort_by(|a, b| a.daemon.cmp(&b.daemon));
        let silent = expected.into_iter().filter(|d| !replies.iter().any(|r| &r.daemon == d)).collect();
        Ok((replies, silent))
    }

    /// Answers an erasure notice: deletes this daemon's copy of the
    /// namespace if it follows another stream than the one named.
    pub(crate) fn scrub(&self, payload: &[u8]) -> Vec<u8> {
        let me = self.daemon_id().to_string();
        let report = match serde_json::from_slice::<ScrubNotice>(payload) {
            Err(e) => ScrubReport { daemon: me, had_copy: false, removed: false, error: Some(e.to_string()) },
            Ok(n) if n.from == me => ScrubReport { daemon: me, had_copy: true, removed: false, error: None },
            Ok(n) => match Namespace::new(n.ns) {
                Err(e) => ScrubReport { daemon: me, had_copy: false, removed: false, error: Some(e.to_string()) },
                Ok(ns) => {
                    let turn = self.turn(&ns);
                    let _g = turn.lock();
                    match self.scrub_copy(&ns, |stream| stream != n.stream) {
                        Ok((had_copy, removed)) => ScrubReport { daemon: me, had_copy, removed, error: None },
                        Err(e) => {
                            ScrubReport { daemon: me, had_copy: true, removed: false, error: Some(e.to_string()) }
                        }
                    }
                }
            },
        };
        serde_json::to_vec(&report).unwrap_or_default()
    }

    /// Deletes the local copy of `ns` if it is not open here and
    /// `stale(stream it follows)`; returns (had a copy, removed it).
    fn scrub_copy(&self, ns: &Namespace, stale: impl Fn(&str) -> bool) -> Result<(bool, bool)> {
        if self.inner.held.lock().contains_key(ns) {
            return Ok((true, false));
        }
        let dir = self.copy_dir(&token(ns));
        if !dir.exists() {
            return Ok((false, false));
        }
        let stream = copy_stream(&dir)?;
        if stream.as_deref().is_some_and(|s| !stale(s)) {
            return Ok((true, false));
        }
        std::fs::remove_dir_all(&dir)?;
        Ok((true, true))
    }

    /// Answers a shred notice (payload: the namespace token): destroys, in
    /// this daemon's idle copy of the namespace, every data key the key
    /// bucket holds shredded. A copy this daemon serves took the shred
    /// itself. Answers `ok` or the error's text.
    pub(crate) fn take_shreds(&self, payload: &[u8]) -> Vec<u8> {
        let done = std::str::from_utf8(payload)
            .map_err(|e| Error::invalid("token", e.to_string()))
            .and_then(|t| self.shred_copy(t));
        match done {
            Ok(_) => b"ok".to_vec(),
            Err(e) => e.to_string().into_bytes(),
        }
    }

    /// Applies the key bucket's shreds to the idle copy with token `key`;
    /// whether its keyring changed.
    fn shred_copy(&self, key: &str) -> Result<bool> {
        let dir = self.copy_dir(key);
        let ring = dir.join(mnemon::crypt::KEYRING_FILE);
        if !ring.exists() || self.inner.held.lock().values().any(|h| h.token == key) {
            return Ok(false);
        }
        // An engine opening the copy (a take of the namespace here) holds
        // its lock for a moment; that engine takes the shred itself.
        let Some(ns) = crate::take::retry_locked(self.inner.cfg.timeout, || copy_namespace(&dir))? else {
            return Ok(false);
        };
        let turn = self.turn(&ns);
        let _g = turn.lock();
        if self.inner.held.lock().contains_key(&ns) {
            return Ok(false);
        }
        let shredded = self.inner.conn.run("reading a namespace's keys", self.inner.keys.shredded(key))?;
        mnemon::crypt::shred_in_keyring(&ring, &shredded)
    }

    /// At start: deletes every local copy that follows an older generation
    /// than the log directory names (compacted while this daemon was away),
    /// and destroys in every encrypted copy the data keys shredded while it
    /// was away.
    pub(crate) fn scrub_stale_copies(&self) -> Result<()> {
        let root = self.inner.cfg.data_dir.join(NS_DIR);
        for entry in std::fs::read_dir(&root)? {
            let path = entry?.path();
            let Some(ns) = copy_namespace(&path)? else { continue };
            let key = token(&ns);
            self.shred_copy(&key)?;
            let current = self.inner.conn.run("reading the log directory", self.inner.directory.get(&key))?;
            let name = self.inner.names.stream(&key, current.generation);
            self.scrub_copy(&ns, |stream| stream != name)?;
        }
        Ok(())
    }

    /// Writes this daemon's registration (renewed with its leases).
    pub(crate) fn register(&self) -> Result<()> {
        let inner = &self.inner;
        inner.conn.run("registering the daemon", inner.daemons.put(&inner.me.daemon, &inner.me)).map(|_| ())
    }
}

struct Rewrite {
    stream: String,
    generation: u64,
    records: u64,
    previous: String,
    previous_deleted: bool,
}

/// The stream a closed local copy follows (`None`: never caught up).
fn copy_stream(dir: &std::path::Path) -> Result<Option<String>> {
    let d = DataDir::open(dir)?;
    let store = SledStore::open(&d.current_path(), 1 << 20)?;
    Ok(store.meta_get(META_POSITION)?.and_then(|b| Position::decode(&b)).map(|p| p.stream))
}

/// The namespace of a closed local copy (`None`: not a copy).
fn copy_namespace(dir: &std::path::Path) -> Result<Option<Namespace>> {
    if !dir.join("CURRENT").exists() {
        return Ok(None);
    }
    let d = DataDir::open(dir)?;
    let store = SledStore::open(&d.current_path(), 1 << 20)?;
    let ns = store.meta_get(META_NAMESPACE)?.and_then(|b| String::from_utf8(b).ok());
    Ok(ns.and_then(|s| Namespace::new(s).ok()))
}

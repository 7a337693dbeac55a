//! Integrity check of an open store: every record's checksum and decoding,
//! a gap-free log, and projections equal to a fresh replay.

use std::sync::Arc;

use crate::embed::Embedder;
use crate::engine::open::{load_vectors, replay_into, OpenReport};
use crate::engine::Engine;
use crate::error::{Error, Result};
use crate::projection::State;
use crate::writer::Command;

/// What [`Engine::check`] found.
#[derive(Clone, Debug, Default, PartialEq, Eq, serde::Serialize, serde::Deserialize, schemars::JsonSchema)]
pub struct CheckReport {
    /// Records read, checksummed and decoded (all of them).
    pub records: u64,
    /// Bytes of encoded records read.
    pub record_bytes: u64,
    /// The highest `Seq`; equals `records` in a gap-free log.
    pub last_seq: u64,
    /// Namespaces in the replayed projections.
    pub namespaces: usize,
    /// Memory versions (active and superseded) in the replayed projections.
    pub memories: usize,
    /// Observations in the replayed projections.
    pub observations: usize,
    /// Memory vectors that the replay took from the vector cache.
    pub vectors_cached: usize,
    /// Memory vectors that the replay had to compute (cache missing or stale).
    pub vectors_embedded: usize,
    /// Digest of the live projections ([`Engine::digest`]).
    pub digest: String,
    /// Digest of projections rebuilt from the log alone.
    pub replay_digest: String,
    /// True when the two digests agree and every namespace's lexical index
    /// holds the same documents live and replayed.
    pub consistent: bool,
    /// When the store was restored from an export whose digest differed
    /// from the restored store's: what the `RESTORE-MISMATCH` file in the
    /// data directory says (both digests). `None` otherwise.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub restore_mismatch: Option<String>,
    /// When the store was written by `backup` or `restore`: what its
    /// completion record (`COPY`) names and what was compared with it, as
    /// a sentence. `None` for a store that no copy wrote.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub copy: Option<String>,
}

impl Engine {
    /// Verifies the store: reads every record of the log, checks its CRC and
    /// decodes it, checks that `Seq` runs from 1 without gaps, rebuilds the
    /// projections from the log into a fresh state and compares its digest
    /// with the live one ([`CheckReport::consistent`]). Runs on the writer
    /// thread, so writes wait until it is done; reads keep working. Reads
    /// only: missing cached vectors are computed but not stored.
    ///
    /// ```
    /// # fn main() -> mnemon::Result<()> {
    /// let dir = tempfile::tempdir()?;
    /// let engine = mnemon::Engine::open(dir.path())?;
    /// let ns = mnemon::Namespace::new("u1")?;
    /// engine.remember(&ns, mnemon::NewMemory::new("Alice prefers tea"))?;
    /// let report = engine.check()?;
    /// assert!(report.consistent);
    /// assert_eq!(report.records, report.last_seq);
    /// # Ok(()) }
    /// ```
    ///
    /// A store written by `backup` or `restore` carries a completion record
    /// (`COPY`): the log must hold at least the records it names, and while
    /// the copy's generation is live, those records must have its digest
    /// ([`CheckReport::copy`]).
    ///
    /// # Errors
    /// [`Error::Corrupted`] naming the first record that fails its checksum,
    /// does not decode, or breaks the `Seq` sequence;
    /// [`Error::IncompleteCopy`] when the log holds fewer records than the
    /// completion record names, or others; [`Error::Poisoned`],
    /// [`Error::Closed`]; storage errors.
    pub fn check(&self) -> Result<CheckReport> {
        let (tx, rx) = crossbeam_channel::bounded(1);
        let embedder = self.embedder().clone();
        let cfg = self.config().clone();
        self.send(Command::Exclusive {
            f: Box::new(move |ctx| {
                let _ = tx.send(run(ctx.shared, embedder, &cfg));
            }),
        })?;
        match rx.recv() {
            Ok(r) => r,
            Err(_) => Err(self.shared().poison_message().map_or(Error::Closed, Error::Poisoned)),
        }
    }
}

fn run(shared: &crate::writer::Shared, embedder: Arc<dyn Embedder>, cfg: &crate::Config) -> Result<CheckReport> {
    let store = shared.store();
    let mut report = CheckReport::default();
    // A copy's completion record vouches for the records it wrote: their
    // digest is taken during the same scan.
    let copy = crate::log::completion_record(&cfg.path);
    let mut log_digest = crate::log::LogDigest::default();
    // As stored: a copy's digest covers sealed records as sealed.
    for r in store.scan_raw(1, u64::MAX) {
        let (seq, bytes) = r?;
        report.record_bytes += bytes.len() as u64;
        if copy.as_ref().is_some_and(|c| seq <= c.last_seq) {
            log_digest.add(seq, &bytes);
        }
    }
    let mut fresh = State::new(embedder.dim(), cfg.hnsw.clone());
    let mut open = OpenReport::default();
    replay_into(store.as_ref(), &mut fresh, &mut open)?;
    load_vectors(store.as_ref(), embedder.as_ref(), &mut fresh, &mut open, cfg, false, &Default::default())?;
    fresh.visible = fresh.last_seq;
    report.records = open.events_replayed;
    report.last_seq = fresh.last_seq;
    report.namespaces = fresh.namespaces.len();
    report.memories = fresh.namespaces.values().map(|n| n.memories.len()).sum();
    report.observations = fresh.namespaces.values().map(|n| n.observations.len()).sum();
    report.vectors_cached = open.vectors_cached;
    report.vectors_embedded = open.vectors_embedded;
    if let Some(c) = &copy {
        crate::log::check_extent(&cfg.path, c, fresh.last_seq)?;
        let generation = crate::log::live_generation(&cfg.path);
        report.copy = Some(crate::log::check_digest(&cfg.path, c, generation, log_digest.finish())?);
    }
    report.replay_digest = fresh.digest();
    let live = shared.state.read();
    report.digest = live.digest();
    // The digest counts each lexical index's documents; which documents
    // they are is compared here (an index that kept a forgotten memory and
    // lost a live one has the right count).
    report.consistent = report.digest == report.replay_digest && same_lexical_documents(&live, &fresh);
    report.restore_mismatch =
        std::fs::read_to_string(cfg.path.join(crate::log::RESTORE_MISMATCH)).ok().map(|t| t.trim().to_string());
    Ok(report)
}

/// Whether every namespace's lexical index holds the same document ids in
/// `a` and in `b`.
fn same_lexical_documents(a: &State, b: &State) -> bool {
    let ids = |s: &State, ns| {
        let mut v: Vec<u64> = s.namespaces.get(ns).map(|n| n.lexical.ids().collect()).unwrap_or_default();
        v.sort_unstable();
        v
    };
    a.namespaces.keys().chain(b.namespaces.keys()).all(|ns| ids(a, ns) == ids(b, ns))
}

#[cfg(test)]
mod tests {
    use crate::{Engine, Namespace, NewMemory};

    /// An index with the right number of documents but a wrong one (a
    /// forgotten memory kept, a live one lost) is found: the digest alone
    /// counts them.
    #[test]
    fn a_lexical_index_with_the_wrong_documents_is_inconsistent() -> crate::Result<()> {
        let dir = tempfile::tempdir()?;
        let engine = Engine::open(dir.path())?;
        let ns = Namespace::new("u1")?;
        let a = engine.remember(&ns, NewMemory::new("Plays the cello on Sundays"))?;
        engine.remember(&ns, NewMemory::new("Lives in Porto near the river"))?;
        assert!(engine.check()?.consistent);
        {
            let mut state = engine.shared().state.write();
            let lexical = &mut state.namespaces.get_mut(&ns).expect("namespace").lexical;
            lexical.remove(a.id.0);
            lexical.insert(9_999, "Plays the cello on Sundays");
        }
        let report = engine.check()?;
        assert_eq!(report.digest, report.replay_digest);
        assert!(!report.consistent);
        engine.close()
    }
}

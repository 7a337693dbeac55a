//! Compaction and erasure verification on an open engine.

use chrono::Utc;

use crate::engine::Engine;
use crate::erase::{stored, verify_erasure, CompactionReceipt, ErasurePatterns, ErasureReceipt, MIN_TEXT_BYTES};
use crate::error::{Error, Result};
use crate::writer::compact::{self, surviving_strings};
use crate::writer::Command;

impl Engine {
    /// Makes forgetting physical: rewrites the store into a new generation
    /// without the payloads of forgotten memories and observations (each
    /// becomes a content-free tombstone under the same `Seq`) and without
    /// their cached vectors, switches to it atomically, deletes the old
    /// generation, then scans every file under the data directory for the
    /// erased content and returns the receipt.
    ///
    /// Writes issued meanwhile wait until it finishes; reads keep working.
    /// A crash at any step leaves the old or the new generation usable, and
    /// the next open finishes the compaction (its receipt is then in
    /// [`crate::OpenReport::erasure`]); `docs/FORMAT.md` gives the steps.
    ///
    /// The receipt covers the files under the data directory only: blocks
    /// an SSD or file system keeps after deletion, snapshots, backups and
    /// copies sent elsewhere (such as to an LLM provider) are out of reach.
    ///
    /// # Errors
    /// [`Error::Poisoned`] if a write failed earlier (or the switch could not
    /// be made durable); [`Error::Closed`]; [`Error::Io`] /
    /// [`Error::Storage`] when the disk refuses; [`Error::Corrupted`] for a
    /// record that does not decode.
    ///
    /// ```
    /// # fn main() -> mnemon::Result<()> {
    /// use mnemon::{Engine, ForgetRequest, Namespace, NewMemory};
    /// let dir = tempfile::tempdir()?;
    /// let engine = Engine::open(dir.path())?;
    /// let ns = Namespace::new("u1")?;
    /// let r = engine.remember(&ns, NewMemory::new("My locker code is 4711-2093-8812"))?;
    /// engine.forget(&ns, ForgetRequest::Memory(r.id), "user request")?;
    /// let receipt = engine.compact()?;
    /// assert!(receipt.verified);
    /// assert_eq!(receipt.forgotten_memories, vec![r.id]);
    /// # Ok(()) }
    /// ```
    pub fn compact(&self) -> Result<ErasureReceipt> {
        self.compact_then(|_, _| Ok(())).map(|(receipt, ())| receipt)
    }

    /// The receipts of every compaction this store went through, newest
    /// first: when, generations, events copied, payloads and vectors
    /// erased, bytes before and after, and the verification scan's summary
    /// (counts and digests only — no erased text, vector or id). Each is
    /// written with the generation its compaction switched to and carried
    /// into every later one, so they survive reopening, later compactions
    /// and [`Engine::backup`]; a store rebuilt by
    /// [`crate::portability::restore`] starts without any.
    ///
    /// A receipt without `scan` belongs to a compaction whose process
    /// stopped after the switch and before its scan ended (the next open
    /// compacted again and left its own receipt).
    ///
    /// # Errors
    /// [`Error::Storage`] from the backend; [`Error::Corrupted`] (seq 0)
    /// for a stored receipt that does not decode;
    /// [`Error::IncompatibleFormat`] for one written by a newer layout.
    ///
    /// ```
    /// # fn main() -> mnemon::Result<()> {
    /// use mnemon::{Engine, ForgetRequest, Namespace, NewMemory};
    /// let dir = tempfile::tempdir()?;
    /// let engine = Engine::open(dir.path())?;
    /// let ns = Namespace::new("u1")?;
    /// let r = engine.remember(&ns, NewMemory::new("My locker code is 4711-2093-8812"))?;
    /// engine.forget(&ns, ForgetRequest::Memory(r.id), "user request")?;
    /// engine.compact()?;
    /// let receipts = engine.compaction_receipts()?;
    /// assert_eq!((receipts[0].generation, receipts[0].memories_erased), (2, 1));
    /// assert!(receipts[0].scan.as_ref().is_some_and(|s| s.verified));
    /// # Ok(()) }
    /// ```
    pub fn compaction_receipts(&self) -> Result<Vec<CompactionReceipt>> {
        let store = self.shared().store();
        stored::list(store.as_ref())
    }

    /// Compacts like [`Engine::compact`], then runs `then` on the writer
    /// thread before any other write: a cluster rewrites the namespace's
    /// replicated log from the compacted local log there, with no group in
    /// flight.
    ///
    /// # Errors
    /// As [`Engine::compact`]; whatever `then` returns.
    pub fn compact_then<T: Send + 'static>(
        &self,
        then: impl FnOnce(&crate::writer::Shared, &ErasureReceipt) -> Result<T> + Send + 'static,
    ) -> Result<(ErasureReceipt, T)> {
        if let Some(msg) = self.shared().poison_message() {
            return Err(Error::Poisoned(msg));
        }
        if let Some(e) = self.shared().read_only_error() {
            return Err(e);
        }
        let (tx, rx) = crossbeam_channel::bounded(1);
        let dir = self.inner.dir.clone();
        let cache_bytes = self.inner.cfg.cache_bytes;
        self.send(Command::Exclusive {
            f: Box::new(move |ctx| {
                let r = compact::run(ctx.shared, &dir, cache_bytes).and_then(|receipt| {
                    let t = then(ctx.shared, &receipt)?;
                    Ok((receipt, t))
                });
                let _ = tx.send(r);
            }),
        })?;
        match rx.recv() {
            Ok(r) => r,
            Err(_) => Err(self.shared().poison_message().map_or(Error::Closed, Error::Poisoned)),
        }
    }

    /// Searches every file under the data directory for `texts` (each whole,
    /// and in 32-byte windows for texts longer than 32 bytes; windows that
    /// also occur in surviving content are not searched, whole texts always
    /// are). For auditors: `verified` is true when none was found. Works
    /// with the store open; writes are not held up.
    ///
    /// # Errors
    /// [`Error::InvalidInput`] for an empty list, a text shorter than 8
    /// bytes, or one of fewer than 4 distinct byte values (`1111111111`,
    /// `12121212`: too short or too repetitive to be evidence, so a clean
    /// scan would prove nothing); [`Error::Io`] when a file cannot be read.
    pub fn verify_erasure_text(&self, texts: &[&str]) -> Result<ErasureReceipt> {
        if texts.is_empty() {
            return Err(Error::invalid("texts", "name at least one text"));
        }
        let mut patterns = ErasurePatterns::new();
        for t in texts {
            if t.len() < MIN_TEXT_BYTES {
                return Err(Error::invalid("texts", format!("{} bytes; at least {MIN_TEXT_BYTES} needed", t.len())));
            }
            if !patterns.add_text(t) {
                return Err(Error::invalid(
                    "texts",
                    format!(
                        "a text of {} bytes with fewer than 4 distinct byte values carries too little information to \
                         search; name the erased text itself",
                        t.len()
                    ),
                ));
            }
        }
        let last_seq = {
            let state = self.shared().state.read();
            patterns.exclude_windows_found_in(surviving_strings(&state));
            state.visible
        };
        let (root, generation) = {
            let d = self.inner.dir.lock();
            (d.root().to_path_buf(), d.current_generation())
        };
        let mut scan = verify_erasure(&root, &patterns)?;
        crate::erase::scan_opened(self.shared().store().as_ref(), &patterns, &mut scan)?;
        Ok(ErasureReceipt {
            at: Utc::now(),
            generation,
            last_seq,
            forgotten_memories: Vec::new(),
            forgotten_observations: Vec::new(),
            compaction: None,
            patterns_excluded_shared: patterns.excluded_shared(),
            patterns_low_information: patterns.low_information(),
            texts_too_short: patterns.too_short(),
            verified: scan.is_clean(),
            scan,
        })
    }
}

//! Whole copies: `backup` and `restore` write a new store into a staging
//! directory beside their target, and rename it into place only after its
//! completion record is durable.
//!
//! The staging directory of target `PARENT/NAME` is
//! `PARENT/.NAME.mnemon-partial`. Its `COPY` file is written first and says
//! the copy is unfinished (and how many records it is to hold); the last
//! write replaces it with the completion record (records, last `Seq`,
//! generation, SHA-256 of the log, CRC-32 of the record; docs/FORMAT.md,
//! "Copies"). So a directory at the target is always whole, and one that
//! holds a `COPY` that is not a valid completion record never opens. A data
//! directory without `COPY` is an ordinary store (every store that was not
//! made by a copy, and every copy made before copies carried one).

use std::ffi::OsString;
use std::fs::{self, File, OpenOptions};
use std::io::Write;
use std::path::{Path, PathBuf};

use sha2::{Digest, Sha256};

use crate::error::{Error, Result};
use crate::log::{gen_name, sync_dir, DataDir, LogStore, SledStore};
use crate::types::Seq;

/// The file of a data directory written by `backup` or `restore`: the
/// unfinished marker while the copy runs, the completion record after.
pub(crate) const COPY: &str = "COPY";
/// Where the completion record is written before it replaces the marker.
const COPY_TMP: &str = "COPY.tmp";
/// The first line of every `COPY` file.
const MAGIC: &str = "mnemon copy 1\n";
/// The end of a staging directory's name (`.NAME.mnemon-partial`).
const STAGING_SUFFIX: &str = ".mnemon-partial";

/// Which command wrote a copy.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) enum CopyKind {
    /// `Engine::backup`.
    Backup,
    /// `portability::restore`.
    Restore,
}

impl CopyKind {
    fn name(self) -> &'static str {
        match self {
            CopyKind::Backup => "backup",
            CopyKind::Restore => "restore",
        }
    }

    fn parse(s: &str) -> Option<CopyKind> {
        match s {
            "backup" => Some(CopyKind::Backup),
            "restore" => Some(CopyKind::Restore),
            _ => None,
        }
    }
}

/// The completion record of a whole copy.
#[derive(Clone, Debug, PartialEq, Eq)]
pub(crate) struct CopyRecord {
    /// Which command wrote the copy.
    pub(crate) kind: CopyKind,
    /// Records of the log written (`1..=last_seq`, gap-free).
    pub(crate) records: u64,
    /// The last `Seq` written.
    pub(crate) last_seq: Seq,
    /// The generation the records were written into.
    pub(crate) generation: u64,
    /// [`LogDigest`] of the records as written.
    pub(crate) log_sha256: [u8; 32],
}

impl CopyRecord {
    /// The record's bytes: text lines, then the CRC-32 of every byte
    /// before the last line.
    fn encode(&self) -> String {
        let body = format!(
            "{MAGIC}state complete\nkind {}\nrecords {:020}\nlast_seq {:020}\ngeneration {}\nlog_sha256 {}\n",
            self.kind.name(),
            self.records,
            self.last_seq,
            gen_name(self.generation),
            hex::encode(self.log_sha256)
        );
        let crc = crc32fast::hash(body.as_bytes());
        format!("{body}crc32 {crc:08x}\n")
    }

    /// Reads a completion record: `None` for anything but the exact bytes
    /// [`CopyRecord::encode`] writes (so a cut or changed record is never
    /// taken for one).
    fn decode(text: &str) -> Option<CopyRecord> {
        let mut lines = text.strip_prefix(MAGIC)?.strip_prefix("state complete\n")?.lines();
        let mut field = |name: &str| lines.next()?.strip_prefix(name)?.strip_prefix(' ').map(str::to_string);
        let kind = CopyKind::parse(&field("kind")?)?;
        let records = field("records")?.parse().ok()?;
        let last_seq = field("last_seq")?.parse().ok()?;
        let generation = field("generation")?.strip_prefix("gen-")?.parse().ok()?;
        let mut log_sha256 = [0u8; 32];
        hex::decode_to_slice(field("log_sha256")?, &mut log_sha256).ok()?;
        let record = CopyRecord { kind, records, last_seq, generation, log_sha256 };
        (record.records == record.last_seq && record.encode() == text).then_some(record)
    }
}

/// The log digest of a completion record: SHA-256 over every record in
/// `Seq` order, each as its `Seq` (8 bytes big-endian), its length (8 bytes
/// big-endian) and its bytes as stored.
#[derive(Clone, Debug, Default)]
pub(crate) struct LogDigest {
    h: Sha256,
}

impl LogDigest {
    /// Adds the record stored under `seq`.
    pub(crate) fn add(&mut self, seq: Seq, record: &[u8]) {
        self.h.update(seq.to_be_bytes());
        self.h.update(u64::try_from(record.len()).unwrap_or(u64::MAX).to_be_bytes());
        self.h.update(record);
    }

    /// The digest of the records added.
    pub(crate) fn finish(self) -> [u8; 32] {
        self.h.finalize().into()
    }
}

/// What the `COPY` file of a data directory says.
enum CopyState {
    /// No `COPY`: not written by a copy (or by one made before copies
    /// carried the file).
    NotACopy,
    /// The unfinished marker (or a marker cut while it was written).
    Unfinished { kind: Option<CopyKind>, expected: Option<Seq> },
    /// A valid completion record.
    Complete(CopyRecord),
    /// Something else: damage.
    Damaged(String),
}

fn read_state(root: &Path) -> CopyState {
    // What is not a directory is refused as such by the data directory.
    if !root.is_dir() {
        return CopyState::NotACopy;
    }
    let bytes = match fs::read(root.join(COPY)) {
        Ok(b) => b,
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => return CopyState::NotACopy,
        Err(e) => return CopyState::Damaged(format!("its {COPY} file cannot be read ({e})")),
    };
    let text = String::from_utf8_lossy(&bytes);
    if let Some(r) = CopyRecord::decode(&text) {
        return CopyState::Complete(r);
    }
    // The marker is written once, at the start, and never synced half: a
    // prefix of it (a write cut by a crash) is still the marker.
    let marker_head = format!("{MAGIC}state unfinished\n");
    if let Some(rest) = text.strip_prefix(&marker_head) {
        let mut kind = None;
        let mut expected = None;
        for line in rest.lines() {
            if let Some(k) = line.strip_prefix("kind ") {
                kind = CopyKind::parse(k);
            } else if let Some(n) = line.strip_prefix("expect ") {
                expected = n.parse().ok();
            }
        }
        return CopyState::Unfinished { kind, expected };
    }
    if marker_head.starts_with(text.as_ref()) {
        return CopyState::Unfinished { kind: None, expected: None };
    }
    let mut shown: String = text.chars().take(40).collect();
    if text.chars().count() > 40 {
        shown.push('…');
    }
    CopyState::Damaged(format!(
        "its {COPY} file holds {shown:?}, neither the mark of a copy under way nor a valid completion record"
    ))
}

/// Whether the file name of `root` is that of a staging directory.
fn is_staging_name(root: &Path) -> bool {
    root.file_name().and_then(|n| n.to_str()).is_some_and(|n| n.starts_with('.') && n.ends_with(STAGING_SUFFIX))
}

/// Refuses, before anything under `root` is created or changed, a data
/// directory that a copy began and did not finish: its `COPY` file is the
/// unfinished marker or damaged, or it is a staging directory without one.
/// Returns the completion record of a whole copy (`None` for an ordinary
/// store).
///
/// # Errors
/// [`Error::IncompleteCopy`] naming the records the copy was to hold and
/// those present.
pub(crate) fn refuse_unfinished(root: &Path) -> Result<Option<CopyRecord>> {
    let (kind, expected, why) = match read_state(root) {
        CopyState::Complete(r) => return Ok(Some(r)),
        CopyState::NotACopy if !is_staging_name(root) => return Ok(None),
        CopyState::NotACopy => (None, None, format!("it is the staging directory of a copy and has no {COPY} file")),
        CopyState::Unfinished { kind, expected } => {
            (kind, expected, format!("its {COPY} file still marks it unfinished"))
        }
        CopyState::Damaged(why) => (None, None, why),
    };
    let what = kind.map_or("backup or restore", CopyKind::name);
    let (present, held) = present_records(root);
    let counts = match (expected, present) {
        (Some(e), Some(p)) => format!("it holds {p} of the {e} records it was to hold"),
        (None, Some(p)) => format!("it holds {p} records, and how many it was to hold is not recorded"),
        (Some(e), None) => format!("it was to hold {e} records"),
        (None, None) => String::new(),
    };
    let mut reason = format!("this directory was written by a {what} that did not finish: {why}");
    if !counts.is_empty() {
        reason.push_str("; ");
        reason.push_str(&counts);
    }
    reason.push_str(if held {
        "; a copy is writing it now"
    } else {
        ", and no completion record. Nothing was opened or changed: make the copy again (running the same \
         `mnemon backup` or `mnemon restore` again removes what this one left), or use another backup"
    });
    Err(Error::IncompleteCopy { path: root.to_path_buf(), expected, present, reason })
}

/// The records an unfinished copy holds (`None` when its log cannot be
/// read), and whether a copy still holds its lock.
fn present_records(root: &Path) -> (Option<Seq>, bool) {
    if !root.join("CURRENT").is_file() {
        return (Some(0), false);
    }
    let dir = match DataDir::open(root) {
        Ok(d) => d,
        Err(Error::Locked { .. }) => return (None, true),
        Err(_) => return (None, false),
    };
    let n = SledStore::open(&dir.current_path(), 8 << 20).and_then(|s| s.last_seq()).ok();
    (n.map(|n| n.unwrap_or(0)), false)
}

/// Checks the log replayed on open against a whole copy's record: the log
/// only grows (compaction keeps every `Seq`), so it holds at least the
/// records the copy wrote.
///
/// # Errors
/// [`Error::IncompleteCopy`] when it holds fewer.
pub(crate) fn check_extent(root: &Path, record: &CopyRecord, replayed: Seq) -> Result<()> {
    if replayed >= record.last_seq {
        return Ok(());
    }
    Err(Error::IncompleteCopy {
        path: root.to_path_buf(),
        expected: Some(record.last_seq),
        present: Some(replayed),
        reason: format!(
            "the completion record of this {} names {} records, but the log holds only {replayed}: records were \
             lost since the copy was made; use another backup",
            record.kind.name(),
            record.records
        ),
    })
}

/// The completion record of the data directory at `root`, if it is a whole
/// copy (for [`crate::Engine::check`]).
pub(crate) fn completion_record(root: &Path) -> Option<CopyRecord> {
    match read_state(root) {
        CopyState::Complete(r) => Some(r),
        _ => None,
    }
}

/// For [`crate::Engine::check`]: compares the digest of the log's records
/// `1..=record.last_seq` with the record's, when the generation the copy
/// wrote is still the live one (a compaction since rewrites forgotten
/// payloads, so only the extent is comparable then). Returns what was
/// checked, as a sentence.
///
/// # Errors
/// [`Error::IncompleteCopy`] when the digests differ.
pub(crate) fn check_digest(
    root: &Path,
    record: &CopyRecord,
    live_generation: Option<u64>,
    digest: [u8; 32],
) -> Result<String> {
    let what = format!("{} of {} records", record.kind.name(), record.records);
    if live_generation != Some(record.generation) {
        return Ok(format!(
            "whole {what} (completion record read; the log was compacted since, so its digest is not compared)"
        ));
    }
    if digest == record.log_sha256 {
        return Ok(format!("whole {what} (completion record read, log digest matches)"));
    }
    Err(Error::IncompleteCopy {
        path: root.to_path_buf(),
        expected: Some(record.last_seq),
        present: Some(record.last_seq),
        reason: format!(
            "the log's records 1..={} are not those this {} wrote (SHA-256 {} in its completion record, {} now):              the files were changed or damaged; use another backup",
            record.last_seq,
            record.kind.name(),
            hex::encode(record.log_sha256),
            hex::encode(digest)
        ),
    })
}

/// The generation `CURRENT` under `root` names.
pub(crate) fn live_generation(root: &Path) -> Option<u64> {
    fs::read_to_string(root.join("CURRENT")).ok()?.trim().strip_prefix("gen-")?.parse().ok()
}

/// A copy being written: its staging directory beside the target.
pub(crate) struct Staging {
    target: PathBuf,
    dir: PathBuf,
}

/// Checks that `target` is absent or an empty directory.
///
/// # Errors
/// [`Error::InvalidInput`] on `field` when it is a file or a directory that
/// holds something; [`Error::Io`] when it cannot be read.
pub(crate) fn check_target(field: &'static str, target: &Path) -> Result<()> {
    match fs::read_dir(target) {
        Ok(mut entries) => match entries.next() {
            None => Ok(()),
            Some(_) => Err(Error::invalid(field, format!("{} is not empty; name a new directory", target.display()))),
        },
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => Ok(()),
        Err(e) if e.kind() == std::io::ErrorKind::NotADirectory => {
            Err(Error::invalid(field, format!("{} is a file; name a new directory", target.display())))
        }
        Err(e) => Err(Error::io_at(target, e)),
    }
}

/// The staging directory of `target`, and `target`'s parent.
fn staging_path(field: &'static str, target: &Path) -> Result<(PathBuf, PathBuf)> {
    let name = target
        .file_name()
        .ok_or_else(|| Error::invalid(field, format!("{} names no directory; name a new one", target.display())))?;
    let parent = match target.parent() {
        Some(p) if !p.as_os_str().is_empty() => p.to_path_buf(),
        _ => PathBuf::from("."),
    };
    let mut staged = OsString::from(".");
    staged.push(name);
    staged.push(STAGING_SUFFIX);
    Ok((parent.join(staged), parent))
}

impl Staging {
    /// Starts a copy into `target`: checks the target ([`check_target`]),
    /// removes the staging directory an interrupted copy into the same
    /// target left (only one that holds nothing but what a copy writes:
    /// its `COPY` file begins with the copy mark, or it is empty), creates
    /// a new one and durably writes the unfinished marker, naming `kind`
    /// and the `expected` records, before anything else.
    ///
    /// # Errors
    /// [`Error::InvalidInput`] on `field` for a bad target or a staging
    /// path that holds something else; [`Error::Locked`] when another copy
    /// into the same target is running; [`Error::Io`].
    pub(crate) fn begin(field: &'static str, target: &Path, kind: CopyKind, expected: Seq) -> Result<Staging> {
        check_target(field, target)?;
        let (dir, parent) = staging_path(field, target)?;
        fs::create_dir_all(&parent).map_err(|e| Error::io_at(&parent, e))?;
        remove_stale(field, &dir)?;
        fs::create_dir(&dir).map_err(|e| Error::io_at(&dir, e))?;
        let staging = Staging { target: target.to_path_buf(), dir };
        let marker = format!("{MAGIC}state unfinished\nkind {}\nexpect {expected:020}\n", kind.name());
        let written = (|| -> Result<()> {
            let mut f = File::create(staging.dir.join(COPY))?;
            f.write_all(marker.as_bytes())?;
            f.sync_all()?;
            sync_dir(&staging.dir)?;
            sync_dir(&parent)
        })();
        match written {
            Ok(()) => Ok(staging),
            Err(e) => {
                staging.abandon();
                Err(e)
            }
        }
    }

    /// The staging directory: the data directory the copy writes.
    pub(crate) fn dir(&self) -> &Path {
        &self.dir
    }

    /// Makes the copy whole: writes `record` to a temporary file, fsyncs
    /// it, renames it over the unfinished marker and fsyncs the directory.
    /// Everything else of the copy must be durable before.
    ///
    /// # Errors
    /// [`Error::Io`].
    pub(crate) fn seal(&self, record: &CopyRecord) -> Result<()> {
        let tmp = self.dir.join(COPY_TMP);
        let mut f = File::create(&tmp)?;
        f.write_all(record.encode().as_bytes())?;
        f.sync_all()?;
        fs::rename(&tmp, self.dir.join(COPY))?;
        sync_dir(&self.dir)
    }

    /// Fsyncs the sealed copy's tree, renames it onto the target and
    /// fsyncs the parent. On failure the staging directory is removed.
    ///
    /// # Errors
    /// [`Error::InvalidInput`] when the target became a non-empty directory
    /// meanwhile; [`Error::Io`].
    pub(crate) fn commit(self, field: &'static str) -> Result<()> {
        let done = (|| -> Result<()> {
            super::durability::sync_tree(&self.dir)?;
            match fs::rename(&self.dir, &self.target) {
                Ok(()) => {}
                Err(e) if self.target.is_dir() && !is_empty_dir(&self.target) => {
                    return Err(Error::invalid(
                        field,
                        format!("{} was filled while the copy ran ({e}); name a new directory", self.target.display()),
                    ))
                }
                Err(e) => return Err(Error::io_at(&self.target, e)),
            }
            match self.target.parent().filter(|p| !p.as_os_str().is_empty()) {
                Some(p) => sync_dir(p),
                None => sync_dir(Path::new(".")),
            }
        })();
        if done.is_err() && self.dir.exists() {
            self.abandon();
        }
        done
    }

    /// Removes the staging directory (a failed copy).
    pub(crate) fn abandon(self) {
        let _ = fs::remove_dir_all(&self.dir);
    }
}

fn is_empty_dir(p: &Path) -> bool {
    fs::read_dir(p).is_ok_and(|mut e| e.next().is_none())
}

/// Removes the staging directory `dir` that an interrupted copy left, after
/// making sure it is one: a directory that is empty or whose `COPY` file
/// begins with the copy mark (or is a cut prefix of it), and that no
/// running copy holds.
fn remove_stale(field: &'static str, dir: &Path) -> Result<()> {
    match fs::symlink_metadata(dir) {
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => return Ok(()),
        Err(e) => return Err(Error::io_at(dir, e)),
        Ok(m) if !m.is_dir() => {
            return Err(Error::invalid(
                field,
                format!("{} is in the way of the copy and was not made by one; move it away", dir.display()),
            ))
        }
        Ok(_) => {}
    }
    let copy = fs::read(dir.join(COPY)).ok();
    let ours = match &copy {
        Some(bytes) => bytes.starts_with(MAGIC.as_bytes()) || MAGIC.as_bytes().starts_with(bytes),
        None => is_empty_dir(dir),
    };
    if !ours {
        return Err(Error::invalid(
            field,
            format!(
                "{} is in the way of the copy and holds what no copy writes; move it away or name another target",
                dir.display()
            ),
        ));
    }
    let lock_path = dir.join("LOCK");
    if let Ok(lock) = OpenOptions::new().write(true).open(&lock_path) {
        match lock.try_lock() {
            Ok(()) => {}
            Err(fs::TryLockError::WouldBlock) => return Err(Error::Locked { path: lock_path }),
            Err(fs::TryLockError::Error(e)) => return Err(Error::io_at(&lock_path, e)),
        }
    }
    fs::remove_dir_all(dir).map_err(|e| Error::io_at(dir, e))?;
    if let Some(parent) = dir.parent() {
        sync_dir(parent)?;
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    fn record() -> CopyRecord {
        CopyRecord { kind: CopyKind::Backup, records: 7, last_seq: 7, generation: 1, log_sha256: [0xab; 32] }
    }

    #[test]
    fn a_completion_record_reads_back_and_nothing_else_does() {
        let r = record();
        let text = r.encode();
        assert_eq!(CopyRecord::decode(&text), Some(r.clone()));
        // Every cut and every changed byte is refused.
        for cut in 0..text.len() {
            assert_eq!(CopyRecord::decode(&text[..cut]), None, "cut at {cut}");
        }
        let mut bytes = text.into_bytes();
        for i in 0..bytes.len() {
            let was = bytes[i];
            bytes[i] = if was == b'0' { b'1' } else { b'0' };
            assert_eq!(CopyRecord::decode(&String::from_utf8_lossy(&bytes)), None, "byte {i} changed");
            bytes[i] = was;
        }
    }

    #[test]
    fn an_unfinished_marker_refuses_to_open_and_names_the_counts() -> Result<()> {
        let dir = tempfile::tempdir()?;
        let target = dir.path().join("b");
        let staging = Staging::begin("dir", &target, CopyKind::Restore, 12)?;
        let err = refuse_unfinished(staging.dir()).unwrap_err();
        let text = err.to_string();
        assert!(matches!(err, Error::IncompleteCopy { expected: Some(12), present: Some(0), .. }), "{text}");
        assert!(text.contains("0 of the 12 records") && text.contains("restore"), "{text}");
        // A second begin removes the leftover and starts again.
        drop(staging);
        let again = Staging::begin("dir", &target, CopyKind::Restore, 12)?;
        assert!(again.dir().join(COPY).is_file());
        again.abandon();
        Ok(())
    }

    #[test]
    fn a_staging_path_holding_something_else_is_left_alone() -> Result<()> {
        let dir = tempfile::tempdir()?;
        let target = dir.path().join("b");
        let (staged, _) = staging_path("dir", &target)?;
        fs::create_dir(&staged)?;
        fs::write(staged.join("notes.txt"), "mine")?;
        let err = Staging::begin("dir", &target, CopyKind::Backup, 1).err();
        assert!(matches!(err, Some(Error::InvalidInput { field: "dir", .. })), "{err:?}");
        assert_eq!(fs::read_to_string(staged.join("notes.txt"))?, "mine");
        Ok(())
    }
}

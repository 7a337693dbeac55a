//! What makes a store's extent checkable after the fact: the high-water
//! mark (`LAST_SEQ`, the log's last `Seq` at a clean close), durable trees
//! (every file and directory fsynced), and the recovery hint added to the
//! errors of opening a damaged store.

use std::fs;
use std::path::{Path, PathBuf};

use crate::error::{Error, Result};

/// The file a restore whose digest differed from its export's leaves in
/// the restored data directory ([`RestoreReport::verify`]).
pub const RESTORE_MISMATCH: &str = "RESTORE-MISMATCH";

/// Fsyncs every file under `dir`, then every directory (children first),
/// then `dir`'s parent, so the whole tree is durable.
pub(crate) fn sync_tree(dir: &Path) -> Result<()> {
    fn walk(dir: &Path) -> Result<()> {
        for entry in fs::read_dir(dir)? {
            let entry = entry?;
            let ft = entry.file_type()?;
            if ft.is_dir() {
                walk(&entry.path())?;
            } else if ft.is_file() {
                fs::File::open(entry.path())?.sync_all()?;
            }
        }
        crate::log::sync_dir(dir)
    }
    walk(dir)?;
    if let Some(parent) = dir.parent().filter(|p| !p.as_os_str().is_empty()) {
        crate::log::sync_dir(parent)?;
    }
    Ok(())
}

/// The file under the data directory that records the last `Seq` of the
/// log at the last clean close (decimal, one line).
const HIGH_WATER: &str = "LAST_SEQ";

/// Records `seq` as the log's extent at a clean close (or in a backup or a
/// restored store): write a temporary file, fsync, rename, fsync the
/// directory.
///
/// # Errors
/// [`Error::Io`]; the caller may ignore it (the check is then skipped or
/// uses an older, lower value).
pub(crate) fn record_high_water(root: &Path, seq: crate::types::Seq) -> Result<()> {
    use std::io::Write;
    let tmp = root.join("LAST_SEQ.tmp");
    let mut f = fs::File::create(&tmp)?;
    f.write_all(mark_line(seq).as_bytes())?;
    f.sync_all()?;
    fs::rename(&tmp, root.join(HIGH_WATER))?;
    crate::log::sync_dir(root)
}

/// The text of `LAST_SEQ` for `seq`: 20 digits and a line break, one width
/// for the clean close and the writer's mark, so a write of the one always
/// covers the other whole.
fn mark_line(seq: crate::types::Seq) -> String {
    format!("{seq:020}\n")
}

/// The high-water mark the writer keeps while the store is open: after
/// every flush that made new events durable, their last `Seq` is written
/// over the start of `LAST_SEQ` (fixed width, one write, no fsync: a mark
/// lost or left behind by a crash is only lower than the log, which the
/// check allows; the events it names were already synced). So a store
/// whose process was killed, then damaged, is caught too, not only one
/// closed cleanly.
pub(crate) struct HighWaterMark {
    path: PathBuf,
    file: Option<fs::File>,
}

impl HighWaterMark {
    /// The mark of the store at `root` (the file is opened at the first
    /// [`HighWaterMark::record`]).
    pub(crate) fn new(root: &Path) -> HighWaterMark {
        HighWaterMark { path: root.join(HIGH_WATER), file: None }
    }

    /// Records that the log is durable up to `seq`. Best effort: a failure
    /// leaves an older mark, which only weakens the check.
    pub(crate) fn record(&mut self, seq: crate::types::Seq) {
        if self.file.is_none() {
            self.file = fs::OpenOptions::new().write(true).create(true).truncate(false).open(&self.path).ok();
        }
        if let Some(f) = &self.file {
            let line = mark_line(seq);
            #[cfg(unix)]
            let written = std::os::unix::fs::FileExt::write_all_at(f, line.as_bytes(), 0);
            #[cfg(not(unix))]
            let written = {
                use std::io::{Seek, SeekFrom, Write};
                let mut f = f;
                f.seek(SeekFrom::Start(0)).and_then(|_| f.write_all(line.as_bytes()))
            };
            if written.is_err() {
                self.file = None;
            }
        }
    }
}

/// Checks that the log just replayed reaches the extent recorded at the
/// last clean close, or by the last flush before a crash
/// ([`HighWaterMark`]). The log only grows (compaction keeps every `Seq`), so
/// reading less means sled lost records — a damaged file that sled reads as
/// a shorter (often empty) log instead of failing.
///
/// # Errors
/// [`Error::Corrupted`] naming the first missing `Seq`; [`Error::Storage`]
/// when the file holds something other than a sequence number.
pub(crate) fn check_high_water(root: &Path, replayed: crate::types::Seq) -> Result<()> {
    let Ok(bytes) = fs::read(root.join(HIGH_WATER)) else {
        return Ok(());
    };
    // A write of the mark cut by a crash or power loss leaves the file
    // empty, or zero bytes where the new text was to go: NULs are no
    // mark, and a file of nothing else is none.
    let text: String = String::from_utf8_lossy(&bytes).chars().filter(|c| *c != '\0').collect();
    if text.trim().is_empty() {
        return Ok(());
    }
    match text.trim().parse::<u64>() {
        Ok(n) if replayed < n => Err(Error::Corrupted {
            seq: replayed + 1,
            reason: format!(
                "the log held events up to seq {n} at its last recorded flush or close, but only {replayed} could be \
                 read"
            ),
        }),
        Ok(_) => Ok(()),
        // The file holds only a number we wrote (renamed into place, or
        // written over in one short write), so anything else in it is
        // damage: the check cannot be made, and is not silently skipped.
        Err(_) => {
            let mut shown = text.trim().to_string();
            if shown.len() > 40 {
                shown = format!("{}…", crate::text::truncate_bytes(&shown, 40));
            }
            Err(Error::Storage(
                format!(
                    "{} holds {shown:?}, not the sequence number a clean close writes, so whether the log lost \
                 records cannot be checked (if `mnemon check` of a copy without that file finds the log whole, \
                 deleting the file lets the store open)",
                    root.join(HIGH_WATER).display()
                )
                .into(),
            ))
        }
    }
}

/// What to do about a store that does not open: appended to the
/// [`Error::Corrupted`] and [`Error::Storage`] errors of opening.
pub(crate) fn recovery_hint(dir: &Path) -> String {
    format!(
        "; the store at {} is damaged. Recover it from a backup (made by `mnemon backup DIR`: check it with \
         `mnemon --data BACKUP check`, then use it in place of this directory) or from a store export (made by \
         `mnemon export FILE`): `mnemon restore --from FILE --into NEW_DIR`. See docs/guide/import-backup-restore.md",
        dir.display()
    )
}

/// Adds [`recovery_hint`] to an error of opening the store at `dir` when it
/// means the files are damaged; other errors pass unchanged.
pub(crate) fn with_recovery_hint(e: Error, dir: &Path) -> Error {
    match e {
        Error::Corrupted { seq, reason } => Error::Corrupted { seq, reason: reason + &recovery_hint(dir) },
        Error::Storage(s) => Error::Storage(s.append(&recovery_hint(dir))),
        other => other,
    }
}

//! The data directory: an exclusive lock, a pointer to the current
//! generation, and one sled database per generation.
//!
//! ```text
//! DATA/LOCK         held (flock) for as long as an engine has the store open;
//!                   its text names the holder ([`DataDir::note_holder`])
//! DATA/CURRENT      "gen-000001\n": the live generation; replaced by rename
//! DATA/gen-000001/  the sled database of that generation
//! DATA/COMPACTING   present (fsynced) while a compaction is under way
//! DATA/RESERVE      disk space held back for opening on a full disk
//! ```
//! `RESERVE` is a file of allocated zeros ([`DataDir::keep_reserve`]).
//! Opening the store writes (sled writes a snapshot of its page table and
//! zeroes the end of its last segment), so on a disk that has filled up
//! since, an open fails; the engine then cuts the reserve to nothing,
//! opens on the space it gave back and takes no writes
//! ([`DataDir::release_reserve`]), so the store can still be read,
//! checked, exported and backed up elsewhere. An empty `RESERVE` says the
//! reserve was given back: every open tries to make it again first, and
//! stays read-only while it cannot.
//! Compaction writes `COMPACTING`, then `gen-M` (M = N+1, or one above any higher `gen-*` directory present), fsyncs it, renames a new
//! `CURRENT` into place, deletes the old generation and removes
//! `COMPACTING`. On open, while `COMPACTING` remains, the generations it
//! names that `CURRENT` does not are leftovers of the interrupted
//! compaction and are deleted, and the engine runs the compaction again;
//! any other generation (a copy a user left) is kept, and a compaction
//! writes one above every generation present. A `CURRENT` naming no
//! existing generation is refused before anything is created or removed.

use std::fs::{self, File, OpenOptions};
use std::io::Write;
use std::path::{Path, PathBuf};

use crate::error::{Error, Result};

/// An opened, locked data directory.
#[derive(Debug)]
pub struct DataDir {
    root: PathBuf,
    _lock: File,
    current: u64,
}

const CURRENT: &str = "CURRENT";
const LOCK: &str = "LOCK";
const COMPACTING: &str = "COMPACTING";
const RESERVE: &str = "RESERVE";

/// Writes the holder note into the open `LOCK` file: this process's id and
/// `socket` as given (`yes`, `no` or `pending`). Best effort.
fn write_note(lock: &File, socket: &str) {
    use std::io::{Seek, SeekFrom};
    let note = format!("mnemon store lock\npid {}\nsocket {socket}\n", std::process::id());
    let mut f = lock;
    let _ = f.set_len(0).and_then(|()| f.seek(SeekFrom::Start(0))).and_then(|_| f.write_all(note.as_bytes()));
}

impl Drop for DataDir {
    /// Blanks the holder note before the lock is released, so no note
    /// outlives its holder (one left by a crash names a process that is
    /// gone, or one that reopened and wrote its own).
    fn drop(&mut self) {
        let _ = self._lock.set_len(0);
    }
}

/// The holder of a store as its `LOCK` file names it
/// ([`DataDir::note_holder`]).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct LockHolder {
    /// The holder's process id.
    pub pid: u32,
    /// Whether it answers other processes on the store's socket (`false`
    /// only for an explicit `socket no`; `pending` counts as may).
    pub serves_socket: bool,
}

/// Who holds the store at `root`, by its `LOCK` file; `None` when the file
/// names nobody (never noted, written by an older version, or unreadable).
/// The note may be stale for the moment between a new holder's lock and
/// its note, or after its holder exited (then the lock is free).
pub fn lock_holder(root: &Path) -> Option<LockHolder> {
    let text = fs::read_to_string(root.join(LOCK)).ok()?;
    let mut pid = None;
    let mut socket = None;
    for line in text.lines() {
        if let Some(p) = line.strip_prefix("pid ") {
            pid = p.trim().parse().ok();
        } else if let Some(s) = line.strip_prefix("socket ") {
            socket = match s.trim() {
                "yes" | "pending" => Some(true),
                "no" => Some(false),
                _ => None,
            };
        }
    }
    Some(LockHolder { pid: pid?, serves_socket: socket? })
}

pub(crate) fn gen_name(n: u64) -> String {
    format!("gen-{n:06}")
}

/// The `gen-*` directories under `root`: (number, name as found).
fn generations(root: &Path) -> Result<Vec<(u64, String)>> {
    let mut out = Vec::new();
    for entry in fs::read_dir(root)? {
        let name = entry?.file_name().to_string_lossy().into_owned();
        if let Some(n) = parse_gen(&name) {
            out.push((n, name));
        }
    }
    Ok(out)
}

fn parse_gen(name: &str) -> Option<u64> {
    name.strip_prefix("gen-")?.parse().ok()
}

impl DataDir {
    /// Creates the directory if needed, takes the lock, resolves the current
    /// generation and removes stale ones.
    ///
    /// # Errors
    /// [`Error::Locked`] when another process or engine holds the store;
    /// [`Error::InvalidInput`] (field `path`) when `root` is a file;
    /// [`Error::Io`] on file-system errors; [`Error::Corrupted`] (seq 0) when
    /// `CURRENT` is unreadable or names a generation that does not exist.
    pub fn open(root: &Path) -> Result<DataDir> {
        if root.exists() && !root.is_dir() {
            return Err(Error::invalid(
                "path",
                format!("{} is a file, not a directory: a store is a directory", root.display()),
            ));
        }
        // A store made where nothing exists is made under a turn on the
        // directory that holds it, the turn the CLI takes while it builds a
        // new store beside the path and moves it there: whoever comes
        // second finds the store the first made and opens it.
        let turn = if absent(root) { Some(creation_turn(root)?) } else { None };
        fs::create_dir_all(root)?;
        let lock_path = root.join(LOCK);
        let lock = OpenOptions::new().create(true).truncate(false).write(true).open(&lock_path)?;
        match lock.try_lock() {
            Ok(()) => {}
            Err(fs::TryLockError::WouldBlock) => return Err(Error::Locked { path: lock_path }),
            Err(fs::TryLockError::Error(e)) => return Err(Error::Io(e)),
        }
        drop(turn);
        // Whatever an earlier holder noted is not about this one; until the
        // engine says whether it serves the socket, it may.
        write_note(&lock, "pending");
        let current = match fs::read_to_string(root.join(CURRENT)) {
            Ok(s) => parse_gen(s.trim()).ok_or_else(|| Error::Corrupted {
                seq: 0,
                reason: format!("{} holds {:?}, not a generation name", root.join(CURRENT).display(), s.trim()),
            })?,
            Err(e) if e.kind() == std::io::ErrorKind::NotFound => {
                let first = 1;
                fs::create_dir_all(root.join(gen_name(first)))?;
                write_current(root, first)?;
                first
            }
            Err(e) => return Err(Error::Io(e)),
        };
        // A `CURRENT` naming no directory was changed or damaged: every
        // write of it names a generation already complete on disk. Opening
        // it would start an empty generation and delete the real one.
        if !root.join(gen_name(current)).is_dir() {
            let mut present: Vec<String> = generations(root)?.into_iter().map(|(_, name)| name).collect();
            present.sort();
            let found = if present.is_empty() { "none".to_string() } else { present.join(", ") };
            return Err(Error::Corrupted {
                seq: 0,
                reason: format!(
                    "{} names {}, which does not exist (generations here: {found}); the file was changed or \
                     damaged, and nothing was opened or removed: write the name of the generation that holds \
                     the store into it, or restore from a backup or export",
                    root.join(CURRENT).display(),
                    gen_name(current)
                ),
            });
        }
        let dir = DataDir { root: root.to_path_buf(), _lock: lock, current };
        dir.remove_stale_generations()?;
        Ok(dir)
    }

    /// Writes who holds the store into its `LOCK` file: `pid N` and
    /// `socket yes|no`, whether this process answers other processes on the
    /// store's socket. A process that finds the store locked reads it
    /// ([`lock_holder`]) to tell a holder it can reach, or one coming up,
    /// from one it never can. Best effort: the lock itself is what excludes.
    pub(crate) fn note_holder(&self, serves_socket: bool) {
        write_note(&self._lock, if serves_socket { "yes" } else { "no" });
    }

    /// The root of the data directory.
    pub(crate) fn root(&self) -> &Path {
        &self.root
    }

    /// Path of the live generation's database.
    pub fn current_path(&self) -> PathBuf {
        self.root.join(gen_name(self.current))
    }

    /// Number of the live generation.
    pub(crate) fn current_generation(&self) -> u64 {
        self.current
    }

    /// Path a new generation `n` would use.
    pub(crate) fn generation_path(&self, n: u64) -> PathBuf {
        self.root.join(gen_name(n))
    }

    /// Atomically makes generation `n` the live one (write temp, fsync,
    /// rename, fsync directory). The caller deletes the old one afterwards.
    ///
    /// # Errors
    /// [`Error::Io`] if any step fails; then the old generation stays live.
    pub(crate) fn switch_to(&mut self, n: u64) -> Result<()> {
        write_current(&self.root, n)?;
        self.current = n;
        Ok(())
    }

    /// The generation `CURRENT` names on disk now (after a failed switch,
    /// this tells whether the rename happened).
    ///
    /// # Errors
    /// [`Error::Io`] when `CURRENT` cannot be read.
    pub(crate) fn current_on_disk(&self) -> Result<Option<u64>> {
        Ok(parse_gen(fs::read_to_string(self.root.join(CURRENT))?.trim()))
    }

    /// The number for a new generation: one above every `gen-*` directory
    /// present (the live one, and any copy a user left beside it, which a
    /// compaction must never write into), so no existing directory is
    /// reused.
    ///
    /// # Errors
    /// [`Error::Io`] when the directory cannot be read.
    pub(crate) fn next_generation(&self) -> Result<u64> {
        let top = generations(&self.root)?.into_iter().map(|(n, _)| n).fold(self.current, u64::max);
        top.checked_add(1).ok_or_else(|| Error::Corrupted {
            seq: 0,
            reason: format!("{} holds a generation numbered {top}: no number is left above it", self.root.display()),
        })
    }

    /// Makes sure `RESERVE` holds `bytes` of allocated disk space (a file
    /// of zeros, made beside it and renamed into place, so it is either
    /// whole or as it was). Best effort: on a disk without that much room
    /// the reserve stays as it was. Returns the bytes the reserve now
    /// holds.
    pub(crate) fn keep_reserve(&self, bytes: u64) -> u64 {
        let path = self.root.join(RESERVE);
        let held = fs::metadata(&path).map_or(0, |m| m.len());
        if bytes == 0 || held >= bytes {
            return held;
        }
        let tmp = self.root.join("RESERVE.tmp");
        match allocate(&tmp, bytes).and_then(|()| fs::rename(&tmp, &path)) {
            Ok(()) => bytes,
            Err(_) => {
                let _ = fs::remove_file(&tmp);
                held
            }
        }
    }

    /// Whether the reserve was given back to a full disk and not made
    /// again: `RESERVE` exists and is empty. A store in that state opens
    /// read-only until the reserve can be made again.
    pub(crate) fn reserve_released(&self) -> bool {
        fs::metadata(self.root.join(RESERVE)).is_ok_and(|m| m.len() == 0)
    }

    /// Gives the reserve's space back to the file system: `RESERVE` is cut
    /// to nothing and kept, so later opens know the store is read-only
    /// until the reserve is made again ([`DataDir::reserve_released`]).
    ///
    /// # Errors
    /// [`Error::Io`] when the file cannot be cut.
    pub(crate) fn release_reserve(&self) -> Result<()> {
        match OpenOptions::new().write(true).open(self.root.join(RESERVE)) {
            Ok(f) => Ok(f.set_len(0)?),
            Err(e) if e.kind() == std::io::ErrorKind::NotFound => Ok(()),
            Err(e) => Err(Error::Io(e)),
        }
    }

    /// True when `COMPACTING` exists: a compaction started and did not finish.
    pub(crate) fn compaction_marked(&self) -> bool {
        self.root.join(COMPACTING).exists()
    }

    /// Durably records that a compaction from generation `from` to `to` has
    /// started (write, fsync the file, fsync the directory), before anything
    /// of generation `to` exists.
    ///
    /// # Errors
    /// [`Error::Io`] if the marker cannot be written or synced.
    pub(crate) fn mark_compaction(&self, from: u64, to: u64) -> Result<()> {
        {
            let mut f = File::create(self.root.join(COMPACTING))?;
            f.write_all(format!("{} -> {}\n", gen_name(from), gen_name(to)).as_bytes())?;
            f.sync_all()?;
        }
        sync_dir(&self.root)
    }

    /// Removes `COMPACTING` (and fsyncs the directory): the compaction is done.
    ///
    /// # Errors
    /// [`Error::Io`] if the marker cannot be removed.
    pub(crate) fn clear_compaction_mark(&self) -> Result<()> {
        match fs::remove_file(self.root.join(COMPACTING)) {
            Ok(()) => {}
            Err(e) if e.kind() == std::io::ErrorKind::NotFound => {}
            Err(e) => return Err(Error::Io(e)),
        }
        sync_dir(&self.root)
    }

    /// Deletes the generations a compaction marker names, except the live
    /// one, and temp files; without a marker, or with one that does not
    /// read, no generation.
    ///
    /// # Errors
    /// [`Error::Io`] on file-system errors.
    pub(crate) fn remove_stale_generations(&self) -> Result<()> {
        // Only a compaction leaves a second generation, and it holds
        // `COMPACTING` for as long as one may exist; a generation found
        // without it was put there by hand (a copy, a damaged `CURRENT`) and
        // is left alone.
        // The marker names the two generations of its compaction
        // ("gen-N -> gen-M\n", written and synced before gen-M exists);
        // only those are its leftovers.
        let marker = fs::read_to_string(self.root.join(COMPACTING)).ok();
        let named: Option<Vec<u64>> = marker.as_deref().and_then(|m| {
            let gens: Vec<u64> = m.strip_suffix('\n')?.split(" -> ").map(parse_gen).collect::<Option<_>>()?;
            (gens.len() == 2 && m == format!("{} -> {}\n", gen_name(gens[0]), gen_name(gens[1]))).then_some(gens)
        });
        for entry in fs::read_dir(&self.root)? {
            let entry = entry?;
            let name = entry.file_name();
            let name = name.to_string_lossy();
            if let Some(n) = parse_gen(&name) {
                // Only a directory spelled as this store spells it, named by
                // a marker that reads; a marker that does not read was cut
                // before its new generation was made, so nothing is stale.
                let leftover = *name == gen_name(n) && named.as_ref().is_some_and(|gens| gens.contains(&n));
                if n != self.current && leftover {
                    fs::remove_dir_all(entry.path())?;
                }
            } else if name.starts_with("CURRENT.tmp") {
                fs::remove_file(entry.path())?;
            }
        }
        sync_dir(&self.root)
    }
}

/// Whether the store at `root` holds disk space in reserve (a `RESERVE`
/// that is not empty).
pub(crate) fn has_reserve(root: &Path) -> bool {
    fs::metadata(root.join(RESERVE)).is_ok_and(|m| m.is_file() && m.len() > 0)
}

/// Writes `path` as `bytes` of allocated space: `fallocate` where the
/// file system has it (blocks reserved, nothing written), else zeros
/// written out, which take the blocks just the same.
fn allocate(path: &Path, bytes: u64) -> std::io::Result<()> {
    let mut f = File::create(path)?;
    #[cfg(target_os = "linux")]
    if rustix::fs::fallocate(&f, rustix::fs::FallocateFlags::empty(), 0, bytes).is_ok() {
        return f.sync_all();
    }
    let chunk = vec![0u8; 64 * 1024];
    let mut left = bytes;
    while left > 0 {
        let n = left.min(chunk.len() as u64);
        // `n` is at most the chunk's length, a usize.
        f.write_all(&chunk[..usize::try_from(n).unwrap_or(chunk.len())])?;
        left -= n;
    }
    f.sync_all()
}

/// Whether nothing at all is at `p` (not even a dangling symlink).
fn absent(p: &Path) -> bool {
    matches!(fs::symlink_metadata(p), Err(e) if e.kind() == std::io::ErrorKind::NotFound)
}

/// Takes the turn to create a store at `root`: an exclusive lock on the
/// directory that holds it (created first if missing), waited for while
/// another creator holds it. Dropping the handle gives the turn back. A
/// file system without directory locks goes without turns.
///
/// # Errors
/// [`Error::Io`] when the parent directory cannot be created or opened.
fn creation_turn(root: &Path) -> Result<File> {
    let parent = match root.parent() {
        Some(p) if !p.as_os_str().is_empty() => p.to_path_buf(),
        _ => PathBuf::from("."),
    };
    loop {
        fs::create_dir_all(&parent)?;
        let turn = File::open(&parent)?;
        let locked = turn.lock().is_ok();
        // A creator that gave up may have removed the directory it made
        // meanwhile; a lock on a removed directory orders nothing.
        if !locked || same_file(&turn, &parent) {
            return Ok(turn);
        }
    }
}

/// Whether the open handle `f` still names the file at `p`.
#[cfg(unix)]
fn same_file(f: &File, p: &Path) -> bool {
    use std::os::unix::fs::MetadataExt;
    match (f.metadata(), fs::metadata(p)) {
        (Ok(a), Ok(b)) => (a.dev(), a.ino()) == (b.dev(), b.ino()),
        _ => false,
    }
}

#[cfg(not(unix))]
fn same_file(_: &File, _: &Path) -> bool {
    true
}

fn write_current(root: &Path, n: u64) -> Result<()> {
    let tmp = root.join("CURRENT.tmp");
    {
        let mut f = File::create(&tmp)?;
        f.write_all(format!("{}\n", gen_name(n)).as_bytes())?;
        f.sync_all()?;
    }
    fs::rename(&tmp, root.join(CURRENT))?;
    sync_dir(root)
}

/// Fsyncs a directory so renames and creations in it are durable.
///
/// # Errors
/// [`Error::Io`] when the directory cannot be opened or synced.
pub(crate) fn sync_dir(dir: &Path) -> Result<()> {
    File::open(dir)?.sync_all()?;
    Ok(())
}

//! A store that a command creates where nothing exists yet is built in a
//! new directory beside the path `--data` names and moved there (one
//! `rename`, then a sync of the parent directory) only when the command
//! succeeds and wrote something. A refused write therefore leaves nothing
//! behind: no directory, and no empty store that would pin the embedder
//! the refused call happened to name for every later `--embedder auto`.
//!
//! Only a path that does not exist at all is built this way. An existing
//! directory (empty, a mount point, a symlink to one, one whose owner and
//! mode the user set) is written in place as before, since a rename would
//! replace it or fail across filesystems.
//!
//! CLI commands that create a store in the same directory take turns (a
//! lock on that directory): a second one waits, then finds the store the
//! first made and writes to it like any other. A server or library user
//! that creates the store in place (`Engine::open` on a path where nothing
//! exists) takes the same turn, so it waits for this command's move and
//! then opens the store it made. Only a creator on a file system without
//! directory locks can still make the rename fail; the build directory is
//! then renamed `.NAME.mnemon-unmoved-…` and the error says where this
//! command's writes are.
//!
//! A command killed before its move (`kill -9`, a power loss) leaves its
//! build directory, `.NAME.mnemon-new-HOST-PID-NANOS`, which holds writes
//! it never acknowledged. The next command that creates the store removes
//! it while it holds the turn, so that text nobody was told is stored does
//! not linger beside the store: at once when the directory was made on this
//! host (`HOST`, a hash of the host name) by a process that is gone (Linux:
//! no `/proc/PID`), else once nothing in it has changed for a day. A turn
//! alone does not prove a directory unused (locks on some network and
//! shared file systems do not reach other machines), hence the process and
//! age checks. A directory holding a `NOT-MOVED` file (a failed move, see
//! [`Fresh::commit`]) is never removed.

use std::path::{Path, PathBuf};

use mnemon_api::{ApiError, ErrorCode};

/// A store being created for one command. Dropped without
/// [`Fresh::commit`], it removes what it built (an error, a panic).
pub struct Fresh {
    /// Where the command builds the store (created empty by `begin`).
    tmp: PathBuf,
    /// Where it goes when the command succeeds.
    target: PathBuf,
    /// Ancestors of `target` this command created, outermost first.
    made: Vec<PathBuf>,
    /// The directory holding `target`, locked (when the file system allows
    /// it) until this value is dropped.
    turn: std::fs::File,
    /// Set once the store is in place.
    committed: bool,
}

/// Whether nothing at all is at `p` (not even a dangling symlink).
fn absent(p: &Path) -> bool {
    matches!(std::fs::symlink_metadata(p), Err(e) if e.kind() == std::io::ErrorKind::NotFound)
}

/// The directory's identity, to tell whether a locked handle still names
/// the directory at its path.
#[cfg(unix)]
fn same_dir(f: &std::fs::File, p: &Path) -> bool {
    use std::os::unix::fs::MetadataExt;
    match (f.metadata(), std::fs::metadata(p)) {
        (Ok(a), Ok(b)) => (a.dev(), a.ino()) == (b.dev(), b.ino()),
        _ => false,
    }
}

#[cfg(not(unix))]
fn same_dir(_: &std::fs::File, _: &Path) -> bool {
    true
}

impl Fresh {
    /// `Some` when nothing exists at `target` (the command would create the
    /// store there); `None` otherwise.
    ///
    /// # Errors
    /// `io` when the directory that is to hold `target`, or the build
    /// directory, cannot be created.
    pub fn begin(target: &Path) -> Result<Option<Fresh>, ApiError> {
        if !absent(target) {
            return Ok(None);
        }
        let Some(name) = target.file_name() else {
            return Ok(None);
        };
        let parent = match target.parent() {
            Some(p) if !p.as_os_str().is_empty() => p.to_path_buf(),
            _ => PathBuf::from("."),
        };
        // `dir/.` and `dir/` name `dir`: rename into the normalised path.
        let target = parent.join(name);
        let mut made = Vec::new();
        let mut p = parent.as_path();
        while !p.as_os_str().is_empty() && !p.exists() {
            made.push(p.to_path_buf());
            match p.parent() {
                Some(up) => p = up,
                None => break,
            }
        }
        made.reverse();
        let turn = loop {
            std::fs::create_dir_all(&parent).map_err(|e| io_error(&parent, &e))?;
            let turn = std::fs::File::open(&parent).map_err(|e| io_error(&parent, &e))?;
            // Best effort: a file system without directory locks (some
            // network mounts) goes without turns.
            let locked = turn.lock().is_ok();
            // A creator refused meanwhile may have removed the directory it
            // made; a handle to the removed one orders nothing.
            if same_dir(&turn, &parent) {
                break (turn, locked);
            }
        };
        let (turn, locked) = turn;
        // Another command may have made the store while this one waited.
        if !absent(&target) {
            return Ok(None);
        }
        if locked {
            remove_abandoned(&parent, &name.to_string_lossy());
        }
        let nanos = std::time::SystemTime::now().duration_since(std::time::UNIX_EPOCH).map_or(0, |d| d.subsec_nanos());
        let tmp = parent.join(format!(
            "{}{:08x}-{}-{nanos:09}",
            building_prefix(&name.to_string_lossy()),
            host_tag(),
            std::process::id()
        ));
        let fresh = Fresh { tmp, target, made, turn, committed: false };
        // Created here, exclusively: the engine then opens an empty directory.
        std::fs::create_dir(&fresh.tmp).map_err(|e| io_error(&fresh.tmp, &e))?;
        Ok(Some(fresh))
    }

    /// The directory to open the store in.
    pub fn dir(&self) -> &Path {
        &self.tmp
    }

    /// Moves the store into place, after the command succeeded and the
    /// store was closed, and syncs the parent directory so the move
    /// survives a power loss.
    ///
    /// # Errors
    /// `io` when the move fails (a server created a store at the target in
    /// the meantime, say); the message names where this command's writes
    /// are. The build directory is then kept, renamed out of the pattern
    /// that later creators remove (kept under its own name if that rename
    /// fails too).
    pub fn commit(mut self) -> Result<(), ApiError> {
        if let Err(e) = std::fs::rename(&self.tmp, &self.target) {
            self.committed = true; // keep the writes where they are
            let _ = std::fs::write(
                self.tmp.join(NOT_MOVED),
                "this store could not be moved into place; see the error of the command that wrote it\n",
            );
            let target_name = self.target.file_name().map(|n| n.to_string_lossy().into_owned()).unwrap_or_default();
            let own = self.tmp.file_name().map(|n| n.to_string_lossy().into_owned()).unwrap_or_default();
            if let Some(rest) = own.strip_prefix(&building_prefix(&target_name)) {
                let kept = self.tmp.with_file_name(format!(".{target_name}.mnemon-unmoved-{rest}"));
                if std::fs::rename(&self.tmp, &kept).is_ok() {
                    self.tmp = kept;
                }
            }
            return Err(ApiError::new(
                ErrorCode::Io,
                format!(
                    "this command's writes are in {} and could not be moved to {}: {e}; read them with --data {} (export, then import into the store at {})",
                    self.tmp.display(),
                    self.target.display(),
                    self.tmp.display(),
                    self.target.display()
                ),
            ));
        }
        self.committed = true;
        let _ = self.turn.sync_all();
        Ok(())
    }

    /// Runs `f` on the directory to use: `target` itself when something is
    /// there already (`f` gets `false`), else a fresh one (`f` gets
    /// `true`) that is kept only if `f` succeeds and says it wrote (the
    /// second value it returns).
    ///
    /// # Errors
    /// As `f`; [`Fresh::begin`]'s and [`Fresh::commit`]'s errors.
    pub fn run<T>(target: &Path, f: impl FnOnce(&Path, bool) -> Result<(T, bool), ApiError>) -> Result<T, ApiError> {
        let Some(fresh) = Fresh::begin(target)? else {
            return f(target, false).map(|(v, _)| v);
        };
        // Dropping `fresh` on a refusal or a store left unwritten removes it.
        let (v, wrote) = f(fresh.dir(), true)?;
        if wrote {
            fresh.commit()?;
        }
        Ok(v)
    }
}

impl Drop for Fresh {
    fn drop(&mut self) {
        if self.committed {
            return;
        }
        let _ = std::fs::remove_dir_all(&self.tmp);
        for d in self.made.iter().rev() {
            let _ = std::fs::remove_dir(d);
        }
    }
}

/// The start of the name of a build directory of the store `name`.
fn building_prefix(name: &str) -> String {
    format!(".{name}.mnemon-new-")
}

/// The file that marks a build directory kept after a failed move.
const NOT_MOVED: &str = "NOT-MOVED";

/// How long a build directory from another host (or from a version that
/// did not name its host) must have been left unchanged before a creator
/// removes it: far longer than any one command runs.
const FOREIGN_AGE: std::time::Duration = std::time::Duration::from_secs(24 * 3600);

/// The low 32 bits of [`mnemon::storage::fnv1a64`] of this machine's host name
/// (Linux: the kernel's; else `/etc/hostname`; empty when neither can be
/// read).
fn host_tag() -> u32 {
    let name = std::fs::read_to_string("/proc/sys/kernel/hostname")
        .or_else(|_| std::fs::read_to_string("/etc/hostname"))
        .unwrap_or_default();
    mnemon::storage::fnv1a64(name.trim().as_bytes()) as u32
}

/// The host tag and process id in a build directory's name after its
/// prefix (`HOST-PID-NANOS`: 8 hex digits, digits, 9 digits); `None` for
/// any other shape (a version that wrote `PID-NANOS` included).
fn parse_building(rest: &str) -> Option<(u32, u32)> {
    let mut parts = rest.split('-');
    let (host, pid, nanos) = (parts.next()?, parts.next()?, parts.next()?);
    let digits = |s: &str| !s.is_empty() && s.bytes().all(|b| b.is_ascii_digit());
    if parts.next().is_some() || host.len() != 8 || !digits(pid) || nanos.len() != 9 || !digits(nanos) {
        return None;
    }
    Some((u32::from_str_radix(host, 16).ok()?, pid.parse().ok()?))
}

/// Removes the build directories of the store `name` in `parent` that
/// killed commands left (see the module docs for which). Called with the
/// turn held. Best effort: what cannot be read or removed stays.
fn remove_abandoned(parent: &Path, name: &str) {
    let prefix = building_prefix(name);
    let Ok(entries) = std::fs::read_dir(parent) else {
        return;
    };
    let here = host_tag();
    for entry in entries.flatten() {
        let file_name = entry.file_name();
        let Some(rest) = file_name.to_str().and_then(|n| n.strip_prefix(&prefix)) else {
            continue;
        };
        // Not a symlink (the type is not followed), not a kept directory.
        if !entry.file_type().is_ok_and(|t| t.is_dir()) || entry.path().join(NOT_MOVED).exists() {
            continue;
        }
        let abandoned = match parse_building(rest) {
            Some((host, pid)) if host == here => !mnemon::storage::process_may_run(pid),
            _ => {
                let modified = entry.metadata().and_then(|m| m.modified()).ok();
                modified.and_then(|t| t.elapsed().ok()).is_some_and(|age| age >= FOREIGN_AGE)
            }
        };
        if abandoned {
            let _ = std::fs::remove_dir_all(entry.path());
        }
    }
}

fn io_error(p: &Path, e: &std::io::Error) -> ApiError {
    ApiError::new(ErrorCode::Io, format!("cannot create {}: {e}", p.display()))
}

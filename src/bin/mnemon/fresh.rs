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
//! that creates the same store in place at that moment makes the rename
//! fail; the build directory is then renamed `.NAME.mnemon-unmoved-…` and
//! the error says where this command's writes are.
//!
//! A command killed before its move (`kill -9`, a power loss) leaves its
//! build directory, `.NAME.mnemon-new-…`, which holds writes it never
//! acknowledged. The next command that creates the store removes every
//! such directory while it holds the turn (a live creator holds the turn
//! until it is done, so none of them is in use), so that text nobody was
//! told is stored does not linger beside the store.

use std::path::{Path, PathBuf};

use mnemon::api::{ApiError, ErrorCode};

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
        let tmp = parent.join(format!("{}{}-{nanos:09}", building_prefix(&name.to_string_lossy()), std::process::id()));
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
            if let Some(name) =
                self.tmp.file_name().map(|n| n.to_string_lossy().replacen(".mnemon-new-", ".mnemon-unmoved-", 1))
            {
                let kept = self.tmp.with_file_name(name);
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

/// Removes the build directories of the store `name` in `parent` that
/// killed commands left (see the module docs). Called with the turn held.
/// Best effort: what cannot be read or removed stays.
fn remove_abandoned(parent: &Path, name: &str) {
    let prefix = building_prefix(name);
    let Ok(entries) = std::fs::read_dir(parent) else {
        return;
    };
    for entry in entries.flatten() {
        let is_dir = entry.file_type().is_ok_and(|t| t.is_dir());
        if is_dir && entry.file_name().to_string_lossy().starts_with(&prefix) {
            let _ = std::fs::remove_dir_all(entry.path());
        }
    }
}

fn io_error(p: &Path, e: &std::io::Error) -> ApiError {
    ApiError::new(ErrorCode::Io, format!("cannot create {}: {e}", p.display()))
}

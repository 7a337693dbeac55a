//! A store that a command creates is built in a new directory beside the
//! one `--data` names and moved into place (one `rename`) only when the
//! command succeeds and wrote something. A refused write therefore leaves
//! nothing behind: no directory, and no empty store that would pin the
//! embedder the refused call happened to name for every later
//! `--embedder auto`. Commands that create a store in the same directory
//! take turns (a lock on that directory): a second one waits, then finds
//! the store the first made and writes to it like any other.

use std::path::{Path, PathBuf};

use mnemon::api::{ApiError, ErrorCode};

/// A store being created for one command.
pub struct Fresh {
    /// Where the command builds the store.
    tmp: PathBuf,
    /// Where it goes when the command succeeds.
    target: PathBuf,
    /// Ancestors of `target` this command created, outermost first.
    made: Vec<PathBuf>,
    /// The directory holding `target`, locked until this value is dropped.
    _turn: std::fs::File,
}

/// Whether `p` does not exist or is an empty directory.
fn absent_or_empty(p: &Path) -> bool {
    match std::fs::read_dir(p) {
        Ok(entries) => entries.into_iter().next().is_none(),
        Err(e) => e.kind() == std::io::ErrorKind::NotFound,
    }
}

impl Fresh {
    /// `Some` when `target` does not exist yet or is an empty directory
    /// (the command would create the store); `None` otherwise (a store, or
    /// something the engine will judge when it opens it).
    ///
    /// # Errors
    /// `io` when the directory that is to hold `target` cannot be created.
    pub fn begin(target: &Path) -> Result<Option<Fresh>, ApiError> {
        if !absent_or_empty(target) {
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
        std::fs::create_dir_all(&parent).map_err(|e| io_error(&parent, &e))?;
        let turn = std::fs::File::open(&parent).map_err(|e| io_error(&parent, &e))?;
        turn.lock().map_err(|e| io_error(&parent, &e))?;
        // Another command may have made the store while this one waited.
        if !absent_or_empty(&target) {
            return Ok(None);
        }
        let nanos = std::time::SystemTime::now().duration_since(std::time::UNIX_EPOCH).map_or(0, |d| d.subsec_nanos());
        let tmp = parent.join(format!(".{}.mnemon-new-{}-{nanos:09}", name.to_string_lossy(), std::process::id()));
        Ok(Some(Fresh { tmp, target, made, _turn: turn }))
    }

    /// The directory to open the store in.
    pub fn dir(&self) -> &Path {
        &self.tmp
    }

    /// Moves the store into place, after the command succeeded and the
    /// store was closed.
    ///
    /// # Errors
    /// `io` when the move fails (another process created the target in the
    /// meantime, say); the message names where the store is.
    pub fn commit(self) -> Result<(), ApiError> {
        std::fs::rename(&self.tmp, &self.target).map_err(|e| {
            ApiError::new(
                ErrorCode::Io,
                format!(
                    "the command succeeded, but its new store could not be moved from {} to {}: {e}; move it there by hand",
                    self.tmp.display(),
                    self.target.display()
                ),
            )
        })
    }

    /// Removes what the command created, after it failed.
    pub fn discard(self) {
        let _ = std::fs::remove_dir_all(&self.tmp);
        for d in self.made.iter().rev() {
            let _ = std::fs::remove_dir(d);
        }
    }

    /// Runs `f` on the directory to use: `target` itself when it holds a
    /// store already (`f` gets `false`), else a fresh one (`f` gets
    /// `true`) that is kept only if `f` succeeds and says it wrote (the
    /// second value it returns).
    ///
    /// # Errors
    /// As `f`; [`Fresh::begin`]'s and [`Fresh::commit`]'s errors.
    pub fn run<T>(target: &Path, f: impl FnOnce(&Path, bool) -> Result<(T, bool), ApiError>) -> Result<T, ApiError> {
        let Some(fresh) = Fresh::begin(target)? else {
            return f(target, false).map(|(v, _)| v);
        };
        match f(fresh.dir(), true) {
            Ok((v, true)) => {
                fresh.commit()?;
                Ok(v)
            }
            Ok((v, false)) => {
                fresh.discard();
                Ok(v)
            }
            Err(e) => {
                fresh.discard();
                Err(e)
            }
        }
    }
}

fn io_error(p: &Path, e: &std::io::Error) -> ApiError {
    ApiError::new(ErrorCode::Io, format!("cannot create or lock {}: {e}", p.display()))
}

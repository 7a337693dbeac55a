//! The CLI's standard output. A reader that goes away early (`mnemon log |
//! head -1`) closes the pipe: the remaining output is dropped and the
//! command finishes normally (its writes are already committed) and exits
//! with status 0, as `head` asked for no more. Any other write error is
//! reported once on standard error.

use std::fmt;
use std::io::{ErrorKind, Write};
use std::sync::atomic::{AtomicBool, Ordering};

static CLOSED: AtomicBool = AtomicBool::new(false);

/// Writes `args` (and a newline when `newline`) to standard output; after
/// the first failed write, writes nothing more.
pub fn write(args: fmt::Arguments<'_>, newline: bool) {
    if CLOSED.load(Ordering::Relaxed) {
        return;
    }
    let mut out = std::io::stdout().lock();
    let res = if newline { out.write_fmt(format_args!("{args}\n")) } else { out.write_fmt(args) };
    if let Err(e) = res {
        CLOSED.store(true, Ordering::Relaxed);
        if e.kind() != ErrorKind::BrokenPipe {
            eprintln!("error: cannot write to standard output: {e}");
        }
    }
}

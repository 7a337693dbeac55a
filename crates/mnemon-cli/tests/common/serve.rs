//! Where a `mnemon serve` child listens, read from what it announces on
//! standard error. Included by path by the test and bench binaries that
//! start servers.

use std::io::{BufReader, Lines};
use std::process::ChildStderr;

/// Reads `lines` (a server's standard error) up to the first line that
/// starts with `prefix` (e.g. `"mnemon: serving MCP on http://"`) and
/// returns the rest of that line. Panics when the server exits first.
pub fn announced(lines: &mut Lines<BufReader<ChildStderr>>, prefix: &str) -> String {
    loop {
        let line = lines.next().expect("server exited before listening").expect("server's standard error");
        if let Some(rest) = line.strip_prefix(prefix) {
            return rest.to_string();
        }
    }
}

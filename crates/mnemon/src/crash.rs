//! The crash hook of the crash tests: [`crash_point`] aborts the process
//! at a named step when the environment variable `MNEMON_CRASH_AT` names
//! it. Otherwise it costs one cached lookup per step.

use std::sync::OnceLock;

/// The environment variable read by the crash hook.
const CRASH_ENV: &str = "MNEMON_CRASH_AT";

/// Testing hook: aborts the process when `MNEMON_CRASH_AT` equals `step`.
pub(crate) fn crash_point(step: &str) {
    static AT: OnceLock<Option<String>> = OnceLock::new();
    if AT.get_or_init(|| std::env::var(CRASH_ENV).ok()).as_deref() == Some(step) {
        std::process::abort();
    }
}

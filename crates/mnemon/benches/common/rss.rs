//! Resident memory of the running process, for the benches that report it.

/// Resident memory of this process in KiB (`VmRSS` of `/proc/self/status`;
/// 0 where unavailable).
pub fn rss_kib() -> u64 {
    std::fs::read_to_string("/proc/self/status")
        .ok()
        .and_then(|s| {
            s.lines().find(|l| l.starts_with("VmRSS:")).and_then(|l| l.split_whitespace().nth(1)?.parse().ok())
        })
        .unwrap_or(0)
}

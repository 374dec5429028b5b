//! What more than one bench needs.

/// A field of `/proc/PID/status` in KiB (`VmRSS`, `VmHWM`, …) of `pid`
/// (`"self"` for this process); 0 when it cannot be read.
pub fn status_kib(pid: &str, field: &str) -> u64 {
    let status = std::fs::read_to_string(format!("/proc/{pid}/status")).unwrap_or_default();
    status
        .lines()
        .find_map(|line| line.strip_prefix(field)?.strip_prefix(':'))
        .and_then(|value| value.trim().trim_end_matches("kB").trim().parse().ok())
        .unwrap_or(0)
}

/// This process's resident memory, in KiB.
#[allow(dead_code)] // not every bench reads its own
pub fn resident_kib() -> u64 {
    status_kib("self", "VmRSS")
}

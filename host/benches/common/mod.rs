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

/// A host configuration for measuring calls that compute: the compile cache
/// in `cache`, and `[cache]` (results given again) off, so that a repeated
/// call of a read-only, idempotent tool (`sha256`, `calculate`) runs every
/// time rather than being answered from memory.
#[allow(dead_code)] // not every bench builds a host in-process
pub fn computing(cache: &std::path::Path) -> toolhost::Config {
    let mut config = toolhost::Config { cache_dir: Some(cache.to_owned()), ..toolhost::Config::default() };
    config.cache.enabled = false;
    config
}

/// The same for a `toolhost` process: a config file (in `dir`) that turns
/// `[cache]` off, for `--config`.
#[allow(dead_code)]
pub fn computing_config_file(dir: &std::path::Path) -> std::path::PathBuf {
    let path = dir.join("computing.toml");
    std::fs::write(&path, "[cache]\nenabled = false\n").unwrap();
    path
}

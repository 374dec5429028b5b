//! What more than one bench needs.

/// The processor time (user and system) of the process or thread whose
/// `/proc/…/stat` is `stat` (`/proc/self/stat`, `/proc/PID/stat`,
/// `/proc/self/task/TID/stat`); clock ticks of 10 ms, so read over a long
/// run. Zero when it cannot be read.
#[allow(dead_code)] // not every bench times processors
pub fn cpu_time(stat: &std::path::Path) -> std::time::Duration {
    let stat = std::fs::read_to_string(stat).unwrap_or_default();
    // The fields after the command's closing parenthesis: utime and stime are the 12th and 13th.
    let fields: Vec<&str> = stat.rsplit(')').next().unwrap_or("").split_whitespace().collect();
    let ticks = |at: usize| fields.get(at).and_then(|t| t.parse::<u64>().ok()).unwrap_or(0);
    std::time::Duration::from_millis((ticks(11) + ticks(12)) * 10)
}

/// A field of `/proc/PID/status` in KiB (`VmRSS`, `VmHWM`, …) of `pid`
/// (`"self"` for this process); 0 when it cannot be read.
#[allow(dead_code)] // not every bench reads memory
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

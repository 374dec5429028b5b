//! What `toolhost serve --http` tells an operator: [`Readiness`] (behind
//! `/readyz`) and [`Metrics`] (behind `/metrics`, in the Prometheus text
//! exposition format 0.0.4, written here: it is a small format and a crate
//! would bring more than it saves).
//!
//! Recording a call is lock-free once the tool has been seen: a read lock on
//! the per-tool map and a few relaxed atomic additions. Tool names and plugin
//! names (a plugin's name is its file name) come from outside, so every label
//! value is escaped; names a client asks for that are not in the catalog are
//! never used as label values (they are counted without a name), so a client
//! cannot grow the exposition.

use std::collections::HashMap;
use std::fmt::Write as _;
use std::sync::atomic::{AtomicI64, AtomicU64, Ordering};
use std::sync::{Arc, Mutex, RwLock};
use std::time::{Duration, Instant, SystemTime, UNIX_EPOCH};
use toolhost_runtime::outcome::{CallError, CallReport};

/// The content type of the exposition.
pub const CONTENT_TYPE: &str = "text/plain; version=0.0.4; charset=utf-8";

/// The upper bounds of the call latency histogram, in microseconds: 10 µs to 60 s.
const BUCKETS_US: [u64; 21] = [
    10, 25, 50, 100, 250, 500, 1_000, 2_500, 5_000, 10_000, 25_000, 50_000, 100_000, 250_000, 500_000, 1_000_000,
    2_500_000, 5_000_000, 10_000_000, 30_000_000, 60_000_000,
];

/// Every value of the `outcome` label: `ok`, `cancelled` (the client gave up
/// on the call), then every [`CallError::kind`].
const OUTCOMES: [&str; 19] = [
    "ok",
    "cancelled",
    "unknown_tool",
    "invalid_arguments",
    "tool_failed",
    "out_of_fuel",
    "memory_limit",
    "timeout",
    "output_too_large",
    "invalid_output",
    "stack_overflow",
    "stuck",
    "handle_limit",
    "trap",
    "rate_limited",
    "busy",
    "denied",
    "input_required",
    // Last: what any kind not named above is counted as.
    "host",
];
const CANCELLED: usize = 1;

/// Whether the server is ready (`/readyz`), and whether `/mcp` takes requests.
///
/// Three states: not ready and closed (shutting down: `/mcp` answers 503
/// too), loading (`/readyz` says not ready while `/mcp` already answers,
/// so that a client connects at once and sees tools as they load), ready.
pub struct Readiness {
    /// Why it is not ready; `None` when it is.
    not_ready: RwLock<Option<String>>,
    /// Whether `/mcp` is open while not ready.
    open: std::sync::atomic::AtomicBool,
}

impl Readiness {
    /// Not ready, for `reason` (e.g. "shutting down"), and `/mcp` closed.
    pub fn not_ready(reason: &str) -> Readiness {
        Readiness { not_ready: RwLock::new(Some(reason.to_owned())), open: false.into() }
    }

    /// Not ready, for `reason` (e.g. "loading plugins"), with `/mcp` open.
    pub fn loading(reason: &str) -> Readiness {
        Readiness { not_ready: RwLock::new(Some(reason.to_owned())), open: true.into() }
    }

    /// Ready from the start (for a caller that loads before serving).
    pub fn ready() -> Readiness {
        Readiness { not_ready: RwLock::new(None), open: true.into() }
    }

    /// Marks the server ready.
    pub fn set_ready(&self) {
        *self.not_ready.write().unwrap_or_else(|p| p.into_inner()) = None;
        self.open.store(true, std::sync::atomic::Ordering::Release);
    }

    /// Marks the server not ready, for `reason` (e.g. "shutting down"), and closes `/mcp`.
    pub fn set_not_ready(&self, reason: &str) {
        self.open.store(false, std::sync::atomic::Ordering::Release);
        *self.not_ready.write().unwrap_or_else(|p| p.into_inner()) = Some(reason.to_owned());
    }

    /// Marks the server ready if it is loading (not if it was closed meanwhile:
    /// a shutdown that began during the load stays a shutdown). True if it did.
    pub fn finish_loading(&self) -> bool {
        let mut not_ready = self.not_ready.write().unwrap_or_else(|p| p.into_inner());
        if self.open.load(std::sync::atomic::Ordering::Acquire) {
            *not_ready = None;
            true
        } else {
            false
        }
    }

    /// Changes why it is not ready (how far loading has come), if it is
    /// not ready and `/mcp` is open; nothing otherwise.
    pub fn set_loading(&self, reason: &str) {
        let mut not_ready = self.not_ready.write().unwrap_or_else(|p| p.into_inner());
        if not_ready.is_some() && self.open.load(std::sync::atomic::Ordering::Acquire) {
            *not_ready = Some(reason.to_owned());
        }
    }

    /// True when the server is ready.
    pub fn is_ready(&self) -> bool {
        self.not_ready.read().unwrap_or_else(|p| p.into_inner()).is_none()
    }

    /// Why the server is not ready, or `None` when it is.
    pub fn reason(&self) -> Option<String> {
        self.not_ready.read().unwrap_or_else(|p| p.into_inner()).clone()
    }

    /// Why `/mcp` refuses requests now, or `None` when it takes them.
    pub fn refusal(&self) -> Option<String> {
        if self.open.load(std::sync::atomic::Ordering::Acquire) { None } else { self.reason() }
    }
}

/// The counters of one tool (as offered by one plugin or MCP server).
struct ToolStats {
    origin: Arc<str>,
    outcomes: [AtomicU64; OUTCOMES.len()],
    /// Calls per latency bucket, not cumulative; the last one is over 60 s.
    buckets: [AtomicU64; BUCKETS_US.len() + 1],
    latency_us: AtomicU64,
    fuel: AtomicU64,
    /// Calls answered from `[cache]` (counted in `outcomes` too, as `ok`).
    cache_hits: AtomicU64,
}

impl ToolStats {
    fn new(origin: &str) -> ToolStats {
        ToolStats {
            origin: origin.into(),
            outcomes: Default::default(),
            buckets: Default::default(),
            latency_us: AtomicU64::new(0),
            fuel: AtomicU64::new(0),
            cache_hits: AtomicU64::new(0),
        }
    }
}

/// The HTTP endpoints, for the request counter.
#[derive(Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Hash, Debug)]
pub enum Endpoint {
    /// `/mcp`
    Mcp,
    /// `/healthz`
    Healthz,
    /// `/readyz`
    Readyz,
    /// `/metrics`
    Metrics,
    /// Anything else (answered 404).
    Other,
}

impl Endpoint {
    /// The endpoint `path` is, if any.
    pub fn of(path: &str) -> Endpoint {
        match path {
            "/mcp" => Endpoint::Mcp,
            // A profile's endpoint (`[serve.profiles.NAME]`): one path segment more.
            named if named.strip_prefix("/mcp/").is_some_and(|name| !name.is_empty() && !name.contains('/')) => {
                Endpoint::Mcp
            }
            "/healthz" => Endpoint::Healthz,
            "/readyz" => Endpoint::Readyz,
            "/metrics" => Endpoint::Metrics,
            _ => Endpoint::Other,
        }
    }

    fn label(self) -> &'static str {
        match self {
            Endpoint::Mcp => "/mcp",
            Endpoint::Healthz => "/healthz",
            Endpoint::Readyz => "/readyz",
            Endpoint::Metrics => "/metrics",
            Endpoint::Other => "other",
        }
    }
}

/// One tool's counters, read at once ([`Metrics::tool_totals`]).
#[derive(Debug, Clone)]
pub struct ToolTotals {
    pub tool: Arc<str>,
    pub origin: Arc<str>,
    /// Calls by outcome (`ok`, `cancelled`, then error kinds), only those seen.
    pub outcomes: Vec<(&'static str, u64)>,
    /// Calls per latency bucket (not cumulative), the bounds of [`latency_bounds_us`].
    pub buckets: Vec<u64>,
}

impl ToolTotals {
    /// Every call counted.
    pub fn calls(&self) -> u64 {
        self.outcomes.iter().map(|(_, count)| count).sum()
    }

    /// Calls that ended in an error (not `ok`, not `cancelled`).
    pub fn errors(&self) -> u64 {
        self.outcomes.iter().filter(|(kind, _)| !matches!(*kind, "ok" | "cancelled")).map(|(_, count)| count).sum()
    }

    /// The upper bound (µs) of the bucket holding quantile `q` (0..1) of
    /// the calls' latencies; `None` with no call, `u64::MAX` past 60 s.
    pub fn quantile_us(&self, q: f64) -> Option<u64> {
        let total: u64 = self.buckets.iter().sum();
        if total == 0 {
            return None;
        }
        let rank = ((total as f64) * q).ceil().max(1.0) as u64;
        let mut seen = 0;
        for (index, count) in self.buckets.iter().enumerate() {
            seen += count;
            if seen >= rank {
                return Some(BUCKETS_US.get(index).copied().unwrap_or(u64::MAX));
            }
        }
        Some(u64::MAX)
    }
}

/// The upper bounds of the latency buckets, in microseconds.
pub fn latency_bounds_us() -> &'static [u64] {
    &BUCKETS_US
}

/// Counters and gauges of a serving process.
pub struct Metrics {
    started: SystemTime,
    tools: RwLock<HashMap<Arc<str>, Vec<Arc<ToolStats>>>>,
    unknown_tool_calls: AtomicU64,
    active_calls: AtomicI64,
    http: Mutex<HashMap<(Endpoint, u16), u64>>,
}

impl Default for Metrics {
    fn default() -> Self {
        Metrics {
            started: SystemTime::now(),
            tools: RwLock::default(),
            unknown_tool_calls: AtomicU64::new(0),
            active_calls: AtomicI64::new(0),
            http: Mutex::default(),
        }
    }
}

/// A call in progress: counted in `toolhost_active_calls` until dropped, and
/// recorded as `cancelled` if dropped before [`ActiveCall::finish`] (the
/// client cancelled it, or went away and the call's future was dropped).
pub struct ActiveCall<'a> {
    metrics: &'a Metrics,
    tool: &'a str,
    origin: &'a str,
    started: Instant,
    recorded: bool,
}

impl ActiveCall<'_> {
    /// Records the call's report.
    pub fn finish(mut self, report: &CallReport) {
        self.metrics.record(self.tool, self.origin, report, self.started.elapsed());
        self.recorded = true;
    }

    /// Records the call as one of a tool that is not served after all.
    pub fn unknown_tool(mut self) {
        self.metrics.record_unknown_tool();
        self.recorded = true;
    }
}

impl Drop for ActiveCall<'_> {
    fn drop(&mut self) {
        self.metrics.active_calls.fetch_sub(1, Ordering::Relaxed);
        if !self.recorded {
            self.metrics.record_cancelled(self.tool, self.origin, self.started.elapsed());
        }
    }
}

/// What the exposition shows besides the counters, read when it is rendered.
pub struct Snapshot {
    /// True when `/readyz` answers 200.
    pub ready: bool,
    /// MCP sessions open (2025-11-25 clients).
    pub sessions: usize,
    /// The catalog's generation (1 after the first load, one more per swap).
    pub catalog_generation: u64,
    /// Tools in the catalog.
    pub tools: usize,
    /// Plugins loaded.
    pub plugins: usize,
    /// Files or servers that could not be loaded.
    pub load_problems: usize,
    /// What `[cache]` holds, and how often it answered.
    pub cache: toolhost_catalog::CacheStats,
}

impl Metrics {
    /// Counts a call of `tool` (offered by `origin`) as running until the
    /// returned guard is finished or dropped.
    pub fn start_call<'a>(&'a self, tool: &'a str, origin: &'a str) -> ActiveCall<'a> {
        self.active_calls.fetch_add(1, Ordering::Relaxed);
        ActiveCall { metrics: self, tool, origin, started: Instant::now(), recorded: false }
    }

    /// Tool calls running now.
    pub fn active_calls(&self) -> i64 {
        self.active_calls.load(Ordering::Relaxed)
    }

    /// Records a finished call of `tool` (offered by `origin`) that took `took`.
    pub fn record(&self, tool: &str, origin: &str, report: &CallReport, took: Duration) {
        let outcome = match &report.outcome {
            Ok(_) => 0,
            Err(err) => outcome_index(err),
        };
        self.record_outcome(tool, origin, outcome, report.usage.fuel, took);
        if report.cached.is_some() {
            self.stats(tool, origin).cache_hits.fetch_add(1, Ordering::Relaxed);
        }
    }

    /// Records a call of `tool` the client cancelled after `took`.
    pub fn record_cancelled(&self, tool: &str, origin: &str, took: Duration) {
        self.record_outcome(tool, origin, CANCELLED, 0, took);
    }

    /// Counts a call of a tool that is not in the catalog (or not served).
    pub fn record_unknown_tool(&self) {
        self.unknown_tool_calls.fetch_add(1, Ordering::Relaxed);
    }

    /// Counts an HTTP response.
    pub fn record_http(&self, endpoint: Endpoint, status: u16) {
        *self.http.lock().unwrap_or_else(|p| p.into_inner()).entry((endpoint, status)).or_default() += 1;
    }

    fn record_outcome(&self, tool: &str, origin: &str, outcome: usize, fuel: u64, took: Duration) {
        let stats = self.stats(tool, origin);
        stats.outcomes[outcome].fetch_add(1, Ordering::Relaxed);
        let micros = u64::try_from(took.as_micros()).unwrap_or(u64::MAX);
        let bucket = BUCKETS_US.iter().position(|&bound| micros <= bound).unwrap_or(BUCKETS_US.len());
        stats.buckets[bucket].fetch_add(1, Ordering::Relaxed);
        stats.latency_us.fetch_add(micros, Ordering::Relaxed);
        stats.fuel.fetch_add(fuel, Ordering::Relaxed);
    }

    fn stats(&self, tool: &str, origin: &str) -> Arc<ToolStats> {
        {
            let tools = self.tools.read().unwrap_or_else(|p| p.into_inner());
            if let Some(stats) = tools.get(tool).and_then(|all| all.iter().find(|stats| &*stats.origin == origin)) {
                return stats.clone();
            }
        }
        let mut tools = self.tools.write().unwrap_or_else(|p| p.into_inner());
        let all = tools.entry(tool.into()).or_default();
        if let Some(stats) = all.iter().find(|stats| &*stats.origin == origin) {
            return stats.clone();
        }
        let stats = Arc::new(ToolStats::new(origin));
        all.push(stats.clone());
        stats
    }

    /// Every tool's counters as they stand, for the operator's page
    /// ([`crate::console`]): one entry per tool and origin ever called.
    pub fn tool_totals(&self) -> Vec<ToolTotals> {
        let tools = self.tools.read().unwrap_or_else(|p| p.into_inner());
        let mut totals = Vec::new();
        for (tool, all) in tools.iter() {
            for stats in all {
                let outcomes =
                    OUTCOMES.iter().zip(&stats.outcomes).map(|(kind, count)| (*kind, count.load(Ordering::Relaxed)));
                totals.push(ToolTotals {
                    tool: tool.clone(),
                    origin: stats.origin.clone(),
                    outcomes: outcomes.filter(|(_, count)| *count > 0).collect(),
                    buckets: stats.buckets.iter().map(|count| count.load(Ordering::Relaxed)).collect(),
                });
            }
        }
        totals
    }

    /// The exposition, in the Prometheus text format 0.0.4.
    pub fn render(&self, snapshot: &Snapshot) -> String {
        let mut out = String::with_capacity(4096);
        family(&mut out, "toolhost_build_info", "gauge", "The toolhost version serving (always 1).");
        let _ = writeln!(out, "toolhost_build_info{{version=\"{}\"}} 1", escape(env!("CARGO_PKG_VERSION")));
        let started = self.started.duration_since(UNIX_EPOCH).unwrap_or_default().as_secs_f64();
        gauge(&mut out, "process_start_time_seconds", "When the process started, in seconds since the epoch.", started);
        gauge(
            &mut out,
            "toolhost_ready",
            "1 when /readyz answers 200 (plugins loaded, catalog built, required MCP servers connected).",
            u8::from(snapshot.ready),
        );
        gauge(&mut out, "toolhost_catalog_generation", "The tool catalog's generation (one more per reload).", {
            snapshot.catalog_generation
        });
        gauge(&mut out, "toolhost_tools", "Tools in the catalog.", snapshot.tools);
        gauge(&mut out, "toolhost_plugins", "Plugins loaded.", snapshot.plugins);
        gauge(&mut out, "toolhost_load_problems", "Files, settings or servers that could not be loaded.", {
            snapshot.load_problems
        });
        gauge(&mut out, "toolhost_mcp_sessions", "MCP sessions open (2025-11-25 clients).", snapshot.sessions);
        gauge(&mut out, "toolhost_active_calls", "Tool calls running now.", self.active_calls.load(Ordering::Relaxed));

        let tools = self.tools.read().unwrap_or_else(|p| p.into_inner());
        let mut rows: Vec<(&str, &ToolStats)> =
            tools.iter().flat_map(|(tool, all)| all.iter().map(move |stats| (&**tool, &**stats))).collect();
        rows.sort_by(|a, b| (a.0, &*a.1.origin).cmp(&(b.0, &*b.1.origin)));
        // Each row's labels, escaped once for the three families that use them.
        let rows: Vec<(String, &ToolStats)> = rows
            .into_iter()
            .map(|(tool, stats)| (format!("tool=\"{}\",plugin=\"{}\"", escape(tool), escape(&stats.origin)), stats))
            .collect();

        family(&mut out, "toolhost_tool_calls_total", "counter", "Tool calls over MCP, by tool, plugin and outcome.");
        for (labels, stats) in &rows {
            for (outcome, count) in OUTCOMES.iter().zip(&stats.outcomes) {
                let count = count.load(Ordering::Relaxed);
                // `ok` always, so that a rate of successes exists from the first call.
                if count > 0 || *outcome == "ok" {
                    let _ = writeln!(out, "toolhost_tool_calls_total{{{labels},outcome=\"{outcome}\"}} {count}");
                }
            }
        }
        family(
            &mut out,
            "toolhost_unknown_tool_calls_total",
            "counter",
            "Calls over MCP naming a tool that is not served (the name is not recorded).",
        );
        let _ = writeln!(out, "toolhost_unknown_tool_calls_total {}", self.unknown_tool_calls.load(Ordering::Relaxed));

        family(
            &mut out,
            "toolhost_tool_call_duration_seconds",
            "histogram",
            "Time from receiving a tool call to its result (queueing for a slot included), by tool and plugin.",
        );
        for (labels, stats) in &rows {
            let mut cumulative = 0u64;
            for (bound, count) in BUCKETS_US.iter().zip(&stats.buckets) {
                cumulative += count.load(Ordering::Relaxed);
                let le = *bound as f64 / 1e6;
                let _ =
                    writeln!(out, "toolhost_tool_call_duration_seconds_bucket{{{labels},le=\"{le}\"}} {cumulative}");
            }
            cumulative += stats.buckets[BUCKETS_US.len()].load(Ordering::Relaxed);
            let _ = writeln!(out, "toolhost_tool_call_duration_seconds_bucket{{{labels},le=\"+Inf\"}} {cumulative}");
            let sum = stats.latency_us.load(Ordering::Relaxed) as f64 / 1e6;
            let _ = writeln!(out, "toolhost_tool_call_duration_seconds_sum{{{labels}}} {sum}");
            let _ = writeln!(out, "toolhost_tool_call_duration_seconds_count{{{labels}}} {cumulative}");
        }

        family(
            &mut out,
            "toolhost_tool_fuel_consumed_total",
            "counter",
            "Fuel (roughly, wasm instructions) consumed by tool calls, by tool and plugin.",
        );
        for (labels, stats) in &rows {
            let _ =
                writeln!(out, "toolhost_tool_fuel_consumed_total{{{labels}}} {}", stats.fuel.load(Ordering::Relaxed));
        }
        family(
            &mut out,
            "toolhost_tool_cache_hits_total",
            "counter",
            "Tool calls over MCP answered from `[cache]` instead of run, by tool and plugin.",
        );
        for (labels, stats) in &rows {
            let hits = stats.cache_hits.load(Ordering::Relaxed);
            let _ = writeln!(out, "toolhost_tool_cache_hits_total{{{labels}}} {hits}");
        }
        drop(tools);
        let cache = &snapshot.cache;
        gauge(&mut out, "toolhost_result_cache_entries", "Results `[cache]` holds.", cache.entries);
        gauge(&mut out, "toolhost_result_cache_bytes", "Bytes of arguments and results `[cache]` holds.", cache.bytes);
        family(
            &mut out,
            "toolhost_result_cache_lookups_total",
            "counter",
            "Calls of cacheable tools, on every path, by whether `[cache]` answered them.",
        );
        let _ = writeln!(out, "toolhost_result_cache_lookups_total{{result=\"hit\"}} {}", cache.hits);
        let _ = writeln!(out, "toolhost_result_cache_lookups_total{{result=\"miss\"}} {}", cache.misses);

        family(&mut out, "toolhost_http_requests_total", "counter", "HTTP requests answered, by endpoint and status.");
        let mut http: Vec<((Endpoint, u16), u64)> =
            self.http.lock().unwrap_or_else(|p| p.into_inner()).iter().map(|(key, count)| (*key, *count)).collect();
        http.sort();
        for ((endpoint, status), count) in http {
            let _ = writeln!(out, "toolhost_http_requests_total{{endpoint=\"{}\",code=\"{status}\"}} {count}", {
                endpoint.label()
            });
        }
        out
    }
}

fn outcome_index(err: &CallError) -> usize {
    let kind = err.kind();
    OUTCOMES.iter().position(|outcome| *outcome == kind).unwrap_or(OUTCOMES.len() - 1)
}

fn family(out: &mut String, name: &str, kind: &str, help: &str) {
    let _ = writeln!(out, "# HELP {name} {help}");
    let _ = writeln!(out, "# TYPE {name} {kind}");
}

fn gauge(out: &mut String, name: &str, help: &str, value: impl std::fmt::Display) {
    family(out, name, "gauge", help);
    let _ = writeln!(out, "{name} {value}");
}

/// A label value as the text format wants it: `\`, `"` and line feeds escaped.
fn escape(value: &str) -> String {
    let mut escaped = String::with_capacity(value.len());
    for c in value.chars() {
        match c {
            '\\' => escaped.push_str("\\\\"),
            '"' => escaped.push_str("\\\""),
            '\n' => escaped.push_str("\\n"),
            c => escaped.push(c),
        }
    }
    escaped
}

#[cfg(test)]
mod tests;

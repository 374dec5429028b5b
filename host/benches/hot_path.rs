//! The hot path's guard: every floor beside toolhost, interleaved in one run,
//! each ratio printed beside its target (issue 37), so that a regression
//! shows in one command (`make bench` runs this first).
//!
//! Run with `cargo bench -p toolhost --bench hot_path` after
//! `bash plugins/build.sh`. The machine's speed moves from run to run (and
//! with other work on it), so nothing here is compared with a figure taken
//! at another time: each floor and toolhost take turns, in rounds, and the
//! ratios are of samples pooled over the same rounds. It measures:
//! - `Host::call` on `echo` against bare wasmtime (`common/bare.rs`: the same
//!   component in an engine whose pool is configured exactly as toolhost's,
//!   nothing else): p50 ≤ 1.3x;
//! - `toolhost serve` over stdio and over HTTP, `sha256` of a short text,
//!   against a native MCP server computing the same hash with the same rmcp
//!   over the same transport (this bench's own binary, started with
//!   `TOOLHOST_BENCH_FLOOR=stdio|http`): per-call p50 ≤ 2x the floor, and
//!   calls/s with 16 requests in flight ≥ 0.5x;
//! - a whole `toolhost call sha256` process on the bundled plugins with a
//!   warm cache: median ≤ 10 ms;
//! - beside Wassette 0.8 (installed by `host/benches/wassette.sh`; when it
//!   cannot be, one line says why) on the typed component both load,
//!   `typed_shop`'s `get-item` over stdio: toolhost ≥ 2x faster per call and
//!   ≥ 4x the calls/s. (`peer` has more of that comparison: misbehaving
//!   functions, p99.)
//!
//! Nothing here asserts a time; a target missed prints `NOT met`. Figures go
//! to BENCHMARKS.md.

#[path = "common/bare.rs"]
mod bare_wasmtime;
mod common;

use rmcp::model::{
    CallToolRequestParams, CallToolResponse, CallToolResult, ContentBlock, Implementation, ListToolsResult,
    PaginatedRequestParams, ServerCapabilities, ServerConfig, Tool,
};
use rmcp::service::RequestContext;
use rmcp::{ErrorData, RoleServer, ServerHandler, ServiceExt};
use serde_json::{Value, json};
use sha2::Digest;
use std::io::{BufRead, BufReader, Write};
use std::path::{Path, PathBuf};
use std::process::{Child, ChildStdin, ChildStdout, Command, Stdio};
use std::sync::Arc;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::time::{Duration, Instant};
use toolhost::{Host, LimitOverrides};

/// Rounds in which each side takes its turn (the order alternates).
const ROUNDS: usize = 6;
/// `Host::call`s and bare calls per side and round.
const IN_PROCESS_PER_ROUND: usize = 2_000;
/// MCP calls per side and round, one in flight.
const MCP_PER_ROUND: usize = 300;
/// Warm-up calls per server before its first round.
const WARMUP: usize = 200;
/// Requests in flight for the throughput figures.
const IN_FLIGHT: usize = 16;
/// Calls per side and round with `IN_FLIGHT` in flight.
const THROUGHPUT_PER_ROUND: usize = 2_000;
/// Whole `toolhost call` processes.
const PROCESS_RUNS: usize = 20;
/// The text every `sha256` call hashes.
const TEXT: &str = "hello, world";

const INITIALIZE: &str = r#"{"jsonrpc":"2.0","id":0,"method":"initialize","params":{"protocolVersion":"2025-11-25","capabilities":{},"clientInfo":{"name":"hot-path-bench","version":"1"}}}"#;
const INITIALIZED: &str = r#"{"jsonrpc":"2.0","method":"notifications/initialized"}"#;

fn hex_sha256(text: &str) -> String {
    sha2::Sha256::digest(text.as_bytes()).iter().map(|byte| format!("{byte:02x}")).collect()
}

// ---------------------------------------------------------------- the floor

/// The native MCP server: one tool, `sha256`, answered with the digest's hex
/// as one text block, as the `hash` plugin answers it.
#[derive(Clone)]
struct Floor {
    tools: Arc<Vec<Tool>>,
}

impl Floor {
    fn new() -> Floor {
        let schema = json!({"type": "object", "properties": {"text": {"type": "string"}}, "required": ["text"]});
        let Value::Object(schema) = schema else { unreachable!() };
        let tool = Tool::new("sha256", "SHA-256 digest of a text, as hex", Arc::new(schema));
        Floor { tools: Arc::new(vec![tool]) }
    }
}

impl ServerHandler for Floor {
    fn get_info(&self) -> ServerConfig {
        ServerConfig::new(ServerCapabilities::builder().enable_tools().build())
            .with_server_info(Implementation::new("floor", "1"))
    }

    async fn list_tools(
        &self,
        _request: Option<PaginatedRequestParams>,
        _context: RequestContext<RoleServer>,
    ) -> Result<ListToolsResult, ErrorData> {
        Ok(ListToolsResult::with_all_items(self.tools.as_ref().clone()))
    }

    async fn call_tool(
        &self,
        request: CallToolRequestParams,
        _context: RequestContext<RoleServer>,
    ) -> Result<CallToolResponse, ErrorData> {
        if request.name != "sha256" {
            return Err(ErrorData::invalid_params(format!("no tool `{}`", request.name), None));
        }
        let text = request
            .arguments
            .as_ref()
            .and_then(|arguments| arguments.get("text"))
            .and_then(Value::as_str)
            .ok_or_else(|| ErrorData::invalid_params("`text` (a string) is required", None))?;
        Ok(CallToolResult::success(vec![ContentBlock::text(hex_sha256(text))]).into())
    }
}

/// Runs the floor server (`mode` is `stdio` or `http`) until its client goes.
fn serve_floor(mode: &str) {
    let runtime = tokio::runtime::Builder::new_multi_thread().enable_all().build().unwrap();
    runtime.block_on(async {
        if mode == "stdio" {
            let running = Floor::new().serve(rmcp::transport::stdio_pipes()).await.expect("a session");
            let _ = running.waiting().await;
            return;
        }
        use rmcp::transport::streamable_http_server::session::local::LocalSessionManager;
        use rmcp::transport::streamable_http_server::{StreamableHttpServerConfig, StreamableHttpService};
        let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
        eprintln!("floor: serving MCP at http://{}/mcp", listener.local_addr().unwrap());
        let service: StreamableHttpService<Floor, LocalSessionManager> = StreamableHttpService::new(
            || Ok(Floor::new()),
            Arc::new(LocalSessionManager::default()),
            StreamableHttpServerConfig::default(),
        );
        loop {
            let (stream, _) = listener.accept().await.unwrap();
            let _ = stream.set_nodelay(true);
            let service = service.clone();
            tokio::spawn(async move {
                let handler = hyper::service::service_fn(move |request| {
                    let service = service.clone();
                    async move { Ok::<_, std::convert::Infallible>(service.handle(request).await) }
                });
                let _ = hyper::server::conn::http1::Builder::new()
                    .serve_connection(hyper_util::rt::TokioIo::new(stream), handler)
                    .await;
            });
        }
    });
}

fn floor_command(mode: &str) -> Command {
    let mut command = Command::new(std::env::current_exe().unwrap());
    command.env("TOOLHOST_BENCH_FLOOR", mode);
    command
}

fn toolhost_command(plugins: &Path, cache: &Path, http: bool) -> Command {
    let mut command = Command::new(env!("CARGO_BIN_EXE_toolhost"));
    // `[cache]` off: every `sha256` of the same text computes, as the floor's does.
    let config = common::computing_config_file(cache);
    command.args(["--plugins", &plugins.display().to_string(), "--config", &config.display().to_string()]);
    command.args(["serve", "--no-watch"]);
    if http {
        command.args(["--http", "127.0.0.1:0"]);
    }
    command.env("TOOLHOST_CACHE_DIR", cache).env_remove("TOOLHOST_CONFIG").env_remove("OTEL_EXPORTER_OTLP_ENDPOINT");
    command
}

// ------------------------------------------------------------- measurements

fn percentile(samples: &mut [Duration], q: f64) -> f64 {
    samples.sort();
    samples[((samples.len() as f64 - 1.0) * q).round() as usize].as_secs_f64() * 1e6
}

/// What one side measured over every round.
#[derive(Default)]
struct Side {
    samples: Vec<Duration>,
    calls: usize,
    busy: Duration,
}

impl Side {
    fn p50(&mut self) -> f64 {
        percentile(&mut self.samples, 0.5)
    }

    fn p99(&mut self) -> f64 {
        percentile(&mut self.samples, 0.99)
    }

    fn rate(&self) -> f64 {
        self.calls as f64 / self.busy.as_secs_f64()
    }
}

/// A line of the summary: a measured ratio beside its target.
struct Verdict {
    target: String,
    measured: String,
    met: Option<bool>,
}

fn verdict(target: &str, measured: String, met: bool) -> Verdict {
    Verdict { target: target.to_owned(), measured, met: Some(met) }
}

// --------------------------------------------------------- an MCP stdio client

/// An MCP server on stdio, driven one line at a time.
struct StdioServer {
    child: Child,
    stdin: ChildStdin,
    stdout: BufReader<ChildStdout>,
    next_id: u64,
    line: String,
}

impl StdioServer {
    fn start(name: &str, mut command: Command) -> StdioServer {
        let mut child = command
            .stdin(Stdio::piped())
            .stdout(Stdio::piped())
            .stderr(Stdio::null())
            .spawn()
            .unwrap_or_else(|err| panic!("{name} did not start: {err}"));
        let stdin = child.stdin.take().unwrap();
        let stdout = BufReader::new(child.stdout.take().unwrap());
        let mut server = StdioServer { child, stdin, stdout, next_id: 0, line: String::new() };
        writeln!(server.stdin, "{INITIALIZE}").unwrap();
        server.response();
        writeln!(server.stdin, "{INITIALIZED}").unwrap();
        server
    }

    fn send(&mut self, method: &str, params: &str) {
        self.next_id += 1;
        writeln!(self.stdin, r#"{{"jsonrpc":"2.0","id":{},"method":"{method}","params":{params}}}"#, self.next_id)
            .unwrap();
        self.stdin.flush().unwrap();
    }

    /// The next response (notifications are skipped).
    fn response(&mut self) -> &str {
        loop {
            self.line.clear();
            assert!(self.stdout.read_line(&mut self.line).unwrap() > 0, "the server closed its output");
            if self.line.contains(r#""id""#) && !self.line.contains(r#""method""#) {
                return &self.line;
            }
        }
    }

    fn call(&mut self, params: &str) -> &str {
        self.send("tools/call", params);
        self.response()
    }

    /// The tool this server names after `func` (Wassette prefixes an
    /// interface's functions with the interface's full name).
    fn tool(&mut self, func: &str) -> Option<String> {
        self.send("tools/list", "{}");
        let listed: Value = serde_json::from_str(self.response()).ok()?;
        listed["result"]["tools"]
            .as_array()?
            .iter()
            .filter_map(|tool| tool["name"].as_str())
            .find(|name| *name == func || name.ends_with(&format!("_{func}")))
            .map(str::to_owned)
    }

    /// One call at a time, `calls` of them, each timed.
    fn latency(&mut self, params: &str, expect: &str, calls: usize, side: &mut Side) {
        for _ in 0..calls {
            let started = Instant::now();
            let response = self.call(params);
            let took = started.elapsed();
            assert!(response.contains(expect), "{response}");
            side.samples.push(took);
        }
    }

    /// `calls` calls with `IN_FLIGHT` requests in flight.
    fn throughput(&mut self, params: &str, expect: &str, calls: usize, side: &mut Side) {
        let started = Instant::now();
        let mut sent = 0;
        while sent < IN_FLIGHT.min(calls) {
            self.send("tools/call", params);
            sent += 1;
        }
        for _ in 0..calls {
            let response = self.response();
            assert!(response.contains(expect), "{response}");
            if sent < calls {
                self.send("tools/call", params);
                sent += 1;
            }
        }
        side.busy += started.elapsed();
        side.calls += calls;
    }
}

impl Drop for StdioServer {
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}

/// Floor and toolhost over stdio, interleaved: (floor, toolhost) for latency
/// and for throughput.
fn compare_stdio(floor: &mut StdioServer, toolhost: &mut StdioServer, params: &str, expect: &str) -> [[Side; 2]; 2] {
    let mut latency = [Side::default(), Side::default()];
    let mut throughput = [Side::default(), Side::default()];
    let mut servers = [floor, toolhost];
    for server in servers.iter_mut() {
        server.latency(params, expect, WARMUP, &mut Side::default());
    }
    for round in 0..ROUNDS {
        for turn in 0..2 {
            let which = (round + turn) % 2;
            servers[which].latency(params, expect, MCP_PER_ROUND, &mut latency[which]);
        }
    }
    for round in 0..ROUNDS {
        for turn in 0..2 {
            let which = (round + turn) % 2;
            servers[which].throughput(params, expect, THROUGHPUT_PER_ROUND, &mut throughput[which]);
        }
    }
    [latency, throughput]
}

// ---------------------------------------------------------- an MCP HTTP client

struct HttpServer {
    child: Child,
    client: reqwest::Client,
    url: String,
    session: String,
}

impl HttpServer {
    /// Starts `command`, which says on stderr the URL it serves, and opens a session.
    async fn start(mut command: Command, announces: &str) -> HttpServer {
        let mut child = command.stdin(Stdio::null()).stdout(Stdio::null()).stderr(Stdio::piped()).spawn().unwrap();
        let mut stderr = BufReader::new(child.stderr.take().unwrap());
        let mut line = String::new();
        let url = loop {
            line.clear();
            assert!(stderr.read_line(&mut line).unwrap() > 0, "the HTTP server did not start");
            if let Some(url) = line.trim().strip_prefix(announces) {
                break url.to_owned();
            }
        };
        // The rest of stderr is drained, so that the server never blocks on it.
        std::thread::spawn(move || std::io::copy(&mut stderr, &mut std::io::sink()));
        let client = reqwest::Client::builder().pool_max_idle_per_host(IN_FLIGHT).build().unwrap();
        let mut server = HttpServer { child, client, url, session: String::new() };
        let response = server.post(INITIALIZE.to_owned()).send().await.unwrap();
        server.session = response.headers()["mcp-session-id"].to_str().unwrap().to_owned();
        response.bytes().await.unwrap();
        server.post(INITIALIZED.to_owned()).send().await.unwrap().bytes().await.unwrap();
        server
    }

    fn post(&self, body: String) -> reqwest::RequestBuilder {
        let mut request = self
            .client
            .post(&self.url)
            .header("content-type", "application/json")
            .header("accept", "application/json, text/event-stream")
            .header("mcp-protocol-version", "2025-11-25")
            .body(body);
        if !self.session.is_empty() {
            request = request.header("mcp-session-id", &self.session);
        }
        request
    }

    async fn call(&self, id: usize, params: &str) -> String {
        let body = format!(r#"{{"jsonrpc":"2.0","id":{id},"method":"tools/call","params":{params}}}"#);
        self.post(body).send().await.unwrap().text().await.unwrap()
    }

    async fn latency(&self, params: &str, expect: &str, calls: usize, side: &mut Side) {
        for id in 0..calls {
            let started = Instant::now();
            let body = self.call(id + 1, params).await;
            let took = started.elapsed();
            assert!(body.contains(expect), "{body}");
            side.samples.push(took);
        }
    }

    async fn throughput(self: &Arc<Self>, params: &str, expect: &str, calls: usize, side: &mut Side) {
        let issued = Arc::new(AtomicUsize::new(0));
        let started = Instant::now();
        let mut tasks = tokio::task::JoinSet::new();
        for _ in 0..IN_FLIGHT {
            let (server, issued, params, expect) = (self.clone(), issued.clone(), params.to_owned(), expect.to_owned());
            tasks.spawn(async move {
                loop {
                    let id = issued.fetch_add(1, Ordering::Relaxed);
                    if id >= calls {
                        break;
                    }
                    let body = server.call(id + 1, &params).await;
                    assert!(body.contains(&expect), "{body}");
                }
            });
        }
        while let Some(done) = tasks.join_next().await {
            done.unwrap();
        }
        side.busy += started.elapsed();
        side.calls += calls;
    }
}

impl Drop for HttpServer {
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}

async fn compare_http(floor: HttpServer, toolhost: HttpServer, params: &str, expect: &str) -> [[Side; 2]; 2] {
    let mut latency = [Side::default(), Side::default()];
    let mut throughput = [Side::default(), Side::default()];
    let servers = [Arc::new(floor), Arc::new(toolhost)];
    for server in &servers {
        server.latency(params, expect, WARMUP, &mut Side::default()).await;
    }
    for round in 0..ROUNDS {
        for turn in 0..2 {
            let which = (round + turn) % 2;
            servers[which].latency(params, expect, MCP_PER_ROUND, &mut latency[which]).await;
        }
    }
    for round in 0..ROUNDS {
        for turn in 0..2 {
            let which = (round + turn) % 2;
            servers[which].throughput(params, expect, THROUGHPUT_PER_ROUND, &mut throughput[which]).await;
        }
    }
    [latency, throughput]
}

// ------------------------------------------------------------------- the rest

fn plugins_dir(name: &str) -> PathBuf {
    let dir = Path::new(env!("CARGO_MANIFEST_DIR")).join("../plugins").join(name);
    assert!(dir.join(".").is_dir(), "run `bash plugins/build.sh` first");
    dir
}

/// A folder holding copies of `files` of plugins/`from`.
fn folder_of(from: &str, files: &[&str]) -> tempfile::TempDir {
    let dir = tempfile::tempdir().unwrap();
    for file in files {
        let source = plugins_dir(from).join(file);
        assert!(source.is_file(), "{} is missing: run `bash plugins/build.sh` first", source.display());
        std::fs::copy(source, dir.path().join(file)).unwrap();
    }
    dir
}

/// Median wall time of whole `toolhost ARGS` processes.
fn whole_process(plugins: &Path, cache: &Path, args: &[&str], expect: &str) -> f64 {
    let mut samples = Vec::with_capacity(PROCESS_RUNS);
    for _ in 0..PROCESS_RUNS {
        let started = Instant::now();
        let output = Command::new(env!("CARGO_BIN_EXE_toolhost"))
            .arg("--plugins")
            .arg(plugins)
            .args(args)
            .env("TOOLHOST_CACHE_DIR", cache)
            .env_remove("TOOLHOST_CONFIG")
            .env_remove("OTEL_EXPORTER_OTLP_ENDPOINT")
            .current_dir(plugins)
            .output()
            .unwrap();
        samples.push(started.elapsed());
        assert!(output.status.success(), "{}", String::from_utf8_lossy(&output.stderr));
        assert!(String::from_utf8_lossy(&output.stdout).contains(expect));
    }
    percentile(&mut samples, 0.5) / 1000.0
}

fn machine() -> String {
    let cpuinfo = std::fs::read_to_string("/proc/cpuinfo").unwrap_or_default();
    let model = cpuinfo
        .lines()
        .find_map(|line| line.strip_prefix("model name"))
        .map_or("", |rest| rest.trim_start_matches([' ', '\t', ':']));
    let cores = std::thread::available_parallelism().map_or(1, |n| n.get());
    let load = std::fs::read_to_string("/proc/loadavg").unwrap_or_default();
    let load = load.split_whitespace().take(3).collect::<Vec<_>>().join(" ");
    format!("{model}, {cores} cores, load average {load} at the start")
}

fn table(title: &str, names: [&str; 2], latency: &mut [Side; 2], throughput: &[Side; 2]) {
    println!("\n### {title}\n");
    println!("| {:<22} | p50 (µs) | p99 (µs) | calls/s, {IN_FLIGHT} in flight |", "");
    println!("|{:-<24}|---------:|---------:|---------------------:|", "");
    for which in 0..2 {
        println!(
            "| {:<22} | {:>8.1} | {:>8.1} | {:>20.0} |",
            names[which],
            latency[which].p50(),
            latency[which].p99(),
            throughput[which].rate()
        );
    }
}

fn main() {
    if let Ok(mode) = std::env::var("TOOLHOST_BENCH_FLOOR") {
        serve_floor(&mode);
        return;
    }
    // Plugins compile in bounded worker processes, as in the `toolhost` program.
    toolhost::serve_workers();
    let _ = rustls::crypto::ring::default_provider().install_default();
    if let Ok(path) = std::env::var("TOOLHOST_BENCH_PROFILE") {
        profile(&path);
        return;
    }
    println!("## the hot path, interleaved ({ROUNDS} rounds, each side's turn alternating)\n");
    println!("{}", machine());
    let mut verdicts = Vec::new();
    let runtime = tokio::runtime::Builder::new_multi_thread().enable_all().build().unwrap();
    let cache = tempfile::tempdir().unwrap();
    let plugins = folder_of("dist", &["echo.wasm", "hash.wasm"]);

    // Host::call against bare wasmtime.
    let host = runtime.block_on(async {
        let host = Host::new(common::computing(cache.path())).unwrap();
        host.load_dir(plugins.path()).await.unwrap();
        host
    });
    let wasm = std::fs::read(plugins.path().join("echo.wasm")).unwrap();
    let (engine, pre) = bare_wasmtime::bare_setup(
        &wasm,
        toolhost::runtime::engine::Flavor::of_wasm(&wasm),
        host.resets_dirty_pages_only(),
    );
    let mut sides = [Side::default(), Side::default()];
    let none = LimitOverrides::default();
    for round in 0..=ROUNDS {
        // Round 0 warms both up and is not counted.
        let calls = if round == 0 { IN_PROCESS_PER_ROUND / 4 } else { IN_PROCESS_PER_ROUND };
        for turn in 0..2 {
            let which = (round + turn) % 2;
            let mut samples = Vec::with_capacity(calls);
            if which == 0 {
                for _ in 0..calls {
                    let started = Instant::now();
                    bare_wasmtime::bare_call(&engine, &pre);
                    samples.push(started.elapsed());
                }
            } else {
                runtime.block_on(async {
                    for _ in 0..calls {
                        let started = Instant::now();
                        let report = host.call("echo", bare_wasmtime::ARGS, &none).await;
                        samples.push(started.elapsed());
                        assert!(report.outcome.is_ok(), "{:?}", report.outcome);
                    }
                });
            }
            if round > 0 {
                sides[which].samples.extend(samples);
            }
        }
    }
    println!("\n### `Host::call` on echo against bare wasmtime (same pool, same component)\n");
    println!("| {:<22} | p50 (µs) | p99 (µs) |", "");
    println!("|{:-<24}|---------:|---------:|", "");
    for (which, name) in ["bare wasmtime", "toolhost Host::call"].iter().enumerate() {
        println!("| {name:<22} | {:>8.2} | {:>8.2} |", sides[which].p50(), sides[which].p99());
    }
    let ratio = sides[1].p50() / sides[0].p50();
    verdicts.push(verdict("`Host::call` p50 ≤ 1.3x bare wasmtime", format!("{ratio:.2}x"), ratio <= 1.3));
    drop(host);

    // `serve` against the floor, stdio then HTTP.
    let digest = hex_sha256(TEXT);
    let params = format!(r#"{{"name":"sha256","arguments":{{"text":"{TEXT}"}}}}"#);
    let names = ["native MCP server", "toolhost serve"];
    {
        let mut floor = StdioServer::start("the floor", floor_command("stdio"));
        let mut toolhost = StdioServer::start("toolhost serve", toolhost_command(plugins.path(), cache.path(), false));
        let [mut latency, throughput] = compare_stdio(&mut floor, &mut toolhost, &params, &digest);
        table("`sha256` over MCP stdio", names, &mut latency, &throughput);
        let per_call = latency[1].p50() / latency[0].p50();
        let rate = throughput[1].rate() / throughput[0].rate();
        verdicts.push(verdict("`serve` stdio p50 ≤ 2x the floor", format!("{per_call:.2}x"), per_call <= 2.0));
        verdicts.push(verdict("`serve` stdio calls/s ≥ 0.5x the floor", format!("{rate:.2}x"), rate >= 0.5));
    }
    runtime.block_on(async {
        let floor = HttpServer::start(floor_command("http"), "floor: serving MCP at ").await;
        let toolhost =
            HttpServer::start(toolhost_command(plugins.path(), cache.path(), true), "toolhost: serving MCP at ").await;
        let [mut latency, throughput] = compare_http(floor, toolhost, &params, &digest).await;
        table("`sha256` over MCP HTTP (one session, kept-alive connections)", names, &mut latency, &throughput);
        let per_call = latency[1].p50() / latency[0].p50();
        let rate = throughput[1].rate() / throughput[0].rate();
        verdicts.push(verdict("`serve --http` p50 ≤ 2x the floor", format!("{per_call:.2}x"), per_call <= 2.0));
        verdicts.push(verdict("`serve --http` calls/s ≥ 0.5x the floor", format!("{rate:.2}x"), rate >= 0.5));
    });

    // A whole `toolhost call` process, warm cache, the bundled plugins.
    let dist = plugins_dir("dist");
    let process_cache = tempfile::tempdir().unwrap();
    let args = ["call", "sha256", &format!(r#"{{"text":"{TEXT}"}}"#)];
    let first = whole_process(&dist, process_cache.path(), &args, &digest);
    let warm = whole_process(&dist, process_cache.path(), &args, &digest);
    println!("\n### a whole `toolhost call sha256` process, bundled plugins (median of {PROCESS_RUNS})\n");
    println!("first runs (filling the cache): {first:.1} ms; warm cache: {warm:.1} ms");
    verdicts.push(verdict("warm `toolhost call sha256` ≤ 10 ms", format!("{warm:.1} ms"), warm <= 10.0));

    // Beside Wassette, where it runs.
    let installer = Path::new(env!("CARGO_MANIFEST_DIR")).join("benches/wassette.sh");
    let installed = Command::new("bash").arg(&installer).stderr(Stdio::null()).output();
    match installed {
        Ok(out) if out.status.success() => {
            let wassette = PathBuf::from(String::from_utf8_lossy(&out.stdout).trim().to_owned());
            beside_wassette(&wassette, &cache, &mut verdicts);
        }
        Ok(out) => {
            let why = String::from_utf8_lossy(&out.stderr).lines().last().unwrap_or("").to_owned();
            verdicts.push(Verdict {
                target: "≥ 2x Wassette per call, ≥ 4x calls/s".to_owned(),
                measured: format!("not run: host/benches/wassette.sh failed ({why})"),
                met: None,
            });
        }
        Err(err) => verdicts.push(Verdict {
            target: "≥ 2x Wassette per call, ≥ 4x calls/s".to_owned(),
            measured: format!("not run: could not run bash: {err}"),
            met: None,
        }),
    }

    println!("\n### targets\n");
    println!("| target | measured | |");
    println!("|---|---:|---|");
    for verdict in &verdicts {
        let met = match verdict.met {
            Some(true) => "met",
            Some(false) => "NOT met",
            None => "not measured",
        };
        println!("| {} | {} | {met} |", verdict.target, verdict.measured);
    }
}

/// One path alone, for `perf record` (with `--inherit`, the default, the
/// `serve` child is recorded too) and for what a call costs in processor
/// time: `host-call` (echo through `Host::call`, one after another), `bare`
/// (the same with bare wasmtime), `stdio` or `http` (`sha256` through
/// `serve`, 16 in flight), `floor-stdio` (the floor, the same way).
/// `TOOLHOST_BENCH_CALLS` calls (100,000 unless set). Prints the calls/s
/// and the processor time per call of this process (the client, or the
/// in-process host) and of the server child, measured over the calls alone.
fn profile(path: &str) {
    let calls = std::env::var("TOOLHOST_BENCH_CALLS").ok().and_then(|n| n.parse().ok()).unwrap_or(100_000);
    let cache = tempfile::tempdir().unwrap();
    let plugins = folder_of("dist", &["echo.wasm", "hash.wasm"]);
    let runtime = tokio::runtime::Builder::new_multi_thread().enable_all().build().unwrap();
    let digest = hex_sha256(TEXT);
    let params = format!(r#"{{"name":"sha256","arguments":{{"text":"{TEXT}"}}}}"#);
    let mut side = Side::default();
    let here = Path::new("/proc/self/stat");
    let mut server_pid = None;
    let mut cpu = [Duration::ZERO; 2];
    let mut measure = |server: Option<u32>, run: &mut dyn FnMut()| {
        let server = server.map(|pid| PathBuf::from(format!("/proc/{pid}/stat")));
        let server_time = || server.as_deref().map(common::cpu_time).unwrap_or_default();
        let before = [common::cpu_time(here), server_time()];
        run();
        cpu = [common::cpu_time(here) - before[0], server_time() - before[1]];
    };
    match path {
        "host-call" => {
            let host = runtime.block_on(async {
                let host = Host::new(common::computing(cache.path())).unwrap();
                host.load_dir(plugins.path()).await.unwrap();
                host
            });
            measure(None, &mut || {
                runtime.block_on(async {
                    let started = Instant::now();
                    for _ in 0..calls {
                        let report = host.call("echo", bare_wasmtime::ARGS, &LimitOverrides::default()).await;
                        assert!(report.outcome.is_ok());
                    }
                    side.busy = started.elapsed();
                    side.calls = calls;
                })
            });
        }
        "bare" => {
            let wasm = std::fs::read(plugins.path().join("echo.wasm")).unwrap();
            let host = Host::new(common::computing(cache.path())).unwrap();
            let flavor = toolhost::runtime::engine::Flavor::of_wasm(&wasm);
            let (engine, pre) = bare_wasmtime::bare_setup(&wasm, flavor, host.resets_dirty_pages_only());
            measure(None, &mut || {
                let started = Instant::now();
                for _ in 0..calls {
                    bare_wasmtime::bare_call(&engine, &pre);
                }
                side.busy = started.elapsed();
                side.calls = calls;
            });
        }
        "stdio" | "floor-stdio" => {
            let mut server = if path == "stdio" {
                StdioServer::start("toolhost serve", toolhost_command(plugins.path(), cache.path(), false))
            } else {
                StdioServer::start("the floor", floor_command("stdio"))
            };
            server_pid = Some(server.child.id());
            measure(server_pid, &mut || server.throughput(&params, &digest, calls, &mut side));
        }
        "http" => runtime.block_on(async {
            let server =
                HttpServer::start(toolhost_command(plugins.path(), cache.path(), true), "toolhost: serving MCP at ")
                    .await;
            Arc::new(server).throughput(&params, &digest, calls, &mut side).await;
        }),
        other => panic!("TOOLHOST_BENCH_PROFILE: no path `{other}` (host-call, bare, stdio, floor-stdio, http)"),
    }
    let per_call = |time: Duration| time.as_secs_f64() * 1e6 / calls as f64;
    print!("{path}: {calls} calls, {:.0} calls/s", side.rate());
    if path != "http" {
        print!(", {:.1} µs of processor time a call in this process", per_call(cpu[0]));
    }
    if server_pid.is_some() {
        print!(" and {:.1} µs in the server ({:.1} µs in all)", per_call(cpu[1]), per_call(cpu[0] + cpu[1]));
    }
    println!();
}

/// toolhost and Wassette serving `typed_shop` over stdio, interleaved.
fn beside_wassette(wassette: &Path, cache: &tempfile::TempDir, verdicts: &mut Vec<Verdict>) {
    // Built without wasi:config, which Wassette 0.8 does not provide.
    let shop = folder_of("dist-peer", &["typed_shop.wasm"]);
    let data = tempfile::tempdir().unwrap();
    let wasm = shop.path().join("typed_shop.wasm");
    let load = Command::new(wassette)
        .args(["component", "load", &format!("file://{}", wasm.display())])
        .env("XDG_DATA_HOME", data.path())
        .env("XDG_CONFIG_HOME", data.path())
        .output();
    if !load.as_ref().is_ok_and(|out| out.status.success()) {
        // One line: the innermost cause Wassette gives that names an import, or its first line.
        let why = load.map_or_else(
            |err| err.to_string(),
            |out| {
                let stderr = String::from_utf8_lossy(&out.stderr).into_owned();
                let lines: Vec<&str> = stderr.lines().map(str::trim).filter(|line| !line.is_empty()).collect();
                let cause = lines.iter().find(|line| line.contains("imports")).or(lines.first()).copied();
                cause
                    .unwrap_or("no reason given")
                    .trim_start_matches(|c: char| c.is_ascii_digit() || c == ':')
                    .trim()
                    .to_owned()
            },
        );
        verdicts.push(Verdict {
            target: "≥ 2x Wassette per call, ≥ 4x calls/s".to_owned(),
            measured: format!("not run: Wassette did not load the component ({why})"),
            met: None,
        });
        return;
    }
    let mut command = Command::new(wassette);
    command.arg("run").env("XDG_DATA_HOME", data.path()).env("XDG_CONFIG_HOME", data.path());
    let mut theirs = StdioServer::start("Wassette", command);
    // Wassette loads its components in the background after it starts.
    let deadline = Instant::now() + Duration::from_secs(30);
    let their_tool = loop {
        if let Some(tool) = theirs.tool("get-item") {
            break tool;
        }
        assert!(Instant::now() < deadline, "Wassette did not load the component within 30 s");
        std::thread::sleep(Duration::from_millis(100));
    };
    let mut ours = StdioServer::start("toolhost serve", toolhost_command(shop.path(), cache.path(), false));
    let our_tool = ours.tool("get-item").expect("toolhost lists get-item");
    let their_params = format!(r#"{{"name":"{their_tool}","arguments":{{"sku":"A-1"}}}}"#);
    let our_params = format!(r#"{{"name":"{our_tool}","arguments":{{"sku":"A-1"}}}}"#);
    let mut latency = [Side::default(), Side::default()];
    let mut throughput = [Side::default(), Side::default()];
    theirs.latency(&their_params, "Anvil", WARMUP, &mut Side::default());
    ours.latency(&our_params, "Anvil", WARMUP, &mut Side::default());
    for round in 0..ROUNDS {
        for turn in 0..2 {
            match (round + turn) % 2 {
                0 => theirs.latency(&their_params, "Anvil", MCP_PER_ROUND, &mut latency[0]),
                _ => ours.latency(&our_params, "Anvil", MCP_PER_ROUND, &mut latency[1]),
            }
        }
    }
    for round in 0..ROUNDS {
        for turn in 0..2 {
            match (round + turn) % 2 {
                0 => theirs.throughput(&their_params, "Anvil", THROUGHPUT_PER_ROUND / 4, &mut throughput[0]),
                _ => ours.throughput(&our_params, "Anvil", THROUGHPUT_PER_ROUND / 4, &mut throughput[1]),
            }
        }
    }
    table(
        "`typed_shop` `get-item` over MCP stdio, beside Wassette 0.8",
        ["Wassette", "toolhost serve"],
        &mut latency,
        &throughput,
    );
    let per_call = latency[0].p50() / latency[1].p50();
    let rate = throughput[1].rate() / throughput[0].rate();
    verdicts.push(verdict("≥ 2x Wassette per call (p50)", format!("{per_call:.2}x"), per_call >= 2.0));
    verdicts.push(verdict("≥ 4x Wassette's calls/s", format!("{rate:.2}x"), rate >= 4.0));
}

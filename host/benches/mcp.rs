//! The MCP round trip of a trivial call, beside `Host::call`, in one run.
//!
//! Run with `cargo bench -p toolhost --bench mcp` after `bash plugins/build.sh`.
//! It prints p50/p99 of the `echo` tool called
//! - in process through `Host::call`;
//! - through `toolhost serve` over stdio (JSON-RPC lines on a pipe, one
//!   request in flight at a time, from writing the request to reading its
//!   response);
//! - through `toolhost serve --http` (a POST per call on one kept-alive
//!   connection, in a 2025-11-25 session).
//!
//! Then the two MCP round trips again with the CPUs kept awake by two
//! lowest-priority busy loops: on a virtual machine an idle vCPU halts, and
//! waking it costs tens of µs at each of the round trip's two hand-offs
//! between processes. The difference between the two runs is that wake-up,
//! not toolhost.
//!
//! Figures go to BENCHMARKS.md; nothing here asserts a time.

use std::io::{BufRead, BufReader, Write};
use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};
use std::time::{Duration, Instant};
use toolhost::{Config, Host, LimitOverrides};

const ITERATIONS: usize = 2_000;
const WARMUP: usize = 200;

fn plugins_dir() -> PathBuf {
    let dir = Path::new(env!("CARGO_MANIFEST_DIR")).join("../plugins/dist");
    assert!(dir.join("echo.wasm").is_file(), "run `bash plugins/build.sh` first");
    dir
}

fn report(name: &str, mut samples: Vec<Duration>) -> f64 {
    samples.sort();
    let at = |q: f64| samples[((samples.len() as f64 * q) as usize).min(samples.len() - 1)].as_secs_f64() * 1e6;
    let mean = samples.iter().map(Duration::as_secs_f64).sum::<f64>() / samples.len() as f64 * 1e6;
    println!("| {name:<28} | {:>8.2} | {:>8.2} | {:>8.2} |", at(0.5), at(0.99), mean);
    at(0.5)
}

fn call_request(id: usize) -> String {
    format!(
        r#"{{"jsonrpc":"2.0","id":{id},"method":"tools/call","params":{{"name":"echo","arguments":{{"text":"hello, world"}}}}}}"#
    )
}

const INITIALIZE: &str = r#"{"jsonrpc":"2.0","id":0,"method":"initialize","params":{"protocolVersion":"2025-11-25","capabilities":{},"clientInfo":{"name":"bench","version":"1"}}}"#;
const INITIALIZED: &str = r#"{"jsonrpc":"2.0","method":"notifications/initialized"}"#;

fn echo_only() -> tempfile::TempDir {
    let dir = tempfile::tempdir().unwrap();
    std::fs::copy(plugins_dir().join("echo.wasm"), dir.path().join("echo.wasm")).unwrap();
    dir
}

fn stdio(dir: &Path, cache: &Path) -> Vec<Duration> {
    let mut child = Command::new(env!("CARGO_BIN_EXE_toolhost"))
        .args(["--plugins", &dir.display().to_string(), "serve", "--no-watch"])
        .env("TOOLHOST_CACHE_DIR", cache)
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .stderr(Stdio::inherit())
        .spawn()
        .unwrap();
    let mut stdin = child.stdin.take().unwrap();
    let mut stdout = BufReader::new(child.stdout.take().unwrap());
    let mut line = String::new();
    writeln!(stdin, "{INITIALIZE}").unwrap();
    stdout.read_line(&mut line).unwrap();
    writeln!(stdin, "{INITIALIZED}").unwrap();
    let mut samples = Vec::with_capacity(ITERATIONS);
    for id in 1..=WARMUP + ITERATIONS {
        let request = call_request(id);
        let started = Instant::now();
        writeln!(stdin, "{request}").unwrap();
        stdin.flush().unwrap();
        line.clear();
        stdout.read_line(&mut line).unwrap();
        let took = started.elapsed();
        assert!(line.contains("hello, world"), "{line}");
        if id > WARMUP {
            samples.push(took);
        }
    }
    drop(stdin);
    let _ = child.wait();
    samples
}

async fn http(dir: &Path, cache: &Path) -> Vec<Duration> {
    let mut child = Command::new(env!("CARGO_BIN_EXE_toolhost"))
        .args(["--plugins", &dir.display().to_string(), "serve", "--no-watch", "--http", "127.0.0.1:0"])
        .env("TOOLHOST_CACHE_DIR", cache)
        .stdin(Stdio::null())
        .stdout(Stdio::null())
        .stderr(Stdio::piped())
        .spawn()
        .unwrap();
    let mut stderr = BufReader::new(child.stderr.take().unwrap());
    let mut line = String::new();
    let url = loop {
        line.clear();
        assert!(stderr.read_line(&mut line).unwrap() > 0, "serve --http did not start");
        if let Some(url) = line.trim().strip_prefix("toolhost: serving MCP at ") {
            break url.to_owned();
        }
    };
    let client = reqwest::Client::new();
    let post = |body: String, session: Option<&str>| {
        let mut request = client
            .post(&url)
            .header("content-type", "application/json")
            .header("accept", "application/json, text/event-stream")
            .header("mcp-protocol-version", "2025-11-25")
            .body(body);
        if let Some(session) = session {
            request = request.header("mcp-session-id", session);
        }
        request.send()
    };
    let response = post(INITIALIZE.to_owned(), None).await.unwrap();
    let session = response.headers()["mcp-session-id"].to_str().unwrap().to_owned();
    response.bytes().await.unwrap();
    post(INITIALIZED.to_owned(), Some(&session)).await.unwrap().bytes().await.unwrap();
    let mut samples = Vec::with_capacity(ITERATIONS);
    for id in 1..=WARMUP + ITERATIONS {
        let started = Instant::now();
        let body = post(call_request(id), Some(&session)).await.unwrap().bytes().await.unwrap();
        let took = started.elapsed();
        assert!(String::from_utf8_lossy(&body).contains("hello, world"));
        if id > WARMUP {
            samples.push(took);
        }
    }
    let _ = child.kill();
    let _ = child.wait();
    samples
}

fn main() {
    let _ = rustls::crypto::ring::default_provider().install_default();
    let runtime = tokio::runtime::Builder::new_multi_thread().enable_all().build().unwrap();
    let cache = tempfile::tempdir().unwrap();
    let dir = echo_only();
    let host = runtime.block_on(async {
        let host = Host::new(Config { cache_dir: Some(cache.path().to_owned()), ..Config::default() }).unwrap();
        host.load_dir(dir.path()).await.unwrap();
        host
    });
    let none = LimitOverrides::default();
    let mut direct = Vec::with_capacity(ITERATIONS);
    for i in 0..WARMUP + ITERATIONS {
        let started = Instant::now();
        let report = runtime.block_on(host.call("echo", r#"{"text":"hello, world"}"#, &none));
        let took = started.elapsed();
        assert!(report.outcome.is_ok());
        if i >= WARMUP {
            direct.push(took);
        }
    }
    println!("| µs                           |      p50 |      p99 |     mean |");
    println!("|------------------------------|---------:|---------:|---------:|");
    let base = report("Host::call (in process)", direct);
    let stdio_p50 = report("MCP over stdio", stdio(dir.path(), cache.path()));
    let http_p50 = report("MCP over HTTP", runtime.block_on(http(dir.path(), cache.path())));
    println!();
    println!("MCP overhead at p50: stdio {:.2} µs, HTTP {:.2} µs", stdio_p50 - base, http_p50 - base);

    println!("\nwith both CPUs kept awake (two `nice -n 19` busy loops):\n");
    let spinners: Vec<_> = (0..2)
        .map(|_| Command::new("nice").args(["-n", "19", "sh", "-c", "while :; do :; done"]).spawn().unwrap())
        .collect();
    println!("| µs                           |      p50 |      p99 |     mean |");
    println!("|------------------------------|---------:|---------:|---------:|");
    let awake_stdio = report("MCP over stdio", stdio(dir.path(), cache.path()));
    let awake_http = report("MCP over HTTP", runtime.block_on(http(dir.path(), cache.path())));
    for mut spinner in spinners {
        let _ = spinner.kill();
        let _ = spinner.wait();
    }
    println!();
    println!("MCP overhead at p50, CPUs awake: stdio {:.2} µs, HTTP {:.2} µs", awake_stdio - base, awake_http - base);
    println!(
        "target: stdio overhead ≤ 50 µs p50   measured {:.2} µs idle, {:.2} µs with the CPUs awake",
        stdio_p50 - base,
        awake_stdio - base
    );
}

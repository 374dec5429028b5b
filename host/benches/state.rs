//! What `[state] url` costs: the round trip of a call and of a task through
//! `toolhost serve --http`, with the state in the process (the default) and
//! in Debian's redis-server on loopback (installed by `tests/state/redis.sh`).
//!
//! Run with `cargo bench -p toolhost --bench state` after `bash plugins/build.sh`.
//! It prints p50/p99 of
//! - a call: one 2026-07-28 `tools/call` of `echo` (under a `[quotas]` rate
//!   and cap, so that each call is admitted by the backend), POSTed on a
//!   kept-alive connection until its response is read;
//! - a task created: `slow_echo` (from the `mcp_conformance` test plugin,
//!   sleeping 100 ms so that it is still running) called by a client that
//!   declares the tasks extension, until its `CreateTaskResult` is read (with
//!   a store, the task's record is written before that answer);
//! - a `tasks/get` of that running task on the replica running it (answered
//!   from memory, store or not), and with a store on a second replica
//!   (answered from the store's record);
//! - a `ping` in a 2025-11-25 session on the replica that opened it (with a
//!   store, every request of a session looks its record up first), and with
//!   a store on a second replica (which restored the session from its record
//!   on the first one, not measured).
//!
//! Each task is waited for (not measured) before the next; `max_tasks` is
//! raised so that the 1,100 tasks kept for their TTL all become tasks.
//!
//! `STATE_BENCH_SESSIONS_ONLY=1` measures the sessions alone.
//!
//! Figures go to BENCHMARKS.md; nothing here asserts a time.

use serde_json::{Value, json};
use std::io::{BufRead, BufReader, Read, Write};
use std::net::{TcpListener, TcpStream};
use std::path::{Path, PathBuf};
use std::process::{Child, Command, Stdio};
use std::time::{Duration, Instant};

const ITERATIONS: usize = 1_000;
const WARMUP: usize = 100;

/// `STATE_BENCH_ITERATIONS` (for a quick look), else [`ITERATIONS`].
fn iterations() -> usize {
    std::env::var("STATE_BENCH_ITERATIONS").ok().and_then(|n| n.parse().ok()).unwrap_or(ITERATIONS)
}

fn repository() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("..")
}

fn report(name: &str, mut samples: Vec<Duration>) {
    samples.sort();
    let at = |q: f64| samples[((samples.len() as f64 * q) as usize).min(samples.len() - 1)].as_secs_f64() * 1e6;
    let mean = samples.iter().map(Duration::as_secs_f64).sum::<f64>() / samples.len() as f64 * 1e6;
    println!("| {name:<38} | {:>8.1} | {:>8.1} | {:>8.1} |", at(0.5), at(0.99), mean);
}

/// Debian's redis-server on a free loopback port, killed when dropped.
struct Redis(Child, u16);

impl Drop for Redis {
    fn drop(&mut self) {
        let _ = self.0.kill();
        let _ = self.0.wait();
    }
}

fn redis() -> Redis {
    let status = Command::new("bash").arg(repository().join("tests/state/redis.sh")).status().unwrap();
    assert!(status.success(), "tests/state/redis.sh failed");
    let root = repository().join("tests/state/.tools/redis");
    let port = TcpListener::bind("127.0.0.1:0").unwrap().local_addr().unwrap().port();
    let child = Command::new(root.join("usr/bin/redis-server"))
        .args(["--bind", "127.0.0.1", "--port", &port.to_string(), "--save", "", "--appendonly", "no"])
        .env("LD_LIBRARY_PATH", root.join(format!("usr/lib/{}-linux-gnu", std::env::consts::ARCH)))
        .stdout(Stdio::null())
        .spawn()
        .unwrap();
    let deadline = Instant::now() + Duration::from_secs(10);
    while TcpStream::connect(("127.0.0.1", port)).is_err() {
        assert!(Instant::now() < deadline, "redis-server did not start");
        std::thread::sleep(Duration::from_millis(20));
    }
    Redis(child, port)
}

/// A `toolhost serve --http`, killed when dropped.
struct Serving(Child);

impl Drop for Serving {
    fn drop(&mut self) {
        let _ = self.0.kill();
        let _ = self.0.wait();
    }
}

/// `toolhost serve --http` of `echo` with `state` (a `[state]` table or
/// nothing); its address.
fn serve(state: &str, folder: &Path) -> (Serving, String) {
    std::fs::copy(repository().join("plugins/dist/echo.wasm"), folder.join("echo.wasm"))
        .expect("bash plugins/build.sh first");
    std::fs::copy(repository().join("plugins/dist-test/mcp_conformance.wasm"), folder.join("mcp_conformance.wasm"))
        .expect("bash plugins/build.sh first");
    let config = folder.join("toolhost.toml");
    std::fs::write(
        &config,
        format!(
            "{state}\n[quotas]\ntools = {{ echo = {{ rate = \"1000000/s\", concurrency = 1000 }} }}\n\
             [serve.tasks]\ntools = {{ slow_echo = \"optional\" }}\npoll_interval = \"10ms\"\n\
             max_tasks = 10000\nmax_tasks_per_requestor = 10000\n"
        ),
    )
    .unwrap();
    let mut child = Serving(
        Command::new(env!("CARGO_BIN_EXE_toolhost"))
            .arg("--plugins")
            .arg(folder)
            .arg("--config")
            .arg(&config)
            .args(["serve", "--no-watch", "--http", "127.0.0.1:0"])
            .env("TOOLHOST_CACHE_DIR", folder.join("cache"))
            .stdin(Stdio::null())
            .stdout(Stdio::null())
            .stderr(Stdio::piped())
            .spawn()
            .unwrap(),
    );
    let mut stderr = BufReader::new(child.0.stderr.take().unwrap());
    let mut line = String::new();
    loop {
        line.clear();
        assert!(stderr.read_line(&mut line).unwrap_or(0) > 0, "serve --http did not start");
        if let Some(url) = line.trim().strip_prefix("toolhost: serving MCP at http://") {
            let address = url.trim_end_matches("/mcp").to_owned();
            std::thread::spawn(move || std::io::copy(&mut stderr, &mut std::io::sink()));
            return (child, address);
        }
    }
}

/// One POST on a kept-alive connection; the JSON-RPC message it answers.
fn post(stream: &mut TcpStream, address: &str, method: &str, name: &str, params: Value, tasks: bool) -> Value {
    let mut params = params;
    let capabilities = if tasks { json!({"extensions": {"io.modelcontextprotocol/tasks": {}}}) } else { json!({}) };
    params["_meta"] = json!({
        "io.modelcontextprotocol/protocolVersion": "2026-07-28",
        "io.modelcontextprotocol/clientCapabilities": capabilities,
        "io.modelcontextprotocol/clientInfo": { "name": "bench", "version": "1" }
    });
    let body = json!({"jsonrpc": "2.0", "id": 1, "method": method, "params": params}).to_string();
    let head = format!(
        "POST /mcp HTTP/1.1\r\nHost: {address}\r\nContent-Type: application/json\r\n\
         Accept: application/json, text/event-stream\r\nMCP-Protocol-Version: 2026-07-28\r\nMcp-Method: {method}\r\n\
         Mcp-Name: {name}\r\nContent-Length: {}\r\n\r\n",
        body.len()
    );
    stream.write_all(head.as_bytes()).unwrap();
    stream.write_all(body.as_bytes()).unwrap();
    read_response(stream)
}

/// Reads one HTTP/1.1 response (Content-Length or chunked) and returns the
/// last JSON-RPC message in it.
fn read_response(stream: &mut TcpStream) -> Value {
    let mut reader = BufReader::new(stream);
    let mut line = String::new();
    let (mut length, mut chunked) = (None, false);
    loop {
        line.clear();
        reader.read_line(&mut line).unwrap();
        let lower = line.to_ascii_lowercase();
        if let Some(value) = lower.strip_prefix("content-length:") {
            length = value.trim().parse::<usize>().ok();
        }
        if lower.starts_with("transfer-encoding:") && lower.contains("chunked") {
            chunked = true;
        }
        if line == "\r\n" {
            break;
        }
    }
    let mut body = Vec::new();
    if chunked {
        loop {
            line.clear();
            reader.read_line(&mut line).unwrap();
            let size = usize::from_str_radix(line.trim(), 16).unwrap();
            let mut chunk = vec![0; size + 2];
            reader.read_exact(&mut chunk).unwrap();
            if size == 0 {
                break;
            }
            body.extend_from_slice(&chunk[..size]);
        }
    } else {
        let mut chunk = vec![0; length.unwrap_or(0)];
        reader.read_exact(&mut chunk).unwrap();
        body = chunk;
    }
    let text = String::from_utf8_lossy(&body);
    let data = text.lines().filter_map(|line| line.strip_prefix("data: ")).next_back().unwrap_or(text.trim());
    serde_json::from_str(data).unwrap_or_else(|err| panic!("{err}: {text}"))
}

/// Opens a 2025-11-25 session on `address`; its id.
fn open_session(address: &str) -> String {
    let body = json!({"jsonrpc": "2.0", "id": 0, "method": "initialize", "params": {
        "protocolVersion": "2025-11-25", "capabilities": {}, "clientInfo": {"name": "bench", "version": "1"}}})
    .to_string();
    let mut stream = TcpStream::connect(address).unwrap();
    let head = format!(
        "POST /mcp HTTP/1.1\r\nHost: {address}\r\nConnection: close\r\nContent-Type: application/json\r\n\
         Accept: application/json, text/event-stream\r\nContent-Length: {}\r\n\r\n{body}",
        body.len()
    );
    stream.write_all(head.as_bytes()).unwrap();
    let mut raw = String::new();
    stream.read_to_string(&mut raw).unwrap();
    let session = raw
        .lines()
        .find_map(|line| {
            let (name, value) = line.split_once(':')?;
            name.eq_ignore_ascii_case("mcp-session-id").then(|| value.trim().to_owned())
        })
        .unwrap_or_else(|| panic!("no session: {raw}"));
    let mut stream = TcpStream::connect(address).unwrap();
    in_session(&mut stream, address, &session, r#"{"jsonrpc":"2.0","method":"notifications/initialized"}"#);
    session
}

/// One POST of `body` in `session` on a kept-alive connection; its answer (none for a notification).
fn in_session(stream: &mut TcpStream, address: &str, session: &str, body: &str) -> Option<Value> {
    let head = format!(
        "POST /mcp HTTP/1.1\r\nHost: {address}\r\nContent-Type: application/json\r\n\
         Accept: application/json, text/event-stream\r\nMCP-Protocol-Version: 2025-11-25\r\n\
         Mcp-Session-Id: {session}\r\nContent-Length: {}\r\n\r\n",
        body.len()
    );
    stream.write_all(head.as_bytes()).unwrap();
    stream.write_all(body.as_bytes()).unwrap();
    if body.contains("\"id\"") {
        Some(read_response(stream))
    } else {
        let mut reader = BufReader::new(stream);
        let mut line = String::new();
        while line != "\r\n" {
            line.clear();
            reader.read_line(&mut line).unwrap();
        }
        None
    }
}

/// `ping`s in one session through `stream`, timed.
fn pings(stream: &mut TcpStream, address: &str, session: &str) -> Vec<Duration> {
    let ping = r#"{"jsonrpc":"2.0","id":1,"method":"ping"}"#;
    let mut samples = Vec::new();
    for index in 0..WARMUP + iterations() {
        let started = Instant::now();
        let answer = in_session(stream, address, session, ping).unwrap();
        let took = started.elapsed();
        assert!(answer.get("result").is_some(), "{answer}");
        if index >= WARMUP {
            samples.push(took);
        }
    }
    samples
}

fn run(name: &str, state: &str) {
    let folder = tempfile::tempdir().unwrap();
    let (child, address) = serve(state, folder.path());
    let mut stream = TcpStream::connect(&address).unwrap();
    stream.set_nodelay(true).unwrap();
    // With a store, a second replica that answers for the first one's tasks.
    let other_folder = tempfile::tempdir().unwrap();
    let mut other = (!state.is_empty()).then(|| {
        let (child, address) = serve(state, other_folder.path());
        let stream = TcpStream::connect(&address).unwrap();
        stream.set_nodelay(true).unwrap();
        (child, address, stream)
    });
    let session = open_session(&address);
    report(&format!("ping in a session, {name}"), pings(&mut stream, &address, &session));
    if let Some((_, other_address, other_stream)) = &mut other {
        report(&format!("ping in a session elsewhere, {name}"), pings(other_stream, other_address, &session));
    }
    if std::env::var_os("STATE_BENCH_SESSIONS_ONLY").is_some() {
        return;
    }
    let mut elsewhere = Vec::new();
    let call = json!({"name": "echo", "arguments": {"text": "hello, world"}});
    let mut calls = Vec::new();
    for index in 0..WARMUP + iterations() {
        let started = Instant::now();
        let answer = post(&mut stream, &address, "tools/call", "echo", call.clone(), false);
        let took = started.elapsed();
        assert!(answer.to_string().contains("hello, world"), "{answer}");
        if index >= WARMUP {
            calls.push(took);
        }
    }
    let (mut created_samples, mut polled_samples) = (Vec::new(), Vec::new());
    let slow = json!({"name": "slow_echo", "arguments": {"text": "hello", "ms": 100}});
    for index in 0..WARMUP + iterations() {
        let started = Instant::now();
        let created = post(&mut stream, &address, "tools/call", "slow_echo", slow.clone(), true);
        let creating = started.elapsed();
        let id = created["result"]["taskId"].as_str().unwrap_or_else(|| panic!("{created}")).to_owned();
        let started = Instant::now();
        let polled = post(&mut stream, &address, "tasks/get", &id, json!({"taskId": id}), true);
        let polling = started.elapsed();
        // Working, unless the machine was slow enough for it to end already.
        assert!(polled["result"]["status"].is_string(), "{polled}");
        if let Some((_, other_address, other_stream)) = &mut other {
            let started = Instant::now();
            let polled = post(other_stream, other_address, "tasks/get", &id, json!({"taskId": id}), true);
            if index >= WARMUP {
                elsewhere.push(started.elapsed());
            }
            assert!(polled["result"]["status"].is_string(), "{polled}");
        }
        // Not measured: wait for it to end, so that tasks do not pile up.
        loop {
            std::thread::sleep(Duration::from_millis(5));
            let polled = post(&mut stream, &address, "tasks/get", &id, json!({"taskId": id}), true);
            if polled["result"]["status"] == "completed" {
                break;
            }
        }
        if index >= WARMUP {
            created_samples.push(creating);
            polled_samples.push(polling);
        }
    }
    report(&format!("call, {name}"), calls);
    report(&format!("task created, {name}"), created_samples);
    report(&format!("tasks/get (running), {name}"), polled_samples);
    if other.is_some() {
        report(&format!("tasks/get on another replica, {name}"), elsewhere);
    }
    drop(other);
    drop(child);
}

fn main() {
    println!("| µs                                     |      p50 |      p99 |     mean |");
    println!("|----------------------------------------|---------:|---------:|---------:|");
    run("in process", "");
    let redis = redis();
    run("redis", &format!("[state]\nurl = \"redis://127.0.0.1:{}/0\"", redis.1));
}

//! toolhost beside Wassette (Microsoft's component-over-MCP runtime, 0.8.0),
//! in one run, on the same typed component (`plugins/testing/typed_shop` built without
//! wasi:config into `plugins/dist-peer/`,
//! plain exported functions, which both load as tools), both over MCP on
//! stdio with a bare JSON-RPC client.
//!
//! Run with `cargo bench -p toolhost --bench peer` after `bash plugins/build.sh`;
//! `host/benches/wassette.sh` installs Wassette first (once, into
//! host/benches/.wassette). It prints, per server:
//! - p50/p99/mean of `tools/call` for `ping` (no arguments) and `get-item`
//!   (a string in, a record out), one request in flight;
//! - calls per second with 16 requests in flight;
//! - what became of a runaway (`spin` loops for ever) and of a memory bomb
//!   (`hog` grows its memory without end): the answer, how long it took, and
//!   the server's peak RSS, each given at most 15 s before the server is
//!   killed.
//!
//! Figures go to BENCHMARKS.md; nothing here asserts a time.

mod common;

use serde_json::{Value, json};
use std::io::{BufRead, BufReader, Write};
use std::path::{Path, PathBuf};
use std::process::{Child, ChildStdin, Command, Stdio};
use std::sync::mpsc;
use std::time::{Duration, Instant};

const ITERATIONS: usize = 2_000;
const WARMUP: usize = 200;
const IN_FLIGHT: usize = 16;
const THROUGHPUT_CALLS: usize = 8_000;
const GIVE_UP: Duration = Duration::from_secs(15);

/// An MCP server on stdio: requests written to its stdin, its stdout read by
/// a thread that hands each response on.
struct Server {
    name: &'static str,
    child: Child,
    stdin: ChildStdin,
    responses: mpsc::Receiver<Value>,
    next_id: u64,
}

impl Server {
    fn start(name: &'static str, mut command: Command) -> Server {
        let mut child = command
            .stdin(Stdio::piped())
            .stdout(Stdio::piped())
            .stderr(Stdio::null())
            .spawn()
            .unwrap_or_else(|err| panic!("{name} did not start: {err}"));
        let stdin = child.stdin.take().unwrap();
        let stdout = BufReader::new(child.stdout.take().unwrap());
        let (sender, responses) = mpsc::channel();
        std::thread::spawn(move || {
            for line in stdout.lines() {
                let Ok(line) = line else { break };
                let Ok(message) = serde_json::from_str::<Value>(&line) else { continue };
                if message.get("id").is_some() && sender.send(message).is_err() {
                    break;
                }
            }
        });
        let mut server = Server { name, child, stdin, responses, next_id: 0 };
        let init = json!({"protocolVersion": "2025-06-18", "capabilities": {}, "clientInfo": {"name": "peer-bench", "version": "1"}});
        server.request("initialize", init, Duration::from_secs(60)).expect("initialize");
        server.notify("notifications/initialized");
        server
    }

    fn send(&mut self, method: &str, params: Value) -> u64 {
        self.next_id += 1;
        let request = json!({"jsonrpc": "2.0", "id": self.next_id, "method": method, "params": params});
        writeln!(self.stdin, "{request}").unwrap();
        self.stdin.flush().unwrap();
        self.next_id
    }

    fn notify(&mut self, method: &str) {
        writeln!(self.stdin, "{}", json!({"jsonrpc": "2.0", "method": method})).unwrap();
        self.stdin.flush().unwrap();
    }

    fn request(&mut self, method: &str, params: Value, wait: Duration) -> Option<Value> {
        let id = self.send(method, params);
        let deadline = Instant::now() + wait;
        loop {
            let left = deadline.checked_duration_since(Instant::now())?;
            let response = self.responses.recv_timeout(left).ok()?;
            if response["id"] == id {
                return Some(response);
            }
        }
    }

    fn call(&mut self, tool: &str, arguments: Value) -> Value {
        let params = json!({"name": tool, "arguments": arguments});
        self.request("tools/call", params, Duration::from_secs(30))
            .unwrap_or_else(|| panic!("{}: no answer", self.name))
    }

    /// The name this server gives the function `func` (Wassette prefixes an
    /// interface's functions with the interface's full name).
    fn tool(&mut self, func: &str) -> String {
        let listed = self.request("tools/list", json!({}), Duration::from_secs(30)).expect("tools/list");
        let names: Vec<String> = listed["result"]["tools"]
            .as_array()
            .expect("a tool list")
            .iter()
            .filter_map(|tool| tool["name"].as_str().map(str::to_owned))
            .collect();
        names
            .iter()
            .find(|name| *name == func || name.ends_with(&format!("_{func}")))
            .unwrap_or_else(|| panic!("{}: no tool for `{func}` in {names:?}", self.name))
            .clone()
    }

    fn peak_rss_kib(&self) -> u64 {
        common::status_kib(&self.child.id().to_string(), "VmHWM")
    }
}

impl Drop for Server {
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}

fn latency(server: &mut Server, tool: &str, arguments: Value, expect: &str) {
    let mut samples = Vec::with_capacity(ITERATIONS);
    for round in 0..WARMUP + ITERATIONS {
        let started = Instant::now();
        let response = server.call(tool, arguments.clone());
        let took = started.elapsed();
        assert!(response.to_string().contains(expect), "{}: {response}", server.name);
        if round >= WARMUP {
            samples.push(took);
        }
    }
    samples.sort();
    let at = |q: f64| samples[((samples.len() as f64 * q) as usize).min(samples.len() - 1)].as_secs_f64() * 1e6;
    let mean = samples.iter().map(Duration::as_secs_f64).sum::<f64>() / samples.len() as f64 * 1e6;
    println!("| {:<9} | {:<26} | {:>9.1} | {:>9.1} | {:>9.1} |", server.name, tool, at(0.5), at(0.99), mean);
}

fn throughput(server: &mut Server, tool: &str, arguments: Value) {
    let params = json!({"name": tool, "arguments": arguments});
    let started = Instant::now();
    let mut sent = 0;
    for _ in 0..IN_FLIGHT {
        server.send("tools/call", params.clone());
        sent += 1;
    }
    for _ in 0..THROUGHPUT_CALLS {
        let response = server.responses.recv_timeout(Duration::from_secs(30)).expect("an answer");
        assert!(response.get("result").is_some(), "{}: {response}", server.name);
        if sent < THROUGHPUT_CALLS {
            server.send("tools/call", params.clone());
            sent += 1;
        }
    }
    let rate = THROUGHPUT_CALLS as f64 / started.elapsed().as_secs_f64();
    println!("| {:<9} | {:<26} | {:>9.0} calls/s with {IN_FLIGHT} in flight |", server.name, tool, rate);
}

/// Calls `func`, which never ends on its own, and says what happened.
fn misbehaving(server: &mut Server, func: &str) {
    let tool = server.tool(func);
    let before = server.peak_rss_kib();
    let started = Instant::now();
    let answer = server.request("tools/call", json!({"name": tool, "arguments": {}}), GIVE_UP);
    let took = started.elapsed();
    let peak = server.peak_rss_kib().max(before);
    let said = match &answer {
        None => format!("no answer in {} s", GIVE_UP.as_secs()),
        Some(response) => {
            let text = response["result"]["content"][0]["text"]
                .as_str()
                .or_else(|| response["error"]["message"].as_str())
                .unwrap_or("(no text)");
            let text: String = text.chars().take(90).collect();
            format!("answered after {:.2} s: {}", took.as_secs_f64(), text.replace('|', "/").replace('\n', " "))
        }
    };
    println!("| {:<9} | {:<6} | {:>8} MiB | {said} |", server.name, func, peak / 1024);
}

fn shop() -> PathBuf {
    // Built without wasi:config, which Wassette 0.8 does not provide.
    let wasm = Path::new(env!("CARGO_MANIFEST_DIR")).join("../plugins/dist-peer/typed_shop.wasm");
    assert!(wasm.is_file(), "run `bash plugins/build.sh` first");
    wasm.canonicalize().unwrap()
}

fn toolhost(dir: &Path, cache: &Path) -> Server {
    let mut command = Command::new(env!("CARGO_BIN_EXE_toolhost"));
    command.args(["--plugins", &dir.display().to_string(), "serve", "--no-watch"]).env("TOOLHOST_CACHE_DIR", cache);
    Server::start("toolhost", command)
}

fn wassette(wassette: &Path, wasm: &Path, data: &Path) -> Server {
    let load = Command::new(wassette)
        .args(["component", "load", &format!("file://{}", wasm.display())])
        .env("XDG_DATA_HOME", data)
        .env("XDG_CONFIG_HOME", data)
        .output()
        .expect("wassette component load");
    assert!(load.status.success(), "wassette component load: {}", String::from_utf8_lossy(&load.stderr));
    let mut command = Command::new(wassette);
    command.arg("run").env("XDG_DATA_HOME", data).env("XDG_CONFIG_HOME", data);
    let mut server = Server::start("Wassette", command);
    // Wassette loads its components in the background after it starts: wait
    // until one answers.
    let ping = server.tool("ping");
    let deadline = Instant::now() + Duration::from_secs(30);
    while !server.call(&ping, json!({})).to_string().contains("pong") {
        assert!(Instant::now() < deadline, "Wassette did not load the component within 30 s");
        std::thread::sleep(Duration::from_millis(100));
    }
    server
}

fn main() {
    let installer = Path::new(env!("CARGO_MANIFEST_DIR")).join("benches/wassette.sh");
    let installed = Command::new("bash").arg(&installer).stderr(Stdio::inherit()).output().expect("run wassette.sh");
    assert!(installed.status.success(), "host/benches/wassette.sh failed (see above)");
    let wassette_bin = PathBuf::from(String::from_utf8_lossy(&installed.stdout).trim().to_owned());

    let wasm = shop();
    let work = tempfile::tempdir().unwrap();
    let dir = work.path().join("plugins");
    std::fs::create_dir(&dir).unwrap();
    std::fs::copy(&wasm, dir.join("typed_shop.wasm")).unwrap();
    let cache = work.path().join("cache");
    let data = work.path().join("wassette");

    println!("| server    | tool                       |  p50 (µs) |  p99 (µs) | mean (µs) |");
    println!("|-----------|----------------------------|-----------|-----------|-----------|");
    let mut servers = [toolhost(&dir, &cache), wassette(&wassette_bin, &wasm, &data)];
    for server in &mut servers {
        let ping = server.tool("ping");
        latency(server, &ping, json!({}), "pong");
        let get_item = server.tool("get-item");
        latency(server, &get_item, json!({"sku": "A-1"}), "Anvil");
    }
    println!();
    for server in &mut servers {
        let get_item = server.tool("get-item");
        throughput(server, &get_item, json!({"sku": "A-1"}));
    }
    println!();
    println!("| server    | call   | peak RSS  | what happened |");
    println!("|-----------|--------|-----------|---------------|");
    drop(servers);
    // Each misbehaving call in a server of its own, so one's memory does not
    // show in the other's peak, and a server that never answers is killed.
    for func in ["spin", "hog"] {
        misbehaving(&mut toolhost(&dir, &cache), func);
        misbehaving(&mut wassette(&wassette_bin, &wasm, &work.path().join(format!("wassette-{func}"))), func);
    }
}

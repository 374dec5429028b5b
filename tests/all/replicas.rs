//! `toolhost serve --http` as replicas behind a real load balancer: Debian's
//! `haproxy` (round robin, sticky by `Mcp-Session-Id` for 2025-11-25
//! sessions, health checks on `/readyz`, retries and redispatch) in front of
//! two replicas on loopback ports, driven by the official Python MCP client
//! (`tests/lb/client.py`) in both protocol generations; and one replica's
//! `/healthz`, `/readyz` and `/metrics`, whose exposition is read by the
//! official Prometheus Python client's parser (`tests/lb/metrics.py`).
//! `tests/lb/setup.sh` installs haproxy, the parser and the MCP clients the
//! first time; a failed install fails the tests.

use crate::common;

use common::{plugin, plugin_dir, shared_cache};
use serde_json::{Value, json};
use std::collections::HashMap;
use std::io::{BufRead, BufReader, Read, Write};
use std::net::{TcpListener, TcpStream};
use std::path::{Path, PathBuf};
use std::process::{Child, ChildStdout, Command, Stdio};
use std::sync::mpsc;
use std::time::{Duration, Instant};

fn lb_dir() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("../tests/lb")
}

/// Installs haproxy and the Python clients (once per test binary; setup.sh is idempotent).
fn setup() {
    common::install("lb/setup.sh");
}

/// A child process killed when dropped.
struct Running(Child);

impl Drop for Running {
    fn drop(&mut self) {
        let _ = self.0.kill();
        let _ = self.0.wait();
    }
}

/// One `toolhost serve --http 127.0.0.1:0` process.
struct Replica {
    process: Running,
    /// `127.0.0.1:PORT`
    address: String,
    /// Every stderr line after the `listening` one.
    lines: mpsc::Receiver<String>,
}

/// Three replicas named `replica0`…`replica2` serving `dir` with `config`,
/// each held in an `Option` (so that a test can kill one), once all serve;
/// and their addresses.
fn three_named_replicas(dir: &Path, config: &Path) -> (Vec<Option<Replica>>, Vec<String>) {
    let replicas: Vec<Option<Replica>> = (0..3)
        .map(|index| {
            let name = format!("replica{index}");
            Some(Replica::start(&name, dir, config, &shared_cache(), &[("TOOLHOST_REPLICA", &name)]))
        })
        .collect();
    let address: Vec<String> = replicas.iter().map(|replica| replica.as_ref().unwrap().address.clone()).collect();
    for replica in replicas.iter().flatten() {
        replica.wait_serving();
    }
    (replicas, address)
}

impl Replica {
    /// Everything the replica said on stderr, once it has exited: its last
    /// lines may still be on their way from the reader thread, which ends
    /// at the end of the pipe.
    fn said_after_exit(&self) -> Vec<String> {
        let deadline = Instant::now() + Duration::from_secs(10);
        let mut said = Vec::new();
        while let Ok(line) = self.lines.recv_timeout(deadline.saturating_duration_since(Instant::now())) {
            said.push(line);
        }
        said
    }

    /// Starts a replica serving `dir` with `config`; returns once it listens
    /// (before its plugins are loaded).
    fn start(name: &str, dir: &Path, config: &Path, cache: &Path, env: &[(&str, &str)]) -> Replica {
        Replica::start_with(name, dir, config, cache, env, &[])
    }

    /// [`Replica::start`] with more `serve` flags.
    fn start_with(
        name: &str,
        dir: &Path,
        config: &Path,
        cache: &Path,
        env: &[(&str, &str)],
        flags: &[&str],
    ) -> Replica {
        let mut command = Command::new(env!("CARGO_BIN_EXE_toolhost"));
        command
            .arg("--plugins")
            .arg(dir)
            .arg("--config")
            .arg(config)
            .args(["serve", "--http", "127.0.0.1:0", "--no-watch"])
            .args(flags)
            .env("TOOLHOST_CACHE_DIR", cache)
            .env_remove("TOOLHOST_LOG")
            .envs(env.iter().copied())
            .stdin(Stdio::null())
            .stdout(Stdio::null())
            .stderr(Stdio::piped());
        let mut process = Running(command.spawn().expect("start toolhost serve --http"));
        let stderr = process.0.stderr.take().unwrap();
        let (sender, lines) = mpsc::channel();
        let name = name.to_owned();
        std::thread::spawn(move || {
            for line in BufReader::new(stderr).lines().map_while(Result::ok) {
                eprintln!("[{name}] {line}");
                let _ = sender.send(line);
            }
        });
        let deadline = Instant::now() + Duration::from_secs(60);
        loop {
            let line = lines
                .recv_timeout(deadline.saturating_duration_since(Instant::now()))
                .expect("toolhost serve --http did not start listening");
            if let Some(rest) = line.strip_prefix("toolhost: listening on http://") {
                let address = rest.split(' ').next().unwrap().to_owned();
                return Replica { process, address, lines };
            }
        }
    }

    /// Waits for the line saying the plugins are loaded and MCP is served.
    fn wait_serving(&self) {
        let deadline = Instant::now() + Duration::from_secs(120);
        loop {
            let line = self
                .lines
                .recv_timeout(deadline.saturating_duration_since(Instant::now()))
                .expect("toolhost serve --http never got ready");
            if line.starts_with("toolhost: serving MCP at ") {
                return;
            }
        }
    }
}

/// A plugins folder and an empty config for the replicas: `hash` and
/// `mcp_conformance` (whose `slow_echo` waits `ms`, then returns its text).
fn replica_plugins() -> (tempfile::TempDir, PathBuf) {
    let dir = plugin_dir(&["hash", "mcp_conformance"]);
    let config = dir.path().join("toolhost.toml");
    std::fs::write(&config, "").unwrap();
    (dir, config)
}

/// Two replicas of the same folder, ready.
fn two_replicas() -> (tempfile::TempDir, Replica, Replica) {
    let (dir, config) = replica_plugins();
    let a = Replica::start("replica a", dir.path(), &config, &shared_cache(), &[]);
    let b = Replica::start("replica b", dir.path(), &config, &shared_cache(), &[]);
    a.wait_serving();
    b.wait_serving();
    (dir, a, b)
}

/// A free loopback port (for haproxy, which cannot be asked to pick one).
fn free_port() -> u16 {
    TcpListener::bind("127.0.0.1:0").unwrap().local_addr().unwrap().port()
}

/// The haproxy config of the tested topology (docs/deploy.md shows the same).
fn haproxy_config(port: u16, replicas: &[&Replica], sticky: bool) -> String {
    let mut config = haproxy_defaults(port);
    if sticky {
        config.push_str(
            "    stick-table type string len 64 size 100k expire 30m\n\
             \x20   stick on req.hdr(mcp-session-id)\n\
             \x20   stick store-response res.hdr(mcp-session-id)\n",
        );
    }
    // MCP tasks live in the replica that started them (named as its server
    // here, TOOLHOST_REPLICA): tasks/* go there by the replica name, the task
    // id in Mcp-Name without its `.RUN.SECRET` end. Only that name (which
    // grants nothing) is matched; the header is not captured in any log.
    config.push_str(
        "    http-request set-var(txn.replica) req.hdr(mcp-name),regsub('\\.[0-9a-f]{8}\\.[0-9a-f]{32}$','') \
         if { req.hdr(mcp-method) -m beg tasks/ }\n",
    );
    for index in 0..replicas.len() {
        config.push_str(&format!("    use-server replica{index} if {{ var(txn.replica) -m str replica{index} }}\n"));
    }
    config.push_str(&haproxy_servers(replicas));
    config
}

/// The part of every config up to the backend's own lines: round robin,
/// health checks on `/readyz`, retries.
fn haproxy_defaults(port: u16) -> String {
    format!(
        "global\n\
         \x20   maxconn 256\n\
         defaults\n\
         \x20   mode http\n\
         \x20   timeout connect 2s\n\
         \x20   timeout client 60s\n\
         \x20   timeout server 60s\n\
         \x20   timeout http-request 10s\n\
         \x20   retries 2\n\
         \x20   option redispatch 1\n\
         frontend mcp\n\
         \x20   bind 127.0.0.1:{port}\n\
         \x20   default_backend replicas\n\
         backend replicas\n\
         \x20   balance roundrobin\n\
         \x20   option httpchk\n\
         \x20   http-check send meth GET uri /readyz ver HTTP/1.1 hdr Host localhost\n\
         \x20   http-check expect status 200\n\
         \x20   default-server inter 500ms fall 1 rise 2\n\
         \x20   option http-buffer-request\n\
         \x20   retry-on conn-failure empty-response\n"
    )
}

/// One `server` line per replica.
fn haproxy_servers(replicas: &[&Replica]) -> String {
    replicas
        .iter()
        .enumerate()
        .map(|(index, replica)| format!("    server replica{index} {} check\n", replica.address))
        .collect()
}

/// With `[state] url`: plain round robin, nothing sticky and no routing by
/// replica (docs/deploy.md shows the same).
fn haproxy_plain_config(port: u16, replicas: &[&Replica]) -> String {
    haproxy_defaults(port) + &haproxy_servers(replicas)
}

/// `haproxy -f CONFIG -db` in the foreground, killed when dropped.
struct Haproxy {
    _process: Running,
    _config: tempfile::TempDir,
    address: String,
}

impl Haproxy {
    fn start(replicas: &[&Replica], sticky: bool) -> Haproxy {
        Haproxy::start_on(free_port(), replicas, sticky)
    }

    /// [`Haproxy::start`] on a port chosen before (when the replicas must know their URL).
    fn start_on(port: u16, replicas: &[&Replica], sticky: bool) -> Haproxy {
        Haproxy::launch(port, haproxy_config(port, replicas, sticky))
    }

    /// Plain round robin ([`haproxy_plain_config`]).
    fn start_plain(replicas: &[&Replica]) -> Haproxy {
        let port = free_port();
        Haproxy::launch(port, haproxy_plain_config(port, replicas))
    }

    fn launch(port: u16, text: String) -> Haproxy {
        setup();
        let folder = tempfile::tempdir().unwrap();
        let config = folder.path().join("haproxy.cfg");
        std::fs::write(&config, &text).unwrap();
        let mut process = Running(
            Command::new("haproxy")
                .arg("-f")
                .arg(&config)
                .arg("-db")
                .stdin(Stdio::null())
                .stdout(Stdio::null())
                .stderr(Stdio::piped())
                .spawn()
                .expect("start haproxy"),
        );
        let stderr = process.0.stderr.take().unwrap();
        std::thread::spawn(move || {
            for line in BufReader::new(stderr).lines().map_while(Result::ok) {
                eprintln!("[haproxy] {line}");
            }
        });
        let address = format!("127.0.0.1:{port}");
        let deadline = Instant::now() + Duration::from_secs(20);
        while get(&address, "/healthz", &[]).map(|response| response.status) != Some(200) {
            if let Ok(Some(status)) = process.0.try_wait() {
                panic!("haproxy exited ({status}) with the config:\n{text}");
            }
            assert!(Instant::now() < deadline, "haproxy did not start on {address}");
            std::thread::sleep(Duration::from_millis(50));
        }
        Haproxy { _process: process, _config: folder, address }
    }

    fn url(&self) -> String {
        format!("http://{}/mcp", self.address)
    }
}

#[derive(Debug)]
struct Response {
    status: u16,
    head: String,
    body: String,
}

/// One HTTP/1.1 request (`Connection: close`); `None` when the connection is refused.
fn request(address: &str, method: &str, path: &str, headers: &[(&str, &str)], body: &str) -> Option<Response> {
    let mut stream = send(address, method, path, headers, body)?;
    let mut raw = Vec::new();
    stream.read_to_end(&mut raw).ok()?;
    let raw = String::from_utf8_lossy(&raw).into_owned();
    let (head, body) = raw.split_once("\r\n\r\n").unwrap_or((&raw, ""));
    let status = head.split(' ').nth(1).and_then(|code| code.parse().ok()).unwrap_or(0);
    Some(Response { status, head: head.to_owned(), body: body.to_owned() })
}

/// Sends one HTTP/1.1 request and returns the connection, response unread.
fn send(address: &str, method: &str, path: &str, headers: &[(&str, &str)], body: &str) -> Option<TcpStream> {
    let mut stream = TcpStream::connect(address).ok()?;
    stream.set_read_timeout(Some(Duration::from_secs(30))).unwrap();
    let mut text = format!("{method} {path} HTTP/1.1\r\nConnection: close\r\nContent-Length: {}\r\n", body.len());
    if !headers.iter().any(|(name, _)| name.eq_ignore_ascii_case("host")) {
        text.push_str(&format!("Host: {address}\r\n"));
    }
    for (name, value) in headers {
        text.push_str(&format!("{name}: {value}\r\n"));
    }
    text.push_str("\r\n");
    text.push_str(body);
    stream.write_all(text.as_bytes()).ok()?;
    Some(stream)
}

fn get(address: &str, path: &str, headers: &[(&str, &str)]) -> Option<Response> {
    request(address, "GET", path, headers, "")
}

/// A stateless (2026-07-28) `tools/call` as raw JSON-RPC; returns the
/// response (an SSE stream holding the result).
fn raw_call(address: &str, tool: &str, arguments: Value, headers: &[(&str, &str)]) -> Response {
    request(address, "POST", "/mcp", &call_headers(tool, headers), &call_body(tool, arguments)).expect("connect")
}

/// The body of a stateless (2026-07-28) `tools/call`.
fn call_body(tool: &str, arguments: Value) -> String {
    serde_json::json!({
        "jsonrpc": "2.0", "id": 1, "method": "tools/call",
        "params": {
            "name": tool, "arguments": arguments,
            "_meta": {
                "io.modelcontextprotocol/protocolVersion": "2026-07-28",
                "io.modelcontextprotocol/clientCapabilities": {},
                "io.modelcontextprotocol/clientInfo": { "name": "raw", "version": "1" }
            }
        }
    })
    .to_string()
}

/// The headers of a stateless (2026-07-28) `tools/call`, then `extra`.
fn call_headers<'a>(tool: &'a str, extra: &[(&'a str, &'a str)]) -> Vec<(&'a str, &'a str)> {
    let mut all = vec![
        ("Content-Type", "application/json"),
        ("Accept", "application/json, text/event-stream"),
        ("MCP-Protocol-Version", "2026-07-28"),
        ("Mcp-Method", "tools/call"),
        ("Mcp-Name", tool),
    ];
    all.extend_from_slice(extra);
    all
}

/// Polls `/metrics` (as text) until it has `line`.
fn wait_for_metric(address: &str, headers: &[(&str, &str)], line: &str) {
    let deadline = Instant::now() + Duration::from_secs(20);
    while !get(address, "/metrics", headers).is_some_and(|response| response.body.lines().any(|have| have == line)) {
        assert!(Instant::now() < deadline, "/metrics never showed `{line}`");
        std::thread::sleep(Duration::from_millis(10));
    }
}

/// The JSON-RPC message in a response (plain JSON or the last SSE `data:` line).
fn message(response: &Response) -> Value {
    let data = response.body.lines().filter_map(|line| line.strip_prefix("data: ")).next_back();
    let text = data.unwrap_or(response.body.trim());
    serde_json::from_str(text).unwrap_or_else(|err| panic!("no JSON-RPC message ({err}): {}", response.body))
}

/// `/metrics` as Prometheus reads it: parsed by the official Python client.
struct Exposition {
    families: HashMap<String, String>,
    samples: Vec<(String, HashMap<String, String>, Option<f64>)>,
}

impl Exposition {
    fn read(address: &str, headers: &[(&str, &str)]) -> Exposition {
        setup();
        let response = get(address, "/metrics", headers).expect("connect for /metrics");
        assert_eq!(response.status, 200, "{}\n{}", response.head, response.body);
        assert!(
            response.head.to_ascii_lowercase().contains("content-type: text/plain; version=0.0.4"),
            "{}",
            response.head
        );
        let mut parser = Command::new(lb_dir().join(".tools/venv/bin/python"))
            .arg(lb_dir().join("metrics.py"))
            .stdin(Stdio::piped())
            .stdout(Stdio::piped())
            .stderr(Stdio::piped())
            .spawn()
            .expect("run metrics.py");
        parser.stdin.take().unwrap().write_all(response.body.as_bytes()).unwrap();
        let output = parser.wait_with_output().unwrap();
        assert!(
            output.status.success(),
            "Prometheus' parser refused the exposition: {}\n{}",
            String::from_utf8_lossy(&output.stderr),
            response.body
        );
        let parsed: Value = serde_json::from_slice(&output.stdout).unwrap();
        let families = parsed["families"]
            .as_object()
            .unwrap()
            .iter()
            .map(|(name, kind)| (name.clone(), kind.as_str().unwrap().to_owned()))
            .collect();
        let samples = parsed["samples"]
            .as_array()
            .unwrap()
            .iter()
            .map(|sample| {
                let labels = sample["labels"]
                    .as_object()
                    .unwrap()
                    .iter()
                    .map(|(name, value)| (name.clone(), value.as_str().unwrap().to_owned()))
                    .collect();
                (sample["name"].as_str().unwrap().to_owned(), labels, sample["value"].as_f64())
            })
            .collect();
        Exposition { families, samples }
    }

    /// The samples named `name` whose labels include `labels`.
    fn find(&self, name: &str, labels: &[(&str, &str)]) -> Vec<(&HashMap<String, String>, Option<f64>)> {
        self.samples
            .iter()
            .filter(|(sample, have, _)| {
                sample == name && labels.iter().all(|(key, value)| have.get(*key).map(String::as_str) == Some(*value))
            })
            .map(|(_, labels, value)| (labels, *value))
            .collect()
    }

    /// The one value of `name` with `labels`, 0 when there is none.
    fn value(&self, name: &str, labels: &[(&str, &str)]) -> f64 {
        let found = self.find(name, labels);
        assert!(found.len() <= 1, "{name} {labels:?} is ambiguous: {found:?}");
        found.first().map(|(_, value)| value.unwrap()).unwrap_or(0.0)
    }

    /// Successful `slow_echo` calls.
    fn echoes(&self) -> f64 {
        self.value("toolhost_tool_calls_total", &[("tool", "slow_echo"), ("outcome", "ok")])
    }
}

/// Runs `tests/lb/client.py` and returns what it printed, line by line, as
/// they come.
fn client(mode: &str, url: &str, count: usize, ms: u64, prefix: &str) -> (Running, mpsc::Receiver<Value>) {
    setup();
    let python = lb_dir().join("../mcp/.tools/venv/bin/python");
    let mut process = Running(
        Command::new(python)
            .arg(lb_dir().join("client.py"))
            .args(["--mode", mode, "--url", url, "--count", &count.to_string(), "--ms", &ms.to_string()])
            .args(["--prefix", prefix])
            .stdin(Stdio::null())
            .stdout(Stdio::piped())
            .stderr(Stdio::piped())
            .spawn()
            .expect("run tests/lb/client.py"),
    );
    let stdout: ChildStdout = process.0.stdout.take().unwrap();
    let stderr = process.0.stderr.take().unwrap();
    std::thread::spawn(move || {
        for line in BufReader::new(stderr).lines().map_while(Result::ok) {
            eprintln!("[client] {line}");
        }
    });
    let (sender, results) = mpsc::channel();
    std::thread::spawn(move || {
        for line in BufReader::new(stdout).lines().map_while(Result::ok) {
            eprintln!("[client] {line}");
            let value = serde_json::from_str(&line).unwrap_or_else(|_| Value::String(line));
            let _ = sender.send(value);
        }
    });
    (process, results)
}

/// Every line the client printed, until it is done.
fn all_results(results: &mpsc::Receiver<Value>) -> Vec<Value> {
    let mut all = Vec::new();
    let deadline = Instant::now() + Duration::from_secs(180);
    while let Ok(value) = results.recv_timeout(deadline.saturating_duration_since(Instant::now())) {
        let done = value["done"] == true;
        all.push(value);
        if done {
            return all;
        }
    }
    panic!("the client did not finish: {all:?}");
}

/// The per-call results (`{"i", "ok", …}`), checked to be one per call, in order.
fn per_call(all: &[Value], count: usize, prefix: &str) -> Vec<Value> {
    let calls: Vec<Value> = all.iter().filter(|value| value.get("i").is_some()).cloned().collect();
    assert_eq!(calls.len(), count, "one result per call: {all:?}");
    for (index, call) in calls.iter().enumerate() {
        assert_eq!(call["i"], index, "{all:?}");
        if call["ok"] == true {
            assert_eq!(call["text"], format!("{prefix}-{index}"), "a call got another call's answer: {call}");
        }
    }
    calls
}

#[test]
fn health_and_readiness_follow_loading_and_metrics_count_calls_by_outcome() {
    // A fresh cache and a plugin whose `list-tools` sleeps until its 2 s
    // timeout: loading takes seconds, during which the replica is alive
    // but not ready. `echo` under a hostile file name gives a hostile
    // `plugin` label.
    let dir = plugin_dir(&["hash", "mcp_conformance", "list_sleeps"]);
    let hostile = "we\"ird\\plug\nin";
    std::fs::copy(plugin("echo"), dir.path().join(format!("{hostile}.wasm"))).unwrap();
    let config = dir.path().join("toolhost.toml");
    std::fs::write(&config, "[serve]\ntoken_env = \"SERVE_TOKEN\"\n[plugins.list_sleeps.limits]\ntimeout = \"2s\"\n")
        .unwrap();
    let cache = tempfile::tempdir().unwrap();
    let token = "a-long-random-metrics-token-0123456789";
    let bearer = format!("Bearer {token}");
    let auth = [("Authorization", bearer.as_str())];
    let replica = Replica::start("replica", dir.path(), &config, cache.path(), &[("SERVE_TOKEN", token)]);
    let address = replica.address.clone();

    let health = get(&address, "/healthz", &[]).expect("alive while loading");
    assert_eq!((health.status, health.body.as_str()), (200, "ok\n"), "{}", health.head);
    let ready = get(&address, "/readyz", &[]).unwrap();
    assert_eq!(ready.status, 503, "not ready while loading: {}", ready.body);
    assert!(ready.body.starts_with("not ready: loading plugins"), "{}", ready.body);
    // MCP answers while plugins load (a call waits for its tool's plugin).
    let early = raw_call(&address, "slow_echo", serde_json::json!({"text": "early", "ms": 0}), &auth);
    assert_eq!(early.status, 200, "MCP answers while the plugins load: {}", early.body);

    replica.wait_serving();
    let ready = get(&address, "/readyz", &[]).unwrap();
    assert_eq!((ready.status, ready.body.as_str()), (200, "ready\n"));

    // The same Host check as /mcp; GET only; unknown paths are 404.
    for path in ["/healthz", "/readyz", "/metrics"] {
        let refused = get(&address, path, &[("Host", "evil.example.com")]).unwrap();
        assert_eq!(refused.status, 403, "{path} with a foreign Host: {}", refused.body);
        let allowed = get(&address, path, &[("Host", "localhost:8931"), ("Authorization", &bearer)]).unwrap();
        assert_eq!(allowed.status, 200, "{path} with Host localhost: {}", allowed.body);
        let posted = request(&address, "POST", path, &[], "").unwrap();
        assert_eq!(posted.status, 405, "{path}: {}", posted.body);
    }
    assert_eq!(get(&address, "/nope", &[]).unwrap().status, 404);
    // Health and readiness are open; metrics need the token when one is set.
    let unauthorized = get(&address, "/metrics", &[]).unwrap();
    assert_eq!(unauthorized.status, 401, "{}", unauthorized.body);
    assert!(unauthorized.head.to_ascii_lowercase().contains("www-authenticate: bearer"));
    let wrong = get(&address, "/metrics", &[("Authorization", "Bearer not-the-token-not-the-token")]).unwrap();
    assert_eq!(wrong.status, 401);

    let before = Exposition::read(&address, &auth);
    assert_eq!(before.value("toolhost_ready", &[]), 1.0);
    let early = [("tool", "slow_echo"), ("outcome", "ok")];
    assert_eq!(before.value("toolhost_tool_calls_total", &early), 1.0, "only the call made while loading");

    let ok = message(&raw_call(&address, "slow_echo", serde_json::json!({"text": "hi", "ms": 20}), &auth));
    assert_eq!(ok["result"]["content"][0]["text"], "hi", "{ok}");
    let bad = message(&raw_call(&address, "slow_echo", serde_json::json!({"text": "hi", "ms": "soon"}), &auth));
    assert_eq!(bad["result"]["isError"], true, "{bad}");
    let hashed = message(&raw_call(&address, "sha256", serde_json::json!({"text": "abc"}), &auth));
    assert_eq!(hashed["result"]["isError"], false, "{hashed}");
    let echoed = message(&raw_call(&address, "echo", serde_json::json!({"text": "x"}), &auth));
    assert_eq!(echoed["result"]["content"][0]["text"], "x", "{echoed}");
    let unknown = message(&raw_call(&address, "no_such_tool", serde_json::json!({}), &auth));
    assert_eq!(unknown["error"]["code"], -32602, "{unknown}");
    // A client that goes away mid-call: the call stops and counts as cancelled.
    let body = call_body("slow_echo", serde_json::json!({"text": "gone", "ms": 5000}));
    let abandoned = send(&address, "POST", "/mcp", &call_headers("slow_echo", &auth), &body).unwrap();
    wait_for_metric(&address, &auth, "toolhost_active_calls 1");
    // Past the 10 ms bucket before it goes, so that the histogram below has
    // exactly one call (the refused one) at or under 10 ms.
    std::thread::sleep(Duration::from_millis(50));
    drop(abandoned);
    let cancelled = r#"toolhost_tool_calls_total{tool="slow_echo",plugin="mcp_conformance",outcome="cancelled"} 1"#;
    wait_for_metric(&address, &auth, cancelled);

    let metrics = Exposition::read(&address, &auth);
    for (family, kind) in [
        ("toolhost_tool_calls", "counter"),
        ("toolhost_tool_call_duration_seconds", "histogram"),
        ("toolhost_tool_fuel_consumed", "counter"),
        ("toolhost_active_calls", "gauge"),
        ("toolhost_mcp_sessions", "gauge"),
        ("toolhost_catalog_generation", "gauge"),
        ("toolhost_tools", "gauge"),
        ("toolhost_build_info", "gauge"),
        ("toolhost_http_requests", "counter"),
    ] {
        assert_eq!(metrics.families.get(family).map(String::as_str), Some(kind), "{family}: {:?}", metrics.families);
    }
    let echo = [("tool", "slow_echo"), ("plugin", "mcp_conformance")];
    let with = |outcome: &'static str| [echo[0], echo[1], ("outcome", outcome)];
    assert_eq!(metrics.value("toolhost_tool_calls_total", &with("ok")), 2.0, "the early call and `hi`");
    assert_eq!(metrics.value("toolhost_tool_calls_total", &with("invalid_arguments")), 1.0);
    assert_eq!(metrics.value("toolhost_tool_calls_total", &with("cancelled")), 1.0);
    assert_eq!(metrics.value("toolhost_tool_calls_total", &[("tool", "sha256"), ("outcome", "ok")]), 1.0);
    assert_eq!(metrics.value("toolhost_unknown_tool_calls_total", &[]), 1.0);
    assert!(metrics.find("toolhost_tool_calls_total", &[("tool", "no_such_tool")]).is_empty());
    // The hostile plugin name comes back intact through the escaping.
    assert_eq!(metrics.value("toolhost_tool_calls_total", &[("tool", "echo"), ("plugin", hostile)]), 1.0);
    assert!(metrics.value("toolhost_tool_fuel_consumed_total", &[("tool", "sha256")]) > 0.0);
    assert_eq!(metrics.value("toolhost_active_calls", &[]), 0.0);
    assert!(metrics.value("toolhost_catalog_generation", &[]) >= 1.0, "one more per batch of plugins loaded");
    assert!(metrics.value("toolhost_load_problems", &[]) >= 1.0, "list_sleeps did not load");
    assert_eq!(metrics.value("toolhost_build_info", &[("version", env!("CARGO_PKG_VERSION"))]), 1.0);
    assert!(metrics.value("toolhost_http_requests_total", &[("endpoint", "/readyz"), ("code", "503")]) >= 1.0);

    // The latency histogram: cumulative buckets from 10 µs to 60 s, then +Inf = count.
    let mut buckets: Vec<(f64, f64)> = metrics
        .find("toolhost_tool_call_duration_seconds_bucket", &echo)
        .into_iter()
        .map(|(labels, value)| (labels["le"].parse::<f64>().unwrap(), value.unwrap()))
        .collect();
    buckets.sort_by(|a, b| a.0.total_cmp(&b.0));
    assert_eq!(buckets.first().unwrap().0, 0.00001);
    assert_eq!(buckets[buckets.len() - 2].0, 60.0);
    assert!(buckets.last().unwrap().0.is_infinite());
    assert!(buckets.windows(2).all(|pair| pair[0].1 <= pair[1].1), "cumulative: {buckets:?}");
    let count = metrics.value("toolhost_tool_call_duration_seconds_count", &echo);
    assert_eq!((buckets.last().unwrap().1, count), (4.0, 4.0));
    let quick = buckets.iter().find(|(le, _)| *le == 0.01).unwrap().1;
    assert!((1.0..=2.0).contains(&quick), "the 20 ms call is above 10 ms: {buckets:?}");
    assert_eq!(buckets.iter().find(|(le, _)| *le == 2.5).unwrap().1, 4.0, "the cancelled call stopped early");
    let sum = metrics.value("toolhost_tool_call_duration_seconds_sum", &echo);
    assert!((0.02..2.5).contains(&sum), "{sum}");
}

#[test]
fn stateless_calls_through_haproxy_land_on_both_replicas() {
    let (_dir, a, b) = two_replicas();
    let haproxy = Haproxy::start(&[&a, &b], true);
    let (_client, results) = client("2026-07-28", &haproxy.url(), 12, 0, "stateless");
    let all = all_results(&results);
    assert_eq!(all.last().unwrap()["protocol"], "2026-07-28", "{all:?}");
    let calls = per_call(&all, 12, "stateless");
    assert!(calls.iter().all(|call| call["ok"] == true), "{calls:?}");

    // Each replica answered some of them, and between them all.
    let on_a = Exposition::read(&a.address, &[]).echoes();
    let on_b = Exposition::read(&b.address, &[]).echoes();
    assert!(on_a >= 1.0 && on_b >= 1.0, "round robin: {on_a} on a, {on_b} on b");
    assert_eq!(on_a + on_b, 12.0);
}

/// The tested topology with a collector: every replica exports its spans over
/// OTLP to one receiver, each under its own name (`service.instance.id`, from
/// the standard `OTEL_RESOURCE_ATTRIBUTES`), and a client's trace (its
/// `traceparent`) goes on in whichever replica haproxy picks for a request.
#[test]
fn replicas_send_their_spans_to_one_collector_each_under_its_own_name() {
    let receiver = common::otel::Receiver::start();
    let (dir, config) = replica_plugins();
    std::fs::write(&config, format!("[telemetry]\notlp_endpoint = \"{}\"\n", receiver.endpoint)).unwrap();
    let start = |name: &str, instance: &str| {
        let resource = format!("service.instance.id={instance}");
        Replica::start(name, dir.path(), &config, &shared_cache(), &[("OTEL_RESOURCE_ATTRIBUTES", &resource)])
    };
    let (a, b) = (start("replica a", "replica-a"), start("replica b", "replica-b"));
    a.wait_serving();
    b.wait_serving();
    let haproxy = Haproxy::start(&[&a, &b], true);

    let trace = "4bf92f3577b34da6a3ce929d0e0e4736";
    for call in 0..6 {
        let parent = format!("00-{trace}-00f067aa0ba902b{call}-01");
        let response = raw_call(&haproxy.address, "sha256", json!({ "text": "abc" }), &[("traceparent", &parent)]);
        assert_eq!(response.status, 200, "{}{}", response.head, response.body);
        assert!(
            response.body.contains("ba7816bf8f01cfea414140de5dae2223b00361a396177a9cb410ff61f20015ad"),
            "{}",
            response.body
        );
    }
    let in_trace = |spans: &[Value], instance: &str, name: &str| {
        spans
            .iter()
            .filter(|span| span["trace_id"] == trace && span["instance"] == instance && span["name"] == name)
            .count()
    };
    let spans = receiver.wait_for(|spans| {
        in_trace(spans, "replica-a", "tool_call") + in_trace(spans, "replica-b", "tool_call") == 6
            && in_trace(spans, "replica-a", "mcp_request") + in_trace(spans, "replica-b", "mcp_request") == 6
    });
    for instance in ["replica-a", "replica-b"] {
        assert!(in_trace(&spans, instance, "tool_call") >= 1, "round robin: none on {instance}: {spans:?}");
    }
    assert_eq!(in_trace(&spans, "replica-a", "tool_call") + in_trace(&spans, "replica-b", "tool_call"), 6, "{spans:?}");
    let call = spans.iter().find(|span| span["name"] == "tool_call" && span["trace_id"] == trace).unwrap();
    assert_eq!(
        (call["attributes"]["tool"].as_str(), call["attributes"]["outcome"].as_str()),
        (Some("sha256"), Some("ok")),
        "{call}"
    );
    assert!(spans.iter().all(|span| span["service"] == "toolhost"), "{spans:?}");
}

/// A 2026-07-28 request of the tasks extension (`tools/call` that may become
/// a task, `tasks/get`, …), with `name` in `Mcp-Name`: the JSON-RPC answer.
fn task_request(address: &str, method: &str, mut params: Value, name: &str) -> Value {
    params["_meta"] = json!({
        "io.modelcontextprotocol/protocolVersion": "2026-07-28",
        "io.modelcontextprotocol/clientCapabilities": {
            "elicitation": {"form": {}},
            "extensions": {"io.modelcontextprotocol/tasks": {}}
        },
        "io.modelcontextprotocol/clientInfo": { "name": "raw", "version": "1" }
    });
    let body = json!({"jsonrpc": "2.0", "id": 1, "method": method, "params": params}).to_string();
    let headers = [
        ("Content-Type", "application/json"),
        ("Accept", "application/json, text/event-stream"),
        ("MCP-Protocol-Version", "2026-07-28"),
        ("Mcp-Method", method),
        ("Mcp-Name", name),
    ];
    let response = request(address, "POST", "/mcp", &headers, &body).expect("connect");
    assert_eq!(response.status, 200, "{}{}", response.head, response.body);
    message(&response)
}

/// Long calls as MCP tasks behind haproxy, configured as docs/deploy.md says:
/// each replica named as its haproxy server (`TOOLHOST_REPLICA`), `tasks/*`
/// routed by the task id in `Mcp-Name`. Every poll finds its task wherever
/// the call that made it landed; a replica that goes takes its tasks with it,
/// and the next poll is an error saying so, never a silent loss.
#[test]
fn tasks_are_polled_on_their_replica_through_haproxy_and_a_lost_one_is_an_error() {
    let (dir, config) = replica_plugins();
    std::fs::write(&config, "[serve.tasks]\ntools = { slow_echo = \"optional\" }\n").unwrap();
    let start = |name: &str, replica: &str| {
        Replica::start(name, dir.path(), &config, &shared_cache(), &[("TOOLHOST_REPLICA", replica)])
    };
    let (a, b) = (start("replica a", "replica0"), start("replica b", "replica1"));
    a.wait_serving();
    b.wait_serving();
    let haproxy = Haproxy::start(&[&a, &b], true);

    let ids: Vec<String> = (0..4)
        .map(|call| {
            let arguments = json!({ "name": "slow_echo", "arguments": { "text": format!("task {call}"), "ms": 800 } });
            let created = task_request(&haproxy.address, "tools/call", arguments, "slow_echo");
            assert_eq!(created["result"]["resultType"], "task", "{created}");
            created["result"]["taskId"].as_str().unwrap().to_owned()
        })
        .collect();
    for replica in ["replica0.", "replica1."] {
        assert!(ids.iter().any(|id| id.starts_with(replica)), "round robin: none on {replica} {ids:?}");
    }
    for (call, id) in ids.iter().enumerate() {
        let deadline = Instant::now() + Duration::from_secs(30);
        loop {
            let polled = task_request(&haproxy.address, "tasks/get", json!({ "taskId": id }), id);
            let status = polled["result"]["status"].as_str().unwrap_or_else(|| panic!("{id}: {polled}"));
            if status == "completed" {
                assert!(polled.to_string().contains(&format!("task {call}")), "{polled}");
                break;
            }
            assert_eq!(status, "working", "{polled}");
            assert!(Instant::now() < deadline, "{id} never completed");
            std::thread::sleep(Duration::from_millis(100));
        }
    }

    // A task in flight when its replica dies: the next poll goes to the
    // survivor, which says whose task it was.
    let arguments = json!({ "name": "slow_echo", "arguments": { "text": "lost", "ms": 10000 } });
    let created = task_request(&haproxy.address, "tools/call", arguments, "slow_echo");
    let id = created["result"]["taskId"].as_str().unwrap().to_owned();
    let (doomed, survivor) = if id.starts_with("replica0.") { (a, b) } else { (b, a) };
    drop(doomed);
    let polled = task_request(&haproxy.address, "tasks/get", json!({ "taskId": id }), &id);
    assert_eq!(polled["error"]["code"], -32602, "{polled}");
    assert_eq!(polled["error"]["data"]["reason"], "other_replica", "{polled}");
    drop(survivor);
}

#[test]
fn legacy_sessions_stick_to_one_replica_by_session_id() {
    let (_dir, a, b) = two_replicas();
    let sticky = Haproxy::start(&[&a, &b], true);
    let (_client, results) = client("legacy", &sticky.url(), 8, 0, "session");
    let all = all_results(&results);
    assert_eq!(all.last().unwrap()["protocol"], "2025-11-25", "{all:?}");
    let calls = per_call(&all, 8, "session");
    assert!(calls.iter().all(|call| call["ok"] == true), "{all:?}");
    let (on_a, on_b) = (Exposition::read(&a.address, &[]).echoes(), Exposition::read(&b.address, &[]).echoes());
    assert!((on_a, on_b) == (8.0, 0.0) || (on_a, on_b) == (0.0, 8.0), "one session, one replica: {on_a} and {on_b}");

    // Without the stick table the session's requests alternate between the
    // replicas, and the one that did not start it does not know it.
    let plain = Haproxy::start(&[&a, &b], false);
    let (_client, results) = client("legacy", &plain.url(), 4, 0, "unsticky");
    let all = all_results(&results);
    let calls = per_call(&all, 4, "unsticky");
    assert!(calls.iter().any(|call| call["ok"] == false), "sessions worked without stickiness: {all:?}");
}

#[test]
fn killing_a_replica_mid_run_loses_no_completed_call() {
    let (_dir, mut a, b) = two_replicas();
    let haproxy = Haproxy::start(&[&a, &b], true);
    let count = 30;
    let (_client, results) = client("2026-07-28", &haproxy.url(), count, 100, "crash");
    let mut all = Vec::new();
    while all.iter().filter(|value: &&Value| value["ok"] == true).count() < 6 {
        all.push(results.recv_timeout(Duration::from_secs(60)).expect("the client stalled"));
    }
    let before_b = Exposition::read(&b.address, &[]).echoes();
    // SIGKILL while replica a runs a call: no drain, the call dies with it.
    wait_for_metric(&a.address, &[], "toolhost_active_calls 1");
    let _ = a.process.0.kill();
    let _ = a.process.0.wait();
    all.extend(results.try_iter());
    let known_at_kill = all.iter().filter(|value| value.get("i").is_some()).count();
    all.extend(all_results(&results));
    let calls = per_call(&all, count, "crash");

    // Every call completed before the kill kept its answer, and so did every
    // later one: the call replica a was running when it died was re-sent to
    // replica b by haproxy (`retry-on empty-response`: a got no answer out),
    // and the next ones went to b (`retry-on conn-failure`, `redispatch`, and
    // the health check took a out within `inter`).
    let failed: Vec<&Value> = calls.iter().filter(|call| call["ok"] != true).collect();
    assert!(failed.is_empty(), "calls failed around the kill: {failed:?}\n{all:?}");
    // Replica b answered the calls after the kill (all but, perhaps, one
    // answer from a still on its way when a died).
    let on_b = Exposition::read(&b.address, &[]).echoes() - before_b;
    let after_kill = (count - known_at_kill) as f64;
    assert!(on_b >= after_kill - 1.0, "b answered {on_b} of the {after_kill} calls after the kill");
}

#[test]
fn sigterm_drains_the_call_in_flight_then_exits() {
    let (dir, config) = replica_plugins();
    let mut replica = Replica::start("replica", dir.path(), &config, &shared_cache(), &[]);
    replica.wait_serving();
    let address = replica.address.clone();
    let (sender, answer) = mpsc::channel();
    let caller = address.clone();
    std::thread::spawn(move || {
        let _ = sender.send(raw_call(&caller, "slow_echo", serde_json::json!({"text": "drained", "ms": 4000}), &[]));
    });
    // Long enough a call to be seen running on a loaded 2-core machine.
    let deadline = Instant::now() + Duration::from_secs(60);
    while Exposition::read(&address, &[]).value("toolhost_active_calls", &[]) < 1.0 {
        // An answer before the call was seen running says why it never ran.
        if let Ok(early) = answer.try_recv() {
            panic!("the call was answered before it was seen running: {early:?}");
        }
        assert!(Instant::now() < deadline, "the call never started");
        std::thread::sleep(Duration::from_millis(20));
    }
    let pid = i32::try_from(replica.process.0.id()).unwrap();
    // SAFETY: kill(2) on the child this test started and has not reaped.
    assert_eq!(unsafe { libc::kill(pid, libc::SIGTERM) }, 0);

    // No new connection is taken (a load balancer sends it to another
    // replica), but the call in flight is answered in full. Polled: the
    // replica stops taking connections as soon as it has seen the signal.
    let deadline = Instant::now() + Duration::from_secs(20);
    let refused = loop {
        let answer = get(&address, "/readyz", &[]);
        if answer.as_ref().is_none_or(|ready| ready.status == 503) || Instant::now() > deadline {
            break answer;
        }
        std::thread::sleep(Duration::from_millis(10));
    };
    assert!(refused.is_none() || refused.as_ref().unwrap().status == 503, "still taking connections");
    let response = answer.recv_timeout(Duration::from_secs(20)).expect("the call in flight was never answered");
    assert_eq!(message(&response)["result"]["content"][0]["text"], "drained", "{}", response.body);
    let deadline = Instant::now() + Duration::from_secs(10);
    let status = loop {
        if let Some(status) = replica.process.0.try_wait().unwrap() {
            break status;
        }
        assert!(Instant::now() < deadline, "toolhost serve did not exit after draining");
        std::thread::sleep(Duration::from_millis(20));
    };
    assert!(status.success(), "{status}");
    let said = replica.said_after_exit();
    assert!(said.iter().any(|line| line == "toolhost: stopped"), "{said:?}");
}

#[test]
fn readiness_waits_for_the_required_mcp_servers() {
    setup();
    let python = lb_dir().join("../mcp/.tools/venv/bin/python");
    let server = lb_dir().join("../mcp/servers/pyserver.py");
    let (dir, config) = replica_plugins();
    let server_config = |mode: &str, extra: &str| {
        format!(
            "[mcp_servers.py]\ncommand = {:?}\nargs = [{:?}, {mode:?}]\nrequired = true\n{extra}\n",
            python.display().to_string(),
            server.display().to_string()
        )
    };
    std::fs::write(&config, server_config("tools", "")).unwrap();
    let replica = Replica::start_with("replica", dir.path(), &config, &shared_cache(), &[], &["--include-mcp"]);
    let waiting = get(&replica.address, "/readyz", &[]).unwrap();
    assert_eq!(waiting.status, 503, "ready before its required server started: {}", waiting.body);
    assert_eq!(waiting.body, "not ready: loading plugins and connecting the required MCP servers\n");
    replica.wait_serving();
    assert_eq!(get(&replica.address, "/readyz", &[]).unwrap().status, 200);
    let sum = message(&raw_call(&replica.address, "mcp__py__add_numbers", serde_json::json!({"a": 2, "b": 3}), &[]));
    assert_eq!(sum["result"]["structuredContent"]["result"], "The sum of 2 and 3 is 5.", "{sum}");
    let metrics = Exposition::read(&replica.address, &[]);
    assert_eq!(metrics.value("toolhost_tool_calls_total", &[("tool", "mcp__py__add_numbers"), ("outcome", "ok")]), 1.0);

    // A required server that never starts: never ready, and the process stops.
    std::fs::write(&config, server_config("hang", "startup_timeout = \"1s\"")).unwrap();
    let mut replica = Replica::start_with("replica", dir.path(), &config, &shared_cache(), &[], &["--include-mcp"]);
    let waiting = get(&replica.address, "/readyz", &[]).unwrap();
    assert_eq!(waiting.status, 503, "{}", waiting.body);
    let status = replica.process.0.wait().unwrap();
    assert_eq!(status.code(), Some(2));
    let said = replica.said_after_exit();
    assert!(said.iter().any(|line| line.contains("`py` did not start within 1s")), "{said:?}");
}

#[test]
fn a_replica_stopped_with_sigterm_mid_run_finishes_its_call_and_loses_none() {
    let (_dir, mut a, b) = two_replicas();
    let haproxy = Haproxy::start(&[&a, &b], true);
    let count = 24;
    let (_client, results) = client("2026-07-28", &haproxy.url(), count, 100, "rolling");
    let mut all = Vec::new();
    while all.iter().filter(|value: &&Value| value["ok"] == true).count() < 6 {
        all.push(results.recv_timeout(Duration::from_secs(60)).expect("the client stalled"));
    }
    // What an orchestrator does to roll a replica: SIGTERM while it runs a call.
    wait_for_metric(&a.address, &[], "toolhost_active_calls 1");
    let pid = i32::try_from(a.process.0.id()).unwrap();
    // SAFETY: kill(2) on the child this test started and has not reaped.
    assert_eq!(unsafe { libc::kill(pid, libc::SIGTERM) }, 0);
    all.extend(all_results(&results));
    let calls = per_call(&all, count, "rolling");
    let failed: Vec<&Value> = calls.iter().filter(|call| call["ok"] != true).collect();
    assert!(failed.is_empty(), "calls failed around the restart: {failed:?}\n{all:?}");
    let status = a.process.0.wait().unwrap();
    assert!(status.success(), "replica a did not exit cleanly after draining: {status}");
    let said = a.said_after_exit();
    assert!(said.iter().any(|line| line == "toolhost: stopped"), "{said:?}");
    assert!(Exposition::read(&b.address, &[]).echoes() >= (count / 2) as f64, "b took over");
}

/// The authorization server of the tested topology (`tests/mcp/auth_server.py`,
/// on loopback), and its issuer URL.
fn authorization_server(clients: &Value) -> (Running, String) {
    setup();
    let python = lb_dir().join("../mcp/.tools/venv/bin/python");
    let mut process = Running(
        Command::new(python)
            .arg(lb_dir().join("../mcp/auth_server.py"))
            .arg(clients.to_string())
            .stdin(Stdio::piped())
            .stdout(Stdio::piped())
            .spawn()
            .expect("start auth_server.py"),
    );
    let mut line = String::new();
    BufReader::new(process.0.stdout.take().unwrap()).read_line(&mut line).unwrap();
    let port = line.trim().strip_prefix("listening ").unwrap_or_else(|| panic!("auth_server.py said {line:?}"));
    (process, format!("http://127.0.0.1:{port}"))
}

#[test]
fn oauth_and_input_rounds_work_across_replicas_behind_haproxy() {
    let clients = json!({"agent": {"secret": "agent-secret", "scopes": ["mcp", "tools:hash"]}});
    let (_authorization, issuer) = authorization_server(&clients);
    let port = free_port();
    let url = format!("http://127.0.0.1:{port}/mcp");
    let dir = plugin_dir(&["hash", "content_kinds"]);
    let config = dir.path().join("toolhost.toml");
    std::fs::write(
        &config,
        format!(
            "[serve.oauth]\nissuer = \"{issuer}\"\nresource = \"{url}\"\nscopes = [\"mcp\"]\n\
             [serve.oauth.tools]\nhash = \"tools:hash\"\n[plugins.content_kinds]\nelicitation = true\n"
        ),
    )
    .unwrap();
    // The replicas share the key that seals a round's answers.
    let key = [("TOOLHOST_STATE_KEY", "one key for every replica, 32 bytes or more")];
    let a = Replica::start("replica a", dir.path(), &config, &shared_cache(), &key);
    let b = Replica::start("replica b", dir.path(), &config, &shared_cache(), &key);
    a.wait_serving();
    b.wait_serving();
    let haproxy = Haproxy::start_on(port, &[&a, &b], true);
    assert_eq!(haproxy.url(), url);

    // The client finds the authorization server through haproxy, gets a token,
    // and answers a three-round question whose rounds go round robin.
    let python = lb_dir().join("../mcp/.tools/venv/bin/python");
    let output = Command::new(python)
        .arg(lb_dir().join("../mcp/client.py"))
        .args(["--mode", "2026-07-28", "--url", &url, "--client", "agent:agent-secret:mcp,tools:hash"])
        .args(["--issuer", &issuer, "oauth"])
        .output()
        .unwrap();
    let stdout = String::from_utf8_lossy(&output.stdout);
    assert!(output.status.success(), "{stdout}{}", String::from_utf8_lossy(&output.stderr));
    let result: Value = serde_json::from_str(stdout.trim()).unwrap();
    assert!(result["tools"].as_array().unwrap().iter().any(|tool| tool == "sha256"), "{result}");
    let answered = result["multi_round"]["text"].as_str().unwrap_or_default();
    assert!(answered.starts_with("Both steps answered: "), "{result}");

    // Both replicas ran rounds of it (each replica's /metrics, with a token).
    let minted = {
        let now = std::time::SystemTime::now().duration_since(std::time::UNIX_EPOCH).unwrap().as_secs();
        let claims = json!({"iss": issuer, "aud": url, "exp": now + 600, "scope": "mcp", "sub": "operator"});
        let body = json!({"claims": claims}).to_string();
        let issuer_address = issuer.trim_start_matches("http://");
        let response =
            request(issuer_address, "POST", "/mint", &[("content-type", "application/json")], &body).unwrap();
        let minted: Value = serde_json::from_str(&response.body).unwrap();
        minted["token"].as_str().unwrap().to_owned()
    };
    let bearer = format!("Bearer {minted}");
    for replica in [&a, &b] {
        let metrics = get(&replica.address, "/metrics", &[("authorization", &bearer)]).unwrap();
        assert_eq!(metrics.status, 200, "{}", metrics.body);
        let rounds = metrics
            .body
            .lines()
            .filter(|line| {
                line.starts_with("toolhost_tool_calls_total{")
                    && line.contains("test_input_required_result_multi_round")
            })
            .map(|line| line.rsplit(' ').next().unwrap().parse::<f64>().unwrap())
            .sum::<f64>();
        assert!(rounds >= 1.0, "{}: {}", replica.address, metrics.body);
    }
    // Without a token, a replica's metrics are refused too.
    assert_eq!(get(&a.address, "/metrics", &[]).unwrap().status, 401);
}

// ---------------------------------------------------------------------------
// Shared state (`[state] url`): replicas behind plain round robin that keep
// their quotas (and tasks) in one Debian redis-server on loopback, installed
// by tests/state/redis.sh.

/// Debian's redis-server on a loopback port, without persistence, in a
/// private folder; killed when dropped.
struct Redis {
    process: Option<Running>,
    port: u16,
    dir: tempfile::TempDir,
    password: Option<String>,
    /// Serves TLS only (its certificate files in `dir`).
    tls: bool,
}

impl Redis {
    fn start() -> Redis {
        Redis::start_with(None)
    }

    /// With `requirepass PASSWORD`.
    fn start_with(password: Option<&str>) -> Redis {
        common::install("state/redis.sh");
        let (port, dir, password) = (free_port(), tempfile::tempdir().unwrap(), password.map(str::to_owned));
        let mut redis = Redis { process: None, port, dir, password, tls: false };
        redis.restart();
        redis
    }

    /// Serving TLS only, with a certificate `ca` issued for 127.0.0.1.
    fn start_tls(ca: &common::tls::TestCa) -> Redis {
        common::install("state/redis.sh");
        let (port, dir) = (free_port(), tempfile::tempdir().unwrap());
        std::fs::write(dir.path().join("server.pem"), &ca.server_cert_pem).unwrap();
        std::fs::write(dir.path().join("server.key"), &ca.server_key_pem).unwrap();
        std::fs::write(dir.path().join("ca.pem"), &ca.root_pem).unwrap();
        let mut redis = Redis { process: None, port, dir, password: None, tls: true };
        redis.restart();
        redis
    }

    fn url(&self) -> String {
        let scheme = if self.tls { "rediss" } else { "redis" };
        format!("{scheme}://127.0.0.1:{}/0", self.port)
    }

    /// Starts it again on the same port (empty: nothing was saved).
    fn restart(&mut self) {
        let root = lb_dir().join("../state/.tools/redis");
        let libraries = format!(
            "{}:{}",
            root.join("usr/lib/x86_64-linux-gnu").display(),
            root.join(format!("usr/lib/{}-linux-gnu", std::env::consts::ARCH)).display()
        );
        let port = self.port.to_string();
        let file = |name: &str| self.dir.path().join(name).display().to_string();
        let listen: Vec<String> = if self.tls {
            ["--port", "0", "--tls-port", &port, "--tls-auth-clients", "no"]
                .into_iter()
                .map(str::to_owned)
                .chain([
                    "--tls-cert-file".to_owned(),
                    file("server.pem"),
                    "--tls-key-file".to_owned(),
                    file("server.key"),
                ])
                .chain(["--tls-ca-cert-file".to_owned(), file("ca.pem")])
                .collect()
        } else {
            vec!["--port".to_owned(), port.clone()]
        };
        let process = Running(
            Command::new(root.join("usr/bin/redis-server"))
                .args(["--bind", "127.0.0.1", "--save", "", "--appendonly", "no"])
                .args(&listen)
                .arg("--dir")
                .arg(self.dir.path())
                .args(self.password.iter().flat_map(|password| ["--requirepass", password.as_str()]))
                .env("LD_LIBRARY_PATH", libraries)
                .stdin(Stdio::null())
                .stdout(Stdio::null())
                .stderr(Stdio::null())
                .spawn()
                .expect("start redis-server"),
        );
        let deadline = Instant::now() + Duration::from_secs(20);
        while !self.answers() {
            assert!(Instant::now() < deadline, "redis-server did not start on port {port}");
            std::thread::sleep(Duration::from_millis(20));
        }
        self.process = Some(process);
    }

    /// Whether it answers PING (with TLS: takes connections).
    fn answers(&self) -> bool {
        let Ok(mut stream) = TcpStream::connect(("127.0.0.1", self.port)) else { return false };
        if self.tls {
            return true;
        }
        stream.set_read_timeout(Some(Duration::from_secs(2))).unwrap();
        // Without the password the answer is an error (`-NOAUTH`), which
        // still says the server is up.
        let mut reply = [0u8; 1];
        stream.write_all(b"PING\r\n").is_ok()
            && stream.read_exact(&mut reply).is_ok()
            && (reply == *b"+" || reply == *b"-")
    }

    /// Kills it (SIGKILL, as a crash would).
    fn kill(&mut self) {
        drop(self.process.take());
    }
}

/// A plugins folder whose config keeps the state in `redis`, plus `extra`.
fn shared_plugins(redis: &Redis, extra: &str) -> (tempfile::TempDir, PathBuf) {
    let dir = plugin_dir(&["hash", "mcp_conformance"]);
    let config = dir.path().join("toolhost.toml");
    std::fs::write(&config, format!("[state]\nurl = \"{}\"\ntimeout = \"1s\"\n{extra}", redis.url())).unwrap();
    (dir, config)
}

/// The text of a call's result, and whether it is an error (a tool result
/// with `isError`, or a JSON-RPC error).
fn outcome(response: &Response) -> (bool, String) {
    let message = message(response);
    if let Some(error) = message.get("error") {
        return (true, error.to_string());
    }
    let result = &message["result"];
    (result["isError"] == json!(true), result["content"][0]["text"].as_str().unwrap_or_default().to_owned())
}

#[test]
fn a_rate_limit_holds_exactly_across_round_robin_replicas_and_outlives_the_store_going_away() {
    let mut redis = Redis::start();
    let quotas = "[quotas]\ntools = { sha256 = { rate = \"4/min\" }, slow_echo = { concurrency = 1 } }\n";
    let (dir, config) = shared_plugins(&redis, quotas);
    let replicas: Vec<Replica> = (0..3)
        .map(|index| Replica::start(&format!("replica {index}"), dir.path(), &config, &shared_cache(), &[]))
        .collect();
    for replica in &replicas {
        replica.wait_serving();
    }
    let haproxy = Haproxy::start_plain(&replicas.iter().collect::<Vec<_>>());

    // Ten calls through the balancer: each replica sees three or four of
    // them, and only four succeed in all (each replica alone would let four
    // through, twelve in all).
    let mut admitted = 0;
    for index in 0..10 {
        let (failed, text) = outcome(&raw_call(&haproxy.address, "sha256", json!({"text": index.to_string()}), &[]));
        if failed {
            assert!(text.contains("4 times per minute"), "call {index}: {text}");
        } else {
            admitted += 1;
        }
    }
    assert_eq!(admitted, 4, "a limit of 4/min across three replicas admitted {admitted} of 10 calls");
    for replica in &replicas {
        let metrics = get(&replica.address, "/metrics", &[]).unwrap().body;
        let sha256: f64 = metrics
            .lines()
            .filter(|line| line.starts_with("toolhost_tool_calls_total{") && line.contains("tool=\"sha256\""))
            .filter_map(|line| line.rsplit(' ').next()?.parse::<f64>().ok())
            .sum();
        assert!(sha256 >= 3.0, "round robin sent {sha256} calls to {}", replica.address);
    }

    // A concurrency cap of one holds across replicas too: while a call runs
    // on one replica, another replica refuses the next; once it is over, a
    // third one runs it.
    let deadline = Instant::now() + Duration::from_secs(60);
    loop {
        let first = replicas[0].address.clone();
        let running =
            std::thread::spawn(move || outcome(&raw_call(&first, "slow_echo", json!({"text": "a", "ms": 3000}), &[])));
        std::thread::sleep(Duration::from_millis(300));
        let (failed, text) = outcome(&raw_call(&replicas[1].address, "slow_echo", json!({"text": "b", "ms": 0}), &[]));
        let first = running.join().unwrap();
        if failed {
            assert!(text.contains("already has 1 call running"), "{text}");
            assert_eq!(first, (false, "a".to_owned()));
            break;
        }
        // The second call got the place first (a slow machine): the first
        // was refused or ran after it. Try again.
        assert!(Instant::now() < deadline, "the cap never refused a call on another replica");
    }
    // The place is given back as the call ends (at once, not at its lease's end).
    let given_back = Instant::now() + Duration::from_secs(5);
    loop {
        let (failed, text) = outcome(&raw_call(&replicas[2].address, "slow_echo", json!({"text": "c", "ms": 0}), &[]));
        if !failed {
            break;
        }
        assert!(Instant::now() < given_back, "the cap's place was not given back: {text}");
        std::thread::sleep(Duration::from_millis(50));
    }

    // The store goes away: calls are refused at once, with one line naming
    // the store and what happens (closed by default), never its password.
    redis.kill();
    let started = Instant::now();
    let (failed, text) = outcome(&raw_call(&haproxy.address, "sha256", json!({"text": "down"}), &[]));
    assert!(failed, "a call ran while the store was gone: {text}");
    eprintln!("refused while the store is gone: {text}");
    assert!(text.contains(&format!("the shared state store {} is unreachable", redis.url())), "{text}");
    assert!(text.contains("calls are refused until it is back"), "{text}");
    assert!(started.elapsed() < Duration::from_secs(10), "the refusal took {:?}", started.elapsed());

    // A replica that fails open runs the call under its own limits meanwhile.
    let (open_dir, open_config) = shared_plugins(&redis, "on_unavailable = \"open\"\n");
    let open = Replica::start("replica open", open_dir.path(), &open_config, &shared_cache(), &[]);
    open.wait_serving();
    let (failed, text) = outcome(&raw_call(&open.address, "sha256", json!({"text": "open"}), &[]));
    assert!(!failed, "a fail-open replica refused a call: {text}");

    // The store comes back (empty): the replicas reconnect by themselves and
    // the limit holds again, four more calls in all.
    redis.restart();
    let deadline = Instant::now() + Duration::from_secs(30);
    let mut admitted = 0;
    let mut refused = 0;
    while admitted + refused < 10 {
        let (failed, text) = outcome(&raw_call(&haproxy.address, "sha256", json!({"text": "again"}), &[]));
        if text.contains("is unreachable") {
            assert!(Instant::now() < deadline, "the replicas never reconnected to the store: {text}");
            std::thread::sleep(Duration::from_millis(200));
            continue;
        }
        if failed {
            assert!(text.contains("4 times per minute"), "{text}");
            refused += 1;
        } else {
            admitted += 1;
        }
    }
    assert_eq!(admitted, 4, "after the store came back, {admitted} of 10 calls were admitted");
}

/// Polls task `id` on `address` until its status is `status` (any other
/// status than `working` and `input_required` on the way fails); the last poll.
fn poll_until(address: &str, id: &str, status: &str, within: Duration) -> Value {
    let deadline = Instant::now() + within;
    loop {
        let polled = task_request(address, "tasks/get", json!({ "taskId": id }), id);
        let now = polled["result"]["status"].as_str().unwrap_or_else(|| panic!("{id} on {address}: {polled}"));
        if now == status {
            return polled;
        }
        assert!(now == "working" || now == "input_required", "{id} on {address} is {now}, not {status}: {polled}");
        assert!(Instant::now() < deadline, "{id} on {address} never became {status}: {polled}");
        std::thread::sleep(Duration::from_millis(100));
    }
}

fn start_task(address: &str, tool: &str, arguments: Value) -> String {
    let created = task_request(address, "tools/call", json!({ "name": tool, "arguments": arguments }), tool);
    assert_eq!(created["result"]["resultType"], "task", "{created}");
    created["result"]["taskId"].as_str().unwrap().to_owned()
}

#[test]
fn tasks_are_reached_from_every_replica_and_a_killed_replica_s_task_ends_failed() {
    let redis = Redis::start();
    let dir = plugin_dir(&["hash", "mcp_conformance", "content_kinds"]);
    let config = dir.path().join("toolhost.toml");
    let text = format!(
        "[state]\nurl = \"{}\"\n[serve.tasks]\ntools = {{ slow_echo = \"optional\", confirm_delete = \"optional\" }}\n\
         max_tasks = 8\nmax_tasks_per_requestor = 8\n[plugins.content_kinds]\nelicitation = true\n",
        redis.url()
    );
    std::fs::write(&config, text).unwrap();
    let (mut replicas, address) = three_named_replicas(dir.path(), &config);

    // Started on one replica, polled on the two others until it completes.
    let id = start_task(&address[0], "slow_echo", json!({ "text": "far", "ms": 1500 }));
    assert_eq!(task_request(&address[1], "tasks/get", json!({ "taskId": id }), &id)["result"]["status"], "working");
    let done = poll_until(&address[2], &id, "completed", Duration::from_secs(30));
    assert!(done.to_string().contains("far"), "{done}");
    assert_eq!(poll_until(&address[1], &id, "completed", Duration::from_secs(5)), done);

    // A question asked on one replica is seen on another and answered
    // through a third, which passes the answer to the running call.
    let id = start_task(&address[0], "confirm_delete", json!({ "filename": "notes.txt" }));
    let asked = poll_until(&address[1], &id, "input_required", Duration::from_secs(30));
    assert!(asked.to_string().contains("Delete notes.txt?"), "{asked}");
    let key = asked["result"]["inputRequests"].as_object().unwrap().keys().next().unwrap().clone();
    let answer = json!({ key: {"action": "accept", "content": {"confirm": true}} });
    let updated = task_request(&address[2], "tasks/update", json!({ "taskId": id, "inputResponses": answer }), &id);
    assert!(updated.get("error").is_none(), "{updated}");
    let done = poll_until(&address[1], &id, "completed", Duration::from_secs(30));
    assert!(done.to_string().contains("confirm_delete notes.txt"), "{done}");

    // Cancelled through another replica: cancelled at once everywhere, and
    // the running call is stopped (its own replica says cancelled too).
    let id = start_task(&address[1], "slow_echo", json!({ "text": "stop me", "ms": 9000 }));
    assert_eq!(task_request(&address[0], "tasks/get", json!({ "taskId": id }), &id)["result"]["status"], "working");
    let cancelled = task_request(&address[2], "tasks/cancel", json!({ "taskId": id }), &id);
    assert!(cancelled.get("error").is_none(), "{cancelled}");
    assert_eq!(task_request(&address[0], "tasks/get", json!({ "taskId": id }), &id)["result"]["status"], "cancelled");
    poll_until(&address[1], &id, "cancelled", Duration::from_secs(5));

    // Another client's view: an id it was never given is unknown on every replica.
    let last = if id.ends_with('0') { '1' } else { '0' };
    let never = format!("{}{last}", &id[..id.len() - 1]);
    let unknown = task_request(&address[0], "tasks/get", json!({ "taskId": never }), &never);
    assert_eq!(unknown["error"]["code"], -32602, "{unknown}");
    // Not blamed on another replica: with the store, any replica would know it.
    assert_eq!(unknown["error"]["data"]["reason"], "unknown", "{unknown}");
    for hostile in ["x".repeat(300), "../../etc".to_owned(), "toolhost:task:*".to_owned(), "*".to_owned()] {
        for method in ["tasks/get", "tasks/cancel"] {
            let answer = task_request(&address[2], method, json!({ "taskId": hostile }), &hostile);
            assert_eq!(answer["error"]["code"], -32602, "{method} {hostile:?}: {answer}");
        }
    }

    // Through a plain round-robin balancer every poll finds the task.
    let haproxy = Haproxy::start_plain(&replicas.iter().flatten().collect::<Vec<_>>());
    let id = start_task(&haproxy.address, "slow_echo", json!({ "text": "balanced", "ms": 1000 }));
    let done = poll_until(&haproxy.address, &id, "completed", Duration::from_secs(30));
    assert!(done.to_string().contains("balanced"), "{done}");
    drop(haproxy);

    // The replica running a task is killed (SIGKILL): the others say
    // `working` until its lease runs out, then `failed`, saying why.
    let id = start_task(&address[2], "slow_echo", json!({ "text": "lost", "ms": 9000 }));
    let polled = task_request(&address[0], "tasks/get", json!({ "taskId": id }), &id);
    assert_eq!(polled["result"]["status"], "working", "{polled}");
    let killed = Instant::now();
    drop(replicas[2].take());
    let failed = poll_until(&address[0], &id, "failed", Duration::from_secs(30));
    assert!(killed.elapsed() < Duration::from_secs(20), "the lost task took {:?} to fail", killed.elapsed());
    assert!(failed.to_string().contains("(`replica2`) stopped answering"), "{failed}");
    assert_eq!(poll_until(&address[1], &id, "failed", Duration::from_secs(5))["result"], failed["result"]);

    // `max_tasks = 8` holds over the replicas together: five tasks are kept
    // (until their TTL), so three more become tasks, wherever they start,
    // and the next call runs in its request instead.
    let mut made = 0;
    for attempt in 0..6 {
        let arguments = json!({ "name": "slow_echo", "arguments": { "text": "more", "ms": 300 } });
        let created = task_request(&address[attempt % 2], "tools/call", arguments, "slow_echo");
        match created["result"]["resultType"].as_str() {
            Some("task") => made += 1,
            _ => {
                assert!(created.to_string().contains("more"), "{created}");
                break;
            }
        }
    }
    assert_eq!(made, 3, "max_tasks = 8 over two replicas let {made} more tasks through after five");
}

#[test]
fn the_store_s_password_comes_from_a_file_or_the_environment_and_is_never_shown() {
    let password = "s3cret-valkey-password-0123456789";
    let redis = Redis::start_with(Some(password));
    let dir = plugin_dir(&["hash"]);
    let secret = dir.path().join("valkey-password");
    std::fs::write(&secret, format!("{password}\n")).unwrap();
    // A password file must be private (`readfile::read_private`).
    std::fs::set_permissions(&secret, std::os::unix::fs::PermissionsExt::from_mode(0o600)).unwrap();
    let quotas = "[quotas]\ntools = { sha256 = { rate = \"2/min\" } }\n";
    let url = redis.url();
    let good = dir.path().join("good.toml");
    std::fs::write(&good, format!("[state]\nurl = \"{url}\"\npassword_file = \"valkey-password\"\n{quotas}")).unwrap();
    // The wrong password in the URL, the right one from the environment: the environment wins.
    let wrong_url = url.replace("redis://", "redis://:not-it@");
    let from_env = dir.path().join("env.toml");
    std::fs::write(&from_env, format!("[state]\nurl = \"{wrong_url}\"\npassword_env = \"VALKEY_PW\"\n{quotas}"))
        .unwrap();
    let refused = dir.path().join("refused.toml");
    std::fs::write(&refused, format!("[state]\nurl = \"{wrong_url}\"\n{quotas}")).unwrap();

    let a = Replica::start("with file", dir.path(), &good, &shared_cache(), &[]);
    let b = Replica::start("with env", dir.path(), &from_env, &shared_cache(), &[("VALKEY_PW", password)]);
    let c = Replica::start("wrong password", dir.path(), &refused, &shared_cache(), &[]);
    a.wait_serving();
    b.wait_serving();
    // What the wrong password's replica says on its way up: the store's
    // line, without the password.
    let mut printed = Vec::new();
    while !printed.last().is_some_and(|line: &String| line.starts_with("toolhost: serving MCP at ")) {
        printed.push(c.lines.recv_timeout(Duration::from_secs(120)).expect("the replica never got ready"));
    }
    // One limit of 2/min for the two that got in.
    let results: Vec<(bool, String)> = [&a, &b, &a]
        .iter()
        .map(|replica| outcome(&raw_call(&replica.address, "sha256", json!({"text": "x"}), &[])))
        .collect();
    assert_eq!(results.iter().filter(|(failed, _)| !failed).count(), 2, "{results:?}");
    assert!(results[2].1.contains("2 times per minute"), "{results:?}");
    // The wrong password: refused in one line that says so, without it.
    let (failed, text) = outcome(&raw_call(&c.address, "sha256", json!({"text": "x"}), &[]));
    assert!(failed, "{text}");
    assert!(text.contains("the password was refused") && text.contains(&url), "{text}");
    assert!(!text.contains("not-it") && !text.contains(password), "{text}");
    drop((a, b));
    // Nothing c printed holds a password.
    drop(c.process);
    printed.extend(c.lines.try_iter());
    assert!(printed.iter().any(|line| line.contains("is unreachable (the password was refused)")), "{printed:?}");
    for line in &printed {
        assert!(!line.contains("not-it") && !line.contains(password), "{line}");
    }
}

#[test]
fn rediss_with_a_private_ca_shares_the_quotas_and_an_unknown_issuer_is_refused() {
    let ca = common::tls::TestCa::new("toolhost test valkey CA");
    let redis = Redis::start_tls(&ca);
    let dir = plugin_dir(&["hash"]);
    std::fs::write(dir.path().join("ca.pem"), &ca.root_pem).unwrap();
    let quotas = "[quotas]\ntools = { sha256 = { rate = \"2/min\" } }\n";
    let url = redis.url();
    let trusted = dir.path().join("trusted.toml");
    std::fs::write(&trusted, format!("[state]\nurl = \"{url}\"\nca_file = \"ca.pem\"\n{quotas}")).unwrap();
    let untrusted = dir.path().join("untrusted.toml");
    std::fs::write(&untrusted, format!("[state]\nurl = \"{url}\"\n{quotas}")).unwrap();
    let a = Replica::start("trusted a", dir.path(), &trusted, &shared_cache(), &[]);
    let b = Replica::start("trusted b", dir.path(), &trusted, &shared_cache(), &[]);
    let c = Replica::start("untrusted", dir.path(), &untrusted, &shared_cache(), &[]);
    for replica in [&a, &b, &c] {
        replica.wait_serving();
    }
    let results: Vec<(bool, String)> = [&a, &b, &a]
        .iter()
        .map(|replica| outcome(&raw_call(&replica.address, "sha256", json!({"text": "x"}), &[])))
        .collect();
    assert_eq!(results.iter().filter(|(failed, _)| !failed).count(), 2, "{results:?}");
    assert!(results[2].1.contains("2 times per minute"), "{results:?}");
    // The system's roots do not know the test CA: refused, in one line.
    let (failed, text) = outcome(&raw_call(&c.address, "sha256", json!({"text": "x"}), &[]));
    assert!(failed, "{text}");
    assert!(text.contains(&format!("the shared state store {url} is unreachable")), "{text}");
}

// ---------------------------------------------------------------------------
// 2025-11-25 sessions in the shared store: any replica serves any session.

/// A 2025-11-25 session's (or `initialize`'s) request to `address`.
fn in_session(address: &str, token: Option<&str>, session: Option<&str>, method: &str, body: &str) -> Response {
    let bearer = token.map(|token| format!("Bearer {token}"));
    let mut headers = vec![
        ("Content-Type", "application/json"),
        ("Accept", "application/json, text/event-stream"),
        ("MCP-Protocol-Version", "2025-11-25"),
    ];
    if let Some(bearer) = &bearer {
        headers.push(("Authorization", bearer));
    }
    if let Some(session) = session {
        headers.push(("Mcp-Session-Id", session));
    }
    request(address, method, "/mcp", &headers, body).expect("connect")
}

/// Opens a 2025-11-25 session through `address`: its id, or the refusal.
fn open_session(address: &str, token: Option<&str>) -> Result<String, Response> {
    open_session_with(address, token, json!({}))
}

/// [`open_session`] of a client declaring `capabilities`.
fn open_session_with(address: &str, token: Option<&str>, capabilities: Value) -> Result<String, Response> {
    let initialize = json!({"jsonrpc": "2.0", "id": 0, "method": "initialize", "params": {
        "protocolVersion": "2025-11-25", "capabilities": capabilities, "clientInfo": {"name": "raw", "version": "1"}}});
    let response = in_session(address, token, None, "POST", &initialize.to_string());
    if response.status != 200 {
        return Err(response);
    }
    let session = response
        .head
        .lines()
        .find_map(|line| {
            let (name, value) = line.split_once(':')?;
            name.eq_ignore_ascii_case("mcp-session-id").then(|| value.trim().to_owned())
        })
        .unwrap_or_else(|| panic!("no Mcp-Session-Id: {}", response.head));
    let initialized = json!({"jsonrpc": "2.0", "method": "notifications/initialized"}).to_string();
    let response = in_session(address, token, Some(&session), "POST", &initialized);
    assert_eq!(response.status, 202, "{}{}", response.head, response.body);
    Ok(session)
}

/// `sha256` of `text` in `session` through `address`: the response.
fn session_call(address: &str, token: Option<&str>, session: &str, id: u64, text: &str) -> Response {
    let call = json!({"jsonrpc": "2.0", "id": id, "method": "tools/call",
        "params": {"name": "sha256", "arguments": {"text": text}}});
    in_session(address, token, Some(session), "POST", &call.to_string())
}

/// The `sha256` calls `address` ran (its `/metrics`).
fn sha256_calls(address: &str, headers: &[(&str, &str)]) -> f64 {
    let metrics = get(address, "/metrics", headers).unwrap().body;
    metrics
        .lines()
        .filter(|line| line.starts_with("toolhost_tool_calls_total{") && line.contains("tool=\"sha256\""))
        .filter_map(|line| line.rsplit(' ').next()?.parse::<f64>().ok())
        .sum()
}

#[test]
fn a_2025_11_25_sdk_session_works_through_plain_round_robin_with_the_store() {
    let redis = Redis::start();
    let (dir, config) = shared_plugins(&redis, "");
    let replicas: Vec<Replica> = (0..3)
        .map(|index| Replica::start(&format!("replica {index}"), dir.path(), &config, &shared_cache(), &[]))
        .collect();
    for replica in &replicas {
        replica.wait_serving();
    }
    let haproxy = Haproxy::start_plain(&replicas.iter().collect::<Vec<_>>());
    // The official Python SDK in its 2025-11-25 mode: one session, nine
    // calls, every request balanced round robin with nothing sticky.
    let (_client, results) = client("legacy", &haproxy.url(), 9, 0, "shared");
    let all = all_results(&results);
    assert_eq!(all.last().unwrap()["protocol"], "2025-11-25", "{all:?}");
    let calls = per_call(&all, 9, "shared");
    assert!(calls.iter().all(|call| call["ok"] == true), "{all:?}");
    assert!(!all.iter().any(|line| line.get("reconnected").is_some()), "the session was lost: {all:?}");
    let served: Vec<f64> = replicas.iter().map(|replica| Exposition::read(&replica.address, &[]).echoes()).collect();
    assert_eq!(served.iter().sum::<f64>(), 9.0, "{served:?}");
    assert!(served.iter().filter(|&&echoes| echoes > 0.0).count() >= 2, "one session, several replicas: {served:?}");
}

#[test]
fn a_shared_session_is_its_owner_s_only_ends_everywhere_and_outlives_the_store_going_away() {
    let (_authorization, issuer) = authorization_server(&json!({}));
    let mut redis = Redis::start();
    let port = free_port();
    let url = format!("http://127.0.0.1:{port}/mcp");
    let extra = format!(
        "[serve]\nmax_sessions_per_requestor = 2\n\
         [serve.oauth]\nissuer = \"{issuer}\"\nresource = \"{url}\"\nscopes = [\"mcp\"]\n"
    );
    let (dir, config) = shared_plugins(&redis, &extra);
    let replicas: Vec<Replica> = (0..3)
        .map(|index| Replica::start(&format!("replica {index}"), dir.path(), &config, &shared_cache(), &[]))
        .collect();
    for replica in &replicas {
        replica.wait_serving();
    }
    let haproxy = Haproxy::launch(port, haproxy_plain_config(port, &replicas.iter().collect::<Vec<_>>()));
    // Two users with the same scopes, different subjects.
    let mint = |subject: &str| {
        let now = std::time::SystemTime::now().duration_since(std::time::UNIX_EPOCH).unwrap().as_secs();
        let claims = json!({"iss": issuer, "aud": url, "exp": now + 600, "scope": "mcp", "sub": subject});
        let body = json!({"claims": claims}).to_string();
        let response = request(
            issuer.trim_start_matches("http://"),
            "POST",
            "/mint",
            &[("content-type", "application/json")],
            &body,
        )
        .unwrap();
        let minted: Value = serde_json::from_str(&response.body).unwrap();
        minted["token"].as_str().unwrap().to_owned()
    };
    let (alice, mallory) = (mint("alice"), mint("mallory"));

    // Alice's session, opened through the balancer, is served by every
    // replica asked directly and through the balancer.
    let session = open_session(&haproxy.address, Some(&alice)).unwrap();
    let mut id = 1;
    for address in replicas.iter().map(|replica| replica.address.as_str()).chain([haproxy.address.as_str(); 3]) {
        id += 1;
        let response = session_call(address, Some(&alice), &session, id, &format!("call {id}"));
        assert_eq!(response.status, 200, "{address}: {}{}", response.head, response.body);
        let (failed, text) = outcome(&response);
        assert!(!failed && text.len() == 64, "{address}: {text}");
    }
    let bearer = format!("Bearer {alice}");
    for replica in &replicas {
        assert!(sha256_calls(&replica.address, &[("authorization", &bearer)]) >= 1.0, "{}", replica.address);
    }

    // Another subject with the same scopes replaying the id: on every
    // replica, the answer of a session that does not exist; the session is
    // untouched.
    for replica in &replicas {
        let response = session_call(&replica.address, Some(&mallory), &session, 90, "stolen");
        assert_eq!(response.status, 404, "{}: {}", replica.address, response.body);
        // Her DELETE gets what a DELETE of an id never given out gets, and ends nothing.
        let deleted = in_session(&replica.address, Some(&mallory), Some(&session), "DELETE", "");
        let made_up = in_session(&replica.address, Some(&mallory), Some("0123456789abcdef"), "DELETE", "");
        assert_eq!((deleted.status, deleted.body), (made_up.status, made_up.body), "{}", replica.address);
    }
    assert_eq!(session_call(&haproxy.address, Some(&alice), &session, 91, "still").status, 200);
    // An id no replica would mint (far too long) is unknown, without a store lookup.
    let long = "a".repeat(4000);
    assert_eq!(session_call(&replicas[0].address, Some(&alice), &long, 89, "long").status, 404);

    // `max_sessions_per_requestor = 2` counts every replica's sessions:
    // Alice's second opens (on another replica), her third is refused
    // wherever it lands; Mallory has her own two.
    let second = open_session(&haproxy.address, Some(&alice)).unwrap();
    for replica in &replicas {
        let refused = open_session(&replica.address, Some(&alice)).unwrap_err();
        assert_eq!(refused.status, 503, "{}", refused.body);
        assert!(refused.body.contains("this client has 2 MCP sessions open"), "{}", refused.body);
    }
    open_session(&haproxy.address, Some(&mallory)).unwrap();

    // A DELETE through one replica ends the session on all of them, and
    // gives Alice's place back.
    let deleted = in_session(&replicas[1].address, Some(&alice), Some(&session), "DELETE", "");
    assert!((200..300).contains(&deleted.status), "{}{}", deleted.head, deleted.body);
    for replica in &replicas {
        let response = session_call(&replica.address, Some(&alice), &session, 92, "ended");
        assert_eq!(response.status, 404, "{}: {}", replica.address, response.body);
    }
    let third = open_session(&haproxy.address, Some(&alice)).unwrap();
    assert_eq!(session_call(&replicas[2].address, Some(&alice), &third, 93, "third").status, 200);

    // The store goes away: a session's requests are refused with one line
    // naming it (closed by default), never served by a replica alone.
    redis.kill();
    let refused = session_call(&haproxy.address, Some(&alice), &second, 94, "down");
    assert_eq!(refused.status, 503, "{}", refused.body);
    assert!(
        refused.body.contains(&format!("the shared state store {} is unreachable", redis.url())),
        "{}",
        refused.body
    );
    // It comes back empty (no persistence): the sessions it held are gone
    // on every replica (404: the client initializes again), and new ones work.
    redis.restart();
    let deadline = Instant::now() + Duration::from_secs(30);
    loop {
        let response = session_call(&haproxy.address, Some(&alice), &second, 95, "back");
        if response.status == 404 {
            break;
        }
        assert_eq!(response.status, 503, "{}", response.body);
        assert!(Instant::now() < deadline, "the replicas never reconnected to the store: {}", response.body);
        std::thread::sleep(Duration::from_millis(200));
    }
    // Each replica reconnects on its own: one whose first request since the
    // restart found its connection gone says 503 once more, then 404.
    for replica in &replicas {
        loop {
            let response = session_call(&replica.address, Some(&alice), &third, 96, "gone");
            if response.status == 404 {
                break;
            }
            assert_eq!(response.status, 503, "{}: {}", replica.address, response.body);
            assert!(Instant::now() < deadline, "{} never reconnected to the store: {}", replica.address, response.body);
            std::thread::sleep(Duration::from_millis(200));
        }
    }
    let again = open_session(&haproxy.address, Some(&alice)).unwrap();
    for (index, replica) in replicas.iter().enumerate() {
        let response = session_call(&replica.address, Some(&alice), &again, 97 + index as u64, "again");
        assert_eq!(response.status, 200, "{}", response.body);
    }
}

#[test]
fn a_2025_11_25_client_s_answer_reaches_the_replica_whose_call_asked() {
    let redis = Redis::start();
    let dir = plugin_dir(&["content_kinds"]);
    let config = dir.path().join("toolhost.toml");
    let text = format!("[state]\nurl = \"{}\"\n[plugins.content_kinds]\nelicitation = true\n", redis.url());
    std::fs::write(&config, text).unwrap();
    let (a, b) = (
        Replica::start("replica a", dir.path(), &config, &shared_cache(), &[]),
        Replica::start("replica b", dir.path(), &config, &shared_cache(), &[]),
    );
    a.wait_serving();
    b.wait_serving();
    let initialize = json!({"jsonrpc": "2.0", "id": 0, "method": "initialize", "params": {
        "protocolVersion": "2025-11-25", "capabilities": {"elicitation": {}},
        "clientInfo": {"name": "raw", "version": "1"}}});
    let opened = in_session(&a.address, None, None, "POST", &initialize.to_string());
    let session = opened
        .head
        .lines()
        .find_map(|line| {
            let (name, value) = line.split_once(':')?;
            name.eq_ignore_ascii_case("mcp-session-id").then(|| value.trim().to_owned())
        })
        .unwrap_or_else(|| panic!("{}", opened.head));
    let initialized = json!({"jsonrpc": "2.0", "method": "notifications/initialized"}).to_string();
    assert_eq!(in_session(&b.address, None, Some(&session), "POST", &initialized).status, 202);

    // A call on replica a asks the client (on the call's own stream); the
    // client's answer goes, as a round-robin balancer may send it, to b.
    let call = json!({"jsonrpc": "2.0", "id": 7, "method": "tools/call",
        "params": {"name": "test_elicitation", "arguments": {"message": "who are you?"}}});
    let headers = [
        ("Content-Type", "application/json"),
        ("Accept", "application/json, text/event-stream"),
        ("MCP-Protocol-Version", "2025-11-25"),
        ("Mcp-Session-Id", session.as_str()),
    ];
    let stream = send(&a.address, "POST", "/mcp", &headers, &call.to_string()).unwrap();
    let mut lines = BufReader::new(stream).lines().map_while(Result::ok);
    let mut next_message = || -> Value {
        let line = lines.find(|line| line.starts_with("data: {")).expect("the call's stream ended");
        serde_json::from_str(&line["data: ".len()..]).unwrap()
    };
    let asked = next_message();
    assert_eq!(asked["method"], "elicitation/create", "{asked}");
    let answer = json!({"jsonrpc": "2.0", "id": asked["id"], "result": {"action": "accept",
        "content": {"username": "ada", "email": "ada@example.com"}}});
    let answered = in_session(&b.address, None, Some(&session), "POST", &answer.to_string());
    assert_eq!(answered.status, 202, "{}", answered.body);
    let result = next_message();
    assert_eq!(result["id"], 7, "{result}");
    let text = result["result"]["content"][0]["text"].as_str().unwrap_or_default();
    assert!(text.contains("ada@example.com"), "{result}");

    // The log level the client sets through one replica holds on the other:
    // a call on replica a logs to the session's GET stream there (where this
    // revision's notifications go) once the level was set through b.
    let level = json!({"jsonrpc": "2.0", "id": 9, "method": "logging/setLevel", "params": {"level": "debug"}});
    assert_eq!(in_session(&b.address, None, Some(&session), "POST", &level.to_string()).status, 200);
    let listen =
        [("Accept", "text/event-stream"), ("MCP-Protocol-Version", "2025-11-25"), ("Mcp-Session-Id", session.as_str())];
    let stream = send(&a.address, "GET", "/mcp", &listen, "").unwrap();
    let mut notifications = BufReader::new(stream).lines().map_while(Result::ok);
    assert!(notifications.next().is_some_and(|line| line.starts_with("HTTP/1.1 200")), "the GET stream was refused");
    let call = json!({"jsonrpc": "2.0", "id": 10, "method": "tools/call",
        "params": {"name": "test_logging_tool", "arguments": {}}});
    assert_eq!(in_session(&a.address, None, Some(&session), "POST", &call.to_string()).status, 200);
    // Bounded: the stream's keep-alives (every 15 s) end a wait past the deadline.
    let deadline = Instant::now() + Duration::from_secs(10);
    assert!(
        notifications
            .take_while(|_| Instant::now() < deadline)
            .any(|line| line.starts_with("data: ") && line.contains("notifications/message")),
        "the level set through replica b did not reach replica a"
    );
}

/// `slow_echo` of `text` after `ms` in `session` through `address`: the response.
fn session_echo(address: &str, session: &str, id: u64, text: &str, ms: u64) -> Response {
    let call = json!({"jsonrpc": "2.0", "id": id, "method": "tools/call",
        "params": {"name": "slow_echo", "arguments": {"text": text, "ms": ms}}});
    in_session(address, None, Some(session), "POST", &call.to_string())
}

#[test]
fn one_requestor_s_call_slots_hold_across_replicas_and_a_killed_replica_s_slot_comes_back() {
    let redis = Redis::start();
    let (dir, config) = shared_plugins(&redis, "[serve]\nmax_calls_per_requestor = 1\n");
    let mut replicas: Vec<Option<Replica>> = (0..3)
        .map(|index| Some(Replica::start(&format!("replica {index}"), dir.path(), &config, &shared_cache(), &[])))
        .collect();
    let address: Vec<String> = replicas.iter().map(|replica| replica.as_ref().unwrap().address.clone()).collect();
    for replica in replicas.iter().flatten() {
        replica.wait_serving();
    }
    let haproxy = Haproxy::start_plain(&replicas.iter().flatten().collect::<Vec<_>>());
    // Two requestors: two 2025-11-25 sessions, opened through the balancer.
    let alice = open_session(&haproxy.address, None).unwrap();
    let bob = open_session(&haproxy.address, None).unwrap();

    // Alice's first call runs on replica 0; her second, on replica 1, waits
    // for it (one slot over all replicas), then runs.
    let (first_address, first_session) = (address[0].clone(), alice.clone());
    let first = std::thread::spawn(move || {
        let response = session_echo(&first_address, &first_session, 1, "first", 3000);
        (outcome(&response), Instant::now())
    });
    wait_for_metric(&address[0], &[], "toolhost_active_calls 1");
    let (second_address, second_session) = (address[1].clone(), alice.clone());
    let second = std::thread::spawn(move || {
        let response = session_echo(&second_address, &second_session, 2, "second", 0);
        (outcome(&response), Instant::now())
    });
    // Bob is not held up by her: his calls run at once wherever they land.
    for id in 0..3 {
        let started = Instant::now();
        let (failed, text) = outcome(&session_echo(&haproxy.address, &bob, 10 + id, "bob", 0));
        assert_eq!((failed, text.as_str()), (false, "bob"));
        assert!(started.elapsed() < Duration::from_secs(2), "bob's call took {:?}", started.elapsed());
    }
    assert!(!second.is_finished() || first.is_finished(), "alice's second call ran beside her first");
    let (first, first_ended) = first.join().unwrap();
    let (second, second_ended) = second.join().unwrap();
    assert_eq!(first, (false, "first".to_owned()));
    assert_eq!(second, (false, "second".to_owned()), "the second call waited, then ran");
    assert!(second_ended >= first_ended, "alice's second call ended before her first");

    // The replica running alice's call is killed (SIGKILL): her slot is held
    // by its lease until that runs out, so her next call waits its bound (its
    // timeout, 10 s) and is refused saying why, and a later one runs.
    let (held_address, held_session) = (address[2].clone(), alice.clone());
    let _held = std::thread::spawn(move || session_echo(&held_address, &held_session, 3, "held", 9000));
    wait_for_metric(&address[2], &[], "toolhost_active_calls 1");
    let killed = Instant::now();
    drop(replicas[2].take());
    let (failed, text) = outcome(&session_echo(&address[0], &alice, 4, "after", 0));
    assert!(failed, "alice's call ran while her slot was held by the killed replica: {text}");
    assert!(text.contains("already runs 1 call at once") && text.contains("max_calls_per_requestor"), "{text}");
    loop {
        let (failed, text) = outcome(&session_echo(&address[1], &alice, 5, "after", 0));
        if !failed {
            assert_eq!(text, "after");
            break;
        }
        assert!(text.contains("max_calls_per_requestor"), "{text}");
        assert!(killed.elapsed() < Duration::from_secs(45), "the killed replica's slot never came back");
    }
    eprintln!("the killed replica's slot came back after {:?}", killed.elapsed());
}

/// One JSON-RPC request of a 2025-11-25 `session` through `address`: the answer.
fn ask_2025(address: &str, session: &str, id: u64, method: &str, params: Value) -> Value {
    let body = json!({"jsonrpc": "2.0", "id": id, "method": method, "params": params});
    let response = in_session(address, None, Some(session), "POST", &body.to_string());
    assert_eq!(response.status, 200, "{method} on {address}: {}{}", response.head, response.body);
    message(&response)
}

/// Starts `slow_echo` of `text` after `ms` as a 2025-11-25 task of `session` on `address`: its id.
fn start_2025_task(address: &str, session: &str, text: &str, ms: u64) -> String {
    let call = json!({"name": "slow_echo", "arguments": {"text": text, "ms": ms}, "task": {"ttl": 60000}});
    let started = ask_2025(address, session, 1, "tools/call", call);
    assert_eq!(started["result"]["task"]["status"], "working", "{started}");
    started["result"]["task"]["taskId"].as_str().unwrap().to_owned()
}

/// Polls 2025-11-25 task `id` through `address` until it is `status`.
fn poll_2025(address: &str, session: &str, id: &str, status: &str, within: Duration) -> Value {
    let deadline = Instant::now() + within;
    loop {
        let polled = ask_2025(address, session, 2, "tasks/get", json!({ "taskId": id }));
        let now = polled["result"]["status"].as_str().unwrap_or_else(|| panic!("{id} on {address}: {polled}"));
        if now == status {
            return polled;
        }
        assert!(now == "working" || now == "input_required", "{id} on {address} is {now}, not {status}: {polled}");
        assert!(Instant::now() < deadline, "{id} on {address} never became {status}: {polled}");
        std::thread::sleep(Duration::from_millis(100));
    }
}

#[test]
fn a_2025_11_25_session_s_experimental_tasks_are_reached_from_every_replica() {
    let redis = Redis::start();
    let dir = plugin_dir(&["hash", "mcp_conformance", "content_kinds"]);
    let config = dir.path().join("toolhost.toml");
    let text = format!(
        "[state]\nurl = \"{}\"\n[serve.tasks]\ntools = {{ slow_echo = \"optional\", confirm_delete = \"optional\" }}\n\
         [plugins.content_kinds]\nelicitation = true\n",
        redis.url()
    );
    std::fs::write(&config, text).unwrap();
    let (mut replicas, address) = three_named_replicas(dir.path(), &config);
    let haproxy = Haproxy::start_plain(&replicas.iter().flatten().collect::<Vec<_>>());
    let alice = open_session(&haproxy.address, None).unwrap();
    let bob = open_session(&haproxy.address, None).unwrap();

    // Started on one replica, polled on another, its result read on a third.
    let id = start_2025_task(&address[0], &alice, "far", 1500);
    let mut started = vec![id.clone()];
    let polled = ask_2025(&address[1], &alice, 2, "tasks/get", json!({ "taskId": id }));
    assert_eq!(polled["result"]["status"], "working", "{polled}");
    assert_eq!(polled["result"]["taskId"], id.as_str(), "{polled}");
    let result = ask_2025(&address[2], &alice, 3, "tasks/result", json!({ "taskId": id }));
    assert_eq!(result["result"]["content"][0]["text"], "far", "{result}");
    assert_eq!(result["result"]["_meta"]["io.modelcontextprotocol/related-task"]["taskId"], id.as_str());
    poll_2025(&address[1], &alice, &id, "completed", Duration::from_secs(5));

    // Another session sees it on no replica: as an id never given out.
    let never = format!("{}{}", &id[..id.len() - 1], if id.ends_with('0') { '1' } else { '0' });
    for (index, address) in address.iter().enumerate() {
        let theirs = ask_2025(address, &bob, 4, "tasks/get", json!({ "taskId": id }));
        let unknown = ask_2025(address, &bob, 4, "tasks/get", json!({ "taskId": never }));
        assert_eq!(theirs["error"]["code"], -32602, "replica {index}: {theirs}");
        assert_eq!(
            theirs["error"]["message"].as_str().unwrap().replace(&id, "ID"),
            unknown["error"]["message"].as_str().unwrap().replace(&never, "ID"),
            "replica {index}"
        );
    }

    // Cancelled through another replica: cancelled everywhere at once, and
    // the running replica stops the call (its own view says so too).
    let id = start_2025_task(&address[1], &alice, "stop me", 9000);
    started.push(id.clone());
    let cancelled = ask_2025(&address[2], &alice, 5, "tasks/cancel", json!({ "taskId": id }));
    assert_eq!(cancelled["result"]["status"], "cancelled", "{cancelled}");
    assert_eq!(ask_2025(&address[0], &alice, 6, "tasks/get", json!({ "taskId": id }))["result"]["status"], "cancelled");
    poll_2025(&address[1], &alice, &id, "cancelled", Duration::from_secs(5));
    let again = ask_2025(&address[0], &alice, 7, "tasks/cancel", json!({ "taskId": id }));
    assert_eq!(again["error"]["code"], -32602, "{again}");
    let result = ask_2025(&address[0], &alice, 8, "tasks/result", json!({ "taskId": id }));
    assert_eq!(result["error"]["data"]["reason"], "cancelled", "{result}");

    // Through plain round robin, every request finds it.
    let id = start_2025_task(&haproxy.address, &alice, "balanced", 1000);
    let result = ask_2025(&haproxy.address, &alice, 9, "tasks/result", json!({ "taskId": id }));
    assert_eq!(result["result"]["content"][0]["text"], "balanced", "{result}");
    for _ in 0..3 {
        poll_2025(&haproxy.address, &alice, &id, "completed", Duration::from_secs(5));
    }
    started.push(id.clone());

    // Every replica lists all of the session's tasks, wherever they ran,
    // oldest first; another session's list is empty everywhere.
    for address in &address {
        let listed = ask_2025(address, &alice, 11, "tasks/list", json!({}));
        let ids: Vec<&str> =
            listed["result"]["tasks"].as_array().unwrap().iter().filter_map(|task| task["taskId"].as_str()).collect();
        assert_eq!(ids, started.iter().map(String::as_str).collect::<Vec<_>>(), "{address}: {listed}");
        let theirs = ask_2025(address, &bob, 12, "tasks/list", json!({}));
        assert_eq!(theirs["result"]["tasks"], json!([]), "{address}: {theirs}");
    }

    // A question of a task running on one replica goes to the client on a
    // `tasks/result` stream open on another; the answer, posted to a third,
    // reaches the call.
    let carol = open_session_with(&haproxy.address, None, json!({"elicitation": {}})).unwrap();
    let call = json!({"name": "confirm_delete", "arguments": {"filename": "notes.txt"}, "task": {"ttl": 60000}});
    let started = ask_2025(&address[0], &carol, 20, "tools/call", call);
    let id = started["result"]["task"]["taskId"].as_str().unwrap_or_else(|| panic!("{started}")).to_owned();
    poll_2025(&address[1], &carol, &id, "input_required", Duration::from_secs(30));
    let headers = [
        ("Content-Type", "application/json"),
        ("Accept", "application/json, text/event-stream"),
        ("MCP-Protocol-Version", "2025-11-25"),
        ("Mcp-Session-Id", carol.as_str()),
    ];
    let body = json!({"jsonrpc": "2.0", "id": 21, "method": "tasks/result", "params": {"taskId": id}});
    let stream = send(&address[1], "POST", "/mcp", &headers, &body.to_string()).unwrap();
    let mut lines = BufReader::new(stream).lines().map_while(Result::ok);
    let mut next_message = || -> Value {
        let line = lines.find(|line| line.starts_with("data: {")).expect("the tasks/result stream ended");
        serde_json::from_str(&line["data: ".len()..]).unwrap()
    };
    let asked = next_message();
    assert_eq!(asked["method"], "elicitation/create", "{asked}");
    assert!(asked.to_string().contains("Delete notes.txt?"), "{asked}");
    assert_eq!(asked["params"]["_meta"]["io.modelcontextprotocol/related-task"]["taskId"], id.as_str(), "{asked}");
    let answer =
        json!({"jsonrpc": "2.0", "id": asked["id"], "result": {"action": "accept", "content": {"confirm": true}}});
    let answered = in_session(&address[2], None, Some(&carol), "POST", &answer.to_string());
    assert_eq!(answered.status, 202, "{}", answered.body);
    let result = next_message();
    assert_eq!(result["id"], 21, "{result}");
    let text = result["result"]["content"][0]["text"].as_str().unwrap_or_default();
    assert!(text.contains("confirm_delete notes.txt: action=accept"), "{result}");
    poll_2025(&address[2], &carol, &id, "completed", Duration::from_secs(5));

    // The replica running one is killed (SIGKILL): the others end it
    // `failed` once its lease runs out, saying why.
    let id = start_2025_task(&address[2], &alice, "lost", 9000);
    let killed = Instant::now();
    drop(replicas[2].take());
    let failed = poll_2025(&address[0], &alice, &id, "failed", Duration::from_secs(30));
    assert!(killed.elapsed() < Duration::from_secs(20), "the lost task took {:?} to fail", killed.elapsed());
    assert!(failed.to_string().contains("(`replica2`) stopped answering"), "{failed}");
    let result = ask_2025(&address[1], &alice, 10, "tasks/result", json!({ "taskId": id }));
    assert!(result["error"]["message"].as_str().unwrap_or_default().contains("stopped answering"), "{result}");
}

/// The next JSON-RPC message on an SSE stream's `lines`.
fn next(lines: &mut impl Iterator<Item = String>) -> Value {
    let line = lines.find(|line| line.starts_with("data: {")).expect("the call's stream ended");
    serde_json::from_str(&line["data: ".len()..]).unwrap()
}

#[test]
fn one_requestor_s_waiting_questions_are_counted_over_every_replica() {
    let redis = Redis::start();
    let dir = plugin_dir(&["content_kinds"]);
    let config = dir.path().join("toolhost.toml");
    let text = format!(
        "[state]\nurl = \"{}\"\n[serve]\nmax_questions_per_requestor = 1\n[plugins.content_kinds]\nelicitation = true\n",
        redis.url()
    );
    std::fs::write(&config, text).unwrap();
    let (a, b) = (
        Replica::start("replica a", dir.path(), &config, &shared_cache(), &[]),
        Replica::start("replica b", dir.path(), &config, &shared_cache(), &[]),
    );
    a.wait_serving();
    b.wait_serving();
    let session = open_session_with(&a.address, None, json!({"elicitation": {}})).unwrap();
    let headers = [
        ("Content-Type", "application/json"),
        ("Accept", "application/json, text/event-stream"),
        ("MCP-Protocol-Version", "2025-11-25"),
        ("Mcp-Session-Id", session.as_str()),
    ];
    let ask = |address: &str, id: u64| {
        let call = json!({"jsonrpc": "2.0", "id": id, "method": "tools/call",
            "params": {"name": "test_elicitation", "arguments": {"message": "who are you?"}}});
        let stream = send(address, "POST", "/mcp", &headers, &call.to_string()).unwrap();
        BufReader::new(stream).lines().map_while(Result::ok)
    };

    // A call on replica a asks; while its question waits, the same client's
    // call on replica b may not ask another: refused to the plugin, saying why.
    let mut first = ask(&a.address, 1);
    let asked = next(&mut first);
    assert_eq!(asked["method"], "elicitation/create", "{asked}");
    let mut second = ask(&b.address, 2);
    let refused = next(&mut second);
    assert_eq!(refused["id"], 2, "the second call asked too: {refused}");
    assert!(refused.to_string().contains("max_questions_per_requestor"), "{refused}");

    // Answered: the place is given back, and a question may wait again.
    let answer = json!({"jsonrpc": "2.0", "id": asked["id"], "result": {"action": "accept",
        "content": {"username": "ada", "email": "ada@example.com"}}});
    assert_eq!(in_session(&b.address, None, Some(&session), "POST", &answer.to_string()).status, 202);
    let result = next(&mut first);
    assert!(result.to_string().contains("ada@example.com"), "{result}");
    let deadline = Instant::now() + Duration::from_secs(10);
    loop {
        let mut third = ask(&b.address, 3);
        let message = next(&mut third);
        if message["method"] == "elicitation/create" {
            break;
        }
        assert!(message.to_string().contains("max_questions_per_requestor"), "{message}");
        assert!(Instant::now() < deadline, "the answered question's place never came back");
        std::thread::sleep(Duration::from_millis(100));
    }
}

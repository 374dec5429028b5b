//! `toolhost serve` driven by real third-party MCP clients: the official
//! Python SDK (`mcp`, over stdio and Streamable HTTP, in both protocol
//! generations) and the MCP conformance suite (over HTTP), plus the HTTP
//! front's own checks with raw requests (Host, Origin, token, sizes, the
//! session cap and idle expiry, and one session's slow call beside another
//! session's list and call). The clients are installed by
//! `tests/mcp/setup.sh` into a gitignored folder the first time; a failed
//! install fails the tests.

use crate::common;

use common::{plugin, plugin_dir, shared_cache};
use serde_json::{Value, json};
use std::io::{BufRead, BufReader, Read, Write};
use std::net::TcpStream;
use std::path::{Path, PathBuf};
use std::process::{Child, Command, Stdio};
use std::sync::mpsc;
use std::time::{Duration, Instant};

fn mcp_dir() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("../tests/mcp")
}

/// Installs the clients (once per test binary; setup.sh itself is idempotent).
fn tools() -> PathBuf {
    common::install("mcp/setup.sh");
    mcp_dir().join(".tools")
}

fn python() -> PathBuf {
    tools().join("venv/bin/python")
}

/// A plugins folder and config for the serve tests: hash, the runaway
/// `spin_forever` (no fuel limit to speak of, a 3 s timeout), `fetch` granted
/// a loopback address, and `sha512` denied. One call at a time, so a guest
/// left running after a cancellation would hold up the next call.
fn served() -> (tempfile::TempDir, PathBuf) {
    let dir = plugin_dir(&["hash", "spin_forever", "fetch"]);
    let config = dir.path().join("toolhost.toml");
    std::fs::write(
        &config,
        "max_concurrent_calls = 1\n\
         [plugins.spin_forever.limits]\nfuel = 1_000_000_000_000_000\ntimeout = \"3s\"\n\
         [plugins.fetch]\nhttp = [\"http://127.0.0.1:9\"]\n\
         [approvals]\ntools = { sha512 = \"deny\" }\n",
    )
    .unwrap();
    (dir, config)
}

fn toolhost_args(dir: &Path, config: &Path) -> Vec<String> {
    vec![
        env!("CARGO_BIN_EXE_toolhost").to_owned(),
        "--plugins".to_owned(),
        dir.display().to_string(),
        "--config".to_owned(),
        config.display().to_string(),
    ]
}

/// A child process killed when dropped.
pub(crate) struct Running(Child);

impl Running {
    pub(crate) fn new(child: Child) -> Running {
        Running(child)
    }

    pub(crate) fn id(&self) -> u32 {
        self.0.id()
    }

    /// Its exit status, if it ends within `limit`.
    pub(crate) fn wait_within(&mut self, limit: Duration) -> Option<std::process::ExitStatus> {
        let deadline = Instant::now() + limit;
        while Instant::now() < deadline {
            if let Some(status) = self.0.try_wait().unwrap() {
                return Some(status);
            }
            std::thread::sleep(Duration::from_millis(50));
        }
        None
    }
}

impl Drop for Running {
    fn drop(&mut self) {
        let _ = self.0.kill();
        let _ = self.0.wait();
    }
}

/// Starts `toolhost serve --http 127.0.0.1:0 EXTRA…` and returns it with its URL.
pub(crate) fn serve_http(dir: &Path, config: &Path, extra: &[&str], env: &[(&str, &str)]) -> (Running, String) {
    let mut command = Command::new(env!("CARGO_BIN_EXE_toolhost"));
    command
        .args(&toolhost_args(dir, config)[1..])
        .args(["serve", "--http", "127.0.0.1:0"])
        .args(extra)
        .env("TOOLHOST_CACHE_DIR", shared_cache())
        .envs(env.iter().copied())
        .stdin(Stdio::null())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped());
    let mut child = Running(command.spawn().expect("start toolhost serve --http"));
    let stderr = child.0.stderr.take().unwrap();
    let (sender, receiver) = mpsc::channel();
    std::thread::spawn(move || {
        for line in BufReader::new(stderr).lines().map_while(Result::ok) {
            eprintln!("[serve] {line}");
            if let Some(url) = line.strip_prefix("toolhost: serving MCP at ") {
                let _ = sender.send(url.to_owned());
            }
        }
    });
    let url = receiver.recv_timeout(Duration::from_secs(120)).expect("toolhost serve --http did not start");
    (child, url)
}

/// Runs `client.py` and parses the JSON it prints.
pub(crate) fn python_client(args: &[String]) -> Value {
    run_python(&python(), "client.py", args)
}

/// Runs the script `name` of tests/mcp with `python` and parses the JSON it prints.
fn run_python(python: &Path, name: &str, args: &[String]) -> Value {
    let output = Command::new(python)
        .arg(mcp_dir().join(name))
        .args(args)
        .env("TOOLHOST_CACHE_DIR", shared_cache())
        .output()
        .unwrap_or_else(|err| panic!("run {name}: {err}"));
    let stdout = String::from_utf8_lossy(&output.stdout);
    assert!(output.status.success(), "{name} {args:?} failed:\n{stdout}\n{}", String::from_utf8_lossy(&output.stderr));
    serde_json::from_str(stdout.trim()).unwrap_or_else(|err| panic!("{name} printed no JSON ({err}): {stdout}"))
}

pub(crate) fn stdio_args(mode: &str, scenario: &str, dir: &Path, config: &Path) -> Vec<String> {
    let mut args = vec!["--mode".to_owned(), mode.to_owned(), scenario.to_owned(), "--".to_owned()];
    args.extend(toolhost_args(dir, config));
    args
}

pub(crate) fn http_args(mode: &str, scenario: &str, url: &str) -> Vec<String> {
    vec!["--mode".to_owned(), mode.to_owned(), "--url".to_owned(), url.to_owned(), scenario.to_owned()]
}

fn check_basics(result: &Value, mode: &str) {
    let expected_protocol = if mode == "legacy" { "2025-11-25" } else { "2026-07-28" };
    assert_eq!(result["protocol"], expected_protocol, "{result}");
    let tools: Vec<&str> = result["tools"].as_array().unwrap().iter().map(|t| t.as_str().unwrap()).collect();
    assert!(tools.contains(&"sha256") && tools.contains(&"spin_forever") && tools.contains(&"fetch"), "{tools:?}");
    assert!(!tools.contains(&"sha512"), "a denied tool is not listed: {tools:?}");

    // The same input schema `tools --json` shows.
    let listed = common::toolhost(
        Path::new("."),
        &["--plugins", &plugin_dir(&["hash"]).path().display().to_string(), "tools", "--json"],
    );
    let cli: Vec<Value> = serde_json::from_slice(&listed.stdout).unwrap();
    let sha256 = cli.iter().find(|tool| tool["name"] == "sha256").unwrap();
    assert_eq!(result["schemas"]["sha256"], sha256["input_schema"]);

    // Annotations: derived from grants, never looser than them.
    assert_eq!(result["annotations"]["sha256"]["read_only_hint"], true, "{result}");
    assert_eq!(result["annotations"]["sha256"]["open_world_hint"], false, "{result}");
    assert_eq!(result["annotations"]["fetch"]["open_world_hint"], true, "{result}");

    let sha256 = &result["sha256"];
    assert_eq!(sha256["is_error"], false, "{sha256}");
    assert_eq!(sha256["text"], "2cf24dba5fb0a30e26e83b2ac5b9e29e1b161e5c1fa7425e73043362938b9824");
    let usage = &sha256["meta"]["toolhost/usage"];
    // sha256 is read-only and idempotent: a server asked it again (the second
    // protocol generation, same process) gives its result from `[cache]`, and says so.
    match sha256["meta"].get("toolhost/cached") {
        None => assert!(usage["fuel"].as_u64().unwrap() > 0 && usage["wall_us"].as_u64().is_some(), "{sha256}"),
        Some(cached) => assert!(cached["ageMs"].is_u64() && usage["fuel"] == 0, "{sha256}"),
    }

    let runaway = &result["runaway"];
    assert_eq!(runaway["is_error"], true, "{runaway}");
    assert!(runaway["text"].as_str().unwrap().starts_with("spin_forever: timed out after 3000ms"), "{runaway}");

    let bad = &result["bad_arguments"];
    assert_eq!(bad["is_error"], true, "{bad}");
    assert!(bad["text"].as_str().unwrap().starts_with("sha256: invalid arguments: at `/text`"), "{bad}");

    assert_eq!(result["unknown"]["code"], -32602, "{result}");
    assert!(result["unknown"]["message"].as_str().unwrap().contains("nope"), "{result}");

    let cancelled = &result["cancelled"];
    assert_eq!(cancelled["completed"], false, "{cancelled}");
    assert!(cancelled["returned_after_s"].as_f64().unwrap() < 1.0, "{cancelled}");
    // One call at a time: had the cancelled guest kept running (up to its 3 s
    // timeout), this call would have waited for it.
    let after = &result["after_cancel"];
    assert_eq!(after["is_error"], false, "{after}");
    assert!(after["took_s"].as_f64().unwrap() < 1.0, "the cancelled guest was not stopped: {after}");
}

#[test]
fn python_client_over_stdio_in_both_protocol_generations() {
    let (dir, config) = served();
    for mode in ["legacy", "2026-07-28"] {
        let result = python_client(&stdio_args(mode, "basics", dir.path(), &config));
        check_basics(&result, mode);
    }
}

#[test]
fn python_client_over_http_in_both_protocol_generations() {
    let (dir, config) = served();
    let (_server, url) = serve_http(dir.path(), &config, &[], &[]);
    for mode in ["legacy", "2026-07-28"] {
        let result = python_client(&http_args(mode, "basics", &url));
        check_basics(&result, mode);
    }
}

#[test]
fn quotas_refuse_over_mcp_with_a_typed_retry_after() {
    let dir = plugin_dir(&["hash", "spin_forever"]);
    let config = dir.path().join("toolhost.toml");
    std::fs::write(
        &config,
        "[plugins.spin_forever.limits]\nfuel = 1_000_000_000_000_000\ntimeout = \"1s\"\n\
         [quotas]\ntools = { sha256 = { rate = \"2/min\" } }\nplugins = { spin_forever = { concurrency = 1 } }\n",
    )
    .unwrap();
    for mode in ["legacy", "2026-07-28"] {
        // A new process each time: quotas are per process.
        let result = python_client(&stdio_args(mode, "quotas", dir.path(), &config));
        let calls = result["sha256"].as_array().unwrap();
        assert!(calls[..2].iter().all(|call| call["is_error"] == false), "{mode}: {result}");
        let limited = &calls[2];
        assert_eq!(limited["is_error"], true, "{mode}: {result}");
        let text = limited["text"].as_str().unwrap();
        assert!(text.contains("may be called 2 times per minute") && text.contains("retry after"), "{text}");
        let wait = limited["meta"]["toolhost/retryAfterMs"].as_u64().unwrap_or_default();
        assert!((1..=30_000).contains(&wait), "{mode}: {limited}");
        let busy = &result["busy"];
        assert_eq!(busy["is_error"], true, "{mode}: {result}");
        assert!(busy["text"].as_str().unwrap().contains("already has 1 call running"), "{mode}: {busy}");
        assert!(busy["meta"].get("toolhost/retryAfterMs").is_none(), "{mode}: {busy}");
        for spin in [&result["first"], &result["after"]] {
            assert!(
                spin["text"].as_str().unwrap().contains("timed out after 1000ms"),
                "{mode}: the cap was freed: {result}"
            );
        }
    }
}

#[test]
fn plugin_logs_reach_a_client_that_set_a_level() {
    let (dir, config) = served();
    let result = python_client(&stdio_args("legacy", "logs", dir.path(), &config));
    assert_eq!(result["result"]["is_error"], false, "{result}");
    let logs = result["logs"].as_array().unwrap();
    assert!(
        logs.iter()
            .any(|log| log["level"] == "debug" && log["data"]["message"] == "hashing text" && log["logger"] == "hash"),
        "{result}"
    );
}

/// Runs the `listchanged` scenario and copies `echo.wasm` into the folder once
/// the client is listening.
fn list_changed(args: Vec<String>, dir: &Path) -> Value {
    let mut child = Running(
        Command::new(python())
            .arg(mcp_dir().join("client.py"))
            .args(&args)
            .env("TOOLHOST_CACHE_DIR", shared_cache())
            .stdout(Stdio::piped())
            .stderr(Stdio::piped())
            .spawn()
            .expect("run client.py"),
    );
    let stderr = child.0.stderr.take().unwrap();
    let (sender, receiver) = mpsc::channel();
    let listening_marker = if args.contains(&"2026-07-28".to_owned()) { "listening" } else { "\"ready\"" };
    std::thread::spawn(move || {
        for line in BufReader::new(stderr).lines().map_while(Result::ok) {
            eprintln!("[client] {line}");
            if line.contains(listening_marker) {
                let _ = sender.send(());
            }
        }
    });
    receiver.recv_timeout(Duration::from_secs(120)).expect("the client never got ready");
    std::thread::sleep(Duration::from_millis(100));
    let copied = Instant::now();
    let staged = dir.join(".echo.wasm.part");
    std::fs::copy(plugin("echo"), &staged).unwrap();
    std::fs::rename(&staged, dir.join("echo.wasm")).unwrap();
    let mut stdout = String::new();
    child.0.stdout.take().unwrap().read_to_string(&mut stdout).unwrap();
    assert!(child.0.wait().unwrap().success(), "client.py failed: {stdout}");
    assert!(copied.elapsed() < Duration::from_secs(10));
    serde_json::from_str(stdout.trim()).unwrap_or_else(|err| panic!("{err}: {stdout}"))
}

fn check_list_changed(result: &Value) {
    let before: Vec<&str> = result["before"].as_array().unwrap().iter().map(|t| t.as_str().unwrap()).collect();
    let after: Vec<&str> = result["after"].as_array().unwrap().iter().map(|t| t.as_str().unwrap()).collect();
    assert!(!before.contains(&"echo") && after.contains(&"echo"), "{result}");
    assert!(result["waited_s"].as_f64().unwrap() <= 2.5, "list_changed came late: {result}");
}

#[test]
fn a_plugin_copied_in_is_announced_to_stdio_and_http_clients() {
    let (dir, config) = served();
    let result = list_changed(stdio_args("legacy", "listchanged", dir.path(), &config), dir.path());
    check_list_changed(&result);

    let (dir, config) = served();
    let (_server, url) = serve_http(dir.path(), &config, &[], &[]);
    let result = list_changed(http_args("2026-07-28", "listchanged", &url), dir.path());
    check_list_changed(&result);
    // The new tool is callable.
    let echo = python_client(&http_args("legacy", "basics", &url));
    assert!(echo["tools"].as_array().unwrap().iter().any(|tool| tool == "echo"), "{echo}");
}

/// One raw HTTP/1.1 request; returns the status code and the whole response.
fn raw_request(url: &str, request: &str) -> (u16, String) {
    let address = url.trim_start_matches("http://").trim_end_matches("/mcp");
    let mut stream = TcpStream::connect(address).unwrap();
    stream.set_read_timeout(Some(Duration::from_secs(10))).unwrap();
    stream.write_all(request.as_bytes()).unwrap();
    let mut response = Vec::new();
    let mut buffer = [0u8; 8192];
    // Read until the headers and a little body are in, or the server closes.
    let started = Instant::now();
    while started.elapsed() < Duration::from_secs(5) {
        match stream.read(&mut buffer) {
            Ok(0) => break,
            Ok(n) => {
                response.extend_from_slice(&buffer[..n]);
                let text = String::from_utf8_lossy(&response);
                if let Some(end) = text.find("\r\n\r\n")
                    && text.len() > end + 4
                {
                    break;
                }
            }
            Err(_) => break,
        }
    }
    let text = String::from_utf8_lossy(&response).into_owned();
    let status = text.split(' ').nth(1).and_then(|code| code.parse().ok()).unwrap_or(0);
    (status, text)
}

const INITIALIZE: &str = r#"{"jsonrpc":"2.0","id":1,"method":"initialize","params":{"protocolVersion":"2025-11-25","capabilities":{},"clientInfo":{"name":"raw","version":"1"}}}"#;

fn post(host: &str, extra_headers: &str, body: &str) -> String {
    format!(
        "POST /mcp HTTP/1.1\r\nHost: {host}\r\nContent-Type: application/json\r\n\
         Accept: application/json, text/event-stream\r\n{extra_headers}Content-Length: {}\r\nConnection: close\r\n\r\n{body}",
        body.len()
    )
}

#[test]
fn http_checks_host_origin_token_path_and_body_size() {
    let (dir, config) = served();
    let token = "a-long-random-test-token-0123456789";
    let (_server, url) = serve_http(dir.path(), &config, &["--token-env", "SERVE_TOKEN"], &[("SERVE_TOKEN", token)]);
    let host = url.trim_start_matches("http://").trim_end_matches("/mcp").to_owned();
    let auth = format!("Authorization: Bearer {token}\r\n");

    let (status, text) = raw_request(&url, &post(&host, &auth, INITIALIZE));
    assert_eq!(status, 200, "{text}");
    assert!(text.contains("mcp-session-id") || text.contains("Mcp-Session-Id"), "{text}");

    let (status, text) = raw_request(&url, &post(&host, "", INITIALIZE));
    assert_eq!(status, 401, "no token: {text}");
    assert!(text.to_ascii_lowercase().contains("www-authenticate: bearer"), "{text}");
    let (status, _) =
        raw_request(&url, &post(&host, "Authorization: Bearer wrong-token-wrong-token-000\r\n", INITIALIZE));
    assert_eq!(status, 401, "a wrong token");

    let (status, text) = raw_request(&url, &post("evil.example.com", &auth, INITIALIZE));
    assert_eq!(status, 403, "DNS rebinding (Host): {text}");
    let (status, text) =
        raw_request(&url, &post(&host, &format!("{auth}Origin: http://evil.example.com\r\n"), INITIALIZE));
    assert_eq!(status, 403, "a foreign Origin: {text}");
    let (status, text) =
        raw_request(&url, &post(&host, &format!("{auth}Origin: http://localhost:3000\r\n"), INITIALIZE));
    assert_eq!(status, 200, "a loopback Origin: {text}");

    let (status, _) = raw_request(&url, &post(&host, &auth, INITIALIZE).replace("POST /mcp", "POST /other"));
    assert_eq!(status, 404);
    let huge = format!(
        "POST /mcp HTTP/1.1\r\nHost: {host}\r\n{auth}Content-Type: application/json\r\nContent-Length: {}\r\nConnection: close\r\n\r\n",
        64 << 20
    );
    let (status, text) = raw_request(&url, &huge);
    assert_eq!(status, 413, "{text}");
    let (status, text) = raw_request(&url, &post(&host, &auth, "{not json"));
    assert!((400..500).contains(&status), "a malformed body gets a client error: {text}");
}

/// One raw HTTP/1.1 request (`Connection: close`), read until the server
/// closes the connection; returns the status code and the whole response.
fn raw_exchange(url: &str, request: &str) -> (u16, String) {
    let address = url.trim_start_matches("http://").trim_end_matches("/mcp");
    let mut stream = TcpStream::connect(address).unwrap();
    stream.set_read_timeout(Some(Duration::from_secs(60))).unwrap();
    stream.write_all(request.as_bytes()).unwrap();
    let mut response = Vec::new();
    let _ = stream.read_to_end(&mut response);
    let text = String::from_utf8_lossy(&response).into_owned();
    let status = text.split(' ').nth(1).and_then(|code| code.parse().ok()).unwrap_or(0);
    (status, text)
}

/// The `Mcp-Session-Id` header of a raw response.
fn session_of(response: &str) -> String {
    response
        .lines()
        .find_map(|line| {
            let (name, value) = line.split_once(':')?;
            name.eq_ignore_ascii_case("mcp-session-id").then(|| value.trim().to_owned())
        })
        .unwrap_or_else(|| panic!("no session id in: {response}"))
}

const INITIALIZED: &str = r#"{"jsonrpc":"2.0","method":"notifications/initialized"}"#;
const PING: &str = r#"{"jsonrpc":"2.0","id":2,"method":"ping"}"#;

/// A 2025-11-25 session over raw HTTP: initialize, then initialized.
fn open_session(url: &str) -> String {
    let host = url.trim_start_matches("http://").trim_end_matches("/mcp");
    let (status, text) = raw_exchange(url, &post(host, "", INITIALIZE));
    assert_eq!(status, 200, "{text}");
    let session = session_of(&text);
    let (status, text) = in_session(url, &session, INITIALIZED);
    assert_eq!(status, 202, "{text}");
    session
}

/// Sends `body` in `session`.
fn in_session(url: &str, session: &str, body: &str) -> (u16, String) {
    let host = url.trim_start_matches("http://").trim_end_matches("/mcp");
    let headers = format!("Mcp-Session-Id: {session}\r\nMCP-Protocol-Version: 2025-11-25\r\n");
    raw_exchange(url, &post(host, &headers, body))
}

#[test]
fn a_slow_call_never_blocks_another_sessions_list_or_call() {
    let slow = common::server::TestServer::start();
    let dir = plugin_dir(&["hash", "fetch"]);
    let config = dir.path().join("toolhost.toml");
    std::fs::write(
        &config,
        format!("[plugins.fetch]\nhttp = [\"http://127.0.0.1:{}\"]\nlimits = {{ timeout = \"30s\" }}\n", slow.port),
    )
    .unwrap();
    let (_server, url) = serve_http(dir.path(), &config, &[], &[]);

    // Session A calls fetch on `/slow`, which answers after 5 seconds.
    let a = open_session(&url);
    let a_done = std::sync::Arc::new(std::sync::atomic::AtomicBool::new(false));
    let call = format!(
        r#"{{"jsonrpc":"2.0","id":3,"method":"tools/call","params":{{"name":"fetch","arguments":{{"url":"{}"}}}}}}"#,
        slow.url("/slow")
    );
    let slow_call = {
        let (url, a_done) = (url.clone(), a_done.clone());
        std::thread::spawn(move || {
            let answer = in_session(&url, &a, &call);
            a_done.store(true, std::sync::atomic::Ordering::SeqCst);
            answer
        })
    };
    // A's guest is running once its request reaches the server.
    let deadline = Instant::now() + Duration::from_secs(30);
    while !slow.seen().iter().any(|path| path == "/slow") {
        assert!(Instant::now() < deadline, "session A's call never started");
        std::thread::sleep(Duration::from_millis(20));
    }

    // Meanwhile session B opens, lists and calls, and gets its answers.
    let b = open_session(&url);
    let (status, listed) = in_session(&url, &b, r#"{"jsonrpc":"2.0","id":2,"method":"tools/list"}"#);
    assert!(status == 200 && listed.contains("\"sha256\""), "{listed}");
    let (status, hashed) = in_session(
        &url,
        &b,
        r#"{"jsonrpc":"2.0","id":3,"method":"tools/call","params":{"name":"sha256","arguments":{"text":"hello"}}}"#,
    );
    assert!(
        status == 200 && hashed.contains("2cf24dba5fb0a30e26e83b2ac5b9e29e1b161e5c1fa7425e73043362938b9824"),
        "{hashed}"
    );
    assert!(!a_done.load(std::sync::atomic::Ordering::SeqCst), "session B finished only after A's slow call");

    let (status, fetched) = slow_call.join().unwrap();
    assert_eq!(status, 200, "{fetched}");
    assert!(fetched.contains("\"result\"") && !fetched.contains("\"isError\":true"), "{fetched}");
}

#[test]
fn http_sessions_are_capped_and_expire_when_idle() {
    let (dir, config) = served();
    let mut text = std::fs::read_to_string(&config).unwrap();
    text.push_str("[serve]\nmax_sessions = 2\nsession_idle = \"2s\"\n");
    std::fs::write(&config, text).unwrap();
    let (_server, url) = serve_http(dir.path(), &config, &[], &[]);
    let host = url.trim_start_matches("http://").trim_end_matches("/mcp").to_owned();

    let first = open_session(&url);
    let second = open_session(&url);
    // The third is refused, saying what the limit is and how to raise it.
    let (status, text) = raw_exchange(&url, &post(&host, "", INITIALIZE));
    assert_eq!(status, 503, "{text}");
    assert!(
        text.contains("2 MCP sessions are open")
            && text.contains("`max_sessions = 2` in [serve]")
            && text.contains("raise `max_sessions`"),
        "{text}"
    );

    // `second` stays in use while `first` goes idle past `session_idle`.
    let until = Instant::now() + Duration::from_secs(3);
    while Instant::now() < until {
        let (status, text) = in_session(&url, &second, PING);
        assert_eq!(status, 200, "a session in use stays open: {text}");
        std::thread::sleep(Duration::from_millis(300));
    }
    let (status, text) = in_session(&url, &first, PING);
    assert_eq!(status, 404, "an expired session is unknown (the client initializes again): {text}");
    let (status, text) = in_session(&url, &second, PING);
    assert_eq!(status, 200, "{text}");
    // Its place is free again.
    let third = open_session(&url);
    let (status, text) = in_session(&url, &third, PING);
    assert_eq!(status, 200, "{text}");
}

#[test]
fn serve_refuses_a_non_loopback_address_without_a_token() {
    let (dir, config) = served();
    let mut args = toolhost_args(dir.path(), &config);
    args.remove(0);
    args.extend(["serve", "--http", "0.0.0.0:0"].map(String::from));
    let args: Vec<&str> = args.iter().map(String::as_str).collect();
    let output = common::toolhost(Path::new("."), &args);
    assert_eq!(output.status.code(), Some(2));
    let stderr = common::stderr(&output);
    assert!(stderr.contains("refusing to serve on 0.0.0.0") && stderr.contains("--token-env"), "{stderr}");
    assert_eq!(stderr.lines().count(), 1, "one line: {stderr}");
}

#[test]
fn conformance_suite_passes_both_revisions_except_the_baselined_features() {
    let tools = tools();
    // `content_kinds` (contract 0.2.0) offers the suite's content tools.
    let dir = plugin_dir(&["hash", "mcp_conformance", "content_kinds"]);
    // Outside the folder the plugin is granted: no grant may hold the config.
    let elsewhere = tempfile::tempdir().unwrap();
    let config = elsewhere.path().join("toolhost.toml");
    // Its tools that ask the client may (the suite answers), and
    // `test_trigger_tool_change` changes its tool list by rewriting its
    // manifest in the plugins folder, which `serve` watches.
    // The task fixtures run as MCP tasks (`slow_compute` sleeps up to a minute).
    std::fs::write(
        &config,
        format!(
            "[plugins.content_kinds]\nelicitation = true\nsampling = {{ max_tokens = 2000 }}\nroots = true\n\
             dirs = [\"{}:/plugins:rw\"]\n[plugins.content_kinds.limits]\ntimeout = \"90s\"\n{TASK_FIXTURES}",
            dir.path().display()
        ),
    )
    .unwrap();
    let (_server, url) = serve_http(dir.path(), &config, &[], &[]);
    // Each revision's frozen requirement set, with its own baseline of what it
    // scores and toolhost does not offer (each entry with its reason).
    let always = [
        "tools-list",
        "server-sse-multiple-streams",
        "dns-rebinding-protection",
        "tools-call-simple-text",
        "tools-call-image",
        "tools-call-audio",
        "tools-call-embedded-resource",
        "tools-call-mixed-content",
        "tools-call-with-progress",
        "resources-list",
        "resources-read-text",
        "resources-read-binary",
        "resources-templates-read",
        "prompts-list",
        "prompts-get-with-args",
        "prompts-get-embedded-resource",
        "prompts-get-with-image",
        "completion-complete",
    ];
    for (revision, passing) in [
        (
            "2025-11-25",
            &[
                "server-initialize",
                "ping",
                "tools-call-error",
                "tools-call-sampling",
                "tools-call-elicitation",
                "elicitation-sep1034-defaults",
                "elicitation-sep1330-enums",
            ][..],
        ),
        (
            "2026-07-28",
            &[
                "tools-call-error",
                "server-stateless",
                "input-required-result-basic-elicitation",
                "input-required-result-basic-sampling",
                "input-required-result-basic-list-roots",
                "input-required-result-request-state",
                "input-required-result-multiple-input-requests",
                "input-required-result-multi-round",
                "input-required-result-non-tool-request",
                "input-required-result-result-type",
                "input-required-result-tampered-state",
                "input-required-result-capability-check",
                "input-required-result-missing-input-response",
                "input-required-result-ignore-extra-params",
                "input-required-result-unsupported-methods",
                "input-required-result-validate-input",
            ][..],
        ),
    ] {
        let results = tempfile::tempdir().unwrap();
        let output = Command::new(tools.join("node22/node_modules/.bin/node"))
            .arg(tools.join("conformance/node_modules/@modelcontextprotocol/conformance/dist/index.js"))
            .args(["server", "--url", &url, "--requirements", revision, "--expected-failures"])
            .arg(mcp_dir().join(format!("conformance-{revision}.yaml")))
            .arg("-o")
            .arg(results.path())
            .output()
            .expect("run the conformance suite");
        let stdout = String::from_utf8_lossy(&output.stdout);
        let stderr = String::from_utf8_lossy(&output.stderr);
        assert!(output.status.success(), "{revision}: conformance failed outside the baseline:\n{stdout}\n{stderr}");
        for scenario in always.iter().chain(passing) {
            let line = stdout
                .lines()
                .find(|line| line.contains(&format!(" {scenario}:")))
                .unwrap_or_else(|| panic!("{revision}: {scenario} did not run:\n{stdout}"));
            assert!(line.contains(" 0 failed"), "{revision}: {line}\n{stdout}");
        }
    }
    // The tasks extension (SEP-2663) is an extension of 2026-07-28: the
    // suite runs its scenarios unscored there (and has none for 2025-11-25,
    // whose experimental tasks it replaced), so each is run here on its own,
    // on the 2026-07-28 wire (the suite's choice for extensions), and must
    // pass every check.
    for scenario in TASK_SCENARIOS {
        let results = tempfile::tempdir().unwrap();
        let output = Command::new(tools.join("node22/node_modules/.bin/node"))
            .arg(tools.join("conformance/node_modules/@modelcontextprotocol/conformance/dist/index.js"))
            .args(["server", "--url", &url, "--scenario", scenario, "-o"])
            .arg(results.path())
            .output()
            .expect("run the conformance suite");
        let stdout = String::from_utf8_lossy(&output.stdout);
        let stderr = String::from_utf8_lossy(&output.stderr);
        assert!(output.status.success(), "{scenario} failed:\n{stdout}\n{stderr}");
        let summary = stdout.lines().find(|line| line.starts_with("Passed: ")).unwrap_or_default();
        assert!(summary.contains(", 0 failed, 0 warnings"), "{scenario}: {summary}\n{stdout}");
        // Only the scenario the suite itself leaves pending may skip.
        let passed = summary.strip_prefix("Passed: ").and_then(|rest| rest.split('/').next()).unwrap_or("0");
        assert!(scenario == "tasks-status-notifications" || passed != "0", "{scenario} ran no check:\n{stdout}");
    }
}

/// The conformance suite's scenarios of the tasks extension.
const TASK_SCENARIOS: [&str; 10] = [
    "tasks-lifecycle",
    "tasks-capability-negotiation",
    "tasks-wire-fields",
    "tasks-request-state-removal",
    "tasks-mrtr-input",
    "tasks-request-headers",
    "tasks-dispatch-and-envelope",
    "tasks-status-notifications",
    "tasks-required-task-error",
    "tasks-mrtr-composition",
];

/// `[serve.tasks]` for `content_kinds`' task fixtures, as the conformance
/// suite wants them: `greet` never a task, `failing_job` and
/// `protocol_error_job` only as tasks, and `test_tool_with_task` asking its
/// question in the request (its first second) before it becomes a task.
const TASK_FIXTURES: &str = "[serve.tasks]\n\
    tools = { slow_compute = \"optional\", confirm_delete = \"optional\", multi_input = \"optional\", \
    failing_job = \"required\", protocol_error_job = \"required\", \
    test_tool_with_task = { support = \"required\", after = \"1s\" } }\n";

/// `content_kinds` with its task fixtures, granted what they ask, a 5 s
/// timeout, and one call at a time (a cancelled task's guest left running
/// would hold up the next call).
fn task_plugins() -> (tempfile::TempDir, PathBuf) {
    let dir = plugin_dir(&["content_kinds"]);
    let config = dir.path().join("toolhost.toml");
    std::fs::write(
        &config,
        format!(
            "max_concurrent_calls = 1\n[plugins.content_kinds]\nelicitation = true\nroots = true\n\
             [plugins.content_kinds.limits]\ntimeout = \"5s\"\n{TASK_FIXTURES}"
        ),
    )
    .unwrap();
    (dir, config)
}

#[test]
fn long_calls_run_as_tasks_for_the_official_python_client() {
    let (dir, config) = task_plugins();
    let (_server, url) = serve_http(dir.path(), &config, &[], &[]);
    let out = python_client(&["--url".to_owned(), url, "tasks".to_owned()]);

    // tools/list says which tools may run as tasks.
    assert_eq!(out["listed"]["slow_compute"], "optional", "{out}");
    assert_eq!(out["listed"]["failing_job"], "required", "{out}");
    assert_eq!(out["listed"]["greet"], Value::Null, "{out}");
    // Each task's result is what the call returns: text, a tool error, a
    // protocol error (failed, -32021), the plugin's timeout still applying.
    assert_eq!(out["slow"]["text"], "computed py in 2.5s", "{out}");
    assert_eq!(out["confirm"]["text"], r#"confirm_delete notes.txt: action=accept, content={"confirm":true}"#);
    assert_eq!(out["failing"]["is_error"], true, "{out}");
    assert_eq!(out["protocol_error"]["code"], -32021, "{out}");
    assert_eq!(out["timed_out"]["is_error"], true, "{out}");
    assert!(out["timed_out"]["text"].as_str().unwrap().contains("timed out after 5000ms"), "{out}");
    assert_eq!(out["greet"]["text"], "Hello, Ada!", "{out}");
    let tasks = out["tasks"].as_array().unwrap();
    let by_tool = |tool: &str| tasks.iter().find(|task| task["tool"] == tool).unwrap_or_else(|| panic!("{out}"));
    assert_eq!(tasks.len(), 5, "greet is no task: {out}");
    assert_eq!(by_tool("slow_compute")["statuses"], json!(["working", "completed"]), "{out}");
    assert!(by_tool("slow_compute")["messages"][0].as_str().unwrap().contains("computing py"), "{out}");
    assert_eq!(by_tool("confirm_delete")["statuses"], json!(["working", "input_required", "completed"]), "{out}");
    assert_eq!(by_tool("confirm_delete")["asked"], json!(["confirm"]), "{out}");
    assert_eq!(by_tool("protocol_error_job")["statuses"], json!(["working", "failed"]), "{out}");
    assert_eq!(by_tool("slow_compute")["ttl_ms"], 3_600_000, "{out}");

    // Cancelled: acknowledged twice, then cancelled, and the guest stopped
    // at once (the next call, with one call at a time, did not wait).
    assert_eq!(out["created"]["resultType"], "task", "{out}");
    assert_eq!(
        out["cancel_acks"],
        json!([{"_meta": null, "resultType": "complete"}, {"_meta": null, "resultType": "complete"}])
    );
    assert_eq!(out["after_cancel"]["status"], "cancelled", "{out}");
    assert_eq!(out["greet_after_cancel"]["text"], "Hello, again!", "{out}");
    assert!(out["greet_after_cancel_seconds"].as_f64().unwrap() < 3.0, "{out}");

    // Unknown, hostile and foreign ids: -32602, saying why, never echoing 5000 bytes.
    for (case, says) in
        [("unknown", "is not known here"), ("huge", "far too long"), ("other_replica", "replica `gone-replica`")]
    {
        let error = &out["errors"][case];
        assert_eq!(error["code"], -32602, "{case}: {out}");
        let message = error["message"].as_str().unwrap();
        assert!(message.contains(says) && message.len() < 600, "{case}: {message}");
    }
    // Without the extension: an optional tool runs in the request, a required one is refused.
    assert_eq!(out["plain_slow"]["text"], "computed plain in 0s", "{out}");
    assert_eq!(out["plain_required"]["code"], -32021, "{out}");
}

/// Runs `tasks_2025.py` (the official Python SDK's 2025-11-25 line, with
/// the experimental tasks API) and parses the JSON it prints.
fn python_2025_client(args: &[String]) -> Value {
    run_python(&tools().join("venv-2025/bin/python"), "tasks_2025.py", args)
}

/// What the 2025-11-25 client saw of its tasks, over either transport.
fn check_2025_tasks(out: &Value) {
    assert_eq!(out["protocol"], "2025-11-25", "{out}");
    // The server declares the revision's tasks capability and each tool's support.
    assert_eq!(out["capabilities"]["tasks"], json!({"list": {}, "cancel": {}, "requests": {"tools": {"call": {}}}}));
    assert_eq!(out["listed"]["slow_compute"], "optional", "{out}");
    assert_eq!(out["listed"]["failing_job"], "required", "{out}");
    assert_eq!(out["listed"]["greet"], Value::Null, "{out}");

    // A task's handle at once, then its result from tasks/result, tied to it.
    let slow = &out["slow"];
    let id = slow["created"]["task"]["taskId"].as_str().unwrap();
    assert_eq!(slow["created"]["task"]["status"], "working", "{slow}");
    // The client asked for 60 s; kept at least the call's timeout (5 s) and a minute more.
    assert_eq!(slow["created"]["task"]["ttl"], 65_000, "{slow}");
    assert_eq!(slow["created"]["task"]["pollInterval"], 1000, "{slow}");
    assert_eq!(slow["statuses"], json!(["working", "completed"]), "{slow}");
    assert!(slow["messages"][0].as_str().unwrap().contains("computing py"), "progress as statusMessage: {slow}");
    assert_eq!(slow["result"]["content"][0]["text"], "computed py in 2.5s", "{slow}");
    assert_eq!(slow["result"]["_meta"]["io.modelcontextprotocol/related-task"]["taskId"], id, "{slow}");
    assert_eq!(slow["result"].get("resultType"), None, "this revision's result has no resultType: {slow}");
    assert_eq!(slow["final"]["status"], "completed", "{slow}");
    assert_eq!(out["long_ttl"]["created"]["task"]["ttl"], 3_600_000, "kept no longer than the server keeps tasks");

    // A question: input_required, then sent on the tasks/result stream, tied to the task.
    let confirm = &out["confirm"];
    assert_eq!(confirm["statuses"], json!(["working", "input_required"]), "{confirm}");
    assert_eq!(
        confirm["result"]["content"][0]["text"],
        r#"confirm_delete notes.txt: action=accept, content={"confirm":true}"#
    );
    assert_eq!(confirm["final"]["status"], "completed", "{confirm}");
    let asked = &out["asked"][0];
    assert_eq!(asked["message"], "Delete notes.txt?", "{out}");
    assert_eq!(asked["meta"]["io.modelcontextprotocol/related-task"]["taskId"], confirm["created"]["task"]["taskId"]);

    // A tool error makes the task failed (this revision's rule), its result the tool's.
    let failing = &out["failing"];
    assert_eq!(failing["statuses"].as_array().unwrap().last().unwrap(), "failed", "{failing}");
    assert_eq!(failing["result"]["isError"], true, "{failing}");
    assert!(failing["final"]["statusMessage"].as_str().unwrap().contains("always fails"), "{failing}");
    // A protocol error: failed, and tasks/result is that JSON-RPC error.
    assert_eq!(out["protocol_error"]["error"]["code"], -32021, "{out}");
    assert_eq!(out["protocol_error"]["final"]["status"], "failed", "{out}");
    // The plugin's timeout ends a task as it ends a call.
    assert_eq!(out["timed_out"]["final"]["status"], "failed", "{out}");
    let timed_out = out["timed_out"]["result"]["content"][0]["text"].as_str().unwrap();
    assert!(timed_out.contains("timed out after 5000ms"), "{out}");

    // Cancelled while running: cancelled, the guest stopped; no second cancel, no result.
    assert_eq!(out["cancelled"]["status"], "cancelled", "{out}");
    let errors = &out["errors"];
    assert_eq!(errors["cancel_again"]["code"], -32602, "{out}");
    assert!(errors["cancel_again"]["message"].as_str().unwrap().contains("already cancelled"), "{out}");
    assert_eq!(errors["result_of_cancelled"]["code"], -32602, "{out}");
    assert!(out["greet_after_cancel_seconds"].as_f64().unwrap() < 3.0, "the cancelled guest was not stopped: {out}");

    // tasks/list: the session's seven tasks, oldest first.
    let tasks = out["tasks"].as_array().unwrap();
    assert_eq!(tasks.len(), 7, "{out}");
    assert_eq!(tasks[0]["taskId"], id, "{out}");
    assert_eq!(tasks[6]["taskId"], out["mine"], "{out}");
    assert_eq!(tasks[6]["status"], "cancelled", "{out}");
    assert_eq!(out["next_cursor"], Value::Null, "{out}");

    // The revision's errors: a forbidden tool as a task and a required one
    // plainly are -32601; an unknown task and a bad cursor -32602.
    for (case, code) in [("forbidden", -32601), ("required_plain", -32601), ("unknown", -32602), ("bad_cursor", -32602)]
    {
        assert_eq!(errors[case]["code"], code, "{case}: {out}");
        assert!(errors[case]["message"].as_str().unwrap().len() < 600, "{case}: {out}");
    }
    assert_eq!(out["greet"]["content"][0]["text"], "Hello, Ada!", "a plain call still works: {out}");
}

#[test]
fn long_calls_run_as_2025_11_25_tasks_for_that_revisions_python_client() {
    let (dir, config) = task_plugins();
    let (_server, url) = serve_http(dir.path(), &config, &[], &[]);
    let over_http = python_2025_client(&["--url".to_owned(), url]);
    check_2025_tasks(&over_http);
    // A task is its session's: another session can neither see nor list it.
    // Another session is answered as for an id never given out.
    assert_eq!(over_http["other_session"]["code"], -32602, "{over_http}");
    assert_eq!(over_http["other_session"]["data"]["reason"], "unknown", "{over_http}");
    assert_eq!(over_http["other_session_tasks"], json!([]), "{over_http}");
    // A session's end ends its tasks: a running one's guest stops at once
    // (the next call, one at a time, does not wait out its 5 s timeout).
    assert_eq!(over_http["greet_after_session"]["content"][0]["text"], "Hello, later!", "{over_http}");
    assert!(over_http["greet_after_session_seconds"].as_f64().unwrap() < 3.0, "{over_http}");
    assert_eq!(over_http["orphan_after_session"]["code"], -32602, "{over_http}");
    assert_eq!(over_http["orphan_after_session"]["data"]["reason"], "unknown", "{over_http}");

    let mut args = vec!["--".to_owned()];
    args.extend(toolhost_args(dir.path(), &config));
    check_2025_tasks(&python_2025_client(&args));
}

/// A 2026-07-28 request to `url` from a client that declared the tasks
/// extension; `name` is the `Mcp-Name` header. The JSON-RPC message answered.
async fn task_request(url: &str, method: &str, mut params: Value, name: &str) -> Value {
    params["_meta"] = json!({
        "io.modelcontextprotocol/protocolVersion": "2026-07-28",
        "io.modelcontextprotocol/clientCapabilities": {"extensions": {"io.modelcontextprotocol/tasks": {}}},
    });
    let body = json!({"jsonrpc": "2.0", "id": 1, "method": method, "params": params});
    let response = reqwest::Client::new()
        .post(url)
        .header("content-type", "application/json")
        .header("accept", "application/json, text/event-stream")
        .header("mcp-protocol-version", "2026-07-28")
        .header("mcp-method", method)
        .header("mcp-name", name)
        .body(body.to_string())
        .send()
        .await
        .unwrap();
    message_of(&response.text().await.unwrap())
}

async fn get_task(url: &str, id: &str) -> Value {
    task_request(url, "tasks/get", json!({"taskId": id}), id).await
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_task_asked_of_another_replica_or_after_a_restart_is_a_clear_error() {
    let _ = rustls::crypto::ring::default_provider().install_default();
    let dir = plugin_dir(&["content_kinds"]);
    let config = dir.path().join("toolhost.toml");
    std::fs::write(&config, format!("[plugins.content_kinds.limits]\ntimeout = \"60s\"\n{TASK_FIXTURES}")).unwrap();
    let (alpha, alpha_url) = serve_http(dir.path(), &config, &[], &[("TOOLHOST_REPLICA", "alpha")]);
    let (_beta, beta_url) = serve_http(dir.path(), &config, &[], &[("TOOLHOST_REPLICA", "beta")]);

    let call = json!({"name": "slow_compute", "arguments": {"seconds": 30, "label": "replicated"}});
    let created = task_request(&alpha_url, "tools/call", call, "slow_compute").await;
    assert_eq!(created["result"]["resultType"], "task", "{created}");
    let id = created["result"]["taskId"].as_str().unwrap().to_owned();
    assert!(id.starts_with("alpha."), "the id names its replica: {id}");
    assert_eq!(get_task(&alpha_url, &id).await["result"]["status"], "working");

    // Asked of the other replica (a load balancer that does not route by
    // Mcp-Name): an error naming the replica that holds it, never a result.
    let elsewhere = get_task(&beta_url, &id).await;
    assert_eq!(elsewhere["error"]["code"], -32602, "{elsewhere}");
    assert_eq!(elsewhere["error"]["data"]["reason"], "other_replica", "{elsewhere}");
    let message = elsewhere["error"]["message"].as_str().unwrap();
    assert!(message.contains("replica `alpha`, not this one (`beta`)") && message.contains("Mcp-Name"), "{message}");
    for (method, params) in
        [("tasks/cancel", json!({"taskId": id})), ("tasks/update", json!({"taskId": id, "inputResponses": {}}))]
    {
        let answer = task_request(&beta_url, method, params, &id).await;
        assert_eq!(answer["error"]["data"]["reason"], "other_replica", "{method}: {answer}");
    }

    // The replica goes and comes back under the same name: its tasks went
    // with the process, and it says so.
    drop(alpha);
    let gone = reqwest::Client::new().post(&alpha_url).body("{}").send().await;
    assert!(gone.is_err(), "alpha is gone");
    let (_alpha, alpha_url) = serve_http(dir.path(), &config, &[], &[("TOOLHOST_REPLICA", "alpha")]);
    let restarted = get_task(&alpha_url, &id).await;
    assert_eq!(restarted["error"]["code"], -32602, "{restarted}");
    assert_eq!(restarted["error"]["data"]["reason"], "replica_restarted", "{restarted}");
    assert!(restarted["error"]["message"].as_str().unwrap().contains("restarted since"), "{restarted}");

    // A replica name that cannot go in a task id: serve refuses to start, in one line.
    let mut args = toolhost_args(dir.path(), &config);
    args.remove(0);
    let output = Command::new(env!("CARGO_BIN_EXE_toolhost"))
        .args(&args)
        .args(["serve", "--http", "127.0.0.1:0"])
        .env("TOOLHOST_REPLICA", "no spaces/please")
        .env("TOOLHOST_CACHE_DIR", shared_cache())
        .output()
        .unwrap();
    let stderr = String::from_utf8_lossy(&output.stderr);
    assert!(!output.status.success() && stderr.contains("TOOLHOST_REPLICA must be"), "{stderr}");
}

/// The JSON-RPC message of a Streamable HTTP response body: the body itself,
/// or the `data:` of the SSE event that carries it.
pub(crate) fn message_of(body: &str) -> Value {
    let data = body.lines().filter_map(|line| line.strip_prefix("data:")).map(str::trim).find(|data| !data.is_empty());
    serde_json::from_str(data.unwrap_or(body)).unwrap_or_else(|err| panic!("no JSON-RPC message ({err}): {body}"))
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn serve_over_http_answers_every_request_and_refuses_an_id_already_in_flight() {
    let _ = rustls::crypto::ring::default_provider().install_default();
    let plugins = plugin_dir(&["echo", "sleep_forever"]);
    let config = tempfile::NamedTempFile::new().unwrap();
    std::fs::write(config.path(), "[limits]\ntimeout = \"2s\"\n").unwrap();
    let (_server, url) = serve_http(plugins.path(), config.path(), &[], &[]);
    let client = reqwest::Client::new();
    let post = |body: String, session: Option<String>| {
        let mut request = client
            .post(&url)
            .header("content-type", "application/json")
            .header("accept", "application/json, text/event-stream")
            .header("mcp-protocol-version", "2025-11-25")
            .body(body);
        if let Some(session) = session {
            request = request.header("mcp-session-id", session);
        }
        async move {
            let response = request.send().await.unwrap();
            let (status, session) = (response.status().as_u16(), response.headers().get("mcp-session-id").cloned());
            let body = response.text().await.unwrap();
            (status, session.map(|value| value.to_str().unwrap().to_owned()), body)
        }
    };
    let initialize = r#"{"jsonrpc":"2.0","id":0,"method":"initialize","params":{"protocolVersion":"2025-11-25","capabilities":{},"clientInfo":{"name":"hostile","version":"1"}}}"#;
    let (status, session, _) = post(initialize.to_owned(), None).await;
    assert_eq!(status, 200);
    let session = session.expect("a session");
    post(r#"{"jsonrpc":"2.0","method":"notifications/initialized"}"#.to_owned(), Some(session.clone())).await;

    let deep = format!(
        r#"{{"jsonrpc":"2.0","id":"deep","method":"ping","params":{{"x":{}0{}}}}}"#,
        "[".repeat(5_000),
        "]".repeat(5_000)
    );
    let hostile: Vec<(String, Value, i64)> = vec![
        (deep, "deep".into(), -32600),
        (r#"{"jsonrpc":"1.0","id":"v1","method":"ping"}"#.into(), "v1".into(), -32600),
        (r#"{"jsonrpc":"2.0","id":[1],"method":"ping"}"#.into(), Value::Null, -32600),
        (r#"{"jsonrpc":"2.0","id":"p","method":"tools/list","params":"all"}"#.into(), "p".into(), -32602),
        (r#"{"jsonrpc":"2.0","id":"cut","#.into(), "cut".into(), -32700),
        (r#"{"jsonrpc":"2.0","id":"#.into(), Value::Null, -32700),
        (r#"{"jsonrpc":"2.0","id":701,"id":701,"method":"ping"}"#.into(), 701.into(), -32600),
        (
            r#"{"jsonrpc":"2.0","id":"d","method":"tools/call","params":{"name":"echo","name":"x"}}"#.into(),
            "d".into(),
            -32600,
        ),
        (r#"{"jsonrpc":"2.0","id":"t","method":"tools/call","params":{"arguments":{}}}"#.into(), "t".into(), -32602),
    ];
    for (body, id, code) in hostile {
        let (status, _, text) = post(body.clone(), Some(session.clone())).await;
        let answer = message_of(&text);
        assert_eq!(
            (status, &answer["id"], &answer["error"]["code"]),
            (400, &id, &Value::from(code)),
            "{body:.80}: {text}"
        );
    }

    // Two requests in flight in one session with one id: the second is
    // refused at once, the first still answered.
    let slow = r#"{"jsonrpc":"2.0","id":50,"method":"tools/call","params":{"name":"sleep_forever","arguments":{}}}"#;
    let first = tokio::spawn(post(slow.to_owned(), Some(session.clone())));
    tokio::time::sleep(Duration::from_millis(500)).await;
    let (status, _, text) = post(slow.to_owned(), Some(session.clone())).await;
    let refused = message_of(&text);
    assert_eq!((status, refused["id"].clone()), (400, Value::from(50)), "{text}");
    assert!(refused["error"]["message"].as_str().unwrap().contains("still in flight"), "{text}");
    let (status, _, text) = first.await.unwrap();
    let answered = message_of(&text);
    assert_eq!(
        (status, answered["id"].clone(), answered["result"]["isError"].clone()),
        (200, 50.into(), true.into()),
        "{text}"
    );
    // Once answered, the id is free again.
    let echo =
        r#"{"jsonrpc":"2.0","id":50,"method":"tools/call","params":{"name":"echo","arguments":{"text":"again"}}}"#;
    let (status, _, text) = post(echo.to_owned(), Some(session.clone())).await;
    assert_eq!(status, 200, "{text}");
    assert!(message_of(&text).to_string().contains("again"), "{text}");
}

/// A 2026-07-28 `tools/call` of `test_input_required_result_multi_round`
/// with `inputResponses` and `requestState`; the JSON-RPC message answered.
async fn multi_round_call(url: &str, responses: Value, state: Option<&Value>) -> Value {
    round_call(url, json!({}), responses, state).await
}

/// [`multi_round_call`] with other `arguments`.
async fn round_call(url: &str, arguments: Value, responses: Value, state: Option<&Value>) -> Value {
    let mut params = json!({
        "name": "test_input_required_result_multi_round",
        "arguments": arguments,
        "inputResponses": responses,
        "_meta": {
            "io.modelcontextprotocol/protocolVersion": "2026-07-28",
            "io.modelcontextprotocol/clientCapabilities": {"elicitation": {}},
        },
    });
    if let Some(state) = state {
        params["requestState"] = state.clone();
    }
    let body = json!({"jsonrpc": "2.0", "id": 1, "method": "tools/call", "params": params});
    let response = reqwest::Client::new()
        .post(url)
        .header("content-type", "application/json")
        .header("accept", "application/json, text/event-stream")
        .header("mcp-protocol-version", "2026-07-28")
        .header("mcp-method", "tools/call")
        .header("mcp-name", "test_input_required_result_multi_round")
        .body(body.to_string())
        .send()
        .await
        .unwrap();
    message_of(&response.text().await.unwrap())
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn replicas_with_a_common_state_key_finish_each_others_rounds() {
    let _ = rustls::crypto::ring::default_provider().install_default();
    let plugins = plugin_dir(&["content_kinds"]);
    let config = plugins.path().join("toolhost.toml");
    std::fs::write(&config, "[plugins.content_kinds]\nelicitation = true\n").unwrap();
    let key = [("TOOLHOST_STATE_KEY", "a shared secret of at least thirty-two bytes")];
    let (_first, first) = serve_http(plugins.path(), &config, &[], &key);
    let (_second, second) = serve_http(plugins.path(), &config, &[], &key);
    let other_key = [("TOOLHOST_STATE_KEY", "another secret, also thirty-two bytes or more")];
    let (_third, third) = serve_http(plugins.path(), &config, &[], &other_key);

    let round1 = multi_round_call(&first, json!({}), None).await;
    assert_eq!(round1["result"]["resultType"], "input_required", "{round1}");
    assert!(round1["result"]["inputRequests"]["step1"].is_object(), "{round1}");
    let answer = |field: &str, value: &str| json!({"action": "accept", "content": {field: value}});
    // The second round on another replica: the first answer travels in the state.
    let round2 =
        multi_round_call(&second, json!({"step1": answer("name", "Ada")}), Some(&round1["result"]["requestState"]))
            .await;
    assert_eq!(round2["result"]["resultType"], "input_required", "{round2}");
    assert!(round2["result"]["inputRequests"]["step2"].is_object(), "{round2}");
    let state = &round2["result"]["requestState"];
    let done = multi_round_call(&first, json!({"step2": answer("color", "blue")}), Some(state)).await;
    let text = done["result"]["content"][0]["text"].as_str().unwrap_or_default();
    assert!(text.contains("\"name\":\"Ada\"") && text.contains("\"color\":\"blue\""), "{done}");

    // A replica with another key refuses the state, saying why.
    let refused = multi_round_call(&third, json!({"step2": answer("color", "blue")}), Some(state)).await;
    assert_eq!(refused["error"]["code"], -32602, "{refused}");
    let message = refused["error"]["message"].as_str().unwrap();
    assert!(message.contains("requestState was refused") && message.contains("TOOLHOST_STATE_KEY"), "{message}");
    // A state is bound to its request: with other arguments it is refused.
    let state = &round1["result"]["requestState"];
    let moved = round_call(&first, json!({"other": 1}), json!({"step1": answer("name", "Ada")}), Some(state)).await;
    assert_eq!(moved["error"]["code"], -32602, "{moved}");

    // A key too short to seal with: serve refuses to start, in one line.
    let short = [("TOOLHOST_STATE_KEY", "short")];
    let mut args = toolhost_args(plugins.path(), &config);
    args.remove(0);
    let output = Command::new(env!("CARGO_BIN_EXE_toolhost"))
        .args(&args)
        .args(["serve", "--http", "127.0.0.1:0"])
        .envs(short)
        .env("TOOLHOST_CACHE_DIR", shared_cache())
        .output()
        .unwrap();
    let stderr = String::from_utf8_lossy(&output.stderr);
    assert!(!output.status.success() && stderr.contains("TOOLHOST_STATE_KEY is shorter than 32 bytes"), "{stderr}");
}

/// `task.ttl` at its edges, in both task revisions: 2025-11-25 clamps `0`
/// and the largest number to what it keeps (and the handle says so), and
/// answers what is no whole number of milliseconds with -32602 naming the
/// range, never -32603; 2026-07-28's extension leaves a task's life to the
/// server, which `ttlMs` reports whatever the client sent.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn task_ttl_edges_are_clamped_and_said_or_refused_with_the_range_in_both_revisions() {
    let _ = rustls::crypto::ring::default_provider().install_default();
    let dir = plugin_dir(&["content_kinds"]);
    let config = dir.path().join("toolhost.toml");
    std::fs::write(
        &config,
        "[plugins.content_kinds.limits]\ntimeout = \"5s\"\n[serve.tasks]\nttl = \"1h\"\ntools = { slow_compute = \"optional\" }\n",
    )
    .unwrap();
    let (_server, url) = serve_http(dir.path(), &config, &[], &[]);
    let client = reqwest::Client::new();
    let post = |body: Value, session: Option<String>| {
        let mut request = client
            .post(&url)
            .header("content-type", "application/json")
            .header("accept", "application/json, text/event-stream")
            .header("mcp-protocol-version", "2025-11-25")
            .body(body.to_string());
        if let Some(session) = session {
            request = request.header("mcp-session-id", session);
        }
        async move {
            let response = request.send().await.unwrap();
            let session = response.headers().get("mcp-session-id").map(|id| id.to_str().unwrap().to_owned());
            let text = response.text().await.unwrap();
            (session, if text.trim().is_empty() { Value::Null } else { message_of(&text) })
        }
    };
    let hello = json!({"jsonrpc": "2.0", "id": 1, "method": "initialize", "params": {"protocolVersion": "2025-11-25",
        "capabilities": {}, "clientInfo": {"name": "t", "version": "1"}}});
    let (session, _) = post(hello, None).await;
    post(json!({"jsonrpc": "2.0", "method": "notifications/initialized"}), session.clone()).await;
    let call = |ttl: Value| {
        json!({"jsonrpc": "2.0", "id": 2, "method": "tools/call", "params": {"name": "slow_compute",
            "arguments": {"seconds": 0, "label": "ttl"}, "task": {"ttl": ttl}}})
    };
    // Clamped: at least the call's timeout (5 s) and a minute, at most the configured hour.
    for (ttl, kept) in [(json!(0), 65_000), (json!(1), 65_000), (json!(u64::MAX), 3_600_000)] {
        let (_, answer) = post(call(ttl.clone()), session.clone()).await;
        assert_eq!(answer["result"]["task"]["ttl"], kept, "{ttl}: {answer}");
    }
    for ttl in [json!(-1), json!(1.5), json!(1e30), json!("60000")] {
        let (_, answer) = post(call(ttl.clone()), session.clone()).await;
        assert_eq!(answer["error"]["code"], -32602, "{ttl}: {answer}");
        let message = answer["error"]["message"].as_str().unwrap();
        assert!(message.contains("from 0 to 18446744073709551615"), "{ttl}: {message}");
    }
    // 2026-07-28: the server's life for the task, whatever the client sent.
    for ttl in [json!(0), json!(u64::MAX), json!(1e30)] {
        let params = json!({"name": "slow_compute", "arguments": {"seconds": 0, "label": "ttl"}, "task": {"ttl": ttl}});
        let created = task_request(&url, "tools/call", params, "slow_compute").await;
        assert_eq!(created["result"]["resultType"], "task", "{ttl}: {created}");
        assert_eq!(created["result"]["ttlMs"], 3_600_000, "{ttl}: {created}");
    }
}

//! A first run, as a new user meets it: `toolhost serve` with a cold compile
//! cache (a fresh install, an upgrade, a new plugins folder) answers its
//! client at once and loads the plugins behind it. Driven by the official
//! Python MCP client (stdio and HTTP, both protocol generations) and the real
//! Claude Code CLI's `claude mcp list`, each against a cache of its own that
//! starts empty. A plugin whose `list-tools` never returns (`list_sleeps`,
//! given 10 minutes) keeps the load from finishing for the whole test, so
//! everything here happens while plugins are still loading; the Python
//! plugin `units` (its tool `convert_units`; CPython, compiled for
//! seconds) joins late.

use crate::common;
use crate::mcp::Running;
use common::{plugin_dir, stderr, stdout};
use serde_json::Value;
use std::io::{BufRead, BufReader, Read, Write};
use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};
use std::sync::mpsc;
use std::time::{Duration, Instant};

/// What a client gives a server to connect before it gives up (Claude
/// Code's default `MCP_TIMEOUT`).
const CLIENT_PATIENCE: Duration = Duration::from_secs(30);

fn mcp_tools() -> PathBuf {
    common::install("mcp/setup.sh");
    Path::new(env!("CARGO_MANIFEST_DIR")).join("../tests/mcp")
}

/// `names` in a folder with a config: every call may take 2 minutes (so a
/// call waits that long for its plugin to compile), `list_sleeps` 10.
fn cold_folder(names: &[&str]) -> (tempfile::TempDir, PathBuf, tempfile::TempDir) {
    let dir = plugin_dir(names);
    let config = dir.path().join("toolhost.toml");
    std::fs::write(&config, "[limits]\ntimeout = \"120s\"\n[plugins.list_sleeps.limits]\ntimeout = \"600s\"\n")
        .unwrap();
    (dir, config, tempfile::tempdir().unwrap())
}

/// Runs client.py's `firstrun` with `args` (its transport and --call NAMEs)
/// against a server using the compile cache `cache`; its JSON and stderr.
fn firstrun(args: &[String], cache: &Path) -> (Value, String) {
    let mcp = mcp_tools();
    let output = Command::new(mcp.join(".tools/venv/bin/python"))
        .arg(mcp.join("client.py"))
        .args(args)
        .env("TOOLHOST_CACHE_DIR", cache)
        .env_remove("TOOLHOST_PLUGINS")
        .env_remove("TOOLHOST_CONFIG")
        .output()
        .expect("run client.py");
    assert!(output.status.success(), "client.py {args:?}:\n{}{}", stdout(&output), stderr(&output));
    (serde_json::from_str(stdout(&output).trim()).expect("one JSON object"), stderr(&output))
}

fn check_first_run(out: &Value, wanted: &[&str]) {
    let connected = out["connected_s"].as_f64().unwrap();
    assert!(
        connected < CLIENT_PATIENCE.as_secs_f64(),
        "the client waited {connected:.1} s for initialize: a real one gives up after {CLIENT_PATIENCE:?}: {out}"
    );
    // A call before its plugin was known waits for it, and is answered.
    assert_eq!(out["early_call"]["is_error"], false, "{out}");
    assert_eq!(out["early_call"]["text"], "2cf24dba5fb0a30e26e83b2ac5b9e29e1b161e5c1fa7425e73043362938b9824", "{out}");
    let last: Vec<&str> = out["last_list"].as_array().unwrap().iter().filter_map(Value::as_str).collect();
    for name in wanted {
        assert!(last.contains(name), "{name} joined the list: {out}");
    }
    assert!(!last.contains(&"list_sleeps"), "list_sleeps never finishes listing: {out}");
    let first: Vec<&str> = out["first_list"].as_array().unwrap().iter().filter_map(Value::as_str).collect();
    if out["protocol"] != "2026-07-28" && wanted.iter().any(|name| !first.contains(name)) {
        // What joined after the first list was announced (the client waited on list_changed).
        assert!(out["notified"].as_u64().unwrap() >= 1, "{out}");
    }
}

#[test]
fn a_cold_serve_on_stdio_connects_at_once_and_tools_join_as_they_compile() {
    let (dir, config, cache) = cold_folder(&["hash", "echo", "units", "list_sleeps"]);
    let wanted = ["sha256", "echo", "convert_units"];
    let mut args: Vec<String> = vec!["--mode".into(), "legacy".into()];
    for name in wanted {
        args.extend(["--call".into(), name.into()]);
    }
    args.extend(["firstrun".into(), "--".into(), env!("CARGO_BIN_EXE_toolhost").into(), "--plugins".into()]);
    args.extend([dir.path().display().to_string(), "--config".into(), config.display().to_string()]);
    let (out, log) = firstrun(&args, cache.path());
    check_first_run(&out, &wanted);
    assert_eq!(out["late_call"]["is_error"], false, "{out}");
    assert!(out["late_call"]["text"].as_str().unwrap().contains("100"), "212 °F is 100 °C: {out}");
    // The server said on stderr what it was still loading.
    assert!(
        log.lines().any(|line| line.starts_with("toolhost: ")
            && line.contains("still loading")
            && line.contains("list_sleeps")),
        "{log}"
    );
}

/// `serve --http` with a cold cache: its `listening on` line, its URL.
fn serve_cold_http(dir: &Path, config: &Path, cache: &Path) -> (Running, String, mpsc::Receiver<String>) {
    let mut child = Command::new(env!("CARGO_BIN_EXE_toolhost"))
        .arg("--plugins")
        .arg(dir)
        .arg("--config")
        .arg(config)
        .args(["serve", "--http", "127.0.0.1:0"])
        .env("TOOLHOST_CACHE_DIR", cache)
        .env_remove("TOOLHOST_PLUGINS")
        .env_remove("TOOLHOST_CONFIG")
        .stdin(Stdio::null())
        .stdout(Stdio::null())
        .stderr(Stdio::piped())
        .spawn()
        .expect("start toolhost serve --http");
    let stderr = child.stderr.take().unwrap();
    let (lines, receiver) = mpsc::channel();
    std::thread::spawn(move || {
        for line in BufReader::new(stderr).lines().map_while(Result::ok) {
            eprintln!("[serve] {line}");
            let _ = lines.send(line);
        }
    });
    let started = Instant::now();
    let address = loop {
        let line = receiver.recv_timeout(CLIENT_PATIENCE).expect("serve --http said nothing");
        if let Some(rest) = line.strip_prefix("toolhost: listening on http://") {
            break rest.split_whitespace().next().unwrap().to_owned();
        }
    };
    assert!(started.elapsed() < CLIENT_PATIENCE, "listening took {:?}", started.elapsed());
    (Running::new(child), address, receiver)
}

/// `GET PATH` on `address`: the status and the body.
fn get(address: &str, path: &str) -> (u16, String) {
    let mut stream = std::net::TcpStream::connect(address).unwrap();
    write!(stream, "GET {path} HTTP/1.1\r\nHost: 127.0.0.1\r\nConnection: close\r\n\r\n").unwrap();
    let mut response = String::new();
    stream.read_to_string(&mut response).unwrap();
    let status = response.split_whitespace().nth(1).and_then(|code| code.parse().ok()).unwrap_or(0);
    let body = response.split_once("\r\n\r\n").map(|(_, body)| body.to_owned()).unwrap_or_default();
    (status, body)
}

#[test]
fn a_cold_serve_over_http_answers_mcp_at_once_stays_unready_and_stops_at_once_on_sigterm() {
    let (dir, config, cache) = cold_folder(&["hash", "echo", "list_sleeps"]);
    let (mut server, address, lines) = serve_cold_http(dir.path(), &config, cache.path());
    let (status, body) = get(&address, "/readyz");
    assert_eq!(status, 503, "{body}");
    assert!(body.contains("loading plugins"), "{body}");
    let wanted = ["sha256", "echo"];
    for mode in ["2026-07-28", "legacy"] {
        let mut args: Vec<String> = vec!["--mode".into(), mode.into(), "--url".into(), format!("http://{address}/mcp")];
        for name in wanted {
            args.extend(["--call".into(), name.into()]);
        }
        args.push("firstrun".into());
        let (out, _) = firstrun(&args, cache.path());
        check_first_run(&out, &wanted);
    }
    // Ready means every plugin loaded: list_sleeps is still listing, and /readyz says so.
    let (status, body) = get(&address, "/readyz");
    assert_eq!(status, 503, "{body}");
    assert!(body.contains("list_sleeps"), "{body}");
    // SIGTERM while a plugin is still loading: the process ends at once (a
    // Kubernetes grace period is 30 s; list_sleeps would take 10 minutes).
    let stopping = Instant::now();
    unsafe { libc::kill(server.id() as i32, libc::SIGTERM) };
    let status = server.wait_within(Duration::from_secs(15)).expect("serve --http did not stop within 15 s of SIGTERM");
    assert!(status.success(), "{status}");
    let said: Vec<String> = lines.try_iter().collect();
    assert!(said.iter().any(|line| line == "toolhost: stopped"), "{said:?}");
    assert!(stopping.elapsed() < Duration::from_secs(15));
}

#[test]
fn claude_codes_mcp_list_connects_to_a_cold_serve_on_its_first_launch() {
    common::install("mcp/claude-setup.sh");
    let claude = Path::new(env!("CARGO_MANIFEST_DIR")).join("../tests/mcp/.tools/claude/node_modules/.bin/claude");
    let (dir, config, cache) = cold_folder(&["hash", "echo", "units", "list_sleeps"]);
    // Claude Code keeps its settings in HOME: a home of the test's own.
    let home = tempfile::tempdir().unwrap();
    let run = |args: &[&str]| {
        Command::new(&claude)
            .args(args)
            .current_dir(home.path())
            .env("HOME", home.path())
            .env("TOOLHOST_CACHE_DIR", cache.path())
            .env("DISABLE_AUTOUPDATER", "1")
            .env("CLAUDE_CODE_DISABLE_NONESSENTIAL_TRAFFIC", "1")
            .env_remove("MCP_TIMEOUT")
            .env_remove("TOOLHOST_PLUGINS")
            .env_remove("TOOLHOST_CONFIG")
            .output()
            .expect("run claude")
    };
    let toolhost = env!("CARGO_BIN_EXE_toolhost");
    let (plugins, config) = (dir.path().display().to_string(), config.display().to_string());
    let added = run(&["mcp", "add", "toolhost", "--", toolhost, "--plugins", &plugins, "--config", &config, "serve"]);
    assert!(added.status.success(), "claude mcp add: {}{}", stdout(&added), stderr(&added));
    let listed = run(&["mcp", "list"]);
    let text = format!("{}{}", stdout(&listed), stderr(&listed));
    assert!(listed.status.success(), "claude mcp list: {text}");
    let line = text.lines().find(|line| line.starts_with("toolhost:")).unwrap_or_else(|| panic!("{text}"));
    assert!(line.contains("✔ Connected"), "Claude Code could not connect on the first launch: {text}");
}

//! `serve` with thousands of tools: `tools/list` in pages walked by the
//! official Python MCP client (stdio and HTTP), cursors that were forged,
//! belong to another profile or outlived a reload refused, and profiles
//! (`[serve] tools`, `[serve.profiles.NAME]` picked by `--profile` or
//! `/mcp/NAME`) whose left-out tools are neither listed nor callable.

use crate::common::{self, shared_cache};
use crate::mcp::{http_args, message_of, python_client, serve_http, stdio_args};
use serde_json::{Value, json};
use std::path::Path;
use std::process::Command;
use std::time::{Duration, Instant};

/// A folder of `count` tools: copies of `echo` (one component, so one
/// compile), plugin `tNNNN` offering the tool `tool_NNNN`.
fn thousands(count: usize) -> tempfile::TempDir {
    let dir = tempfile::tempdir().unwrap();
    let echo = std::fs::read(common::plugins_src().join("dist/echo.wasm")).unwrap();
    for i in 0..count {
        add_tool(dir.path(), &echo, i);
    }
    dir
}

fn add_tool(dir: &Path, echo: &[u8], i: usize) {
    std::fs::write(dir.join(format!("t{i:04}.wasm")), echo).unwrap();
    let manifest = format!("[tools.echo]\nname = \"tool_{i:04}\"\ndescription = \"Echoes record {i}.\"\n");
    std::fs::write(dir.join(format!("t{i:04}.toml")), manifest).unwrap();
}

const CONFIG: &str = "[serve]\npage_size = 700\ntools = { exclude = [\"tool_2999\"] }\n\
                      [serve.profiles.few]\ninclude = [\"tool_00*\", \"t0150\"]\nexclude = [\"tool_0005\"]\n";

fn names(range: std::ops::Range<usize>, except: &[usize]) -> Vec<String> {
    range.filter(|i| !except.contains(i)).map(|i| format!("tool_{i:04}")).collect()
}

/// What a call of a tool nobody offers is answered: -32602 naming it.
fn check_unknown(out: &Value, name: &str) {
    let call = &out["calls"][name];
    assert_eq!(call["code"], -32602, "{name}: {call}");
    assert!(call["message"].as_str().unwrap().contains(name), "{name}: {call}");
}

fn check_all(out: &Value, label: &str) {
    assert_eq!(out["pages"], json!([700, 700, 700, 700, 199]), "{label}");
    let listed: Vec<String> = serde_json::from_value(out["names"].clone()).unwrap();
    assert_eq!(listed, names(0..2999, &[]), "{label}: every tool once, in order, [serve] tools' exclude left out");
    assert_eq!(out["forged"]["code"], -32602, "{label}: {}", out["forged"]);
    assert!(out["forged"]["message"].as_str().unwrap().contains("list again without a cursor"), "{label}");
    assert_eq!(out["again"], json!(names(700..1400, &[])), "{label}: a cursor given twice gives the same page");
    assert_eq!(out["calls"]["tool_2998"]["text"], "hi", "{label}: {}", out["calls"]);
    check_unknown(out, "tool_2999");
    check_unknown(out, "no_such_tool");
    eprintln!("{label}: tools/list of 2,999 tools in 5 pages took {:.3} s", out["seconds"].as_f64().unwrap());
}

fn check_few(out: &Value, label: &str) {
    let mut expected = names(0..100, &[5]);
    expected.push("tool_0150".to_owned());
    assert_eq!(out["pages"], json!([100]), "{label}");
    assert_eq!(out["names"], json!(expected), "{label}");
    assert_eq!(out["calls"]["tool_0150"]["text"], "hi", "{label}: {}", out["calls"]);
    check_unknown(out, "tool_0005");
    check_unknown(out, "tool_0200");
    // The same answer, word for word, as for a tool nobody offers.
    let left_out = out["calls"]["tool_0200"]["message"].as_str().unwrap().replace("tool_0200", "X");
    let unknown = out["calls"]["no_such_tool"]["message"].as_str().unwrap().replace("no_such_tool", "X");
    assert_eq!(left_out, unknown, "{label}");
}

fn with_calls(mut args: Vec<String>, calls: &[&str]) -> Vec<String> {
    // Options go before the scenario (and the `--` of stdio).
    for call in calls.iter().rev() {
        args.insert(2, format!("--call={call}"));
    }
    args
}

#[test]
fn thousands_of_tools_are_paged_and_profiles_offer_their_subset_over_stdio_and_http() {
    let folder = thousands(3000);
    let work = tempfile::tempdir().unwrap();
    let config = work.path().join("toolhost.toml");
    std::fs::write(&config, CONFIG).unwrap();
    let all_calls = ["tool_2998", "tool_2999", "no_such_tool"];
    let few_calls = ["tool_0150", "tool_0005", "tool_0200", "no_such_tool"];

    let out = python_client(&with_calls(stdio_args("legacy", "pages", folder.path(), &config), &all_calls));
    check_all(&out, "stdio, 2025-11-25");
    let mut args = with_calls(stdio_args("legacy", "pages", folder.path(), &config), &few_calls);
    args.insert(2, "--serve-arg=--profile=few".to_owned());
    check_few(&python_client(&args), "stdio --profile few");

    let (_server, url) = serve_http(folder.path(), &config, &[], &[]);
    let out = python_client(&with_calls(http_args("2026-07-28", "pages", &url), &all_calls));
    check_all(&out, "http /mcp, 2026-07-28");
    let out = python_client(&with_calls(http_args("legacy", "pages", &format!("{url}/few")), &few_calls));
    check_few(&out, "http /mcp/few, 2025-11-25");
}

/// One stateless (2026-07-28) request.
async fn request(url: &str, method: &str, params: Value, name: &str) -> (u16, Value) {
    let mut params = params;
    params["_meta"] = json!({
        "io.modelcontextprotocol/protocolVersion": "2026-07-28",
        "io.modelcontextprotocol/clientCapabilities": {},
    });
    let body = json!({"jsonrpc": "2.0", "id": 1, "method": method, "params": params});
    let mut request = reqwest::Client::new()
        .post(url)
        .header("content-type", "application/json")
        .header("accept", "application/json, text/event-stream")
        .header("mcp-protocol-version", "2026-07-28")
        .header("mcp-method", method);
    if !name.is_empty() {
        request = request.header("mcp-name", name);
    }
    let response = request.body(body.to_string()).send().await.unwrap();
    let status = response.status().as_u16();
    let text = response.text().await.unwrap();
    if status != 200 {
        return (status, Value::String(text));
    }
    (status, message_of(&text))
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_cursor_of_another_profile_or_from_before_a_reload_is_refused_and_profiles_outlive_reloads() {
    let _ = rustls::crypto::ring::default_provider().install_default();
    let folder = thousands(1500);
    let work = tempfile::tempdir().unwrap();
    let config = work.path().join("toolhost.toml");
    std::fs::write(&config, CONFIG).unwrap();
    let (_server, url) = serve_http(folder.path(), &config, &[], &[]);
    let few = format!("{url}/few");

    let (status, first) = request(&url, "tools/list", json!({}), "").await;
    assert_eq!(status, 200, "{first}");
    assert_eq!(first["result"]["tools"].as_array().unwrap().len(), 700);
    let cursor = first["result"]["nextCursor"].as_str().unwrap().to_owned();

    // Another profile's endpoint does not take it.
    let (_, other) = request(&few, "tools/list", json!({ "cursor": cursor }), "").await;
    assert_eq!(other["error"]["code"], -32602, "{other}");
    // Not a string, or not a cursor at all.
    let (_, junk) = request(&url, "tools/list", json!({ "cursor": "nonsense" }), "").await;
    assert_eq!(junk["error"]["code"], -32602, "{junk}");
    // An unknown profile, and a path below one, are not endpoints.
    let (status, body) = request(&format!("{url}/nope"), "tools/list", json!({}), "").await;
    assert_eq!(status, 404, "{body}");
    assert!(body.as_str().unwrap().contains("few"), "names the profiles there are: {body}");
    let (status, _) = request(&format!("{url}/few/x"), "tools/list", json!({}), "").await;
    assert_eq!(status, 404);

    // A reload that changes the list: the old cursor is refused, with what to do.
    let echo = std::fs::read(common::plugins_src().join("dist/echo.wasm")).unwrap();
    add_tool(folder.path(), &echo, 20);
    add_tool(folder.path(), &echo, 1600);
    let deadline = Instant::now() + Duration::from_secs(60);
    loop {
        let (_, again) = request(&url, "tools/list", json!({ "cursor": cursor }), "").await;
        if again["error"]["code"] == -32602 {
            let message = again["error"]["message"].as_str().unwrap();
            assert!(message.contains("changed since this cursor"), "{message}");
            break;
        }
        assert!(Instant::now() < deadline, "the reload was never seen: {again}");
        tokio::time::sleep(Duration::from_millis(200)).await;
    }
    // The profile still applies to what came: `tool_0020` is in `few`,
    // `tool_1600` only in the whole list.
    let (_, listed) = request(&few, "tools/list", json!({}), "").await;
    let names: Vec<&str> =
        listed["result"]["tools"].as_array().unwrap().iter().map(|t| t["name"].as_str().unwrap()).collect();
    assert!(names.contains(&"tool_0020") && !names.contains(&"tool_1600"), "{names:?}");
    let (_, called) =
        request(&few, "tools/call", json!({"name": "tool_1600", "arguments": {"text": "x"}}), "tool_1600").await;
    assert_eq!(called["error"]["code"], -32602, "{called}");
    let (_, called) =
        request(&url, "tools/call", json!({"name": "tool_1600", "arguments": {"text": "x"}}), "tool_1600").await;
    assert_eq!(called["result"]["content"][0]["text"], "x", "{called}");
    // Walking the new list from the start gives every tool once.
    let mut seen = Vec::new();
    let mut cursor: Option<String> = None;
    loop {
        let params = match &cursor {
            Some(cursor) => json!({ "cursor": cursor }),
            None => json!({}),
        };
        let (_, page) = request(&url, "tools/list", params, "").await;
        for tool in page["result"]["tools"].as_array().unwrap() {
            seen.push(tool["name"].as_str().unwrap().to_owned());
        }
        match page["result"]["nextCursor"].as_str() {
            Some(next) => cursor = Some(next.to_owned()),
            None => break,
        }
    }
    let mut expected: Vec<String> = (0..1500).map(|i| format!("tool_{i:04}")).collect();
    expected.push("tool_1600".to_owned());
    assert_eq!(seen, expected);
}

#[test]
fn a_profile_naming_nothing_loaded_stops_serve_and_bad_profiles_are_clear_errors() {
    let folder = thousands(3);
    let work = tempfile::tempdir().unwrap();
    let run = |config_text: &str, extra: &[&str]| {
        let config = work.path().join("toolhost.toml");
        std::fs::write(&config, config_text).unwrap();
        let output = Command::new(env!("CARGO_BIN_EXE_toolhost"))
            .args(["--plugins", &folder.path().display().to_string(), "--config", &config.display().to_string()])
            .arg("serve")
            .args(extra)
            .env("TOOLHOST_CACHE_DIR", shared_cache())
            .stdin(std::process::Stdio::null())
            .output()
            .unwrap();
        (output.status.success(), String::from_utf8_lossy(&output.stderr).into_owned())
    };
    let (ok, stderr) = run("[serve.profiles.p]\ninclude = [\"tool_0001\", \"tool_typo\"]\n", &["--profile", "p"]);
    assert!(!ok);
    assert!(
        stderr.contains("[serve.profiles.p] include: `tool_typo` is not the name of a loaded tool or plugin"),
        "{stderr}"
    );
    assert_eq!(stderr.trim().lines().count(), 1, "one line: {stderr}");
    let (ok, stderr) = run("[serve]\ntools = { include = [\"tool_*\"] }\n", &["--profile", "p"]);
    assert!(!ok);
    assert!(stderr.contains("there is no profile `p`"), "{stderr}");
    let (ok, stderr) = run("[serve.profiles.p]\nclients = [\"ci\"]\n", &[]);
    assert!(!ok);
    assert!(stderr.contains("[serve.oauth] is not set"), "{stderr}");
    let (ok, stderr) = run("[serve]\npage_size = 0\n", &[]);
    assert!(!ok);
    assert!(stderr.contains("page_size = 0"), "{stderr}");
    let (ok, stderr) = run("[serve.profiles.p]\n", &["--http", "127.0.0.1:0", "--profile", "p"]);
    assert!(!ok);
    assert!(stderr.contains("/mcp/p"), "{stderr}");
    // A glob matching nothing is only a warning (stdin is closed: serve ends at once).
    let (_, stderr) = run("[serve]\ntools = { exclude = [\"nothing_*\"] }\n", &[]);
    assert!(stderr.contains("warning: [serve] tools exclude: the pattern `nothing_*` matches no tool"), "{stderr}");
    let (_, stderr) = run("[serve]\ntools = { exclude = [\"not_yet\"] }\n", &[]);
    assert!(stderr.contains("warning: [serve] tools exclude: `not_yet` is not the name of a loaded"), "{stderr}");
}

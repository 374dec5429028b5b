//! OpenTelemetry traces over OTLP/HTTP, through the real binary, to a real
//! OTLP receiver on loopback (`tests/otel/receiver.py`, decoding with
//! OpenTelemetry's own protobuf definitions): spans for a tool call and what
//! it does, trace context carried into a granted plugin request and taken
//! from an incoming MCP request, and nothing at all when not configured.

use crate::common;

use common::model_server::{ModelServer, Script, status};
use common::otel::{Receiver, Running};
use common::{plugin_dir, shared_cache, stderr};
use serde_json::{Value, json};
use std::io::{BufRead, BufReader, Write};
use std::path::Path;
use std::process::{Command, Stdio};
use std::time::Duration;

fn named<'a>(spans: &'a [Value], name: &str) -> Option<&'a Value> {
    spans.iter().find(|span| span["name"] == name)
}

#[test]
fn a_call_is_traced_into_its_plugin_request_and_nothing_when_off() {
    let receiver = Receiver::start();
    let server = ModelServer::start(vec![status(200, &[], json!({"ok": true}))]);
    let plugins = plugin_dir(&["fetch"]);
    let config = plugins.path().join("toolhost.toml");
    std::fs::write(
        &config,
        format!(
            "[telemetry]\notlp_endpoint = \"{}\"\nservice_name = \"tools-test\"\n[plugins.fetch]\nhttp = [\"{}\"]\n",
            receiver.endpoint, server.url
        ),
    )
    .unwrap();
    let arguments = json!({"url": format!("{}/page", server.url)}).to_string();
    let args = ["--plugins", plugins.path().to_str().unwrap(), "--config", config.to_str().unwrap()];
    let output = common::toolhost(Path::new("."), &[&args[..], &["call", "fetch", &arguments]].concat());
    assert!(output.status.success(), "{}", stderr(&output));

    // The exporter flushed at exit.
    let spans = receiver.wait_for(|spans| {
        ["tool_call", "sandbox", "instantiate", "http_request"].iter().all(|name| named(spans, name).is_some())
    });
    let call = named(&spans, "tool_call").unwrap_or_else(|| panic!("no tool_call span: {spans:?}"));
    assert_eq!(call["service"], "tools-test", "{call}");
    let attributes = &call["attributes"];
    assert_eq!(
        (&attributes["tool"], &attributes["plugin"], &attributes["outcome"]),
        (&json!("fetch"), &json!("fetch"), &json!("ok")),
        "{call}"
    );
    assert!(attributes["fuel"].as_i64().unwrap() > 0 && attributes["http_requests"] == 1, "{call}");
    let trace = call["trace_id"].as_str().unwrap();
    let sandbox = named(&spans, "sandbox").unwrap();
    assert_eq!(
        (sandbox["trace_id"].as_str(), sandbox["parent_span_id"].as_str()),
        (Some(trace), call["span_id"].as_str())
    );
    let request = named(&spans, "http_request").unwrap();
    assert_eq!(request["trace_id"], trace, "{request}");
    assert_eq!(named(&spans, "instantiate").unwrap()["parent_span_id"], sandbox["span_id"]);

    // The plugin's granted request carried the trace: its parent is the http_request span.
    let seen = server.requests();
    let traceparent = seen[0].header("traceparent").unwrap_or_else(|| panic!("no traceparent: {seen:?}"));
    assert_eq!(traceparent, format!("00-{trace}-{}-01", request["span_id"].as_str().unwrap()));

    // Off (no [telemetry], no OTEL_* variables): nothing is sent.
    std::fs::write(&config, format!("[plugins.fetch]\nhttp = [\"{}\"]\n", server.url)).unwrap();
    let quiet = common::toolhost(Path::new("."), &[&args[..], &["call", "fetch", &arguments]].concat());
    assert!(quiet.status.success());
    // (An exporter flushes at exit, which has passed: a second is plenty.)
    let sent = receiver.wait_within(Duration::from_secs(1), |spans| !spans.is_empty());
    assert!(sent.is_empty(), "spans sent while off: {sent:?}");
}

#[test]
fn serve_continues_a_clients_trace_set_by_the_standard_variables() {
    let receiver = Receiver::start();
    let plugins = plugin_dir(&["echo"]);
    let config = plugins.path().join("toolhost.toml");
    std::fs::write(&config, "").unwrap();
    let mut child = Running(
        Command::new(env!("CARGO_BIN_EXE_toolhost"))
            .args(["--plugins", plugins.path().to_str().unwrap(), "--config", config.to_str().unwrap()])
            .args(["serve", "--http", "127.0.0.1:0"])
            .env("TOOLHOST_CACHE_DIR", shared_cache())
            .env("OTEL_EXPORTER_OTLP_ENDPOINT", &receiver.endpoint)
            .env("OTEL_SERVICE_NAME", "served-tools")
            .stdin(Stdio::null())
            .stderr(Stdio::piped())
            .spawn()
            .unwrap(),
    );
    let mut lines = BufReader::new(child.0.stderr.take().unwrap()).lines();
    let url = loop {
        let line = lines.next().expect("serve stopped").unwrap();
        if let Some(url) = line.strip_prefix("toolhost: serving MCP at ") {
            break url.to_owned();
        }
    };
    std::thread::spawn(move || lines.map_while(Result::ok).for_each(|line| eprintln!("[serve] {line}")));
    let (trace, parent) = ("4bf92f3577b34da6a3ce929d0e0e4736", "00f067aa0ba902b7");
    let body = json!({
        "jsonrpc": "2.0", "id": 1, "method": "tools/call",
        "params": {"name": "echo", "arguments": {"text": "traced"}, "_meta": {
            "io.modelcontextprotocol/protocolVersion": "2026-07-28",
            "io.modelcontextprotocol/clientCapabilities": {},
        }},
    })
    .to_string();
    let address = url.trim_start_matches("http://").trim_end_matches("/mcp").to_owned();
    let mut stream = std::net::TcpStream::connect(&address).unwrap();
    write!(
        stream,
        "POST /mcp HTTP/1.1\r\nHost: 127.0.0.1\r\nContent-Type: application/json\r\n\
         Accept: application/json, text/event-stream\r\nMCP-Protocol-Version: 2026-07-28\r\nMcp-Method: tools/call\r\n\
         Mcp-Name: echo\r\ntraceparent: 00-{trace}-{parent}-01\r\nConnection: close\r\nContent-Length: {}\r\n\r\n{body}",
        body.len()
    )
    .unwrap();
    let mut answer = String::new();
    std::io::Read::read_to_string(&mut stream, &mut answer).unwrap();
    assert!(answer.contains("traced"), "{answer}");
    // SIGTERM: it drains, exits, and sends what is left.
    unsafe { libc::kill(child.0.id() as i32, libc::SIGTERM) };
    let spans = receiver.wait_for(|spans| named(spans, "mcp_request").is_some() && named(spans, "tool_call").is_some());
    let request = named(&spans, "mcp_request").unwrap_or_else(|| panic!("no mcp_request span: {spans:?}"));
    assert_eq!(
        (request["trace_id"].as_str(), request["parent_span_id"].as_str()),
        (Some(trace), Some(parent)),
        "{request}"
    );
    assert_eq!(request["service"], "served-tools");
    assert_eq!(request["attributes"]["method"], "tools/call");
    let call = named(&spans, "tool_call").unwrap();
    assert_eq!((call["trace_id"].as_str(), &call["parent_span_id"]), (Some(trace), &request["span_id"]), "{call}");
    assert!(child.0.wait().unwrap().success());
}

#[test]
fn a_run_is_one_trace_of_its_turns_and_calls() {
    let receiver = Receiver::start();
    let script = Script { anthropic: false, stream: true };
    let server =
        ModelServer::start(vec![script.calls(&[("call_1", "echo", r#"{"text":"hi"}"#)]), script.text("Done.")]);
    let plugins = plugin_dir(&["echo"]);
    let output = script
        .run_command(&server, plugins.path(), "echo hi")
        .env("OTEL_EXPORTER_OTLP_TRACES_ENDPOINT", format!("{}/v1/traces", receiver.endpoint))
        .output()
        .unwrap();
    assert!(output.status.success(), "{}", stderr(&output));
    let spans = receiver.wait_for(|spans| {
        named(spans, "run").is_some() && spans.iter().filter(|span| span["name"] == "model_turn").count() == 2
    });
    let run = named(&spans, "run").unwrap_or_else(|| panic!("no run span: {spans:?}"));
    assert_eq!(
        (&run["attributes"]["model"], &run["attributes"]["turns"]),
        (&json!("openai/test-model"), &json!(2)),
        "{run}"
    );
    let turns: Vec<&Value> = spans.iter().filter(|span| span["name"] == "model_turn").collect();
    assert!(
        turns.iter().all(|turn| turn["parent_span_id"] == run["span_id"] && turn["trace_id"] == run["trace_id"]),
        "{spans:?}"
    );
    let call = named(&spans, "tool_call").unwrap();
    assert_eq!((&call["parent_span_id"], &call["attributes"]["tool"]), (&run["span_id"], &json!("echo")), "{call}");
}

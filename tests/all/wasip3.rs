//! WASI 0.3 components as tools, through the real binary: `async_tools`
//! (plugins/testing/async_tools) is written the way outside authors write one
//! today, with wit-bindgen's async exports and the `wasip3` crate, and its
//! standard library still imports WASI 0.2. Its functions are typed tools
//! like any other's (schemas, docs, errors); every per-call limit holds for
//! them, a guest that can never answer or that spawns without end ends in a
//! typed error, its 0.3 HTTP, environment and folders go through the same
//! grants as 0.2's, and `call`, `run` and `serve` answer it.

use crate::common;

use common::{plugin_dir, stderr, stdout, toolhost};
use serde_json::{Value, json};
use std::path::Path;
use std::time::{Duration, Instant};

fn plugins() -> tempfile::TempDir {
    plugin_dir(&["async_tools"])
}

/// `toolhost call TOOL ARGS --json` with `extra` flags: (exit code, report).
fn call(dir: &Path, tool: &str, arguments: &Value, extra: &[&str]) -> (i32, Value) {
    call_with_env(dir, tool, arguments, extra, &[])
}

fn call_with_env(dir: &Path, tool: &str, arguments: &Value, extra: &[&str], env: &[(&str, &str)]) -> (i32, Value) {
    common::call_json(dir, tool, &arguments.to_string(), extra, env)
}

fn output_of(report: &Value) -> Value {
    assert_eq!(report["output"]["type"], "json", "{report}");
    serde_json::from_str(report["output"]["value"].as_str().unwrap()).unwrap()
}

fn error_kind(report: &Value) -> String {
    report["error"]["kind"].as_str().unwrap_or_else(|| panic!("no error: {report}")).to_owned()
}

#[test]
fn an_async_component_is_a_typed_plugin_and_inspect_says_what_it_is_built_on() {
    let dir = plugins();
    let listed = toolhost(Path::new("."), &["--plugins", &dir.path().display().to_string(), "tools", "--json"]);
    assert!(listed.status.success(), "{}", stderr(&listed));
    let tools: Vec<Value> = serde_json::from_str(&stdout(&listed)).unwrap();
    let tool = |name: &str| tools.iter().find(|tool| tool["name"] == name).unwrap_or_else(|| panic!("no {name}"));
    assert_eq!(
        tool("sum")["input_schema"],
        json!({"type": "object", "properties": {
            "a": {"type": "integer", "minimum": 0, "maximum": 4294967295u64},
            "b": {"type": "integer", "minimum": 0, "maximum": 4294967295u64}
        }, "required": ["a", "b"], "additionalProperties": false}),
        "an async func's schema is derived as a sync one's"
    );
    assert_eq!(tool("env-var")["input_schema"]["required"], json!(["name"]));
    assert_eq!(tool("get-url")["output_schema"], json!({"type": "string"}), "a `result` return's schema is its `ok`");
    let described = tool("sum")["description"].as_str().unwrap();
    assert!(described.contains("acme:clock-shop/tools@0.1.0.sum: async func(a: u32, b: u32) -> u32"), "{described}");

    let wasm = dir.path().join("async_tools.wasm").display().to_string();
    let inspected = toolhost(Path::new("."), &["inspect", &wasm]);
    assert!(inspected.status.success(), "{}", stderr(&inspected));
    let text = stdout(&inspected);
    assert!(text.contains("wasi      0.2 and 0.3 (both)"), "{text}");
    assert!(text.contains("async     async exports, async imports, tasks, futures, streams"), "{text}");
    assert!(text.contains("engine    full (the component model's concurrency support)"), "{text}");
    let inspected = toolhost(Path::new("."), &["inspect", &wasm, "--json"]);
    let report: Value = serde_json::from_str(&stdout(&inspected)).unwrap();
    assert_eq!(report["wasi"], json!(["0.2", "0.3"]), "{report}");
    assert!(report["async"].as_array().unwrap().contains(&json!("async exports")), "{report}");
    assert_eq!(report["engine"], "full", "{report}");

    // A component of the synchronous ABI says so by saying nothing of async,
    // and runs in the lean engine (no concurrency support, its small memory
    // zeroed whole after a call); an interpreter's large heap, in the full one.
    let shop = common::plugin("typed_shop").display().to_string();
    let text = stdout(&toolhost(Path::new("."), &["inspect", &shop]));
    assert!(text.contains("wasi      0.2\n") && !text.contains("async  "), "{text}");
    assert!(text.contains("engine    lean (synchronous ABI, memory 1.1MiB to start)"), "{text}");
    let python = common::plugin("py_notes").display().to_string();
    let text = stdout(&toolhost(Path::new("."), &["inspect", &python]));
    assert!(text.contains("engine    full (memory ") && text.contains("over the lean engine's 2MiB)"), "{text}");

    // Its doc comments describe it once embedded, as for any typed component.
    let wit = common::plugins_src().join("testing/async_tools/wit").display().to_string();
    let embedded = toolhost(Path::new("."), &["embed-docs", &wasm, "--wit", &wit]);
    assert!(embedded.status.success(), "{}", stderr(&embedded));
    let listed = toolhost(Path::new("."), &["--plugins", &dir.path().display().to_string(), "tools", "--json"]);
    let tools: Vec<Value> = serde_json::from_str(&stdout(&listed)).unwrap();
    let sum = tools.iter().find(|tool| tool["name"] == "sum").unwrap();
    assert_eq!(sum["description"], "Adds two numbers.", "{sum}");
}

#[test]
fn async_functions_answer_and_reach_only_what_they_are_granted() {
    let dir = plugins();
    let (code, report) = call(dir.path(), "sum", &json!({"a": 40, "b": 2}), &[]);
    assert_eq!(code, 0, "{report}");
    assert_eq!(output_of(&report), json!(42));
    let (code, report) = call(dir.path(), "nap", &json!({"ms": 30}), &[]);
    assert_eq!(code, 0, "a WASI 0.3 sleep is answered: {report}");
    assert!(output_of(&report).as_u64().unwrap() >= 30, "{report}");
    let (code, report) = call(dir.path(), "sum", &json!({"a": -1, "b": 2}), &[]);
    assert_eq!((code, error_kind(&report)), (1, "invalid_arguments".to_owned()), "{report}");

    // wasi:http 0.3 goes through the grant, the ledger and the refusals of 0.2.
    let server = common::server::TestServer::start();
    let folder = tempfile::tempdir().unwrap();
    std::fs::write(folder.path().join("note.txt"), "inside the grant").unwrap();
    let config = dir.path().join("toolhost.toml");
    std::fs::write(
        &config,
        format!(
            "[plugins.async_tools]\nhttp = [\"{}\"]\nenv = [\"SHOP_REGION\"]\ndirs = [\"{}:/data:rw\"]\n",
            server.origin(),
            folder.path().display()
        ),
    )
    .unwrap();
    let config = config.display().to_string();
    let with_config = ["--config", config.as_str()];
    let (code, report) = call(dir.path(), "get-url", &json!({"url": server.url("/hello")}), &with_config);
    assert_eq!(code, 0, "{report}");
    assert_eq!(output_of(&report), json!("200 hello from the test server"));
    assert_eq!(report["usage"]["http_requests"], 1, "counted like a 0.2 request: {report}");
    let other = server.url("/hello").replace("127.0.0.1", "localhost");
    let (code, report) = call(dir.path(), "get-url", &json!({"url": other}), &with_config);
    assert_eq!((code, error_kind(&report)), (1, "tool_failed".to_owned()), "{report}");
    assert_eq!(report["refused"][0]["kind"], "not_granted", "the refusal is recorded: {report}");
    assert_eq!(server.seen(), ["/hello"], "the refused request never arrived");
    let (code, _) = call(dir.path(), "get-url", &json!({"url": server.url("/hello")}), &[]);
    assert_eq!((code, server.seen().len()), (1, 1), "nothing granted, nothing reached");

    // wasi:cli 0.3's environment holds only the granted variables.
    let env = [("SHOP_REGION", "eu-west"), ("SHOP_SECRET_ELSEWHERE", "hidden")];
    let (_, report) = call_with_env(dir.path(), "env-var", &json!({"name": "SHOP_REGION"}), &with_config, &env);
    assert_eq!(output_of(&report), json!("eu-west"), "{report}");
    let (_, report) =
        call_with_env(dir.path(), "env-var", &json!({"name": "SHOP_SECRET_ELSEWHERE"}), &with_config, &env);
    assert_eq!(output_of(&report), Value::Null, "{report}");

    // wasi:filesystem 0.3 sees the granted folder only, and makes no symlink in it.
    let (code, report) = call(dir.path(), "read-text", &json!({"path": "/data/note.txt"}), &with_config);
    assert_eq!((code, output_of(&report)), (0, json!("inside the grant")), "{report}");
    let (code, report) = call(dir.path(), "read-text", &json!({"path": "/data/../../etc/passwd"}), &with_config);
    assert_eq!(code, 1, "no way out of the folder: {report}");
    let (code, report) = call(dir.path(), "read-text", &json!({"path": "/data/note.txt"}), &[]);
    assert_eq!(code, 1, "no folder granted, none seen: {report}");
    let (code, report) = call(dir.path(), "make-link", &json!({"target": "/etc", "name": "out"}), &with_config);
    assert_eq!(code, 1, "{report}");
    assert!(report["error"]["message"].as_str().unwrap().contains("NotPermitted"), "{report}");
    assert!(std::fs::symlink_metadata(folder.path().join("out")).is_err(), "no symlink was made");
}

#[test]
fn every_limit_holds_for_an_async_guest_and_a_stuck_one_is_named() {
    let dir = plugins();
    let dir = dir.path();
    let (_, report) = call(dir, "spin-task", &json!({}), &["--fuel", "50000000"]);
    assert_eq!(error_kind(&report), "out_of_fuel", "a spawned task's instructions are metered: {report}");

    let started = Instant::now();
    let (_, report) = call(dir, "spin-task", &json!({}), &["--fuel", "100000000000", "--timeout", "1s"]);
    assert_eq!(error_kind(&report), "timeout", "{report}");
    let (_, report) = call(dir, "sleep-forever", &json!({}), &["--timeout", "1s"]);
    assert_eq!(error_kind(&report), "timeout", "a guest waiting on the host ends at its timeout: {report}");
    assert!(started.elapsed() < Duration::from_secs(30), "{:?}", started.elapsed());

    let (code, report) = call(dir, "never-resolves", &json!({}), &[]);
    assert_eq!((code, error_kind(&report)), (1, "stuck".to_owned()), "{report}");
    let message = report["error"]["message"].as_str().unwrap();
    assert!(message.contains("can never answer"), "{message}");

    let (_, report) = call(dir, "spawn-forever", &json!({}), &["--timeout", "20s"]);
    assert_eq!(error_kind(&report), "handle_limit", "{report}");
    assert!(report["error"]["message"].as_str().unwrap().contains("10000 handles"), "{report}");

    let (_, report) = call(dir, "hold-memory", &json!({"mib": 200}), &["--memory", "64MiB"]);
    assert_eq!(error_kind(&report), "memory_limit", "{report}");
    let (code, report) = call(dir, "hold-memory", &json!({"mib": 8}), &["--memory", "64MiB"]);
    assert_eq!((code, output_of(&report)), (0, json!(8)), "{report}");

    let (_, report) = call(dir, "big", &json!({"bytes": 2 << 20}), &["--max-output", "1MiB"]);
    assert_eq!(error_kind(&report), "output_too_large", "{report}");
}

#[test]
fn a_model_calls_async_functions_in_the_loop() {
    use common::model_server::{ModelServer, Script};
    let dir = plugins();
    let script = Script { anthropic: false, stream: true };
    let server = ModelServer::start(vec![
        script.calls(&[("call_1", "sum", r#"{"a":40,"b":2}"#), ("call_2", "never-resolves", "{}")]),
        script.text("42, and one tool was stuck."),
    ]);
    let output = script.run_command(&server, dir.path(), "add 40 and 2").output().unwrap();
    assert!(output.status.success(), "{}", stderr(&output));
    assert!(stdout(&output).contains("42, and one tool was stuck."), "{}", stdout(&output));
    let results = script.results(&server.requests()[1]);
    assert_eq!((results[0].1.as_str(), results[0].2), ("42", false), "{results:?}");
    assert!(results[1].2 && results[1].1.contains("is stuck"), "{results:?}");
}

#[test]
fn serve_answers_async_tools_and_a_cancelled_call_stops_the_guest() {
    let dir = plugins();
    let config = dir.path().join("toolhost.toml");
    std::fs::write(&config, "[limits]\nfuel = 1000000000000\ntimeout = \"60s\"\n").unwrap();
    for mode in ["legacy", "2026-07-28"] {
        let result = common::mcp_client_scenario("async", mode, dir.path(), &config);
        assert_eq!(result["sum"]["structured"], json!({"result": 42}), "{mode}: {result}");
        assert_eq!(result["stuck"]["is_error"], true, "{mode}: {result}");
        assert!(result["stuck"]["text"].as_str().unwrap().contains("is stuck"), "{mode}: {result}");
        assert_eq!(result["cancelled"]["completed"], false, "{mode}: {result}");
        assert_eq!(result["after_cancel"]["structured"], json!({"result": 3}), "{mode}: {result}");
    }

    // Over a bare session: a cancelled spinning task stops using the CPU.
    let mut command = common::stdio::Session::command(&["--plugins", &dir.path().display().to_string(), "--config"]);
    command.arg(&config).arg("serve");
    let mut session = common::stdio::Session::start(command, "t");
    let spin = session.send_request("tools/call", json!({"name": "spin-task", "arguments": {}}));
    std::thread::sleep(Duration::from_millis(300));
    let spinning = cpu_seconds(session.pid());
    std::thread::sleep(Duration::from_millis(1200));
    let spun = cpu_seconds(session.pid()) - spinning;
    session.send(&json!({"jsonrpc": "2.0", "method": "notifications/cancelled", "params": {"requestId": spin}}));
    std::thread::sleep(Duration::from_millis(500));
    let before = cpu_seconds(session.pid());
    std::thread::sleep(Duration::from_secs(2));
    let used = cpu_seconds(session.pid()) - before;
    let answer = session.ask("tools/call", json!({"name": "sum", "arguments": {"a": 1, "b": 2}})).to_string();
    drop(session);
    assert!(answer.contains(r#""result":3"#), "{answer}");
    assert!(spun > 0.2, "the guest was not spinning before the cancel: {spun:.2} s of CPU in 1.2 s");
    assert!(used < 0.5, "the cancelled guest still ran: {used:.2} s of CPU in 2 s");
}

/// The CPU seconds (user and system) process `pid` has used.
fn cpu_seconds(pid: u32) -> f64 {
    let stat = std::fs::read_to_string(format!("/proc/{pid}/stat")).unwrap();
    let fields: Vec<&str> = stat.rsplit_once(')').unwrap().1.split_whitespace().collect();
    let ticks: f64 = fields[11].parse::<f64>().unwrap() + fields[12].parse::<f64>().unwrap();
    // SAFETY: sysconf only reads a constant.
    let per_second = unsafe { libc::sysconf(libc::_SC_CLK_TCK) } as f64;
    ticks / per_second
}

/// A full-engine call's store is dropped (its memory reset) off the call's
/// path: with one call at a time allowed, calls one after the other, each
/// writing megabytes, all get a slot and every one a fresh instance.
#[test]
fn calls_one_after_another_each_get_a_fresh_instance_while_the_last_is_reset() {
    let dir = plugins();
    let config = dir.path().join("toolhost.toml");
    std::fs::write(&config, "max_concurrent_calls = 1\n").unwrap();
    let mut command = common::stdio::Session::command(&["--plugins", &dir.path().display().to_string(), "--config"]);
    command.arg(&config).arg("serve");
    let mut session = common::stdio::Session::start(command, "t");
    for n in 0..40 {
        let answer = session.ask("tools/call", json!({"name": "count", "arguments": {"mib": n % 9}}));
        assert_eq!(answer["result"]["structuredContent"], json!({"result": 1}), "call {n}: {answer}");
    }
    // The resets run below every call (`SCHED_IDLE`, policy 5: the 41st
    // field of a thread's stat), on the one thread that drops stores.
    let tasks = std::fs::read_dir(format!("/proc/{}/task", session.pid())).unwrap();
    let retiring: Vec<u64> = tasks
        .flatten()
        .filter(|task| {
            std::fs::read_to_string(task.path().join("comm")).unwrap_or_default().trim() == "toolhost-retire"
        })
        .map(|task| {
            let stat = std::fs::read_to_string(task.path().join("stat")).unwrap();
            let fields: Vec<&str> = stat.rsplit(')').next().unwrap().split_whitespace().collect();
            fields[38].parse().unwrap()
        })
        .collect();
    assert_eq!(retiring, [5], "the retiring thread(s)' scheduling policy");
    session.close();
}

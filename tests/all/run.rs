//! `toolhost run` and `chat` against a scripted model server on 127.0.0.1,
//! with the real plugins, in both protocols, streamed and not. The tests
//! check what the host sent back to the server, not only what it printed.

use crate::common;

use common::model_server::{ModelServer, Proxy, Script, status};
use common::{stderr, stdout};
use serde_json::{Value, json};
use std::path::Path;
use std::process::{Command, Output, Stdio};

const ABC_SHA256: &str = "ba7816bf8f01cfea414140de5dae2223b00361a396177a9cb410ff61f20015ad";

const ALL: [Script; 4] = [
    Script { anthropic: false, stream: false },
    Script { anthropic: false, stream: true },
    Script { anthropic: true, stream: false },
    Script { anthropic: true, stream: true },
];

fn bundled() -> String {
    common::plugins_src().join("dist").display().to_string()
}

/// Runs `toolhost` with the plugins folder, the model and the server's URL.
fn toolhost(script: Script, server: &ModelServer, plugins: &str, args: &[&str]) -> Output {
    toolhost_in(Path::new("."), script, server, plugins, args, None)
}

fn toolhost_in(
    cwd: &Path,
    script: Script,
    server: &ModelServer,
    plugins: &str,
    args: &[&str],
    stdin: Option<&str>,
) -> Output {
    toolhost_env(cwd, script, server, plugins, args, stdin, &[])
}

/// The proxy variables toolhost honours; unset in every test unless it sets them.
const PROXY_VARS: [&str; 8] =
    ["HTTPS_PROXY", "https_proxy", "HTTP_PROXY", "http_proxy", "ALL_PROXY", "all_proxy", "NO_PROXY", "no_proxy"];

fn toolhost_env(
    cwd: &Path,
    script: Script,
    server: &ModelServer,
    plugins: &str,
    args: &[&str],
    stdin: Option<&str>,
    env: &[(&str, &str)],
) -> Output {
    let base_url = script.base_url(server);
    let mut command = Command::new(env!("CARGO_BIN_EXE_toolhost"));
    command
        .current_dir(cwd)
        .args(["--plugins", plugins])
        .args(args)
        .args(["--model", script.model(), "--base-url", &base_url])
        .env("TOOLHOST_CACHE_DIR", common::shared_cache())
        .env("OPENAI_API_KEY", "test-key")
        .env("ANTHROPIC_API_KEY", "test-key")
        .env_remove("TOOLHOST_MODEL")
        .env_remove("TOOLHOST_CONFIG")
        .stdout(Stdio::piped())
        .stderr(Stdio::piped());
    for name in PROXY_VARS {
        command.env_remove(name);
    }
    command.envs(env.iter().copied());
    if script.stream {
        // streaming is the default
    } else {
        command.arg("--no-stream");
    }
    match stdin {
        Some(text) => {
            use std::io::Write;
            command.stdin(Stdio::piped());
            let mut child = command.spawn().expect("run toolhost");
            child.stdin.take().unwrap().write_all(text.as_bytes()).unwrap();
            child.wait_with_output().unwrap()
        }
        None => command.stdin(Stdio::null()).output().expect("run toolhost"),
    }
}

fn results(script: Script, server: &ModelServer, request: usize) -> Vec<(String, String, bool)> {
    script.results(&server.requests()[request])
}

#[test]
fn one_call_then_an_answer() {
    for script in ALL {
        let server = ModelServer::start(vec![
            script.calls(&[("call_1", "sha256", r#"{"text":"abc"}"#)]),
            script.text("The digest is ba78…15ad."),
        ]);
        let output = toolhost(script, &server, &bundled(), &["run", "hash abc", "--yes"]);
        assert!(output.status.success(), "{script:?}: {}", stderr(&output));
        assert!(stdout(&output).contains("The digest is ba78…15ad."), "{script:?}: {}", stdout(&output));
        assert!(stderr(&output).contains("✓ sha256"), "{script:?}: {}", stderr(&output));
        let requests = server.requests();
        assert_eq!(requests.len(), 2, "{script:?}");
        assert_eq!(results(script, &server, 1), [("call_1".to_owned(), ABC_SHA256.to_owned(), false)], "{script:?}");

        // The request carried the tools in the provider's own format, and the key.
        let first = &requests[0];
        if script.anthropic {
            assert_eq!(first.path, "/v1/messages");
            assert_eq!(first.header("x-api-key"), Some("test-key"));
            let tool = first.body["tools"].as_array().unwrap().iter().find(|t| t["name"] == "sha256").unwrap();
            assert_eq!(tool["input_schema"]["type"], "object");
        } else {
            assert_eq!(first.path, "/v1/chat/completions");
            assert_eq!(first.header("authorization"), Some("Bearer test-key"));
            let tool =
                first.body["tools"].as_array().unwrap().iter().find(|t| t["function"]["name"] == "sha256").unwrap();
            assert_eq!(tool["type"], "function");
            assert_eq!(tool["function"]["parameters"]["type"], "object");
        }
        assert_eq!(first.body["stream"], json!(script.stream));
    }
}

#[test]
fn parallel_calls_get_their_results_in_call_order() {
    for script in ALL {
        let server = ModelServer::start(vec![
            script.calls(&[
                ("c1", "sha256", r#"{"text":"abc"}"#),
                ("c2", "calculate", r#"{"expression":"6*7"}"#),
                ("c3", "sha256", r#"{"text":""}"#),
            ]),
            script.text("done"),
        ]);
        let output = toolhost(script, &server, &bundled(), &["run", "several", "--yes"]);
        assert!(output.status.success(), "{script:?}: {}", stderr(&output));
        let results = results(script, &server, 1);
        let ids: Vec<&str> = results.iter().map(|(id, _, _)| id.as_str()).collect();
        assert_eq!(ids, ["c1", "c2", "c3"], "{script:?}");
        assert_eq!(results[0].1, ABC_SHA256);
        let calc: Value = serde_json::from_str(&results[1].1).unwrap();
        assert_eq!(calc["result"], 42, "{script:?}");
        assert_eq!(results[2].1, "e3b0c44298fc1c149afbf4c8996fb92427ae41e4649b934ca495991b7852b855");
        assert!(results.iter().all(|(_, _, is_error)| !is_error));
    }
}

#[test]
fn multi_turn_keeps_the_whole_conversation() {
    for script in ALL {
        let server = ModelServer::start(vec![
            script.calls(&[("t1", "calculate", r#"{"expression":"2+3"}"#)]),
            script.calls(&[("t2", "calculate", r#"{"expression":"5*10"}"#)]),
            script.text("It is 50."),
        ]);
        let output = toolhost(script, &server, &bundled(), &["run", "compute", "--yes", "--system", "be brief"]);
        assert!(output.status.success(), "{script:?}: {}", stderr(&output));
        let requests = server.requests();
        assert_eq!(requests.len(), 3);
        assert_eq!(results(script, &server, 2)[0].0, "t2");
        // The third request still holds the first call and its result.
        let third = requests[2].body.to_string();
        assert!(third.contains("\"t1\"") && third.contains("\"t2\""), "{script:?}: {third}");
        if script.anthropic {
            assert_eq!(requests[0].body["system"], "be brief");
        } else {
            assert_eq!(requests[0].body["messages"][0], json!({"role": "system", "content": "be brief"}));
        }
    }
}

#[test]
fn bad_calls_get_error_results_the_model_can_act_on() {
    let dir = tempfile::tempdir().unwrap();
    for script in ALL {
        let transcript = dir.path().join("t.json");
        let events = dir.path().join("e.jsonl");
        let server = ModelServer::start(vec![
            script.calls(&[
                ("bad_json", "sha256", r#"{"text": "#),
                ("unknown", "no_such_tool", "{}"),
                ("bad_args", "sha256", r#"{"text": 5}"#),
                ("empty", "calculate", ""),
            ]),
            script.text("sorry"),
        ]);
        let (t, e) = (transcript.to_str().unwrap(), events.to_str().unwrap());
        let output = toolhost(script, &server, &bundled(), &["run", "try", "--yes", "--transcript", t, "--events", e]);
        assert!(output.status.success(), "{script:?}: {}", stderr(&output));
        let results = results(script, &server, 1);
        assert_eq!(results.len(), 4, "{script:?}: every call has exactly one result");
        // What went back as the assistant's calls is a JSON object for each,
        // even for arguments that were not; the transcript keeps the original.
        let sent = script.sent_calls(&server.requests()[1]);
        assert_eq!(sent.len(), 4, "{script:?}");
        assert!(sent.iter().all(|(_, _, arguments)| arguments.is_object()), "{script:?}: {sent:?}");
        assert_eq!(sent[0].2, json!({}), "{script:?}");
        let saved: Value = serde_json::from_slice(&std::fs::read(&transcript).unwrap()).unwrap();
        let call = &saved["messages"][1]["tool_calls"][0];
        assert_eq!(call["arguments"], "{}", "{script:?}: {call}");
        if !script.anthropic {
            assert_eq!(call["malformed_arguments"], r#"{"text": "#, "{script:?}: {call}");
        }
        assert!(results[0].1.contains("malformed and was not run"), "{script:?}: {results:?}");
        let events = read_events(&events);
        check_call_events(&events);
        assert_eq!(
            kinds_of_call(&events, "unknown"),
            ["tool_call_requested", "tool_call_failed"],
            "{script:?}: an unknown tool is neither approved nor started"
        );
        assert_eq!(kinds_of_call(&events, "bad_json"), ["tool_call_requested", "tool_call_failed"]);
        let expect = [
            ("bad_json", "not valid JSON"),
            ("unknown", "no tool named `no_such_tool`"),
            ("bad_args", "at `/text`"),
            ("empty", "\"expression\" is a required property"),
        ];
        for ((id, content, is_error), (expected_id, expected)) in results.iter().zip(expect) {
            assert_eq!(id, expected_id);
            assert!(is_error, "{script:?} {id}");
            if !(script.anthropic && id == "bad_json") {
                assert!(content.contains(expected), "{script:?} {id}: {content}");
            }
        }
    }
}

#[test]
fn a_tool_out_of_fuel_and_a_denied_tool_are_reported_to_the_model() {
    let plugins = common::plugin_dir(&["echo", "spin_forever", "keeps_state"]);
    let dir = tempfile::tempdir().unwrap();
    std::fs::write(
        dir.path().join("toolhost.toml"),
        "[plugins.spin_forever.limits]\nfuel = 1_000_000\n[approvals]\ntools = { echo = \"deny\", keeps_state = \"ask\" }\n",
    )
    .unwrap();
    for script in [ALL[1], ALL[3]] {
        let server = ModelServer::start(vec![
            script.calls(&[
                ("spin", "spin_forever", "{}"),
                ("deny", "echo", r#"{"text":"x"}"#),
                ("ask", "keeps_state", "{}"),
            ]),
            script.text("ok"),
        ]);
        let plugins = plugins.path().display().to_string();
        let output = toolhost_in(dir.path(), script, &server, &plugins, &["run", "go"], None);
        assert!(output.status.success(), "{script:?}: {}", stderr(&output));
        let results = results(script, &server, 1);
        assert!(results[0].1.contains("ran out of fuel after 1000000 instructions") && results[0].2, "{results:?}");
        assert!(results[1].1.contains("the operator does not allow calls to `echo`") && results[1].2, "{results:?}");
        assert!(results[2].1.contains("no terminal to ask on") && results[2].2, "{results:?}");
        let text = stderr(&output);
        assert!(text.contains("✗ spin_forever") && text.contains("⊘ echo"), "{text}");
    }
}

#[test]
fn quotas_refuse_calls_over_a_rate_or_a_cap_with_what_the_model_can_act_on() {
    let plugins = common::plugin_dir(&["hash", "sleep_forever"]);
    let dir = tempfile::tempdir().unwrap();
    std::fs::write(
        dir.path().join("toolhost.toml"),
        "[plugins.sleep_forever.limits]\ntimeout = \"1s\"\n\
         [quotas]\ntools = { sha256 = { rate = \"2/min\" } }\nplugins = { sleep_forever = { concurrency = 1 } }\n",
    )
    .unwrap();
    let events = dir.path().join("events.jsonl");
    for script in [ALL[0], ALL[3]] {
        let server = ModelServer::start(vec![
            script.calls(&[
                ("s1", "sha256", r#"{"text":"abc"}"#),
                ("s2", "sha256", r#"{"text":"abc"}"#),
                ("s3", "sha256", r#"{"text":"abc"}"#),
                ("z1", "sleep_forever", "{}"),
                ("z2", "sleep_forever", "{}"),
            ]),
            script.text("ok"),
        ]);
        let plugins = plugins.path().display().to_string();
        let args = ["run", "go", "--yes", "--events", events.to_str().unwrap()];
        let output = toolhost_in(dir.path(), script, &server, &plugins, &args, None);
        assert!(output.status.success(), "{script:?}: {}", stderr(&output));
        let results = results(script, &server, 1);
        // The three calls of a turn start together; two get through.
        let hashes = &results[..3];
        assert_eq!(
            hashes.iter().filter(|(_, text, is_error)| text == ABC_SHA256 && !is_error).count(),
            2,
            "{results:?}"
        );
        let limited = hashes.iter().find(|(_, _, is_error)| *is_error).expect("one call limited");
        assert!(
            limited.1.contains("tool `sha256` may be called 2 times per minute") && limited.1.contains("retry after "),
            "{results:?}"
        );
        // Both sleepers ran at once (the tools of a turn run in parallel): one
        // took the plugin's only place and timed out, the other was refused.
        let sleepers = [&results[3], &results[4]];
        assert!(sleepers.iter().all(|(_, _, is_error)| *is_error), "{results:?}");
        assert_eq!(
            sleepers.iter().filter(|(_, text, _)| text.contains("timed out after 1000ms")).count(),
            1,
            "{results:?}"
        );
        let busy = sleepers.iter().find(|(_, text, _)| text.contains("already has 1 call running")).expect("one busy");
        assert!(
            busy.1.contains("plugin `sleep_forever`") && busy.1.contains("retry when one of them finishes"),
            "{busy:?}"
        );

        let events = read_events(&events);
        let failed = |id: &str| {
            events
                .iter()
                .find(|event| event["event"] == "tool_call_failed" && event["call_id"] == id)
                .unwrap_or_else(|| panic!("no tool_call_failed for {id}: {events:?}"))
                .clone()
        };
        let limited = failed(&limited.0);
        assert_eq!(limited["kind"], "rate_limited", "{limited}");
        let wait = limited["retry_after_ms"].as_u64().unwrap();
        assert!((1..=30_000).contains(&wait), "one call comes back every 30 s: {limited}");
        let busy_id = if failed("z1")["kind"] == "busy" { "z1" } else { "z2" };
        assert_eq!(failed(busy_id)["kind"], "busy");
        assert!(failed(busy_id).get("retry_after_ms").is_none());
    }
}

#[test]
fn max_turns_ends_a_runaway_loop() {
    for script in [ALL[0], ALL[3]] {
        let looping = script.calls(&[("again", "sha256", r#"{"text":"x"}"#)]);
        let server = ModelServer::start(vec![looping.clone(), looping.clone(), looping]);
        let output = toolhost(script, &server, &bundled(), &["run", "loop", "--yes", "--max-turns", "2"]);
        assert_eq!(output.status.code(), Some(1), "{script:?}");
        assert!(stderr(&output).contains("still calling tools after 2 turns"), "{}", stderr(&output));
        assert_eq!(server.requests().len(), 2);
    }
}

#[test]
fn a_429_is_retried_after_retry_after_with_one_line_and_event_per_retry() {
    let dir = tempfile::tempdir().unwrap();
    for script in ALL {
        let events = dir.path().join("e.jsonl");
        let server = ModelServer::start(vec![
            status(429, &[("retry-after", "0")], json!({"error": {"message": "slow down"}})),
            status(503, &[("retry-after-ms", "10")], json!({"error": {"message": "busy"}})),
            script.text("finally"),
        ]);
        let output =
            toolhost(script, &server, &bundled(), &["run", "hi", "--yes", "--events", events.to_str().unwrap()]);
        assert!(output.status.success(), "{script:?}: {}", stderr(&output));
        assert!(stdout(&output).contains("finally"));
        assert_eq!(server.requests().len(), 3);
        let text = stderr(&output);
        let retries: Vec<&str> = text.lines().filter(|line| line.contains("retrying in")).collect();
        assert_eq!(retries.len(), 2, "{script:?}: {text}");
        assert!(retries[0].contains("HTTP 429: slow down") && retries[0].contains("attempt 2 of 5"), "{text}");
        assert!(
            retries[1].contains("HTTP 503: busy")
                && retries[1].contains("10ms")
                && retries[1].contains("attempt 3 of 5"),
            "{text}"
        );
        let retried: Vec<Value> =
            read_events(&events).into_iter().filter(|event| event["event"] == "model_retry").collect();
        assert_eq!(retried.len(), 2, "{script:?}");
        assert_eq!(
            (retried[1]["attempt"].clone(), retried[1]["max_attempts"].clone(), retried[1]["wait_ms"].clone()),
            (json!(3), json!(5), json!(10))
        );
    }
}

#[test]
fn a_401_fails_at_once_with_a_clear_line() {
    for script in [ALL[0], ALL[2]] {
        let server =
            ModelServer::start(vec![status(401, &[], json!({"error": {"message": "Incorrect API key provided"}}))]);
        let output = toolhost(script, &server, &bundled(), &["run", "hi"]);
        assert_eq!(output.status.code(), Some(1));
        let text = stderr(&output);
        let key = if script.anthropic { "ANTHROPIC_API_KEY" } else { "OPENAI_API_KEY" };
        assert!(
            text.contains("refused the API key (HTTP 401): Incorrect API key provided") && text.contains(key),
            "{text}"
        );
        assert!(!text.contains("test-key"), "the key is never printed: {text}");
        assert_eq!(server.requests().len(), 1, "a 401 is not retried");
    }
}

#[test]
fn a_server_that_does_not_speak_the_protocol_is_named() {
    let script = ALL[0];
    let server = ModelServer::start(vec![common::model_server::Response {
        status: 200,
        headers: vec![],
        body: common::model_server::Body::Raw("<html>hello</html>".into()),
    }]);
    let output = toolhost(script, &server, &bundled(), &["run", "hi"]);
    assert_eq!(output.status.code(), Some(1));
    assert!(stderr(&output).contains("does not speak the OpenAI Chat Completions protocol"), "{}", stderr(&output));
}

#[test]
fn a_truncated_answer_is_reported() {
    for script in [ALL[1], ALL[2]] {
        let server = ModelServer::start(vec![script.truncated("The answer is")]);
        let output = toolhost(script, &server, &bundled(), &["run", "hi"]);
        assert_eq!(output.status.code(), Some(1));
        assert!(stdout(&output).contains("The answer is"));
        assert!(stderr(&output).contains("output token limit"), "{}", stderr(&output));
    }
}

#[test]
fn transcript_and_events_are_written() {
    let script = ALL[1];
    let dir = tempfile::tempdir().unwrap();
    let transcript = dir.path().join("t.json");
    let events = dir.path().join("e.jsonl");
    let server = ModelServer::start(vec![script.calls(&[("c", "sha256", r#"{"text":"abc"}"#)]), script.text("done")]);
    let output = toolhost(
        script,
        &server,
        &bundled(),
        &["run", "hash", "--yes", "--transcript", transcript.to_str().unwrap(), "--events", events.to_str().unwrap()],
    );
    assert!(output.status.success(), "{}", stderr(&output));
    let saved: Value = serde_json::from_slice(&std::fs::read(&transcript).unwrap()).unwrap();
    assert_eq!(saved["model"], "openai/test-model");
    let roles: Vec<&str> = saved["messages"].as_array().unwrap().iter().map(|m| m["role"].as_str().unwrap()).collect();
    assert_eq!(roles, ["user", "assistant", "tool", "assistant"]);
    assert_eq!(saved["messages"][2]["results"][0]["content"], ABC_SHA256);

    let kinds: Vec<String> = std::fs::read_to_string(&events)
        .unwrap()
        .lines()
        .map(|line| serde_json::from_str::<Value>(line).unwrap()["event"].as_str().unwrap().to_owned())
        .collect();
    assert_eq!(
        kinds,
        [
            "run_started",
            "model_request",
            "model_response",
            "tool_call_requested",
            "tool_call_approved",
            "tool_call_started",
            "tool_call_completed",
            "model_request",
            "model_response",
            "run_finished"
        ]
    );
}

#[test]
fn chat_keeps_the_conversation_across_prompts() {
    let script = ALL[3];
    let server = ModelServer::start(vec![script.text("Hello!"), script.text("You said hi.")]);
    let output =
        toolhost_in(Path::new("."), script, &server, &bundled(), &["chat", "--yes"], Some("hi\nwhat did I say?\n"));
    assert!(output.status.success(), "{}", stderr(&output));
    assert!(stdout(&output).contains("Hello!") && stdout(&output).contains("You said hi."));
    let second = &server.requests()[1].body["messages"];
    assert_eq!(second.as_array().unwrap().len(), 3, "{second}");
    assert_eq!(second[0]["content"][0]["text"], "hi");
}

#[test]
fn no_model_configured_says_how_to_point_at_one() {
    let output = Command::new(env!("CARGO_BIN_EXE_toolhost"))
        .args(["--plugins", &bundled(), "run", "hi"])
        .env("TOOLHOST_CACHE_DIR", common::shared_cache())
        .env_remove("OPENAI_API_KEY")
        .env_remove("ANTHROPIC_API_KEY")
        .env_remove("TOOLHOST_MODEL")
        .current_dir(tempfile::tempdir().unwrap().path())
        .output()
        .unwrap();
    assert_eq!(output.status.code(), Some(2));
    let text = stderr(&output);
    assert!(text.contains("no model is configured") && text.contains("ollama/qwen3"), "{text}");
}

/// Starts a run, waits until `ready` says so, then presses Ctrl-C.
fn interrupt(script: Script, server: &ModelServer, plugins: &str, args: &[&str], ready: impl Fn() -> bool) -> Output {
    let child = spawn_run(script, server, plugins, args);
    wait_until(ready);
    std::thread::sleep(std::time::Duration::from_millis(100));
    // SAFETY: sending SIGINT to our own child process.
    unsafe { libc::kill(child.id() as i32, libc::SIGINT) };
    child.wait_with_output().unwrap()
}

/// Waits (up to 20 s, then fails) until `ready` says so.
fn wait_until(ready: impl Fn() -> bool) {
    let deadline = std::time::Instant::now() + std::time::Duration::from_secs(20);
    while !ready() {
        assert!(std::time::Instant::now() < deadline, "the run never got there");
        std::thread::sleep(std::time::Duration::from_millis(20));
    }
}

/// toolhost with `args` against `server`, started and left running.
fn spawn_run(script: Script, server: &ModelServer, plugins: &str, args: &[&str]) -> std::process::Child {
    let mut command = Command::new(env!("CARGO_BIN_EXE_toolhost"));
    command
        .args(["--plugins", plugins])
        .args(args)
        .args(["--model", script.model(), "--base-url", &script.base_url(server)])
        .env("TOOLHOST_CACHE_DIR", common::shared_cache())
        .env("OPENAI_API_KEY", "test-key")
        .stdin(Stdio::null())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped());
    for name in PROXY_VARS {
        command.env_remove(name);
    }
    command.spawn().unwrap()
}

/// How many of process `pid`'s tokio worker threads are running or waiting
/// for a core (state `R`), rather than asleep waiting for work.
fn busy_workers(pid: u32) -> usize {
    let tasks = std::fs::read_dir(format!("/proc/{pid}/task")).into_iter().flatten().flatten();
    tasks
        .filter(|task| {
            std::fs::read_to_string(task.path().join("comm")).is_ok_and(|comm| comm.trim() == "tokio-rt-worker")
        })
        .filter_map(|task| std::fs::read_to_string(task.path().join("stat")).ok())
        .filter(|stat| stat.rsplit_once(')').is_some_and(|(_, rest)| rest.trim_start().starts_with('R')))
        .count()
}

#[test]
fn calls_of_one_turn_compute_on_two_cores_at_once() {
    // Two calls that only compute (no host call to wait on): each must get a
    // worker thread of its own, not take turns on the one that runs the loop.
    let script = ALL[1];
    let plugins = common::plugin_dir(&["spin_forever"]);
    let dir = tempfile::tempdir().unwrap();
    let config = dir.path().join("toolhost.toml");
    std::fs::write(&config, "[limits]\nfuel = 1_000_000_000_000\ntimeout = \"6s\"\n").unwrap();
    let events = dir.path().join("e.jsonl");
    let server = ModelServer::start(vec![
        script.calls(&[("one", "spin_forever", "{}"), ("two", "spin_forever", "{}")]),
        script.text("both stopped"),
    ]);
    let (c, e) = (config.to_str().unwrap(), events.to_str().unwrap());
    let child = spawn_run(
        script,
        &server,
        &plugins.path().display().to_string(),
        &["--config", c, "run", "spin", "--yes", "--events", e],
    );
    wait_until(|| {
        std::fs::read_to_string(&events).is_ok_and(|text| text.matches("\"tool_call_started\"").count() == 2)
    });
    std::thread::sleep(std::time::Duration::from_millis(300));
    // Runnable counts whether or not a core is free, so a busy machine does
    // not change what is read: two workers computing, or one and an idle one.
    let samples: Vec<usize> = (0..20)
        .map(|_| {
            std::thread::sleep(std::time::Duration::from_millis(50));
            busy_workers(child.id())
        })
        .collect();
    let output = child.wait_with_output().unwrap();
    assert!(output.status.success(), "{}", stderr(&output));
    assert!(stdout(&output).contains("both stopped"), "{}", stdout(&output));
    let both = samples.iter().filter(|busy| **busy >= 2).count();
    assert!(both >= 10, "two workers were busy in {both} of 20 samples ({samples:?}): the calls took turns on one");
}

#[test]
fn ctrl_c_cancels_the_request_or_the_tools_and_still_writes_the_transcript() {
    let script = ALL[1];
    let dir = tempfile::tempdir().unwrap();

    // During the model request.
    let transcript = dir.path().join("waiting.json");
    let server = ModelServer::start(vec![common::model_server::hang()]);
    let output =
        interrupt(script, &server, &bundled(), &["run", "hi", "--transcript", transcript.to_str().unwrap()], || {
            !server.requests().is_empty()
        });
    assert_eq!(output.status.code(), Some(130), "{}", stderr(&output));
    let saved: Value = serde_json::from_slice(&std::fs::read(&transcript).unwrap()).unwrap();
    assert_eq!(saved["messages"][0]["content"], "hi");

    // During a tool call: the call gets its result, so the transcript stays valid.
    let plugins = common::plugin_dir(&["sleep_forever"]);
    let transcript = dir.path().join("tools.json");
    let server = ModelServer::start(vec![script.calls(&[("zz", "sleep_forever", "{}")])]);
    let events = dir.path().join("e.jsonl");
    let output = interrupt(
        script,
        &server,
        &plugins.path().display().to_string(),
        &["run", "sleep", "--yes", "--transcript", transcript.to_str().unwrap(), "--events", events.to_str().unwrap()],
        || std::fs::read_to_string(&events).is_ok_and(|text| text.contains("tool_call_started")),
    );
    assert_eq!(output.status.code(), Some(130), "{}", stderr(&output));
    let saved: Value = serde_json::from_slice(&std::fs::read(&transcript).unwrap()).unwrap();
    let result = &saved["messages"][2]["results"][0];
    assert_eq!(result["call_id"], "zz");
    assert!(result["content"].as_str().unwrap().contains("cancelled"), "{result}");
    let last = std::fs::read_to_string(&events).unwrap().lines().last().unwrap().to_owned();
    assert!(last.contains("\"status\":\"cancelled\""), "{last}");
}

#[test]
fn a_refused_host_is_named_to_the_model_and_in_the_events() {
    let script = ALL[1];
    let plugins = common::plugin_dir(&["fetch"]);
    let dir = tempfile::tempdir().unwrap();
    let events = dir.path().join("e.jsonl");
    let server = ModelServer::start(vec![
        script.calls(&[("f", "fetch", r#"{"url":"http://127.0.0.1:9/secret"}"#)]),
        script.text("it was refused"),
    ]);
    let plugins = plugins.path().display().to_string();
    let output =
        toolhost(script, &server, &plugins, &["run", "fetch it", "--yes", "--events", events.to_str().unwrap()]);
    assert!(output.status.success(), "{}", stderr(&output));
    let results = results(script, &server, 1);
    assert!(results[0].1.contains("toolhost refused: http://127.0.0.1:9"), "{results:?}");
    let text = std::fs::read_to_string(&events).unwrap();
    let finished =
        text.lines().find(|line| line.contains("tool_call_failed") || line.contains("tool_call_completed")).unwrap();
    assert!(finished.contains("\"refused\":[{\"target\":\"http://127.0.0.1:9"), "{finished}");
}

/// Every event of a `--events` file.
fn read_events(path: &Path) -> Vec<Value> {
    std::fs::read_to_string(path)
        .unwrap()
        .lines()
        .map(|line| serde_json::from_str(line).unwrap_or_else(|err| panic!("{err}: {line}")))
        .collect()
}

/// The event names of one call, in order.
fn kinds_of_call(events: &[Value], call_id: &str) -> Vec<String> {
    events
        .iter()
        .filter(|event| event["call_id"] == call_id)
        .map(|event| event["event"].as_str().unwrap().to_owned())
        .collect()
}

/// Checks the documented sequence for every call: `tool_call_requested`,
/// then exactly one final event, `tool_call_failed` or `tool_call_denied`
/// directly, or `tool_call_approved` (then `tool_call_started` if it ran)
/// then `tool_call_completed` or `tool_call_failed`.
fn check_call_events(events: &[Value]) {
    let mut ids: Vec<&str> = events.iter().filter_map(|event| event["call_id"].as_str()).collect();
    ids.dedup();
    for id in ids {
        let kinds = kinds_of_call(events, id);
        let kinds: Vec<&str> = kinds.iter().map(String::as_str).collect();
        let valid = matches!(
            kinds.as_slice(),
            ["tool_call_requested", "tool_call_failed" | "tool_call_denied"]
                | ["tool_call_requested", "tool_call_approved", "tool_call_failed"]
                | [
                    "tool_call_requested",
                    "tool_call_approved",
                    "tool_call_started",
                    "tool_call_completed" | "tool_call_failed"
                ]
        );
        assert!(valid, "call {id}: {kinds:?}");
    }
}

#[test]
fn calls_without_ids_get_ids_of_their_own_in_every_protocol() {
    for script in ALL {
        let server = ModelServer::start(vec![
            script.calls(&[("", "sha256", r#"{"text":"abc"}"#), ("", "calculate", r#"{"expression":"6*7"}"#)]),
            script.text("done"),
        ]);
        let output = toolhost(script, &server, &bundled(), &["run", "go", "--yes"]);
        assert!(output.status.success(), "{script:?}: {}", stderr(&output));
        let sent = script.sent_calls(&server.requests()[1]);
        let results = results(script, &server, 1);
        assert_eq!(sent.len(), 2, "{script:?}");
        assert!(!sent[0].0.is_empty() && sent[0].0 != sent[1].0, "{script:?}: {sent:?}");
        let sent_ids: Vec<&str> = sent.iter().map(|(id, _, _)| id.as_str()).collect();
        let result_ids: Vec<&str> = results.iter().map(|(id, _, _)| id.as_str()).collect();
        assert_eq!(sent_ids, result_ids, "{script:?}");
        assert_eq!(results[0].1, ABC_SHA256, "{script:?}");
        assert!(results[1].1.contains("42"), "{script:?}: {results:?}");
    }
}

#[test]
fn streamed_calls_without_ids_on_distinct_indexes_stay_apart() {
    let script = ALL[1];
    let server = ModelServer::start(vec![
        Script::openai_deltas(
            &[
                json!({"index": 0, "type": "function", "function": {"name": "echo", "arguments": ""}}),
                json!({"index": 1, "type": "function", "function": {"name": "sha256", "arguments": "{\"text\":"}}),
                json!({"index": 0, "function": {"arguments": "{\"text\":\"hi\"}"}}),
                json!({"index": 2, "type": "function", "function": {"name": "calculate", "arguments": "{\"expression\":\"1+1\"}"}}),
                json!({"index": 1, "function": {"arguments": "\"abc\"}"}}),
            ],
            "tool_calls",
        ),
        script.text("done"),
    ]);
    let output = toolhost(script, &server, &bundled(), &["run", "go", "--yes"]);
    assert!(output.status.success(), "{}", stderr(&output));
    let sent = script.sent_calls(&server.requests()[1]);
    let names: Vec<&str> = sent.iter().map(|(_, name, _)| name.as_str()).collect();
    assert_eq!(names, ["echo", "sha256", "calculate"]);
    let results = results(script, &server, 1);
    assert_eq!(results.len(), 3);
    assert!(results[0].1.contains("hi") && !results[0].2, "{results:?}");
    assert_eq!(results[1].1, ABC_SHA256);
    assert!(results[2].1.contains('2') && !results[2].2, "{results:?}");
    let mut ids: Vec<&str> = results.iter().map(|(id, _, _)| id.as_str()).collect();
    ids.sort();
    ids.dedup();
    assert_eq!(ids.len(), 3, "{results:?}");
}

#[test]
fn two_calls_with_one_id_get_two_ids_and_two_results() {
    for script in ALL {
        let server = ModelServer::start(vec![
            script.calls(&[("dup", "sha256", r#"{"text":"abc"}"#), ("dup", "sha256", r#"{"text":""}"#)]),
            script.text("done"),
        ]);
        let output = toolhost(script, &server, &bundled(), &["run", "go", "--yes"]);
        assert!(output.status.success(), "{script:?}: {}", stderr(&output));
        let sent = script.sent_calls(&server.requests()[1]);
        let results = results(script, &server, 1);
        assert_eq!(sent.len(), 2, "{script:?}");
        assert_eq!(sent[0].0, "dup", "{script:?}: the first keeps the provider's id");
        assert_ne!(sent[0].0, sent[1].0, "{script:?}");
        let sent_ids: Vec<&str> = sent.iter().map(|(id, _, _)| id.as_str()).collect();
        let result_ids: Vec<&str> = results.iter().map(|(id, _, _)| id.as_str()).collect();
        assert_eq!(sent_ids, result_ids, "{script:?}");
        assert_eq!(results[0].1, ABC_SHA256, "{script:?}");
        assert_eq!(results[1].1, "e3b0c44298fc1c149afbf4c8996fb92427ae41e4649b934ca495991b7852b855", "{script:?}");
    }
}

#[test]
fn calls_cut_off_by_the_token_limit_are_not_run() {
    let dir = tempfile::tempdir().unwrap();
    for script in ALL {
        let events = dir.path().join("e.jsonl");
        let transcript = dir.path().join("t.json");
        let server = ModelServer::start(vec![
            script.calls_cut_off(&[("c1", "sha256", r#"{"text":"abc"}"#), ("c2", "sha256", r#"{"text": "ab"#)]),
            script.text("never asked for"),
        ]);
        let (t, e) = (transcript.to_str().unwrap(), events.to_str().unwrap());
        let output = toolhost(script, &server, &bundled(), &["run", "go", "--yes", "--transcript", t, "--events", e]);
        assert_eq!(output.status.code(), Some(1), "{script:?}: {}", stderr(&output));
        let text = stderr(&output);
        assert!(text.contains("cut off by its output token limit") && text.contains("max_tokens"), "{text}");
        assert!(!text.contains("✓"), "{script:?}: nothing ran: {text}");
        assert_eq!(server.requests().len(), 1, "{script:?}");
        let events = read_events(&events);
        check_call_events(&events);
        assert!(events.iter().all(|event| event["event"] != "tool_call_started"), "{script:?}");
        assert_eq!(events.last().unwrap()["status"], "length");
        // The transcript stays valid to send again: each call has its result.
        let saved: Value = serde_json::from_slice(&std::fs::read(&transcript).unwrap()).unwrap();
        let results = saved["messages"][2]["results"].as_array().unwrap();
        assert_eq!(results.len(), 2, "{script:?}");
        assert!(results.iter().all(|r| r["is_error"] == true && r["content"].as_str().unwrap().contains("not run")));
    }
}

#[test]
fn an_empty_reply_is_an_error() {
    for script in ALL {
        let server = ModelServer::start(vec![script.text("")]);
        let output = toolhost(script, &server, &bundled(), &["run", "hi"]);
        assert_eq!(output.status.code(), Some(1), "{script:?}: {}", stderr(&output));
        assert!(stderr(&output).contains("the model sent an empty reply"), "{script:?}: {}", stderr(&output));
    }
}

#[test]
fn a_stream_dropped_after_text_says_so_and_keeps_the_text() {
    let dir = tempfile::tempdir().unwrap();
    for script in [ALL[1], ALL[3]] {
        let transcript = dir.path().join("t.json");
        let server = ModelServer::start(vec![script.dropped_after("The answer is 4"), script.text("again")]);
        let t = transcript.to_str().unwrap();
        let output = toolhost(script, &server, &bundled(), &["run", "2+2?", "--transcript", t]);
        assert_eq!(output.status.code(), Some(1), "{script:?}");
        assert!(stdout(&output).contains("The answer is 4"), "{script:?}");
        let text = stderr(&output);
        assert!(text.contains("broke off before it was complete") && text.contains("kept in the transcript"), "{text}");
        assert!(!text.contains("could not reach"), "the model was reached: {text}");
        assert_eq!(server.requests().len(), 1, "{script:?}: text was shown, so no retry repeats it");
        let saved: Value = serde_json::from_slice(&std::fs::read(&transcript).unwrap()).unwrap();
        assert_eq!(saved["messages"][1], json!({"role": "assistant", "content": "The answer is 4"}), "{script:?}");
    }
}

#[test]
fn a_stream_dropped_before_any_text_is_retried_with_a_line_saying_so() {
    for script in [ALL[1], ALL[3]] {
        let server = ModelServer::start(vec![script.dropped_after(""), script.text("whole")]);
        let output = toolhost(script, &server, &bundled(), &["run", "hi"]);
        assert!(output.status.success(), "{script:?}: {}", stderr(&output));
        assert_eq!(stdout(&output).trim(), "whole");
        assert!(stderr(&output).contains("the response broke off"), "{}", stderr(&output));
        assert_eq!(server.requests().len(), 2);
    }
}

#[test]
fn yes_approves_ask_calls_as_the_yes_flag_and_deny_still_wins() {
    let dir = tempfile::tempdir().unwrap();
    std::fs::write(dir.path().join("toolhost.toml"), "[approvals]\ntools = { sha256 = \"ask\", echo = \"deny\" }\n")
        .unwrap();
    let events = dir.path().join("e.jsonl");
    let script = ALL[1];
    let server = ModelServer::start(vec![
        script.calls(&[
            ("asked", "sha256", r#"{"text":"abc"}"#),
            ("denied", "echo", r#"{"text":"x"}"#),
            ("auto", "calculate", r#"{"expression":"1+1"}"#),
        ]),
        script.text("done"),
    ]);
    let e = events.to_str().unwrap();
    let output = toolhost_in(dir.path(), script, &server, &bundled(), &["run", "go", "--yes", "--events", e], None);
    assert!(output.status.success(), "{}", stderr(&output));
    let results = results(script, &server, 1);
    assert_eq!(results[0].1, ABC_SHA256);
    assert!(results[1].2 && results[1].1.contains("the operator does not allow calls to `echo`"), "{results:?}");
    let events = read_events(&events);
    check_call_events(&events);
    let approved_by = |id: &str| {
        events.iter().find(|e| e["event"] == "tool_call_approved" && e["call_id"] == id).map(|e| e["by"].clone())
    };
    assert_eq!(approved_by("asked"), Some(json!("yes_flag")));
    assert_eq!(approved_by("auto"), Some(json!("policy")));
    assert_eq!(kinds_of_call(&events, "denied"), ["tool_call_requested", "tool_call_denied"]);

    let help = Command::new(env!("CARGO_BIN_EXE_toolhost")).args(["run", "--help"]).output().unwrap();
    assert!(stdout(&help).contains("a `deny` policy still wins"), "{}", stdout(&help));
}

#[test]
fn ctrl_c_keeps_the_results_of_calls_that_finished() {
    let script = ALL[1];
    let plugins = common::plugin_dir(&["hash", "sleep_forever"]);
    let dir = tempfile::tempdir().unwrap();
    let transcript = dir.path().join("t.json");
    let events = dir.path().join("e.jsonl");
    let server = ModelServer::start(vec![
        script.calls(&[("fast", "sha256", r#"{"text":"abc"}"#), ("slow", "sleep_forever", "{}")]),
        script.text("never asked for"),
    ]);
    let (t, e) = (transcript.to_str().unwrap(), events.to_str().unwrap());
    let output = interrupt(
        script,
        &server,
        &plugins.path().display().to_string(),
        &["run", "go", "--yes", "--transcript", t, "--events", e],
        || {
            std::fs::read_to_string(&events).is_ok_and(|text| {
                text.contains("tool_call_completed") && text.contains("\"tool_call_started\",\"call_id\":\"slow\"")
            })
        },
    );
    assert_eq!(output.status.code(), Some(130), "{}", stderr(&output));
    let saved: Value = serde_json::from_slice(&std::fs::read(&transcript).unwrap()).unwrap();
    let results = &saved["messages"][2]["results"];
    assert_eq!(results[0]["content"], ABC_SHA256, "a finished call keeps its result: {results}");
    assert_eq!(results[0]["is_error"], false);
    assert!(results[1]["content"].as_str().unwrap().contains("cancelled while this call was running"), "{results}");
    let events = read_events(&events);
    check_call_events(&events);
    let last = events.iter().rfind(|e| e["call_id"] == "slow").unwrap();
    assert_eq!((last["event"].clone(), last["kind"].clone()), (json!("tool_call_failed"), json!("cancelled")));
}

/// A CA and a certificate for 127.0.0.1 signed by it, made for this test run:
/// the server's TLS config and the CA's PEM.
fn private_ca() -> (std::sync::Arc<rustls::ServerConfig>, String) {
    use rcgen::{BasicConstraints, CertificateParams, DnType, ExtendedKeyUsagePurpose, IsCa, Issuer, KeyPair};
    let ca_key = KeyPair::generate().unwrap();
    let mut ca = CertificateParams::new(Vec::<String>::new()).unwrap();
    ca.is_ca = IsCa::Ca(BasicConstraints::Unconstrained);
    ca.distinguished_name.push(DnType::CommonName, "toolhost test CA");
    let ca_cert = ca.self_signed(&ca_key).unwrap();
    let issuer = Issuer::new(ca, ca_key);
    let key = KeyPair::generate().unwrap();
    let mut leaf = CertificateParams::new(vec!["127.0.0.1".to_owned()]).unwrap();
    leaf.extended_key_usages = vec![ExtendedKeyUsagePurpose::ServerAuth];
    let cert = leaf.signed_by(&key, &issuer).unwrap();
    let provider = std::sync::Arc::new(rustls::crypto::ring::default_provider());
    let config = rustls::ServerConfig::builder_with_provider(provider)
        .with_safe_default_protocol_versions()
        .unwrap()
        .with_no_client_auth()
        .with_single_cert(vec![cert.der().clone()], rustls::pki_types::PrivateKeyDer::Pkcs8(key.serialize_der().into()))
        .unwrap();
    (std::sync::Arc::new(config), ca_cert.pem())
}

#[test]
fn a_model_server_with_a_private_ca_is_trusted_through_ca_file() {
    let (tls, ca_pem) = private_ca();
    let dir = tempfile::tempdir().unwrap();
    for script in [ALL[1], ALL[2]] {
        // Not trusted without the CA: one clear line, and no retries.
        let _ = std::fs::remove_file(dir.path().join("toolhost.toml"));
        let server = ModelServer::start_tls(vec![script.text("secure")], tls.clone());
        let output = toolhost_in(dir.path(), script, &server, &bundled(), &["run", "hi"], None);
        assert_eq!(output.status.code(), Some(1), "{script:?}: {}", stderr(&output));
        let text = stderr(&output);
        assert!(text.contains("could not verify the TLS certificate") && text.contains("ca_file"), "{text}");
        assert!(!text.contains("retrying"), "a certificate error is not retried: {text}");

        std::fs::write(dir.path().join("ca.pem"), &ca_pem).unwrap();
        std::fs::write(dir.path().join("toolhost.toml"), "ca_file = \"ca.pem\"\n").unwrap();
        let output = toolhost_in(dir.path(), script, &server, &bundled(), &["run", "hi"], None);
        assert!(output.status.success(), "{script:?}: {}", stderr(&output));
        assert!(stdout(&output).contains("secure"));
        assert_eq!(server.requests().len(), 1);
    }
}

#[test]
fn model_requests_go_through_the_proxy_the_environment_names() {
    let script = ALL[1];
    // Plain HTTP: the proxy gets the request in absolute form.
    let server = ModelServer::start(vec![script.text("via the proxy"), script.text("direct")]);
    let proxy = Proxy::start();
    let run =
        |env: &[(&str, &str)]| toolhost_env(Path::new("."), script, &server, &bundled(), &["run", "hi"], None, env);
    let output = run(&[("HTTP_PROXY", &proxy.url)]);
    assert!(output.status.success(), "{}", stderr(&output));
    assert!(stdout(&output).contains("via the proxy"));
    assert_eq!(proxy.seen(), [format!("POST {}/v1/chat/completions HTTP/1.1", server.url)]);
    // NO_PROXY names hosts reached directly.
    let output = run(&[("http_proxy", &proxy.url), ("NO_PROXY", "127.0.0.1")]);
    assert!(output.status.success(), "{}", stderr(&output));
    assert_eq!(proxy.seen().len(), 1, "{:?}", proxy.seen());
    assert_eq!(server.requests().len(), 2);

    // HTTPS through a CONNECT tunnel, with the private CA from the config.
    let (tls, ca_pem) = private_ca();
    let dir = tempfile::tempdir().unwrap();
    std::fs::write(dir.path().join("ca.pem"), &ca_pem).unwrap();
    std::fs::write(dir.path().join("toolhost.toml"), "ca_file = \"ca.pem\"\n").unwrap();
    for script in [ALL[0], ALL[3]] {
        let server = ModelServer::start_tls(vec![script.text("tunnelled")], tls.clone());
        let proxy = Proxy::start();
        let output =
            toolhost_env(dir.path(), script, &server, &bundled(), &["run", "hi"], None, &[("HTTPS_PROXY", &proxy.url)]);
        assert!(output.status.success(), "{script:?}: {}", stderr(&output));
        assert!(stdout(&output).contains("tunnelled"));
        let authority = server.url.trim_start_matches("https://");
        assert_eq!(proxy.seen(), [format!("CONNECT {authority} HTTP/1.1")], "{script:?}");
        assert_eq!(server.requests().len(), 1);
    }
}

/// `toolhost ARGS` on a pseudo-terminal against `server`, in `cwd`.
fn on_terminal(cwd: &Path, script: Script, server: &ModelServer, args: &[&str]) -> common::pty::Terminal {
    let base_url = script.base_url(server);
    let cache = common::shared_cache().display().to_string();
    let plugins = bundled();
    let mut all = vec!["--plugins", &plugins];
    all.extend_from_slice(args);
    all.extend_from_slice(&["--model", script.model(), "--base-url", &base_url]);
    let mut remove = vec!["TOOLHOST_MODEL", "TOOLHOST_CONFIG", "TOOLHOST_PLUGINS", "TOOLHOST_LOG"];
    remove.extend_from_slice(&PROXY_VARS);
    common::pty::Terminal::spawn(
        Path::new(env!("CARGO_BIN_EXE_toolhost")),
        &all,
        cwd,
        &[("TOOLHOST_CACHE_DIR", &cache), ("OPENAI_API_KEY", "test-key"), ("ANTHROPIC_API_KEY", "test-key")],
        &remove,
    )
}

/// A folder whose toolhost.toml makes `sha256` ask for approval.
fn asking_config() -> tempfile::TempDir {
    let dir = tempfile::tempdir().unwrap();
    std::fs::write(dir.path().join("toolhost.toml"), "[approvals]\ntools = { sha256 = \"ask\" }\n").unwrap();
    dir
}

#[test]
fn ctrl_c_at_the_approval_prompt_of_run_exits_at_once_on_a_terminal() {
    let script = ALL[1];
    let dir = asking_config();
    let transcript = dir.path().join("t.json");
    let server = ModelServer::start(vec![
        script.calls(&[("first", "calculate", r#"{"expression":"1+1"}"#), ("asked", "sha256", r#"{"text":"abc"}"#)]),
        script.text("never asked for"),
    ]);
    let mut terminal =
        on_terminal(dir.path(), script, &server, &["run", "go", "--transcript", transcript.to_str().unwrap()]);
    terminal.expect("The model wants to call `sha256`");
    terminal.expect("allow it?");
    terminal.ctrl_c();
    assert_eq!(terminal.exit_code(std::time::Duration::from_secs(10)), 130, "{}", terminal.output());
    assert!(terminal.output().contains("cancelled"), "{}", terminal.output());
    let saved: Value = serde_json::from_slice(&std::fs::read(&transcript).unwrap()).unwrap();
    let results = &saved["messages"][2]["results"];
    assert!(results[0]["content"].as_str().unwrap().contains("cancelled before this call started"), "{results}");
    assert!(results[1]["content"].as_str().unwrap().contains("cancelled before this call was approved"), "{results}");
    assert_eq!(server.requests().len(), 1);
}

#[test]
fn ctrl_c_at_the_chat_prompt_exits_130_on_a_terminal() {
    let script = ALL[3];
    let server = ModelServer::start(vec![script.text("Hello there.")]);
    let dir = tempfile::tempdir().unwrap();
    let mut terminal = on_terminal(dir.path(), script, &server, &["chat"]);
    terminal.expect("chatting with anthropic/test-model");
    terminal.expect("> ");
    terminal.send("hi\r");
    terminal.expect("Hello there.");
    terminal.expect("> ");
    terminal.ctrl_c();
    assert_eq!(terminal.exit_code(std::time::Duration::from_secs(10)), 130, "{}", terminal.output());
    assert!(terminal.output().contains("cancelled"), "{}", terminal.output());
}

#[test]
fn chat_on_a_terminal_asks_runs_answers_and_ctrl_c_at_the_next_prompt_exits_130() {
    let script = ALL[1];
    let dir = asking_config();
    let events = dir.path().join("e.jsonl");
    let server = ModelServer::start(vec![
        script.calls(&[("one", "sha256", r#"{"text":"abc"}"#)]),
        script.text("The digest is ba78."),
        script.calls(&[("two", "sha256", r#"{"text":"again"}"#)]),
        script.text("never asked for"),
    ]);
    let mut terminal = on_terminal(dir.path(), script, &server, &["chat", "--events", events.to_str().unwrap()]);
    terminal.expect("> ");
    terminal.send("hash abc\r");
    terminal.expect("allow it?");
    terminal.send("y\r");
    terminal.expect("✓ sha256");
    terminal.expect("The digest is ba78.");
    terminal.expect("> ");
    terminal.send("and again\r");
    terminal.expect("allow it?");
    terminal.ctrl_c();
    assert_eq!(terminal.exit_code(std::time::Duration::from_secs(10)), 130, "{}", terminal.output());
    assert_eq!(results(script, &server, 1), [("one".to_owned(), ABC_SHA256.to_owned(), false)]);
    let events = read_events(&events);
    check_call_events(&events);
    let approved = events.iter().find(|e| e["event"] == "tool_call_approved").unwrap();
    assert_eq!(approved["by"], "user_once");
    assert_eq!(kinds_of_call(&events, "two"), ["tool_call_requested", "tool_call_denied"]);
    assert_eq!(server.requests().len(), 3);
}

/// A scripted response with this body: JSON, or server-sent events.
fn body(body: common::model_server::Body) -> common::model_server::Response {
    common::model_server::Response { status: 200, headers: vec![], body }
}

/// OpenAI chunks, each a `delta` (the last one with `finish`), then `[DONE]`.
fn openai_stream(deltas: &[Value], finish: &str) -> common::model_server::Response {
    let mut events: Vec<(Option<String>, String)> = deltas
        .iter()
        .map(|delta| {
            (None, json!({"id": "c", "choices": [{"index": 0, "delta": delta, "finish_reason": null}]}).to_string())
        })
        .collect();
    events
        .push((None, json!({"id": "c", "choices": [{"index": 0, "delta": {}, "finish_reason": finish}]}).to_string()));
    events.push((None, "[DONE]".to_owned()));
    body(common::model_server::Body::Events(events))
}

/// The assistant message the host sent back in `request` (the last one).
fn sent_assistant(request: &common::model_server::Request) -> Value {
    let messages = request.body["messages"].as_array().unwrap();
    messages.iter().rev().find(|message| message["role"] == "assistant").cloned().expect("an assistant message")
}

const SIGNED: &str = "EqQBCgIYAhIM1gbcDa9GJwZA2b3hGgxBdjrkzLoky3dl1pkiMOYds";

#[test]
fn anthropic_thinking_blocks_go_back_first_and_unchanged_streamed_or_not() {
    let thinking =
        json!({"type": "thinking", "thinking": "The user wants a digest. I will call sha256.", "signature": SIGNED});
    let redacted = json!({"type": "redacted_thinking", "data": "EmwKAhgBEgy3va3pzix/LafPsn4aDFIT2Xlxh0L5L8rLVyIwxtE3rAFBa8cr3qpP"});
    let plain = json!({
        "id": "msg_1", "type": "message", "role": "assistant", "model": "test-model",
        "content": [thinking, redacted, {"type": "text", "text": "Hashing."},
                    {"type": "tool_use", "id": "toolu_1", "name": "sha256", "input": {"text": "abc"}}],
        "stop_reason": "tool_use", "usage": {"input_tokens": 10, "output_tokens": 20}
    });
    let event = |name: &str, data: Value| (Some(name.to_owned()), data.to_string());
    let streamed = vec![
        event(
            "message_start",
            json!({"type": "message_start", "message": {"id": "msg_1", "type": "message", "role": "assistant", "content": [], "model": "test-model", "stop_reason": null, "usage": {"input_tokens": 10, "output_tokens": 1}}}),
        ),
        event(
            "content_block_start",
            json!({"type": "content_block_start", "index": 0, "content_block": {"type": "thinking", "thinking": "", "signature": ""}}),
        ),
        event(
            "content_block_delta",
            json!({"type": "content_block_delta", "index": 0, "delta": {"type": "thinking_delta", "thinking": "The user wants a digest. "}}),
        ),
        event(
            "content_block_delta",
            json!({"type": "content_block_delta", "index": 0, "delta": {"type": "thinking_delta", "thinking": "I will call sha256."}}),
        ),
        event(
            "content_block_delta",
            json!({"type": "content_block_delta", "index": 0, "delta": {"type": "signature_delta", "signature": SIGNED}}),
        ),
        event("content_block_stop", json!({"type": "content_block_stop", "index": 0})),
        event("content_block_start", json!({"type": "content_block_start", "index": 1, "content_block": redacted})),
        event("content_block_stop", json!({"type": "content_block_stop", "index": 1})),
        event(
            "content_block_start",
            json!({"type": "content_block_start", "index": 2, "content_block": {"type": "text", "text": ""}}),
        ),
        event(
            "content_block_delta",
            json!({"type": "content_block_delta", "index": 2, "delta": {"type": "text_delta", "text": "Hashing."}}),
        ),
        event("content_block_stop", json!({"type": "content_block_stop", "index": 2})),
        event(
            "content_block_start",
            json!({"type": "content_block_start", "index": 3, "content_block": {"type": "tool_use", "id": "toolu_1", "name": "sha256", "input": {}}}),
        ),
        event(
            "content_block_delta",
            json!({"type": "content_block_delta", "index": 3, "delta": {"type": "input_json_delta", "partial_json": "{\"text\": \"abc\"}"}}),
        ),
        event("content_block_stop", json!({"type": "content_block_stop", "index": 3})),
        event(
            "message_delta",
            json!({"type": "message_delta", "delta": {"stop_reason": "tool_use", "stop_sequence": null}, "usage": {"output_tokens": 20}}),
        ),
        event("message_stop", json!({"type": "message_stop"})),
    ];
    for script in [ALL[2], ALL[3]] {
        let first = if script.stream {
            body(common::model_server::Body::Events(streamed.clone()))
        } else {
            body(common::model_server::Body::Json(plain.clone()))
        };
        let server = ModelServer::start(vec![first, script.text("The digest is ba78…15ad.")]);
        let dir = tempfile::tempdir().unwrap();
        let transcript = dir.path().join("t.json");
        let args = ["run", "hash abc", "--yes", "--transcript", transcript.to_str().unwrap()];
        let output = toolhost(script, &server, &bundled(), &args);
        assert!(output.status.success(), "{script:?}: {}", stderr(&output));
        let assistant = sent_assistant(&server.requests()[1]);
        let blocks = assistant["content"].as_array().unwrap();
        assert_eq!(blocks[0], thinking, "{script:?}: the thinking block goes back first, unchanged: {assistant}");
        assert_eq!(blocks[1], redacted, "{script:?}: then the redacted one: {assistant}");
        let kinds: Vec<&str> = blocks.iter().map(|block| block["type"].as_str().unwrap()).collect();
        assert_eq!(kinds, ["thinking", "redacted_thinking", "text", "tool_use"], "{script:?}");
        assert_eq!(results(script, &server, 1)[0].1, ABC_SHA256);
        // Kept in the transcript, never shown as the answer.
        let answer = stdout(&output);
        assert!(!answer.contains("I will call sha256") && answer.contains("The digest is"), "{answer}");
        let saved = std::fs::read_to_string(&transcript).unwrap();
        assert!(saved.contains(SIGNED) && saved.contains("redacted_thinking"), "{saved}");
    }
}

#[test]
fn gemini_thought_signatures_go_back_on_each_call_streamed_or_not() {
    let signature = |n: u32| json!({"google": {"thought_signature": format!("CvcBAdHtim{n}+Qw==")}});
    let plain = json!({
        "id": "c", "object": "chat.completion", "model": "gemini-3-pro",
        "choices": [{"index": 0, "finish_reason": "tool_calls", "message": {"role": "assistant", "content": null, "tool_calls": [
            {"id": "function-call-1", "type": "function", "function": {"name": "sha256", "arguments": "{\"text\":\"abc\"}"}, "extra_content": signature(1)},
            {"id": "function-call-2", "type": "function", "function": {"name": "sha256", "arguments": "{\"text\":\"\"}"}, "extra_content": signature(2)}
        ]}}],
        "usage": {"prompt_tokens": 5, "completion_tokens": 5}
    });
    let streamed = openai_stream(
        &[
            json!({"role": "assistant", "tool_calls": [{"index": 0, "id": "function-call-1", "type": "function", "function": {"name": "sha256", "arguments": "{\"text\":\"abc\"}"}, "extra_content": signature(1)}]}),
            json!({"tool_calls": [{"index": 1, "id": "function-call-2", "type": "function", "function": {"name": "sha256", "arguments": "{\"text\":\"\"}"}, "extra_content": signature(2)}]}),
        ],
        "tool_calls",
    );
    for script in [ALL[0], ALL[1]] {
        let first =
            if script.stream { streamed.clone() } else { body(common::model_server::Body::Json(plain.clone())) };
        let server = ModelServer::start(vec![first, script.text("done")]);
        let output = toolhost(script, &server, &bundled(), &["run", "hash", "--yes"]);
        assert!(output.status.success(), "{script:?}: {}", stderr(&output));
        let assistant = sent_assistant(&server.requests()[1]);
        let calls = assistant["tool_calls"].as_array().unwrap();
        assert_eq!(calls.len(), 2, "{assistant}");
        for (n, call) in calls.iter().enumerate() {
            assert_eq!(call["extra_content"], signature(n as u32 + 1), "{script:?}: {assistant}");
        }
    }
}

#[test]
fn reasoning_content_goes_back_within_the_tool_loop_only() {
    // DeepSeek in thinking mode (reasoning_content), vLLM (reasoning) and
    // OpenRouter (reasoning_details, streamed in pieces by index).
    let plain = |reasoning: &str| {
        json!({
            "id": "c", "model": "deepseek-reasoner",
            "choices": [{"index": 0, "finish_reason": "tool_calls", "message": {
                "role": "assistant", "content": "", "reasoning_content": reasoning,
                "reasoning_details": [{"type": "reasoning.text", "text": reasoning, "signature": "sig", "index": 0}],
                "tool_calls": [{"id": "call_1", "type": "function", "function": {"name": "sha256", "arguments": "{\"text\":\"abc\"}"}}]
            }}]
        })
    };
    let streamed = |reasoning: &str| {
        let (head, tail) = reasoning.split_at(reasoning.len() / 2);
        openai_stream(
            &[
                json!({"role": "assistant", "reasoning_content": head, "reasoning": head, "reasoning_details": [{"type": "reasoning.text", "text": head, "index": 0, "signature": null}]}),
                json!({"reasoning_content": tail, "reasoning": tail, "reasoning_details": [{"type": "reasoning.text", "text": tail, "index": 0, "signature": "sig"}]}),
                json!({"tool_calls": [{"index": 0, "id": "call_1", "type": "function", "function": {"name": "sha256", "arguments": "{\"text\":\"abc\"}"}}]}),
            ],
            "tool_calls",
        )
    };
    for script in [ALL[0], ALL[1]] {
        let reply = |reasoning: &str| {
            if script.stream { streamed(reasoning) } else { body(common::model_server::Body::Json(plain(reasoning))) }
        };
        let server = ModelServer::start(vec![
            reply("First I hash abc."),
            script.text("one"),
            reply("Again, for the second prompt."),
            script.text("two"),
        ]);
        let output =
            toolhost_in(Path::new("."), script, &server, &bundled(), &["chat", "--yes"], Some("first\nsecond\n"));
        assert!(output.status.success(), "{script:?}: {}", stderr(&output));
        let requests = server.requests();
        assert_eq!(requests.len(), 4, "{script:?}");
        // Within the first prompt's tool loop: sent back with the calls.
        let assistant = sent_assistant(&requests[1]);
        assert_eq!(assistant["reasoning_content"], "First I hash abc.", "{script:?}: {assistant}");
        assert_eq!(
            assistant["reasoning_details"],
            json!([{"type": "reasoning.text", "text": "First I hash abc.", "signature": "sig", "index": 0}]),
            "{script:?}: {assistant}"
        );
        if script.stream {
            assert_eq!(assistant["reasoning"], "First I hash abc.", "{assistant}");
        }
        // In the second prompt's loop, only the new reasoning goes back.
        let messages = requests[3].body["messages"].as_array().unwrap().clone();
        let with_reasoning: Vec<&Value> =
            messages.iter().filter(|message| message.get("reasoning_content").is_some()).collect();
        assert_eq!(with_reasoning.len(), 1, "{script:?}: {messages:?}");
        assert_eq!(with_reasoning[0]["reasoning_content"], "Again, for the second prompt.");
        let answer = stdout(&output);
        assert!(!answer.contains("First I hash") && answer.contains("one") && answer.contains("two"), "{answer}");
    }
}

#[test]
fn a_reply_whose_content_is_a_list_of_parts_is_its_text() {
    let plain = json!({
        "id": "c", "choices": [{"index": 0, "finish_reason": "stop", "message": {"role": "assistant",
            "content": [{"type": "text", "text": "Hello, "}, {"type": "text", "text": "world."}]}}]
    });
    let streamed = openai_stream(
        &[
            json!({"role": "assistant", "content": [{"type": "text", "text": "Hello, "}]}),
            json!({"content": [{"type": "text", "text": "world."}]}),
        ],
        "stop",
    );
    for script in [ALL[0], ALL[1]] {
        let reply =
            if script.stream { streamed.clone() } else { body(common::model_server::Body::Json(plain.clone())) };
        let server = ModelServer::start(vec![reply]);
        let output = toolhost(script, &server, &bundled(), &["run", "hi"]);
        assert!(output.status.success(), "{script:?}: {}", stderr(&output));
        assert!(stdout(&output).contains("Hello, world."), "{script:?}: {}", stdout(&output));
    }
}

/// What a terminal shows of `output`: each line after its last carriage
/// return or line clear.
fn screen_lines(output: &str) -> Vec<String> {
    output
        .split('\n')
        .map(|line| {
            let line = line.trim_end_matches('\r');
            let shown = line.rsplit(['\r']).next().unwrap_or(line);
            shown.rsplit("\x1b[2K").next().unwrap_or(shown).to_owned()
        })
        .collect()
}

#[test]
fn status_lines_never_land_on_an_approval_prompt_line() {
    let script = ALL[1];
    let dir = asking_config();
    let server = ModelServer::start(vec![
        script.calls(&[
            ("unknown", "nope", "{}"),
            ("first", "sha256", r#"{"text":"abc"}"#),
            ("second", "sha256", r#"{"text":""}"#),
        ]),
        script.text("done"),
    ]);
    let mut terminal = on_terminal(dir.path(), script, &server, &["run", "go"]);
    terminal.expect("allow it?");
    terminal.send("n\r");
    // The second question (a status line may show the first one again:
    // an answer typed before the second is shown would not count).
    terminal.expect("⊘ sha256");
    terminal.expect("allow it?");
    terminal.send("y\r");
    terminal.expect("✓ sha256");
    assert_eq!(terminal.exit_code(std::time::Duration::from_secs(10)), 0, "{}", terminal.output());
    let output = terminal.output();
    let lines = screen_lines(&output);
    for glyph in ["✗ nope", "⊘ sha256", "✓ sha256"] {
        let line = lines.iter().find(|line| line.contains(glyph)).unwrap_or_else(|| panic!("no {glyph}: {output:?}"));
        assert!(
            line.starts_with(&format!("  {glyph}")),
            "`{glyph}` is not on a line of its own: {line:?} in {output:?}"
        );
    }
    // The second question is still the last thing before its answer.
    let asked = lines.iter().filter(|line| line.starts_with("  allow it?")).count();
    assert!(asked >= 2, "{output:?}");
}

/// `toolhost run PROMPT --yes` against `server` as the `oai` provider
/// speaking the OpenAI Responses API (`[providers.oai]` in a config file).
fn run_responses(server: &ModelServer, stream: bool, prompt: &str) -> Output {
    let dir = tempfile::tempdir().unwrap();
    run_responses_with(dir.path(), server, stream, prompt, &bundled(), "")
}

/// The same in `dir`, with `plugins` and `config` added to the config file.
fn run_responses_with(
    dir: &Path,
    server: &ModelServer,
    stream: bool,
    prompt: &str,
    plugins: &str,
    config: &str,
) -> Output {
    std::fs::write(
        dir.join("toolhost.toml"),
        format!("[providers.oai]\nprotocol = \"openai-responses\"\nbase_url = \"{}/v1\"\napi_key_env = \"OPENAI_API_KEY\"\n{config}", server.url),
    )
    .unwrap();
    let mut command = Command::new(env!("CARGO_BIN_EXE_toolhost"));
    command
        .current_dir(dir)
        .args(["--plugins", plugins, "run", prompt, "--yes", "--model", "oai/o4-mini"])
        .env("TOOLHOST_CACHE_DIR", common::shared_cache())
        .env("OPENAI_API_KEY", "test-key")
        .env_remove("TOOLHOST_MODEL")
        .env_remove("TOOLHOST_CONFIG")
        .stdin(Stdio::null());
    for name in PROXY_VARS {
        command.env_remove(name);
    }
    if !stream {
        command.arg("--no-stream");
    }
    command.output().expect("run toolhost")
}

/// A Responses API response object with these output items.
fn response_object(status: &str, output: Value) -> Value {
    json!({"id": "resp_1", "object": "response", "status": status, "output": output,
           "usage": {"input_tokens": 12, "output_tokens": 34, "output_tokens_details": {"reasoning_tokens": 20}}})
}

/// The same as a stream of typed events: each item added and done (a
/// function call's arguments and a message's text in deltas), then the final event.
fn response_events(status: &str, output: &[Value], extra: Value) -> common::model_server::Response {
    let event = |data: Value| (Some(data["type"].as_str().unwrap().to_owned()), data.to_string());
    let mut events =
        vec![event(json!({"type": "response.created", "response": response_object("in_progress", json!([]))}))];
    for (index, item) in output.iter().enumerate() {
        let mut added = item.clone();
        match item["type"].as_str() {
            Some("function_call") => added["arguments"] = json!(""),
            Some("message") => added["content"] = json!([]),
            _ => {}
        }
        events.push(event(json!({"type": "response.output_item.added", "output_index": index, "item": added})));
        if item["type"] == "function_call" {
            let arguments = item["arguments"].as_str().unwrap();
            let (head, tail) = arguments.split_at(arguments.len() / 2);
            for delta in [head, tail] {
                events.push(event(json!({"type": "response.function_call_arguments.delta", "output_index": index, "item_id": item["id"], "delta": delta})));
            }
        }
        if item["type"] == "message" {
            let text = item["content"][0]["text"].as_str().unwrap_or_default();
            for piece in [&text[..text.len() / 2], &text[text.len() / 2..]] {
                events.push(event(json!({"type": "response.output_text.delta", "output_index": index, "content_index": 0, "delta": piece})));
            }
        }
        if status == "incomplete" && item["type"] == "message" {
            continue; // cut off: the message item never finishes
        }
        events.push(event(json!({"type": "response.output_item.done", "output_index": index, "item": item})));
    }
    let mut last = response_object(status, json!(output));
    if let Some(extra) = extra.as_object() {
        for (key, value) in extra {
            last[key] = value.clone();
        }
    }
    events.push(event(json!({"type": format!("response.{status}"), "response": last})));
    body(common::model_server::Body::Events(events))
}

fn responses_reply(stream: bool, status: &str, output: Vec<Value>, extra: Value) -> common::model_server::Response {
    if stream {
        response_events(status, &output, extra)
    } else {
        let mut whole = response_object(status, json!(output));
        for (key, value) in extra.as_object().cloned().unwrap_or_default() {
            whole[key] = value;
        }
        body(common::model_server::Body::Json(whole))
    }
}

#[test]
fn openai_responses_calls_tools_in_parallel_and_replays_encrypted_reasoning() {
    let reasoning = json!({"type": "reasoning", "id": "rs_1", "summary": [{"type": "summary_text", "text": "Two tools."}], "encrypted_content": "gAAAAABencrypted=="});
    let calls = vec![
        reasoning.clone(),
        json!({"type": "function_call", "id": "fc_1", "call_id": "call_a", "name": "sha256", "arguments": "{\"text\":\"abc\"}", "status": "completed"}),
        json!({"type": "function_call", "id": "fc_2", "call_id": "call_b", "name": "calculate", "arguments": "{\"expression\":\"6*7\"}", "status": "completed"}),
    ];
    let answer = vec![
        json!({"type": "message", "id": "msg_1", "role": "assistant", "status": "completed", "content": [{"type": "output_text", "text": "The digest is ba78, and 42.", "annotations": []}]}),
    ];
    for stream in [false, true] {
        let server = ModelServer::start(vec![
            status(500, &[], json!({"error": {"message": "try again", "type": "server_error"}})),
            responses_reply(stream, "completed", calls.clone(), json!({})),
            responses_reply(stream, "completed", answer.clone(), json!({})),
        ]);
        let output = run_responses(&server, stream, "hash abc and compute 6*7");
        assert!(output.status.success(), "stream {stream}: {}", stderr(&output));
        assert!(stdout(&output).contains("The digest is ba78, and 42."), "{}", stdout(&output));
        assert!(stderr(&output).contains("retrying"), "the 500 was retried: {}", stderr(&output));
        let requests = server.requests();
        assert_eq!(requests.len(), 3);
        let first = &requests[1];
        assert_eq!(first.path, "/v1/responses");
        assert_eq!(first.header("authorization"), Some("Bearer test-key"));
        assert_eq!((first.body["store"].clone(), first.body["stream"].clone()), (json!(false), json!(stream)));
        assert_eq!(first.body["include"], json!(["reasoning.encrypted_content"]));
        let tool = first.body["tools"].as_array().unwrap().iter().find(|tool| tool["name"] == "sha256").unwrap();
        assert_eq!((tool["type"].clone(), tool["parameters"]["type"].clone()), (json!("function"), json!("object")));
        let input = requests[2].body["input"].as_array().unwrap().clone();
        assert_eq!(input[0], json!({"role": "user", "content": "hash abc and compute 6*7"}));
        assert_eq!(input[1], reasoning, "the encrypted reasoning goes back verbatim");
        assert_eq!(input[2]["type"], "function_call");
        assert_eq!((input[2]["call_id"].clone(), input[3]["call_id"].clone()), (json!("call_a"), json!("call_b")));
        let outputs: Vec<&Value> = input.iter().filter(|item| item["type"] == "function_call_output").collect();
        assert_eq!(outputs.len(), 2, "{input:?}");
        assert_eq!((outputs[0]["call_id"].clone(), outputs[0]["output"].clone()), (json!("call_a"), json!(ABC_SHA256)));
        let calc: Value = serde_json::from_str(outputs[1]["output"].as_str().unwrap()).unwrap();
        assert_eq!((outputs[1]["call_id"].clone(), calc["result"].clone()), (json!("call_b"), json!(42)));
        assert!(!stdout(&output).contains("Two tools."), "reasoning is not the answer");
    }
}

#[test]
fn openai_responses_incomplete_keeps_the_text_and_failed_says_why() {
    let partial = vec![
        json!({"type": "message", "id": "msg_1", "role": "assistant", "status": "incomplete", "content": [{"type": "output_text", "text": "The answer begins", "annotations": []}]}),
    ];
    for stream in [false, true] {
        let server = ModelServer::start(vec![responses_reply(
            stream,
            "incomplete",
            partial.clone(),
            json!({"incomplete_details": {"reason": "max_output_tokens"}}),
        )]);
        let output = run_responses(&server, stream, "go");
        assert_eq!(output.status.code(), Some(1), "stream {stream}: {}", stderr(&output));
        assert!(stdout(&output).contains("The answer begins"), "the partial text is kept: {}", stdout(&output));
        assert!(stderr(&output).contains("max_tokens"), "says to raise the token limit: {}", stderr(&output));

        let failed = json!({"error": {"code": "invalid_prompt", "message": "The prompt was flagged."}});
        let server = ModelServer::start(vec![responses_reply(stream, "failed", vec![], failed)]);
        let output = run_responses(&server, stream, "go");
        assert_eq!(output.status.code(), Some(1), "stream {stream}: {}", stderr(&output));
        let text = stderr(&output);
        assert!(text.contains("could not produce a response: invalid_prompt: The prompt was flagged."), "{text}");
        assert_eq!(server.requests().len(), 1, "a failed prompt is not retried");
    }
}

#[test]
fn reasoning_is_asked_for_in_each_protocols_words_seen_when_asked_and_counted() {
    let dir = tempfile::tempdir().unwrap();
    let events = dir.path().join("e.jsonl");
    // Chat Completions: an effort, reasoning content streamed, reasoning tokens reported.
    let script = ALL[1];
    let server = ModelServer::start(vec![{
        let mut reply = openai_stream(
            &[
                json!({"role": "assistant", "reasoning_content": "Weighing the options. "}),
                json!({"content": "Answer."}),
            ],
            "stop",
        );
        if let common::model_server::Body::Events(events) = &mut reply.body {
            let usage = json!({"id": "c", "choices": [], "usage": {"prompt_tokens": 9, "completion_tokens": 30,
                "completion_tokens_details": {"reasoning_tokens": 21}}});
            events.insert(events.len() - 1, (None, usage.to_string()));
        }
        reply
    }]);
    let args = ["run", "think", "--reasoning", "high", "--show-reasoning", "--events", events.to_str().unwrap()];
    let output = toolhost_in(dir.path(), script, &server, &bundled(), &args, None);
    assert!(output.status.success(), "{}", stderr(&output));
    assert_eq!(server.requests()[0].body["reasoning_effort"], "high");
    assert!(stderr(&output).contains("Weighing the options."), "shown when asked: {}", stderr(&output));
    assert!(!stdout(&output).contains("Weighing"), "never the answer: {}", stdout(&output));
    let read = read_events(&events);
    assert!(read.iter().any(|event| event["event"] == "reasoning_delta" && event["text"] == "Weighing the options. "));
    let response = read.iter().find(|event| event["event"] == "model_response").unwrap();
    assert_eq!(response["reasoning_tokens"], 21, "{response}");
    let finished = read.iter().find(|event| event["event"] == "run_finished").unwrap();
    assert_eq!(finished["reasoning_tokens"], 21, "{finished}");
    // Not shown unless asked for.
    let server = ModelServer::start(vec![openai_stream(
        &[json!({"reasoning_content": "Hidden thoughts."}), json!({"content": "Answer."})],
        "stop",
    )]);
    let output = toolhost_in(dir.path(), script, &server, &bundled(), &["run", "think"], None);
    assert!(output.status.success() && !stderr(&output).contains("Hidden thoughts."), "{}", stderr(&output));
    assert!(server.requests()[0].body.get("reasoning_effort").is_none(), "nothing asked for by default");

    // Anthropic: a budget from the config, max_tokens raised above it.
    std::fs::write(dir.path().join("toolhost.toml"), "[model]\nreasoning = 8000\n").unwrap();
    let script = ALL[3];
    let server = ModelServer::start(vec![script.text("Answer.")]);
    let output = toolhost_in(dir.path(), script, &server, &bundled(), &["run", "think"], None);
    assert!(output.status.success(), "{}", stderr(&output));
    let body = &server.requests()[0].body;
    assert_eq!(body["thinking"], json!({"type": "enabled", "budget_tokens": 8000}), "{body}");
    assert!(body["max_tokens"].as_u64().unwrap() > 8000, "{body}");
    std::fs::remove_file(dir.path().join("toolhost.toml")).unwrap();

    // A setting that is neither an effort nor a budget: one line with the forms.
    let output = toolhost_in(dir.path(), script, &server, &bundled(), &["run", "think", "--reasoning", "lots"], None);
    assert!(!output.status.success());
    let text = stderr(&output);
    assert!(text.contains("`lots` is not a reasoning setting") && text.contains("medium"), "{text}");
}

#[test]
fn openai_responses_asks_for_reasoning_and_counts_its_tokens() {
    let answer = vec![
        json!({"type": "message", "id": "msg_1", "role": "assistant", "status": "completed", "content": [{"type": "output_text", "text": "Done.", "annotations": []}]}),
    ];
    let server = ModelServer::start(vec![responses_reply(false, "completed", answer, json!({}))]);
    let dir = tempfile::tempdir().unwrap();
    std::fs::write(
        dir.path().join("toolhost.toml"),
        format!(
            "[providers.oai]\nprotocol = \"openai-responses\"\nbase_url = \"{}/v1\"\n[model]\nreasoning = 3000\n",
            server.url
        ),
    )
    .unwrap();
    let events = dir.path().join("e.jsonl");
    let output = Command::new(env!("CARGO_BIN_EXE_toolhost"))
        .current_dir(dir.path())
        .args([
            "--plugins",
            &bundled(),
            "run",
            "go",
            "--model",
            "oai/o4-mini",
            "--no-stream",
            "--events",
            events.to_str().unwrap(),
        ])
        .env("TOOLHOST_CACHE_DIR", common::shared_cache())
        .env_remove("TOOLHOST_MODEL")
        .env_remove("TOOLHOST_CONFIG")
        .stdin(Stdio::null())
        .output()
        .unwrap();
    assert!(output.status.success(), "{}", stderr(&output));
    assert_eq!(server.requests()[0].body["reasoning"], json!({"effort": "medium", "summary": "auto"}));
    let finished = read_events(&events).into_iter().find(|event| event["event"] == "run_finished").unwrap();
    assert_eq!(finished["reasoning_tokens"], 20, "{finished}");
}

/// Anthropic stream events for `blocks` (content blocks as a whole
/// response has them), each streamed as a real server does: text and
/// thinking in deltas (with the signature last), tool input as JSON deltas,
/// other blocks whole; then `stop_reason`.
fn anthropic_stream(blocks: &[Value], stop: &str) -> common::model_server::Response {
    let event = |data: Value| (Some(data["type"].as_str().unwrap().to_owned()), data.to_string());
    let mut events = vec![event(
        json!({"type": "message_start", "message": {"id": "msg_1", "type": "message", "role": "assistant", "content": [], "model": "test-model", "stop_reason": null, "usage": {"input_tokens": 10, "output_tokens": 1}}}),
    )];
    for (index, block) in blocks.iter().enumerate() {
        let delta = |delta: Value| event(json!({"type": "content_block_delta", "index": index, "delta": delta}));
        match block["type"].as_str().unwrap() {
            "text" => {
                events.push(event(json!({"type": "content_block_start", "index": index, "content_block": {"type": "text", "text": ""}})));
                let text = block["text"].as_str().unwrap();
                let (head, tail) = text.split_at(text.len() / 2);
                events.push(delta(json!({"type": "text_delta", "text": head})));
                events.push(delta(json!({"type": "text_delta", "text": tail})));
            }
            "thinking" => {
                events.push(event(json!({"type": "content_block_start", "index": index, "content_block": {"type": "thinking", "thinking": "", "signature": ""}})));
                events.push(delta(json!({"type": "thinking_delta", "thinking": block["thinking"]})));
                events.push(delta(json!({"type": "signature_delta", "signature": block["signature"]})));
            }
            kind @ ("tool_use" | "server_tool_use") => {
                events.push(event(json!({"type": "content_block_start", "index": index, "content_block": {"type": kind, "id": block["id"], "name": block["name"], "input": {}}})));
                let input = block["input"].to_string();
                let (head, tail) = input.split_at(input.len() / 2);
                events.push(delta(json!({"type": "input_json_delta", "partial_json": head})));
                events.push(delta(json!({"type": "input_json_delta", "partial_json": tail})));
            }
            _ => events.push(event(json!({"type": "content_block_start", "index": index, "content_block": block}))),
        }
        events.push(event(json!({"type": "content_block_stop", "index": index})));
    }
    events.push(event(json!({"type": "message_delta", "delta": {"stop_reason": stop, "stop_sequence": null}, "usage": {"output_tokens": 20}})));
    events.push(event(json!({"type": "message_stop"})));
    body(common::model_server::Body::Events(events))
}

/// A whole Anthropic response of `blocks`, stopped for `stop`.
fn anthropic_whole(blocks: &[Value], stop: &str) -> common::model_server::Response {
    body(common::model_server::Body::Json(json!({
        "id": "msg_1", "type": "message", "role": "assistant", "model": "test-model",
        "content": blocks, "stop_reason": stop, "stop_sequence": null,
        "usage": {"input_tokens": 10, "output_tokens": 20}
    })))
}

fn anthropic_reply(stream: bool, blocks: &[Value], stop: &str) -> common::model_server::Response {
    if stream { anthropic_stream(blocks, stop) } else { anthropic_whole(blocks, stop) }
}

#[test]
fn a_paused_turn_is_sent_back_as_it_came_and_continued() {
    let dir = tempfile::tempdir().unwrap();
    // A server tool (web search) ran out of iterations: Anthropic pauses the
    // turn, and the reply, sent back as it is, lets the model go on.
    let paused = [
        json!({"type": "text", "text": "Searching the web."}),
        json!({"type": "server_tool_use", "id": "srvtoolu_1", "name": "web_search", "input": {"query": "toolhost"}}),
        json!({"type": "web_search_tool_result", "tool_use_id": "srvtoolu_1", "content": [{"type": "web_search_result", "url": "https://example.com", "title": "Example", "encrypted_content": "Eu8BCioI", "page_age": null}]}),
    ];
    let done = [json!({"type": "text", "text": " Found it."})];
    for script in [ALL[2], ALL[3]] {
        let events = dir.path().join("e.jsonl");
        let server = ModelServer::start(vec![
            anthropic_reply(script.stream, &paused, "pause_turn"),
            anthropic_reply(script.stream, &done, "end_turn"),
        ]);
        let output = toolhost(script, &server, &bundled(), &["run", "search", "--events", events.to_str().unwrap()]);
        assert!(output.status.success(), "{script:?}: {}", stderr(&output));
        assert_eq!(stdout(&output).trim(), "Searching the web. Found it.", "{script:?}");
        let requests = server.requests();
        assert_eq!(requests.len(), 2, "{script:?}");
        // The continuation: the same messages, the paused reply last, exactly as it came.
        assert_eq!(
            requests[1].body["messages"],
            json!([
                {"role": "user", "content": [{"type": "text", "text": "search"}]},
                {"role": "assistant", "content": paused},
            ]),
            "{script:?}"
        );
        let events = read_events(&events);
        let responses: Vec<(Value, Value)> = events
            .iter()
            .filter(|event| event["event"] == "model_response")
            .map(|event| (event["stop_reason"].clone(), event["provider_stop_reason"].clone()))
            .collect();
        assert_eq!(
            responses,
            [(json!("paused"), json!("pause_turn")), (json!("done"), json!("end_turn"))],
            "{script:?}"
        );
        let finished = events.last().unwrap();
        assert_eq!((finished["status"].clone(), finished["turns"].clone()), (json!("answered"), json!(2)));
    }
}

#[test]
fn a_reply_that_is_not_finished_is_not_an_answer_and_says_why_with_the_right_advice() {
    let dir = tempfile::tempdir().unwrap();
    // (script, provider's reason, status, what stderr says, what it must not say)
    let cases = [
        (ALL[0], "insufficient_system_resource", "unknown_stop", "reason toolhost does not know", "max_tokens"),
        (ALL[1], "insufficient_system_resource", "unknown_stop", "reason toolhost does not know", "max_tokens"),
        (ALL[1], "model_length", "context_window", "context window", "max_tokens"),
        (ALL[2], "model_context_window_exceeded", "context_window", "context window", "max_tokens"),
        (ALL[3], "model_context_window_exceeded", "context_window", "context window", "max_tokens"),
        (ALL[3], "refusal", "content_filter", "refused", "max_tokens"),
        (ALL[2], "compaction", "unknown_stop", "reason toolhost does not know", "max_tokens"),
        (ALL[3], "max_tokens", "length", "raise `max_tokens` in [model]", "context window"),
    ];
    for (script, reason, status, says, never) in cases {
        let events = dir.path().join("e.jsonl");
        let server = ModelServer::start(vec![script.stopped("The answer is", reason)]);
        let output = toolhost(script, &server, &bundled(), &["run", "hi", "--events", events.to_str().unwrap()]);
        assert_eq!(output.status.code(), Some(1), "{script:?} {reason}: {}", stderr(&output));
        assert!(stdout(&output).contains("The answer is"), "the text shown is kept: {}", stdout(&output));
        let text = stderr(&output);
        let errors: Vec<&str> = text.lines().filter(|line| line.starts_with("error:")).collect();
        assert_eq!(errors.len(), 1, "{script:?} {reason}: one line: {text}");
        let line = errors[0];
        assert!(line.contains(&format!("the provider said `{reason}`")) && line.contains(says), "{reason}: {line}");
        assert!(!line.contains(never), "{reason}: the wrong advice: {line}");
        let events = read_events(&events);
        let response = events.iter().find(|event| event["event"] == "model_response").unwrap();
        assert_eq!(response["provider_stop_reason"], json!(reason), "a plain string: {response}");
        let finished = events.last().unwrap();
        assert_eq!(
            (finished["status"].clone(), finished["provider_stop_reason"].clone()),
            (json!(status), json!(reason)),
            "{script:?}"
        );
    }
}

#[test]
fn tool_calls_of_a_reply_that_stopped_for_an_unknown_reason_are_not_run() {
    let script = ALL[1];
    let response = script.calls(&[("c1", "sha256", r#"{"text":"abc"}"#)]);
    // The same calls, but the server ran out of resources while writing them.
    let response = match response.body {
        common::model_server::Body::Events(mut events) => {
            for (_, data) in &mut events {
                *data = data
                    .replace("\"finish_reason\":\"tool_calls\"", "\"finish_reason\":\"insufficient_system_resource\"");
            }
            body(common::model_server::Body::Events(events))
        }
        other => body(other),
    };
    let server = ModelServer::start(vec![response, script.text("never asked for")]);
    let output = toolhost(script, &server, &bundled(), &["run", "go", "--yes"]);
    assert_eq!(output.status.code(), Some(1), "{}", stderr(&output));
    let text = stderr(&output);
    assert!(!text.contains("✓"), "nothing ran: {text}");
    assert!(text.contains("`insufficient_system_resource`") && text.contains("none of its 1 calls was run"), "{text}");
    assert_eq!(server.requests().len(), 1);
}

/// A folder with a toolhost.toml of `text`.
fn configured(text: &str) -> tempfile::TempDir {
    let dir = tempfile::tempdir().unwrap();
    std::fs::write(dir.path().join("toolhost.toml"), text).unwrap();
    dir
}

const NGINX_502: &str = "<html>\r\n<head><title>502 Bad Gateway</title></head>\r\n<body>\r\n<center><h1>502 Bad Gateway</h1></center>\r\n<hr><center>nginx</center>\r\n</body>\r\n</html>\r\n";

#[test]
fn an_html_error_page_is_one_line_in_the_retry_notice_and_the_error() {
    let dir = configured("[model]\nmax_retries = 1\n");
    for script in [ALL[0], ALL[3]] {
        let page = || common::model_server::Response {
            status: 502,
            headers: vec![],
            body: common::model_server::Body::Raw(NGINX_502.into()),
        };
        let server = ModelServer::start(vec![page(), page()]);
        let output = toolhost_in(dir.path(), script, &server, &bundled(), &["run", "hi"], None);
        assert_eq!(output.status.code(), Some(1), "{script:?}");
        let text = stderr(&output);
        assert!(!text.contains('<') && !text.contains("nginx"), "no markup: {text}");
        let lines: Vec<&str> = text.lines().filter(|line| !line.trim().is_empty()).collect();
        assert_eq!(lines.len(), 2, "{script:?}: a retry line and an error line: {text}");
        assert!(lines[0].contains("(HTTP 502: 502 Bad Gateway); retrying in"), "{text}");
        assert_eq!(
            lines[1], "error: the model provider is unavailable (HTTP 502) after 2 attempts: 502 Bad Gateway",
            "{script:?}"
        );
    }
}

#[test]
fn a_whole_response_that_breaks_off_is_not_called_a_connection_failure() {
    let truncated = || {
        body(common::model_server::Body::Truncated {
            text: r#"{"id":"chatcmpl-1","object":"chat.completion","choices":[{"index":0,"mess"#.into(),
            length: 400,
        })
    };
    let script = ALL[0];
    // Retried like a stream that broke off before any text.
    let server = ModelServer::start(vec![truncated(), script.text("whole")]);
    let output = toolhost(script, &server, &bundled(), &["run", "hi"]);
    assert!(output.status.success(), "{}", stderr(&output));
    assert_eq!(stdout(&output).trim(), "whole");
    let text = stderr(&output);
    assert!(text.contains("(the response broke off: "), "{text}");
    assert!(!text.contains("could not connect") && !text.contains("could not reach"), "{text}");
    // A connection closed before any answer came is not one that failed either.
    let closed = || body(common::model_server::Body::Close);
    let server = ModelServer::start(vec![closed(), script.text("whole")]);
    let output = toolhost(script, &server, &bundled(), &["run", "hi"]);
    assert!(output.status.success(), "{}", stderr(&output));
    let text = stderr(&output);
    assert!(text.contains("(the response broke off: the connection closed before the answer came"), "{text}");
    assert!(!text.contains("could not connect") && !text.contains("could not reach"), "{text}");
    // And when it keeps breaking off, the error says so.
    let dir = configured("[model]\nmax_retries = 1\n");
    let server = ModelServer::start(vec![truncated(), truncated()]);
    let output = toolhost_in(dir.path(), script, &server, &bundled(), &["run", "hi"], None);
    assert_eq!(output.status.code(), Some(1));
    let text = stderr(&output);
    let error = text.lines().find(|line| line.starts_with("error:")).unwrap_or_default();
    assert!(error.contains("broke off before it was complete") && error.contains("gave up after 2 attempts"), "{text}");
    assert!(!text.contains("could not reach"), "{text}");
    // A server that is not there is still one that could not be reached.
    let dir = configured("[model]\nmax_retries = 0\n");
    let dead = ModelServer::start(vec![]).url.clone();
    let mut gone = ModelServer::start(vec![]);
    gone.url = dead;
    let output = toolhost_in(dir.path(), script, &gone, &bundled(), &["run", "hi"], None);
    assert_eq!(output.status.code(), Some(1));
    assert!(stderr(&output).contains("error: could not reach the model at "), "{}", stderr(&output));
}

#[test]
fn a_streamed_responses_refusal_is_printed_like_a_whole_one() {
    let refusal = json!({"type": "message", "id": "msg_1", "role": "assistant", "status": "completed",
        "content": [{"type": "refusal", "refusal": "I can't help with that."}]});
    // Streamed with its refusal deltas, and with the refusal only in the finished item.
    let event = |data: Value| (Some(data["type"].as_str().unwrap().to_owned()), data.to_string());
    let with_deltas = body(common::model_server::Body::Events(vec![
        event(json!({"type": "response.created", "response": response_object("in_progress", json!([]))})),
        event(
            json!({"type": "response.output_item.added", "output_index": 0, "item": {"type": "message", "id": "msg_1", "role": "assistant", "status": "in_progress", "content": []}}),
        ),
        event(
            json!({"type": "response.content_part.added", "output_index": 0, "content_index": 0, "part": {"type": "refusal", "refusal": ""}}),
        ),
        event(json!({"type": "response.refusal.delta", "output_index": 0, "content_index": 0, "delta": "I can't "})),
        event(
            json!({"type": "response.refusal.delta", "output_index": 0, "content_index": 0, "delta": "help with that."}),
        ),
        event(
            json!({"type": "response.refusal.done", "output_index": 0, "content_index": 0, "refusal": "I can't help with that."}),
        ),
        event(json!({"type": "response.output_item.done", "output_index": 0, "item": refusal})),
        event(json!({"type": "response.completed", "response": response_object("completed", json!([refusal]))})),
    ]));
    let only_done = responses_reply(true, "completed", vec![refusal.clone()], json!({}));
    let whole = responses_reply(false, "completed", vec![refusal.clone()], json!({}));
    for (stream, response) in [(false, whole), (true, with_deltas), (true, only_done)] {
        let server = ModelServer::start(vec![response]);
        let output = run_responses(&server, stream, "go");
        assert_eq!(output.status.code(), Some(1), "stream {stream}: {}", stderr(&output));
        assert_eq!(stdout(&output).trim(), "I can't help with that.", "stream {stream}: {}", stderr(&output));
        let text = stderr(&output);
        assert!(text.contains("refused") && text.contains("the provider said `refusal`"), "{text}");
    }
}

const PNG_BASE64: &str =
    "iVBORw0KGgoAAAANSUhEUgAAAAEAAAABCAYAAAAfFcSJAAAADUlEQVR42mNkYPhfDwAChwGA60e6kgAAAABJRU5ErkJggg==";

#[test]
fn tool_images_reach_the_providers_that_take_them_as_images() {
    let plugins = common::plugin_dir(&["content_kinds"]);
    let plugins = plugins.path().display().to_string();
    let calls = [("c1", "test_image_content", "{}"), ("c2", "test_audio_content", "{}")];
    let image_line = "[image: image/png, 70 bytes]";
    let audio_line = "[audio: audio/wav, 48 bytes]";
    for script in ALL {
        let server = ModelServer::start(vec![script.calls(&calls), script.text("A pixel and a click.")]);
        let output = toolhost(script, &server, &plugins, &["run", "show me", "--yes"]);
        assert!(output.status.success(), "{script:?}: {}", stderr(&output));
        let sent = &server.requests()[1].body["messages"];
        let sent = sent.as_array().unwrap();
        if script.anthropic {
            // The image as an image block after the text; audio, which
            // Anthropic does not take there, as its line.
            assert_eq!(
                sent.last().unwrap()["content"],
                json!([
                    {"type": "tool_result", "tool_use_id": "c1", "is_error": false, "content": [
                        {"type": "text", "text": image_line},
                        {"type": "image", "source": {"type": "base64", "media_type": "image/png", "data": PNG_BASE64}}
                    ]},
                    {"type": "tool_result", "tool_use_id": "c2", "is_error": false, "content": audio_line}
                ]),
                "{script:?}"
            );
        } else {
            // Chat Completions takes only text in a tool message: the lines.
            let tools: Vec<&Value> = sent.iter().filter(|message| message["role"] == "tool").collect();
            assert_eq!(
                tools,
                [
                    &json!({"role": "tool", "tool_call_id": "c1", "content": image_line}),
                    &json!({"role": "tool", "tool_call_id": "c2", "content": audio_line})
                ],
                "{script:?}"
            );
        }
    }
    // The Responses API: the image as an input_image part of the output.
    for stream in [false, true] {
        let call = |id: &str, name: &str| json!({"type": "function_call", "id": format!("fc_{id}"), "call_id": id, "name": name, "arguments": "{}", "status": "completed"});
        let answer = json!({"type": "message", "id": "msg_1", "role": "assistant", "status": "completed", "content": [{"type": "output_text", "text": "Seen.", "annotations": []}]});
        let server = ModelServer::start(vec![
            responses_reply(
                stream,
                "completed",
                vec![call("c1", "test_image_content"), call("c2", "test_audio_content")],
                json!({}),
            ),
            responses_reply(stream, "completed", vec![answer], json!({})),
        ]);
        let dir = tempfile::tempdir().unwrap();
        let output = run_responses_with(dir.path(), &server, stream, "show me", &plugins, "");
        assert!(output.status.success(), "stream {stream}: {}", stderr(&output));
        let input = server.requests()[1].body["input"].as_array().unwrap().clone();
        let outputs: Vec<&Value> = input.iter().filter(|item| item["type"] == "function_call_output").collect();
        assert_eq!(
            outputs,
            [
                &json!({"type": "function_call_output", "call_id": "c1", "output": [
                    {"type": "input_text", "text": image_line},
                    {"type": "input_image", "image_url": format!("data:image/png;base64,{PNG_BASE64}"), "detail": "auto"}
                ]}),
                &json!({"type": "function_call_output", "call_id": "c2", "output": audio_line})
            ],
            "stream {stream}"
        );
    }
}

#[test]
fn interleaved_thinking_goes_back_in_exactly_its_order() {
    let thinking =
        |n: u32| json!({"type": "thinking", "thinking": format!("Step {n}."), "signature": format!("{SIGNED}{n}")});
    let blocks = [
        thinking(1),
        json!({"type": "tool_use", "id": "toolu_1", "name": "sha256", "input": {"text": "abc"}}),
        thinking(2),
        json!({"type": "text", "text": "And the other."}),
        json!({"type": "tool_use", "id": "toolu_2", "name": "calculate", "input": {"expression": "6*7"}}),
    ];
    for script in [ALL[2], ALL[3]] {
        let server =
            ModelServer::start(vec![anthropic_reply(script.stream, &blocks, "tool_use"), script.text("ba78 and 42.")]);
        let output = toolhost(script, &server, &bundled(), &["run", "two things", "--yes"]);
        assert!(output.status.success(), "{script:?}: {}", stderr(&output));
        let sent = sent_assistant(&server.requests()[1]);
        assert_eq!(sent, json!({"role": "assistant", "content": blocks}), "{script:?}: byte for byte, in order");
    }
}

#[test]
fn a_reasoning_model_runs_tools_and_sampling_with_the_readmes_settings() {
    // The README's `[model]` (reasoning on, a token limit) and a plugin
    // granted 300 tokens of sampling, asking for 100.
    let config = "[model]\nreasoning = \"medium\"\nmax_tokens = 4096\n[plugins.content_kinds]\nsampling = { max_tokens = 300 }\n";
    let plugins = common::plugin_dir(&["content_kinds"]);
    let plugins = plugins.path().display().to_string();
    let keys = |body: &Value, names: &[&str]| -> Vec<(String, Value)> {
        names.iter().filter_map(|name| body.get(*name).map(|value| ((*name).to_owned(), value.clone()))).collect()
    };
    let limits =
        ["max_tokens", "max_completion_tokens", "max_output_tokens", "reasoning_effort", "thinking", "reasoning"];
    for script in [ALL[1], ALL[3]] {
        let dir = configured(config);
        let server = ModelServer::start(vec![
            script.calls(&[("call_1", "test_sampling", r#"{"prompt":"What is 2+2?"}"#)]),
            Script { stream: false, ..script }.text("four"),
            script.text("It says four."),
        ]);
        let output = toolhost_in(dir.path(), script, &server, &plugins, &["run", "ask it", "--yes"], None);
        assert!(output.status.success(), "{script:?}: {}", stderr(&output));
        let requests = server.requests();
        assert_eq!(requests.len(), 3, "{script:?}");
        assert_eq!(script.results(&requests[2])[0].1, "LLM response: four", "{script:?}");
        let (turn, sampling) = (keys(&requests[0].body, &limits), keys(&requests[1].body, &limits));
        let pair = |name: &str, value: Value| (name.to_owned(), value);
        if script.anthropic {
            // The loop's turns make room for thinking above max_tokens; the
            // sampling request allows the 100 tokens asked for, all told:
            // no room for the 1,024-token minimum of thinking, so none.
            assert_eq!(
                turn,
                [
                    pair("max_tokens", json!(12_288)),
                    pair("thinking", json!({"type": "enabled", "budget_tokens": 8_192}))
                ]
            );
            assert_eq!(sampling, [pair("max_tokens", json!(100))]);
        } else {
            // OpenAI's reasoning models refuse `max_tokens`; the limit covers
            // the reasoning, so the sampling request is bounded by it.
            assert_eq!(turn, [pair("max_completion_tokens", json!(4096)), pair("reasoning_effort", json!("medium"))]);
            assert_eq!(
                sampling,
                [pair("max_completion_tokens", json!(100)), pair("reasoning_effort", json!("medium"))]
            );
        }
    }
    for stream in [false, true] {
        let call = json!({"type": "function_call", "id": "fc_1", "call_id": "call_1", "name": "test_sampling", "arguments": "{\"prompt\":\"What is 2+2?\"}", "status": "completed"});
        let said = |text: &str| json!({"type": "message", "id": "msg_1", "role": "assistant", "status": "completed", "content": [{"type": "output_text", "text": text, "annotations": []}]});
        let server = ModelServer::start(vec![
            responses_reply(stream, "completed", vec![call], json!({})),
            responses_reply(false, "completed", vec![said("four")], json!({})),
            responses_reply(stream, "completed", vec![said("It says four.")], json!({})),
        ]);
        let dir = tempfile::tempdir().unwrap();
        let output = run_responses_with(dir.path(), &server, stream, "ask it", &plugins, config);
        assert!(output.status.success(), "stream {stream}: {}", stderr(&output));
        let requests = server.requests();
        let reasoning = ("reasoning".to_owned(), json!({"effort": "medium", "summary": "auto"}));
        assert_eq!(
            keys(&requests[0].body, &limits),
            [("max_output_tokens".to_owned(), json!(4096)), reasoning.clone()]
        );
        assert_eq!(keys(&requests[1].body, &limits), [("max_output_tokens".to_owned(), json!(100)), reasoning]);
    }
}

/// `response`, after the model thought for `ms` milliseconds.
fn slow(response: common::model_server::Response, ms: u64) -> common::model_server::Response {
    let wait = std::time::Duration::from_millis(ms);
    common::model_server::Response { body: common::model_server::Body::Slow(wait, Box::new(response.body)), ..response }
}

#[test]
fn an_approval_takes_only_keys_pressed_after_its_question() {
    let script = ALL[1];
    let dir = asking_config();
    let events = dir.path().join("e.jsonl");
    let server = ModelServer::start(vec![
        slow(script.calls(&[("one", "sha256", r#"{"text":"abc"}"#)]), 1_500),
        slow(script.calls(&[("two", "sha256", r#"{"text":"xyz"}"#)]), 1_500),
        script.text("Neither was allowed."),
    ]);
    let mut terminal = on_terminal(dir.path(), script, &server, &["run", "go", "--events", events.to_str().unwrap()]);
    // A whole line typed while the model thinks is not the answer…
    terminal.expect("waiting for the model");
    terminal.send("y\r");
    terminal.expect("allow it?");
    terminal.send("n\r");
    terminal.expect("⊘ sha256");
    // …and neither is a key typed before the question and Enter after it.
    terminal.expect("waiting for the model");
    terminal.send("y");
    terminal.expect("allow it?");
    terminal.send("\r");
    terminal.expect("Neither was allowed.");
    assert_eq!(terminal.exit_code(std::time::Duration::from_secs(10)), 0, "{}", terminal.output());
    let events = read_events(&events);
    check_call_events(&events);
    assert_eq!(kinds_of_call(&events, "one"), ["tool_call_requested", "tool_call_denied"]);
    assert_eq!(kinds_of_call(&events, "two"), ["tool_call_requested", "tool_call_denied"]);
}

#[test]
fn a_chat_message_typed_ahead_of_an_approval_is_the_next_prompt() {
    let script = ALL[1];
    let dir = asking_config();
    let events = dir.path().join("e.jsonl");
    let server = ModelServer::start(vec![
        slow(script.calls(&[("one", "sha256", r#"{"text":"abc"}"#)]), 1_500),
        script.text("Not hashed, then."),
        script.text("You said y."),
    ]);
    let mut terminal = on_terminal(dir.path(), script, &server, &["chat", "--events", events.to_str().unwrap()]);
    terminal.expect("> ");
    terminal.send("hash abc\r");
    terminal.expect("waiting for the model");
    // Typed while the model thinks: a message for later, not an answer.
    terminal.send("y\r");
    terminal.expect("allow it?");
    terminal.send("n\r");
    terminal.expect("Not hashed, then.");
    terminal.expect("You said y.");
    terminal.expect("> ");
    terminal.send("/exit\r");
    assert_eq!(terminal.exit_code(std::time::Duration::from_secs(10)), 0, "{}", terminal.output());
    let requests = server.requests();
    assert_eq!(requests.len(), 3, "{}", terminal.output());
    let last = requests[2].body["messages"].as_array().unwrap().last().cloned().unwrap();
    assert_eq!(last, json!({"role": "user", "content": "y"}));
    let events = read_events(&events);
    assert_eq!(kinds_of_call(&events, "one"), ["tool_call_requested", "tool_call_denied"]);
}

#[test]
fn a_chat_completions_refusal_is_printed_streamed_or_not_and_is_not_an_answer() {
    let whole = body(common::model_server::Body::Json(json!({
        "id": "chatcmpl-1", "object": "chat.completion", "model": "test-model",
        "choices": [{"index": 0, "finish_reason": "stop", "message": {"role": "assistant", "content": null, "refusal": "I can't help with that."}}],
        "usage": {"prompt_tokens": 5, "completion_tokens": 5}
    })));
    let streamed = openai_stream(
        &[json!({"role": "assistant", "content": null, "refusal": "I can't "}), json!({"refusal": "help with that."})],
        "stop",
    );
    for (script, response) in [(ALL[0], whole), (ALL[1], streamed)] {
        let server = ModelServer::start(vec![response]);
        let output = toolhost(script, &server, &bundled(), &["run", "go"]);
        assert_eq!(output.status.code(), Some(1), "{script:?}: {}", stderr(&output));
        assert_eq!(stdout(&output).trim(), "I can't help with that.", "{script:?}");
        assert!(stderr(&output).contains("refused"), "{}", stderr(&output));
    }
}

/// A folder of `count` tools: copies of `echo`, each renamed and described
/// by its manifest (`tool_007`: "Looks up the … of a …"), and `tool_417`
/// the one about weather forecasts.
fn many_tools(count: usize) -> tempfile::TempDir {
    let dir = tempfile::tempdir().unwrap();
    let echo = std::fs::read(common::plugins_src().join("dist/echo.wasm")).unwrap();
    let things = ["invoice", "parcel", "flight", "recipe", "contract", "sensor", "ticket", "song", "patient", "lease"];
    let facts = ["status", "owner", "price", "history", "location", "size", "author", "rating", "deadline", "colour"];
    let verbs = ["Looks up", "Updates", "Lists", "Checks", "Archives"];
    for i in 0..count {
        let plugin = format!("t{i:03}");
        std::fs::write(dir.path().join(format!("{plugin}.wasm")), &echo).unwrap();
        let description = if i == 417 {
            "The weather forecast for a city, day by day.".to_owned()
        } else {
            format!(
                "{} the {} of a {} (record {i}).",
                verbs[i % verbs.len()],
                facts[(i / verbs.len()) % facts.len()],
                things[(i / 50) % things.len()]
            )
        };
        let manifest = format!("[tools.echo]\nname = \"tool_{i:03}\"\ndescription = \"{description}\"\n");
        std::fs::write(dir.path().join(format!("{plugin}.toml")), manifest).unwrap();
    }
    dir
}

#[test]
fn with_hundreds_of_tools_the_model_searches_for_them_instead_of_getting_all() {
    let folder = many_tools(500);
    let plugins = folder.path().display().to_string();
    let work = tempfile::tempdir().unwrap();
    let config = work.path().join("toolhost.toml");
    // (Anthropic's own tool search switched off: the loop's is tested here
    // on both protocols; the native one in the next test.)
    std::fs::write(&config, "[model]\nalways_tools = [\"tool_001\"]\ntool_search_native = false\n").unwrap();
    let config = config.display().to_string();
    for script in [Script { anthropic: false, stream: false }, Script { anthropic: true, stream: true }] {
        let server = ModelServer::start(vec![
            script.calls(&[("s1", "search_tools", r#"{"query":"weather forecast for Paris"}"#)]),
            script.calls(&[("c1", "tool_417", r#"{"text":"sunny"}"#)]),
            script.text("Sunny in Paris."),
        ]);
        let events = work.path().join("events.jsonl");
        let args = ["run", "weather in Paris?", "--yes", "--events", &events.display().to_string()];
        let output =
            toolhost_env(Path::new("."), script, &server, &plugins, &args, None, &[("TOOLHOST_CONFIG", &config)]);
        assert!(output.status.success(), "{script:?}: {}", stderr(&output));
        assert!(stdout(&output).contains("Sunny in Paris."), "{script:?}");
        assert!(
            stderr(&output).contains("searched the tools for \"weather forecast for Paris\": tool_417"),
            "{}",
            stderr(&output)
        );

        let requests = server.requests();
        let names = |request: &common::model_server::Request| -> Vec<String> {
            request.body["tools"]
                .as_array()
                .unwrap()
                .iter()
                .map(|tool| tool["name"].as_str().or(tool["function"]["name"].as_str()).unwrap().to_owned())
                .collect()
        };
        // A small list: the search tool and the one configured to be always there.
        assert_eq!(names(&requests[0]), ["search_tools", "tool_001"], "{script:?}");
        // What the search found is offered from the next request on, first the best.
        let results = script.results(&requests[1]);
        assert_eq!(results[0].0, "s1");
        assert!(!results[0].2, "{results:?}");
        let found: Value = serde_json::from_str(results[0].1.split_once('\n').unwrap().1).unwrap();
        assert_eq!(found[0]["name"], "tool_417", "{found}");
        assert_eq!(found[0]["arguments"], json!(["text"]));
        assert!(names(&requests[1]).contains(&"tool_417".to_owned()), "{script:?}");
        assert!(names(&requests[1]).len() <= 7, "bounded: {:?}", names(&requests[1]));
        // And the found tool runs like any other.
        assert_eq!(script.results(&requests[2]), [("c1".to_owned(), "sunny".to_owned(), false)]);

        let events: Vec<Value> =
            std::fs::read_to_string(&events).unwrap().lines().map(|line| serde_json::from_str(line).unwrap()).collect();
        let started = events.iter().find(|event| event["event"] == "run_started").unwrap();
        assert_eq!((started["tools"].clone(), started["deferred"].clone()), (json!(2), json!(499)), "{started}");
        assert_eq!(started["search"], "builtin", "{started}");
        let search = events.iter().find(|event| event["event"] == "tool_search").unwrap();
        assert_eq!(search["found"][0], "tool_417", "{search}");
        assert!(search.get("native").is_none(), "{search}");
        assert!(requests[0].header("anthropic-beta").is_none(), "{script:?}");
    }

    // Switched off, every tool is sent.
    std::fs::write(work.path().join("off.toml"), "[model]\ntool_search = \"off\"\n").unwrap();
    let off = work.path().join("off.toml").display().to_string();
    let script = Script { anthropic: false, stream: false };
    let server = ModelServer::start(vec![script.text("ok")]);
    let output = toolhost_env(
        Path::new("."),
        script,
        &server,
        &plugins,
        &["run", "hi", "--yes"],
        None,
        &[("TOOLHOST_CONFIG", &off)],
    );
    assert!(output.status.success(), "{}", stderr(&output));
    assert_eq!(server.requests()[0].body["tools"].as_array().unwrap().len(), 500);
}

#[test]
fn with_hundreds_of_tools_anthropic_searches_them_itself_with_deferred_loading() {
    let folder = many_tools(500);
    let plugins = folder.path().display().to_string();
    let work = tempfile::tempdir().unwrap();
    let config = work.path().join("toolhost.toml");
    // Policy of the found tool: asked, and the answer is no, exactly as for a listed one.
    std::fs::write(&config, "[model]\nalways_tools = [\"tool_001\"]\n\n[approvals]\ntools = { tool_333 = \"deny\" }\n")
        .unwrap();
    let config = config.display().to_string();
    for stream in [false, true] {
        let script = Script { anthropic: true, stream };
        // The model searches with Anthropic's tool search (run by the
        // provider), which references tool_417, then calls it; later it calls
        // a found tool the operator's policy denies.
        let searched = [
            json!({"type": "text", "text": "Let me look for a weather tool."}),
            json!({"type": "server_tool_use", "id": "srvtoolu_1", "name": "tool_search_tool_bm25", "input": {"query": "weather forecast"}}),
            json!({"type": "tool_search_tool_result", "tool_use_id": "srvtoolu_1", "content": {"type": "tool_search_tool_search_result", "tool_references": [{"type": "tool_reference", "tool_name": "tool_417"}, {"type": "tool_reference", "tool_name": "tool_333"}]}}),
            json!({"type": "tool_use", "id": "c1", "name": "tool_417", "input": {"text": "sunny"}}),
        ];
        let server = ModelServer::start(vec![
            anthropic_reply(stream, &searched, "tool_use"),
            script.calls(&[("c2", "tool_333", r#"{"text":"x"}"#)]),
            script.text("Sunny in Paris."),
        ]);
        let events = work.path().join("events.jsonl");
        let args = ["run", "weather in Paris?", "--events", &events.display().to_string()];
        let output =
            toolhost_env(Path::new("."), script, &server, &plugins, &args, None, &[("TOOLHOST_CONFIG", &config)]);
        assert!(output.status.success(), "{stream}: {}", stderr(&output));
        assert!(stdout(&output).contains("Sunny in Paris."));
        assert!(
            stderr(&output).contains(
                "searched the tools (the provider's tool search) for \"weather forecast\": tool_417, tool_333"
            ),
            "{}",
            stderr(&output)
        );

        let requests = server.requests();
        // Every request: Anthropic's search tool first, never deferred; the
        // always-on tool listed; every other tool deferred; the beta asked for.
        for request in &requests {
            let tools = request.body["tools"].as_array().unwrap();
            assert_eq!(tools.len(), 501);
            assert_eq!(tools[0], json!({"type": "tool_search_tool_bm25_20251119", "name": "tool_search_tool_bm25"}));
            let deferred: Vec<&str> = tools[1..]
                .iter()
                .filter(|tool| tool["defer_loading"] == true)
                .map(|tool| tool["name"].as_str().unwrap())
                .collect();
            assert_eq!(deferred.len(), 499);
            assert!(!deferred.contains(&"tool_001"));
            assert!(tools.iter().all(|tool| tool["name"] != "search_tools"), "the loop's own search is not offered");
            assert_eq!(request.header("anthropic-beta"), Some("advanced-tool-use-2025-11-20"));
        }
        // The search's blocks go back as they came, before the call.
        let replayed = requests[1].body["messages"][1]["content"].as_array().unwrap().clone();
        let kinds: Vec<&str> = replayed.iter().map(|block| block["type"].as_str().unwrap()).collect();
        assert_eq!(kinds, ["text", "server_tool_use", "tool_search_tool_result", "tool_use"], "{replayed:?}");
        assert_eq!(replayed[1], searched[1]);
        assert_eq!(replayed[2], searched[2]);
        // The found tool ran like a listed one; the denied one did not run.
        assert_eq!(script.results(&requests[1]), [("c1".to_owned(), "sunny".to_owned(), false)]);
        let denied = script.results(&requests[2]);
        assert!(denied[0].2 && denied[0].1.contains("denied"), "{denied:?}");

        let events: Vec<Value> =
            std::fs::read_to_string(&events).unwrap().lines().map(|line| serde_json::from_str(line).unwrap()).collect();
        let started = events.iter().find(|event| event["event"] == "run_started").unwrap();
        assert_eq!(started["search"], "native", "{started}");
        assert_eq!((started["tools"].clone(), started["deferred"].clone()), (json!(2), json!(499)), "{started}");
        let search = events.iter().find(|event| event["event"] == "tool_search").unwrap();
        assert_eq!(search["native"], true, "{search}");
        assert_eq!(search["call_id"], "srvtoolu_1");
        assert_eq!(search["found"], json!(["tool_417", "tool_333"]), "{search}");
        assert!(events.iter().any(|event| event["event"] == "tool_call_denied" && event["tool"] == "tool_333"));
    }

    // Below the threshold nothing is deferred and no beta is asked for.
    let script = Script { anthropic: true, stream: false };
    let server = ModelServer::start(vec![script.text("ok")]);
    let output = toolhost_env(Path::new("."), script, &server, &bundled(), &["run", "hi", "--yes"], None, &[]);
    assert!(output.status.success(), "{}", stderr(&output));
    let request = &server.requests()[0];
    assert!(request.body["tools"].as_array().unwrap().iter().all(|tool| tool.get("defer_loading").is_none()));
    assert!(request.header("anthropic-beta").is_none());
}

#[test]
fn a_cut_result_can_be_read_on_with_read_output() {
    let work = tempfile::tempdir().unwrap();
    let config = work.path().join("toolhost.toml");
    std::fs::write(&config, "[model]\noutput_budget = \"1KiB\"\n").unwrap();
    let config = config.display().to_string();
    // 5,000 characters, each position readable: "0000 0001 0002 …".
    let text: String = (0..1000).map(|i| format!("{i:04} ")).collect();
    let script = Script { anthropic: true, stream: false };
    let arguments = json!({ "text": text }).to_string();
    // Where the first result's cut begins, as its marker says: the budget
    // less the room of the widest marker (numbers up to the output's length)
    // and its two line breaks, halved.
    let widest = r#"[… 5000 bytes cut: read_output with {"call_id": "c1", "offset": 5000} reads them …]"#.len() + 2;
    let from = (1024 - widest) / 2;
    let server = ModelServer::start(vec![
        script.calls(&[("c1", "echo", &arguments)]),
        script.calls(&[("r1", "read_output", &format!(r#"{{"call_id":"c1","offset":{from}}}"#))]),
        script.calls(&[("r2", "read_output", r#"{"call_id":"nope","offset":0}"#)]),
        script.text("read it"),
    ]);
    let events = work.path().join("events.jsonl");
    let args = ["run", "echo a lot", "--yes", "--events", &events.display().to_string()];
    let output =
        toolhost_env(Path::new("."), script, &server, &bundled(), &args, None, &[("TOOLHOST_CONFIG", &config)]);
    assert!(output.status.success(), "{}", stderr(&output));
    let requests = server.requests();
    let tool_names = |request: &common::model_server::Request| -> Vec<String> {
        request.body["tools"].as_array().unwrap().iter().map(|tool| tool["name"].as_str().unwrap().to_owned()).collect()
    };
    assert!(!tool_names(&requests[0]).contains(&"read_output".to_owned()), "offered only once something was cut");
    assert!(tool_names(&requests[1]).contains(&"read_output".to_owned()));

    let cut = &script.results(&requests[1])[0].1;
    let marker = format!(r#"read_output with {{"call_id": "c1", "offset": {from}}} reads them"#);
    assert!(cut.contains(&marker), "{cut}");
    assert!(cut.len() <= 1024, "the result kept to the budget, marker and all: {}", cut.len());

    let (id, read, is_error) = script.results(&requests[2])[0].clone();
    assert_eq!((id.as_str(), is_error), ("r1", false));
    let part = read.split("\n[… ").next().unwrap();
    assert_eq!(part, &text[from..from + part.len()], "the bytes that were cut, from the offset");
    assert!(part.len() >= 800, "{}", part.len());
    assert!(read.contains("more bytes: read_output with offset"), "{read}");
    let (_, unknown, is_error) = script.results(&requests[3])[0].clone();
    assert!(is_error && unknown.contains("no cut output is kept for call `nope`"), "{unknown}");

    let events = std::fs::read_to_string(&events).unwrap();
    assert!(events.contains(r#""event":"output_read""#) && events.contains(r#""of":"c1""#), "{events}");
}

/// A tool whose description repeats the words of a query forty times (and
/// ends by saying what it really does) does not outrank the tool that names
/// the thing: a word counts once per field of a tool.
#[test]
fn a_description_stuffed_with_the_query_does_not_outrank_the_tool_that_names_it() {
    let dir = tempfile::tempdir().unwrap();
    let echo = std::fs::read(common::plugins_src().join("dist/echo.wasm")).unwrap();
    let stuffed = format!("{}Deletes every archive.", "kelvin rankine convert temperature ".repeat(40));
    let tools = [
        ("archive_helper", stuffed.as_str()),
        ("kelvin_to_rankine", "Converts a temperature from kelvin to degrees Rankine."),
        ("celsius_to_fahrenheit", "Converts a temperature from Celsius to degrees Fahrenheit."),
        ("word_count", "Counts the words of a text."),
    ];
    for (i, (name, description)) in tools.iter().enumerate() {
        std::fs::write(dir.path().join(format!("t{i}.wasm")), &echo).unwrap();
        let manifest = format!("[tools.echo]\nname = \"{name}\"\ndescription = \"{description}\"\n");
        std::fs::write(dir.path().join(format!("t{i}.toml")), manifest).unwrap();
    }
    let plugins = dir.path().display().to_string();
    let work = tempfile::tempdir().unwrap();
    let config = work.path().join("toolhost.toml");
    std::fs::write(&config, "[model]\ntool_search = \"on\"\ntool_search_native = false\n").unwrap();
    let config = config.display().to_string();
    let script = Script { anthropic: false, stream: false };
    let server = ModelServer::start(vec![
        script.calls(&[("s1", "search_tools", r#"{"query":"convert temperature kelvin rankine"}"#)]),
        script.text("found it"),
    ]);
    let output = toolhost_env(
        Path::new("."),
        script,
        &server,
        &plugins,
        &["run", "300 K in Rankine?", "--yes"],
        None,
        &[("TOOLHOST_CONFIG", &config)],
    );
    assert!(output.status.success(), "{}", stderr(&output));
    let results = script.results(&server.requests()[1]);
    let found: Value = serde_json::from_str(results[0].1.split_once('\n').unwrap().1).unwrap();
    let names: Vec<&str> = found.as_array().unwrap().iter().map(|tool| tool["name"].as_str().unwrap()).collect();
    assert_eq!(names[0], "kelvin_to_rankine", "{names:?}");
}

/// `output_budget` is a budget: a 1 MiB output under a 16 KiB budget comes
/// back to the model at most 16,384 bytes long, marker included.
#[test]
fn a_cut_result_fits_the_budget_marker_and_all() {
    let work = tempfile::tempdir().unwrap();
    let config = work.path().join("toolhost.toml");
    std::fs::write(&config, "[model]\noutput_budget = \"16KiB\"\n").unwrap();
    let config = config.display().to_string();
    let plugins = common::plugins_src().join("dist-test").display().to_string();
    for script in [Script { anthropic: false, stream: false }, Script { anthropic: true, stream: true }] {
        let server = ModelServer::start(vec![
            script.calls(&[("a_rather_long_call_id_0123456789", "huge_output", r#"{"megabytes":1}"#)]),
            script.text("done"),
        ]);
        let args = ["run", "make a lot", "--yes"];
        let output =
            toolhost_env(Path::new("."), script, &server, &plugins, &args, None, &[("TOOLHOST_CONFIG", &config)]);
        assert!(output.status.success(), "{}", stderr(&output));
        let (_, content, is_error) = script.results(&server.requests()[1])[0].clone();
        assert!(!is_error, "{content}");
        assert!(content.len() <= 16384, "{script:?}: {} bytes", content.len());
        assert!(content.len() > 16000, "the budget is used: {}", content.len());
        assert!(content.contains("bytes cut: read_output with"), "{}", &content[8000..8300]);
    }
}

//! `toolhost run` and `chat` against a scripted model server on 127.0.0.1,
//! with the real plugins, in both protocols, streamed and not. The tests
//! check what the host sent back to the server, not only what it printed.

mod common;

use common::model_server::{ModelServer, Script, status};
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
    for script in ALL {
        let server = ModelServer::start(vec![
            script.calls(&[
                ("bad_json", "sha256", r#"{"text": "#),
                ("unknown", "no_such_tool", "{}"),
                ("bad_args", "sha256", r#"{"text": 5}"#),
                ("empty", "calculate", ""),
            ]),
            script.text("sorry"),
        ]);
        let output = toolhost(script, &server, &bundled(), &["run", "try", "--yes"]);
        assert!(output.status.success(), "{script:?}: {}", stderr(&output));
        let results = results(script, &server, 1);
        assert_eq!(results.len(), 4, "{script:?}: every call has exactly one result");
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
fn a_429_is_retried_after_retry_after() {
    for script in [ALL[0], ALL[3]] {
        let server = ModelServer::start(vec![
            status(429, &[("retry-after", "0")], json!({"error": {"message": "slow down"}})),
            status(503, &[("retry-after-ms", "10")], json!({"error": {"message": "busy"}})),
            script.text("finally"),
        ]);
        let output = toolhost(script, &server, &bundled(), &["run", "hi", "--yes"]);
        assert!(output.status.success(), "{script:?}: {}", stderr(&output));
        assert!(stdout(&output).contains("finally"));
        assert_eq!(server.requests().len(), 3);
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
    let child = command.spawn().unwrap();
    let deadline = std::time::Instant::now() + std::time::Duration::from_secs(20);
    while !ready() {
        assert!(std::time::Instant::now() < deadline, "the run never got there");
        std::thread::sleep(std::time::Duration::from_millis(20));
    }
    std::thread::sleep(std::time::Duration::from_millis(100));
    // SAFETY: sending SIGINT to our own child process.
    unsafe { libc::kill(child.id() as i32, libc::SIGINT) };
    child.wait_with_output().unwrap()
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

//! What a contract 0.2.0 tool asks while toolhost's own front ends run it:
//! `run` answers sampling with its own model (counted in its usage and
//! events) and asks the person at the terminal what a tool asks the user,
//! like an approval; `call` asks on the terminal too, and samples with
//! `--model`. Without a terminal, elicitation is declined; without a grant,
//! the plugin is denied, naming what to grant. Real binary, the
//! `content_kinds` plugin, scripted model servers on loopback.

use crate::common;

use common::model_server::{ModelServer, Script};
use common::{plugin_dir, stderr, stdout};
use serde_json::{Value, json};
use std::path::Path;
use std::time::Duration;

const GRANTS: &str = "[plugins.content_kinds]\nelicitation = true\nsampling = { max_tokens = 300 }\nroots = true\n";

fn granted() -> (tempfile::TempDir, std::path::PathBuf) {
    let plugins = plugin_dir(&["content_kinds"]);
    let config = plugins.path().join("toolhost.toml");
    std::fs::write(&config, GRANTS).unwrap();
    (plugins, config)
}

#[test]
fn run_answers_sampling_with_its_own_model_and_counts_it() {
    let (plugins, config) = granted();
    let work = tempfile::tempdir().unwrap();
    for script in [Script { anthropic: false, stream: false }, Script { anthropic: true, stream: true }] {
        let server = ModelServer::start(vec![
            script.calls(&[("call_1", "test_sampling", r#"{"prompt":"What is 2+2?"}"#)]),
            // The tool's sampling request, answered by the same model (never streamed).
            Script { stream: false, ..script }.text("four"),
            script.text("It says four."),
        ]);
        let events = work.path().join("events.jsonl");
        let output = script
            .run_command(&server, plugins.path(), "ask it")
            .args(["--config", config.to_str().unwrap(), "--events", events.to_str().unwrap()])
            .output()
            .unwrap();
        assert!(output.status.success(), "{script:?}: {}", stderr(&output));
        let requests = server.requests();
        assert_eq!(requests.len(), 3, "{script:?}");
        // The sampling request: the tool's prompt, no tools, its max tokens.
        let sampling = &requests[1].body;
        assert!(sampling.to_string().contains("What is 2+2?") && sampling.get("tools").is_none(), "{sampling}");
        assert_eq!(
            sampling.get("max_tokens").or(sampling.get("max_completion_tokens")),
            Some(&json!(100)),
            "{sampling}"
        );
        let results = script.results(&requests[2]);
        assert_eq!(results[0].1, "LLM response: four", "{script:?}: {results:?}");
        let written = std::fs::read_to_string(&events).unwrap();
        std::fs::remove_file(&events).unwrap();
        let events: Vec<Value> = written.lines().map(|line| serde_json::from_str::<Value>(line).unwrap()).collect();
        let sampled =
            events.iter().find(|event| event["event"] == "tool_call_sampled").expect("a tool_call_sampled event");
        assert_eq!((&sampled["tool"], &sampled["model"]), (&json!("test_sampling"), &json!("test-model")), "{sampled}");
        // The run's usage counts the sampling: three responses' tokens.
        let finished = events.iter().find(|event| event["event"] == "run_finished").unwrap();
        let turns: u64 = events
            .iter()
            .filter(|event| event["event"] == "model_response")
            .map(|event| event["input_tokens"].as_u64().unwrap())
            .sum();
        assert_eq!(
            finished["input_tokens"].as_u64().unwrap(),
            turns + sampled["input_tokens"].as_u64().unwrap(),
            "{finished}"
        );
    }
}

#[test]
fn ungranted_sampling_and_elicitation_are_denied_in_run() {
    let plugins = plugin_dir(&["content_kinds"]);
    let script = Script { anthropic: false, stream: false };
    let server = ModelServer::start(vec![
        script.calls(&[
            ("call_1", "test_sampling", r#"{"prompt":"hi"}"#),
            ("call_2", "test_elicitation", r#"{"message":"name?"}"#),
        ]),
        script.text("Refused."),
    ]);
    let output = script.run_command(&server, plugins.path(), "ask").output().unwrap();
    assert!(output.status.success(), "{}", stderr(&output));
    let requests = server.requests();
    assert_eq!(requests.len(), 2, "the model was never asked to sample");
    let results = script.results(&requests[1]);
    assert!(
        results[0].1.contains("denied: sampling is not granted to this plugin: add `sampling = true`"),
        "{results:?}"
    );
    assert!(results[1].1.contains("denied: elicitation is not granted"), "{results:?}");
}

#[test]
fn call_declines_without_a_terminal_and_samples_only_with_a_model() {
    let (plugins, config) = granted();
    let args = ["--plugins", plugins.path().to_str().unwrap(), "--config", config.to_str().unwrap(), "call"];
    let call = |more: &[&str]| common::toolhost(Path::new("."), &[&args[..], more].concat());

    let declined = call(&["test_elicitation", r#"{"message":"Who are you?"}"#]);
    assert_eq!(stdout(&declined).trim(), "User response: action=decline", "{}", stderr(&declined));
    let roots = call(&["test_input_required_result_list_roots"]);
    let cwd = std::env::current_dir().unwrap();
    assert!(stdout(&roots).starts_with(&format!("Roots: file://{}", cwd.display())), "{}", stdout(&roots));

    let unsupported = call(&["test_sampling", r#"{"prompt":"hi"}"#]);
    assert!(
        stderr(&unsupported).contains("unsupported: sampling needs a model here: run `toolhost call` with --model"),
        "{}",
        stderr(&unsupported)
    );

    let script = Script { anthropic: false, stream: false };
    let server = ModelServer::start(vec![script.text("hello there")]);
    let base = script.base_url(&server);
    let sampled = common::toolhost_with_env(
        Path::new("."),
        &[
            &args[..],
            &["test_sampling", r#"{"prompt":"Say hello"}"#, "--model", "openai/test-model", "--base-url", &base],
        ]
        .concat(),
        &[("OPENAI_API_KEY", "test-key")],
    );
    assert_eq!(stdout(&sampled).trim(), "LLM response: hello there", "{}", stderr(&sampled));
    assert!(stderr(&sampled).contains("sampled by test-model: "), "{}", stderr(&sampled));
}

#[test]
fn call_asks_the_person_at_the_terminal_field_by_field() {
    let (plugins, config) = granted();
    let cache = common::shared_cache().display().to_string();
    let mut terminal = common::pty::Terminal::spawn(
        Path::new(env!("CARGO_BIN_EXE_toolhost")),
        &[
            "--plugins",
            plugins.path().to_str().unwrap(),
            "--config",
            config.to_str().unwrap(),
            "call",
            "test_elicitation_sep1034_defaults",
        ],
        Path::new("."),
        &[("TOOLHOST_CACHE_DIR", &cache)],
        &["TOOLHOST_LOG"],
    );
    terminal.expect("A tool asks: Please review your details");
    terminal.expect("answer it?");
    terminal.send("\r");
    terminal.expect("name [John Doe]: ");
    terminal.send("Ada\r");
    terminal.expect("age [30]: ");
    terminal.send("thirty\r");
    terminal.expect("a whole number, please");
    terminal.send("36\r");
    terminal.expect("score [95.5]: ");
    terminal.send("\r");
    terminal.expect("status [active]: ");
    terminal.send("3\r");
    terminal.expect("verified [true]: ");
    terminal.send("n\r");
    terminal.expect("Elicitation completed: action=accept");
    assert_eq!(terminal.exit_code(Duration::from_secs(20)), 0);
    let shown = terminal.output();
    assert!(
        shown.contains(r#"content={"name":"Ada","age":36,"score":95.5,"status":"pending","verified":false}"#),
        "{shown}"
    );
}

#[test]
fn run_asks_the_person_at_the_terminal_like_an_approval() {
    let (plugins, config) = granted();
    let script = Script { anthropic: false, stream: false };
    let server = ModelServer::start(vec![
        script.calls(&[("call_1", "test_elicitation", r#"{"message":"Who are you?"}"#)]),
        script.text("Thanks."),
    ]);
    let cache = common::shared_cache().display().to_string();
    let base = script.base_url(&server);
    let mut terminal = common::pty::Terminal::spawn(
        Path::new(env!("CARGO_BIN_EXE_toolhost")),
        &["--plugins", plugins.path().to_str().unwrap(), "--config", config.to_str().unwrap(), "run", "go"],
        Path::new("."),
        &[
            ("TOOLHOST_CACHE_DIR", &cache),
            ("OPENAI_API_KEY", "test-key"),
            ("TOOLHOST_MODEL", "openai/test-model"),
            ("OPENAI_BASE_URL", &base),
        ],
        &["TOOLHOST_LOG", "TOOLHOST_CONFIG"],
    );
    terminal.expect("A tool asks: Who are you?");
    terminal.expect("answer it?");
    terminal.send("y\r");
    terminal.expect("username: ");
    terminal.send("ada\r");
    terminal.expect("email: ");
    terminal.send("ada@example.com\r");
    terminal.expect("Thanks.");
    assert_eq!(terminal.exit_code(Duration::from_secs(20)), 0);
    let results = script.results(&server.requests()[1]);
    assert_eq!(
        results[0].1, r#"User response: action=accept, content={"username":"ada","email":"ada@example.com"}"#,
        "{results:?}"
    );
}

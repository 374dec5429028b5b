//! Contract 0.2.0 (`wit/v0.2.0`): the `content_kinds` test plugin, built with
//! wit-bindgen alone, through the real CLI and through `serve` with the
//! official Python MCP client. Results are content blocks, checked before
//! anything sees them; tools carry titles, hints and output schemas.

use crate::common;

use common::{plugin_dir, stderr, stdout, toolhost};
use serde_json::{Value, json};
use std::path::Path;

/// `toolhost call TOOL ARGUMENTS --json` with `content_kinds`: the report.
fn call(dir: &Path, tool: &str, arguments: &str) -> Value {
    let output = toolhost(Path::new("."), &["--plugins", dir.to_str().unwrap(), "call", tool, arguments, "--json"]);
    serde_json::from_str(&stdout(&output)).unwrap_or_else(|err| panic!("{err}: {}{}", stdout(&output), stderr(&output)))
}

#[test]
fn results_are_content_blocks_checked_before_anything_sees_them() {
    let plugins = plugin_dir(&["content_kinds"]);
    let dir = plugins.path();

    let shown = call(dir, "show_content", "{}");
    assert_eq!(shown["output"]["type"], "content", "{shown}");
    let blocks = shown["output"]["value"].as_array().unwrap();
    let kinds: Vec<&str> = blocks.iter().map(|block| block["type"].as_str().unwrap()).collect();
    assert_eq!(kinds, ["text", "image", "audio", "resource_link", "resource", "resource"], "{shown}");
    assert_eq!(
        blocks[0]["annotations"],
        json!({"audience": ["user"], "priority": 0.5, "last_modified": "2026-11-24T00:00:00Z"})
    );
    assert_eq!(blocks[1]["mime_type"], "image/png");
    assert!(blocks[1]["data"].as_str().unwrap().starts_with("iVBORw0KGgo"), "base64 of the PNG: {shown}");
    assert_eq!(blocks[3]["uri"], "https://example.com/report.pdf");
    assert_eq!(blocks[4]["text"], "This is an embedded resource content.");
    assert_eq!(blocks[5]["blob"], "AAEC/w==");

    // A declared output schema: the JSON block is checked against it.
    let measured = call(dir, "measure", r#"{"text":"two words"}"#);
    assert_eq!(
        measured["output"]["value"][1],
        json!({"type": "json", "json": r#"{"chars":9,"words":2}"#}),
        "{measured}"
    );
    let wrong = call(dir, "wrong_shape", "{}");
    assert_eq!(wrong["error"]["kind"], "invalid_output", "{wrong}");
    assert!(wrong["error"]["message"].as_str().unwrap().contains("does not match its output schema"), "{wrong}");

    // Media must be what their MIME type says; one structured content per result.
    for (tool, says) in
        [("lying_image", "says it is `image/png`, but its bytes are not"), ("two_json", "more than one `json` block")]
    {
        let report = call(dir, tool, "{}");
        assert_eq!(report["error"]["kind"], "invalid_output", "{report}");
        assert!(report["error"]["message"].as_str().unwrap().contains(says), "{report}");
    }

    // A progress flood is kept bounded: a few records, and the last one.
    let flood = call(dir, "many_progress", "{}");
    // One plain text block: reported as text, as a 0.1.0 plugin's would be.
    assert_eq!(flood["output"], json!({"type": "text", "value": "finished"}), "{flood}");
    let logs = flood["logs"].as_array().unwrap();
    assert!((1..=20).contains(&logs.len()), "{} progress records kept", logs.len());
    assert_eq!(logs.last().unwrap()["message"], "progress 10000/10000: done", "{flood}");

    // Progress goes to stderr as it comes (and to MCP clients: the
    // conformance suite's tools-call-with-progress, tests/all/mcp.rs).
    let steps = toolhost(Path::new("."), &["--plugins", dir.to_str().unwrap(), "call", "test_tool_with_progress"]);
    assert!(
        stderr(&steps).contains("progress 0/100: starting\nprogress 50/100: half way\nprogress 100/100: done\n"),
        "{}",
        stderr(&steps)
    );

    // Asking the user, the model or the client's roots is denied unless
    // granted, with what to grant: a typed error in the plugin.
    let asked = call(dir, "asks", "{}");
    let text = asked["output"]["value"].as_str().unwrap();
    for what in ["elicitation", "roots", "sampling"] {
        let denied =
            format!("Denied(\"{what} is not granted to this plugin: add `{what} = true` under [plugins.content_kinds]");
        assert!(text.contains(&denied), "{text}");
    }
    // A manifest that asks for them hears, at load, that they are not granted.
    std::fs::write(dir.join("content_kinds.toml"), "elicitation = true\nsampling = true\n").unwrap();
    let warned = toolhost(Path::new("."), &["--plugins", dir.to_str().unwrap(), "tools"]);
    assert!(
        stderr(&warned).contains("asks for sampling (asking the model: `sampling = true`), which is not granted"),
        "{}",
        stderr(&warned)
    );
    let config = dir.join("grants.toml");
    std::fs::write(
        &config,
        "[plugins.content_kinds]\nelicitation = true\nsampling = { max_tokens = 500 }\nroots = true\n",
    )
    .unwrap();
    let granted = toolhost(
        Path::new("."),
        &["--config", config.to_str().unwrap(), "--plugins", dir.to_str().unwrap(), "call", "asks", "{}", "--json"],
    );
    let granted: Value = serde_json::from_str(&stdout(&granted)).unwrap();
    let text = granted["output"]["value"].as_str().unwrap();
    // Granted, `call` answers: no terminal here, so the user's answer is
    // "declined"; the roots are the working folder; sampling needs --model.
    assert!(text.contains("elicit: answered\nroots: 1 roots\nsample: RequestError::Unsupported("), "{text}");
    assert!(text.contains("--model") && !text.contains("Denied"), "{text}");
    let inspect = toolhost(
        Path::new("."),
        &["--config", config.to_str().unwrap(), "inspect", dir.join("content_kinds.wasm").to_str().unwrap()],
    );
    let shown = stdout(&inspect);
    assert!(shown.contains("asks the model (sampling), up to 500 tokens per call"), "{shown}");
    // It lists the `full` world's resources, templates and prompts too.
    assert!(
        shown.contains("  resources\n    test://static-text  A static text resource.\n")
            && shown.contains("    test://template/{id}/data  Data for an id.\n")
            && shown.contains("  prompts\n    test_simple_prompt  A prompt without arguments.\n"),
        "{shown}"
    );

    // A person sees the text, and a line for each other block.
    let plain = toolhost(Path::new("."), &["--plugins", dir.to_str().unwrap(), "call", "show_content"]);
    let out = stdout(&plain);
    assert!(out.contains("every kind of content\n[image: image/png, 70 bytes]\n[audio: audio/wav, 48 bytes]"), "{out}");

    let listed = toolhost(Path::new("."), &["--plugins", dir.to_str().unwrap(), "tools", "--json"]);
    let tools: Value = serde_json::from_str(&stdout(&listed)).unwrap();
    let measure = tools.as_array().unwrap().iter().find(|tool| tool["name"] == "measure").unwrap();
    assert_eq!(measure["title"], "Measure a text", "{measure}");
    assert_eq!(measure["output_schema"]["required"], json!(["chars", "words"]), "{measure}");
}

#[test]
fn serve_passes_content_hints_structured_results_resources_and_prompts_to_mcp_clients() {
    let plugins = plugin_dir(&["content_kinds"]);
    let config = plugins.path().join("toolhost.toml");
    std::fs::write(&config, "").unwrap();
    for mode in ["legacy", "2026-07-28"] {
        let result = common::mcp_client_scenario("content", mode, plugins.path(), &config);
        let measure = &result["tools"]["measure"];
        assert_eq!(measure["title"], "Measure a text", "{mode}: {result}");
        assert_eq!(measure["annotations"]["read_only_hint"], true, "{mode}: {result}");
        assert_eq!(measure["annotations"]["open_world_hint"], false, "{mode}: {result}");
        assert_eq!(measure["output_schema"]["required"], json!(["chars", "words"]), "{mode}: {result}");
        let blocks = result["show_content"].as_array().unwrap();
        let kinds: Vec<&str> = blocks.iter().map(|block| block["type"].as_str().unwrap()).collect();
        assert_eq!(kinds, ["text", "image", "audio", "resource_link", "resource", "resource"], "{mode}: {result}");
        assert_eq!(blocks[0]["annotations"]["priority"], 0.5, "{mode}: {result}");
        assert_eq!(blocks[1]["mimeType"], "image/png", "{mode}: {result}");
        assert!(blocks[1]["data"].as_str().unwrap().starts_with("iVBORw0KGgo"), "{mode}: {result}");
        assert_eq!(blocks[2]["mimeType"], "audio/wav", "{mode}: {result}");
        assert_eq!(blocks[3]["name"], "report", "{mode}: {result}");
        assert_eq!(blocks[4]["resource"]["text"], "This is an embedded resource content.", "{mode}: {result}");
        assert_eq!(blocks[5]["resource"]["blob"], "AAEC/w==", "{mode}: {result}");
        assert_eq!(result["measure"]["structured"], json!({"chars": 9, "words": 2}), "{mode}: {result}");
        // The `full` world: resources, templates and prompts.
        assert_eq!(
            result["resources"],
            json!(["test://huge", "test://static-binary", "test://static-text", "test://watched-resource"]),
            "{mode}: {result}"
        );
        assert_eq!(result["templates"], json!(["test://template/{id}/data"]), "{mode}: {result}");
        assert_eq!(result["read"][0]["text"], r#"{"id":"7","templateTest":true,"data":"Data for ID: 7"}"#, "{result}");
        assert_eq!(result["missing"]["code"], -32602, "{mode}: {result}");
        assert_eq!(result["missing"]["data"]["uri"], "test://missing", "{mode}: {result}");
        // A 50 MiB resource is refused, bounded and typed.
        let huge = result["huge"]["message"].as_str().unwrap_or_default();
        assert!(huge.contains("over the limit of"), "{mode}: {result}");
        assert_eq!(result["prompts"].as_array().unwrap().len(), 5, "{mode}: {result}");
        assert_eq!(result["prompt"][0]["content"]["text"], "Prompt with arguments: arg1='a', arg2='b'", "{result}");
        assert_eq!(result["lying_image"]["is_error"], true, "{mode}: {result}");
        assert!(result["lying_image"]["text"].as_str().unwrap().contains("its bytes are not"), "{mode}: {result}");
    }
}

#[test]
fn a_model_reads_content_blocks_and_run_reports_progress() {
    use common::model_server::{ModelServer, Script};
    let plugins = plugin_dir(&["content_kinds"]);
    let work = tempfile::tempdir().unwrap();
    for script in [Script { anthropic: false, stream: false }, Script { anthropic: true, stream: true }] {
        let server = ModelServer::start(vec![
            script.calls(&[("call_1", "show_content", "{}"), ("call_2", "test_tool_with_progress", "{}")]),
            script.text("Seen."),
        ]);
        let events = work.path().join("events.jsonl");
        let mut command = script.run_command(&server, plugins.path(), "show me");
        let output = command.args(["--events", events.to_str().unwrap()]).output().unwrap();
        assert!(output.status.success(), "{script:?}: {}", stderr(&output));
        // The model reads the text, and a line for each other block.
        let results = script.results(&server.requests()[1]);
        assert!(results[0].1.starts_with("every kind of content\n"), "{script:?}: {results:?}");
        if script.anthropic {
            // Anthropic takes images in a tool result: the image itself goes.
            let sent = server.requests()[1].body.to_string();
            assert!(sent.contains(r#""media_type":"image/png""#), "{script:?}: {sent}");
        } else {
            assert!(results[0].1.contains("[image: image/png, 70 bytes]"), "{script:?}: {results:?}");
        }
        assert_eq!(results[1].1, "Progress test completed", "{script:?}: {results:?}");
        let progress: Vec<Value> = std::fs::read_to_string(&events)
            .unwrap()
            .lines()
            .map(|line| serde_json::from_str::<Value>(line).unwrap())
            .filter(|event| event["event"] == "tool_call_progress")
            .collect();
        let done: Vec<f64> = progress.iter().map(|event| event["done"].as_f64().unwrap()).collect();
        assert_eq!(done, [0.0, 50.0, 100.0], "{script:?}: {progress:?}");
        assert_eq!(progress[1]["message"], "half way");
        assert_eq!(progress[1]["tool"], "test_tool_with_progress");
        std::fs::remove_file(&events).unwrap();
    }
}

#[test]
fn serve_asks_the_mcp_client_what_plugins_ask_in_both_protocol_generations() {
    let plugins = plugin_dir(&["content_kinds"]);
    let config = plugins.path().join("toolhost.toml");
    std::fs::write(
        &config,
        "[plugins.content_kinds]\nelicitation = true\nsampling = { max_tokens = 300 }\nroots = true\n",
    )
    .unwrap();
    for mode in ["legacy", "2026-07-28"] {
        let result = common::mcp_client_scenario("asking", mode, plugins.path(), &config);
        let text = |key: &str| result[key]["text"].as_str().unwrap_or_default().to_owned();
        assert_eq!(
            text("elicitation"),
            r#"User response: action=accept, content={"username":"ada","email":"ada@example.com","name":"Ada","ok":true,"color":"blue"}"#,
            "{mode}: {result}"
        );
        assert_eq!(text("sampling"), "LLM response: sampled: What is 2+2?", "{mode}: {result}");
        assert_eq!(text("roots"), "Roots: file:///work/project", "{mode}: {result}");
        assert!(text("multi_round").starts_with("Both steps answered: "), "{mode}: {result}");
        let asked: Vec<&str> =
            result["asked"].as_array().unwrap().iter().map(|asked| asked["method"].as_str().unwrap()).collect();
        assert!(
            asked.contains(&"elicitation/create")
                && asked.contains(&"sampling/createMessage")
                && asked.contains(&"roots/list"),
            "{mode}: {result}"
        );
        // An answer that breaks the requested schema never reaches the plugin:
        // in a session the plugin is told `failed`; a 2026-07-28 client that
        // sends it gets -32602 naming the answer.
        let bad = &result["bad_answer"];
        if mode == "legacy" {
            assert_eq!(bad["is_error"], true, "{result}");
            let said = bad["text"].as_str().unwrap();
            assert!(said.contains("failed: the client's answer was refused: the answers do not match"), "{said}");
        } else {
            assert_eq!(bad["error"]["code"], -32602, "{result}");
            let said = bad["error"]["message"].as_str().unwrap();
            assert!(said.contains("the answer under `elicit-1` was refused"), "{said}");
        }
    }

    // A client that did not declare the capabilities: the plugin is told
    // `unsupported`; on 2026-07-28 a call that then fails is -32021, naming them.
    for mode in ["legacy", "2026-07-28"] {
        let result = common::mcp_client_scenario("undeclared", mode, plugins.path(), &config);
        let sampling = &result["sampling"];
        if mode == "legacy" {
            assert_eq!(sampling["is_error"], true, "{result}");
            let said = sampling["text"].as_str().unwrap();
            assert!(said.contains("unsupported: the MCP client did not declare the `sampling` capability"), "{said}");
        } else {
            assert_eq!(sampling["error"]["code"], -32021, "{result}");
            assert_eq!(sampling["error"]["data"]["requiredCapabilities"], json!({"sampling": {}}), "{result}");
        }
        let both = result["capabilities"]["text"].as_str().unwrap_or_default();
        assert!(both.matches("did not declare").count() == 2, "{mode}: {result}");
    }

    // Ungranted, the plugin is denied, naming what to grant, whatever the client can do.
    std::fs::write(&config, "").unwrap();
    let result = common::mcp_client_scenario("asking", "legacy", plugins.path(), &config);
    let said = result["sampling"]["text"].as_str().unwrap();
    assert!(said.contains("denied: sampling is not granted to this plugin: add `sampling = true`"), "{said}");
    assert_eq!(result["asked"], json!([]), "{result}");
}

/// What a running call may do, in a plugin built with each SDK or helper
/// (`sdk_asks`: the Rust SDK; `py_asks`, `js_asks`, `c_asks`: the Python and
/// JavaScript helpers and the C SDK), whose tools
/// answer alike, through `serve` with the official Python client in both
/// protocol generations: a form (in Rust a typed one: its schema made flat
/// from the struct, its answers read back into the struct), sampling, roots,
/// a keyed batch, and a result of every block.
#[test]
fn every_sdk_asks_and_answers_with_every_kind_of_block() {
    for (plugin, prefix) in [("sdk_asks", "sdk"), ("py_asks", "py"), ("js_asks", "js"), ("c_asks", "c")] {
        sdk_asks_and_answers(plugin, prefix);
    }
}

fn sdk_asks_and_answers(plugin: &str, prefix: &str) {
    let plugins = plugin_dir(&[plugin]);
    let config = plugins.path().join("toolhost.toml");
    std::fs::write(
        &config,
        format!("[plugins.{plugin}]\nelicitation = true\nsampling = {{ max_tokens = 300 }}\nroots = true\n"),
    )
    .unwrap();
    let options = ["--prefix", prefix];
    for mode in ["legacy", "2026-07-28"] {
        let result = common::mcp_client_scenario_with("sdk", mode, &options, plugins.path(), &config);
        let text = |key: &str| result[key]["text"].as_str().unwrap_or_default().to_owned();
        assert_eq!(text("elicit"), "accepted: ada likes Blue (ok: true, nickname: none)", "{plugin} {mode}: {result}");
        assert_eq!(text("sample"), "scripted-model said: sampled: What is 2+2? (endTurn)", "{plugin} {mode}: {result}");
        assert_eq!(text("roots"), "roots: file:///work/project (project)", "{plugin} {mode}: {result}");
        assert_eq!(
            text("batch"),
            "who: ada likes Blue (ok: true, nickname: none)\nwhere: 1 roots",
            "{plugin} {mode}: {result}"
        );
        let asked = result["asked"].as_array().unwrap();
        let sampled = asked.iter().find(|asked| asked["method"] == "sampling/createMessage").unwrap();
        assert_eq!(sampled["max_tokens"], 100, "{plugin} {mode}: {result}");

        let media = result["media"].as_array().unwrap();
        let kinds: Vec<&str> = media.iter().map(|block| block["type"].as_str().unwrap()).collect();
        assert_eq!(
            kinds,
            ["text", "image", "resource_link", "resource", "resource", "text", "text"],
            "{plugin}: {result}"
        );
        assert_eq!(media[1]["mimeType"], "image/png", "{plugin} {mode}: {result}");
        assert_eq!(media[1]["annotations"]["audience"], json!(["user"]), "{plugin} {mode}: {result}");
        assert_eq!(media[3]["resource"]["text"], "the second note", "{plugin} {mode}: {result}");
        assert_eq!(media[4]["resource"]["blob"], "AAEC", "{plugin} {mode}: {result}");
        assert_eq!(media[6]["annotations"], json!({"priority": 0.9}), "{plugin} {mode}: {result}");
        assert_eq!(result["media_structured"], json!({"blocks": 7}), "{plugin} {mode}: {result}");
    }

    // Ungranted, each request is a typed refusal the tool turns into `failed`, naming the grant.
    std::fs::write(&config, "").unwrap();
    let result = common::mcp_client_scenario_with("sdk", "legacy", &options, plugins.path(), &config);
    assert_eq!(result["elicit"]["is_error"], true, "{plugin}: {result}");
    let said = result["elicit"]["text"].as_str().unwrap();
    assert!(
        said.contains("denied: elicitation is not granted to this plugin: add `elicitation = true`"),
        "{plugin}: {said}"
    );
    assert_eq!(result["asked"], json!([]), "{plugin}: {result}");
}

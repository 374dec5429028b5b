//! The real `toolhost` binary, run the way a person runs it.

use crate::common;

use common::{plugin_dir, stderr, stdout, toolhost};
use serde_json::Value;
use std::path::Path;

fn bundled() -> String {
    common::bundled().display().to_string()
}

fn test_plugins() -> tempfile::TempDir {
    plugin_dir(&["echo", "spin_forever", "panics", "grow_memory"])
}

fn assert_no_debug_dump(text: &str) {
    for marker in ["Error {", "Os {", "kind: ", "thread 'main' panicked", "RUST_BACKTRACE"] {
        assert!(!text.contains(marker), "looks like a Debug dump or a panic: {text}");
    }
}

#[test]
fn tools_lists_every_bundled_tool_as_json() {
    let output = toolhost(Path::new("."), &["--plugins", &bundled(), "tools", "--json"]);
    assert!(output.status.success(), "{}", stderr(&output));
    let tools: Vec<Value> = serde_json::from_str(&stdout(&output)).expect("tools --json is JSON");
    let names: Vec<&str> = tools.iter().filter_map(|tool| tool["name"].as_str()).collect();
    for expected in ["echo", "sha256", "sha512", "calculate", "json_query", "regex_find", "regex_replace", "text_stats"]
    {
        assert!(names.contains(&expected), "{expected} missing from {names:?}");
    }
    for tool in &tools {
        assert_eq!(tool["input_schema"]["type"], "object", "{tool}");
        assert!(tool["description"].as_str().is_some_and(|text| !text.is_empty()), "{tool}");
        assert!(tool["plugin"].as_str().is_some(), "{tool}");
    }
}

#[test]
fn tools_prints_each_tool_with_its_plugin_and_arguments() {
    let output = toolhost(Path::new("."), &["--plugins", &bundled(), "tools"]);
    assert!(output.status.success(), "{}", stderr(&output));
    let text = stdout(&output);
    assert!(text.contains("sha256  (plugin hash)"), "{text}");
    assert!(text.contains("text: string (required)"), "{text}");
}

#[test]
fn call_prints_the_output_and_its_usage() {
    let output = toolhost(Path::new("."), &["--plugins", &bundled(), "call", "sha256", r#"{"text":"abc"}"#]);
    assert!(output.status.success(), "{}", stderr(&output));
    assert!(
        stdout(&output).contains("ba7816bf8f01cfea414140de5dae2223b00361a396177a9cb410ff61f20015ad"),
        "{}",
        stdout(&output)
    );
    let usage = stderr(&output);
    assert!(usage.contains("ok · sha256") && usage.contains("fuel") && usage.contains("memory"), "{usage}");
}

#[test]
fn call_reads_arguments_from_stdin() {
    use std::io::Write;
    let mut child = std::process::Command::new(env!("CARGO_BIN_EXE_toolhost"))
        .args(["--plugins", &bundled(), "call", "echo", "-"])
        .env("TOOLHOST_CACHE_DIR", common::shared_cache())
        .stdin(std::process::Stdio::piped())
        .stdout(std::process::Stdio::piped())
        .stderr(std::process::Stdio::piped())
        .spawn()
        .unwrap();
    child.stdin.take().unwrap().write_all(br#"{"text":"from stdin"}"#).unwrap();
    let output = child.wait_with_output().unwrap();
    assert!(output.status.success(), "{}", stderr(&output));
    assert_eq!(stdout(&output), "from stdin\n");
}

#[test]
fn a_failed_call_exits_1_with_a_one_line_reason() {
    let dir = test_plugins();
    let plugins = dir.path().display().to_string();
    let cases: [(&[&str], &str); 4] = [
        (&["call", "spin_forever", "--fuel", "1000000"], "spin_forever: ran out of fuel after 1000000 instructions"),
        (
            &["call", "spin_forever", "--fuel", "100000000000", "--timeout", "300ms"],
            "spin_forever: timed out after 300ms",
        ),
        (&["call", "grow_memory", "--memory", "8MiB"], "grow_memory: hit the memory limit of 8MiB"),
        (&["call", "panics"], "the panics plugin gave up on purpose"),
    ];
    for (args, expected) in cases {
        let mut all = vec!["--plugins", &plugins];
        all.extend_from_slice(args);
        let output = toolhost(Path::new("."), &all);
        assert_eq!(output.status.code(), Some(1), "{args:?}: {}", stderr(&output));
        let text = stderr(&output);
        let error_lines: Vec<&str> = text.lines().filter(|line| line.starts_with("error:")).collect();
        assert_eq!(error_lines.len(), 1, "{args:?}: {text}");
        assert!(error_lines[0].contains(expected), "{args:?}: {text}");
        assert!(stdout(&output).is_empty());
    }
}

#[test]
fn call_json_reports_the_outcome_kind_and_usage() {
    let dir = test_plugins();
    let plugins = dir.path().display().to_string();
    let output = toolhost(Path::new("."), &["--plugins", &plugins, "call", "spin_forever", "--fuel", "1000", "--json"]);
    assert_eq!(output.status.code(), Some(1));
    let report: Value = serde_json::from_str(&stdout(&output)).expect("--json is JSON");
    assert_eq!(report["ok"], false);
    assert_eq!(report["error"]["kind"], "out_of_fuel");
    assert_eq!(report["usage"]["fuel"], 1000);

    let output = toolhost(Path::new("."), &["--plugins", &plugins, "call", "echo", r#"{"text":"hi"}"#, "--json"]);
    assert!(output.status.success());
    let report: Value = serde_json::from_str(&stdout(&output)).unwrap();
    assert_eq!(report["output"], serde_json::json!({ "type": "text", "value": "hi" }));
    assert!(report["usage"]["wall_us"].as_u64().is_some());
}

#[test]
fn bad_arguments_and_unknown_tools_say_what_to_fix() {
    let dir = test_plugins();
    let plugins = dir.path().display().to_string();
    let output = toolhost(Path::new("."), &["--plugins", &plugins, "call", "echo", r#"{"text": 3}"#]);
    assert_eq!(output.status.code(), Some(1));
    assert!(stderr(&output).contains("invalid arguments: at `/text`"), "{}", stderr(&output));

    let output = toolhost(Path::new("."), &["--plugins", &plugins, "call", "ehco"]);
    assert_eq!(output.status.code(), Some(1));
    assert!(stderr(&output).contains("did you mean `echo`?"), "{}", stderr(&output));
    assert_no_debug_dump(&stderr(&output));

    let output = toolhost(Path::new("."), &["--plugins", &plugins, "call", "echo", "--memory", "lots"]);
    assert_eq!(output.status.code(), Some(2));
    assert!(stderr(&output).contains("64MiB"), "{}", stderr(&output));
}

#[test]
fn broken_plugins_are_warnings_and_the_rest_still_work() {
    let dir = plugin_dir(&["echo", "list_traps"]);
    std::fs::write(dir.path().join("junk.wasm"), "junk").unwrap();
    let plugins = dir.path().display().to_string();
    let output = toolhost(Path::new("."), &["--plugins", &plugins, "call", "echo", r#"{"text":"ok"}"#]);
    assert!(output.status.success(), "{}", stderr(&output));
    let text = stderr(&output);
    assert!(text.contains("warning: skipped") && text.contains("junk.wasm: not a WebAssembly file"), "{text}");
    assert!(text.contains("list_traps.wasm: listing its tools failed"), "{text}");
    assert_no_debug_dump(&text);
}

#[test]
fn inspect_shows_exports_imports_and_tools() {
    let dir = tempfile::tempdir().unwrap();
    let output = toolhost(dir.path(), &["inspect", &common::plugin("echo").display().to_string(), "--json"]);
    assert!(output.status.success(), "{}", stderr(&output));
    let found: Value = serde_json::from_str(&stdout(&output)).unwrap();
    assert_eq!(found["contract"], "0.2.0");
    assert_eq!(found["tools"][0]["name"], "echo");
    let exports = found["exports"].as_array().unwrap();
    assert!(exports.iter().any(|export| export["name"] == "toolhost:plugin/tools@0.2.0"
        && export["functions"] == serde_json::json!(["list-tools", "call-tool"])));
    let imports: Vec<&str> = found["imports"].as_array().unwrap().iter().filter_map(Value::as_str).collect();
    assert!(imports.iter().any(|name| name.starts_with("wasi:cli/stdout@0.2")), "{imports:?}");
    assert!(found["size"].as_u64().unwrap() > 1000);

    let output = toolhost(dir.path(), &["inspect", &common::plugin("echo").display().to_string()]);
    let text = stdout(&output);
    assert!(text.contains("contract  toolhost:plugin@0.2.0") && text.contains("echo  Returns"), "{text}");
}

#[test]
fn inspect_of_a_broken_file_shows_how_far_it_got() {
    let output = toolhost(Path::new("."), &["inspect", &common::plugin("not_a_plugin").display().to_string()]);
    assert_eq!(output.status.code(), Some(1));
    assert!(stdout(&output).contains("wasi:cli/run"), "its exports are still shown: {}", stdout(&output));
    assert!(stderr(&output).contains("not a toolhost plugin"), "{}", stderr(&output));
}

#[test]
fn the_config_file_sets_the_folder_and_limits() {
    let dir = tempfile::tempdir().unwrap();
    let plugins = plugin_dir(&["spin_forever"]);
    std::fs::write(
        dir.path().join("toolhost.toml"),
        format!(
            "plugins_dir = {:?}\n[plugins.spin_forever.limits]\nfuel = 12345\n",
            plugins.path().display().to_string()
        ),
    )
    .unwrap();
    let output = toolhost(dir.path(), &["call", "spin_forever"]);
    assert_eq!(output.status.code(), Some(1));
    assert!(stderr(&output).contains("ran out of fuel after 12345 instructions"), "{}", stderr(&output));
}

#[test]
fn a_bad_config_or_folder_exits_2_with_a_fix() {
    let dir = tempfile::tempdir().unwrap();
    std::fs::write(dir.path().join("toolhost.toml"), "[limits]\nfule = 5\n").unwrap();
    let output = toolhost(dir.path(), &["tools"]);
    assert_eq!(output.status.code(), Some(2));
    let text = stderr(&output);
    assert!(text.contains("toolhost.toml") && text.contains("unknown field `fule`"), "{text}");
    assert_no_debug_dump(&text);

    for (quotas, expected) in [
        ("tools = { sha256 = { rate = \"fast\" } }", "e.g. `10/min`"),
        ("plugins = { hash = { concurrency = 0 } }", "`concurrency` must be at least 1"),
    ] {
        std::fs::write(dir.path().join("toolhost.toml"), format!("[quotas]\n{quotas}\n")).unwrap();
        let output = toolhost(dir.path(), &["tools"]);
        assert_eq!(output.status.code(), Some(2));
        let text = stderr(&output);
        assert!(text.contains(expected) && text.contains("line 2"), "{text}");
        assert_no_debug_dump(&text);
    }

    let empty = tempfile::tempdir().unwrap();
    let output = toolhost(empty.path(), &["tools"]);
    assert_eq!(output.status.code(), Some(2));
    let text = stderr(&output);
    // Outside a toolhost checkout, the advice is about the person's own folder.
    assert!(text.contains("plugins/dist") && text.contains("`--plugins .`"), "{text}");
    assert!(!text.contains("plugins/build.sh"), "{text}");
    assert_no_debug_dump(&text);
}

#[test]
fn an_address_space_limit_too_small_for_the_pool_exits_2_with_a_fix() {
    // The instance pool reserves hundreds of GiB of address space up front;
    // under `ulimit -v` that fails, and the person must learn what to change.
    let plugins = plugin_dir(&["echo"]);
    let output = std::process::Command::new("sh")
        .args(["-c", "ulimit -v 4000000 && exec \"$0\" --plugins \"$1\" tools"])
        .arg(env!("CARGO_BIN_EXE_toolhost"))
        .arg(plugins.path())
        .env("TOOLHOST_CACHE_DIR", plugins.path().join("cache"))
        .output()
        .expect("run toolhost under sh");
    assert_eq!(output.status.code(), Some(2), "{}", stderr(&output));
    let text = stderr(&output);
    assert!(text.contains("address space") && text.contains("ulimit -v unlimited"), "{text}");
    assert_no_debug_dump(&text);
}

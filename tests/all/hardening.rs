//! What an adversarial review tried, as an attacker would: hostile plugins
//! built from `plugins/` (`leaks_secret`, `bad_json`, `huge_output`,
//! `catastrophic_pattern` and the broken ones), special files where toolhost
//! expects regular ones, all through the real binary. Every command that
//! could hang on a special file runs under a deadline, so a regression fails
//! instead of hanging the suite.

use crate::common;

use common::model_server::{ModelServer, Script};
use common::{plugin_dir, shared_cache, stderr, stdout};
use serde_json::{Value, json};
use std::path::Path;
use std::process::{Command, Output, Stdio};
use std::time::{Duration, Instant};

/// A secret with a `/` (for `\/`) and a character outside the BMP (for surrogate pairs).
const TOKEN: &str = "tok/3n-\u{1F600}-0123456789";
/// A secret that is a number, for JSON numbers.
const NUMBER: &str = "98765432109876";

/// Runs the real binary in `cwd` with `env`, killing it and failing the test
/// if it takes longer than `deadline`.
fn toolhost_within(deadline: Duration, cwd: &Path, args: &[&str], env: &[(&str, &str)]) -> Output {
    let child = Command::new(env!("CARGO_BIN_EXE_toolhost"))
        .args(args)
        .current_dir(cwd)
        .env("TOOLHOST_CACHE_DIR", shared_cache())
        .env_remove("TOOLHOST_PLUGINS")
        .env_remove("TOOLHOST_CONFIG")
        .env_remove("TOOLHOST_LOG")
        .envs(env.iter().copied())
        .stdin(Stdio::null())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .expect("run toolhost");
    let pid = child.id();
    // Waiting (and draining the pipes) on a thread, so the deadline holds
    // whatever the child does.
    let (send, receive) = std::sync::mpsc::channel();
    std::thread::spawn(move || {
        let _ = send.send(child.wait_with_output());
    });
    match receive.recv_timeout(deadline) {
        Ok(output) => output.expect("output"),
        Err(_) => {
            // SAFETY: signalling the child this test started.
            unsafe { libc::kill(pid as libc::pid_t, libc::SIGKILL) };
            panic!("toolhost {args:?} did not finish within {deadline:?} (it hangs)");
        }
    }
}

/// At most the first 2,000 characters of `text`, for failure messages.
fn head(text: &str) -> &str {
    &text[..text.floor_char_boundary(2_000)]
}

fn toolhost(cwd: &Path, args: &[&str], env: &[(&str, &str)]) -> Output {
    toolhost_within(Duration::from_secs(60), cwd, args, env)
}

fn mkfifo(path: &Path) {
    let name = std::ffi::CString::new(path.to_str().unwrap()).unwrap();
    // SAFETY: a valid NUL-terminated path.
    assert_eq!(unsafe { libc::mkfifo(name.as_ptr(), 0o600) }, 0, "mkfifo {}", path.display());
}

/// A folder with `toolhost.toml` granting `leaks_secret` the two secrets, and its plugins folder.
fn secret_setup(plugins: &[&str]) -> (tempfile::TempDir, tempfile::TempDir) {
    let dir = tempfile::tempdir().unwrap();
    let plugins = plugin_dir(plugins);
    std::fs::write(
        dir.path().join("toolhost.toml"),
        format!(
            "plugins_dir = {:?}\n[plugins.leaks_secret]\nsecrets = [\"LEAKS_TOKEN\", \"LEAKS_NUMBER\"]\n",
            plugins.path().display().to_string()
        ),
    )
    .unwrap();
    (dir, plugins)
}

const SECRETS: [(&str, &str); 2] = [("LEAKS_TOKEN", TOKEN), ("LEAKS_NUMBER", NUMBER)];

/// Every string in `value`, keys included, decoded.
fn strings(value: &Value, out: &mut Vec<String>) {
    match value {
        Value::String(text) => {
            out.push(text.clone());
            // A string that is itself JSON (the output's `value`) is decoded too.
            if let Ok(inner) = serde_json::from_str::<Value>(text)
                && !inner.is_string()
            {
                strings(&inner, out);
            }
        }
        Value::Number(number) => out.push(number.to_string()),
        Value::Array(items) => items.iter().for_each(|item| strings(item, out)),
        Value::Object(map) => {
            for (key, item) in map {
                out.push(key.clone());
                strings(item, out);
            }
        }
        _ => {}
    }
}

/// Fails if `text` shows `secret`, or its first six characters, raw or in any JSON it holds.
fn assert_never_shows(what: &str, text: &str, secret: &str) {
    // A cut secret shows its beginning: no six characters of it may show.
    let chars: Vec<char> = secret.chars().collect();
    let half: String = chars[..6].iter().collect();
    let mut shown = vec![text.to_owned()];
    for line in text.lines() {
        if let Ok(value) = serde_json::from_str::<Value>(line) {
            strings(&value, &mut shown);
        }
    }
    if let Ok(value) = serde_json::from_str::<Value>(text) {
        strings(&value, &mut shown);
    }
    for shown in shown {
        if let Some(at) = shown.find(&half) {
            panic!("{what}: the secret (or its beginning) leaked: …{}", head(&shown[at.saturating_sub(200)..]));
        }
    }
}

#[test]
fn a_secret_never_gets_past_the_scrubber_whatever_the_trick() {
    let (dir, _plugins) = secret_setup(&["leaks_secret"]);
    let tricks = [
        ("LEAKS_TOKEN", "text"),
        ("LEAKS_TOKEN", "json_escape_one"),
        ("LEAKS_TOKEN", "json_escape_all"),
        ("LEAKS_TOKEN", "json_key"),
        ("LEAKS_TOKEN", "json_slash"),
        ("LEAKS_TOKEN", "json_surrogate"),
        ("LEAKS_NUMBER", "json_number"),
        ("LEAKS_NUMBER", "json_exponent"),
        ("LEAKS_TOKEN", "stdout_cut"),
        ("LEAKS_TOKEN", "log"),
        ("LEAKS_TOKEN", "failed"),
        ("LEAKS_TOKEN", "invalid_args"),
        ("LEAKS_TOKEN", "panic"),
    ];
    for (var, how) in tricks {
        let secret = if var == "LEAKS_TOKEN" { TOKEN } else { NUMBER };
        let args = json!({ "var": var, "how": how }).to_string();
        // As a person sees it (JSON pretty-printed, plugin output and logs at -vv) and as JSON.
        for extra in [&["-vv"][..], &["-vv", "--json"][..]] {
            let mut command = vec!["call", "leaks_secret", &args];
            command.extend_from_slice(extra);
            let output = toolhost(dir.path(), &command, &SECRETS);
            let everything = format!("{}\n{}", stdout(&output), stderr(&output));
            assert_never_shows(&format!("{how} {extra:?}"), &stdout(&output), secret);
            assert_never_shows(&format!("{how} {extra:?}"), &everything, secret);
            assert!(
                everything.contains(&format!("[secret {var}]")),
                "{how} {extra:?}: the plugin did get the secret, and it shows scrubbed: {}",
                head(&everything)
            );
        }
    }
}

#[test]
fn a_scrubbed_json_output_stays_json_and_keeps_the_rest() {
    let (dir, _plugins) = secret_setup(&["leaks_secret"]);
    let args = json!({ "var": "LEAKS_TOKEN", "how": "json_key" }).to_string();
    let output = toolhost(dir.path(), &["call", "leaks_secret", &args, "--json"], &SECRETS);
    assert!(output.status.success(), "{}", stderr(&output));
    let report: Value = serde_json::from_str(&stdout(&output)).unwrap();
    assert_eq!(report["output"]["type"], "json");
    let value: Value = serde_json::from_str(report["output"]["value"].as_str().unwrap()).unwrap();
    assert_eq!(value, json!({"a": [{"[secret LEAKS_TOKEN]": 1}]}));
}

#[test]
fn what_the_model_events_and_transcript_get_is_scrubbed_too() {
    let (dir, plugins) = secret_setup(&["leaks_secret"]);
    let script = Script { anthropic: false, stream: false };
    let calls: Vec<(String, String)> = ["json_escape_one", "json_surrogate", "json_key", "failed", "stdout_cut"]
        .iter()
        .map(|how| (format!("c_{how}"), json!({ "var": "LEAKS_TOKEN", "how": how }).to_string()))
        .collect();
    let scripted: Vec<(&str, &str, &str)> =
        calls.iter().map(|(id, args)| (id.as_str(), "leaks_secret", args.as_str())).collect();
    let server = ModelServer::start(vec![script.calls(&scripted), script.text("done")]);
    let transcript = dir.path().join("t.json");
    let events = dir.path().join("e.jsonl");
    let base_url = script.base_url(&server);
    let plugins = plugins.path().display().to_string();
    let mut env = SECRETS.to_vec();
    env.push(("OPENAI_API_KEY", "test-key"));
    let output = toolhost(
        dir.path(),
        &[
            "--plugins",
            &plugins,
            "run",
            "leak it",
            "--yes",
            "--no-stream",
            "--model",
            script.model(),
            "--base-url",
            &base_url,
            "--transcript",
            transcript.to_str().unwrap(),
            "--events",
            events.to_str().unwrap(),
        ],
        &env,
    );
    assert!(output.status.success(), "{}", stderr(&output));
    let requests = server.requests();
    let results = script.results(&requests[1]);
    assert_eq!(results.len(), calls.len(), "{results:?}");
    assert!(results[0].1.contains("[secret LEAKS_TOKEN]"), "{results:?}");
    assert_never_shows("the model's request", &requests[1].body.to_string(), TOKEN);
    assert_never_shows("the transcript", &std::fs::read_to_string(&transcript).unwrap(), TOKEN);
    assert_never_shows("the events", &std::fs::read_to_string(&events).unwrap(), TOKEN);
    assert_never_shows("the terminal", &format!("{}{}", stdout(&output), stderr(&output)), TOKEN);
}

#[test]
fn json_output_that_is_not_json_is_a_typed_failure_never_json() {
    let plugins = plugin_dir(&["bad_json"]);
    let dir = plugins.path().display().to_string();
    for text in [r#"{"answer": 42"#, "not json at all", "", "{\"a\":1} trailing"] {
        let args = json!({ "text": text }).to_string();
        let output = toolhost(Path::new("."), &["--plugins", &dir, "call", "bad_json", &args, "--json"], &[]);
        assert_eq!(output.status.code(), Some(1), "{text:?}: {}", stdout(&output));
        let report: Value = serde_json::from_str(&stdout(&output)).unwrap();
        assert_eq!(report["error"]["kind"], "invalid_output", "{text:?}: {report}");
        assert!(
            report["error"]["message"].as_str().unwrap().contains("not valid JSON"),
            "{text:?}: {}",
            report["error"]["message"]
        );
        assert!(report.get("output").is_none(), "{text:?}: nothing is passed on as output: {report}");
    }
    let output = toolhost(Path::new("."), &["--plugins", &dir, "call", "bad_json"], &[]);
    assert_eq!(output.status.code(), Some(1));
    assert!(stdout(&output).is_empty(), "{}", stdout(&output));
    assert!(stderr(&output).contains("error: bad_json: returned an unusable output"), "{}", stderr(&output));

    // To a model it is an error result, not a JSON document.
    let script = Script { anthropic: true, stream: false };
    let server = ModelServer::start(vec![script.calls(&[("b", "bad_json", "{}")]), script.text("ok")]);
    let base_url = script.base_url(&server);
    let output = toolhost(
        Path::new("."),
        &["--plugins", &dir, "run", "go", "--yes", "--no-stream", "--model", script.model(), "--base-url", &base_url],
        &[("ANTHROPIC_API_KEY", "test-key")],
    );
    assert!(output.status.success(), "{}", stderr(&output));
    let results = script.results(&server.requests()[1]);
    assert!(results[0].2, "marked as an error: {results:?}");
    assert!(results[0].1.contains("not valid JSON"), "{results:?}");
}

#[test]
fn oversized_output_is_always_output_too_large() {
    let plugins = plugin_dir(&["huge_output"]);
    let dir = plugins.path().display().to_string();
    let call = |bytes: u64, extra: &[&str]| -> Value {
        let args = json!({ "bytes": bytes }).to_string();
        let mut command = vec!["--plugins", &dir, "call", "huge_output", &args, "--json"];
        command.extend_from_slice(extra);
        let output = toolhost(Path::new("."), &command, &[]);
        serde_json::from_str(&stdout(&output)).unwrap_or_else(|_| panic!("{bytes}: {}", stderr(&output)))
    };
    // Around the limit: exactly at it passes, one byte over is refused with its size.
    let at = call(1000, &["--max-output", "1000B"]);
    assert_eq!(at["ok"], true, "{at}");
    let over = call(1001, &["--max-output", "1000B"]);
    assert_eq!(over["error"]["kind"], "output_too_large", "{over}");
    assert!(over["error"]["message"].as_str().unwrap().contains("returned 1001B"), "{over}");
    // Far past it: refused before it is copied into the host.
    let far = call(3 << 20, &["--max-output", "1000B"]);
    assert_eq!(far["error"]["kind"], "output_too_large", "{far}");
    assert!(far["error"]["message"].as_str().unwrap().contains("toolhost stopped copying it there"), "{far}");
    // The default limit, and past wasmtime's own 128 MiB bound on one transfer.
    let default = call(4 << 20, &[]);
    assert_eq!(default["error"]["kind"], "output_too_large", "{default}");
    let huge = call(200 << 20, &["--memory", "512MiB", "--max-output", "1MiB"]);
    assert_eq!(huge["error"]["kind"], "output_too_large", "not a trap: {huge}");
    let raised = call(160 << 20, &["--memory", "512MiB", "--max-output", "150MiB"]);
    assert_eq!(raised["error"]["kind"], "output_too_large", "over a raised limit too: {raised}");
}

#[test]
fn non_regular_wasm_entries_are_reported_as_skipped() {
    let plugins = plugin_dir(&["echo"]);
    let root = plugins.path();
    mkfifo(&root.join("fifo.wasm"));
    std::fs::create_dir(root.join("folder.wasm")).unwrap();
    std::os::unix::fs::symlink(root.join("nowhere.wasm"), root.join("dangling.wasm")).unwrap();
    std::os::unix::fs::symlink(root.join("loop.wasm"), root.join("loop.wasm")).unwrap();
    std::os::unix::fs::symlink("/dev/zero", root.join("zero.wasm")).unwrap();
    let dir = root.display().to_string();
    let output = toolhost_within(Duration::from_secs(30), Path::new("."), &["--plugins", &dir, "tools"], &[]);
    assert!(output.status.success(), "{}", stderr(&output));
    assert!(stdout(&output).contains("echo"), "the good plugin still loads: {}", stdout(&output));
    let warnings = stderr(&output);
    for (file, why) in [
        ("fifo.wasm", "not a regular file (it is a FIFO)"),
        ("folder.wasm", "not a regular file (it is a folder)"),
        ("dangling.wasm", "a symlink to a file that does not exist"),
        ("loop.wasm", "a symlink loop"),
        ("zero.wasm", "not a regular file (it is a character device)"),
    ] {
        let line = warnings.lines().find(|line| line.contains(file)).unwrap_or_else(|| panic!("{file}: {warnings}"));
        assert!(line.starts_with("warning: skipped ") && line.contains(why), "{file}: {line}");
    }
}

#[test]
fn a_manifest_that_is_a_fifo_or_dev_zero_gives_a_notice_and_never_hangs() {
    for (make, why) in [
        (mkfifo as fn(&Path), "it is a FIFO"),
        (|path: &Path| std::os::unix::fs::symlink("/dev/zero", path).unwrap(), "it is a character device"),
        (|path: &Path| std::fs::create_dir(path).unwrap(), "it is a folder"),
    ] {
        let plugins = plugin_dir(&["echo"]);
        make(&plugins.path().join("echo.toml"));
        let dir = plugins.path().display().to_string();
        for command in [&["tools"][..], &["call", "echo", r#"{"text":"hi"}"#]] {
            let mut args = vec!["--plugins", &dir];
            args.extend_from_slice(command);
            let output = toolhost_within(Duration::from_secs(30), Path::new("."), &args, &[]);
            assert!(output.status.success(), "{command:?}: {}", stderr(&output));
            let warnings = stderr(&output);
            assert!(
                warnings.contains("echo.toml") && warnings.contains(why),
                "{command:?}: the manifest problem is shown: {warnings}"
            );
        }
        let wasm = plugins.path().join("echo.wasm").display().to_string();
        let output = toolhost_within(Duration::from_secs(30), Path::new("."), &["inspect", &wasm], &[]);
        assert!(output.status.success(), "{}", stderr(&output));
        assert!(stdout(&output).contains(why), "{}", stdout(&output));
    }
}

#[test]
fn inspect_and_config_refuse_special_files_quickly_with_the_reason() {
    let dir = tempfile::tempdir().unwrap();
    let fifo = dir.path().join("plugin.wasm");
    mkfifo(&fifo);
    let zero = dir.path().join("zero.wasm");
    std::os::unix::fs::symlink("/dev/zero", &zero).unwrap();
    let folder = dir.path().join("folder.wasm");
    std::fs::create_dir(&folder).unwrap();
    for (path, why) in [
        (&fifo, "not a regular file (it is a FIFO)"),
        (&zero, "not a regular file (it is a character device)"),
        (&folder, "not a regular file (it is a folder)"),
    ] {
        let shown = path.display().to_string();
        let output = toolhost_within(Duration::from_secs(20), dir.path(), &["inspect", &shown], &[]);
        assert_eq!(output.status.code(), Some(1), "{shown}: {}", stderr(&output));
        let error = stderr(&output);
        assert!(error.contains(&format!("error: {shown}: could not read the file: {why}")), "{error}");
    }

    let config = dir.path().join("toolhost.toml");
    mkfifo(&config);
    let zero_config = dir.path().join("zero.toml");
    std::os::unix::fs::symlink("/dev/zero", &zero_config).unwrap();
    for (path, why) in [(&config, "it is a FIFO"), (&zero_config, "it is a character device")] {
        let shown = path.display().to_string();
        for args in [vec!["--config", &shown, "tools"], vec!["tools"]] {
            if args.len() == 1 && path != &config {
                continue;
            }
            let output = toolhost_within(Duration::from_secs(20), dir.path(), &args, &[]);
            assert_eq!(output.status.code(), Some(2), "{args:?}: {}", stderr(&output));
            let error = stderr(&output);
            assert!(error.contains("could not read config file") && error.contains(why), "{args:?}: {error}");
            assert_eq!(error.lines().count(), 1, "one line: {error}");
        }
    }
}

fn inspect_error(name: &str) -> String {
    let plugins = plugin_dir(&[name]);
    let wasm = plugins.path().join(format!("{name}.wasm")).display().to_string();
    let output = toolhost(Path::new("."), &["inspect", &wasm, "--json"], &[]);
    assert_eq!(output.status.code(), Some(1), "{name}: {}", stdout(&output));
    let found: Value = serde_json::from_str(&stdout(&output)).unwrap();
    let error = found["error"].as_str().unwrap().to_owned();
    // `tools` skips it with the same reason.
    let dir = plugins.path().display().to_string();
    let output = toolhost(Path::new("."), &["--plugins", &dir, "tools"], &[]);
    assert!(stderr(&output).contains(&format!("warning: skipped {wasm}: {error}")), "{}", stderr(&output));
    error
}

#[test]
fn a_missing_import_is_named_and_said_to_be_missing() {
    let error = inspect_error("imports_missing");
    assert!(
        error.contains("it imports `forecast` from `example:missing/weather`, which toolhost does not provide"),
        "{error}"
    );
    assert!(!error.contains("wrong type") && !error.contains("linker"), "{error}");
}

#[test]
fn a_remote_ref_says_remote_refs_are_not_allowed() {
    let error = inspect_error("remote_ref");
    assert!(error.contains("the input schema of tool `remote_ref`"), "{error}");
    assert!(error.contains("https://schemas.example.com/address.json"), "{error}");
    assert!(error.contains("remote `$ref`s are not allowed") && error.contains("inline"), "{error}");
    assert!(!error.contains("feature") && !error.contains("registry"), "no crate internals: {error}");
}

#[test]
fn a_pattern_only_a_backtracking_engine_runs_refuses_the_plugin() {
    let error = inspect_error("lookaround_pattern");
    assert!(error.contains("the input schema of tool `lookaround_pattern`"), "{error}");
    assert!(error.contains("^(?=.*[0-9]).{8,}$"), "names the pattern: {error}");
    assert!(error.contains("without lookaround"), "says what is wrong: {error}");
}

#[test]
fn a_catastrophic_pattern_is_matched_in_linear_time_and_blames_no_one_wrongly() {
    let plugins = plugin_dir(&["catastrophic_pattern"]);
    let dir = plugins.path().display().to_string();
    let hostile = json!({ "word": format!("{}!", "a".repeat(60)) }).to_string();
    let start = Instant::now();
    let output =
        toolhost(Path::new("."), &["--plugins", &dir, "call", "catastrophic_pattern", &hostile, "--json"], &[]);
    let report: Value = serde_json::from_str(&stdout(&output)).unwrap();
    assert_eq!(report["error"]["kind"], "invalid_arguments", "{report}");
    let message = report["error"]["message"].as_str().unwrap();
    assert!(message.contains("at `/word`") && message.contains("does not match"), "{message}");
    assert!(!message.contains("backtrack"), "{message}");
    assert!(start.elapsed() < Duration::from_secs(20), "took {:?}", start.elapsed());
    let fine = json!({ "word": "a".repeat(5_000) }).to_string();
    let output = toolhost(Path::new("."), &["--plugins", &dir, "call", "catastrophic_pattern", &fine], &[]);
    assert!(output.status.success(), "{}", stderr(&output));
}

#[test]
fn a_plugin_cannot_leave_a_symlink_in_a_read_write_folder() {
    let dir = tempfile::tempdir().unwrap();
    let out = dir.path().join("out");
    std::fs::create_dir(&out).unwrap();
    let plugins = plugin_dir(&["makes_symlink"]);
    std::fs::write(
        dir.path().join("toolhost.toml"),
        format!(
            "plugins_dir = {:?}\n[plugins.makes_symlink]\ndirs = [\"out:/out:rw\"]\n",
            plugins.path().display().to_string()
        ),
    )
    .unwrap();
    for target in ["/etc/passwd", "../toolhost.toml", "inside.txt"] {
        let args = json!({ "folder": "/out", "target": target, "link": "link" }).to_string();
        let output = toolhost(dir.path(), &["call", "makes_symlink", &args, "--json"], &[]);
        let report: Value =
            serde_json::from_str(&stdout(&output)).unwrap_or_else(|_| panic!("{}", head(&stderr(&output))));
        assert_eq!(report["error"]["kind"], "tool_failed", "{target}: {report}");
        assert!(report["error"]["message"].as_str().unwrap().contains("not-permitted"), "{target}: {report}");
        assert!(out.join("link").symlink_metadata().is_err(), "{target}: no symlink was left on the host");
    }
}

/// `toolhost serve` on stdio, driven as a hostile client would: each line
/// written, and every answer read back by a thread, by id.
struct StdioSession {
    child: std::process::Child,
    stdin: std::process::ChildStdin,
    answers: std::sync::mpsc::Receiver<Value>,
}

impl StdioSession {
    fn start(plugins: &Path, config: &Path) -> StdioSession {
        use std::io::BufRead;
        let mut child = std::process::Command::new(env!("CARGO_BIN_EXE_toolhost"))
            .args(["--plugins", &plugins.display().to_string(), "--config", &config.display().to_string()])
            .args(["serve", "--no-watch"])
            .env("TOOLHOST_CACHE_DIR", common::shared_cache())
            .stdin(std::process::Stdio::piped())
            .stdout(std::process::Stdio::piped())
            .stderr(std::process::Stdio::null())
            .spawn()
            .unwrap();
        let stdin = child.stdin.take().unwrap();
        let stdout = std::io::BufReader::new(child.stdout.take().unwrap());
        let (sender, answers) = std::sync::mpsc::channel();
        std::thread::spawn(move || {
            for line in stdout.lines() {
                let Ok(line) = line else { break };
                let answer: Value =
                    serde_json::from_str(&line).unwrap_or_else(|err| panic!("not JSON ({err}): {line}"));
                // A batch's answer is an array of answers.
                let answers = match answer {
                    Value::Array(answers) => answers,
                    one => vec![one],
                };
                // Notifications are not answers (`serve` says `tools/list_changed`
                // as its plugins finish loading).
                for answer in answers.into_iter().filter(|answer| answer.get("id").is_some()) {
                    if sender.send(answer).is_err() {
                        return;
                    }
                }
            }
        });
        let mut session = StdioSession { child, stdin, answers };
        session.send(
            &json!({"jsonrpc": "2.0", "id": 0, "method": "initialize", "params": {
            "protocolVersion": "2025-11-25", "capabilities": {}, "clientInfo": {"name": "hostile", "version": "1"}}})
            .to_string(),
        );
        assert!(session.next().get("result").is_some(), "initialized");
        session.send(r#"{"jsonrpc":"2.0","method":"notifications/initialized"}"#);
        session
    }

    fn send(&mut self, line: &str) {
        use std::io::Write;
        self.stdin.write_all(line.as_bytes()).unwrap();
        self.stdin.write_all(b"\n").unwrap();
        self.stdin.flush().unwrap();
    }

    fn next(&mut self) -> Value {
        self.answers.recv_timeout(Duration::from_secs(20)).expect("an answer within 20 s")
    }
}

impl Drop for StdioSession {
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}

#[test]
fn serve_on_stdio_answers_every_message_with_an_id_whatever_it_holds() {
    let plugins = common::plugin_dir(&["echo", "sleep_forever"]);
    let config = tempfile::NamedTempFile::new().unwrap();
    std::fs::write(config.path(), "[limits]\ntimeout = \"2s\"\n").unwrap();
    let mut session = StdioSession::start(plugins.path(), config.path());
    let long = format!(
        r#"{{"jsonrpc":"2.0","id":"long","method":"tools/call","params":{{"name":"echo","arguments":{{"text":"{}"}}}}}}"#,
        "x".repeat(17 << 20)
    );
    let deep = format!(
        r#"{{"jsonrpc":"2.0","id":"deep","method":"ping","params":{{"x":{}0{}}}}}"#,
        "[".repeat(10_000),
        "]".repeat(10_000)
    );
    // (line, the id its answer carries, the error code)
    let hostile: Vec<(String, Value, i64)> = vec![
        (long, json!("long"), -32600),
        (deep, json!("deep"), -32600),
        (r#"{"jsonrpc":"1.0","id":"v1","method":"ping"}"#.into(), json!("v1"), -32600),
        (r#"{"id":"none","method":"ping"}"#.into(), json!("none"), -32600),
        (r#"{"jsonrpc":"2.0","id":{"an":"object"},"method":"ping"}"#.into(), Value::Null, -32600),
        (r#"{"jsonrpc":"2.0","id":true,"method":"ping"}"#.into(), Value::Null, -32600),
        (r#"{"jsonrpc":"2.0","id":"params","method":"tools/list","params":[1,2]}"#.into(), json!("params"), -32602),
        (r#"{"jsonrpc":"2.0","id":"cut"#.into(), Value::Null, -32700),
        // A member named twice, which parsers read differently: refused, with the id.
        (r#"{"id":701,"id":701,"jsonrpc":"2.0","method":"ping"}"#.into(), json!(701), -32600),
        (r#"{"jsonrpc":"2.0","id":"twice","method":"ping","params":{"a":1,"a":2}}"#.into(), json!("twice"), -32600),
        // MCP's own method with params not of its shape: invalid params, not method not found.
        (r#"{"jsonrpc":"2.0","id":"shape","method":"tools/call","params":{"name":5}}"#.into(), json!("shape"), -32602),
        (
            r#"[{"jsonrpc":"2.0","id":"b1","method":"ping"},{"jsonrpc":"2.0","id":"b2","method":"ping"}]"#.into(),
            json!("b1"),
            -32600,
        ),
    ];
    for (line, id, code) in &hostile {
        session.send(line);
        let answer = session.next();
        assert_eq!((&answer["id"], &answer["error"]["code"]), (id, &json!(code)), "{:.100}: {answer}", line);
        if id == "b1" {
            let second = session.next();
            assert_eq!(second["id"], "b2", "one answer per request of a batch: {second}");
        }
    }

    // Two requests in flight with one id: the second is refused at once, the
    // first still answered.
    let slow = r#"{"jsonrpc":"2.0","id":50,"method":"tools/call","params":{"name":"sleep_forever","arguments":{}}}"#;
    session.send(slow);
    session.send(slow);
    let refused = session.next();
    assert_eq!((refused["id"].clone(), refused["error"]["code"].clone()), (json!(50), json!(-32600)), "{refused}");
    assert!(refused["error"]["message"].as_str().unwrap().contains("still in flight"), "{refused}");
    let first = session.next();
    assert_eq!(first["id"], 50, "{first}");
    assert_eq!(first["result"]["isError"], true, "the sleeper hit its 2 s timeout: {first}");

    // A cancelled call holds nothing up (it may still be answered: MCP says
    // it need not be, and a client never reuses an id in a session).
    session.send(&slow.replace(":50,", ":60,"));
    session.send(r#"{"jsonrpc":"2.0","method":"notifications/cancelled","params":{"requestId":60}}"#);
    session.send(r#"{"jsonrpc":"2.0","id":61,"method":"ping"}"#);
    let mut answers = vec![session.next()];
    if answers[0]["id"] == 60 {
        answers.push(session.next());
    }
    let pinged = answers.last().unwrap();
    assert_eq!((pinged["id"].clone(), pinged.get("error").is_none()), (json!(61), true), "{answers:?}");

    // And the session goes on.
    session.send(r#"{"jsonrpc":"2.0","id":"after","method":"tools/call","params":{"name":"echo","arguments":{"text":"still here"}}}"#);
    let after = session.next();
    assert_eq!(after["id"], "after");
    assert!(after.to_string().contains("still here"), "{after}");
}

/// Starts `toolhost ARGS` with its compile cache in `cache` and `config`,
/// its output piped.
fn spawn_compiling(cache: &Path, config: &Path, args: &[&str]) -> std::process::Child {
    Command::new(env!("CARGO_BIN_EXE_toolhost"))
        .arg("--config")
        .arg(config)
        .args(args)
        .env("TOOLHOST_CACHE_DIR", cache)
        .env_remove("TOOLHOST_PLUGINS")
        .env_remove("TOOLHOST_LOG")
        .stdin(Stdio::null())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .expect("run toolhost")
}

/// Runs `toolhost ARGS` with its compile cache in `cache` and `config`, and
/// returns its output, how long it took, and the most compile workers seen
/// alive at once (its child processes, sampled every millisecond or so).
fn toolhost_compiling(cache: &Path, config: &Path, args: &[&str]) -> (Output, Duration, usize) {
    let started = Instant::now();
    let mut child = spawn_compiling(cache, config, args);
    let tasks = format!("/proc/{}/task", child.id());
    let drain = |pipe: Option<std::process::ChildStdout>| {
        std::thread::spawn(move || {
            let mut text = Vec::new();
            std::io::Read::read_to_end(&mut pipe.unwrap(), &mut text).unwrap();
            text
        })
    };
    let out = drain(child.stdout.take());
    let mut err_pipe = child.stderr.take().unwrap();
    let err = std::thread::spawn(move || {
        let mut text = Vec::new();
        std::io::Read::read_to_end(&mut err_pipe, &mut text).unwrap();
        text
    });
    let mut most = 0;
    let status = loop {
        if let Some(status) = child.try_wait().unwrap() {
            break status;
        }
        let children: usize = std::fs::read_dir(&tasks)
            .map(|tasks| {
                tasks
                    .flatten()
                    .filter_map(|task| std::fs::read_to_string(task.path().join("children")).ok())
                    .map(|list| list.split_whitespace().count())
                    .sum()
            })
            .unwrap_or(0);
        most = most.max(children);
        assert!(started.elapsed() < Duration::from_secs(240), "toolhost {args:?} hangs");
        std::thread::sleep(Duration::from_millis(1));
    };
    let output = Output { status, stdout: out.join().unwrap(), stderr: err.join().unwrap() };
    (output, started.elapsed(), most)
}

/// Compiles `plugin` into `cache` (under the bounds in `config`).
fn compile_beforehand(cache: &Path, config: &Path, plugin: &str) {
    let alone = common::plugin_dir(&[plugin]);
    let (output, _, _) = toolhost_compiling(cache, config, &["--plugins", alone.path().to_str().unwrap(), "tools"]);
    assert!(output.status.success(), "{}", stderr(&output));
}

#[test]
fn a_compile_past_compile_timeout_is_stopped_and_the_plugin_skipped_naming_the_setting() {
    let plugins = common::plugin_dir(&["units", "hash"]);
    let dir = plugins.path().to_str().unwrap();
    let cache = tempfile::tempdir().unwrap();
    let config = tempfile::NamedTempFile::new().unwrap();
    // The small plugin is compiled first, so that only the large one meets
    // the bound however busy the machine is.
    compile_beforehand(cache.path(), config.path(), "hash");
    std::fs::write(config.path(), "compile_timeout = \"300ms\"\n").unwrap();

    let (output, bounded, _) = toolhost_compiling(cache.path(), config.path(), &["--plugins", dir, "tools"]);
    let (out, err) = (stdout(&output), stderr(&output));
    assert!(output.status.success(), "{err}");
    assert!(
        err.contains("units.wasm: compiling it took more than compile_timeout (300ms) of processor time")
            && err.contains("raise `compile_timeout`"),
        "{err}"
    );
    assert!(out.contains("sha256") && !out.contains("convert_units"), "{out}");
    // The refusal is remembered for these bounds: said again without compiling.
    let (again, _, workers) = toolhost_compiling(cache.path(), config.path(), &["--plugins", dir, "tools"]);
    assert!(stderr(&again).contains("compile_timeout (300ms)"), "{}", stderr(&again));
    assert_eq!(workers, 0, "nothing compiles on the second start");
    let inspect = toolhost_compiling(cache.path(), config.path(), &["inspect", &format!("{dir}/units.wasm")]).0;
    assert!(stderr(&inspect).contains("compile_timeout (300ms)"), "{}", stderr(&inspect));

    // Under a bound it fits, the same file is tried again and loads; the
    // bounded start took a fraction of that compile.
    std::fs::write(config.path(), "compile_timeout = \"5m\"\n").unwrap();
    let (output, whole, _) = toolhost_compiling(cache.path(), config.path(), &["--plugins", dir, "tools"]);
    assert!(output.status.success() && stdout(&output).contains("convert_units"), "{}", stderr(&output));
    assert!(bounded * 2 < whole, "the bounded start took {bounded:?}, the whole compile {whole:?}");
}

/// `toolhost ARGS…` with `cache` and `config`; once its first compile worker
/// shows, `act` is done to it (by pid). Returns the output, and whether the
/// worker was caught.
fn toolhost_with_worker(cache: &Path, config: &Path, args: &[&str], act: impl FnOnce(libc::pid_t)) -> (Output, bool) {
    let mut child = spawn_compiling(cache, config, args);
    let tasks = format!("/proc/{}/task", child.id());
    let started = Instant::now();
    let mut act = Some(act);
    while act.is_some() && started.elapsed() < Duration::from_secs(60) && child.try_wait().unwrap().is_none() {
        let worker = std::fs::read_dir(&tasks).ok().and_then(|tasks| {
            tasks
                .flatten()
                .filter_map(|task| std::fs::read_to_string(task.path().join("children")).ok())
                .find_map(|list| list.split_whitespace().next().and_then(|pid| pid.parse().ok()))
        });
        match worker {
            Some(pid) => (act.take().unwrap())(pid),
            None => std::thread::sleep(Duration::from_millis(1)),
        }
    }
    (child.wait_with_output().unwrap(), act.is_none())
}

/// In a container toolhost is often process 1 (`docker run IMAGE toolhost
/// serve`, a distroless image with the static binary): its compile workers
/// then have process 1 for a parent, which must not be taken for the sign
/// that their parent died. A cold-cache call compiles and answers there.
#[test]
fn toolhost_as_a_containers_first_process_compiles_with_a_cold_cache() {
    let plugins = plugin_dir(&["hash"]);
    let cache = tempfile::tempdir().unwrap();
    // A PID namespace of its own (a user namespace makes that allowed), where
    // the program `unshare` starts is process 1, with /proc of its own.
    let output = Command::new("unshare")
        .args(["--user", "--map-root-user", "--pid", "--fork", "--mount-proc", "sh", "-c"])
        .arg(r#"[ "$$" = 1 ] || { echo "sh is process $$, not 1" >&2; exit 1; }; exec "$0" "$@""#)
        .arg(env!("CARGO_BIN_EXE_toolhost"))
        .args(["--plugins", plugins.path().to_str().unwrap(), "call", "sha256", r#"{"text":"hello"}"#])
        .env("TOOLHOST_CACHE_DIR", cache.path())
        .env_remove("TOOLHOST_PLUGINS")
        .env_remove("TOOLHOST_CONFIG")
        .output()
        .expect("unshare (util-linux) runs");
    assert!(output.status.success(), "toolhost as process 1: {}", stderr(&output));
    assert_eq!(stdout(&output).trim(), "2cf24dba5fb0a30e26e83b2ac5b9e29e1b161e5c1fa7425e73043362938b9824");
    assert!(!stderr(&output).contains("compile worker"), "{}", stderr(&output));
}

/// Only what a plugin's bytes cause is held against it: a compile worker
/// ended by a signal someone else sent (`docker stop`, systemd, an operator's
/// `kill`) skips the plugin for this start only, and the next start compiles
/// it. Signals to toolhost's process group never reach the worker, which
/// runs in a group of its own.
#[test]
fn a_compile_ended_by_a_signal_is_tried_again_at_the_next_start() {
    let plugins = common::plugin_dir(&["markup", "hash"]);
    let dir = plugins.path().to_str().unwrap();
    let cache = tempfile::tempdir().unwrap();
    let config = tempfile::NamedTempFile::new().unwrap();
    compile_beforehand(cache.path(), config.path(), "hash");

    let terminate = |pid| {
        // SAFETY: a signal to a child process of the toolhost under test.
        unsafe { libc::kill(pid, libc::SIGTERM) };
    };
    let (output, caught) = toolhost_with_worker(cache.path(), config.path(), &["--plugins", dir, "tools"], terminate);
    assert!(caught, "the compile worker was never seen");
    let err = stderr(&output);
    assert!(output.status.success(), "{:?}: {err}", output.status);
    assert!(err.contains("markup.wasm") && err.contains("ended by signal 15") && err.contains("tried again"), "{err}");

    // The worker's group is not toolhost's: a signal to toolhost's group
    // (what a terminal's Ctrl-C or `docker stop` sends) is toolhost's to handle.
    let in_own_group = |pid: libc::pid_t| {
        // Caught between fork and exec, the worker may not have its group yet.
        let until = Instant::now() + Duration::from_secs(2);
        // SAFETY: reading process groups.
        let ours = unsafe { libc::getpgid(0) };
        let mut worker = ours;
        while worker == ours && Instant::now() < until {
            // SAFETY: as above.
            worker = unsafe { libc::getpgid(pid) };
            std::thread::sleep(Duration::from_millis(1));
        }
        assert!(worker > 0 && worker != ours, "the worker runs in a process group of its own");
        // SAFETY: as above.
        unsafe { libc::kill(pid, libc::SIGKILL) };
    };
    let (output, caught) =
        toolhost_with_worker(cache.path(), config.path(), &["--plugins", dir, "tools"], in_own_group);
    assert!(caught && output.status.success(), "{}", stderr(&output));
    assert!(stderr(&output).contains("ended by signal 9"), "{}", stderr(&output));

    // Nothing was remembered: the next start compiles markup and lists its tool.
    let (output, _, workers) = toolhost_compiling(cache.path(), config.path(), &["--plugins", dir, "tools"]);
    assert!(output.status.success() && stdout(&output).contains("markdown_table"), "{}", stderr(&output));
    assert_eq!(workers, 1, "markup compiled again");
}

/// `compile_timeout` counts processor time, not wall time: a worker held up
/// (here stopped outright, as on a machine too busy to run it) longer than
/// the bound, then let go, still compiles its plugin.
#[test]
fn a_busy_machine_never_costs_a_plugin_its_compile() {
    let plugins = common::plugin_dir(&["hash"]);
    let dir = plugins.path().to_str().unwrap();
    let cache = tempfile::tempdir().unwrap();
    let config = tempfile::NamedTempFile::new().unwrap();
    std::fs::write(config.path(), "compile_timeout = \"2s\"\n").unwrap();
    let stall = |pid| {
        // SAFETY: signals to a child process of the toolhost under test.
        unsafe { libc::kill(pid, libc::SIGSTOP) };
        std::thread::sleep(Duration::from_secs(4));
        // SAFETY: as above.
        unsafe { libc::kill(pid, libc::SIGCONT) };
    };
    let (output, caught) = toolhost_with_worker(cache.path(), config.path(), &["--plugins", dir, "tools"], stall);
    assert!(caught, "the compile worker was never seen");
    assert!(output.status.success() && stdout(&output).contains("sha256"), "{}", stderr(&output));
}

#[test]
fn a_compile_past_compile_memory_is_stopped_and_compiles_never_add_up() {
    let plugins = common::plugin_dir(&["units", "markup", "hash"]);
    let dir = plugins.path().to_str().unwrap();
    let config = tempfile::NamedTempFile::new().unwrap();
    let cache = tempfile::tempdir().unwrap();
    // The small plugin is compiled first (a compiler's threads take more
    // memory on a machine with more cores).
    compile_beforehand(cache.path(), config.path(), "hash");
    std::fs::write(config.path(), "compile_memory = \"64MiB\"\n").unwrap();
    let (output, _, _) = toolhost_compiling(cache.path(), config.path(), &["--plugins", dir, "tools"]);
    let err = stderr(&output);
    for plugin in ["units", "markup"] {
        assert!(err.contains(&format!("{plugin}.wasm: compiling it needed more than compile_memory (64MiB)")), "{err}");
    }
    assert!(stdout(&output).contains("sha256"), "{}", stdout(&output));
    assert!(!err.contains("panicked"), "{err}");

    // Each fits alone in 1GiB; loaded together they compile one at a time,
    // so their compilers never hold more than that between them.
    std::fs::write(config.path(), "compile_memory = \"1GiB\"\n").unwrap();
    let cache = tempfile::tempdir().unwrap();
    let (output, _, workers) = toolhost_compiling(cache.path(), config.path(), &["--plugins", dir, "tools"]);
    let out = stdout(&output);
    assert!(out.contains("convert_units") && out.contains("markdown_table"), "{}", stderr(&output));
    assert_eq!(workers, 1, "compile workers alive at once");

    std::fs::write(config.path(), "compile_memory = \"1MiB\"\n").unwrap();
    let refused = toolhost_compiling(cache.path(), config.path(), &["tools"]).0;
    assert!(!refused.status.success());
    assert!(stderr(&refused).contains("`compile_memory = \"1MiB\"` is under 16MiB"), "{}", stderr(&refused));
}

#[test]
fn text_a_plugin_wrote_reaches_no_terminal_with_escapes_or_direction_overrides() {
    let plugins = common::plugin_dir(&["echo"]);
    // A manifest's description, as a hostile author would write it: a
    // terminal title and clipboard write (OSC), a colour, a carriage return
    // that would overwrite the line, a bell, and a right-to-left override.
    std::fs::write(
        plugins.path().join("echo.toml"),
        "[tools.echo]\ndescription = \"Echoes.\\u001b]0;owned\\u0007\\u001b]52;c;ZXZpbA==\\u0007\\u001b[31m red\\r \
         over\\u202Edesrever\\u009b2J\\nSecond line.\"\n",
    )
    .unwrap();
    let dir = plugins.path().to_str().unwrap();
    let clean = |text: &str| {
        !text.chars().any(|c| (c.is_control() && c != '\n' && c != '\t') || ('\u{202A}'..='\u{202E}').contains(&c))
    };
    let tools = toolhost(Path::new("."), &["--plugins", dir, "tools"], &[]);
    assert!(tools.status.success(), "{}", stderr(&tools));
    let out = stdout(&tools);
    assert!(out.contains("Echoes.") && out.contains("Second line.") && out.contains("desrever"), "{out}");
    assert!(clean(&out) && clean(&stderr(&tools)), "{out:?}");
    let json = toolhost(Path::new("."), &["--plugins", dir, "tools", "--json"], &[]);
    let listed: Value = serde_json::from_str(&stdout(&json)).unwrap();
    assert!(clean(listed[0]["description"].as_str().unwrap()), "{listed}");
    let inspect = toolhost(Path::new("."), &["inspect", &format!("{dir}/echo.wasm")], &[]);
    assert!(stdout(&inspect).contains("  tools"), "{}", stderr(&inspect));
    assert!(clean(&stdout(&inspect)) && clean(&stderr(&inspect)), "{:?}", stdout(&inspect));
}

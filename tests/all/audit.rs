//! Accountable calls through the real binary and real plugins: the signed,
//! chained audit log (`[audit]`) and `toolhost audit verify` catching an
//! edited, removed, reordered or cut log and a wrong key; and `[[hooks]]`
//! that deny, rewrite (checked against the schema again), hang, crash and
//! print garbage, applied alike on `call`, `serve` (stdio and HTTP) and `run`.

use crate::common;
use common::model_server::{ModelServer, Script};
use common::{plugin_dir, stderr, stdout, toolhost};
use serde_json::{Value, json};
use std::io::{BufRead, BufReader, Read, Write};
use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};
use std::time::{Duration, Instant};

/// The hook every test uses: it decides by what the arguments say.
const HOOK: &str = r#"#!/bin/sh
input=$(cat)
case "$input" in
  *deny-me*) echo '{"decision":"deny","reason":"no secrets today"}' ;;
  *rewrite-bad*) echo '{"decision":"rewrite","arguments":{"nope":1}}' ;;
  *rewrite-me*) echo '{"decision":"rewrite","arguments":{"text":"abc"}}' ;;
  *hang-me*) sleep 30 ;;
  *crash-me*) echo boom >&2; exit 3 ;;
  *garbage*) echo hello there ;;
  *ask-me*) echo '{"decision":"ask","reason":"is this fine?"}' ;;
  *twice-me*) echo '{"decision":"deny","reason":"x","decision":"allow"}' ;;
  *) echo '{"decision":"allow"}' ;;
esac
"#;

/// A folder with a key pair (made by `toolhost audit keygen`), the hook, and
/// a config logging to `audit.log` with the hook before every call.
struct Setup {
    dir: tempfile::TempDir,
    plugins: tempfile::TempDir,
}

/// What `toolhost serve` writes on stdout, a line at a time.
/// A server's answers, one line each, without its notifications (`serve`
/// says `tools/list_changed` as its plugins finish loading).
type Answers =
    std::iter::Filter<std::io::Lines<BufReader<std::process::ChildStdout>>, fn(&std::io::Result<String>) -> bool>;

fn not_a_notification(line: &std::io::Result<String>) -> bool {
    !line.as_ref().is_ok_and(|line| line.contains(r#""method":"notifications/"#))
}

impl Setup {
    /// `toolhost serve` over stdio on `plugins`, in this setup's folder,
    /// initialized with `initialize`: the process, its stdin and its
    /// stdout's lines.
    fn serve_stdio(&self, plugins: &str, initialize: &str) -> (std::process::Child, std::process::ChildStdin, Answers) {
        let mut child = Command::new(env!("CARGO_BIN_EXE_toolhost"))
            .args(["--plugins", plugins, "serve"])
            .current_dir(self.dir.path())
            .env("TOOLHOST_CACHE_DIR", common::shared_cache())
            .stdin(Stdio::piped())
            .stdout(Stdio::piped())
            .stderr(Stdio::inherit())
            .spawn()
            .unwrap();
        let mut stdin = child.stdin.take().unwrap();
        let mut answers = BufReader::new(child.stdout.take().unwrap())
            .lines()
            .filter(not_a_notification as fn(&std::io::Result<String>) -> bool);
        writeln!(stdin, "{initialize}").unwrap();
        let _ = answers.next().unwrap().unwrap();
        writeln!(stdin, "{INITIALIZED}").unwrap();
        (child, stdin, answers)
    }
    fn new(extra: &str) -> Setup {
        let dir = tempfile::tempdir().unwrap();
        let keys = dir.path().join("keys");
        std::fs::create_dir(&keys).unwrap();
        let output = toolhost(dir.path(), &["audit", "keygen", "--out", "keys"]);
        assert!(output.status.success(), "{}", stderr(&output));
        assert!(stdout(&output).contains("audit.key"), "{}", stdout(&output));
        let hook = dir.path().join("hook.sh");
        std::fs::write(&hook, HOOK).unwrap();
        std::fs::set_permissions(&hook, std::os::unix::fs::PermissionsExt::from_mode(0o755)).unwrap();
        let config = format!(
            r#"
[audit]
file = "audit.log"
key = "keys/audit.key"

[[hooks]]
name = "policy"
when = "before"
command = ["./hook.sh"]
timeout = "1s"
{extra}
"#
        );
        std::fs::write(dir.path().join("toolhost.toml"), config).unwrap();
        Setup { dir, plugins: plugin_dir(&["hash"]) }
    }

    fn path(&self, name: &str) -> PathBuf {
        self.dir.path().join(name)
    }

    fn call(&self, tool: &str, arguments: &str) -> std::process::Output {
        let plugins = self.plugins.path().display().to_string();
        toolhost(self.dir.path(), &["--plugins", &plugins, "call", tool, arguments])
    }

    fn verify(&self, file: &str, key: &str) -> std::process::Output {
        toolhost(self.dir.path(), &["audit", "verify", file, "--key", key])
    }

    /// The log's lines for calls (and `lost` lines), without the signed tree heads.
    fn lines(&self) -> Vec<Value> {
        self.all_lines().into_iter().filter(|line| line["kind"] != "head").collect()
    }

    /// Waits for the log to end in a signed tree head (a running server
    /// signs its lines within `batch_interval`), so that killing it leaves
    /// nothing uncovered.
    fn wait_for_head(&self) {
        let started = Instant::now();
        while self.all_lines().last().is_none_or(|line| line["kind"] != "head") {
            assert!(started.elapsed() < Duration::from_secs(30), "no tree head came: {:?}", self.all_lines());
            std::thread::sleep(Duration::from_millis(50));
        }
    }

    /// Every line of the log, tree heads too.
    fn all_lines(&self) -> Vec<Value> {
        let text = std::fs::read_to_string(self.path("audit.log")).unwrap_or_default();
        text.lines().map(|line| serde_json::from_str(line).unwrap()).collect()
    }

    /// `[audit] batch = 1`: every line signed alone, as before batches.
    fn per_line(self) -> Setup {
        let config = std::fs::read_to_string(self.path("toolhost.toml")).unwrap();
        let config = config.replace("key = \"keys/audit.key\"\n", "key = \"keys/audit.key\"\nbatch = 1\n");
        std::fs::write(self.path("toolhost.toml"), config).unwrap();
        self
    }

    /// Waits for the log to hold `count` lines (a server writes them a moment after answering).
    fn wait_for_lines(&self, count: usize) -> Vec<Value> {
        let started = Instant::now();
        loop {
            let lines = self.lines();
            if lines.len() >= count || started.elapsed() > Duration::from_secs(30) {
                return lines;
            }
            std::thread::sleep(Duration::from_millis(50));
        }
    }
}

#[test]
fn every_call_is_logged_signed_and_chained_and_verify_finds_each_break() {
    // Line by line (`batch = 1`, and every log written before batches);
    // batches: `batched_lines_are_covered_by_signed_heads_and_verify_refuses_each_break`.
    let setup = Setup::new("").per_line();
    for text in ["one", "two", "three"] {
        let output = setup.call("sha256", &json!({ "text": text }).to_string());
        assert!(output.status.success(), "{}", stderr(&output));
    }
    let output = setup.call("sha256", r#"{"txt":"no"}"#);
    assert!(!output.status.success());
    let lines = setup.lines();
    assert_eq!(lines.len(), 4, "{lines:?}");
    let first = &lines[0];
    assert_eq!(first["seq"], 1);
    assert_eq!(first["prev"], "0".repeat(64));
    assert_eq!(first["tool"], "sha256");
    assert_eq!(first["plugin"], "hash");
    assert_eq!(first["caller"]["path"], "call");
    assert_eq!(first["outcome"]["ok"], true);
    assert_eq!(first["hooks"][0]["decision"], "allow");
    let sha = common::sha256_hex(&std::fs::read(common::plugin("hash")).unwrap());
    assert_eq!(first["component"], format!("sha256:{sha}"));
    // The canonical arguments' digest, and not the arguments themselves (not configured).
    assert_eq!(first["arguments_sha256"], common::sha256_hex(br#"{"text":"one"}"#));
    assert!(first.get("arguments").is_none());
    assert_eq!(lines[3]["outcome"]["error"], "invalid_arguments");
    assert_eq!(lines[1]["prev"], common::sha256_hex(first_line(&setup.path("audit.log")).as_bytes()));

    let output = setup.verify("audit.log", "keys/audit.pub");
    assert!(output.status.success(), "{}", stderr(&output));
    assert!(stdout(&output).contains("intact, 4 line(s), seq 1 to 4"), "{}", stdout(&output));

    let original = std::fs::read_to_string(setup.path("audit.log")).unwrap();
    let lines: Vec<&str> = original.lines().collect();
    let broken = |name: &str, text: String, says: &str, line: usize| {
        std::fs::write(setup.path(name), text).unwrap();
        let output = setup.verify(name, "keys/audit.pub");
        assert_eq!(output.status.code(), Some(1), "{name}: {}", stdout(&output));
        let err = stderr(&output);
        assert!(err.contains(&format!("{name}:{line}: ")) && err.contains(says), "{name}: {err}");
        assert_eq!(err.lines().count(), 1, "{err}");
    };
    let joined = |lines: &[&str]| lines.iter().map(|line| format!("{line}\n")).collect::<String>();
    // An edited outcome.
    let edited = lines[1].replace(r#""ok":true"#, r#""ok":false"#);
    assert_ne!(edited, lines[1]);
    broken("edited.log", joined(&[lines[0], &edited, lines[2], lines[3]]), "signature does not match", 2);
    // An edit that changes the form only.
    let spaced = lines[2].replacen(':', ": ", 1);
    broken("spaced.log", joined(&[lines[0], lines[1], &spaced, lines[3]]), "not in the form toolhost writes", 3);
    // A line removed.
    broken("removed.log", joined(&[lines[0], lines[2], lines[3]]), "seq 2 is missing", 2);
    // Two lines swapped.
    broken("swapped.log", joined(&[lines[0], lines[1], lines[3], lines[2]]), "seq 3 is missing", 3);
    // A line repeated.
    broken("repeated.log", joined(&[lines[0], lines[1], lines[1], lines[2]]), "reordered or repeated", 3);
    // Cut short in the middle of the last line.
    let cut = &original[..original.len() - 20];
    broken("cut.log", cut.to_owned(), "cut short", 4);
    // Garbage appended.
    broken("garbage.log", format!("{original}hello\n"), "not a JSON line", 5);

    // Another key refuses every line.
    let other = setup.path("other");
    std::fs::create_dir(&other).unwrap();
    assert!(toolhost(setup.dir.path(), &["audit", "keygen", "--out", "other"]).status.success());
    let output = setup.verify("audit.log", "other/audit.pub");
    assert_eq!(output.status.code(), Some(1));
    assert!(stderr(&output).contains("audit.log:1: signed by the key sha256:"), "{}", stderr(&output));
    // keygen never replaces a key.
    let output = toolhost(setup.dir.path(), &["audit", "keygen", "--out", "keys"]);
    assert!(!output.status.success() && stderr(&output).contains("already exists"), "{}", stderr(&output));
}

#[test]
fn the_chain_continues_across_restarts_and_rotation() {
    let setup = Setup::new("");
    std::fs::write(
        setup.path("toolhost.toml"),
        "[audit]\nfile = \"audit.log\"\nkey = \"keys/audit.key\"\nrotate_size = \"4KiB\"\ninclude_arguments = true\n",
    )
    .unwrap();
    for index in 0..12 {
        let output = setup.call("sha256", &json!({ "text": format!("call {index} {}", "x".repeat(300)) }).to_string());
        assert!(output.status.success(), "{}", stderr(&output));
    }
    let mut files: Vec<String> = std::fs::read_dir(setup.dir.path())
        .unwrap()
        .map(|entry| entry.unwrap().file_name().to_string_lossy().into_owned())
        .filter(|name| name.starts_with("audit.log."))
        .collect();
    assert!(!files.is_empty(), "no rotation at 4KiB");
    files.sort_by_key(|name| name.rsplit('.').next().unwrap().parse::<u32>().unwrap());
    files.push("audit.log".to_owned());
    let mut args = vec!["audit", "verify"];
    args.extend(files.iter().map(String::as_str));
    args.extend(["--key", "keys/audit.pub"]);
    let output = toolhost(setup.dir.path(), &args);
    assert!(output.status.success(), "{}", stderr(&output));
    // Each `toolhost call` signs the head over its line as it ends.
    let said = stdout(&output);
    assert!(said.contains("intact, 24 line(s), seq 1 to 24"), "{said}");
    assert!(said.contains("every batched line is under one of 12 signed tree head(s)"), "{said}");
    // The newest file alone continues the chain.
    let output = setup.verify("audit.log", "keys/audit.pub");
    assert!(stdout(&output).contains("continuing an earlier file"), "{}{}", stdout(&output), stderr(&output));
    // Leaving out a middle file is a break.
    if files.len() > 2 {
        let output =
            toolhost(setup.dir.path(), &["audit", "verify", &files[0], "audit.log", "--key", "keys/audit.pub"]);
        assert_eq!(output.status.code(), Some(1), "{}", stdout(&output));
        assert!(stderr(&output).contains("missing"), "{}", stderr(&output));
    }
    let last = setup.lines().pop().unwrap();
    assert_eq!(last["arguments"]["text"].as_str().unwrap().split(' ').nth(1), Some("11"));
}

#[test]
fn hooks_deny_rewrite_and_fail_closed_on_call() {
    let setup = Setup::new("");
    // Denied: the reason reaches the caller.
    let output = setup.call("sha256", r#"{"text":"deny-me"}"#);
    assert_eq!(output.status.code(), Some(1));
    assert!(
        stderr(&output).contains("refused by the operator's hook: no secrets today (hook `policy`)"),
        "{}",
        stderr(&output)
    );
    // Rewritten: the call runs on the hook's arguments.
    let output = setup.call("sha256", r#"{"text":"rewrite-me"}"#);
    assert!(output.status.success(), "{}", stderr(&output));
    assert!(stdout(&output).contains("ba7816bf8f01cfea414140de5dae2223b00361a396177a9cb410ff61f20015ad"));
    // A rewrite the schema refuses is refused like any bad arguments.
    let output = setup.call("sha256", r#"{"text":"rewrite-bad"}"#);
    assert_eq!(output.status.code(), Some(1));
    assert!(stderr(&output).contains("invalid arguments"), "{}", stderr(&output));
    // A hook that hangs is killed at its timeout, and the call denied.
    let started = Instant::now();
    let output = setup.call("sha256", r#"{"text":"hang-me"}"#);
    assert_eq!(output.status.code(), Some(1));
    assert!(stderr(&output).contains("did not answer within 1000ms and was killed"), "{}", stderr(&output));
    assert!(started.elapsed() < Duration::from_secs(25), "{:?}", started.elapsed());
    // One that crashes, and one that prints garbage: denied, saying why.
    let output = setup.call("sha256", r#"{"text":"crash-me"}"#);
    assert!(
        stderr(&output).contains("the hook `policy` failed: `./hook.sh` exited with status 3: boom"),
        "{}",
        stderr(&output)
    );
    let output = setup.call("sha256", r#"{"text":"garbage"}"#);
    assert!(stderr(&output).contains("not a JSON decision: `hello there`"), "{}", stderr(&output));
    assert_eq!(output.status.code(), Some(1));
    // An answer naming `decision` twice (deny, then allow) is no decision: denied, saying why.
    let output = setup.call("sha256", r#"{"text":"twice-me"}"#);
    assert_eq!(output.status.code(), Some(1), "{}", stdout(&output));
    assert!(
        stderr(&output)
            .contains("the hook `policy` failed: answered JSON in which the member `decision` appears twice"),
        "{}",
        stderr(&output)
    );

    let lines = setup.lines();
    let decisions: Vec<&str> = lines.iter().map(|line| line["hooks"][0]["decision"].as_str().unwrap()).collect();
    assert_eq!(decisions, ["deny", "rewrite", "rewrite", "error", "error", "error", "error"]);
    assert_eq!(lines[0]["outcome"]["error"], "denied");
    assert_eq!(lines[1]["arguments_sha256"], common::sha256_hex(br#"{"text":"abc"}"#));
    assert_eq!(lines[1]["outcome"]["ok"], true);
    assert_eq!(lines[2]["outcome"]["error"], "invalid_arguments");
    assert!(setup.verify("audit.log", "keys/audit.pub").status.success());
}

#[test]
fn a_hook_may_fail_open_and_an_after_hook_withholds_a_result() {
    let setup = Setup::new(
        r#"on_error = "allow"

[[hooks]]
name = "outputs"
when = "after"
command = ["sh", "-c", "grep -q a9993e364706816aba3e25717850c26c9cd0d89d && echo '{\"decision\":\"deny\",\"reason\":\"that digest is private\"}' || echo '{\"decision\":\"allow\"}'"]
"#,
    );
    let output = setup.call("sha256", r#"{"text":"crash-me"}"#);
    assert!(output.status.success(), "{}", stderr(&output));
    let output = setup.call("hash", r#"{"text":"abc","algorithm":"sha1"}"#);
    assert_eq!(output.status.code(), Some(1));
    assert!(
        stderr(&output).contains("that digest is private (hook `outputs`; the result was withheld)"),
        "{}",
        stderr(&output)
    );
    assert!(!stdout(&output).contains("a9993e"), "{}", stdout(&output));
    let lines = setup.lines();
    assert_eq!(lines[0]["hooks"][0]["decision"], "error");
    assert_eq!(lines[0]["outcome"]["ok"], true);
    assert_eq!(
        lines[1]["hooks"][1],
        json!({"hook": "outputs", "when": "after", "decision": "deny", "reason": "that digest is private"})
    );
}

#[test]
fn bad_audit_and_hook_settings_are_refused_in_one_line() {
    for (config, says) in [
        ("[audit]\nfile = \"a.log\"\n", "needs `key = \"PATH\"`"),
        ("[audit]\nfile = \"a.log\"\nkey = \"missing.key\"\n", "could not use key file"),
        ("[audit]\nstdout = true\nkey = \"k\"\ncheckpoint = \"c\"\n", "`checkpoint` needs `file`"),
        ("[audit]\nfile = \"a.log\"\nkey = \"k\"\ncheckpoint = \"a.log\"\n", "another file than the log"),
        ("[audit]\nfile = \"a.log\"\nstdout = true\nkey = \"k\"\n", "not both"),
        ("[[hooks]]\nwhen = \"before\"\n", "exactly one of `command = [...]` and `url`"),
        ("[[hooks]]\nwhen = \"before\"\nurl = \"http://example.com/\"\n", "on this machine"),
        ("[[hooks]]\nwhen = \"during\"\ncommand = [\"true\"]\n", "unknown variant `during`"),
        // A policy file names each setting once (TOML's own rule, kept).
        ("[[hooks]]\nwhen = \"before\"\nwhen = \"after\"\ncommand = [\"true\"]\n", "duplicate key"),
    ] {
        let dir = tempfile::tempdir().unwrap();
        std::fs::write(dir.path().join("toolhost.toml"), config).unwrap();
        let plugins = plugin_dir(&["hash"]);
        let output =
            toolhost(dir.path(), &["--plugins", &plugins.path().display().to_string(), "call", "sha256", "{}"]);
        assert_eq!(output.status.code(), Some(2), "{config}");
        assert!(stderr(&output).contains(says), "{config}: {}", stderr(&output));
    }
}

/// The first line of a file, without its line break.
fn first_line(path: &Path) -> String {
    std::fs::read_to_string(path).unwrap().lines().next().unwrap().to_owned()
}

const CALL_DENIED: &str =
    r#"{"jsonrpc":"2.0","id":2,"method":"tools/call","params":{"name":"sha256","arguments":{"text":"deny-me"}}}"#;
const INITIALIZE: &str = r#"{"jsonrpc":"2.0","id":1,"method":"initialize","params":{"protocolVersion":"2025-11-25","capabilities":{},"clientInfo":{"name":"audit-test","version":"1"}}}"#;
const INITIALIZED: &str = r#"{"jsonrpc":"2.0","method":"notifications/initialized"}"#;

#[test]
fn the_same_hook_applies_on_serve_over_stdio_and_http() {
    let setup = Setup::new("");
    let plugins = setup.plugins.path().display().to_string();
    // stdio
    let (mut child, mut stdin, mut stdout_lines) = setup.serve_stdio(&plugins, INITIALIZE);
    writeln!(stdin, "{CALL_DENIED}").unwrap();
    let answer: Value = serde_json::from_str(&stdout_lines.next().unwrap().unwrap()).unwrap();
    assert_eq!(answer["id"], 2, "{answer}");
    assert_eq!(answer["result"]["isError"], true, "{answer}");
    assert!(answer["result"]["content"][0]["text"].as_str().unwrap().contains("no secrets today"), "{answer}");
    drop(stdin);
    assert!(child.wait().unwrap().success());
    let lines = setup.wait_for_lines(1);
    assert_eq!(lines[0]["caller"]["path"], "serve");
    assert_eq!(lines[0]["caller"]["client"], "audit-test");
    assert_eq!(lines[0]["caller"]["session"], "stdio");
    assert_eq!(lines[0]["hooks"][0]["decision"], "deny");

    // Streamable HTTP
    let mut child = Command::new(env!("CARGO_BIN_EXE_toolhost"))
        .args(["--plugins", &plugins, "serve", "--http", "127.0.0.1:0"])
        .current_dir(setup.dir.path())
        .env("TOOLHOST_CACHE_DIR", common::shared_cache())
        .stdin(Stdio::null())
        .stdout(Stdio::null())
        .stderr(Stdio::piped())
        .spawn()
        .unwrap();
    let mut errors = BufReader::new(child.stderr.take().unwrap()).lines();
    let url = loop {
        let line = errors.next().expect("serve --http ended").unwrap();
        if let Some(url) = line.strip_prefix("toolhost: serving MCP at ") {
            break url.to_owned();
        }
    };
    std::thread::spawn(move || errors.for_each(drop));
    let address = url.trim_start_matches("http://").trim_end_matches("/mcp").to_owned();
    let (_, response) = http_post(&address, "", INITIALIZE);
    let session = response
        .lines()
        .find_map(|line| line.strip_prefix("mcp-session-id: ").or_else(|| line.strip_prefix("Mcp-Session-Id: ")))
        .unwrap_or_else(|| panic!("no session in {response}"))
        .trim()
        .to_owned();
    let headers = format!("Mcp-Session-Id: {session}\r\nMCP-Protocol-Version: 2025-11-25\r\n");
    let (status, _) = http_post(&address, &headers, INITIALIZED);
    assert_eq!(status, 202);
    let (status, response) = http_post(&address, &headers, CALL_DENIED);
    assert_eq!(status, 200, "{response}");
    assert!(response.contains("no secrets today (hook `policy`)"), "{response}");
    let lines = setup.wait_for_lines(2);
    setup.wait_for_head();
    let _ = child.kill();
    let _ = child.wait();
    assert_eq!(lines[1]["caller"]["path"], "serve-http");
    assert_eq!(lines[1]["caller"]["session"], format!("http:{session}"));
    assert_eq!(lines[1]["outcome"]["error"], "denied");
    let output = setup.verify("audit.log", "keys/audit.pub");
    assert!(output.status.success(), "{}", stderr(&output));
}

/// One HTTP/1.1 POST to /mcp; the status and the whole response.
fn http_post(address: &str, headers: &str, body: &str) -> (u16, String) {
    let mut stream = std::net::TcpStream::connect(address).unwrap();
    stream.set_read_timeout(Some(Duration::from_secs(60))).unwrap();
    let request = format!(
        "POST /mcp HTTP/1.1\r\nHost: {address}\r\nContent-Type: application/json\r\nAccept: application/json, \
         text/event-stream\r\n{headers}Content-Length: {}\r\nConnection: close\r\n\r\n{body}",
        body.len()
    );
    stream.write_all(request.as_bytes()).unwrap();
    let mut response = Vec::new();
    let _ = stream.read_to_end(&mut response);
    let text = String::from_utf8_lossy(&response).into_owned();
    let status = text.split(' ').nth(1).and_then(|code| code.parse().ok()).unwrap_or(0);
    (status, text)
}

#[test]
fn the_same_hook_applies_to_a_models_call_in_run() {
    let setup = Setup::new("");
    let script = Script { anthropic: false, stream: false };
    let server = ModelServer::start(vec![
        script.calls(&[("call_1", "sha256", r#"{"text":"deny-me"}"#)]),
        script.text("It was refused."),
    ]);
    let output = script
        .run_command(&server, setup.plugins.path(), "hash it")
        .current_dir(setup.dir.path())
        .env("TOOLHOST_CONFIG", setup.path("toolhost.toml"))
        .output()
        .unwrap();
    assert!(output.status.success(), "{}", stderr(&output));
    let requests = server.requests();
    let results = script.results(&requests[1]);
    assert_eq!(results.len(), 1, "{results:?}");
    assert!(results[0].1.contains("no secrets today"), "{results:?}");
    let lines = setup.lines();
    assert_eq!(lines[0]["caller"]["path"], "agent");
    assert_eq!(lines[0]["hooks"][0]["decision"], "deny");
}

#[test]
fn an_ask_with_no_one_to_ask_is_denied() {
    let setup = Setup::new("");
    let output = setup.call("sha256", r#"{"text":"ask-me"}"#);
    assert_eq!(output.status.code(), Some(1), "{}", stdout(&output));
    assert!(stderr(&output).contains("is this fine? (hook `policy` asked;"), "{}", stderr(&output));
    let lines = setup.lines();
    assert_eq!(lines[0]["hooks"][0]["decision"], "ask");
    assert_eq!(lines[0]["outcome"]["error"], "denied");
}

#[test]
fn a_url_hook_gets_the_call_and_its_answer_decides() {
    let listener = std::net::TcpListener::bind("127.0.0.1:0").unwrap();
    let port = listener.local_addr().unwrap().port();
    let server = std::thread::spawn(move || {
        let mut bodies = Vec::new();
        let answers = [
            r#"{"decision":"deny","reason":"the endpoint said no"}"#,
            "not json at all",
            // A repeated member: serde_json alone would read the last, `allow`.
            r#"{"decision":"deny","reason":"x","decision":"allow"}"#,
        ];
        for answer in answers {
            let (mut stream, _) = listener.accept().unwrap();
            stream.set_read_timeout(Some(Duration::from_secs(30))).unwrap();
            let mut request = Vec::new();
            let mut buffer = [0u8; 4096];
            // Headers, then the body by its Content-Length.
            loop {
                let read = stream.read(&mut buffer).unwrap();
                request.extend_from_slice(&buffer[..read]);
                let text = String::from_utf8_lossy(&request).into_owned();
                if let Some((head, body)) = text.split_once("\r\n\r\n") {
                    let length: usize = head
                        .lines()
                        .find_map(|line| line.to_ascii_lowercase().strip_prefix("content-length: ").map(str::to_owned))
                        .and_then(|value| value.trim().parse().ok())
                        .unwrap_or(0);
                    if body.len() >= length {
                        bodies.push(body.to_owned());
                        break;
                    }
                }
                if read == 0 {
                    break;
                }
            }
            let response = format!(
                "HTTP/1.1 200 OK\r\nContent-Type: application/json\r\nContent-Length: {}\r\nConnection: close\r\n\r\n{answer}",
                answer.len()
            );
            stream.write_all(response.as_bytes()).unwrap();
        }
        bodies
    });
    let setup = Setup::new("");
    std::fs::write(
        setup.path("toolhost.toml"),
        format!("[[hooks]]\nname = \"remote\"\nwhen = \"before\"\nurl = \"http://127.0.0.1:{port}/decide\"\n"),
    )
    .unwrap();
    let output = setup.call("sha256", r#"{"text":"anything"}"#);
    assert_eq!(output.status.code(), Some(1));
    assert!(stderr(&output).contains("the endpoint said no (hook `remote`)"), "{}", stderr(&output));
    let output = setup.call("sha256", r#"{"text":"anything"}"#);
    assert!(
        stderr(&output).contains("the hook `remote` failed: answered something that is not a JSON decision"),
        "{}",
        stderr(&output)
    );
    let output = setup.call("sha256", r#"{"text":"anything"}"#);
    assert_eq!(output.status.code(), Some(1), "a repeated member fails closed: {}", stdout(&output));
    assert!(
        stderr(&output)
            .contains("the hook `remote` failed: answered JSON in which the member `decision` appears twice"),
        "{}",
        stderr(&output)
    );
    let bodies = server.join().unwrap();
    let first: Value = serde_json::from_str(&bodies[0]).unwrap();
    assert_eq!(first["when"], "before");
    assert_eq!(first["tool"], "sha256");
    assert_eq!(first["arguments"], json!({"text": "anything"}));
    // Hooks without [audit]: no log is written.
    assert!(!setup.path("audit.log").exists());
}

#[test]
fn included_arguments_are_scrubbed_of_the_plugins_secrets() {
    let setup = Setup::new("");
    std::fs::write(
        setup.path("toolhost.toml"),
        "[audit]\nfile = \"audit.log\"\nkey = \"keys/audit.key\"\ninclude_arguments = true\n\n[plugins.hash]\nsecrets = [\"AUDIT_TEST_SECRET\"]\n",
    )
    .unwrap();
    let plugins = setup.plugins.path().display().to_string();
    let output = common::toolhost_with_env(
        setup.dir.path(),
        &["--plugins", &plugins, "call", "sha256", r#"{"text":"token s3cr3t-value-0123456789 here"}"#],
        &[("AUDIT_TEST_SECRET", "s3cr3t-value-0123456789")],
    );
    assert!(output.status.success(), "{}", stderr(&output));
    let log = std::fs::read_to_string(setup.path("audit.log")).unwrap();
    assert!(!log.contains("s3cr3t-value-0123456789"), "{log}");
    let lines = setup.lines();
    assert!(lines[0]["arguments"]["text"].as_str().unwrap().starts_with("token "), "{}", lines[0]);
    // The digest is of what was called, not of what is shown.
    assert_eq!(lines[0]["arguments_sha256"], common::sha256_hex(br#"{"text":"token s3cr3t-value-0123456789 here"}"#));
}

#[test]
fn resource_reads_and_prompts_over_serve_are_audited() {
    let mut setup = Setup::new("");
    setup.plugins = plugin_dir(&["content_kinds"]);
    let plugins = setup.plugins.path().display().to_string();
    let (mut child, mut stdin, mut answers) = setup.serve_stdio(&plugins, INITIALIZE);
    writeln!(stdin, r#"{{"jsonrpc":"2.0","id":2,"method":"resources/read","params":{{"uri":"test://static-text"}}}}"#)
        .unwrap();
    let read: Value = serde_json::from_str(&answers.next().unwrap().unwrap()).unwrap();
    assert!(read["result"]["contents"].is_array(), "{read}");
    writeln!(stdin, r#"{{"jsonrpc":"2.0","id":3,"method":"prompts/get","params":{{"name":"test_simple_prompt"}}}}"#)
        .unwrap();
    let prompt: Value = serde_json::from_str(&answers.next().unwrap().unwrap()).unwrap();
    assert!(prompt["result"]["messages"].is_array(), "{prompt}");
    drop(stdin);
    assert!(child.wait().unwrap().success());
    let lines = setup.wait_for_lines(2);
    assert_eq!(lines[0]["kind"], "resource");
    assert_eq!(lines[0]["resource"], "test://static-text");
    assert_eq!(lines[0]["plugin"], "content_kinds");
    assert_eq!(lines[0]["outcome"]["ok"], true);
    assert_eq!(lines[0]["caller"]["client"], "audit-test");
    assert_eq!(lines[1]["kind"], "prompt");
    assert_eq!(lines[1]["prompt"], "test_simple_prompt");
    assert!(setup.verify("audit.log", "keys/audit.pub").status.success());
}

#[test]
fn a_line_names_the_hosts_a_call_reached_with_status_and_bytes() {
    let server = common::server::TestServer::start();
    let mut setup = Setup::new(&format!("[plugins.fetch]\nhttp = [\"{}\"]\n", server.origin()));
    setup.plugins = plugin_dir(&["fetch"]);
    // A redirect the plugin follows: two requests, each with its own status.
    let output = setup.call("fetch", &json!({ "url": server.url("/chain/1") }).to_string());
    assert!(output.status.success(), "{}", stderr(&output));
    let output = setup.call("fetch", &json!({ "url": server.url("/bytes/1000") }).to_string());
    assert!(output.status.success(), "{}", stderr(&output));
    // Not granted: refused before it left, so no host is named as reached.
    let output = setup.call("fetch", &json!({ "url": "http://127.0.0.2:9/nowhere" }).to_string());
    assert!(!output.status.success());
    let lines = setup.lines();
    assert_eq!(lines.len(), 3, "{lines:?}");
    let hosts = lines[0]["hosts"].as_array().unwrap_or_else(|| panic!("no hosts in {}", lines[0]));
    assert_eq!(hosts.len(), 2, "{}", lines[0]);
    for (host, status) in hosts.iter().zip([302, 200]) {
        assert_eq!(host["scheme"], "http", "{host}");
        assert_eq!(host["host"], "127.0.0.1", "{host}");
        assert_eq!(host["port"], server.port, "{host}");
        assert_eq!(host["method"], "GET", "{host}");
        assert_eq!(host["status"], status, "{host}");
        assert_eq!(host["sent"], 0, "{host}");
    }
    assert_eq!(hosts[1]["received"], "end of chain".len(), "{}", lines[0]);
    let usage = &lines[0]["usage"];
    assert_eq!(usage["http_requests"], 2, "{usage}");
    let received: u64 = hosts.iter().map(|host| host["received"].as_u64().unwrap()).sum();
    assert_eq!(usage["http_response_bytes"], received, "{usage}");
    assert_eq!(lines[1]["hosts"][0]["received"], 1000, "{}", lines[1]);
    assert_eq!(lines[1]["hosts"][0]["status"], 200, "{}", lines[1]);
    assert!(lines[2].get("hosts").is_none(), "{}", lines[2]);
    assert_eq!(lines[2]["refused"][0]["kind"], "not_granted", "{}", lines[2]);
    // A call that reached nothing says nothing of hosts.
    setup.plugins = plugin_dir(&["hash"]);
    assert!(setup.call("sha256", r#"{"text":"x"}"#).status.success());
    assert!(setup.lines()[3].get("hosts").is_none());
    let output = setup.verify("audit.log", "keys/audit.pub");
    assert!(output.status.success(), "{}", stderr(&output));
}

#[test]
fn a_line_lists_the_questions_a_call_asked_and_how_each_ended() {
    let setup_with = |include: bool| {
        let mut setup =
            Setup::new("[plugins.content_kinds]\nelicitation = true\nsampling = { max_tokens = 300 }\nroots = true\n");
        if include {
            let config = std::fs::read_to_string(setup.path("toolhost.toml")).unwrap();
            let config =
                config.replace("key = \"keys/audit.key\"\n", "key = \"keys/audit.key\"\ninclude_arguments = true\n");
            std::fs::write(setup.path("toolhost.toml"), config).unwrap();
        }
        setup.plugins = plugin_dir(&["content_kinds"]);
        setup
    };
    let setup = setup_with(false);
    // No terminal: the elicitation is declined; roots are answered; sampling
    // without a model cannot be.
    let output = setup.call("test_elicitation", r#"{"message":"Who are you?"}"#);
    assert!(stdout(&output).contains("action=decline"), "{}", stderr(&output));
    let output = setup.call("test_input_required_result_list_roots", "{}");
    assert!(output.status.success(), "{}", stderr(&output));
    let _ = setup.call("test_sampling", r#"{"prompt":"hi"}"#);
    let lines = setup.lines();
    assert_eq!(lines.len(), 3, "{lines:?}");
    assert_eq!(lines[0]["questions"], json!([{"kind": "elicitation", "outcome": "declined"}]), "{}", lines[0]);
    assert_eq!(lines[1]["questions"], json!([{"kind": "roots", "outcome": "answered"}]), "{}", lines[1]);
    assert_eq!(
        lines[2]["questions"],
        json!([{"kind": "sampling", "outcome": "refused", "why": "unsupported"}]),
        "{}",
        lines[2]
    );
    assert!(setup.verify("audit.log", "keys/audit.pub").status.success());

    // With the arguments included, the answer is shown too.
    let setup = setup_with(true);
    let output = setup.call("test_input_required_result_list_roots", "{}");
    assert!(output.status.success(), "{}", stderr(&output));
    let lines = setup.lines();
    let cwd = std::fs::canonicalize(setup.dir.path()).unwrap();
    let answer = lines[0]["questions"][0]["answer"].as_array().unwrap_or_else(|| panic!("{}", lines[0])).clone();
    assert!(answer.iter().any(|root| root.as_str().unwrap().ends_with(cwd.file_name().unwrap().to_str().unwrap())));
    assert!(setup.verify("audit.log", "keys/audit.pub").status.success());
}

#[test]
fn a_call_cancelled_by_its_client_still_writes_its_line() {
    let mut setup = Setup::new("[limits]\ntimeout = \"60s\"\n");
    setup.plugins = plugin_dir(&["sleep_forever"]);
    let plugins = setup.plugins.path().display().to_string();
    let (mut child, mut stdin, _answers) = setup.serve_stdio(&plugins, INITIALIZE);
    let started = Instant::now();
    writeln!(
        stdin,
        r#"{{"jsonrpc":"2.0","id":7,"method":"tools/call","params":{{"name":"sleep_forever","arguments":{{}}}}}}"#
    )
    .unwrap();
    std::thread::sleep(Duration::from_millis(1500));
    writeln!(stdin, r#"{{"jsonrpc":"2.0","method":"notifications/cancelled","params":{{"requestId":7}}}}"#).unwrap();
    let lines = setup.wait_for_lines(1);
    assert!(started.elapsed() < Duration::from_secs(50), "the line waited for the call's timeout");
    drop(stdin);
    let _ = child.wait();
    assert_eq!(lines.len(), 1, "{lines:?}");
    assert_eq!(lines[0]["tool"], "sleep_forever");
    assert_eq!(lines[0]["plugin"], "sleep_forever");
    assert_eq!(lines[0]["outcome"]["ok"], false, "{}", lines[0]);
    assert_eq!(lines[0]["outcome"]["error"], "cancelled", "{}", lines[0]);
    assert_eq!(lines[0]["hooks"][0]["decision"], "allow", "{}", lines[0]);
    assert_eq!(lines[0]["caller"]["client"], "audit-test");
    let output = setup.verify("audit.log", "keys/audit.pub");
    assert!(output.status.success(), "{}", stderr(&output));
}

/// A hook for resource reads and prompts: it denies the static text and the
/// simple prompt, and rewrites the arguments of a prompt that has some.
const OFFERS_HOOK: &str = r#"#!/bin/sh
input=$(cat)
case "$input" in
  *static-text*) echo '{"decision":"deny","reason":"no resources today"}' ;;
  *test_simple_prompt*) echo '{"decision":"deny","reason":"no prompts today"}' ;;
  *) echo '{"decision":"allow"}' ;;
esac
"#;

#[test]
fn a_hook_with_kinds_denies_a_resource_read_and_a_prompt() {
    let mut setup = Setup::new(
        "\n[[hooks]]\nname = \"offers\"\nwhen = \"before\"\ncommand = [\"./offers.sh\"]\nkinds = [\"resource\", \"prompt\"]\n",
    );
    let hook = setup.path("offers.sh");
    std::fs::write(&hook, OFFERS_HOOK).unwrap();
    std::fs::set_permissions(&hook, std::os::unix::fs::PermissionsExt::from_mode(0o755)).unwrap();
    setup.plugins = plugin_dir(&["content_kinds"]);
    let plugins = setup.plugins.path().display().to_string();
    let (mut child, mut stdin, mut answers) = setup.serve_stdio(&plugins, INITIALIZE);
    writeln!(stdin, r#"{{"jsonrpc":"2.0","id":2,"method":"resources/read","params":{{"uri":"test://static-text"}}}}"#)
        .unwrap();
    let read: Value = serde_json::from_str(&answers.next().unwrap().unwrap()).unwrap();
    assert!(read["error"]["message"].as_str().unwrap_or_default().contains("no resources today"), "{read}");
    writeln!(stdin, r#"{{"jsonrpc":"2.0","id":3,"method":"prompts/get","params":{{"name":"test_simple_prompt"}}}}"#)
        .unwrap();
    let prompt: Value = serde_json::from_str(&answers.next().unwrap().unwrap()).unwrap();
    assert!(prompt["error"]["message"].as_str().unwrap_or_default().contains("no prompts today"), "{prompt}");
    // A tool call is not this hook's business (its `kinds` leave tools out).
    writeln!(
        stdin,
        r#"{{"jsonrpc":"2.0","id":4,"method":"tools/call","params":{{"name":"show_content","arguments":{{}}}}}}"#
    )
    .unwrap();
    let called: Value = serde_json::from_str(&answers.next().unwrap().unwrap()).unwrap();
    assert!(called["result"].is_object(), "{called}");
    drop(stdin);
    assert!(child.wait().unwrap().success());
    let lines = setup.wait_for_lines(3);
    assert_eq!(lines[0]["kind"], "resource");
    assert_eq!(lines[0]["outcome"]["error"], "denied", "{}", lines[0]);
    assert_eq!(
        lines[0]["hooks"],
        json!([{"hook": "offers", "when": "before", "decision": "deny", "reason": "no resources today"}])
    );
    assert_eq!(lines[1]["kind"], "prompt");
    assert_eq!(lines[1]["outcome"]["error"], "denied", "{}", lines[1]);
    assert_eq!(lines[1]["hooks"][0]["hook"], "offers");
    assert_eq!(lines[2]["kind"], "tool");
    assert_eq!(lines[2]["hooks"], json!([{"hook": "policy", "when": "before", "decision": "allow"}]), "{}", lines[2]);
    assert!(setup.verify("audit.log", "keys/audit.pub").status.success());
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_task_and_a_call_over_oauth_name_the_tokens_subject() {
    let setup = Setup::new("");
    let plugins = plugin_dir(&["content_kinds"]);
    let (_authorization, issuer) = crate::oauth::authorization_server();
    let top = format!(
        "[audit]\nfile = \"{}\"\nkey = \"{}\"\n\n",
        setup.path("audit.log").display(),
        setup.path("keys/audit.key").display()
    );
    let extra = "[serve.oauth.tools]\ncontent_kinds = \"tools:kinds\"\n[serve.tasks]\ntools = { slow_compute = \"optional\" }\n";
    let (_server, url) = crate::oauth::serve_with(plugins.path(), &issuer, &top, extra);
    let users = crate::oauth::Users::new(&url, &issuer);
    let alice = users.token("alice", "mcp tools:kinds").await;
    let session = users.open(&alice, json!({})).await;
    // A call in her session, then a task.
    let called =
        users.ask(&alice, &session, 5, "tools/call", json!({"name": "measure", "arguments": {"text": "a b"}})).await;
    assert!(called["result"].is_object(), "{called}");
    let call = json!({"name": "slow_compute", "arguments": {"seconds": 0}, "task": {"ttl": 60000}});
    let started = users.ask(&alice, &session, 6, "tools/call", call).await;
    let task = started["result"]["task"]["taskId"].as_str().unwrap_or_else(|| panic!("{started}")).to_owned();
    let lines = setup.wait_for_lines(2);
    assert_eq!(lines.len(), 2, "{lines:?} (task {task})");
    for line in &lines {
        assert_eq!(line["caller"]["subject"], "alice", "{line}");
    }
    assert_eq!(lines[0]["caller"]["path"], "serve-http", "{}", lines[0]);
    assert_eq!(lines[0]["tool"], "measure");
    assert_eq!(lines[1]["caller"]["path"], "task", "{}", lines[1]);
    assert_eq!(lines[1]["tool"], "slow_compute");
    assert_eq!(lines[1]["outcome"]["ok"], true, "{}", lines[1]);
    let output = setup.verify("audit.log", "keys/audit.pub");
    assert!(output.status.success(), "{}", stderr(&output));
}

#[test]
fn a_plugin_pulled_signed_names_its_signer_in_the_line() {
    use crate::oci;
    let registry = oci::Registry::start();
    let work = tempfile::tempdir().unwrap();
    let (key, public) = oci::key_pair(work.path(), "publisher");
    let reference = format!("{}/plugins/hash:1.0", registry.addr());
    let digest = oci::push(work.path(), &common::plugin("hash"), &reference);
    oci::cosign_sign(work.path(), &key, &format!("{}/plugins/hash@{digest}", registry.addr()));
    let unsigned = format!("{}/plugins/text:1", registry.addr());
    oci::push(work.path(), &common::plugin("text"), &unsigned);
    oci::trust(work.path(), &registry, &[Path::new("publisher/cosign.pub")], false);
    for pulled in [&reference, &unsigned] {
        let output = oci::run(work.path(), &["pull", pulled], &[]);
        assert!(output.status.success(), "{}", stderr(&output));
    }
    std::fs::create_dir(work.path().join("keys")).unwrap();
    assert!(toolhost(work.path(), &["audit", "keygen", "--out", "keys"]).status.success());
    let mut config = std::fs::read_to_string(work.path().join("toolhost.toml")).unwrap();
    config.push_str("[audit]\nfile = \"audit.log\"\nkey = \"keys/audit.key\"\n");
    std::fs::write(work.path().join("toolhost.toml"), config).unwrap();
    let call = oci::run(work.path(), &["call", "sha256", r#"{"text":"hello"}"#], &[]);
    assert!(call.status.success(), "{}", stderr(&call));
    let call = oci::run(work.path(), &["call", "text_stats", r#"{"text":"hello"}"#], &[]);
    assert!(call.status.success(), "{}", stderr(&call));
    let text = std::fs::read_to_string(work.path().join("audit.log")).unwrap();
    let lines: Vec<Value> = text
        .lines()
        .map(|line| serde_json::from_str::<Value>(line).unwrap())
        .filter(|line| line["kind"] != "head")
        .collect();
    assert_eq!(
        lines[0]["signer"],
        json!({"key": "publisher/cosign.pub", "fingerprint": oci::fingerprint(&public), "source": reference}),
        "{}",
        lines[0]
    );
    assert_eq!(lines[1]["plugin"], "text", "{}", lines[1]);
    assert!(lines[1].get("signer").is_none(), "not signed, so no signer: {}", lines[1]);
    let output = toolhost(work.path(), &["audit", "verify", "audit.log", "--key", "keys/audit.pub"]);
    assert!(output.status.success(), "{}", stderr(&output));
}

#[test]
fn a_call_stopped_by_ctrl_c_still_writes_its_line() {
    let mut setup = Setup::new("[limits]\ntimeout = \"60s\"\n");
    // The hook says when the call has begun (its line is owed from then on).
    std::fs::write(
        setup.path("hook.sh"),
        "#!/bin/sh\ncat >/dev/null\ntouch started\necho '{\"decision\":\"allow\"}'\n",
    )
    .unwrap();
    setup.plugins = plugin_dir(&["sleep_forever"]);
    let plugins = setup.plugins.path().display().to_string();
    let child = Command::new(env!("CARGO_BIN_EXE_toolhost"))
        .args(["--plugins", &plugins, "call", "sleep_forever", "{}"])
        .current_dir(setup.dir.path())
        .env("TOOLHOST_CACHE_DIR", common::shared_cache())
        .stdin(Stdio::null())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .unwrap();
    let started = Instant::now();
    while !setup.path("started").exists() {
        assert!(started.elapsed() < Duration::from_secs(60), "the call never began");
        std::thread::sleep(Duration::from_millis(50));
    }
    std::thread::sleep(Duration::from_millis(500));
    // SAFETY: a signal to the child this test started.
    unsafe { libc::kill(child.id() as libc::pid_t, libc::SIGINT) };
    let output = child.wait_with_output().unwrap();
    assert_eq!(output.status.code(), Some(130), "{}", stderr(&output));
    assert!(started.elapsed() < Duration::from_secs(50), "it waited for the call's timeout");
    let lines = setup.lines();
    assert_eq!(lines.len(), 1, "{lines:?}");
    assert_eq!(lines[0]["caller"]["path"], "call");
    assert_eq!(lines[0]["tool"], "sleep_forever");
    assert_eq!(lines[0]["outcome"]["error"], "cancelled", "{}", lines[0]);
    assert_eq!(lines[0]["hooks"][0]["decision"], "allow", "{}", lines[0]);
    let output = setup.verify("audit.log", "keys/audit.pub");
    assert!(output.status.success(), "{}", stderr(&output));
}

/// [`Setup::new`] with `[audit] receipt_in_meta = true`.
fn with_receipts() -> Setup {
    let setup = Setup::new("");
    let config = std::fs::read_to_string(setup.path("toolhost.toml")).unwrap();
    let config = config.replace("key = \"keys/audit.key\"\n", "key = \"keys/audit.key\"\nreceipt_in_meta = true\n");
    std::fs::write(setup.path("toolhost.toml"), config).unwrap();
    setup
}

/// `toolhost audit receipt FILE --key keys/audit.pub [--log audit.log]` on `value` written to a file.
fn check_receipt(setup: &Setup, value: &Value, log: bool) -> std::process::Output {
    let file = setup.path("receipt.json");
    std::fs::write(&file, value.to_string()).unwrap();
    let mut args = vec!["audit", "receipt", "receipt.json", "--key", "keys/audit.pub"];
    if log {
        args.extend(["--log", "audit.log"]);
    }
    toolhost(setup.dir.path(), &args)
}

/// A 2026-07-28 `tools/call` of `sha256` over Streamable HTTP (no session),
/// with the client's answers and the state of the round before.
async fn call_2026(url: &str, text: &str, responses: Value, state: Option<&Value>) -> Value {
    let mut params = json!({
        "name": "sha256",
        "arguments": {"text": text},
        "inputResponses": responses,
        "_meta": {
            "io.modelcontextprotocol/protocolVersion": "2026-07-28",
            "io.modelcontextprotocol/clientCapabilities": {"elicitation": {}},
            "io.modelcontextprotocol/clientInfo": {"name": "audit-test", "version": "1"},
        },
    });
    if let Some(state) = state {
        params["requestState"] = state.clone();
    }
    let body = json!({"jsonrpc": "2.0", "id": 7, "method": "tools/call", "params": params});
    let response = reqwest::Client::new()
        .post(url)
        .header("content-type", "application/json")
        .header("accept", "application/json, text/event-stream")
        .header("mcp-protocol-version", "2026-07-28")
        .header("mcp-method", "tools/call")
        .header("mcp-name", "sha256")
        .body(body.to_string())
        .send()
        .await
        .unwrap();
    crate::mcp::message_of(&response.text().await.unwrap())
}

/// The SHA-256 `sha256` answers for "abc".
const ABC: &str = "ba7816bf8f01cfea414140de5dae2223b00361a396177a9cb410ff61f20015ad";

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_results_receipt_verifies_matches_its_line_and_a_tampered_one_fails() {
    let _ = rustls::crypto::ring::default_provider().install_default();
    // A receipt that is the signed line itself (`batch = 1`); batched
    // receipts: `a_batched_receipt_proves_its_line_with_the_key_alone`.
    let setup = with_receipts().per_line();
    let plugins = setup.plugins.path().display().to_string();
    // stdio, 2025-11-25
    let (mut child, mut stdin, mut answers) = setup.serve_stdio(&plugins, INITIALIZE);
    let call =
        r#"{"jsonrpc":"2.0","id":2,"method":"tools/call","params":{"name":"sha256","arguments":{"text":"abc"}}}"#;
    writeln!(stdin, "{call}").unwrap();
    let answer: Value = serde_json::from_str(&answers.next().unwrap().unwrap()).unwrap();
    drop(stdin);
    assert!(child.wait().unwrap().success());
    assert!(answer.to_string().contains(ABC), "{answer}");
    let receipt = answer["result"]["_meta"]["toolhost/receipt"].clone();
    assert!(receipt.is_object(), "no receipt in {answer}");
    let lines = setup.lines();
    assert_eq!(lines.len(), 1);
    // The receipt is the signed line itself, byte for byte in the log.
    assert_eq!(receipt, lines[0]);
    assert_eq!((receipt["seq"].as_u64(), receipt["tool"].as_str()), (Some(1), Some("sha256")));
    // The whole response works as the receipt's file, as does the receipt alone.
    let output = check_receipt(&setup, &answer, true);
    assert!(output.status.success(), "{}", stderr(&output));
    assert!(
        stdout(&output).contains("valid receipt, seq 1") && stdout(&output).contains("it is line 1 of"),
        "{}",
        stdout(&output)
    );
    let output = check_receipt(&setup, &receipt, false);
    assert!(output.status.success(), "{}", stderr(&output));

    // Streamable HTTP, 2026-07-28: the second line, chained to the first.
    let (server, url) = crate::mcp::serve_http(setup.plugins.path(), &setup.path("toolhost.toml"), &[], &[]);
    let answer = call_2026(&url, "abc", json!({}), None).await;
    drop(server);
    assert!(answer.to_string().contains(ABC), "{answer}");
    let receipt = answer["result"]["_meta"]["toolhost/receipt"].clone();
    assert_eq!(receipt["seq"], 2, "{answer}");
    assert_eq!(receipt["caller"]["path"], "serve-http", "{receipt}");
    let output = check_receipt(&setup, &receipt, true);
    assert!(stdout(&output).contains("it is line 2 of"), "{}{}", stdout(&output), stderr(&output));

    // Tampered: another outcome, another seq, another key id, no signature.
    let mut edits = Vec::new();
    let mut edited = receipt.clone();
    edited["outcome"] = json!({"ok": false, "error": "denied", "message": "x"});
    edits.push((edited, "its signature does not match"));
    let mut edited = receipt.clone();
    edited["seq"] = json!(1);
    edits.push((edited, "its signature does not match"));
    let mut edited = receipt.clone();
    edited["key"] = json!("sha256:00");
    edits.push((edited, "signed by the key sha256:00"));
    let mut edited = receipt.clone();
    edited.as_object_mut().unwrap().remove("sig");
    edits.push((json!({"result": {"_meta": {"toolhost/receipt": edited}}}), "has no signature"));
    edits.push((json!({"result": {"content": []}}), "no receipt in it"));
    for (edited, why) in edits {
        let output = check_receipt(&setup, &edited, false);
        assert_eq!(output.status.code(), Some(1), "{edited}");
        assert!(stderr(&output).contains(why), "{why}: {}", stderr(&output));
    }
    // A receipt whose line was cut from the log's end is not found there.
    let text = std::fs::read_to_string(setup.path("audit.log")).unwrap();
    std::fs::write(setup.path("audit.log"), format!("{}\n", text.lines().next().unwrap())).unwrap();
    let output = check_receipt(&setup, &receipt, true);
    assert_eq!(output.status.code(), Some(1));
    assert!(stderr(&output).contains("the log has no line seq 2"), "{}", stderr(&output));
    // Another key does not check it.
    let other = setup.path("other");
    std::fs::create_dir(&other).unwrap();
    assert!(toolhost(setup.dir.path(), &["audit", "keygen", "--out", "other"]).status.success());
    std::fs::write(setup.path("receipt.json"), receipt.to_string()).unwrap();
    let output = toolhost(setup.dir.path(), &["audit", "receipt", "receipt.json", "--key", "other/audit.pub"]);
    assert_eq!(output.status.code(), Some(1));
    assert!(stderr(&output).contains("not by the key given"), "{}", stderr(&output));
}

#[test]
fn an_ask_in_run_goes_to_the_person_at_the_terminal_and_their_answer_is_logged() {
    for (answer, approved) in [("y", true), ("n", false)] {
        let setup = Setup::new("");
        let script = Script { anthropic: false, stream: false };
        let server = ModelServer::start(vec![
            script.calls(&[("call_1", "sha256", r#"{"text":"ask-me"}"#)]),
            script.text("Done."),
        ]);
        let cache = common::shared_cache().display().to_string();
        let base = script.base_url(&server);
        let config = setup.path("toolhost.toml").display().to_string();
        let plugins = setup.plugins.path().display().to_string();
        let mut terminal = common::pty::Terminal::spawn(
            Path::new(env!("CARGO_BIN_EXE_toolhost")),
            &["--plugins", &plugins, "--config", &config, "run", "hash it"],
            setup.dir.path(),
            &[
                ("TOOLHOST_CACHE_DIR", &cache),
                ("OPENAI_API_KEY", "test-key"),
                ("TOOLHOST_MODEL", "openai/test-model"),
                ("OPENAI_BASE_URL", &base),
            ],
            &["TOOLHOST_LOG", "TOOLHOST_CONFIG"],
        );
        terminal.expect("An operator's hook asks whether the tool `sha256` may run: is this fine?");
        terminal.expect("answer it?");
        terminal.send("y\r");
        terminal.expect("Allow this call? [y/n]: ");
        terminal.send(&format!("{answer}\r"));
        terminal.expect("Done.");
        assert_eq!(terminal.exit_code(Duration::from_secs(20)), 0);
        let results = script.results(&server.requests()[1]);
        let lines = setup.lines();
        assert_eq!(lines[0]["hooks"][0]["decision"], "ask", "{lines:?}");
        assert_eq!(lines[0]["hooks"][0]["approved"], approved, "{lines:?}");
        if approved {
            assert_eq!(lines[0]["outcome"]["ok"], true, "{lines:?}");
            assert!(!results[0].1.contains("is this fine?"), "{results:?}");
        } else {
            assert_eq!(lines[0]["outcome"]["error"], "denied", "{lines:?}");
            assert!(results[0].1.contains("the person asked said no"), "{results:?}");
        }
    }
}

#[test]
fn an_ask_on_serve_is_an_elicitation_the_client_answers() {
    let setup = Setup::new("");
    let plugins = setup.plugins.path().display().to_string();
    let initialize = INITIALIZE.replace(r#""capabilities":{}"#, r#""capabilities":{"elicitation":{}}"#);
    let (mut child, mut stdin, mut answers) = setup.serve_stdio(&plugins, &initialize);
    for (id, approve) in [(2, true), (3, false)] {
        let call = json!({"jsonrpc": "2.0", "id": id, "method": "tools/call",
            "params": {"name": "sha256", "arguments": {"text": "ask-me"}}});
        writeln!(stdin, "{call}").unwrap();
        let asked: Value = serde_json::from_str(&answers.next().unwrap().unwrap()).unwrap();
        assert_eq!(asked["method"], "elicitation/create", "{asked}");
        assert!(asked["params"]["message"].as_str().unwrap().contains("is this fine?"), "{asked}");
        let reply = json!({"jsonrpc": "2.0", "id": asked["id"],
            "result": {"action": "accept", "content": {"approve": approve}}});
        writeln!(stdin, "{reply}").unwrap();
        let answer: Value = serde_json::from_str(&answers.next().unwrap().unwrap()).unwrap();
        assert_eq!(answer["id"], id, "{answer}");
        assert_eq!(answer["result"]["isError"], !approve, "{answer}");
    }
    drop(stdin);
    assert!(child.wait().unwrap().success());
    let lines = setup.wait_for_lines(2);
    assert_eq!((&lines[0]["hooks"][0]["approved"], &lines[0]["outcome"]["ok"]), (&json!(true), &json!(true)));
    assert_eq!((&lines[1]["hooks"][0]["approved"], &lines[1]["outcome"]["error"]), (&json!(false), &json!("denied")));
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn an_ask_on_a_2026_request_goes_out_in_its_input_round() {
    let _ = rustls::crypto::ring::default_provider().install_default();
    let setup = Setup::new("");
    let (server, url) = crate::mcp::serve_http(setup.plugins.path(), &setup.path("toolhost.toml"), &[], &[]);
    let round = call_2026(&url, "ask-me", json!({}), None).await;
    assert_eq!(round["result"]["resultType"], "input_required", "{round}");
    let asked = &round["result"]["inputRequests"]["toolhost.hook:policy"];
    assert_eq!(asked["method"], "elicitation/create", "{round}");
    assert!(asked["params"]["message"].as_str().unwrap().contains("is this fine?"), "{round}");
    let state = round["result"]["requestState"].clone();
    let yes = json!({"toolhost.hook:policy": {"action": "accept", "content": {"approve": true}}});
    let done = call_2026(&url, "ask-me", yes, Some(&state)).await;
    assert_eq!(done["result"]["isError"], false, "{done}");
    let no = json!({"toolhost.hook:policy": {"action": "decline"}});
    let refused = call_2026(&url, "ask-me", no, Some(&state)).await;
    assert_eq!(refused["result"]["isError"], true, "{refused}");
    assert!(refused.to_string().contains("the person asked said no"), "{refused}");
    let lines = setup.wait_for_lines(3);
    drop(server);
    assert_eq!(lines[0]["outcome"]["error"], "input_required", "{lines:?}");
    assert_eq!(lines[0]["hooks"][0]["decision"], "ask");
    assert_eq!((&lines[1]["hooks"][0]["approved"], &lines[1]["outcome"]["ok"]), (&json!(true), &json!(true)));
    assert_eq!(lines[2]["hooks"][0]["approved"], false);
}

/// `value` with every object's keys in byte order (the audit log's canonical form, once written compactly).
fn sorted(value: &Value) -> Value {
    match value {
        Value::Object(map) => {
            let mut keys: Vec<&String> = map.keys().collect();
            keys.sort();
            Value::Object(keys.into_iter().map(|key| (key.clone(), sorted(&map[key]))).collect())
        }
        Value::Array(items) => Value::Array(items.iter().map(sorted).collect()),
        other => other.clone(),
    }
}

/// `toolhost serve` over stdio under `setup`: the answer to each `tools/call` of `sha256` on `texts`.
fn serve_calls(setup: &Setup, texts: &[&str]) -> Vec<Value> {
    let plugins = setup.plugins.path().display().to_string();
    let (mut child, mut stdin, mut answers) = setup.serve_stdio(&plugins, INITIALIZE);
    let mut got = Vec::new();
    for (id, text) in texts.iter().enumerate() {
        let call = json!({"jsonrpc": "2.0", "id": id + 2, "method": "tools/call",
                          "params": {"name": "sha256", "arguments": {"text": text}}});
        writeln!(stdin, "{call}").unwrap();
        got.push(serde_json::from_str(&answers.next().unwrap().unwrap()).unwrap());
    }
    drop(stdin);
    assert!(child.wait().unwrap().success());
    got
}

#[test]
fn a_receipt_binds_its_result_and_a_moved_or_changed_result_fails() {
    let setup = with_receipts();
    let answers = serve_calls(&setup, &["abc", "xyz", "deny-me"]);
    let (abc, xyz, denied) = (&answers[0], &answers[1], &answers[2]);
    assert!(abc.to_string().contains(ABC), "{abc}");
    // The line carries the digest of the result as the caller got it:
    // canonical {content, isError, structuredContent}, without `_meta`.
    // (A batched receipt: the line, its inclusion proof and the signed head.)
    let receipt = &abc["result"]["_meta"]["toolhost/receipt"]["line"];
    let mut covered = json!({"content": abc["result"]["content"], "isError": false});
    if let Some(structured) = abc["result"].get("structuredContent") {
        covered["structuredContent"] = structured.clone();
    }
    let canonical = serde_json::to_string(&sorted(&covered)).unwrap();
    assert_eq!(receipt["result_sha256"], common::sha256_hex(canonical.as_bytes()), "{receipt}");
    assert_eq!(receipt["result_parts"]["blocks"], abc["result"]["content"].as_array().unwrap().len());
    assert_eq!(setup.lines()[0], *receipt);

    // The whole response checks, result and receipt together, and so does the result alone.
    for whole in [abc.clone(), abc["result"].clone()] {
        let output = check_receipt(&setup, &whole, true);
        assert!(output.status.success(), "{}", stderr(&output));
        assert!(stdout(&output).contains("the result is the one it was signed for"), "{}", stdout(&output));
    }
    // The receipt alone checks, and says it checked no result.
    let output = check_receipt(&setup, &abc["result"]["_meta"]["toolhost/receipt"], false);
    assert!(output.status.success(), "{}", stderr(&output));
    assert!(stdout(&output).contains("no result was given"), "{}", stdout(&output));
    // A denied call's result (isError) is bound too.
    assert_eq!(denied["result"]["isError"], true, "{denied}");
    assert!(check_receipt(&setup, denied, true).status.success());

    // Moved: xyz's result carrying abc's receipt (valid, signed).
    let mut moved = xyz.clone();
    moved["result"]["_meta"]["toolhost/receipt"] = abc["result"]["_meta"]["toolhost/receipt"].clone();
    // Changed: abc's result with its text altered, or an error said to be a success.
    let mut altered = abc.clone();
    let text = altered["result"]["content"][0]["text"].as_str().unwrap().replace(ABC, &"0".repeat(64));
    altered["result"]["content"][0]["text"] = json!(text);
    let mut added = abc.clone();
    added["result"]["content"].as_array_mut().unwrap().push(json!({"type": "text", "text": "and delete it all"}));
    let mut structured = abc.clone();
    structured["result"]["structuredContent"] = json!({"hash": "0"});
    let mut flipped = denied.clone();
    flipped["result"]["isError"] = json!(false);
    for (changed, says) in [
        (moved, "its `content` is not the call's"),
        (altered, "its `content` is not the call's"),
        (added, "it has 2 content block(s), the call's result had 1"),
        (structured, "it has a `structuredContent`, the call's result had none"),
        (flipped, "its `isError` is false, the call's result said true"),
    ] {
        let output = check_receipt(&setup, &changed, true);
        assert_eq!(output.status.code(), Some(1), "{changed}: {}", stdout(&output));
        let err = stderr(&output);
        assert!(
            err.contains("the result is not the one this receipt was signed for") && err.contains(says),
            "{says}: {err}"
        );
    }
}

#[test]
fn a_checkpoint_catches_lines_cut_from_the_logs_end() {
    let setup = Setup::new("");
    std::fs::write(
        setup.path("toolhost.toml"),
        "[audit]\nfile = \"audit.log\"\nkey = \"keys/audit.key\"\ncheckpoint = \"state/audit.checkpoint\"\n",
    )
    .unwrap();
    std::fs::create_dir(setup.path("state")).unwrap();
    for text in ["one", "two", "three"] {
        let output = setup.call("sha256", &json!({ "text": text }).to_string());
        assert!(output.status.success(), "{}", stderr(&output));
    }
    let verify = |log: &str, checkpoint: &str| {
        toolhost(setup.dir.path(), &["audit", "verify", log, "--key", "keys/audit.pub", "--checkpoint", checkpoint])
    };
    // The checkpoint names the last line, signed; nothing else is left beside it.
    let checkpoint: Value =
        serde_json::from_str(&std::fs::read_to_string(setup.path("state/audit.checkpoint")).unwrap()).unwrap();
    let log = std::fs::read_to_string(setup.path("audit.log")).unwrap();
    // Each call's line and the head over it: the checkpoint names the last head.
    assert_eq!((checkpoint["kind"].as_str(), checkpoint["seq"].as_u64()), (Some("checkpoint"), Some(6)));
    assert_eq!(checkpoint["sha256"], common::sha256_hex(log.lines().last().unwrap().as_bytes()));
    assert_eq!(std::fs::read_dir(setup.path("state")).unwrap().count(), 1);
    let output = verify("audit.log", "state/audit.checkpoint");
    assert!(output.status.success(), "{}", stderr(&output));
    assert!(stdout(&output).contains("it reaches its checkpoint (seq 6"), "{}", stdout(&output));

    // The last call and its head cut off: still an intact chain alone, but not against the checkpoint.
    let lines: Vec<&str> = log.lines().collect();
    let kept: String = lines[..4].iter().map(|line| format!("{line}\n")).collect();
    std::fs::write(setup.path("cut.log"), kept).unwrap();
    assert!(setup.verify("cut.log", "keys/audit.pub").status.success(), "the hole the checkpoint closes");
    let output = verify("cut.log", "state/audit.checkpoint");
    assert_eq!(output.status.code(), Some(1), "{}", stdout(&output));
    assert!(
        stderr(&output).contains("cut.log:4: the log ends at seq 4, but its checkpoint")
            && stderr(&output).contains("lines seq 5 to 6 are missing from its end"),
        "{}",
        stderr(&output)
    );
    // An edited checkpoint, and one signed by another key, are refused.
    let text = std::fs::read_to_string(setup.path("state/audit.checkpoint")).unwrap();
    std::fs::write(setup.path("edited.checkpoint"), text.replace(r#""seq":6"#, r#""seq":4"#)).unwrap();
    let output = verify("cut.log", "edited.checkpoint");
    assert_eq!(output.status.code(), Some(1));
    assert!(stderr(&output).contains("signature does not match"), "{}", stderr(&output));
    std::fs::write(setup.path("edited.checkpoint"), lines[1]).unwrap();
    let output = verify("cut.log", "edited.checkpoint");
    assert!(stderr(&output).contains("not a checkpoint"), "{}", stderr(&output));

    // toolhost itself will not go on writing a log cut behind its checkpoint.
    std::fs::copy(setup.path("cut.log"), setup.path("audit.log")).unwrap();
    let output = setup.call("sha256", r#"{"text":"four"}"#);
    assert_eq!(output.status.code(), Some(2), "{}", stdout(&output));
    assert!(
        stderr(&output).contains("ends at seq 4, but its checkpoint")
            && stderr(&output).contains("says the chain reached seq 6"),
        "{}",
        stderr(&output)
    );
    assert_eq!(std::fs::read_to_string(setup.path("audit.log")).unwrap().lines().count(), 4, "nothing written");
}

#[test]
fn a_private_key_others_can_read_is_not_used() {
    use std::os::unix::fs::PermissionsExt;
    let setup = Setup::new("");
    let key = setup.path("keys/audit.key");
    assert_eq!(std::fs::metadata(&key).unwrap().permissions().mode() & 0o777, 0o600, "keygen writes it owner-only");
    for mode in [0o644, 0o640, 0o604] {
        std::fs::set_permissions(&key, std::fs::Permissions::from_mode(mode)).unwrap();
        let output = setup.call("sha256", r#"{"text":"abc"}"#);
        assert_eq!(output.status.code(), Some(2), "{mode:o}: {}", stdout(&output));
        let err = stderr(&output);
        assert!(
            err.contains("keys/audit.key") && err.contains(&format!("(mode {mode:04o})")) && err.contains("chmod 600"),
            "{mode:o}: {err}"
        );
    }
    assert!(!setup.path("audit.log").exists(), "nothing was logged with it");
    std::fs::set_permissions(&key, std::fs::Permissions::from_mode(0o400)).unwrap();
    let output = setup.call("sha256", r#"{"text":"abc"}"#);
    assert!(output.status.success(), "{}", stderr(&output));

    // The compile cache's key file: not used (a warning names it), the call goes on.
    let state = tempfile::tempdir().unwrap();
    let cache_key = state.path().join("toolhost/cache.key");
    std::fs::create_dir_all(cache_key.parent().unwrap()).unwrap();
    std::fs::write(&cache_key, format!("{}\n", "ab".repeat(32))).unwrap();
    std::fs::set_permissions(&cache_key, std::fs::Permissions::from_mode(0o644)).unwrap();
    let plugins = setup.plugins.path().display().to_string();
    let state_home = state.path().display().to_string();
    let cache_dir = state.path().join("cache").display().to_string();
    let output = common::toolhost_with_env(
        setup.dir.path(),
        &["--plugins", &plugins, "call", "sha256", r#"{"text":"abc"}"#],
        // A cache folder of its own: the shared one's artifacts are sealed with another key.
        &[("XDG_STATE_HOME", &state_home), ("TOOLHOST_CACHE_KEY", ""), ("TOOLHOST_CACHE_DIR", &cache_dir)],
    );
    assert!(output.status.success(), "{}", stderr(&output));
    let err = stderr(&output);
    assert!(err.contains("cache.key") && err.contains("(mode 0644)"), "{err}");

    // `[state] password_file`: `serve` does not start (before any connection).
    let password = setup.path("valkey-password");
    std::fs::write(&password, "s3cret\n").unwrap();
    std::fs::set_permissions(&password, std::fs::Permissions::from_mode(0o640)).unwrap();
    std::fs::write(
        setup.path("toolhost.toml"),
        "[state]\nurl = \"redis://127.0.0.1:9\"\npassword_file = \"valkey-password\"\n",
    )
    .unwrap();
    let output = Command::new(env!("CARGO_BIN_EXE_toolhost"))
        .args(["--plugins", &plugins, "serve"])
        .current_dir(setup.dir.path())
        .env("TOOLHOST_CACHE_DIR", common::shared_cache())
        .stdin(Stdio::null())
        .output()
        .unwrap();
    assert!(!output.status.success(), "{}", stdout(&output));
    let err = stderr(&output);
    assert!(err.contains("[state] password_file") && err.contains("(mode 0640)"), "{err}");
    assert!(!err.contains("s3cret"), "{err}");
}

/// [`Setup::new`] with `[audit]` lines `batch`ed and `more` settings (the
/// interval long, so that the heads fall where a test says).
fn batched(batch: usize, more: &str) -> Setup {
    let setup = Setup::new("");
    let config = std::fs::read_to_string(setup.path("toolhost.toml")).unwrap();
    let config = config.replace(
        "key = \"keys/audit.key\"\n",
        &format!("key = \"keys/audit.key\"\nbatch = {batch}\nbatch_interval = \"60s\"\n{more}"),
    );
    std::fs::write(setup.path("toolhost.toml"), config).unwrap();
    setup
}

#[test]
fn batched_lines_are_covered_by_signed_heads_and_verify_refuses_each_break() {
    let setup = batched(4, "");
    // One serve session, six calls: a head after the fourth line, and one
    // over the last two as the server stops.
    let answers = serve_calls(&setup, &["a", "b", "c", "d", "e", "f"]);
    assert!(answers.iter().all(|answer| answer["result"]["isError"] != true), "{answers:?}");
    let all = setup.all_lines();
    let kinds: Vec<&str> = all.iter().map(|line| line["kind"].as_str().unwrap()).collect();
    assert_eq!(kinds, ["tool", "tool", "tool", "tool", "head", "tool", "tool", "head"], "{all:?}");
    assert_eq!((&all[4]["tree_size"], &all[7]["tree_size"]), (&json!(4), &json!(2)));
    assert!(all.iter().filter(|line| line["kind"] == "tool").all(|line| line.get("sig").is_none() && line["v"] == 2));
    assert!(all.iter().filter(|line| line["kind"] == "head").all(|line| line["sig"].is_string()));
    let output = setup.verify("audit.log", "keys/audit.pub");
    assert!(output.status.success(), "{}", stderr(&output));
    let said = stdout(&output);
    assert!(said.contains("intact, 8 line(s), seq 1 to 8"), "{said}");
    assert!(said.contains("every batched line is under one of 2 signed tree head(s)"), "{said}");

    let original = std::fs::read_to_string(setup.path("audit.log")).unwrap();
    let lines: Vec<&str> = original.lines().collect();
    let broken = |name: &str, lines: &[&str], says: &str, line: usize| {
        std::fs::write(setup.path(name), lines.iter().map(|line| format!("{line}\n")).collect::<String>()).unwrap();
        let output = setup.verify(name, "keys/audit.pub");
        assert_eq!(output.status.code(), Some(1), "{name}: {}", stdout(&output));
        let err = stderr(&output);
        assert!(err.contains(&format!("{name}:{line}: ")) && err.contains(says), "{name}: {err}");
        assert_eq!(err.lines().count(), 1, "{err}");
    };
    let with = |at: usize, line: &str| {
        let mut changed: Vec<String> = lines.iter().map(|line| line.to_string()).collect();
        changed[at] = line.to_owned();
        changed
    };
    // A call's outcome edited: the next line no longer follows it.
    let edited = with(1, &lines[1].replace(r#""ok":true"#, r#""ok":false"#));
    broken("edited.log", &strs(&edited), "does not follow the line before it (that line was edited", 3);
    // The batch's last line edited: its signed head says so.
    let edited = with(3, &lines[3].replace(r#""ok":true"#, r#""ok":false"#));
    broken("last.log", &strs(&edited), "does not follow the line before it", 5);
    // A line dropped.
    let dropped: Vec<&str> = lines.iter().enumerate().filter(|(at, _)| *at != 2).map(|(_, line)| *line).collect();
    broken("dropped.log", &dropped, "line seq 3 is missing before it", 3);
    // Cut mid-batch (the second head gone, as after a crash): named, not accepted.
    broken("cut.log", &lines[..6], "the log's last line (seq 6) is not covered by a signed tree head", 6);
    broken("cut2.log", &lines[..7], "the log's last 2 lines (seq 6 to 7) are not covered by a signed tree head", 6);
    // The heads swapped.
    let mut swapped = lines.clone();
    swapped.swap(4, 7);
    broken("swapped.log", &swapped, "lines seq 5 to 7 are missing before it", 5);
    // A head's field edited.
    let edited = with(4, &lines[4].replace(r#""tree_size":4"#, r#""tree_size":3"#));
    broken("head.log", &strs(&edited), "its signature does not match its content", 5);
    // Another key refuses the first head.
    let other = setup.path("other");
    std::fs::create_dir(&other).unwrap();
    assert!(toolhost(setup.dir.path(), &["audit", "keygen", "--out", "other"]).status.success());
    let output = setup.verify("audit.log", "other/audit.pub");
    assert!(stderr(&output).contains("audit.log:5: signed by the key sha256:"), "{}", stderr(&output));
}

fn strs(lines: &[String]) -> Vec<&str> {
    lines.iter().map(String::as_str).collect()
}

#[test]
fn a_crash_mid_batch_leaves_lines_verify_reports_and_a_restart_does_not_sign() {
    let setup = batched(4, "");
    let plugins = setup.plugins.path().display().to_string();
    let (mut child, mut stdin, mut answers) = setup.serve_stdio(&plugins, INITIALIZE);
    for (id, text) in ["a", "b"].iter().enumerate() {
        let call = json!({"jsonrpc": "2.0", "id": id + 2, "method": "tools/call",
                          "params": {"name": "sha256", "arguments": {"text": text}}});
        writeln!(stdin, "{call}").unwrap();
        let _ = answers.next().unwrap().unwrap();
    }
    // The lines reach the file as the writer's queue runs dry; their head
    // would come at the fourth line, or in 60 s. SIGKILL first.
    assert_eq!(setup.wait_for_lines(2).len(), 2);
    child.kill().unwrap();
    child.wait().unwrap();
    drop(stdin);
    assert_eq!(setup.all_lines().len(), 2, "no head was signed");
    let output = setup.verify("audit.log", "keys/audit.pub");
    assert_eq!(output.status.code(), Some(1), "{}", stdout(&output));
    assert!(
        stderr(&output).contains(
            "audit.log:1: the log's last 2 lines (seq 1 to 2) are not covered by a signed tree head: toolhost \
             stopped before signing its last batch"
        ),
        "{}",
        stderr(&output)
    );
    // toolhost started again does not sign what it finds: the log is moved
    // aside as it is, and a new chain begins.
    let before = std::fs::read_to_string(setup.path("audit.log")).unwrap();
    let output = setup.call("sha256", r#"{"text":"after"}"#);
    assert!(output.status.success(), "{}", stderr(&output));
    assert_eq!(std::fs::read_to_string(setup.path("audit.log.1")).unwrap(), before);
    assert!(!setup.verify("audit.log.1", "keys/audit.pub").status.success());
    let output = setup.verify("audit.log", "keys/audit.pub");
    assert!(stdout(&output).contains("intact, 2 line(s), seq 1 to 2"), "{}{}", stdout(&output), stderr(&output));
}

#[test]
fn a_batched_receipt_proves_its_line_with_the_key_alone() {
    // The interval is 60 s and the batch 256 lines: a receipt within
    // `RECEIPT_WAIT` (2 s) shows the head was signed when the queue ran dry.
    let setup = batched(256, "receipt_in_meta = true\n");
    let answers = serve_calls(&setup, &["abc", "xyz"]);
    let (abc, xyz) = (&answers[0], &answers[1]);
    assert!(abc.to_string().contains(ABC), "{abc}");
    let receipt = &abc["result"]["_meta"]["toolhost/receipt"];
    assert_eq!((receipt["line"]["seq"].as_u64(), receipt["line"]["tool"].as_str()), (Some(1), Some("sha256")));
    assert_eq!((receipt["head"]["kind"].as_str(), receipt["head"]["seq"].as_u64()), (Some("head"), Some(2)));
    assert!(receipt["proof"].is_array(), "{receipt}");
    // Its line and head are the log's, byte for byte.
    let all = setup.all_lines();
    assert_eq!((&all[0], &all[1]), (&receipt["line"], &receipt["head"]));
    // Alone, with the public key only.
    let output = check_receipt(&setup, receipt, false);
    assert!(output.status.success(), "{}", stderr(&output));
    assert!(
        stdout(&output).contains("valid receipt, seq 1") && stdout(&output).contains("(its tree head, seq 2, over 1"),
        "{}",
        stdout(&output)
    );
    // With its result, and found in the log.
    let output = check_receipt(&setup, abc, true);
    assert!(output.status.success(), "{}", stderr(&output));
    let said = stdout(&output);
    assert!(said.contains("the result is the one it was signed for") && said.contains("it is line 1 of"), "{said}");
    // Every change refused, saying what.
    let other = &xyz["result"]["_meta"]["toolhost/receipt"];
    let mut cases = Vec::new();
    let mut edited = receipt.clone();
    edited["line"]["outcome"] = json!({"ok": false, "error": "denied", "message": "x"});
    cases.push((edited, "its proof does not lead from the line to the signed tree head's root"));
    let mut edited = receipt.clone();
    edited["head"]["root"] = other["head"]["root"].clone();
    cases.push((edited, "its tree head: its signature does not match"));
    let mut edited = receipt.clone();
    edited["head"] = other["head"].clone();
    cases.push((edited, "its line (seq 1) is not among the lines its tree head covers"));
    let mut edited = receipt.clone();
    edited["proof"] = json!(["00".repeat(32)]);
    cases.push((edited, "its proof does not lead"));
    let mut moved = xyz.clone();
    moved["result"]["_meta"]["toolhost/receipt"] = receipt.clone();
    cases.push((moved, "the result is not the one this receipt was signed for"));
    for (edited, says) in cases {
        let output = check_receipt(&setup, &edited, false);
        assert_eq!(output.status.code(), Some(1), "{edited}");
        assert!(stderr(&output).contains(says), "{says}: {}", stderr(&output));
    }

    // Calls in flight together: each receipt checks alone and is in the log.
    let plugins = setup.plugins.path().display().to_string();
    let (mut child, mut stdin, mut answers) = setup.serve_stdio(&plugins, INITIALIZE);
    for id in 0..6 {
        let call = json!({"jsonrpc": "2.0", "id": id + 2, "method": "tools/call",
                          "params": {"name": "sha256", "arguments": {"text": format!("in flight {id}")}}});
        writeln!(stdin, "{call}").unwrap();
    }
    let got: Vec<Value> = (0..6).map(|_| serde_json::from_str(&answers.next().unwrap().unwrap()).unwrap()).collect();
    drop(stdin);
    assert!(child.wait().unwrap().success());
    for answer in &got {
        let output = check_receipt(&setup, answer, true);
        assert!(output.status.success(), "{answer}: {}", stderr(&output));
    }
    assert!(setup.verify("audit.log", "keys/audit.pub").status.success());
}

//! External MCP servers as tools, through the real `toolhost` binary:
//! `@modelcontextprotocol/server-everything` (npm) over stdio and Streamable
//! HTTP, and servers written with the official Python `mcp` package
//! (`tests/mcp/servers/pyserver.py`), and `toolhost serve` itself: listing,
//! calls, errors, timeouts (`tool_timeout`), a tool list that changes at run
//! time (pushed, or over a subscription), a server that crashes mid-call or
//! keeps crashing (restart backoff), one that never starts and one that
//! starts late (joining `chat` and `serve` in the background), the protocol
//! revision each server speaks, the child's environment, approvals, and
//! `toolhost run` against the scripted model with an MCP tool and a plugin
//! tool in one turn.
//! The servers are installed by `tests/mcp/servers.sh` into the gitignored
//! `tests/mcp/.tools`; a failed install fails the tests.

use crate::common;

use common::model_server::{ModelServer, Script};
use common::{stderr, stdout};
use serde_json::Value;
use std::net::TcpListener;
use std::path::{Path, PathBuf};
use std::process::{Child, Command, Output, Stdio};
use std::time::{Duration, Instant};

const ABC_SHA256: &str = "ba7816bf8f01cfea414140de5dae2223b00361a396177a9cb410ff61f20015ad";

/// `tests/mcp/.tools`, installed once per test binary.
fn tools() -> PathBuf {
    common::install("mcp/servers.sh");
    Path::new(env!("CARGO_MANIFEST_DIR")).join("../tests/mcp/.tools").canonicalize().unwrap()
}

fn everything_js() -> String {
    tools().join("everything/node_modules/@modelcontextprotocol/server-everything/dist/index.js").display().to_string()
}

fn python() -> String {
    tools().join("venv/bin/python").display().to_string()
}

fn pyserver() -> String {
    Path::new(env!("CARGO_MANIFEST_DIR"))
        .join("../tests/mcp/servers/pyserver.py")
        .canonicalize()
        .unwrap()
        .display()
        .to_string()
}

/// `[mcp_servers.everything]` over stdio.
fn everything_stdio(extra: &str) -> String {
    format!("[mcp_servers.everything]\ncommand = \"node\"\nargs = [{:?}, \"stdio\"]\n{extra}\n", everything_js())
}

/// `[mcp_servers.py]`, the Python server in `mode`.
fn py(mode: &str, extra: &str) -> String {
    format!("[mcp_servers.py]\ncommand = {:?}\nargs = [{:?}, {mode:?}]\n{extra}\n", python(), pyserver())
}

/// A folder with `toolhost.toml` holding `config` and a plugins folder with `plugins`.
fn setup(config: &str, plugins: &[&str]) -> (tempfile::TempDir, tempfile::TempDir) {
    let dir = tempfile::tempdir().unwrap();
    std::fs::write(dir.path().join("toolhost.toml"), config).unwrap();
    (dir, common::plugin_dir(plugins))
}

/// Runs `toolhost --config DIR/toolhost.toml --plugins PLUGINS ARGS`.
fn toolhost(dir: &Path, plugins: &Path, args: &[&str], env: &[(&str, &str)]) -> Output {
    let config = dir.join("toolhost.toml").display().to_string();
    let plugins = plugins.display().to_string();
    let mut all = vec!["--config", &config, "--plugins", &plugins];
    all.extend_from_slice(args);
    common::toolhost_with_env(dir, &all, env)
}

fn listed(output: &Output) -> Vec<Value> {
    serde_json::from_str::<Value>(&stdout(output))
        .unwrap_or_else(|err| panic!("{err}: {}", stdout(output)))
        .as_array()
        .cloned()
        .unwrap()
}

#[test]
fn everything_over_stdio_lists_calls_and_reports_errors() {
    let (dir, plugins) = setup(&everything_stdio("tool_timeout = \"2s\""), &["hash"]);
    let output = toolhost(dir.path(), plugins.path(), &["tools", "--json"], &[]);
    assert!(output.status.success(), "{}", stderr(&output));
    let tools = listed(&output);
    let echo = tools.iter().find(|tool| tool["name"] == "mcp__everything__echo").expect("echo is listed");
    assert_eq!(echo["source"], "mcp");
    assert_eq!(echo["server"], "everything");
    assert_eq!(echo["sandboxed"], false);
    assert!(echo["input_schema"]["properties"]["message"].is_object(), "{echo}");
    assert!(tools.iter().any(|tool| tool["name"] == "sha256" && tool["source"] == "plugin"), "plugins beside");

    let output = toolhost(dir.path(), plugins.path(), &["tools"], &[]);
    assert!(stdout(&output).contains("mcp__everything__echo  (MCP server everything: external, not sandboxed)"));

    let output = toolhost(dir.path(), plugins.path(), &["call", "mcp__everything__echo", r#"{"message":"hi"}"#], &[]);
    assert!(output.status.success(), "{}", stderr(&output));
    assert!(stdout(&output).contains("Echo: hi"), "{}", stdout(&output));
    assert!(stderr(&output).contains("ok · mcp__everything__echo"), "{}", stderr(&output));
    assert!(stderr(&output).contains("MCP server everything"), "{}", stderr(&output));

    let output = toolhost(dir.path(), plugins.path(), &["call", "mcp__everything__get-sum", r#"{"a":2,"b":3}"#], &[]);
    assert!(output.status.success(), "{}", stderr(&output));
    assert!(stdout(&output).contains('5'), "{}", stdout(&output));

    // Bad arguments: the server's error, as an error result.
    let output =
        toolhost(dir.path(), plugins.path(), &["call", "mcp__everything__get-sum", r#"{"a":"two"}"#, "--json"], &[]);
    assert_eq!(output.status.code(), Some(1), "{}", stderr(&output));
    let report: Value = serde_json::from_str(&stdout(&output)).unwrap();
    assert_eq!(report["ok"], false);
    assert!(["tool_failed", "invalid_arguments"].contains(&report["error"]["kind"].as_str().unwrap()), "{report}");
    assert!(report["error"]["message"].as_str().unwrap().contains('b'), "names what is wrong: {report}");

    // A long-running tool is cut by tool_timeout.
    let started = Instant::now();
    let output = toolhost(
        dir.path(),
        plugins.path(),
        &["call", "mcp__everything__trigger-long-running-operation", r#"{"duration":30,"steps":3}"#],
        &[],
    );
    assert_eq!(output.status.code(), Some(1), "{}", stderr(&output));
    assert!(stderr(&output).contains("timed out after 2000ms"), "{}", stderr(&output));
    assert!(started.elapsed() < Duration::from_secs(20), "took {:?}", started.elapsed());
}

/// server-everything over Streamable HTTP on a free port; killed when dropped.
struct HttpEverything {
    child: Child,
    url: String,
}

impl HttpEverything {
    fn start() -> HttpEverything {
        let port = TcpListener::bind("127.0.0.1:0").unwrap().local_addr().unwrap().port();
        let child = Command::new("node")
            .args([&everything_js(), "streamableHttp"])
            .env("PORT", port.to_string())
            .stdout(Stdio::null())
            .stderr(Stdio::null())
            .spawn()
            .expect("start server-everything");
        let deadline = Instant::now() + Duration::from_secs(30);
        while std::net::TcpStream::connect(("127.0.0.1", port)).is_err() {
            assert!(Instant::now() < deadline, "server-everything did not listen on {port}");
            std::thread::sleep(Duration::from_millis(100));
        }
        HttpEverything { child, url: format!("http://127.0.0.1:{port}/mcp") }
    }
}

impl Drop for HttpEverything {
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}

#[test]
fn everything_over_streamable_http() {
    let server = HttpEverything::start();
    let config = format!(
        "[mcp_servers.web]\nurl = {:?}\ntool_timeout = \"2s\"\nbearer_token_env_var = \"WEB_TOKEN\"\n\
         http_headers = {{ \"X-Team\" = \"header-secret-value\" }}\n",
        server.url
    );
    let (dir, plugins) = setup(&config, &[]);
    let env = [("WEB_TOKEN", "token-secret-value")];
    let output = toolhost(dir.path(), plugins.path(), &["-vv", "tools", "--json"], &env);
    assert!(output.status.success(), "{}", stderr(&output));
    let names: Vec<String> = listed(&output).iter().map(|tool| tool["name"].as_str().unwrap().to_owned()).collect();
    assert!(
        names.contains(&"mcp__web__echo".to_owned()) && names.contains(&"mcp__web__get-sum".to_owned()),
        "{names:?}"
    );
    // server-everything over HTTP rejects server/discover: the initialize handshake follows.
    assert_eq!(protocol_of(&listed(&output), "web"), "2025-11-25");
    for secret in ["token-secret-value", "header-secret-value"] {
        assert!(!stderr(&output).contains(secret) && !stdout(&output).contains(secret), "{secret} was shown");
    }

    let output = toolhost(dir.path(), plugins.path(), &["call", "mcp__web__echo", r#"{"message":"over http"}"#], &env);
    assert!(output.status.success(), "{}", stderr(&output));
    assert!(stdout(&output).contains("Echo: over http"), "{}", stdout(&output));
    let output = toolhost(dir.path(), plugins.path(), &["call", "mcp__web__get-sum", r#"{"a":20,"b":22}"#], &env);
    assert!(stdout(&output).contains("42"), "{}", stdout(&output));
    let output = toolhost(dir.path(), plugins.path(), &["call", "mcp__web__get-sum", r#"{"a":[]}"#], &env);
    assert_eq!(output.status.code(), Some(1), "{}", stderr(&output));
    assert!(stderr(&output).starts_with("error: mcp__web__get-sum:"), "{}", stderr(&output));
    let output = toolhost(
        dir.path(),
        plugins.path(),
        &["call", "mcp__web__trigger-long-running-operation", r#"{"duration":30,"steps":3}"#],
        &env,
    );
    assert!(stderr(&output).contains("timed out after 2000ms"), "{}", stderr(&output));

    // A missing token variable is named, and the server left out.
    let output = toolhost(dir.path(), plugins.path(), &["tools"], &[]);
    assert!(output.status.success(), "{}", stderr(&output));
    assert!(stderr(&output).contains("`WEB_TOKEN` is not set"), "{}", stderr(&output));
}

/// `toolhost serve --http 127.0.0.1:0` over `plugins`; killed when dropped.
struct HttpToolhost {
    child: Child,
    url: String,
}

impl HttpToolhost {
    fn start(plugins: &Path) -> HttpToolhost {
        use std::io::{BufRead, BufReader};
        let mut child = Command::new(env!("CARGO_BIN_EXE_toolhost"))
            .args(["--plugins", &plugins.display().to_string(), "serve", "--no-watch", "--http", "127.0.0.1:0"])
            .env("TOOLHOST_CACHE_DIR", common::shared_cache())
            .env_remove("TOOLHOST_CONFIG")
            .stdin(Stdio::null())
            .stdout(Stdio::null())
            .stderr(Stdio::piped())
            .spawn()
            .expect("start toolhost serve --http");
        let mut lines = BufReader::new(child.stderr.take().unwrap()).lines();
        let url = loop {
            let line = lines.next().expect("toolhost serve --http said where it serves").unwrap();
            if let Some(url) = line.strip_prefix("toolhost: serving MCP at ") {
                break url.to_owned();
            }
        };
        std::thread::spawn(move || lines.for_each(drop));
        HttpToolhost { child, url }
    }
}

impl Drop for HttpToolhost {
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}

/// The protocol revision `tools --json` shows for `server`'s tools.
fn protocol_of(tools: &[Value], server: &str) -> String {
    let tool =
        tools.iter().find(|tool| tool["server"] == server).unwrap_or_else(|| panic!("no tool of {server}: {tools:?}"));
    tool["protocol"].as_str().unwrap_or_else(|| panic!("no protocol: {tool}")).to_owned()
}

#[test]
fn the_newest_revision_is_spoken_where_offered_else_the_initialize_handshake() {
    let inner = common::plugin_dir(&["hash"]);
    let served = HttpToolhost::start(inner.path());
    let config = format!(
        "[mcp_servers.http]\nurl = {:?}\n\
         [mcp_servers.stdio]\ncommand = {toolhost:?}\nargs = [\"--plugins\", {inner:?}, \"serve\", \"--no-watch\"]\n\
         [mcp_servers.pinned]\ncommand = {toolhost:?}\nargs = [\"--plugins\", {inner:?}, \"serve\", \"--no-watch\"]\n\
         protocol = \"2025-11-25\"\n{}{}",
        served.url,
        everything_stdio(""),
        py("tools", ""),
        toolhost = env!("CARGO_BIN_EXE_toolhost"),
        inner = inner.path().display().to_string(),
    );
    let (dir, plugins) = setup(&config, &[]);
    let output = toolhost(dir.path(), plugins.path(), &["-vv", "tools", "--json"], &[]);
    assert!(output.status.success(), "{}", stderr(&output));
    let tools = listed(&output);
    // toolhost's own server and the Python SDK's offer 2026-07-28 (server/discover answers);
    // server-everything knows only the handshake.
    assert_eq!(protocol_of(&tools, "http"), "2026-07-28");
    assert_eq!(protocol_of(&tools, "stdio"), "2026-07-28");
    assert_eq!(protocol_of(&tools, "py"), "2026-07-28");
    assert_eq!(protocol_of(&tools, "everything"), "2025-11-25");
    // `protocol = "2025-11-25"` pins the handshake, even with a server that offers more.
    assert_eq!(protocol_of(&tools, "pinned"), "2025-11-25");
    let log = stderr(&output);
    assert!(log.contains("speaks MCP 2026-07-28 (server/discover, stateless) server=\"http\""), "{log}");
    assert!(log.contains("speaks MCP 2025-11-25 (the initialize handshake) server=\"everything\""), "{log}");

    // Calls work in both.
    let output = toolhost(dir.path(), plugins.path(), &["call", "mcp__http__sha256", r#"{"text":"abc"}"#], &[]);
    assert!(output.status.success() && stdout(&output).contains(ABC_SHA256), "{}", stderr(&output));
    let output = toolhost(dir.path(), plugins.path(), &["call", "mcp__stdio__sha256", r#"{"text":"abc"}"#], &[]);
    assert!(output.status.success() && stdout(&output).contains(ABC_SHA256), "{}", stderr(&output));
    let output = toolhost(dir.path(), plugins.path(), &["call", "mcp__everything__echo", r#"{"message":"old"}"#], &[]);
    assert!(output.status.success() && stdout(&output).contains("Echo: old"), "{}", stderr(&output));
}

#[test]
fn a_stdio_server_gets_only_the_minimal_environment() {
    let (dir, plugins) = setup(&py("tools", "env = { EXTRA_SETTING = \"on\" }\nenv_vars = [\"PASSED_TOKEN\"]"), &[]);
    let env = [("PASSED_TOKEN", "passed-token-value"), ("NOT_PASSED", "1")];
    let output = toolhost(dir.path(), plugins.path(), &["call", "mcp__py__environment"], &env);
    assert!(output.status.success(), "{}", stderr(&output));
    let names = stdout(&output);
    for expected in ["PATH", "HOME", "PASSED_TOKEN", "EXTRA_SETTING"] {
        assert!(names.contains(expected), "{expected} missing: {names}");
    }
    assert!(!names.contains("NOT_PASSED") && !names.contains("CARGO"), "{names}");
}

#[test]
fn a_server_that_never_starts_is_one_warning_or_a_clear_stop_when_required() {
    let (dir, plugins) = setup(&py("hang", "startup_timeout = \"1s\""), &["hash"]);
    let started = Instant::now();
    let output = toolhost(dir.path(), plugins.path(), &["tools"], &[]);
    assert!(output.status.success(), "{}", stderr(&output));
    assert!(started.elapsed() < Duration::from_secs(15), "took {:?}", started.elapsed());
    let text = stderr(&output);
    let warnings: Vec<&str> = text.lines().filter(|line| line.starts_with("warning:")).collect();
    assert_eq!(warnings.len(), 1, "{}", stderr(&output));
    assert!(
        warnings[0].contains("`py` did not start within 1s") && warnings[0].contains("startup_timeout"),
        "{warnings:?}"
    );
    assert!(stdout(&output).contains("sha256"), "the plugins still load");

    let (dir, plugins) = setup(&py("hang", "startup_timeout = \"1s\"\nrequired = true"), &["hash"]);
    let output = toolhost(dir.path(), plugins.path(), &["call", "sha256", r#"{"text":"abc"}"#], &[]);
    assert_eq!(output.status.code(), Some(2), "{}", stderr(&output));
    let text = stderr(&output);
    assert!(text.contains("`py` did not start within 1s") && text.contains("is `required`"), "{text}");
    assert_eq!(text.lines().count(), 1, "one line: {text}");
}

/// `[mcp_servers.raw]`: tests/mcp/servers/rawserver.py (no SDK) in `mode`.
fn raw(mode: &str) -> String {
    let script = Path::new(env!("CARGO_MANIFEST_DIR")).join("../tests/mcp/servers/rawserver.py");
    format!("[mcp_servers.raw]\ncommand = \"python3\"\nargs = [{:?}, {mode:?}]\n", script.canonicalize().unwrap())
}

#[test]
fn a_hostile_listing_costs_only_its_bad_tools_each_said_once() {
    let (dir, plugins) = setup(&raw("bad-listing"), &["hash"]);
    let output = toolhost(dir.path(), plugins.path(), &["tools", "--json"], &[]);
    assert!(output.status.success(), "{}", stderr(&output));
    let names: Vec<String> =
        listed(&output).iter().filter_map(|tool| tool["name"].as_str().map(str::to_owned)).collect();
    let mut from_raw: Vec<&String> = names.iter().filter(|name| name.starts_with("mcp__raw__")).collect();
    from_raw.sort();
    assert_eq!(from_raw, ["mcp__raw__also_good", "mcp__raw__good"], "the others stay");
    assert!(names.iter().any(|name| name == "sha256"), "the plugins too: {names:?}");
    let text = stderr(&output);
    let warnings: Vec<&str> = text.lines().filter(|line| line.starts_with("warning:")).collect();
    for (tool, why) in [
        ("schema_is_a_string", "not a valid MCP tool"),
        ("no_schema", "not a valid MCP tool"),
        ("describes_a_string", "does not describe an object"),
        ("invalid_schema", "not valid JSON Schema"),
    ] {
        let about: Vec<&&str> = warnings.iter().filter(|line| line.contains(&format!("`{tool}`"))).collect();
        assert_eq!(about.len(), 1, "{tool}: {text}");
        assert!(about[0].contains(why) && about[0].contains("left out"), "{tool}: {text}");
    }
    let twice: Vec<&&str> = warnings.iter().filter(|line| line.contains("more than once")).collect();
    assert_eq!(twice.len(), 1, "{text}");
    assert_eq!(twice[0].matches("raw").count(), 1, "the server is named once: {}", twice[0]);
    assert_eq!(warnings.len(), 5, "{text}");
    let output = toolhost(dir.path(), plugins.path(), &["call", "mcp__raw__also_good", "{}"], &[]);
    assert!(output.status.success() && stdout(&output).contains("called also_good"), "{}", stderr(&output));
}

#[test]
fn a_server_that_prints_to_its_stdout_is_said_once_and_still_answers() {
    let (dir, plugins) = setup(&raw("noisy"), &[]);
    let output = toolhost(dir.path(), plugins.path(), &["call", "mcp__raw__good", r#"{"x":"y"}"#], &[]);
    assert!(output.status.success(), "{}", stderr(&output));
    assert!(stdout(&output).contains("called good"), "{}", stdout(&output));
    let text = stderr(&output);
    let noisy: Vec<&str> = text.lines().filter(|line| line.contains("not JSON-RPC")).collect();
    assert_eq!(noisy.len(), 1, "once per server, however many lines: {text}");
    assert!(noisy[0].contains("`raw`") && noisy[0].contains("Server ready!"), "{text}");
}

/// A stdio server that closes its input: toolhost's next write meets a
/// closed pipe, which is that server's failure, never toolhost's death (a
/// SIGPIPE used to end the whole process, `serve` included).
#[test]
fn a_server_that_closes_its_input_fails_its_call_and_toolhost_goes_on() {
    let (dir, plugins) = setup(&raw("deaf"), &["hash"]);
    let output = toolhost(dir.path(), plugins.path(), &["call", "mcp__raw__good", r#"{"x":"y"}"#], &[]);
    let text = stderr(&output);
    assert_eq!(output.status.code(), Some(1), "a failed call, not a killed process: {:?} {text}", output.status);
    assert!(text.contains("MCP server `raw` stopped during the call (it stopped reading its input"), "{text}");
    assert!(!text.contains("panicked") && !text.contains("rmcp::"), "{text}");
}

/// `[mcp_servers.py]` that takes 3 s to start, with a 1 s `startup_timeout`.
fn slow_py() -> String {
    py("slow", "startup_timeout = \"1s\"\nenv = { PYSERVER_DELAY = \"3\" }")
}

#[test]
fn a_slow_server_joins_a_chat_before_the_next_turn() {
    let script = Script { anthropic: false, stream: false };
    let (dir, plugins) = setup(&slow_py(), &["hash"]);
    let server = ModelServer::start(vec![script.text("first answer"), script.text("second answer")]);
    let config = dir.path().join("toolhost.toml").display().to_string();
    let plugins_arg = plugins.path().display().to_string();
    let mut chat =
        common::chat::Chat::start(dir.path(), &["--config", &config, "--plugins", &plugins_arg], script, &server);
    chat.say("first");
    chat.wait_for_requests(&server, 1, Duration::from_secs(60));
    chat.wait_for("MCP server `py` is up after all", Duration::from_secs(60));
    chat.say("second");
    chat.wait_for_requests(&server, 2, Duration::from_secs(60));
    let (output, lines) = chat.finish();
    assert!(output.status.success(), "{lines:?}");
    let offered = |index: usize| -> Vec<String> {
        server.requests()[index].body["tools"]
            .as_array()
            .unwrap()
            .iter()
            .filter_map(|tool| tool["function"]["name"].as_str().map(str::to_owned))
            .collect()
    };
    assert!(!offered(0).contains(&"mcp__py__add_numbers".to_owned()), "{:?}", offered(0));
    assert!(offered(1).contains(&"mcp__py__add_numbers".to_owned()), "{:?}", offered(1));
    let warnings: Vec<&String> = lines.iter().filter(|line| line.starts_with("warning:")).collect();
    assert_eq!(warnings.len(), 1, "one warning: {lines:?}");
    assert!(
        warnings[0].contains("`py` did not start within 1s") && warnings[0].contains("its tools join when it is up"),
        "{warnings:?}"
    );
}

#[test]
fn a_slow_server_joins_serve_as_a_list_changed() {
    use std::io::{BufRead, BufReader, Write};
    let (dir, plugins) = setup(&slow_py(), &["hash"]);
    let config = dir.path().join("toolhost.toml").display().to_string();
    let mut child = Command::new(env!("CARGO_BIN_EXE_toolhost"))
        .current_dir(dir.path())
        .args(["--config", &config, "--plugins", &plugins.path().display().to_string()])
        .args(["serve", "--no-watch", "--include-mcp"])
        .env("TOOLHOST_CACHE_DIR", common::shared_cache())
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .unwrap();
    let mut stdin = child.stdin.take().unwrap();
    let (sender, messages) = std::sync::mpsc::channel::<Value>();
    let stdout = BufReader::new(child.stdout.take().unwrap());
    std::thread::spawn(move || {
        for line in stdout.lines().map_while(Result::ok) {
            let _ = sender.send(serde_json::from_str(&line).expect("stdout carries JSON-RPC only"));
        }
    });
    let stderr = BufReader::new(child.stderr.take().unwrap());
    let warnings = std::thread::spawn(move || {
        stderr.lines().map_while(Result::ok).filter(|line| line.starts_with("warning:")).collect::<Vec<_>>()
    });
    let mut send = |message: Value| writeln!(stdin, "{message}").unwrap();
    let wait = |what: &dyn Fn(&Value) -> bool| -> Value {
        loop {
            let message = messages.recv_timeout(Duration::from_secs(60)).expect("toolhost serve answered");
            if what(&message) {
                return message;
            }
        }
    };
    let names = |listed: &Value| -> Vec<String> {
        listed["result"]["tools"].as_array().unwrap().iter().map(|t| t["name"].as_str().unwrap().to_owned()).collect()
    };
    send(serde_json::json!({"jsonrpc":"2.0","id":1,"method":"initialize","params":{
        "protocolVersion":"2025-11-25","capabilities":{},"clientInfo":{"name":"test","version":"1"}}}));
    wait(&|message| message["id"] == 1);
    send(serde_json::json!({"jsonrpc":"2.0","method":"notifications/initialized"}));
    send(serde_json::json!({"jsonrpc":"2.0","id":2,"method":"tools/list"}));
    let before = names(&wait(&|message| message["id"] == 2));
    assert!(
        before.contains(&"sha256".to_owned()) && !before.contains(&"mcp__py__add_numbers".to_owned()),
        "{before:?}"
    );

    // Plugins still compiling announce themselves the same way: list again
    // at each announcement until the server's tool is there.
    let mut id = 100;
    loop {
        wait(&|message| message["method"] == "notifications/tools/list_changed");
        id += 1;
        send(serde_json::json!({"jsonrpc":"2.0","id":id,"method":"tools/list"}));
        let after = names(&wait(&|message| message["id"] == id));
        if after.contains(&"mcp__py__add_numbers".to_owned()) {
            break;
        }
        assert!(id < 150, "the slow server's tools never joined: {after:?}");
    }
    send(serde_json::json!({"jsonrpc":"2.0","id":4,"method":"tools/call","params":{
        "name":"mcp__py__add_numbers","arguments":{"a":2,"b":3}}}));
    let called = wait(&|message| message["id"] == 4);
    assert!(called.to_string().contains("The sum of 2 and 3 is 5."), "{called}");

    drop(stdin);
    let _ = child.wait();
    let warnings = warnings.join().unwrap();
    assert_eq!(warnings.len(), 1, "{warnings:?}");
    assert!(warnings[0].contains("`py` did not start within 1s"), "{warnings:?}");
}

/// Runs `toolhost run` against the scripted model, with `config`.
fn run(dir: &Path, plugins: &Path, server: &ModelServer, script: Script, args: &[&str]) -> Output {
    let config = dir.join("toolhost.toml").display().to_string();
    Command::new(env!("CARGO_BIN_EXE_toolhost"))
        .current_dir(dir)
        .args(["--config", &config, "--plugins", &plugins.display().to_string(), "run"])
        .args(args)
        .args(["--model", script.model(), "--base-url", &script.base_url(server)])
        .env("TOOLHOST_CACHE_DIR", common::shared_cache())
        .env("OPENAI_API_KEY", "test-key")
        .env_remove("TOOLHOST_MODEL")
        .stdin(Stdio::null())
        .output()
        .unwrap()
}

#[test]
fn run_calls_an_mcp_tool_and_a_plugin_tool_in_one_turn() {
    let script = Script { anthropic: false, stream: true };
    let (dir, plugins) = setup(&everything_stdio(""), &["hash"]);
    let server = ModelServer::start(vec![
        script.calls(&[
            ("c1", "mcp__everything__echo", r#"{"message":"from the model"}"#),
            ("c2", "sha256", r#"{"text":"abc"}"#),
            ("c3", "mcp__everything__get-sum", r#"{"a":1}"#),
        ]),
        script.text("done"),
    ]);
    let transcript = dir.path().join("t.json");
    let events = dir.path().join("e.jsonl");
    let output = run(
        dir.path(),
        plugins.path(),
        &server,
        script,
        &["both", "--transcript", transcript.to_str().unwrap(), "--events", events.to_str().unwrap()],
    );
    assert!(output.status.success(), "{}", stderr(&output));
    let requests = server.requests();
    let offered: Vec<&str> = requests[0].body["tools"]
        .as_array()
        .unwrap()
        .iter()
        .filter_map(|tool| tool["function"]["name"].as_str())
        .collect();
    assert!(offered.contains(&"mcp__everything__echo") && offered.contains(&"sha256"), "{offered:?}");
    let results = script.results(&requests[1]);
    assert_eq!(results.len(), 3, "{results:?}");
    assert_eq!((results[0].0.as_str(), results[0].2), ("c1", false));
    assert!(results[0].1.contains("Echo: from the model"), "{results:?}");
    assert_eq!((results[1].0.as_str(), results[1].1.as_str(), results[1].2), ("c2", ABC_SHA256, false));
    assert_eq!((results[2].0.as_str(), results[2].2), ("c3", true), "a bad call is an error result: {results:?}");

    let events = std::fs::read_to_string(&events).unwrap();
    assert!(
        events.contains(r#""source":"mcp everything""#) && events.contains(r#""source":"plugin hash""#),
        "{events}"
    );
    let saved: Value = serde_json::from_slice(&std::fs::read(&transcript).unwrap()).unwrap();
    let saved_results = &saved["messages"][2]["results"];
    assert_eq!(saved_results[0]["source"], "mcp everything");
    assert_eq!(saved_results[1]["source"], "plugin hash");
}

/// A 2025-11-25 server pushes `notifications/tools/list_changed` in its
/// session, before the answer to the call that changed the list: the very
/// next turn sees the new tool.
#[test]
fn a_changed_tool_list_is_seen_before_the_next_turn() {
    let script = Script { anthropic: false, stream: false };
    let (dir, plugins) = setup(&py("tools", "protocol = \"2025-11-25\""), &[]);
    let server = ModelServer::start(vec![
        script.calls(&[("g", "mcp__py__grow", "{}")]),
        script.calls(&[("l", "mcp__py__late_tool", "{}")]),
        script.text("done"),
    ]);
    let output = run(dir.path(), plugins.path(), &server, script, &["grow"]);
    assert!(output.status.success(), "{}", stderr(&output));
    let requests = server.requests();
    let names = |request: usize| -> Vec<String> {
        requests[request].body["tools"]
            .as_array()
            .unwrap()
            .iter()
            .filter_map(|tool| tool["function"]["name"].as_str().map(str::to_owned))
            .collect()
    };
    assert!(!names(0).contains(&"mcp__py__late_tool".to_owned()), "{:?}", names(0));
    assert!(names(1).contains(&"mcp__py__late_tool".to_owned()), "{:?}", names(1));
    let results = script.results(&requests[2]);
    assert_eq!(results[0].0, "l");
    assert!(results[0].1.contains("late tool here") && !results[0].2, "{results:?}");
}

/// A 2026-07-28 server tells its `subscriptions/listen` subscribers, on a
/// stream of its own (so not necessarily before the call's answer): the
/// first turn after the notification arrived sees the new tool.
#[test]
fn a_changed_tool_list_reaches_a_chat_over_a_subscription() {
    let script = Script { anthropic: false, stream: false };
    let (dir, plugins) = setup(&py("tools", ""), &[]);
    let server = ModelServer::start(vec![
        script.calls(&[("g", "mcp__py__grow", "{}")]),
        script.text("grown"),
        script.calls(&[("l", "mcp__py__late_tool", "{}")]),
        script.text("done"),
    ]);
    let config = dir.path().join("toolhost.toml").display().to_string();
    let plugins_arg = plugins.path().display().to_string();
    let mut chat =
        common::chat::Chat::start(dir.path(), &["--config", &config, "--plugins", &plugins_arg], script, &server);
    chat.say("grow");
    chat.wait_for_requests(&server, 2, Duration::from_secs(60));
    chat.wait_for("MCP server `py` says its tools changed (subscriptions/listen)", Duration::from_secs(30));
    chat.say("use the new tool");
    chat.wait_for_requests(&server, 4, Duration::from_secs(60));
    let (output, lines) = chat.finish();
    assert!(output.status.success(), "{lines:?}");
    let requests = server.requests();
    let offered = |index: usize| -> Vec<String> {
        requests[index].body["tools"]
            .as_array()
            .unwrap()
            .iter()
            .filter_map(|tool| tool["function"]["name"].as_str().map(str::to_owned))
            .collect()
    };
    assert!(!offered(0).contains(&"mcp__py__late_tool".to_owned()), "{:?}", offered(0));
    assert!(offered(2).contains(&"mcp__py__late_tool".to_owned()), "{:?}", offered(2));
    let results = script.results(&requests[3]);
    assert!(results[0].1.contains("late tool here") && !results[0].2, "{results:?}");
}

#[test]
fn a_server_that_crashes_mid_call_fails_that_call_and_is_started_again() {
    let script = Script { anthropic: false, stream: false };
    let (dir, plugins) = setup(&py("tools", ""), &[]);
    let server = ModelServer::start(vec![
        script.calls(&[("p1", "mcp__py__pid", "{}")]),
        script.calls(&[("boom", "mcp__py__crash", "{}")]),
        script.calls(&[("p2", "mcp__py__pid", "{}")]),
        script.text("done"),
    ]);
    let output = run(dir.path(), plugins.path(), &server, script, &["crash"]);
    assert!(output.status.success(), "{}", stderr(&output));
    let requests = server.requests();
    let first = script.results(&requests[1]);
    let crashed = script.results(&requests[2]);
    let second = script.results(&requests[3]);
    assert!(crashed[0].2, "{crashed:?}");
    assert!(crashed[0].1.contains("MCP server `py` stopped during the call"), "{crashed:?}");
    assert!(crashed[0].1.contains("starts it again on the next call"), "{crashed:?}");
    assert!(!second[0].2, "the next call runs on a new server: {second:?}");
    assert_ne!(first[0].1, second[0].1, "a new process answers: {first:?} {second:?}");
}

#[test]
fn a_server_that_keeps_crashing_is_restarted_after_a_pause_and_meanwhile_fails_at_once() {
    let script = Script { anthropic: false, stream: false };
    let dir = tempfile::tempdir().unwrap();
    let starts = dir.path().join("starts.txt");
    let config = format!(
        "[model]\nmax_concurrent_tools = 1\n[plugins.sleep_forever.limits]\ntimeout = \"1s\"\n{}",
        py("tools", &format!("env = {{ PYSERVER_STARTS = {:?} }}", starts.display().to_string()))
    );
    std::fs::write(dir.path().join("toolhost.toml"), config).unwrap();
    let plugins = common::plugin_dir(&["sleep_forever"]);
    // One call at a time, in this order, with no model round trip between them;
    // `nap` (a plugin cut by its 1 s timeout) outlasts the 0.5 s pause.
    let server = ModelServer::start(vec![
        script.calls(&[
            ("p1", "mcp__py__pid", "{}"),
            ("crash1", "mcp__py__crash", "{}"),
            ("p2", "mcp__py__pid", "{}"),
            ("crash2", "mcp__py__crash", "{}"),
            ("p3", "mcp__py__pid", "{}"),
            ("nap", "sleep_forever", "{}"),
            ("p4", "mcp__py__pid", "{}"),
        ]),
        script.text("done"),
    ]);
    let output = run(dir.path(), plugins.path(), &server, script, &["crash twice"]);
    assert!(output.status.success(), "{}", stderr(&output));
    let results = script.results(&server.requests()[1]);
    let ids: Vec<&str> = results.iter().map(|result| result.0.as_str()).collect();
    assert_eq!(ids, ["p1", "crash1", "p2", "crash2", "p3", "nap", "p4"]);
    let (first, crash1, second, crash2, third) = (&results[0], &results[1], &results[2], &results[3], &results[4]);
    assert!(!first.2 && !second.2, "{results:?}");
    // The first crash: started again by the next call, a new process.
    assert!(crash1.2 && crash1.1.contains("starts it again on the next call"), "{crash1:?}");
    assert_ne!(first.1, second.1, "a new process answers: {results:?}");
    // The second crash in a row: a pause before the next start.
    assert!(crash2.2 && crash2.1.contains("starts it again at the first call after 0."), "{crash2:?}");
    assert!(third.2, "inside the pause the call fails: {third:?}");
    assert!(
        third.1.contains("MCP server `py` stopped")
            && third.1.contains("failed 2 times in a row")
            && third.1.contains("the first call after 0."),
        "{third:?}"
    );
    // After the pause, the next call starts it again.
    let fourth = &results[6];
    assert!(results[5].2 && !fourth.2, "{results:?}");
    assert!(fourth.1 != first.1 && fourth.1 != second.1, "a new process answers: {results:?}");
    let started: Vec<String> = std::fs::read_to_string(&starts).unwrap().lines().map(str::to_owned).collect();
    assert_eq!(started.len(), 3, "no process is started inside the pause: {started:?}");
    assert!(fourth.1.contains(&started[2]), "the third process answers: {started:?} {fourth:?}");
}

#[test]
fn approvals_apply_per_server_and_hints_do_not_loosen_them() {
    let script = Script { anthropic: false, stream: false };
    let config = format!("{}\n[approvals]\nservers = {{ everything = \"deny\" }}\n", everything_stdio(""));
    let (dir, plugins) = setup(&config, &["hash"]);
    let server = ModelServer::start(vec![
        // echo declares itself read-only; the server's policy still applies.
        script.calls(&[("e", "mcp__everything__echo", r#"{"message":"x"}"#), ("h", "sha256", r#"{"text":"abc"}"#)]),
        script.text("done"),
    ]);
    let output = run(dir.path(), plugins.path(), &server, script, &["deny"]);
    assert!(output.status.success(), "{}", stderr(&output));
    let results = script.results(&server.requests()[1]);
    assert!(results[0].2 && results[0].1.contains("does not allow"), "{results:?}");
    assert_eq!(results[1].1, ABC_SHA256);
}

/// The processes whose parent is `pid`.
fn children_of(pid: u32) -> Vec<u32> {
    let mut children = Vec::new();
    for entry in std::fs::read_dir("/proc").unwrap().flatten() {
        let Ok(child) = entry.file_name().to_string_lossy().parse::<u32>() else { continue };
        let Ok(stat) = std::fs::read_to_string(format!("/proc/{child}/stat")) else { continue };
        // pid (comm) state ppid …; comm may hold spaces, so split after the last ')'.
        let fields: Vec<&str> = stat.rsplit_once(')').map(|(_, rest)| rest).unwrap_or("").split_whitespace().collect();
        if fields.get(1).and_then(|ppid| ppid.parse::<u32>().ok()) == Some(pid) {
            children.push(child);
        }
    }
    children
}

fn alive(pid: u32) -> bool {
    std::fs::read_to_string(format!("/proc/{pid}/stat"))
        .is_ok_and(|stat| stat.rsplit_once(')').is_some_and(|(_, rest)| !rest.trim_start().starts_with('Z')))
}

#[test]
fn ctrl_c_during_an_mcp_call_leaves_no_child_behind() {
    let script = Script { anthropic: false, stream: false };
    let (dir, plugins) = setup(&py("tools", ""), &[]);
    let server = ModelServer::start(vec![script.calls(&[("s", "mcp__py__sleep", "{}")])]);
    let events = dir.path().join("e.jsonl");
    let config = dir.path().join("toolhost.toml").display().to_string();
    let child = Command::new(env!("CARGO_BIN_EXE_toolhost"))
        .current_dir(dir.path())
        .args(["--config", &config, "--plugins", &plugins.path().display().to_string(), "run", "sleep"])
        .args(["--events", events.to_str().unwrap()])
        .args(["--model", script.model(), "--base-url", &script.base_url(&server)])
        .env("TOOLHOST_CACHE_DIR", common::shared_cache())
        .env("OPENAI_API_KEY", "test-key")
        .stdin(Stdio::null())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .unwrap();
    let deadline = Instant::now() + Duration::from_secs(30);
    while !std::fs::read_to_string(&events).is_ok_and(|text| text.contains("tool_call_started")) {
        assert!(Instant::now() < deadline, "the call never started");
        std::thread::sleep(Duration::from_millis(20));
    }
    let servers = children_of(child.id());
    assert!(!servers.is_empty(), "the MCP server runs as toolhost's child");
    std::thread::sleep(Duration::from_millis(200));
    // SAFETY: sending SIGINT to our own child process.
    unsafe { libc::kill(child.id() as i32, libc::SIGINT) };
    let output = child.wait_with_output().unwrap();
    assert_eq!(output.status.code(), Some(130), "{}", stderr(&output));
    let deadline = Instant::now() + Duration::from_secs(5);
    while servers.iter().any(|pid| alive(*pid)) {
        assert!(Instant::now() < deadline, "the MCP server outlived toolhost: {servers:?}");
        std::thread::sleep(Duration::from_millis(50));
    }
}

/// Runs the conformance suite's client `scenario` with `toolhost` as the client.
fn conformance(scenario: &str) -> Output {
    let tools = tools();
    let suite = tools.join("conformance/node_modules/@modelcontextprotocol/conformance/dist/index.js");
    let node22 = tools.join("node22/node_modules/.bin/node");
    let wrapper = Path::new(env!("CARGO_MANIFEST_DIR")).join("../tests/mcp/conformance-client.sh");
    let results = tempfile::tempdir().unwrap();
    Command::new(node22)
        .arg(suite)
        .args(["client", "--command", &format!("bash {}", wrapper.display()), "--scenario", scenario])
        .args(["-o", &results.path().display().to_string()])
        .current_dir(results.path())
        .env("TOOLHOST_BIN", env!("CARGO_BIN_EXE_toolhost"))
        .env("TOOLHOST_CACHE_DIR", common::shared_cache())
        .output()
        .expect("run the conformance suite")
}

#[test]
fn conformance_client_scenarios_pass() {
    for scenario in ["initialize", "tools_call", "sse-retry"] {
        let output = conformance(scenario);
        let text = format!("{}{}", stdout(&output), stderr(&output));
        assert!(output.status.success(), "conformance scenario {scenario} failed:\n{text}");
        assert!(text.contains("0 failed"), "{scenario}: {text}");
    }
}

/// Speaks MCP over stdio to `toolhost serve` (newline-delimited JSON-RPC):
/// initialize, list the tools, call `call` with `arguments`; returns the
/// tools/list and tools/call results.
fn serve_list_and_call(dir: &Path, plugins: &Path, flags: &[&str], call: &str, arguments: &str) -> (Value, Value) {
    use std::io::{BufRead, BufReader, Write};
    let config = dir.join("toolhost.toml").display().to_string();
    let mut child = Command::new(env!("CARGO_BIN_EXE_toolhost"))
        .current_dir(dir)
        .args(["--config", &config, "--plugins", &plugins.display().to_string(), "serve", "--no-watch"])
        .args(flags)
        .env("TOOLHOST_CACHE_DIR", common::shared_cache())
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .stderr(Stdio::inherit())
        .spawn()
        .unwrap();
    let mut stdin = child.stdin.take().unwrap();
    let mut lines = BufReader::new(child.stdout.take().unwrap()).lines();
    let mut send = |message: Value| writeln!(stdin, "{message}").unwrap();
    let mut answer = |id: u64| -> Value {
        loop {
            let line = lines.next().expect("toolhost serve answered").unwrap();
            let message: Value = serde_json::from_str(&line).unwrap();
            if message["id"] == id {
                return message["result"].clone();
            }
        }
    };
    send(serde_json::json!({"jsonrpc":"2.0","id":1,"method":"initialize","params":{
        "protocolVersion":"2025-11-25","capabilities":{},"clientInfo":{"name":"test","version":"1"}}}));
    answer(1);
    send(serde_json::json!({"jsonrpc":"2.0","method":"notifications/initialized"}));
    // `serve` answers while plugins and MCP servers still load: list again
    // (as a client told `list_changed` does) until the tool to call is there.
    let started = std::time::Instant::now();
    let mut id = 1;
    let listed = loop {
        id += 1;
        send(serde_json::json!({"jsonrpc":"2.0","id":id,"method":"tools/list"}));
        let listed = answer(id);
        let has =
            |name: &str| listed["tools"].as_array().is_some_and(|tools| tools.iter().any(|tool| tool["name"] == name));
        if has(call) || started.elapsed() > std::time::Duration::from_secs(90) {
            break listed;
        }
        std::thread::sleep(std::time::Duration::from_millis(200));
    };
    let arguments: Value = serde_json::from_str(arguments).unwrap();
    id += 1;
    send(
        serde_json::json!({"jsonrpc":"2.0","id":id,"method":"tools/call","params":{"name":call,"arguments":arguments}}),
    );
    let called = answer(id);
    let _ = send;
    drop(stdin);
    let _ = child.wait();
    (listed, called)
}

#[test]
fn serve_re_exports_mcp_tools_only_with_include_mcp() {
    let (dir, plugins) = setup(&everything_stdio(""), &["hash"]);
    let names = |listed: &Value| -> Vec<String> {
        listed["tools"].as_array().unwrap().iter().map(|tool| tool["name"].as_str().unwrap().to_owned()).collect()
    };
    let (listed, called) = serve_list_and_call(dir.path(), plugins.path(), &[], "sha256", r#"{"text":"abc"}"#);
    assert!(names(&listed).contains(&"sha256".to_owned()));
    assert!(!names(&listed).iter().any(|name| name.starts_with("mcp__")), "off by default: {listed}");
    assert!(called.to_string().contains(ABC_SHA256), "{called}");

    let (listed, called) = serve_list_and_call(
        dir.path(),
        plugins.path(),
        &["--include-mcp"],
        "mcp__everything__echo",
        r#"{"message":"through toolhost"}"#,
    );
    assert!(
        names(&listed).contains(&"mcp__everything__echo".to_owned()) && names(&listed).contains(&"sha256".to_owned())
    );
    assert!(called.to_string().contains("Echo: through toolhost"), "{called}");
    assert_ne!(called["isError"], true, "{called}");
}

#[test]
fn a_call_cut_by_tool_timeout_is_cancelled_on_the_server() {
    let script = Script { anthropic: false, stream: false };
    let (dir, plugins) = setup(&py("tools", "tool_timeout = \"1s\""), &[]);
    let server = ModelServer::start(vec![
        script.calls(&[("s", "mcp__py__sleep", "{}")]),
        script.calls(&[("w", "mcp__py__was_cancelled", "{}")]),
        script.text("done"),
    ]);
    let output = run(dir.path(), plugins.path(), &server, script, &["sleep"]);
    assert!(output.status.success(), "{}", stderr(&output));
    let requests = server.requests();
    let slept = script.results(&requests[1]);
    // The message names the setting, its value and how to raise it.
    assert!(
        slept[0].2
            && slept[0].1.contains("timed out after 1000ms, the `tool_timeout` of [mcp_servers.py]")
            && slept[0].1.contains("raise `tool_timeout` there"),
        "{slept:?}"
    );
    let asked = script.results(&requests[2]);
    assert!(asked[0].1.contains("cancelled: sleep"), "the server was sent notifications/cancelled: {asked:?}");
}

#[test]
fn a_name_two_servers_would_share_is_refused_from_both() {
    // `py.x` and `py_x` clean to the same server part, so both would offer `mcp__py_x__add_numbers`.
    let config = format!(
        "[mcp_servers.\"py.x\"]\ncommand = {python:?}\nargs = [{script:?}, \"tools\"]\n\
         [mcp_servers.py_x]\ncommand = {python:?}\nargs = [{script:?}, \"tools\"]\n",
        python = python(),
        script = pyserver()
    );
    let (dir, plugins) = setup(&config, &[]);
    let output = toolhost(dir.path(), plugins.path(), &["tools", "--json"], &[]);
    assert!(output.status.success(), "{}", stderr(&output));
    let names: Vec<String> = listed(&output).iter().map(|tool| tool["name"].as_str().unwrap().to_owned()).collect();
    assert!(!names.contains(&"mcp__py_x__add_numbers".to_owned()), "{names:?}");
    let text = stderr(&output);
    assert!(
        text.contains("[mcp_servers.py.x] and [mcp_servers.py_x]: both offer a tool named `mcp__py_x__add_numbers`"),
        "{text}"
    );
}

#[test]
fn ctrl_c_during_call_leaves_no_child_behind() {
    let (dir, plugins) = setup(&py("tools", ""), &[]);
    let config = dir.path().join("toolhost.toml").display().to_string();
    let child = Command::new(env!("CARGO_BIN_EXE_toolhost"))
        .current_dir(dir.path())
        .args(["--config", &config, "--plugins", &plugins.path().display().to_string(), "call", "mcp__py__sleep"])
        .env("TOOLHOST_CACHE_DIR", common::shared_cache())
        .stdin(Stdio::null())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .unwrap();
    let deadline = Instant::now() + Duration::from_secs(30);
    let mut servers = Vec::new();
    while servers.is_empty() {
        assert!(Instant::now() < deadline, "the MCP server never started");
        std::thread::sleep(Duration::from_millis(50));
        servers = children_of(child.id());
    }
    // Past the handshake and into the call.
    std::thread::sleep(Duration::from_millis(1500));
    // SAFETY: sending SIGINT to our own child process.
    unsafe { libc::kill(child.id() as i32, libc::SIGINT) };
    let output = child.wait_with_output().unwrap();
    assert_eq!(output.status.code(), Some(130), "{}", stderr(&output));
    assert!(stderr(&output).contains("cancelled"), "{}", stderr(&output));
    let deadline = Instant::now() + Duration::from_secs(5);
    while servers.iter().any(|pid| alive(*pid)) {
        assert!(Instant::now() < deadline, "the MCP server outlived toolhost: {servers:?}");
        std::thread::sleep(Duration::from_millis(50));
    }
}

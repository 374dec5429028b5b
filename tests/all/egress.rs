//! Egress by method and path, and secrets bound to their hosts, through the
//! real binary (`call`, `run` with the scripted model server, `serve`): the
//! `http_send` test plugin sends the request asked (any method, headers,
//! body chunks, its granted secrets filled in) to test servers on
//! 127.0.0.1, which record what reached them.

use crate::common;

use common::model_server::{ModelServer, Script};
use common::server::TestServer;
use common::{plugin_dir, stderr, stdout, toolhost_with_env};
use serde_json::{Value, json};
use std::path::Path;
use std::process::Command;

/// A folder with a fresh audit key pair and `toolhost.toml`: `[audit]`
/// logging to `audit.log`, then `config`; and the plugins folder with `names`.
fn setup(config: &str, names: &[&str]) -> (tempfile::TempDir, tempfile::TempDir) {
    let dir = tempfile::tempdir().unwrap();
    std::fs::create_dir(dir.path().join("keys")).unwrap();
    let output = toolhost_with_env(dir.path(), &["audit", "keygen", "--out", "keys"], &[]);
    assert!(output.status.success(), "{}", stderr(&output));
    let plugins = plugin_dir(names);
    let text = format!(
        "plugins_dir = {:?}\n[audit]\nfile = \"audit.log\"\nkey = \"keys/audit.key\"\n{config}",
        plugins.path().display().to_string()
    );
    std::fs::write(dir.path().join("toolhost.toml"), text).unwrap();
    (dir, plugins)
}

/// `toolhost call http_send ARGS --json` in `dir`: the report.
fn send(dir: &Path, arguments: Value, env: &[(&str, &str)]) -> Value {
    let output = toolhost_with_env(dir, &["call", "http_send", &arguments.to_string(), "--json"], env);
    serde_json::from_str(&stdout(&output)).unwrap_or_else(|err| panic!("{err}: {}{}", stdout(&output), stderr(&output)))
}

/// The audit log's lines.
fn audit_lines(dir: &Path) -> Vec<Value> {
    let text = std::fs::read_to_string(dir.join("audit.log")).unwrap_or_default();
    text.lines().map(|line| serde_json::from_str(line).unwrap()).collect()
}

fn answer(report: &Value) -> String {
    report["output"]["value"].as_str().map(str::to_owned).unwrap_or_else(|| report["error"].to_string())
}

#[test]
fn an_http_grant_names_methods_and_paths_and_every_spelling_of_another_path_is_refused() {
    let api = TestServer::start();
    let origin = api.origin();
    let entries = format!("[\"GET,HEAD {origin}/echo/**\", \"POST {origin}/upload\", \"GET {origin}/redirect\"]");
    let config = format!("[plugins.http_send]\nhttp = {entries}\n[plugins.fetch]\nhttp = {entries}\n");
    let (dir, _plugins) = setup(&config, &["http_send", "fetch"]);

    let report = send(dir.path(), json!({"url": api.url("/echo/a?page=2")}), &[]);
    assert!(answer(&report).starts_with("200 path: /echo/a?page=2"), "{report}");
    let report = send(dir.path(), json!({"method": "POST", "url": api.url("/upload"), "body": ["abc"]}), &[]);
    assert_eq!(answer(&report), "200 received 3 bytes", "{report}");
    let seen = api.seen().len();

    // Another method, another path, and every other spelling of a path
    // outside `/echo/**`: refused like an ungranted host, before anything left.
    for (method, path) in [
        ("POST", "/echo/a"),
        ("DELETE", "/echo/a"),
        ("get", "/echo/a"),
        ("GET", "/hello"),
        ("GET", "/upload"),
        ("GET", "/echo/../hello"),
        ("GET", "/echo/%2e%2e/hello"),
        ("GET", "/echo/%2E%2E/hello"),
        ("GET", "/echo/x%2F..%2F..%2Fhello"),
        ("GET", "/echo/x%2f..%2f..%2fhello"),
        ("GET", "/echo/..;/hello"),
        ("GET", "/echo/x/..//../hello"),
        ("GET", "/echo/x%5C..%5C..%5Chello"),
        ("GET", "/echo%00/a"),
        ("GET", "/ECHO/a"),
    ] {
        let report = send(dir.path(), json!({"method": method, "url": api.url(path)}), &[]);
        assert!(answer(&report).contains("HttpRequestDenied"), "{method} {path}: {report}");
        let refusal = &report["refused"][0];
        assert_eq!(refusal["kind"], "not_granted", "{method} {path}: {report}");
        let target = refusal["target"].as_str().unwrap();
        assert!(target.starts_with(&format!("{} {origin}", method)), "{target}");
        assert_eq!(
            refusal["message"],
            format!("{target}: not granted to this plugin (grant it in the plugin's `http` list)"),
            "the line of an ungranted host"
        );
    }
    assert_eq!(api.seen().len(), seen, "nothing reached the server: {:?}", api.seen());

    // Each refusal is in the call's audit line, as an ungranted host's is.
    let lines = audit_lines(dir.path());
    let refused: Vec<&Value> = lines.iter().filter_map(|line| line["refused"].as_array()).flatten().collect();
    assert!(
        refused
            .iter()
            .any(|entry| entry["kind"] == "not_granted" && entry["target"] == format!("POST {origin}/echo/a")),
        "{lines:?}"
    );

    // A redirect is a new request, checked by the same rules: `/redirect`
    // is granted, `/hello` where it points is not.
    let arguments = json!({"url": api.url(&format!("/redirect?to={}", api.url("/hello")))}).to_string();
    let output = toolhost_with_env(dir.path(), &["call", "fetch", &arguments, "--json"], &[]);
    let report: Value = serde_json::from_str(&stdout(&output)).unwrap();
    assert_eq!(report["refused"][0]["target"], format!("GET {origin}/hello"), "{report}");
    assert!(api.seen().last().unwrap().starts_with("/redirect"), "{:?}", api.seen());

    // `inspect` shows the entries as written, in their one form.
    let output = toolhost_with_env(dir.path(), &["inspect", "http_send"], &[]);
    assert!(stdout(&output).contains(&format!("GET,HEAD {origin}/echo/**")), "{}", stdout(&output));
}

#[test]
fn a_malformed_method_or_path_rule_is_a_config_error_that_says_how_to_write_it() {
    for (entry, says) in [
        ("GET https://api.example.com/repos*", "whole segment"),
        ("GET https://api.example.com/repos/", "ends with `/`"),
        ("G=T https://api.example.com", "is not an HTTP method"),
        ("GET https://api.example.com/v1?x=1", "never a query"),
        ("GET api.example.com/v1", "did you mean `https://api.example.com`?"),
    ] {
        let (dir, _plugins) = setup(&format!("[plugins.http_send]\nhttp = [\"{entry}\"]\n"), &["http_send"]);
        let output = toolhost_with_env(dir.path(), &["tools"], &[]);
        assert_eq!(output.status.code(), Some(2), "{entry}");
        let err = stderr(&output);
        assert!(err.contains(says), "{entry}: {err}");
        assert!(!err.contains("panicked"), "{err}");
    }
}

/// A secret bound to one host (`{ name, to }`) reaches it; in any other
/// request (URL, header, body, split between chunks, URL-encoded, in Basic
/// auth, compressed) it is refused and recorded; a secret without `to`
/// goes wherever the grants reach, as before.
#[test]
fn a_secret_bound_to_its_host_goes_only_there() {
    const KEY: &str = "sk-live/0123456789+abcdef";
    let api = TestServer::start();
    let other = TestServer::start();
    let config = format!(
        "[plugins.http_send]\nhttp = [\"{}\", \"{}\"]\nsecrets = [{{ name = \"API_KEY\", to = [\"{}\"] }}, \"PLAIN\"]\n",
        api.origin(),
        other.origin(),
        api.origin()
    );
    let (dir, _plugins) = setup(&config, &["http_send"]);
    let env = [("API_KEY", KEY), ("PLAIN", "plain-value-123")];

    let report = send(dir.path(), json!({"url": api.url("/echo"), "headers": [["x-api-key", "${API_KEY}"]]}), &env);
    assert!(answer(&report).starts_with("200"), "{report}");
    assert_eq!(api.headers().last().unwrap().iter().find(|(name, _)| name == "x-api-key").unwrap().1, KEY);

    let body = |chunks: &[&str]| chunks.iter().map(|chunk| chunk.to_string()).collect::<Vec<_>>();
    let cases = [
        ("header", json!({"url": other.url("/echo"), "headers": [["x-api-key", "${API_KEY}"]]})),
        ("basic", json!({"url": other.url("/echo"), "headers": [["authorization", "Basic ${API_KEY:basic}"]]})),
        ("query", json!({"url": other.url("/echo?key=${API_KEY:url}")})),
        ("path", json!({"url": other.url("/echo/${API_KEY:url}")})),
        ("body", json!({"method": "POST", "url": other.url("/upload"), "body": body(&["{\"key\": \"${API_KEY}\"}"])})),
        (
            "split body",
            json!({"method": "POST", "url": other.url("/upload"),
                   "body": body(&["{\"note\": \"hello\", \"key\": \"sk-live/01234", "56789+abcdef\"}"])}),
        ),
        (
            "form body",
            json!({"method": "POST", "url": other.url("/upload"), "body": body(&["a=1&key=${API_KEY:url}"])}),
        ),
    ];
    for (case, arguments) in cases {
        let before = other.received();
        let report = send(dir.path(), arguments, &env);
        assert!(answer(&report).contains("HttpRequestDenied"), "{case}: {report}");
        let refusal = &report["refused"][0];
        assert_eq!(refusal["kind"], "secret_not_for_host", "{case}: {report}");
        assert_eq!(refusal["secret"], "API_KEY", "{case}");
        assert!(refusal["message"].as_str().unwrap().contains("the secret `API_KEY`"), "{case}: {report}");
        assert!(!report.to_string().contains("0123456789"), "{case}: the value shows: {report}");
        // What reached the other server (a body's bytes before the value at most) never holds it.
        assert!(other.received() - before < 20, "{case}: {} bytes went", other.received() - before);
        for headers in other.headers() {
            assert!(!format!("{headers:?}").contains("0123456789"), "{case}: {headers:?}");
        }
        assert!(other.seen().iter().all(|path| !path.contains("0123456789")), "{case}: {:?}", other.seen());
    }
    // A compressed body cannot be read as sent: refused to a host the secret is not for.
    let report = send(
        dir.path(),
        json!({"method": "POST", "url": other.url("/upload"), "headers": [["content-encoding", "gzip"]], "body": ["x"]}),
        &env,
    );
    assert_eq!(report["refused"][0]["kind"], "uncheckable_body", "{report}");
    // A secret without `to` goes wherever the plugin's grants reach.
    let report = send(dir.path(), json!({"url": other.url("/echo"), "headers": [["x-plain", "${PLAIN}"]]}), &env);
    assert!(answer(&report).starts_with("200"), "{report}");

    let lines = audit_lines(dir.path());
    let refused: Vec<&Value> = lines.iter().filter_map(|line| line["refused"].as_array()).flatten().collect();
    assert!(refused.iter().filter(|entry| entry["kind"] == "secret_not_for_host").count() >= 7, "{lines:?}");
    assert!(!std::fs::read_to_string(dir.path().join("audit.log")).unwrap().contains("0123456789"));
    let output = toolhost_with_env(dir.path(), &["inspect", "http_send"], &env);
    assert!(stdout(&output).contains(&format!("API_KEY (sent only to {})", api.origin())), "{}", stdout(&output));
}

/// Both boundaries hold for the model's calls (`run`) and an MCP client's (`serve`).
#[test]
fn run_and_serve_refuse_a_path_outside_the_grant_and_a_secret_sent_elsewhere() {
    const KEY: &str = "sk-live/0123456789+abcdef";
    let api = TestServer::start();
    let other = TestServer::start();
    let config = format!(
        "[plugins.http_send]\nhttp = [\"GET {}/echo/**\", \"{}\"]\nsecrets = [{{ name = \"API_KEY\", to = \"{}\" }}]\n",
        api.origin(),
        other.origin(),
        api.origin()
    );
    let (dir, plugins) = setup(&config, &["http_send"]);
    let config_path = dir.path().join("toolhost.toml").display().to_string();
    let outside = json!({"method": "DELETE", "url": api.url("/echo/a")}).to_string();
    let leak = json!({"url": other.url("/echo"), "headers": [["x-api-key", "${API_KEY}"]]}).to_string();

    // run
    let script = Script { anthropic: false, stream: false };
    let server = ModelServer::start(vec![
        script.calls(&[("c1", "http_send", &outside), ("c2", "http_send", &leak)]),
        script.text("done"),
    ]);
    let output = Command::new(env!("CARGO_BIN_EXE_toolhost"))
        .current_dir(dir.path())
        .args(["--plugins", &plugins.path().display().to_string(), "run", "go", "--yes", "--no-stream"])
        .args(["--model", script.model(), "--base-url", &script.base_url(&server)])
        .env("TOOLHOST_CACHE_DIR", common::shared_cache())
        .env("TOOLHOST_CONFIG", &config_path)
        .env_remove("TOOLHOST_MODEL")
        .env("OPENAI_API_KEY", "test-key")
        .env("API_KEY", KEY)
        .output()
        .unwrap();
    assert!(output.status.success(), "{}", stderr(&output));
    let results = script.results(&server.requests()[1]);
    assert!(
        results[0].1.contains(&format!("[toolhost refused: DELETE {}/echo/a: not granted", api.origin())),
        "{results:?}"
    );
    assert!(results[1].1.contains("the secret `API_KEY`"), "{results:?}");
    assert!(!format!("{results:?}").contains("0123456789"));

    // serve
    let plugins_path = plugins.path().display().to_string();
    let mut command = common::stdio::Session::command(&["--plugins", &plugins_path, "serve", "--no-watch"]);
    command.current_dir(dir.path()).env("TOOLHOST_CONFIG", &config_path).env("API_KEY", KEY);
    let mut session = common::stdio::Session::start(command, "t");
    let outside: Value = serde_json::from_str(&outside).unwrap();
    let result = session.ask("tools/call", json!({"name": "http_send", "arguments": outside}))["result"].clone();
    let refused = &result["_meta"]["toolhost/refused"][0];
    assert_eq!(refused["kind"], "not_granted", "{result}");
    assert_eq!(refused["target"], format!("DELETE {}/echo/a", api.origin()), "{result}");
    let leak: Value = serde_json::from_str(&leak).unwrap();
    let result = session.ask("tools/call", json!({"name": "http_send", "arguments": leak}))["result"].clone();
    assert_eq!(result["_meta"]["toolhost/refused"][0]["kind"], "secret_not_for_host", "{result}");
    assert!(!result.to_string().contains("0123456789"), "{result}");
    session.close();
    assert!(api.seen().is_empty() && other.seen().is_empty(), "{:?} {:?}", api.seen(), other.seen());
}

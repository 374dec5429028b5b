//! Grants, driven the way a user drives them: real plugins built from
//! `plugins/` (`fetch`, `files`, `snoops`), configs written as in
//! `toolhost.toml`, HTTP servers on 127.0.0.1, and the real CLI. A plugin
//! reaches the hosts, folders and variables it was granted and nothing else,
//! and every refusal names what was refused.

use crate::common;

use common::server::TestServer;
use common::{config_from, host_with_config, plugin_dir, stderr, stdout, toolhost, toolhost_with_env};
use serde_json::Value;
use std::path::Path;
use std::time::Duration;
use toolhost::{CallError, CallReport, LimitOverrides, ProblemKind, Refusal, RefusalReason, ToolOutput};

/// Calls `fetch` for `url` on a host configured by `config`.
async fn fetch(config: &str, url: &str) -> CallReport {
    let (host, _dir) = host_with_config(&["fetch"], config_from(config)).await;
    let arguments = serde_json::json!({ "url": url, "max_bytes": 1 << 20 }).to_string();
    host.call("fetch", &arguments, &LimitOverrides::default()).await
}

fn fetched(report: &CallReport) -> Value {
    match &report.outcome {
        Ok(ToolOutput::Json(text)) => serde_json::from_str(text).unwrap(),
        other => panic!("fetch should succeed, got {other:?} (refused: {:?})", report.refused),
    }
}

fn failure(report: &CallReport) -> &str {
    match &report.outcome {
        Err(CallError::ToolFailed(message)) => message,
        other => panic!("fetch should fail, got {other:?}"),
    }
}

fn grant(server: &TestServer) -> String {
    format!("[plugins.fetch]\nhttp = [\"{}\"]\n", server.origin())
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn an_allowed_host_is_fetched() {
    let server = TestServer::start();
    let report = fetch(&grant(&server), &server.url("/hello")).await;
    let found = fetched(&report);
    assert_eq!(found["status"], 200);
    assert_eq!(found["text"], "hello from the test server");
    assert!(found["headers"].as_array().unwrap().iter().any(|pair| pair[0] == "content-length"), "{found}");
    assert!(report.refused.is_empty(), "{:?}", report.refused);
    assert_eq!(report.usage.http_requests, 1);
    assert_eq!(report.usage.http_response_bytes, "hello from the test server".len() as u64);
    assert_eq!(server.seen(), ["/hello"]);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn other_hosts_ports_and_schemes_are_refused_before_anything_is_sent() {
    let server = TestServer::start();
    let other = TestServer::start();
    let cases = [
        // (config, url, refused target)
        (
            grant(&server),
            format!("http://localhost:{}/hello", server.port),
            format!("http://localhost:{}", server.port),
        ),
        (grant(&server), other.url("/hello"), other.origin()),
        (
            grant(&server),
            format!("https://127.0.0.1:{}/hello", server.port),
            format!("https://127.0.0.1:{}", server.port),
        ),
        (String::new(), server.url("/hello"), server.origin()),
    ];
    for (config, url, target) in cases {
        let report = fetch(&config, &url).await;
        let message = failure(&report);
        assert!(message.contains("refused by the host") && message.contains("not granted"), "{url}: {message}");
        assert_eq!(report.refused, [Refusal { target, reason: RefusalReason::NotGranted }], "{url}");
        assert_eq!(report.usage.http_requests, 0, "{url}: a refused request is not sent");
    }
    assert!(server.seen().is_empty() && other.seen().is_empty(), "nothing reached a server");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn an_allowed_https_host_is_spoken_to_with_tls() {
    // No certificate a public root vouches for is at hand offline, so the
    // handshake with this plain-HTTP server fails: what matters is that the
    // request was admitted and went out as TLS, not as plain text.
    let server = TestServer::start();
    let config = format!("[plugins.fetch]\nhttp = [\"https://127.0.0.1:{}\"]\n", server.port);
    let report = fetch(&config, &format!("https://127.0.0.1:{}/hello", server.port)).await;
    let message = failure(&report);
    assert!(message.contains("request failed") && message.contains("TLS handshake failed"), "{message}");
    assert!(report.refused.is_empty(), "{:?}", report.refused);
    assert_eq!(report.usage.http_requests, 1);
    assert!(!server.seen().iter().any(|path| path == "/hello"), "no plain-text request: {:?}", server.seen());
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn redirects_are_checked_like_the_first_request() {
    let server = TestServer::start();
    let denied = format!("http://localhost:{}/hello", server.port);
    let report = fetch(&grant(&server), &server.url(&format!("/redirect?to={denied}"))).await;
    let message = failure(&report);
    assert!(message.contains(&format!("http://localhost:{}", server.port)), "{message}");
    assert_eq!(
        report.refused,
        [Refusal { target: format!("http://localhost:{}", server.port), reason: RefusalReason::NotGranted }]
    );
    assert_eq!(server.seen(), [format!("/redirect?to={denied}")], "the redirect target was never asked");

    let report = fetch(&grant(&server), &server.url("/chain/2")).await;
    let found = fetched(&report);
    assert_eq!(found["text"], "end of chain");
    assert_eq!(found["redirected_from"].as_array().unwrap().len(), 2, "redirects to granted hosts are followed");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn an_oversized_response_fails_or_is_cut_as_configured() {
    let server = TestServer::start();
    let limits = "[limits]\nhttp_response = \"10KiB\"\n";

    let report = fetch(&format!("{limits}{}", grant(&server)), &server.url("/bytes/50000")).await;
    let message = failure(&report);
    assert!(message.contains("exceeds limit") || message.contains("too large"), "{message}");
    assert_eq!(report.refused.len(), 1);
    assert_eq!(
        report.refused[0].reason,
        RefusalReason::ResponseTooLarge { limit: toolhost::ByteSize(10 << 10), cut: false }
    );
    assert!(report.usage.http_response_bytes <= 10 << 10);

    let cut = format!("[limits]\nhttp_response = \"10KiB\"\nhttp_oversized = \"cut\"\n{}", grant(&server));
    let report = fetch(&cut, &server.url("/bytes/50000")).await;
    let found = fetched(&report);
    assert_eq!(found["text"].as_str().unwrap().len(), 10 << 10, "the body ends at the limit");
    assert_eq!(report.usage.http_response_bytes, 10 << 10);
    assert_eq!(
        report.refused[0].reason,
        RefusalReason::ResponseTooLarge { limit: toolhost::ByteSize(10 << 10), cut: true }
    );
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn too_many_requests_are_stopped() {
    let server = TestServer::start();
    let config =
        format!("[plugins.fetch]\nhttp = [\"{}\"]\n[plugins.fetch.limits]\nhttp_requests = 2\n", server.origin());
    let report = fetch(&config, &server.url("/chain/5")).await;
    let message = failure(&report);
    assert!(message.contains("as many requests as it may"), "{message}");
    assert_eq!(report.usage.http_requests, 2);
    assert_eq!(
        report.refused,
        [Refusal { target: server.origin(), reason: RefusalReason::TooManyRequests { limit: 2 } }]
    );
    assert_eq!(server.seen(), ["/chain/5", "/chain/4"], "the third request never left");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn loopback_is_refused_unless_an_entry_names_it() {
    let server = TestServer::start();
    // `*` admits any host on this port, but not the loopback addresses it
    // resolves to: only an entry naming the address (or `localhost`) reaches them.
    let any_host = format!("[plugins.fetch]\nhttp = [\"http://*:{}\"]\n", server.port);
    for url in [server.url("/hello"), format!("http://localhost:{}/hello", server.port)] {
        let report = fetch(&any_host, &url).await;
        let message = failure(&report);
        assert!(message.contains("resolves to a loopback or private address"), "{url}: {message}");
        match &report.refused[..] {
            [Refusal { reason: RefusalReason::PrivateAddress { address, .. }, .. }] => {
                assert!(address.is_loopback(), "{url}: checked on the resolved address {address}")
            }
            other => panic!("{url}: expected a private-address refusal, got {other:?}"),
        }
    }
    assert!(server.seen().is_empty(), "nothing reached the server");

    let named = format!("[plugins.fetch]\nhttp = [\"http://localhost:{}\"]\n", server.port);
    let report = fetch(&named, &format!("http://localhost:{}/hello", server.port)).await;
    assert_eq!(fetched(&report)["text"], "hello from the test server", "`localhost` named explicitly");
    let report = fetch(&grant(&server), &server.url("/hello")).await;
    assert_eq!(fetched(&report)["status"], 200, "`127.0.0.1` named explicitly");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_slow_request_times_out_on_its_own_limit_and_never_outlives_the_call() {
    let server = TestServer::start();
    let config = format!("[limits]\nhttp_timeout = \"300ms\"\n{}", grant(&server));
    let report = fetch(&config, &server.url("/slow")).await;
    let message = failure(&report);
    assert!(message.contains("did not answer in time"), "{message}");
    assert!(
        matches!(report.refused[..], [Refusal { reason: RefusalReason::TimedOut { .. }, .. }]),
        "{:?}",
        report.refused
    );
    assert!(report.usage.wall < Duration::from_secs(3), "{:?}", report.usage.wall);

    let config = format!("[limits]\nhttp_timeout = \"1m\"\ntimeout = \"700ms\"\n{}", grant(&server));
    let report = fetch(&config, &server.url("/slow")).await;
    assert_eq!(report.outcome, Err(CallError::Timeout { limit: Duration::from_millis(700) }));
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn sockets_stay_off_unless_granted_and_then_follow_the_allowlist() {
    let allowed = std::net::TcpListener::bind("127.0.0.1:0").unwrap();
    let other = std::net::TcpListener::bind("127.0.0.1:0").unwrap();
    allowed.set_nonblocking(true).unwrap();
    other.set_nonblocking(true).unwrap();
    let port = allowed.local_addr().unwrap().port();
    let other_port = other.local_addr().unwrap().port();
    let snoop = |config: String, port: u16| async move {
        let (host, _dir) = host_with_config(&["snoops"], config_from(&config)).await;
        let arguments = serde_json::json!({ "port": port, "file": "/nonexistent" }).to_string();
        let report = host.call("snoops", &arguments, &LimitOverrides::default()).await;
        let Ok(ToolOutput::Json(found)) = &report.outcome else { panic!("{:?}", report.outcome) };
        (serde_json::from_str::<Value>(found).unwrap(), report)
    };
    let http_only = format!("[plugins.snoops]\nhttp = [\"http://127.0.0.1:{port}\"]\n");
    let (found, _) = snoop(http_only, port).await;
    assert!(found["connect"].get("Err").is_some(), "an http grant does not open sockets: {found}");
    assert!(allowed.accept().is_err(), "nothing connected");

    let with_sockets = format!("[plugins.snoops]\nhttp = [\"http://127.0.0.1:{port}\"]\nsockets = true\n");
    let (found, _) = snoop(with_sockets.clone(), port).await;
    assert_eq!(found["connect"]["Ok"], "connected", "{found}");
    assert!(allowed.accept().is_ok(), "the granted address was reached");

    let (found, report) = snoop(with_sockets, other_port).await;
    assert!(found["connect"].get("Err").is_some(), "another port is refused: {found}");
    assert!(other.accept().is_err(), "nothing connected to the other port");
    assert_eq!(
        report.refused,
        [Refusal { target: format!("tcp 127.0.0.1:{other_port}"), reason: RefusalReason::NotGranted }]
    );
}

/// A folder tree for the filesystem tests: `data/` (granted) holding a file,
/// a symlink to a file outside, an absolute symlink and a symlink to `..`;
/// `secret.txt` outside it.
fn folder_tree() -> tempfile::TempDir {
    let root = tempfile::tempdir().unwrap();
    let data = root.path().join("data");
    std::fs::create_dir(&data).unwrap();
    std::fs::write(data.join("hello.txt"), "hello from a granted folder").unwrap();
    std::fs::write(root.path().join("secret.txt"), "the host's secret").unwrap();
    std::os::unix::fs::symlink("../secret.txt", data.join("link_out")).unwrap();
    std::os::unix::fs::symlink(root.path().join("secret.txt"), data.join("abs_link")).unwrap();
    std::os::unix::fs::symlink("..", data.join("up")).unwrap();
    root
}

async fn files_host(root: &Path, access: &str) -> (toolhost::Host, tempfile::TempDir) {
    let config = format!("[plugins.files]\ndirs = [\"{}:/data:{access}\"]\n", root.join("data").display());
    host_with_config(&["files"], config_from(&config)).await
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn reads_inside_a_granted_folder_work() {
    let root = folder_tree();
    let (host, _dir) = files_host(root.path(), "ro").await;
    let report = host.call("read_file", r#"{"path": "/data/hello.txt"}"#, &LimitOverrides::default()).await;
    assert_eq!(report.outcome, Ok(ToolOutput::Text("hello from a granted folder".to_owned())));
    let report = host.call("list_dir", r#"{"path": "/data"}"#, &LimitOverrides::default()).await;
    let Ok(ToolOutput::Json(listing)) = &report.outcome else { panic!("{:?}", report.outcome) };
    let names: Vec<String> = serde_json::from_str::<Vec<Value>>(listing)
        .unwrap()
        .iter()
        .map(|entry| entry["name"].as_str().unwrap().to_owned())
        .collect();
    assert_eq!(names, ["abs_link", "hello.txt", "link_out", "up"]);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn dot_dot_absolute_paths_and_symlinks_cannot_leave_the_granted_folder() {
    let root = folder_tree();
    let (host, _dir) = files_host(root.path(), "rw").await;
    let outside = root.path().join("secret.txt").display().to_string();
    let escapes = [
        "/data/../secret.txt",
        "/data/../../../../etc/passwd",
        &outside,
        "/secret.txt",
        "/etc/passwd",
        "/data/link_out",
        "/data/abs_link",
        "/data/up/secret.txt",
        "secret.txt",
    ];
    for path in escapes {
        let arguments = serde_json::json!({ "path": path }).to_string();
        let report = host.call("read_file", &arguments, &LimitOverrides::default()).await;
        match &report.outcome {
            Err(CallError::ToolFailed(message)) => assert!(message.contains("could not open"), "{path}: {message}"),
            other => panic!("{path}: reading must fail, got {other:?}"),
        }
    }
    for path in ["/data/..", "/data/up", "/", "/data/../.."] {
        let arguments = serde_json::json!({ "path": path }).to_string();
        let report = host.call("list_dir", &arguments, &LimitOverrides::default()).await;
        assert!(
            matches!(report.outcome, Err(CallError::ToolFailed(_))),
            "{path}: listing must fail, got {:?}",
            report.outcome
        );
    }
    let arguments = serde_json::json!({ "path": "/data/../escaped.txt", "text": "x" }).to_string();
    let report = host.call("write_file", &arguments, &LimitOverrides::default()).await;
    assert!(matches!(report.outcome, Err(CallError::ToolFailed(_))), "{:?}", report.outcome);
    assert!(!root.path().join("escaped.txt").exists(), "nothing was written outside");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_read_only_grant_refuses_writes_and_a_read_write_one_allows_them() {
    let root = folder_tree();
    let arguments = serde_json::json!({ "path": "/data/new.txt", "text": "written by the plugin" }).to_string();

    let (host, _dir) = files_host(root.path(), "ro").await;
    let report = host.call("write_file", &arguments, &LimitOverrides::default()).await;
    match &report.outcome {
        Err(CallError::ToolFailed(message)) => assert!(message.contains("could not write"), "{message}"),
        other => panic!("a read-only grant must refuse the write, got {other:?}"),
    }
    assert!(!root.path().join("data/new.txt").exists());

    let (host, _dir) = files_host(root.path(), "rw").await;
    let report = host.call("write_file", &arguments, &LimitOverrides::default()).await;
    assert!(report.outcome.is_ok(), "{:?}", report.outcome);
    assert_eq!(std::fs::read_to_string(root.path().join("data/new.txt")).unwrap(), "written by the plugin");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn asks_not_granted_are_shown_at_load_and_grants_that_cannot_be_honoured_too() {
    let (host, _dir) = host_with_config(
        &["fetch", "files"],
        config_from("[plugins.files]\ndirs = [\"/nonexistent/notes:/data\"]\nenv = [\"TOOLHOST_TEST_SURELY_UNSET\"]\n"),
    )
    .await;
    assert_eq!(host.catalog().tools().len(), 4, "the plugins still load");
    let notices: Vec<String> = host
        .problems()
        .iter()
        .filter(|problem| problem.kind == ProblemKind::Grant)
        .map(|problem| problem.to_string())
        .collect();
    assert!(
        notices.iter().any(|notice| notice.contains("fetch.wasm") && notice.contains("HTTP access to `https://*`")),
        "{notices:?}"
    );
    assert!(notices.iter().any(|notice| notice.contains("/nonexistent/notes")), "{notices:?}");
    assert!(notices.iter().any(|notice| notice.contains("TOOLHOST_TEST_SURELY_UNSET")), "{notices:?}");
    let plugins = host.plugins();
    let fetch = plugins.iter().find(|plugin| &*plugin.name == "fetch").unwrap();
    assert_eq!(fetch.asks.as_ref().unwrap().http[0].to_string(), "https://*");
    assert!(fetch.grants.is_empty());
}

#[test]
fn only_granted_env_vars_are_visible_and_secret_values_never_show() {
    let dir = tempfile::tempdir().unwrap();
    let plugins = plugin_dir(&["snoops"]);
    std::fs::write(
        dir.path().join("toolhost.toml"),
        format!(
            "plugins_dir = {:?}\n[plugins.snoops]\nenv = [\"TOOLHOST_TEST_VISIBLE\"]\nsecrets = [\"TOOLHOST_TEST_SECRET\"]\n",
            plugins.path().display().to_string()
        ),
    )
    .unwrap();
    let secret = "s3cr3t-api-key-0123456789";
    let env = [
        ("TOOLHOST_TEST_VISIBLE", "visible value"),
        ("TOOLHOST_TEST_HIDDEN", "hidden value"),
        ("TOOLHOST_TEST_SECRET", secret),
    ];
    let output =
        toolhost_with_env(dir.path(), &["-vvv", "call", "snoops", r#"{"port": 9, "file": "/x"}"#, "--json"], &env);
    assert!(output.status.success(), "{}", stderr(&output));
    let report: Value = serde_json::from_str(&stdout(&output)).unwrap();
    let found: Value = serde_json::from_str(report["output"]["value"].as_str().unwrap()).unwrap();
    let env_seen = found["env"].as_array().unwrap();
    assert!(env_seen.contains(&serde_json::json!(["TOOLHOST_TEST_VISIBLE", "visible value"])), "{found}");
    assert!(
        env_seen.contains(&serde_json::json!(["TOOLHOST_TEST_SECRET", "[secret TOOLHOST_TEST_SECRET]"])),
        "the plugin got the secret, and it is scrubbed from the output: {found}"
    );
    assert_eq!(env_seen.len(), 2, "nothing else: {found}");
    let everything = format!("{}{}", stdout(&output), stderr(&output));
    assert!(!everything.contains(secret), "the secret leaked: {everything}");
    assert!(!everything.contains("hidden value"));

    // Arguments the schema refuses are quoted back in the error: scrubbed too.
    let refused = format!(r#"{{"port": "{secret}", "file": "/x"}}"#);
    let output = toolhost_with_env(dir.path(), &["call", "snoops", &refused, "--json"], &env);
    let everything = format!("{}{}", stdout(&output), stderr(&output));
    assert!(everything.contains("invalid_arguments"), "{everything}");
    assert!(!everything.contains(secret), "the refused argument leaked the secret: {everything}");
    assert!(everything.contains("[secret TOOLHOST_TEST_SECRET]"), "{everything}");

    for args in
        [&["tools", "--json"][..], &["inspect", &plugins.path().join("snoops.wasm").display().to_string(), "--json"]]
    {
        let output = toolhost_with_env(dir.path(), args, &env);
        assert!(output.status.success(), "{args:?}: {}", stderr(&output));
        let everything = format!("{}{}", stdout(&output), stderr(&output));
        assert!(everything.contains("TOOLHOST_TEST_SECRET"), "{args:?} names the secret: {everything}");
        assert!(!everything.contains(secret), "{args:?} leaked the secret: {everything}");
    }
}

#[test]
fn a_secret_put_in_a_refused_host_name_is_scrubbed_from_the_report() {
    let dir = tempfile::tempdir().unwrap();
    let plugins = plugin_dir(&["fetch"]);
    std::fs::write(
        dir.path().join("toolhost.toml"),
        format!(
            "plugins_dir = {:?}\n[plugins.fetch]\nsecrets = [\"TOOLHOST_TEST_SECRET\"]\n",
            plugins.path().display().to_string()
        ),
    )
    .unwrap();
    let secret = "secret-label-4242";
    let url = format!("http://{secret}.example.com/");
    let output = toolhost_with_env(
        dir.path(),
        &["-vv", "call", "fetch", &serde_json::json!({ "url": url }).to_string(), "--json"],
        &[("TOOLHOST_TEST_SECRET", secret)],
    );
    assert_eq!(output.status.code(), Some(1));
    let report: Value = serde_json::from_str(&stdout(&output)).unwrap();
    assert_eq!(report["refused"][0]["target"], "http://[secret TOOLHOST_TEST_SECRET].example.com:80");
    let everything = format!("{}{}", stdout(&output), stderr(&output));
    assert!(!everything.contains(secret), "the secret leaked: {everything}");
}

#[test]
fn tools_and_inspect_show_what_each_plugin_asks_for_and_is_granted() {
    let dir = tempfile::tempdir().unwrap();
    let plugins = plugin_dir(&["fetch", "files", "echo"]);
    std::fs::write(
        dir.path().join("toolhost.toml"),
        format!(
            "plugins_dir = {:?}\n[plugins.fetch]\nhttp = [\"https://api.example.com\", \"http://127.0.0.1:8080\"]\n",
            plugins.path().display().to_string()
        ),
    )
    .unwrap();
    let output = toolhost(dir.path(), &["tools"]);
    assert!(output.status.success(), "{}", stderr(&output));
    let text = stdout(&output);
    assert!(text.contains("plugin fetch\n    asks     http https://*\n    granted  http https://api.example.com, http://127.0.0.1:8080"), "{text}");
    assert!(text.contains("plugin files\n    asks     dirs /data:ro\n    granted  nothing"), "{text}");
    assert!(
        stderr(&output).contains("warning:") && stderr(&output).contains("HTTP access to `https://*`"),
        "{}",
        stderr(&output)
    );

    let output = toolhost(dir.path(), &["tools", "--json"]);
    let tools: Vec<Value> = serde_json::from_str(&stdout(&output)).unwrap();
    let fetch = tools.iter().find(|tool| tool["name"] == "fetch").unwrap();
    assert_eq!(fetch["asks"]["http"], serde_json::json!(["https://*"]));
    assert_eq!(fetch["grants"]["http"], serde_json::json!(["https://api.example.com", "http://127.0.0.1:8080"]));
    let echo = tools.iter().find(|tool| tool["name"] == "echo").unwrap();
    assert_eq!(echo["asks"], Value::Null);
    assert_eq!(echo["grants"]["http"], serde_json::json!([]), "nothing by default");

    let fetch_wasm = plugins.path().join("fetch.wasm").display().to_string();
    let output = toolhost(dir.path(), &["inspect", &fetch_wasm, "--json"]);
    let found: Value = serde_json::from_str(&stdout(&output)).unwrap();
    assert_eq!(found["asks"]["http"], serde_json::json!(["https://*"]));
    assert_eq!(found["grants"]["http"][0], "https://api.example.com");
    assert!(found["notices"][0].as_str().unwrap().contains("`https://*`"), "{found}");
    assert_eq!(found["limits"]["http_requests"], 16);
    let output = toolhost(dir.path(), &["inspect", &fetch_wasm]);
    let text = stdout(&output);
    assert!(
        text.contains("  grants\n    asks     http https://*\n    granted  http https://api.example.com"),
        "{text}"
    );
}

#[test]
fn a_malformed_grant_is_rejected_with_the_accepted_form_and_a_fix() {
    let dir = tempfile::tempdir().unwrap();
    let cases = [
        ("[plugins.fetch]\nhttp = [\"*.example.com\"]\n", "did you mean `https://*.example.com`?"),
        // A path is a pattern of whole segments (`/v1/**`), never a prefix with a slash.
        ("[plugins.fetch]\nhttp = [\"https://api.example.com/v1/\"]\n", "or with `/**` for everything below it"),
        ("[plugins.fetch]\nhttp = [\"https://api.example.com?v=1\"]\n", "did you mean `https://api.example.com`?"),
        ("[plugins.files]\ndirs = [\"./notes\"]\n", "HOST:GUEST[:ro|rw]"),
        ("[plugins.files]\ndirs = [\"./notes:/data:rx\"]\n", "`ro` (read-only) or `rw` (read-write)"),
    ];
    for (config, expected) in cases {
        std::fs::write(dir.path().join("toolhost.toml"), config).unwrap();
        let output = toolhost(dir.path(), &["tools"]);
        assert_eq!(output.status.code(), Some(2), "{config}");
        let text = stderr(&output);
        assert!(text.contains("toolhost.toml") && text.contains(expected), "{config}: {text}");
        assert!(!text.contains("panicked"), "{text}");
    }
}

#[test]
fn call_prints_what_was_refused() {
    let server = TestServer::start();
    let dir = tempfile::tempdir().unwrap();
    let plugins = plugin_dir(&["fetch"]);
    std::fs::write(
        dir.path().join("toolhost.toml"),
        format!("plugins_dir = {:?}\n{}", plugins.path().display().to_string(), grant(&server)),
    )
    .unwrap();
    let denied = format!("http://localhost:{}/hello", server.port);
    let output = toolhost(dir.path(), &["call", "fetch", &serde_json::json!({ "url": denied }).to_string()]);
    assert_eq!(output.status.code(), Some(1));
    let text = stderr(&output);
    assert!(text.contains(&format!("refused: http://localhost:{}: not granted to this plugin", server.port)), "{text}");

    let output = toolhost(
        dir.path(),
        &["call", "fetch", &serde_json::json!({ "url": server.url("/hello") }).to_string(), "--json"],
    );
    assert!(output.status.success(), "{}", stderr(&output));
    let report: Value = serde_json::from_str(&stdout(&output)).unwrap();
    assert_eq!(report["usage"]["http_requests"], 1);
    assert_eq!(report["refused"], serde_json::json!([]));
}

//! The network, attacked the way a hostile plugin would: real test plugins
//! from `plugins/misbehaving/` (`posts_huge_body`, `opens_sockets`,
//! `reads_slowly`) and the bundled `fetch`, the real CLI, and servers on
//! 127.0.0.1 (plain HTTP, and HTTPS with a CA each test makes). Every limit
//! holds, and every refusal is recorded saying what to change.

use crate::common;

use common::server::TestServer;
use common::tls::TestCa;
use common::{config_from, host_with_config, plugin_dir, stderr, stdout, toolhost};
use serde_json::{Value, json};
use std::path::Path;
use std::time::Duration;
use toolhost::{ByteSize, CallError, CallReport, LimitOverrides, Refusal, RefusalReason, ToolOutput};

/// A folder with `toolhost.toml` (`config`, after a `plugins_dir` line) and
/// copies of the named plugins.
fn setup(plugins: &[&str], config: &str) -> (tempfile::TempDir, tempfile::TempDir) {
    let dir = tempfile::tempdir().unwrap();
    let plugins = plugin_dir(plugins);
    let text = format!("plugins_dir = {:?}\n{config}", plugins.path().display().to_string());
    std::fs::write(dir.path().join("toolhost.toml"), text).unwrap();
    (dir, plugins)
}

/// `toolhost call TOOL ARGUMENTS --json EXTRA…` in `dir`: the exit status and the report.
fn call_json(dir: &Path, tool: &str, arguments: &Value, extra: &[&str]) -> (Option<i32>, Value) {
    let arguments = arguments.to_string();
    let mut args = vec!["call", tool, &arguments, "--json"];
    args.extend_from_slice(extra);
    let output = toolhost(dir, &args);
    let report = serde_json::from_str(&stdout(&output))
        .unwrap_or_else(|err| panic!("{err}: {}\n{}", stdout(&output), stderr(&output)));
    (output.status.code(), report)
}

fn grant(plugin: &str, entries: &[String]) -> String {
    format!("[plugins.{plugin}]\nhttp = {entries:?}\n")
}

#[test]
fn a_request_body_over_the_limit_is_stopped_where_the_limit_is() {
    let server = TestServer::start();
    let (dir, _plugins) = setup(&["posts_huge_body"], &grant("posts_huge_body", &[server.origin()]));
    let upload = server.url("/upload");

    // Streamed (chunked): stopped once 64KiB have gone out.
    let huge = json!({ "url": upload, "bytes": 4 << 20 });
    let (status, report) = call_json(dir.path(), "posts_huge_body", &huge, &["--http-request-body", "64KiB"]);
    assert_eq!(status, Some(1), "{report}");
    let message = report["error"]["message"].as_str().unwrap();
    assert!(
        message.contains("the request body to") && message.contains("is over what this call may send"),
        "{message}"
    );
    assert_eq!(report["refused"].as_array().unwrap().len(), 1, "{report}");
    let refusal = &report["refused"][0];
    assert_eq!(refusal["kind"], "request_too_large");
    assert_eq!(refusal["target"], server.origin());
    assert_eq!(refusal["limit"], 64 << 10);
    assert!(refusal["message"].as_str().unwrap().contains("`http_request_body`"), "{refusal}");
    let sent = report["usage"]["http_request_bytes"].as_u64().unwrap();
    assert!(sent <= 64 << 10, "counted {sent} bytes sent");
    std::thread::sleep(Duration::from_millis(300));
    assert!(server.received() <= 64 << 10, "the server got {} bytes", server.received());

    // Declared too long up front: nothing leaves at all.
    let declared = json!({ "url": upload, "bytes": 4 << 20, "declare_length": true });
    let (status, report) = call_json(dir.path(), "posts_huge_body", &declared, &["--http-request-body", "64KiB"]);
    assert_eq!(status, Some(1), "{report}");
    assert_eq!(report["refused"][0]["kind"], "request_too_large", "{report}");
    assert_eq!(report["usage"]["http_request_bytes"], 0);
    assert_eq!(report["usage"]["http_requests"], 0, "a refused request is not counted as sent");
    assert_eq!(server.seen(), ["/upload"], "only the first, streamed, request reached the server");

    // Within the limit (the default, 1MiB): sent whole, and counted.
    for declare_length in [false, true] {
        let fits = json!({ "url": upload, "bytes": 300_000, "declare_length": declare_length });
        let (status, report) = call_json(dir.path(), "posts_huge_body", &fits, &[]);
        assert_eq!(status, Some(0), "{report}");
        assert_eq!(report["output"]["value"], "200 received 300000 bytes");
        assert_eq!(report["usage"]["http_request_bytes"], 300_000);
        assert_eq!(report["refused"], json!([]));
    }
    let output =
        toolhost(dir.path(), &["call", "posts_huge_body", &json!({ "url": upload, "bytes": 2048 }).to_string()]);
    assert!(output.status.success(), "{}", stderr(&output));
    let answer = "200 received 2048 bytes".len() - "200 ".len();
    let usage = format!("1 HTTP request, 2KiB sent, {answer}B received");
    assert!(stderr(&output).contains(&usage), "{}", stderr(&output));
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_request_body_limit_is_set_in_the_config_per_plugin() {
    let server = TestServer::start();
    let config = format!(
        "{}[limits]\nhttp_request_body = \"1MiB\"\n[plugins.posts_huge_body.limits]\nhttp_request_body = \"10KiB\"\n",
        grant("posts_huge_body", &[server.origin()])
    );
    let (host, _dir) = host_with_config(&["posts_huge_body"], config_from(&config)).await;
    let plugin = &host.plugins()[0];
    assert_eq!(plugin.limits.http_request_body, ByteSize(10 << 10));
    let arguments = json!({ "url": server.url("/upload"), "bytes": 20_000 }).to_string();
    let report = host.call("posts_huge_body", &arguments, &LimitOverrides::default()).await;
    assert!(matches!(report.outcome, Err(CallError::ToolFailed(_))), "{:?}", report.outcome);
    assert_eq!(
        report.refused,
        [Refusal { target: server.origin(), reason: RefusalReason::RequestTooLarge { limit: ByteSize(10 << 10) } }]
    );
    assert!(report.usage.http_request_bytes <= 10 << 10);
    let overrides = LimitOverrides { http_request_body: Some(ByteSize(20_000)), ..Default::default() };
    let report = host.call("posts_huge_body", &arguments, &overrides).await;
    assert_eq!(report.outcome, Ok(ToolOutput::Text("200 received 20000 bytes".to_owned())));
    assert_eq!(report.usage.http_request_bytes, 20_000);
}

/// Calls `opens_sockets` on `targets` (and to listen on `listen`) with `config`.
async fn open_sockets(config: &str, targets: &[String], listen: &[&str]) -> (Vec<(String, String)>, CallReport) {
    let (host, _dir) = host_with_config(&["opens_sockets"], config_from(config)).await;
    let arguments = json!({ "targets": targets, "listen": listen }).to_string();
    let report = host.call("opens_sockets", &arguments, &LimitOverrides::default()).await;
    let Ok(ToolOutput::Json(found)) = &report.outcome else { panic!("{:?}", report.outcome) };
    (serde_json::from_str(found).unwrap(), report)
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn every_refused_socket_is_recorded_with_what_to_change() {
    let server = TestServer::start();
    let port = server.port;
    let probes = [format!("127.0.0.1:{port}"), "10.0.0.1:22".to_owned(), "169.254.169.254:80".to_owned()];

    // No grant, or an http grant without `sockets = true`: each refused and recorded.
    for config in [String::new(), grant("opens_sockets", &[server.origin()])] {
        let (found, report) = open_sockets(&config, &probes, &[]).await;
        assert!(found.iter().all(|(_, outcome)| outcome.starts_with("error:")), "{config}: {found:?}");
        let expected: Vec<Refusal> = probes
            .iter()
            .map(|probe| Refusal { target: format!("tcp {probe}"), reason: RefusalReason::SocketsNotGranted })
            .collect();
        assert_eq!(report.refused, expected, "{config}");
        assert!(report.refused[0].to_string().contains("`sockets = true`"), "{}", report.refused[0]);
    }

    // Sockets on: the granted address is reached; the others are refused as
    // not granted, and listening is refused whatever the grant.
    let config = format!("{}sockets = true\n", grant("opens_sockets", &[server.origin()]));
    let (found, report) = open_sockets(&config, &probes, &["0.0.0.0:0", "127.0.0.1:0"]).await;
    assert_eq!(found[0].1, "connected: HTTP/1.1 200 OK", "{found:?}");
    assert!(found[1..].iter().all(|(_, outcome)| outcome.starts_with("error:")), "{found:?}");
    let refused: Vec<(&str, &RefusalReason)> =
        report.refused.iter().map(|refusal| (refusal.target.as_str(), &refusal.reason)).collect();
    assert_eq!(
        refused[..2],
        [("tcp 10.0.0.1:22", &RefusalReason::NotGranted), ("tcp 169.254.169.254:80", &RefusalReason::NotGranted)]
    );
    assert!(refused[2].0.starts_with("tcp 0.0.0.0:") && refused[2].1 == &RefusalReason::ListenOrBind, "{refused:?}");
    assert_eq!(refused[3..], [("tcp 127.0.0.1:0", &RefusalReason::ListenOrBind)]);
    assert!(report.refused[3].to_string().contains("may not listen"), "{}", report.refused[3]);
    assert_eq!(server.seen(), ["/hello"], "only the granted connection reached the server");

    // `127.1` is another spelling of 127.0.0.1, not a name: its entry admits
    // the address itself.
    let config = format!("{}sockets = true\n", grant("opens_sockets", &[format!("http://127.1:{port}")]));
    let (found, _) = open_sockets(&config, &probes[..1], &[]).await;
    assert_eq!(found[0].1, "connected: HTTP/1.1 200 OK", "{found:?}");

    // A granted *name* that resolves to a loopback or private address is
    // refused, saying so and naming the entry that would allow it.
    let (name, address) = name_resolving_inward();
    let config = format!("{}sockets = true\n", grant("opens_sockets", &[format!("http://{name}:{port}")]));
    let (found, report) = open_sockets(&config, &[format!("{address}:{port}")], &[]).await;
    assert!(found[0].1.starts_with("error:"), "{found:?}");
    let allow = format!("http://{address}:{port}");
    assert_eq!(
        report.refused,
        [Refusal {
            target: format!("tcp {address}:{port}"),
            reason: RefusalReason::PrivateAddress { address, allow: allow.clone() }
        }]
    );
    let message = report.refused[0].to_string();
    assert!(message.contains("a loopback or private address") && message.contains(&format!("`{allow}`")), "{message}");
    assert!(!message.contains("`http` list"), "{message}");
    assert_eq!(server.seen(), ["/hello", "/hello"], "nothing more reached the server");
}

/// This machine's host name and the loopback or private IPv4 address it
/// resolves to (`/etc/hosts` maps it so on Debian and in containers): a name,
/// not a spelling of an address, that leads inward.
fn name_resolving_inward() -> (String, std::net::IpAddr) {
    use std::net::ToSocketAddrs;
    let name = std::fs::read_to_string("/proc/sys/kernel/hostname").expect("the host name").trim().to_owned();
    assert!(name != "localhost" && !name.is_empty(), "this test needs a host name other than localhost, not `{name}`");
    let address = (name.as_str(), 80)
        .to_socket_addrs()
        .unwrap_or_else(|err| panic!("this test needs the host name `{name}` to resolve (/etc/hosts): {err}"))
        .map(|found| found.ip())
        .find(std::net::IpAddr::is_ipv4)
        .unwrap_or_else(|| panic!("`{name}` has no IPv4 address"));
    assert!(
        !toolhost::grants::network::is_public(address),
        "this test needs the host name `{name}` to resolve to a loopback or private address, not {address}"
    );
    (name, address)
}

#[test]
fn http_to_a_name_resolving_to_loopback_says_to_name_the_address() {
    let server = TestServer::start();
    let port = server.port;
    let (name, address) = name_resolving_inward();
    let (dir, _plugins) = setup(&["fetch"], &grant("fetch", &[format!("http://{name}:{port}")]));
    let url = format!("http://{name}:{port}/hello");
    let output = toolhost(dir.path(), &["call", "fetch", &json!({ "url": url }).to_string()]);
    assert_eq!(output.status.code(), Some(1));
    let text = stderr(&output);
    assert!(text.contains("resolves to a loopback or private address"), "what the plugin was told: {text}");
    let name = name.to_ascii_lowercase();
    assert!(
        text.contains(&format!(
            "refused: http://{name}:{port}: resolves to {address}, a loopback or private address, which a granted \
             host name may not reach (to allow it, name the address itself in the grant: `http://{address}:{port}`)"
        )),
        "{text}"
    );
    assert!(server.seen().is_empty());

    // Other spellings of an address are that address: `127.1`, `2130706433`
    // and `[::ffff:127.0.0.1]` reach what `http://127.0.0.1:PORT` grants.
    let (dir, _plugins) = setup(&["fetch"], &grant("fetch", &[server.origin()]));
    for host in ["127.1", "2130706433", "0x7f.0.0.1", "[::ffff:127.0.0.1]"] {
        let url = format!("http://{host}:{port}/hello");
        let output = toolhost(dir.path(), &["call", "fetch", &json!({ "url": url }).to_string()]);
        assert!(output.status.success(), "{host}: {}", stderr(&output));
    }
    assert_eq!(server.seen().len(), 4);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_response_stalled_past_http_timeout_fails_as_a_timeout_and_is_recorded() {
    let server = TestServer::start();
    let limits = "[limits]\nhttp_timeout = \"500ms\"\n";
    let config = format!("{limits}{}", grant("reads_slowly", &[server.origin()]));
    let (host, _dir) = host_with_config(&["reads_slowly"], config_from(&config)).await;
    let arguments = json!({ "authority": format!("127.0.0.1:{}", server.port), "path": "/stall" }).to_string();
    let report = host.call("reads_slowly", &arguments, &LimitOverrides::default()).await;
    let Ok(ToolOutput::Json(found)) = &report.outcome else { panic!("{:?}", report.outcome) };
    let found: Value = serde_json::from_str(found).unwrap();
    assert_eq!(found["status"], 200, "{found}");
    assert_eq!(found["received"], 100, "the bytes sent before the stall arrived: {found}");
    let error = found["read_error"].as_str().unwrap();
    assert!(error.contains("HTTP response timeout") && !error.contains("connection closed"), "{found}");
    assert_eq!(
        report.refused,
        [Refusal { target: server.origin(), reason: RefusalReason::TimedOut { limit: Duration::from_millis(500) } }]
    );
    assert!(report.refused[0].to_string().contains("`http_timeout`"), "{}", report.refused[0]);
    assert!(report.usage.wall < Duration::from_secs(3), "{:?}", report.usage.wall);
    assert_eq!(report.usage.http_response_bytes, 100);

    // Through the SDK, as the bundled fetch plugin reads it.
    let config = format!("{limits}{}", grant("fetch", &[server.origin()]));
    let (host, _dir) = host_with_config(&["fetch"], config_from(&config)).await;
    let arguments = json!({ "url": server.url("/stall") }).to_string();
    let report = host.call("fetch", &arguments, &LimitOverrides::default()).await;
    match &report.outcome {
        Err(CallError::ToolFailed(message)) => {
            assert!(message.contains("reading the response failed: HTTP response timeout"), "{message}")
        }
        other => panic!("expected a failed read, got {other:?}"),
    }
    assert!(matches!(report.refused[..], [Refusal { reason: RefusalReason::TimedOut { .. }, .. }]));
}

/// A folder for the HTTPS tests: `toolhost.toml` granting `fetch` the TLS
/// server (by address and by `localhost`), with `ca_file` when asked.
fn https_setup(server: &TestServer, ca: Option<&TestCa>) -> (tempfile::TempDir, tempfile::TempDir) {
    let entries = [server.origin(), format!("https://localhost:{}", server.port)];
    let mut config = String::new();
    if ca.is_some() {
        config.push_str("ca_file = \"certs/ca.pem\"\n");
    }
    config.push_str(&grant("fetch", &entries));
    let (dir, plugins) = setup(&["fetch"], &config);
    if let Some(ca) = ca {
        std::fs::create_dir(dir.path().join("certs")).unwrap();
        std::fs::write(dir.path().join("certs/ca.pem"), &ca.root_pem).unwrap();
    }
    (dir, plugins)
}

#[test]
fn https_to_a_granted_host_trusts_the_ca_file_end_to_end() {
    let ca = TestCa::new("toolhost test CA");
    let server = TestServer::start_tls(ca.server.clone());
    let (dir, _plugins) = https_setup(&server, Some(&ca));
    for url in [server.url("/hello"), format!("https://localhost:{}/hello", server.port)] {
        let (status, report) = call_json(dir.path(), "fetch", &json!({ "url": url }), &[]);
        assert_eq!(status, Some(0), "{url}: {report}");
        let fetched: Value = serde_json::from_str(report["output"]["value"].as_str().unwrap()).unwrap();
        assert_eq!(fetched["status"], 200);
        assert_eq!(fetched["text"], "hello from the test server", "{url}");
        assert_eq!(report["refused"], json!([]));
    }
    // Redirects over HTTPS are followed, each checked and encrypted.
    let (status, report) = call_json(dir.path(), "fetch", &json!({ "url": server.url("/chain/1") }), &[]);
    assert_eq!(status, Some(0), "{report}");
    assert_eq!(server.seen(), ["/hello", "/hello", "/chain/1", "/chain/0"]);

    // A host the plugin is not granted is still refused before anything is sent.
    let other = TestServer::start_tls(ca.server.clone());
    let (status, report) = call_json(dir.path(), "fetch", &json!({ "url": other.url("/hello") }), &[]);
    assert_eq!(status, Some(1));
    assert_eq!(report["refused"][0]["kind"], "not_granted", "{report}");
    assert_eq!(report["refused"][0]["target"], other.origin());
    assert!(other.seen().is_empty());
}

#[test]
fn https_without_the_ca_file_fails_with_a_clear_tls_error() {
    let ca = TestCa::new("toolhost test CA");
    let server = TestServer::start_tls(ca.server.clone());
    let (dir, _plugins) = https_setup(&server, None);
    let (status, report) = call_json(dir.path(), "fetch", &json!({ "url": server.url("/hello") }), &[]);
    assert_eq!(status, Some(1), "{report}");
    let message = report["error"]["message"].as_str().unwrap();
    assert!(message.contains("TLS certificate was not accepted"), "{message}");
    assert!(server.seen().is_empty(), "no request went out over an untrusted connection");

    // Another CA's root does not help either.
    let stranger = TestCa::new("some other CA");
    let (dir, _plugins) = https_setup(&server, Some(&stranger));
    let (status, report) = call_json(dir.path(), "fetch", &json!({ "url": server.url("/hello") }), &[]);
    assert_eq!(status, Some(1), "{report}");
    assert!(report["error"]["message"].as_str().unwrap().contains("TLS certificate was not accepted"), "{report}");
}

#[test]
fn a_bad_ca_file_is_a_clear_start_up_error() {
    let dir = tempfile::tempdir().unwrap();
    std::fs::create_dir(dir.path().join("folder.pem")).unwrap();
    std::fs::write(dir.path().join("empty.pem"), "not a certificate\n").unwrap();
    let cases = [
        ("missing.pem", "could not read the CA file"),
        ("empty.pem", "holds no certificate"),
        ("folder.pem", "could not read the CA file"),
    ];
    for (file, expected) in cases {
        std::fs::write(dir.path().join("toolhost.toml"), format!("ca_file = {file:?}\n")).unwrap();
        let output = toolhost(dir.path(), &["tools"]);
        assert_eq!(output.status.code(), Some(2), "{file}");
        let text = stderr(&output);
        assert!(text.contains(expected) && text.contains(file), "{file}: {text}");
        assert_eq!(text.trim().lines().count(), 1, "one line: {text}");
        assert!(!text.contains("panicked"), "{text}");
    }
}

/// Both client test plugins, granted `server` and 20 requests a call.
fn clients_setup(server: &TestServer) -> (tempfile::TempDir, tempfile::TempDir) {
    let mut config = String::new();
    for plugin in ["wstd_client", "http_orders"] {
        config.push_str(&grant(plugin, &[server.origin()]));
        config.push_str(&format!("[plugins.{plugin}.limits]\nhttp_requests = 20\n"));
    }
    setup(&["wstd_client", "http_orders"], &config)
}

/// The answers of a call that succeeded, one per line.
fn answers(status: Option<i32>, report: &Value) -> Vec<String> {
    assert_eq!(status, Some(0), "{report}");
    assert_eq!(report["refused"], json!([]), "{report}");
    report["output"]["value"].as_str().unwrap().lines().map(str::to_owned).collect()
}

#[test]
fn wstd_requests_in_a_row_all_get_their_answer() {
    // `wstd` calls `handle()` first, then writes and finishes the (empty)
    // body: the host keeps the body's stream open until it has.
    let server = TestServer::start();
    let (dir, _plugins) = clients_setup(&server);
    let hello = server.url("/hello");
    let (status, report) = call_json(dir.path(), "wstd_client", &json!({ "url": hello, "count": 20 }), &[]);
    assert_eq!(answers(status, &report), vec!["200 hello from the test server"; 20]);
    assert_eq!(report["usage"]["http_requests"], 20);
    for call in 1..=20 {
        let (status, report) = call_json(dir.path(), "wstd_client", &json!({ "url": hello }), &[]);
        assert_eq!(answers(status, &report), ["200 hello from the test server"], "call {call}");
    }
    // A body written after `handle()` goes out whole.
    let upload = json!({ "url": server.url("/upload"), "count": 20, "post_bytes": 3000 });
    let (status, report) = call_json(dir.path(), "wstd_client", &upload, &[]);
    assert_eq!(answers(status, &report), vec!["200 received 3000 bytes"; 20]);
    assert_eq!(report["usage"]["http_request_bytes"], 20 * 3000);
    assert_eq!(server.seen().len(), 20 + 20 + 20);
}

#[test]
fn a_body_written_after_handle_in_any_order_is_taken_whole() {
    let server = TestServer::start();
    let (dir, _plugins) = clients_setup(&server);
    let cases = [
        // Writing nothing still checks the stream, which must be open.
        (json!({ "url": server.url("/hello"), "order": "write_then_finish" }), "200 hello from the test server"),
        (json!({ "url": server.url("/hello"), "order": "finish_only" }), "200 hello from the test server"),
        (json!({ "url": server.url("/hello"), "order": "streaming" }), "200 hello from the test server"),
        (
            json!({ "url": server.url("/upload"), "order": "write_then_finish", "bytes": 3000 }),
            "200 received 3000 bytes",
        ),
        (json!({ "url": server.url("/upload"), "order": "streaming", "bytes": 5000 }), "200 received 5000 bytes"),
        // The server answers before it has read the body; the guest reads the
        // answer, then writes the rest of the body and finishes it.
        (json!({ "url": server.url("/early"), "order": "answer_first", "bytes": 5000 }), "200 answered early"),
    ];
    for (mut arguments, expected) in cases {
        arguments["count"] = json!(20);
        let (status, report) = call_json(dir.path(), "http_orders", &arguments, &[]);
        assert_eq!(answers(status, &report), vec![expected; 20], "{arguments}");
    }
    // /upload answers once it has read the whole body: 20 × (3000 + 5000).
    // /early got at least each first chunk, written before its answer (the
    // rest goes out after the guest finished, while the call moves on): wait
    // until that much has arrived rather than for a fixed time.
    let deadline = std::time::Instant::now() + Duration::from_secs(20);
    while server.received() < 20 * (3000 + 5000 + 1024) && std::time::Instant::now() < deadline {
        std::thread::sleep(Duration::from_millis(10));
    }
    let received = server.received();
    assert!(
        (20 * (3000 + 5000 + 1024)..=20 * (3000 + 5000 + 5000)).contains(&received),
        "the server got {received} body bytes"
    );
}

#[test]
fn a_request_without_a_grant_reads_as_a_denial_in_every_order() {
    let server = TestServer::start();
    let other = TestServer::start();
    let (dir, _plugins) = clients_setup(&server);
    let denied = other.url("/hello");
    let mut calls = vec![
        ("wstd_client", json!({ "url": denied })),
        ("wstd_client", json!({ "url": other.url("/upload"), "post_bytes": 3000 })),
    ];
    for order in ["write_then_finish", "finish_only", "streaming"] {
        calls.push(("http_orders", json!({ "url": denied, "order": order })));
    }
    calls.push(("http_orders", json!({ "url": other.url("/upload"), "order": "streaming", "bytes": 5000 })));
    for (tool, arguments) in calls {
        for attempt in 1..=5 {
            let (status, report) = call_json(dir.path(), tool, &arguments, &[]);
            assert_eq!(status, Some(1), "{tool} {arguments}: {report}");
            let message = report["error"]["message"].as_str().unwrap();
            assert!(
                message.contains("HttpRequestDenied") && !message.contains("reset") && !message.contains("closed"),
                "{tool} {arguments}, attempt {attempt}: {message}"
            );
            assert_eq!(report["refused"].as_array().unwrap().len(), 1, "{report}");
            assert_eq!(report["refused"][0]["kind"], "not_granted", "{report}");
            assert_eq!(report["refused"][0]["target"], other.origin(), "{report}");
            assert_eq!(report["usage"]["http_requests"], 0, "{report}");
        }
    }
    assert!(other.seen().is_empty(), "nothing reached the server not granted");
}

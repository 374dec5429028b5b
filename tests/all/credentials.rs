//! Credentials injected at the `wasi:http` boundary: the bundled `fetch`
//! plugin (which returns the status, headers and text it got) through the
//! real CLI, against test servers on 127.0.0.1 that check the credential,
//! echo what they received and hand out OAuth tokens. What the plugin sees is
//! what `fetch` returns, so a value that shows nowhere in its output never
//! reached the plugin.

use crate::common;

use common::server::{CREDENTIAL, OAUTH_SECRET, OAUTH_TOKEN, OAUTH_TOKEN_WITH_SECRET, TestServer};
use common::{plugin_dir, stderr, stdout, toolhost_with_env};
use serde_json::{Value, json};
use std::path::Path;

/// A folder with `toolhost.toml` (`config` after a `plugins_dir` line) and `fetch`.
fn setup(config: &str) -> (tempfile::TempDir, tempfile::TempDir) {
    let dir = tempfile::tempdir().unwrap();
    let plugins = plugin_dir(&["fetch"]);
    let text = format!("plugins_dir = {:?}\n{config}", plugins.path().display().to_string());
    std::fs::write(dir.path().join("toolhost.toml"), text).unwrap();
    (dir, plugins)
}

/// `toolhost call fetch {"url": URL} --json` in `dir` with `env`: what the
/// plugin returned (status, headers, text; null when it failed), the report,
/// and the whole stdout and stderr (to check for values).
fn fetch(dir: &Path, url: &str, env: &[(&str, &str)]) -> (Value, Value, String) {
    let arguments = json!({ "url": url }).to_string();
    let output = toolhost_with_env(dir, &["call", "fetch", &arguments, "--json"], env);
    let everything = format!("{}{}", stdout(&output), stderr(&output));
    let report: Value = serde_json::from_str(&stdout(&output)).unwrap_or_else(|err| panic!("{err}: {everything}"));
    let fetched =
        report["output"]["value"].as_str().and_then(|text| serde_json::from_str(text).ok()).unwrap_or_default();
    (fetched, report, everything)
}

/// The forms a value could take in text or JSON.
fn assert_hidden(value: &str, text: &str) {
    for form in [value.to_owned(), value.replace('/', "\\/"), value.replace('/', "%2F").replace('+', "%2B")] {
        assert!(!text.contains(&form), "`{form}` shows in:\n{text}");
    }
}

fn header<'a>(headers: &'a [(String, String)], name: &str) -> Option<&'a str> {
    headers.iter().find(|(key, _)| key == name).map(|(_, value)| value.as_str())
}

#[test]
fn a_bearer_credential_reaches_the_api_and_never_the_plugin() {
    let api = TestServer::start();
    let config =
        format!("[[plugins.fetch.credentials]]\nto = \"{}\"\nbearer = {{ env = \"API_TOKEN\" }}\n", api.origin());
    let (dir, _plugins) = setup(&config);
    let env = [("API_TOKEN", CREDENTIAL)];

    // The API checks the header: the plugin, granted nothing in `http`, gets in.
    let (fetched, report, everything) = fetch(dir.path(), &api.url("/private"), &env);
    assert_eq!(fetched["status"], 200, "{report}");
    assert_eq!(fetched["text"], "welcome", "{report}");
    assert_hidden(CREDENTIAL, &everything);

    // A server that echoes the header hands the plugin a masked value only,
    // in the body and in its response headers.
    let (fetched, report, everything) = fetch(dir.path(), &api.url("/echo"), &env);
    assert_eq!(fetched["status"], 200, "{report}");
    let text = fetched["text"].as_str().unwrap();
    assert!(text.contains("authorization: Bearer *****"), "{text}");
    let echoed = fetched["headers"].as_array().unwrap().iter().find(|pair| pair[0] == "x-seen-authorization");
    assert!(echoed.is_some_and(|pair| pair[1].as_str().unwrap().starts_with("Bearer ***")), "{report}");
    assert_hidden(CREDENTIAL, &everything);
    let sent = api.headers();
    let last = sent.last().unwrap();
    assert_eq!(header(last, "authorization"), Some(format!("Bearer {CREDENTIAL}").as_str()));
    assert_eq!(header(last, "accept-encoding"), Some("identity"), "asked uncompressed, so the echo can be masked");

    // `inspect` says what is injected where, never the value.
    let inspect = toolhost_with_env(dir.path(), &["inspect", "fetch"], &env);
    let shown = format!("{}{}", stdout(&inspect), stderr(&inspect));
    assert!(shown.contains(&format!("credentials bearer token from $API_TOKEN → {}", api.origin())), "{shown}");
    assert_hidden(CREDENTIAL, &shown);
}

#[test]
fn a_credential_goes_to_its_destination_only_never_across_a_redirect() {
    let api = TestServer::start();
    let other = TestServer::start();
    let config = format!(
        "[plugins.fetch]\nhttp = [\"{}\"]\n[[plugins.fetch.credentials]]\nto = \"{}\"\nbearer = {{ env = \"API_TOKEN\" }}\n",
        other.origin(),
        api.origin()
    );
    let (dir, _plugins) = setup(&config);
    let env = [("API_TOKEN", CREDENTIAL)];

    let (fetched, report, _) = fetch(dir.path(), &other.url("/private"), &env);
    assert_eq!(fetched["status"], 401, "{report}");
    // The API redirects to the other host: the plugin follows, and the other
    // host gets nothing, though the first request carried the credential.
    let (fetched, report, everything) =
        fetch(dir.path(), &api.url(&format!("/redirect?to={}", other.url("/echo"))), &env);
    assert_eq!(fetched["status"], 200, "{report}");
    assert_hidden(CREDENTIAL, &everything);
    assert!(header(&api.headers()[0], "authorization").is_some());
    for headers in other.headers() {
        assert_eq!(header(&headers, "authorization"), None, "{headers:?}");
    }
    assert_eq!(other.seen(), ["/private", "/echo"]);
}

#[test]
fn header_and_query_credentials_come_from_files_or_the_environment() {
    let by_query = TestServer::start();
    let by_header = TestServer::start();
    let config = format!(
        "[[plugins.fetch.credentials]]\nto = \"{}\"\nquery = \"api_key\"\nvalue = {{ file = \"key.txt\" }}\n\
         [[plugins.fetch.credentials]]\nto = \"{}\"\nheader = \"X-Api-Key\"\nvalue = {{ env = \"KEY\" }}\n",
        by_query.origin(),
        by_header.origin()
    );
    let (dir, _plugins) = setup(&config);
    // Relative to the config file; the line break at the end is not part of it.
    std::fs::write(dir.path().join("key.txt"), format!("{CREDENTIAL}\n")).unwrap();
    let env = [("KEY", CREDENTIAL)];

    let (fetched, report, _) = fetch(dir.path(), &by_query.url("/private?page=2&api_key=guessed"), &env);
    assert_eq!(fetched["text"], "welcome", "{report}");
    let (fetched, _, everything) = fetch(dir.path(), &by_query.url("/echo?page=2"), &env);
    let text = fetched["text"].as_str().unwrap();
    assert!(text.starts_with("path: /echo?page=2&api_key=****"), "{text}");
    assert_hidden(CREDENTIAL, &everything);
    // The plugin's own `api_key` was replaced, not sent beside the real one.
    assert!(!by_query.seen()[0].contains("guessed"), "{:?}", by_query.seen());

    let (fetched, report, everything) = fetch(dir.path(), &by_header.url("/private"), &env);
    assert_eq!(fetched["text"], "welcome", "{report}");
    assert_hidden(CREDENTIAL, &everything);
}

#[test]
fn an_oauth_token_is_fetched_once_kept_and_a_failure_is_one_line() {
    let tokens = TestServer::start();
    let api = TestServer::start();
    let config = format!(
        "[[plugins.fetch.credentials]]\nto = \"{}\"\noauth2 = {{ token_url = \"{}\", client_id = {{ env = \"CLIENT_ID\" }}, \
         client_secret = {{ env = \"CLIENT_SECRET\" }}, scopes = [\"read\", \"write\"] }}\n",
        api.origin(),
        tokens.url("/token")
    );
    let (dir, _plugins) = setup(&config);
    let env = [("CLIENT_ID", "client-1"), ("CLIENT_SECRET", OAUTH_SECRET)];

    // Two requests in one call (a redirect to the API itself): one token.
    let (fetched, report, everything) =
        fetch(dir.path(), &api.url(&format!("/redirect?to={}", api.url("/private"))), &env);
    assert_eq!(fetched["text"], "welcome", "{report}");
    assert_eq!(tokens.seen(), ["/token"], "the token is kept for the next request");
    assert_hidden(OAUTH_TOKEN, &everything);
    assert_hidden(OAUTH_SECRET, &everything);
    let (_, _, everything) = fetch(dir.path(), &api.url("/echo"), &env);
    assert_hidden(OAUTH_TOKEN, &everything);

    let wrong = [("CLIENT_ID", "client-1"), ("CLIENT_SECRET", "not-the-secret")];
    let (_, report, everything) = fetch(dir.path(), &api.url("/private"), &wrong);
    let refusal = &report["refused"][0];
    assert_eq!(refusal["kind"], "credential_unavailable", "{report}");
    assert_eq!(
        refusal["message"],
        format!(
            "{}: not sent: the OAuth token request to {} failed: HTTP 401 (invalid_client: unknown client or \
             wrong secret)",
            api.origin(),
            tokens.url("/token")
        ),
        "{report}"
    );
    assert_hidden("not-the-secret", &everything);
    assert_eq!(api.seen().iter().filter(|path| *path == "/private").count(), 1, "nothing sent without the token");
}

#[test]
fn an_unset_credential_refuses_its_requests_and_bad_ones_are_config_errors() {
    let api = TestServer::start();
    let config =
        format!("[[plugins.fetch.credentials]]\nto = \"{}\"\nbearer = {{ env = \"UNSET_TOKEN\" }}\n", api.origin());
    let (dir, _plugins) = setup(&config);
    let (_, report, everything) = fetch(dir.path(), &api.url("/private"), &[]);
    assert!(everything.contains("`UNSET_TOKEN` is not set in toolhost's environment"), "{everything}");
    assert_eq!(report["refused"][0]["kind"], "credential_unavailable", "{report}");
    assert!(api.seen().is_empty(), "{:?}", api.seen());

    for (credential, says) in [
        ("to = \"http://api.example.com\"\nbearer = { env = \"T\" }", "clear text over plain HTTP"),
        ("to = \"https://api.example.com\"", "says nothing to add"),
        ("to = \"https://*\"\nbearer = { env = \"T\" }", "would go to every host"),
        ("to = \"https://a.example\"\nbearer = { env = \"T\" }\nquery = \"k\"", "more than one way"),
        ("to = \"https://a.example\"\nheader = \"Host\"\nvalue = { env = \"T\" }", "toolhost sets that header itself"),
        ("to = \"https://a.example\"\nbearer = { value = \"literal\" }", "unknown variant `value`"),
        (
            "to = \"https://a.example\"\noauth2 = { token_url = \"http://auth.example/token\", client_id = { env = \"I\" }, \
             client_secret = { env = \"S\" } }",
            "a token endpoint must be `https://…`",
        ),
    ] {
        let (dir, _plugins) = setup(&format!("[[plugins.fetch.credentials]]\n{credential}\n"));
        let output = toolhost_with_env(dir.path(), &["tools"], &[]);
        assert!(!output.status.success(), "{credential}");
        let err = stderr(&output);
        assert!(err.contains(says), "{credential}: {err}");
        assert!(!err.contains("panicked"), "{err}");
    }
    // A credential in clear text to a remote host only when the operator says so.
    let (dir, _plugins) = setup(
        "[[plugins.fetch.credentials]]\nto = \"http://api.example.com\"\nbearer = { env = \"T\" }\nallow_http = true\n",
    );
    assert!(toolhost_with_env(dir.path(), &["tools"], &[("T", "x")]).status.success());
}

#[test]
fn a_long_running_serve_keeps_an_oauth_token_until_it_expires_then_fetches_another() {
    use std::io::{BufRead, BufReader, Write};
    use std::process::{Command, Stdio};
    let tokens = TestServer::start();
    let api = TestServer::start();
    let config = format!(
        "[[plugins.fetch.credentials]]\nto = \"{}\"\noauth2 = {{ token_url = \"{}\", client_id = {{ env = \"CLIENT_ID\" }}, \
         client_secret = {{ env = \"CLIENT_SECRET\" }} }}\n",
        api.origin(),
        tokens.url("/token?expires_in=2")
    );
    let (dir, _plugins) = setup(&config);
    let mut serve = Command::new(env!("CARGO_BIN_EXE_toolhost"))
        .current_dir(dir.path())
        .args(["serve", "--no-watch"])
        .env("TOOLHOST_CACHE_DIR", common::shared_cache())
        .env("CLIENT_ID", "client-1")
        .env("CLIENT_SECRET", OAUTH_SECRET)
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .stderr(Stdio::null())
        .spawn()
        .unwrap();
    let mut stdin = serve.stdin.take().unwrap();
    let mut lines = BufReader::new(serve.stdout.take().unwrap()).lines();
    let mut ask = |id: u64, method: &str, params: Value| -> Value {
        writeln!(stdin, "{}", json!({"jsonrpc": "2.0", "id": id, "method": method, "params": params})).unwrap();
        if method == "initialize" {
            writeln!(stdin, "{}", json!({"jsonrpc": "2.0", "method": "notifications/initialized"})).unwrap();
        }
        loop {
            let message: Value = serde_json::from_str(&lines.next().unwrap().unwrap()).unwrap();
            if message["id"] == id {
                return message["result"].clone();
            }
        }
    };
    let hello =
        json!({"protocolVersion": "2025-11-25", "capabilities": {}, "clientInfo": {"name": "t", "version": "1"}});
    ask(1, "initialize", hello);
    let fetch = json!({"name": "fetch", "arguments": {"url": api.url("/private")}});
    // Two calls within the token's life share it; one after its life (two
    // seconds, renewed a tenth early) gets a new one.
    for (id, wait) in [(2, 0), (3, 0), (4, 2_500)] {
        std::thread::sleep(std::time::Duration::from_millis(wait));
        let result = ask(id, "tools/call", fetch.clone());
        assert!(result.to_string().contains("welcome"), "{result}");
    }
    drop(stdin);
    let _ = serve.wait();
    assert_eq!(tokens.seen(), ["/token?expires_in=2", "/token?expires_in=2"], "one token, kept, then one more");
    assert_eq!(api.seen().len(), 3);
}

/// What toolhost encodes itself (HTTP Basic's base64 of `USER:PASSWORD`) is
/// masked like the value: an endpoint that echoes the request's headers
/// shows the plugin only stars.
#[test]
fn a_basic_credential_echoed_back_is_masked_in_its_encoded_form() {
    use base64::Engine as _;
    let api = TestServer::start();
    let config = format!(
        "[[plugins.fetch.credentials]]\nto = \"{}\"\nbasic = {{ user = \"alice\", password = {{ env = \"API_TOKEN\" }} }}\n",
        api.origin()
    );
    let (dir, _plugins) = setup(&config);
    let (fetched, report, everything) = fetch(dir.path(), &api.url("/echo"), &[("API_TOKEN", CREDENTIAL)]);
    assert_eq!(fetched["status"], 200, "{report}");
    let text = fetched["text"].as_str().unwrap();
    assert!(text.contains("authorization: Basic ****"), "{text}");
    let encoded = base64::engine::general_purpose::STANDARD.encode(format!("alice:{CREDENTIAL}"));
    let unpadded = encoded.trim_end_matches('=');
    assert!(!everything.contains(unpadded), "the encoded credential shows in:\n{everything}");
    assert_hidden(CREDENTIAL, &everything);
    let sent = api.headers();
    assert_eq!(header(sent.last().unwrap(), "authorization"), Some(format!("Basic {encoded}").as_str()));
}

/// A server that compresses its echo although toolhost asked for `identity`:
/// gzip and deflate are decoded and then masked; a coding toolhost cannot
/// undo is withheld, with the reason in `refused`.
#[test]
fn a_compressed_echo_is_decoded_before_masking_or_withheld() {
    let api = TestServer::start();
    let config =
        format!("[[plugins.fetch.credentials]]\nto = \"{}\"\nbearer = {{ env = \"API_TOKEN\" }}\n", api.origin());
    let (dir, _plugins) = setup(&config);
    let env = [("API_TOKEN", CREDENTIAL)];
    for path in ["/echo-gzip", "/echo-deflate"] {
        let (fetched, report, everything) = fetch(dir.path(), &api.url(path), &env);
        assert_eq!(fetched["status"], 200, "{path}: {report}");
        let text = fetched["text"].as_str().unwrap_or_default();
        assert!(text.contains("authorization: Bearer ****"), "{path}: the plugin reads the decoded body: {text}");
        let headers = fetched["headers"].to_string();
        assert!(!headers.contains("content-encoding"), "{path}: {headers}");
        assert_hidden(CREDENTIAL, &everything);
    }
    let (fetched, report, everything) = fetch(dir.path(), &api.url("/echo-br"), &env);
    assert_ne!(fetched["status"], 200, "{report}");
    let refusal = &report["refused"][0];
    assert_eq!(refusal["kind"], "unreadable_response", "{report}");
    assert!(refusal["message"].as_str().unwrap().contains("content coding `br`"), "{report}");
    assert_hidden(CREDENTIAL, &everything);
}

/// A query credential replaces every parameter that decodes to its name,
/// so no twin the plugin wrote (`api%5Fkey`, `API_KEY`, `api_key+`) reaches
/// the server beside it.
#[test]
fn a_query_credential_replaces_every_spelling_of_its_name() {
    let api = TestServer::start();
    let config = format!(
        "[[plugins.fetch.credentials]]\nto = \"{}\"\nquery = \"api_key\"\nvalue = {{ env = \"KEY\" }}\n",
        api.origin()
    );
    let (dir, _plugins) = setup(&config);
    let twins = "/echo?api%5Fkey=evil1&API_KEY=evil2&api_key+=evil3&x=1;api_key=evil4&page=2";
    let (fetched, report, everything) = fetch(dir.path(), &api.url(twins), &[("KEY", CREDENTIAL)]);
    assert_eq!(fetched["status"], 200, "{report}");
    let sent = api.seen().last().unwrap().clone();
    assert!(!sent.contains("evil"), "a twin reached the server: {sent}");
    assert!(sent.ends_with("page=2&api_key=t0ken%2FABC%2Bxyz-4321"), "{sent}");
    assert_hidden(CREDENTIAL, &everything);
}

/// A token endpoint that echoes the request's `Authorization` (the client id
/// and secret, encoded) in its error: the refusal says what went wrong, masked.
#[test]
fn a_token_endpoint_echoing_the_client_secret_is_masked_in_the_refusal() {
    let api = TestServer::start();
    let config = format!(
        "[[plugins.fetch.credentials]]\nto = \"{}\"\noauth2 = {{ token_url = \"{}\", client_id = {{ env = \"CLIENT_ID\" }}, \
         client_secret = {{ env = \"CLIENT_SECRET\" }} }}\n",
        api.origin(),
        api.url("/token-echo")
    );
    let (dir, _plugins) = setup(&config);
    let env = [("CLIENT_ID", "client-1"), ("CLIENT_SECRET", OAUTH_SECRET)];
    let (_, report, everything) = fetch(dir.path(), &api.url("/private"), &env);
    let refusal = &report["refused"][0];
    assert_eq!(refusal["kind"], "credential_unavailable", "{report}");
    let message = refusal["message"].as_str().unwrap();
    assert!(message.contains("HTTP 401 (invalid_client: you sent Basic ****"), "{message}");
    assert!(!everything.contains("Y2xpZW50LTE6Y2wxZW50LXMzY3JldA"), "the encoded secret shows in:\n{everything}");
    assert_hidden(OAUTH_SECRET, &everything);
}

/// `token_url` is read by a URL parser: user information that hides the real
/// host, or plain HTTP to another machine in any spelling, is a config error.
#[test]
fn a_token_url_is_judged_by_the_host_it_really_names() {
    for (token_url, says) in [
        ("http://127.0.0.1:1@remote.example/token", "user information"),
        ("http://127.0.0.1.remote.example/token", "a token endpoint must be `https://…`"),
        ("http://localhost.evil.example/token", "a token endpoint must be `https://…`"),
    ] {
        let credential = format!(
            "to = \"https://a.example\"\noauth2 = {{ token_url = \"{token_url}\", client_id = {{ env = \"I\" }}, \
             client_secret = {{ env = \"S\" }} }}"
        );
        let (dir, _plugins) = setup(&format!("[[plugins.fetch.credentials]]\n{credential}\n"));
        let output = toolhost_with_env(dir.path(), &["tools"], &[]);
        assert_eq!(output.status.code(), Some(2), "{token_url}");
        assert!(stderr(&output).contains(says), "{token_url}: {}", stderr(&output));
    }
    for token_url in ["http://LOCALHOST:9/token", "http://127.1:9/token", "http://[::1]:9/token"] {
        let credential = format!(
            "to = \"https://a.example\"\noauth2 = {{ token_url = \"{token_url}\", client_id = {{ env = \"I\" }}, \
             client_secret = {{ env = \"S\" }} }}"
        );
        let (dir, _plugins) = setup(&format!("[[plugins.fetch.credentials]]\n{credential}\n"));
        let output = toolhost_with_env(dir.path(), &["tools"], &[("I", "i"), ("S", "s")]);
        assert!(output.status.success(), "{token_url}: {}", stderr(&output));
    }
}

/// A token that contains the client secret goes out byte for byte: masking
/// is for what comes back to the plugin (and reports), never for what goes
/// out. The plugin still sees neither.
#[test]
fn a_token_holding_the_client_secret_reaches_the_api_unmasked() {
    let tokens = TestServer::start();
    let api = TestServer::start();
    let config = format!(
        "[[plugins.fetch.credentials]]\nto = \"{}\"\noauth2 = {{ token_url = \"{}\", client_id = {{ env = \"CLIENT_ID\" }}, \
         client_secret = {{ env = \"CLIENT_SECRET\" }} }}\n",
        api.origin(),
        tokens.url("/token-holding-secret")
    );
    let (dir, _plugins) = setup(&config);
    let env = [("CLIENT_ID", "client-1"), ("CLIENT_SECRET", OAUTH_SECRET)];
    let (fetched, report, everything) = fetch(dir.path(), &api.url("/private"), &env);
    assert_eq!(fetched["text"], "welcome", "{report}");
    let sent = api.headers();
    assert_eq!(
        header(sent.last().unwrap(), "authorization"),
        Some(format!("Bearer {OAUTH_TOKEN_WITH_SECRET}").as_str())
    );
    assert_hidden(OAUTH_TOKEN_WITH_SECRET, &everything);
    assert_hidden(OAUTH_SECRET, &everything);
    // An echo of it comes back masked.
    let (fetched, _, everything) = fetch(dir.path(), &api.url("/echo"), &env);
    assert!(fetched["text"].as_str().unwrap().contains("authorization: Bearer ****"), "{fetched}");
    assert_hidden(OAUTH_TOKEN_WITH_SECRET, &everything);
    assert_eq!(
        header(api.headers().last().unwrap(), "authorization"),
        Some(format!("Bearer {OAUTH_TOKEN_WITH_SECRET}").as_str())
    );
}

/// A token endpoint on 127.0.0.1 that answers every request with `body`
/// (status 200, JSON) until the test ends: its `/token` URL.
fn canned_token_endpoint(body: &'static str) -> String {
    use std::io::{Read, Write};
    let listener = std::net::TcpListener::bind("127.0.0.1:0").unwrap();
    let url = format!("http://127.0.0.1:{}/token", listener.local_addr().unwrap().port());
    std::thread::spawn(move || {
        for stream in listener.incoming() {
            let Ok(mut stream) = stream else { return };
            let _ = stream.set_read_timeout(Some(std::time::Duration::from_secs(10)));
            // The request's head and its (short) form body.
            let mut request = Vec::new();
            let mut buffer = [0u8; 4096];
            while let Ok(read) = stream.read(&mut buffer) {
                request.extend_from_slice(&buffer[..read]);
                let text = String::from_utf8_lossy(&request);
                if read == 0 || text.split_once("\r\n\r\n").is_some_and(|(_, form)| form.contains("grant_type")) {
                    break;
                }
            }
            let response = format!(
                "HTTP/1.1 200 OK\r\nContent-Type: application/json\r\nContent-Length: {}\r\nConnection: close\r\n\r\n{body}",
                body.len()
            );
            let _ = stream.write_all(response.as_bytes());
        }
    });
    url
}

#[test]
fn a_token_endpoint_answer_naming_a_member_twice_gives_no_token() {
    let api = TestServer::start();
    // serde_json alone keeps the last `access_token`; another reader keeps the first.
    let token_url =
        canned_token_endpoint(r#"{"access_token":"tk-first","token_type":"Bearer","access_token":"tk-second"}"#);
    let config = format!(
        "[[plugins.fetch.credentials]]\nto = \"{}\"\noauth2 = {{ token_url = \"{token_url}\", client_id = {{ env = \"CLIENT_ID\" }}, \
         client_secret = {{ env = \"CLIENT_SECRET\" }} }}\n",
        api.origin(),
    );
    let (dir, _plugins) = setup(&config);
    let env = [("CLIENT_ID", "client-1"), ("CLIENT_SECRET", OAUTH_SECRET)];
    let (_, report, everything) = fetch(dir.path(), &api.url("/private"), &env);
    let refusal = &report["refused"][0];
    assert_eq!(refusal["kind"], "credential_unavailable", "{report}");
    let message = refusal["message"].as_str().unwrap();
    assert!(
        message.contains("its answer is JSON in which the member `access_token` appears twice in one object: no token"),
        "{message}"
    );
    assert!(!api.seen().contains(&"/private".to_owned()), "nothing sent without a token: {:?}", api.seen());
    assert!(!everything.contains("tk-second") && !everything.contains("tk-first"), "{everything}");
}

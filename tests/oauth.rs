//! `serve --http` as an OAuth 2.1 resource server (`[serve.oauth]`), against
//! an authorization server on loopback (`tests/mcp/auth_server.py`: client
//! credentials, RS256 JWTs, metadata and JWKS), through the official Python
//! MCP client's OAuth support and through hand-made requests.

mod common;

use common::{plugin_dir, shared_cache};
use serde_json::{Value, json};
use std::io::{BufRead, BufReader};
use std::path::Path;
use std::process::{Child, Command, Stdio};
use std::time::Duration;

/// A child process killed when dropped.
struct Running(Child);

impl Drop for Running {
    fn drop(&mut self) {
        let _ = self.0.kill();
        let _ = self.0.wait();
    }
}

fn mcp_dir() -> std::path::PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("../tests/mcp")
}

fn python() -> std::path::PathBuf {
    common::install("mcp/setup.sh");
    mcp_dir().join(".tools/venv/bin/python")
}

/// The authorization server, and its issuer URL.
fn authorization_server() -> (Running, String) {
    let clients = json!({
        "full": {"secret": "full-secret", "scopes": ["mcp", "tools:hash"]},
        "basic": {"secret": "basic-secret", "scopes": ["mcp"]},
    });
    let mut child = Command::new(python())
        .arg(mcp_dir().join("auth_server.py"))
        .arg(clients.to_string())
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .spawn()
        .expect("start auth_server.py");
    let mut line = String::new();
    BufReader::new(child.stdout.take().unwrap()).read_line(&mut line).unwrap();
    let port = line.trim().strip_prefix("listening ").unwrap_or_else(|| panic!("auth_server.py said {line:?}"));
    let issuer = format!("http://127.0.0.1:{port}");
    (Running(child), issuer)
}

/// `serve --http` on a free port with `[serve.oauth]`, and its MCP URL.
fn serve(dir: &Path, issuer: &str) -> (Running, String) {
    let port = std::net::TcpListener::bind("127.0.0.1:0").unwrap().local_addr().unwrap().port();
    let url = format!("http://127.0.0.1:{port}/mcp");
    let config = dir.join("toolhost.toml");
    std::fs::write(
        &config,
        format!(
            "[serve.oauth]\nissuer = \"{issuer}\"\nresource = \"{url}\"\nscopes = [\"mcp\"]\n\
             [serve.oauth.tools]\nhash = \"tools:hash\"\n"
        ),
    )
    .unwrap();
    let mut child = Command::new(env!("CARGO_BIN_EXE_toolhost"))
        .args(["--plugins", dir.to_str().unwrap(), "--config", config.to_str().unwrap()])
        .args(["serve", "--http", &format!("127.0.0.1:{port}")])
        .env("TOOLHOST_CACHE_DIR", shared_cache())
        .stdin(Stdio::null())
        .stderr(Stdio::piped())
        .spawn()
        .expect("start toolhost serve --http");
    let stderr = child.stderr.take().unwrap();
    let (sender, receiver) = std::sync::mpsc::channel();
    std::thread::spawn(move || {
        for line in BufReader::new(stderr).lines().map_while(Result::ok) {
            eprintln!("[serve] {line}");
            if line.starts_with("toolhost: serving MCP at ") {
                let _ = sender.send(());
            }
        }
    });
    receiver.recv_timeout(Duration::from_secs(120)).expect("toolhost serve --http did not start");
    (Running(child), url)
}

fn python_client(url: &str, issuer: &str, client: &str, mode: &str) -> Value {
    let output = Command::new(python())
        .arg(mcp_dir().join("client.py"))
        .args(["--mode", mode, "--url", url, "--client", client, "--issuer", issuer, "oauth"])
        .output()
        .expect("run client.py");
    let stdout = String::from_utf8_lossy(&output.stdout);
    assert!(output.status.success(), "client.py oauth {client}: {stdout}{}", String::from_utf8_lossy(&output.stderr));
    serde_json::from_str(stdout.trim()).expect("client.py prints one JSON object")
}

#[test]
fn an_oauth_client_sees_and_calls_the_tools_its_scopes_allow() {
    let plugins = plugin_dir(&["hash", "echo"]);
    let (_authorization, issuer) = authorization_server();
    let (_server, url) = serve(plugins.path(), &issuer);
    for mode in ["legacy", "2026-07-28"] {
        // Discovery from the 401, the token by client credentials, then MCP.
        let full = python_client(&url, &issuer, "full:full-secret:mcp,tools:hash", mode);
        let tools: Vec<&str> = full["tools"].as_array().unwrap().iter().map(|t| t.as_str().unwrap()).collect();
        assert_eq!(tools, ["echo", "hash", "sha256", "sha512"], "{mode}: {full}");
        // A token without `tools:hash` does not see the hash plugin's tools.
        let basic = python_client(&url, &issuer, "basic:basic-secret:mcp", mode);
        assert_eq!(basic["tools"], json!(["echo"]), "{mode}: {basic}");
        assert_eq!(basic["called"]["is_error"], false, "{mode}: {basic}");
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn tokens_are_checked_and_every_refusal_says_where_to_get_one() {
    let _ = rustls::crypto::ring::default_provider().install_default();
    let plugins = plugin_dir(&["hash", "echo"]);
    let (_authorization, issuer) = authorization_server();
    let (_server, url) = serve(plugins.path(), &issuer);
    let http = reqwest::Client::new();
    let origin = url.trim_end_matches("/mcp").to_owned();
    let metadata_url = format!("{origin}/.well-known/oauth-protected-resource/mcp");

    let metadata: Value = http.get(&metadata_url).send().await.unwrap().json().await.unwrap();
    assert_eq!(metadata["resource"], url.as_str(), "{metadata}");
    assert_eq!(metadata["authorization_servers"], json!([issuer]), "{metadata}");
    assert_eq!(metadata["scopes_supported"], json!(["mcp", "tools:hash"]), "{metadata}");

    let mint = |claims: Value, foreign: bool| {
        let http = http.clone();
        let issuer = issuer.clone();
        async move {
            let minted: Value = http
                .post(format!("{issuer}/mint"))
                .json(&json!({"claims": claims, "foreign": foreign}))
                .send()
                .await
                .unwrap()
                .json()
                .await
                .unwrap();
            minted["token"].as_str().unwrap().to_owned()
        }
    };
    let call = |token: Option<String>, tool: &str| {
        let body = json!({
            "jsonrpc": "2.0", "id": 1, "method": "tools/call",
            "params": {"name": tool, "arguments": {"text": "abc"}, "_meta": {
                "io.modelcontextprotocol/protocolVersion": "2026-07-28",
                "io.modelcontextprotocol/clientCapabilities": {},
            }},
        });
        let mut request = http
            .post(&url)
            .header("content-type", "application/json")
            .header("accept", "application/json, text/event-stream")
            .header("mcp-protocol-version", "2026-07-28")
            .header("mcp-method", "tools/call")
            .header("mcp-name", tool)
            .body(body.to_string());
        if let Some(token) = token {
            request = request.bearer_auth(token);
        }
        async move {
            let response = request.send().await.unwrap();
            let status = response.status().as_u16();
            let challenge = response
                .headers()
                .get("www-authenticate")
                .map(|value| value.to_str().unwrap().to_owned())
                .unwrap_or_default();
            (status, challenge, response.text().await.unwrap())
        }
    };
    let now = std::time::SystemTime::now().duration_since(std::time::UNIX_EPOCH).unwrap().as_secs();
    let claims =
        |aud: &str, exp: u64, scope: &str| json!({"iss": issuer, "aud": aud, "exp": exp, "scope": scope, "sub": "t"});

    // No token: 401, naming the metadata and the scopes to ask for.
    let (status, challenge, _) = call(None, "echo").await;
    assert_eq!(status, 401);
    assert_eq!(challenge, format!("Bearer resource_metadata=\"{metadata_url}\", scope=\"mcp tools:hash\""));

    // Each bad token: 401 invalid_token, saying why.
    for (token, why) in [
        (mint(claims(&url, now - 120, "mcp"), false).await, "the token has expired"),
        (mint(claims("http://elsewhere/mcp", now + 600, "mcp"), false).await, "the token is not for this resource"),
        (mint(claims(&url, now + 600, "mcp"), true).await, "signature does not verify"),
        ("not.a.jwt".to_owned(), "the token is not a JWT"),
    ] {
        let (status, challenge, body) = call(Some(token), "echo").await;
        assert_eq!(status, 401, "{why}: {body}");
        assert!(challenge.contains("error=\"invalid_token\"") && challenge.contains(why), "{challenge}");
    }
    // A token signed with a shared secret is never accepted.
    let hs256 = {
        use base64::Engine as _;
        let encode = |value: &Value| base64::engine::general_purpose::URL_SAFE_NO_PAD.encode(value.to_string());
        format!("{}.{}.c2ln", encode(&json!({"alg": "HS256", "typ": "JWT"})), encode(&claims(&url, now + 600, "mcp")))
    };
    let (status, challenge, _) = call(Some(hs256), "echo").await;
    assert!(status == 401 && challenge.contains("are not accepted"), "{challenge}");

    // Without the scope every request needs: 403 insufficient_scope.
    let (status, challenge, _) = call(Some(mint(claims(&url, now + 600, "other"), false).await), "echo").await;
    assert_eq!(status, 403);
    assert!(challenge.contains("error=\"insufficient_scope\"") && challenge.contains("scope=\"mcp\""), "{challenge}");

    // A good token calls echo; a call to a tool of `hash` needs `tools:hash` (step-up).
    let good = mint(claims(&url, now + 600, "mcp"), false).await;
    let (status, _, body) = call(Some(good.clone()), "echo").await;
    assert!(status == 200 && body.contains("abc"), "{status}: {body}");
    let (status, challenge, _) = call(Some(good), "sha256").await;
    assert_eq!(status, 403);
    assert!(
        challenge.contains("error=\"insufficient_scope\"") && challenge.contains("scope=\"mcp tools:hash\""),
        "{challenge}"
    );
    // Its list has echo only, and is private to the caller.
    let body = json!({"jsonrpc": "2.0", "id": 2, "method": "tools/list", "params": {"_meta": {
        "io.modelcontextprotocol/protocolVersion": "2026-07-28",
        "io.modelcontextprotocol/clientCapabilities": {},
    }}});
    let listed = http
        .post(&url)
        .bearer_auth(mint(claims(&url, now + 600, "mcp"), false).await)
        .header("content-type", "application/json")
        .header("accept", "application/json, text/event-stream")
        .header("mcp-protocol-version", "2026-07-28")
        .header("mcp-method", "tools/list")
        .body(body.to_string())
        .send()
        .await
        .unwrap()
        .text()
        .await
        .unwrap();
    let data = listed.lines().find_map(|line| line.strip_prefix("data:")).unwrap_or(&listed);
    let listed: Value = serde_json::from_str(data.trim()).unwrap();
    let names: Vec<&str> =
        listed["result"]["tools"].as_array().unwrap().iter().map(|tool| tool["name"].as_str().unwrap()).collect();
    assert_eq!(names, ["echo"], "{listed}");
    assert_eq!(listed["result"]["cacheScope"], "private", "{listed}");
    let wider = mint(claims(&url, now + 600, "mcp tools:hash"), false).await;
    let (status, _, body) = call(Some(wider), "sha256").await;
    assert!(status == 200 && body.contains("ba7816bf"), "{status}: {body}");
}

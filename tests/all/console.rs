//! The operator's page (`[serve.console]`, `/console`) and the Server Card
//! (`/mcp/server-card`, `/.well-known/ai-catalog.json`) of `serve --http`:
//! loaded in a real browser (Debian's headless Chromium, installed pinned by
//! tests/console/setup.sh) against the real binary holding plugins, a quota,
//! a refused call, a task and a secret; and, with `[serve.oauth]`, a token
//! bound to a profile seeing only that profile's tools.

use crate::common;
use crate::mcp::{message_of, serve_http};

use common::{plugin_dir, toolhost};
use serde_json::{Value, json};
use std::path::{Path, PathBuf};
use std::process::Command;
use std::time::{Duration, Instant};

const TOKEN: &str = "console-token-0123456789abcdef";
const SECRET: &str = "hunter2-SECRET-VALUE-77";
/// A plugin's description trying to run a script in the operator's browser.
const INJECTED: &str = "<script>document.title='pwned';document.body.innerHTML='pwned'</script>";

/// Where this test run keeps what it shows a person (the screenshot).
fn output_dir() -> PathBuf {
    let dir = Path::new(env!("CARGO_TARGET_TMPDIR")).join("console");
    std::fs::create_dir_all(&dir).unwrap();
    dir
}

/// A 2026-07-28 request to `url` with the token; the JSON-RPC message answered.
async fn request(url: &str, token: Option<&str>, method: &str, mut params: Value, name: &str) -> Value {
    params["_meta"] = json!({
        "io.modelcontextprotocol/protocolVersion": "2026-07-28",
        "io.modelcontextprotocol/clientCapabilities": {"extensions": {"io.modelcontextprotocol/tasks": {}}},
    });
    let body = json!({"jsonrpc": "2.0", "id": 1, "method": method, "params": params});
    let mut request = reqwest::Client::new()
        .post(url)
        .header("content-type", "application/json")
        .header("accept", "application/json, text/event-stream")
        .header("mcp-protocol-version", "2026-07-28")
        .header("mcp-method", method)
        .header("mcp-name", name);
    if let Some(token) = token {
        request = request.bearer_auth(token);
    }
    message_of(&request.body(body.to_string()).send().await.unwrap().text().await.unwrap())
}

async fn call(url: &str, tool: &str, arguments: Value) -> Value {
    request(url, Some(TOKEN), "tools/call", json!({"name": tool, "arguments": arguments}), tool).await
}

/// Headless Chromium with a fresh profile and nothing of its own on the network.
fn chromium(profile: &Path) -> Command {
    common::install("console/setup.sh");
    let mut command = Command::new("chromium");
    command.args([
        "--headless",
        "--no-sandbox",
        "--disable-gpu",
        "--disable-quic",
        "--no-first-run",
        "--disable-background-networking",
        "--disable-component-update",
        "--disable-sync",
        "--disable-dev-shm-usage",
        "--hide-scrollbars",
        "--window-size=1400,2400",
        "--virtual-time-budget=4000",
    ]);
    command.arg(format!("--user-data-dir={}", profile.display()));
    command
}

fn run(mut command: Command, what: &str) -> String {
    let output = command.output().unwrap_or_else(|err| panic!("{what}: {err}"));
    assert!(
        output.status.success(),
        "{what} failed:\n{}\n{}",
        String::from_utf8_lossy(&output.stdout),
        String::from_utf8_lossy(&output.stderr)
    );
    String::from_utf8_lossy(&output.stdout).into_owned()
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_operators_page_in_chromium_shows_what_is_loaded_and_done_and_nothing_secret() {
    let _ = rustls::crypto::ring::default_provider().install_default();
    let dir = plugin_dir(&["hash", "echo", "fetch", "content_kinds"]);
    std::fs::write(
        dir.path().join("echo.toml"),
        format!("[tools.echo]\ndescription = \"Echoes its text back. {INJECTED}\"\n"),
    )
    .unwrap();
    assert!(toolhost(dir.path(), &["audit", "keygen", "--out", "keys"]).status.success());
    let config = dir.path().join("toolhost.toml");
    std::fs::write(
        &config,
        "[audit]\nfile = \"audit.log\"\nkey = \"keys/audit.key\"\ninclude_arguments = true\n\
         [plugins.fetch]\nhttp = [\"https://allowed.example\"]\nsecrets = [\"CONSOLE_TEST_SECRET\"]\n\
         [plugins.content_kinds.limits]\ntimeout = \"90s\"\n\
         [quotas.tools]\nsha256 = { rate = \"1/min\" }\n\
         [serve.tasks]\ntools = { slow_compute = \"optional\" }\n\
         [serve.console]\nrefresh = \"2s\"\n\
         [serve.card]\ntitle = \"Test tools\"\n",
    )
    .unwrap();
    let env = [("CONSOLE_TEST_TOKEN", TOKEN), ("CONSOLE_TEST_SECRET", SECRET)];
    let (_server, url) = serve_http(dir.path(), &config, &["--token-env", "CONSOLE_TEST_TOKEN"], &env);
    let origin = url.trim_end_matches("/mcp").to_owned();
    let http = reqwest::Client::new();

    // What the page will show: two calls of sha256 (the second over its
    // quota), a fetch refused (its host is not granted; its arguments hold
    // the secret), and a task still running.
    let first = call(&url, "sha256", json!({"text": "abc"})).await;
    assert!(first["result"]["isError"] != true, "{first}");
    let second = call(&url, "sha256", json!({"text": "abc"})).await;
    assert_eq!(second["result"]["isError"], true, "over the quota: {second}");
    let fetched = call(&url, "fetch", json!({"url": format!("https://not-granted.example/?key={SECRET}")})).await;
    assert_eq!(fetched["result"]["isError"], true, "{fetched}");
    let task = call(&url, "slow_compute", json!({"seconds": 60, "label": "console"})).await;
    assert_eq!(task["result"]["resultType"], "task", "{task}");
    let log = dir.path().join("audit.log");
    let deadline = Instant::now() + Duration::from_secs(20);
    let calls = |text: String| text.lines().filter(|line| !line.contains(r#""kind":"head""#)).count();
    while calls(std::fs::read_to_string(&log).unwrap_or_default()) < 3 {
        assert!(Instant::now() < deadline, "the audit log did not get three lines");
        tokio::time::sleep(Duration::from_millis(100)).await;
    }

    // No token, a wrong one: 401, with the Basic challenge a browser answers.
    let page = format!("{origin}/console");
    for token in [None, Some("console-token-wrong-0123456789")] {
        let mut asked = http.get(&page);
        if let Some(token) = token {
            asked = asked.bearer_auth(token);
        }
        let answer = asked.send().await.unwrap();
        assert_eq!(answer.status(), 401, "{token:?}");
        let challenges: Vec<_> = answer.headers().get_all("www-authenticate").iter().collect();
        assert!(challenges.iter().any(|value| value.to_str().unwrap().starts_with("Basic realm=")), "{challenges:?}");
        assert!(!answer.text().await.unwrap().contains("<"), "a refusal is text");
    }
    for path in ["/console/console.js", "/console/console.css"] {
        assert_eq!(http.get(format!("{origin}{path}")).send().await.unwrap().status(), 401, "{path}");
    }
    // A wrong Host: 403 before anything.
    let rebound = http.get(&page).header("host", "evil.example").bearer_auth(TOKEN).send().await.unwrap();
    assert_eq!(rebound.status(), 403);
    let answer = http.get(&page).bearer_auth(TOKEN).send().await.unwrap();
    assert_eq!(answer.status(), 200);
    let csp = answer.headers()["content-security-policy"].to_str().unwrap().to_owned();
    assert!(csp.contains("script-src 'self'") && csp.contains("default-src 'none'"), "{csp}");
    assert!(!csp.contains("unsafe-inline"), "{csp}");
    assert_eq!(answer.headers()["x-frame-options"], "DENY");
    let html = answer.text().await.unwrap();
    assert!(!html.contains(SECRET), "the secret's value is nowhere in the page");
    assert!(!html.contains(TOKEN), "nor the token");
    assert!(!html.contains(INJECTED), "the description's script is never markup");
    assert!(html.contains("&lt;script&gt;document.title=&#39;pwned&#39;"), "it is shown as text");
    assert!(!html.contains(" style=") && !html.contains("<script>"), "no inline style or script");
    let script = http.get(format!("{origin}/console/console.js")).bearer_auth(TOKEN).send().await.unwrap();
    assert_eq!(script.headers()["content-type"], "text/javascript; charset=utf-8");

    // The page in a real browser: the token as Basic's password.
    let profile = tempfile::tempdir().unwrap();
    let port = origin.rsplit(':').next().unwrap();
    let browsed = format!("http://operator:{TOKEN}@127.0.0.1:{port}/console");
    let mut dump = chromium(&profile.path().join("dump"));
    dump.args(["--dump-dom", &browsed]);
    let dom = run(dump, "chromium --dump-dom");
    std::fs::write(output_dir().join("console.html"), &dom).unwrap();
    assert!(dom.contains("<title>toolhost: operator's page</title>"), "the injected script did not run: {dom}");
    assert!(!dom.contains("pwned</title>") && !dom.contains("<body>pwned"), "{dom}");
    assert!(dom.contains("&lt;script&gt;document.title='pwned'"), "shown as text in the DOM: {dom}");
    for tool in ["sha256", "sha512", "echo", "fetch", "slow_compute"] {
        assert!(dom.contains(&format!("<b>{tool}</b>")), "{tool} is listed: {dom}");
    }
    // The refused calls, each with its reason.
    assert!(dom.contains("rate_limited"), "the call over the quota: {dom}");
    assert!(dom.contains("not-granted.example") && dom.contains("not_granted"), "the refused request: {dom}");
    assert!(dom.contains("working: 1"), "the task, by status: {dom}");
    assert!(dom.contains("CONSOLE_TEST_SECRET"), "grants by name: {dom}");
    assert!(dom.contains("1 times per minute") || dom.contains("once per minute"), "the quota: {dom}");
    assert!(!dom.contains(SECRET) && !dom.contains(TOKEN), "nothing secret in the DOM");
    assert!(dom.contains("<svg class=\"spark\""), "a sparkline per tool: {dom}");
    let screenshot = output_dir().join("console.png");
    let _ = std::fs::remove_file(&screenshot);
    let mut shot = chromium(&profile.path().join("shot"));
    shot.arg(format!("--screenshot={}", screenshot.display())).arg(&browsed);
    run(shot, "chromium --screenshot");
    let png = std::fs::read(&screenshot).expect("chromium saved the screenshot");
    assert!(png.starts_with(b"\x89PNG") && png.len() > 20_000, "a real picture: {} bytes", png.len());
    eprintln!("the page, as Chromium drew it: {}", screenshot.display());

    // The Server Card: public, generated from what is loaded.
    let card = http.get(format!("{origin}/mcp/server-card")).send().await.unwrap();
    assert_eq!(card.status(), 200);
    assert_eq!(card.headers()["content-type"], "application/mcp-server-card+json");
    assert_eq!(card.headers()["access-control-allow-origin"], "*");
    let etag = card.headers()["etag"].to_str().unwrap().to_owned();
    let card: Value = card.json().await.unwrap();
    assert_eq!(card["$schema"], "https://static.modelcontextprotocol.io/schemas/v1/server-card.schema.json");
    assert_eq!(card["name"], "localhost/toolhost", "{card}");
    assert_eq!(card["title"], "Test tools");
    assert_eq!(card["version"], env!("CARGO_PKG_VERSION"));
    let listed = request(&url, Some(TOKEN), "tools/list", json!({}), "").await;
    let tools = listed["result"]["tools"].as_array().map(Vec::len).unwrap_or_default();
    assert!(tools > 4, "{listed}");
    assert_eq!(card["description"], format!("{tools} tools from 4 sandboxed WebAssembly plugins"), "{card}");
    let remote = &card["remotes"][0];
    assert_eq!(remote["type"], "streamable-http");
    assert_eq!(remote["url"], url.as_str());
    let versions = remote["supportedProtocolVersions"].as_array().unwrap();
    assert!(versions.contains(&json!("2025-11-25")) && versions.contains(&json!("2026-07-28")), "{card}");
    assert_eq!(remote["headers"][0]["name"], "Authorization");
    assert_eq!(remote["headers"][0]["isSecret"], true);
    assert!(card["_meta"]["toolhost/capabilities"]["tools"].is_object(), "{card}");
    assert!(card.get("tools").is_none(), "the extension leaves tools to tools/list");
    assert!(!card.to_string().contains(TOKEN));
    let again = http.get(format!("{origin}/mcp/server-card")).header("if-none-match", &etag).send().await.unwrap();
    assert_eq!(again.status(), 304);
    let old_path: Value =
        http.get(format!("{origin}/.well-known/mcp/server-card.json")).send().await.unwrap().json().await.unwrap();
    assert_eq!(old_path, card);
    let catalog: Value =
        http.get(format!("{origin}/.well-known/ai-catalog.json")).send().await.unwrap().json().await.unwrap();
    assert_eq!(catalog["entries"][0]["type"], "application/mcp-server-card+json");
    assert_eq!(catalog["entries"][0]["url"], format!("{url}/server-card"));
    let posted = http.post(format!("{origin}/mcp/server-card")).send().await.unwrap();
    assert_eq!(posted.status(), 405);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_token_bound_to_a_profile_sees_only_its_tools_and_needs_the_consoles_scope() {
    let _ = rustls::crypto::ring::default_provider().install_default();
    let dir = plugin_dir(&["hash", "echo"]);
    let (_authorization, issuer) = crate::oauth::authorization_server();
    let extra = "[serve.console]\nscope = \"console\"\n\
                 [serve.profiles.hashing]\ninclude = [\"hash\"]\nsubjects = [\"alice\"]\n";
    let (_server, url) = crate::oauth::serve_with(dir.path(), &issuer, "", extra);
    let origin = url.trim_end_matches("/mcp").to_owned();
    let users = crate::oauth::Users::new(&url, &issuer);
    let http = reqwest::Client::new();
    let page = format!("{origin}/console");

    assert_eq!(http.get(&page).send().await.unwrap().status(), 401);
    // A token good for MCP but without the console's scope: 403 naming it.
    let mcp_only = users.token("bob", "mcp").await;
    let refused = http.get(&page).bearer_auth(&mcp_only).send().await.unwrap();
    assert_eq!(refused.status(), 403);
    let challenge = refused.headers()["www-authenticate"].to_str().unwrap().to_owned();
    assert!(challenge.contains("insufficient_scope") && challenge.contains("console"), "{challenge}");

    // Bob (no profile binds him) sees every tool; Alice, bound to `hashing`, its tools only.
    let bob = users.token("bob", "mcp console").await;
    let everything = http.get(&page).bearer_auth(&bob).send().await.unwrap().text().await.unwrap();
    assert!(everything.contains("<b>echo</b>") && everything.contains("<b>sha256</b>"), "{everything}");
    let alice = users.token("alice", "mcp console").await;
    let answer = http.get(&page).bearer_auth(&alice).send().await.unwrap();
    assert_eq!(answer.status(), 200);
    let hers = answer.text().await.unwrap();
    assert!(hers.contains("<b>sha256</b>") && hers.contains("profile <b>hashing</b>"), "{hers}");
    assert!(!hers.contains("echo"), "no tool, plugin or call of another profile: {hers}");
    // The token as Basic's password (what a browser sends) is the same token.
    let basic = http.get(&page).basic_auth("operator", Some(&alice)).send().await.unwrap().text().await.unwrap();
    assert!(basic.contains("<b>sha256</b>") && !basic.contains("echo"));

    // The card says OAuth, and where its metadata is; a profile's card asks for its token.
    let card: Value = http.get(format!("{url}/server-card")).send().await.unwrap().json().await.unwrap();
    assert_eq!(card["_meta"]["toolhost/authorization"]["type"], "oauth2", "{card}");
    assert_eq!(card["_meta"]["toolhost/authorization"]["authorization_servers"], json!([issuer]));
    assert_eq!(http.get(format!("{url}/hashing/server-card")).send().await.unwrap().status(), 401);
    let theirs = http.get(format!("{url}/hashing/server-card")).bearer_auth(&alice).send().await.unwrap();
    assert_eq!(theirs.status(), 200);
    assert_eq!(theirs.headers()["cache-control"], "private, max-age=300", "no shared cache keeps a profile's card");
    assert_eq!(theirs.headers()["vary"], "Authorization");
    let theirs: Value = theirs.json().await.unwrap();
    assert_eq!(theirs["remotes"][0]["url"], format!("{url}/hashing"));
    assert_eq!(theirs["description"], "3 tools from 1 sandboxed WebAssembly plugin (profile hashing)", "{theirs}");
    let others = http.get(format!("{url}/hashing/server-card")).bearer_auth(&bob).send().await.unwrap();
    assert_eq!(others.status(), 404, "bob is not bound to it: for him it is not there");
    let unknown = http.get(format!("{url}/nope/server-card")).bearer_auth(&bob).send().await.unwrap();
    assert_eq!(unknown.status(), 404);
    assert!(!unknown.text().await.unwrap().contains("hashing"), "no profile's name to another token");
}

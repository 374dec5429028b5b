//! `serve --http` as an OAuth 2.1 resource server (`[serve.oauth]`), against
//! an authorization server on loopback (`tests/mcp/auth_server.py`: client
//! credentials, RS256 JWTs, metadata and JWKS), through the official Python
//! MCP client's OAuth support and through hand-made requests; and several
//! users (tokens with different subjects) against one server, each trying
//! to see, answer, cancel or outlast what another started, or to hold the
//! server's capacity.

use crate::common;

use common::{plugin_dir, shared_cache};
use serde_json::{Value, json};
use std::io::{BufRead, BufReader};
use std::path::Path;
use std::process::{Child, Command, Stdio};
use std::time::{Duration, Instant};

/// A child process killed when dropped.
pub(crate) struct Running(Child);

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
pub(crate) fn authorization_server() -> (Running, String) {
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
    serve_with(dir, issuer, "", "[serve.oauth.tools]\nhash = \"tools:hash\"\n")
}

/// [`serve`] with `top` before `[serve.oauth]` (which needs the scope `mcp`) and `extra` after it.
pub(crate) fn serve_with(dir: &Path, issuer: &str, top: &str, extra: &str) -> (Running, String) {
    let port = std::net::TcpListener::bind("127.0.0.1:0").unwrap().local_addr().unwrap().port();
    let url = format!("http://127.0.0.1:{port}/mcp");
    let config = dir.join("toolhost.toml");
    std::fs::write(
        &config,
        format!("{top}[serve.oauth]\nissuer = \"{issuer}\"\nresource = \"{url}\"\nscopes = [\"mcp\"]\n{extra}"),
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

/// Several users of one server: tokens from the test issuer, and raw MCP
/// requests with them.
pub(crate) struct Users {
    http: reqwest::Client,
    url: String,
    issuer: String,
}

/// The JSON-RPC answer in a response body (JSON, or the SSE event holding a
/// result or an error); `{"unparsed": BODY}` when there is none.
fn answer_in(body: &str) -> Value {
    let events = body.lines().filter_map(|line| line.strip_prefix("data:")).map(str::trim);
    let answered = events
        .rev()
        .filter_map(|data| serde_json::from_str::<Value>(data).ok())
        .find(|message| message.get("result").is_some() || message.get("error").is_some());
    answered.or_else(|| serde_json::from_str(body).ok()).unwrap_or_else(|| json!({ "unparsed": body }))
}

/// An error answer with `id` written as `ID`, to compare two.
fn without(answer: &Value, id: &str) -> String {
    answer["error"].to_string().replace(id, "ID")
}

/// `id` with its last character changed: an id of the same replica and run never given out.
fn never_given(id: &str) -> String {
    let mut never = id.to_owned();
    let last = never.pop().unwrap();
    never.push(if last == '0' { '1' } else { '0' });
    never
}

const TASKS_EXTENSION: &str = "io.modelcontextprotocol/tasks";

impl Users {
    pub(crate) fn new(url: &str, issuer: &str) -> Users {
        let _ = rustls::crypto::ring::default_provider().install_default();
        Users { http: reqwest::Client::new(), url: url.to_owned(), issuer: issuer.to_owned() }
    }

    async fn mint(&self, claims: Value, kid: Option<&str>) -> String {
        let mut asked = json!({ "claims": claims });
        if let Some(kid) = kid {
            asked["kid"] = json!(kid);
        }
        let minted: Value =
            self.http.post(format!("{}/mint", self.issuer)).json(&asked).send().await.unwrap().json().await.unwrap();
        minted["token"].as_str().unwrap().to_owned()
    }

    fn claims(&self, subject: &str, scope: &str) -> Value {
        let now = std::time::SystemTime::now().duration_since(std::time::UNIX_EPOCH).unwrap().as_secs();
        json!({"iss": self.issuer, "aud": self.url, "exp": now + 600, "scope": scope, "sub": subject})
    }

    /// A token for `subject` with `scope`.
    pub(crate) async fn token(&self, subject: &str, scope: &str) -> String {
        self.mint(self.claims(subject, scope), None).await
    }

    async fn issuer_get(&self, path: &str) -> Value {
        self.http.get(format!("{}{path}", self.issuer)).send().await.unwrap().json().await.unwrap()
    }

    async fn control(&self, settings: Value) {
        self.http.post(format!("{}/control", self.issuer)).json(&settings).send().await.unwrap();
    }

    /// A 2026-07-28 request (declaring `capabilities`); its status, `WWW-Authenticate` and answer.
    async fn stateless(
        &self,
        token: &str,
        method: &str,
        mut params: Value,
        name: Option<&str>,
        capabilities: Value,
    ) -> (u16, String, Value) {
        params["_meta"] = json!({
            "io.modelcontextprotocol/protocolVersion": "2026-07-28",
            "io.modelcontextprotocol/clientCapabilities": capabilities,
        });
        let body = json!({"jsonrpc": "2.0", "id": 1, "method": method, "params": params});
        let mut request = self
            .http
            .post(&self.url)
            .bearer_auth(token)
            .header("content-type", "application/json")
            .header("accept", "application/json, text/event-stream")
            .header("mcp-protocol-version", "2026-07-28")
            .header("mcp-method", method)
            .body(body.to_string());
        if let Some(name) = name {
            request = request.header("mcp-name", name);
        }
        let response = request.send().await.unwrap();
        let status = response.status().as_u16();
        let challenge = response
            .headers()
            .get("www-authenticate")
            .map(|value| value.to_str().unwrap().to_owned())
            .unwrap_or_default();
        (status, challenge, answer_in(&response.text().await.unwrap()))
    }

    /// A request of the tasks extension (the client declares it, and elicitation).
    async fn task_request(&self, token: &str, method: &str, params: Value, name: &str) -> Value {
        let capabilities = json!({"elicitation": {"form": {}}, "extensions": {TASKS_EXTENSION: {}}});
        let (status, _, answer) = self.stateless(token, method, params, Some(name), capabilities).await;
        assert_eq!(status, 200, "{method}: {answer}");
        answer
    }

    async fn get_task(&self, token: &str, id: &str) -> Value {
        self.task_request(token, "tasks/get", json!({"taskId": id}), id).await
    }

    /// Opens a 2025-11-25 session declaring `capabilities`; its id.
    pub(crate) async fn open(&self, token: &str, capabilities: Value) -> String {
        let initialize = json!({"jsonrpc": "2.0", "id": 0, "method": "initialize", "params": {
            "protocolVersion": "2025-11-25", "capabilities": capabilities,
            "clientInfo": {"name": "raw", "version": "1"}}});
        let response = self
            .http
            .post(&self.url)
            .bearer_auth(token)
            .header("content-type", "application/json")
            .header("accept", "application/json, text/event-stream")
            .body(initialize.to_string())
            .send()
            .await
            .unwrap();
        assert_eq!(response.status(), 200);
        let session = response.headers()["mcp-session-id"].to_str().unwrap().to_owned();
        let _ = response.text().await;
        let (status, _) = self
            .in_session(token, &session, "POST", json!({"jsonrpc": "2.0", "method": "notifications/initialized"}))
            .await;
        assert_eq!(status, 202);
        session
    }

    /// One request (`POST` a message, or `DELETE`) in `session`; its status and body.
    async fn in_session(&self, token: &str, session: &str, method: &str, body: Value) -> (u16, String) {
        let request = match method {
            "DELETE" => self.http.delete(&self.url),
            _ => self.http.post(&self.url).header("content-type", "application/json").body(body.to_string()),
        };
        let response = request
            .bearer_auth(token)
            .header("accept", "application/json, text/event-stream")
            .header("mcp-protocol-version", "2025-11-25")
            .header("mcp-session-id", session)
            .send()
            .await
            .unwrap();
        (response.status().as_u16(), response.text().await.unwrap())
    }

    /// A request in `session`; its answer.
    pub(crate) async fn ask(&self, token: &str, session: &str, id: u64, method: &str, params: Value) -> Value {
        let body = json!({"jsonrpc": "2.0", "id": id, "method": method, "params": params});
        let (status, text) = self.in_session(token, session, "POST", body).await;
        assert_eq!(status, 200, "{method}: {text}");
        answer_in(&text)
    }
}

/// `content_kinds` (its tool calls, questions, resources and prompts) behind
/// the scope `tools:kinds`, its questions granted, with `tasks`.
fn kinds(limits: &str, tasks: &str) -> String {
    format!(
        "[serve.oauth.tools]\ncontent_kinds = \"tools:kinds\"\n[plugins.content_kinds]\nelicitation = true\n\
         [plugins.content_kinds.limits]\n{limits}\n[serve.tasks]\n{tasks}\n"
    )
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn no_user_sees_answers_cancels_or_lists_another_users_task_session_or_question() {
    let plugins = plugin_dir(&["content_kinds"]);
    let (_authorization, issuer) = authorization_server();
    let tasks = "tools = { confirm_delete = \"optional\", slow_compute = \"optional\" }";
    let (_server, url) = serve_with(plugins.path(), &issuer, "", &kinds("timeout = \"60s\"", tasks));
    let users = Users::new(&url, &issuer);
    let alice = users.token("alice", "mcp tools:kinds").await;
    let bob = users.token("bob", "mcp tools:kinds").await;
    // Alice's subject through another client is someone else too.
    let mut elsewhere = users.claims("alice", "mcp tools:kinds");
    elsewhere["client_id"] = json!("another-app");
    let alice_elsewhere = users.mint(elsewhere, None).await;

    // Alice's task asks her before it deletes her file.
    let call = json!({"name": "confirm_delete", "arguments": {"filename": "alice-private.txt"}});
    let created = users.task_request(&alice, "tools/call", call, "confirm_delete").await;
    assert_eq!(created["result"]["resultType"], "task", "{created}");
    let id = created["result"]["taskId"].as_str().unwrap().to_owned();
    let deadline = Instant::now() + Duration::from_secs(30);
    let asked = loop {
        let polled = users.get_task(&alice, &id).await;
        if polled["result"]["status"] == "input_required" {
            break polled;
        }
        assert!(Instant::now() < deadline, "never asked: {polled}");
        tokio::time::sleep(Duration::from_millis(100)).await;
    };
    assert!(asked.to_string().contains("Delete alice-private.txt?"), "{asked}");
    let key = asked["result"]["inputRequests"].as_object().unwrap().keys().next().unwrap().clone();
    let answer = json!({ key.clone(): {"action": "accept", "content": {"confirm": true}} });

    // Bob (and Alice through another client) can neither read, answer nor
    // cancel it: each is answered exactly as for an id never given out.
    let never = never_given(&id);
    for stranger in [&bob, &alice_elsewhere] {
        for (method, params) in [
            ("tasks/get", json!({"taskId": id})),
            ("tasks/update", json!({"taskId": id, "inputResponses": answer})),
            ("tasks/cancel", json!({"taskId": id})),
        ] {
            let theirs = users.task_request(stranger, method, params.clone(), &id).await;
            let mut unknown_params = params;
            unknown_params["taskId"] = json!(never);
            let unknown = users.task_request(stranger, method, unknown_params, &never).await;
            assert_eq!(theirs["error"]["code"], -32602, "{method}: {theirs}");
            assert_eq!(without(&theirs, &id), without(&unknown, &never), "{method}");
            assert!(!theirs.to_string().contains("alice-private"), "{theirs}");
        }
    }
    // Her task still waits for her own answer, which completes it.
    assert_eq!(users.get_task(&alice, &id).await["result"]["status"], "input_required");
    let updated =
        users.task_request(&alice, "tasks/update", json!({"taskId": id, "inputResponses": answer}), &id).await;
    assert!(updated.get("error").is_none(), "{updated}");
    let done = loop {
        let polled = users.get_task(&alice, &id).await;
        if polled["result"]["status"] == "completed" {
            break polled;
        }
        assert!(Instant::now() < deadline, "never completed: {polled}");
        tokio::time::sleep(Duration::from_millis(100)).await;
    };
    assert!(done.to_string().contains("confirm_delete alice-private.txt"), "{done}");

    // Alice's 2025-11-25 session is, to Bob's token, a session that does not
    // exist: the same 404 as a made-up id, and it cannot end it.
    let session = users.open(&alice, json!({})).await;
    let list = json!({"jsonrpc": "2.0", "id": 5, "method": "tools/list"});
    let made_up = users.in_session(&bob, "0f0e0d0c-0b0a-4909-8807-060504030201", "POST", list.clone()).await;
    assert_eq!(made_up.0, 404, "{made_up:?}");
    assert_eq!(users.in_session(&bob, &session, "POST", list.clone()).await, made_up);
    assert_eq!(users.in_session(&alice_elsewhere, &session, "POST", list.clone()).await, made_up);
    let made_up_end = users.in_session(&bob, "0f0e0d0c-0b0a-4909-8807-060504030201", "DELETE", Value::Null).await;
    assert_eq!(users.in_session(&bob, &session, "DELETE", Value::Null).await, made_up_end);
    let (status, listed) = users.in_session(&alice, &session, "POST", list).await;
    assert!(status == 200 && listed.contains("confirm_delete"), "{status}: {listed}");

    // Her 2025-11-25 task is her session's and hers: Bob's own session can
    // neither see, list nor cancel it.
    let call = json!({"name": "slow_compute", "arguments": {"seconds": 30}, "task": {"ttl": 120000}});
    let started = users.ask(&alice, &session, 6, "tools/call", call).await;
    let task = started["result"]["task"]["taskId"].as_str().unwrap_or_else(|| panic!("{started}")).to_owned();
    let bobs = users.open(&bob, json!({})).await;
    for method in ["tasks/get", "tasks/cancel", "tasks/result"] {
        let theirs = users.ask(&bob, &bobs, 7, method, json!({"taskId": task})).await;
        let unknown = users.ask(&bob, &bobs, 8, method, json!({"taskId": never_given(&task)})).await;
        assert_eq!(theirs["error"]["code"], -32602, "{method}: {theirs}");
        assert_eq!(without(&theirs, &task), without(&unknown, &never_given(&task)), "{method}");
    }
    assert_eq!(users.ask(&bob, &bobs, 9, "tasks/list", json!({})).await["result"]["tasks"], json!([]));
    let hers = users.ask(&alice, &session, 10, "tasks/list", json!({})).await;
    assert_eq!(hers["result"]["tasks"][0]["taskId"], task.as_str(), "{hers}");
    assert_eq!(hers["result"]["tasks"][0]["status"], "working", "Bob's cancel did nothing: {hers}");
    // A cursor is opaque and sealed: one made up (as the old ones were written) is refused.
    let forged = format!("2000-01-01T00:00:00.000Z {task}");
    let refused = users.ask(&alice, &session, 11, "tasks/list", json!({"cursor": forged})).await;
    assert_eq!(refused["error"]["code"], -32602, "{refused}");
    let cancelled = users.ask(&alice, &session, 12, "tasks/cancel", json!({"taskId": task})).await;
    assert_eq!(cancelled["result"]["status"], "cancelled", "{cancelled}");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_plugins_scope_covers_its_resources_templates_prompts_and_completions() {
    let plugins = plugin_dir(&["content_kinds", "echo"]);
    let (_authorization, issuer) = authorization_server();
    let (_server, url) = serve_with(plugins.path(), &issuer, "", &kinds("timeout = \"10s\"", ""));
    let users = Users::new(&url, &issuer);
    let (basic, full) = (users.token("u", "mcp").await, users.token("u", "mcp tools:kinds").await);
    let list = |token: String, method: &'static str| {
        let users = &users;
        async move { users.stateless(&token, method, json!({}), None, json!({})).await.2 }
    };
    // Without the plugin's scope, nothing of it is listed…
    for (method, key) in [
        ("resources/list", "resources"),
        ("resources/templates/list", "resourceTemplates"),
        ("prompts/list", "prompts"),
    ] {
        let listed = list(basic.clone(), method).await;
        assert_eq!(listed["result"][key], json!([]), "{method}: {listed}");
        let listed = list(full.clone(), method).await;
        assert!(!listed["result"][key].as_array().unwrap().is_empty(), "{method}: {listed}");
    }
    let tools = list(basic.clone(), "tools/list").await;
    let names: Vec<&str> =
        tools["result"]["tools"].as_array().unwrap().iter().map(|t| t["name"].as_str().unwrap()).collect();
    assert_eq!(names, ["echo"], "{tools}");
    // …and asking for it runs nothing: 403 naming the scope, for step-up.
    let requests = [
        ("resources/read", json!({"uri": "test://static-text"}), Some("test://static-text")),
        ("resources/read", json!({"uri": "test://template/7/data"}), Some("test://template/7/data")),
        ("prompts/get", json!({"name": "test_simple_prompt"}), Some("test_simple_prompt")),
        (
            "completion/complete",
            json!({"ref": {"type": "ref/prompt", "name": "test_prompt_with_arguments"},
                   "argument": {"name": "arg1", "value": "pa"}}),
            None,
        ),
        (
            "completion/complete",
            json!({"ref": {"type": "ref/resource", "uri": "test://template/{id}/data"},
                   "argument": {"name": "id", "value": "1"}}),
            None,
        ),
    ];
    for (method, params, name) in requests {
        let (status, challenge, answer) = users.stateless(&basic, method, params.clone(), name, json!({})).await;
        assert_eq!(status, 403, "{method} {params}: {answer}");
        assert!(
            challenge.contains("error=\"insufficient_scope\"") && challenge.contains("tools:kinds"),
            "{method}: {challenge}"
        );
        let (status, _, answer) = users.stateless(&full, method, params.clone(), name, json!({})).await;
        assert_eq!(status, 200, "{method} {params}: {answer}");
        assert!(answer.get("result").is_some(), "{method} {params}: {answer}");
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn no_client_holds_the_servers_call_slots_with_calls_or_unanswered_questions() {
    let plugins = plugin_dir(&["content_kinds", "echo"]);
    let (_authorization, issuer) = authorization_server();
    let top = "max_concurrent_calls = 2\n[serve]\nmax_calls_per_requestor = 1\nmax_sessions_per_requestor = 2\n";
    let (_server, url) = serve_with(plugins.path(), &issuer, top, &kinds("timeout = \"3s\"", ""));
    let users = Users::new(&url, &issuer);
    let (alice, bob) = (users.token("alice", "mcp tools:kinds").await, users.token("bob", "mcp tools:kinds").await);
    let echo = |token: String, text: &'static str| {
        let users = &users;
        async move {
            let started = Instant::now();
            let call = json!({"name": "echo", "arguments": {"text": text}});
            let (status, _, answer) = users.stateless(&token, "tools/call", call, Some("echo"), json!({})).await;
            assert_eq!(status, 200, "{answer}");
            assert!(answer.to_string().contains(text), "{answer}");
            started.elapsed()
        }
    };
    // Alice's call asks her a question she never answers (her session
    // declared elicitation, and reads nothing it is sent).
    let session = users.open(&alice, json!({"elicitation": {"form": {}}})).await;
    let started = Instant::now();
    let unanswered = {
        let users = Users::new(&url, &issuer);
        let (alice, session) = (alice.clone(), session.clone());
        tokio::spawn(async move {
            let call = json!({"name": "confirm_delete", "arguments": {"filename": "a.txt"}});
            users.ask(&alice, &session, 3, "tools/call", call).await
        })
    };
    tokio::time::sleep(Duration::from_millis(700)).await;
    // Bob is not held up; Alice's second call waits for her first (one call at a time each).
    let (bobs, alices) = tokio::join!(echo(bob.clone(), "bob's"), echo(alice.clone(), "alice's"));
    assert!(bobs < Duration::from_secs(2), "bob waited {bobs:?}");
    assert!(alices > Duration::from_millis(1500), "alice's second call ran beside her first ({alices:?})");
    // The question holds its call (and its slot) no longer than the call's 3 s timeout.
    let answer = unanswered.await.unwrap();
    assert!(started.elapsed() < Duration::from_secs(10), "{:?}", started.elapsed());
    assert_eq!(answer["result"]["isError"], true, "{answer}");
    assert!(answer.to_string().contains("no answer came within the call's timeout (3s)"), "{answer}");

    // Nor can she take every session: her third is refused, Bob still opens one.
    users.open(&alice, json!({})).await;
    let initialize = json!({"jsonrpc": "2.0", "id": 0, "method": "initialize", "params": {
        "protocolVersion": "2025-11-25", "capabilities": {}, "clientInfo": {"name": "raw", "version": "1"}}});
    let third = users
        .http
        .post(&url)
        .bearer_auth(&alice)
        .header("content-type", "application/json")
        .header("accept", "application/json, text/event-stream")
        .body(initialize.to_string())
        .send()
        .await
        .unwrap();
    assert_eq!(third.status(), 503);
    assert!(third.text().await.unwrap().contains("max_sessions_per_requestor = 2"));
    users.open(&bob, json!({})).await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_task_ends_at_its_ttl_unlooked_for_and_one_requestor_cannot_fill_the_store() {
    let plugins = plugin_dir(&["content_kinds", "echo"]);
    let (_authorization, issuer) = authorization_server();
    let tasks = "ttl = \"2s\"\nmax_tasks_per_requestor = 1\ntools = { slow_compute = \"optional\" }";
    let top = "max_concurrent_calls = 1\n";
    let (_server, url) = serve_with(plugins.path(), &issuer, top, &kinds("timeout = \"60s\"", tasks));
    let users = Users::new(&url, &issuer);
    let (alice, bob) = (users.token("alice", "mcp tools:kinds").await, users.token("bob", "mcp tools:kinds").await);
    let started = Instant::now();
    let call = json!({"name": "slow_compute", "arguments": {"seconds": 30}});
    let created = users.task_request(&alice, "tools/call", call, "slow_compute").await;
    assert_eq!(created["result"]["resultType"], "task", "{created}");
    let id = created["result"]["taskId"].as_str().unwrap().to_owned();
    // Alice holds one task, her limit: her next call runs in its request.
    let second = {
        let users = Users::new(&url, &issuer);
        let alice = alice.clone();
        tokio::spawn(async move {
            let call = json!({"name": "slow_compute", "arguments": {"seconds": 0.2}});
            users.task_request(&alice, "tools/call", call, "slow_compute").await
        })
    };
    // Her task holds the server's one call slot until its TTL ends it,
    // though nobody looks it up: then Bob's call runs.
    let call = json!({"name": "echo", "arguments": {"text": "bob"}});
    let (status, _, answer) = users.stateless(&bob, "tools/call", call, Some("echo"), json!({})).await;
    assert_eq!(status, 200, "{answer}");
    assert_eq!(answer["result"]["content"][0]["text"], "bob", "{answer}");
    let waited = started.elapsed();
    assert!(waited >= Duration::from_millis(1500) && waited < Duration::from_secs(10), "{waited:?}");
    let second = second.await.unwrap();
    assert_eq!(second["result"]["resultType"], "complete", "not a task: {second}");
    assert!(second.to_string().contains("computed"), "{second}");
    // Its owner is told it expired; anyone else, that there is no such task.
    let expired = users.task_request(&alice, "tasks/get", json!({"taskId": id}), &id).await;
    assert_eq!(expired["error"]["data"]["reason"], "expired", "{expired}");
    let unknown = users.task_request(&bob, "tasks/get", json!({"taskId": id}), &id).await;
    assert_eq!(unknown["error"]["data"]["reason"], "unknown", "{unknown}");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn keys_are_fetched_once_per_30_seconds_outside_what_valid_tokens_wait_on() {
    let plugins = plugin_dir(&["echo"]);
    let (_authorization, issuer) = authorization_server();
    let (_server, url) = serve_with(plugins.path(), &issuer, "", "");
    let users = Users::new(&url, &issuer);
    let list = |token: String| {
        let users = &users;
        async move {
            let started = Instant::now();
            let (status, challenge, _) = users.stateless(&token, "tools/list", json!({}), None, json!({})).await;
            (status, challenge, started.elapsed())
        }
    };
    let fetched = || async { users.issuer_get("/stats").await["jwks"].as_u64().unwrap() };
    let good = users.token("alice", "mcp").await;
    // The issuer fails: the first fetch fails, and the tokens after it are
    // refused without another fetch (a back-off of 30 s).
    users.control(json!({"jwks_status": 503})).await;
    let failed = Instant::now();
    for _ in 0..3 {
        let (status, challenge, _) = list(good.clone()).await;
        assert_eq!(status, 401, "{challenge}");
    }
    assert_eq!(fetched().await, 1, "a failed fetch was retried at once");
    users.control(json!({"jwks_status": 200})).await;
    tokio::time::sleep((failed + Duration::from_secs(31)).saturating_duration_since(Instant::now())).await;
    let first = Instant::now();
    assert_eq!(list(good.clone()).await.0, 200);
    assert_eq!(fetched().await, 2);
    // Tokens naming keys the issuer does not have: refused, and no fetch
    // within 30 s of the last.
    for kid in ["rotated-1", "rotated-2", "rotated-3", "rotated-4", "rotated-5"] {
        let token = users.mint(users.claims("mallory", "mcp"), Some(kid)).await;
        let (status, challenge, _) = list(token).await;
        assert!(status == 401 && challenge.contains(&format!("has no key `{kid}`")), "{status}: {challenge}");
    }
    assert_eq!(fetched().await, 2, "an unknown key within 30 s fetched the keys again");
    // Once 30 s have passed, unknown keys cause one slow fetch, which a
    // token with a known key does not wait for.
    users.control(json!({"jwks_delay": 4.0})).await;
    tokio::time::sleep((first + Duration::from_secs(31)).saturating_duration_since(Instant::now())).await;
    let unknown = |kid: &'static str| {
        let users = Users::new(&url, &issuer);
        tokio::spawn(async move {
            let token = users.mint(users.claims("mallory", "mcp"), Some(kid)).await;
            let started = Instant::now();
            let (status, _, _) = users.stateless(&token, "tools/list", json!({}), None, json!({})).await;
            (status, started.elapsed())
        })
    };
    let (one, two) = (unknown("new-1"), unknown("new-2"));
    tokio::time::sleep(Duration::from_millis(500)).await;
    let (status, _, took) = list(good.clone()).await;
    assert_eq!(status, 200);
    assert!(took < Duration::from_secs(2), "a known key waited {took:?} for the fetch");
    for waiting in [one, two] {
        let (status, took) = waiting.await.unwrap();
        assert_eq!(status, 401);
        assert!(took >= Duration::from_secs(3), "refused before the fetch ended ({took:?})");
    }
    assert_eq!(fetched().await, 3, "one fetch for both unknown keys");
    users.control(json!({"jwks_delay": 0.0})).await;
    let token = users.mint(users.claims("mallory", "mcp"), Some("new-3")).await;
    assert_eq!(list(token).await.0, 401);
    assert_eq!(fetched().await, 3);
}

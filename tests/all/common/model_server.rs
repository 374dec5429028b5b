//! A scripted model server on 127.0.0.1 for tests: it answers each request
//! with the next scripted response (OpenAI or Anthropic, streamed or not),
//! over plain HTTP or TLS, and records what it was sent; and an HTTP proxy
//! (absolute-form requests and CONNECT tunnels) that records what went
//! through it. Both stop when dropped.
#![allow(dead_code)]

use serde_json::{Value, json};
use std::io::{BufRead, BufReader, Read, Write};
use std::net::{Shutdown, TcpListener, TcpStream};
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, Mutex};
use std::thread::JoinHandle;

/// One scripted response.
#[derive(Clone, Debug)]
pub struct Response {
    pub status: u16,
    pub headers: Vec<(String, String)>,
    pub body: Body,
}

#[derive(Clone, Debug)]
pub enum Body {
    Json(Value),
    /// Server-sent events, each the `data:` of one event (and an optional `event:` name).
    Events(Vec<(Option<String>, String)>),
    Raw(String),
    /// Never answers (until the server is dropped or 30 seconds pass).
    Hang,
    /// `body`, after a wait (a model that thinks before it answers).
    Slow(std::time::Duration, Box<Body>),
    /// No answer at all: the connection closes once the request is read.
    Close,
    /// A JSON answer whose head announces `length` bytes and whose
    /// connection closes after `text`: a whole response that breaks off.
    Truncated {
        text: String,
        length: usize,
    },
}

/// A request the server received.
#[derive(Clone, Debug)]
pub struct Request {
    pub path: String,
    pub headers: Vec<(String, String)>,
    pub body: Value,
}

impl Request {
    pub fn header(&self, name: &str) -> Option<&str> {
        self.headers.iter().find(|(key, _)| key.eq_ignore_ascii_case(name)).map(|(_, value)| value.as_str())
    }
}

pub struct ModelServer {
    pub url: String,
    requests: Arc<Mutex<Vec<Request>>>,
    stop: Arc<AtomicBool>,
    thread: Option<JoinHandle<()>>,
    port: u16,
}

impl ModelServer {
    pub fn start(script: Vec<Response>) -> ModelServer {
        ModelServer::serve_with(script, None)
    }

    /// The same over TLS with `tls`; `url` is `https://127.0.0.1:PORT`.
    pub fn start_tls(script: Vec<Response>, tls: Arc<rustls::ServerConfig>) -> ModelServer {
        ModelServer::serve_with(script, Some(tls))
    }

    fn serve_with(script: Vec<Response>, tls: Option<Arc<rustls::ServerConfig>>) -> ModelServer {
        let scheme = if tls.is_some() { "https" } else { "http" };
        let listener = TcpListener::bind("127.0.0.1:0").expect("bind");
        let port = listener.local_addr().unwrap().port();
        let requests = Arc::new(Mutex::new(Vec::new()));
        let stop = Arc::new(AtomicBool::new(false));
        let script = Arc::new(Mutex::new(script.into_iter()));
        let thread = {
            let requests = requests.clone();
            let stop = stop.clone();
            std::thread::spawn(move || {
                for stream in listener.incoming() {
                    if stop.load(Ordering::SeqCst) {
                        break;
                    }
                    let Ok(stream) = stream else { continue };
                    let requests = requests.clone();
                    let script = script.clone();
                    let tls = tls.clone();
                    std::thread::spawn(move || match tls {
                        None => serve(&mut { stream }, &requests, &script),
                        Some(config) => {
                            let Ok(connection) = rustls::ServerConnection::new(config) else { return };
                            // A client that rejects the certificate ends here, with nothing recorded.
                            let mut tls = rustls::StreamOwned::new(connection, stream);
                            serve(&mut tls, &requests, &script);
                            tls.conn.send_close_notify();
                            let _ = tls.flush();
                        }
                    });
                }
            })
        };
        ModelServer { url: format!("{scheme}://127.0.0.1:{port}"), requests, stop, thread: Some(thread), port }
    }

    pub fn requests(&self) -> Vec<Request> {
        self.requests.lock().unwrap().clone()
    }
}

impl Drop for ModelServer {
    fn drop(&mut self) {
        self.stop.store(true, Ordering::SeqCst);
        let _ = TcpStream::connect(("127.0.0.1", self.port));
        if let Some(thread) = self.thread.take() {
            let _ = thread.join();
        }
    }
}

fn serve(
    stream: &mut (impl Read + Write),
    requests: &Mutex<Vec<Request>>,
    script: &Mutex<std::vec::IntoIter<Response>>,
) {
    let mut reader = BufReader::new(stream);
    let mut request_line = String::new();
    if reader.read_line(&mut request_line).unwrap_or(0) == 0 {
        return;
    }
    let path = request_line.split_whitespace().nth(1).unwrap_or_default().to_owned();
    let mut headers = Vec::new();
    let mut length = 0usize;
    loop {
        let mut line = String::new();
        if reader.read_line(&mut line).unwrap_or(0) == 0 {
            return;
        }
        let line = line.trim_end();
        if line.is_empty() {
            break;
        }
        if let Some((name, value)) = line.split_once(':') {
            if name.eq_ignore_ascii_case("content-length") {
                length = value.trim().parse().unwrap_or(0);
            }
            headers.push((name.trim().to_owned(), value.trim().to_owned()));
        }
    }
    let mut body = vec![0; length];
    let _ = reader.read_exact(&mut body);
    let body: Value = serde_json::from_slice(&body).unwrap_or(Value::Null);
    requests.lock().unwrap().push(Request { path, headers, body });
    let response = script.lock().unwrap().next().unwrap_or(Response {
        status: 500,
        headers: Vec::new(),
        body: Body::Json(json!({"error": {"message": "the test script has no more responses"}})),
    });
    let stream = reader.get_mut();
    let reason = match response.status {
        200 => "OK",
        401 => "Unauthorized",
        404 => "Not Found",
        429 => "Too Many Requests",
        _ => "Status",
    };
    let mut head = format!("HTTP/1.1 {} {reason}\r\nconnection: close\r\n", response.status);
    for (name, value) in &response.headers {
        head.push_str(&format!("{name}: {value}\r\n"));
    }
    let mut body = &response.body;
    while let Body::Slow(wait, inner) = body {
        std::thread::sleep(*wait);
        body = inner;
    }
    match body {
        Body::Slow(..) => {} // unwrapped above
        Body::Close => return,
        Body::Hang => {
            std::thread::sleep(std::time::Duration::from_secs(30));
            return;
        }
        Body::Truncated { text, length } => {
            head.push_str(&format!("content-type: application/json\r\ncontent-length: {length}\r\n\r\n"));
            let _ = stream.write_all(head.as_bytes());
            let _ = stream.write_all(text.as_bytes());
        }
        Body::Json(value) => {
            let text = value.to_string();
            head.push_str(&format!("content-type: application/json\r\ncontent-length: {}\r\n\r\n", text.len()));
            let _ = stream.write_all(head.as_bytes());
            let _ = stream.write_all(text.as_bytes());
        }
        Body::Raw(text) => {
            head.push_str(&format!("content-type: text/html\r\ncontent-length: {}\r\n\r\n", text.len()));
            let _ = stream.write_all(head.as_bytes());
            let _ = stream.write_all(text.as_bytes());
        }
        Body::Events(events) => {
            head.push_str("content-type: text/event-stream\r\ncache-control: no-cache\r\n\r\n");
            let _ = stream.write_all(head.as_bytes());
            for (name, data) in events {
                let mut event = String::new();
                if let Some(name) = name {
                    event.push_str(&format!("event: {name}\n"));
                }
                event.push_str(&format!("data: {data}\n\n"));
                let _ = stream.write_all(event.as_bytes());
                let _ = stream.flush();
            }
        }
    }
    let _ = stream.flush();
}

/// A tool call to script: id (empty: none is sent), tool name, arguments text.
pub type Call<'a> = (&'a str, &'a str, &'a str);

/// A stop reason that means: end the stream here, unfinished.
const DROP: &str = "(drop)";

pub fn hang() -> Response {
    Response { status: 200, headers: Vec::new(), body: Body::Hang }
}

pub fn status(status: u16, headers: &[(&str, &str)], body: Value) -> Response {
    Response {
        status,
        headers: headers.iter().map(|(k, v)| ((*k).to_owned(), (*v).to_owned())).collect(),
        body: Body::Json(body),
    }
}

fn ok(body: Body) -> Response {
    Response { status: 200, headers: Vec::new(), body }
}

/// Responses in one protocol, streamed or not.
#[derive(Clone, Copy, Debug)]
pub struct Script {
    pub anthropic: bool,
    pub stream: bool,
}

impl Script {
    /// `toolhost --plugins PLUGINS run PROMPT --yes` against `server` in this
    /// script's protocol (streamed or not), with the shared compile cache and
    /// test keys; more arguments may be added before it runs.
    pub fn run_command(&self, server: &ModelServer, plugins: &std::path::Path, prompt: &str) -> std::process::Command {
        let mut command = std::process::Command::new(env!("CARGO_BIN_EXE_toolhost"));
        command
            .args(["--plugins", &plugins.display().to_string(), "run", prompt, "--yes"])
            .args(["--model", self.model(), "--base-url", &self.base_url(server)])
            .env("TOOLHOST_CACHE_DIR", std::path::Path::new(env!("CARGO_TARGET_TMPDIR")).join("toolhost-cache"))
            .env("OPENAI_API_KEY", "test-key")
            .env("ANTHROPIC_API_KEY", "test-key")
            .env_remove("TOOLHOST_MODEL")
            .env_remove("TOOLHOST_CONFIG");
        if !self.stream {
            command.arg("--no-stream");
        }
        command
    }

    pub fn model(&self) -> &'static str {
        if self.anthropic { "anthropic/test-model" } else { "openai/test-model" }
    }

    /// The base URL to pass with `--base-url`.
    pub fn base_url(&self, server: &ModelServer) -> String {
        if self.anthropic { server.url.clone() } else { format!("{}/v1", server.url) }
    }

    pub fn text(&self, text: &str) -> Response {
        self.reply(text, &[], None)
    }

    pub fn calls(&self, calls: &[Call<'_>]) -> Response {
        self.reply("", calls, None)
    }

    pub fn truncated(&self, text: &str) -> Response {
        self.reply(text, &[], Some(self.length()))
    }

    /// A reply of `text` that stops with the provider's `reason`, as given
    /// (`finish_reason` or `stop_reason`).
    pub fn stopped(&self, text: &str, reason: &str) -> Response {
        self.reply(text, &[], Some(reason))
    }

    /// Calls cut off by the token limit (the last one's arguments unfinished).
    pub fn calls_cut_off(&self, calls: &[Call<'_>]) -> Response {
        self.reply("", calls, Some(self.length()))
    }

    /// A streamed reply that breaks off after `text`: the server closes the
    /// connection without finishing the response (streamed scripts only).
    pub fn dropped_after(&self, text: &str) -> Response {
        assert!(self.stream, "only a stream can break off");
        self.reply(text, &[], Some(DROP))
    }

    /// The `index`/`id`/`function` entries of streamed OpenAI `tool_calls`
    /// deltas, one chunk each, exactly as given, then `finish_reason`.
    pub fn openai_deltas(deltas: &[Value], finish: &str) -> Response {
        let chunk = |delta: Value, finish: Value| {
            (None, json!({"id": "c", "choices": [{"index": 0, "delta": delta, "finish_reason": finish}]}).to_string())
        };
        let mut events = vec![chunk(json!({"role": "assistant", "content": null}), Value::Null)];
        for delta in deltas {
            events.push(chunk(json!({"tool_calls": [delta]}), Value::Null));
        }
        events.push(chunk(json!({}), json!(finish)));
        events.push((None, "[DONE]".to_owned()));
        ok(Body::Events(events))
    }

    fn length(&self) -> &'static str {
        if self.anthropic { "max_tokens" } else { "length" }
    }

    fn reply(&self, text: &str, calls: &[Call<'_>], stop: Option<&str>) -> Response {
        match (self.anthropic, self.stream) {
            (false, false) => ok(Body::Json(openai_json(text, calls, stop))),
            (false, true) => ok(Body::Events(openai_events(text, calls, stop))),
            (true, false) => ok(Body::Json(anthropic_json(text, calls, stop))),
            (true, true) => ok(Body::Events(anthropic_events(text, calls, stop))),
        }
    }

    /// The tool calls of the last assistant message in `request`, as the host
    /// sent them back: (call id, tool, arguments).
    pub fn sent_calls(&self, request: &Request) -> Vec<(String, String, Value)> {
        let messages = request.body["messages"].as_array().cloned().unwrap_or_default();
        let Some(assistant) = messages.iter().rev().find(|message| message["role"] == "assistant") else {
            return Vec::new();
        };
        if self.anthropic {
            assistant["content"]
                .as_array()
                .into_iter()
                .flatten()
                .filter(|block| block["type"] == "tool_use")
                .map(|block| {
                    (
                        block["id"].as_str().unwrap_or_default().to_owned(),
                        block["name"].as_str().unwrap_or_default().to_owned(),
                        block["input"].clone(),
                    )
                })
                .collect()
        } else {
            assistant["tool_calls"]
                .as_array()
                .into_iter()
                .flatten()
                .map(|call| {
                    let arguments = call["function"]["arguments"].as_str().unwrap_or_default();
                    (
                        call["id"].as_str().unwrap_or_default().to_owned(),
                        call["function"]["name"].as_str().unwrap_or_default().to_owned(),
                        serde_json::from_str(arguments).unwrap_or_else(|_| json!({"not JSON": arguments})),
                    )
                })
                .collect()
        }
    }

    /// The tool results the host sent in `request`: (call id, content, is_error).
    pub fn results(&self, request: &Request) -> Vec<(String, String, bool)> {
        let messages = request.body["messages"].as_array().cloned().unwrap_or_default();
        let Some(last) = messages.last() else { return Vec::new() };
        if self.anthropic {
            last["content"]
                .as_array()
                .into_iter()
                .flatten()
                .filter(|block| block["type"] == "tool_result")
                .map(|block| {
                    (
                        block["tool_use_id"].as_str().unwrap_or_default().to_owned(),
                        // A string, or content blocks (text and images): their text, joined.
                        match block["content"].as_array() {
                            Some(blocks) => {
                                blocks.iter().filter_map(|part| part["text"].as_str()).collect::<Vec<_>>().join("\n")
                            }
                            None => block["content"].as_str().unwrap_or_default().to_owned(),
                        },
                        block["is_error"].as_bool().unwrap_or(false),
                    )
                })
                .collect()
        } else {
            let mut results: Vec<(String, String, bool)> = messages
                .iter()
                .rev()
                .take_while(|message| message["role"] == "tool")
                .map(|message| {
                    let content = message["content"].as_str().unwrap_or_default();
                    (
                        message["tool_call_id"].as_str().unwrap_or_default().to_owned(),
                        content.strip_prefix("Error: ").unwrap_or(content).to_owned(),
                        content.starts_with("Error: "),
                    )
                })
                .collect();
            results.reverse();
            results
        }
    }
}

fn openai_json(text: &str, calls: &[Call<'_>], stop: Option<&str>) -> Value {
    let tool_calls: Vec<Value> = calls
        .iter()
        .map(|(id, name, args)| {
            let mut call = json!({"type": "function", "function": {"name": name, "arguments": args}});
            if !id.is_empty() {
                call["id"] = json!(id);
            }
            call
        })
        .collect();
    let mut message = json!({"role": "assistant", "content": if text.is_empty() { Value::Null } else { json!(text) }});
    if !tool_calls.is_empty() {
        message["tool_calls"] = json!(tool_calls);
    }
    let finish = stop.unwrap_or(if calls.is_empty() { "stop" } else { "tool_calls" });
    json!({
        "id": "chatcmpl-1", "object": "chat.completion", "model": "test-model",
        "choices": [{"index": 0, "message": message, "finish_reason": finish}],
        "usage": {"prompt_tokens": 11, "completion_tokens": 7, "total_tokens": 18}
    })
}

fn openai_events(text: &str, calls: &[Call<'_>], stop: Option<&str>) -> Vec<(Option<String>, String)> {
    let chunk = |delta: Value, finish: Value| {
        (None, json!({"id": "c", "object": "chat.completion.chunk", "choices": [{"index": 0, "delta": delta, "finish_reason": finish}]}).to_string())
    };
    let mut events = vec![chunk(json!({"role": "assistant", "content": ""}), Value::Null)];
    for piece in split(text) {
        events.push(chunk(json!({"content": piece}), Value::Null));
    }
    for (index, (id, name, args)) in calls.iter().enumerate() {
        let mut start = json!({"index": index, "type": "function", "function": {"name": name, "arguments": ""}});
        if !id.is_empty() {
            start["id"] = json!(id);
        }
        events.push(chunk(json!({"tool_calls": [start]}), Value::Null));
        for piece in split(args) {
            events
                .push(chunk(json!({"tool_calls": [{"index": index, "function": {"arguments": piece}}]}), Value::Null));
        }
    }
    if stop == Some(DROP) {
        return events;
    }
    let finish = stop.unwrap_or(if calls.is_empty() { "stop" } else { "tool_calls" });
    events.push(chunk(json!({}), json!(finish)));
    events.push((
        None,
        json!({"id": "c", "choices": [], "usage": {"prompt_tokens": 11, "completion_tokens": 7}}).to_string(),
    ));
    events.push((None, "[DONE]".to_owned()));
    events
}

fn anthropic_json(text: &str, calls: &[Call<'_>], stop: Option<&str>) -> Value {
    let mut content = Vec::new();
    if !text.is_empty() {
        content.push(json!({"type": "text", "text": text}));
    }
    for (id, name, args) in calls {
        // A call cut off by the token limit has arguments that do not parse;
        // Anthropic then sends what it has as a string in the input.
        let input: Value = match args.trim() {
            "" => json!({}),
            args => serde_json::from_str(args).unwrap_or_else(|_| json!(args)),
        };
        content.push(json!({"type": "tool_use", "id": id, "name": name, "input": input}));
    }
    let stop = stop.unwrap_or(if calls.is_empty() { "end_turn" } else { "tool_use" });
    json!({
        "id": "msg_1", "type": "message", "role": "assistant", "model": "test-model",
        "content": content, "stop_reason": stop, "stop_sequence": null,
        "usage": {"input_tokens": 11, "output_tokens": 7}
    })
}

fn anthropic_events(text: &str, calls: &[Call<'_>], stop: Option<&str>) -> Vec<(Option<String>, String)> {
    let event = |name: &str, data: Value| (Some(name.to_owned()), data.to_string());
    let mut events = vec![event(
        "message_start",
        json!({"type": "message_start", "message": {"id": "msg_1", "type": "message", "role": "assistant", "content": [], "model": "test-model", "stop_reason": null, "usage": {"input_tokens": 11, "output_tokens": 1}}}),
    )];
    let mut index = 0;
    if !text.is_empty() {
        events.push(event(
            "content_block_start",
            json!({"type": "content_block_start", "index": index, "content_block": {"type": "text", "text": ""}}),
        ));
        events.push(event("ping", json!({"type": "ping"})));
        for piece in split(text) {
            events.push(event(
                "content_block_delta",
                json!({"type": "content_block_delta", "index": index, "delta": {"type": "text_delta", "text": piece}}),
            ));
        }
        events.push(event("content_block_stop", json!({"type": "content_block_stop", "index": index})));
        index += 1;
    }
    for (id, name, args) in calls {
        events.push(event("content_block_start", json!({"type": "content_block_start", "index": index, "content_block": {"type": "tool_use", "id": id, "name": name, "input": {}}})));
        for piece in split(args) {
            events.push(event("content_block_delta", json!({"type": "content_block_delta", "index": index, "delta": {"type": "input_json_delta", "partial_json": piece}})));
        }
        events.push(event("content_block_stop", json!({"type": "content_block_stop", "index": index})));
        index += 1;
    }
    if stop == Some(DROP) {
        return events;
    }
    let stop = stop.unwrap_or(if calls.is_empty() { "end_turn" } else { "tool_use" });
    events.push(event("message_delta", json!({"type": "message_delta", "delta": {"stop_reason": stop, "stop_sequence": null}, "usage": {"output_tokens": 7}})));
    events.push(event("message_stop", json!({"type": "message_stop"})));
    events
}

/// Splits text into a few pieces (on character boundaries) to exercise reassembly.
fn split(text: &str) -> Vec<String> {
    let chars: Vec<char> = text.chars().collect();
    chars.chunks(7).map(|piece| piece.iter().collect()).collect()
}

/// An HTTP proxy on 127.0.0.1: forwards absolute-form requests
/// (`POST http://HOST:PORT/path`) and tunnels `CONNECT HOST:PORT`, and
/// records each request line. It stops when dropped.
pub struct Proxy {
    pub url: String,
    seen: Arc<Mutex<Vec<String>>>,
    stop: Arc<AtomicBool>,
    thread: Option<JoinHandle<()>>,
    port: u16,
}

impl Proxy {
    pub fn start() -> Proxy {
        let listener = TcpListener::bind("127.0.0.1:0").expect("bind");
        let port = listener.local_addr().unwrap().port();
        let seen = Arc::new(Mutex::new(Vec::new()));
        let stop = Arc::new(AtomicBool::new(false));
        let thread = {
            let seen = seen.clone();
            let stop = stop.clone();
            std::thread::spawn(move || {
                for client in listener.incoming() {
                    if stop.load(Ordering::SeqCst) {
                        break;
                    }
                    let Ok(client) = client else { continue };
                    let seen = seen.clone();
                    std::thread::spawn(move || proxy(client, &seen));
                }
            })
        };
        Proxy { url: format!("http://127.0.0.1:{port}"), seen, stop, thread: Some(thread), port }
    }

    /// The request lines that went through, e.g. `CONNECT 127.0.0.1:4431 HTTP/1.1`.
    pub fn seen(&self) -> Vec<String> {
        self.seen.lock().unwrap().clone()
    }
}

impl Drop for Proxy {
    fn drop(&mut self) {
        self.stop.store(true, Ordering::SeqCst);
        let _ = TcpStream::connect(("127.0.0.1", self.port));
        if let Some(thread) = self.thread.take() {
            let _ = thread.join();
        }
    }
}

fn proxy(client: TcpStream, seen: &Mutex<Vec<String>>) {
    let mut reader = BufReader::new(client.try_clone().unwrap());
    let mut request_line = String::new();
    if reader.read_line(&mut request_line).unwrap_or(0) == 0 {
        return;
    }
    let mut head = Vec::new();
    loop {
        let mut line = String::new();
        if reader.read_line(&mut line).unwrap_or(0) == 0 {
            return;
        }
        let end = line.trim_end().is_empty();
        head.push(line);
        if end {
            break;
        }
    }
    seen.lock().unwrap().push(request_line.trim_end().to_owned());
    let mut parts = request_line.split_whitespace();
    let (method, target) = (parts.next().unwrap_or_default(), parts.next().unwrap_or_default());
    let (address, first) = if method == "CONNECT" {
        (target.to_owned(), None)
    } else {
        let rest = target.strip_prefix("http://").unwrap_or(target);
        let (address, path) = rest.split_at(rest.find('/').unwrap_or(rest.len()));
        (
            address.to_owned(),
            Some(format!("{method} {} HTTP/1.1\r\n{}", if path.is_empty() { "/" } else { path }, head.concat())),
        )
    };
    let Ok(mut upstream) = TcpStream::connect(&address) else {
        let _ = (&client).write_all(b"HTTP/1.1 502 Bad Gateway\r\ncontent-length: 0\r\n\r\n");
        return;
    };
    match first {
        None => {
            let _ = (&client).write_all(b"HTTP/1.1 200 Connection established\r\n\r\n");
        }
        Some(first) => {
            let _ = upstream.write_all(first.as_bytes());
        }
    }
    // What the reader already buffered goes first, then both directions are piped.
    let _ = upstream.write_all(reader.buffer());
    let mut to_upstream = upstream.try_clone().unwrap();
    let mut from_client = client.try_clone().unwrap();
    let forward = std::thread::spawn(move || {
        let _ = std::io::copy(&mut from_client, &mut to_upstream);
        let _ = to_upstream.shutdown(Shutdown::Write);
    });
    let _ = std::io::copy(&mut upstream, &mut &client);
    let _ = client.shutdown(Shutdown::Both);
    let _ = forward.join();
}

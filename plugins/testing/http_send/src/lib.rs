//! Test plugin `http_send`: sends one request through the raw `wasi:http`
//! bindings with the method, URL, headers and body asked, the body written
//! in the chunks given (each its own write and flush), and returns
//! `STATUS BODY`, or the step that failed with the host's error code.
//!
//! In the URL, header values and chunks, `${NAME}` is the value of the
//! environment variable `NAME` (a secret the operator granted),
//! `${NAME:url}` that value percent-encoded (every byte but letters and
//! digits), and `${NAME:basic}` the base64 of `user:VALUE`, as HTTP Basic
//! auth sends it. The tests in `tests/all/egress.rs` call it.

use schemars::JsonSchema;
use serde::Deserialize;
use toolhost_sdk::{Tool, ToolError, register_tools};
use wasip2::http::outgoing_handler;
use wasip2::http::types::{ErrorCode, Fields, IncomingResponse, Method, OutgoingBody, OutgoingRequest, Scheme};
use wasip2::io::streams::StreamError;

/// The most response bytes read.
const MAX_RESPONSE: usize = 64 << 10;

#[derive(Deserialize, JsonSchema)]
struct Args {
    /// `GET`, `POST`, … (any token). Default `GET`.
    #[serde(default)]
    method: Option<String>,
    /// `http://host:port/path?query`.
    url: String,
    /// `[name, value]` pairs.
    #[serde(default)]
    headers: Vec<(String, String)>,
    /// The body, in the chunks to write.
    #[serde(default)]
    body: Vec<String>,
}

register_tools![Tool::new(
    "http_send",
    "Sends one HTTP request with the method, headers and body chunks asked, and returns the answer.",
    send
)];

fn send(args: Args) -> Result<String, ToolError> {
    let url = fill(&args.url);
    let (scheme, rest) = match url.split_once("://") {
        Some(("http", rest)) => (Scheme::Http, rest),
        Some(("https", rest)) => (Scheme::Https, rest),
        _ => return Err(ToolError::invalid_arguments("`url` must start with http:// or https://")),
    };
    let (authority, path) = match rest.find('/') {
        Some(at) => rest.split_at(at),
        None => (rest, "/"),
    };
    let fields = Fields::new();
    for (name, value) in &args.headers {
        fields
            .append(name, fill(value).as_bytes())
            .map_err(|err| ToolError::invalid_arguments(format!("the header `{name}` was refused: {err:?}")))?;
    }
    let request = OutgoingRequest::new(fields);
    let method = match args.method.as_deref().unwrap_or("GET") {
        "GET" => Method::Get,
        "HEAD" => Method::Head,
        "POST" => Method::Post,
        "PUT" => Method::Put,
        "DELETE" => Method::Delete,
        "PATCH" => Method::Patch,
        "OPTIONS" => Method::Options,
        other => Method::Other(other.to_owned()),
    };
    let failed = |why: String| ToolError::failed(why);
    request.set_method(&method).map_err(|()| failed("the method was refused".into()))?;
    request.set_scheme(Some(&scheme)).map_err(|()| failed("the scheme was refused".into()))?;
    request.set_authority(Some(authority)).map_err(|()| failed("the authority was refused".into()))?;
    request.set_path_with_query(Some(path)).map_err(|()| failed("the path was refused".into()))?;
    let body = request.body().map_err(|()| failed("the body was already taken".into()))?;
    let pending = outgoing_handler::handle(request, None).map_err(|code| failed(refused(code)))?;
    {
        let stream = body.write().map_err(|()| failed("the body stream was already taken".into()))?;
        for chunk in &args.body {
            if let Err(err) = stream.blocking_write_and_flush(fill(chunk).as_bytes()) {
                // The host stopped the body: the response says why.
                let _ = said(err);
                break;
            }
        }
    }
    let _ = OutgoingBody::finish(body, None);
    let response = loop {
        match pending.get() {
            None => pending.subscribe().block(),
            Some(Ok(Ok(response))) => break response,
            Some(Ok(Err(code))) => return Err(failed(refused(code))),
            Some(Err(())) => return Err(failed("the response was already taken".into())),
        }
    };
    read(response).map_err(failed)
}

/// `text` with `${NAME}`, `${NAME:url}` and `${NAME:basic}` filled in.
fn fill(text: &str) -> String {
    let mut out = String::new();
    let mut rest = text;
    while let Some(start) = rest.find("${") {
        out.push_str(&rest[..start]);
        let Some(end) = rest[start..].find('}') else { break };
        let inner = &rest[start + 2..start + end];
        let (name, form) = inner.split_once(':').unwrap_or((inner, ""));
        let value = std::env::var(name).unwrap_or_default();
        match form {
            "url" => out.extend(value.bytes().map(|byte| {
                if byte.is_ascii_alphanumeric() { (byte as char).to_string() } else { format!("%{byte:02X}") }
            })),
            "basic" => out.push_str(&base64(format!("user:{value}").as_bytes())),
            _ => out.push_str(&value),
        }
        rest = &rest[start + end + 1..];
    }
    out.push_str(rest);
    out
}

fn base64(bytes: &[u8]) -> String {
    const ALPHABET: &[u8] = b"ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789+/";
    let mut out = String::new();
    for group in bytes.chunks(3) {
        let n = group.iter().enumerate().fold(0u32, |n, (i, byte)| n | (u32::from(*byte) << (16 - 8 * i)));
        for i in 0..4 {
            if i <= group.len() {
                out.push(ALPHABET[((n >> (18 - 6 * i)) & 63) as usize] as char);
            } else {
                out.push('=');
            }
        }
    }
    out
}

fn refused(code: ErrorCode) -> String {
    format!("the request failed: {code:?}")
}

fn read(response: IncomingResponse) -> Result<String, String> {
    let status = response.status();
    let body = response.consume().map_err(|()| "the response body was already taken")?;
    let stream = body.stream().map_err(|()| "the response body stream was already taken")?;
    let mut bytes = Vec::new();
    loop {
        match stream.blocking_read(16 << 10) {
            Ok(chunk) => bytes.extend_from_slice(&chunk),
            Err(StreamError::Closed) => break,
            Err(err) => return Err(format!("reading the response failed: {}", said(err))),
        }
        if bytes.len() > MAX_RESPONSE {
            return Err(format!("the response is over {MAX_RESPONSE} bytes"));
        }
    }
    drop(stream);
    drop(body);
    Ok(format!("{status} {}", String::from_utf8_lossy(&bytes)))
}

fn said(err: StreamError) -> String {
    match err {
        StreamError::Closed => "the stream was closed".to_owned(),
        StreamError::LastOperationFailed(err) => err.to_debug_string(),
    }
}

//! Test plugin `http_orders`: sends `count` requests to `url` through the raw
//! `wasi:http` bindings, each calling `outgoing-handler.handle()` first and
//! only then dealing with the request body, in the `order` asked:
//! - `write_then_finish`: writes the body (`bytes` of `x`, possibly none:
//!   a write-and-flush of nothing still checks the stream), then finishes it;
//! - `finish_only`: finishes the body without ever opening its stream;
//! - `streaming`: writes the body in 1KiB chunks, looking at the response
//!   between them (and reading it if it came), then finishes it;
//! - `answer_first`: writes the first chunk, waits for the response and reads
//!   it whole, then writes the rest and finishes (against a server that
//!   answers before it has read the body).
//!
//! A response read before the body is finished is kept (its resources not
//! dropped) until then: dropping it ends the exchange, the rest of the body
//! with it.
//!
//! Every step that fails says which it was; a refused request fails with the
//! error code the host gave. The tests in `tests/all/network.rs` call it.

use schemars::JsonSchema;
use serde::Deserialize;
use toolhost_sdk::{Tool, ToolError, register_tools};
use wasip2::http::outgoing_handler;
use wasip2::http::types::{
    ErrorCode, FutureIncomingResponse, IncomingBody, IncomingResponse, Method, OutgoingBody, OutgoingRequest, Scheme,
};
use wasip2::io::streams::{InputStream, OutputStream, StreamError};

/// The most requests one call makes.
const MAX_COUNT: u32 = 100;
/// The size of one written chunk.
const CHUNK: usize = 1024;
/// The most response bytes read.
const MAX_RESPONSE: usize = 64 << 10;

#[derive(Deserialize, JsonSchema, Clone, Copy, PartialEq)]
#[serde(rename_all = "snake_case")]
enum Order {
    WriteThenFinish,
    FinishOnly,
    Streaming,
    AnswerFirst,
}

#[derive(Deserialize, JsonSchema)]
struct Args {
    /// `http://host:port/path`.
    url: String,
    /// What the guest does with the body after `handle()`.
    order: Order,
    /// Body bytes to send (POST when more than zero, else GET). Default 0.
    #[serde(default)]
    bytes: u32,
    /// How many requests to make, one after the other. Default 1, at most 100.
    #[serde(default)]
    count: Option<u32>,
}

register_tools![Tool::new(
    "http_orders",
    "Sends requests whose body is written after handle(), in the order asked, and returns each answer.",
    orders
)];

fn orders(args: Args) -> Result<String, ToolError> {
    let count = args.count.unwrap_or(1);
    if count == 0 || count > MAX_COUNT {
        return Err(ToolError::invalid_arguments(format!("`count` must be 1 to {MAX_COUNT}")));
    }
    if args.order == Order::FinishOnly && args.bytes > 0 {
        return Err(ToolError::invalid_arguments("`finish_only` sends no body: leave `bytes` at 0"));
    }
    let (scheme, rest) = match args.url.split_once("://") {
        Some(("http", rest)) => (Scheme::Http, rest),
        Some(("https", rest)) => (Scheme::Https, rest),
        _ => return Err(ToolError::invalid_arguments("`url` must start with http:// or https://")),
    };
    let (authority, path) = match rest.find('/') {
        Some(at) => rest.split_at(at),
        None => (rest, "/"),
    };
    let mut answers = Vec::new();
    for n in 1..=count {
        let answer = send(&args, scheme.clone(), authority, path)
            .map_err(|why| ToolError::failed(format!("request {n} of {count}: {why}")))?;
        answers.push(answer);
    }
    Ok(answers.join("\n"))
}

/// One request, `STATUS TEXT`, or the step that failed.
fn send(args: &Args, scheme: Scheme, authority: &str, path: &str) -> Result<String, String> {
    let request = OutgoingRequest::new(wasip2::http::types::Fields::new());
    let method = if args.bytes > 0 { Method::Post } else { Method::Get };
    request.set_method(&method).map_err(|()| "the method was refused")?;
    request.set_scheme(Some(&scheme)).map_err(|()| "the scheme was refused")?;
    request.set_authority(Some(authority)).map_err(|()| "the authority was refused")?;
    request.set_path_with_query(Some(path)).map_err(|()| "the path was refused")?;
    let body = request.body().map_err(|()| "the body was already taken")?;
    let pending = outgoing_handler::handle(request, None).map_err(|code| format!("handle failed: {code:?}"))?;

    let data = vec![b'x'; args.bytes as usize];
    let mut answer = None;
    match args.order {
        Order::FinishOnly => {}
        Order::WriteThenFinish => {
            let stream = body.write().map_err(|()| "the body stream was already taken")?;
            stream.blocking_write_and_flush(&data).map_err(|err| format!("writing the body failed: {}", said(err)))?;
        }
        Order::Streaming | Order::AnswerFirst => {
            let stream = body.write().map_err(|()| "the body stream was already taken")?;
            let mut chunks = data.chunks(CHUNK);
            if let Some(first) = chunks.next() {
                write(&stream, first)?;
            }
            if args.order == Order::AnswerFirst {
                answer = Some(read(wait(&pending)?)?);
            }
            for chunk in chunks {
                if answer.is_none()
                    && let Some(response) = ready(&pending)?
                {
                    answer = Some(read(response)?);
                }
                write(&stream, chunk)?;
            }
        }
    }
    OutgoingBody::finish(body, None).map_err(|code| format!("finishing the body failed: {code:?}"))?;
    match answer {
        Some(answer) => Ok(answer.text),
        None => Ok(read(wait(&pending)?)?.text),
    }
}

/// A response read whole, its resources still held (the stream first: it
/// is the body's child and must go before it).
struct Read {
    text: String,
    _stream: InputStream,
    _body: IncomingBody,
}

fn write(stream: &OutputStream, chunk: &[u8]) -> Result<(), String> {
    stream.blocking_write_and_flush(chunk).map_err(|err| format!("writing the body failed: {}", said(err)))
}

/// The response if it came, without waiting.
fn ready(pending: &FutureIncomingResponse) -> Result<Option<IncomingResponse>, String> {
    match pending.get() {
        None => Ok(None),
        Some(Ok(Ok(response))) => Ok(Some(response)),
        Some(Ok(Err(code))) => Err(refused(code)),
        Some(Err(())) => Err("the response was already taken".to_owned()),
    }
}

fn wait(pending: &FutureIncomingResponse) -> Result<IncomingResponse, String> {
    loop {
        if let Some(response) = ready(pending)? {
            return Ok(response);
        }
        pending.subscribe().block();
    }
}

fn refused(code: ErrorCode) -> String {
    format!("the request failed: {code:?}")
}

fn read(response: IncomingResponse) -> Result<Read, String> {
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
    let text = format!("{status} {}", String::from_utf8_lossy(&bytes));
    Ok(Read { text, _stream: stream, _body: body })
}

fn said(err: StreamError) -> String {
    match err {
        StreamError::Closed => "the stream was closed".to_owned(),
        StreamError::LastOperationFailed(err) => err.to_debug_string(),
    }
}

//! Test plugin `reads_slowly`: GETs `http://AUTHORITY/PATH` over raw
//! `wasi:http` and reads the whole body, however long the server takes, then
//! reports the status, the bytes it got and exactly how the request or the
//! read failed: the `wasi:http` error code when the host gives one, and the
//! error's text. A response cut by the host's `http_timeout` must fail as a
//! timeout (`tests/all/network.rs`).

use schemars::JsonSchema;
use serde::{Deserialize, Serialize};
use toolhost_sdk::{Json, Tool, ToolError, register_tools};
use wasip2::http::outgoing_handler;
use wasip2::http::types::{Fields, OutgoingRequest, Scheme, http_error_code};
use wasip2::io::streams::StreamError;

#[derive(Deserialize, JsonSchema)]
struct Args {
    /// `HOST:PORT` of the server.
    authority: String,
    /// The path to GET, e.g. `/stall`.
    path: String,
}

#[derive(Serialize, Default)]
struct Read {
    status: Option<u16>,
    received: u64,
    /// The error code of a request that got no response.
    request_error: Option<String>,
    /// The error code of a failed body read, when the host gives one.
    read_error_code: Option<String>,
    /// The text of a failed body read.
    read_error: Option<String>,
}

register_tools![Tool::new("reads_slowly", "GETs a URL and reads it to the end, reporting errors.", read)];

fn read(args: Args) -> Result<Json<Read>, ToolError> {
    let mut found = Read::default();
    let request = OutgoingRequest::new(Fields::new());
    let invalid = |what: &str| ToolError::invalid_arguments(format!("{what} is not valid"));
    request.set_scheme(Some(&Scheme::Http)).map_err(|()| invalid("the scheme"))?;
    request.set_authority(Some(&args.authority)).map_err(|()| invalid("the authority"))?;
    request.set_path_with_query(Some(&args.path)).map_err(|()| invalid("the path"))?;
    let pending = match outgoing_handler::handle(request, None) {
        Ok(pending) => pending,
        Err(code) => {
            found.request_error = Some(format!("{code:?}"));
            return Ok(Json(found));
        }
    };
    let response = loop {
        match pending.get() {
            Some(Ok(Ok(response))) => break response,
            Some(Ok(Err(code))) => {
                found.request_error = Some(format!("{code:?}"));
                return Ok(Json(found));
            }
            Some(Err(())) => return Err(ToolError::failed("the response was already taken")),
            None => pending.subscribe().block(),
        }
    };
    found.status = Some(response.status());
    let body = response.consume().map_err(|()| ToolError::failed("no body"))?;
    let stream = body.stream().map_err(|()| ToolError::failed("no body stream"))?;
    loop {
        match stream.blocking_read(64 << 10) {
            Ok(chunk) => found.received += chunk.len() as u64,
            Err(StreamError::Closed) => break,
            Err(StreamError::LastOperationFailed(err)) => {
                found.read_error_code = http_error_code(&err).map(|code| format!("{code:?}"));
                found.read_error = Some(err.to_debug_string());
                break;
            }
        }
    }
    Ok(Json(found))
}

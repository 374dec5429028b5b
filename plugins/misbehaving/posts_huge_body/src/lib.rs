//! Test plugin `posts_huge_body`: POSTs `bytes` bytes to `url`, streamed
//! without a declared length or, with `declare_length`, announced in
//! `content-length` first; it returns what the server answered or the error
//! its request got. The host must stop the body at the call's
//! `http_request_body` limit (the tests in `tests/all/network.rs`).

use schemars::JsonSchema;
use serde::Deserialize;
use toolhost_sdk::{Tool, ToolError, http, register_tools};

#[derive(Deserialize, JsonSchema)]
struct Args {
    /// Where to POST.
    url: String,
    /// How many bytes of body to send.
    bytes: u32,
    /// Send a `content-length` header (otherwise the body is chunked).
    #[serde(default)]
    declare_length: bool,
}

register_tools![Tool::new("posts_huge_body", "POSTs a body of the given size.", post)];

fn post(args: Args) -> Result<String, ToolError> {
    let mut request = http::Request::new("POST", &args.url);
    if args.declare_length {
        request = request.header("content-length", &args.bytes.to_string());
    }
    let response = request.body(vec![b'x'; args.bytes as usize]).send(4096)?;
    Ok(format!("{} {}", response.status, response.text()))
}

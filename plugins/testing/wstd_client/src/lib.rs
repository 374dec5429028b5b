//! Test plugin `wstd_client`: makes `count` requests in a row to `url` with
//! `wstd`'s `Client` (a `GET` with its empty body, or a `POST` of
//! `post_bytes` bytes), the way an outside author's component makes them.
//! `wstd` calls `outgoing-handler.handle()` first and then writes and
//! finishes the request body while it waits for the response, so the host
//! must keep the body's stream open until the guest has finished it; a
//! request the host refuses must fail with `wstd`'s report of the refusal
//! (`HttpRequestDenied`), not a closed stream. The tests in
//! `tests/all/network.rs` call it through the real CLI.

use schemars::JsonSchema;
use serde::Deserialize;
use toolhost_sdk::{Tool, ToolError, register_tools};
use wstd::http::{Body, Client, Method, Request};

/// The most requests one call makes.
const MAX_COUNT: u32 = 100;

#[derive(Deserialize, JsonSchema)]
struct Args {
    /// The URL to request.
    url: String,
    /// How many requests to make, one after the other. Default 1, at most 100.
    #[serde(default)]
    count: Option<u32>,
    /// POST this many bytes (of `x`) instead of a GET.
    #[serde(default)]
    post_bytes: Option<u32>,
}

register_tools![Tool::new(
    "wstd_client",
    "Makes requests in a row with wstd's HTTP client and returns each answer's status and text.",
    requests
)];

fn requests(args: Args) -> Result<String, ToolError> {
    let count = args.count.unwrap_or(1);
    if count == 0 || count > MAX_COUNT {
        return Err(ToolError::invalid_arguments(format!("`count` must be 1 to {MAX_COUNT}")));
    }
    wstd::runtime::block_on(async {
        let client = Client::new();
        let mut answers = Vec::new();
        for n in 1..=count {
            let answer = request(&client, &args)
                .await
                .map_err(|err| ToolError::failed(format!("request {n} of {count} failed: {err:#}")))?;
            answers.push(answer);
        }
        Ok(answers.join("\n"))
    })
}

/// One request: `STATUS TEXT`.
async fn request(client: &Client, args: &Args) -> Result<String, wstd::http::Error> {
    let request = Request::builder().uri(args.url.as_str());
    let request = match args.post_bytes {
        Some(bytes) => request.method(Method::POST).body(Body::from(vec![b'x'; bytes as usize]))?,
        None => request.method(Method::GET).body(Body::empty())?,
    };
    let response = client.send(request).await?;
    let status = response.status().as_u16();
    let mut body = response.into_body();
    let text = body.str_contents().await?.to_owned();
    Ok(format!("{status} {text}"))
}

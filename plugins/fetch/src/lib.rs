//! `fetch`: GETs a URL and returns its status, headers and text, bounded.
//!
//! It reaches only the hosts its operator granted (`[plugins.fetch] http =
//! [...]` in `toolhost.toml`); any other host is refused by toolhost before a
//! request leaves, and so is a redirect to one: `fetch` follows redirects
//! itself, each one a new request checked like the first.
//!
//! Try it against a local server:
//! ```sh
//! python3 -m http.server 8000 &
//! printf '[plugins.fetch]\nhttp = ["http://127.0.0.1:8000"]\n' > toolhost.toml
//! toolhost call fetch '{"url": "http://127.0.0.1:8000/"}'
//! ```

use schemars::JsonSchema;
use serde::{Deserialize, Serialize};
use toolhost_sdk::{Json, Tool, ToolError, http, register_tools};

/// Body bytes returned unless `max_bytes` says otherwise.
const DEFAULT_MAX_BYTES: u32 = 64 << 10;
/// The most `max_bytes` may ask for.
const MAX_BYTES: u32 = 1 << 20;
/// Headers returned, and bytes kept of each value.
const MAX_HEADERS: usize = 64;
const MAX_HEADER_VALUE: usize = 1 << 10;

#[derive(Deserialize, JsonSchema)]
struct Fetch {
    /// The URL to GET: `http://` or `https://`.
    url: String,
    /// Most bytes of the body to return; the rest is not read. Default 65536, at most 1048576.
    #[serde(default)]
    max_bytes: Option<u32>,
    /// Redirects to follow. Default 5, at most 10.
    #[serde(default)]
    max_redirects: Option<u8>,
}

#[derive(Serialize)]
struct Fetched {
    /// The URL that answered, after redirects.
    url: String,
    status: u16,
    /// `[name, value]` pairs, bounded.
    headers: Vec<(String, String)>,
    /// The body as text (invalid UTF-8 replaced), at most `max_bytes`.
    text: String,
    /// True when the body was longer than `max_bytes`.
    truncated: bool,
    /// The URLs that redirected, in order.
    redirected_from: Vec<String>,
}

register_tools![Tool::new(
    "fetch",
    "GETs a web page or API URL and returns its status, headers and text (bounded). Only hosts \
     the operator granted can be reached.",
    fetch
)];

fn fetch(args: Fetch) -> Result<Json<Fetched>, ToolError> {
    let max_bytes = args.max_bytes.unwrap_or(DEFAULT_MAX_BYTES);
    if max_bytes > MAX_BYTES {
        return Err(ToolError::invalid_arguments(format!("`max_bytes` is at most {MAX_BYTES}")));
    }
    let max_redirects = args.max_redirects.unwrap_or(5);
    if max_redirects > 10 {
        return Err(ToolError::invalid_arguments("`max_redirects` is at most 10"));
    }
    let mut url = args.url;
    let mut redirected_from = Vec::new();
    loop {
        let response = http::get(&url).header("accept", "*/*").send(max_bytes as usize).map_err(|err| match err {
            http::Error::InvalidRequest(_) => ToolError::invalid_arguments(err.to_string()),
            _ => ToolError::failed(err.to_string()),
        })?;
        if let Some(next) = response.redirect() {
            if redirected_from.len() >= max_redirects as usize {
                return Err(ToolError::failed(format!("more than {max_redirects} redirects, the last to {next}")));
            }
            toolhost_sdk::log::debug_with("following a redirect", &[("from", &url), ("to", &next)]);
            redirected_from.push(std::mem::replace(&mut url, next));
            continue;
        }
        let headers = response
            .headers
            .iter()
            .take(MAX_HEADERS)
            .map(|(name, value)| {
                let mut value = value.clone();
                if value.len() > MAX_HEADER_VALUE {
                    let cut = value.floor_char_boundary(MAX_HEADER_VALUE);
                    value.truncate(cut);
                }
                (name.clone(), value)
            })
            .collect();
        return Ok(Json(Fetched {
            url,
            status: response.status,
            headers,
            text: response.text(),
            truncated: response.truncated,
            redirected_from,
        }));
    }
}

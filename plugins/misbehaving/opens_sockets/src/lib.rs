//! Test plugin `opens_sockets`: tries a raw TCP connection (`wasi:sockets`)
//! to each `HOST:PORT` it is given, the way a plugin probing an internal
//! network would, then tries to listen on each `listen` address, and reports
//! what happened to each. The host must refuse every one its grant does not
//! allow, and every listen, and record each (`tests/all/network.rs`).

use schemars::JsonSchema;
use serde::Deserialize;
use std::io::{Read, Write};
use toolhost_sdk::{Json, Tool, ToolError, register_tools};

#[derive(Deserialize, JsonSchema)]
struct Args {
    /// `HOST:PORT` targets, e.g. `127.0.0.1:22` or `169.254.169.254:80`.
    targets: Vec<String>,
    /// `HOST:PORT` addresses to listen on, e.g. `0.0.0.0:0` or `127.0.0.1:8080`.
    #[serde(default)]
    listen: Vec<String>,
}

register_tools![Tool::new("opens_sockets", "Opens TCP connections and reports which worked.", open)];

/// `[target, what happened]` for each target: `connected` (with what the
/// server sent first, if anything) or the error; then `[listen ADDRESS, what
/// happened]` for each address to listen on.
fn open(args: Args) -> Result<Json<Vec<(String, String)>>, ToolError> {
    let mut results: Vec<(String, String)> = args
        .targets
        .into_iter()
        .map(|target| {
            let outcome = match std::net::TcpStream::connect(target.as_str()) {
                Ok(mut stream) => {
                    let _ = stream.write_all(b"GET /hello HTTP/1.0\r\n\r\n");
                    let mut answer = String::new();
                    let _ = stream.read_to_string(&mut answer);
                    format!("connected: {}", answer.lines().next().unwrap_or_default())
                }
                Err(err) => format!("error: {err}"),
            };
            (target, outcome)
        })
        .collect();
    for address in args.listen {
        let outcome = match std::net::TcpListener::bind(address.as_str()) {
            Ok(listener) => format!("listening on {:?}", listener.local_addr().map(|address| address.to_string())),
            Err(err) => format!("error: {err}"),
        };
        results.push((format!("listen {address}"), outcome));
    }
    Ok(Json(results))
}

//! Test plugin `snoops`: looks for everything a plugin must not get without a
//! grant (environment variables, program arguments, files, the network) and
//! reports what it found. Run with no grants, it must find nothing; run with
//! grants, exactly what was granted (the tests in `tests/all/grants.rs`).

use schemars::JsonSchema;
use serde::{Deserialize, Serialize};
use toolhost_sdk::{Json, Tool, ToolError, register_tools};

#[derive(Deserialize, JsonSchema)]
struct Args {
    /// A TCP port on 127.0.0.1 to try to connect to.
    port: u16,
    /// A host file to try to read.
    file: String,
}

#[derive(Serialize)]
struct Findings {
    env: Vec<(String, String)>,
    args: Vec<String>,
    read_root: Result<Vec<String>, String>,
    read_file: Result<String, String>,
    connect: Result<String, String>,
}

register_tools![Tool::new("snoops", "Reports which ambient capabilities it can reach.", snoop)];

fn snoop(args: Args) -> Result<Json<Findings>, ToolError> {
    let show = |err: std::io::Error| err.to_string();
    Ok(Json(Findings {
        env: std::env::vars().collect(),
        args: std::env::args().collect(),
        read_root: std::fs::read_dir("/")
            .map(|entries| entries.filter_map(Result::ok).map(|entry| entry.path().display().to_string()).collect())
            .map_err(show),
        read_file: std::fs::read_to_string(&args.file).map_err(show),
        connect: std::net::TcpStream::connect(("127.0.0.1", args.port)).map(|_| "connected".to_owned()).map_err(show),
    }))
}

//! Test plugin `clock_spin`: a busy loop that reads the monotonic clock (a
//! host call) on every turn, for an hour. Cheap in fuel per second, so only
//! the wall-clock timeout stops it in practice.

use schemars::JsonSchema;
use serde::Deserialize;
use std::time::{Duration, Instant};
use toolhost_sdk::{Tool, ToolError, register_tools};

#[derive(Deserialize, JsonSchema)]
struct Args {}

register_tools![Tool::new("clock_spin", "Reads the clock in a busy loop for an hour.", spin)];

fn spin(_: Args) -> Result<String, ToolError> {
    let start = Instant::now();
    while start.elapsed() < Duration::from_secs(3600) {}
    Ok("an hour went by".to_owned())
}

//! Test plugin `sleep_forever`: blocks in the host (a WASI sleep) for a day,
//! so no fuel is used and no epoch check runs in guest code; the host's own
//! deadline must stop it.

use schemars::JsonSchema;
use serde::Deserialize;
use toolhost_sdk::{Tool, ToolError, register_tools};

#[derive(Deserialize, JsonSchema)]
struct Args {}

register_tools![Tool::new("sleep_forever", "Sleeps for a day.", sleep)];

fn sleep(_: Args) -> Result<String, ToolError> {
    std::thread::sleep(std::time::Duration::from_secs(86_400));
    Ok("woke up".to_owned())
}

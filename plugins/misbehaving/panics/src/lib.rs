//! Test plugin `panics`: panics with a recognizable message, which the host
//! must report as a trap carrying that message.

use schemars::JsonSchema;
use serde::Deserialize;
use toolhost_sdk::{Tool, ToolError, register_tools};

#[derive(Deserialize, JsonSchema)]
struct Args {}

register_tools![Tool::new("panics", "Panics.", panic_now)];

fn panic_now(_: Args) -> Result<String, ToolError> {
    panic!("the panics plugin gave up on purpose");
}

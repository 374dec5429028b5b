//! Test plugin `huge_output`: returns `megabytes` MiB of text (8 by default),
//! well past the default output limit.

use schemars::JsonSchema;
use serde::Deserialize;
use toolhost_sdk::{Tool, ToolError, register_tools};

#[derive(Deserialize, JsonSchema)]
struct Args {
    /// How many MiB of text to return.
    #[serde(default = "default_megabytes")]
    megabytes: u32,
}

fn default_megabytes() -> u32 {
    8
}

register_tools![Tool::new("huge_output", "Returns a very large text.", huge)];

fn huge(args: Args) -> Result<String, ToolError> {
    Ok("x".repeat(args.megabytes as usize * (1 << 20)))
}

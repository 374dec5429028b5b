//! Test plugin `huge_output`: returns `megabytes` MiB of text (8 by default),
//! well past the default output limit, or exactly `bytes` bytes when given.

use schemars::JsonSchema;
use serde::Deserialize;
use toolhost_sdk::{Tool, ToolError, register_tools};

#[derive(Deserialize, JsonSchema)]
struct Args {
    /// How many MiB of text to return.
    #[serde(default = "default_megabytes")]
    megabytes: u32,
    /// How many bytes of text to return (wins over `megabytes`).
    #[serde(default)]
    bytes: Option<u64>,
}

fn default_megabytes() -> u32 {
    8
}

register_tools![Tool::new("huge_output", "Returns a very large text.", huge)];

fn huge(args: Args) -> Result<String, ToolError> {
    let bytes = args.bytes.unwrap_or(u64::from(args.megabytes) << 20);
    Ok("x".repeat(bytes as usize))
}

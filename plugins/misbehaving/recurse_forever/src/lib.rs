//! Test plugin `recurse_forever`: unbounded recursion that overflows the wasm
//! stack.

use schemars::JsonSchema;
use serde::Deserialize;
use toolhost_sdk::{Tool, ToolError, register_tools};

#[derive(Deserialize, JsonSchema)]
struct Args {}

register_tools![Tool::new("recurse_forever", "Recurses without end.", recurse_tool)];

fn recurse_tool(_: Args) -> Result<String, ToolError> {
    Ok(recurse(std::hint::black_box(1)).to_string())
}

#[inline(never)]
#[allow(unconditional_recursion)] // the point of this plugin
fn recurse(depth: u64) -> u64 {
    let next = std::hint::black_box(depth + 1);
    recurse(next).wrapping_add(depth)
}

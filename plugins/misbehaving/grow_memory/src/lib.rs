//! Test plugin `grow_memory`: keeps allocating (and touching) megabyte blocks
//! until a memory grow is refused, at which point Rust's allocator aborts.

use schemars::JsonSchema;
use serde::Deserialize;
use toolhost_sdk::{Tool, ToolError, register_tools};

#[derive(Deserialize, JsonSchema)]
struct Args {}

register_tools![Tool::new("grow_memory", "Allocates memory without end.", grow)];

fn grow(_: Args) -> Result<String, ToolError> {
    let mut blocks: Vec<Vec<u8>> = Vec::new();
    loop {
        blocks.push(vec![1u8; 1 << 20]);
        std::hint::black_box(&blocks);
    }
}

//! Test plugin `spin_forever`: a loop with no host calls and no end. Only fuel
//! or the epoch-based timeout can stop it.

use schemars::JsonSchema;
use serde::Deserialize;
use toolhost_sdk::{Tool, ToolError, register_tools};

#[derive(Deserialize, JsonSchema)]
struct Args {}

register_tools![Tool::new("spin_forever", "Loops forever.", spin)];

fn spin(_: Args) -> Result<String, ToolError> {
    let mut counter: u64 = 0;
    loop {
        counter = std::hint::black_box(counter.wrapping_add(1));
    }
}

//! Test plugin `keeps_state`: bumps a global counter on each call and returns
//! it. Every call runs in a fresh instance, so the answer must always be 1.

use schemars::JsonSchema;
use serde::Deserialize;
use std::sync::atomic::{AtomicU64, Ordering};
use toolhost_sdk::{Tool, ToolError, register_tools};

static CALLS: AtomicU64 = AtomicU64::new(0);

#[derive(Deserialize, JsonSchema)]
struct Args {}

register_tools![Tool::new("keeps_state", "Returns how many times it has been called in this instance.", count)];

fn count(_: Args) -> Result<String, ToolError> {
    Ok((CALLS.fetch_add(1, Ordering::SeqCst) + 1).to_string())
}

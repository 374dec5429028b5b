//! `legacy-count`: a toolhost plugin. Build it with `./build.sh`, which writes
//! `legacy-count.wasm`; copy that file into toolhost's plugins folder.
//!
//! Each tool is a function from a typed arguments struct to a result. The SDK
//! derives the tool's input schema from the struct (field doc comments become
//! descriptions), checks and parses the arguments before the function runs,
//! and turns `ToolError`s into the contract's `call-error`.

use schemars::JsonSchema;
use serde::{Deserialize, Serialize};
use toolhost_sdk::{Json, Tool, ToolError, register_tools};

register_tools![Tool::new(
    "legacy-count",
    "Counts the words and characters of a text. Returns JSON {\"words\", \"characters\"}.",
    count,
)];

/// Arguments of the `legacy-count` tool.
#[derive(Deserialize, JsonSchema)]
struct CountArgs {
    /// The text to count.
    text: String,
}

/// What the tool returns, as JSON.
#[derive(Serialize)]
struct Counts {
    words: usize,
    characters: usize,
}

fn count(args: CountArgs) -> Result<Json<Counts>, ToolError> {
    if args.text.is_empty() {
        // The model can fix its arguments and call again.
        return Err(ToolError::invalid_arguments("`text` is empty: give the text to count"));
    }
    // For a tool that could not do its job with good arguments, return
    // `ToolError::failed("why")`; any `?`-propagated error becomes one too.
    let counts = Counts { words: args.text.split_whitespace().count(), characters: args.text.chars().count() };
    toolhost_sdk::log::debug_with("counted", &[("words", &counts.words.to_string())]);
    Ok(Json(counts))
}

//! `__NAME__`: a toolhost plugin. Build it with `./build.sh`, which writes
//! `__NAME__.wasm`; copy that file into toolhost's plugins folder.
//!
//! Each tool is a function from a typed arguments struct to a result. The SDK
//! derives the tool's input schema from the struct (field doc comments become
//! descriptions), checks and parses the arguments before the function runs,
//! and turns `ToolError`s into the contract's `call-error`. A function made
//! with `Tool::with_call` also gets the running `Call`: it reports progress,
//! asks the user (`call.elicit`) or the model (`call.sample`), each only where
//! the operator granted it.

use schemars::JsonSchema;
use serde::{Deserialize, Serialize};
use toolhost_sdk::{Call, Output, Tool, ToolError, register_tools};

register_tools![
    Tool::with_call(
        "__NAME__",
        "Counts the words and characters of a text. Returns JSON {\"words\", \"characters\"}.",
        count,
    )
    .title("Count words")
    .read_only()
    .idempotent()
    .output::<Counts>()
];

/// Arguments of the `__NAME__` tool.
#[derive(Deserialize, JsonSchema)]
struct CountArgs {
    /// The text to count.
    text: String,
}

/// What the tool returns, as JSON (its declared output schema).
#[derive(Serialize, JsonSchema)]
struct Counts {
    words: usize,
    characters: usize,
}

fn count(args: CountArgs, call: &Call) -> Result<Output, ToolError> {
    if args.text.is_empty() {
        // The model can fix its arguments and call again.
        return Err(ToolError::invalid_arguments("`text` is empty: give the text to count"));
    }
    // For a tool that could not do its job with good arguments, return
    // `ToolError::failed("why")`; any `?`-propagated error becomes one too.
    let counts = Counts { words: args.text.split_whitespace().count(), characters: args.text.chars().count() };
    call.progress(1.0, 1.0, "counted");
    toolhost_sdk::log::debug_with("counted", &[("words", &counts.words.to_string())]);
    // A result is a list of blocks: text for people, and the JSON (at most
    // one block) that clients get as structured content.
    let summary = format!("{} words, {} characters", counts.words, counts.characters);
    Ok(Output::text(summary).and(Output::json(&counts)))
}

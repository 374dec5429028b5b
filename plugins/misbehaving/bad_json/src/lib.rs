//! Test plugin `bad_json`: returns the `json` output variant holding text that
//! is not JSON (`text`, by default an unterminated object). The host must
//! turn it into a typed failure, never pass it on labelled as JSON.

use schemars::JsonSchema;
use serde::Deserialize;
use toolhost_sdk::{Output, Tool, ToolError, register_tools};

#[derive(Deserialize, JsonSchema)]
struct Args {
    /// The text to return as "JSON".
    #[serde(default = "default_text")]
    text: String,
}

fn default_text() -> String {
    r#"{"answer": 42"#.to_owned()
}

register_tools![Tool::new("bad_json", "Returns JSON output that is not JSON.", bad)];

fn bad(args: Args) -> Result<Output, ToolError> {
    Ok(Output::json_text(args.text))
}

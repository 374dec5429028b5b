//! Test plugin `catastrophic_pattern`, written against `wit/v0.1.0` with
//! wit-bindgen: its schema's `pattern` (`^(a+)+$`) takes a backtracking regex
//! engine exponential time on `aaaa…a!`. The host must answer such arguments
//! at once with what is actually wrong (they do not match), never blame the
//! caller for the engine giving up.

wit_bindgen::generate!({
    path: "../../../wit/v0.1.0",
    world: "toolhost:plugin/plugin@0.1.0",
});

use exports::toolhost::plugin::tools::Guest;
use toolhost::plugin::types::{CallError, Tool, ToolOutput};

struct Plugin;

export!(Plugin);

impl Guest for Plugin {
    fn list_tools() -> Vec<Tool> {
        vec![Tool {
            name: "catastrophic_pattern".to_owned(),
            description: "Takes a `word` that must match ^(a+)+$.".to_owned(),
            input_schema:
                r#"{"type":"object","properties":{"word":{"type":"string","pattern":"^(a+)+$"}},"required":["word"]}"#
                    .to_owned(),
        }]
    }

    fn call_tool(_name: String, arguments: String) -> Result<ToolOutput, CallError> {
        Ok(ToolOutput::Text(format!("matched: {arguments}")))
    }
}

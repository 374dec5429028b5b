//! Test plugin `lookaround_pattern`, written against `wit/v0.1.0` with
//! wit-bindgen: its schema's `pattern` uses a lookahead (`(?=…)`), which only
//! a backtracking engine supports; toolhost matches patterns in linear time,
//! so the plugin must be refused at load, saying why.

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
            name: "lookaround_pattern".to_owned(),
            description: "Its schema's pattern has a lookahead.".to_owned(),
            input_schema:
                r#"{"type":"object","properties":{"password":{"type":"string","pattern":"^(?=.*[0-9]).{8,}$"}}}"#
                    .to_owned(),
        }]
    }

    fn call_tool(_name: String, _arguments: String) -> Result<ToolOutput, CallError> {
        Ok(ToolOutput::Text("never called".to_owned()))
    }
}

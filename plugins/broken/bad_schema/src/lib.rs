//! Test plugin `bad_schema`, written against `wit/v0.1.0` with wit-bindgen and no
//! SDK, so that it can break the contract in ways the SDK would not allow.

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
            name: "bad_schema".to_owned(),
            description: "Declares a string schema, but models always send an object.".to_owned(),
            input_schema: r#"{"type":"string"}"#.to_owned(),
        }]
    }

    fn call_tool(_name: String, _arguments: String) -> Result<ToolOutput, CallError> {
        Ok(ToolOutput::Text("never called".to_owned()))
    }
}

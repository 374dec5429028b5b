//! Test plugin `remote_ref`, written against `wit/v0.1.0` with wit-bindgen:
//! its input schema refers to a schema on the web with `$ref`, which toolhost
//! never fetches, so the plugin must be refused at load, saying why.

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
            name: "remote_ref".to_owned(),
            description: "Its schema refers to one on the web.".to_owned(),
            input_schema:
                r#"{"type":"object","properties":{"address":{"$ref":"https://schemas.example.com/address.json"}}}"#
                    .to_owned(),
        }]
    }

    fn call_tool(_name: String, _arguments: String) -> Result<ToolOutput, CallError> {
        Ok(ToolOutput::Text("never called".to_owned()))
    }
}

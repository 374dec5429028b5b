//! Test plugin `list_traps`, written against `wit/v0.1.0` with wit-bindgen and no
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
        panic!("list_traps refuses to list its tools");
    }

    fn call_tool(_name: String, _arguments: String) -> Result<ToolOutput, CallError> {
        Err(CallError::Failed("unreachable: this plugin never loads".to_owned()))
    }
}

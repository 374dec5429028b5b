//! Test plugin `list_sleeps`, written against `wit/v0.1.0` with wit-bindgen and
//! no SDK: `list-tools` sleeps for a day (blocked in the host, using no fuel),
//! so only the host's timeout ends it. A start must pay that timeout once per
//! file, not at every start (the host caches that listing failed).

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
        std::thread::sleep(std::time::Duration::from_secs(86_400));
        Vec::new()
    }

    fn call_tool(_name: String, _arguments: String) -> Result<ToolOutput, CallError> {
        Err(CallError::Failed("unreachable: this plugin never loads".to_owned()))
    }
}

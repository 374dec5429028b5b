//! Glue between the public SDK and the wit-bindgen output; not a stable API.

use crate::{ErrorKind, Output, Tool};

pub use wit_bindgen;

#[allow(missing_docs, unsafe_op_in_unsafe_fn)]
pub mod bindings {
    wit_bindgen::generate!({
        path: "../wit/v0.1.0",
        world: "toolhost:plugin/plugin@0.1.0",
        pub_export_macro: true,
        export_macro_name: "__export_plugin",
        runtime_path: "toolhost_sdk::__private::wit_bindgen::rt",
    });
}

pub use bindings::exports::toolhost::plugin::tools::Guest;
pub use bindings::toolhost::plugin::types::{
    CallError as WitError, Tool as WitTool, ToolOutput as WitOutput,
};

pub fn list_tools(tools: Vec<Tool>) -> Vec<WitTool> {
    tools
        .into_iter()
        .map(|tool| WitTool {
            name: tool.name.to_owned(),
            description: tool.description.to_owned(),
            input_schema: (tool.schema)(),
        })
        .collect()
}

pub fn call_tool(tools: Vec<Tool>, name: &str, arguments: &str) -> Result<WitOutput, WitError> {
    let Some(tool) = tools.into_iter().find(|tool| tool.name == name) else {
        return Err(WitError::Failed(format!("this plugin has no tool named `{name}`")));
    };
    match (tool.invoke)(arguments) {
        Ok(Output::Text(text)) => Ok(WitOutput::Text(text)),
        Ok(Output::Json(json)) => Ok(WitOutput::Json(json)),
        Err(err) => Err(match err.kind {
            ErrorKind::InvalidArguments => WitError::InvalidArguments(err.message),
            ErrorKind::Failed => WitError::Failed(err.message),
        }),
    }
}

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
pub use bindings::toolhost::plugin::types::{CallError as WitError, Tool as WitTool, ToolOutput as WitOutput};

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

#[cfg(test)]
mod tests {
    use super::*;
    use crate::{Json, ToolError};
    use schemars::JsonSchema;
    use serde::Deserialize;

    #[derive(Deserialize, JsonSchema)]
    struct Add {
        /// First term.
        a: i64,
        /// Second term.
        b: i64,
    }

    fn add(args: Add) -> Result<Json<i64>, ToolError> {
        args.a.checked_add(args.b).map(Json).ok_or_else(|| ToolError::failed("overflow"))
    }

    fn refuse(_: Add) -> Result<String, ToolError> {
        Err(ToolError::invalid_arguments("no thanks"))
    }

    fn tools() -> Vec<Tool> {
        vec![Tool::new("add", "Adds two integers.", add), Tool::new("refuse", "Refuses.", refuse)]
    }

    #[test]
    fn lists_each_tool_with_a_derived_object_schema() {
        let listed = list_tools(tools());
        assert_eq!(listed.len(), 2);
        assert_eq!(listed[0].name, "add");
        let schema: serde_json::Value = serde_json::from_str(&listed[0].input_schema).unwrap();
        assert_eq!(schema["type"], "object");
        assert_eq!(schema["properties"]["a"]["description"], "First term.");
        assert_eq!(schema["required"], serde_json::json!(["a", "b"]));
    }

    #[test]
    fn calls_deserialize_and_map_results_and_errors() {
        let call = |name: &str, args: &str| call_tool(tools(), name, args);
        assert!(matches!(call("add", r#"{"a":2,"b":3}"#), Ok(WitOutput::Json(text)) if text == "5"));
        assert!(matches!(call("add", r#"{"a":"x"}"#), Err(WitError::InvalidArguments(_))));
        assert!(
            matches!(call("add", &format!(r#"{{"a":{},"b":1}}"#, i64::MAX)), Err(WitError::Failed(m)) if m == "overflow")
        );
        assert!(matches!(call("refuse", r#"{"a":1,"b":1}"#), Err(WitError::InvalidArguments(m)) if m == "no thanks"));
        assert!(matches!(call("nope", "{}"), Err(WitError::Failed(m)) if m.contains("no tool named `nope`")));
    }
}

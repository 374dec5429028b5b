//! Test plugin `mcp_conformance`: the tool names the MCP conformance suite
//! (`@modelcontextprotocol/conformance`) calls, so that its
//! `tools-call-simple-text`, `tools-call-error` and `tools-call-with-logging`
//! scenarios run against real plugin calls (and `json_schema_2020_12_tool`,
//! for the pending `json-schema-2020-12` scenario); and `slow_echo`, which
//! answers after a pause, for the test of a call that runs across a hot reload.

use schemars::JsonSchema;
use serde::Deserialize;
use toolhost_sdk::{Tool, ToolError, register_tools};

#[derive(Deserialize, JsonSchema)]
struct NoArgs {}

#[derive(Deserialize, JsonSchema)]
struct SlowEcho {
    /// The text to return.
    text: String,
    /// How long to wait before answering, in milliseconds (at most 10000).
    ms: u64,
}

/// Arguments of `json_schema_2020_12_tool`: a schema with `$defs` and
/// `additionalProperties: false`, as the conformance suite expects.
#[derive(Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
struct Person {
    name: Option<String>,
    address: Option<Address>,
}

#[derive(Deserialize, JsonSchema)]
#[serde(rename = "address")]
struct Address {
    street: Option<String>,
    city: Option<String>,
}

register_tools![
    Tool::new("test_simple_text", "Returns a fixed text (MCP conformance).", simple_text),
    Tool::new("test_error_handling", "Always fails (MCP conformance).", error_handling),
    Tool::new("test_tool_with_logging", "Logs three records while it runs (MCP conformance).", with_logging),
    Tool::new("json_schema_2020_12_tool", "Tool with JSON Schema 2020-12 features", schema_2020_12),
    Tool::new("slow_echo", "Waits `ms` milliseconds, then returns the text.", slow_echo),
];

fn simple_text(_: NoArgs) -> Result<String, ToolError> {
    Ok("This is a simple text response for testing.".to_owned())
}

fn error_handling(_: NoArgs) -> Result<String, ToolError> {
    Err(ToolError::failed("This tool intentionally returns an error for testing"))
}

fn with_logging(_: NoArgs) -> Result<String, ToolError> {
    toolhost_sdk::log::info("Tool execution started");
    std::thread::sleep(std::time::Duration::from_millis(50));
    toolhost_sdk::log::info("Tool processing data");
    std::thread::sleep(std::time::Duration::from_millis(50));
    toolhost_sdk::log::info("Tool execution completed");
    Ok("Tool with logging executed successfully".to_owned())
}

fn schema_2020_12(person: Person) -> Result<String, ToolError> {
    let city = person.address.and_then(|address| address.street.and(address.city));
    Ok(format!("{} {}", person.name.unwrap_or_default(), city.unwrap_or_default()))
}

fn slow_echo(args: SlowEcho) -> Result<String, ToolError> {
    if args.ms > 10_000 {
        return Err(ToolError::invalid_arguments("`ms` is over 10000"));
    }
    std::thread::sleep(std::time::Duration::from_millis(args.ms));
    Ok(args.text)
}

//! The names and schemas of a plugin's tools checked: names as model APIs
//! accept them, input and output schemas compiled with no remote `$ref`
//! (an error that names one says how to inline it).

use serde_json::Value;

/// Checks a tool name against `^[a-zA-Z0-9_-]{1,64}$`, what model APIs accept.
pub fn check_name(name: &str) -> Result<(), String> {
    let valid = !name.is_empty()
        && name.len() <= 64
        && name.bytes().all(|byte| byte.is_ascii_alphanumeric() || byte == b'_' || byte == b'-');
    if valid {
        Ok(())
    } else {
        Err(format!(
            "tool name `{}` is not allowed: names must be 1 to 64 characters of a-z, A-Z, 0-9, `_` \
             and `-` (what model APIs accept)",
            name.escape_debug()
        ))
    }
}

/// Parses a tool's input schema, checks it is a JSON Schema for an object and
/// compiles its validator.
pub fn check_schema(tool: &str, text: &str) -> Result<(Value, jsonschema::Validator), String> {
    compile_schema(tool, text, "input")
}

/// [`check_schema`] for the `which` (`input` or `output`) schema of `tool`.
pub(super) fn compile_schema(tool: &str, text: &str, which: &str) -> Result<(Value, jsonschema::Validator), String> {
    let schema: Value =
        serde_json::from_str(text).map_err(|err| format!("the {which} schema of tool `{tool}` is not JSON: {err}"))?;
    let Some(object) = schema.as_object() else {
        return Err(format!("the {which} schema of tool `{tool}` must be a JSON object"));
    };
    if object.get("type").and_then(Value::as_str) != Some("object") {
        return Err(format!(
            "the {which} schema of tool `{tool}` must describe an object (`\"type\": \"object\"`), \
             since MCP carries arguments and structured results as objects"
        ));
    }
    if let Err(err) = jsonschema::meta::validate(&schema) {
        return Err(format!("the {which} schema of tool `{tool}` is not valid JSON Schema: {err}"));
    }
    let validator = jsonschema::options()
        .with_retriever(NoRemoteRefs)
        // `regex` matches in linear time: no `pattern` can make validating
        // the arguments backtrack for ever. Patterns it cannot compile
        // (lookaround, backreferences) refuse the plugin here, at load.
        .with_pattern_options(jsonschema::PatternOptions::regex())
        .build(&schema)
        .map_err(|err| describe_schema_error(tool, &err.to_string()))?;
    Ok((schema, validator))
}

/// Why a schema that is valid JSON Schema cannot be used, for the plugin's
/// author: a remote `$ref` (our [`NoRemoteRefs`] message, without the
/// resolver's wrapping) or a pattern the linear-time engine cannot compile.
fn describe_schema_error(tool: &str, err: &str) -> String {
    // jsonschema: "Resource 'URI' is not present in a registry and retrieving it failed: …"
    if let Some(rest) = err.strip_prefix("Resource '")
        && let Some((uri, _)) = rest.split_once("' is not present in a registry")
    {
        return format!("the input schema of tool `{tool}` cannot be used: {}", remote_ref(uri));
    }
    if let Some(pattern) = err.strip_suffix(" is not a \"regex\"") {
        return format!(
            "the input schema of tool `{tool}` has the pattern {pattern}, which toolhost cannot use: patterns \
             are matched in linear time, without lookaround (`(?=`, `(?!`, `(?<=`, `(?<!`) or backreferences \
             (`\\1`); rewrite it without them, or check the value in the tool instead"
        );
    }
    format!("the input schema of tool `{tool}` cannot be used: {err}")
}

/// Refuses every `$ref` that leaves the schema: toolhost never fetches or
/// reads a schema from elsewhere.
struct NoRemoteRefs;

impl jsonschema::Retrieve for NoRemoteRefs {
    fn retrieve(&self, uri: &jsonschema::Uri<String>) -> Result<Value, Box<dyn std::error::Error + Send + Sync>> {
        Err(remote_ref(uri.as_str()).into())
    }
}

fn remote_ref(uri: &str) -> String {
    format!(
        "it has a `$ref` to `{uri}`, outside the schema: remote `$ref`s are not allowed, so inline the \
         referenced schema (under `$defs`, referred to as `#/$defs/NAME`)"
    )
}

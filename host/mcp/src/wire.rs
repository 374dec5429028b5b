//! MCP's wire shapes for what the host has: a catalog entry as an MCP
//! `Tool` (annotations from hints, the output schema an object, task
//! support in `_meta`), a finished call as a `CallToolResult` (text, JSON as
//! `structuredContent`, content blocks, the one-line error, usage and
//! refusals in `_meta`), content blocks, resources, templates and prompts as
//! MCP's JSON, offer errors as JSON-RPC errors, and log levels. Pure
//! translation: nothing here runs a call or holds state, so a change of the
//! protocol's shapes is made (and tested) here alone.

// MCP logging is deprecated by SEP-2577 (2026-07-28) but still what clients
// of both generations use to receive a server's log records.
#![allow(deprecated)]

use crate::tasks::TaskSupport;
use rmcp::ErrorData;
use rmcp::model::{CallToolResult, ContentBlock, JsonObject, LoggingLevel, MetaObject, Tool, ToolAnnotations};
use serde_json::{Value, json};
use std::sync::Arc;
use toolhost_catalog::host::OfferError;
use toolhost_catalog::{Catalog, Entry};
use toolhost_runtime::content::{Content, ResourceBody};
use toolhost_runtime::outcome::{CallError, CallReport, LogRecord, ToolOutput};

/// The `_meta` key of a call's usage (fuel, peak memory, wall time, HTTP).
pub const USAGE_META: &str = "toolhost/usage";

/// The `_meta` key of a result's receipt: its signed audit line, under
/// `[audit] receipt_in_meta = true` (`toolhost audit receipt` checks it).
pub const RECEIPT_META: &str = "toolhost/receipt";

/// The `_meta` key of a result given again from `[cache]`: `{"ageMs": N}`,
/// how long ago the call that computed it was made.
pub const CACHED_META: &str = "toolhost/cached";

/// The `_meta` key of what the plugin's grants refused during a call.
pub const REFUSED_META: &str = "toolhost/refused";
/// The `_meta` key of a call refused by a rate limit: milliseconds until a
/// call is let through again.
pub const RETRY_AFTER_META: &str = "toolhost/retryAfterMs";

/// The `_meta` key of a tool that may run as an MCP task: `optional` or
/// `required` (SEP-2663 dropped the 2025-11-25 `execution.taskSupport`; the
/// server decides per call).
pub const TASK_SUPPORT_META: &str = "toolhost/taskSupport";

/// A catalog entry as an MCP tool.
pub(crate) fn describe(entry: &Entry, tasks: TaskSupport) -> Tool {
    let schema: Arc<JsonObject> = Arc::new(entry.schema().as_object().cloned().unwrap_or_default());
    let hints = entry.hints();
    let mut annotations = ToolAnnotations::new();
    if let Some(read_only) = hints.read_only {
        annotations = annotations.read_only(read_only);
    }
    if let Some(destructive) = hints.destructive {
        annotations = annotations.destructive(destructive);
    }
    if let Some(idempotent) = hints.idempotent {
        annotations = annotations.idempotent(idempotent);
    }
    if let Some(open_world) = hints.open_world {
        annotations = annotations.open_world(open_world);
    }
    let mut tool =
        Tool::new(entry.name().to_owned(), entry.description().to_owned(), schema).with_annotations(annotations);
    tool.title = entry.title().map(str::to_owned);
    if let Some(output) = entry.output_schema() {
        let served = match output.get("type").and_then(Value::as_str) {
            Some("object") => output.clone(),
            _ => json!({"type": "object", "properties": {RESULT_KEY: output}, "required": [RESULT_KEY]}),
        };
        tool.output_schema = served.as_object().cloned().map(Arc::new);
    }
    if tasks != TaskSupport::Forbidden {
        let mut meta = JsonObject::new();
        meta.insert(TASK_SUPPORT_META.to_owned(), json!(tasks.as_str()));
        tool.meta = Some(MetaObject(meta));
    }
    tool
}

/// The key a typed tool's output that is not an object is served under as
/// `structuredContent` (MCP's structured content is always an object).
const RESULT_KEY: &str = "result";

/// Whether `entry`'s output is served wrapped as `{"result": …}`.
pub(crate) fn wraps_output(entry: &Entry) -> bool {
    entry.output_schema().is_some_and(|output| output.get("type").and_then(Value::as_str) != Some("object"))
}

/// The MCP result of a finished call; `wrap`: a typed output that is not an
/// object goes as `{"result": …}`, with the value as text too.
pub(crate) fn result_of(report: CallReport, wrap: bool) -> CallToolResult {
    let mut meta = JsonObject::new();
    meta.insert(USAGE_META.to_owned(), json!(report.usage));
    let refusals: Vec<String> = report.refused.iter().map(ToString::to_string).collect();
    if !report.refused.is_empty() {
        meta.insert(REFUSED_META.to_owned(), json!(report.refused));
    }
    if let Some(wait) = report.outcome.as_ref().err().and_then(CallError::retry_after) {
        meta.insert(RETRY_AFTER_META.to_owned(), json!(wait.as_millis() as u64));
    }
    if let Some(receipt) = report.receipt {
        meta.insert(RECEIPT_META.to_owned(), receipt);
    }
    if let Some(age) = report.cached {
        meta.insert(CACHED_META.to_owned(), json!({"ageMs": u64::try_from(age.as_millis()).unwrap_or(u64::MAX)}));
    }
    result_body(report.outcome, &report.tool, &refusals, wrap).with_meta(Some(MetaObject(meta)))
}

/// A finished call's result as its caller gets it, without `_meta`, as
/// JSON: what its audit line's `result_sha256` covers. `None` when the call
/// is answered with no result (an unknown tool's or a request round's
/// JSON-RPC answer). Built by the same code as [`result_of`]'s, from a copy
/// of the outcome, so the digest is of exactly what goes out.
pub(crate) fn result_json(report: &CallReport, wrap: bool) -> Option<Value> {
    if let Err(CallError::UnknownTool { .. } | CallError::InputRequired) = &report.outcome {
        return None;
    }
    let refusals: Vec<String> = report.refused.iter().map(ToString::to_string).collect();
    serde_json::to_value(result_body(report.outcome.clone(), &report.tool, &refusals, wrap)).ok()
}

/// A [`toolhost_runtime::sandbox::ResultShape`] for calls whose result goes
/// out through [`result_of`].
pub(crate) fn result_shape(wrap: bool) -> toolhost_runtime::sandbox::ResultShape {
    Arc::new(move |report: &CallReport| result_json(report, wrap))
}

/// [`result_of`] without `_meta`.
fn result_body(outcome: Result<ToolOutput, CallError>, tool: &str, refusals: &[String], wrap: bool) -> CallToolResult {
    let mut result = match outcome {
        Ok(ToolOutput::Text(text)) => CallToolResult::success(vec![ContentBlock::text(text)]),
        Ok(ToolOutput::Json(text)) => match serde_json::from_str::<Value>(&text) {
            Ok(value) if wrap => {
                let mut result = CallToolResult::structured(json!({ RESULT_KEY: value }));
                result.content = vec![ContentBlock::text(text)];
                result
            }
            Ok(value) => CallToolResult::structured(value),
            Err(_) => CallToolResult::success(vec![ContentBlock::text(text)]),
        },
        Ok(ToolOutput::Content(blocks)) => {
            let structured = blocks.iter().find_map(|block| block.content.json_value()).map(|value| value.into_owned());
            let content = blocks.iter().map(mcp_content).collect();
            let mut result = CallToolResult::success(content);
            result.structured_content = structured;
            result
        }
        Err(err) => CallToolResult::error(vec![ContentBlock::text(one_line(tool, &err))]),
    };
    // What the host refused is also told to the model, as `run` does, so it does not retry blindly.
    for refusal in refusals {
        result.content.push(ContentBlock::text(format!("[toolhost refused: {refusal}]")));
    }
    result
}

/// A content block as MCP carries it (the JSON block as its text, beside
/// the result's `structuredContent`).
pub(crate) fn mcp_content(block: &toolhost_runtime::content::ContentBlock) -> ContentBlock {
    serde_json::from_value(wire_content(block))
        .unwrap_or_else(|err| ContentBlock::text(format!("[content this MCP library cannot carry: {err}]")))
}

/// A content block as MCP's JSON.
pub(crate) fn wire_content(block: &toolhost_runtime::content::ContentBlock) -> Value {
    use base64::Engine as _;
    let encode = |bytes: &[u8]| base64::engine::general_purpose::STANDARD.encode(bytes);
    let mut wire = match &block.content {
        Content::Text { text } => json!({ "type": "text", "text": text }),
        Content::Json { json, .. } => json!({ "type": "text", "text": json }),
        Content::Image { mime_type, data } => json!({ "type": "image", "data": encode(data), "mimeType": mime_type }),
        Content::Audio { mime_type, data } => json!({ "type": "audio", "data": encode(data), "mimeType": mime_type }),
        Content::ResourceLink { uri, name, title, description, mime_type, size } => json!({
            "type": "resource_link", "uri": uri, "name": name, "title": title, "description": description,
            "mimeType": mime_type, "size": size,
        }),
        Content::Resource { uri, mime_type, body } => {
            let mut resource = json!({ "uri": uri, "mimeType": mime_type });
            match body {
                ResourceBody::Text(text) => resource["text"] = json!(text),
                ResourceBody::Blob(bytes) => resource["blob"] = json!(encode(bytes)),
            }
            json!({ "type": "resource", "resource": resource })
        }
    };
    if let Some(annotations) = &block.annotations {
        // An empty audience means both (the contract's word); MCP says that by leaving it out.
        wire["annotations"] = json!({
            "audience": (!annotations.audience.is_empty()).then_some(&annotations.audience),
            "priority": annotations.priority.map(|priority| priority.0),
            "lastModified": annotations.last_modified,
        });
    }
    strip_nulls(&mut wire);
    wire
}

/// Parses a result built as MCP's JSON into the library's type; a
/// mismatch is toolhost's bug, reported as an internal error. (Results carry
/// `resultType`, which the library leaves out for older protocol versions.)
pub(crate) fn from_wire<T: serde::de::DeserializeOwned>(wire: Value) -> Result<T, ErrorData> {
    serde_json::from_value(wire).map_err(|err| ErrorData::internal_error(format!("building the result: {err}"), None))
}

/// An [`OfferError`] as the JSON-RPC error MCP asks for: a resource not
/// found is `-32602` with its URI (SEP-2164), as is an unknown prompt.
pub(crate) fn offer_error(err: OfferError, uri: Option<&str>) -> ErrorData {
    match err {
        OfferError::NotFound(_) => ErrorData::invalid_params(err.to_string(), uri.map(|uri| json!({ "uri": uri }))),
        OfferError::Failed(CallError::InvalidArguments(message)) => ErrorData::invalid_params(message, None),
        OfferError::Failed(err) => ErrorData::internal_error(err.to_string(), None),
    }
}

/// How an offer that ran failed (`None`: nothing offers it, nothing ran).
pub(crate) fn ran(err: &OfferError) -> Option<&CallError> {
    match err {
        OfferError::Failed(err) => Some(err),
        OfferError::NotFound(_) => None,
    }
}

/// What the plugins of `catalog` offer besides tools, each item in
/// file-name order (a URI or name a plugin before already offers is left
/// out, as the host serves it from that plugin); only the plugins `shown`
/// says yes to (after that rule: what an earlier plugin hidden from the
/// caller offers stays hidden, since asking for it would run that one).
pub(crate) fn offered(catalog: &Catalog, shown: impl Fn(&str) -> bool) -> (Vec<Value>, Vec<Value>, Vec<Value>) {
    let (mut resources, mut templates, mut prompts) = (Vec::new(), Vec::new(), Vec::new());
    let mut seen = std::collections::HashSet::new();
    for plugin in catalog.plugins() {
        let offers = &plugin.offers;
        if !shown(&plugin.name) {
            seen.extend(offers.resources.iter().map(|resource| format!("r{}", resource.uri)));
            seen.extend(offers.templates.iter().map(|template| format!("t{}", template.uri_template)));
            seen.extend(offers.prompts.iter().map(|prompt| format!("p{}", prompt.name)));
            continue;
        }
        for resource in offers.resources.iter().filter(|resource| seen.insert(format!("r{}", resource.uri))) {
            let mut wire = json!({
                "uri": resource.uri, "name": resource.name, "title": resource.title,
                "description": resource.description, "mimeType": resource.mime_type, "size": resource.size,
            });
            strip_nulls(&mut wire);
            resources.push(wire);
        }
        for template in offers.templates.iter().filter(|template| seen.insert(format!("t{}", template.uri_template))) {
            let mut wire = json!({
                "uriTemplate": template.uri_template, "name": template.name, "title": template.title,
                "description": template.description, "mimeType": template.mime_type,
            });
            strip_nulls(&mut wire);
            templates.push(wire);
        }
        for prompt in offers.prompts.iter().filter(|prompt| seen.insert(format!("p{}", prompt.name))) {
            let arguments: Vec<Value> = prompt
                .arguments
                .iter()
                .map(|argument| {
                    let mut wire = json!({
                        "name": argument.name, "title": argument.title,
                        "description": argument.description, "required": argument.required,
                    });
                    strip_nulls(&mut wire);
                    wire
                })
                .collect();
            let mut wire = json!({
                "name": prompt.name, "title": prompt.title, "description": prompt.description, "arguments": arguments,
            });
            strip_nulls(&mut wire);
            prompts.push(wire);
        }
    }
    (resources, templates, prompts)
}

/// Removes the `null` members of an object, recursively (MCP leaves absent
/// optional fields out).
pub(crate) fn strip_nulls(value: &mut Value) {
    if let Value::Object(map) = value {
        map.retain(|_, member| !member.is_null());
        map.values_mut().for_each(strip_nulls);
    }
}

/// The line `toolhost call` prints after `error: `.
pub(crate) fn one_line(tool: &str, err: &CallError) -> String {
    match err {
        CallError::UnknownTool { .. } => err.to_string(),
        err => format!("{tool}: {err}"),
    }
}

pub(crate) fn level_of(record: &LogRecord) -> LoggingLevel {
    match record.level {
        "trace" | "debug" => LoggingLevel::Debug,
        "info" => LoggingLevel::Info,
        "warn" => LoggingLevel::Warning,
        _ => LoggingLevel::Error,
    }
}

pub(crate) fn severity(level: LoggingLevel) -> u8 {
    match level {
        LoggingLevel::Debug => 0,
        LoggingLevel::Info => 1,
        LoggingLevel::Notice => 2,
        LoggingLevel::Warning => 3,
        LoggingLevel::Error => 4,
        LoggingLevel::Critical => 5,
        LoggingLevel::Alert => 6,
        LoggingLevel::Emergency => 7,
    }
}

pub(crate) fn unknown_tool(name: &str) -> ErrorData {
    ErrorData::invalid_params(format!("Unknown tool: {name}"), None)
}

#[cfg(test)]
mod tests {
    use super::*;
    use toolhost_runtime::content::{Annotations, Priority};

    fn report(outcome: Result<ToolOutput, CallError>) -> CallReport {
        let mut report = CallReport::rejected("echo", Some("echo".to_owned()), CallError::ToolFailed(String::new()));
        report.outcome = outcome;
        report
    }

    fn wire(result: &CallToolResult) -> Value {
        serde_json::to_value(result).unwrap()
    }

    #[test]
    fn the_result_an_audit_line_binds_is_the_result_that_goes_out_without_meta() {
        for (outcome, wrap) in [
            (Ok(ToolOutput::Text("hi".to_owned())), false),
            (Ok(ToolOutput::Json("[1,2.5]".to_owned())), true),
            (Ok(ToolOutput::Json(r#"{"b":1,"a":"x"}"#.to_owned())), false),
            (Err(CallError::Denied("no".to_owned())), false),
        ] {
            let mut report = report(outcome);
            report.refused.push(toolhost_runtime::outcome::Refusal {
                target: "https://example.com:443".to_owned(),
                reason: toolhost_runtime::outcome::RefusalReason::NotGranted,
            });
            let bound = result_json(&report, wrap).unwrap();
            report.receipt = Some(json!({"seq": 1}));
            let mut sent = wire(&result_of(report, wrap));
            sent.as_object_mut().unwrap().remove("_meta");
            assert_eq!(bound, sent);
        }
        assert_eq!(result_json(&report(Err(CallError::InputRequired)), false), None);
    }

    #[test]
    fn text_output_is_one_text_block_with_usage_in_meta() {
        let result = wire(&result_of(report(Ok(ToolOutput::Text("hi".to_owned()))), false));
        assert_eq!(result["content"], json!([{ "type": "text", "text": "hi" }]));
        assert_eq!(result["isError"], json!(false));
        assert!(result["_meta"][USAGE_META]["fuel"].is_number(), "{result}");
        assert!(result.get("structuredContent").is_none(), "{result}");
    }

    #[test]
    fn json_output_is_structured_and_a_non_object_is_wrapped_with_its_text() {
        let object = wire(&result_of(report(Ok(ToolOutput::Json(r#"{"a":1}"#.to_owned()))), false));
        assert_eq!(object["structuredContent"], json!({ "a": 1 }));
        let wrapped = wire(&result_of(report(Ok(ToolOutput::Json("[1,2]".to_owned()))), true));
        assert_eq!(wrapped["structuredContent"], json!({ RESULT_KEY: [1, 2] }));
        assert_eq!(wrapped["content"], json!([{ "type": "text", "text": "[1,2]" }]));
        // Not JSON after all: served as the text it is, never dropped.
        let text = wire(&result_of(report(Ok(ToolOutput::Json("not json".to_owned()))), false));
        assert_eq!(text["content"], json!([{ "type": "text", "text": "not json" }]));
    }

    #[test]
    fn a_failure_is_one_line_naming_the_tool_and_refusals_are_told() {
        let mut failed = report(Err(CallError::ToolFailed("no".to_owned())));
        failed.refused.push(toolhost_runtime::outcome::Refusal {
            target: "https://x.test:443".to_owned(),
            reason: toolhost_runtime::outcome::RefusalReason::NotGranted,
        });
        let result = wire(&result_of(failed, false));
        assert_eq!(result["isError"], json!(true));
        assert_eq!(result["content"][0]["text"], json!("echo: the tool failed: no"));
        let told = result["content"][1]["text"].as_str().unwrap();
        assert!(told.starts_with("[toolhost refused: https://x.test:443"), "{told}");
        assert_eq!(result["_meta"][REFUSED_META][0]["target"], json!("https://x.test:443"));
        let unknown = CallError::UnknownTool { name: "nope".to_owned(), suggestion: None };
        assert_eq!(one_line("nope", &unknown), unknown.to_string(), "an unknown tool is not named twice");
    }

    #[test]
    fn content_blocks_keep_their_kind_and_annotations_without_nulls() {
        let block = toolhost_runtime::content::ContentBlock {
            content: Content::Resource {
                uri: "mem://a".to_owned(),
                mime_type: None,
                body: ResourceBody::Blob(vec![1, 2, 3]),
            },
            annotations: Some(Annotations { audience: Vec::new(), priority: Some(Priority(0.5)), last_modified: None }),
        };
        assert_eq!(
            wire_content(&block),
            json!({
                "type": "resource",
                "resource": { "uri": "mem://a", "blob": "AQID" },
                "annotations": { "priority": 0.5 },
            })
        );
        let json = toolhost_runtime::content::ContentBlock {
            content: Content::Json { json: r#"{"k":true}"#.to_owned(), parsed: None },
            annotations: None,
        };
        assert_eq!(wire_content(&json), json!({ "type": "text", "text": r#"{"k":true}"# }));
    }

    #[test]
    fn offer_errors_are_the_json_rpc_errors_mcp_asks_for() {
        let missing = offer_error(OfferError::NotFound("the resource `mem://x`".to_owned()), Some("mem://x"));
        assert_eq!(missing.code, rmcp::model::ErrorCode::INVALID_PARAMS);
        assert_eq!(missing.data, Some(json!({ "uri": "mem://x" })));
        let invalid = offer_error(OfferError::Failed(CallError::InvalidArguments("bad".to_owned())), None);
        assert_eq!(invalid.code, rmcp::model::ErrorCode::INVALID_PARAMS);
        let failed = offer_error(OfferError::Failed(CallError::ToolFailed("boom".to_owned())), None);
        assert_eq!(failed.code, rmcp::model::ErrorCode::INTERNAL_ERROR);
    }

    #[test]
    fn log_levels_map_onto_mcp_and_keep_their_order() {
        let record = |level| LogRecord { level, message: String::new(), fields: Vec::new() };
        let levels: Vec<LoggingLevel> =
            ["trace", "debug", "info", "warn", "error"].map(|l| level_of(&record(l))).into();
        assert_eq!(
            levels,
            [LoggingLevel::Debug, LoggingLevel::Debug, LoggingLevel::Info, LoggingLevel::Warning, LoggingLevel::Error]
        );
        assert!(levels.windows(2).all(|pair| severity(pair[0]) <= severity(pair[1])));
    }

    #[test]
    fn strip_nulls_removes_absent_members_at_every_depth() {
        let mut value = json!({ "a": null, "b": { "c": null, "d": 1 }, "e": [null] });
        strip_nulls(&mut value);
        assert_eq!(value, json!({ "b": { "d": 1 }, "e": [null] }));
    }
}

//! The OpenAI Responses API (`POST {base_url}/responses`), which OpenAI
//! recommends for new work and Codex speaks.
//!
//! Requests are stateless (`store: false`): the whole conversation goes as
//! input items every time, with the encrypted reasoning items of earlier
//! replies (`include: ["reasoning.encrypted_content"]`) given back verbatim.
//! Tools are flat `function` tools; calls come as `function_call` items and
//! their results go back as `function_call_output` items, matched by
//! `call_id`. A stream is typed events with no `[DONE]`: it ends with
//! `response.completed`, `response.incomplete` or `response.failed`.

use super::Delta;
use super::sse::Events;
use super::{
    Conversation, Endpoint, Failure, Media, Message, ModelError, ProviderState, Reply, RequestOptions, StopKind,
    StopReason, TokenUsage, ToolCall, ToolResult, ToolSpec,
};
use serde_json::{Value, json};

/// The URL and body of a request.
pub(super) fn request(
    endpoint: &Endpoint,
    options: &RequestOptions,
    conversation: &Conversation,
    tools: &[ToolSpec],
) -> (String, Value) {
    let mut input = Vec::with_capacity(conversation.messages.len() * 2);
    for message in &conversation.messages {
        match message {
            Message::User { content } => input.push(json!({ "role": "user", "content": content })),
            Message::Assistant { content, tool_calls, state } => {
                assistant_items(&mut input, content, tool_calls, state)
            }
            Message::Tool { results } => input.extend(results.iter().map(function_call_output)),
        }
    }
    let mut body = json!({
        "model": endpoint.model,
        "input": input,
        "stream": options.stream,
        "store": false,
        "include": ["reasoning.encrypted_content"],
    });
    if let Some(system) = &conversation.system {
        body["instructions"] = json!(system);
    }
    if !tools.is_empty() {
        body["tools"] = tools
            .iter()
            .map(|tool| {
                json!({
                    "type": "function",
                    "name": tool.name,
                    "description": tool.description,
                    "parameters": tool.schema,
                })
            })
            .collect();
    }
    if let Some(max_tokens) = options.max_tokens {
        body["max_output_tokens"] = json!(max_tokens);
    }
    if let Some(reasoning) = options.reasoning {
        body["reasoning"] = json!({ "effort": reasoning.effort(), "summary": "auto" });
    }
    (format!("{}/responses", endpoint.base_url.trim_end_matches('/')), body)
}

/// An assistant message's input items, in the order its output items came:
/// reasoning verbatim (its encrypted content with it), each message as the
/// text it had, each `function_call` with its call as toolhost keeps it.
/// No item goes back with its `id` but reasoning (`store: false` keeps
/// nothing to refer to). What the kept items do not place (older
/// transcripts kept only reasoning) follows: the text, then the calls.
fn assistant_items(input: &mut Vec<Value>, content: &str, calls: &[ToolCall], state: &ProviderState) {
    let mut calls_left = calls.iter();
    let mut text_placed = false;
    for item in &state.items {
        match item.get("type").and_then(Value::as_str) {
            Some("reasoning") => input.push(item.clone()),
            Some("function_call") => input.extend(calls_left.next().map(function_call)),
            Some("message") => {
                let parts: Vec<Value> = item
                    .get("content")
                    .and_then(Value::as_array)
                    .into_iter()
                    .flatten()
                    .filter_map(|part| match part.get("type").and_then(Value::as_str) {
                        Some("output_text") => Some(json!({ "type": "output_text", "text": part.get("text").and_then(Value::as_str).unwrap_or_default() })),
                        Some("refusal") => Some(json!({ "type": "refusal", "refusal": part.get("refusal").and_then(Value::as_str).unwrap_or_default() })),
                        _ => None,
                    })
                    .collect();
                if !parts.is_empty() {
                    input.push(json!({ "type": "message", "role": "assistant", "content": parts }));
                    text_placed = true;
                }
            }
            _ => {} // nothing else is asked for (no hosted tools are sent)
        }
    }
    if !text_placed && !content.is_empty() {
        input.push(json!({
            "type": "message",
            "role": "assistant",
            "content": [{ "type": "output_text", "text": content }],
        }));
    }
    input.extend(calls_left.map(function_call));
}

fn function_call(call: &ToolCall) -> Value {
    json!({ "type": "function_call", "call_id": call.id, "name": call.name, "arguments": call.arguments })
}

/// A `function_call_output` item: its text, or, when the tool returned
/// images, its text and the images as `input_image` parts (data URLs).
fn function_call_output(result: &ToolResult) -> Value {
    let text = if result.is_error { format!("Error: {}", result.content) } else { result.content.clone() };
    let images: Vec<&Media> = result.media.iter().filter(|media| media.is_sendable_image()).collect();
    let output = if images.is_empty() || result.is_error {
        json!(text)
    } else {
        let mut parts = vec![json!({ "type": "input_text", "text": text })];
        parts.extend(images.into_iter().map(|image| {
            json!({
                "type": "input_image",
                "image_url": format!("data:{};base64,{}", image.mime_type, image.data),
                "detail": "auto",
            })
        }));
        Value::Array(parts)
    };
    json!({ "type": "function_call_output", "call_id": result.call_id, "output": output })
}

/// A complete (non-streamed) response.
pub(super) fn parse_reply(value: &Value) -> Result<Reply, Failure> {
    if let Some(failure) = error_event(value) {
        return Err(failure);
    }
    if value.get("object").and_then(Value::as_str) != Some("response") && value.get("output").is_none() {
        return Err(Failure::protocol("the answer is not a response object (no `output`)"));
    }
    finish(value, None)
}

/// A streamed response.
pub(super) async fn read_stream(
    mut events: Events,
    on_text: &mut (dyn FnMut(Delta<'_>) + Send),
) -> Result<Reply, Failure> {
    // Finished output items by their `output_index`, as `output_item.done` gives them.
    let mut items: Vec<(u64, Value)> = Vec::new();
    let mut streamed = String::new();
    let mut refused = String::new();
    while let Some(event) = events.next().await {
        let event = event?;
        let value: Value = serde_json::from_str(&event.data)
            .map_err(|_| Failure::protocol(format!("a stream event is not JSON: `{}`", super::preview(&event.data))))?;
        match value.get("type").and_then(Value::as_str) {
            Some("response.output_text.delta") => {
                let text = value.get("delta").and_then(Value::as_str).unwrap_or_default();
                if !text.is_empty() {
                    streamed.push_str(text);
                    on_text(Delta::Text(text));
                }
            }
            Some("response.refusal.delta") => {
                let text = value.get("delta").and_then(Value::as_str).unwrap_or_default();
                if !text.is_empty() {
                    refused.push_str(text);
                    on_text(Delta::Text(text));
                }
            }
            Some("response.reasoning_summary_text.delta" | "response.reasoning_text.delta") => {
                let text = value.get("delta").and_then(Value::as_str).unwrap_or_default();
                if !text.is_empty() {
                    on_text(Delta::Reasoning(text));
                }
            }
            Some("response.output_item.done") => {
                let index = value.get("output_index").and_then(Value::as_u64).unwrap_or(items.len() as u64);
                if let Some(item) = value.get("item") {
                    items.retain(|(seen, _)| *seen != index);
                    items.push((index, item.clone()));
                }
            }
            Some("response.completed" | "response.incomplete" | "response.failed") => {
                let response =
                    value.get("response").ok_or_else(|| Failure::protocol("a final event without `response`"))?;
                if let Some(failure) = error_event(response) {
                    return Err(failure);
                }
                items.sort_by_key(|(index, _)| *index);
                let done: Vec<Value> = items.into_iter().map(|(_, item)| item).collect();
                let shown = format!("{streamed}{refused}");
                let reply = finish(response, Some((done, streamed, refused)))?;
                // What the stream's deltas did not show (a refusal or text
                // that came only in the finished items) is shown now, as a
                // whole response would show it.
                if let Some(rest) = reply.content.strip_prefix(shown.as_str()).filter(|rest| !rest.is_empty()) {
                    on_text(Delta::Text(rest));
                } else if shown.is_empty() && !reply.content.is_empty() {
                    on_text(Delta::Text(&reply.content));
                }
                return Ok(reply);
            }
            Some("error") => {
                return Err(error_event(&value).unwrap_or_else(|| Failure::protocol("an `error` event")));
            }
            _ => {} // created, in_progress, added items, argument and reasoning deltas, …
        }
    }
    Err(events.ended_early())
}

/// A `failed` response or an `error` event, as a failure: a server error or
/// rate limit is worth another attempt, anything else is not.
fn error_event(value: &Value) -> Option<Failure> {
    let error = match value.get("type").and_then(Value::as_str) {
        Some("error") => value.get("error").unwrap_or(value),
        _ if value.get("status").and_then(Value::as_str) == Some("failed") => value.get("error")?,
        _ => value.get("error").filter(|error| error.is_object())?,
    };
    let code = error.get("code").and_then(Value::as_str).unwrap_or("error");
    let message = error.get("message").and_then(Value::as_str).unwrap_or("no message").to_owned();
    let message = super::one_line(&format!("{code}: {message}"), 300);
    Some(match code {
        "server_error" | "rate_limit_exceeded" | "server_is_overloaded" => Failure::Retryable {
            error: ModelError::Unavailable { status: 200, attempts: 0, message },
            retry_after: None,
        },
        _ => Failure::Final(ModelError::Failed { message }),
    })
}

/// The reply in a finished response: its output items (from the stream's
/// `output_item.done` events when streamed, else the response's `output`),
/// its status and usage.
fn finish(response: &Value, streamed: Option<(Vec<Value>, String, String)>) -> Result<Reply, Failure> {
    let (items, streamed_text) = match streamed {
        Some((items, text, refused)) if !items.is_empty() => (items, Some((text, refused))),
        Some((_, text, refused)) => (output_of(response), Some((text, refused))),
        None => (output_of(response), None),
    };
    let mut content = String::new();
    let mut refusal = String::new();
    let mut tool_calls = Vec::new();
    let mut state = ProviderState::default();
    for item in items {
        match item.get("type").and_then(Value::as_str) {
            Some("message") => {
                for part in item.get("content").and_then(Value::as_array).into_iter().flatten() {
                    match part.get("type").and_then(Value::as_str) {
                        Some("output_text") => {
                            content.push_str(part.get("text").and_then(Value::as_str).unwrap_or_default())
                        }
                        Some("refusal") => {
                            refusal.push_str(part.get("refusal").and_then(Value::as_str).unwrap_or_default())
                        }
                        _ => {}
                    }
                }
                state.items.push(item);
            }
            Some("function_call") => {
                let name = item
                    .get("name")
                    .and_then(Value::as_str)
                    .ok_or_else(|| Failure::protocol("a function_call has no name"))?;
                let id = item.get("call_id").and_then(Value::as_str).unwrap_or_default();
                let arguments = match item.get("arguments") {
                    Some(Value::String(text)) => text.clone(),
                    Some(Value::Null) | None => String::new(),
                    Some(other) => other.to_string(),
                };
                tool_calls.push(ToolCall::new(id, name, arguments));
                state.items.push(item);
            }
            // Given back verbatim in the next request (with its encrypted content).
            Some("reasoning") => state.items.push(item),
            _ => {}
        }
    }
    // A stream's text was shown as it came; keep it if the items lack it.
    if let Some((text, refused)) = streamed_text {
        if content.is_empty() {
            content = text;
        }
        if refusal.is_empty() {
            refusal = refused;
        }
    }
    let status = response.get("status").and_then(Value::as_str);
    let stop = match status {
        Some("incomplete") => {
            let reason = response.pointer("/incomplete_details/reason").and_then(Value::as_str);
            let kind = match reason {
                Some("max_output_tokens") => StopKind::Length,
                Some("content_filter") => StopKind::ContentFilter,
                _ => StopKind::Unknown,
            };
            StopReason::new(kind, Some(reason.unwrap_or("incomplete")))
        }
        _ if !refusal.is_empty() => StopReason::new(StopKind::ContentFilter, Some("refusal")),
        _ if !tool_calls.is_empty() => StopReason::new(StopKind::ToolUse, status),
        Some("completed") | None => StopReason::new(StopKind::Done, status),
        // `in_progress`, `queued`, `cancelled`: not a finished response.
        Some(_) => StopReason::new(StopKind::Unknown, status),
    };
    if !refusal.is_empty() && content.is_empty() {
        content = refusal;
    }
    // Plain text alone needs nothing kept: the message's text gives it back.
    if state.items.iter().all(|item| item.get("type").and_then(Value::as_str) == Some("message")) {
        state.items.clear();
    }
    let usage = TokenUsage {
        input: response.pointer("/usage/input_tokens").and_then(Value::as_u64).unwrap_or(0),
        output: response.pointer("/usage/output_tokens").and_then(Value::as_u64).unwrap_or(0),
        reasoning: response
            .pointer("/usage/output_tokens_details/reasoning_tokens")
            .and_then(Value::as_u64)
            .unwrap_or(0),
    };
    Ok(Reply { content, tool_calls, stop, usage, state })
}

fn output_of(response: &Value) -> Vec<Value> {
    response.get("output").and_then(Value::as_array).cloned().unwrap_or_default()
}

/// the OpenAI Responses API, as a [`Wire`](super::wire::Wire).
pub(super) struct Responses;

impl super::wire::Wire for Responses {
    fn title(&self) -> &'static str {
        "OpenAI Responses"
    }

    fn request(
        &self,
        endpoint: &super::Endpoint,
        options: &super::RequestOptions,
        conversation: &super::Conversation,
        tools: &[super::ToolSpec],
    ) -> (String, Value) {
        request(endpoint, options, conversation, tools)
    }

    fn key_variable(&self) -> &'static str {
        "OPENAI_API_KEY"
    }

    fn parse_reply(&self, value: &Value) -> Result<Reply, Failure> {
        parse_reply(value)
    }

    fn read_stream<'a>(
        &'a self,
        events: Events,
        on_text: &'a mut (dyn FnMut(Delta<'_>) + Send),
    ) -> super::wire::Reading<'a> {
        Box::pin(read_stream(events, on_text))
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::model::{Protocol, ToolResult};

    #[test]
    fn sends_items_flat_tools_and_replays_reasoning() {
        let reasoning = json!({"type": "reasoning", "id": "rs_1", "summary": [], "encrypted_content": "gAAAA"});
        let conversation = Conversation {
            system: Some("be brief".into()),
            messages: vec![
                Message::User { content: "hash abc".into() },
                Message::Assistant {
                    content: String::new(),
                    tool_calls: vec![ToolCall::new("call_1", "sha256", r#"{"text":"abc"}"#)],
                    state: ProviderState { items: vec![reasoning.clone()], ..Default::default() },
                },
                Message::Tool {
                    results: vec![ToolResult {
                        call_id: "call_1".into(),
                        name: "sha256".into(),
                        content: "ba78".into(),
                        is_error: false,
                        media: Vec::new(),
                        source: None,
                    }],
                },
            ],
        };
        let endpoint = Endpoint {
            protocol: Protocol::OpenaiResponses,
            base_url: "http://127.0.0.1:1/v1/".into(),
            model: "o4-mini".into(),
            api_key: None,
        };
        let tools = [ToolSpec {
            name: "sha256".into(),
            description: "hash".into(),
            schema: json!({"type": "object"}),
            defer: false,
        }];
        let (url, body) = request(&endpoint, &RequestOptions::default(), &conversation, &tools);
        assert_eq!(url, "http://127.0.0.1:1/v1/responses");
        assert_eq!(body["instructions"], "be brief");
        assert_eq!(
            (body["store"].clone(), body["include"][0].clone()),
            (json!(false), json!("reasoning.encrypted_content"))
        );
        assert_eq!(
            body["tools"][0],
            json!({"type": "function", "name": "sha256", "description": "hash", "parameters": {"type": "object"}})
        );
        let input = body["input"].as_array().unwrap();
        assert_eq!(input[0], json!({"role": "user", "content": "hash abc"}));
        assert_eq!(input[1], reasoning);
        assert_eq!(
            input[2],
            json!({"type": "function_call", "call_id": "call_1", "name": "sha256", "arguments": "{\"text\":\"abc\"}"})
        );
        assert_eq!(input[3], json!({"type": "function_call_output", "call_id": "call_1", "output": "ba78"}));
    }

    #[test]
    fn output_items_go_back_in_their_order_with_images_in_the_outputs() {
        let reasoning = |n: u32| json!({"type": "reasoning", "id": format!("rs_{n}"), "summary": [], "encrypted_content": format!("enc{n}")});
        let reply = parse_reply(&json!({"object": "response", "status": "completed", "output": [
            reasoning(1),
            {"type": "function_call", "id": "fc_1", "call_id": "call_a", "name": "shot", "arguments": "{}", "status": "completed"},
            reasoning(2),
            {"type": "message", "id": "msg_1", "role": "assistant", "status": "completed", "content": [{"type": "output_text", "text": "Looking.", "annotations": []}]},
            {"type": "function_call", "id": "fc_2", "call_id": "call_b", "name": "shot", "arguments": "{}", "status": "completed"}
        ]}))
        .unwrap();
        let conversation = Conversation {
            system: None,
            messages: vec![
                Message::Assistant { content: reply.content, tool_calls: reply.tool_calls, state: reply.state },
                Message::Tool {
                    results: vec![ToolResult {
                        call_id: "call_a".into(),
                        name: "shot".into(),
                        content: "[image: image/png, 3 bytes]".into(),
                        is_error: false,
                        media: vec![Media {
                            kind: crate::model::MediaKind::Image,
                            mime_type: "image/png".into(),
                            data: "AAAA".into(),
                        }],
                        source: None,
                    }],
                },
            ],
        };
        let endpoint = Endpoint {
            protocol: Protocol::OpenaiResponses,
            base_url: "http://127.0.0.1:1/v1".into(),
            model: "o4-mini".into(),
            api_key: None,
        };
        let (_, body) = request(&endpoint, &RequestOptions::default(), &conversation, &[]);
        assert_eq!(
            body["input"],
            json!([
                reasoning(1),
                {"type": "function_call", "call_id": "call_a", "name": "shot", "arguments": "{}"},
                reasoning(2),
                {"type": "message", "role": "assistant", "content": [{"type": "output_text", "text": "Looking."}]},
                {"type": "function_call", "call_id": "call_b", "name": "shot", "arguments": "{}"},
                {"type": "function_call_output", "call_id": "call_a", "output": [
                    {"type": "input_text", "text": "[image: image/png, 3 bytes]"},
                    {"type": "input_image", "image_url": "data:image/png;base64,AAAA", "detail": "auto"}
                ]}
            ])
        );
    }

    #[test]
    fn reads_statuses_refusals_and_failures() {
        let incomplete = json!({"object": "response", "status": "incomplete", "incomplete_details": {"reason": "max_output_tokens"},
            "output": [{"type": "message", "role": "assistant", "content": [{"type": "output_text", "text": "Part"}]}]});
        let reply = parse_reply(&incomplete).unwrap();
        assert_eq!(
            (reply.content.as_str(), reply.stop),
            ("Part", StopReason::new(StopKind::Length, Some("max_output_tokens")))
        );
        let refused = json!({"object": "response", "status": "completed",
            "output": [{"type": "message", "role": "assistant", "content": [{"type": "refusal", "refusal": "I can't help with that."}]}]});
        let reply = parse_reply(&refused).unwrap();
        assert_eq!(
            (reply.content.as_str(), reply.stop),
            ("I can't help with that.", StopReason::new(StopKind::ContentFilter, Some("refusal")))
        );
        let unknown = json!({"object": "response", "status": "incomplete", "incomplete_details": {"reason": "something_new"}, "output": []});
        assert_eq!(parse_reply(&unknown).unwrap().stop, StopReason::new(StopKind::Unknown, Some("something_new")));
        let failed = json!({"object": "response", "status": "failed", "error": {"code": "invalid_prompt", "message": "bad"}, "output": []});
        assert!(matches!(parse_reply(&failed), Err(Failure::Final(ModelError::Failed { .. }))));
        let busy = json!({"object": "response", "status": "failed", "error": {"code": "server_error", "message": "oops"}, "output": []});
        assert!(matches!(parse_reply(&busy), Err(Failure::Retryable { .. })));
        assert!(matches!(parse_reply(&json!({"choices": []})), Err(Failure::Protocol(_))));
    }
}

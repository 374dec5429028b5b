//! The Anthropic Messages protocol.

use super::Delta;
use super::sse::Events;
use super::{
    Conversation, Endpoint, Failure, Message, ModelError, ProviderState, Reply, RequestOptions, StopReason, TokenUsage,
    ToolCall, ToolSpec,
};
use serde_json::{Value, json};

/// Output tokens asked for when the config does not say (Anthropic requires a value).
pub const DEFAULT_MAX_TOKENS: u32 = 4096;

/// The URL and body of a request.
pub(super) fn request(
    endpoint: &Endpoint,
    options: &RequestOptions,
    conversation: &Conversation,
    tools: &[ToolSpec],
) -> (String, Value) {
    let mut messages: Vec<Value> = Vec::with_capacity(conversation.messages.len());
    let mut push = |role: &str, blocks: Vec<Value>| {
        // Anthropic wants user and assistant turns to alternate: merge
        // consecutive turns of the same role (tool results then a new prompt).
        if let Some(last) = messages.last_mut()
            && last["role"] == role
            && let Some(content) = last["content"].as_array_mut()
        {
            content.extend(blocks);
            return;
        }
        messages.push(json!({ "role": role, "content": blocks }));
    };
    for message in &conversation.messages {
        match message {
            Message::User { content } => push("user", vec![json!({ "type": "text", "text": non_empty(content) })]),
            Message::Assistant { content, tool_calls, state } => {
                // Thinking blocks go back first, unchanged and in order: the
                // signatures cover them, and a tool loop is refused without them.
                let mut blocks = state.thinking.clone();
                if !content.is_empty() || (tool_calls.is_empty() && state.thinking.is_empty()) {
                    blocks.push(json!({ "type": "text", "text": non_empty(content) }));
                }
                for call in tool_calls {
                    let input = match serde_json::from_str::<Value>(&call.arguments) {
                        Ok(input @ Value::Object(_)) => input,
                        _ => json!({}),
                    };
                    blocks.push(json!({ "type": "tool_use", "id": call.id, "name": call.name, "input": input }));
                }
                push("assistant", blocks);
            }
            Message::Tool { results } => push(
                "user",
                results
                    .iter()
                    .map(|result| {
                        json!({
                            "type": "tool_result",
                            "tool_use_id": result.call_id,
                            "content": non_empty(&result.content),
                            "is_error": result.is_error,
                        })
                    })
                    .collect(),
            ),
        }
    }
    let mut max_tokens = options.max_tokens.unwrap_or(DEFAULT_MAX_TOKENS);
    let mut body = json!({ "model": endpoint.model, "messages": messages, "stream": options.stream });
    if let Some(reasoning) = options.reasoning {
        // The thinking budget counts against max_tokens, which must exceed it.
        let budget = reasoning.budget();
        max_tokens = max_tokens.max(budget.saturating_add(DEFAULT_MAX_TOKENS));
        body["thinking"] = json!({ "type": "enabled", "budget_tokens": budget });
    }
    body["max_tokens"] = json!(max_tokens);
    if let Some(system) = &conversation.system {
        body["system"] = json!(system);
    }
    if !tools.is_empty() {
        body["tools"] = tools
            .iter()
            .map(|tool| json!({ "name": tool.name, "description": tool.description, "input_schema": tool.schema }))
            .collect();
    }
    (format!("{}/v1/messages", endpoint.base_url.trim_end_matches('/').trim_end_matches("/v1")), body)
}

/// Anthropic refuses empty text blocks.
fn non_empty(text: &str) -> &str {
    if text.is_empty() { "(empty)" } else { text }
}

fn error_event(value: &Value) -> Option<Failure> {
    if value.get("type").and_then(Value::as_str) != Some("error") {
        return None;
    }
    let message = value.pointer("/error/message").and_then(Value::as_str).unwrap_or("unknown error").to_owned();
    Some(Failure::Retryable { error: ModelError::Unavailable { status: 200, attempts: 0, message }, retry_after: None })
}

/// A complete (non-streamed) response.
pub(super) fn parse_reply(value: &Value) -> Result<Reply, Failure> {
    if let Some(failure) = error_event(value) {
        return Err(failure);
    }
    let blocks = value
        .get("content")
        .and_then(Value::as_array)
        .ok_or_else(|| Failure::protocol("the answer has no `content` list"))?;
    let mut content = String::new();
    let mut tool_calls = Vec::new();
    let mut state = ProviderState::default();
    for block in blocks {
        match block.get("type").and_then(Value::as_str) {
            Some("text") => content.push_str(block.get("text").and_then(Value::as_str).unwrap_or_default()),
            Some("thinking" | "redacted_thinking") => state.thinking.push(block.clone()),
            Some("tool_use") => tool_calls.push(ToolCall::new(
                block.get("id").and_then(Value::as_str).unwrap_or_default(),
                block
                    .get("name")
                    .and_then(Value::as_str)
                    .ok_or_else(|| Failure::protocol("a tool_use block has no name"))?,
                block.get("input").map(Value::to_string).unwrap_or_default(),
            )),
            _ => {} // other block kinds carry nothing for us
        }
    }
    let stop = match value.get("stop_reason").and_then(Value::as_str) {
        Some(reason) => StopReason::from_anthropic(reason),
        None => return Err(Failure::protocol("the answer has no `stop_reason`")),
    };
    let usage = TokenUsage {
        input: value.pointer("/usage/input_tokens").and_then(Value::as_u64).unwrap_or(0),
        output: value.pointer("/usage/output_tokens").and_then(Value::as_u64).unwrap_or(0),
        reasoning: 0,
    };
    Ok(Reply { content, tool_calls, stop, usage, state })
}

/// A streamed response.
pub(super) async fn read_stream(
    mut events: Events,
    on_text: &mut (dyn FnMut(Delta<'_>) + Send),
) -> Result<Reply, Failure> {
    let mut content = String::new();
    // Tool calls by content-block index, in the order they started.
    let mut calls: Vec<(u64, ToolCall)> = Vec::new();
    // Thinking blocks by content-block index, assembled from their deltas.
    let mut thinking: Vec<(u64, Value)> = Vec::new();
    let mut stop = None;
    let mut usage = TokenUsage::default();
    let mut finished = false;
    while let Some(event) = events.next().await {
        let event = event?;
        let value: Value = serde_json::from_str(&event.data)
            .map_err(|_| Failure::protocol(format!("a stream event is not JSON: {:?}", super::preview(&event.data))))?;
        if let Some(failure) = error_event(&value) {
            return Err(failure);
        }
        let index = value.get("index").and_then(Value::as_u64).unwrap_or(0);
        match value.get("type").and_then(Value::as_str) {
            Some("message_start") => {
                usage.input = value.pointer("/message/usage/input_tokens").and_then(Value::as_u64).unwrap_or(0);
                usage.output = value.pointer("/message/usage/output_tokens").and_then(Value::as_u64).unwrap_or(0);
            }
            Some("content_block_start") => {
                let block = value
                    .get("content_block")
                    .ok_or_else(|| Failure::protocol("content_block_start without a block"))?;
                match block.get("type").and_then(Value::as_str) {
                    Some("tool_use") => calls.push((
                        index,
                        ToolCall::new(
                            block.get("id").and_then(Value::as_str).unwrap_or_default(),
                            block.get("name").and_then(Value::as_str).unwrap_or_default(),
                            "",
                        ),
                    )),
                    Some("text") => {
                        if let Some(text) = block.get("text").and_then(Value::as_str).filter(|text| !text.is_empty()) {
                            content.push_str(text);
                            on_text(Delta::Text(text));
                        }
                    }
                    Some("thinking" | "redacted_thinking") => thinking.push((index, block.clone())),
                    _ => {}
                }
            }
            Some("content_block_delta") => {
                let delta =
                    value.get("delta").ok_or_else(|| Failure::protocol("content_block_delta without a delta"))?;
                match delta.get("type").and_then(Value::as_str) {
                    Some("text_delta") => {
                        let text = delta.get("text").and_then(Value::as_str).unwrap_or_default();
                        content.push_str(text);
                        on_text(Delta::Text(text));
                    }
                    Some("input_json_delta") => {
                        let json = delta.get("partial_json").and_then(Value::as_str).unwrap_or_default();
                        if let Some((_, call)) = calls.iter_mut().rev().find(|(i, _)| *i == index) {
                            call.arguments.push_str(json);
                        }
                    }
                    Some(kind @ ("thinking_delta" | "signature_delta")) => {
                        let key = if kind == "thinking_delta" { "thinking" } else { "signature" };
                        let piece = delta.get(key).and_then(Value::as_str).unwrap_or_default();
                        if key == "thinking" && !piece.is_empty() {
                            on_text(Delta::Reasoning(piece));
                        }
                        if let Some((_, block)) = thinking.iter_mut().rev().find(|(i, _)| *i == index) {
                            match block.get_mut(key) {
                                Some(Value::String(text)) => text.push_str(piece),
                                _ => block[key] = json!(piece),
                            }
                        }
                    }
                    _ => {}
                }
            }
            Some("message_delta") => {
                if let Some(reason) = value.pointer("/delta/stop_reason").and_then(Value::as_str) {
                    stop = Some(StopReason::from_anthropic(reason));
                }
                if let Some(output) = value.pointer("/usage/output_tokens").and_then(Value::as_u64) {
                    usage.output = output;
                }
                if let Some(input) = value.pointer("/usage/input_tokens").and_then(Value::as_u64) {
                    usage.input = input.max(usage.input);
                }
            }
            Some("message_stop") => {
                finished = true;
                break;
            }
            _ => {} // ping, content_block_stop, and kinds added later
        }
    }
    if !finished {
        return Err(events.ended_early());
    }
    let tool_calls: Vec<ToolCall> = calls.into_iter().map(|(_, call)| call).collect();
    let stop = stop.unwrap_or(if tool_calls.is_empty() { StopReason::Done } else { StopReason::ToolUse });
    let state =
        ProviderState { thinking: thinking.into_iter().map(|(_, block)| block).collect(), ..Default::default() };
    Ok(Reply { content, tool_calls, stop, usage, state })
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::model::ToolResult;

    #[test]
    fn merges_tool_results_and_a_new_prompt_into_one_user_turn() {
        let conversation = Conversation {
            system: Some("be brief".into()),
            messages: vec![
                Message::User { content: "hash it".into() },
                Message::Assistant {
                    content: String::new(),
                    tool_calls: vec![ToolCall::new("t1", "sha256", r#"{"text":"a"}"#)],
                    state: ProviderState::default(),
                },
                Message::Tool {
                    results: vec![ToolResult {
                        call_id: "t1".into(),
                        name: "sha256".into(),
                        content: "ca97".into(),
                        is_error: false,
                        source: None,
                    }],
                },
                Message::User { content: "thanks".into() },
            ],
        };
        let endpoint = Endpoint {
            protocol: super::super::Protocol::Anthropic,
            base_url: "http://127.0.0.1:1".into(),
            model: "m".into(),
            api_key: None,
        };
        let (url, body) = request(&endpoint, &RequestOptions::default(), &conversation, &[]);
        assert_eq!(url, "http://127.0.0.1:1/v1/messages");
        assert_eq!(body["system"], "be brief");
        let messages = body["messages"].as_array().unwrap();
        assert_eq!(messages.len(), 3);
        assert_eq!(messages[1]["content"][0]["type"], "tool_use");
        assert_eq!(messages[1]["content"][0]["input"], json!({"text": "a"}));
        assert_eq!(messages[2]["content"][0]["type"], "tool_result");
        assert_eq!(messages[2]["content"][1]["text"], "thanks");
    }

    #[test]
    fn parses_text_and_tool_use_blocks() {
        let reply = parse_reply(&json!({
            "content": [
                {"type":"text","text":"Let me check."},
                {"type":"tool_use","id":"toolu_1","name":"echo","input":{"text":"x"}}
            ],
            "stop_reason": "tool_use",
            "usage": {"input_tokens": 10, "output_tokens": 5}
        }))
        .unwrap();
        assert_eq!(reply.content, "Let me check.");
        assert_eq!(reply.tool_calls[0].arguments, r#"{"text":"x"}"#);
        assert_eq!(reply.stop, StopReason::ToolUse);
        assert_eq!(reply.usage, TokenUsage { input: 10, output: 5, reasoning: 0 });
    }

    #[test]
    fn rejects_answers_in_another_protocol() {
        assert!(matches!(parse_reply(&json!({"choices": []})), Err(Failure::Protocol(_))));
    }
}

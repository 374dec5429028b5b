//! The Anthropic Messages protocol.

use super::Delta;
use super::sse::Events;
use super::{
    Conversation, Endpoint, Failure, Media, Message, ProviderState, Reply, RequestOptions, StopKind, StopReason,
    TokenUsage, ToolCall, ToolResult, ToolSpec,
};
use serde_json::{Value, json};

/// Output tokens asked for when the config does not say (Anthropic requires a value).
pub const DEFAULT_MAX_TOKENS: u32 = 4096;

/// Anthropic's own tool search, sent when some tools are deferred: it
/// searches their names, descriptions and arguments by BM25, like the loop's
/// own search tool, and loads what it finds into the model's context.
pub(super) const TOOL_SEARCH: &str = "tool_search_tool_bm25";
const TOOL_SEARCH_TYPE: &str = "tool_search_tool_bm25_20251119";
/// The beta that deferred loading and the tool search tool are behind.
const TOOL_SEARCH_BETA: (&str, &str) = ("anthropic-beta", "advanced-tool-use-2025-11-20");

/// The smallest thinking budget Anthropic takes.
const MIN_THINKING_BUDGET: u32 = 1_024;

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
        // consecutive turns of the same role (tool results then a new
        // prompt; a paused reply and its continuation).
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
                push("assistant", assistant_blocks(content, tool_calls, state))
            }
            Message::Tool { results } => push("user", results.iter().map(tool_result).collect()),
        }
    }
    let mut max_tokens = options.max_tokens.unwrap_or(DEFAULT_MAX_TOKENS);
    let mut body = json!({ "model": endpoint.model, "messages": messages, "stream": options.stream });
    if let Some(reasoning) = options.reasoning {
        // The thinking budget counts against max_tokens, which must exceed it.
        let budget = if options.bounded {
            // max_tokens is all the request may allow: thinking fits in half
            // of it, the answer in the rest, or there is no thinking.
            Some(reasoning.budget().min(max_tokens / 2)).filter(|budget| *budget >= MIN_THINKING_BUDGET)
        } else {
            max_tokens = max_tokens.max(reasoning.budget().saturating_add(DEFAULT_MAX_TOKENS));
            Some(reasoning.budget())
        };
        if let Some(budget) = budget {
            body["thinking"] = json!({ "type": "enabled", "budget_tokens": budget });
        }
    }
    body["max_tokens"] = json!(max_tokens);
    if let Some(system) = &conversation.system {
        body["system"] = json!(system);
    }
    if !tools.is_empty() {
        let mut listed: Vec<Value> = Vec::with_capacity(tools.len() + 1);
        if tools.iter().any(|tool| tool.defer) {
            // The search tool is never deferred: it is how the rest are found.
            listed.push(json!({ "type": TOOL_SEARCH_TYPE, "name": TOOL_SEARCH }));
        }
        listed.extend(tools.iter().map(|tool| {
            let mut listed = json!({ "name": tool.name, "description": tool.description, "input_schema": tool.schema });
            if tool.defer {
                listed["defer_loading"] = json!(true);
            }
            listed
        }));
        body["tools"] = Value::Array(listed);
    }
    (format!("{}/v1/messages", endpoint.base_url.trim_end_matches('/').trim_end_matches("/v1")), body)
}

/// An assistant message's blocks as they go back: the blocks it came as, in
/// their order (thinking, text and tool use interleaved as the model wrote
/// them; the signatures cover them), each `tool_use` with its call as
/// toolhost keeps it. What they do not hold (an older transcript kept only
/// the thinking; text kept from a reply that broke off has none) follows
/// as before: the text before the first call, then the calls.
fn assistant_blocks(content: &str, calls: &[ToolCall], state: &ProviderState) -> Vec<Value> {
    let mut calls_left = calls.iter();
    let mut blocks = Vec::with_capacity(state.blocks.len() + calls.len() + 1);
    let is = |block: &Value, kind: &str| block.get("type").and_then(Value::as_str) == Some(kind);
    let mut text_placed = content.is_empty() || state.blocks.iter().any(|block| is(block, "text"));
    let text = json!({ "type": "text", "text": content });
    for block in &state.blocks {
        if is(block, "tool_use") {
            if !std::mem::replace(&mut text_placed, true) {
                blocks.push(text.clone());
            }
            blocks.extend(calls_left.next().map(tool_use));
        } else if !(is(block, "text") && block.get("text").and_then(Value::as_str).is_none_or(str::is_empty)) {
            // (Anthropic refuses empty text blocks.)
            blocks.push(block.clone());
        }
    }
    if !text_placed {
        blocks.push(text);
    }
    blocks.extend(calls_left.map(tool_use));
    if blocks.is_empty() {
        blocks.push(json!({ "type": "text", "text": non_empty(content) }));
    }
    blocks
}

fn tool_use(call: &ToolCall) -> Value {
    let input = match serde_json::from_str::<Value>(&call.arguments) {
        Ok(input @ Value::Object(_)) => input,
        _ => json!({}),
    };
    json!({ "type": "tool_use", "id": call.id, "name": call.name, "input": input })
}

/// A `tool_result` block: its text, and the images the tool returned as
/// image blocks after it (Anthropic takes no audio there: audio stays the
/// text line naming it).
fn tool_result(result: &ToolResult) -> Value {
    let images: Vec<&Media> = result.media.iter().filter(|media| media.is_sendable_image()).collect();
    let content = if images.is_empty() || result.is_error {
        json!(non_empty(&result.content))
    } else {
        let mut parts = vec![json!({ "type": "text", "text": non_empty(&result.content) })];
        parts.extend(images.into_iter().map(|image| {
            json!({
                "type": "image",
                "source": { "type": "base64", "media_type": image.mime_type, "data": image.data },
            })
        }));
        Value::Array(parts)
    };
    json!({ "type": "tool_result", "tool_use_id": result.call_id, "content": content, "is_error": result.is_error })
}

/// Anthropic refuses empty text blocks.
fn non_empty(text: &str) -> &str {
    if text.is_empty() { "(empty)" } else { text }
}

fn error_event(value: &Value) -> Option<Failure> {
    if value.get("type").and_then(Value::as_str) != Some("error") {
        return None;
    }
    let message = value.pointer("/error/message").and_then(Value::as_str).unwrap_or("unknown error");
    Some(Failure::provider_error(message))
}

/// The blocks to keep in the message's state: all of them, unless they are
/// plain text alone (which the message's text gives back the same).
fn kept_blocks(blocks: Vec<Value>) -> Vec<Value> {
    let plain = |block: &Value| {
        block.get("type").and_then(Value::as_str) == Some("text")
            && block.as_object().is_some_and(|fields| fields.keys().all(|key| key == "type" || key == "text"))
    };
    if blocks.iter().all(plain) { Vec::new() } else { blocks }
}

/// The searches of Anthropic's tool search in a reply's blocks: each
/// `server_tool_use` of it, with the tools its `tool_search_tool_result`
/// referenced (none when the search failed).
fn searches(blocks: &[Value]) -> Vec<super::Searched> {
    let text = |value: &Value| value.as_str().unwrap_or_default().to_owned();
    blocks
        .iter()
        .filter(|block| block["type"] == "server_tool_use" && block["name"] == TOOL_SEARCH)
        .map(|block| {
            let id = text(&block["id"]);
            let found = blocks
                .iter()
                .find(|result| result["type"] == "tool_search_tool_result" && result["tool_use_id"] == id.as_str())
                .and_then(|result| result["content"]["tool_references"].as_array())
                .map(|references| references.iter().map(|reference| text(&reference["tool_name"])).collect())
                .unwrap_or_default();
            super::Searched { query: text(&block["input"]["query"]), id, found }
        })
        .collect()
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
    for block in blocks {
        match block.get("type").and_then(Value::as_str) {
            Some("text") => content.push_str(block.get("text").and_then(Value::as_str).unwrap_or_default()),
            Some("tool_use") => tool_calls.push(ToolCall::new(
                block.get("id").and_then(Value::as_str).unwrap_or_default(),
                block
                    .get("name")
                    .and_then(Value::as_str)
                    .ok_or_else(|| Failure::protocol("a tool_use block has no name"))?,
                block.get("input").map(Value::to_string).unwrap_or_default(),
            )),
            _ => {} // thinking and server tools' blocks go back as they came
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
    let state = ProviderState { blocks: kept_blocks(blocks.clone()), ..Default::default() };
    Ok(Reply { content, tool_calls, stop, usage, state })
}

/// A content block being assembled from stream events.
struct Block {
    index: u64,
    block: Value,
    /// `input_json_delta` pieces (tool use, server tool use), parsed into
    /// `input` at the end.
    json: String,
}

/// A streamed response.
pub(super) async fn read_stream(
    mut events: Events,
    on_text: &mut (dyn FnMut(Delta<'_>) + Send),
) -> Result<Reply, Failure> {
    let mut content = String::new();
    // Every content block, in the order it started.
    let mut blocks: Vec<Block> = Vec::new();
    let mut stop = None;
    let mut usage = TokenUsage::default();
    let mut finished = false;
    while let Some(event) = events.next().await {
        let event = event?;
        let value: Value = serde_json::from_str(&event.data)
            .map_err(|_| Failure::protocol(format!("a stream event is not JSON: `{}`", super::preview(&event.data))))?;
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
                if block.get("type").and_then(Value::as_str) == Some("text")
                    && let Some(text) = block.get("text").and_then(Value::as_str).filter(|text| !text.is_empty())
                {
                    content.push_str(text);
                    on_text(Delta::Text(text));
                }
                blocks.push(Block { index, block: block.clone(), json: String::new() });
            }
            Some("content_block_delta") => {
                let delta =
                    value.get("delta").ok_or_else(|| Failure::protocol("content_block_delta without a delta"))?;
                let block = blocks.iter_mut().rev().find(|block| block.index == index);
                match delta.get("type").and_then(Value::as_str) {
                    Some("text_delta") => {
                        let text = delta.get("text").and_then(Value::as_str).unwrap_or_default();
                        content.push_str(text);
                        on_text(Delta::Text(text));
                        if let Some(block) = block {
                            append(&mut block.block, "text", text);
                        }
                    }
                    Some("input_json_delta") => {
                        if let Some(block) = block {
                            block.json.push_str(delta.get("partial_json").and_then(Value::as_str).unwrap_or_default());
                        }
                    }
                    Some(kind @ ("thinking_delta" | "signature_delta")) => {
                        let key = if kind == "thinking_delta" { "thinking" } else { "signature" };
                        let piece = delta.get(key).and_then(Value::as_str).unwrap_or_default();
                        if key == "thinking" && !piece.is_empty() {
                            on_text(Delta::Reasoning(piece));
                        }
                        if let Some(block) = block {
                            append(&mut block.block, key, piece);
                        }
                    }
                    Some("citations_delta") => {
                        if let (Some(block), Some(citation)) = (block, delta.get("citation")) {
                            match block.block.get_mut("citations") {
                                Some(Value::Array(citations)) => citations.push(citation.clone()),
                                _ => block.block["citations"] = json!([citation]),
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
    let mut tool_calls = Vec::new();
    let blocks: Vec<Value> = blocks
        .into_iter()
        .map(|Block { mut block, json, .. }| {
            if !json.is_empty() || block.get("input").is_some() {
                let input = match serde_json::from_str::<Value>(&json) {
                    Ok(input) => input,
                    // Cut off mid-way: kept as the text it is, for the call's
                    // malformed arguments.
                    Err(_) if !json.trim().is_empty() => Value::String(json.clone()),
                    Err(_) => block.get("input").cloned().unwrap_or_else(|| json!({})),
                };
                if block.get("type").and_then(Value::as_str) == Some("tool_use") {
                    let arguments = if json.is_empty() { input.to_string() } else { json };
                    tool_calls.push(ToolCall::new(
                        block.get("id").and_then(Value::as_str).unwrap_or_default(),
                        block.get("name").and_then(Value::as_str).unwrap_or_default(),
                        arguments,
                    ));
                }
                block["input"] = input;
            }
            block
        })
        .collect();
    let stop = stop.unwrap_or_else(|| {
        StopReason::new(if tool_calls.is_empty() { StopKind::Done } else { StopKind::ToolUse }, None)
    });
    let state = ProviderState { blocks: kept_blocks(blocks), ..Default::default() };
    Ok(Reply { content, tool_calls, stop, usage, state })
}

/// Appends `piece` to the string `key` of `block` (set when missing).
fn append(block: &mut Value, key: &str, piece: &str) {
    match block.get_mut(key) {
        Some(Value::String(text)) => text.push_str(piece),
        _ => block[key] = json!(piece),
    }
}

/// Anthropic Messages, as a [`Wire`](super::wire::Wire).
pub(super) struct Messages;

impl super::wire::Wire for Messages {
    fn title(&self) -> &'static str {
        "Anthropic Messages"
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

    fn authorize(&self, request: reqwest::RequestBuilder, key: Option<&super::ApiKey>) -> reqwest::RequestBuilder {
        let request = request.header("anthropic-version", "2023-06-01");
        match key {
            Some(key) => request.header("x-api-key", key.expose()),
            None => request,
        }
    }

    fn key_variable(&self) -> &'static str {
        "ANTHROPIC_API_KEY"
    }

    fn native_search(&self) -> bool {
        true
    }

    fn searches(&self, state: &ProviderState) -> Vec<super::Searched> {
        searches(&state.blocks)
    }

    fn headers(&self, body: &Value) -> &'static [(&'static str, &'static str)] {
        let searching =
            body["tools"].as_array().is_some_and(|tools| tools.iter().any(|tool| tool["type"] == TOOL_SEARCH_TYPE));
        if searching { std::slice::from_ref(&TOOL_SEARCH_BETA) } else { &[] }
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
    use crate::model::{MediaKind, Reasoning};

    fn endpoint() -> Endpoint {
        Endpoint {
            protocol: super::super::Protocol::Anthropic,
            base_url: "http://127.0.0.1:1".into(),
            model: "m".into(),
            api_key: None,
        }
    }

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
                        media: Vec::new(),
                        source: None,
                    }],
                },
                Message::User { content: "thanks".into() },
            ],
        };
        let (url, body) = request(&endpoint(), &RequestOptions::default(), &conversation, &[]);
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
        assert_eq!(reply.stop, StopReason::new(StopKind::ToolUse, Some("tool_use")));
        assert_eq!(reply.usage, TokenUsage { input: 10, output: 5, reasoning: 0 });
    }

    #[test]
    fn accepts_every_documented_stop_reason_and_keeps_the_providers_word() {
        let cases = [
            ("end_turn", StopKind::Done),
            ("stop_sequence", StopKind::Done),
            ("tool_use", StopKind::ToolUse),
            ("pause_turn", StopKind::Paused),
            ("max_tokens", StopKind::Length),
            ("model_context_window_exceeded", StopKind::ContextWindow),
            ("refusal", StopKind::ContentFilter),
            ("compaction", StopKind::Unknown),
        ];
        for (reason, kind) in cases {
            let stop = StopReason::from_anthropic(reason);
            assert_eq!((stop.kind, stop.provider.as_deref()), (kind, Some(reason)), "{reason}");
        }
    }

    #[test]
    fn a_sampling_request_allows_no_more_than_its_limit_thinking_included() {
        let conversation = Conversation { system: None, messages: vec![Message::User { content: "hi".into() }] };
        let options = |max_tokens: u32, bounded: bool| RequestOptions {
            max_tokens: Some(max_tokens),
            reasoning: Some(Reasoning::Budget(8_192)),
            bounded,
            stream: false,
            ..RequestOptions::default()
        };
        // A 100-token request: no room for the 1,024-token minimum, no thinking.
        let (_, body) = request(&endpoint(), &options(100, true), &conversation, &[]);
        assert_eq!((body["max_tokens"].clone(), body.get("thinking")), (json!(100), None));
        // 4,000 tokens: thinking gets half, and max_tokens stays.
        let (_, body) = request(&endpoint(), &options(4_000, true), &conversation, &[]);
        assert_eq!(body["max_tokens"], json!(4_000));
        assert_eq!(body["thinking"], json!({"type": "enabled", "budget_tokens": 2_000}));
        // The loop's own requests make room for the budget above max_tokens.
        let (_, body) = request(&endpoint(), &options(4_000, false), &conversation, &[]);
        assert_eq!(
            (body["max_tokens"].clone(), body["thinking"]["budget_tokens"].clone()),
            (json!(12_288), json!(8_192))
        );
    }

    #[test]
    fn an_assistant_message_goes_back_in_its_blocks_order_with_its_calls_as_kept() {
        let thinking =
            |n: u32| json!({"type": "thinking", "thinking": format!("step {n}"), "signature": format!("sig{n}")});
        let blocks = vec![
            thinking(1),
            json!({"type": "tool_use", "id": "toolu_1", "name": "sha256", "input": {"text": "a"}}),
            thinking(2),
            json!({"type": "text", "text": ""}),
            json!({"type": "tool_use", "id": "toolu_1", "name": "echo", "input": "{\"te"}),
        ];
        // The second call's id was taken and its arguments were cut off:
        // toolhost's own id and `{}` go back in its place.
        let mut second = ToolCall::new("toolu_1_2", "echo", "{}");
        second.malformed_arguments = Some("{\"te".into());
        let calls = [ToolCall::new("toolu_1", "sha256", r#"{"text":"a"}"#), second];
        let state = ProviderState { blocks, ..Default::default() };
        assert_eq!(
            assistant_blocks("", &calls, &state),
            [
                thinking(1),
                json!({"type": "tool_use", "id": "toolu_1", "name": "sha256", "input": {"text": "a"}}),
                thinking(2),
                json!({"type": "tool_use", "id": "toolu_1_2", "name": "echo", "input": {}}),
            ]
        );
        // A message kept before blocks were: thinking first, then text and calls.
        let old: ProviderState = serde_json::from_value(json!({"thinking": [thinking(1)]})).unwrap();
        let kinds: Vec<Value> =
            assistant_blocks("Hashing.", &calls[..1], &old).iter().map(|block| block["type"].clone()).collect();
        assert_eq!(kinds, [json!("thinking"), json!("text"), json!("tool_use")]);
    }

    #[test]
    fn images_go_back_in_the_tool_result_and_audio_as_its_line() {
        let media = |kind, mime_type: &str| Media { kind, mime_type: mime_type.into(), data: "AAAA".into() };
        let result = ToolResult {
            call_id: "t1".into(),
            name: "shot".into(),
            content: "[image: image/png, 3 bytes]\n[audio: audio/wav, 3 bytes]\n[image: image/svg+xml, 3 bytes]".into(),
            is_error: false,
            media: vec![
                media(MediaKind::Image, "image/png"),
                media(MediaKind::Audio, "audio/wav"),
                media(MediaKind::Image, "image/svg+xml"),
            ],
            source: None,
        };
        assert_eq!(
            tool_result(&result),
            json!({"type": "tool_result", "tool_use_id": "t1", "is_error": false, "content": [
                {"type": "text", "text": "[image: image/png, 3 bytes]\n[audio: audio/wav, 3 bytes]\n[image: image/svg+xml, 3 bytes]"},
                {"type": "image", "source": {"type": "base64", "media_type": "image/png", "data": "AAAA"}},
            ]})
        );
    }

    #[test]
    fn rejects_answers_in_another_protocol() {
        assert!(matches!(parse_reply(&json!({"choices": []})), Err(Failure::Protocol(_))));
    }
}

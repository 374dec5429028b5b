//! The OpenAI Chat Completions protocol, as spoken by OpenAI and by
//! compatible servers (Ollama, vLLM, llama.cpp, …) with their quirks.

use super::Delta;
use super::sse::Events;
use super::{
    Conversation, Endpoint, Failure, Message, ProviderState, Reply, RequestOptions, StopKind, StopReason, TokenUsage,
    ToolCall, ToolSpec, text_of,
};
use serde_json::{Value, json};

/// The URL and body of a request.
pub(super) fn request(
    endpoint: &Endpoint,
    options: &RequestOptions,
    conversation: &Conversation,
    tools: &[ToolSpec],
) -> (String, Value) {
    let mut messages = Vec::with_capacity(conversation.messages.len() + 1);
    if let Some(system) = &conversation.system {
        messages.push(json!({ "role": "system", "content": system }));
    }
    // Reasoning goes back only within the tool loop it belongs to: on the
    // assistant messages since the last prompt (DeepSeek refuses it on older
    // turns; others ignore it there).
    let loop_start = conversation.messages.iter().rposition(|message| matches!(message, Message::User { .. }));
    for (position, message) in conversation.messages.iter().enumerate() {
        match message {
            Message::User { content } => messages.push(json!({ "role": "user", "content": content })),
            Message::Assistant { content, tool_calls, state } => {
                let mut message = json!({
                    "role": "assistant",
                    "content": if content.is_empty() && !tool_calls.is_empty() { Value::Null } else { json!(content) },
                });
                if !tool_calls.is_empty() {
                    message["tool_calls"] = tool_calls
                        .iter()
                        .map(|call| {
                            let mut entry = json!({
                                "id": call.id,
                                "type": "function",
                                "function": { "name": call.name, "arguments": call.arguments },
                            });
                            if let Some(extra) = &call.extra_content {
                                entry["extra_content"] = extra.clone();
                            }
                            entry
                        })
                        .collect();
                }
                if loop_start.is_none_or(|start| position > start) {
                    if let Some(reasoning) = &state.reasoning_content {
                        message["reasoning_content"] = json!(reasoning);
                    }
                    if let Some(reasoning) = &state.reasoning {
                        message["reasoning"] = json!(reasoning);
                    }
                    if let Some(details) = &state.reasoning_details {
                        message["reasoning_details"] = details.clone();
                    }
                }
                messages.push(message);
            }
            Message::Tool { results } => {
                for result in results {
                    let content =
                        if result.is_error { format!("Error: {}", result.content) } else { result.content.clone() };
                    messages.push(json!({ "role": "tool", "tool_call_id": result.call_id, "content": content }));
                }
            }
        }
    }
    let mut body = json!({ "model": endpoint.model, "messages": messages, "stream": options.stream });
    if options.stream {
        body["stream_options"] = json!({ "include_usage": true });
    }
    if !tools.is_empty() {
        body["tools"] = tools
            .iter()
            .map(|tool| {
                json!({
                    "type": "function",
                    "function": { "name": tool.name, "description": tool.description, "parameters": tool.schema },
                })
            })
            .collect();
    }
    if let Some(max_tokens) = options.max_tokens {
        body[token_limit_field(endpoint, options)] = json!(max_tokens);
    }
    if let Some(reasoning) = options.reasoning {
        body["reasoning_effort"] = json!(reasoning.effort());
    }
    (format!("{}/chat/completions", endpoint.base_url.trim_end_matches('/')), body)
}

/// The name of the output token limit: `max_completion_tokens` where the
/// model reasons (reasoning asked for, or an OpenAI reasoning model by its
/// name: they refuse `max_tokens`, and the limit then covers the reasoning
/// too) and at OpenAI itself, which prefers it for every model; elsewhere
/// `max_tokens`, which every compatible server reads.
fn token_limit_field(endpoint: &Endpoint, options: &RequestOptions) -> &'static str {
    let model = endpoint.model.rsplit('/').next().unwrap_or_default().to_ascii_lowercase();
    let reasoning_model = ["o1", "o3", "o4", "gpt-5"].iter().any(|prefix| {
        model.strip_prefix(prefix).is_some_and(|rest| rest.is_empty() || rest.starts_with(['-', '.', '_']))
    });
    let host = endpoint.base_url.split("://").nth(1).unwrap_or_default();
    let host = host.split(['/', ':']).next().unwrap_or_default().to_ascii_lowercase();
    let openai = host == "api.openai.com" || host.ends_with(".openai.azure.com");
    if options.reasoning.is_some() || reasoning_model || openai { "max_completion_tokens" } else { "max_tokens" }
}

fn usage(value: &Value) -> TokenUsage {
    TokenUsage {
        input: value.pointer("/usage/prompt_tokens").and_then(Value::as_u64).unwrap_or(0),
        output: value.pointer("/usage/completion_tokens").and_then(Value::as_u64).unwrap_or(0),
        reasoning: value
            .pointer("/usage/completion_tokens_details/reasoning_tokens")
            .and_then(Value::as_u64)
            .unwrap_or(0),
    }
}

/// Arguments as text: some servers send an object instead of a string.
fn arguments_text(arguments: Option<&Value>) -> String {
    match arguments {
        Some(Value::String(text)) => text.clone(),
        Some(Value::Null) | None => String::new(),
        Some(other) => other.to_string(),
    }
}

fn mid_stream_error(value: &Value) -> Option<Failure> {
    let error = value.get("error")?;
    let message = error.get("message").and_then(Value::as_str).map(str::to_owned).unwrap_or_else(|| error.to_string());
    Some(Failure::provider_error(&message))
}

/// A complete (non-streamed) response.
pub(super) fn parse_reply(value: &Value) -> Result<Reply, Failure> {
    if let Some(failure) = mid_stream_error(value) {
        return Err(failure);
    }
    let choice = value.pointer("/choices/0").ok_or_else(|| Failure::protocol("the answer has no `choices[0]`"))?;
    let message = choice.get("message").ok_or_else(|| Failure::protocol("`choices[0]` has no `message`"))?;
    let content = text_of(message.get("content"));
    let mut tool_calls = Vec::new();
    for call in message.get("tool_calls").and_then(Value::as_array).into_iter().flatten() {
        let function = call.get("function").ok_or_else(|| Failure::protocol("a tool call has no `function`"))?;
        let name =
            function.get("name").and_then(Value::as_str).ok_or_else(|| Failure::protocol("a tool call has no name"))?;
        // A missing id stays empty here: ToolCall::normalize invents one.
        let id = call.get("id").and_then(Value::as_str).unwrap_or_default();
        let mut call_made = ToolCall::new(id, name, arguments_text(function.get("arguments")));
        call_made.extra_content = call.get("extra_content").filter(|extra| !extra.is_null()).cloned();
        tool_calls.push(call_made);
    }
    let text = |key: &str| message.get(key).and_then(Value::as_str).filter(|text| !text.is_empty()).map(str::to_owned);
    let state = ProviderState {
        reasoning_content: text("reasoning_content"),
        reasoning: text("reasoning"),
        reasoning_details: message.get("reasoning_details").filter(|details| !details.is_null()).cloned(),
        ..Default::default()
    };
    let stop = match choice.get("finish_reason").and_then(Value::as_str) {
        Some(reason) => StopReason::from_openai(reason),
        None if !tool_calls.is_empty() => StopReason::new(StopKind::ToolUse, None),
        None => StopReason::new(StopKind::Done, None),
    };
    let refusal = message.get("refusal").and_then(Value::as_str).unwrap_or_default();
    let (content, stop) = refused(content, refusal, stop);
    Ok(Reply { content, tool_calls, stop, usage: usage(value), state })
}

/// A reply whose message carries a `refusal` (OpenAI, when the model
/// declines) is refused content, its text the refusal when it has no other.
fn refused(content: String, refusal: &str, stop: StopReason) -> (String, StopReason) {
    if refusal.trim().is_empty() {
        return (content, stop);
    }
    let content = if content.is_empty() { refusal.to_owned() } else { content };
    (content, StopReason::new(StopKind::ContentFilter, Some("refusal")))
}

/// Tool calls being assembled from stream chunks.
///
/// Servers differ: OpenAI sends the id once per call and continues it by
/// `index`; some send no ids at all, only indexes; some repeat the full id in
/// every chunk; some reuse index 0 for several parallel calls with different
/// ids; some send a whole call in one chunk; some give two calls one id. So:
/// an index not seen before always starts a new call; a known index continues
/// its latest call, unless the chunk names a different id (index reused). A
/// chunk without an index continues the call with its id, else the last call.
/// Missing and repeated ids are fixed later by [`ToolCall::normalize`].
#[derive(Default)]
struct Assembler {
    calls: Vec<ToolCall>,
    /// For each index seen, the position of its latest call.
    by_index: Vec<(u64, usize)>,
}

impl Assembler {
    fn add(&mut self, delta: &Value) {
        let index = delta.get("index").and_then(Value::as_u64);
        let id = delta.get("id").and_then(Value::as_str).filter(|id| !id.is_empty());
        let function = delta.get("function");
        let name = function.and_then(|f| f.get("name")).and_then(Value::as_str).unwrap_or_default();
        let arguments = arguments_text(function.and_then(|f| f.get("arguments")));

        let continued = match index {
            Some(index) => self
                .by_index
                .iter()
                .find(|(i, _)| *i == index)
                .map(|(_, position)| *position)
                .filter(|position| id.is_none_or(|id| self.calls[*position].id == id)),
            None => match id {
                Some(id) => self.calls.iter().rposition(|call| call.id == id),
                None => self.calls.len().checked_sub(1),
            },
        };
        let position = continued.unwrap_or_else(|| {
            self.calls.push(ToolCall::new(id.unwrap_or_default(), "", ""));
            self.calls.len() - 1
        });
        if let Some(index) = index {
            match self.by_index.iter_mut().find(|(i, _)| *i == index) {
                Some(entry) => entry.1 = position,
                None => self.by_index.push((index, position)),
            }
        }
        let call = &mut self.calls[position];
        if call.id.is_empty()
            && let Some(id) = id
        {
            call.id = id.to_owned();
        }
        // Some servers repeat the whole name in every chunk; others split it.
        if !name.is_empty() && call.name != name {
            call.name.push_str(name);
        }
        call.arguments.push_str(&arguments);
        if let Some(extra) = delta.get("extra_content").filter(|extra| !extra.is_null()) {
            call.extra_content = Some(extra.clone());
        }
    }
}

/// Reasoning being assembled from stream deltas.
#[derive(Default)]
struct Reasoning {
    content: String,
    reasoning: String,
    details: Vec<Value>,
}

impl Reasoning {
    /// Adds a delta's reasoning; returns its readable text (the content, else
    /// the `reasoning` field, which servers that send both repeat).
    fn add(&mut self, delta: &Value) -> Option<String> {
        let content = delta.get("reasoning_content").and_then(Value::as_str).filter(|text| !text.is_empty());
        let reasoning = delta.get("reasoning").and_then(Value::as_str).filter(|text| !text.is_empty());
        if let Some(text) = content {
            self.content.push_str(text);
        }
        if let Some(text) = reasoning {
            self.reasoning.push_str(text);
        }
        for item in delta.get("reasoning_details").and_then(Value::as_array).into_iter().flatten() {
            self.add_detail(item);
        }
        content.or(reasoning).map(str::to_owned)
    }

    /// OpenRouter streams a reasoning detail in pieces that share an
    /// `index`: their texts are joined, and later non-null fields (the
    /// signature, at the end) are kept. A piece without an index stands alone.
    fn add_detail(&mut self, item: &Value) {
        let index = item.get("index");
        let same = index.and_then(|index| self.details.iter_mut().find(|seen| seen.get("index") == Some(index)));
        let (Some(seen), Some(piece)) = (same, item.as_object()) else {
            self.details.push(item.clone());
            return;
        };
        for (key, value) in piece {
            match (seen.get_mut(key), value) {
                (Some(Value::String(text)), Value::String(more))
                    if matches!(key.as_str(), "text" | "summary" | "data") =>
                {
                    text.push_str(more)
                }
                (_, Value::Null) => {}
                (_, value) => seen[key] = value.clone(),
            }
        }
    }

    fn into_state(self) -> ProviderState {
        let some = |text: String| (!text.is_empty()).then_some(text);
        ProviderState {
            reasoning_content: some(self.content),
            reasoning: some(self.reasoning),
            reasoning_details: (!self.details.is_empty()).then(|| Value::Array(self.details)),
            ..Default::default()
        }
    }
}

/// A streamed response.
pub(super) async fn read_stream(
    mut events: Events,
    on_text: &mut (dyn FnMut(Delta<'_>) + Send),
) -> Result<Reply, Failure> {
    let mut content = String::new();
    let mut refusal = String::new();
    let mut calls = Assembler::default();
    let mut reasoning = Reasoning::default();
    let mut stop = None;
    let mut tokens = TokenUsage::default();
    let mut done = false;
    while let Some(event) = events.next().await {
        let event = event?;
        if event.data.trim() == "[DONE]" {
            done = true;
            break;
        }
        let chunk: Value = serde_json::from_str(&event.data)
            .map_err(|_| Failure::protocol(format!("a stream event is not JSON: `{}`", super::preview(&event.data))))?;
        if let Some(failure) = mid_stream_error(&chunk) {
            return Err(failure);
        }
        if chunk.get("usage").is_some_and(Value::is_object) {
            tokens = usage(&chunk);
        }
        for choice in chunk.get("choices").and_then(Value::as_array).into_iter().flatten() {
            if let Some(delta) = choice.get("delta") {
                let text = text_of(delta.get("content"));
                if !text.is_empty() {
                    content.push_str(&text);
                    on_text(Delta::Text(&text));
                }
                // A refusal streams like text: shown as it comes, as a whole one is.
                if let Some(text) = delta.get("refusal").and_then(Value::as_str).filter(|text| !text.is_empty()) {
                    refusal.push_str(text);
                    if content.is_empty() {
                        on_text(Delta::Text(text));
                    }
                }
                if let Some(thought) = reasoning.add(delta) {
                    on_text(Delta::Reasoning(&thought));
                }
                for call in delta.get("tool_calls").and_then(Value::as_array).into_iter().flatten() {
                    calls.add(call);
                }
            }
            if let Some(reason) = choice.get("finish_reason").and_then(Value::as_str) {
                stop = Some(StopReason::from_openai(reason));
            }
        }
    }
    if !done && stop.is_none() {
        return Err(events.ended_early());
    }
    let tool_calls = calls.calls;
    let stop = stop.unwrap_or_else(|| {
        StopReason::new(if tool_calls.is_empty() { StopKind::Done } else { StopKind::ToolUse }, None)
    });
    let (content, stop) = refused(content, &refusal, stop);
    Ok(Reply { content, tool_calls, stop, usage: tokens, state: reasoning.into_state() })
}

/// OpenAI Chat Completions (OpenAI, Ollama, vLLM, llama.cpp, …), as a [`Wire`](super::wire::Wire).
pub(super) struct ChatCompletions;

impl super::wire::Wire for ChatCompletions {
    fn title(&self) -> &'static str {
        "OpenAI Chat Completions"
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

    fn assemble(deltas: &[Value]) -> Vec<ToolCall> {
        let mut assembler = Assembler::default();
        for delta in deltas {
            assembler.add(delta);
        }
        assembler.calls
    }

    fn call(id: &str, name: &str, arguments: &str) -> ToolCall {
        ToolCall::new(id, name, arguments)
    }

    #[test]
    fn accepts_openai_style_chunks() {
        let calls = assemble(&[
            json!({"index":0,"id":"a","type":"function","function":{"name":"sha256","arguments":""}}),
            json!({"index":0,"function":{"arguments":"{\"te"}}),
            json!({"index":1,"id":"b","function":{"name":"echo","arguments":"{}"}}),
            json!({"index":0,"function":{"arguments":"xt\":\"x\"}"}}),
        ]);
        assert_eq!(calls, [call("a", "sha256", r#"{"text":"x"}"#), call("b", "echo", "{}")]);
    }

    #[test]
    fn accepts_the_full_id_repeated_in_every_chunk() {
        let calls = assemble(&[
            json!({"index":0,"id":"a","function":{"name":"echo","arguments":"{\"text\":"}}),
            json!({"index":0,"id":"a","function":{"name":"echo","arguments":"\"hi\"}"}}),
        ]);
        assert_eq!(calls, [call("a", "echo", r#"{"text":"hi"}"#)]);
    }

    #[test]
    fn accepts_index_zero_reused_for_parallel_calls() {
        let calls = assemble(&[
            json!({"index":0,"id":"a","function":{"name":"echo","arguments":"{\"text\":\"1\"}"}}),
            json!({"index":0,"id":"b","function":{"name":"echo","arguments":"{\"text\":"}}),
            json!({"index":0,"function":{"arguments":"\"2\"}"}}),
        ]);
        assert_eq!(calls, [call("a", "echo", r#"{"text":"1"}"#), call("b", "echo", r#"{"text":"2"}"#)]);
    }

    #[test]
    fn accepts_calls_without_ids_each_on_its_own_index() {
        let calls = assemble(&[
            json!({"index":0,"function":{"name":"echo","arguments":""}}),
            json!({"index":0,"function":{"arguments":"{\"text\":\"a\"}"}}),
            json!({"index":1,"function":{"name":"sha256","arguments":"{\"text\":"}}),
            json!({"index":2,"function":{"name":"calculate","arguments":"{}"}}),
            json!({"index":1,"function":{"arguments":"\"b\"}"}}),
        ]);
        assert_eq!(
            calls,
            [call("", "echo", r#"{"text":"a"}"#), call("", "sha256", r#"{"text":"b"}"#), call("", "calculate", "{}")]
        );
    }

    #[test]
    fn accepts_one_id_on_two_indexes_as_two_calls() {
        let calls = assemble(&[
            json!({"index":0,"id":"dup","function":{"name":"echo","arguments":"{\"text\":"}}),
            json!({"index":0,"function":{"arguments":"\"a\"}"}}),
            json!({"index":1,"id":"dup","function":{"name":"echo","arguments":"{\"text\":"}}),
            json!({"index":1,"id":"dup","function":{"arguments":"\"b\"}"}}),
        ]);
        assert_eq!(calls, [call("dup", "echo", r#"{"text":"a"}"#), call("dup", "echo", r#"{"text":"b"}"#)]);
    }

    #[test]
    fn accepts_calls_without_ids_or_with_object_arguments() {
        let reply = parse_reply(&json!({
            "choices":[{"message":{"content":null,"tool_calls":[
                {"function":{"name":"echo","arguments":{"text":"x"}}}
            ]},"finish_reason":"tool_calls"}],
            "usage":{"prompt_tokens":3,"completion_tokens":4}
        }))
        .unwrap();
        assert_eq!(reply.tool_calls, [call("", "echo", r#"{"text":"x"}"#)]);
        assert_eq!(reply.stop, StopReason::new(StopKind::ToolUse, Some("tool_calls")));
        assert_eq!(reply.usage, TokenUsage { input: 3, output: 4, reasoning: 0 });
    }

    #[test]
    fn accepts_the_finish_reasons_servers_document_and_nothing_else_as_an_answer() {
        let cases = [
            ("stop", StopKind::Done),
            ("eos", StopKind::Done),
            ("tool_calls", StopKind::ToolUse),
            ("function_call", StopKind::ToolUse),
            ("length", StopKind::Length),
            ("model_length", StopKind::ContextWindow),
            ("content_filter", StopKind::ContentFilter),
            ("insufficient_system_resource", StopKind::Unknown),
            ("error", StopKind::Unknown),
        ];
        for (reason, kind) in cases {
            let stop = StopReason::from_openai(reason);
            assert_eq!((stop.kind, stop.provider.as_deref()), (kind, Some(reason)), "{reason}");
        }
    }

    #[test]
    fn the_token_limit_is_max_completion_tokens_where_the_model_reasons_or_at_openai() {
        let field = |base_url: &str, model: &str, reasoning: bool| {
            let endpoint = Endpoint {
                protocol: super::super::Protocol::Openai,
                base_url: base_url.into(),
                model: model.into(),
                api_key: None,
            };
            let options = RequestOptions {
                max_tokens: Some(100),
                reasoning: reasoning.then_some(super::super::Reasoning::Effort(super::super::Effort::High)),
                ..RequestOptions::default()
            };
            let conversation = Conversation::default();
            let (_, body) = request(&endpoint, &options, &conversation, &[]);
            let fields: Vec<&str> = ["max_tokens", "max_completion_tokens"]
                .into_iter()
                .filter(|field| body.get(*field).is_some())
                .collect();
            assert_eq!(fields.len(), 1, "{body}");
            fields[0]
        };
        let local = "http://127.0.0.1:8000/v1";
        assert_eq!(field(local, "qwen3", false), "max_tokens");
        assert_eq!(field(local, "qwen3", true), "max_completion_tokens");
        assert_eq!(field(local, "o4-mini", false), "max_completion_tokens");
        assert_eq!(field(local, "openai/gpt-5.1", false), "max_completion_tokens");
        assert_eq!(field(local, "o3mega", false), "max_tokens", "only the names OpenAI gives");
        assert_eq!(field("https://api.openai.com/v1", "gpt-4.1", false), "max_completion_tokens");
        assert_eq!(field("https://acme.openai.azure.com/openai/v1", "gpt-4.1", false), "max_completion_tokens");
    }

    #[test]
    fn rejects_answers_in_another_protocol() {
        assert!(matches!(parse_reply(&json!({"message":"hello"})), Err(Failure::Protocol(_))));
        assert!(matches!(parse_reply(&json!({"error":{"message":"overloaded"}})), Err(Failure::Retryable { .. })));
    }
}

//! A conversation in toolhost's own, provider-neutral terms: its messages,
//! the tool calls and results they carry, what a provider needs back verbatim,
//! and the tools offered. Every protocol translates from these.

use serde::{Deserialize, Serialize};
use serde_json::Value;

/// One message of a conversation, in toolhost's own terms.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(tag = "role", rename_all = "snake_case")]
pub enum Message {
    /// What the person said.
    User {
        /// The prompt.
        content: String,
    },
    /// What the model answered, with the tools it asked to call.
    Assistant {
        /// Its text (may be empty when it only calls tools).
        content: String,
        /// The calls it made, in order.
        #[serde(default, skip_serializing_if = "Vec::is_empty")]
        tool_calls: Vec<ToolCall>,
        /// What the provider needs back verbatim (reasoning and its
        /// signatures); kept in transcripts, never shown as the answer.
        #[serde(default, skip_serializing_if = "ProviderState::is_empty")]
        state: ProviderState,
    },
    /// The results of one turn's tool calls, one per call, in call order.
    Tool {
        /// The results.
        results: Vec<ToolResult>,
    },
}

/// A tool call as the model made it.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct ToolCall {
    /// The call's id, echoed back with the result: the provider's, unless it
    /// gave none or gave the same one to two calls of a turn; then toolhost's
    /// own (see [`ToolCall::normalize`]).
    pub id: String,
    /// The tool's name.
    pub name: String,
    /// The arguments: a JSON object as text (empty means `{}`), as sent back
    /// to the provider.
    pub arguments: String,
    /// The arguments exactly as the model sent them, kept when they were not
    /// a JSON object (invalid JSON, cut off, or another kind of value); then
    /// `arguments` is `{}` and the call is not run.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub malformed_arguments: Option<String>,
    /// What an OpenAI-compatible provider attached to the call and needs
    /// back on it, verbatim: `extra_content` (Gemini's
    /// `google.thought_signature`).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub extra_content: Option<Value>,
}

/// What a provider needs back verbatim on the assistant message it came
/// with: its reasoning and the signatures over it. Without it, thinking
/// models refuse the next request of a tool loop.
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct ProviderState {
    /// Anthropic: the message's content blocks exactly as they came and in
    /// their order (`thinking` with its `signature`, `redacted_thinking`,
    /// `text`, `tool_use`, server tools' blocks, …); the message goes back
    /// as these blocks, each `tool_use` carrying its call as toolhost keeps
    /// it (see [`ToolCall::normalize`]). Transcripts written before kept
    /// only the thinking blocks, as `thinking`: read here, they go back
    /// first, then the text, then the calls.
    #[serde(default, alias = "thinking", skip_serializing_if = "Vec::is_empty")]
    pub blocks: Vec<Value>,
    /// `reasoning_content` (DeepSeek, vLLM): sent back on the assistant
    /// message within the tool loop it belongs to.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub reasoning_content: Option<String>,
    /// `reasoning` (newer vLLM, OpenRouter), likewise.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub reasoning: Option<String>,
    /// OpenRouter's `reasoning_details`, as they came.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub reasoning_details: Option<Value>,
    /// OpenAI Responses output items as they came and in their order
    /// (`reasoning` with its `encrypted_content`, `message`,
    /// `function_call`), given back as input items in that order: reasoning
    /// verbatim, messages and calls as toolhost keeps them. (Transcripts
    /// written before kept only the reasoning items here.)
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub items: Vec<Value>,
}

impl ProviderState {
    /// True when there is nothing to send back.
    pub fn is_empty(&self) -> bool {
        self == &ProviderState::default()
    }

    /// The reasoning a person may read: Anthropic's thinking text, the
    /// reasoning content, or a Responses reasoning summary.
    pub fn reasoning_text(&self) -> String {
        let thinking = self.blocks.iter().filter_map(|block| block.get("thinking").and_then(Value::as_str));
        let summaries = self
            .items
            .iter()
            .flat_map(|item| item.get("summary").and_then(Value::as_array).cloned().unwrap_or_default())
            .filter_map(|part| part.get("text").and_then(Value::as_str).map(str::to_owned));
        let mut text: String = thinking.collect();
        text.extend(summaries);
        if text.is_empty() {
            text = self.reasoning_content.clone().or_else(|| self.reasoning.clone()).unwrap_or_default();
        }
        text
    }
}

impl ToolCall {
    /// A call with `arguments` taken as they are.
    pub fn new(id: impl Into<String>, name: impl Into<String>, arguments: impl Into<String>) -> ToolCall {
        ToolCall {
            id: id.into(),
            name: name.into(),
            arguments: arguments.into(),
            malformed_arguments: None,
            extra_content: None,
        }
    }

    /// Makes one turn's calls safe to send back: every call gets an id no
    /// other call in `taken` (the ids already in the conversation) or in
    /// `calls` has, invented when the provider gave none; arguments that are
    /// not a JSON object move to `malformed_arguments` and become `{}`.
    pub fn normalize(calls: &mut [ToolCall], taken: &mut std::collections::HashSet<String>) {
        for call in calls.iter_mut() {
            if call.id.is_empty() || taken.contains(&call.id) {
                let base = if call.id.is_empty() { "toolhost_call".to_owned() } else { call.id.clone() };
                let mut n = taken.len() + 1;
                while taken.contains(&format!("{base}_{n}")) {
                    n += 1;
                }
                call.id = format!("{base}_{n}");
            }
            taken.insert(call.id.clone());
            if call.malformed_arguments.is_none() && !call.arguments.trim().is_empty() {
                let is_object = matches!(serde_json::from_str::<Value>(&call.arguments), Ok(Value::Object(_)));
                if !is_object {
                    call.malformed_arguments = Some(std::mem::replace(&mut call.arguments, "{}".to_owned()));
                }
            }
        }
    }
}

/// What goes back to the model for one call.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct ToolResult {
    /// The id of the call this answers.
    pub call_id: String,
    /// The tool's name.
    pub name: String,
    /// The output, or the reason there is none.
    pub content: String,
    /// True when `content` is an error the model should act on.
    pub is_error: bool,
    /// Images and audio the tool returned, in order. `content` names each
    /// (`[image: image/png, 70 bytes]`); a provider that takes media in a
    /// tool result gets them as well (Anthropic: images; the Responses API:
    /// images), the others only the text.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub media: Vec<Media>,
    /// Which source ran the call (`plugin NAME`, `mcp SERVER`); none when
    /// it did not run (denied, unknown tool). Kept in transcripts, not sent.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub source: Option<String>,
}

/// An image or a sound a tool returned.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct Media {
    /// Which of the two.
    pub kind: MediaKind,
    /// Its MIME type, e.g. `image/png`.
    pub mime_type: String,
    /// Its bytes, in standard base64.
    pub data: String,
}

/// What a [`Media`] is.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum MediaKind {
    /// An image.
    Image,
    /// Audio.
    Audio,
}

impl Media {
    /// An image the providers that take images in tool results accept (both
    /// Anthropic and OpenAI take PNG, JPEG, GIF and WebP).
    pub(super) fn is_sendable_image(&self) -> bool {
        self.kind == MediaKind::Image
            && matches!(self.mime_type.as_str(), "image/png" | "image/jpeg" | "image/gif" | "image/webp")
    }
}

/// A conversation: an optional system prompt and the messages so far.
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct Conversation {
    /// Instructions for the model.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub system: Option<String>,
    /// The messages, oldest first.
    pub messages: Vec<Message>,
}

/// A tool as offered to the model.
#[derive(Debug, Clone, PartialEq)]
pub struct ToolSpec {
    /// The tool's name.
    pub name: String,
    /// What it does.
    pub description: String,
    /// JSON Schema of its arguments.
    pub schema: Value,
    /// Sent for the provider's own tool search to find (deferred loading),
    /// not listed in full: only where the protocol has it
    /// (`ModelClient::native_search`).
    pub defer: bool,
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn normalize_gives_every_call_a_unique_id_and_an_object() {
        let mut taken: std::collections::HashSet<String> = ["call_0".to_owned()].into();
        let mut calls = vec![
            ToolCall::new("", "a", r#"{"x":1}"#),
            ToolCall::new("dup", "b", ""),
            ToolCall::new("dup", "c", r#"{"x": "#),
            ToolCall::new("call_0", "d", "[1]"),
            ToolCall::new("", "e", "{}"),
        ];
        ToolCall::normalize(&mut calls, &mut taken);
        let ids: Vec<&str> = calls.iter().map(|call| call.id.as_str()).collect();
        assert_eq!(ids, ["toolhost_call_2", "dup", "dup_4", "call_0_5", "toolhost_call_6"]);
        assert_eq!(taken.len(), 6);
        let arguments: Vec<(&str, Option<&str>)> =
            calls.iter().map(|call| (call.arguments.as_str(), call.malformed_arguments.as_deref())).collect();
        assert_eq!(
            arguments,
            [(r#"{"x":1}"#, None), ("", None), ("{}", Some(r#"{"x": "#)), ("{}", Some("[1]")), ("{}", None)]
        );
    }
}

//! What a model answers, in toolhost's terms: the reply, why it stopped and
//! the tokens it used; what a stream delivers on the way.

use super::{ProviderState, ToolCall, one_line};
use serde::{Deserialize, Serialize};
use serde_json::Value;
use std::fmt;

/// How a reply ended, in toolhost's terms: only [`StopKind::Done`] (and
/// [`StopKind::ToolUse`], which the loop answers) is a finished reply.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum StopKind {
    /// It finished its answer.
    Done,
    /// It wants tool results.
    ToolUse,
    /// The provider paused a long turn (Anthropic `pause_turn`): the reply,
    /// sent back as it is, lets the model go on with it.
    Paused,
    /// It hit its output token limit (`length`, `max_tokens`, `max_output_tokens`).
    Length,
    /// The conversation filled the model's context window
    /// (`model_context_window_exceeded`, Mistral's `model_length`).
    ContextWindow,
    /// The provider refused or filtered the content.
    ContentFilter,
    /// A reason toolhost does not know: the reply is not taken as an answer.
    Unknown,
}

impl StopKind {
    /// The kind's name in events (`done`, `tool_use`, `paused`, …).
    pub fn as_str(self) -> &'static str {
        match self {
            StopKind::Done => "done",
            StopKind::ToolUse => "tool_use",
            StopKind::Paused => "paused",
            StopKind::Length => "length",
            StopKind::ContextWindow => "context_window",
            StopKind::ContentFilter => "content_filter",
            StopKind::Unknown => "unknown",
        }
    }
}

/// Why the model stopped: toolhost's kind, and the provider's own word for
/// it, exactly as it came (none when the provider gave none).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct StopReason {
    /// What toolhost makes of it.
    pub kind: StopKind,
    /// The provider's reason, e.g. `end_turn`, `pause_turn`,
    /// `insufficient_system_resource`.
    pub provider: Option<String>,
}

impl StopReason {
    /// A reason of `kind` with the provider's word for it.
    pub fn new(kind: StopKind, provider: Option<&str>) -> StopReason {
        StopReason { kind, provider: provider.map(str::to_owned) }
    }

    /// A Chat Completions `finish_reason`. Besides OpenAI's own values, the
    /// ones compatible servers document: Together's `eos`, Mistral's
    /// `model_length`; anything else (DeepSeek's
    /// `insufficient_system_resource`, OpenRouter's `error`) is not an answer.
    pub(super) fn from_openai(reason: &str) -> StopReason {
        let kind = match reason {
            "stop" | "eos" | "end_turn" | "stop_sequence" => StopKind::Done,
            "tool_calls" | "function_call" => StopKind::ToolUse,
            "length" => StopKind::Length,
            "model_length" => StopKind::ContextWindow,
            "content_filter" => StopKind::ContentFilter,
            _ => StopKind::Unknown,
        };
        StopReason::new(kind, Some(reason))
    }

    /// An Anthropic `stop_reason`.
    pub(super) fn from_anthropic(reason: &str) -> StopReason {
        let kind = match reason {
            "end_turn" | "stop_sequence" => StopKind::Done,
            "tool_use" => StopKind::ToolUse,
            "pause_turn" => StopKind::Paused,
            "max_tokens" => StopKind::Length,
            "model_context_window_exceeded" => StopKind::ContextWindow,
            "refusal" => StopKind::ContentFilter,
            _ => StopKind::Unknown,
        };
        StopReason::new(kind, Some(reason))
    }

    /// The kind's name in events.
    pub fn kind_str(&self) -> &'static str {
        self.kind.as_str()
    }
}

impl fmt::Display for StopReason {
    /// `the provider said `max_tokens``, or the kind when it said nothing.
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match &self.provider {
            Some(reason) => write!(f, "the provider said `{}`", one_line(reason, 80)),
            None => write!(f, "the provider gave no reason"),
        }
    }
}

/// Tokens a request used, as reported by the provider.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Serialize)]
pub struct TokenUsage {
    /// Prompt tokens.
    pub input: u64,
    /// Completion tokens.
    pub output: u64,
    /// Of the completion tokens, those spent reasoning (when the provider
    /// says: OpenAI's `reasoning_tokens`; Anthropic counts them as output).
    pub reasoning: u64,
}

/// What a response streams: its text, or its reasoning (never the answer).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(super) enum Delta<'a> {
    Text(&'a str),
    Reasoning(&'a str),
}

/// A search the provider ran itself over the deferred tools (Anthropic's
/// tool search), read from its reply.
#[derive(Debug, Clone, PartialEq)]
pub struct Searched {
    /// The provider's id of the search.
    pub id: String,
    /// What the model searched for.
    pub query: String,
    /// The tools it found, in the provider's order.
    pub found: Vec<String>,
}

/// One model response.
#[derive(Debug, Clone, PartialEq)]
pub struct Reply {
    /// The text.
    pub content: String,
    /// The tool calls, in order.
    pub tool_calls: Vec<ToolCall>,
    /// Why it stopped.
    pub stop: StopReason,
    /// Tokens used.
    pub usage: TokenUsage,
    /// What the provider needs back with this message.
    pub state: ProviderState,
}

/// Text from a `content` that is a string, or a list of parts (`{"type":
/// "text", "text": …}`, as several OpenAI-compatible servers send); other
/// kinds of part carry no text.
pub(super) fn text_of(content: Option<&Value>) -> String {
    match content {
        Some(Value::String(text)) => text.clone(),
        Some(Value::Array(parts)) => parts
            .iter()
            .filter_map(|part| match part {
                Value::String(text) => Some(text.as_str()),
                part if matches!(part.get("type").and_then(Value::as_str), Some("text" | "output_text") | None) => {
                    part.get("text").and_then(Value::as_str)
                }
                _ => None,
            })
            .collect(),
        _ => String::new(),
    }
}

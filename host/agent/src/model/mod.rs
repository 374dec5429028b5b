//! Talking to language models: one provider-neutral conversation, three wire
//! protocols (OpenAI Chat Completions, the OpenAI Responses API and Anthropic
//! Messages), streaming and plain, with retries.
//!
//! [`ModelClient::complete`] sends a [`Conversation`] and the tools, and
//! returns the model's [`Reply`]: its text, the tool calls it made (assembled
//! from stream chunks however the server splits them), why it stopped, and
//! the tokens it used. Text is handed to a callback as it arrives.

mod anthropic;
mod openai;
mod protocol;
pub mod providers;
mod responses;
mod sse;

use rustls::pki_types::CertificateDer;
use serde::{Deserialize, Serialize};
use serde_json::Value;
use std::fmt;
use std::time::Duration;
use toolhost_runtime::limits::HumanDuration;

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
    fn is_sendable_image(&self) -> bool {
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
}

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
    fn from_openai(reason: &str) -> StopReason {
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
    fn from_anthropic(reason: &str) -> StopReason {
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

/// How much a model should reason: an effort, or a budget of tokens.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Reasoning {
    /// `minimal`, `low`, `medium` or `high`.
    Effort(Effort),
    /// A number of thinking tokens (at least 1024).
    Budget(u32),
}

/// A reasoning effort.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord)]
pub enum Effort {
    Minimal,
    Low,
    Medium,
    High,
}

impl Reasoning {
    /// The effort: as given, or for a budget the effort nearest it
    /// (≤ 2,048 tokens `low`, ≤ 8,192 `medium`, more `high`).
    pub fn effort(self) -> &'static str {
        let effort = match self {
            Reasoning::Effort(effort) => effort,
            Reasoning::Budget(tokens) if tokens <= 2_048 => Effort::Low,
            Reasoning::Budget(tokens) if tokens <= 8_192 => Effort::Medium,
            Reasoning::Budget(_) => Effort::High,
        };
        match effort {
            Effort::Minimal => "minimal",
            Effort::Low => "low",
            Effort::Medium => "medium",
            Effort::High => "high",
        }
    }

    /// The budget in tokens: as given, or for an effort `minimal` 1,024,
    /// `low` 2,048, `medium` 8,192, `high` 24,576.
    pub fn budget(self) -> u32 {
        match self {
            Reasoning::Budget(tokens) => tokens,
            Reasoning::Effort(Effort::Minimal) => 1_024,
            Reasoning::Effort(Effort::Low) => 2_048,
            Reasoning::Effort(Effort::Medium) => 8_192,
            Reasoning::Effort(Effort::High) => 24_576,
        }
    }
}

impl std::str::FromStr for Reasoning {
    type Err = String;

    fn from_str(text: &str) -> Result<Reasoning, String> {
        Ok(match text.trim() {
            "minimal" => Reasoning::Effort(Effort::Minimal),
            "low" => Reasoning::Effort(Effort::Low),
            "medium" => Reasoning::Effort(Effort::Medium),
            "high" => Reasoning::Effort(Effort::High),
            other => match other.replace('_', "").parse::<u32>() {
                Ok(tokens) if tokens >= 1_024 => Reasoning::Budget(tokens),
                _ => {
                    return Err(format!(
                        "`{text}` is not a reasoning setting: write an effort (`minimal`, `low`, `medium` or \
                         `high`) or a budget of thinking tokens of at least 1024 (e.g. `8000`)"
                    ));
                }
            },
        })
    }
}

impl<'de> Deserialize<'de> for Reasoning {
    fn deserialize<D: serde::Deserializer<'de>>(deserializer: D) -> Result<Reasoning, D::Error> {
        #[derive(Deserialize)]
        #[serde(untagged)]
        enum Written {
            Tokens(u64),
            Text(String),
        }
        let text = match Written::deserialize(deserializer)? {
            Written::Tokens(tokens) => tokens.to_string(),
            Written::Text(text) => text,
        };
        text.parse().map_err(serde::de::Error::custom)
    }
}

/// What a response streams: its text, or its reasoning (never the answer).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Delta<'a> {
    Text(&'a str),
    Reasoning(&'a str),
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
fn text_of(content: Option<&Value>) -> String {
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

/// Which wire protocol a provider speaks.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum Protocol {
    /// OpenAI Chat Completions (OpenAI, Ollama, vLLM, llama.cpp, …).
    Openai,
    /// The OpenAI Responses API (`{base_url}/responses`).
    #[serde(rename = "openai-responses")]
    OpenaiResponses,
    /// Anthropic Messages.
    Anthropic,
}

impl Protocol {
    /// The protocol's name in messages.
    fn title(self) -> &'static str {
        self.wire().title()
    }
}

/// A model API key. Never printed: `Debug` and `Display` show `***`.
#[derive(Clone, PartialEq, Eq)]
pub struct ApiKey(String);

impl ApiKey {
    /// Wraps a key.
    pub fn new(key: impl Into<String>) -> ApiKey {
        ApiKey(key.into())
    }

    fn expose(&self) -> &str {
        &self.0
    }
}

impl fmt::Debug for ApiKey {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str("ApiKey(***)")
    }
}

/// Where and how to reach a model.
#[derive(Debug, Clone)]
pub struct Endpoint {
    /// The wire protocol.
    pub protocol: Protocol,
    /// Base URL, e.g. `https://api.openai.com/v1` or `http://127.0.0.1:11434/v1`.
    pub base_url: String,
    /// The model's name at that provider, e.g. `gpt-4.1`.
    pub model: String,
    /// The key, when the provider needs one.
    pub api_key: Option<ApiKey>,
}

/// How requests are made.
#[derive(Debug, Clone)]
pub struct RequestOptions {
    /// Stream the response (server-sent events).
    pub stream: bool,
    /// How long to wait for the response to start, and between stream chunks.
    pub timeout: Duration,
    /// How many times to retry a 429, a 5xx or a dropped connection.
    pub max_retries: u32,
    /// The output token limit sent to the model (required by Anthropic).
    pub max_tokens: Option<u32>,
    /// How much the model should reason, when asked for.
    pub reasoning: Option<Reasoning>,
    /// `max_tokens` bounds everything the response may use, reasoning
    /// included (a tool's sampling request, sized by its grant): never
    /// raised to make room for thinking; a thinking budget fits inside it,
    /// or thinking is off.
    pub bounded: bool,
    /// Root certificates trusted on top of the system's (the config's `ca_file`).
    pub extra_roots: Vec<CertificateDer<'static>>,
}

impl Default for RequestOptions {
    fn default() -> Self {
        RequestOptions {
            stream: true,
            timeout: Duration::from_secs(120),
            max_retries: 4,
            max_tokens: None,
            reasoning: None,
            bounded: false,
            extra_roots: Vec::new(),
        }
    }
}

/// What a request reports while it is under way.
#[derive(Debug, Clone, PartialEq)]
pub enum Progress<'a> {
    /// Streamed text.
    Text(&'a str),
    /// Streamed reasoning (thinking, reasoning content, a reasoning summary).
    Reasoning(&'a str),
    /// An attempt failed and another follows after a wait.
    Retry(Retry),
}

/// An attempt that failed and will be made again.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Retry {
    /// What went wrong, e.g. `HTTP 429: slow down`.
    pub reason: String,
    /// How long toolhost waits before the next attempt.
    pub wait: Duration,
    /// The number of the next attempt, from 2.
    pub attempt: u32,
    /// The most attempts that will be made (`max_retries` + 1).
    pub max_attempts: u32,
}

/// Why a model request failed, after any retries.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum ModelError {
    /// 401/403: the key is missing, wrong, or lacks access.
    #[error("the model provider refused the API key (HTTP {status}): {message}. Check {hint}")]
    Auth {
        /// The HTTP status.
        status: u16,
        /// The provider's message.
        message: String,
        /// Where the key comes from.
        hint: String,
    },
    /// 404: unknown model or wrong base URL.
    #[error("the model provider answered 404 for {url}: {message}. Check the model name and the base URL")]
    NotFound {
        /// The URL requested.
        url: String,
        /// The provider's message.
        message: String,
    },
    /// Another 4xx: the request was refused.
    #[error("the model provider rejected the request (HTTP {status}): {message}")]
    Rejected {
        /// The HTTP status.
        status: u16,
        /// The provider's message.
        message: String,
    },
    /// 429 or 5xx, still failing after the retries.
    #[error("the model provider is unavailable (HTTP {status}) after {}: {message}", Attempts(*.attempts))]
    Unavailable {
        /// The last HTTP status.
        status: u16,
        /// How many requests were made.
        attempts: u32,
        /// The provider's last message.
        message: String,
    },
    /// The connection could not be made, still after the retries.
    #[error("could not reach the model at {url} after {}: {message}", Attempts(*.attempts))]
    Connection {
        /// The URL.
        url: String,
        /// How many requests were made.
        attempts: u32,
        /// What went wrong.
        message: String,
    },
    /// The model answered, but its streamed response broke off before it was
    /// complete: on every attempt, or after text was already shown (which a
    /// retry would show again, so there is none).
    #[error(
        "the model's response from {url} broke off before it was complete ({message}); {}",
        if *partial_text {
            "the text shown so far is kept in the transcript (not retried, so as not to repeat it)".to_owned()
        } else {
            format!("gave up after {}", Attempts(*attempts))
        }
    )]
    Dropped {
        /// The URL.
        url: String,
        /// How many requests were made.
        attempts: u32,
        /// What went wrong.
        message: String,
        /// Whether some text of the answer had already been streamed.
        partial_text: bool,
    },
    /// The server's TLS certificate could not be verified.
    #[error(
        "could not verify the TLS certificate of {url}: {message}. If the server uses a private or \
         company CA, name its PEM file as `ca_file` in the config"
    )]
    Certificate {
        /// The URL.
        url: String,
        /// What rustls said.
        message: String,
    },
    /// The response did not start, or stalled, within the timeout.
    #[error("the model did not answer within {}", HumanDuration(*.0))]
    Timeout(Duration),
    /// The provider reported that it could not produce the response (an
    /// OpenAI Responses `failed` status or `error` event).
    #[error("the model provider could not produce a response: {message}")]
    Failed {
        /// The provider's code and message.
        message: String,
    },
    /// The server answered, but not in the protocol expected.
    #[error("the server at {url} does not speak the {protocol} protocol: {message}")]
    Protocol {
        /// The URL.
        url: String,
        /// The protocol expected.
        protocol: &'static str,
        /// What was wrong with the answer.
        message: String,
    },
}

/// "1 attempt", "3 attempts".
struct Attempts(u32);

impl fmt::Display for Attempts {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self.0 {
            1 => f.write_str("1 attempt"),
            n => write!(f, "{n} attempts"),
        }
    }
}

/// A client for one model endpoint.
#[derive(Clone)]
pub struct ModelClient {
    endpoint: Endpoint,
    options: RequestOptions,
    http: reqwest::Client,
}

impl ModelClient {
    /// A client for `endpoint`.
    pub fn new(endpoint: Endpoint, options: RequestOptions) -> anyhow::Result<ModelClient> {
        // reqwest is built without a default TLS crypto provider (the
        // `ring` one is already in the tree); install it once per process.
        let _ = rustls::crypto::ring::default_provider().install_default();
        let mut roots = Vec::with_capacity(options.extra_roots.len());
        for root in &options.extra_roots {
            roots.push(
                reqwest::Certificate::from_der(root)
                    .map_err(|err| anyhow::anyhow!("a certificate of the CA file is not usable: {err}"))?,
            );
        }
        // Proxies come from HTTPS_PROXY, HTTP_PROXY, ALL_PROXY and NO_PROXY
        // (upper or lower case), which reqwest reads when the client is built.
        let http = reqwest::Client::builder()
            .connect_timeout(Duration::from_secs(10).min(options.timeout))
            .read_timeout(options.timeout)
            .user_agent(concat!("toolhost/", env!("CARGO_PKG_VERSION")))
            .tls_certs_merge(roots)
            .build()
            .map_err(|err| anyhow::anyhow!("could not set up the HTTP client: {err}"))?;
        Ok(ModelClient { endpoint, options, http })
    }

    /// The endpoint this client talks to.
    pub fn endpoint(&self) -> &Endpoint {
        &self.endpoint
    }

    /// This client, asking for whole responses of at most `max_tokens` (or
    /// its own limit, if lower) in all, reasoning included: for one sampling
    /// request, sized by the tool's grant. The request allows no more than
    /// that: reasoning is bounded inside it (Anthropic: a thinking budget of
    /// at most half of it, off when that is under the 1,024 minimum).
    pub fn limited(&self, max_tokens: u32) -> ModelClient {
        let mut client = self.clone();
        client.options.max_tokens = Some(client.options.max_tokens.map_or(max_tokens, |own| own.min(max_tokens)));
        client.options.stream = false;
        client.options.bounded = true;
        client
    }

    /// Sends the conversation and the tools; reports streamed text and
    /// retries to `on_progress` as they happen.
    pub async fn complete(
        &self,
        conversation: &Conversation,
        tools: &[ToolSpec],
        on_progress: &mut (dyn FnMut(Progress<'_>) + Send),
    ) -> Result<Reply, ModelError> {
        let (url, body) = self.endpoint.protocol.wire().request(&self.endpoint, &self.options, conversation, tools);
        let mut attempt = 0u32;
        loop {
            attempt += 1;
            let mut delivered = false;
            let result = self
                .attempt(&url, &body, &mut |delta: Delta<'_>| match delta {
                    Delta::Text(text) => {
                        delivered = true;
                        on_progress(Progress::Text(text));
                    }
                    Delta::Reasoning(text) => on_progress(Progress::Reasoning(text)),
                })
                .await;
            let (error, retry_after) = match &result {
                Err(Failure::Retryable { error, retry_after }) if attempt <= self.options.max_retries && !delivered => {
                    (error, *retry_after)
                }
                _ => return result.map_err(|failure| self.error(failure, attempt, &url, delivered)),
            };
            let wait = retry_after.unwrap_or_else(|| backoff(attempt));
            on_progress(Progress::Retry(Retry {
                reason: retry_reason(error),
                wait,
                attempt: attempt + 1,
                max_attempts: self.options.max_retries + 1,
            }));
            tracing::info!(attempt, wait_ms = wait.as_millis() as u64, "retrying the model request");
            tokio::time::sleep(wait).await;
        }
    }

    async fn attempt(
        &self,
        url: &str,
        body: &Value,
        on_text: &mut (dyn FnMut(Delta<'_>) + Send),
    ) -> Result<Reply, Failure> {
        let mut request = self.http.post(url).header("content-type", "application/json");
        let wire = self.endpoint.protocol.wire();
        request = wire.authorize(request, self.endpoint.api_key.as_ref());
        let send = request.body(body.to_string()).send();
        let response = match tokio::time::timeout(self.options.timeout, send).await {
            Err(_) => return Err(Failure::Timeout),
            Ok(Err(err)) => return Err(Failure::connection(url, &err)),
            Ok(Ok(response)) => response,
        };
        let status = response.status();
        if !status.is_success() {
            let retry_after = retry_after(response.headers());
            let text = response.text().await.unwrap_or_default();
            return Err(self.http_failure(url, status.as_u16(), &text, retry_after));
        }
        let is_stream = response
            .headers()
            .get("content-type")
            .and_then(|value| value.to_str().ok())
            .is_some_and(|value| value.starts_with("text/event-stream"));
        if is_stream {
            let events = sse::Events::new(url, response.bytes_stream());
            wire.read_stream(events, on_text).await
        } else {
            // The answer had begun: a failure now is a response that broke
            // off, not a connection that could not be made.
            let text = response.text().await.map_err(|err| {
                if err.is_timeout() {
                    Failure::Timeout
                } else {
                    Failure::dropped(url, format!("the connection failed while the response was read: {}", chain(&err)))
                }
            })?;
            let value: Value = serde_json::from_str(&text)
                .map_err(|_| Failure::Protocol(format!("the answer is not JSON: {}", describe_body(&text))))?;
            let reply = wire.parse_reply(&value)?;
            let reasoning = reply.state.reasoning_text();
            if !reasoning.is_empty() {
                on_text(Delta::Reasoning(&reasoning));
            }
            if !reply.content.is_empty() {
                on_text(Delta::Text(&reply.content));
            }
            Ok(reply)
        }
    }

    fn error(&self, failure: Failure, attempts: u32, url: &str, partial_text: bool) -> ModelError {
        match failure {
            Failure::Retryable { error, .. } => match error {
                ModelError::Unavailable { status, message, .. } => {
                    ModelError::Unavailable { status, attempts, message }
                }
                ModelError::Connection { url, message, .. } => ModelError::Connection { url, attempts, message },
                ModelError::Dropped { url, message, .. } => {
                    ModelError::Dropped { url, attempts, message, partial_text }
                }
                other => other,
            },
            Failure::Final(error) => error,
            Failure::Protocol(message) => {
                ModelError::Protocol { url: url.to_owned(), protocol: self.endpoint.protocol.title(), message }
            }
            Failure::Timeout => ModelError::Timeout(self.options.timeout),
        }
    }

    fn http_failure(&self, url: &str, status: u16, body: &str, retry_after: Option<Duration>) -> Failure {
        let message = error_message(body, status);
        match status {
            401 | 403 => Failure::Final(ModelError::Auth {
                status,
                message,
                hint: self.endpoint.protocol.wire().key_hint().to_owned(),
            }),
            404 => Failure::Final(ModelError::NotFound { url: url.to_owned(), message }),
            408 | 409 | 425 | 429 | 500..=599 => {
                Failure::Retryable { error: ModelError::Unavailable { status, attempts: 0, message }, retry_after }
            }
            _ => Failure::Final(ModelError::Rejected { status, message }),
        }
    }
}

/// What one attempt ended in.
#[derive(Debug)]
enum Failure {
    /// Worth another attempt.
    Retryable { error: ModelError, retry_after: Option<Duration> },
    /// Not worth another attempt.
    Final(ModelError),
    /// The answer was not in the protocol (the URL is added by the caller).
    Protocol(String),
    /// No answer (or no next chunk) within the timeout.
    Timeout,
}

impl Failure {
    fn connection(url: &str, err: &reqwest::Error) -> Failure {
        if err.is_timeout() {
            return Failure::Timeout;
        }
        // An untrusted certificate fails the same way every time: not worth a retry.
        if let Some(tls) = toolhost_runtime::tls::untrusted_certificate(err) {
            return Failure::Final(ModelError::Certificate { url: url.to_owned(), message: tls.to_string() });
        }
        // Connected, and the connection closed before the answer came: the
        // model was reached, so this is not a connection that failed.
        if err.is_request() && !err.is_connect() {
            return Failure::dropped(url, format!("the connection closed before the answer came: {}", chain(err)));
        }
        Failure::Retryable {
            error: ModelError::Connection { url: url.to_owned(), attempts: 0, message: chain(err) },
            retry_after: None,
        }
    }

    /// An answer that is not in the protocol.
    fn protocol(message: impl Into<String>) -> Failure {
        Failure::Protocol(one_line(&message.into(), 400))
    }

    /// A provider's error, in a 200 answer or in a stream: worth another attempt.
    fn provider_error(message: &str) -> Failure {
        Failure::Retryable {
            error: ModelError::Unavailable { status: 200, attempts: 0, message: one_line(message, 300) },
            retry_after: None,
        }
    }

    /// A stream that broke off before the response was complete.
    fn dropped(url: &str, message: impl Into<String>) -> Failure {
        Failure::Retryable {
            error: ModelError::Dropped {
                url: url.to_owned(),
                attempts: 0,
                message: one_line(&message.into(), 300),
                partial_text: false,
            },
            retry_after: None,
        }
    }
}

/// An error and its causes, as one line.
fn chain(err: &reqwest::Error) -> String {
    let mut message = err.to_string();
    let mut source = std::error::Error::source(err);
    while let Some(cause) = source {
        let text = cause.to_string();
        // reqwest and hyper often repeat a cause's text in its parent's.
        if !message.contains(&text) {
            message.push_str(": ");
            message.push_str(&text);
        }
        source = cause.source();
    }
    one_line(&message, 300)
}

/// What an answer that is not JSON looks like, in a few words.
fn describe_body(text: &str) -> String {
    let trimmed = text.trim_start();
    if trimmed.starts_with('<') {
        if let Some(title) = html_title(trimmed).map(|title| one_line(&title, 120)).filter(|t| !t.is_empty()) {
            return format!("it is an HTML page titled `{title}`");
        }
        if trimmed[..trimmed.floor_char_boundary(1024)].to_ascii_lowercase().contains("<html") {
            return "it is an HTML page".to_owned();
        }
    }
    if trimmed.is_empty() { "it is empty".to_owned() } else { format!("it starts with `{}`", preview(text)) }
}

/// What went wrong with an attempt that will be retried, in a few words.
fn retry_reason(error: &ModelError) -> String {
    match error {
        ModelError::Unavailable { status, message, .. } => format!("HTTP {status}: {message}"),
        ModelError::Connection { message, .. } => format!("could not connect: {message}"),
        ModelError::Dropped { message, .. } => format!("the response broke off: {message}"),
        other => other.to_string(),
    }
}

/// Exponential backoff with jitter: 0.5s, 1s, 2s, 4s, … capped at 30s.
fn backoff(attempt: u32) -> Duration {
    let base = Duration::from_millis(500).saturating_mul(1 << attempt.saturating_sub(1).min(6));
    let jitter = Duration::from_millis(u64::from(std::process::id() ^ attempt) % 250);
    (base + jitter).min(Duration::from_secs(30))
}

/// `Retry-After` (seconds) or OpenAI's `retry-after-ms`, capped at a minute.
fn retry_after(headers: &reqwest::header::HeaderMap) -> Option<Duration> {
    let header = |name: &str| headers.get(name).and_then(|value| value.to_str().ok()).map(str::trim);
    let wait = if let Some(ms) = header("retry-after-ms").and_then(|value| value.parse::<f64>().ok()) {
        Duration::from_secs_f64(ms.max(0.0) / 1_000.0)
    } else {
        Duration::from_secs_f64(header("retry-after")?.parse::<f64>().ok()?.max(0.0))
    };
    Some(wait.min(Duration::from_secs(60)))
}

/// The provider's error message from an error body, as one printable line:
/// a JSON error's message, an HTML page's `<title>` (nginx, Cloudflare and
/// load balancers answer 502s and 504s with a page of markup) or else the
/// status's name, or the start of any other text.
fn error_message(body: &str, status: u16) -> String {
    if let Ok(value) = serde_json::from_str::<Value>(body) {
        let message = value
            .pointer("/error/message")
            .or_else(|| value.get("message"))
            .or_else(|| value.get("error"))
            .or_else(|| value.get("detail"))
            .and_then(Value::as_str);
        if let Some(message) = message.filter(|message| !message.trim().is_empty()) {
            return one_line(message, 300);
        }
    }
    let text = body.trim_start();
    let head = text[..text.floor_char_boundary(1024)].to_ascii_lowercase();
    if text.starts_with('<') && ["<html", "<!doctype", "<head", "<title", "<body"].iter().any(|tag| head.contains(tag))
    {
        let title = html_title(text).map(|title| one_line(&title, 200)).filter(|title| !title.is_empty());
        return title.unwrap_or_else(|| {
            let name = reqwest::StatusCode::from_u16(status).ok().and_then(|status| status.canonical_reason());
            match name {
                Some(name) => format!("{status} {name} (an HTML page)"),
                None => format!("HTTP {status} (an HTML page)"),
            }
        });
    }
    if text.trim().is_empty() { "(no message)".to_owned() } else { one_line(text, 200) }
}

/// The text of an HTML page's `<title>`, its few common entities decoded.
fn html_title(html: &str) -> Option<String> {
    let lower = html.to_ascii_lowercase();
    let open = lower.find("<title")?;
    let start = open + lower[open..].find('>')? + 1;
    let end = start + lower[start..].find("</title")?;
    let title = html[start..end]
        .replace("&lt;", "<")
        .replace("&gt;", ">")
        .replace("&quot;", "\"")
        .replace("&#39;", "'")
        .replace("&#x27;", "'")
        .replace("&nbsp;", " ")
        .replace("&amp;", "&");
    Some(title)
}

/// `text` as one printable line of at most `max` bytes (and an ellipsis):
/// control characters, escape sequences and direction overrides dropped,
/// line breaks and runs of white space made one space.
pub(crate) fn one_line(text: &str, max: usize) -> String {
    let printable = toolhost_runtime::text::printable(text);
    let mut line = String::with_capacity(printable.len().min(max + 4));
    for word in printable.split_whitespace() {
        if !line.is_empty() {
            line.push(' ');
        }
        line.push_str(word);
        if line.len() > max {
            break;
        }
    }
    if line.len() > max {
        let cut = line.floor_char_boundary(max);
        line.truncate(cut);
        line.push('…');
    }
    line
}

fn preview(text: &str) -> String {
    one_line(text, 120)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn backoff_grows_and_is_capped() {
        assert!(backoff(1) >= Duration::from_millis(500) && backoff(1) < Duration::from_millis(750));
        assert!(backoff(3) >= Duration::from_secs(2));
        assert_eq!(backoff(30), Duration::from_secs(30));
    }

    #[test]
    fn reads_retry_after_in_seconds_or_milliseconds() {
        let mut headers = reqwest::header::HeaderMap::new();
        headers.insert("retry-after", "2".parse().unwrap());
        assert_eq!(retry_after(&headers), Some(Duration::from_secs(2)));
        headers.insert("retry-after-ms", "150".parse().unwrap());
        assert_eq!(retry_after(&headers), Some(Duration::from_millis(150)));
        let mut headers = reqwest::header::HeaderMap::new();
        headers.insert("retry-after", "Wed, 21 Oct 2015 07:28:00 GMT".parse().unwrap());
        assert_eq!(retry_after(&headers), None);
    }

    #[test]
    fn finds_the_providers_error_message() {
        assert_eq!(error_message(r#"{"error":{"message":"bad key","type":"x"}}"#, 401), "bad key");
        assert_eq!(error_message(r#"{"type":"error","error":{"type":"x","message":"overloaded"}}"#, 529), "overloaded");
        assert_eq!(
            error_message(r#"{"error":{"message":"line one\nline\ttwo \u001b[31mred"}}"#, 400),
            "line one line two [31mred"
        );
        assert_eq!(error_message("", 500), "(no message)");
        assert_eq!(error_message("upstream\nconnect error\r\n", 503), "upstream connect error");
    }

    #[test]
    fn an_html_error_page_is_its_title_or_its_status() {
        let nginx = "<html>\r\n<head><title>502 Bad Gateway</title></head>\r\n<body>\r\n<center><h1>502 Bad Gateway</h1></center>\r\n<hr><center>nginx</center>\r\n</body>\r\n</html>\r\n";
        assert_eq!(error_message(nginx, 502), "502 Bad Gateway");
        let cloudflare = "<!DOCTYPE html>\n<!--[if lt IE 7]> <html class=\"no-js ie6 oldie\" lang=\"en-US\"> <![endif]-->\n<head>\n<title>api.example.com | 502: Bad gateway</title>\n<meta charset=\"UTF-8\" />";
        assert_eq!(error_message(cloudflare, 502), "api.example.com | 502: Bad gateway");
        assert_eq!(error_message("<html><body><h1>oops</h1></body></html>", 504), "504 Gateway Timeout (an HTML page)");
        assert_eq!(error_message("<HTML><TITLE>A &amp; B</TITLE></HTML>", 500), "A & B");
    }

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

    #[test]
    fn api_keys_never_print() {
        let key = ApiKey::new("sk-secret");
        assert!(!format!("{key:?}").contains("secret"));
    }
}

//! Where and how a model is reached: the protocol a provider speaks, its key
//! (never printed), its URL, and the options of each request; what a request
//! reports while it is under way.

use super::Reasoning;
use rustls::pki_types::CertificateDer;
use serde::Deserialize;
use std::fmt;
use std::time::Duration;

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
    pub(super) fn title(self) -> &'static str {
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

    pub(super) fn expose(&self) -> &str {
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

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn api_keys_never_print() {
        let key = ApiKey::new("sk-secret");
        assert!(!format!("{key:?}").contains("secret"));
    }
}

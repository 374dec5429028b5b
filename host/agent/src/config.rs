//! The agent's part of `toolhost.toml`: `[model]` (the model and the loop
//! around it) and `[providers.NAME]` (where a provider is and how to
//! authenticate). The `toolhost` crate parses the file and hands these over.

use crate::model::{Protocol, Reasoning};
use serde::Deserialize;
use std::collections::BTreeMap;
use toolhost_runtime::limits::{ByteSize, HumanDuration};

/// `[providers.NAME]` tables, by provider name (used in `NAME/model` specs).
pub type Providers = BTreeMap<String, ProviderConfig>;

/// `[model]`: the model and the loop around it.
#[derive(Debug, Clone, Default, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct ModelConfig {
    /// `provider/model` used when `--model` is not given.
    pub default: Option<String>,
    /// A system prompt.
    pub system: Option<String>,
    /// Model turns before a run is stopped.
    pub max_turns: Option<u32>,
    /// Tool calls of one turn that run at once.
    pub max_concurrent_tools: Option<usize>,
    /// Bytes of one tool result sent back to the model (head and tail kept).
    pub output_budget: Option<ByteSize>,
    /// `auto` (default), `on` or `off`: offer a search tool instead of
    /// every tool (`auto`: when the tools' estimated tokens exceed
    /// `tool_search_threshold`).
    pub tool_search: Option<crate::SearchMode>,
    /// Estimated tokens of the tool list above which `auto` searches.
    pub tool_search_threshold: Option<usize>,
    /// Use the provider's own tool search where it has one (Anthropic),
    /// rather than the loop's (default true).
    pub tool_search_native: Option<bool>,
    /// Tools offered on every request while searching.
    #[serde(default)]
    pub always_tools: Vec<String>,
    /// Stream responses (default true).
    pub stream: Option<bool>,
    /// Time to wait for a response to start, and between streamed chunks.
    pub request_timeout: Option<HumanDuration>,
    /// Retries of a 429, 5xx or dropped connection.
    pub max_retries: Option<u32>,
    /// Output token limit sent with each request.
    pub max_tokens: Option<u32>,
    /// How much the model should reason: `minimal`, `low`, `medium`,
    /// `high`, or a budget of thinking tokens (e.g. `8000`).
    pub reasoning: Option<Reasoning>,
}

/// `[providers.NAME]`: where a provider is and how to authenticate.
#[derive(Debug, Clone, Default, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct ProviderConfig {
    /// `openai` (Chat Completions, also Ollama, vLLM, llama.cpp) or `anthropic`.
    pub protocol: Option<Protocol>,
    /// Base URL, e.g. `http://127.0.0.1:8000/v1`.
    pub base_url: Option<String>,
    /// The API key itself (prefer `api_key_env`).
    pub api_key: Option<String>,
    /// The environment variable holding the API key.
    pub api_key_env: Option<String>,
}

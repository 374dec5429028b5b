//! The loop's limits and settings ([`AgentOptions`], [`ToolSearch`]) and
//! how a run went ([`RunOutcome`]).

use crate::events::RunStatus;
use crate::model::{ModelError, StopReason, TokenUsage};

/// Limits of the loop itself.
#[derive(Debug, Clone)]
pub struct AgentOptions {
    /// Model turns before the run is stopped.
    pub max_turns: u32,
    /// Tool calls of one turn that run at once.
    pub max_concurrent_tools: usize,
    /// Bytes of one tool result sent back to the model; longer results keep
    /// their head and tail with a marker saying how much was cut.
    pub output_budget: usize,
    /// When the model is offered a search tool instead of every tool.
    pub tool_search: ToolSearch,
}

/// When and how the loop offers tool search instead of every tool.
#[derive(Debug, Clone, PartialEq)]
pub struct ToolSearch {
    /// Whether to search: `Auto` when the tools' estimated tokens exceed
    /// `threshold`.
    pub mode: SearchMode,
    /// Estimated tokens of the tool list above which `Auto` searches.
    pub threshold: usize,
    /// Tools offered on every request while searching.
    pub always: Vec<String>,
    /// How many tools found (or called) lately stay offered.
    pub recent: usize,
    /// Where the provider searches deferred tools itself (Anthropic's tool
    /// search tool), let it: every tool is sent deferred but `always`, and
    /// the loop's own search tool is not offered.
    pub native: bool,
}

/// Whether the loop offers tool search.
#[derive(Debug, Clone, Copy, PartialEq, Eq, serde::Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum SearchMode {
    /// When the tool list would be large.
    Auto,
    /// Always.
    On,
    /// Never: every tool is sent.
    Off,
}

impl ToolSearch {
    /// Default threshold: about a tenth of a 100k-token context.
    pub const DEFAULT_THRESHOLD: usize = 10_000;
    /// Default count of recent tools kept offered.
    pub const DEFAULT_RECENT: usize = 16;
}

impl Default for ToolSearch {
    fn default() -> Self {
        ToolSearch {
            mode: SearchMode::Auto,
            threshold: Self::DEFAULT_THRESHOLD,
            always: Vec::new(),
            recent: Self::DEFAULT_RECENT,
            native: true,
        }
    }
}

impl AgentOptions {
    /// Default turn limit.
    pub const DEFAULT_MAX_TURNS: u32 = 20;
    /// Default tool concurrency within a turn.
    pub const DEFAULT_MAX_CONCURRENT_TOOLS: usize = 4;
    /// Default output budget per tool result.
    pub const DEFAULT_OUTPUT_BUDGET: usize = 16 << 10;
}

impl Default for AgentOptions {
    fn default() -> Self {
        AgentOptions {
            max_turns: Self::DEFAULT_MAX_TURNS,
            max_concurrent_tools: Self::DEFAULT_MAX_CONCURRENT_TOOLS,
            output_budget: Self::DEFAULT_OUTPUT_BUDGET,
            tool_search: ToolSearch::default(),
        }
    }
}

/// How a run went.
#[derive(Debug, Clone)]
pub struct RunOutcome {
    /// How it ended.
    pub status: RunStatus,
    /// The model's last text.
    pub answer: String,
    /// Turns taken.
    pub turns: u32,
    /// Tool calls made.
    pub tool_calls: u32,
    /// Calls of a reply cut off by the token limit, which were not run.
    pub calls_not_run: u32,
    /// Tokens used over all turns.
    pub usage: TokenUsage,
    /// The model error that ended the run, if one did.
    pub error: Option<ModelError>,
    /// Why the last reply stopped (toolhost's kind and the provider's word).
    pub stop: Option<StopReason>,
}

//! The typed event stream of a run: what the model was asked and answered,
//! and what happened to every tool call. The library sends events on a
//! channel; `toolhost run --events FILE` writes them as JSON Lines.
//!
//! A run is `run_started`, then per turn `model_request`, any number of
//! `model_retry`, and `model_response` (unless the request failed or was
//! cancelled; its `stop_reason` is toolhost's kind, `provider_stop_reason`
//! the provider's own word), then the turn's tool calls, then
//! `run_finished`. A `paused` reply's turn is followed by one that
//! continues it. Every tool call has `tool_call_requested` first and
//! exactly one final event:
//!
//! - `tool_call_failed` at once, for an unknown tool or arguments that are
//!   not a JSON object (kinds `unknown_tool`, `invalid_arguments`), or for a
//!   call of a reply that was not finished (cut off by the token limit or
//!   the context window, filtered, or stopped for an unknown reason:
//!   `cut_off`); it never runs;
//! - `tool_call_denied` (policy `deny`, a person said no, nobody to ask, or
//!   Ctrl-C before it was approved);
//! - `tool_call_approved`, then `tool_call_started` when it starts, then
//!   `tool_call_completed` or `tool_call_failed` (kind `cancelled`, without
//!   `tool_call_started` when Ctrl-C came before it started);
//! - `tool_search`, for a call of the loop's own search tool (offered
//!   instead of every tool when the tool list is large): what it found;
//!   with `native`, a search the provider ran itself (Anthropic's tool
//!   search), read from its reply;
//! - `output_read`, for a call of the loop's `read_output` (offered once a
//!   result was cut to the output budget): what part of which output.

use crate::model::{StopKind, TokenUsage};
use serde::Serialize;
use std::time::{SystemTime, UNIX_EPOCH};
use toolhost_runtime::outcome::Refusal;

/// How a run ended.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
#[serde(rename_all = "snake_case")]
pub enum RunStatus {
    /// The model answered.
    Answered,
    /// The model was still calling tools when the turn limit was reached.
    MaxTurns,
    /// The model hit its output token limit.
    Length,
    /// The conversation filled the model's context window.
    ContextWindow,
    /// The provider filtered or refused the answer.
    ContentFilter,
    /// The provider ended the reply for a reason toolhost does not know
    /// (its word for it is in `provider_stop_reason`): not an answer.
    UnknownStop,
    /// The model replied with neither text nor tool calls.
    Empty,
    /// The run was cancelled (Ctrl-C).
    Cancelled,
    /// A model request failed.
    Failed,
}

/// Who let a tool call run.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
#[serde(rename_all = "snake_case")]
pub enum ApprovedBy {
    /// The tool's policy is `auto`.
    Policy,
    /// The person allowed this one call.
    UserOnce,
    /// The person allowed the tool for the rest of the session.
    UserSession,
    /// The person allowed the tool earlier in this session.
    Session,
    /// `--yes` approved it (every call whose policy is `ask`).
    YesFlag,
}

/// One thing that happened during a run.
#[derive(Debug, Clone, PartialEq, Serialize)]
#[serde(tag = "event", rename_all = "snake_case")]
pub enum Event {
    /// A run began.
    RunStarted {
        /// `provider/model`.
        model: String,
        /// How many tools the model is offered (the search tool included).
        tools: usize,
        /// How many tools it can reach only through tool search.
        #[serde(skip_serializing_if = "is_zero")]
        deferred: u64,
        /// Whose tool search finds them: `builtin` (the loop's search tool)
        /// or `native` (the provider's own, e.g. Anthropic's tool search
        /// with `defer_loading`); absent when every tool is listed.
        #[serde(skip_serializing_if = "Option::is_none")]
        search: Option<&'static str>,
    },
    /// The model read part of a cut result with the loop's `read_output`:
    /// the call's final event.
    OutputRead {
        /// The call id.
        call_id: String,
        /// The call whose whole output was read.
        of: String,
        /// Where the part read starts, in bytes.
        offset: usize,
        /// How many bytes were read.
        bytes: usize,
    },
    /// The model called the loop's search tool: the call's final event.
    ToolSearch {
        /// The call id.
        call_id: String,
        /// What it searched for.
        query: String,
        /// The tools found, best first, offered from the next request on.
        found: Vec<String>,
        /// The provider ran this search itself (its id is `call_id`).
        #[serde(skip_serializing_if = "std::ops::Not::not")]
        native: bool,
    },
    /// A request is going to the model.
    ModelRequest {
        /// The turn, from 1.
        turn: u32,
        /// Messages in the conversation.
        messages: usize,
    },
    /// Streamed text (not written to `--events` files; the response event has the totals).
    TextDelta {
        /// The new text.
        text: String,
    },
    /// Streamed reasoning: thinking, reasoning content or a reasoning
    /// summary (never part of the answer).
    ReasoningDelta {
        /// The new text.
        text: String,
    },
    /// A model request failed and is being made again after a wait.
    ModelRetry {
        /// The turn.
        turn: u32,
        /// The attempt about to be made, from 2.
        attempt: u32,
        /// The most attempts that will be made.
        max_attempts: u32,
        /// How long toolhost waits first.
        wait_ms: u64,
        /// What went wrong, e.g. `HTTP 429: slow down`.
        reason: String,
    },
    /// The model answered.
    ModelResponse {
        /// The turn.
        turn: u32,
        /// Why it stopped, in toolhost's terms: `done`, `tool_use`,
        /// `paused` (continued in the next turn), `length`,
        /// `context_window`, `content_filter` or `unknown`.
        stop_reason: StopKind,
        /// Why it stopped, in the provider's own word (`end_turn`,
        /// `pause_turn`, `insufficient_system_resource`, …), when it gave one.
        #[serde(skip_serializing_if = "Option::is_none")]
        provider_stop_reason: Option<String>,
        /// Tool calls it made.
        tool_calls: usize,
        /// Prompt tokens.
        input_tokens: u64,
        /// Completion tokens.
        output_tokens: u64,
        /// Of those, reasoning tokens (when the provider reports them).
        #[serde(skip_serializing_if = "is_zero")]
        reasoning_tokens: u64,
        /// Time from request to complete response.
        duration_ms: u64,
    },
    /// The model asked for a tool call.
    ToolCallRequested {
        /// The turn.
        turn: u32,
        /// The provider's call id.
        call_id: String,
        /// The tool.
        tool: String,
        /// The arguments as the model sent them.
        arguments: String,
    },
    /// The call may run.
    ToolCallApproved {
        /// The call id.
        call_id: String,
        /// The tool.
        tool: String,
        /// Who approved it.
        by: ApprovedBy,
    },
    /// The call may not run; the model is told why.
    ToolCallDenied {
        /// The call id.
        call_id: String,
        /// The tool.
        tool: String,
        /// Why.
        reason: String,
    },
    /// The call is starting in its sandbox.
    ToolCallStarted {
        /// The call id.
        call_id: String,
        /// The tool.
        tool: String,
        /// Which source runs it: `plugin NAME`, or `mcp SERVER` (an external server).
        source: String,
    },
    /// A running call asked the model (contract 0.2.0 sampling), and
    /// toolhost's model answered; its tokens count in the run's usage.
    ToolCallSampled {
        /// The call id.
        call_id: String,
        /// The tool.
        tool: String,
        /// The model that answered.
        model: String,
        /// Prompt tokens.
        input_tokens: u64,
        /// Completion tokens.
        output_tokens: u64,
    },
    /// A running call reported progress (contract 0.2.0 plugins; at most one
    /// report every 100 ms, and the last).
    ToolCallProgress {
        /// The call id.
        call_id: String,
        /// The tool.
        tool: String,
        /// How much is done.
        done: f64,
        /// Out of how much, when known.
        #[serde(skip_serializing_if = "Option::is_none")]
        total: Option<f64>,
        /// What is going on.
        #[serde(skip_serializing_if = "Option::is_none")]
        message: Option<String>,
    },
    /// The call produced output.
    ToolCallCompleted {
        /// The call id.
        call_id: String,
        /// The tool.
        tool: String,
        /// Fuel used.
        fuel: u64,
        /// Peak memory in bytes.
        memory_peak: u64,
        /// Wall time.
        duration_ms: f64,
        /// Bytes of output.
        output_bytes: usize,
        /// Bytes cut to fit the output budget.
        truncated_bytes: usize,
        /// What the host refused the plugin (hosts not granted, private
        /// addresses, request limits), in the order it happened.
        #[serde(skip_serializing_if = "Vec::is_empty")]
        refused: Vec<Refusal>,
    },
    /// The call failed, or could not run: kind `unknown_tool`,
    /// `invalid_arguments`, `cut_off` or `cancelled`, or an outcome kind.
    ToolCallFailed {
        /// The call id.
        call_id: String,
        /// The tool.
        tool: String,
        /// The outcome kind, e.g. `out_of_fuel`.
        kind: String,
        /// What happened.
        message: String,
        /// For kind `rate_limited`: when a call is let through again.
        #[serde(skip_serializing_if = "Option::is_none")]
        retry_after_ms: Option<u64>,
        /// Fuel used.
        fuel: u64,
        /// Peak memory in bytes.
        memory_peak: u64,
        /// Wall time.
        duration_ms: f64,
        /// What the host refused the plugin.
        #[serde(skip_serializing_if = "Vec::is_empty")]
        refused: Vec<Refusal>,
    },
    /// A run ended.
    RunFinished {
        /// How.
        status: RunStatus,
        /// The provider's word for why its last reply stopped, when the run
        /// ended on a reply.
        #[serde(skip_serializing_if = "Option::is_none")]
        provider_stop_reason: Option<String>,
        /// Model turns taken.
        turns: u32,
        /// Tool calls made.
        tool_calls: u32,
        /// Prompt tokens over all turns.
        input_tokens: u64,
        /// Completion tokens over all turns.
        output_tokens: u64,
        /// Of those, reasoning tokens (when the provider reports them).
        #[serde(skip_serializing_if = "is_zero")]
        reasoning_tokens: u64,
        /// Wall time of the whole run.
        duration_ms: u64,
    },
}

fn is_zero(value: &u64) -> bool {
    *value == 0
}

/// An event with the time it happened, as written to JSON Lines.
#[derive(Debug, Clone, Serialize)]
pub struct Record<'a> {
    /// Milliseconds since the Unix epoch.
    pub ts_ms: u64,
    /// The event.
    #[serde(flatten)]
    pub event: &'a Event,
}

impl<'a> Record<'a> {
    /// Stamps `event` with the current time.
    pub fn now(event: &'a Event) -> Record<'a> {
        let ts_ms = SystemTime::now().duration_since(UNIX_EPOCH).map(|d| d.as_millis() as u64).unwrap_or(0);
        Record { ts_ms, event }
    }
}

impl Event {
    /// Totals for a finished run.
    pub fn finished(
        status: RunStatus,
        provider_stop_reason: Option<String>,
        turns: u32,
        tool_calls: u32,
        usage: TokenUsage,
        duration_ms: u64,
    ) -> Event {
        Event::RunFinished {
            status,
            provider_stop_reason,
            turns,
            tool_calls,
            input_tokens: usage.input,
            output_tokens: usage.output,
            reasoning_tokens: usage.reasoning,
            duration_ms,
        }
    }
}

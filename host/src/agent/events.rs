//! The typed event stream of a run: what the model was asked and answered,
//! and what happened to every tool call. The library sends events on a
//! channel; `toolhost run --events FILE` writes them as JSON Lines.

use crate::agent::model::{StopReason, TokenUsage};
use crate::runtime::outcome::Refusal;
use serde::Serialize;
use std::time::{SystemTime, UNIX_EPOCH};

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
    /// The provider filtered or refused the answer.
    ContentFilter,
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
    /// `--yes` approves everything.
    Yes,
}

/// One thing that happened during a run.
#[derive(Debug, Clone, PartialEq, Serialize)]
#[serde(tag = "event", rename_all = "snake_case")]
pub enum Event {
    /// A run began.
    RunStarted {
        /// `provider/model`.
        model: String,
        /// How many tools the model is offered.
        tools: usize,
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
    /// The model answered.
    ModelResponse {
        /// The turn.
        turn: u32,
        /// Why it stopped.
        stop_reason: StopReason,
        /// Tool calls it made.
        tool_calls: usize,
        /// Prompt tokens.
        input_tokens: u64,
        /// Completion tokens.
        output_tokens: u64,
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
    /// The call failed (including unknown tools and invalid arguments).
    ToolCallFailed {
        /// The call id.
        call_id: String,
        /// The tool.
        tool: String,
        /// The outcome kind, e.g. `out_of_fuel`.
        kind: String,
        /// What happened.
        message: String,
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
        /// Model turns taken.
        turns: u32,
        /// Tool calls made.
        tool_calls: u32,
        /// Prompt tokens over all turns.
        input_tokens: u64,
        /// Completion tokens over all turns.
        output_tokens: u64,
        /// Wall time of the whole run.
        duration_ms: u64,
    },
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
    pub fn finished(status: RunStatus, turns: u32, tool_calls: u32, usage: TokenUsage, duration_ms: u64) -> Event {
        Event::RunFinished {
            status,
            turns,
            tool_calls,
            input_tokens: usage.input,
            output_tokens: usage.output,
            duration_ms,
        }
    }
}

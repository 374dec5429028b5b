//! The model loop: send the conversation and the tools, run the tool calls
//! the model makes (approved, in parallel up to a bound, each in its own
//! sandbox), send the results back, and repeat until the model answers.
//!
//! Every tool call gets exactly one result, whatever happens to it (denied,
//! unknown tool, bad arguments, a limit, a trap, cancellation), so a provider
//! never sees a call without a result.

pub mod approval;
pub mod events;
pub mod model;
pub mod transcript;

use crate::Host;
use crate::agent::approval::{ApprovalConfig, ApprovalRequest, Approver, Decision, Policy};
use crate::agent::events::{ApprovedBy, Event, RunStatus};
use crate::agent::model::{
    Conversation, Message, ModelClient, ModelError, StopReason, TokenUsage, ToolCall, ToolResult, ToolSpec,
};
use crate::catalog::Catalog;
use crate::runtime::limits::LimitOverrides;
use futures_util::StreamExt;
use std::collections::HashSet;
use std::sync::{Arc, Mutex};
use std::time::Instant;
use tokio::sync::mpsc::UnboundedSender;
use tokio_util::sync::CancellationToken;

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
    /// Tokens used over all turns.
    pub usage: TokenUsage,
    /// The model error that ended the run, if one did.
    pub error: Option<ModelError>,
}

/// Drives one model over the tools of one [`Host`].
pub struct Agent {
    host: Arc<Host>,
    client: ModelClient,
    model_name: String,
    /// The tool specs of the last catalog generation seen, rebuilt when it changes.
    specs: Mutex<(u64, Arc<Vec<ToolSpec>>)>,
    options: AgentOptions,
    approvals: ApprovalConfig,
    approver: Arc<dyn Approver>,
    allowed_for_session: Mutex<HashSet<String>>,
    events: Option<UnboundedSender<Event>>,
}

impl Agent {
    /// An agent for `host`'s tools talking to `client`, known as `model_name`
    /// (`provider/model`) in events and transcripts.
    pub fn new(
        host: Arc<Host>,
        client: ModelClient,
        model_name: impl Into<String>,
        approver: Arc<dyn Approver>,
    ) -> Agent {
        let catalog = host.catalog();
        let specs = Mutex::new((catalog.generation(), Arc::new(tool_specs(&catalog))));
        let approvals = host.config().approvals.clone();
        Agent {
            host,
            client,
            model_name: model_name.into(),
            specs,
            options: AgentOptions::default(),
            approvals,
            approver,
            allowed_for_session: Mutex::new(HashSet::new()),
            events: None,
        }
    }

    /// Sets the loop's limits.
    pub fn with_options(mut self, options: AgentOptions) -> Agent {
        self.options = options;
        self
    }

    /// Sends every [`Event`] of every run to `events`.
    pub fn with_events(mut self, events: UnboundedSender<Event>) -> Agent {
        self.events = Some(events);
        self
    }

    /// The host whose tools the agent uses.
    pub fn host(&self) -> &Arc<Host> {
        &self.host
    }

    /// `provider/model`.
    pub fn model_name(&self) -> &str {
        &self.model_name
    }

    /// The catalog snapshot for one turn and the tool specs sent with it:
    /// the turn's list and its calls agree even if a reload swaps the catalog.
    fn snapshot(&self) -> (Arc<Catalog>, Arc<Vec<ToolSpec>>) {
        let catalog = self.host.catalog();
        let mut specs = self.specs.lock().unwrap_or_else(|p| p.into_inner());
        if specs.0 != catalog.generation() {
            *specs = (catalog.generation(), Arc::new(tool_specs(&catalog)));
        }
        (catalog, specs.1.clone())
    }

    fn emit(&self, event: Event) {
        if let Some(events) = &self.events {
            let _ = events.send(event);
        }
    }

    /// Adds `prompt` to `conversation` and runs the loop until the model
    /// answers, the turn limit is reached, a request fails, or `cancel` fires.
    /// The conversation is always left valid to send again: every tool call
    /// in it has its result.
    pub async fn run(&self, conversation: &mut Conversation, prompt: &str, cancel: &CancellationToken) -> RunOutcome {
        let started = Instant::now();
        conversation.messages.push(Message::User { content: prompt.to_owned() });
        self.emit(Event::RunStarted { model: self.model_name.clone(), tools: self.snapshot().1.len() });
        let mut outcome = RunOutcome {
            status: RunStatus::MaxTurns,
            answer: String::new(),
            turns: 0,
            tool_calls: 0,
            usage: TokenUsage::default(),
            error: None,
        };
        for turn in 1..=self.options.max_turns {
            outcome.turns = turn;
            self.emit(Event::ModelRequest { turn, messages: conversation.messages.len() });
            let requested = Instant::now();
            // A server that said its tools changed is listed again first.
            for problem in self.host.refresh_servers().await {
                tracing::warn!(server = problem.server, "{}", problem.message);
            }
            let (catalog, tools) = self.snapshot();
            let mut on_text = |text: &str| self.emit(Event::TextDelta { text: text.to_owned() });
            let reply = tokio::select! {
                reply = self.client.complete(conversation, &tools, &mut on_text) => reply,
                () = cancel.cancelled() => {
                    outcome.status = RunStatus::Cancelled;
                    break;
                }
            };
            let reply = match reply {
                Ok(reply) => reply,
                Err(err) => {
                    outcome.status = RunStatus::Failed;
                    outcome.error = Some(err);
                    break;
                }
            };
            outcome.usage.input += reply.usage.input;
            outcome.usage.output += reply.usage.output;
            self.emit(Event::ModelResponse {
                turn,
                stop_reason: reply.stop.clone(),
                tool_calls: reply.tool_calls.len(),
                input_tokens: reply.usage.input,
                output_tokens: reply.usage.output,
                duration_ms: requested.elapsed().as_millis() as u64,
            });
            outcome.answer = reply.content.clone();
            let calls = reply.tool_calls.clone();
            conversation.messages.push(Message::Assistant { content: reply.content, tool_calls: reply.tool_calls });
            if calls.is_empty() {
                outcome.status = match reply.stop {
                    StopReason::Length => RunStatus::Length,
                    StopReason::ContentFilter => RunStatus::ContentFilter,
                    _ => RunStatus::Answered,
                };
                break;
            }
            outcome.tool_calls += calls.len() as u32;
            let results = self.run_calls(&catalog, turn, &calls, cancel).await;
            conversation.messages.push(Message::Tool { results });
            if cancel.is_cancelled() {
                outcome.status = RunStatus::Cancelled;
                break;
            }
        }
        self.emit(Event::finished(
            outcome.status,
            outcome.turns,
            outcome.tool_calls,
            outcome.usage,
            started.elapsed().as_millis() as u64,
        ));
        outcome
    }

    /// Approves, runs and answers one turn's calls; results in call order.
    async fn run_calls(
        &self,
        catalog: &Catalog,
        turn: u32,
        calls: &[ToolCall],
        cancel: &CancellationToken,
    ) -> Vec<ToolResult> {
        // Approvals first, one at a time, so a person is asked in order.
        let mut verdicts: Vec<Result<(), String>> = Vec::with_capacity(calls.len());
        for call in calls {
            self.emit(Event::ToolCallRequested {
                turn,
                call_id: call.id.clone(),
                tool: call.name.clone(),
                arguments: call.arguments.clone(),
            });
            let verdict = tokio::select! {
                verdict = self.approve(catalog, call) => verdict,
                () = cancel.cancelled() => Err("the run was cancelled before this call was approved".to_owned()),
            };
            match &verdict {
                Ok(Some(by)) => {
                    self.emit(Event::ToolCallApproved { call_id: call.id.clone(), tool: call.name.clone(), by: *by })
                }
                Ok(None) => {} // unknown tool: the call itself reports it
                Err(reason) => self.emit(Event::ToolCallDenied {
                    call_id: call.id.clone(),
                    tool: call.name.clone(),
                    reason: reason.clone(),
                }),
            }
            verdicts.push(verdict.map(|_| ()));
        }
        let work = futures_util::stream::iter(calls.iter().zip(verdicts))
            .map(|(call, verdict)| self.run_call(catalog, call, verdict))
            .buffered(self.options.max_concurrent_tools.max(1))
            .collect::<Vec<ToolResult>>();
        tokio::select! {
            results = work => results,
            () = cancel.cancelled() => calls
                .iter()
                .map(|call| error_result(call, "the run was cancelled before this call finished".to_owned()))
                .collect(),
        }
    }

    /// `Ok(Some(by))` to run, `Ok(None)` for an unknown tool, `Err(reason)` if denied.
    async fn approve(&self, catalog: &Catalog, call: &ToolCall) -> Result<Option<ApprovedBy>, String> {
        let Some(entry) = catalog.find(&call.name) else {
            return Ok(None);
        };
        let policy = match entry.mcp_server() {
            Some(server) => self.approvals.policy_for_server(&call.name, server.name()),
            None => self.approvals.policy_for(&call.name, entry.origin()),
        };
        match policy {
            Policy::Auto => Ok(Some(ApprovedBy::Policy)),
            Policy::Deny => Err(format!("the operator does not allow calls to `{}`", call.name)),
            Policy::Ask => {
                if self.session_allows(&call.name) {
                    return Ok(Some(ApprovedBy::Session));
                }
                let request = ApprovalRequest {
                    tool: call.name.clone(),
                    plugin: entry.source_label(),
                    arguments: call.arguments.clone(),
                    capabilities: entry.capabilities(),
                };
                match self.approver.decide(&request).await {
                    Decision::AllowOnce => Ok(Some(ApprovedBy::UserOnce)),
                    Decision::AllowSession => {
                        self.allowed_for_session.lock().unwrap_or_else(|p| p.into_inner()).insert(call.name.clone());
                        Ok(Some(ApprovedBy::UserSession))
                    }
                    Decision::Deny(reason) => Err(reason),
                }
            }
        }
    }

    fn session_allows(&self, tool: &str) -> bool {
        self.allowed_for_session.lock().unwrap_or_else(|p| p.into_inner()).contains(tool)
    }

    async fn run_call(&self, catalog: &Catalog, call: &ToolCall, verdict: Result<(), String>) -> ToolResult {
        if let Err(reason) = verdict {
            return error_result(call, format!("denied: {reason}"));
        }
        let source = catalog.find(&call.name).map(|entry| entry.source_label());
        self.emit(Event::ToolCallStarted {
            call_id: call.id.clone(),
            tool: call.name.clone(),
            source: source.clone().unwrap_or_default(),
        });
        let report = self.host.call_in(catalog, &call.name, &call.arguments, &LimitOverrides::default()).await;
        let duration_ms = report.usage.wall.as_secs_f64() * 1_000.0;
        // The model is told what the host refused, so it does not retry blindly.
        let refusals: String =
            report.refused.iter().map(|refusal| format!("\n[toolhost refused: {refusal}]")).collect();
        match report.outcome {
            Ok(output) => {
                let (mut content, truncated_bytes) = cut_to_budget(output.as_str(), self.options.output_budget);
                content.push_str(&refusals);
                self.emit(Event::ToolCallCompleted {
                    call_id: call.id.clone(),
                    tool: call.name.clone(),
                    fuel: report.usage.fuel,
                    memory_peak: report.usage.memory_peak,
                    duration_ms,
                    output_bytes: output.as_str().len(),
                    truncated_bytes,
                    refused: report.refused,
                });
                ToolResult { call_id: call.id.clone(), name: call.name.clone(), content, is_error: false, source }
            }
            Err(err) => {
                let message = err.to_string();
                self.emit(Event::ToolCallFailed {
                    call_id: call.id.clone(),
                    tool: call.name.clone(),
                    kind: err.kind().to_owned(),
                    message: message.clone(),
                    fuel: report.usage.fuel,
                    memory_peak: report.usage.memory_peak,
                    duration_ms,
                    refused: report.refused,
                });
                let (mut content, _) = cut_to_budget(&message, self.options.output_budget);
                content.push_str(&refusals);
                ToolResult { source, ..error_result(call, content) }
            }
        }
    }
}

fn tool_specs(catalog: &Catalog) -> Vec<ToolSpec> {
    catalog
        .tools()
        .iter()
        .map(|entry| ToolSpec {
            name: entry.name().to_owned(),
            description: entry.description().to_owned(),
            schema: entry.schema().clone(),
        })
        .collect()
}

fn error_result(call: &ToolCall, content: String) -> ToolResult {
    ToolResult { call_id: call.id.clone(), name: call.name.clone(), content, is_error: true, source: None }
}

/// `text` if it fits in `budget` bytes, else its head and tail around a
/// marker saying how much was cut; and the number of bytes cut.
pub fn cut_to_budget(text: &str, budget: usize) -> (String, usize) {
    if text.len() <= budget {
        return (text.to_owned(), 0);
    }
    let keep = budget.saturating_sub(64);
    let head_end = text.floor_char_boundary(keep / 2);
    let tail_start = text.ceil_char_boundary(text.len() - (keep - keep / 2));
    let cut = tail_start - head_end;
    (format!("{}\n[… {cut} bytes cut …]\n{}", &text[..head_end], &text[tail_start..]), cut)
}

#[cfg(test)]
mod tests {
    use super::cut_to_budget;

    #[test]
    fn short_outputs_are_kept_whole() {
        assert_eq!(cut_to_budget("hello", 100), ("hello".to_owned(), 0));
    }

    #[test]
    fn long_outputs_keep_head_and_tail_with_a_marker() {
        let text = format!("{}{}{}", "a".repeat(500), "b".repeat(1000), "c".repeat(500));
        let (cut, removed) = cut_to_budget(&text, 264);
        assert!(cut.starts_with("aaaa") && cut.ends_with("cccc"), "{cut}");
        assert!(cut.contains(&format!("[… {removed} bytes cut …]")));
        assert_eq!(removed, 2000 - 200);
        assert!(cut.len() <= 264);
    }

    #[test]
    fn cuts_on_character_boundaries() {
        let text = "é".repeat(1000);
        let (cut, _) = cut_to_budget(&text, 101);
        assert!(cut.starts_with('é') && cut.ends_with('é'));
    }
}

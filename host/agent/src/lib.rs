//! The model loop: send the conversation and the tools, run the tool calls
//! the model makes (approved, in parallel up to a bound, each in its own
//! sandbox), send the results back, and repeat until the model answers.
//!
//! Every tool call gets exactly one result, whatever happens to it (denied,
//! unknown tool, bad arguments, a limit, a trap, cancellation), so a provider
//! never sees a call without a result.

pub mod approval;
pub mod asking;
mod calls;
pub mod config;
pub mod events;
pub mod model;
mod offered;
mod options;
pub mod providers;
mod results;
pub mod search;
pub mod transcript;
use calls::requested;
use offered::{Kept, Tools};
pub use options::{AgentOptions, RunOutcome, SearchMode, ToolSearch};
pub use results::cut_to_budget;
use results::{cut_marked, error_result, failed_before_running, malformed, media_of, text_result};

use crate::approval::{ApprovalConfig, Approver};
use crate::events::{Event, RunStatus};
use crate::model::{
    Conversation, Message, ModelClient, Progress, StopKind, StopReason, TokenUsage, ToolCall, ToolResult,
};
use std::collections::HashSet;
use std::sync::{Arc, Mutex};
use std::time::Instant;
use tokio::sync::mpsc::UnboundedSender;
use tokio_util::sync::CancellationToken;
use toolhost_catalog::Host;

/// Drives one model over the tools of one [`Host`].
pub struct Agent {
    host: Arc<Host>,
    client: ModelClient,
    model_name: String,
    /// The tools of the last catalog generation seen, rebuilt when it changes.
    specs: Mutex<(u64, Arc<Tools>)>,
    /// Tools the model found (or called) while searching, oldest first.
    found: Mutex<Vec<String>>,
    /// Whole outputs of calls whose result was cut to the budget, by call
    /// id, oldest first, for the loop's `read_output`.
    kept: Mutex<Kept>,
    options: AgentOptions,
    approvals: ApprovalConfig,
    approver: Arc<dyn Approver>,
    allowed_for_session: Mutex<HashSet<String>>,
    events: Option<UnboundedSender<Event>>,
    /// Who answers a tool's elicitation and roots questions (the terminal).
    person: Option<Arc<dyn toolhost_runtime::ask::Asker>>,
    /// Tokens the model spent answering tools' sampling requests, not yet
    /// counted in a run's usage.
    sampled: Arc<Mutex<TokenUsage>>,
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
        let specs = Mutex::new((catalog.generation(), Arc::new(Tools::new(&catalog))));
        let approvals = host.config().approvals.clone();
        Agent {
            host,
            client,
            model_name: model_name.into(),
            specs,
            found: Mutex::new(Vec::new()),
            kept: Mutex::new(Kept::default()),
            options: AgentOptions::default(),
            approvals,
            approver,
            allowed_for_session: Mutex::new(HashSet::new()),
            events: None,
            person: None,
            sampled: Arc::new(Mutex::new(TokenUsage::default())),
        }
    }

    /// Lets `person` answer what tools ask the user, and their roots
    /// questions; without one, elicitation is declined and the roots are the
    /// working folder. Sampling is always answered by the agent's model.
    pub fn with_person(mut self, person: Arc<dyn toolhost_runtime::ask::Asker>) -> Agent {
        self.person = Some(person);
        self
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
        use tracing::field::Empty;
        let span = tracing::info_span!(
            "run",
            model = %self.model_name,
            status = Empty,
            turns = Empty,
            tool_calls = Empty,
            input_tokens = Empty,
            output_tokens = Empty,
        );
        let outcome =
            tracing::Instrument::instrument(self.run_spanned(conversation, prompt, cancel), span.clone()).await;
        if !span.is_disabled() {
            let number = |value: u64| i64::try_from(value).unwrap_or(i64::MAX);
            span.record("status", format!("{:?}", outcome.status).to_lowercase());
            span.record("turns", i64::from(outcome.turns));
            span.record("tool_calls", i64::from(outcome.tool_calls));
            span.record("input_tokens", number(outcome.usage.input));
            span.record("output_tokens", number(outcome.usage.output));
        }
        outcome
    }

    async fn run_spanned(
        &self,
        conversation: &mut Conversation,
        prompt: &str,
        cancel: &CancellationToken,
    ) -> RunOutcome {
        let started = Instant::now();
        conversation.messages.push(Message::User { content: prompt.to_owned() });
        let tools = self.snapshot().1;
        let offered = self.offered(&tools);
        // Offered: what the model sees listed, a search tool included.
        let (search, listed, deferred) = if !self.searching(&tools) {
            (None, offered.len(), 0)
        } else if self.searching_natively(&tools) {
            let deferred = offered.iter().filter(|spec| spec.defer).count();
            (Some("native"), offered.len() - deferred + 1, deferred)
        } else {
            (Some("builtin"), offered.len(), tools.specs.len().saturating_sub(offered.len().saturating_sub(1)))
        };
        self.emit(Event::RunStarted {
            model: self.model_name.clone(),
            tools: listed,
            deferred: deferred as u64,
            search,
        });
        let mut outcome = RunOutcome {
            status: RunStatus::MaxTurns,
            answer: String::new(),
            turns: 0,
            tool_calls: 0,
            calls_not_run: 0,
            usage: TokenUsage::default(),
            error: None,
            stop: None,
        };
        // Whether the last reply was paused, so the next one continues it.
        let mut continuing = false;
        // Call ids already in the conversation: a new call never reuses one.
        let mut taken: HashSet<String> = conversation
            .messages
            .iter()
            .flat_map(|message| match message {
                Message::Assistant { tool_calls, .. } => tool_calls.as_slice(),
                _ => &[],
            })
            .map(|call| call.id.clone())
            .collect();
        for turn in 1..=self.options.max_turns {
            outcome.turns = turn;
            self.emit(Event::ModelRequest { turn, messages: conversation.messages.len() });
            let requested = Instant::now();
            // A server that said its tools changed is listed again first.
            for problem in self.host.refresh_servers().await {
                tracing::warn!(server = problem.server, "{}", problem.message);
            }
            let (catalog, all) = self.snapshot();
            let tools = self.offered(&all);
            // The text shown so far, kept if the response breaks off or is cancelled.
            let mut shown = String::new();
            let mut on_progress = |progress: Progress<'_>| match progress {
                Progress::Text(text) => {
                    shown.push_str(text);
                    self.emit(Event::TextDelta { text: text.to_owned() });
                }
                Progress::Reasoning(text) => self.emit(Event::ReasoningDelta { text: text.to_owned() }),
                Progress::Retry(retry) => self.emit(Event::ModelRetry {
                    turn,
                    attempt: retry.attempt,
                    max_attempts: retry.max_attempts,
                    wait_ms: retry.wait.as_millis() as u64,
                    reason: retry.reason,
                }),
            };
            let turn_span = tracing::info_span!(
                "model_turn",
                turn,
                input_tokens = tracing::field::Empty,
                output_tokens = tracing::field::Empty,
            );
            let request = tracing::Instrument::instrument(
                self.client.complete(conversation, &tools, &mut on_progress),
                turn_span.clone(),
            );
            let reply = tokio::select! {
                biased;
                () = cancel.cancelled() => None,
                reply = request => Some(reply),
            };
            if let Some(Ok(reply)) = &reply {
                turn_span.record("input_tokens", i64::try_from(reply.usage.input).unwrap_or(i64::MAX));
                turn_span.record("output_tokens", i64::try_from(reply.usage.output).unwrap_or(i64::MAX));
            }
            let reply = match reply {
                Some(Ok(reply)) => reply,
                failed => {
                    if !shown.is_empty() {
                        outcome.answer.clone_from(&shown);
                        conversation.messages.push(Message::Assistant {
                            content: shown,
                            tool_calls: Vec::new(),
                            state: Default::default(),
                        });
                    }
                    match failed {
                        Some(Err(err)) => {
                            outcome.status = RunStatus::Failed;
                            outcome.error = Some(err);
                        }
                        _ => outcome.status = RunStatus::Cancelled,
                    }
                    break;
                }
            };
            outcome.usage.input += reply.usage.input;
            outcome.usage.output += reply.usage.output;
            outcome.usage.reasoning += reply.usage.reasoning;
            // Searches the provider ran itself are said like the loop's own.
            for searched in self.client.searches(&reply) {
                self.emit(Event::ToolSearch {
                    call_id: searched.id,
                    query: searched.query,
                    found: searched.found,
                    native: true,
                });
            }
            let mut calls = reply.tool_calls;
            ToolCall::normalize(&mut calls, &mut taken);
            self.emit(Event::ModelResponse {
                turn,
                stop_reason: reply.stop.kind,
                provider_stop_reason: reply.stop.provider.clone(),
                tool_calls: calls.len(),
                input_tokens: reply.usage.input,
                output_tokens: reply.usage.output,
                reasoning_tokens: reply.usage.reasoning,
                duration_ms: requested.elapsed().as_millis() as u64,
            });
            // A paused turn goes on in the next request: its text so far is
            // part of the answer.
            if continuing {
                outcome.answer.push_str(&reply.content);
            } else {
                outcome.answer.clone_from(&reply.content);
            }
            let kind = reply.stop.kind;
            outcome.stop = Some(reply.stop);
            continuing = kind == StopKind::Paused;
            conversation.messages.push(Message::Assistant {
                content: reply.content,
                tool_calls: calls.clone(),
                state: reply.state,
            });
            if calls.is_empty() {
                outcome.status = match kind {
                    // Sent back as it is, the reply goes on (Anthropic's
                    // `pause_turn`): the next turn continues it.
                    StopKind::Paused => continue,
                    StopKind::Done | StopKind::ToolUse if outcome.answer.trim().is_empty() => RunStatus::Empty,
                    StopKind::Done | StopKind::ToolUse => RunStatus::Answered,
                    StopKind::Length => RunStatus::Length,
                    StopKind::ContextWindow => RunStatus::ContextWindow,
                    StopKind::ContentFilter => RunStatus::ContentFilter,
                    StopKind::Unknown => RunStatus::UnknownStop,
                };
                break;
            }
            outcome.tool_calls += calls.len() as u32;
            let unfinished = match kind {
                StopKind::Done | StopKind::ToolUse | StopKind::Paused => None,
                StopKind::Length => Some(RunStatus::Length),
                StopKind::ContextWindow => Some(RunStatus::ContextWindow),
                StopKind::ContentFilter => Some(RunStatus::ContentFilter),
                StopKind::Unknown => Some(RunStatus::UnknownStop),
            };
            if let Some(status) = unfinished {
                // The reply was not finished, so its last call may be
                // incomplete and the turn cannot go on: none of its calls
                // runs, and each is told why.
                let stop = outcome.stop.clone().unwrap_or_else(|| StopReason::new(kind, None));
                let results = calls.iter().map(|call| self.not_run(turn, call, &stop)).collect();
                conversation.messages.push(Message::Tool { results });
                outcome.calls_not_run = calls.len() as u32;
                outcome.status = status;
                break;
            }
            let results = self.run_calls(&catalog, &all, turn, &calls, cancel).await;
            conversation.messages.push(Message::Tool { results });
            if cancel.is_cancelled() {
                outcome.status = RunStatus::Cancelled;
                break;
            }
        }
        // What tools' sampling requests cost counts in the run's usage.
        let sampled = std::mem::take(&mut *self.sampled.lock().unwrap_or_else(|p| p.into_inner()));
        outcome.usage.input += sampled.input;
        outcome.usage.output += sampled.output;
        outcome.usage.reasoning += sampled.reasoning;
        // A run that ended on a reply says what the provider said of it.
        let ended_on_reply = !matches!(outcome.status, RunStatus::Failed | RunStatus::Cancelled);
        let provider_stop_reason =
            outcome.stop.as_ref().filter(|_| ended_on_reply).and_then(|stop| stop.provider.clone());
        self.emit(Event::finished(
            outcome.status,
            provider_stop_reason,
            outcome.turns,
            outcome.tool_calls,
            outcome.usage,
            started.elapsed().as_millis() as u64,
        ));
        outcome
    }

    /// The result of a call in a reply that was not finished (cut off by
    /// the token limit, the context window, a filter, or for a reason
    /// toolhost does not know): `stop` says which.
    fn not_run(&self, turn: u32, call: &ToolCall, stop: &StopReason) -> ToolResult {
        self.emit(requested(turn, call));
        let why = match stop.kind {
            StopKind::Length => "the reply was cut off by the output token limit",
            StopKind::ContextWindow => "the reply was cut off: the conversation filled the model's context window",
            StopKind::ContentFilter => "the reply was stopped by the provider's content filter",
            _ => "the reply was not finished",
        };
        let message = format!("not run: {why} ({stop}), so this call may be incomplete; no call of that reply was run");
        self.emit(failed_before_running(call, "cut_off", &message));
        error_result(call, message)
    }
}

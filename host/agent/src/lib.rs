//! The model loop: send the conversation and the tools, run the tool calls
//! the model makes (approved, in parallel up to a bound, each in its own
//! sandbox), send the results back, and repeat until the model answers.
//!
//! Every tool call gets exactly one result, whatever happens to it (denied,
//! unknown tool, bad arguments, a limit, a trap, cancellation), so a provider
//! never sees a call without a result.

pub mod approval;
pub mod asking;
pub mod config;
pub mod events;
pub mod model;
pub mod search;
pub mod transcript;

use crate::approval::{ApprovalConfig, ApprovalRequest, Approver, Decision, Policy};
use crate::events::{ApprovedBy, Event, RunStatus};
use crate::model::{
    Conversation, Media, MediaKind, Message, ModelClient, ModelError, Progress, StopKind, StopReason, TokenUsage,
    ToolCall, ToolResult, ToolSpec,
};
use futures_util::{FutureExt, StreamExt};
use std::collections::HashSet;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, Mutex};
use std::time::Instant;
use tokio::sync::mpsc::UnboundedSender;
use tokio_util::sync::CancellationToken;
use toolhost_catalog::Host;
use toolhost_catalog::{Catalog, Entry};
use toolhost_runtime::limits::LimitOverrides;

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

    /// The catalog snapshot for one turn and its tools: the turn's list and
    /// its calls agree even if a reload swaps the catalog.
    fn snapshot(&self) -> (Arc<Catalog>, Arc<Tools>) {
        let catalog = self.host.catalog();
        let mut specs = self.specs.lock().unwrap_or_else(|p| p.into_inner());
        if specs.0 != catalog.generation() {
            *specs = (catalog.generation(), Arc::new(Tools::new(&catalog)));
        }
        (catalog, specs.1.clone())
    }

    /// Whether this turn offers search rather than every tool.
    fn searching(&self, tools: &Tools) -> bool {
        match self.options.tool_search.mode {
            SearchMode::On => true,
            SearchMode::Off => false,
            SearchMode::Auto => tools.tokens > self.options.tool_search.threshold,
        }
    }

    /// The tools sent with one request: every tool, or while searching the
    /// search tool, the `always` ones and those found lately.
    fn offered(&self, tools: &Tools) -> Arc<Vec<ToolSpec>> {
        let searching = self.searching(tools);
        // Once a result was cut, the rest of it can be read.
        let readable = !self.kept.lock().unwrap_or_else(|p| p.into_inner()).outputs.is_empty();
        if !searching && !readable {
            // The common case: the generation's list as it is, not copied per turn.
            return tools.specs.clone();
        }
        let mut offered = if searching {
            let found = self.found.lock().unwrap_or_else(|p| p.into_inner());
            let wanted =
                |spec: &&ToolSpec| self.options.tool_search.always.contains(&spec.name) || found.contains(&spec.name);
            let mut offered = vec![tools.search_spec()];
            offered.extend(tools.specs.iter().filter(wanted).cloned());
            offered
        } else {
            tools.specs.as_ref().clone()
        };
        if readable {
            offered.push(tools.read_spec());
        }
        Arc::new(offered)
    }

    /// Answers a call of `read_output`: a slice of a cut result's whole output.
    fn read_output(&self, call: &ToolCall) -> ToolResult {
        let arguments: serde_json::Value = serde_json::from_str(&call.arguments).unwrap_or_default();
        let of = arguments.get("call_id").and_then(serde_json::Value::as_str).unwrap_or_default();
        let offset = arguments.get("offset").and_then(serde_json::Value::as_u64).unwrap_or(0) as usize;
        let kept = self.kept.lock().unwrap_or_else(|p| p.into_inner());
        let Some((_, text)) = kept.outputs.iter().find(|(id, _)| id == of) else {
            let message = format!(
                "no cut output is kept for call `{of}`: `call_id` must be the id of a call whose result said bytes \
                 were cut"
            );
            self.emit(failed_before_running(call, "invalid_arguments", &message));
            return error_result(call, message);
        };
        let budget = self.options.output_budget.saturating_sub(96).max(1);
        let start = text.floor_char_boundary(offset.min(text.len()));
        let end = text.floor_char_boundary(start.saturating_add(budget).min(text.len()));
        let end = if end == start { text.ceil_char_boundary((start + 1).min(text.len())) } else { end };
        let mut content = text[start..end].to_owned();
        if end < text.len() {
            content.push_str(&format!("\n[… {} more bytes: read_output with offset {end} …]", text.len() - end));
        }
        self.emit(Event::OutputRead { call_id: call.id.clone(), of: of.to_owned(), offset: start, bytes: end - start });
        text_result(call, content)
    }

    /// Keeps `names` offered while searching, as the most recent.
    fn remember(&self, names: impl IntoIterator<Item = String>) {
        let mut found = self.found.lock().unwrap_or_else(|p| p.into_inner());
        for name in names {
            found.retain(|known| *known != name);
            found.push(name);
        }
        let keep = self.options.tool_search.recent;
        if found.len() > keep {
            let extra = found.len() - keep;
            found.drain(..extra);
        }
    }

    /// Answers a call of the search tool: the tools that match its query,
    /// which are offered from the next request on.
    fn search(&self, tools: &Tools, call: &ToolCall) -> ToolResult {
        let arguments: serde_json::Value = serde_json::from_str(&call.arguments).unwrap_or_default();
        let query = arguments.get("query").and_then(serde_json::Value::as_str).unwrap_or_default();
        let limit = arguments.get("limit").and_then(serde_json::Value::as_u64).unwrap_or(5).clamp(1, 20);
        if query.trim().is_empty() {
            let message = "`query` must be a non-empty string: words of what the tool should do".to_owned();
            self.emit(failed_before_running(call, "invalid_arguments", &message));
            return error_result(call, message);
        }
        let hits: Vec<&ToolSpec> =
            tools.index.search(query, limit as usize).into_iter().map(|i| &tools.specs[i]).collect();
        let names: Vec<String> = hits.iter().map(|spec| spec.name.clone()).collect();
        self.remember(names.iter().cloned());
        self.emit(Event::ToolSearch { call_id: call.id.clone(), query: query.to_owned(), found: names });
        let listed: Vec<serde_json::Value> = hits
            .iter()
            .map(|spec| {
                let arguments: Vec<&String> = spec
                    .schema
                    .get("properties")
                    .and_then(serde_json::Value::as_object)
                    .map(|properties| properties.keys().collect())
                    .unwrap_or_default();
                serde_json::json!({"name": spec.name, "description": spec.description, "arguments": arguments})
            })
            .collect();
        let content = if listed.is_empty() {
            format!("No tool matches `{query}`. Try other words for what the tool should do.")
        } else {
            format!(
                "{} tool(s) found; they can be called from your next message on:\n{}",
                listed.len(),
                serde_json::Value::Array(listed)
            )
        };
        let (content, _) = cut_to_budget(&content, self.options.output_budget);
        text_result(call, content)
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
        let offered = self.offered(&tools).len();
        self.emit(Event::RunStarted {
            model: self.model_name.clone(),
            tools: offered,
            deferred: tools.specs.len().saturating_sub(offered.saturating_sub(usize::from(self.searching(&tools))))
                as u64,
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

    /// Checks, approves, runs and answers one turn's calls; results in call order.
    ///
    /// Events per call: `tool_call_requested`, then exactly one of
    /// `tool_call_failed` (unknown tool or malformed arguments: never asked
    /// about, never run), `tool_call_denied`, or `tool_call_approved`
    /// followed by `tool_call_started` (once it runs) and `tool_call_completed`
    /// or `tool_call_failed` (`cancelled` when Ctrl-C came first).
    async fn run_calls(
        &self,
        catalog: &Catalog,
        tools: &Tools,
        turn: u32,
        calls: &[ToolCall],
        cancel: &CancellationToken,
    ) -> Vec<ToolResult> {
        let mut results: Vec<Option<ToolResult>> = vec![None; calls.len()];
        let mut approved: Vec<usize> = Vec::with_capacity(calls.len());
        // Approvals first, one at a time, so a person is asked in order.
        for (i, call) in calls.iter().enumerate() {
            self.emit(requested(turn, call));
            // The loop's own tools (their names are ones no tool has).
            if call.name == tools.search_name && catalog.find(&call.name).is_none() {
                results[i] = Some(self.search(tools, call));
                continue;
            }
            if call.name == tools.read_name && catalog.find(&call.name).is_none() {
                results[i] = Some(self.read_output(call));
                continue;
            }
            let Some(entry) = catalog.find(&call.name) else {
                let report = self.host.call_in(catalog, &call.name, "{}", &LimitOverrides::default()).await;
                let message = report.outcome.err().map(|err| err.to_string()).unwrap_or_default();
                self.emit(failed_before_running(call, "unknown_tool", &message));
                results[i] = Some(error_result(call, message));
                continue;
            };
            if let Some(original) = &call.malformed_arguments {
                let message = malformed(original);
                self.emit(failed_before_running(call, "invalid_arguments", &message));
                results[i] = Some(error_result(call, message));
                continue;
            }
            let verdict = tokio::select! {
                biased;
                () = cancel.cancelled() => Err("the run was cancelled before this call was approved".to_owned()),
                verdict = self.approve(call, entry) => verdict,
            };
            match verdict {
                Ok(by) => {
                    self.emit(Event::ToolCallApproved { call_id: call.id.clone(), tool: call.name.clone(), by });
                    // A tool called while searching stays offered, as a found one does.
                    if self.searching(tools) {
                        self.remember([call.name.clone()]);
                    }
                    approved.push(i);
                }
                Err(reason) => {
                    self.emit(Event::ToolCallDenied {
                        call_id: call.id.clone(),
                        tool: call.name.clone(),
                        reason: reason.clone(),
                    });
                    results[i] = Some(error_result(call, format!("denied: {reason}")));
                }
            }
        }
        let started: Vec<AtomicBool> = calls.iter().map(|_| AtomicBool::new(false)).collect();
        if !cancel.is_cancelled() {
            let mut work = futures_util::stream::iter(approved.iter().copied())
                .map(|i| {
                    let started = &started[i];
                    async move { (i, self.run_call(catalog, &calls[i], started).await) }
                })
                .buffer_unordered(self.options.max_concurrent_tools.max(1));
            loop {
                tokio::select! {
                    biased;
                    () = cancel.cancelled() => {
                        // Keep whatever finished at the same moment.
                        while let Some(Some((i, result))) = work.next().now_or_never() {
                            results[i] = Some(result);
                        }
                        break;
                    }
                    next = work.next() => match next {
                        Some((i, result)) => results[i] = Some(result),
                        None => break,
                    },
                }
            }
        }
        // Only cancellation leaves an approved call without a result.
        for i in approved {
            if results[i].is_none() {
                let call = &calls[i];
                let message = if started[i].load(Ordering::SeqCst) {
                    "cancelled: the run was cancelled while this call was running"
                } else {
                    "cancelled: the run was cancelled before this call started"
                };
                self.emit(failed_before_running(call, "cancelled", message));
                results[i] = Some(error_result(call, message.to_owned()));
            }
        }
        results
            .into_iter()
            .zip(calls)
            .map(|(result, call)| result.unwrap_or_else(|| error_result(call, "cancelled".to_owned())))
            .collect()
    }

    /// `Ok(by)` to run, `Err(reason)` if denied.
    async fn approve(&self, call: &ToolCall, entry: &Entry) -> Result<ApprovedBy, String> {
        let policy = match entry.mcp_server() {
            Some(server) => self.approvals.policy_for_server(&call.name, server.name()),
            None => self.approvals.policy_for(&call.name, entry.origin()),
        };
        match policy {
            Policy::Auto => Ok(ApprovedBy::Policy),
            Policy::Deny => Err(format!("the operator does not allow calls to `{}`", call.name)),
            Policy::Ask => {
                if self.session_allows(&call.name) {
                    return Ok(ApprovedBy::Session);
                }
                let request = ApprovalRequest {
                    tool: call.name.clone(),
                    plugin: entry.source_label(),
                    arguments: call.arguments.clone(),
                    capabilities: entry.capabilities(),
                };
                match self.approver.decide(&request).await {
                    Decision::AllowOnce => Ok(ApprovedBy::UserOnce),
                    Decision::AllowSession => {
                        self.allowed_for_session.lock().unwrap_or_else(|p| p.into_inner()).insert(call.name.clone());
                        Ok(ApprovedBy::UserSession)
                    }
                    Decision::AllowAll => Ok(ApprovedBy::YesFlag),
                    Decision::Deny(reason) => Err(reason),
                }
            }
        }
    }

    fn session_allows(&self, tool: &str) -> bool {
        self.allowed_for_session.lock().unwrap_or_else(|p| p.into_inner()).contains(tool)
    }

    async fn run_call(&self, catalog: &Catalog, call: &ToolCall, started: &AtomicBool) -> ToolResult {
        started.store(true, Ordering::SeqCst);
        let source = catalog.find(&call.name).map(|entry| entry.source_label());
        self.emit(Event::ToolCallStarted {
            call_id: call.id.clone(),
            tool: call.name.clone(),
            source: source.clone().unwrap_or_default(),
        });
        let progress = self.events.clone().map(|events| {
            let (call_id, tool) = (call.id.clone(), call.name.clone());
            Arc::new(move |progress: toolhost_runtime::sandbox::Progress| {
                let _ = events.send(Event::ToolCallProgress {
                    call_id: call_id.clone(),
                    tool: tool.clone(),
                    done: progress.done,
                    total: progress.total,
                    message: progress.message,
                });
            }) as toolhost_runtime::sandbox::ProgressObserver
        });
        // Sampling is answered by the run's own model, counted in its usage.
        let on_sampled: asking::OnSampled = {
            let (events, sampled) = (self.events.clone(), self.sampled.clone());
            let (call_id, tool) = (call.id.clone(), call.name.clone());
            Arc::new(move |model: &str, usage: &TokenUsage| {
                let mut total = sampled.lock().unwrap_or_else(|p| p.into_inner());
                total.input += usage.input;
                total.output += usage.output;
                total.reasoning += usage.reasoning;
                if let Some(events) = &events {
                    let _ = events.send(Event::ToolCallSampled {
                        call_id: call_id.clone(),
                        tool: tool.clone(),
                        model: model.to_owned(),
                        input_tokens: usage.input,
                        output_tokens: usage.output,
                    });
                }
            })
        };
        let asker = asking::ModelAsker {
            model: Some(self.client.clone()),
            why_no_model: String::new(),
            person: self.person.clone(),
            on_sampled: Some(on_sampled),
        };
        let hooks = toolhost_runtime::sandbox::CallHooks { progress, asker: Some(Arc::new(asker)) };
        let overrides = LimitOverrides::default();
        let caller = toolhost_catalog::Caller::on("agent");
        let report = self.host.call_as(catalog, &call.name, &call.arguments, &overrides, hooks, &caller).await;
        let duration_ms = report.usage.wall.as_secs_f64() * 1_000.0;
        // The model is told what the host refused, so it does not retry blindly.
        let refusals: String =
            report.refused.iter().map(|refusal| format!("\n[toolhost refused: {refusal}]")).collect();
        match report.outcome {
            Ok(output) => {
                let whole = output.as_str();
                let (mut content, truncated_bytes) = cut_to_budget(&whole, self.options.output_budget);
                if truncated_bytes > 0 {
                    // The whole output is kept, and the marker says how to read what was cut.
                    let from = cut_points(&whole, self.options.output_budget).map_or(0, |(head_end, _)| head_end);
                    content = content.replacen(
                        &format!("[… {truncated_bytes} bytes cut …]"),
                        &format!(
                            "[… {truncated_bytes} bytes cut: read_output with {{\"call_id\": \"{}\", \"offset\": {from}}} reads them …]",
                            call.id
                        ),
                        1,
                    );
                    self.kept.lock().unwrap_or_else(|p| p.into_inner()).keep(call.id.clone(), whole.into_owned());
                }
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
                ToolResult {
                    call_id: call.id.clone(),
                    name: call.name.clone(),
                    content,
                    is_error: false,
                    media: media_of(&output),
                    source,
                }
            }
            Err(err) => {
                let message = err.to_string();
                self.emit(Event::ToolCallFailed {
                    call_id: call.id.clone(),
                    tool: call.name.clone(),
                    kind: err.kind().to_owned(),
                    message: message.clone(),
                    retry_after_ms: err.retry_after().map(|wait| wait.as_millis() as u64),
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

/// One catalog generation's tools as the loop offers them.
struct Tools {
    specs: Arc<Vec<ToolSpec>>,
    /// Their estimated tokens, all together.
    tokens: usize,
    index: search::Index,
    /// The search tool's name: `search_tools`, unless a tool has it.
    search_name: String,
    /// The cut-output reader's: `read_output`, unless a tool has it.
    read_name: String,
}

/// Whole outputs of cut results, oldest first, at most `Kept::BYTES` in all.
#[derive(Default)]
struct Kept {
    outputs: std::collections::VecDeque<(String, String)>,
    bytes: usize,
}

impl Kept {
    /// What is kept at most, in bytes: older outputs make room.
    const BYTES: usize = 32 << 20;

    fn keep(&mut self, call_id: String, text: String) {
        if text.len() > Self::BYTES {
            return;
        }
        self.bytes += text.len();
        self.outputs.push_back((call_id, text));
        while self.bytes > Self::BYTES {
            let Some((_, old)) = self.outputs.pop_front() else { break };
            self.bytes -= old.len();
        }
    }
}

impl Tools {
    fn new(catalog: &Catalog) -> Tools {
        let specs: Vec<ToolSpec> = catalog
            .tools()
            .iter()
            .map(|entry| ToolSpec {
                name: entry.name().to_owned(),
                description: entry.description().to_owned(),
                schema: entry.schema().clone(),
            })
            .collect();
        let own_name = |name: &str| {
            let mut name = name.to_owned();
            while catalog.find(&name).is_some() {
                name.insert_str(0, "toolhost_");
            }
            name
        };
        let search_name = own_name("search_tools");
        let read_name = own_name("read_output");
        Tools {
            tokens: specs.iter().map(search::estimated_tokens).sum(),
            index: search::Index::new(&specs),
            specs: Arc::new(specs),
            search_name,
            read_name,
        }
    }

    /// The cut-output reader as the model sees it.
    fn read_spec(&self) -> ToolSpec {
        ToolSpec {
            name: self.read_name.clone(),
            description: "Reads the part of a tool's result that was cut to fit the context, from the call id and \
                          offset its marker gives."
                .to_owned(),
            schema: serde_json::json!({
                "type": "object",
                "properties": {
                    "call_id": {"type": "string", "description": "The id of the call whose result was cut."},
                    "offset": {"type": "integer", "minimum": 0, "description": "The byte offset to read from."}
                },
                "required": ["call_id", "offset"],
                "additionalProperties": false
            }),
        }
    }

    /// The search tool as the model sees it.
    fn search_spec(&self) -> ToolSpec {
        ToolSpec {
            name: self.search_name.clone(),
            description: format!(
                "Finds tools by what they do. {} tools are available but not listed; describe the task in a few \
                 words, and the tools found can be called from your next message on.",
                self.specs.len()
            ),
            schema: serde_json::json!({
                "type": "object",
                "properties": {
                    "query": {"type": "string", "description": "Words for what the tool should do, e.g. `weather forecast city`."},
                    "limit": {"type": "integer", "minimum": 1, "maximum": 20, "description": "How many tools to return (default 5)."}
                },
                "required": ["query"],
                "additionalProperties": false
            }),
        }
    }
}

fn requested(turn: u32, call: &ToolCall) -> Event {
    Event::ToolCallRequested {
        turn,
        call_id: call.id.clone(),
        tool: call.name.clone(),
        arguments: call.malformed_arguments.clone().unwrap_or_else(|| call.arguments.clone()),
    }
}

/// `tool_call_failed` for a call that never ran.
fn failed_before_running(call: &ToolCall, kind: &str, message: &str) -> Event {
    Event::ToolCallFailed {
        call_id: call.id.clone(),
        tool: call.name.clone(),
        kind: kind.to_owned(),
        message: message.to_owned(),
        retry_after_ms: None,
        fuel: 0,
        memory_peak: 0,
        duration_ms: 0.0,
        refused: Vec::new(),
    }
}

/// The result for a call whose arguments were not a JSON object.
fn malformed(original: &str) -> String {
    let what = match serde_json::from_str::<serde_json::Value>(original) {
        Err(err) => format!("they are not valid JSON ({err})"),
        Ok(value) => format!("they are JSON {}, not an object", json_kind(&value)),
    };
    format!(
        "the call was malformed and was not run: {what}. Send the arguments as one JSON object that matches \
         the tool's input schema"
    )
}

fn json_kind(value: &serde_json::Value) -> &'static str {
    match value {
        serde_json::Value::Null => "null",
        serde_json::Value::Bool(_) => "a boolean",
        serde_json::Value::Number(_) => "a number",
        serde_json::Value::String(_) => "a string",
        serde_json::Value::Array(_) => "an array",
        serde_json::Value::Object(_) => "an object",
    }
}

/// The answer `content` to `call`, from the loop itself (no media, no source).
fn text_result(call: &ToolCall, content: String) -> ToolResult {
    ToolResult {
        call_id: call.id.clone(),
        name: call.name.clone(),
        content,
        is_error: false,
        media: Vec::new(),
        source: None,
    }
}

fn error_result(call: &ToolCall, content: String) -> ToolResult {
    ToolResult { is_error: true, ..text_result(call, content) }
}

/// The images and audio of a tool's output, for the providers that take
/// them in a tool result (the text names each as well).
fn media_of(output: &toolhost_runtime::outcome::ToolOutput) -> Vec<Media> {
    use base64::Engine as _;
    use toolhost_runtime::content::Content;
    let toolhost_runtime::outcome::ToolOutput::Content(blocks) = output else { return Vec::new() };
    blocks
        .iter()
        .filter_map(|block| {
            let (kind, mime_type, data) = match &block.content {
                Content::Image { mime_type, data } => (MediaKind::Image, mime_type, data),
                Content::Audio { mime_type, data } => (MediaKind::Audio, mime_type, data),
                _ => return None,
            };
            let data = base64::engine::general_purpose::STANDARD.encode(data);
            Some(Media { kind, mime_type: mime_type.clone(), data })
        })
        .collect()
}

/// `text` if it fits in `budget` bytes, else its head and tail around a
/// marker saying how much was cut; and the number of bytes cut.
pub fn cut_to_budget(text: &str, budget: usize) -> (String, usize) {
    match cut_points(text, budget) {
        None => (text.to_owned(), 0),
        Some((head_end, tail_start)) => {
            let cut = tail_start - head_end;
            (format!("{}\n[… {cut} bytes cut …]\n{}", &text[..head_end], &text[tail_start..]), cut)
        }
    }
}

/// Where [`cut_to_budget`] cuts `text`: the end of the head it keeps and
/// the start of the tail; none when it fits.
fn cut_points(text: &str, budget: usize) -> Option<(usize, usize)> {
    if text.len() <= budget {
        return None;
    }
    let keep = budget.saturating_sub(64);
    let head_end = text.floor_char_boundary(keep / 2);
    let tail_start = text.ceil_char_boundary(text.len() - (keep - keep / 2));
    Some((head_end, tail_start))
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

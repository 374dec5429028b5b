//! Running one turn's tool calls: each is checked, approved, run in its
//! sandbox (in parallel up to a bound) and answered exactly once, whatever
//! happens to it; the events each call emits.

use super::{Agent, Tools, cut_marked, cut_to_budget, error_result, failed_before_running, malformed, media_of};
use crate::approval::{ApprovalRequest, Decision, Policy};
use crate::asking;
use crate::events::{ApprovedBy, Event};
use crate::model::{TokenUsage, ToolCall, ToolResult};
use futures_util::{FutureExt, StreamExt};
use std::sync::Arc;
use std::sync::atomic::{AtomicBool, Ordering};
use tokio_util::sync::CancellationToken;
use toolhost_catalog::{Catalog, Entry};
use toolhost_runtime::limits::LimitOverrides;
use toolhost_runtime::outcome::{CallError, CallReport};

impl Agent {
    /// Checks, approves, runs and answers one turn's calls; results in call order.
    ///
    /// Events per call: `tool_call_requested`, then exactly one of
    /// `tool_call_failed` (unknown tool or malformed arguments: never asked
    /// about, never run), `tool_call_denied`, or `tool_call_approved`
    /// followed by `tool_call_started` (once it runs) and `tool_call_completed`
    /// or `tool_call_failed` (`cancelled` when Ctrl-C came first).
    pub(crate) async fn run_calls(
        &self,
        catalog: &Arc<Catalog>,
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

    async fn run_call(&self, catalog: &Arc<Catalog>, call: &ToolCall, started: &AtomicBool) -> ToolResult {
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
        let hooks = toolhost_runtime::sandbox::CallHooks { progress, asker: Some(Arc::new(asker)), result_shape: None };
        // The call runs as a task of its own: a guest computes inside the
        // poll of the task that awaits it, so calls awaited together by this
        // one task would take turns on one worker thread however many cores
        // there are. Dropping this future (the run cancelled) aborts the task.
        // It keeps the run's span, so its `tool_call` span stays under `run`.
        let task = tokio_util::task::AbortOnDropHandle::new(tokio::spawn({
            let (host, catalog) = (self.host.clone(), Arc::clone(catalog));
            let (name, arguments) = (call.name.clone(), call.arguments.clone());
            let call = async move {
                let caller = toolhost_catalog::Caller::on("agent");
                host.call_as(&catalog, &name, &arguments, &LimitOverrides::default(), hooks, &caller).await
            };
            tracing::Instrument::in_current_span(call)
        }));
        let report = match task.await {
            Ok(report) => report,
            Err(err) if err.is_panic() => std::panic::resume_unwind(err.into_panic()),
            // Only the runtime shutting down cancels the task while it is awaited.
            Err(_) => CallReport::rejected(&call.name, None, CallError::Host("the host is shutting down".to_owned())),
        };
        let duration_ms = report.usage.wall.as_secs_f64() * 1_000.0;
        // The model is told what the host refused, so it does not retry
        // blindly; those lines count against the budget too (half of it at most).
        let refusals: String =
            report.refused.iter().map(|refusal| format!("\n[toolhost refused: {refusal}]")).collect();
        let (refusals, _) = cut_to_budget(&refusals, self.options.output_budget / 2);
        let room = self.options.output_budget - refusals.len();
        match report.outcome {
            Ok(output) => {
                let whole = output.as_str();
                // The whole output is kept, and the marker says how to read what was cut.
                let cut = cut_marked(&whole, room, |removed, from| {
                    format!(
                        "[… {removed} bytes cut: read_output with {{\"call_id\": \"{}\", \"offset\": {from}}} reads them …]",
                        call.id
                    )
                });
                let (mut content, truncated_bytes) = (cut.content, cut.removed);
                if truncated_bytes > 0 {
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
                let (mut content, _) = cut_to_budget(&message, room);
                content.push_str(&refusals);
                ToolResult { source, ..error_result(call, content) }
            }
        }
    }
}

pub(crate) fn requested(turn: u32, call: &ToolCall) -> Event {
    Event::ToolCallRequested {
        turn,
        call_id: call.id.clone(),
        tool: call.name.clone(),
        arguments: call.malformed_arguments.clone().unwrap_or_else(|| call.arguments.clone()),
    }
}

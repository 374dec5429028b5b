//! One task ([`Task`]): who made it and owns it, its status and result, the
//! questions it waits on, and how it is shown on the wire.

use super::iso8601;
use crate::caller::Owner;
use rmcp::ErrorData;
use rmcp::model::{DetailedTask, InputRequests, InputResponses, JsonObject, TaskPayload};
use serde_json::{Value, json};
use std::collections::{BTreeMap, BTreeSet};
use std::pin::Pin;
use std::sync::{Mutex, MutexGuard};
use std::time::{Duration, Instant, SystemTime};
use tokio::sync::Notify;
use tokio_util::sync::CancellationToken;
use toolhost_runtime::ask::Question;
use toolhost_runtime::text::quoted;

/// Which protocol made a task, and so how it is shown and answered.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum TaskKind {
    /// SEP-2663 (`io.modelcontextprotocol/tasks`): polled with `tasks/get`,
    /// questions answered with `tasks/update`.
    Extension,
    /// MCP 2025-11-25's experimental tasks (a `task` param on `tools/call`):
    /// the result comes from `tasks/result`, questions go to the client as
    /// requests while one is open. Owned by its session too.
    Experimental,
}

/// One task: a call running (or done) in this process.
pub struct Task {
    pub id: String,
    /// The tool called, and its plugin or server (for the OAuth scope check).
    pub tool: String,
    pub origin: String,
    pub kind: TaskKind,
    /// Who started it: only they see it.
    pub owner: Owner,
    pub(super) created_at: String,
    pub(super) expires: Instant,
    pub(super) ttl: Duration,
    pub(super) poll_interval: Duration,
    /// Cancelled by `tasks/cancel` or expiry: the call's future is dropped, so the guest stops.
    pub cancel: CancellationToken,
    /// Woken when answers arrive, questions are asked, or the task ends.
    pub(super) wake: Notify,
    pub(super) state: Mutex<State>,
}

impl std::fmt::Debug for Task {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Task").field("id", &self.id).field("tool", &self.tool).finish_non_exhaustive()
    }
}

#[derive(Default)]
pub(super) struct State {
    pub(super) status: Status,
    pub(super) updated_at: String,
    pub(super) message: Option<String>,
    /// Questions the client is to answer, by key.
    pub(super) pending: BTreeMap<String, Pending>,
    /// Answers given (or the client's error) and not yet passed to the call.
    pub(super) answers: BTreeMap<String, Result<Value, String>>,
    /// Pending questions out to the client now, as requests on a
    /// `tasks/result` stream (2025-11-25).
    pub(super) sent: BTreeSet<String>,
    /// Every key ever asked: a key is never used twice in a task.
    pub(super) keys: BTreeSet<String>,
}

pub(super) struct Pending {
    pub(super) request: Value,
    pub(super) question: Question,
}

#[derive(Default)]
pub(super) enum Status {
    #[default]
    Working,
    InputRequired,
    Completed(JsonObject),
    Failed(JsonObject),
    Cancelled,
}

impl Status {
    pub(super) fn terminal(&self) -> bool {
        matches!(self, Status::Completed(_) | Status::Failed(_) | Status::Cancelled)
    }

    /// The word MCP 2025-11-25 uses (a tool result with `isError` is `failed`).
    pub(super) fn experimental(&self) -> &'static str {
        match self {
            Status::Working => "working",
            Status::InputRequired => "input_required",
            Status::Completed(result) if is_error(result) => "failed",
            Status::Completed(_) => "completed",
            Status::Failed(_) => "failed",
            Status::Cancelled => "cancelled",
        }
    }
}

/// How a task ended.
pub enum Outcome {
    /// The tool's result (`isError` included).
    Completed(JsonObject),
    /// The JSON-RPC error the request would have got.
    Failed(ErrorData),
}

impl Task {
    pub(super) fn state(&self) -> MutexGuard<'_, State> {
        self.state.lock().unwrap_or_else(|p| p.into_inner())
    }

    pub(super) fn touch(state: &mut State) {
        state.updated_at = iso8601(SystemTime::now());
    }

    /// The task as `tasks/get` (and `CreateTaskResult`) show it.
    pub fn detailed(&self) -> DetailedTask {
        let state = self.state();
        let mut task = rmcp::model::Task::new(
            self.id.clone(),
            rmcp::model::TaskStatus::Working,
            self.created_at.clone(),
            state.updated_at.clone(),
        )
        .with_ttl_ms(u64::try_from(self.ttl.as_millis()).unwrap_or(u64::MAX))
        .with_poll_interval_ms(u64::try_from(self.poll_interval.as_millis()).unwrap_or(u64::MAX).max(1));
        if let Some(message) = &state.message {
            task = task.with_status_message(message.clone());
        }
        let payload = match &state.status {
            Status::InputRequired if !state.pending.is_empty() => {
                let requests: Value =
                    state.pending.iter().map(|(key, pending)| (key.clone(), pending.request.clone())).collect();
                match serde_json::from_value::<InputRequests>(requests) {
                    Ok(input_requests) => TaskPayload::InputRequired { input_requests },
                    Err(_) => TaskPayload::Working,
                }
            }
            Status::Working | Status::InputRequired => TaskPayload::Working,
            Status::Completed(result) => TaskPayload::Completed { result: result.clone() },
            Status::Failed(error) => TaskPayload::Failed { error: error.clone() },
            Status::Cancelled => TaskPayload::Cancelled,
        };
        DetailedTask::new(task, payload)
    }

    /// How long the task is kept from its creation.
    pub fn ttl(&self) -> Duration {
        self.ttl
    }

    /// The task's handle, for the `CreateTaskResult`.
    pub fn handle(&self) -> rmcp::model::Task {
        self.detailed().task
    }

    /// Ends the task with `outcome`, unless it already ended (cancelled).
    pub fn finish(&self, outcome: Outcome) {
        let mut state = self.state();
        if state.status.terminal() {
            return;
        }
        state.pending.clear();
        state.sent.clear();
        state.status = match outcome {
            Outcome::Completed(result) => {
                // A tool's error is the task's message (2025-11-25 calls such a task failed).
                state.message = is_error(&result).then(|| error_text(&result));
                Status::Completed(result)
            }
            Outcome::Failed(error) => {
                state.message = Some(error.message.to_string());
                let error = serde_json::to_value(&error)
                    .ok()
                    .and_then(|error| error.as_object().cloned())
                    .unwrap_or_else(|| {
                        json!({ "code": -32603, "message": "internal error" }).as_object().cloned().unwrap_or_default()
                    });
                Status::Failed(error)
            }
        };
        Task::touch(&mut state);
        drop(state);
        self.wake.notify_waiters();
    }

    /// `tasks/cancel`: stops the call, unless the task already ended.
    pub fn cancel(&self) {
        self.end_as_cancelled("cancelled by the client");
    }

    /// The task outlived its TTL: a call still running is stopped.
    pub(super) fn expire(&self) {
        self.end_as_cancelled("cancelled: the task outlived its time to live");
    }

    pub(super) fn end_as_cancelled(&self, why: &str) {
        {
            let mut state = self.state();
            if !state.status.terminal() {
                state.status = Status::Cancelled;
                state.message = Some(why.to_owned());
                state.pending.clear();
                state.sent.clear();
                Task::touch(&mut state);
            }
        }
        self.cancel.cancel();
        self.wake.notify_waiters();
    }

    /// A progress report of the running call, shown as `statusMessage`.
    pub fn progress(&self, done: f64, total: Option<f64>, message: Option<&str>) {
        let mut state = self.state();
        if state.status.terminal() {
            return;
        }
        let amount = match total {
            Some(total) => format!("{done}/{total}"),
            None => format!("{done}"),
        };
        state.message = Some(match message {
            Some(message) => format!("{amount}: {message}"),
            None => amount,
        });
        Task::touch(&mut state);
    }

    /// `tasks/update`: answers to questions the task asked. An answer under
    /// a key not outstanding is ignored (the spec's SHOULD); one that does not
    /// answer its question refuses the whole update (-32602), nothing taken.
    pub fn update(&self, responses: InputResponses) -> Result<(), ErrorData> {
        let mut state = self.state();
        let mut taken = Vec::new();
        for (key, value) in responses {
            let Some(pending) = state.pending.get(&key) else { continue };
            crate::asking::answer_from_mcp(&pending.question, &value).map_err(|why| {
                ErrorData::invalid_params(
                    format!("inputResponses: the answer under `{}` was refused: {why}", quoted(&key)),
                    None,
                )
            })?;
            taken.push((key, value));
        }
        if taken.is_empty() {
            return Ok(());
        }
        for (key, value) in taken {
            state.pending.remove(&key);
            state.answers.insert(key, Ok(value));
        }
        Task::touch(&mut state);
        drop(state);
        self.wake.notify_waiters();
        Ok(())
    }
}

/// What `tasks/result` answers for an ended task.
pub enum Ended {
    /// The tool's result (`isError` included).
    Result(JsonObject),
    /// The JSON-RPC error the call's request would have got.
    Error(ErrorData),
    /// Cancelled (by the client, or at its TTL): there is no result.
    Cancelled(String),
}

impl Task {
    /// The task as MCP 2025-11-25 shows it (`Task`: `ttl` and `pollInterval`
    /// in milliseconds; a tool result with `isError` is `failed`).
    pub fn experimental(&self) -> Value {
        let state = self.state();
        let mut task = json!({
            "taskId": self.id,
            "status": state.status.experimental(),
            "createdAt": self.created_at,
            "lastUpdatedAt": state.updated_at,
            "ttl": u64::try_from(self.ttl.as_millis()).unwrap_or(u64::MAX),
            "pollInterval": u64::try_from(self.poll_interval.as_millis()).unwrap_or(u64::MAX).max(1),
        });
        if let Some(message) = &state.message {
            task["statusMessage"] = json!(message);
        }
        task
    }

    /// How the task ended, once it has.
    pub fn ended(&self) -> Option<Ended> {
        let state = self.state();
        match &state.status {
            Status::Working | Status::InputRequired => None,
            Status::Completed(result) => Some(Ended::Result(result.clone())),
            Status::Failed(error) => Some(Ended::Error(
                serde_json::from_value(Value::Object(error.clone()))
                    .unwrap_or_else(|_| ErrorData::internal_error("the call failed", None)),
            )),
            Status::Cancelled => Some(Ended::Cancelled(state.message.clone().unwrap_or_default())),
        }
    }

    /// The status of an ended task (`completed`, `failed`, `cancelled`), or
    /// `None` while it runs.
    pub fn terminal_status(&self) -> Option<&'static str> {
        let state = self.state();
        state.status.terminal().then(|| state.status.experimental())
    }

    /// Resolves at the task's next change (a question asked or answered, the
    /// end). Enabled at once: a change after this call is not missed.
    pub fn changed(&self) -> Pin<Box<tokio::sync::futures::Notified<'_>>> {
        let mut notified = Box::pin(self.wake.notified());
        notified.as_mut().enable();
        notified
    }

    /// The questions waiting for the client and not out to it yet, now
    /// marked as out (to be sent on a `tasks/result` stream).
    pub fn take_unsent(&self) -> Vec<(String, Question)> {
        let mut state = self.state();
        let unsent: Vec<(String, Question)> = state
            .pending
            .iter()
            .filter(|(key, _)| !state.sent.contains(*key))
            .map(|(key, pending)| (key.clone(), pending.question.clone()))
            .collect();
        state.sent.extend(unsent.iter().map(|(key, _)| key.clone()));
        unsent
    }

    /// The client's answer (or error) to the question sent under `key`.
    pub fn answer(&self, key: &str, answer: Result<Value, String>) {
        {
            let mut state = self.state();
            state.sent.remove(key);
            if state.pending.remove(key).is_none() {
                return;
            }
            state.answers.insert(key.to_owned(), answer);
            Task::touch(&mut state);
        }
        self.wake.notify_waiters();
    }

    /// The question sent under `key` got no answer (its `tasks/result`
    /// ended first): it is sent again on the next one.
    pub fn unsend(&self, key: &str) {
        self.state().sent.remove(key);
        self.wake.notify_waiters();
    }

    /// When the task was created (ISO 8601).
    pub fn created_at(&self) -> &str {
        &self.created_at
    }
}

/// Whether a tool result says the tool failed.
fn is_error(result: &JsonObject) -> bool {
    result.get("isError").and_then(Value::as_bool) == Some(true)
}

/// The text of a failed tool result, for a status message.
fn error_text(result: &JsonObject) -> String {
    let text: Vec<&str> = result
        .get("content")
        .and_then(Value::as_array)
        .into_iter()
        .flatten()
        .filter_map(|block| block.get("text").and_then(Value::as_str))
        .collect();
    let text = text.join(" ");
    if text.chars().count() > 500 { format!("{}…", text.chars().take(500).collect::<String>()) } else { text }
}

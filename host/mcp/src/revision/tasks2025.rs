//! MCP 2025-11-25's experimental tasks (SEP-1686), for the clients of that
//! revision that use them: a `tools/call` with a `task` param is answered at
//! once with `{"task": …}` and runs on; the client polls `tasks/get`, reads
//! the result with `tasks/result` (which waits for the end), lists its tasks
//! with `tasks/list` and stops one with `tasks/cancel`. The server declares
//! `capabilities.tasks` and each tool's `execution.taskSupport`.
//!
//! The same tasks as SEP-2663's ([`crate::tasks`]): the same `[serve.tasks]`
//! settings, store, ids, limits and call path; only the wire differs. rmcp
//! models SEP-2663 alone, so this revision's messages go around it:
//!
//! - the transports rename (through [`super::Revision`]) a 2025-11-25 session's `tools/call`
//!   with `task`, `tasks/get` and `tasks/cancel` to [`PREFIX`]`…` so that
//!   rmcp hands them (and `tasks/result`, `tasks/list`, which it does not
//!   know) to [`ToolServer`]'s custom-request handler, which answers in this
//!   revision's shapes; a client's own use of the prefix is refused;
//! - the answers to `initialize` and `tools/list` are adjusted on their way
//!   out ([`adjust`]): rmcp's types have no place for `capabilities.tasks`
//!   or `execution`.
//!
//! [`Tasks2025`] is this revision's [`super::Revision`]: the transports call
//! it through `revision` and never name this module.
//!
//! With `[state] url` a task is also recorded in the shared store before its
//! handle goes out (`Tasks::reserve`, `Tasks::mirror`), and `tasks/get`,
//! `tasks/cancel` and `tasks/result` of a task another replica runs are
//! answered from that record (`remote_experimental`: there `tasks/result`
//! sends the questions the record shows and passes the answers on over
//! pub/sub), and `tasks/list` adds the session's tasks other replicas run.
//!
//! A call's questions (elicitation, sampling, roots) make the task
//! `input_required`; they are sent to the client as requests on the stream
//! of a `tasks/result` it has open (the revision's pattern), with the
//! `io.modelcontextprotocol/related-task` key in `_meta`. A task belongs to
//! the session that created it (and to the token's principal): any other
//! caller gets exactly the `-32602` of an id never given out, and
//! `tasks/list` shows a session its own, a page at a time behind an opaque
//! cursor sealed to the session.

use crate::caller::Caller;
use crate::server::{ToolServer, arguments_text, forward_progress, request_span, unknown_tool};
use crate::tasks::{Ended, Task, TaskAsker, TaskKind, TaskSupport, Tasks};
use rmcp::model::{
    CallToolRequestParams, CallToolResult, CustomRequest, CustomResult, ErrorCode, GetTaskResult, ProgressToken,
    ServerResult,
};
use rmcp::service::RequestContext;
use rmcp::{ErrorData, RoleServer};
use serde_json::{Value, json};
use std::sync::Arc;
use std::time::Duration;
use toolhost_runtime::sandbox::{CallHooks, Progress, ProgressObserver};

/// The protocol revision these tasks belong to.
pub const VERSION: &str = crate::tasks::EXPERIMENTAL_REVISION;
/// The method prefix of the requests renamed for toolhost's handler.
pub const PREFIX: &str = "toolhost/2025-11-25/";
/// The `_meta` key tying a message to its task.
pub const RELATED_TASK: &str = "io.modelcontextprotocol/related-task";
/// Tasks per `tasks/list` page.
const PAGE: usize = 100;
/// How often `tasks/result` of a task another replica runs reads its record.
const REMOTE_POLL: Duration = Duration::from_millis(250);

/// The renamed form of a 2025-11-25 session's task request, if `message`
/// is one rmcp would otherwise take for something else.
pub(crate) fn renamed(message: &Value) -> Option<Vec<u8>> {
    let method = message.get("method")?.as_str()?;
    let ours = match method {
        "tasks/get" | "tasks/cancel" => true,
        "tools/call" => message.pointer("/params/task").is_some(),
        _ => false,
    };
    if !ours {
        return None;
    }
    let mut message = message.clone();
    message["method"] = json!(format!("{PREFIX}{method}"));
    serde_json::to_vec(&message).ok()
}

/// A request whose answer [`adjust`] completes.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Watch {
    Initialize,
    ToolsList,
}

/// Whether `message`'s answer is adjusted.
pub(crate) fn watch(message: &Value) -> Option<Watch> {
    match message.get("method")?.as_str()? {
        "initialize" => Some(Watch::Initialize),
        "tools/list" => Some(Watch::ToolsList),
        _ => None,
    }
}

/// Completes the answer to a watched request for a 2025-11-25 session:
/// `capabilities.tasks` on an `initialize` result that negotiated this
/// revision and declares the tasks extension (true then: the session uses
/// these tasks), `execution.taskSupport` on each listed tool that may run as
/// a task.
pub(crate) fn adjust(watch: Watch, message: &mut Value) -> bool {
    let Some(result) = message.get_mut("result") else { return false };
    match watch {
        Watch::Initialize => {
            let ours = result.get("protocolVersion").and_then(Value::as_str) == Some(VERSION)
                && result
                    .pointer("/capabilities/extensions")
                    .and_then(Value::as_object)
                    .is_some_and(|extensions| extensions.contains_key(rmcp::model::TASKS_EXTENSION_ID));
            if ours && let Some(capabilities) = result.get_mut("capabilities").and_then(Value::as_object_mut) {
                capabilities.insert(
                    "tasks".to_owned(),
                    json!({ "list": {}, "cancel": {}, "requests": { "tools": { "call": {} } } }),
                );
            }
            ours
        }
        Watch::ToolsList => {
            let tools = result.get_mut("tools").and_then(Value::as_array_mut).into_iter().flatten();
            for tool in tools {
                let support = tool.pointer(&format!("/_meta/{}", crate::wire::TASK_SUPPORT_META.replace('/', "~1")));
                if let Some(support) = support.cloned() {
                    tool["execution"] = json!({ "taskSupport": support });
                }
            }
            false
        }
    }
}

/// This revision's rewriting, as the transports call it.
pub(crate) struct Tasks2025;

impl super::Revision for Tasks2025 {
    fn version(&self) -> &'static str {
        VERSION
    }

    fn prefix(&self) -> &'static str {
        PREFIX
    }

    fn renamed(&self, message: &Value) -> Option<Vec<u8>> {
        renamed(message)
    }

    fn watch(&self, message: &Value) -> Option<(u8, bool)> {
        watch(message).map(|watch| (watch as u8, watch == Watch::Initialize))
    }

    fn adjust(&self, kind: u8, message: &mut Value) -> bool {
        let watch = if kind == Watch::Initialize as u8 { Watch::Initialize } else { Watch::ToolsList };
        adjust(watch, message)
    }
}

/// How long a `tasks/list` cursor stays good.
const CURSOR_TTL: Duration = Duration::from_secs(3600);

/// What a `tasks/list` cursor holds (sealed): where the last page ended.
#[derive(serde::Serialize, serde::Deserialize)]
struct Cursor {
    created: String,
    id: String,
}

/// What a `tasks/list` cursor is sealed to: the listing and its caller.
fn cursor_binding(caller: &Caller) -> Vec<u8> {
    format!("tasks/list cursor\n{}\n{}", caller.binding(), caller.session.as_deref().unwrap_or_default()).into_bytes()
}

fn method_not_found(method: &str) -> ErrorData {
    ErrorData::new(
        ErrorCode::METHOD_NOT_FOUND,
        format!("method not found: {}", toolhost_runtime::text::quoted(method)),
        None,
    )
}

fn task_id(params: &Value) -> Result<&str, ErrorData> {
    params
        .get("taskId")
        .and_then(Value::as_str)
        .ok_or_else(|| ErrorData::invalid_params("`taskId` (a string) is required", None))
}

/// Refuses a SEP-2663 request from a client that did not declare the
/// extension (as rmcp does for the typed requests).
fn extension_declared(context: &RequestContext<RoleServer>) -> Result<(), ErrorData> {
    if context.client_capabilities().is_some_and(|capabilities| capabilities.supports_tasks()) {
        return Ok(());
    }
    Err(ErrorData::missing_required_client_capability(
        rmcp::model::ClientCapabilities::builder().enable_tasks().build(),
    ))
}

fn to_json<T: serde::Serialize>(value: T) -> Result<Value, ErrorData> {
    serde_json::to_value(value)
        .map_err(|err| ErrorData::internal_error(format!("the answer could not be written: {err}"), None))
}

impl ToolServer {
    /// A request rmcp passed on as custom: the 2025-11-25 task requests
    /// (renamed by the framing layer, or `tasks/result` and `tasks/list`),
    /// for a 2025-11-25 session of a server that runs tasks; anything else is
    /// `-32601`.
    pub(crate) async fn experimental_request(
        &self,
        request: CustomRequest,
        context: RequestContext<RoleServer>,
    ) -> Result<CustomResult, ErrorData> {
        let method = request.method.strip_prefix(PREFIX).unwrap_or(&request.method).to_owned();
        let session = context.protocol_version().is_some_and(|version| version.as_str() == VERSION);
        let Some(tasks) = self.tasks().filter(|_| session) else { return Err(method_not_found(&method)) };
        let params = request.params.unwrap_or_else(|| json!({}));
        if matches!(method.as_str(), "tasks/get" | "tasks/cancel" | "tasks/result") {
            // With `[state] url`, a task another replica runs is answered from its record.
            let id = task_id(&params)?;
            if let Err(local) = self.task(id, &context) {
                return self.remote_experimental(&method, id, &context, local).await.map(CustomResult);
            }
        }
        let answer = match method.as_str() {
            "tools/call" => self.call_as_experimental_task(params, &context, tasks).await?,
            "tasks/get" => {
                let task = self.task(task_id(&params)?, &context)?;
                match task.kind {
                    TaskKind::Experimental => task.experimental(),
                    TaskKind::Extension => {
                        extension_declared(&context)?;
                        to_json(ServerResult::GetTaskResult(GetTaskResult::new(task.detailed())))?
                    }
                }
            }
            "tasks/cancel" => {
                let task = self.task(task_id(&params)?, &context)?;
                match task.kind {
                    TaskKind::Experimental => {
                        if let Some(status) = task.terminal_status() {
                            return Err(ErrorData::invalid_params(
                                format!("task `{}` cannot be cancelled: it is already {status}", task.id),
                                Some(json!({ "taskId": task.id, "status": status })),
                            ));
                        }
                        task.cancel();
                        task.experimental()
                    }
                    TaskKind::Extension => {
                        extension_declared(&context)?;
                        task.cancel();
                        to_json(ServerResult::task_ack(()))?
                    }
                }
            }
            "tasks/result" => {
                let task = self.task(task_id(&params)?, &context)?;
                if task.kind == TaskKind::Extension {
                    return Err(ErrorData::invalid_params(
                        format!(
                            "task `{}` is an `{}` task: its result comes with tasks/get",
                            task.id,
                            rmcp::model::TASKS_EXTENSION_ID
                        ),
                        None,
                    ));
                }
                result(&task, &context).await?
            }
            "tasks/list" => self.list_experimental(&params, &context, &tasks).await?,
            _ => return Err(method_not_found(&method)),
        };
        Ok(CustomResult(answer))
    }

    /// `tasks/get`, `tasks/cancel` or `tasks/result` of a task this replica
    /// does not hold, from its record in the shared store (`local`: this
    /// replica's own answer, without a store or record).
    async fn remote_experimental(
        &self,
        method: &str,
        id: &str,
        context: &RequestContext<RoleServer>,
        local: ErrorData,
    ) -> Result<Value, ErrorData> {
        let remote = self.shared_task(id, context, local).await?;
        let shared = self.tasks().and_then(|tasks| tasks.shared().cloned());
        let Some(shared) = shared else { return Err(ErrorData::internal_error("no shared store", None)) };
        if !remote.experimental {
            // A SEP-2663 task of this principal, as for one held here.
            extension_declared(context)?;
            return match method {
                "tasks/get" => to_json(ServerResult::GetTaskResult(GetTaskResult::new(remote.detailed))),
                "tasks/cancel" => {
                    shared.cancel(&remote).await?;
                    to_json(ServerResult::task_ack(()))
                }
                _ => Err(ErrorData::invalid_params(
                    format!(
                        "task `{}` is an `{}` task: its result comes with tasks/get",
                        remote.id,
                        rmcp::model::TASKS_EXTENSION_ID
                    ),
                    None,
                )),
            };
        }
        match method {
            "tasks/get" => Ok(remote.experimental_view()),
            "tasks/cancel" => {
                if let Some(status) = remote.terminal_status() {
                    return Err(ErrorData::invalid_params(
                        format!("task `{}` cannot be cancelled: it is already {status}", remote.id),
                        Some(json!({ "taskId": remote.id, "status": status })),
                    ));
                }
                shared.cancel(&remote).await?;
                let now = self.shared_task(id, context, ErrorData::internal_error("the task is gone", None)).await?;
                Ok(now.experimental_view())
            }
            _ => {
                // Waits for the end by reading the record; the questions it
                // shows go to the client on this request's stream, and the
                // answers to the replica running the task (pub/sub).
                let mut remote = remote;
                let mut sent = std::collections::HashSet::new();
                loop {
                    if let Some(ended) = remote.ended() {
                        return ended_answer(&remote.id, ended);
                    }
                    if let rmcp::model::TaskPayload::InputRequired { input_requests } = &remote.detailed.payload {
                        let requests = serde_json::to_value(input_requests).unwrap_or_default();
                        for (key, request) in requests.as_object().into_iter().flatten() {
                            if !sent.insert(key.clone()) {
                                continue;
                            }
                            let mut request = request.clone();
                            if let Some(params) = request.get_mut("params").and_then(Value::as_object_mut) {
                                let meta = params.entry("_meta").or_insert_with(|| json!({}));
                                if let Some(meta) = meta.as_object_mut() {
                                    meta.insert(RELATED_TASK.to_owned(), json!({ "taskId": id }));
                                }
                            }
                            let answer = tokio::select! {
                                answer = ask_raw(&context.peer, request) => answer,
                                () = context.ct.cancelled() => {
                                    return Err(ErrorData::internal_error(
                                        format!("tasks/result for `{id}` was cancelled; the task goes on"),
                                        None,
                                    ));
                                }
                            };
                            match answer.and_then(|answer| {
                                serde_json::from_value::<rmcp::model::InputResponses>(json!({ key.clone(): answer }))
                                    .map_err(|err| err.to_string())
                            }) {
                                Ok(responses) => shared.update(&remote, responses).await?,
                                // Left pending: the call's timeout ends the wait.
                                Err(why) => {
                                    tracing::info!(task = %id, %why, "a question of a task on another replica got no answer")
                                }
                            }
                        }
                    }
                    tokio::select! {
                        () = tokio::time::sleep(REMOTE_POLL) => {}
                        () = context.ct.cancelled() => {
                            return Err(ErrorData::internal_error(
                                format!("tasks/result for `{id}` was cancelled; the task goes on"),
                                None,
                            ));
                        }
                    }
                    let gone = ErrorData::invalid_params(format!("task `{id}` is no longer kept"), None);
                    remote = self.shared_task(id, context, gone).await?;
                }
            }
        }
    }

    /// `tools/call` with `task`: the call starts as a task, answered with its handle.
    async fn call_as_experimental_task(
        &self,
        mut params: Value,
        context: &RequestContext<RoleServer>,
        tasks: Arc<Tasks>,
    ) -> Result<Value, ErrorData> {
        let ttl = match params.as_object_mut().and_then(|params| params.remove("task")) {
            Some(Value::Object(task)) => match task.get("ttl") {
                None | Some(Value::Null) => None,
                Some(ttl) => Some(Duration::from_millis(ttl.as_u64().ok_or_else(|| {
                    ErrorData::invalid_params(
                        format!(
                            "`task.ttl` is a whole number of milliseconds from 0 to {}, not {}; the task is kept \
                                 that long, but at least the call's timeout and a minute, at most the server's \
                                 `[serve.tasks] ttl` (the ttl the task reports is the one kept)",
                            u64::MAX,
                            ttl.to_string().chars().take(40).collect::<String>()
                        ),
                        None,
                    )
                })?)),
            },
            _ => return Err(ErrorData::invalid_params("`task` is an object, like {\"ttl\": 60000}", None)),
        };
        let progress_token = params.pointer("/_meta/progressToken").cloned();
        let request: CallToolRequestParams = serde_json::from_value(params).map_err(|err| {
            ErrorData::invalid_params(format!("the request does not match the shape of tools/call: {err}"), None)
        })?;
        let name = request.name.to_string();
        let catalog = match self.catalog_with_tool(&name, &context.ct).await {
            Ok(catalog) => catalog,
            Err(still_loading) => {
                return Err(ErrorData::internal_error(
                    still_loading.outcome.err().map(|e| e.to_string()).unwrap_or_default(),
                    None,
                ));
            }
        };
        let (origin, wrap, support) = match catalog.find(&name) {
            Some(entry) if self.served(entry) && self.in_scope(context, entry.name(), entry.origin()) => {
                (entry.origin().to_owned(), crate::wire::wraps_output(entry), self.task_support(entry).0)
            }
            _ => {
                self.metrics().record_unknown_tool();
                return Err(unknown_tool(&name));
            }
        };
        if support == TaskSupport::Forbidden {
            return Err(ErrorData::new(
                ErrorCode::METHOD_NOT_FOUND,
                format!(
                    "`{name}` does not run as a task (its execution.taskSupport is \"forbidden\"): call it without `task`"
                ),
                None,
            ));
        }
        // Kept as long as the client asks, but never dropped before its call
        // could have ended (its `timeout`) and a minute to read the result.
        let floor = self.timeout_of(&origin).saturating_add(Duration::from_secs(60));
        let ttl = ttl.map(|ttl| ttl.max(floor));
        let caller = Caller::of(context);
        let task = tasks.create(&name, &origin, TaskKind::Experimental, caller.owner(true), ttl);
        // With `[state] url`, room is made over every replica and the task
        // is durable before its handle goes out (a no-op without).
        if !tasks.reserve(&task).await? {
            return Err(ErrorData::internal_error(
                "the tasks kept over every replica are at their limit (`max_tasks`, or this client's share), or the \
                 shared state store is unreachable: try again when some have ended, or call the tool without `task`",
                None,
            ));
        }
        if let Err(full) = tasks.keep(&task) {
            tasks.unreserve(&task).await;
            return Err(ErrorData::internal_error(
                format!("{full}: try again when some have ended, or call the tool without `task`"),
                None,
            ));
        }
        tasks.mirror(&task);
        let asker = Arc::new(TaskAsker::new(task.clone(), context.client_capabilities().unwrap_or_default()));
        let fair = self.fair(asker.clone(), &caller, self.timeout_of(&origin));
        // Progress is the task's `statusMessage`, and goes on to the client
        // for the request's token all the task long.
        let send = progress_token
            .and_then(|token| serde_json::from_value::<ProgressToken>(token).ok())
            .map(|token| forward_progress(context.peer.clone(), token).0);
        let observer: ProgressObserver = {
            let task = task.clone();
            Arc::new(move |progress: Progress| {
                task.progress(progress.done, progress.total, progress.message.as_deref());
                if let Some(send) = &send {
                    let _ = send.send(progress);
                }
            })
        };
        let result_shape = self.host().audit_logs().then(|| crate::wire::result_shape(wrap));
        let hooks = CallHooks { progress: Some(observer), asker: Some(fair), result_shape };
        let arguments = arguments_text(&request.arguments);
        let span = request_span("tools/call", &name, context);
        let (server, running) = (self.clone(), task.clone());
        // The handle says what the task was when it was made (`working`),
        // whatever the call has reached by the time it goes out: a question
        // asked at once shows at the first `tasks/get`.
        let handle = task.experimental();
        tokio::spawn(async move {
            let call = (&name[..], &origin[..], &arguments[..]);
            if let Some(report) = server.run_task_call(&catalog, call, hooks, span, &caller, &running.cancel).await {
                server.settle_task(&running, report, None, &asker, wrap);
            }
        });
        Ok(json!({ "task": handle }))
    }

    /// `tasks/list`: this session's tasks, oldest first, a page at a time.
    async fn list_experimental(
        &self,
        params: &Value,
        context: &RequestContext<RoleServer>,
        tasks: &Tasks,
    ) -> Result<Value, ErrorData> {
        let bad_cursor = || {
            ErrorData::invalid_params(
                "`cursor` is not one this server gave this session (or it has expired): list again without one",
                None,
            )
        };
        let caller = Caller::of(context);
        let binding = cursor_binding(&caller);
        // The cursor is the creation time and id of the last task shown,
        // sealed (HMAC) to this caller: opaque, and refused if changed.
        let after: Option<Cursor> = match params.get("cursor") {
            None | Some(Value::Null) => None,
            Some(Value::String(cursor)) => Some(self.seal().open(cursor, &binding).ok_or_else(bad_cursor)?),
            Some(_) => return Err(bad_cursor()),
        };
        // (created, id, view) of each task of the session: this replica's,
        // then with `[state] url` those other replicas run.
        let mut owned: Vec<(String, String, Value)> = tasks
            .owned_by(&caller)
            .into_iter()
            .filter(|task| self.in_scope(context, &task.tool, &task.origin))
            .map(|task| (task.created_at().to_owned(), task.id.clone(), task.experimental()))
            .collect();
        if let Some(shared) = tasks.shared() {
            let held: std::collections::HashSet<String> = owned.iter().map(|(_, id, _)| id.clone()).collect();
            for remote in shared.owned_by(&caller).await? {
                if remote.experimental
                    && !held.contains(&remote.id)
                    && self.in_scope(context, &remote.tool, &remote.origin)
                {
                    owned.push((
                        remote.detailed.task.created_at.clone(),
                        remote.id.clone(),
                        remote.experimental_view(),
                    ));
                }
            }
            owned.sort_by(|a, b| (&a.0, &a.1).cmp(&(&b.0, &b.1)));
        }
        owned.retain(|(created, id, _)| {
            after
                .as_ref()
                .is_none_or(|after| (created.as_str(), id.as_str()) > (after.created.as_str(), after.id.as_str()))
        });
        let page: Vec<Value> = owned.iter().take(PAGE).map(|(_, _, view)| view.clone()).collect();
        let mut answer = json!({ "tasks": page });
        if owned.len() > PAGE {
            let (created, id, _) = &owned[PAGE - 1];
            let cursor = Cursor { created: created.clone(), id: id.clone() };
            let sealed = self
                .seal()
                .seal(&cursor, &binding, CURSOR_TTL)
                .ok_or_else(|| ErrorData::internal_error("the next page's cursor could not be sealed", None))?;
            answer["nextCursor"] = json!(sealed);
        }
        Ok(answer)
    }
}

/// `tasks/result`: waits for the task's end, sending its questions to the
/// client on this request's stream meanwhile; then what the call's request
/// would have been answered (the tool result, or the JSON-RPC error).
async fn result(task: &Arc<Task>, context: &RequestContext<RoleServer>) -> Result<Value, ErrorData> {
    loop {
        let changed = task.changed();
        if let Some(ended) = task.ended() {
            return ended_answer(&task.id, ended);
        }
        for (key, question) in task.take_unsent() {
            let mut params = question.to_mcp(&key);
            if let Some(params) = params.as_object_mut() {
                let meta = params.entry("_meta").or_insert_with(|| json!({}));
                if let Some(meta) = meta.as_object_mut() {
                    meta.insert(RELATED_TASK.to_owned(), json!({ "taskId": task.id }));
                }
            }
            let out = Out { task, key: &key, answered: false };
            let answer = tokio::select! {
                answer = crate::asking::send(&context.peer, &question, params) => answer,
                () = context.ct.cancelled() => return Err(cancelled(task)),
                () = task.cancel.cancelled() => continue,
            };
            out.answered();
            task.answer(&key, answer);
        }
        tokio::select! {
            () = changed => {}
            () = context.ct.cancelled() => return Err(cancelled(task)),
        }
    }
}

/// Sends `request` (`{method, params}`, as a task's record shows a
/// question) to the client: its answer.
async fn ask_raw(peer: &rmcp::Peer<RoleServer>, request: Value) -> Result<Value, String> {
    let request: rmcp::model::ServerRequest =
        serde_json::from_value(request).map_err(|err| format!("the question cannot be sent over MCP: {err}"))?;
    let result = peer.send_request(request).await.map_err(|err| format!("the client did not answer: {err}"))?;
    serde_json::to_value(result).map_err(|err| format!("the client's answer could not be read: {err}"))
}

/// What `tasks/result` answers for a task `id` that ended as `ended`: the
/// tool result in this revision's shape, or the JSON-RPC error.
fn ended_answer(id: &str, ended: Ended) -> Result<Value, ErrorData> {
    match ended {
        Ended::Result(result) => {
            // In this revision's shape, as rmcp answers a plain call of it.
            let mut answer = match serde_json::from_value::<CallToolResult>(Value::Object(result)) {
                Ok(result) => ServerResult::CallToolResult(result),
                Err(err) => {
                    return Err(ErrorData::internal_error(format!("the result is unreadable: {err}"), None));
                }
            };
            answer.strip_result_type_for_legacy_peer();
            answer.strip_non_object_output_for_legacy_peer();
            let mut answer = to_json(answer)?;
            if let Some(answer) = answer.as_object_mut() {
                let meta = answer.entry("_meta").or_insert_with(|| json!({}));
                if let Some(meta) = meta.as_object_mut() {
                    meta.insert(RELATED_TASK.to_owned(), json!({ "taskId": id }));
                }
            }
            Ok(answer)
        }
        Ended::Error(error) => Err(error),
        Ended::Cancelled(why) => Err(ErrorData::invalid_params(
            format!("task `{id}` has no result: {why}"),
            Some(json!({ "taskId": id, "reason": "cancelled" })),
        )),
    }
}

fn cancelled(task: &Task) -> ErrorData {
    ErrorData::internal_error(format!("tasks/result for `{}` was cancelled; the task goes on", task.id), None)
}

/// A question out to the client on a `tasks/result` stream; unless
/// answered, it is sent again on the next one.
struct Out<'a> {
    task: &'a Task,
    key: &'a str,
    answered: bool,
}

impl Out<'_> {
    fn answered(mut self) {
        self.answered = true;
    }
}

impl Drop for Out<'_> {
    fn drop(&mut self) {
        if !self.answered {
            self.task.unsend(self.key);
        }
    }
}

#[cfg(test)]
mod tests;

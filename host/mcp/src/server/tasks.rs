//! Calls as tasks, and the questions of a call: the part of [`ToolServer`]
//! that finds a task for a request (in this process or, with `[state] url`,
//! in the shared store), runs a `tools/call` as a task (`call_as_task`: the
//! call in a spawned job, answered in the request if it ends or stops to ask
//! within `after`, else a `CreateTaskResult`), settles a task's outcome, and
//! picks who answers a call's questions (`asker`, `end_round`).
//!
//! It is a child of `server` rather than a part of `tasks`, because it needs
//! the handler's state and `server` already names `tasks`' types: `tasks`
//! holds what a task is, this file how the handler drives one.

use super::*;

impl ToolServer {
    /// Whether calls of `entry` may run as tasks, and how long they run in
    /// their request before they become one.
    pub(crate) fn task_support(&self, entry: &Entry) -> (TaskSupport, std::time::Duration) {
        match &self.shared.tasks {
            Some(tasks) => tasks.config().for_tool(entry.name(), entry.origin()),
            None => (TaskSupport::Forbidden, std::time::Duration::ZERO),
        }
    }

    /// The tasks of this process, if it runs any.
    pub(crate) fn tasks(&self) -> Option<Arc<Tasks>> {
        self.shared.tasks.clone()
    }

    /// The SEP-2663 task `id`, if the request may see it (a 2025-11-25
    /// task is its session's, seen through that revision's requests).
    pub(super) fn extension_task(
        &self,
        id: &str,
        context: &RequestContext<RoleServer>,
    ) -> Result<Arc<Task>, ErrorData> {
        let task = self.task(id, context)?;
        if task.kind == crate::tasks::TaskKind::Experimental {
            return Err(ErrorData::invalid_params(
                format!(
                    "task `{}` was started by a 2025-11-25 `tools/call` with `task`: only that session sees it, \
                     through tasks/get, tasks/result and tasks/cancel",
                    task.id
                ),
                Some(json!({ "taskId": task.id, "reason": "other_session" })),
            ));
        }
        Ok(task)
    }

    /// With `[state] url`: the task `id` as the shared store shows it (it
    /// runs on another replica), if the request may see it; else `local`,
    /// this replica's own answer.
    pub(crate) async fn shared_task(
        &self,
        id: &str,
        context: &RequestContext<RoleServer>,
        local: ErrorData,
    ) -> Result<crate::tasks::shared::Remote, ErrorData> {
        let Some(tasks) = &self.shared.tasks else { return Err(local) };
        let Some(shared) = tasks.shared() else { return Err(local) };
        let Some(remote) = shared.find(id, &Caller::of(context)).await? else {
            return Err(tasks.unknown_in_store(id, local));
        };
        if !self.in_scope(context, &remote.tool, &remote.origin) {
            return Err(ErrorData::invalid_params(
                format!("task `{}` is a call of a tool this token has not the scope for", remote.id),
                None,
            ));
        }
        Ok(remote)
    }

    /// The task `id`, if the request may see it.
    pub(crate) fn task(&self, id: &str, context: &RequestContext<RoleServer>) -> Result<Arc<Task>, ErrorData> {
        let Some(tasks) = &self.shared.tasks else {
            return Err(ErrorData::invalid_params("this server runs no tasks ([serve.tasks] is not set)", None));
        };
        let task = tasks.find(id, &Caller::of(context))?;
        if !self.in_scope(context, &task.tool, &task.origin) {
            return Err(ErrorData::invalid_params(
                format!("task `{}` is a call of a tool this token has not the scope for", task.id),
                None,
            ));
        }
        Ok(task)
    }

    /// Who answers the questions of a request's call: the session's client
    /// (2025-11-25), or, for 2026-07-28, what the request carries, with the
    /// round to end once the call is done.
    pub(super) fn asker(
        &self,
        context: &RequestContext<RoleServer>,
        binding: Vec<u8>,
        responses: Option<rmcp::model::InputResponses>,
        state: Option<&str>,
    ) -> Result<(CallHooks, Option<Round>), ErrorData> {
        use crate::asking::{RoundAsker, SessionAsker};
        let stateless = context.protocol_version().is_some_and(|version| version.as_str() >= "2026-07-28");
        if !stateless {
            let capabilities = context.client_capabilities().unwrap_or_default();
            let asker = Arc::new(SessionAsker { peer: context.peer.clone(), capabilities });
            return Ok((CallHooks { progress: None, asker: Some(asker), result_shape: None }, None));
        }
        let capabilities = context.client_capabilities();
        let asker = Arc::new(RoundAsker::new(&self.shared.seal, &binding, capabilities, responses, state)?);
        let hooks = CallHooks { progress: None, asker: Some(asker.clone()), result_shape: None };
        Ok((hooks, Some(Round { asker, binding })))
    }

    /// Ends a 2026-07-28 round given the call's error, if it failed: `Some`
    /// answers the request instead of its result (`InputRequiredResult`, or
    /// an error).
    pub(super) fn end_round(
        &self,
        round: Option<Round>,
        failed: Option<&CallError>,
    ) -> Option<Result<InputRequiredResult, ErrorData>> {
        use crate::asking::RoundEnd;
        let round = round?;
        let suspended = matches!(failed, Some(CallError::InputRequired));
        match round.asker.end(&self.shared.seal, &round.binding, suspended, failed.is_some())? {
            RoundEnd::InputRequired(result) => Some(Ok(result)),
            RoundEnd::BadResponse(error) | RoundEnd::MissingCapability(error) => Some(Err(error)),
        }
    }

    /// A call of a tool that may run as a task, from a client that declared
    /// the extension: it runs in its request for `after` (answering there
    /// if it finishes, or stops to ask by calling again), then becomes a task
    /// (`CreateTaskResult`) and goes on in the background.
    #[allow(clippy::too_many_arguments)]
    pub(super) async fn call_as_task(
        &self,
        request: CallToolRequestParams,
        context: RequestContext<RoleServer>,
        catalog: Arc<Catalog>,
        tasks: Arc<Tasks>,
        origin: String,
        wrap: bool,
        after: std::time::Duration,
    ) -> Result<CallToolResponse, ErrorData> {
        use crate::tasks::PhasedAsker;
        let name = request.name.to_string();
        let arguments = arguments_text(&request.arguments);
        let caller = Caller::of(&context);
        let binding = crate::asking::binding("tools/call", &name, &request.arguments, &caller.binding());
        let state = request.request_state.as_deref();
        let (mut hooks, round) = match self.asker(&context, binding, request.input_responses.clone(), state) {
            Ok(asking) => asking,
            Err(error) => {
                self.shared.metrics.record_unknown_tool();
                return Err(error);
            }
        };
        let task = tasks.create(&name, &origin, crate::tasks::TaskKind::Extension, caller.owner(false), None);
        let before: Arc<dyn toolhost_runtime::ask::Asker> = match hooks.asker.take() {
            Some(asker) => asker,
            None => Arc::new(crate::asking::RoundAsker::new(&self.shared.seal, b"", None, None, None)?),
        };
        let phased = Arc::new(PhasedAsker::new(before));
        hooks.asker = Some(self.fair(phased.clone(), &caller, self.timeout_of(&origin)));
        let task_asker = Arc::new(TaskAsker::new(task.clone(), context.client_capabilities().unwrap_or_default()));
        // Progress goes to the client as `notifications/progress` while the
        // call runs in its request, and into the task's `statusMessage` after.
        let (send, forwarding) = match context.meta.get_progress_token() {
            Some(token) => {
                let (send, forwarding) = forward_progress(context.peer.clone(), token);
                (Some(send), Some(forwarding))
            }
            None => (None, None),
        };
        let observer: ProgressObserver = {
            let phased = phased.clone();
            Arc::new(move |progress: Progress| match (phased.task(), &send) {
                (Some(task), _) => task.progress(progress.done, progress.total, progress.message.as_deref()),
                (None, Some(send)) => {
                    let _ = send.send(progress);
                }
                (None, None) => {}
            })
        };
        hooks.progress = Some(observer);
        hooks.result_shape = self.host().audit_logs().then(|| crate::wire::result_shape(wrap));
        let (done, finished) = tokio::sync::oneshot::channel::<(CallReport, Option<Round>)>();
        let job = {
            let (server, task, phased, task_asker) = (self.clone(), task.clone(), phased.clone(), task_asker.clone());
            let (name, origin) = (name.clone(), origin.clone());
            let span = request_span("tools/call", &name, &context);
            async move {
                let call = (&name[..], &origin[..], &arguments[..]);
                let Some(report) = server.run_task_call(&catalog, call, hooks, span, &caller, &task.cancel).await
                else {
                    return;
                };
                match phased.end() {
                    Some(task) => server.settle_task(&task, report, round, &task_asker, wrap),
                    None => {
                        let _ = done.send((report, round));
                    }
                }
            }
        };
        // Until the call becomes a task, the request owns it: a request
        // cancelled or dropped stops it.
        let owned = task.cancel.clone().drop_guard();
        tokio::spawn(job);
        let deadline = tokio::time::sleep(after);
        tokio::pin!(deadline, finished);
        let mut due = after.is_zero();
        loop {
            // With `[state] url`, room is made and the task is durable
            // before its handle goes out (a no-op without).
            if due && tasks.reserve(&task).await? {
                if phased.escalate(&task, &task_asker, || tasks.keep(&task).is_ok()) {
                    tasks.mirror(&task);
                    owned.disarm();
                    return Ok(CallToolResponse::Task(CreateTaskResult::new(task.handle())));
                }
                tasks.unreserve(&task).await;
            }
            let changed = phased.changed();
            tokio::select! {
                ended = &mut finished => {
                    let Ok((report, round)) = ended else {
                        return Err(ErrorData::internal_error(format!("the call to `{name}` was stopped"), None));
                    };
                    drop(owned);
                    if let Some(forwarding) = forwarding {
                        let _ = forwarding.await;
                    }
                    if let Err(CallError::UnknownTool { .. }) = &report.outcome {
                        return Err(unknown_tool(&name));
                    }
                    self.send_logs(&report, &context).await;
                    if let Some(end) = self.end_round(round, report.outcome.as_ref().err()) {
                        return end.map(CallToolResponse::InputRequired);
                    }
                    return Ok(result_of(report, wrap).into());
                }
                () = &mut deadline, if !due => due = true,
                () = changed, if due => {}
                () = context.ct.cancelled() => {
                    return Err(ErrorData::internal_error(format!("the call to `{name}` was cancelled"), None));
                }
            }
        }
    }

    /// Who the audit log and hooks name for `caller`'s request on `path`
    /// (`serve-http` for a request over HTTP); nothing is gathered unless
    /// `[audit]` or `[[hooks]]` is configured.
    pub(super) fn audited(
        &self,
        caller: &Caller,
        path: &'static str,
        context: Option<&RequestContext<RoleServer>>,
    ) -> toolhost_catalog::Caller {
        if !self.host().accountable() {
            return toolhost_catalog::Caller::default();
        }
        let http = caller.session.as_deref().is_none_or(|session| session.starts_with("http:"));
        let path = if path == "serve" && http { "serve-http" } else { path };
        let client = context.and_then(|context| context.peer.peer_info()).map(|info| info.client_info.name.clone());
        caller.audited(path, client)
    }

    /// Runs a task's call (tool `name` of `origin` with `arguments`) once
    /// one of `caller`'s call slots is free, counted in the metrics, until it
    /// ends (its report) or `cancel` (`None`: its future is dropped, so the
    /// guest stops at its next epoch tick).
    pub(crate) async fn run_task_call(
        &self,
        catalog: &Catalog,
        (name, origin, arguments): (&str, &str, &str),
        hooks: CallHooks,
        span: tracing::Span,
        caller: &Caller,
        cancel: &tokio_util::sync::CancellationToken,
    ) -> Option<CallReport> {
        let _slot = match self.admit(caller, cancel, self.timeout_of(origin)).await {
            Ok(slot) => slot,
            Err(super::Unadmitted::Cancelled) => return None,
            Err(super::Unadmitted::Refused(why)) => {
                return Some(CallReport::rejected(name, Some(origin.to_owned()), CallError::Host(why)));
            }
        };
        let active = self.shared.metrics.start_call(name, origin);
        let overrides = LimitOverrides::default();
        let who = self.audited(caller, "task", None);
        let call = tracing::Instrument::instrument(
            self.host().call_as(catalog, name, arguments, &overrides, hooks, &who),
            span,
        );
        let report = tokio::select! {
            report = call => report,
            () = cancel.cancelled() => return None,
        };
        if let Err(CallError::UnknownTool { .. }) = &report.outcome {
            active.unknown_tool();
        } else {
            active.finish(&report);
        }
        Some(report)
    }

    /// Ends `task` with what its call's request would have been answered:
    /// the tool result, or the JSON-RPC error.
    pub(crate) fn settle_task(
        &self,
        task: &Task,
        report: CallReport,
        round: Option<Round>,
        asker: &TaskAsker,
        wrap: bool,
    ) {
        let failed = report.outcome.as_ref().err();
        let missing = asker.missing();
        let outcome = if let Some(CallError::UnknownTool { .. }) = failed {
            Outcome::Failed(unknown_tool(&report.tool))
        } else if let Some(end) = self.end_round(round, failed) {
            match end {
                Ok(_) => Outcome::Failed(ErrorData::internal_error(
                    "the call stopped to ask its client after it had become a task (a toolhost bug)",
                    None,
                )),
                Err(error) => Outcome::Failed(error),
            }
        } else if failed.is_some() && !missing.is_empty() {
            Outcome::Failed(crate::asking::missing_capability(&missing))
        } else {
            match serde_json::to_value(result_of(report, wrap)) {
                Ok(Value::Object(result)) => Outcome::Completed(result),
                _ => Outcome::Failed(ErrorData::internal_error("the call's result could not be written", None)),
            }
        };
        task.finish(outcome);
    }
}

//! [`ToolServer`] as rmcp's `ServerHandler`: what the server says it can
//! do, and each MCP request it answers (listing, calling, reading, prompts,
//! completions, tasks, logging level, subscriptions).

use super::*;

impl ServerHandler for ToolServer {
    fn get_info(&self) -> ServerConfig {
        let mut capabilities = ServerCapabilities::builder()
            .enable_tools()
            .enable_tool_list_changed()
            .enable_logging()
            .enable_resources()
            .enable_resources_subscribe()
            .enable_prompts()
            .enable_completions()
            .build();
        if self.shared.tasks.is_some() {
            capabilities
                .extensions
                .get_or_insert_with(Default::default)
                .insert(rmcp::model::TASKS_EXTENSION_ID.to_owned(), JsonObject::new());
        }
        ServerConfig::new(capabilities)
            .with_server_info(Implementation::new("toolhost", env!("CARGO_PKG_VERSION")))
            .with_instructions(
                "Tools run as sandboxed WebAssembly plugins: each call in a fresh instance with fuel, memory, time \
             and output limits, reaching only what the operator granted."
                    .to_owned(),
            )
    }

    async fn list_tools(
        &self,
        request: Option<PaginatedRequestParams>,
        context: RequestContext<RoleServer>,
    ) -> Result<ListToolsResult, ErrorData> {
        // While the plugins folder loads (a cold start compiles), a list
        // waits a little for it, then answers with what is ready; the rest
        // follow as `notifications/tools/list_changed`.
        let catalog = self.listable(&context.ct).await;
        let _span = request_span("tools/list", "", &context).entered();
        let listed = self.listed(&catalog);
        // Only the tools of the request's profile that its token has the
        // scopes for (a list per caller: rmcp marks it `cacheScope: "private"`).
        let everything =
            self.shared.oauth.is_none() && self.profile_of(&context).is_none_or(|profile| profile.is_everything());
        let visible: Vec<&Tool> = if everything {
            listed.iter().collect()
        } else {
            listed
                .iter()
                .filter(|tool| {
                    let origin = catalog.find(&tool.name).map(Entry::origin).unwrap_or_default();
                    self.in_scope(&context, &tool.name, origin)
                })
                .collect()
        };
        let profile = self.profile_of(&context).and_then(Profile::name).unwrap_or("");
        let binding = format!("tools/list\n{profile}\n{}", Caller::of(&context).binding());
        let cursor = request.as_ref().and_then(|request| request.cursor.as_deref());
        // A list answered while plugins still load is one page: a cursor
        // into a list that is still growing would only be refused later.
        let size = if self.host().is_loading() && cursor.is_none() { usize::MAX } else { self.shared.page_size };
        crate::pages::page(&visible, cursor, &self.shared.seal, binding.as_bytes(), size)
    }

    async fn list_resources(
        &self,
        _request: Option<PaginatedRequestParams>,
        context: RequestContext<RoleServer>,
    ) -> Result<ListResourcesResult, ErrorData> {
        let (resources, _, _) = self.offered_to(&context);
        Ok(ListResourcesResult::with_all_items(from_wire(Value::Array(resources))?))
    }

    async fn list_resource_templates(
        &self,
        _request: Option<PaginatedRequestParams>,
        context: RequestContext<RoleServer>,
    ) -> Result<ListResourceTemplatesResult, ErrorData> {
        let (_, templates, _) = self.offered_to(&context);
        Ok(ListResourceTemplatesResult::with_all_items(from_wire(Value::Array(templates))?))
    }

    async fn read_resource(
        &self,
        request: ReadResourceRequestParams,
        context: RequestContext<RoleServer>,
    ) -> Result<ReadResourceResponse, ErrorData> {
        let bound = self.load_wait();
        let catalog =
            self.settled(bound, &context.ct, |catalog| resource_plugin(catalog, &request.uri).is_some()).await;
        // A resource of a plugin the token has not the scope for is one nobody offers.
        let Some(plugin) = resource_plugin(&catalog, &request.uri).filter(|p| self.plugin_in_scope(&context, p)) else {
            return Err(offer_error(
                OfferError::NotFound(format!("the resource `{}`", request.uri)),
                Some(&request.uri),
            ));
        };
        let caller = Caller::of(&context);
        let binding = crate::asking::binding("resources/read", &request.uri, &(), &caller.binding());
        let state = request.request_state.as_deref();
        let (mut hooks, round) = self.asker(&context, binding, request.input_responses.clone(), state)?;
        let timeout = self.timeout_of(plugin);
        hooks.asker = hooks.asker.map(|asker| self.fair(asker, &caller, timeout));
        let _slot = match self.admit(&caller, &context.ct, timeout).await {
            Ok(slot) => slot,
            Err(Unadmitted::Cancelled) => return Err(ErrorData::internal_error("the read was cancelled", None)),
            Err(Unadmitted::Refused(why)) => return Err(ErrorData::internal_error(why, None)),
        };
        let who = self.audited(&caller, "serve", Some(&context));
        let read = self.host().read_resource(&catalog, &request.uri, hooks, &who).await;
        if let Some(end) = self.end_round(round, read.as_ref().err().and_then(ran)) {
            return end.map(ReadResourceResponse::InputRequired);
        }
        let blocks = read.map_err(|err| offer_error(err, Some(&request.uri)))?;
        let contents: Vec<Value> =
            blocks.iter().filter_map(|block| wire_content(block).get("resource").cloned()).collect();
        let result: ReadResourceResult = from_wire(json!({ "resultType": "complete", "contents": contents }))?;
        Ok(result.into())
    }

    async fn subscribe(
        &self,
        _request: SubscribeRequestParams,
        _context: RequestContext<RoleServer>,
    ) -> Result<(), ErrorData> {
        // A plugin's resources change only when the plugin is reloaded, which
        // says `list_changed`: there is nothing more to tell a subscriber.
        Ok(())
    }

    async fn unsubscribe(
        &self,
        _request: UnsubscribeRequestParams,
        _context: RequestContext<RoleServer>,
    ) -> Result<(), ErrorData> {
        Ok(())
    }

    async fn list_prompts(
        &self,
        _request: Option<PaginatedRequestParams>,
        context: RequestContext<RoleServer>,
    ) -> Result<ListPromptsResult, ErrorData> {
        let (_, _, prompts) = self.offered_to(&context);
        Ok(ListPromptsResult::with_all_items(from_wire(Value::Array(prompts))?))
    }

    async fn get_prompt(
        &self,
        request: GetPromptRequestParams,
        context: RequestContext<RoleServer>,
    ) -> Result<GetPromptResponse, ErrorData> {
        let bound = self.load_wait();
        let catalog = self.settled(bound, &context.ct, |catalog| prompt_plugin(catalog, &request.name).is_some()).await;
        let Some(plugin) = prompt_plugin(&catalog, &request.name).filter(|p| self.plugin_in_scope(&context, p)) else {
            return Err(offer_error(OfferError::NotFound(format!("the prompt `{}`", request.name)), None));
        };
        let caller = Caller::of(&context);
        let binding = crate::asking::binding("prompts/get", &request.name, &request.arguments, &caller.binding());
        let state = request.request_state.as_deref();
        let (mut hooks, round) = self.asker(&context, binding, request.input_responses.clone(), state)?;
        let timeout = self.timeout_of(plugin);
        hooks.asker = hooks.asker.map(|asker| self.fair(asker, &caller, timeout));
        let _slot = match self.admit(&caller, &context.ct, timeout).await {
            Ok(slot) => slot,
            Err(Unadmitted::Cancelled) => return Err(ErrorData::internal_error("the prompt was cancelled", None)),
            Err(Unadmitted::Refused(why)) => return Err(ErrorData::internal_error(why, None)),
        };
        let arguments: Vec<(String, String)> = request
            .arguments
            .unwrap_or_default()
            .into_iter()
            .map(|(name, value)| {
                let value = match value {
                    Value::String(text) => text,
                    other => other.to_string(),
                };
                (name, value)
            })
            .collect();
        let who = self.audited(&caller, "serve", Some(&context));
        let prompt = self.host().get_prompt(&catalog, &request.name, &arguments, hooks, &who).await;
        if let Some(end) = self.end_round(round, prompt.as_ref().err().and_then(ran)) {
            return end.map(GetPromptResponse::InputRequired);
        }
        let prompt = prompt.map_err(|err| offer_error(err, None))?;
        let messages: Vec<Value> = prompt
            .messages
            .iter()
            .map(|message| json!({ "role": message.role, "content": wire_content(&message.content) }))
            .collect();
        let mut wire = json!({ "resultType": "complete", "description": prompt.description, "messages": messages });
        strip_nulls(&mut wire);
        let result: GetPromptResult = from_wire(wire)?;
        Ok(result.into())
    }

    async fn complete(
        &self,
        request: CompleteRequestParams,
        context: RequestContext<RoleServer>,
    ) -> Result<CompleteResult, ErrorData> {
        use rmcp::model::Reference;
        let arguments: Vec<(String, String)> =
            request.context.and_then(|context| context.arguments).unwrap_or_default().into_iter().collect();
        let catalog = self.host().catalog();
        let (reference, plugin, what) = match &request.r#ref {
            Reference::Prompt(prompt) => (
                toolhost_runtime::offers::Reference::Prompt(&prompt.name),
                prompt_plugin(&catalog, &prompt.name),
                format!("the prompt `{}`", prompt.name),
            ),
            Reference::Resource(template) => (
                toolhost_runtime::offers::Reference::Template(&template.uri),
                template_plugin(&catalog, &template.uri),
                format!("the resource template `{}`", template.uri),
            ),
            _ => return Err(ErrorData::invalid_params("a completion reference of an unknown kind", None)),
        };
        let Some(plugin) = plugin.filter(|plugin| self.plugin_in_scope(&context, plugin)) else {
            return Err(offer_error(OfferError::NotFound(what), None));
        };
        let _slot = match self.admit(&Caller::of(&context), &context.ct, self.timeout_of(plugin)).await {
            Ok(slot) => slot,
            Err(Unadmitted::Cancelled) => {
                return Err(ErrorData::internal_error("the completion was cancelled", None));
            }
            Err(Unadmitted::Refused(why)) => return Err(ErrorData::internal_error(why, None)),
        };
        let argument = &request.argument;
        let done = self.host().complete(&catalog, reference, &argument.name, &argument.value, &arguments).await;
        let done = done.map_err(|err| offer_error(err, None))?;
        from_wire(json!({
            "resultType": "complete",
            "completion": { "values": done.values, "total": done.total, "hasMore": done.has_more },
        }))
    }

    fn get_tool(&self, name: &str) -> Option<Tool> {
        let catalog = self.host().catalog();
        self.listed(&catalog).iter().find(|tool| tool.name == name).cloned()
    }

    async fn call_tool(
        &self,
        request: CallToolRequestParams,
        context: RequestContext<RoleServer>,
    ) -> Result<CallToolResponse, ErrorData> {
        let metrics = &self.shared.metrics;
        let name = request.name.as_ref();
        let catalog = match self.catalog_with_tool(name, &context.ct).await {
            Ok(catalog) => catalog,
            Err(still_loading) => return Ok(result_of(*still_loading, false).into()),
        };
        let (origin, wrap, (support, after)) = match catalog.find(name) {
            Some(entry) if self.served(entry) && self.in_scope(&context, entry.name(), entry.origin()) => {
                (entry.origin(), wraps_output(entry), self.task_support(entry))
            }
            _ => {
                metrics.record_unknown_tool();
                // A name Wassette gives one of the tools this caller may call: say its name here.
                let known = catalog
                    .by_wassette_name(name)
                    .filter(|entry| self.served(entry) && self.in_scope(&context, entry.name(), entry.origin()));
                return Err(match known {
                    Some(entry) => ErrorData::invalid_params(
                        format!(
                            "Unknown tool: {name} (did you mean `{}`? toolhost names a component's functions by \
                             their own names, where Wassette joins package, interface and function)",
                            entry.name()
                        ),
                        None,
                    ),
                    None => unknown_tool(name),
                });
            }
        };
        let declared = context.client_capabilities().is_some_and(|capabilities| capabilities.supports_tasks());
        match (support, &self.shared.tasks) {
            (TaskSupport::Required, _)
                if !declared
                    && context
                        .protocol_version()
                        .is_some_and(|v| v.as_str() == crate::tasks::EXPERIMENTAL_REVISION) =>
            {
                // MCP 2025-11-25: a tool whose `execution.taskSupport` is `required` called without `task`.
                return Err(ErrorData::new(
                    rmcp::model::ErrorCode::METHOD_NOT_FOUND,
                    format!(
                        "`{name}` runs only as a task (its execution.taskSupport is \"required\"): call it with a \
                         `task` param, like {{\"task\": {{\"ttl\": 60000}}}}"
                    ),
                    None,
                ));
            }
            (TaskSupport::Required, _) if !declared => {
                let mut error =
                    ErrorData::missing_required_client_capability(ClientCapabilities::builder().enable_tasks().build());
                error.message = format!(
                    "`{name}` runs only as a task: the request must declare the `{}` extension in its client \
                     capabilities",
                    rmcp::model::TASKS_EXTENSION_ID
                )
                .into();
                return Err(error);
            }
            (TaskSupport::Optional | TaskSupport::Required, Some(tasks)) if declared => {
                let tasks = tasks.clone();
                let origin = origin.to_owned();
                return self.call_as_task(request, context, catalog.clone(), tasks, origin, wrap, after).await;
            }
            _ => {}
        }
        let caller = Caller::of(&context);
        // One of the requestor's call slots first, then one of the server's (in the host).
        // The call's timeout bounds its wait for a slot and for its client.
        let timeout = self.timeout_of(origin);
        let _slot = match self.admit(&caller, &context.ct, timeout).await {
            Ok(slot) => slot,
            Err(Unadmitted::Cancelled) => {
                return Err(ErrorData::internal_error(format!("the call to `{name}` was cancelled"), None));
            }
            // Refused as the server's own limits refuse a call: a tool result with `isError`.
            Err(Unadmitted::Refused(why)) => {
                let report = CallReport::rejected(name, Some(origin.to_owned()), CallError::Host(why));
                return Ok(result_of(report, wrap).into());
            }
        };
        let arguments = arguments_text(&request.arguments);
        let overrides = LimitOverrides::default();
        // Counted as running, and as cancelled unless it finishes (this
        // future may also be dropped when the client goes away).
        let active = metrics.start_call(name, origin);
        // Progress reports go to the client as `notifications/progress` for
        // the token it gave, in order, all before the result.
        let (observer, forwarding) = match context.meta.get_progress_token() {
            Some(token) => {
                let (send, forwarding) = forward_progress(context.peer.clone(), token);
                let observer: ProgressObserver = Arc::new(move |progress| {
                    let _ = send.send(progress);
                });
                (Some(observer), Some(forwarding))
            }
            None => (None, None),
        };
        let binding = crate::asking::binding("tools/call", name, &request.arguments, &caller.binding());
        let state = request.request_state.as_deref();
        let (mut hooks, round) = match self.asker(&context, binding, request.input_responses.clone(), state) {
            Ok(asking) => asking,
            Err(error) => {
                active.unknown_tool();
                return Err(error);
            }
        };
        hooks.progress = observer;
        hooks.asker = hooks.asker.map(|asker| self.fair(asker, &caller, timeout));
        // The audit line binds the result that goes out (`result_sha256`).
        hooks.result_shape = self.host().audit_logs().then(|| crate::wire::result_shape(wrap));
        let span = request_span("tools/call", name, &context);
        let who = self.audited(&caller, "serve", Some(&context));
        // Boxed: rmcp moves this handler's future into a task of its own,
        // and the sandboxed call's state is large; a pointer moves instead.
        let call = Box::pin(tracing::Instrument::instrument(
            self.host().call_as(&catalog, name, &arguments, &overrides, hooks, &who),
            span,
        ));
        // Dropping the call's future drops its store: the guest stops at its next epoch tick.
        let report = tokio::select! {
            report = call => report,
            () = context.ct.cancelled() => {
                return Err(ErrorData::internal_error(format!("the call to `{name}` was cancelled"), None));
            }
        };
        if let Some(forwarding) = forwarding {
            let _ = forwarding.await;
        }
        if let Err(CallError::UnknownTool { .. }) = &report.outcome {
            active.unknown_tool();
            return Err(unknown_tool(name));
        }
        active.finish(&report);
        self.send_logs(&report, &context).await;
        if let Some(end) = self.end_round(round, report.outcome.as_ref().err()) {
            return end.map(CallToolResponse::InputRequired);
        }
        Ok(result_of(report, wrap).into())
    }

    async fn get_task(
        &self,
        request: GetTaskParams,
        context: RequestContext<RoleServer>,
    ) -> Result<GetTaskResult, ErrorData> {
        match self.extension_task(&request.task_id, &context) {
            Ok(task) => Ok(GetTaskResult::new(task.detailed())),
            Err(error) => Ok(GetTaskResult::new(self.shared_task(&request.task_id, &context, error).await?.detailed)),
        }
    }

    async fn update_task(
        &self,
        request: UpdateTaskParams,
        context: RequestContext<RoleServer>,
    ) -> Result<(), ErrorData> {
        match self.extension_task(&request.task_id, &context) {
            Ok(task) => task.update(request.input_responses),
            Err(error) => {
                let remote = self.shared_task(&request.task_id, &context, error).await?;
                match self.shared.tasks.as_ref().and_then(|tasks| tasks.shared()) {
                    Some(shared) => shared.update(&remote, request.input_responses).await,
                    None => Ok(()),
                }
            }
        }
    }

    async fn cancel_task(
        &self,
        request: CancelTaskParams,
        context: RequestContext<RoleServer>,
    ) -> Result<(), ErrorData> {
        match self.extension_task(&request.task_id, &context) {
            Ok(task) => task.cancel(),
            Err(error) => {
                let remote = self.shared_task(&request.task_id, &context, error).await?;
                if let Some(shared) = self.shared.tasks.as_ref().and_then(|tasks| tasks.shared()) {
                    shared.cancel(&remote).await?;
                }
            }
        }
        Ok(())
    }

    async fn on_custom_request(
        &self,
        request: rmcp::model::CustomRequest,
        context: RequestContext<RoleServer>,
    ) -> Result<rmcp::model::CustomResult, ErrorData> {
        self.experimental_request(request, context).await
    }

    async fn set_level(
        &self,
        request: SetLevelRequestParams,
        _context: RequestContext<RoleServer>,
    ) -> Result<(), ErrorData> {
        *self.level.lock().unwrap_or_else(|p| p.into_inner()) = Some(request.level);
        Ok(())
    }

    async fn on_initialized(&self, context: NotificationContext<RoleServer>) {
        let mut generations = self.host().shared_catalog().subscribe();
        generations.mark_unchanged();
        let peer = context.peer;
        tokio::spawn(async move {
            while generations.changed().await.is_ok() {
                if peer.is_transport_closed() || peer.notify_tool_list_changed().await.is_err() {
                    break;
                }
            }
        });
    }

    fn accepted_subscription_filter(&self, requested: &SubscriptionFilter) -> Option<SubscriptionFilter> {
        Some(requested.supported_by(&self.get_info().capabilities))
    }

    async fn listen(&self, context: SubscriptionContext) -> Result<(), ErrorData> {
        let mut generations = self.host().shared_catalog().subscribe();
        generations.mark_unchanged();
        loop {
            tokio::select! {
                () = context.cancelled() => return Ok(()),
                changed = generations.changed() => {
                    if changed.is_err() {
                        return Ok(());
                    }
                    context
                        .sink()
                        .notify_tool_list_changed()
                        .await
                        .map_err(|err| ErrorData::internal_error(err.to_string(), None))?;
                }
            }
        }
    }
}

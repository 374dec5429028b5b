//! The `/mcp` route: the bearer token or OAuth grant checked, the request's
//! profile picked, the body bounded and read, the session's owner and record
//! checked, a target's scope required, the revision's rewriting applied, and
//! the request handed to rmcp, counted in flight until its answer is sent.

use super::*;

impl Front {
    pub(super) async fn mcp(&self, request: Request<Incoming>) -> Response<Body> {
        // A refusal before the body is read ends the connection: the client
        // must not send its next request on it while the rest of this body
        // is still in the way (it would find the connection closed).
        if let Some(token) = &self.token
            && !authorized(&request, token)
        {
            return unread(unauthorized());
        }
        let (scopes, principal, grant) = match &self.oauth {
            Some(oauth) => match oauth.check(request.headers()).await {
                Ok(grant) => (Some(grant.scopes.clone()), Some(grant.principal.clone()), Some(grant)),
                Err(refusal) => return unread(refused(refusal)),
            },
            None => (None, None, None),
        };
        // The request's profile: `/mcp/NAME`, else the one its token is bound to.
        let facts = grant.as_ref().map(|grant| crate::profiles::TokenFacts {
            subject: &grant.subject,
            client: grant.client.as_deref(),
            scopes: Some(&grant.scopes.0),
        });
        let named = request.uri().path().strip_prefix("/mcp/");
        let profile = match self.profiles.pick(named, facts.as_ref()) {
            Ok(profile) => profile,
            Err(refusal) => {
                let status = StatusCode::from_u16(refusal.status).unwrap_or(StatusCode::FORBIDDEN);
                return unread(plain_owned(status, refusal.message));
            }
        };
        if let Some(reason) = self.readiness.refusal() {
            let mut response = plain_owned(
                StatusCode::SERVICE_UNAVAILABLE,
                format!("Service Unavailable: not ready ({reason}); retry shortly"),
            );
            response.headers_mut().insert(header::RETRY_AFTER, header::HeaderValue::from_static("1"));
            return unread(response);
        }
        let declared = request
            .headers()
            .get(header::CONTENT_LENGTH)
            .and_then(|value| value.to_str().ok())
            .and_then(|value| value.parse::<u64>().ok());
        if declared.is_some_and(|length| length > self.max_body) {
            return unread(plain(
                StatusCode::PAYLOAD_TOO_LARGE,
                "Payload Too Large: the request body is over the limit",
            ));
        }
        // The body is read here, bounded, so that a new session can be refused
        // before rmcp starts one; rmcp then parses it.
        let (parts, body) = request.into_parts();
        let body = match Limited::new(body, self.max_body as usize).collect().await {
            Ok(collected) => collected.to_bytes(),
            Err(err) if err.is::<LengthLimitError>() => {
                return unread(plain(
                    StatusCode::PAYLOAD_TOO_LARGE,
                    "Payload Too Large: the request body is over the limit",
                ));
            }
            Err(_) => {
                return unread(plain(StatusCode::BAD_REQUEST, "Bad Request: the request body could not be read"));
            }
        };
        let mut parts = parts;
        // Counted until the response is sent in full, for the drain at shutdown.
        let in_flight = (parts.method == http::Method::POST).then(|| InFlight::enter(&self.in_flight));
        let mut session: Option<Arc<str>> =
            parts.headers.get("mcp-session-id").and_then(|value| value.to_str().ok()).map(Arc::from);
        let mut shared = None;
        if let (Some(records), Some(id)) = (&self.records, &session) {
            match self.look_up(records, id, principal.as_ref(), &mut parts).await {
                Ok(found) => shared = found,
                Err(response) => return response,
            }
        }
        if let Some(id) = &session
            && (shared == Some(false) || !self.session_admits(id, principal.as_ref()))
        {
            // Another principal's session is, to this one, a session that does
            // not exist: rmcp answers as it does for any unknown id.
            let foreign = format!("toolhost-no-such-session-{}", self.foreign.fetch_add(1, Ordering::Relaxed));
            if let Ok(value) = header::HeaderValue::from_str(&foreign) {
                parts.headers.insert("mcp-session-id", value);
            }
            session = Some(Arc::from(foreign));
        }
        // Every message with an id is answered: what rmcp would drop or answer
        // without its id is answered here, and a request whose id is still in
        // flight in its session is refused (rmcp would answer only one of two).
        let mut entered = None;
        let mut body = body;
        // A 2025-11-25 session's requests, when tasks run: its task requests
        // go to toolhost's own handler, and two answers are completed (revision).
        let experimental = self.tasks.is_some()
            && parts
                .headers
                .get("mcp-protocol-version")
                .and_then(|value| value.to_str().ok())
                .is_some_and(revision::rewrites);
        let mut watch = None;
        if parts.method == http::Method::POST {
            let scope = session.as_deref().map(|session| (&self.requests, session));
            match framing::check(&body, scope, experimental) {
                Checked::Pass(mut passed) => {
                    entered = passed.entered.take().map(|key| framing::Entered { set: self.requests.clone(), key });
                    // A request to run something (a tool, a resource, a prompt,
                    // a completion) that needs a scope the token lacks: 403
                    // naming it, so that the client can ask for it.
                    if let (Some(oauth), Some(scopes), Some(target)) = (&self.oauth, &scopes, &passed.target)
                        && let Some(scope) = self.scope_wanted(oauth, target, scopes)
                    {
                        return refused(oauth.insufficient(&scope, &scopes.0));
                    }
                    // rmcp reads exactly what was checked here.
                    body = Bytes::from(passed.bytes());
                    // `initialize` says which revision the session has; `tools/list` is adjusted for 2025-11-25.
                    watch = passed.watch.filter(|watch| self.tasks.is_some() && (watch.early() || experimental));
                }
                Checked::Answer(answers) => {
                    let mut response = Response::new(Full::new(Bytes::from(framing::answer_body(answers))).boxed());
                    *response.status_mut() = StatusCode::BAD_REQUEST;
                    response
                        .headers_mut()
                        .insert(header::CONTENT_TYPE, header::HeaderValue::from_static("application/json"));
                    return response;
                }
                Checked::Skip => {
                    return plain(StatusCode::BAD_REQUEST, "Bad Request: the body holds no JSON-RPC message");
                }
            }
        }
        if let Some(scopes) = scopes {
            parts.extensions.insert(scopes);
        }
        if let Some(principal) = principal.clone() {
            parts.extensions.insert(principal);
        }
        parts.extensions.insert(profile);
        let response = match session {
            Some(session) => {
                // With the store, its record decides when a session expires.
                if self.records.is_none() && self.idle_for(&session).is_some_and(|idle| idle >= self.idle) {
                    // Expired: closed now, so rmcp answers 404 and the client starts over.
                    self.close(&session).await;
                }
                let in_use = self
                    .sessions
                    .sessions
                    .read()
                    .await
                    .contains_key(&session)
                    .then(|| InUse::begin(&self.activity, session.clone()));
                // A session another replica opened is restored here by rmcp: counted in use too.
                let in_use =
                    in_use.or_else(|| (shared == Some(true)).then(|| InUse::begin(&self.activity, session.clone())));
                let ending = parts.method == http::Method::DELETE;
                let level = self.records.as_ref().and_then(|_| sessions::set_level(&body));
                // A client's answer to a call's question: the call may run on another replica.
                let answer = (self.records.is_some() && sessions::is_answer(&body)).then(|| body.clone());
                let response = self.service.handle(Request::from_parts(parts, Full::new(body))).await;
                if let (Some(records), Some(answer)) = (&self.records, answer)
                    && response.status().is_success()
                {
                    records.pass_answer(&session, &answer).await;
                }
                if let (Some(records), Some(level)) = (&self.records, level)
                    && response.status().is_success()
                    && let Err(reason) = records.set_level(&session, &level).await
                {
                    tracing::warn!("MCP session {session}: its log level was not recorded: {reason}");
                }
                if ending && response.status().is_success() {
                    self.end_tasks_of(&session);
                    self.owners.lock().unwrap_or_else(|p| p.into_inner()).remove(&session);
                }
                match in_use {
                    Some(in_use) => guard(response, in_use),
                    None => response,
                }
            }
            None if parts.method == http::Method::POST && starts_session(&body) => {
                let _opening = self.opening.lock().await;
                self.close_idle_sessions().await;
                let open = self.sessions.sessions.read().await.len();
                if open >= self.max_sessions {
                    return plain_owned(
                        StatusCode::SERVICE_UNAVAILABLE,
                        format!(
                            "Service Unavailable: {open} MCP sessions are open, the most this server allows \
                             (`max_sessions = {}` in [serve] of toolhost.toml); end one (DELETE) or wait for \
                             one to go idle, or raise `max_sessions`",
                            self.max_sessions
                        ),
                    );
                }
                let params = self.records.as_ref().and_then(|_| sessions::initialize_params(&body));
                let mut ticket = None;
                if let (Some(records), Some(principal)) = (&self.records, &principal) {
                    // One principal's sessions on every replica, counted and taken in one step.
                    match records.reserve(&sessions::owner_of(Some(principal)), self.max_sessions_per_requestor).await {
                        Ok(Ok(taken)) => ticket = Some(taken),
                        Ok(Err(held)) => return self.too_many_sessions(held),
                        Err(reason) if records.fails_open() => {
                            tracing::warn!("this MCP session is kept by this replica only: {reason}");
                        }
                        Err(reason) => return unavailable_store(&reason),
                    }
                } else if let Some(principal) = &principal {
                    // One principal cannot take every session (`[serve.oauth]`; without it there is one principal).
                    let held = self
                        .owners
                        .lock()
                        .unwrap_or_else(|p| p.into_inner())
                        .values()
                        .filter(|owner| owner.as_ref() == Some(principal))
                        .count();
                    if held >= self.max_sessions_per_requestor {
                        return self.too_many_sessions(held);
                    }
                }
                let response = self.service.handle(Request::from_parts(parts, Full::new(body))).await;
                let opened: Option<Arc<str>> =
                    response.headers().get("mcp-session-id").and_then(|value| value.to_str().ok()).map(Arc::from);
                if let Some(records) = &self.records {
                    let owner = sessions::owner_of(principal.as_ref());
                    match (&opened, &params) {
                        // Recorded before its id goes out, so every replica knows it at once.
                        (Some(session), Some(params)) => {
                            if let Err(reason) = records.open(session, &owner, params, ticket.as_deref()).await {
                                if let Some(ticket) = &ticket {
                                    records.release(&owner, ticket).await;
                                }
                                if !records.fails_open() {
                                    let _ = self.sessions.close_session(session).await;
                                    return unavailable_store(&reason);
                                }
                                tracing::warn!("MCP session {session} is kept by this replica only: {reason}");
                            }
                        }
                        _ => {
                            if let Some(ticket) = &ticket {
                                records.release(&owner, ticket).await;
                            }
                        }
                    }
                }
                match opened {
                    Some(session) => {
                        self.owners.lock().unwrap_or_else(|p| p.into_inner()).insert(session.clone(), principal);
                        guard(response, InUse::begin(&self.activity, session))
                    }
                    None => response,
                }
            }
            None => self.service.handle(Request::from_parts(parts, Full::new(body))).await,
        };
        let response = match watch {
            Some(watch) => adjusted(response, watch).await,
            None => response,
        };
        let response = match entered {
            Some(entered) => guard(response, entered),
            None => response,
        };
        match in_flight {
            // The response to a POST (a tool call's result) may be a stream: it is done when its body is.
            Some(in_flight) => guard(response, in_flight),
            None => response,
        }
    }
}

/// One request counted in flight until dropped.
struct InFlight(Arc<AtomicUsize>);

impl InFlight {
    fn enter(count: &Arc<AtomicUsize>) -> InFlight {
        count.fetch_add(1, Ordering::AcqRel);
        InFlight(count.clone())
    }
}

impl Drop for InFlight {
    fn drop(&mut self) {
        self.0.fetch_sub(1, Ordering::AcqRel);
    }
}

impl Front {
    /// The scope `target` needs that `scopes` lacks, if any: a tool's own
    /// (or its plugin's), else the scope of the plugin that would run it.
    fn scope_wanted(&self, oauth: &ResourceServer, target: &framing::Target, scopes: &GrantedScopes) -> Option<String> {
        use crate::server::{prompt_plugin, resource_plugin, template_plugin};
        let catalog = self.host.catalog();
        let scope = match target {
            framing::Target::Tool(tool) => {
                let entry = catalog.find(tool)?;
                oauth.tool_scope(entry.name(), entry.origin())?
            }
            framing::Target::Resource(uri) => oauth.plugin_scope(resource_plugin(&catalog, uri)?)?,
            framing::Target::Prompt(name) => oauth.plugin_scope(prompt_plugin(&catalog, name)?)?,
            framing::Target::Template(template) => oauth.plugin_scope(template_plugin(&catalog, template)?)?,
        };
        (!scopes.0.contains(scope)).then(|| scope.to_owned())
    }
}

//! [`ToolServer`]: the MCP server handler over the tool catalog.
//!
//! `tools/list` is the catalog (what `toolhost tools --json` lists: name,
//! description, input schema), minus tools whose approval policy is `deny`,
//! with annotations from the plugin's grants and manifest. `tools/call` runs
//! exactly what `toolhost call` runs: text output becomes text content, JSON
//! output `structuredContent` plus a text copy, every execution failure a
//! result with `isError: true` and the CLI's one-line message, and an unknown
//! (or denied) tool the JSON-RPC error -32602. Usage and refusals go in
//! `_meta` under `toolhost/usage` and `toolhost/refused`.
//!
//! With `[serve.oauth]`, a plugin's scope covers everything of it that runs
//! code: its tools, resources, resource templates, prompts and completions.
//! What a token lacks the scope for is not listed, and asking for it is
//! answered as for something nobody offers (the HTTP front answers `403`
//! naming the scope first, for step-up). Every call, read, prompt and
//! completion waits for one of its requestor's slots
//! ([`crate::caller::Requestors`]) and its questions go through
//! [`crate::caller::Fair`].

// MCP logging is deprecated by SEP-2577 (2026-07-28) but still what clients
// of both generations use to receive a server's log records.
#![allow(deprecated)]

mod builder;
mod handler;
mod owners;
mod request;
mod tasks;

pub use builder::ToolServerBuilder;
pub(crate) use owners::{prompt_plugin, resource_plugin, template_plugin};
pub(crate) use request::{arguments_text, forward_progress, request_span};

use crate::caller::{Caller, Fair, Requestors};
use crate::metrics::Metrics;
use crate::profiles::Profile;
use crate::tasks::{Outcome, Task, TaskAsker, TaskSupport, Tasks, TasksConfig};
use rmcp::model::{
    CallToolRequestParams, CallToolResponse, CancelTaskParams, ClientCapabilities, CompleteRequestParams,
    CompleteResult, CreateTaskResult, GetPromptRequestParams, GetPromptResponse, GetPromptResult, GetTaskParams,
    GetTaskResult, Implementation, InputRequiredResult, JsonObject, ListPromptsResult, ListResourceTemplatesResult,
    ListResourcesResult, ListToolsResult, LoggingLevel, LoggingMessageNotificationParam, PaginatedRequestParams,
    ProgressNotificationParam, ReadResourceRequestParams, ReadResourceResponse, ReadResourceResult, ServerCapabilities,
    ServerConfig, SetLevelRequestParams, SubscribeRequestParams, SubscriptionFilter, Tool, UnsubscribeRequestParams,
    UpdateTaskParams,
};
use rmcp::service::{NotificationContext, RequestContext, SubscriptionContext};
use rmcp::{ErrorData, RoleServer, ServerHandler};
use serde_json::{Value, json};
use std::sync::{Arc, Mutex};
use toolhost_catalog::Host;
use toolhost_catalog::host::OfferError;
use toolhost_catalog::policy::Policy;
use toolhost_catalog::{Catalog, Entry};
use toolhost_runtime::limits::LimitOverrides;
use toolhost_runtime::outcome::{CallError, CallReport};
use toolhost_runtime::sandbox::{CallHooks, Progress, ProgressObserver};

pub(crate) use crate::wire::unknown_tool;

/// How long a `tools/list` waits for the next plugin to become ready while
/// the folder loads (a cold start compiling one) before it answers with those
/// ready; the rest follow as `notifications/tools/list_changed`.
pub const LIST_WAIT: std::time::Duration = std::time::Duration::from_secs(2);

/// The longest a `tools/list` waits for a load in all (see [`LIST_WAIT`]).
pub const LIST_WAIT_MAX: std::time::Duration = std::time::Duration::from_secs(5);

/// The least a call, resource read or prompt naming something not loaded
/// yet waits for the load (the default call timeout when longer): a plugin
/// seen for the first time compiles before it is ready, which takes seconds
/// for a Rust component and can take tens on a busy machine for a Python or
/// JavaScript one. The wait ends at once when the load does, or the client
/// cancels; the call's own timeout starts when it runs.
pub const LOAD_WAIT: std::time::Duration = std::time::Duration::from_secs(60);
pub use crate::wire::{CACHED_META, RECEIPT_META, REFUSED_META, RETRY_AFTER_META, TASK_SUPPORT_META, USAGE_META};
use crate::wire::{
    describe, from_wire, level_of, offer_error, offered, ran, result_of, severity, strip_nulls, wire_content,
    wraps_output,
};

/// Why a request got none of its requestor's call slots.
pub(crate) enum Unadmitted {
    /// Its client cancelled it while it waited.
    Cancelled,
    /// Refused, the line saying why: no slot within the bound, or the store unreachable.
    Refused(String),
}

/// The MCP handler: one per session (stdio has one; HTTP one per session or
/// stateless request), all sharing the host and the list cache.
#[derive(Clone)]
pub struct ToolServer {
    shared: Arc<Shared>,
    /// The lowest log level this session asked for, if any (`logging/setLevel`).
    level: Arc<Mutex<Option<LoggingLevel>>>,
}

struct Shared {
    host: Arc<Host>,
    metrics: Arc<Metrics>,
    /// Seals the answers a 2026-07-28 client gave into `requestState`.
    seal: crate::asking::StateSeal,
    /// With `[serve.oauth]`: which tools need which scope.
    oauth: Option<Arc<crate::oauth::ResourceServer>>,
    /// The listed tools of the last catalog generation seen.
    listed: Mutex<(u64, Arc<Vec<Tool>>)>,
    /// With `[serve.tasks]`: the tasks of this process.
    tasks: Option<Arc<Tasks>>,
    /// What each requestor holds, and may hold.
    requestors: Arc<Requestors>,
    /// The profile of a request that brings none (stdio's `--profile`).
    profile: Option<Arc<Profile>>,
    /// The most tools one `tools/list` page holds.
    page_size: usize,
}

impl ToolServer {
    /// A handler serving `host`'s catalog with the default settings. Fails
    /// when [`STATE_KEY_ENV`](crate::asking::STATE_KEY_ENV) is set but too short.
    pub fn new(host: Arc<Host>) -> anyhow::Result<ToolServer> {
        ToolServer::builder(host).build()
    }

    /// A handler serving `host`'s catalog, set up by the builder's methods:
    /// every setting is given before the handler exists, so none can be
    /// dropped because the handler is already shared.
    pub fn builder(host: Arc<Host>) -> ToolServerBuilder {
        ToolServerBuilder {
            host,
            oauth: None,
            tasks: None,
            calls: None,
            questions: None,
            profile: None,
            page_size: None,
            store: None,
        }
    }

    /// The profile of a request: the one HTTP picked for it, else the server's.
    fn profile_of<'a>(&'a self, context: &'a RequestContext<RoleServer>) -> Option<&'a Profile> {
        let picked =
            context.extensions.get::<http::request::Parts>().and_then(|parts| parts.extensions.get::<Arc<Profile>>());
        picked.or(self.shared.profile.as_ref()).map(|profile| &**profile)
    }

    /// Whether the request may see the tool `name` of `origin`: its profile
    /// offers it and its token (if `[serve.oauth]`) has the scope for it.
    pub(crate) fn in_scope(&self, context: &RequestContext<RoleServer>, name: &str, origin: &str) -> bool {
        if self.profile_of(context).is_some_and(|profile| !profile.allows(name, origin)) {
            return false;
        }
        let Some(oauth) = &self.shared.oauth else { return true };
        let Some(scope) = oauth.tool_scope(name, origin) else { return true };
        granted(context).is_some_and(|granted| granted.0.contains(scope))
    }

    /// Whether the request's token (if `[serve.oauth]`) may have what
    /// plugin `plugin` offers besides tools (resources, templates, prompts,
    /// completions): the plugin's scope, if it has one.
    pub(crate) fn plugin_in_scope(&self, context: &RequestContext<RoleServer>, plugin: &str) -> bool {
        if self.profile_of(context).is_some_and(|profile| !profile.allows_plugin(plugin)) {
            return false;
        }
        let Some(oauth) = &self.shared.oauth else { return true };
        let Some(scope) = oauth.plugin_scope(plugin) else { return true };
        granted(context).is_some_and(|granted| granted.0.contains(scope))
    }

    /// `asker`, held to the requestor's question limit and to `timeout` of
    /// waiting for the client in all (the call's own timeout).
    pub(crate) fn fair(
        &self,
        asker: Arc<dyn toolhost_runtime::ask::Asker>,
        caller: &Caller,
        timeout: std::time::Duration,
    ) -> Arc<dyn toolhost_runtime::ask::Asker> {
        Arc::new(Fair::new(asker, self.shared.requestors.clone(), caller.requestor(), timeout))
    }

    /// Waits, at most `bound` (the call's timeout), for one of the
    /// requestor's call slots, unless `cancel` comes first.
    pub(crate) async fn admit(
        &self,
        caller: &Caller,
        cancel: &tokio_util::sync::CancellationToken,
        bound: std::time::Duration,
    ) -> Result<Option<crate::caller::CallSlot>, Unadmitted> {
        let requestor = caller.requestor();
        tokio::select! {
            slot = self.shared.requestors.admit(requestor.as_deref(), bound) => slot.map_err(Unadmitted::Refused),
            () = cancel.cancelled() => Err(Unadmitted::Cancelled),
        }
    }

    /// How long a call of `origin`'s may take, which also bounds how long it waits for its client.
    pub(crate) fn timeout_of(&self, origin: &str) -> std::time::Duration {
        self.host().limits_for(origin).timeout
    }

    /// How long a request naming something not loaded yet waits for the
    /// load (see [`LOAD_WAIT`]).
    pub(crate) fn load_wait(&self) -> std::time::Duration {
        self.timeout_of("").max(LOAD_WAIT)
    }

    /// The catalog once `found` holds of it, the plugins folder has
    /// finished loading, `bound` has passed or `cancelled` fired, whichever
    /// comes first (at once when nothing is loading): what a request for
    /// something not loaded yet waits on while `serve` loads in the background.
    pub(crate) async fn settled(
        &self,
        bound: std::time::Duration,
        cancelled: &tokio_util::sync::CancellationToken,
        found: impl Fn(&Catalog) -> bool,
    ) -> Arc<Catalog> {
        let host = self.host();
        let mut loading = host.loading();
        let mut generations = host.shared_catalog().subscribe();
        let deadline = tokio::time::Instant::now() + bound;
        loop {
            let catalog = host.catalog();
            if found(&catalog) {
                return catalog;
            }
            if loading.borrow_and_update().finished {
                // The last swap happens before the load says finished.
                return host.catalog();
            }
            tokio::select! {
                changed = generations.changed() => if changed.is_err() { return host.catalog() },
                changed = loading.changed() => if changed.is_err() { return host.catalog() },
                () = tokio::time::sleep_until(deadline) => return host.catalog(),
                () = cancelled.cancelled() => return host.catalog(),
            }
        }
    }

    /// The catalog for a `tools/list`: at once when nothing is loading; else
    /// once the load ends, as long as plugins keep becoming ready (each
    /// resets a wait of [`LIST_WAIT`], so a folder loading from the cache is
    /// listed whole), but no longer than `LIST_WAIT` without one (a plugin
    /// compiling) nor [`LIST_WAIT_MAX`] in all, well within what a client
    /// waits for an answer (Claude Code 2.1.197's `mcp list` reported
    /// "tools fetch failed" when a list could wait up to 15 s here).
    pub(crate) async fn listable(&self, cancelled: &tokio_util::sync::CancellationToken) -> Arc<Catalog> {
        let host = self.host();
        let mut loading = host.loading();
        let start = tokio::time::Instant::now();
        let mut deadline = start + LIST_WAIT;
        loop {
            if loading.borrow_and_update().finished {
                return host.catalog();
            }
            tokio::select! {
                changed = loading.changed() => {
                    if changed.is_err() {
                        return host.catalog();
                    }
                    deadline = (tokio::time::Instant::now() + LIST_WAIT).min(start + LIST_WAIT_MAX);
                }
                () = tokio::time::sleep_until(deadline) => return host.catalog(),
                () = cancelled.cancelled() => return host.catalog(),
            }
        }
    }

    /// The catalog for a request naming the tool `name`: at once when it
    /// is there or nothing is loading, else once it loads (within
    /// [`LOAD_WAIT`]). `Err` is the answer for a tool still loading
    /// after that: a tool result saying so, for the model to read.
    pub(crate) async fn catalog_with_tool(
        &self,
        name: &str,
        cancelled: &tokio_util::sync::CancellationToken,
    ) -> Result<Arc<Catalog>, Box<CallReport>> {
        let catalog = self.host().catalog();
        if catalog.find(name).is_some() || !self.host().is_loading() {
            return Ok(catalog);
        }
        let catalog = self.settled(self.load_wait(), cancelled, |catalog| catalog.find(name).is_some()).await;
        if catalog.find(name).is_some() || !self.host().is_loading() {
            return Ok(catalog);
        }
        let loading = self.host().loading().borrow().describe();
        Err(Box::new(CallReport::rejected(
            name,
            None,
            CallError::Host(format!(
                "`{name}` is not loaded yet: toolhost is still loading its plugins ({loading}); call it again shortly"
            )),
        )))
    }

    /// What seals `requestState` and cursors.
    pub(crate) fn seal(&self) -> &crate::asking::StateSeal {
        &self.shared.seal
    }

    /// The counters of the calls this handler (and every session of it) served.
    pub fn metrics(&self) -> &Arc<Metrics> {
        &self.shared.metrics
    }

    /// Another handler over the same host and cache, with its own session state.
    pub fn for_new_session(&self) -> ToolServer {
        ToolServer { shared: self.shared.clone(), level: Arc::new(Mutex::new(None)) }
    }

    pub(crate) fn host(&self) -> &Host {
        &self.shared.host
    }

    /// True when `entry` may be listed and called: its policy is not `deny`.
    pub(crate) fn served(&self, entry: &Entry) -> bool {
        let approvals = &self.host().config().approvals;
        let policy = match entry.mcp_server() {
            Some(server) => approvals.policy_for_server(entry.name(), server.name()),
            None => approvals.policy_for(entry.name(), entry.origin()),
        };
        policy != Policy::Deny
    }

    /// What the plugins offer besides tools, as far as the request's token may see.
    fn offered_to(&self, context: &RequestContext<RoleServer>) -> (Vec<Value>, Vec<Value>, Vec<Value>) {
        offered(&self.host().catalog(), |plugin| self.plugin_in_scope(context, plugin))
    }

    /// The tools listed for `catalog`, built once per generation.
    fn listed(&self, catalog: &Catalog) -> Arc<Vec<Tool>> {
        let mut listed = self.shared.listed.lock().unwrap_or_else(|p| p.into_inner());
        if listed.0 != catalog.generation() {
            let tools = catalog
                .tools()
                .iter()
                .filter(|entry| self.served(entry))
                .map(|entry| describe(entry, self.task_support(entry).0))
                .collect();
            *listed = (catalog.generation(), Arc::new(tools));
        }
        listed.1.clone()
    }

    async fn send_logs(&self, report: &CallReport, context: &RequestContext<RoleServer>) {
        // 2026-07-28 clients opt in per request (`_meta`), older ones per session (`logging/setLevel`).
        // With `[state] url`, the level as the session's record says (set on whichever replica).
        let recorded = context
            .extensions
            .get::<http::request::Parts>()
            .and_then(|parts| parts.extensions.get::<crate::state::sessions::SessionLevel>())
            .map(|level| level.0);
        let session = recorded.or(*self.level.lock().unwrap_or_else(|p| p.into_inner()));
        let Some(threshold) = context.meta.log_level().or(session) else { return };
        for record in &report.logs {
            let level = level_of(record);
            if severity(level) < severity(threshold) {
                continue;
            }
            let mut data = json!({ "message": record.message, "tool": report.tool });
            for (key, value) in &record.fields {
                data[key] = json!(value);
            }
            let mut param = LoggingMessageNotificationParam::new(level, data);
            if let Some(plugin) = &report.plugin {
                param = param.with_logger(plugin.clone());
            }
            if context.peer.notify_logging_message(param).await.is_err() {
                return;
            }
        }
    }
}

/// A 2026-07-28 request's round: its asker, and what its state is bound to.
pub(crate) struct Round {
    asker: Arc<crate::asking::RoundAsker>,
    binding: Vec<u8>,
}

/// The scopes of the token a request carried (`[serve.oauth]`).
fn granted(context: &RequestContext<RoleServer>) -> Option<&crate::oauth::GrantedScopes> {
    context
        .extensions
        .get::<http::request::Parts>()
        .and_then(|parts| parts.extensions.get::<crate::oauth::GrantedScopes>())
}

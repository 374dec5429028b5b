//! External MCP servers as a source of tools.
//!
//! Each `[mcp_servers.NAME]` becomes an [`McpServer`]: toolhost starts it as
//! a child process (stdio) or connects to it (Streamable HTTP), agrees on a
//! protocol revision (below), lists its tools (every page) and offers them as
//! `mcp__SERVER__TOOL` ([`names`]). Calls go to the server under its
//! `tool_timeout` (the request is cancelled with `notifications/cancelled`
//! when it runs out, or when the caller gives up, e.g. on Ctrl-C), and end in
//! the same [`CallReport`] a plugin call does: `isError` results are tool
//! failures, structured content is kept as the JSON output, and the output
//! limit applies. A server that stops is started again on the next call (then
//! with growing pauses while it keeps failing); meanwhile its calls fail with
//! a message saying so. A `notifications/tools/list_changed` marks the server
//! [`McpServer::needs_refresh`]; its tools are listed again before the next
//! model turn.
//!
//! Revisions: toolhost first asks `server/discover` (2026-07-28, stateless:
//! no handshake, the revision and client capabilities in every request's
//! `_meta`). A server that answers it is spoken to in 2026-07-28, and its
//! tool list changes come over a `subscriptions/listen` subscription. A
//! server that rejects it (every server of an older revision does) gets the
//! 2025-11-25 `initialize` handshake on the same connection, and pushes
//! `list_changed` itself. rmcp's `ClientLifecycleMode::Auto` does both; a
//! server that answers `server/discover` with something else gets the
//! handshake on a new connection. `protocol` in the config pins either
//! revision. [`McpServer::protocol`] says which one a server speaks.
//!
//! Child processes get a minimal environment (`PATH`, `HOME`, `LANG`,
//! `TMPDIR`, then the `env_vars` names and the `env` values), run in their own
//! process group, and are killed with that group when the server is dropped
//! (and, on Linux, when toolhost itself dies). Tokens and header values are
//! never logged or printed, and are scrubbed from everything a server returns.

pub mod config;
mod listing;
pub mod names;

use config::{McpServerConfig, Protocol, Transport};
use rmcp::model::{
    CallToolRequestParams, CallToolResult, ClientCapabilities, ClientConfig, ContentBlock, Implementation,
    ProtocolVersion, ResourceContents, ServerNotification, SubscriptionFilter,
};
use rmcp::service::{ClientInitializeError, NotificationContext, Peer, RunningService, ServiceError};
use rmcp::{ClientHandler, ClientLifecycleMode, ClientServiceExt, RoleClient};
use serde_json::Value;
use std::collections::VecDeque;
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};
use toolhost_grants::env::{Redactor, Secret};
use toolhost_runtime::limits::Limits;
use toolhost_runtime::outcome::{CallError, CallReport, LogRecord, ToolOutput, Usage};

/// Variables every stdio server gets from toolhost's environment (when set).
const BASE_ENV: [&str; 4] = ["PATH", "HOME", "LANG", "TMPDIR"];

/// Lines of a server's stderr kept to explain why it stopped.
const STDERR_LINES: usize = 8;

/// The pause before the second restart in a row of a server that keeps
/// failing; it doubles with every further failure, up to [`MAX_BACKOFF`].
const FIRST_BACKOFF: Duration = Duration::from_millis(500);

/// The longest pause between restarts of a server that keeps failing. A
/// connection that lasted this long ends a run of failures.
const MAX_BACKOFF: Duration = Duration::from_secs(30);

/// The pause before starting a server again after `strikes` failures in a
/// row (a crash, or a start that failed): none after the first, so a server
/// that stops once is started again by the next call; then 0.5 s, doubling,
/// up to 30 s.
fn backoff(strikes: u32) -> Duration {
    match strikes {
        0 | 1 => Duration::ZERO,
        n => FIRST_BACKOFF.saturating_mul(1 << (n - 2).min(16)).min(MAX_BACKOFF),
    }
}

/// One tool of an MCP server, as the catalog offers it.
#[derive(Debug, Clone)]
pub struct McpTool {
    /// The catalog name, `mcp__SERVER__TOOL`.
    pub name: String,
    /// The server's own name for it, used on the wire.
    pub wire_name: String,
    /// What it does (the server's description, or its title).
    pub description: String,
    /// Its input schema, as the server declared it.
    pub schema: Value,
    /// The hints the server declares (`readOnlyHint`, …): shown, never trusted.
    pub annotations: Option<rmcp::model::ToolAnnotations>,
}

/// The handler rmcp drives: says who we are, and notes `list_changed`.
#[derive(Clone)]
struct Handler {
    info: ClientConfig,
    changed: Arc<AtomicBool>,
    server: Arc<str>,
}

impl ClientHandler for Handler {
    fn get_info(&self) -> ClientConfig {
        self.info.clone()
    }

    async fn on_tool_list_changed(&self, _context: NotificationContext<RoleClient>) {
        tracing::info!(
            server = &*self.server,
            "MCP server `{}` says its tools changed (notifications/tools/list_changed)",
            self.server
        );
        self.changed.store(true, Ordering::SeqCst);
    }
}

/// A running connection.
struct Live {
    service: RunningService<RoleClient, Handler>,
    _child: Option<ChildGroup>,
    /// A stdio server's process (killed when dropped).
    _process: Option<Box<tokio::process::Child>>,
    id: u64,
    /// When it was made.
    since: Instant,
    /// Failures in a row before it (see [`backoff`]).
    strikes: u32,
}

/// The connection's state.
enum State {
    /// Not connected yet.
    Idle,
    /// Connected.
    Up(Live),
    /// Stopped or failed to start, `strikes` times in a row; `retry_at` is
    /// when a call may start it again.
    Down { error: String, strikes: u32, retry_at: Instant },
}

impl State {
    /// The state after `live` stopped: down, with one more strike unless it
    /// had been running long enough to count as well.
    fn stopped(live: &Live, error: String) -> State {
        let strikes = if live.since.elapsed() >= MAX_BACKOFF { 1 } else { live.strikes + 1 };
        State::Down { error, strikes, retry_at: Instant::now() + backoff(strikes) }
    }
}

/// One configured MCP server and its connection.
pub struct McpServer {
    name: Arc<str>,
    config: McpServerConfig,
    redactor: Redactor,
    secrets: Secrets,
    state: tokio::sync::Mutex<State>,
    tools: Mutex<Vec<Arc<McpTool>>>,
    changed: Arc<AtomicBool>,
    stderr: Arc<Mutex<VecDeque<String>>>,
    connections: AtomicU64,
    /// The revision agreed on at the last connection.
    protocol: Mutex<Option<String>>,
    /// Only the handshake is used: `protocol = "2025-11-25"`, or the server
    /// misunderstood `server/discover` once.
    legacy: AtomicBool,
    /// What was left out of what it sent, to be said once.
    notes: Arc<listing::Notes>,
}

/// The secret values a server is started or reached with, read once.
#[derive(Default)]
struct Secrets {
    bearer: Option<Secret>,
    headers: Vec<(String, Secret)>,
    env: Vec<(String, Secret)>,
}

impl McpServer {
    /// A server named `name` (not started). Reads the variables it needs from
    /// `lookup` (toolhost's environment) once; a missing bearer-token or
    /// header variable is an error naming it.
    pub fn new(
        name: &str,
        config: McpServerConfig,
        lookup: impl Fn(&str) -> Option<String>,
    ) -> Result<McpServer, String> {
        let mut secrets = Secrets::default();
        let mut scrubbed = Vec::new();
        match &config.transport {
            Transport::Stdio { env, env_vars, .. } => {
                for key in BASE_ENV {
                    if let Some(value) = lookup(key) {
                        secrets.env.push((key.to_owned(), Secret::new(value)));
                    }
                }
                for var in env_vars {
                    match lookup(var.as_str()) {
                        Some(value) => {
                            scrubbed.push((var.as_str().to_owned(), Secret::new(value.clone())));
                            secrets.env.push((var.as_str().to_owned(), Secret::new(value)));
                        }
                        None => tracing::warn!(server = name, "`{var}` (in env_vars) is not set; not passed"),
                    }
                }
                for (key, value) in env {
                    secrets.env.push((key.clone(), value.clone()));
                }
            }
            Transport::Http { bearer_token_env_var, http_headers, env_http_headers, .. } => {
                if let Some(var) = bearer_token_env_var {
                    let token = lookup(var.as_str()).ok_or_else(|| {
                        format!("`bearer_token_env_var = \"{var}\"`, but `{var}` is not set in toolhost's environment")
                    })?;
                    scrubbed.push((var.as_str().to_owned(), Secret::new(token.clone())));
                    secrets.bearer = Some(Secret::new(token));
                }
                for (header, value) in http_headers {
                    scrubbed.push((format!("header {header}"), value.clone()));
                    secrets.headers.push((header.clone(), value.clone()));
                }
                for (header, var) in env_http_headers {
                    let value = lookup(var.as_str()).ok_or_else(|| {
                        format!("header `{header}` comes from `{var}`, which is not set in toolhost's environment")
                    })?;
                    scrubbed.push((var.as_str().to_owned(), Secret::new(value.clone())));
                    secrets.headers.push((header.clone(), Secret::new(value)));
                }
            }
        }
        Ok(McpServer {
            name: name.into(),
            config,
            redactor: Redactor::new(&scrubbed),
            secrets,
            state: tokio::sync::Mutex::new(State::Idle),
            tools: Mutex::new(Vec::new()),
            changed: Arc::new(AtomicBool::new(false)),
            stderr: Arc::new(Mutex::new(VecDeque::new())),
            connections: AtomicU64::new(0),
            protocol: Mutex::new(None),
            legacy: AtomicBool::new(false),
            notes: Arc::default(),
        })
    }

    /// The server's name in the config.
    pub fn name(&self) -> &str {
        &self.name
    }

    /// The scrubber of its outputs (its secrets' values).
    pub fn redactor(&self) -> &Redactor {
        &self.redactor
    }

    /// Its settings.
    pub fn config(&self) -> &McpServerConfig {
        &self.config
    }

    /// Where it is, for messages: the command line or the URL (never a secret).
    pub fn location(&self) -> String {
        match &self.config.transport {
            Transport::Stdio { command, args, .. } => {
                std::iter::once(command.as_str()).chain(args.iter().map(String::as_str)).collect::<Vec<_>>().join(" ")
            }
            Transport::Http { url, .. } => url.clone(),
        }
    }

    /// The protocol revision it speaks (`2026-07-28`, `2025-11-25`, …), once
    /// it has been connected to.
    pub fn protocol(&self) -> Option<String> {
        self.protocol.lock().unwrap_or_else(|p| p.into_inner()).clone()
    }

    /// What was left out of what it sent since this was last asked (a tool
    /// that is not a valid MCP tool, a name listed twice, lines on its stdout
    /// that are not JSON-RPC), each said once in the server's life; its
    /// other tools are offered.
    pub fn take_notes(&self) -> Vec<String> {
        self.notes.take()
    }

    /// The tools it offered when last listed.
    pub fn tools(&self) -> Vec<Arc<McpTool>> {
        self.tools.lock().unwrap_or_else(|p| p.into_inner()).clone()
    }

    /// True when the server said its tools changed (or it was restarted)
    /// since they were last listed.
    pub fn needs_refresh(&self) -> bool {
        self.changed.load(Ordering::SeqCst)
    }

    /// Starts the server (or connects to it) and lists its tools, however
    /// long that takes: the caller bounds it ([`source::Servers::connect`]
    /// waits `startup_timeout`, then lets a non-required server go on
    /// starting in the background). On failure the server is down and the
    /// next call tries again.
    pub async fn start(&self) -> Result<Vec<Arc<McpTool>>, String> {
        let mut state = self.state.lock().await;
        match self.connect(0).await {
            Ok(live) => *state = State::Up(live),
            Err(error) => {
                *state = State::Down { error: error.clone(), strikes: 1, retry_at: Instant::now() + backoff(1) };
                return Err(error);
            }
        }
        self.refresh_locked(&state).await
    }

    /// Says that the server did not start within its `startup_timeout`.
    pub fn not_started(&self) -> String {
        format!(
            "MCP server `{}` did not start within {}s (raise its `startup_timeout`){}",
            self.name,
            self.config.startup_timeout.as_secs_f64(),
            self.stderr_tail()
        )
    }

    /// Lists the tools again (after `list_changed`, or a restart).
    pub async fn refresh(&self) -> Result<Vec<Arc<McpTool>>, String> {
        let mut state = self.state.lock().await;
        if !matches!(*state, State::Up(_)) {
            self.connect_locked(&mut state).await?;
        }
        self.refresh_locked(&state).await
    }

    async fn refresh_locked(&self, state: &State) -> Result<Vec<Arc<McpTool>>, String> {
        let State::Up(live) = state else {
            return Err(format!("MCP server `{}` is not running", self.name));
        };
        self.changed.store(false, Ordering::SeqCst);
        let peer = live.service.peer();
        let listed = tokio::time::timeout(self.config.startup_timeout, listing::list_tools(peer, &self.name))
            .await
            .map_err(|_| {
                format!(
                    "MCP server `{}` did not list its tools within {}s (raise `startup_timeout`)",
                    self.name,
                    self.config.startup_timeout.as_secs_f64()
                )
            })?
            .map_err(|err| {
                format!("MCP server `{}` could not list its tools: {}", self.name, self.scrub(err.to_string()))
            })?;
        let (listed, unreadable) = listed;
        let (offered, unusable) =
            listing::usable(&self.name, listed.iter().filter(|tool| self.config.offers(&tool.name)));
        for note in unreadable.into_iter().chain(unusable) {
            self.notes.add(self.scrub(note));
        }
        let raw: Vec<&str> = offered.iter().map(|tool| &*tool.name).collect();
        let tools: Vec<Arc<McpTool>> = names::catalog_names(&self.name, &raw)
            .into_iter()
            .zip(offered)
            .map(|(name, tool)| McpTool {
                name,
                wire_name: tool.name.to_string(),
                description: tool
                    .description
                    .as_deref()
                    .or(tool.title.as_deref())
                    .map(|text| self.scrub(toolhost_runtime::text::printable(text).into_owned()))
                    .unwrap_or_default(),
                schema: Value::Object((*tool.input_schema).clone()),
                annotations: tool.annotations.clone(),
            })
            .map(Arc::new)
            .collect();
        tracing::debug!(server = &*self.name, tools = tools.len(), "listed the server's tools");
        *self.tools.lock().unwrap_or_else(|p| p.into_inner()) = tools.clone();
        Ok(tools)
    }

    /// Connects unless connected; restarts a stopped server once its pause
    /// is over. Within the pause it fails at once, saying when it will try.
    async fn connect_locked(&self, state: &mut State) -> Result<(), String> {
        if let State::Up(live) = &*state {
            if !live.service.peer().is_transport_closed() {
                return Ok(());
            }
            *state = State::stopped(live, self.stopped_message());
        }
        let strikes = match &*state {
            State::Down { error, strikes, retry_at } => {
                let now = Instant::now();
                if now < *retry_at {
                    let wait = retry_at.duration_since(now).as_secs_f64();
                    return Err(format!(
                        "{error}; it failed {strikes} times in a row, so toolhost waits before starting it again: \
                         the first call after {wait:.1}s will (the pause doubles with each failure, up to {}s)",
                        MAX_BACKOFF.as_secs()
                    ));
                }
                *strikes
            }
            _ => 0,
        };
        match tokio::time::timeout(self.config.startup_timeout, self.connect(strikes)).await {
            Ok(Ok(live)) => {
                *state = State::Up(live);
                Ok(())
            }
            outcome => {
                let error = match outcome {
                    Ok(Err(error)) => error,
                    _ => self.not_started(),
                };
                let strikes = strikes + 1;
                *state = State::Down { error: error.clone(), strikes, retry_at: Instant::now() + backoff(strikes) };
                Err(error)
            }
        }
    }

    /// Starts or reaches the server and completes the handshake; `strikes`
    /// is how many times in a row it failed before.
    async fn connect(&self, strikes: u32) -> Result<Live, String> {
        match self.config.protocol {
            Protocol::Handshake => self.legacy.store(true, Ordering::SeqCst),
            Protocol::Stateless => {
                let only = ClientLifecycleMode::Discover { preferred_versions: vec![ProtocolVersion::V_2026_07_28] };
                return self.connect_with(strikes, only).await.map_err(|failed| match failed.legacy_may_work {
                    true => format!(
                        "{} (it seems not to offer 2026-07-28, which `protocol = \"2026-07-28\"` requires: \
                         set `protocol = \"auto\"` for it)",
                        failed.message
                    ),
                    false => failed.message,
                });
            }
            Protocol::Auto => {}
        }
        if !self.legacy.load(Ordering::SeqCst) {
            match self.connect_with(strikes, lifecycle()).await {
                Err(failed) if failed.legacy_may_work => {
                    // Some older servers answer `server/discover` with something
                    // that is neither a result nor an error rmcp can classify
                    // (e.g. an empty result): start over with the handshake.
                    tracing::debug!(server = &*self.name, "{}; trying the initialize handshake", failed.message);
                    self.legacy.store(true, Ordering::SeqCst);
                }
                other => return other.map_err(|failed| failed.message),
            }
        }
        self.connect_with(strikes, ClientLifecycleMode::Initialize).await.map_err(|failed| failed.message)
    }

    /// Starts or reaches the server and starts the connection as `lifecycle` says.
    async fn connect_with(&self, strikes: u32, lifecycle: ClientLifecycleMode) -> Result<Live, Failed> {
        let handler = Handler {
            info: ClientConfig::new(
                ClientCapabilities::default(),
                Implementation::new("toolhost", env!("CARGO_PKG_VERSION")),
            )
            .with_protocol_version(ProtocolVersion::LATEST_WITH_INITIALIZE),
            changed: self.changed.clone(),
            server: self.name.clone(),
        };
        let id = self.connections.fetch_add(1, Ordering::SeqCst) + 1;
        let handshake_failed = |err: ClientInitializeError| Failed {
            legacy_may_work: matches!(
                err,
                ClientInitializeError::ExpectedInitResult(_)
                    | ClientInitializeError::ExpectedInitResponse(_)
                    | ClientInitializeError::UncorrelatedErrorResponse { .. }
                    | ClientInitializeError::NoCompatibleProtocolVersion { .. }
                    | ClientInitializeError::JsonRpcError(_)
            ),
            message: format!(
                "MCP server `{}` failed the handshake: {}{}",
                self.name,
                without_type_names(&self.scrub(err.to_string())),
                self.stderr_tail()
            ),
        };
        match &self.config.transport {
            Transport::Stdio { command, args, cwd, .. } => {
                self.stderr.lock().unwrap_or_else(|p| p.into_inner()).clear();
                let mut cmd = tokio::process::Command::new(command);
                cmd.args(args).env_clear().kill_on_drop(true);
                cmd.envs(self.secrets.env.iter().map(|(key, value)| (key, value.expose())));
                if let Some(cwd) = cwd {
                    cmd.current_dir(cwd);
                }
                #[cfg(unix)]
                {
                    cmd.process_group(0);
                    // SAFETY: prctl is async-signal-safe; it runs in the child between fork and exec.
                    #[cfg(target_os = "linux")]
                    unsafe {
                        cmd.pre_exec(|| {
                            libc::prctl(libc::PR_SET_PDEATHSIG, libc::SIGKILL);
                            Ok(())
                        });
                    }
                }
                use std::process::Stdio;
                let mut process =
                    cmd.stdin(Stdio::piped()).stdout(Stdio::piped()).stderr(Stdio::piped()).spawn().map_err(|err| {
                        Failed::from(format!("could not start MCP server `{}` (`{command}`): {err}", self.name))
                    })?;
                let child = process.id().map(ChildGroup);
                let (Some(stdin), Some(stdout), Some(stderr)) =
                    (process.stdin.take(), process.stdout.take(), process.stderr.take())
                else {
                    return Err(Failed::from(format!("could not start MCP server `{}`: no pipes", self.name)));
                };
                tokio::spawn(forward_stderr(stderr, self.name.clone(), self.stderr.clone(), self.redactor.clone()));
                // rmcp reads the server's JSON lines through a filter that
                // drops (and notes once) anything else the server prints.
                let (from_filter, to_rmcp) = tokio::io::duplex(64 << 10);
                let redactor = self.redactor.clone();
                let scrub = move |text: String| redactor.scrub(text);
                tokio::spawn(listing::filter_stdout(stdout, to_rmcp, self.name.clone(), self.notes.clone(), scrub));
                let transport = (from_filter, stdin);
                let service = handler.serve_with_lifecycle(transport, lifecycle).await.map_err(handshake_failed)?;
                self.connected(&service);
                Ok(Live {
                    service,
                    _child: child,
                    _process: Some(Box::new(process)),
                    id,
                    since: Instant::now(),
                    strikes,
                })
            }
            Transport::Http { url, .. } => {
                let _ = rustls::crypto::ring::default_provider().install_default();
                let mut headers = http::HeaderMap::new();
                for (name, value) in &self.secrets.headers {
                    let name = http::HeaderName::from_bytes(name.as_bytes())
                        .map_err(|_| Failed::from(format!("`{name}` is not an HTTP header name")))?;
                    let mut value = http::HeaderValue::from_str(value.expose()).map_err(|_| {
                        Failed::from(format!("the value of header `{name}` has characters a header cannot carry"))
                    })?;
                    value.set_sensitive(true);
                    headers.insert(name, value);
                }
                let client = reqwest::Client::builder()
                    .default_headers(headers)
                    .connect_timeout(self.config.startup_timeout)
                    .user_agent(concat!("toolhost/", env!("CARGO_PKG_VERSION")))
                    .build()
                    .map_err(|err| Failed::from(format!("could not set up the HTTP client: {err}")))?;
                let mut config = rmcp::transport::streamable_http_client::StreamableHttpClientTransportConfig::with_uri(
                    url.as_str(),
                );
                if let Some(token) = &self.secrets.bearer {
                    config = config.auth_header(token.expose());
                }
                let transport = rmcp::transport::StreamableHttpClientTransport::with_client(client, config);
                let service = handler.serve_with_lifecycle(transport, lifecycle).await.map_err(handshake_failed)?;
                self.connected(&service);
                Ok(Live { service, _child: None, _process: None, id, since: Instant::now(), strikes })
            }
        }
    }

    /// Notes the revision a new connection speaks and, for a stateless
    /// (2026-07-28) server that announces tool list changes, subscribes to
    /// them: such a server sends none unasked.
    fn connected(&self, service: &RunningService<RoleClient, Handler>) {
        let Some(info) = service.peer().peer_info() else { return };
        let version = info.protocol_version.clone();
        let how = if version.has_initialize() { "the initialize handshake" } else { "server/discover, stateless" };
        tracing::debug!(server = &*self.name, "speaks MCP {version} ({how})");
        *self.protocol.lock().unwrap_or_else(|p| p.into_inner()) = Some(version.to_string());
        let announces = info.capabilities.tools.as_ref().and_then(|tools| tools.list_changed) == Some(true);
        if version.has_initialize() || !announces {
            return;
        }
        let peer = service.peer().clone();
        let changed = self.changed.clone();
        let server = self.name.clone();
        tokio::spawn(async move {
            let filter = SubscriptionFilter::builder().tools_list_changed().build();
            let mut subscription = match peer.listen(filter).await {
                Ok(subscription) => subscription,
                Err(err) => {
                    tracing::debug!(server = &*server, "could not subscribe to tool list changes: {err}");
                    return;
                }
            };
            // Ends with the connection.
            while let Ok(Some(notification)) = subscription.next().await {
                if matches!(notification, ServerNotification::ToolListChangedNotification(_)) {
                    tracing::info!(
                        server = &*server,
                        "MCP server `{server}` says its tools changed (subscriptions/listen)"
                    );
                    changed.store(true, Ordering::SeqCst);
                }
            }
        });
    }

    /// Calls the server's `tool` with `arguments` (a JSON object as text;
    /// blank means `{}`), within `limits.timeout` and `limits.output`.
    pub async fn call(&self, tool: &McpTool, arguments: &str, limits: &Limits) -> CallReport {
        let span = tracing::info_span!("mcp_server_call", server = %self.name, tool = %tool.name);
        tracing::Instrument::instrument(self.call_unspanned(tool, arguments, limits), span).await
    }

    async fn call_unspanned(&self, tool: &McpTool, arguments: &str, limits: &Limits) -> CallReport {
        let started = Instant::now();
        let mut report = CallReport::rejected(&tool.name, Some(self.name.to_string()), CallError::Host(String::new()));
        report.outcome = self.call_inner(tool, arguments, limits, &mut report.logs).await;
        report.usage = Usage { wall: started.elapsed(), ..Usage::default() };
        report
    }

    async fn call_inner(
        &self,
        tool: &McpTool,
        arguments: &str,
        limits: &Limits,
        logs: &mut Vec<LogRecord>,
    ) -> Result<ToolOutput, CallError> {
        let arguments = if arguments.trim().is_empty() { "{}" } else { arguments };
        let arguments = match serde_json::from_str::<Value>(arguments) {
            Ok(Value::Object(object)) => object,
            Ok(_) => return Err(CallError::InvalidArguments("the arguments must be a JSON object".to_owned())),
            Err(err) => return Err(CallError::InvalidArguments(format!("the arguments are not valid JSON: {err}"))),
        };
        let (peer, connection) = {
            let mut state = self.state.lock().await;
            let fresh = !matches!(*state, State::Up(_));
            self.connect_locked(&mut state).await.map_err(CallError::Host)?;
            let State::Up(live) = &*state else { unreachable!("connect_locked leaves the server up or fails") };
            if fresh && live.id > 1 {
                // Restarted: its tools may differ; list them again before the next turn.
                self.changed.store(true, Ordering::SeqCst);
                logs.push(LogRecord {
                    level: "info",
                    message: format!("MCP server `{}` was started again", self.name),
                    fields: Vec::new(),
                });
            }
            (live.service.peer().clone(), live.id)
        };
        let params = CallToolRequestParams::new(tool.wire_name.clone()).with_arguments(arguments);
        let result = match tokio::time::timeout(limits.timeout, call_tool(&peer, params)).await {
            // Dropping the request on timeout sends `notifications/cancelled`.
            Err(_) if limits.timeout == self.config.tool_timeout => {
                return Err(CallError::ToolTimeout { limit: limits.timeout, server: self.name.to_string() });
            }
            // The caller's own limit (`call --timeout`).
            Err(_) => return Err(CallError::Timeout { limit: limits.timeout }),
            Ok(result) => result,
        };
        match result {
            Ok(result) => self.outcome(result, limits),
            Err(ServiceError::McpError(error)) => {
                let message = self.scrub(error.message.to_string());
                within_output_limit(&message, limits)?;
                if error.code == rmcp::model::ErrorCode::INVALID_PARAMS {
                    Err(CallError::InvalidArguments(message))
                } else {
                    Err(CallError::ToolFailed(message))
                }
            }
            Err(err @ (ServiceError::TransportClosed | ServiceError::TransportSend(_))) => {
                let mut state = self.state.lock().await;
                if let State::Up(live) = &*state
                    && live.id == connection
                {
                    // Let the child's last words arrive before reporting them.
                    tokio::time::sleep(Duration::from_millis(50)).await;
                    *state = State::stopped(live, self.stopped_message());
                }
                let when = match &*state {
                    State::Down { retry_at, .. } if *retry_at > Instant::now() => format!(
                        "at the first call after {:.1}s (it keeps failing)",
                        retry_at.duration_since(Instant::now()).as_secs_f64()
                    ),
                    _ => "on the next call".to_owned(),
                };
                // rmcp names its transport's Rust type in the text; the
                // person needs what happened: its input closed, its output ended.
                let why = match &err {
                    ServiceError::TransportSend(_) => {
                        let text = err.to_string();
                        let cause = text.rsplit("error: ").next().unwrap_or_default().trim().to_owned();
                        format!("it stopped reading its input: {cause}")
                    }
                    _ => "its output ended".to_owned(),
                };
                Err(CallError::Host(format!(
                    "MCP server `{}` stopped during the call ({}){}; toolhost starts it again {when}",
                    self.name,
                    self.scrub(why),
                    self.stderr_tail()
                )))
            }
            Err(err) => Err(CallError::Host(format!("MCP server `{}`: {}", self.name, self.scrub(err.to_string())))),
        }
    }

    /// The call's result as toolhost's outcome.
    fn outcome(&self, result: CallToolResult, limits: &Limits) -> Result<ToolOutput, CallError> {
        let text = self.scrub(content_text(&result.content));
        let output = match (&result.structured_content, result.is_error) {
            (Some(structured), Some(false) | None) => {
                ToolOutput::Json(self.scrub(serde_json::to_string(structured).unwrap_or_default()))
            }
            _ => ToolOutput::Text(text),
        };
        within_output_limit(&output.as_str(), limits)?;
        if result.is_error == Some(true) {
            let message = output.as_str();
            return Err(CallError::ToolFailed(if message.is_empty() {
                "(no message)".to_owned()
            } else {
                message.into_owned()
            }));
        }
        Ok(output)
    }

    fn scrub(&self, text: String) -> String {
        self.redactor.scrub(text)
    }

    fn stopped_message(&self) -> String {
        format!("MCP server `{}` stopped{}", self.name, self.stderr_tail())
    }

    /// `; its last words: …` from the stderr kept, or nothing.
    fn stderr_tail(&self) -> String {
        let lines = self.stderr.lock().unwrap_or_else(|p| p.into_inner());
        match lines.back() {
            Some(last) => format!(" (its stderr ends: {last})"),
            None => String::new(),
        }
    }

    /// Stops the server: closes the connection and kills a child's process group.
    pub async fn shutdown(&self) {
        let mut state = self.state.lock().await;
        if let State::Up(mut live) = std::mem::replace(&mut *state, State::Idle) {
            let _ = live.service.close_with_timeout(Duration::from_millis(200)).await;
        }
    }
}

/// Why a connection could not be made.
struct Failed {
    /// What to tell a person.
    message: String,
    /// The server did not understand `server/discover` in a way rmcp could
    /// tell from a rejection: the `initialize` handshake may still work.
    legacy_may_work: bool,
}

impl From<String> for Failed {
    fn from(message: String) -> Failed {
        Failed { message, legacy_may_work: false }
    }
}

/// How a connection starts: `server/discover` for the newest revision,
/// falling back to the 2025-11-25 `initialize` handshake when the server
/// rejects it.
fn lifecycle() -> ClientLifecycleMode {
    ClientLifecycleMode::Auto {
        preferred_versions: vec![ProtocolVersion::LATEST],
        legacy_version: Some(ProtocolVersion::LATEST_WITH_INITIALIZE),
    }
}

/// `text` without the Rust type names rmcp puts in some errors
/// (`Transport [rmcp::transport::…<…>] error: …`): they say nothing to a person.
fn without_type_names(text: &str) -> String {
    let mut text = text.to_owned();
    while let Some(start) = text.find(" [rmcp::") {
        let mut depth = 0usize;
        let Some(end) = text[start + 1..].char_indices().find_map(|(at, c)| {
            match c {
                '[' => depth += 1,
                ']' => {
                    depth -= 1;
                    if depth == 0 {
                        return Some(start + 1 + at);
                    }
                }
                _ => {}
            }
            None
        }) else {
            break;
        };
        text.replace_range(start..=end, "");
    }
    text
}

/// Sends `tools/call`; dropping the future before the answer cancels the request.
async fn call_tool(peer: &Peer<RoleClient>, params: CallToolRequestParams) -> Result<CallToolResult, ServiceError> {
    peer.call_tool(params).await
}

fn within_output_limit(text: &str, limits: &Limits) -> Result<(), CallError> {
    if text.len() as u64 > limits.output.bytes() {
        return Err(CallError::OutputTooLarge {
            size: Some(toolhost_runtime::limits::ByteSize(text.len() as u64)),
            limit: limits.output,
        });
    }
    Ok(())
}

/// The content blocks as text: text as is, other kinds described in one line.
fn content_text(content: &[ContentBlock]) -> String {
    let parts: Vec<String> = content
        .iter()
        .map(|block| match block {
            ContentBlock::Text(text) => text.text.clone(),
            ContentBlock::Image(image) => format!("[image: {}, {} bytes of base64]", image.mime_type, image.data.len()),
            ContentBlock::Audio(audio) => format!("[audio: {}, {} bytes of base64]", audio.mime_type, audio.data.len()),
            ContentBlock::Resource(embedded) => match &embedded.resource {
                ResourceContents::TextResourceContents { text, .. } => text.clone(),
                ResourceContents::BlobResourceContents { uri, blob, .. } => {
                    format!("[resource {uri}: {} bytes of base64]", blob.len())
                }
                _ => "[a resource of a kind toolhost does not know]".to_owned(),
            },
            ContentBlock::ResourceLink(link) => format!("[resource link: {}]", link.uri),
            _ => "[content of a kind toolhost does not know]".to_owned(),
        })
        .collect();
    parts.join("\n")
}

/// Logs a child's stderr (scrubbed) and keeps its last lines.
async fn forward_stderr(
    stderr: tokio::process::ChildStderr,
    server: Arc<str>,
    tail: Arc<Mutex<VecDeque<String>>>,
    redactor: Redactor,
) {
    use tokio::io::AsyncBufReadExt;
    let mut lines = tokio::io::BufReader::new(stderr).lines();
    while let Ok(Some(line)) = lines.next_line().await {
        let mut line = redactor.scrub(line);
        if line.len() > 500 {
            line.truncate(line.floor_char_boundary(500));
            line.push('…');
        }
        tracing::debug!(server = &*server, "stderr: {line}");
        let mut tail = tail.lock().unwrap_or_else(|p| p.into_inner());
        if tail.len() == STDERR_LINES {
            tail.pop_front();
        }
        tail.push_back(line);
    }
}

/// A child's process group, killed (every process in it) when dropped.
struct ChildGroup(u32);

impl Drop for ChildGroup {
    fn drop(&mut self) {
        #[cfg(unix)]
        if let Ok(pgid) = i32::try_from(self.0) {
            // SAFETY: kill(2) with a negative pid signals the process group the child leads.
            unsafe {
                libc::kill(-pgid, libc::SIGKILL);
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::backoff;
    use std::time::Duration;

    #[test]
    fn restarts_back_off_from_none_to_half_a_second_doubling_to_thirty() {
        let millis = |strikes| backoff(strikes).as_millis();
        let table = [(0, 0), (1, 0), (2, 500), (3, 1000), (4, 2000), (7, 16_000), (8, 30_000), (9, 30_000)];
        for (strikes, expected) in table {
            assert_eq!(millis(strikes), expected, "after {strikes} failures");
        }
        assert_eq!(backoff(u32::MAX), Duration::from_secs(30));
    }

    #[test]
    fn type_names_are_left_out_of_errors() {
        let text = "Send message error Transport [rmcp::transport::worker::WorkerTransport<rmcp::X<reqwest::Client>>] \
                    error: HTTP 500, when send initialize request";
        assert_eq!(
            super::without_type_names(text),
            "Send message error Transport error: HTTP 500, when send initialize request"
        );
    }
}

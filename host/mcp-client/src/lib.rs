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

mod call;
pub mod config;
mod connect;
mod listing;
pub mod names;

use config::{McpServerConfig, Transport};
use connect::ChildGroup;
use rmcp::model::ClientConfig;
use rmcp::service::{NotificationContext, RunningService};
use rmcp::{ClientHandler, RoleClient};
use serde_json::Value;
use std::collections::VecDeque;
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};
use toolhost_grants::env::{Redactor, Secret};

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

#[cfg(test)]
mod tests;

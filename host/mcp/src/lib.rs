//! The MCP (Model Context Protocol) server: `toolhost serve` offers every
//! catalog tool to MCP clients over stdio or Streamable HTTP, through rmcp.
//! (The client side, external MCP servers as a tool source, is the
//! `toolhost-mcp-client` crate, below the catalog.)
//!
//! [`server::ToolServer`] is the one handler for both protocol generations:
//! 2025-11-25 (initialize, sessions, `notifications/tools/list_changed`
//! pushed to every session) and 2026-07-28 (stateless requests,
//! `subscriptions/listen`). [`serve_stdio`] and [`serve_http`] run it; the
//! HTTP side adds what a network listener needs (Host and Origin checks, an
//! optional bearer token compared in constant time, bounded bodies, bounded
//! sessions with idle expiry).

pub mod asking;
pub mod caller;
pub mod console;
pub mod framing;
pub mod http;
pub mod metrics;
pub mod oauth;
pub mod pages;
pub mod profiles;
pub mod revision;
pub mod server;
pub mod state;
pub mod tasks;
pub mod wire;

use anyhow::Result;
pub use http::{HttpOptions, serve_http};
use rmcp::ServiceExt;
use serde::Deserialize;
pub use server::{ToolServer, ToolServerBuilder};
use std::sync::Arc;
use toolhost_catalog::Host;
use toolhost_runtime::limits::{ByteSize, HumanDuration};

/// `[serve]` in `toolhost.toml`: settings of `toolhost serve --http`.
#[derive(Debug, Clone, Default, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct ServeConfig {
    /// The environment variable holding the bearer token clients must send.
    pub token_env: Option<String>,
    /// Host headers accepted besides `localhost`, `127.0.0.1` and `::1`.
    #[serde(default)]
    pub allowed_hosts: Vec<String>,
    /// Origins accepted besides `http://localhost:*`, `http://127.0.0.1:*` and `http://[::1]:*`.
    #[serde(default)]
    pub allowed_origins: Vec<String>,
    /// Sessions open at once (2025-11-25 clients); more are refused until one ends.
    pub max_sessions: Option<usize>,
    /// Sessions one token subject may have open at once (`[serve.oauth]`);
    /// a quarter of `max_sessions` unless set.
    pub max_sessions_per_requestor: Option<usize>,
    /// A session unused for this long is closed.
    pub session_idle: Option<HumanDuration>,
    /// Calls one requestor (a token's subject, else a session) may run at
    /// once; half of `max_concurrent_calls` unless set.
    pub max_calls_per_requestor: Option<usize>,
    /// Questions one requestor may have waiting for an answer at once (16 unless set).
    pub max_questions_per_requestor: Option<usize>,
    /// The largest request body accepted.
    pub max_body: Option<ByteSize>,
    /// At shutdown (SIGTERM, Ctrl-C), how long tool calls in flight may take to finish.
    pub drain: Option<HumanDuration>,
    /// OAuth 2.1 access tokens from an authorization server (`serve --http`).
    pub oauth: Option<oauth::OAuthConfig>,
    /// Which tools run as MCP tasks (`io.modelcontextprotocol/tasks`), and for how long tasks are kept.
    pub tasks: Option<tasks::TasksConfig>,
    /// The tools this server offers at all (include / exclude by tool,
    /// plugin or pattern); every tool unless set.
    pub tools: Option<profiles::ToolFilter>,
    /// Named subsets of those for some clients (`--profile NAME`,
    /// `/mcp/NAME`, or matched to a token with `[serve.oauth]`).
    #[serde(default)]
    pub profiles: std::collections::BTreeMap<String, profiles::ProfileConfig>,
    /// The most tools one `tools/list` page holds (1000 unless set).
    pub page_size: Option<usize>,
    /// The operator's page (`/console`); off unless set.
    pub console: Option<console::ConsoleConfig>,
    /// The Server Card (`/mcp/server-card`); served unless `enabled = false`.
    #[serde(default)]
    pub card: console::card::CardConfig,
}

/// What `toolhost serve` on stdio offers its one client.
#[derive(Default)]
pub struct StdioOptions {
    /// Which tools run as MCP tasks.
    pub tasks: Option<tasks::TasksConfig>,
    /// The profile the client is served (`--profile`; `[serve] tools` alone when `None`).
    pub profile: Option<Arc<profiles::Profile>>,
    /// The most tools one `tools/list` page holds.
    pub page_size: Option<usize>,
}

/// Serves MCP on stdin/stdout until the client closes it. Stdout carries
/// protocol messages only; toolhost's own logs go to stderr. When both are
/// pipes (as MCP clients launch servers) they are driven by the runtime's I/O
/// reactor rather than a blocking thread per read and write, which saves two
/// thread hand-offs per message. Every message passes [`framing`] first, so
/// each one with an id is answered, whatever it holds.
pub async fn serve_stdio(host: Arc<Host>, options: StdioOptions) -> Result<()> {
    let StdioOptions { tasks, profile, page_size } = options;
    let (stdin, stdout) = rmcp::transport::stdio_pipes();
    let runs_tasks = tasks.as_ref().is_some_and(tasks::TasksConfig::enabled);
    let transport = framing::framed(stdin, stdout, runs_tasks);
    let running = ToolServer::builder(host)
        .tasks(tasks)
        .profile(profile)
        .page_size(page_size)
        .build()?
        .serve(transport)
        .await
        .map_err(|err| anyhow::anyhow!("the MCP client did not start a session: {err}"))?;
    // rmcp sends what has been answered and closes the transport (which
    // flushes stdout) before this returns.
    running.waiting().await.map_err(|err| anyhow::anyhow!("{err}"))?;
    Ok(())
}

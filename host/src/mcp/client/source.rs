//! The MCP servers as a source of catalog entries: start them all at once,
//! publish each one's tools into the shared catalog, and list again the
//! tools of a server that said they changed (or was restarted).

use super::McpServer;
use crate::catalog::{Entry, SharedCatalog};
use crate::config::Config;
use std::sync::{Arc, Mutex};

/// A server that could not be started, or whose tools could not be listed.
#[derive(Debug, Clone)]
pub struct ServerProblem {
    /// The server's name in the config.
    pub server: String,
    /// Whether toolhost may not run without it (`required = true`).
    pub required: bool,
    /// What went wrong, and what to do.
    pub message: String,
}

/// The configured servers (enabled ones), once started.
#[derive(Default)]
pub struct Servers {
    servers: Mutex<Vec<Arc<McpServer>>>,
}

impl Servers {
    /// Starts every enabled server in `config` at once, each within its
    /// `startup_timeout`, and publishes the tools of those that answer.
    /// Returns one problem per server that did not.
    pub async fn connect(&self, config: &Config, catalog: &SharedCatalog) -> Vec<ServerProblem> {
        let mut problems = Vec::new();
        let mut servers = Vec::new();
        for (name, server) in config.mcp_servers.iter().filter(|(_, server)| server.enabled) {
            match McpServer::new(name, server.clone(), |key| std::env::var(key).ok()) {
                Ok(server) => servers.push(Arc::new(server)),
                Err(message) => problems.push(ServerProblem {
                    server: name.clone(),
                    required: server.required,
                    message: format!("MCP server `{name}` cannot be started: {message}"),
                }),
            }
        }
        self.servers.lock().unwrap_or_else(|p| p.into_inner()).extend(servers.iter().cloned());
        let started = futures_util::future::join_all(servers.iter().map(|server| async move {
            let result = server.start().await;
            (server, result)
        }))
        .await;
        for (server, result) in started {
            match result {
                Ok(_) => publish(catalog, server),
                Err(message) => problems.push(ServerProblem {
                    server: server.name().to_owned(),
                    required: server.config().required,
                    message,
                }),
            }
        }
        problems
    }

    /// Lists again the tools of every server that said they changed (or
    /// was restarted), and publishes them. A failure leaves the last list.
    pub async fn refresh(&self, catalog: &SharedCatalog) -> Vec<ServerProblem> {
        let stale: Vec<Arc<McpServer>> = self
            .servers
            .lock()
            .unwrap_or_else(|p| p.into_inner())
            .iter()
            .filter(|server| server.needs_refresh())
            .cloned()
            .collect();
        let mut problems = Vec::new();
        for server in stale {
            match server.refresh().await {
                Ok(_) => publish(catalog, &server),
                Err(message) => problems.push(ServerProblem {
                    server: server.name().to_owned(),
                    required: server.config().required,
                    message,
                }),
            }
        }
        problems
    }

    /// The servers, started or not.
    pub fn list(&self) -> Vec<Arc<McpServer>> {
        self.servers.lock().unwrap_or_else(|p| p.into_inner()).clone()
    }
}

/// Replaces `server`'s entries in the catalog with its current tools.
fn publish(catalog: &SharedCatalog, server: &Arc<McpServer>) {
    let tools = server.tools();
    catalog.update(|parts| {
        parts.external.retain(|entry| !entry.mcp_server().is_some_and(|own| Arc::ptr_eq(own, server)));
        parts.external.extend(tools.into_iter().map(|tool| Entry::mcp_tool(server.clone(), tool)));
        true
    });
}

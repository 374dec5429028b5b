//! The MCP servers as a source of catalog entries: start them all at once,
//! publish each one's tools into the shared catalog, and list again the
//! tools of a server that said they changed (or was restarted). A server
//! that is not up within its `startup_timeout` is reported once; unless it
//! is `required` it goes on starting in the background, and its tools are
//! published (a new catalog generation) when it is up.

use crate::config::HostConfig;
use crate::{Entry, SharedCatalog};
use std::sync::{Arc, Mutex};
use toolhost_mcp_client::McpServer;

/// A server that could not be started, or whose tools could not be listed.
#[derive(Debug, Clone)]
pub struct ServerProblem {
    /// The server's name in the config.
    pub server: String,
    /// Whether toolhost may not run without it (`required = true`).
    pub required: bool,
    /// What went wrong, and what to do.
    pub message: String,
    /// The server is still starting in the background: its tools join the
    /// catalog when it is up.
    pub joins_later: bool,
    /// The server is up and its other tools are offered: this says what of
    /// what it sent was left out.
    pub tools_kept: bool,
}

impl ServerProblem {
    /// `server`'s notes (see [`McpServer::take_notes`]), as problems that
    /// keep its tools.
    fn notes(server: &McpServer) -> impl Iterator<Item = ServerProblem> {
        let name = server.name().to_owned();
        server.take_notes().into_iter().map(move |message| ServerProblem {
            server: name.clone(),
            required: false,
            message,
            joins_later: false,
            tools_kept: true,
        })
    }
}

/// The configured servers (enabled ones), once started.
#[derive(Default)]
pub struct Servers {
    servers: Mutex<Vec<Arc<McpServer>>>,
}

impl Servers {
    /// Starts every enabled server in `config` at once, waits for each up to
    /// its `startup_timeout`, and publishes the tools of those that answer.
    /// Returns one problem per server that did not. A non-required server
    /// that is only slow goes on starting in the background and publishes
    /// its tools when it is up; a required one is stopped.
    pub async fn connect(&self, config: &HostConfig, catalog: &Arc<SharedCatalog>) -> Vec<ServerProblem> {
        let mut problems = Vec::new();
        let mut servers = Vec::new();
        for (name, server) in config.mcp_servers.iter().filter(|(_, server)| server.enabled) {
            match McpServer::new(name, server.clone(), |key| std::env::var(key).ok()) {
                Ok(server) => servers.push(Arc::new(server)),
                Err(message) => problems.push(ServerProblem {
                    server: name.clone(),
                    required: server.required,
                    message: format!("MCP server `{name}` cannot be started: {message}"),
                    joins_later: false,
                    tools_kept: false,
                }),
            }
        }
        self.servers.lock().unwrap_or_else(|p| p.into_inner()).extend(servers.iter().cloned());
        let started = futures_util::future::join_all(servers.iter().map(|server| async move {
            let mut starting = tokio::spawn({
                let server = server.clone();
                async move { server.start().await }
            });
            match tokio::time::timeout(server.config().startup_timeout, &mut starting).await {
                Ok(started) => {
                    let result = started.unwrap_or_else(|err| Err(format!("MCP server `{}`: {err}", server.name())));
                    (server, result, None)
                }
                Err(_) => (server, Err(server.not_started()), Some(starting)),
            }
        }))
        .await;
        for (server, result, starting) in started {
            problems.extend(ServerProblem::notes(server));
            let Err(message) = result else {
                publish(catalog, server);
                continue;
            };
            let required = server.config().required;
            let joins_later = match starting {
                // Dropping the start stops the child.
                Some(starting) if required => {
                    starting.abort();
                    false
                }
                Some(starting) => {
                    let (catalog, server) = (catalog.clone(), server.clone());
                    tokio::spawn(async move {
                        match starting.await {
                            Ok(Ok(tools)) => {
                                // Published first: whoever reads the line finds the tools there.
                                publish(&catalog, &server);
                                tracing::info!(
                                    server = server.name(),
                                    "MCP server `{}` is up after all: its {} tools joined",
                                    server.name(),
                                    tools.len()
                                );
                            }
                            Ok(Err(message)) => tracing::info!(server = server.name(), "{message}"),
                            Err(_) => {}
                        }
                    });
                    true
                }
                None => false,
            };
            problems.push(ServerProblem {
                server: server.name().to_owned(),
                required,
                message,
                joins_later,
                tools_kept: false,
            });
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
            let refreshed = server.refresh().await;
            problems.extend(ServerProblem::notes(&server));
            match refreshed {
                Ok(_) => publish(catalog, &server),
                Err(message) => problems.push(ServerProblem {
                    server: server.name().to_owned(),
                    required: server.config().required,
                    message,
                    joins_later: false,
                    tools_kept: false,
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

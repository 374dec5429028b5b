//! Connecting to a server: started as a child process in its own process
//! group (its stderr logged and its last lines kept) or reached over
//! Streamable HTTP, the revision agreed (`server/discover`, else the
//! `initialize` handshake), restarts paced by the backoff.

use super::config::{Protocol, Transport};
use super::{Handler, Live, MAX_BACKOFF, McpServer, STDERR_LINES, State, backoff, listing};
use rmcp::model::{
    ClientCapabilities, ClientConfig, Implementation, ProtocolVersion, ServerNotification, SubscriptionFilter,
};
use rmcp::service::{ClientInitializeError, RunningService};
use rmcp::{ClientLifecycleMode, ClientServiceExt, RoleClient};
use std::collections::VecDeque;
use std::sync::atomic::Ordering;
use std::sync::{Arc, Mutex};
use std::time::Instant;
use toolhost_grants::env::Redactor;

impl McpServer {
    /// Connects unless connected; restarts a stopped server once its pause
    /// is over. Within the pause it fails at once, saying when it will try.
    pub(super) async fn connect_locked(&self, state: &mut State) -> Result<(), String> {
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
    pub(super) async fn connect(&self, strikes: u32) -> Result<Live, String> {
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
pub(super) fn without_type_names(text: &str) -> String {
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
pub(super) struct ChildGroup(u32);

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

//! `toolhost serve --http`: MCP over Streamable HTTP at `/mcp`, on hyper's
//! HTTP/1.1 server (no web framework), and beside it what a load balancer
//! and an operator need: `/healthz`, `/readyz` and `/metrics`.
//!
//! In front of rmcp's `StreamableHttpService`, every `/mcp` request passes,
//! in order: the bearer token when one is set (compared in constant time,
//! else 401 with `WWW-Authenticate: Bearer`), readiness (503 when shutting
//! down; while plugins load `/mcp` answers and only `/readyz` says 503), and
//! the declared body size (else 413). rmcp then
//! checks `Host` and `Origin` against the allowed lists (DNS-rebinding
//! protection: 403), the protocol version header, the session, and bounds
//! the body it reads.
//!
//! Sessions (2025-11-25 clients) are bounded here too: an `initialize` past
//! `max_sessions` open ones gets 503 saying so, and a session with no request
//! open and none for `session_idle` is closed (its next request gets the
//! spec's 404 for an unknown session, so the client initializes again). A
//! session listening on its GET stream is in use, not idle.
//!
//! With `[serve.oauth]` a session belongs to the principal whose token
//! opened it (who may have at most `max_sessions_per_requestor` open): a request carrying another principal's token with its
//! `Mcp-Session-Id` is handed to rmcp as a request for a session that does
//! not exist, so it gets exactly the answer (404) of an unknown session, and
//! never touches the session (no in-flight id, no use, no end). A request
//! that asks a plugin to run something its token lacks the scope for (a
//! tool, a resource, a prompt, a completion) is 403 naming the scope.
//!
//! With `[state] url` sessions are every replica's ([`sessions`]): a
//! session's record is written to the store when its `initialize` succeeds
//! (before its id goes out), every request naming a session is checked
//! against the record first (its owner; no record is an unknown session,
//! and a copy held here is closed), rmcp restores a session this replica
//! holds no copy of from the record, `max_sessions_per_requestor` is counted
//! in the store, and the record, not this replica's use, decides expiry.
//! With the store unreachable a session's requests get 503 naming it, or
//! (`on_unavailable = "open"`) this replica's copy answers alone.
//!
//! The operator endpoints answer `GET` (and `HEAD`) after the same `Host`
//! check (403): `/healthz` is 200 while the process serves, `/readyz` 200
//! once ready and 503 with the reason before (and while shutting down), both
//! without a token; `/metrics` (the Prometheus text format, [`super::metrics`])
//! asks for the bearer token when one is set. Any other path is 404.
//!
//! When `stop` is cancelled the server stops accepting, lets the requests in
//! flight finish (tool calls up to `drain`), then ends the streams left open.

use super::ServeConfig;
use super::framing::{self, Checked, InFlight as InFlightRequests};
use super::metrics::{self, Endpoint, Metrics, Readiness, Snapshot};
use super::oauth::{GrantedScopes, Principal, ResourceServer};
use super::revision;
use super::server::ToolServer;
use super::state::sessions::{self, SessionRecords};
use anyhow::Result;
use bytes::Bytes;
use http::{Request, Response, StatusCode, header};
use http_body_util::LengthLimitError;
use http_body_util::{BodyExt, Full, Limited, combinators::BoxBody};
use hyper::body::Incoming;
use hyper_util::rt::{TokioIo, TokioTimer};
use rmcp::transport::streamable_http_server::session::SessionManager;
use rmcp::transport::streamable_http_server::session::local::{LocalSessionManager, SessionConfig};
use rmcp::transport::streamable_http_server::{StreamableHttpServerConfig, StreamableHttpService};
use std::collections::HashMap;
use std::convert::Infallible;
use std::sync::atomic::{AtomicU64, AtomicUsize, Ordering};
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};
use subtle::ConstantTimeEq;
use tokio::net::TcpListener;
use tokio_util::sync::CancellationToken;
use toolhost_catalog::{Host, ProblemKind};

mod answers;
mod console;
mod hosts;
mod lifecycle;
mod route;

use answers::{adjusted, guard, plain, plain_owned, refused, unauthorized, unavailable_store, unread};
use hosts::{Authority, host_allowed};
use lifecycle::{InUse, Use, starts_session};

/// The largest request body accepted unless configured otherwise.
pub const DEFAULT_MAX_BODY: u64 = 4 << 20;
/// Sessions open at once unless configured otherwise.
pub const DEFAULT_MAX_SESSIONS: usize = 64;
/// The share of `max_sessions` one principal may hold unless configured
/// otherwise: a quarter (at least one).
pub const DEFAULT_SESSIONS_PER_REQUESTOR_SHARE: usize = 4;
/// An idle session is closed after this long unless configured otherwise.
pub const DEFAULT_SESSION_IDLE: Duration = Duration::from_secs(30 * 60);
/// How long tool calls in flight may take to finish at shutdown unless configured otherwise.
pub const DEFAULT_DRAIN: Duration = Duration::from_secs(20);

/// How the HTTP endpoint is protected and bounded.
#[derive(Clone)]
pub struct HttpOptions {
    /// The bearer token clients must send, if any.
    pub token: Option<String>,
    /// Host headers accepted besides the loopback names.
    pub allowed_hosts: Vec<String>,
    /// Origins accepted besides the loopback ones.
    pub allowed_origins: Vec<String>,
    /// Sessions open at once.
    pub max_sessions: usize,
    /// Sessions one principal may have open (`None`: a quarter of `max_sessions`).
    pub max_sessions_per_requestor: Option<usize>,
    /// Idle time after which a session is closed.
    pub session_idle: Duration,
    /// The largest request body.
    pub max_body: u64,
    /// Whether `/readyz` says ready (and `/mcp` serves); shared with whoever loads the plugins.
    pub readiness: Arc<Readiness>,
    /// How long tool calls in flight may take to finish once `stop` is cancelled.
    pub drain: Duration,
    /// OAuth access tokens checked instead of a static token (`[serve.oauth]`).
    pub oauth: Option<Arc<ResourceServer>>,
    /// Which tools run as MCP tasks (`[serve.tasks]`).
    pub tasks: Option<crate::tasks::TasksConfig>,
    /// Calls one requestor may run at once (`None`: half of `max_concurrent_calls`).
    pub max_calls_per_requestor: Option<usize>,
    /// Questions one requestor may have waiting at once (`None`: 16).
    pub max_questions_per_requestor: Option<usize>,
    /// With `[state] url`: the store the replicas share tasks in.
    pub store: Option<crate::state::Store>,
    /// `[serve] tools` and `[serve.profiles]`: what each request is offered.
    pub profiles: Arc<crate::profiles::Profiles>,
    /// The most tools one `tools/list` page holds (`None`: 1000).
    pub page_size: Option<usize>,
    /// The operator's page (`[serve.console]`), when on.
    pub console: Option<crate::console::ConsoleConfig>,
    /// The Server Card (`[serve.card]`).
    pub card: crate::console::card::CardConfig,
}

impl Default for HttpOptions {
    fn default() -> Self {
        HttpOptions {
            token: None,
            allowed_hosts: Vec::new(),
            allowed_origins: Vec::new(),
            max_sessions: DEFAULT_MAX_SESSIONS,
            max_sessions_per_requestor: None,
            session_idle: DEFAULT_SESSION_IDLE,
            max_body: DEFAULT_MAX_BODY,
            readiness: Arc::new(Readiness::ready()),
            drain: DEFAULT_DRAIN,
            oauth: None,
            tasks: None,
            max_calls_per_requestor: None,
            max_questions_per_requestor: None,
            store: None,
            profiles: Arc::default(),
            page_size: None,
            console: None,
            card: Default::default(),
        }
    }
}

impl HttpOptions {
    /// The options `[serve]` sets (the token is read by the caller).
    pub fn from_config(config: &ServeConfig) -> HttpOptions {
        let defaults = HttpOptions::default();
        HttpOptions {
            token: None,
            allowed_hosts: config.allowed_hosts.clone(),
            allowed_origins: config.allowed_origins.clone(),
            max_sessions: config.max_sessions.unwrap_or(defaults.max_sessions),
            max_sessions_per_requestor: config.max_sessions_per_requestor,
            session_idle: config.session_idle.map(|idle| idle.0).unwrap_or(defaults.session_idle),
            max_body: config.max_body.map(|size| size.bytes()).unwrap_or(defaults.max_body),
            readiness: defaults.readiness,
            drain: config.drain.map(|drain| drain.0).unwrap_or(defaults.drain),
            oauth: None,
            tasks: config.tasks.clone(),
            max_calls_per_requestor: config.max_calls_per_requestor,
            max_questions_per_requestor: config.max_questions_per_requestor,
            store: None,
            profiles: Arc::default(),
            page_size: config.page_size,
            console: config.console.clone(),
            card: config.card.clone(),
        }
    }
}

type Body = BoxBody<Bytes, Infallible>;

/// Serves MCP at `http://ADDR/mcp` (and `/healthz`, `/readyz`, `/metrics`)
/// on `listener` until `stop` is cancelled, then drains.
pub async fn serve_http(
    host: Arc<Host>,
    listener: TcpListener,
    options: HttpOptions,
    stop: CancellationToken,
) -> Result<()> {
    let server = ToolServer::builder(host.clone())
        .oauth(options.oauth.clone())
        .tasks(options.tasks.clone())
        .requestor_limits(options.max_calls_per_requestor, options.max_questions_per_requestor)
        .page_size(options.page_size)
        .store(options.store.clone())
        .build()?;
    let metrics = server.metrics().clone();
    // The operator's page and the Server Card (`console`), checked before anything listens.
    if let Some(console) = &options.console {
        console.check(options.oauth.as_deref())?;
    }
    options.card.check()?;
    if options.card.enabled() && options.profiles.named("server-card").is_ok() {
        anyhow::bail!(
            "[serve.profiles.server-card]: /mcp/server-card is where the Server Card is served; name the profile \
             otherwise (or turn the card off with [serve.card] enabled = false)"
        );
    }
    let capabilities =
        serde_json::to_value(rmcp::ServerHandler::get_info(&server).capabilities).unwrap_or(serde_json::Value::Null);
    let console = options
        .console
        .as_ref()
        .filter(|console| console.enabled != Some(false))
        .map(|console| Arc::new(crate::console::Console::new(console)));
    if let Some(console) = &console {
        console.start(host.clone(), metrics.clone(), stop.clone());
    }
    let server_tasks = server.tasks();
    if let (Some(store), Some(tasks)) = (&options.store, &server_tasks) {
        tasks.share(crate::tasks::shared::StoreTasks::new(store.clone()));
    }
    let mut allowed_hosts: Vec<String> = ["localhost", "127.0.0.1", "::1"].map(String::from).to_vec();
    allowed_hosts.extend(options.allowed_hosts.iter().cloned());
    let mut allowed_origins: Vec<String> =
        ["http://localhost:*", "http://127.0.0.1:*", "http://[::1]:*"].map(String::from).to_vec();
    allowed_origins.extend(options.allowed_origins.iter().cloned());
    let hosts: Vec<Authority> = allowed_hosts.iter().filter_map(|host| Authority::parse(host)).collect();
    // rmcp's own token: cancelled only once the calls in flight are done (it ends every stream).
    let streams = CancellationToken::new();
    let config = StreamableHttpServerConfig::default()
        .with_allowed_hosts(allowed_hosts)
        .with_allowed_origins(allowed_origins)
        .enforce_origin_validation()
        .with_max_request_body_bytes(options.max_body as usize)
        .with_cancellation_token(streams.clone());
    // Idle sessions are closed by `Front` (rmcp's own keep-alive would end a
    // session's worker but leave it counted, answering 500s instead of 404).
    let mut session_config = SessionConfig::default();
    session_config.keep_alive = None;
    let mut sessions = LocalSessionManager::default();
    sessions.session_config = session_config;
    let sessions = Arc::new(sessions);
    // With `[state] url`: sessions are recorded in the store, and a replica
    // without a copy of one restores it from its record (state::sessions).
    let records = options.store.clone().map(|store| SessionRecords::new(store, options.session_idle));
    let mut config = config;
    if let Some(records) = &records {
        config.session_store = Some(Arc::new(sessions::Restore(records.clone())));
        records.listen(Arc::downgrade(&sessions));
    }
    let service: StreamableHttpService<ToolServer, LocalSessionManager> =
        StreamableHttpService::new(move || Ok(server.for_new_session()), sessions.clone(), config);
    let front = Arc::new(Front {
        service,
        sessions,
        host,
        metrics,
        in_flight: Arc::new(AtomicUsize::new(0)),
        readiness: options.readiness.clone(),
        hosts,
        token: options.token.clone(),
        oauth: options.oauth.clone(),
        max_body: options.max_body,
        max_sessions: options.max_sessions,
        max_sessions_per_requestor: options
            .max_sessions_per_requestor
            .unwrap_or(options.max_sessions / DEFAULT_SESSIONS_PER_REQUESTOR_SHARE)
            .max(1),
        idle: options.session_idle,
        activity: Arc::new(Mutex::new(HashMap::new())),
        owners: Mutex::new(HashMap::new()),
        foreign: AtomicU64::new(0),
        opening: tokio::sync::Mutex::new(()),
        requests: InFlightRequests::default(),
        tasks: server_tasks,
        records,
        profiles: options.profiles.clone(),
        console,
        card: options.card.clone(),
        capabilities,
        store: options.store.clone(),
    });
    // Closes idle sessions even when no request comes to notice them.
    let sweeper = front.clone();
    let sweep_stop = stop.clone();
    tokio::spawn(async move {
        let period = (sweeper.idle / 2).clamp(Duration::from_millis(100), Duration::from_secs(60));
        let mut tick = tokio::time::interval(period);
        tick.set_missed_tick_behavior(tokio::time::MissedTickBehavior::Delay);
        loop {
            tokio::select! {
                () = sweep_stop.cancelled() => return,
                _ = tick.tick() => sweeper.close_idle_sessions().await,
            }
        }
    });
    let in_flight = front.in_flight.clone();
    let mut connections = tokio::task::JoinSet::new();
    loop {
        while connections.try_join_next().is_some() {}
        let (stream, _) = tokio::select! {
            () = stop.cancelled() => break,
            accepted = listener.accept() => match accepted {
                Ok(accepted) => accepted,
                Err(err) => {
                    tracing::warn!("could not accept a connection: {err}");
                    tokio::time::sleep(Duration::from_millis(50)).await;
                    continue;
                }
            },
        };
        // Small JSON-RPC messages: without this, Nagle's algorithm and delayed
        // ACKs add ~40 ms to a round trip.
        let _ = stream.set_nodelay(true);
        let front = front.clone();
        let stop = stop.clone();
        connections.spawn(async move {
            let service = hyper::service::service_fn(move |request| {
                let front = front.clone();
                async move { Ok::<_, Infallible>(front.handle(request).await) }
            });
            let connection = hyper::server::conn::http1::Builder::new()
                .timer(TokioTimer::new())
                .header_read_timeout(Duration::from_secs(30))
                .serve_connection(TokioIo::new(stream), service);
            tokio::pin!(connection);
            tokio::select! {
                result = connection.as_mut() => {
                    if let Err(err) = result {
                        tracing::debug!("HTTP connection ended: {err}");
                    }
                }
                () = stop.cancelled() => {
                    // The request in flight, if any, is answered; then the connection closes.
                    connection.as_mut().graceful_shutdown();
                    if let Err(err) = connection.as_mut().await {
                        tracing::debug!("HTTP connection ended: {err}");
                    }
                }
            }
        });
    }
    // Draining: new connections are refused (a load balancer sends them
    // elsewhere), `/readyz` says so to the connections still open, and the
    // requests in flight (tool calls) get up to `drain` to be answered in
    // full. Then the streams left open (GET, `subscriptions/listen`) end.
    drop(listener);
    options.readiness.set_not_ready("shutting down");
    let deadline = tokio::time::Instant::now() + options.drain;
    while in_flight.load(Ordering::Acquire) > 0 && tokio::time::Instant::now() < deadline {
        tokio::time::sleep(Duration::from_millis(20)).await;
    }
    streams.cancel();
    let _ =
        tokio::time::timeout(Duration::from_secs(2), async { while connections.join_next().await.is_some() {} }).await;
    Ok(())
}

struct Front {
    service: StreamableHttpService<ToolServer, LocalSessionManager>,
    sessions: Arc<LocalSessionManager>,
    host: Arc<Host>,
    metrics: Arc<Metrics>,
    /// `/mcp` POSTs whose response has not been sent in full yet.
    in_flight: Arc<AtomicUsize>,
    readiness: Arc<Readiness>,
    /// The Host headers accepted (what rmcp checks on `/mcp`), parsed once.
    hosts: Vec<Authority>,
    token: Option<String>,
    oauth: Option<Arc<ResourceServer>>,
    max_body: u64,
    max_sessions: usize,
    /// Sessions one principal may have open (`[serve.oauth]`).
    max_sessions_per_requestor: usize,
    /// A session unused for this long is closed.
    idle: Duration,
    /// The use of every session opened here.
    activity: Arc<Mutex<HashMap<Arc<str>, Use>>>,
    /// The principal every session opened here belongs to (`None` without `[serve.oauth]`).
    owners: Mutex<HashMap<Arc<str>, Option<Principal>>>,
    /// Numbers the session ids that stand for another principal's session.
    foreign: AtomicU64,
    /// Held from the session count to the new session's creation, so that
    /// concurrent `initialize`s cannot open more than `max_sessions`.
    opening: tokio::sync::Mutex<()>,
    /// The requests of each session not answered yet (see [`framing`]).
    requests: InFlightRequests,
    /// The tasks of this process, when tools may run as tasks (`[serve.tasks]`).
    tasks: Option<Arc<crate::tasks::Tasks>>,
    /// With `[state] url`: every replica's sessions.
    records: Option<Arc<SessionRecords>>,
    /// What each request is offered (`[serve] tools`, `[serve.profiles]`).
    profiles: Arc<crate::profiles::Profiles>,
    /// The operator's page, when on (`[serve.console]`).
    console: Option<Arc<crate::console::Console>>,
    /// The Server Card's settings (`[serve.card]`).
    card: crate::console::card::CardConfig,
    /// The capabilities the MCP handler declares, for the card.
    capabilities: serde_json::Value,
    /// With `[state] url`: the shared store, whose health the page shows.
    store: Option<crate::state::Store>,
}

impl Front {
    async fn handle(&self, request: Request<Incoming>) -> Response<Body> {
        if let Some(oauth) = &self.oauth {
            let path = request.uri().path();
            if path == oauth.metadata_path() || path == "/.well-known/oauth-protected-resource" {
                return self.resource_metadata(oauth, &request);
            }
        }
        if let Some(response) = self.console_or_card(&request).await {
            self.metrics.record_http(Endpoint::Other, response.status().as_u16());
            return response;
        }
        let endpoint = Endpoint::of(request.uri().path());
        let response = match endpoint {
            Endpoint::Mcp => self.mcp(request).await,
            Endpoint::Other => plain(
                StatusCode::NOT_FOUND,
                "Not Found: the MCP endpoint is /mcp (and /healthz, /readyz, /metrics for operators)",
            ),
            _ => self.operator(endpoint, &request).await,
        };
        self.metrics.record_http(endpoint, response.status().as_u16());
        response
    }

    /// The protected resource metadata (RFC 9728), to anyone who passes the Host check.
    fn resource_metadata(&self, oauth: &ResourceServer, request: &Request<Incoming>) -> Response<Body> {
        if request.method() != http::Method::GET && request.method() != http::Method::HEAD {
            return plain(StatusCode::METHOD_NOT_ALLOWED, "Method Not Allowed: use GET");
        }
        if !host_allowed(request, &self.hosts) {
            return plain(StatusCode::FORBIDDEN, "Forbidden: Host header is not allowed");
        }
        let mut response = plain_owned(StatusCode::OK, oauth.metadata().to_string());
        response.headers_mut().insert(header::CONTENT_TYPE, header::HeaderValue::from_static("application/json"));
        response
    }

    /// `/healthz`, `/readyz` and `/metrics`.
    async fn operator(&self, endpoint: Endpoint, request: &Request<Incoming>) -> Response<Body> {
        if request.method() != http::Method::GET && request.method() != http::Method::HEAD {
            let mut response = plain(StatusCode::METHOD_NOT_ALLOWED, "Method Not Allowed: use GET");
            response.headers_mut().insert(header::ALLOW, header::HeaderValue::from_static("GET, HEAD"));
            return response;
        }
        if !host_allowed(request, &self.hosts) {
            return plain(StatusCode::FORBIDDEN, "Forbidden: Host header is not allowed");
        }
        match endpoint {
            Endpoint::Healthz => plain(StatusCode::OK, "ok\n"),
            Endpoint::Readyz => match self.readiness.reason() {
                None => plain(StatusCode::OK, "ready\n"),
                Some(reason) => plain_owned(StatusCode::SERVICE_UNAVAILABLE, format!("not ready: {reason}\n")),
            },
            _ => {
                if let Some(token) = &self.token
                    && !authorized(request, token)
                {
                    return unauthorized();
                }
                if let Some(oauth) = &self.oauth
                    && let Err(refusal) = oauth.check(request.headers()).await
                {
                    return refused(refusal);
                }
                let catalog = self.host.catalog();
                let snapshot = Snapshot {
                    ready: self.readiness.is_ready(),
                    sessions: self.sessions.sessions.read().await.len(),
                    catalog_generation: catalog.generation(),
                    tools: catalog.tools().len(),
                    plugins: catalog.plugins().len(),
                    load_problems: catalog.problems().iter().filter(|p| p.kind != ProblemKind::Grant).count(),
                    cache: self.host.cache_stats(),
                };
                let mut response = plain_owned(StatusCode::OK, self.metrics.render(&snapshot));
                response
                    .headers_mut()
                    .insert(header::CONTENT_TYPE, header::HeaderValue::from_static(metrics::CONTENT_TYPE));
                response
            }
        }
    }
}

/// token. The comparison takes the same time wherever the first difference is.
fn authorized<B>(request: &Request<B>, token: &str) -> bool {
    let Some(value) = request.headers().get(header::AUTHORIZATION) else { return false };
    let Some(given) = value.as_bytes().strip_prefix(b"Bearer ") else { return false };
    given.ct_eq(token.as_bytes()).into()
}

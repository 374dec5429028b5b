//! `toolhost serve --http`: MCP over Streamable HTTP at `/mcp`, on hyper's
//! HTTP/1.1 server (no web framework).
//!
//! In front of rmcp's `StreamableHttpService`, every request passes, in
//! order: the path (`/mcp`, else 404), the bearer token when one is set
//! (compared in constant time, else 401 with `WWW-Authenticate: Bearer`),
//! and the declared body size (else 413). rmcp then checks `Host` and
//! `Origin` against the allowed lists (DNS-rebinding protection: 403), the
//! protocol version header, the session, and bounds the body it reads.

use super::ServeConfig;
use super::server::ToolServer;
use crate::Host;
use anyhow::Result;
use bytes::Bytes;
use http::{Request, Response, StatusCode, header};
use http_body_util::LengthLimitError;
use http_body_util::{BodyExt, Full, Limited, combinators::BoxBody};
use hyper::body::Incoming;
use hyper_util::rt::{TokioIo, TokioTimer};
use rmcp::transport::streamable_http_server::session::local::{LocalSessionManager, SessionConfig};
use rmcp::transport::streamable_http_server::{StreamableHttpServerConfig, StreamableHttpService};
use std::convert::Infallible;
use std::sync::Arc;
use std::time::Duration;
use subtle::ConstantTimeEq;
use tokio::net::TcpListener;
use tokio_util::sync::CancellationToken;

/// The largest request body accepted unless configured otherwise.
pub const DEFAULT_MAX_BODY: u64 = 4 << 20;
/// Sessions open at once unless configured otherwise.
pub const DEFAULT_MAX_SESSIONS: usize = 64;
/// An idle session is closed after this long unless configured otherwise.
pub const DEFAULT_SESSION_IDLE: Duration = Duration::from_secs(30 * 60);

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
    /// Idle time after which a session is closed.
    pub session_idle: Duration,
    /// The largest request body.
    pub max_body: u64,
}

impl Default for HttpOptions {
    fn default() -> Self {
        HttpOptions {
            token: None,
            allowed_hosts: Vec::new(),
            allowed_origins: Vec::new(),
            max_sessions: DEFAULT_MAX_SESSIONS,
            session_idle: DEFAULT_SESSION_IDLE,
            max_body: DEFAULT_MAX_BODY,
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
            session_idle: config.session_idle.map(|idle| idle.0).unwrap_or(defaults.session_idle),
            max_body: config.max_body.map(|size| size.bytes()).unwrap_or(defaults.max_body),
        }
    }
}

type Body = BoxBody<Bytes, Infallible>;

/// Serves MCP at `http://ADDR/mcp` on `listener` until `stop` is cancelled.
pub async fn serve_http(
    host: Arc<Host>,
    listener: TcpListener,
    options: HttpOptions,
    stop: CancellationToken,
) -> Result<()> {
    let server = ToolServer::new(host);
    let mut allowed_hosts: Vec<String> = ["localhost", "127.0.0.1", "::1"].map(String::from).to_vec();
    allowed_hosts.extend(options.allowed_hosts.iter().cloned());
    let mut allowed_origins: Vec<String> =
        ["http://localhost:*", "http://127.0.0.1:*", "http://[::1]:*"].map(String::from).to_vec();
    allowed_origins.extend(options.allowed_origins.iter().cloned());
    let config = StreamableHttpServerConfig::default()
        .with_allowed_hosts(allowed_hosts)
        .with_allowed_origins(allowed_origins)
        .enforce_origin_validation()
        .with_max_request_body_bytes(options.max_body as usize)
        .with_cancellation_token(stop.child_token());
    let mut session_config = SessionConfig::default();
    session_config.keep_alive = Some(options.session_idle);
    let mut sessions = LocalSessionManager::default();
    sessions.session_config = session_config;
    let sessions = Arc::new(sessions);
    let service: StreamableHttpService<ToolServer, LocalSessionManager> =
        StreamableHttpService::new(move || Ok(server.for_new_session()), sessions.clone(), config);
    let front = Arc::new(Front {
        service,
        sessions,
        token: options.token.clone(),
        max_body: options.max_body,
        max_sessions: options.max_sessions,
    });
    loop {
        let (stream, _) = tokio::select! {
            () = stop.cancelled() => return Ok(()),
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
        tokio::spawn(async move {
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
                () = stop.cancelled() => connection.as_mut().graceful_shutdown(),
            }
        });
    }
}

struct Front {
    service: StreamableHttpService<ToolServer, LocalSessionManager>,
    sessions: Arc<LocalSessionManager>,
    token: Option<String>,
    max_body: u64,
    max_sessions: usize,
}

impl Front {
    async fn handle(&self, request: Request<Incoming>) -> Response<Body> {
        if request.uri().path() != "/mcp" {
            return plain(StatusCode::NOT_FOUND, "Not Found: the MCP endpoint is /mcp");
        }
        if let Some(token) = &self.token
            && !authorized(&request, token)
        {
            let mut response = plain(StatusCode::UNAUTHORIZED, "Unauthorized: send `Authorization: Bearer TOKEN`");
            response.headers_mut().insert(header::WWW_AUTHENTICATE, header::HeaderValue::from_static("Bearer"));
            return response;
        }
        let declared = request
            .headers()
            .get(header::CONTENT_LENGTH)
            .and_then(|value| value.to_str().ok())
            .and_then(|value| value.parse::<u64>().ok());
        if declared.is_some_and(|length| length > self.max_body) {
            return plain(StatusCode::PAYLOAD_TOO_LARGE, "Payload Too Large: the request body is over the limit");
        }
        // The body is read here, bounded, so that a new session can be refused
        // before rmcp starts one; rmcp then parses it.
        let (parts, body) = request.into_parts();
        let body = match Limited::new(body, self.max_body as usize).collect().await {
            Ok(collected) => collected.to_bytes(),
            Err(err) if err.is::<LengthLimitError>() => {
                return plain(StatusCode::PAYLOAD_TOO_LARGE, "Payload Too Large: the request body is over the limit");
            }
            Err(_) => return plain(StatusCode::BAD_REQUEST, "Bad Request: the request body could not be read"),
        };
        if parts.method == http::Method::POST
            && !parts.headers.contains_key("mcp-session-id")
            && starts_session(&body)
            && self.sessions.sessions.read().await.len() >= self.max_sessions
        {
            return plain(
                StatusCode::SERVICE_UNAVAILABLE,
                "Service Unavailable: too many open sessions (`max_sessions` in [serve]); try again later",
            );
        }
        self.service.handle(Request::from_parts(parts, Full::new(body))).await
    }
}

/// True when `body` is an `initialize` request (which opens a session).
fn starts_session(body: &[u8]) -> bool {
    #[derive(serde::Deserialize)]
    struct Method<'a> {
        #[serde(borrow)]
        method: Option<&'a str>,
    }
    serde_json::from_slice::<Method>(body).is_ok_and(|message| message.method == Some("initialize"))
}

/// True when `request` carries `Authorization: Bearer TOKEN` with the right
/// token. The comparison takes the same time wherever the first difference is.
fn authorized(request: &Request<Incoming>, token: &str) -> bool {
    let Some(value) = request.headers().get(header::AUTHORIZATION) else { return false };
    let Some(given) = value.as_bytes().strip_prefix(b"Bearer ") else { return false };
    given.ct_eq(token.as_bytes()).into()
}

fn plain(status: StatusCode, text: &'static str) -> Response<Body> {
    let mut response = Response::new(Full::new(Bytes::from_static(text.as_bytes())).boxed());
    *response.status_mut() = status;
    response.headers_mut().insert(header::CONTENT_TYPE, header::HeaderValue::from_static("text/plain; charset=utf-8"));
    response
}

//! Outgoing network traffic of one call: every `wasi:http` request and every
//! `wasi:sockets` connection goes through the checks here.
//!
//! [`Outbound`] is the call's [`WasiHttpHooks`]: toolhost sends each request
//! itself rather than through wasmtime's default client. Before anything
//! leaves, the request's scheme, host and port are checked against the
//! plugin's [`NetworkGrant`] and the call's request count; a refused request
//! gets the standard `HTTP-request-denied` (or `connection-limit-reached`)
//! error. An admitted one is resolved here, every resolved address is checked
//! ([`HostPattern::may_reach`]: no loopback or private address unless the
//! entry names it), and the connection goes to a checked address, so a DNS
//! answer that changes between check and connect cannot redirect it. HTTPS
//! trusts webpki's roots plus the config's `ca_file`, through a TLS client
//! configuration built once per `Host`.
//!
//! The guest's request body is read to its end whatever becomes of the
//! request ([`GuestBody`]): a body hyper leaves off (a `GET` or `HEAD` without
//! a declared length), a request refused or failed before its body went out,
//! a server that answered and closed first: the guest's writes and `finish`
//! after `handle()` still succeed, in whatever order its client library makes
//! them, and what happened reaches it through the response, as the WASI HTTP
//! contract has it (a body stopped at the limit below included).
//!
//! The request body is counted against the call's `http_request_body` limit
//! as it streams out ([`Metered`]): a request declaring a longer body is not
//! sent, and one that streams past the limit is stopped before the chunk that
//! would cross it (`HTTP-request-body-size`). The response body is counted
//! against the call's `http_response` limit (cut or failed, as configured) and
//! the whole exchange is bounded by the per-request timeout and the call's
//! deadline: a response stalled past it fails in the plugin as
//! `HTTP-response-timeout`, before its head or in its body. Redirects are not
//! followed here: a guest that follows one sends a new request, checked like
//! the first.
//!
//! Every refusal is written to the call's [`Ledger`], which ends up in the
//! `CallReport` naming the host.

use crate::limits::{ByteSize, Limits, Oversized};
use crate::outcome::{Contact, RefusalReason};
use http_body_util::BodyExt;
use std::future::Future;
use std::sync::Arc;
use std::sync::atomic::AtomicBool;
use std::time::{Duration, Instant};
use toolhost_grants::leaks::{self, BodyScan, Bound};
use toolhost_grants::names::CanonicalHost;
use toolhost_grants::network::{Admission, HostPattern, NetworkGrant, Scheme};
use wasmtime_wasi_http::p2::bindings::http::types::ErrorCode;
use wasmtime_wasi_http::{Error, RequestOptions, WasiBody, WasiHttpHooks};

mod exchange;
mod ledger;
mod request_body;
mod response_body;
mod sockets;
pub(crate) use ledger::SharedLedger;
use request_body::{GuestBody, Metered};
use response_body::Bounded;
pub(crate) use sockets::configure_sockets;

/// The `wasi:http` hooks of one call.
pub(crate) struct Outbound {
    grant: Arc<NetworkGrant>,
    limits: Limits,
    deadline: Instant,
    ledger: SharedLedger,
    tls: Arc<rustls::ClientConfig>,
}

impl Outbound {
    /// Hooks for a call under `limits` ending at `deadline`, for a plugin
    /// granted `grant`, speaking TLS with `tls`.
    pub(crate) fn new(
        grant: Arc<NetworkGrant>,
        limits: Limits,
        deadline: Instant,
        ledger: SharedLedger,
        tls: Arc<rustls::ClientConfig>,
    ) -> Outbound {
        Outbound { grant, limits, deadline, ledger, tls }
    }

    /// Moves the call's deadline `by` later (the time it waited for answers).
    pub fn postpone(&mut self, by: std::time::Duration) {
        self.deadline += by;
    }

    /// The checks made before a request leaves: the grant, the declared body
    /// length, then the count.
    fn admit<B>(&self, request: &http::Request<B>) -> Result<Target, Error> {
        let uri = request.uri();
        let scheme = match uri.scheme_str() {
            Some("http") => Scheme::Http,
            Some("https") => Scheme::Https,
            _ => return Err(Error::HttpProtocolError),
        };
        let port = uri.port_u16().unwrap_or(scheme.default_port());
        // The host in its one canonical form (grants::names): the grant, the
        // credential and the connection all see the same name.
        let written = uri.host().unwrap_or_default();
        let host = match CanonicalHost::parse(written) {
            Ok(host) => host,
            Err(_) => {
                let shown = format!("{}://{}:{port}", scheme.as_str(), crate::text::printable(written));
                self.ledger.refuse(shown, RefusalReason::NotGranted);
                return Err(Error::HttpRequestDenied);
            }
        };
        let shown = format!("{}://{host}:{port}", scheme.as_str());
        let host_shown = self.ledger.scrub(host.to_string());
        let contact;
        // The method and path as the request line will carry them (the path
        // read in every way a server could, grants::names::RequestPath).
        let method = request.method().as_str();
        let target = uri.path_and_query().map_or("/", |path| path.as_str());
        let pattern = match self.grant.admit(method, scheme, &host, port, target) {
            Admission::Allowed(pattern) => pattern,
            Admission::NotGranted => {
                self.ledger.refuse(shown, RefusalReason::NotGranted);
                return Err(Error::HttpRequestDenied);
            }
            Admission::OutsideRoutes { .. } => {
                // Refused as an ungranted host is, naming the method and path
                // no entry for this host admits.
                let path = uri.path();
                let path: String = crate::text::printable(path).chars().take(200).collect();
                let method: String = crate::text::printable(method).chars().take(32).collect();
                self.ledger.refuse(format!("{method} {shown}{path}"), RefusalReason::NotGranted);
                return Err(Error::HttpRequestDenied);
            }
        };
        // A secret bound to other hosts (`secrets = [{ name, to }]`) may not
        // ride along: the URL and headers are looked at now, the body as it
        // streams (`Metered`, through a `BodyScan`).
        let elsewhere: Vec<&Bound> =
            self.ledger.granted.bound_secrets.iter().filter(|secret| !secret.may_go_to(scheme, &host, port)).collect();
        if !elsewhere.is_empty() {
            let mut head = uri.to_string().into_bytes();
            for (name, value) in request.headers() {
                head.push(b'\n');
                head.extend_from_slice(name.as_str().as_bytes());
                head.extend_from_slice(b": ");
                head.extend_from_slice(value.as_bytes());
            }
            if let Some(secret) = leaks::shown(&elsewhere, &head) {
                self.ledger.refuse(shown, RefusalReason::SecretNotForHost { secret: secret.to_owned() });
                return Err(Error::HttpRequestDenied);
            }
            let coded = request
                .headers()
                .get_all(http::header::CONTENT_ENCODING)
                .iter()
                .chain(request.headers().get_all(http::header::TRANSFER_ENCODING).iter())
                .flat_map(|value| {
                    String::from_utf8_lossy(value.as_bytes())
                        .split(',')
                        .map(|coding| coding.trim().to_ascii_lowercase())
                        .collect::<Vec<_>>()
                })
                .find(|coding| !coding.is_empty() && coding != "identity" && coding != "chunked");
            if let Some(coding) = coded {
                let coding = crate::text::printable(&coding).chars().take(40).collect();
                self.ledger.refuse(shown, RefusalReason::UncheckableBody { coding });
                return Err(Error::HttpRequestDenied);
            }
        }
        let scan = BodyScan::new(elsewhere.into_iter().cloned().collect());
        let declared = request
            .headers()
            .get(http::header::CONTENT_LENGTH)
            .and_then(|value| value.to_str().ok())
            .and_then(|value| value.trim().parse::<u64>().ok());
        {
            let mut ledger = self.ledger.lock();
            let room = self.limits.http_request_body.bytes().saturating_sub(ledger.request_bytes);
            if declared.is_some_and(|length| length > room) {
                drop(ledger);
                self.ledger.refuse(shown, RefusalReason::RequestTooLarge { limit: self.limits.http_request_body });
                return Err(Error::HttpRequestBodySize(Some(self.limits.http_request_body.bytes())));
            }
            if ledger.requests >= self.limits.http_requests {
                drop(ledger);
                self.ledger.refuse(shown, RefusalReason::TooManyRequests { limit: self.limits.http_requests });
                return Err(Error::ConnectionLimitReached);
            }
            ledger.requests += 1;
            contact = ledger.contact(Contact {
                scheme: scheme.as_str(),
                host: host_shown,
                port,
                method: crate::text::printable(request.method().as_str()).chars().take(32).collect(),
                status: None,
                sent: 0,
                received: 0,
            });
        }
        let name = host.bare();
        let credential =
            self.ledger.granted.credentials.iter().position(|credential| credential.to.admits(scheme, &host, port));
        Ok(Target { scheme, name, port, shown, pattern: pattern.clone(), credential, contact, scan })
    }
}

/// An admitted request's destination.
struct Target {
    scheme: Scheme,
    /// The host without IPv6 brackets, as resolved and as the TLS server name.
    name: String,
    port: u16,
    /// `scheme://host:port`, for reports.
    shown: String,
    /// The entry that admitted it.
    pattern: HostPattern,
    /// The credential bound to this destination, by its place in the grant.
    credential: Option<usize>,
    /// Its place in the ledger's contacts, when kept.
    contact: Option<usize>,
    /// The check of its body for secrets bound to other hosts, when any.
    scan: Option<BodyScan>,
}

/// One admitted request on its way (sent by `exchange.rs`, its response
/// body read through `response_body.rs`).
struct Exchange {
    target: Target,
    options: RequestOptions,
    /// When the whole exchange, body included, must be over.
    deadline: Instant,
    /// How long that is from the start, for reports.
    allowed: Duration,
    limit: ByteSize,
    oversized: Oversized,
    /// The call's limit on request body bytes, and whether this request's
    /// body went over it.
    request_limit: ByteSize,
    over: Arc<AtomicBool>,
    /// Whether this request's body showed a secret bound to other hosts.
    leaked: Arc<AtomicBool>,
    ledger: SharedLedger,
    tls: Arc<rustls::ClientConfig>,
}

impl Exchange {
    fn timed_out(&self) {
        self.ledger.refuse(self.target.shown.clone(), RefusalReason::TimedOut { limit: self.allowed });
    }
}

type IoFuture = Box<dyn Future<Output = Result<(), Error>> + Send>;
type SendResult = Result<(http::Response<WasiBody>, IoFuture), Error>;

impl WasiHttpHooks for Outbound {
    fn send_request(
        &mut self,
        request: http::Request<WasiBody>,
        options: Option<RequestOptions>,
        _fut: IoFuture,
    ) -> Box<dyn Future<Output = SendResult> + Send> {
        // From here on the guest's body is read to its end, whatever becomes
        // of the request (refused just below included).
        let request = request.map(|body| GuestBody::new(body, self.deadline));
        let mut target = match self.admit(&request) {
            Ok(target) => target,
            Err(error) => return Box::new(async move { Err(error) }),
        };
        let span = tracing::info_span!("http_request", host = %target.shown, method = %request.method());
        let mut request = request;
        // A granted request carries the call's trace context (when traces are exported).
        if let Some(traceparent) = span.in_scope(crate::trace::traceparent)
            && let Ok(value) = http::HeaderValue::from_str(&traceparent)
        {
            request.headers_mut().insert("traceparent", value);
        }
        let now = Instant::now();
        let deadline = (now + self.limits.http_timeout).min(self.deadline);
        let allowed = deadline.saturating_duration_since(now);
        let over = Arc::new(AtomicBool::new(false));
        let leaked = Arc::new(AtomicBool::new(false));
        let scan = target.scan.take();
        let request = request.map(|body| {
            Metered {
                inner: body,
                ledger: self.ledger.clone(),
                limit: self.limits.http_request_body,
                target: target.shown.clone(),
                contact: target.contact,
                over: over.clone(),
                scan,
                leaked: leaked.clone(),
                pending: None,
                ended: false,
            }
            .boxed_unsync()
        });
        let exchange = Exchange {
            target,
            options: options.unwrap_or_default(),
            deadline,
            allowed,
            limit: self.limits.http_response,
            oversized: self.limits.http_oversized,
            request_limit: self.limits.http_request_body,
            over,
            leaked,
            ledger: self.ledger.clone(),
            tls: self.tls.clone(),
        };
        Box::new(tracing::Instrument::instrument(exchange.send(request), span))
    }

    // wasmtime's defaults log these at `warn` with a Debug dump; a failed
    // request is the plugin's business (it gets the error code), so toolhost
    // only notes it at `debug`.
    fn p2_error_from_hyper(&mut self, err: &hyper::Error) -> ErrorCode {
        tracing::debug!("HTTP error: {err}");
        ErrorCode::HttpProtocolError
    }

    fn p2_error_from_connect(&mut self, err: &std::io::Error) -> ErrorCode {
        tracing::debug!("connect error: {err}");
        ErrorCode::ConnectionRefused
    }

    fn p2_error_from_tls(&mut self, err: &std::io::Error) -> ErrorCode {
        tracing::debug!("TLS error: {err}");
        if err.to_string().contains("certificate") {
            ErrorCode::TlsCertificateError
        } else {
            ErrorCode::TlsProtocolError
        }
    }
}

/// The addresses a host name resolves to (none when it does not resolve).
async fn resolve(name: String, port: u16) -> Vec<std::net::IpAddr> {
    match tokio::net::lookup_host((name.as_str(), port)).await {
        Ok(found) => found.map(|address| address.ip()).collect(),
        Err(_) => Vec::new(),
    }
}

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
use crate::outcome::{Refusal, RefusalReason};
use bytes::Bytes;
use http_body::{Body, Frame};
use http_body_util::BodyExt;
use std::future::{Future, poll_fn};
use std::net::{IpAddr, SocketAddr};
use std::pin::{Pin, pin};
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, Mutex};
use std::task::{Context, Poll, ready};
use std::time::{Duration, Instant};
use tokio::io::{AsyncRead, AsyncWrite};
use tokio::net::TcpStream;
use toolhost_grants::Granted;
use toolhost_grants::names::CanonicalHost;
use toolhost_grants::network::{HostPattern, NetworkGrant, Scheme, SocketCheck};
use wasmtime_wasi::WasiCtxBuilder;
use wasmtime_wasi::sockets::SocketAddrUse;
use wasmtime_wasi_http::io::TokioIo;
use wasmtime_wasi_http::p2::bindings::http::types::ErrorCode;
use wasmtime_wasi_http::{Error, RequestOptions, WasiBody, WasiHttpHooks};

/// Refusals kept per call; further ones are counted.
pub const REFUSALS_LIMIT: usize = 64;

/// What one call did on the network.
#[derive(Debug, Default)]
pub(crate) struct Ledger {
    /// Requests admitted (and sent, or attempted).
    pub requests: u32,
    /// Response body bytes handed to the guest.
    pub response_bytes: u64,
    /// Request body bytes sent.
    pub request_bytes: u64,
    /// What was refused, first [`REFUSALS_LIMIT`] of them.
    pub refused: Vec<Refusal>,
    /// Refusals past the limit.
    pub more_refused: usize,
}

/// A call's ledger, shared with the tasks that carry its requests.
#[derive(Clone)]
pub(crate) struct SharedLedger {
    plugin: Arc<str>,
    /// The plugin's grants, whose secret values are scrubbed from targets (a
    /// plugin could put one in a host name).
    granted: Arc<Granted>,
    inner: Arc<Mutex<Ledger>>,
}

impl SharedLedger {
    pub(crate) fn new(plugin: Arc<str>, granted: Arc<Granted>) -> SharedLedger {
        SharedLedger { plugin, granted, inner: Arc::default() }
    }

    fn lock(&self) -> std::sync::MutexGuard<'_, Ledger> {
        self.inner.lock().unwrap_or_else(|poisoned| poisoned.into_inner())
    }

    fn refuse(&self, target: String, reason: RefusalReason) {
        let target = self.granted.redactor.scrub(target);
        let reason = match reason {
            RefusalReason::CredentialUnavailable { why } => {
                RefusalReason::CredentialUnavailable { why: self.granted.redactor.scrub(why) }
            }
            other => other,
        };
        let refusal = Refusal { target, reason };
        tracing::info!(plugin = &*self.plugin, "refused {refusal}");
        let mut ledger = self.lock();
        if ledger.refused.len() < REFUSALS_LIMIT {
            ledger.refused.push(refusal);
        } else {
            ledger.more_refused += 1;
        }
    }

    /// Takes what was recorded.
    pub(crate) fn take(&self) -> Ledger {
        std::mem::take(&mut *self.lock())
    }
}

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
        let Some(pattern) = self.grant.allows(scheme, &host, port) else {
            self.ledger.refuse(shown, RefusalReason::NotGranted);
            return Err(Error::HttpRequestDenied);
        };
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
        }
        let name = host.bare();
        let credential =
            self.ledger.granted.credentials.iter().position(|credential| credential.to.admits(scheme, &host, port));
        Ok(Target { scheme, name, port, shown, pattern: pattern.clone(), credential })
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
        let target = match self.admit(&request) {
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
        let request = request.map(|body| {
            Metered {
                inner: body,
                ledger: self.ledger.clone(),
                limit: self.limits.http_request_body,
                target: target.shown.clone(),
                over: over.clone(),
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

/// One admitted request on its way.
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
    ledger: SharedLedger,
    tls: Arc<rustls::ClientConfig>,
}

trait Stream: AsyncRead + AsyncWrite + Send + Unpin + 'static {}
impl<T: AsyncRead + AsyncWrite + Send + Unpin + 'static> Stream for T {}

impl Exchange {
    fn timed_out(&self) {
        self.ledger.refuse(self.target.shown.clone(), RefusalReason::TimedOut { limit: self.allowed });
    }

    fn within(&self, timeout: Option<Duration>) -> tokio::time::Instant {
        let deadline = match timeout {
            Some(timeout) => (Instant::now() + timeout).min(self.deadline),
            None => self.deadline,
        };
        deadline.into()
    }

    async fn send(self, mut request: http::Request<WasiBody>) -> SendResult {
        let masks = match self.target.credential {
            Some(index) => {
                let granted = &self.ledger.granted;
                match crate::inject::add(
                    &granted.credentials[index],
                    &mut request,
                    &self.tls,
                    &granted.credential_values,
                )
                .await
                {
                    Ok(masks) => masks,
                    Err(why) => {
                        self.ledger.refuse(self.target.shown.clone(), RefusalReason::CredentialUnavailable { why });
                        return Err(Error::HttpRequestDenied);
                    }
                }
            }
            None => Vec::new(),
        };
        let connecting = tokio::time::timeout_at(self.within(self.options.connect_timeout), self.connect()).await;
        let stream = match connecting {
            Ok(stream) => stream?,
            Err(_) => {
                self.timed_out();
                return Err(Error::ConnectionTimeout);
            }
        };
        let handshake = hyper::client::conn::http1::Builder::new().handshake(TokioIo::new(stream));
        let (mut sender, conn) = match tokio::time::timeout_at(self.deadline.into(), handshake).await {
            Ok(handshake) => handshake?,
            Err(_) => {
                self.timed_out();
                return Err(Error::ConnectionTimeout);
            }
        };
        // The request line carries only the path: the host went to the connection.
        let path = request.uri().path_and_query().map(|path| path.as_str()).unwrap_or("/");
        *request.uri_mut() = http::Uri::builder()
            .path_and_query(path)
            .build()
            .map_err(|err| Error::InternalError(Some(err.to_string())))?;

        // Wait for the response head while driving the connection, as
        // wasmtime's own client does; the connection is handed back to be
        // driven while the guest reads the body.
        let first_byte = self.within(self.options.first_byte_timeout);
        let mut response = pin!(tokio::time::timeout_at(first_byte, sender.send_request(request)));
        let mut conn = Some(conn);
        let head = poll_fn(|cx| match response.as_mut().poll(cx) {
            Poll::Ready(result) => Poll::Ready(result.map(|sent| sent.map_err(Error::from))),
            Poll::Pending => {
                let Some(driver) = conn.as_mut() else {
                    return Poll::Pending;
                };
                let done = ready!(Pin::new(driver).poll(cx));
                conn = None;
                match done {
                    Ok(()) => response.as_mut().poll(cx).map(|result| result.map(|sent| sent.map_err(Error::from))),
                    Err(err) => Poll::Ready(Ok(Err(Error::from(err)))),
                }
            }
        })
        .await;
        let head = match head {
            // A body stopped at the limit fails the exchange; say why.
            Ok(Err(_)) if self.over.load(Ordering::SeqCst) => {
                return Err(Error::HttpRequestBodySize(Some(self.request_limit.bytes())));
            }
            Ok(head) => head?,
            Err(_) => {
                self.timed_out();
                return Err(Error::HttpResponseTimeout);
            }
        };
        // The connection is driven while the body is read; how it ends shows
        // in the body the guest reads, so it is only noted here.
        let deadline = self.deadline;
        let io: IoFuture = Box::new(async move {
            if let Some(conn) = conn {
                match tokio::time::timeout_at(deadline.into(), conn).await {
                    Ok(Ok(())) => {}
                    Ok(Err(err)) => tracing::debug!("HTTP connection ended: {err}"),
                    Err(_) => tracing::debug!("HTTP connection stopped at the request's deadline"),
                }
            }
            Ok(())
        });
        let mut head = head;
        let masker = if masks.is_empty() {
            None
        } else {
            let decoder = match crate::inject::Decoder::for_response(head.headers()) {
                Ok(decoder) => decoder,
                Err(why) => {
                    self.ledger.refuse(self.target.shown.clone(), RefusalReason::UnreadableResponse { why });
                    let coding = head.headers().get(http::header::CONTENT_ENCODING);
                    let coding =
                        coding.and_then(|value| value.to_str().ok()).map(|text| text.chars().take(40).collect());
                    return Err(Error::HttpResponseContentCoding(coding));
                }
            };
            if decoder.is_some() {
                // The plugin reads the decoded body.
                head.headers_mut().remove(http::header::CONTENT_ENCODING);
                head.headers_mut().remove(http::header::CONTENT_LENGTH);
            }
            crate::inject::mask_headers(head.headers_mut(), &masks);
            Some(crate::inject::Masker::new(masks, decoder, self.limit.bytes()))
        };
        let response = head.map(|incoming| {
            Bounded {
                inner: incoming,
                masker,
                trailers: None,
                sleep: Box::pin(tokio::time::sleep_until(self.deadline.into())),
                done: false,
                exchange: self,
            }
            .boxed_unsync()
        });
        Ok((response, io))
    }

    /// Resolves the host, keeps the addresses the admitting entry may reach,
    /// and connects to one of them (with TLS for `https`).
    async fn connect(&self) -> Result<Box<dyn Stream>, Error> {
        let target = &self.target;
        let resolved: Vec<SocketAddr> = match tokio::net::lookup_host((target.name.as_str(), target.port)).await {
            Ok(addresses) => addresses.collect(),
            Err(_) => {
                return Err(Error::DnsError { rcode: Some("address not available".to_owned()), info_code: None });
            }
        };
        let reachable: Vec<SocketAddr> =
            resolved.iter().copied().filter(|address| target.pattern.may_reach(address.ip())).collect();
        if reachable.is_empty() {
            let Some(first) = resolved.first() else {
                return Err(Error::DestinationNotFound);
            };
            let allow = target.pattern.naming(first.ip(), target.port).to_string();
            self.ledger.refuse(target.shown.clone(), RefusalReason::PrivateAddress { address: first.ip(), allow });
            return Err(Error::DestinationIpProhibited);
        }
        let mut failure = None;
        let mut connected = None;
        for address in reachable {
            match TcpStream::connect(address).await {
                Ok(stream) => {
                    connected = Some(stream);
                    break;
                }
                Err(err) => failure = Some(err),
            }
        }
        let Some(stream) = connected else {
            return Err(failure.map(Error::Connect).unwrap_or(Error::ConnectionRefused));
        };
        if target.scheme == Scheme::Http {
            return Ok(Box::new(stream));
        }
        let server_name = match target.name.parse::<IpAddr>() {
            Ok(ip) => rustls::pki_types::ServerName::IpAddress(ip.into()),
            Err(_) => rustls::pki_types::ServerName::try_from(target.name.clone())
                .map_err(|_| Error::DnsError { rcode: Some("invalid dns name".to_owned()), info_code: None })?,
        };
        let tls = tokio_rustls::TlsConnector::from(self.tls.clone())
            .connect(server_name, stream)
            .await
            .map_err(Error::Tls)?;
        Ok(Box::new(tls))
    }
}

/// A response body bounded by the call's byte limit and the request's deadline.
struct Bounded {
    inner: hyper::body::Incoming,
    /// Masks a credential's values, when the request carried one.
    masker: Option<crate::inject::Masker>,
    /// Trailers held back until the masker's last bytes went out.
    trailers: Option<http::HeaderMap>,
    sleep: Pin<Box<tokio::time::Sleep>>,
    done: bool,
    exchange: Exchange,
}

impl Bounded {
    /// A compressed body that cannot be decoded (so cannot be masked): the
    /// read fails, and the refusal says why.
    fn unreadable(&mut self, why: String) -> Poll<Option<Result<Frame<Bytes>, Error>>> {
        self.done = true;
        let why = format!("its compressed body could not be decoded ({why}), so it was not passed on");
        self.exchange.ledger.refuse(self.exchange.target.shown.clone(), RefusalReason::UnreadableResponse { why });
        Poll::Ready(Some(Err(Error::HttpResponseContentCoding(None))))
    }

    fn count(&mut self, data: Bytes) -> Poll<Option<Result<Frame<Bytes>, Error>>> {
        let exchange = &self.exchange;
        let limit = exchange.limit.bytes();
        let room = {
            let mut ledger = exchange.ledger.lock();
            let room = limit.saturating_sub(ledger.response_bytes);
            if data.len() as u64 <= room {
                ledger.response_bytes += data.len() as u64;
                return Poll::Ready(Some(Ok(Frame::data(data))));
            }
            if exchange.oversized == Oversized::Cut {
                ledger.response_bytes += room;
            }
            room
        };
        self.done = true;
        let cut = exchange.oversized == Oversized::Cut;
        exchange
            .ledger
            .refuse(exchange.target.shown.clone(), RefusalReason::ResponseTooLarge { limit: exchange.limit, cut });
        if !cut {
            return Poll::Ready(Some(Err(Error::HttpResponseBodySize(Some(limit)))));
        }
        if room == 0 {
            return Poll::Ready(None);
        }
        Poll::Ready(Some(Ok(Frame::data(data.slice(..room as usize)))))
    }
}

impl Body for Bounded {
    type Data = Bytes;
    type Error = Error;

    fn poll_frame(self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<Option<Result<Frame<Bytes>, Error>>> {
        let this = self.get_mut();
        if this.done {
            return Poll::Ready(None);
        }
        if let Some(trailers) = this.trailers.take() {
            return Poll::Ready(Some(Ok(Frame::trailers(trailers))));
        }
        loop {
            return match Pin::new(&mut this.inner).poll_frame(cx) {
                Poll::Ready(None) => {
                    match this.masker.as_mut().map(crate::inject::Masker::finish) {
                        Some(Ok(Some(rest))) => return this.count(rest),
                        Some(Err(why)) => return this.unreadable(why),
                        Some(Ok(None)) | None => {}
                    }
                    this.done = true;
                    Poll::Ready(None)
                }
                Poll::Ready(Some(Err(err))) => {
                    this.done = true;
                    // At the deadline the connection task stops too, which the
                    // body may see first as a closed connection: it is the timeout.
                    if err.is_timeout() || Instant::now() >= this.exchange.deadline {
                        this.exchange.timed_out();
                        return Poll::Ready(Some(Err(Error::HttpResponseTimeout)));
                    }
                    Poll::Ready(Some(Err(Error::Hyper(err))))
                }
                Poll::Ready(Some(Ok(frame))) => match frame.into_data() {
                    Ok(data) => {
                        let data = match this.masker.as_mut().map(|masker| masker.push(&data)) {
                            Some(Ok(masked)) => masked,
                            Some(Err(why)) => return this.unreadable(why),
                            None => data,
                        };
                        if data.is_empty() {
                            continue;
                        }
                        this.count(data)
                    }
                    Err(frame) => {
                        let Ok(mut trailers) = frame.into_trailers() else {
                            continue;
                        };
                        if let Some(masker) = this.masker.as_mut() {
                            masker.mask_headers(&mut trailers);
                            // What the masker held goes before the trailers.
                            match masker.finish() {
                                Ok(Some(rest)) => {
                                    this.trailers = Some(trailers);
                                    return this.count(rest);
                                }
                                Ok(None) => {}
                                Err(why) => return this.unreadable(why),
                            }
                        }
                        Poll::Ready(Some(Ok(Frame::trailers(trailers))))
                    }
                },
                Poll::Pending => {
                    ready!(this.sleep.as_mut().poll(cx));
                    this.done = true;
                    this.exchange.timed_out();
                    Poll::Ready(Some(Err(Error::HttpResponseTimeout)))
                }
            };
        }
    }

    fn is_end_stream(&self) -> bool {
        self.done
            || (self.inner.is_end_stream()
                && self.trailers.is_none()
                && self.masker.as_ref().is_none_or(crate::inject::Masker::is_empty))
    }
}

/// The guest's request body (its `outgoing-body`), read to its end even when
/// the request does not send it.
///
/// Dropping a [`WasiBody`] closes the guest's `outgoing-body` stream. hyper
/// drops a body it will not send (a `GET` or `HEAD` without a declared
/// length goes out without one) as soon as the head is written, and a request
/// refused or failed before its body went out drops it too; a guest that
/// writes (even nothing) or finishes after `handle()`, as `wstd` does, then
/// found its stream closed ("connection reset") or not, depending on which
/// task ran first. Dropped before its end, this body is read on a task of its
/// own until the guest finishes or drops it, or the call's deadline passes,
/// and what it carries is discarded: the guest's writes and `finish` succeed,
/// and the response tells it what happened (the limit, a refusal, a failed
/// connection) rather than its stream's closing.
struct GuestBody {
    /// `None` once dropped (handed to the task that reads the rest).
    inner: Option<WasiBody>,
    /// The guest finished (or aborted) it: nothing is left to read.
    ended: bool,
    /// The call's deadline, when reading what is not sent stops.
    deadline: Instant,
}

impl GuestBody {
    fn new(inner: WasiBody, deadline: Instant) -> GuestBody {
        GuestBody { inner: Some(inner), ended: false, deadline }
    }
}

impl Body for GuestBody {
    type Data = Bytes;
    type Error = Error;

    fn poll_frame(self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<Option<Result<Frame<Bytes>, Error>>> {
        let this = self.get_mut();
        let Some(inner) = this.inner.as_mut() else {
            return Poll::Ready(None);
        };
        let frame = ready!(Pin::new(inner).poll_frame(cx));
        match &frame {
            Some(Ok(frame)) if frame.is_data() => {}
            // Trailers, the end, or an abort: the guest is done with it.
            _ => this.ended = true,
        }
        Poll::Ready(frame)
    }

    fn is_end_stream(&self) -> bool {
        self.ended || self.inner.as_ref().is_none_or(Body::is_end_stream)
    }

    fn size_hint(&self) -> http_body::SizeHint {
        match &self.inner {
            Some(inner) => inner.size_hint(),
            None => http_body::SizeHint::with_exact(0),
        }
    }
}

impl Drop for GuestBody {
    fn drop(&mut self) {
        let Some(mut body) = self.inner.take() else {
            return;
        };
        if self.ended || body.is_end_stream() {
            return;
        }
        // Calls run on tokio; outside a runtime there is nothing to read on.
        let Ok(runtime) = tokio::runtime::Handle::try_current() else {
            return;
        };
        let deadline = self.deadline;
        runtime.spawn(async move {
            let rest = async {
                let mut discarded = 0u64;
                while let Some(Ok(frame)) = body.frame().await {
                    discarded += frame.data_ref().map_or(0, |data| data.len() as u64);
                }
                discarded
            };
            match tokio::time::timeout_at(deadline.into(), rest).await {
                Ok(0) => {}
                Ok(discarded) => tracing::debug!("{discarded} request body bytes not sent were discarded"),
                Err(_) => tracing::debug!("a request body not sent was still open at the call's deadline"),
            }
        });
    }
}

/// A request body counted against the call's `http_request_body` limit as
/// it streams out; the frame that would go over it is not sent, and the body
/// fails there, which stops the request.
struct Metered {
    inner: GuestBody,
    ledger: SharedLedger,
    limit: ByteSize,
    /// `scheme://host:port`, for the refusal.
    target: String,
    over: Arc<AtomicBool>,
}

impl Body for Metered {
    type Data = Bytes;
    type Error = Error;

    fn poll_frame(self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<Option<Result<Frame<Bytes>, Error>>> {
        let this = self.get_mut();
        if this.over.load(Ordering::SeqCst) {
            return Poll::Ready(None);
        }
        let frame = match ready!(Pin::new(&mut this.inner).poll_frame(cx)) {
            Some(Ok(frame)) => frame,
            other => return Poll::Ready(other),
        };
        let Some(data) = frame.data_ref() else {
            return Poll::Ready(Some(Ok(frame)));
        };
        let length = data.len() as u64;
        {
            let mut ledger = this.ledger.lock();
            if ledger.request_bytes.saturating_add(length) <= this.limit.bytes() {
                ledger.request_bytes += length;
                return Poll::Ready(Some(Ok(frame)));
            }
        }
        this.over.store(true, Ordering::SeqCst);
        this.ledger.refuse(this.target.clone(), RefusalReason::RequestTooLarge { limit: this.limit });
        Poll::Ready(Some(Err(Error::HttpRequestBodySize(Some(this.limit.bytes())))))
    }

    fn is_end_stream(&self) -> bool {
        self.over.load(Ordering::SeqCst) || self.inner.is_end_stream()
    }

    fn size_hint(&self) -> http_body::SizeHint {
        self.inner.size_hint()
    }
}

/// The addresses a host name resolves to (none when it does not resolve).
async fn resolve(name: String, port: u16) -> Vec<std::net::IpAddr> {
    match tokio::net::lookup_host((name.as_str(), port)).await {
        Ok(found) => found.map(|address| address.ip()).collect(),
        Err(_) => Vec::new(),
    }
}

/// Sets up `wasi:sockets` for a call. TCP connections go only to the granted
/// hosts and ports, and only when the grant says `sockets = true` (then DNS
/// lookups are on too, which TCP to a name needs); UDP and listening stay
/// off. TCP is switched on even without the grant so that a refused connection
/// reaches the check below, which refuses it before any system call and
/// records its address in the call's refusals.
pub(crate) fn configure_sockets(wasi: &mut WasiCtxBuilder, grant: &Arc<NetworkGrant>, ledger: &SharedLedger) {
    wasi.allow_udp(false).allow_tcp(true).allow_ip_name_lookup(grant.sockets);
    let grant = grant.clone();
    let ledger = ledger.clone();
    wasi.socket_addr_check(move |address, usage| {
        let grant = grant.clone();
        let ledger = ledger.clone();
        Box::pin(async move {
            let refusal = match usage {
                // Connecting binds implicitly to the unspecified address and an
                // ephemeral port; no other bind is allowed.
                SocketAddrUse::TcpBind if address.ip().is_unspecified() && address.port() == 0 => return true,
                SocketAddrUse::TcpConnect => {
                    // Resolving runs on its own task so this future stays `Sync`.
                    let check = tokio::spawn(async move { grant.check_socket(address, resolve).await }).await;
                    match check.unwrap_or(SocketCheck::NotGranted) {
                        SocketCheck::Allowed => return true,
                        SocketCheck::SocketsOff => RefusalReason::SocketsNotGranted,
                        SocketCheck::NotGranted => RefusalReason::NotGranted,
                        SocketCheck::Private { allow } => {
                            RefusalReason::PrivateAddress { address: address.ip(), allow: allow.to_string() }
                        }
                    }
                }
                _ => RefusalReason::ListenOrBind,
            };
            ledger.refuse(format!("tcp {address}"), refusal);
            false
        })
    });
}

#[cfg(test)]
mod tests {
    use super::*;
    use wasmtime_wasi::p2::{OutputStream, Pollable};
    use wasmtime_wasi_http::p2::body::{HostOutgoingBody, StreamContext};

    /// A guest's `outgoing-body` (the stream it writes) and the body the host sends.
    fn outgoing() -> (HostOutgoingBody, Box<dyn OutputStream>, GuestBody) {
        let (mut guest, body) = HostOutgoingBody::new(StreamContext::Request, None, 1, 1024);
        let stream = guest.take_output_stream().expect("the stream");
        (guest, stream, GuestBody::new(body, Instant::now() + Duration::from_secs(5)))
    }

    /// Writes `chunks` chunks, each once the stream is ready, as a guest does.
    async fn write(stream: &mut Box<dyn OutputStream>, chunks: usize) {
        for _ in 0..chunks {
            tokio::time::timeout(Duration::from_secs(5), stream.ready()).await.expect("the stream became ready");
            assert!(stream.check_write().expect("the stream is open") > 0);
            stream.write(Bytes::from_static(b"0123456789")).expect("the write is taken");
        }
    }

    #[tokio::test]
    async fn a_body_dropped_before_its_end_stays_open_until_the_guest_finishes_it() {
        // As hyper drops a GET's body once the head is out, or a refused
        // request drops it whole: the guest writes (more than the channel
        // holds, so something must read it) and finishes after that.
        let (guest, mut stream, body) = outgoing();
        drop(body);
        write(&mut stream, 20).await;
        drop(stream);
        guest.finish(None).expect("the body finishes");
    }

    #[tokio::test]
    async fn a_body_sent_passes_every_byte_and_its_end() {
        let (guest, mut stream, body) = outgoing();
        let reader = tokio::spawn(async move { body.collect().await.map(|collected| collected.to_bytes()) });
        write(&mut stream, 20).await;
        drop(stream);
        guest.finish(None).expect("the body finishes");
        let sent = reader.await.expect("the reader ran").expect("the body ended well");
        assert_eq!(sent.len(), 20 * 10);
    }

    #[tokio::test]
    async fn a_finished_body_is_not_read_again_when_dropped() {
        let (guest, stream, mut body) = outgoing();
        drop(stream);
        guest.finish(None).expect("the body finishes");
        assert!(body.frame().await.is_none(), "the end");
        assert!(body.is_end_stream());
        drop(body);
    }
}

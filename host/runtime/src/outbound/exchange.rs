//! One admitted request on its way: resolved, every address checked, connected
//! (TLS for HTTPS) and sent, bounded by the request's timeout and the call's
//! deadline.

use super::{Bounded, Exchange, IoFuture, SendResult};
use crate::outcome::RefusalReason;
use http_body_util::BodyExt;
use std::future::{Future, poll_fn};
use std::net::{IpAddr, SocketAddr};
use std::pin::{Pin, pin};
use std::sync::atomic::Ordering;
use std::task::{Poll, ready};
use std::time::{Duration, Instant};
use tokio::io::{AsyncRead, AsyncWrite};
use tokio::net::TcpStream;
use toolhost_grants::network::Scheme;
use wasmtime_wasi_http::io::TokioIo;
use wasmtime_wasi_http::{Error, WasiBody};

trait Stream: AsyncRead + AsyncWrite + Send + Unpin + 'static {}
impl<T: AsyncRead + AsyncWrite + Send + Unpin + 'static> Stream for T {}

impl Exchange {
    fn within(&self, timeout: Option<Duration>) -> tokio::time::Instant {
        let deadline = match timeout {
            Some(timeout) => (Instant::now() + timeout).min(self.deadline),
            None => self.deadline,
        };
        deadline.into()
    }

    pub(super) async fn send(self, mut request: http::Request<WasiBody>) -> SendResult {
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
            Ok(Err(_)) if self.leaked.load(Ordering::SeqCst) => return Err(Error::HttpRequestDenied),
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
        self.ledger.lock().answered(self.target.contact, head.status().as_u16());
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

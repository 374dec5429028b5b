//! The answers the HTTP front writes itself (plain refusals, 401 and 403,
//! the store's 503) and the response bodies it wraps: held until sent
//! (`guard`), completed for a 2025-11-25 session (`adjusted`), unread.

use super::*;
use std::pin::Pin;
use std::task::{Context, Poll};

/// A response body that holds `G` (a session kept in use, a request counted
/// in flight) until hyper has sent it all (or the client went away) and
/// drops it.
pub(super) struct Guarded<G> {
    inner: Body,
    _guard: G,
}

impl<G: Unpin> http_body::Body for Guarded<G> {
    type Data = Bytes;
    type Error = Infallible;

    fn poll_frame(
        self: Pin<&mut Self>,
        cx: &mut Context<'_>,
    ) -> Poll<Option<Result<http_body::Frame<Bytes>, Infallible>>> {
        Pin::new(&mut self.get_mut().inner).poll_frame(cx)
    }

    fn is_end_stream(&self) -> bool {
        self.inner.is_end_stream()
    }

    fn size_hint(&self) -> http_body::SizeHint {
        self.inner.size_hint()
    }
}

/// `response` with its JSON-RPC answer completed for a 2025-11-25 session
/// ([`revision::adjust`]). Such answers (`initialize`, `tools/list`) end
/// at once, so the body is read whole.
pub(super) async fn adjusted(response: Response<Body>, watch: revision::Watch) -> Response<Body> {
    let (mut parts, body) = response.into_parts();
    let Ok(collected) = body.collect().await;
    let event_stream = parts
        .headers
        .get(header::CONTENT_TYPE)
        .and_then(|value| value.to_str().ok())
        .is_some_and(|value| value.starts_with("text/event-stream"));
    let body = revision::adjust_body(watch, &collected.to_bytes(), event_stream);
    parts.headers.remove(header::CONTENT_LENGTH);
    Response::from_parts(parts, Full::new(Bytes::from(body)).boxed())
}

/// `response` with its body holding `guard` until it is done.
pub(super) fn guard<G: Unpin + Send + Sync + 'static>(response: Response<Body>, guard: G) -> Response<Body> {
    response.map(|inner| Guarded { inner, _guard: guard }.boxed())
}

/// A session request refused because the shared store cannot be asked.
pub(super) fn unavailable_store(reason: &str) -> Response<Body> {
    let mut response = plain_owned(
        StatusCode::SERVICE_UNAVAILABLE,
        format!("Service Unavailable: MCP sessions could not be checked: {reason}"),
    );
    response.headers_mut().insert(header::RETRY_AFTER, header::HeaderValue::from_static("1"));
    response
}

pub(super) fn unauthorized() -> Response<Body> {
    let mut response = plain(StatusCode::UNAUTHORIZED, "Unauthorized: send `Authorization: Bearer TOKEN`");
    response.headers_mut().insert(header::WWW_AUTHENTICATE, header::HeaderValue::from_static("Bearer"));
    response
}

/// True when `request` carries `Authorization: Bearer TOKEN` with the right
/// An OAuth refusal: its status, `WWW-Authenticate` and one line of text.
pub(super) fn refused(refusal: crate::oauth::Refusal) -> Response<Body> {
    let mut response = plain_owned(refusal.status, refusal.message);
    if let Ok(value) = header::HeaderValue::from_str(&refusal.challenge) {
        response.headers_mut().insert(header::WWW_AUTHENTICATE, value);
    }
    response
}

/// `response`, sent before the request's body was read in full: the
/// connection closes after it (`Connection: close`).
pub(super) fn unread(mut response: Response<Body>) -> Response<Body> {
    response.headers_mut().insert(header::CONNECTION, header::HeaderValue::from_static("close"));
    response
}

pub(super) fn plain(status: StatusCode, text: &'static str) -> Response<Body> {
    plain_owned(status, text.to_owned())
}

pub(super) fn plain_owned(status: StatusCode, text: String) -> Response<Body> {
    let mut response = Response::new(Full::new(Bytes::from(text)).boxed());
    *response.status_mut() = status;
    response.headers_mut().insert(header::CONTENT_TYPE, header::HeaderValue::from_static("text/plain; charset=utf-8"));
    response
}

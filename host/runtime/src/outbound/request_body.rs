//! The guest's request body on its way out: read to its end whatever becomes
//! of the request ([`GuestBody`]), and counted against the call's
//! `http_request_body` limit ([`Metered`]).

use super::SharedLedger;
use crate::limits::ByteSize;
use crate::outcome::RefusalReason;
use bytes::Bytes;
use http_body::{Body, Frame};
use http_body_util::BodyExt;
use std::pin::Pin;
use std::sync::Arc;
use std::sync::atomic::{AtomicBool, Ordering};
use std::task::{Context, Poll, ready};
use std::time::Instant;
use toolhost_grants::leaks::BodyScan;
use wasmtime_wasi_http::{Error, WasiBody};

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
pub(super) struct GuestBody {
    /// `None` once dropped (handed to the task that reads the rest).
    inner: Option<WasiBody>,
    /// The guest finished (or aborted) it: nothing is left to read.
    ended: bool,
    /// The call's deadline, when reading what is not sent stops.
    deadline: Instant,
}

impl GuestBody {
    pub(super) fn new(inner: WasiBody, deadline: Instant) -> GuestBody {
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
/// fails there, which stops the request. With a [`BodyScan`] (secrets bound
/// to other hosts), each chunk is looked at first, the last bytes a value
/// could straddle held until the next chunk or the end; a chunk that shows a
/// value fails the body before any byte of it goes.
pub(super) struct Metered {
    pub(super) inner: GuestBody,
    pub(super) ledger: SharedLedger,
    pub(super) limit: ByteSize,
    /// `scheme://host:port`, for the refusal.
    pub(super) target: String,
    /// The request's place in the ledger's contacts.
    pub(super) contact: Option<usize>,
    pub(super) over: Arc<AtomicBool>,
    /// The check for secrets bound to other hosts, when any.
    pub(super) scan: Option<BodyScan>,
    /// Set when the body showed one.
    pub(super) leaked: Arc<AtomicBool>,
    /// A trailers frame waiting for the bytes held before it.
    pub(super) pending: Option<Frame<Bytes>>,
    /// The guest's body ended (what is held still goes).
    pub(super) ended: bool,
}

impl Metered {
    /// Sends `data` if it fits the limit, else fails the body there.
    fn count(&mut self, data: Bytes) -> Poll<Option<Result<Frame<Bytes>, Error>>> {
        let length = data.len() as u64;
        {
            let mut ledger = self.ledger.lock();
            if ledger.request_bytes.saturating_add(length) <= self.limit.bytes() {
                ledger.request_bytes += length;
                ledger.count(self.contact, length, 0);
                return Poll::Ready(Some(Ok(Frame::data(data))));
            }
        }
        self.over.store(true, Ordering::SeqCst);
        self.ledger.refuse(self.target.clone(), RefusalReason::RequestTooLarge { limit: self.limit });
        Poll::Ready(Some(Err(Error::HttpRequestBodySize(Some(self.limit.bytes())))))
    }

    /// What the scan holds, taken.
    fn held(&mut self) -> Option<Bytes> {
        let rest = self.scan.as_mut().map(BodyScan::finish).unwrap_or_default();
        (!rest.is_empty()).then(|| Bytes::from(rest))
    }
}

impl Body for Metered {
    type Data = Bytes;
    type Error = Error;

    fn poll_frame(self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<Option<Result<Frame<Bytes>, Error>>> {
        let this = self.get_mut();
        if this.over.load(Ordering::SeqCst) || this.leaked.load(Ordering::SeqCst) {
            return Poll::Ready(None);
        }
        loop {
            if let Some(frame) = this.pending.take() {
                return Poll::Ready(Some(Ok(frame)));
            }
            if this.ended {
                return match this.held() {
                    Some(rest) => this.count(rest),
                    None => Poll::Ready(None),
                };
            }
            let frame = match ready!(Pin::new(&mut this.inner).poll_frame(cx)) {
                Some(Ok(frame)) => frame,
                None => {
                    this.ended = true;
                    continue;
                }
                other => return Poll::Ready(other),
            };
            let data = match frame.into_data() {
                Ok(data) => data,
                // Trailers go after what is held.
                Err(frame) => match this.held() {
                    Some(rest) => {
                        this.pending = Some(frame);
                        return this.count(rest);
                    }
                    None => return Poll::Ready(Some(Ok(frame))),
                },
            };
            let data = match this.scan.as_mut() {
                None => data,
                Some(scan) => match scan.push(&data) {
                    Ok(out) if out.is_empty() => continue,
                    Ok(out) => Bytes::from(out),
                    Err(secret) => {
                        this.leaked.store(true, Ordering::SeqCst);
                        this.ledger.refuse(this.target.clone(), RefusalReason::SecretNotForHost { secret });
                        return Poll::Ready(Some(Err(Error::HttpRequestDenied)));
                    }
                },
            };
            return this.count(data);
        }
    }

    fn is_end_stream(&self) -> bool {
        self.over.load(Ordering::SeqCst)
            || self.leaked.load(Ordering::SeqCst)
            || (self.pending.is_none()
                && self.scan.as_ref().is_none_or(BodyScan::is_empty)
                && (self.ended || self.inner.is_end_stream()))
    }

    fn size_hint(&self) -> http_body::SizeHint {
        self.inner.size_hint()
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::time::Duration;

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

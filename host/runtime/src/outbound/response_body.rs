//! The response body a guest reads, bounded by the call's `http_response`
//! limit (cut or failed, as configured) and the request's deadline.

use super::Exchange;
use crate::limits::Oversized;
use crate::outcome::RefusalReason;
use bytes::Bytes;
use http_body::{Body, Frame};
use std::future::Future;
use std::pin::Pin;
use std::task::{Context, Poll, ready};
use std::time::Instant;
use wasmtime_wasi_http::Error;

/// A response body bounded by the call's byte limit and the request's deadline.
pub(super) struct Bounded {
    pub(super) inner: hyper::body::Incoming,
    /// Masks a credential's values, when the request carried one.
    pub(super) masker: Option<crate::inject::Masker>,
    /// Trailers held back until the masker's last bytes went out.
    pub(super) trailers: Option<http::HeaderMap>,
    pub(super) sleep: Pin<Box<tokio::time::Sleep>>,
    pub(super) done: bool,
    pub(super) exchange: Exchange,
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
                ledger.count(exchange.target.contact, 0, data.len() as u64);
                return Poll::Ready(Some(Ok(Frame::data(data))));
            }
            if exchange.oversized == Oversized::Cut {
                ledger.response_bytes += room;
                ledger.count(exchange.target.contact, 0, room);
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

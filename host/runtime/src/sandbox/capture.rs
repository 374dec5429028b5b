//! A call's stdout and stderr: bounded in memory, scrubbed when read.
//!
//! A chatty plugin never fails (or traps) because its output is full: the
//! first [`CAPTURE_LIMIT`] bytes are kept and the rest only counted.

use crate::text::printable_in_place;
use std::pin::Pin;
use std::sync::{Arc, Mutex};
use std::task::{Context, Poll};
use toolhost_grants::env::Redactor;
use wasmtime_wasi::cli::{IsTerminal, StdoutStream};
use wasmtime_wasi::p2::{OutputStream, Pollable, StreamResult};

/// Bytes of stdout and of stderr kept per call; the rest is counted and dropped.
pub const CAPTURE_LIMIT: usize = 64 << 10;

/// A bounded in-memory stdout/stderr: keeps the first [`CAPTURE_LIMIT`]
/// bytes and silently drops the rest.
///
/// Secret values are scrubbed before the text is cut, never after: the buffer
/// holds `margin` bytes (the longest secret) past the limit, and the cut moves
/// past any value that straddles it, so no part of a value is ever shown.
#[derive(Clone)]
pub(crate) struct Capture(Arc<Mutex<CaptureBuffer>>);

struct CaptureBuffer {
    bytes: Vec<u8>,
    keep: usize,
    dropped: u64,
}

impl Capture {
    pub(crate) fn new(margin: usize) -> Capture {
        let keep = CAPTURE_LIMIT + margin;
        Capture(Arc::new(Mutex::new(CaptureBuffer { bytes: Vec::new(), keep, dropped: 0 })))
    }

    fn push(&self, bytes: &[u8]) {
        let mut buffer = self.0.lock().unwrap_or_else(|poisoned| poisoned.into_inner());
        let room = buffer.keep.saturating_sub(buffer.bytes.len());
        let kept = room.min(bytes.len());
        buffer.bytes.extend_from_slice(&bytes[..kept]);
        buffer.dropped += (bytes.len() - kept) as u64;
    }

    /// The first [`CAPTURE_LIMIT`] bytes or so as text, scrubbed by `redactor`.
    pub(crate) fn text(&self, redactor: &Redactor) -> String {
        let buffer = self.0.lock().unwrap_or_else(|poisoned| poisoned.into_inner());
        let bytes = &buffer.bytes;
        let mut cut = bytes.len().min(CAPTURE_LIMIT);
        // Not inside a UTF-8 sequence, then not inside a secret value.
        while cut < bytes.len() && cut > 0 && bytes[cut] & 0xC0 == 0x80 {
            cut -= 1;
        }
        let cut = redactor.safe_cut(bytes, cut);
        let mut text = String::from_utf8_lossy(&bytes[..cut]).into_owned();
        redactor.scrub_in_place(&mut text);
        printable_in_place(&mut text);
        let dropped = (bytes.len() - cut) as u64 + buffer.dropped;
        if dropped > 0 {
            text.push_str(&format!("\n… ({dropped} more bytes dropped)"));
        }
        text
    }
}

impl IsTerminal for Capture {
    fn is_terminal(&self) -> bool {
        false
    }
}

impl StdoutStream for Capture {
    fn p2_stream(&self) -> Box<dyn OutputStream> {
        Box::new(self.clone())
    }

    fn async_stream(&self) -> Box<dyn tokio::io::AsyncWrite + Send + Sync> {
        Box::new(self.clone())
    }
}

#[wasmtime_wasi::async_trait]
impl Pollable for Capture {
    async fn ready(&mut self) {}
}

impl OutputStream for Capture {
    fn write(&mut self, bytes: bytes::Bytes) -> StreamResult<()> {
        self.push(&bytes);
        Ok(())
    }

    fn flush(&mut self) -> StreamResult<()> {
        Ok(())
    }

    fn check_write(&mut self) -> StreamResult<usize> {
        Ok(64 << 10)
    }
}

impl tokio::io::AsyncWrite for Capture {
    fn poll_write(self: Pin<&mut Self>, _: &mut Context<'_>, buf: &[u8]) -> Poll<std::io::Result<usize>> {
        self.push(buf);
        Poll::Ready(Ok(buf.len()))
    }

    fn poll_flush(self: Pin<&mut Self>, _: &mut Context<'_>) -> Poll<std::io::Result<()>> {
        Poll::Ready(Ok(()))
    }

    fn poll_shutdown(self: Pin<&mut Self>, _: &mut Context<'_>) -> Poll<std::io::Result<()>> {
        Poll::Ready(Ok(()))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn capture_keeps_the_first_bytes_and_counts_the_rest() {
        let capture = Capture::new(0);
        capture.push(&vec![b'a'; CAPTURE_LIMIT - 1]);
        capture.push(b"bc");
        capture.push(b"def");
        let text = capture.text(&Redactor::default());
        assert!(text.starts_with("aaa"));
        assert!(text.contains("ab\n"), "the first byte of the overflow is kept");
        assert!(text.ends_with("(4 more bytes dropped)"), "{}", &text[text.len() - 40..]);
    }
}

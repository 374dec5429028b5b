//! Server-sent events: the framing both providers stream in.

use super::Failure;
use bytes::Bytes;
use futures_util::{Stream, StreamExt};
use std::pin::Pin;

/// One event: its `event:` name, if any, and its `data:` lines joined.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(super) struct Event {
    pub name: Option<String>,
    pub data: String,
}

type ByteStream = Pin<Box<dyn Stream<Item = reqwest::Result<Bytes>> + Send>>;

/// Reads events from a response body.
pub(super) struct Events {
    url: String,
    body: ByteStream,
    buffer: Vec<u8>,
    ended: bool,
}

impl Events {
    pub fn new(url: &str, body: impl Stream<Item = reqwest::Result<Bytes>> + Send + 'static) -> Events {
        Events { url: url.to_owned(), body: Box::pin(body), buffer: Vec::new(), ended: false }
    }

    /// The next event; `None` at the end of the body.
    pub async fn next(&mut self) -> Option<Result<Event, Failure>> {
        loop {
            if let Some(event) = take_event(&mut self.buffer, self.ended) {
                return Some(Ok(event));
            }
            if self.ended {
                return None;
            }
            match self.body.next().await {
                Some(Ok(chunk)) => self.buffer.extend_from_slice(&chunk),
                Some(Err(err)) if err.is_timeout() => return Some(Err(Failure::Timeout)),
                Some(Err(err)) => {
                    return Some(Err(Failure::dropped(&self.url, format!("the connection failed: {err}"))));
                }
                None => self.ended = true,
            }
        }
    }

    /// A failure for a stream that ended before the response was complete.
    pub fn ended_early(&self) -> Failure {
        Failure::dropped(&self.url, "the server closed the stream without finishing the response")
    }
}

/// Takes one complete event (up to a blank line) off the front of `buffer`;
/// at the end of the body, whatever is left counts as complete.
fn take_event(buffer: &mut Vec<u8>, at_end: bool) -> Option<Event> {
    loop {
        let (block_end, next) = match find_blank_line(buffer) {
            Some(found) => found,
            None if at_end && !buffer.is_empty() => (buffer.len(), buffer.len()),
            None => return None,
        };
        let block: Vec<u8> = buffer.drain(..next).take(block_end).collect();
        let text = String::from_utf8_lossy(&block);
        let mut name = None;
        let mut data: Option<String> = None;
        for line in text.lines() {
            let line = line.strip_suffix('\r').unwrap_or(line);
            let (field, value) = match line.split_once(':') {
                Some((field, value)) => (field, value.strip_prefix(' ').unwrap_or(value)),
                None => (line, ""),
            };
            match field {
                "data" => match &mut data {
                    Some(data) => {
                        data.push('\n');
                        data.push_str(value);
                    }
                    None => data = Some(value.to_owned()),
                },
                "event" => name = Some(value.to_owned()),
                _ => {} // comments (`:`), `id:`, `retry:`
            }
        }
        if let Some(data) = data {
            return Some(Event { name, data });
        }
        if buffer.is_empty() {
            return None;
        }
    }
}

/// The end of the first event block and where the next one starts.
fn find_blank_line(buffer: &[u8]) -> Option<(usize, usize)> {
    let mut i = 0;
    while i < buffer.len() {
        if buffer[i] == b'\n' {
            let rest = &buffer[i + 1..];
            if rest.first() == Some(&b'\n') {
                return Some((i, i + 2));
            }
            if rest.starts_with(b"\r\n") {
                return Some((i, i + 3));
            }
        }
        i += 1;
    }
    None
}

#[cfg(test)]
mod tests {
    use super::*;

    fn all(text: &str) -> Vec<Event> {
        let mut buffer = text.as_bytes().to_vec();
        let mut events = Vec::new();
        while let Some(event) = take_event(&mut buffer, true) {
            events.push(event);
        }
        events
    }

    #[test]
    fn accepts_events_with_names_comments_and_crlf() {
        let events = all(": keep-alive\n\nevent: ping\r\ndata: {}\r\n\r\ndata: a\ndata: b\n\ndata: [DONE]\n\n");
        assert_eq!(
            events,
            [
                Event { name: Some("ping".into()), data: "{}".into() },
                Event { name: None, data: "a\nb".into() },
                Event { name: None, data: "[DONE]".into() },
            ]
        );
    }

    #[test]
    fn accepts_a_last_event_without_a_blank_line() {
        assert_eq!(all("data: x"), [Event { name: None, data: "x".into() }]);
    }

    #[test]
    fn waits_for_the_rest_of_a_split_event() {
        let mut buffer = b"data: {\"a\"".to_vec();
        assert_eq!(take_event(&mut buffer, false), None);
        buffer.extend_from_slice(b":1}\n\n");
        assert_eq!(take_event(&mut buffer, false), Some(Event { name: None, data: "{\"a\":1}".into() }));
    }
}

/// Property tests: whatever bytes arrive, in whatever chunks, framing never
/// panics and never loses or invents an event's data.
#[cfg(test)]
mod fuzz {
    use super::*;
    use proptest::prelude::*;

    proptest! {
        #![proptest_config(ProptestConfig { cases: 256, failure_persistence: None, ..ProptestConfig::default() })]

        #[test]
        fn framing_never_panics_on_any_bytes_in_any_chunks(
            bytes in prop::collection::vec(any::<u8>(), 0..512),
            cuts in prop::collection::vec(any::<prop::sample::Index>(), 0..6),
        ) {
            let mut cuts: Vec<usize> = cuts.iter().map(|cut| cut.index(bytes.len() + 1)).collect();
            cuts.sort_unstable();
            let mut buffer = Vec::new();
            let mut start = 0;
            for cut in cuts.into_iter().chain([bytes.len()]) {
                buffer.extend_from_slice(&bytes[start..cut]);
                start = cut;
                while take_event(&mut buffer, false).is_some() {}
            }
            while take_event(&mut buffer, true).is_some() {}
        }

        #[test]
        fn framing_keeps_every_event_of_a_well_formed_stream(
            events in prop::collection::vec(("[a-z]{0,5}", "[ -~]{0,40}"), 0..8),
            crlf in any::<bool>(),
        ) {
            let end = if crlf { "\r\n" } else { "\n" };
            let text: String = events.iter().map(|(name, data)| format!("event: {name}{end}data: {data}{end}{end}")).collect();
            let mut buffer = text.into_bytes();
            let mut seen = Vec::new();
            while let Some(event) = take_event(&mut buffer, true) {
                seen.push(event.data);
            }
            let expected: Vec<String> = events.iter().map(|(_, data)| data.clone()).collect();
            prop_assert_eq!(seen, expected);
        }
    }
}

//! The framing layer on stdio, as the rmcp transport itself: lines are read
//! and checked here, and what passes is handed to rmcp as the message this
//! layer parsed ([`Passed::parsed`]), never written out and read again; what
//! rmcp answers is written here, its id read off the typed message.
//!
//! So a message is tokenized once and read into rmcp's types once, and no
//! task stands between the pipes and rmcp's own loop (`receive` reads stdin
//! in that loop; each answer is written by the send rmcp spawns for it),
//! which is what a server on rmcp's plain stdio transport pays, plus the
//! check. rmcp polls `receive` inside a `select!` and drops it whenever
//! another branch wins, so everything it has read is kept in the transport,
//! never in the future: a dropped `receive` loses nothing.

use super::*;
use rmcp::model::{ClientJsonRpcMessage, ServerJsonRpcMessage};
use rmcp::service::RoleServer;
use std::future::Future;
use std::pin::Pin;

/// What the stdio layer knows of its one session, for the 2025-11-25 tasks.
#[derive(Default)]
struct Session {
    /// The server runs tasks.
    tasks: bool,
    /// The session negotiated 2025-11-25 (read off the `initialize` answer).
    experimental: AtomicBool,
    /// Requests whose answers are adjusted on the way out, by id.
    watched: Mutex<HashMap<String, Watch>>,
}

/// Where every line goes out: one writer at a time, a whole line each.
type Output<W> = Arc<tokio::sync::Mutex<W>>;

/// An answer of this layer's own being written (kept here so that a
/// dropped `receive` does not drop it half-written).
type Writing = Pin<Box<dyn Future<Output = ()> + Send>>;

/// rmcp's transport on a client's stdin/stdout, with every message checked
/// ([`check`]) and every message with an id answered exactly once.
pub struct Framed<R, W> {
    input: BufReader<R>,
    /// What has been read of the next line.
    line: Vec<u8>,
    /// The rest of a line too long to keep is being dropped; its start
    /// (up to [`ID_PREFIX`]) is in `line`, for its id.
    skipping: bool,
    /// The input has ended.
    ended: bool,
    output: Output<W>,
    writing: Option<Writing>,
    in_flight: InFlight,
    session: Arc<Session>,
}

/// The transport rmcp serves on: `input`/`output` are the client's side.
/// `tasks`: the server runs tasks, so a 2025-11-25 session gets its
/// experimental tasks ([`crate::revision`]).
pub fn framed<R, W>(input: R, output: W, tasks: bool) -> Framed<R, W>
where
    R: AsyncRead + Unpin + Send + 'static,
    W: AsyncWrite + Unpin + Send + 'static,
{
    Framed {
        input: BufReader::with_capacity(64 << 10, input),
        line: Vec::new(),
        skipping: false,
        ended: false,
        output: Arc::new(tokio::sync::Mutex::new(output)),
        writing: None,
        in_flight: InFlight::default(),
        session: Arc::new(Session { tasks, ..Session::default() }),
    }
}

/// What [`Framed::next_line`] found.
enum Line {
    /// A whole line is in `line` (without its newline).
    Whole,
    /// A line longer than [`MAX_LINE`] has been dropped; its start is in `line`.
    TooLong,
}

impl<R, W> Framed<R, W>
where
    R: AsyncRead + Unpin + Send + 'static,
    W: AsyncWrite + Unpin + Send + 'static,
{
    /// Reads up to the end of the next line; `None` at the end of input.
    /// Cancel-safe: bytes are taken from the reader only into `line`.
    async fn next_line(&mut self) -> Option<Line> {
        loop {
            let buffer = match self.input.fill_buf().await {
                Ok([]) | Err(_) => {
                    // A last line without a newline is still a line.
                    let last = !self.skipping && !self.line.is_empty();
                    return last.then_some(Line::Whole);
                }
                Ok(buffer) => buffer,
            };
            let newline = buffer.iter().position(|&byte| byte == b'\n');
            let taken = newline.map_or(buffer.len(), |at| at + 1);
            if self.skipping {
                self.input.consume(taken);
                if newline.is_some() {
                    self.skipping = false;
                    return Some(Line::TooLong);
                }
                continue;
            }
            let content = newline.unwrap_or(buffer.len());
            if self.line.len() + content > MAX_LINE {
                // Keep the start for its id; drop the rest of the line.
                let keep = ID_PREFIX.saturating_sub(self.line.len()).min(content);
                self.line.extend_from_slice(&buffer[..keep]);
                self.line.truncate(ID_PREFIX);
                self.input.consume(taken);
                if newline.is_some() {
                    return Some(Line::TooLong);
                }
                self.skipping = true;
                continue;
            }
            self.line.extend_from_slice(&buffer[..content]);
            self.input.consume(taken);
            if newline.is_some() {
                return Some(Line::Whole);
            }
        }
    }

    /// The next message for rmcp; the ones answered here are written on the way.
    async fn next_message(&mut self) -> Option<ClientJsonRpcMessage> {
        loop {
            if let Some(writing) = self.writing.as_mut() {
                writing.await;
                self.writing = None;
            }
            if self.ended {
                return None;
            }
            let Some(found) = self.next_line().await else {
                self.ended = true;
                return None;
            };
            let answers = match found {
                Line::TooLong => {
                    let message = format!("the message is longer than {} MiB", MAX_LINE >> 20);
                    vec![error(id_in(&self.line), INVALID_REQUEST, &message)]
                }
                Line::Whole => {
                    let experimental = self.session.experimental.load(Ordering::Acquire);
                    match check(&self.line, Some((&self.in_flight, "")), experimental) {
                        Checked::Pass(passed) => {
                            self.line.clear();
                            // `initialize` says which revision the session has; `tools/list` is adjusted for 2025-11-25.
                            let watch = passed.watch.filter(|watch| watch.early() || experimental);
                            if let (true, Some(watch), Some(key)) = (self.session.tasks, watch, &passed.entered) {
                                self.session
                                    .watched
                                    .lock()
                                    .unwrap_or_else(|p| p.into_inner())
                                    .insert(key.clone(), watch);
                            }
                            return Some(passed.parsed);
                        }
                        Checked::Skip => {
                            self.line.clear();
                            continue;
                        }
                        Checked::Answer(answers) => answers,
                    }
                }
            };
            self.line.clear();
            let mut body = answer_body(answers);
            body.push(b'\n');
            self.writing = Some(Box::pin(write_line(self.output.clone(), body)));
        }
    }

    /// `message` as the line to write: a response frees its id, and a
    /// watched one is adjusted.
    fn encode(&self, message: &ServerJsonRpcMessage) -> std::io::Result<Vec<u8>> {
        let mut line = serde_json::to_vec(message)?;
        let id = match message {
            ServerJsonRpcMessage::Response(response) => Some(&response.id),
            ServerJsonRpcMessage::Error(error) => error.id.as_ref(),
            _ => None,
        };
        // An id writes out as the client sent it (an integer or a string).
        let watched = id.and_then(|id| serde_json::to_value(id).ok()).and_then(|id| {
            let key = key("", &id);
            self.in_flight.lock().unwrap_or_else(|p| p.into_inner()).remove(&key);
            self.session.tasks.then(|| self.session.watched.lock().unwrap_or_else(|p| p.into_inner()).remove(&key))?
        });
        if let Some(watch) = watched {
            let (adjusted, experimental) = revision::adjust_line(watch, &line);
            if experimental {
                self.session.experimental.store(true, Ordering::Release);
            }
            return Ok(adjusted);
        }
        line.push(b'\n');
        Ok(line)
    }
}

/// Writes one whole line (ending in a newline) and flushes it. A client
/// that has gone away is not an error here: rmcp learns it from stdin.
async fn write_line<W: AsyncWrite + Unpin>(output: Output<W>, line: Vec<u8>) {
    let mut output = output.lock().await;
    if output.write_all(&line).await.is_ok() {
        let _ = output.flush().await;
    }
}

impl<R, W> rmcp::transport::Transport<RoleServer> for Framed<R, W>
where
    R: AsyncRead + Unpin + Send + 'static,
    W: AsyncWrite + Unpin + Send + 'static,
{
    type Error = std::io::Error;

    fn send(&mut self, item: ServerJsonRpcMessage) -> impl Future<Output = Result<(), Self::Error>> + Send + 'static {
        let line = self.encode(&item);
        let output = self.output.clone();
        async move {
            write_line(output, line?).await;
            Ok(())
        }
    }

    fn receive(&mut self) -> impl Future<Output = Option<ClientJsonRpcMessage>> + Send {
        self.next_message()
    }

    async fn close(&mut self) -> Result<(), Self::Error> {
        if let Some(writing) = self.writing.take() {
            writing.await;
        }
        self.output.lock().await.flush().await
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use rmcp::transport::Transport;
    use tokio::io::AsyncReadExt;

    #[tokio::test]
    async fn answers_are_whole_lines_and_an_answer_frees_its_id() {
        let (mut client, input) = tokio::io::duplex(1 << 16);
        let (output, mut received) = tokio::io::duplex(1 << 16);
        let mut framed = framed(input, output, false);
        let ping = |id: u8| format!("{{\"jsonrpc\":\"2.0\",\"id\":{id},\"method\":\"ping\"}}\n");
        client.write_all(format!("{{not json\n{}", ping(1)).as_bytes()).await.unwrap();
        assert!(matches!(framed.receive().await, Some(ClientJsonRpcMessage::Request(_))));
        // Still in flight: the same id again is answered here, and the next message goes on.
        client.write_all(format!("{}{}", ping(1), ping(2)).as_bytes()).await.unwrap();
        assert!(matches!(framed.receive().await, Some(ClientJsonRpcMessage::Request(_))));
        // Answered now: the id is free.
        let answer = ServerJsonRpcMessage::response(
            rmcp::model::ServerResult::empty(()),
            rmcp::model::NumberOrString::Number(1),
        );
        framed.send(answer).await.unwrap();
        client.write_all(ping(1).as_bytes()).await.unwrap();
        assert!(matches!(framed.receive().await, Some(ClientJsonRpcMessage::Request(_))));
        drop(client);
        assert!(framed.receive().await.is_none());
        framed.close().await.unwrap();
        drop(framed);
        let mut text = String::new();
        received.read_to_string(&mut text).await.unwrap();
        let lines: Vec<Value> = text.lines().map(|line| serde_json::from_str(line).unwrap()).collect();
        assert_eq!(lines.len(), 3, "{text}");
        assert_eq!(lines[0]["error"]["code"], PARSE_ERROR, "{text}");
        assert_eq!((lines[1]["id"].clone(), lines[1]["error"]["code"].clone()), (json!(1), json!(INVALID_REQUEST)));
        assert_eq!(lines[2], json!({"jsonrpc": "2.0", "id": 1, "result": {}}));
    }

    #[tokio::test]
    async fn a_line_too_long_is_answered_with_its_id_and_what_follows_is_read() {
        let (mut client, input) = tokio::io::duplex(1 << 16);
        let (output, mut received) = tokio::io::duplex(1 << 16);
        let mut framed = framed(input, output, false);
        let writer = tokio::spawn(async move {
            let head =
                br#"{"jsonrpc":"2.0","id":"big","method":"tools/call","params":{"name":"echo","arguments":{"text":""#;
            client.write_all(head).await.unwrap();
            let chunk = vec![b'a'; 1 << 20];
            for _ in 0..=(MAX_LINE >> 20) {
                client.write_all(&chunk).await.unwrap();
            }
            client.write_all(b"\"}}}\n{\"jsonrpc\":\"2.0\",\"id\":2,\"method\":\"ping\"}").await.unwrap();
        });
        let reader = tokio::spawn(async move {
            let mut text = String::new();
            received.read_to_string(&mut text).await.unwrap();
            text
        });
        // The last line has no newline: it is read at the end of input.
        assert!(matches!(framed.receive().await, Some(ClientJsonRpcMessage::Request(_))));
        writer.await.unwrap();
        assert!(framed.receive().await.is_none());
        framed.close().await.unwrap();
        drop(framed);
        let text = reader.await.unwrap();
        let answer: Value = serde_json::from_str(text.trim()).unwrap();
        assert_eq!((answer["id"].clone(), answer["error"]["code"].clone()), (json!("big"), json!(INVALID_REQUEST)));
    }
}

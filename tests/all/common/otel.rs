//! A real OTLP/HTTP trace receiver on loopback (`tests/otel/receiver.py`,
//! decoding with OpenTelemetry's own protobuf definitions, pinned by
//! `tests/otel/setup.sh`): each span as a JSON line.

use serde_json::Value;
use std::io::{BufRead, BufReader};
use std::path::Path;
use std::process::{Child, Command, Stdio};
use std::sync::mpsc;
use std::time::{Duration, Instant};

/// A child process killed when dropped.
pub struct Running(pub Child);

impl Drop for Running {
    fn drop(&mut self) {
        let _ = self.0.kill();
        let _ = self.0.wait();
    }
}

/// The receiver: its endpoint, and the spans it got, as they come.
pub struct Receiver {
    _process: Running,
    /// `http://127.0.0.1:PORT`, what `otlp_endpoint` or `OTEL_EXPORTER_OTLP_ENDPOINT` take.
    pub endpoint: String,
    spans: mpsc::Receiver<Value>,
}

impl Receiver {
    /// Installs the receiver (once) and starts it.
    pub fn start() -> Receiver {
        super::install("otel/setup.sh");
        let dir = Path::new(env!("CARGO_MANIFEST_DIR")).join("../tests/otel");
        let mut process = Running(
            Command::new(dir.join(".tools/venv/bin/python"))
                .arg(dir.join("receiver.py"))
                .stdin(Stdio::piped())
                .stdout(Stdio::piped())
                .spawn()
                .expect("start receiver.py"),
        );
        let mut lines = BufReader::new(process.0.stdout.take().unwrap()).lines();
        let first = lines.next().unwrap().unwrap();
        let port = first.strip_prefix("listening ").unwrap_or_else(|| panic!("receiver.py said {first:?}")).to_owned();
        let (sender, spans) = mpsc::channel();
        std::thread::spawn(move || {
            for line in lines.map_while(Result::ok) {
                let _ = sender.send(serde_json::from_str(&line).unwrap());
            }
        });
        Receiver { _process: process, endpoint: format!("http://127.0.0.1:{port}"), spans }
    }

    /// The spans received until `done` says they are all there (or 20 s).
    pub fn wait_for(&self, done: impl Fn(&[Value]) -> bool) -> Vec<Value> {
        self.wait_within(Duration::from_secs(20), done)
    }

    /// [`Receiver::wait_for`], for at most `limit`.
    pub fn wait_within(&self, limit: Duration, done: impl Fn(&[Value]) -> bool) -> Vec<Value> {
        let deadline = Instant::now() + limit;
        let mut spans = Vec::new();
        while !done(&spans) {
            match self.spans.recv_timeout(deadline.saturating_duration_since(Instant::now())) {
                Ok(span) => spans.push(span),
                Err(_) => break,
            }
        }
        spans
    }
}

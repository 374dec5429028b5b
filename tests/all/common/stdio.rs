//! `toolhost serve` over stdio, spoken to one JSON-RPC line at a time, for
//! the tests that need the session's raw messages rather than a client's
//! view of them.

use serde_json::{Value, json};
use std::io::{BufRead, BufReader, Lines, Write};
use std::process::{Child, ChildStdin, ChildStdout, Command, Stdio};
use std::time::{Duration, Instant};

/// A running `toolhost … serve` on stdio, initialized (2025-11-25).
pub struct Session {
    child: Child,
    stdin: Option<ChildStdin>,
    lines: Lines<BufReader<ChildStdout>>,
    next_id: u64,
}

impl Session {
    /// Starts `command` (its arguments ending in `serve`; the shared compile
    /// cache unless it sets one) and initializes the session as `client`.
    pub fn start(mut command: Command, client: &str) -> Session {
        let mut child = command
            .env_remove("TOOLHOST_LOG")
            .stdin(Stdio::piped())
            .stdout(Stdio::piped())
            .stderr(Stdio::null())
            .spawn()
            .expect("start toolhost serve");
        let stdin = child.stdin.take();
        let lines = BufReader::new(child.stdout.take().unwrap()).lines();
        let mut session = Session { child, stdin, lines, next_id: 1 };
        let hello = json!({"protocolVersion": "2025-11-25", "capabilities": {}, "clientInfo": {"name": client, "version": "1"}});
        let answer = session.ask("initialize", hello);
        assert!(answer.get("result").is_some(), "initialize: {answer}");
        session.send(&json!({"jsonrpc": "2.0", "method": "notifications/initialized"}));
        session
    }

    /// The command for `toolhost ARGS` with the shared compile cache.
    pub fn command(args: &[&str]) -> Command {
        let mut command = Command::new(env!("CARGO_BIN_EXE_toolhost"));
        command.args(args).env("TOOLHOST_CACHE_DIR", super::shared_cache());
        command
    }

    /// Sends the request `method` with `params` and returns the whole answer
    /// to it (the message with its id; notifications and other answers in
    /// between are passed over).
    pub fn ask(&mut self, method: &str, params: Value) -> Value {
        let id = self.send_request(method, params);
        self.answer_to(id)
    }

    /// Sends the request without waiting for its answer; its id.
    pub fn send_request(&mut self, method: &str, params: Value) -> u64 {
        let id = self.next_id;
        self.next_id += 1;
        self.send(&json!({"jsonrpc": "2.0", "id": id, "method": method, "params": params}));
        id
    }

    /// Sends one message as it is.
    pub fn send(&mut self, message: &Value) {
        let stdin = self.stdin.as_mut().expect("the session is open");
        writeln!(stdin, "{message}").expect("write to serve");
    }

    /// The next message carrying `id`.
    pub fn answer_to(&mut self, id: u64) -> Value {
        loop {
            let line = self.lines.next().expect("serve answered").expect("read from serve");
            let message: Value = serde_json::from_str(&line).expect("serve writes JSON lines");
            if message["id"] == id {
                return message;
            }
        }
    }

    /// The server's process id.
    pub fn pid(&self) -> u32 {
        self.child.id()
    }

    /// Closes stdin, which ends the session, and waits (30 s at most) for the
    /// process to exit.
    pub fn close(mut self) {
        self.stdin = None;
        let started = Instant::now();
        while self.child.try_wait().unwrap().is_none() {
            assert!(started.elapsed() < Duration::from_secs(30), "serve did not stop when its stdin closed");
            std::thread::sleep(Duration::from_millis(20));
        }
    }
}

impl Drop for Session {
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}

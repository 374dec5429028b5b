//! `toolhost chat` driven line by line through a pipe (no terminal): the
//! test writes a prompt, waits for what it needs to see on stderr (a log
//! line with `-v`), then writes the next one.
#![allow(dead_code)]

use super::model_server::{ModelServer, Script};
use std::io::{BufRead, BufReader, Write};
use std::path::Path;
use std::process::{Child, ChildStdin, Command, Output, Stdio};
use std::sync::mpsc::{Receiver, channel};
use std::time::{Duration, Instant};

/// A running `toolhost chat`; killed when dropped unless finished.
pub struct Chat {
    child: Option<Child>,
    stdin: Option<ChildStdin>,
    stderr: Receiver<String>,
    seen: Vec<String>,
}

impl Chat {
    /// Starts `toolhost -v ARGS chat` against `server` in `cwd`.
    pub fn start(cwd: &Path, args: &[&str], script: Script, server: &ModelServer) -> Chat {
        let mut child = Command::new(env!("CARGO_BIN_EXE_toolhost"))
            .current_dir(cwd)
            .arg("-v")
            .args(args)
            .arg("chat")
            .args(["--model", script.model(), "--base-url", &script.base_url(server)])
            .env("TOOLHOST_CACHE_DIR", super::shared_cache())
            .env("OPENAI_API_KEY", "test-key")
            .env("ANTHROPIC_API_KEY", "test-key")
            .env_remove("TOOLHOST_MODEL")
            .env_remove("TOOLHOST_CONFIG")
            .env_remove("TOOLHOST_LOG")
            .stdin(Stdio::piped())
            .stdout(Stdio::piped())
            .stderr(Stdio::piped())
            .spawn()
            .expect("start toolhost chat");
        let (sender, stderr) = channel();
        let lines = BufReader::new(child.stderr.take().unwrap()).lines();
        std::thread::spawn(move || {
            for line in lines.map_while(Result::ok) {
                eprintln!("[chat] {line}");
                if sender.send(line).is_err() {
                    break;
                }
            }
        });
        let stdin = child.stdin.take();
        Chat { child: Some(child), stdin, stderr, seen: Vec::new() }
    }

    /// Sends one prompt.
    pub fn say(&mut self, prompt: &str) {
        let stdin = self.stdin.as_mut().expect("the chat's stdin is open");
        writeln!(stdin, "{prompt}").expect("write a prompt");
        stdin.flush().unwrap();
    }

    /// Waits (up to `limit`) for a stderr line containing `text`; returns it.
    pub fn wait_for(&mut self, text: &str, limit: Duration) -> String {
        if let Some(line) = self.seen.iter().find(|line| line.contains(text)) {
            return line.clone();
        }
        let deadline = Instant::now() + limit;
        loop {
            let left = deadline.saturating_duration_since(Instant::now());
            match self.stderr.recv_timeout(left) {
                Ok(line) => {
                    self.seen.push(line.clone());
                    if line.contains(text) {
                        return line;
                    }
                }
                Err(_) => panic!("no stderr line with {text:?} within {limit:?}; seen:\n{}", self.seen.join("\n")),
            }
        }
    }

    /// Waits until `server` has received `count` requests.
    pub fn wait_for_requests(&mut self, server: &ModelServer, count: usize, limit: Duration) {
        let deadline = Instant::now() + limit;
        while server.requests().len() < count {
            assert!(Instant::now() < deadline, "the model got {} requests, not {count}", server.requests().len());
            std::thread::sleep(Duration::from_millis(20));
        }
    }

    /// Closes stdin (the chat ends) and waits for the exit; returns the
    /// output, with every stderr line seen.
    pub fn finish(mut self) -> (Output, Vec<String>) {
        drop(self.stdin.take());
        let output = self.child.take().unwrap().wait_with_output().expect("wait for toolhost chat");
        let mut seen = std::mem::take(&mut self.seen);
        seen.extend(self.stderr.try_iter());
        // The reader thread may still hold the last lines for a moment.
        while let Ok(line) = self.stderr.recv_timeout(Duration::from_millis(200)) {
            seen.push(line);
        }
        (output, seen)
    }
}

impl Drop for Chat {
    fn drop(&mut self) {
        if let Some(mut child) = self.child.take() {
            let _ = child.kill();
            let _ = child.wait();
        }
    }
}

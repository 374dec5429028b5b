//! Running the real binary on a pseudo-terminal, as a person would: what it
//! prints is collected by a reader thread, keys are written to the terminal
//! (so Ctrl-C is `\x03`, turned into SIGINT by the terminal itself), and
//! every wait has a deadline.
#![allow(dead_code)]

use portable_pty::{Child, CommandBuilder, MasterPty, PtySize, native_pty_system};
use std::io::{Read, Write};
use std::path::Path;
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

pub struct Terminal {
    child: Box<dyn Child + Send + Sync>,
    writer: Box<dyn Write + Send>,
    output: Arc<Mutex<Vec<u8>>>,
    /// How much of the output `expect` has already matched.
    seen: usize,
    _master: Box<dyn MasterPty + Send>,
}

impl Terminal {
    /// Starts `program` with `args` in `cwd` on a new terminal, with the
    /// environment of this process minus `remove` plus `env`.
    pub fn spawn(program: &Path, args: &[&str], cwd: &Path, env: &[(&str, &str)], remove: &[&str]) -> Terminal {
        let pair = native_pty_system()
            .openpty(PtySize { rows: 50, cols: 200, pixel_width: 0, pixel_height: 0 })
            .expect("open a pseudo-terminal");
        let mut command = CommandBuilder::new(program);
        command.args(args);
        command.cwd(cwd);
        for name in remove {
            command.env_remove(name);
        }
        for (name, value) in env {
            command.env(name, value);
        }
        let child = pair.slave.spawn_command(command).expect("start the program on the terminal");
        drop(pair.slave);
        let mut reader = pair.master.try_clone_reader().expect("terminal reader");
        let writer = pair.master.take_writer().expect("terminal writer");
        let output = Arc::new(Mutex::new(Vec::new()));
        {
            let output = output.clone();
            std::thread::spawn(move || {
                let mut buffer = [0u8; 4096];
                while let Ok(n) = reader.read(&mut buffer) {
                    if n == 0 {
                        break;
                    }
                    output.lock().unwrap().extend_from_slice(&buffer[..n]);
                }
            });
        }
        Terminal { child, writer, output, seen: 0, _master: pair.master }
    }

    /// Everything printed so far.
    pub fn output(&self) -> String {
        String::from_utf8_lossy(&self.output.lock().unwrap()).into_owned()
    }

    /// Waits (up to 20 seconds) until `text` is printed after what was matched before.
    pub fn expect(&mut self, text: &str) {
        let deadline = Instant::now() + Duration::from_secs(20);
        loop {
            {
                let output = self.output.lock().unwrap();
                let rest = String::from_utf8_lossy(&output[self.seen..]);
                if let Some(at) = rest.find(text) {
                    self.seen += rest[..at + text.len()].len();
                    return;
                }
            }
            if Instant::now() > deadline {
                let _ = self.child.kill();
                panic!("`{text}` never appeared on the terminal; it shows:\n{}", self.output());
            }
            std::thread::sleep(Duration::from_millis(20));
        }
    }

    /// Types `keys`.
    pub fn send(&mut self, keys: &str) {
        self.writer.write_all(keys.as_bytes()).expect("write to the terminal");
        self.writer.flush().expect("write to the terminal");
    }

    /// Presses Ctrl-C.
    pub fn ctrl_c(&mut self) {
        self.send("\x03");
    }

    /// Waits (up to `limit`) for the program to exit and returns its status;
    /// a program still running then is killed and the test fails.
    pub fn exit_code(&mut self, limit: Duration) -> u32 {
        let deadline = Instant::now() + limit;
        loop {
            if let Some(status) = self.child.try_wait().expect("wait for the program") {
                // Let the reader thread take the last output.
                std::thread::sleep(Duration::from_millis(100));
                return status.exit_code();
            }
            if Instant::now() > deadline {
                let _ = self.child.kill();
                panic!("the program did not exit within {limit:?}; the terminal shows:\n{}", self.output());
            }
            std::thread::sleep(Duration::from_millis(20));
        }
    }
}

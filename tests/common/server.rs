//! A tiny HTTP/1.1 server on 127.0.0.1 for the network tests. It records the
//! path of every request it receives (so a test can tell that a refused
//! request never arrived), and stops when dropped, or by itself after two
//! minutes whatever happens.
//!
//! Routes:
//! - `/hello`: 200, `hello from the test server`
//! - `/bytes/N`: 200, N bytes of `x`
//! - `/redirect?to=URL`: 302 to URL
//! - `/chain/N`: 302 to `/chain/N-1`; `/chain/0` is 200, `end of chain`
//! - `/slow`: waits 5 seconds, then 200
//! - `/page`: 200, a small HTML page with a title and links (relative,
//!   absolute, duplicated, `mailto:`) for the `webpage` plugin
//! - anything else: 404

use std::io::{BufRead, BufReader, Write};
use std::net::{TcpListener, TcpStream};
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

/// How long a server lives at most.
const LIFETIME: Duration = Duration::from_secs(120);

/// A running test server.
pub struct TestServer {
    /// The port it listens on, on 127.0.0.1.
    pub port: u16,
    seen: Arc<Mutex<Vec<String>>>,
    stop: Arc<AtomicBool>,
}

impl TestServer {
    /// Starts a server on a free port of 127.0.0.1.
    pub fn start() -> TestServer {
        let listener = TcpListener::bind("127.0.0.1:0").expect("bind 127.0.0.1");
        listener.set_nonblocking(true).expect("nonblocking");
        let port = listener.local_addr().expect("address").port();
        let seen = Arc::new(Mutex::new(Vec::new()));
        let stop = Arc::new(AtomicBool::new(false));
        let (seen_by_server, stop_server) = (seen.clone(), stop.clone());
        std::thread::spawn(move || {
            let started = Instant::now();
            while !stop_server.load(Ordering::Relaxed) && started.elapsed() < LIFETIME {
                match listener.accept() {
                    Ok((stream, _)) => {
                        let seen = seen_by_server.clone();
                        std::thread::spawn(move || serve(stream, port, &seen));
                    }
                    Err(_) => std::thread::sleep(Duration::from_millis(5)),
                }
            }
        });
        TestServer { port, seen, stop }
    }

    /// `http://127.0.0.1:PORT{path}`.
    pub fn url(&self, path: &str) -> String {
        format!("http://127.0.0.1:{}{path}", self.port)
    }

    /// `http://127.0.0.1:PORT`, the entry that grants this server.
    pub fn origin(&self) -> String {
        format!("http://127.0.0.1:{}", self.port)
    }

    /// The paths of the requests received so far, in order.
    pub fn seen(&self) -> Vec<String> {
        self.seen.lock().unwrap().clone()
    }
}

impl Drop for TestServer {
    fn drop(&mut self) {
        self.stop.store(true, Ordering::Relaxed);
    }
}

fn serve(stream: TcpStream, port: u16, seen: &Mutex<Vec<String>>) {
    let _ = stream.set_nonblocking(false);
    let _ = stream.set_read_timeout(Some(Duration::from_secs(2)));
    let mut reader = BufReader::new(&stream);
    let mut request_line = String::new();
    if reader.read_line(&mut request_line).is_err() {
        return;
    }
    loop {
        let mut header = String::new();
        match reader.read_line(&mut header) {
            Ok(0) | Err(_) => break,
            Ok(_) if header == "\r\n" || header == "\n" => break,
            Ok(_) => {}
        }
    }
    let path = request_line.split_whitespace().nth(1).unwrap_or("/").to_owned();
    seen.lock().unwrap().push(path.clone());
    let (status, location, body): (&str, Option<String>, Vec<u8>) = route(&path, port);
    let mut head = format!("HTTP/1.1 {status}\r\ncontent-length: {}\r\nconnection: close\r\n", body.len());
    if let Some(location) = location {
        head.push_str(&format!("location: {location}\r\n"));
    }
    head.push_str("content-type: text/plain\r\n\r\n");
    let mut stream = stream;
    let _ = stream.write_all(head.as_bytes());
    let _ = stream.write_all(&body);
    let _ = stream.flush();
}

fn route(path: &str, port: u16) -> (&'static str, Option<String>, Vec<u8>) {
    if path == "/hello" {
        return ("200 OK", None, b"hello from the test server".to_vec());
    }
    if let Some(count) = path.strip_prefix("/bytes/").and_then(|n| n.parse::<usize>().ok()) {
        return ("200 OK", None, vec![b'x'; count]);
    }
    if let Some(to) = path.strip_prefix("/redirect?to=") {
        return ("302 Found", Some(to.to_owned()), Vec::new());
    }
    if let Some(n) = path.strip_prefix("/chain/").and_then(|n| n.parse::<u32>().ok()) {
        if n == 0 {
            return ("200 OK", None, b"end of chain".to_vec());
        }
        return ("302 Found", Some(format!("http://127.0.0.1:{port}/chain/{}", n - 1)), Vec::new());
    }
    if path == "/page" {
        let page = "<html><head><title>Links &amp; more</title></head><body>\n\
            <a href=\"/hello\">Say <b>hello</b></a> <a href='chain/0#top'>Chain</a>\n\
            <a href=https://example.org/elsewhere>Elsewhere</a> <a href=\"mailto:a@b.c\">Mail</a>\n\
            <a href=\"/hello\">Hello again</a></body></html>";
        return ("200 OK", None, page.as_bytes().to_vec());
    }
    if path == "/slow" {
        std::thread::sleep(Duration::from_secs(5));
        return ("200 OK", None, b"finally".to_vec());
    }
    ("404 Not Found", None, b"no such page".to_vec())
}

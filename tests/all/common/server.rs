//! A tiny HTTP/1.1 server on 127.0.0.1 for the network tests, plain or over
//! TLS. It records the path of every request it receives (so a test can tell
//! that a refused request never arrived) and counts the request body bytes
//! that reached it, and stops when dropped, or by itself after two minutes
//! whatever happens.
//!
//! Routes:
//! - `/hello`: 200, `hello from the test server`
//! - `/bytes/N`: 200, N bytes of `x`
//! - `/redirect?to=URL`: 302 to URL
//! - `/chain/N`: 302 to `/chain/N-1`; `/chain/0` is 200, `end of chain`
//! - `/slow`: waits 5 seconds, then 200
//! - `/stall`: 200 with a 1,000-byte body, of which it sends 100 bytes, then
//!   nothing for 5 seconds
//! - `/upload` (with a body, `content-length` or chunked): 200, `received N bytes`
//! - `/early` (with a body): 200, `answered early`, sent before the body is
//!   read; then it reads the body (counting it) and closes
//! - `/page`: 200, a small HTML page with a title and links (relative,
//!   absolute, duplicated, `mailto:`) for the `webpage` plugin
//! - `/echo…`: 200, the request's path and headers as text, and its
//!   `authorization` echoed in the `x-seen-authorization` response header;
//!   `/echo-gzip…`, `/echo-deflate…` and `/echo-br…` the same, sent with that
//!   `content-encoding` whatever the request accepted (gzip and deflate
//!   really compressed; `br` not, as a coding toolhost cannot undo)
//! - `/token-echo`: a token endpoint that refuses every client and echoes
//!   the request's `authorization` in its `error_description`
//! - `/private…`: 200 `welcome` when the request carries [`CREDENTIAL`] as a
//!   bearer token, an `x-api-key` or an `api_key` query parameter, or
//!   [`OAUTH_TOKEN`] or [`OAUTH_TOKEN_WITH_SECRET`] as a bearer token; else 401
//! - `/token`: an OAuth 2.0 token endpoint: [`OAUTH_TOKEN`] for the client
//!   `client-1` with the secret [`OAUTH_SECRET`] (HTTP Basic auth), else 401
//!   `invalid_client`; it expires in an hour, or after N seconds with
//!   `/token?expires_in=N`; `/token-holding-secret` the same, but its token
//!   is [`OAUTH_TOKEN_WITH_SECRET`], which contains the client secret
//! - anything else: 404

use std::io::{BufRead, BufReader, Read, Write};
use std::net::TcpListener;
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

/// The credential `/private` accepts.
pub const CREDENTIAL: &str = "t0ken/ABC+xyz-4321";
/// The client secret `/token` accepts (for the client `client-1`).
pub const OAUTH_SECRET: &str = "cl1ent-s3cret";
/// The token `/token` hands out.
pub const OAUTH_TOKEN: &str = "oauth-t0ken-9876";
/// The token `/token-holding-secret` hands out: the client secret inside it.
pub const OAUTH_TOKEN_WITH_SECRET: &str = "tk-cl1ent-s3cret-tail";
/// `client-1:cl1ent-s3cret` in base64.
const OAUTH_BASIC: &str = "Y2xpZW50LTE6Y2wxZW50LXMzY3JldA==";

/// One request's headers: lower-case names and values, in order.
pub type Headers = Vec<(String, String)>;

/// How long a server lives at most.
const LIFETIME: Duration = Duration::from_secs(120);

/// A running test server.
pub struct TestServer {
    /// The port it listens on, on 127.0.0.1.
    pub port: u16,
    seen: Arc<Mutex<Vec<String>>>,
    headers: Arc<Mutex<Vec<Headers>>>,
    received: Arc<AtomicU64>,
    stop: Arc<AtomicBool>,
    scheme: &'static str,
}

impl TestServer {
    /// Starts a server on a free port of 127.0.0.1.
    pub fn start() -> TestServer {
        TestServer::start_with(None)
    }

    /// Starts a server speaking TLS with `tls` (its certificate and key).
    pub fn start_tls(tls: Arc<rustls::ServerConfig>) -> TestServer {
        TestServer::start_with(Some(tls))
    }

    fn start_with(tls: Option<Arc<rustls::ServerConfig>>) -> TestServer {
        let listener = TcpListener::bind("127.0.0.1:0").expect("bind 127.0.0.1");
        listener.set_nonblocking(true).expect("nonblocking");
        let port = listener.local_addr().expect("address").port();
        let seen = Arc::new(Mutex::new(Vec::new()));
        let headers = Arc::new(Mutex::new(Vec::new()));
        let received = Arc::new(AtomicU64::new(0));
        let stop = Arc::new(AtomicBool::new(false));
        let scheme = if tls.is_some() { "https" } else { "http" };
        let shared =
            Shared { seen: seen.clone(), headers: headers.clone(), received: received.clone(), stop: stop.clone() };
        std::thread::spawn(move || {
            let started = Instant::now();
            while !shared.stop.load(Ordering::Relaxed) && started.elapsed() < LIFETIME {
                match listener.accept() {
                    Ok((stream, _)) => {
                        let shared = shared.clone();
                        let tls = tls.clone();
                        std::thread::spawn(move || {
                            let _ = stream.set_nonblocking(false);
                            let _ = stream.set_read_timeout(Some(Duration::from_secs(2)));
                            match tls {
                                None => serve(stream, port, scheme, &shared),
                                Some(tls) => {
                                    let Ok(connection) = rustls::ServerConnection::new(tls) else { return };
                                    serve(rustls::StreamOwned::new(connection, stream), port, scheme, &shared);
                                }
                            }
                        });
                    }
                    Err(_) => std::thread::sleep(Duration::from_millis(5)),
                }
            }
        });
        TestServer { port, seen, headers, received, stop, scheme }
    }

    /// `http://127.0.0.1:PORT{path}` (`https://` for a TLS server).
    pub fn url(&self, path: &str) -> String {
        format!("{}://127.0.0.1:{}{path}", self.scheme, self.port)
    }

    /// `http://127.0.0.1:PORT` (`https://` for a TLS server), the entry that grants this server.
    pub fn origin(&self) -> String {
        format!("{}://127.0.0.1:{}", self.scheme, self.port)
    }

    /// The paths of the requests received so far, in order.
    pub fn seen(&self) -> Vec<String> {
        self.seen.lock().unwrap().clone()
    }

    /// The headers of the requests received so far (lower-case names), in order.
    pub fn headers(&self) -> Vec<Headers> {
        self.headers.lock().unwrap().clone()
    }

    /// Request body bytes received so far, all requests together.
    pub fn received(&self) -> u64 {
        self.received.load(Ordering::SeqCst)
    }
}

/// What the connection threads share with the server.
#[derive(Clone)]
struct Shared {
    seen: Arc<Mutex<Vec<String>>>,
    headers: Arc<Mutex<Vec<Headers>>>,
    received: Arc<AtomicU64>,
    stop: Arc<AtomicBool>,
}

impl Drop for TestServer {
    fn drop(&mut self) {
        self.stop.store(true, Ordering::Relaxed);
    }
}

fn serve<S: Read + Write>(stream: S, port: u16, scheme: &str, shared: &Shared) {
    let mut reader = BufReader::new(stream);
    let mut request_line = String::new();
    // A connection closed before its request line (a client that gave up
    // before sending anything) is no request.
    if !matches!(reader.read_line(&mut request_line), Ok(n) if n > 0) {
        return;
    }
    let mut length = 0u64;
    let mut chunked = false;
    let mut headers = Vec::new();
    loop {
        let mut header = String::new();
        match reader.read_line(&mut header) {
            Ok(0) | Err(_) => break,
            Ok(_) if header == "\r\n" || header == "\n" => break,
            Ok(_) => {}
        }
        let (name, value) = header.split_once(':').unwrap_or((&header, ""));
        let value = value.trim();
        headers.push((name.trim().to_ascii_lowercase(), value.to_owned()));
        if name.eq_ignore_ascii_case("content-length") {
            length = value.parse().unwrap_or(0);
        } else if name.eq_ignore_ascii_case("transfer-encoding") && value.eq_ignore_ascii_case("chunked") {
            chunked = true;
        }
    }
    let path = request_line.split_whitespace().nth(1).unwrap_or("/").to_owned();
    shared.seen.lock().unwrap().push(path.clone());
    shared.headers.lock().unwrap().push(headers.clone());
    if path == "/early" {
        let answer = "answered early";
        let head = format!("HTTP/1.1 200 OK\r\ncontent-length: {}\r\ncontent-type: text/plain\r\n\r\n", answer.len());
        let stream = reader.get_mut();
        let _ = stream.write_all(head.as_bytes());
        let _ = stream.write_all(answer.as_bytes());
        let _ = stream.flush();
        // Then the body, read whole so that closing resets nothing.
        let _ = if chunked { read_chunked(&mut reader, shared) } else { read_counted(&mut reader, length, shared) };
        return;
    }
    let body = if chunked { read_chunked(&mut reader, shared) } else { read_counted(&mut reader, length, shared) };
    let Some(body) = body else { return };
    let mut stream = reader.into_inner();
    if path == "/stall" {
        let head = "HTTP/1.1 200 OK\r\ncontent-length: 1000\r\ncontent-type: text/plain\r\n\r\n";
        let _ = stream.write_all(head.as_bytes());
        let _ = stream.write_all(&[b's'; 100]);
        let _ = stream.flush();
        let until = Instant::now() + Duration::from_secs(5);
        while Instant::now() < until && !shared.stop.load(Ordering::Relaxed) {
            std::thread::sleep(Duration::from_millis(20));
        }
        return;
    }
    let (status, location, body): (&str, Option<String>, Vec<u8>) = if path == "/upload" {
        ("200 OK", None, format!("received {body} bytes").into_bytes())
    } else if let Some(answer) = with_headers(&path, &headers) {
        answer
    } else {
        route(&path, port, scheme)
    };
    let (coding, body) = encoded(&path, body);
    let mut head = format!("HTTP/1.1 {status}\r\ncontent-length: {}\r\nconnection: close\r\n", body.len());
    if let Some(coding) = coding {
        head.push_str(&format!("content-encoding: {coding}\r\n"));
    }
    let header = |name: &str| headers.iter().find(|(key, _)| key == name).map(|(_, value)| value.clone());
    if path.starts_with("/echo")
        && let Some(authorization) = header("authorization")
    {
        head.push_str(&format!("x-seen-authorization: {authorization}\r\n"));
    }
    if let Some(location) = location {
        head.push_str(&format!("location: {location}\r\n"));
    }
    head.push_str("content-type: text/plain\r\n\r\n");
    let _ = stream.write_all(head.as_bytes());
    let _ = stream.write_all(&body);
    let _ = stream.flush();
}

/// The body in the content coding `/echo-CODING…` asks for, ignoring the
/// request's `accept-encoding` as a misbehaving server would.
fn encoded(path: &str, body: Vec<u8>) -> (Option<&'static str>, Vec<u8>) {
    use std::io::Write as _;
    if path.starts_with("/echo-gzip") {
        let mut encoder = flate2::write::GzEncoder::new(Vec::new(), flate2::Compression::default());
        encoder.write_all(&body).unwrap();
        (Some("gzip"), encoder.finish().unwrap())
    } else if path.starts_with("/echo-deflate") {
        let mut encoder = flate2::write::ZlibEncoder::new(Vec::new(), flate2::Compression::default());
        encoder.write_all(&body).unwrap();
        (Some("deflate"), encoder.finish().unwrap())
    } else if path.starts_with("/echo-br") {
        (Some("br"), body)
    } else {
        (None, body)
    }
}

/// Reads a body of `length` bytes, counting them as they arrive; `None` when
/// the connection ends first.
fn read_counted(reader: &mut impl Read, length: u64, shared: &Shared) -> Option<u64> {
    let mut left = length;
    let mut buffer = [0u8; 16 << 10];
    while left > 0 {
        let want = buffer.len().min(left as usize);
        match reader.read(&mut buffer[..want]) {
            Ok(0) | Err(_) => return None,
            Ok(read) => {
                shared.received.fetch_add(read as u64, Ordering::SeqCst);
                left -= read as u64;
            }
        }
    }
    Some(length)
}

/// Reads a chunked body, counting its data bytes; `None` when it is cut short.
fn read_chunked(reader: &mut impl BufRead, shared: &Shared) -> Option<u64> {
    let mut total = 0;
    loop {
        let mut size = String::new();
        if reader.read_line(&mut size).ok()? == 0 {
            return None;
        }
        let size = u64::from_str_radix(size.trim().split(';').next()?.trim(), 16).ok()?;
        if size == 0 {
            let mut end = String::new();
            let _ = reader.read_line(&mut end);
            return Some(total);
        }
        total += read_counted(reader, size, shared)?;
        let mut crlf = String::new();
        reader.read_line(&mut crlf).ok()?;
    }
}

/// The routes that read the request's headers.
fn with_headers(path: &str, headers: &[(String, String)]) -> Option<(&'static str, Option<String>, Vec<u8>)> {
    let header = |name: &str| headers.iter().find(|(key, _)| key == name).map(|(_, value)| value.as_str());
    if path.starts_with("/echo") {
        let mut text = format!("path: {path}\n");
        for (name, value) in headers {
            text.push_str(&format!("{name}: {value}\n"));
        }
        return Some(("200 OK", None, text.into_bytes()));
    }
    if path.starts_with("/private") {
        let encoded = CREDENTIAL.replace('/', "%2F").replace('+', "%2B");
        let welcome = header("authorization") == Some(&format!("Bearer {CREDENTIAL}"))
            || header("authorization") == Some(&format!("Bearer {OAUTH_TOKEN}"))
            || header("authorization") == Some(&format!("Bearer {OAUTH_TOKEN_WITH_SECRET}"))
            || header("x-api-key") == Some(CREDENTIAL)
            || path.contains(&format!("api_key={encoded}"));
        return Some(if welcome {
            ("200 OK", None, b"welcome".to_vec())
        } else {
            ("401 Unauthorized", None, b"who are you?".to_vec())
        });
    }
    if path == "/token-echo" {
        let said = header("authorization").unwrap_or_default();
        let refusal = format!(r#"{{"error":"invalid_client","error_description":"you sent {said}"}}"#);
        return Some(("401 Unauthorized", None, refusal.into_bytes()));
    }
    if path == "/token" || path.starts_with("/token?") || path == "/token-holding-secret" {
        // `/token?expires_in=N` hands out tokens that expire after N seconds.
        let life = path.split("expires_in=").nth(1).and_then(|n| n.parse::<u64>().ok()).unwrap_or(3600);
        let access = if path == "/token-holding-secret" { OAUTH_TOKEN_WITH_SECRET } else { OAUTH_TOKEN };
        return Some(if header("authorization") == Some(&format!("Basic {OAUTH_BASIC}")) {
            let token = format!(r#"{{"access_token":"{access}","token_type":"Bearer","expires_in":{life}}}"#);
            ("200 OK", None, token.into_bytes())
        } else {
            let refusal = r#"{"error":"invalid_client","error_description":"unknown client or wrong secret"}"#;
            ("401 Unauthorized", None, refusal.as_bytes().to_vec())
        });
    }
    None
}

fn route(path: &str, port: u16, scheme: &str) -> (&'static str, Option<String>, Vec<u8>) {
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
        return ("302 Found", Some(format!("{scheme}://127.0.0.1:{port}/chain/{}", n - 1)), Vec::new());
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

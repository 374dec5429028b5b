//! Outgoing HTTP from a plugin, over the standard `wasi:http/outgoing-handler`.
//!
//! toolhost sends a request only when the operator granted the plugin that
//! scheme, host and port (`[plugins.NAME] http = [...]` in `toolhost.toml`);
//! otherwise it fails with [`Error::Denied`] before anything leaves the
//! machine. Ask for what the plugin needs in its manifest (`NAME.toml`, e.g.
//! `http = ["https://api.example.com"]`) so the operator can see it.
//!
//! Redirects are not followed for you: a `3xx` response comes back as it is,
//! and [`Response::redirect`] gives the next URL. Following it is a new
//! request, checked by the host like the first.
//!
//! ```ignore
//! let response = toolhost_sdk::http::get("https://api.example.com/v1/status").send(64 << 10)?;
//! if response.status == 200 {
//!     return Ok(response.text());
//! }
//! ```

use std::fmt;
use wasip2::http::outgoing_handler;
use wasip2::http::types::{ErrorCode, Fields, Method, OutgoingBody, OutgoingRequest, Scheme};
use wasip2::io::streams::StreamError;

/// A request to send.
#[derive(Debug, Clone)]
pub struct Request {
    method: String,
    url: String,
    headers: Vec<(String, String)>,
    body: Vec<u8>,
}

/// A `GET` request for `url`.
pub fn get(url: &str) -> Request {
    Request::new("GET", url)
}

impl Request {
    /// A request with `method` (`GET`, `POST`, …) for `url` (`http://` or `https://`).
    pub fn new(method: &str, url: &str) -> Request {
        Request { method: method.to_owned(), url: url.to_owned(), headers: Vec::new(), body: Vec::new() }
    }

    /// Adds a header.
    pub fn header(mut self, name: &str, value: &str) -> Request {
        self.headers.push((name.to_owned(), value.to_owned()));
        self
    }

    /// Sets the body.
    pub fn body(mut self, body: impl Into<Vec<u8>>) -> Request {
        self.body = body.into();
        self
    }

    /// Sends the request and reads at most `max_body` bytes of the response
    /// body (the rest is not read; [`Response::truncated`] says so).
    pub fn send(self, max_body: usize) -> Result<Response, Error> {
        let url = Url::parse(&self.url)?;
        let entries: Vec<(String, Vec<u8>)> =
            self.headers.iter().map(|(name, value)| (name.clone(), value.as_bytes().to_vec())).collect();
        let fields = Fields::from_list(&entries)
            .map_err(|err| Error::InvalidRequest(format!("a header is not allowed: {err:?}")))?;
        let request = OutgoingRequest::new(fields);
        let method = match self.method.to_ascii_uppercase().as_str() {
            "GET" => Method::Get,
            "HEAD" => Method::Head,
            "POST" => Method::Post,
            "PUT" => Method::Put,
            "DELETE" => Method::Delete,
            "PATCH" => Method::Patch,
            "OPTIONS" => Method::Options,
            other => Method::Other(other.to_owned()),
        };
        let invalid = |what: &str| Error::InvalidRequest(format!("{what} of `{}` is not valid", self.url));
        request.set_method(&method).map_err(|()| invalid("the method"))?;
        request.set_scheme(Some(&url.scheme)).map_err(|()| invalid("the scheme"))?;
        request.set_authority(Some(&url.authority)).map_err(|()| invalid("the host"))?;
        request.set_path_with_query(Some(&url.path)).map_err(|()| invalid("the path"))?;
        let body = request.body().map_err(|()| Error::Failed("the request body was already taken".to_owned()))?;
        let pending = outgoing_handler::handle(request, None).map_err(|code| Error::from_code(code, &url))?;
        let wait = || loop {
            match pending.get() {
                Some(Ok(Ok(response))) => break Ok(response),
                Some(Ok(Err(code))) => break Err(Error::from_code(code, &url)),
                Some(Err(())) => break Err(Error::Failed("the response was already taken".to_owned())),
                None => pending.subscribe().block(),
            }
        };
        if !self.body.is_empty() {
            let stream =
                body.write().map_err(|()| Error::Failed("the request body could not be written".to_owned()))?;
            for chunk in self.body.chunks(4096) {
                if let Err(err) = stream.blocking_write_and_flush(chunk) {
                    // The host stopped the request (a body over its limit, a
                    // refused or failed connection): the response says why.
                    drop(stream);
                    drop(body);
                    return Err(match wait() {
                        Err(why) => why,
                        Ok(_) => {
                            Error::Failed(format!("writing the request body failed: {}", describe_stream_error(err)))
                        }
                    });
                }
            }
        }
        OutgoingBody::finish(body, None).map_err(|code| Error::from_code(code, &url))?;

        let incoming = wait()?;
        let status = incoming.status();
        let headers = incoming
            .headers()
            .entries()
            .into_iter()
            .map(|(name, value)| (name, String::from_utf8_lossy(&value).into_owned()))
            .collect();
        let body = incoming.consume().map_err(|()| Error::Failed("the response body was already taken".to_owned()))?;
        let stream = body.stream().map_err(|()| Error::Failed("the response body was already taken".to_owned()))?;
        let mut bytes = Vec::new();
        let mut truncated = false;
        loop {
            let room = max_body - bytes.len();
            match stream.blocking_read(room.clamp(1, 64 << 10) as u64) {
                Ok(chunk) if chunk.len() > room => {
                    bytes.extend_from_slice(&chunk[..room]);
                    truncated = true;
                    break;
                }
                Ok(chunk) => bytes.extend_from_slice(&chunk),
                Err(StreamError::Closed) => break,
                Err(StreamError::LastOperationFailed(err)) => {
                    // The standard error code when the host gives one, else its description.
                    let why = match wasip2::http::types::http_error_code(&err) {
                        Some(code) => match Error::from_code(code, &url) {
                            Error::Failed(why) | Error::Denied(why) | Error::InvalidRequest(why) => why,
                            Error::TooManyRequests => "too many requests".to_owned(),
                        },
                        None => err.to_debug_string(),
                    };
                    return Err(Error::Failed(format!("reading the response failed: {why}")));
                }
            }
        }
        drop(stream);
        Ok(Response { url: self.url, status, headers, body: bytes, truncated })
    }
}

fn describe_stream_error(err: StreamError) -> String {
    match err {
        StreamError::Closed => "the stream was closed".to_owned(),
        StreamError::LastOperationFailed(err) => err.to_debug_string(),
    }
}

/// A response: status, headers and (at most the requested bytes of) the body.
#[derive(Debug, Clone)]
pub struct Response {
    /// The URL that was requested.
    pub url: String,
    /// The HTTP status, e.g. 200.
    pub status: u16,
    /// The headers, in the order received; names are lower-case.
    pub headers: Vec<(String, String)>,
    /// The body, up to the size asked for.
    pub body: Vec<u8>,
    /// True when the body was longer than the size asked for.
    pub truncated: bool,
}

impl Response {
    /// The body as text (invalid UTF-8 replaced).
    pub fn text(&self) -> String {
        String::from_utf8_lossy(&self.body).into_owned()
    }

    /// The first header named `name` (case-insensitive).
    pub fn header(&self, name: &str) -> Option<&str> {
        self.headers.iter().find(|(key, _)| key.eq_ignore_ascii_case(name)).map(|(_, value)| value.as_str())
    }

    /// For a redirect (301, 302, 303, 307, 308 with a `Location`), the
    /// absolute URL it points to.
    pub fn redirect(&self) -> Option<String> {
        if !matches!(self.status, 301 | 302 | 303 | 307 | 308) {
            return None;
        }
        let location = self.header("location")?;
        resolve(&self.url, location).ok()
    }
}

/// Why a request got no response.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Error {
    /// The URL or a header is not valid.
    InvalidRequest(String),
    /// The host refused the request: this plugin is not granted the scheme,
    /// host and port (or the host resolved to a private address it may not reach).
    Denied(String),
    /// The call already sent as many requests as its limit allows.
    TooManyRequests,
    /// The request was sent (or tried) and failed: no connection, a timeout,
    /// a TLS or protocol error, a response over the host's size limit.
    Failed(String),
}

impl Error {
    fn from_code(code: ErrorCode, url: &Url) -> Error {
        let origin = format!("{}://{}", url.scheme_str(), url.authority);
        match code {
            ErrorCode::HttpRequestDenied => Error::Denied(format!("{origin} is not granted to this plugin")),
            ErrorCode::DestinationIpProhibited => Error::Denied(format!(
                "{origin} resolves to a loopback or private address, which this plugin may reach only if \
                 its grant names that address"
            )),
            ErrorCode::HttpRequestBodySize(_) => {
                Error::Failed(format!("the request body to {origin} is over what this call may send"))
            }
            ErrorCode::ConnectionLimitReached => Error::TooManyRequests,
            ErrorCode::ConnectionTimeout | ErrorCode::HttpResponseTimeout | ErrorCode::ConnectionReadTimeout => {
                Error::Failed(format!("{origin} did not answer in time"))
            }
            ErrorCode::ConnectionRefused => Error::Failed(format!("{origin} refused the connection")),
            ErrorCode::HttpResponseBodySize(_) => Error::Failed(format!("the response from {origin} is too large")),
            ErrorCode::DnsError(_) => Error::Failed(format!("{origin}: the host name could not be resolved")),
            ErrorCode::TlsCertificateError => Error::Failed(format!(
                "{origin}: the server's TLS certificate was not accepted (issued by an authority that is not \
                 trusted, expired, or for another name; the operator can trust a private CA with `ca_file`)"
            )),
            ErrorCode::TlsProtocolError | ErrorCode::TlsAlertReceived(_) => {
                Error::Failed(format!("{origin}: the TLS handshake failed"))
            }
            ErrorCode::HttpProtocolError => Error::Failed(format!("{origin}: the answer is not valid HTTP")),
            other => Error::Failed(format!("{origin}: {}", format!("{other:?}").trim_start_matches("ErrorCode::"))),
        }
    }
}

impl fmt::Display for Error {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Error::InvalidRequest(message) => write!(f, "invalid request: {message}"),
            Error::Denied(message) => write!(f, "request refused by the host: {message}"),
            Error::TooManyRequests => {
                write!(f, "request refused by the host: this call sent as many requests as it may")
            }
            Error::Failed(message) => write!(f, "request failed: {message}"),
        }
    }
}

impl std::error::Error for Error {}

/// A URL split the way `wasi:http` takes it.
struct Url {
    scheme: Scheme,
    authority: String,
    path: String,
}

impl Url {
    fn parse(url: &str) -> Result<Url, Error> {
        let invalid = || {
            Error::InvalidRequest(format!(
                "`{url}` is not an http:// or https:// URL (e.g. `https://example.com/path`)"
            ))
        };
        let (scheme, rest) = url.split_once("://").ok_or_else(invalid)?;
        let scheme = match scheme.to_ascii_lowercase().as_str() {
            "http" => Scheme::Http,
            "https" => Scheme::Https,
            _ => return Err(invalid()),
        };
        let rest = rest.split('#').next().unwrap_or_default();
        let (authority, path) = match rest.find(['/', '?']) {
            Some(at) => rest.split_at(at),
            None => (rest, "/"),
        };
        if authority.is_empty() || authority.contains(char::is_whitespace) {
            return Err(invalid());
        }
        let path = if path.starts_with('?') { format!("/{path}") } else { path.to_owned() };
        Ok(Url { scheme, authority: authority.to_owned(), path })
    }

    fn scheme_str(&self) -> &str {
        match &self.scheme {
            Scheme::Http => "http",
            Scheme::Https => "https",
            Scheme::Other(other) => other,
        }
    }
}

/// `location` made absolute against `base`.
pub fn resolve(base: &str, location: &str) -> Result<String, Error> {
    if location.contains("://") {
        return Ok(location.to_owned());
    }
    let base_url = Url::parse(base)?;
    let origin = format!("{}://{}", base_url.scheme_str(), base_url.authority);
    if let Some(rest) = location.strip_prefix("//") {
        return Ok(format!("{}://{rest}", base_url.scheme_str()));
    }
    if location.starts_with('/') {
        return Ok(format!("{origin}{location}"));
    }
    let path = base_url.path.split('?').next().unwrap_or("/");
    let folder = &path[..path.rfind('/').map_or(0, |at| at + 1)];
    Ok(format!("{origin}{folder}{location}"))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn splits_urls_for_wasi_http() {
        let url = Url::parse("https://api.example.com:8443/v1/items?q=a#frag").unwrap();
        assert_eq!(
            (url.scheme_str(), url.authority.as_str(), url.path.as_str()),
            ("https", "api.example.com:8443", "/v1/items?q=a")
        );
        let url = Url::parse("http://example.com").unwrap();
        assert_eq!(url.path, "/");
        let url = Url::parse("http://example.com?x=1").unwrap();
        assert_eq!(url.path, "/?x=1");
        for bad in ["example.com", "ftp://example.com", "https://", "https:///path"] {
            assert!(matches!(Url::parse(bad), Err(Error::InvalidRequest(_))), "{bad}");
        }
    }

    #[test]
    fn resolves_redirect_locations() {
        let base = "http://127.0.0.1:8080/a/b?c=d";
        assert_eq!(resolve(base, "https://other.example/x").unwrap(), "https://other.example/x");
        assert_eq!(resolve(base, "//other.example/x").unwrap(), "http://other.example/x");
        assert_eq!(resolve(base, "/x?y=1").unwrap(), "http://127.0.0.1:8080/x?y=1");
        assert_eq!(resolve(base, "c").unwrap(), "http://127.0.0.1:8080/a/c");
    }
}

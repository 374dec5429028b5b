//! Why a model request failed: the errors a user sees ([`ModelError`]), what
//! one attempt ended in ([`Failure`]), and how a provider's error answer is
//! made one printable line.

use serde_json::Value;
use std::fmt;
use std::time::Duration;
use toolhost_runtime::limits::HumanDuration;

/// Why a model request failed, after any retries.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum ModelError {
    /// 401/403: the key is missing, wrong, or lacks access.
    #[error("the model provider refused the API key (HTTP {status}): {message}. Check {hint}")]
    Auth {
        /// The HTTP status.
        status: u16,
        /// The provider's message.
        message: String,
        /// Where the key comes from.
        hint: String,
    },
    /// 404: unknown model or wrong base URL.
    #[error("the model provider answered 404 for {url}: {message}. Check the model name and the base URL")]
    NotFound {
        /// The URL requested.
        url: String,
        /// The provider's message.
        message: String,
    },
    /// Another 4xx: the request was refused.
    #[error("the model provider rejected the request (HTTP {status}): {message}")]
    Rejected {
        /// The HTTP status.
        status: u16,
        /// The provider's message.
        message: String,
    },
    /// 429 or 5xx, still failing after the retries.
    #[error("the model provider is unavailable (HTTP {status}) after {}: {message}", Attempts(*.attempts))]
    Unavailable {
        /// The last HTTP status.
        status: u16,
        /// How many requests were made.
        attempts: u32,
        /// The provider's last message.
        message: String,
    },
    /// The connection could not be made, still after the retries.
    #[error("could not reach the model at {url} after {}: {message}", Attempts(*.attempts))]
    Connection {
        /// The URL.
        url: String,
        /// How many requests were made.
        attempts: u32,
        /// What went wrong.
        message: String,
    },
    /// The model answered, but its streamed response broke off before it was
    /// complete: on every attempt, or after text was already shown (which a
    /// retry would show again, so there is none).
    #[error(
        "the model's response from {url} broke off before it was complete ({message}); {}",
        if *partial_text {
            "the text shown so far is kept in the transcript (not retried, so as not to repeat it)".to_owned()
        } else {
            format!("gave up after {}", Attempts(*attempts))
        }
    )]
    Dropped {
        /// The URL.
        url: String,
        /// How many requests were made.
        attempts: u32,
        /// What went wrong.
        message: String,
        /// Whether some text of the answer had already been streamed.
        partial_text: bool,
    },
    /// The server's TLS certificate could not be verified.
    #[error(
        "could not verify the TLS certificate of {url}: {message}. If the server uses a private or \
         company CA, name its PEM file as `ca_file` in the config"
    )]
    Certificate {
        /// The URL.
        url: String,
        /// What rustls said.
        message: String,
    },
    /// The response did not start, or stalled, within the timeout.
    #[error("the model did not answer within {}", HumanDuration(*.0))]
    Timeout(Duration),
    /// The provider reported that it could not produce the response (an
    /// OpenAI Responses `failed` status or `error` event).
    #[error("the model provider could not produce a response: {message}")]
    Failed {
        /// The provider's code and message.
        message: String,
    },
    /// The server answered, but not in the protocol expected.
    #[error("the server at {url} does not speak the {protocol} protocol: {message}")]
    Protocol {
        /// The URL.
        url: String,
        /// The protocol expected.
        protocol: &'static str,
        /// What was wrong with the answer.
        message: String,
    },
}

/// "1 attempt", "3 attempts".
struct Attempts(u32);

impl fmt::Display for Attempts {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self.0 {
            1 => f.write_str("1 attempt"),
            n => write!(f, "{n} attempts"),
        }
    }
}

/// What one attempt ended in.
#[derive(Debug)]
pub(super) enum Failure {
    /// Worth another attempt.
    Retryable { error: ModelError, retry_after: Option<Duration> },
    /// Not worth another attempt.
    Final(ModelError),
    /// The answer was not in the protocol (the URL is added by the caller).
    Protocol(String),
    /// No answer (or no next chunk) within the timeout.
    Timeout,
}

impl Failure {
    pub(super) fn connection(url: &str, err: &reqwest::Error) -> Failure {
        if err.is_timeout() {
            return Failure::Timeout;
        }
        // An untrusted certificate fails the same way every time: not worth a retry.
        if let Some(tls) = toolhost_runtime::tls::untrusted_certificate(err) {
            return Failure::Final(ModelError::Certificate { url: url.to_owned(), message: tls.to_string() });
        }
        // Connected, and the connection closed before the answer came: the
        // model was reached, so this is not a connection that failed.
        if err.is_request() && !err.is_connect() {
            return Failure::dropped(url, format!("the connection closed before the answer came: {}", chain(err)));
        }
        Failure::Retryable {
            error: ModelError::Connection { url: url.to_owned(), attempts: 0, message: chain(err) },
            retry_after: None,
        }
    }

    /// An answer that is not in the protocol.
    pub(super) fn protocol(message: impl Into<String>) -> Failure {
        Failure::Protocol(one_line(&message.into(), 400))
    }

    /// A provider's error, in a 200 answer or in a stream: worth another attempt.
    pub(super) fn provider_error(message: &str) -> Failure {
        Failure::Retryable {
            error: ModelError::Unavailable { status: 200, attempts: 0, message: one_line(message, 300) },
            retry_after: None,
        }
    }

    /// A stream that broke off before the response was complete.
    pub(super) fn dropped(url: &str, message: impl Into<String>) -> Failure {
        Failure::Retryable {
            error: ModelError::Dropped {
                url: url.to_owned(),
                attempts: 0,
                message: one_line(&message.into(), 300),
                partial_text: false,
            },
            retry_after: None,
        }
    }
}

/// An error and its causes, as one line.
pub(super) fn chain(err: &reqwest::Error) -> String {
    let mut message = err.to_string();
    let mut source = std::error::Error::source(err);
    while let Some(cause) = source {
        let text = cause.to_string();
        // reqwest and hyper often repeat a cause's text in its parent's.
        if !message.contains(&text) {
            message.push_str(": ");
            message.push_str(&text);
        }
        source = cause.source();
    }
    one_line(&message, 300)
}

/// What an answer that is not JSON looks like, in a few words.
pub(super) fn describe_body(text: &str) -> String {
    let trimmed = text.trim_start();
    if trimmed.starts_with('<') {
        if let Some(title) = html_title(trimmed).map(|title| one_line(&title, 120)).filter(|t| !t.is_empty()) {
            return format!("it is an HTML page titled `{title}`");
        }
        if trimmed[..trimmed.floor_char_boundary(1024)].to_ascii_lowercase().contains("<html") {
            return "it is an HTML page".to_owned();
        }
    }
    if trimmed.is_empty() { "it is empty".to_owned() } else { format!("it starts with `{}`", preview(text)) }
}

/// The provider's error message from an error body, as one printable line:
/// a JSON error's message, an HTML page's `<title>` (nginx, Cloudflare and
/// load balancers answer 502s and 504s with a page of markup) or else the
/// status's name, or the start of any other text.
pub(super) fn error_message(body: &str, status: u16) -> String {
    if let Ok(value) = serde_json::from_str::<Value>(body) {
        let message = value
            .pointer("/error/message")
            .or_else(|| value.get("message"))
            .or_else(|| value.get("error"))
            .or_else(|| value.get("detail"))
            .and_then(Value::as_str);
        if let Some(message) = message.filter(|message| !message.trim().is_empty()) {
            return one_line(message, 300);
        }
    }
    let text = body.trim_start();
    let head = text[..text.floor_char_boundary(1024)].to_ascii_lowercase();
    if text.starts_with('<') && ["<html", "<!doctype", "<head", "<title", "<body"].iter().any(|tag| head.contains(tag))
    {
        let title = html_title(text).map(|title| one_line(&title, 200)).filter(|title| !title.is_empty());
        return title.unwrap_or_else(|| {
            let name = reqwest::StatusCode::from_u16(status).ok().and_then(|status| status.canonical_reason());
            match name {
                Some(name) => format!("{status} {name} (an HTML page)"),
                None => format!("HTTP {status} (an HTML page)"),
            }
        });
    }
    if text.trim().is_empty() { "(no message)".to_owned() } else { one_line(text, 200) }
}

/// The text of an HTML page's `<title>`, its few common entities decoded.
fn html_title(html: &str) -> Option<String> {
    let lower = html.to_ascii_lowercase();
    let open = lower.find("<title")?;
    let start = open + lower[open..].find('>')? + 1;
    let end = start + lower[start..].find("</title")?;
    let title = html[start..end]
        .replace("&lt;", "<")
        .replace("&gt;", ">")
        .replace("&quot;", "\"")
        .replace("&#39;", "'")
        .replace("&#x27;", "'")
        .replace("&nbsp;", " ")
        .replace("&amp;", "&");
    Some(title)
}

/// `text` as one printable line of at most `max` bytes (and an ellipsis):
/// control characters, escape sequences and direction overrides dropped,
/// line breaks and runs of white space made one space.
pub(crate) fn one_line(text: &str, max: usize) -> String {
    let printable = toolhost_runtime::text::printable(text);
    let mut line = String::with_capacity(printable.len().min(max + 4));
    for word in printable.split_whitespace() {
        if !line.is_empty() {
            line.push(' ');
        }
        line.push_str(word);
        if line.len() > max {
            break;
        }
    }
    if line.len() > max {
        let cut = line.floor_char_boundary(max);
        line.truncate(cut);
        line.push('…');
    }
    line
}

pub(super) fn preview(text: &str) -> String {
    one_line(text, 120)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn finds_the_providers_error_message() {
        assert_eq!(error_message(r#"{"error":{"message":"bad key","type":"x"}}"#, 401), "bad key");
        assert_eq!(error_message(r#"{"type":"error","error":{"type":"x","message":"overloaded"}}"#, 529), "overloaded");
        assert_eq!(
            error_message(r#"{"error":{"message":"line one\nline\ttwo \u001b[31mred"}}"#, 400),
            "line one line two [31mred"
        );
        assert_eq!(error_message("", 500), "(no message)");
        assert_eq!(error_message("upstream\nconnect error\r\n", 503), "upstream connect error");
    }

    #[test]
    fn an_html_error_page_is_its_title_or_its_status() {
        let nginx = "<html>\r\n<head><title>502 Bad Gateway</title></head>\r\n<body>\r\n<center><h1>502 Bad Gateway</h1></center>\r\n<hr><center>nginx</center>\r\n</body>\r\n</html>\r\n";
        assert_eq!(error_message(nginx, 502), "502 Bad Gateway");
        let cloudflare = "<!DOCTYPE html>\n<!--[if lt IE 7]> <html class=\"no-js ie6 oldie\" lang=\"en-US\"> <![endif]-->\n<head>\n<title>api.example.com | 502: Bad gateway</title>\n<meta charset=\"UTF-8\" />";
        assert_eq!(error_message(cloudflare, 502), "api.example.com | 502: Bad gateway");
        assert_eq!(error_message("<html><body><h1>oops</h1></body></html>", 504), "504 Gateway Timeout (an HTML page)");
        assert_eq!(error_message("<HTML><TITLE>A &amp; B</TITLE></HTML>", 500), "A & B");
    }
}

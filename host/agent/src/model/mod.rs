//! Talking to language models: one provider-neutral conversation, three wire
//! protocols (OpenAI Chat Completions, the OpenAI Responses API and Anthropic
//! Messages), streaming and plain, with retries.
//!
//! [`ModelClient::complete`] sends a [`Conversation`] and the tools, and
//! returns the model's [`Reply`]: its text, the tool calls it made (assembled
//! from stream chunks however the server splits them), why it stopped, and
//! the tokens it used. Text is handed to a callback as it arrives.

mod anthropic;
mod conversation;
mod endpoint;
mod errors;
mod openai;
mod protocol;
mod reasoning;
mod reply;
mod responses;
mod sse;
mod wire;
pub use conversation::{Conversation, Media, MediaKind, Message, ProviderState, ToolCall, ToolResult, ToolSpec};
pub use endpoint::{ApiKey, Endpoint, Progress, Protocol, RequestOptions, Retry};
pub use errors::ModelError;
use errors::{Failure, chain, describe_body, error_message, one_line, preview};
pub use reasoning::{Effort, Reasoning};
use reply::{Delta, text_of};
pub use reply::{Reply, Searched, StopKind, StopReason, TokenUsage};

use serde_json::Value;
use std::time::Duration;

/// A client for one model endpoint.
#[derive(Clone)]
pub struct ModelClient {
    endpoint: Endpoint,
    options: RequestOptions,
    http: reqwest::Client,
}

impl ModelClient {
    /// A client for `endpoint`.
    pub fn new(endpoint: Endpoint, options: RequestOptions) -> anyhow::Result<ModelClient> {
        // reqwest is built without a default TLS crypto provider (the
        // `ring` one is already in the tree); install it once per process.
        let _ = rustls::crypto::ring::default_provider().install_default();
        let mut roots = Vec::with_capacity(options.extra_roots.len());
        for root in &options.extra_roots {
            roots.push(
                reqwest::Certificate::from_der(root)
                    .map_err(|err| anyhow::anyhow!("a certificate of the CA file is not usable: {err}"))?,
            );
        }
        // Proxies come from HTTPS_PROXY, HTTP_PROXY, ALL_PROXY and NO_PROXY
        // (upper or lower case), which reqwest reads when the client is built.
        let http = reqwest::Client::builder()
            .connect_timeout(Duration::from_secs(10).min(options.timeout))
            .read_timeout(options.timeout)
            .user_agent(concat!("toolhost/", env!("CARGO_PKG_VERSION")))
            .tls_certs_merge(roots)
            .build()
            .map_err(|err| anyhow::anyhow!("could not set up the HTTP client: {err}"))?;
        Ok(ModelClient { endpoint, options, http })
    }

    /// The endpoint this client talks to.
    pub fn endpoint(&self) -> &Endpoint {
        &self.endpoint
    }

    /// Whether the provider searches deferred tools itself (Anthropic's
    /// tool search tool): a [`ToolSpec`] with `defer` is then sent for it to
    /// find rather than listed in full.
    pub fn native_search(&self) -> bool {
        self.endpoint.protocol.wire().native_search()
    }

    /// The searches the provider ran itself for `reply`.
    pub fn searches(&self, reply: &Reply) -> Vec<Searched> {
        self.endpoint.protocol.wire().searches(&reply.state)
    }

    /// This client, asking for whole responses of at most `max_tokens` (or
    /// its own limit, if lower) in all, reasoning included: for one sampling
    /// request, sized by the tool's grant. The request allows no more than
    /// that: reasoning is bounded inside it (Anthropic: a thinking budget of
    /// at most half of it, off when that is under the 1,024 minimum).
    pub fn limited(&self, max_tokens: u32) -> ModelClient {
        let mut client = self.clone();
        client.options.max_tokens = Some(client.options.max_tokens.map_or(max_tokens, |own| own.min(max_tokens)));
        client.options.stream = false;
        client.options.bounded = true;
        client
    }

    /// Sends the conversation and the tools; reports streamed text and
    /// retries to `on_progress` as they happen.
    pub async fn complete(
        &self,
        conversation: &Conversation,
        tools: &[ToolSpec],
        on_progress: &mut (dyn FnMut(Progress<'_>) + Send),
    ) -> Result<Reply, ModelError> {
        let (url, body) = self.endpoint.protocol.wire().request(&self.endpoint, &self.options, conversation, tools);
        let mut attempt = 0u32;
        loop {
            attempt += 1;
            let mut delivered = false;
            let result = self
                .attempt(&url, &body, &mut |delta: Delta<'_>| match delta {
                    Delta::Text(text) => {
                        delivered = true;
                        on_progress(Progress::Text(text));
                    }
                    Delta::Reasoning(text) => on_progress(Progress::Reasoning(text)),
                })
                .await;
            let (error, retry_after) = match &result {
                Err(Failure::Retryable { error, retry_after }) if attempt <= self.options.max_retries && !delivered => {
                    (error, *retry_after)
                }
                _ => return result.map_err(|failure| self.error(failure, attempt, &url, delivered)),
            };
            let wait = retry_after.unwrap_or_else(|| backoff(attempt));
            on_progress(Progress::Retry(Retry {
                reason: retry_reason(error),
                wait,
                attempt: attempt + 1,
                max_attempts: self.options.max_retries + 1,
            }));
            tracing::info!(attempt, wait_ms = wait.as_millis() as u64, "retrying the model request");
            tokio::time::sleep(wait).await;
        }
    }

    async fn attempt(
        &self,
        url: &str,
        body: &Value,
        on_text: &mut (dyn FnMut(Delta<'_>) + Send),
    ) -> Result<Reply, Failure> {
        let mut request = self.http.post(url).header("content-type", "application/json");
        let wire = self.endpoint.protocol.wire();
        request = wire.authorize(request, self.endpoint.api_key.as_ref());
        for (name, value) in wire.headers(body) {
            request = request.header(*name, *value);
        }
        let send = request.body(body.to_string()).send();
        let response = match tokio::time::timeout(self.options.timeout, send).await {
            Err(_) => return Err(Failure::Timeout),
            Ok(Err(err)) => return Err(Failure::connection(url, &err)),
            Ok(Ok(response)) => response,
        };
        let status = response.status();
        if !status.is_success() {
            let retry_after = retry_after(response.headers());
            let text = response.text().await.unwrap_or_default();
            return Err(self.http_failure(url, status.as_u16(), &text, retry_after));
        }
        let is_stream = response
            .headers()
            .get("content-type")
            .and_then(|value| value.to_str().ok())
            .is_some_and(|value| value.starts_with("text/event-stream"));
        if is_stream {
            let events = sse::Events::new(url, response.bytes_stream());
            wire.read_stream(events, on_text).await
        } else {
            // The answer had begun: a failure now is a response that broke
            // off, not a connection that could not be made.
            let text = response.text().await.map_err(|err| {
                if err.is_timeout() {
                    Failure::Timeout
                } else {
                    Failure::dropped(url, format!("the connection failed while the response was read: {}", chain(&err)))
                }
            })?;
            let value: Value = serde_json::from_str(&text)
                .map_err(|_| Failure::Protocol(format!("the answer is not JSON: {}", describe_body(&text))))?;
            let reply = wire.parse_reply(&value)?;
            let reasoning = reply.state.reasoning_text();
            if !reasoning.is_empty() {
                on_text(Delta::Reasoning(&reasoning));
            }
            if !reply.content.is_empty() {
                on_text(Delta::Text(&reply.content));
            }
            Ok(reply)
        }
    }

    fn error(&self, failure: Failure, attempts: u32, url: &str, partial_text: bool) -> ModelError {
        match failure {
            Failure::Retryable { error, .. } => match error {
                ModelError::Unavailable { status, message, .. } => {
                    ModelError::Unavailable { status, attempts, message }
                }
                ModelError::Connection { url, message, .. } => ModelError::Connection { url, attempts, message },
                ModelError::Dropped { url, message, .. } => {
                    ModelError::Dropped { url, attempts, message, partial_text }
                }
                other => other,
            },
            Failure::Final(error) => error,
            Failure::Protocol(message) => {
                ModelError::Protocol { url: url.to_owned(), protocol: self.endpoint.protocol.title(), message }
            }
            Failure::Timeout => ModelError::Timeout(self.options.timeout),
        }
    }

    fn http_failure(&self, url: &str, status: u16, body: &str, retry_after: Option<Duration>) -> Failure {
        let message = error_message(body, status);
        match status {
            401 | 403 => {
                Failure::Final(ModelError::Auth { status, message, hint: self.endpoint.protocol.wire().key_hint() })
            }
            404 => Failure::Final(ModelError::NotFound { url: url.to_owned(), message }),
            408 | 409 | 425 | 429 | 500..=599 => {
                Failure::Retryable { error: ModelError::Unavailable { status, attempts: 0, message }, retry_after }
            }
            _ => Failure::Final(ModelError::Rejected { status, message }),
        }
    }
}

/// What went wrong with an attempt that will be retried, in a few words.
fn retry_reason(error: &ModelError) -> String {
    match error {
        ModelError::Unavailable { status, message, .. } => format!("HTTP {status}: {message}"),
        ModelError::Connection { message, .. } => format!("could not connect: {message}"),
        ModelError::Dropped { message, .. } => format!("the response broke off: {message}"),
        other => other.to_string(),
    }
}

/// Exponential backoff with jitter: 0.5s, 1s, 2s, 4s, … capped at 30s.
fn backoff(attempt: u32) -> Duration {
    let base = Duration::from_millis(500).saturating_mul(1 << attempt.saturating_sub(1).min(6));
    let jitter = Duration::from_millis(u64::from(std::process::id() ^ attempt) % 250);
    (base + jitter).min(Duration::from_secs(30))
}

/// `Retry-After` (seconds) or OpenAI's `retry-after-ms`, capped at a minute.
fn retry_after(headers: &reqwest::header::HeaderMap) -> Option<Duration> {
    let header = |name: &str| headers.get(name).and_then(|value| value.to_str().ok()).map(str::trim);
    let wait = if let Some(ms) = header("retry-after-ms").and_then(|value| value.parse::<f64>().ok()) {
        Duration::from_secs_f64(ms.max(0.0) / 1_000.0)
    } else {
        Duration::from_secs_f64(header("retry-after")?.parse::<f64>().ok()?.max(0.0))
    };
    Some(wait.min(Duration::from_secs(60)))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn backoff_grows_and_is_capped() {
        assert!(backoff(1) >= Duration::from_millis(500) && backoff(1) < Duration::from_millis(750));
        assert!(backoff(3) >= Duration::from_secs(2));
        assert_eq!(backoff(30), Duration::from_secs(30));
    }

    #[test]
    fn reads_retry_after_in_seconds_or_milliseconds() {
        let mut headers = reqwest::header::HeaderMap::new();
        headers.insert("retry-after", "2".parse().unwrap());
        assert_eq!(retry_after(&headers), Some(Duration::from_secs(2)));
        headers.insert("retry-after-ms", "150".parse().unwrap());
        assert_eq!(retry_after(&headers), Some(Duration::from_millis(150)));
        let mut headers = reqwest::header::HeaderMap::new();
        headers.insert("retry-after", "Wed, 21 Oct 2015 07:28:00 GMT".parse().unwrap());
        assert_eq!(retry_after(&headers), None);
    }
}

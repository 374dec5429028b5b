//! What a call produced: its output or the typed reason it has none, and what
//! it consumed.

use crate::limits::ByteSize;
use serde::Serialize;
use std::fmt;
use std::net::IpAddr;
use std::time::Duration;

/// A successful call's output.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
#[serde(tag = "type", content = "value", rename_all = "snake_case")]
pub enum ToolOutput {
    /// Plain text.
    Text(String),
    /// A JSON document, as the plugin wrote it.
    Json(String),
    /// Content blocks (contract 0.2.0), checked and scrubbed.
    Content(Vec<crate::content::ContentBlock>),
}

impl ToolOutput {
    /// The output as text, whatever its kind: content blocks as a model
    /// reads them ([`crate::content::as_text`]).
    pub fn as_str(&self) -> std::borrow::Cow<'_, str> {
        match self {
            ToolOutput::Text(text) | ToolOutput::Json(text) => std::borrow::Cow::Borrowed(text),
            ToolOutput::Content(blocks) => std::borrow::Cow::Owned(crate::content::as_text(blocks)),
        }
    }
}

/// Why a call produced no output. Each limit breach has its own variant, so a
/// caller can tell the model (or a person) exactly what to change.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum CallError {
    /// No loaded plugin offers this tool.
    #[error("no tool named `{name}` is loaded{}", suggest(.suggestion))]
    UnknownTool {
        /// The name asked for.
        name: String,
        /// A loaded tool with a similar name, if any.
        suggestion: Option<String>,
    },
    /// The arguments were not valid JSON, did not match the tool's schema, or
    /// were refused by the tool itself.
    #[error("invalid arguments: {0}")]
    InvalidArguments(String),
    /// The tool ran and reported that it could not do its job.
    #[error("the tool failed: {0}")]
    ToolFailed(String),
    /// The call executed more instructions than its fuel allowed.
    #[error("ran out of fuel after {limit} instructions (raise the `fuel` limit if the work is legitimate)")]
    OutOfFuel {
        /// The fuel limit.
        limit: u64,
    },
    /// The instance asked for more memory than allowed.
    #[error(
        "hit the memory limit of {limit} (it asked for {requested}; raise the `memory` limit if the work is legitimate)"
    )]
    MemoryLimit {
        /// The memory limit.
        limit: ByteSize,
        /// The size the instance tried to grow to.
        requested: ByteSize,
    },
    /// The call did not finish within its wall-clock limit.
    #[error("timed out after {}ms (raise the `timeout` limit if the work is legitimate)", .limit.as_millis())]
    Timeout {
        /// The timeout.
        limit: Duration,
    },
    /// An MCP server did not answer within its `tool_timeout`; the request
    /// was cancelled (`notifications/cancelled`). Its kind is `timeout`.
    #[error(
        "timed out after {}ms, the `tool_timeout` of [mcp_servers.{server}] (the server was told to cancel the \
         call; raise `tool_timeout` there if the work is legitimate)",
        .limit.as_millis()
    )]
    ToolTimeout {
        /// The server's `tool_timeout`.
        limit: Duration,
        /// The server's name in the config.
        server: String,
    },
    /// The output (or error text) was larger than allowed.
    #[error(
        "returned {}, over the limit of {limit} (ask for less, or raise the `output` limit)",
        returned(.size, .limit)
    )]
    OutputTooLarge {
        /// The output's size, when the host copied it; `None` when it was so
        /// far over the limit that the host refused to copy it at all.
        size: Option<ByteSize>,
        /// The output limit.
        limit: ByteSize,
    },
    /// The plugin broke the contract with what it returned: `json` output
    /// that is not JSON, or a secret's value where it cannot be removed.
    #[error("returned an unusable output: {0}")]
    InvalidOutput(String),
    /// The guest overflowed its call stack (usually unbounded recursion).
    #[error("overflowed its stack (unbounded recursion?)")]
    StackOverflow,
    /// An async guest (WASI 0.3) is stuck: every one of its tasks waits for
    /// something that can never happen (a future or stream nobody will
    /// complete, a task waiting on itself), so nothing more can run.
    #[error(
        "is stuck: every task it started waits for something that can never happen (a future or stream that \
         nothing will complete), so it can never answer; this is a bug in the plugin"
    )]
    Stuck,
    /// The guest held more handles (async tasks, futures, streams, resources)
    /// at once than a call may: usually tasks spawned without end.
    #[error(
        "held more than {limit} handles at once (async tasks, futures, streams or resources; a plugin that \
         spawns tasks without end hits this); this is a bug in the plugin"
    )]
    HandleLimit {
        /// The most a call may hold at once.
        limit: usize,
    },
    /// The guest trapped: a panic, an `unreachable`, a bad memory access, …
    #[error("trapped: {message}")]
    Trap {
        /// The trap, and what the guest printed before it (a panic message).
        message: String,
    },
    /// A `[quotas]` rate limit was used up, so the call was not run.
    #[error(
        "was not run: {scope} may be called {limit} (`[quotas]` in the config) and that is used up; \
         retry after {}",
        seconds(.retry_after)
    )]
    RateLimited {
        /// Whose limit: ``tool `fetch` ``, ``plugin `fetch` `` or ``MCP server `github` ``.
        scope: String,
        /// The limit in words, e.g. `10 times per minute`.
        limit: String,
        /// When the next call would be let through.
        retry_after: Duration,
    },
    /// A `[quotas]` concurrency cap was reached, so the call was not run.
    #[error(
        "was not run: {scope} already has {limit} call{} running, its cap (`[quotas]` in the config); \
         retry when one of them finishes",
        if *.limit == 1 { "" } else { "s" }
    )]
    Busy {
        /// Whose cap, as for [`CallError::RateLimited`].
        scope: String,
        /// The cap.
        limit: usize,
    },
    /// The host could not run the call at all (for example no instance slot).
    #[error("could not be run: {0}")]
    Host(String),
    /// The operator's hook (`[[hooks]]`) refused the call before it ran, or
    /// withheld its result after; the text is the hook's reason.
    #[error("was refused by the operator's hook: {0}")]
    Denied(String),
    /// The call stopped to ask its client, which answers by calling again
    /// (MCP 2026-07-28); only a front end that suspends calls sees it.
    #[error("stopped to ask the client, which answers by calling again")]
    InputRequired,
}

/// `1.5s`, rounded up to a tenth of a second so that retrying then succeeds.
fn seconds(duration: &Duration) -> String {
    let tenths = duration.as_millis().div_ceil(100).max(1);
    format!("{}.{}s", tenths / 10, tenths % 10)
}

/// "4MiB of output", or, when the host refused to copy it, how far it got.
fn returned(size: &Option<ByteSize>, limit: &ByteSize) -> String {
    match size {
        Some(size) => format!("{size} of output"),
        None => format!(
            "more than {} of output (toolhost stopped copying it there)",
            ByteSize(limit.bytes().saturating_add(crate::limits::TRANSFER_SLACK))
        ),
    }
}

fn suggest(suggestion: &Option<String>) -> String {
    match suggestion {
        Some(name) => format!(" (did you mean `{name}`?)"),
        None => " (run `toolhost tools` to list them)".to_owned(),
    }
}

impl CallError {
    /// A stable snake_case name for the kind, for JSON and events.
    pub fn kind(&self) -> &'static str {
        match self {
            CallError::UnknownTool { .. } => "unknown_tool",
            CallError::InvalidArguments(_) => "invalid_arguments",
            CallError::ToolFailed(_) => "tool_failed",
            CallError::OutOfFuel { .. } => "out_of_fuel",
            CallError::MemoryLimit { .. } => "memory_limit",
            CallError::Timeout { .. } | CallError::ToolTimeout { .. } => "timeout",
            CallError::OutputTooLarge { .. } => "output_too_large",
            CallError::InvalidOutput(_) => "invalid_output",
            CallError::StackOverflow => "stack_overflow",
            CallError::Stuck => "stuck",
            CallError::HandleLimit { .. } => "handle_limit",
            CallError::Trap { .. } => "trap",
            CallError::RateLimited { .. } => "rate_limited",
            CallError::Busy { .. } => "busy",
            CallError::Host(_) => "host",
            CallError::Denied(_) => "denied",
            CallError::InputRequired => "input_required",
        }
    }

    /// For a call refused by a rate limit: when its next call is let
    /// through. (A busy cap frees up when a running call ends, which no one
    /// can say in advance.)
    pub fn retry_after(&self) -> Option<Duration> {
        match self {
            CallError::RateLimited { retry_after, .. } => Some(*retry_after),
            _ => None,
        }
    }

    /// True when a limit stopped the call.
    pub fn is_limit(&self) -> bool {
        matches!(
            self,
            CallError::OutOfFuel { .. }
                | CallError::MemoryLimit { .. }
                | CallError::Timeout { .. }
                | CallError::ToolTimeout { .. }
                | CallError::OutputTooLarge { .. }
                | CallError::StackOverflow
                | CallError::HandleLimit { .. }
        )
    }
}

/// What a call consumed.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Serialize)]
pub struct Usage {
    /// Fuel (roughly, wasm instructions) consumed.
    pub fuel: u64,
    /// The largest linear memory size the instance reached, in bytes.
    pub memory_peak: u64,
    /// Wall-clock time from instantiation to result.
    #[serde(serialize_with = "as_micros", rename = "wall_us")]
    pub wall: Duration,
    /// HTTP requests the plugin sent (refused ones are not counted).
    pub http_requests: u32,
    /// Bytes of HTTP request bodies the plugin sent.
    pub http_request_bytes: u64,
    /// Bytes of HTTP response bodies the plugin received.
    pub http_response_bytes: u64,
}

/// Something a plugin tried that its grants or limits did not allow: the
/// host refused it (or stopped it) and told the plugin in the standard way
/// (`wasi:http`'s `HTTP-request-denied`, a refused socket, a failed read).
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct Refusal {
    /// What was asked for: `https://api.example.com:443` for an HTTP request,
    /// `tcp 10.0.0.1:22` for a socket.
    pub target: String,
    /// Why it was refused.
    #[serde(flatten)]
    pub reason: RefusalReason,
}

/// Why a [`Refusal`] happened.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
#[serde(tag = "kind", rename_all = "snake_case")]
pub enum RefusalReason {
    /// No entry of the plugin's network grant admits this scheme, host and port.
    NotGranted,
    /// The host name resolved to a loopback, private or otherwise special
    /// address, and no grant entry names that address.
    PrivateAddress {
        /// The address it resolved to.
        address: IpAddr,
        /// The grant entry that would allow it: the same scheme and port, the
        /// address itself as the host.
        allow: String,
    },
    /// A `wasi:sockets` connection from a plugin whose grant does not turn
    /// sockets on (`sockets = true`).
    SocketsNotGranted,
    /// A `wasi:sockets` listen, or a bind to a chosen address or port, which
    /// no grant allows.
    ListenOrBind,
    /// The request bodies went over `http_request_body`; the request was
    /// stopped there (or not sent, when its declared length was over).
    RequestTooLarge {
        /// The limit, in bytes.
        #[serde(serialize_with = "as_bytes")]
        limit: ByteSize,
    },
    /// The call already sent `http_requests` requests.
    TooManyRequests {
        /// The limit.
        limit: u32,
    },
    /// The response bodies went over `http_response`; the body was cut there
    /// or the read failed, as `http_oversized` says.
    ResponseTooLarge {
        /// The limit, in bytes.
        #[serde(serialize_with = "as_bytes")]
        limit: ByteSize,
        /// True when the body was cut, false when the read failed.
        cut: bool,
    },
    /// The request took longer than `http_timeout` (or ran into the call's deadline).
    TimedOut {
        /// The time it was allowed.
        #[serde(serialize_with = "as_millis", rename = "limit_ms")]
        limit: Duration,
    },
    /// The credential the operator bound to this destination could not be
    /// had (its value unset, its token endpoint failing), so the request was
    /// not sent.
    CredentialUnavailable {
        /// Why, in one line (never a value).
        why: String,
    },
    /// A response to a request that carried a credential came in a form
    /// toolhost cannot mask (a content coding it did not ask for and cannot
    /// undo, or a compressed body that does not decode), so it was not
    /// passed on.
    UnreadableResponse {
        /// Why, in one line.
        why: String,
    },
    /// The request carried the value of a secret granted with `to`, and this
    /// host is not one of them: it was refused before it left (or, when the
    /// value was in its body, stopped before the bytes that show it).
    SecretNotForHost {
        /// The secret's name (never its value).
        secret: String,
    },
    /// The request's body is in a content coding, so it cannot be checked
    /// for the secrets bound to other hosts; it was refused.
    UncheckableBody {
        /// The coding.
        coding: String,
    },
}

impl fmt::Display for Refusal {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let target = &self.target;
        match &self.reason {
            RefusalReason::NotGranted => {
                write!(f, "{target}: not granted to this plugin (grant it in the plugin's `http` list)")
            }
            RefusalReason::PrivateAddress { address, allow } => write!(
                f,
                "{target}: resolves to {address}, a loopback or private address, which a granted host \
                 name may not reach (to allow it, name the address itself in the grant: `{allow}`)"
            ),
            RefusalReason::SocketsNotGranted => write!(
                f,
                "{target}: raw TCP sockets are not granted to this plugin (`sockets = true` in its grant \
                 opens TCP to the hosts and ports of its `http` list)"
            ),
            RefusalReason::ListenOrBind => write!(
                f,
                "{target}: a plugin may not listen or bind to an address (only outgoing TCP connections to \
                 granted hosts can be allowed)"
            ),
            RefusalReason::RequestTooLarge { limit } => write!(
                f,
                "{target}: request body over the limit of {limit} per call (`http_request_body`), so the \
                 request was stopped"
            ),
            RefusalReason::TooManyRequests { limit } => {
                write!(f, "{target}: over the limit of {limit} HTTP requests per call (`http_requests`)")
            }
            RefusalReason::ResponseTooLarge { limit, cut: true } => {
                write!(f, "{target}: response cut at the limit of {limit} per call (`http_response`)")
            }
            RefusalReason::ResponseTooLarge { limit, cut: false } => {
                write!(f, "{target}: response over the limit of {limit} per call (`http_response`), so the read failed")
            }
            RefusalReason::TimedOut { limit } => {
                write!(
                    f,
                    "{target}: timed out after {}ms (`http_timeout`, or the call's own deadline)",
                    limit.as_millis()
                )
            }
            RefusalReason::CredentialUnavailable { why } => write!(f, "{target}: not sent: {why}"),
            RefusalReason::UnreadableResponse { why } => write!(f, "{target}: the response was withheld: {why}"),
            RefusalReason::SecretNotForHost { secret } => write!(
                f,
                "{target}: the request carries the value of the secret `{secret}`, which may be sent only to the \
                 hosts its grant names (`to`), so it was refused"
            ),
            RefusalReason::UncheckableBody { coding } => write!(
                f,
                "{target}: the request body is in the content coding `{coding}`, which toolhost cannot check for \
                 the secrets bound to other hosts, so it was refused (send it uncompressed)"
            ),
        }
    }
}

impl RefusalReason {
    /// A stable snake_case name for the kind, for JSON and events.
    pub fn kind(&self) -> &'static str {
        match self {
            RefusalReason::NotGranted => "not_granted",
            RefusalReason::PrivateAddress { .. } => "private_address",
            RefusalReason::SocketsNotGranted => "sockets_not_granted",
            RefusalReason::ListenOrBind => "listen_or_bind",
            RefusalReason::RequestTooLarge { .. } => "request_too_large",
            RefusalReason::TooManyRequests { .. } => "too_many_requests",
            RefusalReason::ResponseTooLarge { .. } => "response_too_large",
            RefusalReason::TimedOut { .. } => "timed_out",
            RefusalReason::CredentialUnavailable { .. } => "credential_unavailable",
            RefusalReason::UnreadableResponse { .. } => "unreadable_response",
            RefusalReason::SecretNotForHost { .. } => "secret_not_for_host",
            RefusalReason::UncheckableBody { .. } => "uncheckable_body",
        }
    }
}

fn as_bytes<S: serde::Serializer>(size: &ByteSize, serializer: S) -> Result<S::Ok, S::Error> {
    serializer.serialize_u64(size.bytes())
}

fn as_millis<S: serde::Serializer>(duration: &Duration, serializer: S) -> Result<S::Ok, S::Error> {
    serializer.serialize_u64(duration.as_millis().try_into().unwrap_or(u64::MAX))
}

fn as_micros<S: serde::Serializer>(duration: &Duration, serializer: S) -> Result<S::Ok, S::Error> {
    serializer.serialize_u64(duration.as_micros().try_into().unwrap_or(u64::MAX))
}

/// A record the plugin logged through the `log` import.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct LogRecord {
    /// `trace`, `debug`, `info`, `warn` or `error`.
    pub level: &'static str,
    /// The message, cut to the host's bound.
    pub message: String,
    /// Key/value pairs.
    pub fields: Vec<(String, String)>,
}

/// Everything about one finished call.
#[derive(Debug, Clone)]
pub struct CallReport {
    /// The tool that was called.
    pub tool: String,
    /// The plugin that offers it (file stem), when the tool was found.
    pub plugin: Option<String>,
    /// The output, or why there is none.
    pub outcome: Result<ToolOutput, CallError>,
    /// What the call consumed.
    pub usage: Usage,
    /// What the plugin wrote to stdout (bounded).
    pub stdout: String,
    /// What the plugin wrote to stderr (bounded).
    pub stderr: String,
    /// What the plugin logged (bounded).
    pub logs: Vec<LogRecord>,
    /// What the plugin tried that its grants or limits refused, each naming
    /// the host (bounded).
    pub refused: Vec<Refusal>,
    /// What it did outside its sandbox: the requests it sent, the questions
    /// it asked (bounded).
    pub effects: Effects,
    /// The call's signed audit line, under `[audit] receipt_in_meta = true`
    /// (what an MCP result carries in `_meta` as its receipt).
    pub receipt: Option<serde_json::Value>,
    /// When the result was given again from `[cache]` rather than computed:
    /// how long ago the call that computed it was made.
    pub cached: Option<std::time::Duration>,
}

impl CallReport {
    /// A report for a call that never reached a plugin.
    pub fn rejected(tool: &str, plugin: Option<String>, error: CallError) -> CallReport {
        CallReport {
            tool: tool.to_owned(),
            plugin,
            outcome: Err(error),
            usage: Usage::default(),
            stdout: String::new(),
            stderr: String::new(),
            logs: Vec::new(),
            refused: Vec::new(),
            effects: Effects::default(),
            receipt: None,
            cached: None,
        }
    }
}

/// HTTP requests kept per call in [`Effects::hosts`]; further ones are counted.
pub const CONTACTS_LIMIT: usize = 64;

/// What a call did outside its sandbox, for its audit line: every HTTP
/// request its grant admitted (the first [`CONTACTS_LIMIT`], the rest
/// counted) and every question it asked. Empty, and never allocated, for a
/// call that did neither.
#[derive(Debug, Clone, Default, PartialEq, Serialize)]
pub struct Effects {
    /// The requests admitted, in the order they were sent.
    pub hosts: Vec<Contact>,
    /// Requests admitted past [`CONTACTS_LIMIT`] (their bytes are in
    /// [`Usage`] all the same).
    pub more_hosts: u32,
    /// The questions asked, in order: the first [`QUESTIONS_LIMIT`] (twice
    /// as many as may be passed on, so refused ones show too).
    pub questions: Vec<QuestionAsked>,
    /// Questions asked past [`QUESTIONS_LIMIT`].
    pub more_questions: u32,
}

/// Questions kept per call in [`Effects::questions`].
pub const QUESTIONS_LIMIT: usize = 2 * crate::ask::MAX_QUESTIONS;

/// One HTTP request a plugin's grant admitted.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct Contact {
    /// `http` or `https`.
    pub scheme: &'static str,
    /// The host as the grant check saw it (canonical: lower case, IDNA,
    /// brackets around IPv6), scrubbed of the plugin's secrets.
    pub host: String,
    /// The port.
    pub port: u16,
    /// The request's method (at most 32 characters).
    pub method: String,
    /// The response's status; absent when no response came (refused on the
    /// way, failed to connect, timed out).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub status: Option<u16>,
    /// Request body bytes sent.
    pub sent: u64,
    /// Response body bytes handed to the plugin.
    pub received: u64,
}

/// One question a call asked (elicitation, sampling, roots) and how it ended.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct QuestionAsked {
    /// `elicitation`, `sampling` or `roots`.
    pub kind: &'static str,
    /// `answered`, `declined`, `cancelled`, `refused` (by the host or the
    /// front end: `why` says which), or `suspended` (the front end stopped
    /// the call to ask its client, MCP 2026-07-28).
    pub outcome: &'static str,
    /// For `refused`: `denied` (not granted), `unsupported` (no one to
    /// ask), `limit` (a per-call bound) or `failed`.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub why: Option<&'static str>,
    /// The answer as the plugin got it (elicitation: the form's values;
    /// sampling: the reply's text; roots: their URIs), for an audit line
    /// that includes arguments; never serialized with the rest.
    #[serde(skip)]
    pub answer: Option<serde_json::Value>,
}

//! What a call produced: its output or the typed reason it has none, and what
//! it consumed.

use crate::limits::ByteSize;
use serde::Serialize;
use std::time::Duration;

/// A successful call's output.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
#[serde(tag = "type", content = "value", rename_all = "snake_case")]
pub enum ToolOutput {
    /// Plain text.
    Text(String),
    /// A JSON document, as the plugin wrote it.
    Json(String),
}

impl ToolOutput {
    /// The output's text, whatever its kind.
    pub fn as_str(&self) -> &str {
        match self {
            ToolOutput::Text(text) | ToolOutput::Json(text) => text,
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
    #[error("hit the memory limit of {limit} (it asked for {requested}; raise the `memory` limit if the work is legitimate)")]
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
    /// The output (or error text) was larger than allowed.
    #[error("returned {size} of output, over the limit of {limit} (ask for less, or raise the `output` limit)")]
    OutputTooLarge {
        /// The output's size.
        size: ByteSize,
        /// The output limit.
        limit: ByteSize,
    },
    /// The guest overflowed its call stack (usually unbounded recursion).
    #[error("overflowed its stack (unbounded recursion?)")]
    StackOverflow,
    /// The guest trapped: a panic, an `unreachable`, a bad memory access, …
    #[error("trapped: {message}")]
    Trap {
        /// The trap, and what the guest printed before it (a panic message).
        message: String,
    },
    /// The host could not run the call at all (for example no instance slot).
    #[error("could not be run: {0}")]
    Host(String),
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
            CallError::Timeout { .. } => "timeout",
            CallError::OutputTooLarge { .. } => "output_too_large",
            CallError::StackOverflow => "stack_overflow",
            CallError::Trap { .. } => "trap",
            CallError::Host(_) => "host",
        }
    }

    /// True when a limit stopped the call.
    pub fn is_limit(&self) -> bool {
        matches!(
            self,
            CallError::OutOfFuel { .. }
                | CallError::MemoryLimit { .. }
                | CallError::Timeout { .. }
                | CallError::OutputTooLarge { .. }
                | CallError::StackOverflow
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
        }
    }
}

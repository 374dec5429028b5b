//! A plugin's log records for one call: kept (bounded), scrubbed of secret
//! values, made printable, and forwarded to `tracing`. Every contract
//! version's `log` import lands here, in the host's own [`Level`].

use crate::outcome::LogRecord;
use crate::text::{printable_in_place, truncate};
use std::sync::Arc;
use toolhost_grants::Granted;

/// Log records kept per call.
pub const LOG_RECORDS_LIMIT: usize = 256;
/// Bytes kept of one log message.
pub const LOG_MESSAGE_LIMIT: usize = 4 << 10;

/// How much a log record matters (each contract's `level`, as the host keeps it).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Level {
    Trace,
    Debug,
    Info,
    Warn,
    Error,
}

/// Plugin log records for one call.
pub(crate) struct LogSink {
    pub(crate) plugin: Arc<str>,
    pub(crate) granted: Arc<Granted>,
    pub(crate) records: Vec<LogRecord>,
    pub(crate) dropped: usize,
}

impl LogSink {
    pub(crate) fn new(plugin: Arc<str>, granted: Arc<Granted>) -> LogSink {
        LogSink { plugin, granted, records: Vec::new(), dropped: 0 }
    }

    /// Keeps one record (`fields` as key and value), unless the call has
    /// already made [`LOG_RECORDS_LIMIT`].
    pub(crate) fn record(&mut self, level: Level, mut message: String, fields: Vec<(String, String)>) {
        if self.records.len() >= LOG_RECORDS_LIMIT {
            self.dropped += 1;
            return;
        }
        let redactor = &self.granted.redactor;
        redactor.scrub_in_place(&mut message);
        printable_in_place(&mut message);
        truncate(&mut message, LOG_MESSAGE_LIMIT);
        let fields: Vec<(String, String)> = fields
            .into_iter()
            .map(|(mut key, mut value)| {
                redactor.scrub_in_place(&mut key);
                redactor.scrub_in_place(&mut value);
                printable_in_place(&mut key);
                printable_in_place(&mut value);
                truncate(&mut key, 256);
                truncate(&mut value, LOG_MESSAGE_LIMIT);
                (key, value)
            })
            .collect();
        let plugin = &*self.plugin;
        // `{:?}` escapes characters, which could spell out a value that
        // contains escapes: scrub what is actually logged.
        let mut shown: String = fields.iter().map(|(key, value)| format!(" {key}={value:?}")).collect();
        redactor.scrub_in_place(&mut shown);
        let level = match level {
            Level::Trace => {
                tracing::trace!(target: "toolhost::plugin", plugin, "{message}{shown}");
                "trace"
            }
            Level::Debug => {
                tracing::debug!(target: "toolhost::plugin", plugin, "{message}{shown}");
                "debug"
            }
            Level::Info => {
                tracing::info!(target: "toolhost::plugin", plugin, "{message}{shown}");
                "info"
            }
            Level::Warn => {
                tracing::warn!(target: "toolhost::plugin", plugin, "{message}{shown}");
                "warn"
            }
            Level::Error => {
                tracing::error!(target: "toolhost::plugin", plugin, "{message}{shown}");
                "error"
            }
        };
        self.records.push(LogRecord { level, message, fields });
    }

    /// The records kept, with a last one saying how many were dropped; the
    /// sink is then empty.
    pub(crate) fn take_records(&mut self) -> Vec<LogRecord> {
        let mut logs = std::mem::take(&mut self.records);
        let dropped = std::mem::take(&mut self.dropped);
        if dropped > 0 {
            logs.push(LogRecord {
                level: "warn",
                message: format!("{dropped} more log records dropped"),
                fields: Vec::new(),
            });
        }
        logs
    }
}

//! The per-call store state ([`HostState`]) and what a front end hooks into
//! a call: who is told of its progress and who answers its questions
//! ([`CallHooks`]). The contracts' imports are implemented on this state in
//! `crate::contract`; what they share (logs, progress, questions) is here and
//! in the sibling modules, in the host's own types.

use super::asking::Asking;
use super::limiter::MemoryLimiter;
use super::logs::{LOG_MESSAGE_LIMIT, Level, LogSink};
use crate::outbound::Outbound;
use crate::text::{printable_in_place, truncate};
use std::sync::Arc;
use std::time::Instant;
use toolhost_grants::Granted;
use wasmtime::component::ResourceTable;
use wasmtime_wasi::{WasiCtx, WasiCtxView, WasiView};
use wasmtime_wasi_http::{WasiHttpCtx, WasiHttpCtxView, WasiHttpView};

/// The per-call store state.
pub struct HostState {
    pub(super) progress: ProgressSink,
    pub(super) asking: Asking,
    pub(super) wasi: WasiCtx,
    pub(super) http: WasiHttpCtx,
    pub(super) outbound: Outbound,
    pub(super) table: ResourceTable,
    pub(super) limiter: MemoryLimiter,
    pub(super) logs: LogSink,
}

impl WasiView for HostState {
    fn ctx(&mut self) -> WasiCtxView<'_> {
        WasiCtxView { ctx: &mut self.wasi, table: &mut self.table }
    }
}

impl WasiHttpView for HostState {
    fn http(&mut self) -> WasiHttpCtxView<'_> {
        WasiHttpCtxView { ctx: &mut self.http, table: &mut self.table, hooks: &mut self.outbound }
    }
}

impl HostState {
    /// What this call's plugin is granted.
    pub(crate) fn granted(&self) -> &Granted {
        &self.logs.granted
    }

    /// Asks `questions` (key, question) for the plugin (see [`Asking::ask_all`]).
    /// `Err` stops the call: the front end suspended it.
    pub(crate) async fn ask_all(
        &mut self,
        questions: Vec<(String, crate::ask::Question)>,
    ) -> wasmtime::Result<Vec<Result<crate::ask::Answer, crate::ask::AskError>>> {
        let HostState { asking, logs, outbound, .. } = self;
        asking.ask_all(questions, &logs.granted, &logs.plugin, outbound).await
    }

    /// How many questions the call asked so far.
    pub(crate) fn asked(&self) -> usize {
        self.asking.asked()
    }

    /// Keeps a plugin's log record (every contract version's `log`).
    pub(crate) fn record_log(&mut self, level: Level, message: String, fields: Vec<(String, String)>) {
        self.logs.record(level, message, fields);
    }

    /// Takes a progress report (contract 0.2.0's `call.progress`): kept as an
    /// `info` record in the call's logs, at most one every
    /// [`PROGRESS_INTERVAL`] (and the last one, when done reaches total).
    pub(crate) fn record_progress(&mut self, done: f64, total: Option<f64>, message: Option<String>) {
        let now = Instant::now();
        let finished = total.is_some_and(|total| done >= total);
        if !done.is_finite() || total.is_some_and(|total| !total.is_finite()) {
            return;
        }
        if !finished && self.progress.last.is_some_and(|last| now.duration_since(last) < PROGRESS_INTERVAL) {
            return;
        }
        self.progress.last = Some(now);
        let shown = match total {
            Some(total) => format!("progress {done}/{total}"),
            None => format!("progress {done}"),
        };
        let message = message.map(|message| {
            let mut message = self.logs.granted.redactor.scrub(message);
            printable_in_place(&mut message);
            truncate(&mut message, LOG_MESSAGE_LIMIT);
            message.replace('\n', " ")
        });
        if let Some(observer) = &self.progress.observer {
            observer(Progress { done, total, message: message.clone() });
        }
        let text = match message {
            Some(message) => format!("{shown}: {message}"),
            None => shown,
        };
        self.logs.record(Level::Info, text, Vec::new());
    }
}

/// The shortest time between two progress reports kept.
pub const PROGRESS_INTERVAL: std::time::Duration = std::time::Duration::from_millis(100);

/// What a call reported of its progress.
#[derive(Default)]
pub(super) struct ProgressSink {
    pub(super) last: Option<Instant>,
    pub(super) observer: Option<ProgressObserver>,
}

/// One progress report, as a plugin made it (scrubbed, one line).
#[derive(Debug, Clone, PartialEq)]
pub struct Progress {
    /// How much is done.
    pub done: f64,
    /// Out of how much, when known.
    pub total: Option<f64>,
    /// What is going on.
    pub message: Option<String>,
}

/// A call's result as its front end will hand it over (see [`CallHooks::result_shape`]).
pub type ResultShape = Arc<dyn Fn(&crate::outcome::CallReport) -> Option<serde_json::Value> + Send + Sync>;

/// Told of a call's progress reports as they come (see [`super::Sandbox::invoke`]).
pub type ProgressObserver = Arc<dyn Fn(Progress) + Send + Sync>;

/// What a front end passes with a call: who is told of its progress, and who
/// answers its questions (contract 0.2.0). `Default` has neither: progress is
/// only logged, and questions are answered `unsupported`.
#[derive(Clone, Default)]
pub struct CallHooks {
    /// How the front end hands the call's result to its caller, as JSON
    /// (an MCP `CallToolResult` without `_meta`; `None` when it answers
    /// with no result, such as a JSON-RPC error): what a call's audit line
    /// binds with a digest. Asked only when an audit log is written.
    pub result_shape: Option<ResultShape>,
    /// Told of each progress report kept.
    pub progress: Option<ProgressObserver>,
    /// Answers elicitation, sampling and roots questions.
    pub asker: Option<Arc<dyn crate::ask::Asker>>,
}

impl CallHooks {
    /// Hooks with only a progress observer.
    pub fn progress(observer: Option<ProgressObserver>) -> CallHooks {
        CallHooks { progress: observer, asker: None, result_shape: None }
    }
}

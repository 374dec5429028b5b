//! One call in one fresh instance: the store, its limits and what it captured.
//!
//! A [`Sandbox`] holds a plugin's pre-instantiated component. Each
//! [`Sandbox::invoke`] builds a new [`Store`] whose WASI context holds exactly
//! the plugin's [`Granted`] capabilities and nothing else (no files, env or
//! network unless granted; stdout and stderr captured into bounded buffers),
//! routes `wasi:http` through the call's [`Outbound`] checks, meters it with
//! fuel, bounds its memory through a [`ResourceLimiter`] and its wall time
//! through the epoch deadline and a host-side deadline, then classifies
//! whatever happened into a [`CallError`]. Secret values are scrubbed from
//! everything the call hands back.

use crate::engine::EpochTicker;
use crate::limits::{ByteSize, Limits};
use crate::outbound::{self, Outbound, SharedLedger};
use crate::outcome::{CallError, LogRecord, Refusal, Usage};
use std::pin::Pin;
use std::sync::{Arc, Mutex};
use std::task::{Context, Poll};
use std::time::Instant;
use toolhost_grants::Granted;
use toolhost_grants::env::Redactor;
use toolhost_grants::files::Access;
use wasmtime::component::{HasSelf, InstancePre, Linker, ResourceTable, Val};
use wasmtime::{Engine, ResourceLimiter, Store, Trap, UpdateDeadline};
use wasmtime_wasi::cli::{IsTerminal, StdoutStream};
use wasmtime_wasi::p2::{OutputStream, Pollable, StreamResult};
use wasmtime_wasi::{FsPerms, WasiCtx, WasiCtxBuilder, WasiCtxView, WasiView};
use wasmtime_wasi_http::{WasiHttpCtx, WasiHttpCtxView, WasiHttpView};

/// Bytes of stdout and of stderr kept per call; the rest is counted and dropped.
pub const CAPTURE_LIMIT: usize = 64 << 10;
/// Instructions between two cooperative yields of a busy guest.
pub const FUEL_YIELD_INTERVAL: u64 = 10_000_000;
/// Log records kept per call.
pub const LOG_RECORDS_LIMIT: usize = 256;
/// Bytes kept of one log message.
pub const LOG_MESSAGE_LIMIT: usize = 4 << 10;

/// Bindings for each contract version this host understands.
pub mod v0_1_0 {
    wasmtime::component::bindgen!({
        path: "../../wit/v0.1.0",
        world: "toolhost:plugin/plugin@0.1.0",
        exports: { default: async },
    });
}

/// The export this host looks for, per contract version.
pub const TOOLS_EXPORT_V0_1_0: &str = "toolhost:plugin/tools@0.1.0";

use v0_1_0::toolhost::plugin::log::{Field, Level};
pub use v0_1_0::toolhost::plugin::types::{CallError as WitCallError, Tool as WitTool, ToolOutput as WitToolOutput};

/// The per-call store state.
pub struct HostState {
    progress: ProgressSink,
    asking: Asking,
    wasi: WasiCtx,
    http: WasiHttpCtx,
    outbound: Outbound,
    table: ResourceTable,
    limiter: MemoryLimiter,
    logs: LogSink,
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

impl v0_1_0::toolhost::plugin::types::Host for HostState {}

impl v0_1_0::toolhost::plugin::log::Host for HostState {
    fn log(&mut self, level: Level, message: String, fields: Vec<Field>) {
        self.record_log(level, message, fields);
    }
}

impl HostState {
    /// Why this call's plugin may not ask for `what` (`elicitation`,
    /// `sampling`, `roots`), if it may not: what to grant.
    pub(crate) fn refusal(&self, what: &str) -> Option<String> {
        self.logs.granted.requests.refusal(&self.logs.plugin, what)
    }

    /// Keeps a plugin's log record (every contract version's `log`).
    pub(crate) fn record_log(&mut self, level: Level, message: String, fields: Vec<Field>) {
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

impl HostState {
    /// Asks `questions` (key, question) for the plugin: each checked (its
    /// key, the operator's grant, its shape, the per-call bounds and the
    /// sampling budget), the rest passed to the call's [`Asker`](crate::ask::Asker)
    /// in one batch. The time spent waiting for answers (at most
    /// [`ANSWER_TIMEOUT`](crate::ask::ANSWER_TIMEOUT)) does not count against
    /// the call's timeout. `Err` stops the call: the front end suspended it.
    pub(crate) async fn ask_all(
        &mut self,
        questions: Vec<(String, crate::ask::Question)>,
    ) -> wasmtime::Result<Vec<Result<crate::ask::Answer, crate::ask::AskError>>> {
        use crate::ask::{ANSWER_TIMEOUT, AskError, Asked, MAX_QUESTIONS, Question};
        let mut answers: Vec<Option<Result<crate::ask::Answer, AskError>>> = Vec::with_capacity(questions.len());
        let mut passed: Vec<(String, Question)> = Vec::new();
        let mut slots = Vec::new();
        for (key, question) in questions {
            let refused = if let Err(why) = crate::ask::check_key(&key) {
                Some(AskError::Failed(why))
            } else if !self.asking.keys.insert(key.clone()) {
                Some(AskError::Failed(format!("the key `{key}` was already asked in this call")))
            } else if self.asking.keys.len() > MAX_QUESTIONS {
                Some(AskError::Limit(format!("a call may ask at most {MAX_QUESTIONS} questions")))
            } else if let Some(why) = self.refusal(question.capability()) {
                Some(AskError::Denied(why))
            } else if let Err(why) = question.check() {
                Some(AskError::Failed(why))
            } else if let Question::Sample(sampling) = &question {
                let budget = self.logs.granted.requests.sampling.unwrap_or(0);
                if sampling.max_tokens > self.asking.tokens_left {
                    Some(AskError::Limit(format!(
                        "this asks the model for up to {} tokens, and {} of the call's sampling budget of {budget} \
                         are left (`sampling = {{ max_tokens = N }}` under [plugins.{}])",
                        sampling.max_tokens, self.asking.tokens_left, self.logs.plugin
                    )))
                } else {
                    self.asking.tokens_left -= sampling.max_tokens;
                    None
                }
            } else {
                None
            };
            match refused {
                Some(refusal) => answers.push(Some(Err(refusal))),
                None => {
                    slots.push(answers.len());
                    answers.push(None);
                    passed.push((key, self.scrubbed(question)));
                }
            }
        }
        if !passed.is_empty() {
            let asked = match self.asking.asker.clone() {
                None => Asked::Answers(
                    passed
                        .iter()
                        .map(|_| {
                            Err(AskError::Unsupported(
                                "nothing can answer here: this call was not made by a client, terminal or model that \
                                 can be asked"
                                    .to_owned(),
                            ))
                        })
                        .collect(),
                ),
                Some(asker) => {
                    let waiting = Instant::now();
                    let deadline = self.asking.deadline.get();
                    self.asking.deadline.set(waiting + ANSWER_TIMEOUT);
                    let asked = tokio::time::timeout(ANSWER_TIMEOUT, asker.ask(&passed)).await;
                    let waited = waiting.elapsed();
                    self.asking.deadline.set(deadline + waited);
                    self.outbound.postpone(waited);
                    asked.unwrap_or_else(|_| {
                        let why = format!("no answer came within {}s", ANSWER_TIMEOUT.as_secs());
                        Asked::Answers(passed.iter().map(|_| Err(AskError::Failed(why.clone()))).collect())
                    })
                }
            };
            match asked {
                Asked::Suspend => {
                    self.asking.suspended = true;
                    wasmtime::bail!("the call stopped to ask its client");
                }
                Asked::Answers(given) => {
                    let mut given = given.into_iter();
                    for slot in slots {
                        answers[slot] = Some(given.next().unwrap_or_else(|| {
                            Err(AskError::Failed("the front end gave no answer to this question".to_owned()))
                        }));
                    }
                }
            }
        }
        // Every slot was filled above: a refusal, or the front end's answer.
        Ok(answers
            .into_iter()
            .map(|answer| answer.unwrap_or_else(|| Err(AskError::Failed("no answer was given".to_owned()))))
            .collect())
    }

    /// How many questions the call asked so far.
    pub(crate) fn asked(&self) -> usize {
        self.asking.keys.len()
    }

    /// `question` with the plugin's secrets taken out of what leaves the sandbox.
    fn scrubbed(&self, question: crate::ask::Question) -> crate::ask::Question {
        use crate::ask::{Elicitation, Question};
        let redactor = &self.logs.granted.redactor;
        let scrub = |text: String| redactor.scrub(text);
        match question {
            Question::Elicit(Elicitation::Form { message, schema }) => {
                let text = scrub(schema.to_string());
                let schema = serde_json::from_str(&text).unwrap_or(schema);
                Question::Elicit(Elicitation::Form { message: scrub(message), schema })
            }
            Question::Elicit(Elicitation::Url { message, url }) => {
                Question::Elicit(Elicitation::Url { message: scrub(message), url: scrub(url) })
            }
            Question::Sample(mut sampling) => {
                sampling.system_prompt = sampling.system_prompt.map(scrub);
                for message in &mut sampling.messages {
                    if let crate::content::Content::Text { text } = &mut message.content {
                        *text = scrub(std::mem::take(text));
                    }
                }
                Question::Sample(sampling)
            }
            Question::Roots => Question::Roots,
        }
    }
}

/// The shortest time between two progress reports kept.
pub const PROGRESS_INTERVAL: std::time::Duration = std::time::Duration::from_millis(100);

/// What a call reported of its progress.
#[derive(Default)]
struct ProgressSink {
    last: Option<Instant>,
    observer: Option<ProgressObserver>,
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

/// Told of a call's progress reports as they come (see [`Sandbox::invoke`]).
pub type ProgressObserver = Arc<dyn Fn(Progress) + Send + Sync>;

/// What a front end passes with a call: who is told of its progress, and who
/// answers its questions (contract 0.2.0). `Default` has neither: progress is
/// only logged, and questions are answered `unsupported`.
#[derive(Clone, Default)]
pub struct CallHooks {
    /// Told of each progress report kept.
    pub progress: Option<ProgressObserver>,
    /// Answers elicitation, sampling and roots questions.
    pub asker: Option<Arc<dyn crate::ask::Asker>>,
}

impl CallHooks {
    /// Hooks with only a progress observer.
    pub fn progress(observer: Option<ProgressObserver>) -> CallHooks {
        CallHooks { progress: observer, asker: None }
    }
}

/// The deadline of a call, which waiting for answers postpones.
#[derive(Clone)]
struct Deadline(Arc<Mutex<Instant>>);

impl Deadline {
    fn get(&self) -> Instant {
        *self.0.lock().unwrap_or_else(|p| p.into_inner())
    }

    fn set(&self, deadline: Instant) {
        *self.0.lock().unwrap_or_else(|p| p.into_inner()) = deadline;
    }
}

/// What a call asked so far, and who answers.
struct Asking {
    asker: Option<Arc<dyn crate::ask::Asker>>,
    deadline: Deadline,
    keys: std::collections::HashSet<String>,
    /// Sampling tokens left of the call's budget.
    tokens_left: u32,
    /// The front end stopped the call to ask its client.
    suspended: bool,
}

/// Builds the linker every plugin is instantiated with: WASI p2 and
/// `wasi:http` (which reach only what each call's grants allow) and the
/// host's `log` import.
pub fn linker(engine: &Engine) -> anyhow::Result<Linker<HostState>> {
    let mut linker = Linker::new(engine);
    wasmtime_wasi::p2::add_to_linker_async(&mut linker).map_err(anyhow::Error::from)?;
    wasmtime_wasi_http::p2::add_only_http_to_linker_async(&mut linker).map_err(anyhow::Error::from)?;
    v0_1_0::Plugin::add_to_linker::<HostState, HasSelf<HostState>>(&mut linker, |state| state)
        .map_err(anyhow::Error::from)?;
    crate::v0_2::Plugin::add_to_linker::<HostState, HasSelf<HostState>>(&mut linker, |state| state)
        .map_err(anyhow::Error::from)?;
    refuse_symlinks(&mut linker)?;
    add_config_store(&mut linker)?;
    Ok(linker)
}

/// `wasi:config/store`, in the 0.2.0 draft that Wassette's components (and
/// the components of other hosts with it) import: a plugin's configuration
/// is what it is granted of toolhost's environment (`env` and `secrets` in
/// `[plugins.NAME]`), by name, and nothing else.
pub const CONFIG_STORE: &str = "wasi:config/store@0.2.0-draft";

/// `wasi:config/store`'s `error`: its type must match the interface's, but
/// a lookup in the grants cannot fail, so it is never given.
#[allow(dead_code)]
#[derive(wasmtime::component::ComponentType, wasmtime::component::Lift, wasmtime::component::Lower)]
#[component(variant)]
enum ConfigError {
    #[component(name = "upstream")]
    Upstream(String),
    #[component(name = "io")]
    Io(String),
}

fn add_config_store(linker: &mut Linker<HostState>) -> anyhow::Result<()> {
    let mut store = linker.instance(CONFIG_STORE).map_err(anyhow::Error::from)?;
    store
        .func_wrap_async("get", |store, (key,): (String,)| {
            let value = configured(&store.data().logs.granted).find(|(name, _)| *name == key).map(|(_, value)| value);
            Box::new(async move { Ok((Ok::<_, ConfigError>(value),)) })
        })
        .map_err(anyhow::Error::from)?;
    store
        .func_wrap_async("get-all", |store, (): ()| {
            let all: Vec<(String, String)> = configured(&store.data().logs.granted).collect();
            Box::new(async move { Ok((Ok::<_, ConfigError>(all),)) })
        })
        .map_err(anyhow::Error::from)?;
    Ok(())
}

/// The (name, value) pairs a plugin's configuration holds: its granted
/// environment variables and secrets.
fn configured(granted: &Granted) -> impl Iterator<Item = (String, String)> + '_ {
    let env = granted.env.iter().map(|(name, value)| (name.clone(), value.clone()));
    env.chain(granted.secrets.iter().map(|(name, value)| (name.clone(), value.expose().to_owned())))
}

/// Replaces `wasi:filesystem`'s `symlink-at` with one that always answers
/// `not-permitted`. A symlink a plugin makes in a read-write folder cannot be
/// followed out of it inside the sandbox, but it stays on the host, where any
/// other program that follows it would reach wherever it points.
fn refuse_symlinks(linker: &mut Linker<HostState>) -> anyhow::Result<()> {
    use wasmtime::component::Resource;
    use wasmtime_wasi::p2::bindings::filesystem::types::{Descriptor, ErrorCode};
    linker.allow_shadowing(true);
    linker
        .instance(FILESYSTEM_TYPES)
        .and_then(|mut types| {
            types.func_wrap_async(
                "[method]descriptor.symlink-at",
                |_store, (_folder, _target, _link): (Resource<Descriptor>, String, String)| {
                    Box::new(async { Ok((Err::<(), ErrorCode>(ErrorCode::NotPermitted),)) })
                },
            )
        })
        .map_err(anyhow::Error::from)?;
    linker.allow_shadowing(false);
    Ok(())
}

/// The `wasi:filesystem/types` version wasmtime-wasi links (plugins built
/// against any 0.2.x are matched to it).
const FILESYSTEM_TYPES: &str = "wasi:filesystem/types@0.2.12";

/// Bounds linear memory, summed over the instance's memories, and records the peak.
struct MemoryLimiter {
    limit: u64,
    total: u64,
    peak: u64,
    refused: Option<u64>,
}

impl ResourceLimiter for MemoryLimiter {
    fn memory_growing(&mut self, current: usize, desired: usize, _maximum: Option<usize>) -> wasmtime::Result<bool> {
        let after = self.total - current as u64 + desired as u64;
        if after > self.limit {
            self.refused = Some(after);
            return Ok(false);
        }
        self.total = after;
        self.peak = self.peak.max(after);
        Ok(true)
    }

    fn table_growing(&mut self, _current: usize, desired: usize, _maximum: Option<usize>) -> wasmtime::Result<bool> {
        // Tables hold function references; a million is far beyond any real plugin.
        Ok(desired <= 1_000_000)
    }
}

/// Plugin log records for one call: kept (bounded), scrubbed of secret
/// values, and forwarded to `tracing`.
struct LogSink {
    plugin: Arc<str>,
    granted: Arc<Granted>,
    records: Vec<LogRecord>,
    dropped: usize,
}

impl LogSink {
    fn record(&mut self, level: Level, mut message: String, fields: Vec<Field>) {
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
            .map(|Field { mut key, mut value }| {
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
}

/// Adds a plugin's granted environment and folders to a call's WASI context.
/// (The network is checked by the `wasi:http` hooks and the socket check.)
fn apply_grants(granted: &Granted, wasi: &mut WasiCtxBuilder) -> Result<(), String> {
    for (name, value) in &granted.env {
        wasi.env(name, value);
    }
    for (name, value) in &granted.secrets {
        wasi.env(name, value.expose());
    }
    for dir in &granted.dirs {
        let perms = match dir.access {
            Access::ReadOnly => FsPerms::ReadOnly,
            Access::ReadWrite => FsPerms::ReadWrite,
        };
        wasi.preopened_dir(&dir.host, &dir.guest, perms).map_err(|err| {
            format!("could not open the granted folder {} (for {}): {err:#}", dir.host.display(), dir.guest)
        })?;
    }
    Ok(())
}

fn truncate(text: &mut String, limit: usize) {
    if text.len() > limit {
        let cut = text.floor_char_boundary(limit);
        text.truncate(cut);
        text.push('…');
    }
}

/// A bounded in-memory stdout/stderr: keeps the first [`CAPTURE_LIMIT`]
/// bytes and silently drops the rest, so a chatty plugin never fails (or
/// traps) because its output is full.
///
/// Secret values are scrubbed before the text is cut, never after: the buffer
/// holds `margin` bytes (the longest secret) past the limit, and the cut moves
/// past any value that straddles it, so no part of a value is ever shown.
#[derive(Clone)]
struct Capture(Arc<Mutex<CaptureBuffer>>);

struct CaptureBuffer {
    bytes: Vec<u8>,
    keep: usize,
    dropped: u64,
}

impl Capture {
    fn new(margin: usize) -> Capture {
        let keep = CAPTURE_LIMIT + margin;
        Capture(Arc::new(Mutex::new(CaptureBuffer { bytes: Vec::new(), keep, dropped: 0 })))
    }

    fn push(&self, bytes: &[u8]) {
        let mut buffer = self.0.lock().unwrap_or_else(|poisoned| poisoned.into_inner());
        let room = buffer.keep.saturating_sub(buffer.bytes.len());
        let kept = room.min(bytes.len());
        buffer.bytes.extend_from_slice(&bytes[..kept]);
        buffer.dropped += (bytes.len() - kept) as u64;
    }

    /// The first [`CAPTURE_LIMIT`] bytes or so as text, scrubbed by `redactor`.
    fn text(&self, redactor: &Redactor) -> String {
        let buffer = self.0.lock().unwrap_or_else(|poisoned| poisoned.into_inner());
        let bytes = &buffer.bytes;
        let mut cut = bytes.len().min(CAPTURE_LIMIT);
        // Not inside a UTF-8 sequence, then not inside a secret value.
        while cut < bytes.len() && cut > 0 && bytes[cut] & 0xC0 == 0x80 {
            cut -= 1;
        }
        let cut = redactor.safe_cut(bytes, cut);
        let mut text = String::from_utf8_lossy(&bytes[..cut]).into_owned();
        redactor.scrub_in_place(&mut text);
        printable_in_place(&mut text);
        let dropped = (bytes.len() - cut) as u64 + buffer.dropped;
        if dropped > 0 {
            text.push_str(&format!("\n… ({dropped} more bytes dropped)"));
        }
        text
    }
}

impl IsTerminal for Capture {
    fn is_terminal(&self) -> bool {
        false
    }
}

impl StdoutStream for Capture {
    fn p2_stream(&self) -> Box<dyn OutputStream> {
        Box::new(self.clone())
    }

    fn async_stream(&self) -> Box<dyn tokio::io::AsyncWrite + Send + Sync> {
        Box::new(self.clone())
    }
}

#[wasmtime_wasi::async_trait]
impl Pollable for Capture {
    async fn ready(&mut self) {}
}

impl OutputStream for Capture {
    fn write(&mut self, bytes: bytes::Bytes) -> StreamResult<()> {
        self.push(&bytes);
        Ok(())
    }

    fn flush(&mut self) -> StreamResult<()> {
        Ok(())
    }

    fn check_write(&mut self) -> StreamResult<usize> {
        Ok(64 << 10)
    }
}

impl tokio::io::AsyncWrite for Capture {
    fn poll_write(self: Pin<&mut Self>, _: &mut Context<'_>, buf: &[u8]) -> Poll<std::io::Result<usize>> {
        self.push(buf);
        Poll::Ready(Ok(buf.len()))
    }

    fn poll_flush(self: Pin<&mut Self>, _: &mut Context<'_>) -> Poll<std::io::Result<()>> {
        Poll::Ready(Ok(()))
    }

    fn poll_shutdown(self: Pin<&mut Self>, _: &mut Context<'_>) -> Poll<std::io::Result<()>> {
        Poll::Ready(Ok(()))
    }
}

/// What the sandbox is asked to run.
pub enum Request<'a> {
    /// `list-tools`.
    ListTools,
    /// `call-tool(name, arguments)`.
    CallTool { name: &'a str, arguments: &'a str },
    /// Typed function number `index` with these (validated) arguments.
    CallTyped { index: usize, arguments: &'a serde_json::Value },
    /// A `full` plugin's resources, templates and prompts.
    ListOffers,
    /// `read-resource(uri)`.
    ReadResource { uri: &'a str },
    /// `get-prompt(name, arguments)`.
    GetPrompt { name: &'a str, arguments: &'a [(String, String)] },
    /// `complete(reference, argument, value, context)`.
    Complete {
        reference: crate::offers::Reference<'a>,
        argument: &'a str,
        value: &'a str,
        context: &'a [(String, String)],
    },
}

/// What the guest returned.
pub enum Response {
    Tools(Vec<crate::cache::ListedTool>),
    Called(Result<WitToolOutput, WitCallError>),
    /// A contract 0.2.0 result: content blocks.
    Content(Result<Vec<crate::content::ContentBlock>, WitCallError>),
    /// What a `full` plugin offers (checked by [`crate::offers::Offers::check`]).
    Offers(crate::offers::Offers),
    /// A resource's contents, as `resource` blocks.
    Read(Result<Vec<crate::content::ContentBlock>, WitCallError>),
    /// A prompt filled in.
    Prompt(Result<crate::offers::PromptResult, WitCallError>),
    /// Suggested values.
    Completion(Result<crate::offers::Completion, WitCallError>),
    /// A typed function's output as JSON, or the text of its `err`.
    Typed(Result<String, String>),
}

/// A component of typed functions, ready to be instantiated.
pub struct TypedPlugin {
    pre: InstancePre<HostState>,
    funcs: Vec<crate::typed::TypedFunc>,
}

impl TypedPlugin {
    /// The plugin for `pre`, whose tools are `funcs` (from [`crate::typed::functions`]).
    pub fn new(pre: InstancePre<HostState>, funcs: Vec<crate::typed::TypedFunc>) -> TypedPlugin {
        TypedPlugin { pre, funcs }
    }

    /// Its functions, in tool order.
    pub fn funcs(&self) -> &[crate::typed::TypedFunc] {
        &self.funcs
    }
}

/// The raw result of one invocation, before output limits are applied.
pub struct Invocation {
    pub result: Result<Response, CallError>,
    pub usage: Usage,
    pub stdout: String,
    pub stderr: String,
    pub logs: Vec<LogRecord>,
    pub refused: Vec<Refusal>,
}

/// A plugin ready to be instantiated, per contract version.
pub enum Sandbox {
    V0_1_0(v0_1_0::PluginPre<HostState>),
    V0_2_0(crate::v0_2::PluginPre<HostState>),
    /// Contract 0.2.0, `full` world: also resources, prompts and completions.
    V0_2_0Full(crate::v0_2::full::FullPre<HostState>),
    /// Not toolhost's contract: exported typed functions.
    Typed(TypedPlugin),
}

impl Sandbox {
    /// Runs `request` in a fresh instance under `limits`, with what `granted`
    /// grants; HTTPS requests speak TLS with `tls`; `observer` is told of each
    /// progress report kept (contract 0.2.0).
    #[allow(clippy::too_many_arguments)]
    pub async fn invoke(
        &self,
        clock: &EpochTicker,
        plugin: &Arc<str>,
        limits: &Limits,
        granted: &Arc<Granted>,
        tls: &Arc<rustls::ClientConfig>,
        request: Request<'_>,
        hooks: CallHooks,
    ) -> Invocation {
        let start = Instant::now();
        let deadline = Deadline(Arc::new(Mutex::new(start + limits.timeout)));
        let margin = granted.redactor.longest();
        let stdout = Capture::new(margin);
        let stderr = Capture::new(margin);
        let ledger = SharedLedger::new(plugin.clone(), granted.clone());
        let mut wasi = WasiCtxBuilder::new();
        wasi.stdout(stdout.clone()).stderr(stderr.clone());
        outbound::configure_sockets(&mut wasi, &granted.network, &ledger);
        if let Err(err) = apply_grants(granted, &mut wasi) {
            return Invocation {
                result: Err(CallError::Host(err)),
                usage: Usage::default(),
                stdout: String::new(),
                stderr: String::new(),
                logs: Vec::new(),
                refused: Vec::new(),
            };
        }
        let state = HostState {
            progress: ProgressSink { observer: hooks.progress, ..ProgressSink::default() },
            asking: Asking {
                asker: hooks.asker,
                deadline: deadline.clone(),
                keys: std::collections::HashSet::new(),
                tokens_left: granted.requests.sampling.unwrap_or(0),
                suspended: false,
            },
            wasi: wasi.build(),
            http: WasiHttpCtx::new(),
            outbound: Outbound::new(granted.network.clone(), *limits, deadline.get(), ledger.clone(), tls.clone()),
            table: ResourceTable::new(),
            limiter: MemoryLimiter { limit: limits.memory.bytes(), total: 0, peak: 0, refused: None },
            logs: LogSink { plugin: plugin.clone(), granted: granted.clone(), records: Vec::new(), dropped: 0 },
        };
        let engine = match self {
            Sandbox::V0_1_0(pre) => pre.engine(),
            Sandbox::V0_2_0(pre) => pre.engine(),
            Sandbox::V0_2_0Full(pre) => pre.engine(),
            Sandbox::Typed(typed) => typed.pre.engine(),
        };
        let mut store = Store::new(engine, state);
        store.limiter(|state| &mut state.limiter);
        // Bounds what wasmtime copies out of the guest in one transfer (the
        // answer above all), so an oversized answer is refused before it is
        // copied rather than after; `classify` reports it as `OutputTooLarge`.
        let transfer = limits.output.bytes().saturating_add(crate::limits::TRANSFER_SLACK);
        store.set_hostcall_fuel(usize::try_from(transfer).unwrap_or(usize::MAX));
        // Fuel is always configured on our engine, so these cannot fail.
        let _ = store.set_fuel(limits.fuel);
        // Yielding every so many instructions keeps a busy guest from holding
        // an executor thread, and writes its fuel count back to the store, so
        // the usage of a call stopped by the timeout is still accurate.
        let _ = store.fuel_async_yield_interval(Some(FUEL_YIELD_INTERVAL));
        store.set_epoch_deadline(1);
        let watched = deadline.clone();
        store.epoch_deadline_callback(move |_| {
            Ok(if Instant::now() >= watched.get() { UpdateDeadline::Interrupt } else { UpdateDeadline::Yield(1) })
        });

        let span = tracing::info_span!(
            "sandbox",
            plugin = %plugin,
            fuel = tracing::field::Empty,
            memory_peak = tracing::field::Empty,
        );
        let outcome = {
            // The epoch clock ticks while any guest may run.
            let _running = clock.running();
            let run = tracing::Instrument::instrument(self.run(&mut store, request), span.clone());
            // The epoch callback stops guest code; this also stops a guest
            // that is blocked in the host (a WASI sleep or poll). Waiting for
            // answers moves the deadline, so it is read again when it passes.
            tokio::pin!(run);
            loop {
                let at = deadline.get();
                tokio::select! {
                    result = &mut run => break Ok(result),
                    () = tokio::time::sleep_until(at.into()) => {
                        if Instant::now() >= deadline.get() {
                            break Err(());
                        }
                    }
                }
            }
        };
        let wall = start.elapsed();
        let fuel = limits.fuel.saturating_sub(store.get_fuel().unwrap_or(0));
        let state = store.into_data();
        span.record("fuel", i64::try_from(fuel).unwrap_or(i64::MAX));
        span.record("memory_peak", i64::try_from(state.limiter.peak).unwrap_or(i64::MAX));
        let redactor = &granted.redactor;
        let stderr = stderr.text(redactor);
        let stdout = stdout.text(redactor);
        let result = match outcome {
            _ if state.asking.suspended => Err(CallError::InputRequired),
            Ok(Ok(response)) => check_response(response, limits, redactor),
            Ok(Err(err)) => Err(scrub_error(classify(err, limits, state.limiter.refused, &stderr), redactor)),
            Err(()) => Err(CallError::Timeout { limit: limits.timeout }),
        };
        let network = ledger.take();
        let mut refused = network.refused;
        if network.more_refused > 0 {
            note_more_refusals(&mut refused, network.more_refused);
        }
        let mut logs = state.logs.records;
        if state.logs.dropped > 0 {
            logs.push(LogRecord {
                level: "warn",
                message: format!("{} more log records dropped", state.logs.dropped),
                fields: Vec::new(),
            });
        }
        Invocation {
            result,
            usage: Usage {
                fuel,
                memory_peak: state.limiter.peak,
                wall,
                http_requests: network.requests,
                http_request_bytes: network.request_bytes,
                http_response_bytes: network.response_bytes,
            },
            stdout,
            stderr,
            logs,
            refused,
        }
    }

    async fn run(&self, store: &mut Store<HostState>, request: Request<'_>) -> wasmtime::Result<Response> {
        match self {
            Sandbox::V0_1_0(pre) => {
                let instance = tracing::Instrument::instrument(
                    pre.instantiate_async(&mut *store),
                    tracing::info_span!("instantiate"),
                )
                .await?;
                let tools = instance.toolhost_plugin_tools();
                Ok(match request {
                    Request::ListTools => {
                        let listed = tools.call_list_tools(&mut *store).await?;
                        Response::Tools(listed.into_iter().map(listed_v0_1_0).collect())
                    }
                    Request::CallTool { name, arguments } => {
                        Response::Called(tools.call_call_tool(&mut *store, name, arguments).await?)
                    }
                    _ => wasmtime::bail!("a contract 0.1.0 plugin offers tools only"),
                })
            }
            Sandbox::V0_2_0(pre) => {
                let instance = tracing::Instrument::instrument(
                    pre.instantiate_async(&mut *store),
                    tracing::info_span!("instantiate"),
                )
                .await?;
                let tools = instance.toolhost_plugin_tools();
                Ok(match request {
                    Request::ListTools => {
                        let listed = tools.call_list_tools(&mut *store).await?;
                        Response::Tools(listed.into_iter().map(crate::v0_2::listed).collect())
                    }
                    Request::CallTool { name, arguments } => {
                        let result = tools.call_call_tool(&mut *store, name, arguments).await?;
                        Response::Content(result.map(crate::v0_2::blocks).map_err(v0_2_error))
                    }
                    _ => wasmtime::bail!("a plugin of the `plugin` world offers tools only"),
                })
            }
            Sandbox::V0_2_0Full(pre) => {
                use crate::v0_2::full::exports::toolhost::plugin::completions::Reference;
                let instance = tracing::Instrument::instrument(
                    pre.instantiate_async(&mut *store),
                    tracing::info_span!("instantiate"),
                )
                .await?;
                Ok(match request {
                    Request::ListTools => {
                        let listed = instance.toolhost_plugin_tools().call_list_tools(&mut *store).await?;
                        Response::Tools(listed.into_iter().map(crate::v0_2::listed).collect())
                    }
                    Request::CallTool { name, arguments } => {
                        let tools = instance.toolhost_plugin_tools();
                        let result = tools.call_call_tool(&mut *store, name, arguments).await?;
                        Response::Content(result.map(crate::v0_2::blocks).map_err(v0_2_error))
                    }
                    Request::ListOffers => {
                        let resources = instance.toolhost_plugin_resources();
                        let listed = resources.call_list_resources(&mut *store).await?;
                        let templates = resources.call_list_resource_templates(&mut *store).await?;
                        let prompts = instance.toolhost_plugin_prompts().call_list_prompts(&mut *store).await?;
                        Response::Offers(crate::offers::Offers {
                            resources: listed.into_iter().map(crate::v0_2::resource).collect(),
                            templates: templates.into_iter().map(crate::v0_2::template).collect(),
                            prompts: prompts.into_iter().map(crate::v0_2::prompt).collect(),
                        })
                    }
                    Request::ReadResource { uri } => {
                        let read = instance.toolhost_plugin_resources().call_read_resource(&mut *store, uri).await?;
                        Response::Read(read.map(crate::v0_2::contents).map_err(v0_2_error))
                    }
                    Request::GetPrompt { name, arguments } => {
                        let prompts = instance.toolhost_plugin_prompts();
                        let got = prompts.call_get_prompt(&mut *store, name, arguments).await?;
                        Response::Prompt(got.map(crate::v0_2::prompt_result).map_err(v0_2_error))
                    }
                    Request::Complete { reference, argument, value, context } => {
                        let reference = match reference {
                            crate::offers::Reference::Prompt(name) => Reference::Prompt(name.to_owned()),
                            crate::offers::Reference::Template(uri) => Reference::ResourceTemplate(uri.to_owned()),
                        };
                        let completions = instance.toolhost_plugin_completions();
                        let done = completions.call_complete(&mut *store, &reference, argument, value, context).await?;
                        Response::Completion(
                            done.map(|done| crate::offers::Completion {
                                values: done.values,
                                total: done.total,
                                has_more: done.has_more,
                            })
                            .map_err(v0_2_error),
                        )
                    }
                    Request::CallTyped { .. } => wasmtime::bail!("a contract plugin has no typed functions"),
                })
            }
            Sandbox::Typed(typed) => {
                let Request::CallTyped { index, arguments } = request else {
                    wasmtime::bail!("a typed component has no contract to call");
                };
                let func = typed.funcs.get(index).ok_or_else(|| wasmtime::format_err!("no typed function {index}"))?;
                let params = match crate::typed::to_params(func, arguments) {
                    Ok(params) => params,
                    Err(why) => return Ok(Response::Called(Err(WitCallError::InvalidArguments(why)))),
                };
                let instance = tracing::Instrument::instrument(
                    typed.pre.instantiate_async(&mut *store),
                    tracing::info_span!("instantiate"),
                )
                .await?;
                let callee = instance
                    .get_func(&mut *store, func.index)
                    .ok_or_else(|| wasmtime::format_err!("the function `{}` is not exported", func.name))?;
                let mut results = vec![Val::Bool(false); usize::from(func.result.is_some())];
                callee.call_async(&mut *store, &params, &mut results).await?;
                Ok(Response::Typed(crate::typed::output(func, results.pop())))
            }
        }
    }
}

/// Replaces what a terminal would act on in `text` (see [`crate::text`]).
fn printable_in_place(text: &mut String) {
    if let std::borrow::Cow::Owned(clean) = crate::text::printable(text) {
        *text = clean;
    }
}

/// Says how many refusals past the kept ones were dropped.
fn note_more_refusals(refused: &mut [Refusal], more: usize) {
    tracing::debug!("{more} more refusals dropped");
    if let Some(last) = refused.last_mut() {
        last.target = format!("{} (and {more} more refusals)", last.target);
    }
}

/// The guest's answer held to the contract and the output limit, with secret
/// values scrubbed from it: a text over the limit is `OutputTooLarge`; a `json`
/// output must parse, and its decoded strings are what is scrubbed.
fn check_response(response: Response, limits: &Limits, redactor: &Redactor) -> Result<Response, CallError> {
    let within = |text: &str| {
        if text.len() as u64 > limits.output.bytes() {
            Err(CallError::OutputTooLarge { size: Some(ByteSize(text.len() as u64)), limit: limits.output })
        } else {
            Ok(())
        }
    };
    let scrub = |text: String| if redactor.is_empty() { text } else { redactor.scrub(text) };
    Ok(match response {
        Response::Called(Ok(WitToolOutput::Text(text))) => {
            within(&text)?;
            Response::Called(Ok(WitToolOutput::Text(scrub(text))))
        }
        Response::Called(Ok(WitToolOutput::Json(text))) => {
            within(&text)?;
            let invalid = |err: serde_json::Error| {
                CallError::InvalidOutput(format!(
                    "it returned `json` output that is not valid JSON ({err}); this is a bug in the plugin"
                ))
            };
            // With no secrets to scrub, checking the text is JSON needs no tree.
            let text = if redactor.is_empty() {
                serde_json::from_str::<serde::de::IgnoredAny>(&text).map_err(invalid)?;
                text
            } else {
                let value: serde_json::Value = serde_json::from_str(&text).map_err(invalid)?;
                redactor.scrub_json(text, value).map_err(CallError::InvalidOutput)?
            };
            Response::Called(Ok(WitToolOutput::Json(text)))
        }
        Response::Called(Err(WitCallError::InvalidArguments(text))) => {
            within(&text)?;
            Response::Called(Err(WitCallError::InvalidArguments(scrub(text))))
        }
        Response::Called(Err(WitCallError::Failed(text))) => {
            within(&text)?;
            Response::Called(Err(WitCallError::Failed(scrub(text))))
        }
        Response::Typed(Ok(text)) => {
            within(&text)?;
            let text = if redactor.is_empty() {
                text
            } else {
                let value: serde_json::Value = serde_json::from_str(&text)
                    .map_err(|err| CallError::InvalidOutput(format!("its output is not JSON: {err}")))?;
                redactor.scrub_json(text, value).map_err(CallError::InvalidOutput)?
            };
            Response::Typed(Ok(text))
        }
        Response::Typed(Err(text)) => {
            within(&text)?;
            Response::Typed(Err(scrub(text)))
        }
        Response::Content(Ok(blocks)) => Response::Content(Ok(crate::content::check(blocks, limits, redactor)?)),
        Response::Content(Err(WitCallError::InvalidArguments(text))) => {
            within(&text)?;
            Response::Content(Err(WitCallError::InvalidArguments(scrub(text))))
        }
        Response::Content(Err(WitCallError::Failed(text))) => {
            within(&text)?;
            Response::Content(Err(WitCallError::Failed(scrub(text))))
        }
        Response::Read(Ok(blocks)) => Response::Read(Ok(crate::content::check(blocks, limits, redactor)?)),
        Response::Prompt(Ok(prompt)) => Response::Prompt(Ok(crate::offers::check_prompt(prompt, limits, redactor)?)),
        Response::Completion(Ok(done)) => {
            Response::Completion(Ok(crate::offers::check_completion(done, limits, redactor)?))
        }
        Response::Read(Err(err)) => Response::Read(Err(check_error(err, &within, &scrub)?)),
        Response::Prompt(Err(err)) => Response::Prompt(Err(check_error(err, &within, &scrub)?)),
        Response::Completion(Err(err)) => Response::Completion(Err(check_error(err, &within, &scrub)?)),
        listed @ (Response::Tools(_) | Response::Offers(_)) => listed,
    })
}

/// A plugin's error text, held to the output limit and scrubbed.
fn check_error(
    err: WitCallError,
    within: &impl Fn(&str) -> Result<(), CallError>,
    scrub: &impl Fn(String) -> String,
) -> Result<WitCallError, CallError> {
    Ok(match err {
        WitCallError::InvalidArguments(text) => {
            within(&text)?;
            WitCallError::InvalidArguments(scrub(text))
        }
        WitCallError::Failed(text) => {
            within(&text)?;
            WitCallError::Failed(scrub(text))
        }
    })
}

/// A contract 0.2.0 call error as the host keeps it.
fn v0_2_error(err: crate::v0_2::toolhost::plugin::types::CallError) -> WitCallError {
    use crate::v0_2::toolhost::plugin::types::CallError as V2;
    match err {
        V2::InvalidArguments(text) => WitCallError::InvalidArguments(text),
        V2::Failed(text) => WitCallError::Failed(text),
    }
}

/// A contract 0.1.0 tool as the host keeps it.
fn listed_v0_1_0(tool: WitTool) -> crate::cache::ListedTool {
    crate::cache::ListedTool {
        name: tool.name,
        description: tool.description,
        input_schema: tool.input_schema,
        output_schema: None,
        title: None,
        hints: None,
    }
}

/// `error` with secret values scrubbed from the text it carries.
fn scrub_error(error: CallError, redactor: &Redactor) -> CallError {
    match error {
        CallError::Trap { message } => CallError::Trap { message: redactor.scrub(message) },
        CallError::Host(message) => CallError::Host(redactor.scrub(message)),
        other => other,
    }
}

/// True when `err` is wasmtime refusing to copy more than the store's
/// hostcall fuel out of the guest (`Store::set_hostcall_fuel`). The error
/// type is private to wasmtime, so this matches its message.
fn is_transfer_too_large(err: &wasmtime::Error) -> bool {
    err.chain().any(|cause| cause.to_string().contains("fuel allocated for hostcalls has been exhausted"))
}

/// Turns a wasmtime error from instantiation or a call into its outcome.
fn classify(err: wasmtime::Error, limits: &Limits, refused: Option<u64>, stderr: &str) -> CallError {
    tracing::debug!("guest error: {err:?}");
    let trap = err.downcast_ref::<Trap>().copied();
    match trap {
        Some(Trap::OutOfFuel) => return CallError::OutOfFuel { limit: limits.fuel },
        Some(Trap::Interrupt) => return CallError::Timeout { limit: limits.timeout },
        Some(Trap::StackOverflow) => return CallError::StackOverflow,
        _ => {}
    }
    // A refused grow makes Rust (and most languages) abort, which shows up as
    // some trap: the refusal is the real cause.
    if let Some(requested) = refused {
        return CallError::MemoryLimit { limit: limits.memory, requested: ByteSize(requested) };
    }
    if is_transfer_too_large(&err) {
        return CallError::OutputTooLarge { size: None, limit: limits.output };
    }
    let said = guest_said(stderr);
    match trap {
        Some(trap) if said.is_empty() => CallError::Trap { message: trap.to_string() },
        Some(trap) => CallError::Trap { message: format!("{trap}; the plugin wrote: {said}") },
        None => {
            if err.downcast_ref::<wasmtime::PoolConcurrencyLimitError>().is_some() {
                return CallError::Host(format!("{err}"));
            }
            let chain = format!("{:#}", anyhow::Error::from(err));
            if said.is_empty() {
                CallError::Trap { message: chain }
            } else {
                CallError::Trap { message: format!("{chain}; the plugin wrote: {said}") }
            }
        }
    }
}

/// The last few meaningful lines a guest wrote to stderr before it trapped
/// (for Rust, the panic location and message; for Python, the exception and
/// the line that raised it), on one line.
fn guest_said(stderr: &str) -> String {
    if let Some(exception) = python_exception(stderr) {
        return exception;
    }
    let lines: Vec<&str> = stderr
        .lines()
        .map(str::trim)
        .filter(|line| !line.is_empty() && !line.starts_with("note: run with `RUST_BACKTRACE"))
        .collect();
    let tail = &lines[lines.len().saturating_sub(4)..];
    let mut said = tail.join(" ");
    truncate(&mut said, 1_000);
    said
}

/// The last Python traceback in `stderr` as `Exception: message (File "…",
/// line N, in f)`, without the lines the interpreter's runtime writes after it.
fn python_exception(stderr: &str) -> Option<String> {
    let start = stderr.rfind("Traceback (most recent call last):")?;
    let mut frame = None;
    for line in stderr[start..].lines().skip(1) {
        if line.starts_with("  File ") {
            frame = Some(line.trim());
        } else if !line.starts_with(' ') && !line.trim().is_empty() {
            // The first unindented line after the frames is the exception.
            let mut said = match frame {
                Some(frame) => format!("{} ({frame})", line.trim()),
                None => line.trim().to_owned(),
            };
            truncate(&mut said, 1_000);
            return Some(said);
        }
    }
    None
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn capture_keeps_the_first_bytes_and_counts_the_rest() {
        let capture = Capture::new(0);
        capture.push(&vec![b'a'; CAPTURE_LIMIT - 1]);
        capture.push(b"bc");
        capture.push(b"def");
        let text = capture.text(&Redactor::default());
        assert!(text.starts_with("aaa"));
        assert!(text.contains("ab\n"), "the first byte of the overflow is kept");
        assert!(text.ends_with("(4 more bytes dropped)"), "{}", &text[text.len() - 40..]);
    }

    #[test]
    fn guest_said_keeps_the_panic_and_drops_the_backtrace_hint() {
        let stderr = "thread '<unnamed>' panicked at src/lib.rs:14:5:\nboom\nnote: run with `RUST_BACKTRACE=1` environment variable to display a backtrace\n";
        assert_eq!(guest_said(stderr), "thread '<unnamed>' panicked at src/lib.rs:14:5: boom");
        assert_eq!(guest_said(""), "");
    }

    #[test]
    fn guest_said_keeps_a_python_exception_and_its_line() {
        let stderr = "Traceback (most recent call last):\n  File \"/0/app.py\", line 12, in call_tool\n    \
                      return run()\n  File \"/0/app.py\", line 42, in run\nValueError: gave up on purpose\n\
                      thread '<unnamed>' panicked at src/lib.rs:300:13:\nPython function threw an exception\n\
                      note: run with `RUST_BACKTRACE=1` environment variable to display a backtrace\n";
        assert_eq!(guest_said(stderr), "ValueError: gave up on purpose (File \"/0/app.py\", line 42, in run)");
    }

    #[test]
    fn the_memory_limiter_sums_memories_and_refuses_past_the_limit() {
        let mut limiter = MemoryLimiter { limit: 100, total: 0, peak: 0, refused: None };
        assert!(limiter.memory_growing(0, 60, None).unwrap());
        assert!(limiter.memory_growing(0, 30, None).unwrap());
        assert!(!limiter.memory_growing(30, 50, None).unwrap());
        assert_eq!(limiter.refused, Some(110));
        assert_eq!(limiter.peak, 90);
    }
}

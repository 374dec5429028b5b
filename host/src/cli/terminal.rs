//! What a person sees during `run` and `chat`: a spinner while the model
//! thinks, the answer as it streams (stdout), one line per tool call and per
//! retry (stderr), and approval prompts; and the lines they type.

use indicatif::{ProgressBar, ProgressDrawTarget, ProgressStyle};
use std::collections::VecDeque;
use std::io::{BufRead, IsTerminal, Write};
use std::pin::Pin;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, Mutex, OnceLock};
use std::time::{Duration, Instant};
use tokio::sync::mpsc;
use toolhost::agent::approval::{ApprovalRequest, Approver, Decision};
use toolhost::agent::events::Event;
use toolhost::agent::model::StopKind;

/// The lines typed on stdin, read by a thread of their own.
///
/// Reading the terminal must never hold up exit: a read in tokio's blocking
/// pool would keep the runtime from shutting down until Enter was pressed.
/// This thread is never waited for, and the prompts (`chat`'s and the
/// questions: approvals, what a tool asks) all take their lines from it, in
/// order. It starts at the first prompt, so a run that asks nothing never
/// reads stdin.
///
/// A question is answered only by keys pressed after it was shown
/// ([`Input::answer`]): what was typed before (`y⏎` typed while the spinner
/// ran) is never taken as its answer. `chat` keeps such a line for its next
/// prompt ([`Input::keep_typed_ahead`]); elsewhere it is dropped.
#[derive(Clone, Default)]
pub struct Input {
    shared: Arc<Shared>,
}

#[derive(Default)]
struct Shared {
    lines: OnceLock<tokio::sync::Mutex<mpsc::UnboundedReceiver<Typed>>>,
    /// Lines typed before a question, kept for the next prompt.
    kept: Mutex<VecDeque<String>>,
    /// Whether lines typed before a question are kept (`chat`) or dropped.
    keep: AtomicBool,
}

/// A line and when the reader got it.
struct Typed {
    line: String,
    at: Instant,
}

impl Input {
    pub fn stdin() -> Input {
        Input::default()
    }

    /// Keeps a line typed before a question for the next prompt, instead of
    /// dropping it (`chat`: a message typed ahead is the next prompt).
    pub fn keep_typed_ahead(&self) {
        self.shared.keep.store(true, Ordering::SeqCst);
    }

    /// A line typed ahead of a question and kept, if any, oldest first.
    pub fn typed_ahead(&self) -> Option<String> {
        self.kept().pop_front()
    }

    /// The next line, or `None` at the end of the input.
    pub async fn line(&self) -> Option<String> {
        if let Some(line) = self.typed_ahead() {
            return Some(line);
        }
        self.receiver().lock().await.recv().await.map(|typed| typed.line)
    }

    /// The answer to a question `show` shows: the next line typed after
    /// it, or `None` at the end of the input. On a terminal, what was typed
    /// before is set aside first, before the question appears (so a key
    /// pressed the moment it does counts): lines already read are kept for
    /// the next prompt (or dropped), and whatever still waits in the
    /// terminal (a line being typed, lines the reader has not yet taken) is
    /// flushed.
    pub async fn answer(&self, show: impl FnOnce()) -> Option<String> {
        let asked = self.set_aside_typed_ahead().await;
        show();
        let mut lines = self.receiver().lock().await;
        loop {
            let typed = lines.recv().await?;
            match asked {
                Some(asked) if typed.at < asked => {
                    if self.shared.keep.load(Ordering::SeqCst) {
                        self.kept().push_back(typed.line);
                    }
                }
                _ => return Some(typed.line),
            }
        }
    }

    /// The next line typed, or `None` at the end of the input: for a
    /// question that follows the person's answer to the one before, so what
    /// they typed since is its answer (never a line kept for `chat`).
    pub async fn next_typed(&self) -> Option<String> {
        self.receiver().lock().await.recv().await.map(|typed| typed.line)
    }

    /// Flushes the terminal's pending input and marks the moment, just
    /// before a question is shown: a line the reader got earlier was typed
    /// ahead of it. `None` when stdin is not a terminal (a pipe's lines are
    /// answers in order).
    async fn set_aside_typed_ahead(&self) -> Option<Instant> {
        if !std::io::stdin().is_terminal() {
            return None;
        }
        if self.shared.lines.get().is_some() {
            // Whole lines the terminal holds go to the reader first, to be
            // kept (`chat`), rather than flushed with a line being typed.
            let deadline = Instant::now() + Duration::from_millis(200);
            while terminal_input_waiting() && Instant::now() < deadline {
                tokio::time::sleep(Duration::from_millis(5)).await;
            }
            // The reader stamps a line just after taking it.
            tokio::time::sleep(Duration::from_millis(10)).await;
        }
        flush_terminal_input();
        Some(Instant::now())
    }

    fn kept(&self) -> std::sync::MutexGuard<'_, VecDeque<String>> {
        self.shared.kept.lock().unwrap_or_else(|poisoned| poisoned.into_inner())
    }

    fn receiver(&self) -> &tokio::sync::Mutex<mpsc::UnboundedReceiver<Typed>> {
        self.shared.lines.get_or_init(read_stdin)
    }
}

/// Whether whole lines wait in the terminal's input queue (in canonical
/// mode, `FIONREAD` counts only complete lines).
fn terminal_input_waiting() -> bool {
    let mut waiting: libc::c_int = 0;
    // SAFETY: FIONREAD writes one c_int through the pointer, which is valid
    // for the call; on a descriptor that does not take it, it fails and
    // writes nothing.
    let done = unsafe { libc::ioctl(libc::STDIN_FILENO, libc::FIONREAD, &mut waiting) };
    done == 0 && waiting > 0
}

/// Drops what was typed on the terminal and not yet read.
fn flush_terminal_input() {
    // SAFETY: tcflush takes a descriptor and a constant; on one that is not
    // a terminal it fails with ENOTTY and does nothing.
    unsafe {
        libc::tcflush(libc::STDIN_FILENO, libc::TCIFLUSH);
    }
}

fn read_stdin() -> tokio::sync::Mutex<mpsc::UnboundedReceiver<Typed>> {
    let (sender, receiver) = mpsc::unbounded_channel();
    std::thread::spawn(move || {
        let mut stdin = std::io::stdin().lock();
        loop {
            let mut line = String::new();
            match stdin.read_line(&mut line) {
                Ok(0) | Err(_) => break,
                Ok(_) => {
                    if sender.send(Typed { line, at: Instant::now() }).is_err() {
                        break;
                    }
                }
            }
        }
    });
    tokio::sync::Mutex::new(receiver)
}

use super::format;

/// The terminal's state, shared by the event display and the approver.
#[derive(Clone)]
pub struct Terminal {
    inner: Arc<Mutex<State>>,
    /// How many runs the display has shown to the end (`run_finished`).
    runs_shown: Arc<tokio::sync::watch::Sender<u64>>,
}

struct State {
    spinner: Option<ProgressBar>,
    /// Whether stdout ends with a newline.
    at_line_start: bool,
    /// The question an approval prompt left open on stderr's last line,
    /// waiting for the answer: a status line printed meanwhile goes above it.
    open_prompt: Option<String>,
    /// Whether the model's reasoning is shown (`--show-reasoning`).
    show_reasoning: bool,
    /// Whether stderr ends in the middle of a line of reasoning.
    in_reasoning: bool,
    /// Whether the last reply was paused, so the next request continues it.
    continuing: bool,
}

impl Terminal {
    pub fn new(show_reasoning: bool) -> Terminal {
        let state = State {
            spinner: None,
            at_line_start: true,
            open_prompt: None,
            show_reasoning,
            in_reasoning: false,
            continuing: false,
        };
        Terminal { inner: Arc::new(Mutex::new(state)), runs_shown: Arc::new(tokio::sync::watch::Sender::new(0)) }
    }

    /// Waits until the display has shown `runs` runs to their end, so that a
    /// prompt is printed after the answer, not in the middle of it (for at
    /// most two seconds: a display that stopped must not hang the prompt).
    pub async fn shown(&self, runs: u64) {
        let mut shown = self.runs_shown.subscribe();
        let _ = tokio::time::timeout(Duration::from_secs(2), shown.wait_for(|shown| *shown >= runs)).await;
    }

    fn state(&self) -> std::sync::MutexGuard<'_, State> {
        self.inner.lock().unwrap_or_else(|poisoned| poisoned.into_inner())
    }

    /// Stops the spinner and ends a partial stdout line, before printing to stderr.
    pub fn pause(&self) {
        Terminal::pause_locked(&mut self.state());
    }

    fn pause_locked(state: &mut State) {
        if let Some(spinner) = state.spinner.take() {
            spinner.finish_and_clear();
        }
        Terminal::end_reasoning(state);
        if !state.at_line_start {
            println!();
            state.at_line_start = true;
        }
    }

    /// Ends a line of reasoning left open on stderr.
    fn end_reasoning(state: &mut State) {
        if state.in_reasoning {
            eprintln!();
            state.in_reasoning = false;
        }
    }

    /// Prints a status line on a line of its own. Events are shown by their
    /// own task, so a line can come while an approval prompt waits for its
    /// answer: then the question is taken off its line, the status line
    /// printed, and the question shown again below it.
    fn status(&self, line: &str) {
        let mut state = self.state();
        Terminal::pause_locked(&mut state);
        let mut stderr = std::io::stderr().lock();
        match &state.open_prompt {
            Some(question) => {
                let clear = if stderr.is_terminal() { "\r\x1b[2K" } else { "\n" };
                let _ = write!(stderr, "{clear}{line}\n{question}");
            }
            None => {
                let _ = writeln!(stderr, "{line}");
            }
        }
        let _ = stderr.flush();
    }

    /// Prints an approval prompt's question (no newline) and keeps it as the
    /// open prompt until [`Terminal::answered`].
    pub fn ask(&self, question: &str) {
        let mut state = self.state();
        Terminal::pause_locked(&mut state);
        let mut stderr = std::io::stderr().lock();
        let _ = write!(stderr, "{question}");
        let _ = stderr.flush();
        state.open_prompt = Some(question.to_owned());
    }

    /// The open prompt was answered (the terminal echoed the line's end).
    pub fn answered(&self) {
        self.state().open_prompt = None;
    }

    /// Shows one event.
    pub fn show(&self, event: &Event) {
        match event {
            Event::ModelRequest { turn, .. } => {
                // A paused reply goes on where its text stopped: no line
                // break, and no spinner drawn over the line it continues.
                if std::mem::take(&mut self.state().continuing) {
                    return;
                }
                self.pause();
                if std::io::stderr().is_terminal() {
                    let message = if *turn == 1 {
                        "waiting for the model".to_owned()
                    } else {
                        format!("waiting for the model (turn {turn})")
                    };
                    self.state().spinner = Some(spinner(message));
                }
            }
            Event::ReasoningDelta { text } => {
                let mut state = self.state();
                if !state.show_reasoning {
                    return;
                }
                if let Some(spinner) = state.spinner.take() {
                    spinner.finish_and_clear();
                }
                let mut stderr = std::io::stderr().lock();
                let _ = if stderr.is_terminal() {
                    write!(stderr, "\x1b[2m{text}\x1b[0m")
                } else {
                    write!(stderr, "{text}")
                };
                let _ = stderr.flush();
                if !text.is_empty() {
                    state.in_reasoning = !text.ends_with('\n');
                }
            }
            Event::TextDelta { text } => {
                let mut state = self.state();
                if let Some(spinner) = state.spinner.take() {
                    spinner.finish_and_clear();
                }
                Terminal::end_reasoning(&mut state);
                let mut stdout = std::io::stdout().lock();
                let _ = stdout.write_all(text.as_bytes());
                let _ = stdout.flush();
                if !text.is_empty() {
                    state.at_line_start = text.ends_with('\n');
                }
            }
            Event::ModelResponse { stop_reason, tool_calls, .. } => {
                let mut state = self.state();
                if let Some(spinner) = state.spinner.take() {
                    spinner.finish_and_clear();
                }
                state.continuing = *stop_reason == StopKind::Paused && *tool_calls == 0;
            }
            Event::ToolCallCompleted { tool, duration_ms, fuel, truncated_bytes, .. } => {
                let cut = if *truncated_bytes > 0 { format!(" · {truncated_bytes} bytes cut") } else { String::new() };
                self.status(&format!(
                    "  ✓ {tool} · {} · fuel {}{cut}",
                    format::duration(Duration::from_secs_f64(duration_ms / 1_000.0)),
                    format::thousands(*fuel)
                ));
            }
            Event::ToolCallFailed { tool, message, duration_ms, .. } => {
                self.status(&format!(
                    "  ✗ {tool} · {} · {message}",
                    format::duration(Duration::from_secs_f64(duration_ms / 1_000.0))
                ));
            }
            Event::ToolCallProgress { tool, done, total, message, .. } => {
                let done = match total {
                    Some(total) => format!("{done}/{total}"),
                    None => done.to_string(),
                };
                let message = message.as_deref().map(|message| format!(" · {message}")).unwrap_or_default();
                self.status(&format!("  … {tool} · {done}{message}"));
            }
            Event::ToolCallSampled { tool, model, input_tokens, output_tokens, .. } => {
                self.status(&format!("  ✦ {tool} asked the model ({model}, {input_tokens}+{output_tokens} tokens)"));
            }
            Event::ToolCallDenied { tool, reason, .. } => {
                self.status(&format!("  ⊘ {tool} · denied: {reason}"));
            }
            Event::ToolSearch { query, found, native, .. } => {
                // The query (and, searched by the provider, what it found)
                // is the model's text: one printable line.
                let line = |text: &str| toolhost::runtime::text::printable(text).replace(['\n', '\r', '\t'], " ");
                let found = if found.is_empty() { "nothing".to_owned() } else { line(&found.join(", ")) };
                let by = if *native { " (the provider's tool search)" } else { "" };
                self.status(&format!("  ⌕ searched the tools{by} for \"{}\": {found}", line(query)));
            }
            Event::ModelRetry { attempt, max_attempts, wait_ms, reason, .. } => {
                let spinning = self.state().spinner.is_some();
                self.status(&format!(
                    "  ↻ the model request failed ({reason}); retrying in {} (attempt {attempt} of {max_attempts})",
                    if *wait_ms < 1_000 {
                        format!("{wait_ms}ms")
                    } else {
                        format!("{:.1}s", *wait_ms as f64 / 1_000.0)
                    }
                ));
                if spinning && std::io::stderr().is_terminal() {
                    self.state().spinner = Some(spinner("waiting for the model".to_owned()));
                }
            }
            Event::RunFinished { .. } => {
                self.state().continuing = false;
                self.pause();
                self.runs_shown.send_modify(|shown| *shown += 1);
            }
            _ => {}
        }
    }
}

/// A spinner on stderr with `message` and the time elapsed; hidden when
/// stderr is not a terminal.
pub fn spinner(message: String) -> ProgressBar {
    let spinner = ProgressBar::with_draw_target(None, ProgressDrawTarget::stderr());
    spinner.set_style(
        ProgressStyle::with_template("{spinner} {msg} {elapsed}").unwrap_or_else(|_| ProgressStyle::default_spinner()),
    );
    spinner.set_message(message);
    spinner.enable_steady_tick(Duration::from_millis(100));
    spinner
}

/// Asks the person at the terminal about each call whose policy is `ask`.
pub struct TerminalApprover {
    terminal: Terminal,
    input: Input,
}

impl TerminalApprover {
    pub fn new(terminal: Terminal, input: Input) -> TerminalApprover {
        TerminalApprover { terminal, input }
    }
}

impl Approver for TerminalApprover {
    fn decide<'a>(&'a self, request: &'a ApprovalRequest) -> Pin<Box<dyn Future<Output = Decision> + Send + 'a>> {
        Box::pin(async move {
            self.terminal.pause();
            let arguments = match serde_json::from_str::<serde_json::Value>(&request.arguments) {
                Ok(value) => serde_json::to_string_pretty(&value).unwrap_or_else(|_| request.arguments.clone()),
                Err(_) => request.arguments.clone(),
            };
            let (arguments, _) = toolhost::agent::cut_to_budget(&arguments, 2_000);
            let granted = if request.capabilities.is_empty() {
                "nothing beyond computing (no files, network or environment)".to_owned()
            } else {
                request.capabilities.join(", ")
            };
            eprintln!("\nThe model wants to call `{}` ({}) with:", request.tool, request.plugin);
            for line in arguments.lines() {
                eprintln!("    {line}");
            }
            eprintln!("  the plugin is granted: {granted}");
            // Only keys pressed after the question count.
            let answer =
                self.input.answer(|| self.terminal.ask("  allow it? [y] once, [a] for this session, [N] deny: ")).await;
            self.terminal.answered();
            match answer {
                Some(line) => match line.trim().to_ascii_lowercase().as_str() {
                    "y" | "yes" => Decision::AllowOnce,
                    "a" | "always" => Decision::AllowSession,
                    _ => Decision::Deny("the person at the terminal denied it".to_owned()),
                },
                None => Decision::Deny("no answer could be read from the terminal".to_owned()),
            }
        })
    }
}

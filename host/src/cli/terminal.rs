//! What a person sees during `run` and `chat`: a spinner while the model
//! thinks, the answer as it streams (stdout), one line per tool call
//! (stderr), and approval prompts.

use indicatif::{ProgressBar, ProgressDrawTarget, ProgressStyle};
use std::io::{IsTerminal, Write};
use std::pin::Pin;
use std::sync::{Arc, Mutex};
use std::time::Duration;
use toolhost::agent::approval::{ApprovalRequest, Approver, Decision};
use toolhost::agent::events::Event;

use super::format;

/// The terminal's state, shared by the event display and the approver.
#[derive(Clone)]
pub struct Terminal {
    inner: Arc<Mutex<State>>,
}

struct State {
    spinner: Option<ProgressBar>,
    /// Whether stdout ends with a newline.
    at_line_start: bool,
}

impl Terminal {
    pub fn new() -> Terminal {
        Terminal { inner: Arc::new(Mutex::new(State { spinner: None, at_line_start: true })) }
    }

    fn state(&self) -> std::sync::MutexGuard<'_, State> {
        self.inner.lock().unwrap_or_else(|poisoned| poisoned.into_inner())
    }

    /// Stops the spinner and ends a partial stdout line, before printing to stderr.
    pub fn pause(&self) {
        let mut state = self.state();
        if let Some(spinner) = state.spinner.take() {
            spinner.finish_and_clear();
        }
        if !state.at_line_start {
            println!();
            state.at_line_start = true;
        }
    }

    /// Shows one event.
    pub fn show(&self, event: &Event) {
        match event {
            Event::ModelRequest { turn, .. } => {
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
            Event::TextDelta { text } => {
                let mut state = self.state();
                if let Some(spinner) = state.spinner.take() {
                    spinner.finish_and_clear();
                }
                let mut stdout = std::io::stdout().lock();
                let _ = stdout.write_all(text.as_bytes());
                let _ = stdout.flush();
                if !text.is_empty() {
                    state.at_line_start = text.ends_with('\n');
                }
            }
            Event::ModelResponse { .. } => {
                if let Some(spinner) = self.state().spinner.take() {
                    spinner.finish_and_clear();
                }
            }
            Event::ToolCallCompleted { tool, duration_ms, fuel, truncated_bytes, .. } => {
                self.pause();
                let cut = if *truncated_bytes > 0 { format!(" · {truncated_bytes} bytes cut") } else { String::new() };
                eprintln!(
                    "  ✓ {tool} · {} · fuel {}{cut}",
                    format::duration(Duration::from_secs_f64(duration_ms / 1_000.0)),
                    format::thousands(*fuel)
                );
            }
            Event::ToolCallFailed { tool, message, duration_ms, .. } => {
                self.pause();
                eprintln!(
                    "  ✗ {tool} · {} · {message}",
                    format::duration(Duration::from_secs_f64(duration_ms / 1_000.0))
                );
            }
            Event::ToolCallDenied { tool, reason, .. } => {
                self.pause();
                eprintln!("  ⊘ {tool} · denied: {reason}");
            }
            Event::RunFinished { .. } => self.pause(),
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
}

impl TerminalApprover {
    pub fn new(terminal: Terminal) -> TerminalApprover {
        TerminalApprover { terminal }
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
            eprint!("  allow it? [y] once, [a] for this session, [N] deny: ");
            let answer = tokio::task::spawn_blocking(|| {
                let mut line = String::new();
                std::io::stdin().read_line(&mut line).map(|_| line)
            })
            .await;
            match answer {
                Ok(Ok(line)) => match line.trim().to_ascii_lowercase().as_str() {
                    "y" | "yes" => Decision::AllowOnce,
                    "a" | "always" => Decision::AllowSession,
                    _ => Decision::Deny("the person at the terminal denied it".to_owned()),
                },
                _ => Decision::Deny("no answer could be read from the terminal".to_owned()),
            }
        })
    }
}

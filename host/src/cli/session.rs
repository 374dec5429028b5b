//! What `run` and `chat` share: flags for the model, building the agent,
//! the event display and `--events` file, and saving the transcript.

use super::asking::TerminalAsker;
use super::terminal::{Input, Terminal, TerminalApprover};
use anyhow::{Context, Result};
use std::io::{IsTerminal, Write};
use std::path::PathBuf;
use std::process::ExitCode;
use std::sync::Arc;
use tokio::sync::mpsc;
use tokio::task::JoinHandle;
use toolhost::agent::approval::{ApproveAll, Approver, NobodyToAsk};
use toolhost::agent::events::{Event, Record, RunStatus};
use toolhost::agent::model::{Conversation, ModelClient, RequestOptions, StopKind};
use toolhost::agent::providers;
use toolhost::agent::transcript::{self, Transcript};
use toolhost::agent::{Agent, AgentOptions, RunOutcome, SearchMode, ToolSearch};
use toolhost::{ByteSize, Config, Host};

#[derive(clap::Args)]
pub struct ModelArgs {
    /// PROVIDER/MODEL, e.g. openai/gpt-4.1, anthropic/claude-sonnet-4-5, ollama/qwen3
    /// [default: $TOOLHOST_MODEL, else [model] default in the config, else by which API key is set]
    #[arg(long, short = 'm', value_name = "PROVIDER/MODEL")]
    model: Option<String>,

    /// The provider's base URL, e.g. http://127.0.0.1:8080/v1 (overrides the config)
    #[arg(long, value_name = "URL")]
    base_url: Option<String>,

    /// A system prompt [default: [model] system in the config]
    #[arg(long, value_name = "TEXT")]
    system: Option<String>,

    /// Model turns before the run is stopped [default: 20]
    #[arg(long, value_name = "N")]
    max_turns: Option<u32>,

    /// Approve every tool call whose policy is `ask` without asking (a `deny` policy still wins)
    #[arg(long, short = 'y')]
    yes: bool,

    /// Ask for whole responses instead of streaming them
    #[arg(long)]
    no_stream: bool,

    /// How much the model should reason: minimal, low, medium, high, or a budget of thinking tokens
    /// (e.g. 8000) [default: [model] reasoning in the config, else the provider's default]
    #[arg(long, value_name = "EFFORT|TOKENS")]
    reasoning: Option<String>,

    /// Show the model's reasoning, dimmed, on stderr as it comes
    #[arg(long)]
    show_reasoning: bool,

    /// Save the conversation as JSON to FILE (written atomically, also on Ctrl-C)
    #[arg(long, value_name = "FILE")]
    transcript: Option<PathBuf>,

    /// Write every event as JSON Lines to FILE
    #[arg(long, value_name = "FILE")]
    events: Option<PathBuf>,
}

/// A client for `spec` (PROVIDER/MODEL) with the config's `[model]`
/// settings, asking for whole responses: for a tool's sampling requests in
/// `toolhost call --model`.
pub fn model_client(config: &Config, spec: &str, base_url: Option<&str>) -> Result<ModelClient> {
    let endpoint = providers::resolve(spec, &config.providers, base_url)?;
    let settings = &config.model;
    let extra_roots = match &config.ca_file {
        Some(path) => toolhost::tls::load_ca_file(path)?,
        None => Vec::new(),
    };
    let defaults = RequestOptions::default();
    let options = RequestOptions {
        stream: false,
        timeout: settings.request_timeout.map(|t| t.0).unwrap_or(defaults.timeout),
        max_retries: settings.max_retries.unwrap_or(defaults.max_retries),
        max_tokens: settings.max_tokens,
        reasoning: settings.reasoning,
        bounded: false,
        extra_roots,
    };
    ModelClient::new(endpoint, options)
}

/// A ready agent and what surrounds it.
pub struct Session {
    pub agent: Agent,
    pub conversation: Conversation,
    /// What is typed on stdin, shared by the prompts.
    pub input: Input,
    /// What the event display shows.
    pub terminal: Terminal,
    transcript: Option<PathBuf>,
    display: JoinHandle<Result<()>>,
}

impl Session {
    pub fn start(host: Host, config: &Config, args: &ModelArgs) -> Result<Session> {
        let spec = match &args.model {
            Some(spec) => spec.clone(),
            None => providers::default_spec(&config.model)?,
        };
        let endpoint = providers::resolve(&spec, &config.providers, args.base_url.as_deref())?;
        let settings = &config.model;
        let extra_roots = match &config.ca_file {
            Some(path) => toolhost::tls::load_ca_file(path)?,
            None => Vec::new(),
        };
        let options = RequestOptions {
            stream: !args.no_stream && settings.stream.unwrap_or(true),
            timeout: settings.request_timeout.map(|t| t.0).unwrap_or(RequestOptions::default().timeout),
            max_retries: settings.max_retries.unwrap_or(RequestOptions::default().max_retries),
            max_tokens: settings.max_tokens,
            reasoning: match &args.reasoning {
                Some(text) => Some(text.parse().map_err(|err: String| anyhow::anyhow!("--reasoning: {err}"))?),
                None => settings.reasoning,
            },
            bounded: false,
            extra_roots,
        };
        let client = ModelClient::new(endpoint, options)?;
        let agent_options = AgentOptions {
            max_turns: args.max_turns.or(settings.max_turns).unwrap_or(AgentOptions::DEFAULT_MAX_TURNS),
            max_concurrent_tools: settings.max_concurrent_tools.unwrap_or(AgentOptions::DEFAULT_MAX_CONCURRENT_TOOLS),
            output_budget: settings
                .output_budget
                .map(|size: ByteSize| size.bytes() as usize)
                .unwrap_or(AgentOptions::DEFAULT_OUTPUT_BUDGET),
            tool_search: ToolSearch {
                mode: settings.tool_search.unwrap_or(SearchMode::Auto),
                threshold: settings.tool_search_threshold.unwrap_or(ToolSearch::DEFAULT_THRESHOLD),
                always: settings.always_tools.clone(),
                recent: ToolSearch::DEFAULT_RECENT,
                native: settings.tool_search_native.unwrap_or(true),
            },
        };
        // A tool named in `always_tools` that no plugin offers is a typo the operator should hear of.
        let catalog = host.catalog();
        if let Some(unknown) = settings.always_tools.iter().find(|name| catalog.find(name).is_none()) {
            eprintln!("warning: [model] always_tools names `{unknown}`, which no loaded plugin offers");
        }
        if agent_options.max_turns == 0 {
            anyhow::bail!("--max-turns must be at least 1");
        }
        let events_file = match &args.events {
            Some(path) => Some(
                std::fs::File::create(path)
                    .with_context(|| format!("could not create the events file {}", path.display()))?,
            ),
            None => None,
        };
        let terminal = Terminal::new(args.show_reasoning);
        let input = Input::stdin();
        let approver: Arc<dyn Approver> = if args.yes {
            Arc::new(ApproveAll)
        } else if std::io::stdin().is_terminal() {
            Arc::new(TerminalApprover::new(terminal.clone(), input.clone()))
        } else {
            Arc::new(NobodyToAsk)
        };
        let (events, receiver) = mpsc::unbounded_channel();
        let display = tokio::spawn(display(receiver, terminal.clone(), events_file));
        let mut agent =
            Agent::new(Arc::new(host), client, spec, approver).with_options(agent_options).with_events(events);
        // What tools ask the user is asked at the terminal, like an approval
        // (no terminal: declined).
        if let Some(person) = TerminalAsker::on_terminal(terminal.clone(), input.clone()) {
            agent = agent.with_person(Arc::new(person));
        }
        let conversation =
            Conversation { system: args.system.clone().or_else(|| settings.system.clone()), messages: Vec::new() };
        Ok(Session { agent, conversation, input, terminal, transcript: args.transcript.clone(), display })
    }

    /// Saves the transcript, if asked for.
    pub fn save(&self) -> Result<()> {
        if let Some(path) = &self.transcript {
            let transcript = Transcript {
                version: 1,
                model: self.agent.model_name().to_owned(),
                conversation: self.conversation.clone(),
            };
            transcript::save(path, &transcript)?;
        }
        Ok(())
    }

    /// Closes the event stream and waits for the display and events file.
    pub async fn finish(self) -> Result<()> {
        let Session { agent, display, .. } = self;
        drop(agent);
        display.await.context("the event display failed")?
    }
}

async fn display(
    mut receiver: mpsc::UnboundedReceiver<Event>,
    terminal: Terminal,
    file: Option<std::fs::File>,
) -> Result<()> {
    let mut file = file.map(std::io::BufWriter::new);
    while let Some(event) = receiver.recv().await {
        terminal.show(&event);
        if let Some(file) = &mut file
            && !matches!(event, Event::TextDelta { .. })
        {
            serde_json::to_writer(&mut *file, &Record::now(&event))?;
            file.write_all(b"\n")?;
            file.flush().context("could not write the events file")?;
        }
    }
    Ok(())
}

/// Cancels `cancel` on the first Ctrl-C (the run stops, results and the
/// transcript are kept); a second Ctrl-C exits at once with status 130.
pub fn cancel_on_ctrl_c(cancel: tokio_util::sync::CancellationToken) {
    tokio::spawn(async move {
        if tokio::signal::ctrl_c().await.is_err() {
            return;
        }
        cancel.cancel();
        if tokio::signal::ctrl_c().await.is_ok() {
            eprintln!("\ncancelled (Ctrl-C twice: exiting at once)");
            std::process::exit(130);
        }
    });
}

/// Says how a run ended, if it did not answer, in one line with the
/// provider's word for why its reply stopped and what to do; and picks the
/// exit status.
pub fn report(outcome: &RunOutcome, max_turns_hint: &str) -> ExitCode {
    let said = match &outcome.stop {
        Some(stop) => stop.to_string(),
        None => "the provider gave no reason".to_owned(),
    };
    match outcome.status {
        RunStatus::Answered => return ExitCode::SUCCESS,
        RunStatus::MaxTurns if outcome.stop.as_ref().is_some_and(|stop| stop.kind == StopKind::Paused) => eprintln!(
            "error: the model's turn was still paused after {} turns, the limit ({said}); raise it with {max_turns_hint}",
            outcome.turns
        ),
        RunStatus::MaxTurns => eprintln!(
            "error: the model was still calling tools after {} turns, the limit; raise it with {max_turns_hint}",
            outcome.turns
        ),
        RunStatus::Length if outcome.calls_not_run > 0 => eprintln!(
            "error: the model's reply was cut off by its output token limit while it was writing tool calls \
             ({said}); none of its {} calls was run (raise `max_tokens` in [model])",
            outcome.calls_not_run
        ),
        RunStatus::Length => eprintln!(
            "error: the answer was cut off: the model hit its output token limit ({said}); raise `max_tokens` in \
             [model]{}",
            if outcome.usage.reasoning > 0 { " (its reasoning counts against it too)" } else { "" }
        ),
        RunStatus::ContextWindow => eprintln!(
            "error: the reply was cut off: the conversation no longer fits the model's context window ({said}); \
             start over with a shorter prompt (`/reset` in chat), lower `output_budget` in [model] so tool results \
             take less room, or use a model with a larger context window"
        ),
        RunStatus::ContentFilter => {
            eprintln!("error: the model refused, or its provider filtered, the answer ({said}); rephrase the prompt")
        }
        RunStatus::UnknownStop if outcome.calls_not_run > 0 => eprintln!(
            "error: the model's reply ended for a reason toolhost does not know ({said}) while it was writing tool \
             calls; none of its {} calls was run. Try again",
            outcome.calls_not_run
        ),
        RunStatus::UnknownStop => eprintln!(
            "error: the model's reply ended for a reason toolhost does not know ({said}), so it is not taken as an \
             answer; try again"
        ),
        RunStatus::Empty => {
            eprintln!(
                "error: the model sent an empty reply (no text and no tool calls); try again or rephrase the prompt"
            )
        }
        RunStatus::Failed => match &outcome.error {
            Some(err) => eprintln!("error: {err}"),
            None => eprintln!("error: the model request failed"),
        },
        RunStatus::Cancelled => return cancelled(),
    }
    ExitCode::FAILURE
}

/// Says the run was cancelled; exit status 130.
pub fn cancelled() -> ExitCode {
    eprintln!("cancelled");
    ExitCode::from(130)
}

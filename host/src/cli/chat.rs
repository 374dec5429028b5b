//! `toolhost chat`: a conversation over several prompts. Each line read from
//! stdin is a prompt; `/reset` starts over, `/exit` (or end of input) ends.
//! Ctrl-C cancels the reply in progress, or the prompt, and ends the chat
//! with exit status 130.

use super::session::{self, ModelArgs, Session};
use anyhow::Result;
use std::io::{IsTerminal, Write};
use std::path::Path;
use std::process::ExitCode;
use tokio_util::sync::CancellationToken;
use toolhost::agent::events::RunStatus;
use toolhost::catalog::reload::Watcher;
use toolhost::{Config, Host};

#[derive(clap::Args)]
pub struct Args {
    #[command(flatten)]
    model: ModelArgs,
}

pub async fn run(host: Host, config: &Config, dir: &Path, args: Args) -> Result<ExitCode> {
    let mut session = Session::start(host, config, &args.model)?;
    // A message typed ahead while a question waits is the next prompt.
    session.input.keep_typed_ahead();
    // Plugins added, changed or removed while chatting are picked up between
    // turns (each turn works on one snapshot of the tools).
    let _watcher = match Watcher::start(session.agent.host().clone(), dir) {
        Ok(watcher) => Some(watcher),
        Err(err) => {
            eprintln!("warning: plugins will not be reloaded during the chat: {err:#}");
            None
        }
    };
    let cancel = CancellationToken::new();
    session::cancel_on_ctrl_c(cancel.clone());
    let interactive = std::io::stdin().is_terminal();
    if interactive {
        eprintln!("chatting with {} · /reset starts over · /exit or Ctrl-D ends", session.agent.model_name());
    }
    let mut status = ExitCode::SUCCESS;
    let mut runs = 0;
    loop {
        // The answer and its tool lines are on the screen before the next prompt.
        session.terminal.shown(runs).await;
        if interactive {
            eprint!("\n> ");
            let _ = std::io::stderr().flush();
        }
        // A message typed while a question waited is this prompt's, shown
        // after it as if typed now.
        let typed_ahead = session.input.typed_ahead();
        if let Some(line) = &typed_ahead
            && interactive
        {
            eprintln!("{}", line.trim_end());
        }
        let line = match typed_ahead {
            Some(line) => Some(line),
            None => tokio::select! {
                biased;
                () = cancel.cancelled() => {
                    if interactive {
                        eprintln!();
                    }
                    status = session::cancelled();
                    break;
                }
                line = session.input.line() => line,
            },
        };
        let Some(line) = line else { break };
        let prompt = line.trim();
        match prompt {
            "" => continue,
            "/exit" | "/quit" => break,
            "/reset" => {
                session.conversation.messages.clear();
                eprintln!("(the conversation starts over)");
                continue;
            }
            _ => {}
        }
        let outcome = session.agent.run(&mut session.conversation, prompt, &cancel).await;
        runs += 1;
        session.save()?;
        if outcome.status != RunStatus::Answered {
            status = session::report(&outcome, "--max-turns or `max_turns` in [model]");
        }
        if outcome.status == RunStatus::Cancelled {
            break;
        }
    }
    session.save()?;
    session.finish().await?;
    Ok(status)
}

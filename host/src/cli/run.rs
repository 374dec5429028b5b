//! `toolhost run "PROMPT"`: one prompt, the model loop until it answers.

use super::session::{self, ModelArgs, Session};
use anyhow::{Context, Result};
use std::io::Read;
use std::process::ExitCode;
use tokio_util::sync::CancellationToken;
use toolhost::{Config, Host};

#[derive(clap::Args)]
pub struct Args {
    /// What to ask the model; `-` reads it from stdin
    prompt: String,

    #[command(flatten)]
    model: ModelArgs,
}

pub async fn run(host: Host, config: &Config, args: Args) -> Result<ExitCode> {
    let prompt = if args.prompt == "-" {
        let mut text = String::new();
        std::io::stdin().read_to_string(&mut text).context("could not read the prompt from stdin")?;
        text
    } else {
        args.prompt.clone()
    };
    if prompt.trim().is_empty() {
        anyhow::bail!("the prompt is empty");
    }
    let mut session = Session::start(host, config, &args.model)?;
    let cancel = CancellationToken::new();
    session::cancel_on_ctrl_c(cancel.clone());
    let outcome = session.agent.run(&mut session.conversation, &prompt, &cancel).await;
    let saved = session.save();
    session.finish().await?;
    saved?;
    Ok(session::report(&outcome, "--max-turns or `max_turns` in [model]"))
}

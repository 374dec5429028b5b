//! `toolhost compile`: loads the plugins folder once, compiling what the
//! compile cache lacks, so that a later `serve`, `call` or `run` with the
//! same toolhost, config and cache starts warm (an install step, a
//! container image's build, a Kubernetes init container). Also the stderr
//! progress lines `serve` prints while it loads in the background.

use anyhow::{Context, Result};
use std::path::Path;
use std::process::ExitCode;
use std::time::Duration;
use toolhost::runtime::cache::Origin;
use toolhost::{Config, Host, ProblemKind};

#[derive(clap::Args)]
pub struct Args {
    /// Print the summary as one JSON object
    #[arg(long)]
    json: bool,
}

pub async fn run(config: Config, dir: &Path, args: Args) -> Result<ExitCode> {
    let host = Host::new(config.clone())?;
    let Some(cache) = host.cache().map(|cache| cache.dir().to_owned()) else {
        anyhow::bail!(
            "there is no compile cache to fill: set TOOLHOST_CACHE_DIR (or `cache_dir` in the config), or HOME"
        );
    };
    let started = std::time::Instant::now();
    let loading = async { tokio::join!(host.load_dir_progressively(dir), progress(&host, started, Duration::ZERO)).0 };
    let interrupted = tokio::signal::ctrl_c();
    tokio::select! {
        loaded = loading => loaded.with_context(|| format!("could not load plugins from {}", dir.display()))?,
        _ = interrupted => return Err(super::Cancelled.into()),
    }
    let plugins = host.plugins();
    let failed: Vec<_> = host.problems().into_iter().filter(|problem| problem.kind != ProblemKind::Grant).collect();
    let compiled = plugins.iter().filter(|plugin| plugin.origin == Origin::Compiled).count();
    if args.json {
        let summary = serde_json::json!({
            "cache": cache.display().to_string(),
            "plugins": plugins.iter().map(|plugin| serde_json::json!({
                "name": &*plugin.name,
                "tools": plugin.tools.len(),
                "compiled": plugin.origin == Origin::Compiled,
            })).collect::<Vec<_>>(),
            "failed": failed.iter().map(ToString::to_string).collect::<Vec<_>>(),
        });
        println!("{summary}");
    } else {
        for plugin in &plugins {
            let how = if plugin.origin == Origin::Compiled { "compiled" } else { "already cached" };
            let tools = plugin.tools.len();
            println!("{}: {tools} tool{} ({how})", plugin.name, if tools == 1 { "" } else { "s" });
        }
        println!(
            "{} plugin{} ready in {} ({compiled} compiled now) in {:.1} s",
            plugins.len(),
            if plugins.len() == 1 { "" } else { "s" },
            cache.display(),
            started.elapsed().as_secs_f64()
        );
    }
    for problem in &failed {
        eprintln!("error: could not load {problem}");
    }
    if failed.is_empty() {
        Ok(ExitCode::SUCCESS)
    } else {
        eprintln!(
            "error: {} of the folder's files did not load (see above); `serve` leaves them out too",
            failed.len()
        );
        Ok(ExitCode::from(1))
    }
}

/// Says on stderr how far the host's progressive load (one started at
/// `since` or later) has come, from `quiet` on (a warm cache loads in
/// milliseconds and says nothing): a line when plugins become ready (at most
/// one every 2 s), one every 10 s while nothing changes, and the last when
/// all are loaded. Returns once that load has finished: run it beside it.
pub async fn progress(host: &Host, since: std::time::Instant, quiet: Duration) {
    let mut loading = host.loading();
    tokio::time::sleep(quiet).await;
    let mut said = None::<tokio::time::Instant>;
    let mut due = true;
    loop {
        let now = loading.borrow_and_update().clone();
        if now.finished && now.started >= since {
            if said.is_some() {
                eprintln!(
                    "toolhost: all {} plugins loaded in {:.1} s (compiled ones are cached for next time)",
                    now.total,
                    now.started.elapsed().as_secs_f64()
                );
            }
            return;
        } else if now.finished {
            // The load has not begun yet.
        } else if due || said.is_none_or(|at| at.elapsed() >= Duration::from_secs(2)) {
            eprintln!("toolhost: {}", now.describe());
            said = Some(tokio::time::Instant::now());
        }
        let wait = Duration::from_secs(10);
        tokio::select! {
            changed = loading.changed() => {
                due = false;
                if changed.is_err() {
                    return;
                }
            }
            () = tokio::time::sleep(wait) => due = true,
        }
    }
}

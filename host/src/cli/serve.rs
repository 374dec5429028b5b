//! `toolhost serve`: every tool over MCP, on stdio or Streamable HTTP, with
//! the plugins folder watched and reloaded. Over HTTP it listens before the
//! plugins load (`/readyz` says when they have) and stops gracefully on
//! SIGTERM or Ctrl-C.

use anyhow::{Context, Result};
use std::net::SocketAddr;
use std::path::Path;
use std::process::ExitCode;
use std::sync::Arc;
use toolhost::catalog::reload::Watcher;
use toolhost::mcp::metrics::Readiness;
use toolhost::mcp::profiles::Profiles;
use toolhost::mcp::{self, HttpOptions, StdioOptions};
use toolhost::{Config, Host};

#[derive(clap::Args, Clone)]
pub struct Args {
    /// Serve Streamable HTTP at http://ADDR/mcp instead of stdio, e.g. 127.0.0.1:8931
    #[arg(long, value_name = "ADDR")]
    http: Option<SocketAddr>,

    /// Require `Authorization: Bearer TOKEN` on HTTP, TOKEN read from this
    /// environment variable (needed to bind a non-loopback address)
    #[arg(long, value_name = "NAME")]
    token_env: Option<String>,

    /// Also accept this Host header on HTTP (besides localhost, 127.0.0.1, ::1); repeatable
    #[arg(long = "allow-host", value_name = "HOST")]
    allow_hosts: Vec<String>,

    /// Also accept this Origin on HTTP (besides http://localhost:*, 127.0.0.1, [::1]); repeatable
    #[arg(long = "allow-origin", value_name = "ORIGIN")]
    allow_origins: Vec<String>,

    /// Do not watch the plugins folder for changes
    #[arg(long)]
    no_watch: bool,

    /// Also serve the tools of the config's `[mcp_servers]` (external, not
    /// sandboxed); off by default, and those servers are not even started
    #[arg(long)]
    pub include_mcp: bool,

    /// On stdio: offer only the tools of `[serve.profiles.NAME]` (over
    /// HTTP a client picks a profile with the URL /mcp/NAME)
    #[arg(long, value_name = "NAME")]
    profile: Option<String>,
}

impl Args {
    /// Whether MCP goes over HTTP (else stdio, whose stdout is MCP's).
    pub fn over_http(&self) -> bool {
        self.http.is_some()
    }
}

pub async fn run(config: Config, dir: &Path, args: Args) -> Result<ExitCode> {
    let serve = &config.serve;
    let Some(address) = args.http else {
        let profiles = Profiles::new(serve.tools.as_ref(), &serve.profiles, false)?;
        let profile = match &args.profile {
            Some(name) => profiles.named(name).context("--profile")?,
            None => profiles.pick(None, None).map_err(|refusal| anyhow::anyhow!(refusal.message))?,
        };
        mcp::pages::page_size(serve.page_size)?;
        // SIGTERM and Ctrl-C end it at once, even while plugins compile.
        let signals = shutdown_signal();
        let host = Arc::new(Host::new(config.clone())?);
        host.begin_load(dir).context("could not load plugins")?;
        // On stdio only the quotas are shared: its tasks and session are its one client's.
        share_state(&host, &config).await?;
        // The client's `initialize` is answered at once; the plugins load
        // behind it, each joining the tools as it is ready (list_changed).
        let loading = load_in_background(host.clone(), &config, dir, &args, Arc::new(profiles));
        let options = StdioOptions { tasks: serve.tasks.clone(), profile: Some(profile), page_size: serve.page_size };
        let serving = mcp::serve_stdio(host, options);
        tokio::pin!(loading, serving, signals);
        let mut _watcher = None;
        let mut loaded = false;
        loop {
            tokio::select! {
                served = &mut serving => {
                    // The client closed stdin: the load under way ends
                    // first (what it compiles is cached for the next
                    // launch, and what it finds wrong is said before
                    // anything else), unless a signal comes, as a client
                    // sends one after a grace.
                    if !loaded {
                        tokio::select! {
                            watcher = &mut loading => drop(watcher?),
                            () = &mut signals => {}
                        }
                    }
                    served.context("the MCP session on stdio failed")?;
                    return Ok(ExitCode::SUCCESS);
                }
                watcher = &mut loading, if !loaded => {
                    _watcher = watcher?;
                    loaded = true;
                }
                () = &mut signals => return Ok(ExitCode::SUCCESS),
            }
        }
    };
    if let Some(name) = &args.profile {
        anyhow::bail!(
            "--profile is for stdio: over HTTP each client picks its profile with the URL http://ADDR/mcp/{name} \
             (or, with [serve.oauth], its token)"
        );
    }
    let token_env = args.token_env.clone().or_else(|| serve.token_env.clone());
    let token = match &token_env {
        Some(name) => {
            let value = std::env::var(name)
                .with_context(|| format!("--token-env {name}: the environment variable `{name}` is not set"))?;
            if value.trim().len() < 16 {
                anyhow::bail!(
                    "the token in `{name}` is shorter than 16 characters: use a long random one (e.g. `openssl rand -hex 32`)"
                );
            }
            Some(value.trim().to_owned())
        }
        None => None,
    };
    let oauth = match &serve.oauth {
        Some(oauth) if token.is_some() => {
            let _ = oauth;
            anyhow::bail!(
                "both a static token ({}) and [serve.oauth] are set: choose one (OAuth access tokens, or the token)",
                token_env.as_deref().unwrap_or("token_env")
            )
        }
        Some(oauth) => Some(Arc::new(mcp::oauth::ResourceServer::new(oauth.clone())?)),
        None => None,
    };
    if !address.ip().is_loopback() && token.is_none() && oauth.is_none() {
        anyhow::bail!(
            "refusing to serve on {address} without a token: any machine that can reach it could call the tools. \
             Set one with --token-env NAME (or `token_env` in [serve]), protect it with [serve.oauth], or bind 127.0.0.1"
        );
    }
    let profiles = Arc::new(Profiles::new(serve.tools.as_ref(), &serve.profiles, oauth.is_some())?);
    mcp::pages::page_size(serve.page_size)?;
    let mut options = HttpOptions::from_config(serve);
    options.profiles = profiles.clone();
    options.token = token;
    options.oauth = oauth;
    options.allowed_hosts.extend(args.allow_hosts.iter().cloned());
    options.allowed_origins.extend(args.allow_origins.iter().cloned());
    // Listen before loading, so that a load balancer or an orchestrator sees
    // the process alive (`/healthz`) and not yet ready (`/readyz`, 503) while
    // plugins compile and MCP servers start. `/mcp` answers meanwhile, with
    // the tools ready so far (list_changed as more are).
    let waiting_for = if config.mcp_servers.values().any(|server| server.required) {
        "loading plugins and connecting the required MCP servers"
    } else {
        "loading plugins"
    };
    let readiness = Arc::new(Readiness::loading(waiting_for));
    options.readiness = readiness.clone();
    // Listened for from before the first line, so that a SIGTERM that comes
    // early still drains (and sends the last traces) instead of killing.
    let signals = shutdown_signal();
    let listener = tokio::net::TcpListener::bind(address)
        .await
        .with_context(|| format!("could not listen on {address} (is another server using the port?)"))?;
    let bound = listener.local_addr().context("could not read the bound address")?;
    eprintln!(
        "toolhost: listening on http://{bound} (MCP at /mcp answers now, with the tools loaded so far; \
         /readyz says ready once every plugin is loaded)"
    );
    let host = Arc::new(Host::new(config.clone())?);
    host.begin_load(dir).context("could not load plugins")?;
    options.store = share_state(&host, &config).await?;
    let stop = tokio_util::sync::CancellationToken::new();
    let server = tokio::spawn(mcp::serve_http(host.clone(), listener, options, stop.clone()));
    // SIGTERM (what an orchestrator sends) and Ctrl-C stop it gracefully,
    // whenever they come (while plugins compile too): not ready, no new
    // connections, calls in flight finish (`drain`); a load still running
    // is dropped (a compile cut short is done again next time).
    let stopping = readiness.clone();
    let stopper = stop.clone();
    tokio::spawn(async move {
        signals.await;
        stopping.set_not_ready("shutting down");
        stopper.cancel();
    });
    let loading = {
        let (host, readiness, dir) = (host.clone(), readiness.clone(), dir.to_owned());
        let config = config.clone();
        let watch = args.clone();
        tokio::spawn(async move {
            let mut progress = host.loading();
            let follow = async {
                // /readyz says how far the load has come.
                while progress.changed().await.is_ok() {
                    let now = progress.borrow_and_update().describe();
                    readiness.set_loading(&format!("{waiting_for}: {now}"));
                }
            };
            let loaded = tokio::select! {
                loaded = load_in_background(host.clone(), &config, &dir, &watch, profiles) => loaded,
                () = follow => unreachable!("follows until the host goes"),
            };
            if loaded.is_ok() && readiness.finish_loading() {
                eprintln!("toolhost: serving MCP at http://{bound}/mcp");
            }
            loaded
        })
    };
    tokio::pin!(server);
    let _watcher = tokio::select! {
        served = &mut server => {
            served.context("the HTTP server stopped unexpectedly")??;
            eprintln!("toolhost: stopped");
            return Ok(ExitCode::SUCCESS);
        }
        loaded = loading => {
            match loaded.context("loading the plugins stopped unexpectedly")? {
                Ok(watcher) => watcher,
                Err(err) => {
                    stop.cancel();
                    let _ = server.await;
                    return Err(err);
                }
            }
        }
    };
    server.await.context("the HTTP server stopped unexpectedly")??;
    eprintln!("toolhost: stopped");
    Ok(ExitCode::SUCCESS)
}

/// Loads the plugins folder progressively (and starts the MCP servers)
/// while `serve` answers, saying on stderr how far it has come, then what
/// the foreground commands say after loading (what was skipped, required
/// servers, profiles naming nothing) and starts watching the folder. An
/// `Err` (a required MCP server down, a profile naming no tool) ends `serve`.
async fn load_in_background(
    host: Arc<Host>,
    config: &Config,
    dir: &Path,
    args: &Args,
    profiles: Arc<Profiles>,
) -> Result<Option<Watcher>> {
    // Watched from before the load: a file that changes during it is
    // reloaded once it has ended (nothing copied in is missed).
    let watcher = start_watching(&host, dir, args)?;
    let since = std::time::Instant::now();
    let quiet = std::time::Duration::from_millis(500);
    let (loaded, servers, ()) = tokio::join!(
        host.load_dir_progressively(dir),
        host.connect_servers(),
        super::compile::progress(&host, since, quiet)
    );
    loaded.context("could not load plugins")?;
    super::report_servers(servers)?;
    super::report_loaded(&host, config, dir);
    check_profiles(&host, profiles)?;
    Ok(watcher)
}

/// Checks `[serve] tools` and `[serve.profiles]` against the loaded
/// catalog: a name that is no loaded tool or plugin stops the start (a
/// typo would silently offer less, or exclude nothing); a pattern matching
/// nothing is a warning. After each reload both are warnings, since a
/// plugin may be on its way back (the profiles keep applying: a tool that
/// comes back under a name they cover is offered, or left out, as before).
fn check_profiles(host: &Arc<Host>, profiles: Arc<Profiles>) -> Result<()> {
    let (unknown, empty) = profiles.unmatched(&host.catalog());
    for warning in &empty {
        eprintln!("toolhost: warning: {warning}");
    }
    if !unknown.is_empty() {
        anyhow::bail!(
            "{} (a plugin that failed to load? see above; a pattern like `name*` may match later)",
            unknown.join("; ")
        );
    }
    let mut generations = host.shared_catalog().subscribe();
    generations.mark_unchanged();
    let host = Arc::downgrade(host);
    tokio::spawn(async move {
        while generations.changed().await.is_ok() {
            let Some(host) = host.upgrade() else { return };
            let (unknown, empty) = profiles.unmatched(&host.catalog());
            for warning in unknown.iter().chain(&empty) {
                eprintln!("toolhost: warning: after the reload, {warning}");
            }
        }
    });
    Ok(())
}

/// With `[state] url`: keeps the quotas in the shared store, and returns it
/// for the tasks. A store that does not answer now is said in one line and
/// the replica starts anyway (calls then follow `on_unavailable` until it is
/// back); only a bad setting stops it.
async fn share_state(host: &Host, config: &Config) -> Result<Option<mcp::state::Store>> {
    let replica = std::env::var(mcp::tasks::REPLICA_ENV).unwrap_or_else(|_| "replica".to_owned());
    let Some(store) = mcp::state::Store::open(&config.state, &replica)? else { return Ok(None) };
    host.share_quotas(Arc::new(mcp::state::quotas::StoreQuotas::new(store.clone())))?;
    match store.ping().await {
        Ok(()) => eprintln!("toolhost: shared state in {}", store.shown()),
        Err(reason) => eprintln!("toolhost: {reason}"),
    }
    Ok(Some(store))
}

/// Watches the plugins folder (unless `--no-watch`) and, with
/// `--include-mcp`, lists again the MCP servers whose tools changed.
fn start_watching(host: &Arc<Host>, dir: &Path, args: &Args) -> Result<Option<Watcher>> {
    if args.include_mcp {
        // A server that says its tools changed is listed again, and the
        // catalog swap tells every MCP client (list_changed).
        let host = Arc::downgrade(host);
        tokio::spawn(async move {
            let mut tick = tokio::time::interval(std::time::Duration::from_millis(250));
            while let Some(host) = (tick.tick().await, host.upgrade()).1 {
                for problem in host.refresh_servers().await {
                    tracing::warn!(server = problem.server, "{}", problem.message);
                }
            }
        });
    }
    if args.no_watch { Ok(None) } else { Watcher::start(host.clone(), dir).map(Some) }
}

/// Resolves at SIGTERM or Ctrl-C (SIGINT).
/// SIGTERM (what an orchestrator sends) or Ctrl-C, listened for from the
/// moment this is called (a signal before anyone awaits it is not lost).
fn shutdown_signal() -> std::pin::Pin<Box<dyn std::future::Future<Output = ()> + Send>> {
    #[cfg(unix)]
    {
        use tokio::signal::unix::{SignalKind, signal};
        if let (Ok(mut terminate), Ok(mut interrupt)) =
            (signal(SignalKind::terminate()), signal(SignalKind::interrupt()))
        {
            return Box::pin(async move {
                tokio::select! {
                    _ = terminate.recv() => {}
                    _ = interrupt.recv() => {}
                }
            });
        }
    }
    Box::pin(async {
        let _ = tokio::signal::ctrl_c().await;
    })
}

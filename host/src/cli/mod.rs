//! The command line. Only this module knows about clap and the terminal: it
//! turns flags into library values, runs a command, and prints the result.

mod asking;
mod audit;
mod call;
mod chat;
mod compile;
mod embed_docs;
mod format;
mod inspect;
mod new;
mod policy;
mod pull;
mod push;
mod run;
mod serve;
mod session;
mod terminal;
mod tools;

use anyhow::{Context, Result};
use clap::{ArgAction, Parser, Subcommand};
use std::path::{Path, PathBuf};
use std::process::ExitCode;
use toolhost::{Config, Host, ProblemKind};

/// The plugins folder used when neither `--plugins` nor the config names one.
const DEFAULT_PLUGINS_DIR: &str = "plugins/dist";

#[derive(Parser)]
#[command(
    name = "toolhost",
    version,
    about = "Run LLM tools as sandboxed WebAssembly components",
    after_help = "Exit status: 0 success; 1 the call failed, or the run ended without an answer; 2 toolhost could not run; 130 cancelled."
)]
struct Cli {
    /// Folder of plugin .wasm files [default: `plugins_dir` from the config, else ./plugins/dist]
    #[arg(long, global = true, env = "TOOLHOST_PLUGINS", value_name = "DIR")]
    plugins: Option<PathBuf>,

    /// Config file [default: ./toolhost.toml when it exists]
    #[arg(long, global = true, env = "TOOLHOST_CONFIG", value_name = "FILE")]
    config: Option<PathBuf>,

    /// More logging on stderr: -v info, -vv debug (plugin output), -vvv trace
    #[arg(short, long, global = true, action = ArgAction::Count)]
    verbose: u8,

    #[command(subcommand)]
    command: Command,
}

#[derive(Subcommand)]
enum Command {
    /// List every loaded tool with its plugin, description and input schema
    #[command(visible_alias = "list")]
    Tools(tools::Args),
    /// Call one tool in a fresh sandbox and print its output and usage
    Call(call::Args),
    /// Show what a .wasm file imports, exports and offers, and whether it loads
    Inspect(inspect::Args),
    /// Ask a model something and let it call the tools until it answers
    Run(run::Args),
    /// Talk with a model over several prompts, letting it call the tools
    Chat(chat::Args),
    /// Serve every tool over MCP (stdio, or Streamable HTTP with --http), reloading changed plugins
    Serve(serve::Args),
    /// Compile the plugins folder into the compile cache ahead of time (an install step, an init container)
    Compile(compile::Args),
    /// Start a plugin project in Rust, Python, JavaScript or C from a template
    New(new::Args),
    /// Copy the doc comments of the WIT a component was built from into it, to describe its tools
    EmbedDocs(embed_docs::Args),
    /// Fetch plugins from an OCI registry into the plugins folder (all of the config's `source`s without REF)
    Pull(pull::Args),
    /// Publish a plugin (and its NAME.toml) to an OCI registry; prints the pushed digest
    Push(push::Args),
    /// Check a signed audit log (`verify`), or make the key pair that signs one (`keygen`)
    Audit(audit::Args),
    /// Turn Wassette permission policies (policy.yaml) into grants in toolhost.toml (`import`)
    Policy(policy::Args),
}

/// Runs the command line and maps the result to an exit status.
pub fn main() -> ExitCode {
    let cli = Cli::parse();
    let runtime = match tokio::runtime::Builder::new_multi_thread().enable_all().build() {
        Ok(runtime) => runtime,
        Err(err) => {
            eprintln!("error: could not start the async runtime: {err}");
            return ExitCode::from(2);
        }
    };
    let outcome = runtime.block_on(run(cli));
    // A compile still running on a blocking thread (a `serve` stopped while
    // plugins compile, a Ctrl-C) is not waited for: its worker dies with
    // toolhost, and what it would have cached is compiled again next time.
    runtime.shutdown_timeout(std::time::Duration::from_millis(100));
    match outcome {
        Ok(code) => code,
        Err(err) if err.is::<Cancelled>() => {
            eprintln!("cancelled");
            ExitCode::from(130)
        }
        Err(err) => {
            eprintln!("error: {err:#}");
            ExitCode::from(2)
        }
    }
}

async fn run(cli: Cli) -> Result<ExitCode> {
    // `new` needs no config: a broken toolhost.toml in the folder must not stop it.
    if let Command::New(args) = &cli.command {
        init_tracing(cli.verbose, None)?;
        return new::run(args);
    }
    // Nor does `embed-docs`, a build step.
    if let Command::EmbedDocs(args) = &cli.command {
        init_tracing(cli.verbose, None)?;
        return embed_docs::run(args);
    }
    // Nor does `audit`: it checks a log with a key given on the command line.
    if let Command::Audit(args) = &cli.command {
        init_tracing(cli.verbose, None)?;
        return audit::run(args);
    }
    // `policy import` may make the config file it is pointed at.
    if let Command::Policy(args) = cli.command {
        init_tracing(cli.verbose, None)?;
        let config = match cli.config.as_deref() {
            Some(path) if path.symlink_metadata().is_err() => Config::default(),
            explicit => Config::discover(explicit)?,
        };
        let dir = plugins_dir(&config, cli.plugins.as_deref());
        return policy::run(&config, cli.config.as_deref(), &dir, args);
    }
    let config = Config::discover(cli.config.as_deref())?;
    // Kept to the end of the command: dropping it sends the last spans.
    let _telemetry = init_tracing(cli.verbose, Some(&config.telemetry))?;
    match cli.command {
        Command::Tools(args) => {
            let host = load(&config, cli.plugins.as_deref()).await?;
            tools::run(&host, &args)
        }
        Command::Call(args) => {
            // One call, and the process ends: an engine sized for that.
            let one_call = toolhost::HostConfig { one_call: true, ..config.clone().into() };
            let host = load_host(one_call, &config, cli.plugins.as_deref()).await?;
            call::run(&host, &config, args).await
        }
        Command::Inspect(args) => {
            let host = Host::new(config)?;
            inspect::run(&host, &args).await
        }
        Command::Run(args) => run::run(load(&config, cli.plugins.as_deref()).await?, &config, args).await,
        Command::Chat(args) => {
            let dir = plugins_dir(&config, cli.plugins.as_deref());
            chat::run(load(&config, cli.plugins.as_deref()).await?, &config, &dir, args).await
        }
        Command::Serve(mut args) => {
            if config.audit.stdout && !args.over_http() {
                anyhow::bail!(
                    "`[audit] stdout = true` cannot be used with `serve` over stdio, whose stdout carries MCP: \
                     give `[audit] file` instead"
                );
            }
            let dir = plugins_dir(&config, cli.plugins.as_deref());
            // MCP servers' tools are re-exported only when asked for.
            let mut config = config;
            if !args.include_mcp {
                config.mcp_servers.clear();
            }
            args.include_mcp &= !config.mcp_servers.is_empty();
            serve::run(config, &dir, args).await
        }
        Command::Compile(args) => {
            let dir = plugins_dir(&config, cli.plugins.as_deref());
            compile::run(config, &dir, args).await
        }
        Command::New(args) => new::run(&args),
        Command::EmbedDocs(args) => embed_docs::run(&args),
        Command::Pull(args) => {
            let dir = plugins_dir(&config, cli.plugins.as_deref());
            pull::run(config, dir, args).await
        }
        Command::Push(args) => push::run(config, args).await,
        Command::Audit(_) | Command::Policy(_) => unreachable!("handled before the config is read"),
    }
}

/// Ctrl-C before a command got going.
#[derive(Debug)]
struct Cancelled;

impl std::fmt::Display for Cancelled {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str("cancelled")
    }
}

impl std::error::Error for Cancelled {}

/// Makes a host, loads the plugins folder and starts the MCP servers (at the
/// same time), printing what could not load; a `required` server that does
/// not start stops toolhost.
/// (Grant notices are printed by the commands: all of them by `tools`, the
/// called plugin's by `call`.)
async fn load(config: &Config, flag: Option<&Path>) -> Result<Host> {
    load_host(config.clone().into(), config, flag).await
}

/// [`load`] into a host made with `host` (`config`'s part for the host, adjusted).
async fn load_host(host: toolhost::HostConfig, config: &Config, flag: Option<&Path>) -> Result<Host> {
    let dir = plugins_dir(config, flag);
    let host = Host::new(host)?;
    load_into(&host, config, &dir).await?;
    Ok(host)
}

/// [`load`] into a host already made (`serve --http` listens meanwhile).
async fn load_into(host: &Host, config: &Config, dir: &Path) -> Result<()> {
    {
        // Loading from the compile cache takes milliseconds; compiling a new
        // or changed plugin can take seconds, so say what is going on then.
        // Ctrl-C while loading ends toolhost like a cancelled call (exit 130);
        // dropping the host stops the MCP servers already started.
        let loading = async { tokio::join!(host.load_dir(dir), host.connect_servers()) };
        let interrupted = tokio::signal::ctrl_c();
        tokio::pin!(loading, interrupted);
        let (loaded, servers) = tokio::select! {
            loaded = &mut loading => loaded,
            _ = &mut interrupted => return Err(Cancelled.into()),
            () = tokio::time::sleep(std::time::Duration::from_millis(400)) => {
                let message = if host.config().mcp_servers.is_empty() {
                    "loading plugins (compiling new ones, cached for next time)"
                } else {
                    "loading plugins and starting MCP servers"
                };
                let spinner = terminal::spinner(message.to_owned());
                let loaded = tokio::select! {
                    loaded = &mut loading => Some(loaded),
                    _ = &mut interrupted => None,
                };
                spinner.finish_and_clear();
                loaded.ok_or(Cancelled)?
            }
        };
        loaded.with_context(|| "could not load plugins".to_owned())?;
        report_servers(servers)?;
    }
    report_loaded(host, config, dir);
    Ok(())
}

/// Says which MCP servers did not start; a `required` one is an error.
fn report_servers(servers: Vec<toolhost::catalog::servers::ServerProblem>) -> Result<()> {
    if let Some(required) = servers.iter().find(|problem| problem.required) {
        anyhow::bail!(
            "{} (the server `{}` is `required`: fix it, or set `required = false` to run without it)",
            required.message,
            required.server
        );
    }
    for problem in servers {
        if problem.tools_kept {
            eprintln!("warning: {}", problem.message);
        } else if problem.joins_later {
            eprintln!("warning: {}; going on without it, its tools join when it is up", problem.message);
        } else {
            eprintln!("warning: {}; its tools are left out", problem.message);
        }
    }
    Ok(())
}

/// Says what of the plugins folder could not load, and where what was
/// pulled no longer matches its lock.
fn report_loaded(host: &Host, config: &Config, dir: &Path) {
    for problem in host.problems() {
        if problem.kind != ProblemKind::Grant {
            eprintln!("warning: skipped {problem}");
        }
    }
    // A Wassette policy beside the plugins is never passed over in silence:
    // toolhost grants only what the config says, so one it does not cover is named.
    let stems: Vec<String> = toolhost::catalog::host::plugin_files(dir)
        .unwrap_or_default()
        .iter()
        .map(|path| toolhost::catalog::host::stem(path))
        .collect();
    for warning in toolhost::grants::wassette::unapplied(dir, &stems, |plugin| host.config().grants_for(plugin)) {
        eprintln!("warning: {warning}");
    }
    let loaded: Vec<(String, String)> =
        host.plugins().iter().map(|plugin| (plugin.name.to_string(), plugin.sha256.clone())).collect();
    for notice in toolhost::oci::check_sources(&config.sources(), dir, &loaded, &config.trust) {
        eprintln!("warning: {notice}");
    }
}

/// The plugins folder: the flag, else the config's `plugins_dir`, else the default.
fn plugins_dir(config: &Config, flag: Option<&Path>) -> PathBuf {
    flag.map(Path::to_path_buf)
        .or_else(|| config.plugins_dir.clone())
        .unwrap_or_else(|| PathBuf::from(DEFAULT_PLUGINS_DIR))
}

/// Logs to stderr (at `warn` unless `-v` or `TOOLHOST_LOG`), and spans to an
/// OTLP collector when `[telemetry]` or the `OTEL_*` variables say so.
fn init_tracing(
    verbose: u8,
    telemetry: Option<&toolhost::telemetry::TelemetryConfig>,
) -> Result<Option<toolhost::telemetry::Telemetry>> {
    use tracing_subscriber::layer::SubscriberExt as _;
    use tracing_subscriber::util::SubscriberInitExt as _;
    use tracing_subscriber::{EnvFilter, Layer as _};
    let default = match verbose {
        // rmcp logs a failed connection and every JSON-RPC error answer (an unknown tool, a cancelled
        // call) as a warning with a Debug dump; what the client got is enough.
        0 => "warn,rmcp=off",
        1 => "info,rmcp=error",
        2 => "debug",
        _ => "trace",
    };
    // TOOLHOST_LOG takes tracing's directive syntax, e.g. `toolhost::plugin=debug`.
    let filter = EnvFilter::try_from_env("TOOLHOST_LOG").unwrap_or_else(|_| EnvFilter::new(default));
    let logs = tracing_subscriber::fmt::layer()
        .with_writer(std::io::stderr)
        // Colour codes only for a person at a terminal, never into a pipe or a file.
        .with_ansi(std::io::IsTerminal::is_terminal(&std::io::stderr()))
        .with_target(verbose >= 3)
        .without_time()
        .with_filter(filter);
    let (telemetry, spans) = match telemetry.map(|config| config.start()).transpose()?.flatten() {
        Some((telemetry, spans)) => (Some(telemetry), Some(spans)),
        None => (None, None),
    };
    let _ = tracing_subscriber::registry().with(logs).with(spans).try_init();
    Ok(telemetry)
}

//! `toolhost call TOOL 'JSON'`: one call, its output and what it consumed.

use super::format;
use anyhow::{Context, Result};
use serde_json::{Value, json};
use std::io::Read;
use std::process::ExitCode;
use toolhost::runtime::content::Content;
use toolhost::{ByteSize, CallReport, Config, Host, HumanDuration, LimitOverrides, ToolOutput};

#[derive(clap::Args)]
pub struct Args {
    /// The tool to call (see `toolhost tools`)
    tool: String,

    /// Arguments as a JSON object; `-` reads them from stdin [default: {}]
    arguments: Option<String>,

    /// Fuel (instructions) this call may use, e.g. 500000000
    #[arg(long, value_name = "N")]
    fuel: Option<u64>,

    /// Memory this call may use, e.g. 64MiB
    #[arg(long, value_name = "SIZE")]
    memory: Option<ByteSize>,

    /// Wall-clock time this call may take, e.g. 5s or 500ms
    #[arg(long, value_name = "DURATION")]
    timeout: Option<HumanDuration>,

    /// Output this call may return, e.g. 256KiB
    #[arg(long, value_name = "SIZE")]
    max_output: Option<ByteSize>,

    /// HTTP request body bytes this call may send, all requests together, e.g. 64KiB
    #[arg(long, value_name = "SIZE")]
    http_request_body: Option<ByteSize>,

    /// Print one JSON object with the outcome, usage and captured output
    #[arg(long)]
    json: bool,

    /// PROVIDER/MODEL that answers the tool's sampling requests (contract 0.2.0),
    /// e.g. openai/gpt-4.1; without it they are refused as unsupported
    #[arg(long, short = 'm', value_name = "PROVIDER/MODEL")]
    model: Option<String>,

    /// The model provider's base URL, e.g. http://127.0.0.1:8080/v1 (with --model)
    #[arg(long, value_name = "URL", requires = "model")]
    base_url: Option<String>,
}

pub async fn run(host: &Host, config: &Config, args: Args) -> Result<ExitCode> {
    let arguments = match args.arguments.as_deref() {
        Some("-") => {
            let mut text = String::new();
            std::io::stdin().read_to_string(&mut text).context("could not read the arguments from stdin")?;
            text
        }
        Some(text) => text.to_owned(),
        None => "{}".to_owned(),
    };
    let overrides = LimitOverrides {
        fuel: args.fuel,
        memory: args.memory,
        timeout: args.timeout,
        output: args.max_output,
        http_request_body: args.http_request_body,
        ..LimitOverrides::default()
    };
    let catalog = host.catalog();
    // Progress reports (contract 0.2.0) on stderr as they come; with
    // `--json`, only in the report's logs.
    let progress: Option<toolhost::runtime::sandbox::ProgressObserver> = (!args.json).then(|| {
        std::sync::Arc::new(|progress: toolhost::runtime::sandbox::Progress| {
            let done = match progress.total {
                Some(total) => format!("{}/{total}", progress.done),
                None => progress.done.to_string(),
            };
            match progress.message {
                Some(message) => eprintln!("progress {done}: {message}"),
                None => eprintln!("progress {done}"),
            }
        }) as toolhost::runtime::sandbox::ProgressObserver
    });
    // What the tool asks: the user at the terminal (no terminal: declined),
    // the model with --model (else unsupported), the working folder as roots.
    let model = match &args.model {
        Some(spec) => Some(super::session::model_client(config, spec, args.base_url.as_deref())?),
        None => None,
    };
    let quiet = args.json;
    let on_sampled: toolhost::agent::asking::OnSampled = std::sync::Arc::new(move |model, usage| {
        if !quiet {
            eprintln!("sampled by {model}: {} + {} tokens", usage.input, usage.output);
        }
    });
    let person = super::asking::TerminalAsker::on_terminal(
        super::terminal::Terminal::new(false),
        super::terminal::Input::stdin(),
    );
    let asker = toolhost::agent::asking::ModelAsker {
        model,
        why_no_model: "sampling needs a model here: run `toolhost call` with --model PROVIDER/MODEL".to_owned(),
        person: person.map(|person| std::sync::Arc::new(person) as std::sync::Arc<dyn toolhost::runtime::ask::Asker>),
        on_sampled: Some(on_sampled),
    };
    let hooks =
        toolhost::runtime::sandbox::CallHooks { progress, asker: Some(std::sync::Arc::new(asker)), result_shape: None };
    let caller = toolhost::Caller::on("call");
    let call = host.call_as(&catalog, &args.tool, &arguments, &overrides, hooks, &caller);
    let report = tokio::select! {
        report = call => report,
        _ = tokio::signal::ctrl_c() => {
            // Dropping the call cancels it (an MCP server is sent
            // `notifications/cancelled`); the host's servers stop with it.
            eprintln!("cancelled");
            return Ok(ExitCode::from(130));
        }
    };
    let external = catalog.find(&args.tool).and_then(|entry| entry.mcp_server()).map(|server| server.name().to_owned());
    if let Some(plugin) = catalog.find(&args.tool).and_then(|entry| entry.plugin()) {
        for notice in &plugin.notices {
            eprintln!("warning: {}: {notice}", plugin.path.display());
        }
    }
    if args.json {
        println!("{}", serde_json::to_string_pretty(&as_json(&report))?);
    } else {
        show(&report, external.as_deref());
    }
    Ok(if report.outcome.is_ok() { ExitCode::SUCCESS } else { ExitCode::FAILURE })
}

fn show(report: &CallReport, server: Option<&str>) {
    match &report.outcome {
        Ok(ToolOutput::Text(text)) => println!("{text}"),
        Ok(ToolOutput::Json(text)) => match serde_json::from_str::<Value>(text) {
            Ok(value) => println!("{}", serde_json::to_string_pretty(&value).unwrap_or_else(|_| text.clone())),
            Err(_) => println!("{text}"),
        },
        Ok(ToolOutput::Content(blocks)) => {
            // Text as it is, the JSON pretty, a line for each other block.
            for block in blocks {
                match &block.content {
                    Content::Text { text } => println!("{text}"),
                    Content::Json { json, .. } => match block.content.json_value() {
                        Some(value) => {
                            println!("{}", serde_json::to_string_pretty(&value).unwrap_or_else(|_| json.clone()))
                        }
                        None => println!("{json}"),
                    },
                    _ => println!("{}", toolhost::runtime::content::as_text(std::slice::from_ref(block))),
                }
            }
        }
        Err(err @ toolhost::CallError::UnknownTool { .. }) => {
            // The message names the tool already, and there is no usage to show.
            eprintln!("error: {err}");
            return;
        }
        Err(err) => eprintln!("error: {}: {err}", report.tool),
    }
    for refusal in &report.refused {
        eprintln!("refused: {refusal}");
    }
    let usage = &report.usage;
    let status = if report.outcome.is_ok() { "ok" } else { "failed" };
    let http = if usage.http_requests > 0 {
        let plural = if usage.http_requests == 1 { "" } else { "s" };
        format!(
            " · {} HTTP request{plural}, {} sent, {} received",
            usage.http_requests,
            ByteSize(usage.http_request_bytes),
            ByteSize(usage.http_response_bytes)
        )
    } else {
        String::new()
    };
    if let Some(server) = server {
        eprintln!("{status} · {} · {} · MCP server {server}", report.tool, format::duration(usage.wall));
        return;
    }
    eprintln!(
        "{status} · {} · {} · fuel {} · memory {}{http}",
        report.tool,
        format::duration(usage.wall),
        format::thousands(usage.fuel),
        ByteSize(usage.memory_peak),
    );
}

fn as_json(report: &CallReport) -> Value {
    let mut value = json!({
        "tool": report.tool,
        "plugin": report.plugin,
        "ok": report.outcome.is_ok(),
        "usage": report.usage,
        "cached": report.cached.map(|age| json!({"age_ms": u64::try_from(age.as_millis()).unwrap_or(u64::MAX)})),
        "stdout": report.stdout,
        "stderr": report.stderr,
        "logs": report.logs,
        "refused": report.refused.iter().map(|refusal| {
            let mut entry = json!(refusal);
            entry["message"] = json!(refusal.to_string());
            entry
        }).collect::<Vec<_>>(),
    });
    match &report.outcome {
        Ok(output) => value["output"] = json!(output),
        Err(err) => {
            value["error"] = json!({ "kind": err.kind(), "message": err.to_string() });
            if let Some(wait) = err.retry_after() {
                value["error"]["retry_after_ms"] = json!(wait.as_millis() as u64);
            }
        }
    }
    value
}

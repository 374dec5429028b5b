//! `toolhost inspect FILE.wasm`: what a file is and whether it loads.

use super::format;
use anyhow::Result;
use serde_json::json;
use std::path::PathBuf;
use std::process::ExitCode;
use toolhost::runtime::cache::Origin;
use toolhost::{ByteSize, Host, HumanDuration, Inspection};

#[derive(clap::Args)]
pub struct Args {
    /// The .wasm file to inspect
    file: PathBuf,

    /// Print one JSON object
    #[arg(long)]
    json: bool,
}

pub async fn run(host: &Host, args: &Args) -> Result<ExitCode> {
    let found = host.inspect(&args.file).await;
    if args.json {
        println!("{}", serde_json::to_string_pretty(&as_json(&found))?);
    } else {
        show(&found);
    }
    Ok(if found.error.is_none() { ExitCode::SUCCESS } else { ExitCode::FAILURE })
}

fn show(found: &Inspection) {
    println!("{}", found.path.display());
    if let (Some(size), Some(sha256)) = (found.size, &found.sha256) {
        println!("  size      {} bytes ({})", format::thousands(size), ByteSize(size));
        println!("  sha256    {sha256}");
    }
    if let Some(uses) = &found.uses {
        if !uses.wasi.is_empty() {
            let mixed = if uses.wasi.len() > 1 { " (both)" } else { "" };
            println!("  wasi      {}{mixed}", uses.wasi.join(" and "));
        }
        if !uses.async_features.is_empty() {
            println!("  async     {}", uses.async_features.join(", "));
        }
        println!("  engine    {}", engine_line(uses));
    }
    if let Some((origin, took)) = found.compile {
        let how = match origin {
            Origin::Cached => "loaded from the compile cache",
            Origin::Compiled => "compiled",
        };
        println!("  compile   {how} in {}", format::duration(took));
    }
    if let Some(contract) = found.contract {
        match contract {
            toolhost::plugin::TYPED => println!("  contract  none: its exported typed functions are its tools"),
            version => println!("  contract  toolhost:plugin@{version}"),
        }
    }
    if let Some(shape) = &found.shape {
        println!("  imports");
        for import in &shape.imports {
            println!("    {import}");
        }
        println!("  exports");
        for (export, functions) in &shape.exports {
            if functions.is_empty() {
                println!("    {export}");
            } else {
                println!("    {export}: {}", functions.join(", "));
            }
        }
    }
    let limits = &found.limits;
    println!(
        "  limits    fuel {} · memory {} · timeout {} · output {}",
        format::thousands(limits.fuel),
        limits.memory,
        HumanDuration(limits.timeout),
        limits.output
    );
    println!(
        "            http {} requests · {} of request bodies · {} of responses ({} when over) · {} per request",
        limits.http_requests,
        limits.http_request_body,
        limits.http_response,
        limits.http_oversized.as_str(),
        HumanDuration(limits.http_timeout)
    );
    println!("  grants");
    for line in format::grants(found.asks.as_ref(), &found.grants) {
        println!("    {line}");
    }
    for notice in &found.notices {
        println!("    note: {notice}");
    }
    if !found.tools.is_empty() {
        println!("  tools");
        for tool in &found.tools {
            let summary = toolhost::runtime::text::printable(tool.description.lines().next().unwrap_or_default());
            println!("    {}  {summary}", tool.name);
        }
    }
    let offers = &found.offers;
    let described = |description: &Option<String>| {
        let first = description.as_deref().and_then(|text| text.lines().next()).unwrap_or_default();
        if first.is_empty() { String::new() } else { format!("  {first}") }
    };
    if !offers.resources.is_empty() || !offers.templates.is_empty() {
        println!("  resources");
        for resource in &offers.resources {
            println!("    {}{}", resource.uri, described(&resource.description));
        }
        for template in &offers.templates {
            println!("    {}{}", template.uri_template, described(&template.description));
        }
    }
    if !offers.prompts.is_empty() {
        println!("  prompts");
        for prompt in &offers.prompts {
            println!("    {}{}", prompt.name, described(&prompt.description));
        }
    }
    if let Some(error) = &found.error {
        eprintln!("error: {}: {error}", found.path.display());
    }
}

/// Which engine calls of the component run in, and why (see
/// `runtime::engine::Flavor`).
fn engine_line(uses: &toolhost::runtime::features::Uses) -> String {
    use toolhost::runtime::engine::{Flavor, LEAN_KEEP_RESIDENT};
    let memory = uses.largest_memory.map(|bytes| format!("{} to start", ByteSize(bytes)));
    match Flavor::of(uses) {
        Flavor::Lean => format!("lean (synchronous ABI, memory {})", memory.unwrap_or_default()),
        Flavor::Full if !uses.synchronous || !uses.async_features.is_empty() => {
            "full (the component model's concurrency support)".to_owned()
        }
        Flavor::Full if uses.wasi.iter().any(|version| version == "0.3") => "full (WASI 0.3)".to_owned(),
        Flavor::Full => match memory {
            Some(memory) => {
                format!("full (memory {memory}, over the lean engine's {})", ByteSize(LEAN_KEEP_RESIDENT as u64))
            }
            None => "full".to_owned(),
        },
    }
}

fn as_json(found: &Inspection) -> serde_json::Value {
    json!({
        "path": found.path.display().to_string(),
        "size": found.size,
        "sha256": found.sha256,
        "compile": found.compile.map(|(origin, took)| json!({
            "cached": origin == Origin::Cached,
            "ms": took.as_secs_f64() * 1_000.0,
        })),
        "wasi": found.uses.as_ref().map(|uses| &uses.wasi),
        "async": found.uses.as_ref().map(|uses| &uses.async_features),
        "engine": found.uses.as_ref().map(|uses| toolhost::runtime::engine::Flavor::of(uses).name()),
        "contract": found.contract,
        "imports": found.shape.as_ref().map(|shape| &shape.imports),
        "exports": found.shape.as_ref().map(|shape| shape.exports.iter().map(|(name, functions)| {
            json!({ "name": name, "functions": functions })
        }).collect::<Vec<_>>()),
        "limits": {
            "fuel": found.limits.fuel,
            "memory": found.limits.memory.bytes(),
            "timeout_ms": found.limits.timeout.as_millis() as u64,
            "output": found.limits.output.bytes(),
            "http_requests": found.limits.http_requests,
            "http_request_body": found.limits.http_request_body.bytes(),
            "http_response": found.limits.http_response.bytes(),
            "http_oversized": found.limits.http_oversized.as_str(),
            "http_timeout_ms": found.limits.http_timeout.as_millis() as u64,
        },
        "asks": found.asks.as_ref().map(|asks| asks.to_json()),
        "grants": found.grants.to_json(),
        "notices": found.notices,
        "tools": found.tools.iter().map(|tool| json!({
            "name": tool.name,
            "description": tool.description,
            "input_schema": tool.schema,
        })).collect::<Vec<_>>(),
        "resources": found.offers.resources,
        "resource_templates": found.offers.templates,
        "prompts": found.offers.prompts,
        "error": found.error,
    })
}

//! `toolhost tools`: what the loaded plugins offer.

use super::format;
use anyhow::Result;
use serde_json::{Value, json};
use std::process::ExitCode;
use toolhost::{Host, ProblemKind};

#[derive(clap::Args)]
pub struct Args {
    /// Print a JSON array: name, plugin, description, input_schema, path, asks, grants
    #[arg(long)]
    json: bool,
}

pub fn run(host: &Host, args: &Args) -> Result<ExitCode> {
    let catalog = host.catalog();
    for problem in catalog.problems() {
        if problem.kind == ProblemKind::Grant {
            eprintln!("warning: {problem}");
        }
    }
    let tools = catalog.tools();
    if args.json {
        let listed: Vec<Value> = tools
            .iter()
            .map(|entry| {
                let mut listed = json!({
                    "name": entry.name(),
                    "plugin": entry.origin(),
                    "description": entry.description(),
                    "input_schema": entry.schema(),
                    "path": entry.location().display().to_string(),
                });
                if let Some(server) = entry.mcp_server() {
                    listed["source"] = json!("mcp");
                    listed["server"] = json!(server.name());
                    listed["external"] = json!(true);
                    listed["sandboxed"] = json!(false);
                } else {
                    listed["source"] = json!("plugin");
                }
                if let Some(plugin) = entry.plugin() {
                    listed["asks"] = json!(plugin.asks.as_ref().map(|asks| asks.to_json()));
                    listed["grants"] = plugin.grants.to_json();
                    listed["notices"] = json!(plugin.notices);
                }
                listed
            })
            .collect();
        println!("{}", serde_json::to_string_pretty(&listed)?);
        return Ok(ExitCode::SUCCESS);
    }
    if tools.is_empty() {
        eprintln!("no tools loaded");
        return Ok(ExitCode::SUCCESS);
    }
    for entry in tools {
        match entry.mcp_server() {
            Some(server) => println!("{}  (MCP server {}: external, not sandboxed)", entry.name(), server.name()),
            None => println!("{}  (plugin {})", entry.name(), entry.origin()),
        }
        for line in entry.description().lines() {
            println!("    {line}");
        }
        for line in arguments(entry.schema()) {
            println!("    · {line}");
        }
        println!();
    }
    for plugin in catalog.plugins() {
        if plugin.asks.is_none() && plugin.grants.is_empty() {
            continue;
        }
        println!("plugin {}", plugin.name);
        for line in format::grants(plugin.asks.as_ref(), &plugin.grants) {
            println!("    {line}");
        }
        println!();
    }
    let servers: std::collections::BTreeSet<&str> =
        tools.iter().filter_map(|entry| entry.mcp_server()).map(|server| server.name()).collect();
    if servers.is_empty() {
        eprintln!("{} tools from {} plugins", tools.len(), catalog.plugins().len());
    } else {
        eprintln!("{} tools from {} plugins and {} MCP servers", tools.len(), catalog.plugins().len(), servers.len());
    }
    Ok(ExitCode::SUCCESS)
}

/// One line per top-level argument: `name: type (required) — description`.
fn arguments(schema: &Value) -> Vec<String> {
    let Some(properties) = schema.get("properties").and_then(Value::as_object) else {
        return vec!["no arguments".to_owned()];
    };
    let required: Vec<&str> = schema
        .get("required")
        .and_then(Value::as_array)
        .map(|names| names.iter().filter_map(Value::as_str).collect())
        .unwrap_or_default();
    properties
        .iter()
        .map(|(name, property)| {
            let kind = match property.get("type") {
                Some(Value::String(kind)) => kind.clone(),
                Some(Value::Array(kinds)) => kinds.iter().filter_map(Value::as_str).collect::<Vec<_>>().join(" | "),
                _ if property.get("enum").is_some() => "enum".to_owned(),
                _ => "any".to_owned(),
            };
            let mut line = format!("{name}: {kind}");
            if required.contains(&name.as_str()) {
                line.push_str(" (required)");
            }
            if let Some(description) = property.get("description").and_then(Value::as_str) {
                line.push_str(" — ");
                line.push_str(description.lines().next().unwrap_or_default());
            }
            line
        })
        .collect()
}

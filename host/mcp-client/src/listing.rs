//! What a server lists, taken tool by tool: one malformed tool, a name
//! listed twice or noise on a stdio server's stdout costs that tool (or
//! nothing), never the server's other tools; and each such problem is said
//! once per server, not at every listing.

use rmcp::RoleClient;
use rmcp::model::{ClientRequest, CustomRequest, CustomResult, ServerResult, Tool};
use rmcp::service::{Peer, ServiceError};
use serde_json::{Value, json};
use std::collections::{HashSet, VecDeque};
use std::sync::Mutex;
use tokio::io::{AsyncBufReadExt, AsyncReadExt, AsyncWriteExt};

/// The most pages of tools read from one server.
const MAX_PAGES: usize = 100;

/// The longest line a stdio server may write (a tool list of many tools
/// with large schemas is one line).
const MAX_LINE: usize = 16 << 20;

/// Problems with what a server sent that left something out, each said once.
#[derive(Default)]
pub(crate) struct Notes {
    pending: Mutex<VecDeque<String>>,
    said: Mutex<HashSet<String>>,
}

impl Notes {
    /// Adds `note` unless it was added before.
    pub(crate) fn add(&self, note: String) {
        if self.said.lock().unwrap_or_else(|p| p.into_inner()).insert(note.clone()) {
            self.pending.lock().unwrap_or_else(|p| p.into_inner()).push_back(note);
        }
    }

    /// The notes not taken yet.
    pub(crate) fn take(&self) -> Vec<String> {
        self.pending.lock().unwrap_or_else(|p| p.into_inner()).drain(..).collect()
    }
}

/// Every tool the server lists. rmcp reads a listing as a whole, so one tool
/// it cannot read fails all of them: then the listing is asked for again and
/// read tool by tool, and each tool that cannot be read is a note.
pub(crate) async fn list_tools(
    peer: &Peer<RoleClient>,
    server: &str,
) -> Result<(Vec<Tool>, Vec<String>), ServiceError> {
    match peer.list_all_tools().await {
        Err(ServiceError::UnexpectedResponse) => {}
        other => return other.map(|tools| (tools, Vec::new())),
    }
    let mut tools = Vec::new();
    let mut notes = Vec::new();
    let mut cursor: Option<String> = None;
    for _ in 0..MAX_PAGES {
        let params = cursor.take().map(|cursor| json!({ "cursor": cursor }));
        let page = peer.send_request(ClientRequest::CustomRequest(CustomRequest::new("tools/list", params))).await?;
        let next = match page {
            ServerResult::ListToolsResult(page) => {
                tools.extend(page.tools);
                page.next_cursor
            }
            ServerResult::CustomResult(CustomResult(page)) => {
                let Some(listed) = page.get("tools").and_then(Value::as_array) else {
                    return Err(ServiceError::UnexpectedResponse);
                };
                for (position, tool) in listed.iter().enumerate() {
                    match serde_json::from_value::<Tool>(tool.clone()) {
                        Ok(tool) => tools.push(tool),
                        Err(err) => {
                            let name = match tool.get("name").and_then(Value::as_str) {
                                Some(name) => format!("`{}`", clip(name, 64)),
                                None => format!("number {}", position + 1),
                            };
                            notes.push(format!(
                                "MCP server `{server}`: its tool {name} is left out, as it is not a valid MCP tool: {}",
                                clip(&err.to_string(), 200)
                            ));
                        }
                    }
                }
                page.get("nextCursor").and_then(Value::as_str).map(str::to_owned)
            }
            _ => return Err(ServiceError::UnexpectedResponse),
        };
        match next {
            Some(next) => cursor = Some(next),
            None => break,
        }
    }
    Ok((tools, notes))
}

/// The tools that can be offered: the first of each name (a later one with
/// the same name is a note) whose input schema describes an object in valid
/// JSON Schema (else a note).
pub(crate) fn usable<'a>(server: &str, tools: impl IntoIterator<Item = &'a Tool>) -> (Vec<&'a Tool>, Vec<String>) {
    let mut seen = HashSet::new();
    let mut twice = Vec::new();
    let mut kept = Vec::new();
    let mut notes = Vec::new();
    for tool in tools {
        if !seen.insert(&*tool.name) {
            if !twice.contains(&&*tool.name) {
                twice.push(&*tool.name);
            }
            continue;
        }
        match schema_problem(&tool.input_schema) {
            None => kept.push(tool),
            Some(why) => notes.push(format!(
                "MCP server `{server}`: its tool `{}` is left out, as its input schema {why}",
                clip(&tool.name, 64)
            )),
        }
    }
    for name in twice {
        notes.push(format!(
            "MCP server `{server}` lists the tool `{}` more than once: the first is offered, the others are left out",
            clip(name, 64)
        ));
    }
    (kept, notes)
}

/// Why a tool's input schema cannot be offered to a model, if it cannot.
fn schema_problem(schema: &serde_json::Map<String, Value>) -> Option<String> {
    if schema.get("type").and_then(Value::as_str) != Some("object") {
        return Some("does not describe an object (`\"type\": \"object\"`), which MCP requires".to_owned());
    }
    let schema = Value::Object(schema.clone());
    match jsonschema::meta::validate(&schema) {
        Ok(()) => None,
        Err(err) => Some(format!("is not valid JSON Schema: {}", clip(&err.to_string(), 200))),
    }
}

/// Passes the JSON-RPC lines of a stdio server's stdout on to rmcp; any
/// other line (a library printing to stdout, say) is dropped, and noted once
/// per server with the first such line.
pub(crate) async fn filter_stdout(
    stdout: tokio::process::ChildStdout,
    mut to_rmcp: tokio::io::DuplexStream,
    server: std::sync::Arc<str>,
    notes: std::sync::Arc<Notes>,
    scrub: impl Fn(String) -> String,
) {
    let mut reader = tokio::io::BufReader::new(stdout);
    let mut line = Vec::new();
    let mut dropped = 0u64;
    loop {
        line.clear();
        match (&mut reader).take(MAX_LINE as u64 + 1).read_until(b'\n', &mut line).await {
            Ok(0) | Err(_) => break,
            Ok(_) => {}
        }
        if line.len() > MAX_LINE {
            notes.add(format!(
                "MCP server `{server}` wrote a line over {} MiB to its stdout: it was stopped",
                MAX_LINE >> 20
            ));
            break;
        }
        let text = line.trim_ascii();
        if text.is_empty() {
            continue;
        }
        // A JSON-RPC message is an object (or a batch's array); rmcp parses
        // it, so it is not parsed here too. Anything else is noise.
        if matches!(text.first(), Some(b'{' | b'[')) {
            if to_rmcp.write_all(text).await.is_err() || to_rmcp.write_all(b"\n").await.is_err() {
                break;
            }
            continue;
        }
        dropped += 1;
        if dropped == 1 {
            let shown = scrub(String::from_utf8_lossy(text).into_owned());
            notes.add(format!(
                "MCP server `{server}` writes lines that are not JSON-RPC to its stdout, which MCP keeps for \
                 protocol messages (they are ignored; a server should log to stderr), the first: `{}`",
                clip(&shown, 100)
            ));
        }
    }
    let _ = to_rmcp.shutdown().await;
}

/// `text` cut to `max` characters, with `…` when cut, on one line.
fn clip(text: &str, max: usize) -> String {
    let one_line: String = text.chars().map(|c| if c.is_control() { ' ' } else { c }).collect();
    match one_line.char_indices().nth(max) {
        Some((cut, _)) => format!("{}…", &one_line[..cut]),
        None => one_line,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn tool(name: &str, schema: Value) -> Tool {
        serde_json::from_value(json!({"name": name, "inputSchema": schema})).unwrap()
    }

    #[test]
    fn keeps_the_first_of_a_name_and_the_tools_with_usable_schemas() {
        let tools = [
            tool("a", json!({"type": "object"})),
            tool("b", json!({"type": "string"})),
            tool("a", json!({"type": "object", "properties": {}})),
            tool("c", json!({"type": "object", "properties": {"x": {"type": 5}}})),
            tool("d", json!({"type": "object", "properties": {"x": {"type": "string"}}})),
            tool("a", json!({"type": "object"})),
        ];
        let (kept, notes) = usable("s", &tools);
        let names: Vec<&str> = kept.iter().map(|tool| &*tool.name).collect();
        assert_eq!(names, ["a", "d"]);
        assert_eq!(notes.len(), 3, "{notes:?}");
        assert!(notes[0].contains("`b`") && notes[0].contains("does not describe an object"), "{notes:?}");
        assert!(notes[1].contains("`c`") && notes[1].contains("not valid JSON Schema"), "{notes:?}");
        assert!(notes[2].contains("lists the tool `a` more than once"), "{notes:?}");
    }

    #[test]
    fn a_note_is_given_once() {
        let notes = Notes::default();
        notes.add("x".to_owned());
        notes.add("x".to_owned());
        assert_eq!(notes.take(), ["x"]);
        notes.add("x".to_owned());
        assert!(notes.take().is_empty());
    }
}

//! A call of a server's tool: sent under the call's timeout (a dropped
//! future cancels the request), its result turned into toolhost's outcome
//! within the output limit, a stopped server's failure said as such.

use super::{McpServer, McpTool, State};
use rmcp::RoleClient;
use rmcp::model::{CallToolRequestParams, CallToolResult, ContentBlock, ResourceContents};
use rmcp::service::{Peer, ServiceError};
use serde_json::Value;
use std::sync::atomic::Ordering;
use std::time::{Duration, Instant};
use toolhost_runtime::limits::Limits;
use toolhost_runtime::outcome::{CallError, CallReport, LogRecord, ToolOutput, Usage};

impl McpServer {
    /// Calls the server's `tool` with `arguments` (a JSON object as text;
    /// blank means `{}`), within `limits.timeout` and `limits.output`.
    pub async fn call(&self, tool: &McpTool, arguments: &str, limits: &Limits) -> CallReport {
        let span = tracing::info_span!("mcp_server_call", server = %self.name, tool = %tool.name);
        tracing::Instrument::instrument(self.call_unspanned(tool, arguments, limits), span).await
    }

    async fn call_unspanned(&self, tool: &McpTool, arguments: &str, limits: &Limits) -> CallReport {
        let started = Instant::now();
        let mut report = CallReport::rejected(&tool.name, Some(self.name.to_string()), CallError::Host(String::new()));
        report.outcome = self.call_inner(tool, arguments, limits, &mut report.logs).await;
        report.usage = Usage { wall: started.elapsed(), ..Usage::default() };
        report
    }

    async fn call_inner(
        &self,
        tool: &McpTool,
        arguments: &str,
        limits: &Limits,
        logs: &mut Vec<LogRecord>,
    ) -> Result<ToolOutput, CallError> {
        let arguments = if arguments.trim().is_empty() { "{}" } else { arguments };
        let arguments = match serde_json::from_str::<Value>(arguments) {
            Ok(Value::Object(object)) => object,
            Ok(_) => return Err(CallError::InvalidArguments("the arguments must be a JSON object".to_owned())),
            Err(err) => return Err(CallError::InvalidArguments(format!("the arguments are not valid JSON: {err}"))),
        };
        let (peer, connection) = {
            let mut state = self.state.lock().await;
            let fresh = !matches!(*state, State::Up(_));
            self.connect_locked(&mut state).await.map_err(CallError::Host)?;
            let State::Up(live) = &*state else { unreachable!("connect_locked leaves the server up or fails") };
            if fresh && live.id > 1 {
                // Restarted: its tools may differ; list them again before the next turn.
                self.changed.store(true, Ordering::SeqCst);
                logs.push(LogRecord {
                    level: "info",
                    message: format!("MCP server `{}` was started again", self.name),
                    fields: Vec::new(),
                });
            }
            (live.service.peer().clone(), live.id)
        };
        let params = CallToolRequestParams::new(tool.wire_name.clone()).with_arguments(arguments);
        let result = match tokio::time::timeout(limits.timeout, call_tool(&peer, params)).await {
            // Dropping the request on timeout sends `notifications/cancelled`.
            Err(_) if limits.timeout == self.config.tool_timeout => {
                return Err(CallError::ToolTimeout { limit: limits.timeout, server: self.name.to_string() });
            }
            // The caller's own limit (`call --timeout`).
            Err(_) => return Err(CallError::Timeout { limit: limits.timeout }),
            Ok(result) => result,
        };
        match result {
            Ok(result) => self.outcome(result, limits),
            Err(ServiceError::McpError(error)) => {
                let message = self.scrub(error.message.to_string());
                within_output_limit(&message, limits)?;
                if error.code == rmcp::model::ErrorCode::INVALID_PARAMS {
                    Err(CallError::InvalidArguments(message))
                } else {
                    Err(CallError::ToolFailed(message))
                }
            }
            Err(err @ (ServiceError::TransportClosed | ServiceError::TransportSend(_))) => {
                let mut state = self.state.lock().await;
                if let State::Up(live) = &*state
                    && live.id == connection
                {
                    // Let the child's last words arrive before reporting them.
                    tokio::time::sleep(Duration::from_millis(50)).await;
                    *state = State::stopped(live, self.stopped_message());
                }
                let when = match &*state {
                    State::Down { retry_at, .. } if *retry_at > Instant::now() => format!(
                        "at the first call after {:.1}s (it keeps failing)",
                        retry_at.duration_since(Instant::now()).as_secs_f64()
                    ),
                    _ => "on the next call".to_owned(),
                };
                // rmcp names its transport's Rust type in the text; the
                // person needs what happened: its input closed, its output ended.
                let why = match &err {
                    ServiceError::TransportSend(_) => {
                        let text = err.to_string();
                        let cause = text.rsplit("error: ").next().unwrap_or_default().trim().to_owned();
                        format!("it stopped reading its input: {cause}")
                    }
                    _ => "its output ended".to_owned(),
                };
                Err(CallError::Host(format!(
                    "MCP server `{}` stopped during the call ({}){}; toolhost starts it again {when}",
                    self.name,
                    self.scrub(why),
                    self.stderr_tail()
                )))
            }
            Err(err) => Err(CallError::Host(format!("MCP server `{}`: {}", self.name, self.scrub(err.to_string())))),
        }
    }

    /// The call's result as toolhost's outcome.
    fn outcome(&self, result: CallToolResult, limits: &Limits) -> Result<ToolOutput, CallError> {
        let text = self.scrub(content_text(&result.content));
        let output = match (&result.structured_content, result.is_error) {
            (Some(structured), Some(false) | None) => {
                ToolOutput::Json(self.scrub(serde_json::to_string(structured).unwrap_or_default()))
            }
            _ => ToolOutput::Text(text),
        };
        within_output_limit(&output.as_str(), limits)?;
        if result.is_error == Some(true) {
            let message = output.as_str();
            return Err(CallError::ToolFailed(if message.is_empty() {
                "(no message)".to_owned()
            } else {
                message.into_owned()
            }));
        }
        Ok(output)
    }
}

/// Sends `tools/call`; dropping the future before the answer cancels the request.
async fn call_tool(peer: &Peer<RoleClient>, params: CallToolRequestParams) -> Result<CallToolResult, ServiceError> {
    peer.call_tool(params).await
}

fn within_output_limit(text: &str, limits: &Limits) -> Result<(), CallError> {
    if text.len() as u64 > limits.output.bytes() {
        return Err(CallError::OutputTooLarge {
            size: Some(toolhost_runtime::limits::ByteSize(text.len() as u64)),
            limit: limits.output,
        });
    }
    Ok(())
}

/// The content blocks as text: text as is, other kinds described in one line.
fn content_text(content: &[ContentBlock]) -> String {
    let parts: Vec<String> = content
        .iter()
        .map(|block| match block {
            ContentBlock::Text(text) => text.text.clone(),
            ContentBlock::Image(image) => format!("[image: {}, {} bytes of base64]", image.mime_type, image.data.len()),
            ContentBlock::Audio(audio) => format!("[audio: {}, {} bytes of base64]", audio.mime_type, audio.data.len()),
            ContentBlock::Resource(embedded) => match &embedded.resource {
                ResourceContents::TextResourceContents { text, .. } => text.clone(),
                ResourceContents::BlobResourceContents { uri, blob, .. } => {
                    format!("[resource {uri}: {} bytes of base64]", blob.len())
                }
                _ => "[a resource of a kind toolhost does not know]".to_owned(),
            },
            ContentBlock::ResourceLink(link) => format!("[resource link: {}]", link.uri),
            _ => "[content of a kind toolhost does not know]".to_owned(),
        })
        .collect();
    parts.join("\n")
}

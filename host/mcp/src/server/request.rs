//! What every request that runs plugin code needs around its call, in both
//! revisions (the handler's and 2025-11-25 tasks'): its span, continuing the
//! client's trace; its arguments as the host takes them; and its progress
//! forwarded to the client.

use super::*;

/// The span of an MCP request, continuing the client's trace: the
/// `traceparent` in the request's `_meta`, else in its HTTP headers.
pub(crate) fn request_span(method: &str, name: &str, context: &RequestContext<RoleServer>) -> tracing::Span {
    let span = tracing::info_span!("mcp_request", method = %method, name = %name);
    if span.is_disabled() {
        return span;
    }
    let header = context.extensions.get::<http::request::Parts>().and_then(|parts| parts.headers.get("traceparent"));
    let traceparent = context
        .meta
        .get_traceparent()
        .map(str::to_owned)
        .or_else(|| header.and_then(|value| value.to_str().ok()).map(str::to_owned));
    if let Some(traceparent) = traceparent {
        toolhost_runtime::trace::continue_from(&span, &traceparent);
    }
    span
}

/// A call's arguments as the host takes them: JSON text (`{}` when none).
pub(crate) fn arguments_text(arguments: &Option<JsonObject>) -> String {
    match arguments {
        Some(arguments) => serde_json::to_string(arguments).unwrap_or_else(|_| "{}".to_owned()),
        None => "{}".to_owned(),
    }
}

/// Sends each progress report given to the returned sender to the client as
/// `notifications/progress` for `token`, in order; the returned task ends
/// once the sender is dropped (or the client is gone).
pub(crate) fn forward_progress(
    peer: rmcp::service::Peer<RoleServer>,
    token: rmcp::model::ProgressToken,
) -> (tokio::sync::mpsc::UnboundedSender<Progress>, tokio::task::JoinHandle<()>) {
    let (send, mut receive) = tokio::sync::mpsc::unbounded_channel::<Progress>();
    let forwarding = tokio::spawn(async move {
        while let Some(progress) = receive.recv().await {
            let mut param = ProgressNotificationParam::new(token.clone(), progress.done);
            param.total = progress.total;
            param.message = progress.message;
            if peer.notify_progress(param).await.is_err() {
                break;
            }
        }
    });
    (send, forwarding)
}

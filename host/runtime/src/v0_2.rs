//! Contract version 0.2.0 (`wit/v0.2.0`): its bindings, the host side of the
//! imports a call may use, and the translation of what a plugin returns
//! (tools with titles, hints and output schemas; results as content blocks)
//! into the host's own types.
//!
//! What the `call` interface offers reaches a plugin only as far as this host
//! passes it on: progress is counted and kept (the latest report) for the
//! call's report; elicitation, sampling and roots are answered
//! `unsupported`, naming what is missing, until a front end passes them on.

use crate::cache::ListedTool;
use crate::content::{Annotations, Content, ContentBlock, Priority, ResourceBody};
use crate::sandbox::HostState;
use toolhost_grants::manifest::HintsTable;

wasmtime::component::bindgen!({
    path: "../../wit/v0.2.0",
    world: "toolhost:plugin/plugin@0.2.0",
    imports: { default: async },
    exports: { default: async },
});

/// The export this host looks for.
pub const TOOLS_EXPORT: &str = "toolhost:plugin/tools@0.2.0";

use toolhost::plugin::call::{ElicitAnswer, Elicitation, RequestError, Root, SamplingReply, SamplingRequest};
use toolhost::plugin::log::{Field, Level};
use toolhost::plugin::types;

impl types::Host for HostState {}

impl toolhost::plugin::log::Host for HostState {
    async fn log(&mut self, level: Level, message: String, fields: Vec<Field>) {
        use crate::sandbox::v0_1_0::toolhost::plugin::log as v1;
        let level = match level {
            Level::Trace => v1::Level::Trace,
            Level::Debug => v1::Level::Debug,
            Level::Info => v1::Level::Info,
            Level::Warn => v1::Level::Warn,
            Level::Error => v1::Level::Error,
        };
        let fields = fields.into_iter().map(|Field { key, value }| v1::Field { key, value }).collect();
        self.record_log(level, message, fields);
    }
}

impl toolhost::plugin::call::Host for HostState {
    async fn progress(&mut self, done: f64, total: Option<f64>, message: Option<String>) {
        self.record_progress(done, total, message);
    }

    async fn elicit(&mut self, _request: Elicitation) -> Result<ElicitAnswer, RequestError> {
        Err(RequestError::Unsupported(
            "this toolhost does not pass elicitation on to a client or a terminal yet".to_owned(),
        ))
    }

    async fn sample(&mut self, _request: SamplingRequest) -> Result<SamplingReply, RequestError> {
        Err(RequestError::Unsupported("this toolhost does not pass sampling on to a model yet".to_owned()))
    }

    async fn roots(&mut self) -> Result<Vec<Root>, RequestError> {
        Err(RequestError::Unsupported("this toolhost does not pass a client's roots on yet".to_owned()))
    }
}

/// A listed tool as the host keeps it.
pub(crate) fn listed(tool: types::Tool) -> ListedTool {
    let hints = tool.hints;
    ListedTool {
        name: tool.name,
        description: tool.description,
        input_schema: tool.input_schema,
        output_schema: tool.output_schema,
        title: tool.title,
        hints: Some(HintsTable {
            read_only: hints.read_only,
            destructive: hints.destructive,
            idempotent: hints.idempotent,
            open_world: hints.open_world,
        }),
    }
}

/// A content block as the host keeps it (checked later, with the call's
/// limits, by [`crate::content::check`]).
pub(crate) fn block(block: types::Block) -> ContentBlock {
    let content = match block.content {
        types::Content::Text(text) => Content::Text { text },
        types::Content::Json(json) => Content::Json { json },
        types::Content::Image(media) => Content::Image { mime_type: media.mime_type, data: media.data },
        types::Content::Audio(media) => Content::Audio { mime_type: media.mime_type, data: media.data },
        types::Content::ResourceLink(link) => Content::ResourceLink {
            uri: link.uri,
            name: link.name,
            title: link.title,
            description: link.description,
            mime_type: link.mime_type,
            size: link.size,
        },
        types::Content::Embedded(contents) => Content::Resource {
            uri: contents.uri,
            mime_type: contents.mime_type,
            body: match contents.body {
                types::ResourceBody::Text(text) => ResourceBody::Text(text),
                types::ResourceBody::Blob(bytes) => ResourceBody::Blob(bytes),
            },
        },
    };
    let annotations = block.annotations.map(|annotations| Annotations {
        audience: annotations
            .audience
            .into_iter()
            .map(|role| match role {
                types::Role::User => "user",
                types::Role::Assistant => "assistant",
            })
            .collect(),
        priority: annotations.priority.map(Priority),
        last_modified: annotations.last_modified,
    });
    ContentBlock { content, annotations }
}

//! Contract version 0.2.0 (`wit/v0.2.0`): its bindings, the host side of the
//! imports a call may use, and the translation of what a plugin returns
//! (tools with titles, hints and output schemas; results as content blocks)
//! into the host's own types.
//!
//! What the `call` interface offers reaches a plugin only as far as this host
//! passes it on: progress goes to the call's observer and logs (see
//! `HostState::record_progress`); elicitation, sampling and roots are
//! answered `unsupported`, naming what is missing, until a front end passes
//! them on. A plugin of the `full` world also offers resources, prompts and
//! completions ([`full`], and [`crate::offers`] for the host's types).

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

/// The export that makes a plugin one of the `full` world.
pub const RESOURCES_EXPORT: &str = "toolhost:plugin/resources@0.2.0";

/// Bindings of the `full` world: the same imports and types as the
/// `plugin` world (shared, so one implementation serves both), and the
/// resources, prompts and completions exports.
pub mod full {
    wasmtime::component::bindgen!({
        path: "../../wit/v0.2.0",
        world: "toolhost:plugin/full@0.2.0",
        imports: { default: async },
        exports: { default: async },
        with: {
            "toolhost:plugin/types@0.2.0": super::toolhost::plugin::types,
            "toolhost:plugin/log@0.2.0": super::toolhost::plugin::log,
            "toolhost:plugin/call@0.2.0": super::toolhost::plugin::call,
        },
    });
}

use toolhost::plugin::call::{
    Answer, ElicitAnswer, Elicitation, Question, RequestError, Root, SamplingReply, SamplingRequest,
};
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
        if let Some(why) = self.refusal("elicitation") {
            return Err(RequestError::Denied(why));
        }
        Err(RequestError::Unsupported(
            "this toolhost does not pass elicitation on to a client or a terminal yet".to_owned(),
        ))
    }

    async fn sample(&mut self, _request: SamplingRequest) -> Result<SamplingReply, RequestError> {
        if let Some(why) = self.refusal("sampling") {
            return Err(RequestError::Denied(why));
        }
        Err(RequestError::Unsupported("this toolhost does not pass sampling on to a model yet".to_owned()))
    }

    async fn roots(&mut self) -> Result<Vec<Root>, RequestError> {
        if let Some(why) = self.refusal("roots") {
            return Err(RequestError::Denied(why));
        }
        Err(RequestError::Unsupported("this toolhost does not pass a client's roots on yet".to_owned()))
    }

    async fn ask(&mut self, questions: Vec<(String, Question)>) -> Vec<Result<Answer, RequestError>> {
        let mut answers = Vec::with_capacity(questions.len());
        for (_, question) in questions {
            answers.push(match question {
                Question::Elicit(request) => self.elicit(request).await.map(Answer::Elicited),
                Question::Sample(request) => self.sample(request).await.map(Answer::Sampled),
                Question::Roots => self.roots().await.map(Answer::Roots),
            });
        }
        answers
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

/// Content blocks as the host keeps them.
pub(crate) fn blocks(blocks: Vec<types::Block>) -> Vec<ContentBlock> {
    blocks.into_iter().map(block).collect()
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

/// A `full` plugin's resource, as the host keeps it.
pub(crate) fn resource(
    entry: full::exports::toolhost::plugin::resources::ResourceInfo,
) -> crate::offers::ResourceEntry {
    crate::offers::ResourceEntry {
        uri: entry.uri,
        name: entry.name,
        title: entry.title,
        description: entry.description,
        mime_type: entry.mime_type,
        size: entry.size,
    }
}

/// A `full` plugin's resource template, as the host keeps it.
pub(crate) fn template(
    entry: full::exports::toolhost::plugin::resources::ResourceTemplate,
) -> crate::offers::TemplateEntry {
    crate::offers::TemplateEntry {
        uri_template: entry.uri_template,
        name: entry.name,
        title: entry.title,
        description: entry.description,
        mime_type: entry.mime_type,
    }
}

/// Resource contents as blocks, checked like a tool's result.
pub(crate) fn contents(contents: Vec<types::ResourceContents>) -> Vec<ContentBlock> {
    contents
        .into_iter()
        .map(|contents| block(types::Block { content: types::Content::Embedded(contents), annotations: None }))
        .collect()
}

/// A `full` plugin's prompt, as the host keeps it.
pub(crate) fn prompt(entry: full::exports::toolhost::plugin::prompts::Prompt) -> crate::offers::PromptEntry {
    crate::offers::PromptEntry {
        name: entry.name,
        title: entry.title,
        description: entry.description,
        arguments: entry
            .arguments
            .into_iter()
            .map(|argument| crate::offers::PromptArgument {
                name: argument.name,
                title: argument.title,
                description: argument.description,
                required: argument.required,
            })
            .collect(),
    }
}

/// A filled-in prompt, as the host keeps it (checked later).
pub(crate) fn prompt_result(
    result: full::exports::toolhost::plugin::prompts::PromptResult,
) -> crate::offers::PromptResult {
    crate::offers::PromptResult {
        description: result.description,
        messages: result
            .messages
            .into_iter()
            .map(|message| crate::offers::PromptMessage {
                role: match message.role {
                    types::Role::User => "user",
                    types::Role::Assistant => "assistant",
                },
                content: block(types::Block { content: message.content, annotations: None }),
            })
            .collect(),
    }
}

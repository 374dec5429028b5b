//! Contract version 0.2.0 (`wit/v0.2.0`): its bindings, the host side of the
//! imports a call may use, and the translation of what a plugin returns
//! (tools with titles, hints and output schemas; results as content blocks)
//! into the host's own types.
//!
//! What the `call` interface offers reaches a plugin only as far as this host
//! passes it on: progress goes to the call's observer and logs (see
//! `HostState::record_progress`); elicitation, sampling and roots go to the
//! call's [`Asker`](crate::ask::Asker), checked on the way out and back
//! (see `HostState::ask_all`). A plugin of the `full` world also offers resources, prompts and
//! completions ([`full`], and [`crate::offers`] for the host's types).

use crate::ask;
use crate::cache::ListedTool;
use crate::content::{Annotations, Content, ContentBlock, Priority, ResourceBody};
use crate::sandbox::HostState;
use toolhost_grants::manifest::HintsTable;

wasmtime::component::bindgen!({
    path: "../../wit/v0.2.0",
    world: "toolhost:plugin/plugin@0.2.0",
    // Trappable: a question the front end suspends stops the instance.
    imports: { default: async | trappable },
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
        imports: { default: async | trappable },
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
    async fn log(&mut self, level: Level, message: String, fields: Vec<Field>) -> wasmtime::Result<()> {
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
        Ok(())
    }
}

impl toolhost::plugin::call::Host for HostState {
    async fn progress(&mut self, done: f64, total: Option<f64>, message: Option<String>) -> wasmtime::Result<()> {
        self.record_progress(done, total, message);
        Ok(())
    }

    async fn elicit(&mut self, request: Elicitation) -> wasmtime::Result<Result<ElicitAnswer, RequestError>> {
        let key = self.next_key("elicit");
        let answer = self.ask_one(key, Question::Elicit(request)).await?;
        Ok(answer.and_then(|answer| match answer {
            Answer::Elicited(answer) => Ok(answer),
            _ => Err(mismatched()),
        }))
    }

    async fn sample(&mut self, request: SamplingRequest) -> wasmtime::Result<Result<SamplingReply, RequestError>> {
        let key = self.next_key("sample");
        let answer = self.ask_one(key, Question::Sample(request)).await?;
        Ok(answer.and_then(|answer| match answer {
            Answer::Sampled(reply) => Ok(reply),
            _ => Err(mismatched()),
        }))
    }

    async fn roots(&mut self) -> wasmtime::Result<Result<Vec<Root>, RequestError>> {
        let key = self.next_key("roots");
        let answer = self.ask_one(key, Question::Roots).await?;
        Ok(answer.and_then(|answer| match answer {
            Answer::Roots(roots) => Ok(roots),
            _ => Err(mismatched()),
        }))
    }

    async fn ask(&mut self, questions: Vec<(String, Question)>) -> wasmtime::Result<Vec<Result<Answer, RequestError>>> {
        let questions = questions.into_iter().map(|(key, question)| (key, question_of(question))).collect();
        let answers = self.ask_all(questions).await?;
        Ok(answers.into_iter().map(|answer| answer.map(answer_of).map_err(request_error)).collect())
    }
}

impl HostState {
    /// The key of a single question: `elicit-N`, `sample-N`, `roots-N`.
    fn next_key(&self, kind: &str) -> String {
        format!("{kind}-{}", self.asked() + 1)
    }

    async fn ask_one(&mut self, key: String, question: Question) -> wasmtime::Result<Result<Answer, RequestError>> {
        let mut answers = toolhost::plugin::call::Host::ask(self, vec![(key, question)]).await?;
        Ok(answers.pop().unwrap_or_else(|| Err(mismatched())))
    }
}

fn mismatched() -> RequestError {
    RequestError::Failed("the answer was not one to this question".to_owned())
}

fn request_error(err: ask::AskError) -> RequestError {
    match err {
        ask::AskError::Denied(why) => RequestError::Denied(why),
        ask::AskError::Unsupported(why) => RequestError::Unsupported(why),
        ask::AskError::Limit(why) => RequestError::Limit(why),
        ask::AskError::Failed(why) => RequestError::Failed(why),
    }
}

fn role_of(role: types::Role) -> ask::Role {
    match role {
        types::Role::User => ask::Role::User,
        types::Role::Assistant => ask::Role::Assistant,
    }
}

/// A question as the host keeps it. A form's schema that is not JSON is
/// kept as a string, which [`ask::Question::check`] refuses.
fn question_of(question: Question) -> ask::Question {
    match question {
        Question::Elicit(Elicitation::Form((message, schema))) => {
            let schema = serde_json::from_str(&schema).unwrap_or(serde_json::Value::String(schema));
            ask::Question::Elicit(ask::Elicitation::Form { message, schema })
        }
        Question::Elicit(Elicitation::Url((message, url))) => {
            ask::Question::Elicit(ask::Elicitation::Url { message, url })
        }
        Question::Sample(request) => ask::Question::Sample(ask::Sampling {
            messages: request
                .messages
                .into_iter()
                .map(|message| ask::Message {
                    role: role_of(message.role),
                    content: block(types::Block { content: message.content, annotations: None }).content,
                })
                .collect(),
            system_prompt: request.system_prompt,
            max_tokens: request.max_tokens,
            temperature: request.temperature,
            stop_sequences: request.stop_sequences,
            preferences: request.preferences.map(|preferences| {
                let hints: Vec<serde_json::Value> =
                    preferences.hints.iter().map(|hint| serde_json::json!({ "name": hint })).collect();
                let mut wire = serde_json::json!({
                    "hints": hints,
                    "costPriority": preferences.cost_priority,
                    "speedPriority": preferences.speed_priority,
                    "intelligencePriority": preferences.intelligence_priority,
                });
                if let Some(object) = wire.as_object_mut() {
                    object.retain(|_, value| !value.is_null());
                }
                wire
            }),
        }),
        Question::Roots => ask::Question::Roots,
    }
}

fn answer_of(answer: ask::Answer) -> Answer {
    match answer {
        ask::Answer::Elicited(ask::Elicited::Accepted(content)) => {
            Answer::Elicited(ElicitAnswer::Accepted(serde_json::Value::Object(content).to_string()))
        }
        ask::Answer::Elicited(ask::Elicited::Declined) => Answer::Elicited(ElicitAnswer::Declined),
        ask::Answer::Elicited(ask::Elicited::Cancelled) => Answer::Elicited(ElicitAnswer::Cancelled),
        ask::Answer::Sampled(reply) => Answer::Sampled(SamplingReply {
            role: types::Role::Assistant,
            content: match reply.content {
                Content::Image { mime_type, data } => types::Content::Image(types::Media { mime_type, data }),
                Content::Audio { mime_type, data } => types::Content::Audio(types::Media { mime_type, data }),
                Content::Text { text } => types::Content::Text(text),
                _ => types::Content::Text(String::new()),
            },
            model: reply.model,
            stop_reason: reply.stop_reason,
        }),
        ask::Answer::Roots(roots) => {
            Answer::Roots(roots.into_iter().map(|root| Root { uri: root.uri, name: root.name }).collect())
        }
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
        types::Content::Json(json) => Content::Json { json, parsed: None },
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

//! What a contract 0.2.0 plugin returns (tools with titles, hints and output
//! schemas; results, resources and prompts as content blocks; its errors),
//! turned into the host's own types. Checked later, with the call's limits,
//! by the sandbox's verdict.

use super::bindings::{full, toolhost::plugin::types};
use crate::cache::ListedTool;
use crate::content::{Annotations, Content, ContentBlock, Priority, ResourceBody};
use crate::outcome::{CallError, ToolOutput};
use toolhost_grants::manifest::HintsTable;

/// A call's content blocks as the host's output (checked later).
pub(super) fn output(blocks: Vec<types::Block>) -> ToolOutput {
    ToolOutput::Content(blocks.into_iter().map(block).collect())
}

/// A plugin's refusal as the host keeps it.
pub(super) fn error(err: types::CallError) -> CallError {
    match err {
        types::CallError::InvalidArguments(text) => CallError::InvalidArguments(text),
        types::CallError::Failed(text) => CallError::ToolFailed(text),
    }
}

/// A listed tool as the host keeps it.
pub(super) fn listed(tool: types::Tool) -> ListedTool {
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
        export_path: None,
    }
}

/// A content block as the host keeps it (checked later, with the call's
/// limits, by [`crate::content_check::check`]).
pub(super) fn block(block: types::Block) -> ContentBlock {
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
pub(super) fn resource(
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
pub(super) fn template(
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
pub(super) fn contents(contents: Vec<types::ResourceContents>) -> Vec<ContentBlock> {
    contents
        .into_iter()
        .map(|contents| block(types::Block { content: types::Content::Embedded(contents), annotations: None }))
        .collect()
}

/// A `full` plugin's prompt, as the host keeps it.
pub(super) fn prompt(entry: full::exports::toolhost::plugin::prompts::Prompt) -> crate::offers::PromptEntry {
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
pub(super) fn prompt_result(
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

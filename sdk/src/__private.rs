//! Glue between the public SDK and the wit-bindgen output; not a stable API.

use crate::{Call, Content, ErrorKind, ResourceLink, Role, Tool};

pub use wit_bindgen;

#[allow(missing_docs, unsafe_op_in_unsafe_fn)]
pub mod bindings {
    wit_bindgen::generate!({
        path: "../wit/v0.2.0",
        world: "toolhost:plugin/plugin@0.2.0",
        pub_export_macro: true,
        export_macro_name: "__export_plugin",
        runtime_path: "toolhost_sdk::__private::wit_bindgen::rt",
    });
}

use bindings::toolhost::plugin::types as wit;

pub use bindings::exports::toolhost::plugin::tools::Guest;
pub use wit::{Block as WitBlock, CallError as WitError, Tool as WitTool};

pub fn list_tools(tools: Vec<Tool>) -> Vec<WitTool> {
    tools
        .into_iter()
        .map(|tool| WitTool {
            name: tool.name.to_owned(),
            title: tool.title.map(str::to_owned),
            description: tool.description.to_owned(),
            input_schema: (tool.schema)(),
            output_schema: tool.output_schema.map(|schema| schema()),
            hints: wit::ToolHints {
                read_only: tool.hints.read_only,
                destructive: tool.hints.destructive,
                idempotent: tool.hints.idempotent,
                open_world: tool.hints.open_world,
            },
        })
        .collect()
}

pub fn call_tool(tools: Vec<Tool>, name: &str, arguments: &str) -> Result<Vec<WitBlock>, WitError> {
    let Some(tool) = tools.into_iter().find(|tool| tool.name == name) else {
        return Err(WitError::Failed(format!("this plugin has no tool named `{name}`")));
    };
    match (tool.invoke)(arguments, &Call::new()) {
        Ok(output) => Ok(output
            .into_blocks()
            .into_iter()
            .map(|(content, annotations)| WitBlock {
                content: content_to_wit(content),
                annotations: annotations.map(|annotations| wit::Annotations {
                    audience: annotations.audience.into_iter().map(role_to_wit).collect(),
                    priority: annotations.priority,
                    last_modified: annotations.last_modified,
                }),
            })
            .collect()),
        Err(err) => Err(match err.kind {
            ErrorKind::InvalidArguments => WitError::InvalidArguments(err.message),
            ErrorKind::Failed => WitError::Failed(err.message),
        }),
    }
}

pub fn role_to_wit(role: Role) -> wit::Role {
    match role {
        Role::User => wit::Role::User,
        Role::Assistant => wit::Role::Assistant,
    }
}

pub fn content_to_wit(content: Content) -> wit::Content {
    match content {
        Content::Text(text) => wit::Content::Text(text),
        Content::Json(text) => wit::Content::Json(text),
        Content::Image { mime_type, data } => wit::Content::Image(wit::Media { mime_type, data }),
        Content::Audio { mime_type, data } => wit::Content::Audio(wit::Media { mime_type, data }),
        Content::ResourceLink(link) => wit::Content::ResourceLink(wit::ResourceLink {
            uri: link.uri,
            name: link.name,
            title: link.title,
            description: link.description,
            mime_type: link.mime_type,
            size: link.size,
        }),
        Content::EmbeddedText { uri, mime_type, text } => {
            wit::Content::Embedded(wit::ResourceContents { uri, mime_type, body: wit::ResourceBody::Text(text) })
        }
        Content::EmbeddedBlob { uri, mime_type, data } => {
            wit::Content::Embedded(wit::ResourceContents { uri, mime_type, body: wit::ResourceBody::Blob(data) })
        }
    }
}

pub fn content_from_wit(content: wit::Content) -> Content {
    match content {
        wit::Content::Text(text) => Content::Text(text),
        wit::Content::Json(text) => Content::Json(text),
        wit::Content::Image(media) => Content::Image { mime_type: media.mime_type, data: media.data },
        wit::Content::Audio(media) => Content::Audio { mime_type: media.mime_type, data: media.data },
        wit::Content::ResourceLink(link) => Content::ResourceLink(ResourceLink {
            uri: link.uri,
            name: link.name,
            title: link.title,
            description: link.description,
            mime_type: link.mime_type,
            size: link.size,
        }),
        wit::Content::Embedded(resource) => match resource.body {
            wit::ResourceBody::Text(text) => {
                Content::EmbeddedText { uri: resource.uri, mime_type: resource.mime_type, text }
            }
            wit::ResourceBody::Blob(data) => {
                Content::EmbeddedBlob { uri: resource.uri, mime_type: resource.mime_type, data }
            }
        },
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::{Json, ToolError};
    use schemars::JsonSchema;
    use serde::Deserialize;

    #[derive(Deserialize, JsonSchema)]
    struct Add {
        /// First term.
        a: i64,
        /// Second term.
        b: i64,
    }

    fn add(args: Add) -> Result<Json<i64>, ToolError> {
        args.a.checked_add(args.b).map(Json).ok_or_else(|| ToolError::failed("overflow"))
    }

    fn refuse(_: Add) -> Result<String, ToolError> {
        Err(ToolError::invalid_arguments("no thanks"))
    }

    fn tools() -> Vec<Tool> {
        vec![
            Tool::new("add", "Adds two integers.", add).title("Add").read_only().idempotent().output::<Add>(),
            Tool::new("refuse", "Refuses.", refuse),
        ]
    }

    #[test]
    fn lists_each_tool_with_a_derived_object_schema() {
        let listed = list_tools(tools());
        assert_eq!(listed.len(), 2);
        assert_eq!(listed[0].name, "add");
        let schema: serde_json::Value = serde_json::from_str(&listed[0].input_schema).unwrap();
        assert_eq!(schema["type"], "object");
        assert_eq!(schema["properties"]["a"]["description"], "First term.");
        assert_eq!(schema["required"], serde_json::json!(["a", "b"]));
        assert_eq!(listed[0].title.as_deref(), Some("Add"));
        assert_eq!(
            (listed[0].hints.read_only, listed[0].hints.idempotent, listed[0].hints.destructive),
            (Some(true), Some(true), None)
        );
        assert!(listed[0].output_schema.as_deref().is_some_and(|schema| schema.contains("First term.")));
        assert!(listed[1].title.is_none() && listed[1].output_schema.is_none());
    }

    #[test]
    fn calls_deserialize_and_map_results_and_errors() {
        let call = |name: &str, args: &str| call_tool(tools(), name, args);
        assert!(
            matches!(call("add", r#"{"a":2,"b":3}"#), Ok(blocks) if matches!(&blocks[..], [WitBlock { content: wit::Content::Json(text), annotations: None }] if text == "5"))
        );
        assert!(matches!(call("add", r#"{"a":"x"}"#), Err(WitError::InvalidArguments(_))));
        assert!(
            matches!(call("add", &format!(r#"{{"a":{},"b":1}}"#, i64::MAX)), Err(WitError::Failed(m)) if m == "overflow")
        );
        assert!(matches!(call("refuse", r#"{"a":1,"b":1}"#), Err(WitError::InvalidArguments(m)) if m == "no thanks"));
        assert!(matches!(call("nope", "{}"), Err(WitError::Failed(m)) if m.contains("no tool named `nope`")));
    }
}

//! `content_kinds`: a plugin of contract 0.2.0 (`wit/v0.2.0`, the `full`
//! world), written with wit-bindgen alone, as an author of another toolchain
//! would. Each tool exercises one thing the contract allows, or one way to get
//! it wrong; its resources, prompts and completions are the ones the MCP
//! conformance suite asks for.

wit_bindgen::generate!({
    path: "../../../wit/v0.2.0",
    world: "toolhost:plugin/full@0.2.0",
});

mod asking;

use exports::toolhost::plugin::tools::Guest;
use toolhost::plugin::call;
use toolhost::plugin::types::{
    Annotations, Block, CallError, Content, Media, ResourceBody, ResourceContents, ResourceLink, Role, Tool, ToolHints,
};

struct Plugin;

/// A 1x1 PNG.
const PNG: [u8; 70] = [
    137, 80, 78, 71, 13, 10, 26, 10, 0, 0, 0, 13, 73, 72, 68, 82, 0, 0, 0, 1, 0, 0, 0, 1, 8, 6, 0, 0, 0, 31, 21, 196,
    137, 0, 0, 0, 13, 73, 68, 65, 84, 120, 218, 99, 100, 96, 248, 95, 15, 0, 2, 135, 1, 128, 235, 71, 186, 146, 0, 0,
    0, 0, 73, 69, 78, 68, 174, 66, 96, 130,
];

/// A WAV file of four silent 8-bit samples at 8 kHz.
fn wav() -> Vec<u8> {
    let samples = [128u8; 4];
    let mut bytes = Vec::new();
    bytes.extend_from_slice(b"RIFF");
    bytes.extend_from_slice(&(36 + samples.len() as u32).to_le_bytes());
    bytes.extend_from_slice(b"WAVEfmt ");
    bytes.extend_from_slice(&16u32.to_le_bytes());
    bytes.extend_from_slice(&1u16.to_le_bytes()); // PCM
    bytes.extend_from_slice(&1u16.to_le_bytes()); // mono
    bytes.extend_from_slice(&8000u32.to_le_bytes());
    bytes.extend_from_slice(&8000u32.to_le_bytes());
    bytes.extend_from_slice(&1u16.to_le_bytes());
    bytes.extend_from_slice(&8u16.to_le_bytes());
    bytes.extend_from_slice(b"data");
    bytes.extend_from_slice(&(samples.len() as u32).to_le_bytes());
    bytes.extend_from_slice(&samples);
    bytes
}

pub(crate) fn block(content: Content) -> Block {
    Block { content, annotations: None }
}

pub(crate) fn text(text: &str) -> Block {
    block(Content::Text(text.to_owned()))
}

fn image() -> Block {
    block(Content::Image(Media { mime_type: "image/png".into(), data: PNG.to_vec() }))
}

fn embedded() -> Block {
    block(Content::Embedded(ResourceContents {
        uri: "test://embedded-resource".into(),
        mime_type: Some("text/plain".into()),
        body: ResourceBody::Text("This is an embedded resource content.".into()),
    }))
}

pub(crate) const NO_ARGUMENTS: &str = r#"{"type":"object","properties":{}}"#;
const TEXT_ARGUMENT: &str = r#"{"type":"object","properties":{"text":{"type":"string"}},"required":["text"]}"#;
const MEASURED: &str = r#"{"type":"object","properties":{"chars":{"type":"integer"},"words":{"type":"integer"}},"required":["chars","words"],"additionalProperties":false}"#;

pub(crate) fn tool(name: &str, description: &str, input: &str) -> Tool {
    Tool {
        name: name.into(),
        title: None,
        description: description.into(),
        input_schema: input.into(),
        output_schema: None,
        hints: ToolHints { read_only: Some(true), destructive: None, idempotent: Some(true), open_world: Some(false) },
    }
}

impl Guest for Plugin {
    fn list_tools() -> Vec<Tool> {
        vec![
            Tool {
                title: Some("Measure a text".into()),
                output_schema: Some(MEASURED.into()),
                ..tool("measure", "Counts the characters and words of a text.", TEXT_ARGUMENT)
            },
            tool("show_content", "Returns one block of every kind of content.", NO_ARGUMENTS),
            Tool {
                output_schema: Some(MEASURED.into()),
                ..tool("wrong_shape", "Declares an output schema and returns something else.", NO_ARGUMENTS)
            },
            tool("lying_image", "Returns GIF bytes labelled image/png.", NO_ARGUMENTS),
            tool("two_json", "Returns two JSON blocks.", NO_ARGUMENTS),
            tool("many_progress", "Reports progress 10,000 times, then answers.", NO_ARGUMENTS),
            tool(
                "asks",
                "Asks the user, the model and the client's roots, and says what the host answered.",
                NO_ARGUMENTS,
            ),
            tool(
                "test_tool_with_progress",
                "Reports progress three times (the MCP conformance suite's tool).",
                NO_ARGUMENTS,
            ),
            tool("test_image_content", "Returns an image (the MCP conformance suite's tool).", NO_ARGUMENTS),
            tool("test_audio_content", "Returns audio (the MCP conformance suite's tool).", NO_ARGUMENTS),
            tool(
                "test_embedded_resource",
                "Returns an embedded resource (the MCP conformance suite's tool).",
                NO_ARGUMENTS,
            ),
            tool(
                "test_multiple_content_types",
                "Returns text, an image and a resource (the MCP conformance suite's tool).",
                NO_ARGUMENTS,
            ),
        ]
        .into_iter()
        .chain(asking::tools())
        .collect()
    }

    fn call_tool(name: String, arguments: String) -> Result<Vec<Block>, CallError> {
        if let Some(result) = asking::call(&name, &arguments) {
            return result;
        }
        Ok(match name.as_str() {
            "measure" => {
                // The arguments matched the schema: {"text": "..."}. A real plugin
                // would use a JSON parser; this one finds the one string.
                let start = arguments
                    .find(":\"")
                    .map(|at| at + 2)
                    .ok_or_else(|| CallError::InvalidArguments("no text".into()))?;
                let value = &arguments[start..arguments.rfind('"').unwrap_or(arguments.len())];
                let chars = value.chars().count();
                let words = value.split_whitespace().count();
                vec![
                    text(&format!("{chars} characters, {words} words")),
                    block(Content::Json(format!(r#"{{"chars":{chars},"words":{words}}}"#))),
                ]
            }
            "show_content" => vec![
                Block {
                    content: Content::Text("every kind of content".into()),
                    annotations: Some(Annotations {
                        audience: vec![Role::User],
                        priority: Some(0.5),
                        last_modified: Some("2026-11-24T00:00:00Z".into()),
                    }),
                },
                image(),
                block(Content::Audio(Media { mime_type: "audio/wav".into(), data: wav() })),
                block(Content::ResourceLink(ResourceLink {
                    uri: "https://example.com/report.pdf".into(),
                    name: "report".into(),
                    title: Some("The report".into()),
                    description: None,
                    mime_type: Some("application/pdf".into()),
                    size: Some(1234),
                })),
                embedded(),
                block(Content::Embedded(ResourceContents {
                    uri: "test://blob".into(),
                    mime_type: Some("application/octet-stream".into()),
                    body: ResourceBody::Blob(vec![0, 1, 2, 255]),
                })),
            ],
            "wrong_shape" => vec![block(Content::Json(r#"{"chars":"many"}"#.into()))],
            "lying_image" => {
                vec![block(Content::Image(Media { mime_type: "image/png".into(), data: b"GIF89a....".to_vec() }))]
            }
            "two_json" => vec![block(Content::Json("{}".into())), block(Content::Json("{}".into()))],
            "many_progress" => {
                for step in 0..10_000 {
                    call::progress(f64::from(step), Some(10_000.0), Some(&format!("step {step}")));
                }
                call::progress(10_000.0, Some(10_000.0), Some("done"));
                vec![text("finished")]
            }
            "asks" => {
                let form = call::Elicitation::Form(("Your name?".into(), NO_ARGUMENTS.into()));
                let elicit = match call::elicit(&form) {
                    Ok(_) => "answered".to_owned(),
                    Err(err) => format!("{err:?}"),
                };
                let roots = match call::roots() {
                    Ok(roots) => format!("{} roots", roots.len()),
                    Err(err) => format!("{err:?}"),
                };
                let question = call::Message { role: Role::User, content: Content::Text("Say hi.".into()) };
                let sampling = call::SamplingRequest {
                    messages: vec![question],
                    system_prompt: None,
                    max_tokens: 100,
                    temperature: None,
                    stop_sequences: vec![],
                    preferences: None,
                };
                let sample = match call::sample(&sampling) {
                    Ok(reply) => format!("{:?}", reply.content),
                    Err(err) => format!("{err:?}"),
                };
                vec![text(&format!("elicit: {elicit}\nroots: {roots}\nsample: {sample}"))]
            }
            "test_tool_with_progress" => {
                for (step, message) in [(0.0, "starting"), (50.0, "half way"), (100.0, "done")] {
                    call::progress(step, Some(100.0), Some(message));
                    if step < 100.0 {
                        std::thread::sleep(std::time::Duration::from_millis(150));
                    }
                }
                vec![text("Progress test completed")]
            }
            "test_image_content" => vec![image()],
            "test_audio_content" => vec![block(Content::Audio(Media { mime_type: "audio/wav".into(), data: wav() }))],
            "test_embedded_resource" => vec![embedded()],
            "test_multiple_content_types" => vec![text("Multiple content types test:"), image(), embedded()],
            other => return Err(CallError::InvalidArguments(format!("no tool named {other}"))),
        })
    }
}

use exports::toolhost::plugin::completions::{self, Completion, Reference};
use exports::toolhost::plugin::prompts::{self, Prompt, PromptArgument, PromptMessage, PromptResult};
use exports::toolhost::plugin::resources::{self, ResourceInfo, ResourceTemplate};

fn resource(uri: &str, name: &str, description: &str, mime_type: &str) -> ResourceInfo {
    ResourceInfo {
        uri: uri.into(),
        name: name.into(),
        title: None,
        description: Some(description.into()),
        mime_type: Some(mime_type.into()),
        size: None,
        annotations: None,
    }
}

impl resources::Guest for Plugin {
    fn list_resources() -> Vec<ResourceInfo> {
        vec![
            resource("test://static-text", "static-text", "A static text resource.", "text/plain"),
            resource("test://static-binary", "static-binary", "A static PNG image.", "image/png"),
            resource(
                "test://watched-resource",
                "watched-resource",
                "A resource a client may subscribe to.",
                "text/plain",
            ),
            resource(
                "test://huge",
                "huge",
                "50 MiB of bytes: more than a host lets through.",
                "application/octet-stream",
            ),
        ]
    }

    fn list_resource_templates() -> Vec<ResourceTemplate> {
        vec![ResourceTemplate {
            uri_template: "test://template/{id}/data".into(),
            name: "template-data".into(),
            title: None,
            description: Some("Data for an id.".into()),
            mime_type: Some("application/json".into()),
        }]
    }

    fn read_resource(uri: String) -> Result<Vec<ResourceContents>, CallError> {
        let text = |mime_type: &str, text: String| ResourceContents {
            uri: uri.clone(),
            mime_type: Some(mime_type.into()),
            body: ResourceBody::Text(text),
        };
        Ok(vec![match uri.as_str() {
            "test://static-text" => text("text/plain", "This is the content of the static text resource.".into()),
            "test://watched-resource" => text("text/plain", "Watched.".into()),
            // 50 MiB: far over any output limit.
            "test://huge" => ResourceContents {
                uri: uri.clone(),
                mime_type: Some("application/octet-stream".into()),
                body: ResourceBody::Blob(vec![7; 50 << 20]),
            },
            "test://static-binary" => ResourceContents {
                uri: uri.clone(),
                mime_type: Some("image/png".into()),
                body: ResourceBody::Blob(PNG.to_vec()),
            },
            other => {
                let id = other
                    .strip_prefix("test://template/")
                    .and_then(|rest| rest.strip_suffix("/data"))
                    .ok_or_else(|| CallError::InvalidArguments(format!("no resource {other}")))?;
                text("application/json", format!(r#"{{"id":"{id}","templateTest":true,"data":"Data for ID: {id}"}}"#))
            }
        }])
    }
}

fn argument(name: &str, description: &str) -> PromptArgument {
    PromptArgument { name: name.into(), title: None, description: Some(description.into()), required: true }
}

fn prompt(name: &str, description: &str, arguments: Vec<PromptArgument>) -> Prompt {
    Prompt { name: name.into(), title: None, description: Some(description.into()), arguments }
}

fn said(content: Content) -> PromptMessage {
    PromptMessage { role: Role::User, content }
}

impl prompts::Guest for Plugin {
    fn list_prompts() -> Vec<Prompt> {
        vec![
            prompt("test_simple_prompt", "A prompt without arguments.", vec![]),
            prompt(
                "test_prompt_with_arguments",
                "A prompt with two arguments.",
                vec![argument("arg1", "First test argument"), argument("arg2", "Second test argument")],
            ),
            prompt(
                "test_prompt_with_embedded_resource",
                "A prompt that embeds a resource.",
                vec![argument("resourceUri", "URI of the resource to embed")],
            ),
            prompt("test_prompt_with_image", "A prompt with an image.", vec![]),
            prompt("test_input_required_result_prompt", "A prompt that asks the user for context first.", vec![]),
        ]
    }

    fn get_prompt(name: String, arguments: Vec<(String, String)>) -> Result<PromptResult, CallError> {
        let given = |key: &str| {
            arguments
                .iter()
                .find(|(name, _)| name == key)
                .map(|(_, value)| value.clone())
                .ok_or_else(|| CallError::InvalidArguments(format!("the argument `{key}` is missing")))
        };
        let messages = match name.as_str() {
            "test_simple_prompt" => vec![said(Content::Text("This is a simple prompt for testing.".into()))],
            "test_input_required_result_prompt" => vec![said(Content::Text(asking::context_prompt()?))],
            "test_prompt_with_arguments" => vec![said(Content::Text(format!(
                "Prompt with arguments: arg1='{}', arg2='{}'",
                given("arg1")?,
                given("arg2")?
            )))],
            "test_prompt_with_embedded_resource" => vec![
                said(Content::Embedded(ResourceContents {
                    uri: given("resourceUri")?,
                    mime_type: Some("text/plain".into()),
                    body: ResourceBody::Text("Embedded resource content for testing.".into()),
                })),
                said(Content::Text("Please process the embedded resource above.".into())),
            ],
            "test_prompt_with_image" => vec![
                said(Content::Image(Media { mime_type: "image/png".into(), data: PNG.to_vec() })),
                said(Content::Text("Please analyze the image above.".into())),
            ],
            other => return Err(CallError::InvalidArguments(format!("no prompt named {other}"))),
        };
        Ok(PromptResult { description: None, messages })
    }
}

impl completions::Guest for Plugin {
    fn complete(
        reference: Reference,
        _argument: String,
        value: String,
        _context: Vec<(String, String)>,
    ) -> Result<Completion, CallError> {
        let known: &[&str] = match reference {
            Reference::Prompt(_) => &["paris", "park", "party", "pasta"],
            Reference::ResourceTemplate(_) => &["1", "12", "123"],
        };
        let values: Vec<String> =
            known.iter().filter(|known| known.starts_with(&value)).map(|known| known.to_string()).collect();
        Ok(Completion { total: Some(values.len() as u32), values, has_more: false })
    }
}

export!(Plugin);

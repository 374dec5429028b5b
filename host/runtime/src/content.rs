//! A tool's result as content blocks (contract 0.2.0): text, JSON, images,
//! audio, resource links and embedded resources, each with optional hints;
//! and how a model reads them ([`as_text`]). What a plugin returned is held
//! to the call's limits by [`crate::content_check`] before anything else sees it.

use serde::{Serialize, Serializer};

/// One piece of a result, with its hints.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct ContentBlock {
    /// The content.
    #[serde(flatten)]
    pub content: Content,
    /// Hints for the client.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub annotations: Option<Annotations>,
}

impl Content {
    /// A `json` block's document: parsed once when the block was checked,
    /// else parsed now (`None` when it is not JSON, or not a `json` block).
    pub fn json_value(&self) -> Option<std::borrow::Cow<'_, serde_json::Value>> {
        match self {
            Content::Json { parsed: Some(value), .. } => Some(std::borrow::Cow::Borrowed(value.as_ref())),
            Content::Json { json, parsed: None } => serde_json::from_str(json).ok().map(std::borrow::Cow::Owned),
            _ => None,
        }
    }
}

/// What a block holds.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
#[serde(tag = "type", rename_all = "snake_case")]
pub enum Content {
    /// Plain text.
    Text {
        /// The text.
        text: String,
    },
    /// A JSON document (the result's structured content), as JSON text.
    Json {
        /// The JSON text.
        json: String,
        /// The document, parsed once by [`crate::content_check::check`]
        /// (`None` before), for whatever reads it after (the output schema,
        /// MCP's structured content).
        #[serde(skip)]
        parsed: Option<std::sync::Arc<serde_json::Value>>,
    },
    /// An image.
    Image {
        /// Its MIME type.
        mime_type: String,
        /// Its bytes (base64 in JSON).
        #[serde(serialize_with = "base64")]
        data: Vec<u8>,
    },
    /// Audio.
    Audio {
        /// Its MIME type.
        mime_type: String,
        /// Its bytes (base64 in JSON).
        #[serde(serialize_with = "base64")]
        data: Vec<u8>,
    },
    /// A link to a resource.
    ResourceLink {
        /// Its URI.
        uri: String,
        /// Its name.
        name: String,
        /// Its title.
        #[serde(skip_serializing_if = "Option::is_none")]
        title: Option<String>,
        /// What it is.
        #[serde(skip_serializing_if = "Option::is_none")]
        description: Option<String>,
        /// Its MIME type.
        #[serde(skip_serializing_if = "Option::is_none")]
        mime_type: Option<String>,
        /// Its size in bytes.
        #[serde(skip_serializing_if = "Option::is_none")]
        size: Option<u64>,
    },
    /// An embedded resource.
    Resource {
        /// Its URI.
        uri: String,
        /// Its MIME type.
        #[serde(skip_serializing_if = "Option::is_none")]
        mime_type: Option<String>,
        /// What it holds.
        #[serde(flatten)]
        body: ResourceBody,
    },
}

/// An embedded resource's content.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
#[serde(rename_all = "snake_case")]
pub enum ResourceBody {
    /// Text.
    Text(String),
    /// Bytes (base64 in JSON).
    Blob(#[serde(serialize_with = "base64")] Vec<u8>),
}

/// Hints about a block.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct Annotations {
    /// Who it is for: `user`, `assistant` (empty: both).
    #[serde(skip_serializing_if = "Vec::is_empty")]
    pub audience: Vec<&'static str>,
    /// How important it is, 0 to 1.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub priority: Option<Priority>,
    /// When it last changed (ISO 8601).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub last_modified: Option<String>,
}

/// A priority between 0 and 1 ([`crate::content_check::check`] refuses any
/// other, NaN included, which makes equality total).
#[derive(Debug, Clone, Copy, PartialEq, Serialize)]
pub struct Priority(pub f64);

impl Eq for Priority {}

fn base64<S: Serializer>(bytes: &[u8], serializer: S) -> Result<S::Ok, S::Error> {
    use base64::Engine as _;
    serializer.serialize_str(&base64::engine::general_purpose::STANDARD.encode(bytes))
}

/// How a model sees `blocks` (models take text): each text as it is, the
/// JSON as its text, and a line for everything else.
pub fn as_text(blocks: &[ContentBlock]) -> String {
    let mut parts = Vec::with_capacity(blocks.len());
    for block in blocks {
        parts.push(match &block.content {
            Content::Text { text } => text.clone(),
            Content::Json { json, .. } => json.clone(),
            Content::Image { mime_type, data } => format!("[image: {mime_type}, {} bytes]", data.len()),
            Content::Audio { mime_type, data } => format!("[audio: {mime_type}, {} bytes]", data.len()),
            Content::ResourceLink { uri, name, .. } => format!("[resource link: {name} <{uri}>]"),
            Content::Resource { uri, body: ResourceBody::Text(text), .. } => format!("[resource {uri}]\n{text}"),
            Content::Resource { uri, mime_type, body: ResourceBody::Blob(bytes) } => format!(
                "[resource {uri}: {}, {} bytes]",
                mime_type.as_deref().unwrap_or("application/octet-stream"),
                bytes.len()
            ),
        });
    }
    parts.join("\n")
}

//! A tool's result as content blocks (contract 0.2.0): text, JSON, images,
//! audio, resource links and embedded resources, each with optional hints.
//!
//! [`check`] holds what a plugin returned to the call's limits before anything
//! else sees it: all blocks together within the `output` limit, at most one
//! JSON block and valid JSON, media whose bytes are what their MIME type
//! says, URIs and names that are plain one-line text, priorities between 0
//! and 1; and it scrubs secret values from every text in them. Anything else
//! is an `invalid_output`, never passed on.

use crate::limits::{ByteSize, Limits};
use crate::outcome::CallError;
use serde::{Serialize, Serializer};
use toolhost_grants::env::Redactor;

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
        /// The document, parsed once by [`check`] (`None` before), for
        /// whatever reads it after (the output schema, MCP's structured content).
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

/// A priority between 0 and 1 ([`check`] refuses any other, NaN included,
/// which makes equality total).
#[derive(Debug, Clone, Copy, PartialEq, Serialize)]
pub struct Priority(pub f64);

impl Eq for Priority {}

fn base64<S: Serializer>(bytes: &[u8], serializer: S) -> Result<S::Ok, S::Error> {
    use base64::Engine as _;
    serializer.serialize_str(&base64::engine::general_purpose::STANDARD.encode(bytes))
}

/// The longest URI, name or MIME type a block may carry.
const MAX_LABEL: usize = 8 << 10;

/// Holds `blocks` to the call's limits and scrubs them (see the module docs).
pub fn check(blocks: Vec<ContentBlock>, limits: &Limits, redactor: &Redactor) -> Result<Vec<ContentBlock>, CallError> {
    let size: u64 = blocks.iter().map(ContentBlock::size).sum();
    if size > limits.output.bytes() {
        return Err(CallError::OutputTooLarge { size: Some(ByteSize(size)), limit: limits.output });
    }
    let invalid = |why: String| CallError::InvalidOutput(format!("{why}; this is a bug in the plugin"));
    if blocks.iter().filter(|block| matches!(block.content, Content::Json { .. })).count() > 1 {
        return Err(invalid("it returned more than one `json` block (a result has one structured content)".into()));
    }
    let scrub = |text: String| if redactor.is_empty() { text } else { redactor.scrub(text) };
    let mut checked = Vec::with_capacity(blocks.len());
    for (index, block) in blocks.into_iter().enumerate() {
        let which = |why: &str| invalid(format!("its block {index} {why}"));
        let content = match block.content {
            Content::Text { text } => Content::Text { text: scrub(text) },
            Content::Json { json, .. } => {
                let value: serde_json::Value = serde_json::from_str(&json)
                    .map_err(|err| which(&format!("is `json` but not valid JSON ({err})")))?;
                let (json, value) = if redactor.is_empty() {
                    (json, value)
                } else {
                    // Rare: a secret to take out; the scrubbed text is parsed again.
                    let json = redactor.scrub_json(json, value).map_err(CallError::InvalidOutput)?;
                    let value = serde_json::from_str(&json).map_err(|err| CallError::InvalidOutput(err.to_string()))?;
                    (json, value)
                };
                Content::Json { json, parsed: Some(std::sync::Arc::new(value)) }
            }
            Content::Image { mime_type, data } => {
                media("image", &mime_type, &data).map_err(|why| which(&why))?;
                Content::Image { mime_type, data }
            }
            Content::Audio { mime_type, data } => {
                media("audio", &mime_type, &data).map_err(|why| which(&why))?;
                Content::Audio { mime_type, data }
            }
            Content::ResourceLink { uri, name, title, description, mime_type, size } => {
                label("uri", &uri).and(label("name", &name)).map_err(|why| which(&why))?;
                if let Some(mime_type) = &mime_type {
                    label("mime_type", mime_type).map_err(|why| which(&why))?;
                }
                Content::ResourceLink {
                    uri: scrub(uri),
                    name: scrub(name),
                    title: title.map(|text| scrub(crate::text::printable(&text).into_owned())),
                    description: description.map(|text| scrub(crate::text::printable(&text).into_owned())),
                    mime_type,
                    size,
                }
            }
            Content::Resource { uri, mime_type, body } => {
                label("uri", &uri).map_err(|why| which(&why))?;
                if let Some(mime_type) = &mime_type {
                    label("mime_type", mime_type).map_err(|why| which(&why))?;
                }
                let body = match body {
                    ResourceBody::Text(text) => ResourceBody::Text(scrub(text)),
                    blob @ ResourceBody::Blob(_) => blob,
                };
                Content::Resource { uri: scrub(uri), mime_type, body }
            }
        };
        if let Some(annotations) = &block.annotations
            && let Some(Priority(priority)) = annotations.priority
            && !(0.0..=1.0).contains(&priority)
        {
            return Err(which(&format!("has the priority {priority}, outside 0 to 1")));
        }
        checked.push(ContentBlock { content, annotations: block.annotations });
    }
    Ok(checked)
}

impl ContentBlock {
    /// Roughly how many bytes it holds.
    fn size(&self) -> u64 {
        let len = |text: &Option<String>| text.as_ref().map_or(0, String::len);
        (match &self.content {
            Content::Text { text } => text.len(),
            Content::Json { json, .. } => json.len(),
            Content::Image { mime_type, data } | Content::Audio { mime_type, data } => mime_type.len() + data.len(),
            Content::ResourceLink { uri, name, title, description, mime_type, .. } => {
                uri.len() + name.len() + len(title) + len(description) + len(mime_type)
            }
            Content::Resource { uri, mime_type, body } => {
                uri.len()
                    + len(mime_type)
                    + match body {
                        ResourceBody::Text(text) => text.len(),
                        ResourceBody::Blob(bytes) => bytes.len(),
                    }
            }
        }) as u64
    }
}

/// A URI, name or MIME type: present, one line of plain text, bounded.
fn label(what: &str, text: &str) -> Result<(), String> {
    if text.is_empty() {
        return Err(format!("has an empty `{what}`"));
    }
    if text.len() > MAX_LABEL {
        return Err(format!("has a `{what}` over {}", ByteSize(MAX_LABEL as u64)));
    }
    if text.chars().any(char::is_control) {
        return Err(format!("has control characters in its `{what}`"));
    }
    Ok(())
}

/// Checks that `data` is what `mime_type` (of the `kind` image or audio) says.
fn media(kind: &str, mime_type: &str, data: &[u8]) -> Result<(), String> {
    let essence = mime_type.split(';').next().unwrap_or_default().trim().to_ascii_lowercase();
    let Some(subtype) = essence.strip_prefix(kind).and_then(|rest| rest.strip_prefix('/')) else {
        return Err(format!("is an {kind} with the MIME type `{}`, which is not {kind}/…", mime_type.escape_debug()));
    };
    let starts = |magic: &[u8]| data.starts_with(magic);
    let at = |offset: usize, magic: &[u8]| data.get(offset..offset + magic.len()) == Some(magic);
    let known = match (kind, subtype) {
        ("image", "png") => Some(starts(b"\x89PNG\r\n\x1a\n")),
        ("image", "jpeg" | "jpg") => Some(starts(b"\xff\xd8\xff")),
        ("image", "gif") => Some(starts(b"GIF87a") || starts(b"GIF89a")),
        ("image", "webp") => Some(starts(b"RIFF") && at(8, b"WEBP")),
        ("image", "bmp") => Some(starts(b"BM")),
        ("image", "svg+xml") => Some(std::str::from_utf8(data).is_ok_and(|text| text.contains("<svg"))),
        ("audio", "wav" | "x-wav" | "wave") => Some(starts(b"RIFF") && at(8, b"WAVE")),
        ("audio", "mpeg" | "mp3") => {
            Some(starts(b"ID3") || (data.len() > 1 && data[0] == 0xff && data[1] & 0xe0 == 0xe0))
        }
        ("audio", "ogg" | "opus") => Some(starts(b"OggS")),
        ("audio", "flac" | "x-flac") => Some(starts(b"fLaC")),
        ("audio", "webm") => Some(starts(b"\x1a\x45\xdf\xa3")),
        ("audio", "mp4" | "aac" | "x-m4a") => {
            Some(at(4, b"ftyp") || (data.len() > 1 && data[0] == 0xff && data[1] & 0xf0 == 0xf0))
        }
        _ => None,
    };
    match known {
        Some(true) => Ok(()),
        Some(false) => Err(format!("says it is `{essence}`, but its bytes are not")),
        None => Err(format!(
            "is `{essence}`, a type toolhost cannot check: images are png, jpeg, gif, webp, bmp or svg+xml; audio \
             is wav, mpeg, ogg, flac, webm or mp4"
        )),
    }
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

#[cfg(test)]
mod tests {
    use super::*;

    fn image(mime_type: &str, data: &[u8]) -> ContentBlock {
        ContentBlock { content: Content::Image { mime_type: mime_type.into(), data: data.to_vec() }, annotations: None }
    }

    #[test]
    fn media_must_be_what_its_type_says() {
        let limits = Limits::default();
        let none = Redactor::default();
        assert!(check(vec![image("image/png", b"\x89PNG\r\n\x1a\n....")], &limits, &none).is_ok());
        for (mime, data, says) in [
            ("image/png", &b"GIF89a..."[..], "its bytes are not"),
            ("audio/wav", b"\x89PNG\r\n\x1a\n", "not image/"),
            ("image/x-thing", b"anything", "cannot check"),
        ] {
            let err = check(vec![image(mime, data)], &limits, &none).unwrap_err().to_string();
            assert!(err.contains(says), "{mime}: {err}");
        }
    }

    #[test]
    fn one_json_block_at_most_and_priorities_within_bounds() {
        let limits = Limits::default();
        let none = Redactor::default();
        let json = || ContentBlock { content: Content::Json { json: "{}".into(), parsed: None }, annotations: None };
        assert!(check(vec![json(), json()], &limits, &none).unwrap_err().to_string().contains("more than one"));
        let annotated = ContentBlock {
            content: Content::Text { text: "x".into() },
            annotations: Some(Annotations {
                audience: vec![],
                priority: Some(Priority(f64::NAN)),
                last_modified: None,
            }),
        };
        assert!(check(vec![annotated], &limits, &none).is_err());
    }
}

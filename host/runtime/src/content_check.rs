//! [`check`] holds content blocks a plugin returned (a result, a resource's
//! contents, a prompt's messages) to the call's limits before anything else
//! sees them: all blocks together within the `output` limit, at most one
//! JSON block and valid JSON, media whose bytes are what their MIME type
//! says, URIs and names that are plain one-line text, priorities between 0
//! and 1; and it scrubs secret values from every text in them. Anything else
//! is an `invalid_output`, never passed on.
//!
//! It is apart from [`crate::content`] (the blocks) because its verdict is a
//! [`CallError`] while [`crate::outcome::ToolOutput`] holds blocks: the
//! blocks sit below the outcome, and the check above both.

use crate::content::{Content, ContentBlock, Priority, ResourceBody};
use crate::limits::{ByteSize, Limits};
use crate::outcome::CallError;
use toolhost_grants::env::Redactor;

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

#[cfg(test)]
mod tests {
    use super::*;
    use crate::content::Annotations;

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

//! What a tool returns: a list of content blocks.

use serde::Serialize;

/// Who a message or a piece of content is for.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Role {
    /// The person using the client.
    User,
    /// The model.
    Assistant,
}

/// Hints about a piece of content, as MCP carries them.
#[derive(Debug, Clone, Default, PartialEq)]
pub struct Annotations {
    /// Who it is meant for (empty: both).
    pub audience: Vec<Role>,
    /// How important it is, from 0 (optional) to 1 (essential).
    pub priority: Option<f64>,
    /// When it last changed, as an ISO 8601 timestamp.
    pub last_modified: Option<String>,
}

/// A pointer to a resource the client may read or fetch.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct ResourceLink {
    /// The resource's URI.
    pub uri: String,
    /// Its name, for programs.
    pub name: String,
    /// Its name, for people.
    pub title: Option<String>,
    /// What it is.
    pub description: Option<String>,
    /// Its MIME type, when known.
    pub mime_type: Option<String>,
    /// Its size in bytes, when known.
    pub size: Option<u64>,
}

/// One piece of a result.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Content {
    /// Plain text.
    Text(String),
    /// A JSON document, as JSON text: the result's structured content (at most
    /// one per result), checked against the tool's output schema if it has one.
    Json(String),
    /// An image: its MIME type and bytes (the host checks they match).
    Image { mime_type: String, data: Vec<u8> },
    /// Audio: its MIME type and bytes.
    Audio { mime_type: String, data: Vec<u8> },
    /// A link to a resource.
    ResourceLink(ResourceLink),
    /// A resource embedded as text.
    EmbeddedText { uri: String, mime_type: Option<String>, text: String },
    /// A resource embedded as bytes.
    EmbeddedBlob { uri: String, mime_type: Option<String>, data: Vec<u8> },
}

/// What a tool returns when it succeeds: content blocks, each with optional
/// [`Annotations`]. Strings become text, [`serde_json::Value`]s and [`Json`]
/// become JSON; build richer results with the constructors and [`Output::and`]:
///
/// ```ignore
/// Ok(Output::text("Here is the chart.").and(Output::image("image/png", png)))
/// ```
#[derive(Debug, Clone, Default, PartialEq)]
pub struct Output {
    blocks: Vec<(Content, Option<Annotations>)>,
}

impl Output {
    /// A result of one block.
    pub fn new(content: Content) -> Self {
        Output { blocks: vec![(content, None)] }
    }

    /// Plain text.
    pub fn text(text: impl Into<String>) -> Self {
        Output::new(Content::Text(text.into()))
    }

    /// A value as JSON (see [`Json`]).
    pub fn json<T: Serialize>(value: &T) -> Self {
        match serde_json::to_string(value) {
            Ok(text) => Output::new(Content::Json(text)),
            // Serializing plain data only fails for maps with non-string keys
            // and the like: report it as text rather than losing the result.
            Err(err) => Output::text(format!("(output could not be encoded as JSON: {err})")),
        }
    }

    /// JSON that is already text. The host checks that it parses.
    pub fn json_text(text: impl Into<String>) -> Self {
        Output::new(Content::Json(text.into()))
    }

    /// An image (`image/png`, `image/jpeg`, …).
    pub fn image(mime_type: impl Into<String>, data: Vec<u8>) -> Self {
        Output::new(Content::Image { mime_type: mime_type.into(), data })
    }

    /// Audio (`audio/wav`, `audio/mpeg`, …).
    pub fn audio(mime_type: impl Into<String>, data: Vec<u8>) -> Self {
        Output::new(Content::Audio { mime_type: mime_type.into(), data })
    }

    /// A link to the resource at `uri`, named `name`.
    pub fn link(uri: impl Into<String>, name: impl Into<String>) -> Self {
        Output::new(Content::ResourceLink(ResourceLink { uri: uri.into(), name: name.into(), ..Default::default() }))
    }

    /// A text resource, embedded.
    pub fn embedded_text(uri: impl Into<String>, mime_type: Option<&str>, text: impl Into<String>) -> Self {
        Output::new(Content::EmbeddedText {
            uri: uri.into(),
            mime_type: mime_type.map(str::to_owned),
            text: text.into(),
        })
    }

    /// A binary resource, embedded.
    pub fn embedded_blob(uri: impl Into<String>, mime_type: Option<&str>, data: Vec<u8>) -> Self {
        Output::new(Content::EmbeddedBlob { uri: uri.into(), mime_type: mime_type.map(str::to_owned), data })
    }

    /// This result's blocks followed by `more`'s.
    pub fn and(mut self, more: impl Into<Output>) -> Self {
        self.blocks.extend(more.into().blocks);
        self
    }

    /// Sets the annotations of every block so far.
    pub fn annotated(mut self, annotations: Annotations) -> Self {
        for (_, slot) in &mut self.blocks {
            *slot = Some(annotations.clone());
        }
        self
    }

    /// Marks every block so far as meant for `role` only.
    pub fn for_only(self, role: Role) -> Self {
        self.annotated(Annotations { audience: vec![role], ..Default::default() })
    }

    /// The blocks, with their annotations.
    pub fn blocks(&self) -> &[(Content, Option<Annotations>)] {
        &self.blocks
    }

    pub(crate) fn into_blocks(self) -> Vec<(Content, Option<Annotations>)> {
        self.blocks
    }
}

impl From<String> for Output {
    fn from(text: String) -> Self {
        Output::text(text)
    }
}

impl From<&str> for Output {
    fn from(text: &str) -> Self {
        Output::text(text)
    }
}

impl From<serde_json::Value> for Output {
    fn from(value: serde_json::Value) -> Self {
        Output::new(Content::Json(value.to_string()))
    }
}

impl From<Content> for Output {
    fn from(content: Content) -> Self {
        Output::new(content)
    }
}

/// Wraps any serializable value so a tool can return it as JSON output.
#[derive(Debug, Clone)]
pub struct Json<T>(pub T);

impl<T: Serialize> From<Json<T>> for Output {
    fn from(Json(value): Json<T>) -> Self {
        Output::json(&value)
    }
}

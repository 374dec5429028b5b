//! What a plugin of contract 0.2.0's `full` world offers besides tools:
//! resources, resource templates and prompts (listed once, at load, and kept
//! with its tools), and what reading a resource, filling in a prompt or
//! completing an argument returns.
//!
//! Everything is checked like a tool's list and result: bounded in number and
//! size, URIs and names one line of plain text, descriptions made printable,
//! contents and prompt messages through [`crate::content_check::check`].

use crate::content::{Content, ContentBlock};
use crate::limits::{ByteSize, Limits};
use crate::outcome::CallError;
use serde::{Deserialize, Serialize};
use toolhost_grants::env::Redactor;

/// The most resources, templates or prompts one plugin may list, each.
pub const MAX_LISTED: usize = 1_000;
/// The most completion values passed on.
pub const MAX_COMPLETIONS: usize = 100;
/// The longest URI, name or MIME type.
const MAX_LABEL: usize = 8 << 10;

/// What a completion is for.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Reference<'a> {
    /// An argument of the prompt of this name.
    Prompt(&'a str),
    /// A variable of the resource template of this URI template.
    Template(&'a str),
}

/// One resource a plugin offers.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct ResourceEntry {
    /// Its URI.
    pub uri: String,
    /// Its name.
    pub name: String,
    /// Its title.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub title: Option<String>,
    /// What it is.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub description: Option<String>,
    /// Its MIME type.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub mime_type: Option<String>,
    /// Its size in bytes.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub size: Option<u64>,
}

/// A family of resources a plugin offers, by URI template.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct TemplateEntry {
    /// The URI template (RFC 6570, simple `{name}` variables).
    pub uri_template: String,
    /// Its name.
    pub name: String,
    /// Its title.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub title: Option<String>,
    /// What the resources are.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub description: Option<String>,
    /// Their MIME type.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub mime_type: Option<String>,
}

/// One argument of a prompt.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct PromptArgument {
    /// Its name.
    pub name: String,
    /// Its title.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub title: Option<String>,
    /// What it is.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub description: Option<String>,
    /// Whether it must be given.
    #[serde(default)]
    pub required: bool,
}

/// One prompt a plugin offers.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct PromptEntry {
    /// Its name.
    pub name: String,
    /// Its title.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub title: Option<String>,
    /// What it is for.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub description: Option<String>,
    /// Its arguments.
    #[serde(default)]
    pub arguments: Vec<PromptArgument>,
}

/// What a `full` plugin offers besides tools, as listed at load.
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct Offers {
    /// Its resources.
    #[serde(default)]
    pub resources: Vec<ResourceEntry>,
    /// Its resource templates.
    #[serde(default)]
    pub templates: Vec<TemplateEntry>,
    /// Its prompts.
    #[serde(default)]
    pub prompts: Vec<PromptEntry>,
}

/// One message of a filled-in prompt.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct PromptMessage {
    /// `user` or `assistant`.
    pub role: &'static str,
    /// What it says.
    pub content: ContentBlock,
}

/// A prompt filled in.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct PromptResult {
    /// What it is.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub description: Option<String>,
    /// Its messages.
    pub messages: Vec<PromptMessage>,
}

/// Suggested values for an argument.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct Completion {
    /// The values, best first (at most [`MAX_COMPLETIONS`]).
    pub values: Vec<String>,
    /// How many there are in all.
    pub total: Option<u32>,
    /// Whether there are more than `values`.
    pub has_more: bool,
}

/// A URI, name or MIME type: present, one line of plain text, bounded.
fn label(what: &str, text: &str) -> Result<(), String> {
    if text.is_empty() || text.len() > MAX_LABEL || text.chars().any(char::is_control) {
        return Err(format!(
            "its {what} `{}` is not one line of plain text of 1 to {MAX_LABEL} bytes",
            text.chars().take(80).collect::<String>().escape_debug()
        ));
    }
    Ok(())
}

impl Offers {
    /// Checks what a plugin listed (see the module docs); `Err` says why
    /// the plugin is refused.
    pub fn check(mut self) -> Result<Offers, String> {
        let counts = [
            ("resources", self.resources.len()),
            ("resource templates", self.templates.len()),
            ("prompts", self.prompts.len()),
        ];
        for (what, count) in counts {
            if count > MAX_LISTED {
                return Err(format!("it lists {count} {what}, over the {MAX_LISTED} a plugin may"));
            }
        }
        for resource in &mut self.resources {
            label("resource URI", &resource.uri)?;
            label("resource name", &resource.name)?;
            if let Some(mime_type) = &resource.mime_type {
                label("MIME type", mime_type)?;
            }
            resource.title = resource.title.take().map(crate::text::printable_owned);
            resource.description = resource.description.take().map(crate::text::printable_owned);
        }
        for template in &mut self.templates {
            label("URI template", &template.uri_template)?;
            label("template name", &template.name)?;
            template.title = template.title.take().map(crate::text::printable_owned);
            template.description = template.description.take().map(crate::text::printable_owned);
        }
        for prompt in &mut self.prompts {
            label("prompt name", &prompt.name)?;
            prompt.title = prompt.title.take().map(crate::text::printable_owned);
            prompt.description = prompt.description.take().map(crate::text::printable_owned);
            for argument in &mut prompt.arguments {
                label("prompt argument name", &argument.name)?;
                argument.title = argument.title.take().map(crate::text::printable_owned);
                argument.description = argument.description.take().map(crate::text::printable_owned);
            }
        }
        for (what, names) in [
            ("resource URI", self.resources.iter().map(|resource| &resource.uri).collect::<Vec<_>>()),
            ("prompt name", self.prompts.iter().map(|prompt| &prompt.name).collect()),
        ] {
            let mut sorted = names.clone();
            sorted.sort();
            if let Some(twice) = sorted.windows(2).find(|pair| pair[0] == pair[1]) {
                return Err(format!("it lists the {what} `{}` twice", twice[0]));
            }
        }
        Ok(self)
    }

    /// True when it offers nothing.
    pub fn is_empty(&self) -> bool {
        self.resources.is_empty() && self.templates.is_empty() && self.prompts.is_empty()
    }
}

/// Whether `uri` is one of the resources `template` describes: each `{name}`
/// stands for one or more characters up to the next literal part (and no `/`
/// unless the template's next literal starts with one).
pub fn matches_template(template: &str, uri: &str) -> bool {
    let mut rest = uri;
    let mut parts = template.split('{');
    let Some(first) = parts.next() else { return false };
    let Some(after) = rest.strip_prefix(first) else { return false };
    rest = after;
    for part in parts {
        let Some((_, literal)) = part.split_once('}') else { return false };
        // The variable's value ends where the literal begins (or at the end).
        let end = if literal.is_empty() { rest.len() } else { rest.find(literal).unwrap_or(usize::MAX) };
        if end == usize::MAX || end == 0 || rest[..end].contains('/') {
            return false;
        }
        rest = &rest[end + literal.len()..];
    }
    rest.is_empty()
}

/// Checks a filled-in prompt's messages like a tool's result.
pub fn check_prompt(result: PromptResult, limits: &Limits, redactor: &Redactor) -> Result<PromptResult, CallError> {
    let (roles, blocks): (Vec<&'static str>, Vec<ContentBlock>) =
        result.messages.into_iter().map(|message| (message.role, message.content)).unzip();
    let blocks = crate::content_check::check(blocks, limits, redactor)?;
    let messages = roles
        .into_iter()
        .zip(blocks)
        .map(|(role, content)| {
            // A prompt message has no structured content: JSON goes as text.
            let content = match content.content {
                Content::Json { json, .. } => ContentBlock { content: Content::Text { text: json }, ..content },
                _ => content,
            };
            PromptMessage { role, content }
        })
        .collect();
    let description = result.description.map(|text| redactor.scrub(crate::text::printable(&text).into_owned()));
    Ok(PromptResult { description, messages })
}

/// Checks completion values: bounded, one line each, scrubbed.
pub fn check_completion(completion: Completion, limits: &Limits, redactor: &Redactor) -> Result<Completion, CallError> {
    let size: usize = completion.values.iter().map(String::len).sum();
    if size as u64 > limits.output.bytes() {
        return Err(CallError::OutputTooLarge { size: Some(ByteSize(size as u64)), limit: limits.output });
    }
    let more = completion.values.len() > MAX_COMPLETIONS;
    let values = completion
        .values
        .into_iter()
        .take(MAX_COMPLETIONS)
        .map(|value| redactor.scrub(crate::text::printable(&value).replace('\n', " ")))
        .collect();
    Ok(Completion { values, total: completion.total, has_more: completion.has_more || more })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn templates_match_their_variables_only() {
        assert!(matches_template("test://template/{id}/data", "test://template/123/data"));
        assert!(!matches_template("test://template/{id}/data", "test://template//data"));
        assert!(!matches_template("test://template/{id}/data", "test://template/1/2/data"));
        assert!(!matches_template("test://template/{id}/data", "test://template/1/data/more"));
        assert!(matches_template("notes://{name}", "notes://shopping"));
        assert!(!matches_template("notes://{name}", "other://shopping"));
    }

    #[test]
    fn a_list_with_a_bad_label_or_a_name_twice_is_refused() {
        let resource = |uri: &str| ResourceEntry {
            uri: uri.into(),
            name: "n".into(),
            title: None,
            description: Some("a\u{1b}[31mb".into()),
            mime_type: None,
            size: None,
        };
        let checked = Offers { resources: vec![resource("a://1")], ..Offers::default() }.check().unwrap();
        assert_eq!(checked.resources[0].description.as_deref(), Some("a [31mb"));
        assert!(Offers { resources: vec![resource("a://1"), resource("a://1")], ..Offers::default() }.check().is_err());
        assert!(Offers { resources: vec![resource("a://\n")], ..Offers::default() }.check().is_err());
    }
}

//! What a running call asks of the client, the user or the model (contract
//! 0.2.0's `call` interface: elicitation, sampling and roots), and who
//! answers: an [`Asker`] the front end passes with the call
//! ([`crate::sandbox::CallHooks`]).
//!
//! The host checks every question before a front end sees it (the
//! operator's grant, the key, the schema, the sampling budget, a bound on how
//! many) and every answer before the plugin sees it
//! ([`Answer::from_mcp`]: its shape, an elicitation's answers against the
//! requested schema, sizes). Questions and answers travel in MCP's JSON
//! ([`Question::to_mcp`]), which every front end speaks or can build.
//!
//! A front end answers, refuses (`unsupported`: no terminal, a client
//! without the capability), or, when the client answers by calling again
//! (MCP 2026-07-28), suspends the call ([`Asked::Suspend`]): the instance
//! stops and the call ends with [`crate::outcome::CallError::InputRequired`].

use crate::content::Content;
use serde_json::{Map, Value, json};
use std::future::Future;
use std::pin::Pin;
use std::time::Duration;

/// The most questions one call may ask, all kinds together.
pub const MAX_QUESTIONS: usize = 32;
/// The most bytes of a requested schema (as JSON text).
pub const MAX_SCHEMA_BYTES: usize = 64 * 1024;
/// The most bytes of a question's message or an answer, as text.
pub const MAX_TEXT_BYTES: usize = 64 * 1024;
/// The most bytes of a sampled image or audio clip, or of all of a
/// question's messages together.
pub const MAX_MEDIA_BYTES: usize = 4 * 1024 * 1024;
/// The most roots passed on.
pub const MAX_ROOTS: usize = 256;
/// How long a call waits for its answers. The time spent waiting does not
/// count against the call's `timeout`.
pub const ANSWER_TIMEOUT: Duration = Duration::from_secs(300);

/// One thing a call asks.
#[derive(Debug, Clone, PartialEq)]
pub enum Question {
    /// Ask the user.
    Elicit(Elicitation),
    /// Ask the model.
    Sample(Sampling),
    /// Read the client's roots.
    Roots,
}

/// What to ask the user.
#[derive(Debug, Clone, PartialEq)]
pub enum Elicitation {
    /// A form: the message, and the JSON Schema of the flat object wanted.
    Form { message: String, schema: Value },
    /// A page to open (the answer says only whether the user went ahead).
    Url { message: String, url: String },
}

/// Who says a sampling message.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Role {
    User,
    Assistant,
}

impl Role {
    /// MCP's name for it.
    pub fn as_str(self) -> &'static str {
        match self {
            Role::User => "user",
            Role::Assistant => "assistant",
        }
    }
}

/// One message of a sampling request.
#[derive(Debug, Clone, PartialEq)]
pub struct Message {
    pub role: Role,
    /// `Text`, `Image` or `Audio`.
    pub content: Content,
}

/// A request for the model to write a message.
#[derive(Debug, Clone, PartialEq)]
pub struct Sampling {
    pub messages: Vec<Message>,
    pub system_prompt: Option<String>,
    pub max_tokens: u32,
    pub temperature: Option<f64>,
    pub stop_sequences: Vec<String>,
    /// MCP's `modelPreferences`, when the plugin gave some.
    pub preferences: Option<Value>,
}

/// The answer to one question.
#[derive(Debug, Clone, PartialEq)]
pub enum Answer {
    Elicited(Elicited),
    Sampled(Reply),
    Roots(Vec<Root>),
}

/// The user's answer.
#[derive(Debug, Clone, PartialEq)]
pub enum Elicited {
    /// The answers (checked against the requested schema; empty for a URL).
    Accepted(Map<String, Value>),
    Declined,
    Cancelled,
}

/// The model's reply.
#[derive(Debug, Clone, PartialEq)]
pub struct Reply {
    /// `Text`, `Image` or `Audio`.
    pub content: Content,
    /// The model that wrote it.
    pub model: String,
    /// Why it stopped, if known.
    pub stop_reason: Option<String>,
}

/// A folder or place the client works in.
#[derive(Debug, Clone, PartialEq)]
pub struct Root {
    pub uri: String,
    pub name: Option<String>,
}

/// Why a question was not answered (contract 0.2.0's `request-error`).
#[derive(Debug, Clone, PartialEq, thiserror::Error)]
pub enum AskError {
    /// Not granted to the plugin; the text says what to grant.
    #[error("denied: {0}")]
    Denied(String),
    /// The client or front end cannot do it; the text says which.
    #[error("unsupported: {0}")]
    Unsupported(String),
    /// A per-call bound is used up.
    #[error("limit: {0}")]
    Limit(String),
    /// It was tried and failed.
    #[error("failed: {0}")]
    Failed(String),
}

/// What an [`Asker`] did with a batch of questions.
pub enum Asked {
    /// One answer (or refusal) per question, in order.
    Answers(Vec<Result<Answer, AskError>>),
    /// The call must stop here: the front end asks its client, which answers
    /// by calling again (the call then runs from the start).
    Suspend,
}

/// A front end's way of answering a call's questions.
pub trait Asker: Send + Sync {
    /// Answers `questions` (key, question), each already checked and granted.
    fn ask<'a>(&'a self, questions: &'a [(String, Question)]) -> Pin<Box<dyn Future<Output = Asked> + Send + 'a>>;
}

impl Question {
    /// The client capability it needs: `elicitation`, `sampling` or `roots`.
    pub fn capability(&self) -> &'static str {
        match self {
            Question::Elicit(_) => "elicitation",
            Question::Sample(_) => "sampling",
            Question::Roots => "roots",
        }
    }

    /// The MCP method that asks it.
    pub fn method(&self) -> &'static str {
        match self {
            Question::Elicit(_) => "elicitation/create",
            Question::Sample(_) => "sampling/createMessage",
            Question::Roots => "roots/list",
        }
    }

    /// The MCP request's `params`.
    pub fn to_mcp(&self, key: &str) -> Value {
        match self {
            Question::Elicit(Elicitation::Form { message, schema }) => {
                json!({ "mode": "form", "message": message, "requestedSchema": schema })
            }
            Question::Elicit(Elicitation::Url { message, url }) => {
                json!({ "mode": "url", "message": message, "url": url, "elicitationId": key })
            }
            Question::Sample(sampling) => {
                let messages: Vec<Value> = sampling
                    .messages
                    .iter()
                    .map(|message| json!({ "role": message.role.as_str(), "content": media_json(&message.content) }))
                    .collect();
                let mut params = json!({ "messages": messages, "maxTokens": sampling.max_tokens });
                if let Some(system) = &sampling.system_prompt {
                    params["systemPrompt"] = json!(system);
                }
                if let Some(temperature) = sampling.temperature {
                    params["temperature"] = json!(temperature);
                }
                if !sampling.stop_sequences.is_empty() {
                    params["stopSequences"] = json!(sampling.stop_sequences);
                }
                if let Some(preferences) = &sampling.preferences {
                    params["modelPreferences"] = preferences.clone();
                }
                params
            }
            Question::Roots => json!({}),
        }
    }

    /// Checks a question as the plugin asked it: `Err` says what is wrong.
    pub fn check(&self) -> Result<(), String> {
        match self {
            Question::Elicit(Elicitation::Form { message, schema }) => {
                bounded("the message", message, MAX_TEXT_BYTES)?;
                check_form_schema(schema)
            }
            Question::Elicit(Elicitation::Url { message, url }) => {
                bounded("the message", message, MAX_TEXT_BYTES)?;
                bounded("the URL", url, 8 * 1024)?;
                match url.split_once("://") {
                    Some(("https" | "http", rest)) if !rest.is_empty() => Ok(()),
                    _ => Err(format!("`{url}` is not an http(s) URL")),
                }
            }
            Question::Sample(sampling) => {
                if sampling.messages.is_empty() {
                    return Err("a sampling request needs at least one message".to_owned());
                }
                if sampling.max_tokens == 0 {
                    return Err("a sampling request's max-tokens must be at least 1".to_owned());
                }
                let mut size = sampling.system_prompt.as_deref().map_or(0, str::len);
                for message in &sampling.messages {
                    size += match &message.content {
                        Content::Text { text } => text.len(),
                        Content::Image { data, .. } | Content::Audio { data, .. } => data.len(),
                        _ => return Err("a sampling message holds text, an image or audio only".to_owned()),
                    };
                }
                if size > MAX_MEDIA_BYTES {
                    return Err(format!("the sampling request is {size} bytes, over the limit of {MAX_MEDIA_BYTES}"));
                }
                Ok(())
            }
            Question::Roots => Ok(()),
        }
    }
}

/// A question's key: 1 to 64 of `a-z A-Z 0-9 _ -`.
pub fn check_key(key: &str) -> Result<(), String> {
    let fine = !key.is_empty()
        && key.len() <= 64
        && key.bytes().all(|byte| byte.is_ascii_alphanumeric() || byte == b'_' || byte == b'-');
    if fine {
        Ok(())
    } else {
        Err(format!("`{}` is not a key (1 to 64 of a-z A-Z 0-9 _ -)", crate::text::printable(key)))
    }
}

fn bounded(what: &str, text: &str, limit: usize) -> Result<(), String> {
    if text.len() > limit { Err(format!("{what} is {} bytes, over the limit of {limit}", text.len())) } else { Ok(()) }
}

/// MCP allows an elicitation form a flat object of primitive properties
/// (strings, numbers, integers, booleans, enums and multi-select enums).
fn check_form_schema(schema: &Value) -> Result<(), String> {
    let size = schema.to_string().len();
    if size > MAX_SCHEMA_BYTES {
        return Err(format!("the requested schema is {size} bytes, over the limit of {MAX_SCHEMA_BYTES}"));
    }
    if schema.get("type").and_then(Value::as_str) != Some("object") {
        return Err("the requested schema must be of `\"type\": \"object\"`".to_owned());
    }
    let Some(properties) = schema.get("properties").and_then(Value::as_object) else {
        return Err("the requested schema must have `properties`".to_owned());
    };
    for (name, property) in properties {
        let kind = property.get("type").and_then(Value::as_str).unwrap_or("");
        let fine = match kind {
            "string" | "number" | "integer" | "boolean" => true,
            "array" => {
                property.get("items").is_some_and(|items| items.get("enum").is_some() || items.get("anyOf").is_some())
            }
            _ => false,
        };
        if !fine {
            return Err(format!(
                "the property `{}` of the requested schema is not one MCP elicitation allows (a string, number, \
                 integer, boolean or enum, or an array of enum values)",
                crate::text::printable(name)
            ));
        }
    }
    jsonschema::validator_for(schema).map(drop).map_err(|err| format!("the requested schema is not valid: {err}"))
}

/// A text, image or audio content as MCP carries it in sampling.
fn media_json(content: &Content) -> Value {
    use base64::Engine as _;
    let encode = |bytes: &[u8]| base64::engine::general_purpose::STANDARD.encode(bytes);
    match content {
        Content::Image { mime_type, data } => json!({ "type": "image", "data": encode(data), "mimeType": mime_type }),
        Content::Audio { mime_type, data } => json!({ "type": "audio", "data": encode(data), "mimeType": mime_type }),
        Content::Text { text } => json!({ "type": "text", "text": text }),
        _ => json!({ "type": "text", "text": "" }),
    }
}

impl Answer {
    /// The answer to `question` from an MCP result (`ElicitResult`,
    /// `CreateMessageResult` or `ListRootsResult`), checked: `Err` says what
    /// is wrong with it.
    pub fn from_mcp(question: &Question, result: &Value) -> Result<Answer, String> {
        let size = result.to_string().len();
        let limit = if matches!(question, Question::Sample(_)) { MAX_MEDIA_BYTES * 2 } else { MAX_TEXT_BYTES };
        if size > limit {
            return Err(format!("the answer is {size} bytes, over the limit of {limit}"));
        }
        let Some(object) = result.as_object() else {
            return Err(format!("the answer must be an object, not {}", crate::typed::kind(result)));
        };
        match question {
            Question::Elicit(elicitation) => {
                let action = object.get("action").and_then(Value::as_str);
                let answer = match action {
                    Some("accept") => {
                        let content = match object.get("content") {
                            None | Some(Value::Null) => Map::new(),
                            Some(Value::Object(content)) => content.clone(),
                            Some(other) => {
                                return Err(format!("`content` must be an object, not {}", crate::typed::kind(other)));
                            }
                        };
                        elicitation.check_answer(&content)?;
                        Elicited::Accepted(content)
                    }
                    Some("decline") => Elicited::Declined,
                    Some("cancel") => Elicited::Cancelled,
                    _ => return Err("`action` must be \"accept\", \"decline\" or \"cancel\"".to_owned()),
                };
                Ok(Answer::Elicited(answer))
            }
            Question::Sample(_) => {
                // A client with sampling tools may answer with a list of blocks.
                let content = match object.get("content") {
                    Some(Value::Array(blocks)) => blocks.first().cloned().unwrap_or(Value::Null),
                    Some(content) => content.clone(),
                    None => Value::Null,
                };
                let content = media_from_json(&content)?;
                let model = object.get("model").and_then(Value::as_str).unwrap_or("unknown");
                let stop_reason = object.get("stopReason").and_then(Value::as_str).map(str::to_owned);
                Ok(Answer::Sampled(Reply { content, model: model.to_owned(), stop_reason }))
            }
            Question::Roots => {
                let Some(roots) = object.get("roots").and_then(Value::as_array) else {
                    return Err("the answer has no `roots` list".to_owned());
                };
                let roots = roots
                    .iter()
                    .take(MAX_ROOTS)
                    .map(|root| match root.get("uri").and_then(Value::as_str) {
                        Some(uri) => Ok(Root {
                            uri: uri.to_owned(),
                            name: root.get("name").and_then(Value::as_str).map(str::to_owned),
                        }),
                        None => Err("a root has no `uri`".to_owned()),
                    })
                    .collect::<Result<Vec<_>, _>>()?;
                Ok(Answer::Roots(roots))
            }
        }
    }
}

impl Elicitation {
    /// Checks accepted answers: a form's against its schema; a URL takes none.
    pub fn check_answer(&self, content: &Map<String, Value>) -> Result<(), String> {
        match self {
            Elicitation::Url { .. } => Ok(()),
            Elicitation::Form { schema, .. } => {
                let validator = jsonschema::validator_for(schema)
                    .map_err(|err| format!("the requested schema is not valid: {err}"))?;
                let value = Value::Object(content.clone());
                match validator.iter_errors(&value).next() {
                    None => Ok(()),
                    Some(err) => {
                        let at = err.instance_path().to_string();
                        let at = if at.is_empty() { String::new() } else { format!(" at `{at}`") };
                        Err(format!("the answers do not match the requested schema{at}: {err}"))
                    }
                }
            }
        }
    }
}

fn media_from_json(content: &Value) -> Result<Content, String> {
    use base64::Engine as _;
    match content.get("type").and_then(Value::as_str) {
        Some("text") => match content.get("text").and_then(Value::as_str) {
            Some(text) => Ok(Content::Text { text: text.to_owned() }),
            None => Err("a text content has no `text`".to_owned()),
        },
        Some(kind @ ("image" | "audio")) => {
            let data = content.get("data").and_then(Value::as_str).unwrap_or("");
            let data = base64::engine::general_purpose::STANDARD
                .decode(data)
                .map_err(|err| format!("the {kind}'s `data` is not base64: {err}"))?;
            let mime_type = content.get("mimeType").and_then(Value::as_str).unwrap_or("").to_owned();
            Ok(if kind == "image" { Content::Image { mime_type, data } } else { Content::Audio { mime_type, data } })
        }
        _ => Err("the reply's `content` must be text, an image or audio".to_owned()),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn form() -> Question {
        Question::Elicit(Elicitation::Form {
            message: "Your name?".to_owned(),
            schema: json!({"type": "object", "properties": {"name": {"type": "string"}}, "required": ["name"]}),
        })
    }

    #[test]
    fn an_elicitation_answer_is_checked_against_the_requested_schema() {
        let good = Answer::from_mcp(&form(), &json!({"action": "accept", "content": {"name": "Ada"}})).unwrap();
        assert!(matches!(good, Answer::Elicited(Elicited::Accepted(content)) if content["name"] == "Ada"));
        let bad = Answer::from_mcp(&form(), &json!({"action": "accept", "content": {"name": 7}})).unwrap_err();
        assert!(bad.contains("do not match the requested schema"), "{bad}");
        let missing = Answer::from_mcp(&form(), &json!({"action": "accept", "content": {}})).unwrap_err();
        assert!(missing.contains("name"), "{missing}");
        assert_eq!(Answer::from_mcp(&form(), &json!({"action": "decline"})), Ok(Answer::Elicited(Elicited::Declined)));
        assert!(Answer::from_mcp(&form(), &json!(12345)).unwrap_err().contains("must be an object"));
        assert!(Answer::from_mcp(&form(), &json!({"action": "maybe"})).is_err());
    }

    #[test]
    fn a_form_schema_must_be_what_mcp_allows() {
        let nested = Elicitation::Form {
            message: "m".to_owned(),
            schema: json!({"type": "object", "properties": {"a": {"type": "object"}}}),
        };
        assert!(Question::Elicit(nested).check().unwrap_err().contains("`a`"));
        assert!(form().check().is_ok());
        let url = Question::Elicit(Elicitation::Url { message: "m".to_owned(), url: "file:///etc".to_owned() });
        assert!(url.check().is_err());
    }

    #[test]
    fn sampling_replies_and_roots_are_read_from_mcp() {
        let question = Question::Sample(Sampling {
            messages: vec![Message { role: Role::User, content: Content::Text { text: "Hi".to_owned() } }],
            system_prompt: None,
            max_tokens: 10,
            temperature: None,
            stop_sequences: Vec::new(),
            preferences: None,
        });
        assert_eq!(question.to_mcp("k")["messages"][0]["content"]["text"], "Hi");
        let reply = json!({"role": "assistant", "content": {"type": "text", "text": "Hello"}, "model": "m"});
        let Answer::Sampled(reply) = Answer::from_mcp(&question, &reply).unwrap() else { panic!() };
        assert_eq!(reply.content, Content::Text { text: "Hello".to_owned() });
        let roots = Answer::from_mcp(&Question::Roots, &json!({"roots": [{"uri": "file:///w", "name": "w"}]})).unwrap();
        assert_eq!(roots, Answer::Roots(vec![Root { uri: "file:///w".to_owned(), name: Some("w".to_owned()) }]));
        assert!(check_key("user_name").is_ok() && check_key("a b").is_err() && check_key("").is_err());
    }
}

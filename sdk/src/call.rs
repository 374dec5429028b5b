//! What a running call may ask of the host, the client and the user.
//!
//! A tool made with [`Tool::with_call`](crate::Tool::with_call) gets a [`Call`].
//! Every request is refused ([`RequestError::Denied`]) unless the operator
//! granted it to the plugin (`elicitation = true`, `sampling = true` or `{ max_tokens = N }`,
//! `roots = true` under `[plugins.NAME]`), and [`RequestError::Unsupported`]
//! when the client or front end cannot do it. A `RequestError` converts into
//! a [`ToolError`](crate::ToolError), so `?` works in a tool body.
//!
//! A client that answers statelessly (MCP 2026-07-28) answers by calling the
//! tool again: the call then runs from the start, and every question already
//! answered gets its answer at once. So ask before changing anything, and ask
//! the same questions each time the tool runs.

use crate::__private::bindings::toolhost::plugin::call as wit;
use crate::output::{Content, Role};
use schemars::JsonSchema;
use serde::de::DeserializeOwned;
use serde_json::{Map, Value};
use std::fmt;

/// The running call, given to a tool made with [`Tool::with_call`](crate::Tool::with_call).
pub struct Call {
    _private: (),
}

impl Call {
    pub(crate) fn new() -> Self {
        Call { _private: () }
    }

    /// Reports progress: `done` out of `total` (when known), with a short
    /// message (empty: none). The host passes a few reports per second on to
    /// the client, keeping the latest.
    pub fn progress(&self, done: f64, total: impl Into<Option<f64>>, message: &str) {
        wit::progress(done, total.into(), (!message.is_empty()).then_some(message));
    }

    /// Asks the user to fill in a form for `T`, a struct of strings, numbers,
    /// booleans, unit-variant enums and lists of such enums (what MCP allows in
    /// a form; field doc comments become the fields' descriptions), with
    /// `message` above it.
    pub fn elicit<T: DeserializeOwned + JsonSchema>(&self, message: &str) -> Result<Elicited<T>, RequestError> {
        let answer = self.elicit_form(message, &form_schema::<T>())?;
        answer.map(|answers| {
            serde_json::from_value(Value::Object(answers))
                .map_err(|err| RequestError::Failed(format!("the user's answers do not fit the form: {err}")))
        })
    }

    /// Asks the user to fill in a form of the JSON Schema `schema` (a flat
    /// object, as MCP allows), with `message` above it.
    pub fn elicit_form(&self, message: &str, schema: &Value) -> Result<Elicited<Map<String, Value>>, RequestError> {
        let answer = wit::elicit(&wit::Elicitation::Form((message.to_owned(), schema.to_string())))?;
        elicited(answer)
    }

    /// Asks the user to open `url` (for what must not pass through the
    /// client: a login, a payment). `Accepted` says only that they went ahead.
    pub fn elicit_url(&self, message: &str, url: &str) -> Result<Elicited<()>, RequestError> {
        let answer = wit::elicit(&wit::Elicitation::Url((message.to_owned(), url.to_owned())))?;
        elicited(answer)?.map(|_| Ok(()))
    }

    /// Asks the client's model for a message.
    pub fn sample(&self, request: Sampling) -> Result<Sampled, RequestError> {
        let reply = wit::sample(&request.into_wit())?;
        Ok(Sampled::from_wit(reply))
    }

    /// The client's roots: where the user works. Information only: they never
    /// widen the plugin's folder grants.
    pub fn roots(&self) -> Result<Vec<Root>, RequestError> {
        Ok(wit::roots()?.into_iter().map(|root| Root { uri: root.uri, name: root.name }).collect())
    }

    /// Asks several things at once, each under a key unique within the call
    /// (1 to 64 of `a-z A-Z 0-9 _ -`); the answers come in the order asked. A
    /// stateless client gets the whole batch in one round.
    pub fn ask(&self, questions: Vec<(String, Question)>) -> Vec<Result<Answer, RequestError>> {
        let questions: Vec<(String, wit::Question)> =
            questions.into_iter().map(|(key, question)| (key, question.into_wit())).collect();
        wit::ask(&questions)
            .into_iter()
            .map(|answer| {
                Ok(match answer? {
                    wit::Answer::Elicited(answer) => Answer::Elicited(elicited(answer)?),
                    wit::Answer::Sampled(reply) => Answer::Sampled(Sampled::from_wit(reply)),
                    wit::Answer::Roots(roots) => {
                        Answer::Roots(roots.into_iter().map(|root| Root { uri: root.uri, name: root.name }).collect())
                    }
                })
            })
            .collect()
    }
}

fn elicited(answer: wit::ElicitAnswer) -> Result<Elicited<Map<String, Value>>, RequestError> {
    Ok(match answer {
        wit::ElicitAnswer::Accepted(text) => match serde_json::from_str(&text) {
            Ok(Value::Object(answers)) => Elicited::Accepted(answers),
            _ => return Err(RequestError::Failed("the host sent answers that are not a JSON object".to_owned())),
        },
        wit::ElicitAnswer::Declined => Elicited::Declined,
        wit::ElicitAnswer::Cancelled => Elicited::Cancelled,
    })
}

/// The user's answer to an elicitation.
#[derive(Debug, Clone, PartialEq)]
pub enum Elicited<T> {
    /// The user accepted, with these answers.
    Accepted(T),
    /// The user said no.
    Declined,
    /// The user dismissed it without choosing.
    Cancelled,
}

impl<T> Elicited<T> {
    fn map<U, E>(self, accepted: impl FnOnce(T) -> Result<U, E>) -> Result<Elicited<U>, E> {
        Ok(match self {
            Elicited::Accepted(answers) => Elicited::Accepted(accepted(answers)?),
            Elicited::Declined => Elicited::Declined,
            Elicited::Cancelled => Elicited::Cancelled,
        })
    }

    /// The answers, if the user accepted.
    pub fn accepted(self) -> Option<T> {
        match self {
            Elicited::Accepted(answers) => Some(answers),
            _ => None,
        }
    }
}

/// The JSON Schema of a form for `T`, as MCP elicitation wants it: a flat
/// object whose enums are inlined, optional fields of their own type (not
/// "or null") and numbers without Rust's `format`s.
pub fn form_schema<T: JsonSchema>() -> Value {
    let mut schema = schemars::schema_for!(T).to_value();
    let definitions = schema.get("$defs").cloned().unwrap_or(Value::Null);
    let mut form = Map::new();
    form.insert("type".to_owned(), Value::from("object"));
    let mut properties = Map::new();
    if let Some(Value::Object(given)) = schema.get_mut("properties").map(Value::take) {
        for (name, property) in given {
            properties.insert(name, Value::Object(form_property(property, &definitions)));
        }
    }
    form.insert("properties".to_owned(), Value::Object(properties));
    if let Some(required) = schema.get("required") {
        form.insert("required".to_owned(), required.clone());
    }
    Value::Object(form)
}

fn form_property(property: Value, definitions: &Value) -> Map<String, Value> {
    let Value::Object(mut property) = resolve(property, definitions) else { return Map::new() };
    // `Option<T>`: schemars writes `"type": [T, "null"]`, or `anyOf: [T, null]`.
    if let Some(Value::Array(kinds)) = property.get("type")
        && let Some(kind) = kinds.iter().find(|kind| kind.as_str() != Some("null")).cloned()
    {
        property.insert("type".to_owned(), kind);
    }
    if let Some(Value::Array(choices)) = property.remove("anyOf") {
        match choices.into_iter().find(|choice| choice.get("type").and_then(Value::as_str) != Some("null")) {
            Some(choice) => {
                let description = property.remove("description");
                property.extend(form_property(choice, definitions));
                if let Some(description) = description {
                    property.insert("description".to_owned(), description);
                }
            }
            None => return property,
        }
    }
    if let Some(items) = property.remove("items") {
        property.insert("items".to_owned(), resolve(items, definitions));
    }
    if property.get("type").and_then(Value::as_str) != Some("string") {
        property.remove("format");
    }
    if let Some(Value::Array(values)) = property.get_mut("enum") {
        values.retain(|value| !value.is_null());
    }
    if property.get("default").is_some_and(Value::is_null) {
        property.remove("default");
    }
    property
}

/// `{"$ref": "#/$defs/X", …}` → X's schema, with the property's own keys kept.
fn resolve(schema: Value, definitions: &Value) -> Value {
    let Value::Object(mut schema) = schema else { return schema };
    if let Some(Value::String(reference)) = schema.remove("$ref")
        && let Some(Value::Object(defined)) =
            reference.strip_prefix("#/$defs/").and_then(|name| definitions.get(name)).cloned()
    {
        for (key, value) in defined {
            schema.entry(key).or_insert(value);
        }
    }
    schema.remove("title");
    Value::Object(schema)
}

/// A request for the model to write a message.
#[derive(Debug, Clone, PartialEq)]
pub struct Sampling {
    messages: Vec<(Role, Content)>,
    system_prompt: Option<String>,
    max_tokens: u32,
    temperature: Option<f64>,
    stop_sequences: Vec<String>,
    hints: Vec<String>,
}

impl Sampling {
    /// A request for a reply of at most `max_tokens` tokens (counted against
    /// the plugin's sampling budget for the call).
    pub fn new(max_tokens: u32) -> Self {
        Sampling {
            messages: Vec::new(),
            system_prompt: None,
            max_tokens,
            temperature: None,
            stop_sequences: Vec::new(),
            hints: Vec::new(),
        }
    }

    /// Adds a message from the user.
    pub fn user(mut self, text: impl Into<String>) -> Self {
        self.messages.push((Role::User, Content::Text(text.into())));
        self
    }

    /// Adds a message from the model (an earlier turn).
    pub fn assistant(mut self, text: impl Into<String>) -> Self {
        self.messages.push((Role::Assistant, Content::Text(text.into())));
        self
    }

    /// Adds an image or audio from the user (`Content::Image`, `Content::Audio`).
    pub fn user_media(mut self, content: Content) -> Self {
        self.messages.push((Role::User, content));
        self
    }

    /// Sets the system prompt.
    pub fn system(mut self, prompt: impl Into<String>) -> Self {
        self.system_prompt = Some(prompt.into());
        self
    }

    /// Sets the sampling temperature.
    pub fn temperature(mut self, temperature: f64) -> Self {
        self.temperature = Some(temperature);
        self
    }

    /// Adds a sequence the model stops at.
    pub fn stop_at(mut self, sequence: impl Into<String>) -> Self {
        self.stop_sequences.push(sequence.into());
        self
    }

    /// Adds a model name (or part of one) the client should prefer.
    pub fn prefer(mut self, model: impl Into<String>) -> Self {
        self.hints.push(model.into());
        self
    }

    fn into_wit(self) -> wit::SamplingRequest {
        wit::SamplingRequest {
            messages: self
                .messages
                .into_iter()
                .map(|(role, content)| wit::Message {
                    role: crate::__private::role_to_wit(role),
                    content: crate::__private::content_to_wit(content),
                })
                .collect(),
            system_prompt: self.system_prompt,
            max_tokens: self.max_tokens,
            temperature: self.temperature,
            stop_sequences: self.stop_sequences,
            preferences: (!self.hints.is_empty()).then_some(wit::ModelPreferences {
                hints: self.hints,
                cost_priority: None,
                speed_priority: None,
                intelligence_priority: None,
            }),
        }
    }
}

/// The model's reply.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Sampled {
    /// What it wrote.
    pub content: Content,
    /// The model that wrote it.
    pub model: String,
    /// Why it stopped (`endTurn`, `maxTokens`, `stopSequence`, …), if known.
    pub stop_reason: Option<String>,
}

impl Sampled {
    fn from_wit(reply: wit::SamplingReply) -> Self {
        Sampled {
            content: crate::__private::content_from_wit(reply.content),
            model: reply.model,
            stop_reason: reply.stop_reason,
        }
    }

    /// The reply's text (empty if the model answered with an image or audio).
    pub fn text(&self) -> &str {
        match &self.content {
            Content::Text(text) => text,
            _ => "",
        }
    }
}

/// A folder or place the client works in.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Root {
    /// Its URI (`file:///…`).
    pub uri: String,
    /// Its name, if any.
    pub name: Option<String>,
}

/// One thing to ask in a batch ([`Call::ask`]).
#[derive(Debug, Clone, PartialEq)]
pub enum Question {
    /// A form (a message and the JSON Schema of the answers) for the user.
    Form { message: String, schema: Value },
    /// A page for the user to open.
    Url { message: String, url: String },
    /// A message from the model.
    Sample(Sampling),
    /// The client's roots.
    Roots,
}

impl Question {
    /// A form for `T` (see [`Call::elicit`]).
    pub fn form<T: JsonSchema>(message: impl Into<String>) -> Self {
        Question::Form { message: message.into(), schema: form_schema::<T>() }
    }

    fn into_wit(self) -> wit::Question {
        match self {
            Question::Form { message, schema } => {
                wit::Question::Elicit(wit::Elicitation::Form((message, schema.to_string())))
            }
            Question::Url { message, url } => wit::Question::Elicit(wit::Elicitation::Url((message, url))),
            Question::Sample(sampling) => wit::Question::Sample(sampling.into_wit()),
            Question::Roots => wit::Question::Roots,
        }
    }
}

/// The answer to one [`Question`].
#[derive(Debug, Clone, PartialEq)]
pub enum Answer {
    /// The user's answer to a form (`Accepted` holds the answers) or a page.
    Elicited(Elicited<Map<String, Value>>),
    /// The model's reply.
    Sampled(Sampled),
    /// The client's roots.
    Roots(Vec<Root>),
}

impl Answer {
    /// The answers to a form for `T`, read into `T`.
    pub fn form<T: DeserializeOwned>(self) -> Result<Elicited<T>, RequestError> {
        match self {
            Answer::Elicited(answer) => answer.map(|answers| {
                serde_json::from_value(Value::Object(answers))
                    .map_err(|err| RequestError::Failed(format!("the user's answers do not fit the form: {err}")))
            }),
            _ => Err(RequestError::Failed("this answer is not the user's answer to a form".to_owned())),
        }
    }
}

/// Why a request was not answered.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum RequestError {
    /// The operator did not grant this to the plugin; the text says what to grant.
    Denied(String),
    /// The client or front end cannot do it; the text says which.
    Unsupported(String),
    /// A per-call budget or bound is used up.
    Limit(String),
    /// It was tried and failed; the text says why.
    Failed(String),
}

impl From<wit::RequestError> for RequestError {
    fn from(err: wit::RequestError) -> Self {
        match err {
            wit::RequestError::Denied(text) => RequestError::Denied(text),
            wit::RequestError::Unsupported(text) => RequestError::Unsupported(text),
            wit::RequestError::Limit(text) => RequestError::Limit(text),
            wit::RequestError::Failed(text) => RequestError::Failed(text),
        }
    }
}

impl fmt::Display for RequestError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            RequestError::Denied(text) => write!(f, "denied: {text}"),
            RequestError::Unsupported(text) => write!(f, "unsupported: {text}"),
            RequestError::Limit(text) => write!(f, "limit: {text}"),
            RequestError::Failed(text) => write!(f, "failed: {text}"),
        }
    }
}

impl std::error::Error for RequestError {}

#[cfg(test)]
mod tests {
    use super::*;
    use serde::Deserialize;

    #[test]
    fn a_request_error_reads_as_the_host_and_the_other_sdks_word_it() {
        let kinds = [
            (RequestError::Denied("x".into()), "denied: x"),
            (RequestError::Unsupported("x".into()), "unsupported: x"),
            (RequestError::Limit("x".into()), "limit: x"),
            (RequestError::Failed("x".into()), "failed: x"),
        ];
        for (error, text) in kinds {
            assert_eq!(error.to_string(), text);
        }
    }

    #[derive(Deserialize, JsonSchema)]
    #[allow(dead_code)]
    enum Size {
        Small,
        Large,
    }

    #[derive(Deserialize, JsonSchema)]
    #[allow(dead_code)]
    struct Order {
        /// Who it is for.
        name: String,
        /// How many.
        count: u32,
        size: Size,
        /// A note, if any.
        note: Option<String>,
        gift: bool,
    }

    #[test]
    fn a_form_schema_is_flat_as_mcp_wants() {
        let schema = form_schema::<Order>();
        let properties = &schema["properties"];
        assert_eq!(schema["type"], "object");
        assert_eq!(properties["name"], serde_json::json!({"type": "string", "description": "Who it is for."}));
        assert_eq!(properties["count"]["type"], "integer");
        assert!(properties["count"].get("format").is_none());
        assert_eq!(properties["size"]["enum"], serde_json::json!(["Small", "Large"]));
        assert_eq!(properties["size"]["type"], "string");
        assert_eq!(properties["note"]["type"], "string");
        assert_eq!(properties["note"]["description"], "A note, if any.");
        assert!(schema.get("$defs").is_none() && schema.get("$schema").is_none());
        let required: Vec<&str> = schema["required"].as_array().unwrap().iter().filter_map(Value::as_str).collect();
        assert!(required.contains(&"name") && !required.contains(&"note"), "{required:?}");
    }
}

//! The host side of contract 0.2.0's imports: `log` into the call's log
//! sink, and `call` (progress to the call's observer; elicitation, sampling,
//! roots and `ask` as questions in the host's types, through
//! `HostState::ask_all`, which checks them on the way out and back).

use super::bindings::toolhost;
use super::convert::block;
use crate::ask;
use crate::content::Content;
use crate::sandbox::HostState;
use crate::sandbox::logs::Level as HostLevel;

use toolhost::plugin::call::{
    Answer, ElicitAnswer, Elicitation, Question, RequestError, Root, SamplingReply, SamplingRequest,
};
use toolhost::plugin::log::{Field, Level};
use toolhost::plugin::types;

impl types::Host for HostState {}

impl toolhost::plugin::log::Host for HostState {
    async fn log(&mut self, level: Level, message: String, fields: Vec<Field>) -> wasmtime::Result<()> {
        let level = match level {
            Level::Trace => HostLevel::Trace,
            Level::Debug => HostLevel::Debug,
            Level::Info => HostLevel::Info,
            Level::Warn => HostLevel::Warn,
            Level::Error => HostLevel::Error,
        };
        let fields = fields.into_iter().map(|Field { key, value }| (key, value)).collect();
        self.record_log(level, message, fields);
        Ok(())
    }
}

impl toolhost::plugin::call::Host for HostState {
    async fn progress(&mut self, done: f64, total: Option<f64>, message: Option<String>) -> wasmtime::Result<()> {
        self.record_progress(done, total, message);
        Ok(())
    }

    async fn elicit(&mut self, request: Elicitation) -> wasmtime::Result<Result<ElicitAnswer, RequestError>> {
        let key = self.next_key("elicit");
        let answer = self.ask_one(key, Question::Elicit(request)).await?;
        Ok(answer.and_then(|answer| match answer {
            Answer::Elicited(answer) => Ok(answer),
            _ => Err(mismatched()),
        }))
    }

    async fn sample(&mut self, request: SamplingRequest) -> wasmtime::Result<Result<SamplingReply, RequestError>> {
        let key = self.next_key("sample");
        let answer = self.ask_one(key, Question::Sample(request)).await?;
        Ok(answer.and_then(|answer| match answer {
            Answer::Sampled(reply) => Ok(reply),
            _ => Err(mismatched()),
        }))
    }

    async fn roots(&mut self) -> wasmtime::Result<Result<Vec<Root>, RequestError>> {
        let key = self.next_key("roots");
        let answer = self.ask_one(key, Question::Roots).await?;
        Ok(answer.and_then(|answer| match answer {
            Answer::Roots(roots) => Ok(roots),
            _ => Err(mismatched()),
        }))
    }

    async fn ask(&mut self, questions: Vec<(String, Question)>) -> wasmtime::Result<Vec<Result<Answer, RequestError>>> {
        let questions = questions.into_iter().map(|(key, question)| (key, question_of(question))).collect();
        let answers = self.ask_all(questions).await?;
        Ok(answers.into_iter().map(|answer| answer.map(answer_of).map_err(request_error)).collect())
    }
}

impl HostState {
    /// The key of a single question: `elicit-N`, `sample-N`, `roots-N`.
    fn next_key(&self, kind: &str) -> String {
        format!("{kind}-{}", self.asked() + 1)
    }

    async fn ask_one(&mut self, key: String, question: Question) -> wasmtime::Result<Result<Answer, RequestError>> {
        let mut answers = toolhost::plugin::call::Host::ask(self, vec![(key, question)]).await?;
        Ok(answers.pop().unwrap_or_else(|| Err(mismatched())))
    }
}

fn mismatched() -> RequestError {
    RequestError::Failed("the answer was not one to this question".to_owned())
}

fn request_error(err: ask::AskError) -> RequestError {
    match err {
        ask::AskError::Denied(why) => RequestError::Denied(why),
        ask::AskError::Unsupported(why) => RequestError::Unsupported(why),
        ask::AskError::Limit(why) => RequestError::Limit(why),
        ask::AskError::Failed(why) => RequestError::Failed(why),
    }
}

fn role_of(role: types::Role) -> ask::Role {
    match role {
        types::Role::User => ask::Role::User,
        types::Role::Assistant => ask::Role::Assistant,
    }
}

/// A question as the host keeps it. A form's schema that is not JSON is
/// kept as a string, which [`ask::Question::check`] refuses.
fn question_of(question: Question) -> ask::Question {
    match question {
        Question::Elicit(Elicitation::Form((message, schema))) => {
            let schema = serde_json::from_str(&schema).unwrap_or(serde_json::Value::String(schema));
            ask::Question::Elicit(ask::Elicitation::Form { message, schema })
        }
        Question::Elicit(Elicitation::Url((message, url))) => {
            ask::Question::Elicit(ask::Elicitation::Url { message, url })
        }
        Question::Sample(request) => ask::Question::Sample(ask::Sampling {
            messages: request
                .messages
                .into_iter()
                .map(|message| ask::Message {
                    role: role_of(message.role),
                    content: block(types::Block { content: message.content, annotations: None }).content,
                })
                .collect(),
            system_prompt: request.system_prompt,
            max_tokens: request.max_tokens,
            temperature: request.temperature,
            stop_sequences: request.stop_sequences,
            preferences: request.preferences.map(|preferences| {
                let hints: Vec<serde_json::Value> =
                    preferences.hints.iter().map(|hint| serde_json::json!({ "name": hint })).collect();
                let mut wire = serde_json::json!({
                    "hints": hints,
                    "costPriority": preferences.cost_priority,
                    "speedPriority": preferences.speed_priority,
                    "intelligencePriority": preferences.intelligence_priority,
                });
                if let Some(object) = wire.as_object_mut() {
                    object.retain(|_, value| !value.is_null());
                }
                wire
            }),
        }),
        Question::Roots => ask::Question::Roots,
    }
}

fn answer_of(answer: ask::Answer) -> Answer {
    match answer {
        ask::Answer::Elicited(ask::Elicited::Accepted(content)) => {
            Answer::Elicited(ElicitAnswer::Accepted(serde_json::Value::Object(content).to_string()))
        }
        ask::Answer::Elicited(ask::Elicited::Declined) => Answer::Elicited(ElicitAnswer::Declined),
        ask::Answer::Elicited(ask::Elicited::Cancelled) => Answer::Elicited(ElicitAnswer::Cancelled),
        ask::Answer::Sampled(reply) => Answer::Sampled(SamplingReply {
            role: types::Role::Assistant,
            content: match reply.content {
                Content::Image { mime_type, data } => types::Content::Image(types::Media { mime_type, data }),
                Content::Audio { mime_type, data } => types::Content::Audio(types::Media { mime_type, data }),
                Content::Text { text } => types::Content::Text(text),
                _ => types::Content::Text(String::new()),
            },
            model: reply.model,
            stop_reason: reply.stop_reason,
        }),
        ask::Answer::Roots(roots) => {
            Answer::Roots(roots.into_iter().map(|root| Root { uri: root.uri, name: root.name }).collect())
        }
    }
}

//! What a tool call asks while toolhost's own front ends run it (`run`,
//! `chat`, `call`): sampling is answered by toolhost's configured model
//! (`run`/`chat`: the run's model, counted in its usage and events; `call`:
//! the one `--model` names), elicitation and roots by a person's asker (the
//! terminal) when there is one. Without a person, elicitation is declined and
//! the roots are the working folder.

use crate::model::{Conversation, Message, ModelClient, Protocol, StopKind, TokenUsage};

/// The smallest `max_output_tokens` the OpenAI Responses API takes.
const MIN_RESPONSES_TOKENS: u32 = 16;
use std::future::Future;
use std::pin::Pin;
use std::sync::Arc;
use toolhost_runtime::ask::{self, Answer, AskError, Asked, Asker, Elicited, Question, Root, Sampling};
use toolhost_runtime::content::Content;

/// Told of each sampling request answered: the model and the tokens used.
pub type OnSampled = Arc<dyn Fn(&str, &TokenUsage) + Send + Sync>;

/// Answers a call's questions with a model and, for the rest, a person.
pub struct ModelAsker {
    /// The model that answers sampling, if any (`None`: `unsupported`, with `why`).
    pub model: Option<ModelClient>,
    /// Why there is no model, as the plugin is told.
    pub why_no_model: String,
    /// Who answers elicitation and roots (the terminal), if anyone.
    pub person: Option<Arc<dyn Asker>>,
    /// Told of each sampling request answered.
    pub on_sampled: Option<OnSampled>,
}

impl Asker for ModelAsker {
    fn ask<'a>(&'a self, questions: &'a [(String, Question)]) -> Pin<Box<dyn Future<Output = Asked> + Send + 'a>> {
        Box::pin(async move {
            // What the person answers goes to them in one batch, in order.
            let theirs: Vec<(String, Question)> =
                questions.iter().filter(|(_, question)| !matches!(question, Question::Sample(_))).cloned().collect();
            let mut answered = match (&self.person, theirs.is_empty()) {
                (Some(person), false) => match person.ask(&theirs).await {
                    Asked::Answers(answers) => answers.into_iter(),
                    Asked::Suspend => Vec::new().into_iter(),
                },
                _ => theirs.iter().map(|(_, question)| Ok(nobody(question))).collect::<Vec<_>>().into_iter(),
            };
            let mut answers = Vec::with_capacity(questions.len());
            for (_, question) in questions {
                answers.push(match question {
                    Question::Sample(sampling) => self.sample(sampling).await,
                    _ => answered.next().unwrap_or_else(|| Err(AskError::Failed("no answer was given".to_owned()))),
                });
            }
            Asked::Answers(answers)
        })
    }
}

/// The answer when nobody can be asked: declined, or the working folder.
fn nobody(question: &Question) -> Answer {
    match question {
        Question::Roots => Answer::Roots(working_folder().into_iter().collect()),
        _ => Answer::Elicited(Elicited::Declined),
    }
}

/// The current folder as a root (`file://…`, percent-encoded).
pub fn working_folder() -> Option<Root> {
    let folder = std::env::current_dir().ok()?;
    let path = folder.to_str()?;
    let mut uri = String::from("file://");
    for byte in path.bytes() {
        if byte.is_ascii_alphanumeric() || b"/-._~".contains(&byte) {
            uri.push(char::from(byte));
        } else {
            uri.push_str(&format!("%{byte:02X}"));
        }
    }
    let name = folder.file_name().and_then(|name| name.to_str()).map(str::to_owned);
    Some(Root { uri, name })
}

impl ModelAsker {
    async fn sample(&self, sampling: &Sampling) -> Result<Answer, AskError> {
        let Some(model) = &self.model else {
            return Err(AskError::Unsupported(self.why_no_model.clone()));
        };
        let messages = sampling
            .messages
            .iter()
            .map(|message| {
                let content = ask_text(&message.content);
                match message.role {
                    ask::Role::User => Message::User { content },
                    ask::Role::Assistant => {
                        Message::Assistant { content, tool_calls: Vec::new(), state: Default::default() }
                    }
                }
            })
            .collect();
        let conversation = Conversation { system: sampling.system_prompt.clone(), messages };
        // The request allows no more than the grant let the tool ask for
        // (what the sampling budget counted), reasoning included.
        let client = model.limited(sampling.max_tokens);
        if client.endpoint().protocol == Protocol::OpenaiResponses && sampling.max_tokens < MIN_RESPONSES_TOKENS {
            return Err(AskError::Failed(format!(
                "the model's API (OpenAI Responses) takes no request for fewer than {MIN_RESPONSES_TOKENS} tokens, \
                 and this one asks for at most {}",
                sampling.max_tokens
            )));
        }
        let reply = client
            .complete(&conversation, &[], &mut |_| {})
            .await
            .map_err(|err| AskError::Failed(format!("the model did not answer: {err}")))?;
        let name = client.endpoint().model.clone();
        if let Some(on_sampled) = &self.on_sampled {
            on_sampled(&name, &reply.usage);
        }
        // Only a finished reply (or one cut at the request's own limit,
        // which MCP calls `maxTokens`) is an answer.
        let stop_reason = match reply.stop.kind {
            StopKind::Done => "endTurn",
            StopKind::Length => "maxTokens",
            StopKind::ToolUse => "toolUse",
            StopKind::ContentFilter => {
                return Err(AskError::Failed(format!(
                    "the model refused or its provider filtered the answer ({})",
                    reply.stop
                )));
            }
            StopKind::ContextWindow => {
                return Err(AskError::Failed(format!(
                    "the messages do not fit the model's context window ({})",
                    reply.stop
                )));
            }
            StopKind::Paused | StopKind::Unknown => {
                return Err(AskError::Failed(format!("the model's reply was not finished ({})", reply.stop)));
            }
        };
        Ok(Answer::Sampled(ask::Reply {
            content: Content::Text { text: reply.content },
            model: name,
            stop_reason: Some(stop_reason.to_owned()),
        }))
    }
}

/// A sampling message as text: images and audio are named, not sent.
fn ask_text(content: &Content) -> String {
    match content {
        Content::Text { text } => text.clone(),
        Content::Image { mime_type, data } => format!("[image: {mime_type}, {} bytes]", data.len()),
        Content::Audio { mime_type, data } => format!("[audio: {mime_type}, {} bytes]", data.len()),
        _ => String::new(),
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::model::{Endpoint, RequestOptions};

    #[tokio::test]
    async fn a_sampling_request_too_small_for_the_responses_api_fails_before_it_is_sent() {
        // Nothing listens there: the request must not be attempted at all.
        let endpoint = Endpoint {
            protocol: Protocol::OpenaiResponses,
            base_url: "http://127.0.0.1:1/v1".into(),
            model: "o4-mini".into(),
            api_key: None,
        };
        let options = RequestOptions { max_retries: 0, ..RequestOptions::default() };
        let asker = ModelAsker {
            model: Some(ModelClient::new(endpoint, options).unwrap()),
            why_no_model: String::new(),
            person: None,
            on_sampled: None,
        };
        let sampling = |max_tokens| Sampling {
            messages: vec![ask::Message { role: ask::Role::User, content: Content::Text { text: "hi".into() } }],
            system_prompt: None,
            max_tokens,
            temperature: None,
            stop_sequences: Vec::new(),
            preferences: None,
        };
        match asker.sample(&sampling(10)).await {
            Err(AskError::Failed(why)) => assert!(why.contains("fewer than 16 tokens") && why.contains("10"), "{why}"),
            other => panic!("expected a refusal, got {other:?}"),
        }
        // At 16 it is sent (and here finds nobody).
        match asker.sample(&sampling(16)).await {
            Err(AskError::Failed(why)) => assert!(why.contains("could not reach the model"), "{why}"),
            other => panic!("expected a failed request, got {other:?}"),
        }
    }
}

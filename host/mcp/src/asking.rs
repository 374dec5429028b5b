//! A plugin's questions (elicitation, sampling, roots) passed on to the MCP
//! client, per protocol revision:
//!
//! - a client of a session (2025-11-25 and before) is sent each question as
//!   a server-to-client request while the call waits ([`SessionAsker`]);
//! - a client of 2026-07-28 answers by calling again (SEP-2322, multi
//!   round-trip requests): the call stops at its first unanswered question
//!   and is answered with an `InputRequiredResult` holding every question
//!   of that batch, and a `requestState` that carries the answers given so
//!   far, sealed (HMAC) and bound to the request. The retry runs the call
//!   from the start; each question already answered gets its answer at once
//!   ([`RoundAsker`]).
//!
//! Either way a question for a capability the client did not declare is
//! refused to the plugin (`unsupported`), and a call that then fails is
//! answered with MCP's `MissingRequiredClientCapability` error (-32021) on
//! 2026-07-28, naming the capability.

use rmcp::model::{ClientCapabilities, InputRequests, InputResponses, RequestStateCodec, SealOptions, ServerRequest};
use rmcp::service::Peer;
use rmcp::{ErrorData, RoleServer};
use serde_json::{Map, Value, json};
use std::collections::{BTreeMap, BTreeSet};
use std::future::Future;
use std::pin::Pin;
use std::sync::Mutex;
use std::time::Duration;
use toolhost_runtime::ask::{Answer, AskError, Asked, Asker, Elicitation, Question};

/// How long a `requestState` stays good.
const STATE_TTL: Duration = Duration::from_secs(3600);

/// The environment variable that gives replicas a common key for sealing
/// `requestState` (at least 32 bytes); without it each process has its own.
pub const STATE_KEY_ENV: &str = "TOOLHOST_STATE_KEY";

/// The client capability `question` needs that `capabilities` lacks, if any.
pub(crate) fn missing(capabilities: &ClientCapabilities, question: &Question) -> Option<&'static str> {
    let declared = match question {
        Question::Elicit(Elicitation::Form { .. }) => capabilities
            .elicitation
            .as_ref()
            .is_some_and(|elicitation| elicitation.form.is_some() || elicitation.url.is_none()),
        Question::Elicit(Elicitation::Url { .. }) => {
            capabilities.elicitation.as_ref().is_some_and(|elicitation| elicitation.url.is_some())
        }
        Question::Sample(_) => capabilities.sampling.is_some(),
        Question::Roots => capabilities.roots.is_some(),
    };
    (!declared).then(|| question.capability())
}

/// A client's answer to `question`, checked: [`Answer::from_mcp`], except
/// that the answer to a page to open (URL-mode elicitation) carries no
/// `content` to the plugin, whatever the client put there: the user's
/// input went to the page, not through the client.
pub fn answer_from_mcp(question: &Question, answer: &Value) -> Result<Answer, String> {
    if let Question::Elicit(Elicitation::Url { .. }) = question {
        let mut answer = answer.clone();
        if let Some(answer) = answer.as_object_mut() {
            answer.remove("content");
        }
        return Answer::from_mcp(question, &answer);
    }
    Answer::from_mcp(question, answer)
}

pub(crate) fn undeclared(capability: &str) -> AskError {
    AskError::Unsupported(format!("the MCP client did not declare the `{capability}` capability"))
}

/// Asks a session's client, one server-to-client request per question.
pub struct SessionAsker {
    pub peer: Peer<RoleServer>,
    pub capabilities: ClientCapabilities,
}

impl SessionAsker {
    async fn ask_one(&self, key: &str, question: &Question) -> Result<Answer, AskError> {
        if let Some(capability) = missing(&self.capabilities, question) {
            return Err(undeclared(capability));
        }
        let result = send(&self.peer, question, question.to_mcp(key)).await.map_err(AskError::Failed)?;
        answer_from_mcp(question, &result)
            .map_err(|why| AskError::Failed(format!("the client's answer was refused: {why}")))
    }
}

/// Sends `question` (its MCP `params`) to the client as a request; its
/// answer as the client sent it, or why there is none.
pub(crate) async fn send(peer: &Peer<RoleServer>, question: &Question, params: Value) -> Result<Value, String> {
    let request: ServerRequest = serde_json::from_value(json!({ "method": question.method(), "params": params }))
        .map_err(|err| format!("the question cannot be sent over MCP: {err}"))?;
    let result = peer.send_request(request).await.map_err(|err| match err {
        rmcp::ServiceError::McpError(error) => format!("the client answered with an error: {}", error.message),
        other => format!("the client did not answer: {other}"),
    })?;
    serde_json::to_value(result).map_err(|err| format!("the client's answer could not be read: {err}"))
}

impl Asker for SessionAsker {
    fn ask<'a>(&'a self, questions: &'a [(String, Question)]) -> Pin<Box<dyn Future<Output = Asked> + Send + 'a>> {
        Box::pin(async move {
            let mut answers = Vec::with_capacity(questions.len());
            for (key, question) in questions {
                answers.push(self.ask_one(key, question).await);
            }
            Asked::Answers(answers)
        })
    }
}

/// Answers a 2026-07-28 call from what its client sent (`inputResponses`
/// and the answers sealed in `requestState`), and keeps what it could not.
pub struct RoundAsker {
    capabilities: ClientCapabilities,
    given: BTreeMap<String, Value>,
    round: Mutex<Round>,
}

#[derive(Default)]
struct Round {
    /// Questions the client is to answer, as MCP requests.
    pending: Map<String, Value>,
    /// The answers the call used, by key: the next `requestState`.
    used: Map<String, Value>,
    /// An answer that was not one to its question.
    bad: Option<String>,
    /// Capabilities the call asked for and the client lacks.
    missing: BTreeSet<&'static str>,
}

/// What a request's round ended in, besides its own result.
pub enum RoundEnd {
    /// The call stopped to ask: answer with this.
    InputRequired(rmcp::model::InputRequiredResult),
    /// The client sent an answer that is not one to its question.
    BadResponse(ErrorData),
    /// The call failed after the client lacked a capability it needed.
    MissingCapability(ErrorData),
}

/// Seals and opens `requestState`.
pub struct StateSeal(RequestStateCodec);

impl StateSeal {
    /// A seal with the key in [`STATE_KEY_ENV`], or a fresh random one.
    pub fn from_env() -> anyhow::Result<StateSeal> {
        let key = match std::env::var(STATE_KEY_ENV) {
            Ok(key) if key.len() >= RequestStateCodec::MIN_KEY_LENGTH => key.into_bytes(),
            Ok(_) => anyhow::bail!(
                "{STATE_KEY_ENV} is shorter than {} bytes; set it to a long random secret shared by the replicas",
                RequestStateCodec::MIN_KEY_LENGTH
            ),
            Err(_) => {
                let mut key = vec![0u8; 32];
                ring::rand::SecureRandom::fill(&ring::rand::SystemRandom::new(), &mut key)
                    .map_err(|_| anyhow::anyhow!("the system has no random numbers to key requestState with"))?;
                key
            }
        };
        Ok(StateSeal(RequestStateCodec::try_new(key)?))
    }
}

impl StateSeal {
    /// `value` sealed (HMAC) and bound to `binding`, good for `ttl`: what
    /// toolhost gives a client to hand back unchanged (a cursor).
    pub(crate) fn seal<T: serde::Serialize>(&self, value: &T, binding: &[u8], ttl: Duration) -> Option<String> {
        let options = SealOptions::new().associated_data(binding).ttl(ttl);
        self.0.seal_json_with(value, &options).ok()
    }

    /// What [`StateSeal::seal`] sealed for `binding`, if `sealed` is that, unchanged and not expired.
    pub(crate) fn open<T: serde::de::DeserializeOwned>(&self, sealed: &str, binding: &[u8]) -> Option<T> {
        self.0.open_json_with(sealed, binding).ok()
    }
}

/// What a `requestState` holds: the answers given so far, by key.
#[derive(serde::Serialize, serde::Deserialize)]
struct State {
    answers: Map<String, Value>,
}

impl RoundAsker {
    /// The asker of one 2026-07-28 request, whose `binding` (method, name,
    /// arguments) the state is sealed to.
    pub fn new(
        seal: &StateSeal,
        binding: &[u8],
        capabilities: Option<ClientCapabilities>,
        responses: Option<InputResponses>,
        state: Option<&str>,
    ) -> Result<RoundAsker, ErrorData> {
        let mut given: BTreeMap<String, Value> = BTreeMap::new();
        if let Some(state) = state {
            let opened: State = seal.0.open_json_with(state, binding).map_err(|err| {
                ErrorData::invalid_params(
                    format!(
                        "requestState was refused ({err}): it was changed, belongs to another request, has expired, \
                         or was sealed by a server with another key (give replicas a common {STATE_KEY_ENV})"
                    ),
                    None,
                )
            })?;
            given.extend(opened.answers);
        }
        given.extend(responses.unwrap_or_default());
        Ok(RoundAsker { capabilities: capabilities.unwrap_or_default(), given, round: Mutex::default() })
    }

    fn round(&self) -> std::sync::MutexGuard<'_, Round> {
        self.round.lock().unwrap_or_else(|p| p.into_inner())
    }

    /// How the request ends given the call's outcome: `failed` when the
    /// call (or prompt, or read) failed; `suspended` when it stopped to ask.
    pub fn end(&self, seal: &StateSeal, binding: &[u8], suspended: bool, failed: bool) -> Option<RoundEnd> {
        let round = std::mem::take(&mut *self.round());
        if let Some(bad) = round.bad {
            return Some(RoundEnd::BadResponse(ErrorData::invalid_params(bad, None)));
        }
        if suspended {
            let requests: InputRequests = match serde_json::from_value(Value::Object(round.pending)) {
                Ok(requests) => requests,
                Err(err) => {
                    let error =
                        ErrorData::internal_error(format!("the plugin's questions cannot be sent: {err}"), None);
                    return Some(RoundEnd::BadResponse(error));
                }
            };
            let options = SealOptions::new().associated_data(binding).ttl(STATE_TTL);
            let state = seal.0.seal_json_with(&State { answers: round.used }, &options).ok();
            return Some(RoundEnd::InputRequired(rmcp::model::InputRequiredResult::new(Some(requests), state)));
        }
        if failed && !round.missing.is_empty() {
            return Some(RoundEnd::MissingCapability(missing_capability(&round.missing)));
        }
        None
    }
}

/// MCP's `MissingRequiredClientCapability` error (-32021) for a call that
/// failed after the client lacked `capabilities`.
pub fn missing_capability(capabilities: &BTreeSet<&'static str>) -> ErrorData {
    let mut required = json!({});
    for capability in capabilities {
        required[*capability] = json!({});
    }
    let required: ClientCapabilities = serde_json::from_value(required).unwrap_or_default();
    let names: Vec<&str> = capabilities.iter().copied().collect();
    let mut error = ErrorData::missing_required_client_capability(required);
    error.message =
        format!("the tool needs the client's {} capability, which the request did not declare", names.join(" and "))
            .into();
    error
}

impl Asker for RoundAsker {
    fn ask<'a>(&'a self, questions: &'a [(String, Question)]) -> Pin<Box<dyn Future<Output = Asked> + Send + 'a>> {
        Box::pin(async move {
            let mut round = self.round();
            let mut answers = Vec::with_capacity(questions.len());
            for (key, question) in questions {
                if let Some(capability) = missing(&self.capabilities, question) {
                    round.missing.insert(capability);
                    answers.push(Err(undeclared(capability)));
                    continue;
                }
                match self.given.get(key) {
                    Some(given) => match answer_from_mcp(question, given) {
                        Ok(answer) => {
                            let mut kept = given.clone();
                            if let (Question::Elicit(Elicitation::Url { .. }), Some(kept)) =
                                (question, kept.as_object_mut())
                            {
                                kept.remove("content");
                            }
                            round.used.insert(key.clone(), kept);
                            answers.push(Ok(answer));
                        }
                        Err(why) => {
                            round.bad = Some(format!("inputResponses: the answer under `{key}` was refused: {why}"));
                            return Asked::Suspend;
                        }
                    },
                    None => {
                        round.pending.insert(
                            key.clone(),
                            json!({ "method": question.method(), "params": question.to_mcp(key) }),
                        );
                    }
                }
            }
            if round.pending.is_empty() { Asked::Answers(answers) } else { Asked::Suspend }
        })
    }
}

/// The bytes a `requestState` is bound to: the method, the name (or URI),
/// the arguments and who asked ([`crate::caller::Caller::binding`]), so a
/// state cannot be replayed against another request, nor by another user.
pub fn binding(method: &str, name: &str, arguments: &impl serde::Serialize, caller: &str) -> Vec<u8> {
    let arguments = serde_json::to_string(arguments).unwrap_or_default();
    format!("{method}\n{name}\n{arguments}\n{caller}").into_bytes()
}

#[cfg(test)]
mod tests {
    use super::*;
    use toolhost_runtime::ask::Elicited;

    #[test]
    fn a_url_answer_carries_no_content_to_the_plugin() {
        let url = Question::Elicit(Elicitation::Url { message: "open".into(), url: "https://example.com/".into() });
        let answer = json!({"action": "accept", "content": {"password": "hunter2", "admin": true}});
        assert_eq!(answer_from_mcp(&url, &answer), Ok(Answer::Elicited(Elicited::Accepted(Map::new()))));
        let form = Question::Elicit(Elicitation::Form {
            message: "name?".into(),
            schema: json!({"type": "object", "properties": {"name": {"type": "string"}}}),
        });
        let named = json!({"action": "accept", "content": {"name": "Ada"}});
        let Ok(Answer::Elicited(Elicited::Accepted(content))) = answer_from_mcp(&form, &named) else {
            panic!("a form's answer is refused")
        };
        assert_eq!(content["name"], "Ada");
    }
}

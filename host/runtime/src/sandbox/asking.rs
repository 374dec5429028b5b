//! A plugin's questions (elicitation, sampling, roots) on their way out of
//! the sandbox: each checked (its key, the operator's grant, its shape, the
//! per-call bounds and the sampling budget) and scrubbed before the call's
//! [`Asker`](crate::ask::Asker) sees it, and the call's deadline moved by the
//! time spent waiting for answers. Every contract's questions come here in
//! the host's own types (`crate::ask`).

use crate::outbound::Outbound;
use crate::outcome::{QUESTIONS_LIMIT, QuestionAsked};
use std::sync::{Arc, Mutex};
use std::time::Instant;
use toolhost_grants::Granted;
use toolhost_grants::env::Redactor;

impl Asking {
    /// Asks `questions` (key, question) for the plugin: each checked (its
    /// key, the operator's grant, its shape, the per-call bounds and the
    /// sampling budget), the rest passed to the call's [`Asker`](crate::ask::Asker)
    /// in one batch. The time spent waiting for answers (at most
    /// [`ANSWER_TIMEOUT`](crate::ask::ANSWER_TIMEOUT)) does not count against
    /// the call's timeout. `Err` stops the call: the front end suspended it.
    /// `granted` and `plugin` are the call's; `outbound` has its deadline
    /// moved with the call's.
    pub(crate) async fn ask_all(
        &mut self,
        questions: Vec<(String, crate::ask::Question)>,
        granted: &Granted,
        plugin: &str,
        outbound: &mut Outbound,
    ) -> wasmtime::Result<Vec<Result<crate::ask::Answer, crate::ask::AskError>>> {
        use crate::ask::{ANSWER_TIMEOUT, AskError, Asked, MAX_QUESTIONS, Question};
        let mut answers: Vec<Option<Result<crate::ask::Answer, AskError>>> = Vec::with_capacity(questions.len());
        let mut passed: Vec<(String, Question)> = Vec::new();
        let mut slots = Vec::new();
        let kinds: Vec<&'static str> = questions.iter().map(|(_, question)| question.capability()).collect();
        for (key, question) in questions {
            let refused = if let Err(why) = crate::ask::check_key(&key) {
                Some(AskError::Failed(why))
            } else if !self.keys.insert(key.clone()) {
                Some(AskError::Failed(format!("the key `{key}` was already asked in this call")))
            } else if self.keys.len() > MAX_QUESTIONS {
                Some(AskError::Limit(format!("a call may ask at most {MAX_QUESTIONS} questions")))
            } else if let Some(why) = granted.requests.refusal(plugin, question.capability()) {
                Some(AskError::Denied(why))
            } else if let Err(why) = question.check() {
                Some(AskError::Failed(why))
            } else if let Question::Sample(sampling) = &question {
                let budget = granted.requests.sampling.unwrap_or(0);
                if sampling.max_tokens > self.tokens_left {
                    Some(AskError::Limit(format!(
                        "this asks the model for up to {} tokens, and {} of the call's sampling budget of {budget} \
                         are left (`sampling = {{ max_tokens = N }}` under [plugins.{}])",
                        sampling.max_tokens, self.tokens_left, plugin
                    )))
                } else {
                    self.tokens_left -= sampling.max_tokens;
                    None
                }
            } else {
                None
            };
            match refused {
                Some(refusal) => answers.push(Some(Err(refusal))),
                None => {
                    slots.push(answers.len());
                    answers.push(None);
                    passed.push((key, scrubbed(&granted.redactor, question)));
                }
            }
        }
        if !passed.is_empty() {
            let asked = match self.asker.clone() {
                None => Asked::Answers(
                    passed
                        .iter()
                        .map(|_| {
                            Err(AskError::Unsupported(
                                "nothing can answer here: this call was not made by a client, terminal or model that \
                                 can be asked"
                                    .to_owned(),
                            ))
                        })
                        .collect(),
                ),
                Some(asker) => {
                    let waiting = Instant::now();
                    let deadline = self.deadline.get();
                    self.deadline.set(waiting + ANSWER_TIMEOUT);
                    let asked = tokio::time::timeout(ANSWER_TIMEOUT, asker.ask(&passed)).await;
                    let waited = waiting.elapsed();
                    self.deadline.set(deadline + waited);
                    outbound.postpone(waited);
                    asked.unwrap_or_else(|_| {
                        let why = format!("no answer came within {}s", ANSWER_TIMEOUT.as_secs());
                        Asked::Answers(passed.iter().map(|_| Err(AskError::Failed(why.clone()))).collect())
                    })
                }
            };
            match asked {
                Asked::Suspend => {
                    for (index, kind) in kinds.iter().enumerate() {
                        match &answers[index] {
                            Some(refused) => self.note(kind, refused),
                            None => self.noted.push(kind, "suspended", None, None),
                        }
                    }
                    self.suspended = true;
                    wasmtime::bail!("the call stopped to ask its client");
                }
                Asked::Answers(given) => {
                    let mut given = given.into_iter();
                    for slot in slots {
                        answers[slot] = Some(given.next().unwrap_or_else(|| {
                            Err(AskError::Failed("the front end gave no answer to this question".to_owned()))
                        }));
                    }
                }
            }
        }
        // Every slot was filled above: a refusal, or the front end's answer.
        let answers: Vec<_> = answers
            .into_iter()
            .map(|answer| answer.unwrap_or_else(|| Err(AskError::Failed("no answer was given".to_owned()))))
            .collect();
        for (kind, answer) in kinds.iter().zip(&answers) {
            self.note(kind, answer);
        }
        Ok(answers)
    }

    /// Notes a question of `kind` and how it ended, for the call's audit line.
    fn note(&mut self, kind: &'static str, answer: &Result<crate::ask::Answer, crate::ask::AskError>) {
        use crate::ask::{Answer, AskError, Elicited};
        use serde_json::{Value, json};
        let (outcome, why, shown) = match answer {
            Ok(Answer::Elicited(Elicited::Accepted(values))) => ("answered", None, Some(Value::Object(values.clone()))),
            Ok(Answer::Elicited(Elicited::Declined)) => ("declined", None, None),
            Ok(Answer::Elicited(Elicited::Cancelled)) => ("cancelled", None, None),
            Ok(Answer::Sampled(reply)) => {
                let content = match &reply.content {
                    crate::content::Content::Text { text } => json!({"text": text}),
                    _ => json!({"media": "not kept"}),
                };
                ("answered", None, Some(content))
            }
            Ok(Answer::Roots(roots)) => {
                ("answered", None, Some(Value::Array(roots.iter().map(|root| json!(root.uri)).collect())))
            }
            Err(AskError::Denied(_)) => ("refused", Some("denied"), None),
            Err(AskError::Unsupported(_)) => ("refused", Some("unsupported"), None),
            Err(AskError::Limit(_)) => ("refused", Some("limit"), None),
            Err(AskError::Failed(_)) => ("refused", Some("failed"), None),
        };
        self.noted.push(kind, outcome, why, shown);
    }

    /// How many questions the call asked so far.
    pub(crate) fn asked(&self) -> usize {
        self.keys.len()
    }
}

/// `question` with the plugin's secrets taken out of what leaves the sandbox.
fn scrubbed(redactor: &Redactor, question: crate::ask::Question) -> crate::ask::Question {
    use crate::ask::{Elicitation, Question};
    let scrub = |text: String| redactor.scrub(text);
    match question {
        Question::Elicit(Elicitation::Form { message, schema }) => {
            let text = scrub(schema.to_string());
            let schema = serde_json::from_str(&text).unwrap_or(schema);
            Question::Elicit(Elicitation::Form { message: scrub(message), schema })
        }
        Question::Elicit(Elicitation::Url { message, url }) => {
            Question::Elicit(Elicitation::Url { message: scrub(message), url: scrub(url) })
        }
        Question::Sample(mut sampling) => {
            sampling.system_prompt = sampling.system_prompt.map(scrub);
            for message in &mut sampling.messages {
                if let crate::content::Content::Text { text } = &mut message.content {
                    *text = scrub(std::mem::take(text));
                }
            }
            Question::Sample(sampling)
        }
        Question::Roots => Question::Roots,
    }
}

/// The deadline of a call, which waiting for answers postpones.
#[derive(Clone)]
pub(crate) struct Deadline(Arc<Mutex<Instant>>);

impl Deadline {
    pub(crate) fn new(at: Instant) -> Deadline {
        Deadline(Arc::new(Mutex::new(at)))
    }

    pub(crate) fn get(&self) -> Instant {
        *self.0.lock().unwrap_or_else(|p| p.into_inner())
    }

    pub(crate) fn set(&self, deadline: Instant) {
        *self.0.lock().unwrap_or_else(|p| p.into_inner()) = deadline;
    }
}

/// What a call asked so far, and who answers.
pub(crate) struct Asking {
    asker: Option<Arc<dyn crate::ask::Asker>>,
    deadline: Deadline,
    keys: std::collections::HashSet<String>,
    /// Sampling tokens left of the call's budget.
    tokens_left: u32,
    /// The front end stopped the call to ask its client.
    pub(crate) suspended: bool,
    /// What was asked and how it ended, for the call's audit line.
    pub(crate) noted: Noted,
}

/// The questions a call asked, bounded ([`QUESTIONS_LIMIT`]).
#[derive(Default)]
pub(crate) struct Noted {
    pub(crate) questions: Vec<QuestionAsked>,
    pub(crate) more: u32,
}

impl Noted {
    fn push(
        &mut self,
        kind: &'static str,
        outcome: &'static str,
        why: Option<&'static str>,
        answer: Option<serde_json::Value>,
    ) {
        if self.questions.len() < QUESTIONS_LIMIT {
            self.questions.push(QuestionAsked { kind, outcome, why, answer });
        } else {
            self.more = self.more.saturating_add(1);
        }
    }
}

impl Asking {
    /// Nothing asked yet: `asker` answers, `deadline` is the call's, and
    /// sampling may use up to `tokens` tokens.
    pub(crate) fn new(asker: Option<Arc<dyn crate::ask::Asker>>, deadline: Deadline, tokens: u32) -> Asking {
        Asking {
            asker,
            deadline,
            keys: std::collections::HashSet::new(),
            tokens_left: tokens,
            suspended: false,
            noted: Noted::default(),
        }
    }
}

//! Who a request comes from, and what one requestor may hold at once.
//!
//! A request's [`Caller`] is what the transport proved about it: the
//! token's [`Principal`] (with `[serve.oauth]`) and its 2025-11-25 session,
//! if any. Tasks are owned by it ([`Owner`]): another principal (or, for a
//! session's tasks, another session) is answered exactly as for an id that
//! never existed.
//!
//! Its requestor (the principal, else the HTTP session; stdio and a
//! stateless request without a token have none) is what the per-requestor
//! limits count ([`Requestors`]): calls running at once (further ones wait
//! for one of the requestor's own slots before they take one of the
//! server's) and questions waiting for an answer (further ones are refused
//! to the plugin). [`Fair`] wraps a call's asker with the second, and bounds
//! how long one call waits for its client in all to the call's own
//! `timeout`, so that a question nobody answers holds a call slot no longer
//! than the call itself may run. A call waits for its requestor's slot no
//! longer than its `timeout` either, then is refused saying why.
//!
//! With `[state] url` both limits are counted in the shared store over every
//! replica ([`crate::state::requestors`]); without one, in this process.

use crate::oauth::Principal;
use crate::state::requestors::{Held, NotHeld, SharedRequestors};
use rmcp::RoleServer;
use rmcp::service::RequestContext;
use std::collections::HashMap;
use std::future::Future;
use std::pin::Pin;
use std::sync::{Arc, Mutex, OnceLock};
use std::time::{Duration, Instant};
use tokio::sync::{OwnedSemaphorePermit, Semaphore};
use toolhost_runtime::ask::{AskError, Asked, Asker, Question};

/// Questions one requestor may have waiting for an answer at once, unless configured otherwise.
pub const DEFAULT_MAX_QUESTIONS_PER_REQUESTOR: usize = 16;

/// Who a request comes from.
#[derive(Clone, Debug, Default)]
pub struct Caller {
    /// The token's subject and client (`[serve.oauth]`).
    pub principal: Option<Principal>,
    /// The 2025-11-25 session (`http:ID`, or `stdio` for the one client of stdio).
    pub session: Option<String>,
}

impl Caller {
    /// The caller of a request, as its transport put it in the context.
    pub fn of(context: &RequestContext<RoleServer>) -> Caller {
        let parts = context.extensions.get::<http::request::Parts>();
        let principal = parts.and_then(|parts| parts.extensions.get::<Principal>()).cloned();
        let session = match parts {
            Some(parts) => parts
                .headers
                .get("mcp-session-id")
                .and_then(|value| value.to_str().ok())
                .map(|session| format!("http:{session}")),
            None => Some("stdio".to_owned()),
        };
        Caller { principal, session }
    }

    /// Who the per-requestor limits count this request against: the
    /// principal, else the HTTP session; `None` (the server's limits only)
    /// for stdio's one client and for a stateless request without a token.
    pub fn requestor(&self) -> Option<String> {
        match (&self.principal, &self.session) {
            (Some(principal), _) => Some(format!("principal {}", principal.key())),
            (None, Some(session)) if session.starts_with("http:") => Some(format!("session {session}")),
            _ => None,
        }
    }

    /// The owner of a task this request creates; `session`: bound to the
    /// request's session too (a 2025-11-25 task).
    pub fn owner(&self, session: bool) -> Owner {
        Owner {
            principal: self.principal.clone(),
            session: if session { self.session.clone() } else { None },
            requestor: self.requestor(),
        }
    }

    /// Who the audit log and the hooks name (`[audit]`, `[[hooks]]`): the
    /// token's subject and client, else the client's name from `initialize`
    /// (`client_name`), and the session; `path` names the way in.
    pub fn audited(&self, path: &'static str, client_name: Option<String>) -> toolhost_catalog::Caller {
        let (subject, client) = match &self.principal {
            Some(principal) => {
                let (subject, client) = principal.parts();
                (Some(subject.to_owned()), client.map(str::to_owned))
            }
            None => (None, None),
        };
        toolhost_catalog::Caller { path, subject, client: client.or(client_name), session: self.session.clone() }
    }

    /// Bytes that tie something sealed for this caller (a `requestState`,
    /// a cursor) to it.
    pub fn binding(&self) -> String {
        match &self.principal {
            Some(principal) => format!("principal {}", principal.key()),
            None => "anyone".to_owned(),
        }
    }
}

/// Who owns a task: only a request of the same principal (and, for a
/// session's task, the same session) sees it.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct Owner {
    pub principal: Option<Principal>,
    /// The session a 2025-11-25 task belongs to.
    pub session: Option<String>,
    /// Whose per-requestor task limit it counts against.
    pub requestor: Option<String>,
}

impl Owner {
    /// Whether `caller` may see what this owner owns.
    pub fn admits(&self, caller: &Caller) -> bool {
        self.principal == caller.principal && (self.session.is_none() || self.session == caller.session)
    }
}

/// The per-requestor limits, and what each requestor holds now.
pub struct Requestors {
    max_calls: usize,
    max_questions: usize,
    calls: Mutex<HashMap<String, Arc<Semaphore>>>,
    questions: Mutex<HashMap<String, usize>>,
    /// With `[state] url`: the limits as every replica counts them.
    shared: OnceLock<Arc<SharedRequestors>>,
}

impl Requestors {
    /// At most `max_calls` calls running and `max_questions` questions
    /// waiting per requestor (both at least 1).
    pub fn new(max_calls: usize, max_questions: usize) -> Requestors {
        Requestors {
            max_calls: max_calls.max(1),
            max_questions: max_questions.max(1),
            calls: Mutex::default(),
            questions: Mutex::default(),
            shared: OnceLock::new(),
        }
    }

    /// Counts the limits in `shared` from now on, over every replica (once).
    pub fn share(&self, shared: SharedRequestors) {
        let _ = self.shared.set(Arc::new(shared));
    }

    /// Calls one requestor may run at once.
    pub fn max_calls(&self) -> usize {
        self.max_calls
    }

    /// Waits, at most `bound`, for one of `requestor`'s call slots (none
    /// needed without a requestor); the slot is held until the returned value
    /// is dropped. `Err`: why the call is refused, in one line.
    pub async fn admit(self: &Arc<Self>, requestor: Option<&str>, bound: Duration) -> Result<Option<CallSlot>, String> {
        let Some(requestor) = requestor else { return Ok(None) };
        if let Some(shared) = self.shared.get() {
            match shared.call_slot(requestor, self.max_calls, bound).await {
                Ok(held) => {
                    let (requestors, requestor) = (self.clone(), String::new());
                    return Ok(Some(CallSlot { requestors, requestor, permit: None, _held: Some(held) }));
                }
                Err(NotHeld::Full) => return Err(self.no_slot(bound)),
                Err(NotHeld::Unavailable(reason)) if shared.fail_open() => {
                    tracing::warn!(%reason, "the shared per-requestor limits are unreachable: holding the call to this replica's own ([state] on_unavailable = \"open\")");
                }
                Err(NotHeld::Unavailable(reason)) => return Err(reason),
            }
        }
        let semaphore = {
            let mut calls = self.calls.lock().unwrap_or_else(|p| p.into_inner());
            calls.entry(requestor.to_owned()).or_insert_with(|| Arc::new(Semaphore::new(self.max_calls))).clone()
        };
        // The semaphore is never closed, so waiting always ends with a permit or the bound.
        let permit = match semaphore.clone().try_acquire_owned() {
            Ok(permit) => permit,
            Err(_) => match tokio::time::timeout(bound, semaphore.acquire_owned()).await {
                Ok(Ok(permit)) => permit,
                Ok(Err(_)) => return Ok(None),
                Err(_) => return Err(self.no_slot(bound)),
            },
        };
        Ok(Some(CallSlot {
            requestors: self.clone(),
            requestor: requestor.to_owned(),
            permit: Some(permit),
            _held: None,
        }))
    }

    /// Why a call that waited `bound` for its requestor's slot is refused.
    fn no_slot(&self, bound: Duration) -> String {
        let max = self.max_calls;
        let bound = HumanSeconds(bound);
        format!(
            "this client already runs {max} call{} at once, the most toolhost lets one client run \
             (`max_calls_per_requestor` in [serve]), and none ended within this call's timeout ({bound}); \
             try again once they end",
            if max == 1 { "" } else { "s" }
        )
    }

    /// [`Requestors::questions_out`], over every replica with a store.
    /// `Err(None)`: past the limit; `Err(Some(reason))`: the store cannot be asked.
    async fn take_questions(
        self: &Arc<Self>,
        requestor: Option<&str>,
        count: usize,
    ) -> Result<QuestionsOut, Option<String>> {
        if let (Some(shared), Some(who)) = (self.shared.get(), requestor) {
            match shared.questions(who, self.max_questions, count).await {
                Ok(held) => {
                    return Ok(QuestionsOut { requestors: self.clone(), requestor: None, count, _held: held });
                }
                Err(NotHeld::Full) => return Err(None),
                Err(NotHeld::Unavailable(reason)) if shared.fail_open() => {
                    tracing::warn!(%reason, "the shared per-requestor limits are unreachable: counting the questions on this replica ([state] on_unavailable = \"open\")");
                }
                Err(NotHeld::Unavailable(reason)) => return Err(Some(reason)),
            }
        }
        self.questions_out(requestor, count).ok_or(None)
    }

    /// Counts `count` questions of `requestor` as waiting, or `None` when
    /// that would pass its limit (nothing is counted then).
    fn questions_out(self: &Arc<Self>, requestor: Option<&str>, count: usize) -> Option<QuestionsOut> {
        let Some(requestor) = requestor else {
            return Some(QuestionsOut { requestors: self.clone(), requestor: None, count, _held: Vec::new() });
        };
        let mut questions = self.questions.lock().unwrap_or_else(|p| p.into_inner());
        let waiting = questions.entry(requestor.to_owned()).or_insert(0);
        if *waiting + count > self.max_questions {
            if *waiting == 0 {
                questions.remove(requestor);
            }
            return None;
        }
        *waiting += count;
        Some(QuestionsOut { requestors: self.clone(), requestor: Some(requestor.to_owned()), count, _held: Vec::new() })
    }
}

/// One of a requestor's call slots, given back when dropped.
pub struct CallSlot {
    requestors: Arc<Requestors>,
    requestor: String,
    permit: Option<OwnedSemaphorePermit>,
    /// With a store: the slot there (given back when dropped).
    _held: Option<Held>,
}

impl Drop for CallSlot {
    fn drop(&mut self) {
        // A slot in the store holds nothing in this process.
        let Some(permit) = self.permit.take() else { return };
        drop(permit);
        let mut calls = self.requestors.calls.lock().unwrap_or_else(|p| p.into_inner());
        // Forget a requestor that holds no slot and that nobody waits on.
        let idle = calls.get(&self.requestor).is_some_and(|semaphore| {
            Arc::strong_count(semaphore) == 1 && semaphore.available_permits() == self.requestors.max_calls
        });
        if idle {
            calls.remove(&self.requestor);
        }
    }
}

/// Questions counted as waiting until dropped.
struct QuestionsOut {
    requestors: Arc<Requestors>,
    requestor: Option<String>,
    count: usize,
    /// With a store: the places there (given back when dropped).
    _held: Vec<Held>,
}

impl Drop for QuestionsOut {
    fn drop(&mut self) {
        let Some(requestor) = &self.requestor else { return };
        let mut questions = self.requestors.questions.lock().unwrap_or_else(|p| p.into_inner());
        if let Some(waiting) = questions.get_mut(requestor) {
            *waiting = waiting.saturating_sub(self.count);
            if *waiting == 0 {
                questions.remove(requestor);
            }
        }
    }
}

/// A call's asker, held to the per-requestor question limit, and waiting
/// at most the call's `timeout` for its client over the whole call.
pub struct Fair {
    inner: Arc<dyn Asker>,
    requestors: Arc<Requestors>,
    requestor: Option<String>,
    timeout: Duration,
    /// How much of `timeout` is left to wait.
    left: Mutex<Duration>,
}

impl Fair {
    pub fn new(
        inner: Arc<dyn Asker>,
        requestors: Arc<Requestors>,
        requestor: Option<String>,
        timeout: Duration,
    ) -> Fair {
        Fair { inner, requestors, requestor, timeout, left: Mutex::new(timeout) }
    }

    fn left(&self) -> std::sync::MutexGuard<'_, Duration> {
        self.left.lock().unwrap_or_else(|p| p.into_inner())
    }
}

fn all(questions: &[(String, Question)], error: impl Fn() -> AskError) -> Asked {
    Asked::Answers(questions.iter().map(|_| Err(error())).collect())
}

impl Asker for Fair {
    fn ask<'a>(&'a self, questions: &'a [(String, Question)]) -> Pin<Box<dyn Future<Output = Asked> + Send + 'a>> {
        Box::pin(async move {
            let _out = match self.requestors.take_questions(self.requestor.as_deref(), questions.len()).await {
                Ok(out) => out,
                Err(Some(reason)) => return all(questions, || AskError::Failed(reason.clone())),
                Err(None) => {
                    let max = self.requestors.max_questions;
                    return all(questions, || {
                        AskError::Limit(format!(
                            "this client has {max} questions waiting for an answer already, the most toolhost lets \
                             one client have (`max_questions_per_requestor` in [serve]); ask again once they are \
                             answered"
                        ))
                    });
                }
            };
            let timeout = HumanSeconds(self.timeout);
            let no_time = || {
                AskError::Failed(format!(
                    "no answer came within the call's timeout ({timeout}), which also bounds how long a call waits \
                     for its client"
                ))
            };
            let left = *self.left();
            if left.is_zero() {
                return all(questions, no_time);
            }
            let started = Instant::now();
            let asked = tokio::time::timeout(left, self.inner.ask(questions)).await;
            let mut remaining = self.left();
            *remaining = remaining.saturating_sub(started.elapsed());
            match asked {
                Ok(asked) => asked,
                Err(_) => {
                    *remaining = Duration::ZERO;
                    all(questions, no_time)
                }
            }
        })
    }
}

/// A duration as whole seconds, or milliseconds under a second.
struct HumanSeconds(Duration);

impl std::fmt::Display for HumanSeconds {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        if self.0 < Duration::from_secs(1) {
            write!(f, "{}ms", self.0.as_millis())
        } else {
            write!(f, "{}s", self.0.as_secs())
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use toolhost_runtime::ask::Elicitation;

    /// An asker that never answers.
    struct Silent;

    impl Asker for Silent {
        fn ask<'a>(&'a self, _: &'a [(String, Question)]) -> Pin<Box<dyn Future<Output = Asked> + Send + 'a>> {
            Box::pin(std::future::pending())
        }
    }

    fn question() -> Vec<(String, Question)> {
        let url = Elicitation::Url { message: "open it".into(), url: "https://example.com/".into() };
        vec![("q".to_owned(), Question::Elicit(url))]
    }

    #[tokio::test]
    async fn a_call_waits_for_its_client_no_longer_than_its_timeout_in_all() {
        let requestors = Arc::new(Requestors::new(1, 4));
        let fair = Fair::new(Arc::new(Silent), requestors, Some("alice".into()), Duration::from_millis(200));
        let started = Instant::now();
        let Asked::Answers(answers) = fair.ask(&question()).await else { panic!("suspended") };
        assert!(matches!(&answers[0], Err(AskError::Failed(why)) if why.contains("timeout (200ms)")), "{answers:?}");
        assert!(started.elapsed() < Duration::from_secs(1));
        // The budget is spent: a second question is refused at once.
        let again = Instant::now();
        let Asked::Answers(answers) = fair.ask(&question()).await else { panic!("suspended") };
        assert!(answers[0].is_err() && again.elapsed() < Duration::from_millis(100));
    }

    #[tokio::test]
    async fn one_requestor_cannot_have_more_questions_waiting_than_its_limit() {
        let requestors = Arc::new(Requestors::new(1, 1));
        let slow = Fair::new(Arc::new(Silent), requestors.clone(), Some("alice".into()), Duration::from_secs(30));
        let waiting = tokio::spawn(async move { slow.ask(&question()).await });
        tokio::time::sleep(Duration::from_millis(50)).await;
        let second = Fair::new(Arc::new(Silent), requestors.clone(), Some("alice".into()), Duration::from_secs(30));
        let Asked::Answers(answers) = second.ask(&question()).await else { panic!("suspended") };
        assert!(matches!(&answers[0], Err(AskError::Limit(why)) if why.contains("max_questions_per_requestor")));
        // Another requestor is not held up by alice's.
        let bob = Fair::new(Arc::new(Silent), requestors.clone(), Some("bob".into()), Duration::from_millis(50));
        let Asked::Answers(answers) = bob.ask(&question()).await else { panic!("suspended") };
        assert!(matches!(&answers[0], Err(AskError::Failed(_))), "{answers:?}");
        waiting.abort();
        let _ = waiting.await;
        assert!(requestors.questions.lock().unwrap().is_empty(), "given back when the wait ends");
    }

    #[tokio::test]
    async fn a_requestor_runs_at_most_its_calls_and_others_are_not_held_up() {
        let requestors = Arc::new(Requestors::new(1, 1));
        let long = Duration::from_secs(30);
        let first = requestors.admit(Some("alice"), long).await.unwrap();
        assert!(first.is_some());
        let second = tokio::time::timeout(Duration::from_millis(100), requestors.admit(Some("alice"), long)).await;
        assert!(second.is_err(), "alice's second call waits for her first");
        assert!(requestors.admit(Some("bob"), long).await.unwrap().is_some(), "bob runs beside her");
        assert!(requestors.admit(None, long).await.unwrap().is_none(), "no requestor: the server's limits only");
        // Waiting is bounded: past it the call is refused, saying why.
        let refused = requestors.admit(Some("alice"), Duration::from_millis(50)).await.err().unwrap();
        assert!(refused.contains("already runs 1 call at once") && refused.contains("(50ms)"), "{refused}");
        drop(first);
        assert!(requestors.admit(Some("alice"), long).await.unwrap().is_some());
        assert!(requestors.calls.lock().unwrap().is_empty(), "an idle requestor is forgotten");
    }

    #[test]
    fn an_owner_admits_only_its_principal_and_session() {
        let alice = Principal::new("alice", None);
        let caller = |principal: Option<&Principal>, session: &str| Caller {
            principal: principal.cloned(),
            session: Some(session.to_owned()),
        };
        let extension = caller(Some(&alice), "http:1").owner(false);
        assert!(extension.admits(&caller(Some(&alice), "http:2")));
        assert!(!extension.admits(&caller(Some(&Principal::new("bob", None)), "http:1")));
        assert!(!extension.admits(&caller(None, "http:1")));
        let session = caller(Some(&alice), "http:1").owner(true);
        assert!(session.admits(&caller(Some(&alice), "http:1")));
        assert!(!session.admits(&caller(Some(&alice), "http:2")));
        assert_eq!(caller(None, "stdio").requestor(), None);
        assert_eq!(caller(None, "http:1").requestor().as_deref(), Some("session http:1"));
    }
}

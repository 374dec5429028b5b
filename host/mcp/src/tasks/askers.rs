//! The askers of a call that runs as a task: [`TaskAsker`] (its questions
//! answered through `tasks/get` and `tasks/update`) and [`PhasedAsker`] (the
//! request's asker until the call becomes a task, the task's after).

use super::{Pending, Status, Task};
use crate::asking::missing;
use rmcp::model::ClientCapabilities;
use serde_json::json;
use std::collections::BTreeSet;
use std::future::Future;
use std::pin::Pin;
use std::sync::{Arc, Mutex, MutexGuard};
use tokio::sync::Notify;
use toolhost_runtime::ask::{Answer, AskError, Asked, Asker, Question};

/// Answers a task's questions through `tasks/get` (`inputRequests`) and
/// `tasks/update`: the call waits for them, as with a session's client.
pub struct TaskAsker {
    task: Arc<Task>,
    capabilities: ClientCapabilities,
    /// Capabilities the call asked for and the client lacks.
    missing: Mutex<BTreeSet<&'static str>>,
}

impl TaskAsker {
    pub fn new(task: Arc<Task>, capabilities: ClientCapabilities) -> TaskAsker {
        TaskAsker { task, capabilities, missing: Mutex::default() }
    }

    /// The capabilities the call needed and the client lacked.
    pub fn missing(&self) -> BTreeSet<&'static str> {
        self.missing.lock().unwrap_or_else(|p| p.into_inner()).clone()
    }
}

impl Asker for TaskAsker {
    fn ask<'a>(&'a self, questions: &'a [(String, Question)]) -> Pin<Box<dyn Future<Output = Asked> + Send + 'a>> {
        Box::pin(async move {
            let mut answers: Vec<Option<Result<Answer, AskError>>> = questions.iter().map(|_| None).collect();
            let mut waiting: Vec<(usize, String)> = Vec::new();
            {
                let mut state = self.task.state();
                for (index, (key, question)) in questions.iter().enumerate() {
                    if let Some(capability) = missing(&self.capabilities, question) {
                        self.missing.lock().unwrap_or_else(|p| p.into_inner()).insert(capability);
                        answers[index] = Some(Err(crate::asking::undeclared(capability)));
                        continue;
                    }
                    // A key is never used twice in a task (the spec's MUST): a
                    // question asked again under its key gets a fresh one.
                    let mut wire = key.clone();
                    let mut n = 1;
                    while state.keys.contains(&wire) {
                        n += 1;
                        wire = format!("{key}.{n}");
                    }
                    state.keys.insert(wire.clone());
                    let request = json!({ "method": question.method(), "params": question.to_mcp(&wire) });
                    state.pending.insert(wire.clone(), Pending { request, question: question.clone() });
                    waiting.push((index, wire));
                }
                if !waiting.is_empty() && !state.status.terminal() {
                    state.status = Status::InputRequired;
                    Task::touch(&mut state);
                }
            }
            // Whatever ends this wait (answers, the task's end, the call's
            // own timeout dropping it), its questions are withdrawn after.
            let _withdraw = Withdraw { task: &self.task, keys: waiting.iter().map(|(_, wire)| wire.clone()).collect() };
            if !waiting.is_empty() {
                // A `tasks/result` waiting on the task sends them.
                self.task.wake.notify_waiters();
            }
            while !waiting.is_empty() {
                let notified = self.task.wake.notified();
                tokio::pin!(notified);
                notified.as_mut().enable();
                {
                    let mut state = self.task.state();
                    if state.status.terminal() {
                        for (index, _) in &waiting {
                            answers[*index] = Some(Err(AskError::Failed("the task ended".into())));
                        }
                        break;
                    }
                    if waiting.iter().all(|(_, wire)| state.answers.contains_key(wire)) {
                        for (index, wire) in waiting.drain(..) {
                            let answer = match state.answers.remove(&wire) {
                                Some(Ok(value)) => crate::asking::answer_from_mcp(&questions[index].1, &value)
                                    .map_err(|why| AskError::Failed(format!("the client's answer was refused: {why}"))),
                                Some(Err(why)) => Err(AskError::Failed(why)),
                                None => Err(AskError::Failed("no answer".into())),
                            };
                            answers[index] = Some(answer);
                        }
                        if state.pending.is_empty() {
                            state.status = Status::Working;
                            Task::touch(&mut state);
                        }
                        break;
                    }
                }
                notified.await;
            }
            Asked::Answers(
                answers
                    .into_iter()
                    .map(|answer| answer.unwrap_or_else(|| Err(AskError::Failed("no answer".into()))))
                    .collect(),
            )
        })
    }
}

/// Questions of a task's call, withdrawn (no longer shown or answerable)
/// when the call stops waiting for them.
struct Withdraw<'a> {
    task: &'a Task,
    keys: Vec<String>,
}

impl Drop for Withdraw<'_> {
    fn drop(&mut self) {
        let mut state = self.task.state();
        let mut changed = false;
        for key in &self.keys {
            changed |= state.pending.remove(key).is_some();
            state.answers.remove(key);
            state.sent.remove(key);
        }
        if state.pending.is_empty() && matches!(state.status, Status::InputRequired) {
            state.status = Status::Working;
            changed = true;
        }
        if changed {
            Task::touch(&mut state);
            drop(state);
            self.task.wake.notify_waiters();
        }
    }
}

/// The asker of a call that may become a task: until it does, questions go
/// to the request's own asker (a session's client, or a 2026-07-28 round,
/// which answers by calling again); after, to the task's. The switch waits
/// while a question is out to the request's asker, and never happens once
/// the call stopped to ask by calling again, or finished.
pub struct PhasedAsker {
    before: Arc<dyn Asker>,
    phase: Mutex<Phase>,
    changed: Notify,
}

#[derive(Default)]
struct Phase {
    task: Option<(Arc<Task>, Arc<TaskAsker>)>,
    /// Questions out to the request's asker now.
    busy: usize,
    /// The request's asker suspended the call (its client answers by calling again).
    suspended: bool,
    /// The call ended before it became a task.
    finished: bool,
}

impl PhasedAsker {
    pub fn new(before: Arc<dyn Asker>) -> PhasedAsker {
        PhasedAsker { before, phase: Mutex::default(), changed: Notify::new() }
    }

    fn phase(&self) -> MutexGuard<'_, Phase> {
        self.phase.lock().unwrap_or_else(|p| p.into_inner())
    }

    /// The task the call became, if it did.
    pub fn task(&self) -> Option<Arc<Task>> {
        self.phase().task.as_ref().map(|(task, _)| task.clone())
    }

    /// Makes the call a task, if it may become one now and `keep` keeps the
    /// task (false: the store is full).
    pub fn escalate(&self, task: &Arc<Task>, asker: &Arc<TaskAsker>, keep: impl FnOnce() -> bool) -> bool {
        let mut phase = self.phase();
        if phase.task.is_some() || phase.busy > 0 || phase.suspended || phase.finished || !keep() {
            return false;
        }
        phase.task = Some((task.clone(), asker.clone()));
        true
    }

    /// Called once when the call ended: the task it became, or `None` (and
    /// it can no longer become one).
    pub fn end(&self) -> Option<Arc<Task>> {
        let mut phase = self.phase();
        phase.finished = true;
        phase.task.as_ref().map(|(task, _)| task.clone())
    }

    /// Resolves at the next change (a question answered by the request's asker).
    pub fn changed(&self) -> tokio::sync::futures::Notified<'_> {
        self.changed.notified()
    }
}

/// Counts a question out to the request's asker, until dropped.
struct Busy<'a>(&'a PhasedAsker);

impl Drop for Busy<'_> {
    fn drop(&mut self) {
        self.0.phase().busy -= 1;
        self.0.changed.notify_waiters();
    }
}

impl Asker for PhasedAsker {
    fn ask<'a>(&'a self, questions: &'a [(String, Question)]) -> Pin<Box<dyn Future<Output = Asked> + Send + 'a>> {
        Box::pin(async move {
            let task_asker = {
                let mut phase = self.phase();
                match &phase.task {
                    Some((_, asker)) => Some(asker.clone()),
                    None => {
                        phase.busy += 1;
                        None
                    }
                }
            };
            if let Some(asker) = task_asker {
                return asker.ask(questions).await;
            }
            let busy = Busy(self);
            let asked = self.before.ask(questions).await;
            if matches!(asked, Asked::Suspend) {
                self.phase().suspended = true;
            }
            drop(busy);
            asked
        })
    }
}

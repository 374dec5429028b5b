//! The tasks of this process ([`Tasks`]): created bounded in all and per
//! requestor, found by id (saying why an id is not here: another replica,
//! a restart, expiry), listed, expired by a timer; the ids' shape.

use super::{
    DEFAULT_MAX_TASKS, DEFAULT_POLL_INTERVAL, DEFAULT_TASKS_PER_REQUESTOR_SHARE, DEFAULT_TTL, Full, MAX_REPLICA,
    MAX_TASK_ID, REPLICA_ENV, State, Task, TaskKind, TasksConfig, iso8601,
};
use crate::caller::{Caller, Owner};
use rmcp::ErrorData;
use serde_json::{Value, json};
use std::collections::{HashMap, VecDeque};
use std::sync::{Arc, Mutex, MutexGuard};
use std::time::{Duration, Instant, SystemTime};
use tokio::sync::Notify;
use tokio_util::sync::CancellationToken;
use toolhost_runtime::limits::HumanDuration;
use toolhost_runtime::text::quoted;

/// The tasks of this process.
pub struct Tasks {
    config: TasksConfig,
    ttl: Duration,
    poll_interval: Duration,
    max_tasks: usize,
    max_per_requestor: usize,
    /// This replica's name, and the random name of this run of it.
    pub(super) replica: String,
    pub(super) run: String,
    entries: Mutex<HashMap<String, Arc<Task>>>,
    /// Tasks that expired lately, and whose they were (at most `max_tasks`):
    /// their owner is told they expired, anyone else that they are unknown.
    expired: Mutex<VecDeque<(String, Owner)>>,
    /// Woken when a task is kept, so that the expiry timer looks again.
    kept: Arc<Notify>,
    /// With `[state] url`: the store every replica finds tasks in.
    shared: std::sync::OnceLock<Arc<super::shared::StoreTasks>>,
}

impl Tasks {
    /// The store `config` describes, named by [`REPLICA_ENV`] (or at random).
    pub fn new(config: TasksConfig) -> anyhow::Result<Tasks> {
        let replica = match std::env::var(REPLICA_ENV) {
            Ok(name) => {
                let fits = !name.is_empty()
                    && name.len() <= MAX_REPLICA
                    && name.bytes().all(|byte| byte.is_ascii_alphanumeric() || b"-_.".contains(&byte));
                if !fits {
                    anyhow::bail!(
                        "{REPLICA_ENV} must be 1 to {MAX_REPLICA} letters, digits, `-`, `_` or `.` (it names this \
                         replica in task ids), not `{}`",
                        name.escape_debug()
                    );
                }
                name
            }
            Err(_) => random_hex(3)?,
        };
        let ttl = config.ttl.map_or(DEFAULT_TTL, |ttl| ttl.0);
        if ttl < Duration::from_secs(1) || ttl > Duration::from_secs(7 * 24 * 3600) {
            anyhow::bail!("[serve.tasks] ttl must be between 1s and 7 days, not {}", HumanDuration(ttl));
        }
        let poll_interval = config.poll_interval.map_or(DEFAULT_POLL_INTERVAL, |poll| poll.0);
        if poll_interval < Duration::from_millis(10) || poll_interval > ttl {
            anyhow::bail!(
                "[serve.tasks] poll_interval must be between 10ms and the ttl, not {}",
                HumanDuration(poll_interval)
            );
        }
        let max_tasks = config.max_tasks.unwrap_or(DEFAULT_MAX_TASKS);
        if max_tasks == 0 {
            anyhow::bail!("[serve.tasks] max_tasks must be at least 1 (leave out [serve.tasks] for no tasks)");
        }
        let max_per_requestor =
            config.max_tasks_per_requestor.unwrap_or((max_tasks / DEFAULT_TASKS_PER_REQUESTOR_SHARE).max(1));
        if max_per_requestor == 0 || max_per_requestor > max_tasks {
            anyhow::bail!(
                "[serve.tasks] max_tasks_per_requestor must be between 1 and max_tasks ({max_tasks}), not \
                 {max_per_requestor}"
            );
        }
        Ok(Tasks {
            config,
            ttl,
            poll_interval,
            max_tasks,
            max_per_requestor,
            replica,
            run: random_hex(4)?,
            entries: Mutex::default(),
            expired: Mutex::default(),
            kept: Arc::new(Notify::new()),
            shared: std::sync::OnceLock::new(),
        })
    }

    /// Keeps these tasks in the shared store too (`[state] url`), so that
    /// every replica finds them, and listens for other replicas'
    /// cancellations and answers of the tasks this one runs. Once only;
    /// needs a tokio runtime.
    pub fn share(self: &Arc<Self>, store: Arc<super::shared::StoreTasks>) {
        if self.shared.set(store.clone()).is_ok() {
            let tasks: std::sync::Weak<Tasks> = Arc::downgrade(self);
            store.listen(tasks);
        }
    }

    /// The shared store, if any.
    pub fn shared(&self) -> Option<&Arc<super::shared::StoreTasks>> {
        self.shared.get()
    }

    /// With a shared store: makes room for `task` under `max_tasks` and its
    /// requestor's share over every replica and writes its record, before
    /// its handle goes out. `Ok(false)`: no room (the call goes on in its
    /// request, as when this process is full; so too with the store
    /// unreachable and `on_unavailable = "open"`); `Err`: the store is
    /// unreachable (closed). Without a store, `Ok(true)` at once: [`Tasks::keep`]
    /// counts.
    pub async fn reserve(&self, task: &Arc<Task>) -> Result<bool, ErrorData> {
        let Some(shared) = self.shared.get() else { return Ok(true) };
        match shared.reserve(task, self.max_tasks, self.max_per_requestor).await {
            Ok(None) => Ok(true),
            Ok(Some(full)) => {
                tracing::debug!(task = %task.id, %full, "not made a task");
                Ok(false)
            }
            Err(reason) if shared.fails_open() => {
                tracing::warn!(%reason, "the call goes on in its request instead of becoming a task");
                Ok(false)
            }
            Err(reason) => Err(ErrorData::internal_error(format!("the call could not become a task: {reason}"), None)),
        }
    }

    /// Gives back a [`Tasks::reserve`] whose call did not become a task.
    pub async fn unreserve(&self, task: &Arc<Task>) {
        if let Some(shared) = self.shared.get() {
            shared.unreserve(task).await;
        }
    }

    /// Once `task` is kept and its handle about to go out: with a shared
    /// store, keeps its record up to date until it ends.
    pub fn mirror(&self, task: &Arc<Task>) {
        if let Some(shared) = self.shared.get() {
            shared.mirror(task);
        }
    }

    /// The task `id` this process runs, whoever owns it (for a message
    /// another replica passed on after checking the owner).
    pub(crate) fn local(&self, id: &str) -> Option<Arc<Task>> {
        self.entries().get(id).cloned()
    }

    /// Starts the timer that ends each task at its TTL (a running call is
    /// stopped then, whether anyone looks the task up or not). It stops
    /// once the store is dropped. Needs a tokio runtime.
    pub fn expire_on_time(self: &Arc<Self>) {
        let tasks = Arc::downgrade(self);
        let kept = self.kept.clone();
        tokio::spawn(async move {
            loop {
                // Enabled before the look: a task kept after it wakes the timer.
                let notified = kept.notified();
                let mut notified = std::pin::pin!(notified);
                notified.as_mut().enable();
                let next = match tasks.upgrade() {
                    Some(tasks) => tasks.expire_due(Instant::now()),
                    None => return,
                };
                let sleep = match next {
                    Some(at) => tokio::time::sleep_until(at.into()),
                    None => tokio::time::sleep(Duration::from_secs(3600)),
                };
                tokio::select! {
                    () = sleep => {}
                    () = notified => {}
                }
            }
        });
    }

    /// Ends every task whose TTL ran out by `now`; when the next one runs out.
    fn expire_due(&self, now: Instant) -> Option<Instant> {
        let due: Vec<Arc<Task>> = {
            let mut entries = self.entries();
            let ids: Vec<String> =
                entries.values().filter(|task| task.expires <= now).map(|task| task.id.clone()).collect();
            ids.iter().filter_map(|id| entries.remove(id)).collect()
        };
        for task in due {
            task.expire();
            self.remember_expired(&task);
        }
        self.entries().values().map(|task| task.expires).min()
    }

    fn remember_expired(&self, task: &Task) {
        let mut expired = self.expired.lock().unwrap_or_else(|p| p.into_inner());
        if expired.len() >= self.max_tasks {
            expired.pop_front();
        }
        expired.push_back((task.id.clone(), task.owner.clone()));
    }

    /// What `[serve.tasks]` says.
    pub fn config(&self) -> &TasksConfig {
        &self.config
    }

    /// This replica's name in task ids.
    pub fn replica(&self) -> &str {
        &self.replica
    }

    fn entries(&self) -> MutexGuard<'_, HashMap<String, Arc<Task>>> {
        self.entries.lock().unwrap_or_else(|p| p.into_inner())
    }

    /// A new task for a call of `tool` (offered by `origin`) by `owner`,
    /// not yet kept. `ttl`: what the client asked for (2025-11-25), kept
    /// within the configured one.
    pub fn create(&self, tool: &str, origin: &str, kind: TaskKind, owner: Owner, ttl: Option<Duration>) -> Arc<Task> {
        let secret = random_hex(16).unwrap_or_else(|_| format!("{:032x}", rand_fallback()));
        let now = SystemTime::now();
        let ttl = ttl.map_or(self.ttl, |asked| asked.clamp(Duration::from_secs(1), self.ttl));
        Arc::new(Task {
            id: format!("{}.{}.{secret}", self.replica, self.run),
            tool: tool.to_owned(),
            origin: origin.to_owned(),
            kind,
            owner,
            created_at: iso8601(now),
            expires: Instant::now() + ttl,
            ttl,
            poll_interval: self.poll_interval,
            cancel: CancellationToken::new(),
            wake: Notify::new(),
            state: Mutex::new(State { updated_at: iso8601(now), ..State::default() }),
        })
    }

    /// Keeps `task` (before its handle is given out, so that `tasks/get`
    /// finds it at once), unless `max_tasks` are kept, or its requestor
    /// holds `max_tasks_per_requestor`.
    pub fn keep(&self, task: &Arc<Task>) -> Result<(), Full> {
        {
            let mut entries = self.entries();
            if entries.len() >= self.max_tasks {
                return Err(Full::Server(self.max_tasks));
            }
            if let Some(requestor) = &task.owner.requestor {
                let held = entries.values().filter(|kept| kept.owner.requestor.as_ref() == Some(requestor)).count();
                if held >= self.max_per_requestor {
                    return Err(Full::Requestor(self.max_per_requestor));
                }
            }
            entries.insert(task.id.clone(), task.clone());
        }
        self.kept.notify_waiters();
        Ok(())
    }

    /// The task `id` if `caller` owns it, or the JSON-RPC error (-32602)
    /// saying why there is none. A task of another owner gets exactly the
    /// error of an id never given out.
    pub fn find(&self, id: &str, caller: &Caller) -> Result<Arc<Task>, ErrorData> {
        if id.len() > MAX_TASK_ID {
            return Err(not_found(id, "unknown", "is not a task id toolhost gave out (it is far too long)".into()));
        }
        let kept = self.entries().get(id).cloned();
        match kept {
            // The timer may not have ended it yet: nobody sees a task past its TTL.
            Some(task) if task.owner.admits(caller) && task.expires > Instant::now() => return Ok(task),
            Some(task) if task.owner.admits(caller) => {
                self.expire_due(Instant::now());
                drop(task);
                return Err(self.expired(id));
            }
            Some(_) => return Err(self.unknown(id)),
            None => {}
        }
        let expired = self.expired.lock().unwrap_or_else(|p| p.into_inner());
        if expired.iter().any(|(gone, owner)| gone == id && owner.admits(caller)) {
            drop(expired);
            return Err(self.expired(id));
        }
        drop(expired);
        let mut parts = id.rsplitn(3, '.');
        let (secret, run, replica) = (parts.next(), parts.next(), parts.next());
        let ours = matches!((secret, run, replica), (Some(secret), Some(run), Some(replica))
            if secret.len() == 32 && is_hex(secret) && run.len() == 8 && is_hex(run) && !replica.is_empty());
        if !ours {
            return Err(not_found(id, "unknown", "is not a task id toolhost gave out".into()));
        }
        let (run, replica) = (run.unwrap_or_default(), replica.unwrap_or_default());
        if replica != self.replica {
            let why = format!(
                "was started by toolhost replica `{}`, not this one (`{}`): that replica is gone, or this load \
                 balancer did not send the request to it. Tasks live in the replica that started them; route \
                 tasks/* by their Mcp-Name header (docs/deploy.md), or call the tool again",
                quoted(replica),
                self.replica
            );
            return Err(not_found(id, "other_replica", why));
        }
        if run != self.run {
            let why = format!(
                "was started by an earlier run of this replica (`{}`), which has restarted since: tasks live in \
                 memory and end with the process. Call the tool again",
                self.replica
            );
            return Err(not_found(id, "replica_restarted", why));
        }
        Err(self.unknown(id))
    }

    /// The error for an id of this replica and run that `caller` has no task under.
    /// With a shared store that has no record of `id`: this replica's own
    /// answer `local`, unless it blames another replica or an earlier run
    /// (any replica would have found the task in the store): then unknown.
    pub(crate) fn unknown_in_store(&self, id: &str, local: ErrorData) -> ErrorData {
        let reason = local.data.as_ref().and_then(|data| data.get("reason")).and_then(Value::as_str);
        match reason {
            Some("other_replica" | "replica_restarted") => self.unknown(id),
            _ => local,
        }
    }

    fn unknown(&self, id: &str) -> ErrorData {
        let why = format!(
            "is not known here: it has expired (tasks are kept {} from their creation) or was never created",
            HumanDuration(self.ttl)
        );
        not_found(id, "unknown", why)
    }

    fn expired(&self, id: &str) -> ErrorData {
        let why = format!("has expired: tasks are kept {} from their creation", HumanDuration(self.ttl));
        not_found(id, "expired", why)
    }

    /// The 2025-11-25 tasks of `caller`'s session (and principal) still
    /// kept, oldest first.
    pub fn owned_by(&self, caller: &Caller) -> Vec<Arc<Task>> {
        let now = Instant::now();
        let mut owned: Vec<Arc<Task>> = self
            .entries()
            .values()
            .filter(|task| task.expires > now && task.owner.session.is_some() && task.owner.admits(caller))
            .cloned()
            .collect();
        owned.sort_by(|a, b| (&a.created_at, &a.id).cmp(&(&b.created_at, &b.id)));
        owned
    }

    /// Ends the 2025-11-25 tasks of `session` (`http:ID`), which ended:
    /// they are dropped, and a running call is stopped.
    pub fn end_owned_by(&self, session: &str) {
        let ended: Vec<Arc<Task>> = {
            let mut entries = self.entries();
            let ids: Vec<String> = entries
                .values()
                .filter(|task| task.owner.session.as_deref() == Some(session))
                .map(|task| task.id.clone())
                .collect();
            ids.iter().filter_map(|id| entries.remove(id)).collect()
        };
        for task in ended {
            task.end_as_cancelled("cancelled: its MCP session ended");
        }
    }

    /// Tasks kept now by status (`working`, `input_required`, `completed`,
    /// `failed`, `cancelled`), for the operator's page.
    pub fn by_status(&self) -> std::collections::BTreeMap<&'static str, usize> {
        // Taken out first: no task's lock is waited for under the map's.
        let tasks: Vec<Arc<Task>> = self.entries().values().cloned().collect();
        let mut counts = std::collections::BTreeMap::new();
        for task in &tasks {
            *counts.entry(task.state().status.experimental()).or_default() += 1;
        }
        counts
    }

    /// Tasks kept now.
    pub fn len(&self) -> usize {
        self.entries().len()
    }

    /// True when no task is kept.
    pub fn is_empty(&self) -> bool {
        self.len() == 0
    }
}

fn is_hex(text: &str) -> bool {
    text.bytes().all(|byte| byte.is_ascii_hexdigit())
}

fn not_found(id: &str, reason: &str, why: String) -> ErrorData {
    ErrorData::invalid_params(
        format!("task `{}` {why}", quoted(id)),
        Some(json!({ "taskId": quoted(id), "reason": reason })),
    )
}

fn random_hex(bytes: usize) -> anyhow::Result<String> {
    let mut buffer = vec![0u8; bytes];
    ring::rand::SecureRandom::fill(&ring::rand::SystemRandom::new(), &mut buffer)
        .map_err(|_| anyhow::anyhow!("the system has no random numbers for task ids"))?;
    Ok(buffer.iter().map(|byte| format!("{byte:02x}")).collect())
}

/// Never used in practice (the system's random numbers do not fail once
/// the process started); keeps task creation infallible.
fn rand_fallback() -> u128 {
    let nanos = SystemTime::now().duration_since(SystemTime::UNIX_EPOCH).unwrap_or_default().as_nanos();
    nanos ^ (std::process::id() as u128) << 64
}

impl super::shared::Local for Tasks {
    fn local(&self, id: &str) -> Option<Arc<Task>> {
        Tasks::local(self, id)
    }
}

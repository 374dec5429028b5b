//! Long calls as MCP tasks: the `io.modelcontextprotocol/tasks` extension
//! (SEP-2663, the extension of MCP 2026-07-28). A client that declares the
//! extension on a request may get a task handle (`CreateTaskResult`) instead
//! of the call's result, then polls `tasks/get`, answers the call's questions
//! with `tasks/update` and stops it with `tasks/cancel`.
//!
//! Which tools run as tasks is the operator's choice, per tool or plugin, in
//! `[serve.tasks]` ([`TasksConfig`]); nothing is a task unless configured. A
//! task runs the same `Host::call_observed` as any call (limits, grants,
//! quotas, scrubbing), and its result is what the call would have returned:
//! `completed` with the tool result (`isError` included), or `failed` with
//! the JSON-RPC error the request would have got.
//!
//! Tasks live in the process that started them ([`Tasks`]: bounded in all
//! and per requestor, each kept for its TTL from creation and stopped by a
//! timer when it runs out). A task id names its replica and that replica's
//! run, so a replica asked about a task it does not hold can say why:
//! another replica started it (gone, or not reached through this load
//! balancer), or this replica restarted since, or it expired. The rest of
//! the id is 128 random bits.
//!
//! A task is owned by who started it ([`Owner`]: the token's principal,
//! and the session for a 2025-11-25 task). Any other caller is answered
//! exactly as for an id never given out, so an id seen elsewhere (a log)
//! grants nothing by itself.

use crate::asking::missing;
use crate::caller::{Caller, Owner};
use rmcp::ErrorData;
use rmcp::model::{ClientCapabilities, DetailedTask, InputRequests, InputResponses, JsonObject, TaskPayload};
use serde::{Deserialize, Deserializer};
use serde_json::{Value, json};
use std::collections::{BTreeMap, BTreeSet, HashMap, VecDeque};
use std::future::Future;
use std::pin::Pin;
use std::sync::{Arc, Mutex, MutexGuard};
use std::time::{Duration, Instant, SystemTime};
use tokio::sync::Notify;
use tokio_util::sync::CancellationToken;
use toolhost_runtime::ask::{Answer, AskError, Asked, Asker, Question};
use toolhost_runtime::limits::HumanDuration;
use toolhost_runtime::text::quoted;

/// The MCP revision whose experimental tasks (SEP-1686) are served beside
/// SEP-2663's, through `revision::tasks2025`.
pub const EXPERIMENTAL_REVISION: &str = "2025-11-25";

/// The environment variable naming this replica in its task ids (e.g. the
/// pod's name); without it each process picks a random name.
pub const REPLICA_ENV: &str = "TOOLHOST_REPLICA";
/// How long a task is kept from its creation unless configured otherwise.
pub const DEFAULT_TTL: Duration = Duration::from_secs(3600);
/// The polling interval suggested to clients unless configured otherwise.
pub const DEFAULT_POLL_INTERVAL: Duration = Duration::from_secs(1);
/// Tasks kept at once (all clients together) unless configured otherwise.
pub const DEFAULT_MAX_TASKS: usize = 1000;
/// The share of `max_tasks` one requestor may hold unless configured
/// otherwise: a tenth (at least one).
pub const DEFAULT_TASKS_PER_REQUESTOR_SHARE: usize = 10;
/// The longest task id looked at; longer ones are refused unread.
const MAX_TASK_ID: usize = 256;
/// The longest replica name.
const MAX_REPLICA: usize = 64;

/// Whether a tool's calls may run as tasks.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum TaskSupport {
    /// Never a task (the default).
    #[default]
    Forbidden,
    /// A task for clients that declare the extension, a plain call for the others.
    Optional,
    /// Only as a task: a client without the extension gets `-32021`.
    Required,
}

impl TaskSupport {
    /// The word the config and `tools/list` use.
    pub fn as_str(self) -> &'static str {
        match self {
            TaskSupport::Forbidden => "forbidden",
            TaskSupport::Optional => "optional",
            TaskSupport::Required => "required",
        }
    }
}

/// One tool's (or plugin's) entry in `[serve.tasks]`: `"optional"`, or
/// `{ support = "required", after = "2s" }`.
#[derive(Debug, Clone, Copy, Default)]
pub struct ToolTasks {
    pub support: TaskSupport,
    /// How long a call runs in its request before it becomes a task, over `[serve.tasks] after`.
    pub after: Option<Duration>,
}

impl<'de> Deserialize<'de> for ToolTasks {
    fn deserialize<D: Deserializer<'de>>(deserializer: D) -> Result<Self, D::Error> {
        #[derive(Deserialize)]
        #[serde(deny_unknown_fields)]
        struct Table {
            support: TaskSupport,
            after: Option<HumanDuration>,
        }
        let value = Value::deserialize(deserializer)?;
        let bad = |why: String| {
            serde::de::Error::custom(format!(
                "{why}: give \"optional\", \"required\" or \"forbidden\", or a table like \
                 {{ support = \"optional\", after = \"2s\" }}"
            ))
        };
        match value {
            Value::String(_) => serde_json::from_value(value)
                .map(|support| ToolTasks { support, after: None })
                .map_err(|err| bad(err.to_string())),
            Value::Object(_) => serde_json::from_value::<Table>(value)
                .map(|table| ToolTasks { support: table.support, after: table.after.map(|after| after.0) })
                .map_err(|err| bad(err.to_string())),
            other => Err(bad(format!("`{other}` is not a task setting"))),
        }
    }
}

/// `[serve.tasks]` in `toolhost.toml`: which tools run as MCP tasks, and how
/// long tasks are kept.
///
/// ```toml
/// [serve.tasks]
/// ttl = "1h"               # kept this long from creation, then dropped (a running one stopped)
/// poll_interval = "1s"     # what clients are told to poll at
/// max_tasks = 1000         # kept at once; past it, calls run in their request
/// max_tasks_per_requestor = 100  # kept at once for one token subject (or session)
/// after = "0s"             # how long a call runs in its request before it becomes a task
/// plugins = { batch = "optional" }
/// tools = { render = "required", report = { support = "optional", after = "2s" } }
/// ```
#[derive(Debug, Clone, Default, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct TasksConfig {
    pub after: Option<HumanDuration>,
    pub ttl: Option<HumanDuration>,
    pub poll_interval: Option<HumanDuration>,
    pub max_tasks: Option<usize>,
    /// Tasks kept at once for one requestor (a token's subject, else a
    /// session); a tenth of `max_tasks` unless set.
    pub max_tasks_per_requestor: Option<usize>,
    /// Per tool, by its served name (over `plugins`).
    #[serde(default)]
    pub tools: BTreeMap<String, ToolTasks>,
    /// Per plugin (file stem) or `[mcp_servers]` name.
    #[serde(default)]
    pub plugins: BTreeMap<String, ToolTasks>,
}

impl TasksConfig {
    /// Whether any tool may run as a task (then the server declares the extension).
    pub fn enabled(&self) -> bool {
        self.tools.values().chain(self.plugins.values()).any(|tasks| tasks.support != TaskSupport::Forbidden)
    }

    /// The setting of tool `name` offered by `origin`, and how long its calls
    /// run in their request first.
    pub fn for_tool(&self, name: &str, origin: &str) -> (TaskSupport, Duration) {
        let entry = self.tools.get(name).or_else(|| self.plugins.get(origin)).copied().unwrap_or_default();
        let after = entry.after.or(self.after.map(|after| after.0)).unwrap_or(Duration::ZERO);
        (entry.support, after)
    }
}

/// The tasks of this process.
pub struct Tasks {
    config: TasksConfig,
    ttl: Duration,
    poll_interval: Duration,
    max_tasks: usize,
    max_per_requestor: usize,
    /// This replica's name, and the random name of this run of it.
    replica: String,
    run: String,
    entries: Mutex<HashMap<String, Arc<Task>>>,
    /// Tasks that expired lately, and whose they were (at most `max_tasks`):
    /// their owner is told they expired, anyone else that they are unknown.
    expired: Mutex<VecDeque<(String, Owner)>>,
    /// Woken when a task is kept, so that the expiry timer looks again.
    kept: Arc<Notify>,
    /// With `[state] url`: the store every replica finds tasks in.
    shared: std::sync::OnceLock<Arc<crate::state::tasks::StoreTasks>>,
}

/// Why a task was not kept.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Full {
    /// `max_tasks` are kept.
    Server(usize),
    /// The requestor holds `max_tasks_per_requestor`.
    Requestor(usize),
}

impl std::fmt::Display for Full {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            Full::Server(max) => write!(f, "toolhost keeps {max} tasks, as many as `[serve.tasks] max_tasks` allows"),
            Full::Requestor(max) => write!(
                f,
                "this client has {max} tasks kept, as many as `[serve.tasks] max_tasks_per_requestor` allows one client"
            ),
        }
    }
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
    pub fn share(self: &Arc<Self>, store: Arc<crate::state::tasks::StoreTasks>) {
        if self.shared.set(store.clone()).is_ok() {
            store.listen(Arc::downgrade(self));
        }
    }

    /// The shared store, if any.
    pub fn shared(&self) -> Option<&Arc<crate::state::tasks::StoreTasks>> {
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

/// `2026-11-24T10:30:00.123Z`.
pub(crate) fn iso8601(time: SystemTime) -> String {
    let since = time.duration_since(SystemTime::UNIX_EPOCH).unwrap_or_default();
    let seconds = since.as_secs();
    let (days, rest) = (seconds / 86_400, seconds % 86_400);
    // Civil date from days since 1970-01-01 (Howard Hinnant's algorithm).
    let z = days as i64 + 719_468;
    let era = z.div_euclid(146_097);
    let doe = z.rem_euclid(146_097);
    let yoe = (doe - doe / 1_460 + doe / 36_524 - doe / 146_096) / 365;
    let doy = doe - (365 * yoe + yoe / 4 - yoe / 100);
    let mp = (5 * doy + 2) / 153;
    let day = doy - (153 * mp + 2) / 5 + 1;
    let month = if mp < 10 { mp + 3 } else { mp - 9 };
    let year = yoe + era * 400 + i64::from(month <= 2);
    format!(
        "{year:04}-{month:02}-{day:02}T{:02}:{:02}:{:02}.{:03}Z",
        rest / 3600,
        rest / 60 % 60,
        rest % 60,
        since.subsec_millis()
    )
}

/// Which protocol made a task, and so how it is shown and answered.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum TaskKind {
    /// SEP-2663 (`io.modelcontextprotocol/tasks`): polled with `tasks/get`,
    /// questions answered with `tasks/update`.
    Extension,
    /// MCP 2025-11-25's experimental tasks (a `task` param on `tools/call`):
    /// the result comes from `tasks/result`, questions go to the client as
    /// requests while one is open. Owned by its session too.
    Experimental,
}

/// One task: a call running (or done) in this process.
pub struct Task {
    pub id: String,
    /// The tool called, and its plugin or server (for the OAuth scope check).
    pub tool: String,
    pub origin: String,
    pub kind: TaskKind,
    /// Who started it: only they see it.
    pub owner: Owner,
    created_at: String,
    expires: Instant,
    ttl: Duration,
    poll_interval: Duration,
    /// Cancelled by `tasks/cancel` or expiry: the call's future is dropped, so the guest stops.
    pub cancel: CancellationToken,
    /// Woken when answers arrive, questions are asked, or the task ends.
    wake: Notify,
    state: Mutex<State>,
}

impl std::fmt::Debug for Task {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Task").field("id", &self.id).field("tool", &self.tool).finish_non_exhaustive()
    }
}

#[derive(Default)]
struct State {
    status: Status,
    updated_at: String,
    message: Option<String>,
    /// Questions the client is to answer, by key.
    pending: BTreeMap<String, Pending>,
    /// Answers given (or the client's error) and not yet passed to the call.
    answers: BTreeMap<String, Result<Value, String>>,
    /// Pending questions out to the client now, as requests on a
    /// `tasks/result` stream (2025-11-25).
    sent: BTreeSet<String>,
    /// Every key ever asked: a key is never used twice in a task.
    keys: BTreeSet<String>,
}

struct Pending {
    request: Value,
    question: Question,
}

#[derive(Default)]
enum Status {
    #[default]
    Working,
    InputRequired,
    Completed(JsonObject),
    Failed(JsonObject),
    Cancelled,
}

impl Status {
    fn terminal(&self) -> bool {
        matches!(self, Status::Completed(_) | Status::Failed(_) | Status::Cancelled)
    }

    /// The word MCP 2025-11-25 uses (a tool result with `isError` is `failed`).
    fn experimental(&self) -> &'static str {
        match self {
            Status::Working => "working",
            Status::InputRequired => "input_required",
            Status::Completed(result) if is_error(result) => "failed",
            Status::Completed(_) => "completed",
            Status::Failed(_) => "failed",
            Status::Cancelled => "cancelled",
        }
    }
}

/// How a task ended.
pub enum Outcome {
    /// The tool's result (`isError` included).
    Completed(JsonObject),
    /// The JSON-RPC error the request would have got.
    Failed(ErrorData),
}

impl Task {
    fn state(&self) -> MutexGuard<'_, State> {
        self.state.lock().unwrap_or_else(|p| p.into_inner())
    }

    fn touch(state: &mut State) {
        state.updated_at = iso8601(SystemTime::now());
    }

    /// The task as `tasks/get` (and `CreateTaskResult`) show it.
    pub fn detailed(&self) -> DetailedTask {
        let state = self.state();
        let mut task = rmcp::model::Task::new(
            self.id.clone(),
            rmcp::model::TaskStatus::Working,
            self.created_at.clone(),
            state.updated_at.clone(),
        )
        .with_ttl_ms(u64::try_from(self.ttl.as_millis()).unwrap_or(u64::MAX))
        .with_poll_interval_ms(u64::try_from(self.poll_interval.as_millis()).unwrap_or(u64::MAX).max(1));
        if let Some(message) = &state.message {
            task = task.with_status_message(message.clone());
        }
        let payload = match &state.status {
            Status::InputRequired if !state.pending.is_empty() => {
                let requests: Value =
                    state.pending.iter().map(|(key, pending)| (key.clone(), pending.request.clone())).collect();
                match serde_json::from_value::<InputRequests>(requests) {
                    Ok(input_requests) => TaskPayload::InputRequired { input_requests },
                    Err(_) => TaskPayload::Working,
                }
            }
            Status::Working | Status::InputRequired => TaskPayload::Working,
            Status::Completed(result) => TaskPayload::Completed { result: result.clone() },
            Status::Failed(error) => TaskPayload::Failed { error: error.clone() },
            Status::Cancelled => TaskPayload::Cancelled,
        };
        DetailedTask::new(task, payload)
    }

    /// How long the task is kept from its creation.
    pub fn ttl(&self) -> Duration {
        self.ttl
    }

    /// The task's handle, for the `CreateTaskResult`.
    pub fn handle(&self) -> rmcp::model::Task {
        self.detailed().task
    }

    /// Ends the task with `outcome`, unless it already ended (cancelled).
    pub fn finish(&self, outcome: Outcome) {
        let mut state = self.state();
        if state.status.terminal() {
            return;
        }
        state.pending.clear();
        state.sent.clear();
        state.status = match outcome {
            Outcome::Completed(result) => {
                // A tool's error is the task's message (2025-11-25 calls such a task failed).
                state.message = is_error(&result).then(|| error_text(&result));
                Status::Completed(result)
            }
            Outcome::Failed(error) => {
                state.message = Some(error.message.to_string());
                let error = serde_json::to_value(&error)
                    .ok()
                    .and_then(|error| error.as_object().cloned())
                    .unwrap_or_else(|| {
                        json!({ "code": -32603, "message": "internal error" }).as_object().cloned().unwrap_or_default()
                    });
                Status::Failed(error)
            }
        };
        Task::touch(&mut state);
        drop(state);
        self.wake.notify_waiters();
    }

    /// `tasks/cancel`: stops the call, unless the task already ended.
    pub fn cancel(&self) {
        self.end_as_cancelled("cancelled by the client");
    }

    /// The task outlived its TTL: a call still running is stopped.
    fn expire(&self) {
        self.end_as_cancelled("cancelled: the task outlived its time to live");
    }

    fn end_as_cancelled(&self, why: &str) {
        {
            let mut state = self.state();
            if !state.status.terminal() {
                state.status = Status::Cancelled;
                state.message = Some(why.to_owned());
                state.pending.clear();
                state.sent.clear();
                Task::touch(&mut state);
            }
        }
        self.cancel.cancel();
        self.wake.notify_waiters();
    }

    /// A progress report of the running call, shown as `statusMessage`.
    pub fn progress(&self, done: f64, total: Option<f64>, message: Option<&str>) {
        let mut state = self.state();
        if state.status.terminal() {
            return;
        }
        let amount = match total {
            Some(total) => format!("{done}/{total}"),
            None => format!("{done}"),
        };
        state.message = Some(match message {
            Some(message) => format!("{amount}: {message}"),
            None => amount,
        });
        Task::touch(&mut state);
    }

    /// `tasks/update`: answers to questions the task asked. An answer under
    /// a key not outstanding is ignored (the spec's SHOULD); one that does not
    /// answer its question refuses the whole update (-32602), nothing taken.
    pub fn update(&self, responses: InputResponses) -> Result<(), ErrorData> {
        let mut state = self.state();
        let mut taken = Vec::new();
        for (key, value) in responses {
            let Some(pending) = state.pending.get(&key) else { continue };
            crate::asking::answer_from_mcp(&pending.question, &value).map_err(|why| {
                ErrorData::invalid_params(
                    format!("inputResponses: the answer under `{}` was refused: {why}", quoted(&key)),
                    None,
                )
            })?;
            taken.push((key, value));
        }
        if taken.is_empty() {
            return Ok(());
        }
        for (key, value) in taken {
            state.pending.remove(&key);
            state.answers.insert(key, Ok(value));
        }
        Task::touch(&mut state);
        drop(state);
        self.wake.notify_waiters();
        Ok(())
    }
}

/// What `tasks/result` answers for an ended task.
pub enum Ended {
    /// The tool's result (`isError` included).
    Result(JsonObject),
    /// The JSON-RPC error the call's request would have got.
    Error(ErrorData),
    /// Cancelled (by the client, or at its TTL): there is no result.
    Cancelled(String),
}

impl Task {
    /// The task as MCP 2025-11-25 shows it (`Task`: `ttl` and `pollInterval`
    /// in milliseconds; a tool result with `isError` is `failed`).
    pub fn experimental(&self) -> Value {
        let state = self.state();
        let mut task = json!({
            "taskId": self.id,
            "status": state.status.experimental(),
            "createdAt": self.created_at,
            "lastUpdatedAt": state.updated_at,
            "ttl": u64::try_from(self.ttl.as_millis()).unwrap_or(u64::MAX),
            "pollInterval": u64::try_from(self.poll_interval.as_millis()).unwrap_or(u64::MAX).max(1),
        });
        if let Some(message) = &state.message {
            task["statusMessage"] = json!(message);
        }
        task
    }

    /// How the task ended, once it has.
    pub fn ended(&self) -> Option<Ended> {
        let state = self.state();
        match &state.status {
            Status::Working | Status::InputRequired => None,
            Status::Completed(result) => Some(Ended::Result(result.clone())),
            Status::Failed(error) => Some(Ended::Error(
                serde_json::from_value(Value::Object(error.clone()))
                    .unwrap_or_else(|_| ErrorData::internal_error("the call failed", None)),
            )),
            Status::Cancelled => Some(Ended::Cancelled(state.message.clone().unwrap_or_default())),
        }
    }

    /// The status of an ended task (`completed`, `failed`, `cancelled`), or
    /// `None` while it runs.
    pub fn terminal_status(&self) -> Option<&'static str> {
        let state = self.state();
        state.status.terminal().then(|| state.status.experimental())
    }

    /// Resolves at the task's next change (a question asked or answered, the
    /// end). Enabled at once: a change after this call is not missed.
    pub fn changed(&self) -> Pin<Box<tokio::sync::futures::Notified<'_>>> {
        let mut notified = Box::pin(self.wake.notified());
        notified.as_mut().enable();
        notified
    }

    /// The questions waiting for the client and not out to it yet, now
    /// marked as out (to be sent on a `tasks/result` stream).
    pub fn take_unsent(&self) -> Vec<(String, Question)> {
        let mut state = self.state();
        let unsent: Vec<(String, Question)> = state
            .pending
            .iter()
            .filter(|(key, _)| !state.sent.contains(*key))
            .map(|(key, pending)| (key.clone(), pending.question.clone()))
            .collect();
        state.sent.extend(unsent.iter().map(|(key, _)| key.clone()));
        unsent
    }

    /// The client's answer (or error) to the question sent under `key`.
    pub fn answer(&self, key: &str, answer: Result<Value, String>) {
        {
            let mut state = self.state();
            state.sent.remove(key);
            if state.pending.remove(key).is_none() {
                return;
            }
            state.answers.insert(key.to_owned(), answer);
            Task::touch(&mut state);
        }
        self.wake.notify_waiters();
    }

    /// The question sent under `key` got no answer (its `tasks/result`
    /// ended first): it is sent again on the next one.
    pub fn unsend(&self, key: &str) {
        self.state().sent.remove(key);
        self.wake.notify_waiters();
    }

    /// When the task was created (ISO 8601).
    pub fn created_at(&self) -> &str {
        &self.created_at
    }
}

/// Whether a tool result says the tool failed.
fn is_error(result: &JsonObject) -> bool {
    result.get("isError").and_then(Value::as_bool) == Some(true)
}

/// The text of a failed tool result, for a status message.
fn error_text(result: &JsonObject) -> String {
    let text: Vec<&str> = result
        .get("content")
        .and_then(Value::as_array)
        .into_iter()
        .flatten()
        .filter_map(|block| block.get("text").and_then(Value::as_str))
        .collect();
    let text = text.join(" ");
    if text.chars().count() > 500 { format!("{}…", text.chars().take(500).collect::<String>()) } else { text }
}

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

#[cfg(test)]
mod tests {
    use super::*;

    fn store() -> Tasks {
        Tasks::new(TasksConfig::default()).unwrap()
    }

    #[test]
    fn reads_per_tool_settings_in_both_forms() {
        #[derive(Deserialize)]
        struct Wrapper {
            tasks: TasksConfig,
        }
        let config: Wrapper = serde_json::from_value(json!({"tasks": {
            "after": "1s",
            "tools": { "a": "optional", "b": { "support": "required", "after": "3s" } },
            "plugins": { "p": "required" },
        }}))
        .unwrap();
        let tasks = config.tasks;
        assert!(tasks.enabled());
        assert_eq!(tasks.for_tool("a", "p"), (TaskSupport::Optional, Duration::from_secs(1)));
        assert_eq!(tasks.for_tool("b", "p"), (TaskSupport::Required, Duration::from_secs(3)));
        assert_eq!(tasks.for_tool("c", "p"), (TaskSupport::Required, Duration::from_secs(1)));
        assert_eq!(tasks.for_tool("c", "q").0, TaskSupport::Forbidden);
        for bad in [
            json!({"tools": {"a": "sometimes"}}),
            json!({"tools": {"a": {"support": "optional", "x": 1}}}),
            json!({"tools": {"a": 3}}),
        ] {
            let err = serde_json::from_value::<TasksConfig>(bad).unwrap_err().to_string();
            assert!(err.contains("give \"optional\""), "{err}");
        }
        assert!(!TasksConfig::default().enabled());
    }

    fn anyone() -> Caller {
        Caller::default()
    }

    fn user(name: &str) -> Caller {
        Caller { principal: Some(crate::oauth::Principal::new(name, None)), session: None }
    }

    fn extension(tasks: &Tasks, tool: &str, caller: &Caller) -> Arc<Task> {
        tasks.create(tool, "plugin", TaskKind::Extension, caller.owner(false), None)
    }

    #[test]
    fn an_unknown_id_says_why_and_never_panics() {
        let tasks = store();
        let task = extension(&tasks, "slow", &anyone());
        tasks.keep(&task).unwrap();
        assert_eq!(tasks.find(&task.id, &anyone()).unwrap().id, task.id);
        let other = format!("elsewhere.{}.{}", "0".repeat(8), "a".repeat(32));
        let err = tasks.find(&other, &anyone()).unwrap_err();
        assert_eq!(err.code, rmcp::model::ErrorCode::INVALID_PARAMS);
        assert!(err.message.contains("replica `elsewhere`") && err.message.contains("Mcp-Name"), "{}", err.message);
        let restarted = format!("{}.{}.{}", tasks.replica, "0".repeat(8), "a".repeat(32));
        let err = tasks.find(&restarted, &anyone()).unwrap_err();
        assert!(err.message.contains("restarted"), "{}", err.message);
        let err = tasks.find(&format!("{}.{}.{}", tasks.replica, tasks.run, "b".repeat(32)), &anyone()).unwrap_err();
        assert!(err.message.contains("expired"), "{}", err.message);
        for hostile in ["", ".", "..", "a.b.c", "\u{1b}[31m.x.y", &"x".repeat(100_000), "é.é.é"] {
            let err = tasks.find(hostile, &anyone()).unwrap_err();
            assert!(err.message.len() < 600 && !err.message.contains('\u{1b}'), "{}", err.message);
        }
    }

    #[test]
    fn another_users_task_is_answered_exactly_as_an_id_never_given_out() {
        let tasks = store();
        let (alice, bob) = (user("alice"), user("bob"));
        let task = extension(&tasks, "slow", &alice);
        tasks.keep(&task).unwrap();
        assert!(tasks.find(&task.id, &alice).is_ok());
        // The same id with its last character changed was never given out.
        let mut never = task.id.clone();
        let last = never.pop().unwrap();
        never.push(if last == '0' { '1' } else { '0' });
        let unknown = tasks.find(&never, &bob).unwrap_err();
        for stranger in [&bob, &anyone()] {
            let err = tasks.find(&task.id, stranger).unwrap_err();
            let (got, want) = (serde_json::to_value(&err).unwrap(), serde_json::to_value(&unknown).unwrap());
            assert_eq!(got.to_string().replace(&task.id, "ID"), want.to_string().replace(&never, "ID"));
        }
    }

    #[test]
    fn cancel_is_idempotent_and_final() {
        let tasks = store();
        let task = extension(&tasks, "slow", &anyone());
        task.cancel();
        task.cancel();
        task.finish(Outcome::Completed(JsonObject::new()));
        assert_eq!(task.detailed().status(), rmcp::model::TaskStatus::Cancelled);
        assert!(task.cancel.is_cancelled());
    }

    #[tokio::test]
    async fn a_task_past_its_ttl_is_stopped_by_the_timer_and_said_to_have_expired_to_its_owner_only() {
        let config = TasksConfig { ttl: Some(HumanDuration(Duration::from_secs(1))), ..TasksConfig::default() };
        let tasks = Arc::new(Tasks::new(config).unwrap());
        tasks.expire_on_time();
        let alice = user("alice");
        let task = extension(&tasks, "slow", &alice);
        tasks.keep(&task).unwrap();
        // Nobody looks it up: the timer stops it.
        tokio::time::timeout(Duration::from_secs(3), task.cancel.cancelled()).await.expect("stopped at its TTL");
        assert_eq!(task.detailed().status(), rmcp::model::TaskStatus::Cancelled);
        assert!(tasks.is_empty());
        let err = tasks.find(&task.id, &alice).unwrap_err();
        assert_eq!(err.data.as_ref().unwrap()["reason"], "expired", "{}", err.message);
        let err = tasks.find(&task.id, &user("bob")).unwrap_err();
        assert_eq!(err.data.as_ref().unwrap()["reason"], "unknown", "{}", err.message);
    }

    #[test]
    fn a_full_store_refuses_new_tasks_and_one_requestor_cannot_fill_it() {
        let config = TasksConfig { max_tasks: Some(3), max_tasks_per_requestor: Some(2), ..TasksConfig::default() };
        let tasks = Tasks::new(config).unwrap();
        let (alice, bob) = (user("alice"), user("bob"));
        tasks.keep(&extension(&tasks, "a", &alice)).unwrap();
        tasks.keep(&extension(&tasks, "a", &alice)).unwrap();
        assert_eq!(tasks.keep(&extension(&tasks, "a", &alice)), Err(Full::Requestor(2)));
        tasks.keep(&extension(&tasks, "b", &bob)).unwrap();
        assert_eq!(tasks.keep(&extension(&tasks, "b", &bob)), Err(Full::Server(3)));
        assert_eq!(tasks.len(), 3);
        let too_many = TasksConfig { max_tasks: Some(3), max_tasks_per_requestor: Some(4), ..TasksConfig::default() };
        assert!(Tasks::new(too_many).is_err());
    }

    #[test]
    fn a_sessions_end_ends_its_tasks_only() {
        let tasks = store();
        let session = |id: &str| Caller { principal: None, session: Some(id.to_owned()) };
        let owned =
            |caller: &Caller, tool: &str| tasks.create(tool, "p", TaskKind::Experimental, caller.owner(true), None);
        let (one, two) = (session("http:1"), session("http:2"));
        let (mine, other) = (owned(&one, "a"), owned(&two, "b"));
        let extension = extension(&tasks, "c", &anyone());
        for task in [&mine, &other, &extension] {
            tasks.keep(task).unwrap();
        }
        assert_eq!(tasks.owned_by(&one).len(), 1);
        assert!(tasks.find(&mine.id, &two).is_err(), "another session does not see it");
        tasks.end_owned_by("http:1");
        assert!(mine.cancel.is_cancelled() && tasks.find(&mine.id, &one).is_err());
        assert_eq!(mine.terminal_status(), Some("cancelled"));
        assert!(!other.cancel.is_cancelled() && !extension.cancel.is_cancelled());
        assert_eq!(tasks.len(), 2);
    }

    #[test]
    fn timestamps_are_iso8601() {
        assert_eq!(iso8601(SystemTime::UNIX_EPOCH), "1970-01-01T00:00:00.000Z");
        let leap = SystemTime::UNIX_EPOCH + Duration::from_millis(951_782_400_123);
        assert_eq!(iso8601(leap), "2000-02-29T00:00:00.123Z");
    }
}

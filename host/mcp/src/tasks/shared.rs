//! MCP tasks (`[serve.tasks]`, SEP-2663) in the shared store, so that every
//! replica can answer for every task.
//!
//! The replica that runs a task's call keeps the task in memory, as without
//! a store (the guest runs there). Before the task's handle goes out it
//! writes the task's record (`TASK:ID`: status, what `tasks/get` shows, its
//! owner, its tool, which replica runs it and until when: the lease), and it
//! rewrites the record whenever the task changes and at least every
//! [`RENEW`], renewing the lease, until the task ends. Any other replica
//! answers `tasks/get` from the record; `tasks/cancel` ends the record at
//! once and tells the running replica over pub/sub (its channel
//! `REPLICA:NAME`), which stops the call; `tasks/update` passes the answers
//! the same way. A record whose lease ran out while it was not ended belongs
//! to a replica that died (or lost the store for longer than the lease): the
//! first replica to read it ends it `failed`, saying so. So a task is never
//! unknown while its TTL lasts, and a lost one is `failed` at most [`LEASE`]
//! after its replica went.
//!
//! Ended records are never written again (a Lua script checks), so a
//! cancellation wins over the running replica's next write, and the record
//! expires with the task's TTL.
//!
//! A 2025-11-25 session's experimental tasks have records too (their
//! owner's field names the session after the principal, so only that
//! session finds them): `revision::tasks2025` answers `tasks/get`,
//! `tasks/cancel` and `tasks/result` from the record ([`Remote`]) when the
//! task runs elsewhere, and lists a session's tasks from the records of its
//! requestor's ([`StoreTasks::owned_by`]); the answers to their questions
//! reach the running replica as SEP-2663 ones do ([`StoreTasks::update`]).
//!
//! It is a part of `tasks` built on `state`'s [`Store`] (not a part of
//! `state`), so that `state` never names `tasks`.

use super::{Full, Task, iso8601};
use crate::caller::Caller;
use crate::state::{OnUnavailable, Store};
use redis::{AsyncCommands, Script};
use rmcp::ErrorData;
use rmcp::model::{DetailedTask, InputResponses, TaskPayload};
use serde_json::{Value, json};
use std::sync::{Arc, Weak};
use std::time::Duration;

/// How long a task's record stays its replica's without being renewed.
pub const LEASE: Duration = Duration::from_secs(10);
/// How often the running replica renews it (and writes its progress).
pub const RENEW: Duration = Duration::from_secs(2);

/// KEYS[1]: the record. ARGV: status, detailed, lease (ms), ttl (ms),
/// replica, principal, tool, origin, create ("1": the first write).
/// Writes unless the record ended (or, after the first write, is gone).
const WRITE: &str = r#"
local t = redis.call('TIME')
local now = tonumber(t[1]) * 1000 + math.floor(tonumber(t[2]) / 1000)
local status = redis.call('HGET', KEYS[1], 'status')
if (not status) and ARGV[9] ~= '1' then return 0 end
if status == 'completed' or status == 'failed' or status == 'cancelled' then return 0 end
redis.call('HSET', KEYS[1], 'status', ARGV[1], 'detailed', ARGV[2], 'lease', now + tonumber(ARGV[3]),
  'replica', ARGV[5], 'principal', ARGV[6], 'tool', ARGV[7], 'origin', ARGV[8])
if ARGV[9] == '1' then redis.call('PEXPIRE', KEYS[1], ARGV[4]) end
return 1
"#;

/// KEYS[1]: the record, KEYS[2]: every task kept, KEYS[3]: the requestor's
/// (scored by when they expire). ARGV: as WRITE (1 to 8), then max_tasks,
/// max_tasks_per_requestor, the id, "1" if KEYS[3] counts. Makes room for
/// the task and writes its record; 1: `max_tasks` are kept, 2: the
/// requestor holds its share, 0: done.
const RESERVE: &str = r#"
local t = redis.call('TIME')
local now = tonumber(t[1]) * 1000 + math.floor(tonumber(t[2]) / 1000)
local ttl = tonumber(ARGV[4])
redis.call('ZREMRANGEBYSCORE', KEYS[2], '-inf', now)
if redis.call('ZCARD', KEYS[2]) >= tonumber(ARGV[9]) then return 1 end
if ARGV[12] == '1' then
  redis.call('ZREMRANGEBYSCORE', KEYS[3], '-inf', now)
  if redis.call('ZCARD', KEYS[3]) >= tonumber(ARGV[10]) then return 2 end
  redis.call('ZADD', KEYS[3], now + ttl, ARGV[11])
  if redis.call('PTTL', KEYS[3]) < ttl then redis.call('PEXPIRE', KEYS[3], ttl) end
end
redis.call('ZADD', KEYS[2], now + ttl, ARGV[11])
if redis.call('PTTL', KEYS[2]) < ttl then redis.call('PEXPIRE', KEYS[2], ttl) end
redis.call('HSET', KEYS[1], 'status', ARGV[1], 'detailed', ARGV[2], 'lease', now + tonumber(ARGV[3]),
  'replica', ARGV[5], 'principal', ARGV[6], 'tool', ARGV[7], 'origin', ARGV[8])
redis.call('PEXPIRE', KEYS[1], ttl)
return 0
"#;

/// KEYS[1]: the record. Returns its fields and the store's time (ms), or
/// nothing.
const READ: &str = r#"
local t = redis.call('TIME')
local now = tonumber(t[1]) * 1000 + math.floor(tonumber(t[2]) / 1000)
local fields = redis.call('HMGET', KEYS[1], 'status', 'detailed', 'lease', 'replica', 'principal', 'tool', 'origin')
if not fields[1] then return {} end
fields[8] = tostring(now)
return fields
"#;

/// KEYS[1]: the record. ARGV: status, detailed. Ends it unless it ended;
/// returns what it shows now.
const END: &str = r#"
local status = redis.call('HGET', KEYS[1], 'status')
if not status then return false end
if status == 'completed' or status == 'failed' or status == 'cancelled' then
  return redis.call('HGET', KEYS[1], 'detailed')
end
redis.call('HSET', KEYS[1], 'status', ARGV[1], 'detailed', ARGV[2])
return ARGV[2]
"#;

/// The tasks of every replica, kept in the store.
pub struct StoreTasks {
    store: Store,
    reserve: Script,
    write: Script,
    read: Script,
    end: Script,
}

/// A task as its record shows it (it may run on another replica).
pub struct Remote {
    pub id: String,
    pub tool: String,
    pub origin: String,
    replica: String,
    status: String,
    pub detailed: DetailedTask,
    /// A 2025-11-25 session's experimental task (owned by that session too).
    pub experimental: bool,
}

impl Remote {
    /// What 2025-11-25's `tasks/get` shows of it (as [`Task::experimental`]).
    pub fn experimental_view(&self) -> Value {
        let task = &self.detailed.task;
        let mut view = json!({
            "taskId": task.task_id,
            "status": status_word(&self.detailed),
            "createdAt": task.created_at,
            "lastUpdatedAt": task.last_updated_at,
            "ttl": task.ttl_ms,
            "pollInterval": task.poll_interval_ms.unwrap_or(1000).max(1),
        });
        if let Some(message) = &task.status_message {
            view["statusMessage"] = json!(message);
        }
        view
    }

    /// How it ended, once it has.
    pub fn ended(&self) -> Option<super::Ended> {
        match &self.detailed.payload {
            TaskPayload::Completed { result } => Some(super::Ended::Result(result.clone())),
            TaskPayload::Failed { error } => Some(super::Ended::Error(
                serde_json::from_value(Value::Object(error.clone()))
                    .unwrap_or_else(|_| ErrorData::internal_error("the call failed", None)),
            )),
            TaskPayload::Cancelled => {
                Some(super::Ended::Cancelled(self.detailed.task.status_message.clone().unwrap_or_default()))
            }
            _ => None,
        }
    }

    /// `completed`, `failed` or `cancelled` once ended.
    pub fn terminal_status(&self) -> Option<&str> {
        is_ended(&self.status).then_some(self.status.as_str())
    }
}

/// Who owns a task, as its record says: the principal's key, and for a
/// 2025-11-25 task its session after a line break (which neither holds).
fn owner_field(principal: &str, session: Option<&str>) -> String {
    match session {
        Some(session) => format!("{principal}\nsession {session}"),
        None => principal.to_owned(),
    }
}

impl StoreTasks {
    pub fn new(store: Store) -> Arc<StoreTasks> {
        Arc::new(StoreTasks {
            store,
            reserve: Script::new(RESERVE),
            write: Script::new(WRITE),
            read: Script::new(READ),
            end: Script::new(END),
        })
    }

    fn key(&self, id: &str) -> String {
        self.store.key(&["task", id])
    }

    /// Whether, with the store unreachable, calls go on without it.
    pub fn fails_open(&self) -> bool {
        self.store.on_unavailable() == OnUnavailable::Open
    }

    fn channel(&self, replica: &str) -> String {
        self.store.key(&["replica", replica])
    }

    /// The record's fields as WRITE and RESERVE take them (1 to 8).
    fn record(&self, task: &Task, invocation: &mut redis::ScriptInvocation<'_>) {
        let detailed = task.detailed();
        let principal = task.owner.principal.as_ref().map(|principal| principal.key()).unwrap_or_default();
        let session = (task.kind == super::TaskKind::Experimental).then_some(task.owner.session.as_deref()).flatten();
        let principal = owner_field(principal, session);
        invocation
            .arg(status_word(&detailed))
            .arg(serde_json::to_string(&detailed).unwrap_or_default())
            .arg(LEASE.as_millis() as u64)
            .arg(task.ttl().as_millis() as u64)
            .arg(&self.store.me)
            .arg(principal)
            .arg(&task.tool)
            .arg(&task.origin);
    }

    /// Rewrites `task`'s record and renews its lease. `Ok(false)`: the
    /// record has ended (or is gone), so there is nothing more to write.
    async fn write(&self, task: &Task) -> Result<bool, String> {
        let mut invocation = self.write.key(self.key(&task.id));
        self.record(task, &mut invocation);
        invocation.arg("0");
        let mut connection = self.store.connection();
        self.store.run(invocation.invoke_async::<i64>(&mut connection)).await.map(|written| written == 1)
    }

    /// Makes room for `task` under `max_tasks` and its requestor's share,
    /// counted over every replica, and writes its record: before its handle
    /// goes out. `Ok(Some(full))` when there is no room.
    pub async fn reserve(&self, task: &Task, max: usize, per_requestor: usize) -> Result<Option<Full>, String> {
        let requestor = task.owner.requestor.as_deref();
        let mut invocation = self.reserve.key(self.key(&task.id));
        invocation.key(self.store.key(&["tasks"])).key(self.store.key(&[
            "tasks",
            "requestor",
            requestor.unwrap_or(""),
        ]));
        self.record(task, &mut invocation);
        invocation.arg(max).arg(per_requestor).arg(&task.id).arg(if requestor.is_some() { "1" } else { "0" });
        let mut connection = self.store.connection();
        match self.store.run(invocation.invoke_async::<i64>(&mut connection)).await? {
            1 => Ok(Some(Full::Server(max))),
            2 => Ok(Some(Full::Requestor(per_requestor))),
            _ => Ok(None),
        }
    }

    /// Gives back what [`StoreTasks::reserve`] took, for a call that ended
    /// before it became a task.
    pub async fn unreserve(&self, task: &Task) {
        let requestor = task.owner.requestor.as_deref().unwrap_or("");
        let mut pipe = redis::pipe();
        pipe.del(self.key(&task.id))
            .ignore()
            .zrem(self.store.key(&["tasks"]), &task.id)
            .ignore()
            .zrem(self.store.key(&["tasks", "requestor", requestor]), &task.id)
            .ignore();
        let mut connection = self.store.connection();
        let _ = self.store.run(pipe.query_async::<()>(&mut connection)).await;
    }

    /// Keeps `task`'s record up to date (and its lease renewed) in the
    /// background until it ends.
    pub fn mirror(self: &Arc<Self>, task: &Arc<Task>) {
        let (shared, task) = (self.clone(), task.clone());
        tokio::spawn(async move {
            loop {
                // Made before the look, so that no change is missed.
                let changed = task.changed();
                let ended = task.detailed().task.status.is_terminal();
                match shared.write(&task).await {
                    Ok(false) => return,
                    Ok(true) if ended => return,
                    // Tried again at the next change or tick; meanwhile the
                    // lease runs down.
                    Ok(true) | Err(_) => {}
                }
                tokio::select! {
                    () = changed => {}
                    () = tokio::time::sleep(RENEW) => {}
                }
            }
        });
    }

    /// The task `id` as its record shows it, if `caller` owns it; `None`
    /// when there is no record (or another owner's: the same answer). A
    /// record whose lease ran out before it ended is ended `failed` here.
    pub async fn find(&self, id: &str, caller: &Caller) -> Result<Option<Remote>, ErrorData> {
        // Only what could be a task id is looked up (the client sent it).
        let plausible = !id.is_empty()
            && id.len() <= 256
            && id.bytes().all(|byte| byte.is_ascii_alphanumeric() || b"-_.".contains(&byte));
        if !plausible {
            return Ok(None);
        }
        let key = self.key(id);
        let mut connection = self.store.connection();
        let fields: Vec<Option<String>> = self
            .store
            .run(self.read.key(&key).invoke_async(&mut connection))
            .await
            .map_err(|reason| ErrorData::internal_error(reason, None))?;
        let [
            Some(status),
            Some(detailed),
            Some(lease),
            Some(replica),
            Some(principal),
            Some(tool),
            Some(origin),
            Some(now),
        ] = <[Option<String>; 8]>::try_from(fields).unwrap_or_default()
        else {
            return Ok(None);
        };
        // Another principal's, or another session's 2025-11-25 task: as an id never given out.
        let caller_principal = caller.principal.as_ref().map(|principal| principal.key()).unwrap_or_default();
        // (Session ids hold no line break, so a principal's key that does
        // cannot pass for another's with a session.)
        let experimental = principal.contains('\n');
        let session = caller.session.as_deref().filter(|_| experimental);
        if (experimental && session.is_none()) || principal != owner_field(caller_principal, session) {
            return Ok(None);
        }
        let Ok(detailed) = serde_json::from_str::<DetailedTask>(&detailed) else { return Ok(None) };
        let mut remote = Remote { id: id.to_owned(), tool, origin, replica, status, detailed, experimental };
        let (lease, now) = (lease.parse::<i64>().unwrap_or(0), now.parse::<i64>().unwrap_or(0));
        if !is_ended(&remote.status) && lease < now {
            let name = remote.replica.rsplit_once('.').map_or(&remote.replica[..], |(name, _)| name).to_owned();
            let why = format!(
                "the toolhost replica running it (`{}`) stopped answering: it stopped, crashed or lost the shared \
                 state store, and its lease on the task ran out {}s ago. Call the tool again",
                toolhost_runtime::text::quoted(&name),
                (now - lease) / 1000
            );
            let error = json!({ "code": -32603, "message": why }).as_object().cloned().unwrap_or_default();
            let mut task = remote.detailed.task.clone().with_status_message(why.clone());
            task.last_updated_at = iso8601(std::time::SystemTime::now());
            let failed = DetailedTask::new(task, TaskPayload::Failed { error });
            remote.detailed = self.end(&key, "failed", &failed).await?.unwrap_or(failed);
            remote.status = status_word(&remote.detailed).to_owned();
        }
        Ok(Some(remote))
    }

    /// The tasks of `caller`'s requestor that `caller` owns, as their
    /// records show them (at most its share of `max_tasks`, in no order).
    pub async fn owned_by(&self, caller: &Caller) -> Result<Vec<Remote>, ErrorData> {
        let Some(requestor) = caller.requestor() else { return Ok(Vec::new()) };
        let key = self.store.key(&["tasks", "requestor", &requestor]);
        let mut connection = self.store.connection();
        let ids: Vec<String> = self
            .store
            .run(redis::cmd("ZRANGE").arg(&key).arg(0).arg(-1).query_async(&mut connection))
            .await
            .map_err(|reason| ErrorData::internal_error(reason, None))?;
        let mut owned = Vec::with_capacity(ids.len());
        for id in ids {
            if let Some(remote) = self.find(&id, caller).await? {
                owned.push(remote);
            }
        }
        Ok(owned)
    }

    /// Ends the record at `key` as `detailed` unless it ended; what it shows now.
    async fn end(&self, key: &str, status: &str, detailed: &DetailedTask) -> Result<Option<DetailedTask>, ErrorData> {
        let text = serde_json::to_string(detailed).unwrap_or_default();
        let mut connection = self.store.connection();
        let now: Option<String> = self
            .store
            .run(self.end.key(key).arg(status).arg(text).invoke_async(&mut connection))
            .await
            .map_err(|reason| ErrorData::internal_error(reason, None))?;
        Ok(now.and_then(|text| serde_json::from_str(&text).ok()))
    }

    /// `tasks/cancel` of a task another replica runs: the record ends
    /// `cancelled` now, and the running replica is told to stop the call.
    pub async fn cancel(&self, remote: &Remote) -> Result<(), ErrorData> {
        if is_ended(&remote.status) {
            return Ok(());
        }
        let mut task = remote.detailed.task.clone().with_status_message("cancelled by the client");
        task.last_updated_at = iso8601(std::time::SystemTime::now());
        let cancelled = DetailedTask::new(task, TaskPayload::Cancelled);
        self.end(&self.key(&remote.id), "cancelled", &cancelled).await?;
        self.tell(remote, json!({ "op": "cancel", "id": remote.id })).await
    }

    /// `tasks/update` of a task another replica runs: the answers go to it
    /// (it checks them against its questions, as for a local update).
    pub async fn update(&self, remote: &Remote, responses: InputResponses) -> Result<(), ErrorData> {
        if is_ended(&remote.status) {
            return Ok(());
        }
        self.tell(remote, json!({ "op": "update", "id": remote.id, "responses": responses })).await
    }

    async fn tell(&self, remote: &Remote, message: Value) -> Result<(), ErrorData> {
        let mut connection = self.store.connection();
        let channel = self.channel(&remote.replica);
        self.store
            .run(connection.publish::<_, _, i64>(channel, message.to_string()))
            .await
            .map(|_| ())
            .map_err(|reason| ErrorData::internal_error(reason, None))
    }

    /// Listens on this replica's channel for cancellations and answers of
    /// the tasks it runs, from as long as `tasks` lives; reconnects when the
    /// store goes away.
    pub fn listen(self: &Arc<Self>, tasks: Weak<dyn Local>) {
        let shared = self.clone();
        tokio::spawn(async move {
            let channel = shared.channel(&shared.store.me);
            loop {
                if tasks.strong_count() == 0 {
                    return;
                }
                if let Ok(mut pubsub) = shared.store.pubsub().await
                    && pubsub.subscribe(&channel).await.is_ok()
                {
                    let mut messages = pubsub.on_message();
                    while let Some(message) = futures_util::StreamExt::next(&mut messages).await {
                        let Some(tasks) = tasks.upgrade() else { return };
                        let Ok(text) = message.get_payload::<String>() else { continue };
                        deliver(&*tasks, &text);
                    }
                }
                tokio::time::sleep(Duration::from_millis(500)).await;
            }
        });
    }
}

/// The tasks this replica runs, as [`StoreTasks::listen`] finds them by id
/// (the process's `Tasks`).
pub trait Local: Send + Sync {
    /// The task `id`, if this replica runs it.
    fn local(&self, id: &str) -> Option<Arc<Task>>;
}

/// Applies one message from another replica to the task it names, if this
/// replica runs it (the sender checked the owner).
fn deliver(tasks: &dyn Local, text: &str) {
    let Ok(message) = serde_json::from_str::<Value>(text) else { return };
    let Some(task) = message["id"].as_str().and_then(|id| tasks.local(id)) else { return };
    match message["op"].as_str() {
        Some("cancel") => task.cancel(),
        Some("update") => {
            if let Ok(responses) = serde_json::from_value::<InputResponses>(message["responses"].clone())
                && let Err(error) = task.update(responses)
            {
                tracing::info!(task = %task.id, error = %error.message, "an answer passed on by another replica was refused");
            }
        }
        _ => {}
    }
}

fn is_ended(status: &str) -> bool {
    matches!(status, "completed" | "failed" | "cancelled")
}

fn status_word(detailed: &DetailedTask) -> &'static str {
    match detailed.payload {
        TaskPayload::Working => "working",
        TaskPayload::InputRequired { .. } => "input_required",
        TaskPayload::Completed { .. } => "completed",
        TaskPayload::Failed { .. } => "failed",
        TaskPayload::Cancelled => "cancelled",
        _ => "working",
    }
}

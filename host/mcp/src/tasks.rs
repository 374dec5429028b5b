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
//! A task is owned by who started it ([`Owner`](crate::caller::Owner): the token's principal,
//! and the session for a 2025-11-25 task). Any other caller is answered
//! exactly as for an id never given out, so an id seen elsewhere (a log)
//! grants nothing by itself.

use std::time::{Duration, SystemTime};

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
mod askers;
mod config;
pub mod shared;
mod store;
mod task;
pub use askers::{PhasedAsker, TaskAsker};
pub use config::{Full, TaskSupport, TasksConfig, ToolTasks};
pub use store::Tasks;
pub use task::{Ended, Outcome, Task, TaskKind};
use task::{Pending, State, Status};

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

#[cfg(test)]
mod tests {
    use super::*;
    use crate::caller::Caller;
    use rmcp::model::JsonObject;
    use serde::Deserialize;
    use serde_json::json;
    use std::sync::Arc;
    use toolhost_runtime::limits::HumanDuration;

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

//! `[serve.tasks]`: which tools may run as tasks ([`TaskSupport`], per tool
//! or plugin in [`ToolTasks`]) and the store's bounds ([`TasksConfig`]).

use serde::{Deserialize, Deserializer};
use serde_json::Value;
use std::collections::BTreeMap;
use std::time::Duration;
use toolhost_runtime::limits::HumanDuration;

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

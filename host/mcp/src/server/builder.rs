//! [`ToolServerBuilder`]: every setting of a [`ToolServer`] is given before
//! it exists and checked when it is built, so that none can be given after
//! the handler is shared (where it would silently do nothing).

use super::*;

/// The settings of a [`ToolServer`], given before it is made
/// ([`ToolServer::builder`]).
pub struct ToolServerBuilder {
    pub(super) host: Arc<Host>,
    pub(super) oauth: Option<Arc<crate::oauth::ResourceServer>>,
    pub(super) tasks: Option<TasksConfig>,
    pub(super) calls: Option<usize>,
    pub(super) questions: Option<usize>,
    pub(super) profile: Option<Arc<Profile>>,
    pub(super) page_size: Option<usize>,
    pub(super) store: Option<crate::state::Store>,
}

impl ToolServerBuilder {
    /// Lists and calls only the tools a request's token has the scopes for
    /// (`[serve.oauth]`; `None`: every tool).
    pub fn oauth(mut self, oauth: Option<Arc<crate::oauth::ResourceServer>>) -> ToolServerBuilder {
        self.oauth = oauth;
        self
    }

    /// Offers only what `profile` allows to a request that brings no
    /// profile of its own (HTTP puts one on each request).
    pub fn profile(mut self, profile: Option<Arc<Profile>>) -> ToolServerBuilder {
        self.profile = profile;
        self
    }

    /// At most `size` tools per `tools/list` page (`None`: 1000).
    pub fn page_size(mut self, size: Option<usize>) -> ToolServerBuilder {
        self.page_size = size;
        self
    }

    /// Counts the per-requestor limits in `store` over every replica
    /// (`[state] url`; `None`: in this process).
    pub fn store(mut self, store: Option<crate::state::Store>) -> ToolServerBuilder {
        self.store = store;
        self
    }

    /// Runs the tools `config` names as MCP tasks (none without it).
    pub fn tasks(mut self, config: Option<TasksConfig>) -> ToolServerBuilder {
        self.tasks = config;
        self
    }

    /// At most `calls` calls running and `questions` questions waiting per
    /// requestor (`None`: the defaults, half of `max_concurrent_calls` and 16).
    pub fn requestor_limits(mut self, calls: Option<usize>, questions: Option<usize>) -> ToolServerBuilder {
        self.calls = calls;
        self.questions = questions;
        self
    }

    /// The handler. Fails when [`STATE_KEY_ENV`](crate::asking::STATE_KEY_ENV)
    /// is set but too short, on a requestor limit of 0, and on a task setting
    /// out of range. Call it inside the tokio runtime when tasks are on (it
    /// starts their expiry timer).
    pub fn build(self) -> anyhow::Result<ToolServer> {
        let ToolServerBuilder { host, oauth, tasks, calls, questions, profile, page_size, store } = self;
        let seal = crate::asking::StateSeal::from_env()?;
        let page_size = crate::pages::page_size(page_size)?;
        if calls == Some(0) || questions == Some(0) {
            anyhow::bail!(
                "[serve] max_calls_per_requestor and max_questions_per_requestor must be at least 1 (they bound \
                 what one client may hold at once)"
            );
        }
        let requestors = Arc::new(Requestors::new(
            calls.unwrap_or_else(|| default_calls_per_requestor(&host)),
            questions.unwrap_or(crate::caller::DEFAULT_MAX_QUESTIONS_PER_REQUESTOR),
        ));
        if let Some(store) = store {
            requestors.share(crate::state::requestors::SharedRequestors::new(store));
        }
        let tasks = match tasks {
            Some(config) => {
                let enabled = config.enabled();
                let tasks = Tasks::new(config)?;
                enabled.then(|| Arc::new(tasks))
            }
            None => None,
        };
        if let Some(tasks) = &tasks
            && tokio::runtime::Handle::try_current().is_ok()
        {
            tasks.expire_on_time();
        }
        let listed = Mutex::new((u64::MAX, Arc::new(Vec::new())));
        let metrics = Arc::new(Metrics::default());
        let shared = Shared { host, metrics, seal, oauth, listed, tasks, requestors, profile, page_size };
        Ok(ToolServer { shared: Arc::new(shared), level: Arc::new(Mutex::new(None)) })
    }
}

/// Calls one requestor may run at once unless `[serve]` says otherwise:
/// half of `max_concurrent_calls` (at least one), so that one client never
/// holds every slot.
fn default_calls_per_requestor(host: &Host) -> usize {
    let total = host.config().max_concurrent_calls.unwrap_or(toolhost_catalog::config::DEFAULT_MAX_CONCURRENT_CALLS);
    (total / 2).max(1)
}

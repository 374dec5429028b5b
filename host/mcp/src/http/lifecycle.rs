//! A session's life on this replica: how it is used (requests open, last
//! use) and when it idles out, its record in the shared store looked up on
//! every request (owner, expiry), and what ends with it.

use super::*;
use crate::state::sessions::Looked;

/// How a session is being used: its requests still open (a streamed
/// response, a GET stream), and when the last one ended or began.
pub(super) struct Use {
    open: usize,
    last: Instant,
}

/// Counts one request of a session as open until its response body is done.
pub(super) struct InUse {
    activity: Arc<Mutex<HashMap<Arc<str>, Use>>>,
    session: Arc<str>,
}

impl InUse {
    pub(super) fn begin(activity: &Arc<Mutex<HashMap<Arc<str>, Use>>>, session: Arc<str>) -> InUse {
        let mut seen = activity.lock().unwrap_or_else(|p| p.into_inner());
        let usage = seen.entry(session.clone()).or_insert(Use { open: 0, last: Instant::now() });
        usage.open += 1;
        usage.last = Instant::now();
        InUse { activity: activity.clone(), session }
    }
}

impl Drop for InUse {
    fn drop(&mut self) {
        let mut seen = self.activity.lock().unwrap_or_else(|p| p.into_inner());
        if let Some(usage) = seen.get_mut(&self.session) {
            usage.open = usage.open.saturating_sub(1);
            usage.last = Instant::now();
        }
    }
}

impl Front {
    /// Looks the session `id` a request of `principal` names up in the store:
    /// `Some(true)` theirs (its log level then goes into `parts`), `Some(false)`
    /// not (none, or another's: a copy held here of a session that ended
    /// elsewhere or expired is closed), `None` the store could not say and
    /// sessions fail open (this replica's own copy decides); `Err` the
    /// refusal when they fail closed.
    pub(super) async fn look_up(
        &self,
        records: &SessionRecords,
        id: &Arc<str>,
        principal: Option<&Principal>,
        parts: &mut http::request::Parts,
    ) -> Result<Option<bool>, Response<Body>> {
        match records.touch(id, &sessions::owner_of(principal), principal.is_some()).await {
            Looked::Owned(level) => {
                let level = level.and_then(|level| serde_json::from_value(serde_json::Value::String(level)).ok());
                self.owners.lock().unwrap_or_else(|p| p.into_inner()).entry(id.clone()).or_insert(principal.cloned());
                if let Some(level) = level {
                    parts.extensions.insert(sessions::SessionLevel(level));
                }
                Ok(Some(true))
            }
            Looked::NotOwned => {
                let held = self.owners.lock().unwrap_or_else(|p| p.into_inner()).get(id).cloned();
                if held.is_some_and(|owner| owner.as_ref() == principal) {
                    self.close(id).await;
                }
                Ok(Some(false))
            }
            Looked::Unavailable(reason) if records.fails_open() => {
                tracing::warn!("MCP session {id}: this replica's copy answers alone: {reason}");
                Ok(None)
            }
            Looked::Unavailable(reason) => Err(unavailable_store(&reason)),
        }
    }

    /// The refusal of an `initialize` past `max_sessions_per_requestor`.
    pub(super) fn too_many_sessions(&self, held: usize) -> Response<Body> {
        plain_owned(
            StatusCode::SERVICE_UNAVAILABLE,
            format!(
                "Service Unavailable: this client has {held} MCP sessions open, the most this server allows one \
                 client (`max_sessions_per_requestor = {}` in [serve] of toolhost.toml); end one (DELETE) or wait \
                 for one to go idle",
                self.max_sessions_per_requestor
            ),
        )
    }

    /// How long `session` has been idle (no request open), if it is.
    pub(super) fn idle_for(&self, session: &Arc<str>) -> Option<Duration> {
        let seen = self.activity.lock().unwrap_or_else(|p| p.into_inner());
        seen.get(session).filter(|usage| usage.open == 0).map(|usage| usage.last.elapsed())
    }

    /// Closes every session idle for `session_idle`, and forgets sessions
    /// that ended otherwise (a client's DELETE).
    pub(super) async fn close_idle_sessions(&self) {
        if let Some(records) = &self.records {
            return self.sweep_shared(records).await;
        }
        let expired: Vec<Arc<str>> = {
            let live = self.sessions.sessions.read().await;
            let mut seen = self.activity.lock().unwrap_or_else(|p| p.into_inner());
            seen.retain(|session, _| {
                let live = live.contains_key(session);
                if !live {
                    self.end_tasks_of(session);
                }
                live
            });
            self.owners.lock().unwrap_or_else(|p| p.into_inner()).retain(|session, _| live.contains_key(session));
            seen.iter()
                .filter(|(_, usage)| usage.open == 0 && usage.last.elapsed() >= self.idle)
                .map(|(session, _)| session.clone())
                .collect()
        };
        for session in expired {
            self.close(&session).await;
        }
    }

    /// With the store: closes the copies held here of sessions whose record
    /// is gone (ended elsewhere, expired: their tasks end), lets go of copies
    /// idle here for `session_idle` (the session lives on in the store), and
    /// keeps the records of sessions in use here (a GET stream) alive.
    pub(super) async fn sweep_shared(&self, records: &SessionRecords) {
        let local: Vec<Arc<str>> = self.sessions.sessions.read().await.keys().cloned().collect();
        {
            let live: std::collections::HashSet<&Arc<str>> = local.iter().collect();
            self.activity.lock().unwrap_or_else(|p| p.into_inner()).retain(|session, _| live.contains(session));
            self.owners.lock().unwrap_or_else(|p| p.into_inner()).retain(|session, _| live.contains(session));
        }
        let Ok(alive) = records.alive(&local).await else { return };
        let (mut in_use, mut idle) = (Vec::new(), Vec::new());
        for (session, alive) in local.into_iter().zip(alive) {
            if !alive {
                self.close(&session).await;
                continue;
            }
            let seen = self.activity.lock().unwrap_or_else(|p| p.into_inner());
            match seen.get(&session) {
                Some(usage) if usage.open > 0 => in_use.push(session.clone()),
                Some(usage) if usage.last.elapsed() < self.idle => {}
                _ => idle.push(session.clone()),
            }
        }
        records.keep(&in_use).await;
        for session in idle {
            tracing::debug!("letting go of this replica's copy of MCP session {session}: idle here");
            let _ = self.sessions.close_session(&session).await;
            self.activity.lock().unwrap_or_else(|p| p.into_inner()).remove(&session);
            self.owners.lock().unwrap_or_else(|p| p.into_inner()).remove(&session);
        }
    }

    pub(super) async fn close(&self, session: &Arc<str>) {
        tracing::debug!("closing MCP session {session}: idle for {:?}", self.idle);
        if let Err(err) = self.sessions.close_session(session).await {
            tracing::debug!("closing MCP session {session}: {err}");
        }
        self.activity.lock().unwrap_or_else(|p| p.into_inner()).remove(session);
        self.owners.lock().unwrap_or_else(|p| p.into_inner()).remove(session);
        self.end_tasks_of(session);
    }

    /// Whether a request of `principal` may use the session `id`: it
    /// belongs to that principal, or it is not one opened here (rmcp then
    /// answers as for any unknown session).
    pub(super) fn session_admits(&self, id: &str, principal: Option<&Principal>) -> bool {
        let owners = self.owners.lock().unwrap_or_else(|p| p.into_inner());
        owners.get(id).is_none_or(|owner| owner.as_ref() == principal)
    }

    /// A session ended: its 2025-11-25 tasks, which only it could see, end
    /// with it (a running call is stopped).
    pub(super) fn end_tasks_of(&self, session: &str) {
        if let Some(tasks) = &self.tasks {
            tasks.end_owned_by(&format!("http:{session}"));
        }
    }
}

/// True when `body` is an `initialize` request (which opens a session).
pub(super) fn starts_session(body: &[u8]) -> bool {
    #[derive(serde::Deserialize)]
    struct Method<'a> {
        #[serde(borrow)]
        method: Option<&'a str>,
    }
    serde_json::from_slice::<Method>(body).is_ok_and(|message| message.method == Some("initialize"))
}

//! 2025-11-25 sessions in the shared store (`[state] url`), so that a
//! session opened on one replica is served by every replica and a plain
//! round-robin balancer needs no stickiness.
//!
//! A session's record (`PREFIX:session:ID`, a hash) is written when its
//! `initialize` succeeds, before the `Mcp-Session-Id` goes out: its owner
//! (a SHA-256 of the token's principal with `[serve.oauth]`, `-` without),
//! the client's `initialize` params (its protocol version, capabilities and
//! client info) and, once the client sends `logging/setLevel`, its log
//! level. It lives `session_idle` past its last request (every request of
//! its owner pushes the expiry back), and a DELETE on any replica removes
//! it.
//!
//! Every request that names a session looks its record up first (one
//! `EVALSHA`: [`SessionRecords::touch`]). A record of another owner, or none
//! (never opened, expired, ended by a DELETE anywhere), is to the request a
//! session that does not exist: 404, and a copy this replica still held is
//! closed. A replica that has no copy of a session it finds in the store
//! makes one through rmcp's own restore hook ([`Restore`], rmcp's
//! `SessionStore`): rmcp replays the `initialize` from the record into a
//! new in-memory session under the same id, then serves the request.
//!
//! `max_sessions_per_requestor` counts every replica's sessions: an owner's
//! sessions are a sorted set scored by their expiry, and one script checks
//! the count and takes a place (a ticket, swapped for the session id once it
//! is open) in one atomic step. The script reads the records of the set's
//! members (keys it is not given): fine on one Valkey/Redis, not on a
//! cluster (which toolhost does not support).

use super::Store;
use crate::oauth::Principal;
use redis::Script;
use rmcp::model::{ClientJsonRpcMessage, InitializeRequestParams};
use rmcp::transport::streamable_http_server::session::SessionManager;
use rmcp::transport::streamable_http_server::session::local::LocalSessionManager;
use rmcp::transport::streamable_http_server::session::{SessionState, SessionStore, SessionStoreError};
use std::future::Future;
use std::pin::Pin;
use std::sync::{Arc, Weak};
use std::time::Duration;

/// How long a place taken for an `initialize` lasts if the session never opens.
const TICKET: Duration = Duration::from_secs(30);
/// The longest session id looked up (rmcp's are UUIDs, 36 characters): a
/// longer one is a session that does not exist, without asking the store.
pub const MAX_SESSION_ID: usize = 128;
/// The most sessions ids checked for liveness in one round trip.
const BATCH: usize = 256;

/// KEYS[1]: the owner's set. ARGV: the most sessions, the ticket, its lease
/// (ms), the records' key prefix. Returns `{0}` with a place taken, or `{1, held}`.
const RESERVE: &str = r#"
local t = redis.call('TIME')
local now = tonumber(t[1]) * 1000 + math.floor(tonumber(t[2]) / 1000)
redis.call('ZREMRANGEBYSCORE', KEYS[1], '-inf', now)
local held = 0
for _, member in ipairs(redis.call('ZRANGE', KEYS[1], 0, -1)) do
  if string.sub(member, 1, 7) == 'ticket:' or redis.call('EXISTS', ARGV[4] .. member) == 1 then
    held = held + 1
  else
    redis.call('ZREM', KEYS[1], member)
  end
end
if held >= tonumber(ARGV[1]) then return {1, held} end
redis.call('ZADD', KEYS[1], now + tonumber(ARGV[3]), ARGV[2])
redis.call('PEXPIRE', KEYS[1], math.max(tonumber(ARGV[3]), redis.call('PTTL', KEYS[1])))
return {0}
"#;

/// KEYS[1]: the record, KEYS[2]: the owner's set. ARGV: owner, params,
/// idle (ms), ticket (or ''), session id. Writes the record; the ticket
/// becomes the session in the owner's set.
const OPEN: &str = r#"
local t = redis.call('TIME')
local now = tonumber(t[1]) * 1000 + math.floor(tonumber(t[2]) / 1000)
local idle = tonumber(ARGV[3])
redis.call('HSET', KEYS[1], 'owner', ARGV[1], 'params', ARGV[2])
redis.call('PEXPIRE', KEYS[1], idle)
if ARGV[4] ~= '' then
  redis.call('ZREM', KEYS[2], ARGV[4])
  redis.call('ZADD', KEYS[2], now + idle, ARGV[5])
  redis.call('PEXPIRE', KEYS[2], idle * 2)
end
return 0
"#;

/// KEYS[1]: the record, KEYS[2]: the owner's set. ARGV: the requesting
/// owner, idle (ms), session id, whether the owner's set counts. Returns
/// `{0}` no record, `{1}` another owner's, `{2, level}` the owner's (its
/// expiry pushed back).
const TOUCH: &str = r#"
local f = redis.call('HMGET', KEYS[1], 'owner', 'level')
if not f[1] then return {0} end
if f[1] ~= ARGV[1] then return {1} end
local idle = tonumber(ARGV[2])
redis.call('PEXPIRE', KEYS[1], idle)
if ARGV[4] == '1' then
  local t = redis.call('TIME')
  local now = tonumber(t[1]) * 1000 + math.floor(tonumber(t[2]) / 1000)
  redis.call('ZADD', KEYS[2], now + idle, ARGV[3])
  redis.call('PEXPIRE', KEYS[2], idle * 2)
end
return {2, f[2] or ''}
"#;

/// What the store says of a session a request names.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Looked {
    /// The requester's session (its expiry pushed back), with the log level
    /// its client set, if any.
    Owned(Option<String>),
    /// No such session for this requester: none in the store, or another owner's.
    NotOwned,
    /// The store could not be asked (the one line saying so).
    Unavailable(String),
}

/// The sessions of every replica, kept in the store.
pub struct SessionRecords {
    store: Store,
    idle: Duration,
    reserve: Script,
    open: Script,
    touch: Script,
    level: Script,
}

/// The owner a record stores for a request of `principal`: the SHA-256 of
/// its key (the record never holds a subject), or `-` without `[serve.oauth]`.
pub fn owner_of(principal: Option<&Principal>) -> String {
    match principal {
        Some(principal) => {
            let digest = ring::digest::digest(&ring::digest::SHA256, principal.key().as_bytes());
            digest.as_ref().iter().map(|byte| format!("{byte:02x}")).collect()
        }
        None => "-".to_owned(),
    }
}

impl SessionRecords {
    /// Sessions in `store` that expire `idle` after their last request.
    pub fn new(store: Store, idle: Duration) -> Arc<SessionRecords> {
        Arc::new(SessionRecords {
            store,
            idle,
            reserve: Script::new(RESERVE),
            open: Script::new(OPEN),
            touch: Script::new(TOUCH),
            // Only an existing record: a session ended meanwhile stays ended.
            level: Script::new(
                "if redis.call('EXISTS', KEYS[1]) == 1 then redis.call('HSET', KEYS[1], 'level', ARGV[1]) end return 0",
            ),
        })
    }

    /// Whether the store is unreachable means refusing (`on_unavailable = "closed"`).
    pub fn fails_open(&self) -> bool {
        self.store.on_unavailable() == super::OnUnavailable::Open
    }

    /// The store's line for a failure that is not the store's answer.
    pub fn unavailable(&self, why: &str) -> String {
        self.store.unavailable(why)
    }

    fn record(&self, id: &str) -> String {
        self.store.key(&["session", id])
    }

    fn owned(&self, owner: &str) -> String {
        self.store.key(&["sessions", "owner", owner])
    }

    fn idle_ms(&self) -> u64 {
        u64::try_from(self.idle.as_millis()).unwrap_or(u64::MAX).max(1)
    }

    /// Takes a place among `owner`'s sessions of every replica, if it holds
    /// fewer than `max`: `Ok(Ok(ticket))` (give it to [`SessionRecords::open`]
    /// or [`SessionRecords::release`]), `Ok(Err(held))` when it holds `max`.
    pub async fn reserve(&self, owner: &str, max: usize) -> Result<Result<String, usize>, String> {
        let ticket = format!("ticket:{}.{:016x}", self.store.me, super::store::rand_u64());
        let mut invocation = self.reserve.prepare_invoke();
        invocation
            .key(self.owned(owner))
            .arg(max)
            .arg(&ticket)
            .arg(TICKET.as_millis() as u64)
            .arg(self.store.key(&["session", ""]));
        let mut connection = self.store.connection();
        let answer: Vec<i64> = self.store.run(invocation.invoke_async(&mut connection)).await?;
        match answer.as_slice() {
            [0, ..] => Ok(Ok(ticket)),
            [1, held] => Ok(Err(usize::try_from(*held).unwrap_or(max))),
            _ => Err(self.store.unavailable("it answered the session count oddly")),
        }
    }

    /// Gives back a place [`SessionRecords::reserve`] took for a session that did not open.
    pub async fn release(&self, owner: &str, ticket: &str) {
        let mut connection = self.store.connection();
        let key = self.owned(owner);
        let _ = self.store.run(redis::cmd("ZREM").arg(&key).arg(ticket).query_async::<i64>(&mut connection)).await;
    }

    /// Writes the record of the session `id` that `owner` just opened with
    /// `params` (the `initialize` request's), swapping `ticket` for it.
    pub async fn open(&self, id: &str, owner: &str, params: &str, ticket: Option<&str>) -> Result<(), String> {
        let mut invocation = self.open.prepare_invoke();
        invocation
            .key(self.record(id))
            .key(self.owned(owner))
            .arg(owner)
            .arg(params)
            .arg(self.idle_ms())
            .arg(ticket.unwrap_or(""))
            .arg(id);
        let mut connection = self.store.connection();
        self.store.run(invocation.invoke_async::<i64>(&mut connection)).await.map(|_| ())
    }

    /// Looks the session `id` up for a request of `owner` (pushing its
    /// expiry back when it is theirs). `counted`: the owner's sessions are
    /// counted (`[serve.oauth]`).
    pub async fn touch(&self, id: &str, owner: &str, counted: bool) -> Looked {
        if id.len() > MAX_SESSION_ID {
            return Looked::NotOwned;
        }
        let mut invocation = self.touch.prepare_invoke();
        invocation.key(self.record(id)).key(self.owned(owner)).arg(owner).arg(self.idle_ms()).arg(id).arg(if counted {
            "1"
        } else {
            "0"
        });
        let mut connection = self.store.connection();
        match self.store.run(invocation.invoke_async::<redis::Value>(&mut connection)).await {
            Err(reason) => Looked::Unavailable(reason),
            Ok(redis::Value::Array(items)) => match items.as_slice() {
                [redis::Value::Int(2), level, ..] => {
                    let level = redis::from_redis_value::<String>(level.clone()).ok().filter(|level| !level.is_empty());
                    Looked::Owned(level)
                }
                [redis::Value::Int(0 | 1), ..] => Looked::NotOwned,
                _ => Looked::Unavailable(self.store.unavailable("it answered the session lookup oddly")),
            },
            Ok(_) => Looked::Unavailable(self.store.unavailable("it answered the session lookup oddly")),
        }
    }

    /// Records the log level the client of session `id` asked for (`logging/setLevel`).
    pub async fn set_level(&self, id: &str, level: &str) -> Result<(), String> {
        let mut connection = self.store.connection();
        let mut invocation = self.level.prepare_invoke();
        invocation.key(self.record(id)).arg(level);
        self.store.run(invocation.invoke_async::<i64>(&mut connection)).await.map(|_| ())
    }

    /// Ends the session `id` on every replica (a DELETE): its record goes
    /// (the others find it gone on their next look).
    pub async fn end(&self, id: &str) -> Result<(), String> {
        let mut connection = self.store.connection();
        let key = self.record(id);
        self.store.run(redis::cmd("DEL").arg(&key).query_async::<i64>(&mut connection)).await.map(|_| ())
    }

    /// Which of `ids` still have a record (`Err`: the store could not say).
    pub async fn alive(&self, ids: &[Arc<str>]) -> Result<Vec<bool>, String> {
        let mut alive = Vec::with_capacity(ids.len());
        for batch in ids.chunks(BATCH) {
            let mut pipe = redis::pipe();
            for id in batch {
                pipe.exists(self.record(id));
            }
            let mut connection = self.store.connection();
            let found: Vec<bool> = self.store.run(pipe.query_async(&mut connection)).await?;
            alive.extend(found);
        }
        Ok(alive)
    }

    /// Pushes back the expiry of `ids`, sessions in use on this replica
    /// (a GET stream open) though no request comes.
    pub async fn keep(&self, ids: &[Arc<str>]) {
        for batch in ids.chunks(BATCH) {
            let mut pipe = redis::pipe();
            for id in batch {
                pipe.cmd("PEXPIRE").arg(self.record(id)).arg(self.idle_ms()).arg("XX").ignore();
            }
            let mut connection = self.store.connection();
            let _ = self.store.run(pipe.query_async::<()>(&mut connection)).await;
        }
    }

    /// Passes a 2025-11-25 client's answer in session `id` (a JSON-RPC
    /// response to a question a call asked it) to every replica: the one
    /// whose call asked may not be the one the balancer sent it to.
    pub async fn pass_answer(&self, id: &str, body: &[u8]) {
        let Ok(body) = std::str::from_utf8(body) else { return };
        let message = serde_json::json!({"from": self.store.me, "session": id, "body": body}).to_string();
        let mut connection = self.store.connection();
        let channel = self.store.key(&["session-answers"]);
        let mut publish = redis::cmd("PUBLISH");
        publish.arg(&channel).arg(message);
        if let Err(reason) = self.store.run(publish.query_async::<i64>(&mut connection)).await {
            tracing::warn!("MCP session {id}: a client's answer was not passed to the other replicas: {reason}");
        }
    }

    /// Hands the answers other replicas pass on ([`SessionRecords::pass_answer`])
    /// to this replica's copy of their session, if it holds one, for as long
    /// as `sessions` lives; reconnects when the store goes away. The replica
    /// that passed it checked the owner.
    pub fn listen(self: &Arc<Self>, sessions: Weak<LocalSessionManager>) {
        let records = self.clone();
        tokio::spawn(async move {
            let channel = records.store.key(&["session-answers"]);
            loop {
                if sessions.strong_count() == 0 {
                    return;
                }
                if let Ok(mut pubsub) = records.store.pubsub().await
                    && pubsub.subscribe(&channel).await.is_ok()
                {
                    let mut messages = pubsub.on_message();
                    while let Some(message) = futures_util::StreamExt::next(&mut messages).await {
                        let Some(sessions) = sessions.upgrade() else { return };
                        let Ok(text) = message.get_payload::<String>() else { continue };
                        records.deliver(&sessions, &text).await;
                    }
                }
                tokio::time::sleep(Duration::from_millis(500)).await;
            }
        });
    }

    async fn deliver(&self, sessions: &LocalSessionManager, text: &str) {
        let Ok(passed) = serde_json::from_str::<serde_json::Value>(text) else { return };
        let (Some(from), Some(id), Some(body)) =
            (passed["from"].as_str(), passed["session"].as_str(), passed["body"].as_str())
        else {
            return;
        };
        if from == self.store.me {
            return;
        }
        let id: Arc<str> = Arc::from(id);
        if !sessions.sessions.read().await.contains_key(&id) {
            return;
        }
        let Ok(message) = serde_json::from_str::<ClientJsonRpcMessage>(body) else { return };
        if let Err(err) = sessions.accept_message(&id, message).await {
            tracing::debug!("MCP session {id}: an answer passed on by another replica was not taken: {err}");
        }
    }

    /// The `initialize` params of session `id` as written, if it has a record.
    async fn params(&self, id: &str) -> Result<Option<String>, String> {
        let mut connection = self.store.connection();
        let key = self.record(id);
        self.store.run(redis::cmd("HGET").arg(&key).arg("params").query_async(&mut connection)).await
    }
}

/// rmcp's restore hook over the records: a session this replica has no copy
/// of is loaded from its record and its `initialize` replayed. The record is
/// written by [`SessionRecords::open`] (which knows the owner), not here.
pub struct Restore(pub Arc<SessionRecords>);

/// The error of a restore that could not read the store.
#[derive(Debug)]
struct Unreachable(String);

impl std::fmt::Display for Unreachable {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(&self.0)
    }
}

impl std::error::Error for Unreachable {}

type Boxed<'a, T> = Pin<Box<dyn Future<Output = Result<T, SessionStoreError>> + Send + 'a>>;

impl SessionStore for Restore {
    fn load<'a, 'b, 'c>(&'a self, session_id: &'b str) -> Boxed<'c, Option<SessionState>>
    where
        'a: 'c,
        'b: 'c,
        Self: 'c,
    {
        Box::pin(async move {
            if session_id.len() > MAX_SESSION_ID {
                return Ok(None);
            }
            let params =
                self.0.params(session_id).await.map_err(|err| Box::new(Unreachable(err)) as SessionStoreError)?;
            let Some(params) = params else { return Ok(None) };
            match serde_json::from_str::<InitializeRequestParams>(&params) {
                Ok(params) => Ok(Some(SessionState::new(params))),
                Err(err) => {
                    tracing::warn!("MCP session {session_id}: its record's initialize params do not parse: {err}");
                    Ok(None)
                }
            }
        })
    }

    fn store<'a, 'b, 'c, 'd>(&'a self, _session_id: &'b str, _state: &'c SessionState) -> Boxed<'d, ()>
    where
        'a: 'd,
        'b: 'd,
        'c: 'd,
        Self: 'd,
    {
        Box::pin(async { Ok(()) })
    }

    fn delete<'a, 'b, 'c>(&'a self, session_id: &'b str) -> Boxed<'c, ()>
    where
        'a: 'c,
        'b: 'c,
        Self: 'c,
    {
        Box::pin(
            async move { self.0.end(session_id).await.map_err(|err| Box::new(Unreachable(err)) as SessionStoreError) },
        )
    }
}

/// The log level a session's client set (`logging/setLevel`) on whichever
/// replica, as its record says: put in a request's extensions for the handler.
#[derive(Debug, Clone, Copy)]
#[allow(deprecated)] // as the server handler, which still serves it to 2025-11-25 clients
pub struct SessionLevel(pub rmcp::model::LoggingLevel);

/// Whether `body` is a client's answer (a JSON-RPC response or error, no method).
pub fn is_answer(body: &[u8]) -> bool {
    let Ok(message) = serde_json::from_slice::<serde_json::Value>(body) else { return false };
    message.get("method").is_none()
        && message.get("id").is_some()
        && (message.get("result").is_some() || message.get("error").is_some())
}

/// The `params` of an `initialize` request body, as JSON text.
pub fn initialize_params(body: &[u8]) -> Option<String> {
    let message: serde_json::Value = serde_json::from_slice(body).ok()?;
    (message.get("method")?.as_str()? == "initialize")
        .then(|| message.get("params").map(|params| params.to_string()))?
}

/// The level of a `logging/setLevel` request body.
pub fn set_level(body: &[u8]) -> Option<String> {
    let message: serde_json::Value = serde_json::from_slice(body).ok()?;
    if message.get("method")?.as_str()? != "logging/setLevel" {
        return None;
    }
    let level = message.pointer("/params/level")?.as_str()?;
    // Only the levels the protocol names (it is stored, and read back by every replica).
    const LEVELS: [&str; 8] = ["debug", "info", "notice", "warning", "error", "critical", "alert", "emergency"];
    LEVELS.contains(&level).then(|| level.to_owned())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn owners_are_hashed_and_distinct() {
        let alice = owner_of(Some(&Principal::new("alice", Some("app"))));
        let bob = owner_of(Some(&Principal::new("bob", Some("app"))));
        assert_eq!(alice.len(), 64);
        assert!(!alice.contains("alice"));
        assert_ne!(alice, bob);
        assert_eq!(owner_of(None), "-");
    }

    #[test]
    fn reads_initialize_params_and_levels_only_from_their_requests() {
        let init = br#"{"jsonrpc":"2.0","id":1,"method":"initialize","params":{"protocolVersion":"2025-11-25"}}"#;
        assert_eq!(initialize_params(init).as_deref(), Some(r#"{"protocolVersion":"2025-11-25"}"#));
        assert_eq!(initialize_params(br#"{"method":"tools/list"}"#), None);
        assert_eq!(initialize_params(b"not json"), None);
        let level = br#"{"jsonrpc":"2.0","id":2,"method":"logging/setLevel","params":{"level":"debug"}}"#;
        assert_eq!(set_level(level).as_deref(), Some("debug"));
        assert_eq!(set_level(br#"{"method":"logging/setLevel","params":{"level":"loud"}}"#), None);
        assert_eq!(set_level(br#"{"method":"initialize","params":{"level":"debug"}}"#), None);
    }
}

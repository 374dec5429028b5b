//! The connection to the shared Valkey/Redis of `[state] url`: one
//! reconnecting, multiplexed connection per replica (redis-rs's
//! `ConnectionManager`), made lazily so that a replica starts (and says what
//! is wrong) while the store is down, and every request bounded by
//! `[state] timeout`. A failed request is turned into one line that names the
//! store without its password ([`Store::unavailable`]).

use super::{OnUnavailable, StateConfig, StateUrl};
use anyhow::{Context, Result};
use redis::aio::{ConnectionManager, ConnectionManagerConfig};
use std::time::Duration;

/// The store every replica shares.
#[derive(Clone)]
pub struct Store {
    client: redis::Client,
    connection: ConnectionManager,
    url: StateUrl,
    prefix: String,
    timeout: Duration,
    on_unavailable: OnUnavailable,
    /// This process, unique among all replicas and runs: who holds a slot.
    pub(crate) me: String,
}

impl Store {
    /// Sets up the connection `config` describes (connecting on first use);
    /// `None` without `[state] url`. Fails only on a bad setting.
    pub fn open(config: &StateConfig, replica: &str) -> Result<Option<Store>> {
        let Some(url) = &config.url else { return Ok(None) };
        let mut info: redis::ConnectionInfo = redis::IntoConnectionInfo::into_connection_info(url.secret())
            .map_err(|_| anyhow::anyhow!("[state] url `{}` is not a valid Valkey/Redis URL", url.shown()))?;
        if let Some(password) = config.password()? {
            let settings = info.redis_settings().clone().set_password(password);
            info = info.set_redis_settings(settings);
        }
        let client = match config.ca()? {
            Some(pem) => {
                let certificates = redis::TlsCertificates { client_tls: None, root_cert: Some(pem) };
                redis::Client::build_with_tls(info, certificates)
            }
            None => redis::Client::open(info),
        }
        .with_context(|| format!("[state] url `{}`: could not set up the client", url.shown()))?;
        let timeout = config.timeout();
        // Few quick retries: a request waits at most about `timeout` for a
        // store that is gone, then the call is refused (or not) at once.
        let manager_config = ConnectionManagerConfig::new()
            .set_connection_timeout(Some(timeout))
            .set_response_timeout(Some(timeout))
            .set_number_of_retries(1)
            .set_min_delay(Duration::from_millis(50))
            .set_max_delay(Duration::from_millis(200));
        let connection = ConnectionManager::new_lazy_with_config(client.clone(), manager_config)
            .with_context(|| format!("[state] url `{}`: could not set up the connection", url.shown()))?;
        let me = format!("{replica}.{:016x}", rand_u64());
        Ok(Some(Store {
            client,
            connection,
            url: url.clone(),
            prefix: config.prefix().to_owned(),
            timeout,
            on_unavailable: config.on_unavailable,
            me,
        }))
    }

    /// A connection for one request (cheap: it shares the one socket).
    pub(crate) fn connection(&self) -> ConnectionManager {
        self.connection.clone()
    }

    /// A connection of its own for pub/sub (a subscribed connection can do
    /// nothing else), within `[state] timeout`.
    pub(crate) async fn pubsub(&self) -> Result<redis::aio::PubSub, String> {
        self.run(self.client.get_async_pubsub()).await
    }

    /// The key `parts` names under this deployment's prefix.
    pub(crate) fn key(&self, parts: &[&str]) -> String {
        let mut key = self.prefix.clone();
        for part in parts {
            key.push(':');
            key.push_str(part);
        }
        key
    }

    /// Runs `request` within `[state] timeout`, turning any failure into the
    /// one line a refused call carries.
    pub(crate) async fn run<T>(
        &self,
        request: impl std::future::Future<Output = redis::RedisResult<T>>,
    ) -> Result<T, String> {
        match tokio::time::timeout(self.timeout, request).await {
            Ok(Ok(value)) => Ok(value),
            Ok(Err(err)) => Err(self.unavailable(&describe(&err))),
            Err(_) => Err(self.unavailable(&format!("no answer within {}ms", self.timeout.as_millis()))),
        }
    }

    /// The line said when the store cannot be asked.
    pub(crate) fn unavailable(&self, why: &str) -> String {
        let then = match self.on_unavailable {
            OnUnavailable::Closed => "calls are refused until it is back ([state] on_unavailable = \"closed\")",
            OnUnavailable::Open => "calls run under this replica's own limits ([state] on_unavailable = \"open\")",
        };
        format!("the shared state store {} is unreachable ({why}): {then}", self.url.shown())
    }

    /// What to do while the store cannot be reached.
    pub fn on_unavailable(&self) -> OnUnavailable {
        self.on_unavailable
    }

    /// Checks that the store answers (`PING`), for startup's message.
    pub async fn ping(&self) -> Result<(), String> {
        let mut connection = self.connection();
        self.run(async move { redis::cmd("PING").query_async::<String>(&mut connection).await }).await.map(|_| ())
    }

    /// The store's URL without its password.
    pub fn shown(&self) -> String {
        self.url.shown()
    }
}

/// A redis error in a few words, without the URL (which could hold the
/// password) and without Rust type names.
fn describe(err: &redis::RedisError) -> String {
    if err.is_timeout() {
        "it did not answer in time".to_owned()
    } else if err.is_connection_refusal() {
        "connection refused".to_owned()
    } else if err.is_connection_dropped() || err.is_io_error() {
        "the connection was lost".to_owned()
    } else if err.kind() == redis::ErrorKind::AuthenticationFailed
        || err.code() == Some("NOAUTH")
        || err.code() == Some("WRONGPASS")
    {
        "the password was refused".to_owned()
    } else {
        // The server's own error code and text (never the URL).
        let detail = err.detail().unwrap_or("");
        let code = err.code().unwrap_or("error");
        let text: String = format!("{code} {detail}").chars().filter(|c| !c.is_control()).take(200).collect();
        text.trim().to_owned()
    }
}

/// 64 random bits from the system's generator.
pub(crate) fn rand_u64() -> u64 {
    let mut bytes = [0u8; 8];
    ring::rand::SecureRandom::fill(&ring::rand::SystemRandom::new(), &mut bytes)
        .expect("the system's random generator failed");
    u64::from_le_bytes(bytes)
}

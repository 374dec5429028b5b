//! `[quotas]`: how often, and how many at once, a tool, a plugin's tools or
//! an MCP server's tools may be called.
//!
//! ```toml
//! [quotas]
//! tools = { fetch = { rate = "10/min", concurrency = 2 } }   # by tool name
//! plugins = { hash = { rate = "100/s" } }                     # all of a plugin's tools together
//! servers = { github = { rate = "30/min", concurrency = 4 } } # all of an MCP server's tools
//! ```
//!
//! Every call goes through [`Quotas::admit`] before it runs, whichever way it
//! came (`call`, `run`, `chat`, `serve`): a call over a concurrency cap is
//! refused with [`CallError::Busy`], one over a rate limit with
//! [`CallError::RateLimited`] and the time after which a call is let through
//! again. A refused call runs nothing and costs nothing; an admitted one
//! counts against its rate whatever becomes of it (invalid arguments
//! included). A rate of `N/PERIOD` lets `N` calls through at once and one
//! more every `PERIOD / N` (a token bucket). Quotas are kept per toolhost
//! process (each `serve` replica and each `run` has its own) unless a
//! [`SharedQuotas`] store is set with [`Quotas::share`]: then every process
//! using that store draws on one bucket and one cap per quota (`serve` with
//! `[state] url`, the store living in `toolhost-mcp`; the catalog only knows
//! this seam).

use crate::{Entry, Source};
use serde::{Deserialize, Deserializer};
use std::collections::{BTreeMap, HashMap};
use std::fmt;
use std::future::Future;
use std::pin::Pin;
use std::str::FromStr;
use std::sync::{Arc, Mutex, OnceLock};
use std::time::{Duration, Instant};
use tokio::sync::{OwnedSemaphorePermit, Semaphore};
use toolhost_runtime::limits::HumanDuration;
use toolhost_runtime::outcome::CallError;

/// `[quotas]` in `toolhost.toml`.
#[derive(Debug, Clone, Default, PartialEq, Eq, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct QuotaConfig {
    /// Quotas by tool name (an MCP server's tools by their catalog name).
    #[serde(default)]
    pub tools: BTreeMap<String, Quota>,
    /// Quotas shared by all the tools of a plugin (file stem).
    #[serde(default)]
    pub plugins: BTreeMap<String, Quota>,
    /// Quotas shared by all the tools of an MCP server (`[mcp_servers.NAME]`).
    #[serde(default)]
    pub servers: BTreeMap<String, Quota>,
}

/// One quota: a rate, a concurrency cap, or both.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Quota {
    /// Calls allowed per period, e.g. `10/min`.
    pub rate: Option<Rate>,
    /// Calls that may run at once.
    pub concurrency: Option<Concurrency>,
}

/// A rate: `calls` per `period`.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Rate {
    /// Calls allowed per period (at least 1).
    pub calls: u32,
    /// The period.
    pub period: Duration,
}

impl FromStr for Rate {
    type Err = String;

    fn from_str(text: &str) -> Result<Rate, String> {
        let help = || {
            format!(
                "`{text}` is not a rate: write CALLS/PERIOD, e.g. `10/min`, `100/s`, `500/h`, `1000/day` or \
                 `5/10s`, with at least one call"
            )
        };
        let (calls, period) = text.split_once('/').ok_or_else(help)?;
        let calls: u32 = calls.trim().replace('_', "").parse().map_err(|_| help())?;
        let period = match period.trim() {
            "s" | "sec" | "second" => Duration::from_secs(1),
            "m" | "min" | "minute" => Duration::from_secs(60),
            "h" | "hour" => Duration::from_secs(3600),
            "d" | "day" => Duration::from_secs(86_400),
            other => other.parse::<HumanDuration>().map_err(|_| help())?.0,
        };
        if calls == 0 || period.is_zero() {
            return Err(help());
        }
        Ok(Rate { calls, period })
    }
}

impl fmt::Display for Rate {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let times = if self.calls == 1 { "once".to_owned() } else { format!("{} times", self.calls) };
        match self.period.as_secs() {
            1 if self.period.subsec_nanos() == 0 => write!(f, "{times} per second"),
            60 if self.period.subsec_nanos() == 0 => write!(f, "{times} per minute"),
            3600 if self.period.subsec_nanos() == 0 => write!(f, "{times} per hour"),
            86_400 if self.period.subsec_nanos() == 0 => write!(f, "{times} per day"),
            _ => write!(f, "{times} per {}", HumanDuration(self.period)),
        }
    }
}

impl<'de> Deserialize<'de> for Rate {
    fn deserialize<D: Deserializer<'de>>(deserializer: D) -> Result<Rate, D::Error> {
        String::deserialize(deserializer)?.parse().map_err(serde::de::Error::custom)
    }
}

/// A concurrency cap: at least one call at a time.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Concurrency(pub usize);

impl<'de> Deserialize<'de> for Concurrency {
    fn deserialize<D: Deserializer<'de>>(deserializer: D) -> Result<Concurrency, D::Error> {
        match u32::deserialize(deserializer)? {
            0 => Err(serde::de::Error::custom(
                "`concurrency` must be at least 1 (to stop a tool from running, set its approval policy to \"deny\")",
            )),
            cap => Ok(Concurrency(cap as usize)),
        }
    }
}

/// What an admitted call holds while it runs: its places under the caps.
#[must_use = "the call's places under its concurrency caps are given back when this is dropped"]
pub struct Admitted {
    _permits: Vec<OwnedSemaphorePermit>,
    /// A shared store's hold on its caps (given back when dropped).
    _shared: Option<Box<dyn Send + Sync>>,
}

/// One quota that applies to a call, as a [`SharedQuotas`] store sees it.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Limit {
    /// A stable name of the quota, the same in every process with the same
    /// config: `tool:NAME`, `plugin:NAME` or `server:NAME`.
    pub key: String,
    /// Whose quota, in words (``tool `fetch` ``), for the refusal.
    pub scope: String,
    pub rate: Option<Rate>,
    pub cap: Option<usize>,
}

/// What a [`SharedQuotas`] store answers.
pub enum SharedAdmission {
    /// Every limit let the call through; the value holds its places under
    /// the caps until dropped.
    Admitted(Box<dyn Send + Sync>),
    /// A limit refused it ([`CallError::Busy`] or [`CallError::RateLimited`]).
    Refused(CallError),
    /// The store could not be asked: the reason, in one line.
    Unavailable(String),
}

/// A store that keeps quotas for many processes at once (replicas of
/// `serve`), checking and taking every applying limit in one atomic step.
pub trait SharedQuotas: Send + Sync {
    /// Checks the caps first and the rates only then, all or nothing, as
    /// [`Quotas::admit`] does in one process.
    fn admit<'a>(&'a self, limits: &'a [Limit]) -> Pin<Box<dyn Future<Output = SharedAdmission> + Send + 'a>>;
    /// With the store unreachable: whether calls run under this process's own
    /// quotas (true) or are refused (false, the default).
    fn fail_open(&self) -> bool;
}

/// The quotas of one host, with their state: the buckets of the rates and
/// the semaphores of the caps, each made once from the config.
#[derive(Default)]
pub struct Quotas {
    limiters: HashMap<(Scope, String), Limiter>,
    /// Set once by [`Quotas::share`]: the store every replica draws on.
    shared: OnceLock<Arc<dyn SharedQuotas>>,
}

/// Whose quota a limiter is.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
enum Scope {
    Tool,
    Plugin,
    Server,
}

struct Limiter {
    rate: Option<(Rate, Mutex<Bucket>)>,
    cap: Option<(usize, Arc<Semaphore>)>,
}

/// A token bucket holding up to `rate.calls` calls, refilled continuously.
struct Bucket {
    tokens: f64,
    at: Instant,
}

impl Bucket {
    /// Adds what the time since the last look has earned, up to the burst.
    fn refill(&mut self, rate: Rate, now: Instant) {
        let per_call = rate.period.as_secs_f64() / f64::from(rate.calls);
        let elapsed = now.saturating_duration_since(self.at).as_secs_f64();
        self.tokens = (self.tokens + elapsed / per_call).min(f64::from(rate.calls));
        self.at = now;
    }

    /// How long until a whole call is in the bucket (zero when one is).
    fn wait(&self, rate: Rate) -> Duration {
        let per_call = rate.period.as_secs_f64() / f64::from(rate.calls);
        Duration::from_secs_f64((1.0 - self.tokens).max(0.0) * per_call)
    }
}

impl Quotas {
    /// The quotas `config` sets.
    pub fn new(config: &QuotaConfig) -> Quotas {
        let scoped = [(Scope::Tool, &config.tools), (Scope::Plugin, &config.plugins), (Scope::Server, &config.servers)];
        let mut limiters = HashMap::new();
        for (scope, quotas) in scoped {
            for (name, quota) in quotas {
                let limiter = Limiter {
                    rate: quota
                        .rate
                        .map(|rate| (rate, Mutex::new(Bucket { tokens: f64::from(rate.calls), at: Instant::now() }))),
                    cap: quota.concurrency.map(|Concurrency(cap)| (cap, Arc::new(Semaphore::new(cap)))),
                };
                limiters.insert((scope, name.clone()), limiter);
            }
        }
        Quotas { limiters, shared: OnceLock::new() }
    }

    /// Keeps these quotas in `store` from now on (once; a second store is
    /// refused). The limits stay the config's; only their state moves.
    pub fn share(&self, store: Arc<dyn SharedQuotas>) -> Result<(), String> {
        self.shared.set(store).map_err(|_| "the quotas are already shared with a store".to_owned())
    }

    /// [`Quotas::admit`], against the shared store when one is set. With the
    /// store unreachable a call is refused with the store's one-line reason,
    /// or (when the store fails open) held to this process's own quotas.
    pub async fn admit_shared(&self, entry: &Entry) -> Result<Admitted, CallError> {
        let Some(store) = self.shared.get() else { return self.admit(entry) };
        let limits: Vec<Limit> = self
            .applying(entry)
            .into_iter()
            .map(|(scope, name, limiter)| Limit {
                key: format!("{}:{name}", scope.key()),
                scope: describe(scope, name),
                rate: limiter.rate.as_ref().map(|(rate, _)| *rate),
                cap: limiter.cap.as_ref().map(|(cap, _)| *cap),
            })
            .collect();
        if limits.is_empty() {
            return Ok(Admitted { _permits: Vec::new(), _shared: None });
        }
        match store.admit(&limits).await {
            SharedAdmission::Admitted(hold) => Ok(Admitted { _permits: Vec::new(), _shared: Some(hold) }),
            SharedAdmission::Refused(error) => Err(error),
            SharedAdmission::Unavailable(reason) if store.fail_open() => {
                tracing::warn!(%reason, "the shared quotas are unreachable: holding the call to this replica's own quotas ([state] on_unavailable = \"open\")");
                self.admit(entry)
            }
            SharedAdmission::Unavailable(reason) => Err(CallError::Host(reason)),
        }
    }

    /// The limiters that apply to a call of `entry`: its tool's, then its
    /// plugin's or server's.
    fn applying<'a>(&'a self, entry: &'a Entry) -> Vec<(Scope, &'a str, &'a Limiter)> {
        let source = match entry.source() {
            Source::Plugin { .. } => (Scope::Plugin, entry.origin()),
            Source::Mcp { .. } => (Scope::Server, entry.origin()),
        };
        [(Scope::Tool, entry.name()), source]
            .into_iter()
            .filter_map(|(scope, name)| Some((scope, name, self.limiters.get(&(scope, name.to_owned()))?)))
            .collect()
    }

    /// Lets a call to `entry` run, or says why not. The concurrency caps are
    /// checked first and the rates only then, so a call refused for either
    /// reason uses up nothing; the returned [`Admitted`] holds the call's
    /// places under the caps until it is dropped.
    pub fn admit(&self, entry: &Entry) -> Result<Admitted, CallError> {
        if self.limiters.is_empty() {
            return Ok(Admitted { _permits: Vec::new(), _shared: None });
        }
        let applying = self.applying(entry);
        let mut permits = Vec::new();
        for (scope, name, limiter) in &applying {
            if let Some((cap, semaphore)) = &limiter.cap {
                match semaphore.clone().try_acquire_owned() {
                    Ok(permit) => permits.push(permit),
                    Err(_) => return Err(CallError::Busy { scope: describe(*scope, name), limit: *cap }),
                }
            }
        }
        // Every bucket is checked under its lock before any is taken from, so
        // a call that one rate refuses costs the others nothing.
        let now = Instant::now();
        let mut buckets = Vec::new();
        for (scope, name, limiter) in &applying {
            if let Some((rate, bucket)) = &limiter.rate {
                let mut bucket = bucket.lock().unwrap_or_else(|poisoned| poisoned.into_inner());
                bucket.refill(*rate, now);
                if bucket.tokens < 1.0 {
                    let retry_after = bucket.wait(*rate);
                    return Err(CallError::RateLimited {
                        scope: describe(*scope, name),
                        limit: rate.to_string(),
                        retry_after,
                    });
                }
                buckets.push(bucket);
            }
        }
        for mut bucket in buckets {
            bucket.tokens -= 1.0;
        }
        Ok(Admitted { _permits: permits, _shared: None })
    }
}

/// One configured quota and its use in this process, for the operator's page.
#[derive(Debug, Clone, PartialEq)]
pub struct QuotaUse {
    /// `tool:NAME`, `plugin:NAME` or `server:NAME`.
    pub key: String,
    /// Whose quota, in words (``tool `fetch` ``).
    pub scope: String,
    pub rate: Option<Rate>,
    /// Calls the rate would let through now (whole calls in the bucket).
    pub rate_left: Option<u32>,
    pub cap: Option<usize>,
    /// Calls running under the cap now.
    pub running: Option<usize>,
    /// True when the quota is kept in a shared store (then this process's
    /// own numbers are not what limits calls).
    pub shared: bool,
}

impl Quotas {
    /// Every quota with its use now, sorted by scope.
    pub fn usage(&self) -> Vec<QuotaUse> {
        let now = Instant::now();
        let shared = self.shared.get().is_some();
        let mut usage: Vec<QuotaUse> = self
            .limiters
            .iter()
            .map(|((scope, name), limiter)| {
                let (rate, rate_left) = match &limiter.rate {
                    Some((rate, bucket)) => {
                        let mut bucket = bucket.lock().unwrap_or_else(|poisoned| poisoned.into_inner());
                        bucket.refill(*rate, now);
                        (Some(*rate), Some(bucket.tokens.floor() as u32))
                    }
                    None => (None, None),
                };
                let (cap, running) = match &limiter.cap {
                    Some((cap, semaphore)) => (Some(*cap), Some(cap.saturating_sub(semaphore.available_permits()))),
                    None => (None, None),
                };
                QuotaUse {
                    key: format!("{}:{name}", scope.key()),
                    scope: describe(*scope, name),
                    rate,
                    rate_left,
                    cap,
                    running,
                    shared,
                }
            })
            .collect();
        usage.sort_by(|a, b| a.scope.cmp(&b.scope));
        usage
    }
}

impl Scope {
    fn key(self) -> &'static str {
        match self {
            Scope::Tool => "tool",
            Scope::Plugin => "plugin",
            Scope::Server => "server",
        }
    }
}

fn describe(scope: Scope, name: &str) -> String {
    match scope {
        Scope::Tool => format!("tool `{name}`"),
        Scope::Plugin => format!("plugin `{name}`"),
        Scope::Server => format!("MCP server `{name}`"),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn accepts_rates_in_every_unit() {
        let cases = [
            ("10/min", 10, 60.0),
            ("100/s", 100, 1.0),
            ("1/h", 1, 3600.0),
            ("1_000/day", 1000, 86_400.0),
            ("5/10s", 5, 10.0),
            ("3/500ms", 3, 0.5),
        ];
        for (text, calls, period) in cases {
            let rate: Rate = text.parse().unwrap();
            assert_eq!((rate.calls, rate.period.as_secs_f64()), (calls, period), "{text}");
        }
        assert_eq!("10/min".parse::<Rate>().unwrap().to_string(), "10 times per minute");
        assert_eq!("1/s".parse::<Rate>().unwrap().to_string(), "once per second");
        assert_eq!("5/10s".parse::<Rate>().unwrap().to_string(), "5 times per 10s");
    }

    #[test]
    fn rejects_bad_rates_with_the_form() {
        for text in ["10", "0/min", "ten/min", "10/fortnight", "10/0s", "/min", "-1/s"] {
            let err = text.parse::<Rate>().unwrap_err();
            assert!(err.contains("CALLS/PERIOD") && err.contains("10/min"), "{text}: {err}");
        }
    }

    #[test]
    fn rejects_a_zero_cap_and_unknown_keys_in_the_config() {
        let err = toml::from_str::<QuotaConfig>("tools = { fetch = { concurrency = 0 } }").unwrap_err().to_string();
        assert!(err.contains("at least 1"), "{err}");
        let err = toml::from_str::<QuotaConfig>("tools = { fetch = { rates = \"1/s\" } }").unwrap_err().to_string();
        assert!(err.contains("unknown field `rates`"), "{err}");
        let err = toml::from_str::<QuotaConfig>("tool = {}").unwrap_err().to_string();
        assert!(err.contains("unknown field `tool`"), "{err}");
    }

    #[test]
    fn a_bucket_lets_a_burst_through_then_one_call_per_share_of_the_period() {
        let rate: Rate = "2/s".parse().unwrap();
        let start = Instant::now();
        let mut bucket = Bucket { tokens: 2.0, at: start };
        let take = |bucket: &mut Bucket, now: Instant| {
            bucket.refill(rate, now);
            if bucket.tokens >= 1.0 {
                bucket.tokens -= 1.0;
                Ok(())
            } else {
                Err(bucket.wait(rate))
            }
        };
        assert!(take(&mut bucket, start).is_ok());
        assert!(take(&mut bucket, start).is_ok());
        let wait = take(&mut bucket, start).unwrap_err();
        assert!((wait.as_secs_f64() - 0.5).abs() < 1e-6, "{wait:?}");
        assert!(take(&mut bucket, start + Duration::from_millis(400)).is_err());
        assert!(take(&mut bucket, start + Duration::from_millis(500)).is_ok());
        // Idle for a long time: never more than the burst.
        let later = start + Duration::from_secs(3600);
        assert!(take(&mut bucket, later).is_ok() && take(&mut bucket, later).is_ok());
        assert!(take(&mut bucket, later).is_err());
    }
}

//! `[quotas]` in the shared store: every replica draws on one token bucket
//! and one concurrency cap per quota, so a tool allowed `4/min` is allowed 4
//! calls a minute in all, wherever they land.
//!
//! One Lua script checks and takes every limit that applies to a call in a
//! single atomic step on the server (caps first, then rates, all or nothing,
//! as in one process), with the server's clock (`TIME`), so replicas whose
//! clocks differ still agree. A bucket is a hash `{tokens, at}`; a cap is a
//! sorted set of holders scored by when their lease ends: a running call
//! renews its lease while it runs and removes itself when it ends, and the
//! holders of a replica that died fall out when their lease runs out.

use super::Store;
use redis::Script;
use std::future::Future;
use std::pin::Pin;
use std::sync::Arc;
use std::sync::atomic::{AtomicU64, Ordering};
use std::time::Duration;
use toolhost_catalog::quota::{Limit, SharedAdmission, SharedQuotas};
use toolhost_runtime::outcome::CallError;

/// How long a held cap slot lasts unless renewed.
const LEASE: Duration = Duration::from_secs(30);
/// How often a running call renews its slots.
const RENEW: Duration = Duration::from_secs(10);

/// KEYS: per limit, its bucket then its cap. ARGV: the limit count, the
/// holder, the lease (ms), then per limit: calls, period (ms), cap (0: none).
/// Returns `{0}` admitted, `{1, i}` busy on limit i, `{2, i, wait_ms}` rate
/// limited on limit i.
const ADMIT: &str = r#"
local t = redis.call('TIME')
local now = tonumber(t[1]) * 1000 + math.floor(tonumber(t[2]) / 1000)
local n = tonumber(ARGV[1])
local holder = ARGV[2]
local lease = tonumber(ARGV[3])
local function arg(i, k) return tonumber(ARGV[3 + (i - 1) * 3 + k]) end
for i = 1, n do
  local cap = arg(i, 3)
  if cap > 0 then
    local key = KEYS[2 * i]
    redis.call('ZREMRANGEBYSCORE', key, '-inf', now)
    if redis.call('ZCARD', key) >= cap then return {1, i} end
  end
end
local taken = {}
for i = 1, n do
  local calls, period = arg(i, 1), arg(i, 2)
  if calls > 0 then
    local state = redis.call('HMGET', KEYS[2 * i - 1], 'tokens', 'at')
    local tokens = tonumber(state[1]) or calls
    local at = tonumber(state[2]) or now
    local per = period / calls
    tokens = math.min(calls, tokens + math.max(0, now - at) / per)
    if tokens < 1 then return {2, i, math.ceil((1 - tokens) * per)} end
    taken[i] = tokens - 1
  end
end
for i, tokens in pairs(taken) do
  redis.call('HSET', KEYS[2 * i - 1], 'tokens', tostring(tokens), 'at', now)
  redis.call('PEXPIRE', KEYS[2 * i - 1], arg(i, 2) * 2)
end
for i = 1, n do
  if arg(i, 3) > 0 then
    redis.call('ZADD', KEYS[2 * i], now + lease, holder)
    redis.call('PEXPIRE', KEYS[2 * i], lease * 2)
  end
end
return {0}
"#;

/// KEYS: the caps held; ARGV: the holder, the lease (ms). Extends the lease.
const RENEW_SCRIPT: &str = r#"
local t = redis.call('TIME')
local now = tonumber(t[1]) * 1000 + math.floor(tonumber(t[2]) / 1000)
for _, key in ipairs(KEYS) do
  if redis.call('ZSCORE', key, ARGV[1]) then
    redis.call('ZADD', key, now + tonumber(ARGV[2]), ARGV[1])
    redis.call('PEXPIRE', key, tonumber(ARGV[2]) * 2)
  end
end
return 0
"#;

/// The quotas of every replica, kept in the store.
pub struct StoreQuotas {
    store: Store,
    admit: Script,
    renew: Arc<Script>,
    /// Numbers this process's holders.
    next: AtomicU64,
}

impl StoreQuotas {
    pub fn new(store: Store) -> StoreQuotas {
        StoreQuotas {
            store,
            admit: Script::new(ADMIT),
            renew: Arc::new(Script::new(RENEW_SCRIPT)),
            next: AtomicU64::new(0),
        }
    }
}

/// A call's slots under the shared caps: renewed while it runs, given back
/// when dropped.
struct Hold {
    renewing: Option<tokio::task::JoinHandle<()>>,
    release: Option<(Store, Vec<String>, String)>,
}

impl Drop for Hold {
    fn drop(&mut self) {
        if let Some(renewing) = &self.renewing {
            renewing.abort();
        }
        if let Some((store, keys, holder)) = self.release.take() {
            // Given back in the background; should the store be gone, the
            // lease runs out instead.
            if let Ok(runtime) = tokio::runtime::Handle::try_current() {
                runtime.spawn(async move {
                    let mut connection = store.connection();
                    let mut pipe = redis::pipe();
                    for key in &keys {
                        pipe.zrem(key, &holder).ignore();
                    }
                    let _ = store.run(pipe.query_async::<()>(&mut connection)).await;
                });
            }
        }
    }
}

impl SharedQuotas for StoreQuotas {
    fn admit<'a>(&'a self, limits: &'a [Limit]) -> Pin<Box<dyn Future<Output = SharedAdmission> + Send + 'a>> {
        Box::pin(async move {
            let holder = format!("{}.{}", self.store.me, self.next.fetch_add(1, Ordering::Relaxed));
            let lease = LEASE.as_millis() as u64;
            let mut invocation = self.admit.prepare_invoke();
            invocation.arg(limits.len()).arg(&holder).arg(lease);
            let mut caps = Vec::new();
            for limit in limits {
                let cap_key = self.store.key(&["quota", "cap", &limit.key]);
                invocation.key(self.store.key(&["quota", "rate", &limit.key])).key(&cap_key);
                let (calls, period) = limit.rate.map_or((0, 0), |rate| (rate.calls, rate.period.as_millis() as u64));
                invocation.arg(calls).arg(period).arg(limit.cap.unwrap_or(0));
                if limit.cap.is_some() {
                    caps.push(cap_key);
                }
            }
            let mut connection = self.store.connection();
            let answer: Vec<i64> = match self.store.run(invocation.invoke_async(&mut connection)).await {
                Ok(answer) => answer,
                Err(reason) => return SharedAdmission::Unavailable(reason),
            };
            let limit = |index: i64| usize::try_from(index - 1).ok().and_then(|index| limits.get(index));
            match answer.as_slice() {
                [0, ..] => {
                    let renewing = if caps.is_empty() {
                        None
                    } else {
                        let (store, renew, keys, holder) =
                            (self.store.clone(), self.renew.clone(), caps.clone(), holder.clone());
                        Some(tokio::spawn(async move {
                            let mut ticks = tokio::time::interval(RENEW);
                            ticks.tick().await;
                            loop {
                                ticks.tick().await;
                                let mut connection = store.connection();
                                let mut invocation = renew.prepare_invoke();
                                invocation.arg(&holder).arg(lease);
                                for key in &keys {
                                    invocation.key(key);
                                }
                                let _ = store.run(invocation.invoke_async::<i64>(&mut connection)).await;
                            }
                        }))
                    };
                    let release = (!caps.is_empty()).then(|| (self.store.clone(), caps, holder));
                    SharedAdmission::Admitted(Box::new(Hold { renewing, release }))
                }
                [1, index] => match limit(*index) {
                    Some(limit) => SharedAdmission::Refused(CallError::Busy {
                        scope: limit.scope.clone(),
                        limit: limit.cap.unwrap_or(0),
                    }),
                    None => SharedAdmission::Unavailable(self.store.unavailable("it answered the quota check oddly")),
                },
                [2, index, wait] => match limit(*index) {
                    Some(limit) => SharedAdmission::Refused(CallError::RateLimited {
                        scope: limit.scope.clone(),
                        limit: limit.rate.map(|rate| rate.to_string()).unwrap_or_default(),
                        retry_after: Duration::from_millis(u64::try_from(*wait).unwrap_or(0)),
                    }),
                    None => SharedAdmission::Unavailable(self.store.unavailable("it answered the quota check oddly")),
                },
                _ => SharedAdmission::Unavailable(self.store.unavailable("it answered the quota check oddly")),
            }
        })
    }

    fn fail_open(&self) -> bool {
        self.store.on_unavailable() == super::OnUnavailable::Open
    }
}

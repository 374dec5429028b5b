//! The call not made: the results of tools that declare them cacheable,
//! kept for a while and given again for the same call.
//!
//! A tool's result is cached when its tool says it may be (its effective
//! hints are read-only *and* idempotent, or its manifest gives a
//! `cache_ttl`), its plugin is granted no network and no writable folder
//! (unless the operator's `[plugins.NAME] cache = true` says otherwise), the
//! operator has not turned it off (`[plugins.NAME] cache = false`, `[cache]
//! enabled = false`), and the call succeeded. Errors are never cached.
//!
//! The key is exact, not a hash: the plugin's load (a number each load of a
//! plugin gets, so a reload that changed its bytes, its grants or its
//! credentials never meets an entry of the plugin it replaced), the tool,
//! the requestor (for a plugin with credentials, whose results may depend on
//! who asks; such a call is not cached when the requestor is unknown) and
//! the canonical form of the arguments (object members sorted, no spaces:
//! the same arguments however they were written). Entries are bounded by
//! count and bytes (keys and outputs), the oldest going first, and each
//! expires after its time to live.

use serde::Deserialize;
use serde_json::Value;
use std::collections::{HashMap, VecDeque};
use std::sync::Arc;
use std::sync::Mutex;
use std::time::{Duration, Instant};
use toolhost_runtime::limits::{ByteSize, HumanDuration, Limits};
use toolhost_runtime::outcome::ToolOutput;

/// `[cache]`: how results of cacheable tools are kept.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Deserialize)]
#[serde(deny_unknown_fields, default)]
pub struct CacheConfig {
    /// Whether results are cached at all.
    pub enabled: bool,
    /// How long a result stays when its tool's manifest gives no `cache_ttl`.
    pub ttl: HumanDuration,
    /// The most results kept.
    pub max_entries: usize,
    /// The most bytes of arguments and outputs kept.
    pub max_bytes: ByteSize,
}

impl Default for CacheConfig {
    fn default() -> CacheConfig {
        CacheConfig {
            enabled: true,
            ttl: HumanDuration(Duration::from_secs(300)),
            max_entries: 1_000,
            max_bytes: ByteSize(16 << 20),
        }
    }
}

impl CacheConfig {
    /// Refuses settings that cannot work, naming the setting.
    pub fn check(&self) -> Result<(), String> {
        if self.enabled && (self.max_entries == 0 || self.max_bytes.bytes() == 0) {
            return Err("`[cache]` keeps nothing with `max_entries` or `max_bytes` at 0: set `enabled = false` \
                        to turn result caching off"
                .to_owned());
        }
        Ok(())
    }
}

/// An exact key: see the module's docs.
pub(crate) type Key = Arc<[u8]>;

/// Results kept for calls made again.
pub(crate) struct ResultCache {
    config: CacheConfig,
    inner: Mutex<Inner>,
}

#[derive(Default)]
struct Inner {
    entries: HashMap<Key, Entry>,
    /// Keys in the order they were stored, each with the number it was
    /// stored under (a key stored again is found here twice; the older is
    /// skipped when it comes up).
    order: VecDeque<(Key, u64)>,
    bytes: u64,
    stored: u64,
    hits: u64,
    misses: u64,
}

struct Entry {
    output: ToolOutput,
    stored_at: Instant,
    expires: Instant,
    bytes: u64,
    number: u64,
}

/// What the cache answered a call with.
pub struct Hit {
    /// The result, as the first call returned it.
    pub output: ToolOutput,
    /// How long ago that call was made.
    pub age: Duration,
}

/// How often the cache has answered, and what it holds.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, serde::Serialize)]
pub struct CacheStats {
    /// Calls answered from the cache.
    pub hits: u64,
    /// Calls of cacheable tools that ran.
    pub misses: u64,
    /// Results held now.
    pub entries: usize,
    /// Bytes of keys and results held now.
    pub bytes: u64,
}

impl ResultCache {
    pub(crate) fn new(config: CacheConfig) -> ResultCache {
        ResultCache { config, inner: Mutex::new(Inner::default()) }
    }

    /// Whether anything is ever cached.
    pub(crate) fn enabled(&self) -> bool {
        self.config.enabled
    }

    /// The time to live of a tool that gives none of its own.
    pub(crate) fn default_ttl(&self) -> Duration {
        self.config.ttl.0
    }

    /// The key of a call of `tool` of the plugin loaded as `load`, by
    /// `requestor`, with `arguments`.
    pub(crate) fn key(load: u64, tool: &str, requestor: &str, arguments: &Value) -> Key {
        let mut key = Vec::with_capacity(64);
        key.extend_from_slice(&load.to_le_bytes());
        key.extend_from_slice(tool.as_bytes());
        key.push(0);
        key.extend_from_slice(requestor.as_bytes());
        key.push(0);
        canonical(arguments, &mut key);
        key.into()
    }

    /// The kept result for `key`, if it has not expired and fits `limits`'
    /// output limit (the later call's own, which may be smaller than the
    /// first call's).
    pub(crate) fn get(&self, key: &Key, limits: &Limits) -> Option<Hit> {
        let now = Instant::now();
        let mut inner = self.inner.lock().unwrap_or_else(|poisoned| poisoned.into_inner());
        let found = match inner.entries.get(key) {
            Some(entry) if entry.expires > now && size_of(&entry.output) as u64 <= limits.output.bytes() => {
                Some(Hit { output: entry.output.clone(), age: now.duration_since(entry.stored_at) })
            }
            Some(entry) if entry.expires > now => None,
            Some(_) => {
                if let Some(stale) = inner.entries.remove(key) {
                    inner.bytes -= stale.bytes;
                }
                None
            }
            None => None,
        };
        match found {
            Some(_) => inner.hits += 1,
            None => inner.misses += 1,
        }
        found
    }

    /// Keeps `output` for `key` for `ttl`, making room by dropping the
    /// oldest results; an output larger than the whole cache is not kept.
    pub(crate) fn put(&self, key: Key, output: &ToolOutput, ttl: Duration) {
        let bytes = (key.len() + size_of(output)) as u64;
        if bytes > self.config.max_bytes.bytes() || ttl.is_zero() {
            return;
        }
        let now = Instant::now();
        let mut inner = self.inner.lock().unwrap_or_else(|poisoned| poisoned.into_inner());
        inner.stored += 1;
        let number = inner.stored;
        let entry = Entry { output: output.clone(), stored_at: now, expires: now + ttl, bytes, number };
        if let Some(old) = inner.entries.insert(key.clone(), entry) {
            inner.bytes -= old.bytes;
        }
        inner.bytes += bytes;
        inner.order.push_back((key, number));
        while inner.entries.len() > self.config.max_entries || inner.bytes > self.config.max_bytes.bytes() {
            let Some((oldest, number)) = inner.order.pop_front() else { break };
            if inner.entries.get(&oldest).is_some_and(|entry| entry.number == number)
                && let Some(gone) = inner.entries.remove(&oldest)
            {
                inner.bytes -= gone.bytes;
            }
        }
        // Keys stored again, or expired and gone, leave their old places
        // behind: drop them once they outnumber the entries.
        if inner.order.len() > 2 * inner.entries.len() + 64 {
            let Inner { order, entries, .. } = &mut *inner;
            order.retain(|(key, number)| entries.get(key).is_some_and(|entry| entry.number == *number));
        }
    }

    /// Hits, misses and what is held.
    pub(crate) fn stats(&self) -> CacheStats {
        let inner = self.inner.lock().unwrap_or_else(|poisoned| poisoned.into_inner());
        CacheStats { hits: inner.hits, misses: inner.misses, entries: inner.entries.len(), bytes: inner.bytes }
    }
}

/// About how many bytes `output` holds.
fn size_of(output: &ToolOutput) -> usize {
    match output {
        ToolOutput::Text(text) | ToolOutput::Json(text) => text.len(),
        ToolOutput::Content(blocks) => serde_json::to_vec(blocks).map_or(usize::MAX / 2, |bytes| bytes.len()),
    }
}

/// `value` as JSON with every object's members sorted by name and no
/// spaces: one spelling for the same arguments.
pub(crate) fn canonical(value: &Value, out: &mut Vec<u8>) {
    match value {
        Value::Object(map) => {
            let mut members: Vec<(&String, &Value)> = map.iter().collect();
            members.sort_unstable_by(|a, b| a.0.cmp(b.0));
            out.push(b'{');
            for (at, (name, member)) in members.into_iter().enumerate() {
                if at > 0 {
                    out.push(b',');
                }
                // Writing a string into a Vec cannot fail.
                let _ = serde_json::to_writer(&mut *out, name);
                out.push(b':');
                canonical(member, out);
            }
            out.push(b'}');
        }
        Value::Array(items) => {
            out.push(b'[');
            for (at, item) in items.iter().enumerate() {
                if at > 0 {
                    out.push(b',');
                }
                canonical(item, out);
            }
            out.push(b']');
        }
        other => {
            let _ = serde_json::to_writer(&mut *out, other);
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    impl ResultCache {
        fn get_any(&self, key: &Key) -> Option<Hit> {
            self.get(key, &Limits::default())
        }
    }

    fn cache(max_entries: usize, max_bytes: u64) -> ResultCache {
        ResultCache::new(CacheConfig { max_entries, max_bytes: ByteSize(max_bytes), ..CacheConfig::default() })
    }

    fn text(value: &str) -> ToolOutput {
        ToolOutput::Text(value.to_owned())
    }

    #[test]
    fn the_same_arguments_however_written_are_one_key() {
        let a: Value = serde_json::from_str(r#"{"b": [1, {"y": 2, "x": "é"}], "a": null}"#).unwrap();
        let b: Value = serde_json::from_str(r#"{"a":null,"b":[1,{"x":"\u00e9","y":2}]}"#).unwrap();
        assert_eq!(ResultCache::key(7, "t", "", &a), ResultCache::key(7, "t", "", &b));
        let mut written = Vec::new();
        canonical(&a, &mut written);
        assert_eq!(String::from_utf8(written).unwrap(), r#"{"a":null,"b":[1,{"x":"é","y":2}]}"#);
    }

    #[test]
    fn rejects_a_hit_across_loads_tools_requestors_or_arguments() {
        let args = json!({"text": "hi"});
        let key = ResultCache::key(1, "t", "alice", &args);
        for other in [
            ResultCache::key(2, "t", "alice", &args),
            ResultCache::key(1, "u", "alice", &args),
            ResultCache::key(1, "t", "bob", &args),
            ResultCache::key(1, "t", "alice", &json!({"text": "hi "})),
            ResultCache::key(1, "t\0", "alice", &args),
        ] {
            assert_ne!(key, other);
        }
        let cache = cache(10, 1 << 20);
        cache.put(key.clone(), &text("out"), Duration::from_secs(60));
        assert!(cache.get_any(&ResultCache::key(1, "t", "bob", &args)).is_none());
        assert!(matches!(cache.get_any(&key).map(|hit| hit.output), Some(ToolOutput::Text(out)) if out == "out"));
        assert_eq!((cache.stats().hits, cache.stats().misses), (1, 1));
    }

    #[test]
    fn the_bounds_hold_the_oldest_going_first() {
        let cache = cache(3, 1 << 20);
        let key = |n: u64| ResultCache::key(n, "t", "", &json!({}));
        for n in 0..5 {
            cache.put(key(n), &text("x"), Duration::from_secs(60));
        }
        assert_eq!(cache.stats().entries, 3);
        assert!(cache.get_any(&key(0)).is_none() && cache.get_any(&key(1)).is_none());
        assert!(cache.get_any(&key(4)).is_some());

        let small = cache_of_bytes(100);
        for n in 0..10 {
            small.put(key(n), &text(&"y".repeat(30)), Duration::from_secs(60));
            assert!(small.stats().bytes <= 100, "{:?}", small.stats());
        }
        small.put(key(99), &text(&"z".repeat(200)), Duration::from_secs(60));
        assert!(small.get_any(&key(99)).is_none(), "larger than the whole cache: not kept");
        // Storing one key again and again leaves no trail behind.
        for _ in 0..1_000 {
            small.put(key(5), &text("again"), Duration::from_secs(60));
        }
        assert!(small.inner.lock().unwrap().order.len() < 200);
    }

    fn cache_of_bytes(bytes: u64) -> ResultCache {
        cache(1_000, bytes)
    }

    #[test]
    fn an_expired_result_is_gone() {
        let cache = cache(10, 1 << 20);
        let key = ResultCache::key(1, "t", "", &json!({}));
        cache.put(key.clone(), &text("x"), Duration::from_millis(1));
        std::thread::sleep(Duration::from_millis(5));
        assert!(cache.get_any(&key).is_none());
        assert_eq!(cache.stats().bytes, 0);
    }

    #[test]
    fn rejects_settings_that_keep_nothing() {
        let none = CacheConfig { max_entries: 0, ..CacheConfig::default() };
        assert!(none.check().unwrap_err().contains("enabled = false"));
        assert!(CacheConfig { enabled: false, ..none }.check().is_ok());
    }
}

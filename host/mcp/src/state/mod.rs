//! `[state]`: where `serve` keeps what its replicas must share. Without a
//! `url` everything stays in the process, as it always has (nothing to start,
//! nothing slower). With `url = "redis://…"` (or `rediss://` for TLS) the
//! quotas (`[quotas]`), the per-requestor limits of `[serve]`, tasks
//! (`[serve.tasks]`) and 2025-11-25 sessions live
//! in one Valkey or Redis that every replica uses, so a plain round-robin
//! balancer in front of N replicas behaves as one server: one set of limits,
//! every task reachable from every replica.
//!
//! ```toml
//! [state]
//! url = "rediss://valkey.tools.svc:6380/0"   # redis:// without TLS; a password may be in the URL
//! password_file = "/secrets/valkey/password"  # or password_env = "VALKEY_PASSWORD"
//! on_unavailable = "closed"                   # or "open"
//! prefix = "toolhost"                         # the keys' prefix, to share one store between deployments
//! timeout = "2s"                              # how long one request to the store may take
//! ca_file = "/secrets/valkey/ca.pem"          # rediss:// signed by a private CA (else the system's roots)
//! ```
//!
//! The password is never printed: errors, logs and `Debug` show the URL
//! without it ([`StateUrl`]). When the store cannot be reached, calls are
//! refused with one line saying so (`on_unavailable = "closed"`, the default:
//! a limit that cannot be checked is not a limit), or run under each
//! replica's own limits (`"open"`).

pub mod quotas;
pub mod requestors;
pub mod sessions;
pub mod store;

use serde::{Deserialize, Deserializer};
use std::path::PathBuf;
use std::time::Duration;
use toolhost_runtime::limits::HumanDuration;

pub use store::Store;

/// How long one request to the store may take unless configured.
pub const DEFAULT_TIMEOUT: Duration = Duration::from_secs(2);
/// The keys' prefix unless configured.
pub const DEFAULT_PREFIX: &str = "toolhost";
/// The largest password file read.
const MAX_PASSWORD_FILE: u64 = 4096;
/// The largest `ca_file` read.
const MAX_CA_FILE: u64 = 1 << 20;

/// `[state]` in `toolhost.toml`.
#[derive(Debug, Clone, Default, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct StateConfig {
    /// `redis://[USER[:PASSWORD]@]HOST[:PORT][/DB]` or `rediss://…`; none: in-process.
    pub url: Option<StateUrl>,
    /// A file holding the password (its first line), over the URL's.
    pub password_file: Option<PathBuf>,
    /// An environment variable holding the password, over the URL's.
    pub password_env: Option<String>,
    /// With `rediss://`: the PEM certificates that sign the store's (instead
    /// of the system's roots).
    pub ca_file: Option<PathBuf>,
    /// What calls do while the store cannot be reached.
    #[serde(default)]
    pub on_unavailable: OnUnavailable,
    /// The prefix of every key toolhost writes.
    pub prefix: Option<String>,
    /// How long one request to the store may take before it counts as unreachable.
    pub timeout: Option<HumanDuration>,
}

/// What calls do while the store cannot be reached.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum OnUnavailable {
    /// Refused, with one line saying why (the default).
    #[default]
    Closed,
    /// Run under the replica's own limits, as without a store.
    Open,
}

/// A store URL, checked when read: `redis://` or `rediss://` with a host.
/// Its password is never shown ([`StateUrl::shown`], `Debug`).
#[derive(Clone, PartialEq, Eq)]
pub struct StateUrl(String);

impl StateUrl {
    /// The URL as written (password included): only for connecting.
    pub fn secret(&self) -> &str {
        &self.0
    }

    /// The URL without its user and password, for messages.
    pub fn shown(&self) -> String {
        let (scheme, rest) = self.0.split_once("://").unwrap_or(("redis", &self.0));
        let rest = rest.rsplit_once('@').map_or(rest, |(_, host)| host);
        format!("{scheme}://{rest}")
    }

    /// Whether the URL asks for TLS.
    pub fn tls(&self) -> bool {
        self.0.starts_with("rediss://")
    }
}

impl std::fmt::Debug for StateUrl {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "{:?}", self.shown())
    }
}

impl std::str::FromStr for StateUrl {
    type Err = String;

    fn from_str(text: &str) -> Result<StateUrl, String> {
        let url = StateUrl(text.trim().to_owned());
        let shown = url.shown();
        let help = "write redis://HOST:PORT/DB, or rediss://HOST:PORT/DB for TLS (a password may follow \
                    `redis://:` before `@`, or come from `password_file` / `password_env`)";
        let Some((scheme, rest)) = url.0.split_once("://") else {
            return Err(format!("`{shown}` is not a Valkey/Redis URL: {help}"));
        };
        if scheme != "redis" && scheme != "rediss" {
            return Err(format!("`{shown}`: the scheme `{scheme}` is not supported: {help}"));
        }
        let host = rest.rsplit_once('@').map_or(rest, |(_, host)| host);
        if host.is_empty() || host.starts_with('/') || host.starts_with(':') {
            return Err(format!("`{shown}` names no host: {help}"));
        }
        redis::parse_redis_url(&url.0).ok_or_else(|| format!("`{shown}` is not a valid URL: {help}"))?;
        Ok(url)
    }
}

impl<'de> Deserialize<'de> for StateUrl {
    fn deserialize<D: Deserializer<'de>>(deserializer: D) -> Result<StateUrl, D::Error> {
        String::deserialize(deserializer)?.parse().map_err(serde::de::Error::custom)
    }
}

impl StateConfig {
    /// The password from `password_file` or `password_env`, if either is set
    /// (read now: a missing or hostile file is an error naming it, never its
    /// content).
    pub fn password(&self) -> anyhow::Result<Option<String>> {
        if let Some(file) = &self.password_file {
            // A password others can read is refused (see `readfile::read_private`).
            let text = toolhost_grants::readfile::read_private_text(file, MAX_PASSWORD_FILE)
                .map_err(|err| anyhow::anyhow!("[state] password_file {}: could not use it: {err}", file.display()))?;
            let password = text.lines().next().unwrap_or("").trim().to_owned();
            if password.is_empty() {
                anyhow::bail!(
                    "[state] password_file {}: the file is empty (put the password on its first line)",
                    file.display()
                );
            }
            return Ok(Some(password));
        }
        if let Some(name) = &self.password_env {
            let value = std::env::var(name).map_err(|_| {
                anyhow::anyhow!("[state] password_env {name}: the environment variable `{name}` is not set")
            })?;
            return Ok(Some(value.trim().to_owned()));
        }
        Ok(None)
    }

    /// `ca_file`'s certificates, if set (only with `rediss://`).
    pub fn ca(&self) -> anyhow::Result<Option<Vec<u8>>> {
        let Some(file) = &self.ca_file else { return Ok(None) };
        if !self.url.as_ref().is_some_and(StateUrl::tls) {
            anyhow::bail!("[state] ca_file is set but the url is not rediss:// (TLS): use rediss:// or drop ca_file");
        }
        let pem = toolhost_grants::readfile::read_regular(file, MAX_CA_FILE)
            .map_err(|err| anyhow::anyhow!("[state] ca_file {}: could not read it: {err}", file.display()))?;
        if !pem.windows(27).any(|window| window == b"-----BEGIN CERTIFICATE-----") {
            anyhow::bail!("[state] ca_file {}: holds no PEM certificate", file.display());
        }
        Ok(Some(pem))
    }

    /// How long one request to the store may take.
    pub fn timeout(&self) -> Duration {
        self.timeout.map_or(DEFAULT_TIMEOUT, |timeout| timeout.0)
    }

    /// The prefix of every key toolhost writes.
    pub fn prefix(&self) -> &str {
        self.prefix.as_deref().unwrap_or(DEFAULT_PREFIX)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn accepts_redis_and_rediss_urls_and_hides_the_password() {
        for text in
            ["redis://127.0.0.1:6379/0", "rediss://valkey.tools.svc:6380", "redis://:pw@h:1/2", "redis://u:pw@h"]
        {
            let url: StateUrl = text.parse().unwrap_or_else(|err| panic!("{text}: {err}"));
            assert!(!url.shown().contains("pw"), "{}", url.shown());
            assert!(!format!("{url:?}").contains("pw"));
        }
        assert!("rediss://h".parse::<StateUrl>().unwrap().tls());
    }

    #[test]
    fn rejects_other_schemes_and_missing_hosts_without_showing_the_password() {
        for text in ["http://h:6379", "valkey", "redis://", "redis://:secretpw@", "unix:///tmp/redis.sock"] {
            let err = text.parse::<StateUrl>().unwrap_err();
            assert!(err.contains("redis://HOST:PORT/DB"), "{err}");
            assert!(!err.contains("secretpw"), "{err}");
        }
    }

    #[test]
    fn rejects_a_ca_file_without_tls_or_without_a_certificate() {
        let dir = std::env::temp_dir().join(format!("toolhost-state-ca-{}", std::process::id()));
        std::fs::create_dir_all(&dir).unwrap();
        let not_pem = dir.join("not.pem");
        std::fs::write(&not_pem, "hello").unwrap();
        let plain: StateConfig =
            toml::from_str(&format!("url = \"redis://h\"\nca_file = {:?}", not_pem.display().to_string())).unwrap();
        assert!(plain.ca().unwrap_err().to_string().contains("not rediss://"));
        let tls: StateConfig =
            toml::from_str(&format!("url = \"rediss://h\"\nca_file = {:?}", not_pem.display().to_string())).unwrap();
        assert!(tls.ca().unwrap_err().to_string().contains("holds no PEM certificate"));
        let missing: StateConfig = toml::from_str("url = \"rediss://h\"\nca_file = \"/nonexistent/ca.pem\"").unwrap();
        assert!(missing.ca().unwrap_err().to_string().contains("could not read it"));
        std::fs::remove_dir_all(&dir).unwrap();
    }

    #[test]
    fn rejects_unknown_keys_and_bad_on_unavailable() {
        let bad: Result<StateConfig, _> = toml::from_str("url = \"redis://h\"\nonunavailable = \"open\"");
        assert!(bad.is_err());
        let bad: Result<StateConfig, _> = toml::from_str("url = \"redis://h\"\non_unavailable = \"maybe\"");
        assert!(bad.is_err());
        let good: StateConfig = toml::from_str("url = \"redis://h\"\non_unavailable = \"open\"").unwrap();
        assert_eq!(good.on_unavailable, OnUnavailable::Open);
    }
}

//! Registry credentials: `TOOLHOST_REGISTRY_USERNAME` and
//! `TOOLHOST_REGISTRY_PASSWORD` from the environment, else the docker config
//! file (`$DOCKER_CONFIG/config.json`, else `~/.docker/config.json`: an
//! `auths` entry for the registry with a base64 `auth` of `user:password`, or
//! `username` and `password`), else none. The password is kept in
//! [`Secret`], whose `Debug` and `Display` never show it, and is only handed
//! to the registry client.

use anyhow::{Context, Result};
use base64::Engine as _;
use serde::Deserialize;
use std::collections::BTreeMap;
use std::path::{Path, PathBuf};
use toolhost_grants::env::Secret;

/// The environment variable holding the registry user name.
pub const USERNAME_ENV: &str = "TOOLHOST_REGISTRY_USERNAME";
/// The environment variable holding the registry password or token.
pub const PASSWORD_ENV: &str = "TOOLHOST_REGISTRY_PASSWORD";

/// How toolhost authenticates to one registry.
#[derive(Debug, Clone)]
pub enum Credentials {
    /// No credentials: anonymous access.
    Anonymous,
    /// A user name and password (or token), and where they came from.
    Basic {
        /// The user name.
        username: String,
        /// The password or token, never shown.
        password: Secret,
        /// Where they were found, for messages (`TOOLHOST_REGISTRY_USERNAME/PASSWORD`, a file).
        from: String,
    },
}

impl Credentials {
    /// The credentials for `registry` (`host[:port]`): the environment's,
    /// else the docker config's, else anonymous.
    pub fn for_registry(registry: &str) -> Result<Credentials> {
        let env = |name| std::env::var(name).ok().filter(|value: &String| !value.is_empty());
        match (env(USERNAME_ENV), env(PASSWORD_ENV)) {
            (Some(username), Some(password)) => {
                return Ok(Credentials::Basic {
                    username,
                    password: Secret::new(password),
                    from: format!("{USERNAME_ENV}/{PASSWORD_ENV}"),
                });
            }
            (Some(_), None) | (None, Some(_)) => {
                anyhow::bail!("set both {USERNAME_ENV} and {PASSWORD_ENV}, or neither");
            }
            (None, None) => {}
        }
        match docker_config_path() {
            Some(path) => from_docker_config(&path, registry),
            None => Ok(Credentials::Anonymous),
        }
    }

    /// What oci-client takes.
    pub(crate) fn to_auth(&self) -> oci_client::secrets::RegistryAuth {
        match self {
            Credentials::Anonymous => oci_client::secrets::RegistryAuth::Anonymous,
            Credentials::Basic { username, password, .. } => {
                oci_client::secrets::RegistryAuth::Basic(username.clone(), password.expose().to_owned())
            }
        }
    }

    /// Where the credentials came from, for messages.
    pub fn origin(&self) -> Option<&str> {
        match self {
            Credentials::Anonymous => None,
            Credentials::Basic { from, .. } => Some(from),
        }
    }
}

/// `$DOCKER_CONFIG/config.json`, else `~/.docker/config.json`.
fn docker_config_path() -> Option<PathBuf> {
    let env = |name| std::env::var_os(name).filter(|value| !value.is_empty()).map(PathBuf::from);
    env("DOCKER_CONFIG")
        .map(|dir| dir.join("config.json"))
        .or_else(|| env("HOME").map(|home| home.join(".docker").join("config.json")))
}

#[derive(Deserialize)]
struct DockerConfig {
    #[serde(default)]
    auths: BTreeMap<String, DockerAuth>,
}

#[derive(Deserialize)]
struct DockerAuth {
    auth: Option<String>,
    username: Option<String>,
    password: Option<String>,
}

/// The entry for `registry` in the docker config at `path`; anonymous when
/// the file does not exist or has no entry for it.
fn from_docker_config(path: &Path, registry: &str) -> Result<Credentials> {
    let text = match toolhost_grants::readfile::read_regular_text(path, toolhost_grants::readfile::limits::TOML) {
        Ok(text) => text,
        Err(err) if err.is_not_found() => return Ok(Credentials::Anonymous),
        Err(err) => return Err(err).with_context(|| format!("could not read the docker config {}", path.display())),
    };
    parse_docker_config(&text, path, registry)
}

/// The entry for `registry` in docker config text read from `path`.
pub fn parse_docker_config(text: &str, path: &Path, registry: &str) -> Result<Credentials> {
    // serde_json's messages name a line and column, never the file's content.
    // Strict: a registry named twice under `auths` is two credentials for one name.
    let config: DockerConfig = toolhost_grants::json::strict_as(text.as_bytes())
        .map_err(|err| anyhow::anyhow!("the docker config {} is not valid: {err}", path.display()))?;
    let Some(entry) = config.auths.iter().find(|(key, _)| same_registry(key, registry)).map(|(_, entry)| entry) else {
        return Ok(Credentials::Anonymous);
    };
    let from = path.display().to_string();
    if let (Some(username), Some(password)) = (&entry.username, &entry.password) {
        return Ok(Credentials::Basic { username: username.clone(), password: Secret::new(password.clone()), from });
    }
    let Some(auth) = entry.auth.as_deref().filter(|auth| !auth.is_empty()) else {
        return Ok(Credentials::Anonymous);
    };
    let invalid = || {
        anyhow::anyhow!(
            "the docker config {}: the `auth` of `{registry}` is not base64 of `user:password` (log in again)",
            path.display()
        )
    };
    let decoded = base64::engine::general_purpose::STANDARD.decode(auth.trim()).map_err(|_| invalid())?;
    let decoded = String::from_utf8(decoded).map_err(|_| invalid())?;
    let (username, password) = decoded.split_once(':').ok_or_else(invalid)?;
    Ok(Credentials::Basic { username: username.to_owned(), password: Secret::new(password), from })
}

/// True when a docker config key (`host:port`, `https://host:port`,
/// `https://host/v1/`) names `registry`: both compared in their canonical
/// form ([`crate::reference::canonical_registry`]), so a password goes to no
/// registry whose name only looks alike.
fn same_registry(key: &str, registry: &str) -> bool {
    let bare = key.split_once("://").map_or(key, |(_, rest)| rest);
    let bare = bare.split('/').next().unwrap_or_default();
    match (crate::reference::canonical_registry(bare), crate::reference::canonical_registry(registry)) {
        (Ok(key), Ok(registry)) => key == registry,
        _ => false,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn config(text: &str) -> (tempfile::TempDir, PathBuf) {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("config.json");
        std::fs::write(&path, text).unwrap();
        (dir, path)
    }

    #[test]
    fn a_registry_named_twice_is_refused() {
        let text = r#"{"auths":{"r.example":{"auth":"YTpi"},"r.example":{"auth":"Yzpk"}}}"#;
        let (_dir, path) = config(text);
        let err = parse_docker_config(text, &path, "r.example").unwrap_err().to_string();
        assert!(err.contains("the member `r.example` appears twice"), "{err}");
    }

    #[test]
    fn accepts_base64_auth_and_username_password_entries() {
        // "reader:pa:ss" — a password may hold a colon.
        let (_dir, path) = config(
            r#"{"auths": {"https://127.0.0.1:5000": {"auth": "cmVhZGVyOnBhOnNz"},
                          "ghcr.io": {"username": "u", "password": "p"}}}"#,
        );
        let Credentials::Basic { username, password, .. } = from_docker_config(&path, "127.0.0.1:5000").unwrap() else {
            panic!("no credentials found")
        };
        assert_eq!((username.as_str(), password.expose()), ("reader", "pa:ss"));
        assert!(matches!(from_docker_config(&path, "ghcr.io").unwrap(), Credentials::Basic { .. }));
        assert!(matches!(from_docker_config(&path, "quay.io").unwrap(), Credentials::Anonymous));
        assert!(matches!(from_docker_config(&path.with_file_name("none.json"), "x").unwrap(), Credentials::Anonymous));
    }

    #[test]
    fn a_docker_config_entry_names_its_registry_in_any_spelling_and_no_other() {
        for (key, registry) in [
            ("https://LOCALHOST:5000", "localhost:5000"),
            ("127.1:5000", "127.0.0.1:5000"),
            ("https://index.docker.io/v1/", "index.docker.io"),
            ("GHCR.IO", "ghcr.io"),
            ("https://ghcr.io:443", "ghcr.io"),
        ] {
            assert!(same_registry(key, registry), "{key} ~ {registry}");
        }
        for (key, registry) in
            [("ghcr.io.evil.com", "ghcr.io"), ("127.0.0.1:5001", "127.0.0.1:5000"), ("x@ghcr.io", "ghcr.io")]
        {
            assert!(!same_registry(key, registry), "{key} !~ {registry}");
        }
    }

    #[test]
    fn rejects_a_broken_config_without_showing_it() {
        let (_dir, path) = config(r#"{"auths": {"ghcr.io": {"auth": "not base64!"}}}"#);
        let err = from_docker_config(&path, "ghcr.io").unwrap_err().to_string();
        assert!(err.contains("not base64") && !err.contains("not base64!\""), "{err}");
        let (_dir, path) = config("{\"auths\": {\"ghcr.io\": {\"password\": \"hunter2\"");
        let err = from_docker_config(&path, "ghcr.io").unwrap_err().to_string();
        assert!(err.contains("is not valid") && !err.contains("hunter2"), "{err}");
    }

    #[test]
    fn the_password_is_never_shown() {
        let credentials =
            Credentials::Basic { username: "u".into(), password: Secret::new("hunter2"), from: "env".into() };
        assert!(!format!("{credentials:?}").contains("hunter2"));
        assert!(!format!("{:?}", credentials.to_auth()).contains("hunter2"));
    }
}

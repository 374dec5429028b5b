//! Grants: what a plugin may reach outside its own memory. Everything is
//! denied unless the operator grants it.
//!
//! One module per capability, each with a config type whose `Default` grants
//! nothing, a parser with helpful errors, and one runtime check:
//! [`network`] (hosts over `wasi:http`, and optionally `wasi:sockets`),
//! [`files`] (folders, read-only or read-write) and [`env`] (environment
//! variables and secrets). [`manifest`] is what a plugin asks for.
//!
//! Grants are written in `toolhost.toml` under `[plugins.NAME]` and parsed
//! with the config into [`Grants`]. When a plugin is loaded they are resolved
//! once into [`Granted`] (environment values read, folders checked) and
//! compared with the plugin's manifest; what does not add up becomes a notice
//! shown at load. Each call then builds its WASI context from `Granted`
//! without parsing or looking anything up.

pub mod credentials;
pub mod env;
pub mod files;
pub mod json;
pub mod leaks;
pub mod manifest;
pub mod names;
pub mod network;
pub mod readfile;
pub mod requests;
pub mod wassette;

use credentials::{Add, Credential, Injection};
use env::{EnvGrant, Redactor, Secret};
use files::{DirGrant, FilesGrant};
pub use manifest::Manifest;
use network::NetworkGrant;
use serde_json::{Value, json};
use std::path::Path;
use std::sync::Arc;

/// What the operator grants one plugin. `Default` grants nothing.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct Grants {
    /// Hosts it may reach.
    pub network: NetworkGrant,
    /// Folders it may see.
    pub files: FilesGrant,
    /// Environment variables it may see.
    pub env: EnvGrant,
    /// Credentials the host adds to its requests (it never sees them).
    pub credentials: Vec<Credential>,
    /// What a running call may ask of the client and the user.
    pub requests: requests::RequestsGrant,
}

impl Grants {
    /// True when nothing is granted.
    pub fn is_empty(&self) -> bool {
        self == &Grants::default()
    }

    /// The hosts it may reach: the `http` entries, and each credential's
    /// destination not already among them.
    pub fn reachable(&self) -> NetworkGrant {
        let mut network = self.network.clone();
        for credential in &self.credentials {
            // An entry for the destination's host, even one limited to some
            // methods and paths, keeps its limits: the credential does not
            // widen them.
            if !network.hosts.iter().any(|entry| entry.target.covers(&credential.to)) {
                network.hosts.push(credential.to.clone().into());
            }
        }
        network
    }

    /// The grants as JSON (names and entries only, never a value).
    pub fn to_json(&self) -> Value {
        json!({
            "http": self.network.hosts,
            "sockets": self.network.sockets,
            "env": self.env.names,
            "secrets": self.env.secrets.iter().map(|name| match self.env.bound.iter().find(|(bound, _)| bound == name) {
                Some((_, to)) => json!({"name": name, "to": to}),
                None => json!(name),
            }).collect::<Vec<_>>(),
            "credentials": self.credentials.iter().map(ToString::to_string).collect::<Vec<_>>(),
            "elicitation": self.requests.elicitation,
            "sampling_tokens": self.requests.sampling,
            "roots": self.requests.roots,
            "dirs": self.files.dirs.iter().map(|dir| json!({
                "host": dir.host.display().to_string(),
                "guest": dir.guest,
                "access": dir.access.as_str(),
            })).collect::<Vec<_>>(),
        })
    }

    /// Short human lines, one per kind of grant: `http  https://a, https://b`.
    pub fn describe(&self) -> Vec<(&'static str, String)> {
        let mut lines = Vec::new();
        let join = |items: Vec<String>| items.join(", ");
        if !self.network.hosts.is_empty() {
            lines.push(("http", join(self.network.hosts.iter().map(ToString::to_string).collect())));
        }
        if self.network.sockets {
            lines.push(("sockets", "TCP to the http hosts".to_owned()));
        }
        if !self.files.dirs.is_empty() {
            lines.push(("dirs", join(self.files.dirs.iter().map(ToString::to_string).collect())));
        }
        if !self.env.names.is_empty() {
            lines.push(("env", join(self.env.names.iter().map(ToString::to_string).collect())));
        }
        if !self.env.secrets.is_empty() {
            let secrets =
                self.env.secrets.iter().map(|name| match self.env.bound.iter().find(|(bound, _)| bound == name) {
                    Some((_, to)) if to.is_empty() => format!("{name} (sent nowhere)"),
                    Some((_, to)) => format!(
                        "{name} (sent only to {})",
                        to.iter().map(ToString::to_string).collect::<Vec<_>>().join(" ")
                    ),
                    None => name.to_string(),
                });
            lines.push(("secrets", join(secrets.collect())));
        }
        if !self.credentials.is_empty() {
            lines.push(("credentials", join(self.credentials.iter().map(ToString::to_string).collect())));
        }
        lines.extend(self.requests.describe());
        lines
    }
}

impl Manifest {
    /// The manifest as JSON.
    pub fn to_json(&self) -> Value {
        serde_json::to_value(self).unwrap_or(Value::Null)
    }

    /// Short human lines, one per kind of ask.
    pub fn describe(&self) -> Vec<(&'static str, String)> {
        let grants = Grants {
            network: NetworkGrant { hosts: self.http.iter().cloned().map(Into::into).collect(), sockets: self.sockets },
            files: FilesGrant::default(),
            env: EnvGrant { names: self.env.clone(), secrets: self.secrets.clone(), bound: Vec::new() },
            credentials: Vec::new(),
            requests: requests::RequestsGrant::default(),
        };
        let mut lines = grants.describe();
        for (asked, kind, what) in [
            (self.elicitation, "asks", "the user (elicitation)"),
            (self.sampling, "asks", "the model (sampling)"),
            (self.roots, "reads", "the client's roots"),
        ] {
            if asked {
                lines.push((kind, what.to_owned()));
            }
        }
        if !self.dirs.is_empty() {
            let dirs: Vec<String> = self.dirs.iter().map(ToString::to_string).collect();
            lines.push(("dirs", dirs.join(", ")));
        }
        lines
    }
}

/// A plugin's grants as each call uses them: resolved once at load by
/// [`review`], read by the runtime when it builds each call's WASI context.
#[derive(Debug, Default)]
pub struct Granted {
    /// The hosts it may reach.
    pub network: Arc<NetworkGrant>,
    /// The granted folders that exist, canonicalized.
    pub dirs: Vec<DirGrant>,
    /// Environment variables and their values.
    pub env: Vec<(String, String)>,
    /// Secrets and their values.
    pub secrets: Vec<(String, Secret)>,
    /// Credentials added to its requests, values read.
    pub credentials: Vec<Injection>,
    /// Every form of a credential value a response could echo (the raw
    /// values, whole header values), masked in what goes back to the plugin.
    pub credential_values: Vec<Secret>,
    /// Scrubs the secrets' values (and the credentials') from whatever comes out.
    pub redactor: Redactor,
    /// Secrets that may be sent only to some hosts, values read: a request
    /// elsewhere that carries one is refused.
    pub bound_secrets: Vec<leaks::Bound>,
    /// What a running call may ask of the client and the user.
    pub requests: requests::RequestsGrant,
}

impl Granted {
    /// Grants nothing: what `list-tools` runs with.
    pub fn nothing() -> Arc<Granted> {
        Arc::new(Granted::default())
    }
}

/// What loading found out about a plugin's grants.
pub struct Review {
    /// The manifest, when there is a valid one.
    pub asks: Option<Manifest>,
    /// What each call will get.
    pub granted: Arc<Granted>,
    /// Asks that are not granted, grants that cannot be honoured and a bad
    /// manifest, each a sentence saying what to do.
    pub notices: Vec<String>,
}

/// Reads the manifest beside `wasm`, resolves `grants` for plugin `name`
/// (environment values from `lookup`, folders checked on disk) and says what
/// does not add up.
pub fn review(name: &str, wasm: &Path, grants: &Grants, lookup: impl Fn(&str) -> Option<String>) -> Review {
    let mut notices = Vec::new();
    let asks = match Manifest::load_beside(wasm) {
        Ok(asks) => asks,
        Err(err) => {
            notices
                .push(format!("{err}; what the plugin asks for is unknown (the grants in toolhost.toml still apply)"));
            None
        }
    };
    let network = grants.reachable();
    if let Some(asks) = &asks {
        let effective = Grants { network: network.clone(), ..grants.clone() };
        for unmet in asks.unmet(&effective) {
            notices.push(format!(
                "asks for {unmet}, which is not granted, so it is denied (grant it under \
                 `[plugins.{name}]` in the config, toolhost.toml, if the plugin should have it)"
            ));
        }
    }
    let env::ResolvedEnv { vars: env, secrets, unset } = grants.env.resolve(&lookup);
    for name in unset {
        notices.push(format!(
            "is granted the environment variable `{name}`, but it is not set in toolhost's \
             environment, so the plugin does not get it"
        ));
    }
    let mut dirs = Vec::new();
    for dir in &grants.files.dirs {
        match std::fs::canonicalize(&dir.host) {
            Ok(host) if host.is_dir() => dirs.push(DirGrant { host, ..dir.clone() }),
            _ => notices.push(format!(
                "is granted the folder {} (as {}), but it does not exist or is not a folder, so \
                 the plugin gets no access to it",
                dir.host.display(),
                dir.guest
            )),
        }
    }
    let mut credentials = Vec::new();
    let mut scrubbed = secrets.clone();
    let mut credential_values = Vec::new();
    for credential in &grants.credentials {
        let (injection, values) = credential.resolve(&lookup);
        if let Add::Unavailable(why) = &injection.add {
            notices.push(format!("{why}; its requests there are refused until it is"));
        }
        credential_values.extend(values.iter().map(|(_, value)| value.clone()));
        scrubbed.extend(values);
        credentials.push(injection);
    }
    let redactor = Redactor::new(&scrubbed);
    let network = Arc::new(network);
    let requests = grants.requests;
    let bound_secrets = grants
        .env
        .bound
        .iter()
        .filter_map(|(name, to)| {
            let (_, value) = secrets.iter().find(|(secret, _)| secret == name.as_str())?;
            Some(leaks::Bound::new(name.as_str(), value, to.clone()))
        })
        .collect();
    let granted =
        Granted { network, dirs, env, secrets, credentials, credential_values, redactor, bound_secrets, requests };
    Review { asks, granted: Arc::new(granted), notices }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_default_grants_nothing() {
        let grants = Grants::default();
        assert!(grants.is_empty());
        assert!(grants.describe().is_empty());
        let review = review("p", Path::new("/nonexistent/p.wasm"), &grants, |_| Some("set".to_owned()));
        assert!(review.notices.is_empty());
        assert!(review.granted.env.is_empty() && review.granted.secrets.is_empty() && review.granted.dirs.is_empty());
        assert!(review.granted.network.is_empty() && !review.granted.network.sockets);
    }

    #[test]
    fn review_notes_missing_folders_and_unset_variables_and_keeps_secrets_out_of_debug() {
        let dir = tempfile::tempdir().unwrap();
        let grants = Grants {
            files: FilesGrant {
                dirs: vec![
                    format!("{}:/data", dir.path().display()).parse().unwrap(),
                    "/nonexistent/folder:/gone".parse().unwrap(),
                ],
            },
            env: EnvGrant {
                names: vec!["UNSET_ONE".parse().unwrap()],
                secrets: vec!["KEY".parse().unwrap()],
                bound: Vec::new(),
            },
            ..Grants::default()
        };
        let lookup = |name: &str| (name == "KEY").then(|| "the-secret-value".to_owned());
        let review = review("p", &dir.path().join("p.wasm"), &grants, lookup);
        assert_eq!(review.granted.dirs.len(), 1);
        assert_eq!(review.notices.len(), 2, "{:?}", review.notices);
        assert!(review.notices.iter().any(|notice| notice.contains("/nonexistent/folder")));
        assert!(review.notices.iter().any(|notice| notice.contains("`UNSET_ONE`")));
        assert!(!format!("{:?}", review.granted).contains("the-secret-value"));
    }

    #[test]
    fn review_reports_a_bad_manifest_and_unmet_asks() {
        let dir = tempfile::tempdir().unwrap();
        std::fs::write(dir.path().join("bad.toml"), "http = [\"example.com\"]\n").unwrap();
        std::fs::write(dir.path().join("good.toml"), "http = [\"https://example.com\"]\n").unwrap();
        let bad = review("bad", &dir.path().join("bad.wasm"), &Grants::default(), |_| None);
        assert!(bad.asks.is_none());
        assert!(
            bad.notices[0].contains("not a valid plugin manifest") && bad.notices[0].contains("did you mean"),
            "{:?}",
            bad.notices
        );
        let good = review("good", &dir.path().join("good.wasm"), &Grants::default(), |_| None);
        assert!(
            good.notices[0].contains("HTTP access to `https://example.com`")
                && good.notices[0].contains("[plugins.good]"),
            "{:?}",
            good.notices
        );
    }
}

//! A plugin's manifest: `NAME.toml` beside `NAME.wasm`, saying what the
//! plugin asks for. It grants nothing by itself: the operator's
//! `toolhost.toml` decides, and every ask the config does not grant is shown
//! when the plugin is loaded (and by `toolhost tools` and `toolhost inspect`).
//!
//! ```toml
//! # fetch.toml
//! http = ["https://*"]           # hosts it wants to reach, in the config's syntax
//! sockets = false                # raw TCP through wasi:sockets
//! env = ["LANG"]                 # environment variables, by name
//! secrets = ["GITHUB_TOKEN"]     # the same, for values that must never be shown
//! dirs = ["/data:ro"]            # guest folders it expects, read-only or read-write
//!
//! # Hints for MCP clients (tool annotations), for every tool or per tool.
//! # They never claim more than the grants allow (see `catalog::Hints::derive`).
//! read_only = true
//! idempotent = true
//! [tools.write_file]
//! read_only = false
//! destructive = true
//!
//! # How long a result may be given again for the same call (tools that
//! # are read-only and idempotent are cached for `[cache] ttl` without it;
//! # "0s" caches none), for every tool or per tool.
//! cache_ttl = "10m"
//!
//! # A tool (or a typed component's function, by its tool name) renamed,
//! # described, or hidden.
//! [tools.get-item]
//! name = "lookup_article"
//! description = "Looks an article up by its SKU."
//! [tools.debug-dump]
//! hide = true
//! ```

use super::Grants;
use super::env::EnvName;
use super::files::{Access, GuestDir};
use super::network::HostPattern;
use serde::{Deserialize, Serialize};
use std::collections::BTreeMap;
use std::path::{Path, PathBuf};

/// What a plugin asks for. `Default` asks for nothing.
#[derive(Debug, Clone, Default, PartialEq, Eq, Deserialize, Serialize)]
#[serde(deny_unknown_fields)]
pub struct Manifest {
    /// Hosts it wants to reach over HTTP.
    #[serde(default)]
    pub http: Vec<HostPattern>,
    /// Whether it wants `wasi:sockets` TCP connections (to its `http` hosts).
    #[serde(default)]
    pub sockets: bool,
    /// Environment variables it reads.
    #[serde(default)]
    pub env: Vec<EnvName>,
    /// Environment variables it reads that hold secrets.
    #[serde(default)]
    pub secrets: Vec<EnvName>,
    /// Guest folders it expects.
    #[serde(default)]
    pub dirs: Vec<GuestDir>,
    /// Whether it asks the user while it runs (contract 0.2.0's elicitation).
    #[serde(default, skip_serializing_if = "std::ops::Not::not")]
    pub elicitation: bool,
    /// Whether it asks the model while it runs (contract 0.2.0's sampling).
    #[serde(default, skip_serializing_if = "std::ops::Not::not")]
    pub sampling: bool,
    /// Whether it reads the client's roots (contract 0.2.0).
    #[serde(default, skip_serializing_if = "std::ops::Not::not")]
    pub roots: bool,
    /// Hint for every tool: it does not change its environment.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub read_only: Option<bool>,
    /// Hint for every tool: a change it makes may destroy something.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub destructive: Option<bool>,
    /// Hint for every tool: calling it again with the same arguments has no further effect.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub idempotent: Option<bool>,
    /// Hint for every tool: it reaches outside toolhost.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub open_world: Option<bool>,
    /// For every tool: how long a result may be given again for the same
    /// call (`10m`; `0s` for never).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub cache_ttl: Option<String>,
    /// For one tool, by the name the plugin gives it: hints over the
    /// plugin-wide ones, and a new name, a description, or hiding it.
    #[serde(default, skip_serializing_if = "BTreeMap::is_empty")]
    pub tools: BTreeMap<String, ToolTable>,
}

/// `[tools.NAME]` in a manifest.
#[derive(Debug, Clone, Default, PartialEq, Eq, Deserialize, Serialize)]
#[serde(deny_unknown_fields)]
pub struct ToolTable {
    /// The tool does not change its environment.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub read_only: Option<bool>,
    /// A change it makes may destroy something.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub destructive: Option<bool>,
    /// Calling it again with the same arguments has no further effect.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub idempotent: Option<bool>,
    /// It reaches outside toolhost.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub open_world: Option<bool>,
    /// The name it is offered under instead.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub name: Option<String>,
    /// What it does, for the model, instead of what the plugin says.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub description: Option<String>,
    /// Not offered at all.
    #[serde(default, skip_serializing_if = "std::ops::Not::not")]
    pub hide: bool,
    /// How long a result may be given again for the same call.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub cache_ttl: Option<String>,
}

/// What a manifest says about a tool's behaviour, for MCP clients. Each is
/// optional; what a plugin is granted decides what can be claimed.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Deserialize, Serialize)]
#[serde(deny_unknown_fields)]
pub struct HintsTable {
    /// The tool does not change its environment.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub read_only: Option<bool>,
    /// A change it makes may destroy something.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub destructive: Option<bool>,
    /// Calling it again with the same arguments has no further effect.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub idempotent: Option<bool>,
    /// It reaches outside toolhost.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub open_world: Option<bool>,
}

impl Manifest {
    /// Where the manifest of the plugin at `wasm` is: the same path with `.toml`.
    pub fn path_for(wasm: &Path) -> PathBuf {
        wasm.with_extension("toml")
    }

    /// Reads the manifest beside `wasm`: `Ok(None)` when there is none, and
    /// an error saying what is wrong when it cannot be read or parsed.
    pub fn load_beside(wasm: &Path) -> Result<Option<Manifest>, String> {
        let path = Manifest::path_for(wasm);
        let text = match crate::readfile::read_regular_text(&path, crate::readfile::limits::TOML) {
            Ok(text) => text,
            Err(err) if err.is_not_found() => return Ok(None),
            Err(err) => return Err(format!("could not read {}: {err}", path.display())),
        };
        Manifest::parse(&text)
            .map(Some)
            .map_err(|err| format!("{} is not a valid plugin manifest: {err}", path.display()))
    }

    /// Parses manifest text.
    pub fn parse(text: &str) -> Result<Manifest, String> {
        toml::from_str(text).map_err(|err| err.to_string().trim_end().to_owned())
    }

    /// The hints declared for `tool`: its own `[tools.NAME]` table over the
    /// plugin-wide keys. (What may be claimed is the catalog's to decide.)
    pub fn hints_for(&self, tool: &str) -> HintsTable {
        let own = self.tools.get(tool).cloned().unwrap_or_default();
        HintsTable {
            read_only: own.read_only.or(self.read_only),
            destructive: own.destructive.or(self.destructive),
            idempotent: own.idempotent.or(self.idempotent),
            open_world: own.open_world.or(self.open_world),
        }
    }

    /// The `cache_ttl` for `tool`: its own, else the plugin-wide one.
    pub fn cache_ttl_for(&self, tool: &str) -> Option<&str> {
        self.tools.get(tool).and_then(|own| own.cache_ttl.as_deref()).or(self.cache_ttl.as_deref())
    }

    /// True when it asks for nothing.
    pub fn is_empty(&self) -> bool {
        self == &Manifest::default()
    }

    /// Each thing asked for that `grants` does not grant, in words.
    pub fn unmet(&self, grants: &Grants) -> Vec<String> {
        let mut unmet = Vec::new();
        for asked in &self.http {
            if !grants.network.hosts.iter().any(|granted| granted.target.covers(asked)) {
                unmet.push(format!("HTTP access to `{asked}`"));
            }
        }
        if self.sockets && !grants.network.sockets {
            unmet.push("TCP sockets (`sockets = true`)".to_owned());
        }
        for name in &self.env {
            if !grants.env.grants(name) {
                unmet.push(format!("the environment variable `{name}`"));
            }
        }
        for name in &self.secrets {
            if !grants.env.secrets.contains(name) {
                unmet.push(format!("the secret `{name}`"));
            }
        }
        for asked in &self.dirs {
            match grants.files.for_guest(&asked.guest) {
                Some(granted) if granted.access >= asked.access => {}
                Some(_) => unmet.push(format!("write access to `{}` (it is granted read-only)", asked.guest)),
                None => unmet.push(format!(
                    "the folder `{}` ({})",
                    asked.guest,
                    if asked.access == Access::ReadWrite { "read-write" } else { "read-only" }
                )),
            }
        }
        let requests = &grants.requests;
        for (asked, granted, what) in [
            (self.elicitation, requests.elicitation, "elicitation (asking the user: `elicitation = true`)"),
            (self.sampling, requests.sampling.is_some(), "sampling (asking the model: `sampling = true`)"),
            (self.roots, requests.roots, "the client's roots (`roots = true`)"),
        ] {
            if asked && !granted {
                unmet.push(what.to_owned());
            }
        }
        unmet
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn asking_the_user_the_model_or_the_roots_is_unmet_until_granted() {
        let asks: Manifest = toml::from_str("elicitation = true\nsampling = true\nroots = true\n").unwrap();
        let unmet = asks.unmet(&Grants::default());
        assert_eq!(unmet.len(), 3, "{unmet:?}");
        assert!(unmet[1].contains("`sampling = true`"), "{unmet:?}");
        let granted = Grants {
            requests: crate::requests::RequestsGrant { elicitation: true, sampling: Some(10), roots: true },
            ..Grants::default()
        };
        assert!(asks.unmet(&granted).is_empty());
        assert!(asks.describe().iter().any(|(kind, what)| *kind == "asks" && what == "the model (sampling)"));
    }

    #[test]
    fn accepts_a_full_manifest() {
        let manifest = Manifest::parse(
            r#"
            http = ["https://*.example.com", "http://127.0.0.1:8080"]
            sockets = true
            env = ["LANG"]
            secrets = ["API_KEY"]
            dirs = ["/data", "/out:rw"]
            "#,
        )
        .unwrap();
        assert_eq!(manifest.http.len(), 2);
        assert!(manifest.sockets);
        assert_eq!(manifest.dirs[1], GuestDir { guest: "/out".into(), access: Access::ReadWrite });
    }

    #[test]
    fn accepts_hints_for_every_tool_and_per_tool() {
        let manifest = Manifest::parse(
            r#"
            read_only = true
            idempotent = true
            [tools.write_file]
            read_only = false
            destructive = true
            "#,
        )
        .unwrap();
        let read = manifest.hints_for("read_file");
        assert_eq!((read.read_only, read.idempotent, read.destructive), (Some(true), Some(true), None));
        let write = manifest.hints_for("write_file");
        assert_eq!((write.read_only, write.idempotent, write.destructive), (Some(false), Some(true), Some(true)));
        let err = Manifest::parse("[tools.x]\nreadonly = true\n").unwrap_err();
        assert!(err.contains("unknown field `readonly`"), "{err}");
    }

    #[test]
    fn accepts_an_empty_manifest() {
        assert!(Manifest::parse("").unwrap().is_empty());
    }

    #[test]
    fn rejects_malformed_manifests_saying_what_to_fix() {
        let cases = [
            (r#"http = ["api.example.com"]"#, "did you mean `https://api.example.com`?"),
            (r#"htpp = ["https://example.com"]"#, "unknown field `htpp`"),
            (r#"env = ["A=B"]"#, "did you mean `A`?"),
            (r#"dirs = ["./data:/data"]"#, "operator's choice"),
        ];
        for (text, expected) in cases {
            let err = Manifest::parse(text).unwrap_err();
            assert!(err.contains(expected), "{text}: {err}");
        }
    }

    #[test]
    fn lists_what_is_asked_and_not_granted() {
        let manifest = Manifest::parse(
            r#"
            http = ["https://api.example.com", "https://*"]
            env = ["LANG", "TZ"]
            secrets = ["KEY"]
            dirs = ["/data", "/out:rw"]
            "#,
        )
        .unwrap();
        let mut grants = Grants::default();
        grants.network.hosts = vec!["https://*.example.com".parse().unwrap()];
        grants.env.names = vec!["LANG".parse().unwrap()];
        grants.env.secrets = vec!["KEY".parse().unwrap()];
        grants.files.dirs = vec!["./d:/data:ro".parse().unwrap(), "./o:/out:ro".parse().unwrap()];
        assert_eq!(
            manifest.unmet(&grants),
            [
                "HTTP access to `https://*`",
                "the environment variable `TZ`",
                "write access to `/out` (it is granted read-only)",
            ]
        );
        assert_eq!(manifest.unmet(&Grants::default()).len(), 7, "the default grants nothing");
    }
}

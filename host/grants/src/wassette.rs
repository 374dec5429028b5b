//! Wassette's permission policy (`policy.yaml`, or `NAME.policy.yaml` beside
//! a component), read strictly and turned into toolhost [`Grants`].
//!
//! A policy is operator input only once the operator took it in: toolhost
//! never grants from a file lying beside a plugin (a component's author
//! ships one with it). `toolhost policy import` converts a policy into the
//! plugin's `[plugins.NAME]` in toolhost.toml, where it is reviewed like any
//! grant; a policy in a plugins folder that the config does not cover is a
//! warning naming it ([`unapplied`]).
//!
//! What converts, each through the parser of the grant it becomes (so every
//! entry is judged as one written in toolhost.toml would be):
//! - `permissions.network.allow[].host`: a host (`api.example.com`,
//!   `*.example.com`) is `https://HOST` and `http://HOST` (Wassette lets a
//!   bare host through on either scheme); a URL (`https://rss.example.com/`)
//!   is its scheme, host and port.
//! - `permissions.storage.allow[]` `uri: fs:///PATH`, `access: [read, write]`:
//!   the folder `PATH`, seen by the component at the same path (`write` is
//!   `rw`, `read` alone `ro`).
//! - `permissions.environment.allow[].key`: the variable, passed from
//!   toolhost's environment; a name that says it holds a key, token, secret or
//!   password is a `secrets` entry, so its value is scrubbed from outputs.
//!
//! What does not convert is refused with the fix (`deny` lists, `cidr`
//! ranges, `defaults: true`, relative or patterned storage URIs), and what
//! toolhost bounds otherwise (`runtime`, `resources`, `ipc`) is a note.
//! Keys Wassette does not know are refused, as are keys written twice.

use crate::Grants;
use crate::env::EnvName;
use crate::files::{Access, DirGrant};
use crate::network::HostPattern;
use serde::Deserialize;
use serde::de::IgnoredAny;
use std::path::{Path, PathBuf};

/// The largest policy file read.
pub const POLICY_LIMIT: u64 = 256 << 10;

/// A policy as written (only what toolhost reads of it; the rest is checked
/// to be there or not).
#[derive(Debug, Deserialize)]
#[serde(deny_unknown_fields)]
struct Document {
    #[serde(rename = "$schema")]
    _schema: Option<String>,
    version: String,
    #[serde(default)]
    description: Option<String>,
    #[serde(default)]
    permissions: Option<Permissions>,
}

#[derive(Debug, Default, Deserialize)]
#[serde(deny_unknown_fields)]
struct Permissions {
    #[serde(default)]
    storage: Option<Rules<Storage>>,
    #[serde(default)]
    network: Option<Rules<Network>>,
    #[serde(default)]
    environment: Option<EnvRules>,
    #[serde(default)]
    runtime: Option<IgnoredAny>,
    #[serde(default)]
    resources: Option<IgnoredAny>,
    #[serde(default)]
    ipc: Option<IgnoredAny>,
}

#[derive(Debug, Deserialize)]
#[serde(deny_unknown_fields)]
struct Rules<T> {
    #[serde(default = "Vec::new")]
    allow: Vec<T>,
    #[serde(default = "Vec::new")]
    deny: Vec<IgnoredAny>,
}

#[derive(Debug, Deserialize)]
#[serde(deny_unknown_fields)]
struct EnvRules {
    #[serde(default)]
    allow: Vec<EnvEntry>,
}

#[derive(Debug, Deserialize)]
#[serde(deny_unknown_fields)]
struct EnvEntry {
    key: String,
}

#[derive(Debug, Deserialize)]
#[serde(deny_unknown_fields)]
struct Storage {
    uri: String,
    access: Vec<AccessWord>,
}

#[derive(Debug, Clone, Copy, PartialEq, Eq, Deserialize)]
#[serde(rename_all = "lowercase")]
enum AccessWord {
    Read,
    Write,
}

#[derive(Debug, Deserialize)]
#[serde(deny_unknown_fields)]
struct Network {
    #[serde(default)]
    host: Option<String>,
    #[serde(default)]
    cidr: Option<String>,
    #[serde(default)]
    defaults: Option<bool>,
}

/// A policy turned into toolhost's grants.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct Converted {
    /// Its `description`, if any.
    pub description: Option<String>,
    /// What it grants, as toolhost grants.
    pub grants: Grants,
    /// What it says that toolhost does not take from it, each a sentence.
    pub notes: Vec<String>,
}

/// Reads the policy at `path` (a regular file of at most [`POLICY_LIMIT`])
/// and converts it. The error names the file and says what to change.
pub fn load(path: &Path) -> Result<Converted, String> {
    let text = crate::readfile::read_regular_text(path, POLICY_LIMIT)
        .map_err(|err| format!("could not read the Wassette policy {}: {err}", path.display()))?;
    parse(&text).map_err(|why| format!("{} is not a Wassette policy toolhost can apply: {why}", path.display()))
}

/// Parses and converts policy text.
pub fn parse(text: &str) -> Result<Converted, String> {
    let mut options = serde_saphyr::Options::default();
    options.duplicate_keys = serde_saphyr::DuplicateKeyPolicy::Error;
    options.merge_keys = serde_saphyr::MergeKeyPolicy::Error;
    options.with_snippet = false;
    let document: Document =
        serde_saphyr::from_str_with_options(text, options).map_err(|err| one_line(&err.to_string()))?;
    convert(document)
}

fn one_line(text: &str) -> String {
    text.split_whitespace().collect::<Vec<_>>().join(" ")
}

fn convert(document: Document) -> Result<Converted, String> {
    if !(document.version == "1" || document.version.starts_with("1.")) {
        return Err(format!(
            "its `version` is \"{}\"; toolhost reads Wassette's policy format 1.x (`version: \"1.0\"`)",
            document.version.escape_debug()
        ));
    }
    let mut converted = Converted { description: document.description, ..Converted::default() };
    let Some(permissions) = document.permissions else { return Ok(converted) };
    if let Some(network) = permissions.network {
        if !network.deny.is_empty() {
            return Err(deny_refused("network"));
        }
        for entry in network.allow {
            let patterns = match entry {
                Network { host: Some(host), cidr: None, defaults: None } => hosts(&host)?,
                Network { host: None, cidr: Some(cidr), defaults: None } => {
                    return Err(format!(
                        "`cidr: {cidr}`: toolhost grants hosts and addresses, not ranges: list each address the \
                         component reaches as a `host` (e.g. `host: \"http://10.0.0.5:8080\"`)"
                    ));
                }
                Network { host: None, cidr: None, defaults: Some(_) } => {
                    return Err("`defaults: true` stands for Wassette's built-in list of about 90 public hosts; \
                                toolhost grants only what is named: list the hosts the component reaches as `host` \
                                entries"
                        .to_owned());
                }
                _ => {
                    return Err("a `network.allow` entry has exactly one of `host`, `cidr` or `defaults`".to_owned());
                }
            };
            for pattern in patterns {
                if !converted
                    .grants
                    .network
                    .hosts
                    .iter()
                    .any(|have| have.is_whole_host() && have.target.covers(&pattern))
                {
                    converted.grants.network.hosts.push(pattern.into());
                }
            }
        }
    }
    if let Some(storage) = permissions.storage {
        if !storage.deny.is_empty() {
            return Err(deny_refused("storage"));
        }
        for entry in storage.allow {
            let access = match entry.access.as_slice() {
                [] => return Err(format!("`uri: {}` has no `access`: write `[read]` or `[read, write]`", entry.uri)),
                words if words.contains(&AccessWord::Write) => Access::ReadWrite,
                _ => Access::ReadOnly,
            };
            if !entry.uri.trim_start().to_ascii_lowercase().starts_with("fs://") {
                return Err(format!("`uri: {}`: a storage URI is `fs:///ABSOLUTE/PATH`", entry.uri));
            }
            let dir: DirGrant = format!("{}:{}", entry.uri.trim(), access.as_str()).parse()?;
            match converted.grants.files.dirs.iter_mut().find(|have| have.host == dir.host && have.guest == dir.guest) {
                Some(have) => have.access = have.access.max(dir.access),
                None => converted.grants.files.dirs.push(dir),
            }
        }
    }
    if let Some(environment) = permissions.environment {
        for entry in environment.allow {
            let name: EnvName = entry.key.parse()?;
            let list = if secret_like(name.as_str()) {
                &mut converted.grants.env.secrets
            } else {
                &mut converted.grants.env.names
            };
            if !list.contains(&name) {
                list.push(name);
            }
        }
    }
    for (present, key, what) in [
        (
            permissions.runtime.is_some(),
            "runtime",
            "toolhost runs every call in its own sandbox, with no container settings",
        ),
        (
            permissions.resources.is_some(),
            "resources",
            "set `[plugins.NAME.limits]` (`memory`, `fuel`, `timeout`) in toolhost.toml instead",
        ),
        (permissions.ipc.is_some(), "ipc", "a plugin has no pipes or sockets besides its granted hosts"),
    ] {
        if present {
            converted.notes.push(format!("`permissions.{key}` is not applied: {what}"));
        }
    }
    Ok(converted)
}

fn deny_refused(kind: &str) -> String {
    format!(
        "`permissions.{kind}.deny` cannot be honoured: toolhost grants have no exceptions (and Wassette 0.8 does not \
         apply `deny` either). Everything not allowed is denied: remove `deny` and narrow the `allow` entries so they \
         do not cover what it kept out"
    )
}

/// A `network.allow` host as toolhost host entries.
fn hosts(host: &str) -> Result<Vec<HostPattern>, String> {
    let host = host.trim();
    if host.contains("://") {
        // A URL: its scheme, host and port; a path of `/` is the host itself.
        let (scheme, rest) = host.split_once("://").unwrap_or(("", host));
        let authority = rest.split(['/', '?', '#']).next().unwrap_or(rest);
        let path = &rest[authority.len()..];
        if !path.is_empty() && path != "/" {
            return Err(format!(
                "`host: {host}` names a path; Wassette and toolhost grant hosts, not paths: write \
                 `{scheme}://{authority}`"
            ));
        }
        return Ok(vec![format!("{scheme}://{authority}").parse()?]);
    }
    Ok(vec![format!("https://{host}").parse()?, format!("http://{host}").parse()?])
}

/// Whether an environment variable's name says it holds a credential.
fn secret_like(name: &str) -> bool {
    let upper = name.to_ascii_uppercase();
    ["KEY", "TOKEN", "SECRET", "PASSWORD", "PASSWD", "CREDENTIAL", "AUTH"].iter().any(|word| upper.contains(word))
}

/// What `have` (the config's grants) lacks of `wanted` (a policy's): hosts
/// no granted entry covers (compared parsed, so every spelling of a host is
/// one), folders not granted at the same guest path with at least that
/// access, variables granted neither as `env` nor as `secrets`.
pub fn lacking(wanted: &Grants, have: &Grants) -> Grants {
    let reachable = have.reachable();
    let mut lacking = Grants::default();
    for pattern in &wanted.network.hosts {
        if !reachable.hosts.iter().any(|granted| granted.is_whole_host() && granted.target.covers(&pattern.target)) {
            lacking.network.hosts.push(pattern.clone());
        }
    }
    for dir in &wanted.files.dirs {
        let same = |granted: &&DirGrant| granted.guest == dir.guest && same_folder(&granted.host, &dir.host);
        if !have.files.dirs.iter().filter(same).any(|granted| granted.access >= dir.access) {
            lacking.files.dirs.push(dir.clone());
        }
    }
    for name in &wanted.env.names {
        if !have.env.grants(name) {
            lacking.env.names.push(name.clone());
        }
    }
    for name in &wanted.env.secrets {
        if !have.env.grants(name) {
            lacking.env.secrets.push(name.clone());
        }
    }
    lacking
}

/// [`lacking`] as short lines, each as toolhost.toml writes it
/// (`http https://api.example.com`); empty when the policy is applied.
pub fn missing(wanted: &Grants, have: &Grants) -> Vec<String> {
    lacking(wanted, have).describe().into_iter().map(|(kind, what)| format!("{kind} {what}")).collect()
}

/// Whether two folder paths name the same folder (resolved when both exist).
fn same_folder(a: &Path, b: &Path) -> bool {
    match (std::fs::canonicalize(a), std::fs::canonicalize(b)) {
        (Ok(a), Ok(b)) => a == b,
        _ => a == b,
    }
}

/// A policy file found in a plugins folder, and the plugin it belongs to.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Found {
    /// The file.
    pub path: PathBuf,
    /// The plugin (file stem of its `.wasm`) it is for: `NAME` for
    /// `NAME.policy.yaml`, the folder's only plugin for `policy.yaml`; none
    /// when that cannot be told.
    pub plugin: Option<String>,
}

/// The Wassette policy files directly in `dir` (`NAME.policy.yaml`,
/// `policy.yaml`, and their `.yml` spellings), sorted, each with its plugin;
/// `plugins` are the plugin names (`.wasm` file stems) of the folder.
pub fn beside(dir: &Path, plugins: &[String]) -> Vec<Found> {
    let Ok(entries) = std::fs::read_dir(dir) else { return Vec::new() };
    let mut found: Vec<Found> = entries
        .filter_map(|entry| entry.ok())
        .filter_map(|entry| {
            let name = entry.file_name().to_string_lossy().into_owned();
            let stem = name.strip_suffix(".yaml").or_else(|| name.strip_suffix(".yml"))?;
            let plugin = if stem == "policy" {
                match plugins {
                    [only] => Some(only.clone()),
                    _ => None,
                }
            } else {
                Some(stem.strip_suffix(".policy")?.to_owned())
            };
            Some(Found { path: entry.path(), plugin })
        })
        .collect();
    found.sort_by(|a, b| a.path.cmp(&b.path));
    found
}

/// One warning for each Wassette policy in `dir` whose grants the config
/// does not hold (`grants_for` a plugin's name gives what it is granted),
/// naming the file and saying how to apply it. `plugins`: the folder's
/// plugin names.
pub fn unapplied(dir: &Path, plugins: &[String], grants_for: impl Fn(&str) -> Grants) -> Vec<String> {
    let mut warnings = Vec::new();
    for found in beside(dir, plugins) {
        let shown = found.path.display();
        let Some(plugin) = &found.plugin else {
            warnings.push(format!(
                "{shown}: a Wassette policy that toolhost does not apply: it cannot tell which plugin of the folder it \
                 is for; rename it `NAME.policy.yaml` beside NAME.wasm, or run `toolhost policy import {shown} \
                 --plugin NAME`"
            ));
            continue;
        };
        let converted = match load(&found.path) {
            Ok(converted) => converted,
            Err(why) => {
                warnings.push(format!(
                    "{why}; it is not applied: fix it and run `toolhost policy import {shown}`, or grant \
                     `[plugins.{plugin}]` in toolhost.toml by hand"
                ));
                continue;
            }
        };
        let lacking = missing(&converted.grants, &grants_for(plugin));
        if !lacking.is_empty() {
            warnings.push(format!(
                "{shown}: a Wassette policy for `{plugin}` that toolhost does not apply (plugins get only what \
                 toolhost.toml grants; it would grant {}): review it and run `toolhost policy import {shown}` to add \
                 its grants to `[plugins.{plugin}]`",
                lacking.join(", ")
            ));
        }
    }
    warnings
}

#[cfg(test)]
mod tests {
    use super::*;

    fn hosts_of(converted: &Converted) -> Vec<String> {
        converted.grants.network.hosts.iter().map(ToString::to_string).collect()
    }

    #[test]
    fn accepts_the_policies_wassettes_examples_ship() {
        // As the examples write them: a bare host, a URL, env keys, fs:/// folders, no permissions at all.
        let weather = parse(
            "version: \"1.0\"\ndescription: \"Permission policy for wassette weather demo\"\npermissions:\n  network:\n    \
             allow:\n      - host: \"api.openweathermap.org\"\n  environment:\n    allow:\n      - key: \
             \"OPENWEATHER_API_KEY\"\n",
        )
        .unwrap();
        assert_eq!(hosts_of(&weather), ["https://api.openweathermap.org", "http://api.openweathermap.org"]);
        assert_eq!(weather.grants.env.secrets[0].as_str(), "OPENWEATHER_API_KEY", "a key is a secret");
        assert!(weather.grants.env.names.is_empty());
        let fetch = parse(
            "version: \"1.0\"\npermissions:\n  network:\n    allow:\n      - host: \"https://rss.nytimes.com/\"\n",
        )
        .unwrap();
        assert_eq!(hosts_of(&fetch), ["https://rss.nytimes.com"]);
        let files = parse(
            "# comment\nversion: \"1.0\"\npermissions:\n  storage:\n    allow:\n      - uri: \"fs:///srv/project\"\n        \
             access: [\"read\"]\n      - uri: \"fs:///tmp/out\"\n        access: [\"read\", \"write\"]\n",
        )
        .unwrap();
        let dirs: Vec<String> = files.grants.files.dirs.iter().map(ToString::to_string).collect();
        assert_eq!(dirs, ["/srv/project:/srv/project:ro", "/tmp/out:/tmp/out:rw"]);
        let time =
            parse("version: \"1.0\"\ndescription: \"Permission policy for time-server\"\npermissions: {}\n").unwrap();
        assert!(time.grants.is_empty() && time.notes.is_empty());
        let empty = parse("version: \"1.0\"\npermissions:\n").unwrap();
        assert!(empty.grants.is_empty());
        let env =
            parse("version: \"1.1\"\npermissions:\n  environment:\n    allow:\n    - key: LANG\n    - key: LANG\n")
                .unwrap();
        assert_eq!(env.grants.env.names.len(), 1, "once");
    }

    #[test]
    fn notes_what_toolhost_bounds_otherwise() {
        let converted = parse(
            "version: \"1.0\"\npermissions:\n  resources:\n    limits:\n      memory: 512Mi\n  runtime:\n    docker: {}\n",
        )
        .unwrap();
        assert_eq!(converted.notes.len(), 2, "{:?}", converted.notes);
        assert!(converted.notes.iter().any(|note| note.contains("[plugins.NAME.limits]")));
    }

    #[test]
    fn rejects_what_it_cannot_honour_with_the_fix() {
        let cases = [
            ("version: \"2.0\"\npermissions: {}\n", "format 1.x"),
            ("version: \"1.0\"\npermisions: {}\n", "unknown field `permisions`"),
            ("version: \"1.0\"\npermissions:\n  netwrok: {}\n", "unknown field `netwrok`"),
            ("version: \"1.0\"\nversion: \"1.0\"\n", "duplicate"),
            ("version: \"1.0\"\npermissions:\n  network:\n    allow: []\n  network:\n    allow: []\n", "duplicate"),
            (
                "version: \"1.0\"\npermissions:\n  network:\n    allow:\n    - host: a.com\n      host: b.com\n",
                "duplicate",
            ),
            ("version: \"1.0\"\npermissions:\n  network:\n    allow:\n    - cidr: 10.0.0.0/8\n", "not ranges"),
            ("version: \"1.0\"\npermissions:\n  network:\n    allow:\n    - defaults: true\n", "only what is named"),
            ("version: \"1.0\"\npermissions:\n  network:\n    deny:\n    - host: evil.com\n", "no exceptions"),
            (
                "version: \"1.0\"\npermissions:\n  network:\n    allow:\n    - host: \"https://a.com/feed\"\n",
                "not paths",
            ),
            ("version: \"1.0\"\npermissions:\n  network:\n    allow:\n    - host: \"a.*.com\"\n", "leftmost labels"),
            (
                "version: \"1.0\"\npermissions:\n  storage:\n    allow:\n    - uri: fs://workspace/**\n      access: [read]\n",
                "fs:///ABSOLUTE/PATH/workspace",
            ),
            (
                "version: \"1.0\"\npermissions:\n  storage:\n    allow:\n    - uri: fs:///var/log/*.log\n      access: [read]\n",
                "grant the folder",
            ),
            (
                "version: \"1.0\"\npermissions:\n  storage:\n    allow:\n    - uri: fs:///data\n      access: []\n",
                "has no `access`",
            ),
            (
                "version: \"1.0\"\npermissions:\n  storage:\n    allow:\n    - uri: fs:///data\n      access: [execute]\n",
                "execute",
            ),
            (
                "version: \"1.0\"\npermissions:\n  storage:\n    allow:\n    - uri: http://x/data\n      access: [read]\n",
                "fs:///ABSOLUTE/PATH",
            ),
            (
                "version: \"1.0\"\npermissions:\n  storage:\n    deny:\n    - uri: fs:///etc\n      access: [read]\n",
                "no exceptions",
            ),
            (
                "version: \"1.0\"\npermissions:\n  environment:\n    allow:\n    - key: \"PATH_*\"\n",
                "not an environment variable name",
            ),
            ("version: \"1.0\"\npermissions:\n  <<: {network: {allow: []}}\n", "merge"),
            ("version: [\n", ""),
        ];
        for (text, expected) in cases {
            let err = parse(text).unwrap_err();
            assert!(err.to_lowercase().contains(&expected.to_lowercase()), "{text:?}: {err}");
            assert!(!err.contains('\n'), "one line: {err}");
        }
    }

    #[test]
    fn a_policy_file_is_read_bounded_and_only_when_regular() {
        let dir = tempfile::tempdir().unwrap();
        let big = dir.path().join("big.policy.yaml");
        std::fs::write(&big, format!("version: \"1.0\"\ndescription: \"{}\"\n", "x".repeat(POLICY_LIMIT as usize)))
            .unwrap();
        assert!(load(&big).unwrap_err().contains("big.policy.yaml"));
        let folder = dir.path().join("folder.policy.yaml");
        std::fs::create_dir(&folder).unwrap();
        assert!(load(&folder).unwrap_err().contains("folder.policy.yaml"));
    }

    #[test]
    fn finds_policies_beside_plugins_and_tells_which_are_applied() {
        let dir = tempfile::tempdir().unwrap();
        let policy = "version: \"1.0\"\npermissions:\n  network:\n    allow:\n    - host: \"http://127.0.0.1:8080\"\n";
        std::fs::write(dir.path().join("fetch.policy.yaml"), policy).unwrap();
        std::fs::write(dir.path().join("policy.yml"), policy).unwrap();
        std::fs::write(dir.path().join("notes.yaml"), "x: 1\n").unwrap();
        let plugins = vec!["fetch".to_owned(), "other".to_owned()];
        let found = beside(dir.path(), &plugins);
        assert_eq!(found.len(), 2, "{found:?}");
        assert_eq!(found[0].plugin.as_deref(), Some("fetch"));
        assert_eq!(found[1].plugin, None, "two plugins: which one is unknown");
        assert_eq!(beside(dir.path(), &plugins[..1])[1].plugin.as_deref(), Some("fetch"));
        let warnings = unapplied(dir.path(), &plugins, |_| Grants::default());
        assert_eq!(warnings.len(), 2, "{warnings:?}");
        assert!(warnings[0].contains("toolhost policy import") && warnings[0].contains("http://127.0.0.1:8080"));
        assert!(warnings[1].contains("--plugin NAME"));
        // Granted in the config (in another spelling of the same address): applied, no warning.
        let granted = Grants {
            network: crate::network::NetworkGrant {
                hosts: vec!["http://0x7f000001:8080".parse().unwrap()],
                sockets: false,
            },
            ..Grants::default()
        };
        std::fs::remove_file(dir.path().join("policy.yml")).unwrap();
        assert!(unapplied(dir.path(), &plugins, |_| granted.clone()).is_empty());
    }
}

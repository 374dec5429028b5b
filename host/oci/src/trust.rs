//! `[[trust]]`: whose signatures `toolhost pull` accepts, per registry or
//! repository, and where it requires one.
//!
//! ```toml
//! [[trust]]
//! scope = "ghcr.io/acme/*"          # every repository under ghcr.io/acme/
//! keys = ["keys/acme.pub"]          # cosign.pub files (PEM PUBLIC KEY, ECDSA P-256)
//! # require = true                  # the default: an unsigned plugin is refused
//!
//! [[trust]]
//! scope = "ghcr.io/acme/experiments"  # one repository: the most specific scope wins
//! keys = ["keys/acme.pub", "keys/lab.pub"]
//! require = false                   # check a signature when there is one, accept unsigned
//! ```
//!
//! A scope is `*` (every reference), `PREFIX/*` (every repository under a
//! registry, or under a namespace of one), or `REGISTRY/REPOSITORY` (that one
//! repository); never a tag or digest, since a signature is for an artifact
//! wherever its tag points. One scope applies to a reference: the exact
//! repository, else the longest matching prefix, else `*`, as in the
//! `containers-policy.json` scopes of Podman and CRI-O. So a more specific
//! entry replaces a broader one entirely (its keys and its `require`), and an
//! entry with no keys and `require = false` exempts a repository from a
//! broader rule. A reference no scope covers is pulled unchecked, as before.
//!
//! The key files are read when a pull needs them, not when the config is
//! loaded, so commands that do not pull never fail on one.

use crate::Source;
use serde::Deserialize;
use std::fmt;
use std::path::PathBuf;
use std::str::FromStr;

/// The `[[trust]]` entries of the config, checked: scopes well-formed and
/// each listed once.
#[derive(Debug, Clone, Default)]
pub struct Trust {
    entries: Vec<TrustEntry>,
}

/// One `[[trust]]` entry.
#[derive(Debug, Clone, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct TrustEntry {
    /// Which references it covers.
    pub scope: Scope,
    /// The trusted public keys (PEM files); relative paths are resolved
    /// against the config file's folder.
    #[serde(default)]
    pub keys: Vec<PathBuf>,
    /// Refuse a plugin with no signature (the default); with `false`, a
    /// signature is checked when there is one.
    #[serde(default = "required")]
    pub require: bool,
}

fn required() -> bool {
    true
}

impl<'de> Deserialize<'de> for Trust {
    fn deserialize<D: serde::Deserializer<'de>>(deserializer: D) -> Result<Trust, D::Error> {
        let entries = Vec::<TrustEntry>::deserialize(deserializer)?;
        Trust::new(entries).map_err(serde::de::Error::custom)
    }
}

impl Trust {
    /// Checks `entries`: each scope once, and keys wherever signatures are required.
    pub fn new(entries: Vec<TrustEntry>) -> Result<Trust, String> {
        for (index, entry) in entries.iter().enumerate() {
            if entries[..index].iter().any(|earlier| earlier.scope == entry.scope) {
                return Err(format!(
                    "`[[trust]]` lists the scope `{}` twice; merge the two entries' keys into one",
                    entry.scope
                ));
            }
            if entry.require && entry.keys.is_empty() {
                return Err(format!(
                    "`[[trust]]` for `{}` requires signatures but trusts no key: list the signers' public keys \
                     (`keys = [\"cosign.pub\"]`), or set `require = false` to leave it unchecked",
                    entry.scope
                ));
            }
        }
        Ok(Trust { entries })
    }

    /// True when no entry is configured.
    pub fn is_empty(&self) -> bool {
        self.entries.is_empty()
    }

    /// Every entry, as configured.
    pub fn entries(&self) -> &[TrustEntry] {
        &self.entries
    }

    /// Every entry, to resolve their key paths.
    pub fn entries_mut(&mut self) -> &mut [TrustEntry] {
        &mut self.entries
    }

    /// The entry that applies to `source`: the most specific scope that covers it.
    pub fn for_source(&self, source: &Source) -> Option<&TrustEntry> {
        let repository = format!("{}/{}", source.reference().registry(), source.repository());
        self.entries
            .iter()
            .filter_map(|entry| entry.scope.rank(&repository).map(|rank| (rank, entry)))
            .max_by_key(|(rank, _)| *rank)
            .map(|(_, entry)| entry)
    }
}

/// Which references a `[[trust]]` entry covers.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Scope {
    /// `*`: every reference.
    Everything,
    /// `PREFIX/*`: every repository under `PREFIX/` (kept without the `/*`).
    Under(String),
    /// `REGISTRY/REPOSITORY`: that repository.
    Repository(String),
}

impl Scope {
    /// How specifically this scope covers `repository` (`registry/repository`),
    /// if it does: higher wins.
    fn rank(&self, repository: &str) -> Option<usize> {
        match self {
            Scope::Everything => Some(0),
            Scope::Under(prefix) => {
                let rest = repository.strip_prefix(prefix.as_str())?;
                rest.starts_with('/').then_some(prefix.len() + 1)
            }
            Scope::Repository(exact) => (exact == repository).then_some(usize::MAX),
        }
    }
}

impl fmt::Display for Scope {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Scope::Everything => f.write_str("*"),
            Scope::Under(prefix) => write!(f, "{prefix}/*"),
            Scope::Repository(repository) => f.write_str(repository),
        }
    }
}

const FORM: &str = "a scope is `*`, `REGISTRY/*`, `REGISTRY/NAMESPACE/*` or `REGISTRY/REPOSITORY`, \
                    e.g. `ghcr.io/acme/*`";

impl FromStr for Scope {
    type Err = String;

    fn from_str(text: &str) -> Result<Scope, String> {
        let shown = text.escape_debug();
        if text == "*" {
            return Ok(Scope::Everything);
        }
        if text.contains("://") {
            return Err(format!("`{shown}`: leave out the scheme ({FORM})"));
        }
        if text.contains('@') {
            return Err(format!(
                "`{shown}`: a scope names repositories, not a digest: a signature is for an artifact wherever it \
                 is tagged ({FORM})"
            ));
        }
        let (body, under) = match text.strip_suffix("/*") {
            Some(prefix) => (prefix, true),
            None => (text, false),
        };
        let mut parts = body.split('/');
        let registry = parts.next().unwrap_or_default();
        let path: Vec<&str> = parts.collect();
        let canonical = crate::reference::canonical_registry(registry).ok();
        let registry_ok = canonical.is_some()
            && registry.chars().all(|c| c.is_ascii_alphanumeric() || matches!(c, '.' | '-' | ':' | '[' | ']'));
        let path_ok = path.iter().all(|segment| {
            !segment.is_empty()
                && segment.chars().all(|c| c.is_ascii_lowercase() || c.is_ascii_digit() || matches!(c, '.' | '_' | '-'))
        });
        if !registry_ok || !path_ok || (!under && path.is_empty()) {
            let hint = if path.last().is_some_and(|last| last.contains(':')) {
                ": a scope names repositories, not a tag"
            } else if !under && path.is_empty() && registry_ok {
                ": to cover a whole registry, end it with `/*`"
            } else {
                ""
            };
            return Err(format!("`{shown}` is not a scope{hint} ({FORM})"));
        }
        // The registry in the canonical spelling `Source` gives references,
        // so the two compare whatever either was written as.
        let mut body = canonical.unwrap_or_default();
        for segment in path {
            body.push('/');
            body.push_str(segment);
        }
        Ok(if under { Scope::Under(body) } else { Scope::Repository(body) })
    }
}

impl<'de> Deserialize<'de> for Scope {
    fn deserialize<D: serde::Deserializer<'de>>(deserializer: D) -> Result<Scope, D::Error> {
        let text = String::deserialize(deserializer)?;
        text.parse().map_err(serde::de::Error::custom)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn accepts_scopes_of_every_form() {
        let cases = [
            ("*", Scope::Everything),
            ("ghcr.io/*", Scope::Under("ghcr.io".into())),
            ("127.0.0.1:5000/tools/*", Scope::Under("127.0.0.1:5000/tools".into())),
            ("GHCR.io/acme/hash", Scope::Repository("ghcr.io/acme/hash".into())),
            ("[::1]:5000/a/b/c", Scope::Repository("[::1]:5000/a/b/c".into())),
            ("127.1:5000/tools/*", Scope::Under("127.0.0.1:5000/tools".into())),
            ("LOCALHOST.:5000/tools/*", Scope::Under("localhost:5000/tools".into())),
            ("ghcr.io:443/acme/*", Scope::Under("ghcr.io/acme".into())),
            ("index.docker.io/library/*", Scope::Under("docker.io/library".into())),
        ];
        for (text, expected) in cases {
            assert_eq!(text.parse::<Scope>().unwrap(), expected, "{text}");
        }
    }

    #[test]
    fn a_scope_covers_every_spelling_of_its_registry() {
        let trust = Trust::new(vec![
            entry("localhost:5000/tools/*", &["local.pub"], true),
            entry("127.0.0.1:5001/tools/*", &["ip.pub"], true),
            entry("ghcr.io/acme/*", &["acme.pub"], true),
        ])
        .unwrap();
        let cases = [
            ("LOCALHOST:5000/tools/x:1", "localhost:5000/tools/*"),
            ("127.1:5001/tools/x:1", "127.0.0.1:5001/tools/*"),
            ("2130706433:5001/tools/x:1", "127.0.0.1:5001/tools/*"),
            ("0x7f.1:5001/tools/x:1", "127.0.0.1:5001/tools/*"),
            ("GHCR.IO/acme/x:1", "ghcr.io/acme/*"),
            ("ghcr.io:443/acme/x:1", "ghcr.io/acme/*"),
        ];
        for (reference, scope) in cases {
            let source: Source = reference.parse().unwrap();
            let entry = trust.for_source(&source).unwrap_or_else(|| panic!("{reference} escaped every scope"));
            assert_eq!(entry.scope.to_string(), scope, "{reference}");
        }
    }

    #[test]
    fn rejects_malformed_scopes_with_the_form() {
        let cases = [
            ("", "not a scope"),
            ("ghcr.io", "end it with `/*`"),
            ("ghcr.io/acme/hash:1.0", "not a tag"),
            ("ghcr.io/acme/hash@sha256:00", "not a digest"),
            ("https://ghcr.io/acme/*", "leave out the scheme"),
            ("ghcr.io/Acme/*", "not a scope"),
            ("ghcr.io//x", "not a scope"),
            ("ghcr.io/acme/*/x", "not a scope"),
            ("*/x", "not a scope"),
        ];
        for (text, expected) in cases {
            let err = text.parse::<Scope>().unwrap_err();
            assert!(err.contains(expected) && err.contains("REGISTRY/REPOSITORY"), "{text}: {err}");
        }
    }

    fn entry(scope: &str, keys: &[&str], require: bool) -> TrustEntry {
        TrustEntry { scope: scope.parse().unwrap(), keys: keys.iter().map(PathBuf::from).collect(), require }
    }

    #[test]
    fn the_most_specific_scope_applies() {
        let trust = Trust::new(vec![
            entry("*", &["all.pub"], true),
            entry("ghcr.io/*", &["ghcr.pub"], true),
            entry("ghcr.io/acme/*", &["acme.pub"], true),
            entry("ghcr.io/acme/lab", &[], false),
        ])
        .unwrap();
        let cases = [
            ("ghcr.io/acme/hash:1", "ghcr.io/acme/*"),
            (
                "ghcr.io/acme/tools/hash@sha256:0123456789abcdef0123456789abcdef0123456789abcdef0123456789abcdef",
                "ghcr.io/acme/*",
            ),
            ("ghcr.io/acme/lab:2", "ghcr.io/acme/lab"),
            ("ghcr.io/acme/laboratory:2", "ghcr.io/acme/*"),
            ("ghcr.io/acmeish/hash:1", "ghcr.io/*"),
            ("quay.io/acme/hash:1", "*"),
        ];
        for (reference, scope) in cases {
            let source: Source = reference.parse().unwrap();
            assert_eq!(trust.for_source(&source).unwrap().scope.to_string(), scope, "{reference}");
        }
        let narrow = Trust::new(vec![entry("ghcr.io/acme/*", &["acme.pub"], true)]).unwrap();
        assert!(narrow.for_source(&"quay.io/acme/hash:1".parse().unwrap()).is_none());
    }

    #[test]
    fn rejects_a_scope_twice_and_a_requirement_without_keys() {
        let err =
            Trust::new(vec![entry("ghcr.io/*", &["a.pub"], true), entry("ghcr.io/*", &["b.pub"], true)]).unwrap_err();
        assert!(err.contains("twice"), "{err}");
        let err = Trust::new(vec![entry("ghcr.io/*", &[], true)]).unwrap_err();
        assert!(err.contains("trusts no key"), "{err}");
        assert!(Trust::new(vec![entry("ghcr.io/*", &[], false)]).is_ok());
    }
}

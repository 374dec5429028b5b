//! A plugin's place in a registry: `registry/repository[:tag][@sha256:…]`,
//! checked once when it is parsed (from a flag or from `[plugins.NAME] source`).

use oci_client::Reference;
use serde::Deserialize;
use std::fmt;
use std::str::FromStr;
use toolhost_grants::names::Authority;

/// A checked registry reference.
#[derive(Clone)]
pub struct Source {
    text: String,
    reference: Reference,
}

impl Source {
    /// The parsed reference.
    pub fn reference(&self) -> &Reference {
        &self.reference
    }

    /// The registry, as written (`127.0.0.1:5000`, `ghcr.io`).
    pub fn registry(&self) -> &str {
        self.reference.resolve_registry()
    }

    /// The repository (`plugins/hash`).
    pub fn repository(&self) -> &str {
        self.reference.repository()
    }

    /// The tag, if the reference names one.
    pub fn tag(&self) -> Option<&str> {
        self.reference.tag()
    }

    /// The pinned digest (`sha256:…`), if any.
    pub fn digest(&self) -> Option<&str> {
        self.reference.digest()
    }

    /// The plugin name a pull gives it by default: the repository's last segment.
    pub fn default_name(&self) -> &str {
        self.repository().rsplit('/').next().unwrap_or_default()
    }

    /// The same repository and tag, pinned to `digest`.
    pub fn pinned(&self, digest: &str) -> Reference {
        match self.tag() {
            Some(tag) => Reference::with_tag_and_digest(
                self.reference.registry().to_owned(),
                self.repository().to_owned(),
                tag.to_owned(),
                digest.to_owned(),
            ),
            None => Reference::with_digest(
                self.reference.registry().to_owned(),
                self.repository().to_owned(),
                digest.to_owned(),
            ),
        }
    }
}

impl fmt::Display for Source {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(&self.text)
    }
}

impl fmt::Debug for Source {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "Source({})", self.text)
    }
}

const FORM: &str = "expected REGISTRY/REPOSITORY[:TAG][@sha256:DIGEST], e.g. `ghcr.io/acme/hash:1.0` or \
                    `127.0.0.1:5000/plugins/hash@sha256:…`";

impl FromStr for Source {
    type Err = String;

    fn from_str(text: &str) -> Result<Source, String> {
        let text = text.trim();
        if text.is_empty() {
            return Err(format!("an empty registry reference ({FORM})"));
        }
        if text.contains("://") {
            let bare = text.split_once("://").map(|(_, rest)| rest).unwrap_or(text);
            return Err(format!(
                "`{}` is not a registry reference: leave out the scheme (did you mean `{}`?)",
                text.escape_debug(),
                bare.escape_debug()
            ));
        }
        let parsed = Reference::from_str(text)
            .map_err(|err| format!("`{}` is not a registry reference: {err} ({FORM})", text.escape_debug()))?;
        if let Some(digest) = parsed.digest() {
            check_digest(digest).map_err(|why| format!("`{}`: {why}", text.escape_debug()))?;
        }
        // Every later decision (trust scope, lock, credentials, plain HTTP)
        // sees the registry in its one canonical spelling.
        let registry = canonical_registry(parsed.registry())
            .map_err(|why| format!("`{}` is not a registry reference: {why} ({FORM})", text.escape_debug()))?;
        let (repository, tag, digest) =
            (parsed.repository().to_owned(), parsed.tag().map(str::to_owned), parsed.digest().map(str::to_owned));
        let reference = match (tag, digest) {
            (Some(tag), Some(digest)) => Reference::with_tag_and_digest(registry, repository, tag, digest),
            (None, Some(digest)) => Reference::with_digest(registry, repository, digest),
            (Some(tag), None) => Reference::with_tag(registry, repository, tag),
            (None, None) => Reference::with_tag(registry, repository, "latest".to_owned()),
        };
        Ok(Source { text: reference.whole(), reference })
    }
}

impl PartialEq for Source {
    /// Two references are the same when their canonical forms are.
    fn eq(&self, other: &Source) -> bool {
        self.text == other.text
    }
}

impl Eq for Source {}

/// A registry's one canonical spelling (`host[:port]`, see
/// [`toolhost_grants::names`]): every spelling of its host alike, `:443` left
/// out where it is the default, Docker Hub's other names as `docker.io`.
pub fn canonical_registry(registry: &str) -> Result<String, String> {
    let mut authority = Authority::parse(registry)?;
    if authority.port == Some(443) && !authority.host.is_loopback() {
        authority.port = None;
    }
    let text = authority.to_string();
    Ok(match text.as_str() {
        "index.docker.io" | "registry-1.docker.io" => "docker.io".to_owned(),
        _ => text,
    })
}

impl<'de> Deserialize<'de> for Source {
    fn deserialize<D: serde::Deserializer<'de>>(deserializer: D) -> Result<Source, D::Error> {
        let text = String::deserialize(deserializer)?;
        text.parse().map_err(serde::de::Error::custom)
    }
}

/// Checks that `digest` is `sha256:` and 64 lower-case hex digits, the only
/// kind toolhost verifies.
pub fn check_digest(digest: &str) -> Result<(), String> {
    let Some(hex) = digest.strip_prefix("sha256:") else {
        return Err(format!(
            "the digest `{}` is not a sha256 digest (`sha256:` and 64 hex digits)",
            digest.escape_debug()
        ));
    };
    if hex.len() != 64 || !hex.bytes().all(|byte| byte.is_ascii_digit() || (b'a'..=b'f').contains(&byte)) {
        return Err(format!(
            "the digest `{}` is not `sha256:` followed by 64 lower-case hex digits",
            digest.escape_debug()
        ));
    }
    Ok(())
}

/// Checks a plugin name (the file stem it is written under): 1 to 64
/// lower-case letters, digits, `_` or `-`, starting with a letter, as
/// `toolhost new` names plugins.
pub fn check_plugin_name(name: &str) -> Result<(), String> {
    let valid = (1..=64).contains(&name.len())
        && name.starts_with(|c: char| c.is_ascii_lowercase())
        && name.chars().all(|c| c.is_ascii_lowercase() || c.is_ascii_digit() || c == '_' || c == '-');
    if valid {
        Ok(())
    } else {
        Err(format!(
            "`{}` is not a valid plugin name: use 1 to 64 lower-case letters, digits, `_` or `-`, starting \
             with a letter (choose one with --name)",
            name.escape_debug()
        ))
    }
}

/// True when `registry` (`host[:port]`) is this machine: `localhost` or a
/// loopback address, in any spelling. Only these are reached over plain HTTP
/// without `--insecure`.
pub fn is_loopback(registry: &str) -> bool {
    Authority::parse(registry).is_ok_and(|authority| authority.host.is_loopback())
}

/// `sha256:HEX` of `bytes`.
pub fn digest_of(bytes: &[u8]) -> String {
    format!("sha256:{}", toolhost_runtime::cache::sha256_hex(bytes))
}

#[cfg(test)]
mod tests {
    use super::*;

    const DIGEST: &str = "sha256:0123456789abcdef0123456789abcdef0123456789abcdef0123456789abcdef";

    #[test]
    fn accepts_tags_digests_and_both() {
        let source: Source = "127.0.0.1:5000/plugins/hash:1.0".parse().unwrap();
        assert_eq!(source.registry(), "127.0.0.1:5000");
        assert_eq!(source.repository(), "plugins/hash");
        assert_eq!(source.tag(), Some("1.0"));
        assert_eq!(source.digest(), None);
        assert_eq!(source.default_name(), "hash");
        let pinned: Source = format!("ghcr.io/acme/calc:2@{DIGEST}").parse().unwrap();
        assert_eq!(pinned.tag(), Some("2"));
        assert_eq!(pinned.digest(), Some(DIGEST));
        let by_digest: Source = format!("localhost:5000/calc@{DIGEST}").parse().unwrap();
        assert_eq!(by_digest.tag(), None);
        assert_eq!(by_digest.default_name(), "calc");
    }

    #[test]
    fn rejects_malformed_references_with_the_form() {
        let cases = [
            ("", "empty"),
            ("http://127.0.0.1:5000/hash:1", "did you mean `127.0.0.1:5000/hash:1`?"),
            ("127.0.0.1:5000/Hash:1", "REGISTRY/REPOSITORY"),
            ("127.0.0.1:5000/hash@sha256:1234", "REGISTRY/REPOSITORY"),
            (
                "127.0.0.1:5000/hash@sha256:0123456789ABCDEF0123456789ABCDEF0123456789ABCDEF0123456789ABCDEF",
                "lower-case",
            ),
            ("127.0.0.1:5000/hash@md5:0123456789abcdef0123456789abcdef", "sha256"),
        ];
        for (text, expected) in cases {
            let err = text.parse::<Source>().unwrap_err();
            assert!(err.contains(expected), "{text}: {err}");
        }
    }

    #[test]
    fn every_spelling_of_a_registry_is_one_reference() {
        for spelling in [
            "127.0.0.1:5000/tools/x:1",
            "127.1:5000/tools/x:1",
            "2130706433:5000/tools/x:1",
            "0x7f000001:5000/tools/x:1",
        ] {
            let source: Source = spelling.parse().unwrap();
            assert_eq!(source.to_string(), "127.0.0.1:5000/tools/x:1", "{spelling}");
        }
        for spelling in ["localhost:5000/tools/x:1", "LOCALHOST:5000/tools/x:1", "LocalHost:5000/tools/x:1"] {
            assert_eq!(spelling.parse::<Source>().unwrap().to_string(), "localhost:5000/tools/x:1", "{spelling}");
        }
        for spelling in ["GHCR.IO/acme/x:1", "ghcr.io:443/acme/x:1"] {
            assert_eq!(spelling.parse::<Source>().unwrap().to_string(), "ghcr.io/acme/x:1", "{spelling}");
        }
        for spelling in ["hash:1", "docker.io/library/hash:1", "index.docker.io/library/hash:1"] {
            assert_eq!(spelling.parse::<Source>().unwrap().to_string(), "docker.io/library/hash:1", "{spelling}");
        }
        assert_eq!("127.0.0.1:5000/x".parse::<Source>().unwrap().to_string(), "127.0.0.1:5000/x:latest");
        // Spellings the reference grammar itself refuses are refused, never taken unchecked.
        for refused in ["[::ffff:127.0.0.1]:5000/tools/x:1", "localhost.:5000/tools/x:1", "ghcr.io./acme/x:1"] {
            assert!(refused.parse::<Source>().is_err(), "{refused}");
        }
    }

    #[test]
    fn rejects_bad_plugin_names() {
        assert!(check_plugin_name("hash").is_ok());
        assert!(check_plugin_name("py_misbehaves-2").is_ok());
        for bad in ["", "Hash", "2hash", "../hash", "has h", &"a".repeat(65)] {
            assert!(check_plugin_name(bad).is_err(), "{bad}");
        }
    }

    #[test]
    fn only_this_machine_is_loopback() {
        for yes in
            ["127.0.0.1:5000", "localhost:5000", "localhost", "[::1]:5000", "127.1.2.3", "LOCALHOST:5000", "127.1:5000"]
        {
            assert!(is_loopback(yes), "{yes}");
        }
        for no in ["ghcr.io", "10.0.0.1:5000", "registry.local:5000", "[::2]:5000", "localhost.evil.com"] {
            assert!(!is_loopback(no), "{no}");
        }
    }
}

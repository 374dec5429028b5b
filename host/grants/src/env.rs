//! The environment grant: which of the host's environment variables a plugin
//! sees, and which of them are secrets.
//!
//! Variables are granted by name (`env = ["LANG"]`, `secrets = ["API_KEY"]`);
//! names are checked when the config is read, values are read from toolhost's
//! own environment once, when the plugin is loaded. A plugin sees exactly the
//! granted names that are set, and nothing else. A secret's value lives in a
//! [`Secret`], which never prints (its `Debug` and `Display` show a
//! placeholder), and [`Redactor`] scrubs secret values out of everything a call
//! hands back: output, error text, stdout, stderr and log records.

use serde::{Deserialize, Deserializer, Serialize, Serializer};
use std::fmt;
use std::str::FromStr;

/// Environment variables a plugin may see. `Default` is none.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct EnvGrant {
    /// Variables passed as they are.
    pub names: Vec<EnvName>,
    /// Variables passed but never shown: their values are scrubbed from
    /// output, logs and reports.
    pub secrets: Vec<EnvName>,
    /// Secrets that may be sent only to some hosts (`{ name, to }`): the
    /// name (also in `secrets`) and where.
    pub bound: Vec<(EnvName, Vec<crate::network::HostPattern>)>,
}

/// One entry of `secrets = [...]`: a name (`"API_KEY"`), or a name with
/// the hosts its value may be sent to (`{ name = "API_KEY", to = ["https://api.example.com"] }`).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct SecretEntry {
    /// The variable.
    pub name: EnvName,
    /// Where its value may go; `None`: wherever the plugin's grants reach.
    pub to: Option<Vec<crate::network::HostPattern>>,
}

impl<'de> Deserialize<'de> for SecretEntry {
    fn deserialize<D: Deserializer<'de>>(deserializer: D) -> Result<Self, D::Error> {
        #[derive(Deserialize)]
        #[serde(untagged)]
        enum Hosts {
            One(String),
            Many(Vec<String>),
        }
        #[derive(Deserialize)]
        #[serde(deny_unknown_fields)]
        struct Table {
            name: String,
            to: Hosts,
        }
        #[derive(Deserialize)]
        #[serde(untagged)]
        enum Written {
            Name(String),
            Table(Table),
        }
        let written = Written::deserialize(deserializer).map_err(|_| {
            serde::de::Error::custom(
                "a secret is a variable name (\"API_KEY\") or a name with the hosts its value may be sent to \
                 ({ name = \"API_KEY\", to = [\"https://api.example.com\"] })",
            )
        })?;
        match written {
            Written::Name(name) => Ok(SecretEntry { name: name.parse().map_err(serde::de::Error::custom)?, to: None }),
            Written::Table(Table { name, to }) => {
                let name: EnvName = name.parse().map_err(serde::de::Error::custom)?;
                let to = match to {
                    Hosts::One(host) => vec![host],
                    Hosts::Many(hosts) => hosts,
                };
                let to = to
                    .iter()
                    .map(|host| {
                        host.parse().map_err(|err: String| {
                            serde::de::Error::custom(format!("the secret `{name}` may go to: {err}"))
                        })
                    })
                    .collect::<Result<Vec<_>, _>>()?;
                Ok(SecretEntry { name, to: Some(to) })
            }
        }
    }
}

impl EnvGrant {
    /// Whether `name` is granted, as a plain variable or a secret.
    pub fn grants(&self, name: &EnvName) -> bool {
        self.names.contains(name) || self.secrets.contains(name)
    }

    /// Reads the granted variables from `lookup` (toolhost's environment):
    /// the plain values, the secret ones, and the names that are not set. A
    /// name granted both ways is a secret.
    pub fn resolve(&self, lookup: impl Fn(&str) -> Option<String>) -> ResolvedEnv {
        let mut unset = Vec::new();
        let mut vars = Vec::new();
        for name in self.names.iter().filter(|name| !self.secrets.contains(name)) {
            match lookup(&name.0) {
                Some(value) => vars.push((name.0.clone(), value)),
                None => unset.push(name.clone()),
            }
        }
        let mut secrets = Vec::new();
        for name in &self.secrets {
            match lookup(&name.0) {
                Some(value) => secrets.push((name.0.clone(), Secret(value))),
                None => unset.push(name.clone()),
            }
        }
        ResolvedEnv { vars, secrets, unset }
    }
}

/// The granted variables with their values, as read at load.
#[derive(Debug, Default)]
pub struct ResolvedEnv {
    /// Plain variables: name and value.
    pub vars: Vec<(String, String)>,
    /// Secret variables: name and value.
    pub secrets: Vec<(String, Secret)>,
    /// Granted names that are not set.
    pub unset: Vec<EnvName>,
}

/// An environment variable name: a letter or `_`, then letters, digits or `_`.
#[derive(Debug, Clone, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub struct EnvName(String);

impl EnvName {
    /// The name.
    pub fn as_str(&self) -> &str {
        &self.0
    }
}

impl FromStr for EnvName {
    type Err = String;

    fn from_str(text: &str) -> Result<Self, Self::Err> {
        let name = text.trim();
        if let Some((key, _)) = name.split_once('=') {
            return Err(format!(
                "`{name}`: grant a variable by name only (did you mean `{}`?); its value comes from \
                 toolhost's own environment",
                key.trim()
            ));
        }
        let name = name.strip_prefix('$').unwrap_or(name);
        let valid = name.chars().next().is_some_and(|first| first.is_ascii_alphabetic() || first == '_')
            && name.chars().all(|c| c.is_ascii_alphanumeric() || c == '_');
        if valid {
            Ok(EnvName(name.to_owned()))
        } else {
            Err(format!(
                "`{}` is not an environment variable name: use letters, digits and `_`, not \
                 starting with a digit (e.g. `API_KEY`)",
                text.escape_debug()
            ))
        }
    }
}

impl fmt::Display for EnvName {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(&self.0)
    }
}

impl<'de> Deserialize<'de> for EnvName {
    fn deserialize<D: Deserializer<'de>>(deserializer: D) -> Result<Self, D::Error> {
        let text = String::deserialize(deserializer)?;
        text.parse().map_err(serde::de::Error::custom)
    }
}

impl Serialize for EnvName {
    fn serialize<S: Serializer>(&self, serializer: S) -> Result<S::Ok, S::Error> {
        serializer.serialize_str(&self.0)
    }
}

/// A secret value. It cannot be printed, logged or serialized by accident:
/// `Debug` and `Display` show `[secret]`; [`Secret::expose`] is the one way to
/// the value, used only to hand it to the plugin.
#[derive(Clone, PartialEq, Eq)]
pub struct Secret(String);

impl Secret {
    /// Wraps `value`.
    pub fn new(value: impl Into<String>) -> Secret {
        Secret(value.into())
    }

    /// The value itself.
    pub fn expose(&self) -> &str {
        &self.0
    }
}

impl fmt::Debug for Secret {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str("[secret]")
    }
}

impl fmt::Display for Secret {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str("[secret]")
    }
}

/// Secret values are scrubbed from text only when at least this long, so that
/// a one-letter "secret" cannot blank out every such letter of an output.
pub const MIN_REDACTED_LEN: usize = 4;

/// Replaces the values of a plugin's secrets with `[secret NAME]` in text.
///
/// It recognises a value written out as it is, and in JSON (where escapes such
/// as `\u0041`, `\/` or surrogate pairs decode to it): [`Redactor::scrub_json`]
/// scrubs the decoded strings, keys and numbers of a JSON document, so that no
/// later decoding or pretty-printing can bring a value back. Other encodings
/// (base64, URL-encoding, a value split in pieces) are not recognised.
#[derive(Debug, Clone, Default)]
pub struct Redactor {
    /// (name, a text that shows the value), longest first.
    patterns: Vec<(String, Secret)>,
    /// The length in bytes of the longest pattern.
    longest: usize,
}

impl Redactor {
    /// A redactor for `secrets` (name, value).
    pub fn new(secrets: &[(String, Secret)]) -> Redactor {
        let mut patterns = Vec::new();
        for (name, value) in secrets.iter().filter(|(_, value)| value.0.len() >= MIN_REDACTED_LEN) {
            patterns.push((name.clone(), value.clone()));
            // A value that reappears in a host name comes back lower-cased
            // (a URL's host is normalised before it is shown or refused).
            let lower = value.0.to_ascii_lowercase();
            if lower != value.0 {
                patterns.push((name.clone(), Secret(lower)));
            }
            // A value holding JSON escapes (`a\nb`) reappears when the text it
            // decodes to is written out as JSON (`--json`, events, transcripts).
            if value.0.contains('\\')
                && let Ok(decoded) = serde_json::from_str::<String>(&format!("\"{}\"", value.0))
                && decoded != value.0
                && decoded.len() >= MIN_REDACTED_LEN
            {
                patterns.push((name.clone(), Secret(decoded)));
            }
        }
        // Longest first, so a secret that contains another is replaced whole.
        patterns.sort_by_key(|(_, value)| std::cmp::Reverse(value.0.len()));
        let longest = patterns.first().map_or(0, |(_, value)| value.0.len());
        Redactor { patterns, longest }
    }

    /// True when there is nothing to scrub.
    pub fn is_empty(&self) -> bool {
        self.patterns.is_empty()
    }

    /// The length in bytes of the longest text it replaces (0 when none): a
    /// buffer cut anywhere keeps this much more, so no value is cut in two.
    pub fn longest(&self) -> usize {
        self.longest
    }

    /// `text` with every secret value replaced.
    pub fn scrub(&self, text: String) -> String {
        let mut text = text;
        for (name, value) in &self.patterns {
            if text.contains(value.expose()) {
                text = text.replace(value.expose(), &format!("[secret {name}]"));
            }
        }
        text
    }

    /// Scrubs `text` in place.
    pub fn scrub_in_place(&self, text: &mut String) {
        if !self.is_empty() {
            *text = self.scrub(std::mem::take(text));
        }
    }

    /// Scrubs `text` in place; true when it changed.
    fn scrub_changed(&self, text: &mut String) -> bool {
        if self.patterns.iter().any(|(_, value)| text.contains(value.expose())) {
            *text = self.scrub(std::mem::take(text));
            true
        } else {
            false
        }
    }

    /// `text`, a JSON document already parsed into `value`, with every secret
    /// value scrubbed from what it decodes to: each string (keys and values)
    /// and each number as it would be shown. When something changed, the
    /// document is written out again from the scrubbed values, so no escape
    /// (`\u0041`, `\/`, surrogate pairs) can carry a value past the scrubber.
    ///
    /// Fails, naming the secret and never showing it, when the text still
    /// shows a value that cannot be removed without breaking the JSON (a
    /// value spanning a string's quotes, say).
    pub fn scrub_json(&self, text: String, mut value: serde_json::Value) -> Result<String, String> {
        if self.is_empty() {
            return Ok(text);
        }
        let text = if self.scrub_value(&mut value) { value.to_string() } else { text };
        match self.patterns.iter().find(|(_, secret)| text.contains(secret.expose())) {
            None => Ok(text),
            Some((name, _)) => Err(format!(
                "its JSON output shows the value of the secret `{name}` in a way that cannot be removed \
                 without breaking the JSON, so the output is withheld"
            )),
        }
    }

    /// Scrubs every string, key and number in `value`; true when any changed.
    fn scrub_value(&self, value: &mut serde_json::Value) -> bool {
        use serde_json::Value;
        match value {
            Value::String(text) => self.scrub_changed(text),
            Value::Number(number) => {
                let mut shown = number.to_string();
                if self.scrub_changed(&mut shown) {
                    *value = Value::String(shown);
                    true
                } else {
                    false
                }
            }
            Value::Array(items) => items.iter_mut().fold(false, |changed, item| self.scrub_value(item) | changed),
            Value::Object(map) => {
                let keys_change = map.keys().any(|key| self.patterns.iter().any(|(_, v)| key.contains(v.expose())));
                let mut changed = keys_change;
                if keys_change {
                    let old = std::mem::take(map);
                    for (mut key, item) in old {
                        self.scrub_changed(&mut key);
                        map.insert(key, item);
                    }
                }
                for item in map.values_mut() {
                    changed |= self.scrub_value(item);
                }
                changed
            }
            Value::Null | Value::Bool(_) => false,
        }
    }

    /// Where a cut at byte `cut` of `bytes` may safely go so that no secret
    /// value is cut in two: past the end of any value that starts before `cut`
    /// and ends after it (the buffer must hold [`Redactor::longest`] bytes past
    /// `cut` for this to see every such value).
    pub fn safe_cut(&self, bytes: &[u8], cut: usize) -> usize {
        let mut safe = cut;
        loop {
            let before = safe;
            for (_, value) in &self.patterns {
                let value = value.expose().as_bytes();
                let straddling = (before.saturating_sub(value.len() - 1)..before)
                    .map(|start| start + value.len())
                    .filter(|&end| end > before && bytes.get(end - value.len()..end) == Some(value))
                    .max();
                safe = safe.max(straddling.unwrap_or(safe));
            }
            if safe == before {
                return safe;
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn accepts_variable_names() {
        for (text, name) in [("LANG", "LANG"), ("api_key", "api_key"), ("_X1", "_X1"), (" $HOME ", "HOME")] {
            assert_eq!(text.parse::<EnvName>().map(|name| name.0), Ok(name.to_owned()), "{text}");
        }
    }

    #[test]
    fn rejects_malformed_variable_names() {
        let cases = [
            ("", "not an environment variable name"),
            ("1ABC", "not an environment variable name"),
            ("MY-VAR", "not an environment variable name"),
            ("A B", "not an environment variable name"),
            ("API_KEY=abc", "did you mean `API_KEY`?"),
        ];
        for (text, expected) in cases {
            let err = text.parse::<EnvName>().unwrap_err();
            assert!(err.contains(expected), "{text:?}: {err}");
        }
    }

    #[test]
    fn secrets_never_print() {
        let secret = Secret::new("hunter2-very-secret");
        assert_eq!(format!("{secret:?} {secret}"), "[secret] [secret]");
        let pair = ("KEY".to_owned(), secret.clone());
        assert!(!format!("{pair:?}").contains("hunter2"));
        assert_eq!(secret.expose(), "hunter2-very-secret");
    }

    #[test]
    fn the_redactor_scrubs_every_secret_value() {
        let redactor = Redactor::new(&[
            ("KEY".into(), Secret::new("abcd1234")),
            ("LONG".into(), Secret::new("abcd1234-and-more")),
            ("TINY".into(), Secret::new("x")),
        ]);
        assert_eq!(
            redactor.scrub("a abcd1234 b abcd1234-and-more x".into()),
            "a [secret KEY] b [secret LONG] x",
            "longest first; too-short values are left alone"
        );
    }

    #[test]
    fn a_value_lower_cased_in_a_host_name_is_scrubbed_too() {
        let redactor = Redactor::new(&[("KEY".into(), Secret::new("HashSecretValue456"))]);
        assert_eq!(
            redactor.scrub("https://hashsecretvalue456.evil.com:443 and HashSecretValue456".into()),
            "https://[secret KEY].evil.com:443 and [secret KEY]"
        );
    }

    fn token() -> Redactor {
        Redactor::new(&[("TOKEN".into(), Secret::new("tok/3n-\u{1F600}-42")), ("NUM".into(), Secret::new("987654321"))])
    }

    #[test]
    fn scrubs_json_strings_keys_and_numbers_however_they_are_escaped() {
        let redactor = token();
        let cases = [
            (r#"{"a":"\u0074ok/3n-\ud83d\ude00-42"}"#, r#"{"a":"[secret TOKEN]"}"#),
            (r#"{"a":"tok\/3n-\ud83d\ude00-42"}"#, r#"{"a":"[secret TOKEN]"}"#),
            (r#"{"tok/3n-\ud83d\ude00-42":[1]}"#, r#"{"[secret TOKEN]":[1]}"#),
            (r#"[[{"x":"say \"tok/3n-\ud83d\ude00-42\""}]]"#, r#"[[{"x":"say \"[secret TOKEN]\""}]]"#),
            (r#"{"n":987654321}"#, r#"{"n":"[secret NUM]"}"#),
            (r#"{"n":9.87654321e8}"#, r#"{"n":"[secret NUM].0"}"#),
        ];
        for (text, expected) in cases {
            let value = serde_json::from_str(text).unwrap();
            assert_eq!(redactor.scrub_json(text.to_owned(), value).as_deref(), Ok(expected), "{text}");
        }
        let untouched = r#"{ "kept":  "as written" }"#;
        let value = serde_json::from_str(untouched).unwrap();
        assert_eq!(redactor.scrub_json(untouched.to_owned(), value).as_deref(), Ok(untouched));
    }

    #[test]
    fn rejects_json_that_shows_a_secret_across_its_structure() {
        let redactor = Redactor::new(&[("KEY".into(), Secret::new(r#"a","b"#))]);
        let text = r#"["a","b"]"#;
        let err = redactor.scrub_json(text.to_owned(), serde_json::from_str(text).unwrap()).unwrap_err();
        assert!(err.contains("`KEY`") && !err.contains(r#"a","b"#), "{err}");
    }

    #[test]
    fn a_secret_holding_escapes_is_also_scrubbed_where_json_would_spell_it() {
        let redactor = Redactor::new(&[("KEY".into(), Secret::new(r"line\nbreak"))]);
        assert_eq!(redactor.scrub("line\nbreak".into()), "[secret KEY]");
        assert_eq!(redactor.scrub(r"line\nbreak".into()), "[secret KEY]");
    }

    #[test]
    fn a_safe_cut_never_falls_inside_a_secret() {
        let redactor = token();
        let text = b"xxxxx987654321yyyy";
        assert_eq!(redactor.safe_cut(text, 3), 3);
        for cut in 6..14 {
            assert_eq!(redactor.safe_cut(text, cut), 14, "{cut}");
        }
        assert_eq!(redactor.safe_cut(text, 5), 5, "just before it");
        assert_eq!(redactor.longest(), "tok/3n-\u{1F600}-42".len());
    }

    #[test]
    fn resolves_granted_names_and_reports_unset_ones() {
        let grant = EnvGrant {
            names: vec!["LANG".parse().unwrap(), "MISSING".parse().unwrap(), "TOKEN".parse().unwrap()],
            secrets: vec!["TOKEN".parse().unwrap()],
            bound: Vec::new(),
        };
        let lookup = |name: &str| match name {
            "LANG" => Some("C.UTF-8".to_owned()),
            "TOKEN" => Some("t0ken-value".to_owned()),
            _ => None,
        };
        let ResolvedEnv { vars, secrets, unset } = grant.resolve(lookup);
        assert_eq!(vars, [("LANG".to_owned(), "C.UTF-8".to_owned())], "TOKEN is granted as a secret only");
        assert_eq!(secrets.len(), 1);
        assert_eq!(secrets[0].1.expose(), "t0ken-value");
        assert_eq!(unset, ["MISSING".parse::<EnvName>().unwrap()]);
    }

    #[test]
    fn a_secret_is_a_name_or_a_name_with_the_hosts_it_may_go_to() {
        let entries: Vec<SecretEntry> = serde_json::from_str(
            r#"["PLAIN", {"name": "KEY", "to": ["https://api.example.com", "http://127.0.0.1:8080"]},
               {"name": "ONE", "to": "https://one.example"}, {"name": "NOWHERE", "to": []}]"#,
        )
        .unwrap();
        assert_eq!(entries[0], SecretEntry { name: "PLAIN".parse().unwrap(), to: None });
        assert_eq!(entries[1].to.as_ref().unwrap().len(), 2);
        assert_eq!(entries[2].to.as_ref().unwrap()[0].to_string(), "https://one.example");
        assert_eq!(entries[3].to, Some(Vec::new()));
        for (bad, says) in [
            (r#"[{"name": "KEY", "to": ["api.example.com"]}]"#, "did you mean `https://api.example.com`?"),
            (r#"[{"name": "KEY", "to": ["https://api.example.com/v1"]}]"#, "names a path"),
            (r#"[{"name": "1KEY", "to": []}]"#, "not an environment variable name"),
            (r#"[{"name": "KEY", "hosts": []}]"#, "a secret is a variable name"),
            (r#"[{"name": "KEY"}]"#, "a secret is a variable name"),
        ] {
            let err = serde_json::from_str::<Vec<SecretEntry>>(bad).unwrap_err().to_string();
            assert!(err.contains(says), "{bad}: {err}");
        }
    }
}

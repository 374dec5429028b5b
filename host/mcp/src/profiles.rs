//! Which tools `serve` offers: `[serve] tools` (the server's own subset)
//! and `[serve.profiles.NAME]` (a client's subset of that), each an include
//! and an exclude list of tool names, plugin names (or MCP server names with
//! `--include-mcp`) and glob patterns (`*`, `?`).
//!
//! A profile is picked for a request in one place, [`Profiles::pick`]: the
//! `--profile NAME` of stdio, the `/mcp/NAME` path of HTTP, or, with
//! `[serve.oauth]`, the token (its subject, client or scopes). A profile
//! that names subjects, clients or scopes *binds* the tokens it matches: such
//! a token is served that profile and no other (a path naming another is
//! refused), so an operator can pin a client to its subset whatever URL it
//! uses.
//!
//! What a request's profile leaves out is neither listed nor callable: the
//! handler answers a call of it exactly as of a tool nobody offers. A
//! plugin's resources, templates, prompts and completions go with the plugin
//! name: they are offered when the plugin's name passes the profile (naming
//! only some of its tools does not bring them).

use serde::Deserialize;
use std::collections::{BTreeMap, BTreeSet};
use std::sync::Arc;
use toolhost_catalog::Catalog;

/// `[serve] tools`, and the tool part of a profile.
#[derive(Debug, Clone, Default, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct ToolFilter {
    /// Offered: tools whose name, or whose plugin's name, matches one of
    /// these (every tool when empty).
    #[serde(default)]
    pub include: Vec<String>,
    /// Then left out: tools whose name, or whose plugin's name, matches one of these.
    #[serde(default)]
    pub exclude: Vec<String>,
}

/// `[serve.profiles.NAME]`.
#[derive(Debug, Clone, Default, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct ProfileConfig {
    #[serde(default)]
    pub include: Vec<String>,
    #[serde(default)]
    pub exclude: Vec<String>,
    /// With `[serve.oauth]`: tokens whose subject (`sub`) is one of these get this profile.
    #[serde(default)]
    pub subjects: Vec<String>,
    /// With `[serve.oauth]`: tokens issued to one of these clients (`client_id`, else `azp`) get it.
    #[serde(default)]
    pub clients: Vec<String>,
    /// With `[serve.oauth]`: tokens granted one of these scopes get it.
    #[serde(default)]
    pub scopes: Vec<String>,
}

/// A name or a glob pattern of an include or exclude list.
#[derive(Debug, Clone)]
struct Pattern(String);

impl Pattern {
    fn is_glob(&self) -> bool {
        self.0.contains(['*', '?'])
    }

    fn matches(&self, name: &str) -> bool {
        glob_matches(self.0.as_bytes(), name.as_bytes())
    }
}

/// `*` matches any run of characters (none too), `?` exactly one byte;
/// everything else itself. Linear in practice: the classic backtracking
/// to the last star, never exponential.
fn glob_matches(pattern: &[u8], name: &[u8]) -> bool {
    let (mut p, mut n) = (0, 0);
    let mut star: Option<(usize, usize)> = None;
    while n < name.len() {
        match pattern.get(p) {
            Some(b'*') => {
                star = Some((p, n));
                p += 1;
            }
            Some(&c) if c == b'?' || c == name[n] => {
                p += 1;
                n += 1;
            }
            _ => match star {
                Some((star_p, star_n)) => {
                    p = star_p + 1;
                    n = star_n + 1;
                    star = Some((star_p, star_n + 1));
                }
                None => return false,
            },
        }
    }
    pattern[p..].iter().all(|&c| c == b'*')
}

/// An include and an exclude list, checked.
#[derive(Debug, Clone, Default)]
struct Filter {
    include: Vec<Pattern>,
    exclude: Vec<Pattern>,
}

impl Filter {
    fn new(what: &str, include: &[String], exclude: &[String]) -> anyhow::Result<Filter> {
        let check = |list: &[String], field: &str| -> anyhow::Result<Vec<Pattern>> {
            list.iter()
                .map(|entry| {
                    let bad = entry.is_empty()
                        || entry.len() > 256
                        || entry.chars().any(|c| c.is_whitespace() || c.is_control() || c == '/');
                    if bad {
                        anyhow::bail!(
                            "{what} {field}: `{}` is not a tool name, plugin name or pattern (no spaces, slashes or \
                             control characters; `*` and `?` are the wildcards)",
                            entry.escape_debug()
                        );
                    }
                    Ok(Pattern(entry.clone()))
                })
                .collect()
        };
        Ok(Filter { include: check(include, "include")?, exclude: check(exclude, "exclude")? })
    }

    fn matches(list: &[Pattern], tool: &str, origin: &str) -> bool {
        list.iter().any(|pattern| pattern.matches(tool) || pattern.matches(origin))
    }

    fn allows(&self, tool: &str, origin: &str) -> bool {
        (self.include.is_empty() || Filter::matches(&self.include, tool, origin))
            && !Filter::matches(&self.exclude, tool, origin)
    }

    fn allows_plugin(&self, plugin: &str) -> bool {
        (self.include.is_empty() || self.include.iter().any(|pattern| pattern.matches(plugin)))
            && !self.exclude.iter().any(|pattern| pattern.matches(plugin))
    }

    fn patterns(&self) -> impl Iterator<Item = &Pattern> {
        self.include.iter().chain(&self.exclude)
    }
}

/// What one request is offered: `[serve] tools`, narrowed by its profile if any.
#[derive(Debug, Clone, Default)]
pub struct Profile {
    /// The profile's name (`None`: `[serve] tools` alone).
    name: Option<Arc<str>>,
    base: Filter,
    own: Filter,
}

impl Profile {
    /// Whether the tool `tool` of `origin` (its plugin or MCP server) is offered.
    pub fn allows(&self, tool: &str, origin: &str) -> bool {
        self.base.allows(tool, origin) && self.own.allows(tool, origin)
    }

    /// Whether what plugin `plugin` offers besides tools (resources,
    /// templates, prompts, completions) is offered.
    pub fn allows_plugin(&self, plugin: &str) -> bool {
        self.base.allows_plugin(plugin) && self.own.allows_plugin(plugin)
    }

    /// The profile's name, if it is one.
    pub fn name(&self) -> Option<&str> {
        self.name.as_deref()
    }

    /// Whether it offers everything (nothing to filter).
    pub fn is_everything(&self) -> bool {
        self.base.patterns().next().is_none() && self.own.patterns().next().is_none()
    }
}

/// Who a token is for, as [`Profiles::pick`] matches profiles to it.
#[derive(Debug, Clone, Default)]
pub struct TokenFacts<'a> {
    pub subject: &'a str,
    pub client: Option<&'a str>,
    pub scopes: Option<&'a BTreeSet<String>>,
}

/// Why no profile serves a request (HTTP answers `status` with `message`).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Refusal {
    pub status: u16,
    pub message: String,
}

/// `[serve] tools` and every `[serve.profiles.NAME]`, checked.
#[derive(Debug, Default)]
pub struct Profiles {
    base: Arc<Profile>,
    named: BTreeMap<String, (Arc<Profile>, ProfileConfig)>,
}

impl Profiles {
    /// Checks the config: patterns, profile names, and that only a server
    /// with `[serve.oauth]` matches profiles to tokens.
    pub fn new(
        tools: Option<&ToolFilter>,
        profiles: &BTreeMap<String, ProfileConfig>,
        oauth: bool,
    ) -> anyhow::Result<Profiles> {
        let tools = tools.cloned().unwrap_or_default();
        let base_filter = Filter::new("[serve] tools", &tools.include, &tools.exclude)?;
        let base = Arc::new(Profile { name: None, base: base_filter.clone(), own: Filter::default() });
        let mut named = BTreeMap::new();
        for (name, config) in profiles {
            let valid = !name.is_empty()
                && name.len() <= 64
                && name.bytes().all(|b| b.is_ascii_alphanumeric() || b == b'-' || b == b'_' || b == b'.');
            if !valid {
                anyhow::bail!(
                    "[serve.profiles.{}]: a profile name is 1 to 64 letters, digits, `-`, `_` or `.` (it is a URL \
                     path segment: /mcp/NAME)",
                    name.escape_debug()
                );
            }
            let what = format!("[serve.profiles.{name}]");
            let own = Filter::new(&what, &config.include, &config.exclude)?;
            let binds = !(config.subjects.is_empty() && config.clients.is_empty() && config.scopes.is_empty());
            if binds && !oauth {
                anyhow::bail!(
                    "{what} matches tokens (subjects, clients or scopes) but [serve.oauth] is not set: without \
                     OAuth there is no token to match; pick the profile with /mcp/{name} or --profile {name}"
                );
            }
            let profile = Profile { name: Some(Arc::from(name.as_str())), base: base_filter.clone(), own };
            named.insert(name.clone(), (Arc::new(profile), config.clone()));
        }
        Ok(Profiles { base, named })
    }

    /// Every named profile, by name (for the operator's page).
    pub fn all(&self) -> impl Iterator<Item = (&str, &Arc<Profile>)> {
        self.named.iter().map(|(name, (profile, _))| (name.as_str(), profile))
    }

    /// The profile named `name` (`--profile`), or why not.
    pub fn named(&self, name: &str) -> anyhow::Result<Arc<Profile>> {
        match self.named.get(name) {
            Some((profile, _)) => Ok(profile.clone()),
            None => anyhow::bail!("there is no profile `{name}`: {}", self.known()),
        }
    }

    fn known(&self) -> String {
        if self.named.is_empty() {
            "the config has no [serve.profiles.NAME]".to_owned()
        } else {
            let names: Vec<&str> = self.named.keys().map(String::as_str).collect();
            format!("the config's profiles are {}", names.join(", "))
        }
    }

    /// The profile of a request: `path` is the `NAME` of `/mcp/NAME` (or
    /// `--profile`), `token` who the request's token is for (`[serve.oauth]`).
    pub fn pick(&self, path: Option<&str>, token: Option<&TokenFacts<'_>>) -> Result<Arc<Profile>, Refusal> {
        let bound: Vec<&str> = match token {
            Some(token) => self
                .named
                .iter()
                .filter(|(_, (_, config))| token_matches(config, token))
                .map(|(name, _)| name.as_str())
                .collect(),
            None => Vec::new(),
        };
        match path {
            Some(name) => {
                // With OAuth, callers are different people: one learns
                // neither the other profiles' names nor whether a profile
                // not for it exists (both are the same 404). With the static
                // token (one operator's clients) the 404 lists them.
                let unknown = || Refusal {
                    status: 404,
                    message: match token {
                        Some(_) => format!("Not Found: this server offers this token no profile `{name}`"),
                        None => format!("Not Found: {}", self.known()),
                    },
                };
                let Some((profile, config)) = self.named.get(name) else {
                    return Err(unknown());
                };
                let binds = !(config.subjects.is_empty() && config.clients.is_empty() && config.scopes.is_empty());
                if (binds || !bound.is_empty()) && !bound.contains(&name) {
                    let Some(first) = bound.first() else { return Err(unknown()) };
                    return Err(Refusal {
                        status: 403,
                        message: format!(
                            "Forbidden: this token is bound to the profile{} {}; connect to /mcp/{first}",
                            if bound.len() == 1 { "" } else { "s" },
                            bound.join(", "),
                        ),
                    });
                }
                Ok(profile.clone())
            }
            None => match bound.as_slice() {
                [] => Ok(self.base.clone()),
                [one] => Ok(self.named[*one].0.clone()),
                names => Err(Refusal {
                    status: 403,
                    message: format!(
                        "Forbidden: this token matches the profiles {}: connect to one of {}",
                        names.join(", "),
                        names.iter().map(|name| format!("/mcp/{name}")).collect::<Vec<_>>().join(", ")
                    ),
                }),
            },
        }
    }

    /// The entries that match nothing in `catalog`: exact names in an
    /// include list (the first list: a config error at start, since a typo
    /// would quietly offer less), and patterns or exclude entries (the
    /// second: warnings, since excluding a plugin before it is installed is
    /// a fair thing to do). After a reload all are warnings: a plugin may
    /// come back.
    pub fn unmatched(&self, catalog: &Catalog) -> (Vec<String>, Vec<String>) {
        let mut names: BTreeSet<&str> = BTreeSet::new();
        for entry in catalog.tools() {
            names.insert(entry.name());
            names.insert(entry.origin());
        }
        for plugin in catalog.plugins() {
            names.insert(&plugin.name);
        }
        let mut unknown = Vec::new();
        let mut empty = Vec::new();
        let lists = std::iter::once(("[serve] tools".to_owned(), &self.base.base))
            .chain(self.named.iter().map(|(name, (profile, _))| (format!("[serve.profiles.{name}]"), &profile.own)));
        for (what, filter) in lists {
            let lists = [("include", &filter.include), ("exclude", &filter.exclude)];
            for (field, patterns) in lists {
                for pattern in patterns {
                    if names.iter().any(|name| pattern.matches(name)) {
                        continue;
                    }
                    if pattern.is_glob() {
                        empty.push(format!("{what} {field}: the pattern `{}` matches no tool or plugin", pattern.0));
                    } else if field == "exclude" {
                        empty.push(format!(
                            "{what} exclude: `{}` is not the name of a loaded tool or plugin",
                            pattern.0
                        ));
                    } else {
                        unknown.push(format!(
                            "{what} include: `{}` is not the name of a loaded tool or plugin",
                            pattern.0
                        ));
                    }
                }
            }
        }
        (unknown, empty)
    }
}

fn token_matches(config: &ProfileConfig, token: &TokenFacts<'_>) -> bool {
    config.subjects.iter().any(|subject| subject == token.subject)
        || token.client.is_some_and(|client| config.clients.iter().any(|c| c == client))
        || token.scopes.is_some_and(|scopes| config.scopes.iter().any(|scope| scopes.contains(scope)))
}

#[cfg(test)]
mod tests {
    use super::*;

    fn filter(include: &[&str], exclude: &[&str]) -> ToolFilter {
        ToolFilter {
            include: include.iter().map(|s| s.to_string()).collect(),
            exclude: exclude.iter().map(|s| s.to_string()).collect(),
        }
    }

    #[test]
    fn globs_match_whole_names() {
        assert!(glob_matches(b"tool_*", b"tool_001"));
        assert!(glob_matches(b"*_001", b"tool_001"));
        assert!(glob_matches(b"t?ol_*1", b"tool_001"));
        assert!(glob_matches(b"*", b""));
        assert!(!glob_matches(b"tool", b"tool_001"));
        assert!(!glob_matches(b"tool_?", b"tool_01"));
        assert!(glob_matches(b"a*b*c", b"aXbYbZc"));
        assert!(!glob_matches(b"a*b*c", b"aXbYbZ"));
        // No blow-up on many stars.
        let name = "a".repeat(200);
        assert!(!glob_matches("*a*a*a*a*a*a*a*a*a*a*b".as_bytes(), name.as_bytes()));
    }

    #[test]
    fn a_profile_narrows_the_servers_own_subset() {
        let mut profiles = BTreeMap::new();
        profiles.insert(
            "reader".to_owned(),
            ProfileConfig { include: vec!["hash".into(), "fetch_*".into()], ..Default::default() },
        );
        let all = Profiles::new(Some(&filter(&[], &["fetch_secret", "admin"])), &profiles, false).unwrap();
        let base = all.pick(None, None).unwrap();
        assert!(base.allows("sha256", "hash"));
        assert!(!base.allows("fetch_secret", "fetch"));
        assert!(!base.allows("anything", "admin"));
        assert!(!base.allows_plugin("admin"));
        let reader = all.pick(Some("reader"), None).unwrap();
        assert!(reader.allows("sha256", "hash"), "by plugin name");
        assert!(reader.allows("fetch_page", "fetch"), "by pattern");
        assert!(!reader.allows("fetch_secret", "fetch"), "the server's exclude still holds");
        assert!(!reader.allows("spin", "spin_forever"));
        assert!(reader.allows_plugin("hash") && !reader.allows_plugin("fetch"));
        assert_eq!(all.pick(Some("nope"), None).unwrap_err().status, 404);
    }

    #[test]
    fn tokens_are_bound_to_the_profiles_they_match() {
        let mut profiles = BTreeMap::new();
        profiles.insert("open".to_owned(), ProfileConfig::default());
        profiles.insert("ci".to_owned(), ProfileConfig { clients: vec!["ci-bot".into()], ..Default::default() });
        profiles.insert("ops".to_owned(), ProfileConfig { scopes: vec!["ops".into()], ..Default::default() });
        assert!(Profiles::new(None, &profiles, false).unwrap_err().to_string().contains("[serve.oauth] is not set"));
        let all = Profiles::new(None, &profiles, true).unwrap();
        let scopes: BTreeSet<String> = ["ops".to_owned()].into();
        let ci = TokenFacts { subject: "s", client: Some("ci-bot"), scopes: None };
        let ops = TokenFacts { subject: "s", client: None, scopes: Some(&scopes) };
        let both = TokenFacts { subject: "s", client: Some("ci-bot"), scopes: Some(&scopes) };
        let nobody = TokenFacts { subject: "s", client: None, scopes: None };
        assert_eq!(all.pick(None, Some(&ci)).unwrap().name(), Some("ci"));
        assert_eq!(all.pick(Some("open"), Some(&ci)).unwrap_err().status, 403);
        assert_eq!(all.pick(Some("ops"), Some(&ci)).unwrap_err().status, 403);
        // A profile not for a token bound to none is, for it, not there: the
        // same 404 as a name no profile has, naming no other profile.
        let hidden = all.pick(Some("ops"), Some(&nobody)).unwrap_err();
        let unknown = all.pick(Some("nope"), Some(&nobody)).unwrap_err();
        assert_eq!((hidden.status, unknown.status), (404, 404));
        assert!(!hidden.message.contains("ci") && !unknown.message.contains("ops"), "{}", unknown.message);
        assert_eq!(all.pick(Some("open"), Some(&nobody)).unwrap().name(), Some("open"));
        assert_eq!(all.pick(None, Some(&nobody)).unwrap().name(), None);
        assert_eq!(all.pick(None, Some(&ops)).unwrap().name(), Some("ops"));
        assert!(all.pick(None, Some(&both)).unwrap_err().message.contains("/mcp/ci, /mcp/ops"));
        assert_eq!(all.pick(Some("ci"), Some(&both)).unwrap().name(), Some("ci"));
    }

    #[test]
    fn bad_entries_and_names_are_config_errors() {
        let bad = Profiles::new(Some(&filter(&["has space"], &[])), &BTreeMap::new(), false).unwrap_err();
        assert!(bad.to_string().contains("`has space`"), "{bad}");
        let mut profiles = BTreeMap::new();
        profiles.insert("a/b".to_owned(), ProfileConfig::default());
        assert!(Profiles::new(None, &profiles, false).is_err());
    }
}

//! Credentials the host adds to a plugin's HTTP requests, so the plugin never
//! holds them.
//!
//! An operator binds a destination (an entry as in `http`) to a credential
//! whose value comes from toolhost's environment or a file:
//!
//! ```toml
//! [[plugins.weather.credentials]]
//! to = "https://api.weather.example"
//! bearer = { env = "WEATHER_TOKEN" }          # Authorization: Bearer …
//!
//! [[plugins.weather.credentials]]
//! to = "https://tiles.example"
//! query = "appid"                             # ?appid=… on the request's URL
//! value = { file = "/run/secrets/tiles" }
//! ```
//!
//! The other forms are `basic = { user = "…", password = SOURCE }`, `header =
//! "X-Api-Key"` with `value = SOURCE`, and `oauth2 = { token_url = "…",
//! client_id = SOURCE, client_secret = SOURCE, scopes = [ … ] }` (the OAuth 2.0
//! client-credentials grant, run by the host). A SOURCE is `{ env = "NAME" }`
//! or `{ file = "PATH" }`. A credential's destination is reachable by the
//! plugin without being repeated in `http`. Plain HTTP to anything but this
//! machine needs `allow_http = true`, since the value would cross the network
//! in clear text.
//!
//! Values are read once, when the plugin loads ([`Credential::resolve`]); the
//! runtime adds them to matching requests only, and scrubs them from what the
//! response carries back to the plugin.

use crate::env::{EnvName, Secret};
use crate::network::{Host, HostPattern, Scheme};
use base64::Engine as _;
use serde::Deserialize;
use std::fmt;
use std::path::PathBuf;
use std::sync::{Arc, Mutex};
use std::time::Instant;

/// The largest credential file read.
const FILE_LIMIT: u64 = 64 << 10;

/// One credential bound to a destination, as configured.
#[derive(Debug, Clone, PartialEq, Eq, Deserialize)]
#[serde(try_from = "Table")]
pub struct Credential {
    /// The requests it is added to.
    pub to: HostPattern,
    /// What is added, and from where its value comes.
    pub kind: Kind,
}

/// What a credential adds to a request.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Kind {
    /// `Authorization: Bearer VALUE`.
    Bearer(Source),
    /// `Authorization: Basic base64(USER:PASSWORD)`.
    Basic {
        /// The user name.
        user: User,
        /// The password.
        password: Source,
    },
    /// A header of this name with the value as it is.
    Header {
        /// The header's name.
        name: String,
        /// Its value.
        value: Source,
    },
    /// A query parameter of this name.
    Query {
        /// The parameter's name.
        name: String,
        /// Its value.
        value: Source,
    },
    /// A bearer token from an OAuth 2.0 token endpoint (client credentials).
    OAuth2(OAuth2),
}

/// The OAuth 2.0 client-credentials grant, as configured.
#[derive(Debug, Clone, PartialEq, Eq, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct OAuth2 {
    /// The token endpoint.
    pub token_url: TokenUrl,
    /// The client's id.
    pub client_id: Source,
    /// The client's secret.
    pub client_secret: Source,
    /// The scopes asked for (none: the server's default).
    #[serde(default)]
    pub scopes: Vec<String>,
}

/// A token endpoint: `https://…`, or `http://` to this machine, read by the
/// URL parser ([`crate::names::Endpoint`]), so the host checked is the host
/// the request goes to.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct TokenUrl(String);

impl TokenUrl {
    /// The URL, as the parser normalized it.
    pub fn as_str(&self) -> &str {
        &self.0
    }
}

impl std::str::FromStr for TokenUrl {
    type Err = String;

    fn from_str(text: &str) -> Result<TokenUrl, String> {
        let endpoint = crate::names::Endpoint::parse(text).map_err(|why| format!("`token_url`: {why}"))?;
        if !endpoint.is_private_channel() {
            return Err(format!(
                "`token_url = \"{}\"`: a token endpoint must be `https://…` (or plain `http://` to this \
                 machine), since the client secret is sent to it",
                text.trim().escape_debug()
            ));
        }
        Ok(TokenUrl(endpoint.url))
    }
}

impl<'de> Deserialize<'de> for TokenUrl {
    fn deserialize<D: serde::Deserializer<'de>>(deserializer: D) -> Result<Self, D::Error> {
        String::deserialize(deserializer)?.parse().map_err(serde::de::Error::custom)
    }
}

/// Where a value comes from: `{ env = "NAME" }` or `{ file = "PATH" }`.
#[derive(Debug, Clone, PartialEq, Eq, Deserialize)]
#[serde(rename_all = "snake_case", deny_unknown_fields)]
pub enum Source {
    /// toolhost's environment variable.
    Env(EnvName),
    /// A file (its content, without the trailing line break); relative
    /// paths are resolved against the config file's folder.
    File(PathBuf),
}

impl fmt::Display for Source {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Source::Env(name) => write!(f, "${name}"),
            Source::File(path) => write!(f, "file {}", path.display()),
        }
    }
}

impl Source {
    /// The name the value is scrubbed under: `[secret NAME]`.
    fn label(&self) -> String {
        match self {
            Source::Env(name) => name.to_string(),
            Source::File(path) => path.file_name().map_or("credential".into(), |name| name.to_string_lossy().into()),
        }
    }

    /// Reads the value (env from `lookup`), or says why it cannot be had.
    fn read(&self, lookup: &dyn Fn(&str) -> Option<String>) -> Result<Secret, String> {
        let value = match self {
            Source::Env(name) => {
                lookup(name.as_str()).ok_or_else(|| format!("`{name}` is not set in toolhost's environment"))?
            }
            Source::File(path) => crate::readfile::read_regular_text(path, FILE_LIMIT)
                .map_err(|err| format!("{} cannot be read: {err}", path.display()))?
                .trim_end_matches(['\n', '\r'])
                .to_owned(),
        };
        if value.is_empty() {
            return Err(format!("{self} is empty"));
        }
        if value.chars().any(char::is_control) {
            return Err(format!("{self} holds control characters, which cannot go in a request"));
        }
        Ok(Secret::new(value))
    }
}

/// A basic-auth user name: written out, or from a [`Source`].
#[derive(Debug, Clone, PartialEq, Eq, Deserialize)]
#[serde(untagged)]
pub enum User {
    /// The name itself.
    Plain(String),
    /// The name from the environment or a file.
    From(Source),
}

#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
struct Basic {
    user: User,
    password: Source,
}

/// `[[plugins.NAME.credentials]]` as written.
#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
struct Table {
    to: HostPattern,
    bearer: Option<Source>,
    basic: Option<Basic>,
    header: Option<String>,
    query: Option<String>,
    value: Option<Source>,
    oauth2: Option<OAuth2>,
    #[serde(default)]
    allow_http: bool,
}

const FORMS: &str = "write one of `bearer = { env = \"NAME\" }`, `basic = { user = \"…\", password = { env = \
                     \"NAME\" } }`, `header = \"X-Api-Key\"` or `query = \"key\"` with `value = { env = \"NAME\" \
                     }`, or `oauth2 = { token_url = \"https://…\", client_id = …, client_secret = … }` (a value \
                     may also be `{ file = \"PATH\" }`)";

impl TryFrom<Table> for Credential {
    type Error = String;

    fn try_from(table: Table) -> Result<Credential, String> {
        let to = table.to;
        let forms = [table.bearer.is_some(), table.basic.is_some(), table.header.is_some(), table.query.is_some()];
        let count = forms.iter().filter(|set| **set).count() + usize::from(table.oauth2.is_some());
        if count != 1 {
            let what = if count == 0 { "says nothing to add" } else { "gives more than one way to add it" };
            return Err(format!("the credential for `{to}` {what}: {FORMS}"));
        }
        let needs_value = table.header.is_some() || table.query.is_some();
        if needs_value != table.value.is_some() {
            let why = if needs_value { "needs a `value`" } else { "has a `value` but no `header` or `query`" };
            return Err(format!("the credential for `{to}` {why}: {FORMS}"));
        }
        let kind = if let Some(source) = table.bearer {
            Kind::Bearer(source)
        } else if let Some(basic) = table.basic {
            Kind::Basic { user: basic.user, password: basic.password }
        } else if let Some(name) = table.header {
            Kind::Header { name: header_name(&name)?, value: table.value.expect("checked") }
        } else if let Some(name) = table.query {
            Kind::Query { name: query_name(&name)?, value: table.value.expect("checked") }
        } else {
            Kind::OAuth2(table.oauth2.expect("counted"))
        };
        if to.host == Host::Any {
            return Err(format!(
                "the credential for `{to}` would go to every host: name the host it is for (`*.example.com` covers \
                 a domain's hosts)"
            ));
        }
        if to.scheme == Scheme::Http && !table.allow_http && !local(&to) {
            return Err(format!(
                "the credential for `{to}` would cross the network in clear text over plain HTTP: use `https://`, \
                 or add `allow_http = true` to the credential if that is intended"
            ));
        }
        Ok(Credential { to, kind })
    }
}

/// Whether `pattern` names only this machine (its host is canonical, so
/// every spelling of a loopback address is one).
fn local(pattern: &HostPattern) -> bool {
    match &pattern.host {
        Host::Ip(ip) => crate::names::CanonicalHost::Ip(*ip).is_loopback(),
        Host::Name(name) => crate::names::CanonicalHost::Name(name.clone()).is_loopback(),
        Host::Any | Host::Subdomains(_) => false,
    }
}

/// Headers the host itself sets, which a credential may not replace.
const RESERVED_HEADERS: [&str; 6] = ["host", "content-length", "transfer-encoding", "connection", "upgrade", "te"];

fn header_name(name: &str) -> Result<String, String> {
    let valid =
        !name.is_empty() && name.bytes().all(|byte| byte.is_ascii_alphanumeric() || b"!#$%&'*+-.^_`|~".contains(&byte));
    if !valid {
        return Err(format!("`header = \"{}\"` is not a header name", name.escape_debug()));
    }
    if RESERVED_HEADERS.contains(&name.to_ascii_lowercase().as_str()) {
        return Err(format!("`header = \"{name}\"`: toolhost sets that header itself"));
    }
    Ok(name.to_owned())
}

fn query_name(name: &str) -> Result<String, String> {
    let valid = !name.is_empty() && name.bytes().all(|byte| byte.is_ascii_alphanumeric() || b"-._~".contains(&byte));
    if valid {
        Ok(name.to_owned())
    } else {
        Err(format!(
            "`query = \"{}\"` is not a plain parameter name (letters, digits, `-`, `.`, `_`, `~`)",
            name.escape_debug()
        ))
    }
}

impl fmt::Display for Credential {
    /// What is added where, never a value: `bearer token from $X → https://api`.
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match &self.kind {
            Kind::Bearer(source) => write!(f, "bearer token from {source}")?,
            Kind::Basic { password, .. } => write!(f, "basic auth, password from {password}")?,
            Kind::Header { name, value } => write!(f, "header {name} from {value}")?,
            Kind::Query { name, value } => write!(f, "query parameter {name} from {value}")?,
            Kind::OAuth2(oauth) => write!(f, "OAuth 2.0 token from {}", oauth.token_url.as_str())?,
        }
        write!(f, " → {}", self.to)
    }
}

/// A credential with its values read, as each request uses it.
#[derive(Debug)]
pub struct Injection {
    /// The requests it is added to.
    pub to: HostPattern,
    /// What is added, or why it cannot be.
    pub add: Add,
}

/// What an [`Injection`] adds.
#[derive(Debug)]
pub enum Add {
    /// A header (`Authorization` for bearer and basic) and its value.
    Header {
        /// The header's name.
        name: String,
        /// The whole value, e.g. `Bearer …`.
        value: Secret,
    },
    /// A query parameter.
    Query {
        /// Its name.
        name: String,
        /// Its value (not yet URL-encoded).
        value: Secret,
    },
    /// A bearer token fetched from a token endpoint, and kept until it expires.
    OAuth2 {
        /// The token endpoint.
        token_url: String,
        /// The client's id.
        client_id: Secret,
        /// The client's secret.
        client_secret: Secret,
        /// The scopes asked for.
        scopes: Vec<String>,
        /// The current token and when it stops being used.
        token: Arc<Mutex<Option<(Secret, Instant)>>>,
    },
    /// The value could not be read at load: requests there are refused.
    Unavailable(String),
}

impl Credential {
    /// The files its values are read from.
    pub fn files(&self) -> Vec<&std::path::Path> {
        let sources: Vec<&Source> = match &self.kind {
            Kind::Bearer(source) => vec![source],
            Kind::Basic { user: User::From(user), password } => vec![user, password],
            Kind::Basic { password, .. } => vec![password],
            Kind::Header { value, .. } | Kind::Query { value, .. } => vec![value],
            Kind::OAuth2(oauth) => vec![&oauth.client_id, &oauth.client_secret],
        };
        sources
            .into_iter()
            .filter_map(|source| match source {
                Source::File(path) => Some(path.as_path()),
                Source::Env(_) => None,
            })
            .collect()
    }

    /// Reads the credential's values (environment from `lookup`, files from
    /// disk). Also returns the raw values, named, for the plugin's scrubber.
    pub fn resolve(&self, lookup: &dyn Fn(&str) -> Option<String>) -> (Injection, Vec<(String, Secret)>) {
        let mut raw = Vec::new();
        let mut encoded_forms = Vec::new();
        let mut read = |source: &Source| {
            let value = source.read(lookup)?;
            raw.push((source.label(), value.clone()));
            Ok::<Secret, String>(value)
        };
        // What toolhost itself encodes from the values (HTTP Basic's base64
        // of `USER:PASSWORD`) is as secret as they are: a server that echoes
        // the request's `Authorization` must not hand it back readable.
        let mut basic = |label: String, user: &str, password: &str| {
            for form in basic_forms(user, password) {
                encoded_forms.push((label.clone(), Secret::new(form)));
            }
        };
        let add = (|| -> Result<Add, String> {
            Ok(match &self.kind {
                Kind::Bearer(source) => Add::Header {
                    name: "Authorization".into(),
                    value: Secret::new(format!("Bearer {}", read(source)?.expose())),
                },
                Kind::Basic { user, password } => {
                    let user = match user {
                        User::Plain(name) => name.clone(),
                        User::From(source) => read(source)?.expose().to_owned(),
                    };
                    let secret = read(password)?;
                    basic(password.label(), &user, secret.expose());
                    let encoded =
                        base64::engine::general_purpose::STANDARD.encode(format!("{user}:{}", secret.expose()));
                    Add::Header { name: "Authorization".into(), value: Secret::new(format!("Basic {encoded}")) }
                }
                Kind::Header { name, value } => Add::Header { name: name.clone(), value: read(value)? },
                Kind::Query { name, value } => Add::Query { name: name.clone(), value: read(value)? },
                Kind::OAuth2(oauth) => {
                    let client_id = read(&oauth.client_id)?;
                    let client_secret = read(&oauth.client_secret)?;
                    // RFC 6749 §2.3.1: both form-encoded, then HTTP Basic.
                    basic(
                        oauth.client_secret.label(),
                        &percent_encode(client_id.expose()),
                        &percent_encode(client_secret.expose()),
                    );
                    Add::OAuth2 {
                        token_url: oauth.token_url.as_str().to_owned(),
                        client_id,
                        client_secret,
                        scopes: oauth.scopes.clone(),
                        token: Arc::default(),
                    }
                }
            })
        })();
        raw.extend(encoded_forms);
        let add =
            add.unwrap_or_else(|why| Add::Unavailable(format!("the credential for {} is unavailable: {why}", self.to)));
        (Injection { to: self.to.clone(), add }, raw)
    }
}

/// The base64 forms of HTTP Basic's `USER:PASSWORD` a response could echo:
/// standard and URL-safe alphabets, without padding (so each also masks the
/// padded form, which it begins).
pub fn basic_forms(user: &str, password: &str) -> Vec<String> {
    use base64::engine::general_purpose::{STANDARD_NO_PAD, URL_SAFE_NO_PAD};
    let pair = format!("{user}:{password}");
    let mut forms = vec![STANDARD_NO_PAD.encode(&pair), URL_SAFE_NO_PAD.encode(&pair)];
    forms.dedup();
    forms
}

/// `value` with everything but unreserved characters percent-encoded
/// (upper-case hex, RFC 3986): how a credential goes into a query or a form.
pub fn percent_encode(value: &str) -> String {
    let mut out = String::with_capacity(value.len());
    for byte in value.bytes() {
        if byte.is_ascii_alphanumeric() || b"-._~".contains(&byte) {
            out.push(byte as char);
        } else {
            out.push_str(&format!("%{byte:02X}"));
        }
    }
    out
}

//! `serve --http` as an OAuth 2.1 resource server (MCP 2026-07-28
//! authorization; RFC 9728 protected resource metadata, RFC 6750 bearer
//! tokens, RFC 8707 audiences).
//!
//! Every `/mcp` request carries a JWT access token from the configured
//! issuer. It is checked here, before rmcp sees the request: its signature
//! against the issuer's JWKS (fetched from `jwks_uri`, or found through the
//! issuer's metadata; kept for an hour and fetched again, at most every 30
//! seconds, when a token names a key not in it), its issuer, its audience
//! (this server's `resource` URL), its expiry and not-before times (30
//! seconds of leeway), and the scopes every request needs. A missing or bad
//! token is 401, too few scopes 403, each with `WWW-Authenticate` naming the
//! metadata document and the scopes to ask for (every scope the server
//! knows on a 401, so that a client asks for all and gets what the
//! authorization server lets it have). A tool (or every tool of a
//! plugin) may need a scope of its own: without it the tool is not listed to
//! that caller, and a call to it is 403 `insufficient_scope` naming the scope,
//! so a client can ask for it (step-up).
//!
//! Only asymmetric algorithms are accepted (RS, PS, ES, EdDSA): a shared
//! secret would let anyone holding it mint tokens for every resource.
//!
//! What a token proves goes on with the request: its scopes
//! ([`GrantedScopes`]) and who it is for ([`Principal`]: the `sub` claim and
//! the client, `client_id` or `azp`), which the handler binds sessions,
//! tasks and questions to. A token that names no subject is refused.
//!
//! The keys are fetched outside every lock a request with a known key
//! waits on: such a request reads the key set (a snapshot behind a
//! read lock held for a clone) and goes on; keys older than an hour are
//! refreshed in the background. Only a request whose key is missing waits,
//! for the one fetch in flight (single-flight), and a fetch is attempted at
//! most once every 30 seconds, whether the last one succeeded or failed, so
//! tokens naming unknown keys cost the issuer at most one fetch per 30 s.

use http::header;
use jsonwebtoken::jwk::JwkSet;
use jsonwebtoken::{Algorithm, DecodingKey, Validation};
use serde::Deserialize;
use serde_json::{Value, json};
use std::collections::{BTreeMap, BTreeSet};
use std::sync::Arc;
use std::time::{Duration, Instant};

/// `[serve.oauth]`.
#[derive(Debug, Clone, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct OAuthConfig {
    /// The authorization server's issuer identifier (`iss` of its tokens).
    pub issuer: String,
    /// This server's MCP endpoint as clients address it, e.g.
    /// `https://tools.example.com/mcp`: the audience tokens must be for.
    pub resource: String,
    /// Where the issuer's signing keys are; found through its metadata when absent.
    pub jwks_uri: Option<String>,
    /// Scopes every request needs.
    #[serde(default)]
    pub scopes: Vec<String>,
    /// A scope a tool, or each tool of a plugin (by name), needs besides.
    #[serde(default)]
    pub tools: BTreeMap<String, String>,
}

/// The scopes of the token a request carried, for the MCP handler.
#[derive(Debug, Clone)]
pub struct GrantedScopes(pub Arc<BTreeSet<String>>);

/// Who a request's token is for: its subject (`sub`) and, where the token
/// names one, the client (`client_id`, else `azp`). Sessions, tasks and
/// questions are bound to it. Compared whole; never printed.
#[derive(Clone, PartialEq, Eq, Hash)]
pub struct Principal(Arc<str>);

impl Principal {
    /// The principal of `subject` using `client`.
    pub fn new(subject: &str, client: Option<&str>) -> Principal {
        // Length-prefixed, so that no subject and client run into another pair.
        Principal(Arc::from(format!("{}:{subject}{}", subject.len(), client.unwrap_or_default())))
    }

    /// A key identifying the principal (for maps and bindings).
    pub fn key(&self) -> &str {
        &self.0
    }

    /// The token's subject and client id (an empty one as none), for the audit log.
    pub fn parts(&self) -> (&str, Option<&str>) {
        let (length, rest) = self.0.split_once(':').unwrap_or(("0", &self.0));
        let length = length.parse::<usize>().unwrap_or(0).min(rest.len());
        match (rest.get(..length), rest.get(length..)) {
            (Some(subject), Some(client)) => (subject, Some(client).filter(|client| !client.is_empty())),
            _ => (rest, None),
        }
    }
}

impl std::fmt::Debug for Principal {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str("Principal(..)")
    }
}

/// What a good token grants a request.
#[derive(Debug, Clone)]
pub struct Grant {
    pub scopes: GrantedScopes,
    pub principal: Principal,
    /// The token's subject (`sub`), to match `[serve.profiles]` against.
    pub subject: Arc<str>,
    /// The token's client (`client_id`, else `azp`), if it names one.
    pub client: Option<Arc<str>>,
}

/// How long fetched keys are kept.
const KEYS_TTL: Duration = Duration::from_secs(3600);
/// The least time between two fetches of the keys.
const REFETCH_AFTER: Duration = Duration::from_secs(30);
/// The most bytes read of a metadata document or key set.
const MAX_DOCUMENT: usize = 256 * 1024;

/// Checks access tokens for one resource.
pub struct ResourceServer {
    config: OAuthConfig,
    jwks: Arc<Jwks>,
}

/// The issuer's keys, and their fetching.
struct Jwks {
    config: OAuthConfig,
    http: reqwest::Client,
    /// The keys last fetched: read (cloned) under the lock, never held across a wait.
    keys: std::sync::RwLock<Arc<Keys>>,
    /// Held by the one fetch in flight; awaited only by requests whose key is missing.
    flight: tokio::sync::Mutex<()>,
    /// When the last fetch was attempted.
    schedule: std::sync::Mutex<Schedule>,
}

#[derive(Default)]
struct Keys {
    set: Option<JwkSet>,
    fetched: Option<Instant>,
}

/// When the keys may be fetched: at most once every [`REFETCH_AFTER`],
/// counted from the last attempt, successful or not.
#[derive(Debug, Default)]
struct Schedule {
    attempted: Option<Instant>,
}

impl Schedule {
    /// Records an attempt at `now` and says true, if one may start then.
    fn begin(&mut self, now: Instant) -> bool {
        if self.attempted.is_some_and(|at| now.saturating_duration_since(at) < REFETCH_AFTER) {
            return false;
        }
        self.attempted = Some(now);
        true
    }
}

/// Why a request was refused: its status and `WWW-Authenticate` value.
#[derive(Debug)]
pub struct Refusal {
    pub status: http::StatusCode,
    pub challenge: String,
    pub message: String,
}

#[derive(Deserialize)]
struct Claims {
    #[serde(default)]
    scope: Option<String>,
    #[serde(default)]
    scp: Option<Value>,
    #[serde(default)]
    sub: Option<String>,
    #[serde(default)]
    client_id: Option<String>,
    #[serde(default)]
    azp: Option<String>,
}

/// Where a URL may point: HTTPS anywhere, plain HTTP only to this machine.
fn check_url(what: &str, url: &str) -> anyhow::Result<()> {
    let parsed =
        reqwest::Url::parse(url).map_err(|err| anyhow::anyhow!("[serve.oauth] {what} `{url}` is not a URL: {err}"))?;
    let loopback = matches!(parsed.host_str(), Some("localhost" | "127.0.0.1" | "[::1]" | "::1"));
    match parsed.scheme() {
        "https" => Ok(()),
        "http" if loopback => Ok(()),
        _ => anyhow::bail!("[serve.oauth] {what} `{url}` must be an https:// URL (http:// only on this machine)"),
    }
}

impl ResourceServer {
    /// A resource server for `config`; its URLs are checked here.
    pub fn new(config: OAuthConfig) -> anyhow::Result<ResourceServer> {
        check_url("issuer", &config.issuer)?;
        check_url("resource", &config.resource)?;
        if let Some(jwks) = &config.jwks_uri {
            check_url("jwks_uri", jwks)?;
        }
        // reqwest is built without a default TLS crypto provider (the `ring`
        // one is already in the tree); install it once per process.
        let _ = rustls::crypto::ring::default_provider().install_default();
        let http = reqwest::Client::builder()
            .timeout(Duration::from_secs(10))
            .redirect(reqwest::redirect::Policy::none())
            .user_agent(concat!("toolhost/", env!("CARGO_PKG_VERSION")))
            .build()
            .map_err(|err| anyhow::anyhow!("could not set up the HTTP client for [serve.oauth]: {err}"))?;
        let jwks = Jwks {
            config: config.clone(),
            http,
            keys: std::sync::RwLock::default(),
            flight: tokio::sync::Mutex::new(()),
            schedule: std::sync::Mutex::default(),
        };
        Ok(ResourceServer { config, jwks: Arc::new(jwks) })
    }

    /// The path of this resource's metadata document (RFC 9728 §3.1: the
    /// well-known prefix, then the resource's path).
    pub fn metadata_path(&self) -> String {
        let path = reqwest::Url::parse(&self.config.resource).map(|url| url.path().to_owned()).unwrap_or_default();
        format!("/.well-known/oauth-protected-resource{}", path.trim_end_matches('/'))
    }

    /// The scopes this server asks tokens for: every request's, then the tools'.
    pub fn scopes(&self) -> impl Iterator<Item = &str> {
        self.config.scopes.iter().chain(self.config.tools.values()).map(String::as_str)
    }

    /// The metadata document's URL.
    pub fn metadata_url(&self) -> String {
        match reqwest::Url::parse(&self.config.resource) {
            Ok(url) => format!("{}{}", url.origin().ascii_serialization(), self.metadata_path()),
            Err(_) => self.metadata_path(),
        }
    }

    /// The protected resource metadata (RFC 9728).
    pub fn metadata(&self) -> Value {
        let mut scopes: BTreeSet<&str> = self.config.scopes.iter().map(String::as_str).collect();
        scopes.extend(self.config.tools.values().map(String::as_str));
        json!({
            "resource": self.config.resource,
            "authorization_servers": [self.config.issuer],
            "scopes_supported": scopes,
            "bearer_methods_supported": ["header"],
            "resource_name": "toolhost",
        })
    }

    /// The scope a tool needs besides the common ones, if any: by its name,
    /// else by its plugin's (or MCP server's).
    pub fn tool_scope(&self, tool: &str, origin: &str) -> Option<&str> {
        self.config.tools.get(tool).or_else(|| self.config.tools.get(origin)).map(String::as_str)
    }

    /// The scope everything plugin `plugin` runs besides its tools needs
    /// (its resources, templates, prompts and completions), if any: the
    /// plugin's own entry.
    pub fn plugin_scope(&self, plugin: &str) -> Option<&str> {
        self.config.tools.get(plugin).map(String::as_str)
    }

    fn refusal(&self, status: http::StatusCode, error: Option<(&str, &str)>, scopes: &[&str]) -> Refusal {
        let mut challenge = format!("Bearer resource_metadata=\"{}\"", self.metadata_url());
        if !scopes.is_empty() {
            challenge.push_str(&format!(", scope=\"{}\"", scopes.join(" ")));
        }
        let message = match error {
            Some((code, description)) => {
                // It may quote the token (a `kid`): printable ASCII only, so
                // the header is always valid and always sent.
                let description: String = description
                    .chars()
                    .map(|c| if matches!(c, ' '..='~') && c != '"' && c != '\\' { c } else { '?' })
                    .collect();
                challenge.push_str(&format!(", error=\"{code}\", error_description=\"{description}\""));
                format!("{}: {description}", status.canonical_reason().unwrap_or("Unauthorized"))
            }
            None => "Unauthorized: this server needs an OAuth access token (see the resource metadata)".to_owned(),
        };
        Refusal { status, challenge, message }
    }

    /// A refusal of a request to something (a tool, a resource, a prompt)
    /// that needs `scope`, for a token with `granted`.
    pub fn insufficient(&self, scope: &str, granted: &BTreeSet<String>) -> Refusal {
        // What the client should ask for: what it has, the common scopes and this one.
        let mut wanted: BTreeSet<&str> = self.config.scopes.iter().map(String::as_str).collect();
        wanted.extend(granted.iter().map(String::as_str));
        wanted.insert(scope);
        let wanted: Vec<&str> = wanted.into_iter().collect();
        let description = format!("this needs the scope `{scope}`");
        self.refusal(http::StatusCode::FORBIDDEN, Some(("insufficient_scope", &description)), &wanted)
    }

    /// Checks a request's `Authorization` header: what its token grants, or why not.
    pub async fn check(&self, headers: &http::HeaderMap) -> Result<Grant, Refusal> {
        let common: Vec<&str> = self.config.scopes.iter().map(String::as_str).collect();
        // A client without a (good) token is told every scope this server
        // knows, so that it asks for all of them and the authorization server
        // grants what that client may have; the tools it then sees follow.
        let supported: BTreeSet<&str> =
            common.iter().copied().chain(self.config.tools.values().map(String::as_str)).collect();
        let supported: Vec<&str> = supported.into_iter().collect();
        let given = headers.get(header::AUTHORIZATION).and_then(|value| value.to_str().ok());
        let Some(token) = given.and_then(|value| {
            let (scheme, token) = value.split_once(' ')?;
            scheme.eq_ignore_ascii_case("bearer").then(|| token.trim())
        }) else {
            return Err(self.refusal(http::StatusCode::UNAUTHORIZED, None, &supported));
        };
        let invalid =
            |why: &str| self.refusal(http::StatusCode::UNAUTHORIZED, Some(("invalid_token", why)), &supported);
        let claims = self.verify(token).await.map_err(|why| invalid(&why))?;
        let client = claims.client_id.as_deref().or(claims.azp.as_deref()).filter(|client| !client.is_empty());
        let Some(subject) = claims.sub.as_deref().filter(|subject| !subject.is_empty()) else {
            return Err(invalid("the token names no subject (`sub`): toolhost binds sessions and tasks to it"));
        };
        let principal = Principal::new(subject, client);
        let mut scopes = BTreeSet::new();
        if let Some(scope) = claims.scope {
            scopes.extend(scope.split_whitespace().map(str::to_owned));
        }
        match claims.scp {
            Some(Value::String(scope)) => scopes.extend(scope.split_whitespace().map(str::to_owned)),
            Some(Value::Array(list)) => scopes.extend(list.iter().filter_map(Value::as_str).map(str::to_owned)),
            _ => {}
        }
        let missing: Vec<&str> = common.iter().copied().filter(|scope| !scopes.contains(*scope)).collect();
        if !missing.is_empty() {
            let description =
                format!("the token lacks the scope{} {}", if missing.len() == 1 { "" } else { "s" }, missing.join(" "));
            return Err(self.refusal(http::StatusCode::FORBIDDEN, Some(("insufficient_scope", &description)), &common));
        }
        let (subject, client) = (Arc::from(subject), client.map(Arc::from));
        Ok(Grant { scopes: GrantedScopes(Arc::new(scopes)), principal, subject, client })
    }

    /// Verifies `token`: `Err` says why it is refused (no secret in it).
    async fn verify(&self, token: &str) -> Result<Claims, String> {
        let header = jsonwebtoken::decode_header(token).map_err(|err| format!("the token is not a JWT ({err})"))?;
        let asymmetric = matches!(
            header.alg,
            Algorithm::RS256
                | Algorithm::RS384
                | Algorithm::RS512
                | Algorithm::PS256
                | Algorithm::PS384
                | Algorithm::PS512
                | Algorithm::ES256
                | Algorithm::ES384
                | Algorithm::EdDSA
        );
        if !asymmetric {
            return Err(format!("tokens signed with {:?} are not accepted", header.alg));
        }
        let key = self.jwks.key(header.kid.as_deref()).await?;
        let mut validation = Validation::new(header.alg);
        validation.set_issuer(&[&self.config.issuer]);
        validation.set_audience(&[&self.config.resource]);
        validation.set_required_spec_claims(&["exp", "iss", "aud"]);
        validation.leeway = 30;
        validation.validate_nbf = true;
        jsonwebtoken::decode::<Claims>(token, &key, &validation).map(|data| data.claims).map_err(|err| {
            use jsonwebtoken::errors::ErrorKind;
            match err.kind() {
                ErrorKind::ExpiredSignature => "the token has expired".to_owned(),
                ErrorKind::ImmatureSignature => "the token is not valid yet".to_owned(),
                ErrorKind::InvalidAudience => format!("the token is not for this resource ({})", self.config.resource),
                ErrorKind::InvalidIssuer => format!("the token was not issued by {}", self.config.issuer),
                ErrorKind::InvalidSignature => "the token's signature does not verify".to_owned(),
                ErrorKind::MissingRequiredClaim(claim) => format!("the token has no `{claim}` claim"),
                _ => format!("the token was refused ({err})"),
            }
        })
    }
}

impl Jwks {
    fn snapshot(&self) -> Arc<Keys> {
        self.keys.read().unwrap_or_else(|p| p.into_inner()).clone()
    }

    /// Starts a fetch now, if the schedule allows one.
    fn begin_attempt(&self) -> bool {
        self.schedule.lock().unwrap_or_else(|p| p.into_inner()).begin(Instant::now())
    }

    /// Fetches the keys and keeps them; `Err` says why none came (the keys
    /// held before, if any, are kept).
    async fn refresh(&self) -> Result<(), String> {
        let set = self.fetch_keys().await?;
        let keys = Arc::new(Keys { set: Some(set), fetched: Some(Instant::now()) });
        *self.keys.write().unwrap_or_else(|p| p.into_inner()) = keys;
        Ok(())
    }

    /// The key named `kid` (or the only key, when the token names none).
    async fn key(self: &Arc<Self>, kid: Option<&str>) -> Result<DecodingKey, String> {
        let found = |keys: &Keys| {
            let set = keys.set.as_ref()?;
            match kid {
                Some(kid) => set.find(kid).cloned(),
                None if set.keys.len() == 1 => set.keys.first().cloned(),
                None => None,
            }
        };
        let usable = |jwk: jsonwebtoken::jwk::Jwk| {
            DecodingKey::from_jwk(&jwk).map_err(|err| format!("the issuer's key is not usable ({err})"))
        };
        let keys = self.snapshot();
        if let Some(jwk) = found(&keys) {
            // Old keys keep serving while newer ones are fetched in the background.
            if keys.fetched.is_none_or(|at| at.elapsed() > KEYS_TTL) {
                let jwks = self.clone();
                tokio::spawn(async move {
                    let Ok(_flight) = jwks.flight.try_lock() else { return };
                    if jwks.begin_attempt()
                        && let Err(why) = jwks.refresh().await
                    {
                        tracing::warn!("could not refresh the issuer's keys: {why}");
                    }
                });
            }
            return usable(jwk);
        }
        // The key is missing: wait for the one fetch in flight, or make it.
        let _flight = self.flight.lock().await;
        if let Some(jwk) = found(&self.snapshot()) {
            return usable(jwk);
        }
        let mut why = None;
        if self.begin_attempt()
            && let Err(failed) = self.refresh().await
        {
            tracing::warn!("could not fetch the issuer's keys: {failed}");
            why = Some(failed);
        }
        let keys = self.snapshot();
        match (found(&keys), why) {
            (Some(jwk), _) => usable(jwk),
            (None, Some(why)) if keys.set.is_none() => Err(why),
            (None, _) if keys.set.is_none() => Err(format!(
                "the issuer's keys could not be fetched, and are tried again at most every {}s",
                REFETCH_AFTER.as_secs()
            )),
            (None, _) => Err(match kid {
                Some(kid) => format!("the issuer has no key `{kid}`"),
                None => "the token names no key (`kid`) and the issuer has several".to_owned(),
            }),
        }
    }

    async fn fetch_keys(&self) -> Result<JwkSet, String> {
        let uri = match &self.config.jwks_uri {
            Some(uri) => uri.clone(),
            None => self.discover_jwks_uri().await?,
        };
        let document = self.fetch(&uri).await?;
        serde_json::from_value(document).map_err(|err| format!("the key set at {uri} is not a JWKS ({err})"))
    }

    /// The issuer's `jwks_uri`, from its metadata (RFC 8414, then OpenID
    /// Connect discovery).
    async fn discover_jwks_uri(&self) -> Result<String, String> {
        let issuer = reqwest::Url::parse(&self.config.issuer).map_err(|err| err.to_string())?;
        let origin = issuer.origin().ascii_serialization();
        let path = issuer.path().trim_end_matches('/');
        let candidates = [
            format!("{origin}/.well-known/oauth-authorization-server{path}"),
            format!("{origin}/.well-known/openid-configuration{path}"),
            format!("{}/.well-known/openid-configuration", self.config.issuer.trim_end_matches('/')),
        ];
        let mut last = String::new();
        for url in candidates {
            match self.fetch(&url).await {
                Ok(metadata) => {
                    if metadata.get("issuer").and_then(Value::as_str) != Some(self.config.issuer.as_str()) {
                        last = format!("the metadata at {url} is for another issuer");
                        continue;
                    }
                    let Some(jwks) = metadata.get("jwks_uri").and_then(Value::as_str) else {
                        last = format!("the metadata at {url} has no jwks_uri");
                        continue;
                    };
                    check_url("jwks_uri", jwks).map_err(|err| err.to_string())?;
                    return Ok(jwks.to_owned());
                }
                Err(why) => last = why,
            }
        }
        Err(format!("could not find the issuer's keys: {last}"))
    }

    async fn fetch(&self, url: &str) -> Result<Value, String> {
        let mut response = self.http.get(url).send().await.map_err(|err| format!("{url} did not answer ({err})"))?;
        if !response.status().is_success() {
            return Err(format!("{url} answered {}", response.status()));
        }
        let mut body = Vec::new();
        while let Some(chunk) = response.chunk().await.map_err(|err| format!("{url}: {err}"))? {
            body.extend_from_slice(&chunk);
            if body.len() > MAX_DOCUMENT {
                return Err(format!("{url} sent more than {MAX_DOCUMENT} bytes"));
            }
        }
        // Strict: the issuer, its `jwks_uri` and its keys decide which tokens are taken.
        toolhost_grants::json::strict(&body).map_err(|err| match toolhost_grants::json::repeated_member(&err) {
            Some(said) => format!("{url} sent JSON in which {said}"),
            None => format!("{url} did not send JSON ({err})"),
        })
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_fetch_is_attempted_at_most_every_30_seconds_whatever_came_of_the_last() {
        let start = Instant::now();
        let mut schedule = Schedule::default();
        assert!(schedule.begin(start), "the first fetch");
        for later in [0, 1, 10, 29] {
            assert!(!schedule.begin(start + Duration::from_secs(later)), "{later}s after the last attempt");
        }
        assert!(schedule.begin(start + REFETCH_AFTER));
        assert!(!schedule.begin(start + REFETCH_AFTER + Duration::from_secs(5)));
        assert!(schedule.begin(start + REFETCH_AFTER * 2 + Duration::from_secs(1)));
    }

    #[test]
    fn principals_differ_by_subject_and_client_and_never_run_into_each_other() {
        let alice = Principal::new("alice", Some("app"));
        assert_eq!(alice, Principal::new("alice", Some("app")));
        assert_ne!(alice, Principal::new("alice", Some("other")));
        assert_ne!(alice, Principal::new("alice", None));
        assert_ne!(Principal::new("ab", Some("c")), Principal::new("a", Some("bc")));
        assert_eq!(format!("{alice:?}"), "Principal(..)");
    }
}

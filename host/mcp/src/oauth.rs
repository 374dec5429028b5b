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

/// How long fetched keys are kept.
const KEYS_TTL: Duration = Duration::from_secs(3600);
/// The least time between two fetches of the keys.
const REFETCH_AFTER: Duration = Duration::from_secs(30);
/// The most bytes read of a metadata document or key set.
const MAX_DOCUMENT: usize = 256 * 1024;

/// Checks access tokens for one resource.
pub struct ResourceServer {
    config: OAuthConfig,
    http: reqwest::Client,
    keys: tokio::sync::Mutex<Keys>,
}

#[derive(Default)]
struct Keys {
    set: Option<JwkSet>,
    fetched: Option<Instant>,
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
        Ok(ResourceServer { config, http, keys: tokio::sync::Mutex::default() })
    }

    /// The path of this resource's metadata document (RFC 9728 §3.1: the
    /// well-known prefix, then the resource's path).
    pub fn metadata_path(&self) -> String {
        let path = reqwest::Url::parse(&self.config.resource).map(|url| url.path().to_owned()).unwrap_or_default();
        format!("/.well-known/oauth-protected-resource{}", path.trim_end_matches('/'))
    }

    /// The metadata document's URL.
    fn metadata_url(&self) -> String {
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

    /// A refusal of a call to a tool that needs `scope`, for a token with `granted`.
    pub fn insufficient(&self, scope: &str, granted: &BTreeSet<String>) -> Refusal {
        // What the client should ask for: what it has, the common scopes and this one.
        let mut wanted: BTreeSet<&str> = self.config.scopes.iter().map(String::as_str).collect();
        wanted.extend(granted.iter().map(String::as_str));
        wanted.insert(scope);
        let wanted: Vec<&str> = wanted.into_iter().collect();
        let description = format!("this tool needs the scope `{scope}`");
        self.refusal(http::StatusCode::FORBIDDEN, Some(("insufficient_scope", &description)), &wanted)
    }

    /// Checks a request's `Authorization` header: its token's scopes, or why not.
    pub async fn check(&self, headers: &http::HeaderMap) -> Result<GrantedScopes, Refusal> {
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
        Ok(GrantedScopes(Arc::new(scopes)))
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
        let key = self.key(header.kid.as_deref()).await?;
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
                other => format!("the token was refused ({other:?})"),
            }
        })
    }

    /// The key named `kid` (or the only key, when the token names none).
    async fn key(&self, kid: Option<&str>) -> Result<DecodingKey, String> {
        let mut keys = self.keys.lock().await;
        let stale = keys.fetched.is_none_or(|at| at.elapsed() > KEYS_TTL);
        let found = |set: &JwkSet| match kid {
            Some(kid) => set.find(kid).cloned(),
            None if set.keys.len() == 1 => set.keys.first().cloned(),
            None => None,
        };
        let known = keys.set.as_ref().and_then(found);
        let may_fetch = keys.fetched.is_none_or(|at| at.elapsed() > REFETCH_AFTER);
        if stale || (known.is_none() && may_fetch) {
            match self.fetch_keys().await {
                Ok(set) => {
                    keys.set = Some(set);
                    keys.fetched = Some(Instant::now());
                }
                // Keys already held keep serving while the issuer is unreachable.
                Err(why) if keys.set.is_none() => return Err(why),
                Err(why) => tracing::warn!("could not refresh the issuer's keys: {why}"),
            }
        }
        let jwk = keys.set.as_ref().and_then(found).ok_or_else(|| match kid {
            Some(kid) => format!("the issuer has no key `{kid}`"),
            None => "the token names no key (`kid`) and the issuer has several".to_owned(),
        })?;
        DecodingKey::from_jwk(&jwk).map_err(|err| format!("the issuer's key is not usable ({err})"))
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
        serde_json::from_slice(&body).map_err(|err| format!("{url} did not send JSON ({err})"))
    }
}

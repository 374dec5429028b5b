//! The routes of the operator's page (`/console`, [`crate::console`]) and
//! of the Server Card ([`crate::console::card`]) on the HTTP front. Both
//! answer `GET` and `HEAD` only, after the same Host check as `/mcp` (403).
//! The page asks for the server's authentication (401, with a Basic
//! challenge a browser turns into a password prompt, and the Bearer one);
//! the base card is public, as the extension means it, and a profile's card
//! (`/mcp/NAME/server-card`) answers whoever may use `/mcp/NAME`.

use super::answers::{plain, plain_owned, refused};
use super::hosts::host_allowed;
use super::{Body, Front};
use crate::console::{self, Console, card};
use crate::profiles::{Profile, TokenFacts};
use bytes::Bytes;
use http::{HeaderMap, HeaderValue, Request, Response, StatusCode, header};
use http_body_util::{BodyExt, Full};
use hyper::body::Incoming;
use std::sync::Arc;
use subtle::ConstantTimeEq;

/// What a path is, among the page's and the card's.
enum Route<'a> {
    Console,
    Card(Option<&'a str>),
    Catalog,
}

impl Front {
    /// The answer to a request for the page or a card, or `None` when the
    /// path is neither (or what it names is not enabled).
    pub(super) async fn console_or_card(&self, request: &Request<Incoming>) -> Option<Response<Body>> {
        let path = request.uri().path();
        let route = if path == "/console" || path.starts_with("/console/") {
            self.console.as_ref()?;
            Route::Console
        } else if !self.card.enabled() {
            return None;
        } else if path == "/mcp/server-card" || path == "/.well-known/mcp/server-card.json" {
            Route::Card(None)
        } else if path == "/.well-known/ai-catalog.json" {
            Route::Catalog
        } else {
            let name = path.strip_prefix("/mcp/")?.strip_suffix("/server-card")?;
            if name.is_empty() || name.contains('/') {
                return None;
            }
            Route::Card(Some(name))
        };
        let method = request.method();
        if matches!(route, Route::Card(_) | Route::Catalog) && method == http::Method::OPTIONS {
            let mut response = Response::new(Full::new(Bytes::new()).boxed());
            *response.status_mut() = StatusCode::NO_CONTENT;
            cors(response.headers_mut());
            return Some(response);
        }
        if method != http::Method::GET && method != http::Method::HEAD {
            let mut response = plain(StatusCode::METHOD_NOT_ALLOWED, "Method Not Allowed: use GET");
            response.headers_mut().insert(header::ALLOW, HeaderValue::from_static("GET, HEAD"));
            return Some(response);
        }
        if !host_allowed(request, &self.hosts) {
            return Some(plain(StatusCode::FORBIDDEN, "Forbidden: Host header is not allowed"));
        }
        Some(match route {
            Route::Console => {
                let console = self.console.as_ref()?;
                let mut response = match self.console_viewer(console, request.headers()).await {
                    Ok((profile, subject)) => self.console_answer(console, &profile, subject.as_deref(), path).await,
                    Err(response) => *response,
                };
                harden(response.headers_mut());
                response
            }
            Route::Card(profile) => self.card_answer(request, profile).await,
            Route::Catalog => {
                let base = self.card_endpoint(request);
                let name = card::name(&self.card, &request_host(request), None);
                let body = card::catalog(&name, &format!("{base}/server-card"));
                cacheable(request, body, card::CATALOG_MEDIA_TYPE, Caching::Public)
            }
        })
    }

    /// Who may see the page, and as which profile: the static token, an
    /// OAuth token with the console's scope, or (neither configured: a
    /// loopback server) anyone past the Host check.
    async fn console_viewer(
        &self,
        console: &Console,
        headers: &HeaderMap,
    ) -> Result<(Arc<Profile>, Option<Arc<str>>), Box<Response<Body>>> {
        let presented = console::presented_token(headers);
        // Its refusal is the response itself, as `console_viewer`'s is.
        let pick = |facts: Option<&TokenFacts<'_>>| {
            self.profiles.pick(None, facts).map_err(|refusal| {
                Box::new(plain_owned(
                    StatusCode::from_u16(refusal.status).unwrap_or(StatusCode::FORBIDDEN),
                    refusal.message,
                ))
            })
        };
        if let Some(token) = &self.token {
            let matches =
                presented.as_deref().is_some_and(|given| bool::from(given.as_bytes().ct_eq(token.as_bytes())));
            if !matches {
                return Err(Box::new(console_unauthorized("Bearer")));
            }
            return pick(None).map(|profile| (profile, None));
        }
        if let Some(oauth) = &self.oauth {
            let mut bearer = HeaderMap::new();
            if let Some(value) = presented.and_then(|token| HeaderValue::from_str(&format!("Bearer {token}")).ok()) {
                bearer.insert(header::AUTHORIZATION, value);
            }
            let grant = match oauth.check(&bearer).await {
                Ok(grant) => grant,
                Err(refusal) if refusal.status == StatusCode::UNAUTHORIZED => {
                    return Err(Box::new(console_unauthorized(&refusal.challenge)));
                }
                Err(refusal) => return Err(Box::new(refused(refusal))),
            };
            let scope = console.scope.as_deref().unwrap_or_default();
            if !grant.scopes.0.contains(scope) {
                return Err(Box::new(refused(oauth.insufficient(scope, &grant.scopes.0))));
            }
            let facts =
                TokenFacts { subject: &grant.subject, client: grant.client.as_deref(), scopes: Some(&grant.scopes.0) };
            return pick(Some(&facts)).map(|profile| (profile, Some(grant.subject.clone())));
        }
        pick(None).map(|profile| (profile, None))
    }

    async fn console_answer(
        &self,
        console: &Console,
        profile: &Profile,
        subject: Option<&str>,
        path: &str,
    ) -> Response<Body> {
        let (body, content_type) = match path {
            "/console" | "/console/" => {
                let store = match &self.store {
                    Some(store) => {
                        let answered = tokio::time::timeout(std::time::Duration::from_secs(1), store.ping())
                            .await
                            .unwrap_or_else(|_| Err("no answer within 1 s".to_owned()));
                        Some((store.shown(), answered))
                    }
                    None => None,
                };
                let view = console::View {
                    console,
                    host: &self.host,
                    metrics: &self.metrics,
                    profile,
                    subject,
                    profiles: &self.profiles,
                    not_ready: self.readiness.reason(),
                    sessions: self.sessions.sessions.read().await.len(),
                    max_sessions: self.max_sessions,
                    tasks: self.tasks.as_ref().map(|tasks| tasks.by_status()),
                    store,
                };
                (console::render(&view), "text/html; charset=utf-8")
            }
            "/console/console.css" => (console::STYLE.to_owned(), "text/css; charset=utf-8"),
            "/console/console.js" => (console::SCRIPT.to_owned(), "text/javascript; charset=utf-8"),
            _ => return plain(StatusCode::NOT_FOUND, "Not Found: the operator's page is /console"),
        };
        let mut response = plain_owned(StatusCode::OK, body);
        response.headers_mut().insert(header::CONTENT_TYPE, HeaderValue::from_static(content_type));
        response
    }

    /// The MCP endpoint as clients reach it: `[serve.card] url`, else this request's host.
    fn card_endpoint(&self, request: &Request<Incoming>) -> String {
        match &self.card.url {
            Some(url) => url.trim_end_matches('/').to_owned(),
            None => format!("http://{}/mcp", request_host(request)),
        }
    }

    async fn card_answer(&self, request: &Request<Incoming>, profile: Option<&str>) -> Response<Body> {
        if let Some(name) = profile {
            // A profile's card answers whoever may use its endpoint, as `/mcp/NAME` would.
            if let Some(token) = &self.token {
                let given = request
                    .headers()
                    .get(header::AUTHORIZATION)
                    .and_then(|value| value.as_bytes().strip_prefix(b"Bearer "))
                    .is_some_and(|given| bool::from(given.ct_eq(token.as_bytes())));
                if !given {
                    return console_unauthorized("Bearer");
                }
            }
            let grant = match &self.oauth {
                Some(oauth) => match oauth.check(request.headers()).await {
                    Ok(grant) => Some(grant),
                    Err(refusal) => return refused(refusal),
                },
                None => None,
            };
            let facts = grant.as_ref().map(|grant| TokenFacts {
                subject: &grant.subject,
                client: grant.client.as_deref(),
                scopes: Some(&grant.scopes.0),
            });
            if let Err(refusal) = self.profiles.pick(Some(name), facts.as_ref()) {
                return plain_owned(
                    StatusCode::from_u16(refusal.status).unwrap_or(StatusCode::NOT_FOUND),
                    refusal.message,
                );
            }
        }
        let catalog = self.host.catalog();
        let offered = match profile {
            Some(name) => match self.profiles.named(name) {
                Ok(profile) => profile,
                Err(_) => return plain(StatusCode::NOT_FOUND, "Not Found: no such profile"),
            },
            None => match self.profiles.pick(None, None) {
                Ok(profile) => profile,
                Err(refusal) => return plain_owned(StatusCode::FORBIDDEN, refusal.message),
            },
        };
        let tools = catalog.tools().iter().filter(|entry| offered.allows(entry.name(), entry.origin())).count();
        let plugins = catalog.plugins().iter().filter(|plugin| offered.allows_plugin(&plugin.name)).count();
        let metadata_url = self.oauth.as_ref().map(|oauth| oauth.metadata_url());
        let metadata = self.oauth.as_ref().map(|oauth| oauth.metadata());
        let auth = match (&self.token, &metadata_url, &metadata) {
            (Some(_), _, _) => card::Auth::Token,
            (None, Some(url), Some(metadata)) => {
                card::Auth::OAuth { metadata: url, issuer: &metadata["authorization_servers"] }
            }
            _ => card::Auth::None,
        };
        let base = self.card_endpoint(request);
        let host = request_host(request);
        let facts = card::Facts {
            config: &self.card,
            endpoint: match profile {
                Some(name) => format!("{base}/{name}"),
                None => base,
            },
            host: &host,
            profile,
            tools,
            plugins,
            capabilities: &self.capabilities,
            auth,
        };
        // A profile's card answers only whoever may use its endpoint: no
        // shared cache may keep it for others.
        let shared = if profile.is_some() { Caching::Private } else { Caching::Public };
        cacheable(request, card::card(&facts), card::MEDIA_TYPE, shared)
    }
}

/// The request's Host header (already checked against the allowed hosts).
fn request_host<B>(request: &Request<B>) -> String {
    request.headers().get(header::HOST).and_then(|value| value.to_str().ok()).unwrap_or("localhost").to_owned()
}

/// 401 for the page: a Basic challenge (a browser asks for the token as a
/// password) besides the Bearer one (`challenge`).
fn console_unauthorized(challenge: &str) -> Response<Body> {
    let mut response = plain(
        StatusCode::UNAUTHORIZED,
        "Unauthorized: the operator's page needs this server's token (or an OAuth access token with the \
         console's scope): send `Authorization: Bearer TOKEN`, or give it as the password when the browser asks",
    );
    let headers = response.headers_mut();
    headers.insert(
        header::WWW_AUTHENTICATE,
        HeaderValue::from_static("Basic realm=\"toolhost console\", charset=\"UTF-8\""),
    );
    if let Ok(value) = HeaderValue::from_str(challenge) {
        headers.append(header::WWW_AUTHENTICATE, value);
    }
    response
}

/// What every answer of the page carries: no script or style but the
/// server's own, no framing, no caching, no sniffing, no referrer.
fn harden(headers: &mut HeaderMap) {
    headers.insert(header::CONTENT_SECURITY_POLICY, HeaderValue::from_static(console::CSP));
    headers.insert(header::X_CONTENT_TYPE_OPTIONS, HeaderValue::from_static("nosniff"));
    headers.insert(header::X_FRAME_OPTIONS, HeaderValue::from_static("DENY"));
    headers.insert(header::CACHE_CONTROL, HeaderValue::from_static("no-store"));
    headers.insert(header::REFERRER_POLICY, HeaderValue::from_static("no-referrer"));
    headers.insert("cross-origin-resource-policy", HeaderValue::from_static("same-origin"));
}

/// The CORS headers the Server Card extension asks of a card's host.
fn cors(headers: &mut HeaderMap) {
    headers.insert(header::ACCESS_CONTROL_ALLOW_ORIGIN, HeaderValue::from_static("*"));
    headers.insert(header::ACCESS_CONTROL_ALLOW_METHODS, HeaderValue::from_static("GET"));
    headers.insert(header::ACCESS_CONTROL_ALLOW_HEADERS, HeaderValue::from_static("Content-Type, If-None-Match"));
    headers.insert(header::ACCESS_CONTROL_EXPOSE_HEADERS, HeaderValue::from_static("ETag"));
}

/// Who may keep a cacheable answer: any cache, or only the client's own
/// (an answer that depends on the request's token).
enum Caching {
    Public,
    Private,
}

/// `body` as JSON of `media_type`, with an `ETag` (304 when `If-None-Match`
/// has it) and the `Cache-Control` that `caching` says.
fn cacheable<B>(
    request: &Request<B>,
    body: serde_json::Value,
    media_type: &'static str,
    caching: Caching,
) -> Response<Body> {
    let bytes = serde_json::to_vec_pretty(&body).unwrap_or_default();
    let etag = card::etag(&bytes);
    let matched = request
        .headers()
        .get_all(header::IF_NONE_MATCH)
        .iter()
        .filter_map(|value| value.to_str().ok())
        .flat_map(|value| value.split(','))
        .map(|tag| tag.trim())
        // If-None-Match compares weakly (RFC 9110 13.1.2): `W/"x"` is `"x"`.
        .any(|tag| tag.strip_prefix("W/").unwrap_or(tag) == etag || tag == "*");
    let mut response = if matched {
        let mut response = Response::new(Full::new(Bytes::new()).boxed());
        *response.status_mut() = StatusCode::NOT_MODIFIED;
        response
    } else {
        let mut response = Response::new(Full::new(Bytes::from(bytes)).boxed());
        response.headers_mut().insert(header::CONTENT_TYPE, HeaderValue::from_static(media_type));
        response
    };
    let headers = response.headers_mut();
    if let Ok(value) = HeaderValue::from_str(&etag) {
        headers.insert(header::ETAG, value);
    }
    match caching {
        Caching::Public => {
            headers.insert(header::CACHE_CONTROL, HeaderValue::from_static("public, max-age=300"));
        }
        Caching::Private => {
            headers.insert(header::CACHE_CONTROL, HeaderValue::from_static("private, max-age=300"));
            headers.insert(header::VARY, HeaderValue::from_static("Authorization"));
        }
    }
    headers.insert(header::X_CONTENT_TYPE_OPTIONS, HeaderValue::from_static("nosniff"));
    cors(headers);
    response
}

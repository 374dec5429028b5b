//! The MCP Server Card (SEP-2127, the `experimental-ext-server-card`
//! extension's schema v1): what a client or a registry learns about this
//! server before connecting: its name, version, description, the
//! Streamable HTTP endpoint with the protocol revisions it serves, the
//! header it must send (a token, when one is needed), and, under `_meta`,
//! the capabilities it declares and where OAuth's metadata is.
//!
//! Where: the location the extension reserves, `<streamable-http-url>/server-card`
//! (`/mcp/server-card`, and `/mcp/NAME/server-card` for each profile's own
//! endpoint), with `/.well-known/ai-catalog.json` (the extension's
//! domain-level discovery) pointing at it, and `/.well-known/mcp/server-card.json`
//! (the path of earlier drafts many clients still try) answering the same
//! card. A card lists no tools: the extension leaves primitives to
//! `tools/list`, so no tool a profile or `[serve] tools` leaves out can show.
//! Cards are public by design (no token), read-only, with the CORS and
//! caching headers the extension asks for (`ETag`, `If-None-Match` → 304).

use serde::Deserialize;
use serde_json::{Map, Value, json};

/// The schema every card names.
pub const SCHEMA: &str = "https://static.modelcontextprotocol.io/schemas/v1/server-card.schema.json";
/// The media type of a card.
pub const MEDIA_TYPE: &str = "application/mcp-server-card+json";
/// The media type of an AI Catalog.
pub const CATALOG_MEDIA_TYPE: &str = "application/ai-catalog+json";

/// `[serve.card]`.
#[derive(Debug, Clone, Default, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct CardConfig {
    /// Whether the card is served (true unless set false).
    pub enabled: Option<bool>,
    /// Reverse-DNS name, `NAMESPACE/NAME` (e.g. `com.example/tools`); the
    /// request's host reversed and `/toolhost` unless set.
    pub name: Option<String>,
    /// A display name.
    pub title: Option<String>,
    /// What the server offers, at most 100 characters; said from what is loaded unless set.
    pub description: Option<String>,
    /// The MCP endpoint as clients reach it (`https://tools.example.com/mcp`):
    /// behind a proxy the request's own host and scheme would be wrong.
    pub url: Option<String>,
    /// A page about the server.
    pub website: Option<String>,
}

impl CardConfig {
    /// Whether the card is served.
    pub fn enabled(&self) -> bool {
        self.enabled.unwrap_or(true)
    }

    /// Checks what is set, in the words of the schema's rules.
    pub fn check(&self) -> anyhow::Result<()> {
        if let Some(name) = &self.name
            && !valid_name(name)
        {
            anyhow::bail!(
                "[serve.card] name = {name:?}: a card's name is reverse-DNS `NAMESPACE/NAME` (letters, digits, \
                 `.` and `-`, one `/`, then letters, digits, `.`, `_`, `-`), 3 to 200 characters, e.g. \
                 \"com.example/tools\""
            );
        }
        for (field, value, max) in [("title", &self.title, 100), ("description", &self.description, 100)] {
            if let Some(value) = value
                && (value.trim().is_empty() || value.chars().count() > max)
            {
                anyhow::bail!("[serve.card] {field}: 1 to {max} characters");
            }
        }
        for (field, value) in [("url", &self.url), ("website", &self.website)] {
            if let Some(value) = value {
                let parsed = reqwest::Url::parse(value)
                    .map_err(|err| anyhow::anyhow!("[serve.card] {field} = {value:?} is not a URL: {err}"))?;
                if !matches!(parsed.scheme(), "http" | "https") {
                    anyhow::bail!("[serve.card] {field} = {value:?}: an http:// or https:// URL");
                }
            }
        }
        Ok(())
    }
}

/// The schema's pattern for a name: `^[a-zA-Z0-9.-]+/[a-zA-Z0-9._-]+$`, 3 to 200 long.
fn valid_name(name: &str) -> bool {
    let Some((namespace, rest)) = name.split_once('/') else { return false };
    (3..=200).contains(&name.len())
        && !namespace.is_empty()
        && !rest.is_empty()
        && namespace.bytes().all(|b| b.is_ascii_alphanumeric() || b == b'.' || b == b'-')
        && rest.bytes().all(|b| b.is_ascii_alphanumeric() || b == b'.' || b == b'_' || b == b'-')
}

/// How the endpoint is protected, for the card.
pub enum Auth<'a> {
    /// Anyone on the allowed hosts (loopback without a token).
    None,
    /// A static bearer token.
    Token,
    /// OAuth access tokens; the protected resource metadata's URL and the issuer.
    OAuth { metadata: &'a str, issuer: &'a Value },
}

/// What a card is made from.
pub struct Facts<'a> {
    pub config: &'a CardConfig,
    /// The endpoint's URL (`[serve.card] url`, else from the request's Host).
    pub endpoint: String,
    /// The host clients used, for the default name.
    pub host: &'a str,
    /// The profile whose endpoint this is, if any.
    pub profile: Option<&'a str>,
    pub tools: usize,
    pub plugins: usize,
    pub capabilities: &'a Value,
    pub auth: Auth<'a>,
}

/// The protocol revisions `/mcp` answers (rmcp's known ones).
pub fn revisions() -> Vec<String> {
    rmcp::model::ProtocolVersion::KNOWN_VERSIONS.iter().map(|version| version.as_str().to_owned()).collect()
}

/// The card's name: configured, else the host's name reversed
/// (`tools.example.com` → `com.example.tools/toolhost`); for an address,
/// `localhost/toolhost` (loopback) or `ip-10-0-0-5/toolhost` (an address
/// is no namespace to reverse).
pub fn name(config: &CardConfig, host: &str, profile: Option<&str>) -> String {
    let base = config.name.clone().unwrap_or_else(|| {
        let host = host.trim_start_matches('[').split(']').next().unwrap_or(host);
        let host = host.rsplit_once(':').filter(|(_, port)| port.parse::<u16>().is_ok()).map_or(host, |(h, _)| h);
        if let Ok(address) = host.parse::<std::net::IpAddr>() {
            let namespace = match address {
                address if address.is_loopback() => "localhost".to_owned(),
                std::net::IpAddr::V4(v4) => format!("ip-{}", v4.octets().map(|octet| octet.to_string()).join("-")),
                std::net::IpAddr::V6(v6) => {
                    format!("ip-{}", v6.segments().map(|segment| format!("{segment:x}")).join("-"))
                }
            };
            return format!("{namespace}/toolhost");
        }
        let labels: Vec<String> = host
            .split(['.', ':'])
            .rev()
            .filter(|label| !label.is_empty())
            .map(|label| label.chars().filter(|c| c.is_ascii_alphanumeric() || *c == '-').collect())
            .collect();
        let namespace = labels.join(".");
        format!("{}/toolhost", if namespace.is_empty() { "localhost".to_owned() } else { namespace })
    });
    match profile {
        Some(profile) => format!("{base}-{profile}"),
        None => base,
    }
}

/// The card.
pub fn card(facts: &Facts<'_>) -> Value {
    let config = facts.config;
    let description = config.description.clone().unwrap_or_else(|| {
        let plural = |count: usize, one: &str| if count == 1 { format!("1 {one}") } else { format!("{count} {one}s") };
        let said = format!(
            "{} from {}{}",
            plural(facts.tools, "tool"),
            plural(facts.plugins, "sandboxed WebAssembly plugin"),
            facts.profile.map(|profile| format!(" (profile {profile})")).unwrap_or_default()
        );
        super::html::cut(&said, 99)
    });
    let mut remote = json!({
        "type": "streamable-http",
        "url": facts.endpoint,
        "supportedProtocolVersions": revisions(),
    });
    let mut meta = Map::new();
    meta.insert("toolhost/capabilities".to_owned(), facts.capabilities.clone());
    match &facts.auth {
        Auth::None => {}
        Auth::Token => {
            remote["headers"] = json!([{
                "name": "Authorization",
                "description": "The bearer token this server's operator gave you.",
                "isRequired": true,
                "isSecret": true,
                "value": "Bearer {token}",
                "variables": {"token": {"description": "The server's access token.", "isRequired": true, "isSecret": true}},
            }]);
            meta.insert("toolhost/authorization".to_owned(), json!({"type": "bearer"}));
        }
        Auth::OAuth { metadata, issuer } => {
            remote["headers"] = json!([{
                "name": "Authorization",
                "description": "An OAuth 2.1 access token for this server (see its protected resource metadata).",
                "isRequired": true,
                "isSecret": true,
                "value": "Bearer {token}",
                "variables": {"token": {"description": "An access token from the authorization server.", "isRequired": true, "isSecret": true}},
            }]);
            meta.insert(
                "toolhost/authorization".to_owned(),
                json!({"type": "oauth2", "resource_metadata": metadata, "authorization_servers": issuer}),
            );
        }
    }
    let mut card = json!({
        "$schema": SCHEMA,
        "name": name(config, facts.host, facts.profile),
        "version": env!("CARGO_PKG_VERSION"),
        "description": description,
        "remotes": [remote],
        "_meta": Value::Object(meta),
    });
    if let Some(title) = &config.title {
        card["title"] = json!(title);
    }
    if let Some(website) = &config.website {
        card["websiteUrl"] = json!(website);
    }
    card
}

/// The AI Catalog listing this server's card at `card_url`.
pub fn catalog(name: &str, card_url: &str) -> Value {
    let (namespace, server) = name.split_once('/').unwrap_or((name, "toolhost"));
    let publisher: Vec<&str> = namespace.split('.').rev().collect();
    json!({
        "specVersion": "1.0",
        "entries": [{
            "identifier": format!("urn:air:{}:mcp:{server}", publisher.join(".")),
            "type": MEDIA_TYPE,
            "url": card_url,
        }],
    })
}

/// A strong entity tag of `body`.
pub fn etag(body: &[u8]) -> String {
    let digest = ring::digest::digest(&ring::digest::SHA256, body);
    let hex: String = digest.as_ref()[..16].iter().map(|byte| format!("{byte:02x}")).collect();
    format!("\"{hex}\"")
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn names_follow_the_schemas_pattern() {
        assert!(valid_name("com.example/tools"));
        assert!(!valid_name("com.example"));
        assert!(!valid_name("a/b/c"));
        assert!(!valid_name("com example/x"));
        let config = CardConfig::default();
        assert_eq!(name(&config, "127.0.0.1:8080", None), "localhost/toolhost");
        assert_eq!(name(&config, "10.0.0.5:8080", None), "ip-10-0-0-5/toolhost");
        assert_eq!(name(&config, "[fd00::5]:8080", None), "ip-fd00-0-0-0-0-0-0-5/toolhost");
        assert_eq!(name(&config, "tools.example.com", Some("ci")), "com.example.tools/toolhost-ci");
        assert_eq!(name(&config, "[::1]:9", None), "localhost/toolhost");
        assert!(valid_name(&name(&config, "[::1]:9", None)));
    }

    #[test]
    fn a_card_says_the_endpoint_revisions_and_that_a_token_is_needed_never_one() {
        let config = CardConfig::default();
        let capabilities = json!({"tools": {"listChanged": true}});
        let facts = Facts {
            config: &config,
            endpoint: "http://127.0.0.1:9/mcp".to_owned(),
            host: "127.0.0.1:9",
            profile: None,
            tools: 3,
            plugins: 2,
            capabilities: &capabilities,
            auth: Auth::Token,
        };
        let card = card(&facts);
        assert_eq!(card["$schema"], SCHEMA);
        assert_eq!(card["remotes"][0]["url"], "http://127.0.0.1:9/mcp");
        assert!(card["remotes"][0]["supportedProtocolVersions"].as_array().unwrap().contains(&json!("2025-11-25")));
        assert_eq!(card["remotes"][0]["headers"][0]["isSecret"], true);
        assert_eq!(card["description"], "3 tools from 2 sandboxed WebAssembly plugins");
        assert!(card.get("tools").is_none());
        let catalog = catalog("com.example.tools/toolhost", "http://127.0.0.1:9/mcp/server-card");
        assert_eq!(catalog["entries"][0]["identifier"], "urn:air:tools.example.com:mcp:toolhost");
    }
}

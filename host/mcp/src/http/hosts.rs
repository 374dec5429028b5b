//! The `Host` check of the operator endpoints (DNS-rebinding protection),
//! comparing names as rmcp does on `/mcp`.

use super::*;

/// A `Host` header value (or an allowed one): the host, lowercased, without
/// IPv6 brackets, and the port if one is given. Compared as rmcp compares
/// them on `/mcp`: an allowed entry without a port accepts any port.
#[derive(Debug, PartialEq, Eq)]
pub(super) struct Authority {
    host: String,
    port: Option<u16>,
}

impl Authority {
    pub(super) fn parse(value: &str) -> Option<Authority> {
        let value = value.trim();
        if value.is_empty() {
            return None;
        }
        let normalize = |host: &str| host.trim_matches(['[', ']']).to_ascii_lowercase();
        Some(match http::uri::Authority::try_from(value) {
            Ok(authority) => Authority { host: normalize(authority.host()), port: authority.port_u16() },
            Err(_) => Authority { host: normalize(value), port: None },
        })
    }
}

/// True when the request's `Host` header is one of `allowed`.
pub(super) fn host_allowed<B>(request: &Request<B>, allowed: &[Authority]) -> bool {
    let Some(given) = request.headers().get(header::HOST).and_then(|value| value.to_str().ok()) else {
        return false;
    };
    let Ok(given) = http::uri::Authority::try_from(given) else { return false };
    // A Host is `host[:port]`: no user info, and a port that is a number
    // (`localhost:notaport` and `user@localhost` are not localhost; they
    // would flow into what the card says the server is).
    let text = given.as_str();
    let port = match text.strip_prefix('[') {
        Some(v6) => v6.split_once(']').map(|(_, rest)| rest).and_then(|rest| rest.strip_prefix(':')),
        None => text.split_once(':').map(|(_, port)| port),
    };
    if text.contains('@') || port.is_some_and(|port| port.parse::<u16>().is_err()) {
        return false;
    }
    let Some(given) = Authority::parse(given.as_str()) else { return false };
    allowed.iter().any(|entry| entry.host == given.host && entry.port.is_none_or(|port| given.port == Some(port)))
}

#[cfg(test)]
mod tests {
    use super::{Authority, host_allowed};

    fn allowed(entries: &[&str]) -> Vec<Authority> {
        entries.iter().filter_map(|entry| Authority::parse(entry)).collect()
    }

    fn request(host: Option<&str>) -> http::Request<()> {
        let mut builder = http::Request::builder().uri("/healthz");
        if let Some(host) = host {
            builder = builder.header(http::header::HOST, host);
        }
        builder.body(()).unwrap()
    }

    #[test]
    fn accepts_allowed_hosts_with_any_port_unless_one_is_named() {
        let list = allowed(&["localhost", "127.0.0.1", "::1", "Tools.Example.com", "lb.internal:8080"]);
        for host in ["localhost", "localhost:8931", "127.0.0.1:1", "[::1]:80", "tools.example.com", "lb.internal:8080"]
        {
            assert!(host_allowed(&request(Some(host)), &list), "{host}");
        }
    }

    #[test]
    fn rejects_other_hosts_wrong_ports_and_no_host() {
        let list = allowed(&["localhost", "lb.internal:8080"]);
        for host in [
            Some("evil.example.com"),
            Some("lb.internal:8081"),
            Some("lb.internal"),
            Some("a b"),
            Some("localhost:notaport"),
            Some("user@localhost"),
            Some("localhost:99999"),
            None,
        ] {
            assert!(!host_allowed(&request(host), &list), "{host:?}");
        }
    }
}

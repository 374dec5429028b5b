//! One canonical form for every name a security decision compares.
//!
//! A host can be spelled many ways that all reach the same machine:
//! `LOCALHOST`, `localhost.`, `127.1`, `2130706433`, `0x7f.0.0.1`,
//! `[::ffff:127.0.0.1]`, `ＥＸＡＭＰＬＥ.com`, `ex%61mple.com`. Comparing such
//! names as text lets one spelling past a rule written for another. So every
//! name that a grant, a credential, a trust scope, the lock or a pull compares
//! is parsed here, by the WHATWG URL host parser (the `url` crate: IDNA,
//! percent-decoding, every IPv4 number form, IPv6), and compared only in the
//! form this module gives back:
//!
//! - a domain name: ASCII (IDNA), lower case, without a trailing dot;
//! - an IPv4 address in dotted decimal, also when it was written as an
//!   IPv4-mapped IPv6 address (`[::ffff:127.0.0.1]` reaches 127.0.0.1);
//! - any other IPv6 address, compressed.
//!
//! URLs ([`Endpoint`]) are parsed whole, so a check such as "https, or plain
//! HTTP to this machine" reads the host the URL really names, never a prefix
//! of its text (`http://127.0.0.1:1@remote.example/` names `remote.example`).

use std::fmt;
use std::net::{IpAddr, Ipv6Addr};

/// A host in its canonical form.
#[derive(Debug, Clone, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub enum CanonicalHost {
    /// A domain name: ASCII, lower case, no trailing dot.
    Name(String),
    /// An IP address (an IPv4-mapped IPv6 address as IPv4).
    Ip(IpAddr),
}

impl CanonicalHost {
    /// Parses a host as it stands in a URL's authority: a name (Unicode or
    /// ASCII, any case, percent-encoded or not, with or without the trailing
    /// dot), an IPv4 address in any form the URL standard accepts, or an IPv6
    /// address in brackets. A bare IPv6 address (no brackets) is accepted too.
    pub fn parse(text: &str) -> Result<CanonicalHost, String> {
        let shown = || text.chars().take(80).collect::<String>().escape_debug().to_string();
        if text.is_empty() {
            return Err("an empty host".to_owned());
        }
        if !text.starts_with('[')
            && text.contains(':')
            && let Ok(ip) = text.parse::<Ipv6Addr>()
        {
            return Ok(CanonicalHost::from_ip(IpAddr::V6(ip)));
        }
        let parsed = url::Host::parse(text).map_err(|err| format!("`{}` is not a host name ({err})", shown()))?;
        Ok(match parsed {
            url::Host::Ipv4(ip) => CanonicalHost::Ip(IpAddr::V4(ip)),
            url::Host::Ipv6(ip) => CanonicalHost::from_ip(IpAddr::V6(ip)),
            url::Host::Domain(name) => {
                let name = name.strip_suffix('.').unwrap_or(&name).to_owned();
                if name.is_empty() || name.ends_with('.') || name.starts_with('.') || name.contains("..") {
                    return Err(format!("`{}` is not a host name (an empty label)", shown()));
                }
                CanonicalHost::Name(name)
            }
        })
    }

    /// The canonical host of an address.
    pub fn from_ip(ip: IpAddr) -> CanonicalHost {
        match ip {
            IpAddr::V6(v6) => match v6.to_ipv4_mapped() {
                Some(v4) => CanonicalHost::Ip(IpAddr::V4(v4)),
                None => CanonicalHost::Ip(IpAddr::V6(v6)),
            },
            v4 => CanonicalHost::Ip(v4),
        }
    }

    /// True when the host is this machine: `localhost` or a loopback address.
    pub fn is_loopback(&self) -> bool {
        match self {
            CanonicalHost::Name(name) => name == "localhost",
            CanonicalHost::Ip(ip) => ip.is_loopback(),
        }
    }

    /// The host as a resolver or a TLS server name takes it: the name, or the
    /// address without brackets.
    pub fn bare(&self) -> String {
        match self {
            CanonicalHost::Name(name) => name.clone(),
            CanonicalHost::Ip(ip) => ip.to_string(),
        }
    }
}

impl fmt::Display for CanonicalHost {
    /// As in a URL: IPv6 in brackets.
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            CanonicalHost::Name(name) => f.write_str(name),
            CanonicalHost::Ip(IpAddr::V4(ip)) => write!(f, "{ip}"),
            CanonicalHost::Ip(IpAddr::V6(ip)) => write!(f, "[{ip}]"),
        }
    }
}

/// `host[:port]` without a scheme (a registry), canonical.
#[derive(Debug, Clone, PartialEq, Eq, Hash)]
pub struct Authority {
    /// The host.
    pub host: CanonicalHost,
    /// The port, when one is written.
    pub port: Option<u16>,
}

impl Authority {
    /// Parses `host[:port]` (IPv6 in brackets when a port follows). User
    /// information (`user@`) is refused: it has no place in a name that is
    /// compared.
    pub fn parse(text: &str) -> Result<Authority, String> {
        let shown = || text.chars().take(80).collect::<String>().escape_debug().to_string();
        if text.contains(['@', '/', '?', '#', '\\']) || text.chars().any(|c| c.is_whitespace() || c.is_control()) {
            return Err(format!("`{}` is not `HOST[:PORT]`", shown()));
        }
        let (host, port) = if text.starts_with('[') {
            let end = text.find(']').ok_or_else(|| format!("`{}`: an IPv6 address needs its `]`", shown()))?;
            match &text[end + 1..] {
                "" => (&text[..=end], None),
                rest => match rest.strip_prefix(':') {
                    Some(port) => (&text[..=end], Some(port)),
                    None => return Err(format!("`{}`: expected `:PORT` after the IPv6 address", shown())),
                },
            }
        } else if text.matches(':').count() > 1 {
            (text, None)
        } else {
            match text.split_once(':') {
                Some((host, port)) => (host, Some(port)),
                None => (text, None),
            }
        };
        let port = match port {
            None => None,
            Some(port) => match port.parse::<u16>() {
                Ok(number) if number > 0 && port.bytes().all(|byte| byte.is_ascii_digit()) => Some(number),
                _ => return Err(format!("`{}`: `{}` is not a port (1 to 65535)", shown(), port.escape_debug())),
            },
        };
        Ok(Authority { host: CanonicalHost::parse(host)?, port })
    }
}

impl fmt::Display for Authority {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "{}", self.host)?;
        match self.port {
            Some(port) => write!(f, ":{port}"),
            None => Ok(()),
        }
    }
}

/// An `http` or `https` URL, parsed whole: its scheme, canonical host and
/// port (the scheme's default when none is written).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Endpoint {
    /// `http` or `https`.
    pub scheme: &'static str,
    /// The host.
    pub host: CanonicalHost,
    /// The port.
    pub port: u16,
    /// The URL as the parser normalized it (what is sent).
    pub url: String,
}

impl Endpoint {
    /// Parses an absolute `http://` or `https://` URL. User information in
    /// it is refused, since it hides the host from a reader.
    pub fn parse(text: &str) -> Result<Endpoint, String> {
        let shown = || text.chars().take(200).collect::<String>().escape_debug().to_string();
        let url = url::Url::parse(text.trim()).map_err(|err| format!("`{}` is not a URL ({err})", shown()))?;
        let scheme = match url.scheme() {
            "http" => "http",
            "https" => "https",
            other => return Err(format!("`{}`: the scheme `{other}` is not `http` or `https`", shown())),
        };
        if !url.username().is_empty() || url.password().is_some() {
            return Err(format!(
                "`{}` holds user information before `@`, which hides the host it really names; \
                 write the URL without it",
                shown()
            ));
        }
        let host = match url.host() {
            Some(url::Host::Domain(name)) => CanonicalHost::parse(name)?,
            Some(url::Host::Ipv4(ip)) => CanonicalHost::Ip(IpAddr::V4(ip)),
            Some(url::Host::Ipv6(ip)) => CanonicalHost::from_ip(IpAddr::V6(ip)),
            None => return Err(format!("`{}` names no host", shown())),
        };
        let port = url.port_or_known_default().unwrap_or(if scheme == "https" { 443 } else { 80 });
        Ok(Endpoint { scheme, host, port, url: url.to_string() })
    }

    /// True for `https`, or plain `http` to this machine: where a secret may
    /// be sent.
    pub fn is_private_channel(&self) -> bool {
        self.scheme == "https" || self.host.is_loopback()
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::net::Ipv4Addr;

    #[test]
    fn every_spelling_of_a_host_is_one_form() {
        let loopback = CanonicalHost::Ip(IpAddr::V4(Ipv4Addr::LOCALHOST));
        for spelling in [
            "127.0.0.1",
            "127.1",
            "2130706433",
            "0x7f000001",
            "0x7f.0.0.1",
            "0177.0.0.1",
            "127.0.0.1.",
            "[::ffff:127.0.0.1]",
            "::ffff:7f00:1",
            "%31%32%37.0.0.1",
        ] {
            assert_eq!(CanonicalHost::parse(spelling).unwrap(), loopback, "{spelling}");
        }
        let name = CanonicalHost::Name("example.com".into());
        for spelling in ["example.com", "EXAMPLE.COM", "Example.Com.", "ＥＸＡＭＰＬＥ.com", "ex%61mple.com"] {
            assert_eq!(CanonicalHost::parse(spelling).unwrap(), name, "{spelling}");
        }
        assert_eq!(CanonicalHost::parse("LOCALHOST.").unwrap(), CanonicalHost::Name("localhost".into()));
        assert_eq!(CanonicalHost::parse("bücher.de").unwrap(), CanonicalHost::Name("xn--bcher-kva.de".into()));
        assert_eq!(CanonicalHost::parse("[0:0:0:0:0:0:0:1]").unwrap().to_string(), "[::1]");
    }

    #[test]
    fn what_is_not_a_host_is_refused() {
        for bad in ["", ".", "a..b", "exa mple.com", "[::1", "999.1.1.1.1", "a/b", "."] {
            assert!(CanonicalHost::parse(bad).is_err(), "{bad}");
        }
    }

    #[test]
    fn loopback_is_read_from_the_parsed_host() {
        for yes in ["localhost", "LocalHost.", "127.1", "[::1]", "[::ffff:127.0.0.2]", "2130706433"] {
            assert!(CanonicalHost::parse(yes).unwrap().is_loopback(), "{yes}");
        }
        for no in ["localhost.evil.com", "10.0.0.1", "[::2]", "example.com"] {
            assert!(!CanonicalHost::parse(no).unwrap().is_loopback(), "{no}");
        }
    }

    #[test]
    fn authorities_keep_their_port_and_refuse_user_information() {
        let parse = |text| Authority::parse(text).map(|authority| authority.to_string());
        assert_eq!(parse("LOCALHOST:5000").unwrap(), "localhost:5000");
        assert_eq!(parse("127.1:5000").unwrap(), "127.0.0.1:5000");
        assert_eq!(parse("[::1]:5000").unwrap(), "[::1]:5000");
        assert_eq!(parse("GHCR.io").unwrap(), "ghcr.io");
        for bad in ["user@ghcr.io", "ghcr.io:", "ghcr.io:0", "ghcr.io:+80", "ghcr.io/x", "[::1]x"] {
            assert!(Authority::parse(bad).is_err(), "{bad}");
        }
    }

    #[test]
    fn urls_are_read_by_their_real_host() {
        let endpoint = Endpoint::parse("HTTP://LOCALHOST:8080/token").unwrap();
        assert_eq!((endpoint.scheme, endpoint.port), ("http", 8080));
        assert!(endpoint.is_private_channel());
        assert!(Endpoint::parse("http://127.1/t").unwrap().is_private_channel());
        assert!(Endpoint::parse("https://auth.example/t").unwrap().is_private_channel());
        assert!(!Endpoint::parse("http://auth.example/t").unwrap().is_private_channel());
        assert!(!Endpoint::parse("http://127.0.0.1.evil.example/t").unwrap().is_private_channel());
        let err = Endpoint::parse("http://127.0.0.1:1@remote.example/token").unwrap_err();
        assert!(err.contains("user information"), "{err}");
        assert!(Endpoint::parse("ftp://example.com/").is_err());
        assert_eq!(Endpoint::parse("https://example.com/").unwrap().port, 443);
    }
}

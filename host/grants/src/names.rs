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

/// A request's path as the servers that may receive it could read it.
///
/// Servers disagree on a path's spelling: some split segments at an encoded
/// slash (`%2F`, `%5C`) or a backslash and some keep it as data; some drop
/// `;` parameters from a segment (`/a;x=1/b` is `/a/b`, and `..;` is `..`)
/// and some keep them; some merge empty segments (`//`) and some keep them,
/// which moves where a later `..` lands. So a path is parsed into every
/// reading those choices give (eight), each a list of segments percent-decoded
/// (`%2e` and `%2E` are `.`, `%41` is `A`), with `.` and `..` resolved as RFC
/// 3986 §5.2.4 does; a path rule admits a request only when it admits every
/// reading. A path holding an encoded or raw control byte (`%00`, a line
/// break) is no path at all. The query is not part of it.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct RequestPath {
    readings: Vec<Vec<Vec<u8>>>,
}

impl RequestPath {
    /// Parses the path of a request target (`/a/b?q`: the query is left
    /// out). It must start with `/` (an empty path is `/`).
    pub fn parse(target: &str) -> Result<RequestPath, String> {
        let path = target.split(['?', '#']).next().unwrap_or_default();
        let shown = || path.chars().take(120).collect::<String>().escape_debug().to_string();
        let path = if path.is_empty() { "/" } else { path };
        let Some(rest) = path.strip_prefix('/') else {
            return Err(format!("`{}` is not a path (it does not start with `/`)", shown()));
        };
        if path.bytes().any(|byte| byte.is_ascii_control() || byte == b' ') {
            return Err(format!("`{}` holds a control character or a space", shown()));
        }
        let mut readings = Vec::new();
        for strip_parameters in [true, false] {
            for split_encoded in [true, false] {
                for merge_empty in [true, false] {
                    let mut segments: Vec<Vec<u8>> = Vec::new();
                    // An empty remainder (`/`) has no segments.
                    let raw: Vec<&str> = if rest.is_empty() { Vec::new() } else { rest.split(['/', '\\']).collect() };
                    for raw in raw {
                        let raw = if strip_parameters { raw.split(';').next().unwrap_or_default() } else { raw };
                        let decoded = percent_decode(raw);
                        if decoded.iter().any(|byte| byte.is_ascii_control()) {
                            return Err(format!("`{}` holds an encoded control character", shown()));
                        }
                        let pieces: Vec<&[u8]> = if split_encoded {
                            decoded.split(|byte| *byte == b'/' || *byte == b'\\').collect()
                        } else {
                            vec![&decoded[..]]
                        };
                        for piece in pieces {
                            match piece {
                                b"." => {}
                                b".." => {
                                    segments.pop();
                                }
                                b"" if merge_empty => {}
                                other => segments.push(other.to_vec()),
                            }
                        }
                    }
                    if !readings.contains(&segments) {
                        readings.push(segments);
                    }
                }
            }
        }
        Ok(RequestPath { readings })
    }

    /// Every reading: its segments, decoded.
    pub fn readings(&self) -> &[Vec<Vec<u8>>] {
        &self.readings
    }
}

/// `%XX` decoded (either case of hex); a `%` not followed by two hex digits
/// stays as it is.
pub fn percent_decode(text: &str) -> Vec<u8> {
    let bytes = text.as_bytes();
    let mut out = Vec::with_capacity(bytes.len());
    let mut at = 0;
    while at < bytes.len() {
        let escaped = (bytes[at] == b'%')
            .then(|| bytes.get(at + 1..at + 3))
            .flatten()
            .and_then(|hex| std::str::from_utf8(hex).ok())
            .filter(|hex| hex.bytes().all(|byte| byte.is_ascii_hexdigit()))
            .and_then(|hex| u8::from_str_radix(hex, 16).ok());
        match escaped {
            Some(byte) => {
                out.push(byte);
                at += 3;
            }
            None => {
                out.push(bytes[at]);
                at += 1;
            }
        }
    }
    out
}

/// A path pattern of an `http` grant entry: `/repos/*/issues`, `/v1/**`.
/// Each segment is a literal (compared with a request's decoded segments,
/// so `%7E` and `~` are one), `*` (exactly one segment, not empty), or, last
/// only, `**` (any number of segments, none included).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct PathPattern {
    segments: Vec<PathSegment>,
}

#[derive(Debug, Clone, PartialEq, Eq)]
enum PathSegment {
    Literal(Vec<u8>),
    One,
    Rest,
}

impl PathPattern {
    /// Parses a pattern as written in a grant entry (starting with `/`).
    pub fn parse(text: &str) -> Result<PathPattern, String> {
        let shown = || text.chars().take(120).collect::<String>().escape_debug().to_string();
        let Some(rest) = text.strip_prefix('/') else {
            return Err(format!("the path pattern `{}` must start with `/`", shown()));
        };
        let mut segments = Vec::new();
        if rest.is_empty() {
            return Ok(PathPattern { segments });
        }
        let parts: Vec<&str> = rest.split('/').collect();
        for (index, part) in parts.iter().enumerate() {
            let last = index + 1 == parts.len();
            let segment = match *part {
                "**" if last => PathSegment::Rest,
                "**" => {
                    return Err(format!("`{}`: `**` (any number of segments) may only end a path pattern", shown()));
                }
                "*" => PathSegment::One,
                "" if last => {
                    return Err(format!(
                        "`{}` ends with `/`: write it without (`{}`), or with `/**` for everything below it",
                        shown(),
                        text.trim_end_matches('/')
                    ));
                }
                "" => return Err(format!("`{}` has an empty segment (`//`)", shown())),
                literal => {
                    if literal.contains('*') {
                        return Err(format!(
                            "`{}`: a `*` stands for a whole segment (`/repos/*/issues`) and `**` for the rest of \
                             the path (`/repos/**`), never for part of a segment",
                            shown()
                        ));
                    }
                    if literal.contains([';', '?', '#', '\\']) {
                        return Err(format!("`{}`: a path pattern cannot hold `;`, `?`, `#` or `\\`", shown()));
                    }
                    let decoded = percent_decode(literal);
                    if decoded.iter().any(|byte| byte.is_ascii_control() || *byte == b'/' || *byte == b'\\')
                        || decoded == b"."
                        || decoded == b".."
                    {
                        return Err(format!(
                            "`{}`: a segment of a path pattern cannot be `.`, `..`, or hold an encoded `/`, `\\` \
                             or control character",
                            shown()
                        ));
                    }
                    PathSegment::Literal(decoded)
                }
            };
            segments.push(segment);
        }
        Ok(PathPattern { segments })
    }

    /// Whether every reading of `path` matches.
    pub fn admits(&self, path: &RequestPath) -> bool {
        path.readings().iter().all(|segments| self.matches(segments))
    }

    fn matches(&self, segments: &[Vec<u8>]) -> bool {
        let mut at = 0;
        for pattern in &self.segments {
            match pattern {
                PathSegment::Rest => return true,
                PathSegment::One => match segments.get(at) {
                    Some(segment) if !segment.is_empty() => at += 1,
                    _ => return false,
                },
                PathSegment::Literal(literal) => match segments.get(at) {
                    Some(segment) if segment == literal => at += 1,
                    _ => return false,
                },
            }
        }
        at == segments.len()
    }
}

impl fmt::Display for PathPattern {
    /// Written back in one form: literal bytes outside the unreserved set
    /// percent-encoded (upper-case hex).
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        if self.segments.is_empty() {
            return f.write_str("/");
        }
        for segment in &self.segments {
            f.write_str("/")?;
            match segment {
                PathSegment::One => f.write_str("*")?,
                PathSegment::Rest => f.write_str("**")?,
                PathSegment::Literal(bytes) => {
                    for &byte in bytes {
                        if byte.is_ascii_alphanumeric() || b"-._~!$&'()+,=:@".contains(&byte) {
                            write!(f, "{}", byte as char)?;
                        } else {
                            write!(f, "%{byte:02X}")?;
                        }
                    }
                }
            }
        }
        Ok(())
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

    fn readings(path: &str) -> Vec<String> {
        RequestPath::parse(path)
            .unwrap()
            .readings()
            .iter()
            .map(|segments| {
                segments.iter().map(|segment| format!("/{}", String::from_utf8_lossy(segment))).collect::<String>()
            })
            .collect()
    }

    #[test]
    fn a_path_is_read_every_way_a_server_could() {
        assert_eq!(readings("/repos/a/b?x=/../admin"), ["/repos/a/b"]);
        assert_eq!(readings(""), [""]);
        assert_eq!(readings("/a/./b/../c"), ["/a/c"]);
        assert_eq!(readings("/a/%2e%2E/admin"), ["/admin"], "encoded dots are dots");
        assert_eq!(readings("/r%65pos"), ["/repos"], "unreserved characters decoded");
        let slash = readings("/repos/x%2F..%2F..%2Fadmin");
        assert!(
            slash.contains(&"/admin".to_owned()) && slash.contains(&"/repos/x/../../admin".to_owned()),
            "{slash:?}"
        );
        let parameters = readings("/repos/..;/admin");
        assert!(parameters.contains(&"/admin".to_owned()), "{parameters:?}");
        assert!(parameters.contains(&"/repos/..;/admin".to_owned()), "{parameters:?}");
        let empty = readings("/a//../b");
        assert!(empty.contains(&"/b".to_owned()) && empty.contains(&"/a/b".to_owned()), "{empty:?}");
        assert!(readings("/a\\..\\..\\b").contains(&"/b".to_owned()));
        for bad in ["/a%00b", "/a%0ab", "*", "relative/path", "/a b"] {
            assert!(RequestPath::parse(bad).is_err(), "{bad}");
        }
    }

    #[test]
    fn a_path_pattern_admits_a_path_only_when_every_reading_matches() {
        let repos = PathPattern::parse("/repos/**").unwrap();
        let issues = PathPattern::parse("/repos/*/issues").unwrap();
        let root = PathPattern::parse("/").unwrap();
        let admits = |pattern: &PathPattern, path: &str| pattern.admits(&RequestPath::parse(path).unwrap());
        for path in
            ["/repos", "/repos/", "/repos/a/b", "/REPOS/../repos/x", "/r%65pos/a", "/repos/a%2Fb", "/repos/a;v=1"]
        {
            assert!(admits(&repos, path), "{path}");
        }
        for path in [
            "/admin",
            "/repos/../admin",
            "/repos/%2e%2e/admin",
            "/repos/%2E%2E/admin",
            "/repos/x%2F..%2F..%2Fadmin",
            "/repos/x%2f..%2f..%2fadmin",
            "/repos/..;/admin",
            "/repos/x\\..\\..\\admin",
            "/repos/x/..//../admin",
            "/repos;/../admin",
            "/Repos/a",
            "/repositories",
        ] {
            assert!(!admits(&repos, path), "{path}");
        }
        assert!(admits(&issues, "/repos/a/issues") && admits(&issues, "/repos/a%20b/issues"));
        for path in ["/repos/issues", "/repos//issues", "/repos/a/b/issues", "/repos/a%2Fb/issues", "/repos/a/issues/1"]
        {
            assert!(!admits(&issues, path), "{path}");
        }
        assert!(admits(&root, "/") && admits(&root, "") && !admits(&root, "/a"));
        assert!(admits(&PathPattern::parse("/v1/caf%C3%A9").unwrap(), "/v1/caf%c3%a9"), "case of %xx");
    }

    #[test]
    fn path_patterns_are_written_one_way_and_bad_ones_refused() {
        assert_eq!(PathPattern::parse("/r%65pos/*/x%2a/**").unwrap().to_string(), "/repos/*/x%2A/**");
        for (bad, says) in [
            ("repos", "must start with `/`"),
            ("/repos/", "ends with `/`"),
            ("/a//b", "empty segment"),
            ("/re*", "whole segment"),
            ("/**/x", "may only end"),
            ("/a/../b", "cannot be `.`, `..`"),
            ("/a/%2e%2e/b", "cannot be `.`, `..`"),
            ("/a%2Fb", "encoded `/`"),
            ("/a;b", "cannot hold `;`"),
        ] {
            let err = PathPattern::parse(bad).unwrap_err();
            assert!(err.contains(says), "{bad}: {err}");
        }
    }
}

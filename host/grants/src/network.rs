//! The network grant: which hosts a plugin may reach, and the one check every
//! outgoing request goes through.
//!
//! An operator writes entries such as `https://api.example.com`,
//! `https://*.example.com` or `http://127.0.0.1:8080`; each is parsed once,
//! when the config is read, into a [`HostPattern`] (scheme, host, port). An
//! entry may also name the methods and the path it allows
//! (`GET https://api.github.com/repos/**`, `GET,POST https://api.example.com/v1/*/items`):
//! an [`HttpEntry`]. A malformed entry is rejected with the accepted form and, where one can be
//! guessed, the entry that was probably meant. [`NetworkGrant::admit`] is the
//! runtime check on the method, scheme, host, port and path of a request (the
//! path in every reading a server could give it, [`RequestPath`]);
//! [`HostPattern::may_reach`] is the second check, on the address the host
//! name resolved to, which keeps loopback and private networks out of reach
//! unless an entry names them.

use crate::names::{CanonicalHost, PathPattern, RequestPath};
use serde::{Deserialize, Deserializer, Serialize, Serializer};
use std::fmt;
use std::net::{IpAddr, Ipv4Addr, Ipv6Addr, SocketAddr};
use std::str::FromStr;

/// What a plugin may reach over the network. `Default` reaches nothing.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct NetworkGrant {
    /// Hosts it may send HTTP requests to through `wasi:http`, each maybe
    /// for some methods and paths only.
    pub hosts: Vec<HttpEntry>,
    /// Whether `wasi:sockets` TCP connections are allowed too (to the same
    /// hosts and ports; UDP and listening stay off; never to a host whose
    /// entry names methods or a path, which a raw socket would get around).
    pub sockets: bool,
}

/// What [`NetworkGrant::admit`] decided about one request.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Admission<'a> {
    /// An entry admits it: the host part of that entry (for the address check).
    Allowed(&'a HostPattern),
    /// No entry names this scheme, host and port.
    NotGranted,
    /// Entries name the host, but none of them this method and path (or the
    /// path could not be read as one: `why`).
    OutsideRoutes {
        /// Why the path could not be read, when that is why.
        why: Option<String>,
    },
}

impl NetworkGrant {
    /// The entry (its host part) that lets a request to `scheme://host:port`
    /// through whatever its method and path, if any. `host` is canonical
    /// ([`CanonicalHost::parse`] of what the URI holds).
    pub fn allows(&self, scheme: Scheme, host: &CanonicalHost, port: u16) -> Option<&HostPattern> {
        self.hosts
            .iter()
            .find(|entry| entry.is_whole_host() && entry.target.admits(scheme, host, port))
            .map(|entry| &entry.target)
    }

    /// Whether a request `method scheme://host:port{target}` may go: the
    /// first entry that admits its scheme, host and port, its method and
    /// its path (every reading of it). `target` is the path and query as
    /// the request line carries them; it is parsed only when an entry for
    /// the host names a path.
    pub fn admit(&self, method: &str, scheme: Scheme, host: &CanonicalHost, port: u16, target: &str) -> Admission<'_> {
        let mut path: Option<Result<RequestPath, String>> = None;
        let mut named = false;
        for entry in self.hosts.iter().filter(|entry| entry.target.admits(scheme, host, port)) {
            named = true;
            if !entry.admits_method(method) {
                continue;
            }
            let Some(pattern) = &entry.path else {
                return Admission::Allowed(&entry.target);
            };
            match path.get_or_insert_with(|| RequestPath::parse(target)) {
                Ok(path) if pattern.admits(path) => return Admission::Allowed(&entry.target),
                Ok(_) => {}
                Err(why) => return Admission::OutsideRoutes { why: Some(why.clone()) },
            }
        }
        if named { Admission::OutsideRoutes { why: None } } else { Admission::NotGranted }
    }

    /// True when nothing is granted.
    pub fn is_empty(&self) -> bool {
        self.hosts.is_empty()
    }

    /// Whether a `wasi:sockets` TCP connection to `addr` is allowed: sockets
    /// are granted and an entry names this address's port and either the
    /// address itself or a host name that resolves to it (and may reach it).
    /// Wildcard entries cannot be checked against a bare address, so they never
    /// admit a socket. `resolve` looks a host name up (the runtime's resolver).
    pub async fn check_socket<F, R>(&self, addr: SocketAddr, resolve: F) -> SocketCheck
    where
        F: Fn(String, u16) -> R,
        R: std::future::Future<Output = Vec<IpAddr>>,
    {
        if !self.sockets {
            return SocketCheck::SocketsOff;
        }
        let mut private = None;
        for pattern in self.hosts.iter().filter(|entry| entry.is_whole_host()).map(|entry| &entry.target) {
            let port_ok = match pattern.port {
                Port::Any => true,
                Port::Number(port) => port == addr.port(),
            };
            if !port_ok {
                continue;
            }
            match &pattern.host {
                Host::Ip(ip) if CanonicalHost::Ip(*ip) == CanonicalHost::from_ip(addr.ip()) => {
                    return SocketCheck::Allowed;
                }
                Host::Name(name) if resolve(name.clone(), addr.port()).await.contains(&addr.ip()) => {
                    if pattern.may_reach(addr.ip()) {
                        return SocketCheck::Allowed;
                    }
                    private.get_or_insert_with(|| pattern.naming(addr.ip(), addr.port()));
                }
                _ => {}
            }
        }
        match private {
            Some(allow) => SocketCheck::Private { allow },
            None => SocketCheck::NotGranted,
        }
    }
}

/// What [`NetworkGrant::check_socket`] found.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum SocketCheck {
    /// An entry admits the connection.
    Allowed,
    /// The grant does not turn sockets on.
    SocketsOff,
    /// No entry names the address and port, nor a host name resolving to them.
    NotGranted,
    /// A granted host name resolves to this loopback or private address, which
    /// only an entry naming the address may reach: `allow` is that entry.
    Private {
        /// The entry that would allow it.
        allow: HostPattern,
    },
}

/// One `http` entry: a host pattern, maybe for some methods only and one
/// path pattern: `https://api.example.com` (every method and path),
/// `GET https://api.github.com/repos/**`, `GET,HEAD https://api.example.com/v1/*/items`.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct HttpEntry {
    /// The methods it allows (upper case, exact); `None`: every method.
    pub methods: Option<Vec<String>>,
    /// The scheme, host and port.
    pub target: HostPattern,
    /// The paths it allows; `None`: every path.
    pub path: Option<PathPattern>,
}

impl HttpEntry {
    /// True when it allows every method and path of its hosts.
    pub fn is_whole_host(&self) -> bool {
        self.methods.is_none() && self.path.is_none()
    }

    /// Whether `method`, as the request carries it (case counts: `get` is not
    /// `GET`), is one it allows.
    pub fn admits_method(&self, method: &str) -> bool {
        self.methods.as_ref().is_none_or(|methods| methods.iter().any(|allowed| allowed == method))
    }
}

impl From<HostPattern> for HttpEntry {
    fn from(target: HostPattern) -> HttpEntry {
        HttpEntry { methods: None, target, path: None }
    }
}

impl fmt::Display for HttpEntry {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        if let Some(methods) = &self.methods {
            write!(f, "{} ", methods.join(","))?;
        }
        write!(f, "{}", self.target)?;
        if let Some(path) = &self.path {
            write!(f, "{path}")?;
        }
        Ok(())
    }
}

const ACCEPTED_ENTRY: &str = "write `[METHODS] SCHEME://HOST[:PORT][/PATH]`, e.g. `https://api.example.com`, \
                              `GET https://api.github.com/repos/**` or `GET,POST https://api.example.com/v1/*/items`";

impl FromStr for HttpEntry {
    type Err = String;

    fn from_str(text: &str) -> Result<Self, Self::Err> {
        let entry = text.trim();
        let (methods, url) = match entry.rsplit_once(char::is_whitespace) {
            Some((methods, url)) if !methods.trim().is_empty() => (Some(methods.trim()), url),
            _ => (None, entry),
        };
        let methods = match methods {
            None => None,
            Some(methods) => {
                let mut list = Vec::new();
                for method in methods.split([',', ' ', '\t']).filter(|method| !method.is_empty()) {
                    if method.contains("://") {
                        return Err(format!("`{entry}` names more than one URL: {ACCEPTED_ENTRY}"));
                    }
                    if !method.bytes().all(|byte| byte.is_ascii_alphabetic() || byte == b'-' || byte == b'_') {
                        return Err(format!(
                            "`{entry}`: `{}` is not an HTTP method (such as GET, POST, PUT, PATCH, DELETE, HEAD); \
                             {ACCEPTED_ENTRY}",
                            method.escape_debug()
                        ));
                    }
                    let method = method.to_ascii_uppercase();
                    if !list.contains(&method) {
                        list.push(method);
                    }
                }
                Some(list)
            }
        };
        // The path, if any, is what follows the authority.
        let (head, path) = match url.split_once("://") {
            Some((scheme, rest)) => match rest.find(['/', '?', '#']) {
                Some(at) => (format!("{scheme}://{}", &rest[..at]), Some(&rest[at..])),
                None => (url.to_owned(), None),
            },
            None => match url.find('/') {
                Some(at) => (url[..at].to_owned(), Some(&url[at..])),
                None => (url.to_owned(), None),
            },
        };
        let target: HostPattern = head.parse().map_err(|err: String| match methods {
            Some(_) => format!("{err}; an entry with methods reads {ACCEPTED_ENTRY}"),
            None => err,
        })?;
        let path = match path {
            None => None,
            Some(path) if path.starts_with(['?', '#']) => {
                return Err(format!(
                    "`{entry}`: a grant names a path, never a query or fragment (did you mean `{target}`?)"
                ));
            }
            Some(path) if path.contains(['?', '#']) => {
                return Err(format!("`{entry}`: a grant names a path, never a query or fragment"));
            }
            // `https://host/` is the whole host, as it always was.
            Some("/") => None,
            Some(path) => Some(PathPattern::parse(path).map_err(|err| format!("`{entry}`: {err}"))?),
        };
        Ok(HttpEntry { methods, target, path })
    }
}

impl<'de> Deserialize<'de> for HttpEntry {
    fn deserialize<D: Deserializer<'de>>(deserializer: D) -> Result<Self, D::Error> {
        let text = String::deserialize(deserializer)?;
        text.parse().map_err(serde::de::Error::custom)
    }
}

impl Serialize for HttpEntry {
    fn serialize<S: Serializer>(&self, serializer: S) -> Result<S::Ok, S::Error> {
        serializer.collect_str(self)
    }
}

/// `http` or `https`.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum Scheme {
    /// Plain HTTP.
    Http,
    /// HTTP over TLS.
    Https,
}

impl Scheme {
    /// The port used when an entry or a request names none.
    pub fn default_port(self) -> u16 {
        match self {
            Scheme::Http => 80,
            Scheme::Https => 443,
        }
    }

    /// `http` or `https`.
    pub fn as_str(self) -> &'static str {
        match self {
            Scheme::Http => "http",
            Scheme::Https => "https",
        }
    }
}

/// The host part of an entry.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Host {
    /// `*`: any host.
    Any,
    /// `*.example.com`: any host below `example.com` (not `example.com` itself).
    Subdomains(String),
    /// `api.example.com`, lower-cased.
    Name(String),
    /// `127.0.0.1` or `[::1]`.
    Ip(IpAddr),
}

/// The port part of an entry.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Port {
    /// `:*`: any port.
    Any,
    /// One port; the scheme's default when the entry names none.
    Number(u16),
}

/// One allowlist entry: a scheme, a host (exact, `*.` wildcard, `*` or an IP
/// address) and a port (the scheme's default unless given, or `*`).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct HostPattern {
    /// `http` or `https`.
    pub scheme: Scheme,
    /// Which hosts.
    pub host: Host,
    /// Which ports.
    pub port: Port,
}

impl HostPattern {
    /// Whether a request to `scheme://host:port` matches this entry; `host`
    /// canonical ([`CanonicalHost::parse`]), so every spelling of a name or
    /// an address is judged alike.
    pub fn admits(&self, scheme: Scheme, host: &CanonicalHost, port: u16) -> bool {
        self.matches(scheme, host, port)
    }

    fn matches(&self, scheme: Scheme, host: &CanonicalHost, port: u16) -> bool {
        if self.scheme != scheme {
            return false;
        }
        if let Port::Number(allowed) = self.port
            && allowed != port
        {
            return false;
        }
        match (&self.host, host) {
            (Host::Any, _) => true,
            (Host::Name(allowed), CanonicalHost::Name(name)) => allowed == name,
            (Host::Subdomains(suffix), CanonicalHost::Name(name)) => {
                name.len() > suffix.len() + 1
                    && name.ends_with(suffix.as_str())
                    && name.as_bytes()[name.len() - suffix.len() - 1] == b'.'
            }
            (Host::Ip(allowed), CanonicalHost::Ip(ip)) => allowed == ip,
            _ => false,
        }
    }

    /// Whether a connection admitted by this entry may go to `ip`, the
    /// address its host name resolved to. Public addresses always may;
    /// loopback, private, link-local and other special addresses only when the
    /// entry names that address (`http://127.0.0.1:8080`) or, for loopback,
    /// `localhost`. So a public name that resolves (or is rebound) to an
    /// internal address cannot reach it.
    pub fn may_reach(&self, ip: IpAddr) -> bool {
        match &self.host {
            Host::Ip(allowed) => CanonicalHost::Ip(*allowed) == CanonicalHost::from_ip(ip),
            Host::Name(name) if name == "localhost" => ip.is_loopback() || is_public(ip),
            _ => is_public(ip),
        }
    }

    /// This entry with its host replaced by `ip` and its port by `port`: the
    /// entry an operator writes to let a connection reach that very address.
    pub fn naming(&self, ip: IpAddr, port: u16) -> HostPattern {
        let ip = match CanonicalHost::from_ip(ip) {
            CanonicalHost::Ip(ip) => ip,
            CanonicalHost::Name(_) => ip,
        };
        HostPattern { scheme: self.scheme, host: Host::Ip(ip), port: Port::Number(port) }
    }

    /// Whether every request this `other` entry admits is admitted by this one.
    pub fn covers(&self, other: &HostPattern) -> bool {
        if self.scheme != other.scheme {
            return false;
        }
        let ports = match (self.port, other.port) {
            (Port::Any, _) => true,
            (Port::Number(a), Port::Number(b)) => a == b,
            (Port::Number(_), Port::Any) => false,
        };
        let hosts = match (&self.host, &other.host) {
            (Host::Any, _) => true,
            (Host::Name(a), Host::Name(b)) => a == b,
            (Host::Ip(a), Host::Ip(b)) => a == b,
            (Host::Subdomains(a), Host::Name(b)) => b.ends_with(&format!(".{a}")),
            (Host::Subdomains(a), Host::Subdomains(b)) => a == b || b.ends_with(&format!(".{a}")),
            _ => false,
        };
        ports && hosts
    }
}

impl fmt::Display for HostPattern {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "{}://", self.scheme.as_str())?;
        match &self.host {
            Host::Any => write!(f, "*")?,
            Host::Subdomains(suffix) => write!(f, "*.{suffix}")?,
            Host::Name(name) => write!(f, "{name}")?,
            Host::Ip(IpAddr::V4(ip)) => write!(f, "{ip}")?,
            Host::Ip(IpAddr::V6(ip)) => write!(f, "[{ip}]")?,
        }
        match self.port {
            Port::Any => write!(f, ":*"),
            Port::Number(port) if port == self.scheme.default_port() => Ok(()),
            Port::Number(port) => write!(f, ":{port}"),
        }
    }
}

const ACCEPTED: &str = "write `SCHEME://HOST[:PORT]`, e.g. `https://api.example.com`, \
                        `https://*.example.com` or `http://127.0.0.1:8080`";

impl FromStr for HostPattern {
    type Err = String;

    fn from_str(text: &str) -> Result<Self, Self::Err> {
        let entry = text.trim();
        if entry.is_empty() {
            return Err(format!("an empty host entry: {ACCEPTED}"));
        }
        let Some((scheme, rest)) = entry.split_once("://") else {
            let guess = format!("https://{}", entry.trim_start_matches(':').trim_start_matches('/'));
            return Err(match guess.parse::<HostPattern>() {
                Ok(pattern) => format!("`{entry}` has no scheme: did you mean `{pattern}`? ({ACCEPTED})"),
                Err(_) => format!("`{entry}` is not a host entry: {ACCEPTED}"),
            });
        };
        let scheme = match scheme.to_ascii_lowercase().as_str() {
            "http" => Scheme::Http,
            "https" => Scheme::Https,
            "*" => {
                return Err(format!(
                    "`{entry}`: the scheme must be `http` or `https`; write one entry for each \
                     (did you mean `https://{rest}`?)"
                ));
            }
            other => {
                return Err(format!(
                    "`{entry}`: the scheme `{other}` is not supported; the scheme must be `http` or \
                     `https` (did you mean `https://{rest}`?)"
                ));
            }
        };
        let (authority, path) = match rest.find(['/', '?', '#']) {
            Some(at) => rest.split_at(at),
            None => (rest, ""),
        };
        if !path.is_empty() && path != "/" {
            let fixed = format!("{}://{authority}", scheme.as_str());
            return Err(format!(
                "`{entry}` names a path, but grants are per host (and port), not per path: \
                 did you mean `{fixed}`?"
            ));
        }
        if let Some((_, host)) = authority.rsplit_once('@') {
            return Err(format!(
                "`{entry}` has user information before `@`, which a grant cannot have: \
                 did you mean `{}://{host}`?",
                scheme.as_str()
            ));
        }
        let (host, port) = split_host_port(entry, authority)?;
        let port = match port {
            None => Port::Number(scheme.default_port()),
            Some("*") => Port::Any,
            Some(number) => match number.parse::<u16>() {
                Ok(port) if port > 0 => Port::Number(port),
                _ => {
                    return Err(format!(
                        "`{entry}`: `{number}` is not a port: write a number from 1 to 65535, or `*` \
                         for any port"
                    ));
                }
            },
        };
        let host = parse_host(entry, scheme, host)?;
        Ok(HostPattern { scheme, host, port })
    }
}

/// Splits `host[:port]` or `[v6][:port]`.
fn split_host_port<'a>(entry: &str, authority: &'a str) -> Result<(&'a str, Option<&'a str>), String> {
    if authority.starts_with('[') {
        let Some(end) = authority.find(']') else {
            return Err(format!("`{entry}`: an IPv6 address needs its closing `]`, as in `http://[::1]:8080`"));
        };
        let (host, rest) = authority.split_at(end + 1);
        return match rest.strip_prefix(':') {
            Some(port) => Ok((host, Some(port))),
            None if rest.is_empty() => Ok((host, None)),
            None => Err(format!("`{entry}`: expected `:PORT` after the IPv6 address")),
        };
    }
    match authority.split_once(':') {
        Some((host, port)) if !port.contains(':') => Ok((host, Some(port))),
        Some(_) => Err(format!("`{entry}`: an IPv6 address must be in brackets, as in `http://[::1]:8080`")),
        None => Ok((authority, None)),
    }
}

fn parse_host(entry: &str, scheme: Scheme, host: &str) -> Result<Host, String> {
    if host.is_empty() || host == "." {
        return Err(format!("`{entry}` has no host: {ACCEPTED}"));
    }
    if host == "*" {
        return Ok(Host::Any);
    }
    if let Some(suffix) = host.strip_prefix("*.") {
        let suffix = match CanonicalHost::parse(suffix).map_err(|why| format!("`{entry}`: {why}"))? {
            CanonicalHost::Name(name) => name,
            CanonicalHost::Ip(_) => {
                return Err(format!("`{entry}`: a `*.` wildcard stands for names below a domain, not an address"));
            }
        };
        check_name(entry, &suffix)?;
        if !suffix.contains('.') {
            return Err(format!(
                "`{entry}`: `*.{suffix}` is too broad; name a domain, as in `{}://*.example.{suffix}`, \
                 or write `{}://*` to allow every host",
                scheme.as_str(),
                scheme.as_str()
            ));
        }
        return Ok(Host::Subdomains(suffix));
    }
    if host.contains('*') {
        let guess = if let Some(rest) = host.strip_prefix('*') {
            format!(" (did you mean `{}://*.{}`?)", scheme.as_str(), rest.trim_start_matches('.'))
        } else {
            String::new()
        };
        return Err(format!(
            "`{entry}`: a `*` may only stand for the leftmost labels of a host, as in \
             `https://*.example.com`, or for every host, as in `https://*`{guess}"
        ));
    }
    if let Some(inner) = host.strip_prefix('[').and_then(|rest| rest.strip_suffix(']'))
        && inner.parse::<Ipv6Addr>().is_err()
    {
        return Err(format!("`{entry}`: `{inner}` is not an IPv6 address"));
    }
    match CanonicalHost::parse(host).map_err(|why| format!("`{entry}`: {why}"))? {
        CanonicalHost::Ip(ip) => Ok(Host::Ip(ip)),
        CanonicalHost::Name(name) => {
            check_name(entry, &name)?;
            Ok(Host::Name(name))
        }
    }
}

/// Letters, digits, `-` and `_` in dot-separated labels of 1 to 63 characters.
fn check_name(entry: &str, name: &str) -> Result<(), String> {
    let labels_ok = name.len() <= 253
        && name.split('.').all(|label| {
            !label.is_empty()
                && label.len() <= 63
                && !label.starts_with('-')
                && !label.ends_with('-')
                && label.bytes().all(|byte| byte.is_ascii_alphanumeric() || byte == b'-' || byte == b'_')
        });
    if labels_ok {
        Ok(())
    } else {
        Err(format!("`{entry}`: `{name}` is not a host name (letters, digits and `-` in dot-separated labels)"))
    }
}

impl<'de> Deserialize<'de> for HostPattern {
    fn deserialize<D: Deserializer<'de>>(deserializer: D) -> Result<Self, D::Error> {
        let text = String::deserialize(deserializer)?;
        text.parse().map_err(serde::de::Error::custom)
    }
}

impl Serialize for HostPattern {
    fn serialize<S: Serializer>(&self, serializer: S) -> Result<S::Ok, S::Error> {
        serializer.collect_str(self)
    }
}

/// Whether `ip` is an ordinary public address. Loopback, private (RFC 1918,
/// unique local), link-local (which includes cloud metadata endpoints),
/// carrier-grade NAT, unspecified, broadcast, multicast, documentation and
/// reserved ranges are not, nor are IPv6 addresses that embed such an IPv4
/// address (mapped, compatible, NAT64, 6to4).
pub fn is_public(ip: IpAddr) -> bool {
    match ip {
        IpAddr::V4(ip) => is_public_v4(ip),
        IpAddr::V6(ip) => is_public_v6(ip),
    }
}

fn is_public_v4(ip: Ipv4Addr) -> bool {
    let [a, b, c, _] = ip.octets();
    let special = a == 0                                   // "this network"
        || a == 10                                         // private
        || a == 127                                        // loopback
        || (a == 100 && (64..128).contains(&b))            // carrier-grade NAT
        || (a == 169 && b == 254)                          // link-local, cloud metadata
        || (a == 172 && (16..32).contains(&b))             // private
        || (a == 192 && b == 0 && c == 0)                  // IETF protocol assignments
        || (a == 192 && b == 0 && c == 2)                  // documentation
        || (a == 192 && b == 88 && c == 99)                // 6to4 relay anycast
        || (a == 192 && b == 168)                          // private
        || (a == 198 && (18..20).contains(&b))             // benchmarking
        || (a == 198 && b == 51 && c == 100)               // documentation
        || (a == 203 && b == 0 && c == 113)                // documentation
        || a >= 224; // multicast, reserved, broadcast
    !special
}

fn is_public_v6(ip: Ipv6Addr) -> bool {
    let segments = ip.segments();
    if let Some(v4) = ip.to_ipv4_mapped() {
        return is_public_v4(v4);
    }
    // ::/96 (unspecified, loopback and the deprecated IPv4-compatible form).
    if segments[..6] == [0; 6] {
        return false;
    }
    // 64:ff9b::/96 and 64:ff9b:1::/48, NAT64: check the embedded IPv4 address.
    if segments[0] == 0x64 && segments[1] == 0xff9b {
        let [_, _, _, _, _, _, hi, lo] = segments;
        return is_public_v4(Ipv4Addr::new((hi >> 8) as u8, hi as u8, (lo >> 8) as u8, lo as u8));
    }
    // 2002::/16, 6to4: the IPv4 address is in the second and third segments.
    if segments[0] == 0x2002 {
        let (hi, lo) = (segments[1], segments[2]);
        return is_public_v4(Ipv4Addr::new((hi >> 8) as u8, hi as u8, (lo >> 8) as u8, lo as u8));
    }
    let special = (segments[0] & 0xfe00) == 0xfc00         // unique local
        || (segments[0] & 0xffc0) == 0xfe80                // link-local
        || (segments[0] & 0xffc0) == 0xfec0                // site-local (deprecated)
        || (segments[0] & 0xff00) == 0xff00                // multicast
        || (segments[0] == 0x2001 && segments[1] == 0x0db8) // documentation
        || segments[0] == 0x0100 && segments[1..4] == [0; 3]; // discard-only
    !special
}

#[cfg(test)]
mod tests {
    use super::*;

    fn pattern(text: &str) -> HostPattern {
        text.parse().unwrap_or_else(|err| panic!("{text}: {err}"))
    }

    #[test]
    fn accepts_host_entries() {
        let cases = [
            ("https://api.example.com", Scheme::Https, Host::Name("api.example.com".into()), Port::Number(443)),
            ("http://api.example.com", Scheme::Http, Host::Name("api.example.com".into()), Port::Number(80)),
            ("HTTPS://API.Example.COM/", Scheme::Https, Host::Name("api.example.com".into()), Port::Number(443)),
            ("https://api.example.com.", Scheme::Https, Host::Name("api.example.com".into()), Port::Number(443)),
            ("https://*.example.com", Scheme::Https, Host::Subdomains("example.com".into()), Port::Number(443)),
            ("https://*.example.com:8443", Scheme::Https, Host::Subdomains("example.com".into()), Port::Number(8443)),
            ("http://127.0.0.1:8080", Scheme::Http, Host::Ip("127.0.0.1".parse().unwrap()), Port::Number(8080)),
            ("http://[::1]:8080", Scheme::Http, Host::Ip("::1".parse().unwrap()), Port::Number(8080)),
            ("https://[2001:db8::1]", Scheme::Https, Host::Ip("2001:db8::1".parse().unwrap()), Port::Number(443)),
            ("https://*", Scheme::Https, Host::Any, Port::Number(443)),
            ("http://*:*", Scheme::Http, Host::Any, Port::Any),
            ("https://example.com:*", Scheme::Https, Host::Name("example.com".into()), Port::Any),
            ("http://localhost:3000", Scheme::Http, Host::Name("localhost".into()), Port::Number(3000)),
            (
                "  https://my_host.internal.example  ",
                Scheme::Https,
                Host::Name("my_host.internal.example".into()),
                Port::Number(443),
            ),
        ];
        for (text, scheme, host, port) in cases {
            assert_eq!(pattern(text), HostPattern { scheme, host, port }, "{text}");
        }
    }

    #[test]
    fn accepts_and_shows_entries_in_their_shortest_form() {
        let cases = [
            ("https://api.example.com:443", "https://api.example.com"),
            ("HTTP://Example.com:80/", "http://example.com"),
            ("http://[::1]:8080", "http://[::1]:8080"),
            ("https://*.example.com", "https://*.example.com"),
            ("http://*:*", "http://*:*"),
        ];
        for (text, shown) in cases {
            assert_eq!(pattern(text).to_string(), shown, "{text}");
            assert_eq!(pattern(shown), pattern(text), "{shown} reads back the same");
        }
    }

    #[test]
    fn rejects_malformed_entries_with_a_fix() {
        let cases = [
            ("", "an empty host entry"),
            ("api.example.com", "did you mean `https://api.example.com`?"),
            ("*.example.com", "did you mean `https://*.example.com`?"),
            ("example.com:8080", "did you mean `https://example.com:8080`?"),
            ("ftp://files.example.com", "the scheme `ftp` is not supported"),
            ("*://example.com", "did you mean `https://example.com`?"),
            ("https://api.example.com/v1/users", "did you mean `https://api.example.com`?"),
            ("https://example.com?q=1", "did you mean `https://example.com`?"),
            ("https://user:pw@example.com", "did you mean `https://example.com`?"),
            ("https://*example.com", "did you mean `https://*.example.com`?"),
            ("https://api.*.example.com", "leftmost labels"),
            ("https://*.com", "too broad"),
            ("https://example.com:0", "not a port"),
            ("https://example.com:99999", "not a port"),
            ("https://example.com:http", "not a port"),
            ("https://", "has no host"),
            ("https://:8080", "has no host"),
            ("http://::1:8080", "must be in brackets"),
            ("http://[::1", "closing `]`"),
            ("http://[nope]:80", "not an IPv6 address"),
            ("https://exa mple.com", "not a host name"),
            ("https://-bad.example.com", "not a host name"),
        ];
        for (text, expected) in cases {
            let err = text.parse::<HostPattern>().unwrap_err();
            assert!(err.contains(expected), "{text:?}: {err}");
        }
    }

    #[test]
    fn rejects_entries_naming_the_accepted_form() {
        for text in ["", "https://", "not a url at all"] {
            let err = text.parse::<HostPattern>().unwrap_err();
            assert!(err.contains("SCHEME://HOST[:PORT]"), "{text:?}: {err}");
        }
    }

    fn grant(entries: &[&str]) -> NetworkGrant {
        NetworkGrant { hosts: entries.iter().map(|entry| entry.parse().unwrap()).collect(), sockets: false }
    }

    #[test]
    fn allows_only_matching_scheme_host_and_port() {
        let grant =
            grant(&["https://api.example.com", "https://*.example.org", "http://127.0.0.1:8080", "http://[::1]:9000"]);
        let allowed = [
            (Scheme::Https, "api.example.com", 443),
            (Scheme::Https, "API.EXAMPLE.COM", 443),
            (Scheme::Https, "api.example.com.", 443),
            (Scheme::Https, "a.example.org", 443),
            (Scheme::Https, "a.b.example.org", 443),
            (Scheme::Http, "127.0.0.1", 8080),
            (Scheme::Http, "[::1]", 9000),
            // Other spellings of the same names and addresses.
            (Scheme::Https, "ＡＰＩ.example.com", 443),
            (Scheme::Https, "api%2Eexample.com", 443),
            (Scheme::Http, "127.1", 8080),
            (Scheme::Http, "2130706433", 8080),
            (Scheme::Http, "0x7f.0.0.1", 8080),
            (Scheme::Http, "[::ffff:127.0.0.1]", 8080),
            (Scheme::Http, "[0:0:0:0:0:0:0:1]", 9000),
        ];
        let allows = |grant: &NetworkGrant, scheme, host: &str, port| {
            CanonicalHost::parse(host).is_ok_and(|host| grant.allows(scheme, &host, port).is_some())
        };
        for (scheme, host, port) in allowed {
            assert!(allows(&grant, scheme, host, port), "{scheme:?} {host} {port}");
        }
        let denied = [
            (Scheme::Http, "api.example.com", 80),    // other scheme
            (Scheme::Https, "api.example.com", 8443), // other port
            (Scheme::Https, "example.com", 443),      // other host
            (Scheme::Https, "evil-api.example.com", 443),
            (Scheme::Https, "api.example.com.evil.net", 443),
            (Scheme::Https, "example.org", 443), // the wildcard is for subdomains only
            (Scheme::Https, "badexample.org", 443),
            (Scheme::Http, "127.0.0.1", 8081),
            (Scheme::Http, "localhost", 8080), // a name is not the address it resolves to
            (Scheme::Http, "127.0.0.2", 8080),
            (Scheme::Http, "[::2]", 9000),
            (Scheme::Http, "", 8080),
        ];
        for (scheme, host, port) in denied {
            assert!(!allows(&grant, scheme, host, port), "{scheme:?} {host} {port}");
        }
        assert!(!allows(&NetworkGrant::default(), Scheme::Https, "api.example.com", 443), "the default denies");
    }

    /// Checks `addr` with the system resolver (blocking, which is fine here).
    fn check(grant: &NetworkGrant, addr: &str) -> SocketCheck {
        use std::net::ToSocketAddrs;
        let resolve = |name: String, port: u16| {
            let found = (name.as_str(), port).to_socket_addrs().map(|found| found.map(|a| a.ip()).collect());
            std::future::ready(found.unwrap_or_default())
        };
        let check = std::pin::pin!(grant.check_socket(addr.parse().unwrap(), resolve));
        match check.poll(&mut std::task::Context::from_waker(std::task::Waker::noop())) {
            std::task::Poll::Ready(check) => check,
            std::task::Poll::Pending => unreachable!("the resolver is ready at once"),
        }
    }

    #[test]
    fn a_socket_goes_only_where_an_entry_names_and_a_private_one_names_the_fix() {
        let mut grant = grant(&["http://127.0.0.1:9000", "http://*:7000", "http://127.1:6000"]);
        // A name that resolves to a loopback address (an entry cannot be
        // written so: `127.1` is read as the address it is).
        grant.hosts.push(
            HostPattern { scheme: Scheme::Http, host: Host::Name("127.1".into()), port: Port::Number(8080) }.into(),
        );
        assert_eq!(check(&grant, "127.0.0.1:8080"), SocketCheck::SocketsOff);
        grant.sockets = true;
        assert_eq!(check(&grant, "127.0.0.1:8080"), SocketCheck::Private { allow: pattern("http://127.0.0.1:8080") });
        assert_eq!(check(&grant, "127.0.0.1:9000"), SocketCheck::Allowed);
        assert_eq!(check(&grant, "127.0.0.1:6000"), SocketCheck::Allowed, "`127.1` is 127.0.0.1");
        assert_eq!(check(&grant, "[::ffff:127.0.0.1]:9000"), SocketCheck::Allowed, "a mapped address is its IPv4 one");
        assert_eq!(check(&grant, "10.0.0.1:9000"), SocketCheck::NotGranted);
        assert_eq!(check(&grant, "93.184.216.34:7000"), SocketCheck::NotGranted);
    }

    #[test]
    fn naming_an_address_keeps_the_scheme_and_shows_the_shortest_entry() {
        let entry = pattern("https://api.example.com:*");
        assert_eq!(entry.naming("10.0.0.1".parse().unwrap(), 443).to_string(), "https://10.0.0.1");
        assert_eq!(entry.naming("::1".parse().unwrap(), 8443).to_string(), "https://[::1]:8443");
    }

    #[test]
    fn private_addresses_are_reached_only_when_named() {
        let loopback: IpAddr = "127.0.0.1".parse().unwrap();
        let metadata: IpAddr = "169.254.169.254".parse().unwrap();
        let public: IpAddr = "93.184.216.34".parse().unwrap();
        assert!(pattern("https://api.example.com").may_reach(public));
        assert!(!pattern("https://api.example.com").may_reach(loopback), "a public name rebound to loopback");
        assert!(!pattern("https://*").may_reach(metadata));
        assert!(!pattern("http://*:*").may_reach(loopback));
        assert!(pattern("http://127.0.0.1:8080").may_reach(loopback), "named explicitly");
        assert!(pattern("http://localhost:8080").may_reach(loopback), "localhost is explicitly loopback");
        assert!(!pattern("http://localhost:8080").may_reach(metadata));
        assert!(pattern("http://169.254.169.254").may_reach(metadata));
    }

    #[test]
    fn tells_public_from_special_addresses() {
        let special = [
            "0.0.0.0",
            "10.1.2.3",
            "127.0.0.1",
            "127.8.8.8",
            "100.64.0.1",
            "169.254.169.254",
            "172.16.0.1",
            "172.31.255.255",
            "192.168.1.1",
            "192.0.2.1",
            "198.18.0.1",
            "224.0.0.1",
            "255.255.255.255",
            "::",
            "::1",
            "::ffff:127.0.0.1",
            "::ffff:10.0.0.1",
            "::127.0.0.1",
            "fc00::1",
            "fd12:3456::1",
            "fe80::1",
            "ff02::1",
            "2001:db8::1",
            "64:ff9b::a00:1",
            "2002:c0a8:0101::1",
        ];
        for ip in special {
            assert!(!is_public(ip.parse().unwrap()), "{ip} is not public");
        }
        let public = [
            "1.1.1.1",
            "8.8.8.8",
            "93.184.216.34",
            "172.32.0.1",
            "100.128.0.1",
            "2606:4700::1111",
            "::ffff:8.8.8.8",
            "64:ff9b::808:808",
        ];
        for ip in public {
            assert!(is_public(ip.parse().unwrap()), "{ip} is public");
        }
    }

    #[test]
    fn a_wider_entry_covers_a_narrower_one() {
        let covers = [
            ("https://*", "https://api.example.com"),
            ("https://*.example.com", "https://api.example.com"),
            ("https://*.example.com", "https://*.api.example.com"),
            ("https://*.example.com", "https://*.example.com"),
            ("https://example.com:*", "https://example.com:8443"),
            ("http://127.0.0.1:8080", "http://127.0.0.1:8080"),
        ];
        for (wide, narrow) in covers {
            assert!(pattern(wide).covers(&pattern(narrow)), "{wide} covers {narrow}");
        }
        let not = [
            ("https://api.example.com", "https://*"),
            ("https://api.example.com", "http://api.example.com"),
            ("https://*.example.com", "https://example.com"),
            ("https://example.com", "https://example.com:*"),
            ("https://example.com:8443", "https://example.com"),
        ];
        for (narrow, wide) in not {
            assert!(!pattern(narrow).covers(&pattern(wide)), "{narrow} does not cover {wide}");
        }
    }

    #[test]
    fn entries_may_name_methods_and_a_path() {
        for (text, shown) in [
            ("GET https://api.github.com/repos/**", "GET https://api.github.com/repos/**"),
            ("get,head  HTTPS://API.github.com:443/repos/*/issues", "GET,HEAD https://api.github.com/repos/*/issues"),
            ("GET, POST https://api.example.com", "GET,POST https://api.example.com"),
            ("https://api.example.com/v1/**", "https://api.example.com/v1/**"),
            ("https://api.example.com/", "https://api.example.com"),
            ("DELETE https://api.example.com/", "DELETE https://api.example.com"),
            ("https://*.example.com", "https://*.example.com"),
        ] {
            let entry: HttpEntry = text.parse().unwrap_or_else(|err| panic!("{text}: {err}"));
            assert_eq!(entry.to_string(), shown, "{text}");
            assert_eq!(shown.parse::<HttpEntry>().unwrap(), entry, "{shown} reads back the same");
        }
        for (text, says) in [
            ("GET api.github.com/repos", "did you mean `https://api.github.com`?"),
            ("G/ET https://api.example.com", "is not an HTTP method"),
            ("GET https://a.example https://b.example", "more than one URL"),
            ("https://api.example.com/v1?x=1", "never a query"),
            ("https://api.example.com?x=1", "never a query"),
            ("GET https://api.example.com/re*", "whole segment"),
            ("GET https://api.example.com/v1/", "ends with `/`"),
            ("https://user@api.example.com/v1", "user information"),
        ] {
            let err = text.parse::<HttpEntry>().unwrap_err();
            assert!(err.contains(says), "{text}: {err}");
        }
    }

    #[test]
    fn a_request_goes_only_by_an_entry_that_admits_its_method_and_every_reading_of_its_path() {
        let grant = grant(&[
            "GET,HEAD https://api.github.com/repos/**",
            "POST https://api.github.com/repos/*/*/issues",
            "https://open.example",
        ]);
        let admit = |method: &str, host: &str, target: &str| {
            let host = CanonicalHost::parse(host).unwrap();
            match grant.admit(method, Scheme::Https, &host, 443, target) {
                Admission::Allowed(_) => "allowed",
                Admission::NotGranted => "not granted",
                Admission::OutsideRoutes { .. } => "outside",
            }
        };
        assert_eq!(admit("GET", "api.github.com", "/repos/a/b?page=2"), "allowed");
        assert_eq!(admit("HEAD", "API.GITHUB.COM.", "/repos"), "allowed");
        assert_eq!(admit("POST", "api.github.com", "/repos/a/b/issues"), "allowed");
        assert_eq!(admit("POST", "api.github.com", "/repos/a/b/pulls"), "outside");
        assert_eq!(admit("DELETE", "api.github.com", "/repos/a/b"), "outside");
        assert_eq!(admit("get", "api.github.com", "/repos/a/b"), "outside", "methods are exact");
        assert_eq!(admit("GET", "api.github.com", "/user"), "outside");
        assert_eq!(admit("GET", "api.github.com", "/repos/%2e%2e/user"), "outside");
        assert_eq!(admit("GET", "api.github.com", "/repos/..;/user"), "outside");
        assert_eq!(admit("GET", "api.github.com", "/repos/x%2F..%2F..%2Fuser"), "outside");
        assert_eq!(admit("GET", "api.github.com", "/repos/a%00"), "outside");
        assert_eq!(admit("DELETE", "open.example", "/anything/../at/all"), "allowed");
        assert_eq!(admit("GET", "other.example", "/"), "not granted");
        // A socket never goes where an entry limits methods or paths.
        assert!(grant.allows(Scheme::Https, &CanonicalHost::parse("api.github.com").unwrap(), 443).is_none());
    }
}

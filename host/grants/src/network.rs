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
mod tests;

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
    grant
        .hosts
        .push(HostPattern { scheme: Scheme::Http, host: Host::Name("127.1".into()), port: Port::Number(8080) }.into());
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

//! Secrets bound to hosts: where a secret's value may be sent.
//!
//! A secret granted to a plugin (`secrets = [...]`) reaches the guest, which
//! may put it in any request. A secret granted with `to`
//! (`secrets = [{ name = "API_KEY", to = ["https://api.example.com"] }]`)
//! may go only there: a request to any other host that carries its value
//! (in the URL, a header or the body) is refused before it leaves
//! ([`Bound::forms`] are what is looked for; [`BodyScan`] looks in a body
//! that arrives in chunks, holding back the bytes a value could straddle).
//!
//! What is looked for: the value as it is; percent-encoded (upper- or
//! lower-case hex, `+` for a space), and the value in the text once every
//! `%XX` in it is decoded (so hex case and partial encoding do not matter);
//! as a JSON string writes it (`/` escaped or not); and in base64 (standard
//! and URL-safe, at each of the three alignments it can start at, so
//! `Basic base64(user:VALUE)` is caught). What is not: any other transform
//! the guest computes (encryption, hashing, hex, reversing, compression,
//! splitting the value over two requests or between the URL and the body),
//! and raw `wasi:sockets` traffic. A request body in a content coding
//! (`Content-Encoding: gzip`) is refused outright to a host a bound secret
//! is not for, since its bytes cannot be read as sent.

use crate::credentials::percent_encode;
use crate::env::Secret;
use crate::names::{CanonicalHost, percent_decode};
use crate::network::{HostPattern, Scheme};

/// Base64 fragments shorter than this are not looked for (too likely by chance).
const MIN_BASE64: usize = 8;

/// A secret that may go only to some hosts, resolved at load.
#[derive(Debug, Clone)]
pub struct Bound {
    /// The variable's name (what a refusal names; never the value).
    pub name: String,
    /// Where its value may be sent.
    pub to: Vec<HostPattern>,
    /// The byte strings that show its value in a request.
    forms: Vec<Vec<u8>>,
    /// The value itself, looked for in percent-decoded text.
    value: Secret,
}

impl Bound {
    /// `name`'s `value`, which may go to `to` only.
    pub fn new(name: &str, value: &Secret, to: Vec<HostPattern>) -> Bound {
        Bound { name: name.to_owned(), to, forms: forms(value.expose()), value: value.clone() }
    }

    /// Whether a request to `scheme://host:port` may carry it.
    pub fn may_go_to(&self, scheme: Scheme, host: &CanonicalHost, port: u16) -> bool {
        self.to.iter().any(|pattern| pattern.admits(scheme, host, port))
    }

    /// How many bytes a form of the value can span in a request.
    fn span(&self) -> usize {
        self.forms.iter().map(Vec::len).max().unwrap_or(0).max(3 * self.value.expose().len())
    }

    /// Whether `bytes` show the value in a form looked for.
    pub fn shows_in(&self, bytes: &[u8]) -> bool {
        if self.value.expose().is_empty() {
            return false;
        }
        if self.forms.iter().any(|form| contains(bytes, form)) {
            return true;
        }
        // Every `%XX` decoded, and `+` as a space: any mix of hex case or
        // of encoded and plain bytes.
        if bytes.contains(&b'%') || bytes.contains(&b'+') {
            let text = String::from_utf8_lossy(bytes).replace('+', " ");
            let decoded = percent_decode(&text);
            let value = self.value.expose().as_bytes();
            return contains(&decoded, value) || contains(&percent_decode(&String::from_utf8_lossy(bytes)), value);
        }
        false
    }
}

/// Which of `secrets` the request bytes `bytes` show, by name.
pub fn shown<'a>(secrets: &[&'a Bound], bytes: &[u8]) -> Option<&'a str> {
    secrets.iter().find(|secret| secret.shows_in(bytes)).map(|secret| secret.name.as_str())
}

fn contains(haystack: &[u8], needle: &[u8]) -> bool {
    !needle.is_empty() && haystack.windows(needle.len()).any(|window| window == needle)
}

/// The forms of `value` looked for in a request.
fn forms(value: &str) -> Vec<Vec<u8>> {
    use base64::Engine as _;
    use base64::engine::general_purpose::{STANDARD_NO_PAD, URL_SAFE_NO_PAD};
    if value.is_empty() {
        return Vec::new();
    }
    let encoded = percent_encode(value);
    let quoted = serde_json::to_string(value).unwrap_or_default();
    let json = quoted.get(1..quoted.len().saturating_sub(1)).unwrap_or_default().to_owned();
    let mut forms = vec![
        value.as_bytes().to_vec(),
        encoded.clone().into_bytes(),
        encoded.to_ascii_lowercase().into_bytes(),
        encoded.replace("%20", "+").into_bytes(),
        json.replace('/', "\\/").into_bytes(),
        json.into_bytes(),
    ];
    // Base64 of the value after 0, 1 or 2 other bytes: the characters that
    // depend on the value's bytes alone (not on what comes before or after).
    for engine in [STANDARD_NO_PAD, URL_SAFE_NO_PAD] {
        for offset in 0..3 {
            let mut bytes = vec![0u8; offset];
            bytes.extend_from_slice(value.as_bytes());
            let whole = engine.encode(&bytes);
            // Characters fed by the padding bytes at the start, and the last
            // one, which bytes after the value change.
            let skip = match offset {
                0 => 0,
                1 => 2,
                _ => 3,
            };
            let end = (bytes.len() * 8) / 6;
            if end > skip && end - skip >= MIN_BASE64 {
                forms.push(whole.as_bytes()[skip..end].to_vec());
            }
        }
    }
    forms.sort();
    forms.dedup();
    forms
}

/// A request body checked as it streams: each chunk is looked at with the
/// bytes held back from the one before, and the last bytes a value could
/// straddle are held until the next chunk (or the end) shows it is whole.
#[derive(Debug)]
pub struct BodyScan {
    secrets: Vec<Bound>,
    keep: usize,
    held: Vec<u8>,
}

impl BodyScan {
    /// A scan for `secrets`; `None` when there is nothing to look for.
    pub fn new(secrets: Vec<Bound>) -> Option<BodyScan> {
        let keep = secrets.iter().map(Bound::span).max()?.saturating_sub(1);
        Some(BodyScan { secrets, keep, held: Vec::new() })
    }

    /// Takes a chunk; gives back what may go out now (maybe nothing), or the
    /// name of the secret it shows.
    pub fn push(&mut self, chunk: &[u8]) -> Result<Vec<u8>, String> {
        self.held.extend_from_slice(chunk);
        if let Some(secret) = self.secrets.iter().find(|secret| secret.shows_in(&self.held)) {
            return Err(secret.name.clone());
        }
        let ready = self.held.len().saturating_sub(self.keep);
        Ok(self.held.drain(..ready).collect())
    }

    /// True when nothing is held.
    pub fn is_empty(&self) -> bool {
        self.held.is_empty()
    }

    /// What is held, at the end of the body (already looked at).
    pub fn finish(&mut self) -> Vec<u8> {
        std::mem::take(&mut self.held)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn bound(value: &str) -> Bound {
        Bound::new("KEY", &Secret::new(value), vec!["https://api.example.com".parse().unwrap()])
    }

    #[test]
    fn a_value_shows_in_every_encoding_looked_for() {
        use base64::Engine as _;
        let secret = bound("s3cr3t/v@lue+42");
        let basic = base64::engine::general_purpose::STANDARD.encode("user:s3cr3t/v@lue+42");
        let url_safe = base64::engine::general_purpose::URL_SAFE.encode("ab:s3cr3t/v@lue+42");
        for text in [
            "q=s3cr3t/v@lue+42".to_owned(),
            "q=s3cr3t%2Fv%40lue%2B42".to_owned(),
            "q=s3cr3t%2fv%40lue%2b42".to_owned(),
            "q=s3cr3t%2Fv%40lue%2b42".to_owned(),
            "q=%73%33cr3t/v@lue%2B42".to_owned(),
            r#"{"k":"s3cr3t\/v@lue+42"}"#.to_owned(),
            format!("Authorization: Basic {basic}"),
            format!("x={url_safe}"),
        ] {
            assert!(secret.shows_in(text.as_bytes()), "{text}");
        }
        for text in ["s3cr3t", "42+eulv@/t3rc3s", "czNjcjN0L3ZAbHVl"] {
            assert!(!secret.shows_in(text.as_bytes()), "{text}");
        }
        let host = CanonicalHost::parse("API.example.com.").unwrap();
        assert!(secret.may_go_to(Scheme::Https, &host, 443));
        assert!(!secret.may_go_to(Scheme::Http, &host, 80));
    }

    #[test]
    fn a_value_split_between_chunks_is_found_and_nothing_of_it_goes_out() {
        let value = "s3cr3t-v4lue-0123456789";
        let body = format!("{{\"note\": \"hello\", \"key\": \"{value}\", \"more\": \"{}\"}}", "x".repeat(100));
        for size in [1, 2, 5, 17, 64, body.len()] {
            let mut scan = BodyScan::new(vec![bound(value)]).unwrap();
            let mut sent = Vec::new();
            let mut found = None;
            for chunk in body.as_bytes().chunks(size) {
                match scan.push(chunk) {
                    Ok(out) => sent.extend(out),
                    Err(name) => {
                        found = Some(name);
                        break;
                    }
                }
            }
            assert_eq!(found.as_deref(), Some("KEY"), "{size}");
            assert!(!String::from_utf8_lossy(&sent).contains("s3cr3t"), "{size}: {}", String::from_utf8_lossy(&sent));
        }
        let mut scan = BodyScan::new(vec![bound(value)]).unwrap();
        let mut sent = scan.push(b"nothing secret here").unwrap();
        sent.extend(scan.finish());
        assert_eq!(sent, b"nothing secret here");
    }
}

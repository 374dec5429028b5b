//! Credentials added at the `wasi:http` boundary (see
//! [`toolhost_grants::credentials`]): the host adds the operator's credential
//! to a request bound for its destination after the plugin handed the request
//! over, and masks every form of the value in the response before the plugin
//! reads it, so the plugin never holds the value.
//!
//! - A header replaces any the plugin set under the same name; a query
//!   parameter replaces any of the same name.
//! - `Accept-Encoding: identity` is asked for, so a server that echoes the
//!   request cannot hand the value back compressed, past the mask.
//! - An OAuth 2.0 token is fetched with the client-credentials grant (client
//!   id and secret in HTTP Basic auth, RFC 6749 §2.3.1), kept until shortly
//!   before it expires, and fetched again then.
//! - A response's header values and body are masked (`*`, byte for byte, so
//!   lengths stay right); the body through [`Masker`], which holds back the
//!   few bytes a value could straddle between chunks.

use crate::limits::ByteSize;
use http::{HeaderName, HeaderValue};
use std::time::{Duration, Instant};
use toolhost_grants::credentials::{Add, Injection};
use toolhost_grants::env::Secret;

/// The longest a token endpoint's answer may be.
const TOKEN_RESPONSE_LIMIT: usize = 64 << 10;
/// How long a token request may take.
const TOKEN_TIMEOUT: Duration = Duration::from_secs(10);
/// How long a token is kept when the endpoint does not say (`expires_in`).
const TOKEN_DEFAULT_LIFE: Duration = Duration::from_secs(300);

/// Adds `injection` to `request`; returns the byte strings to mask in the
/// response, or why the request may not go (one line, no value in it).
pub(crate) async fn add<B>(
    injection: &Injection,
    request: &mut http::Request<B>,
    tls: &std::sync::Arc<rustls::ClientConfig>,
    values: &[Secret],
) -> Result<Vec<Vec<u8>>, String> {
    let mut masks: Vec<Vec<u8>> = values.iter().flat_map(|value| forms(value.expose())).collect();
    match &injection.add {
        Add::Unavailable(why) => return Err(why.clone()),
        Add::Header { name, value } => set_header(request, name, value.expose())?,
        Add::Query { name, value } => set_query(request, name, value.expose())?,
        Add::OAuth2 { .. } => {
            let token = token(injection, tls).await?;
            masks.extend(forms(token.expose()));
            set_header(request, "Authorization", &format!("Bearer {}", token.expose()))?;
        }
    }
    request.headers_mut().insert(http::header::ACCEPT_ENCODING, HeaderValue::from_static("identity"));
    masks.sort();
    masks.dedup();
    Ok(masks)
}

/// The forms of `value` a response could show: as it is, URL-encoded, and
/// with `/` escaped as JSON may write it.
fn forms(value: &str) -> Vec<Vec<u8>> {
    let mut forms = vec![value.as_bytes().to_vec(), percent_encode(value).into_bytes()];
    if value.contains('/') {
        forms.push(value.replace('/', "\\/").into_bytes());
    }
    forms
}

fn set_header<B>(request: &mut http::Request<B>, name: &str, value: &str) -> Result<(), String> {
    let name = HeaderName::from_bytes(name.as_bytes()).map_err(|_| format!("`{name}` is not a header name"))?;
    let mut value =
        HeaderValue::from_str(value).map_err(|_| "the credential's value cannot go in a header".to_owned())?;
    value.set_sensitive(true);
    let headers = request.headers_mut();
    headers.remove(&name);
    headers.insert(name, value);
    Ok(())
}

fn set_query<B>(request: &mut http::Request<B>, name: &str, value: &str) -> Result<(), String> {
    let uri = request.uri().clone();
    let kept: Vec<&str> = uri
        .query()
        .unwrap_or("")
        .split('&')
        .filter(|pair| !pair.is_empty() && pair.split('=').next() != Some(name))
        .collect();
    let mut query = kept.join("&");
    if !query.is_empty() {
        query.push('&');
    }
    query.push_str(&format!("{name}={}", percent_encode(value)));
    let mut parts = uri.into_parts();
    let path = parts.path_and_query.as_ref().map_or("/", |path| path.path()).to_owned();
    parts.path_and_query =
        Some(format!("{path}?{query}").parse().map_err(|_| "the request's URL cannot take the credential".to_owned())?);
    *request.uri_mut() =
        http::Uri::from_parts(parts).map_err(|_| "the request's URL cannot take the credential".to_owned())?;
    Ok(())
}

/// `value` with everything but unreserved characters percent-encoded.
fn percent_encode(value: &str) -> String {
    let mut out = String::with_capacity(value.len());
    for byte in value.bytes() {
        if byte.is_ascii_alphanumeric() || b"-._~".contains(&byte) {
            out.push(byte as char);
        } else {
            out.push_str(&format!("%{byte:02X}"));
        }
    }
    out
}

/// The OAuth token of `injection`: the one kept, while it is good, else a new one.
async fn token(injection: &Injection, tls: &std::sync::Arc<rustls::ClientConfig>) -> Result<Secret, String> {
    let Add::OAuth2 { token_url, client_id, client_secret, scopes, token } = &injection.add else {
        unreachable!("called for OAuth credentials only");
    };
    {
        let kept = token.lock().unwrap_or_else(|poisoned| poisoned.into_inner());
        if let Some((value, until)) = kept.as_ref()
            && Instant::now() < *until
        {
            return Ok(value.clone());
        }
    }
    let failed = |why: String| format!("the OAuth token request to {token_url} failed: {why}");
    let client = reqwest::Client::builder()
        .use_preconfigured_tls((**tls).clone())
        .redirect(reqwest::redirect::Policy::none())
        .timeout(TOKEN_TIMEOUT)
        .build()
        .map_err(|err| failed(err.to_string()))?;
    let mut form = vec![("grant_type", "client_credentials".to_owned())];
    if !scopes.is_empty() {
        form.push(("scope", scopes.join(" ")));
    }
    let body = form.iter().map(|(key, value)| format!("{key}={}", percent_encode(value))).collect::<Vec<_>>().join("&");
    let asked = Instant::now();
    let response = client
        .post(token_url)
        .basic_auth(percent_encode(client_id.expose()), Some(percent_encode(client_secret.expose())))
        .header(http::header::CONTENT_TYPE, "application/x-www-form-urlencoded")
        .header(http::header::ACCEPT, "application/json")
        .body(body)
        .send()
        .await
        .map_err(|err| failed(without_url(err)))?;
    let status = response.status();
    let mut bytes = Vec::new();
    let mut response = response;
    while let Some(chunk) = response.chunk().await.map_err(|err| failed(without_url(err)))? {
        bytes.extend_from_slice(&chunk);
        if bytes.len() > TOKEN_RESPONSE_LIMIT {
            return Err(failed(format!("its answer is over {}", ByteSize(TOKEN_RESPONSE_LIMIT as u64))));
        }
    }
    let answer: serde_json::Value = serde_json::from_slice(&bytes).unwrap_or_default();
    if !status.is_success() {
        // RFC 6749 §5.2: `error` and `error_description`.
        let said = ["error", "error_description"]
            .iter()
            .filter_map(|key| answer.get(key).and_then(|value| value.as_str()))
            .map(|text| text.chars().filter(|c| !c.is_control()).take(200).collect::<String>())
            .collect::<Vec<_>>()
            .join(": ");
        let said = if said.is_empty() { String::new() } else { format!(" ({said})") };
        return Err(failed(format!("HTTP {}{said}", status.as_u16())));
    }
    let Some(access) = answer.get("access_token").and_then(|value| value.as_str()).filter(|value| !value.is_empty())
    else {
        return Err(failed("its answer has no `access_token`".to_owned()));
    };
    if let Some(kind) = answer.get("token_type").and_then(|value| value.as_str())
        && !kind.eq_ignore_ascii_case("bearer")
    {
        return Err(failed(format!("it gave a `{}` token; only bearer tokens can be sent", kind.escape_debug())));
    }
    let life = answer
        .get("expires_in")
        .and_then(|value| value.as_f64().or_else(|| value.as_str().and_then(|text| text.parse().ok())))
        .filter(|seconds| seconds.is_finite() && *seconds > 0.0)
        .map_or(TOKEN_DEFAULT_LIFE, |seconds| Duration::from_secs_f64(seconds.min(86_400.0 * 365.0)));
    // Renewed a little early, so a token never expires on its way.
    let margin = (life / 10).min(Duration::from_secs(30));
    let value = Secret::new(access);
    *token.lock().unwrap_or_else(|poisoned| poisoned.into_inner()) = Some((value.clone(), asked + life - margin));
    Ok(value)
}

/// A reqwest error without its URL (already named) or a `Debug` dump.
fn without_url(err: reqwest::Error) -> String {
    let err = err.without_url();
    let mut text = err.to_string();
    let mut source = std::error::Error::source(&err);
    while let Some(inner) = source {
        text = format!("{text}: {inner}");
        source = inner.source();
    }
    text
}

/// Masks the credential values in a response header map.
pub(crate) fn mask_headers(headers: &mut http::HeaderMap, masks: &[Vec<u8>]) {
    for value in headers.values_mut() {
        let mut bytes = value.as_bytes().to_vec();
        if mask(&mut bytes, masks)
            && let Ok(masked) = HeaderValue::from_bytes(&bytes)
        {
            *value = masked;
        }
    }
}

/// Replaces every occurrence of each of `masks` in `bytes` with as many
/// `*`; true when any was found.
fn mask(bytes: &mut [u8], masks: &[Vec<u8>]) -> bool {
    let mut found = false;
    for pattern in masks.iter().filter(|pattern| !pattern.is_empty()) {
        let mut at = 0;
        while at + pattern.len() <= bytes.len() {
            if bytes[at..].starts_with(pattern) {
                bytes[at..at + pattern.len()].fill(b'*');
                found = true;
                at += pattern.len();
            } else {
                at += 1;
            }
        }
    }
    found
}

/// Masks values in a body that arrives in chunks: a value split between two
/// chunks is held back until it is whole.
pub(crate) struct Masker {
    masks: Vec<Vec<u8>>,
    /// Bytes held back: one less than the longest value.
    keep: usize,
    held: Vec<u8>,
}

impl Masker {
    pub(crate) fn new(masks: Vec<Vec<u8>>) -> Masker {
        let keep = masks.iter().map(Vec::len).max().unwrap_or(1).saturating_sub(1);
        Masker { masks, keep, held: Vec::new() }
    }

    /// Takes a chunk; gives back what can be passed on now (maybe nothing).
    pub(crate) fn push(&mut self, chunk: &[u8]) -> bytes::Bytes {
        self.held.extend_from_slice(chunk);
        mask(&mut self.held, &self.masks);
        let ready = self.held.len().saturating_sub(self.keep);
        bytes::Bytes::from(self.held.drain(..ready).collect::<Vec<u8>>())
    }

    /// What is still held, at the end of the body.
    pub(crate) fn finish(&mut self) -> Option<bytes::Bytes> {
        (!self.held.is_empty()).then(|| bytes::Bytes::from(std::mem::take(&mut self.held)))
    }

    /// Masks the values in `headers` (a response's trailers).
    pub(crate) fn mask_headers(&self, headers: &mut http::HeaderMap) {
        mask_headers(headers, &self.masks);
    }

    /// True when nothing is held.
    pub(crate) fn is_empty(&self) -> bool {
        self.held.is_empty()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_value_split_across_chunks_is_masked_whole() {
        let mut masker = Masker::new(vec![b"s3cr3t-value".to_vec()]);
        let mut out = Vec::new();
        for chunk in [&b"echo: s3c"[..], b"r3t-", b"value and s3cr3t-value", b"!"] {
            out.extend_from_slice(&masker.push(chunk));
        }
        out.extend_from_slice(&masker.finish().unwrap_or_default());
        assert_eq!(String::from_utf8(out).unwrap(), "echo: ************ and ************!");
    }

    #[test]
    fn forms_cover_url_and_json_escapes() {
        let forms = forms("a/b c");
        assert!(forms.contains(&b"a/b c".to_vec()));
        assert!(forms.contains(&b"a%2Fb%20c".to_vec()));
        assert!(forms.contains(&b"a\\/b c".to_vec()));
    }
}

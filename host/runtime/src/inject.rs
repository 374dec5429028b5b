//! Credentials added at the `wasi:http` boundary (see
//! [`toolhost_grants::credentials`]): the host adds the operator's credential
//! to a request bound for its destination after the plugin handed the request
//! over, and masks every form of the value in the response before the plugin
//! reads it, so the plugin never holds the value.
//!
//! - A header replaces any the plugin set under the same name; a query
//!   parameter replaces every parameter whose name decodes to the same name
//!   (`app%69d`, `APPID`), so no twin reaches a server that reads either.
//! - `Accept-Encoding: identity` is asked for, so a server that echoes the
//!   request cannot hand the value back compressed, past the mask; a server
//!   that compresses all the same (`Content-Encoding: gzip` or `deflate`) has
//!   its body decoded before it is masked (the decoded bytes count against
//!   `http_response`), and one in any other coding is refused.
//! - An OAuth 2.0 token is fetched with the client-credentials grant (client
//!   id and secret in HTTP Basic auth, RFC 6749 §2.3.1), kept until shortly
//!   before it expires, and fetched again then.
//! - A response's header values and body are masked (`*`, byte for byte, so
//!   lengths stay right); the body through [`Masker`], which holds back the
//!   few bytes a value could straddle between chunks.

use crate::limits::ByteSize;
use http::{HeaderName, HeaderValue};
use std::time::{Duration, Instant};
use toolhost_grants::credentials::{Add, Injection, basic_forms, percent_encode};
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
    // Longest first: a value that contains another (a token holding the
    // client secret) is masked whole, not around the shorter one.
    masks.sort_by(|a, b| b.len().cmp(&a.len()).then_with(|| a.cmp(b)));
    masks.dedup();
    Ok(masks)
}

/// The forms of `value` a response could show: as it is, URL-encoded (either
/// case of hex, `+` for spaces), and as a JSON string writes it (with `/`
/// escaped or not).
fn forms(value: &str) -> Vec<Vec<u8>> {
    let encoded = percent_encode(value);
    let quoted = serde_json::to_string(value).unwrap_or_default();
    let json = quoted.get(1..quoted.len().saturating_sub(1)).unwrap_or_default().to_owned();
    let mut forms = vec![
        value.as_bytes().to_vec(),
        encoded.clone().into_bytes(),
        lower_hex(&encoded).into_bytes(),
        encoded.replace("%20", "+").into_bytes(),
        json.replace('/', "\\/").into_bytes(),
        json.into_bytes(),
    ];
    forms.sort();
    forms.dedup();
    forms
}

/// `%2F` as `%2f`.
fn lower_hex(encoded: &str) -> String {
    let mut out = String::with_capacity(encoded.len());
    let mut after_percent = 0;
    for c in encoded.chars() {
        if c == '%' {
            after_percent = 2;
            out.push(c);
        } else if after_percent > 0 {
            after_percent -= 1;
            out.push(c.to_ascii_lowercase());
        } else {
            out.push(c);
        }
    }
    out
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
    // A pair goes when any of its `;`-separated parts (some servers split
    // there too) names the parameter once decoded, in any case.
    let twin = |pair: &str| {
        pair.split(';').any(|part| {
            let key = part.split('=').next().unwrap_or_default();
            form_decoded(key).is_some_and(|key| key.trim().eq_ignore_ascii_case(name))
        })
    };
    let kept: Vec<&str> = uri.query().unwrap_or("").split('&').filter(|pair| !pair.is_empty() && !twin(pair)).collect();
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

/// A query or form key decoded as a server reads it (`%XX`, `+` as a
/// space); `None` when the decoded bytes are not text.
fn form_decoded(key: &str) -> Option<String> {
    let bytes = key.as_bytes();
    let mut out = Vec::with_capacity(bytes.len());
    let mut at = 0;
    while at < bytes.len() {
        let escaped = (bytes[at] == b'%')
            .then(|| bytes.get(at + 1..at + 3))
            .flatten()
            .and_then(|hex| std::str::from_utf8(hex).ok())
            .and_then(|hex| u8::from_str_radix(hex, 16).ok());
        match (escaped, bytes[at]) {
            (Some(byte), _) => {
                out.push(byte);
                at += 3;
                continue;
            }
            (None, b'+') => out.push(b' '),
            (None, byte) => out.push(byte),
        }
        at += 1;
    }
    String::from_utf8(out).ok()
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
    // A token endpoint may echo what it was sent (the client id and secret,
    // or the whole `Authorization` header) in an error: what of its answer
    // is shown (an error's text, a token type) is masked. The answer itself
    // is read as it came: a token that happens to contain the client secret
    // goes out byte for byte (masking is for what comes back, never for what
    // goes out), and is masked in responses like any credential.
    let mut secrets: Vec<Vec<u8>> = forms(client_id.expose());
    secrets.extend(forms(client_secret.expose()));
    secrets.extend(
        basic_forms(&percent_encode(client_id.expose()), &percent_encode(client_secret.expose()))
            .into_iter()
            .map(String::into_bytes),
    );
    let shown = |text: &str, limit: usize| {
        let mut text = text.as_bytes().to_vec();
        mask(&mut text, &secrets);
        String::from_utf8_lossy(&text).chars().filter(|c| !c.is_control()).take(limit).collect::<String>()
    };
    // Strict: an answer naming a member twice (`access_token`, `token_type`,
    // `expires_in`) is read differently by different parsers; no token is taken from it.
    let answer: serde_json::Value = match toolhost_grants::json::strict(&bytes) {
        Ok(answer) => answer,
        Err(err) => match toolhost_grants::json::repeated_member(&err) {
            Some(said) => {
                // Masked again once JSON-decoded, as the error fields below are.
                let mut said = said.into_bytes();
                mask(&mut said, &secrets);
                let said = String::from_utf8_lossy(&said);
                return Err(failed(format!("its answer is JSON in which {said}: no token is taken from it")));
            }
            None => serde_json::Value::Null,
        },
    };
    if !status.is_success() {
        // RFC 6749 §5.2: `error` and `error_description`, masked once
        // JSON-decoded (`\u0073ecret` is `secret`), before they are cut.
        let said = ["error", "error_description"]
            .iter()
            .filter_map(|key| answer.get(key).and_then(|value| value.as_str()))
            .map(|text| shown(text, 200))
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
        return Err(failed(format!(
            "it gave a `{}` token; only bearer tokens can be sent",
            shown(kind, 40).escape_debug()
        )));
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
    // Longest first, so a value that contains another is masked whole.
    let mut order: Vec<&Vec<u8>> = masks.iter().filter(|pattern| !pattern.is_empty()).collect();
    order.sort_by_key(|pattern| std::cmp::Reverse(pattern.len()));
    for pattern in order {
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

/// A response body's content coding, undone so the masker sees the bytes
/// the plugin will read.
pub(crate) enum Decoder {
    /// `gzip` (and its alias `x-gzip`).
    Gzip(flate2::write::GzDecoder<Vec<u8>>),
    /// `deflate`: the zlib format (RFC 9110 §8.4.1.2).
    Deflate(flate2::write::ZlibDecoder<Vec<u8>>),
}

/// How much compressed input is decoded at a time, so that one chunk cannot
/// expand past the response limit in memory before it is counted (deflate
/// expands at most about 1,032 times).
const DECODE_STEP: usize = 256;

impl Decoder {
    /// The decoder a response's `Content-Encoding` needs: `None` for none
    /// (or `identity`), or why toolhost cannot undo it.
    pub(crate) fn for_response(headers: &http::HeaderMap) -> Result<Option<Decoder>, String> {
        let mut codings = Vec::new();
        for value in headers.get_all(http::header::CONTENT_ENCODING) {
            let text = value.to_str().map_err(|_| "an unreadable Content-Encoding".to_owned())?;
            codings.extend(
                text.split(',')
                    .map(|coding| coding.trim().to_ascii_lowercase())
                    .filter(|coding| !coding.is_empty() && coding != "identity"),
            );
        }
        let coding = match codings.as_slice() {
            [] => return Ok(None),
            [one] => one.as_str(),
            _ => {
                return Err(format!(
                    "it answered in several content codings ({}) although toolhost asked for none; a response \
                     to a request that carried a credential is passed on only once its body can be masked",
                    codings.join(", ")
                ));
            }
        };
        Ok(Some(match coding {
            "gzip" | "x-gzip" => Decoder::Gzip(flate2::write::GzDecoder::new(Vec::new())),
            "deflate" => Decoder::Deflate(flate2::write::ZlibDecoder::new(Vec::new())),
            other => {
                return Err(format!(
                    "it answered in the content coding `{}` although toolhost asked for none (`Accept-Encoding: \
                     identity`); a response to a request that carried a credential is passed on only once its \
                     body can be masked, and toolhost decodes only gzip and deflate",
                    other.chars().take(40).collect::<String>().escape_debug()
                ));
            }
        }))
    }

    /// Decodes `chunk`, appending to `out` until `out` holds more than `room` bytes.
    fn write(&mut self, chunk: &[u8], out: &mut Vec<u8>, room: usize) -> Result<(), String> {
        use std::io::Write;
        for piece in chunk.chunks(DECODE_STEP) {
            if out.len() > room {
                break;
            }
            match self {
                Decoder::Gzip(decoder) => decoder.write_all(piece).map_err(|err| format!("gzip: {err}"))?,
                Decoder::Deflate(decoder) => decoder.write_all(piece).map_err(|err| format!("deflate: {err}"))?,
            }
            out.append(self.decoded());
        }
        Ok(())
    }

    /// Decodes what is left at the end of the body.
    fn finish(&mut self, out: &mut Vec<u8>) -> Result<(), String> {
        match self {
            Decoder::Gzip(decoder) => decoder.try_finish().map_err(|err| format!("gzip: {err}"))?,
            Decoder::Deflate(decoder) => decoder.try_finish().map_err(|err| format!("deflate: {err}"))?,
        }
        out.append(self.decoded());
        Ok(())
    }

    fn decoded(&mut self) -> &mut Vec<u8> {
        match self {
            Decoder::Gzip(decoder) => decoder.get_mut(),
            Decoder::Deflate(decoder) => decoder.get_mut(),
        }
    }
}

/// Masks values in a body that arrives in chunks (decoding it first when it
/// came compressed): a value split between two chunks is held back until it
/// is whole.
pub(crate) struct Masker {
    masks: Vec<Vec<u8>>,
    /// Bytes held back: one less than the longest value.
    keep: usize,
    held: Vec<u8>,
    decoder: Option<Decoder>,
    /// How many decoded bytes are worth producing: past the response limit
    /// the exchange fails or is cut anyway.
    room: usize,
    produced: usize,
}

impl Masker {
    pub(crate) fn new(masks: Vec<Vec<u8>>, decoder: Option<Decoder>, limit: u64) -> Masker {
        let keep = masks.iter().map(Vec::len).max().unwrap_or(1).saturating_sub(1);
        let room = usize::try_from(limit).unwrap_or(usize::MAX).saturating_add(keep + 1);
        Masker { masks, keep, held: Vec::new(), decoder, room, produced: 0 }
    }

    /// Takes a chunk; gives back what can be passed on now (maybe nothing),
    /// or why a compressed body cannot be read.
    pub(crate) fn push(&mut self, chunk: &[u8]) -> Result<bytes::Bytes, String> {
        match self.decoder.as_mut() {
            // Past the limit, nothing more is worth decoding.
            Some(_) if self.produced > self.room => {}
            Some(decoder) => {
                let before = self.held.len();
                let room = self.room.saturating_sub(self.produced) + before;
                decoder.write(chunk, &mut self.held, room)?;
                self.produced += self.held.len() - before;
            }
            None => self.held.extend_from_slice(chunk),
        }
        mask(&mut self.held, &self.masks);
        let ready = self.held.len().saturating_sub(self.keep);
        Ok(bytes::Bytes::from(self.held.drain(..ready).collect::<Vec<u8>>()))
    }

    /// What is still held (and still to decode), at the end of the body.
    pub(crate) fn finish(&mut self) -> Result<Option<bytes::Bytes>, String> {
        if let Some(mut decoder) = self.decoder.take()
            && self.produced <= self.room
        {
            decoder.finish(&mut self.held)?;
            mask(&mut self.held, &self.masks);
        }
        Ok((!self.held.is_empty()).then(|| bytes::Bytes::from(std::mem::take(&mut self.held))))
    }

    /// Masks the values in `headers` (a response's trailers).
    pub(crate) fn mask_headers(&self, headers: &mut http::HeaderMap) {
        mask_headers(headers, &self.masks);
    }

    /// True when nothing is held.
    pub(crate) fn is_empty(&self) -> bool {
        self.held.is_empty() && self.decoder.is_none()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_value_split_across_chunks_is_masked_whole() {
        let mut masker = Masker::new(vec![b"s3cr3t-value".to_vec()], None, 1 << 20);
        let mut out = Vec::new();
        for chunk in [&b"echo: s3c"[..], b"r3t-", b"value and s3cr3t-value", b"!"] {
            out.extend_from_slice(&masker.push(chunk).unwrap());
        }
        out.extend_from_slice(&masker.finish().unwrap().unwrap_or_default());
        assert_eq!(String::from_utf8(out).unwrap(), "echo: ************ and ************!");
    }

    #[test]
    fn a_value_holding_another_is_masked_whole() {
        let mut bytes = b"Bearer tk-cl1ent-s3cret-tail".to_vec();
        mask(&mut bytes, &[b"cl1ent-s3cret".to_vec(), b"tk-cl1ent-s3cret-tail".to_vec()]);
        assert_eq!(String::from_utf8(bytes).unwrap(), format!("Bearer {}", "*".repeat(21)));
    }

    #[test]
    fn forms_cover_url_and_json_escapes() {
        let forms = forms("a/b c\"");
        for form in ["a/b c\"", "a%2Fb%20c%22", "a%2fb%20c%22", "a%2Fb+c%22", "a\\/b c\\\"", "a/b c\\\""] {
            assert!(forms.contains(&form.as_bytes().to_vec()), "{form}");
        }
    }

    fn gzip(bytes: &[u8]) -> Vec<u8> {
        use std::io::Write;
        let mut encoder = flate2::write::GzEncoder::new(Vec::new(), flate2::Compression::default());
        encoder.write_all(bytes).unwrap();
        encoder.finish().unwrap()
    }

    fn coded(coding: &str) -> http::HeaderMap {
        let mut headers = http::HeaderMap::new();
        headers.insert(http::header::CONTENT_ENCODING, coding.parse().unwrap());
        headers
    }

    #[test]
    fn a_compressed_echo_is_decoded_then_masked_whatever_its_chunks() {
        let body = gzip(b"{\"Authorization\": \"Bearer s3cr3t-value\"}");
        for size in [1, 3, 17, body.len()] {
            let decoder = Decoder::for_response(&coded("GZIP")).unwrap();
            let mut masker = Masker::new(vec![b"s3cr3t-value".to_vec()], decoder, 1 << 20);
            let mut out = Vec::new();
            for chunk in body.chunks(size) {
                out.extend_from_slice(&masker.push(chunk).unwrap());
            }
            out.extend_from_slice(&masker.finish().unwrap().unwrap_or_default());
            assert_eq!(String::from_utf8(out).unwrap(), "{\"Authorization\": \"Bearer ************\"}", "{size}");
        }
    }

    #[test]
    fn a_compression_bomb_stops_at_the_limit() {
        let body = gzip(&vec![b'a'; 64 << 20]);
        let decoder = Decoder::for_response(&coded("gzip")).unwrap();
        let mut masker = Masker::new(vec![b"s3cr3t".to_vec()], decoder, 1 << 20);
        let mut total = 0;
        for chunk in body.chunks(64 << 10) {
            total += masker.push(chunk).unwrap().len();
        }
        total += masker.finish().unwrap().map_or(0, |rest| rest.len());
        assert!(total > 1 << 20 && total < 2 << 20, "{total}");
    }

    #[test]
    fn only_codings_toolhost_can_undo_are_accepted() {
        assert!(Decoder::for_response(&http::HeaderMap::new()).unwrap().is_none());
        assert!(Decoder::for_response(&coded("identity")).unwrap().is_none());
        assert!(matches!(Decoder::for_response(&coded("x-gzip")), Ok(Some(Decoder::Gzip(_)))));
        assert!(matches!(Decoder::for_response(&coded("deflate")), Ok(Some(Decoder::Deflate(_)))));
        for refused in ["br", "zstd", "gzip, gzip", "compress"] {
            let err = Decoder::for_response(&coded(refused)).err().unwrap();
            assert!(err.contains("toolhost asked for none"), "{refused}: {err}");
        }
    }

    #[test]
    fn a_query_credential_replaces_every_twin_of_its_name() {
        for query in ["appid=evil", "app%69d=evil", "APPID=evil", "a=1;appid=evil", "app%2564=x&appid+=evil"] {
            let mut request =
                http::Request::builder().uri(format!("https://api.example/v1?{query}&q=1")).body(()).unwrap();
            set_query(&mut request, "appid", "good").unwrap();
            let query = request.uri().query().unwrap().to_owned();
            assert_eq!(query.matches("appid").count() + query.matches("%69d").count(), 1, "{query}");
            assert!(query.ends_with("appid=good") && query.contains("q=1"), "{query}");
        }
    }
}

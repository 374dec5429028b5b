//! The operator's page (`[serve.console]`, `GET /console`) and the Server
//! Card ([`card`]) of `serve --http`.
//!
//! The page is one server-rendered HTML document, read-only, behind the
//! same authentication as `/mcp` (the static token, or an OAuth access
//! token carrying the console's own scope; given as `Authorization: Bearer`
//! or as the password of HTTP Basic, which a browser asks for): what is
//! loaded (plugins: file, SHA-256, contract, signer, load problems; tools:
//! description, input schema, limits, grants by name, approval policy,
//! hooks, quotas, profiles), what it is doing (calls per tool: rate over
//! the last minutes, errors by kind, p50/p99, from [`Metrics`]; the latest
//! calls with caller, outcome and refusals, from the tail of the audit log
//! when `[audit] file` is set, arguments only when the log has them) and
//! its state (quotas and their use, tasks by status, sessions, the shared
//! store, reloads, the audit writer). A token bound to a profile sees that
//! profile's tools, their plugins and calls only.
//!
//! Everything from outside is text ([`html::text`]); the response carries a
//! Content-Security-Policy allowing only this server's own stylesheet and
//! script (no inline script or style, no other origin, no framing), so an
//! injected `<script>` would not run even if escaping failed. The script
//! ([`SCRIPT`]) only swaps in fresh copies of the live sections; without
//! it the page is whole and a `<noscript>` meta refresh reloads it.

pub mod card;
pub mod html;
mod page;

use crate::metrics::Metrics;
use serde::Deserialize;
use std::collections::{HashMap, VecDeque};
use std::sync::{Arc, Mutex};
use std::time::{Duration, SystemTime};
use tokio_util::sync::CancellationToken;
use toolhost_catalog::Host;
use toolhost_runtime::limits::HumanDuration;

pub use page::{View, render};

/// The stylesheet, served at `/console/console.css`.
pub const STYLE: &str = include_str!("console.css");
/// The script, served at `/console/console.js`.
pub const SCRIPT: &str = include_str!("console.js");
/// The page's Content-Security-Policy.
pub const CSP: &str = "default-src 'none'; script-src 'self'; style-src 'self'; img-src 'self'; connect-src 'self'; \
                       base-uri 'none'; form-action 'none'; frame-ancestors 'none'";

/// How often counters are sampled for the sparklines, and how many samples are kept.
const SAMPLE_EVERY: Duration = Duration::from_secs(10);
const SAMPLES: usize = 30;
/// Reload events kept.
const RELOADS: usize = 20;

/// `[serve.console]`.
#[derive(Debug, Clone, Default, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct ConsoleConfig {
    /// Whether the page is served (true when the section is there, unless set false).
    pub enabled: Option<bool>,
    /// With `[serve.oauth]`: the scope a token needs to see the page (required then).
    pub scope: Option<String>,
    /// How often the page refreshes its live sections (5s unless set; 1s to 10min).
    pub refresh: Option<HumanDuration>,
    /// How many of the latest calls it shows (30 unless set; at most 500).
    pub recent: Option<usize>,
}

impl ConsoleConfig {
    /// Checks the section against the server's authentication.
    pub fn check(&self, oauth: Option<&crate::oauth::ResourceServer>) -> anyhow::Result<()> {
        if let Some(oauth) = oauth
            && self.enabled != Some(false)
        {
            let Some(scope) = self.scope.as_deref().filter(|scope| !scope.trim().is_empty()) else {
                anyhow::bail!(
                    "[serve.console] needs `scope = \"NAME\"` with [serve.oauth]: the scope a token must carry to \
                     see the operator's page (e.g. \"toolhost:console\"), so that no MCP client's token shows it"
                );
            };
            // One scope-token (RFC 6749 3.3): no space, quote or backslash,
            // nothing that could end the challenge's `scope="…"`.
            if !scope.bytes().all(|b| b == 0x21 || (0x23..=0x5b).contains(&b) || (0x5d..=0x7e).contains(&b)) {
                anyhow::bail!(
                    "[serve.console] scope = {scope:?}: one scope name of printable ASCII, without spaces, quotes \
                     or backslashes (e.g. \"toolhost:console\")"
                );
            }
            if oauth.scopes().any(|mcp| mcp == scope) {
                anyhow::bail!(
                    "[serve.console] scope = {scope:?} is also a scope [serve.oauth] asks MCP clients for, so their \
                     tokens would open the operator's page: give the page a scope of its own (e.g. \
                     \"toolhost:console\")"
                );
            }
        }
        if let Some(refresh) = self.refresh
            && !(Duration::from_secs(1)..=Duration::from_secs(600)).contains(&refresh.0)
        {
            anyhow::bail!("[serve.console] refresh = \"{refresh}\": from 1s to 10min");
        }
        if self.recent.is_some_and(|recent| recent == 0 || recent > 500) {
            anyhow::bail!("[serve.console] recent: 1 to 500 calls");
        }
        Ok(())
    }
}

/// One sample of every tool's counters.
struct Sample {
    at: SystemTime,
    /// By `tool\u{0}origin`: calls and errors so far.
    counts: HashMap<String, (u64, u64)>,
}

/// A change of the catalog (a load or a hot reload).
#[derive(Clone)]
pub struct Reload {
    pub at: SystemTime,
    pub generation: u64,
    pub tools: usize,
    pub plugins: usize,
    pub problems: usize,
}

/// The page's own state: settings, counter samples and reload events.
pub struct Console {
    pub scope: Option<String>,
    pub refresh: Duration,
    pub recent: usize,
    samples: Mutex<VecDeque<Sample>>,
    reloads: Mutex<VecDeque<Reload>>,
}

impl Console {
    /// The page `config` sets up.
    pub fn new(config: &ConsoleConfig) -> Console {
        Console {
            scope: config.scope.clone(),
            refresh: config.refresh.map_or(Duration::from_secs(5), |refresh| refresh.0),
            recent: config.recent.unwrap_or(30),
            samples: Mutex::default(),
            reloads: Mutex::default(),
        }
    }

    /// Samples the counters every [`SAMPLE_EVERY`] and notes every catalog
    /// change, until `stop`.
    pub fn start(self: &Arc<Self>, host: Arc<Host>, metrics: Arc<Metrics>, stop: CancellationToken) {
        let console = self.clone();
        let sampling = stop.clone();
        tokio::spawn(async move {
            let mut tick = tokio::time::interval(SAMPLE_EVERY);
            tick.set_missed_tick_behavior(tokio::time::MissedTickBehavior::Delay);
            loop {
                tokio::select! {
                    () = sampling.cancelled() => return,
                    _ = tick.tick() => console.sample(&metrics),
                }
            }
        });
        let console = self.clone();
        let mut generations = host.shared_catalog().subscribe();
        let host = Arc::downgrade(&host);
        tokio::spawn(async move {
            loop {
                if let Some(host) = host.upgrade() {
                    let catalog = host.catalog();
                    if catalog.generation() > 0 {
                        console.note(Reload {
                            at: SystemTime::now(),
                            generation: catalog.generation(),
                            tools: catalog.tools().len(),
                            plugins: catalog.plugins().len(),
                            problems: catalog.problems().len(),
                        });
                    }
                }
                tokio::select! {
                    () = stop.cancelled() => return,
                    changed = generations.changed() => if changed.is_err() { return },
                }
            }
        });
    }

    fn sample(&self, metrics: &Metrics) {
        let counts = metrics
            .tool_totals()
            .into_iter()
            .map(|totals| (format!("{}\u{0}{}", totals.tool, totals.origin), (totals.calls(), totals.errors())))
            .collect();
        let mut samples = self.samples.lock().unwrap_or_else(|p| p.into_inner());
        samples.push_back(Sample { at: SystemTime::now(), counts });
        while samples.len() > SAMPLES {
            samples.pop_front();
        }
    }

    fn note(&self, reload: Reload) {
        let mut reloads = self.reloads.lock().unwrap_or_else(|p| p.into_inner());
        if reloads.back().is_some_and(|last| last.generation == reload.generation) {
            return;
        }
        reloads.push_back(reload);
        while reloads.len() > RELOADS {
            reloads.pop_front();
        }
    }

    /// The reloads noted, oldest first.
    pub fn reloads(&self) -> Vec<Reload> {
        self.reloads.lock().unwrap_or_else(|p| p.into_inner()).iter().cloned().collect()
    }

    /// Calls per minute of `tool` (of `origin`) in each interval between
    /// samples, oldest first, with the current counts (`calls`) as the last
    /// point; and the rate over the whole window.
    pub fn rates(&self, tool: &str, origin: &str, calls: u64) -> (Vec<f64>, Option<f64>) {
        let key = format!("{tool}\u{0}{origin}");
        let samples = self.samples.lock().unwrap_or_else(|p| p.into_inner());
        let mut points: Vec<(SystemTime, u64)> =
            samples.iter().map(|sample| (sample.at, sample.counts.get(&key).map_or(0, |(calls, _)| *calls))).collect();
        points.push((SystemTime::now(), calls));
        let per_minute = |(at0, c0): (SystemTime, u64), (at1, c1): (SystemTime, u64)| {
            let seconds = at1.duration_since(at0).unwrap_or_default().as_secs_f64().max(0.001);
            c1.saturating_sub(c0) as f64 * 60.0 / seconds
        };
        let series: Vec<f64> = points.windows(2).map(|pair| per_minute(pair[0], pair[1])).collect();
        let overall = (points.len() >= 2).then(|| per_minute(points[0], points[points.len() - 1]));
        (series, overall)
    }
}

/// The token a request presents to the page: `Authorization: Bearer T`, or
/// HTTP Basic with `T` as the password (what a browser sends after the
/// page's 401 asks for it; the user name is not looked at).
pub fn presented_token(headers: &http::HeaderMap) -> Option<String> {
    use base64::Engine as _;
    let value = headers.get(http::header::AUTHORIZATION)?.to_str().ok()?;
    let (scheme, rest) = value.split_once(' ')?;
    if scheme.eq_ignore_ascii_case("bearer") {
        return Some(rest.trim().to_owned());
    }
    if scheme.eq_ignore_ascii_case("basic") {
        let decoded = base64::engine::general_purpose::STANDARD.decode(rest.trim()).ok()?;
        let decoded = String::from_utf8(decoded).ok()?;
        let (_, password) = decoded.split_once(':')?;
        return Some(password.to_owned());
    }
    None
}

/// The latest lines of the audit log at `path`, newest first, at most
/// `count`: each a JSON object. It reads backwards from the end, at most
/// [`TAIL_BUDGET`] bytes; a line longer than [`TAIL_LINE`] (a caller's huge
/// arguments) is not read but stands in the list as a placeholder object
/// saying its size, so that no single line can push the others out of
/// sight. A file that is not a regular file, or cannot be read, gives the
/// reason instead.
pub fn audit_tail(path: &std::path::Path, count: usize) -> Result<Vec<serde_json::Value>, String> {
    use std::io::{Read, Seek, SeekFrom};
    const BLOCK: u64 = 64 * 1024;
    let shown = path.display();
    let mut file = toolhost_grants::readfile::open_regular(path).map_err(|err| format!("{shown}: {err}"))?;
    let length = file.metadata().map_err(|err| format!("{shown}: {err}"))?.len();
    let mut lines = Vec::new();
    // The bytes of the line the last block began inside, and how long it is
    // so far when it is already too long to keep.
    let mut partial: Vec<u8> = Vec::new();
    let mut skipped: Option<u64> = None;
    let mut end = length;
    let mut read = 0;
    let take = |line: &[u8], skipped: Option<u64>, lines: &mut Vec<serde_json::Value>| match skipped {
        Some(size) => lines.push(serde_json::json!({ "toolhost/too_long": size })),
        None if line.iter().all(u8::is_ascii_whitespace) => {}
        None => {
            if let Ok(value) = serde_json::from_slice::<serde_json::Value>(line)
                && value.is_object()
            {
                lines.push(value);
            }
        }
    };
    while end > 0 && lines.len() < count && read < TAIL_BUDGET {
        let start = end.saturating_sub(BLOCK);
        file.seek(SeekFrom::Start(start)).map_err(|err| format!("{shown}: {err}"))?;
        let mut block = Vec::with_capacity((end - start) as usize);
        (&mut file).take(end - start).read_to_end(&mut block).map_err(|err| format!("{shown}: {err}"))?;
        read += end - start;
        end = start;
        // Complete lines, newest first; the block's first piece may continue leftwards.
        let mut pieces: Vec<&[u8]> = block.split(|byte| *byte == b'\n').collect();
        let first = pieces.remove(0);
        for (index, piece) in pieces.iter().enumerate().rev() {
            let tail = index + 1 == pieces.len();
            if tail {
                // The piece before the newest newline ends the line carried from the right.
                let size = piece.len() as u64 + skipped.map_or(partial.len() as u64, |size| size);
                let mut line = piece.to_vec();
                line.extend_from_slice(&partial);
                take(&line, skipped.map(|_| size).or((size > TAIL_LINE).then_some(size)), &mut lines);
            } else {
                let size = piece.len() as u64;
                take(piece, (size > TAIL_LINE).then_some(size), &mut lines);
            }
            if lines.len() >= count {
                break;
            }
        }
        // What is left of the block joins the line still open on its left.
        if pieces.is_empty() {
            match &mut skipped {
                Some(size) => *size += first.len() as u64,
                None => {
                    let mut line = first.to_vec();
                    line.extend_from_slice(&partial);
                    partial = line;
                }
            }
        } else {
            partial = first.to_vec();
            skipped = None;
        }
        if skipped.is_none() && partial.len() as u64 > TAIL_LINE {
            skipped = Some(partial.len() as u64);
            partial.clear();
        }
    }
    if end == 0 && lines.len() < count {
        // The file's first line.
        let size = skipped.unwrap_or(partial.len() as u64);
        take(&partial, skipped.map(|_| size).or((size > TAIL_LINE).then_some(size)), &mut lines);
    }
    lines.truncate(count);
    Ok(lines)
}

/// The most bytes [`audit_tail`] reads.
const TAIL_BUDGET: u64 = 16 << 20;
/// The longest audit line [`audit_tail`] shows.
const TAIL_LINE: u64 = 256 * 1024;

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_token_comes_as_bearer_or_as_basics_password() {
        let mut headers = http::HeaderMap::new();
        headers.insert(http::header::AUTHORIZATION, "Bearer abc".parse().unwrap());
        assert_eq!(presented_token(&headers).as_deref(), Some("abc"));
        // console:s3:cret
        headers.insert(http::header::AUTHORIZATION, "Basic Y29uc29sZTpzMzpjcmV0".parse().unwrap());
        assert_eq!(presented_token(&headers).as_deref(), Some("s3:cret"));
        headers.insert(http::header::AUTHORIZATION, "Digest x".parse().unwrap());
        assert_eq!(presented_token(&headers), None);
    }

    #[test]
    fn the_tail_of_a_log_is_its_last_whole_lines_newest_first() {
        let dir = tempfile_dir();
        let path = dir.join("audit.jsonl");
        let mut text = String::new();
        for seq in 0..5000 {
            text.push_str(&format!("{{\"seq\":{seq},\"pad\":\"{}\"}}\n", "x".repeat(100)));
        }
        text.push_str("not json\n");
        std::fs::write(&path, text).unwrap();
        let lines = audit_tail(&path, 3).unwrap();
        let seqs: Vec<u64> = lines.iter().map(|line| line["seq"].as_u64().unwrap()).collect();
        assert_eq!(seqs, [4999, 4998, 4997]);
        // Every line, across blocks, in order; the file's first line too.
        let all = audit_tail(&path, 10_000).unwrap();
        assert_eq!(all.len(), 5000);
        assert_eq!((all[0]["seq"].as_u64(), all[4999]["seq"].as_u64()), (Some(4999), Some(0)));
        // A caller's huge line (1 MiB) hides nothing: it is one placeholder.
        let mut text = std::fs::read_to_string(&path).unwrap();
        text.push_str(&format!("{{\"seq\":5000,\"pad\":\"{}\"}}\n", "y".repeat(1 << 20)));
        text.push_str("{\"seq\":5001}\n");
        std::fs::write(&path, text).unwrap();
        let lines = audit_tail(&path, 4).unwrap();
        assert_eq!(lines[0]["seq"], 5001);
        assert!(lines[1]["toolhost/too_long"].as_u64().unwrap() > 1 << 20, "{}", lines[1]);
        assert_eq!((lines[2]["seq"].as_u64(), lines[3]["seq"].as_u64()), (Some(4999), Some(4998)));
        assert!(audit_tail(&dir, 3).unwrap_err().contains("not a regular file"));
        let _ = std::fs::remove_dir_all(&dir);
    }

    fn tempfile_dir() -> std::path::PathBuf {
        let dir = std::env::temp_dir().join(format!("toolhost-console-{}", std::process::id()));
        std::fs::create_dir_all(&dir).unwrap();
        dir
    }

    #[test]
    fn the_console_needs_its_own_scope_with_oauth() {
        let oauth = crate::oauth::ResourceServer::new(crate::oauth::OAuthConfig {
            issuer: "https://issuer.example".to_owned(),
            resource: "https://tools.example/mcp".to_owned(),
            jwks_uri: None,
            scopes: vec!["mcp".to_owned()],
            tools: [("hash".to_owned(), "tools:hash".to_owned())].into(),
        })
        .unwrap();
        let config = ConsoleConfig::default();
        assert!(config.check(None).is_ok());
        assert!(config.check(Some(&oauth)).unwrap_err().to_string().contains("scope"));
        let with = |scope: &str| ConsoleConfig { scope: Some(scope.to_owned()), ..ConsoleConfig::default() };
        assert!(with("toolhost:console").check(Some(&oauth)).is_ok());
        for taken in ["mcp", "tools:hash"] {
            let err = with(taken).check(Some(&oauth)).unwrap_err().to_string();
            assert!(err.contains("a scope of its own"), "{taken}: {err}");
        }
        for bad in ["a b", "x\", error=\"evil", "line\nbreak", "back\\slash"] {
            let err = with(bad).check(Some(&oauth)).unwrap_err().to_string();
            assert!(err.contains("one scope name"), "{bad:?}: {err}");
        }
        let config = ConsoleConfig { recent: Some(0), ..ConsoleConfig::default() };
        assert!(config.check(None).is_err());
    }
}

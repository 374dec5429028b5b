//! `[[hooks]]`: the operator's own rules, run before and after a call. A hook
//! is a command (the call as JSON on its stdin, its decision as JSON on its
//! stdout) or a loopback `http://` endpoint (the same JSON as a POST body and
//! its answer). A decision allows, denies (with a reason the caller sees),
//! asks (the path's own way of asking a person) or rewrites the arguments
//! (which the host then checks against the tool's schema, as any call's).
//!
//! A hook is bounded in time (a command that hangs is killed with its whole
//! process group), in what it may print, and what it says is parsed strictly:
//! a crash, a timeout or a stray answer is an error, which denies the call
//! unless the hook says `on_error = "allow"`.

use serde::Deserialize;
use serde_json::{Value, json};
use std::time::Duration;
use tokio::io::{AsyncReadExt, AsyncWriteExt};
use toolhost_grants::names::Endpoint;
use toolhost_runtime::limits::HumanDuration;

/// How long a hook may take when its config does not say.
pub const DEFAULT_TIMEOUT: Duration = Duration::from_secs(5);

/// The most a hook's answer may be.
const ANSWER_LIMIT: u64 = 1 << 20;

/// The most of a reason (or a failing hook's stderr) that is kept.
const REASON_LIMIT: usize = 1000;

/// When a hook runs.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum When {
    /// Before the call: may allow, deny, ask or rewrite.
    Before,
    /// After the call, seeing its outcome: may allow it or withhold its result.
    After,
}

/// What a failing hook (crashed, hung, unreadable answer) means for the call.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum OnError {
    /// The call is denied (the default: failing closed).
    #[default]
    Deny,
    /// The call goes on; the failure is in the audit line.
    Allow,
}

/// One `[[hooks]]` entry as written.
#[derive(Debug, Clone, PartialEq, Eq, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct HookConfig {
    /// Its name in messages and audit lines (`hook N` by default).
    pub name: Option<String>,
    /// `before` or `after`.
    pub when: When,
    /// The program and its arguments (not through a shell).
    #[serde(default)]
    pub command: Vec<String>,
    /// Or a loopback `http://` URL to POST to.
    pub url: Option<String>,
    /// How long it may take (`5s` by default).
    pub timeout: Option<HumanDuration>,
    /// `deny` (default) or `allow`.
    #[serde(default)]
    pub on_error: OnError,
    /// Only calls of these tools (all when empty).
    #[serde(default)]
    pub tools: Vec<String>,
    /// Only calls of these plugins' tools (all when empty); for an MCP
    /// server's tools, the server's name.
    #[serde(default)]
    pub plugins: Vec<String>,
    /// What a before-hook is asked about: `tool` calls (the default),
    /// `resource` reads, `prompt` gets. `tools` narrows tool calls only.
    #[serde(default)]
    pub kinds: Vec<Kind>,
}

/// What a hook may be asked about.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum Kind {
    /// A tool call.
    Tool,
    /// A resource read (`resources/read`).
    Resource,
    /// A prompt filled in (`prompts/get`).
    Prompt,
}

/// A checked hook, ready to run.
#[derive(Debug, Clone)]
pub struct Hook {
    /// Its name in messages and audit lines.
    pub name: String,
    /// When it runs.
    pub when: When,
    run: Run,
    timeout: Duration,
    /// What its failure means.
    pub on_error: OnError,
    tools: Vec<String>,
    plugins: Vec<String>,
    kinds: Vec<Kind>,
}

#[derive(Debug, Clone)]
enum Run {
    Command(Vec<String>),
    Url { authority: String, host: String, port: u16, target: String, shown: String },
}

/// What a hook decided.
#[derive(Debug, Clone, PartialEq)]
pub enum Decision {
    /// The call goes on.
    Allow,
    /// The call is refused; the reason is what the caller sees.
    Deny(String),
    /// A person decides (the path's approval prompt, an MCP elicitation).
    Ask(String),
    /// The call goes on with these arguments, checked against the schema.
    Rewrite(Value),
}

impl Decision {
    /// Its word in audit lines.
    pub fn word(&self) -> &'static str {
        match self {
            Decision::Allow => "allow",
            Decision::Deny(_) => "deny",
            Decision::Ask(_) => "ask",
            Decision::Rewrite(_) => "rewrite",
        }
    }
}

impl Hook {
    /// Checks entry number `index` (from 1) of `[[hooks]]`.
    pub fn new(index: usize, config: &HookConfig) -> Result<Hook, String> {
        let name = config.name.clone().unwrap_or_else(|| format!("hook {index}"));
        let run = match (config.command.as_slice(), &config.url) {
            ([], None) | ([_, ..], Some(_)) => {
                return Err(format!("[[hooks]] `{name}`: give exactly one of `command = [...]` and `url`"));
            }
            (argv @ [program, ..], None) => {
                if program.is_empty() {
                    return Err(format!("[[hooks]] `{name}`: `command` starts with an empty program name"));
                }
                Run::Command(argv.to_vec())
            }
            ([], Some(url)) => {
                let endpoint = Endpoint::parse(url).map_err(|err| format!("[[hooks]] `{name}`: {err}"))?;
                if endpoint.scheme != "http" || !endpoint.is_private_channel() {
                    return Err(format!(
                        "[[hooks]] `{name}`: the url must be `http://` on this machine (127.0.0.1, [::1] or \
                         localhost): a hook sees every call's arguments"
                    ));
                }
                let parsed = url::Url::parse(&endpoint.url).map_err(|err| format!("[[hooks]] `{name}`: {err}"))?;
                let mut target = parsed.path().to_owned();
                if let Some(query) = parsed.query() {
                    target.push('?');
                    target.push_str(query);
                }
                let host = endpoint.host.to_string();
                Run::Url {
                    authority: format!("{host}:{}", endpoint.port),
                    host: host.trim_start_matches('[').trim_end_matches(']').to_owned(),
                    port: endpoint.port,
                    target,
                    shown: endpoint.url.clone(),
                }
            }
        };
        let timeout = config.timeout.map_or(DEFAULT_TIMEOUT, |timeout| timeout.0);
        if timeout.is_zero() {
            return Err(format!("[[hooks]] `{name}`: `timeout` must be more than 0"));
        }
        let kinds = if config.kinds.is_empty() { vec![Kind::Tool] } else { config.kinds.clone() };
        if config.when == When::After && kinds != [Kind::Tool] {
            return Err(format!(
                "[[hooks]] `{name}`: an after-hook sees tool calls only (`kinds = [\"tool\"]`); resource reads and \
                 prompts can be hooked before they run"
            ));
        }
        Ok(Hook {
            name,
            when: config.when,
            run,
            timeout,
            on_error: config.on_error,
            tools: config.tools.clone(),
            plugins: config.plugins.clone(),
            kinds,
        })
    }

    /// Whether it applies to a call of `tool` (of `plugin`, when known).
    pub fn applies(&self, tool: &str, plugin: Option<&str>) -> bool {
        self.kinds.contains(&Kind::Tool)
            && (self.tools.is_empty() || self.tools.iter().any(|name| name == tool))
            && (self.plugins.is_empty() || plugin.is_some_and(|plugin| self.plugins.iter().any(|name| name == plugin)))
    }

    /// Whether it applies to a resource read or prompt (`kind`) of `plugin`;
    /// `tools` does not narrow these.
    pub fn applies_to_offer(&self, kind: Kind, plugin: Option<&str>) -> bool {
        self.kinds.contains(&kind)
            && (self.plugins.is_empty() || plugin.is_some_and(|plugin| self.plugins.iter().any(|name| name == plugin)))
    }

    /// Runs the hook on `input` and reads its decision.
    pub async fn decide(&self, input: &Value) -> Result<Decision, String> {
        let body = serde_json::to_vec(input).map_err(|err| err.to_string())?;
        let answer = match &self.run {
            Run::Command(argv) => run_command(argv, &body, self.timeout).await?,
            Run::Url { authority, host, port, target, shown } => {
                match tokio::time::timeout(self.timeout, post(authority, host, *port, target, body)).await {
                    Ok(answer) => answer.map_err(|err| format!("{shown}: {err}"))?,
                    Err(_) => return Err(format!("{shown} did not answer within {}ms", self.timeout.as_millis())),
                }
            }
        };
        parse_decision(&answer, self.when)
    }
}

/// Reads a hook's answer: one JSON object with a known `decision`.
pub fn parse_decision(answer: &[u8], when: When) -> Result<Decision, String> {
    let text = std::str::from_utf8(answer).map_err(|_| "answered with bytes that are not UTF-8 text".to_owned())?;
    if text.trim().is_empty() {
        return Err("answered nothing (a hook prints a JSON object such as {\"decision\":\"allow\"})".to_owned());
    }
    // Strict: a member named twice (`{"decision":"deny",…,"decision":"allow"}`)
    // is read differently by different parsers, so it is no decision at all.
    let value: Value = toolhost_grants::json::strict(text.trim().as_bytes()).map_err(|err| {
        match toolhost_grants::json::repeated_member(&err) {
            Some(said) => format!("answered JSON in which {said}, which is no one decision: `{}`", shown(text.trim())),
            None => format!("answered something that is not a JSON decision: `{}`", shown(text.trim())),
        }
    })?;
    let decision = value
        .get("decision")
        .and_then(Value::as_str)
        .ok_or_else(|| format!("answered JSON without a `decision` string: `{}`", shown(text.trim())))?;
    let reason = || {
        let reason = value.get("reason").and_then(Value::as_str).unwrap_or("no reason given");
        let mut reason = toolhost_runtime::text::printable(reason).into_owned();
        toolhost_runtime::text::truncate(&mut reason, REASON_LIMIT);
        reason
    };
    match (decision, when) {
        ("allow", _) => Ok(Decision::Allow),
        ("deny", _) => Ok(Decision::Deny(reason())),
        ("ask", When::Before) => Ok(Decision::Ask(reason())),
        ("rewrite", When::Before) => match value.get("arguments") {
            Some(arguments @ Value::Object(_)) => Ok(Decision::Rewrite(arguments.clone())),
            _ => Err("answered `rewrite` without an `arguments` object".to_owned()),
        },
        ("ask" | "rewrite", When::After) => {
            Err(format!("answered `{decision}` after the call, where only `allow` and `deny` mean something"))
        }
        (other, _) => Err(format!("answered the unknown decision `{}` (allow, deny, ask or rewrite)", shown(other))),
    }
}

fn shown(text: &str) -> String {
    let mut text = toolhost_runtime::text::printable(text).into_owned();
    toolhost_runtime::text::truncate(&mut text, 200);
    text
}

/// Runs `argv` with `input` on its stdin; its stdout, or why there is none.
async fn run_command(argv: &[String], input: &[u8], timeout: Duration) -> Result<Vec<u8>, String> {
    let program = &argv[0];
    let mut command = tokio::process::Command::new(program);
    command
        .args(&argv[1..])
        .stdin(std::process::Stdio::piped())
        .stdout(std::process::Stdio::piped())
        .stderr(std::process::Stdio::piped())
        .kill_on_drop(true)
        .process_group(0);
    let mut child = command.spawn().map_err(|err| format!("could not start `{program}`: {err}"))?;
    let pid = child.id();
    let stdin = child.stdin.take();
    let stdout = child.stdout.take();
    let stderr = child.stderr.take();
    let work = async {
        let write = async {
            if let Some(mut stdin) = stdin {
                // A hook that does not read its input is its business.
                let _ = stdin.write_all(input).await;
            }
        };
        let read = async {
            let mut out = Vec::new();
            if let Some(stdout) = stdout {
                let _ = stdout.take(ANSWER_LIMIT + 1).read_to_end(&mut out).await;
            }
            out
        };
        let read_err = async {
            let mut out = Vec::new();
            if let Some(stderr) = stderr {
                let _ = stderr.take(REASON_LIMIT as u64).read_to_end(&mut out).await;
            }
            out
        };
        let ((), out, err) = tokio::join!(write, read, read_err);
        (child.wait().await, out, err)
    };
    let finished = tokio::time::timeout(timeout, work).await;
    let Ok((status, out, err)) = finished else {
        if let Some(pid) = pid.and_then(|pid| i32::try_from(pid).ok()) {
            // SAFETY: signals the process group this function started.
            unsafe { libc::kill(-pid, libc::SIGKILL) };
        }
        let _ = child.wait().await;
        return Err(format!("`{program}` did not answer within {}ms and was killed", timeout.as_millis()));
    };
    let status = status.map_err(|err| format!("`{program}`: {err}"))?;
    if !status.success() {
        let said = String::from_utf8_lossy(&err);
        let said = said.lines().find(|line| !line.trim().is_empty()).map(|line| format!(": {}", shown(line.trim())));
        let how = match status.code() {
            Some(code) => format!("exited with status {code}"),
            None => "was killed by a signal".to_owned(),
        };
        return Err(format!("`{program}` {how}{}", said.unwrap_or_default()));
    }
    if out.len() as u64 > ANSWER_LIMIT {
        return Err(format!("`{program}` printed more than {ANSWER_LIMIT} bytes"));
    }
    Ok(out)
}

/// POSTs `body` to `target` on `host:port`; the answer's body.
async fn post(authority: &str, host: &str, port: u16, target: &str, body: Vec<u8>) -> Result<Vec<u8>, String> {
    use http_body_util::BodyExt;
    let stream =
        tokio::net::TcpStream::connect((host, port)).await.map_err(|err| format!("could not connect: {err}"))?;
    let (mut sender, connection) = hyper::client::conn::http1::handshake(hyper_util::rt::TokioIo::new(stream))
        .await
        .map_err(|err| format!("could not speak HTTP: {err}"))?;
    let connection = tokio::spawn(connection);
    let request = hyper::Request::post(target)
        .header(hyper::header::HOST, authority)
        .header(hyper::header::CONTENT_TYPE, "application/json")
        .body(http_body_util::Full::new(hyper::body::Bytes::from(body)))
        .map_err(|err| err.to_string())?;
    let response = sender.send_request(request).await.map_err(|err| format!("the request failed: {err}"))?;
    let status = response.status();
    let limited = http_body_util::Limited::new(response.into_body(), ANSWER_LIMIT as usize);
    let body = limited.collect().await.map_err(|err| format!("could not read the answer: {err}"))?.to_bytes();
    connection.abort();
    if !status.is_success() {
        return Err(format!("answered HTTP {status}"));
    }
    Ok(body.to_vec())
}

/// What a before-hook is shown of a call.
pub fn before_input(tool: &str, plugin: Option<&str>, arguments: &Value, caller: &Value) -> Value {
    json!({"when": "before", "tool": tool, "plugin": plugin, "arguments": arguments, "caller": caller})
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn reads_decisions_strictly() {
        assert_eq!(parse_decision(br#"{"decision":"allow"}"#, When::Before), Ok(Decision::Allow));
        assert_eq!(
            parse_decision(b"{\"decision\":\"deny\",\"reason\":\"no\\u001b[31m\"}\n", When::After),
            Ok(Decision::Deny("no [31m".to_owned()))
        );
        assert!(matches!(
            parse_decision(br#"{"decision":"rewrite","arguments":{"a":1}}"#, When::Before),
            Ok(Decision::Rewrite(_))
        ));
        for (answer, when, says) in [
            (&b""[..], When::Before, "answered nothing"),
            (b"yes", When::Before, "not a JSON decision"),
            (b"{\"ok\":1}", When::Before, "without a `decision`"),
            (b"{\"decision\":\"maybe\"}", When::Before, "unknown decision"),
            (b"{\"decision\":\"rewrite\"}", When::Before, "without an `arguments` object"),
            (b"{\"decision\":\"ask\"}", When::After, "only `allow` and `deny`"),
            (b"\xff", When::Before, "not UTF-8"),
        ] {
            let err = parse_decision(answer, when).unwrap_err();
            assert!(err.contains(says), "{err}");
        }
    }

    #[test]
    fn refuses_hooks_that_are_not_one_thing_or_not_local() {
        let base = HookConfig {
            name: None,
            when: When::Before,
            command: vec![],
            url: None,
            timeout: None,
            on_error: OnError::Deny,
            tools: vec![],
            plugins: vec![],
            kinds: vec![],
        };
        assert!(Hook::new(1, &base).unwrap_err().contains("exactly one"));
        let remote = HookConfig { url: Some("http://example.com/hook".into()), ..base.clone() };
        assert!(Hook::new(1, &remote).unwrap_err().contains("on this machine"));
        let local = HookConfig { url: Some("http://127.0.0.1:9/hook?x=1".into()), ..base.clone() };
        assert!(Hook::new(1, &local).is_ok());
        let filtered = HookConfig { command: vec!["true".into()], tools: vec!["a".into()], ..base };
        let hook = Hook::new(2, &filtered).unwrap();
        assert_eq!(hook.name, "hook 2");
        assert!(hook.applies("a", None) && !hook.applies("b", None));
        assert!(!hook.applies_to_offer(Kind::Resource, None), "tools only, unless `kinds` says more");
        let offers = HookConfig { command: vec!["true".into()], kinds: vec![Kind::Resource], ..filtered };
        let hook = Hook::new(3, &offers).unwrap();
        assert!(hook.applies_to_offer(Kind::Resource, Some("p")) && !hook.applies_to_offer(Kind::Prompt, None));
        assert!(!hook.applies("a", None), "`kinds` without `tool` leaves tool calls alone");
        let after = HookConfig { when: When::After, ..offers };
        assert!(Hook::new(4, &after).unwrap_err().contains("tool calls only"));
    }

    #[tokio::test]
    async fn kills_a_hook_that_hangs_and_reports_one_that_crashes() {
        let hang = HookConfig {
            name: None,
            when: When::Before,
            command: vec!["sh".into(), "-c".into(), "sleep 30".into()],
            url: None,
            timeout: Some(HumanDuration(Duration::from_millis(200))),
            on_error: OnError::Deny,
            tools: vec![],
            plugins: vec![],
            kinds: vec![],
        };
        let started = std::time::Instant::now();
        let err = Hook::new(1, &hang).unwrap().decide(&json!({})).await.unwrap_err();
        assert!(err.contains("was killed"), "{err}");
        assert!(started.elapsed() < Duration::from_secs(10));
        let crash = HookConfig { command: vec!["sh".into(), "-c".into(), "echo boom >&2; exit 3".into()], ..hang };
        let err = Hook::new(1, &crash).unwrap().decide(&json!({})).await.unwrap_err();
        assert!(err.contains("exited with status 3: boom"), "{err}");
    }
}

//! Accountable calls: a signed, chained audit line for every call on every
//! path, and the operator's hooks that allow, deny, ask about or rewrite a
//! call before it runs (and see its outcome after).
//!
//! The catalog's `Host` holds one [`Accountable`] when `[audit]` or
//! `[[hooks]]` is configured, and none otherwise (then a call pays nothing
//! for this crate). Front ends tell it who is calling with a [`Caller`].
//!
//! - [`log`]: the writer (a bounded queue and a thread; lost lines counted
//!   and said), [`head`] and [`merkle`]: the signed tree heads a batch of
//!   lines is signed under, [`verify`]: the checker behind `toolhost audit verify`,
//!   [`keys`]: the Ed25519 / ECDSA P-256 keys, [`canonical`]: the byte form
//!   lines are hashed and signed in, [`hooks`]: `[[hooks]]`.

pub mod canonical;
pub mod checkpoint;
pub mod head;
pub mod hooks;
pub mod keys;
mod line;
pub mod log;
pub mod merkle;
pub mod result;
pub mod verify;

#[cfg(test)]
mod batch_tests;

use canonical::Object;
use serde::Deserialize;
use serde_json::{Value, json};
use sha2::{Digest, Sha256};
use std::path::PathBuf;
use toolhost_runtime::limits::ByteSize;
use toolhost_runtime::outcome::CallReport;

/// How large a log file grows before it is moved aside, unless configured.
pub const DEFAULT_ROTATE: u64 = 100 << 20;

/// `[audit]` as written.
#[derive(Debug, Clone, Default, PartialEq, Eq, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct AuditConfig {
    /// The log file (relative to the config file's folder).
    pub file: Option<PathBuf>,
    /// Or standard output (not with `serve` over stdio, whose stdout is MCP's).
    #[serde(default)]
    pub stdout: bool,
    /// The size at which the file is moved to `FILE.N` and a new one begun.
    pub rotate_size: Option<ByteSize>,
    /// The private key (PKCS#8 PEM or DER) that signs every line (or every
    /// batch's tree head).
    pub key: Option<PathBuf>,
    /// The key's algorithm, checked against the key file: `ed25519` or `ecdsa-p256`.
    pub algorithm: Option<keys::Algorithm>,
    /// Whether lines carry the arguments themselves (scrubbed of the
    /// plugin's secrets), not only their SHA-256.
    #[serde(default)]
    pub include_arguments: bool,
    /// Records that may wait for the writer; more are dropped and counted.
    pub queue: Option<usize>,
    /// Whether a call waits (at most [`log::RECEIPT_WAIT`]) for its signed
    /// line (or its batch's signed head, signed as soon as the writer's queue
    /// is empty) and hands it back as its receipt (an MCP result's `_meta`).
    #[serde(default)]
    pub receipt_in_meta: bool,
    /// A second file, rewritten whole (temp + rename) after every batch of
    /// lines: the chain's last `seq` and line digest, signed
    /// ([`checkpoint`]), for `audit verify --checkpoint` to catch lines cut
    /// from the log's end.
    pub checkpoint: Option<PathBuf>,
    /// Lines per signed tree head ([`head`]); 1 signs every line alone, as
    /// toolhost did before batches.
    pub batch: Option<usize>,
    /// The longest a line waits for its head.
    pub batch_interval: Option<toolhost_runtime::limits::HumanDuration>,
}

impl AuditConfig {
    /// Whether an audit log is configured at all.
    pub fn is_on(&self) -> bool {
        self.file.is_some() || self.stdout
    }

    /// How lines are signed: `batch` and `batch_interval`, or their defaults.
    pub fn signing(&self) -> log::Signing {
        match self.batch {
            Some(1) => log::Signing::EachLine,
            batch => log::Signing::Batch {
                lines: batch.unwrap_or(head::DEFAULT_BATCH),
                interval: self.batch_interval.map_or(head::DEFAULT_INTERVAL, |interval| interval.0),
            },
        }
    }

    /// Checks the section (without touching files).
    pub fn check(&self) -> Result<(), String> {
        if !self.is_on() {
            if self.key.is_some()
                || self.include_arguments
                || self.rotate_size.is_some()
                || self.receipt_in_meta
                || self.checkpoint.is_some()
                || self.batch.is_some()
                || self.batch_interval.is_some()
            {
                return Err("[audit] needs `file = \"PATH\"` or `stdout = true`: where the log goes".to_owned());
            }
            return Ok(());
        }
        if self.file.is_some() && self.stdout {
            return Err("[audit]: give `file` or `stdout = true`, not both".to_owned());
        }
        if self.key.is_none() {
            return Err(
                "[audit] needs `key = \"PATH\"`, the private key that signs each line (make one with `toolhost audit \
                 keygen --out DIR`)"
                    .to_owned(),
            );
        }
        if self.checkpoint.is_some() && self.file.is_none() {
            return Err("[audit] `checkpoint` needs `file`: it says where the log file's chain should end".to_owned());
        }
        if let (Some(checkpoint), Some(file)) = (&self.checkpoint, &self.file)
            && checkpoint == file
        {
            return Err("[audit] `checkpoint` must be another file than the log's `file`".to_owned());
        }
        if self.batch.is_some_and(|batch| batch == 0 || batch > head::MAX_BATCH) {
            return Err(format!(
                "[audit] `batch` must be 1 (every line signed alone) to {} (lines under one signed tree head)",
                head::MAX_BATCH
            ));
        }
        if self.batch_interval.is_some_and(|interval| interval.0 > std::time::Duration::from_secs(60)) {
            return Err("[audit] `batch_interval` must be at most `60s`: it is how long a line may wait, unsigned, \
                        for its tree head"
                .to_owned());
        }
        if self.batch == Some(1) && self.batch_interval.is_some() {
            return Err(
                "[audit] `batch_interval` is for batches: with `batch = 1` every line is signed alone".to_owned()
            );
        }
        if self.queue == Some(0) {
            return Err("[audit] `queue` must be at least 1".to_owned());
        }
        if self.rotate_size.is_some_and(|size| size.bytes() < 4096) {
            return Err("[audit] `rotate_size` must be at least 4KiB".to_owned());
        }
        Ok(())
    }
}

/// Who is calling, as the front end knows it. Every field is optional;
/// `Caller::default()` is a library caller that said nothing.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct Caller {
    /// The path: `call`, `run`, `chat`, `serve` (stdio), `serve-http`, `task`.
    pub path: &'static str,
    /// The OAuth subject (`sub`) of the token, under `[serve.oauth]`.
    pub subject: Option<String>,
    /// The OAuth client id, or the MCP client's name from `initialize`.
    pub client: Option<String>,
    /// The MCP session.
    pub session: Option<String>,
}

impl Caller {
    /// A caller on `path` with nothing else known.
    pub fn on(path: &'static str) -> Caller {
        Caller { path, ..Caller::default() }
    }

    /// What audit lines and hooks say of it: its path (`library` when none
    /// was said) and whichever of subject, client and session are known.
    fn members(&self) -> impl Iterator<Item = (&'static str, &str)> {
        let path = if self.path.is_empty() { "library" } else { self.path };
        let known = [("subject", &self.subject), ("client", &self.client), ("session", &self.session)];
        std::iter::once(("path", path))
            .chain(known.into_iter().filter_map(|(name, value)| Some((name, value.as_deref()?))))
    }

    /// As hooks see it.
    pub fn to_json(&self) -> Value {
        Value::Object(self.members().map(|(name, value)| (name.to_owned(), json!(value))).collect())
    }

    /// As audit lines carry it: [`Caller::to_json`] in canonical form.
    fn lay_out(&self) -> Object {
        let mut object = Object::with_capacity(4, 96);
        for (name, value) in self.members() {
            object.str(name, value);
        }
        object
    }
}

/// What a hook decided about one call, for its audit line.
#[derive(Debug, Clone, PartialEq)]
pub struct HookNote {
    /// The hook's name.
    pub hook: String,
    /// `before` or `after`.
    pub when: &'static str,
    /// `allow`, `deny`, `ask`, `rewrite`, or `error`.
    pub decision: &'static str,
    /// Its reason, or the error.
    pub reason: Option<String>,
    /// For `ask`: whether the person approved.
    pub approved: Option<bool>,
}

impl HookNote {
    fn to_json(&self) -> Value {
        let mut value = json!({"hook": self.hook, "when": self.when, "decision": self.decision});
        if let Some(reason) = &self.reason {
            value["reason"] = json!(reason);
        }
        if let Some(approved) = self.approved {
            value["approved"] = json!(approved);
        }
        value
    }
}

/// What the host holds when `[audit]` or `[[hooks]]` is configured.
#[derive(Debug)]
pub struct Accountable {
    log: Option<log::AuditLog>,
    include_arguments: bool,
    /// Before-hooks, in config order.
    pub before: Vec<hooks::Hook>,
    /// After-hooks, in config order.
    pub after: Vec<hooks::Hook>,
    /// `receipt_in_meta`: calls wait for their signed line.
    receipts: bool,
}

impl Accountable {
    /// Sets up `[audit]` and `[[hooks]]`; `None` when neither is configured.
    /// Fails with one line on a key that cannot be read or a log that cannot be opened.
    pub fn new(audit: &AuditConfig, hooks: &[hooks::HookConfig]) -> Result<Option<Accountable>, String> {
        audit.check()?;
        let hooks = hooks
            .iter()
            .enumerate()
            .map(|(index, config)| hooks::Hook::new(index + 1, config))
            .collect::<Result<Vec<_>, _>>()?;
        if !audit.is_on() && hooks.is_empty() {
            return Ok(None);
        }
        let log = match (&audit.key, audit.is_on()) {
            (Some(key), true) => {
                let key = keys::SigningKey::load(key, audit.algorithm)?;
                let target = match &audit.file {
                    Some(path) => log::Target::File {
                        path: path.clone(),
                        rotate: audit.rotate_size.map_or(DEFAULT_ROTATE, ByteSize::bytes),
                        checkpoint: audit.checkpoint.clone(),
                    },
                    None => log::Target::Stdout,
                };
                Some(log::AuditLog::open(target, key, audit.queue.unwrap_or(log::DEFAULT_QUEUE), audit.signing())?)
            }
            _ => None,
        };
        let (before, after) = hooks.into_iter().partition(|hook| hook.when == hooks::When::Before);
        Ok(Some(Accountable {
            log,
            include_arguments: audit.include_arguments,
            before,
            after,
            receipts: audit.receipt_in_meta,
        }))
    }

    /// Whether calls are logged (hooks may be configured without a log).
    pub fn logs(&self) -> bool {
        self.log.is_some()
    }

    /// Whether lines carry the (scrubbed) arguments.
    pub fn include_arguments(&self) -> bool {
        self.include_arguments
    }

    /// Records dropped because the writer was behind.
    pub fn lost(&self) -> u64 {
        self.log.as_ref().map_or(0, log::AuditLog::lost)
    }

    /// Queues `record`; never waits. The writer turns it into a line.
    pub fn record(&self, record: CallRecord) {
        if let Some(log) = &self.log {
            log.record(log::Pending::Call(Box::new(record), self.include_arguments));
        }
    }
}

impl Accountable {
    /// Whether a call's caller gets its signed line back (`receipt_in_meta`).
    pub fn receipts(&self) -> bool {
        self.receipts && self.log.is_some()
    }

    /// Queues `record` and waits, at most [`log::RECEIPT_WAIT`], for the
    /// writer to have signed and written it: the signed line, as a receipt.
    /// `None` when the record was dropped (the writer behind), could not be
    /// written, or took longer; the call goes on without one.
    pub async fn record_with_receipt(&self, record: CallRecord) -> Option<Value> {
        let log = self.log.as_ref()?;
        let (send, receive) = tokio::sync::oneshot::channel();
        log.record(log::Pending::Receipted(Box::new(record), self.include_arguments, send));
        match tokio::time::timeout(log::RECEIPT_WAIT, receive).await {
            Ok(Ok(line)) => Some(line),
            Ok(Err(_)) => None,
            Err(_) => {
                tracing::warn!(
                    "the audit log's writer took longer than {:?} to sign a call's line; its result goes without a                      receipt (the line is still written)",
                    crate::log::RECEIPT_WAIT
                );
                None
            }
        }
    }
}

/// The hex SHA-256 of the canonical form of `arguments` (or of the text
/// itself when it is not JSON), what every line carries.
pub fn arguments_digest(arguments: Option<&Value>, text: &str) -> String {
    match arguments {
        Some(value) => keys::hex(&Sha256::digest(canonical::to_vec(value))),
        None => keys::hex(&Sha256::digest(text.as_bytes())),
    }
}

/// What ran, for a call's line.
#[derive(Debug, Clone, Default)]
pub struct Component {
    /// The plugin (file stem), or the MCP server's name.
    pub plugin: Option<String>,
    /// `plugin` or `mcp`.
    pub source: &'static str,
    /// The component's hex SHA-256.
    pub sha256: Option<String>,
    /// The grants in force, as the config wrote them (never a value).
    pub grants: Option<Value>,
    /// Who signed it, when it was pulled signed (`toolhost.lock`): the
    /// trusted key's name and fingerprint.
    pub signer: Option<Value>,
}

impl Component {
    /// As a line's members (`plugin`, `source`, `component`, `grants`,
    /// `signer`), laid out once for all the lines of what it describes.
    pub fn lay_out(&self) -> Object {
        let mut object = Object::with_capacity(5, 512);
        if let Some(plugin) = &self.plugin {
            object.str("plugin", plugin);
            object.str("source", self.source);
        }
        if let Some(sha256) = &self.sha256 {
            object.str("component", &format!("sha256:{sha256}"));
        }
        if let Some(grants) = &self.grants {
            object.value("grants", grants);
        }
        if let Some(signer) = &self.signer {
            object.value("signer", signer);
        }
        object
    }
}

/// Where a call went (a plugin, an MCP server), described on the writer's
/// thread, off the call's path.
pub trait Origin: Send + Sync {
    /// Its name, digest, grants and signer as a line's members
    /// ([`Component::lay_out`]), which a plugin lays out once.
    fn component(&self) -> std::sync::Arc<Object>;
    /// `arguments` (its JSON `value` when it parsed) as a line may show
    /// them: scrubbed by the scrubber of its outputs.
    fn shown(&self, text: &str, value: Option<Value>) -> Value;
}

/// One call's record as the call hands it over: cheap to make (what it
/// already holds, moved), turned into a line by the writer.
pub struct CallRecord {
    /// `tool`, `resource` or `prompt`.
    pub kind: &'static str,
    /// When it started.
    pub started: std::time::SystemTime,
    /// Who called.
    pub caller: Caller,
    /// The tool, URI or prompt.
    pub name: String,
    /// What ran it, when it was found.
    pub origin: Option<std::sync::Arc<dyn Origin>>,
    /// The arguments as called (after any rewrite): JSON text.
    pub arguments: String,
    /// The hooks' decisions.
    pub hooks: Vec<HookNote>,
    /// `Ok`, or the error's kind and message.
    pub outcome: Result<(), (&'static str, String)>,
    /// What it used.
    pub usage: toolhost_runtime::outcome::Usage,
    /// What was refused: target and kind.
    pub refused: Vec<(String, &'static str)>,
    /// What it did outside its sandbox: the HTTP requests its grant
    /// admitted (host, status, bytes) and the questions it asked.
    pub effects: toolhost_runtime::outcome::Effects,
    /// When the result was given again from `[cache]`: how long ago it was computed.
    pub cached: Option<std::time::Duration>,
    /// The result its caller gets, as JSON (an MCP `CallToolResult` without
    /// `_meta`), when the front end said how it hands it over: the line
    /// carries its digests ([`result`]), hashed by the writer.
    pub result: Option<Value>,
}

/// The outcome of a call whose caller went away before it ended.
pub fn cancelled() -> Result<(), (&'static str, String)> {
    Err((
        "cancelled",
        "the call was cancelled before it ended (its caller went away: a client's cancel, a closed connection, a \
         timeout or Ctrl-C); what it used and reached is not known"
            .to_owned(),
    ))
}

impl CallRecord {
    /// The outcome, usage and refusals of `report`.
    pub fn outcome_of(report: &CallReport) -> Result<(), (&'static str, String)> {
        match &report.outcome {
            Ok(_) => Ok(()),
            Err(error) => Err((error.kind(), error.to_string())),
        }
    }

    /// The refusals of `report`, as lines name them.
    pub fn refused_of(report: &CallReport) -> Vec<(String, &'static str)> {
        report.refused.iter().map(|refusal| (refusal.target.clone(), refusal.reason.kind())).collect()
    }

    /// The record as a line's members (before `v`, `seq`, `prev`, `key`,
    /// `sig`), laid out without a value tree.
    pub fn lay_out(self, include_arguments: bool) -> Object {
        // Room for every member a line may carry, and the chain's: no regrowth.
        let mut line = Object::with_capacity(32, 1024);
        line.str("kind", self.kind);
        line.with("time", |out| time_of(self.started, out));
        line.object("caller", &self.caller.lay_out());
        line.str(self.kind, &self.name);
        if let Some(origin) = &self.origin {
            line.extend(&origin.component());
        }
        let text = if self.arguments.trim().is_empty() { "{}" } else { self.arguments.as_str() };
        let value = serde_json::from_str::<Value>(text).ok();
        line.str("arguments_sha256", &arguments_digest(value.as_ref(), text));
        if include_arguments {
            let shown = match &self.origin {
                Some(origin) => origin.shown(text, value),
                None => json!({"withheld": "no scrubber for this tool (it was not found)"}),
            };
            line.value("arguments", &shown);
        }
        if !self.hooks.is_empty() {
            line.value("hooks", &Value::Array(self.hooks.iter().map(HookNote::to_json).collect()));
        }
        match &self.outcome {
            Ok(()) => line.with("outcome", |out| out.extend_from_slice(b"{\"ok\":true}")),
            Err((kind, message)) => {
                let mut outcome = Object::with_capacity(3, 64 + message.len());
                outcome.str("error", kind);
                outcome.str("message", message);
                outcome.bool("ok", false);
                line.object("outcome", &outcome);
            }
        }
        line.object("usage", &lay_out_usage(&self.usage));
        if let Some(age) = self.cached {
            let mut cached = Object::with_capacity(1, 24);
            cached.u64("age_ms", u64::try_from(age.as_millis()).unwrap_or(u64::MAX));
            line.object("cached", &cached);
        }
        if !self.refused.is_empty() {
            line.with("refused", |out| {
                out.push(b'[');
                for (index, (target, kind)) in self.refused.iter().enumerate() {
                    if index > 0 {
                        out.push(b',');
                    }
                    let mut refusal = Object::with_capacity(2, 32 + target.len());
                    refusal.str("kind", kind);
                    refusal.str("target", target);
                    refusal.write(out);
                }
                out.push(b']');
            });
        }
        effects_members(&mut line, self.effects, include_arguments.then_some(self.origin.as_deref()).flatten());
        if let Some(result) = &self.result {
            result::ResultDigests::of(result).into_members(&mut line);
        }
        line
    }
}

/// `when` as lines write it (RFC 3339, UTC, milliseconds), as a JSON
/// string. Calls that start in the same millisecond share it: the last one
/// is kept, per thread (the writer's).
fn time_of(when: std::time::SystemTime, out: &mut Vec<u8>) {
    thread_local! {
        static LAST: std::cell::RefCell<(u128, Vec<u8>)> = const { std::cell::RefCell::new((u128::MAX, Vec::new())) };
    }
    let written = |text: &mut Vec<u8>| {
        let time = chrono::DateTime::<chrono::Utc>::from(when);
        canonical::string(&time.to_rfc3339_opts(chrono::SecondsFormat::Millis, true), text);
    };
    let Ok(since) = when.duration_since(std::time::UNIX_EPOCH) else {
        return written(out);
    };
    let millis = since.as_millis();
    LAST.with_borrow_mut(|(last, text)| {
        if *last != millis {
            text.clear();
            written(text);
            *last = millis;
        }
        out.extend_from_slice(text);
    });
}

/// A call's usage as its line carries it: the members [`Usage`]'s
/// serialization names (`wall_us` in microseconds), in canonical form.
///
/// [`Usage`]: toolhost_runtime::outcome::Usage
fn lay_out_usage(usage: &toolhost_runtime::outcome::Usage) -> Object {
    let mut object = Object::with_capacity(6, 96);
    object.u64("fuel", usage.fuel);
    object.u64("http_request_bytes", usage.http_request_bytes);
    object.u64("http_requests", u64::from(usage.http_requests));
    object.u64("http_response_bytes", usage.http_response_bytes);
    object.u64("memory_peak", usage.memory_peak);
    object.u64("wall_us", u64::try_from(usage.wall.as_micros()).unwrap_or(u64::MAX));
    object
}

/// `hosts` and `questions` (with their overflow counts) into a line's
/// members; a question's answer only when `shown_by` (the arguments are
/// included), scrubbed by its scrubber.
fn effects_members(line: &mut Object, effects: toolhost_runtime::outcome::Effects, shown_by: Option<&dyn Origin>) {
    if !effects.hosts.is_empty() {
        let hosts = effects.hosts.iter().map(|contact| serde_json::to_value(contact).unwrap_or(Value::Null));
        line.value("hosts", &Value::Array(hosts.collect()));
    }
    if effects.more_hosts > 0 {
        line.u64("hosts_more", u64::from(effects.more_hosts));
    }
    if !effects.questions.is_empty() {
        let questions = effects.questions.into_iter().map(|question| {
            let mut value = serde_json::to_value(&question).unwrap_or(Value::Null);
            if let (Some(origin), Some(answer)) = (shown_by, question.answer) {
                value["answer"] = origin.shown(&answer.to_string(), Some(answer));
            }
            value
        });
        line.value("questions", &Value::Array(questions.collect()));
    }
    if effects.more_questions > 0 {
        line.u64("questions_more", u64::from(effects.more_questions));
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::sync::Arc;
    use std::time::{Duration, UNIX_EPOCH};
    use toolhost_runtime::outcome::{Contact, Effects, QuestionAsked, Usage};

    struct Shown(Arc<Object>);

    impl Origin for Shown {
        fn component(&self) -> Arc<Object> {
            self.0.clone()
        }

        fn shown(&self, _: &str, value: Option<Value>) -> Value {
            json!({"scrubbed": value})
        }
    }

    /// Every member a call's line may carry, laid out member by member, is
    /// the canonical form of the same line built as a value tree.
    #[test]
    fn a_record_is_laid_out_in_the_canonical_form_of_its_members() {
        let component = Component {
            plugin: Some("fetch".to_owned()),
            source: "plugin",
            sha256: Some("ab".repeat(32)),
            grants: Some(json!({"http": ["api.example.com"], "sockets": false, "sampling": null})),
            signer: Some(json!({"key": "team", "fingerprint": "sha256:00"})),
        };
        let origin: Arc<dyn Origin> = Arc::new(Shown(Arc::new(component.lay_out())));
        let contact = Contact {
            scheme: "https",
            host: "api.example.com".to_owned(),
            port: 443,
            method: "GET".to_owned(),
            status: Some(200),
            sent: 0,
            received: 12,
        };
        let question =
            QuestionAsked { kind: "elicitation", outcome: "answered", why: None, answer: Some(json!({"ok": 1})) };
        let record = CallRecord {
            kind: "tool",
            started: UNIX_EPOCH + Duration::from_millis(1_764_000_000_123),
            caller: Caller {
                path: "serve-http",
                subject: Some("ann".to_owned()),
                client: Some("c\"1".to_owned()),
                session: None,
            },
            name: "get\u{e9}".to_owned(),
            origin: Some(origin),
            arguments: r#"{ "url": "https://api.example.com/x", "a": [2, 1] }"#.to_owned(),
            hooks: vec![HookNote {
                hook: "h".to_owned(),
                when: "before",
                decision: "allow",
                reason: None,
                approved: None,
            }],
            outcome: Err(("timeout", "took \"too\" long\n".to_owned())),
            usage: Usage {
                fuel: 7,
                memory_peak: 65_536,
                wall: Duration::from_micros(1_234),
                http_requests: 1,
                http_request_bytes: 0,
                http_response_bytes: 12,
            },
            refused: vec![("tcp 10.0.0.1:22".to_owned(), "not_granted")],
            effects: Effects {
                hosts: vec![contact.clone()],
                more_hosts: 3,
                questions: vec![question.clone()],
                more_questions: 1,
            },
            cached: Some(Duration::from_millis(2_500)),
            result: Some(json!({"content": [{"type": "text", "text": "x"}], "structuredContent": {"b": 1, "a": 2}})),
        };
        let arguments = json!({"url": "https://api.example.com/x", "a": [2, 1]});
        let mut question_value = serde_json::to_value(&question).unwrap();
        question_value["answer"] = json!({"scrubbed": {"ok": 1}});
        let mut expected = json!({
            "kind": "tool",
            "time": "2025-11-24T16:00:00.123Z",
            "caller": {"path": "serve-http", "subject": "ann", "client": "c\"1"},
            "tool": "get\u{e9}",
            "plugin": "fetch",
            "source": "plugin",
            "component": format!("sha256:{}", "ab".repeat(32)),
            "grants": {"http": ["api.example.com"], "sockets": false, "sampling": null},
            "signer": {"key": "team", "fingerprint": "sha256:00"},
            "arguments_sha256": keys::hex(&Sha256::digest(canonical::to_vec(&arguments))),
            "arguments": {"scrubbed": arguments},
            "hooks": [{"hook": "h", "when": "before", "decision": "allow"}],
            "outcome": {"ok": false, "error": "timeout", "message": "took \"too\" long\n"},
            "usage": serde_json::to_value(record.usage).unwrap(),
            "cached": {"age_ms": 2500},
            "refused": [{"target": "tcp 10.0.0.1:22", "kind": "not_granted"}],
            "hosts": [serde_json::to_value(&contact).unwrap()],
            "hosts_more": 3,
            "questions": [question_value],
            "questions_more": 1,
        });
        let digests = result::ResultDigests::of(record.result.as_ref().unwrap());
        expected["result_sha256"] = json!(digests.whole);
        expected["result_parts"] = json!({"content_sha256": digests.content, "blocks": 1, "isError": false,
                                          "structured_sha256": digests.structured});
        let laid = record.lay_out(true).to_vec();
        assert_eq!(String::from_utf8(laid).unwrap(), String::from_utf8(canonical::to_vec(&expected)).unwrap());
    }

    /// The time of a line is its call's start to the millisecond, also when
    /// the one before it started in the same millisecond or another.
    #[test]
    fn a_lines_time_is_its_own_millisecond() {
        let text = |millis: u64, micros: u64| {
            let mut out = Vec::new();
            time_of(UNIX_EPOCH + Duration::from_millis(millis) + Duration::from_micros(micros), &mut out);
            String::from_utf8(out).unwrap()
        };
        assert_eq!(text(1_764_000_000_123, 100), "\"2025-11-24T16:00:00.123Z\"");
        assert_eq!(text(1_764_000_000_123, 900), "\"2025-11-24T16:00:00.123Z\"");
        assert_eq!(text(1_764_000_000_124, 0), "\"2025-11-24T16:00:00.124Z\"");
        assert_eq!(text(1_764_000_000_123, 0), "\"2025-11-24T16:00:00.123Z\"");
        let mut before = Vec::new();
        time_of(UNIX_EPOCH - Duration::from_millis(1_500), &mut before);
        assert_eq!(String::from_utf8(before).unwrap(), "\"1969-12-31T23:59:58.500Z\"");
    }

    /// A member set twice keeps the last value; a removed one is gone; the
    /// chain's members sort among the record's.
    #[test]
    fn an_object_replaces_and_removes_members() {
        let mut object = Object::of(json!({"sig": "old", "b": 1, "a": [true]}));
        object.u64("b", 2);
        object.remove("sig");
        object.str("prev", "00");
        object.bool("z", false);
        assert_eq!(String::from_utf8(object.to_vec()).unwrap(), r#"{"a":[true],"b":2,"prev":"00","z":false}"#);
        assert_eq!(String::from_utf8(Object::of(json!([1])).to_vec()).unwrap(), r#"{"record":[1]}"#);
    }
}

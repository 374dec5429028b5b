//! A call under `[audit]` and `[[hooks]]`: the before-hooks decide (allow,
//! deny, ask through the call's own asker, rewrite the arguments, which the
//! call then checks against the schema like any others), the call runs, the
//! after-hooks see its outcome (and may withhold the result), and one audit
//! line records all of it. `Host::call_as` comes here only when one of the two
//! is configured; otherwise nothing of this runs.

use crate::plugin::Plugin;
use crate::{Catalog, Source};
use serde_json::{Value, json};
use std::borrow::Cow;
use std::sync::Arc;
use toolhost_audit::canonical::Object;
use toolhost_audit::hooks::{Decision, Hook, OnError};
use toolhost_audit::{Accountable, CallRecord, Caller, Component, HookNote, Origin};
use toolhost_grants::env::Redactor;
use toolhost_runtime::ask::{Answer, Asked, Elicitation, Elicited, Question};
use toolhost_runtime::outcome::{CallError, CallReport};
use toolhost_runtime::sandbox::CallHooks;

/// Runs `tool` under `accountable`: the before-hooks, then `run` (the
/// host's own call, given the arguments as the hooks left them, unless a
/// hook refused), then the after-hooks and the audit line.
pub(crate) async fn call(
    accountable: &Accountable,
    catalog: &Catalog,
    tool: &str,
    arguments: &str,
    hooks: CallHooks,
    caller: &Caller,
    run: impl AsyncFnOnce(&str, CallHooks) -> CallReport,
) -> CallReport {
    let started = std::time::SystemTime::now();
    let entry = catalog.find(tool);
    let plugin = entry.map(|entry| entry.origin());
    let caller_json =
        if accountable.before.is_empty() && accountable.after.is_empty() { Value::Null } else { caller.to_json() };
    // Writes the line as `cancelled` should this future be dropped before the end.
    let mut guard = Guard {
        accountable,
        kind: "tool",
        started,
        caller,
        name: tool,
        origin: entry.map(origin_of_lazy),
        arguments: Cow::Borrowed(arguments),
        notes: Vec::new(),
        done: false,
    };
    let notes = &mut guard.notes;
    let mut arguments: Cow<'_, str> = Cow::Borrowed(arguments);
    let mut refused = None;
    for hook in accountable.before.iter().filter(|hook| hook.applies(tool, plugin)) {
        let input = json!({
            "when": "before",
            "tool": tool,
            "plugin": plugin,
            "arguments": as_json(&arguments),
            "caller": caller_json,
        });
        match hook.decide(&input).await {
            Ok(Decision::Allow) => notes.push(note(hook, "allow", None, None)),
            Ok(Decision::Deny(reason)) => {
                refused = Some(CallError::Denied(format!("{reason} (hook `{}`)", hook.name)));
                notes.push(note(hook, "deny", Some(reason), None));
                break;
            }
            Ok(Decision::Ask(reason)) => {
                let approval = ask(&hooks, hook, tool, &reason).await;
                let approved = match approval {
                    Approval::Given(approved) => Some(approved),
                    Approval::Nobody | Approval::Later => None,
                };
                notes.push(note(hook, "ask", Some(reason.clone()), approved));
                let why = match approval {
                    Approval::Given(true) => continue,
                    Approval::Given(false) => "the person asked said no",
                    Approval::Nobody => "no one could be asked on this path",
                    // A 2026-07-28 request round: the client is asked in
                    // the answer, and the call is made again with its reply.
                    Approval::Later => {
                        refused = Some(CallError::InputRequired);
                        break;
                    }
                };
                refused = Some(CallError::Denied(format!("{reason} (hook `{}` asked; {why})", hook.name)));
                break;
            }
            Ok(Decision::Rewrite(new)) => {
                arguments = Cow::Owned(new.to_string());
                notes.push(note(hook, "rewrite", None, None));
            }
            Err(error) => {
                notes.push(note(hook, "error", Some(error.clone()), None));
                if hook.on_error == OnError::Deny {
                    refused = Some(CallError::Denied(format!("the hook `{}` failed: {error}", hook.name)));
                    break;
                }
                tracing::warn!(hook = %hook.name, "the hook failed, and the call goes on (`on_error = \"allow\"`): {error}");
            }
        }
    }
    let ran = refused.is_none();
    if let Cow::Owned(rewritten) = &arguments {
        guard.arguments = Cow::Owned(rewritten.clone());
    }
    let notes = &mut guard.notes;
    let shape = hooks.result_shape.clone();
    let mut report = match refused {
        Some(error) => CallReport::rejected(tool, plugin.map(str::to_owned), error),
        None => run(&arguments, hooks).await,
    };
    if ran && report.plugin.is_some() {
        after(accountable, tool, plugin, &arguments, &caller_json, &mut report, notes).await;
    }
    guard.done = true;
    if accountable.logs() {
        let record = CallRecord {
            kind: "tool",
            started,
            caller: caller.clone(),
            name: tool.to_owned(),
            origin: entry.map(origin_of),
            arguments: arguments.into_owned(),
            hooks: std::mem::take(&mut guard.notes),
            outcome: CallRecord::outcome_of(&report),
            usage: report.usage,
            refused: CallRecord::refused_of(&report),
            effects: report.effects.clone(),
            cached: report.cached,
            // The result as the caller gets it (after the after-hooks), for its digest.
            result: shape.and_then(|shape| shape(&report)),
        };
        if accountable.receipts() {
            report.receipt = accountable.record_with_receipt(record).await;
        } else {
            accountable.record(record);
        }
    }
    report
}

/// A call's line while the call runs: dropped before the call ends (its
/// caller went away: a client's cancel, a closed connection, a request's
/// timeout, Ctrl-C), it writes the line with the outcome `cancelled`, the
/// hooks' decisions so far and the arguments as they stood. It only borrows
/// what the call holds, so a call that ends pays nothing for it.
pub(crate) struct Guard<'a> {
    accountable: &'a Accountable,
    kind: &'static str,
    started: std::time::SystemTime,
    caller: &'a Caller,
    name: &'a str,
    origin: Option<OriginOf<'a>>,
    arguments: Cow<'a, str>,
    notes: Vec<HookNote>,
    /// The call ended and wrote its own line.
    done: bool,
}

/// What ran a call, made into an [`Origin`] only for a cancelled call's line.
pub(crate) enum OriginOf<'a> {
    Entry(&'a crate::Entry),
    Plugin(&'a Arc<Plugin>),
}

fn origin_of_lazy(entry: &crate::Entry) -> OriginOf<'_> {
    OriginOf::Entry(entry)
}

impl Drop for Guard<'_> {
    fn drop(&mut self) {
        if self.done || !self.accountable.logs() {
            return;
        }
        let origin = self.origin.as_ref().map(|origin| match origin {
            OriginOf::Entry(entry) => origin_of(entry),
            OriginOf::Plugin(plugin) => Arc::clone(plugin) as Arc<dyn Origin>,
        });
        self.accountable.record(CallRecord {
            kind: self.kind,
            started: self.started,
            caller: self.caller.clone(),
            name: self.name.to_owned(),
            origin,
            arguments: self.arguments.to_string(),
            hooks: std::mem::take(&mut self.notes),
            outcome: toolhost_audit::cancelled(),
            usage: Default::default(),
            refused: Vec::new(),
            effects: Default::default(),
            cached: None,
            result: None,
        });
    }
}

/// Runs the after-hooks on a call that ran; a `deny` withholds its result.
async fn after(
    accountable: &Accountable,
    tool: &str,
    plugin: Option<&str>,
    arguments: &str,
    caller: &Value,
    report: &mut CallReport,
    notes: &mut Vec<HookNote>,
) {
    for hook in accountable.after.iter().filter(|hook| hook.applies(tool, plugin)) {
        let outcome = match &report.outcome {
            Ok(output) => json!({"ok": true, "output": output.as_str()}),
            Err(error) => json!({"ok": false, "error": error.kind(), "message": error.to_string()}),
        };
        let input = json!({
            "when": "after",
            "tool": tool,
            "plugin": plugin,
            "arguments": as_json(arguments),
            "caller": caller,
            "outcome": outcome,
            "usage": report.usage,
        });
        match hook.decide(&input).await {
            Ok(Decision::Deny(reason)) => {
                report.outcome =
                    Err(CallError::Denied(format!("{reason} (hook `{}`; the result was withheld)", hook.name)));
                notes.push(note(hook, "deny", Some(reason), None));
                return;
            }
            Ok(_) => notes.push(note(hook, "allow", None, None)),
            Err(error) => {
                notes.push(note(hook, "error", Some(error.clone()), None));
                if hook.on_error == OnError::Deny {
                    report.outcome = Err(CallError::Denied(format!(
                        "the hook `{}` failed: {error} (the result was withheld)",
                        hook.name
                    )));
                    return;
                }
            }
        }
    }
}

/// Begins the line of a resource read or a prompt (`kind`): written when
/// [`finish_offer`] is given its outcome, or as `cancelled` when dropped first.
pub(crate) fn begin_offer<'a>(
    accountable: &'a Accountable,
    kind: &'static str,
    caller: &'a Caller,
    name: &'a str,
    plugin: Option<&'a Arc<Plugin>>,
    arguments: &Value,
) -> Guard<'a> {
    Guard {
        accountable,
        kind,
        started: std::time::SystemTime::now(),
        caller,
        name,
        origin: plugin.map(OriginOf::Plugin),
        arguments: Cow::Owned(arguments.to_string()),
        notes: Vec::new(),
        done: false,
    }
}

/// Runs the before-hooks whose `kinds` name this resource read or prompt
/// (`kind`) on `arguments`: `Ok(Some(new))` when one rewrote them (prompts
/// only: a resource's URI says which plugin serves it, so a rewrite of a
/// read counts as a failing hook), `Err` when one denied it.
pub(crate) async fn offer_before(
    guard: &mut Guard<'_>,
    kind: toolhost_audit::hooks::Kind,
    plugin: Option<&str>,
    arguments: &Value,
    hooks: &CallHooks,
) -> Result<Option<Value>, CallError> {
    use toolhost_audit::hooks::Kind;
    let accountable = guard.accountable;
    // Collected, not an iterator held across the awaits (a future that is `Send`).
    let applying: Vec<&Hook> = accountable.before.iter().filter(|hook| hook.applies_to_offer(kind, plugin)).collect();
    if applying.is_empty() {
        return Ok(None);
    }
    let caller = guard.caller.to_json();
    let mut current = arguments.clone();
    let mut rewritten = false;
    for hook in applying {
        let input = json!({
            "when": "before",
            "kind": guard.kind,
            guard.kind: guard.name,
            "plugin": plugin,
            "arguments": current,
            "caller": caller,
        });
        let decision = match hook.decide(&input).await {
            Ok(Decision::Rewrite(_)) if kind == Kind::Resource => {
                Err("answered `rewrite`, which means nothing for a resource read (its URI says which plugin serves \
                     it): allow or deny it"
                    .to_owned())
            }
            other => other,
        };
        match decision {
            Ok(Decision::Allow) => guard.notes.push(note(hook, "allow", None, None)),
            Ok(Decision::Deny(reason)) => {
                guard.notes.push(note(hook, "deny", Some(reason.clone()), None));
                return Err(CallError::Denied(format!("{reason} (hook `{}`)", hook.name)));
            }
            Ok(Decision::Ask(reason)) => {
                let approval = ask(hooks, hook, guard.name, &reason).await;
                let approved = match approval {
                    Approval::Given(approved) => Some(approved),
                    Approval::Nobody | Approval::Later => None,
                };
                guard.notes.push(note(hook, "ask", Some(reason.clone()), approved));
                let why = match approval {
                    Approval::Given(true) => continue,
                    Approval::Given(false) => "the person asked said no",
                    Approval::Nobody => "no one could be asked on this path",
                    // A resource read or a prompt has no input round of its own.
                    Approval::Later => "a resource read or prompt cannot ask in a 2026-07-28 request round",
                };
                return Err(CallError::Denied(format!("{reason} (hook `{}` asked; {why})", hook.name)));
            }
            Ok(Decision::Rewrite(new)) => {
                guard.notes.push(note(hook, "rewrite", None, None));
                guard.arguments = Cow::Owned(new.to_string());
                current = new;
                rewritten = true;
            }
            Err(error) => {
                guard.notes.push(note(hook, "error", Some(error.clone()), None));
                if hook.on_error == OnError::Deny {
                    return Err(CallError::Denied(format!("the hook `{}` failed: {error}", hook.name)));
                }
                tracing::warn!(hook = %hook.name, "the hook failed, and the read goes on (`on_error = \"allow\"`): {error}");
            }
        }
    }
    Ok(rewritten.then_some(current))
}

/// Writes the line of a resource read or prompt begun by [`begin_offer`]:
/// `outcome` says what became of it (an error's kind and message), asked
/// only when a line is written.
pub(crate) fn finish_offer(
    mut guard: Guard<'_>,
    outcome: impl FnOnce() -> Result<(), (&'static str, String)>,
    effects: toolhost_runtime::outcome::Effects,
) {
    guard.done = true;
    let accountable = guard.accountable;
    if !accountable.logs() {
        return;
    }
    let outcome = outcome();
    let origin = match guard.origin {
        Some(OriginOf::Plugin(plugin)) => Some(plugin.clone() as Arc<dyn Origin>),
        Some(OriginOf::Entry(entry)) => Some(origin_of(entry)),
        None => None,
    };
    accountable.record(CallRecord {
        kind: guard.kind,
        started: guard.started,
        caller: guard.caller.clone(),
        name: guard.name.to_owned(),
        origin,
        arguments: std::mem::take(&mut guard.arguments).into_owned(),
        hooks: std::mem::take(&mut guard.notes),
        outcome,
        usage: Default::default(),
        refused: Vec::new(),
        effects,
        cached: None,
        result: None,
    });
}

fn note(hook: &Hook, decision: &'static str, reason: Option<String>, approved: Option<bool>) -> HookNote {
    let when = match hook.when {
        toolhost_audit::hooks::When::Before => "before",
        toolhost_audit::hooks::When::After => "after",
    };
    HookNote { hook: hook.name.clone(), when, decision, reason, approved }
}

/// The arguments as JSON for a hook: the object, or the text when it is not JSON.
fn as_json(arguments: &str) -> Value {
    if arguments.trim().is_empty() {
        return json!({});
    }
    serde_json::from_str(arguments).unwrap_or_else(|_| Value::String(arguments.to_owned()))
}

/// An MCP server as an audit line describes it.
struct ServerOrigin(Arc<toolhost_mcp_client::McpServer>);

/// A plugin is its own origin: a call's record holds the plugin itself (no
/// allocation per call), and its members are laid out at its first line.
impl Origin for Plugin {
    fn component(&self) -> Arc<Object> {
        Arc::clone(self.described.get_or_init(|| {
            let component = Component {
                plugin: Some(self.name.to_string()),
                source: "plugin",
                sha256: Some(self.sha256.clone()),
                grants: Some(grants_json(&self.grants)),
                signer: self.signer.as_ref().and_then(|signer| serde_json::to_value(signer).ok()),
            };
            Arc::new(component.lay_out())
        }))
    }

    fn shown(&self, text: &str, value: Option<Value>) -> Value {
        shown_arguments(text, value, self.code.redactor())
    }
}

impl Origin for ServerOrigin {
    fn component(&self) -> Arc<Object> {
        let component = Component {
            plugin: Some(self.0.name().to_owned()),
            source: "mcp",
            sha256: None,
            grants: None,
            signer: None,
        };
        Arc::new(component.lay_out())
    }

    fn shown(&self, text: &str, value: Option<Value>) -> Value {
        shown_arguments(text, value, self.0.redactor())
    }
}

fn origin_of(entry: &crate::Entry) -> Arc<dyn Origin> {
    match entry.source() {
        Source::Plugin { plugin, .. } => plugin.clone(),
        Source::Mcp { server, .. } => Arc::new(ServerOrigin(server.clone())),
    }
}

/// The arguments as a line shows them: scrubbed of the plugin's (or
/// server's) secrets by the scrubber its outputs go through.
fn shown_arguments(text: &str, value: Option<Value>, redactor: &Redactor) -> Value {
    match value {
        Some(value) => match redactor.scrub_json(text.to_owned(), value) {
            Ok(scrubbed) => serde_json::from_str(&scrubbed).unwrap_or(Value::String(scrubbed)),
            Err(why) => json!({"withheld": why}),
        },
        None => Value::String(redactor.scrub(text.to_owned())),
    }
}

/// The grants in force, as the config names them (never a value).
fn grants_json(grants: &toolhost_grants::Grants) -> Value {
    let strings = |items: Vec<String>| Value::Array(items.into_iter().map(Value::String).collect());
    json!({
        "http": strings(grants.network.hosts.iter().map(ToString::to_string).collect()),
        "sockets": grants.network.sockets,
        "env": strings(grants.env.names.iter().map(ToString::to_string).collect()),
        "secrets": strings(grants.env.secrets.iter().map(ToString::to_string).collect()),
        "dirs": strings(grants.files.dirs.iter().map(ToString::to_string).collect()),
        "credentials": strings(grants.credentials.iter().map(ToString::to_string).collect()),
        "elicitation": grants.requests.elicitation,
        "sampling": grants.requests.sampling,
        "roots": grants.requests.roots,
    })
}

/// What the person asked about a call said.
enum Approval {
    /// Yes or no.
    Given(bool),
    /// No one can be asked on this path (or the asking failed).
    Nobody,
    /// The question goes out with the answer (a 2026-07-28 request round);
    /// the reply comes with the call made again.
    Later,
}

/// Asks a person, through the call's asker, whether `tool` may run. The
/// question's key names the hook, so that two hooks that ask are asked
/// (and answered, in a request round) apart.
async fn ask(hooks: &CallHooks, hook: &Hook, tool: &str, reason: &str) -> Approval {
    let Some(asker) = hooks.asker.as_ref() else { return Approval::Nobody };
    let message = format!("An operator's hook asks whether the tool `{tool}` may run: {reason}");
    let schema = json!({
        "type": "object",
        "properties": {"approve": {"type": "boolean", "title": "Allow this call?"}},
        "required": ["approve"],
    });
    let key = format!("toolhost.hook:{}", hook.name);
    let questions = [(key, Question::Elicit(Elicitation::Form { message, schema }))];
    match asker.ask(&questions).await {
        Asked::Answers(answers) => match answers.into_iter().next() {
            Some(Ok(Answer::Elicited(Elicited::Accepted(content)))) => {
                Approval::Given(content.get("approve").and_then(Value::as_bool) == Some(true))
            }
            Some(Ok(_)) => Approval::Given(false),
            Some(Err(_)) | None => Approval::Nobody,
        },
        Asked::Suspend => Approval::Later,
    }
}

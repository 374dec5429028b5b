//! A call under `[audit]` and `[[hooks]]`: the before-hooks decide (allow,
//! deny, ask through the call's own asker, rewrite the arguments, which the
//! call then checks against the schema like any others), the call runs, the
//! after-hooks see its outcome (and may withhold the result), and one audit
//! line records all of it. `Host::call_as` comes here only when one of the two
//! is configured; otherwise nothing of this runs.

use crate::host::{Host, OfferError};
use crate::{Catalog, Source};
use serde_json::{Value, json};
use std::borrow::Cow;
use toolhost_audit::hooks::{Decision, Hook, OnError};
use toolhost_audit::{Accountable, Caller, Component, HookNote};
use toolhost_grants::env::Redactor;
use toolhost_runtime::ask::{Answer, Asked, Elicitation, Elicited, Question};
use toolhost_runtime::limits::LimitOverrides;
use toolhost_runtime::outcome::{CallError, CallReport};
use toolhost_runtime::sandbox::CallHooks;

/// Runs `tool` as `Host::call_as` does, under `accountable`.
#[allow(clippy::too_many_arguments)]
pub(crate) async fn call(
    host: &Host,
    accountable: &Accountable,
    catalog: &Catalog,
    tool: &str,
    arguments: &str,
    overrides: &LimitOverrides,
    hooks: CallHooks,
    caller: &Caller,
) -> CallReport {
    let time = toolhost_audit::log::now();
    let (component, redactor) = component_of(catalog, tool);
    let plugin = component.plugin.as_deref();
    let caller_json = caller.to_json();
    let mut notes = Vec::new();
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
                let approved = ask(&hooks, tool, &reason).await;
                notes.push(note(hook, "ask", Some(reason.clone()), approved));
                if approved != Some(true) {
                    let why = match approved {
                        Some(_) => "the person asked said no",
                        None => "no one could be asked on this path",
                    };
                    refused = Some(CallError::Denied(format!("{reason} (hook `{}` asked; {why})", hook.name)));
                    break;
                }
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
    let mut report = match refused {
        Some(error) => {
            let plugin = catalog.find(tool).map(|entry| entry.origin().to_owned());
            CallReport::rejected(tool, plugin, error)
        }
        None => host.call_spanned(catalog, tool, &arguments, overrides, hooks).await,
    };
    if ran && report.plugin.is_some() {
        after(accountable, tool, plugin, &arguments, &caller_json, &mut report, &mut notes).await;
    }
    if accountable.logs() {
        let value = serde_json::from_str::<Value>(if arguments.trim().is_empty() { "{}" } else { &arguments }).ok();
        let digest = toolhost_audit::arguments_digest(value.as_ref(), &arguments);
        let shown = accountable.include_arguments().then(|| shown_arguments(&arguments, value, redactor));
        let record =
            toolhost_audit::call_record("tool", time, caller, tool, &component, digest, shown, &notes, &report);
        accountable.record(record);
    }
    report
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

/// Records a resource read or a prompt (`kind`), which hooks do not see.
#[allow(clippy::too_many_arguments)]
pub(crate) fn record_offer<T>(
    accountable: &Accountable,
    kind: &'static str,
    time: String,
    caller: &Caller,
    name: &str,
    plugin: Option<&crate::plugin::Plugin>,
    arguments: Value,
    result: &Result<T, OfferError>,
) {
    if !accountable.logs() {
        return;
    }
    let component = match plugin {
        Some(plugin) => plugin_component(plugin),
        None => Component::default(),
    };
    let digest = toolhost_audit::arguments_digest(Some(&arguments), "");
    let outcome = match result {
        Ok(_) => Ok(toolhost_runtime::outcome::ToolOutput::Text(String::new())),
        Err(OfferError::Failed(error)) => Err(error.clone()),
        Err(OfferError::NotFound(what)) => Err(CallError::Host(format!("no loaded plugin offers {what}"))),
    };
    let mut report = CallReport::rejected(name, component.plugin.clone(), CallError::InputRequired);
    report.outcome = outcome;
    let shown = accountable.include_arguments().then_some(arguments);
    accountable.record(toolhost_audit::call_record(kind, time, caller, name, &component, digest, shown, &[], &report));
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

/// The arguments as a line shows them: scrubbed of the plugin's (or
/// server's) secrets by the scrubber its outputs go through.
fn shown_arguments(text: &str, value: Option<Value>, redactor: Option<&Redactor>) -> Value {
    let Some(redactor) = redactor else {
        return json!({"withheld": "no scrubber for this tool (it was not found)"});
    };
    match value {
        Some(value) => match redactor.scrub_json(text.to_owned(), value) {
            Ok(scrubbed) => serde_json::from_str(&scrubbed).unwrap_or(Value::String(scrubbed)),
            Err(why) => json!({"withheld": why}),
        },
        None => Value::String(redactor.scrub(text.to_owned())),
    }
}

/// The plugin or server behind `tool`, and its scrubber.
fn component_of<'a>(catalog: &'a Catalog, tool: &str) -> (Component, Option<&'a Redactor>) {
    match catalog.find(tool).map(|entry| entry.source()) {
        Some(Source::Plugin { plugin, .. }) => (plugin_component(plugin), Some(plugin.code.redactor())),
        Some(Source::Mcp { server, .. }) => (
            Component { plugin: Some(server.name().to_owned()), source: "mcp", sha256: None, grants: None },
            Some(server.redactor()),
        ),
        None => (Component::default(), None),
    }
}

fn plugin_component(plugin: &crate::plugin::Plugin) -> Component {
    Component {
        plugin: Some(plugin.name.to_string()),
        source: "plugin",
        sha256: Some(plugin.sha256.clone()),
        grants: Some(grants_json(&plugin.grants)),
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

/// Asks a person, through the call's asker, whether `tool` may run: `None`
/// when this path has no one to ask.
async fn ask(hooks: &CallHooks, tool: &str, reason: &str) -> Option<bool> {
    let asker = hooks.asker.as_ref()?;
    let message = format!("An operator's hook asks whether the tool `{tool}` may run: {reason}");
    let schema = json!({
        "type": "object",
        "properties": {"approve": {"type": "boolean", "title": "Allow this call?"}},
        "required": ["approve"],
    });
    let questions = [("toolhost.hook".to_owned(), Question::Elicit(Elicitation::Form { message, schema }))];
    match asker.ask(&questions).await {
        Asked::Answers(answers) => match answers.into_iter().next() {
            Some(Ok(Answer::Elicited(Elicited::Accepted(content)))) => {
                Some(content.get("approve").and_then(Value::as_bool) == Some(true))
            }
            Some(Ok(_)) => Some(false),
            Some(Err(_)) | None => None,
        },
        Asked::Suspend => None,
    }
}

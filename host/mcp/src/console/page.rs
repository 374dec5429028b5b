//! The page itself: one HTML document from a [`View`] of the server.

use super::html::{cut, error_bar, micros, sparkline, text};
use super::{Console, audit_tail};
use crate::metrics::Metrics;
use crate::profiles::{Profile, Profiles};
use serde_json::Value;
use std::collections::BTreeMap;
use std::fmt::Write as _;
use std::time::SystemTime;
use toolhost_catalog::{Host, Source};

/// What the page shows, gathered by the HTTP front for one request.
pub struct View<'a> {
    pub console: &'a Console,
    pub host: &'a Host,
    pub metrics: &'a Metrics,
    /// The viewer's profile (their token's; `[serve] tools` otherwise).
    pub profile: &'a Profile,
    /// The viewer's OAuth subject, if a token names one: a viewer bound to a
    /// profile sees the latest calls of that subject only (another user's
    /// callers and arguments are theirs).
    pub subject: Option<&'a str>,
    pub profiles: &'a Profiles,
    /// Why the server is not ready, if it is not.
    pub not_ready: Option<String>,
    pub sessions: usize,
    pub max_sessions: usize,
    /// Tasks by status, when tools may run as tasks.
    pub tasks: Option<BTreeMap<&'static str, usize>>,
    /// The shared store: its URL (without password) and whether it answered.
    pub store: Option<(String, Result<(), String>)>,
}

/// The page.
pub fn render(view: &View<'_>) -> String {
    let mut out = String::with_capacity(32 * 1024);
    let catalog = view.host.catalog();
    let profile_name = view.profile.name();
    let _ = write!(
        out,
        "<!DOCTYPE html>\n<html lang=\"en\"><head><meta charset=\"utf-8\">\
         <meta name=\"viewport\" content=\"width=device-width, initial-scale=1\">\
         <title>toolhost: operator's page</title>\
         <link rel=\"stylesheet\" href=\"/console/console.css\">\
         <noscript><meta http-equiv=\"refresh\" content=\"{}\"></noscript>\
         <script src=\"/console/console.js\" defer></script></head>\
         <body data-refresh=\"{}\"><header><h1>toolhost {}: what this server holds and does</h1>",
        view.console.refresh.as_secs().max(30),
        view.console.refresh.as_secs().max(1),
        text(env!("CARGO_PKG_VERSION")),
    );
    let _ = write!(
        out,
        "<p id=\"stamp\">{} · {} · catalog generation {} · as of {}{}</p>",
        match &view.not_ready {
            None => "<span class=\"ok\">ready</span>".to_owned(),
            Some(reason) => format!("<span class=\"err\">not ready: {}</span>", text(reason)),
        },
        plural(
            catalog.tools().iter().filter(|entry| view.profile.allows(entry.name(), entry.origin())).count(),
            "tool"
        ),
        catalog.generation(),
        utc(SystemTime::now()),
        profile_name.map(|name| format!(" · profile <b>{}</b>", text(name))).unwrap_or_default(),
    );
    out.push_str(
        "<nav><a href=\"#live\">Calls</a><a href=\"#state\">State</a><a href=\"#plugins\">Plugins</a>\
         <a href=\"#tools\">Tools</a></nav></header><main>",
    );
    // What is happening first (what a person opening the page at 2 a.m.
    // came for), then what is loaded.
    live(&mut out, view);
    state(&mut out, view);
    plugins(&mut out, view);
    tools(&mut out, view);
    out.push_str("</main></body></html>\n");
    out
}

fn plural(count: usize, what: &str) -> String {
    format!("{count} {what}{}", if count == 1 { "" } else { "s" })
}

fn plugins(out: &mut String, view: &View<'_>) {
    let catalog = view.host.catalog();
    out.push_str("<section id=\"plugins\"><h2>Plugins</h2>");
    let shown: Vec<_> = catalog
        .plugins()
        .iter()
        .filter(|plugin| {
            view.profile.allows_plugin(&plugin.name)
                || plugin.tools.iter().any(|tool| view.profile.allows(&tool.name, &plugin.name))
        })
        .collect();
    if shown.is_empty() {
        out.push_str("<p class=\"muted\">No plugin is loaded (or offered to this profile).</p>");
    } else {
        out.push_str(
            "<table><tr><th>Plugin</th><th>File</th><th>SHA-256</th><th>Contract</th><th>Signer</th>\
             <th>Notices</th></tr>",
        );
        for plugin in shown {
            let signer = match &plugin.signer {
                Some(signer) => format!(
                    "{}<br><code>{}</code><br><span class=\"muted\">from {}</span>",
                    text(&signer.key),
                    text(&signer.fingerprint),
                    text(&signer.source)
                ),
                None => "<span class=\"muted\">not signed (no toolhost.lock entry for these bytes)</span>".to_owned(),
            };
            let notices = if plugin.notices.is_empty() {
                "<span class=\"muted\">none</span>".to_owned()
            } else {
                plugin.notices.iter().map(|notice| format!("<div class=\"problem\">{}</div>", text(notice))).collect()
            };
            let _ = write!(
                out,
                "<tr><td><b>{}</b></td><td><code>{}</code><br><span class=\"muted\">{} bytes</span></td>\
                 <td><code>{}</code></td><td>{}</td><td>{signer}</td><td>{notices}</td></tr>",
                text(&plugin.name),
                text(&plugin.path.display().to_string()),
                plugin.size,
                text(&plugin.sha256),
                text(&describe_contract(plugin.contract)),
            );
        }
        out.push_str("</table>");
    }
    // Load problems name files, not tools: only a viewer offered everything sees them.
    if view.profile.name().is_none() {
        let problems = catalog.problems();
        if problems.is_empty() {
            out.push_str("<p class=\"muted\">No load problems.</p>");
        } else {
            out.push_str("<h3>Load problems</h3><ul>");
            for problem in problems {
                let _ = write!(out, "<li class=\"problem\">{}</li>", text(&problem.to_string()));
            }
            out.push_str("</ul>");
        }
    }
    out.push_str("</section>");
}

fn describe_contract(contract: &str) -> String {
    if contract.starts_with("typed") || contract.contains(':') {
        contract.to_owned()
    } else {
        format!("toolhost {contract}")
    }
}

fn tools(out: &mut String, view: &View<'_>) {
    let catalog = view.host.catalog();
    let config = view.host.config();
    out.push_str("<section id=\"tools\"><h2>Tools</h2>");
    let entries: Vec<_> =
        catalog.tools().iter().filter(|entry| view.profile.allows(entry.name(), entry.origin())).collect();
    if entries.is_empty() {
        out.push_str("<p class=\"muted\">No tool is offered.</p></section>");
        return;
    }
    out.push_str(
        "<table><tr><th>Tool</th><th>Description</th><th>Limits</th><th>Grants (names only)</th>\
         <th>Approval, hooks, quota</th><th>Profiles</th></tr>",
    );
    for entry in entries {
        let (name, origin) = (entry.name(), entry.origin());
        let (limits, grants, policy) = match entry.source() {
            Source::Plugin { .. } => {
                let plugin = entry.plugin();
                let limits = plugin.map_or_else(String::new, |plugin| {
                    let limits = &plugin.limits;
                    format!(
                        "fuel {}<br>memory {}<br>time {}<br>output {}",
                        limits.fuel,
                        text(&limits.memory.to_string()),
                        text(&toolhost_runtime::limits::HumanDuration(limits.timeout).to_string()),
                        text(&limits.output.to_string())
                    )
                });
                let grants = plugin.map_or_else(String::new, |plugin| {
                    let lines = plugin.grants.describe();
                    if lines.is_empty() {
                        "<span class=\"muted\">nothing: no network, files or environment</span>".to_owned()
                    } else {
                        lines
                            .iter()
                            .map(|(kind, what)| format!("<div><b>{}</b> {}</div>", text(kind), text(what)))
                            .collect()
                    }
                });
                (limits, grants, config.approvals.policy_for(name, origin))
            }
            _ => (
                "<span class=\"muted\">an external MCP server's</span>".to_owned(),
                "<span class=\"problem\">not sandboxed (an external MCP server)</span>".to_owned(),
                config.approvals.policy_for_server(name, origin),
            ),
        };
        let mut rules = format!("approval: <b>{}</b>", text(&format!("{policy:?}").to_lowercase()));
        let hooks: Vec<String> = config
            .hooks
            .iter()
            .enumerate()
            .filter(|(_, hook)| {
                (hook.kinds.is_empty() || hook.kinds.contains(&toolhost_audit::hooks::Kind::Tool))
                    && (hook.tools.is_empty() || hook.tools.iter().any(|tool| tool == name))
                    && (hook.plugins.is_empty() || hook.plugins.iter().any(|plugin| plugin == origin))
            })
            .map(|(index, hook)| {
                let when = format!("{:?}", hook.when).to_lowercase();
                format!("{} ({when})", hook.name.clone().unwrap_or_else(|| format!("hook {}", index + 1)))
            })
            .collect();
        if !hooks.is_empty() {
            let _ = write!(rules, "<br>hooks: {}", text(&hooks.join(", ")));
        }
        for (scope, quota) in [("tool", config.quotas.tools.get(name)), ("plugin", config.quotas.plugins.get(origin))] {
            if let Some(quota) = quota {
                let mut said = Vec::new();
                if let Some(rate) = quota.rate {
                    said.push(rate.to_string());
                }
                if let Some(cap) = quota.concurrency {
                    said.push(format!("{} at once", cap.0));
                }
                let _ = write!(rules, "<br>quota ({scope}): {}", text(&said.join(", ")));
            }
        }
        let offered_by = if view.profile.name().is_some() {
            "<span class=\"muted\">this profile</span>".to_owned()
        } else {
            let mut names: Vec<String> = vec!["/mcp".to_owned()];
            names.extend(
                view.profiles
                    .all()
                    .filter(|(_, profile)| profile.allows(name, origin))
                    .map(|(profile, _)| format!("/mcp/{profile}")),
            );
            text(&names.join(", "))
        };
        let schema = serde_json::to_string_pretty(entry.schema()).unwrap_or_default();
        let _ = write!(
            out,
            "<tr><td><b>{}</b><br><span class=\"muted\">{}</span></td><td class=\"desc\">{}\
             <details><summary>input schema</summary><pre>{}</pre></details></td>\
             <td>{limits}</td><td>{grants}</td><td>{rules}</td><td>{offered_by}</td></tr>",
            text(name),
            text(&entry.source_label()),
            text(&cut(entry.description(), 600)),
            text(&cut(&schema, 4000)),
        );
    }
    out.push_str("</table></section>");
}

fn live(out: &mut String, view: &View<'_>) {
    out.push_str("<section id=\"live\"><h2>Calls</h2>");
    let mut totals: Vec<_> = view
        .metrics
        .tool_totals()
        .into_iter()
        .filter(|totals| view.profile.allows(&totals.tool, &totals.origin))
        .collect();
    totals.sort_by(|a, b| (&a.tool, &a.origin).cmp(&(&b.tool, &b.origin)));
    let _ = write!(
        out,
        "<p>{} running now.</p>",
        plural(usize::try_from(view.metrics.active_calls()).unwrap_or(0), "call")
    );
    if totals.is_empty() {
        out.push_str("<p class=\"muted\">No call yet.</p>");
    } else {
        out.push_str(
            "<table><tr><th>Tool</th><th>Calls</th><th>Per minute</th><th>Errors by kind</th><th>p50</th>\
             <th>p99</th><th>Rate (last 5 min)</th><th>Outcomes</th></tr>",
        );
        for totals in &totals {
            let calls = totals.calls();
            let (series, rate) = view.console.rates(&totals.tool, &totals.origin, calls);
            let errors: Vec<String> = totals
                .outcomes
                .iter()
                .filter(|(kind, _)| !matches!(*kind, "ok" | "cancelled"))
                .map(|(kind, count)| format!("{kind}: {count}"))
                .collect();
            let cancelled = totals.outcomes.iter().find(|(kind, _)| *kind == "cancelled").map_or(0, |(_, n)| *n);
            let ok = totals.outcomes.iter().find(|(kind, _)| *kind == "ok").map_or(0, |(_, n)| *n);
            let _ = write!(
                out,
                "<tr><td><b>{}</b><br><span class=\"muted\">{}</span></td><td>{calls}</td><td>{}</td><td>{}</td>\
                 <td>{}</td><td>{}</td><td>{}</td><td>{}</td></tr>",
                text(&totals.tool),
                text(&totals.origin),
                rate.map_or_else(|| "…".to_owned(), |rate| format!("{rate:.1}")),
                if errors.is_empty() {
                    "<span class=\"muted\">none</span>".to_owned()
                } else {
                    text(&errors.join(", "))
                },
                totals.quantile_us(0.5).map_or_else(String::new, |us| format!("≤ {}", micros(us))),
                totals.quantile_us(0.99).map_or_else(String::new, |us| format!("≤ {}", micros(us))),
                sparkline(&series, 120, 24, &format!("calls per minute of {}", totals.tool)),
                error_bar(ok, totals.errors(), cancelled, 100),
            );
        }
        out.push_str("</table>");
    }
    latest(out, view);
    out.push_str("</section>");
}

fn latest(out: &mut String, view: &View<'_>) {
    let audit = &view.host.config().audit;
    out.push_str("<h3>Latest calls</h3>");
    let Some(file) = &audit.file else {
        out.push_str(
            "<p class=\"muted\">Who called what, and why a call was refused, comes from the audit log: set \
             <code>[audit] file</code> to see the latest calls here.</p>",
        );
        return;
    };
    let lines = match audit_tail(file, view.console.recent * 4) {
        Ok(lines) => lines,
        Err(reason) => {
            let _ = write!(out, "<p class=\"problem\">The audit log could not be read: {}</p>", text(&reason));
            return;
        }
    };
    let own = |line: &Value| match (view.profile.name(), view.subject) {
        (Some(_), Some(subject)) => line["caller"]["subject"].as_str() == Some(subject),
        _ => true,
    };
    let visible: Vec<&Value> =
        lines.iter().filter(|line| offered(view.profile, line) && own(line)).take(view.console.recent).collect();
    if visible.is_empty() {
        out.push_str("<p class=\"muted\">No call in the audit log yet.</p>");
        return;
    }
    let arguments = audit.include_arguments;
    let _ = write!(
        out,
        "<table><tr><th>When</th><th>What</th><th>Caller</th><th>Outcome</th><th>Refused</th>{}</tr>",
        if arguments { "<th>Arguments (scrubbed)</th>" } else { "" }
    );
    for line in visible {
        let kind = line["kind"].as_str().unwrap_or("tool");
        let name = line[kind].as_str().unwrap_or("");
        let caller = &line["caller"];
        let who: Vec<String> = ["path", "subject", "client", "session"]
            .iter()
            .filter_map(|field| caller[*field].as_str().map(|value| format!("{field} {}", cut(value, 80))))
            .collect();
        let outcome = if line["outcome"]["ok"] == Value::Bool(true) {
            "<span class=\"ok\">ok</span>".to_owned()
        } else {
            format!(
                "<span class=\"err\">{}</span><br>{}",
                text(line["outcome"]["error"].as_str().unwrap_or("error")),
                text(&cut(line["outcome"]["message"].as_str().unwrap_or(""), 400))
            )
        };
        let mut refused: Vec<String> = line["refused"]
            .as_array()
            .map(|all| {
                all.iter()
                    .map(|refusal| {
                        format!(
                            "{} ({})",
                            cut(refusal["target"].as_str().unwrap_or("?"), 200),
                            refusal["kind"].as_str().unwrap_or("?")
                        )
                    })
                    .collect()
            })
            .unwrap_or_default();
        if let Some(hooks) = line["hooks"].as_array() {
            for hook in hooks.iter().filter(|hook| hook["decision"] == "deny") {
                refused.push(format!(
                    "denied by {}: {}",
                    hook["hook"].as_str().unwrap_or("a hook"),
                    cut(hook["reason"].as_str().unwrap_or(""), 200)
                ));
            }
        }
        let _ = write!(
            out,
            "<tr><td>{}</td><td>{} <b>{}</b></td><td>{}</td><td>{outcome}</td><td>{}</td>",
            text(line["time"].as_str().unwrap_or("")),
            text(kind),
            text(name),
            text(&who.join(", ")),
            if refused.is_empty() {
                "<span class=\"muted\">nothing</span>".to_owned()
            } else {
                text(&refused.join("; "))
            },
        );
        if arguments {
            let shown = line.get("arguments").map(|value| cut(&value.to_string(), 300)).unwrap_or_default();
            let _ = write!(out, "<td><code>{}</code></td>", text(&shown));
        }
        out.push_str("</tr>");
    }
    out.push_str("</table>");
}

/// Whether an audit line is about something the viewer's profile offers.
fn offered(profile: &Profile, line: &Value) -> bool {
    let plugin = line["plugin"].as_str().unwrap_or("");
    match line["kind"].as_str() {
        Some("tool") | None => line["tool"].as_str().is_some_and(|tool| profile.allows(tool, plugin)),
        Some(_) => !plugin.is_empty() && profile.allows_plugin(plugin),
    }
}

fn state(out: &mut String, view: &View<'_>) {
    let catalog = view.host.catalog();
    out.push_str("<section id=\"state\"><h2>State</h2><table>");
    let _ =
        write!(out, "<tr><th>MCP sessions</th><td>{} open (at most {})</td></tr>", view.sessions, view.max_sessions);
    let tasks = match &view.tasks {
        None => "<span class=\"muted\">no tool runs as a task ([serve.tasks])</span>".to_owned(),
        Some(counts) if counts.is_empty() => "none kept".to_owned(),
        Some(counts) => {
            text(&counts.iter().map(|(status, count)| format!("{status}: {count}")).collect::<Vec<_>>().join(", "))
        }
    };
    let _ = write!(out, "<tr><th>Tasks</th><td>{tasks}</td></tr>");
    let store = match &view.store {
        None => {
            "<span class=\"muted\">none: sessions, tasks and quotas are this process's ([state] url)</span>".to_owned()
        }
        Some((url, Ok(()))) => format!("{} <span class=\"ok\">answers</span>", text(url)),
        Some((url, Err(reason))) => format!("{} <span class=\"err\">unreachable: {}</span>", text(url), text(reason)),
    };
    let _ = write!(out, "<tr><th>Shared store</th><td>{store}</td></tr>");
    let audit = &view.host.config().audit;
    let writer = match (&audit.file, view.host.audit_lost()) {
        (Some(file), Some(lost)) => {
            let last = audit_tail(file, 1).ok().and_then(|lines| lines.first().and_then(|line| line["seq"].as_u64()));
            format!(
                "{}: {} written (last sequence number), {} lost{}",
                text(&file.display().to_string()),
                last.map_or_else(|| "no line".to_owned(), |seq| format!("{} lines", seq + 1)),
                lost,
                if lost > 0 { " <span class=\"err\">(the writer fell behind)</span>" } else { "" }
            )
        }
        (None, Some(lost)) => format!("standard output, {lost} lost"),
        _ => "<span class=\"muted\">off ([audit])</span>".to_owned(),
    };
    let _ = write!(
        out,
        "<tr><th>Audit log</th><td>{writer}{}</td></tr>",
        if audit.include_arguments { " · lines carry the arguments, scrubbed" } else { "" }
    );
    out.push_str("</table>");
    // Quotas: those of what the viewer is offered.
    let usage: Vec<_> = view
        .host
        .quota_usage()
        .into_iter()
        .filter(|quota| match quota.key.split_once(':') {
            Some(("tool", name)) => catalog.find(name).is_some_and(|entry| view.profile.allows(name, entry.origin())),
            Some((_, name)) => view.profile.allows_plugin(name),
            None => false,
        })
        .collect();
    out.push_str("<h3>Quotas</h3>");
    if usage.is_empty() {
        out.push_str("<p class=\"muted\">No quota applies ([quotas]).</p>");
    } else {
        out.push_str(
            "<table><tr><th>Whose</th><th>Rate</th><th>Calls left now</th><th>At once</th><th>Running</th></tr>",
        );
        for quota in usage {
            let _ = write!(
                out,
                "<tr><td>{}</td><td>{}</td><td>{}</td><td>{}</td><td>{}</td></tr>",
                text(&quota.scope),
                quota.rate.map_or_else(String::new, |rate| text(&rate.to_string())),
                if quota.shared {
                    "<span class=\"muted\">kept in the shared store</span>".to_owned()
                } else {
                    quota.rate_left.map_or_else(String::new, |left| left.to_string())
                },
                quota.cap.map_or_else(String::new, |cap| cap.to_string()),
                quota.running.map_or_else(String::new, |running| running.to_string()),
            );
        }
        out.push_str("</table>");
    }
    out.push_str("<h3>Loads and reloads</h3>");
    let reloads = view.console.reloads();
    if reloads.is_empty() {
        out.push_str("<p class=\"muted\">Nothing loaded yet.</p>");
    } else {
        out.push_str("<table><tr><th>When</th><th>Generation</th><th>Tools</th><th>Plugins</th><th>Problems</th></tr>");
        for reload in reloads.iter().rev() {
            let _ = write!(
                out,
                "<tr><td>{}</td><td>{}</td><td>{}</td><td>{}</td><td>{}</td></tr>",
                utc(reload.at),
                reload.generation,
                reload.tools,
                reload.plugins,
                reload.problems
            );
        }
        out.push_str("</table>");
    }
    out.push_str("</section>");
}

/// `at` as `2026-11-29 08:15:02 UTC`.
fn utc(at: SystemTime) -> String {
    let seconds = at.duration_since(SystemTime::UNIX_EPOCH).unwrap_or_default().as_secs();
    let (days, rest) = ((seconds / 86_400) as i64, seconds % 86_400);
    // Howard Hinnant's civil_from_days.
    let z = days + 719_468;
    let era = z.div_euclid(146_097);
    let doe = z - era * 146_097;
    let yoe = (doe - doe / 1460 + doe / 36_524 - doe / 146_096) / 365;
    let doy = doe - (365 * yoe + yoe / 4 - yoe / 100);
    let mp = (5 * doy + 2) / 153;
    let day = doy - (153 * mp + 2) / 5 + 1;
    let month = if mp < 10 { mp + 3 } else { mp - 9 };
    let year = yoe + era * 400 + i64::from(month <= 2);
    format!("{year:04}-{month:02}-{day:02} {:02}:{:02}:{:02} UTC", rest / 3600, rest % 3600 / 60, rest % 60)
}

#[cfg(test)]
mod tests {
    #[test]
    fn times_are_utc() {
        let at = std::time::UNIX_EPOCH + std::time::Duration::from_secs(1_795_000_000);
        assert_eq!(super::utc(at), "2026-11-18 11:06:40 UTC");
    }
}

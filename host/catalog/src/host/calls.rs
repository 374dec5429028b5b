//! Calls through the host: a tool found in the catalog, admitted under the
//! quotas, run in a fresh sandbox (or sent to its MCP server) under its
//! limits, wrapped by `[audit]` and `[[hooks]]` when configured
//! (`crate::accountable`, given the call to make), traced as a `tool_call`
//! span, its result given again from `[cache]` where allowed.

use super::Host;
use super::schema::{describe_mismatch, plain, structured};
use crate::plugin::Plugin;
use crate::result_cache::ResultCache;
use crate::{Caller, Catalog, Source};
use serde_json::Value;
use std::sync::Arc;
use toolhost_runtime::limits::{LimitOverrides, Limits};
use toolhost_runtime::outcome::{CallError, CallReport, ToolOutput};
use toolhost_runtime::sandbox::{CallHooks, Request, Response};

impl Host {
    /// Calls `tool` with `arguments` (a JSON object as text; blank means `{}`)
    /// in a fresh instance, under the plugin's limits with `overrides` on top.
    /// Waits for a free slot when `max_concurrent_calls` calls are running.
    ///
    /// The guest computes inside the poll of the task that awaits this
    /// future, giving the thread up at each epoch tick (every 2 ms) or host
    /// call: calls meant to use several cores at once are each awaited in a
    /// task of their own (`tokio::spawn`), not joined in one.
    pub async fn call(&self, tool: &str, arguments: &str, overrides: &LimitOverrides) -> CallReport {
        let catalog = self.catalog();
        self.call_in(&catalog, tool, arguments, overrides).await
    }

    /// [`Host::call`] against the snapshot `catalog`, so that a caller that
    /// showed a list of tools calls exactly those (an agent turn, an MCP list).
    pub async fn call_in(
        &self,
        catalog: &Catalog,
        tool: &str,
        arguments: &str,
        overrides: &LimitOverrides,
    ) -> CallReport {
        self.call_observed(catalog, tool, arguments, overrides, CallHooks::default()).await
    }

    /// [`Host::call_in`], with `hooks`: who is told of each progress report
    /// the plugin makes while it runs (contract 0.2.0; at most one every
    /// [`PROGRESS_INTERVAL`](toolhost_runtime::sandbox::PROGRESS_INTERVAL), and
    /// the last), and who answers its questions (elicitation, sampling, roots).
    pub async fn call_observed(
        &self,
        catalog: &Catalog,
        tool: &str,
        arguments: &str,
        overrides: &LimitOverrides,
        hooks: CallHooks,
    ) -> CallReport {
        self.call_as(catalog, tool, arguments, overrides, hooks, &Caller::default()).await
    }

    /// Whether calls are audited or hooked (`[audit]`, `[[hooks]]`): front
    /// ends fill in a [`Caller`] only then.
    pub fn accountable(&self) -> bool {
        self.accountable.is_some()
    }

    /// Whether calls are written to an audit log (`[audit]`): front ends
    /// then say how they hand a call's result over
    /// ([`CallHooks::result_shape`]), for its line's digest.
    pub fn audit_logs(&self) -> bool {
        self.accountable.as_ref().is_some_and(|accountable| accountable.logs())
    }

    /// [`Host::call_observed`] by `caller`, whom the audit line and the
    /// hooks name. Without `[audit]` and `[[hooks]]` the caller is not looked at.
    pub async fn call_as(
        &self,
        catalog: &Catalog,
        tool: &str,
        arguments: &str,
        overrides: &LimitOverrides,
        hooks: CallHooks,
        caller: &Caller,
    ) -> CallReport {
        use tracing::field::Empty;
        let span = tracing::info_span!(
            "tool_call",
            tool = %tool,
            plugin = Empty,
            outcome = Empty,
            fuel = Empty,
            memory_peak = Empty,
            http_requests = Empty,
            http_bytes = Empty,
            wall_ms = Empty,
        );
        let report = match &self.accountable {
            None => {
                tracing::Instrument::instrument(
                    self.call_spanned(catalog, tool, arguments, overrides, hooks, caller),
                    span.clone(),
                )
                .await
            }
            Some(accountable) => {
                let run = async |arguments: &str, hooks| {
                    self.call_spanned(catalog, tool, arguments, overrides, hooks, caller).await
                };
                let call = crate::accountable::call(accountable, catalog, tool, arguments, hooks, caller, run);
                tracing::Instrument::instrument(call, span.clone()).await
            }
        };
        if !span.is_disabled() {
            if let Some(plugin) = &report.plugin {
                span.record("plugin", plugin.as_str());
            }
            let usage = &report.usage;
            // As signed integers: what OpenTelemetry's attributes hold.
            let number = |value: u64| i64::try_from(value).unwrap_or(i64::MAX);
            span.record("outcome", report.outcome.as_ref().err().map_or("ok", CallError::kind));
            span.record("fuel", number(usage.fuel));
            span.record("memory_peak", number(usage.memory_peak));
            span.record("http_requests", number(u64::from(usage.http_requests)));
            span.record("http_bytes", number(usage.http_request_bytes + usage.http_response_bytes));
            span.record("wall_ms", usage.wall.as_secs_f64() * 1_000.0);
        }
        report
    }

    pub(crate) async fn call_spanned(
        &self,
        catalog: &Catalog,
        tool: &str,
        arguments: &str,
        overrides: &LimitOverrides,
        hooks: CallHooks,
        caller: &Caller,
    ) -> CallReport {
        let Some(entry) = catalog.find(tool) else {
            let error = CallError::UnknownTool { name: tool.to_owned(), suggestion: catalog.similar(tool) };
            return CallReport::rejected(tool, None, error);
        };
        // Held until the call ends: its places under the concurrency caps.
        let _admitted = match self.quotas.admit_shared(entry).await {
            Ok(admitted) => admitted,
            Err(error) => {
                let plugin = matches!(entry.source(), Source::Plugin { .. }).then(|| entry.origin().to_owned());
                return CallReport::rejected(tool, plugin, error);
            }
        };
        match entry.source() {
            Source::Plugin { plugin, index } => {
                self.call_plugin(plugin.clone(), *index, arguments, overrides, hooks, caller).await
            }
            Source::Mcp { server, tool } => {
                // The output limit is the plugins' one; the time limit is the
                // server's `tool_timeout` unless the caller sets one.
                let mut limits = Limits::default().with(&self.config.limits);
                limits.timeout = server.config().tool_timeout;
                // Boxed: an MCP client's call is a future of about 8 KiB,
                // which every plugin call's future would otherwise carry and
                // copy as it is built, instrumented and awaited.
                Box::pin(server.call(tool, arguments, &limits.with(overrides))).await
            }
        }
    }

    /// Calls tool number `index` of `plugin`. The plugin is held for the
    /// whole call, so a reload that removes or replaces it does not cut it short.
    async fn call_plugin(
        &self,
        plugin: Arc<Plugin>,
        index: usize,
        arguments: &str,
        overrides: &LimitOverrides,
        hooks: CallHooks,
        caller: &Caller,
    ) -> CallReport {
        let started = std::time::Instant::now();
        let tool = plugin.tools[index].name.as_str();
        let plugin_name = Some(plugin.name.to_string());
        let arguments = if arguments.trim().is_empty() { "{}" } else { arguments };
        let value: Value = match serde_json::from_str(arguments) {
            Ok(value) => value,
            Err(err) => {
                let error = CallError::InvalidArguments(format!("the arguments are not valid JSON: {err}"));
                return CallReport::rejected(tool, plugin_name, error);
            }
        };
        let validator = &plugin.tools[index].validator;
        // `is_valid` stops at the first mismatch without building errors;
        // only a rejected call pays for the message.
        if !validator.is_valid(&value)
            && let Some(err) = validator.iter_errors(&value).next()
        {
            // The message quotes the argument it refuses, which may hold a secret's value.
            let message = plugin.code.redactor().scrub(describe_mismatch(&err, &plugin.tools[index].schema));
            let error = CallError::InvalidArguments(message);
            return CallReport::rejected(tool, plugin_name, error);
        }
        let sandbox = match plugin.code.sandbox().await {
            Ok(sandbox) => sandbox,
            Err(reason) => {
                let error = CallError::Host(format!("could not load plugin `{}`: {reason}", plugin.name));
                return CallReport::rejected(tool, plugin_name, error);
            }
        };
        let limits = plugin.limits.with(overrides);
        let called = &plugin.tools[index];
        let cached = called.cache_ttl.and_then(|ttl| {
            let requestor = requestor(&plugin, caller)?;
            Some((ttl, ResultCache::key(plugin.load, &called.export, &requestor, &value)))
        });
        if let Some((_, key)) = &cached
            && let Some(hit) = self.results.get(key, &limits)
        {
            let mut report = CallReport::rejected(tool, plugin_name, CallError::Host(String::new()));
            report.outcome = Ok(hit.output);
            report.usage.wall = started.elapsed();
            report.cached = Some(hit.age);
            return report;
        }
        let request = Request::Call { name: &called.export, position: called.position, arguments, value: &value };
        let invocation = {
            let _permit = self.permits.acquire().await;
            sandbox.invoke(&limits, request, hooks).await
        };
        if !invocation.stdout.is_empty() || !invocation.stderr.is_empty() {
            tracing::debug!(
                plugin = &*plugin.name,
                tool,
                stdout = %invocation.stdout,
                stderr = %invocation.stderr,
                "plugin output"
            );
        }
        // The sandbox has held the answer to the output limit and the contract.
        let outcome = invocation.result.and_then(|response| match response {
            Response::Called(Ok(ToolOutput::Content(blocks))) => match &called.output_validator {
                Some(validator) => {
                    let schema = called.output_schema.as_ref().unwrap_or(&Value::Null);
                    structured(validator, schema, &blocks).map(|()| plain(blocks))
                }
                None => Ok(plain(blocks)),
            },
            Response::Called(called) => called,
            _ => Err(CallError::Host("the plugin answered the wrong request".to_owned())),
        });
        if let (Some((ttl, key)), Ok(output)) = (cached, &outcome) {
            self.results.put(key, output, ttl);
        }
        CallReport {
            tool: tool.to_owned(),
            plugin: plugin_name,
            outcome,
            usage: invocation.usage,
            stdout: invocation.stdout,
            stderr: invocation.stderr,
            logs: invocation.logs,
            refused: invocation.refused,
            effects: invocation.effects,
            receipt: None,
            cached: None,
        }
    }
}

/// Whose results a call of `plugin` may share: everyone's (`""`) for a
/// plugin without credentials; for one with credentials, whose results may
/// depend on who asks, the caller's OAuth subject, else its client's name,
/// and no one's (nothing cached) when neither is known.
fn requestor(plugin: &Plugin, caller: &Caller) -> Option<String> {
    if plugin.grants.credentials.is_empty() {
        return Some(String::new());
    }
    match (&caller.subject, &caller.client) {
        (Some(subject), _) => Some(format!("subject:{subject}")),
        (None, Some(client)) => Some(format!("client:{client}")),
        (None, None) => None,
    }
}

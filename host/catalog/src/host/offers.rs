//! What a [`Host`] serves besides tool calls: its plugins' resources,
//! prompts and completions, each asked of the plugin that offers it in a
//! fresh sandbox, and why one could not be had ([`OfferError`]).

use super::Host;
use crate::plugin::Plugin;
use crate::{Caller, Catalog};
use anyhow::Result;
use std::sync::Arc;
use toolhost_audit::hooks::Kind;
use toolhost_runtime::content::ContentBlock;
use toolhost_runtime::outcome::{CallError, Effects};
use toolhost_runtime::sandbox::{CallHooks, Request, Response};

/// Why a resource, prompt or completion could not be had.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum OfferError {
    /// No loaded plugin offers it (the text names what was asked for).
    NotFound(String),
    /// The plugin failed, or its answer was refused (as a call's would be).
    Failed(CallError),
}

impl std::fmt::Display for OfferError {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            OfferError::NotFound(what) => write!(f, "no loaded plugin offers {what}"),
            OfferError::Failed(err) => write!(f, "{err}"),
        }
    }
}

/// What the audit line says became of an offer: the error's kind and message.
fn audited<T>(result: &Result<T, OfferError>) -> Result<(), (&'static str, String)> {
    match result {
        Ok(_) => Ok(()),
        Err(OfferError::Failed(error)) => Err((error.kind(), error.to_string())),
        Err(error @ OfferError::NotFound(_)) => Err(("not_found", error.to_string())),
    }
}

impl Host {
    /// Reads the resource at `uri` from the plugin that lists it (or whose
    /// template matches it; the first in file-name order), in a fresh
    /// instance under the plugin's limits and grants. Audited as `caller`'s
    /// under `[audit]`.
    pub async fn read_resource(
        &self,
        catalog: &Catalog,
        uri: &str,
        hooks: CallHooks,
        caller: &Caller,
    ) -> Result<Vec<ContentBlock>, OfferError> {
        let listed = |plugin: &&Arc<Plugin>| plugin.offers.resources.iter().any(|resource| resource.uri == uri);
        let templated = |plugin: &&Arc<Plugin>| {
            plugin
                .offers
                .templates
                .iter()
                .any(|template| toolhost_runtime::offers::matches_template(&template.uri_template, uri))
        };
        let plugin = catalog.plugins().iter().find(listed).or_else(|| catalog.plugins().iter().find(templated));
        let Some(accountable) = self.accountable.as_deref() else {
            return self.read_from(plugin, uri, hooks).await.0;
        };
        let arguments = serde_json::json!({"uri": uri});
        let mut guard = crate::accountable::begin_offer(accountable, "resource", caller, uri, plugin, &arguments);
        let owner = plugin.map(|plugin| &*plugin.name);
        if let Err(error) =
            crate::accountable::offer_before(&mut guard, Kind::Resource, owner, &arguments, &hooks).await
        {
            let read = Err(OfferError::Failed(error));
            crate::accountable::finish_offer(guard, || audited(&read), Effects::default());
            return read;
        }
        let (read, effects) = self.read_from(plugin, uri, hooks).await;
        crate::accountable::finish_offer(guard, || audited(&read), effects);
        read
    }

    async fn read_from(
        &self,
        plugin: Option<&Arc<Plugin>>,
        uri: &str,
        hooks: CallHooks,
    ) -> (Result<Vec<ContentBlock>, OfferError>, Effects) {
        let Some(plugin) = plugin else {
            return (Err(OfferError::NotFound(format!("the resource `{uri}`"))), Effects::default());
        };
        let (response, effects) = self.offer_request(plugin, Request::ReadResource { uri }, hooks).await;
        let read = match response {
            Ok(Response::Read(read)) => read.map_err(OfferError::Failed),
            Ok(_) => Err(wrong_answer()),
            Err(error) => Err(error),
        };
        (read, effects)
    }

    /// Fills in the prompt `name` with `arguments`, as its plugin does.
    /// Audited as `caller`'s under `[audit]`.
    pub async fn get_prompt(
        &self,
        catalog: &Catalog,
        name: &str,
        arguments: &[(String, String)],
        hooks: CallHooks,
        caller: &Caller,
    ) -> Result<toolhost_runtime::offers::PromptResult, OfferError> {
        let owner = self.prompt_owner(catalog, name);
        let Some(accountable) = self.accountable.as_deref() else {
            return self.prompt_from(owner, name, arguments, hooks).await.0;
        };
        let given: serde_json::Map<String, serde_json::Value> =
            arguments.iter().map(|(key, value)| (key.clone(), serde_json::Value::String(value.clone()))).collect();
        let given = serde_json::Value::Object(given);
        let plugin = owner.as_ref().ok().copied();
        let mut guard = crate::accountable::begin_offer(accountable, "prompt", caller, name, plugin, &given);
        let refused = match crate::accountable::offer_before(
            &mut guard,
            Kind::Prompt,
            plugin.map(|plugin| &*plugin.name),
            &given,
            &hooks,
        )
        .await
        {
            Ok(None) => None,
            Ok(Some(rewritten)) => match prompt_arguments(rewritten) {
                Ok(rewritten) => {
                    let (prompt, effects) = self.prompt_from(owner, name, &rewritten, hooks).await;
                    crate::accountable::finish_offer(guard, || audited(&prompt), effects);
                    return prompt;
                }
                Err(error) => Some(error),
            },
            Err(error) => Some(error),
        };
        if let Some(error) = refused {
            let prompt = Err(OfferError::Failed(error));
            crate::accountable::finish_offer(guard, || audited(&prompt), Effects::default());
            return prompt;
        }
        let (prompt, effects) = self.prompt_from(owner, name, arguments, hooks).await;
        crate::accountable::finish_offer(guard, || audited(&prompt), effects);
        prompt
    }

    async fn prompt_from(
        &self,
        owner: Result<&Arc<Plugin>, OfferError>,
        name: &str,
        arguments: &[(String, String)],
        hooks: CallHooks,
    ) -> (Result<toolhost_runtime::offers::PromptResult, OfferError>, Effects) {
        let plugin = match owner {
            Ok(plugin) => plugin,
            Err(error) => return (Err(error), Effects::default()),
        };
        let (response, effects) = self.offer_request(plugin, Request::GetPrompt { name, arguments }, hooks).await;
        let prompt = match response {
            Ok(Response::Prompt(prompt)) => prompt.map_err(OfferError::Failed),
            Ok(_) => Err(wrong_answer()),
            Err(error) => Err(error),
        };
        (prompt, effects)
    }

    /// Suggests values for `argument` of a prompt or resource template, as
    /// the plugin that offers it does.
    pub async fn complete(
        &self,
        catalog: &Catalog,
        reference: toolhost_runtime::offers::Reference<'_>,
        argument: &str,
        value: &str,
        context: &[(String, String)],
    ) -> Result<toolhost_runtime::offers::Completion, OfferError> {
        use toolhost_runtime::offers::Reference;
        let plugin = match reference {
            Reference::Prompt(name) => self.prompt_owner(catalog, name)?,
            Reference::Template(template) => catalog
                .plugins()
                .iter()
                .find(|plugin| plugin.offers.templates.iter().any(|offered| offered.uri_template == template))
                .ok_or_else(|| OfferError::NotFound(format!("the resource template `{template}`")))?,
        };
        match self
            .offer_request(plugin, Request::Complete { reference, argument, value, context }, CallHooks::default())
            .await
            .0?
        {
            Response::Completion(done) => done.map_err(OfferError::Failed),
            _ => Err(wrong_answer()),
        }
    }

    fn prompt_owner<'a>(&self, catalog: &'a Catalog, name: &str) -> Result<&'a Arc<Plugin>, OfferError> {
        catalog
            .plugins()
            .iter()
            .find(|plugin| plugin.offers.prompts.iter().any(|prompt| prompt.name == name))
            .ok_or_else(|| OfferError::NotFound(format!("the prompt `{name}`")))
    }

    /// Runs `request` for `plugin` in a fresh instance, like a call; with
    /// what it did outside its sandbox, for its audit line.
    async fn offer_request(
        &self,
        plugin: &Arc<Plugin>,
        request: Request<'_>,
        hooks: CallHooks,
    ) -> (Result<Response, OfferError>, Effects) {
        let sandbox = match plugin.code.sandbox().await {
            Ok(sandbox) => sandbox,
            Err(reason) => {
                let error = CallError::Host(format!("could not load plugin `{}`: {reason}", plugin.name));
                return (Err(OfferError::Failed(error)), Effects::default());
            }
        };
        let invocation = {
            let _permit = self.permits.acquire().await;
            sandbox.invoke(&plugin.limits, request, hooks).await
        };
        (invocation.result.map_err(OfferError::Failed), invocation.effects)
    }
}

/// A hook's rewrite of a prompt's arguments, which MCP has as strings by name.
fn prompt_arguments(rewritten: serde_json::Value) -> Result<Vec<(String, String)>, CallError> {
    let serde_json::Value::Object(map) = rewritten else {
        return Err(CallError::InvalidArguments("a prompt's rewritten arguments must be a JSON object".to_owned()));
    };
    map.into_iter()
        .map(|(key, value)| match value {
            serde_json::Value::String(text) => Ok((key, text)),
            _ => Err(CallError::InvalidArguments(format!(
                "a prompt's arguments are strings, and the hook rewrote `{key}` to something else"
            ))),
        })
        .collect()
}

fn wrong_answer() -> OfferError {
    OfferError::Failed(CallError::Host("the plugin answered the wrong request".to_owned()))
}

//! What a [`Host`] serves besides tool calls: its plugins' resources,
//! prompts and completions, each asked of the plugin that offers it in a
//! fresh sandbox, and why one could not be had ([`OfferError`]).

use super::Host;
use crate::Catalog;
use crate::plugin::Plugin;
use anyhow::Result;
use std::sync::Arc;
use toolhost_runtime::content::ContentBlock;
use toolhost_runtime::outcome::CallError;
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

impl Host {
    /// Reads the resource at `uri` from the plugin that lists it (or whose
    /// template matches it; the first in file-name order), in a fresh
    /// instance under the plugin's limits and grants.
    pub async fn read_resource(
        &self,
        catalog: &Catalog,
        uri: &str,
        hooks: CallHooks,
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
        let plugin = plugin.ok_or_else(|| OfferError::NotFound(format!("the resource `{uri}`")))?;
        match self.offer_request(plugin, Request::ReadResource { uri }, hooks).await? {
            Response::Read(read) => read.map_err(OfferError::Failed),
            _ => Err(wrong_answer()),
        }
    }

    /// Fills in the prompt `name` with `arguments`, as its plugin does.
    pub async fn get_prompt(
        &self,
        catalog: &Catalog,
        name: &str,
        arguments: &[(String, String)],
        hooks: CallHooks,
    ) -> Result<toolhost_runtime::offers::PromptResult, OfferError> {
        let plugin = self.prompt_owner(catalog, name)?;
        match self.offer_request(plugin, Request::GetPrompt { name, arguments }, hooks).await? {
            Response::Prompt(prompt) => prompt.map_err(OfferError::Failed),
            _ => Err(wrong_answer()),
        }
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
            .await?
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

    /// Runs `request` for `plugin` in a fresh instance, like a call.
    async fn offer_request(
        &self,
        plugin: &Arc<Plugin>,
        request: Request<'_>,
        hooks: CallHooks,
    ) -> Result<Response, OfferError> {
        let sandbox = plugin.code.sandbox().await.map_err(|reason| {
            OfferError::Failed(CallError::Host(format!("could not load plugin `{}`: {reason}", plugin.name)))
        })?;
        let invocation = {
            let _permit = self.permits.acquire().await;
            sandbox.invoke(&plugin.limits, request, hooks).await
        };
        invocation.result.map_err(OfferError::Failed)
    }
}

fn wrong_answer() -> OfferError {
    OfferError::Failed(CallError::Host("the plugin answered the wrong request".to_owned()))
}

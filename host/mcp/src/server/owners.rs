//! Which plugin's code a resource read, a prompt or a completion runs: the
//! HTTP front asks before the request reaches the handler (to answer `403`
//! naming the scope), and the handler picks the same plugin.

use super::*;

/// The plugin whose code reading `uri` runs: the first that lists it, else
/// the first with a template matching it (as `Host::read_resource` picks).
pub(crate) fn resource_plugin<'a>(catalog: &'a Catalog, uri: &str) -> Option<&'a str> {
    let plugins = catalog.plugins();
    let listed = plugins.iter().find(|plugin| plugin.offers.resources.iter().any(|resource| resource.uri == uri));
    let templated = || {
        plugins.iter().find(|plugin| {
            plugin
                .offers
                .templates
                .iter()
                .any(|template| toolhost_runtime::offers::matches_template(&template.uri_template, uri))
        })
    };
    listed.or_else(templated).map(|plugin| &*plugin.name)
}

/// The plugin that fills in the prompt `name` (the first that offers it).
pub(crate) fn prompt_plugin<'a>(catalog: &'a Catalog, name: &str) -> Option<&'a str> {
    let plugins = catalog.plugins();
    plugins.iter().find(|plugin| plugin.offers.prompts.iter().any(|prompt| prompt.name == name)).map(|p| &*p.name)
}

/// The plugin that completes arguments of the resource template `template`.
pub(crate) fn template_plugin<'a>(catalog: &'a Catalog, template: &str) -> Option<&'a str> {
    let plugins = catalog.plugins();
    plugins
        .iter()
        .find(|plugin| plugin.offers.templates.iter().any(|offered| offered.uri_template == template))
        .map(|plugin| &*plugin.name)
}

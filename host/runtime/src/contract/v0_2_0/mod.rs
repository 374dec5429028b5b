//! Contract 0.2.0 (`wit/v0.2.0`): tools with titles, hints and output
//! schemas returning content blocks; the `call` imports (progress,
//! elicitation, sampling, roots, `ask`, in `imports`); and the `full` world,
//! which also offers resources, prompts and completions. What a plugin
//! returns is turned into the host's types in `convert`. Frozen: a later
//! contract is a sibling module, not an edit here.

mod convert;
mod imports;

use super::Contract;
use crate::sandbox::{Guest, HostState, Request, Response};
use std::sync::Arc;
use wasmtime::component::{Component, HasSelf, InstancePre, Linker};
use wasmtime::{Engine, Store};

pub(crate) mod bindings {
    wasmtime::component::bindgen!({
        path: "../../wit/v0.2.0",
        world: "toolhost:plugin/plugin@0.2.0",
        // Trappable: a question the front end suspends stops the instance.
        imports: { default: async | trappable },
        exports: { default: async },
    });

    /// Bindings of the `full` world: the same imports and types as the
    /// `plugin` world (shared, so one implementation serves both), and the
    /// resources, prompts and completions exports.
    pub mod full {
        wasmtime::component::bindgen!({
            path: "../../wit/v0.2.0",
            world: "toolhost:plugin/full@0.2.0",
            imports: { default: async | trappable },
            exports: { default: async },
            with: {
                "toolhost:plugin/types@0.2.0": super::toolhost::plugin::types,
                "toolhost:plugin/log@0.2.0": super::toolhost::plugin::log,
                "toolhost:plugin/call@0.2.0": super::toolhost::plugin::call,
            },
        });
    }
}

/// The export that makes a component a plugin of this contract.
pub const TOOLS_EXPORT: &str = "toolhost:plugin/tools@0.2.0";

/// The export that makes a plugin one of the `full` world.
pub const RESOURCES_EXPORT: &str = "toolhost:plugin/resources@0.2.0";

/// Contract 0.2.0, both worlds.
pub struct V0_2_0;

impl Contract for V0_2_0 {
    fn version(&self) -> &'static str {
        "0.2.0"
    }

    fn tools_export(&self) -> Option<&'static str> {
        Some(TOOLS_EXPORT)
    }

    fn add_imports(&self, linker: &mut Linker<HostState>) -> anyhow::Result<()> {
        bindings::Plugin::add_to_linker::<HostState, HasSelf<HostState>>(linker, |state| state)
            .map_err(anyhow::Error::from)
    }

    fn prepare(&self, pre: InstancePre<HostState>, component: &Component) -> Result<Arc<dyn Guest>, String> {
        if super::exports(pre.engine(), component, RESOURCES_EXPORT) {
            let pre = bindings::full::FullPre::new(pre)
                .map_err(|err| super::mismatch("toolhost:plugin@0.2.0's `full` world", err))?;
            return Ok(Arc::new(Full(pre)));
        }
        let pre = bindings::PluginPre::new(pre).map_err(|err| super::mismatch("toolhost:plugin@0.2.0", err))?;
        Ok(Arc::new(Tools(pre)))
    }

    fn checks_output_schemas(&self) -> bool {
        true
    }
}

/// A plugin of the `plugin` world: tools only.
struct Tools(bindings::PluginPre<HostState>);

impl Guest for Tools {
    fn engine(&self) -> &Engine {
        self.0.engine()
    }

    fn run<'a>(&'a self, store: &'a mut Store<HostState>, request: Request<'a>) -> crate::sandbox::Running<'a> {
        Box::pin(async move {
            let instance = super::instantiating(self.0.instantiate_async(&mut *store)).await?;
            let tools = instance.toolhost_plugin_tools();
            Ok(match request {
                Request::ListTools => {
                    let listed = tools.call_list_tools(&mut *store).await?;
                    Response::Tools(listed.into_iter().map(convert::listed).collect())
                }
                Request::Call { name, arguments, .. } => {
                    let result = tools.call_call_tool(&mut *store, name, arguments).await?;
                    Response::Called(result.map(convert::output).map_err(convert::error))
                }
                _ => wasmtime::bail!("a plugin of the `plugin` world offers tools only"),
            })
        })
    }
}

/// A plugin of the `full` world: tools, resources, prompts and completions.
struct Full(bindings::full::FullPre<HostState>);

impl Guest for Full {
    fn engine(&self) -> &Engine {
        self.0.engine()
    }

    fn offers_more(&self) -> bool {
        true
    }

    fn run<'a>(&'a self, store: &'a mut Store<HostState>, request: Request<'a>) -> crate::sandbox::Running<'a> {
        use bindings::full::exports::toolhost::plugin::completions::Reference;
        Box::pin(async move {
            let instance = super::instantiating(self.0.instantiate_async(&mut *store)).await?;
            Ok(match request {
                Request::ListTools => {
                    let listed = instance.toolhost_plugin_tools().call_list_tools(&mut *store).await?;
                    Response::Tools(listed.into_iter().map(convert::listed).collect())
                }
                Request::Call { name, arguments, .. } => {
                    let tools = instance.toolhost_plugin_tools();
                    let result = tools.call_call_tool(&mut *store, name, arguments).await?;
                    Response::Called(result.map(convert::output).map_err(convert::error))
                }
                Request::ListOffers => {
                    let resources = instance.toolhost_plugin_resources();
                    let listed = resources.call_list_resources(&mut *store).await?;
                    let templates = resources.call_list_resource_templates(&mut *store).await?;
                    let prompts = instance.toolhost_plugin_prompts().call_list_prompts(&mut *store).await?;
                    Response::Offers(crate::offers::Offers {
                        resources: listed.into_iter().map(convert::resource).collect(),
                        templates: templates.into_iter().map(convert::template).collect(),
                        prompts: prompts.into_iter().map(convert::prompt).collect(),
                    })
                }
                Request::ReadResource { uri } => {
                    let read = instance.toolhost_plugin_resources().call_read_resource(&mut *store, uri).await?;
                    Response::Read(read.map(convert::contents).map_err(convert::error))
                }
                Request::GetPrompt { name, arguments } => {
                    let prompts = instance.toolhost_plugin_prompts();
                    let got = prompts.call_get_prompt(&mut *store, name, arguments).await?;
                    Response::Prompt(got.map(convert::prompt_result).map_err(convert::error))
                }
                Request::Complete { reference, argument, value, context } => {
                    let reference = match reference {
                        crate::offers::Reference::Prompt(name) => Reference::Prompt(name.to_owned()),
                        crate::offers::Reference::Template(uri) => Reference::ResourceTemplate(uri.to_owned()),
                    };
                    let completions = instance.toolhost_plugin_completions();
                    let done = completions.call_complete(&mut *store, &reference, argument, value, context).await?;
                    Response::Completion(
                        done.map(|done| crate::offers::Completion {
                            values: done.values,
                            total: done.total,
                            has_more: done.has_more,
                        })
                        .map_err(convert::error),
                    )
                }
            })
        })
    }
}

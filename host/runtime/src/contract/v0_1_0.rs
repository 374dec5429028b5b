//! Contract 0.1.0 (`wit/v0.1.0`), the first one: `list-tools` and
//! `call-tool` returning text or JSON, and the `log` import. Frozen: plugins
//! built against it keep loading as they are.

use super::Contract;
use crate::cache::ListedTool;
use crate::outcome::{CallError, ToolOutput};
use crate::sandbox::logs::Level;
use crate::sandbox::{Guest, HostState, Request, Response, Running};
use std::sync::Arc;
use wasmtime::component::{Component, HasSelf, InstancePre, Linker};
use wasmtime::{Engine, Store};

mod bindings {
    wasmtime::component::bindgen!({
        path: "../../wit/v0.1.0",
        world: "toolhost:plugin/plugin@0.1.0",
        exports: { default: async },
    });
}

use bindings::toolhost::plugin::log::{self as wit_log, Field};
use bindings::toolhost::plugin::types::{CallError as WitCallError, Tool as WitTool, ToolOutput as WitToolOutput};

/// The export that makes a component a plugin of this contract.
pub const TOOLS_EXPORT: &str = "toolhost:plugin/tools@0.1.0";

/// Contract 0.1.0.
pub struct V0_1_0;

impl Contract for V0_1_0 {
    fn version(&self) -> &'static str {
        "0.1.0"
    }

    fn tools_export(&self) -> Option<&'static str> {
        Some(TOOLS_EXPORT)
    }

    fn add_imports(&self, linker: &mut Linker<HostState>) -> anyhow::Result<()> {
        bindings::Plugin::add_to_linker::<HostState, HasSelf<HostState>>(linker, |state| state)
            .map_err(anyhow::Error::from)
    }

    fn prepare(&self, pre: InstancePre<HostState>, _component: &Component) -> Result<Arc<dyn Guest>, String> {
        let pre = bindings::PluginPre::new(pre).map_err(|err| super::mismatch("toolhost:plugin@0.1.0", err))?;
        Ok(Arc::new(Prepared(pre)))
    }
}

struct Prepared(bindings::PluginPre<HostState>);

impl Guest for Prepared {
    fn engine(&self) -> &Engine {
        self.0.engine()
    }

    fn run<'a>(&'a self, store: &'a mut Store<HostState>, request: Request<'a>) -> Running<'a> {
        Box::pin(async move {
            let instance = super::instantiating(self.0.instantiate_async(&mut *store)).await?;
            let tools = instance.toolhost_plugin_tools();
            Ok(match request {
                Request::ListTools => {
                    let listed = tools.call_list_tools(&mut *store).await?;
                    Response::Tools(listed.into_iter().map(listed_tool).collect())
                }
                Request::Call { name, arguments, .. } => Response::Called(
                    tools.call_call_tool(&mut *store, name, arguments).await?.map(output).map_err(error),
                ),
                _ => wasmtime::bail!("a contract 0.1.0 plugin offers tools only"),
            })
        })
    }
}

impl bindings::toolhost::plugin::types::Host for HostState {}

impl wit_log::Host for HostState {
    fn log(&mut self, level: wit_log::Level, message: String, fields: Vec<Field>) {
        let level = match level {
            wit_log::Level::Trace => Level::Trace,
            wit_log::Level::Debug => Level::Debug,
            wit_log::Level::Info => Level::Info,
            wit_log::Level::Warn => Level::Warn,
            wit_log::Level::Error => Level::Error,
        };
        let fields = fields.into_iter().map(|Field { key, value }| (key, value)).collect();
        self.record_log(level, message, fields);
    }
}

/// A tool as the host keeps it.
fn listed_tool(tool: WitTool) -> ListedTool {
    ListedTool {
        name: tool.name,
        description: tool.description,
        input_schema: tool.input_schema,
        output_schema: None,
        title: None,
        hints: None,
        export_path: None,
    }
}

fn output(output: WitToolOutput) -> ToolOutput {
    match output {
        WitToolOutput::Text(text) => ToolOutput::Text(text),
        WitToolOutput::Json(json) => ToolOutput::Json(json),
    }
}

fn error(err: WitCallError) -> CallError {
    match err {
        WitCallError::InvalidArguments(text) => CallError::InvalidArguments(text),
        WitCallError::Failed(text) => CallError::ToolFailed(text),
    }
}

//! Components of plain typed functions, not toolhost's contract: each
//! exported function that can travel in JSON is a tool (`crate::typed`
//! derives its schema and converts its values). Nothing runs to list them:
//! the tools come from the types alone.

use super::Contract;
use crate::outcome::CallError;
use crate::sandbox::{Guest, HostState, Request, Response, Running};
use crate::typed::TypedFunc;
use std::sync::Arc;
use wasmtime::component::{Component, InstancePre, Linker, Val};
use wasmtime::{Engine, Store};

/// The `contract` name of a component of typed functions.
pub const TYPED: &str = "typed";

/// Typed functions.
pub struct Typed;

impl Contract for Typed {
    fn version(&self) -> &'static str {
        TYPED
    }

    /// A component that exports no contract's tools but at least one
    /// function that can be a tool. (One that exports `toolhost:plugin/tools`
    /// of a version this host does not know is not taken for typed functions.)
    fn detect(&self, engine: &Engine, component: &Component) -> bool {
        let ty = component.component_type();
        if ty.exports(engine).any(|(name, _)| name.starts_with(super::TOOLS_EXPORT_PREFIX)) {
            return false;
        }
        !crate::typed::functions(engine, component).0.is_empty()
    }

    fn add_imports(&self, _linker: &mut Linker<HostState>) -> anyhow::Result<()> {
        Ok(())
    }

    fn prepare(&self, pre: InstancePre<HostState>, component: &Component) -> Result<Arc<dyn Guest>, String> {
        let (funcs, _) = crate::typed::functions(pre.engine(), component);
        Ok(Arc::new(Prepared { pre, funcs }))
    }

    fn lists_by_running(&self) -> bool {
        false
    }
}

/// A component of typed functions, ready to be instantiated.
struct Prepared {
    pre: InstancePre<HostState>,
    /// Its functions, in tool order.
    funcs: Vec<TypedFunc>,
}

impl Guest for Prepared {
    fn engine(&self) -> &Engine {
        self.pre.engine()
    }

    fn run<'a>(&'a self, store: &'a mut Store<HostState>, request: Request<'a>) -> Running<'a> {
        Box::pin(async move {
            let Request::Call { position, value, .. } = request else {
                wasmtime::bail!("a typed component has no contract to call");
            };
            let func = self.funcs.get(position).ok_or_else(|| wasmtime::format_err!("no typed function {position}"))?;
            let params = match crate::typed::to_params(func, value) {
                Ok(params) => params,
                Err(why) => return Ok(Response::Called(Err(CallError::InvalidArguments(why)))),
            };
            let instance = super::instantiating(self.pre.instantiate_async(&mut *store)).await?;
            let callee = instance
                .get_func(&mut *store, func.index)
                .ok_or_else(|| wasmtime::format_err!("the function `{}` is not exported", func.name))?;
            let mut results = vec![Val::Bool(false); usize::from(func.result.is_some())];
            callee.call_async(&mut *store, &params, &mut results).await?;
            let output = crate::typed::output(func, results.pop());
            Ok(Response::Called(output.map(crate::outcome::ToolOutput::Json).map_err(CallError::ToolFailed)))
        })
    }
}

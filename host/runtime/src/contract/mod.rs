//! The kinds of plugin this host runs, one module each, behind one
//! interface, in the way wasmtime-wasi keeps `p1`, `p2` and `p3` apart:
//! [`v0_1_0`] (contract 0.1.0), [`v0_2_0`] (contract 0.2.0, both worlds) and
//! [`typed`] (components of plain typed functions).
//!
//! Each module is a [`Contract`]: it recognizes its components
//! ([`Contract::detect`]), adds its imports to the one linker every plugin is
//! linked against ([`linker`]), and prepares a linked component into a
//! [`Guest`] that lists and calls in the host's types. Nothing of a WIT type
//! leaves its module: the catalog sees contract names, [`Guest`]s and the
//! host's `ToolOutput`, `CallError` and offers.
//!
//! A new contract version is a new module implementing [`Contract`] and one
//! more entry in [`CONTRACTS`]; the released ones are not touched.

pub mod typed;
pub mod v0_1_0;
pub mod v0_2_0;

use crate::sandbox::{Guest, HostState};
use std::future::Future;
use std::sync::Arc;
use wasmtime::Engine;
use wasmtime::component::{Component, InstancePre, Linker};

/// Every kind of plugin this host runs, newest contract first; typed
/// functions last, since any component that is not a contract plugin may be
/// one.
pub static CONTRACTS: &[&dyn Contract] = &[&v0_2_0::V0_2_0, &v0_1_0::V0_1_0, &typed::Typed];

/// What the exports of every contract version's tools interface start with.
pub const TOOLS_EXPORT_PREFIX: &str = "toolhost:plugin/tools";

/// One kind of plugin.
pub trait Contract: Sync {
    /// Its name: the contract version (`0.1.0`) or `typed`, as `Plugin`'s
    /// `contract` and the cache's listings keep it.
    fn version(&self) -> &'static str;

    /// The export that makes a component a plugin of this kind, for the
    /// kinds that one export names.
    fn tools_export(&self) -> Option<&'static str> {
        None
    }

    /// Whether `component` is a plugin of this kind: by default, whether it
    /// exports [`Contract::tools_export`].
    fn detect(&self, engine: &Engine, component: &Component) -> bool {
        self.tools_export().is_some_and(|name| exports(engine, component, name))
    }

    /// Adds the host side of its imports to the linker every plugin shares.
    fn add_imports(&self, linker: &mut Linker<HostState>) -> anyhow::Result<()>;

    /// `pre` (the component linked against [`linker`]) ready to list and call.
    fn prepare(&self, pre: InstancePre<HostState>, component: &Component) -> Result<Arc<dyn Guest>, String>;

    /// Whether a tool's output schema is the plugin's own word, checked at
    /// load and held against every result (else, if there is one, the host
    /// derived it and it is only shown).
    fn checks_output_schemas(&self) -> bool {
        false
    }

    /// Whether listing its tools runs the plugin (else they come from its
    /// types, and nothing runs at load).
    fn lists_by_running(&self) -> bool {
        true
    }
}

/// The linker every plugin is instantiated with: WASI p2 and `wasi:http`
/// (which reach only what each call's grants allow) and every contract's
/// imports.
pub fn linker(engine: &Engine) -> anyhow::Result<Linker<HostState>> {
    let mut linker = crate::sandbox::linker::wasi(engine)?;
    for contract in CONTRACTS {
        contract.add_imports(&mut linker)?;
    }
    Ok(linker)
}

/// The contract named `version` (as a listing keeps it), if this host runs it.
pub fn named(version: &str) -> Option<&'static dyn Contract> {
    CONTRACTS.iter().copied().find(|contract| contract.version() == version)
}

/// The kind of plugin `component` is, or why it is not a plugin.
pub fn detect(engine: &Engine, component: &Component) -> Result<&'static dyn Contract, String> {
    if let Some(contract) = CONTRACTS.iter().copied().find(|contract| contract.detect(engine, component)) {
        return Ok(contract);
    }
    let ty = component.component_type();
    let exports: Vec<&str> = ty.exports(engine).map(|(name, _)| name).collect();
    if let Some(other) = exports.iter().find(|name| name.starts_with(TOOLS_EXPORT_PREFIX)) {
        let version = other.split('@').nth(1).unwrap_or("(unversioned)");
        let versions = released();
        let (newest, older) = versions.split_last().unwrap_or((&"", &[]));
        let older: Vec<String> = older.iter().rev().map(|version| format!("wit/v{version}")).collect();
        return Err(format!(
            "built against toolhost:plugin@{version}, but this toolhost supports {}: rebuild it against \
             wit/v{newest} (or {}), or upgrade toolhost",
            joined(&versions, "and"),
            older.join(" or ")
        ));
    }
    let (_, left_out) = crate::typed::functions(engine, component);
    let shown = if exports.is_empty() { "nothing".to_owned() } else { exports.join(", ") };
    let why = if left_out.is_empty() {
        "and no functions that could be tools".to_owned()
    } else {
        format!("and {}", left_out.join("; "))
    };
    Err(format!("not a toolhost plugin: it does not export `{}` (it exports {shown}), {why}", v0_2_0::TOOLS_EXPORT))
}

/// Links `component` against `linker` and prepares it as a plugin of `contract`.
pub fn prepare(
    linker: &Linker<HostState>,
    component: &Component,
    contract: &dyn Contract,
) -> Result<Arc<dyn Guest>, String> {
    let pre = linker.instantiate_pre(component).map_err(|err| describe_link_error(&err))?;
    contract.prepare(pre, component)
}

/// The released contract versions, oldest first.
fn released() -> Vec<&'static str> {
    let mut versions: Vec<&str> =
        CONTRACTS.iter().map(|contract| contract.version()).filter(|version| *version != typed::TYPED).collect();
    versions.sort();
    versions
}

/// `a`, `a and b`, `a, b and c`.
fn joined(items: &[&str], and: &str) -> String {
    match items.split_last() {
        None => String::new(),
        Some((last, [])) => (*last).to_owned(),
        Some((last, rest)) => format!("{} {and} {last}", rest.join(", ")),
    }
}

/// Whether `component` exports `name`.
fn exports(engine: &Engine, component: &Component, name: &str) -> bool {
    component.component_type().exports(engine).any(|(export, _)| export == name)
}

/// Why a linked component's exports do not match `world` (`toolhost:plugin@0.2.0`).
fn mismatch(world: &str, err: wasmtime::Error) -> String {
    format!("its exports do not match {world}: {:#}", anyhow::Error::from(err))
}

/// `instantiating`, under the `instantiate` span every contract's calls share.
async fn instantiating<T>(instantiating: impl Future<Output = wasmtime::Result<T>>) -> wasmtime::Result<T> {
    tracing::Instrument::instrument(instantiating, tracing::info_span!("instantiate")).await
}

/// What the linker's refusal means for the plugin's author. wasmtime reports a
/// missing import as "component imports instance `X`, but a matching
/// implementation was not found in the linker: instance export `f` has the
/// wrong type: function implementation is missing"; this says which import is
/// missing, and that toolhost does not provide it.
fn describe_link_error(err: &wasmtime::Error) -> String {
    let chain: Vec<String> = err.chain().map(|cause| cause.to_string()).collect();
    let quoted = |text: &str| text.split('`').nth(1).map(str::to_owned);
    let import = chain.iter().find(|cause| cause.starts_with("component imports ")).and_then(|cause| quoted(cause));
    let members: Vec<String> = chain
        .iter()
        .filter(|cause| cause.starts_with("instance export ") && cause.ends_with("has the wrong type"))
        .filter_map(|cause| quoted(cause))
        .collect();
    let root = chain.last().map(String::as_str).unwrap_or_default();
    let Some(import) = import else {
        return format!("it cannot be linked against what toolhost provides: {}", chain.join(": "));
    };
    let what =
        if members.is_empty() { format!("`{import}`") } else { format!("`{}` from `{import}`", members.join(".")) };
    if root.ends_with("implementation is missing") {
        format!(
            "it imports {what}, which toolhost does not provide (toolhost provides WASI 0.2: cli, clocks, \
             filesystem, io, random, sockets and http; WASI 0.3: cli, clocks, filesystem, random, sockets and \
             http; `wasi:config/store@0.2.0-draft`, `toolhost:plugin/log` and `toolhost:plugin/call@0.2.0`): \
             build it without that import, or against the interfaces toolhost provides"
        )
    } else {
        format!(
            "it imports {what} with a type other than the one toolhost provides ({root}): build it against \
             the same WIT version as toolhost (WASI 0.2 or 0.3, and toolhost:plugin@{})",
            joined(&released(), "or")
        )
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn every_kind_is_named_once_and_found_by_its_name() {
        for contract in CONTRACTS {
            assert_eq!(named(contract.version()).map(|found| found.version()), Some(contract.version()));
        }
        assert!(named("0.9.0").is_none());
        assert_eq!(released(), ["0.1.0", "0.2.0"]);
        assert_eq!(joined(&released(), "or"), "0.1.0 or 0.2.0");
        assert_eq!(joined(&["a", "b", "c"], "and"), "a, b and c");
    }
}

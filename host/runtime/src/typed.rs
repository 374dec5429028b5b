//! Components that export plain typed functions instead of toolhost's
//! contract: each exported function (at world level, or inside an exported
//! interface) is a tool, its parameters an object of JSON values and its
//! result a JSON value.
//!
//! How WIT types travel in JSON (the schemas say the same):
//! - `bool`, `string` as themselves; `char` as a one-character string;
//!   `f32`/`f64` as numbers (a result that is NaN or infinite is `null`).
//! - Integers as JSON integers within their type's range. `u64`/`s64` are
//!   also accepted as decimal strings, and a result beyond ±(2^53 − 1)
//!   (what a JSON number keeps exactly everywhere) is a decimal string.
//! - `list<T>` as an array (so `list<u8>` is an array of numbers 0–255);
//!   `tuple<…>` as an array of its items.
//! - `option<T>` as the value or `null`; a parameter of option type may be
//!   left out.
//! - `record` as an object with its fields' kebab-case names, all required
//!   but `option` ones; `flags` as an array of the names that are set;
//!   `enum` as the case's name; `variant` as the case's name when it has no
//!   payload, else `{"case": payload}`; `result<T, E>` as `{"ok": T}` or
//!   `{"err": E}` (a parameter), while a function's `result` return is its
//!   `ok` value as the output and its `err` value as a tool error.
//! - Resources, futures, streams, error contexts and maps cannot travel in
//!   JSON: a function using one is left out, with the reason.

use crate::docs::short_name;
use serde_json::Value;
use wasmtime::Engine;
use wasmtime::component::types::{ComponentFunc, ComponentItem};
use wasmtime::component::{Component, ComponentExportIndex, Type};
mod describe;
mod schema;
mod values;
pub use describe::{NamedTypes, describe};
use describe::{render, render_func};
pub use schema::schema;
use schema::schemas;
pub(crate) use values::kind;
pub use values::{output, to_json, to_params};

/// How deep types may nest before a function is refused.
pub const MAX_DEPTH: usize = 32;

/// One exported function that can be a tool.
#[derive(Clone)]
pub struct TypedFunc {
    /// The tool's name.
    pub name: String,
    /// The exported interface it is in (`acme:shop/inventory@1.0.0`), or
    /// none for a function exported by the world itself.
    pub interface: Option<String>,
    /// The function's own name (`get-item`).
    pub func: String,
    /// `get-item: func(sku: string) -> result<item, lookup-error>`, or with
    /// the interface: `acme:shop/inventory.get-item: func(…)`; an
    /// async-lifted function (WASI 0.3) says `async func(…)`.
    pub signature: String,
    /// Where it is exported.
    pub index: ComponentExportIndex,
    /// Its parameters.
    pub params: Vec<(String, Type)>,
    /// Its result, if any.
    pub result: Option<Type>,
    /// The JSON Schema of its arguments (an object).
    pub input_schema: Value,
    /// The JSON Schema of its output (the value, or the `ok` of a `result`).
    pub output_schema: Option<Value>,
}

/// The exported functions of `component` that can be tools, in export
/// order, and one sentence naming those that cannot, and why (none when
/// every function can).
pub fn functions(engine: &Engine, component: &Component) -> (Vec<TypedFunc>, Vec<String>) {
    let ty = component.component_type();
    let mut found: Vec<(Option<String>, String, ComponentExportIndex, ComponentFunc)> = Vec::new();
    for (name, item) in ty.exports(engine) {
        // WASI's own exports (`wasi:cli/run`, `wasi:http/incoming-handler`)
        // are entry points for other hosts, not tools.
        if name.starts_with("wasi:") {
            continue;
        }
        match item.ty {
            ComponentItem::ComponentFunc(func) => {
                if let Some(index) = component.get_export_index(None, name) {
                    found.push((None, name.to_owned(), index, func));
                }
            }
            ComponentItem::ComponentInstance(instance) => {
                let Some(instance_index) = component.get_export_index(None, name) else { continue };
                for (func_name, item) in instance.exports(engine) {
                    if toolchain_internal(name, func_name) {
                        continue;
                    }
                    if let ComponentItem::ComponentFunc(func) = item.ty
                        && let Some(index) = component.get_export_index(Some(&instance_index), func_name)
                    {
                        found.push((Some(name.to_owned()), func_name.to_owned(), index, func));
                    }
                }
            }
            _ => {}
        }
    }
    // A function name exported by two interfaces is prefixed with its
    // interface's short name (`inventory` of `acme:shop/inventory@1.0`).
    let clashes = |func: &str| found.iter().filter(|(_, name, _, _)| name == func).count() > 1;
    let mut funcs = Vec::new();
    let mut left_out = Vec::new();
    for (interface, func_name, index, func) in &found {
        let tool = match interface {
            Some(interface) if clashes(func_name) => format!("{}-{func_name}", short_name(interface)),
            _ => func_name.clone(),
        };
        let tool = tool_name(&tool);
        let shown = match interface {
            Some(interface) => format!("{interface}.{func_name}"),
            None => func_name.clone(),
        };
        let params: Vec<(String, Type)> = func.params().map(|(name, ty)| (name.to_owned(), ty)).collect();
        let result = func.results().next();
        let asynchronous = if func.async_() { "async " } else { "" };
        let signature = format!("{shown}: {asynchronous}{}", render_func(&params, result.as_ref()));
        match schemas(&params, result.as_ref()) {
            Ok((input_schema, output_schema)) => funcs.push(TypedFunc {
                name: tool,
                interface: interface.clone(),
                func: func_name.clone(),
                signature,
                index: *index,
                params,
                result,
                input_schema,
                output_schema,
            }),
            // A resource's constructor and methods are said once, as the resource.
            Err(_) if let Some(resource) = resource_of(func_name) => {
                let whole = match interface {
                    Some(interface) => format!("the resource `{resource}` of `{interface}`"),
                    None => format!("the resource `{resource}`"),
                };
                let said = format!("{whole} (its constructor and methods: a handle, which JSON cannot carry)");
                if !left_out.contains(&said) {
                    left_out.push(said);
                }
            }
            Err(why) => left_out.push(format!("`{shown}` ({why})")),
        }
    }
    let note = match left_out.len() {
        0 => Vec::new(),
        _ => vec![format!("not offered as tools: {}", left_out.join("; "))],
    };
    (funcs, note)
}

/// Whether `interface.func` is a toolchain's own entry point rather than the
/// author's: componentize-py leaves `exports.init` (the step that
/// pre-initializes the interpreter at build time) in every component.
fn toolchain_internal(interface: &str, func: &str) -> bool {
    interface == "exports" && func == "init"
}

/// `counter` for `[constructor]counter`, `[method]counter.bump` and
/// `[static]counter.make`: the resource a function belongs to.
fn resource_of(func: &str) -> Option<&str> {
    let rest = func.strip_prefix('[')?.split_once(']')?.1;
    Some(rest.split('.').next().unwrap_or(rest))
}

/// A tool name from a function name: kebab-case is kept, anything a model
/// API would refuse becomes `_`, and it is cut to 64 characters.
fn tool_name(name: &str) -> String {
    let cleaned: String =
        name.chars().map(|c| if c.is_ascii_alphanumeric() || c == '-' || c == '_' { c } else { '_' }).collect();
    cleaned.chars().take(64).collect()
}

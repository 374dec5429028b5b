//! Loading one plugin file: from bytes to a checked, ready-to-call plugin.
//!
//! The stages are separate so that `toolhost inspect` can show how far a
//! broken file got: [`read`] the file, [`compile`] it (through the cache),
//! find its kind ([`contract_of`], through the runtime's contract layer),
//! prepare it against the host's linker and [`list_tools`] under the
//! plugin's limits, checking every name and schema.
//!
//! A host start does less: what `list-tools` returned (or why the plugin
//! failed to load) is kept in the cache beside the compiled artifact
//! ([`Listing`]), so a file seen before is neither instantiated nor even
//! deserialized at start. Its [`Code`] is loaded the first time one of its
//! tools is called.

mod schema;
use schema::compile_schema;
pub use schema::{check_name, check_schema};
use serde_json::Value;
use std::path::{Path, PathBuf};
use std::sync::Arc;
use toolhost_grants::manifest::HintsTable;
use toolhost_grants::{Grants, Manifest};
use toolhost_runtime::cache::{Cache, ListedTool, Listing, Origin};
use toolhost_runtime::compiler::{CompileBounds, CompileError, Compiler};
use toolhost_runtime::contract;
use toolhost_runtime::limits::{ByteSize, Limits};
use toolhost_runtime::offers::Offers;
use toolhost_runtime::sandbox::{Bound, Guest, HostState, Request, Response, Sandbox};
use toolhost_runtime::typed;
use wasmtime::Engine;
use wasmtime::component::{Component, Linker};

/// A loaded plugin.
pub struct Plugin {
    /// The file stem, used in config (`[plugins.NAME]`) and messages.
    pub name: Arc<str>,
    /// Where it was loaded from.
    pub path: PathBuf,
    /// Hex SHA-256 of the file.
    pub sha256: String,
    /// File size in bytes.
    pub size: u64,
    /// The contract version it was built against, e.g. `0.1.0`.
    pub contract: &'static str,
    /// Whether it was compiled now or loaded from the cache.
    pub origin: Origin,
    /// The limits its calls run under unless a call overrides them.
    pub limits: Limits,
    /// Its tools, in the order it listed them.
    pub tools: Vec<Tool>,
    /// What its manifest (`NAME.toml` beside it) asks for, if it has one.
    pub asks: Option<Manifest>,
    /// What the config grants it.
    pub grants: Grants,
    /// What did not add up between the two, or could not be honoured: each
    /// a sentence saying what is denied and what to do.
    pub notices: Vec<String>,
    /// A typed component's functions that are not tools, and why (said by
    /// `tools` and `inspect`, not at every call).
    pub left_out: Vec<String>,
    /// What it offers besides tools (contract 0.2.0's `full` world).
    pub offers: Offers,
    pub(crate) code: Code,
    /// This load of it: a number no other load in this process has, so a
    /// result cached for it is never given for a plugin that replaced it.
    pub(crate) load: u64,
    /// Who signed it, when it was pulled signed: `toolhost.lock` beside it
    /// names a verified signer for exactly these bytes.
    pub signer: Option<PulledSigner>,
    /// What its audit lines say of it (name, digest, grants, signer), laid
    /// out at its first audited call.
    pub(crate) described: std::sync::OnceLock<Arc<toolhost_audit::canonical::Object>>,
}

/// The signer `toolhost pull` verified for a plugin, as `toolhost.lock`
/// records it.
#[derive(Debug, Clone, PartialEq, Eq, serde::Serialize)]
pub struct PulledSigner {
    /// The trusted public key file that verified the signature, as the config named it.
    pub key: String,
    /// `sha256:` and the SHA-256 of that key's DER SubjectPublicKeyInfo.
    pub fingerprint: String,
    /// The reference it was pulled from.
    pub source: String,
}

/// The signer `toolhost.lock` (beside `path`) records for the plugin `name`,
/// when the lock's digest of `NAME.wasm` is `sha256` (the bytes loaded): a
/// file replaced after the pull has no signer. A lock that cannot be read
/// (missing, not a regular file, over 1MiB, not TOML) names none.
pub(crate) fn pulled_signer(path: &std::path::Path, name: &str, sha256: &str) -> Option<PulledSigner> {
    let lock = path.parent()?.join("toolhost.lock");
    let text = toolhost_grants::readfile::read_regular_text(&lock, toolhost_grants::readfile::limits::TOML).ok()?;
    let table: toml::Table = toml::from_str(&text).ok()?;
    let entry = table.get("plugins")?.get(name)?;
    if entry.get("wasm")?.as_str()? != format!("sha256:{sha256}") {
        return None;
    }
    let signer = entry.get("signer")?;
    // Printable and bounded: the lock is a file in the plugins folder, read as hostile.
    let text = |value: Option<&toml::Value>| {
        value.and_then(toml::Value::as_str).map(|text| {
            let mut text = toolhost_runtime::text::printable(text).into_owned();
            toolhost_runtime::text::truncate(&mut text, 1000);
            text
        })
    };
    Some(PulledSigner {
        key: text(signer.get("key"))?,
        fingerprint: text(signer.get("fingerprint"))?,
        source: text(entry.get("source"))?,
    })
}

impl Plugin {
    /// Whether its compiled code is in memory yet (it is loaded on the
    /// first call, unless the plugin was compiled or listed at this start).
    pub fn code_loaded(&self) -> bool {
        self.code.sandbox.initialized()
    }
}

/// A plugin's compiled code, ready to instantiate: loaded at most once, on
/// first use, by whichever call gets there first.
pub(crate) struct Code {
    sandbox: tokio::sync::OnceCell<Sandbox>,
    linker: Arc<Linker<HostState>>,
    /// What its calls share: its name, grants, clock and TLS settings.
    bound: Bound,
    cache: Option<Cache>,
    compiler: Arc<Compiler>,
    path: PathBuf,
    sha256: String,
    contract: &'static str,
}

impl Code {
    /// The scrubber of its outputs (its secrets' values), for what an audit line shows.
    pub(crate) fn redactor(&self) -> &toolhost_grants::env::Redactor {
        &self.bound.granted.redactor
    }

    /// Code to be loaded from the cache (or the file) when first used, its
    /// calls run with `bound`.
    pub(crate) fn lazy(
        linker: &Arc<Linker<HostState>>,
        bound: Bound,
        cache: Option<&Cache>,
        compiler: &Arc<Compiler>,
        path: &Path,
        sha256: &str,
        contract: &'static str,
    ) -> Code {
        Code {
            sandbox: tokio::sync::OnceCell::new(),
            linker: linker.clone(),
            bound,
            cache: cache.cloned(),
            compiler: compiler.clone(),
            path: path.to_owned(),
            sha256: sha256.to_owned(),
            contract,
        }
    }

    /// Code already prepared.
    pub(crate) fn with(mut self, guest: Arc<dyn Guest>) -> Code {
        let sandbox = Sandbox::new(guest, self.bound.clone());
        self.sandbox = tokio::sync::OnceCell::new_with(Some(sandbox));
        self
    }

    /// The plugin ready to instantiate, loading it first if needed.
    pub(crate) async fn sandbox(&self) -> Result<&Sandbox, String> {
        self.sandbox.get_or_try_init(|| self.load()).await
    }

    async fn load(&self) -> Result<Sandbox, String> {
        let engine = self.linker.engine().clone();
        let cache = self.cache.clone();
        let compiler = self.compiler.clone();
        let path = self.path.clone();
        let sha256 = self.sha256.clone();
        let component = tokio::task::spawn_blocking(move || {
            if let Some(component) = cache.as_ref().and_then(|cache| cache.load(&engine, &sha256)) {
                return Ok(component);
            }
            // The artifact is gone (or unusable): compile the file again,
            // provided it is still the file that was listed at start.
            let wasm = read(&path)?;
            if wasm.sha256 != sha256 {
                return Err("the file changed since its tools were listed: start toolhost again".to_owned());
            }
            let compiled = match &cache {
                Some(cache) => {
                    cache.load_or_compile(&engine, &compiler, &wasm.bytes, &sha256).map(|(component, _)| component)
                }
                None => toolhost_runtime::cache::compile(&engine, &compiler, &wasm.bytes),
            };
            compiled.map_err(|err| err.to_string())
        })
        .await
        .map_err(|err| format!("the loading thread failed: {err}"))??;
        let contract = contract::detect(self.linker.engine(), &component)?;
        if contract.version() != self.contract {
            return Err("the file changed since its tools were listed: start toolhost again".to_owned());
        }
        let guest = contract::prepare(&self.linker, &component, contract)?;
        Ok(Sandbox::new(guest, self.bound.clone()))
    }
}

/// One tool of a loaded plugin.
pub struct Tool {
    /// The tool's name.
    pub name: String,
    /// What it does, for the model.
    pub description: String,
    /// The JSON Schema of its arguments.
    pub schema: Value,
    /// The JSON Schema of its output, when it declares one (a typed
    /// function's return type, or a contract 0.2.0 tool's own).
    pub output_schema: Option<Value>,
    /// Its title, for people (contract 0.2.0).
    pub title: Option<String>,
    /// What it says it may do (contract 0.2.0).
    pub hints: Option<HintsTable>,
    pub(crate) validator: jsonschema::Validator,
    /// Checks a contract 0.2.0 result's `json` block against the output schema.
    pub(crate) output_validator: Option<jsonschema::Validator>,
    /// The name the plugin gives it (what `call-tool` is asked for, and what
    /// its manifest's `[tools.NAME]` refers to), whatever it is offered as.
    pub(crate) export: String,
    /// Its place in what the plugin listed (a typed function's index).
    pub(crate) position: usize,
    /// How long its results are given again for the same call, when they
    /// are (`crate::result_cache`); set once the plugin's grants are known.
    pub(crate) cache_ttl: Option<std::time::Duration>,
    /// The name Wassette gives a typed function (see [`wassette_name`]).
    pub(crate) wassette_name: Option<String>,
}

/// The number of the next plugin load (see [`Plugin`]'s `load`).
pub(crate) fn next_load() -> u64 {
    static LOADS: std::sync::atomic::AtomicU64 = std::sync::atomic::AtomicU64::new(1);
    LOADS.fetch_add(1, std::sync::atomic::Ordering::Relaxed)
}

/// How long results of `tool` (of a plugin granted `grants`, whose manifest
/// is `asks`) are given again, if they are: see `crate::result_cache`. A
/// `cache_ttl` that is not a duration is a notice, and caches nothing.
pub(crate) fn cache_ttl(
    tool: &Tool,
    asks: Option<&Manifest>,
    grants: &toolhost_grants::Grants,
    operator: Option<bool>,
    default_ttl: std::time::Duration,
    notices: &mut Vec<String>,
) -> Option<std::time::Duration> {
    if operator == Some(false) {
        return None;
    }
    let declared = match asks.and_then(|asks| asks.cache_ttl_for(&tool.export)) {
        Some(text) => match text.parse::<toolhost_runtime::limits::HumanDuration>() {
            Ok(ttl) => Some(ttl.0),
            Err(why) => {
                notices.push(format!(
                    "the manifest's `cache_ttl = \"{}\"` for `{}` is not a duration ({why}), so its results are \
                     not cached: write it like \"10m\"",
                    toolhost_runtime::text::printable(text),
                    tool.name
                ));
                return None;
            }
        },
        None => None,
    };
    let hints = crate::tool_hints(tool, asks, grants);
    let ttl = match declared {
        Some(ttl) => ttl,
        None if hints.read_only == Some(true) && hints.idempotent == Some(true) => default_ttl,
        None => return None,
    };
    // A call that may ask the user, the model or the client's roots answers
    // what they said this time: never given again, whatever the operator says.
    if grants.requests != toolhost_grants::requests::RequestsGrant::default() {
        let notice = "`cache = true` is not applied: the plugin may ask the client (elicitation, sampling or \
                      roots) while it runs, so its results are never given again";
        if operator == Some(true) && !notices.iter().any(|said| said == notice) {
            notices.push(notice.to_owned());
        }
        return None;
    }
    let reaches_out = !grants.network.hosts.is_empty()
        || grants.network.sockets
        || !grants.credentials.is_empty()
        || grants.files.dirs.iter().any(|dir| dir.access == toolhost_grants::files::Access::ReadWrite);
    (!ttl.is_zero() && (!reaches_out || operator == Some(true))).then_some(ttl)
}

impl Tool {
    /// The name the plugin itself gives the tool (`name` may be the
    /// manifest's rename).
    pub fn plugin_name(&self) -> &str {
        &self.export
    }
}

/// Applies a manifest's `[tools.NAME]` renames, descriptions and hiding to
/// a plugin's tools. A table naming no tool of the plugin is a notice.
pub(crate) fn apply_manifest(
    mut tools: Vec<Tool>,
    manifest: Option<&Manifest>,
    notices: &mut Vec<String>,
) -> Result<Vec<Tool>, String> {
    let Some(manifest) = manifest else { return Ok(tools) };
    for name in manifest.tools.keys() {
        if !tools.iter().any(|tool| &tool.export == name) {
            notices.push(format!(
                "its manifest has a `[tools.{name}]` table, but the plugin offers no tool `{name}` (it offers {})",
                tools.iter().map(|tool| format!("`{}`", tool.export)).collect::<Vec<_>>().join(", ")
            ));
        }
    }
    tools.retain(|tool| !manifest.tools.get(&tool.export).is_some_and(|table| table.hide));
    if tools.is_empty() {
        return Err("its manifest hides every tool it offers".to_owned());
    }
    for tool in &mut tools {
        let Some(table) = manifest.tools.get(&tool.export) else { continue };
        if let Some(name) = &table.name {
            check_name(name).map_err(|why| format!("its manifest renames `{}`: {why}", tool.export))?;
            tool.name = name.clone();
        }
        if let Some(description) = &table.description {
            tool.description = toolhost_runtime::text::printable(description).into_owned();
        }
    }
    for (i, tool) in tools.iter().enumerate() {
        if tools[..i].iter().any(|other| other.name == tool.name) {
            return Err(format!("its manifest leaves two tools named `{}`", tool.name));
        }
    }
    Ok(tools)
}

/// The bytes of a plugin file and what they are.
pub struct WasmFile {
    /// The file's content.
    pub bytes: Arc<[u8]>,
    /// Hex SHA-256 of the content.
    pub sha256: String,
}

/// Reads `path` and checks that it holds a WebAssembly component.
pub fn read(path: &Path) -> Result<WasmFile, String> {
    let bytes = toolhost_grants::readfile::read_regular(path, toolhost_grants::readfile::limits::WASM)
        .map_err(|err| format!("could not read the file: {err}"))?;
    check_header(&bytes)?;
    let sha256 = toolhost_runtime::cache::sha256_hex(&bytes);
    Ok(WasmFile { bytes: bytes.into(), sha256 })
}

/// Checks that `bytes` start like a WebAssembly component.
pub fn check_header(bytes: &[u8]) -> Result<(), String> {
    const MAGIC: &[u8] = b"\0asm";
    if bytes.len() < 8 || &bytes[..4] != MAGIC {
        return Err("not a WebAssembly file (no `\\0asm` header)".to_owned());
    }
    // Byte 4..8: a core module has version 1 and layer 0; a component has layer 1.
    if bytes[6..8] == [0, 0] {
        return Err("a core WebAssembly module, not a component: build it for `wasm32-wasip2`, \
                    or wrap it with `wasm-tools component new`"
            .to_owned());
    }
    Ok(())
}

/// Compiles (or loads from `cache`) the component in `wasm`, within the
/// compiler's bounds.
pub async fn compile(
    engine: &Engine,
    cache: Option<&Cache>,
    compiler: &Arc<Compiler>,
    wasm: &WasmFile,
) -> Result<(Component, Origin), CompileError> {
    let engine = engine.clone();
    let cache = cache.cloned();
    let compiler = compiler.clone();
    let bytes = wasm.bytes.clone();
    let sha256 = wasm.sha256.clone();
    tokio::task::spawn_blocking(move || match &cache {
        Some(cache) => cache.load_or_compile(&engine, &compiler, &bytes, &sha256),
        None => {
            toolhost_runtime::cache::compile(&engine, &compiler, &bytes).map(|component| (component, Origin::Compiled))
        }
    })
    .await
    .map_err(|err| CompileError::Worker(format!("the compiler thread failed: {err}")))?
}

/// The names a component imports and exports (with each exported instance's functions).
pub struct Shape {
    /// Imported interfaces and functions.
    pub imports: Vec<String>,
    /// Exported interfaces, each with the functions it exports (types left out).
    pub exports: Vec<(String, Vec<String>)>,
}

/// Lists what `component` imports and exports.
pub fn shape(engine: &Engine, component: &Component) -> Shape {
    use wasmtime::component::types::ComponentItem;
    let ty = component.component_type();
    let imports = ty.imports(engine).map(|(name, _)| name.to_owned()).collect();
    let exports = ty
        .exports(engine)
        .map(|(name, item)| {
            let functions = match item.ty {
                ComponentItem::ComponentInstance(instance) => instance
                    .exports(engine)
                    .filter(|(_, item)| matches!(item.ty, ComponentItem::ComponentFunc(_)))
                    .map(|(name, _)| name.to_owned())
                    .collect(),
                _ => Vec::new(),
            };
            (name.to_owned(), functions)
        })
        .collect();
    Shape { imports, exports }
}

/// Lists what a `full` plugin offers besides tools (in a fresh instance under
/// `limits`, nothing granted) and checks it; `None` for other plugins.
pub(crate) async fn list_offers(sandbox: &Sandbox, limits: &Limits) -> Result<Offers, String> {
    if !sandbox.offers_more() {
        return Ok(Offers::default());
    }
    let invocation = sandbox.invoke(limits, Request::ListOffers, Default::default()).await;
    match invocation.result {
        Ok(Response::Offers(offers)) => offers.check(),
        Ok(_) => Err("answered the wrong request".to_owned()),
        Err(err) => Err(format!("listing its resources and prompts failed: it {err}")),
    }
}

/// The contract version `component` was built against (`typed` for a
/// component of plain exported functions), or why it is not a plugin.
pub fn contract_of(engine: &Engine, component: &Component) -> Result<&'static str, String> {
    contract::detect(engine, component).map(|contract| contract.version())
}

/// The `contract` of a component of typed functions.
pub use toolhost_runtime::contract::typed::TYPED;

/// The tools of a typed component (compiled from `wasm`), as a listing: one
/// per function, in export order, and why each function left out is. A
/// tool's description is its function's WIT doc comment where the component
/// carries its docs, else its signature (a manifest may give another); the
/// docs of its named types and their fields and cases describe its schemas.
pub(crate) fn typed_listing(engine: &Engine, component: &Component, wasm: &[u8]) -> (Vec<ListedTool>, Vec<String>) {
    let (mut funcs, left_out) = typed::functions(engine, component);
    let docs = toolhost_runtime::docs::Docs::of(wasm);
    let named = typed::NamedTypes::of(engine, component, wasm);
    for func in &mut funcs {
        typed::describe(func, &docs, &named);
    }
    let tools = funcs
        .into_iter()
        .map(|func| ListedTool {
            title: None,
            hints: None,
            description: match docs.function(func.interface.as_deref(), &func.func) {
                Some(doc) => doc.to_owned(),
                None => format!("Calls `{}`.", func.signature),
            },
            export_path: Some(match &func.interface {
                Some(interface) => format!("{interface}#{}", func.func),
                None => func.func.clone(),
            }),
            name: func.name,
            input_schema: func.input_schema.to_string(),
            output_schema: func.output_schema.map(|schema| schema.to_string()),
        })
        .collect();
    (tools, left_out)
}

/// Links `component` (of `contract`) against the host's imports; its calls
/// run with `bound`.
pub(crate) fn prepare(
    linker: &Linker<HostState>,
    component: &Component,
    contract: &'static str,
    bound: Bound,
) -> Result<Sandbox, String> {
    let kind = contract::named(contract).ok_or_else(|| format!("contract version {contract} is not supported"))?;
    Ok(Sandbox::new(contract::prepare(linker, component, kind)?, bound))
}

/// Calls `list-tools` in a fresh instance under `limits` and checks every tool.
pub(crate) async fn list_tools(sandbox: &Sandbox, limits: &Limits, contract: &str) -> Result<Vec<Tool>, String> {
    let listed = call_list_tools(sandbox, limits).await?;
    check_tools(listed, limits, contract)
}

/// Calls `list-tools` in a fresh instance under `limits`, with what
/// `sandbox` is bound to (nothing granted, at load).
pub(crate) async fn call_list_tools(sandbox: &Sandbox, limits: &Limits) -> Result<Vec<ListedTool>, String> {
    let invocation = sandbox.invoke(limits, Request::ListTools, Default::default()).await;
    match invocation.result {
        Ok(Response::Tools(tools)) => Ok(tools),
        Ok(_) => Err("answered the wrong request".to_owned()),
        Err(err) => Err(format!("listing its tools failed: it {err}")),
    }
}

/// Checks a listed set of tools (as a plugin returned it, or as the cache
/// kept it): its size against the output limit, every name and schema, no
/// name twice; and compiles the schema validators.
pub(crate) fn check_tools(listed: Vec<ListedTool>, limits: &Limits, contract: &str) -> Result<Vec<Tool>, String> {
    let size: usize =
        listed.iter().map(|tool| tool.name.len() + tool.description.len() + tool.input_schema.len()).sum();
    if size as u64 > limits.output.bytes() {
        return Err(format!(
            "its tool list is {} long, over the output limit of {}",
            ByteSize(size as u64),
            limits.output
        ));
    }
    if listed.is_empty() {
        return Err("it offers no tools".to_owned());
    }
    let mut tools: Vec<Tool> = Vec::with_capacity(listed.len());
    for tool in listed {
        check_name(&tool.name)?;
        if tools.iter().any(|seen| seen.name == tool.name) {
            return Err(format!("it lists the tool `{}` twice", tool.name));
        }
        let (schema, validator) = check_schema(&tool.name, &tool.input_schema)?;
        // A contract 0.2.0 tool's output schema is the plugin's word, checked
        // like its input schema and held against every result; a typed
        // function's is derived from its WIT type by toolhost.
        let (output_schema, output_validator) = match &tool.output_schema {
            Some(text) if contract::named(contract).is_some_and(|kind| kind.checks_output_schemas()) => {
                let (schema, validator) = compile_schema(&tool.name, text, "output")?;
                (Some(schema), Some(validator))
            }
            Some(text) => (
                Some(
                    serde_json::from_str(text)
                        .map_err(|err| format!("the output schema of tool `{}` is not JSON: {err}", tool.name))?,
                ),
                None,
            ),
            None => (None, None),
        };
        let title = tool.title.map(|title| toolhost_runtime::text::printable(&title).into_owned());
        let position = tools.len();
        let export = tool.name.clone();
        let wassette_name = tool.export_path.as_deref().map(wassette_name);
        tools.push(Tool {
            name: tool.name,
            description: toolhost_runtime::text::printable(&tool.description).into_owned(),
            schema,
            output_schema,
            title,
            hints: tool.hints,
            output_validator,
            validator,
            export,
            position,
            cache_ttl: None,
            wassette_name,
        });
    }
    Ok(tools)
}

/// The tool name Wassette derives for a typed function exported at
/// `path` (`INTERFACE#FUNCTION`, or the function's name): the interface's
/// and the function's names lower-cased, `:`, `/`, `.` and anything but
/// letters, digits and `-` made `_`, joined by `_`
/// (`local:time-server/time#get-current-time` is
/// `local_time-server_time_get-current-time`, `acme:inventory/catalog@1.0.0#get-item`
/// `acme_inventory_catalog_1_0_0_get-item`, a world's own `get-weather`
/// `get-weather`). Only ever compared with a name a caller asked for, to
/// say which tool it is.
pub fn wassette_name(path: &str) -> String {
    let part = |name: &str| -> String {
        name.to_lowercase().chars().map(|c| if c.is_ascii_alphanumeric() || c == '-' { c } else { '_' }).collect()
    };
    match path.split_once('#') {
        Some((interface, func)) => format!("{}_{}", part(interface), part(func)),
        None => part(path),
    }
}

/// The contract version named `version`, if this host supports it.
pub(crate) fn known_contract(version: &str) -> Option<&'static str> {
    contract::named(version).map(|contract| contract.version())
}

/// Turns a cached [`Listing`] of tools back into tools, checked again, with
/// what loading noted. A failure recorded under other limits or compile
/// bounds than `limits` and `bounds` is `None`: it is tried again.
#[allow(clippy::type_complexity)]
pub(crate) fn tools_of(
    listing: Listing,
    limits: &Limits,
    bounds: &CompileBounds,
) -> Option<Result<(&'static str, Vec<Tool>, Vec<String>, Offers), String>> {
    match listing {
        Listing::Tools { contract, tools, notes, offers } => {
            let contract = known_contract(&contract)?;
            let checked = check_tools(tools, limits, contract).and_then(|tools| Ok((tools, offers.check()?)));
            Some(checked.map(|(tools, offers)| (contract, tools, notes, offers)))
        }
        Listing::Failed { reason, limits: None } => Some(Err(reason)),
        Listing::Failed { reason, limits: Some(under) } => {
            (under == format!("{limits:?}") || under == bounds.key()).then_some(Err(reason))
        }
    }
}

#[cfg(test)]
mod tests;

//! [`Host`]: the plugins loaded from a folder, their tools, and calls to them.

use crate::config::{self, HostConfig};
use crate::plugin::{self, Code, Plugin, Tool};
use crate::{Caller, Catalog, LoadProblem, ProblemKind, SharedCatalog, Source};
use anyhow::{Context, Result};
use serde_json::Value;
use std::path::{Path, PathBuf};
use std::sync::Arc;
use tokio::sync::Semaphore;
use toolhost_grants as grants;
use toolhost_runtime::cache::{Cache, Listing, Origin};
use toolhost_runtime::compiler::Remembered;
use toolhost_runtime::compiler::{self, CompileBounds, Compiler};
use toolhost_runtime::content::{Content, ContentBlock};
use toolhost_runtime::engine::{self, EpochTicker};
use toolhost_runtime::limits::{LimitOverrides, Limits};
use toolhost_runtime::offers::Offers;
use toolhost_runtime::outcome::{CallError, CallReport, ToolOutput};
use toolhost_runtime::sandbox::{Bound, CallHooks, Guest, HostState, Request, Response, Sandbox};
use toolhost_runtime::tls;
use wasmtime::Engine;
use wasmtime::component::Linker;

/// A file loaded for the first time: its contract, the tools it listed,
/// what loading noted, its code and where that came from.
type Fresh = (&'static str, Vec<toolhost_runtime::cache::ListedTool>, Vec<String>, Offers, Arc<dyn Guest>, Origin);

/// What loading a file's code came to.
struct Loaded {
    sha256: String,
    size: u64,
    contract: &'static str,
    tools: Vec<Tool>,
    /// What loading noted (typed functions left out).
    notes: Vec<String>,
    /// What it offers besides tools.
    offers: Offers,
    origin: Origin,
    code: Code,
}

/// Loads plugins and runs their tools, each call in a fresh sandboxed instance.
///
/// ```no_run
/// # async fn demo() -> anyhow::Result<()> {
/// let mut host = toolhost_catalog::Host::new(toolhost_catalog::HostConfig::default())?;
/// host.load_dir("plugins/dist".as_ref()).await?;
/// let report = host.call("sha256", r#"{"text":"hi"}"#, &Default::default()).await;
/// println!("{:?}", report.outcome);
/// # Ok(()) }
/// ```
pub struct Host {
    engine: Engine,
    pagemap: bool,
    linker: Arc<Linker<HostState>>,
    cache: Option<Cache>,
    compiler: Arc<Compiler>,
    config: HostConfig,
    catalog: Arc<SharedCatalog>,
    servers: crate::servers::Servers,
    quotas: crate::quota::Quotas,
    permits: Arc<Semaphore>,
    /// TLS client settings for plugin HTTPS: webpki's roots and `ca_file`'s.
    tls: Arc<rustls::ClientConfig>,
    ticker: Arc<EpochTicker>,
    /// The content (SHA-256) of each file hot reload last refused, so the
    /// same refusal is said once.
    pub(crate) refused: std::sync::Mutex<std::collections::HashMap<std::path::PathBuf, String>>,
    /// `[audit]` and `[[hooks]]`, when either is configured (`crate::accountable`).
    accountable: Option<Arc<toolhost_audit::Accountable>>,
}

impl Host {
    /// Keeps `[quotas]` in `store` from now on, shared with every other
    /// process using it (`serve` replicas with `[state] url`). Once only.
    pub fn share_quotas(&self, store: Arc<dyn crate::quota::SharedQuotas>) -> Result<()> {
        self.quotas.share(store).map_err(anyhow::Error::msg)
    }

    /// A host with no plugins yet, configured by `config`. Compiled plugins
    /// are cached in `config.cache_dir`, else [`Cache::default_dir`]. Fails on
    /// a `ca_file` that cannot be read or holds no usable certificate.
    ///
    /// On glibc the first host fixes the allocator's trim and map
    /// thresholds for the process, so that memory freed after compiling goes
    /// back to the system (see `runtime::cache::tune_allocator`).
    pub fn new(config: impl Into<HostConfig>) -> Result<Host> {
        let config = config.into();
        toolhost_runtime::cache::tune_allocator();
        let tls = tls::client_config(config.ca_file.as_deref())?;
        let concurrency = config.max_concurrent_calls.unwrap_or(config::DEFAULT_MAX_CONCURRENT_CALLS);
        let slots = u32::try_from(concurrency).context("`max_concurrent_calls` is too large")?;
        let keep_resident = match config.keep_resident {
            Some(bytes) => usize::try_from(bytes).context("`keep_resident` is too large")?,
            None => engine::MEMORY_KEEP_RESIDENT,
        };
        let (engine, pagemap) =
            engine::build(slots, keep_resident).context("could not set up the WebAssembly engine")?;
        let linker =
            Arc::new(toolhost_runtime::contract::linker(&engine).context("could not set up the host imports")?);
        let cache = config.cache_dir.clone().or_else(Cache::default_dir).map(|dir| Cache::new(dir, &engine));
        let compiler = Arc::new(Compiler::new(CompileBounds {
            timeout: config.compile_timeout.unwrap_or(compiler::DEFAULT_COMPILE_TIMEOUT),
            memory: config.compile_memory.unwrap_or(compiler::DEFAULT_COMPILE_MEMORY),
        }));
        let ticker = Arc::new(EpochTicker::start(&engine).context("could not start the timeout clock")?);
        let quotas = crate::quota::Quotas::new(&config.quotas);
        let mut protected = config.protected.clone();
        for path in cache.iter().flat_map(Cache::protected) {
            protected.push((path, "the compile cache (native code toolhost runs) or its key".to_owned()));
        }
        if let Some(file) = &config.ca_file {
            protected.push((file.clone(), "`ca_file` (the certificates toolhost trusts)".to_owned()));
        }
        for settings in config.plugins.values() {
            for credential in &settings.grants.credentials {
                for file in credential.files() {
                    protected.push((file.to_owned(), "a credential's file".to_owned()));
                }
            }
        }
        if let Some(key) = &config.audit.key {
            protected.push((key.clone(), "the `[audit]` key (which signs the audit log)".to_owned()));
        }
        if let Some(file) = &config.audit.file {
            protected.push((file.clone(), "the `[audit]` log".to_owned()));
        }
        check_grants(&config, &protected)?;
        let accountable =
            toolhost_audit::Accountable::new(&config.audit, &config.hooks).map_err(anyhow::Error::msg)?.map(Arc::new);
        Ok(Host {
            engine,
            pagemap,
            linker,
            cache,
            compiler,
            config,
            catalog: Arc::new(SharedCatalog::new()),
            servers: Default::default(),
            quotas,
            permits: Arc::new(Semaphore::new(concurrency)),
            tls,
            ticker,
            refused: Default::default(),
            accountable,
        })
    }

    /// Turns the compile cache off (every load compiles).
    pub fn without_cache(mut self) -> Host {
        self.cache = None;
        self
    }

    /// The wasmtime engine (shared by every plugin).
    pub fn engine(&self) -> &Engine {
        &self.engine
    }

    pub(crate) fn linker(&self) -> &Linker<HostState> {
        &self.linker
    }

    /// What every call of the plugin `name` shares: `granted`, this host's
    /// epoch clock and its TLS settings for plugin HTTPS.
    pub(crate) fn bound(&self, name: &Arc<str>, granted: Arc<grants::Granted>) -> Bound {
        Bound { plugin: name.clone(), granted, clock: self.ticker.clone(), tls: self.tls.clone() }
    }

    /// Whether the instance pool resets only the pages a call wrote (the
    /// kernel has `PAGEMAP_SCAN`, Linux 6.7 and later), or falls back to
    /// resetting a fixed prefix of each memory.
    pub fn resets_dirty_pages_only(&self) -> bool {
        self.pagemap
    }

    /// The compile cache, if any.
    pub fn cache(&self) -> Option<&Cache> {
        self.cache.as_ref()
    }

    /// What compiles plugins, within `compile_timeout` and `compile_memory`.
    pub fn compiler(&self) -> &Arc<Compiler> {
        &self.compiler
    }

    /// The config this host was made with.
    pub fn config(&self) -> &HostConfig {
        &self.config
    }

    /// Loads every `*.wasm` file in `dir` and adds them to the catalog. A
    /// file that cannot be loaded is recorded in the catalog's problems and
    /// the others still load; the error case is only for a folder that
    /// cannot be read.
    pub async fn load_dir(&self, dir: &Path) -> Result<()> {
        let lock = dir.join("toolhost.lock");
        if lock.exists() {
            check_grants(&self.config, &[(lock, "toolhost.lock (what was pulled, and who signed it)".to_owned())])?;
        }
        let paths = plugin_files(dir)?;
        let mut loaded = Vec::new();
        let mut problems = Vec::new();
        // Concurrently: on a cold start the files compile in parallel, and a
        // plugin slow to list its tools does not hold up the others.
        let results = futures_util::future::join_all(paths.iter().map(|path| self.load_file(path))).await;
        if results.iter().any(|result| result.as_ref().is_ok_and(|plugin| plugin.origin == Origin::Compiled)) {
            toolhost_runtime::cache::release_freed_memory();
        }
        for (path, result) in paths.into_iter().zip(results) {
            match result {
                Ok(plugin) => {
                    problems.extend(grant_notices(&plugin));
                    loaded.push(Arc::new(plugin));
                }
                Err(reason) => {
                    tracing::debug!(path = %path.display(), "skipped plugin: {reason}");
                    problems.push(LoadProblem { kind: ProblemKind::Plugin, paths: vec![path], reason });
                }
            }
        }
        self.catalog.update(|parts| {
            parts.plugins.extend(loaded);
            parts.problems.extend(problems);
            for name in self.config.plugins.keys() {
                if !parts.plugins.iter().any(|plugin| &*plugin.name == name)
                    && !parts.problems.iter().any(|problem| problem.paths.iter().any(|path| stem(path) == *name))
                {
                    parts.problems.push(LoadProblem {
                        kind: ProblemKind::Config,
                        paths: vec![dir.join(format!("{name}.wasm"))],
                        reason: format!("the config has settings for plugin `{name}`, but there is no such file"),
                    });
                }
            }
            true
        });
        Ok(())
    }

    /// Loads one plugin file (without adding it to this host), with its
    /// manifest and grants reviewed. A file seen before (same bytes, same
    /// engine) is taken from the cache's [`Listing`] without instantiating
    /// or even deserializing it; its code loads on the first call.
    pub async fn load_file(&self, path: &Path) -> Result<Plugin, String> {
        let name: Arc<str> = stem(path).into();
        let limits = self.limits_for(&name);
        // The grants first: the plugin's code is bound to them when it is prepared.
        let grants = self.config.grants_for(&name);
        let mut review = grants::review(&name, path, &grants, |key| std::env::var(key).ok());
        let loaded = self.load_code(&name, path, &limits, &review.granted).await?;
        let tools = plugin::apply_manifest(loaded.tools, review.asks.as_ref(), &mut review.notices)?;
        Ok(Plugin {
            name,
            path: path.to_owned(),
            sha256: loaded.sha256,
            size: loaded.size,
            contract: loaded.contract,
            origin: loaded.origin,
            limits,
            tools,
            asks: review.asks,
            grants,
            notices: review.notices,
            left_out: loaded.notes,
            offers: loaded.offers,
            code: loaded.code,
        })
    }

    async fn load_code(
        &self,
        name: &Arc<str>,
        path: &Path,
        limits: &Limits,
        granted: &Arc<grants::Granted>,
    ) -> Result<Loaded, String> {
        use std::io::Read;
        let file =
            toolhost_grants::readfile::open_regular(path).map_err(|err| format!("could not read the file: {err}"))?;
        let metadata = file.metadata().map_err(|err| format!("could not read the file: {err}"))?;
        let cache = self.cache.as_ref();
        let known = cache.and_then(|cache| cache.known_sha256(&metadata));
        let (sha256, bytes) = match known {
            Some(sha256) => (sha256, None),
            None => {
                let limit = toolhost_grants::readfile::limits::WASM;
                let mut bytes = Vec::new();
                file.take(limit + 1)
                    .read_to_end(&mut bytes)
                    .map_err(|err| format!("could not read the file: {err}"))?;
                if bytes.len() as u64 > limit {
                    return Err(format!(
                        "could not read the file: it is larger than {}",
                        toolhost_runtime::limits::ByteSize(limit)
                    ));
                }
                let sha256 = toolhost_runtime::cache::sha256_hex(&bytes);
                if let Some(cache) = cache {
                    cache.remember_sha256(&metadata, &sha256);
                }
                (sha256, Some(bytes))
            }
        };
        let listed = cache
            .and_then(|cache| cache.listing(&sha256))
            .and_then(|listing| plugin::tools_of(listing, limits, &self.compiler.bounds()));
        if let Some(listed) = listed {
            let (contract, tools, notes, offers) = listed?;
            let bound = self.bound(name, granted.clone());
            let code = Code::lazy(&self.linker, bound, cache, &self.compiler, path, &sha256, contract);
            let size = metadata.len();
            return Ok(Loaded { size, contract, tools, notes, offers, origin: Origin::Cached, code, sha256 });
        }
        // Not listed yet (or not under these limits): load it for real.
        let wasm = match bytes {
            Some(bytes) => plugin::WasmFile { bytes: bytes.into(), sha256 },
            None => plugin::read(path)?,
        };
        let (size, sha256) = (wasm.bytes.len() as u64, wasm.sha256.clone());
        let lazy = |contract| {
            let bound = self.bound(name, granted.clone());
            Code::lazy(&self.linker, bound, cache, &self.compiler, path, &sha256, contract)
        };
        match self.load_fresh(name, &wasm, limits).await {
            Ok((contract, listed, notes, offers, guest, origin)) => {
                if let Some(cache) = cache {
                    let listing = Listing::Tools {
                        contract: contract.to_owned(),
                        tools: listed.clone(),
                        notes: notes.clone(),
                        offers: offers.clone(),
                    };
                    cache.store_listing(&sha256, &listing);
                }
                let tools = plugin::check_tools(listed, limits, contract)?;
                let code = lazy(contract).with(guest);
                Ok(Loaded { size, contract, tools, notes, offers, origin, code, sha256 })
            }
            Err((reason, remembered)) => {
                // Only what the plugin's bytes caused is remembered: a compile
                // cut short by the machine or a signal is tried again next time.
                let under = match remembered {
                    Remembered::Always => Some(None),
                    Remembered::Under(settings) => Some(Some(settings)),
                    Remembered::Never => None,
                };
                if let (Some(cache), Some(limits)) = (cache, under) {
                    cache.store_listing(&sha256, &Listing::Failed { reason: reason.clone(), limits });
                }
                Err(reason)
            }
        }
    }

    /// Compiles (through the artifact cache), links and lists the tools of
    /// `wasm`. A failure says why, and the settings it happened under when
    /// other settings could change it: the limits (listing the tools) or the
    /// compile bounds; always when it is the bytes themselves; never when it
    /// is not the plugin's doing.
    async fn load_fresh(
        &self,
        name: &Arc<str>,
        wasm: &plugin::WasmFile,
        limits: &Limits,
    ) -> Result<Fresh, (String, Remembered)> {
        let fixed = |reason| (reason, Remembered::Always);
        plugin::check_header(&wasm.bytes).map_err(fixed)?;
        let (component, origin) =
            plugin::compile(&self.engine, self.cache.as_ref(), &self.compiler, wasm).await.map_err(|err| {
                let remembered = err.remembered(&self.compiler.bounds());
                (err.to_string(), remembered)
            })?;
        let contract = toolhost_runtime::contract::detect(&self.engine, &component).map_err(fixed)?;
        let guest = toolhost_runtime::contract::prepare(&self.linker, &component, contract).map_err(fixed)?;
        if !contract.lists_by_running() {
            // The tools are the functions' types: nothing runs to list them.
            let (listed, notes) = plugin::typed_listing(&self.engine, &component, &wasm.bytes);
            return Ok((contract.version(), listed, notes, Offers::default(), guest, origin));
        }
        let under_limits = |reason| (reason, Remembered::Under(format!("{limits:?}")));
        let (listed, offers) = {
            // Listing runs with nothing granted.
            let sandbox = Sandbox::new(guest.clone(), self.bound(name, grants::Granted::nothing()));
            let _permit = self.permits.acquire().await;
            let listed = plugin::call_list_tools(&sandbox, limits).await;
            let offers = plugin::list_offers(&sandbox, limits).await;
            (listed.map_err(under_limits)?, offers.map_err(under_limits)?)
        };
        Ok((contract.version(), listed, Vec::new(), offers, guest, origin))
    }

    /// The limits a plugin named `name` runs under, from the config.
    pub fn limits_for(&self, name: &str) -> Limits {
        Limits::default().with(&self.config.limits_for(name))
    }

    /// Starts the config's MCP servers (all at once, each within its
    /// `startup_timeout`; run it beside [`Host::load_dir`]) and adds their
    /// tools to the catalog. Returns the servers that could not be started.
    pub async fn connect_servers(&self) -> Vec<crate::servers::ServerProblem> {
        self.servers.connect(&self.config, &self.catalog).await
    }

    /// Lists again the tools of the MCP servers that said their tools changed
    /// (or were restarted), so the next snapshot has them. The agent calls
    /// this before each model turn.
    pub async fn refresh_servers(&self) -> Vec<crate::servers::ServerProblem> {
        self.servers.refresh(&self.catalog).await
    }

    /// The current tool catalog: one consistent snapshot of every tool.
    pub fn catalog(&self) -> Arc<Catalog> {
        self.catalog.snapshot()
    }

    /// The live catalog, for swapping in a new generation (hot reload) and
    /// for learning when it changes ([`SharedCatalog::subscribe`]).
    pub fn shared_catalog(&self) -> &Arc<SharedCatalog> {
        &self.catalog
    }

    /// What could not be loaded, and grant notices (from the current catalog).
    pub fn problems(&self) -> Vec<LoadProblem> {
        self.catalog().problems().to_vec()
    }

    /// The loaded plugins, in file-name order (from the current catalog).
    pub fn plugins(&self) -> Vec<Arc<Plugin>> {
        self.catalog().plugins().to_vec()
    }

    /// Calls `tool` with `arguments` (a JSON object as text; blank means `{}`)
    /// in a fresh instance, under the plugin's limits with `overrides` on top.
    /// Waits for a free slot when `max_concurrent_calls` calls are running.
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
                    self.call_spanned(catalog, tool, arguments, overrides, hooks),
                    span.clone(),
                )
                .await
            }
            Some(accountable) => {
                let call =
                    crate::accountable::call(self, accountable, catalog, tool, arguments, overrides, hooks, caller);
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
                self.call_plugin(plugin.clone(), *index, arguments, overrides, hooks).await
            }
            Source::Mcp { server, tool } => {
                // The output limit is the plugins' one; the time limit is the
                // server's `tool_timeout` unless the caller sets one.
                let mut limits = Limits::default().with(&self.config.limits);
                limits.timeout = server.config().tool_timeout;
                server.call(tool, arguments, &limits.with(overrides)).await
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
    ) -> CallReport {
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
            let error = CallError::InvalidArguments(describe_mismatch(&err, &plugin.tools[index].schema));
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
        CallReport {
            tool: tool.to_owned(),
            plugin: plugin_name,
            outcome,
            usage: invocation.usage,
            stdout: invocation.stdout,
            stderr: invocation.stderr,
            logs: invocation.logs,
            refused: invocation.refused,
        }
    }
}

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
    /// instance under the plugin's limits and grants. Audited as `caller`'s
    /// under `[audit]`.
    pub async fn read_resource(
        &self,
        catalog: &Catalog,
        uri: &str,
        hooks: CallHooks,
        caller: &Caller,
    ) -> Result<Vec<ContentBlock>, OfferError> {
        let plugin = resource_owner(catalog, uri);
        let started = std::time::SystemTime::now();
        let read = match plugin {
            None => Err(OfferError::NotFound(format!("the resource `{uri}`"))),
            Some(plugin) => match self.offer_request(plugin, Request::ReadResource { uri }, hooks).await {
                Ok(Response::Read(read)) => read.map_err(OfferError::Failed),
                Ok(_) => Err(wrong_answer()),
                Err(error) => Err(error),
            },
        };
        if let Some(accountable) = &self.accountable {
            let arguments = serde_json::json!({"uri": uri});
            crate::accountable::record_offer(accountable, "resource", started, caller, uri, plugin, arguments, &read);
        }
        read
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
        let started = std::time::SystemTime::now();
        let owner = self.prompt_owner(catalog, name);
        let prompt = match &owner {
            Err(error) => Err(error.clone()),
            Ok(plugin) => match self.offer_request(plugin, Request::GetPrompt { name, arguments }, hooks).await {
                Ok(Response::Prompt(prompt)) => prompt.map_err(OfferError::Failed),
                Ok(_) => Err(wrong_answer()),
                Err(error) => Err(error),
            },
        };
        if let Some(accountable) = &self.accountable {
            let arguments: serde_json::Map<String, Value> =
                arguments.iter().map(|(key, value)| (key.clone(), Value::String(value.clone()))).collect();
            let owner = owner.ok();
            let arguments = Value::Object(arguments);
            crate::accountable::record_offer(accountable, "prompt", started, caller, name, owner, arguments, &prompt);
        }
        prompt
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

/// The plugin that lists the resource `uri`, else the first whose template matches it.
fn resource_owner<'a>(catalog: &'a Catalog, uri: &str) -> Option<&'a Arc<Plugin>> {
    let listed = |plugin: &&Arc<Plugin>| plugin.offers.resources.iter().any(|resource| resource.uri == uri);
    let templated = |plugin: &&Arc<Plugin>| {
        plugin
            .offers
            .templates
            .iter()
            .any(|template| toolhost_runtime::offers::matches_template(&template.uri_template, uri))
    };
    catalog.plugins().iter().find(listed).or_else(|| catalog.plugins().iter().find(templated))
}

fn wrong_answer() -> OfferError {
    OfferError::Failed(CallError::Host("the plugin answered the wrong request".to_owned()))
}

/// Checks the `json` block of a result against the tool's output schema:
/// a tool that declares one must return a structured result that matches it.
/// A result of one plain text or JSON block is that text or JSON, whichever
/// contract produced it: every front end then shows and serves it alike.
fn plain(mut blocks: Vec<ContentBlock>) -> ToolOutput {
    match blocks.as_mut_slice() {
        [ContentBlock { content: Content::Text { text }, annotations: None }] => ToolOutput::Text(std::mem::take(text)),
        [ContentBlock { content: Content::Json { json, .. }, annotations: None }] => {
            ToolOutput::Json(std::mem::take(json))
        }
        _ => ToolOutput::Content(blocks),
    }
}

fn structured(validator: &jsonschema::Validator, schema: &Value, blocks: &[ContentBlock]) -> Result<(), CallError> {
    let json = blocks.iter().find(|block| matches!(block.content, Content::Json { .. }));
    let Some(json) = json else {
        return Err(CallError::InvalidOutput(
            "it declares an output schema but returned no `json` block; this is a bug in the plugin".to_owned(),
        ));
    };
    let value =
        json.content.json_value().ok_or_else(|| CallError::InvalidOutput("its `json` block is not JSON".to_owned()))?;
    match validator.iter_errors(&value).next() {
        None => Ok(()),
        Some(err) => Err(CallError::InvalidOutput(format!(
            "its `json` block does not match its output schema ({}); this is a bug in the plugin",
            describe_mismatch_in(&err, schema, "the block")
        ))),
    }
}

/// "at `/path`: what is wrong", cut to a readable length. A value outside an
/// enum (`enum`, or `oneOf`/`anyOf` of `const`s as schemars writes an enum
/// with doc comments) names every allowed value, and a value that is none of
/// a variant's cases (constants and one-key objects, as a WIT `variant` or a
/// serde enum with data is written) names every case: the model needs them
/// to fix its call. `schema` is the document `err` came from.
fn describe_mismatch(err: &jsonschema::ValidationError<'_>, schema: &Value) -> String {
    describe_mismatch_in(err, schema, "the arguments")
}

/// [`describe_mismatch`] of a document other than the arguments (`whole`).
fn describe_mismatch_in(err: &jsonschema::ValidationError<'_>, schema: &Value, whole: &str) -> String {
    // The right case with a wrong payload: what is wrong inside it.
    if let Some(inner) = chosen_case_error(err, schema) {
        return describe_mismatch_in(inner, schema, whole);
    }
    let path = err.instance_path().as_str();
    let allowed = allowed_values(err.kind())
        .map(|values| values.iter().map(Value::to_string).collect::<Vec<_>>())
        .or_else(|| variant_cases(err, schema).map(|cases| cases.into_iter().map(|case| case.shown).collect()));
    let what = match allowed {
        Some(listed) => {
            let mut listed = listed.join(", ");
            cut(&mut listed, 4_000);
            let mut instance = err.instance().to_string();
            cut(&mut instance, 200);
            format!("{instance} is not one of the allowed values: {listed}")
        }
        None => {
            let mut what = err.to_string();
            cut(&mut what, 300);
            what
        }
    };
    if path.is_empty() { format!("{what} (at the top level of {whole})") } else { format!("at `{path}`: {what}") }
}

/// One case of a variant as a schema writes it.
struct Case {
    /// As a message shows it: `"standard"`, `{"express": …}`, `null`.
    shown: String,
    /// The key of a case with a payload.
    key: Option<String>,
}

/// The cases of the `oneOf`/`anyOf` that `err` failed, when each branch is a
/// constant, an `enum`, `null` or an object of exactly one required key
/// (`{"express": …}`), through local `$ref`s and nested `oneOf`/`anyOf`s;
/// `None` when any branch is something else.
fn variant_cases(err: &jsonschema::ValidationError<'_>, schema: &Value) -> Option<Vec<Case>> {
    use jsonschema::error::ValidationErrorKind as Kind;
    if !matches!(err.kind(), Kind::OneOfNotValid { .. } | Kind::AnyOf { .. }) {
        return None;
    }
    let branches = schema.pointer(err.schema_path().as_str())?.as_array()?;
    let mut cases = Vec::new();
    for branch in branches {
        cases.extend(cases_of(schema, branch, 0)?);
    }
    (!cases.is_empty()).then_some(cases)
}

fn cases_of(root: &Value, schema: &Value, depth: usize) -> Option<Vec<Case>> {
    if depth > 16 {
        return None;
    }
    if let Some(reference) = schema.get("$ref").and_then(Value::as_str) {
        return cases_of(root, root.pointer(reference.strip_prefix('#')?)?, depth + 1);
    }
    let constant = |value: &Value| Case { shown: value.to_string(), key: None };
    if let Some(value) = schema.get("const") {
        return Some(vec![constant(value)]);
    }
    if let Some(values) = schema.get("enum").and_then(Value::as_array) {
        return Some(values.iter().map(constant).collect());
    }
    if let Some(branches) = schema.get("oneOf").or_else(|| schema.get("anyOf")).and_then(Value::as_array) {
        let mut cases = Vec::new();
        for branch in branches {
            cases.extend(cases_of(root, branch, depth + 1)?);
        }
        return Some(cases);
    }
    match schema.get("type").and_then(Value::as_str)? {
        "null" => Some(vec![constant(&Value::Null)]),
        "object" => {
            let properties = schema.get("properties")?.as_object()?;
            let required = schema.get("required")?.as_array()?;
            match (properties.keys().next(), &required[..]) {
                (Some(key), [only]) if properties.len() == 1 && only.as_str() == Some(key.as_str()) => {
                    Some(vec![Case {
                        shown: format!("{{{}: …}}", Value::from(key.as_str())), key: Some(key.clone())
                    }])
                }
                _ => None,
            }
        }
        _ => None,
    }
}

/// When `err` is a variant's mismatch and the value is an object naming one
/// of its cases (`{"express": "x"}`), the first error inside that case.
fn chosen_case_error<'e, 'a>(
    err: &'e jsonschema::ValidationError<'a>,
    schema: &Value,
) -> Option<&'e jsonschema::ValidationError<'a>> {
    use jsonschema::error::ValidationErrorKind as Kind;
    let (Kind::OneOfNotValid { context } | Kind::AnyOf { context }) = err.kind() else {
        return None;
    };
    let object = err.instance().as_object().filter(|object| object.len() == 1)?;
    let key = object.keys().next()?;
    let branches = schema.pointer(err.schema_path().as_str())?.as_array()?;
    if branches.len() != context.len() {
        return None;
    }
    let chosen = branches.iter().position(|branch| {
        cases_of(schema, branch, 0).is_some_and(|cases| cases.iter().any(|case| case.key.as_ref() == Some(key)))
    })?;
    context[chosen].first()
}

fn cut(text: &mut String, limit: usize) {
    if text.len() > limit {
        let at = text.floor_char_boundary(limit);
        text.truncate(at);
        text.push('…');
    }
}

/// Every value an `enum`, a `const`, or a `oneOf`/`anyOf` made only of those
/// (and of `null`) allows; `None` when the failed keyword allows more than a list.
fn allowed_values(kind: &jsonschema::error::ValidationErrorKind) -> Option<Vec<Value>> {
    use jsonschema::JsonType;
    use jsonschema::error::{TypeKind, ValidationErrorKind as Kind};
    match kind {
        Kind::Enum { options } => options.as_array().cloned(),
        Kind::Constant { expected_value } => Some(vec![Value::clone(expected_value)]),
        Kind::OneOfNotValid { context } | Kind::AnyOf { context } => {
            let mut allowed = Vec::new();
            for branch in context {
                // A branch `{"type": "string", "const": "days"}` fails on its
                // constant (and on its type, for a number): the constant counts.
                let listed = branch.iter().find_map(|err| allowed_values(err.kind()));
                match (listed, &branch[..]) {
                    (Some(listed), _) => allowed.extend(listed),
                    (None, [only]) if matches!(only.kind(), Kind::Type { kind: TypeKind::Single(JsonType::Null) }) => {
                        allowed.push(Value::Null)
                    }
                    _ => return None,
                }
            }
            (!allowed.is_empty()).then_some(allowed)
        }
        _ => None,
    }
}

/// The `*.wasm` files directly in `dir`, sorted.
pub(crate) fn plugin_files(dir: &Path) -> Result<Vec<PathBuf>> {
    let entries = std::fs::read_dir(dir).with_context(|| {
        format!("could not read the plugins folder {} ({})", dir.display(), missing_folder_advice(dir))
    })?;
    let mut paths: Vec<PathBuf> = entries
        .filter_map(|entry| entry.ok().map(|entry| entry.path()))
        // Not only regular files: a folder, FIFO or broken symlink named
        // `*.wasm` is reported as skipped (by `plugin::read`), not ignored.
        .filter(|path| path.extension().is_some_and(|ext| ext == "wasm"))
        .collect();
    paths.sort();
    Ok(paths)
}

/// What to do about a plugins folder that cannot be read. Building the
/// bundled plugins (`bash plugins/build.sh`) is advised only for the
/// `plugins/dist` of a checkout of toolhost, which has that script beside it:
/// anyone else points toolhost at the folder holding their `.wasm` files.
fn missing_folder_advice(dir: &Path) -> &'static str {
    let checkout =
        dir.ends_with("plugins/dist") && dir.parent().is_some_and(|parent| parent.join("build.sh").is_file());
    if checkout {
        "build the bundled plugins with `bash plugins/build.sh`, or point --plugins at a folder of .wasm files"
    } else {
        "point --plugins, or `plugins_dir` in toolhost.toml, at the folder that holds your .wasm files: \
         `--plugins .` for the folder you are in"
    }
}

/// A plugin's grant notices as load problems.
pub(crate) fn grant_notices(plugin: &Plugin) -> impl Iterator<Item = LoadProblem> + '_ {
    plugin.notices.iter().map(|notice| LoadProblem {
        kind: ProblemKind::Grant,
        paths: vec![plugin.path.clone()],
        reason: notice.clone(),
    })
}

pub fn stem(path: &Path) -> String {
    path.file_stem().map(|stem| stem.to_string_lossy().into_owned()).unwrap_or_default()
}

/// Refuses a config that grants a plugin a folder holding one of `protected`
/// (each with what it is): a plugin that could read or change toolhost's own
/// files (its compile cache, config, lock, keys or credentials) would hold
/// what its grants do not give it. Paths are compared resolved, so no
/// spelling or link of a folder gets past.
fn check_grants(config: &HostConfig, protected: &[(std::path::PathBuf, String)]) -> Result<()> {
    let protected: Vec<(std::path::PathBuf, &str)> =
        protected.iter().map(|(path, what)| (resolved(path), what.as_str())).collect();
    for (plugin, settings) in &config.plugins {
        for dir in &settings.grants.files.dirs {
            let Ok(granted) = std::fs::canonicalize(&dir.host) else { continue };
            if let Some((path, what)) = protected.iter().find(|(path, _)| path.starts_with(&granted)) {
                anyhow::bail!(
                    "`[plugins.{plugin}]` grants the folder {} (as {}), which holds {what} ({}); a plugin there could \
                     read or change it. Grant a folder that does not hold toolhost's own files",
                    dir.host.display(),
                    dir.guest,
                    path.display()
                );
            }
        }
    }
    Ok(())
}

/// `path` with every link and `..` resolved, as far as it exists (a file
/// toolhost has not written yet is resolved through its nearest folder).
fn resolved(path: &Path) -> std::path::PathBuf {
    let absolute = std::path::absolute(path).unwrap_or_else(|_| path.to_owned());
    let mut rest = Vec::new();
    let mut at = absolute.as_path();
    loop {
        if let Ok(real) = std::fs::canonicalize(at) {
            return rest.iter().rev().fold(real, |path, part| path.join(part));
        }
        match (at.parent(), at.file_name()) {
            (Some(parent), Some(name)) => {
                rest.push(name.to_owned());
                at = parent;
            }
            _ => return absolute,
        }
    }
}

#[cfg(test)]
mod tests {
    use super::describe_mismatch;
    use serde_json::{Value, json};

    fn mismatch(schema: &Value, args: Value) -> String {
        let validator = jsonschema::validator_for(schema).unwrap();
        let err = validator.iter_errors(&args).next().expect("the arguments do not match");
        describe_mismatch(&err, schema)
    }

    #[test]
    fn a_value_outside_an_enum_names_every_allowed_value() {
        let schema = json!({
            "type": "object",
            "properties": {
                "unit": { "enum": ["days", "hours", "minutes", "seconds"] },
                // schemars, for an enum whose variants have doc comments; and an Option of it.
                "step": { "$ref": "#/$defs/Step" },
                "maybe": { "anyOf": [{ "$ref": "#/$defs/Step" }, { "type": "null" }] },
            },
            "$defs": {
                "Step": { "oneOf": [
                    { "type": "string", "const": "walk", "description": "Slowly." },
                    { "type": "string", "const": "run", "description": "Fast." },
                ] },
            },
        });
        assert_eq!(
            mismatch(&schema, json!({ "unit": "weeks" })),
            r#"at `/unit`: "weeks" is not one of the allowed values: "days", "hours", "minutes", "seconds""#
        );
        assert_eq!(
            mismatch(&schema, json!({ "step": "dance" })),
            r#"at `/step`: "dance" is not one of the allowed values: "walk", "run""#
        );
        assert_eq!(
            mismatch(&schema, json!({ "step": 7 })),
            r#"at `/step`: 7 is not one of the allowed values: "walk", "run""#
        );
        assert_eq!(
            mismatch(&schema, json!({ "maybe": "fly" })),
            r#"at `/maybe`: "fly" is not one of the allowed values: "walk", "run", null"#
        );
        // Anything else keeps the validator's own words.
        let message = mismatch(&json!({ "type": "object", "required": ["a"] }), json!({}));
        assert!(message.contains("\"a\" is a required property"), "{message}");
    }

    #[test]
    fn a_value_outside_a_variant_names_every_case() {
        // A WIT `variant shipping { standard, express(u32) }` as toolhost's
        // typed functions write it, inline and behind a `$ref`, and optional.
        let shipping = json!({ "oneOf": [
            { "const": "standard" },
            { "type": "object", "properties": { "express": { "type": "integer", "minimum": 0, "maximum": 4294967295u32 } },
              "required": ["express"], "additionalProperties": false },
        ] });
        let schema = json!({
            "type": "object",
            "properties": {
                "shipping": shipping,
                "by_ref": { "$ref": "#/$defs/Shipping" },
                "maybe": { "anyOf": [shipping, { "type": "null" }] },
            },
            "$defs": { "Shipping": shipping },
        });
        let cases = r#"is not one of the allowed values: "standard", {"express": …}"#;
        for (args, at) in [
            (json!({ "shipping": "none" }), "/shipping"),
            (json!({ "shipping": { "expres": 2 } }), "/shipping"),
            (json!({ "shipping": 3 }), "/shipping"),
            (json!({ "by_ref": "none" }), "/by_ref"),
        ] {
            let message = mismatch(&schema, args.clone());
            assert!(message.starts_with(&format!("at `{at}`: ")) && message.ends_with(cases), "{args}: {message}");
            assert!(!message.contains("oneOf"), "{message}");
        }
        assert_eq!(
            mismatch(&schema, json!({ "maybe": "none" })),
            r#"at `/maybe`: "none" is not one of the allowed values: "standard", {"express": …}, null"#
        );
        // The right case with a wrong payload says what is wrong inside it.
        let message = mismatch(&schema, json!({ "shipping": { "express": -1 } }));
        assert!(message.starts_with("at `/shipping/express`: -1 is less than the minimum of 0"), "{message}");
    }
}

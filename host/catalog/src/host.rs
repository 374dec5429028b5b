//! [`Host`]: the plugins loaded from a folder, their tools, and calls to them.

use crate::config::{self, HostConfig};
use crate::plugin::{self, Code, Plugin, Tool};
use crate::result_cache::ResultCache;
use crate::{Caller, Catalog, LoadProblem, ProblemKind, SharedCatalog, Source};
use anyhow::{Context, Result};
use serde_json::Value;
use std::path::Path;
use std::sync::Arc;
use tokio::sync::Semaphore;
use toolhost_grants as grants;
use toolhost_runtime::cache::{Cache, Listing, Origin};
use toolhost_runtime::compiler::Remembered;
use toolhost_runtime::compiler::{self, CompileBounds, Compiler};
use toolhost_runtime::engine::{self, EpochTicker};
use toolhost_runtime::limits::{LimitOverrides, Limits};
use toolhost_runtime::offers::Offers;
use toolhost_runtime::outcome::{CallError, CallReport, ToolOutput};
use toolhost_runtime::sandbox::{Bound, CallHooks, Guest, HostState, Request, Response, Sandbox};
use toolhost_runtime::tls;
use wasmtime::Engine;
use wasmtime::component::Linker;
mod folder;
mod offers;
mod schema;
use folder::check_grants;
pub use folder::{plugin_files, stem};
pub use offers::OfferError;
use schema::{describe_mismatch, plain, structured};

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
    /// The results of cacheable tools (`[cache]`).
    results: crate::result_cache::ResultCache,
    /// How far [`Host::load_dir_progressively`] has come (finished when nothing loads).
    loading: tokio::sync::watch::Sender<Loading>,
}

/// How far a progressive load of the plugins folder has come
/// ([`Host::load_dir_progressively`], what `serve` runs behind its
/// listener). Watched through [`Host::loading`]: every change is one more
/// batch of plugins in the catalog.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Loading {
    /// The plugin files found in the folder.
    pub total: usize,
    /// Those loaded or refused so far.
    pub done: usize,
    /// The names (file stems) of those still loading, in file-name order.
    pub pending: Vec<String>,
    /// When the load started.
    pub started: std::time::Instant,
    /// True once every file is loaded or refused (and before any load starts).
    pub finished: bool,
}

impl Loading {
    fn finished() -> Loading {
        Loading { total: 0, done: 0, pending: Vec::new(), started: std::time::Instant::now(), finished: true }
    }

    /// One line for people: how many plugins are ready, and which still load.
    pub fn describe(&self) -> String {
        if self.finished {
            return format!("{} of {} plugins loaded", self.done, self.total);
        }
        const SHOWN: usize = 6;
        let mut names = self.pending.iter().take(SHOWN).cloned().collect::<Vec<_>>().join(", ");
        if self.pending.len() > SHOWN {
            names.push_str(&format!(" and {} more", self.pending.len() - SHOWN));
        }
        format!(
            "{} of {} plugins ready after {:.0} s; still loading (compiling, cached for next time): {names}",
            self.done,
            self.total,
            self.started.elapsed().as_secs_f64()
        )
    }
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
            engine::build(slots, keep_resident, !config.one_call).context("could not set up the WebAssembly engine")?;
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
        if let Some(file) = &config.audit.checkpoint {
            protected.push((file.clone(), "the `[audit]` checkpoint (where the log's chain should end)".to_owned()));
        }
        check_grants(&config, &protected)?;
        let accountable =
            toolhost_audit::Accountable::new(&config.audit, &config.hooks).map_err(anyhow::Error::msg)?.map(Arc::new);
        let results = crate::result_cache::ResultCache::new(config.cache);
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
            results,
            loading: tokio::sync::watch::Sender::new(Loading::finished()),
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
            let missing = self.missing_plugins(dir, parts);
            parts.problems.extend(missing);
            true
        });
        Ok(())
    }

    /// [`Host::load_dir`], publishing the plugins as they become ready: each
    /// batch (what finished within 50 ms of the first of it) is one catalog
    /// swap, so MCP clients hear `list_changed` while the rest still
    /// compile. [`Host::loading`] says how far it has come. A name offered by
    /// two plugins is withdrawn when the second arrives (the one naming
    /// rule, [`Catalog::build`]). Cancel-safe: dropping the future leaves
    /// what was published, and [`Host::loading`] says finished.
    pub async fn load_dir_progressively(&self, dir: &Path) -> Result<()> {
        use futures_util::StreamExt as _;
        let paths = self.begin_load(dir)?;
        // Said finished however this ends (a cancelled load included), so nobody waits on it.
        struct Finish<'a>(&'a tokio::sync::watch::Sender<Loading>);
        impl Drop for Finish<'_> {
            fn drop(&mut self) {
                self.0.send_if_modified(|loading| !std::mem::replace(&mut loading.finished, true));
            }
        }
        let _finish = Finish(&self.loading);
        let mut pending: futures_util::stream::FuturesUnordered<_> =
            paths.iter().map(|path| async move { (path, self.load_file(path).await) }).collect();
        let mut compiled = false;
        while let Some(first) = pending.next().await {
            let mut batch = vec![first];
            let gather = tokio::time::sleep(std::time::Duration::from_millis(50));
            tokio::pin!(gather);
            loop {
                tokio::select! {
                    next = pending.next() => match next {
                        Some(done) => batch.push(done),
                        None => break,
                    },
                    () = &mut gather => break,
                }
            }
            compiled |= batch.iter().any(|(_, result)| result.as_ref().is_ok_and(|p| p.origin == Origin::Compiled));
            let names: Vec<String> = batch.iter().map(|(path, _)| stem(path)).collect();
            self.catalog.update(|parts| {
                for (path, result) in batch {
                    match result {
                        Ok(plugin) => {
                            parts.problems.extend(grant_notices(&plugin));
                            let at = parts.plugins.partition_point(|loaded| loaded.path < plugin.path);
                            parts.plugins.insert(at, Arc::new(plugin));
                        }
                        Err(reason) => {
                            tracing::debug!(path = %path.display(), "skipped plugin: {reason}");
                            parts.problems.push(LoadProblem {
                                kind: ProblemKind::Plugin,
                                paths: vec![path.clone()],
                                reason,
                            });
                        }
                    }
                }
                true
            });
            self.loading.send_modify(|loading| {
                loading.done += names.len();
                loading.pending.retain(|name| !names.contains(name));
            });
        }
        if compiled {
            toolhost_runtime::cache::release_freed_memory();
        }
        self.catalog.update(|parts| {
            let missing = self.missing_plugins(dir, parts);
            let any = !missing.is_empty();
            parts.problems.extend(missing);
            any
        });
        Ok(())
    }

    /// The config's plugin settings that name no file in `dir` (nor a file
    /// that failed), as problems.
    fn missing_plugins(&self, dir: &Path, parts: &crate::Parts) -> Vec<LoadProblem> {
        self.config
            .plugins
            .keys()
            .filter(|name| {
                !parts.plugins.iter().any(|plugin| &*plugin.name == *name)
                    && !parts.problems.iter().any(|problem| problem.paths.iter().any(|path| stem(path) == **name))
            })
            .map(|name| LoadProblem {
                kind: ProblemKind::Config,
                paths: vec![dir.join(format!("{name}.wasm"))],
                reason: format!("the config has settings for plugin `{name}`, but there is no such file"),
            })
            .collect()
    }

    /// Checks what a load of `dir` checks before loading anything (the
    /// folder can be read, no grant reaches its lock file) and says from now
    /// on that its load is under way ([`Host::loading`]), so that requests
    /// wait for it before [`Host::load_dir_progressively`] has even begun.
    /// `serve` calls it before it answers anyone, so that such a folder also
    /// stops it at once, as it stops the other commands. Its plugin files.
    pub fn begin_load(&self, dir: &Path) -> Result<Vec<std::path::PathBuf>> {
        let lock = dir.join("toolhost.lock");
        if lock.exists() {
            check_grants(&self.config, &[(lock, "toolhost.lock (what was pulled, and who signed it)".to_owned())])?;
        }
        let paths = plugin_files(dir)?;
        self.loading.send_replace(Loading {
            total: paths.len(),
            done: 0,
            pending: paths.iter().map(|path| stem(path)).collect(),
            started: std::time::Instant::now(),
            finished: false,
        });
        Ok(paths)
    }

    /// How far a progressive load has come ([`Host::load_dir_progressively`]);
    /// `finished` when none runs.
    pub fn loading(&self) -> tokio::sync::watch::Receiver<Loading> {
        self.loading.subscribe()
    }

    /// True while [`Host::load_dir_progressively`] is still loading files.
    pub fn is_loading(&self) -> bool {
        !self.loading.borrow().finished
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
        let mut tools = plugin::apply_manifest(loaded.tools, review.asks.as_ref(), &mut review.notices)?;
        if self.results.enabled() {
            let operator = self.config.plugins.get(&*name).and_then(|settings| settings.cache);
            for tool in &mut tools {
                let ttl = self.results.default_ttl();
                tool.cache_ttl =
                    plugin::cache_ttl(tool, review.asks.as_ref(), &grants, operator, ttl, &mut review.notices);
            }
        }
        let signer = plugin::pulled_signer(path, &name, &loaded.sha256);
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
            load: plugin::next_load(),
            signer,
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

    /// With `[audit]` logging: the records the writer dropped so far (it was behind).
    pub fn audit_lost(&self) -> Option<u64> {
        self.accountable.as_ref().filter(|accountable| accountable.logs()).map(|accountable| accountable.lost())
    }

    /// Every `[quotas]` entry and its use in this process now.
    pub fn quota_usage(&self) -> Vec<crate::quota::QuotaUse> {
        self.quotas.usage()
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

    /// Whether calls are written to an audit log (`[audit]`): front ends
    /// then say how they hand a call's result over
    /// ([`CallHooks::result_shape`]), for its line's digest.
    pub fn audit_logs(&self) -> bool {
        self.accountable.as_ref().is_some_and(|accountable| accountable.logs())
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
                    self.call_spanned(catalog, tool, arguments, overrides, hooks, caller),
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
        caller: &Caller,
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
                self.call_plugin(plugin.clone(), *index, arguments, overrides, hooks, caller).await
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
        caller: &Caller,
    ) -> CallReport {
        let started = std::time::Instant::now();
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
            // The message quotes the argument it refuses, which may hold a secret's value.
            let message = plugin.code.redactor().scrub(describe_mismatch(&err, &plugin.tools[index].schema));
            let error = CallError::InvalidArguments(message);
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
        let cached = called.cache_ttl.and_then(|ttl| {
            let requestor = requestor(&plugin, caller)?;
            Some((ttl, ResultCache::key(plugin.load, &called.export, &requestor, &value)))
        });
        if let Some((_, key)) = &cached
            && let Some(hit) = self.results.get(key, &limits)
        {
            let mut report = CallReport::rejected(tool, plugin_name, CallError::Host(String::new()));
            report.outcome = Ok(hit.output);
            report.usage.wall = started.elapsed();
            report.cached = Some(hit.age);
            return report;
        }
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
        if let (Some((ttl, key)), Ok(output)) = (cached, &outcome) {
            self.results.put(key, output, ttl);
        }
        CallReport {
            tool: tool.to_owned(),
            plugin: plugin_name,
            outcome,
            usage: invocation.usage,
            stdout: invocation.stdout,
            stderr: invocation.stderr,
            logs: invocation.logs,
            refused: invocation.refused,
            effects: invocation.effects,
            receipt: None,
            cached: None,
        }
    }

    /// How often results were given again from `[cache]`, and what it holds.
    pub fn cache_stats(&self) -> crate::result_cache::CacheStats {
        self.results.stats()
    }
}

/// Whose results a call of `plugin` may share: everyone's (`""`) for a
/// plugin without credentials; for one with credentials, whose results may
/// depend on who asks, the caller's OAuth subject, else its client's name,
/// and no one's (nothing cached) when neither is known.
fn requestor(plugin: &Plugin, caller: &Caller) -> Option<String> {
    if plugin.grants.credentials.is_empty() {
        return Some(String::new());
    }
    match (&caller.subject, &caller.client) {
        (Some(subject), _) => Some(format!("subject:{subject}")),
        (None, Some(client)) => Some(format!("client:{client}")),
        (None, None) => None,
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

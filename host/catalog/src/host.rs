//! [`Host`]: the plugins loaded from a folder, their tools, and calls to them.

use crate::config::{self, HostConfig};
use crate::plugin::Plugin;
use crate::{Catalog, LoadProblem, ProblemKind, SharedCatalog};
use anyhow::{Context, Result};
use std::sync::Arc;
use tokio::sync::Semaphore;
use toolhost_grants as grants;
use toolhost_runtime::cache::Cache;
use toolhost_runtime::compiler::{self, CompileBounds, Compiler};
use toolhost_runtime::engine::{self, EpochTicker};
use toolhost_runtime::limits::Limits;
use toolhost_runtime::sandbox::{Bound, HostState};
use toolhost_runtime::tls;
use wasmtime::Engine;
use wasmtime::component::Linker;
mod calls;
mod folder;
mod load;
mod offers;
mod schema;
use folder::check_grants;
pub use folder::{plugin_files, stem};
pub use load::Loading;
pub use offers::OfferError;

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
    /// The engine of components with the synchronous ABI and small memories.
    lean: Flavored,
    /// The engine of every other component (and of `inspect`, publishing).
    full: Flavored,
    pagemap: bool,
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

/// One of a host's engines (see [`engine::Flavor`]), with the linker and
/// the compile cache of the plugins that run in it.
#[derive(Clone)]
pub(crate) struct Flavored {
    pub(crate) engine: Engine,
    pub(crate) linker: Arc<Linker<HostState>>,
    /// Artifacts and listings for this engine (the same folder for both:
    /// the engines' compatibility hashes keep their files apart).
    pub(crate) cache: Option<Cache>,
}

impl Flavored {
    fn new(engine: Engine, cache_dir: Option<&std::path::Path>) -> Result<Flavored> {
        let linker =
            Arc::new(toolhost_runtime::contract::linker(&engine).context("could not set up the host imports")?);
        let cache = cache_dir.map(|dir| Cache::new(dir.to_owned(), &engine));
        Ok(Flavored { engine, linker, cache })
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
        let engines =
            engine::build(slots, keep_resident, !config.one_call).context("could not set up the WebAssembly engine")?;
        let cache_dir = config.cache_dir.clone().or_else(Cache::default_dir);
        let lean = Flavored::new(engines.lean.clone(), cache_dir.as_deref())?;
        let full = Flavored::new(engines.full.clone(), cache_dir.as_deref())?;
        let compiler = Arc::new(Compiler::new(CompileBounds {
            timeout: config.compile_timeout.unwrap_or(compiler::DEFAULT_COMPILE_TIMEOUT),
            memory: config.compile_memory.unwrap_or(compiler::DEFAULT_COMPILE_MEMORY),
        }));
        let ticker =
            Arc::new(EpochTicker::start(&[engines.lean, engines.full]).context("could not start the timeout clock")?);
        let quotas = crate::quota::Quotas::new(&config.quotas);
        let mut protected = config.protected.clone();
        for path in full.cache.iter().flat_map(Cache::protected) {
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
            lean,
            full,
            pagemap: engines.pagemap,
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
        self.lean.cache = None;
        self.full.cache = None;
        self
    }

    /// The wasmtime engine that runs any component (the one `inspect` and
    /// publishing compile with). Components of the synchronous ABI with
    /// small memories run in a second, lean engine ([`engine::Flavor`]).
    pub fn engine(&self) -> &Engine {
        &self.full.engine
    }

    pub(crate) fn flavored(&self, flavor: engine::Flavor) -> &Flavored {
        match flavor {
            engine::Flavor::Lean => &self.lean,
            engine::Flavor::Full => &self.full,
        }
    }

    pub(crate) fn linker(&self) -> &Linker<HostState> {
        &self.full.linker
    }

    /// What every call of the plugin `name` shares: `granted`, this host's
    /// epoch clock and its TLS settings for plugin HTTPS.
    pub(crate) fn bound(&self, name: &Arc<str>, granted: Arc<grants::Granted>) -> Bound {
        Bound { plugin: name.clone(), granted, clock: self.ticker.clone(), tls: self.tls.clone() }
    }

    /// Whether the full engine's instance pool resets only the pages a call
    /// wrote (the kernel has `PAGEMAP_SCAN`, Linux 6.7 and later), or falls
    /// back to resetting a fixed prefix of each memory.
    pub fn resets_dirty_pages_only(&self) -> bool {
        self.pagemap
    }

    /// The compile cache of the full engine, if any (the lean engine's
    /// files are in the same folder).
    pub fn cache(&self) -> Option<&Cache> {
        self.full.cache.as_ref()
    }

    /// What compiles plugins, within `compile_timeout` and `compile_memory`.
    pub fn compiler(&self) -> &Arc<Compiler> {
        &self.compiler
    }

    /// The config this host was made with.
    pub fn config(&self) -> &HostConfig {
        &self.config
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

    /// How often results were given again from `[cache]`, and what it holds.
    pub fn cache_stats(&self) -> crate::result_cache::CacheStats {
        self.results.stats()
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

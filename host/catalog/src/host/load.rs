//! Loading plugins into the host: a folder at once or progressively
//! (`Loading`, watched), each file's code from the cache or compiled in a
//! bounded worker, its tools listed and checked, what it lacks said as load
//! problems.

use super::folder::check_grants;
use super::folder::{plugin_files, stem};
use super::{Flavored, Host, grant_notices};
use crate::plugin::{self, Code, Plugin, Tool};
use crate::{LoadProblem, ProblemKind};
use anyhow::Result;
use std::path::Path;
use std::sync::Arc;
use toolhost_grants as grants;
use toolhost_runtime::cache::{Listing, Origin};
use toolhost_runtime::compiler::Remembered;
use toolhost_runtime::engine::Flavor;
use toolhost_runtime::limits::Limits;
use toolhost_runtime::offers::Offers;
use toolhost_runtime::sandbox::{Guest, Sandbox};

impl Host {
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
            described: std::sync::OnceLock::new(),
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
        let cache = self.full.cache.as_ref();
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
        // A file listed before is listed in the cache of the engine it runs in.
        let listed = [Flavor::Lean, Flavor::Full].into_iter().find_map(|flavor| {
            let listing = self.flavored(flavor).cache.as_ref()?.listing(&sha256)?;
            Some((flavor, plugin::tools_of(listing, limits, &self.compiler.bounds())?))
        });
        if let Some((flavor, listed)) = listed {
            let (contract, tools, notes, offers) = listed?;
            let bound = self.bound(name, granted.clone());
            let flavored = self.flavored(flavor);
            let code =
                Code::lazy(&flavored.linker, bound, flavored.cache.as_ref(), &self.compiler, path, &sha256, contract);
            let size = metadata.len();
            return Ok(Loaded { size, contract, tools, notes, offers, origin: Origin::Cached, code, sha256 });
        }
        // Not listed yet (or not under these limits): load it for real.
        let wasm = match bytes {
            Some(bytes) => plugin::WasmFile { bytes: bytes.into(), sha256 },
            None => plugin::read(path)?,
        };
        let (size, sha256) = (wasm.bytes.len() as u64, wasm.sha256.clone());
        let mut flavored = self.flavored(Flavor::of_wasm(&wasm.bytes));
        let mut fresh = self.load_fresh(name, flavored, &wasm, limits).await;
        if matches!(fresh, Err((_, Remembered::Always))) && Flavor::of_engine(&flavored.engine) == Flavor::Lean {
            // What the lean engine cannot take for a reason of the bytes (a
            // feature the scan does not know of) may run in the full one;
            // when it cannot either, the lean engine's reason stands.
            let full = self.load_fresh(name, &self.full, &wasm, limits).await;
            if full.is_ok() {
                (flavored, fresh) = (&self.full, full);
            }
        }
        let cache = flavored.cache.as_ref();
        let lazy = |contract| {
            let bound = self.bound(name, granted.clone());
            Code::lazy(&flavored.linker, bound, cache, &self.compiler, path, &sha256, contract)
        };
        match fresh {
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
        flavored: &Flavored,
        wasm: &plugin::WasmFile,
        limits: &Limits,
    ) -> Result<Fresh, (String, Remembered)> {
        let fixed = |reason| (reason, Remembered::Always);
        plugin::check_header(&wasm.bytes).map_err(fixed)?;
        let (component, origin) =
            plugin::compile(&flavored.engine, flavored.cache.as_ref(), &self.compiler, wasm).await.map_err(|err| {
                let remembered = err.remembered(&self.compiler.bounds());
                (err.to_string(), remembered)
            })?;
        let contract = toolhost_runtime::contract::detect(&flavored.engine, &component).map_err(fixed)?;
        let guest = toolhost_runtime::contract::prepare(&flavored.linker, &component, contract).map_err(fixed)?;
        if !contract.lists_by_running() {
            // The tools are the functions' types: nothing runs to list them.
            let (listed, notes) = plugin::typed_listing(&flavored.engine, &component, &wasm.bytes);
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
}

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
    pub(super) fn finished() -> Loading {
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

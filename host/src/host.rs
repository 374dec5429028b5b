//! [`Host`]: the plugins loaded from a folder, their tools, and calls to them.

use crate::config::{self, Config};
use crate::grants;
use crate::plugin::{self, Code, Plugin, Tool};
use crate::runtime::cache::{Cache, Listing, Origin};
use crate::runtime::engine::{self, EpochTicker};
use crate::runtime::limits::{ByteSize, LimitOverrides, Limits};
use crate::runtime::outcome::{CallError, CallReport, ToolOutput};
use crate::runtime::sandbox::{self, HostState, Request, Response, WitCallError, WitToolOutput};
use anyhow::{Context, Result};
use serde_json::Value;
use std::collections::{BTreeMap, HashMap};
use std::fmt;
use std::path::{Path, PathBuf};
use std::sync::Arc;
use tokio::sync::Semaphore;
use wasmtime::Engine;
use wasmtime::component::Linker;

/// A plugin file that could not be loaded (or a tool that was dropped), and why.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct LoadProblem {
    /// What kind of problem it is.
    pub kind: ProblemKind,
    /// The file (or files) concerned.
    pub paths: Vec<PathBuf>,
    /// What is wrong, and what to do about it.
    pub reason: String,
}

/// What a [`LoadProblem`] is about.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum ProblemKind {
    /// The file is not a loadable plugin; none of its tools are loaded.
    Plugin,
    /// Two plugins offer the same tool name; that tool is loaded from neither.
    Collision,
    /// The config names a plugin that has no file.
    Config,
    /// The plugin loaded, but something it asks for is not granted, or a grant
    /// cannot be honoured (a missing folder, an unset variable), or its
    /// manifest is malformed. A notice, not a failure: what is not granted is denied.
    Grant,
}

impl fmt::Display for LoadProblem {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let paths: Vec<String> = self.paths.iter().map(|path| path.display().to_string()).collect();
        write!(f, "{}: {}", paths.join(" and "), self.reason)
    }
}

/// What loading a file's code came to.
struct Loaded {
    sha256: String,
    size: u64,
    contract: &'static str,
    tools: Vec<Tool>,
    origin: Origin,
    code: Code,
}

/// Where a tool lives.
#[derive(Clone)]
struct ToolEntry {
    plugin: Arc<Plugin>,
    index: usize,
}

/// Loads plugins and runs their tools, each call in a fresh sandboxed instance.
///
/// ```no_run
/// # async fn demo() -> anyhow::Result<()> {
/// let mut host = toolhost::Host::new(toolhost::Config::default())?;
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
    config: Config,
    plugins: Vec<Arc<Plugin>>,
    tools: HashMap<String, ToolEntry>,
    problems: Vec<LoadProblem>,
    permits: Arc<Semaphore>,
    ticker: EpochTicker,
}

impl Host {
    /// A host with no plugins yet, configured by `config`. Compiled plugins
    /// are cached in `config.cache_dir`, else [`Cache::default_dir`].
    pub fn new(config: Config) -> Result<Host> {
        let concurrency = config.max_concurrent_calls.unwrap_or(config::DEFAULT_MAX_CONCURRENT_CALLS);
        let slots = u32::try_from(concurrency).context("`max_concurrent_calls` is too large")?;
        let (engine, pagemap) = engine::build(slots).context("could not set up the WebAssembly engine")?;
        let linker = Arc::new(sandbox::linker(&engine).context("could not set up the host imports")?);
        let cache = config.cache_dir.clone().or_else(Cache::default_dir).map(|dir| Cache::new(dir, &engine));
        let ticker = EpochTicker::start(&engine).context("could not start the timeout clock")?;
        Ok(Host {
            engine,
            pagemap,
            linker,
            cache,
            config,
            plugins: Vec::new(),
            tools: HashMap::new(),
            problems: Vec::new(),
            permits: Arc::new(Semaphore::new(concurrency)),
            ticker,
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

    pub(crate) fn clock(&self) -> &EpochTicker {
        &self.ticker
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

    /// The config this host was made with.
    pub fn config(&self) -> &Config {
        &self.config
    }

    /// Loads every `*.wasm` file in `dir`. A file that cannot be loaded is
    /// recorded in [`Host::problems`] and the others still load; the error
    /// case is only for a folder that cannot be read.
    pub async fn load_dir(&mut self, dir: &Path) -> Result<()> {
        let entries = std::fs::read_dir(dir).with_context(|| {
            format!(
                "could not read the plugins folder {} (build the bundled plugins with \
                 `bash plugins/build.sh`, or point --plugins at a folder of .wasm files)",
                dir.display()
            )
        })?;
        let mut paths: Vec<PathBuf> = entries
            .filter_map(|entry| entry.ok().map(|entry| entry.path()))
            .filter(|path| path.extension().is_some_and(|ext| ext == "wasm") && path.is_file())
            .collect();
        paths.sort();
        // Concurrently: on a cold start the files compile in parallel, and a
        // plugin slow to list its tools does not hold up the others.
        let loaded = futures_util::future::join_all(paths.iter().map(|path| self.load_file(path))).await;
        for (path, loaded) in paths.into_iter().zip(loaded) {
            match loaded {
                Ok(plugin) => {
                    for notice in &plugin.notices {
                        self.problems.push(LoadProblem {
                            kind: ProblemKind::Grant,
                            paths: vec![path.clone()],
                            reason: notice.clone(),
                        });
                    }
                    self.plugins.push(Arc::new(plugin));
                }
                Err(reason) => {
                    tracing::debug!(path = %path.display(), "skipped plugin: {reason}");
                    self.problems.push(LoadProblem { kind: ProblemKind::Plugin, paths: vec![path], reason });
                }
            }
        }
        for name in self.config.plugins.keys() {
            if !self.plugins.iter().any(|plugin| &*plugin.name == name)
                && !self.problems.iter().any(|problem| problem.paths.iter().any(|path| stem(path) == *name))
            {
                self.problems.push(LoadProblem {
                    kind: ProblemKind::Config,
                    paths: vec![dir.join(format!("{name}.wasm"))],
                    reason: format!("the config has settings for plugin `{name}`, but there is no such file"),
                });
            }
        }
        self.index_tools();
        Ok(())
    }

    /// Loads one plugin file (without adding it to this host), with its
    /// manifest and grants reviewed. A file seen before (same bytes, same
    /// engine) is taken from the cache's [`Listing`] without instantiating
    /// or even deserializing it; its code loads on the first call.
    pub async fn load_file(&self, path: &Path) -> Result<Plugin, String> {
        let name: Arc<str> = stem(path).into();
        let limits = self.limits_for(&name);
        let loaded = self.load_code(&name, path, &limits).await?;
        let grants = self.config.grants_for(&name);
        let review = grants::review(&name, path, &grants, |key| std::env::var(key).ok());
        Ok(Plugin {
            name,
            path: path.to_owned(),
            sha256: loaded.sha256,
            size: loaded.size,
            contract: loaded.contract,
            origin: loaded.origin,
            limits,
            tools: loaded.tools,
            asks: review.asks,
            grants,
            notices: review.notices,
            granted: review.granted,
            code: loaded.code,
        })
    }

    async fn load_code(&self, name: &Arc<str>, path: &Path, limits: &Limits) -> Result<Loaded, String> {
        use std::io::Read;
        let file = crate::readfile::open_regular(path).map_err(|err| format!("could not read the file: {err}"))?;
        let metadata = file.metadata().map_err(|err| format!("could not read the file: {err}"))?;
        let cache = self.cache.as_ref();
        let known = cache.and_then(|cache| cache.known_sha256(&metadata));
        let (sha256, bytes) = match known {
            Some(sha256) => (sha256, None),
            None => {
                let limit = crate::readfile::limits::WASM;
                let mut bytes = Vec::new();
                file.take(limit + 1)
                    .read_to_end(&mut bytes)
                    .map_err(|err| format!("could not read the file: {err}"))?;
                if bytes.len() as u64 > limit {
                    return Err(format!("could not read the file: it is larger than {}", ByteSize(limit)));
                }
                let sha256 = crate::runtime::cache::sha256_hex(&bytes);
                if let Some(cache) = cache {
                    cache.remember_sha256(&metadata, &sha256);
                }
                (sha256, Some(bytes))
            }
        };
        let listed =
            cache.and_then(|cache| cache.listing(&sha256)).and_then(|listing| plugin::tools_of(listing, limits));
        if let Some(listed) = listed {
            let (contract, tools) = listed?;
            let code = Code::lazy(&self.engine, &self.linker, cache, path, &sha256, contract);
            return Ok(Loaded { size: metadata.len(), contract, tools, origin: Origin::Cached, code, sha256 });
        }
        // Not listed yet (or not under these limits): load it for real.
        let wasm = match bytes {
            Some(bytes) => plugin::WasmFile { bytes: bytes.into(), sha256 },
            None => plugin::read(path)?,
        };
        let (size, sha256) = (wasm.bytes.len() as u64, wasm.sha256.clone());
        let lazy = |contract| Code::lazy(&self.engine, &self.linker, cache, path, &sha256, contract);
        match self.load_fresh(name, &wasm, limits).await {
            Ok((contract, listed, sandbox, origin)) => {
                if let Some(cache) = cache {
                    cache.store_listing(
                        &sha256,
                        &Listing::Tools { contract: contract.to_owned(), tools: listed.clone() },
                    );
                }
                let tools = plugin::check_tools(listed, limits)?;
                Ok(Loaded { size, contract, tools, origin, code: lazy(contract).with(sandbox), sha256 })
            }
            Err((reason, under_limits)) => {
                if let Some(cache) = cache {
                    let limits = under_limits.then(|| format!("{limits:?}"));
                    cache.store_listing(&sha256, &Listing::Failed { reason: reason.clone(), limits });
                }
                Err(reason)
            }
        }
    }

    /// Compiles (through the artifact cache), links and lists the tools of
    /// `wasm`. A failure says why, and whether it happened under the limits
    /// (listing the tools) rather than in the bytes themselves.
    async fn load_fresh(
        &self,
        name: &Arc<str>,
        wasm: &plugin::WasmFile,
        limits: &Limits,
    ) -> Result<(&'static str, Vec<crate::runtime::cache::ListedTool>, sandbox::Sandbox, Origin), (String, bool)> {
        let fixed = |reason| (reason, false);
        plugin::check_header(&wasm.bytes).map_err(fixed)?;
        let (component, origin) = plugin::compile(&self.engine, self.cache.as_ref(), wasm).await.map_err(fixed)?;
        let contract = plugin::contract_of(&self.engine, &component).map_err(fixed)?;
        let sandbox = plugin::prepare(&self.linker, &component, contract).map_err(fixed)?;
        let listed = {
            let _permit = self.permits.acquire().await;
            plugin::call_list_tools(&sandbox, &self.ticker, name, limits).await.map_err(|reason| (reason, true))?
        };
        Ok((contract, listed, sandbox, origin))
    }

    /// The limits a plugin named `name` runs under, from the config.
    pub fn limits_for(&self, name: &str) -> Limits {
        Limits::default().with(&self.config.limits_for(name))
    }

    /// Rebuilds the tool index. A name offered by two plugins is dropped from
    /// both and reported: neither silently wins.
    fn index_tools(&mut self) {
        let mut offered: BTreeMap<&str, Vec<ToolEntry>> = BTreeMap::new();
        for plugin in &self.plugins {
            for (index, tool) in plugin.tools.iter().enumerate() {
                offered.entry(&tool.name).or_default().push(ToolEntry { plugin: plugin.clone(), index });
            }
        }
        let mut tools = HashMap::new();
        let mut problems = Vec::new();
        for (name, mut entries) in offered {
            if entries.len() == 1 {
                tools.insert(name.to_owned(), entries.remove(0));
            } else {
                problems.push(LoadProblem {
                    kind: ProblemKind::Collision,
                    paths: entries.iter().map(|entry| entry.plugin.path.clone()).collect(),
                    reason: format!("both offer a tool named `{name}`, so neither is loaded: remove or rename one"),
                });
            }
        }
        self.tools = tools;
        self.problems.retain(|problem| problem.kind != ProblemKind::Collision);
        self.problems.extend(problems);
    }

    /// What could not be loaded.
    pub fn problems(&self) -> &[LoadProblem] {
        &self.problems
    }

    /// The loaded plugins, in file-name order.
    pub fn plugins(&self) -> &[Arc<Plugin>] {
        &self.plugins
    }

    /// Every callable tool with its plugin, sorted by name.
    pub fn tools(&self) -> Vec<(&Tool, &Plugin)> {
        let mut tools: Vec<(&Tool, &Plugin)> =
            self.tools.values().map(|entry| (&entry.plugin.tools[entry.index], &*entry.plugin)).collect();
        tools.sort_by(|a, b| a.0.name.cmp(&b.0.name));
        tools
    }

    /// The tool named `name` and its plugin, if loaded.
    pub fn find(&self, name: &str) -> Option<(&Tool, &Plugin)> {
        self.tools.get(name).map(|entry| (&entry.plugin.tools[entry.index], &*entry.plugin))
    }

    /// Calls `tool` with `arguments` (a JSON object as text; blank means `{}`)
    /// in a fresh instance, under the plugin's limits with `overrides` on top.
    /// Waits for a free slot when `max_concurrent_calls` calls are running.
    pub async fn call(&self, tool: &str, arguments: &str, overrides: &LimitOverrides) -> CallReport {
        let Some(entry) = self.tools.get(tool) else {
            let error = CallError::UnknownTool { name: tool.to_owned(), suggestion: self.similar_tool(tool) };
            return CallReport::rejected(tool, None, error);
        };
        let plugin = &entry.plugin;
        let plugin_name = Some(plugin.name.to_string());
        let arguments = if arguments.trim().is_empty() { "{}" } else { arguments };
        let value: Value = match serde_json::from_str(arguments) {
            Ok(value) => value,
            Err(err) => {
                let error = CallError::InvalidArguments(format!("the arguments are not valid JSON: {err}"));
                return CallReport::rejected(tool, plugin_name, error);
            }
        };
        let validator = &plugin.tools[entry.index].validator;
        // `is_valid` stops at the first mismatch without building errors;
        // only a rejected call pays for the message.
        if !validator.is_valid(&value)
            && let Some(err) = validator.iter_errors(&value).next()
        {
            let error = CallError::InvalidArguments(describe_mismatch(&err));
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
        let invocation = {
            let _permit = self.permits.acquire().await;
            sandbox
                .invoke(
                    &self.ticker,
                    &plugin.name,
                    &limits,
                    &plugin.granted,
                    Request::CallTool { name: tool, arguments },
                )
                .await
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
        let outcome = invocation.result.and_then(|response| match response {
            Response::Called(Ok(output)) => {
                let output = match output {
                    WitToolOutput::Text(text) => ToolOutput::Text(text),
                    WitToolOutput::Json(json) => ToolOutput::Json(json),
                };
                within_output_limit(output.as_str(), &limits)?;
                Ok(output)
            }
            Response::Called(Err(WitCallError::InvalidArguments(message))) => {
                within_output_limit(&message, &limits)?;
                Err(CallError::InvalidArguments(message))
            }
            Response::Called(Err(WitCallError::Failed(message))) => {
                within_output_limit(&message, &limits)?;
                Err(CallError::ToolFailed(message))
            }
            Response::Tools(_) => Err(CallError::Host("the plugin answered the wrong request".to_owned())),
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

    fn similar_tool(&self, wanted: &str) -> Option<String> {
        let wanted_lower = wanted.to_ascii_lowercase();
        self.tools
            .keys()
            .map(|name| (edit_distance(&wanted_lower, &name.to_ascii_lowercase()), name))
            .filter(|(distance, name)| *distance <= 2.max(name.len() / 4))
            .min()
            .map(|(_, name)| name.clone())
    }
}

fn within_output_limit(text: &str, limits: &Limits) -> Result<(), CallError> {
    if text.len() as u64 > limits.output.bytes() {
        return Err(CallError::OutputTooLarge { size: ByteSize(text.len() as u64), limit: limits.output });
    }
    Ok(())
}

/// "at `/path`: what is wrong", cut to a readable length.
fn describe_mismatch(err: &jsonschema::ValidationError<'_>) -> String {
    let path = err.instance_path().as_str();
    let mut what = err.to_string();
    if what.len() > 300 {
        let cut = what.floor_char_boundary(300);
        what.truncate(cut);
        what.push('…');
    }
    if path.is_empty() { format!("{what} (at the top level of the arguments)") } else { format!("at `{path}`: {what}") }
}

fn stem(path: &Path) -> String {
    path.file_stem().map(|stem| stem.to_string_lossy().into_owned()).unwrap_or_default()
}

fn edit_distance(a: &str, b: &str) -> usize {
    let b: Vec<char> = b.chars().collect();
    let mut row: Vec<usize> = (0..=b.len()).collect();
    for (i, ca) in a.chars().enumerate() {
        let mut previous = row[0];
        row[0] = i + 1;
        for (j, cb) in b.iter().enumerate() {
            let substitution = previous + usize::from(ca != *cb);
            previous = row[j + 1];
            row[j + 1] = substitution.min(row[j] + 1).min(previous + 1);
        }
    }
    row[b.len()]
}

#[cfg(test)]
mod tests {
    use super::edit_distance;

    #[test]
    fn edit_distance_counts_edits() {
        assert_eq!(edit_distance("sha256", "sha256"), 0);
        assert_eq!(edit_distance("sha265", "sha256"), 2);
        assert_eq!(edit_distance("echo", "eco"), 1);
        assert_eq!(edit_distance("", "abc"), 3);
    }
}

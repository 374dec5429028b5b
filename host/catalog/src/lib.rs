//! The tool catalog: every tool toolhost offers, from every source, as one
//! immutable snapshot that is replaced whole.
//!
//! A [`Catalog`] is built once (at load, and again on each hot reload) from
//! the loaded plugins and any other source's entries, applying the one
//! naming rule: a name offered by two sources is loaded from neither and
//! reported as a [`ProblemKind::Collision`]. [`SharedCatalog`] holds the
//! current snapshot; a reader clones its `Arc` (a lock held only for the
//! clone) and keeps using that snapshot, so a call, a `tools/list` or an agent
//! turn sees one consistent set of tools even while a reload swaps in the
//! next one, and a call in flight keeps its `Arc<Plugin>` alive after its
//! plugin was removed or replaced. Every swap bumps the generation, which is
//! published on a `watch` channel ([`SharedCatalog::subscribe`]) so MCP
//! sessions and the agent loop learn that the list changed.
//!
//! Two sources: WebAssembly plugins ([`Source::Plugin`]) and the tools of
//! external MCP servers ([`Source::Mcp`], published by [`servers`] as
//! `Parts::external`), each with its own call path returning a `CallReport`;
//! `tools`, `call`, `run`, `chat` and `serve` only use [`Entry`]'s accessors
//! and [`Host::call_in`].
//!
//! The crate also holds what fills and calls the catalog: [`Host`] (loading a
//! folder, calling a tool), [`plugin`] (the load stages of one file),
//! [`servers`] (external MCP servers as a source), [`reload`] (hot reload),
//! [`inspect`] (loading step by step), [`policy`] (`[approvals]`), [`quota`]
//! (`[quotas]`: rate limits and concurrency caps) and
//! [`result_cache`] (the results of cacheable tools, given again) and
//! [`config`] (the settings all of these read). Above it sit the MCP server,
//! the agent and the registry client; below it the runtime, the grants and
//! the MCP client.

mod accountable;
pub mod config;
pub mod host;
pub mod inspect;
pub mod plugin;
pub mod policy;
mod problems;
pub mod quota;
pub mod reload;
pub mod result_cache;
pub mod servers;

pub use config::{HostConfig, PluginSettings};
pub use host::{Host, Loading};
pub use problems::{LoadProblem, ProblemKind};
pub use result_cache::{CacheConfig, CacheStats};
pub use toolhost_audit::Caller;

use crate::plugin::{Plugin, Tool};
use serde_json::Value;
use std::collections::{BTreeMap, HashMap};
use std::path::PathBuf;
use std::sync::{Arc, Mutex, RwLock};
use tokio::sync::watch;
use toolhost_grants::Grants;
use toolhost_grants::manifest::HintsTable;
use toolhost_mcp_client::{McpServer, McpTool};

/// Where a catalog entry's tool comes from, and so how it is called.
#[derive(Clone)]
#[non_exhaustive]
pub enum Source {
    /// Tool number `index` of a loaded WebAssembly plugin.
    Plugin {
        /// The plugin (kept alive by every snapshot and call that holds it).
        plugin: Arc<Plugin>,
        /// The tool's position in `plugin.tools`.
        index: usize,
    },
    /// A tool of an external MCP server (not sandboxed: it runs wherever the server does).
    Mcp {
        /// The server (kept alive, and so its connection, by every snapshot holding it).
        server: Arc<McpServer>,
        /// The tool, as the server listed it.
        tool: Arc<McpTool>,
    },
}

/// One tool of the catalog.
#[derive(Clone)]
pub struct Entry {
    source: Source,
}

impl Entry {
    /// The entry for tool number `index` of `plugin`.
    pub fn plugin_tool(plugin: Arc<Plugin>, index: usize) -> Entry {
        assert!(index < plugin.tools.len(), "tool index out of range");
        Entry { source: Source::Plugin { plugin, index } }
    }

    /// The entry for `tool` of the MCP server `server`.
    pub fn mcp_tool(server: Arc<McpServer>, tool: Arc<McpTool>) -> Entry {
        Entry { source: Source::Mcp { server, tool } }
    }

    /// The MCP server offering the tool, when it is an external server's.
    pub fn mcp_server(&self) -> Option<&Arc<McpServer>> {
        match &self.source {
            Source::Mcp { server, .. } => Some(server),
            Source::Plugin { .. } => None,
        }
    }

    /// Which source runs the tool, for events and transcripts: `plugin NAME`
    /// or `mcp NAME` (an external, unsandboxed server).
    pub fn source_label(&self) -> String {
        match &self.source {
            Source::Plugin { plugin, .. } => format!("plugin {}", plugin.name),
            Source::Mcp { server, .. } => format!("mcp {}", server.name()),
        }
    }

    /// Where the tool comes from.
    pub fn source(&self) -> &Source {
        &self.source
    }

    /// The tool's name, unique in its catalog.
    pub fn name(&self) -> &str {
        match &self.source {
            Source::Plugin { plugin, index } => &plugin.tools[*index].name,
            Source::Mcp { tool, .. } => &tool.name,
        }
    }

    /// What the tool does, for the model.
    pub fn description(&self) -> &str {
        match &self.source {
            Source::Plugin { plugin, index } => &plugin.tools[*index].description,
            Source::Mcp { tool, .. } => &tool.description,
        }
    }

    /// Its title, for people, when it has one (contract 0.2.0).
    pub fn title(&self) -> Option<&str> {
        match &self.source {
            Source::Plugin { plugin, index } => plugin.tools[*index].title.as_deref(),
            Source::Mcp { .. } => None,
        }
    }

    /// The JSON Schema of its output, when it declares one (a typed
    /// function's return type, or a contract 0.2.0 tool's own).
    pub fn output_schema(&self) -> Option<&Value> {
        match &self.source {
            Source::Plugin { plugin, index } => plugin.tools[*index].output_schema.as_ref(),
            Source::Mcp { .. } => None,
        }
    }

    /// The JSON Schema of its arguments.
    pub fn schema(&self) -> &Value {
        match &self.source {
            Source::Plugin { plugin, index } => &plugin.tools[*index].schema,
            Source::Mcp { tool, .. } => &tool.schema,
        }
    }

    /// The name approvals and messages use for the tool's source: the
    /// plugin's file stem (`[approvals] plugins = { NAME = … }`), or the MCP
    /// server's name (`[approvals] servers = { NAME = … }`).
    pub fn origin(&self) -> &str {
        match &self.source {
            Source::Plugin { plugin, .. } => &plugin.name,
            Source::Mcp { server, .. } => server.name(),
        }
    }

    /// Where the source lives, for messages (the plugin's file).
    pub fn location(&self) -> PathBuf {
        match &self.source {
            Source::Plugin { plugin, .. } => plugin.path.clone(),
            Source::Mcp { server, .. } => PathBuf::from(format!("[mcp_servers.{}]", server.name())),
        }
    }

    /// The plugin offering the tool, when it is a plugin's.
    pub fn plugin(&self) -> Option<&Arc<Plugin>> {
        match &self.source {
            Source::Plugin { plugin, .. } => Some(plugin),
            Source::Mcp { .. } => None,
        }
    }

    /// The plugin's tool, when it is a plugin's.
    pub fn plugin_tool_ref(&self) -> Option<(&Tool, &Arc<Plugin>)> {
        match &self.source {
            Source::Plugin { plugin, index } => Some((&plugin.tools[*index], plugin)),
            Source::Mcp { .. } => None,
        }
    }

    /// What the source is granted beyond computing, as short lines, for
    /// approval prompts.
    pub fn capabilities(&self) -> Vec<String> {
        match &self.source {
            Source::Plugin { plugin, .. } => {
                plugin.grants.describe().into_iter().map(|(kind, granted)| format!("{kind}: {granted}")).collect()
            }
            Source::Mcp { server, .. } => {
                vec![format!("everything: an external MCP server, not sandboxed ({})", server.location())]
            }
        }
    }

    /// The MCP tool annotations: what the tool may do, derived from what
    /// its source is granted, with the manifest's hints where they do not
    /// claim more than the grants allow.
    pub fn hints(&self) -> Hints {
        match &self.source {
            Source::Plugin { plugin, index } => tool_hints(&plugin.tools[*index], plugin.asks.as_ref(), &plugin.grants),
            // What the server declares, passed on as declared: toolhost cannot
            // check an external server, and never relaxes an approval for a hint.
            Source::Mcp { tool, .. } => tool.annotations.as_ref().map_or_else(Hints::default, |declared| Hints {
                read_only: declared.read_only_hint,
                destructive: declared.destructive_hint,
                idempotent: declared.idempotent_hint,
                open_world: declared.open_world_hint,
            }),
        }
    }
}

/// A plugin tool's hints: the manifest (`asks`, the operator's file) over
/// what the plugin's list says, each hint on its own; the grants over both.
pub(crate) fn tool_hints(tool: &Tool, asks: Option<&toolhost_grants::Manifest>, grants: &Grants) -> Hints {
    let listed = Hints::from(tool.hints.unwrap_or_default());
    let manifest = asks.map(|asks| Hints::from(asks.hints_for(&tool.export))).unwrap_or_default();
    let declared = Hints {
        read_only: manifest.read_only.or(listed.read_only),
        destructive: manifest.destructive.or(listed.destructive),
        idempotent: manifest.idempotent.or(listed.idempotent),
        open_world: manifest.open_world.or(listed.open_world),
    };
    Hints::derive(grants, declared)
}

/// Tool annotations (MCP `ToolAnnotations`), each `None` when unknown.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct Hints {
    /// The tool does not change its environment.
    pub read_only: Option<bool>,
    /// A change it makes may destroy something (only meaningful when not read-only).
    pub destructive: Option<bool>,
    /// Calling it twice with the same arguments has no further effect.
    pub idempotent: Option<bool>,
    /// It reaches outside toolhost (the network).
    pub open_world: Option<bool>,
}

impl From<HintsTable> for Hints {
    fn from(declared: HintsTable) -> Hints {
        Hints {
            read_only: declared.read_only,
            destructive: declared.destructive,
            idempotent: declared.idempotent,
            open_world: declared.open_world,
        }
    }
}

impl Hints {
    /// The hints for a plugin granted `grants` whose manifest declares `declared`.
    ///
    /// A manifest never claims more than the grants allow: `open_world` is
    /// true whenever a network grant exists (a declared `true` is kept too);
    /// `read_only` is true only when no folder is granted read-write, and is
    /// derived as true for a plugin with no network and no writable folder;
    /// `destructive` is false for a read-only tool and otherwise as declared.
    pub fn derive(grants: &Grants, declared: Hints) -> Hints {
        let network = !grants.network.hosts.is_empty() || grants.network.sockets;
        let writable = grants.files.dirs.iter().any(|dir| dir.access == toolhost_grants::files::Access::ReadWrite);
        let read_only = if writable {
            false
        } else if network {
            declared.read_only.unwrap_or(false)
        } else {
            declared.read_only.unwrap_or(true)
        };
        Hints {
            read_only: Some(read_only),
            destructive: if read_only { Some(false) } else { declared.destructive },
            idempotent: declared.idempotent,
            open_world: Some(network || declared.open_world == Some(true)),
        }
    }
}

/// An immutable set of tools: one generation of the catalog.
pub struct Catalog {
    generation: u64,
    plugins: Vec<Arc<Plugin>>,
    external: Vec<Entry>,
    /// Every callable tool, sorted by name.
    entries: Vec<Entry>,
    index: HashMap<String, usize>,
    problems: Vec<LoadProblem>,
}

/// What a catalog is built from.
#[derive(Clone, Default)]
pub struct Parts {
    /// The loaded plugins, in file-name order.
    pub plugins: Vec<Arc<Plugin>>,
    /// Tools from sources other than plugins.
    pub external: Vec<Entry>,
    /// What could not be loaded (collisions are worked out anew).
    pub problems: Vec<LoadProblem>,
}

impl Catalog {
    /// An empty catalog, generation 0.
    pub fn empty() -> Catalog {
        Catalog::build(0, Parts::default())
    }

    /// Builds generation `generation` from `parts`. A tool name offered by
    /// two sources is dropped from both and reported: neither silently wins.
    pub fn build(generation: u64, parts: Parts) -> Catalog {
        let Parts { plugins, external, mut problems } = parts;
        let mut offered: BTreeMap<String, Vec<Entry>> = BTreeMap::new();
        for plugin in &plugins {
            for index in 0..plugin.tools.len() {
                let entry = Entry::plugin_tool(plugin.clone(), index);
                offered.entry(entry.name().to_owned()).or_default().push(entry);
            }
        }
        for entry in &external {
            offered.entry(entry.name().to_owned()).or_default().push(entry.clone());
        }
        problems.retain(|problem| problem.kind != ProblemKind::Collision);
        let mut entries = Vec::with_capacity(offered.len());
        for (name, mut offers) in offered {
            if offers.len() == 1 {
                entries.push(offers.remove(0));
            } else {
                problems.push(LoadProblem {
                    kind: ProblemKind::Collision,
                    paths: offers.iter().map(Entry::location).collect(),
                    reason: format!("both offer a tool named `{name}`, so neither is loaded: remove or rename one"),
                });
            }
        }
        let index = entries.iter().enumerate().map(|(position, entry)| (entry.name().to_owned(), position)).collect();
        Catalog { generation, plugins, external, entries, index, problems }
    }

    /// The generation: 0 when empty, one more at every swap.
    pub fn generation(&self) -> u64 {
        self.generation
    }

    /// Every callable tool, sorted by name.
    pub fn tools(&self) -> &[Entry] {
        &self.entries
    }

    /// The tool named `name`, if it is in this catalog.
    pub fn find(&self, name: &str) -> Option<&Entry> {
        self.index.get(name).map(|&position| &self.entries[position])
    }

    /// The loaded plugins, in file-name order.
    pub fn plugins(&self) -> &[Arc<Plugin>] {
        &self.plugins
    }

    /// The plugin named `name` (its file stem), if loaded.
    pub fn plugin(&self, name: &str) -> Option<&Arc<Plugin>> {
        self.plugins.iter().find(|plugin| &*plugin.name == name)
    }

    /// What could not be loaded, and grant notices.
    pub fn problems(&self) -> &[LoadProblem] {
        &self.problems
    }

    /// The parts this catalog was built from, to build the next one.
    pub fn parts(&self) -> Parts {
        Parts { plugins: self.plugins.clone(), external: self.external.clone(), problems: self.problems.clone() }
    }

    /// The tool Wassette would name `wanted` (package, interface and
    /// function joined, [`plugin::wassette_name`]), if one is loaded.
    pub fn by_wassette_name(&self, wanted: &str) -> Option<&Entry> {
        self.entries.iter().find(|entry| {
            entry.plugin_tool_ref().is_some_and(|(tool, _)| tool.wassette_name.as_deref() == Some(wanted))
        })
    }

    /// A loaded tool whose name is close to `wanted`, for "did you mean":
    /// the tool Wassette names `wanted`, else one within a few edits.
    pub fn similar(&self, wanted: &str) -> Option<String> {
        if let Some(entry) = self.by_wassette_name(wanted) {
            return Some(entry.name().to_owned());
        }
        let wanted_lower = wanted.to_ascii_lowercase();
        self.entries
            .iter()
            .map(|entry| (edit_distance(&wanted_lower, &entry.name().to_ascii_lowercase()), entry.name()))
            .filter(|(distance, name)| *distance <= 2.max(name.len() / 4))
            .min()
            .map(|(_, name)| name.to_owned())
    }
}

/// The current catalog, swapped whole, and the channel announcing each swap.
pub struct SharedCatalog {
    current: RwLock<Arc<Catalog>>,
    /// Serializes writers, so two swaps never build from the same generation.
    writer: Mutex<()>,
    generations: watch::Sender<u64>,
}

impl Default for SharedCatalog {
    fn default() -> Self {
        SharedCatalog::new()
    }
}

impl SharedCatalog {
    /// An empty catalog at generation 0.
    pub fn new() -> SharedCatalog {
        SharedCatalog {
            current: RwLock::new(Arc::new(Catalog::empty())),
            writer: Mutex::new(()),
            generations: watch::Sender::new(0),
        }
    }

    /// The current snapshot. Cheap (an `Arc` clone); keep it for as long as
    /// one consistent view is needed (a call, a list, an agent turn).
    pub fn snapshot(&self) -> Arc<Catalog> {
        self.current.read().unwrap_or_else(|poisoned| poisoned.into_inner()).clone()
    }

    /// A receiver of generations: `changed()` fires after every swap.
    pub fn subscribe(&self) -> watch::Receiver<u64> {
        self.generations.subscribe()
    }

    /// Builds the next catalog from the current one's parts: `change` edits
    /// them and returns true, or returns false to leave the catalog as it
    /// is (no swap, no announcement). Returns the catalog now current.
    pub fn update(&self, change: impl FnOnce(&mut Parts) -> bool) -> Arc<Catalog> {
        let _writer = self.writer.lock().unwrap_or_else(|poisoned| poisoned.into_inner());
        let current = self.snapshot();
        let mut parts = current.parts();
        if !change(&mut parts) {
            return current;
        }
        let next = Arc::new(Catalog::build(current.generation + 1, parts));
        *self.current.write().unwrap_or_else(|poisoned| poisoned.into_inner()) = next.clone();
        self.generations.send_replace(next.generation);
        tracing::debug!(generation = next.generation, tools = next.entries.len(), "tool catalog swapped");
        next
    }
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
    use super::*;
    use toolhost_grants::files::{Access, DirGrant};

    #[test]
    fn edit_distance_counts_edits() {
        assert_eq!(edit_distance("sha256", "sha256"), 0);
        assert_eq!(edit_distance("sha265", "sha256"), 2);
        assert_eq!(edit_distance("echo", "eco"), 1);
        assert_eq!(edit_distance("", "abc"), 3);
    }

    #[test]
    fn an_unchanged_update_keeps_the_generation() {
        let shared = SharedCatalog::new();
        let mut receiver = shared.subscribe();
        receiver.mark_unchanged();
        assert_eq!(shared.update(|_| false).generation(), 0);
        assert!(!receiver.has_changed().unwrap());
        assert_eq!(shared.update(|_| true).generation(), 1);
        assert!(receiver.has_changed().unwrap());
        assert_eq!(*receiver.borrow_and_update(), 1);
    }

    #[test]
    fn hints_follow_the_grants() {
        let nothing = Grants::default();
        let pure = Hints::derive(&nothing, Hints::default());
        assert_eq!(pure.read_only, Some(true));
        assert_eq!(pure.destructive, Some(false));
        assert_eq!(pure.open_world, Some(false));
        let claims_open = Hints::derive(&nothing, Hints { open_world: Some(true), ..Hints::default() });
        assert_eq!(claims_open.open_world, Some(true), "a declared open world is kept");

        let mut network = Grants::default();
        network.network.hosts.push("https://example.com".parse().unwrap());
        let fetch =
            Hints::derive(&network, Hints { open_world: Some(false), read_only: Some(true), ..Hints::default() });
        assert_eq!(fetch.open_world, Some(true), "a manifest cannot hide a network grant");
        assert_eq!(fetch.read_only, Some(true));

        let mut writable = Grants::default();
        writable.files.dirs.push(DirGrant { host: "/tmp".into(), guest: "/out".into(), access: Access::ReadWrite });
        let files =
            Hints::derive(&writable, Hints { read_only: Some(true), destructive: Some(false), ..Hints::default() });
        assert_eq!(files.read_only, Some(false), "a manifest cannot call a read-write grant read-only");
        assert_eq!(files.destructive, Some(false));
    }
}

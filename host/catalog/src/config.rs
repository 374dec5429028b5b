//! The settings the catalog and its [`Host`](crate::Host) read: where the
//! compile cache is, how many calls run at once, extra trusted roots, limits
//! and grants per plugin, the approval policy, the quotas and the external
//! MCP servers.
//!
//! This crate does not read the config file: the `toolhost` crate parses
//! `toolhost.toml` (each section with the types of the crate that owns it)
//! and assembles a [`HostConfig`] from it.

use crate::policy::ApprovalConfig;
use crate::quota::QuotaConfig;
use std::collections::BTreeMap;
use std::path::PathBuf;
use toolhost_grants::Grants;
use toolhost_mcp_client::config::McpServerConfig;
use toolhost_runtime::limits::LimitOverrides;

/// Concurrent calls allowed when the config does not say.
pub const DEFAULT_MAX_CONCURRENT_CALLS: usize = 16;

/// What a [`Host`](crate::Host) is made with. `Default` is toolhost with no
/// config file: default limits, nothing granted, no MCP servers.
#[derive(Debug, Clone, Default)]
pub struct HostConfig {
    /// Folder for compiled plugins; [`Cache::default_dir`](toolhost_runtime::cache::Cache::default_dir) when unset.
    pub cache_dir: Option<PathBuf>,
    /// Calls that may run at once; further calls wait their turn.
    pub max_concurrent_calls: Option<usize>,
    /// Bytes of each memory slot kept resident between calls
    /// ([`MEMORY_KEEP_RESIDENT`](toolhost_runtime::engine::MEMORY_KEEP_RESIDENT) when unset).
    pub keep_resident: Option<u64>,
    /// How much processor time compiling one plugin may take
    /// ([`DEFAULT_COMPILE_TIMEOUT`](toolhost_runtime::compiler::DEFAULT_COMPILE_TIMEOUT) when unset).
    /// Bounds compiles only in a program that serves compile workers
    /// ([`serve_workers`](toolhost_runtime::compiler::serve_workers)).
    pub compile_timeout: Option<std::time::Duration>,
    /// How much memory compiling one plugin may use, in bytes
    /// ([`DEFAULT_COMPILE_MEMORY`](toolhost_runtime::compiler::DEFAULT_COMPILE_MEMORY) when unset; as above).
    pub compile_memory: Option<u64>,
    /// Extra trusted root certificates (PEM) for plugin HTTPS.
    pub ca_file: Option<PathBuf>,
    /// Limits for every plugin.
    pub limits: LimitOverrides,
    /// Limits and grants per plugin, keyed by the plugin's file stem.
    pub plugins: BTreeMap<String, PluginSettings>,
    /// Which tool calls need approval, or may not run.
    pub approvals: ApprovalConfig,
    /// Rate limits and concurrency caps per tool, plugin or MCP server.
    pub quotas: QuotaConfig,
    /// External MCP servers whose tools join the catalog, by name.
    pub mcp_servers: BTreeMap<String, McpServerConfig>,
    /// Files of toolhost's own that no plugin may be granted a folder
    /// holding (the config file, trusted keys), each with what it is. The
    /// host adds its own: the compile cache and its key, `ca_file`, credential
    /// files and the plugins folder.
    pub protected: Vec<(PathBuf, String)>,
    /// `[audit]`: the signed log of every call (off unless set).
    pub audit: toolhost_audit::AuditConfig,
    /// `[[hooks]]`: the operator's rules before and after each call.
    pub hooks: Vec<toolhost_audit::hooks::HookConfig>,
    /// `[cache]`: how results of tools that declare them cacheable are kept.
    pub cache: crate::result_cache::CacheConfig,
    /// The host makes one call and ends (`toolhost call`): its engine's
    /// pool holds what concurrent calls need, without the spare slots that
    /// let many calls on every core share it (which a short process pays
    /// for in set-up and tear-down).
    pub one_call: bool,
}

/// What the host needs of one plugin's `[plugins.NAME]`.
#[derive(Debug, Clone, Default)]
pub struct PluginSettings {
    /// Limits for this plugin's calls, over the global ones.
    pub limits: LimitOverrides,
    /// What this plugin may reach. Nothing unless granted.
    pub grants: Grants,
    /// `cache`: `Some(false)` never keeps its results; `Some(true)` keeps
    /// those of its cacheable tools even with network or writable folders
    /// granted; `None` keeps them only without such grants.
    pub cache: Option<bool>,
}

impl HostConfig {
    /// What `plugin` is granted: nothing unless its `[plugins.NAME]` says so.
    pub fn grants_for(&self, plugin: &str) -> Grants {
        self.plugins.get(plugin).map(|own| own.grants.clone()).unwrap_or_default()
    }

    /// The limit overrides for `plugin`: global ones, then the plugin's own.
    pub fn limits_for(&self, plugin: &str) -> LimitOverrides {
        match self.plugins.get(plugin) {
            Some(own) => self.limits.then(&own.limits),
            None => self.limits,
        }
    }
}

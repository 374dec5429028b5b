//! `toolhost.toml`: the operator's settings, parsed once into typed values.
//!
//! ```toml
//! plugins_dir = "plugins/dist"      # relative to this file
//! cache_dir = "/var/cache/toolhost" # compiled plugins; default: the user cache dir
//! max_concurrent_calls = 16
//! compile_timeout = "120s"          # processor time compiling one plugin may take; over it, skipped
//! compile_memory = "2GiB"           # the same for memory
//! ca_file = "certs/corp-ca.pem"     # extra trusted roots (PEM) for plugin HTTPS and models
//!
//! [limits]                          # every plugin's defaults
//! fuel = 2_000_000_000
//! memory = "128MiB"
//! timeout = "10s"
//! output = "1MiB"
//!
//! [plugins.calc.limits]             # one plugin (the file stem) overrides some
//! fuel = 100_000_000
//!
//! [plugins.fetch]                   # what one plugin is granted; nothing by default
//! http = ["https://api.example.com", "https://*.example.org", "http://127.0.0.1:8080",
//!         "GET,HEAD https://api.github.com/repos/**"]   # some methods and paths only
//! sockets = false                   # also raw TCP to those hosts through wasi:sockets
//! env = ["LANG"]                    # passed from toolhost's environment, by name
//! secrets = ["API_KEY"]             # the same, never shown in output, logs or reports;
//!                                   # { name = "API_KEY", to = ["https://api.example.com"] }: sent there only
//! dirs = ["./data:/data:ro", "/tmp/out:/out:rw"]   # HOST:GUEST[:ro|rw]
//!
//! [[plugins.fetch.credentials]]     # added by the host to requests there; the plugin never sees it
//! to = "https://api.example.com"
//! bearer = { env = "API_TOKEN" }    # or basic, header + value, query + value, oauth2
//! source = "ghcr.io/acme/fetch:1.2@sha256:…"        # where `toolhost pull` fetches it
//!
//! [[trust]]                         # whose signatures `toolhost pull` accepts, and where it requires one
//! scope = "ghcr.io/acme/*"          # `*`, `REGISTRY/*`, `REGISTRY/NAMESPACE/*` or `REGISTRY/REPOSITORY`
//! keys = ["keys/acme.pub"]          # cosign.pub files; relative to this file
//! require = true                    # the default; false: check a signature when there is one
//! ```

//!
//! Each section's types belong to the layer that uses them: limits to the
//! runtime, grants to the grants, `[approvals]` and the host settings to the
//! catalog, `[mcp_servers]` to the MCP client, `[serve]` to the MCP server,
//! `[model]` and `[providers]` to the agent, `source` and `[[trust]]` to the
//! registry client.
//! This module only lays them out as the file has them and hands each layer
//! its part ([`HostConfig`] for the [`Host`](crate::Host)).

use anyhow::{Context, Result};
use serde::Deserialize;
use std::collections::BTreeMap;
use std::path::{Path, PathBuf};
pub use toolhost_agent::config::{ModelConfig, ProviderConfig};
pub use toolhost_catalog::config::DEFAULT_MAX_CONCURRENT_CALLS;
use toolhost_catalog::policy::ApprovalConfig;
use toolhost_catalog::quota::QuotaConfig;
use toolhost_catalog::{HostConfig, PluginSettings};
use toolhost_grants::Grants;
use toolhost_grants::credentials::{self, Credential, Kind};
use toolhost_grants::env::{EnvGrant, EnvName};
use toolhost_grants::files::{DirGrant, FilesGrant};
use toolhost_grants::network::{HttpEntry, NetworkGrant};
use toolhost_mcp::ServeConfig;
pub use toolhost_mcp_client::config::McpServerConfig;
use toolhost_oci::{Source, Trust};
use toolhost_runtime::limits::{ByteSize, HumanDuration, LimitOverrides};

/// The file name looked for in the current directory when `--config` is not given.
pub const DEFAULT_FILE: &str = "toolhost.toml";

/// The most `keep_resident` may be.
const MAX_KEEP_RESIDENT: ByteSize = ByteSize(256 << 20);

/// The least `compile_memory` may be: a compile worker's own start needs a
/// few MiB, and a smaller bound would refuse every plugin.
const MIN_COMPILE_MEMORY: ByteSize = ByteSize(16 << 20);

/// The parsed config file. `Default` is what toolhost does with no file.
#[derive(Debug, Clone, Default, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Config {
    /// Folder whose `*.wasm` files are loaded; relative paths are resolved
    /// against the config file's folder.
    pub plugins_dir: Option<PathBuf>,
    /// Folder for compiled plugins; relative paths as above.
    pub cache_dir: Option<PathBuf>,
    /// Calls that may run at once; further calls wait their turn.
    pub max_concurrent_calls: Option<usize>,
    /// Memory each idle instance slot keeps between calls (`16MiB` by
    /// default; at most 256MiB): less lowers a busy host's resident memory,
    /// and costs Python and JavaScript calls their heap's page faults again.
    pub keep_resident: Option<ByteSize>,
    /// How much processor time compiling one plugin may take (`120s` by
    /// default); a plugin that takes more is skipped with a reason naming
    /// this setting.
    pub compile_timeout: Option<HumanDuration>,
    /// How much memory compiling one plugin may use (`2GiB` by default);
    /// plugins compile one at a time, so this bounds them all together.
    pub compile_memory: Option<ByteSize>,
    /// Extra trusted root certificates (PEM), for plugin HTTPS and model
    /// requests, on top of the built-in Mozilla roots; relative paths as above.
    pub ca_file: Option<PathBuf>,
    /// Limits for every plugin.
    #[serde(default)]
    pub limits: LimitOverrides,
    /// Settings per plugin, keyed by the plugin's file stem (`calc` for `calc.wasm`).
    #[serde(default)]
    pub plugins: BTreeMap<String, PluginConfig>,
    /// How `run` and `chat` drive the model.
    #[serde(default)]
    pub model: ModelConfig,
    /// Model providers by name, used in `NAME/model` specs.
    #[serde(default)]
    pub providers: BTreeMap<String, ProviderConfig>,
    /// Which tool calls need approval.
    #[serde(default)]
    pub approvals: ApprovalConfig,
    /// Rate limits and concurrency caps per tool, plugin or MCP server.
    #[serde(default)]
    pub quotas: QuotaConfig,
    /// External MCP servers whose tools join the catalog, by name.
    #[serde(default)]
    pub mcp_servers: BTreeMap<String, McpServerConfig>,
    /// `toolhost serve --http`: token, allowed hosts and origins, bounds.
    #[serde(default)]
    pub serve: ServeConfig,
    /// Where `serve` replicas keep what they share (quotas, tasks, sessions):
    /// in the process (the default) or a Valkey/Redis.
    #[serde(default)]
    pub state: toolhost_mcp::state::StateConfig,
    /// `[[trust]]`: the public keys whose signatures `toolhost pull` accepts,
    /// per registry or repository, and where a signature is required.
    #[serde(default)]
    pub trust: Trust,
    /// OpenTelemetry traces over OTLP (off unless set, or the `OTEL_*` variables).
    #[serde(default)]
    pub telemetry: crate::telemetry::TelemetryConfig,
    /// `[audit]`: a signed, chained log line for every call (off unless set).
    #[serde(default)]
    pub audit: toolhost_audit::AuditConfig,
    /// `[[hooks]]`: the operator's commands or endpoints that allow, deny,
    /// ask about or rewrite a call before it runs, and see it after.
    #[serde(default)]
    pub hooks: Vec<toolhost_audit::hooks::HookConfig>,
    /// `[cache]`: how results of tools that declare them cacheable are kept
    /// and given again for the same call.
    #[serde(default)]
    pub cache: toolhost_catalog::CacheConfig,
    /// The file this config was read from (none for a config parsed from text).
    #[serde(skip)]
    pub file: Option<PathBuf>,
}

/// Settings for one plugin.
#[derive(Debug, Clone, Default, Deserialize)]
#[serde(from = "PluginTable")]
pub struct PluginConfig {
    /// Limits for this plugin's calls, over the global ones.
    pub limits: LimitOverrides,
    /// What this plugin may reach. Nothing unless granted here.
    pub grants: Grants,
    /// Where `toolhost pull` (with no argument) fetches it from: a registry
    /// reference, best pinned (`registry/repo:tag@sha256:…`).
    pub source: Option<Source>,
    /// `cache`: `false` never keeps its results; `true` keeps those of its
    /// cacheable tools even with network or writable folders granted.
    pub cache: Option<bool>,
}

/// `[plugins.NAME]` as written: limits, then one key per kind of grant.
#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
struct PluginTable {
    #[serde(default)]
    limits: LimitOverrides,
    #[serde(default)]
    http: Vec<HttpEntry>,
    #[serde(default)]
    sockets: bool,
    #[serde(default)]
    env: Vec<EnvName>,
    #[serde(default)]
    secrets: Vec<toolhost_grants::env::SecretEntry>,
    #[serde(default)]
    dirs: Vec<DirGrant>,
    #[serde(default)]
    source: Option<Source>,
    #[serde(default)]
    credentials: Vec<Credential>,
    #[serde(default)]
    elicitation: bool,
    #[serde(default)]
    sampling: Option<toolhost_grants::requests::SamplingTable>,
    #[serde(default)]
    roots: bool,
    #[serde(default)]
    cache: Option<bool>,
}

impl From<PluginTable> for PluginConfig {
    fn from(table: PluginTable) -> PluginConfig {
        PluginConfig {
            limits: table.limits,
            grants: Grants {
                network: NetworkGrant { hosts: table.http, sockets: table.sockets },
                files: FilesGrant { dirs: table.dirs },
                env: EnvGrant {
                    names: table.env,
                    secrets: table.secrets.iter().map(|secret| secret.name.clone()).collect(),
                    bound: table.secrets.into_iter().filter_map(|secret| Some((secret.name, secret.to?))).collect(),
                },
                credentials: table.credentials,
                requests: toolhost_grants::requests::RequestsGrant {
                    elicitation: table.elicitation,
                    sampling: table.sampling.and_then(toolhost_grants::requests::SamplingTable::budget),
                    roots: table.roots,
                },
            },
            source: table.source,
            cache: table.cache,
        }
    }
}

impl Config {
    /// Reads and parses `path`; relative paths inside are made relative to its folder.
    pub fn load(path: &Path) -> Result<Config> {
        let text = toolhost_grants::readfile::read_regular_text(path, toolhost_grants::readfile::limits::TOML)
            .with_context(|| format!("could not read config file {}", path.display()))?;
        let wassette = path.extension().is_some_and(|ext| ext == "yaml" || ext == "yml")
            || text.lines().any(|line| line.trim_end() == "permissions:" || line.starts_with("permissions: "));
        if wassette && Config::parse(&text).is_err() {
            anyhow::bail!(
                "{} looks like a Wassette permission policy, not a toolhost config (toolhost.toml): run `toolhost \
                 policy import {}` to add its grants to toolhost.toml, then use that",
                path.display(),
                path.display()
            );
        }
        let mut config =
            Config::parse(&text).with_context(|| format!("config file {} is not valid", path.display()))?;
        let base = path.parent().unwrap_or(Path::new("."));
        config.plugins_dir = config.plugins_dir.map(|dir| base.join(dir));
        config.cache_dir = config.cache_dir.map(|dir| base.join(dir));
        config.ca_file = config.ca_file.map(|file| base.join(file));
        config.state.password_file = config.state.password_file.map(|file| base.join(file));
        config.state.ca_file = config.state.ca_file.map(|file| base.join(file));
        for server in config.mcp_servers.values_mut() {
            if let toolhost_mcp_client::config::Transport::Stdio { cwd: Some(cwd), .. } = &mut server.transport {
                *cwd = base.join(&*cwd);
            }
        }
        for plugin in config.plugins.values_mut() {
            for dir in &mut plugin.grants.files.dirs {
                dir.host = base.join(&dir.host);
            }
            for credential in &mut plugin.grants.credentials {
                let mut sources = match &mut credential.kind {
                    Kind::Bearer(source) => vec![source],
                    Kind::Basic { user, password } => match user {
                        credentials::User::From(user) => vec![user, password],
                        credentials::User::Plain(_) => vec![password],
                    },
                    Kind::Header { value, .. } | Kind::Query { value, .. } => vec![value],
                    Kind::OAuth2(oauth) => vec![&mut oauth.client_id, &mut oauth.client_secret],
                };
                for source in &mut sources {
                    if let credentials::Source::File(path) = &mut **source {
                        *path = base.join(&*path);
                    }
                }
            }
        }
        config.audit.file = config.audit.file.map(|file| base.join(file));
        config.audit.key = config.audit.key.map(|file| base.join(file));
        config.audit.checkpoint = config.audit.checkpoint.map(|file| base.join(file));
        for hook in &mut config.hooks {
            // A program named with a path is relative to the config file; a bare name is looked up in PATH.
            if let Some(program) = hook.command.first_mut()
                && program.contains('/')
            {
                *program = base.join(&*program).to_string_lossy().into_owned();
            }
        }
        for entry in config.trust.entries_mut() {
            for key in &mut entry.keys {
                *key = base.join(&*key);
            }
        }
        config.file = Some(path.to_owned());
        Ok(config)
    }

    /// Parses config text.
    pub fn parse(text: &str) -> Result<Config> {
        let config: Config = toml::from_str(text).map_err(|err| anyhow::anyhow!("{}", err.to_string().trim_end()))?;
        config.audit.check().map_err(anyhow::Error::msg)?;
        config.cache.check().map_err(anyhow::Error::msg)?;
        for (index, hook) in config.hooks.iter().enumerate() {
            toolhost_audit::hooks::Hook::new(index + 1, hook).map_err(anyhow::Error::msg)?;
        }
        if config.max_concurrent_calls == Some(0) {
            anyhow::bail!("`max_concurrent_calls` must be at least 1");
        }
        if let Some(keep) = config.keep_resident
            && keep.bytes() > MAX_KEEP_RESIDENT.bytes()
        {
            anyhow::bail!(
                "`keep_resident = \"{keep}\"` is over {MAX_KEEP_RESIDENT}: it is what each idle instance slot \
                 keeps, so keep it small (the default is 16MiB; \"0\" keeps nothing)"
            );
        }
        if let Some(memory) = config.compile_memory
            && memory.bytes() < MIN_COMPILE_MEMORY.bytes()
        {
            anyhow::bail!(
                "`compile_memory = \"{memory}\"` is under {MIN_COMPILE_MEMORY}, too little to compile even a small \
                 plugin (the default is 2GiB)"
            );
        }
        Ok(config)
    }

    /// Finds the config: `explicit` if given (it must exist), else `toolhost.toml`
    /// in the current folder if there is one, else the defaults.
    pub fn discover(explicit: Option<&Path>) -> Result<Config> {
        match explicit {
            Some(path) => Config::load(path),
            // Anything there (a FIFO, a folder, a broken symlink) is loaded, so
            // that it is reported rather than silently passed over.
            None if Path::new(DEFAULT_FILE).symlink_metadata().is_ok() => Config::load(Path::new(DEFAULT_FILE)),
            None => Ok(Config::default()),
        }
    }

    /// Each plugin's `source`, by plugin name.
    pub fn sources(&self) -> BTreeMap<String, Source> {
        let sources = self.plugins.iter().filter_map(|(name, plugin)| Some((name.clone(), plugin.source.clone()?)));
        sources.collect()
    }
}

/// The host's part of the config.
impl From<Config> for HostConfig {
    fn from(config: Config) -> HostConfig {
        HostConfig {
            cache_dir: config.cache_dir,
            max_concurrent_calls: config.max_concurrent_calls,
            keep_resident: config.keep_resident.map(ByteSize::bytes),
            compile_timeout: config.compile_timeout.map(|timeout| timeout.0),
            compile_memory: config.compile_memory.map(ByteSize::bytes),
            ca_file: config.ca_file,
            limits: config.limits,
            plugins: config
                .plugins
                .into_iter()
                .map(|(name, plugin)| {
                    (name, PluginSettings { limits: plugin.limits, grants: plugin.grants, cache: plugin.cache })
                })
                .collect(),
            approvals: config.approvals,
            quotas: config.quotas,
            mcp_servers: config.mcp_servers,
            audit: config.audit,
            hooks: config.hooks,
            cache: config.cache,
            one_call: false,
            protected: config
                .file
                .iter()
                .map(|file| (file.clone(), "the config file".to_owned()))
                .chain(config.trust.entries().iter().flat_map(|entry| {
                    entry
                        .keys
                        .iter()
                        .map(|key| (key.clone(), "a `[[trust]]` key (whose signatures pulls accept)".to_owned()))
                }))
                .chain(
                    config
                        .state
                        .password_file
                        .iter()
                        .map(|file| (file.clone(), "`[state] password_file` (the shared store's password)".to_owned())),
                )
                .collect(),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use toolhost_runtime::limits::{ByteSize, HumanDuration};

    fn host(config: &Config) -> HostConfig {
        HostConfig::from(config.clone())
    }
    use std::time::Duration;

    #[test]
    fn accepts_full_config() {
        let config = Config::parse(
            r#"
            plugins_dir = "dist"
            max_concurrent_calls = 4
            [limits]
            fuel = 1_000
            memory = "64MiB"
            timeout = "2s"
            output = 4096
            [plugins.calc.limits]
            fuel = 50
            "#,
        )
        .unwrap();
        assert_eq!(config.max_concurrent_calls, Some(4));
        let calc = host(&config).limits_for("calc");
        assert_eq!(calc.fuel, Some(50));
        assert_eq!(calc.memory, Some(ByteSize(64 << 20)));
        assert_eq!(calc.timeout, Some(HumanDuration(Duration::from_secs(2))));
        assert_eq!(host(&config).limits_for("other").fuel, Some(1_000));
    }

    #[test]
    fn accepts_empty_config() {
        let config = Config::parse("").unwrap();
        assert!(config.plugins.is_empty());
    }

    #[test]
    fn rejects_unknown_keys_naming_them() {
        let err = Config::parse("[limits]\nfule = 5\n").unwrap_err().to_string();
        assert!(err.contains("unknown field `fule`"), "{err}");
        assert!(err.contains("fuel"), "{err}");
    }

    #[test]
    fn rejects_bad_values_with_accepted_form() {
        let err = Config::parse("[limits]\nmemory = \"lots\"\n").unwrap_err().to_string();
        assert!(err.contains("64MiB"), "{err}");
        let err = Config::parse("[limits]\ntimeout = \"5\"\n").unwrap_err().to_string();
        assert!(err.contains("500ms"), "{err}");
        let err = Config::parse("max_concurrent_calls = 0").unwrap_err().to_string();
        assert!(err.contains("at least 1"), "{err}");
        let err = Config::parse("keep_resident = \"1GiB\"").unwrap_err().to_string();
        assert!(err.contains("over 256MiB") && err.contains("\"0\" keeps nothing"), "{err}");
        assert_eq!(Config::parse("keep_resident = \"0\"").unwrap().keep_resident.map(ByteSize::bytes), Some(0));
        let host: HostConfig = Config::parse("keep_resident = \"4MiB\"").unwrap().into();
        assert_eq!(host.keep_resident, Some(4 << 20));
    }

    #[test]
    fn accepts_grants_parsed_into_typed_values() {
        let config = Config::parse(
            r#"
            [plugins.fetch]
            http = ["https://api.example.com", "https://*.example.org:8443", "http://127.0.0.1:8080"]
            sockets = true
            env = ["LANG"]
            secrets = ["API_KEY"]
            dirs = ["./data:/data", "/tmp/out:/out:rw"]
            [plugins.fetch.limits]
            http_requests = 3
            http_oversized = "cut"
            http_request_body = "64KiB"
            "#,
        )
        .unwrap();
        let grants = host(&config).grants_for("fetch");
        assert_eq!(grants.network.hosts.len(), 3);
        assert!(grants.network.sockets);
        assert_eq!(grants.network.hosts[1].to_string(), "https://*.example.org:8443");
        assert_eq!(grants.env.names[0].as_str(), "LANG");
        assert_eq!(grants.env.secrets[0].as_str(), "API_KEY");
        assert_eq!(grants.files.dirs[1].to_string(), "/tmp/out:/out:rw");
        assert_eq!(host(&config).limits_for("fetch").http_requests, Some(3));
        assert_eq!(host(&config).limits_for("fetch").http_request_body, Some(ByteSize(64 << 10)));
        assert!(host(&config).grants_for("other").is_empty(), "a plugin not named gets nothing");
    }

    #[test]
    fn rejects_malformed_grants_with_the_fix_and_the_line() {
        let cases = [
            ("[plugins.fetch]\nhttp = [\"*.example.com\"]\n", "did you mean `https://*.example.com`?"),
            ("[plugins.fetch]\nhttp = \"https://example.com\"\n", "a sequence"),
            ("[plugins.fetch]\ndirs = [\"./data\"]\n", "e.g. `./data:/data:ro`"),
            ("[plugins.fetch]\nenv = [\"KEY=value\"]\n", "did you mean `KEY`?"),
            ("[plugins.fetch]\nnetwork = true\n", "unknown field `network`"),
            ("[plugins.fetch.limits]\nhttp_oversized = \"trim\"\n", "`cut`"),
            ("[plugins.fetch.limits]\nhttp_request_body = \"lots\"\n", "e.g. `65536`"),
        ];
        for (text, expected) in cases {
            let err = Config::parse(text).unwrap_err().to_string();
            assert!(err.contains(expected), "{text}: {err}");
            assert!(err.contains("line"), "{text}: the error points at the line: {err}");
        }
    }

    #[test]
    fn accepts_a_plugin_source_and_rejects_a_bad_one_with_the_form() {
        let config = Config::parse("[plugins.hash]\nsource = \"127.0.0.1:5000/plugins/hash:1.0\"\n").unwrap();
        let source = config.plugins["hash"].source.as_ref().unwrap();
        assert_eq!((source.registry(), source.tag()), ("127.0.0.1:5000", Some("1.0")));
        let err = Config::parse("[plugins.hash]\nsource = \"https://ghcr.io/acme/hash\"\n").unwrap_err().to_string();
        assert!(err.contains("did you mean `ghcr.io/acme/hash`?") && err.contains("line"), "{err}");
    }

    #[test]
    fn accepts_trust_entries_and_rejects_bad_ones_pointing_at_the_line() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("toolhost.toml");
        std::fs::write(
            &path,
            "[[trust]]\nscope = \"ghcr.io/acme/*\"\nkeys = [\"keys/acme.pub\", \"/etc/lab.pub\"]\n\
             [[trust]]\nscope = \"ghcr.io/acme/lab\"\nrequire = false\n",
        )
        .unwrap();
        let config = Config::load(&path).unwrap();
        let entries = config.trust.entries();
        assert_eq!(entries.len(), 2);
        assert_eq!(entries[0].keys, [dir.path().join("keys/acme.pub"), "/etc/lab.pub".into()]);
        assert!(entries[0].require, "required by default");
        assert!(!entries[1].require && entries[1].keys.is_empty());
        let cases = [
            ("[[trust]]\nscope = \"ghcr.io/acme/hash:1\"\nkeys = [\"a.pub\"]\n", "not a tag"),
            ("[[trust]]\nscope = \"ghcr.io/*\"\n", "trusts no key"),
            ("[[trust]]\nscope = \"*\"\nkeys = [\"a.pub\"]\nrequired = true\n", "unknown field `required`"),
        ];
        for (text, expected) in cases {
            let err = format!("{:#}", Config::parse(text).unwrap_err());
            assert!(err.contains(expected) && err.contains("line"), "{text}: {err}");
        }
    }

    #[test]
    fn a_wassette_policy_given_as_the_config_says_how_to_import_it() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("policy.yaml");
        std::fs::write(&path, "version: \"1.0\"\npermissions:\n  network:\n    allow:\n      - host: a.example\n")
            .unwrap();
        let err = format!("{:#}", Config::load(&path).unwrap_err());
        assert!(err.contains("Wassette permission policy") && err.contains("toolhost policy import"), "{err}");
    }

    #[test]
    fn relative_folders_are_resolved_against_the_config_file() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("toolhost.toml");
        std::fs::write(&path, "[plugins.files]\ndirs = [\"data:/data\", \"/abs:/abs\"]\n").unwrap();
        let config = Config::load(&path).unwrap();
        let dirs = &host(&config).grants_for("files").files.dirs;
        assert_eq!(dirs[0].host, dir.path().join("data"));
        assert_eq!(dirs[1].host, std::path::Path::new("/abs"));
    }
}

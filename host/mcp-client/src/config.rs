//! `[mcp_servers.NAME]`: one external MCP server, parsed once into typed values.
//!
//! ```toml
//! [mcp_servers.everything]            # started as a child process, spoken to over stdio
//! command = "npx"
//! args = ["-y", "@modelcontextprotocol/server-everything"]
//! env = { LOG_LEVEL = "warn" }        # explicit values
//! env_vars = ["GITHUB_TOKEN"]         # passed from toolhost's environment, by name
//! cwd = "servers"                     # relative to the config file
//! startup_timeout = "30s"
//! tool_timeout = "60s"
//!
//! [mcp_servers.remote]                # Streamable HTTP
//! url = "https://mcp.example.com/mcp"
//! bearer_token_env_var = "REMOTE_TOKEN"
//! http_headers = { "X-Team" = "tools" }
//! enabled_tools = ["search"]          # or disabled_tools = [...]
//! required = true                     # toolhost does not start without it
//! protocol = "auto"                   # or "2025-11-25" / "2026-07-28" to pin the revision
//! ```

use serde::Deserialize;
use std::collections::BTreeMap;
use std::path::PathBuf;
use std::time::Duration;
use toolhost_grants::env::{EnvName, Secret};
use toolhost_runtime::limits::HumanDuration;

/// How long a server may take to start and list its tools, when the config does not say.
pub const DEFAULT_STARTUP_TIMEOUT: Duration = Duration::from_secs(30);
/// How long one tool call may take, when the config does not say.
pub const DEFAULT_TOOL_TIMEOUT: Duration = Duration::from_secs(60);

/// One `[mcp_servers.NAME]` table.
#[derive(Debug, Clone, Deserialize)]
#[serde(try_from = "ServerTable")]
pub struct McpServerConfig {
    /// How toolhost reaches the server.
    pub transport: Transport,
    /// Time to start (spawn or connect), initialize and list the tools.
    pub startup_timeout: Duration,
    /// Time one call may take; the call is then cancelled.
    pub tool_timeout: Duration,
    /// toolhost stops when this server cannot be started.
    pub required: bool,
    /// `false` leaves the server out entirely.
    pub enabled: bool,
    /// Only these tools (by the server's own names) are offered, when given.
    pub enabled_tools: Option<Vec<String>>,
    /// These tools (by the server's own names) are never offered.
    pub disabled_tools: Vec<String>,
    /// Which protocol revision to speak.
    pub protocol: Protocol,
}

/// `protocol`: how a connection starts.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub enum Protocol {
    /// `"auto"`: `server/discover` first, 2026-07-28 when the server offers
    /// it, else the 2025-11-25 `initialize` handshake.
    #[default]
    Auto,
    /// `"2025-11-25"`: only the `initialize` handshake (for a server that
    /// does not answer `server/discover` at all).
    Handshake,
    /// `"2026-07-28"`: only the stateless revision; a server without it fails to start.
    Stateless,
}

impl Protocol {
    fn parse(text: &str) -> Result<Protocol, String> {
        match text {
            "auto" => Ok(Protocol::Auto),
            "2025-11-25" => Ok(Protocol::Handshake),
            "2026-07-28" => Ok(Protocol::Stateless),
            other => Err(format!(
                "`protocol = \"{other}\"` is not a revision toolhost speaks: use \"auto\" (the default: \
                 2026-07-28 where the server offers it, else 2025-11-25), \"2025-11-25\" or \"2026-07-28\""
            )),
        }
    }
}

impl McpServerConfig {
    /// Whether the server's tool `name` (its own name) is offered.
    pub fn offers(&self, name: &str) -> bool {
        self.enabled_tools.as_ref().is_none_or(|only| only.iter().any(|tool| tool == name))
            && !self.disabled_tools.iter().any(|tool| tool == name)
    }
}

/// Where the server is.
#[derive(Debug, Clone)]
pub enum Transport {
    /// A child process spoken to over its stdin and stdout.
    Stdio {
        /// The program (looked up in `PATH`).
        command: String,
        /// Its arguments.
        args: Vec<String>,
        /// Variables set to these values (written in the config, so shown nowhere).
        env: BTreeMap<String, Secret>,
        /// Variables passed from toolhost's own environment, by name.
        env_vars: Vec<EnvName>,
        /// The working folder; toolhost's own when unset.
        cwd: Option<PathBuf>,
    },
    /// Streamable HTTP.
    Http {
        /// The endpoint, `http://` or `https://`.
        url: String,
        /// The variable holding a bearer token sent as `Authorization: Bearer …`.
        bearer_token_env_var: Option<EnvName>,
        /// Headers sent with every request (values never shown).
        http_headers: BTreeMap<String, Secret>,
        /// Headers whose values come from toolhost's environment, by variable name.
        env_http_headers: BTreeMap<String, EnvName>,
    },
}

/// `[mcp_servers.NAME]` as written.
#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
struct ServerTable {
    command: Option<String>,
    args: Option<Vec<String>>,
    env: Option<BTreeMap<String, String>>,
    env_vars: Option<Vec<EnvName>>,
    cwd: Option<PathBuf>,
    url: Option<String>,
    bearer_token_env_var: Option<EnvName>,
    http_headers: Option<BTreeMap<String, String>>,
    env_http_headers: Option<BTreeMap<String, EnvName>>,
    startup_timeout: Option<HumanDuration>,
    tool_timeout: Option<HumanDuration>,
    #[serde(default)]
    required: bool,
    enabled: Option<bool>,
    enabled_tools: Option<Vec<String>>,
    #[serde(default)]
    disabled_tools: Vec<String>,
    protocol: Option<String>,
}

impl TryFrom<ServerTable> for McpServerConfig {
    type Error = String;

    fn try_from(table: ServerTable) -> Result<McpServerConfig, String> {
        let transport = match (table.command, table.url) {
            (Some(_), Some(_)) => {
                return Err("give either `command` (a server started by toolhost) or `url` (Streamable HTTP), \
                            not both"
                    .to_owned());
            }
            (None, None) => {
                return Err("say how to reach the server: `command = \"npx\"` (with `args`) for one toolhost \
                            starts, or `url = \"https://…/mcp\"` for Streamable HTTP"
                    .to_owned());
            }
            (Some(command), None) => {
                let http_keys = [
                    ("bearer_token_env_var", table.bearer_token_env_var.is_some()),
                    ("http_headers", table.http_headers.is_some()),
                    ("env_http_headers", table.env_http_headers.is_some()),
                ];
                if let Some((key, _)) = http_keys.iter().find(|(_, set)| *set) {
                    return Err(format!(
                        "`{key}` is for servers reached over HTTP (`url`); this one is started with \
                         `command`: remove `{key}`, or pass a token with `env_vars`"
                    ));
                }
                if command.trim().is_empty() {
                    return Err("`command` is empty: name the program that starts the server".to_owned());
                }
                Transport::Stdio {
                    command,
                    args: table.args.unwrap_or_default(),
                    env: table.env.unwrap_or_default().into_iter().map(|(k, v)| (k, Secret::new(v))).collect(),
                    env_vars: table.env_vars.unwrap_or_default(),
                    cwd: table.cwd,
                }
            }
            (None, Some(url)) => {
                let stdio_keys = [
                    ("args", table.args.is_some()),
                    ("env", table.env.is_some()),
                    ("env_vars", table.env_vars.is_some()),
                    ("cwd", table.cwd.is_some()),
                ];
                if let Some((key, _)) = stdio_keys.iter().find(|(_, set)| *set) {
                    return Err(format!(
                        "`{key}` is for servers toolhost starts (`command`); this one is reached at `url`: \
                         remove `{key}`"
                    ));
                }
                let scheme_ok = url.starts_with("http://") || url.starts_with("https://");
                if !scheme_ok || reqwest::Url::parse(&url).is_err() {
                    return Err(format!("`url = \"{url}\"` is not an http(s) URL, e.g. `https://mcp.example.com/mcp`"));
                }
                let http_headers = table.http_headers.unwrap_or_default();
                let env_http_headers = table.env_http_headers.unwrap_or_default();
                for name in http_headers.keys().chain(env_http_headers.keys()) {
                    if http::HeaderName::from_bytes(name.as_bytes()).is_err() {
                        return Err(format!("`{name}` is not an HTTP header name (letters, digits and `-`)"));
                    }
                }
                for (name, value) in &http_headers {
                    if http::HeaderValue::from_str(value).is_err() {
                        return Err(format!("the value of header `{name}` has characters a header cannot carry"));
                    }
                }
                Transport::Http {
                    url,
                    bearer_token_env_var: table.bearer_token_env_var,
                    http_headers: http_headers.into_iter().map(|(k, v)| (k, Secret::new(v))).collect(),
                    env_http_headers,
                }
            }
        };
        if let Some(both) = table.enabled_tools.iter().flatten().find(|tool| table.disabled_tools.contains(tool)) {
            return Err(format!("`{both}` is in both `enabled_tools` and `disabled_tools`: keep one"));
        }
        let protocol = table.protocol.as_deref().map_or(Ok(Protocol::Auto), Protocol::parse)?;
        Ok(McpServerConfig {
            protocol,
            transport,
            startup_timeout: table.startup_timeout.map_or(DEFAULT_STARTUP_TIMEOUT, |d| d.0),
            tool_timeout: table.tool_timeout.map_or(DEFAULT_TOOL_TIMEOUT, |d| d.0),
            required: table.required,
            enabled: table.enabled.unwrap_or(true),
            enabled_tools: table.enabled_tools,
            disabled_tools: table.disabled_tools,
        })
    }
}

#[cfg(test)]
mod tests {
    use super::{McpServerConfig, Transport};
    use std::collections::BTreeMap;
    use std::time::Duration;

    /// The `[mcp_servers]` part of a config file.
    #[derive(Debug, serde::Deserialize)]
    struct Config {
        mcp_servers: BTreeMap<String, McpServerConfig>,
    }

    impl Config {
        fn parse(text: &str) -> Result<Config, String> {
            toml::from_str(text).map_err(|err| err.to_string())
        }
    }

    #[test]
    fn accepts_stdio_and_http_servers() {
        let config = Config::parse(
            r#"
            [mcp_servers.everything]
            command = "npx"
            args = ["-y", "@modelcontextprotocol/server-everything"]
            env = { LOG_LEVEL = "warn" }
            env_vars = ["GITHUB_TOKEN"]
            startup_timeout = "30s"
            tool_timeout = "1.5s"

            [mcp_servers.remote]
            url = "https://mcp.example.com/mcp"
            bearer_token_env_var = "REMOTE_TOKEN"
            http_headers = { "X-Team" = "tools" }
            enabled_tools = ["search"]
            required = true
            protocol = "2025-11-25"
            "#,
        )
        .unwrap();
        let everything = &config.mcp_servers["everything"];
        assert_eq!(everything.tool_timeout, Duration::from_millis(1500));
        assert!(!everything.required);
        let Transport::Stdio { command, args, env, env_vars, .. } = &everything.transport else { panic!() };
        assert_eq!(command, "npx");
        assert_eq!(args.len(), 2);
        assert_eq!(env["LOG_LEVEL"].expose(), "warn");
        assert_eq!(env_vars[0].as_str(), "GITHUB_TOKEN");
        let remote = &config.mcp_servers["remote"];
        assert!(remote.required);
        assert_eq!(remote.tool_timeout, super::DEFAULT_TOOL_TIMEOUT);
        assert!(remote.offers("search") && !remote.offers("delete"));
        assert_eq!(remote.protocol, super::Protocol::Handshake);
        assert_eq!(everything.protocol, super::Protocol::Auto);
        let Transport::Http { http_headers, .. } = &remote.transport else { panic!() };
        assert!(!format!("{remote:?}").contains("tools\""), "header values are never shown: {:?}", http_headers);
    }

    #[test]
    fn rejects_malformed_servers_with_the_fix() {
        let cases = [
            (
                "[mcp_servers.x]\nurl = \"http://127.0.0.1/mcp\"\nargs = [\"a\"]\n",
                "`args` is for servers toolhost starts",
            ),
            ("[mcp_servers.x]\nurl = \"http://127.0.0.1/mcp\"\nenv_vars = [\"A\"]\n", "remove `env_vars`"),
            (
                "[mcp_servers.x]\ncommand = \"srv\"\nbearer_token_env_var = \"T\"\n",
                "`bearer_token_env_var` is for servers reached over HTTP",
            ),
            ("[mcp_servers.x]\ncommand = \"srv\"\nurl = \"http://127.0.0.1/mcp\"\n", "not both"),
            ("[mcp_servers.x]\nrequired = true\n", "`command = \"npx\"`"),
            ("[mcp_servers.x]\nurl = \"ftp://example.com\"\n", "not an http(s) URL"),
            ("[mcp_servers.x]\ncommand = \"srv\"\ntool_timeout = \"60\"\n", "e.g. `500ms`"),
            ("[mcp_servers.x]\ncommand = \"srv\"\ntool_timeout = 60\n", "a string"),
            ("[mcp_servers.x]\ncommand = \"srv\"\nenv_vars = [\"A=b\"]\n", "did you mean `A`?"),
            ("[mcp_servers.x]\ncommand = \"srv\"\ncomand = \"srv\"\n", "unknown field `comand`"),
            ("[mcp_servers.x]\ncommand = \"srv\"\nenabled_tools = [\"a\"]\ndisabled_tools = [\"a\"]\n", "keep one"),
            (
                "[mcp_servers.x]\nurl = \"http://127.0.0.1/mcp\"\nhttp_headers = { \"Bad Name\" = \"v\" }\n",
                "not an HTTP header name",
            ),
            ("[mcp_servers.x]\ncommand = \"srv\"\nprotocol = \"2024-01-01\"\n", "use \"auto\""),
        ];
        for (text, expected) in cases {
            let err = Config::parse(text).unwrap_err().to_string();
            assert!(err.contains(expected), "{text}: {err}");
            assert!(err.contains("line"), "{text}: the error points at the line: {err}");
        }
    }

    #[test]
    fn rejects_secrets_in_error_messages() {
        let text = "[mcp_servers.x]\nurl = \"http://127.0.0.1/mcp\"\nhttp_headers = { \"X-Key\" = \"sekrit\\n\" }\n";
        let err = Config::parse(text).unwrap_err().to_string();
        assert!(err.contains("X-Key") && !err.contains("sekrit"), "{err}");
    }
}

//! `[approvals]`: which tool calls may run, per tool, plugin or MCP server
//! (`auto`, `ask`, `deny`). The agent asks a person about `ask`; `serve`
//! hides `deny` tools from MCP clients.

use serde::Deserialize;
use std::collections::BTreeMap;

/// What to do with a call to a tool.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum Policy {
    /// Run it.
    Auto,
    /// Ask a person first (denied when there is nobody to ask).
    Ask,
    /// Never run it; the model is told.
    Deny,
}

/// `[approvals]` in `toolhost.toml`.
///
/// ```toml
/// [approvals]
/// default = "auto"                  # what applies when nothing below matches
/// tools = { regex_replace = "ask" } # by tool name (wins over the plugin)
/// plugins = { fetch = "deny" }      # by plugin (file stem)
/// servers = { github = "ask" }      # by MCP server (`[mcp_servers.NAME]`)
/// ```
#[derive(Debug, Clone, Default, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct ApprovalConfig {
    /// The policy when neither the tool nor its plugin is listed; `auto` if unset.
    pub default: Option<Policy>,
    /// Policies by tool name.
    #[serde(default)]
    pub tools: BTreeMap<String, Policy>,
    /// Policies by plugin name.
    #[serde(default)]
    pub plugins: BTreeMap<String, Policy>,
    /// Policies by MCP server name (`[mcp_servers.NAME]`).
    #[serde(default)]
    pub servers: BTreeMap<String, Policy>,
}

impl ApprovalConfig {
    /// The policy for `tool` of `plugin`: the tool's, else the plugin's, else the default.
    pub fn policy_for(&self, tool: &str, plugin: &str) -> Policy {
        self.tools.get(tool).or_else(|| self.plugins.get(plugin)).copied().or(self.default).unwrap_or(Policy::Auto)
    }
}

impl ApprovalConfig {
    /// The policy for `tool` of the MCP server `server`: the tool's, else
    /// the server's, else the default. What the server declares about the
    /// tool (`readOnlyHint`, …) plays no part.
    pub fn policy_for_server(&self, tool: &str, server: &str) -> Policy {
        self.tools.get(tool).or_else(|| self.servers.get(server)).copied().or(self.default).unwrap_or(Policy::Auto)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_tool_wins_over_the_plugin_over_the_default() {
        let config: ApprovalConfig = toml::from_str(
            "default = \"ask\"\ntools = { sha256 = \"auto\" }\nplugins = { hash = \"deny\", text = \"auto\" }",
        )
        .unwrap();
        assert_eq!(config.policy_for("sha256", "hash"), Policy::Auto);
        assert_eq!(config.policy_for("sha512", "hash"), Policy::Deny);
        assert_eq!(config.policy_for("regex_find", "text"), Policy::Auto);
        assert_eq!(config.policy_for("calculate", "calc"), Policy::Ask);
        assert_eq!(ApprovalConfig::default().policy_for("x", "y"), Policy::Auto);
    }

    #[test]
    fn rejects_unknown_policies() {
        let err = toml::from_str::<ApprovalConfig>("default = \"maybe\"").unwrap_err().to_string();
        assert!(err.contains("auto") && err.contains("ask") && err.contains("deny"), "{err}");
    }
}

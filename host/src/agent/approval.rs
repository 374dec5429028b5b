//! Whether a tool call may run: a policy per tool or plugin (`auto`, `ask`,
//! `deny`), and, for `ask`, an [`Approver`] that asks a person.

use serde::Deserialize;
use std::collections::BTreeMap;
use std::future::Future;
use std::pin::Pin;

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

/// What a person is asked about.
#[derive(Debug, Clone)]
pub struct ApprovalRequest {
    /// The tool.
    pub tool: String,
    /// Its source: `plugin NAME`, or `mcp SERVER` for an external MCP server.
    pub plugin: String,
    /// The arguments the model sent.
    pub arguments: String,
    /// What the plugin was granted beyond computing (files, network, env).
    pub capabilities: Vec<String>,
}

/// A person's answer.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Decision {
    /// Run this call.
    AllowOnce,
    /// Run this call and every later call to the same tool in this session.
    AllowSession,
    /// Run this call: the operator approved every call in advance (`--yes`).
    AllowAll,
    /// Do not run it, for this reason (told to the model).
    Deny(String),
}

/// Asks whether a call may run.
pub trait Approver: Send + Sync {
    /// Decides about `request`.
    fn decide<'a>(&'a self, request: &'a ApprovalRequest) -> Pin<Box<dyn Future<Output = Decision> + Send + 'a>>;
}

/// Approves every call whose policy is `ask` (`--yes`); a `deny` policy
/// still wins, as an approver is only asked about `ask`.
pub struct ApproveAll;

impl Approver for ApproveAll {
    fn decide<'a>(&'a self, _: &'a ApprovalRequest) -> Pin<Box<dyn Future<Output = Decision> + Send + 'a>> {
        Box::pin(async { Decision::AllowAll })
    }
}

/// Denies everything that asks: for runs with nobody at a terminal.
pub struct NobodyToAsk;

impl Approver for NobodyToAsk {
    fn decide<'a>(&'a self, request: &'a ApprovalRequest) -> Pin<Box<dyn Future<Output = Decision> + Send + 'a>> {
        let reason = format!(
            "calls to `{}` need a person's approval and there is no terminal to ask on \
             (the operator can run with --yes or set its approval policy to \"auto\")",
            request.tool
        );
        Box::pin(async move { Decision::Deny(reason) })
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

//! Whether a tool call may run: a policy per tool or plugin (`auto`, `ask`,
//! `deny`; the catalog's, as `serve` hides `deny` tools too), and, for `ask`,
//! an [`Approver`] that asks a person.

use std::future::Future;
use std::pin::Pin;
pub use toolhost_catalog::policy::{ApprovalConfig, Policy};

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

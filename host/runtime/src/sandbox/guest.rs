//! The seam between the sandbox and the contracts: what the sandbox asks a
//! prepared plugin to do ([`Request`]), what it answers ([`Response`], in
//! the host's own types), and the one trait every kind of plugin implements
//! ([`Guest`], in `crate::contract`). Nothing here names a WIT type.

use super::HostState;
use crate::cache::ListedTool;
use crate::content::ContentBlock;
use crate::offers::{Completion, Offers, PromptResult, Reference};
use crate::outcome::{CallError, ToolOutput};
use std::future::Future;
use std::pin::Pin;
use wasmtime::{Engine, Store};

/// What the sandbox is asked to run.
pub enum Request<'a> {
    /// List the plugin's tools.
    ListTools,
    /// Call one of its tools with these (validated) arguments. A contract
    /// plugin is called by `name` with the `arguments` text; a typed
    /// component by the tool's `position` with the parsed `value`.
    Call { name: &'a str, position: usize, arguments: &'a str, value: &'a serde_json::Value },
    /// A `full` plugin's resources, templates and prompts.
    ListOffers,
    /// `read-resource(uri)`.
    ReadResource { uri: &'a str },
    /// `get-prompt(name, arguments)`.
    GetPrompt { name: &'a str, arguments: &'a [(String, String)] },
    /// `complete(reference, argument, value, context)`.
    Complete { reference: Reference<'a>, argument: &'a str, value: &'a str, context: &'a [(String, String)] },
}

/// What the guest returned, in the host's types. A plugin's own refusal is
/// `CallError::InvalidArguments` or `CallError::ToolFailed`; nothing else of
/// [`CallError`] comes from a contract.
pub enum Response {
    /// Its tools (checked by the catalog).
    Tools(Vec<ListedTool>),
    /// A tool's output (text, JSON or content blocks), or its refusal.
    Called(Result<ToolOutput, CallError>),
    /// What a `full` plugin offers (checked by [`crate::offers::Offers::check`]).
    Offers(Offers),
    /// A resource's contents, as `resource` blocks.
    Read(Result<Vec<ContentBlock>, CallError>),
    /// A prompt filled in.
    Prompt(Result<PromptResult, CallError>),
    /// Suggested values.
    Completion(Result<Completion, CallError>),
}

/// A running request's answer.
pub type Running<'a> = Pin<Box<dyn Future<Output = wasmtime::Result<Response>> + Send + 'a>>;

/// A plugin of one kind (a contract version, or typed functions), linked and
/// ready to instantiate. The sandbox builds the store, limits and captures;
/// the guest only instantiates itself in it and runs the request.
pub trait Guest: Send + Sync {
    /// The engine it was compiled for.
    fn engine(&self) -> &Engine;

    /// Instantiates the plugin in `store` and runs `request`. A request the
    /// plugin's kind cannot answer is an error (the catalog never sends one).
    fn run<'a>(&'a self, store: &'a mut Store<HostState>, request: Request<'a>) -> Running<'a>;

    /// Whether it offers resources, prompts and completions besides tools.
    fn offers_more(&self) -> bool {
        false
    }
}

//! toolhost runs LLM tools as sandboxed WebAssembly components.
//!
//! A plugin is a WASI preview-2 component implementing the contract in
//! `wit/`. A [`Host`] loads a folder of them (compiling each once, through an
//! on-disk cache), learns their tools, and runs every call in a fresh instance
//! under per-call [`Limits`]: fuel, memory, wall-clock time and output size,
//! with no filesystem, environment or network unless granted ([`grants`]:
//! hosts over `wasi:http`, folders, environment variables, set per plugin in
//! the config). Whatever a plugin does, the call ends in a [`CallReport`]
//! whose outcome is the output or a typed [`CallError`], and the host carries on.
//!
//! This crate is the facade: it re-exports the layers (one crate each, see
//! ARCHITECTURE.md) under the paths users know, assembles [`Config`] from
//! the sections each layer owns, and holds the `toolhost` binary (module
//! `cli`), a thin layer over this library.

pub mod config;
#[cfg(test)]
mod fuzz;
pub mod telemetry;

/// The model loop, providers, approvals, events and transcripts.
pub use toolhost_agent as agent;
pub use toolhost_audit as audit;
/// The tool catalog, the [`Host`] that fills and calls it, and hot reload.
pub use toolhost_catalog as catalog;
pub use toolhost_catalog::{inspect, plugin};
/// What a plugin may reach, and the bounded reader of user-named files.
pub use toolhost_grants as grants;
pub use toolhost_grants::readfile;
/// Plugins in OCI registries.
pub use toolhost_oci as oci;
/// One sandboxed call: engine, limits, outcomes, compile cache, network.
pub use toolhost_runtime as runtime;
pub use toolhost_runtime::tls;

/// MCP: the server (`toolhost serve`) and, as [`mcp::client`], external MCP
/// servers as a tool source.
pub mod mcp {
    pub use toolhost_mcp::*;
    pub use toolhost_mcp_client as client;
}

pub use catalog::{Caller, Catalog, Entry, Host, HostConfig, LoadProblem, ProblemKind, SharedCatalog};
pub use config::Config;
pub use grants::Grants;
pub use grants::manifest::Manifest;
pub use inspect::Inspection;
pub use plugin::{Plugin, Tool};
pub use runtime::compiler::serve_workers;
pub use runtime::limits::{ByteSize, HumanDuration, LimitOverrides, Limits, Oversized};
pub use runtime::outcome::{CallError, CallReport, LogRecord, Refusal, RefusalReason, ToolOutput, Usage};

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
//! The `toolhost` binary (module `cli`) is a thin layer over this library.

pub mod agent;
pub mod catalog;
pub mod config;
#[cfg(test)]
mod fuzz;
pub mod grants;
mod host;
pub mod inspect;
pub mod mcp;
pub mod oci;
pub mod plugin;
pub mod readfile;
pub mod runtime;
pub mod tls;

pub use catalog::{Catalog, Entry, SharedCatalog};
pub use config::Config;
pub use grants::Grants;
pub use grants::manifest::Manifest;
pub use host::{Host, LoadProblem, ProblemKind};
pub use inspect::Inspection;
pub use plugin::{Plugin, Tool};
pub use runtime::limits::{ByteSize, HumanDuration, LimitOverrides, Limits, Oversized};
pub use runtime::outcome::{CallError, CallReport, LogRecord, Refusal, RefusalReason, ToolOutput, Usage};

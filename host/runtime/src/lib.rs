//! Running one call: the wasmtime engine, the per-call sandbox and its
//! limits, the compile cache, the network a call reaches through its grants,
//! and the typed outcome every call ends in. Below it are only the grants;
//! it knows nothing of catalogs, configs, MCP or models.

pub mod ask;
pub mod cache;
pub mod compiler;
pub mod content;
pub mod content_check;
pub mod contract;
pub mod docs;
pub mod engine;
pub mod features;
pub(crate) mod inject;
pub mod limits;
pub mod offers;
pub(crate) mod outbound;
pub mod outcome;
pub mod sandbox;
pub mod text;
pub mod tls;
pub mod trace;
pub mod typed;

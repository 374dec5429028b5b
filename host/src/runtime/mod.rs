//! Running one call: the wasmtime engine, the per-call sandbox and its
//! limits, the compile cache, the network a call reaches through its grants,
//! and the typed outcome every call ends in.

pub mod cache;
pub mod engine;
pub mod limits;
pub(crate) mod outbound;
pub mod outcome;
pub(crate) mod sandbox;

//! toolhost's integration tests, as one test binary: each file here was its own
//! binary, and each linked wasmtime, so `make test` spent much of its time
//! linking. One binary links once (wasmtime and ripgrep lay their tests out the
//! same way). Run one file's tests with `cargo test -p toolhost --test all cli::`.
//!
//! `common/` holds the helpers every module shares (`use crate::common`).

mod common;

mod asking;
mod audit;
mod cli;
mod console;
mod contract_v0_2;
mod credentials;
mod deploy;
mod docs;
mod egress;
mod first_run;
mod grants;
mod hardening;
mod imports;
mod languages;
mod loading;
mod mcp;
mod mcp_client;
mod network;
mod new;
mod oauth;
mod oci;
mod old_linux;
mod profiles;
mod reload;
mod replicas;
mod result_cache;
mod run;
mod sandbox;
mod startup;
mod telemetry;
mod typed;
mod wasip3;
mod wassette;
mod wheel;

//! toolhost's integration tests, as one test binary: each file here was its own
//! binary, and each linked wasmtime, so `make test` spent much of its time
//! linking. One binary links once (wasmtime and ripgrep lay their tests out the
//! same way). Run one file's tests with `cargo test -p toolhost --test all cli::`.
//!
//! While each file still declares `mod common;` itself, `#[path]` loads it as a
//! directory-owning module so that declaration finds `common/` beside it.
#![allow(clippy::duplicate_mod)]

#[path = "asking.rs"]
mod asking;
#[path = "cli.rs"]
mod cli;
#[path = "contract_v0_2.rs"]
mod contract_v0_2;
#[path = "credentials.rs"]
mod credentials;
#[path = "grants.rs"]
mod grants;
#[path = "hardening.rs"]
mod hardening;
#[path = "languages.rs"]
mod languages;
#[path = "loading.rs"]
mod loading;
#[path = "mcp.rs"]
mod mcp;
#[path = "mcp_client.rs"]
mod mcp_client;
#[path = "network.rs"]
mod network;
#[path = "new.rs"]
mod new;
#[path = "oauth.rs"]
mod oauth;
#[path = "oci.rs"]
mod oci;
#[path = "reload.rs"]
mod reload;
#[path = "replicas.rs"]
mod replicas;
#[path = "run.rs"]
mod run;
#[path = "sandbox.rs"]
mod sandbox;
#[path = "startup.rs"]
mod startup;
#[path = "telemetry.rs"]
mod telemetry;
#[path = "typed.rs"]
mod typed;

//! `toolhost push FILE REF`: publishes a plugin (and the `NAME.toml` beside
//! it) to an OCI registry as a Wasm component artifact.

use anyhow::Result;
use std::path::PathBuf;
use std::process::ExitCode;
use toolhost::oci::{Publishable, Registry, RegistryOptions, Source};
use toolhost::{Config, Host};

#[derive(clap::Args)]
pub struct Args {
    /// The plugin's .wasm file (its NAME.toml, when beside it, is pushed too)
    file: PathBuf,

    /// Where to push: REGISTRY/REPOSITORY:TAG
    reference: String,

    /// Allow plain HTTP to a registry that is not on this machine
    #[arg(long)]
    insecure: bool,
}

pub async fn run(config: Config, args: Args) -> Result<ExitCode> {
    let source: Source = args.reference.parse().map_err(anyhow::Error::msg)?;
    let options = RegistryOptions { insecure: args.insecure, ca_file: config.ca_file.clone() };
    let host = Host::new(config)?;
    let plugin = match Publishable::read(&host, &args.file).await {
        Ok(plugin) => plugin,
        Err(err) => {
            eprintln!("error: {err:#}; nothing was pushed");
            return Ok(ExitCode::FAILURE);
        }
    };
    let pushed = tokio::select! {
        pushed = async { Registry::connect(&source, &options).await?.push(&source, &plugin).await } => pushed,
        _ = tokio::signal::ctrl_c() => return Err(super::Cancelled.into()),
    };
    match pushed {
        Ok(digest) => {
            let with = if plugin.manifest.is_some() { format!(" with {}.toml", plugin.name) } else { String::new() };
            eprintln!("pushed {}{with} to {source}", args.file.display());
            println!("{digest}");
            Ok(ExitCode::SUCCESS)
        }
        Err(err) => {
            eprintln!("error: {err:#}");
            Ok(ExitCode::FAILURE)
        }
    }
}

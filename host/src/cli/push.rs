//! `toolhost push FILE REF [--sign KEY]`: publishes a plugin (and the
//! `NAME.toml` beside it) to an OCI registry as a Wasm component artifact,
//! and with `--sign` stores a cosign signature of it beside it.

use anyhow::Result;
use std::path::PathBuf;
use std::process::ExitCode;
use toolhost::grants::env::Secret;
use toolhost::oci::keys::PASSWORD_ENV;
use toolhost::oci::{Publishable, Registry, RegistryOptions, SigningKey, Source};
use toolhost::{Config, Host};

#[derive(clap::Args)]
pub struct Args {
    /// The plugin's .wasm file (its NAME.toml, when beside it, is pushed too)
    file: PathBuf,

    /// Where to push: REGISTRY/REPOSITORY:TAG
    reference: String,

    /// Sign the pushed artifact with this private key, as `cosign sign --key`
    /// does: cosign.key (its password in COSIGN_PASSWORD), or a PEM
    /// `PRIVATE KEY` or `EC PRIVATE KEY` (ECDSA P-256)
    #[arg(long, value_name = "KEY")]
    sign: Option<PathBuf>,

    /// Allow plain HTTP to a registry that is not on this machine
    #[arg(long)]
    insecure: bool,
}

pub async fn run(config: Config, args: Args) -> Result<ExitCode> {
    let source: Source = args.reference.parse().map_err(anyhow::Error::msg)?;
    let options = RegistryOptions { insecure: args.insecure, ca_file: config.ca_file.clone() };
    // The key first: a key that cannot sign stops the push before anything is sent.
    let key = match &args.sign {
        Some(path) => match read_key(path) {
            Ok(key) => Some(key),
            Err(why) => {
                eprintln!("error: {why}; nothing was pushed");
                return Ok(ExitCode::FAILURE);
            }
        },
        None => None,
    };
    let host = Host::new(config)?;
    let plugin = match Publishable::read(&host, &args.file).await {
        Ok(plugin) => plugin,
        Err(err) => {
            eprintln!("error: {err:#}; nothing was pushed");
            return Ok(ExitCode::FAILURE);
        }
    };
    let registry = tokio::select! {
        registry = Registry::connect(&source, &options) => registry,
        _ = tokio::signal::ctrl_c() => return Err(super::Cancelled.into()),
    };
    let pushed = match registry {
        Ok(registry) => tokio::select! {
            pushed = registry.push(&source, &plugin) => pushed.map(|digest| (registry, digest)),
            _ = tokio::signal::ctrl_c() => return Err(super::Cancelled.into()),
        },
        Err(err) => Err(err),
    };
    let (registry, digest) = match pushed {
        Ok(pushed) => pushed,
        Err(err) => {
            eprintln!("error: {err:#}");
            return Ok(ExitCode::FAILURE);
        }
    };
    let with = if plugin.manifest.is_some() { format!(" with {}.toml", plugin.name) } else { String::new() };
    eprintln!("pushed {}{with} to {source}", args.file.display());
    if let Some(key) = &key {
        let signed = tokio::select! {
            signed = registry.sign(&source, &digest, key) => signed,
            _ = tokio::signal::ctrl_c() => return Err(super::Cancelled.into()),
        };
        match signed {
            Ok(signer) => eprintln!("signed {digest} with {signer}"),
            Err(err) => {
                eprintln!(
                    "error: {err:#}: {digest} was pushed unsigned; push again with --sign, or sign it with \
                     `cosign sign --key KEY {}/{}@{digest}`",
                    source.registry(),
                    source.repository()
                );
                return Ok(ExitCode::FAILURE);
            }
        }
    }
    println!("{digest}");
    Ok(ExitCode::SUCCESS)
}

/// Reads `--sign`'s key, with the password from `COSIGN_PASSWORD` when it is set.
fn read_key(path: &std::path::Path) -> Result<SigningKey, String> {
    let password = match std::env::var(PASSWORD_ENV) {
        Ok(password) => Some(Secret::new(password)),
        Err(std::env::VarError::NotPresent) => None,
        Err(std::env::VarError::NotUnicode(_)) => return Err(format!("{PASSWORD_ENV} is not valid UTF-8")),
    };
    SigningKey::read(path, password.as_ref())
}

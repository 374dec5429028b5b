//! `toolhost pull [REF] [--dir DIR] [--name NAME]`: fetches plugins from OCI
//! registries into the plugins folder; with no REF, every `[plugins.NAME]`
//! of the config that has a `source`. Each line says what the signature
//! check found, when a `[[trust]]` scope covers the reference.

use anyhow::{Result, bail};
use std::path::PathBuf;
use std::process::ExitCode;
use toolhost::oci::{self, PullOutcome, RegistryOptions, Source, Verdict};
use toolhost::{Config, Host};

#[derive(clap::Args)]
pub struct Args {
    /// What to pull: REGISTRY/REPOSITORY[:TAG][@sha256:DIGEST]; without it, every
    /// `[plugins.NAME]` with a `source` in the config
    reference: Option<String>,

    /// The plugins folder to write into [default: --plugins, else the config's plugins_dir]
    #[arg(long, value_name = "DIR")]
    dir: Option<PathBuf>,

    /// The plugin's name (its file stem) [default: the repository's last segment]
    #[arg(long, value_name = "NAME")]
    name: Option<String>,

    /// Allow plain HTTP to a registry that is not on this machine
    #[arg(long)]
    insecure: bool,
}

pub async fn run(config: Config, plugins_dir: PathBuf, args: Args) -> Result<ExitCode> {
    let dir = args.dir.clone().unwrap_or(plugins_dir);
    let options = RegistryOptions { insecure: args.insecure, ca_file: config.ca_file.clone() };
    let wanted: Vec<(Option<String>, Source)> = match &args.reference {
        Some(text) => {
            let source: Source = text.parse().map_err(anyhow::Error::msg)?;
            if let Some(name) = &args.name {
                oci::reference::check_plugin_name(name).map_err(anyhow::Error::msg)?;
            }
            vec![(args.name.clone(), source)]
        }
        None => {
            if args.name.is_some() {
                bail!("--name goes with a reference; in the config the name is the `[plugins.NAME]` table's");
            }
            let listed: Vec<_> = config
                .plugins
                .iter()
                .filter_map(|(name, plugin)| plugin.source.clone().map(|source| (Some(name.clone()), source)))
                .collect();
            if listed.is_empty() {
                bail!(
                    "nothing to pull: give a reference (`toolhost pull REGISTRY/REPOSITORY:TAG`), or list plugins in \
                     the config as `[plugins.NAME] source = \"REGISTRY/REPOSITORY:TAG@sha256:…\"`"
                );
            }
            listed
        }
    };
    let trust = config.trust.clone();
    // The host compiles each pulled component (into the compile cache) to check it is a plugin.
    let host = Host::new(config)?;
    let mut failed = false;
    for (name, source) in &wanted {
        // Ctrl-C drops the pull, and with it every temporary file it staged.
        let pulled = tokio::select! {
            pulled = oci::pull(&host, source, &dir, name.as_deref(), &options, &trust) => pulled,
            _ = tokio::signal::ctrl_c() => return Err(super::Cancelled.into()),
        };
        match pulled {
            Ok(pulled) => {
                let files = match &pulled.manifest_path {
                    Some(manifest) => format!("{} and {}", pulled.wasm_path.display(), manifest.display()),
                    None => pulled.wasm_path.display().to_string(),
                };
                let signed = match &pulled.verdict {
                    Verdict::Unchecked => String::new(),
                    Verdict::Signed(signer) => format!("; signature verified with {signer}"),
                    Verdict::Unsigned { scope } => {
                        format!("; not signed, accepted: `[[trust]]` for `{scope}` does not require a signature")
                    }
                };
                match pulled.outcome {
                    PullOutcome::Written => {
                        println!("pulled {} {source} ({}) → {files}{signed}", pulled.name, pulled.digest)
                    }
                    PullOutcome::Unchanged => println!(
                        "unchanged {} {source} ({}): {files} already in place{signed}",
                        pulled.name, pulled.digest
                    ),
                }
            }
            Err(err) => {
                eprintln!("error: {err:#}");
                failed = true;
            }
        }
    }
    Ok(if failed { ExitCode::FAILURE } else { ExitCode::SUCCESS })
}

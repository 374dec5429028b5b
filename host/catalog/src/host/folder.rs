//! The files a [`Host`] loads and guards: the `*.wasm` files of a plugins
//! folder (and advice when it cannot be read), and the refusal of a grant
//! that would reach toolhost's own files.

use crate::config::HostConfig;
use anyhow::{Context, Result};
use std::path::{Path, PathBuf};

/// The `*.wasm` files directly in `dir`, sorted.
pub fn plugin_files(dir: &Path) -> Result<Vec<PathBuf>> {
    let entries = std::fs::read_dir(dir).with_context(|| {
        format!("could not read the plugins folder {} ({})", dir.display(), missing_folder_advice(dir))
    })?;
    let mut paths: Vec<PathBuf> = entries
        .filter_map(|entry| entry.ok().map(|entry| entry.path()))
        // Not only regular files: a folder, FIFO or broken symlink named
        // `*.wasm` is reported as skipped (by `plugin::read`), not ignored.
        .filter(|path| path.extension().is_some_and(|ext| ext == "wasm"))
        .collect();
    paths.sort();
    Ok(paths)
}

/// What to do about a plugins folder that cannot be read. Building the
/// bundled plugins (`bash plugins/build.sh`) is advised only for the
/// `plugins/dist` of a checkout of toolhost, which has that script beside it:
/// anyone else points toolhost at the folder holding their `.wasm` files.
fn missing_folder_advice(dir: &Path) -> &'static str {
    let checkout =
        dir.ends_with("plugins/dist") && dir.parent().is_some_and(|parent| parent.join("build.sh").is_file());
    if checkout {
        "build the bundled plugins with `bash plugins/build.sh`, or point --plugins at a folder of .wasm files"
    } else {
        "point --plugins, or `plugins_dir` in toolhost.toml, at the folder that holds your .wasm files: \
         `--plugins .` for the folder you are in"
    }
}

pub fn stem(path: &Path) -> String {
    path.file_stem().map(|stem| stem.to_string_lossy().into_owned()).unwrap_or_default()
}

/// Refuses a config that grants a plugin a folder holding one of `protected`
/// (each with what it is): a plugin that could read or change toolhost's own
/// files (its compile cache, config, lock, keys or credentials) would hold
/// what its grants do not give it. Paths are compared resolved, so no
/// spelling or link of a folder gets past.
pub(super) fn check_grants(config: &HostConfig, protected: &[(std::path::PathBuf, String)]) -> Result<()> {
    let protected: Vec<(std::path::PathBuf, &str)> =
        protected.iter().map(|(path, what)| (resolved(path), what.as_str())).collect();
    for (plugin, settings) in &config.plugins {
        for dir in &settings.grants.files.dirs {
            let Ok(granted) = std::fs::canonicalize(&dir.host) else { continue };
            if let Some((path, what)) = protected.iter().find(|(path, _)| path.starts_with(&granted)) {
                anyhow::bail!(
                    "`[plugins.{plugin}]` grants the folder {} (as {}), which holds {what} ({}); a plugin there could \
                     read or change it. Grant a folder that does not hold toolhost's own files",
                    dir.host.display(),
                    dir.guest,
                    path.display()
                );
            }
        }
    }
    Ok(())
}

/// `path` with every link and `..` resolved, as far as it exists (a file
/// toolhost has not written yet is resolved through its nearest folder).
fn resolved(path: &Path) -> std::path::PathBuf {
    let absolute = std::path::absolute(path).unwrap_or_else(|_| path.to_owned());
    let mut rest = Vec::new();
    let mut at = absolute.as_path();
    loop {
        if let Ok(real) = std::fs::canonicalize(at) {
            return rest.iter().rev().fold(real, |path, part| path.join(part));
        }
        match (at.parent(), at.file_name()) {
            (Some(parent), Some(name)) => {
                rest.push(name.to_owned());
                at = parent;
            }
            _ => return absolute,
        }
    }
}

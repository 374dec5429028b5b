//! A plugin ready to publish (`toolhost push`): a file checked to be a
//! toolhost plugin, with its manifest and what it imports and exports.

use super::MAX_TOML;
use anyhow::{Result, anyhow};
use std::path::Path;
use toolhost_catalog::Host;

/// A plugin ready to publish: checked to be a toolhost plugin.
pub struct Publishable {
    /// The plugin's name (its file stem).
    pub name: String,
    /// The component.
    pub wasm: bytes::Bytes,
    /// Its `NAME.toml`, if there is one beside it.
    pub manifest: Option<String>,
    /// What it imports, for the artifact config.
    pub imports: Vec<String>,
    /// What it exports.
    pub exports: Vec<String>,
}

impl Publishable {
    /// Reads `path` (and `NAME.toml` beside it) and checks it is a toolhost plugin.
    pub async fn read(host: &Host, path: &Path) -> Result<Publishable> {
        let name = toolhost_catalog::host::stem(path);
        let wasm = toolhost_catalog::plugin::read(path).map_err(|why| anyhow!("{}: {why}", path.display()))?;
        let (component, _) = toolhost_catalog::plugin::compile(host.engine(), host.cache(), host.compiler(), &wasm)
            .await
            .map_err(|why| anyhow!("{}: {why}", path.display()))?;
        toolhost_catalog::plugin::contract_of(host.engine(), &component)
            .map_err(|why| anyhow!("{}: {why}", path.display()))?;
        let shape = toolhost_catalog::plugin::shape(host.engine(), &component);
        let manifest_path = toolhost_grants::Manifest::path_for(path);
        let manifest = match toolhost_grants::readfile::read_regular_text(&manifest_path, MAX_TOML) {
            Ok(text) => {
                toolhost_grants::Manifest::parse(&text)
                    .map_err(|why| anyhow!("{} is not a valid plugin manifest: {why}", manifest_path.display()))?;
                Some(text)
            }
            Err(err) if err.is_not_found() => None,
            Err(err) => return Err(anyhow!("could not read {}: {err}", manifest_path.display())),
        };
        Ok(Publishable {
            name,
            wasm: bytes::Bytes::from_owner(wasm.bytes),
            manifest,
            imports: shape.imports,
            exports: shape.exports.into_iter().map(|(name, _)| name).collect(),
        })
    }
}

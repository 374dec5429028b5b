//! `toolhost pull` and what it leaves: a plugin fetched with every digest
//! checked, its signature verified where a `[[trust]]` scope covers it,
//! compiled and checked into the host's cache, and written with its lock
//! entry together (`pull`, `Pulled`); and where a loaded folder differs from
//! the config's `source`s (`check_sources`).

use super::reference::Source;
use super::signature::Verdict;
use super::store::{Lock, Locked};
use super::trust::Trust;
use super::{Fetched, MAX_TOML, MAX_WASM, Registry, RegistryOptions, reference, store};
use anyhow::{Context, Result, anyhow};
use std::collections::BTreeMap;
use std::path::{Path, PathBuf};
use toolhost_catalog::Host;

/// What a pull did.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum PullOutcome {
    /// The files were written.
    Written,
    /// The folder already held this digest; nothing was written.
    Unchanged,
}

/// The result of pulling one plugin.
#[derive(Debug, Clone)]
pub struct Pulled {
    /// The plugin's name.
    pub name: String,
    /// The artifact's digest.
    pub digest: String,
    /// The `.wasm` written (or already there).
    pub wasm_path: PathBuf,
    /// The manifest written, if the artifact carried one.
    pub manifest_path: Option<PathBuf>,
    /// Whether anything was written.
    pub outcome: PullOutcome,
    /// What the signature check found.
    pub verdict: Verdict,
}

/// Pulls `source` into `dir` as `name` (default: the repository's last
/// segment): verifies every digest and, when a `[[trust]]` scope covers it,
/// its signature, checks the component is a toolhost plugin (compiling it
/// into the host's cache), and writes `NAME.wasm`, `NAME.toml` (when
/// carried) and the lock entry, with the verified signer, atomically. A
/// folder that already holds this digest, verified the same way, is left alone.
pub async fn pull(
    host: &Host,
    source: &Source,
    dir: &Path,
    name: Option<&str>,
    options: &RegistryOptions,
    trust: &Trust,
) -> Result<Pulled> {
    let name = name.unwrap_or_else(|| source.default_name());
    reference::check_plugin_name(name).map_err(|why| anyhow!("{source}: {why}"))?;
    std::fs::create_dir_all(dir).with_context(|| format!("could not create the plugins folder {}", dir.display()))?;
    // One pull at a time per folder, so two never overwrite each other's lock entries.
    let _exclusive = store::lock_folder(dir).await?;
    let lock = Lock::read(dir)?;
    let registry = Registry::connect(source, options).await?;
    let resolved = registry.resolve(source).await?;
    // Checked every time, also for what is already in place: the trust may have changed.
    let verdict = registry.verify(source, &resolved.digest, trust.for_source(source)).await?;
    let wasm_path = dir.join(format!("{name}.wasm"));
    let manifest_path = dir.join(format!("{name}.toml"));
    if let Some(locked) = lock.plugins.get(name)
        && locked.digest == resolved.digest
        && locked.signer.as_ref() == verdict.signer()
        && store::file_has_digest(&wasm_path, &locked.wasm, MAX_WASM)
        && locked.manifest.as_deref().is_none_or(|digest| store::file_has_digest(&manifest_path, digest, MAX_TOML))
    {
        return Ok(Pulled {
            name: name.to_owned(),
            digest: resolved.digest,
            manifest_path: locked.manifest.is_some().then_some(manifest_path),
            wasm_path,
            outcome: PullOutcome::Unchanged,
            verdict,
        });
    }
    let fetched = registry.fetch(source, &resolved).await?;
    check_plugin(host, source, &fetched).await?;
    let mut staged = store::Staged::new(dir);
    if let Some((text, _)) = &fetched.manifest {
        staged.write(&format!("{name}.toml"), text.as_bytes())?;
    } else if let Some(previous) = lock.plugins.get(name).and_then(|locked| locked.manifest.as_deref())
        && store::file_has_digest(&manifest_path, previous, MAX_TOML)
    {
        // The manifest an earlier pull wrote, which the new version no longer has.
        staged.remove(&format!("{name}.toml"));
    }
    staged.write(&format!("{name}.wasm"), &fetched.wasm)?;
    let mut lock = lock;
    lock.plugins.insert(
        name.to_owned(),
        Locked {
            source: source.to_string(),
            digest: fetched.digest.clone(),
            wasm: fetched.wasm_digest.clone(),
            manifest: fetched.manifest.as_ref().map(|(_, digest)| digest.clone()),
            signer: verdict.signer().cloned(),
        },
    );
    store::stage_lock(&mut staged, &lock)?;
    staged.commit()?;
    Ok(Pulled {
        name: name.to_owned(),
        digest: fetched.digest,
        manifest_path: fetched.manifest.is_some().then_some(manifest_path),
        wasm_path,
        outcome: PullOutcome::Written,
        verdict,
    })
}

/// Checks fetched bytes are a toolhost plugin with a valid manifest.
async fn check_plugin(host: &Host, source: &Source, fetched: &Fetched) -> Result<()> {
    toolhost_catalog::plugin::check_header(&fetched.wasm)
        .map_err(|why| anyhow!("{source}: the artifact's component is not usable: {why}; nothing was written"))?;
    let wasm = toolhost_catalog::plugin::WasmFile {
        bytes: fetched.wasm.clone(),
        sha256: fetched.wasm_digest.trim_start_matches("sha256:").to_owned(),
    };
    let (component, _) =
        toolhost_catalog::plugin::compile(host.engine(), host.cache(), host.compiler(), &wasm)
            .await
            .map_err(|why| anyhow!("{source}: the artifact's component is refused: {why}; nothing was written"))?;
    toolhost_catalog::plugin::contract_of(host.engine(), &component)
        .map_err(|why| anyhow!("{source}: the artifact does not hold a toolhost plugin: {why}; nothing was written"))?;
    if let Some((text, _)) = &fetched.manifest {
        toolhost_grants::Manifest::parse(text).map_err(|why| {
            anyhow!("{source}: the artifact's plugin manifest is not valid: {why}; nothing was written")
        })?;
    }
    Ok(())
}

/// Where the plugins folder `dir` differs from what the config's
/// `[plugins.NAME] source`s say it should hold, one sentence each: a source
/// never pulled, pulled from another reference, not the pinned digest,
/// pulled without the signature its `[[trust]]` scope now requires, or a
/// `.wasm` changed since it was pulled. `loaded` is each loaded plugin's name
/// and hex SHA-256 (already computed at load). Nothing when no plugin has a
/// `source`; the lock is read only then. `sources` are the `source`s by plugin name.
pub fn check_sources(
    sources: &BTreeMap<String, Source>,
    dir: &Path,
    loaded: &[(String, String)],
    trust: &Trust,
) -> Vec<String> {
    if sources.is_empty() {
        return Vec::new();
    }
    let lock = match Lock::read(dir) {
        Ok(lock) => lock,
        Err(err) => return vec![format!("{err:#}")],
    };
    let mut notices = Vec::new();
    for (name, source) in sources {
        let Some(locked) = lock.plugins.get(name) else {
            notices.push(format!(
                "{name}: the config's source {source} has not been pulled into {} (run `toolhost pull`)",
                dir.display()
            ));
            continue;
        };
        // Compared in canonical form: a lock written with another spelling of
        // the same reference is the same source.
        if locked.source.parse::<Source>().ok().as_ref() != Some(source) {
            notices.push(format!(
                "{name}: {} holds what was pulled from {}, but the config's source is {source} (run `toolhost pull`)",
                dir.display(),
                locked.source
            ));
        } else if let Some(pinned) = source.digest()
            && pinned != locked.digest
        {
            notices.push(format!(
                "{name}: {} holds {}, not the pinned {pinned} (run `toolhost pull`)",
                dir.display(),
                locked.digest
            ));
        } else if let Some(entry) = trust.for_source(source)
            && entry.require
            && locked.signer.is_none()
        {
            notices.push(format!(
                "{name}: {} holds what was pulled from {source} without a verified signature, but `[[trust]]` for \
                 `{}` requires one (run `toolhost pull`)",
                dir.display(),
                entry.scope
            ));
        }
        match loaded.iter().find(|(loaded, _)| loaded == name) {
            Some((_, sha256)) if format!("sha256:{sha256}") != locked.wasm => notices.push(format!(
                "{name}: {name}.wasm changed since it was pulled from {} (run `toolhost pull` to restore it)",
                locked.source
            )),
            _ => {}
        }
    }
    notices
}

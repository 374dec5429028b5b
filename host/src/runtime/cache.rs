//! The on-disk cache of compiled plugins.
//!
//! Compiling a component with Cranelift takes from milliseconds to seconds;
//! loading a compiled artifact is a memory map. An artifact's file name is
//! the SHA-256 of the `.wasm` bytes and a hash of everything in the engine
//! that makes compiled code compatible (wasmtime version, target, settings),
//! so a changed plugin or a different toolhost build never reuses a stale one.
//!
//! Artifacts are written to a temporary file and renamed into place, so a
//! crash or a concurrent start never leaves half a file under a real name.

use anyhow::{Context, Result};
use sha2::{Digest, Sha256};
use std::hash::{DefaultHasher, Hash, Hasher};
use std::io::Write;
use std::path::{Path, PathBuf};
use wasmtime::Engine;
use wasmtime::component::Component;

/// Where compiled plugins are kept.
#[derive(Debug, Clone)]
pub struct Cache {
    dir: PathBuf,
    engine_key: String,
}

/// How a component was obtained.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Origin {
    /// Compiled now (no cache, or no entry for these bytes yet).
    Compiled,
    /// Loaded from a compiled artifact in the cache.
    Cached,
}

impl Cache {
    /// A cache in `dir` (created on first write) for artifacts of `engine`.
    pub fn new(dir: PathBuf, engine: &Engine) -> Cache {
        let mut hasher = DefaultHasher::new();
        engine.precompile_compatibility_hash().hash(&mut hasher);
        Cache { dir, engine_key: format!("{:016x}", hasher.finish()) }
    }

    /// The user's default cache folder: `$TOOLHOST_CACHE_DIR`, else
    /// `$XDG_CACHE_HOME/toolhost`, else `~/.cache/toolhost`.
    pub fn default_dir() -> Option<PathBuf> {
        let env = |name| std::env::var_os(name).filter(|value| !value.is_empty()).map(PathBuf::from);
        env("TOOLHOST_CACHE_DIR")
            .or_else(|| env("XDG_CACHE_HOME").map(|dir| dir.join("toolhost")))
            .or_else(|| env("HOME").map(|dir| dir.join(".cache").join("toolhost")))
    }

    /// The folder artifacts live in.
    pub fn dir(&self) -> &Path {
        &self.dir
    }

    fn artifact_path(&self, sha256: &str) -> PathBuf {
        self.dir.join(format!("{sha256}-{}.cwasm", self.engine_key))
    }

    /// The component for `wasm`: from the cache when an artifact exists and
    /// loads, else compiled now and stored. A cache that cannot be written is
    /// logged and otherwise ignored: the plugin still loads.
    /// `sha256` is [`sha256_hex`] of `wasm`.
    pub fn load_or_compile(&self, engine: &Engine, wasm: &[u8], sha256: &str) -> Result<(Component, Origin)> {
        let path = self.artifact_path(sha256);
        if path.is_file() {
            // SAFETY: files in the cache folder are written only by `store`
            // below, from `Engine::precompile_component` of this very engine
            // configuration (the name carries its compatibility hash).
            // wasmtime still checks the header and version before use; an
            // artifact it rejects is recompiled and replaced.
            match unsafe { Component::deserialize_file(engine, &path) } {
                Ok(component) => return Ok((component, Origin::Cached)),
                Err(err) => tracing::warn!(
                    path = %path.display(),
                    "discarding an unusable compiled plugin: {err}"
                ),
            }
        }
        let artifact = engine.precompile_component(wasm).map_err(anyhow::Error::from)?;
        if let Err(err) = self.store(&path, &artifact) {
            tracing::warn!(dir = %self.dir.display(), "could not write the compile cache: {err:#}");
        }
        // SAFETY: `artifact` was produced just now by this engine.
        let component = unsafe { Component::deserialize(engine, &artifact) }.map_err(anyhow::Error::from)?;
        Ok((component, Origin::Compiled))
    }

    fn store(&self, path: &Path, artifact: &[u8]) -> Result<()> {
        std::fs::create_dir_all(&self.dir).with_context(|| format!("creating {}", self.dir.display()))?;
        let tmp = self.dir.join(format!(
            ".{}.{}.tmp",
            path.file_name().and_then(|name| name.to_str()).unwrap_or("artifact"),
            std::process::id()
        ));
        let mut file = std::fs::File::create(&tmp).with_context(|| format!("creating {}", tmp.display()))?;
        file.write_all(artifact).and_then(|()| file.sync_all()).with_context(|| {
            let _ = std::fs::remove_file(&tmp);
            format!("writing {}", tmp.display())
        })?;
        std::fs::rename(&tmp, path).with_context(|| {
            let _ = std::fs::remove_file(&tmp);
            format!("renaming {} into place", tmp.display())
        })
    }
}

/// Compiles `wasm` without any cache.
pub fn compile(engine: &Engine, wasm: &[u8]) -> Result<Component> {
    Component::new(engine, wasm).map_err(anyhow::Error::from)
}

/// Lower-case hex SHA-256 of `bytes`.
pub fn sha256_hex(bytes: &[u8]) -> String {
    use std::fmt::Write as _;
    let mut hex = String::with_capacity(64);
    for byte in Sha256::digest(bytes) {
        let _ = write!(hex, "{byte:02x}");
    }
    hex
}

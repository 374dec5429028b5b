//! The on-disk cache of compiled plugins.
//!
//! Compiling a component with Cranelift takes from milliseconds to seconds;
//! loading a compiled artifact is a memory map. An artifact's file name is
//! the SHA-256 of the `.wasm` bytes and a hash of everything in the engine
//! that makes compiled code compatible (wasmtime version, target, settings),
//! so a changed plugin or a different toolhost build never reuses a stale one.
//!
//! Beside each artifact the cache keeps what the plugin's `list-tools`
//! returned — or why loading it failed — under the same key
//! (`SHA-256-ENGINE-RELEASE.tools.json`, see [`Listing`]), so a start never
//! instantiates a plugin it has seen before. And since hashing a multi-megabyte
//! component at every start would cost more than the rest of the start, a
//! small index maps a file's identity (device, inode, size, modification and
//! change times) to its SHA-256 (`stat-KEY.sha256`); a file written in place
//! gets a new change time, a file renamed into place a new inode, so either is
//! hashed again. Every cache file is read as possibly hostile
//! ([`toolhost_grants::readfile`]: regular files only, bounded), and one that does not
//! parse is ignored.
//!
//! Every file is written to a temporary file and renamed into place, so a
//! crash or a concurrent start never leaves half a file under a real name.

use anyhow::{Context, Result};
use serde::{Deserialize, Serialize};
use sha2::{Digest, Sha256};
use std::hash::{DefaultHasher, Hash, Hasher};
use std::io::Write;
use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicU64, Ordering};
use std::time::{Duration, SystemTime};
use wasmtime::Engine;
use wasmtime::component::Component;

use crate::compiler::{CompileError, Compiler};
use toolhost_grants::manifest::HintsTable;

/// The largest tool list read back from the cache.
const LISTING_LIMIT: u64 = 16 << 20;

/// What a listing holds is partly derived by toolhost's own code (a typed
/// function's schemas and description, and whether the imports a plugin
/// needs are provided), so its file name carries the release and this
/// number, raised whenever either changes: a listing written by another
/// toolhost is never read.
const LISTING_FORMAT: u32 = 6;
const LISTING_RELEASE: &str = env!("CARGO_PKG_VERSION");

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

    fn listing_path(&self, sha256: &str) -> PathBuf {
        self.dir.join(format!("{sha256}-{}-{LISTING_RELEASE}.{LISTING_FORMAT}.tools.json", self.engine_key))
    }

    /// The component in the cached artifact for `sha256`, if there is one
    /// that loads. Memory-maps the file: nothing is copied.
    pub fn load(&self, engine: &Engine, sha256: &str) -> Option<Component> {
        let path = self.artifact_path(sha256);
        // The artifact must be a regular file (not a FIFO or a device someone
        // put there); wasmtime maps and checks the rest.
        drop(toolhost_grants::readfile::open_regular(&path).ok()?);
        // SAFETY: files in the cache folder are written only by `store`
        // below, from `Engine::precompile_component` of this very engine
        // configuration (the name carries its compatibility hash).
        // wasmtime still checks the header and version before use; an
        // artifact it rejects is recompiled and replaced.
        match unsafe { Component::deserialize_file(engine, &path) } {
            Ok(component) => Some(component),
            Err(err) => {
                tracing::warn!(path = %path.display(), "discarding an unusable compiled plugin: {err}");
                None
            }
        }
    }

    /// What was recorded about loading the plugin whose bytes hash to
    /// `sha256`, if anything (and it parses).
    pub fn listing(&self, sha256: &str) -> Option<Listing> {
        let path = self.listing_path(sha256);
        let bytes = toolhost_grants::readfile::read_regular(&path, LISTING_LIMIT).ok()?;
        match serde_json::from_slice(&bytes) {
            Ok(listing) => Some(listing),
            Err(err) => {
                tracing::warn!(path = %path.display(), "ignoring an unreadable tool list in the cache: {err}");
                None
            }
        }
    }

    /// Records `listing` for the plugin whose bytes hash to `sha256`. A
    /// cache that cannot be written is logged and otherwise ignored.
    pub fn store_listing(&self, sha256: &str, listing: &Listing) {
        let written = serde_json::to_vec(listing)
            .map_err(anyhow::Error::from)
            .and_then(|bytes| self.write_atomic(&self.listing_path(sha256), &bytes));
        if let Err(err) = written {
            tracing::warn!(dir = %self.dir.display(), "could not write the tool list to the cache: {err:#}");
        }
    }

    /// The SHA-256 recorded for the file `metadata` describes (taken from
    /// the opened file), if it was hashed before and has not changed since.
    pub fn known_sha256(&self, metadata: &std::fs::Metadata) -> Option<String> {
        let path = self.dir.join(format!("stat-{}.sha256", identity(metadata)?));
        let bytes = toolhost_grants::readfile::read_regular(&path, 64).ok()?;
        let text = std::str::from_utf8(&bytes).ok()?;
        (text.len() == 64 && text.bytes().all(|byte| byte.is_ascii_hexdigit())).then(|| text.to_owned())
    }

    /// Records that the file `metadata` describes hashes to `sha256`. Not
    /// for a file changed in the last few seconds: a write within the
    /// timestamp granularity could leave its times as they were.
    pub fn remember_sha256(&self, metadata: &std::fs::Metadata, sha256: &str) {
        let Some(key) = identity(metadata) else { return };
        if !settled(metadata) {
            return;
        }
        if let Err(err) = self.write_atomic(&self.dir.join(format!("stat-{key}.sha256")), sha256.as_bytes()) {
            tracing::warn!(dir = %self.dir.display(), "could not write the compile cache: {err:#}");
        }
    }

    /// The component for `wasm`: from the cache when an artifact exists and
    /// loads, else compiled now by `compiler` (within its bounds) and stored.
    /// A cache that cannot be written is logged and otherwise ignored: the
    /// plugin still loads. `sha256` is [`sha256_hex`] of `wasm`.
    pub fn load_or_compile(
        &self,
        engine: &Engine,
        compiler: &Compiler,
        wasm: &[u8],
        sha256: &str,
    ) -> Result<(Component, Origin), CompileError> {
        if let Some(component) = self.load(engine, sha256) {
            return Ok((component, Origin::Cached));
        }
        let path = self.artifact_path(sha256);
        if let Err(err) = std::fs::create_dir_all(&self.dir) {
            tracing::warn!(dir = %self.dir.display(), "could not write the compile cache: {err}");
            return compile(engine, compiler, wasm).map(|component| (component, Origin::Compiled));
        }
        // The compiler writes the artifact under a temporary name, renamed
        // into place once whole; it is then mapped from the file (its code
        // and memory images are shared page cache, as on a warm start).
        let tmp = self.dir.join(temporary_name(&path));
        compiler.compile_to(engine, wasm, &tmp)?;
        match std::fs::rename(&tmp, &path) {
            Ok(()) => {
                if let Some(component) = self.load(engine, sha256) {
                    return Ok((component, Origin::Compiled));
                }
                map_artifact(engine, &path, false).map(|component| (component, Origin::Compiled))
            }
            Err(err) => {
                tracing::warn!(dir = %self.dir.display(), "could not write the compile cache: {err}");
                map_artifact(engine, &tmp, true).map(|component| (component, Origin::Compiled))
            }
        }
    }

    /// Writes `bytes` to `path` through a temporary file renamed into place.
    fn write_atomic(&self, path: &Path, bytes: &[u8]) -> Result<()> {
        std::fs::create_dir_all(&self.dir).with_context(|| format!("creating {}", self.dir.display()))?;
        let tmp = self.dir.join(temporary_name(path));
        let mut file = std::fs::File::create(&tmp).with_context(|| format!("creating {}", tmp.display()))?;
        file.write_all(bytes).and_then(|()| file.sync_all()).with_context(|| {
            let _ = std::fs::remove_file(&tmp);
            format!("writing {}", tmp.display())
        })?;
        std::fs::rename(&tmp, path).with_context(|| {
            let _ = std::fs::remove_file(&tmp);
            format!("renaming {} into place", tmp.display())
        })
    }
}

/// A hidden name, unique in this process and among processes, for a file
/// being written that will be renamed to `path`.
fn temporary_name(path: &Path) -> String {
    static NEXT: AtomicU64 = AtomicU64::new(0);
    format!(
        ".{}.{}.{}.tmp",
        path.file_name().and_then(|name| name.to_str()).unwrap_or("artifact"),
        std::process::id(),
        NEXT.fetch_add(1, Ordering::Relaxed)
    )
}

/// Maps the artifact file at `path`, just written by a [`Compiler`] for
/// `engine`; with `remove` the file is deleted after (the mapping stays).
fn map_artifact(engine: &Engine, path: &Path, remove: bool) -> Result<Component, CompileError> {
    // SAFETY: the file was written just now by a compiler with this engine's
    // settings, under a name no one else writes; wasmtime still checks its
    // header and compatibility.
    let component = unsafe { Component::deserialize_file(engine, path) }
        .map_err(|err| CompileError::Worker(format!("loading the compiled plugin: {err:#}")));
    if remove {
        let _ = std::fs::remove_file(path);
    }
    component
}

/// What loading a plugin file came to, as the cache keeps it: the contract
/// version and tools it listed, or why it could not be loaded.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum Listing {
    /// It loaded and listed these tools (as the plugin returned them; the
    /// host checks them again when it reads them back).
    Tools {
        /// The contract version, e.g. `0.1.0`, or `typed`.
        contract: String,
        /// The tools, in the order the plugin listed them.
        tools: Vec<ListedTool>,
        /// What loading noted without refusing the plugin (a typed
        /// function left out, and why).
        #[serde(default, skip_serializing_if = "Vec::is_empty")]
        notes: Vec<String>,
        /// What a plugin of contract 0.2.0's `full` world offers besides tools
        /// (checked again when read back).
        #[serde(default, skip_serializing_if = "crate::offers::Offers::is_empty")]
        offers: crate::offers::Offers,
    },
    /// It could not be loaded.
    Failed {
        /// Why, as reported to the user.
        reason: String,
        /// For a failure of `list-tools` itself, the limits it ran under
        /// ([`crate::limits::Limits`] as `Debug`): with other limits it is tried again.
        limits: Option<String>,
    },
}

/// One tool as `list-tools` returned it.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct ListedTool {
    /// Its name.
    pub name: String,
    /// Its description.
    pub description: String,
    /// Its input schema, as text.
    pub input_schema: String,
    /// Its output schema, as text, when it declares one (typed functions,
    /// contract 0.2.0).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub output_schema: Option<String>,
    /// Its title, for people (contract 0.2.0).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub title: Option<String>,
    /// What it says it may do (contract 0.2.0).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub hints: Option<HintsTable>,
}

/// A key for the file `metadata` describes that changes whenever its
/// content may have: device, inode, size, and modification and change times
/// to the nanosecond. `None` where the platform does not give them.
fn identity(metadata: &std::fs::Metadata) -> Option<String> {
    #[cfg(unix)]
    {
        use std::os::unix::fs::MetadataExt;
        let mut hasher = Sha256::new();
        for value in [
            metadata.dev() as i64,
            metadata.ino() as i64,
            metadata.size() as i64,
            metadata.mtime(),
            metadata.mtime_nsec(),
            metadata.ctime(),
            metadata.ctime_nsec(),
        ] {
            hasher.update(value.to_le_bytes());
        }
        let digest = hasher.finalize();
        Some(digest[..16].iter().map(|byte| format!("{byte:02x}")).collect())
    }
    #[cfg(not(unix))]
    {
        let _ = metadata;
        None
    }
}

/// True when the file last changed more than a few seconds ago.
fn settled(metadata: &std::fs::Metadata) -> bool {
    #[cfg(unix)]
    {
        use std::os::unix::fs::MetadataExt;
        let changed = SystemTime::UNIX_EPOCH + Duration::new(metadata.ctime().max(0) as u64, 0);
        SystemTime::now().duration_since(changed).is_ok_and(|age| age > Duration::from_secs(2))
    }
    #[cfg(not(unix))]
    {
        let _ = metadata;
        false
    }
}

/// Makes glibc's allocator give back what compiling freed, once per process.
///
/// By default glibc raises its trim threshold to twice the largest
/// memory-mapped block freed so far (up to 64 MiB), and a compile frees
/// blocks of tens of MiB; from then on the top of every thread's arena keeps
/// up to that much freed memory resident, and `malloc_trim` does not touch
/// the top of a thread's arena. A host that compiled its plugins at start
/// kept 60–130 MiB that way. Fixed thresholds stop the adjustment: blocks
/// from 4 MiB are mapped on their own (and unmapped when freed), and an
/// arena's top is given back once more than 1 MiB of it is free.
pub fn tune_allocator() {
    #[cfg(all(target_os = "linux", target_env = "gnu"))]
    {
        static ONCE: std::sync::Once = std::sync::Once::new();
        // SAFETY: `mallopt` only changes the allocator's thresholds.
        ONCE.call_once(|| unsafe {
            libc::mallopt(libc::M_MMAP_THRESHOLD, 4 << 20);
            libc::mallopt(libc::M_TRIM_THRESHOLD, 1 << 20);
        });
    }
}

/// Asks the allocator to give the memory it holds free back to the system.
/// After each compile, and once more when a folder has loaded: a trim taken
/// while other plugins were still compiling in parallel cannot release what
/// their compilers were still using then.
pub fn release_freed_memory() {
    #[cfg(all(target_os = "linux", target_env = "gnu"))]
    // SAFETY: `malloc_trim` only returns free memory to the system.
    unsafe {
        libc::malloc_trim(0);
    }
}

/// Compiles `wasm` without any cache: the compiler writes the artifact to
/// a temporary file, which is mapped and removed.
pub fn compile(engine: &Engine, compiler: &Compiler, wasm: &[u8]) -> Result<Component, CompileError> {
    let tmp = std::env::temp_dir().join(temporary_name(Path::new("toolhost-artifact.cwasm")));
    compiler.compile_to(engine, wasm, &tmp)?;
    map_artifact(engine, &tmp, true)
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

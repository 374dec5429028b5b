//! The on-disk cache of compiled plugins.
//!
//! Compiling a component with Cranelift takes from milliseconds to seconds;
//! loading a compiled artifact is a read and a copy. An artifact's file name
//! is the SHA-256 of the `.wasm` bytes, a hash of everything in the engine
//! that makes compiled code compatible (wasmtime version, target, settings)
//! and toolhost's release, so a changed plugin or a different toolhost build
//! never reuses a stale one.
//!
//! Beside each artifact the cache keeps what the plugin's `list-tools`
//! returned — or why loading it failed — under the same key
//! (`SHA-256-ENGINE-RELEASE.tools.json`, see [`Listing`]), so a start never
//! instantiates a plugin it has seen before. And since hashing a multi-megabyte
//! component at every start would cost more than the rest of the start, a
//! small index maps a file's identity (device, inode, size, modification and
//! change times) to its SHA-256 (`stat-KEY.sha256`); a file written in place
//! gets a new change time, a file renamed into place a new inode, so either is
//! hashed again.
//!
//! An artifact is native code the host runs, so nothing in the cache is
//! trusted for being there. Every file is *sealed*: it starts with an
//! HMAC-SHA256 over its file name (which names the component's digest, the
//! engine settings and the release) and its content, under a key kept outside
//! the cache folder ([`CacheKey`]: `TOOLHOST_CACHE_KEY`, else a key file in
//! toolhost's state folder, made on first use). A file is read once, whole and
//! bounded, from a regular file; its seal is checked on those very bytes, and
//! only they are loaded. So a swapped, patched or planted file (another
//! plugin's artifact under this one's name, a listing that names other tools,
//! an index entry that points at other bytes) is ignored and rewritten, never
//! run. Replicas that share one cache folder share its key (docs/config.md, "A
//! shared compile cache").
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

/// Kept here too for the callers that load through the cache.
pub use crate::compiler::release_freed_memory;
use crate::compiler::{CompileError, Compiler};
use toolhost_grants::manifest::HintsTable;

/// The largest tool list read back from the cache.
const LISTING_LIMIT: u64 = 16 << 20;

/// What a listing holds is partly derived by toolhost's own code (a typed
/// function's schemas and description, and whether the imports a plugin
/// needs are provided), so its file name carries the release and this
/// number, raised whenever either changes: a listing written by another
/// toolhost is never read.
const LISTING_FORMAT: u32 = 10;
const LISTING_RELEASE: &str = env!("CARGO_PKG_VERSION");

/// The largest identity-index entry read back.
const INDEX_LIMIT: u64 = 256;

/// What every sealed file starts with, before its tag.
const SEAL_MAGIC: &[u8; 16] = b"toolhost-seal-1\n";
/// The tag's length: HMAC-SHA256.
const TAG_LEN: usize = 32;

/// The key that seals the cache's files.
#[derive(Clone)]
pub struct CacheKey(ring::hmac::Key);

impl std::fmt::Debug for CacheKey {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str("CacheKey(***)")
    }
}

/// The environment variable that gives the cache key (at least 32
/// characters); replicas sharing a cache folder set the same one.
pub const CACHE_KEY_ENV: &str = "TOOLHOST_CACHE_KEY";

impl CacheKey {
    /// The key from `TOOLHOST_CACHE_KEY` when set; else the key file
    /// ([`CacheKey::default_file`]), made with a random key on first use;
    /// else (no state folder can be had) a key for this process alone, which
    /// leaves earlier artifacts unused.
    pub fn load() -> CacheKey {
        match std::env::var(CACHE_KEY_ENV) {
            Ok(text) if !text.is_empty() => match CacheKey::from_text(&text) {
                Ok(key) => return key,
                Err(why) => tracing::warn!("{why}; using the key file instead"),
            },
            _ => {}
        }
        match CacheKey::default_file() {
            Some(path) => match CacheKey::from_file(&path) {
                Ok(key) => key,
                Err(err) => {
                    tracing::warn!(
                        "the compile cache's key file {} cannot be used ({err:#}): compiled plugins are not reused \
                         across starts",
                        path.display()
                    );
                    CacheKey::random()
                }
            },
            None => CacheKey::random(),
        }
    }

    /// A key from a configured secret (`TOOLHOST_CACHE_KEY`).
    pub fn from_text(text: &str) -> Result<CacheKey, String> {
        if text.len() < 32 {
            return Err(format!("`{CACHE_KEY_ENV}` is shorter than 32 characters, too short to be a key"));
        }
        Ok(CacheKey(ring::hmac::Key::new(ring::hmac::HMAC_SHA256, &Sha256::digest(text.as_bytes()))))
    }

    /// Where the key file is: `$XDG_STATE_HOME/toolhost/cache.key`, else
    /// `~/.local/state/toolhost/cache.key`. Never inside the cache folder, and
    /// never in a folder a plugin may be granted (the catalog refuses such a
    /// grant at start).
    pub fn default_file() -> Option<PathBuf> {
        let env = |name| std::env::var_os(name).filter(|value| !value.is_empty()).map(PathBuf::from);
        env("XDG_STATE_HOME")
            .or_else(|| env("HOME").map(|home| home.join(".local").join("state")))
            .map(|dir| dir.join("toolhost").join("cache.key"))
    }

    /// The key in `path`, which is made (readable by its owner alone) with a
    /// random key when it does not exist yet.
    pub fn from_file(path: &Path) -> Result<CacheKey> {
        let read = |path: &Path| -> Result<CacheKey> {
            // A key others can read lets them forge cache entries: refused.
            let text = toolhost_grants::readfile::read_private_text(path, 1024)
                .map_err(|err| anyhow::anyhow!("{err}"))
                .with_context(|| format!("reading {}", path.display()))?;
            CacheKey::from_text(text.trim()).map_err(|why| anyhow::anyhow!("{}: {why}", path.display()))
        };
        if path.exists() {
            return read(path);
        }
        let dir = path.parent().context("the key file has no folder")?;
        create_private_dir(dir)?;
        let mut secret = [0u8; 32];
        ring::rand::SecureRandom::fill(&ring::rand::SystemRandom::new(), &mut secret)
            .map_err(|_| anyhow::anyhow!("the system gave no random bytes"))?;
        let text: String = secret.iter().map(|byte| format!("{byte:02x}")).collect();
        let tmp = dir.join(temporary_name(path));
        let mut options = std::fs::OpenOptions::new();
        options.write(true).create_new(true);
        #[cfg(unix)]
        std::os::unix::fs::OpenOptionsExt::mode(&mut options, 0o600);
        let mut file = options.open(&tmp).with_context(|| format!("creating {}", tmp.display()))?;
        file.write_all(format!("{text}\n").as_bytes()).and_then(|()| file.sync_all())?;
        // A link fails when another process made the key first: then its key is the one.
        let linked = std::fs::hard_link(&tmp, path);
        let _ = std::fs::remove_file(&tmp);
        match linked {
            Ok(()) => read(path),
            Err(err) if err.kind() == std::io::ErrorKind::AlreadyExists => read(path),
            Err(err) => Err(anyhow::Error::from(err).context(format!("creating {}", path.display()))),
        }
    }

    /// A key for this process alone.
    pub fn random() -> CacheKey {
        let mut secret = [0u8; 32];
        let _ = ring::rand::SecureRandom::fill(&ring::rand::SystemRandom::new(), &mut secret);
        CacheKey(ring::hmac::Key::new(ring::hmac::HMAC_SHA256, &secret))
    }

    fn tag(&self, name: &str, payload: &[u8]) -> ring::hmac::Tag {
        let mut context = ring::hmac::Context::with_key(&self.0);
        for part in [b"toolhost compile cache\0".as_slice(), LISTING_RELEASE.as_bytes(), b"\0", name.as_bytes(), b"\0"]
        {
            context.update(part);
        }
        context.update(payload);
        context.sign()
    }

    /// `payload` sealed for the file named `name`.
    fn seal(&self, name: &str, payload: &[u8]) -> Vec<u8> {
        let mut sealed = Vec::with_capacity(SEAL_MAGIC.len() + TAG_LEN + payload.len());
        sealed.extend_from_slice(SEAL_MAGIC);
        sealed.extend_from_slice(self.tag(name, payload).as_ref());
        sealed.extend_from_slice(payload);
        sealed
    }

    /// The payload of `sealed`, if its seal holds for the file named `name`.
    fn open<'a>(&self, name: &str, sealed: &'a [u8]) -> Option<&'a [u8]> {
        let rest = sealed.strip_prefix(SEAL_MAGIC.as_slice())?;
        if rest.len() < TAG_LEN {
            return None;
        }
        let (tag, payload) = rest.split_at(TAG_LEN);
        let holds: bool = subtle::ConstantTimeEq::ct_eq(self.tag(name, payload).as_ref(), tag).into();
        holds.then_some(payload)
    }
}

/// Makes `dir` (and its parents), the last readable by its owner alone.
fn create_private_dir(dir: &Path) -> Result<()> {
    let mut builder = std::fs::DirBuilder::new();
    builder.recursive(true);
    #[cfg(unix)]
    std::os::unix::fs::DirBuilderExt::mode(&mut builder, 0o700);
    builder.create(dir).with_context(|| format!("creating {}", dir.display()))
}

/// Where compiled plugins are kept.
#[derive(Debug, Clone)]
pub struct Cache {
    dir: PathBuf,
    engine_key: String,
    key: CacheKey,
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
    /// A cache in `dir` (created on first write) for artifacts of `engine`,
    /// sealed with the key [`CacheKey::load`] finds.
    pub fn new(dir: PathBuf, engine: &Engine) -> Cache {
        Cache::with_key(dir, engine, CacheKey::load())
    }

    /// A cache in `dir` for artifacts of `engine`, sealed with `key`.
    pub fn with_key(dir: PathBuf, engine: &Engine, key: CacheKey) -> Cache {
        let mut hasher = DefaultHasher::new();
        engine.precompile_compatibility_hash().hash(&mut hasher);
        Cache { dir, engine_key: format!("{:016x}", hasher.finish()), key }
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
        self.dir.join(format!("{sha256}-{}-{LISTING_RELEASE}.cwasm", self.engine_key))
    }

    /// The payload of the sealed file at `path`, read whole (a regular
    /// file, at most `limit` bytes), if its seal holds; a file whose seal does
    /// not hold is said once in the log and left to be rewritten.
    fn read_sealed(&self, path: &Path, limit: u64) -> Option<Vec<u8>> {
        let name = path.file_name()?.to_str()?;
        let mut bytes =
            toolhost_grants::readfile::read_regular(path, limit + (SEAL_MAGIC.len() + TAG_LEN) as u64).ok()?;
        let Some(payload) = self.key.open(name, &bytes) else {
            tracing::warn!(path = %path.display(), "ignoring a file in the compile cache whose seal does not hold");
            return None;
        };
        let start = bytes.len() - payload.len();
        bytes.drain(..start);
        Some(bytes)
    }

    /// Writes `payload` sealed to `path`, through a temporary file renamed into place.
    fn write_sealed(&self, path: &Path, payload: &[u8]) -> Result<()> {
        let name = path.file_name().and_then(|name| name.to_str()).context("a cache file name")?;
        self.write_atomic(path, &self.key.seal(name, payload))
    }

    fn listing_path(&self, sha256: &str) -> PathBuf {
        self.dir.join(format!("{sha256}-{}-{LISTING_RELEASE}.{LISTING_FORMAT}.tools.json", self.engine_key))
    }

    /// The component in the cached artifact for `sha256`, if there is one
    /// whose seal holds and that loads.
    pub fn load(&self, engine: &Engine, sha256: &str) -> Option<Component> {
        let path = self.artifact_path(sha256);
        let artifact = self.read_sealed(&path, crate::compiler::ARTIFACT_LIMIT)?;
        match deserialize(engine, &artifact) {
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
        let bytes = self.read_sealed(&path, LISTING_LIMIT)?;
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
            .and_then(|bytes| self.write_sealed(&self.listing_path(sha256), &bytes));
        if let Err(err) = written {
            tracing::warn!(dir = %self.dir.display(), "could not write the tool list to the cache: {err:#}");
        }
    }

    /// The SHA-256 recorded for the file `metadata` describes (taken from
    /// the opened file), if it was hashed before and has not changed since.
    pub fn known_sha256(&self, metadata: &std::fs::Metadata) -> Option<String> {
        let path = self.dir.join(format!("stat-{}.sha256", identity(metadata)?));
        let bytes = self.read_sealed(&path, INDEX_LIMIT)?;
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
        if let Err(err) = self.write_sealed(&self.dir.join(format!("stat-{key}.sha256")), sha256.as_bytes()) {
            tracing::warn!(dir = %self.dir.display(), "could not write the compile cache: {err:#}");
        }
    }

    /// The component for `wasm`: from the cache when a sealed artifact
    /// exists and loads, else compiled now by `compiler` (within its bounds),
    /// loaded from the compiler's own bytes and stored sealed. A cache that
    /// cannot be written is logged and otherwise ignored: the plugin still
    /// loads. `sha256` is [`sha256_hex`] of `wasm`.
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
        let artifact = compiler.compile(engine, wasm)?;
        let component = deserialize(engine, &artifact)
            .map_err(|err| CompileError::Worker(format!("loading the compiled plugin: {err:#}")))?;
        if let Err(err) = self.write_sealed(&self.artifact_path(sha256), &artifact) {
            tracing::warn!(dir = %self.dir.display(), "could not write the compile cache: {err:#}");
        }
        Ok((component, Origin::Compiled))
    }

    /// The files a plugin must never be granted: the cache folder (and the
    /// key file, when the key comes from one).
    pub fn protected(&self) -> Vec<PathBuf> {
        let mut paths = vec![self.dir.clone()];
        if std::env::var_os(CACHE_KEY_ENV).is_none_or(|value| value.is_empty())
            && let Some(file) = CacheKey::default_file()
        {
            paths.push(file);
        }
        paths
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

/// The component in `artifact`: bytes a [`Compiler`] for `engine` made,
/// either just now or read back from a file whose seal held.
fn deserialize(engine: &Engine, artifact: &[u8]) -> Result<Component> {
    // SAFETY: the bytes are `Engine::precompile_component`'s output for this
    // engine's settings: handed back by the compiler this process ran, or
    // read from the cache and authenticated with the cache key over exactly
    // these bytes and a name naming the component, engine and release.
    // wasmtime still checks the header and compatibility.
    unsafe { Component::deserialize(engine, artifact) }.map_err(anyhow::Error::from)
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
    /// Where a typed function is exported: `INTERFACE#FUNCTION`
    /// (`acme:shop/inventory@1.0.0#get-item`), or the function's name for one
    /// the world exports itself; none for a contract's tools.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub export_path: Option<String>,
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

/// Compiles `wasm` without any cache.
pub fn compile(engine: &Engine, compiler: &Compiler, wasm: &[u8]) -> Result<Component, CompileError> {
    let artifact = compiler.compile(engine, wasm)?;
    deserialize(engine, &artifact).map_err(|err| CompileError::Worker(format!("loading the compiled plugin: {err:#}")))
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

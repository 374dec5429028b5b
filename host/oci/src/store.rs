//! Writing pulled plugins into a plugins folder, and `toolhost.lock`, the
//! record of what each pulled plugin is.
//!
//! Every file is first written in full to a hidden temporary file in the
//! same folder (`.NAME.wasm.PID.N.tmp`, which neither the loader nor the
//! reload watcher looks at) and synced; only when all of them are written
//! are they renamed into place, the manifest first, then the `.wasm`, then
//! the lock. On any failure before that the temporary files are removed and
//! the folder is exactly as it was; a rename that fails half-way puts back
//! what the earlier ones replaced (each replaced file is kept under a hidden
//! hard link, `.NAME.PID.N.bak`, until the commit is through).
//!
//! ```toml
//! # toolhost.lock
//! version = 1
//!
//! [plugins.hash]
//! source = "127.0.0.1:5000/plugins/hash:1.0"
//! digest = "sha256:…"     # the artifact (its OCI manifest)
//! wasm = "sha256:…"       # hash.wasm
//! manifest = "sha256:…"   # hash.toml, when the artifact carries one
//!
//! [plugins.hash.signer]   # when a `[[trust]]` scope covered it and a signature verified
//! key = "keys/acme.pub"   # the trusted key file that verified it, as the config names it
//! fingerprint = "sha256:…" # the SHA-256 of that public key (DER SubjectPublicKeyInfo)
//! ```
//!
//! Locks written before signatures existed have no `signer`, and read as unsigned.

use anyhow::{Context, Result};
use serde::{Deserialize, Serialize};
use std::collections::BTreeMap;
use std::io::Write;
use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicU64, Ordering};

pub use crate::reference::digest_of;

/// The lock file's name, in the plugins folder.
pub const LOCK_FILE: &str = "toolhost.lock";

/// `toolhost.lock`: each pulled plugin's source and digests.
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Lock {
    /// The format version (1).
    pub version: u32,
    /// By plugin name (the file stem).
    #[serde(default)]
    pub plugins: BTreeMap<String, Locked>,
}

/// What one pulled plugin is.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Locked {
    /// The reference it was pulled from, as given.
    pub source: String,
    /// The artifact's digest (its OCI manifest's).
    pub digest: String,
    /// The digest of `NAME.wasm`.
    pub wasm: String,
    /// The digest of `NAME.toml`, when the artifact carried one.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub manifest: Option<String>,
    /// Who signed it, when a signature was verified at pull.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub signer: Option<Signer>,
}

impl Lock {
    /// Reads `DIR/toolhost.lock`; an empty lock when there is none.
    pub fn read(dir: &Path) -> Result<Lock> {
        let path = dir.join(LOCK_FILE);
        let text = match toolhost_grants::readfile::read_regular_text(&path, toolhost_grants::readfile::limits::TOML) {
            Ok(text) => text,
            Err(err) if err.is_not_found() => return Ok(Lock { version: 1, plugins: BTreeMap::new() }),
            Err(err) => return Err(err).with_context(|| format!("could not read {}", path.display())),
        };
        Lock::parse(&text, &path)
    }

    /// Parses lock text read from `path`.
    pub fn parse(text: &str, path: &Path) -> Result<Lock> {
        let lock: Lock = toml::from_str(text).map_err(|err| {
            anyhow::anyhow!(
                "{} is not valid: {} (it is written by `toolhost pull`; delete it to pull afresh)",
                path.display(),
                err.to_string().trim_end()
            )
        })?;
        if lock.version != 1 {
            anyhow::bail!("{} has version {}; this toolhost reads version 1", path.display(), lock.version);
        }
        Ok(lock)
    }

    fn render(&self) -> Result<String> {
        let body = toml::to_string(self).context("could not encode the lock file")?;
        Ok(format!("# Written by `toolhost pull`: where each pulled plugin came from and its digests.\n{body}"))
    }
}

/// True when the file at `path` is a regular file whose digest is `digest`.
pub fn file_has_digest(path: &Path, digest: &str, limit: u64) -> bool {
    toolhost_grants::readfile::read_regular(path, limit).is_ok_and(|bytes| digest_of(&bytes) == digest)
}

/// Files staged in one folder, renamed into place together by [`Staged::commit`];
/// dropped uncommitted, they are removed.
pub struct Staged {
    dir: PathBuf,
    files: Vec<(PathBuf, PathBuf)>,
    removals: Vec<PathBuf>,
}

impl Staged {
    /// Nothing staged yet, in `dir` (which must exist).
    pub fn new(dir: &Path) -> Staged {
        Staged { dir: dir.to_owned(), files: Vec::new(), removals: Vec::new() }
    }

    /// Writes `bytes` in full to a temporary file that will become `DIR/name`.
    pub fn write(&mut self, name: &str, bytes: &[u8]) -> Result<()> {
        static NEXT: AtomicU64 = AtomicU64::new(0);
        let target = self.dir.join(name);
        let tmp = self.dir.join(format!(".{name}.{}.{}.tmp", std::process::id(), NEXT.fetch_add(1, Ordering::Relaxed)));
        let written = (|| -> std::io::Result<()> {
            let mut file = std::fs::OpenOptions::new().write(true).create_new(true).open(&tmp)?;
            file.write_all(bytes)?;
            file.sync_all()
        })();
        if let Err(err) = written {
            let _ = std::fs::remove_file(&tmp);
            return Err(err).with_context(|| format!("could not write {}", target.display()));
        }
        self.files.push((tmp, target));
        Ok(())
    }

    /// Removes `DIR/name` at commit.
    pub fn remove(&mut self, name: &str) {
        self.removals.push(self.dir.join(name));
    }

    /// Renames every staged file into place, in the order staged, then
    /// removes what was marked for removal. Each file it replaces or removes
    /// is first kept under a hidden hard link, so that if any step fails the
    /// ones already done are undone and the folder is as it was.
    pub fn commit(mut self) -> Result<()> {
        let files = std::mem::take(&mut self.files);
        let removals = std::mem::take(&mut self.removals);
        // What has been done so far: each target, and the backup of what it replaced.
        let mut done: Vec<(PathBuf, Option<PathBuf>)> = Vec::new();
        let result = (|| -> Result<()> {
            for (tmp, target) in &files {
                let backup = self.keep(target)?;
                if let Err(err) = std::fs::rename(tmp, target) {
                    // Nothing was put in place: the target is as it was.
                    if let Some(backup) = backup {
                        let _ = std::fs::remove_file(backup);
                    }
                    return Err(err).with_context(|| format!("could not move {} into place", target.display()));
                }
                done.push((target.clone(), backup));
            }
            for path in &removals {
                if let Some(backup) = self.keep(path)? {
                    std::fs::remove_file(path).with_context(|| format!("could not remove {}", path.display()))?;
                    done.push((path.clone(), Some(backup)));
                }
            }
            Ok(())
        })();
        for (tmp, _) in &files {
            let _ = std::fs::remove_file(tmp);
        }
        match &result {
            Ok(()) => {
                for backup in done.iter().filter_map(|(_, backup)| backup.as_ref()) {
                    let _ = std::fs::remove_file(backup);
                }
            }
            Err(_) => {
                for (target, backup) in done.iter().rev() {
                    match backup {
                        Some(backup) => {
                            let _ = std::fs::rename(backup, target);
                        }
                        None => {
                            let _ = std::fs::remove_file(target);
                        }
                    }
                }
            }
        }
        if let Ok(dir) = std::fs::File::open(&self.dir) {
            let _ = dir.sync_all();
        }
        result
    }

    /// A hidden hard link to (or copy of) `path` if it exists, to put it back from.
    fn keep(&self, path: &Path) -> Result<Option<PathBuf>> {
        static NEXT: AtomicU64 = AtomicU64::new(0);
        if path.symlink_metadata().is_err() {
            return Ok(None);
        }
        let name = path.file_name().map(|name| name.to_string_lossy().into_owned()).unwrap_or_default();
        let backup =
            self.dir.join(format!(".{name}.{}.{}.bak", std::process::id(), NEXT.fetch_add(1, Ordering::Relaxed)));
        // A copy where the file system has no hard links.
        if std::fs::hard_link(path, &backup).is_err() {
            std::fs::copy(path, &backup).with_context(|| format!("could not replace {}", path.display()))?;
        }
        Ok(Some(backup))
    }
}

impl Drop for Staged {
    fn drop(&mut self) {
        for (tmp, _) in &self.files {
            let _ = std::fs::remove_file(tmp);
        }
    }
}

/// Holds an exclusive `flock` on the folder `dir` itself (no extra file)
/// until dropped, waiting for another pull into it to finish.
pub async fn lock_folder(dir: &Path) -> Result<std::fs::File> {
    let folder =
        std::fs::File::open(dir).with_context(|| format!("could not open the plugins folder {}", dir.display()))?;
    let locked = tokio::task::spawn_blocking(move || {
        use std::os::fd::AsRawFd;
        // SAFETY: flock on a descriptor this closure owns; it stays open while locked.
        if unsafe { libc::flock(folder.as_raw_fd(), libc::LOCK_EX) } == 0 {
            Ok(folder)
        } else {
            Err(std::io::Error::last_os_error())
        }
    })
    .await
    .context("the folder lock's thread failed")?;
    locked.with_context(|| format!("could not lock the plugins folder {}", dir.display()))
}

/// Stages the lock file `lock` in `staged`.
pub fn stage_lock(staged: &mut Staged, lock: &Lock) -> Result<()> {
    staged.write(LOCK_FILE, lock.render()?.as_bytes())
}

/// Who signed an artifact, as verified: recorded in `toolhost.lock`.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Signer {
    /// The trusted public key file that verified the signature, as the config names it.
    pub key: String,
    /// `sha256:` and the SHA-256 of that key's DER SubjectPublicKeyInfo.
    pub fingerprint: String,
}

impl std::fmt::Display for Signer {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "{} ({})", self.key, self.fingerprint)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn listing(dir: &Path) -> Vec<String> {
        let mut names: Vec<String> = std::fs::read_dir(dir)
            .unwrap()
            .map(|entry| entry.unwrap().file_name().to_string_lossy().into_owned())
            .collect();
        names.sort();
        names
    }

    #[test]
    fn an_uncommitted_stage_leaves_the_folder_as_it_was() {
        let dir = tempfile::tempdir().unwrap();
        std::fs::write(dir.path().join("hash.wasm"), "old").unwrap();
        {
            let mut staged = Staged::new(dir.path());
            staged.write("hash.wasm", b"new").unwrap();
            staged.write("hash.toml", b"x").unwrap();
        }
        assert_eq!(listing(dir.path()), ["hash.wasm"]);
        assert_eq!(std::fs::read(dir.path().join("hash.wasm")).unwrap(), b"old");
    }

    #[test]
    fn a_commit_that_fails_half_way_puts_back_what_it_had_replaced() {
        let dir = tempfile::tempdir().unwrap();
        std::fs::write(dir.path().join("hash.toml"), "old").unwrap();
        std::fs::write(dir.path().join("other.toml"), "kept").unwrap();
        // A folder where the .wasm goes: renaming a file over it fails.
        std::fs::create_dir(dir.path().join("hash.wasm")).unwrap();
        std::fs::write(dir.path().join("hash.wasm").join("inside"), "x").unwrap();
        let before = listing(dir.path());
        let mut staged = Staged::new(dir.path());
        staged.write("new.toml", b"new").unwrap();
        staged.write("hash.toml", b"new").unwrap();
        staged.write("hash.wasm", b"new").unwrap();
        staged.remove("other.toml");
        let err = format!("{:#}", staged.commit().unwrap_err());
        assert!(err.contains("hash.wasm"), "{err}");
        assert_eq!(listing(dir.path()), before, "no new file, no temporary or backup file left");
        assert_eq!(std::fs::read_to_string(dir.path().join("hash.toml")).unwrap(), "old");
        assert_eq!(std::fs::read_to_string(dir.path().join("other.toml")).unwrap(), "kept");
    }

    #[test]
    fn a_commit_replaces_and_removes_leaving_no_backup() {
        let dir = tempfile::tempdir().unwrap();
        std::fs::write(dir.path().join("hash.toml"), "old").unwrap();
        std::fs::write(dir.path().join("hash.wasm"), "old").unwrap();
        let mut staged = Staged::new(dir.path());
        staged.write("hash.wasm", b"new").unwrap();
        staged.remove("hash.toml");
        staged.commit().unwrap();
        assert_eq!(listing(dir.path()), ["hash.wasm"]);
        assert_eq!(std::fs::read_to_string(dir.path().join("hash.wasm")).unwrap(), "new");
    }

    #[test]
    fn a_lock_round_trips_and_a_broken_one_says_how_to_recover() {
        let dir = tempfile::tempdir().unwrap();
        let mut lock = Lock::read(dir.path()).unwrap();
        assert!(lock.plugins.is_empty());
        lock.plugins.insert(
            "hash".into(),
            Locked {
                source: "127.0.0.1:5000/hash:1".into(),
                digest: digest_of(b"m"),
                wasm: digest_of(b"w"),
                manifest: None,
                signer: Some(Signer { key: "keys/acme.pub".into(), fingerprint: digest_of(b"k") }),
            },
        );
        let mut staged = Staged::new(dir.path());
        stage_lock(&mut staged, &lock).unwrap();
        staged.commit().unwrap();
        assert_eq!(Lock::read(dir.path()).unwrap(), lock);
        assert_eq!(listing(dir.path()), [LOCK_FILE]);
        std::fs::write(dir.path().join(LOCK_FILE), "version = 1\n[plugins.hash]\nsource = 3\n").unwrap();
        let err = Lock::read(dir.path()).unwrap_err().to_string();
        assert!(err.contains("delete it to pull afresh"), "{err}");
    }

    #[test]
    fn a_lock_written_before_signatures_reads_as_unsigned() {
        let old = "version = 1\n[plugins.hash]\nsource = \"127.0.0.1:5000/hash:1\"\ndigest = \"sha256:aa\"\nwasm = \"sha256:bb\"\n";
        let lock = Lock::parse(old, Path::new("toolhost.lock")).unwrap();
        assert_eq!(lock.plugins["hash"].signer, None);
        assert!(!lock.render().unwrap().contains("signer"), "nothing added to an unsigned entry");
    }
}

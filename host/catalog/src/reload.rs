//! Hot reload: the plugins folder is watched, and a new, changed or removed
//! `.wasm` (or its `NAME.toml` manifest) reloads only that plugin, through
//! the compile cache, then swaps the catalog whole.
//!
//! A file whose SHA-256 (and manifest) did not change is a no-op. A file that
//! cannot be loaded (half-written, truncated, broken) never replaces a
//! working plugin: the last good version stays and one warning says why,
//! once for that content. A file that changes while it is loaded is still
//! being written: it is left until it settles, without a word.
//! Calls in flight hold their `Arc<Plugin>` and finish on the version they
//! started with.

use crate::host::{self, Host};
use crate::plugin::Plugin;
use crate::{LoadProblem, ProblemKind};
use anyhow::{Context, Result};
use notify::RecursiveMode;
use notify_debouncer_full::{DebounceEventResult, new_debouncer};
use std::collections::BTreeSet;
use std::path::{Path, PathBuf};
use std::sync::Arc;
use std::time::Duration;
use tokio::sync::mpsc;
use tokio::task::JoinHandle;

/// Quiet time after the last event on a path before it is reloaded.
const DEBOUNCE: Duration = Duration::from_millis(250);

/// What one reload pass did to one plugin file.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Change {
    /// A new plugin was loaded.
    Added(PathBuf),
    /// A plugin was replaced by its new version.
    Replaced(PathBuf),
    /// A plugin's file is gone, and so are its tools.
    Removed(PathBuf),
    /// The file did not change (same SHA-256, same manifest).
    Unchanged(PathBuf),
    /// The file changed while it was being loaded (it is still being
    /// written): nothing is said, and it is loaded again once it settles.
    Unsettled(PathBuf),
    /// The new file could not be loaded; the last good version (if any) stays.
    Refused {
        /// The file.
        path: PathBuf,
        /// Why it could not be loaded.
        reason: String,
        /// True when a previous version is still being served.
        kept: bool,
    },
}

/// Reloads the plugins whose files (`.wasm` or `.toml` manifest) are among
/// `changed`, then swaps the catalog once if anything changed. Paths that are
/// not plugin files are ignored.
pub async fn reload(host: &Host, changed: &BTreeSet<PathBuf>) -> Vec<Change> {
    let mut wasm_paths = BTreeSet::new();
    let mut manifests_changed = BTreeSet::new();
    for path in changed {
        let Some(name) = path.file_name().and_then(|name| name.to_str()) else { continue };
        if name.starts_with('.') {
            continue;
        }
        match path.extension().and_then(|ext| ext.to_str()) {
            Some("wasm") => {
                wasm_paths.insert(path.clone());
            }
            Some("toml") => {
                let wasm = path.with_extension("wasm");
                manifests_changed.insert(wasm.clone());
                wasm_paths.insert(wasm);
            }
            _ => {}
        }
    }
    let current = host.catalog();
    let mut changes = Vec::new();
    let mut loaded: Vec<(PathBuf, Option<Arc<Plugin>>)> = Vec::new();
    for path in wasm_paths {
        let old = current.plugins().iter().find(|plugin| plugin.path == path).cloned();
        if !path.is_file() {
            if old.is_some() || current.problems().iter().any(|problem| problem.paths == [path.clone()]) {
                loaded.push((path.clone(), None));
                changes.push(Change::Removed(path));
            }
            continue;
        }
        if let Some(old) = &old
            && !manifests_changed.contains(&path)
            && crate::plugin::read(&path).is_ok_and(|wasm| wasm.sha256 == old.sha256)
        {
            changes.push(Change::Unchanged(path));
            continue;
        }
        let before = stamp(&path);
        match host.load_file(&path).await {
            Ok(plugin) => {
                host.refused.lock().unwrap_or_else(|p| p.into_inner()).remove(&path);
                changes.push(if old.is_some() { Change::Replaced(path.clone()) } else { Change::Added(path.clone()) });
                loaded.push((path, Some(Arc::new(plugin))));
            }
            Err(_) if stamp(&path) != before => changes.push(Change::Unsettled(path)),
            // A file cut short may be one whose writer paused: give it a moment.
            Err(reason) if looks_cut(&reason) && settles_changed(&path, &before).await => {
                changes.push(Change::Unsettled(path));
            }
            Err(reason) => {
                let kept = old.is_some();
                // Said once per content: the same bad file touched again is not news.
                let content = toolhost_grants::readfile::read_regular(&path, toolhost_grants::readfile::limits::WASM)
                    .map(|bytes| toolhost_runtime::cache::sha256_hex(&bytes))
                    .unwrap_or_else(|_| reason.clone());
                let new = host.refused.lock().unwrap_or_else(|p| p.into_inner()).insert(path.clone(), content.clone())
                    != Some(content);
                if kept && new {
                    tracing::warn!(
                        "kept the last good version of {}: the new file cannot be loaded: {reason}",
                        path.display()
                    );
                } else if !kept {
                    if new {
                        tracing::warn!("skipped {}: {reason}", path.display());
                    }
                    loaded.push((path.clone(), None));
                }
                changes.push(Change::Refused { path, reason, kept });
            }
        }
    }
    let refused_new: Vec<LoadProblem> = changes
        .iter()
        .filter_map(|change| match change {
            Change::Refused { path, reason, kept: false } => {
                Some(LoadProblem { kind: ProblemKind::Plugin, paths: vec![path.clone()], reason: reason.clone() })
            }
            _ => None,
        })
        .collect();
    if loaded.is_empty() {
        return changes;
    }
    host.shared_catalog().update(|parts| {
        for (path, plugin) in loaded {
            parts.plugins.retain(|existing| existing.path != path);
            parts.problems.retain(|problem| problem.paths != [path.clone()]);
            if let Some(plugin) = plugin {
                parts.problems.extend(host::grant_notices(&plugin));
                parts.plugins.push(plugin);
            }
        }
        parts.problems.extend(refused_new);
        parts.plugins.sort_by(|a, b| a.path.cmp(&b.path));
        true
    });
    for change in &changes {
        match change {
            Change::Added(path) => tracing::info!("loaded {}", path.display()),
            Change::Replaced(path) => tracing::info!("reloaded {}", path.display()),
            Change::Removed(path) => tracing::info!("unloaded {} (the file is gone)", path.display()),
            _ => {}
        }
    }
    changes
}

/// Watches a plugins folder and reloads what changes, for as long as it lives.
pub struct Watcher {
    _debouncer: notify_debouncer_full::Debouncer<notify::RecommendedWatcher, notify_debouncer_full::RecommendedCache>,
    task: JoinHandle<()>,
}

impl Drop for Watcher {
    fn drop(&mut self) {
        self.task.abort();
    }
}

impl Watcher {
    /// Starts watching `dir` (not recursively) and reloading `host`'s
    /// plugins from it. One reload runs at a time; events that arrive during
    /// a reload are handled in the next pass, and those that arrive during a
    /// progressive load of the folder ([`Host::load_dir_progressively`])
    /// once it has ended, so it may start before that load.
    pub fn start(host: Arc<Host>, dir: &Path) -> Result<Watcher> {
        // Events name canonical paths; the catalog names files as the folder was given.
        let given = dir.to_path_buf();
        let dir = dir.canonicalize().with_context(|| format!("could not watch {}", dir.display()))?;
        let (sender, mut receiver) = mpsc::unbounded_channel::<Vec<PathBuf>>();
        let mut debouncer = new_debouncer(DEBOUNCE, None, move |result: DebounceEventResult| match result {
            Ok(events) => {
                // Only what changes a file counts: reading one (a reload
                // opening a plugin's manifest) is an access event too, and
                // taking it for a change would reload for ever.
                let paths: Vec<PathBuf> = events
                    .into_iter()
                    .filter(|event| !matches!(event.event.kind, notify::EventKind::Access(_)))
                    .flat_map(|event| event.event.paths)
                    .collect();
                if !paths.is_empty() {
                    let _ = sender.send(paths);
                }
            }
            Err(errors) => {
                for error in errors {
                    tracing::warn!("watching the plugins folder: {error}");
                }
            }
        })
        .context("could not start watching the plugins folder")?;
        debouncer
            .watch(&dir, RecursiveMode::NonRecursive)
            .with_context(|| format!("could not watch the plugins folder {}", dir.display()))?;
        let watched = dir.clone();
        let mut loading = host.loading();
        let task = tokio::spawn(async move {
            while let Some(paths) = receiver.recv().await {
                // A change during the folder's progressive load waits for
                // that load to end: the catalog then holds what to compare
                // the file with (unchanged, replaced or new).
                let _ = loading.wait_for(|state| state.finished).await;
                let mut changed: BTreeSet<PathBuf> = paths.into_iter().collect();
                while let Ok(more) = receiver.try_recv() {
                    changed.extend(more);
                }
                let changed: BTreeSet<PathBuf> = changed
                    .into_iter()
                    .filter(|path| path.parent() == Some(watched.as_path()))
                    .filter_map(|path| path.file_name().map(|name| given.join(name)))
                    .collect();
                if changed.is_empty() {
                    continue;
                }
                wait_until_stable(&changed).await;
                reload(&host, &changed).await;
            }
        });
        Ok(Watcher { _debouncer: debouncer, task })
    }
}

/// How long a file that ends too soon is given to grow before it is refused.
const CUT_GRACE: Duration = Duration::from_secs(2);

/// Whether a load failed because the file ends before its sections do.
fn looks_cut(reason: &str) -> bool {
    reason.contains("out of bounds (bound =") || reason.contains("unexpected end")
}

/// Waits [`CUT_GRACE`]; whether `path` changed from `before` meanwhile.
async fn settles_changed(path: &Path, before: &Stamp) -> bool {
    tokio::time::sleep(CUT_GRACE).await;
    stamp(path) != *before
}

/// A file's size, modification and change times (none when it is gone).
type Stamp = Option<(u64, std::time::SystemTime, i64, i64)>;

fn stamp(path: &Path) -> Stamp {
    use std::os::unix::fs::MetadataExt;
    let meta = std::fs::metadata(path).ok()?;
    Some((meta.len(), meta.modified().ok()?, meta.ctime(), meta.ctime_nsec()))
}

/// Waits (up to a second) until the sizes and modification times of `paths`
/// stop changing, so a file still being copied is not loaded half-written.
/// (One written more slowly than that is loaded, fails, and is found to
/// have changed meanwhile: [`Change::Unsettled`], tried again when it settles.)
async fn wait_until_stable(paths: &BTreeSet<PathBuf>) {
    let stamp = || -> Vec<Stamp> { paths.iter().map(|path| stamp(path)).collect() };
    let mut last = stamp();
    for _ in 0..10 {
        tokio::time::sleep(Duration::from_millis(100)).await;
        let now = stamp();
        if now == last {
            return;
        }
        last = now;
    }
}

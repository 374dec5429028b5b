//! The audit log's writer: every record becomes one line, chained to the line
//! before it and signed, written by a thread of its own to a file (rotated by
//! size, the chain continuing across files) or to stdout.
//!
//! A call never waits for the disk: it hands its record to a bounded queue
//! and goes on. When the queue is full the record is dropped and counted;
//! the writer then writes (and signs) a `lost` line saying how many, and
//! warns, so a gap is said in the log itself rather than hidden.
//!
//! A line is the canonical JSON of its record with `v`, `seq` (1, 2, … along
//! the chain), `prev` (the hex SHA-256 of the line before, [`GENESIS`] for the
//! first), `key` (the signing key's fingerprint) and `sig` (base64 of the
//! signature over the canonical bytes of everything else) added.

use crate::canonical;
use crate::keys::{SigningKey, hex};
pub use crate::line::{GENESIS, VERSION, now};
use base64::Engine as _;
use serde_json::{Map, Value, json};
use sha2::{Digest, Sha256};
use std::fs::File;
use std::io::{BufWriter, Read, Seek, SeekFrom, Write};
use std::path::{Path, PathBuf};
use std::sync::Arc;
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::mpsc::{Receiver, SyncSender, TrySendError};

/// Records waiting for the writer when the config does not say.
pub const DEFAULT_QUEUE: usize = 4096;

/// How long a call under `receipt_in_meta` waits for its signed line.
pub const RECEIPT_WAIT: std::time::Duration = std::time::Duration::from_secs(2);

/// Where the lines go.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Target {
    /// A file, moved aside to `FILE.N` once it would grow past `rotate`
    /// bytes; with a checkpoint file rewritten after each batch.
    File { path: PathBuf, rotate: u64, checkpoint: Option<PathBuf> },
    /// Standard output.
    Stdout,
}

/// What waits for the writer.
pub enum Pending {
    /// A line's fields as they are.
    Json(Value),
    /// A call's record, laid out by the writer (arguments shown or not).
    Call(Box<crate::CallRecord>, bool),
    /// A call's record whose signed line goes back to the call, once written
    /// and flushed, as its receipt.
    Receipted(Box<crate::CallRecord>, bool, tokio::sync::oneshot::Sender<Value>),
}

impl Pending {
    fn into_json(self) -> (Value, Option<tokio::sync::oneshot::Sender<Value>>) {
        match self {
            Pending::Json(value) => (value, None),
            Pending::Call(record, include_arguments) => (record.into_json(include_arguments), None),
            Pending::Receipted(record, include_arguments, receipt) => {
                (record.into_json(include_arguments), Some(receipt))
            }
        }
    }
}

/// The writing end: cheap to share, never blocks.
pub struct AuditLog {
    sender: Option<SyncSender<Pending>>,
    lost: Arc<AtomicU64>,
    lost_total: AtomicU64,
    writer: Option<std::thread::JoinHandle<()>>,
}

impl std::fmt::Debug for AuditLog {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("AuditLog").field("lost", &self.lost_total.load(Ordering::Relaxed)).finish()
    }
}

impl AuditLog {
    /// Opens `target` (a file is created, or its chain continued) and starts
    /// the writer. Fails with one line when the file cannot be had.
    pub fn open(target: Target, key: SigningKey, queue: usize) -> Result<AuditLog, String> {
        let sink = Sink::open(target, &key)?;
        let (sender, receiver) = std::sync::mpsc::sync_channel(queue.max(1));
        let lost = Arc::new(AtomicU64::new(0));
        let writer = {
            let lost = lost.clone();
            std::thread::Builder::new()
                .name("audit-log".to_owned())
                .spawn(move || write_lines(receiver, sink, key, lost))
                .map_err(|err| format!("could not start the audit log's writer: {err}"))?
        };
        Ok(AuditLog { sender: Some(sender), lost, lost_total: AtomicU64::new(0), writer: Some(writer) })
    }

    /// Queues `record` to be written; drops and counts it when the writer
    /// is that far behind.
    pub fn record(&self, record: Pending) {
        let Some(sender) = &self.sender else { return };
        match sender.try_send(record) {
            Ok(()) => {}
            Err(TrySendError::Full(_) | TrySendError::Disconnected(_)) => {
                if self.lost.fetch_add(1, Ordering::Relaxed) == 0 {
                    tracing::warn!("the audit log's writer is behind; records are being dropped (counted in the log)");
                }
                self.lost_total.fetch_add(1, Ordering::Relaxed);
            }
        }
    }

    /// Records dropped since start because the writer was behind.
    pub fn lost(&self) -> u64 {
        self.lost_total.load(Ordering::Relaxed)
    }
}

impl Drop for AuditLog {
    /// Writes what is queued before the process goes on (or ends).
    fn drop(&mut self) {
        self.sender.take();
        if let Some(writer) = self.writer.take() {
            let _ = writer.join();
        }
    }
}

/// Where the writer is in the chain.
struct Chain {
    seq: u64,
    prev: String,
}

fn write_lines(receiver: Receiver<Pending>, mut sink: Sink, key: SigningKey, lost: Arc<AtomicU64>) {
    let report = |sink: &mut Sink, result: std::io::Result<()>| {
        if let Err(err) = result {
            tracing::error!(target = %sink.describe(), "could not write the audit log: {err}");
        }
    };
    // Receipts wait for the batch's flush: a receipt names a line in the file.
    let mut receipts: Vec<(tokio::sync::oneshot::Sender<Value>, Value)> = Vec::new();
    while let Ok(first) = receiver.recv() {
        let mut next = Some(first);
        while let Some(record) = next.take() {
            let dropped = lost.swap(0, Ordering::Relaxed);
            if dropped > 0 {
                tracing::warn!(count = dropped, "audit records were dropped while the writer was behind");
                let result = sink.append(json!({"kind": "lost", "count": dropped, "time": now()}), &key);
                report(&mut sink, result.map(drop));
            }
            let (record, receipt) = record.into_json();
            match (sink.append(record, &key), receipt) {
                (Ok(line), Some(receipt)) => {
                    if let Ok(line) = serde_json::from_slice(&line) {
                        receipts.push((receipt, line));
                    }
                }
                (result, _) => report(&mut sink, result.map(drop)),
            }
            next = receiver.try_recv().ok();
        }
        let result = sink.flush();
        let flushed = result.is_ok();
        report(&mut sink, result);
        if flushed {
            let result = sink.checkpoint(&key);
            report(&mut sink, result);
        }
        for (receipt, line) in receipts.drain(..) {
            if flushed {
                let _ = receipt.send(line);
            }
        }
    }
    let dropped = lost.swap(0, Ordering::Relaxed);
    if dropped > 0 {
        let result = sink.append(json!({"kind": "lost", "count": dropped, "time": now()}), &key);
        report(&mut sink, result.map(drop));
    }
    let result = sink.flush();
    let flushed = result.is_ok();
    report(&mut sink, result);
    if flushed {
        let result = sink.checkpoint(&key);
        report(&mut sink, result);
    }
}

/// `record` as a signed line after `chain`, without its line break, and its digest.
pub fn seal(record: Value, seq: u64, prev: &str, key: &SigningKey) -> (Vec<u8>, String) {
    let mut map = match record {
        Value::Object(map) => map,
        other => {
            let mut map = Map::new();
            map.insert("record".to_owned(), other);
            map
        }
    };
    map.insert("v".to_owned(), json!(VERSION));
    map.insert("seq".to_owned(), json!(seq));
    map.insert("prev".to_owned(), json!(prev));
    map.insert("key".to_owned(), json!(key.public().fingerprint()));
    map.remove("sig");
    let mut value = Value::Object(map);
    let signature = key.sign(&canonical::to_vec(&value));
    if let Value::Object(map) = &mut value {
        map.insert("sig".to_owned(), json!(base64::engine::general_purpose::STANDARD.encode(signature)));
    }
    let line = canonical::to_vec(&value);
    let digest = hex(&Sha256::digest(&line));
    (line, digest)
}

enum Out {
    File { path: PathBuf, rotate: u64, file: BufWriter<File>, size: u64 },
    Stdout(BufWriter<std::io::Stdout>),
}

struct Sink {
    out: Out,
    chain: Chain,
    /// The checkpoint file, and the `seq` it was last written for.
    checkpoint: Option<(PathBuf, u64)>,
}

impl Sink {
    fn open(target: Target, key: &SigningKey) -> Result<Sink, String> {
        match target {
            Target::Stdout => Ok(Sink {
                out: Out::Stdout(BufWriter::new(std::io::stdout())),
                chain: Chain { seq: 0, prev: GENESIS.to_owned() },
                checkpoint: None,
            }),
            Target::File { path, rotate, checkpoint } => {
                let (file, size) = open_file(&path)?;
                let chain = match last_line(&file, size) {
                    Ok(Some(last)) => match continues(&last, key) {
                        Some(chain) => chain,
                        None => {
                            let moved = rotate_aside(&path)?;
                            tracing::warn!(
                                "the audit log {} ended in a line this key cannot continue (cut short, or another \
                                 key's); it was moved to {} and a new chain starts",
                                path.display(),
                                moved.display()
                            );
                            // Its checkpoint goes aside with it: it is that chain's.
                            if let Some(checkpoint) = checkpoint.as_ref().filter(|checkpoint| checkpoint.exists()) {
                                let moved = rotate_aside(checkpoint)?;
                                tracing::warn!("its checkpoint was moved to {}", moved.display());
                            }
                            let (file, size) = open_file(&path)?;
                            return Ok(Sink {
                                out: Out::File { path, rotate, file: BufWriter::new(file), size },
                                chain: Chain { seq: 0, prev: GENESIS.to_owned() },
                                checkpoint: checkpoint.map(|checkpoint| (checkpoint, 0)),
                            });
                        }
                    },
                    Ok(None) => Chain { seq: 0, prev: GENESIS.to_owned() },
                    Err(err) => return Err(format!("could not read the audit log {}: {err}", path.display())),
                };
                if let Some(checkpoint) = &checkpoint {
                    reaches_checkpoint(&path, &chain, checkpoint, key)?;
                }
                let checkpoint = checkpoint.map(|checkpoint| (checkpoint, chain.seq));
                Ok(Sink { out: Out::File { path, rotate, file: BufWriter::new(file), size }, chain, checkpoint })
            }
        }
    }

    fn describe(&self) -> String {
        match &self.out {
            Out::File { path, .. } => path.display().to_string(),
            Out::Stdout(_) => "stdout".to_owned(),
        }
    }

    /// Writes `record` as the chain's next line; returns the line (without its break).
    fn append(&mut self, record: Value, key: &SigningKey) -> std::io::Result<Vec<u8>> {
        let seq = self.chain.seq + 1;
        let (mut line, digest) = seal(record, seq, &self.chain.prev, key);
        line.push(b'\n');
        match &mut self.out {
            Out::File { path, rotate, file, size } => {
                if *size > 0 && *size + line.len() as u64 > *rotate {
                    file.flush()?;
                    rotate_aside(path).map_err(std::io::Error::other)?;
                    let (new, new_size) = open_file(path).map_err(std::io::Error::other)?;
                    *file = BufWriter::new(new);
                    *size = new_size;
                }
                file.write_all(&line)?;
                *size += line.len() as u64;
            }
            Out::Stdout(out) => out.write_all(&line)?,
        }
        self.chain = Chain { seq, prev: digest };
        line.pop();
        Ok(line)
    }

    /// Rewrites the checkpoint for the chain's end, when it moved.
    fn checkpoint(&mut self, key: &SigningKey) -> std::io::Result<()> {
        let (Some((checkpoint, written)), Out::File { path, .. }) = (&mut self.checkpoint, &self.out) else {
            return Ok(());
        };
        if *written == self.chain.seq {
            return Ok(());
        }
        let name = path.file_name().map(|name| name.to_string_lossy().into_owned()).unwrap_or_default();
        let bytes = crate::checkpoint::seal(self.chain.seq, &self.chain.prev, &name, key);
        crate::checkpoint::write(checkpoint, &bytes).map_err(|err| {
            std::io::Error::new(err.kind(), format!("the checkpoint {}: {err}", checkpoint.display()))
        })?;
        *written = self.chain.seq;
        Ok(())
    }

    fn flush(&mut self) -> std::io::Result<()> {
        match &mut self.out {
            Out::File { file, .. } => file.flush(),
            Out::Stdout(out) => out.flush(),
        }
    }
}

/// Opens (or creates, owner-only) the log file for appending, checks it is a
/// regular file and takes its lock: one writer per file.
fn open_file(path: &Path) -> Result<(File, u64), String> {
    use std::os::fd::AsRawFd;
    use std::os::unix::fs::OpenOptionsExt;
    let fail = |err: std::io::Error| format!("could not open the audit log {}: {err}", path.display());
    let file = std::fs::OpenOptions::new()
        .read(true)
        .append(true)
        .create(true)
        .mode(0o600)
        .custom_flags(libc::O_NONBLOCK | libc::O_NOFOLLOW)
        .open(path)
        .map_err(fail)?;
    let meta = file.metadata().map_err(fail)?;
    if !meta.is_file() {
        return Err(format!("the audit log {} is not a regular file", path.display()));
    }
    // SAFETY: flock on a descriptor this function owns.
    if unsafe { libc::flock(file.as_raw_fd(), libc::LOCK_EX | libc::LOCK_NB) } != 0 {
        return Err(format!(
            "the audit log {} is being written by another toolhost process (one writer per file: give each its own \
             `[audit] file`)",
            path.display()
        ));
    }
    Ok((file, meta.len()))
}

/// The last complete line of the file, if it has any lines; an error when it
/// ends in a line without a line break.
fn last_line(file: &File, size: u64) -> std::io::Result<Option<Vec<u8>>> {
    if size == 0 {
        return Ok(None);
    }
    let tail = size.min(crate::line::MAX_LINE as u64 + 1);
    let mut reader = file;
    reader.seek(SeekFrom::Start(size - tail))?;
    let mut bytes = Vec::with_capacity(tail as usize);
    reader.take(tail).read_to_end(&mut bytes)?;
    if bytes.last() != Some(&b'\n') {
        return Ok(Some(bytes.rsplit(|b| *b == b'\n').next().unwrap_or_default().to_vec()));
    }
    bytes.pop();
    let start = bytes.iter().rposition(|b| *b == b'\n').map_or(0, |at| at + 1);
    Ok(Some(bytes[start..].to_vec()))
}

/// Checks, at start, that the log at `path` (its chain ending at `chain`)
/// reaches its checkpoint: a log that ends before the line its checkpoint
/// names lost lines from its end, and continuing it would hide that, so
/// toolhost does not start. A checkpoint that is missing, unreadable or
/// another key's is replaced at the next batch (with a warning).
fn reaches_checkpoint(path: &Path, chain: &Chain, checkpoint: &Path, key: &SigningKey) -> Result<(), String> {
    if !checkpoint.exists() {
        return Ok(());
    }
    let found = match crate::checkpoint::read(checkpoint, key.public()) {
        Ok(found) => found,
        Err(why) => {
            tracing::warn!(
                "the audit checkpoint {} cannot be used ({why}); it is replaced at the next line",
                checkpoint.display()
            );
            return Ok(());
        }
    };
    let behind = found.seq > chain.seq || (found.seq == chain.seq && found.sha256 != chain.prev && chain.seq > 0);
    if !behind {
        return Ok(());
    }
    let ends = if chain.seq == 0 { "holds no line".to_owned() } else { format!("ends at seq {}", chain.seq) };
    Err(format!(
        "the audit log {} {ends}, but its checkpoint {} says the chain reached seq {} (written {}): lines were cut \
         from the log's end, or lost in a crash before they reached the disk. Keep both as they are for whoever \
         looks into it (`toolhost audit verify {} --key PUB --checkpoint {}` names what is missing), then move \
         them aside to start a new chain",
        path.display(),
        checkpoint.display(),
        found.seq,
        found.time,
        path.display(),
        checkpoint.display()
    ))
}

/// The chain after `line`, if it is a whole line this key signed.
fn continues(line: &[u8], key: &SigningKey) -> Option<Chain> {
    let value: Value = serde_json::from_slice(line).ok()?;
    if canonical::to_vec(&value) != line || value.get("key")?.as_str()? != key.public().fingerprint() {
        return None;
    }
    let seq = value.get("seq")?.as_u64()?;
    Some(Chain { seq, prev: hex(&Sha256::digest(line)) })
}

/// Renames `path` to `path.N`, N one more than any there. Returns the new name.
fn rotate_aside(path: &Path) -> Result<PathBuf, String> {
    let name = path.file_name().map(|name| name.to_string_lossy().into_owned()).unwrap_or_default();
    let dir = path.parent().filter(|dir| !dir.as_os_str().is_empty()).unwrap_or(Path::new("."));
    let mut highest = 0u64;
    if let Ok(entries) = std::fs::read_dir(dir) {
        for entry in entries.flatten() {
            let other = entry.file_name().to_string_lossy().into_owned();
            if let Some(n) =
                other.strip_prefix(&name).and_then(|rest| rest.strip_prefix('.')).and_then(|n| n.parse().ok())
            {
                highest = highest.max(n);
            }
        }
    }
    let moved = dir.join(format!("{name}.{}", highest + 1));
    std::fs::rename(path, &moved)
        .map_err(|err| format!("could not move the audit log {} aside: {err}", path.display()))?;
    Ok(moved)
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::keys::{Algorithm, PublicKey};

    fn key() -> (SigningKey, PublicKey) {
        let key = SigningKey::from_pkcs8(&SigningKey::generate(Algorithm::Ed25519).unwrap()).unwrap();
        let public = key.public().clone();
        (key, public)
    }

    #[test]
    fn records_dropped_under_pressure_are_counted_in_the_chain() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("audit.log");
        let (key, public) = key();
        let log =
            AuditLog::open(Target::File { path: path.clone(), rotate: u64::MAX, checkpoint: None }, key, 1).unwrap();
        for index in 0..2000 {
            log.record(Pending::Json(json!({"kind": "tool", "n": index})));
        }
        let lost = log.lost();
        drop(log);
        let summary = crate::verify::verify(std::slice::from_ref(&path), &public).unwrap();
        let text = std::fs::read_to_string(&path).unwrap();
        let written = text.lines().filter(|line| line.contains(r#""kind":"tool""#)).count() as u64;
        assert_eq!(written + summary.lost, 2000, "{summary:?}");
        assert_eq!(summary.lost, lost);
    }

    #[test]
    fn a_second_writer_is_refused_and_a_restart_continues_the_chain() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("audit.log");
        let ours = SigningKey::generate(Algorithm::Ed25519).unwrap();
        let public = SigningKey::from_pkcs8(&ours).unwrap().public().clone();
        let (theirs, their_public) = key();
        let target = Target::File { path: path.clone(), rotate: u64::MAX, checkpoint: None };
        let log = AuditLog::open(target.clone(), SigningKey::from_pkcs8(&ours).unwrap(), 16).unwrap();
        log.record(Pending::Json(json!({"kind": "tool"})));
        let err = AuditLog::open(target.clone(), SigningKey::from_pkcs8(&ours).unwrap(), 16).unwrap_err();
        assert!(err.contains("being written by another toolhost"), "{err}");
        drop(log);
        let log = AuditLog::open(target.clone(), SigningKey::from_pkcs8(&ours).unwrap(), 16).unwrap();
        log.record(Pending::Json(json!({"kind": "tool"})));
        drop(log);
        let summary = crate::verify::verify(std::slice::from_ref(&path), &public).unwrap();
        assert_eq!((summary.lines, summary.last_seq), (2, 2));
        // Another key does not continue our chain: ours is moved aside.
        let log = AuditLog::open(target, theirs, 16).unwrap();
        log.record(Pending::Json(json!({"kind": "tool"})));
        drop(log);
        let moved = dir.path().join("audit.log.1");
        assert_eq!(crate::verify::verify(&[moved], &public).unwrap().lines, 2);
        assert_eq!(crate::verify::verify(&[path], &their_public).unwrap().first_seq, 1);
    }

    #[test]
    fn a_checkpoint_follows_the_chain_and_a_log_behind_it_is_not_continued() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("audit.log");
        let checkpoint = dir.path().join("audit.checkpoint");
        let der = SigningKey::generate(Algorithm::Ed25519).unwrap();
        let public = SigningKey::from_pkcs8(&der).unwrap().public().clone();
        let target = Target::File { path: path.clone(), rotate: u64::MAX, checkpoint: Some(checkpoint.clone()) };
        let log = AuditLog::open(target.clone(), SigningKey::from_pkcs8(&der).unwrap(), 16).unwrap();
        for index in 0..3 {
            log.record(Pending::Json(json!({"kind": "tool", "n": index})));
        }
        drop(log);
        let anchor = crate::checkpoint::read(&checkpoint, &public).unwrap();
        let files = [path.clone()];
        let summary = crate::verify::verify_to(&files, &public, Some(&anchor)).unwrap();
        assert_eq!((anchor.seq, anchor.sha256.as_str()), (3, summary.last_digest.as_str()));
        // Another line at the checkpoint's seq: named.
        let other = crate::checkpoint::Checkpoint { sha256: "00".repeat(32), ..anchor.clone() };
        let err = crate::verify::verify_to(&files, &public, Some(&other)).unwrap_err();
        assert!(err.reason.contains("line seq 3 is not the line the checkpoint names"), "{err}");
        // The last line cut: verify names it, and the writer will not continue the log.
        let text = std::fs::read_to_string(&path).unwrap();
        let kept: String = text.lines().take(2).map(|line| format!("{line}\n")).collect();
        std::fs::write(&path, kept).unwrap();
        let err = crate::verify::verify_to(&files, &public, Some(&anchor)).unwrap_err();
        assert!(err.reason.contains("line seq 3 is missing from its end"), "{err}");
        let err = AuditLog::open(target, SigningKey::from_pkcs8(&der).unwrap(), 16).unwrap_err();
        assert!(err.contains("ends at seq 2, but its checkpoint"), "{err}");
    }
}

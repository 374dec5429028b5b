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
//! the chain) and `prev` (the hex SHA-256 of the line before, [`GENESIS`] for
//! the first) added. With `batch = 1` each line is signed alone (`v: 1`:
//! `key`, the signing key's fingerprint, and `sig`, base64 of the signature
//! over the canonical bytes of everything else); otherwise (`v: 2`) a signed
//! tree head over each batch of lines follows them ([`crate::head`]).

use crate::canonical::Object;
use crate::keys::{SigningKey, hex};
pub use crate::line::{GENESIS, VERSION, now};
use base64::Engine as _;
use serde_json::Value;
use sha2::{Digest, Sha256};
use std::fs::File;
use std::io::{BufWriter, Read, Seek, SeekFrom, Write};
use std::path::{Path, PathBuf};
use std::sync::Arc;
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::mpsc::{Receiver, RecvTimeoutError, SyncSender, TrySendError};
use std::time::{Duration, Instant};

/// Records waiting for the writer when the config does not say.
pub const DEFAULT_QUEUE: usize = 4096;

/// How long a call under `receipt_in_meta` waits for its signed line (or
/// its batch's signed head).
pub const RECEIPT_WAIT: Duration = Duration::from_secs(2);

/// How lines are signed.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Signing {
    /// Every line signed alone (`[audit] batch = 1`; format `v: 1`).
    EachLine,
    /// A signed tree head after at most `lines` lines, or `interval` after
    /// the first of them (format `v: 2`).
    Batch { lines: usize, interval: Duration },
}

impl Default for Signing {
    fn default() -> Signing {
        Signing::Batch { lines: crate::head::DEFAULT_BATCH, interval: crate::head::DEFAULT_INTERVAL }
    }
}

/// Where the lines go.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Target {
    /// A file, moved aside to `FILE.N` once it would grow past `rotate`
    /// bytes; with a checkpoint file rewritten after each batch.
    File { path: PathBuf, rotate: u64, checkpoint: Option<PathBuf> },
    /// Standard output.
    Stdout,
}

/// What waits for the writer. A call's record is boxed: the queue's places
/// are reserved when the log opens, and a record is about half a KiB.
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
    fn lay_out(self) -> (Object, Option<tokio::sync::oneshot::Sender<Value>>) {
        match self {
            Pending::Json(value) => (Object::of(value), None),
            Pending::Call(record, include_arguments) => (record.lay_out(include_arguments), None),
            Pending::Receipted(record, include_arguments, receipt) => {
                (record.lay_out(include_arguments), Some(receipt))
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
    pub fn open(target: Target, key: SigningKey, queue: usize, signing: Signing) -> Result<AuditLog, String> {
        let sink = Sink::open(target, &key, signing)?;
        let (sender, receiver) = std::sync::mpsc::sync_channel(queue.max(1));
        let lost = Arc::new(AtomicU64::new(0));
        // A short queue would fill while the writer lingers: it then waits on the queue.
        let linger = (queue >= LINGER_QUEUE).then_some(LINGER);
        let writer = {
            let lost = lost.clone();
            std::thread::Builder::new()
                .name("audit-log".to_owned())
                .spawn(move || write_lines(receiver, sink, key, lost, linger))
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

/// How long the writer waits for more lines, asleep, after the queue runs
/// dry and before it writes what it has to the file (see `write_lines`): a
/// line reaches the file at most this much later; a call that waits for its
/// receipt is not kept waiting.
const LINGER: Duration = Duration::from_micros(500);

/// The shortest queue the writer lingers with (at 500,000 calls a second,
/// what arrives in [`LINGER`]); with a shorter one it waits on the queue.
const LINGER_QUEUE: usize = 256;

/// The writer's buffer: at most this much is written by one system call.
const BUFFER: usize = 64 << 10;

/// Where the writer is in the chain.
struct Chain {
    seq: u64,
    prev: String,
}

fn write_lines(
    receiver: Receiver<Pending>,
    mut sink: Sink,
    key: SigningKey,
    lost: Arc<AtomicU64>,
    linger: Option<Duration>,
) {
    let report = |sink: &mut Sink, result: std::io::Result<()>| {
        if let Err(err) = result {
            tracing::error!(target = %sink.describe(), "could not write the audit log: {err}");
        }
    };
    loop {
        let first = match sink.deadline() {
            None => match receiver.recv() {
                Ok(record) => record,
                Err(_) => break,
            },
            Some(deadline) => match receiver.recv_timeout(deadline.saturating_duration_since(Instant::now())) {
                Ok(record) => record,
                Err(RecvTimeoutError::Timeout) => {
                    // The batch's time is up.
                    let result = sink.head(&key);
                    report(&mut sink, result);
                    continue;
                }
                Err(RecvTimeoutError::Disconnected) => break,
            },
        };
        let mut next = Some(first);
        loop {
            while let Some(record) = next.take() {
                let dropped = lost.swap(0, Ordering::Relaxed);
                if dropped > 0 {
                    tracing::warn!(count = dropped, "audit records were dropped while the writer was behind");
                    let result = sink.append(lost_line(dropped), None, &key);
                    report(&mut sink, result);
                }
                let (record, receipt) = record.lay_out();
                let result = sink.append(record, receipt, &key);
                report(&mut sink, result);
                if sink.batch_full() || sink.deadline().is_some_and(|deadline| deadline <= Instant::now()) {
                    let result = sink.head(&key);
                    report(&mut sink, result);
                }
                next = receiver.try_recv().ok();
            }
            // The queue ran dry. Unless a caller waits for its receipt, the
            // writer sleeps a moment (not on the queue: a caller's send then
            // wakes nobody) and takes what came meanwhile, so that under load
            // one wake-up and one write serve many lines.
            let Some(linger) = linger.filter(|_| !sink.awaited()) else { break };
            std::thread::sleep(linger);
            match receiver.try_recv() {
                Ok(record) => next = Some(record),
                Err(_) => break,
            }
        }
        // The queue is empty: what was written goes to the file, and a caller
        // waiting for a receipt gets it now rather than at the batch's end.
        let result = sink.drained(&key);
        report(&mut sink, result);
    }
    let dropped = lost.swap(0, Ordering::Relaxed);
    if dropped > 0 {
        let result = sink.append(lost_line(dropped), None, &key);
        report(&mut sink, result);
    }
    let result = sink.head(&key);
    report(&mut sink, result);
    let result = sink.drained(&key);
    report(&mut sink, result);
}

/// The line saying `count` records were dropped.
fn lost_line(count: u64) -> Object {
    let mut line = Object::with_capacity(6, 64);
    line.str("kind", "lost");
    line.u64("count", count);
    line.str("time", &now());
    line
}

/// `record` as a signed line after `chain`, without its line break, and its digest.
pub fn seal(record: &mut Object, seq: u64, prev: &str, key: &SigningKey) -> (Vec<u8>, String) {
    record.u64("v", VERSION);
    record.u64("seq", seq);
    record.str("prev", prev);
    record.str("key", key.public().fingerprint());
    record.remove("sig");
    let signature = key.sign(&record.to_vec());
    record.str("sig", &base64::engine::general_purpose::STANDARD.encode(signature));
    let line = record.to_vec();
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
    signing: Signing,
    /// The digest of the last signed line (a head, or a line signed alone).
    last_signed: String,
    /// Batched lines waiting for their head.
    batch: crate::head::Batch,
    /// `batch = 1`: signed lines whose callers wait for the flush.
    receipts: Vec<(tokio::sync::oneshot::Sender<Value>, Value)>,
}

impl Sink {
    fn open(target: Target, key: &SigningKey, signing: Signing) -> Result<Sink, String> {
        let sink = |out: Out, chain: Chain, checkpoint: Option<(PathBuf, u64)>| {
            let last_signed = if chain.seq == 0 { GENESIS.to_owned() } else { chain.prev.clone() };
            Sink {
                out,
                chain,
                checkpoint,
                signing,
                last_signed,
                batch: crate::head::Batch::default(),
                receipts: Vec::new(),
            }
        };
        match target {
            Target::Stdout => Ok(sink(
                Out::Stdout(BufWriter::with_capacity(BUFFER, std::io::stdout())),
                Chain { seq: 0, prev: GENESIS.to_owned() },
                None,
            )),
            Target::File { path, rotate, checkpoint } => {
                let (file, size) = open_file(&path)?;
                let chain = match last_line(&file, size) {
                    Ok(Some(last)) => match continues(&last, key) {
                        Some(chain) => chain,
                        None => {
                            let moved = rotate_aside(&path)?;
                            tracing::warn!(
                                "the audit log {} ended in a line this key cannot continue (lines no signed head \
                                 covers: toolhost stopped before signing its last batch; a line cut short; or \
                                 another key's line); it was moved to {} and a new chain starts (`toolhost audit \
                                 verify` on it names what is not covered)",
                                path.display(),
                                moved.display()
                            );
                            // Its checkpoint goes aside with it: it is that chain's.
                            if let Some(checkpoint) = checkpoint.as_ref().filter(|checkpoint| checkpoint.exists()) {
                                let moved = rotate_aside(checkpoint)?;
                                tracing::warn!("its checkpoint was moved to {}", moved.display());
                            }
                            let (file, size) = open_file(&path)?;
                            return Ok(sink(
                                Out::File { path, rotate, file: BufWriter::with_capacity(BUFFER, file), size },
                                Chain { seq: 0, prev: GENESIS.to_owned() },
                                checkpoint.map(|checkpoint| (checkpoint, 0)),
                            ));
                        }
                    },
                    Ok(None) => Chain { seq: 0, prev: GENESIS.to_owned() },
                    Err(err) => return Err(format!("could not read the audit log {}: {err}", path.display())),
                };
                if let Some(checkpoint) = &checkpoint {
                    reaches_checkpoint(&path, &chain, checkpoint, key)?;
                }
                let checkpoint = checkpoint.map(|checkpoint| (checkpoint, chain.seq));
                Ok(sink(
                    Out::File { path, rotate, file: BufWriter::with_capacity(BUFFER, file), size },
                    chain,
                    checkpoint,
                ))
            }
        }
    }

    fn describe(&self) -> String {
        match &self.out {
            Out::File { path, .. } => path.display().to_string(),
            Out::Stdout(_) => "stdout".to_owned(),
        }
    }

    /// Writes `record` as the chain's next line; with `receipt`, its caller
    /// gets the signed line (or its batch's head and proof) once flushed.
    fn append(
        &mut self,
        mut record: Object,
        receipt: Option<tokio::sync::oneshot::Sender<Value>>,
        key: &SigningKey,
    ) -> std::io::Result<()> {
        let seq = self.chain.seq + 1;
        match self.signing {
            Signing::EachLine => {
                let (line, digest) = seal(&mut record, seq, &self.chain.prev, key);
                self.write(&line, true)?;
                self.chain = Chain { seq, prev: digest.clone() };
                self.last_signed = digest;
                if let Some(receipt) = receipt
                    && let Ok(value) = serde_json::from_slice(&line)
                {
                    self.receipts.push((receipt, value));
                }
            }
            Signing::Batch { .. } => {
                let (mut line, mut digest) = crate::head::plain(&mut record, seq, &self.chain.prev);
                // A file ends in a head: the batch is signed before the file is moved aside.
                if !self.batch.is_empty() && self.rotates(line.len()) {
                    self.head(key)?;
                    (line, digest) = crate::head::plain(&mut record, self.chain.seq + 1, &self.chain.prev);
                }
                let seq = self.chain.seq + 1;
                self.write(&line, true)?;
                self.chain = Chain { seq, prev: digest };
                self.batch.push(&line, receipt);
            }
        }
        Ok(())
    }

    /// Whether a line of `len` bytes would move the file aside first.
    fn rotates(&self, len: usize) -> bool {
        matches!(&self.out, Out::File { rotate, size, .. } if *size > 0 && *size + len as u64 + 1 > *rotate)
    }

    /// Writes `line` and its break, moving the file aside first when it
    /// would grow past `rotate` (unless `may_rotate` is false: a head stays
    /// with its lines).
    fn write(&mut self, line: &[u8], may_rotate: bool) -> std::io::Result<()> {
        let rotates = may_rotate && self.rotates(line.len());
        match &mut self.out {
            Out::File { path, file, size, .. } => {
                if rotates {
                    file.flush()?;
                    rotate_aside(path).map_err(std::io::Error::other)?;
                    let (new, new_size) = open_file(path).map_err(std::io::Error::other)?;
                    *file = BufWriter::with_capacity(BUFFER, new);
                    *size = new_size;
                }
                file.write_all(line)?;
                file.write_all(b"\n")?;
                *size += line.len() as u64 + 1;
            }
            Out::Stdout(out) => {
                out.write_all(line)?;
                out.write_all(b"\n")?;
            }
        }
        Ok(())
    }

    /// Whether a caller waits for a line written since the last flush (or
    /// for its batch's head).
    fn awaited(&self) -> bool {
        !self.receipts.is_empty() || self.batch.awaited()
    }

    /// Whether the batch holds as many lines as a head may cover.
    fn batch_full(&self) -> bool {
        matches!(self.signing, Signing::Batch { lines, .. } if self.batch.len() >= lines)
    }

    /// When the batch's head is due, if lines wait for one.
    fn deadline(&self) -> Option<Instant> {
        match self.signing {
            Signing::Batch { interval, .. } => self.batch.deadline(interval),
            Signing::EachLine => None,
        }
    }

    /// Signs and writes the head over the batch (if it holds a line), flushes,
    /// hands the waiting callers their receipts and rewrites the checkpoint.
    fn head(&mut self, key: &SigningKey) -> std::io::Result<()> {
        if self.batch.is_empty() {
            return Ok(());
        }
        let (tree, waiting) = self.batch.take();
        let seq = self.chain.seq + 1;
        let (line, digest) = crate::head::seal(seq, &self.chain.prev, &tree, &self.last_signed, key);
        self.write(&line, false)?;
        self.chain = Chain { seq, prev: digest.clone() };
        self.last_signed = digest;
        self.flush()?;
        // The head is in the file: its receipts go out, whatever becomes of the checkpoint.
        if !waiting.is_empty() {
            let head: Value = serde_json::from_slice(&line).map_err(std::io::Error::other)?;
            for (index, value, receipt) in waiting {
                let _ = receipt.send(crate::head::receipt(value, &tree, index, &head));
            }
        }
        self.checkpoint(key)
    }

    /// The queue ran dry: flush; lines signed alone get their checkpoint and
    /// receipts; a batch a caller waits on gets its head now.
    fn drained(&mut self, key: &SigningKey) -> std::io::Result<()> {
        match self.signing {
            Signing::EachLine => {
                let result = self.flush();
                if result.is_ok() {
                    for (receipt, line) in self.receipts.drain(..) {
                        let _ = receipt.send(line);
                    }
                    self.checkpoint(key)?;
                }
                self.receipts.clear();
                result
            }
            Signing::Batch { .. } if self.batch.awaited() => self.head(key),
            Signing::Batch { .. } => self.flush(),
        }
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

/// The chain after `line`, if it is a whole line this key signed (a line
/// signed alone, or a head): never a batched line no head covers, which
/// would then be signed on the word of whoever could write the file.
fn continues(line: &[u8], key: &SigningKey) -> Option<Chain> {
    let map = crate::line::signed(line, key.public()).ok()?;
    let seq = map.get("seq")?.as_u64()?;
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
    use serde_json::json;

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
        let log = AuditLog::open(
            Target::File { path: path.clone(), rotate: u64::MAX, checkpoint: None },
            key,
            1,
            Signing::default(),
        )
        .unwrap();
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
        let log =
            AuditLog::open(target.clone(), SigningKey::from_pkcs8(&ours).unwrap(), 16, Signing::default()).unwrap();
        log.record(Pending::Json(json!({"kind": "tool"})));
        let err =
            AuditLog::open(target.clone(), SigningKey::from_pkcs8(&ours).unwrap(), 16, Signing::default()).unwrap_err();
        assert!(err.contains("being written by another toolhost"), "{err}");
        drop(log);
        let log =
            AuditLog::open(target.clone(), SigningKey::from_pkcs8(&ours).unwrap(), 16, Signing::default()).unwrap();
        log.record(Pending::Json(json!({"kind": "tool"})));
        drop(log);
        let summary = crate::verify::verify(std::slice::from_ref(&path), &public).unwrap();
        // Two lines, each under the head written as its writer stopped.
        assert_eq!((summary.lines, summary.last_seq, summary.heads), (4, 4, 2));
        // Another key does not continue our chain: ours is moved aside.
        let log = AuditLog::open(target, theirs, 16, Signing::default()).unwrap();
        log.record(Pending::Json(json!({"kind": "tool"})));
        drop(log);
        let moved = dir.path().join("audit.log.1");
        assert_eq!(crate::verify::verify(&[moved], &public).unwrap().lines, 4);
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
        // Two runs of three lines, each batch under its head (seq 4 and 8).
        for run in 0..2 {
            let log =
                AuditLog::open(target.clone(), SigningKey::from_pkcs8(&der).unwrap(), 16, Signing::default()).unwrap();
            for index in 0..3 {
                log.record(Pending::Json(json!({"kind": "tool", "n": index, "run": run})));
            }
            drop(log);
        }
        let anchor = crate::checkpoint::read(&checkpoint, &public).unwrap();
        let files = [path.clone()];
        let summary = crate::verify::verify_to(&files, &public, Some(&anchor)).unwrap();
        assert_eq!((anchor.seq, anchor.sha256.as_str()), (8, summary.last_digest.as_str()));
        // Another line at the checkpoint's seq: named.
        let other = crate::checkpoint::Checkpoint { sha256: "00".repeat(32), ..anchor.clone() };
        let err = crate::verify::verify_to(&files, &public, Some(&other)).unwrap_err();
        assert!(err.reason.contains("line seq 8 is not the line the checkpoint names"), "{err}");
        // The last batch and its head cut: verify names them, and the writer will not continue the log.
        let text = std::fs::read_to_string(&path).unwrap();
        let kept: String = text.lines().take(4).map(|line| format!("{line}\n")).collect();
        std::fs::write(&path, kept).unwrap();
        let err = crate::verify::verify_to(&files, &public, Some(&anchor)).unwrap_err();
        assert!(err.reason.contains("lines seq 5 to 8 are missing from its end"), "{err}");
        let err = AuditLog::open(target, SigningKey::from_pkcs8(&der).unwrap(), 16, Signing::default()).unwrap_err();
        assert!(err.contains("ends at seq 4, but its checkpoint"), "{err}");
    }
}

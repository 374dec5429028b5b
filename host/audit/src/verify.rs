//! `toolhost audit verify`: walks audit log files in order and says where
//! the chain breaks: a line edited (not canonical, or its signature does not
//! match), removed, reordered or repeated (its `seq` and `prev` do not follow
//! the line before), cut short (the last line does not end), or signed by
//! another key. A batched line (`v: 2`) is signed by the tree head after it
//! ([`crate::head`]): the head's root must be the Merkle root of exactly the
//! lines since the signed line before it, and a line no head covers (the
//! log's last lines, after a crash mid-batch or added by hand) is a break.
//! What a line says of its place is trusted only once the signature that
//! covers it has been checked; until then `seq` and `prev` only say where
//! to look.
//!
//! What it cannot see alone: whole lines removed from the end of the newest
//! file. Given a checkpoint ([`crate::checkpoint`], `--checkpoint`) it checks
//! that the chain reaches the line the checkpoint names. The summary names
//! the last `seq` and digest, for comparing with a receipt or a copy kept
//! elsewhere.

use crate::canonical;
use crate::checkpoint::Checkpoint;
use crate::keys::{PublicKey, hex};
pub use crate::line::MAX_LINE;
use crate::line::{GENESIS, signed};
use serde_json::Value;
use sha2::{Digest, Sha256};
use std::io::{BufRead, BufReader, Read};
use std::path::{Path, PathBuf};

/// An intact log.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Summary {
    /// Lines checked.
    pub lines: u64,
    /// The first line's `seq` (1 when the log starts the chain).
    pub first_seq: u64,
    /// The last line's `seq`.
    pub last_seq: u64,
    /// The hex SHA-256 of the last line.
    pub last_digest: String,
    /// Records the writer said it dropped (`lost` lines).
    pub lost: u64,
    /// Signed tree heads (each over a batch of lines).
    pub heads: u64,
    /// Lines at the end of a log a toolhost is still writing (it holds the
    /// file's lock) that no head covers yet: not vouched for, not counted
    /// in `lines`; their head is due within `batch_interval`.
    pub pending: u64,
}

/// Where and why a log is not intact.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Break {
    /// The file.
    pub file: PathBuf,
    /// The line, from 1.
    pub line: u64,
    /// Why, in one sentence.
    pub reason: String,
}

impl std::fmt::Display for Break {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "{}:{}: {}", self.file.display(), self.line, self.reason)
    }
}

/// Checks `files`, oldest first, as one chain signed by `key`.
pub fn verify(files: &[PathBuf], key: &PublicKey) -> Result<Summary, Break> {
    verify_to(files, key, None)
}

/// [`verify`], and with `anchor` (a checkpoint, already checked as signed
/// by `key`) that the chain reaches the line it names: its `seq` is in the
/// files and that line's digest is its `sha256`. Lines after it are fine
/// (written after the checkpoint was taken).
pub fn verify_to(files: &[PathBuf], key: &PublicKey, anchor: Option<&Checkpoint>) -> Result<Summary, Break> {
    let mut state: Option<(u64, String)> = None;
    let mut summary =
        Summary { lines: 0, first_seq: 0, last_seq: 0, last_digest: String::new(), lost: 0, heads: 0, pending: 0 };
    // The signed prefix: what the summary says when the tail is pending.
    let mut signed_end = (0u64, 0u64, String::new(), 0u64);
    let mut end = (PathBuf::new(), 0u64);
    let mut batch = Uncovered::default();
    each_line(files, |file, number, bytes| {
        let (seq, digest, lost) = match bytes_are_signed(bytes)? {
            true => {
                let (seq, digest, lost, head) = check_signed(bytes, key, state.as_ref(), &mut batch)?;
                summary.heads += u64::from(head);
                (seq, digest, lost)
            }
            false => {
                let (seq, digest, lost) = check_batched(bytes, state.as_ref())?;
                if state.is_none() && seq == 1 {
                    batch.last_signed = Some(GENESIS.to_owned());
                }
                batch.add(bytes, seq, file, number);
                (seq, digest, lost)
            }
        };
        if summary.lines == 0 {
            summary.first_seq = seq;
            if let Some(anchor) = anchor
                && seq > anchor.seq
            {
                return Err(format!(
                    "the log starts at seq {seq}, after the checkpoint's seq {}: give the older files too (oldest \
                     first), or a newer checkpoint",
                    anchor.seq
                ));
            }
        }
        if let Some(anchor) = anchor
            && seq == anchor.seq
            && digest != anchor.sha256
        {
            return Err(format!(
                "line seq {seq} is not the line the checkpoint names (its sha256 is {digest}, the checkpoint's {}): \
                 the log's end was cut and written again, or the checkpoint is another chain's",
                anchor.sha256
            ));
        }
        summary.lines += 1;
        summary.last_seq = seq;
        summary.lost += lost;
        if batch.first.is_none() {
            signed_end = (summary.lines, seq, digest.clone(), summary.lost);
        }
        state = Some((seq, digest));
        end = (file.clone(), number);
        Ok(Next::Read)
    })?;
    if let Some((_, digest)) = state {
        summary.last_digest = digest;
    }
    if let Some((file, line, from)) = batch.first.take() {
        let count = batch.leaves.len();
        if files.last().is_some_and(|last| being_written(last)) {
            summary.pending = count as u64;
        } else {
            let which = if count == 1 {
                format!("the log's last line (seq {from}) is")
            } else {
                format!("the log's last {count} lines (seq {from} to {}) are", from + count as u64 - 1)
            };
            return Err(Break {
                file,
                line,
                reason: format!(
                    "{which} not covered by a signed tree head: toolhost stopped before signing its last batch (a crash \
                     or kill), or they were added or edited by someone who can write the file; nothing vouches for them"
                ),
            });
        }
    }
    if let Some(anchor) = anchor
        && (summary.lines == 0 || summary.last_seq < anchor.seq)
    {
        let (file, line) = match (&end, files.last()) {
            ((file, line), _) if *line > 0 => (file.clone(), *line),
            (_, Some(file)) => (file.clone(), 0),
            (_, None) => (PathBuf::new(), 0),
        };
        let ends =
            if summary.lines == 0 { "holds no line".to_owned() } else { format!("ends at seq {}", summary.last_seq) };
        let from = if summary.lines == 0 { 1 } else { summary.last_seq + 1 };
        let missing = if from == anchor.seq {
            format!("line seq {from} is")
        } else {
            format!("lines seq {from} to {} are", anchor.seq)
        };
        return Err(Break {
            file,
            line,
            reason: format!(
                "the log {ends}, but its checkpoint (written {}) says the chain reached seq {}: {missing} missing \
                 from its end (cut, or lost in a crash before they reached the disk)",
                anchor.time, anchor.seq
            ),
        });
    }
    if summary.pending > 0 {
        // What the summary vouches for ends at the last signed line.
        (summary.lines, summary.last_seq, summary.last_digest, summary.lost) = signed_end;
    }
    Ok(summary)
}

/// What [`each_line`] does after a line.
enum Next {
    Read,
    Stop,
}

/// Reads `files`, oldest first, a whole line at a time (bounded, regular
/// files only) and hands each to `visit` without its newline, with its file
/// and number, until `visit` says stop or fails; a line cut short or too
/// long is a break.
fn each_line(
    files: &[PathBuf],
    mut visit: impl FnMut(&PathBuf, u64, &[u8]) -> Result<Next, String>,
) -> Result<(), Break> {
    for file in files {
        let fail = |line: u64, reason: String| Break { file: file.clone(), line, reason };
        let opened =
            toolhost_grants::readfile::open_regular(file).map_err(|err| fail(0, format!("cannot read it: {err}")))?;
        let mut reader = BufReader::new(opened);
        let mut number = 0u64;
        let mut bytes = Vec::new();
        loop {
            bytes.clear();
            let read = (&mut reader)
                .take(MAX_LINE as u64 + 1)
                .read_until(b'\n', &mut bytes)
                .map_err(|err| fail(number + 1, format!("cannot read it: {err}")))?;
            if read == 0 {
                break;
            }
            number += 1;
            if bytes.last() != Some(&b'\n') {
                let reason = if bytes.len() > MAX_LINE {
                    format!("longer than {MAX_LINE} bytes: not a line toolhost wrote")
                } else {
                    "cut short: the last line does not end (the file was truncated, or toolhost stopped while \
                     writing it)"
                        .to_owned()
                };
                return Err(fail(number, reason));
            }
            bytes.pop();
            match visit(file, number, &bytes).map_err(|reason| fail(number, reason))? {
                Next::Read => {}
                Next::Stop => return Ok(()),
            }
        }
    }
    Ok(())
}

/// Whether a toolhost process is writing `file` now: it holds the lock the
/// writer takes on its log for as long as it runs (a crashed one's is gone).
fn being_written(file: &Path) -> bool {
    use std::os::fd::AsRawFd;
    let Ok(opened) = toolhost_grants::readfile::open_regular(file) else {
        return false;
    };
    // SAFETY: flock on a descriptor this function owns; a shared lock is
    // refused only while another holds it exclusively.
    let refused = unsafe { libc::flock(opened.as_raw_fd(), libc::LOCK_SH | libc::LOCK_NB) } != 0;
    refused && std::io::Error::last_os_error().raw_os_error() == Some(libc::EWOULDBLOCK)
}

/// The batched lines since the last signed line: what the next head must cover.
#[derive(Default)]
struct Uncovered {
    leaves: Vec<crate::merkle::Hash>,
    /// The first of them: its file, line number and `seq`.
    first: Option<(PathBuf, u64, u64)>,
    /// The digest of the last signed line, which the next head names as
    /// `prev_head` ([`GENESIS`] at the chain's start; unknown when the
    /// files begin inside the chain, until its first signed line).
    last_signed: Option<String>,
}

impl Uncovered {
    fn add(&mut self, bytes: &[u8], seq: u64, file: &Path, number: u64) {
        self.leaves.push(crate::merkle::leaf(bytes));
        self.first.get_or_insert_with(|| (file.to_path_buf(), number, seq));
    }
}

/// Whether `bytes` is a signed line (one signed alone, or a head) rather
/// than a batched one: it has a `sig`. An unparsable line is a break.
fn bytes_are_signed(bytes: &[u8]) -> Result<bool, String> {
    let value: Value = serde_json::from_slice(bytes)
        .map_err(|_| "not a JSON line (edited, damaged, or not an audit log)".to_owned())?;
    Ok(value.get("sig").is_some())
}

/// Checks where a line says it is (`seq` and `prev`) against the line
/// before (`before`: its `seq` and digest).
fn follows(map: &serde_json::Map<String, Value>, before: Option<&(u64, String)>) -> Result<u64, String> {
    let seq = map.get("seq").and_then(Value::as_u64).ok_or("has no `seq`")?;
    let prev = map.get("prev").and_then(Value::as_str).ok_or("has no `prev`")?;
    match before {
        None if seq == 1 && prev != GENESIS => return Err("starts the chain but does not say so".to_owned()),
        None => {}
        Some((before_seq, before_digest)) => {
            let expected = before_seq + 1;
            if seq > expected {
                return Err(if seq == expected + 1 {
                    format!("line seq {expected} is missing before it (removed)")
                } else {
                    format!("lines seq {expected} to {} are missing before it (removed)", seq - 1)
                });
            }
            if seq < expected {
                return Err(format!("seq {seq} comes after seq {before_seq} (lines reordered or repeated)"));
            }
            if prev != before_digest {
                return Err(
                    "does not follow the line before it (that line was edited, or replaced by another)".to_owned()
                );
            }
        }
    }
    Ok(seq)
}

fn lost_in(map: &serde_json::Map<String, Value>) -> u64 {
    match map.get("kind").and_then(Value::as_str) {
        Some("lost") => map.get("count").and_then(Value::as_u64).unwrap_or(0),
        _ => 0,
    }
}

/// Checks a batched line (no `sig`) after `before`: its form and place; its
/// content is vouched for by the head after it. Returns its `seq`, digest
/// and the records it says were lost.
fn check_batched(bytes: &[u8], before: Option<&(u64, String)>) -> Result<(u64, String, u64), String> {
    let value: Value = serde_json::from_slice(bytes)
        .map_err(|_| "not a JSON line (edited, damaged, or not an audit log)".to_owned())?;
    let Value::Object(map) = &value else {
        return Err("not a JSON object (edited, or not an audit log)".to_owned());
    };
    if canonical::to_vec(&value) != bytes {
        return Err("not in the form toolhost writes (the line was edited)".to_owned());
    }
    if map.get("v").and_then(Value::as_u64) != Some(crate::head::VERSION) {
        return Err("has no signature (the line was edited: only batched lines, `\"v\":2`, go unsigned, under \
                    the signed tree head after them)"
            .to_owned());
    }
    if map.get("kind").and_then(Value::as_str) == Some("head") {
        return Err("a tree head without a signature (edited, or not written by toolhost)".to_owned());
    }
    let seq = follows(map, before)?;
    Ok((seq, hex(&Sha256::digest(bytes)), lost_in(map)))
}

/// Checks a signed line after `before`: its signature and place, and for a
/// tree head, that it covers exactly the batched lines in `batch` (which it
/// then empties). Returns its `seq`, digest, lost records, and whether it
/// is a head.
fn check_signed(
    bytes: &[u8],
    key: &PublicKey,
    before: Option<&(u64, String)>,
    batch: &mut Uncovered,
) -> Result<(u64, String, u64, bool), String> {
    let map = signed(bytes, key)?;
    let seq = follows(&map, before)?;
    let digest = hex(&Sha256::digest(bytes));
    if map.get("kind").and_then(Value::as_str) != Some("head") {
        if let Some((_, _, from)) = &batch.first {
            let which = if *from + 1 == seq {
                format!("line seq {from} before it is")
            } else {
                format!("lines seq {from} to {} before it are", seq - 1)
            };
            return Err(format!(
                "{which} not covered by a signed tree head (a head was removed, or the lines were added)"
            ));
        }
        batch.last_signed = Some(digest.clone());
        return Ok((seq, digest, lost_in(&map), false));
    }
    let size = map.get("tree_size").and_then(Value::as_u64).ok_or("a tree head without `tree_size`")?;
    let root = map.get("root").and_then(Value::as_str).ok_or("a tree head without `root`")?;
    let prev_head = map.get("prev_head").and_then(Value::as_str).ok_or("a tree head without `prev_head`")?;
    let covered = batch.leaves.len() as u64;
    // (A file ends in a signed line: the writer signs its batch before
    // moving it aside, so a file that continues another starts a batch.)
    if size == 0 || size != covered {
        return Err(format!(
            "the signed tree head covers {size} line(s), but {covered} batched line(s) come before it since the \
             signed line before (lines were added or removed)"
        ));
    }
    if hex(&crate::merkle::Tree::new(std::mem::take(&mut batch.leaves)).root()) != root {
        return Err(format!(
            "the signed tree head's root is not the Merkle root of the {size} line(s) before it (seq {} to {}): \
             one of them was edited, and the chain written again to hide it",
            seq - size,
            seq - 1
        ));
    }
    if let Some(last) = &batch.last_signed
        && last != prev_head
    {
        return Err("the signed tree head does not follow the signed line before it (`prev_head`): heads were \
                    swapped or replaced"
            .to_owned());
    }
    batch.first = None;
    batch.last_signed = Some(digest.clone());
    Ok((seq, digest, lost_in(&map), true))
}

/// Checks one signed line standing alone (a receipt) after `before`.
fn check_line(bytes: &[u8], key: &PublicKey, before: Option<&(u64, String)>) -> Result<(u64, String, u64), String> {
    let map = signed(bytes, key)?;
    let seq = follows(&map, before)?;
    Ok((seq, hex(&Sha256::digest(bytes)), lost_in(&map)))
}

/// One line saying an intact log is intact.
pub fn describe(summary: &Summary, files: &[PathBuf]) -> String {
    let what = match files {
        [one] => one.display().to_string(),
        many => format!("{} files", many.len()),
    };
    let start = if summary.first_seq > 1 {
        format!(" (continuing an earlier file from seq {})", summary.first_seq)
    } else {
        String::new()
    };
    let heads = if summary.heads > 0 {
        format!("; every batched line is under one of {} signed tree head(s)", summary.heads)
    } else {
        String::new()
    };
    let lost = if summary.lost > 0 {
        format!("; {} record(s) were dropped while the writer was behind, as the log says", summary.lost)
    } else {
        String::new()
    };
    let pending = if summary.pending > 0 {
        format!(
            "; the {} line(s) after seq {} are not under a signed tree head yet, so not vouched for: toolhost is \
             writing this log and signs them within `batch_interval`; verify again then",
            summary.pending, summary.last_seq
        )
    } else {
        String::new()
    };
    if summary.lines == 0 {
        return format!("{what}: no line under a signed tree head yet{pending}");
    }
    format!(
        "{what}: intact, {} line(s), seq {} to {}{start}; last line sha256 {}{heads}{lost}{pending}",
        summary.lines, summary.first_seq, summary.last_seq, summary.last_digest
    )
}

/// A receipt that checked: the signed line a call's result carried, or a
/// batched line with its inclusion proof and signed tree head.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Receipt {
    /// Its place in the chain.
    pub seq: u64,
    /// The hex SHA-256 of the line (what the next line's `prev` names).
    pub digest: String,
    /// The line before's digest, as the receipt says.
    pub prev: String,
    /// The line in the form the log holds it (without its break).
    pub line: Vec<u8>,
    /// For a batched line: the head that signs it (`seq`, `tree_size`, `root`, `time`).
    pub head: Option<HeadSeen>,
}

/// A signed tree head a receipt's proof led to.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct HeadSeen {
    /// Its place in the chain.
    pub seq: u64,
    /// How many lines it covers (those just before it).
    pub tree_size: u64,
    /// Their Merkle root, hex.
    pub root: String,
    /// When it was signed.
    pub time: String,
}

/// Whether `value` is a receipt itself: a signed line, or a batched
/// line's `{line, proof, head}`.
fn is_receipt(value: &Value) -> bool {
    value.get("sig").is_some() || (value.get("line").is_some() && value.get("head").is_some())
}

/// The line a receipt (already found by [`receipt_in`]) vouches for: the
/// signed line itself, or a batched receipt's `line`.
pub fn receipt_line(receipt: &Value) -> &Value {
    match receipt.get("sig") {
        Some(_) => receipt,
        None => receipt.get("line").unwrap_or(receipt),
    }
}

/// The receipt in `value`: the signed line itself, or an MCP result (or a
/// JSON-RPC response holding one) that carries it in `_meta` under `meta_key`.
pub fn receipt_in<'a>(value: &'a Value, meta_key: &str) -> Option<&'a Value> {
    if is_receipt(value) {
        return Some(value);
    }
    let result = value.get("result").unwrap_or(value);
    result.get("_meta").and_then(|meta| meta.get(meta_key))
}

/// The MCP result in `value` that a receipt came in (a result, or a
/// JSON-RPC response holding one), or `None` when `value` is a bare receipt.
pub fn result_with(value: &Value) -> Option<&Value> {
    if is_receipt(value) {
        return None;
    }
    Some(value.get("result").unwrap_or(value))
}

/// Checks a receipt taken from a result: a line in toolhost's form, signed
/// by `key`; or a batched line, its inclusion proof, and the tree head
/// signed by `key` whose root the proof leads to. Needs nothing but the
/// key. Says why not in one sentence.
pub fn check_receipt(receipt: &Value, key: &PublicKey) -> Result<Receipt, String> {
    if !receipt.is_object() {
        return Err("not a receipt: a receipt is the JSON object of one signed audit line, or of a line, its \
                    proof and its signed tree head"
            .to_owned());
    }
    if receipt.get("sig").is_none() && receipt.get("line").is_some() {
        return check_batched_receipt(receipt, key);
    }
    let line = canonical::to_vec(receipt);
    if line.len() > MAX_LINE {
        return Err(format!("longer than {MAX_LINE} bytes: not a line toolhost wrote"));
    }
    let (seq, digest, _) = check_line(&line, key, None)?;
    let prev = receipt.get("prev").and_then(Value::as_str).unwrap_or_default().to_owned();
    Ok(Receipt { seq, digest, prev, line, head: None })
}

/// [`check_receipt`] for `{"line", "proof", "head"}`.
fn check_batched_receipt(receipt: &Value, key: &PublicKey) -> Result<Receipt, String> {
    let (Some(line), Some(head), Some(Value::Array(proof))) =
        (receipt.get("line"), receipt.get("head"), receipt.get("proof"))
    else {
        return Err("a batched line's receipt needs `line`, `proof` (an array) and `head`".to_owned());
    };
    let line_bytes = canonical::to_vec(line);
    let head_bytes = canonical::to_vec(head);
    if line_bytes.len() > MAX_LINE || head_bytes.len() > MAX_LINE {
        return Err(format!("longer than {MAX_LINE} bytes: not a line toolhost wrote"));
    }
    let head_map = signed(&head_bytes, key).map_err(|why| format!("its tree head: {why}"))?;
    if head_map.get("kind").and_then(Value::as_str) != Some("head") {
        return Err("its `head` is not a tree head (`\"kind\":\"head\"`)".to_owned());
    }
    let number = |name: &str| head_map.get(name).and_then(Value::as_u64);
    let text = |name: &str| head_map.get(name).and_then(Value::as_str).unwrap_or_default().to_owned();
    let (Some(head_seq), Some(size)) = (number("seq"), number("tree_size")) else {
        return Err("its tree head has no `seq` or `tree_size`".to_owned());
    };
    let root = text("root");
    let root_hash = unhex(&root).ok_or("its tree head's `root` is not a SHA-256 in hex")?;
    if line.get("sig").is_some() || line.get("v").and_then(Value::as_u64) != Some(crate::head::VERSION) {
        return Err("its `line` is not a batched line (`\"v\":2`, unsigned)".to_owned());
    }
    let seq = line.get("seq").and_then(Value::as_u64).ok_or("its line has no `seq`")?;
    let first = head_seq.checked_sub(size).filter(|first| *first >= 1 && size > 0);
    let Some(index) = first.and_then(|first| seq.checked_sub(first)).filter(|index| *index < size) else {
        return Err(format!(
            "its line (seq {seq}) is not among the lines its tree head covers (the {size} before seq {head_seq})"
        ));
    };
    let proof = proof
        .iter()
        .map(|hash| hash.as_str().and_then(unhex))
        .collect::<Option<Vec<_>>>()
        .ok_or("its `proof` is not a list of SHA-256s in hex")?;
    if !crate::merkle::verify_inclusion(&crate::merkle::leaf(&line_bytes), index, size, &proof, &root_hash) {
        return Err(format!(
            "its proof does not lead from the line to the signed tree head's root: the line was edited, or the \
             proof or head belongs to another line (seq {seq}, head seq {head_seq})"
        ));
    }
    let prev = line.get("prev").and_then(Value::as_str).unwrap_or_default().to_owned();
    let digest = hex(&Sha256::digest(&line_bytes));
    let head = HeadSeen { seq: head_seq, tree_size: size, root, time: text("time") };
    Ok(Receipt { seq, digest, prev, line: line_bytes, head: Some(head) })
}

/// A SHA-256 written as 64 lower-case hex digits.
fn unhex(text: &str) -> Option<crate::merkle::Hash> {
    if text.len() != 64 || !text.bytes().all(|b| b.is_ascii_digit() || (b'a'..=b'f').contains(&b)) {
        return None;
    }
    let mut out = [0u8; 32];
    for (index, byte) in out.iter_mut().enumerate() {
        *byte = u8::from_str_radix(&text[index * 2..index * 2 + 2], 16).ok()?;
    }
    Some(out)
}

/// Finds `receipt`'s line in `files` (oldest first), after checking them as
/// one chain: the file and line number, or why it is not there.
pub fn locate(receipt: &Receipt, files: &[PathBuf], key: &PublicKey) -> Result<(PathBuf, u64), String> {
    verify(files, key).map_err(|broken| format!("the log is not intact: {broken}"))?;
    let mut found = None;
    each_line(files, |file, number, bytes| {
        if bytes == receipt.line {
            found = Some((file.clone(), number));
            return Ok(Next::Stop);
        }
        // Lines are in seq order (verify said so): past it, it is not there.
        if serde_json::from_slice::<Value>(bytes)
            .ok()
            .and_then(|value| value.get("seq").and_then(Value::as_u64))
            .is_some_and(|seq| seq == receipt.seq)
        {
            return Err(format!(
                "the log's line seq {} is not the receipt's line (another chain, or the receipt was made for \
                 another log)",
                receipt.seq
            ));
        }
        Ok(Next::Read)
    })
    .map_err(|broken| broken.to_string())?;
    found.ok_or_else(|| {
        format!(
            "the log has no line seq {} (it was removed from the end, or the receipt belongs to another log)",
            receipt.seq
        )
    })
}

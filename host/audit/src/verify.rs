//! `toolhost audit verify`: walks audit log files in order and says where
//! the chain breaks: a line edited (not canonical, or its signature does not
//! match), removed, reordered or repeated (its `seq` and `prev` do not follow
//! the line before), cut short (the last line does not end), or signed by
//! another key. Everything a line says is trusted only once its signature has
//! been checked, so `seq` and `prev` can name what is missing.
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
use std::path::PathBuf;

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
    let mut summary = Summary { lines: 0, first_seq: 0, last_seq: 0, last_digest: String::new(), lost: 0 };
    let mut end = (PathBuf::new(), 0u64);
    each_line(files, |file, number, bytes| {
        let (seq, digest, lost) = check_line(bytes, key, state.as_ref())?;
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
        state = Some((seq, digest));
        end = (file.clone(), number);
        Ok(Next::Read)
    })?;
    if let Some((_, digest)) = state {
        summary.last_digest = digest;
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

/// Checks one line after `before` (its `seq` and digest); returns its own,
/// and how many records it says were lost.
fn check_line(bytes: &[u8], key: &PublicKey, before: Option<&(u64, String)>) -> Result<(u64, String, u64), String> {
    let map = signed(bytes, key)?;
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
                    "does not follow the line before it (that line was replaced by another signed one)".to_owned()
                );
            }
        }
    }
    let lost = match map.get("kind").and_then(Value::as_str) {
        Some("lost") => map.get("count").and_then(Value::as_u64).unwrap_or(0),
        _ => 0,
    };
    Ok((seq, hex(&Sha256::digest(bytes)), lost))
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
    let lost = if summary.lost > 0 {
        format!("; {} record(s) were dropped while the writer was behind, as the log says", summary.lost)
    } else {
        String::new()
    };
    format!(
        "{what}: intact, {} line(s), seq {} to {}{start}; last line sha256 {}{lost}",
        summary.lines, summary.first_seq, summary.last_seq, summary.last_digest
    )
}

/// A receipt that checked: the signed line a call's result carried.
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
}

/// The receipt in `value`: the signed line itself, or an MCP result (or a
/// JSON-RPC response holding one) that carries it in `_meta` under `meta_key`.
pub fn receipt_in<'a>(value: &'a Value, meta_key: &str) -> Option<&'a Value> {
    if value.get("sig").is_some() {
        return Some(value);
    }
    let result = value.get("result").unwrap_or(value);
    result.get("_meta").and_then(|meta| meta.get(meta_key))
}

/// The MCP result in `value` that a receipt came in (a result, or a
/// JSON-RPC response holding one), or `None` when `value` is a bare receipt.
pub fn result_with(value: &Value) -> Option<&Value> {
    if value.get("sig").is_some() {
        return None;
    }
    Some(value.get("result").unwrap_or(value))
}

/// Checks a receipt taken from a result: a line in toolhost's form, signed
/// by `key`. Says why not in one sentence.
pub fn check_receipt(receipt: &Value, key: &PublicKey) -> Result<Receipt, String> {
    if !receipt.is_object() {
        return Err("not a receipt: a receipt is the JSON object of one signed audit line".to_owned());
    }
    let line = canonical::to_vec(receipt);
    if line.len() > MAX_LINE {
        return Err(format!("longer than {MAX_LINE} bytes: not a line toolhost wrote"));
    }
    let (seq, digest, _) = check_line(&line, key, None)?;
    let prev = receipt.get("prev").and_then(Value::as_str).unwrap_or_default().to_owned();
    Ok(Receipt { seq, digest, prev, line })
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

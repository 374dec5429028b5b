//! The audit log's checkpoint (`[audit] checkpoint`): a second file that
//! says where the log's chain should end, so that whole lines cut from the
//! log's end (which leave a shorter, intact chain) are seen.
//!
//! After every batch of lines is flushed, the writer rewrites the file
//! whole (a temporary file beside it, then a rename: a reader sees the old
//! checkpoint or the new one, never half of one) with one signed object in
//! the log's canonical form:
//!
//! ```json
//! {"key":"sha256:…","kind":"checkpoint","log":"toolhost.jsonl","seq":42,"sha256":"7d1f…","sig":"…","time":"…","v":1}
//! ```
//!
//! `seq` and `sha256` are the last line's; `log` the log file's name. The
//! signature covers every field but `sig`, as on a line. `toolhost audit
//! verify --checkpoint FILE` checks that the log reaches that line.
//!
//! What it cannot do: someone who can write where the checkpoint lives can
//! put back an older checkpoint (validly signed) and cut the log to match.
//! The checkpoint helps as far as it is out of their reach: on another file
//! system or machine, or copied off as it changes.

use crate::canonical;
use crate::keys::{PublicKey, SigningKey};
use base64::Engine as _;
use serde_json::{Map, Value, json};
use std::io::Write;
use std::path::Path;

/// The most a checkpoint file may hold.
const LIMIT: u64 = 64 << 10;

/// A checkpoint whose signature checked.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Checkpoint {
    /// The last line's `seq` when it was written.
    pub seq: u64,
    /// That line's hex SHA-256.
    pub sha256: String,
    /// The log file's name.
    pub log: String,
    /// When it was written.
    pub time: String,
}

/// The checkpoint's bytes for the chain ending at `seq` (line digest
/// `sha256`) of the log named `log`, signed by `key`.
pub fn seal(seq: u64, sha256: &str, log: &str, key: &SigningKey) -> Vec<u8> {
    let mut map = Map::new();
    map.insert("kind".to_owned(), json!("checkpoint"));
    map.insert("log".to_owned(), json!(log));
    map.insert("seq".to_owned(), json!(seq));
    map.insert("sha256".to_owned(), json!(sha256));
    map.insert("time".to_owned(), json!(crate::line::now()));
    map.insert("v".to_owned(), json!(crate::line::VERSION));
    map.insert("key".to_owned(), json!(key.public().fingerprint()));
    let mut value = Value::Object(map);
    let signature = key.sign(&canonical::to_vec(&value));
    value["sig"] = json!(base64::engine::general_purpose::STANDARD.encode(signature));
    let mut bytes = canonical::to_vec(&value);
    bytes.push(b'\n');
    bytes
}

/// Writes `bytes` to `path` whole: a temporary file beside it (owner-only),
/// then a rename over it.
pub fn write(path: &Path, bytes: &[u8]) -> std::io::Result<()> {
    use std::os::unix::fs::OpenOptionsExt;
    let name = path.file_name().map(|name| name.to_string_lossy().into_owned()).unwrap_or_default();
    let dir = path.parent().filter(|dir| !dir.as_os_str().is_empty()).unwrap_or(Path::new("."));
    let temporary = dir.join(format!(".{name}.{}.tmp", std::process::id()));
    let result = (|| {
        let mut file = std::fs::OpenOptions::new()
            .write(true)
            .create(true)
            .truncate(true)
            .mode(0o600)
            .custom_flags(libc::O_NOFOLLOW)
            .open(&temporary)?;
        file.write_all(bytes)?;
        std::fs::rename(&temporary, path)
    })();
    if result.is_err() {
        let _ = std::fs::remove_file(&temporary);
    }
    result
}

/// Reads the checkpoint at `path` (a regular file, bounded) and checks it
/// was signed by `key`; or why not, in one sentence.
pub fn read(path: &Path, key: &PublicKey) -> Result<Checkpoint, String> {
    let bytes = toolhost_grants::readfile::read_regular(path, LIMIT).map_err(|err| format!("cannot read it: {err}"))?;
    let line = bytes.strip_suffix(b"\n").unwrap_or(&bytes);
    let map = crate::line::signed(line, key).map_err(|why| why.replace("the line", "the checkpoint"))?;
    if map.get("kind").and_then(Value::as_str) != Some("checkpoint") {
        return Err("not a checkpoint (it has no `\"kind\":\"checkpoint\"`): is it a line of the log?".to_owned());
    }
    let text = |name: &str| map.get(name).and_then(Value::as_str).map(str::to_owned);
    Ok(Checkpoint {
        seq: map.get("seq").and_then(Value::as_u64).ok_or("the checkpoint has no `seq`")?,
        sha256: text("sha256").ok_or("the checkpoint has no `sha256`")?,
        log: text("log").unwrap_or_default(),
        time: text("time").unwrap_or_default(),
    })
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::keys::Algorithm;

    #[test]
    fn a_checkpoint_reads_back_and_an_edited_or_foreign_one_does_not() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("audit.checkpoint");
        let key = SigningKey::from_pkcs8(&SigningKey::generate(Algorithm::Ed25519).unwrap()).unwrap();
        write(&path, &seal(7, "ab", "audit.log", &key)).unwrap();
        let read_back = read(&path, key.public()).unwrap();
        assert_eq!((read_back.seq, read_back.sha256.as_str(), read_back.log.as_str()), (7, "ab", "audit.log"));
        let text = std::fs::read_to_string(&path).unwrap();
        std::fs::write(&path, text.replace("\"seq\":7", "\"seq\":9")).unwrap();
        assert!(read(&path, key.public()).unwrap_err().contains("signature does not match"));
        let other = SigningKey::from_pkcs8(&SigningKey::generate(Algorithm::Ed25519).unwrap()).unwrap();
        write(&path, &seal(7, "ab", "audit.log", &other)).unwrap();
        assert!(read(&path, key.public()).unwrap_err().contains("not by the key given"));
        // No temporary file is left behind.
        assert_eq!(std::fs::read_dir(dir.path()).unwrap().count(), 1);
    }
}

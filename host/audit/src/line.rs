//! What every audit line is, shared by the writer (`log`), the checker
//! (`verify`) and checkpoints: the format version, the bound on a line's
//! length, the `prev` of a chain's first line, the time as lines write it,
//! and a signed line (or checkpoint) read back and its signature checked.

use crate::canonical;
use crate::keys::PublicKey;
use base64::Engine as _;
use serde_json::Value;

/// The `prev` of a chain's first line.
pub const GENESIS: &str = "0000000000000000000000000000000000000000000000000000000000000000";

/// The format version in every line.
pub const VERSION: u64 = 1;

/// The longest line an audit log may hold.
pub const MAX_LINE: usize = 4 << 20;

/// The time now, as audit lines write it (RFC 3339, UTC, milliseconds).
pub fn now() -> String {
    chrono::Utc::now().to_rfc3339_opts(chrono::SecondsFormat::Millis, true)
}

/// The fields of `bytes`, a line (or checkpoint) in canonical form whose
/// signature by `key` checks, without `sig`; or why not, in one sentence.
pub(crate) fn signed(bytes: &[u8], key: &PublicKey) -> Result<serde_json::Map<String, Value>, String> {
    let value: Value = serde_json::from_slice(bytes)
        .map_err(|_| "not a JSON line (edited, damaged, or not an audit log)".to_owned())?;
    let Value::Object(mut map) = value.clone() else {
        return Err("not a JSON object (edited, or not an audit log)".to_owned());
    };
    if canonical::to_vec(&value) != bytes {
        return Err("not in the form toolhost writes (the line was edited)".to_owned());
    }
    let signer = map.get("key").and_then(Value::as_str).unwrap_or("");
    if signer != key.fingerprint() {
        return Err(format!(
            "signed by the key {signer}, not by the key given ({}): the wrong key, or the line was edited",
            key.fingerprint()
        ));
    }
    let signature = map
        .remove("sig")
        .and_then(|sig| sig.as_str().and_then(|sig| base64::engine::general_purpose::STANDARD.decode(sig).ok()))
        .ok_or_else(|| "has no signature (the line was edited)".to_owned())?;
    if !key.verifies(&canonical::to_vec(&Value::Object(map.clone())), &signature) {
        return Err("its signature does not match its content (the line was edited)".to_owned());
    }
    Ok(map)
}

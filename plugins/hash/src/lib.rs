//! `hash`: example plugin that computes SHA-1 and SHA-2 digests of a text.
//!
//! Tools: `sha256` and `sha512` (hex digest of a text) and `hash`, which
//! takes the algorithm (sha1, sha256, sha384, sha512) and the output encoding
//! (hex or base64). The text is hashed as its UTF-8 bytes.

mod digest;

use digest::{Algorithm, Encoding};
use schemars::JsonSchema;
use serde::Deserialize;
use toolhost_sdk::{Tool, ToolError, register_tools};

register_tools![
    Tool::new(
        "sha256",
        "Computes the SHA-256 digest of a text (hashed as its UTF-8 bytes) and returns it as \
         64 lower-case hex digits. Example: {\"text\": \"abc\"} returns \
         ba7816bf8f01cfea414140de5dae2223b00361a396177a9cb410ff61f20015ad.",
        sha256,
    )
    .title("SHA-256 digest")
    .read_only()
    .idempotent(),
    Tool::new(
        "sha512",
        "Computes the SHA-512 digest of a text (hashed as its UTF-8 bytes) and returns it as \
         128 lower-case hex digits. Example: {\"text\": \"abc\"} returns ddaf35a1...a54ca49f \
         (128 digits).",
        sha512,
    ),
    Tool::new(
        "hash",
        "Computes a digest of a text (hashed as its UTF-8 bytes) with the chosen algorithm \
         (sha1, sha256, sha384 or sha512) and returns it as lower-case hex or as padded \
         base64. Example: {\"text\": \"abc\", \"algorithm\": \"sha256\", \"encoding\": \
         \"base64\"} returns ungWv48Bz+pBQUDeXa4iI7ADYaOWF3qctBD/YfIAFa0=. SHA-1 is broken \
         for security purposes; use it only to match existing SHA-1 checksums.",
        hash,
    ),
];

/// Arguments of `sha256` and `sha512`.
#[derive(Deserialize, JsonSchema)]
struct TextArgs {
    /// The text to hash, exactly as given: its UTF-8 bytes are hashed, with no trimming
    /// and no added newline (so "abc" and "abc\n" have different digests).
    text: String,
}

/// Arguments of `hash`.
#[derive(Deserialize, JsonSchema)]
struct HashArgs {
    /// The text to hash, exactly as given: its UTF-8 bytes are hashed, with no trimming
    /// and no added newline (so "abc" and "abc\n" have different digests).
    text: String,
    /// The hash function: "sha1" (20-byte digest), "sha256" (32 bytes), "sha384"
    /// (48 bytes) or "sha512" (64 bytes). Example: "sha256".
    algorithm: Algorithm,
    /// How to write the digest: "hex" (lower-case, two digits per byte, the default) or
    /// "base64" (standard alphabet with `+` and `/`, `=` padding). Example: "hex".
    #[serde(default)]
    encoding: Encoding,
}

fn sha256(args: TextArgs) -> Result<String, ToolError> {
    Ok(digest::hex(&digest::digest(Algorithm::Sha256, args.text.as_bytes())))
}

fn sha512(args: TextArgs) -> Result<String, ToolError> {
    Ok(digest::hex(&digest::digest(Algorithm::Sha512, args.text.as_bytes())))
}

fn hash(args: HashArgs) -> Result<String, ToolError> {
    toolhost_sdk::log::debug_with(
        "hashing text",
        &[("algorithm", &format!("{:?}", args.algorithm)), ("bytes", &args.text.len().to_string())],
    );
    let bytes = digest::digest(args.algorithm, args.text.as_bytes());
    Ok(digest::encode(args.encoding, &bytes))
}

#[cfg(test)]
mod tests {
    //! The examples in the tool descriptions, checked.
    use super::*;

    #[test]
    fn accepts_the_described_examples() {
        let text = || TextArgs { text: "abc".to_owned() };
        assert_eq!(sha256(text()).unwrap(), "ba7816bf8f01cfea414140de5dae2223b00361a396177a9cb410ff61f20015ad");
        let digest = sha512(text()).unwrap();
        assert!(digest.starts_with("ddaf35a1") && digest.ends_with("a54ca49f"));
        assert_eq!(digest.len(), 128);
    }
}

//! What binds a receipt to its result: the digest of what the caller of an
//! MCP call received, carried in the call's audit line (and so in its
//! receipt), and the check of a result against it.
//!
//! The digest covers the result's `content`, `isError` and
//! `structuredContent`, in one canonical form:
//!
//! ```text
//! SHA-256( canonical({"content": CONTENT, "isError": IS_ERROR, "structuredContent": STRUCTURED}) )
//! ```
//!
//! CONTENT is the result's `content` array (`[]` when absent), IS_ERROR its
//! `isError` (`false` when absent), STRUCTURED its `structuredContent` (the
//! member left out when absent or `null`), and `canonical` the audit log's
//! own form ([`crate::canonical`]: keys sorted by their UTF-8 bytes at every
//! depth, no white space). The result's `_meta` (usage, refusals, the
//! receipt itself) and anything else in it are not covered. The line holds
//! it as `result_sha256`, a plain field signed with the rest, beside
//! `result_parts` (the digest of CONTENT alone, its number of blocks, the
//! digest of STRUCTURED, IS_ERROR) so a check can say what differs.

use crate::canonical::{self, Object};
use crate::keys::hex;
use serde_json::Value;
use sha2::{Digest, Sha256};

/// A result's digests, as a line carries them.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ResultDigests {
    /// The digest of the canonical `{content, isError, structuredContent}`.
    pub whole: String,
    /// The digest of the canonical `content` array.
    pub content: String,
    /// How many content blocks.
    pub blocks: u64,
    /// The digest of the canonical `structuredContent`, when there is one.
    pub structured: Option<String>,
    /// Its `isError`.
    pub is_error: bool,
}

fn digest(bytes: &[u8]) -> String {
    hex(&Sha256::digest(bytes))
}

impl ResultDigests {
    /// The digests of `result`: an MCP `CallToolResult` as JSON (its `_meta`
    /// and any other member are not read). Each part is laid out once, in
    /// canonical form, for its own digest and the whole's.
    pub fn of(result: &Value) -> ResultDigests {
        let empty = Value::Array(Vec::new());
        let content = result.get("content").unwrap_or(&empty);
        let is_error = result.get("isError").and_then(Value::as_bool).unwrap_or(false);
        let structured = result.get("structuredContent").filter(|value| !value.is_null());
        // `{"content":…,"isError":…,"structuredContent":…}`: its keys are in canonical order as written.
        let mut whole = Vec::with_capacity(256);
        whole.extend_from_slice(b"{\"content\":");
        let content_at = whole.len();
        canonical::write(content, &mut whole);
        let content_digest = digest(&whole[content_at..]);
        whole.extend_from_slice(if is_error { b",\"isError\":true" } else { b",\"isError\":false" });
        let structured = structured.map(|structured| {
            whole.extend_from_slice(b",\"structuredContent\":");
            let at = whole.len();
            canonical::write(structured, &mut whole);
            digest(&whole[at..])
        });
        whole.push(b'}');
        ResultDigests {
            whole: digest(&whole),
            content: content_digest,
            blocks: content.as_array().map_or(0, |blocks| blocks.len() as u64),
            structured,
            is_error,
        }
    }

    /// Into a line's members: `result_sha256` and `result_parts`.
    pub fn into_members(self, line: &mut Object) {
        line.str("result_sha256", &self.whole);
        let mut parts = Object::with_capacity(4, 160);
        parts.u64("blocks", self.blocks);
        parts.str("content_sha256", &self.content);
        parts.bool("isError", self.is_error);
        if let Some(structured) = &self.structured {
            parts.str("structured_sha256", structured);
        }
        line.object("result_parts", &parts);
    }
}

/// Checks `result` against the line `receipt` (already checked as signed):
/// `Ok` when it is the result the line was written for, else what differs,
/// in one sentence.
pub fn check(receipt: &Value, result: &Value) -> Result<(), String> {
    let Some(bound) = receipt.get("result_sha256").and_then(Value::as_str) else {
        return Err("its line names no result (`result_sha256`): it cannot vouch for this result, or for any \
                    (a line written before receipts bound results, or for a call whose caller got no result)"
            .to_owned());
    };
    let got = ResultDigests::of(result);
    if got.whole == bound {
        return Ok(());
    }
    let parts = receipt.get("result_parts").cloned().unwrap_or(Value::Null);
    let mut differs = Vec::new();
    if let Some(is_error) = parts.get("isError").and_then(Value::as_bool)
        && is_error != got.is_error
    {
        differs.push(format!("its `isError` is {}, the call's result said {is_error}", got.is_error));
    }
    if let Some(blocks) = parts.get("blocks").and_then(Value::as_u64)
        && blocks != got.blocks
    {
        differs.push(format!("it has {} content block(s), the call's result had {blocks}", got.blocks));
    } else if parts.get("content_sha256").and_then(Value::as_str).is_some_and(|content| content != got.content) {
        differs.push("its `content` is not the call's (the text or a block was changed)".to_owned());
    }
    match (parts.get("structured_sha256").and_then(Value::as_str), &got.structured) {
        (Some(bound), Some(got)) if bound != got.as_str() => {
            differs.push("its `structuredContent` is not the call's".to_owned());
        }
        (Some(_), None) => differs.push("it has no `structuredContent`, the call's result had one".to_owned()),
        (None, Some(_)) if parts.is_object() => {
            differs.push("it has a `structuredContent`, the call's result had none".to_owned());
        }
        _ => {}
    }
    if differs.is_empty() {
        differs.push("its content, isError and structuredContent together are not the call's".to_owned());
    }
    Err(format!(
        "the result is not the one this receipt was signed for (another call's receipt, or a changed result): {}",
        differs.join("; ")
    ))
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    fn line(result: &Value) -> Value {
        let mut line = Object::default();
        ResultDigests::of(result).into_members(&mut line);
        serde_json::from_slice(&line.to_vec()).unwrap()
    }

    #[test]
    fn the_digests_are_of_the_canonical_parts() {
        let result = json!({"isError": true, "structuredContent": {"b": [1, {"z": 0, "a": "é"}]},
                            "content": [{"type": "text", "text": "x"}], "_meta": {"ignored": 1}});
        let got = ResultDigests::of(&result);
        let sha = |value: &Value| hex(&Sha256::digest(canonical::to_vec(value)));
        let whole =
            json!({"content": result["content"], "isError": true, "structuredContent": result["structuredContent"]});
        assert_eq!(got.whole, sha(&whole));
        assert_eq!(got.content, sha(&result["content"]));
        assert_eq!(got.structured.as_deref(), Some(sha(&result["structuredContent"]).as_str()));
        // Absent parts: content `[]`, isError false, no structuredContent (nor a `null` one).
        let bare = ResultDigests::of(&json!({"structuredContent": null}));
        assert_eq!(bare.whole, sha(&json!({"content": [], "isError": false})));
        assert_eq!((bare.blocks, bare.structured, bare.is_error), (0, None, false));
    }

    #[test]
    fn a_result_checks_against_its_own_line_and_each_change_is_named() {
        let result = json!({"content": [{"type": "text", "text": "{\"a\":1}"}], "structuredContent": {"a": 1},
                            "_meta": {"toolhost/usage": {"fuel": 1}}});
        let receipt = line(&result);
        assert_eq!(check(&receipt, &result), Ok(()));
        // Key order, white space and _meta do not count; absent isError is false.
        let same: Value = serde_json::from_str(
            r#"{"structuredContent":{"a":1},"isError":false,"content":[{"text":"{\"a\":1}","type":"text"}]}"#,
        )
        .unwrap();
        assert_eq!(check(&receipt, &same), Ok(()));
        let cases = [
            (
                json!({"content": [{"type": "text", "text": "{\"a\":2}"}], "structuredContent": {"a": 1}}),
                "its `content` is not",
            ),
            (
                json!({"content": [{"type": "text", "text": "{\"a\":1}"}], "structuredContent": {"a": 2}}),
                "`structuredContent` is not",
            ),
            (json!({"content": [{"type": "text", "text": "{\"a\":1}"}]}), "has no `structuredContent`"),
            (json!({"content": [], "structuredContent": {"a": 1}}), "0 content block(s), the call's result had 1"),
            (
                json!({"content": [{"type": "text", "text": "{\"a\":1}"}], "structuredContent": {"a": 1}, "isError": true}),
                "`isError` is true",
            ),
        ];
        for (changed, why) in cases {
            let err = check(&receipt, &changed).unwrap_err();
            assert!(err.contains(why), "{why}: {err}");
        }
        assert!(check(&json!({"seq": 1}), &result).unwrap_err().contains("names no result"));
    }
}

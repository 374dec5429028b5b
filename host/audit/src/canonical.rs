//! The one byte form of a JSON value that audit lines are hashed, signed and
//! written in: object keys sorted by their UTF-8 bytes, no white space,
//! strings and numbers as serde_json writes them. A line whose bytes are not
//! the canonical form of what they parse to was edited.

use serde_json::Value;

/// `value` in canonical form.
pub fn to_vec(value: &Value) -> Vec<u8> {
    let mut out = Vec::with_capacity(256);
    write(value, &mut out);
    out
}

fn write(value: &Value, out: &mut Vec<u8>) {
    match value {
        Value::Object(map) => {
            let mut entries: Vec<_> = map.iter().collect();
            entries.sort_unstable_by(|a, b| a.0.as_bytes().cmp(b.0.as_bytes()));
            out.push(b'{');
            for (index, (key, value)) in entries.into_iter().enumerate() {
                if index > 0 {
                    out.push(b',');
                }
                string(key, out);
                out.push(b':');
                write(value, out);
            }
            out.push(b'}');
        }
        Value::Array(items) => {
            out.push(b'[');
            for (index, item) in items.iter().enumerate() {
                if index > 0 {
                    out.push(b',');
                }
                write(item, out);
            }
            out.push(b']');
        }
        Value::String(text) => string(text, out),
        // Null, booleans and numbers have one form in serde_json (written in
        // place: no string made for each number).
        other => {
            let _ = serde_json::to_writer(&mut *out, other);
        }
    }
}

fn string(text: &str, out: &mut Vec<u8>) {
    // serde_json's string escaping (writing a `str` cannot fail).
    let _ = serde_json::to_writer(&mut *out, text);
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn sorts_keys_at_every_depth_and_drops_space() {
        let value: Value = serde_json::from_str(r#"{ "b": [ {"z":1, "a":"\u00e9\n"} ], "a": null }"#).unwrap();
        assert_eq!(String::from_utf8(to_vec(&value)).unwrap(), "{\"a\":null,\"b\":[{\"a\":\"é\\n\",\"z\":1}]}");
    }
}

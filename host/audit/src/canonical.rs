//! The one byte form of a JSON value that audit lines are hashed, signed and
//! written in: object keys sorted by their UTF-8 bytes, no white space,
//! strings and numbers as serde_json writes them. A line whose bytes are not
//! the canonical form of what they parse to was edited.

use serde_json::{Map, Value};
use std::borrow::Cow;
use std::ops::Range;

/// `value` in canonical form.
pub fn to_vec(value: &Value) -> Vec<u8> {
    let mut out = Vec::with_capacity(256);
    write(value, &mut out);
    out
}

/// `value` in canonical form, appended to `out`.
pub fn write(value: &Value, out: &mut Vec<u8>) {
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

/// The first eight bytes of `key` (a shorter key padded with zeros) as a
/// number: keys that differ here order as their bytes do; keys that tie are
/// then compared in full.
fn prefix(key: &[u8]) -> u64 {
    let mut bytes = [0u8; 8];
    let len = key.len().min(8);
    bytes[..len].copy_from_slice(&key[..len]);
    u64::from_be_bytes(bytes)
}

/// `text` as a JSON string, appended to `out`.
pub fn string(text: &str, out: &mut Vec<u8>) {
    // Most strings (keys, digests, names) need no escape: serde_json escapes
    // only `"`, `\` and control characters below U+0020.
    // (Every byte is looked at, without an early way out, so that the
    // check runs many bytes at a time.)
    let plain = text.bytes().fold(true, |plain, byte| plain & (byte >= 0x20) & (byte != b'"') & (byte != b'\\'));
    if plain {
        out.reserve(text.len() + 2);
        out.push(b'"');
        out.extend_from_slice(text.as_bytes());
        out.push(b'"');
        return;
    }
    // serde_json's string escaping (writing a `str` cannot fail).
    let _ = serde_json::to_writer(&mut *out, text);
}

/// A JSON object laid out in canonical form member by member, without a
/// value tree: each member's value is written once, in canonical form, into
/// one buffer, and the members are put in key order when the object is
/// written out. What the writer lays a call's line out in (and what a
/// plugin's description is laid out in once, for all its lines).
#[derive(Debug, Clone, Default)]
pub struct Object {
    /// The members' values, one after the other.
    bytes: Vec<u8>,
    /// Each member's key and where its value lies in `bytes`.
    members: Vec<(Cow<'static, str>, Range<usize>)>,
}

impl Object {
    /// An empty object with room for `members` members of `bytes` bytes.
    pub fn with_capacity(members: usize, bytes: usize) -> Object {
        Object { bytes: Vec::with_capacity(bytes), members: Vec::with_capacity(members) }
    }

    /// The object `map`, its members' values laid out.
    pub fn from_map(map: Map<String, Value>) -> Object {
        let mut object = Object::with_capacity(map.len() + 4, 256);
        for (key, value) in map {
            object.value(key, &value);
        }
        object
    }

    /// `value` as a line's members: an object's own, anything else as its
    /// `record`.
    pub fn of(value: Value) -> Object {
        match value {
            Value::Object(map) => Object::from_map(map),
            other => {
                let mut object = Object::with_capacity(5, 256);
                object.value("record", &other);
                object
            }
        }
    }

    /// Sets member `key` to what `write` writes (canonical JSON), in place
    /// of any member of that name (the last one set is the one written).
    pub fn with(&mut self, key: impl Into<Cow<'static, str>>, write: impl FnOnce(&mut Vec<u8>)) {
        let key = key.into();
        let start = self.bytes.len();
        write(&mut self.bytes);
        self.members.push((key, start..self.bytes.len()));
    }

    /// Sets member `key` to `value`.
    pub fn value(&mut self, key: impl Into<Cow<'static, str>>, value: &Value) {
        self.with(key, |out| write(value, out));
    }

    /// Sets member `key` to the string `text`.
    pub fn str(&mut self, key: impl Into<Cow<'static, str>>, text: &str) {
        self.with(key, |out| string(text, out));
    }

    /// Sets member `key` to the number `number`.
    pub fn u64(&mut self, key: impl Into<Cow<'static, str>>, number: u64) {
        self.with(key, |out| {
            let _ = serde_json::to_writer(&mut *out, &number);
        });
    }

    /// Sets member `key` to `flag`.
    pub fn bool(&mut self, key: impl Into<Cow<'static, str>>, flag: bool) {
        self.with(key, |out| out.extend_from_slice(if flag { b"true" } else { b"false" }));
    }

    /// Sets member `key` to the object `object`.
    pub fn object(&mut self, key: impl Into<Cow<'static, str>>, object: &Object) {
        self.with(key, |out| object.write(out));
    }

    /// Sets every member of `other` here.
    pub fn extend(&mut self, other: &Object) {
        for (key, range) in &other.members {
            self.with(key.clone(), |out| out.extend_from_slice(&other.bytes[range.clone()]));
        }
    }

    /// Removes member `key`, if there is one.
    pub fn remove(&mut self, key: &str) {
        self.members.retain(|(name, _)| name != key);
    }

    /// The object in canonical form, appended to `out`.
    pub fn write(&self, out: &mut Vec<u8>) {
        // A line's members fit on the stack; a bigger object takes a vector.
        const ON_STACK: usize = 48;
        let count = self.members.len();
        let mut stack = [(0u64, 0usize); ON_STACK];
        let mut heap = Vec::new();
        let order: &mut [(u64, usize)] = if count <= ON_STACK {
            &mut stack[..count]
        } else {
            heap.resize(count, (0, 0));
            &mut heap
        };
        let key = |member: usize| self.members[member].0.as_bytes();
        for (member, place) in order.iter_mut().enumerate() {
            *place = (prefix(key(member)), member);
        }
        // By key (their first eight bytes compared as one number first), and
        // a key set twice in the order it was set.
        order.sort_unstable_by(|&(x, a), &(y, b)| x.cmp(&y).then_with(|| key(a).cmp(key(b))).then(a.cmp(&b)));
        out.reserve(self.bytes.len() + count * 24 + 2);
        out.push(b'{');
        let mut first = true;
        for (at, &(_, member)) in order.iter().enumerate() {
            if order.get(at + 1).is_some_and(|&(_, next)| key(next) == key(member)) {
                // Set again later: that value is the one written.
                continue;
            }
            if !first {
                out.push(b',');
            }
            first = false;
            let (key, range) = &self.members[member];
            string(key, out);
            out.push(b':');
            out.extend_from_slice(&self.bytes[range.clone()]);
        }
        out.push(b'}');
    }

    /// The object in canonical form.
    pub fn to_vec(&self) -> Vec<u8> {
        let mut out = Vec::new();
        self.write(&mut out);
        out
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn strings_are_escaped_as_serde_json_escapes_them() {
        let mut texts: Vec<String> = (0u32..0x80).filter_map(char::from_u32).map(|c| format!("a{c}b")).collect();
        texts.extend(["", "plain", "\u{e9}t\u{e9} \u{1f600}", "\u{7f}\u{80}\u{2028}", "\"quoted\\"].map(str::to_owned));
        for text in texts {
            let mut out = Vec::new();
            string(&text, &mut out);
            assert_eq!(out, serde_json::to_vec(&text).unwrap(), "{text:?}");
        }
    }

    #[test]
    fn an_object_of_more_members_than_the_stack_holds_is_written_alike() {
        for count in [0, 1, 47, 48, 49, 200] {
            let mut object = Object::default();
            let mut map = Map::new();
            for n in (0..count).rev() {
                let (key, value) = (format!("k{n:03}\u{e9}\"q"), json_value(n));
                object.value(key.clone(), &Value::Null);
                object.value(key.clone(), &value);
                map.insert(key, value);
            }
            assert_eq!(object.to_vec(), to_vec(&Value::Object(map)), "{count} members");
        }
    }

    fn json_value(n: usize) -> Value {
        serde_json::json!({"n": n, "s": format!("v{n}"), "a": [n, null]})
    }

    #[test]
    fn sorts_keys_at_every_depth_and_drops_space() {
        let value: Value = serde_json::from_str(r#"{ "b": [ {"z":1, "a":"\u00e9\n"} ], "a": null }"#).unwrap();
        assert_eq!(String::from_utf8(to_vec(&value)).unwrap(), "{\"a\":null,\"b\":[{\"a\":\"é\\n\",\"z\":1}]}");
    }
}

//! Reading JSON-RPC text the way the framing layer must: strictly (a member
//! named twice is refused, at serde_json's depth limit: `toolhost_grants::json`), and for an id alone
//! (from the start of a line too long or too deep to parse) without parsing
//! the rest.

use super::*;
use serde::de::{Deserializer, IgnoredAny, MapAccess, Visitor};

/// Parses JSON as `serde_json` does, but refuses an object that names a
/// member twice: the one strict reader every outside decision goes through.
pub(super) use toolhost_grants::json::strict;

/// The top-level `id` of what may be only the start of a message, or of one
/// nested too deep to parse: read key by key, skipping the other values.
pub(super) fn id_in(text: &[u8]) -> Value {
    let (mut found, mut method) = (None, false);
    // What follows the id may be cut or too deep: the error comes after it is read.
    let _ =
        serde_json::Deserializer::from_slice(text).deserialize_map(KeyFinder { id: &mut found, method: &mut method });
    usable_id(found.as_ref())
}

struct KeyFinder<'a> {
    id: &'a mut Option<Value>,
    method: &'a mut bool,
}

impl<'de> Visitor<'de> for KeyFinder<'_> {
    type Value = ();

    fn expecting(&self, formatter: &mut std::fmt::Formatter) -> std::fmt::Result {
        formatter.write_str("a JSON-RPC message")
    }

    fn visit_map<A: MapAccess<'de>>(self, mut map: A) -> Result<(), A::Error> {
        // Only the head is read: once the id is known, the key after it says
        // what the message is (rmcp writes `method`, `result` or `error`
        // right after the id), and a result of megabytes is never scanned.
        while let Some(key) = map.next_key::<std::borrow::Cow<'de, str>>()? {
            if key == "id" {
                let id: Value = map.next_value()?;
                // An id given twice, differently, is no id a response can carry.
                *self.id = match self.id.take() {
                    Some(before) if before != id => Some(Value::Null),
                    _ => Some(id),
                };
            } else {
                *self.method |= key == "method";
                if self.id.is_some() {
                    return Ok(());
                }
                map.next_value::<IgnoredAny>()?;
            }
            if self.id.is_some() && *self.method {
                return Ok(());
            }
        }
        Ok(())
    }
}

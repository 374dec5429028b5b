//! Reading JSON-RPC text the way the framing layer must: strictly (a member
//! named twice is refused, at serde_json's depth limit), and for an id alone
//! (from the start of a line too long or too deep to parse) without parsing
//! the rest.

use super::*;
use serde::de::{DeserializeSeed, Deserializer, Error as _, IgnoredAny, MapAccess, SeqAccess, Visitor};

/// Parses JSON as `serde_json` does (the same depth limit), but refuses an
/// object that names a member twice.
pub(super) fn strict(text: &[u8]) -> Result<Value, serde_json::Error> {
    let mut deserializer = serde_json::Deserializer::from_slice(text);
    let value = Strict.deserialize(&mut deserializer)?;
    deserializer.end()?;
    Ok(value)
}

/// A JSON value read with no member named twice in any object.
#[derive(Clone, Copy)]
struct Strict;

impl<'de> DeserializeSeed<'de> for Strict {
    type Value = Value;

    fn deserialize<D: Deserializer<'de>>(self, deserializer: D) -> Result<Value, D::Error> {
        deserializer.deserialize_any(self)
    }
}

impl<'de> Visitor<'de> for Strict {
    type Value = Value;

    fn expecting(&self, formatter: &mut std::fmt::Formatter) -> std::fmt::Result {
        formatter.write_str("a JSON value")
    }

    fn visit_bool<E>(self, value: bool) -> Result<Value, E> {
        Ok(Value::Bool(value))
    }

    fn visit_i64<E>(self, value: i64) -> Result<Value, E> {
        Ok(Value::from(value))
    }

    fn visit_u64<E>(self, value: u64) -> Result<Value, E> {
        Ok(Value::from(value))
    }

    fn visit_f64<E>(self, value: f64) -> Result<Value, E> {
        Ok(serde_json::Number::from_f64(value).map_or(Value::Null, Value::Number))
    }

    fn visit_str<E>(self, value: &str) -> Result<Value, E> {
        Ok(Value::String(value.to_owned()))
    }

    fn visit_string<E>(self, value: String) -> Result<Value, E> {
        Ok(Value::String(value))
    }

    fn visit_unit<E>(self) -> Result<Value, E> {
        Ok(Value::Null)
    }

    fn visit_none<E>(self) -> Result<Value, E> {
        Ok(Value::Null)
    }

    fn visit_some<D: Deserializer<'de>>(self, deserializer: D) -> Result<Value, D::Error> {
        deserializer.deserialize_any(self)
    }

    fn visit_seq<A: SeqAccess<'de>>(self, mut seq: A) -> Result<Value, A::Error> {
        let mut items = Vec::new();
        while let Some(item) = seq.next_element_seed(Strict)? {
            items.push(item);
        }
        Ok(Value::Array(items))
    }

    fn visit_map<A: MapAccess<'de>>(self, mut map: A) -> Result<Value, A::Error> {
        let mut object = serde_json::Map::new();
        while let Some(key) = map.next_key::<String>()? {
            if object.contains_key(&key) {
                let key = toolhost_runtime::text::quoted(&key);
                return Err(A::Error::custom(format!("the member `{key}` appears twice in one object")));
            }
            let value = map.next_value_seed(Strict)?;
            object.insert(key, value);
        }
        Ok(Value::Object(object))
    }
}

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

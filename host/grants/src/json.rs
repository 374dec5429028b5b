//! Strict JSON: what toolhost reads when another process's JSON decides
//! something (a JSON-RPC message, a hook's decision, a token endpoint's
//! answer, an issuer's keys, a signature's payload, a registry's
//! credentials). serde_json keeps the last of a member named twice
//! (`{"decision":"deny","decision":"allow"}` reads as `allow`), while other
//! parsers keep the first or refuse: two readers of the same bytes could
//! then act on different values. [`strict`] refuses such an object, at any
//! depth, and otherwise reads exactly what `serde_json::from_slice` reads
//! (the same numbers, strings and depth limit).

use serde::de::{DeserializeSeed, Deserializer, Error as _, MapAccess, SeqAccess, Visitor};
use serde_json::Value;

/// Parses `text` as `serde_json` does, but refuses an object that names a
/// member twice (a data error naming the member).
pub fn strict(text: &[u8]) -> Result<Value, serde_json::Error> {
    let mut deserializer = serde_json::Deserializer::from_slice(text);
    let value = Strict.deserialize(&mut deserializer)?;
    deserializer.end()?;
    Ok(value)
}

/// [`strict`], then `T` from the value (for a typed answer).
pub fn strict_as<T: serde::de::DeserializeOwned>(text: &[u8]) -> Result<T, serde_json::Error> {
    serde_json::from_value(strict(text)?)
}

/// When `err` (from [`strict`]) is a member named twice: what it says,
/// without serde_json's position (`the member `decision` appears twice in
/// one object`).
pub fn repeated_member(err: &serde_json::Error) -> Option<String> {
    if err.classify() != serde_json::error::Category::Data {
        return None;
    }
    let text = err.to_string();
    let said = text.split(" at line ").next().unwrap_or_default();
    said.ends_with(REPEATED).then(|| said.to_owned())
}

/// What the error of a member named twice says (after the member).
const REPEATED: &str = "appears twice in one object";

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
                return Err(A::Error::custom(format!("the member `{}` {REPEATED}", shown(&key))));
            }
            let value = map.next_value_seed(Strict)?;
            object.insert(key, value);
        }
        Ok(Value::Object(object))
    }
}

/// A member's name as a message may quote it: at most 64 characters, no
/// control characters, backquotes or double quotes.
fn shown(text: &str) -> String {
    let shown: String =
        text.chars().take(64).map(|c| if c.is_control() || c == '`' || c == '"' { '?' } else { c }).collect();
    if text.chars().count() > 64 { format!("{shown}…") } else { shown }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_member_named_twice_is_refused_at_any_depth_and_the_rest_reads_as_serde_json_does() {
        for text in [
            r#"{"decision":"deny","reason":"x","decision":"allow"}"#,
            r#"{"a":[{"b":1,"b":1}]}"#,
            r#"{"d\u0065cision":1,"decision":2}"#,
        ] {
            let err = strict(text.as_bytes()).unwrap_err();
            let said = repeated_member(&err).unwrap_or_else(|| panic!("{text}: {err}"));
            assert!(said.starts_with("the member `") && said.ends_with("appears twice in one object"), "{said}");
        }
        for text in [r#"{"a":1.5,"b":[1,-2,"é\n"],"c":null,"d":{"a":true}}"#, "[]", "12345678901234567890"] {
            assert_eq!(strict(text.as_bytes()).unwrap(), serde_json::from_str::<Value>(text).unwrap());
        }
        assert_eq!(repeated_member(&strict(b"{").unwrap_err()), None);
        assert!(strict(b"{} x").is_err());
    }
}

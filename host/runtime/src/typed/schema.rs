//! The JSON Schemas of a typed function: a WIT type as the JSON Schema of
//! how it travels in JSON (see the parent module), or why it cannot.

use super::MAX_DEPTH;
use serde_json::{Map, Value, json};
use wasmtime::component::Type;

pub(super) fn schemas(params: &[(String, Type)], result: Option<&Type>) -> Result<(Value, Option<Value>), String> {
    let mut properties = Map::new();
    let mut required = Vec::new();
    for (name, ty) in params {
        properties.insert(name.clone(), schema(ty, 0)?);
        if !matches!(ty, Type::Option(_)) {
            required.push(json!(name));
        }
    }
    let input = json!({
        "type": "object",
        "properties": properties,
        "required": required,
        "additionalProperties": false,
    });
    let output = match result {
        None => None,
        Some(Type::Result(result)) => Some(match result.ok() {
            Some(ok) => schema(&ok, 0)?,
            None => json!({"type": "null"}),
        }),
        Some(ty) => Some(schema(ty, 0)?),
    };
    // The error of a `result` return must be renderable too.
    if let Some(Type::Result(result)) = result
        && let Some(err) = result.err()
    {
        schema(&err, 0)?;
    }
    Ok((input, output))
}

/// The JSON Schema of a WIT type, or why it cannot travel in JSON.
pub fn schema(ty: &Type, depth: usize) -> Result<Value, String> {
    if depth > MAX_DEPTH {
        return Err(format!("its types nest more than {MAX_DEPTH} levels deep"));
    }
    let deeper = |ty: &Type| schema(ty, depth + 1);
    let integer = |min: i128, max: i128| json!({"type": "integer", "minimum": min, "maximum": max});
    Ok(match ty {
        Type::Bool => json!({"type": "boolean"}),
        Type::U8 => integer(0, u8::MAX.into()),
        Type::U16 => integer(0, u16::MAX.into()),
        Type::U32 => integer(0, u32::MAX.into()),
        Type::S8 => integer(i8::MIN.into(), i8::MAX.into()),
        Type::S16 => integer(i16::MIN.into(), i16::MAX.into()),
        Type::S32 => integer(i32::MIN.into(), i32::MAX.into()),
        Type::U64 => json!({"anyOf": [integer(0, u64::MAX.into()), {"type": "string", "pattern": "^[0-9]{1,20}$"}]}),
        Type::S64 => json!({"anyOf": [
            integer(i64::MIN.into(), i64::MAX.into()),
            {"type": "string", "pattern": "^-?[0-9]{1,19}$"}
        ]}),
        Type::Float32 | Type::Float64 => json!({"type": "number"}),
        Type::Char => json!({"type": "string", "minLength": 1, "maxLength": 1}),
        Type::String => json!({"type": "string"}),
        Type::List(list) => json!({"type": "array", "items": deeper(&list.ty())?}),
        Type::FixedLengthList(list) => json!({"type": "array", "items": deeper(&list.ty())?}),
        Type::Tuple(tuple) => {
            let items: Vec<Value> = tuple.types().map(|ty| deeper(&ty)).collect::<Result<_, _>>()?;
            let n = items.len();
            json!({"type": "array", "prefixItems": items, "minItems": n, "maxItems": n})
        }
        Type::Option(option) => json!({"anyOf": [deeper(&option.ty())?, {"type": "null"}]}),
        Type::Record(record) => {
            let mut properties = Map::new();
            let mut required = Vec::new();
            for field in record.fields() {
                properties.insert(field.name.to_owned(), deeper(&field.ty)?);
                if !matches!(field.ty, Type::Option(_)) {
                    required.push(json!(field.name));
                }
            }
            json!({"type": "object", "properties": properties, "required": required, "additionalProperties": false})
        }
        Type::Enum(cases) => json!({"type": "string", "enum": cases.names().collect::<Vec<_>>()}),
        Type::Flags(flags) => {
            json!({"type": "array", "items": {"enum": flags.names().collect::<Vec<_>>()}, "uniqueItems": true})
        }
        Type::Variant(variant) => {
            let mut cases = Vec::new();
            for case in variant.cases() {
                cases.push(match &case.ty {
                    None => json!({"const": case.name}),
                    Some(ty) => json!({
                        "type": "object",
                        "properties": {case.name: deeper(ty)?},
                        "required": [case.name],
                        "additionalProperties": false,
                    }),
                });
            }
            json!({"oneOf": cases})
        }
        Type::Result(result) => {
            let side = |name: &str, ty: Option<Type>| -> Result<Value, String> {
                let value = match ty {
                    Some(ty) => deeper(&ty)?,
                    None => json!({"type": "null"}),
                };
                Ok(
                    json!({"type": "object", "properties": {name: value}, "required": [name], "additionalProperties": false}),
                )
            };
            json!({"oneOf": [side("ok", result.ok())?, side("err", result.err())?]})
        }
        Type::Own(_) | Type::Borrow(_) => {
            return Err("it takes or returns a resource (a handle), which JSON cannot carry".to_owned());
        }
        Type::Future(_) | Type::Stream(_) => {
            return Err("it uses a future or a stream, which JSON cannot carry".to_owned());
        }
        Type::ErrorContext => return Err("it uses an error-context, which JSON cannot carry".to_owned()),
        Type::Map(_) => return Err("it uses a map, which toolhost does not carry in JSON yet".to_owned()),
    })
}

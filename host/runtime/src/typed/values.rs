//! JSON values to WIT values and back: a call's arguments as the function's
//! parameters, and its result as the tool's output.

use super::{TypedFunc, render};
use serde_json::{Number, Value, json};
use wasmtime::component::{Type, Val};

/// The arguments object as the function's parameters. The host validated it
/// against the input schema already; what the schema cannot say (a string
/// `u64` out of range) is refused here, naming the parameter.
pub fn to_params(func: &TypedFunc, arguments: &Value) -> Result<Vec<Val>, String> {
    let object = arguments.as_object().ok_or("the arguments must be a JSON object")?;
    func.params
        .iter()
        .map(|(name, ty)| match object.get(name) {
            Some(value) => to_val(ty, value).map_err(|why| format!("`{name}`: {why}")),
            None if matches!(ty, Type::Option(_)) => Ok(Val::Option(None)),
            None => Err(format!("`{name}` is required")),
        })
        .collect()
}

fn to_val(ty: &Type, value: &Value) -> Result<Val, String> {
    let wrong = |what: &str| format!("expected {what}, got {}", kind(value));
    let int = |min: i128, max: i128| -> Result<i128, String> {
        let n = match value {
            Value::Number(n) => n.as_i128().or_else(|| n.as_u128().map(|n| n as i128)),
            Value::String(text) if matches!(ty, Type::U64 | Type::S64) => text.parse::<i128>().ok(),
            _ => None,
        };
        match n {
            Some(n) if (min..=max).contains(&n) => Ok(n),
            _ => Err(format!("expected an integer from {min} to {max}, got {value}")),
        }
    };
    Ok(match ty {
        Type::Bool => Val::Bool(value.as_bool().ok_or_else(|| wrong("true or false"))?),
        Type::U8 => Val::U8(int(0, u8::MAX.into())? as u8),
        Type::U16 => Val::U16(int(0, u16::MAX.into())? as u16),
        Type::U32 => Val::U32(int(0, u32::MAX.into())? as u32),
        Type::U64 => Val::U64(int(0, u64::MAX.into())? as u64),
        Type::S8 => Val::S8(int(i8::MIN.into(), i8::MAX.into())? as i8),
        Type::S16 => Val::S16(int(i16::MIN.into(), i16::MAX.into())? as i16),
        Type::S32 => Val::S32(int(i32::MIN.into(), i32::MAX.into())? as i32),
        Type::S64 => Val::S64(int(i64::MIN.into(), i64::MAX.into())? as i64),
        Type::Float32 => Val::Float32(value.as_f64().ok_or_else(|| wrong("a number"))? as f32),
        Type::Float64 => Val::Float64(value.as_f64().ok_or_else(|| wrong("a number"))?),
        Type::Char => {
            let text = value.as_str().ok_or_else(|| wrong("a one-character string"))?;
            let mut chars = text.chars();
            match (chars.next(), chars.next()) {
                (Some(c), None) => Val::Char(c),
                _ => return Err(format!("expected one character, got {value}")),
            }
        }
        Type::String => Val::String(value.as_str().ok_or_else(|| wrong("a string"))?.to_owned()),
        Type::List(list) => {
            let items = value.as_array().ok_or_else(|| wrong("an array"))?;
            let item = list.ty();
            Val::List(items.iter().map(|value| to_val(&item, value)).collect::<Result<_, _>>()?)
        }
        Type::FixedLengthList(list) => {
            let items = value.as_array().ok_or_else(|| wrong("an array"))?;
            let item = list.ty();
            Val::FixedLengthList(items.iter().map(|value| to_val(&item, value)).collect::<Result<_, _>>()?)
        }
        Type::Tuple(tuple) => {
            let items = value.as_array().ok_or_else(|| wrong("an array"))?;
            let types: Vec<Type> = tuple.types().collect();
            if items.len() != types.len() {
                return Err(format!("expected an array of {} items, got {}", types.len(), items.len()));
            }
            Val::Tuple(types.iter().zip(items).map(|(ty, value)| to_val(ty, value)).collect::<Result<_, _>>()?)
        }
        Type::Option(option) => match value {
            Value::Null => Val::Option(None),
            value => Val::Option(Some(Box::new(to_val(&option.ty(), value)?))),
        },
        Type::Record(record) => {
            let object = value.as_object().ok_or_else(|| wrong("an object"))?;
            let mut fields = Vec::new();
            for field in record.fields() {
                let val = match object.get(field.name) {
                    Some(value) => to_val(&field.ty, value).map_err(|why| format!("{}: {why}", field.name))?,
                    None if matches!(field.ty, Type::Option(_)) => Val::Option(None),
                    None => return Err(format!("the field `{}` is missing", field.name)),
                };
                fields.push((field.name.to_owned(), val));
            }
            Val::Record(fields)
        }
        Type::Enum(cases) => {
            let name = value.as_str().ok_or_else(|| wrong("a string"))?;
            match cases.names().find(|case| *case == name) {
                Some(case) => Val::Enum(case.to_owned()),
                None => return Err(format!("`{name}` is not one of {}", cases.names().collect::<Vec<_>>().join(", "))),
            }
        }
        Type::Flags(flags) => {
            let names = value.as_array().ok_or_else(|| wrong("an array of flag names"))?;
            let mut set = Vec::new();
            for name in names {
                let name = name.as_str().ok_or("a flag name must be a string")?;
                if !flags.names().any(|flag| flag == name) {
                    return Err(format!("`{name}` is not one of {}", flags.names().collect::<Vec<_>>().join(", ")));
                }
                set.push(name.to_owned());
            }
            Val::Flags(set)
        }
        Type::Variant(variant) => {
            let (name, payload) = match value {
                Value::String(name) => (name.as_str(), None),
                Value::Object(object) if object.len() == 1 => {
                    let (name, payload) = object.iter().next().expect("one entry");
                    (name.as_str(), Some(payload))
                }
                _ => return Err(wrong("a case name or an object with one case")),
            };
            let case =
                variant.cases().find(|case| case.name == name).ok_or_else(|| format!("`{name}` is not a case"))?;
            match (&case.ty, payload) {
                (None, None | Some(Value::Null)) => Val::Variant(name.to_owned(), None),
                (Some(ty), Some(payload)) => Val::Variant(name.to_owned(), Some(Box::new(to_val(ty, payload)?))),
                (Some(_), None) => return Err(format!("the case `{name}` needs a value: {{\"{name}\": …}}")),
                (None, Some(_)) => return Err(format!("the case `{name}` takes no value")),
            }
        }
        Type::Result(result) => {
            let object = value
                .as_object()
                .filter(|object| object.len() == 1)
                .ok_or_else(|| wrong("{\"ok\": …} or {\"err\": …}"))?;
            let (side, payload) = object.iter().next().expect("one entry");
            let inner = |ty: Option<Type>| -> Result<Option<Box<Val>>, String> {
                match ty {
                    Some(ty) => Ok(Some(Box::new(to_val(&ty, payload)?))),
                    None => Ok(None),
                }
            };
            match side.as_str() {
                "ok" => Val::Result(Ok(inner(result.ok())?)),
                "err" => Val::Result(Err(inner(result.err())?)),
                other => return Err(format!("expected `ok` or `err`, got `{other}`")),
            }
        }
        other => return Err(format!("{} cannot be passed as JSON", render(other, 0))),
    })
}

/// "a string", "an array", …: what a JSON value is, for messages.
pub(crate) fn kind(value: &Value) -> &'static str {
    match value {
        Value::Null => "null",
        Value::Bool(_) => "a boolean",
        Value::Number(_) => "a number",
        Value::String(_) => "a string",
        Value::Array(_) => "an array",
        Value::Object(_) => "an object",
    }
}

/// A value as JSON, as described in the module's documentation.
pub fn to_json(val: &Val) -> Value {
    const EXACT: i128 = (1 << 53) - 1;
    let big = |n: i128| if (-EXACT..=EXACT).contains(&n) { json!(n as i64) } else { json!(n.to_string()) };
    match val {
        Val::Bool(b) => json!(b),
        Val::U8(n) => json!(n),
        Val::U16(n) => json!(n),
        Val::U32(n) => json!(n),
        Val::U64(n) => big(i128::from(*n)),
        Val::S8(n) => json!(n),
        Val::S16(n) => json!(n),
        Val::S32(n) => json!(n),
        Val::S64(n) => big(i128::from(*n)),
        Val::Float32(x) => Number::from_f64(f64::from(*x)).map_or(Value::Null, Value::Number),
        Val::Float64(x) => Number::from_f64(*x).map_or(Value::Null, Value::Number),
        Val::Char(c) => json!(c.to_string()),
        Val::String(text) => json!(text),
        Val::List(items) | Val::Tuple(items) | Val::FixedLengthList(items) => {
            Value::Array(items.iter().map(to_json).collect())
        }
        Val::Record(fields) => Value::Object(fields.iter().map(|(name, val)| (name.clone(), to_json(val))).collect()),
        Val::Variant(name, None) | Val::Enum(name) => json!(name),
        Val::Variant(name, Some(payload)) => json!({ name: to_json(payload) }),
        Val::Option(None) => Value::Null,
        Val::Option(Some(val)) => to_json(val),
        Val::Result(Ok(val)) => json!({"ok": val.as_deref().map_or(Value::Null, to_json)}),
        Val::Result(Err(val)) => json!({"err": val.as_deref().map_or(Value::Null, to_json)}),
        Val::Flags(names) => json!(names),
        Val::Map(pairs) => {
            Value::Array(pairs.iter().map(|(key, value)| json!([to_json(key), to_json(value)])).collect())
        }
        Val::Resource(_) | Val::Future(_) | Val::Stream(_) | Val::ErrorContext(_) => Value::Null,
    }
}

/// The output of a call that returned `result`: `Ok` with the JSON of the
/// value (a `result`'s `ok`), or `Err` with the text of its `err`.
pub fn output(func: &TypedFunc, result: Option<Val>) -> Result<String, String> {
    match (&func.result, result) {
        (_, None) => Ok("null".to_owned()),
        (Some(Type::Result(_)), Some(Val::Result(Ok(ok)))) => {
            Ok(ok.as_deref().map_or(Value::Null, to_json).to_string())
        }
        (Some(Type::Result(_)), Some(Val::Result(Err(err)))) => Err(match err.as_deref().map(to_json) {
            Some(Value::String(text)) => text,
            Some(Value::Null) | None => "the function returned an error".to_owned(),
            Some(other) => other.to_string(),
        }),
        (_, Some(val)) => Ok(to_json(&val).to_string()),
    }
}

//! A tool's result checked against its output schema, and a schema
//! mismatch (arguments or result) told so that a model can fix its call:
//! the path, the allowed values, a variant's cases.

use anyhow::Result;
use serde_json::Value;
use toolhost_runtime::content::{Content, ContentBlock};
use toolhost_runtime::outcome::{CallError, ToolOutput};

/// Checks the `json` block of a result against the tool's output schema:
/// a tool that declares one must return a structured result that matches it.
/// A result of one plain text or JSON block is that text or JSON, whichever
/// contract produced it: every front end then shows and serves it alike.
pub(super) fn plain(mut blocks: Vec<ContentBlock>) -> ToolOutput {
    match blocks.as_mut_slice() {
        [ContentBlock { content: Content::Text { text }, annotations: None }] => ToolOutput::Text(std::mem::take(text)),
        [ContentBlock { content: Content::Json { json, .. }, annotations: None }] => {
            ToolOutput::Json(std::mem::take(json))
        }
        _ => ToolOutput::Content(blocks),
    }
}

pub(super) fn structured(
    validator: &jsonschema::Validator,
    schema: &Value,
    blocks: &[ContentBlock],
) -> Result<(), CallError> {
    let json = blocks.iter().find(|block| matches!(block.content, Content::Json { .. }));
    let Some(json) = json else {
        return Err(CallError::InvalidOutput(
            "it declares an output schema but returned no `json` block; this is a bug in the plugin".to_owned(),
        ));
    };
    let value =
        json.content.json_value().ok_or_else(|| CallError::InvalidOutput("its `json` block is not JSON".to_owned()))?;
    match validator.iter_errors(&value).next() {
        None => Ok(()),
        Some(err) => Err(CallError::InvalidOutput(format!(
            "its `json` block does not match its output schema ({}); this is a bug in the plugin",
            describe_mismatch_in(&err, schema, "the block")
        ))),
    }
}

/// "at `/path`: what is wrong", cut to a readable length. A value outside an
/// enum (`enum`, or `oneOf`/`anyOf` of `const`s as schemars writes an enum
/// with doc comments) names every allowed value, and a value that is none of
/// a variant's cases (constants and one-key objects, as a WIT `variant` or a
/// serde enum with data is written) names every case: the model needs them
/// to fix its call. `schema` is the document `err` came from.
pub(super) fn describe_mismatch(err: &jsonschema::ValidationError<'_>, schema: &Value) -> String {
    describe_mismatch_in(err, schema, "the arguments")
}

/// [`describe_mismatch`] of a document other than the arguments (`whole`).
fn describe_mismatch_in(err: &jsonschema::ValidationError<'_>, schema: &Value, whole: &str) -> String {
    // The right case with a wrong payload: what is wrong inside it.
    if let Some(inner) = chosen_case_error(err, schema) {
        return describe_mismatch_in(inner, schema, whole);
    }
    let path = err.instance_path().as_str();
    let allowed = allowed_values(err.kind())
        .map(|values| values.iter().map(Value::to_string).collect::<Vec<_>>())
        .or_else(|| variant_cases(err, schema).map(|cases| cases.into_iter().map(|case| case.shown).collect()));
    let what = match allowed {
        Some(listed) => {
            let mut listed = listed.join(", ");
            cut(&mut listed, 4_000);
            let mut instance = err.instance().to_string();
            cut(&mut instance, 200);
            format!("{instance} is not one of the allowed values: {listed}")
        }
        None => {
            let mut what = err.to_string();
            cut(&mut what, 300);
            what
        }
    };
    if path.is_empty() { format!("{what} (at the top level of {whole})") } else { format!("at `{path}`: {what}") }
}

/// One case of a variant as a schema writes it.
struct Case {
    /// As a message shows it: `"standard"`, `{"express": …}`, `null`.
    shown: String,
    /// The key of a case with a payload.
    key: Option<String>,
}

/// The cases of the `oneOf`/`anyOf` that `err` failed, when each branch is a
/// constant, an `enum`, `null` or an object of exactly one required key
/// (`{"express": …}`), through local `$ref`s and nested `oneOf`/`anyOf`s;
/// `None` when any branch is something else.
fn variant_cases(err: &jsonschema::ValidationError<'_>, schema: &Value) -> Option<Vec<Case>> {
    use jsonschema::error::ValidationErrorKind as Kind;
    if !matches!(err.kind(), Kind::OneOfNotValid { .. } | Kind::AnyOf { .. }) {
        return None;
    }
    let branches = schema.pointer(err.schema_path().as_str())?.as_array()?;
    let mut cases = Vec::new();
    for branch in branches {
        cases.extend(cases_of(schema, branch, 0)?);
    }
    (!cases.is_empty()).then_some(cases)
}

fn cases_of(root: &Value, schema: &Value, depth: usize) -> Option<Vec<Case>> {
    if depth > 16 {
        return None;
    }
    if let Some(reference) = schema.get("$ref").and_then(Value::as_str) {
        return cases_of(root, root.pointer(reference.strip_prefix('#')?)?, depth + 1);
    }
    let constant = |value: &Value| Case { shown: value.to_string(), key: None };
    if let Some(value) = schema.get("const") {
        return Some(vec![constant(value)]);
    }
    if let Some(values) = schema.get("enum").and_then(Value::as_array) {
        return Some(values.iter().map(constant).collect());
    }
    if let Some(branches) = schema.get("oneOf").or_else(|| schema.get("anyOf")).and_then(Value::as_array) {
        let mut cases = Vec::new();
        for branch in branches {
            cases.extend(cases_of(root, branch, depth + 1)?);
        }
        return Some(cases);
    }
    match schema.get("type").and_then(Value::as_str)? {
        "null" => Some(vec![constant(&Value::Null)]),
        "object" => {
            let properties = schema.get("properties")?.as_object()?;
            let required = schema.get("required")?.as_array()?;
            match (properties.keys().next(), &required[..]) {
                (Some(key), [only]) if properties.len() == 1 && only.as_str() == Some(key.as_str()) => {
                    Some(vec![Case {
                        shown: format!("{{{}: …}}", Value::from(key.as_str())), key: Some(key.clone())
                    }])
                }
                _ => None,
            }
        }
        _ => None,
    }
}

/// When `err` is a variant's mismatch and the value is an object naming one
/// of its cases (`{"express": "x"}`), the first error inside that case.
fn chosen_case_error<'e, 'a>(
    err: &'e jsonschema::ValidationError<'a>,
    schema: &Value,
) -> Option<&'e jsonschema::ValidationError<'a>> {
    use jsonschema::error::ValidationErrorKind as Kind;
    let (Kind::OneOfNotValid { context } | Kind::AnyOf { context }) = err.kind() else {
        return None;
    };
    let object = err.instance().as_object().filter(|object| object.len() == 1)?;
    let key = object.keys().next()?;
    let branches = schema.pointer(err.schema_path().as_str())?.as_array()?;
    if branches.len() != context.len() {
        return None;
    }
    let chosen = branches.iter().position(|branch| {
        cases_of(schema, branch, 0).is_some_and(|cases| cases.iter().any(|case| case.key.as_ref() == Some(key)))
    })?;
    context[chosen].first()
}

fn cut(text: &mut String, limit: usize) {
    if text.len() > limit {
        let at = text.floor_char_boundary(limit);
        text.truncate(at);
        text.push('…');
    }
}

/// Every value an `enum`, a `const`, or a `oneOf`/`anyOf` made only of those
/// (and of `null`) allows; `None` when the failed keyword allows more than a list.
fn allowed_values(kind: &jsonschema::error::ValidationErrorKind) -> Option<Vec<Value>> {
    use jsonschema::JsonType;
    use jsonschema::error::{TypeKind, ValidationErrorKind as Kind};
    match kind {
        Kind::Enum { options } => options.as_array().cloned(),
        Kind::Constant { expected_value } => Some(vec![Value::clone(expected_value)]),
        Kind::OneOfNotValid { context } | Kind::AnyOf { context } => {
            let mut allowed = Vec::new();
            for branch in context {
                // A branch `{"type": "string", "const": "days"}` fails on its
                // constant (and on its type, for a number): the constant counts.
                let listed = branch.iter().find_map(|err| allowed_values(err.kind()));
                match (listed, &branch[..]) {
                    (Some(listed), _) => allowed.extend(listed),
                    (None, [only]) if matches!(only.kind(), Kind::Type { kind: TypeKind::Single(JsonType::Null) }) => {
                        allowed.push(Value::Null)
                    }
                    _ => return None,
                }
            }
            (!allowed.is_empty()).then_some(allowed)
        }
        _ => None,
    }
}

#[cfg(test)]
mod tests {
    use super::describe_mismatch;
    use serde_json::{Value, json};

    fn mismatch(schema: &Value, args: Value) -> String {
        let validator = jsonschema::validator_for(schema).unwrap();
        let err = validator.iter_errors(&args).next().expect("the arguments do not match");
        describe_mismatch(&err, schema)
    }

    #[test]
    fn a_value_outside_an_enum_names_every_allowed_value() {
        let schema = json!({
            "type": "object",
            "properties": {
                "unit": { "enum": ["days", "hours", "minutes", "seconds"] },
                // schemars, for an enum whose variants have doc comments; and an Option of it.
                "step": { "$ref": "#/$defs/Step" },
                "maybe": { "anyOf": [{ "$ref": "#/$defs/Step" }, { "type": "null" }] },
            },
            "$defs": {
                "Step": { "oneOf": [
                    { "type": "string", "const": "walk", "description": "Slowly." },
                    { "type": "string", "const": "run", "description": "Fast." },
                ] },
            },
        });
        assert_eq!(
            mismatch(&schema, json!({ "unit": "weeks" })),
            r#"at `/unit`: "weeks" is not one of the allowed values: "days", "hours", "minutes", "seconds""#
        );
        assert_eq!(
            mismatch(&schema, json!({ "step": "dance" })),
            r#"at `/step`: "dance" is not one of the allowed values: "walk", "run""#
        );
        assert_eq!(
            mismatch(&schema, json!({ "step": 7 })),
            r#"at `/step`: 7 is not one of the allowed values: "walk", "run""#
        );
        assert_eq!(
            mismatch(&schema, json!({ "maybe": "fly" })),
            r#"at `/maybe`: "fly" is not one of the allowed values: "walk", "run", null"#
        );
        // Anything else keeps the validator's own words.
        let message = mismatch(&json!({ "type": "object", "required": ["a"] }), json!({}));
        assert!(message.contains("\"a\" is a required property"), "{message}");
    }

    #[test]
    fn a_value_outside_a_variant_names_every_case() {
        // A WIT `variant shipping { standard, express(u32) }` as toolhost's
        // typed functions write it, inline and behind a `$ref`, and optional.
        let shipping = json!({ "oneOf": [
            { "const": "standard" },
            { "type": "object", "properties": { "express": { "type": "integer", "minimum": 0, "maximum": 4294967295u32 } },
              "required": ["express"], "additionalProperties": false },
        ] });
        let schema = json!({
            "type": "object",
            "properties": {
                "shipping": shipping,
                "by_ref": { "$ref": "#/$defs/Shipping" },
                "maybe": { "anyOf": [shipping, { "type": "null" }] },
            },
            "$defs": { "Shipping": shipping },
        });
        let cases = r#"is not one of the allowed values: "standard", {"express": …}"#;
        for (args, at) in [
            (json!({ "shipping": "none" }), "/shipping"),
            (json!({ "shipping": { "expres": 2 } }), "/shipping"),
            (json!({ "shipping": 3 }), "/shipping"),
            (json!({ "by_ref": "none" }), "/by_ref"),
        ] {
            let message = mismatch(&schema, args.clone());
            assert!(message.starts_with(&format!("at `{at}`: ")) && message.ends_with(cases), "{args}: {message}");
            assert!(!message.contains("oneOf"), "{message}");
        }
        assert_eq!(
            mismatch(&schema, json!({ "maybe": "none" })),
            r#"at `/maybe`: "none" is not one of the allowed values: "standard", {"express": …}, null"#
        );
        // The right case with a wrong payload says what is wrong inside it.
        let message = mismatch(&schema, json!({ "shipping": { "express": -1 } }));
        assert!(message.starts_with("at `/shipping/express`: -1 is less than the minimum of 0"), "{message}");
    }
}

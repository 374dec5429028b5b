//! `jsonq`: example plugin that queries and transforms JSON documents, so that
//! a model can pull exact values out of a large document instead of reading it.
//!
//! Tools: `json_query` (the values a path selects) and `json_transform` (an
//! operation such as sort, sum or pick applied to the value at a path). The
//! path syntax lives in [`path`], the operations in [`transform`].

mod path;
mod transform;

use std::io;

use schemars::JsonSchema;
use serde::{Deserialize, Serialize};
use toolhost_sdk::serde_json::{self, Value};
use toolhost_sdk::{Json, Output, Tool, ToolError, register_tools};

use transform::{Operation, Options};

register_tools![
    Tool::new(
        "json_query",
        "Selects values from a JSON document with a path such as `.store.books[0].title`, \
         `.items[*].price`, `.a[\"key with spaces\"]`, `.list[-1]` (last element), \
         `.list[1:3]` (slice) or `..id` (every `id` at any depth). Returns a JSON array of \
         every selected value in document order; a path without `*`, `..` or a slice \
         selects one value, so the array has one element. If such a path leads nowhere \
         the error says where it stopped and lists the keys or the length found there; a \
         path with `*`, `..` or a slice that matches nothing returns []. Example: \
         {\"document\": {\"items\": [{\"price\": 2}, {\"price\": 3}]}, \"path\": \
         \".items[*].price\"} returns [2,3].",
        json_query,
    ),
    Tool::new(
        "json_transform",
        "Applies one operation to the value at a path in a JSON document and returns the \
         result as JSON. Operations: keys, values, length, sort, unique, reverse, flatten, \
         sum, average, min, max, pick. If the path has `*`, `..` or a slice, the operation \
         applies to the array of everything it selects, so `.items[*].price` with sum adds \
         up all prices. `by` (a path inside each element such as `.price`) sorts, \
         deduplicates, finds the min/max element or sums by that field; `pick` keeps only \
         the keys in `fields`. Example: {\"document\": {\"items\": [{\"name\": \"a\", \
         \"price\": 5}, {\"name\": \"b\", \"price\": 2}]}, \"path\": \".items\", \
         \"operation\": \"min\", \"by\": \".price\"} returns {\"name\":\"b\",\"price\":2}.",
        json_transform,
    ),
];

/// Arguments of `json_query`.
#[derive(Deserialize, JsonSchema)]
struct QueryArgs {
    /// The JSON document to query: any JSON value, e.g. {"store": {"books": [{"title":
    /// "Dune"}]}}. A string whose first non-blank character is `{` or `[` is parsed as
    /// JSON text first, so a document held as text can be passed as it is.
    document: Value,
    /// What to select. Steps, chained left to right: `.key` (a key of an object),
    /// `["key"]` (a key with spaces, dots or other special characters), `[0]` (an array
    /// element; `[-1]` is the last), `[1:3]` (elements 1 and 2; either bound may be left
    /// out or negative), `[*]` or `.*` (every element or value), `..key` (`key` at any
    /// depth). "" or "$" is the whole document. Examples: ".store.books[0].title",
    /// ".items[*].price", ".a[\"key with spaces\"]", "..id".
    path: String,
}

/// Arguments of `json_transform`.
#[derive(Deserialize, JsonSchema)]
struct TransformArgs {
    /// The JSON document: any JSON value, e.g. {"items": [{"price": 2}, {"price": 3}]}. A
    /// string whose first non-blank character is `{` or `[` is parsed as JSON text first.
    document: Value,
    /// Where the value to transform is, in the syntax of `json_query`, e.g. ".items" or
    /// ".items[*].price". Leave it out (or "") for the whole document. A path with `*`,
    /// `..` or a slice hands the operation the array of everything it selects.
    #[serde(default)]
    path: String,
    /// What to do. "keys": an object's keys (an array's indices). "values": an object's
    /// values. "length": the number of elements, keys or characters. "sort": sorted
    /// ascending (null < false < true < numbers < strings < arrays < objects).
    /// "unique": duplicates removed, first occurrences kept in order. "reverse": an array
    /// or a string reversed. "flatten": nested arrays replaced by their elements, at any
    /// depth. "sum", "average": of an array of numbers. "min", "max": the smallest or
    /// largest element (null for an empty array). "pick": objects reduced to `fields`.
    operation: Operation,
    /// For sort, unique, min, max, sum and average only: a path inside each element to
    /// use instead of the element itself, e.g. ".price" or ".author.name". With min and
    /// max the whole element with the smallest or largest such value is returned.
    #[serde(default)]
    by: Option<String>,
    /// For sort only: true sorts from largest to smallest. Default false.
    #[serde(default)]
    descending: bool,
    /// For pick only: the keys to keep, e.g. ["title", "price"]. Applies to an object or
    /// to every object in an array; keys an object lacks are left out.
    #[serde(default)]
    fields: Option<Vec<String>>,
}

fn json_query(args: QueryArgs) -> Result<Output, ToolError> {
    let document = document(args.document)?;
    let path = path::parse(&args.path).map_err(ToolError::invalid_arguments)?;
    let found = path::select(&document, &path).map_err(ToolError::invalid_arguments)?;
    toolhost_sdk::log::debug_with("json query", &[("path", &path.to_string()), ("matches", &found.len().to_string())]);
    Ok(Output::json_text(json_text(&found, true)?))
}

fn json_transform(args: TransformArgs) -> Result<Json<Value>, ToolError> {
    let document = document(args.document)?;
    let path = path::parse(&args.path).map_err(ToolError::invalid_arguments)?;
    let by = match &args.by {
        Some(text) => {
            let by = path::parse(text).map_err(ToolError::invalid_arguments)?;
            if !by.is_definite() {
                return Err(ToolError::invalid_arguments(format!(
                    "`by` must name one value inside each element, such as \".price\"; \
                     `{text}` has `*`, `..` or a slice"
                )));
            }
            Some(by)
        }
        None => None,
    };
    let found = path::select(&document, &path).map_err(ToolError::invalid_arguments)?;
    // A path like `..*` can select every value many times over: measure
    // before copying.
    json_text(&found, false)?;
    let (input, at) = if path.is_definite() {
        let at = if path.steps.is_empty() { "the document".to_owned() } else { format!("`{path}`") };
        (found.first().map_or(Value::Null, |&v| v.clone()), at)
    } else {
        let at = format!("the array of values `{path}` selects");
        (Value::Array(found.into_iter().cloned().collect()), at)
    };
    let options = Options { by: by.as_ref(), descending: args.descending, fields: args.fields.as_deref() };
    let result = transform::transform(input, args.operation, &options, &at).map_err(ToolError::invalid_arguments)?;
    Ok(Json(result))
}

/// The largest JSON text a tool builds, far above the host's default output
/// limit, so that a query that selects too much fails with advice rather
/// than by running out of memory.
const MAX_RESULT_BYTES: usize = 16 << 20;

/// `value` as JSON text (empty unless `keep`), or an error if it would be
/// longer than [`MAX_RESULT_BYTES`].
fn json_text(value: &impl Serialize, keep: bool) -> Result<String, ToolError> {
    let mut out = Limited { bytes: Vec::new(), len: 0, keep };
    match serde_json::to_writer(&mut out, value) {
        Ok(()) => String::from_utf8(out.bytes).map_err(|err| ToolError::failed(err.to_string())),
        Err(_) if out.len > MAX_RESULT_BYTES => Err(ToolError::invalid_arguments(format!(
            "the selection is larger than {} MiB of JSON; select less, e.g. a narrower path \
             instead of `..*`, a slice such as `[0:100]`, or `pick` with json_transform",
            MAX_RESULT_BYTES >> 20
        ))),
        Err(err) => Err(ToolError::failed(format!("could not write the result as JSON: {err}"))),
    }
}

/// A writer that fails once more than [`MAX_RESULT_BYTES`] went through it.
struct Limited {
    bytes: Vec<u8>,
    len: usize,
    keep: bool,
}

impl io::Write for Limited {
    fn write(&mut self, buf: &[u8]) -> io::Result<usize> {
        self.len = self.len.saturating_add(buf.len());
        if self.len > MAX_RESULT_BYTES {
            return Err(io::Error::other("result too large"));
        }
        if self.keep {
            self.bytes.extend_from_slice(buf);
        }
        Ok(buf.len())
    }

    fn flush(&mut self) -> io::Result<()> {
        Ok(())
    }
}

/// The document as given, or parsed when it is a string holding JSON text.
fn document(value: Value) -> Result<Value, ToolError> {
    match value {
        Value::String(text) if text.trim_start().starts_with(['{', '[']) => {
            serde_json::from_str(&text).map_err(|err| {
                ToolError::invalid_arguments(format!(
                    "`document` is a string that starts like JSON text but does not parse: \
                     {err}. Fix the text, or pass the JSON value itself instead of a string"
                ))
            })
        }
        other => Ok(other),
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn accepts_documents_as_values_or_json_text() {
        assert_eq!(document(json!({"a": 1})), Ok(json!({"a": 1})));
        assert_eq!(document(json!(" [1, 2]")), Ok(json!([1, 2])));
        assert_eq!(document(json!("plain text")), Ok(json!("plain text")));
        assert!(document(json!("{\"a\": ")).is_err_and(|err| err.is_invalid_arguments()));
    }

    #[test]
    fn accepts_the_described_examples() {
        let document = json!({"items": [{"price": 2}, {"price": 3}]});
        let path = path::parse(".items[*].price").unwrap();
        let found: Vec<Value> = path::select(&document, &path).unwrap().into_iter().cloned().collect();
        assert_eq!(serde_json::to_string(&found).unwrap(), "[2,3]");
        let args = TransformArgs {
            document: json!({"items": [{"name": "a", "price": 5}, {"name": "b", "price": 2}]}),
            path: ".items".to_owned(),
            operation: Operation::Min,
            by: Some(".price".to_owned()),
            descending: false,
            fields: None,
        };
        let output: toolhost_sdk::Output = json_transform(args).unwrap().into();
        assert_eq!(output, toolhost_sdk::Output::json_text(r#"{"name":"b","price":2}"#.to_owned()));
    }

    #[test]
    fn rejects_selections_past_the_size_limit() {
        let big = Value::Array(vec![Value::String("x".repeat(1 << 20)); 20]);
        let err = json_text(&big, true).unwrap_err();
        assert!(err.is_invalid_arguments() && err.message().contains("select less"));
        assert_eq!(json_text(&json!({"a": [1]}), true), Ok(r#"{"a":[1]}"#.to_owned()));
        assert_eq!(json_text(&json!({"a": [1]}), false), Ok(String::new()));
    }

    #[test]
    fn accepts_transform_of_wildcard_selections() {
        let args = TransformArgs {
            document: json!({"items": [{"price": 2}, {"price": 3.5}]}),
            path: ".items[*].price".to_owned(),
            operation: Operation::Sum,
            by: None,
            descending: false,
            fields: None,
        };
        assert_eq!(json_transform(args).map(|Json(v)| v), Ok(json!(5.5)));
    }

    #[test]
    fn rejects_by_paths_that_select_many() {
        let args = TransformArgs {
            document: json!([]),
            path: String::new(),
            operation: Operation::Sort,
            by: Some(".tags[*]".to_owned()),
            descending: false,
            fields: None,
        };
        assert!(json_transform(args).is_err_and(|err| err.message().contains("one value")));
    }
}

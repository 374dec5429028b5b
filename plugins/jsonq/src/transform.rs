//! The operations of `json_transform` (keys, sort, sum, pick, ...), applied to
//! one JSON value. Free of SDK types so that they are unit-tested natively.
//!
//! Values are ordered as in jq: null < false < true < numbers < strings <
//! arrays < objects; arrays compare element by element, objects by their
//! sorted keys and then their values. Comparing recurses on nesting, which
//! serde_json's parser caps at 128 levels.

use std::cmp::Ordering;

use schemars::JsonSchema;
use serde::{Deserialize, Serialize};
use serde_json::{Map, Number, Value};

use crate::path::{self, Path};

/// What `json_transform` does to the selected value.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Deserialize, Serialize, JsonSchema)]
#[serde(rename_all = "lowercase")]
pub enum Operation {
    Keys,
    Values,
    Length,
    Sort,
    Unique,
    Reverse,
    Flatten,
    Sum,
    Average,
    Min,
    Max,
    Pick,
}

impl Operation {
    fn name(self) -> &'static str {
        match self {
            Operation::Keys => "keys",
            Operation::Values => "values",
            Operation::Length => "length",
            Operation::Sort => "sort",
            Operation::Unique => "unique",
            Operation::Reverse => "reverse",
            Operation::Flatten => "flatten",
            Operation::Sum => "sum",
            Operation::Average => "average",
            Operation::Min => "min",
            Operation::Max => "max",
            Operation::Pick => "pick",
        }
    }

    fn takes_by(self) -> bool {
        matches!(
            self,
            Operation::Sort | Operation::Unique | Operation::Sum | Operation::Average | Operation::Min | Operation::Max
        )
    }
}

/// The options beside the operation; each applies to some operations only.
#[derive(Debug, Default)]
pub struct Options<'a> {
    /// A definite path inside each element: what to sort, compare or add up.
    pub by: Option<&'a Path>,
    /// Sort from largest to smallest.
    pub descending: bool,
    /// The keys `pick` keeps.
    pub fields: Option<&'a [String]>,
}

/// Applies `operation` to `input`, which `at` names in error messages (e.g.
/// "`.items`").
pub fn transform(input: Value, operation: Operation, options: &Options<'_>, at: &str) -> Result<Value, String> {
    let op = operation.name();
    if options.by.is_some() && !operation.takes_by() {
        return Err(format!("`by` does not apply to `{op}`; it applies to sort, unique, min, max, sum and average"));
    }
    if options.descending && operation != Operation::Sort {
        return Err(format!("`descending` applies only to `sort`, not to `{op}`"));
    }
    if options.fields.is_some() && operation != Operation::Pick {
        return Err(format!("`fields` applies only to `pick`, not to `{op}`"));
    }
    let needs_array = |value: Value| match value {
        Value::Array(items) => Ok(items),
        other => Err(format!("`{op}` needs an array, but {at} is {}", path::describe(&other))),
    };
    Ok(match operation {
        Operation::Keys => match input {
            Value::Object(map) => Value::Array(map.into_iter().map(|(k, _)| Value::String(k)).collect()),
            Value::Array(items) => Value::Array((0..items.len()).map(Value::from).collect()),
            other => {
                return Err(format!("`keys` needs an object or an array, but {at} is {}", path::describe(&other)));
            }
        },
        Operation::Values => match input {
            Value::Object(map) => Value::Array(map.into_iter().map(|(_, v)| v).collect()),
            Value::Array(items) => Value::Array(items),
            other => {
                return Err(format!("`values` needs an object or an array, but {at} is {}", path::describe(&other)));
            }
        },
        Operation::Length => Value::from(match &input {
            Value::Array(items) => items.len(),
            Value::Object(map) => map.len(),
            Value::String(s) => s.chars().count(),
            Value::Null => 0,
            other => {
                return Err(format!(
                    "`length` needs an array, an object or a string, but {at} is {}",
                    path::describe(other)
                ));
            }
        }),
        Operation::Reverse => match input {
            Value::Array(mut items) => {
                items.reverse();
                Value::Array(items)
            }
            Value::String(s) => Value::String(s.chars().rev().collect()),
            other => {
                return Err(format!("`reverse` needs an array or a string, but {at} is {}", path::describe(&other)));
            }
        },
        Operation::Flatten => Value::Array(flatten(needs_array(input)?)),
        Operation::Sort => {
            let items = needs_array(input)?;
            let mut keyed = keyed(items, options.by);
            keyed.sort_by(|a, b| {
                let order = compare(key_of(a), key_of(b));
                if options.descending { order.reverse() } else { order }
            });
            Value::Array(keyed.into_iter().map(|(_, item)| item).collect())
        }
        Operation::Unique => Value::Array(unique(keyed(needs_array(input)?, options.by))),
        Operation::Min | Operation::Max => {
            let keyed = keyed(needs_array(input)?, options.by);
            let wanted = if operation == Operation::Min { Ordering::Less } else { Ordering::Greater };
            // The first of equal elements wins.
            let best = keyed
                .into_iter()
                .reduce(|best, next| if compare(key_of(&next), key_of(&best)) == wanted { next } else { best });
            best.map_or(Value::Null, |(_, item)| item)
        }
        Operation::Sum | Operation::Average => {
            let items = needs_array(input)?;
            let count = items.len();
            let total = sum(&items, options.by, op, at)?;
            if operation == Operation::Sum {
                total
            } else if count == 0 {
                return Err(format!("{at} is an empty array, so it has no average"));
            } else {
                let total = total.as_f64().unwrap_or(f64::NAN);
                float(total / count as f64, "the average")?
            }
        }
        Operation::Pick => {
            let fields = match options.fields {
                Some(fields) if !fields.is_empty() => fields,
                _ => {
                    return Err("`pick` needs `fields`, the keys to keep, e.g. [\"title\", \"price\"]".to_owned());
                }
            };
            match input {
                Value::Object(map) => Value::Object(pick(&map, fields)),
                Value::Array(items) => {
                    let mut picked = Vec::with_capacity(items.len());
                    for (i, item) in items.iter().enumerate() {
                        match item {
                            Value::Object(map) => picked.push(Value::Object(pick(map, fields))),
                            other => {
                                return Err(format!(
                                    "`pick` needs objects, but element {i} of {at} is {}",
                                    path::describe(other)
                                ));
                            }
                        }
                    }
                    Value::Array(picked)
                }
                other => {
                    return Err(format!(
                        "`pick` needs an object or an array of objects, but {at} is {}",
                        path::describe(&other)
                    ));
                }
            }
        }
    })
}

/// An item and its key: the value at `by` inside it (null where there is
/// none), or `None` when the item is its own key.
type Keyed = (Option<Value>, Value);

fn key_of(keyed: &Keyed) -> &Value {
    keyed.0.as_ref().unwrap_or(&keyed.1)
}

fn keyed(items: Vec<Value>, by: Option<&Path>) -> Vec<Keyed> {
    items
        .into_iter()
        .map(|item| {
            let key = by.map(|by| {
                path::select(&item, by).ok().and_then(|found| found.first().map(|&v| v.clone())).unwrap_or(Value::Null)
            });
            (key, item)
        })
        .collect()
}

/// The items whose keys were not seen before, in their original order.
fn unique(keyed: Vec<Keyed>) -> Vec<Value> {
    // Sort positions by key (stable, so the first of equals leads), keep the
    // first of each run, then restore the original order: O(n log n).
    let same = |a: usize, b: usize| match (keyed.get(a), keyed.get(b)) {
        (Some(a), Some(b)) => compare(key_of(a), key_of(b)),
        _ => Ordering::Equal,
    };
    let mut order: Vec<usize> = (0..keyed.len()).collect();
    order.sort_by(|&a, &b| same(a, b));
    let mut keep = vec![false; keyed.len()];
    let mut previous: Option<usize> = None;
    for &i in &order {
        if previous.is_none_or(|p| same(p, i) != Ordering::Equal) {
            if let Some(slot) = keep.get_mut(i) {
                *slot = true;
            }
            previous = Some(i);
        }
    }
    keyed.into_iter().zip(keep).filter_map(|((_, item), keep)| keep.then_some(item)).collect()
}

/// Arrays inside `items` replaced by their elements, at every depth.
fn flatten(items: Vec<Value>) -> Vec<Value> {
    let mut out = Vec::new();
    let mut stack = vec![items.into_iter()];
    while let Some(top) = stack.last_mut() {
        match top.next() {
            Some(Value::Array(inner)) => stack.push(inner.into_iter()),
            Some(value) => out.push(value),
            None => {
                stack.pop();
            }
        }
    }
    out
}

/// The sum of the numbers in `items` (or at `by` inside them): an integer
/// while every term is one and it fits, a float otherwise.
fn sum(items: &[Value], by: Option<&Path>, op: &str, at: &str) -> Result<Value, String> {
    let mut integer: i128 = 0;
    let mut float_total = 0.0;
    let mut all_integers = true;
    for (i, item) in items.iter().enumerate() {
        let term = match by {
            Some(by) => {
                let found = path::select_in(item, by, &format!("element {i} of {at}"))
                    .map_err(|why| format!("`{op}` by `{by}`: {why}"))?;
                found.first().copied().unwrap_or(&Value::Null)
            }
            None => item,
        };
        let Value::Number(n) = term else {
            let which = match by {
                Some(by) => format!("`{by}` of element {i}"),
                None => format!("element {i}"),
            };
            return Err(format!("`{op}` needs numbers, but {which} of {at} is {}", path::describe(term)));
        };
        if let Some(v) = n.as_i64().map(i128::from).or_else(|| n.as_u64().map(i128::from)) {
            integer = integer.saturating_add(v);
        } else {
            all_integers = false;
        }
        float_total += n.as_f64().unwrap_or(f64::NAN);
    }
    if all_integers {
        if let Ok(v) = i64::try_from(integer) {
            return Ok(Value::from(v));
        }
        if let Ok(v) = u64::try_from(integer) {
            return Ok(Value::from(v));
        }
    }
    float(float_total, "the sum")
}

fn float(value: f64, what: &str) -> Result<Value, String> {
    Number::from_f64(value)
        .map(Value::Number)
        .ok_or_else(|| format!("{what} is too large to represent (it overflows a 64-bit float)"))
}

fn pick(map: &Map<String, Value>, fields: &[String]) -> Map<String, Value> {
    fields.iter().filter_map(|field| map.get(field).map(|v| (field.clone(), v.clone()))).collect()
}

/// The total order of JSON values described in the module docs.
pub fn compare(a: &Value, b: &Value) -> Ordering {
    fn rank(value: &Value) -> u8 {
        match value {
            Value::Null => 0,
            Value::Bool(_) => 1,
            Value::Number(_) => 2,
            Value::String(_) => 3,
            Value::Array(_) => 4,
            Value::Object(_) => 5,
        }
    }
    match (a, b) {
        (Value::Bool(a), Value::Bool(b)) => a.cmp(b),
        (Value::Number(a), Value::Number(b)) => compare_numbers(a, b),
        (Value::String(a), Value::String(b)) => a.cmp(b),
        (Value::Array(a), Value::Array(b)) => {
            for (x, y) in a.iter().zip(b) {
                let order = compare(x, y);
                if order != Ordering::Equal {
                    return order;
                }
            }
            a.len().cmp(&b.len())
        }
        (Value::Object(a), Value::Object(b)) => {
            let mut a_keys: Vec<&String> = a.keys().collect();
            let mut b_keys: Vec<&String> = b.keys().collect();
            a_keys.sort();
            b_keys.sort();
            a_keys.cmp(&b_keys).then_with(|| {
                for key in a_keys {
                    let order = match (a.get(key), b.get(key)) {
                        (Some(x), Some(y)) => compare(x, y),
                        _ => Ordering::Equal,
                    };
                    if order != Ordering::Equal {
                        return order;
                    }
                }
                Ordering::Equal
            })
        }
        _ => rank(a).cmp(&rank(b)),
    }
}

fn compare_numbers(a: &Number, b: &Number) -> Ordering {
    if let (Some(a), Some(b)) = (a.as_i64(), b.as_i64()) {
        return a.cmp(&b);
    }
    if let (Some(a), Some(b)) = (a.as_u64(), b.as_u64()) {
        return a.cmp(&b);
    }
    let (a, b) = (a.as_f64().unwrap_or(f64::NAN), b.as_f64().unwrap_or(f64::NAN));
    a.total_cmp(&b)
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    fn run(input: Value, operation: Operation) -> Result<Value, String> {
        transform(input, operation, &Options::default(), "the value")
    }

    #[test]
    fn accepts_each_operation() {
        use Operation::*;
        let cases = [
            (json!({"b": 1, "a": 2}), Keys, json!(["b", "a"])),
            (json!(["x", "y"]), Keys, json!([0, 1])),
            (json!({"b": 1, "a": 2}), Values, json!([1, 2])),
            (json!([1, 2, 3]), Length, json!(3)),
            (json!({"a": 1}), Length, json!(1)),
            (json!("héllo"), Length, json!(5)),
            (json!(null), Length, json!(0)),
            (json!([3, 1, 2]), Sort, json!([1, 2, 3])),
            (
                json!(["b", null, 2, true, "a", [1], {"k": 1}, false, 1.5]),
                Sort,
                json!([null, false, true, 1.5, 2, "a", "b", [1], {"k": 1}]),
            ),
            (json!([1, 2, 1, "1", 2.0, 3]), Unique, json!([1, 2, "1", 3])),
            (json!([1, [2, [3, [4]]], [], 5]), Flatten, json!([1, 2, 3, 4, 5])),
            (json!([1, 2, 3]), Sum, json!(6)),
            (json!([1, 2.5]), Sum, json!(3.5)),
            (json!([]), Sum, json!(0)),
            (json!([9223372036854775807i64, 1]), Sum, json!(9223372036854775808u64)),
            (json!([1, 2, 3, 4]), Average, json!(2.5)),
            (json!([3, 1, 2]), Min, json!(1)),
            (json!([3, 1, 2]), Max, json!(3)),
            (json!([]), Max, json!(null)),
            (json!(["pear", "apple"]), Min, json!("apple")),
            (json!([1, 2, 3]), Reverse, json!([3, 2, 1])),
            (json!("abc"), Reverse, json!("cba")),
        ];
        for (input, operation, expected) in cases {
            assert_eq!(run(input.clone(), operation), Ok(expected), "{operation:?} of {input}");
        }
    }

    fn books() -> Value {
        json!([
            {"title": "Dune", "price": 9.5, "year": 1965},
            {"title": "Emma", "price": 4, "year": 1815},
            {"title": "Ulysses", "price": 12, "year": 1922},
            {"title": "Dune", "price": 7, "year": 1984}
        ])
    }

    #[test]
    fn accepts_by_a_path_inside_each_element() {
        let price = path::parse(".price").unwrap();
        let title = path::parse(".title").unwrap();
        let by = |path| Options { by: Some(path), ..Options::default() };
        let titles = |value: Value| -> Vec<String> {
            value.as_array().unwrap().iter().map(|b| b["title"].as_str().unwrap().to_owned()).collect()
        };
        let sorted = transform(books(), Operation::Sort, &by(&price), "x").unwrap();
        assert_eq!(titles(sorted), ["Emma", "Dune", "Dune", "Ulysses"]);
        let descending = Options { by: Some(&price), descending: true, fields: None };
        let sorted = transform(books(), Operation::Sort, &descending, "x").unwrap();
        assert_eq!(titles(sorted), ["Ulysses", "Dune", "Dune", "Emma"]);
        let unique = transform(books(), Operation::Unique, &by(&title), "x").unwrap();
        assert_eq!(titles(unique), ["Dune", "Emma", "Ulysses"]);
        let cheapest = transform(books(), Operation::Min, &by(&price), "x").unwrap();
        assert_eq!(cheapest["title"], "Emma");
        let dearest = transform(books(), Operation::Max, &by(&price), "x").unwrap();
        assert_eq!(dearest["title"], "Ulysses");
        assert_eq!(transform(books(), Operation::Sum, &by(&price), "x"), Ok(json!(32.5)));
        assert_eq!(transform(books(), Operation::Average, &by(&price), "x"), Ok(json!(8.125)));
    }

    #[test]
    fn accepts_pick_on_objects_and_arrays_of_objects() {
        let fields = vec!["title".to_owned(), "year".to_owned(), "missing".to_owned()];
        let options = Options { fields: Some(&fields), ..Options::default() };
        assert_eq!(
            transform(json!({"title": "Dune", "price": 9.5, "year": 1965}), Operation::Pick, &options, "x"),
            Ok(json!({"title": "Dune", "year": 1965}))
        );
        let picked = transform(books(), Operation::Pick, &options, "x").unwrap();
        assert_eq!(picked[1], json!({"title": "Emma", "year": 1815}));
    }

    #[test]
    fn rejects_operations_on_the_wrong_kind_of_value() {
        let price = path::parse(".price").unwrap();
        let fields = vec!["a".to_owned()];
        let cases: Vec<(Value, Operation, Options<'_>, &str)> = vec![
            (
                json!(5),
                Operation::Keys,
                Options::default(),
                "`keys` needs an object or an array, but the value is a number (5)",
            ),
            (
                json!({"a": 1}),
                Operation::Sort,
                Options::default(),
                "`sort` needs an array, but the value is an object with 1 key",
            ),
            (
                json!([1, "2"]),
                Operation::Sum,
                Options::default(),
                "`sum` needs numbers, but element 1 of the value is a string (\"2\")",
            ),
            (json!([]), Operation::Average, Options::default(), "empty array"),
            (
                json!([{"price": 1}, {"cost": 2}]),
                Operation::Sum,
                Options { by: Some(&price), ..Options::default() },
                "`sum` by `.price`: element 1 of the value has no key `price`; its keys are: `cost`",
            ),
            (json!([1]), Operation::Pick, Options::default(), "`pick` needs `fields`"),
            (
                json!([1]),
                Operation::Pick,
                Options { fields: Some(&fields), ..Options::default() },
                "element 0 of the value is a number",
            ),
            (
                json!([1]),
                Operation::Length,
                Options { by: Some(&price), ..Options::default() },
                "`by` does not apply to `length`",
            ),
            (
                json!([1]),
                Operation::Min,
                Options { descending: true, ..Options::default() },
                "`descending` applies only to `sort`",
            ),
            (
                json!([1]),
                Operation::Sort,
                Options { fields: Some(&fields), ..Options::default() },
                "`fields` applies only to `pick`",
            ),
            (json!(true), Operation::Length, Options::default(), "is a boolean (true)"),
            (json!([1e308, 1e308]), Operation::Sum, Options::default(), "overflows"),
        ];
        for (input, operation, options, expected) in cases {
            match transform(input.clone(), operation, &options, "the value") {
                Err(message) => assert!(message.contains(expected), "{operation:?} of {input}: {message}"),
                Ok(output) => panic!("{operation:?} of {input} gave {output}"),
            }
        }
    }

    #[test]
    fn accepts_large_inputs_in_n_log_n() {
        let many: Vec<Value> = (0..200_000).map(|i| Value::from(i % 1000)).collect();
        let unique = run(Value::Array(many), Operation::Unique).unwrap();
        assert_eq!(unique.as_array().map(Vec::len), Some(1000));
    }
}

//! `toolhost tools`: what the loaded plugins offer.

use super::format;
use anyhow::Result;
use serde_json::{Value, json};
use std::process::ExitCode;
use toolhost::{Host, ProblemKind};

#[derive(clap::Args)]
pub struct Args {
    /// Print a JSON array: name, plugin, title, description, input_schema, output_schema, hints, path, asks, grants
    #[arg(long)]
    json: bool,
}

pub fn run(host: &Host, args: &Args) -> Result<ExitCode> {
    let catalog = host.catalog();
    for problem in catalog.problems() {
        if problem.kind == ProblemKind::Grant {
            eprintln!("warning: {problem}");
        }
    }
    for plugin in catalog.plugins() {
        for note in &plugin.left_out {
            eprintln!("note: {}: {note}", plugin.path.display());
        }
    }
    let tools = catalog.tools();
    if args.json {
        let listed: Vec<Value> = tools
            .iter()
            .map(|entry| {
                let mut listed = json!({
                    "name": entry.name(),
                    "plugin": entry.origin(),
                    "title": entry.title(),
                    "description": entry.description(),
                    "input_schema": entry.schema(),
                    "output_schema": entry.output_schema(),
                    "hints": hints_json(entry.hints()),
                    "path": entry.location().display().to_string(),
                });
                if let Some(server) = entry.mcp_server() {
                    listed["source"] = json!("mcp");
                    listed["server"] = json!(server.name());
                    listed["external"] = json!(true);
                    listed["sandboxed"] = json!(false);
                    listed["protocol"] = json!(server.protocol());
                } else {
                    listed["source"] = json!("plugin");
                }
                if let Some(plugin) = entry.plugin() {
                    listed["asks"] = json!(plugin.asks.as_ref().map(|asks| asks.to_json()));
                    listed["grants"] = plugin.grants.to_json();
                    listed["notices"] = json!(plugin.notices.iter().chain(&plugin.left_out).collect::<Vec<_>>());
                }
                listed
            })
            .collect();
        println!("{}", serde_json::to_string_pretty(&listed)?);
        return Ok(ExitCode::SUCCESS);
    }
    if tools.is_empty() {
        eprintln!("no tools loaded");
        return Ok(ExitCode::SUCCESS);
    }
    for entry in tools {
        match entry.mcp_server() {
            Some(server) => println!("{}  (MCP server {}: external, not sandboxed)", entry.name(), server.name()),
            None => println!("{}  (plugin {})", entry.name(), entry.origin()),
        }
        for line in wrap(entry.description(), "    ", "    ") {
            println!("{line}");
        }
        for line in arguments(entry.schema()) {
            println!("{line}");
        }
        println!();
    }
    for plugin in catalog.plugins() {
        if plugin.asks.is_none() && plugin.grants.is_empty() {
            continue;
        }
        println!("plugin {}", plugin.name);
        for line in format::grants(plugin.asks.as_ref(), &plugin.grants) {
            println!("    {line}");
        }
        println!();
    }
    let servers: std::collections::BTreeSet<&str> =
        tools.iter().filter_map(|entry| entry.mcp_server()).map(|server| server.name()).collect();
    let plugins = counted(catalog.plugins().len(), "plugin");
    if servers.is_empty() {
        eprintln!("{} from {plugins}", counted(tools.len(), "tool"));
    } else {
        eprintln!("{} from {plugins} and {}", counted(tools.len(), "tool"), counted(servers.len(), "MCP server"));
    }
    Ok(ExitCode::SUCCESS)
}

/// `1 tool`, `3 tools`.
fn counted(count: usize, noun: &str) -> String {
    if count == 1 { format!("1 {noun}") } else { format!("{count} {noun}s") }
}

/// The width text is wrapped to.
const WIDTH: usize = 100;

/// `text` wrapped at word boundaries to [`WIDTH`] columns, its first line
/// after `first` and the others after `rest`. A line break in `text` is kept
/// where it starts a paragraph (after a blank line) or a list item (`-`, `*`,
/// `1.`); elsewhere it is a space, as in a doc comment (which schemars copies
/// line by line). A word longer than a line stays whole.
fn wrap(text: &str, first: &str, rest: &str) -> Vec<String> {
    let text = &*toolhost::runtime::text::printable(text);
    let mut lines = Vec::new();
    let mut line = first.to_owned();
    let mut empty = true;
    let mut blank_before = false;
    for (i, source) in text.lines().enumerate() {
        let trimmed = source.trim_start();
        if trimmed.is_empty() {
            blank_before = true;
            continue;
        }
        let item = trimmed.starts_with(['-', '*', '•'])
            || trimmed
                .split_once(['.', ')'])
                .is_some_and(|(n, _)| !n.is_empty() && n.chars().all(|c| c.is_ascii_digit()));
        if i > 0 && (blank_before || item) && !empty {
            lines.push(std::mem::replace(&mut line, rest.to_owned()));
            empty = true;
        }
        blank_before = false;
        for word in trimmed.split_whitespace() {
            if !empty && line.chars().count() + 1 + word.chars().count() > WIDTH {
                lines.push(std::mem::replace(&mut line, rest.to_owned()));
                empty = true;
            }
            if !empty {
                line.push(' ');
            }
            line.push_str(word);
            empty = false;
        }
    }
    lines.push(line);
    lines.retain(|line| !line.trim().is_empty());
    lines
}

/// The lines describing each top-level argument:
/// `· name: type, range (required) — description`, then its allowed values and default.
fn arguments(schema: &Value) -> Vec<String> {
    let Some(properties) = schema.get("properties").and_then(Value::as_object).filter(|p| !p.is_empty()) else {
        return vec!["    · no arguments".to_owned()];
    };
    let required: Vec<&str> = schema
        .get("required")
        .and_then(Value::as_array)
        .map(|names| names.iter().filter_map(Value::as_str).collect())
        .unwrap_or_default();
    let mut lines = Vec::new();
    for (name, property) in properties {
        let shape = Shape::of(schema, property);
        let mut head = format!("{name}: {}", shape.kind);
        if !shape.bounds.is_empty() {
            head.push_str(", ");
            head.push_str(&shape.bounds.join(", "));
        }
        if required.contains(&name.as_str()) {
            head.push_str(" (required)");
        }
        if let Some(description) = &shape.description {
            head.push_str(" — ");
            head.push_str(description);
        }
        lines.extend(wrap(&head, "    · ", "        "));
        if let Some(values) = &shape.values {
            if values.iter().any(|(_, description)| description.is_some()) {
                lines.push("        one of:".to_owned());
                for (value, description) in values {
                    let text = match description {
                        Some(description) => format!("{value} — {description}"),
                        None => value.to_string(),
                    };
                    lines.extend(wrap(&text, "          ", "              "));
                }
            } else {
                let listed: Vec<String> = values.iter().map(|(value, _)| value.to_string()).collect();
                lines.extend(wrap(&format!("one of: {}", listed.join(", ")), "        ", "          "));
            }
        }
        if let Some(default) = &shape.default {
            lines.extend(wrap(&format!("default: {default}"), "        ", "          "));
        }
    }
    lines
}

/// What one argument's schema says, gathered through `$ref`, `allOf` of one
/// schema, and `oneOf`/`anyOf` of constants (which schemars writes for an enum
/// whose variants have doc comments) or of a schema and `null` (an `Option`).
#[derive(Debug, Default)]
struct Shape {
    kind: String,
    bounds: Vec<String>,
    description: Option<String>,
    values: Option<Vec<(Value, Option<String>)>>,
    default: Option<Value>,
}

impl Shape {
    fn of(root: &Value, schema: &Value) -> Shape {
        Shape::at(root, schema, 0)
    }

    fn at(root: &Value, schema: &Value, depth: usize) -> Shape {
        let mut shape = Shape {
            description: schema.get("description").and_then(Value::as_str).map(str::to_owned),
            default: schema.get("default").cloned(),
            ..Shape::default()
        };
        // A self-referencing schema stops somewhere.
        if depth > 16 {
            shape.kind = "any".to_owned();
            return shape;
        }
        let target = schema.get("$ref").and_then(Value::as_str).and_then(|reference| resolve(root, reference));
        let single_all_of = match schema.get("allOf").and_then(Value::as_array) {
            Some(all) if all.len() == 1 => Some(&all[0]),
            _ => None,
        };
        if let Some(inner) = target.or(single_all_of) {
            let inner = Shape::at(root, inner, depth + 1);
            // What the property itself says wins over the shared definition.
            shape.description = shape.description.or(inner.description);
            shape.default = shape.default.or(inner.default);
            shape.kind = inner.kind;
            shape.bounds = inner.bounds;
            shape.values = inner.values;
            shape.bounds.extend(bounds(schema));
            return shape;
        }
        if let Some(options) = schema.get("enum").and_then(Value::as_array) {
            shape.values = Some(options.iter().map(|value| (value.clone(), None)).collect());
        } else if let Some(value) = schema.get("const") {
            shape.values = Some(vec![(value.clone(), None)]);
        } else if let Some(branches) =
            schema.get("oneOf").or_else(|| schema.get("anyOf")).and_then(Value::as_array).filter(|b| !b.is_empty())
        {
            let branches: Vec<Shape> = branches.iter().map(|branch| Shape::at(root, branch, depth + 1)).collect();
            if branches.iter().all(|branch| branch.values.is_some() || branch.kind == "null") {
                // Constants (each perhaps described), and `null` when one branch is.
                let mut values = Vec::new();
                for branch in branches {
                    match branch.values {
                        Some(listed) if listed.len() == 1 => {
                            values.push((listed[0].0.clone(), listed[0].1.clone().or(branch.description)));
                        }
                        Some(listed) => values.extend(listed),
                        None => values.push((Value::Null, None)),
                    }
                }
                shape.values = Some(values);
            } else {
                let kinds: Vec<String> = branches.iter().map(|branch| branch.kind.clone()).collect();
                shape.kind = kinds.join(" | ");
                let nullable = match &branches[..] {
                    [one, null] | [null, one] if null.kind == "null" => Some(one),
                    _ => None,
                };
                if let Some(one) = nullable {
                    shape.bounds.clone_from(&one.bounds);
                    shape.values.clone_from(&one.values);
                    if let Some(values) = &mut shape.values {
                        values.push((Value::Null, None));
                    }
                    shape.description = shape.description.or(one.description.clone());
                    shape.default = shape.default.or(one.default.clone());
                }
            }
        }
        if shape.kind.is_empty() {
            shape.kind = kind(schema).unwrap_or_else(|| match &shape.values {
                Some(values) => {
                    let mut kinds: Vec<&str> = values.iter().map(|(value, _)| json_type(value)).collect();
                    kinds.dedup();
                    kinds.join(" | ")
                }
                None => "any".to_owned(),
            });
            if shape.kind.starts_with("array")
                && !shape.kind.contains('|')
                && let Some(items) = schema.get("items").filter(|items| items.is_object())
            {
                let items = Shape::at(root, items, depth + 1);
                let of = match &items.values {
                    Some(values) => {
                        let listed: Vec<String> = values.iter().map(|(value, _)| value.to_string()).collect();
                        listed.join(" | ")
                    }
                    None => items.kind,
                };
                // The items' own range: a WIT `list<u8>` is `array of integer (0 to 255)`.
                shape.kind = match items.bounds.is_empty() {
                    true => format!("array of {of}"),
                    false => format!("array of {of} ({})", items.bounds.join(", ")),
                };
            }
        }
        shape.bounds.extend(bounds(schema));
        shape
    }
}

/// The schema a local `$ref` (`#/$defs/Name`, `#/definitions/Name`, any `#/…` pointer) points at.
fn resolve<'a>(root: &'a Value, reference: &str) -> Option<&'a Value> {
    let pointer = reference.strip_prefix('#')?;
    let decoded = pointer.replace("%25", "%").replace("%22", "\"");
    root.pointer(&decoded)
}

/// `type`, as written (`string`, or `string | null` for a list of types).
fn kind(schema: &Value) -> Option<String> {
    match schema.get("type")? {
        Value::String(kind) => Some(kind.clone()),
        Value::Array(kinds) => Some(kinds.iter().filter_map(Value::as_str).collect::<Vec<_>>().join(" | ")),
        _ => None,
    }
}

fn json_type(value: &Value) -> &'static str {
    match value {
        Value::Null => "null",
        Value::Bool(_) => "boolean",
        Value::Number(number) if number.is_i64() || number.is_u64() => "integer",
        Value::Number(_) => "number",
        Value::String(_) => "string",
        Value::Array(_) => "array",
        Value::Object(_) => "object",
    }
}

/// The ranges a schema sets: `1 to 10`, `> 0`, `1 to 64 characters`, `at least 1 item`, `pattern ^a`.
fn bounds(schema: &Value) -> Vec<String> {
    let get = |key: &str| schema.get(key).filter(|value| value.is_number()).map(Value::to_string);
    let mut bounds = Vec::new();
    let low = get("minimum").map(|n| (n, false)).or_else(|| get("exclusiveMinimum").map(|n| (n, true)));
    let high = get("maximum").map(|n| (n, false)).or_else(|| get("exclusiveMaximum").map(|n| (n, true)));
    match (low, high) {
        (Some((low, false)), Some((high, false))) => bounds.push(format!("{low} to {high}")),
        (low, high) => {
            if let Some((low, exclusive)) = low {
                bounds.push(format!("{} {low}", if exclusive { ">" } else { "≥" }));
            }
            if let Some((high, exclusive)) = high {
                bounds.push(format!("{} {high}", if exclusive { "<" } else { "≤" }));
            }
        }
    }
    if let Some(step) = get("multipleOf") {
        bounds.push(format!("a multiple of {step}"));
    }
    for (min, max, unit) in [("minLength", "maxLength", "character"), ("minItems", "maxItems", "item")] {
        let plural = |n: &str| if n == "1" { unit.to_owned() } else { format!("{unit}s") };
        match (get(min), get(max)) {
            (Some(low), Some(high)) if low == high => bounds.push(format!("exactly {low} {}", plural(&high))),
            (Some(low), Some(high)) => bounds.push(format!("{low} to {high} {}", plural(&high))),
            (Some(low), None) => bounds.push(format!("at least {low} {}", plural(&low))),
            (None, Some(high)) => bounds.push(format!("at most {high} {}", plural(&high))),
            (None, None) => {}
        }
    }
    if schema.get("uniqueItems") == Some(&Value::Bool(true)) {
        bounds.push("unique items".to_owned());
    }
    // Numbers' formats (`uint8`, `double`: schemars writes them) say nothing a range does not.
    if let Some(format) =
        schema.get("format").and_then(Value::as_str).filter(|_| kind(schema).as_deref() == Some("string"))
    {
        bounds.push(format!("format {format}"));
    }
    if let Some(pattern) = schema.get("pattern").and_then(Value::as_str) {
        bounds.push(format!("pattern {pattern}"));
    }
    bounds
}

/// A tool's hints as MCP names them; those not known are left out.
fn hints_json(hints: toolhost::catalog::Hints) -> Value {
    let known = [
        ("readOnlyHint", hints.read_only),
        ("destructiveHint", hints.destructive),
        ("idempotentHint", hints.idempotent),
        ("openWorldHint", hints.open_world),
    ];
    Value::Object(known.into_iter().filter_map(|(name, hint)| Some((name.to_owned(), Value::Bool(hint?)))).collect())
}

#[cfg(test)]
mod tests {
    use super::*;
    use schemars::JsonSchema;
    use serde::Deserialize;

    /// How long each step is.
    #[derive(Deserialize, JsonSchema)]
    #[serde(rename_all = "lowercase")]
    #[allow(dead_code)]
    enum Unit {
        /// Whole days.
        Days,
        /// Whole hours.
        Hours,
    }

    #[derive(Deserialize, JsonSchema)]
    #[serde(rename_all = "lowercase")]
    #[allow(dead_code)]
    enum Plain {
        Red,
        Green,
    }

    #[derive(Deserialize, JsonSchema)]
    #[allow(dead_code)]
    struct Args {
        /// The unit of the answer.
        unit: Unit,
        /// A colour, if any.
        colour: Option<Plain>,
        /// How many steps to take. This description is long enough that it has to be wrapped onto a second line rather than cut off.
        #[schemars(range(min = 1, max = 10))]
        #[serde(default = "three")]
        steps: u8,
        /// Names to greet.
        #[schemars(length(min = 1))]
        names: Vec<String>,
    }

    fn three() -> u8 {
        3
    }

    #[test]
    fn shows_enums_defaults_and_ranges_of_a_derived_schema() {
        let schema = serde_json::to_value(schemars::schema_for!(Args)).unwrap();
        let text = arguments(&schema).join("\n");
        let expected = [
            "    · unit: string (required) — The unit of the answer.",
            "        one of:",
            "          \"days\" — Whole days.",
            "          \"hours\" — Whole hours.",
            "    · colour: string | null — A colour, if any.",
            "        one of: \"red\", \"green\", null",
            "    · steps: integer, 1 to 10 — How many steps to take. This description is long enough that it has",
            "        to be wrapped onto a second line rather than cut off.",
            "        default: 3",
            "    · names: array of string, at least 1 item (required) — Names to greet.",
        ]
        .join("\n");
        assert_eq!(text, expected, "{schema:#}");
    }

    #[test]
    fn shows_hand_written_schemas() {
        let schema = json!({
            "type": "object",
            "required": ["mode"],
            "properties": {
                "mode": { "enum": ["fast", "slow"], "default": "fast" },
                "ratio": { "type": "number", "exclusiveMinimum": 0, "maximum": 1 },
                "code": { "type": "string", "minLength": 2, "maxLength": 2, "pattern": "^[A-Z]+$" },
                "anything": {},
            },
        });
        assert_eq!(
            arguments(&schema),
            [
                "    · mode: string (required)",
                "        one of: \"fast\", \"slow\"",
                "        default: \"fast\"",
                "    · ratio: number, > 0, ≤ 1",
                "    · code: string, exactly 2 characters, pattern ^[A-Z]+$",
                "    · anything: any",
            ]
        );
        // Items keep their range: a WIT `list<u8>`, a list of short names.
        let schema = json!({
            "type": "object",
            "properties": {
                "bytes": { "type": "array", "items": { "type": "integer", "minimum": 0, "maximum": 255 } },
                "names": { "type": "array", "items": { "type": "string", "maxLength": 8 }, "minItems": 1 },
            },
        });
        assert_eq!(
            arguments(&schema),
            [
                "    · bytes: array of integer (0 to 255)",
                "    · names: array of string (at most 8 characters), at least 1 item",
            ]
        );
        assert_eq!(arguments(&json!({ "type": "object" })), ["    · no arguments"]);
    }

    #[test]
    fn wraps_without_cutting() {
        let text = "word ".repeat(40);
        let lines = wrap(&text, "  ", "    ");
        assert_eq!(lines.len(), 3, "{lines:?}");
        assert!(lines.iter().all(|line| line.chars().count() <= WIDTH), "{lines:?}");
        assert_eq!(lines.concat().split_whitespace().count(), 40);
        // A doc comment's line breaks are spaces; paragraphs and list items keep theirs.
        assert_eq!(wrap("one\ntwo", "> ", "  "), ["> one two"]);
        assert_eq!(wrap("one\n\ntwo\n- three\n2. four", "> ", "  "), ["> one", "  two", "  - three", "  2. four"]);
        assert_eq!(counted(1, "tool"), "1 tool");
        assert_eq!(counted(2, "plugin"), "2 plugins");
    }
}

//! The path syntax of `json_query` and `json_transform`: a small
//! recursive-descent parser and the evaluation of a parsed path against a
//! document. Free of SDK types so that it is unit-tested natively.
//!
//! ```text
//! path    = ["$"] step*                 "" and "$" are the whole document
//! step    = "." name | ".*" | ".." (name | "*" | bracket) | bracket
//! bracket = "[" (integer | "*" | string | [integer] ":" [integer]) "]"
//! string  = '"' JSON string body '"' | "'" body with \' and \\ escapes "'"
//! name    = any characters but . [ ] ' " and whitespace
//! ```
//!
//! A leading name without a dot (`store.books`) is read as `.store.books`.
//! Negative indices count from the end; slices follow Python (`[1:3]`,
//! `[-2:]`); `..name` finds `name` at any depth.

use std::fmt;

use serde_json::Value;

/// How many steps a path may have; far more than any real document nests.
pub const MAX_STEPS: usize = 256;

/// One step of a path.
#[derive(Debug, Clone, PartialEq)]
pub enum Step {
    /// `.name` or `["name"]`: a key of an object.
    Key(String),
    /// `[3]` or `[-1]`: an element of an array, negative from the end.
    Index(i64),
    /// `[start:end]`: a range of elements of an array.
    Slice(Option<i64>, Option<i64>),
    /// `.*` or `[*]`: every element of an array or every value of an object.
    Wildcard,
    /// `..`: the value itself and everything inside it, at any depth.
    Descendants,
}

/// A parsed path.
#[derive(Debug, Clone, PartialEq)]
pub struct Path {
    pub steps: Vec<Step>,
}

impl Path {
    /// True when the path names at most one value: no wildcard, slice or `..`.
    pub fn is_definite(&self) -> bool {
        self.steps.iter().all(|step| matches!(step, Step::Key(_) | Step::Index(_)))
    }
}

impl fmt::Display for Path {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        if self.steps.is_empty() {
            return f.write_str("$");
        }
        display_steps(f, &self.steps)
    }
}

fn display_steps(f: &mut fmt::Formatter<'_>, steps: &[Step]) -> fmt::Result {
    let mut after_descendants = false;
    for step in steps {
        match step {
            Step::Key(key) if is_plain_name(key) => {
                if !after_descendants {
                    f.write_str(".")?;
                }
                f.write_str(key)?;
            }
            Step::Key(key) => {
                let quoted = serde_json::to_string(key).map_err(|_| fmt::Error)?;
                write!(f, "[{quoted}]")?;
            }
            Step::Index(index) => write!(f, "[{index}]")?,
            Step::Slice(start, end) => {
                f.write_str("[")?;
                if let Some(start) = start {
                    write!(f, "{start}")?;
                }
                f.write_str(":")?;
                if let Some(end) = end {
                    write!(f, "{end}")?;
                }
                f.write_str("]")?;
            }
            Step::Wildcard if after_descendants => f.write_str("*")?,
            Step::Wildcard => f.write_str("[*]")?,
            Step::Descendants => f.write_str("..")?,
        }
        after_descendants = *step == Step::Descendants;
    }
    Ok(())
}

fn is_name_char(c: char) -> bool {
    !matches!(c, '.' | '[' | ']' | '\'' | '"') && !c.is_whitespace()
}

fn is_plain_name(key: &str) -> bool {
    !key.is_empty() && key != "*" && key.chars().all(is_name_char)
}

/// Parses `text`. The error names the 1-based column of the problem and how
/// to write the path instead.
pub fn parse(text: &str) -> Result<Path, String> {
    let mut parser = Parser { chars: text.chars().collect(), pos: 0 };
    parser.path().map_err(|(index, message)| format!("invalid path `{text}` at column {}: {message}", index + 1))
}

type ParseResult<T> = Result<T, (usize, String)>;

struct Parser {
    chars: Vec<char>,
    pos: usize,
}

impl Parser {
    fn peek(&self) -> Option<char> {
        self.chars.get(self.pos).copied()
    }

    fn peek_at(&self, offset: usize) -> Option<char> {
        self.chars.get(self.pos + offset).copied()
    }

    fn skip_spaces(&mut self) {
        while self.peek().is_some_and(char::is_whitespace) {
            self.pos += 1;
        }
    }

    fn path(&mut self) -> ParseResult<Path> {
        let mut steps = Vec::new();
        self.skip_spaces();
        if self.peek() == Some('$') {
            self.pos += 1;
        } else if self.peek().is_some_and(is_name_char) {
            // `store.books` means `.store.books`.
            steps.push(Step::Key(self.name()));
        }
        loop {
            match self.peek() {
                None => break,
                Some(c) if c.is_whitespace() => {
                    self.skip_spaces();
                    if self.peek().is_some() {
                        return Err((
                            self.pos,
                            "spaces may not separate steps; for a key with spaces write [\"a key\"]".to_owned(),
                        ));
                    }
                }
                Some('.') if self.peek_at(1) == Some('.') => {
                    self.pos += 2;
                    steps.push(Step::Descendants);
                    let step = match self.after_dot() {
                        Step::Key(key) if key.is_empty() => {
                            if self.peek() != Some('[') {
                                return Err((
                                    self.pos,
                                    "expected a key, `*` or `[` after `..`, e.g. `..price`".to_owned(),
                                ));
                            }
                            self.bracket()?
                        }
                        step => step,
                    };
                    steps.push(step);
                }
                Some('.') => {
                    self.pos += 1;
                    match self.after_dot() {
                        Step::Key(key) if key.is_empty() => {
                            // A lone trailing `.` is the root, as in jq.
                            if self.peek().is_none() && steps.is_empty() {
                                break;
                            }
                            let hint = if self.peek() == Some('[') {
                                "write `[` directly after the previous step, e.g. `.items[0]`, not `.items.[0]`"
                            } else {
                                "expected a key or `*` after `.`, e.g. `.name`; for a key with special characters write [\"a.b\"]"
                            };
                            return Err((self.pos, hint.to_owned()));
                        }
                        step => steps.push(step),
                    }
                }
                Some('[') => {
                    let step = self.bracket()?;
                    steps.push(step);
                }
                Some(c) => {
                    return Err((self.pos, format!("unexpected `{c}`; a step starts with `.` or `[`")));
                }
            }
            if steps.len() > MAX_STEPS {
                return Err((self.pos, format!("a path may have at most {MAX_STEPS} steps")));
            }
        }
        Ok(Path { steps })
    }

    /// What follows a `.` or `..`: `*` or a name (empty if none).
    fn after_dot(&mut self) -> Step {
        if self.peek() == Some('*') && !self.peek_at(1).is_some_and(is_name_char) {
            self.pos += 1;
            return Step::Wildcard;
        }
        Step::Key(self.name())
    }

    fn name(&mut self) -> String {
        let mut name = String::new();
        while let Some(c) = self.peek().filter(|&c| is_name_char(c)) {
            name.push(c);
            self.pos += 1;
        }
        name
    }

    fn bracket(&mut self) -> ParseResult<Step> {
        let open = self.pos;
        self.pos += 1;
        self.skip_spaces();
        let step = match self.peek() {
            Some('*') => {
                self.pos += 1;
                Step::Wildcard
            }
            Some(quote @ ('"' | '\'')) => Step::Key(self.string(quote)?),
            Some(c) if c == '-' || c == ':' || c.is_ascii_digit() => self.index_or_slice()?,
            Some(']') => {
                return Err((
                    self.pos,
                    "empty `[]`; write an index such as [0], a key such as [\"name\"] or [*]".to_owned(),
                ));
            }
            None => return Err((open, "this `[` is never closed".to_owned())),
            Some(_) => {
                return Err((
                    self.pos,
                    "inside `[...]` write an index such as [0] or [-1], a slice such as [1:3], [*], or a quoted key such as [\"name\"]".to_owned(),
                ));
            }
        };
        self.skip_spaces();
        match self.peek() {
            Some(']') => {
                self.pos += 1;
                Ok(step)
            }
            None => Err((open, "this `[` is never closed".to_owned())),
            Some(c) => Err((self.pos, format!("expected `]`, found `{c}`"))),
        }
    }

    fn index_or_slice(&mut self) -> ParseResult<Step> {
        let start = self.integer()?;
        self.skip_spaces();
        if self.peek() != Some(':') {
            return match start {
                Some(index) => Ok(Step::Index(index)),
                None => Err((self.pos, "expected an index such as 0 or -1".to_owned())),
            };
        }
        self.pos += 1;
        self.skip_spaces();
        let end = self.integer()?;
        if self.peek() == Some(':') {
            return Err((self.pos, "slices take no step; write [start:end]".to_owned()));
        }
        Ok(Step::Slice(start, end))
    }

    fn integer(&mut self) -> ParseResult<Option<i64>> {
        let start = self.pos;
        let mut text = String::new();
        if self.peek() == Some('-') {
            text.push('-');
            self.pos += 1;
        }
        while let Some(c) = self.peek().filter(char::is_ascii_digit) {
            text.push(c);
            self.pos += 1;
        }
        match text.as_str() {
            "" => Ok(None),
            "-" => Err((start, "expected digits after `-`".to_owned())),
            _ => text.parse().map(Some).map_err(|_| (start, format!("index `{text}` is too large"))),
        }
    }

    fn string(&mut self, quote: char) -> ParseResult<String> {
        let open = self.pos;
        self.pos += 1;
        let mut raw = String::new();
        loop {
            match self.peek() {
                None => {
                    return Err((open, format!("this {quote} is never closed")));
                }
                Some(c) if c == quote => {
                    self.pos += 1;
                    break;
                }
                Some('\\') => {
                    raw.push('\\');
                    self.pos += 1;
                    match self.peek() {
                        Some(c) => raw.push(c),
                        None => return Err((open, format!("this {quote} is never closed"))),
                    }
                    self.pos += 1;
                }
                Some(c) => {
                    raw.push(c);
                    self.pos += 1;
                }
            }
        }
        if quote == '\'' {
            // Single quotes: only \' and \\ are escapes.
            let mut key = String::new();
            let mut chars = raw.chars();
            while let Some(c) = chars.next() {
                if c == '\\' {
                    match chars.next() {
                        Some(next @ ('\'' | '\\')) => key.push(next),
                        Some(next) => {
                            key.push('\\');
                            key.push(next);
                        }
                        None => key.push('\\'),
                    }
                } else {
                    key.push(c);
                }
            }
            return Ok(key);
        }
        serde_json::from_str(&format!("\"{raw}\"")).map_err(|err| {
            (open, format!("the quoted key is not a valid JSON string ({err}); escape `\"` and `\\` with a backslash"))
        })
    }
}

/// The values `path` selects in `document`, in document order.
///
/// A definite path (see [`Path::is_definite`]) that leads nowhere is an
/// error that says where it stopped and what is there instead; any other path
/// skips what does not match and may select nothing.
pub fn select<'a>(document: &'a Value, path: &Path) -> Result<Vec<&'a Value>, String> {
    select_in(document, path, "the document")
}

/// [`select`], with `root` naming `document` in error messages.
pub fn select_in<'a>(document: &'a Value, path: &Path, root: &str) -> Result<Vec<&'a Value>, String> {
    let definite = path.is_definite();
    let mut nodes = vec![document];
    for (i, step) in path.steps.iter().enumerate() {
        let mut next = Vec::new();
        for &node in &nodes {
            apply(node, step, &mut next);
        }
        if definite && next.is_empty() {
            let parent = nodes.first().copied().unwrap_or(document);
            let prefix = Path { steps: path.steps.get(..i).unwrap_or_default().to_vec() };
            return Err(miss(parent, &prefix, step, root));
        }
        nodes = next;
    }
    Ok(nodes)
}

/// Adds the values `step` selects in `node` to `out`.
fn apply<'a>(node: &'a Value, step: &Step, out: &mut Vec<&'a Value>) {
    match (step, node) {
        (Step::Key(key), Value::Object(map)) => out.extend(map.get(key)),
        (Step::Index(index), Value::Array(items)) => {
            out.extend(resolve_index(*index, items.len()).and_then(|i| items.get(i)));
        }
        (Step::Slice(start, end), Value::Array(items)) => {
            let len = items.len();
            let start = clamp_index(start.unwrap_or(0), len);
            let end = end.map_or(len, |end| clamp_index(end, len));
            out.extend(items.get(start..end.max(start)).unwrap_or_default());
        }
        (Step::Wildcard, Value::Array(items)) => out.extend(items),
        (Step::Wildcard, Value::Object(map)) => out.extend(map.values()),
        (Step::Descendants, _) => {
            // Pre-order with an explicit stack: no recursion on document depth.
            let mut stack = vec![node];
            while let Some(value) = stack.pop() {
                out.push(value);
                match value {
                    Value::Array(items) => stack.extend(items.iter().rev()),
                    Value::Object(map) => stack.extend(map.values().rev()),
                    _ => {}
                }
            }
        }
        _ => {}
    }
}

/// `index` (negative from the end) as a position in a `len`-long array.
fn resolve_index(index: i64, len: usize) -> Option<usize> {
    let len = i64::try_from(len).ok()?;
    let index = if index < 0 { len.checked_add(index)? } else { index };
    if (0..len).contains(&index) { usize::try_from(index).ok() } else { None }
}

/// A slice bound (negative from the end) clamped into `0..=len`.
fn clamp_index(index: i64, len: usize) -> usize {
    let len_i = i64::try_from(len).unwrap_or(i64::MAX);
    let index = if index < 0 { len_i.saturating_add(index) } else { index };
    usize::try_from(index.clamp(0, len_i)).unwrap_or(len)
}

/// Why `step` selected nothing in `parent`, reached by `prefix`.
fn miss(parent: &Value, prefix: &Path, step: &Step, root: &str) -> String {
    let at = if prefix.steps.is_empty() { root.to_owned() } else { format!("`{prefix}`") };
    let step_text = Path { steps: vec![step.clone()] }.to_string();
    match (step, parent) {
        (Step::Key(key), Value::Object(map)) => {
            format!("{at} has no key `{key}`; its keys are: {}", list_keys(map.keys().map(String::as_str), map.len()))
        }
        (Step::Index(index), Value::Array(items)) => match items.len() {
            0 => format!("{at} is an empty array, so there is no index {index}"),
            len => format!(
                "{at} has {len} element{}, so index {index} is out of range; use 0 to {} \
                 (or -1 to -{len} from the end)",
                if len == 1 { "" } else { "s" },
                len - 1
            ),
        },
        (Step::Key(_), Value::Array(items)) => format!(
            "{at} is an array of {} elements, not an object, so `{step_text}` does not apply; \
             pick an element first, e.g. `[0]{step_text}`, or all of them with `[*]{step_text}`",
            items.len()
        ),
        (Step::Index(_), Value::Object(map)) => format!(
            "{at} is an object, not an array, so `{step_text}` does not apply; its keys are: {}",
            list_keys(map.keys().map(String::as_str), map.len())
        ),
        (_, value) => format!("{at} is {}, so `{step_text}` does not apply", describe(value)),
    }
}

fn list_keys<'a>(keys: impl Iterator<Item = &'a str>, len: usize) -> String {
    const SHOWN: usize = 30;
    if len == 0 {
        return "none (it is empty)".to_owned();
    }
    let mut list: Vec<String> = keys.take(SHOWN).map(|key| format!("`{key}`")).collect();
    if len > SHOWN {
        list.push(format!("and {} more", len - SHOWN));
    }
    list.join(", ")
}

/// A short description of `value` for error messages, e.g. `a string ("abc")`.
pub fn describe(value: &Value) -> String {
    match value {
        Value::Null => "null".to_owned(),
        Value::Bool(b) => format!("a boolean ({b})"),
        Value::Number(n) => format!("a number ({n})"),
        Value::String(s) => {
            let shown: String = s.chars().take(40).collect();
            let more = if shown.len() < s.len() { "…" } else { "" };
            format!("a string ({:?}{more})", shown)
        }
        Value::Array(items) => match items.len() {
            1 => "an array of 1 element".to_owned(),
            len => format!("an array of {len} elements"),
        },
        Value::Object(map) => match map.len() {
            1 => "an object with 1 key".to_owned(),
            len => format!("an object with {len} keys"),
        },
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    fn key(k: &str) -> Step {
        Step::Key(k.to_owned())
    }

    #[test]
    fn accepts_path_syntax() {
        let cases: Vec<(&str, Vec<Step>)> = vec![
            ("", vec![]),
            ("$", vec![]),
            (".", vec![]),
            ("  ", vec![]),
            (".store.books[0].title", vec![key("store"), key("books"), Step::Index(0), key("title")]),
            ("$.store", vec![key("store")]),
            ("store.books", vec![key("store"), key("books")]),
            (".items[*].price", vec![key("items"), Step::Wildcard, key("price")]),
            (".items.*", vec![key("items"), Step::Wildcard]),
            (".a[\"key with spaces\"]", vec![key("a"), key("key with spaces")]),
            (".a['it\\'s']", vec![key("a"), key("it's")]),
            ("[\"a.b\"][\"q\\\"\\u00e9\"]", vec![key("a.b"), key("q\"é")]),
            ("[-1]", vec![Step::Index(-1)]),
            ("[ 2 ]", vec![Step::Index(2)]),
            ("[1:3]", vec![Step::Slice(Some(1), Some(3))]),
            ("[-2:]", vec![Step::Slice(Some(-2), None)]),
            ("[:2]", vec![Step::Slice(None, Some(2))]),
            ("[:]", vec![Step::Slice(None, None)]),
            ("..price", vec![Step::Descendants, key("price")]),
            ("..*", vec![Step::Descendants, Step::Wildcard]),
            ("..[0]", vec![Step::Descendants, Step::Index(0)]),
            (".first-name.été", vec![key("first-name"), key("été")]),
            (".0", vec![key("0")]),
            (".a*b", vec![key("a*b")]),
            (".a[0][1]", vec![key("a"), Step::Index(0), Step::Index(1)]),
        ];
        for (text, steps) in cases {
            assert_eq!(parse(text), Ok(Path { steps }), "{text:?}");
        }
    }

    #[test]
    fn rejects_bad_paths_with_column() {
        let cases = [
            (".a.", "column 4"),
            (".a..", "column 5"),
            (".a.[0]", "not `.items.[0]`"),
            (".a[", "column 3: this `[` is never closed"),
            (".a[0", "column 3: this `[` is never closed"),
            (".a[]", "empty `[]`"),
            (".a[x]", "column 4: inside `[...]`"),
            (".a[0x]", "column 5: expected `]`, found `x`"),
            (".a[\"b]", "never closed"),
            (".a[-]", "digits after `-`"),
            (".a[99999999999999999999]", "too large"),
            (".a[1:2:3]", "no step"),
            (".a b", "spaces may not separate steps"),
            (".a]", "unexpected `]`"),
            ("[\"\\x\"]", "not a valid JSON string"),
        ];
        for (text, expected) in cases {
            match parse(text) {
                Err(message) => assert!(message.contains(expected), "{text:?}: {message}"),
                Ok(path) => panic!("{text:?} parsed as {path:?}"),
            }
        }
    }

    #[test]
    fn rejects_paths_with_too_many_steps() {
        let long = "[0]".repeat(MAX_STEPS + 1);
        assert!(parse(&long).is_err_and(|err| err.contains("at most")));
    }

    #[test]
    fn accepts_display_that_parses_back() {
        for text in [".store.books[0].title", "[\"a b\"][-1][1:]", "..price", "..*", "[*].x", "[:2]"] {
            let path = parse(text).unwrap();
            assert_eq!(parse(&path.to_string()), Ok(path.clone()), "{text} shown as {path}");
        }
        assert_eq!(parse("$").unwrap().to_string(), "$");
    }

    fn store() -> Value {
        json!({
            "store": {
                "books": [
                    {"title": "Dune", "price": 9.5, "tags": ["sf"]},
                    {"title": "Emma", "price": 4, "tags": []},
                    {"title": "Ulysses", "price": 12}
                ],
                "owner": {"name": "Ann", "price": 0}
            }
        })
    }

    fn run(document: &Value, text: &str) -> Result<Value, String> {
        let path = parse(text)?;
        select(document, &path).map(|found| Value::Array(found.into_iter().cloned().collect()))
    }

    #[test]
    fn accepts_queries() {
        let doc = store();
        let cases = [
            (".store.books[0].title", json!(["Dune"])),
            (".store.books[-1].title", json!(["Ulysses"])),
            (".store.books[*].price", json!([9.5, 4, 12])),
            (".store.books[1:].title", json!(["Emma", "Ulysses"])),
            (".store.books[-2:-1].title", json!(["Emma"])),
            (".store.books[5:9]", json!([])),
            (".store.books[*].tags[0]", json!(["sf"])),
            ("..price", json!([9.5, 4, 12, 0])),
            (".store.owner.*", json!(["Ann", 0])),
            ("..tags[*]", json!(["sf"])),
            ("$", json!([doc.clone()])),
        ];
        for (text, expected) in cases {
            assert_eq!(run(&doc, text), Ok(expected), "{text}");
        }
    }

    #[test]
    fn rejects_definite_paths_that_miss_with_what_is_there() {
        let doc = store();
        let cases = [
            (".store.boks", "`.store` has no key `boks`; its keys are: `books`, `owner`"),
            (".store.books[3]", "`.store.books` has 3 elements, so index 3 is out of range"),
            (".store.books[-4]", "index -4 is out of range"),
            (".store.books.title", "pick an element first, e.g. `[0].title`"),
            (".store[0]", "`.store` is an object, not an array"),
            (".store.owner.name.first", "`.store.owner.name` is a string (\"Ann\")"),
            (".nope", "the document has no key `nope`"),
        ];
        for (text, expected) in cases {
            match run(&doc, text) {
                Err(message) => assert!(message.contains(expected), "{text}: {message}"),
                Ok(found) => panic!("{text} found {found}"),
            }
        }
    }

    #[test]
    fn accepts_deep_documents_without_recursion() {
        let mut deep = json!(1);
        for _ in 0..10_000 {
            deep = Value::Array(vec![deep]);
        }
        let path = parse("..*").unwrap();
        assert_eq!(select(&deep, &path).map(|found| found.len()), Ok(10_000));
        // serde_json drops nested values recursively: unnest by hand.
        let mut value = deep;
        while let Value::Array(mut items) = value {
            value = items.pop().unwrap_or(Value::Null);
        }
    }

    #[test]
    fn accepts_huge_indices_without_overflow() {
        let doc = json!([1, 2, 3]);
        assert_eq!(run(&doc, "[-9223372036854775808:9223372036854775807]"), Ok(json!([1, 2, 3])));
        assert!(run(&doc, "[-9223372036854775808]").is_err());
    }
}

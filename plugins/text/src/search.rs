//! Regular-expression search and replace behind `regex_find` and
//! `regex_replace`, free of SDK types so that it is unit-tested natively.
//!
//! Patterns use the `regex` crate's syntax (no look-around or backreferences,
//! linear-time matching). Compiling is bounded by [`SIZE_LIMIT`] and
//! [`NEST_LIMIT`] so that a pattern such as `\w{1000}{1000}` is refused
//! instead of exhausting the plugin's memory.

use std::collections::BTreeMap;

use regex::{Regex, RegexBuilder};
use serde::Serialize;

/// The most memory a compiled pattern (and its lazy DFA) may use.
pub const SIZE_LIMIT: usize = 4 << 20;
/// How deeply groups and repetitions may nest in a pattern.
pub const NEST_LIMIT: u32 = 64;
/// The longest text `regex_replace` builds, far above the host's default
/// output limit, so that a runaway replacement fails with advice rather than
/// by running out of memory.
pub const MAX_RESULT_BYTES: usize = 16 << 20;
/// The most matches `regex_find` returns in one call.
pub const MAX_LIMIT: usize = 1000;

/// Compiles `pattern`; the error says what is wrong with it.
pub fn compile(pattern: &str, case_insensitive: bool) -> Result<Regex, String> {
    RegexBuilder::new(pattern)
        .case_insensitive(case_insensitive)
        .size_limit(SIZE_LIMIT)
        .dfa_size_limit(SIZE_LIMIT)
        .nest_limit(NEST_LIMIT)
        .build()
        .map_err(|err| match err {
            regex::Error::CompiledTooBig(limit) => format!(
                "the pattern compiles to more than {limit} bytes; use smaller repetition \
                 counts (e.g. `\\w{{1,50}}` rather than `\\w{{1,5000}}`), fewer Unicode \
                 classes, or `(?-u:\\w)` for ASCII-only classes"
            ),
            regex::Error::Syntax(message) => format!(
                "invalid regular expression: {message}\nThe syntax is that of Rust's regex \
                 crate: no look-around and no backreferences; escape special characters \
                 such as `.`, `(` or `[` with a backslash"
            ),
            other => format!("invalid regular expression: {other}"),
        })
}

/// One match of `regex_find`.
#[derive(Debug, Serialize, PartialEq)]
pub struct Found {
    /// The matched text.
    pub text: String,
    /// Offset of the first character, counted in characters from 0.
    pub start: usize,
    /// Offset just past the last character.
    pub end: usize,
    /// 1-based line of the first character.
    pub line: usize,
    /// 1-based column (in characters) of the first character.
    pub column: usize,
    /// The numbered groups 1, 2, ...: their text, or null where a group did
    /// not take part in the match. Absent when the pattern has no groups.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub groups: Option<Vec<Option<String>>>,
    /// The named groups by name. Absent when the pattern has none.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub named: Option<BTreeMap<String, Option<String>>>,
}

/// What `regex_find` returns.
#[derive(Debug, Serialize, PartialEq)]
pub struct FindResult {
    /// How many matches there are in all.
    pub total: usize,
    /// How many are listed in `matches` (at most the limit).
    pub returned: usize,
    /// The first matches, in order.
    pub matches: Vec<Found>,
}

/// Tracks character, line and column positions while walking forward
/// through a text by byte offsets.
struct Cursor<'a> {
    text: &'a str,
    byte: usize,
    char_offset: usize,
    line: usize,
    column: usize,
}

impl<'a> Cursor<'a> {
    fn new(text: &'a str) -> Self {
        Cursor { text, byte: 0, char_offset: 0, line: 1, column: 1 }
    }

    /// Moves to byte offset `to` (at or after the current one, on a
    /// character boundary, as regex match offsets are).
    fn advance(&mut self, to: usize) {
        for c in self.text.get(self.byte..to).unwrap_or_default().chars() {
            self.char_offset += 1;
            if c == '\n' {
                self.line += 1;
                self.column = 1;
            } else {
                self.column += 1;
            }
        }
        self.byte = to.max(self.byte);
    }
}

/// The first `limit` matches of `regex` in `text`, and how many there are.
pub fn find(regex: &Regex, text: &str, limit: usize) -> FindResult {
    let names: Vec<(usize, &str)> =
        regex.capture_names().enumerate().filter_map(|(i, name)| name.map(|name| (i, name))).collect();
    let group_count = regex.captures_len().saturating_sub(1);
    let mut cursor = Cursor::new(text);
    let mut matches = Vec::new();
    for captures in regex.captures_iter(text).take(limit.min(MAX_LIMIT)) {
        let Some(whole) = captures.get(0) else {
            continue;
        };
        cursor.advance(whole.start());
        let text_of = |i: usize| captures.get(i).map(|m| m.as_str().to_owned());
        let matched = whole.as_str().to_owned();
        matches.push(Found {
            start: cursor.char_offset,
            end: cursor.char_offset + matched.chars().count(),
            line: cursor.line,
            column: cursor.column,
            text: matched,
            groups: (group_count > 0).then(|| (1..=group_count).map(text_of).collect()),
            named: (!names.is_empty()).then(|| names.iter().map(|&(i, name)| (name.to_owned(), text_of(i))).collect()),
        });
    }
    let returned = matches.len();
    let total = if returned < limit.min(MAX_LIMIT) { returned } else { regex.find_iter(text).count() };
    FindResult { total, returned, matches }
}

/// What `regex_replace` returns.
#[derive(Debug, Serialize, PartialEq)]
pub struct ReplaceResult {
    /// The text after replacing.
    pub text: String,
    /// How many matches were replaced.
    pub replacements: usize,
}

/// `text` with the first `limit` matches (all when `None`) replaced by
/// `replacement`, in which `$1`, `${1}`, `$name` and `${name}` stand for
/// groups and `$$` for a `$`.
pub fn replace(regex: &Regex, text: &str, replacement: &str, limit: Option<usize>) -> Result<ReplaceResult, String> {
    check_replacement(regex, replacement)?;
    let limit = limit.filter(|&n| n > 0).unwrap_or(usize::MAX);
    let mut out = String::with_capacity(text.len());
    let mut last = 0;
    let mut replacements = 0;
    for captures in regex.captures_iter(text).take(limit) {
        let Some(whole) = captures.get(0) else {
            continue;
        };
        out.push_str(text.get(last..whole.start()).unwrap_or_default());
        captures.expand(replacement, &mut out);
        last = whole.end();
        replacements += 1;
        if out.len() > MAX_RESULT_BYTES {
            return Err(format!(
                "the replaced text would be larger than {} MiB; the pattern matches {} times \
                 or more, so use a pattern that matches less often (an empty match such as \
                 `x*` matches between every two characters) or a shorter replacement",
                MAX_RESULT_BYTES >> 20,
                replacements
            ));
        }
    }
    out.push_str(text.get(last..).unwrap_or_default());
    Ok(ReplaceResult { text: out, replacements })
}

/// Checks that every group reference in `replacement` names a group of
/// `regex`, read the way the regex crate reads them: `$$` is a `$`;
/// `${...}` is the name or number in the braces; `$` then the longest run of
/// letters, digits and `_` is a name, or a number if all digits; any other
/// `$` is itself.
fn check_replacement(regex: &Regex, replacement: &str) -> Result<(), String> {
    let groups = regex.captures_len();
    let mut rest = replacement;
    while let Some(at) = rest.find('$') {
        let after = rest.get(at + 1..).unwrap_or_default();
        let (reference, braced, consumed) = if after.starts_with('$') {
            rest = after.get(1..).unwrap_or_default();
            continue;
        } else if let Some(inner) = after.strip_prefix('{') {
            match inner.find('}') {
                Some(close) => (inner.get(..close).unwrap_or_default(), true, close + 2),
                None => ("", true, 1),
            }
        } else {
            let len = after.find(|c: char| !(c.is_ascii_alphanumeric() || c == '_')).unwrap_or(after.len());
            (after.get(..len).unwrap_or_default(), false, len)
        };
        rest = after.get(consumed.min(after.len())..).unwrap_or_default();
        if reference.is_empty() {
            continue;
        }
        let exists = match reference.parse::<usize>() {
            Ok(index) => index < groups,
            Err(_) => regex.capture_names().flatten().any(|name| name == reference),
        };
        if exists {
            continue;
        }
        let digits: String = reference.chars().take_while(char::is_ascii_digit).collect();
        let hint = if !braced && !digits.is_empty() && digits.len() < reference.len() {
            let tail = reference.get(digits.len()..).unwrap_or_default();
            format!(
                "`${reference}` is read as a group named `{reference}`; to put group {digits} \
                 before `{tail}`, write `${{{digits}}}{tail}`"
            )
        } else {
            format!(
                "the pattern has {} numbered group(s){}; write `$$` for a literal `$`",
                groups.saturating_sub(1),
                named_list(regex)
            )
        };
        return Err(format!("the replacement refers to group `{reference}`, which the pattern does not have; {hint}"));
    }
    Ok(())
}

fn named_list(regex: &Regex) -> String {
    let names: Vec<&str> = regex.capture_names().flatten().collect();
    if names.is_empty() { String::new() } else { format!(" and the named group(s) {}", names.join(", ")) }
}

#[cfg(test)]
mod tests {
    use super::*;
    use toolhost_sdk::serde_json;

    fn re(pattern: &str) -> Regex {
        compile(pattern, false).unwrap()
    }

    #[test]
    fn accepts_find_with_positions_and_groups() {
        let text = "née 2021-03-04\nand 1999-12-31";
        let result = find(&re(r"(?<year>\d{4})-(\d\d)-(\d\d)"), text, 10);
        assert_eq!(result.total, 2);
        assert_eq!(result.returned, 2);
        let first = &result.matches[0];
        assert_eq!((first.start, first.end, first.line, first.column), (4, 14, 1, 5));
        assert_eq!(first.text, "2021-03-04");
        assert_eq!(first.groups, Some(vec![Some("2021".to_owned()), Some("03".to_owned()), Some("04".to_owned())]));
        assert_eq!(first.named, Some(BTreeMap::from([("year".to_owned(), Some("2021".to_owned()))])));
        let second = &result.matches[1];
        assert_eq!((second.start, second.line, second.column), (19, 2, 5));
    }

    #[test]
    fn accepts_find_limits_and_counts_the_rest() {
        let result = find(&re(r"\w+"), "a b c d e", 2);
        assert_eq!((result.total, result.returned), (5, 2));
        let result = find(&re(r"\w+"), "a b c", 0);
        assert_eq!((result.total, result.returned), (3, 0));
        let result = find(&re("x"), &"x".repeat(5000), usize::MAX);
        assert_eq!((result.total, result.returned), (5000, MAX_LIMIT));
    }

    #[test]
    fn accepts_optional_groups_as_null_and_no_groups_as_absent() {
        let result = find(&re("a(b)?"), "a", 10);
        assert_eq!(result.matches[0].groups, Some(vec![None]));
        let json = serde_json::to_value(find(&re("a"), "a", 10)).unwrap();
        assert_eq!(
            json,
            serde_json::json!({"total": 1, "returned": 1, "matches": [
                {"text": "a", "start": 0, "end": 1, "line": 1, "column": 1}
            ]})
        );
    }

    #[test]
    fn accepts_unicode_classes_and_case_insensitivity() {
        let result = find(&compile(r"\bÉTÉ\b", true).unwrap(), "un été chaud", 10);
        assert_eq!(result.total, 1);
        assert_eq!(find(&re(r"(?i)straße"), "STRASSE Straße", 10).total, 1);
        assert_eq!(find(&re(r"\d+"), "٣ and 3", 10).total, 2);
        assert_eq!(find(&re(r"\s+"), "a\u{a0}b", 10).total, 1);
        assert_eq!(find(&re(r"\p{Lu}\p{L}*"), "Ökonomie und Ärger", 10).total, 2);
    }

    #[test]
    fn accepts_empty_matches() {
        let result = find(&re("x*"), "ab", 10);
        assert_eq!(result.total, 3);
        assert_eq!(result.matches[2].start, 2);
    }

    #[test]
    fn rejects_bad_and_oversized_patterns() {
        assert!(compile("(unclosed", false).is_err_and(|e| e.contains("invalid regular expression")));
        assert!(compile("a{1000}{1000}", false).is_err_and(|e| e.contains("compiles to more than")));
        assert!(compile(r"\w{10000}", false).is_err_and(|e| e.contains("compiles to more than")));
        let deep = format!("{}a{}", "(".repeat(200), ")".repeat(200));
        assert!(compile(&deep, false).is_err());
        assert!(compile(r"(?<=a)b", false).is_err_and(|e| e.contains("look-around")));
    }

    #[test]
    fn accepts_replacements() {
        // (pattern, text, replacement, limit, result, replacements)
        type Case<'a> = (&'a str, &'a str, &'a str, Option<usize>, &'a str, usize);
        let cases: &[Case<'_>] = &[
            (r"(\w+)@(\w+)", "a@b c@d", "$2@$1", None, "b@a d@c", 2),
            (r"(\w+)@(\w+)", "a@b c@d", "$2@$1", Some(1), "b@a c@d", 1),
            (r"(?<user>\w+)@\w+", "a@b", "${user}!", None, "a!", 1),
            (r"(\d+)", "7 apples", "${1}0", None, "70 apples", 1),
            (r"\d+", "7 apples", "$$5", None, "$5 apples", 1),
            (r"x", "abc", "y", None, "abc", 0),
            (r"\s+", "a  b\tc", " ", Some(0), "a b c", 2),
            (r"$", "end", "!", None, "end!", 1),
            (r"a", "a", "cost: $ 5", None, "cost: $ 5", 1),
        ];
        for &(pattern, text, replacement, limit, expected, count) in cases {
            let result = replace(&re(pattern), text, replacement, limit).unwrap();
            assert_eq!(result.text, expected, "{pattern} -> {replacement} in {text:?}");
            assert_eq!(result.replacements, count, "{pattern} -> {replacement} in {text:?}");
        }
    }

    #[test]
    fn rejects_replacements_past_the_size_limit() {
        let text = "x".repeat(1 << 16);
        let err = replace(&re(""), &text, &"y".repeat(1 << 10), None).unwrap_err();
        assert!(err.contains("larger than 16 MiB"), "{err}");
    }

    #[test]
    fn rejects_references_to_missing_groups() {
        let cases = [
            (r"(\d+)", "$1a", "write `${1}a`"),
            (r"(\d+)", "$2", "the pattern has 1 numbered group(s)"),
            (r"(?<n>\d+)", "${name}", "named group(s) n"),
            (r"\d+", "$5.00", "group `5`"),
        ];
        for (pattern, replacement, expected) in cases {
            match replace(&re(pattern), "1", replacement, None) {
                Err(message) => assert!(message.contains(expected), "{replacement}: {message}"),
                Ok(result) => panic!("{replacement} gave {result:?}"),
            }
        }
    }
}

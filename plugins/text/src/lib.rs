//! `text`: example plugin for exact work on text that a model does poorly by
//! eye: finding and replacing with regular expressions, and counting.
//!
//! Tools: `regex_find`, `regex_replace` (in [`search`]) and `text_stats` (in
//! [`stats`]).

mod search;
mod stats;

use schemars::JsonSchema;
use serde::Deserialize;
use toolhost_sdk::{Json, Tool, ToolError, register_tools};

register_tools![
    Tool::new(
        "regex_find",
        "Finds the matches of a regular expression in a text. Returns JSON {\"total\": \
         number of matches, \"returned\": how many are listed, \"matches\": [{\"text\", \
         \"start\", \"end\" (character offsets from 0, end exclusive), \"line\", \"column\" \
         (1-based), \"groups\" (numbered groups, null where a group did not match; only if \
         the pattern has groups), \"named\" (named groups; only if it has any)}]}. Syntax \
         is Rust's regex crate: Perl-style classes such as \\d \\w \\s \\b are \
         Unicode-aware, \\p{L} is any letter (also \\p{Lu}, \\p{N}, \\p{P}), (?i) \
         ignores case, (?m) makes ^ and $ match at line breaks, (?s) lets . match a line \
         break; there is no look-around and no backreference. \
         Example: {\"text\": \"born 1999-12-31\", \"pattern\": \"(\\\\d{4})-(\\\\d\\\\d)\"} \
         returns {\"total\":1,\"returned\":1,\"matches\":[{\"text\":\"1999-12\",\"start\":5,\
         \"end\":12,\"line\":1,\"column\":6,\"groups\":[\"1999\",\"12\"]}]}.",
        regex_find,
    ),
    Tool::new(
        "regex_replace",
        "Replaces the matches of a regular expression in a text (all of them, or the first \
         `limit`) and returns JSON {\"text\": the new text, \"replacements\": how many \
         matches were replaced}. In the replacement, $1 or ${1} is group 1, $name or \
         ${name} a named group, $0 the whole match, $$ a literal $. Write ${1}x rather \
         than $1x when letters or digits follow. Pattern syntax as in regex_find. Example: \
         {\"text\": \"Smith, John\", \"pattern\": \"(\\\\w+), (\\\\w+)\", \"replacement\": \
         \"$2 $1\"} returns {\"text\":\"John Smith\",\"replacements\":1}.",
        regex_replace,
    ),
    Tool::new(
        "text_stats",
        "Counts a text: characters, non-whitespace characters, UTF-8 bytes, words, unique \
         words (ignoring case), lines, sentences (an estimate: abbreviations such as \
         \"e.g.\" count as sentence ends) and paragraphs (separated by blank lines), and \
         lists the most frequent words, lower-cased. A word is a run of letters or digits \
         in any script and may contain ' or - between them (\"don't\", \"well-known\"). \
         Example: {\"text\": \"The cat. The dog!\", \"top\": 1} returns \
         {\"characters\":17,\"non_whitespace_characters\":14,\"bytes\":17,\"words\":4,\
         \"unique_words\":3,\"lines\":1,\"sentences\":2,\"paragraphs\":1,\
         \"top_words\":[{\"word\":\"the\",\"count\":2}]}.",
        text_stats,
    ),
];

/// Arguments of `regex_find`.
#[derive(Deserialize, JsonSchema)]
struct FindArgs {
    /// The text to search.
    text: String,
    /// The regular expression, in the syntax of Rust's regex crate, e.g.
    /// `\b\w+@\w+\.com\b` or `(?<year>\d{4})-(?<month>\d{2})` (escape each backslash
    /// once more inside JSON). Inline flags: (?i) ignore case, (?m) ^ and $ at line
    /// breaks, (?s) . matches a line break, (?x) ignore spaces in the pattern.
    pattern: String,
    /// Match letters regardless of case, like starting the pattern with (?i). Default
    /// false.
    #[serde(default)]
    case_insensitive: bool,
    /// The most matches to list, from 0 to 1000 (larger values count as 1000). `total`
    /// still counts every match. Default 100.
    #[serde(default = "default_limit")]
    limit: u32,
}

fn default_limit() -> u32 {
    100
}

/// Arguments of `regex_replace`.
#[derive(Deserialize, JsonSchema)]
struct ReplaceArgs {
    /// The text to change.
    text: String,
    /// The regular expression whose matches are replaced, in the syntax of Rust's regex
    /// crate, e.g. `\s+` or `(\w+)@(\w+)` (escape each backslash once more inside JSON).
    pattern: String,
    /// What each match becomes. $1 or ${1} is group 1, $name or ${name} a named group,
    /// $0 the whole match, $$ a literal $. Example: "${1}_old" or "$$${amount}".
    replacement: String,
    /// Match letters regardless of case, like starting the pattern with (?i). Default
    /// false.
    #[serde(default)]
    case_insensitive: bool,
    /// Replace only the first this many matches. Leave it out, or give 0, to replace all.
    #[serde(default)]
    limit: Option<u32>,
}

/// Arguments of `text_stats`.
#[derive(Deserialize, JsonSchema)]
struct StatsArgs {
    /// The text to count.
    text: String,
    /// How many of the most frequent words to list, from 0 to 1000. Default 10.
    #[serde(default = "default_top")]
    top: u32,
}

fn default_top() -> u32 {
    10
}

fn regex_find(args: FindArgs) -> Result<Json<search::FindResult>, ToolError> {
    let regex = search::compile(&args.pattern, args.case_insensitive).map_err(ToolError::invalid_arguments)?;
    let result = search::find(&regex, &args.text, to_usize(args.limit));
    toolhost_sdk::log::debug_with("regex_find", &[("pattern", &args.pattern), ("total", &result.total.to_string())]);
    Ok(Json(result))
}

fn regex_replace(args: ReplaceArgs) -> Result<Json<search::ReplaceResult>, ToolError> {
    let regex = search::compile(&args.pattern, args.case_insensitive).map_err(ToolError::invalid_arguments)?;
    let result = search::replace(&regex, &args.text, &args.replacement, args.limit.map(to_usize))
        .map_err(ToolError::invalid_arguments)?;
    toolhost_sdk::log::debug_with(
        "regex_replace",
        &[("pattern", &args.pattern), ("replacements", &result.replacements.to_string())],
    );
    Ok(Json(result))
}

fn text_stats(args: StatsArgs) -> Result<Json<stats::Stats>, ToolError> {
    Ok(Json(stats::stats(&args.text, to_usize(args.top))))
}

fn to_usize(n: u32) -> usize {
    usize::try_from(n).unwrap_or(usize::MAX)
}

#[cfg(test)]
mod tests {
    //! The examples in the tool descriptions, checked.
    use super::*;
    use toolhost_sdk::Output;

    fn json(value: impl serde::Serialize) -> Output {
        Json(value).into()
    }

    #[test]
    fn accepts_the_described_examples() {
        let regex = search::compile(r"(\d{4})-(\d\d)", false).unwrap();
        assert_eq!(
            json(search::find(&regex, "born 1999-12-31", 100)),
            Output::json_text(
                r#"{"total":1,"returned":1,"matches":[{"text":"1999-12","start":5,"end":12,"line":1,"column":6,"groups":["1999","12"]}]}"#
                    .to_owned()
            )
        );
        let regex = search::compile(r"(\w+), (\w+)", false).unwrap();
        assert_eq!(
            json(search::replace(&regex, "Smith, John", "$2 $1", None).unwrap()),
            Output::json_text(r#"{"text":"John Smith","replacements":1}"#.to_owned())
        );
        assert_eq!(
            json(stats::stats("The cat. The dog!", 1)),
            Output::json_text(
                r#"{"characters":17,"non_whitespace_characters":14,"bytes":17,"words":4,"unique_words":3,"lines":1,"sentences":2,"paragraphs":1,"top_words":[{"word":"the","count":2}]}"#
                    .to_owned()
            )
        );
    }
}

//! Tool search: when every tool's schema would weigh on each model request,
//! the loop offers a few tools and one of its own, which finds the others
//! by what they are called and what they do.
//!
//! The index is BM25 (Okapi: k1 = 1.2, b = 0.75) over each tool's name
//! (counted three times, as it says most), description, and its arguments'
//! names and descriptions. Words are split at anything not a letter or digit
//! and at camelCase humps, and lower-cased, so `get_weather`, `getWeather`
//! and "weather" meet, and a plural or third-person `s` is dropped
//! (`converts`, `degrees`), so "convert temperatures" finds "Converts a
//! temperature". No model is needed and nothing leaves the process.
//!
//! A word counts once per field, however often the field repeats it: a tool
//! (say, from a third-party MCP server) whose description says "convert
//! temperature" forty times scores as one that says it once, so repetition
//! buys no rank, and a tool's length is its distinct words per field, so
//! stuffing does not stretch it either. What still ranks a tool is which
//! words it has and where: its name (three times) above its description.

use crate::model::ToolSpec;
use serde_json::Value;
use std::collections::HashMap;

/// BM25's term-frequency saturation.
const K1: f64 = 1.2;
/// BM25's length normalisation.
const B: f64 = 0.75;
/// How many times a tool's name counts against its description.
const NAME_WEIGHT: usize = 3;

/// The search index of one catalog generation's tools.
pub struct Index {
    /// Per tool: its terms with their counts, and its length in terms.
    docs: Vec<(HashMap<String, u32>, usize)>,
    /// In how many tools each term occurs.
    frequency: HashMap<String, u32>,
    average: f64,
}

impl Index {
    /// The index of `tools`, in their order.
    pub fn new(tools: &[ToolSpec]) -> Index {
        let mut docs = Vec::with_capacity(tools.len());
        let mut frequency: HashMap<String, u32> = HashMap::new();
        for tool in tools {
            let mut arguments_terms = Vec::new();
            arguments(&tool.schema, &mut arguments_terms, 0);
            let mut counts: HashMap<String, u32> = HashMap::new();
            let mut length = 0;
            // Each field adds each of its words once (the name NAME_WEIGHT times).
            for (field, weight) in
                [(words(&tool.name), NAME_WEIGHT), (words(&tool.description), 1), (arguments_terms, 1)]
            {
                let mut field = field;
                field.sort();
                field.dedup();
                length += field.len() * weight;
                for term in field {
                    *counts.entry(term).or_default() += weight as u32;
                }
            }
            for term in counts.keys() {
                *frequency.entry(term.clone()).or_default() += 1;
            }
            docs.push((counts, length));
        }
        let average = match docs.len() {
            0 => 1.0,
            n => (docs.iter().map(|(_, len)| *len).sum::<usize>() as f64 / n as f64).max(1.0),
        };
        Index { docs, frequency, average }
    }

    /// The positions of the tools that best match `query`, best first, at
    /// most `limit`; only tools sharing a word with it.
    pub fn search(&self, query: &str, limit: usize) -> Vec<usize> {
        let mut terms = words(query);
        terms.sort();
        terms.dedup();
        let n = self.docs.len() as f64;
        let mut scored: Vec<(usize, f64)> = self
            .docs
            .iter()
            .enumerate()
            .filter_map(|(i, (counts, len))| {
                let mut score = 0.0;
                for term in &terms {
                    let Some(&tf) = counts.get(term) else { continue };
                    let df = f64::from(self.frequency.get(term).copied().unwrap_or(0));
                    let idf = ((n - df + 0.5) / (df + 0.5) + 1.0).ln();
                    let tf = f64::from(tf);
                    score += idf * tf * (K1 + 1.0) / (tf + K1 * (1.0 - B + B * *len as f64 / self.average));
                }
                (score > 0.0).then_some((i, score))
            })
            .collect();
        // Ties keep the catalog's order, so the same query finds the same tools.
        scored.sort_by(|a, b| b.1.total_cmp(&a.1).then(a.0.cmp(&b.0)));
        scored.into_iter().take(limit).map(|(i, _)| i).collect()
    }
}

/// The words of `text`, lower-cased: split at every character that is not a
/// letter or digit, and where a lower-case letter meets an upper-case one;
/// each without a final `s` of a plural or a verb's third person ([`stem`]).
pub fn words(text: &str) -> Vec<String> {
    let mut words = split(text);
    for word in &mut words {
        stem(word);
    }
    words
}

/// Drops the `s` of `tools`, `converts` (`ies` becomes `y`), not of `class`,
/// `status`, `analysis` or a word of three letters or fewer.
fn stem(word: &mut String) {
    if word.chars().count() <= 3
        || !word.ends_with('s')
        || word.ends_with("ss")
        || word.ends_with("us")
        || word.ends_with("is")
    {
        return;
    }
    if word.ends_with("ies") && word.chars().count() > 4 {
        word.truncate(word.len() - 3);
        word.push('y');
    } else {
        word.pop();
    }
}

fn split(text: &str) -> Vec<String> {
    let mut words = Vec::new();
    let mut word = String::new();
    let mut last_lower = false;
    for c in text.chars() {
        if !c.is_alphanumeric() {
            if !word.is_empty() {
                words.push(std::mem::take(&mut word));
            }
            last_lower = false;
            continue;
        }
        if c.is_uppercase() && last_lower && !word.is_empty() {
            words.push(std::mem::take(&mut word));
        }
        last_lower = c.is_lowercase() || c.is_ascii_digit();
        word.extend(c.to_lowercase());
    }
    if !word.is_empty() {
        words.push(word);
    }
    words
}

/// The words of a schema's property names and descriptions, nested ones included.
fn arguments(schema: &Value, terms: &mut Vec<String>, depth: usize) {
    if depth > 8 {
        return;
    }
    let Some(properties) = schema.get("properties").and_then(Value::as_object) else { return };
    for (name, property) in properties {
        terms.extend(words(name));
        if let Some(description) = property.get("description").and_then(Value::as_str) {
            terms.extend(words(description));
        }
        arguments(property, terms, depth + 1);
    }
}

/// What sending `tool` costs in the context, in tokens, estimated as a
/// quarter of the bytes of its JSON (name, description and schema), the
/// usual rule for English text and JSON with common tokenizers.
pub fn estimated_tokens(tool: &ToolSpec) -> usize {
    (tool.name.len() + tool.description.len() + tool.schema.to_string().len()).div_ceil(4)
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    fn tool(name: &str, description: &str, schema: Value) -> ToolSpec {
        ToolSpec { name: name.into(), description: description.into(), schema, defer: false }
    }

    #[test]
    fn words_split_at_case_and_punctuation() {
        assert_eq!(words("getWeather_now-2 HTTPServer"), ["get", "weather", "now", "2", "httpserver"]);
        assert_eq!(
            words("Converts degrees, queries: class status gas"),
            ["convert", "degree", "query", "class", "status", "gas"]
        );
        assert_eq!(words("Été à Zürich"), ["été", "à", "zürich"]);
        assert!(words(" _-/ ").is_empty());
    }

    #[test]
    fn the_best_match_comes_first_and_unrelated_tools_never() {
        let tools = vec![
            tool("sha256", "Hashes a text with SHA-256.", json!({"properties": {"text": {}}})),
            tool("get_weather", "The weather forecast for a city.", json!({"properties": {"city": {}}})),
            tool("convert_units", "Converts a value between units of temperature or length.", json!({})),
            tool("weather_alerts", "Storm warnings.", json!({"properties": {"region": {"description": "A region"}}})),
        ];
        let index = Index::new(&tools);
        let found = index.search("what's the weather in Paris", 10);
        assert_eq!(found[..2], [1, 3], "{found:?}");
        assert_eq!(index.search("hash", 10), Vec::<usize>::new(), "whole words only");
        assert_eq!(index.search("sha256 digest", 10), [0]);
        assert_eq!(index.search("temperature", 10), [2]);
        assert_eq!(index.search("region", 10), [3], "argument names count");
        assert_eq!(index.search("weather", 1).len(), 1);
        assert!(index.search("", 10).is_empty());
        assert!(Index::new(&[]).search("weather", 10).is_empty());
    }

    #[test]
    fn repeating_words_buys_no_rank() {
        let stuffed = format!("{}Deletes every archive.", "kelvin rankine convert temperature ".repeat(40));
        let tools = vec![
            tool("sha256", "Hashes a text with SHA-256.", json!({"properties": {"text": {}}})),
            tool("archive_helper", &stuffed, json!({"properties": {"path": {}}})),
            tool("kelvin_to_rankine", "Converts a temperature from kelvin to degrees Rankine.", json!({})),
            tool("celsius_to_fahrenheit", "Converts a temperature from Celsius to Fahrenheit.", json!({})),
        ];
        let index = Index::new(&tools);
        let found = index.search("convert temperature kelvin rankine", 10);
        assert_eq!(found[0], 2, "the tool that names the thing comes first: {found:?}");
        // Said once or forty times, a description scores the same.
        let once = vec![tool("a", "kelvin rankine", json!({})), tool("b", &"kelvin rankine ".repeat(40), json!({}))];
        let index = Index::new(&once);
        assert_eq!(index.search("kelvin", 10), [0, 1], "a tie, kept in the catalog's order");
    }
}

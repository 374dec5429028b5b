//! The counts behind `text_stats`, free of SDK types so that they are
//! unit-tested natively.
//!
//! A word is a run of letters and digits, in any script, that may contain a
//! single `'`, `’` or `-` between two of them ("don't", "well-known"). A
//! sentence ends at `.`, `!`, `?` or `…` (possibly followed by closing quotes
//! or brackets) before whitespace or the end of the text, so abbreviations
//! such as "e.g." are counted as sentence ends: the count is an estimate.

use std::collections::HashMap;

use serde::Serialize;

/// The most words `top_words` may list.
pub const MAX_TOP: usize = 1000;

/// What `text_stats` returns.
#[derive(Debug, Serialize, PartialEq)]
pub struct Stats {
    /// Unicode characters (scalar values).
    pub characters: usize,
    /// Characters that are not whitespace.
    pub non_whitespace_characters: usize,
    /// Bytes of the UTF-8 encoding.
    pub bytes: usize,
    pub words: usize,
    /// Distinct words, ignoring case.
    pub unique_words: usize,
    /// Lines; a final line break does not start another line.
    pub lines: usize,
    pub sentences: usize,
    /// Runs of non-blank lines separated by blank lines.
    pub paragraphs: usize,
    /// The most frequent words, lower-cased, most frequent first and ties in
    /// alphabetical order.
    pub top_words: Vec<WordCount>,
}

/// A word and how often it occurs.
#[derive(Debug, Serialize, PartialEq)]
pub struct WordCount {
    pub word: String,
    pub count: usize,
}

/// The statistics of `text`, listing the `top` most frequent words.
pub fn stats(text: &str, top: usize) -> Stats {
    let chars: Vec<char> = text.chars().collect();
    let mut frequencies: HashMap<String, usize> = HashMap::new();
    let mut words = 0;
    for word in words_of(&chars) {
        words += 1;
        *frequencies.entry(word.to_lowercase()).or_default() += 1;
    }
    let unique_words = frequencies.len();
    let mut ranked: Vec<(String, usize)> = frequencies.into_iter().collect();
    ranked.sort_by(|(a, a_count), (b, b_count)| b_count.cmp(a_count).then_with(|| a.cmp(b)));
    ranked.truncate(top.min(MAX_TOP));
    Stats {
        characters: chars.len(),
        non_whitespace_characters: chars.iter().filter(|c| !c.is_whitespace()).count(),
        bytes: text.len(),
        words,
        unique_words,
        lines: text.lines().count(),
        sentences: sentences(&chars),
        paragraphs: paragraphs(text),
        top_words: ranked.into_iter().map(|(word, count)| WordCount { word, count }).collect(),
    }
}

fn is_joiner(c: char) -> bool {
    matches!(c, '\'' | '’' | '-')
}

/// The words of `chars`, in order.
fn words_of(chars: &[char]) -> impl Iterator<Item = String> + '_ {
    let alnum = |i: usize| chars.get(i).is_some_and(|c| c.is_alphanumeric());
    let mut i = 0;
    std::iter::from_fn(move || {
        while i < chars.len() && !alnum(i) {
            i += 1;
        }
        if i >= chars.len() {
            return None;
        }
        let start = i;
        loop {
            while alnum(i) {
                i += 1;
            }
            if chars.get(i).is_some_and(|&c| is_joiner(c)) && alnum(i + 1) {
                i += 1;
                continue;
            }
            break;
        }
        Some(chars.get(start..i).unwrap_or_default().iter().collect())
    })
}

fn sentences(chars: &[char]) -> usize {
    let mut count = 0;
    let mut has_word = false;
    let mut i = 0;
    while let Some(&c) = chars.get(i) {
        i += 1;
        if c.is_alphanumeric() {
            has_word = true;
        } else if matches!(c, '.' | '!' | '?' | '…') {
            while chars.get(i).is_some_and(|&c| matches!(c, '.' | '!' | '?' | '…' | '"' | '\'' | '”' | '’' | ')' | ']'))
            {
                i += 1;
            }
            let at_break = chars.get(i).is_none_or(|c| c.is_whitespace());
            if at_break && has_word {
                count += 1;
                has_word = false;
            }
        }
    }
    count + usize::from(has_word)
}

fn paragraphs(text: &str) -> usize {
    let mut count = 0;
    let mut in_paragraph = false;
    for line in text.lines() {
        let blank = line.trim().is_empty();
        if !blank && !in_paragraph {
            count += 1;
        }
        in_paragraph = !blank;
    }
    count
}

#[cfg(test)]
mod tests {
    use super::*;

    fn words(text: &str) -> Vec<String> {
        let chars: Vec<char> = text.chars().collect();
        words_of(&chars).collect()
    }

    #[test]
    fn accepts_words_in_any_script_with_joiners() {
        assert_eq!(
            words("Don't stop—the well-known café, 2024!"),
            ["Don't", "stop", "the", "well-known", "café", "2024"]
        );
        assert_eq!(words("rock 'n' roll -- x-"), ["rock", "n", "roll", "x"]);
        assert_eq!(words("日本語 テキスト"), ["日本語", "テキスト"]);
        assert!(words("  ... ").is_empty());
    }

    #[test]
    fn accepts_sentence_counts() {
        let cases = [
            ("", 0),
            ("Hello", 1),
            ("Hello. World!", 2),
            ("Is it? Yes... \"Really.\" Fine", 4),
            ("Pi is 3.14 today.", 1),
            ("...", 0),
            ("One.Two", 1),
        ];
        for (text, expected) in cases {
            assert_eq!(sentences(&text.chars().collect::<Vec<_>>()), expected, "{text:?}");
        }
    }

    #[test]
    fn accepts_full_stats() {
        let text = "The cat sat.\nThe dog sat too!\n\n  \nA new paragraph, the end.\n";
        let stats = stats(text, 2);
        assert_eq!(stats.characters, text.chars().count());
        assert_eq!(stats.bytes, text.len());
        assert_eq!(stats.words, 12);
        assert_eq!(stats.unique_words, 9);
        assert_eq!(stats.lines, 5);
        assert_eq!(stats.sentences, 3);
        assert_eq!(stats.paragraphs, 2);
        assert_eq!(
            stats.top_words,
            [WordCount { word: "the".to_owned(), count: 3 }, WordCount { word: "sat".to_owned(), count: 2 }]
        );
    }

    #[test]
    fn accepts_empty_text() {
        let stats = stats("", 10);
        assert_eq!((stats.characters, stats.words, stats.lines, stats.sentences, stats.paragraphs), (0, 0, 0, 0, 0));
        assert!(stats.top_words.is_empty());
    }

    #[test]
    fn accepts_non_ascii_counts() {
        let stats = stats("Ünïcödé ✓", 10);
        assert_eq!((stats.characters, stats.non_whitespace_characters, stats.bytes), (9, 8, 15));
        assert_eq!(stats.words, 1);
    }
}

//! Text a plugin or a server wrote, made safe to show.
//!
//! A tool's description, a log record or a plugin's stderr reaches terminals
//! (`toolhost tools`, `inspect`, `call`, the chat), models and MCP clients. A
//! control character in it could move the cursor, rewrite what is on screen,
//! set a terminal's title or clipboard (escape sequences), or reorder what a
//! reader sees (bidirectional overrides). [`printable`] replaces each with a
//! space, keeping line breaks and tabs; everything that shows such text goes
//! through it. [`quoted`] is for a short piece of what a client sent, quoted
//! in an error message.

use std::borrow::Cow;

/// `text` with every control character but `\n` and `\t` (C0, DEL, C1),
/// every bidirectional embedding, override, isolate and mark, the invisible
/// characters that hide text (zero-width space, tags, the byte-order mark)
/// and the Unicode line separators replaced by a space.
pub fn printable(text: &str) -> Cow<'_, str> {
    if !text.chars().any(unsafe_char) {
        return Cow::Borrowed(text);
    }
    Cow::Owned(text.chars().map(|c| if unsafe_char(c) { ' ' } else { c }).collect())
}

/// [`printable`] of an owned string: `text` itself when it held nothing to
/// replace.
pub fn printable_owned(text: String) -> String {
    match printable(&text) {
        Cow::Borrowed(_) => text,
        Cow::Owned(clean) => clean,
    }
}

/// [`printable`] in place: `text` is rewritten only when it held something
/// to replace.
pub fn printable_in_place(text: &mut String) {
    if let Cow::Owned(clean) = printable(text) {
        *text = clean;
    }
}

/// Cuts `text` to at most `limit` bytes (at a character boundary) and marks
/// the cut with `…`.
pub fn truncate(text: &mut String, limit: usize) {
    if text.len() > limit {
        let cut = text.floor_char_boundary(limit);
        text.truncate(cut);
        text.push('…');
    }
}

/// At most 64 characters of what a client sent (an id, a method, a key),
/// for quoting in a message: control characters, quotes and backticks
/// become `?`, so it can neither break the quote nor act on a terminal.
pub fn quoted(text: &str) -> String {
    let shown: String =
        text.chars().take(64).map(|c| if c.is_control() || c == '`' || c == '"' { '?' } else { c }).collect();
    if text.chars().count() > 64 { format!("{shown}…") } else { shown }
}

fn unsafe_char(c: char) -> bool {
    (c.is_control() && c != '\n' && c != '\t')
        || matches!(
            c,
            // Bidirectional embeddings, overrides, isolates and marks.
            '\u{202A}'..='\u{202E}' | '\u{2066}'..='\u{2069}' | '\u{061C}' | '\u{200E}' | '\u{200F}'
            // Invisible: zero-width space, word joiner and invisible operators,
            // byte-order mark, interlinear annotation, and the tag characters
            // (text a model reads and a person does not see). Zero-width
            // (non-)joiners stay: emoji and scripts need them.
            | '\u{200B}' | '\u{2060}'..='\u{2064}' | '\u{FEFF}' | '\u{FFF9}'..='\u{FFFB}' | '\u{E0000}'..='\u{E007F}'
            // Line and paragraph separators: line breaks that are not `\n`.
            | '\u{2028}' | '\u{2029}'
        )
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn escapes_and_overrides_become_spaces_and_the_rest_stays() {
        assert!(matches!(printable("plain\ttext\nnext"), Cow::Borrowed(_)));
        assert_eq!(printable("a\u{1b}]52;c;ZXZpbA==\u{7}b"), "a ]52;c;ZXZpbA== b");
        assert_eq!(printable("x\u{202E}y\u{9b}z\r"), "x y z ");
        assert_eq!(printable_owned("a\u{7}b".to_owned()), "a b");
        // Marks, invisible characters, tags and separators; joiners stay.
        assert_eq!(printable("a\u{200F}b\u{061C}c\u{200B}d\u{FEFF}e\u{E0041}f\u{2028}g"), "a b c d e f g");
        assert!(matches!(printable("👨\u{200D}👩 می\u{200C}خواهم"), Cow::Borrowed(_)));
    }

    #[test]
    fn quoted_text_cannot_break_its_quote_and_is_bounded() {
        assert_eq!(quoted("id-1"), "id-1");
        assert_eq!(quoted("a`b\"c\u{1b}d"), "a?b?c?d");
        assert_eq!(quoted(&"x".repeat(65)), format!("{}…", "x".repeat(64)));
    }
}

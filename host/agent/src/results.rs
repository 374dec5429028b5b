//! The results the loop sends back for a call: text or an error from the
//! loop itself, a tool's media, and a long output cut to the budget.

use crate::events::Event;
use crate::model::{Media, MediaKind, ToolCall, ToolResult};

/// The result for a call whose arguments were not a JSON object.
pub(crate) fn malformed(original: &str) -> String {
    let what = match serde_json::from_str::<serde_json::Value>(original) {
        Err(err) => format!("they are not valid JSON ({err})"),
        Ok(value) => format!("they are JSON {}, not an object", json_kind(&value)),
    };
    format!(
        "the call was malformed and was not run: {what}. Send the arguments as one JSON object that matches \
         the tool's input schema"
    )
}

fn json_kind(value: &serde_json::Value) -> &'static str {
    match value {
        serde_json::Value::Null => "null",
        serde_json::Value::Bool(_) => "a boolean",
        serde_json::Value::Number(_) => "a number",
        serde_json::Value::String(_) => "a string",
        serde_json::Value::Array(_) => "an array",
        serde_json::Value::Object(_) => "an object",
    }
}

/// The answer `content` to `call`, from the loop itself (no media, no source).
pub(crate) fn text_result(call: &ToolCall, content: String) -> ToolResult {
    ToolResult {
        call_id: call.id.clone(),
        name: call.name.clone(),
        content,
        is_error: false,
        media: Vec::new(),
        source: None,
    }
}

pub(crate) fn error_result(call: &ToolCall, content: String) -> ToolResult {
    ToolResult { is_error: true, ..text_result(call, content) }
}

/// The images and audio of a tool's output, for the providers that take
/// them in a tool result (the text names each as well).
pub(crate) fn media_of(output: &toolhost_runtime::outcome::ToolOutput) -> Vec<Media> {
    use base64::Engine as _;
    use toolhost_runtime::content::Content;
    let toolhost_runtime::outcome::ToolOutput::Content(blocks) = output else { return Vec::new() };
    blocks
        .iter()
        .filter_map(|block| {
            let (kind, mime_type, data) = match &block.content {
                Content::Image { mime_type, data } => (MediaKind::Image, mime_type, data),
                Content::Audio { mime_type, data } => (MediaKind::Audio, mime_type, data),
                _ => return None,
            };
            let data = base64::engine::general_purpose::STANDARD.encode(data);
            Some(Media { kind, mime_type: mime_type.clone(), data })
        })
        .collect()
}

/// `text` if it fits in `budget` bytes, else its head and tail around a
/// marker saying how much was cut; and the number of bytes cut. The
/// marker and the line breaks around it count against the budget, so the
/// result is never longer than `budget` (a budget too small for the marker
/// keeps the head alone).
pub fn cut_to_budget(text: &str, budget: usize) -> (String, usize) {
    let cut = cut_marked(text, budget, |cut, _| format!("[… {cut} bytes cut …]"));
    (cut.content, cut.removed)
}

/// A text held to a budget by [`cut_marked`].
pub(crate) struct Cut {
    /// What is sent: the text, or its head, the marker and its tail.
    pub(crate) content: String,
    /// Bytes left out (0 when it fit).
    pub(crate) removed: usize,
}

/// `text` if it fits in `budget` bytes, else `head\n{marker}\ntail`, where
/// `marker(removed, from)` says how many bytes were cut from where; the
/// whole is at most `budget` bytes. The room the marker takes is reserved
/// before the cut, for the widest numbers it could show (at most the
/// text's length), so the marker always fits the room it was given.
pub(crate) fn cut_marked(text: &str, budget: usize, marker: impl Fn(usize, usize) -> String) -> Cut {
    if text.len() <= budget {
        return Cut { content: text.to_owned(), removed: 0 };
    }
    // "\n" + the widest marker + "\n".
    let widest = marker(text.len(), text.len()).len() + 2;
    if widest >= budget {
        let head_end = text.floor_char_boundary(budget);
        return Cut { content: text[..head_end].to_owned(), removed: text.len() - head_end };
    }
    let keep = budget - widest;
    let head_end = text.floor_char_boundary(keep / 2);
    let tail_start = text.ceil_char_boundary(text.len() - (keep - keep / 2));
    let removed = tail_start - head_end;
    let content = format!("{}\n{}\n{}", &text[..head_end], marker(removed, head_end), &text[tail_start..]);
    debug_assert!(content.len() <= budget);
    Cut { content, removed }
}

/// `tool_call_failed` for a call that never ran.
pub(crate) fn failed_before_running(call: &ToolCall, kind: &str, message: &str) -> Event {
    Event::ToolCallFailed {
        call_id: call.id.clone(),
        tool: call.name.clone(),
        kind: kind.to_owned(),
        message: message.to_owned(),
        retry_after_ms: None,
        fuel: 0,
        memory_peak: 0,
        duration_ms: 0.0,
        refused: Vec::new(),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn short_outputs_are_kept_whole() {
        assert_eq!(cut_to_budget("hello", 100), ("hello".to_owned(), 0));
    }

    #[test]
    fn long_outputs_keep_head_and_tail_with_a_marker() {
        let text = format!("{}{}{}", "a".repeat(500), "b".repeat(1000), "c".repeat(500));
        let (cut, removed) = cut_to_budget(&text, 264);
        assert!(cut.starts_with("aaaa") && cut.ends_with("cccc"), "{cut}");
        assert!(cut.contains(&format!("[… {removed} bytes cut …]")));
        assert!(cut.len() <= 264 && cut.len() >= 264 - 4, "{}", cut.len());
        let marker = format!("\n[… {removed} bytes cut …]\n");
        assert_eq!(cut.len() - marker.len() + removed, 2000);
    }

    #[test]
    fn cuts_on_character_boundaries() {
        let text = "é".repeat(1000);
        let (cut, _) = cut_to_budget(&text, 101);
        assert!(cut.starts_with('é') && cut.ends_with('é'));
    }

    #[test]
    fn the_marker_counts_against_the_budget() {
        let text = "x".repeat(1 << 20);
        for budget in [16 << 10, 1000, 100, 40, 10, 0] {
            let (cut, removed) = cut_to_budget(&text, budget);
            assert!(cut.len() <= budget, "{budget}: {}", cut.len());
            assert!(removed > 0);
        }
        let long = |cut: usize, from: usize| format!("[… {cut} bytes cut: read_output with offset {from} …]");
        let cut = cut_marked(&text, 16 << 10, long);
        assert!(cut.content.len() <= 16 << 10 && cut.content.len() > (16 << 10) - 16, "{}", cut.content.len());
        let from = cut.content.find('\n').unwrap();
        assert!(cut.content.contains(&long(cut.removed, from)), "the marker names where the cut begins");
    }
}

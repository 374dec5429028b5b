//! The results the loop sends back for a call: text or an error from the
//! loop itself, a tool's media, and a long output cut to the budget.

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
/// marker saying how much was cut; and the number of bytes cut.
pub fn cut_to_budget(text: &str, budget: usize) -> (String, usize) {
    match cut_points(text, budget) {
        None => (text.to_owned(), 0),
        Some((head_end, tail_start)) => {
            let cut = tail_start - head_end;
            (format!("{}\n[… {cut} bytes cut …]\n{}", &text[..head_end], &text[tail_start..]), cut)
        }
    }
}

/// Where [`cut_to_budget`] cuts `text`: the end of the head it keeps and
/// the start of the tail; none when it fits.
pub(crate) fn cut_points(text: &str, budget: usize) -> Option<(usize, usize)> {
    if text.len() <= budget {
        return None;
    }
    let keep = budget.saturating_sub(64);
    let head_end = text.floor_char_boundary(keep / 2);
    let tail_start = text.ceil_char_boundary(text.len() - (keep - keep / 2));
    Some((head_end, tail_start))
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
        assert_eq!(removed, 2000 - 200);
        assert!(cut.len() <= 264);
    }

    #[test]
    fn cuts_on_character_boundaries() {
        let text = "é".repeat(1000);
        let (cut, _) = cut_to_budget(&text, 101);
        assert!(cut.starts_with('é') && cut.ends_with('é'));
    }
}

//! Writing HTML that cannot be turned into markup by what it shows: every
//! piece of text from outside (a plugin's name, description or schema, a
//! caller's name, a call's arguments or error) goes through [`text`], which
//! replaces control and bidirectional characters ([`printable`]) and then
//! escapes the five characters HTML gives meaning to. Nothing from outside
//! is ever put in a tag name, an attribute name, a URL, a style or a script;
//! attribute values are double-quoted and escaped the same way.

use std::fmt::Write as _;
use toolhost_runtime::text::printable;

/// `value` escaped for HTML text and double-quoted attribute values.
pub fn text(value: &str) -> String {
    let clean = printable(value);
    let mut out = String::with_capacity(clean.len() + 16);
    for c in clean.chars() {
        match c {
            '&' => out.push_str("&amp;"),
            '<' => out.push_str("&lt;"),
            '>' => out.push_str("&gt;"),
            '"' => out.push_str("&quot;"),
            '\'' => out.push_str("&#39;"),
            c => out.push(c),
        }
    }
    out
}

/// At most `max` characters of `value`, with `…` when cut.
pub fn cut(value: &str, max: usize) -> String {
    match value.char_indices().nth(max) {
        Some((at, _)) => format!("{}…", &value[..at]),
        None => value.to_owned(),
    }
}

/// A duration in microseconds, short: `850 µs`, `12 ms`, `1.5 s`.
pub fn micros(us: u64) -> String {
    match us {
        u64::MAX => "over 60 s".to_owned(),
        0..1_000 => format!("{us} µs"),
        1_000..1_000_000 => format!("{} ms", us / 1_000),
        _ => format!("{:.1} s", us as f64 / 1e6),
    }
}

/// A line chart of `values` (oldest first), `width` × `height` pixels,
/// drawn as SVG presentation attributes only (no `style`, nothing from
/// outside): numbers the page computed itself.
pub fn sparkline(values: &[f64], width: u32, height: u32, label: &str) -> String {
    let mut out = format!(
        "<svg class=\"spark\" width=\"{width}\" height=\"{height}\" viewBox=\"0 0 {width} {height}\" role=\"img\" \
         aria-label=\"{}\"><title>{}</title>",
        text(label),
        text(label)
    );
    let max = values.iter().copied().fold(0.0_f64, f64::max);
    let _ = write!(
        out,
        "<line x1=\"0\" y1=\"{y}\" x2=\"{width}\" y2=\"{y}\" stroke=\"#c8ccd2\" stroke-width=\"1\"/>",
        y = height - 1
    );
    if values.len() >= 2 && max > 0.0 {
        let step = f64::from(width - 2) / (values.len() - 1) as f64;
        let points: Vec<String> = values
            .iter()
            .enumerate()
            .map(|(index, value)| {
                let x = 1.0 + step * index as f64;
                let y = f64::from(height - 2) - (value / max) * f64::from(height - 4);
                format!("{x:.1},{y:.1}")
            })
            .collect();
        let _ = write!(
            out,
            "<polyline points=\"{}\" fill=\"none\" stroke=\"#2a62b8\" stroke-width=\"1.5\" \
             stroke-linejoin=\"round\"/>",
            points.join(" ")
        );
    }
    out.push_str("</svg>");
    out
}

/// A horizontal bar: `ok` calls green, `errors` red, `cancelled` grey.
pub fn error_bar(ok: u64, errors: u64, cancelled: u64, width: u32) -> String {
    let total = ok + errors + cancelled;
    let label = format!("{ok} ok, {errors} errors, {cancelled} cancelled");
    let mut out = format!(
        "<svg class=\"bar\" width=\"{width}\" height=\"10\" viewBox=\"0 0 {width} 10\" role=\"img\" \
         aria-label=\"{label}\"><title>{label}</title><rect x=\"0\" y=\"0\" width=\"{width}\" height=\"10\" \
         fill=\"#eef0f3\"/>"
    );
    if total > 0 {
        let mut x = 0.0;
        for (count, colour) in [(ok, "#3c9a5f"), (errors, "#c8463d"), (cancelled, "#9aa0a8")] {
            let w = f64::from(width) * count as f64 / total as f64;
            if w > 0.0 {
                let _ = write!(out, "<rect x=\"{x:.1}\" y=\"0\" width=\"{w:.1}\" height=\"10\" fill=\"{colour}\"/>");
            }
            x += w;
        }
    }
    out.push_str("</svg>");
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn markup_and_control_characters_are_text() {
        assert_eq!(text("<script>alert(\"x\")</script>"), "&lt;script&gt;alert(&quot;x&quot;)&lt;/script&gt;");
        assert_eq!(text("a'b&c"), "a&#39;b&amp;c");
        // A bidirectional override cannot reorder what the page shows.
        assert_eq!(text("ab\u{202e}cd"), "ab cd");
        assert_eq!(text("x\u{1b}[31my"), "x [31my");
    }

    #[test]
    fn pictures_hold_only_numbers_and_escaped_labels() {
        let svg = sparkline(&[0.0, 2.0, 1.0], 100, 20, "<b>rate</b>");
        assert!(svg.contains("&lt;b&gt;rate&lt;/b&gt;"), "{svg}");
        assert!(svg.contains("<polyline points=\"1.0,18.0 50.0,2.0 99.0,10.0\""), "{svg}");
        let bar = error_bar(3, 1, 0, 80);
        assert!(bar.contains("width=\"60.0\""), "{bar}");
        assert!(bar.contains("fill=\"#c8463d\""), "{bar}");
        assert_eq!(cut("abcdef", 3), "abc…");
        assert_eq!(micros(1_500_000), "1.5 s");
    }
}

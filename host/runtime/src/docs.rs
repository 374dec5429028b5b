//! What a component's WIT documentation says of its functions.
//!
//! The component binary format has no place for doc comments, so
//! `wit-component` keeps them in a `package-docs` custom section: one version
//! byte (0 or 1), then JSON of the shape
//! `{"docs", "worlds": {W: {"docs", "funcs", "func_exports", "interfaces",
//! "interface_exports"}}, "interfaces": {I: {"docs", "funcs": {F: …}}}}`,
//! where a function's entry is its doc string (version 0) or
//! `{"docs": …, "stability": …}` (version 1). A component carries it at its
//! top level when its toolchain (or a docs-injecting step after the build)
//! put it there. The section is read as the rest of a plugin file is: as
//! possibly hostile, so a malformed or oversized one is ignored, never an
//! error.

use serde_json::Value;
use std::collections::HashMap;

/// The custom section's name.
pub const SECTION: &str = "package-docs";

/// The largest section read (a package's docs are kilobytes).
const MAX_SECTION: usize = 1 << 20;

/// The longest description taken from a doc comment, in characters.
const MAX_DOC: usize = 4096;

/// The doc comments of a component's functions.
#[derive(Debug, Default)]
pub struct Docs {
    /// Functions the world exports itself, by name.
    world: HashMap<String, String>,
    /// Functions of interfaces, by interface name (`inventory` of
    /// `acme:shop/inventory@1.0.0`) and function name.
    interfaces: HashMap<String, HashMap<String, String>>,
}

impl Docs {
    /// The docs in the top-level `package-docs` sections of `wasm` (none
    /// when it has none, or none that parse).
    pub fn of(wasm: &[u8]) -> Docs {
        let mut docs = Docs::default();
        for data in top_level_sections(wasm, SECTION) {
            if data.len() > MAX_SECTION || !matches!(data.first(), Some(0 | 1)) {
                continue;
            }
            if let Ok(package) = serde_json::from_slice::<Value>(&data[1..]) {
                docs.add(&package);
            }
        }
        docs
    }

    /// The doc comment of `func`, exported by the world itself (`interface`
    /// none) or inside the exported `interface` (its full name).
    pub fn function(&self, interface: Option<&str>, func: &str) -> Option<&str> {
        match interface {
            None => self.world.get(func),
            Some(interface) => self.interfaces.get(short_name(interface))?.get(func),
        }
        .map(String::as_str)
    }

    fn add(&mut self, package: &Value) {
        for (_, world) in entries(package, "worlds") {
            for key in ["funcs", "func_exports"] {
                for (name, func) in entries(world, key) {
                    if let Some(text) = doc_text(func) {
                        self.world.entry(name.clone()).or_insert(text);
                    }
                }
            }
            // Interfaces defined inline in the world (`export tools: interface {…}`).
            for key in ["interfaces", "interface_exports"] {
                for (name, interface) in entries(world, key) {
                    self.add_interface(name, interface);
                }
            }
        }
        for (name, interface) in entries(package, "interfaces") {
            self.add_interface(name, interface);
        }
    }

    fn add_interface(&mut self, name: &str, interface: &Value) {
        for (func, docs) in entries(interface, "funcs") {
            if let Some(text) = doc_text(docs) {
                self.interfaces.entry(name.to_owned()).or_default().entry(func.clone()).or_insert(text);
            }
        }
    }
}

/// The members of the object under `key`, as (name, value) pairs.
fn entries<'a>(value: &'a Value, key: &str) -> impl Iterator<Item = (&'a String, &'a Value)> {
    value.get(key).and_then(Value::as_object).into_iter().flatten()
}

/// A function's doc text, trimmed and bounded; none when it is empty.
fn doc_text(func: &Value) -> Option<String> {
    let text = match func {
        Value::String(text) => text,
        other => other.get("docs")?.as_str()?,
    };
    // A doc comment is the plugin author's text, shown on terminals: no
    // control characters but line breaks and tabs.
    let text = crate::text::printable(text.trim()).into_owned();
    if text.is_empty() {
        return None;
    }
    Some(match text.char_indices().nth(MAX_DOC) {
        Some((cut, _)) => format!("{}…", &text[..cut]),
        None => text,
    })
}

/// `acme:shop/inventory@1.0.0` → `inventory`; a plain name is itself.
pub(crate) fn short_name(interface: &str) -> &str {
    let name = interface.rsplit('/').next().unwrap_or(interface);
    name.split('@').next().unwrap_or(name)
}

/// The contents of the custom sections named `name` at the top level of the
/// component (or module) `wasm`, skipping nested modules and components.
fn top_level_sections<'a>(wasm: &'a [u8], name: &str) -> Vec<&'a [u8]> {
    let mut found = Vec::new();
    let mut parser = wasmparser::Parser::new(0);
    // Where the parser is in `wasm` (its offsets are from the start).
    let mut at = 0;
    loop {
        let rest = wasm.get(at..).unwrap_or_default();
        let Ok(wasmparser::Chunk::Parsed { consumed, payload }) = parser.parse(rest, true) else { break };
        at += consumed;
        match payload {
            wasmparser::Payload::CustomSection(section) if section.name() == name => found.push(section.data()),
            // The parser has stepped over a nested binary's bytes but left
            // them to us: skip them rather than read into them.
            wasmparser::Payload::ModuleSection { unchecked_range, .. }
            | wasmparser::Payload::ComponentSection { unchecked_range, .. } => at = unchecked_range.end,
            wasmparser::Payload::End(_) => break,
            _ => {}
        }
    }
    found
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn reads_both_versions_and_bounds_what_it_keeps() {
        let v0 = r#"{"worlds":{"shop":{"funcs":{"ping":"Answers pong."}}},
            "interfaces":{"inventory":{"docs":"Stock.","funcs":{"get-item":"  Looks an article up.\n"}}}}"#;
        let v1 = r#"{"worlds":{"shop":{"func_exports":{"ping":{"docs":"Shadowed by v0."}},
            "interface_exports":{"tools":{"funcs":{"add":{"docs":"Adds.","stability":"unknown"}}}}}}}"#;
        let mut docs = Docs::default();
        for text in [v0, v1] {
            docs.add(&serde_json::from_str(text).unwrap());
        }
        assert_eq!(docs.function(None, "ping"), Some("Answers pong."));
        assert_eq!(docs.function(Some("acme:shop/inventory@1.0.0"), "get-item"), Some("Looks an article up."));
        assert_eq!(docs.function(Some("tools"), "add"), Some("Adds."));
        assert_eq!(docs.function(Some("inventory"), "ping"), None);
        let long = serde_json::json!({"worlds": {"w": {"funcs": {"f": "x".repeat(10_000)}}}});
        docs.add(&long);
        assert_eq!(docs.function(None, "f").unwrap().chars().count(), MAX_DOC + 1);
        docs.add(&serde_json::json!({"worlds": {"w": {"funcs": {"e": "red \u{1b}[31mtext\nnext"}}}}));
        assert_eq!(docs.function(None, "e"), Some("red  [31mtext\nnext"), "no escape reaches a terminal");
    }

    #[test]
    fn malformed_sections_are_ignored() {
        assert!(Docs::of(b"not wasm").world.is_empty());
        let mut module = b"\0asm\x01\0\0\0".to_vec();
        // A custom section `package-docs` whose payload is version 7.
        let body = [&[12u8][..], SECTION.as_bytes(), b"\x07{}"].concat();
        module.push(0);
        module.push(body.len() as u8);
        module.extend_from_slice(&body);
        assert_eq!(top_level_sections(&module, SECTION).len(), 1);
        assert!(Docs::of(&module).world.is_empty());
    }
}

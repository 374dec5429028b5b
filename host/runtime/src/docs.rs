//! What a component's WIT documentation says of its functions.
//!
//! The component binary format has no place for doc comments, so
//! `wit-component` keeps them in a `package-docs` custom section: one version
//! byte (0 or 1), then JSON of the shape
//! `{"docs", "worlds": {W: {"docs", "funcs", "func_exports", "interfaces",
//! "interface_exports"}}, "interfaces": {I: {"docs", "funcs": {F: …}}}}`,
//! where a function's entry is its doc string (version 0) or
//! `{"docs": …, "stability": …}` (version 1), and a type's (under `types`,
//! beside `funcs`) is `{"docs", "items": {field or case: doc}}`. A component
//! carries it at its top level when its toolchain put it there, or when
//! `toolhost embed-docs` copied it in from the WIT after the build (most
//! toolchains drop it: wit-bindgen, componentize-py and componentize-js do).
//! The section is read as the rest of a plugin file is: as possibly hostile,
//! so a malformed or oversized one is ignored, never an error.

use serde_json::Value;
use std::collections::HashMap;

/// The custom section's name.
pub const SECTION: &str = "package-docs";

/// The largest section read (a package's docs are kilobytes).
const MAX_SECTION: usize = 1 << 20;

/// The longest description taken from a doc comment, in characters.
const MAX_DOC: usize = 4096;

/// The doc comments of a component's functions and named types.
#[derive(Debug, Default)]
pub struct Docs {
    /// Functions the world exports itself, by name.
    world: HashMap<String, String>,
    /// Functions of interfaces, by interface name (`inventory` of
    /// `acme:shop/inventory@1.0.0`) and function name.
    interfaces: HashMap<String, HashMap<String, String>>,
    /// Types the world defines itself, by name.
    world_types: HashMap<String, TypeDocs>,
    /// Types of interfaces, by interface name and type name.
    interface_types: HashMap<String, HashMap<String, TypeDocs>>,
}

/// The doc comments of one named type (`record`, `variant`, `enum`, `flags`).
#[derive(Debug, Default, Clone, PartialEq)]
pub struct TypeDocs {
    /// The type's own.
    pub docs: Option<String>,
    /// Its fields' (a record's) or cases' (the others'), by name.
    pub items: HashMap<String, String>,
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

    /// The doc comments of the type `name`, defined by the world itself
    /// (`interface` none) or inside `interface` (its full name).
    pub fn type_docs(&self, interface: Option<&str>, name: &str) -> Option<&TypeDocs> {
        match interface {
            None => self.world_types.get(name),
            Some(interface) => self.interfaces_types(interface)?.get(name),
        }
    }

    fn interfaces_types(&self, interface: &str) -> Option<&HashMap<String, TypeDocs>> {
        self.interface_types.get(short_name(interface))
    }

    /// Whether it holds no doc comment at all.
    pub fn is_empty(&self) -> bool {
        self.world.is_empty()
            && self.interfaces.is_empty()
            && self.world_types.is_empty()
            && self.interface_types.is_empty()
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
            for (name, ty) in entries(world, "types") {
                if let Some(docs) = type_docs(ty) {
                    self.world_types.entry(name.clone()).or_insert(docs);
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
        for (ty, docs) in entries(interface, "types") {
            if let Some(docs) = type_docs(docs) {
                self.interface_types.entry(name.to_owned()).or_default().entry(ty.clone()).or_insert(docs);
            }
        }
    }
}

/// A type's entry (`{"docs", "items"}`); none when it documents nothing.
fn type_docs(ty: &Value) -> Option<TypeDocs> {
    let docs = ty.get("docs").and_then(doc_text);
    let items: HashMap<String, String> =
        entries(ty, "items").filter_map(|(name, docs)| Some((name.clone(), doc_text(docs)?))).collect();
    (docs.is_some() || !items.is_empty()).then_some(TypeDocs { docs, items })
}

/// A parser's offset into a binary held in memory (one past a slice's end,
/// which any slicing then refuses, when it does not fit).
pub fn offset(at: u64) -> usize {
    usize::try_from(at).unwrap_or(usize::MAX)
}

/// `wasm` with its top-level `package-docs` sections replaced by `sections`
/// (each a section's content: a version byte and the JSON), appended at the
/// end, where a custom section may stand; everything else is kept byte for
/// byte. An error when `wasm` is not a well-formed component or module.
pub fn with_sections(wasm: &[u8], sections: &[Vec<u8>]) -> Result<Vec<u8>, String> {
    let mut out = Vec::with_capacity(wasm.len() + sections.iter().map(Vec::len).sum::<usize>() + 64);
    let mut parser = wasmparser::Parser::new(0);
    let mut at = 0;
    loop {
        let rest = wasm.get(at..).unwrap_or_default();
        let (consumed, payload) = match parser.parse(rest, true) {
            Ok(wasmparser::Chunk::Parsed { consumed, payload }) => (consumed, payload),
            Ok(wasmparser::Chunk::NeedMoreData(_)) => return Err("it ends in the middle of a section".to_owned()),
            Err(err) => return Err(format!("it is not a well-formed WebAssembly binary ({})", err.message())),
        };
        let chunk = at..at + consumed;
        at += consumed;
        match payload {
            wasmparser::Payload::CustomSection(section) if section.name() == SECTION => {}
            wasmparser::Payload::ModuleSection { unchecked_range, .. }
            | wasmparser::Payload::ComponentSection { unchecked_range, .. } => {
                let end = offset(unchecked_range.end);
                out.extend_from_slice(wasm.get(chunk.start..end).ok_or("a nested binary ends past the file")?);
                at = end;
            }
            wasmparser::Payload::End(_) => break,
            _ => out.extend_from_slice(&wasm[chunk]),
        }
    }
    if at != wasm.len() {
        return Err("it has bytes after its end".to_owned());
    }
    for data in sections {
        let mut body = Vec::with_capacity(data.len() + SECTION.len() + 8);
        leb128(&mut body, SECTION.len());
        body.extend_from_slice(SECTION.as_bytes());
        body.extend_from_slice(data);
        out.push(0); // a custom section
        leb128(&mut out, body.len());
        out.extend_from_slice(&body);
    }
    Ok(out)
}

/// Appends `n` as unsigned LEB128, as the binary format writes sizes.
fn leb128(out: &mut Vec<u8>, mut n: usize) {
    loop {
        let byte = (n & 0x7f) as u8;
        n >>= 7;
        if n == 0 {
            out.push(byte);
            return;
        }
        out.push(byte | 0x80);
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
            | wasmparser::Payload::ComponentSection { unchecked_range, .. } => at = offset(unchecked_range.end),
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
    fn types_fields_and_cases_are_read() {
        let mut docs = Docs::default();
        docs.add(&serde_json::json!({
            "worlds": {"notes": {"types": {"note": {"docs": "A note.", "items": {"title": "Its title.", "words": ""}}}}},
            "interfaces": {"inventory": {"types": {"item": {"items": {"sku": "The SKU."}}, "bare": {}}}}
        }));
        let note = docs.type_docs(None, "note").unwrap();
        assert_eq!(note.docs.as_deref(), Some("A note."));
        assert_eq!(note.items.get("title").map(String::as_str), Some("Its title."));
        assert!(!note.items.contains_key("words"), "an empty comment is none");
        let item = docs.type_docs(Some("acme:shop/inventory@1.0.0"), "item").unwrap();
        assert_eq!((item.docs.as_ref(), item.items.get("sku").map(String::as_str)), (None, Some("The SKU.")));
        assert!(docs.type_docs(Some("inventory"), "bare").is_none(), "a type with no comment at all");
    }

    #[test]
    fn sections_are_replaced_and_every_other_byte_kept() {
        let section = |name: &str, data: &[u8]| {
            let body = [&[name.len() as u8][..], name.as_bytes(), data].concat();
            [&[0u8, body.len() as u8][..], &body].concat()
        };
        // A module: the header, a `name`-like section to keep, an old docs section.
        let header = b"\0asm\x01\0\0\0".to_vec();
        let keep = section("other", b"kept");
        let wasm = [header.clone(), keep.clone(), section(SECTION, b"\x01{}")].concat();
        let new = [&[1u8][..], br#"{"worlds":{"w":{"funcs":{"f":"Does f."}}}}"#].concat();
        let once = with_sections(&wasm, std::slice::from_ref(&new)).unwrap();
        assert!(once.starts_with(&[header, keep].concat()));
        assert_eq!(top_level_sections(&once, SECTION), vec![&new[..]]);
        assert_eq!(Docs::of(&once).function(None, "f"), Some("Does f."));
        assert_eq!(with_sections(&once, &[new]).unwrap(), once, "idempotent");
        assert_eq!(top_level_sections(&with_sections(&once, &[]).unwrap(), SECTION).len(), 0);
        assert!(with_sections(b"\0asm\x01\0\0\0\x00\x10short", &[]).is_err(), "a truncated section");
        assert!(with_sections(b"text", &[]).is_err());
        let mut long = Vec::new();
        leb128(&mut long, 300);
        assert_eq!(long, [0xac, 0x02]);
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

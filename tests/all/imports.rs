//! No crate under `host/` has an import circle between sibling modules, at
//! any level: in each crate (and in the `toolhost` library and program of
//! `host/src`), the modules of one parent name (through `crate::`, `super::`,
//! `self::` or a `use` of a child) only siblings that do not name them back,
//! directly or through others. A circle means two modules can only be
//! understood, and changed, together; the next contract version, provider
//! protocol or MCP revision would then be edits in both rather than a new
//! module.
//!
//! The test reads every file of every crate, following `mod` declarations
//! from each crate's root (and checking that this reaches every `.rs` file
//! under `src/`), child files and inline modules (`mod tests { … }`)
//! included. A path naming an item a module re-exports (`pub use b::Thing`,
//! `pub use b::*`) is followed to the module that defines it, so a child
//! file's `use super::Thing` counts as naming the sibling `Thing` lives in.
//! What it does not follow: names a `use super::*` glob brought in and then
//! used bare. It fails, naming the circle, as soon as one comes back.

use std::collections::{BTreeMap, BTreeSet};
use std::path::{Path, PathBuf};

/// Circles not broken yet, as (crate, circle). The test fails when one of
/// these is gone too, so that this list only shrinks.
const KNOWN: &[(&str, &str)] = &[];

/// A token of Rust source, comments and literals left out.
#[derive(Clone, Debug, PartialEq)]
enum Tok {
    Ident(String),
    Colons,
    Punct(char),
}

/// `text` as tokens: identifiers (keywords included), `::` and single
/// punctuation; comments, strings, characters and numbers dropped.
fn tokens(text: &str) -> Vec<Tok> {
    let chars: Vec<char> = text.chars().collect();
    let mut out = Vec::new();
    let mut i = 0;
    // Skips a string whose opening quote is at `chars[at]`, with `hashes` `#`s (raw when > 0 or `raw`).
    let skip_string = |mut at: usize, raw: bool, hashes: usize| -> usize {
        at += 1;
        while at < chars.len() {
            if !raw && chars[at] == '\\' {
                at += 2;
                continue;
            }
            if chars[at] == '"' && (0..hashes).all(|k| chars.get(at + 1 + k) == Some(&'#')) {
                return at + 1 + hashes;
            }
            at += 1;
        }
        at
    };
    while i < chars.len() {
        let c = chars[i];
        let next = chars.get(i + 1).copied();
        if c == '/' && next == Some('/') {
            while i < chars.len() && chars[i] != '\n' {
                i += 1;
            }
        } else if c == '/' && next == Some('*') {
            let mut depth = 0;
            while i < chars.len() {
                if chars[i] == '/' && chars.get(i + 1) == Some(&'*') {
                    depth += 1;
                    i += 2;
                } else if chars[i] == '*' && chars.get(i + 1) == Some(&'/') {
                    depth -= 1;
                    i += 2;
                    if depth == 0 {
                        break;
                    }
                } else {
                    i += 1;
                }
            }
        } else if c == '"' {
            i = skip_string(i, false, 0);
        } else if c == '\'' {
            if next == Some('\\') {
                i += 2;
                while i < chars.len() && chars[i] != '\'' {
                    i += 1;
                }
                i += 1;
            } else if chars.get(i + 2) == Some(&'\'') {
                i += 3;
            } else {
                // A lifetime or label: its name is lexed as an identifier next.
                i += 1;
            }
        } else if c.is_ascii_digit() {
            while i < chars.len() && (chars[i].is_alphanumeric() || chars[i] == '_') {
                i += 1;
            }
        } else if c.is_alphabetic() || c == '_' {
            let start = i;
            while i < chars.len() && (chars[i].is_alphanumeric() || chars[i] == '_') {
                i += 1;
            }
            let word: String = chars[start..i].iter().collect();
            let after = chars.get(i).copied();
            if matches!(word.as_str(), "r" | "br" | "cr") && matches!(after, Some('"' | '#')) {
                let hashes = chars[i..].iter().take_while(|c| **c == '#').count();
                if chars.get(i + hashes) == Some(&'"') {
                    i = skip_string(i + hashes, true, hashes);
                    continue;
                }
            }
            if matches!(word.as_str(), "b" | "c") && after == Some('"') {
                i = skip_string(i, false, 0);
                continue;
            }
            if word == "b" && after == Some('\'') {
                continue;
            }
            out.push(Tok::Ident(word));
        } else if c == ':' && next == Some(':') {
            out.push(Tok::Colons);
            i += 2;
        } else {
            if !c.is_whitespace() {
                out.push(Tok::Punct(c));
            }
            i += 1;
        }
    }
    out
}

/// What one module holds, from all its files and inline blocks.
#[derive(Debug, Default)]
struct Module {
    /// Names a `use` binds here, each to the path it names (relative to here).
    uses: BTreeMap<String, Vec<String>>,
    /// The paths of `use …::*` here.
    globs: Vec<Vec<String>>,
    /// Items defined here (functions, types, traits, constants, macros).
    items: BTreeSet<String>,
    /// Every path this module names, with the file it is in.
    paths: Vec<(Vec<String>, PathBuf)>,
}

type Modules = BTreeMap<Vec<String>, Module>;

fn ident(tok: Option<&Tok>) -> Option<&str> {
    match tok {
        Some(Tok::Ident(name)) => Some(name),
        _ => None,
    }
}

/// The leaves of the use tree starting at `tokens[*at]`: each path and
/// the name it binds (`None` for a glob).
fn use_tree(tokens: &[Tok], at: &mut usize, prefix: Vec<String>, out: &mut Vec<(Vec<String>, Option<String>)>) {
    let mut path = prefix;
    while let Some(tok) = tokens.get(*at) {
        match tok {
            Tok::Colons => *at += 1,
            Tok::Punct('{') => {
                *at += 1;
                loop {
                    match tokens.get(*at) {
                        None => return,
                        Some(Tok::Punct('}')) => {
                            *at += 1;
                            return;
                        }
                        Some(Tok::Punct(',')) => *at += 1,
                        Some(_) => {
                            let before = *at;
                            use_tree(tokens, at, path.clone(), out);
                            if *at == before {
                                return;
                            }
                        }
                    }
                }
            }
            Tok::Punct('*') => {
                *at += 1;
                out.push((path, None));
                return;
            }
            Tok::Ident(name) => {
                path.push(name.clone());
                *at += 1;
                if tokens.get(*at) == Some(&Tok::Colons) {
                    continue;
                }
                if path.last().is_some_and(|last| last == "self") {
                    path.pop();
                }
                let mut bound = path.last().cloned();
                if ident(tokens.get(*at)) == Some("as") {
                    bound = ident(tokens.get(*at + 1)).map(str::to_owned);
                    *at += 2;
                }
                if let Some(bound) = bound {
                    out.push((path, Some(bound)));
                }
                return;
            }
            _ => return,
        }
    }
}

/// Reads the module at `module` from `file` into `modules`, then each child
/// file its `mod NAME;` declares (`NAME.rs` or `NAME/mod.rs` beside it, in
/// the folder `children` for a non-`mod.rs` file). Returns the files read.
fn read_module(
    read: &dyn Fn(&Path) -> Option<String>,
    file: &Path,
    children: &Path,
    module: Vec<String>,
    modules: &mut Modules,
    files: &mut BTreeSet<PathBuf>,
) {
    let text = read(file).unwrap_or_else(|| panic!("{} is declared but cannot be read", file.display()));
    files.insert(file.to_path_buf());
    let toks = tokens(&text);
    modules.entry(module.clone()).or_default();
    // Inline modules open here: (name, the brace depth inside them).
    let mut inline: Vec<(String, usize)> = Vec::new();
    let mut depth = 0usize;
    let mut i = 0;
    let here = |inline: &Vec<(String, usize)>| {
        let mut path = module.clone();
        path.extend(inline.iter().map(|(name, _)| name.clone()));
        path
    };
    while i < toks.len() {
        let tok = &toks[i];
        let previous = i.checked_sub(1).map(|p| &toks[p]);
        match tok {
            Tok::Punct('{') => depth += 1,
            Tok::Punct('}') => {
                if inline.last().is_some_and(|(_, at)| *at == depth) {
                    inline.pop();
                }
                depth = depth.saturating_sub(1);
            }
            Tok::Ident(word) if word == "mod" => {
                if let Some(name) = ident(toks.get(i + 1)) {
                    match toks.get(i + 2) {
                        Some(Tok::Punct('{')) => {
                            inline.push((name.to_owned(), depth + 1));
                            modules.entry(here(&inline)).or_default();
                            depth += 1;
                            i += 3;
                            continue;
                        }
                        Some(Tok::Punct(';')) => {
                            assert!(inline.is_empty(), "{}: a file module inside an inline one", file.display());
                            let mut child = module.clone();
                            child.push(name.to_owned());
                            let flat = children.join(format!("{name}.rs"));
                            let (path, below) = if read(&flat).is_some() {
                                (flat, children.join(name))
                            } else {
                                (children.join(name).join("mod.rs"), children.join(name))
                            };
                            read_module(read, &path, &below, child, modules, files);
                            i += 3;
                            continue;
                        }
                        _ => {}
                    }
                }
            }
            Tok::Ident(word) if word == "use" => {
                let mut at = i + 1;
                let mut leaves = Vec::new();
                use_tree(&toks, &mut at, Vec::new(), &mut leaves);
                let entry = modules.entry(here(&inline)).or_default();
                for (path, bound) in leaves {
                    match bound {
                        Some(bound) => {
                            entry.uses.insert(bound, path.clone());
                        }
                        None => entry.globs.push(path.clone()),
                    }
                    entry.paths.push((path, file.to_path_buf()));
                }
                i = at.max(i + 1);
                continue;
            }
            Tok::Ident(word)
                if matches!(
                    word.as_str(),
                    "fn" | "struct" | "enum" | "trait" | "type" | "const" | "static" | "union"
                ) =>
            {
                if let Some(name) = ident(toks.get(i + 1)) {
                    modules.entry(here(&inline)).or_default().items.insert(name.to_owned());
                }
            }
            Tok::Ident(word) if word == "macro_rules" => {
                if let Some(name) = ident(toks.get(i + 2)) {
                    modules.entry(here(&inline)).or_default().items.insert(name.to_owned());
                }
            }
            Tok::Ident(word)
                if matches!(word.as_str(), "crate" | "super" | "self")
                    && toks.get(i + 1) == Some(&Tok::Colons)
                    && previous != Some(&Tok::Colons) =>
            {
                let mut path = vec![word.clone()];
                let mut at = i + 1;
                while toks.get(at) == Some(&Tok::Colons) {
                    match ident(toks.get(at + 1)) {
                        Some(name) => {
                            path.push(name.to_owned());
                            at += 2;
                        }
                        None => break,
                    }
                }
                modules.entry(here(&inline)).or_default().paths.push((path, file.to_path_buf()));
                i = at;
                continue;
            }
            _ => {}
        }
        i += 1;
    }
}

/// The module `path` (named in module `from`) reaches: the deepest module
/// along it, following re-exports of the item it ends at; `None` for a path
/// outside the crate.
fn resolve(modules: &Modules, from: &[String], path: &[String], hops: usize) -> Option<Vec<String>> {
    let (mut at, mut rest): (Vec<String>, &[String]) = match path.first()?.as_str() {
        "crate" => (Vec::new(), &path[1..]),
        "self" => (from.to_vec(), &path[1..]),
        "super" => {
            let mut at = from.to_vec();
            let mut rest = path;
            while rest.first().is_some_and(|s| s == "super") {
                at.pop();
                rest = &rest[1..];
            }
            (at, rest)
        }
        first => {
            let mut child = from.to_vec();
            child.push(first.to_owned());
            if modules.contains_key(&child) {
                (from.to_vec(), path)
            } else {
                let bound = modules.get(from)?.uses.get(first)?;
                if hops > 8 || bound.first().is_some_and(|s| s == first) {
                    return None;
                }
                let at = resolve(modules, from, bound, hops + 1)?;
                (at, &path[1..])
            }
        }
    };
    while let Some(segment) = rest.first() {
        let mut child = at.clone();
        child.push(segment.clone());
        if modules.contains_key(&child) {
            at = child;
            rest = &rest[1..];
            continue;
        }
        // An item of `at`: where it is defined, if `at` only re-exports it.
        let module = &modules[&at];
        if hops < 8 && !module.items.contains(segment) {
            if let Some(bound) = module.uses.get(segment) {
                return Some(resolve(modules, &at, bound, hops + 1).unwrap_or(at));
            }
            for glob in &module.globs {
                if let Some(target) = resolve(modules, &at, glob, hops + 1)
                    && target != at
                    && (modules[&target].items.contains(segment) || modules[&target].uses.contains_key(segment))
                {
                    return Some(match modules[&target].uses.get(segment) {
                        Some(bound) if !modules[&target].items.contains(segment) => {
                            resolve(modules, &target, bound, hops + 1).unwrap_or(target)
                        }
                        _ => target,
                    });
                }
            }
        }
        break;
    }
    Some(at)
}

/// For each parent module, which of its children name which others, each
/// edge with where it was first seen (file and path).
type Graph = BTreeMap<Vec<String>, BTreeMap<String, BTreeMap<String, String>>>;

/// The sibling edges of `modules`: a path named in `a::x::…` reaching
/// `a::y::…` is an edge `x → y` among the children of `a`.
fn edges(modules: &Modules) -> Graph {
    let mut graph = Graph::new();
    for (from, module) in modules {
        for (path, file) in &module.paths {
            let Some(to) = resolve(modules, from, path, 0) else { continue };
            let shared = from.iter().zip(&to).take_while(|(a, b)| a == b).count();
            if shared == from.len() || shared == to.len() {
                // The same module, an ancestor or a descendant.
                continue;
            }
            graph
                .entry(from[..shared].to_vec())
                .or_default()
                .entry(from[shared].clone())
                .or_default()
                .entry(to[shared].clone())
                .or_insert_with(|| format!("{}: {}", file.display(), path.join("::")));
        }
    }
    graph
}

/// Every circle of `edges`, each once, starting at its smallest module.
fn circles(edges: &BTreeMap<String, BTreeMap<String, String>>) -> BTreeSet<Vec<String>> {
    fn walk(
        edges: &BTreeMap<String, BTreeMap<String, String>>,
        start: &str,
        path: &mut Vec<String>,
        out: &mut BTreeSet<Vec<String>>,
    ) {
        let last = path.last().unwrap().clone();
        for next in edges.get(&last).into_iter().flat_map(BTreeMap::keys) {
            if next == start {
                out.insert(path.clone());
            } else if next.as_str() > start && !path.contains(next) {
                path.push(next.clone());
                walk(edges, start, path, out);
                path.pop();
            }
        }
    }
    let mut out = BTreeSet::new();
    for start in edges.keys() {
        walk(edges, start, &mut vec![start.clone()], &mut out);
    }
    out
}

/// Each circle of the crate rooted at `root`, as `at PARENT: a -> b -> a`,
/// with where each of its edges was seen.
fn circles_of(
    read: &dyn Fn(&Path) -> Option<String>,
    root: &Path,
    files: &mut BTreeSet<PathBuf>,
) -> Vec<(String, Vec<String>)> {
    let mut modules = Modules::new();
    read_module(read, root, root.parent().unwrap(), Vec::new(), &mut modules, files);
    let mut found = Vec::new();
    for (parent, edges) in edges(&modules) {
        for circle in circles(&edges) {
            let at = if parent.is_empty() { "crate".to_owned() } else { parent.join("::") };
            let seen = (0..circle.len()).map(|i| edges[&circle[i]][&circle[(i + 1) % circle.len()]].clone()).collect();
            found.push((format!("at {at}: {} -> {}", circle.join(" -> "), circle[0]), seen));
        }
    }
    found
}

fn rust_files(dir: &Path, out: &mut BTreeSet<PathBuf>) {
    for entry in std::fs::read_dir(dir).unwrap() {
        let path = entry.unwrap().path();
        if path.is_dir() {
            rust_files(&path, out);
        } else if path.extension().is_some_and(|ext| ext == "rs") {
            out.insert(path);
        }
    }
}

#[test]
fn no_import_circle_in_any_crate() {
    let host = Path::new(env!("CARGO_MANIFEST_DIR"));
    let read = |path: &Path| std::fs::read_to_string(path).ok();
    let mut roots = vec![host.join("src/lib.rs"), host.join("src/main.rs")];
    let mut srcs = vec![host.join("src")];
    for entry in std::fs::read_dir(host).unwrap() {
        let dir = entry.unwrap().path();
        if dir.join("Cargo.toml").is_file() && dir.join("src/lib.rs").is_file() {
            roots.push(dir.join("src/lib.rs"));
            srcs.push(dir.join("src"));
        }
    }
    assert!(roots.len() >= 10, "found only {roots:?}");
    let mut problems = Vec::new();
    let mut found = BTreeSet::new();
    let mut seen = BTreeMap::new();
    let mut read_files = BTreeSet::new();
    for root in &roots {
        let krate = root.strip_prefix(host).unwrap().display().to_string();
        for (circle, edges) in circles_of(&read, root, &mut read_files) {
            seen.insert((krate.clone(), circle.clone()), edges);
            found.insert((krate.clone(), circle));
        }
    }
    let known: BTreeSet<(String, String)> = KNOWN.iter().map(|(k, c)| ((*k).to_owned(), (*c).to_owned())).collect();
    for (krate, circle) in found.difference(&known) {
        let edges = &seen[&(krate.clone(), circle.clone())];
        problems.push(format!("{krate}: {circle}\n    (named in {})", edges.join(";\n     ")));
    }
    for (krate, circle) in known.difference(&found) {
        problems.push(format!("{krate}: {circle} is no longer a circle: take it off KNOWN"));
    }
    let mut all = BTreeSet::new();
    for src in &srcs {
        rust_files(src, &mut all);
    }
    for missed in all.difference(&read_files) {
        problems.push(format!("{} is not reached from a crate root: the check cannot read it", missed.display()));
    }
    assert!(problems.is_empty(), "import circles:\n{}", problems.join("\n"));
}

#[test]
fn the_check_sees_a_circle_through_child_files_re_exports_and_inline_modules() {
    let files: BTreeMap<PathBuf, &str> = [
        ("src/lib.rs", "mod a;\nmod b;\nmod c;\npub use a::Thing;"),
        ("src/a.rs", "mod inner;\npub use inner::Thing;"),
        ("src/a/inner.rs", "use crate::b::helper; // crate::c in a comment is not an edge\npub struct Thing;"),
        ("src/b/mod.rs", "mod one;\nmod two;\npub use one::*;"),
        ("src/b/one.rs", "use crate::Thing;\npub fn helper() {}\nfn f() { super::two::g(); }"),
        (
            "src/b/two.rs",
            "pub fn g() { let s = \"super::one and crate::c\"; }\nmod tests {\n    use super::super::one::helper;\n}",
        ),
        ("src/c.rs", "fn f() { let r = r#\"crate::a\"#; }"),
    ]
    .into_iter()
    .map(|(path, text)| (PathBuf::from(path), text))
    .collect();
    let read = |path: &Path| files.get(path).map(|text| (*text).to_owned());
    let mut read_files = BTreeSet::new();
    let found = circles_of(&read, Path::new("src/lib.rs"), &mut read_files);
    let names: Vec<&str> = found.iter().map(|(circle, _)| circle.as_str()).collect();
    assert_eq!(names, ["at crate: a -> b -> a", "at b: one -> two -> one"]);
    assert_eq!(found[0].1, ["src/a/inner.rs: crate::b::helper", "src/b/one.rs: crate::Thing"]);
    assert_eq!(found[1].1, ["src/b/one.rs: super::two::g", "src/b/two.rs: super::super::one::helper"]);
    assert_eq!(read_files.len(), files.len());

    // Without the inline module's import and the re-exported `Thing`, no circle is left.
    let mut fixed = files.clone();
    fixed.insert(PathBuf::from("src/b/two.rs"), "pub fn g() {}");
    fixed.insert(PathBuf::from("src/b/one.rs"), "pub fn helper() {}\nfn f() { super::two::g(); }");
    let read = |path: &Path| fixed.get(path).map(|text| (*text).to_owned());
    assert_eq!(circles_of(&read, Path::new("src/lib.rs"), &mut BTreeSet::new()), Vec::new());
}

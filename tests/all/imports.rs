//! The import graph inside `runtime` and inside `mcp` has no circle: each
//! top-level module of those crates names (as `crate::module`, or `super::`
//! from a top-level file) only modules that do not name it back, directly or
//! through others. A circle means two modules can only be understood, and
//! changed, together; the next contract version or MCP revision would then
//! be edits in both rather than a new module. The test reads the sources,
//! so it fails, naming the circle, as soon as one comes back.

use std::collections::{BTreeMap, BTreeSet};
use std::path::{Path, PathBuf};

/// Circles not broken yet, smallest module first. The test fails when one of
/// these is gone too, so that this list only shrinks.
const KNOWN: &[(&str, &[&str])] = &[];

fn src(krate: &str) -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join(krate).join("src")
}

/// `text` without its comments (line comments and doc comments).
fn code(text: &str) -> String {
    text.lines().map(|line| line.split("//").next().unwrap_or_default()).collect::<Vec<_>>().join("\n")
}

/// Each top-level module of the crate at `src`, with the code of its files:
/// (the file's code, whether `super::` in it means the crate root).
fn modules(src: &Path) -> BTreeMap<String, Vec<(String, bool)>> {
    fn walk(dir: &Path, out: &mut Vec<PathBuf>) {
        for entry in std::fs::read_dir(dir).unwrap() {
            let path = entry.unwrap().path();
            if path.is_dir() {
                walk(&path, out);
            } else if path.extension().is_some_and(|ext| ext == "rs") {
                out.push(path);
            }
        }
    }
    let mut modules: BTreeMap<String, Vec<(String, bool)>> = BTreeMap::new();
    for entry in std::fs::read_dir(src).unwrap() {
        let path = entry.unwrap().path();
        let name = path.file_stem().unwrap().to_string_lossy().into_owned();
        if path.is_dir() {
            let mut files = Vec::new();
            walk(&path, &mut files);
            for file in files {
                let root_super = file.parent() == Some(path.as_path()) && file.file_name().unwrap() == "mod.rs";
                modules
                    .entry(name.clone())
                    .or_default()
                    .push((code(&std::fs::read_to_string(&file).unwrap()), root_super));
            }
        } else if path.extension().is_some_and(|ext| ext == "rs") && name != "lib" && name != "main" {
            modules.entry(name).or_default().push((code(&std::fs::read_to_string(&path).unwrap()), true));
        }
    }
    modules
}

/// The module names a path starting after `prefix` reaches: `crate::a::…`
/// is `a`; `crate::{a, b::c}` is `a` and `b`.
fn named_after(code: &str, prefix: &str) -> Vec<String> {
    let mut names = Vec::new();
    let ident = |text: &str| text.chars().take_while(|c| c.is_alphanumeric() || *c == '_').collect::<String>();
    for (at, _) in code.match_indices(prefix) {
        // Not the tail of a longer path or name (`toolhost_mcp::crate` does not occur; `mycrate::` might).
        if code[..at].chars().last().is_some_and(|c| c.is_alphanumeric() || c == '_') {
            continue;
        }
        let rest = &code[at + prefix.len()..];
        if let Some(group) = rest.strip_prefix('{') {
            let mut depth = 0usize;
            let mut start = true;
            for (i, c) in group.char_indices() {
                match c {
                    '{' => depth += 1,
                    '}' if depth == 0 => break,
                    '}' => depth -= 1,
                    ',' if depth == 0 => start = true,
                    c if c.is_whitespace() => {}
                    _ if start && depth == 0 => {
                        names.push(ident(&group[i..]));
                        start = false;
                    }
                    _ => {}
                }
            }
        } else {
            names.push(ident(rest));
        }
    }
    names
}

/// Which top-level modules each one names.
fn edges(modules: &BTreeMap<String, Vec<(String, bool)>>) -> BTreeMap<String, BTreeSet<String>> {
    let mut edges = BTreeMap::new();
    for (module, files) in modules {
        let mut named = BTreeSet::new();
        for (code, root_super) in files {
            let mut found = named_after(code, "crate::");
            if *root_super {
                found.extend(named_after(code, "super::"));
            }
            named.extend(found.into_iter().filter(|other| other != module && modules.contains_key(other)));
        }
        edges.insert(module.clone(), named);
    }
    edges
}

/// Every circle of `edges`, each once, starting at its smallest module.
fn circles(edges: &BTreeMap<String, BTreeSet<String>>) -> BTreeSet<Vec<String>> {
    fn walk(
        edges: &BTreeMap<String, BTreeSet<String>>,
        start: &str,
        path: &mut Vec<String>,
        out: &mut BTreeSet<Vec<String>>,
    ) {
        let last = path.last().unwrap().clone();
        for next in edges.get(&last).into_iter().flatten() {
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

#[test]
fn no_import_circle_inside_runtime_or_mcp() {
    let mut problems = Vec::new();
    for krate in ["runtime", "mcp"] {
        let found = circles(&edges(&modules(&src(krate))));
        let known: BTreeSet<Vec<String>> = KNOWN
            .iter()
            .filter(|(of, _)| *of == krate)
            .map(|(_, circle)| circle.iter().map(|m| (*m).to_owned()).collect())
            .collect();
        for circle in found.difference(&known) {
            problems.push(format!("{krate}: {} -> {}", circle.join(" -> "), circle[0]));
        }
        for gone in known.difference(&found) {
            problems.push(format!("{krate}: {} is no longer a circle: take it off KNOWN", gone.join(" -> ")));
        }
    }
    assert!(problems.is_empty(), "import circles:\n{}", problems.join("\n"));
}

#[test]
fn the_check_sees_a_circle_through_a_use_group_and_super() {
    let modules: BTreeMap<String, Vec<(String, bool)>> = [
        ("server", "use crate::{caller::Caller, revision};\nfn f() { crate::wire::x(); }"),
        ("revision", "use super::server::ToolServer; // crate::tasks in a comment is not an edge"),
        ("caller", "use crate::wire;"),
        ("wire", ""),
        ("tasks", ""),
    ]
    .into_iter()
    .map(|(name, text)| (name.to_owned(), vec![(code(text), true)]))
    .collect();
    let edges = edges(&modules);
    assert_eq!(edges["server"], ["caller", "revision", "wire"].map(str::to_owned).into());
    assert_eq!(edges["revision"], ["server".to_owned()].into());
    let found = circles(&edges);
    assert_eq!(found, [vec!["revision".to_owned(), "server".to_owned()]].into());
}

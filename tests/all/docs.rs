//! The documentation a newcomer follows: every relative link and anchor in
//! README.md and the book under docs/ leads somewhere, and the README's
//! commands that need no model, network or plugin toolchain run as written.

use crate::common::{self, stderr, stdout};
use pulldown_cmark::{CodeBlockKind, Event, Parser, Tag, TagEnd};
use std::collections::{BTreeMap, HashMap};
use std::path::{Component, Path, PathBuf};
use std::process::Command;

fn repo() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("..").canonicalize().unwrap()
}

/// README.md and every page of the book, as paths relative to the repository.
fn documents() -> Vec<PathBuf> {
    fn walk(dir: &Path, root: &Path, out: &mut Vec<PathBuf>) {
        for entry in std::fs::read_dir(dir).unwrap() {
            let path = entry.unwrap().path();
            if path.is_dir() {
                walk(&path, root, out);
            } else if path.extension().is_some_and(|ext| ext == "md") {
                out.push(path.strip_prefix(root).unwrap().to_path_buf());
            }
        }
    }
    let root = repo();
    let mut out = vec![PathBuf::from("README.md")];
    walk(&root.join("docs"), &root, &mut out);
    out.sort();
    out
}

/// The anchor GitHub gives a heading: lower case, spaces to hyphens, every
/// other character but letters, digits, `-` and `_` dropped.
fn slug(heading: &str) -> String {
    heading
        .trim()
        .to_lowercase()
        .chars()
        .filter_map(|c| match c {
            ' ' => Some('-'),
            c if c.is_alphanumeric() || c == '-' || c == '_' => Some(c),
            _ => None,
        })
        .collect()
}

struct Page {
    anchors: Vec<String>,
    /// (line, destination) of every link and image.
    links: Vec<(usize, String)>,
}

fn read_page(text: &str) -> Page {
    let line_of = |offset: usize| text[..offset].matches('\n').count() + 1;
    let (mut anchors, mut links) = (Vec::new(), Vec::new());
    let mut seen: HashMap<String, usize> = HashMap::new();
    let mut heading: Option<String> = None;
    for (event, range) in Parser::new(text).into_offset_iter() {
        match event {
            Event::Start(Tag::Heading { .. }) => heading = Some(String::new()),
            Event::Text(part) | Event::Code(part) if heading.is_some() => heading.as_mut().unwrap().push_str(&part),
            Event::End(TagEnd::Heading(_)) => {
                let base = slug(&heading.take().unwrap());
                // Repeated headings get -1, -2, … as on GitHub.
                let count = seen.entry(base.clone()).or_insert(0);
                anchors.push(if *count == 0 { base.clone() } else { format!("{base}-{count}") });
                *count += 1;
            }
            Event::Start(Tag::Link { dest_url, .. } | Tag::Image { dest_url, .. }) => {
                links.push((line_of(range.start), dest_url.to_string()));
            }
            _ => {}
        }
    }
    Page { anchors, links }
}

/// `base/relative`, with `..` taken out; `None` when it leaves the repository.
fn resolve(base: &Path, relative: &str) -> Option<PathBuf> {
    let mut out = PathBuf::new();
    for part in base.join(relative).components() {
        match part {
            Component::ParentDir => {
                if !out.pop() {
                    return None;
                }
            }
            Component::Normal(name) => out.push(name),
            Component::CurDir => {}
            _ => return None,
        }
    }
    Some(out)
}

#[test]
fn every_relative_link_and_anchor_in_the_readme_and_the_book_resolves() {
    let root = repo();
    let docs = documents();
    assert!(docs.len() > 10, "the book is there: {docs:?}");
    let pages: BTreeMap<PathBuf, Page> =
        docs.iter().map(|doc| (doc.clone(), read_page(&std::fs::read_to_string(root.join(doc)).unwrap()))).collect();
    let mut broken = Vec::new();
    let mut checked = 0;
    for (doc, page) in &pages {
        for (line, dest) in &page.links {
            if dest.contains("://") || dest.starts_with("mailto:") {
                continue;
            }
            checked += 1;
            let (path, anchor) =
                dest.split_once('#').map_or((dest.as_str(), None), |(path, anchor)| (path, Some(anchor)));
            let target = if path.is_empty() {
                doc.clone()
            } else {
                match resolve(doc.parent().unwrap(), path) {
                    Some(target) => target,
                    None => {
                        broken.push(format!("{}:{line}: {dest} leaves the repository", doc.display()));
                        continue;
                    }
                }
            };
            if !root.join(&target).exists() {
                broken.push(format!("{}:{line}: {dest}: no such file {}", doc.display(), target.display()));
                continue;
            }
            let Some(anchor) = anchor else { continue };
            let anchors = match pages.get(&target) {
                Some(page) => page.anchors.clone(),
                None if target.extension().is_some_and(|ext| ext == "md") => {
                    read_page(&std::fs::read_to_string(root.join(&target)).unwrap()).anchors
                }
                None => {
                    broken
                        .push(format!("{}:{line}: {dest}: an anchor into a file that is not Markdown", doc.display()));
                    continue;
                }
            };
            if !anchors.iter().any(|known| known == anchor) {
                broken.push(format!("{}:{line}: {dest}: {} has no heading #{anchor}", doc.display(), target.display()));
            }
        }
    }
    assert!(checked > 50, "only {checked} relative links were found: is the parser reading the pages?");
    assert!(broken.is_empty(), "broken links:\n{}", broken.join("\n"));
}

#[test]
fn every_page_of_the_book_is_in_its_summary() {
    let root = repo();
    let summary = read_page(&std::fs::read_to_string(root.join("docs/SUMMARY.md")).unwrap());
    let listed: Vec<PathBuf> = summary
        .links
        .iter()
        .filter_map(|(_, dest)| resolve(Path::new("docs"), dest.split('#').next().unwrap()))
        .collect();
    for doc in documents() {
        if doc.starts_with("docs") && doc != Path::new("docs/SUMMARY.md") {
            assert!(listed.contains(&doc), "{} is not in docs/SUMMARY.md", doc.display());
        }
    }
}

#[test]
fn the_slug_is_githubs() {
    for (heading, anchor) in [
        ("Grants", "grants"),
        ("Use from your agent (MCP)", "use-from-your-agent-mcp"),
        ("Traces (OpenTelemetry)", "traces-opentelemetry"),
        ("`toolhost serve` and MCP", "toolhost-serve-and-mcp"),
        ("Typed functions: a plugin without the contract", "typed-functions-a-plugin-without-the-contract"),
        ("HTTP and other capabilities", "http-and-other-capabilities"),
    ] {
        assert_eq!(slug(heading), anchor);
    }
}

/// What a README command line is, for this test.
#[derive(Debug, PartialEq)]
enum Kind {
    /// Run it: it needs nothing but the built host and plugins.
    Run,
    /// It needs a model, the network, a long-running server, a plugin
    /// toolchain or the user's own setup; the reason is kept for the message.
    Skip(&'static str),
}

fn classify(line: &str) -> Kind {
    let words: Vec<&str> = line.split_whitespace().collect();
    let first = words.first().copied().unwrap_or_default();
    let toolhost_at = words.iter().position(|word| *word == "toolhost");
    match first {
        "make" => return Kind::Skip("builds everything (the suite itself is make test)"),
        "export" => return Kind::Skip("the user's own key"),
        "uvx" | "pipx" | "pip" => return Kind::Skip("installs from PyPI (the wheel test covers the wheel)"),
        "claude" | "codex" => return Kind::Skip("another program's setup"),
        "cargo" => return Kind::Skip("builds the host"),
        "cd" | "./build.sh" => return Kind::Skip("a plugin toolchain"),
        _ => {}
    }
    let Some(at) = toolhost_at else { return Kind::Skip("not a toolhost command") };
    let subcommand = words[at + 1..].iter().find(|word| !word.starts_with('-') && !word.contains('/'));
    match subcommand.copied() {
        Some("run" | "chat") => Kind::Skip("a model"),
        Some("serve") => Kind::Skip("a server that runs until stopped"),
        Some("pull" | "push") => Kind::Skip("a registry on the network"),
        Some("compile") if words.iter().any(|word| word.starts_with('~')) => {
            Kind::Skip("the user's own plugins folder")
        }
        _ if words.contains(&".") => Kind::Skip("a plugin built with its language's toolchain"),
        Some("tools" | "call" | "inspect" | "new") => Kind::Run,
        _ => Kind::Skip("an unknown toolhost command"),
    }
}

/// Every line of the README's `sh` code blocks, with its line number.
fn readme_commands() -> Vec<(usize, String)> {
    let text = std::fs::read_to_string(repo().join("README.md")).unwrap();
    let mut out = Vec::new();
    let mut block: Option<usize> = None;
    for (event, range) in Parser::new(&text).into_offset_iter() {
        match event {
            Event::Start(Tag::CodeBlock(CodeBlockKind::Fenced(lang)))
                if matches!(&*lang, "sh" | "bash" | "console") =>
            {
                // The fence's own line; the code starts on the next one.
                block = Some(text[..range.start].matches('\n').count() + 1);
            }
            Event::Text(code) if block.is_some() => {
                let first = block.unwrap();
                for (index, line) in code.lines().enumerate() {
                    if !line.trim().is_empty() && !line.trim_start().starts_with('#') {
                        out.push((first + index + 1, line.to_owned()));
                    }
                }
            }
            Event::End(TagEnd::CodeBlock) => block = None,
            _ => {}
        }
    }
    out
}

#[test]
fn the_readmes_commands_run_as_written() {
    let commands = readme_commands();
    let bin = Path::new(env!("CARGO_BIN_EXE_toolhost")).parent().unwrap().to_path_buf();
    // A folder of its own (`toolhost new` writes into it) that sees the
    // repository's built plugins where the README says they are.
    let work = tempfile::tempdir().unwrap();
    std::os::unix::fs::symlink(common::plugins_src(), work.path().join("plugins")).unwrap();
    let path = format!("{}:{}", bin.display(), std::env::var("PATH").unwrap_or_default());
    let mut ran = 0;
    let mut unknown = Vec::new();
    for (line, command) in &commands {
        match classify(command) {
            Kind::Skip("an unknown toolhost command" | "not a toolhost command") => {
                unknown.push(format!("README.md:{line}: {command}"));
            }
            Kind::Skip(_) => {}
            Kind::Run => {
                let output = Command::new("bash")
                    .args(["-c", command])
                    .current_dir(work.path())
                    .env("PATH", &path)
                    .env("TOOLHOST_CACHE_DIR", common::shared_cache())
                    .env_remove("TOOLHOST_PLUGINS")
                    .env_remove("TOOLHOST_CONFIG")
                    .output()
                    .unwrap();
                assert!(
                    output.status.success(),
                    "README.md:{line}: `{command}` failed ({}):\n{}{}",
                    output.status,
                    stdout(&output),
                    stderr(&output)
                );
                ran += 1;
            }
        }
    }
    assert!(unknown.is_empty(), "README commands this test does not know whether to run:\n{}", unknown.join("\n"));
    assert!(ran >= 6, "only {ran} README commands ran: {commands:?}");
}

#[test]
fn readme_commands_are_classified_by_what_they_need() {
    assert_eq!(classify("toolhost call sha256 '{\"text\":\"hello\"}'"), Kind::Run);
    assert_eq!(classify("echo '{\"text\":\"hi\"}' | toolhost call echo -"), Kind::Run);
    assert_eq!(classify("toolhost --plugins plugins/dist tools"), Kind::Run);
    assert_eq!(classify("toolhost run \"What is 17 * 23?\""), Kind::Skip("a model"));
    assert_eq!(
        classify("toolhost --plugins . call word_count '{}'"),
        Kind::Skip("a plugin built with its language's toolchain")
    );
    assert_eq!(classify("uvx toolhost serve"), Kind::Skip("installs from PyPI (the wheel test covers the wheel)"));
    assert_eq!(classify("rm -rf /"), Kind::Skip("not a toolhost command"));
    assert_eq!(classify("toolhost frobnicate"), Kind::Skip("an unknown toolhost command"));
}

/// The name toolhost's wheel is published under on PyPI (`pyproject.toml`);
/// the command it installs stays `toolhost`. (`toolhost` itself on PyPI is
/// another project's.)
const DISTRIBUTION: &str = "toolhost-wasm";

/// Packages of other projects the book tells plugin authors or operators to
/// install, each for a reason; any other name in an install line fails the
/// test below until it is checked on its registry and added here.
const THIRD_PARTY: &[(&str, &str)] = &[
    ("wit-bindgen-cli", "the C plugin toolchain (crates.io, the Bytecode Alliance's)"),
    ("wasm-component-ld", "the C plugin toolchain (crates.io, the Bytecode Alliance's)"),
    ("@modelcontextprotocol/server-everything", "an example external MCP server (npm, the MCP project's)"),
];

/// The packages `code` (a code block or an inline code span) installs or
/// runs from a registry: `pip`/`pipx`/`uv pip`/`uv tool install X`, `uvx X`
/// and `uvx --from X`, `npm install X`, `npx X`, `cargo install X`, also
/// spelled as an agent configuration's `"command": "uvx", "args": ["X", …]`.
/// Local paths (a wheel, `--path host`) are not packages.
fn installed_packages(code: &str) -> Vec<String> {
    // A shell comment says, it does not run.
    let code = match code.find(" #") {
        Some(at) => &code[..at],
        None if code.trim_start().starts_with('#') => "",
        None => code,
    };
    let spaced: String = code.chars().map(|c| if "\"'[]{},=:`".contains(c) { ' ' } else { c }).collect();
    let words: Vec<&str> = spaced.split_whitespace().collect();
    // Options that take a value, so that the value is not read as a package.
    const VALUED: &[&str] = &[
        "--target",
        "-t",
        "-r",
        "--requirement",
        "--index-url",
        "-i",
        "--version",
        "--features",
        "--python",
        "-p",
        "--root",
        "--with",
    ];
    let mut found = Vec::new();
    let mut at = 0;
    while at < words.len() {
        let rest = &words[at..];
        let skip = match rest {
            ["pip" | "pip3" | "pipx", "install", ..] => 2,
            ["uv", "pip" | "tool", "install", ..] => 3,
            ["npm", "install" | "i" | "add", ..] => 2,
            ["cargo", "install" | "binstall", ..] => 2,
            ["uvx" | "npx", ..] => 1,
            _ => {
                at += 1;
                continue;
            }
        };
        let mut next = at + skip;
        // `args` between `command = "uvx"` and its list in a configuration.
        if words.get(next) == Some(&"args") {
            next += 1;
        }
        while let Some(word) = words.get(next) {
            if *word == "--from" {
                if let Some(package) = words.get(next + 1) {
                    found.push((*package).to_owned());
                }
                next = usize::MAX - 1;
                break;
            }
            if *word == "--path" {
                next = usize::MAX - 1;
                break;
            }
            if VALUED.contains(word) {
                next += 2;
            } else if word.starts_with('-') {
                next += 1;
            } else {
                break;
            }
        }
        if let Some(word) = words.get(next) {
            found.push((*word).to_owned());
        }
        at += skip;
    }
    found
        .into_iter()
        .filter(|package| {
            let local = package.ends_with(".whl") || package.starts_with('.') || package.starts_with('~');
            let path = package.contains('/') && !package.starts_with('@');
            !local && !path && package != "…" && package != "..."
        })
        .map(|package| {
            // `NAME==1.2`, `NAME@1.2`, `NAME[extra]`: the name.
            let end = package[1..].find(['=', '<', '>', '@', '[']).map_or(package.len(), |end| end + 1);
            package[..end].to_owned()
        })
        .collect()
}

/// Every inline code span and every line of a code block of `text`, with
/// its line; a block's line naming a launcher alone (`command = "uvx"`) is
/// also given joined with the next (its `args = [...]`).
fn code_of(text: &str) -> Vec<(usize, String)> {
    let line_of = |offset: usize| text[..offset].matches('\n').count() + 1;
    let mut out = Vec::new();
    let mut in_block = false;
    for (event, range) in Parser::new(text).into_offset_iter() {
        match event {
            Event::Start(Tag::CodeBlock(_)) => in_block = true,
            Event::End(TagEnd::CodeBlock) => in_block = false,
            Event::Text(code) if in_block => {
                let first = line_of(range.start);
                let lines: Vec<&str> = code.lines().collect();
                for (index, line) in lines.iter().enumerate() {
                    out.push((first + index, (*line).to_owned()));
                    let launcher = line.contains("uvx") || line.contains("npx");
                    if launcher
                        && installed_packages(line).is_empty()
                        && let Some(next) = lines.get(index + 1)
                    {
                        out.push((first + index, format!("{line} {next}")));
                    }
                }
            }
            Event::Code(code) => out.push((line_of(range.start), code.into_string())),
            _ => {}
        }
    }
    out
}

#[test]
fn every_install_line_in_the_readme_and_the_book_names_our_package_or_a_listed_tool() {
    let pyproject = std::fs::read_to_string(repo().join("pyproject.toml")).unwrap();
    assert!(
        pyproject.contains(&format!("name = \"{DISTRIBUTION}\"")),
        "pyproject.toml names the distribution {DISTRIBUTION}"
    );
    let mut wrong = Vec::new();
    let mut ours = 0;
    for document in documents() {
        let text = std::fs::read_to_string(repo().join(&document)).unwrap();
        for (line, code) in code_of(&text) {
            for package in installed_packages(&code) {
                if package == DISTRIBUTION {
                    ours += 1;
                } else if !THIRD_PARTY.iter().any(|(name, _)| *name == package) {
                    wrong.push(format!("{}:{line}: `{code}` installs `{package}`", document.display()));
                }
            }
        }
    }
    wrong.dedup();
    assert!(
        wrong.is_empty(),
        "install lines naming a package that is not ours ({DISTRIBUTION}) nor a listed third-party tool:\n{}",
        wrong.join("\n")
    );
    assert!(ours >= 5, "the README and the book tell users to install {DISTRIBUTION} ({ours} lines)");
}

#[test]
fn install_lines_are_read_as_a_user_would() {
    assert_eq!(installed_packages("pipx install toolhost"), ["toolhost"]);
    assert_eq!(installed_packages("uvx toolhost --plugins ~/p serve"), ["toolhost"]);
    assert_eq!(installed_packages("uvx --from toolhost-wasm toolhost --plugins ~/p serve"), ["toolhost-wasm"]);
    assert_eq!(installed_packages("uvx --from toolhost-wasm==0.1.0 toolhost --version"), ["toolhost-wasm"]);
    assert_eq!(
        installed_packages("claude mcp add toolhost -- uvx --from toolhost-wasm toolhost serve"),
        ["toolhost-wasm"]
    );
    assert_eq!(
        installed_packages(r#"{ "command": "uvx", "args": ["--from", "toolhost-wasm", "toolhost", "serve"] }"#),
        ["toolhost-wasm"]
    );
    assert_eq!(installed_packages(r#"command = "uvx" args = ["toolhost", "serve"]"#), ["toolhost"]);
    assert_eq!(installed_packages("python3 -m pip install --quiet --target src requests"), ["requests"]);
    assert_eq!(installed_packages("pip install dist/toolhost_wasm-0.1.0-py3-none-any.whl"), Vec::<String>::new());
    assert_eq!(installed_packages("uvx --from dist/toolhost_wasm-0.1.0.whl toolhost"), Vec::<String>::new());
    assert_eq!(installed_packages("cargo install --path host"), Vec::<String>::new());
    assert_eq!(installed_packages("cargo install wit-bindgen-cli --version 0.63.0"), ["wit-bindgen-cli"]);
    assert_eq!(
        installed_packages("npx -y @modelcontextprotocol/server-everything"),
        ["@modelcontextprotocol/server-everything"]
    );
    assert_eq!(installed_packages("npm install toolhost"), ["toolhost"]);
    assert_eq!(installed_packages("uv tool install toolhost@0.1.0"), ["toolhost"]);
    assert_eq!(installed_packages("./build.sh      # npm install on first use"), Vec::<String>::new());
}

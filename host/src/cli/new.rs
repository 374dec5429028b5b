//! `toolhost new NAME --lang rust|python|js|c`: starts a plugin project from
//! a template.
//!
//! The templates are the folders under `sdk/templates/`, compiled into the
//! binary together with the contract (`wit/v0.1.0/plugin.wit`) and the C SDK
//! (`sdk/c/`), so an installed `toolhost` scaffolds without the repository.
//! The toolchain versions a template pins are read from the files that pin
//! them for the bundled examples (`plugins/python/requirements.txt`,
//! `plugins/js/package.json`, `plugins/c/build.sh`), so the two cannot drift.
//! A project is written into a temporary folder beside its destination and
//! renamed into place: a failure leaves nothing half-written, and nothing that
//! exists is overwritten.

use anyhow::{Context, Result, bail};
use std::path::{Path, PathBuf};
use std::process::ExitCode;

#[derive(clap::Args)]
pub struct Args {
    /// The plugin's name, which is also its tool's name, its file's (NAME.wasm) and its folder's
    name: String,

    /// The language of the plugin
    #[arg(long, value_enum)]
    lang: Lang,

    /// Where to create the project; it must not exist, or be an empty folder [default: ./NAME]
    #[arg(long, value_name = "PATH")]
    dir: Option<PathBuf>,

    /// For --lang rust: the toolhost-sdk crate's folder [default: sdk/ of the checkout toolhost was built from]
    #[arg(long, env = "TOOLHOST_SDK", value_name = "PATH")]
    sdk: Option<PathBuf>,
}

#[derive(Clone, Copy, PartialEq, Eq, Debug, clap::ValueEnum)]
enum Lang {
    Rust,
    Python,
    #[value(alias = "javascript")]
    Js,
    C,
}

/// One file of a template: its path in the project, its text, and whether it is a script.
struct File {
    path: &'static str,
    text: &'static str,
    executable: bool,
}

const fn file(path: &'static str, text: &'static str) -> File {
    File { path, text, executable: false }
}

const fn script(path: &'static str, text: &'static str) -> File {
    File { path, text, executable: true }
}

macro_rules! repo_file {
    ($path:literal) => {
        include_str!(concat!(env!("CARGO_MANIFEST_DIR"), "/../", $path))
    };
}

const WIT: &str = repo_file!("wit/v0.1.0/plugin.wit");

const RUST: &[File] = &[
    file("Cargo.toml", repo_file!("sdk/templates/rust/Cargo.toml.template")),
    file("src/lib.rs", repo_file!("sdk/templates/rust/src/lib.rs")),
    script("build.sh", repo_file!("sdk/templates/rust/build.sh")),
    file("README.md", repo_file!("sdk/templates/rust/README.md")),
    file(".gitignore", repo_file!("sdk/templates/rust/.gitignore")),
];

const PYTHON: &[File] = &[
    file("src/app.py", repo_file!("sdk/templates/python/src/app.py")),
    file("wit/plugin.wit", WIT),
    script("build.sh", repo_file!("sdk/templates/python/build.sh")),
    file("README.md", repo_file!("sdk/templates/python/README.md")),
    file(".gitignore", repo_file!("sdk/templates/python/.gitignore")),
];

const JS: &[File] = &[
    file("app.js", repo_file!("sdk/templates/js/app.js")),
    file("package.json", repo_file!("sdk/templates/js/package.json")),
    file("wit/plugin.wit", WIT),
    script("build.sh", repo_file!("sdk/templates/js/build.sh")),
    file("README.md", repo_file!("sdk/templates/js/README.md")),
    file(".gitignore", repo_file!("sdk/templates/js/.gitignore")),
];

const C: &[File] = &[
    file("tools.c", repo_file!("sdk/templates/c/tools.c")),
    file("toolhost.h", repo_file!("sdk/c/toolhost.h")),
    file("toolhost.c", repo_file!("sdk/c/toolhost.c")),
    file("wit/plugin.wit", WIT),
    script("build.sh", repo_file!("sdk/templates/c/build.sh")),
    file("README.md", repo_file!("sdk/templates/c/README.md")),
    file(".gitignore", repo_file!("sdk/templates/c/.gitignore")),
];

/// Where the examples pin their toolchains.
const PYTHON_REQUIREMENTS: &str = repo_file!("plugins/python/requirements.txt");
const JS_PACKAGE: &str = repo_file!("plugins/js/package.json");
const C_BUILD: &str = repo_file!("plugins/c/build.sh");

/// The toolhost-sdk crate of the checkout this binary was built from.
const BUILT_FROM_SDK: &str = concat!(env!("CARGO_MANIFEST_DIR"), "/../sdk");

impl Lang {
    fn files(self) -> &'static [File] {
        match self {
            Lang::Rust => RUST,
            Lang::Python => PYTHON,
            Lang::Js => JS,
            Lang::C => C,
        }
    }

    fn label(self) -> &'static str {
        match self {
            Lang::Rust => "Rust",
            Lang::Python => "Python",
            Lang::Js => "JavaScript",
            Lang::C => "C",
        }
    }
}

pub fn run(args: &Args) -> Result<ExitCode> {
    check_name(&args.name)?;
    let dir = args.dir.clone().unwrap_or_else(|| PathBuf::from(&args.name));
    let mut values = vec![
        ("__NAME__", args.name.clone()),
        ("__CRATE__", args.name.replace('-', "_")),
        ("__COMPONENTIZE_PY__", pinned_componentize_py()?),
        ("__COMPONENTIZE_JS__", pinned_npm("@bytecodealliance/componentize-js")?),
        ("__PREVIEW2_SHIM__", pinned_npm("@bytecodealliance/preview2-shim")?),
        ("__WIT_BINDGEN__", pinned_wit_bindgen()?),
    ];
    if args.lang == Lang::Rust {
        let sdk = find_sdk(args.sdk.as_deref())?;
        // A TOML string, quoted and escaped, for `path = __SDK_PATH__`.
        values.push(("__SDK_PATH__", toml::Value::String(sdk.display().to_string()).to_string()));
    }
    let files: Vec<(&str, String, bool)> =
        args.lang.files().iter().map(|file| (file.path, fill(file.text, &values), file.executable)).collect();
    write_project(&dir, &files)?;

    let shown = dir.display();
    println!("created the {} plugin `{}` in {shown}", args.lang.label(), args.name);
    println!();
    println!("  cd {shown} && ./build.sh          # writes {}.wasm", args.name);
    println!("  toolhost --plugins {shown} call {} '{{\"text\":\"hello plugin world\"}}'", args.name);
    println!();
    println!("then copy {}.wasm into your plugins folder; {shown}/README.md says more.", args.name);
    Ok(ExitCode::SUCCESS)
}

/// A plugin name: 1 to 64 lower-case ASCII letters, digits, `_` or `-`,
/// starting with a letter. It names the tool (whose names allow
/// `[a-zA-Z0-9_-]{1,64}`), the file and the crate or package.
fn check_name(name: &str) -> Result<()> {
    let valid = (1..=64).contains(&name.len())
        && name.starts_with(|c: char| c.is_ascii_lowercase())
        && name.chars().all(|c| c.is_ascii_lowercase() || c.is_ascii_digit() || c == '_' || c == '-');
    if valid {
        return Ok(());
    }
    let mut suggestion: String = name
        .trim()
        .chars()
        .map(|c| if c.is_ascii_alphanumeric() || c == '-' { c.to_ascii_lowercase() } else { '_' })
        .collect();
    if !suggestion.starts_with(|c: char| c.is_ascii_lowercase()) {
        suggestion.insert_str(0, "tool_");
    }
    suggestion.truncate(64);
    bail!(
        "`{name}` is not a valid plugin name: use 1 to 64 lower-case letters, digits, `_` or `-`, \
         starting with a letter (did you mean `{suggestion}`?); the name is also the tool's name \
         and the plugin's file name"
    )
}

fn fill(template: &str, values: &[(&str, String)]) -> String {
    values.iter().fold(template.to_owned(), |text, (placeholder, value)| text.replace(placeholder, value))
}

fn find_sdk(flag: Option<&Path>) -> Result<PathBuf> {
    let candidate = flag.unwrap_or(Path::new(BUILT_FROM_SDK));
    let manifest =
        toolhost::readfile::read_regular_text(&candidate.join("Cargo.toml"), toolhost::readfile::limits::TOML)
            .unwrap_or_default();
    if !manifest.lines().any(|line| line.trim() == "name = \"toolhost-sdk\"") {
        bail!(
            "the Rust template depends on the toolhost-sdk crate, which is not on crates.io yet, and {} \
             is not its folder: pass --sdk PATH (or set TOOLHOST_SDK) to the sdk/ folder of a toolhost checkout",
            candidate.display()
        );
    }
    candidate
        .canonicalize()
        .with_context(|| format!("could not resolve the toolhost-sdk folder {}", candidate.display()))
}

fn pinned_componentize_py() -> Result<String> {
    PYTHON_REQUIREMENTS
        .lines()
        .find_map(|line| line.trim().strip_prefix("componentize-py=="))
        .map(str::to_owned)
        .context("plugins/python/requirements.txt pins no componentize-py version (this toolhost build is broken)")
}

fn pinned_npm(package: &str) -> Result<String> {
    let manifest: serde_json::Value = serde_json::from_str(JS_PACKAGE)
        .context("plugins/js/package.json is not JSON (this toolhost build is broken)")?;
    manifest["dependencies"][package]
        .as_str()
        .map(str::to_owned)
        .with_context(|| format!("plugins/js/package.json pins no {package} version (this toolhost build is broken)"))
}

fn pinned_wit_bindgen() -> Result<String> {
    C_BUILD
        .lines()
        .find_map(|line| line.trim().strip_prefix("WIT_BINDGEN_VERSION="))
        .map(str::to_owned)
        .context("plugins/c/build.sh pins no wit-bindgen version (this toolhost build is broken)")
}

/// Writes `files` into a new folder at `dir`: first into a temporary folder
/// beside it, then renamed into place.
fn write_project(dir: &Path, files: &[(&str, String, bool)]) -> Result<()> {
    if let Ok(mut entries) = std::fs::read_dir(dir) {
        if entries.next().is_some() {
            bail!(
                "{} already exists and is not empty: toolhost new never overwrites; pick another --dir",
                dir.display()
            );
        }
    } else if dir.exists() {
        bail!(
            "{} already exists and is not a folder: toolhost new never overwrites; pick another --dir",
            dir.display()
        );
    }
    let parent = match dir.parent() {
        Some(parent) if !parent.as_os_str().is_empty() => parent.to_owned(),
        _ => PathBuf::from("."),
    };
    std::fs::create_dir_all(&parent).with_context(|| format!("could not create {}", parent.display()))?;
    let name = dir.file_name().map(|name| name.to_string_lossy().into_owned()).unwrap_or_default();
    let staging = parent.join(format!(".{name}.toolhost-new-{}", std::process::id()));
    std::fs::create_dir(&staging)
        .with_context(|| format!("could not create the temporary folder {}", staging.display()))?;
    let written = write_files(&staging, files).and_then(|()| {
        // `rename` replaces an empty folder and refuses a non-empty one, so a
        // folder filled since the check above is not overwritten either.
        std::fs::rename(&staging, dir).with_context(|| format!("could not move the new project into {}", dir.display()))
    });
    if written.is_err() {
        let _ = std::fs::remove_dir_all(&staging);
    }
    written
}

fn write_files(root: &Path, files: &[(&str, String, bool)]) -> Result<()> {
    for (path, text, executable) in files {
        let target = root.join(path);
        if let Some(folder) = target.parent() {
            std::fs::create_dir_all(folder).with_context(|| format!("could not create {}", folder.display()))?;
        }
        std::fs::write(&target, text).with_context(|| format!("could not write {}", target.display()))?;
        if *executable {
            use std::os::unix::fs::PermissionsExt;
            std::fs::set_permissions(&target, std::fs::Permissions::from_mode(0o755))
                .with_context(|| format!("could not make {} executable", target.display()))?;
        }
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn accepts_plugin_names() {
        for name in ["a", "word_count", "my-tool", "t2", &"x".repeat(64)] {
            assert!(check_name(name).is_ok(), "{name}");
        }
    }

    #[test]
    fn rejects_plugin_names_with_a_suggestion() {
        let cases = [
            ("", "tool_"),
            ("Word Count", "word_count"),
            ("2fast", "tool_2fast"),
            ("_hidden", "tool__hidden"),
            ("café", "caf_"),
            ("a/b", "a_b"),
        ];
        for (name, suggestion) in cases {
            let message = check_name(name).unwrap_err().to_string();
            assert!(message.contains(&format!("did you mean `{suggestion}`?")), "{name}: {message}");
            assert!(message.contains("lower-case letters"), "{name}: {message}");
        }
        assert!(check_name(&"x".repeat(65)).is_err());
    }

    #[test]
    fn the_pinned_toolchain_versions_are_found() {
        for version in [
            pinned_componentize_py().unwrap(),
            pinned_npm("@bytecodealliance/componentize-js").unwrap(),
            pinned_npm("@bytecodealliance/preview2-shim").unwrap(),
            pinned_wit_bindgen().unwrap(),
        ] {
            assert!(version.chars().next().is_some_and(|c| c.is_ascii_digit()), "{version}");
        }
    }

    #[test]
    fn every_placeholder_in_a_template_is_filled() {
        let values = [
            "__NAME__",
            "__CRATE__",
            "__COMPONENTIZE_PY__",
            "__COMPONENTIZE_JS__",
            "__PREVIEW2_SHIM__",
            "__WIT_BINDGEN__",
            "__SDK_PATH__",
        ]
        .map(|placeholder| (placeholder, "x".to_owned()));
        for lang in [Lang::Rust, Lang::Python, Lang::Js, Lang::C] {
            for file in lang.files() {
                let text = fill(file.text, &values);
                // C's `__attribute__` and Python's `__init__` are not placeholders.
                let left = text.match_indices("__").filter(|(at, _)| {
                    let rest = &text[at + 2..];
                    rest.starts_with(|c: char| c.is_ascii_uppercase())
                });
                assert_eq!(left.count(), 0, "{lang:?} {}: a placeholder is left", file.path);
            }
        }
    }
}

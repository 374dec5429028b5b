//! `toolhost new NAME --lang rust|python|js|c [--typed]`: starts a plugin
//! project from a template: written against toolhost's contract with its
//! SDK, or (`--typed`) as a plain component of typed functions
//! (`sdk/templates/typed/`: one world, `wit/world.wit`, and its
//! implementation), which needs no SDK and runs in any component host.
//!
//! The templates are the folders under `sdk/templates/`, compiled into the
//! binary together with everything a project needs besides its language's
//! toolchain: the contract (`wit/v0.2.0/plugin.wit` for the Python,
//! JavaScript and C projects), the Rust SDK's source (`sdk/src/`, written into
//! the project as `toolhost-sdk/`), the C SDK (`sdk/c/`), the Python helpers
//! (`sdk/python/`: `toolhost.py` and the HTTP helper), the JavaScript helper
//! (`sdk/js/toolhost.js`) and the world with `wasi:http` that the C and Python
//! projects build against (`sdk/wit-http/`).
//! So an installed `toolhost` scaffolds without the repository, and nothing in
//! a project refers to where toolhost was built.
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

    /// Write the tool as a plain typed function (a WIT world and its implementation, no SDK),
    /// not against toolhost's contract
    #[arg(long)]
    typed: bool,

    /// With --lang rust: write the tool as a WASI 0.3 `async func` (wit-bindgen's async exports and the
    /// `wasip3` crate); implies --typed
    #[arg(long = "async")]
    asynchronous: bool,
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

/// Contract 0.2.0, which every project is written against.
const WIT: &str = repo_file!("wit/v0.2.0/plugin.wit");

/// The world with `wasi:http` (sdk/wit-http) that the C and Python projects
/// build against: `wit/world.wit`, and its dependencies in `wit/deps/`.
const WIT_HTTP: &[File] = &[
    file("wit/world.wit", repo_file!("sdk/wit-http/world.wit")),
    file("wit/deps/toolhost-plugin.wit", WIT),
    file("wit/deps/cli.wit", repo_file!("sdk/wit-http/deps/cli.wit")),
    file("wit/deps/clocks.wit", repo_file!("sdk/wit-http/deps/clocks.wit")),
    file("wit/deps/filesystem.wit", repo_file!("sdk/wit-http/deps/filesystem.wit")),
    file("wit/deps/http.wit", repo_file!("sdk/wit-http/deps/http.wit")),
    file("wit/deps/io.wit", repo_file!("sdk/wit-http/deps/io.wit")),
    file("wit/deps/random.wit", repo_file!("sdk/wit-http/deps/random.wit")),
    file("wit/deps/sockets.wit", repo_file!("sdk/wit-http/deps/sockets.wit")),
];

const RUST: &[File] = &[
    file("Cargo.toml", repo_file!("sdk/templates/rust/Cargo.toml.template")),
    file("src/lib.rs", repo_file!("sdk/templates/rust/src/lib.rs")),
    file("toolhost-sdk/Cargo.toml", repo_file!("sdk/templates/rust/toolhost-sdk.Cargo.toml")),
    file("toolhost-sdk/src/lib.rs", repo_file!("sdk/src/lib.rs")),
    file("toolhost-sdk/src/__private.rs", repo_file!("sdk/src/__private.rs")),
    file("toolhost-sdk/src/call.rs", repo_file!("sdk/src/call.rs")),
    file("toolhost-sdk/src/output.rs", repo_file!("sdk/src/output.rs")),
    file("toolhost-sdk/src/http.rs", repo_file!("sdk/src/http.rs")),
    file("toolhost-sdk/src/log.rs", repo_file!("sdk/src/log.rs")),
    // Where toolhost-sdk/src/__private.rs reads the contract from (`../wit/v0.2.0`).
    file("wit/v0.2.0/plugin.wit", WIT),
    script("build.sh", repo_file!("sdk/templates/rust/build.sh")),
    file("README.md", repo_file!("sdk/templates/rust/README.md")),
    file(".gitignore", repo_file!("sdk/templates/rust/.gitignore")),
];

const PYTHON: &[File] = &[
    file("src/app.py", repo_file!("sdk/templates/python/src/app.py")),
    file("src/toolhost.py", repo_file!("sdk/python/toolhost.py")),
    file("src/toolhost_http.py", repo_file!("sdk/python/toolhost_http.py")),
    script("build.sh", repo_file!("sdk/templates/python/build.sh")),
    file("README.md", repo_file!("sdk/templates/python/README.md")),
    file(".gitignore", repo_file!("sdk/templates/python/.gitignore")),
];

const JS: &[File] = &[
    file("app.js", repo_file!("sdk/templates/js/app.js")),
    file("toolhost.js", repo_file!("sdk/js/toolhost.js")),
    file("package.json", repo_file!("sdk/templates/js/package.json")),
    file("wit/plugin.wit", WIT),
    script("build.sh", repo_file!("sdk/templates/js/build.sh")),
    file("README.md", repo_file!("sdk/templates/js/README.md")),
    file(".gitignore", repo_file!("sdk/templates/js/.gitignore")),
];

/// A typed-function project: the world, and per language its implementation.
const TYPED_WIT: File = file("wit/world.wit", repo_file!("sdk/templates/typed/world.wit"));
const TYPED_README: File = file("README.md", repo_file!("sdk/templates/typed/README.md"));
/// The last step of a typed project's `build.sh`.
const TYPED_EMBED_DOCS: &str = repo_file!("sdk/templates/typed/embed-docs.sh");

const TYPED_RUST: &[File] = &[
    file("Cargo.toml", repo_file!("sdk/templates/typed/rust/Cargo.toml.template")),
    file("src/lib.rs", repo_file!("sdk/templates/typed/rust/src/lib.rs")),
    script("build.sh", repo_file!("sdk/templates/rust/build.sh")),
    file(".gitignore", repo_file!("sdk/templates/rust/.gitignore")),
    TYPED_WIT,
    TYPED_README,
];

/// A typed Rust project whose functions are WASI 0.3 `async func`s.
const TYPED_RUST_ASYNC: &[File] = &[
    file("Cargo.toml", repo_file!("sdk/templates/typed/rust-async/Cargo.toml.template")),
    file("src/lib.rs", repo_file!("sdk/templates/typed/rust-async/src/lib.rs")),
    script("build.sh", repo_file!("sdk/templates/rust/build.sh")),
    file(".gitignore", repo_file!("sdk/templates/rust/.gitignore")),
    file("wit/world.wit", repo_file!("sdk/templates/typed/rust-async/world.wit")),
    TYPED_README,
];

const TYPED_PYTHON: &[File] = &[
    file("src/app.py", repo_file!("sdk/templates/typed/python/src/app.py")),
    script("build.sh", repo_file!("sdk/templates/python/build.sh")),
    file(".gitignore", repo_file!("sdk/templates/python/.gitignore")),
    TYPED_WIT,
    TYPED_README,
];

const TYPED_JS: &[File] = &[
    file("app.js", repo_file!("sdk/templates/typed/js/app.js")),
    file("package.json", repo_file!("sdk/templates/js/package.json")),
    script("build.sh", repo_file!("sdk/templates/js/build.sh")),
    file(".gitignore", repo_file!("sdk/templates/js/.gitignore")),
    TYPED_WIT,
    TYPED_README,
];

const TYPED_C: &[File] = &[
    file("tools.c", repo_file!("sdk/templates/typed/c/tools.c")),
    script("build.sh", repo_file!("sdk/templates/c/build.sh")),
    file(".gitignore", repo_file!("sdk/templates/c/.gitignore")),
    TYPED_WIT,
    TYPED_README,
];

const C: &[File] = &[
    file("tools.c", repo_file!("sdk/templates/c/tools.c")),
    file("toolhost.h", repo_file!("sdk/c/toolhost.h")),
    file("toolhost.c", repo_file!("sdk/c/toolhost.c")),
    file("toolhost_json.h", repo_file!("sdk/c/toolhost_json.h")),
    file("toolhost_json.c", repo_file!("sdk/c/toolhost_json.c")),
    file("toolhost_http.h", repo_file!("sdk/c/toolhost_http.h")),
    file("toolhost_http.c", repo_file!("sdk/c/toolhost_http.c")),
    script("build.sh", repo_file!("sdk/templates/c/build.sh")),
    file("README.md", repo_file!("sdk/templates/c/README.md")),
    file(".gitignore", repo_file!("sdk/templates/c/.gitignore")),
];

/// Where the examples pin their toolchains.
const PYTHON_REQUIREMENTS: &str = repo_file!("plugins/python/requirements.txt");
const JS_PACKAGE: &str = repo_file!("plugins/js/package.json");
const C_BUILD: &str = repo_file!("plugins/c/build.sh");
const RUST_TYPED: &str = repo_file!("plugins/testing/typed_shop/Cargo.toml");
const RUST_ASYNC: &str = repo_file!("plugins/testing/async_tools/Cargo.toml");

/// The world a contract project's Python and C builds bind to (sdk/wit-http).
const CONTRACT_WORLD: &str = "toolhost:plugin-with-http/plugin@0.2.0";

impl Lang {
    fn files(self, typed: bool, asynchronous: bool) -> impl Iterator<Item = &'static File> {
        let (own, wit): (&[File], &[File]) = match (self, typed) {
            (Lang::Rust, _) if asynchronous => (TYPED_RUST_ASYNC, &[]),
            (Lang::Rust, false) => (RUST, &[]),
            (Lang::Python, false) => (PYTHON, WIT_HTTP),
            (Lang::Js, false) => (JS, &[]),
            (Lang::C, false) => (C, WIT_HTTP),
            (Lang::Rust, true) => (TYPED_RUST, &[]),
            (Lang::Python, true) => (TYPED_PYTHON, &[]),
            (Lang::Js, true) => (TYPED_JS, &[]),
            (Lang::C, true) => (TYPED_C, &[]),
        };
        own.iter().chain(wit)
    }

    /// The file a typed project implements its world in.
    fn source(self) -> &'static str {
        match self {
            Lang::Rust => "src/lib.rs",
            Lang::Python => "src/app.py",
            Lang::Js => "app.js",
            Lang::C => "tools.c",
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
    if args.asynchronous && args.lang != Lang::Rust {
        bail!(
            "--async is offered for --lang rust only (wit-bindgen's async exports); for {}, leave it out \
             (a synchronous typed plugin with --typed runs the same)",
            args.lang.label()
        );
    }
    let typed = args.typed || args.asynchronous;
    let dir = args.dir.clone().unwrap_or_else(|| PathBuf::from(&args.name));
    let func = function_name(&args.name);
    let (world, world_says) = match typed {
        true => ("plugin", "the functions that are its tools"),
        false => (CONTRACT_WORLD, "toolhost's contract, and wasi:http for the HTTP helper"),
    };
    let values = [
        // First, as it holds other placeholders: a typed project's build ends
        // by embedding its WIT's docs (a contract plugin describes its tools itself).
        ("__EMBED_DOCS__\n", if typed { TYPED_EMBED_DOCS.to_owned() } else { String::new() }),
        ("__NAME__", args.name.clone()),
        ("__CRATE__", args.name.replace('-', "_")),
        ("__FUNC_SNAKE__", func.replace('-', "_")),
        ("__FUNC_CAMEL__", camel_case(&func)),
        ("__FUNC__", func.clone()),
        ("__WORLD_SAYS__", world_says.to_owned()),
        ("__WORLD__", world.to_owned()),
        (
            "__LANG_FLAG__",
            clap::ValueEnum::to_possible_value(&args.lang).map(|v| v.get_name().to_owned()).unwrap_or_default(),
        ),
        ("__LANG__", args.lang.label().to_owned()),
        ("__TYPED_FLAG__", if args.asynchronous { "--async" } else { "--typed" }.to_owned()),
        ("__SOURCE__", args.lang.source().to_owned()),
        ("__COMPONENTIZE_PY__", pinned_componentize_py()?),
        ("__COMPONENTIZE_JS__", pinned_npm("@bytecodealliance/componentize-js")?),
        ("__PREVIEW2_SHIM__", pinned_npm("@bytecodealliance/preview2-shim")?),
        ("__WIT_BINDGEN_RUST__", pinned_crate(RUST_TYPED, "typed_shop", "wit-bindgen")?),
        ("__WIT_BINDGEN_ASYNC__", pinned_crate(RUST_ASYNC, "async_tools", "wit-bindgen")?),
        ("__WASIP3__", pinned_crate(RUST_ASYNC, "async_tools", "wasip3")?),
        ("__WIT_BINDGEN__", pinned_wit_bindgen()?),
    ];
    let files: Vec<(&str, String, bool)> = args
        .lang
        .files(typed, args.asynchronous)
        .map(|file| (file.path, fill(file.text, &values), file.executable))
        .collect();
    write_project(&dir, &files)?;

    let shown = dir.display();
    let kind = match (typed, args.asynchronous) {
        (_, true) => " async (WASI 0.3) typed-function",
        (true, false) => " typed-function",
        (false, false) => "",
    };
    println!("created the {}{kind} plugin `{}` in {shown}", args.lang.label(), args.name);
    println!();
    // Steps typed in order: the second runs inside the project, where the
    // first left the author and build.sh wrote the component.
    println!("  cd {} && ./build.sh          # writes {}.wasm", shell_word(&shown.to_string()), args.name);
    let tool = if typed { &func } else { &args.name };
    println!("  toolhost --plugins . call {tool} '{{\"text\":\"hello plugin world\"}}'");
    println!();
    println!("then copy {}.wasm into your plugins folder; README.md there says more.", args.name);
    Ok(ExitCode::SUCCESS)
}

/// `text` as one shell word: as it is when it holds only characters no shell
/// treats specially, else in single quotes.
fn shell_word(text: &str) -> String {
    let plain = !text.is_empty()
        && text
            .chars()
            .all(|c| c.is_ascii_alphanumeric() || matches!(c, '_' | '-' | '.' | '/' | ',' | ':' | '@' | '+'));
    if plain { text.to_owned() } else { format!("'{}'", text.replace('\'', r"'\''")) }
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

/// The WIT name of a typed project's function, which is also its tool's:
/// the plugin's name in kebab case (`word_count` → `word-count`), with a
/// word that starts with a digit joined to the one before (`md-5` → `md5`),
/// as WIT names allow.
fn function_name(name: &str) -> String {
    let mut func = String::new();
    for word in name.split(['-', '_']).filter(|word| !word.is_empty()) {
        if !func.is_empty() && !word.starts_with(|c: char| c.is_ascii_digit()) {
            func.push('-');
        }
        func.push_str(word);
    }
    func
}

/// `word-count` → `wordCount`: how JavaScript names an exported function.
fn camel_case(kebab: &str) -> String {
    let mut words = kebab.split('-');
    let first = words.next().unwrap_or_default().to_owned();
    words.fold(first, |mut name, word| {
        let mut chars = word.chars();
        if let Some(c) = chars.next() {
            name.push(c.to_ascii_uppercase());
            name.push_str(chars.as_str());
        }
        name
    })
}

fn fill(template: &str, values: &[(&str, String)]) -> String {
    values.iter().fold(template.to_owned(), |text, (placeholder, value)| text.replace(placeholder, value))
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

/// The version of `dependency` the test plugin `plugin` (its `Cargo.toml`
/// is `manifest`) builds with.
fn pinned_crate(manifest: &str, plugin: &str, dependency: &str) -> Result<String> {
    let manifest: toml::Table = manifest
        .parse()
        .with_context(|| format!("plugins/testing/{plugin}/Cargo.toml is not TOML (this toolhost build is broken)"))?;
    manifest
        .get("dependencies")
        .and_then(|deps| deps.get(dependency))
        .and_then(|spec| spec.get("version"))
        .and_then(toml::Value::as_str)
        .map(str::to_owned)
        .with_context(|| {
            format!("plugins/testing/{plugin}/Cargo.toml pins no {dependency} version (this toolhost build is broken)")
        })
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
    fn function_names_are_wit_names() {
        let cases = [("count", "count"), ("word_count", "word-count"), ("md-5", "md5"), ("a__b-", "a-b"), ("t2", "t2")];
        for (name, func) in cases {
            assert_eq!(function_name(name), func, "{name}");
        }
        assert_eq!(camel_case("count-words-now"), "countWordsNow");
    }

    #[test]
    fn the_pinned_toolchain_versions_are_found() {
        for version in [
            pinned_componentize_py().unwrap(),
            pinned_npm("@bytecodealliance/componentize-js").unwrap(),
            pinned_npm("@bytecodealliance/preview2-shim").unwrap(),
            pinned_wit_bindgen().unwrap(),
            pinned_crate(RUST_TYPED, "typed_shop", "wit-bindgen").unwrap(),
            pinned_crate(RUST_ASYNC, "async_tools", "wit-bindgen").unwrap(),
            pinned_crate(RUST_ASYNC, "async_tools", "wasip3").unwrap(),
        ] {
            assert!(version.chars().next().is_some_and(|c| c.is_ascii_digit()), "{version}");
        }
    }

    /// The SDK a Rust project gets depends on what the SDK in this repository
    /// depends on (its `workspace = true` entries as the workspace sets them).
    #[test]
    fn the_written_sdk_has_the_dependencies_of_the_sdk() {
        let parse = |text: &str| text.parse::<toml::Table>().unwrap();
        let workspace = parse(repo_file!("Cargo.toml"));
        let workspace = &workspace["workspace"]["dependencies"];
        let ours = parse(repo_file!("sdk/Cargo.toml"));
        let written = parse(repo_file!("sdk/templates/rust/toolhost-sdk.Cargo.toml"));
        let ours = ours["dependencies"].as_table().unwrap();
        let written = written["dependencies"].as_table().unwrap();
        assert_eq!(ours.keys().collect::<Vec<_>>(), written.keys().collect::<Vec<_>>());
        for (name, spec) in ours {
            let spec = if spec.get("workspace").is_some() { &workspace[name] } else { spec };
            assert_eq!(spec, &written[name], "{name}");
        }
        // Every source of the SDK is written, so a new module cannot be forgotten.
        let files: Vec<&str> = Lang::Rust.files(false, false).map(|file| file.path).collect();
        let sources = std::fs::read_dir(concat!(env!("CARGO_MANIFEST_DIR"), "/../sdk/src")).unwrap();
        for source in sources {
            let source = source.unwrap().file_name().to_string_lossy().into_owned();
            assert!(files.contains(&format!("toolhost-sdk/src/{source}").as_str()), "{source}");
        }
        assert!(repo_file!("sdk/src/__private.rs").contains("path: \"../wit/v0.2.0\""));
        assert!(files.contains(&"wit/v0.2.0/plugin.wit"));
    }

    #[test]
    fn every_placeholder_in_a_template_is_filled() {
        let values = [
            "__EMBED_DOCS__\n",
            "__NAME__",
            "__CRATE__",
            "__FUNC_SNAKE__",
            "__FUNC_CAMEL__",
            "__FUNC__",
            "__WORLD_SAYS__",
            "__WORLD__",
            "__LANG_FLAG__",
            "__LANG__",
            "__TYPED_FLAG__",
            "__SOURCE__",
            "__COMPONENTIZE_PY__",
            "__COMPONENTIZE_JS__",
            "__PREVIEW2_SHIM__",
            "__WIT_BINDGEN_RUST__",
            "__WIT_BINDGEN_ASYNC__",
            "__WASIP3__",
            "__WIT_BINDGEN__",
        ]
        .map(|placeholder| (placeholder, "x".to_owned()));
        let every = [Lang::Rust, Lang::Python, Lang::Js, Lang::C]
            .into_iter()
            .flat_map(|lang| [(lang, false, false), (lang, true, false), (lang, true, true)]);
        for (lang, typed, asynchronous) in every {
            for file in lang.files(typed, asynchronous) {
                let text = fill(file.text, &values);
                // A placeholder is `__UPPER_CASE__`: C's `__attribute__`, Python's
                // `__init__` and the SDK's `__ToolhostPlugin` are not.
                let left = text.match_indices("__").filter(|(at, _)| {
                    let rest = &text[at + 2..];
                    let word: String = rest.chars().take_while(|c| c.is_ascii_uppercase() || *c == '_').collect();
                    word.len() > 2 && word.ends_with("__")
                });
                assert_eq!(left.count(), 0, "{lang:?} (typed: {typed}) {}: a placeholder is left", file.path);
            }
        }
    }
}

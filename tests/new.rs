//! `toolhost new`, the way a plugin author uses it: scaffold a project in
//! each language, build it with its one documented command (`./build.sh`),
//! and call the plugin it produced through the real binary.
//!
//! The builds use the toolchains `plugins/build.sh` installed (on PATH for
//! Python and JavaScript, cargo offline for Rust) so that no test reaches a
//! package registry.

mod common;

use common::{plugins_src, stderr, stdout, toolhost};
use serde_json::{Value, json};
use std::path::Path;
use std::process::Command;

/// Runs a scaffold's `build.sh` with the toolchains the repository's build installed.
fn build(project: &Path) {
    let plugins = plugins_src().canonicalize().unwrap();
    let path = format!(
        "{}:{}:{}",
        plugins.join("python/.venv/bin").display(),
        plugins.join("js/node_modules/.bin").display(),
        std::env::var("PATH").unwrap_or_default()
    );
    let output = Command::new("bash")
        .arg("build.sh")
        .current_dir(project)
        .env("PATH", path)
        .env("CARGO_NET_OFFLINE", "true")
        // Reuse the dependencies the Rust plugins were compiled with.
        .env("CARGO_TARGET_DIR", plugins.join("target"))
        .output()
        .expect("run build.sh");
    assert!(
        output.status.success(),
        "{}: build.sh failed:\n{}\n{}",
        project.display(),
        stdout(&output),
        stderr(&output)
    );
}

#[test]
fn every_language_scaffolds_a_project_that_builds_and_answers() {
    let work = tempfile::tempdir().unwrap();
    let plugins = work.path().join("plugins");
    std::fs::create_dir(&plugins).unwrap();
    for lang in ["rust", "python", "js", "c"] {
        let name = format!("count-{lang}");
        let project = work.path().join(&name);
        let output = toolhost(work.path(), &["new", &name, "--lang", lang]);
        assert!(output.status.success(), "{lang}: {}", stderr(&output));
        assert!(stdout(&output).contains("./build.sh"), "{lang}: says how to build: {}", stdout(&output));
        assert!(project.join("README.md").is_file() && project.join(".gitignore").is_file(), "{lang}");
        build(&project);
        let wasm = project.join(format!("{name}.wasm"));
        assert!(wasm.is_file(), "{lang}: build.sh wrote no {}", wasm.display());
        std::fs::copy(&wasm, plugins.join(format!("{name}.wasm"))).unwrap();
    }

    let dir = plugins.display().to_string();
    for lang in ["rust", "python", "js", "c"] {
        let tool = format!("count-{lang}");
        let output =
            toolhost(work.path(), &["--plugins", &dir, "call", &tool, r#"{"text":"héllo plugin  world"}"#, "--json"]);
        assert!(output.status.success(), "{lang}: {}{}", stdout(&output), stderr(&output));
        let report: Value = serde_json::from_str(&stdout(&output)).unwrap();
        let counted: Value = serde_json::from_str(report["output"]["value"].as_str().unwrap()).unwrap();
        assert_eq!(counted, json!({ "words": 3, "characters": 19 }), "{lang}");
        assert!(report["logs"].as_array().unwrap().iter().any(|log| log["message"] == "counted"), "{lang}: {report}");

        let output = toolhost(work.path(), &["--plugins", &dir, "call", &tool, r#"{"text":""}"#, "--json"]);
        assert_eq!(output.status.code(), Some(1), "{lang}");
        let report: Value = serde_json::from_str(&stdout(&output)).unwrap();
        assert_eq!(report["error"]["kind"], "invalid_arguments", "{lang}: {report}");
        assert!(report["error"]["message"].as_str().unwrap().contains("`text` is empty"), "{lang}: {report}");
    }
}

#[test]
fn new_refuses_bad_names_and_existing_folders_and_writes_nothing() {
    let work = tempfile::tempdir().unwrap();
    std::fs::create_dir(work.path().join("taken")).unwrap();
    std::fs::write(work.path().join("taken/keep.txt"), "mine").unwrap();
    std::fs::write(work.path().join("a-file"), "mine").unwrap();
    let cases: [(&[&str], &str); 5] = [
        (&["new", "Word Count", "--lang", "python"], "did you mean `word_count`?"),
        (&["new", "2fast", "--lang", "c"], "starting with a letter"),
        (&["new", "taken", "--lang", "js"], "taken already exists and is not empty"),
        (&["new", "ok", "--lang", "c", "--dir", "a-file"], "a-file already exists and is not a folder"),
        (&["new", "ok", "--lang", "go"], "possible values: rust, python, js, c"),
    ];
    for (args, expected) in cases {
        let output = toolhost(work.path(), args);
        assert_eq!(output.status.code(), Some(2), "{args:?}");
        assert!(stderr(&output).contains(expected), "{args:?}: {}", stderr(&output));
    }
    let mut left: Vec<String> = std::fs::read_dir(work.path())
        .unwrap()
        .map(|entry| entry.unwrap().file_name().to_string_lossy().into_owned())
        .collect();
    left.sort();
    assert_eq!(left, ["a-file", "taken"], "nothing was created");
    assert_eq!(std::fs::read_to_string(work.path().join("taken/keep.txt")).unwrap(), "mine");

    // An empty folder is fine: it is where the project goes.
    std::fs::create_dir(work.path().join("empty")).unwrap();
    let output = toolhost(work.path(), &["new", "fills-it", "--lang", "c", "--dir", "empty"]);
    assert!(output.status.success(), "{}", stderr(&output));
    assert!(work.path().join("empty/tools.c").is_file());
}

#[test]
fn a_rust_project_needs_the_sdk_and_says_how_to_point_at_it() {
    let work = tempfile::tempdir().unwrap();
    let output = toolhost(work.path(), &["new", "needs-sdk", "--lang", "rust", "--sdk", "/nowhere"]);
    assert_eq!(output.status.code(), Some(2));
    assert!(stderr(&output).contains("pass --sdk PATH (or set TOOLHOST_SDK)"), "{}", stderr(&output));
    assert!(!work.path().join("needs-sdk").exists());

    let sdk = plugins_src().join("../sdk").canonicalize().unwrap();
    let output = toolhost(work.path(), &["new", "has-sdk", "--lang", "rust", "--sdk", &sdk.display().to_string()]);
    assert!(output.status.success(), "{}", stderr(&output));
    let manifest = std::fs::read_to_string(work.path().join("has-sdk/Cargo.toml")).unwrap();
    assert!(manifest.contains(&format!("path = \"{}\"", sdk.display())), "{manifest}");
}

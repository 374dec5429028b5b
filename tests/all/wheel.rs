//! The one-line install for MCP users: toolhost's Python wheel
//! (`pyproject.toml`, maturin's `bin` bindings, the distribution
//! `toolhost-wasm`) is built as `make dist` builds it, for glibc 2.28
//! (`manylinux_2_28`, linked by zig), once per test run, and shared by the
//! tests below: installed into a clean virtual environment and driven by the
//! official MCP client; every launch line the README gives, run as written
//! (placeholders filled) against a cold compile cache; and its binary run on
//! Debian 11's C library (glibc 2.31), older than the build machine's.
//!
//! Cost: the wheel's binary is a second build of the host (dev profile, for
//! the target `x86_64-unknown-linux-gnu` with zig's glibc 2.28 as the libc
//! to link against), every crate compiled again: the biggest single cost of
//! `make test` after the first build, paid once per run (and incrementally
//! after that on a developer's machine, since it is kept in the build
//! directory).

use crate::common::{self, plugin_dir, stderr, stdout};
use pulldown_cmark::{CodeBlockKind, Event, Parser, Tag, TagEnd};
use serde_json::Value;
use std::path::{Path, PathBuf};
use std::process::Command;
use std::sync::OnceLock;

/// The distribution's name (pyproject.toml), and as a wheel file names it.
const DISTRIBUTION: &str = "toolhost-wasm";
const WHEEL_NAME: &str = "toolhost_wasm";
/// The oldest glibc the wheel is for (docs/release.md).
const POLICY: &str = "manylinux_2_28";
const TRIPLE: &str = "x86_64-unknown-linux-gnu";

fn repo() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("..").canonicalize().unwrap()
}

/// The build directory of this test run (`CARGO_TARGET_TMPDIR` is its `tmp/`).
fn build_dir() -> PathBuf {
    Path::new(env!("CARGO_TARGET_TMPDIR")).parent().unwrap().to_path_buf()
}

fn tools() -> PathBuf {
    repo().join("tests/wheel/.tools")
}

fn run(command: &mut Command, what: &str) -> std::process::Output {
    let output = command.output().unwrap_or_else(|err| panic!("could not run {what}: {err}"));
    assert!(output.status.success(), "{what} failed:\n{}{}", stdout(&output), stderr(&output));
    output
}

/// The wheel, built once per test run with the pinned maturin and zig
/// (tests/wheel/setup.sh) as `make dist` does, but in the dev profile.
fn wheel() -> &'static Path {
    static WHEEL: OnceLock<PathBuf> = OnceLock::new();
    WHEEL.get_or_init(|| {
        common::install("wheel/setup.sh");
        let out = build_dir().join("wheel");
        let _ = std::fs::remove_dir_all(out.join("dist"));
        let venv = tools().join("venv/bin");
        // The binary is built in a target folder of the test's own (kept in
        // the build directory, so a second run is incremental), so the
        // `toolhost` the other tests are running is never replaced under
        // them. Offline: setup.sh fetched the crates. zig (`python -m
        // ziglang`) comes from the tools' venv, first on PATH.
        run(
            Command::new(venv.join("maturin"))
                .args(["build", "--profile", "dev", "--locked", "--offline", "--zig", "--compatibility", POLICY])
                .args(["--target", TRIPLE, "--out"])
                .arg(out.join("dist"))
                .current_dir(repo())
                .env("PATH", format!("{}:{}", venv.display(), std::env::var("PATH").unwrap_or_default()))
                .env("CARGO_TARGET_DIR", out.join("target"))
                .env_remove("CARGO_BUILD_BUILD_DIR"),
            "maturin build --zig",
        );
        let wheels: Vec<PathBuf> = std::fs::read_dir(out.join("dist"))
            .unwrap()
            .map(|entry| entry.unwrap().path())
            .filter(|path| path.extension().is_some_and(|ext| ext == "whl"))
            .collect();
        assert_eq!(wheels.len(), 1, "maturin wrote one wheel: {wheels:?}");
        wheels.into_iter().next().unwrap()
    })
}

/// The `toolhost` binary inside the wheel, unpacked next to it.
fn wheel_binary() -> PathBuf {
    let wheel = wheel();
    let binary = wheel.with_file_name("toolhost");
    let member = format!("{WHEEL_NAME}-{}.data/scripts/toolhost", env!("CARGO_PKG_VERSION"));
    let script = "import sys, zipfile, os\nopen(sys.argv[3], 'wb').write(zipfile.ZipFile(sys.argv[1]).read(sys.argv[2]))\nos.chmod(sys.argv[3], 0o755)";
    run(Command::new("python3").args(["-c", script]).arg(wheel).arg(&member).arg(&binary), "unpacking the wheel");
    binary
}

/// A clean virtual environment with the wheel installed (no index: nothing else is needed).
fn venv_with_wheel(work: &Path) -> PathBuf {
    let venv = work.join("venv");
    run(Command::new("python3").args(["-m", "venv"]).arg(&venv), "python3 -m venv");
    run(
        Command::new(venv.join("bin/pip"))
            .args(["install", "--quiet", "--disable-pip-version-check", "--no-index", "--no-deps"])
            .arg(wheel()),
        "pip install of the wheel",
    );
    venv
}

#[test]
fn the_wheel_installs_toolhost_into_a_clean_venv_and_serves_mcp_from_there() {
    let work = tempfile::tempdir().unwrap();
    let wheel = wheel();
    let name = wheel.file_name().unwrap().to_str().unwrap().to_owned();
    let version = env!("CARGO_PKG_VERSION");
    assert_eq!(name, format!("{WHEEL_NAME}-{version}-py3-none-{POLICY}_x86_64.whl"));

    // What the wheel holds: the binary as a script, and metadata naming it; no Python code.
    let listing = run(
        Command::new("python3")
            .args(["-c", "import sys, zipfile; print('\\n'.join(zipfile.ZipFile(sys.argv[1]).namelist()))"])
            .arg(wheel),
        "listing the wheel",
    );
    let files = String::from_utf8_lossy(&listing.stdout).into_owned();
    assert!(files.lines().any(|file| file == format!("{WHEEL_NAME}-{version}.data/scripts/toolhost")), "{files}");
    assert!(!files.lines().any(|file| file.ends_with(".py")), "{files}");
    let metadata = run(
        Command::new("python3")
            .args(["-c", "import sys, zipfile; print(zipfile.ZipFile(sys.argv[1]).read(sys.argv[2]).decode())"])
            .arg(wheel)
            .arg(format!("{WHEEL_NAME}-{version}.dist-info/METADATA")),
        "reading the wheel's metadata",
    );
    assert!(stdout(&metadata).lines().any(|line| line == format!("Name: {DISTRIBUTION}")), "{}", stdout(&metadata));

    let venv = venv_with_wheel(work.path());
    let installed = venv.join("bin/toolhost");
    let version_line = run(Command::new(&installed).arg("--version"), "the installed toolhost --version");
    assert_eq!(String::from_utf8_lossy(&version_line.stdout).trim(), format!("toolhost {version}"));

    // The official MCP client launches `toolhost` by name from the
    // environment's PATH, as an agent's config does, and uses its tools.
    common::install("mcp/setup.sh");
    let plugins = plugin_dir(&["hash", "spin_forever"]);
    let config = plugins.path().join("toolhost.toml");
    std::fs::write(&config, "[plugins.spin_forever.limits]\nfuel = 1_000_000_000_000_000\ntimeout = \"3s\"\n").unwrap();
    let mcp = repo().join("tests/mcp");
    let output = run(
        Command::new(mcp.join(".tools/venv/bin/python"))
            .arg(mcp.join("client.py"))
            .args(["--mode", "legacy", "basics", "--", "toolhost", "--plugins"])
            .arg(plugins.path())
            .arg("--config")
            .arg(&config)
            .env("PATH", format!("{}:/usr/bin:/bin", venv.join("bin").display()))
            .env("TOOLHOST_CACHE_DIR", common::shared_cache()),
        "the MCP client against the installed toolhost",
    );
    let stdout = String::from_utf8_lossy(&output.stdout);
    let result: Value = serde_json::from_str(stdout.trim()).unwrap_or_else(|err| panic!("{err}: {stdout}"));
    let tools: Vec<&str> = result["tools"].as_array().unwrap().iter().filter_map(Value::as_str).collect();
    assert!(tools.contains(&"sha256") && tools.contains(&"spin_forever"), "{result}");
    assert_eq!(result["sha256"]["is_error"], false, "{result}");
    assert_eq!(result["sha256"]["text"], "2cf24dba5fb0a30e26e83b2ac5b9e29e1b161e5c1fa7425e73043362938b9824");
    assert_eq!(result["runaway"]["is_error"], true, "{result}");
}

/// Every command line the README gives an MCP client to launch toolhost
/// with: the `uvx` lines, what `claude mcp add … --` runs, and the
/// `command` and `args` of its JSON and TOML agent configurations, each as
/// its words; and for each `uvx --from toolhost-wasm toolhost …`, the form
/// the README gives after `pipx install` (`toolhost …`).
fn readme_launch_lines() -> Vec<Vec<String>> {
    let text = std::fs::read_to_string(repo().join("README.md")).unwrap();
    let mut lines = Vec::new();
    let mut lang = None;
    for event in Parser::new(&text) {
        match event {
            Event::Start(Tag::CodeBlock(CodeBlockKind::Fenced(fence))) => lang = Some(fence.to_string()),
            Event::End(TagEnd::CodeBlock) => lang = None,
            Event::Text(code) => match lang.as_deref() {
                Some("sh") => {
                    for line in code.lines() {
                        let line = line.split(" #").next().unwrap().trim();
                        let words: Vec<String> = line.split_whitespace().map(str::to_owned).collect();
                        if !words.iter().any(|word| word == "serve") {
                            continue;
                        }
                        if words.first().is_some_and(|word| word == "uvx") {
                            lines.push(words);
                        } else if let Some(at) = words.iter().position(|word| word == "--") {
                            lines.push(words[at + 1..].to_vec());
                        }
                    }
                }
                Some("json") => {
                    let config: Value = serde_json::from_str(&code).unwrap();
                    let server = &config["mcpServers"]["toolhost"];
                    let mut words = vec![server["command"].as_str().unwrap().to_owned()];
                    words.extend(server["args"].as_array().unwrap().iter().map(|arg| arg.as_str().unwrap().to_owned()));
                    lines.push(words);
                }
                Some("toml") => {
                    let config: toml::Table = code.parse().unwrap();
                    if let Some(server) = config.get("mcp_servers").and_then(|servers| servers.get("toolhost")) {
                        let mut words = vec![server["command"].as_str().unwrap().to_owned()];
                        words.extend(
                            server["args"].as_array().unwrap().iter().map(|arg| arg.as_str().unwrap().to_owned()),
                        );
                        lines.push(words);
                    }
                }
                _ => {}
            },
            _ => {}
        }
    }
    let after_pipx: Vec<Vec<String>> = lines
        .iter()
        .filter(|words| words.starts_with(&["uvx".into(), "--from".into(), DISTRIBUTION.into(), "toolhost".into()]))
        .map(|words| words[3..].to_vec())
        .collect();
    lines.extend(after_pipx);
    lines
}

#[test]
fn every_readme_launch_line_connects_the_official_client_from_a_fresh_install_with_a_cold_cache() {
    let lines = readme_launch_lines();
    let uvx = lines.iter().filter(|words| words[0] == "uvx").count();
    assert!(
        uvx >= 4 && lines.len() >= uvx + 4,
        "the README's uvx line, Claude Code, JSON and TOML configs, and their pipx forms: {lines:?}"
    );
    let work = tempfile::tempdir().unwrap();
    let venv = venv_with_wheel(work.path());
    // uv's own two programs, without the tools venv's Python beside them.
    let uv_bin = work.path().join("uv-bin");
    std::fs::create_dir(&uv_bin).unwrap();
    for program in ["uv", "uvx"] {
        std::os::unix::fs::symlink(tools().join("venv/bin").join(program), uv_bin.join(program)).unwrap();
    }
    let plugins = plugin_dir(&["hash", "echo"]);
    let mcp = repo().join("tests/mcp");
    common::install("mcp/setup.sh");
    for words in &lines {
        // Placeholders filled: the package is the wheel just built (uvx
        // reads it offline), the plugins folder a real one.
        let filled: Vec<String> = words
            .iter()
            .map(|word| match word.as_str() {
                DISTRIBUTION => wheel().display().to_string(),
                "~/toolhost/plugins" | "/home/me/toolhost/plugins" => plugins.path().display().to_string(),
                other => {
                    assert!(
                        !other.starts_with('~') && !other.starts_with("/home/me"),
                        "an unknown placeholder in {words:?}"
                    );
                    other.to_owned()
                }
            })
            .collect();
        let cache = tempfile::tempdir().unwrap();
        let home = tempfile::tempdir().unwrap();
        let output = Command::new(mcp.join(".tools/venv/bin/python"))
            .arg(mcp.join("client.py"))
            .args(["--mode", "legacy", "--call", "sha256", "--call", "echo", "--as-given", "firstrun", "--"])
            .args(&filled)
            .env("PATH", format!("{}:{}:/usr/bin:/bin", venv.join("bin").display(), uv_bin.display()))
            .env("HOME", home.path())
            .env("TOOLHOST_CACHE_DIR", cache.path())
            .env("UV_OFFLINE", "1")
            .env("UV_NO_CONFIG", "1")
            .env("UV_PYTHON_DOWNLOADS", "never")
            .env("UV_CACHE_DIR", home.path().join("uv-cache"))
            .env_remove("TOOLHOST_PLUGINS")
            .env_remove("TOOLHOST_CONFIG")
            .env_remove("VIRTUAL_ENV")
            .output()
            .unwrap();
        assert!(
            output.status.success(),
            "README launch line {words:?} ({filled:?}):\n{}{}",
            stdout(&output),
            stderr(&output)
        );
        let out: Value = serde_json::from_str(stdout(&output).trim()).unwrap();
        assert_eq!(
            out["early_call"]["text"], "2cf24dba5fb0a30e26e83b2ac5b9e29e1b161e5c1fa7425e73043362938b9824",
            "{words:?}: {out}"
        );
        let listed: Vec<&str> = out["last_list"].as_array().unwrap().iter().filter_map(Value::as_str).collect();
        assert!(listed.contains(&"echo") && listed.contains(&"sha256"), "{words:?}: {out}");
    }
}

#[test]
fn the_wheels_binary_runs_on_debian_11s_glibc_and_answers_a_call() {
    // Debian 11's libc6 (glibc 2.31) and libgcc-s1, from Debian's archive
    // with a private apt state, unpacked; patchelf from there too.
    common::install("wheel/debian11.sh");
    let root = tools().join("debian11/root");
    let binary = wheel_binary();
    // The binary, pointed at that root's loader and libraries (its compile
    // worker, the same program, runs there too): nothing of this machine's
    // newer glibc is used.
    let old = binary.with_file_name("toolhost-debian11");
    std::fs::copy(&binary, &old).unwrap();
    let libraries = format!("{0}/lib/x86_64-linux-gnu:{0}/usr/lib/x86_64-linux-gnu", root.display());
    run(
        Command::new(root.join("usr/bin/patchelf"))
            .arg("--set-interpreter")
            .arg(root.join("lib64/ld-linux-x86-64.so.2"))
            .arg("--force-rpath")
            .arg("--set-rpath")
            .arg(&libraries)
            .arg(&old),
        "patchelf",
    );
    let libc = run(
        Command::new(root.join("lib64/ld-linux-x86-64.so.2")).arg(root.join("lib/x86_64-linux-gnu/libc.so.6")),
        "Debian 11's libc.so.6",
    );
    assert!(stdout(&libc).contains("release version 2.31"), "{}", stdout(&libc));
    // The build machine's own binary needs a newer glibc than that root has.
    let host_built = Command::new(&root.join("lib64/ld-linux-x86-64.so.2"))
        .arg("--library-path")
        .arg(&libraries)
        .arg(env!("CARGO_BIN_EXE_toolhost"))
        .arg("--version")
        .output()
        .unwrap();
    assert!(!host_built.status.success() && stderr(&host_built).contains("GLIBC_2."), "{}", stderr(&host_built));

    let plugins = plugin_dir(&["hash"]);
    let cache = tempfile::tempdir().unwrap();
    let maps = run(
        Command::new(&old).args(["--version"]).env("LD_DEBUG", "libs").env("LD_DEBUG_OUTPUT", cache.path().join("ld")),
        "toolhost --version on Debian 11's glibc",
    );
    assert!(stdout(&maps).starts_with("toolhost "), "{}", stdout(&maps));
    let output = run(
        Command::new(&old)
            .arg("--plugins")
            .arg(plugins.path())
            .args(["call", "sha256", r#"{"text":"hello"}"#])
            .env("TOOLHOST_CACHE_DIR", cache.path())
            .env_remove("TOOLHOST_PLUGINS")
            .env_remove("TOOLHOST_CONFIG"),
        "a cold call on Debian 11's glibc",
    );
    assert_eq!(stdout(&output).trim(), "2cf24dba5fb0a30e26e83b2ac5b9e29e1b161e5c1fa7425e73043362938b9824");
    // Which C library it ran with: the loader's own record of what it loaded.
    let loaded: String = std::fs::read_dir(cache.path())
        .unwrap()
        .filter_map(|entry| entry.ok())
        .filter(|entry| entry.file_name().to_string_lossy().starts_with("ld."))
        .map(|entry| std::fs::read_to_string(entry.path()).unwrap_or_default())
        .collect();
    let libc_line = loaded
        .lines()
        .find(|line| line.contains("calling init: ") && line.contains("libc.so.6"))
        .unwrap_or_else(|| panic!("{loaded}"));
    assert!(libc_line.contains(&root.display().to_string()), "{libc_line}");
}

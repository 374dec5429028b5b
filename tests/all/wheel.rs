//! The one-line install for MCP users: toolhost's Python wheel (`pyproject.toml`, the distribution `toolhost-wasm`,
//! maturin's `bin` bindings) is built, installed into a clean virtual
//! environment, and the `toolhost` that environment puts on its PATH is what
//! an MCP client launches, as `uvx toolhost serve` or a `pipx` install would.

use crate::common::{self, plugin_dir, stderr};
use serde_json::Value;
use std::path::{Path, PathBuf};
use std::process::Command;

fn repo() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("..").canonicalize().unwrap()
}

/// The build directory of this test run (`CARGO_TARGET_TMPDIR` is its `tmp/`).
fn build_dir() -> PathBuf {
    Path::new(env!("CARGO_TARGET_TMPDIR")).parent().unwrap().to_path_buf()
}

fn run(command: &mut Command, what: &str) -> std::process::Output {
    let output = command.output().unwrap_or_else(|err| panic!("could not run {what}: {err}"));
    assert!(output.status.success(), "{what} failed:\n{}{}", String::from_utf8_lossy(&output.stdout), stderr(&output));
    output
}

/// Builds the wheel with the pinned maturin (tests/wheel/setup.sh) and returns its path.
fn build_wheel(out: &Path) -> PathBuf {
    common::install("wheel/setup.sh");
    let maturin = repo().join("tests/wheel/.tools/venv/bin/maturin");
    // The dev profile and this run's build directory: the host the tests
    // already built is packed, not compiled again. The binary is copied out
    // into a target folder of the test's own, so the `target/debug/toolhost`
    // the other tests are running is never replaced under them. `linux`: a
    // wheel for this machine (release wheels are manylinux, docs/release.md).
    // Offline: setup.sh fetched the crates.
    run(
        Command::new(&maturin)
            .args(["build", "--profile", "dev", "--locked", "--offline", "--compatibility", "linux", "--out"])
            .arg(out)
            .current_dir(repo())
            .env("CARGO_TARGET_DIR", out.join("target"))
            .env("CARGO_BUILD_BUILD_DIR", build_dir()),
        "maturin build",
    );
    let wheels: Vec<PathBuf> = std::fs::read_dir(out)
        .unwrap()
        .map(|entry| entry.unwrap().path())
        .filter(|path| path.extension().is_some_and(|ext| ext == "whl"))
        .collect();
    assert_eq!(wheels.len(), 1, "maturin wrote one wheel: {wheels:?}");
    wheels.into_iter().next().unwrap()
}

#[test]
fn the_wheel_installs_toolhost_into_a_clean_venv_and_serves_mcp_from_there() {
    let work = tempfile::tempdir().unwrap();
    let wheel = build_wheel(work.path());
    let name = wheel.file_name().unwrap().to_str().unwrap().to_owned();
    let version = env!("CARGO_PKG_VERSION");
    assert!(name.starts_with(&format!("toolhost_wasm-{version}-py3-none-")), "{name}");

    // What the wheel holds: the binary as a script, and metadata naming it; no Python code.
    let listing = run(
        Command::new("python3")
            .args(["-c", "import sys, zipfile; print('\\n'.join(zipfile.ZipFile(sys.argv[1]).namelist()))"])
            .arg(&wheel),
        "listing the wheel",
    );
    let files = String::from_utf8_lossy(&listing.stdout).into_owned();
    assert!(files.lines().any(|file| file == format!("toolhost_wasm-{version}.data/scripts/toolhost")), "{files}");
    assert!(!files.lines().any(|file| file.ends_with(".py")), "{files}");

    // A clean environment, installed from the wheel alone (no index: nothing else is needed).
    let venv = work.path().join("venv");
    run(Command::new("python3").args(["-m", "venv"]).arg(&venv), "python3 -m venv");
    run(
        Command::new(venv.join("bin/pip"))
            .args(["install", "--quiet", "--disable-pip-version-check", "--no-index", "--no-deps"])
            .arg(&wheel),
        "pip install of the wheel",
    );
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

/// Every way the README launches toolhost from the wheel (the `uvx` line of
/// its install block, the Claude Desktop/Cursor JSON, the Claude Code line
/// and the Codex TOML), run as written with only the placeholders filled
/// (`~` and `/home/me` are a fresh home holding `toolhost/plugins`) and uv
/// pointed at the built wheel instead of PyPI (`UV_FIND_LINKS`, offline),
/// with cold uv and compile caches: the official MCP client connects to each
/// and calls a tool.
#[test]
fn the_readmes_launch_lines_start_a_server_the_official_client_uses() {
    let work = tempfile::tempdir().unwrap();
    let wheel = build_wheel(&work.path().join("dist"));
    let readme = std::fs::read_to_string(repo().join("README.md")).unwrap();
    let launches = readme_launches(&readme);
    assert_eq!(launches.len(), 4, "the uvx line, the JSON, the Claude Code line and the Codex TOML: {launches:?}");

    let home = work.path().join("home");
    let plugins = home.join("toolhost/plugins");
    std::fs::create_dir_all(&plugins).unwrap();
    for name in ["hash", "spin_forever"] {
        std::fs::copy(common::plugin(name), plugins.join(format!("{name}.wasm"))).unwrap();
    }
    common::install("mcp/setup.sh");
    let mcp = repo().join("tests/mcp");
    let uv = repo().join("tests/wheel/.tools/venv/bin");
    for (at, argv) in launches.iter().enumerate() {
        let argv: Vec<String> = argv.iter().map(|arg| arg.replace("/home/me", &home.display().to_string())).collect();
        let output = run(
            Command::new(mcp.join(".tools/venv/bin/python"))
                .arg(mcp.join("client.py"))
                .args(["--mode", "legacy", "--as-given", "basics", "--"])
                .args(&argv)
                .env_clear()
                .env("PATH", format!("{}:/usr/bin:/bin", uv.display()))
                .env("HOME", &home)
                .env("UV_CACHE_DIR", work.path().join(format!("uv-cache-{at}")))
                .env("UV_OFFLINE", "1")
                .env("UV_NO_INDEX", "1")
                .env("UV_FIND_LINKS", wheel.parent().unwrap())
                .env("TOOLHOST_CACHE_DIR", work.path().join(format!("compiled-{at}"))),
            &format!("the MCP client against the README's `{}`", argv.join(" ")),
        );
        let stdout = String::from_utf8_lossy(&output.stdout);
        let result: Value = serde_json::from_str(stdout.trim()).unwrap_or_else(|err| panic!("{err}: {stdout}"));
        assert_eq!(result["sha256"]["is_error"], false, "{argv:?}: {result}");
        assert_eq!(result["sha256"]["text"], "2cf24dba5fb0a30e26e83b2ac5b9e29e1b161e5c1fa7425e73043362938b9824");
    }
}

/// The commands the README launches toolhost with, each as an argv: a `uvx`
/// line of a `sh` block (run by `bash -c`, so that `~` is the shell's), the
/// command after `claude mcp add toolhost --`, and the `command` and `args`
/// of its JSON and TOML agent configurations.
fn readme_launches(readme: &str) -> Vec<Vec<String>> {
    let mut launches = Vec::new();
    let mut block: Option<(String, String)> = None;
    for line in readme.lines() {
        match (&mut block, line.strip_prefix("```")) {
            (None, Some(lang)) => block = Some((lang.trim().to_owned(), String::new())),
            (Some((lang, text)), Some(_)) => {
                let config = match lang.as_str() {
                    "json" => serde_json::from_str::<Value>(text).ok().and_then(|value| {
                        let server = value["mcpServers"]["toolhost"].clone();
                        server.get("command").is_some().then_some(server)
                    }),
                    "toml" => toml::from_str::<Value>(text)
                        .ok()
                        .map(|value| value["mcp_servers"]["toolhost"].clone())
                        .filter(|server| server.get("command").is_some()),
                    _ => None,
                };
                if let Some(server) = config {
                    let mut argv = vec![server["command"].as_str().unwrap().to_owned()];
                    argv.extend(server["args"].as_array().unwrap().iter().map(|arg| arg.as_str().unwrap().to_owned()));
                    launches.push(argv);
                }
                block = None;
            }
            (Some((lang, text)), None) => {
                let command = line.split(" #").next().unwrap().trim();
                if lang == "sh" && command.starts_with("uvx ") {
                    launches.push(vec!["bash".to_owned(), "-c".to_owned(), command.to_owned()]);
                } else if lang == "sh"
                    && let Some(rest) = command.strip_prefix("claude mcp add toolhost -- ")
                {
                    launches.push(rest.split_whitespace().map(str::to_owned).collect());
                }
                text.push_str(line);
                text.push('\n');
            }
            (None, None) => {}
        }
    }
    launches
}

//! The one-line install for MCP users: toolhost's Python wheel
//! (`pyproject.toml`, the distribution `toolhost-wasm`, maturin's `bin`
//! bindings) is built as `make dist` builds it (for glibc 2.17, with zig),
//! installed into a clean virtual environment, and the `toolhost` that
//! environment puts on its PATH is what an MCP client launches, as the
//! README's `uvx --from toolhost-wasm toolhost serve` or `pipx install
//! toolhost-wasm` do. `old_linux` runs the same wheel's binary on an older
//! glibc.

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

/// The wheel `make dist` builds for this machine's architecture, built once
/// per test run by the same Makefile rule (`make wheel`: the pinned maturin,
/// `--zig --compatibility manylinux2014`, so a binary for glibc 2.17) and
/// shared by the tests that install or run it (here and `old_linux`). The
/// dev profile and this run's build directory: the dependencies the tests
/// already built for this machine are not optimised again, but the binary's
/// crates are compiled once more for the explicit target with zig's C
/// compiler (the one extra build of `make test`). The binary lands in a
/// target folder of its own, so the `target/debug/toolhost` the other tests
/// are running is never replaced under them. Offline: tests/wheel/setup.sh
/// fetched the crates. A failed build fails every test that asks for it.
pub(crate) fn built_wheel() -> PathBuf {
    static WHEEL: std::sync::Mutex<Option<Result<PathBuf, String>>> = std::sync::Mutex::new(None);
    let mut wheel = WHEEL.lock().unwrap_or_else(|poisoned| poisoned.into_inner());
    wheel.get_or_insert_with(build_wheel).clone().unwrap_or_else(|err| panic!("{err}"))
}

fn build_wheel() -> Result<PathBuf, String> {
    let out = Path::new(env!("CARGO_TARGET_TMPDIR")).join("wheel");
    let _ = std::fs::remove_dir_all(&out);
    std::fs::create_dir_all(&out).map_err(|err| format!("creating {}: {err}", out.display()))?;
    let output = Command::new("make")
        .args(["--no-print-directory", "wheel", "PROFILE=dev", "MATURIN_ARGS=--offline"])
        .arg(format!("OUT={}", out.display()))
        .current_dir(repo())
        // The outer `make test`'s jobserver is not this make's.
        .env_remove("MAKEFLAGS")
        .env_remove("MFLAGS")
        .env_remove("MAKELEVEL")
        .env("CARGO_TARGET_DIR", out.join("target"))
        .env("CARGO_BUILD_BUILD_DIR", build_dir())
        .output()
        .map_err(|err| format!("could not run `make wheel`: {err}"))?;
    if !output.status.success() {
        // Cargo's progress lines dropped, so that what failed is what a
        // truncated CI log still shows.
        let stderr = String::from_utf8_lossy(&output.stderr);
        let errors: Vec<&str> = stderr.lines().filter(|line| !line.trim_start().starts_with("Compiling ")).collect();
        return Err(format!(
            "`make wheel` failed ({}):\n{}{}",
            output.status,
            String::from_utf8_lossy(&output.stdout),
            errors.join("\n")
        ));
    }
    let wheels: Vec<PathBuf> = std::fs::read_dir(&out)
        .map_err(|err| format!("reading {}: {err}", out.display()))?
        .map(|entry| entry.unwrap().path())
        .filter(|path| path.extension().is_some_and(|ext| ext == "whl"))
        .collect();
    match <[PathBuf; 1]>::try_from(wheels) {
        Ok([wheel]) => Ok(wheel),
        Err(wheels) => Err(format!("`make wheel` wrote {} wheels, not one: {wheels:?}", wheels.len())),
    }
}

#[test]
fn the_wheel_installs_toolhost_into_a_clean_venv_and_serves_mcp_from_there() {
    let work = tempfile::tempdir().unwrap();
    let wheel = built_wheel();
    let name = wheel.file_name().unwrap().to_str().unwrap().to_owned();
    let version = env!("CARGO_PKG_VERSION");
    assert!(name.starts_with(&format!("toolhost_wasm-{version}-py3-none-")), "{name}");
    // For glibc 2.17 and later (what pip checks before installing it).
    assert!(name.contains(&format!("manylinux_2_17_{}", std::env::consts::ARCH)), "{name}");

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
    let wheel = built_wheel();
    let readme = std::fs::read_to_string(repo().join("README.md")).unwrap();
    let launches = readme_launches(&readme);
    assert_eq!(launches.len(), 4, "the uvx line, the JSON, the Claude Code line and the Codex TOML: {launches:?}");

    let home = home_with_plugins(work.path());
    let uv = repo().join("tests/wheel/.tools/venv/bin");
    for (at, argv) in launches.iter().enumerate() {
        let argv: Vec<String> = argv.iter().map(|arg| arg.replace("/home/me", &home.display().to_string())).collect();
        let result = client_basics(&argv, |command| {
            command
                .env_clear()
                .env("PATH", format!("{}:/usr/bin:/bin", uv.display()))
                .env("HOME", &home)
                .env("UV_CACHE_DIR", work.path().join(format!("uv-cache-{at}")))
                .env("UV_OFFLINE", "1")
                .env("UV_NO_INDEX", "1")
                .env("UV_FIND_LINKS", wheel.parent().unwrap())
                .env("TOOLHOST_CACHE_DIR", work.path().join(format!("compiled-{at}")));
        });
        assert_eq!(result["sha256"]["is_error"], false, "{argv:?}: {result}");
        assert_eq!(result["sha256"]["text"], "2cf24dba5fb0a30e26e83b2ac5b9e29e1b161e5c1fa7425e73043362938b9824");
    }
}

/// The README's other install line, `pipx install toolhost-wasm`, run as
/// written (pinned pipx, tests/wheel/setup.sh) in a fresh home with pip and
/// uv pointed at the built wheel instead of PyPI (`*_FIND_LINKS`, no index);
/// then its `toolhost … compile` line; then every launch line in the form
/// the README gives for after a pipx install (`"command": "toolhost"`, the
/// `"--from", "toolhost-wasm", "toolhost"` arguments dropped), with only the
/// pipx-installed `~/.local/bin` and the system's folders on the PATH (no
/// uv): the official MCP client connects to each and calls a tool.
#[test]
fn the_readmes_pipx_install_puts_a_toolhost_on_the_path_the_official_client_uses() {
    let work = tempfile::tempdir().unwrap();
    let wheel = built_wheel();
    let readme = std::fs::read_to_string(repo().join("README.md")).unwrap();
    let said = readme.split_whitespace().collect::<Vec<_>>().join(" ");
    let after_pipx = r#"after `pipx install`, use `"command": "toolhost"` and drop the `"--from", "toolhost-wasm", "toolhost"` arguments"#;
    assert!(said.contains(after_pipx), "the README says how to launch toolhost after `pipx install`: {after_pipx}");
    // The install block: its pipx line, and the `toolhost` lines after it.
    let block = readme_sh_blocks(&readme)
        .into_iter()
        .find(|block| block.iter().any(|line| line.starts_with("pipx ")))
        .expect("a README `sh` block with a pipx line");
    let pipx: Vec<&String> = block.iter().filter(|line| line.starts_with("pipx ")).collect();
    assert_eq!(pipx, ["pipx install toolhost-wasm"], "the README's pipx line");
    let then: Vec<&String> = block
        .iter()
        .skip_while(|line| !line.starts_with("pipx "))
        .filter(|line| line.starts_with("toolhost "))
        .collect();
    assert!(!then.is_empty(), "the README's lines after the install: {block:?}");
    let launches: Vec<Vec<String>> = readme_launches(&readme)
        .into_iter()
        .map(|argv| match argv.iter().map(String::as_str).collect::<Vec<_>>()[..] {
            ["uvx", "--from", "toolhost-wasm", "toolhost", ..] => [&["toolhost".to_owned()], &argv[4..]].concat(),
            ["bash", "-c", line] => {
                let rest = line.strip_prefix("uvx --from toolhost-wasm toolhost ").unwrap_or_else(|| panic!("{line}"));
                vec!["bash".to_owned(), "-c".to_owned(), format!("toolhost {rest}")]
            }
            _ => panic!("a README launch line that is not `uvx --from toolhost-wasm toolhost …`: {argv:?}"),
        })
        .collect();
    assert_eq!(launches.len(), 4, "{launches:?}");

    let home = home_with_plugins(work.path());
    let tools = repo().join("tests/wheel/.tools/venv/bin");
    run(
        Command::new("bash")
            .args(["-c", pipx[0]])
            .env_clear()
            .env("PATH", format!("{}:/usr/bin:/bin", tools.display()))
            .env("HOME", &home)
            // pipx installs with pip, or with uv when uv is on the PATH (it is):
            // both are pointed at the wheel, offline.
            .env("PIP_NO_INDEX", "1")
            .env("PIP_FIND_LINKS", wheel.parent().unwrap())
            .env("PIP_DISABLE_PIP_VERSION_CHECK", "1")
            .env("UV_OFFLINE", "1")
            .env("UV_NO_INDEX", "1")
            .env("UV_FIND_LINKS", wheel.parent().unwrap())
            .env("UV_CACHE_DIR", work.path().join("uv-cache")),
        &format!("the README's `{}`", pipx[0]),
    );
    let installed = home.join(".local/bin/toolhost");
    assert!(installed.is_file(), "pipx put no toolhost in {}", installed.display());

    let path = format!("{}:/usr/bin:/bin", home.join(".local/bin").display());
    let cache = work.path().join("compiled");
    for line in then {
        run(
            Command::new("bash")
                .args(["-c", line])
                .env_clear()
                .env("PATH", &path)
                .env("HOME", &home)
                .env("TOOLHOST_CACHE_DIR", &cache),
            &format!("the README's `{line}` after pipx install"),
        );
    }
    for argv in &launches {
        let argv: Vec<String> = argv.iter().map(|arg| arg.replace("/home/me", &home.display().to_string())).collect();
        let result = client_basics(&argv, |command| {
            command.env_clear().env("PATH", &path).env("HOME", &home).env("TOOLHOST_CACHE_DIR", &cache);
        });
        assert_eq!(result["sha256"]["is_error"], false, "{argv:?}: {result}");
        assert_eq!(result["sha256"]["text"], "2cf24dba5fb0a30e26e83b2ac5b9e29e1b161e5c1fa7425e73043362938b9824");
    }
}

/// A fresh home under `work` holding `toolhost/plugins` (hash and
/// spin_forever), where the README's `~` and `/home/me` point.
fn home_with_plugins(work: &Path) -> PathBuf {
    let home = work.join("home");
    let plugins = home.join("toolhost/plugins");
    std::fs::create_dir_all(&plugins).unwrap();
    for name in ["hash", "spin_forever"] {
        std::fs::copy(common::plugin(name), plugins.join(format!("{name}.wasm"))).unwrap();
    }
    home
}

/// The official MCP client's `basics` against `argv` launched as given,
/// in the environment `env` sets; its JSON result.
fn client_basics(argv: &[String], env: impl FnOnce(&mut Command)) -> Value {
    common::install("mcp/setup.sh");
    let mcp = repo().join("tests/mcp");
    let mut command = Command::new(mcp.join(".tools/venv/bin/python"));
    command.arg(mcp.join("client.py")).args(["--mode", "legacy", "--as-given", "basics", "--"]).args(argv);
    env(&mut command);
    let output = run(&mut command, &format!("the MCP client against the README's `{}`", argv.join(" ")));
    let stdout = String::from_utf8_lossy(&output.stdout);
    serde_json::from_str(stdout.trim()).unwrap_or_else(|err| panic!("{err}: {stdout}"))
}

/// The commands of each of the README's `sh` blocks, comments cut.
fn readme_sh_blocks(readme: &str) -> Vec<Vec<String>> {
    let mut blocks = Vec::new();
    let (mut block, mut in_other): (Option<Vec<String>>, bool) = (None, false);
    for line in readme.lines() {
        if let Some(lang) = line.strip_prefix("```") {
            if let Some(done) = block.take() {
                blocks.push(done);
            } else if in_other {
                in_other = false;
            } else if lang.trim() == "sh" {
                block = Some(Vec::new());
            } else {
                in_other = true;
            }
        } else if let Some(lines) = &mut block {
            let command = line.split(" #").next().unwrap().trim();
            if !command.is_empty() {
                lines.push(command.to_owned());
            }
        }
    }
    blocks
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

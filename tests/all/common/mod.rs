//! Shared helpers for the integration tests: where the built plugins are,
//! fresh folders to load them from, and a host or CLI pointed at them.
#![allow(dead_code)]

pub mod chat;
pub mod model_server;
pub mod otel;
pub mod pty;
pub mod server;
pub mod stdio;
pub mod tls;

use std::path::{Path, PathBuf};
use std::process::{Command, Output};
use toolhost::{Config, Host};

/// Runs the install script `tests/SCRIPT` (idempotent: it installs what is
/// missing, the first time) once per test binary, and panics with its output
/// when it fails, so that a test never passes by testing nothing.
pub fn install(script: &str) {
    static DONE: std::sync::Mutex<Vec<(String, Result<(), String>)>> = std::sync::Mutex::new(Vec::new());
    // Held while the script runs: tests that need it wait for one install.
    let mut done = DONE.lock().unwrap_or_else(|poisoned| poisoned.into_inner());
    if !done.iter().any(|(name, _)| name == script) {
        let path = Path::new(env!("CARGO_MANIFEST_DIR")).join("../tests").join(script);
        let result = match Command::new("bash").arg(&path).output() {
            Ok(output) if output.status.success() => Ok(()),
            Ok(output) => Err(format!(
                "tests/{script} failed:\n{}{}",
                String::from_utf8_lossy(&output.stdout),
                String::from_utf8_lossy(&output.stderr)
            )),
            Err(err) => Err(format!("could not run tests/{script}: {err}")),
        };
        done.push((script.to_owned(), result));
    }
    if let Some((_, Err(err))) = done.iter().find(|(name, _)| name == script) {
        panic!("{err}");
    }
}

/// `plugins/` in the repository.
pub fn plugins_src() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("../plugins")
}

/// A built plugin by file stem, from `plugins/dist`, `dist-test` or `dist-broken`.
pub fn plugin(name: &str) -> PathBuf {
    for dir in ["dist", "dist-test", "dist-broken"] {
        let path = plugins_src().join(dir).join(format!("{name}.wasm"));
        if path.is_file() {
            return path;
        }
    }
    panic!("plugin {name}.wasm is not built: run `bash plugins/build.sh` first (the README's test command does)");
}

/// `plugins/dist`, the bundled examples, once a first `toolhost tools` has
/// compiled them all into the shared cache: tests running in parallel then
/// load them from the cache instead of each compiling the multi-megabyte
/// Python and JavaScript components.
pub fn bundled() -> PathBuf {
    static WARM: std::sync::OnceLock<()> = std::sync::OnceLock::new();
    let dir = plugins_src().join("dist");
    WARM.get_or_init(|| {
        let output = toolhost(Path::new("."), &["--plugins", &dir.display().to_string(), "tools"]);
        assert!(output.status.success(), "loading the bundled plugins failed: {}", stderr(&output));
    });
    dir
}

/// A compile cache shared by the tests of one run, so each plugin compiles once.
pub fn shared_cache() -> PathBuf {
    PathBuf::from(env!("CARGO_TARGET_TMPDIR")).join("toolhost-cache")
}

/// A fresh folder holding copies of the named plugins (with their manifests).
pub fn plugin_dir(names: &[&str]) -> tempfile::TempDir {
    let dir = tempfile::tempdir().expect("temp dir");
    for name in names {
        let wasm = plugin(name);
        std::fs::copy(&wasm, dir.path().join(format!("{name}.wasm"))).expect("copy plugin");
        let manifest = wasm.with_extension("toml");
        if manifest.is_file() {
            std::fs::copy(&manifest, dir.path().join(format!("{name}.toml"))).expect("copy manifest");
        }
    }
    dir
}

/// A config parsed from `text` (as in toolhost.toml), using the shared cache.
pub fn config_from(text: &str) -> Config {
    let parsed = Config::parse(text).unwrap_or_else(|err| panic!("{err:#}\n{text}"));
    Config { cache_dir: Some(shared_cache()), ..parsed }
}

/// A config using the shared cache.
pub fn config() -> Config {
    Config { cache_dir: Some(shared_cache()), ..Config::default() }
}

/// A host with the named plugins loaded.
pub async fn host_with(names: &[&str]) -> (Host, tempfile::TempDir) {
    host_with_config(names, config()).await
}

/// A host made from `config` with the named plugins loaded.
pub async fn host_with_config(names: &[&str], config: Config) -> (Host, tempfile::TempDir) {
    let dir = plugin_dir(names);
    let host = Host::new(config).expect("host");
    host.load_dir(dir.path()).await.expect("load");
    (host, dir)
}

/// Runs the real `toolhost` binary with `args`, in `cwd`, with the shared cache.
pub fn toolhost(cwd: &Path, args: &[&str]) -> Output {
    toolhost_with_env(cwd, args, &[])
}

/// Like [`toolhost`], with extra environment variables.
pub fn toolhost_with_env(cwd: &Path, args: &[&str], env: &[(&str, &str)]) -> Output {
    Command::new(env!("CARGO_BIN_EXE_toolhost"))
        .args(args)
        .current_dir(cwd)
        .env("TOOLHOST_CACHE_DIR", shared_cache())
        .env_remove("TOOLHOST_PLUGINS")
        .env_remove("TOOLHOST_CONFIG")
        .env_remove("TOOLHOST_LOG")
        .envs(env.iter().copied())
        .output()
        .expect("run toolhost")
}

/// `toolhost --plugins PLUGINS call TOOL ARGUMENTS --json EXTRA…` with `env`
/// set: (exit code, the JSON report).
pub fn call_json(
    plugins: &Path,
    tool: &str,
    arguments: &str,
    extra: &[&str],
    env: &[(&str, &str)],
) -> (i32, serde_json::Value) {
    let plugins = plugins.display().to_string();
    let mut args = vec!["--plugins", &plugins, "call", tool, arguments, "--json"];
    args.extend_from_slice(extra);
    let output = toolhost_with_env(Path::new("."), &args, env);
    let report = serde_json::from_str(&stdout(&output))
        .unwrap_or_else(|err| panic!("call --json printed no JSON ({err}): {}{}", stdout(&output), stderr(&output)));
    (output.status.code().unwrap_or(-1), report)
}

/// Runs `tests/mcp/client.py SCENARIO` (the official Python MCP client; its
/// tools installed by `tests/mcp/setup.sh`) in protocol `mode` against
/// `toolhost serve` over stdio with `plugins` and `config`, and returns the
/// JSON it prints.
pub fn mcp_client_scenario(scenario: &str, mode: &str, plugins: &Path, config: &Path) -> serde_json::Value {
    mcp_client_scenario_with(scenario, mode, &[], plugins, config)
}

/// [`mcp_client_scenario`] with more of client.py's options (`--prefix P`).
pub fn mcp_client_scenario_with(
    scenario: &str,
    mode: &str,
    options: &[&str],
    plugins: &Path,
    config: &Path,
) -> serde_json::Value {
    install("mcp/setup.sh");
    let mcp = Path::new(env!("CARGO_MANIFEST_DIR")).join("../tests/mcp");
    let output = Command::new(mcp.join(".tools/venv/bin/python"))
        .arg(mcp.join("client.py"))
        .args(["--mode", mode])
        .args(options)
        .args([scenario, "--", env!("CARGO_BIN_EXE_toolhost"), "--plugins"])
        .arg(plugins)
        .arg("--config")
        .arg(config)
        .env("TOOLHOST_CACHE_DIR", shared_cache())
        .output()
        .expect("run client.py");
    assert!(output.status.success(), "{scenario} ({mode}): {}{}", stdout(&output), stderr(&output));
    serde_json::from_str(stdout(&output).trim()).expect("client.py prints one JSON object")
}

/// stdout as text.
pub fn stdout(output: &Output) -> String {
    String::from_utf8_lossy(&output.stdout).into_owned()
}

/// stderr as text.
pub fn stderr(output: &Output) -> String {
    String::from_utf8_lossy(&output.stderr).into_owned()
}

/// The lower-case hex SHA-256 of `bytes`.
pub fn sha256_hex(bytes: &[u8]) -> String {
    use sha2::Digest;
    sha2::Sha256::digest(bytes).iter().map(|byte| format!("{byte:02x}")).collect()
}

//! Starting up: what `list-tools` returned (or that loading failed) is kept in
//! the cache beside the compiled artifact, so a start never instantiates a
//! plugin it has seen before — not even one whose `list-tools` sleeps until
//! its timeout — and deserializes only the plugins a call needs. Plugins load
//! concurrently. And isolation holds with memory kept resident between calls:
//! a plugin's state never survives a call, whatever ran in between.

use crate::common;

use common::{plugin, plugin_dir, stderr, stdout, toolhost_with_env};
use std::path::Path;
use std::sync::Arc;
use std::time::{Duration, Instant};
use toolhost::runtime::cache::Origin;
use toolhost::{Config, Host, LimitOverrides, ProblemKind, ToolOutput};

fn fresh_cache_config(cache: &Path) -> Config {
    Config { cache_dir: Some(cache.to_owned()), ..Config::default() }
}

async fn load(dir: &Path, config: Config) -> Host {
    let host = Host::new(config).expect("host");
    host.load_dir(dir).await.expect("load");
    host
}

/// `toolhost --config CONFIG --plugins DIR ARGS…` with its own cache folder,
/// and how long it took.
fn run_with_cache(cache: &Path, config: &Path, dir: &Path, args: &[&str]) -> (std::process::Output, Duration) {
    let mut all = vec!["--config", config.to_str().unwrap(), "--plugins", dir.to_str().unwrap()];
    all.extend_from_slice(args);
    let start = Instant::now();
    let output = toolhost_with_env(Path::new("."), &all, &[("TOOLHOST_CACHE_DIR", cache.to_str().unwrap())]);
    (output, start.elapsed())
}

#[test]
fn plugins_that_sleep_in_list_tools_cost_their_timeout_once_and_together() {
    let cache = tempfile::tempdir().unwrap();
    let dir = plugin_dir(&["echo", "list_sleeps"]);
    for copy in ["list_sleeps_2", "list_sleeps_3"] {
        std::fs::copy(plugin("list_sleeps"), dir.path().join(format!("{copy}.wasm"))).unwrap();
    }
    let timeout = Duration::from_secs(3);
    let config_dir = tempfile::tempdir().unwrap();
    let config = config_dir.path().join("toolhost.toml");
    std::fs::write(&config, "[limits]\ntimeout = \"3s\"\n").unwrap();
    let call = ["call", "echo", r#"{"text":"hi"}"#];
    // Compile both components into the cache first (`inspect` compiles
    // through it, and records no tool list), so that the timings below are
    // list-tools, not compiling.
    for name in ["echo", "list_sleeps"] {
        let path = dir.path().join(format!("{name}.wasm"));
        run_with_cache(cache.path(), &config, dir.path(), &["inspect", path.to_str().unwrap()]);
    }

    // First start: the three sleepers are listed concurrently, so the start
    // costs about one timeout, not three.
    let (first, took) = run_with_cache(cache.path(), &config, dir.path(), &call);
    assert!(first.status.success(), "{}", stderr(&first));
    assert_eq!(stdout(&first).trim(), "hi");
    let warning_lines = |output: &std::process::Output| -> Vec<String> {
        stderr(output).lines().filter(|line| line.starts_with("warning:")).map(str::to_owned).collect()
    };
    let warnings = stderr(&first);
    for name in ["list_sleeps", "list_sleeps_2", "list_sleeps_3"] {
        let line = warnings
            .lines()
            .find(|line| line.contains(&format!("{name}.wasm:")))
            .unwrap_or_else(|| panic!("{name} is reported: {warnings}"));
        assert!(line.starts_with("warning: skipped") && line.contains("listing its tools failed"), "{line}");
        assert!(line.contains("timed out") || line.contains("timeout"), "{line}");
    }
    assert!(took >= timeout, "the first start ran list-tools: {took:?}");
    assert!(took < timeout * 2, "the three sleepers were listed one after the other: {took:?}");

    // Every later start reports them again, with the same reason, without
    // running list-tools (which would take the whole timeout).
    for _ in 0..2 {
        let (again, took) = run_with_cache(cache.path(), &config, dir.path(), &call);
        assert!(again.status.success(), "{}", stderr(&again));
        assert_eq!(stdout(&again).trim(), "hi");
        assert_eq!(warning_lines(&again), warning_lines(&first), "the same problems, from the cache");
        assert!(took < timeout, "a later start ran list-tools again: {took:?}");
    }

    // With other limits, the failure is not taken from the cache: the plugin is tried again.
    std::fs::write(&config, "[limits]\ntimeout = \"1s\"\n").unwrap();
    let (retried, took) = run_with_cache(cache.path(), &config, dir.path(), &call);
    assert!(retried.status.success(), "{}", stderr(&retried));
    assert!(took >= Duration::from_secs(1), "list-tools ran again under the new limits: {took:?}");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_warm_start_instantiates_nothing_and_loads_only_the_called_plugin() {
    let cache = tempfile::tempdir().unwrap();
    let dir = plugin_dir(&["echo", "hash", "keeps_state", "panics"]);

    let cold = load(dir.path(), fresh_cache_config(cache.path())).await;
    assert!(cold.problems().is_empty(), "{:?}", cold.problems());
    for plugin in cold.plugins() {
        assert_eq!(plugin.origin, Origin::Compiled, "{}", plugin.name);
    }
    let cold_tools: Vec<(String, String, serde_json::Value)> = cold
        .catalog()
        .tools()
        .iter()
        .map(|entry| (entry.name().to_owned(), entry.origin().to_owned(), entry.schema().clone()))
        .collect();

    let warm = load(dir.path(), fresh_cache_config(cache.path())).await;
    assert!(warm.problems().is_empty(), "{:?}", warm.problems());
    let warm_tools: Vec<(String, String, serde_json::Value)> = warm
        .catalog()
        .tools()
        .iter()
        .map(|entry| (entry.name().to_owned(), entry.origin().to_owned(), entry.schema().clone()))
        .collect();
    assert_eq!(warm_tools, cold_tools, "the cached listing gives the same tools and schemas");
    for plugin in warm.plugins() {
        assert_eq!(plugin.origin, Origin::Cached, "{}", plugin.name);
        assert!(!plugin.code_loaded(), "{} was loaded at start", plugin.name);
    }

    let report = warm.call("sha256", r#"{"text":"hello"}"#, &LimitOverrides::default()).await;
    assert_eq!(
        report.outcome,
        Ok(ToolOutput::Text("2cf24dba5fb0a30e26e83b2ac5b9e29e1b161e5c1fa7425e73043362938b9824".to_owned()))
    );
    // Arguments are still checked against the cached schema before anything loads.
    let report = warm.call("echo", r#"{"text": 5}"#, &LimitOverrides::default()).await;
    assert!(matches!(report.outcome, Err(toolhost::CallError::InvalidArguments(_))), "{:?}", report.outcome);
    let loaded: Vec<String> =
        warm.plugins().iter().filter(|plugin| plugin.code_loaded()).map(|plugin| plugin.name.to_string()).collect();
    assert_eq!(loaded, ["hash"], "only the called plugin was deserialized");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn broken_plugins_cached_as_failed_are_reported_at_every_start() {
    let cache = tempfile::tempdir().unwrap();
    let dir = plugin_dir(&["echo", "list_traps", "not_a_plugin", "bad_schema"]);
    std::fs::write(dir.path().join("text_file.wasm"), "this is not wasm").unwrap();

    let reasons = |host: &Host| {
        let mut reasons: Vec<(String, String)> = host
            .problems()
            .iter()
            .map(|problem| {
                assert_eq!(problem.kind, ProblemKind::Plugin);
                (problem.paths[0].file_name().unwrap().to_string_lossy().into_owned(), problem.reason.clone())
            })
            .collect();
        reasons.sort();
        reasons
    };
    let first = load(dir.path(), fresh_cache_config(cache.path())).await;
    let second = load(dir.path(), fresh_cache_config(cache.path())).await;
    assert_eq!(reasons(&first).len(), 4, "{:?}", first.problems());
    assert_eq!(reasons(&second), reasons(&first));
    assert!(reasons(&second)[1].1.contains("refuses to list"), "{:?}", reasons(&second));
    let report = second.call("echo", r#"{"text":"fine"}"#, &LimitOverrides::default()).await;
    assert_eq!(report.outcome, Ok(ToolOutput::Text("fine".to_owned())));
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn unreadable_cache_entries_are_ignored_and_rewritten() {
    let cache = tempfile::tempdir().unwrap();
    let dir = plugin_dir(&["echo"]);
    drop(load(dir.path(), fresh_cache_config(cache.path())).await);
    let listings: Vec<_> = std::fs::read_dir(cache.path())
        .unwrap()
        .map(|entry| entry.unwrap().path())
        .filter(|path| path.to_string_lossy().ends_with(".tools.json"))
        .collect();
    assert_eq!(listings.len(), 1, "one tool list beside the one artifact");

    // Garbage, an oversized file and a FIFO in place of the tool list: each is
    // ignored (never trusted, never waited on), and the plugin is listed again.
    let garbage = || std::fs::write(&listings[0], b"{\"tools\": garbage").unwrap();
    let huge = || std::fs::write(&listings[0], vec![b' '; 17 << 20]).unwrap();
    let fifo = || {
        std::fs::remove_file(&listings[0]).unwrap();
        let name = std::ffi::CString::new(listings[0].to_str().unwrap()).unwrap();
        // SAFETY: a valid NUL-terminated path.
        assert_eq!(unsafe { libc::mkfifo(name.as_ptr(), 0o600) }, 0);
    };
    for spoil in [&garbage as &dyn Fn(), &huge, &fifo] {
        spoil();
        let host = load(dir.path(), fresh_cache_config(cache.path())).await;
        assert!(host.problems().is_empty(), "{:?}", host.problems());
        let report = host.call("echo", r#"{"text":"still"}"#, &LimitOverrides::default()).await;
        assert_eq!(report.outcome, Ok(ToolOutput::Text("still".to_owned())));
        let kind = std::fs::symlink_metadata(&listings[0]).map(|meta| meta.file_type().is_file());
        if kind.is_ok_and(|is_file| is_file) {
            let text = String::from_utf8_lossy(&std::fs::read(&listings[0]).unwrap()).into_owned();
            assert!(text.contains("\"echo\""), "rewritten: {text:.100}");
        } else {
            std::fs::remove_file(&listings[0]).unwrap();
        }
    }
}

/// The cache files (artifact, tool list) of the plugin file `wasm`, by its SHA-256.
fn cache_files(cache: &Path, wasm: &Path, ending: &str) -> Vec<std::path::PathBuf> {
    let sha256 = toolhost::runtime::cache::sha256_hex(&std::fs::read(wasm).unwrap());
    let mut files: Vec<_> = std::fs::read_dir(cache)
        .unwrap()
        .map(|entry| entry.unwrap().path())
        .filter(|path| {
            let name = path.file_name().unwrap().to_string_lossy();
            name.starts_with(&sha256) && name.ends_with(ending)
        })
        .collect();
    files.sort();
    files
}

/// An artifact is native code the host runs: one that is swapped for another
/// plugin's, patched, or planted unsealed is never loaded; the plugin is
/// compiled again from its own file, and its own code answers. The same for
/// a tool list or an identity-index entry moved under another plugin's name.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_swapped_patched_or_planted_cache_file_is_never_run() {
    let cache = tempfile::tempdir().unwrap();
    let dir = plugin_dir(&["echo", "keeps_state"]);
    let (echo, other) = (dir.path().join("echo.wasm"), dir.path().join("keeps_state.wasm"));
    drop(load(dir.path(), fresh_cache_config(cache.path())).await);
    let (echo_artifact, other_artifact) =
        (cache_files(cache.path(), &echo, ".cwasm"), cache_files(cache.path(), &other, ".cwasm"));
    assert_eq!((echo_artifact.len(), other_artifact.len()), (1, 1), "one artifact each");
    let (echo_artifact, other_artifact) = (&echo_artifact[0], &other_artifact[0]);
    let sealed = std::fs::read(echo_artifact).unwrap();

    // A plain wasmtime artifact of another component, planted without a seal.
    let planted = {
        let host = Host::new(fresh_cache_config(cache.path())).unwrap();
        host.engine().precompile_component(&std::fs::read(&other).unwrap()).unwrap()
    };
    let mut patched = sealed.clone();
    let at = patched.len() / 2;
    patched[at] ^= 0x40;
    let swaps: [(&str, Vec<u8>); 3] =
        [("swapped", std::fs::read(other_artifact).unwrap()), ("patched", patched), ("planted", planted)];
    for (how, bytes) in swaps {
        std::fs::write(echo_artifact, &bytes).unwrap();
        let host = load(dir.path(), fresh_cache_config(cache.path())).await;
        let report = host.call("echo", r#"{"text":"mine"}"#, &LimitOverrides::default()).await;
        assert_eq!(report.outcome, Ok(ToolOutput::Text("mine".to_owned())), "{how}: echo's own code answers");
        let rewritten = std::fs::read(echo_artifact).unwrap();
        assert_ne!(rewritten, bytes, "{how}: the file is compiled again and replaced");
    }

    // Another plugin's tool list under echo's name: echo's tools are listed
    // from its own code again, not the other's.
    let (echo_listing, other_listing) =
        (cache_files(cache.path(), &echo, ".tools.json"), cache_files(cache.path(), &other, ".tools.json"));
    std::fs::copy(&other_listing[0], &echo_listing[0]).unwrap();
    let host = load(dir.path(), fresh_cache_config(cache.path())).await;
    let tools: Vec<String> = host.catalog().tools().iter().map(|entry| entry.name().to_owned()).collect();
    assert!(host.problems().is_empty(), "{:?}", host.problems());
    assert_eq!(tools.len(), 2, "echo's tool and keeps_state's, each once: {tools:?}");
    assert!(tools.contains(&"echo".to_owned()), "{tools:?}");

    // An identity-index entry saying echo's file holds the other's bytes.
    let other_sha256 = toolhost::runtime::cache::sha256_hex(&std::fs::read(&other).unwrap());
    for entry in std::fs::read_dir(cache.path()).unwrap() {
        let path = entry.unwrap().path();
        if path.file_name().unwrap().to_string_lossy().starts_with("stat-") {
            std::fs::write(&path, &other_sha256).unwrap();
        }
    }
    let host = load(dir.path(), fresh_cache_config(cache.path())).await;
    assert!(host.problems().is_empty(), "{:?}", host.problems());
    let report = host.call("echo", r#"{"text":"still mine"}"#, &LimitOverrides::default()).await;
    assert_eq!(report.outcome, Ok(ToolOutput::Text("still mine".to_owned())));
}

/// A plugin granted a folder that holds the compile cache, the config, the
/// lock (`toolhost.lock`) or a credential file could read or change what
/// toolhost trusts: such a config is refused at start, saying why.
#[test]
fn a_grant_of_a_folder_holding_toolhosts_own_files_is_refused_at_start() {
    let home = tempfile::tempdir().unwrap();
    let plugins = plugin_dir(&["echo"]);
    let elsewhere = tempfile::tempdir().unwrap();
    let cache = elsewhere.path().join("cache");
    std::fs::create_dir_all(home.path().join("etc/secrets")).unwrap();
    std::fs::write(home.path().join("etc/secrets/token"), "s3cret-value-123").unwrap();
    let config = home.path().join("etc/toolhost.toml");
    let plugins_dir = plugins.path().to_str().unwrap();
    let cases = [
        (elsewhere.path().to_str().unwrap().to_owned(), "the compile cache"),
        (home.path().to_str().unwrap().to_owned(), "the config file"),
        (format!("{}/./etc/..", home.path().display()), "the config file"),
        (home.path().join("etc").display().to_string(), "the config file"),
        (home.path().join("etc/secrets").display().to_string(), "a credential's file"),
        (plugins_dir.to_owned(), "toolhost.lock"),
    ];
    std::fs::write(plugins.path().join("toolhost.lock"), "version = 1\n").unwrap();
    for (folder, what) in cases {
        let text = format!(
            "[plugins.echo]\ndirs = [\"{folder}:/data:ro\"]\n\
             [[plugins.echo.credentials]]\nto = \"https://api.example.com\"\nbearer = {{ file = \"secrets/token\" }}\n"
        );
        std::fs::write(&config, text).unwrap();
        let output = toolhost_with_env(
            Path::new("."),
            &["--config", config.to_str().unwrap(), "--plugins", plugins_dir, "tools"],
            &[("TOOLHOST_CACHE_DIR", cache.to_str().unwrap())],
        );
        let err = stderr(&output);
        assert_eq!(output.status.code(), Some(2), "{folder}: {err}");
        assert!(err.contains("grants the folder") && err.contains(what) && !err.contains("s3cret"), "{folder}: {err}");
    }
    // A folder that holds none of them is granted as before.
    std::fs::create_dir_all(home.path().join("data")).unwrap();
    let text = format!("[plugins.echo]\ndirs = [\"{}:/data:ro\"]\n", home.path().join("data").display());
    std::fs::write(&config, text).unwrap();
    let output = toolhost_with_env(
        Path::new("."),
        &["--config", config.to_str().unwrap(), "--plugins", plugins_dir, "tools"],
        &[("TOOLHOST_CACHE_DIR", cache.to_str().unwrap())],
    );
    assert!(output.status.success(), "{}", stderr(&output));
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_call_after_the_artifact_is_gone_compiles_again_and_a_changed_file_is_refused() {
    let cache = tempfile::tempdir().unwrap();
    let dir = plugin_dir(&["echo", "keeps_state"]);
    drop(load(dir.path(), fresh_cache_config(cache.path())).await);
    let warm = load(dir.path(), fresh_cache_config(cache.path())).await;
    for entry in std::fs::read_dir(cache.path()).unwrap() {
        let path = entry.unwrap().path();
        if path.extension().is_some_and(|ext| ext == "cwasm") {
            std::fs::remove_file(path).unwrap();
        }
    }
    let report = warm.call("echo", r#"{"text":"again"}"#, &LimitOverrides::default()).await;
    assert_eq!(report.outcome, Ok(ToolOutput::Text("again".to_owned())));

    // keeps_state's file is replaced after start and before its first call.
    std::fs::copy(plugin("echo"), dir.path().join("keeps_state.wasm")).unwrap();
    for entry in std::fs::read_dir(cache.path()).unwrap() {
        let path = entry.unwrap().path();
        if path.extension().is_some_and(|ext| ext == "cwasm") {
            std::fs::remove_file(path).unwrap();
        }
    }
    let report = warm.call("keeps_state", "{}", &LimitOverrides::default()).await;
    match &report.outcome {
        Err(toolhost::CallError::Host(message)) => {
            assert!(message.contains("changed since its tools were listed"), "{message}")
        }
        other => panic!("expected a host error, got {other:?}"),
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn state_never_survives_a_call_interleaved_with_other_plugins() {
    interleaved(common::config()).await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn state_never_survives_a_call_with_nothing_kept_resident_either() {
    interleaved(common::config_from("keep_resident = \"0\"\n")).await;
}

/// Calls that keep state, panic, bomb memory and answer, at once on the same
/// slots, then one after another: the state-keeping ones always answer 1.
async fn interleaved(config: toolhost::Config) {
    let plugins = ["keeps_state", "echo", "panics", "grow_memory", "py_misbehaves"];
    let (host, _dir) = common::host_with_config(&plugins, config).await;
    let host = Arc::new(host);
    let mut calls = tokio::task::JoinSet::new();
    for i in 0..120usize {
        let host = host.clone();
        calls.spawn(async move {
            let (tool, arguments, limits) = match i % 6 {
                0 | 3 => ("keeps_state", "{}".to_owned(), LimitOverrides::default()),
                1 => ("echo", format!(r#"{{"text":"call {i}"}}"#), LimitOverrides::default()),
                2 => ("py_keeps_state", "{}".to_owned(), LimitOverrides::default()),
                4 => ("panics", "{}".to_owned(), LimitOverrides::default()),
                _ => (
                    "grow_memory",
                    "{}".to_owned(),
                    LimitOverrides { memory: Some(toolhost::ByteSize(8 << 20)), ..Default::default() },
                ),
            };
            (i, tool, host.call(tool, &arguments, &limits).await)
        });
    }
    while let Some(joined) = calls.join_next().await {
        let (i, tool, report) = joined.expect("call task");
        match tool {
            "keeps_state" | "py_keeps_state" => {
                assert_eq!(report.outcome, Ok(ToolOutput::Text("1".to_owned())), "call {i} to {tool}")
            }
            "echo" => assert_eq!(report.outcome, Ok(ToolOutput::Text(format!("call {i}")))),
            _ => assert!(report.outcome.is_err(), "call {i} to {tool}: {:?}", report.outcome),
        }
    }
    // And one after another, on the same slots.
    for _ in 0..20 {
        for tool in ["keeps_state", "py_keeps_state"] {
            let report = host.call(tool, "{}", &LimitOverrides::default()).await;
            assert_eq!(report.outcome, Ok(ToolOutput::Text("1".to_owned())), "{tool}");
        }
    }
}

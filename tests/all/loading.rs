//! Loading a plugins folder: broken files are reported with their path and
//! reason while the rest load; tool-name collisions load neither side; the
//! compile cache is used on the second start and not for a changed file.

use crate::common;

use common::{config, plugin, plugin_dir};
use toolhost::runtime::cache::Origin;
use toolhost::{Config, Host, LimitOverrides, ToolOutput};

async fn load(dir: &std::path::Path, config: Config) -> Host {
    let host = Host::new(config).expect("host");
    host.load_dir(dir).await.expect("load");
    host
}

fn problem_for(host: &Host, file: &str) -> String {
    host.problems()
        .into_iter()
        .find(|problem| problem.paths.iter().any(|path| path.ends_with(file)))
        .map(|problem| problem.reason)
        .unwrap_or_else(|| panic!("no problem reported for {file}: {:?}", host.problems()))
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn broken_files_are_reported_and_the_rest_load() {
    let dir = plugin_dir(&["echo", "not_a_plugin", "list_traps", "bad_schema", "bad_name"]);
    std::fs::write(dir.path().join("text_file.wasm"), "this is not wasm").unwrap();
    // The smallest valid core module: magic and version 1.
    std::fs::write(dir.path().join("core_module.wasm"), b"\0asm\x01\0\0\0").unwrap();
    std::fs::write(dir.path().join("truncated.wasm"), &std::fs::read(plugin("echo")).unwrap()[..1000]).unwrap();
    std::fs::write(dir.path().join("README.md"), "not a plugin, and not a .wasm file").unwrap();

    let host = load(dir.path(), config()).await;

    let catalog = host.catalog();
    let names: Vec<&str> = catalog.tools().iter().map(|entry| entry.name()).collect();
    assert_eq!(names, ["echo"]);
    assert_eq!(host.problems().len(), 7, "{:?}", host.problems());
    assert!(problem_for(&host, "text_file.wasm").contains("not a WebAssembly file"));
    assert!(problem_for(&host, "core_module.wasm").contains("core WebAssembly module, not a component"));
    assert!(problem_for(&host, "truncated.wasm").contains("not a valid component"));
    assert!(problem_for(&host, "not_a_plugin.wasm").contains("does not export `toolhost:plugin/tools@0.2.0`"));
    let trap = problem_for(&host, "list_traps.wasm");
    assert!(trap.contains("listing its tools failed") && trap.contains("refuses to list"), "{trap}");
    assert!(problem_for(&host, "bad_schema.wasm").contains("must describe an object"));
    assert!(problem_for(&host, "bad_name.wasm").contains("1 to 64 characters"));

    let report = host.call("echo", r#"{"text":"fine"}"#, &LimitOverrides::default()).await;
    assert_eq!(report.outcome, Ok(ToolOutput::Text("fine".to_owned())));
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_tool_name_offered_twice_loads_neither_and_names_both_files() {
    let dir = plugin_dir(&["echo", "keeps_state"]);
    std::fs::copy(plugin("echo"), dir.path().join("echo_copy.wasm")).unwrap();

    let host = load(dir.path(), config()).await;

    let catalog = host.catalog();
    let names: Vec<&str> = catalog.tools().iter().map(|entry| entry.name()).collect();
    assert_eq!(names, ["keeps_state"], "the colliding name is not callable from either file");
    let problem = &host.problems()[0];
    assert_eq!(problem.kind, toolhost::ProblemKind::Collision);
    assert_eq!(problem.paths.len(), 2);
    assert!(problem.paths[0].ends_with("echo.wasm") && problem.paths[1].ends_with("echo_copy.wasm"));
    assert!(problem.to_string().contains("both offer a tool named `echo`"), "{problem}");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_missing_folder_is_an_error_that_says_what_to_do() {
    let host = Host::new(config()).unwrap();
    let err = host.load_dir("/nonexistent/plugins".as_ref()).await.unwrap_err();
    let message = format!("{err:#}");
    // Not toolhost's own repository: the advice is to point at a folder, not to build the bundled plugins.
    assert!(message.contains("/nonexistent/plugins") && message.contains("point --plugins"), "{message}");
    assert!(!message.contains("plugins/build.sh"), "{message}");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_second_start_loads_from_the_cache_and_a_changed_file_recompiles() {
    let cache = tempfile::tempdir().unwrap();
    let dir = plugin_dir(&["echo"]);
    let config = Config { cache_dir: Some(cache.path().to_owned()), ..Config::default() };

    let first = load(dir.path(), config.clone()).await;
    assert_eq!(first.plugins()[0].origin, Origin::Compiled);
    let mut files: Vec<String> = std::fs::read_dir(cache.path())
        .unwrap()
        .map(|entry| entry.unwrap().file_name().to_string_lossy().into_owned())
        .collect();
    files.sort();
    assert_eq!(files.len(), 2, "one artifact and its tool list, no temporary files left: {files:?}");
    assert!(files.iter().any(|file| file.ends_with(".cwasm")), "{files:?}");
    assert!(files.iter().any(|file| file.ends_with(".tools.json")), "{files:?}");

    let second = load(dir.path(), config.clone()).await;
    assert_eq!(second.plugins()[0].origin, Origin::Cached);
    let report = second.call("echo", r#"{"text":"cached"}"#, &LimitOverrides::default()).await;
    assert_eq!(report.outcome, Ok(ToolOutput::Text("cached".to_owned())));

    // A different file under the same name gets its own artifact.
    std::fs::copy(plugin("keeps_state"), dir.path().join("echo.wasm")).unwrap();
    let third = load(dir.path(), config.clone()).await;
    assert_eq!(third.plugins()[0].origin, Origin::Compiled);
    assert_eq!(third.catalog().tools()[0].name(), "keeps_state");

    // A corrupted artifact is discarded and replaced, not trusted. (Artifacts
    // are memory-mapped, so the hosts using them go first: toolhost itself
    // never rewrites an artifact in place, it renames a new file over it.)
    drop((first, second, third));
    for entry in std::fs::read_dir(cache.path()).unwrap() {
        std::fs::write(entry.unwrap().path(), b"garbage").unwrap();
    }
    let fourth = load(dir.path(), config).await;
    assert_eq!(fourth.plugins()[0].origin, Origin::Compiled);
    assert!(fourth.problems().is_empty());
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn per_plugin_limits_come_from_the_config() {
    let mut config = config();
    let parsed =
        Config::parse("[limits]\ntimeout = \"3s\"\n[plugins.spin_forever.limits]\nfuel = 1_000_000\n").unwrap();
    config.limits = parsed.limits;
    config.plugins = parsed.plugins;
    let dir = plugin_dir(&["echo", "spin_forever"]);
    let host = load(dir.path(), config).await;

    let report = host.call("spin_forever", "{}", &LimitOverrides::default()).await;
    assert_eq!(report.outcome, Err(toolhost::CallError::OutOfFuel { limit: 1_000_000 }));
    let plugins = host.plugins();
    let echo = plugins.iter().find(|plugin| &*plugin.name == "echo").unwrap();
    assert_eq!(echo.limits.fuel, toolhost::Limits::DEFAULT_FUEL);
    assert_eq!(echo.limits.timeout, std::time::Duration::from_secs(3));
}

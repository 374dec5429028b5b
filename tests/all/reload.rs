//! Hot reload of a plugins folder, through the library with the real
//! watcher (notify) on a real folder: a half-written file never replaces a
//! working plugin, an unchanged file is a no-op, a manifest change reloads
//! its plugin, and a call running across a swap finishes on the version it
//! started with. And `toolhost chat`, driven through a pipe against a
//! scripted model: a plugin copied in between two turns is in the second
//! turn's tool list.

use crate::common;

use common::chat::Chat;
use common::model_server::{ModelServer, Script};
use common::{config, plugin, plugin_dir};
use std::sync::Arc;
use std::time::{Duration, Instant};
use toolhost::catalog::reload::Watcher;
use toolhost::{Host, LimitOverrides, ToolOutput};

async fn watched(names: &[&str]) -> (Arc<Host>, Watcher, tempfile::TempDir) {
    let dir = plugin_dir(names);
    let host = Host::new(config()).expect("host");
    host.load_dir(dir.path()).await.expect("load");
    let host = Arc::new(host);
    let watcher = Watcher::start(host.clone(), dir.path()).expect("watch");
    (host, watcher, dir)
}

/// Waits up to 2 s for the catalog to reach a generation past `after`.
async fn next_generation(host: &Host, after: u64) -> bool {
    let started = Instant::now();
    while started.elapsed() < Duration::from_secs(2) {
        if host.catalog().generation() > after {
            return true;
        }
        tokio::time::sleep(Duration::from_millis(20)).await;
    }
    false
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_truncated_file_never_replaces_a_working_plugin() {
    let (host, _watcher, dir) = watched(&["echo"]).await;
    let generation = host.catalog().generation();
    let bytes = std::fs::read(plugin("echo")).unwrap();
    std::fs::write(dir.path().join("echo.wasm"), &bytes[..bytes.len() / 3]).unwrap();
    assert!(!next_generation(&host, generation).await, "a broken file must not swap the catalog");
    let report = host.call("echo", r#"{"text":"still the old one"}"#, &LimitOverrides::default()).await;
    assert_eq!(report.outcome, Ok(ToolOutput::Text("still the old one".to_owned())));

    // The good file back: the same SHA-256 as the version loaded, so nothing to do.
    std::fs::write(dir.path().join("echo.wasm"), &bytes).unwrap();
    assert!(!next_generation(&host, generation).await, "an unchanged file is a no-op");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_plugin_written_slowly_is_loaded_once_complete_and_never_reported_broken() {
    use std::io::Write;
    let (host, _watcher, dir) = watched(&["echo"]).await;
    let bytes = std::fs::read(plugin("hash")).unwrap();
    let path = dir.path().join("hash.wasm");
    let mut file = std::fs::File::create(&path).unwrap();
    // Three parts, with pauses longer than the quiet time the watcher waits for.
    for part in bytes.chunks(bytes.len() / 3 + 1) {
        file.write_all(part).unwrap();
        file.flush().unwrap();
        tokio::time::sleep(Duration::from_millis(1000)).await;
        let problems = host.problems();
        assert!(
            !problems.iter().any(|problem| problem.paths.contains(&path)),
            "a file still being written is not reported: {problems:?}"
        );
    }
    drop(file);
    let started = Instant::now();
    while host.catalog().find("sha256").is_none() {
        assert!(started.elapsed() < Duration::from_secs(10), "the complete file is loaded: {:?}", host.problems());
        tokio::time::sleep(Duration::from_millis(50)).await;
    }
    assert!(host.problems().iter().all(|problem| !problem.paths.contains(&path)), "{:?}", host.problems());
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn added_replaced_and_removed_plugins_swap_the_catalog() {
    let (host, _watcher, dir) = watched(&["echo"]).await;
    let generation = host.catalog().generation();
    std::fs::copy(plugin("hash"), dir.path().join("hash.wasm")).unwrap();
    assert!(next_generation(&host, generation).await, "a new plugin shows within 2 s");
    let report = host.call("sha256", r#"{"text":"abc"}"#, &LimitOverrides::default()).await;
    assert!(report.outcome.is_ok(), "{:?}", report.outcome);

    let generation = host.catalog().generation();
    std::fs::write(dir.path().join("hash.toml"), "read_only = true\n").unwrap();
    assert!(next_generation(&host, generation).await, "a manifest change reloads its plugin");
    assert!(host.catalog().plugin("hash").unwrap().asks.as_ref().is_some_and(|asks| asks.read_only == Some(true)));

    let generation = host.catalog().generation();
    std::fs::remove_file(dir.path().join("hash.wasm")).unwrap();
    assert!(next_generation(&host, generation).await, "a removed plugin goes");
    assert!(host.catalog().find("sha256").is_none());
    assert!(host.catalog().find("echo").is_some());
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_call_running_across_a_swap_completes() {
    let (host, _watcher, dir) = watched(&["echo", "mcp_conformance"]).await;
    let generation = host.catalog().generation();
    let running = {
        let host = host.clone();
        tokio::spawn(async move {
            host.call("slow_echo", r#"{"text":"across the swap","ms":1500}"#, &LimitOverrides::default()).await
        })
    };
    tokio::time::sleep(Duration::from_millis(200)).await;
    std::fs::remove_file(dir.path().join("mcp_conformance.wasm")).unwrap();
    assert!(next_generation(&host, generation).await, "the removal swaps the catalog");
    assert!(host.catalog().find("slow_echo").is_none(), "new calls no longer see the tool");
    let report = running.await.unwrap();
    assert_eq!(report.outcome, Ok(ToolOutput::Text("across the swap".to_owned())));
}

/// The tool names the model was offered in request `index`.
fn offered(server: &ModelServer, index: usize) -> Vec<String> {
    server.requests()[index].body["tools"]
        .as_array()
        .map(|tools| tools.iter().filter_map(|tool| tool["function"]["name"].as_str().map(str::to_owned)).collect())
        .unwrap_or_default()
}

#[test]
fn chat_offers_a_plugin_copied_in_between_turns() {
    let script = Script { anthropic: false, stream: false };
    let server = ModelServer::start(vec![script.text("first answer"), script.text("second answer")]);
    let dir = plugin_dir(&["hash"]);
    let plugins = dir.path().display().to_string();
    let mut chat = Chat::start(dir.path(), &["--plugins", &plugins], script, &server);
    chat.say("first");
    chat.wait_for_requests(&server, 1, Duration::from_secs(60));

    // Written elsewhere and renamed in, as the README says to.
    let staged = dir.path().join(".echo.wasm.part");
    std::fs::copy(plugin("echo"), &staged).unwrap();
    std::fs::rename(&staged, dir.path().join("echo.wasm")).unwrap();
    let line = chat.wait_for("echo.wasm", Duration::from_secs(10));
    assert!(line.contains("loaded"), "{line}");

    chat.say("second");
    chat.wait_for_requests(&server, 2, Duration::from_secs(60));
    let (output, _) = chat.finish();
    assert!(output.status.success(), "{}", String::from_utf8_lossy(&output.stderr));
    let (first, second) = (offered(&server, 0), offered(&server, 1));
    assert!(first.contains(&"sha256".to_owned()) && !first.contains(&"echo".to_owned()), "{first:?}");
    assert!(second.contains(&"echo".to_owned()) && second.contains(&"sha256".to_owned()), "{second:?}");
}

#[test]
fn serve_says_a_refused_reload_once_per_content() {
    use std::io::BufRead;
    let dir = plugin_dir(&["echo"]);
    let mut child = std::process::Command::new(env!("CARGO_BIN_EXE_toolhost"))
        .args(["--plugins", &dir.path().display().to_string(), "serve", "--http", "127.0.0.1:0"])
        .env("TOOLHOST_CACHE_DIR", common::shared_cache())
        .stdin(std::process::Stdio::null())
        .stdout(std::process::Stdio::null())
        .stderr(std::process::Stdio::piped())
        .spawn()
        .unwrap();
    let stderr = std::io::BufReader::new(child.stderr.take().unwrap());
    let (sender, lines) = std::sync::mpsc::channel();
    let reader = std::thread::spawn(move || {
        let mut all = Vec::new();
        for line in stderr.lines().map_while(Result::ok) {
            let _ = sender.send(line.clone());
            all.push(line);
        }
        all
    });
    let started = Instant::now();
    while !lines.recv_timeout(Duration::from_secs(60)).unwrap().contains("serving MCP at") {
        assert!(started.elapsed() < Duration::from_secs(60));
    }
    let echo = dir.path().join("echo.wasm");
    // The same broken content three times (written again, touched), then another.
    for content in [&b"not a component"[..], b"not a component", b"not a component", b"still not one"] {
        std::fs::write(&echo, content).unwrap();
        std::thread::sleep(Duration::from_millis(1200));
    }
    let _ = child.kill();
    let _ = child.wait();
    let all = reader.join().unwrap();
    let said: Vec<&String> = all.iter().filter(|line| line.contains("kept the last good version")).collect();
    assert_eq!(said.len(), 2, "once per content: {said:?}");
}

/// Reading a plugin's file or its manifest (an operator's `cat`, or a reload
/// itself opening the manifest) changes nothing and reloads nothing: taken
/// as a change, each reload's own read started the next, for ever.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn reading_a_manifest_or_a_plugin_is_not_a_change() {
    let (host, _watcher, dir) = watched(&["files"]).await;
    let manifest = dir.path().join("files.toml");
    if !manifest.is_file() {
        std::fs::copy(common::plugin("files").with_extension("toml"), &manifest).unwrap();
        let generation = host.catalog().generation();
        assert!(next_generation(&host, generation).await, "a new manifest reloads its plugin");
    }
    let generation = host.catalog().generation();
    std::fs::read(&manifest).unwrap();
    std::fs::read(dir.path().join("files.wasm")).unwrap();
    assert!(!next_generation(&host, generation).await, "a read reloaded the plugin");
    // A real change still does.
    let text = std::fs::read_to_string(&manifest).unwrap();
    std::fs::write(&manifest, format!("{text}\n# changed\n")).unwrap();
    assert!(next_generation(&host, generation).await, "a changed manifest reloads");
}

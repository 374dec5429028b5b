//! The call not made (`[cache]`): a tool that declares its results
//! cacheable (`hash`'s `sha256` is read-only and idempotent) is answered from
//! the cache when it is called again with the same arguments, however they
//! are spelled; a reload that changed the component, another requestor of a
//! plugin with credentials, an operator's `cache = false`, a network grant,
//! a grant to ask the client and the bounds all stop that. Through the library with the real watcher,
//! and through `serve` over stdio with the audit log.

use crate::common;

use common::{config_from, plugin_dir, stderr, stdout, toolhost};
use serde_json::{Value, json};
use std::sync::Arc;
use std::time::{Duration, Instant};
use toolhost::catalog::reload::Watcher;
use toolhost::{Caller, Host, LimitOverrides, ToolOutput};

fn text(report: &toolhost::CallReport) -> String {
    match &report.outcome {
        Ok(ToolOutput::Text(text) | ToolOutput::Json(text)) => text.clone(),
        other => panic!("{other:?}"),
    }
}

async fn call(host: &Host, arguments: &str) -> toolhost::CallReport {
    host.call("sha256", arguments, &LimitOverrides::default()).await
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_repeated_call_is_answered_from_the_cache_until_the_component_changes() {
    let dir = plugin_dir(&["hash"]);
    let host = Host::new(config_from("")).expect("host");
    host.load_dir(dir.path()).await.expect("load");
    let host = Arc::new(host);
    let _watcher = Watcher::start(host.clone(), dir.path()).expect("watch");

    let first = call(&host, r#"{"text":"hi"}"#).await;
    assert!(first.outcome.is_ok() && first.cached.is_none(), "{first:?}");
    assert!(first.usage.fuel > 0);
    // The same arguments, spelled another way (spaces, an escape).
    let again = call(&host, r#"{ "text" : "h\u0069" }"#).await;
    assert_eq!(text(&again), text(&first));
    assert!(again.cached.is_some(), "a repeated call is answered from the cache: {again:?}");
    assert_eq!(again.usage.fuel, 0, "and nothing ran");
    let other = call(&host, r#"{"text":"ho"}"#).await;
    assert!(other.cached.is_none(), "other arguments run");
    // A call's own output limit holds for a cached result too.
    let small = LimitOverrides { output: Some(toolhost::ByteSize(8)), ..LimitOverrides::default() };
    let limited = host.call("sha256", r#"{"text":"hi"}"#, &small).await;
    assert!(limited.outcome.is_err(), "{limited:?}");
    assert!(limited.cached.is_none(), "a result over the call's output limit is not given: {limited:?}");
    let stats = host.cache_stats();
    assert_eq!((stats.hits, stats.entries), (1, 2), "{stats:?}");

    // The component changes (a custom section more): the next call runs.
    let generation = host.catalog().generation();
    let path = dir.path().join("hash.wasm");
    let mut wasm = std::fs::read(&path).unwrap();
    wasm.push(0);
    wasm_encoder::Encode::encode(&wasm_encoder::CustomSection { name: "changed".into(), data: b"1".into() }, &mut wasm);
    let staged = dir.path().join(".hash.wasm.new");
    std::fs::write(&staged, &wasm).unwrap();
    std::fs::rename(&staged, &path).unwrap();
    let started = Instant::now();
    while host.catalog().generation() == generation {
        assert!(started.elapsed() < Duration::from_secs(10), "the change was never reloaded");
        tokio::time::sleep(Duration::from_millis(20)).await;
    }
    let after = call(&host, r#"{"text":"hi"}"#).await;
    assert_eq!(text(&after), text(&first));
    assert!(after.cached.is_none(), "no result crosses a reload that changed the component: {after:?}");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_operator_the_grants_the_requestor_and_the_bounds_decide() {
    async fn twice(config: &str, first: &Caller, second: &Caller) -> (bool, bool) {
        let dir = plugin_dir(&["hash"]);
        let host = Host::new(config_from(config)).expect("host");
        host.load_dir(dir.path()).await.expect("load");
        let catalog = host.catalog();
        let arguments = r#"{"text":"hi"}"#;
        let none = LimitOverrides::default();
        let one = host.call_as(&catalog, "sha256", arguments, &none, Default::default(), first).await;
        let two = host.call_as(&catalog, "sha256", arguments, &none, Default::default(), second).await;
        assert!(one.outcome.is_ok() && two.outcome.is_ok(), "{one:?} {two:?}");
        (one.cached.is_some(), two.cached.is_some())
    }
    let anyone = Caller::default();
    assert_eq!(twice("", &anyone, &anyone).await, (false, true));
    assert_eq!(twice("[cache]\nenabled = false\n", &anyone, &anyone).await, (false, false));
    assert_eq!(twice("[plugins.hash]\ncache = false\n", &anyone, &anyone).await, (false, false));
    // A plugin that may reach the network is not cached unless the operator says so.
    let network = "[plugins.hash]\nhttp = [\"https://api.example.com\"]\n";
    assert_eq!(twice(network, &anyone, &anyone).await, (false, false));
    assert_eq!(twice(&format!("{network}cache = true\n"), &anyone, &anyone).await, (false, true));
    // One that may ask the client (the user, the model, its roots) never is:
    // its result is what they answered that time.
    for asks in ["elicitation = true", "sampling = true", "roots = true"] {
        let config = format!("[plugins.hash]\n{asks}\n");
        assert_eq!(twice(&config, &anyone, &anyone).await, (false, false), "{asks}");
        assert_eq!(twice(&format!("{config}cache = true\n"), &anyone, &anyone).await, (false, false), "{asks}");
    }

    // With credentials, results are per requestor, and not kept for an unknown one.
    let credentials = "[plugins.hash]\ncache = true\n[[plugins.hash.credentials]]\n\
                       to = \"https://api.example.com\"\nbearer = { env = \"RESULT_CACHE_TEST_TOKEN\" }\n";
    let alice = Caller { subject: Some("alice".into()), ..Caller::default() };
    let bob = Caller { subject: Some("bob".into()), ..Caller::default() };
    // SAFETY: set before any host reads it; no test reads or writes this variable elsewhere.
    unsafe { std::env::set_var("RESULT_CACHE_TEST_TOKEN", "t0ken-for-the-cache-test") };
    assert_eq!(twice(credentials, &alice, &alice).await, (false, true));
    assert_eq!(twice(credentials, &alice, &bob).await, (false, false), "bob never gets alice's result");
    assert_eq!(twice(credentials, &anyone, &anyone).await, (false, false), "no requestor, no cache");

    // The bound: two entries, and the oldest goes first.
    let dir = plugin_dir(&["hash"]);
    let host = Host::new(config_from("[cache]\nmax_entries = 2\n")).expect("host");
    host.load_dir(dir.path()).await.expect("load");
    for text in ["a", "b", "c"] {
        let _ = call(&host, &json!({ "text": text }).to_string()).await;
    }
    assert_eq!(host.cache_stats().entries, 2);
    assert!(call(&host, r#"{"text":"a"}"#).await.cached.is_none(), "the oldest went first");
    assert!(call(&host, r#"{"text":"c"}"#).await.cached.is_some());
}

#[test]
fn serve_says_a_result_came_from_the_cache_in_meta_and_in_the_audit_line() {
    let dir = plugin_dir(&["hash"]);
    let keys = dir.path().join("keys");
    std::fs::create_dir(&keys).unwrap();
    let output = toolhost(dir.path(), &["audit", "keygen", "--out", "keys"]);
    assert!(output.status.success(), "{}", stderr(&output));
    let config = dir.path().join("toolhost.toml");
    std::fs::write(&config, "[audit]\nfile = \"audit.log\"\nkey = \"keys/audit.key\"\n").unwrap();
    let mut command = common::stdio::Session::command(&["--plugins", &dir.path().display().to_string(), "--config"]);
    command.arg(&config).arg("serve").current_dir(dir.path());
    let mut session = common::stdio::Session::start(command, "cache-test");
    let first = session.ask("tools/call", json!({"name": "sha256", "arguments": {"text": "hi"}}));
    let second = session.ask("tools/call", json!({"name": "sha256", "arguments": {"text": "hi"}}));
    // Closing stdin ends the session; the server writes its last audit lines as it stops.
    session.close();
    assert!(first["result"]["_meta"].get("toolhost/cached").is_none(), "{first}");
    assert_eq!(first["result"]["content"], second["result"]["content"]);
    assert!(second["result"]["_meta"]["toolhost/cached"]["ageMs"].is_u64(), "{second}");

    let log = std::fs::read_to_string(dir.path().join("audit.log")).unwrap();
    // The calls' lines (the signed tree heads over them aside).
    let lines: Vec<Value> = log
        .lines()
        .map(|line| serde_json::from_str::<Value>(line).unwrap())
        .filter(|line| line["kind"] != "head")
        .collect();
    assert_eq!(lines.len(), 2, "{log}");
    assert!(lines[0].get("cached").is_none(), "{}", lines[0]);
    assert!(lines[1]["cached"]["age_ms"].is_u64(), "{}", lines[1]);
    let verified = toolhost(dir.path(), &["audit", "verify", "audit.log", "--key", "keys/audit.pub"]);
    assert!(verified.status.success(), "{}{}", stdout(&verified), stderr(&verified));
}

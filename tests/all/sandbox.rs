//! Calls through the library against real plugins built from `plugins/`:
//! every misbehaving plugin gets its own outcome, the host carries on, and
//! calls stay isolated, alone or 200 at a time.

use crate::common;

use common::host_with;
use std::sync::Arc;
use std::time::Duration;
use toolhost::{ByteSize, CallError, HumanDuration, LimitOverrides, ToolOutput};

fn echo_args(text: &str) -> String {
    serde_json::json!({ "text": text }).to_string()
}

/// After a misbehaving call, a normal call on the same host still works.
async fn echo_still_works(host: &toolhost::Host) {
    let report = host.call("echo", &echo_args("still here"), &LimitOverrides::default()).await;
    assert_eq!(report.outcome, Ok(ToolOutput::Text("still here".to_owned())));
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_call_returns_output_and_usage() {
    let (host, _dir) = host_with(&["echo"]).await;
    let report = host.call("echo", &echo_args("hello"), &LimitOverrides::default()).await;
    assert_eq!(report.outcome, Ok(ToolOutput::Text("hello".to_owned())));
    assert_eq!(report.plugin.as_deref(), Some("echo"));
    assert!(report.usage.fuel > 0, "fuel is measured");
    assert!(report.usage.memory_peak >= 64 << 10, "memory is measured: {}", report.usage.memory_peak);
    assert!(report.usage.wall > Duration::ZERO);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn spin_forever_runs_out_of_fuel() {
    let (host, _dir) = host_with(&["echo", "spin_forever"]).await;
    let limits = LimitOverrides { fuel: Some(50_000_000), ..Default::default() };
    let report = host.call("spin_forever", "{}", &limits).await;
    assert_eq!(report.outcome, Err(CallError::OutOfFuel { limit: 50_000_000 }));
    assert_eq!(report.usage.fuel, 50_000_000);
    echo_still_works(&host).await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn spin_forever_with_ample_fuel_times_out() {
    let (host, _dir) = host_with(&["echo", "spin_forever"]).await;
    let limits = LimitOverrides {
        fuel: Some(u64::MAX / 2),
        timeout: Some(HumanDuration(Duration::from_millis(300))),
        ..Default::default()
    };
    let report = host.call("spin_forever", "{}", &limits).await;
    assert_eq!(report.outcome, Err(CallError::Timeout { limit: Duration::from_millis(300) }));
    assert!(report.usage.fuel > 10_000_000, "a timed-out call still reports its fuel: {}", report.usage.fuel);
    echo_still_works(&host).await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn grow_memory_hits_the_memory_limit() {
    let (host, _dir) = host_with(&["echo", "grow_memory"]).await;
    let limits = LimitOverrides { memory: Some(ByteSize(16 << 20)), ..Default::default() };
    let report = host.call("grow_memory", "{}", &limits).await;
    match report.outcome {
        Err(CallError::MemoryLimit { limit, requested }) => {
            assert_eq!(limit, ByteSize(16 << 20));
            assert!(requested > limit);
        }
        other => panic!("expected the memory limit, got {other:?}"),
    }
    assert!(report.usage.memory_peak <= 16 << 20);
    assert!(report.usage.memory_peak > 8 << 20, "it grew before it was stopped");
    echo_still_works(&host).await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn recurse_forever_overflows_its_stack() {
    let (host, _dir) = host_with(&["echo", "recurse_forever"]).await;
    let report = host.call("recurse_forever", "{}", &LimitOverrides::default()).await;
    assert_eq!(report.outcome, Err(CallError::StackOverflow));
    echo_still_works(&host).await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn huge_output_is_refused_over_the_output_limit() {
    let (host, _dir) = host_with(&["echo", "huge_output"]).await;
    let report = host.call("huge_output", r#"{"megabytes": 4}"#, &LimitOverrides::default()).await;
    // Over the limit plus the transfer slack: refused before it is copied, so its size is unknown.
    assert_eq!(report.outcome, Err(CallError::OutputTooLarge { size: None, limit: ByteSize(1 << 20) }));
    let limits = LimitOverrides { output: Some(ByteSize(8 << 20)), ..Default::default() };
    let report = host.call("huge_output", r#"{"megabytes": 4}"#, &limits).await;
    assert_eq!(report.outcome.map(|output| output.as_str().len()), Ok(4 << 20), "a raised limit lets it through");
    echo_still_works(&host).await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_panic_is_a_trap_carrying_the_guest_message() {
    let (host, _dir) = host_with(&["echo", "panics"]).await;
    let report = host.call("panics", "{}", &LimitOverrides::default()).await;
    match &report.outcome {
        Err(CallError::Trap { message }) => {
            assert!(message.contains("the panics plugin gave up on purpose"), "{message}");
            assert!(message.contains("unreachable"), "{message}");
        }
        other => panic!("expected a trap, got {other:?}"),
    }
    assert!(report.stderr.contains("panicked"), "stderr is captured: {}", report.stderr);
    echo_still_works(&host).await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn clock_spin_is_stopped_by_the_timeout() {
    let (host, _dir) = host_with(&["echo", "clock_spin"]).await;
    let limits = LimitOverrides { timeout: Some(HumanDuration(Duration::from_millis(200))), ..Default::default() };
    let report = host.call("clock_spin", "{}", &limits).await;
    assert_eq!(report.outcome, Err(CallError::Timeout { limit: Duration::from_millis(200) }));
    echo_still_works(&host).await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn sleep_forever_in_the_host_is_stopped_by_the_timeout() {
    let (host, _dir) = host_with(&["echo", "sleep_forever"]).await;
    let limits = LimitOverrides { timeout: Some(HumanDuration(Duration::from_millis(200))), ..Default::default() };
    let report = host.call("sleep_forever", "{}", &limits).await;
    assert_eq!(report.outcome, Err(CallError::Timeout { limit: Duration::from_millis(200) }));
    echo_still_works(&host).await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn every_call_gets_a_fresh_instance() {
    let (host, _dir) = host_with(&["keeps_state"]).await;
    for _ in 0..3 {
        let report = host.call("keeps_state", "{}", &LimitOverrides::default()).await;
        assert_eq!(report.outcome, Ok(ToolOutput::Text("1".to_owned())));
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn arguments_are_checked_against_the_schema_before_the_plugin_runs() {
    let (host, _dir) = host_with(&["echo"]).await;
    let cases = [
        (r#"{"text": 5}"#, "/text"),
        (r#"{}"#, "\"text\" is a required property"),
        (r#"{"text": "#, "not valid JSON"),
        (r#"[1, 2]"#, "is not of type \"object\""),
    ];
    for (arguments, expected) in cases {
        let report = host.call("echo", arguments, &LimitOverrides::default()).await;
        match &report.outcome {
            Err(CallError::InvalidArguments(message)) => assert!(message.contains(expected), "{arguments}: {message}"),
            other => panic!("{arguments}: expected invalid arguments, got {other:?}"),
        }
        assert_eq!(report.usage.fuel, 0, "{arguments}: the plugin never ran");
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn blank_arguments_mean_an_empty_object() {
    let (host, _dir) = host_with(&["keeps_state"]).await;
    let report = host.call("keeps_state", "  ", &LimitOverrides::default()).await;
    assert_eq!(report.outcome, Ok(ToolOutput::Text("1".to_owned())));
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn an_unknown_tool_suggests_a_near_name() {
    let (host, _dir) = host_with(&["echo"]).await;
    let report = host.call("ecoh", "{}", &LimitOverrides::default()).await;
    assert_eq!(
        report.outcome,
        Err(CallError::UnknownTool { name: "ecoh".to_owned(), suggestion: Some("echo".to_owned()) })
    );
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn two_hundred_concurrent_calls_mixing_good_and_bad_plugins() {
    let (host, _dir) =
        host_with(&["echo", "spin_forever", "panics", "grow_memory", "huge_output", "recurse_forever"]).await;
    let host = Arc::new(host);
    let mut calls = tokio::task::JoinSet::new();
    for i in 0..200usize {
        let host = host.clone();
        calls.spawn(async move {
            let (tool, arguments, limits) = match i % 6 {
                0..=2 => ("echo", echo_args(&format!("call {i}")), LimitOverrides::default()),
                3 => ("spin_forever", "{}".to_owned(), LimitOverrides { fuel: Some(5_000_000), ..Default::default() }),
                4 => ("panics", "{}".to_owned(), LimitOverrides::default()),
                _ => match i % 4 {
                    0 | 1 => (
                        "grow_memory",
                        "{}".to_owned(),
                        LimitOverrides { memory: Some(ByteSize(8 << 20)), ..Default::default() },
                    ),
                    2 => ("huge_output", r#"{"megabytes": 2}"#.to_owned(), LimitOverrides::default()),
                    _ => ("recurse_forever", "{}".to_owned(), LimitOverrides::default()),
                },
            };
            (i, tool, host.call(tool, &arguments, &limits).await)
        });
    }
    let mut good = 0;
    while let Some(joined) = calls.join_next().await {
        let (i, tool, report) = joined.expect("call task");
        match (tool, &report.outcome) {
            ("echo", Ok(ToolOutput::Text(text))) => {
                assert_eq!(text, &format!("call {i}"), "call {i} got another call's output");
                good += 1;
            }
            ("spin_forever", Err(CallError::OutOfFuel { .. })) => {}
            ("panics", Err(CallError::Trap { .. })) => {}
            ("grow_memory", Err(CallError::MemoryLimit { .. })) => {}
            ("huge_output", Err(CallError::OutputTooLarge { .. })) => {}
            ("recurse_forever", Err(CallError::StackOverflow)) => {}
            (tool, outcome) => panic!("call {i} to {tool}: unexpected outcome {outcome:?}"),
        }
    }
    assert_eq!(good, (0..200).filter(|i| i % 6 < 3).count());
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_plugin_gets_no_env_files_or_network_unless_granted() {
    let listener = std::net::TcpListener::bind("127.0.0.1:0").unwrap();
    listener.set_nonblocking(true).unwrap();
    let port = listener.local_addr().unwrap().port();
    let secret = tempfile::NamedTempFile::new().unwrap();
    std::fs::write(secret.path(), "the host's secret").unwrap();

    let (host, _dir) = host_with(&["snoops"]).await;
    let arguments = serde_json::json!({ "port": port, "file": secret.path() }).to_string();
    let report = host.call("snoops", &arguments, &LimitOverrides::default()).await;
    let Ok(ToolOutput::Json(found)) = &report.outcome else {
        panic!("snoops should report, got {:?}", report.outcome);
    };
    let found: serde_json::Value = serde_json::from_str(found).unwrap();
    assert_eq!(found["env"], serde_json::json!([]), "no environment variables: {found}");
    assert_eq!(found["args"], serde_json::json!([]), "no arguments: {found}");
    for denied in ["read_root", "read_file", "connect"] {
        assert!(found[denied].get("Err").is_some(), "{denied} must fail: {found}");
    }
    assert!(!found.to_string().contains("the host's secret"));
    assert_eq!(
        listener.accept().map_err(|err| err.kind()).err(),
        Some(std::io::ErrorKind::WouldBlock),
        "nothing connected to the listener"
    );
}

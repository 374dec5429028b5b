//! Plugins written in Python, JavaScript and C, built from `plugins/` by
//! `plugins/build.sh`, run through the real `toolhost` binary and the
//! library: their tools load with their schemas, answer, report bad arguments
//! and failures as the contract's typed errors, log through the host, are
//! held to the same limits as Rust plugins, and reach the network only where
//! granted (the JavaScript `webpage`, Python `pagemeta` and C `urlcheck`
//! plugins against a server on 127.0.0.1). `pagemeta` and `urlcheck` are
//! built against contract 0.2.0 (sdk/wit-http) and answer in content blocks;
//! the others stay on 0.1.0.

use crate::common;

use common::server::TestServer;
use common::{config_from, host_with, host_with_config, stderr, stdout, toolhost};
use serde_json::{Value, json};
use std::path::Path;
use std::time::Duration;
use toolhost::{ByteSize, CallError, HumanDuration, LimitOverrides, Refusal, RefusalReason, ToolOutput};

/// `toolhost --plugins plugins/dist call TOOL ARGS --json`, parsed.
fn call(tool: &str, args: Value) -> Value {
    let dir = common::bundled().display().to_string();
    let output = toolhost(Path::new("."), &["--plugins", &dir, "call", tool, &args.to_string(), "--json"]);
    let report: Value = serde_json::from_str(&stdout(&output))
        .unwrap_or_else(|err| panic!("{tool}: --json printed no JSON ({err}): {}", stderr(&output)));
    assert_eq!(output.status.code(), Some(if report["ok"] == true { 0 } else { 1 }), "{report}");
    report
}

/// The JSON document of a successful call's outcome: a contract 0.1.0
/// plugin's JSON output, or a contract 0.2.0 plugin's one JSON block (the
/// plugins with `http` in their manifest are built against 0.2.0).
fn json_outcome(outcome: &Result<ToolOutput, CallError>) -> Option<Value> {
    match outcome {
        Ok(ToolOutput::Json(text)) => serde_json::from_str(text).ok(),
        Ok(ToolOutput::Content(blocks)) => {
            blocks.iter().find_map(|block| block.content.json_value()).map(|value| value.into_owned())
        }
        _ => None,
    }
}

/// The JSON output of a successful call.
fn json_output(report: &Value) -> Value {
    assert_eq!(report["ok"], true, "{report}");
    assert_eq!(report["output"]["type"], "json", "{report}");
    serde_json::from_str(report["output"]["value"].as_str().unwrap()).expect("the output is JSON")
}

#[test]
fn every_language_example_lists_its_tools_with_schemas() {
    let dir = common::bundled().display().to_string();
    let output = toolhost(Path::new("."), &["--plugins", &dir, "tools", "--json"]);
    assert!(output.status.success(), "{}", stderr(&output));
    assert!(!stderr(&output).contains("skipped"), "every bundled plugin loads: {}", stderr(&output));
    let tools: Vec<Value> = serde_json::from_str(&stdout(&output)).unwrap();
    let expected = [
        ("convert_units", "units", "value"),
        ("list_units", "units", "dimension"),
        ("url_parse", "markup", "url"),
        ("markdown_table", "markup", "rows"),
        ("fill_template", "markup", "template"),
        ("page_links", "webpage", "url"),
        ("describe_numbers", "stats", "numbers"),
        ("linear_regression", "stats", "x"),
        ("page_meta", "pagemeta", "url"),
        ("check_url", "urlcheck", "url"),
    ];
    for (name, plugin, property) in expected {
        let tool =
            tools.iter().find(|tool| tool["name"] == name).unwrap_or_else(|| panic!("{name} is not listed: {tools:?}"));
        assert_eq!(tool["plugin"], plugin, "{tool}");
        assert_eq!(tool["input_schema"]["type"], "object", "{tool}");
        assert!(tool["input_schema"]["properties"][property].is_object(), "{name} declares `{property}`: {tool}");
        assert!(tool["description"].as_str().unwrap().len() > 40, "{name} describes itself: {tool}");
    }
}

#[test]
fn the_python_example_converts_units() {
    let out = json_output(&call("convert_units", json!({ "value": 5, "from": "km", "to": "mi" })));
    assert_eq!(out["result"], 3.10685596119);
    assert_eq!(out["text"], "5 km = 3.10685596119 mi");
    let out = json_output(&call("convert_units", json!({ "value": 212, "from": "°F", "to": "celsius" })));
    assert_eq!(out["result"], 100.0);
    assert_eq!(out["dimension"], "temperature");
    assert_eq!(out["text"], "212 °F = 100 °C");
    let out =
        json_output(&call("convert_units", json!({ "value": 1, "from": "GiB", "to": "MB", "significant_digits": 4 })));
    assert_eq!(out["result"], 1074.0);
    let out = json_output(&call("list_units", json!({ "dimension": "speed" })));
    assert_eq!(out["speed"]["km/h"]["name"], "kilometre per hour", "{out}");
    assert!(out.get("length").is_none(), "only the dimension asked for: {out}");
}

#[test]
fn the_javascript_example_parses_urls_and_renders_text() {
    let out =
        json_output(&call("url_parse", json!({ "url": "https://example.com:8080/a/b%20c?q=1&q=2&x=%C3%A9#top" })));
    assert_eq!(out["hostname"], "example.com");
    assert_eq!(out["port"], 8080);
    assert_eq!(out["path_segments"], json!(["a", "b c"]));
    assert_eq!(out["query"], json!({ "q": ["1", "2"], "x": "é" }));
    assert_eq!(out["fragment"], "top");
    let out = json_output(&call("url_parse", json!({ "url": "../up?z=1", "base": "https://e.com/a/b/c" })));
    assert_eq!(out["href"], "https://e.com/a/up?z=1");

    let report =
        call("markdown_table", json!({ "rows": [{ "name": "Du|ne", "price": 9 }, { "name": "Emma", "price": 5.5 }] }));
    assert_eq!(
        report["output"],
        json!({ "type": "text", "value": "| name | price |\n| --- | ---: |\n| Du\\|ne | 9 |\n| Emma | 5.5 |" })
    );
    let report = call(
        "fill_template",
        json!({
            "template": "Hi {{user.name}}!{{#tags}} #{{.}}{{/tags}}{{^missing}} (none missing){{/missing}}",
            "values": { "user": { "name": "Ada" }, "tags": ["math", "code"] },
        }),
    );
    assert_eq!(report["output"]["value"], "Hi Ada! #math #code (none missing)");
}

#[test]
fn the_c_example_computes_statistics() {
    let out =
        json_output(&call("describe_numbers", json!({ "numbers": [2, 4, 4, 4, 5, 5, 7, 9], "percentiles": [50, 90] })));
    assert_eq!(out["count"], 8);
    assert_eq!(out["mean"], 5);
    assert_eq!(out["std_dev"], 2);
    assert_eq!(out["median"], 4.5);
    assert_eq!(out["percentiles"], json!({ "50": 4.5, "90": 7.6 }));
    let out = json_output(&call("describe_numbers", json!({ "numbers": [7] })));
    assert_eq!(out["sample_std_dev"], Value::Null, "undefined for one number: {out}");
    let out = json_output(&call("linear_regression", json!({ "x": [1, 2, 3], "y": [3, 5, 7], "predict": [10] })));
    assert_eq!(out["slope"], 2);
    assert_eq!(out["intercept"], 1);
    assert_eq!(out["r_squared"], 1);
    assert_eq!(out["predictions"], json!([{ "x": 10, "y": 21 }]));
}

#[test]
fn bad_arguments_and_failures_come_back_as_their_kind_from_every_language() {
    let big = "x".repeat(30_000);
    let cases = [
        // Python
        (
            "convert_units",
            json!({ "value": 1, "from": "km", "to": "kg" }),
            "invalid_arguments",
            "cannot convert length (`km`) to mass (`kg`)",
        ),
        (
            "convert_units",
            json!({ "value": 1, "from": "kilometr", "to": "m" }),
            "invalid_arguments",
            "did you mean `km`",
        ),
        ("convert_units", json!({ "value": -500, "from": "C", "to": "K" }), "invalid_arguments", "below absolute zero"),
        (
            "convert_units",
            json!({ "value": 1e300, "from": "ly", "to": "nm" }),
            "tool_failed",
            "too large for 64-bit floating point",
        ),
        // The host checks the declared schema before the plugin runs.
        ("convert_units", json!({ "value": 1, "from": "km" }), "invalid_arguments", "\"to\" is a required property"),
        // JavaScript
        ("url_parse", json!({ "url": "/relative" }), "invalid_arguments", "is not an absolute URL"),
        (
            "markdown_table",
            json!({ "rows": [{ "a": 1 }], "columns": ["b"] }),
            "invalid_arguments",
            "column `b` is in none of the rows",
        ),
        (
            "fill_template",
            json!({ "template": "Hi {{user.nam}}", "values": { "user": {} } }),
            "invalid_arguments",
            "`values` has no `user.nam`",
        ),
        (
            "fill_template",
            json!({ "template": "{{#a}}x", "values": { "a": [1] } }),
            "invalid_arguments",
            "is never closed",
        ),
        (
            "fill_template",
            json!({ "template": "{{#a}}{{s}}{{/a}}", "values": { "a": [1, 2, 3, 4, 5, 6, 7, 8, 9, 10], "s": big } }),
            "tool_failed",
            "would be over 256 KiB",
        ),
        ("markdown_table", json!({ "rows": [] }), "invalid_arguments", "/rows"),
        // C
        (
            "linear_regression",
            json!({ "x": [1, 2], "y": [3, 5, 7] }),
            "invalid_arguments",
            "`x` has 2 values but `y` has 3",
        ),
        ("linear_regression", json!({ "x": [1, 1, 1], "y": [3, 5, 7] }), "tool_failed", "vertical line"),
        ("describe_numbers", json!({ "numbers": [1e308, 1e308] }), "tool_failed", "their sum overflows"),
        ("describe_numbers", json!({ "numbers": [1], "percentiles": [101] }), "invalid_arguments", "/percentiles/0"),
    ];
    for (tool, args, kind, fragment) in cases {
        let report = call(tool, args.clone());
        assert_eq!(report["error"]["kind"], kind, "{tool} {args}: {report}");
        let message = report["error"]["message"].as_str().unwrap();
        assert!(message.contains(fragment), "{tool} {args}: expected {fragment:?} in {message:?}");
    }
}

#[test]
fn every_language_logs_through_the_host() {
    let cases = [
        ("convert_units", json!({ "value": 1, "from": "m", "to": "ft" }), "converted", ("from", "m")),
        ("url_parse", json!({ "url": "https://example.com" }), "called", ("tool", "url_parse")),
        ("describe_numbers", json!({ "numbers": [1, 2, 3] }), "described numbers", ("count", "3")),
    ];
    for (tool, args, message, (key, value)) in cases {
        let report = call(tool, args);
        let logs = report["logs"].as_array().unwrap();
        assert!(
            logs.iter().any(|log| log["level"] == "debug"
                && log["message"] == message
                && log["fields"][0] == json!([key, value])),
            "{tool} logs {message:?} with {key}={value}: {logs:?}"
        );
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_python_loop_runs_out_of_fuel_or_time_and_the_host_carries_on() {
    let (host, _dir) = host_with(&["py_misbehaves", "units"]).await;
    assert!(host.problems().is_empty(), "{:?}", host.problems());

    let limits = LimitOverrides { fuel: Some(100_000_000), ..Default::default() };
    let report = host.call("py_spin_forever", "{}", &limits).await;
    assert_eq!(report.outcome, Err(CallError::OutOfFuel { limit: 100_000_000 }));
    assert!(report.logs.iter().any(|log| log.message == "misbehaving on purpose"), "it logged before spinning");

    let limits = LimitOverrides {
        fuel: Some(u64::MAX / 2),
        timeout: Some(HumanDuration(Duration::from_millis(500))),
        ..Default::default()
    };
    let report = host.call("py_spin_forever", "{}", &limits).await;
    assert_eq!(report.outcome, Err(CallError::Timeout { limit: Duration::from_millis(500) }));

    let report = host.call("convert_units", r#"{"value":1,"from":"in","to":"cm"}"#, &LimitOverrides::default()).await;
    let Ok(ToolOutput::Json(text)) = report.outcome else { panic!("{:?}", report.outcome) };
    assert_eq!(serde_json::from_str::<Value>(&text).unwrap()["result"], 2.54);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn python_memory_growth_and_uncaught_exceptions_are_typed() {
    let (host, _dir) = host_with(&["py_misbehaves", "units"]).await;

    let limits = LimitOverrides { memory: Some(ByteSize(48 << 20)), ..Default::default() };
    let report = host.call("py_grow_memory", "{}", &limits).await;
    match report.outcome {
        Err(CallError::MemoryLimit { limit, requested }) => {
            assert_eq!(limit, ByteSize(48 << 20));
            assert!(requested > limit);
        }
        other => panic!("expected the memory limit, got {other:?}"),
    }
    assert!(report.usage.memory_peak <= 48 << 20);

    let report = host.call("py_raises", "{}", &LimitOverrides::default()).await;
    match &report.outcome {
        Err(CallError::Trap { message }) => {
            assert!(
                message
                    .contains("the plugin wrote: ValueError: py_raises gave up on purpose (File \"/0/app.py\", line ")
                    && message.ends_with(", in call_tool)"),
                "the exception and its line, without the runtime's lines: {message}"
            )
        }
        other => panic!("expected a trap, got {other:?}"),
    }
    assert!(report.stderr.contains("Traceback"), "the whole traceback is captured: {}", report.stderr);

    let report = host.call("convert_units", r#"{"value":1,"from":"lb","to":"g"}"#, &LimitOverrides::default()).await;
    assert!(report.outcome.is_ok(), "{:?}", report.outcome);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn python_and_javascript_calls_fit_the_default_limits() {
    let (host, _dir) = host_with(&["units", "markup", "stats"]).await;
    let defaults = toolhost::Limits::default();
    for (tool, args) in [
        ("convert_units", r#"{"value":1,"from":"mi","to":"km"}"#),
        ("fill_template", r#"{"template":"{{a}}","values":{"a":"b"}}"#),
        ("describe_numbers", r#"{"numbers":[1,2,3]}"#),
    ] {
        let report = host.call(tool, args, &LimitOverrides::default()).await;
        assert!(report.outcome.is_ok(), "{tool}: {:?}", report.outcome);
        // Far inside the defaults, so ordinary tools need no per-plugin config.
        assert!(report.usage.fuel < defaults.fuel / 100, "{tool}: fuel {}", report.usage.fuel);
        assert!(report.usage.memory_peak < defaults.memory.bytes() / 4, "{tool}: memory {}", report.usage.memory_peak);
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_javascript_plugin_fetches_a_granted_host_with_fetch() {
    let server = TestServer::start();
    let grant = format!("[plugins.webpage]\nhttp = [\"{}\"]\n", server.origin());
    let (host, _dir) = host_with_config(&["webpage"], config_from(&grant)).await;
    let args = json!({ "url": server.url("/page") }).to_string();
    let report = host.call("page_links", &args, &LimitOverrides::default()).await;
    let Ok(ToolOutput::Json(text)) = &report.outcome else {
        panic!("{:?} (refused: {:?})", report.outcome, report.refused)
    };
    let page: Value = serde_json::from_str(text).unwrap();
    assert_eq!(page["status"], 200);
    assert_eq!(page["title"], "Links & more");
    assert_eq!(
        page["links"],
        json!([
            { "text": "Say hello", "href": server.url("/hello") },
            { "text": "Chain", "href": server.url("/chain/0") },
            { "text": "Elsewhere", "href": "https://example.org/elsewhere" },
        ]),
        "absolute, without fragments, mailto: or duplicates"
    );
    assert_eq!(report.usage.http_requests, 1);
    assert!(report.refused.is_empty(), "{:?}", report.refused);
    assert!(report.logs.iter().any(|log| log.message == "read a page"), "{:?}", report.logs);
    assert_eq!(server.seen(), ["/page"], "it did not follow the links");

    let args = json!({ "url": server.url("/missing") }).to_string();
    let report = host.call("page_links", &args, &LimitOverrides::default()).await;
    assert_eq!(
        report.outcome,
        Err(CallError::ToolFailed(format!("{} answered 404 Not Found", server.url("/missing"))))
    );
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_javascript_plugin_reaches_no_host_it_was_not_granted() {
    let server = TestServer::start();
    let other = TestServer::start();
    for config in [String::new(), format!("[plugins.webpage]\nhttp = [\"{}\"]\n", other.origin())] {
        let (host, _dir) = host_with_config(&["webpage"], config_from(&config)).await;
        let args = json!({ "url": server.url("/page") }).to_string();
        let report = host.call("page_links", &args, &LimitOverrides::default()).await;
        match &report.outcome {
            Err(CallError::ToolFailed(message)) => {
                assert!(message.contains(&format!("could not fetch {}", server.url("/page"))), "{message}");
                assert!(message.contains("[plugins.webpage]"), "says where to grant it: {message}");
            }
            other => panic!("expected a failure, got {other:?}"),
        }
        assert_eq!(
            report.refused,
            [Refusal { target: server.origin(), reason: RefusalReason::NotGranted }],
            "{config}"
        );
        assert_eq!(report.usage.http_requests, 0);
    }
    assert!(server.seen().is_empty() && other.seen().is_empty(), "nothing was sent");
}

/// A call of `tool` in `plugin` (loaded alone, under `config`) with `{"url": URL}`.
async fn fetch_with(plugin: &str, tool: &str, config: &str, url: &str) -> toolhost::CallReport {
    let (host, _dir) = host_with_config(&[plugin], config_from(config)).await;
    // Its manifest asks for `https://*`, which is never all granted here: a notice, not a failure.
    assert!(
        host.problems().iter().all(|problem| problem.kind == toolhost::ProblemKind::Grant),
        "{:?}",
        host.problems()
    );
    host.call(tool, &json!({ "url": url }).to_string(), &LimitOverrides::default()).await
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_python_plugin_fetches_a_granted_host_and_is_refused_another() {
    let server = TestServer::start();
    let other = TestServer::start();
    let grant = format!("[plugins.pagemeta]\nhttp = [\"{}\"]\n", server.origin());
    let report = fetch_with("pagemeta", "page_meta", &grant, &server.url("/page")).await;
    let Some(page) = json_outcome(&report.outcome) else {
        panic!("{:?} (refused: {:?}, stderr: {})", report.outcome, report.refused, report.stderr)
    };
    assert_eq!(
        page,
        json!({
            "status": 200, "content_type": "text/plain", "bytes": 257, "truncated": false,
            "title": "Links & more", "words": 10,
        })
    );
    assert_eq!(report.usage.http_requests, 1);
    assert!(report.refused.is_empty(), "{:?}", report.refused);
    assert!(report.logs.iter().any(|log| log.message == "read a page"), "{:?}", report.logs);
    assert_eq!(server.seen(), ["/page"]);

    let report = fetch_with("pagemeta", "page_meta", &grant, &server.url("/missing")).await;
    assert_eq!(report.outcome, Err(CallError::ToolFailed(format!("{} answered 404", server.url("/missing")))));

    for config in [String::new(), format!("[plugins.pagemeta]\nhttp = [\"{}\"]\n", other.origin())] {
        let report = fetch_with("pagemeta", "page_meta", &config, &server.url("/page")).await;
        assert_eq!(
            report.outcome,
            Err(CallError::ToolFailed(format!(
                "could not fetch {}: request refused by the host: {} is not granted to this plugin \
                 (grant it under [plugins.pagemeta] http)",
                server.url("/page"),
                server.origin()
            ))),
            "{config}"
        );
        assert_eq!(report.refused, [Refusal { target: server.origin(), reason: RefusalReason::NotGranted }]);
        assert_eq!(report.usage.http_requests, 0);
    }
    assert_eq!(server.seen(), ["/page", "/missing"], "nothing more was sent");
    assert!(other.seen().is_empty());
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_c_plugin_fetches_a_granted_host_and_is_refused_another() {
    let server = TestServer::start();
    let other = TestServer::start();
    let grant = format!("[plugins.urlcheck]\nhttp = [\"{}\"]\n", server.origin());
    let report = fetch_with("urlcheck", "check_url", &grant, &server.url("/hello")).await;
    let Some(checked) = json_outcome(&report.outcome) else {
        panic!("{:?} (refused: {:?}, stderr: {})", report.outcome, report.refused, report.stderr)
    };
    assert_eq!(
        checked,
        json!({
            "url": server.url("/hello"), "status": 200, "content_type": "text/plain", "bytes": 26,
            "truncated": false, "starts_with": "hello from the test server",
        })
    );
    assert_eq!(report.usage.http_requests, 1);
    assert!(report.logs.iter().any(|log| log.message == "checked a URL"), "{:?}", report.logs);

    // A 404 is an answer, not a failure, for a tool that checks URLs.
    let report = fetch_with("urlcheck", "check_url", &grant, &server.url("/missing")).await;
    let Some(checked) = json_outcome(&report.outcome) else { panic!("{:?}", report.outcome) };
    assert_eq!(checked["status"], 404);

    let report = fetch_with("urlcheck", "check_url", &grant, "ftp://example.com/x").await;
    assert!(
        matches!(&report.outcome, Err(CallError::InvalidArguments(m)) if m.contains("is not an http:// or https:// URL")),
        "{:?}",
        report.outcome
    );

    for config in [String::new(), format!("[plugins.urlcheck]\nhttp = [\"{}\"]\n", other.origin())] {
        let report = fetch_with("urlcheck", "check_url", &config, &server.url("/hello")).await;
        assert_eq!(
            report.outcome,
            Err(CallError::ToolFailed(format!(
                "could not fetch {}: request refused by the host: {} is not granted to this plugin \
                 (grant it under [plugins.urlcheck] http)",
                server.url("/hello"),
                server.origin()
            ))),
            "{config}"
        );
        assert_eq!(report.refused, [Refusal { target: server.origin(), reason: RefusalReason::NotGranted }]);
        assert_eq!(report.usage.http_requests, 0);
    }
    assert_eq!(server.seen(), ["/hello", "/missing"], "nothing more was sent");
    assert!(other.seen().is_empty());
}

#[test]
fn the_tools_text_shows_ranges_and_defaults_and_counts_in_words() {
    let output = toolhost(Path::new("."), &["--plugins", &common::bundled().display().to_string(), "tools"]);
    assert!(output.status.success(), "{}", stderr(&output));
    let text = stdout(&output);
    assert!(
        text.contains(
            "    · preview: integer, 0 to 1000 — How many characters of the body to show.\n        default: 80\n"
        ),
        "{text}"
    );
    assert!(text.lines().all(|line| line.chars().count() <= 100 || !line.trim().contains(' ')), "wrapped: {text}");
    assert!(stderr(&output).lines().any(|line| line.ends_with(" plugins") && line.contains(" tools from ")));

    let one = common::plugin_dir(&["urlcheck"]);
    let output = toolhost(Path::new("."), &["--plugins", &one.path().display().to_string(), "tools"]);
    assert!(stderr(&output).lines().any(|line| line == "1 tool from 1 plugin"), "{}", stderr(&output));
}

#[test]
fn call_prints_json_in_the_plugins_key_order() {
    let dir = common::bundled().display().to_string();
    let args = r#"{"numbers":[2,4,4,4,5,5,7,9]}"#;
    let output = toolhost(Path::new("."), &["--plugins", &dir, "call", "describe_numbers", args]);
    assert!(output.status.success(), "{}", stderr(&output));
    let printed: serde_json::Map<String, Value> = serde_json::from_str(&stdout(&output)).unwrap();
    let report = call("describe_numbers", serde_json::from_str(args).unwrap());
    let raw: serde_json::Map<String, Value> =
        serde_json::from_str(report["output"]["value"].as_str().unwrap()).unwrap();
    let keys = |map: &serde_json::Map<String, Value>| map.keys().cloned().collect::<Vec<_>>();
    assert_eq!(keys(&printed), keys(&raw), "{}", stdout(&output));
    let mut sorted = keys(&raw);
    sorted.sort();
    assert_ne!(keys(&raw), sorted, "the plugin's order is not the sorted one, so this test can fail");
}

#[test]
fn verbose_logs_into_a_pipe_have_no_colour_codes() {
    let dir = common::bundled().display().to_string();
    let args = r#"{"value":1,"from":"m","to":"ft"}"#;
    let output = toolhost(Path::new("."), &["--plugins", &dir, "-vv", "call", "convert_units", args]);
    assert!(output.status.success(), "{}", stderr(&output));
    let logs = stderr(&output);
    assert!(logs.contains("converted"), "{logs}");
    assert!(!logs.contains('\u{1b}'), "{logs:?}");
}

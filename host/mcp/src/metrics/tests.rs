use super::*;
use toolhost_runtime::outcome::{ToolOutput, Usage};

#[test]
fn loading_answers_mcp_but_is_not_ready_and_a_shutdown_during_it_stays_one() {
    let readiness = Readiness::loading("loading plugins");
    assert_eq!(readiness.refusal(), None, "/mcp answers while plugins load");
    assert_eq!(readiness.reason().as_deref(), Some("loading plugins"));
    readiness.set_loading("loading plugins: 1 of 2 plugins ready");
    assert_eq!(readiness.reason().as_deref(), Some("loading plugins: 1 of 2 plugins ready"));
    assert!(readiness.finish_loading());
    assert!(readiness.is_ready());
    readiness.set_not_ready("shutting down");
    assert_eq!(readiness.refusal().as_deref(), Some("shutting down"));

    let stopped = Readiness::loading("loading plugins");
    stopped.set_not_ready("shutting down");
    assert!(!stopped.finish_loading(), "a load that ends after SIGTERM does not reopen the server");
    stopped.set_loading("loading plugins: 2 of 2 plugins ready");
    assert_eq!(stopped.refusal().as_deref(), Some("shutting down"));
    assert_eq!(Readiness::not_ready("starting").refusal().as_deref(), Some("starting"));
}

fn report(outcome: Result<ToolOutput, CallError>, fuel: u64) -> CallReport {
    CallReport {
        tool: "t".to_owned(),
        plugin: None,
        outcome,
        usage: Usage { fuel, ..Usage::default() },
        stdout: String::new(),
        stderr: String::new(),
        logs: Vec::new(),
        refused: Vec::new(),
        effects: Default::default(),
        receipt: None,
        cached: None,
    }
}

fn snapshot() -> Snapshot {
    Snapshot {
        ready: true,
        sessions: 2,
        catalog_generation: 3,
        tools: 4,
        plugins: 1,
        load_problems: 0,
        cache: Default::default(),
    }
}

fn value(text: &str, series: &str) -> f64 {
    let line = text
        .lines()
        .find(|line| line.strip_prefix(series).is_some_and(|rest| rest.starts_with(' ')))
        .unwrap_or_else(|| panic!("no `{series}` in:\n{text}"));
    line[series.len() + 1..].parse().unwrap()
}

#[test]
fn escapes_backslashes_quotes_and_line_feeds() {
    for (raw, escaped) in [
        ("plain", "plain"),
        (r#"a"b"#, r#"a\"b"#),
        (r"a\b", r"a\\b"),
        ("a\nb", r"a\nb"),
        ("\\\"\n", r#"\\\"\n"#),
        ("é}{=,", "é}{=,"),
    ] {
        assert_eq!(escape(raw), escaped, "{raw:?}");
    }
}

#[test]
fn counts_calls_by_outcome_and_fuel_by_tool() {
    let metrics = Metrics::default();
    metrics.record("sha256", "hash", &report(Ok(ToolOutput::Text("x".into())), 100), Duration::from_micros(7));
    metrics.record("sha256", "hash", &report(Ok(ToolOutput::Text("x".into())), 50), Duration::from_millis(3));
    let failed = report(Err(CallError::InvalidArguments("no".into())), 0);
    metrics.record("sha256", "hash", &failed, Duration::from_secs(100));
    metrics.record_cancelled("spin", "spin_forever", Duration::from_millis(300));
    metrics.record_unknown_tool();
    let text = metrics.render(&snapshot());
    let labels = r#"tool="sha256",plugin="hash""#;
    assert_eq!(value(&text, &format!("toolhost_tool_calls_total{{{labels},outcome=\"ok\"}}")), 2.0);
    assert_eq!(value(&text, &format!("toolhost_tool_calls_total{{{labels},outcome=\"invalid_arguments\"}}")), 1.0);
    assert!(!text.contains(&format!("{labels},outcome=\"timeout\"")), "zero outcomes other than ok are left out");
    assert_eq!(value(&text, r#"toolhost_tool_calls_total{tool="spin",plugin="spin_forever",outcome="ok"}"#), 0.0);
    assert_eq!(
        value(&text, r#"toolhost_tool_calls_total{tool="spin",plugin="spin_forever",outcome="cancelled"}"#),
        1.0
    );
    assert_eq!(value(&text, &format!("toolhost_tool_fuel_consumed_total{{{labels}}}")), 150.0);
    assert_eq!(value(&text, "toolhost_unknown_tool_calls_total"), 1.0);
    assert_eq!(value(&text, "toolhost_mcp_sessions"), 2.0);
    assert_eq!(value(&text, "toolhost_catalog_generation"), 3.0);
    assert_eq!(value(&text, "toolhost_tools"), 4.0);
    assert_eq!(value(&text, "toolhost_ready"), 1.0);
    assert_eq!(value(&text, &format!("toolhost_build_info{{version=\"{}\"}}", env!("CARGO_PKG_VERSION"))), 1.0);
}

#[test]
fn counts_results_given_again_from_the_cache() {
    let metrics = Metrics::default();
    let mut cached = report(Ok(ToolOutput::Text("x".into())), 0);
    metrics.record("sha256", "hash", &cached, Duration::from_micros(3));
    cached.cached = Some(Duration::from_secs(2));
    metrics.record("sha256", "hash", &cached, Duration::from_micros(3));
    let mut at = snapshot();
    at.cache = toolhost_catalog::CacheStats { hits: 1, misses: 1, entries: 1, bytes: 70 };
    let text = metrics.render(&at);
    assert_eq!(value(&text, r#"toolhost_tool_cache_hits_total{tool="sha256",plugin="hash"}"#), 1.0);
    assert_eq!(value(&text, r#"toolhost_tool_calls_total{tool="sha256",plugin="hash",outcome="ok"}"#), 2.0);
    assert_eq!(value(&text, r#"toolhost_result_cache_lookups_total{result="hit"}"#), 1.0);
    assert_eq!(value(&text, "toolhost_result_cache_bytes"), 70.0);
}

#[test]
fn a_call_dropped_before_its_result_counts_as_cancelled() {
    let metrics = Metrics::default();
    let finished = metrics.start_call("t", "p");
    let dropped = metrics.start_call("t", "p");
    assert_eq!(metrics.active_calls(), 2);
    finished.finish(&report(Ok(ToolOutput::Text(String::new())), 3));
    drop(dropped);
    metrics.start_call("gone", "p").unknown_tool();
    assert_eq!(metrics.active_calls(), 0);
    let text = metrics.render(&snapshot());
    assert_eq!(value(&text, r#"toolhost_tool_calls_total{tool="t",plugin="p",outcome="ok"}"#), 1.0);
    assert_eq!(value(&text, r#"toolhost_tool_calls_total{tool="t",plugin="p",outcome="cancelled"}"#), 1.0);
    assert_eq!(value(&text, r#"toolhost_tool_fuel_consumed_total{tool="t",plugin="p"}"#), 3.0);
    assert!(!text.contains(r#"tool="gone""#), "{text}");
    assert_eq!(value(&text, "toolhost_unknown_tool_calls_total"), 1.0);
}

#[test]
fn histogram_buckets_are_cumulative_and_end_at_the_count() {
    let metrics = Metrics::default();
    let ok = report(Ok(ToolOutput::Text(String::new())), 0);
    for took in [
        Duration::from_micros(10),
        Duration::from_micros(11),
        Duration::from_millis(3),
        Duration::from_secs(60),
        Duration::from_secs(61),
    ] {
        metrics.record("t", "p", &ok, took);
    }
    let text = metrics.render(&snapshot());
    let buckets: Vec<(String, f64)> = text
        .lines()
        .filter_map(|line| line.strip_prefix("toolhost_tool_call_duration_seconds_bucket{"))
        .map(|rest| {
            let le = rest.split("le=\"").nth(1).unwrap().split('"').next().unwrap().to_owned();
            (le, rest.rsplit(' ').next().unwrap().parse().unwrap())
        })
        .collect();
    assert_eq!(buckets.len(), BUCKETS_US.len() + 1);
    assert_eq!(buckets.first().unwrap(), &("0.00001".to_owned(), 1.0), "le is inclusive");
    assert_eq!(buckets[1], ("0.000025".to_owned(), 2.0));
    assert!(buckets.windows(2).all(|pair| pair[0].1 <= pair[1].1), "cumulative: {buckets:?}");
    let at = |le: &str| buckets.iter().find(|(bound, _)| bound == le).unwrap().1;
    assert_eq!(at("0.0025"), 2.0);
    assert_eq!(at("0.005"), 3.0);
    assert_eq!(at("60"), 4.0);
    assert_eq!(at("+Inf"), 5.0);
    let labels = r#"tool="t",plugin="p""#;
    assert_eq!(value(&text, &format!("toolhost_tool_call_duration_seconds_count{{{labels}}}")), 5.0);
    let sum = value(&text, &format!("toolhost_tool_call_duration_seconds_sum{{{labels}}}"));
    assert!((sum - 121.003021).abs() < 1e-9, "{sum}");
}

#[test]
fn every_series_belongs_to_a_declared_family() {
    let metrics = Metrics::default();
    metrics.record("t", "we\"ird\\\nname", &report(Ok(ToolOutput::Text(String::new())), 1), Duration::ZERO);
    metrics.record_http(Endpoint::Mcp, 200);
    let text = metrics.render(&snapshot());
    let mut declared = Vec::new();
    for line in text.lines() {
        if let Some(rest) = line.strip_prefix("# TYPE ") {
            declared.push(rest.split(' ').next().unwrap().to_owned());
        } else if !line.starts_with("# HELP ") {
            let name = line.split(['{', ' ']).next().unwrap();
            let family = ["_bucket", "_sum", "_count"]
                .iter()
                .find_map(|suffix| name.strip_suffix(suffix).filter(|base| declared.iter().any(|d| d == base)))
                .unwrap_or(name);
            assert!(declared.iter().any(|d| d == family), "`{line}` has no # TYPE before it");
        }
    }
    assert!(text.contains(r#"plugin="we\"ird\\\nname""#), "{text}");
    assert_eq!(text.lines().filter(|line| line.contains("we\\\"ird")).count(), 27, "one line per series");
    assert_eq!(value(&text, r#"toolhost_http_requests_total{endpoint="/mcp",code="200"}"#), 1.0);
}

//! Property tests (proptest) for the parsers that take outside input: the
//! config file, plugin manifests, grants (host patterns, folders, variable
//! names), sizes and durations, registry references, docker configs and
//! `toolhost.lock`, tool schemas and tool arguments checked
//! against them. Whatever the input, they return a value or an error, never
//! panic. (SSE framing has its own in `agent/model/sse.rs`, beside the
//! private function it exercises.) A few hundred cases each, so they stay fast.

use crate::config::Config;
use crate::grants::Manifest;
use crate::grants::env::EnvName;
use crate::grants::files::{DirGrant, GuestDir};
use crate::grants::network::HostPattern;
use crate::runtime::limits::{ByteSize, HumanDuration, Oversized};
use proptest::prelude::*;
use serde_json::Value;

fn config() -> ProptestConfig {
    ProptestConfig { cases: 256, failure_persistence: None, ..ProptestConfig::default() }
}

/// Text that looks like TOML often enough to get past the tokenizer.
fn tomlish() -> impl Strategy<Value = String> {
    let key = prop_oneof![
        Just("plugins_dir".to_owned()),
        Just("cache_dir".to_owned()),
        Just("max_concurrent_calls".to_owned()),
        Just("fuel".to_owned()),
        Just("memory".to_owned()),
        Just("timeout".to_owned()),
        Just("output".to_owned()),
        Just("http".to_owned()),
        Just("dirs".to_owned()),
        Just("env".to_owned()),
        Just("secrets".to_owned()),
        Just("sockets".to_owned()),
        Just("http_oversized".to_owned()),
        "[a-z_]{1,12}",
    ];
    let value = prop_oneof![
        any::<i64>().prop_map(|n| n.to_string()),
        any::<String>().prop_map(|s| format!("{s:?}")),
        "[ -~]{0,30}".prop_map(|s| format!("\"{s}\"")),
        prop::collection::vec("[ -~]{0,20}", 0..4).prop_map(|items| format!("{items:?}")),
        Just("true".to_owned()),
        Just("{ a = 1 }".to_owned()),
    ];
    let table = prop_oneof![
        Just(String::new()),
        Just("[limits]\n".to_owned()),
        "[a-z_]{1,8}".prop_map(|name| format!("[plugins.{name}]\n")),
        "[a-z_]{1,8}".prop_map(|name| format!("[plugins.{name}.limits]\n")),
        Just("[model]\n".to_owned()),
        Just("[approvals]\n".to_owned()),
        "[ -~]{0,20}".prop_map(|name| format!("[{name}]\n")),
    ];
    prop::collection::vec((table, key, value), 0..6)
        .prop_map(|lines| lines.into_iter().map(|(table, key, value)| format!("{table}{key} = {value}\n")).collect())
}

/// Any JSON value, a few levels deep.
fn json() -> impl Strategy<Value = Value> {
    let leaf = prop_oneof![
        Just(Value::Null),
        any::<bool>().prop_map(Value::Bool),
        any::<i64>().prop_map(Value::from),
        any::<f64>().prop_map(Value::from),
        any::<String>().prop_map(Value::String),
        "a{0,40}!?".prop_map(Value::String),
    ];
    leaf.prop_recursive(4, 64, 8, |inner| {
        prop_oneof![
            prop::collection::vec(inner.clone(), 0..8).prop_map(Value::Array),
            prop::collection::btree_map("[a-z$]{0,6}", inner, 0..8)
                .prop_map(|map| Value::Object(map.into_iter().collect())),
        ]
    })
}

proptest! {
    #![proptest_config(config())]

    #[test]
    fn config_parse_never_panics(text in any::<String>()) {
        let _ = Config::parse(&text);
    }

    #[test]
    fn config_parse_never_panics_on_tomlish_text(text in tomlish()) {
        let _ = Config::parse(&text);
    }

    #[test]
    fn manifest_parse_never_panics(text in any::<String>(), tomlish in tomlish()) {
        let _ = Manifest::parse(&text);
        let _ = Manifest::parse(&tomlish);
    }

    #[test]
    fn grant_parsers_never_panic(text in any::<String>(), ascii in "[ -~]{0,40}") {
        for text in [&text, &ascii] {
            let _ = text.parse::<HostPattern>();
            let _ = text.parse::<DirGrant>();
            let _ = text.parse::<GuestDir>();
            let _ = text.parse::<EnvName>();
        }
    }

    #[test]
    fn host_patterns_that_look_like_urls_never_panic(
        scheme in "(https?|ftp|)",
        host in "(\\*|\\*\\.)?[a-z0-9.\\[\\]:-]{0,30}",
        port in "(:[0-9*]{0,7})?",
        rest in "[ -~]{0,8}",
    ) {
        let _ = format!("{scheme}://{host}{port}{rest}").parse::<HostPattern>();
        let _ = format!("{host}{port}").parse::<HostPattern>();
    }

    #[test]
    fn registry_parsers_never_panic(
        text in any::<String>(),
        refish in "[a-zA-Z0-9.:/@_\\[\\]-]{0,40}",
        hex in "[0-9a-fA-F]{0,70}",
    ) {
        let path = std::path::Path::new("config.json");
        for text in [text.clone(), refish.clone(), format!("{refish}@sha256:{hex}"), format!("{refish}:{hex}")] {
            let _ = text.parse::<crate::oci::Source>();
            let _ = crate::oci::reference::check_plugin_name(&text);
            let _ = crate::oci::reference::check_digest(&text);
            let _ = crate::oci::reference::is_loopback(&text);
            let _ = crate::oci::credentials::parse_docker_config(&text, path, &refish);
            let _ = crate::oci::store::Lock::parse(&text, path);
        }
        let auths = format!(r#"{{"auths": {{"{refish}": {{"auth": "{hex}"}}}}}}"#);
        let _ = crate::oci::credentials::parse_docker_config(&auths, path, &refish);
    }

    #[test]
    fn size_and_duration_parsers_never_panic(text in any::<String>(), number in any::<u64>(), unit in "[a-zA-Z]{0,4}") {
        for text in [text, format!("{number}{unit}"), format!("{number}.{number} {unit}")] {
            let _ = text.parse::<ByteSize>();
            let _ = text.parse::<HumanDuration>();
            let _ = text.parse::<Oversized>();
        }
    }

    #[test]
    fn schema_checks_never_panic(schema in json(), text in any::<String>()) {
        let _ = crate::plugin::check_schema("t", &schema.to_string());
        let _ = crate::plugin::check_schema("t", &text);
        let mut object = serde_json::json!({"type": "object"});
        object["properties"] = schema;
        let _ = crate::plugin::check_schema("t", &object.to_string());
    }

    #[test]
    fn tool_arguments_are_checked_against_schemas_without_panicking(arguments in json()) {
        for validator in &*VALIDATORS {
            for err in validator.iter_errors(&arguments).take(3) {
                let _ = (err.to_string(), err.instance_path().as_str().to_owned());
            }
        }
    }
}

/// Schemas like the ones plugins declare, compiled once.
static VALIDATORS: std::sync::LazyLock<Vec<jsonschema::Validator>> = std::sync::LazyLock::new(|| {
    [
        r#"{"type":"object","properties":{"text":{"type":"string","maxLength":5}},"required":["text"]}"#,
        r#"{"type":"object","properties":{"word":{"type":"string","pattern":"^(a+)+$"}},"additionalProperties":false}"#,
        r##"{"type":"object","properties":{"n":{"type":"integer","minimum":0,"maximum":10},
            "kind":{"enum":["a","b"]},"items":{"type":"array","items":{"$ref":"#/$defs/item"}}},
            "$defs":{"item":{"oneOf":[{"type":"string"},{"type":"object","required":["x"]}]}}}"##,
        r#"{"type":"object","patternProperties":{"^[a-z]+$":{"type":"number"}},"propertyNames":{"maxLength":3}}"#,
    ]
    .iter()
    .map(|text| crate::plugin::check_schema("t", text).expect("a valid schema").1)
    .collect()
});

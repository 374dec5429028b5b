use super::*;

#[test]
fn derives_the_names_wassette_gives_functions() {
    // As Wassette 0.8's component2json joins an export's interface and function.
    let cases = [
        ("local:time-server/time#get-current-time", "local_time-server_time_get-current-time"),
        ("acme:inventory/catalog@1.0.0#get-item", "acme_inventory_catalog_1_0_0_get-item"),
        ("get-weather", "get-weather"),
        ("Acme:Shop/Web@2.0.0-rc.1#fetch", "acme_shop_web_2_0_0-rc_1_fetch"),
        ("wasi:http/types#request", "wasi_http_types_request"),
    ];
    for (path, expected) in cases {
        assert_eq!(wassette_name(path), expected, "{path}");
    }
}

#[test]
fn accepts_tool_names() {
    for name in ["a", "sha256", "json_query", "regex-find", "A1", &"x".repeat(64)] {
        assert!(check_name(name).is_ok(), "{name}");
    }
}

#[test]
fn rejects_tool_names() {
    for name in ["", "has space", "dot.ted", "ünï", "semi;colon", &"x".repeat(65)] {
        let err = check_name(name).unwrap_err();
        assert!(err.contains("1 to 64 characters"), "{name}: {err}");
    }
}

#[test]
fn accepts_object_schemas() {
    let (_, validator) =
        check_schema("t", r#"{"type":"object","properties":{"text":{"type":"string"}},"required":["text"]}"#).unwrap();
    assert!(validator.is_valid(&serde_json::json!({"text": "hi"})));
    assert!(!validator.is_valid(&serde_json::json!({"text": 5})));
    let (_, validator) = check_schema(
        "t",
        r##"{"type":"object","properties":{"w":{"$ref":"#/$defs/w"}},"$defs":{"w":{"pattern":"^(a+)+$"}}}"##,
    )
    .unwrap();
    let hostile = serde_json::json!({"w": format!("{}!", "a".repeat(100))});
    assert!(!validator.is_valid(&hostile), "local `$ref`s work, and a nested quantifier runs in linear time");
}

#[test]
fn rejects_bad_schemas() {
    let cases = [
        ("not json", "is not JSON"),
        ("[1]", "must be a JSON object"),
        (r#"{"type":"string"}"#, "must describe an object"),
        (r#"{"type":"object","properties":{"a":{"type":"nonsense"}}}"#, "not valid JSON Schema"),
        (r#"{"type":"object","properties":{"a":{"$ref":"https://x.test/a.json"}}}"#, "remote `$ref`s are not allowed"),
        (r#"{"type":"object","properties":{"a":{"$ref":"other.json"}}}"#, "remote `$ref`s are not allowed"),
        (r#"{"type":"object","properties":{"a":{"pattern":"(a)\\1"}}}"#, "without lookaround"),
        (r#"{"type":"object","properties":{"a":{"pattern":"(?<=a)b"}}}"#, "without lookaround"),
    ];
    for (text, expected) in cases {
        let err = check_schema("t", text).unwrap_err();
        assert!(err.contains(expected), "{text}: {err}");
    }
}

#[test]
fn a_pulled_signer_is_named_only_for_the_bytes_the_lock_names() {
    let dir = tempfile::tempdir().unwrap();
    let wasm = dir.path().join("hash.wasm");
    assert_eq!(pulled_signer(&wasm, "hash", "ab"), None, "no lock");
    let lock = "version = 1\n[plugins.hash]\nsource = \"r/hash:1\"\ndigest = \"sha256:00\"\nwasm = \"sha256:ab\"\n\
                    [plugins.hash.signer]\nkey = \"k.pub\"\nfingerprint = \"sha256:ff\"\n";
    std::fs::write(dir.path().join("toolhost.lock"), lock).unwrap();
    let signer = pulled_signer(&wasm, "hash", "ab").unwrap();
    assert_eq!(
        (signer.key.as_str(), signer.fingerprint.as_str(), signer.source.as_str()),
        ("k.pub", "sha256:ff", "r/hash:1")
    );
    assert_eq!(pulled_signer(&wasm, "hash", "cd"), None, "replaced since the pull");
    assert_eq!(pulled_signer(&wasm, "text", "ab"), None, "another plugin");
    std::fs::write(dir.path().join("toolhost.lock"), "not toml [").unwrap();
    assert_eq!(pulled_signer(&wasm, "hash", "ab"), None, "an unreadable lock names no one");
}

//! Components of plain typed functions (not toolhost's contract) as tools,
//! through the real binary: the schemas derived from the WIT types, every
//! type's round trip, `result` errors, traps and limits, the functions and
//! components that cannot be tools, and `serve` with the official Python
//! MCP client (output schemas and structured content).

use crate::common;

use common::{plugin, plugin_dir, stderr, stdout, toolhost};
use serde_json::{Value, json};
use std::path::Path;

/// A folder holding `typed_shop` (plugins/testing/typed_shop, wit/shop.wit).
fn shop() -> tempfile::TempDir {
    plugin_dir(&["typed_shop"])
}

/// `toolhost call TOOL ARGS --json` in the shop: (exit code, the JSON report).
fn call(dir: &Path, tool: &str, arguments: &str, extra: &[&str]) -> (i32, Value) {
    common::call_json(dir, tool, arguments, extra, &[])
}

fn output_of(report: &Value) -> Value {
    assert_eq!(report["output"]["type"], "json", "{report}");
    serde_json::from_str(report["output"]["value"].as_str().unwrap()).unwrap()
}

#[test]
fn schemas_are_derived_from_the_wit_types_field_by_field() {
    let dir = shop();
    let output = toolhost(Path::new("."), &["--plugins", &dir.path().display().to_string(), "tools", "--json"]);
    assert!(output.status.success(), "{}", stderr(&output));
    let tools: Vec<Value> = serde_json::from_str(&stdout(&output)).unwrap();
    let tool = |name: &str| tools.iter().find(|tool| tool["name"] == name).unwrap_or_else(|| panic!("no {name}"));
    let mut names: Vec<&str> = tools.iter().map(|tool| tool["name"].as_str().unwrap()).collect();
    names.sort();
    assert_eq!(
        names,
        ["add", "crash", "echo-all", "fetch", "get-item", "hello", "hog", "nothing", "ping", "setting", "spin", "wide"]
    );
    let input = |name: &str| tool(name)["input_schema"].clone();

    assert_eq!(
        input("get-item"),
        json!({"type": "object", "properties": {"sku": {"type": "string"}}, "required": ["sku"], "additionalProperties": false})
    );
    assert_eq!(
        tool("get-item")["output_schema"],
        json!({"type": "object", "properties": {
            "sku": {"type": "string"}, "name": {"type": "string"},
            "price-cents": {"type": "integer", "minimum": 0, "maximum": 4294967295u64},
            "tags": {"type": "array", "items": {"type": "string"}},
            "discount": {"anyOf": [{"type": "integer", "minimum": 0, "maximum": 255}, {"type": "null"}]}
        }, "required": ["sku", "name", "price-cents", "tags"], "additionalProperties": false}),
        "a `result` return's schema is its `ok` type; record fields keep their kebab-case names"
    );
    let greet = input("hello");
    assert_eq!(greet["required"], json!(["name"]), "an option parameter may be left out");
    assert_eq!(greet["properties"]["excited"], json!({"anyOf": [{"type": "boolean"}, {"type": "null"}]}));
    assert_eq!(tool("hello")["output_schema"], json!({"type": "string"}));
    let add = input("add");
    assert_eq!(add["properties"]["a"], json!({"type": "integer", "minimum": -2147483648i64, "maximum": 2147483647}));
    assert_eq!(tool("add")["output_schema"]["anyOf"][0]["minimum"], json!(i64::MIN));
    let wide = input("wide");
    assert_eq!(wide["properties"]["u"]["anyOf"][0], json!({"type": "integer", "minimum": 0, "maximum": u64::MAX}));
    assert_eq!(wide["properties"]["u"]["anyOf"][1]["type"], "string", "a u64 may also be a decimal string");
    let all = input("echo-all")["properties"].clone();
    assert_eq!(all["c"], json!({"type": "string", "enum": ["red", "green", "blue"]}));
    assert_eq!(all["p"], json!({"type": "array", "items": {"enum": ["read", "write", "exec"]}, "uniqueItems": true}));
    assert_eq!(all["s"]["oneOf"][0]["properties"]["circle"], json!({"type": "number"}));
    assert_eq!(all["s"]["oneOf"][2], json!({"const": "point"}));
    assert_eq!(all["t"]["prefixItems"][1], json!({"type": "string", "minLength": 1, "maxLength": 1}));
    assert_eq!((all["t"]["minItems"].clone(), all["t"]["maxItems"].clone()), (json!(2), json!(2)));
    assert_eq!(all["bytes"], json!({"type": "array", "items": {"type": "integer", "minimum": 0, "maximum": 255}}));
    assert_eq!(all["x"], json!({"type": "number"}));
    assert_eq!(all["r"]["oneOf"][1]["properties"]["err"]["maximum"], json!(65535));
    assert!(tool("nothing")["output_schema"].is_null(), "no return, no output schema");
    // The signature is the description when nothing else describes the function.
    let described = tool("get-item")["description"].as_str().unwrap();
    assert!(described.contains("acme:shop/inventory@1.0.0.get-item: func(sku: string) -> result<"), "{described}");
    // The functions that take a resource are left out, with the reason.
    let notices = tool("ping")["notices"].to_string();
    assert!(notices.contains("not offered as tools") && notices.contains("read-counter"), "{notices}");
    assert!(
        notices.contains("the resource `counter` of `acme:shop/handles@1.0.0`"),
        "one line for a resource: {notices}"
    );
    assert!(!notices.contains("[method]"), "{notices}");
    assert!(notices.contains("resource (a handle), which JSON cannot carry"), "{notices}");
}

#[test]
fn every_type_round_trips_and_errors_are_typed() {
    let dir = shop();
    let dir = dir.path();
    let (code, report) = call(dir, "get-item", r#"{"sku":"A-1"}"#, &[]);
    assert_eq!(code, 0, "{report}");
    assert_eq!(
        output_of(&report),
        json!({"sku": "A-1", "name": "Anvil", "price-cents": 129900, "tags": ["heavy", "iron"], "discount": 10})
    );
    let (_, report) = call(dir, "hello", r#"{"name":"Ada"}"#, &[]);
    assert_eq!(output_of(&report), json!("Hello, Ada."));
    let (_, report) = call(dir, "hello", r#"{"name":"Ada","excited":true}"#, &[]);
    assert_eq!(output_of(&report), json!("Hello, Ada!"));
    let (_, report) = call(dir, "add", r#"{"a":2147483647,"b":2147483647}"#, &[]);
    assert_eq!(output_of(&report), json!(4294967294u64));
    // 64-bit integers past 2^53 travel as decimal strings, exactly.
    let (_, report) = call(dir, "wide", r#"{"u":"18446744073709551615","s":-9007199254740993}"#, &[]);
    assert_eq!(output_of(&report), json!(["18446744073709551615", "-9007199254740993"]));
    let (_, report) = call(dir, "wide", r#"{"u":5,"s":"-7"}"#, &[]);
    assert_eq!(output_of(&report), json!([5, -7]));
    let everything = json!({"c": "green", "p": ["read", "exec"], "s": {"circle": 1.5}, "t": [7, "é"],
                            "bytes": [0, 128, 255], "x": 0.5, "r": {"err": 404}});
    let (_, report) = call(dir, "echo-all", &everything.to_string(), &[]);
    assert_eq!(
        output_of(&report),
        json!(["green", ["read", "exec"], {"circle": 1.5}, [7, "é"], [0, 128, 255], 0.5, {"err": 404}])
    );
    let (_, report) = call(
        dir,
        "echo-all",
        &json!({"c": "red", "p": [], "s": "point", "t": [0, "x"], "bytes": [], "x": -2.25, "r": {"ok": "fine"}})
            .to_string(),
        &[],
    );
    assert_eq!(output_of(&report), json!(["red", [], "point", [0, "x"], [], -2.25, {"ok": "fine"}]));
    let (code, report) = call(dir, "nothing", "{}", &[]);
    assert_eq!((code, output_of(&report)), (0, Value::Null));

    // A `result`'s `err` is a tool error with the rendered error.
    let (code, report) = call(dir, "get-item", r#"{"sku":"B-2"}"#, &[]);
    assert_eq!((code, report["error"]["kind"].clone()), (1, json!("tool_failed")), "{report}");
    assert!(report["error"]["message"].as_str().unwrap().contains("out-of-stock"), "{report}");
    let (_, report) = call(dir, "get-item", r#"{"sku":"Z-9"}"#, &[]);
    assert!(report["error"]["message"].as_str().unwrap().contains(r#"{"not-found":"no article Z-9"}"#), "{report}");

    // Arguments are checked against the derived schema before anything runs.
    for (tool, arguments, expected) in [
        ("add", r#"{"a":1}"#, "\"b\" is a required property"),
        ("add", r#"{"a":1,"b":2147483648}"#, "2147483648"),
        (
            "echo-all",
            &json!({"c": "pink", "p": [], "s": "point", "t": [0, "x"], "bytes": [], "x": 1, "r": {"ok": ""}})
                .to_string(),
            "pink",
        ),
        (
            "echo-all",
            &json!({"c": "red", "p": [], "s": "point", "t": [0, "x"], "bytes": [256], "x": 1, "r": {"ok": ""}})
                .to_string(),
            "256",
        ),
        (
            "echo-all",
            &json!({"c": "red", "p": [], "s": "point", "t": [0, "xy"], "bytes": [], "x": 1, "r": {"ok": ""}})
                .to_string(),
            "xy",
        ),
        ("wide", r#"{"u":"18446744073709551616","s":0}"#, "18446744073709551616"),
    ] {
        let (code, report) = call(dir, tool, arguments, &[]);
        assert_eq!(
            (code, report["error"]["kind"].clone()),
            (1, json!("invalid_arguments")),
            "{tool} {arguments}: {report}"
        );
        assert!(report["error"]["message"].as_str().unwrap().contains(expected), "{tool} {arguments}: {report}");
        assert_eq!(report["usage"]["fuel"], 0, "refused before it ran: {report}");
    }

    // Traps and limits, as for any plugin.
    let (_, report) = call(dir, "spin", "{}", &["--fuel", "10000000"]);
    assert_eq!(report["error"]["kind"], "out_of_fuel", "{report}");
    let (_, report) = call(dir, "hog", "{}", &["--memory", "32MiB"]);
    assert_eq!(report["error"]["kind"], "memory_limit", "{report}");
    let (_, report) = call(dir, "crash", "{}", &[]);
    assert_eq!(report["error"]["kind"], "trap", "{report}");
    assert!(report["error"]["message"].as_str().unwrap().contains("the shop is closed"), "{report}");
}

#[test]
fn a_component_whose_types_nest_too_deep_is_refused_with_the_reason() {
    let output = toolhost(Path::new("."), &["inspect", &plugin("typed_too_deep").display().to_string()]);
    assert!(!output.status.success());
    let text = stderr(&output);
    assert!(text.contains("not a toolhost plugin") && text.contains("nest more than 32 levels deep"), "{text}");
    // In a folder it is skipped with the same reason, and the rest loads.
    let dir = plugin_dir(&["typed_too_deep", "typed_shop"]);
    let output = toolhost(Path::new("."), &["--plugins", &dir.path().display().to_string(), "call", "ping"]);
    assert!(output.status.success(), "{}", stderr(&output));
    assert!(stderr(&output).contains("typed_too_deep.wasm") && stdout(&output).contains("pong"));
}

#[test]
fn serve_offers_typed_tools_with_output_schemas_and_structured_content() {
    let dir = shop();
    let config = dir.path().join("toolhost.toml");
    std::fs::write(&config, "").unwrap();
    for mode in ["legacy", "2026-07-28"] {
        let result = common::mcp_client_scenario("typed", mode, dir.path(), &config);
        // A record is served as it is; anything else under `result`.
        assert_eq!(result["schemas"]["get-item"]["properties"]["price-cents"]["type"], "integer", "{result}");
        assert_eq!(
            result["schemas"]["hello"],
            json!({"type": "object", "properties": {"result": {"type": "string"}}, "required": ["result"]})
        );
        let item = &result["item"];
        assert_eq!(item["is_error"], false, "{result}");
        assert_eq!(item["structured"]["name"], "Anvil", "{result}");
        assert_eq!(result["greet"]["structured"], json!({"result": "Hello, MCP!"}), "{result}");
        assert!(result["greet"]["text"].as_str().unwrap().contains("Hello, MCP!"), "{result}");
        let missing = &result["missing"];
        assert_eq!(missing["is_error"], true, "{result}");
        assert!(missing["text"].as_str().unwrap().contains("not-found"), "{result}");
    }
}

#[test]
fn a_manifest_renames_describes_and_hides_functions() {
    let dir = shop();
    std::fs::write(
        dir.path().join("typed_shop.toml"),
        "[tools.get-item]\nname = \"lookup_article\"\ndescription = \"Looks an article up by its SKU.\"\nread_only = true\n\
         [tools.crash]\nhide = true\n[tools.no-such-function]\nhide = true\n",
    )
    .unwrap();
    let plugins = dir.path().display().to_string();
    let output = toolhost(Path::new("."), &["--plugins", &plugins, "tools", "--json"]);
    assert!(output.status.success(), "{}", stderr(&output));
    let tools: Vec<Value> = serde_json::from_str(&stdout(&output)).unwrap();
    let names: Vec<&str> = tools.iter().map(|tool| tool["name"].as_str().unwrap()).collect();
    assert!(
        names.contains(&"lookup_article") && !names.contains(&"get-item") && !names.contains(&"crash"),
        "{names:?}"
    );
    let renamed = tools.iter().find(|tool| tool["name"] == "lookup_article").unwrap();
    assert_eq!(renamed["description"], "Looks an article up by its SKU.");
    assert!(renamed["notices"].to_string().contains("no tool `no-such-function`"), "{renamed}");
    let (code, report) = call(dir.path(), "lookup_article", r#"{"sku":"A-1"}"#, &[]);
    assert_eq!((code, output_of(&report)["name"].clone()), (0, json!("Anvil")), "{report}");
    let (code, report) = call(dir.path(), "crash", "{}", &[]);
    assert_eq!((code, report["error"]["kind"].clone()), (1, json!("unknown_tool")), "{report}");

    // A rename to a name models refuse is the plugin's load error, with the reason.
    std::fs::write(dir.path().join("typed_shop.toml"), "[tools.ping]\nname = \"no spaces\"\n").unwrap();
    let output = toolhost(Path::new("."), &["--plugins", &plugins, "tools"]);
    assert!(
        stderr(&output).contains("its manifest renames `ping`") && stderr(&output).contains("not allowed"),
        "{}",
        stderr(&output)
    );
}

#[test]
fn descriptions_come_from_the_wit_docs_the_component_carries() {
    // What a docs-keeping toolchain leaves at the component's top level: the
    // `package-docs` section wit-component encodes from the WIT package.
    let dir = shop();
    let wasm_path = dir.path().join("typed_shop.wasm");
    let mut resolve = wit_parser::Resolve::new();
    let (package, _) = resolve.push_dir(common::plugins_src().join("testing/typed_shop/wit")).unwrap();
    let docs = wit_parser::PackageMetadata::extract(&resolve, package).encode().unwrap();
    let mut wasm = std::fs::read(&wasm_path).unwrap();
    wasm.push(0); // a custom section
    wasm_encoder::Encode::encode(
        &wasm_encoder::CustomSection { name: "package-docs".into(), data: docs.into() },
        &mut wasm,
    );
    std::fs::write(&wasm_path, &wasm).unwrap();
    std::fs::write(dir.path().join("typed_shop.toml"), "[tools.hello]\ndescription = \"Says hello.\"\n").unwrap();

    let plugins = dir.path().display().to_string();
    let output = toolhost(Path::new("."), &["--plugins", &plugins, "tools", "--json"]);
    assert!(output.status.success(), "{}", stderr(&output));
    let tools: Vec<Value> = serde_json::from_str(&stdout(&output)).unwrap();
    let description = |name: &str| tools.iter().find(|tool| tool["name"] == name).unwrap()["description"].clone();
    assert_eq!(description("get-item"), "Looks an article up.", "an interface function's doc comment");
    assert_eq!(description("ping"), "A world-level function.", "a world function's doc comment");
    assert_eq!(description("wide"), "Returns the unsigned and signed 64-bit numbers it was given.");
    assert_eq!(description("hello"), "Says hello.", "the manifest's description is the operator's, and wins");
    // Still answered: the section changes nothing else.
    let (code, report) = call(dir.path(), "ping", "{}", &[]);
    assert_eq!(code, 0, "{report}");
}

#[test]
fn embed_docs_describes_components_whose_toolchain_dropped_their_docs() {
    // typed_shop (wit-bindgen, Rust) and py_notes (componentize-py) are built
    // the usual way, which leaves the WIT's doc comments out.
    let dir = plugin_dir(&["typed_shop", "py_notes"]);
    let plugins = dir.path().display().to_string();
    let listed = || -> Vec<Value> {
        let output = toolhost(Path::new("."), &["--plugins", &plugins, "tools", "--json"]);
        assert!(output.status.success(), "{}", stderr(&output));
        serde_json::from_str(&stdout(&output)).unwrap()
    };
    let find = |tools: &[Value], name: &str| tools.iter().find(|tool| tool["name"] == name).unwrap().clone();
    let before = listed();
    assert!(find(&before, "get-item")["description"].as_str().unwrap().starts_with("Calls `acme:shop/inventory@1.0.0"));
    assert!(find(&before, "summarize")["description"].as_str().unwrap().starts_with("Calls `summarize"));

    let embed = |wasm: &str, wit: &str| {
        let wasm = dir.path().join(wasm).display().to_string();
        let wit = common::plugins_src().join(wit).display().to_string();
        toolhost(Path::new("."), &["embed-docs", &wasm, "--wit", &wit])
    };
    for (wasm, wit) in
        [("typed_shop.wasm", "testing/typed_shop/wit"), ("py_notes.wasm", "python/testing/py_notes/wit/notes.wit")]
    {
        let output = embed(wasm, wit);
        assert!(output.status.success(), "{wasm}: {}", stderr(&output));
        assert!(stderr(&output).contains("described"), "{}", stderr(&output));
    }
    let tools = listed();
    // Functions of an exported interface and of the world.
    let get_item = find(&tools, "get-item");
    assert_eq!(get_item["description"], "Looks an article up.");
    assert_eq!(find(&tools, "ping")["description"], "A world-level function.");
    // A record (in an interface), its fields, and a field of option type.
    let item = &get_item["output_schema"];
    assert_eq!(item["description"], "One article.", "{item}");
    assert_eq!(item["properties"]["sku"]["description"], "The stock-keeping unit it is filed under.");
    assert_eq!(item["properties"]["discount"]["description"], "The discount in percent, when there is one.");
    assert!(item["properties"]["name"].get("description").is_none(), "an undocumented field: {item}");
    // An enum's cases are listed in its description (a schema has no place for one value's).
    let color = &find(&tools, "echo-all")["input_schema"]["properties"]["c"];
    assert_eq!(color["description"], "A colour of the paint range.\n`red`: The warm one.", "{color}");
    assert_eq!(color["enum"], json!(["red", "green", "blue"]), "the schema accepts what it did");
    // The world's own types of a Python component: a record's fields, a variant's cases.
    let summarize = find(&tools, "summarize");
    assert_eq!(summarize["description"], "Summarizes a text.");
    let note = &summarize["output_schema"];
    assert_eq!(note["description"], "What a text is like.", "{note}");
    assert_eq!(note["properties"]["words"]["description"], "How many words it has.");
    let verdict = &find(&tools, "judge")["output_schema"];
    assert_eq!(verdict["oneOf"][0], json!({"const": "empty", "description": "No words at all."}));
    assert_eq!(verdict["oneOf"][1]["description"], "Under the limit: how many words.");
    // The text output shows them too.
    let output = toolhost(Path::new("."), &["--plugins", &plugins, "tools"]);
    assert!(stdout(&output).contains("`red`: The warm one."), "{}", stdout(&output));
    // And the tools answer as before.
    let (code, report) = call(dir.path(), "judge", r#"{"text":""}"#, &[]);
    assert_eq!((code, output_of(&report)), (0, json!("empty")), "{report}");

    // Once more: the same file (its docs replaced, not added to).
    let shop = dir.path().join("typed_shop.wasm");
    let once = std::fs::read(&shop).unwrap();
    assert!(embed("typed_shop.wasm", "testing/typed_shop/wit").status.success());
    assert_eq!(std::fs::read(&shop).unwrap(), once, "running it twice changes nothing");

    // The wrong WIT, WIT that does not parse, a file that is no component:
    // a clear error, and the file as it was.
    let output = embed("typed_shop.wasm", "python/testing/py_notes/wit");
    assert_eq!(output.status.code(), Some(2));
    assert!(
        stderr(&output).contains("describes none of what") && stderr(&output).contains("acme:shop/inventory@1.0.0"),
        "{}",
        stderr(&output)
    );
    let broken = dir.path().join("broken.wit");
    std::fs::write(&broken, "package a:b;\nworld w {\n  export f: func(x: nosuchtype);\n}\n").unwrap();
    let output =
        toolhost(Path::new("."), &["embed-docs", &shop.display().to_string(), "--wit", &broken.display().to_string()]);
    assert_eq!(output.status.code(), Some(2));
    assert!(stderr(&output).contains("nosuchtype") && stderr(&output).contains("broken.wit"), "{}", stderr(&output));
    // wit-parser reads every `.wit` of a folder: a FIFO among them is refused, not waited on.
    let folder = dir.path().join("wit");
    std::fs::create_dir(&folder).unwrap();
    std::fs::copy(common::plugins_src().join("python/testing/py_notes/wit/notes.wit"), folder.join("notes.wit"))
        .unwrap();
    let made = std::process::Command::new("mkfifo").arg(folder.join("more.wit")).status().unwrap();
    assert!(made.success());
    let notes = dir.path().join("py_notes.wasm").display().to_string();
    let output = toolhost(Path::new("."), &["embed-docs", &notes, "--wit", &folder.display().to_string()]);
    assert_eq!(output.status.code(), Some(2));
    assert!(stderr(&output).contains("more.wit is not a regular file"), "{}", stderr(&output));
    let text = dir.path().join("notes.txt");
    std::fs::write(&text, "not wasm").unwrap();
    let wit = common::plugins_src().join("testing/typed_shop/wit").display().to_string();
    let output = toolhost(Path::new("."), &["embed-docs", &text.display().to_string(), "--wit", &wit]);
    assert_eq!(output.status.code(), Some(2));
    assert!(stderr(&output).contains("is not a WebAssembly component"), "{}", stderr(&output));
    assert_eq!(std::fs::read(&shop).unwrap(), once, "a refused run writes nothing");
    let left: Vec<_> = std::fs::read_dir(dir.path())
        .unwrap()
        .map(|entry| entry.unwrap().file_name().to_string_lossy().into_owned())
        .filter(|name| name.ends_with(".tmp"))
        .collect();
    assert!(left.is_empty(), "no temporary file is left: {left:?}");
}

#[test]
fn a_typed_function_reaches_the_network_only_where_it_is_granted() {
    let server = common::server::TestServer::start();
    let dir = shop();
    let config = dir.path().join("toolhost.toml");
    let granted = format!("[plugins.typed_shop]\nhttp = [\"{}\"]\n", server.origin());
    std::fs::write(&config, granted).unwrap();
    let config = config.display().to_string();
    let fetch = |url: &str| {
        let arguments = json!({ "url": url }).to_string();
        call(dir.path(), "fetch", &arguments, &["--config", &config])
    };
    let (code, report) = fetch(&server.url("/hello"));
    assert_eq!(code, 0, "{report}");
    assert_eq!(output_of(&report), json!({"status": 200, "body": "hello from the test server"}));

    // Another host (the same server under another name) is refused before any connection.
    let other = server.url("/hello").replace("127.0.0.1", "localhost");
    let (code, report) = fetch(&other);
    assert_eq!((code, report["error"]["kind"].clone()), (1, json!("tool_failed")), "{report}");
    assert_eq!(report["refused"][0]["kind"], "not_granted", "the refusal is recorded: {report}");
    assert_eq!(server.seen(), ["/hello"], "the refused request never arrived");

    // Nothing granted: nothing reached.
    let (code, report) = call(dir.path(), "fetch", &json!({ "url": server.url("/hello") }).to_string(), &[]);
    assert_eq!(code, 1, "{report}");
    assert_eq!(server.seen(), ["/hello"]);
}

#[test]
fn wasi_config_holds_what_the_plugin_is_granted_of_the_environment_and_nothing_else() {
    let dir = shop();
    let config = dir.path().join("toolhost.toml");
    std::fs::write(&config, "[plugins.typed_shop]\nenv = [\"SHOP_REGION\"]\n").unwrap();
    let config = config.display().to_string();
    let setting = |key: &str| {
        let plugins = dir.path().display().to_string();
        let arguments = json!({ "key": key }).to_string();
        let args = ["--plugins", &plugins, "--config", &config, "call", "setting", &arguments, "--json"];
        let output =
            common::toolhost_with_env(Path::new("."), &args, &[("SHOP_REGION", "eu-west"), ("SHOP_OTHER", "hidden")]);
        let report: Value = serde_json::from_str(&stdout(&output)).unwrap();
        assert!(output.status.success(), "{report}");
        output_of(&report)
    };
    assert_eq!(setting("SHOP_REGION"), json!("eu-west"), "a granted variable is a configuration value");
    assert_eq!(setting("SHOP_OTHER"), Value::Null, "one not granted is not there");
    assert_eq!(setting("PATH"), Value::Null, "nor is toolhost's own environment");
}

#[test]
fn a_model_calls_typed_functions_in_the_loop() {
    use common::model_server::{ModelServer, Script};
    let dir = shop();
    for script in [Script { anthropic: false, stream: false }, Script { anthropic: true, stream: true }] {
        let server = ModelServer::start(vec![
            script.calls(&[("call_1", "get-item", r#"{"sku":"A-1"}"#), ("call_2", "get-item", r#"{"sku":"Z-9"}"#)]),
            script.text("One anvil; no Z-9."),
        ]);
        let output = script.run_command(&server, dir.path(), "look up A-1 and Z-9").output().unwrap();
        assert!(output.status.success(), "{script:?}: {}", stderr(&output));
        assert!(stdout(&output).contains("One anvil; no Z-9."), "{script:?}: {}", stdout(&output));
        let requests = server.requests();
        // The model was offered the function with its derived schema.
        let tools = requests[0].body["tools"].as_array().unwrap();
        let offered = tools.iter().find(|tool| tool["name"] == "get-item" || tool["function"]["name"] == "get-item");
        let offered = offered.unwrap_or_else(|| panic!("{script:?}: get-item not offered: {tools:?}"));
        let schema = if script.anthropic { &offered["input_schema"] } else { &offered["function"]["parameters"] };
        assert_eq!(schema["properties"]["sku"], json!({"type": "string"}), "{script:?}");
        // The `ok` came back as the record's JSON, the `err` as an error result.
        let results = script.results(&requests[1]);
        assert_eq!(results.len(), 2, "{script:?}: {results:?}");
        let item: Value = serde_json::from_str(&results[0].1).unwrap();
        assert_eq!((item["name"].clone(), results[0].2), (json!("Anvil"), false), "{script:?}: {results:?}");
        assert!(results[1].2 && results[1].1.contains("no article Z-9"), "{script:?}: {results:?}");
    }
}

#[test]
fn a_python_component_of_typed_functions_is_a_plugin_too() {
    let dir = plugin_dir(&["py_notes"]);
    let plugins = dir.path().display().to_string();
    let output = toolhost(Path::new("."), &["--plugins", &plugins, "tools", "--json"]);
    assert!(output.status.success(), "{}", stderr(&output));
    let tools: Vec<Value> = serde_json::from_str(&stdout(&output)).unwrap();
    let tool =
        |name: &str| tools.iter().find(|tool| tool["name"] == name).unwrap_or_else(|| panic!("no {name}")).clone();
    let mut names: Vec<&str> = tools.iter().map(|tool| tool["name"].as_str().unwrap()).collect();
    names.sort();
    // componentize-py's own `exports.init` (its build-time pre-initialization) is not a tool.
    assert_eq!(names, ["count-forever", "divide", "judge", "summarize"]);
    let summarize = tool("summarize");
    assert_eq!(summarize["input_schema"]["required"], json!(["text"]));
    assert_eq!(summarize["output_schema"]["required"], json!(["title", "words", "tags"]));
    assert_eq!(tool("judge")["output_schema"]["oneOf"][0], json!({"const": "empty"}));

    let (code, report) =
        call(dir.path(), "summarize", r#"{"text":"Components written in Python become tools","max-words":4}"#, &[]);
    assert_eq!(code, 0, "{report}");
    assert_eq!(
        output_of(&report),
        json!({"title": "Components written in", "words": 4, "tags": ["components", "written"], "first-word": "Components"})
    );
    let (_, report) = call(dir.path(), "judge", r#"{"text":""}"#, &[]);
    assert_eq!(output_of(&report), json!("empty"));
    let (_, report) = call(dir.path(), "judge", r#"{"text":"one two three four five six"}"#, &[]);
    assert_eq!(output_of(&report), json!({"long": 6}));
    let (_, report) = call(dir.path(), "divide", r#"{"a":7,"b":2}"#, &[]);
    assert_eq!(output_of(&report), json!(3.5));
    let (code, report) = call(dir.path(), "divide", r#"{"a":1,"b":0}"#, &[]);
    assert_eq!((code, report["error"]["kind"].clone()), (1, json!("tool_failed")), "{report}");
    assert_eq!(report["error"]["message"], "the tool failed: division by zero");
    let (_, report) = call(dir.path(), "count-forever", "{}", &["--fuel", "50000000"]);
    assert_eq!(report["error"]["kind"], "out_of_fuel", "{report}");
}

#[test]
fn a_wrong_variant_case_names_the_cases_and_tools_shows_each_items_range() {
    let dir = shop();
    let arguments = |shape: Value| {
        json!({"c": "red", "p": [], "s": shape, "t": [0, "x"], "bytes": [], "x": 1, "r": {"ok": ""}}).to_string()
    };
    // `variant shape { circle(f64), square(f64), point }`: every case named, as an enum's values are.
    for shape in [json!("none"), json!({"hexagon": 2.0}), json!(7)] {
        let (code, report) = call(dir.path(), "echo-all", &arguments(shape.clone()), &[]);
        assert_eq!((code, report["error"]["kind"].clone()), (1, json!("invalid_arguments")), "{report}");
        let message = report["error"]["message"].as_str().unwrap();
        let expected = format!(
            r#"invalid arguments: at `/s`: {shape} is not one of the allowed values: {{"circle": …}}, {{"square": …}}, "point""#
        );
        assert_eq!(message, expected);
    }
    // The right case with a wrong payload says what is wrong inside it.
    let (_, report) = call(dir.path(), "echo-all", &arguments(json!({"circle": "big"})), &[]);
    let message = report["error"]["message"].as_str().unwrap();
    assert!(message.starts_with("invalid arguments: at `/s/circle`: \"big\" is not of type \"number\""), "{message}");

    // `tools` shows a `list<u8>` with its items' range.
    let plugins = dir.path().display().to_string();
    let output = toolhost(Path::new("."), &["--plugins", &plugins, "tools"]);
    assert!(output.status.success(), "{}", stderr(&output));
    assert!(stdout(&output).contains("· bytes: array of integer (0 to 255) (required)"), "{}", stdout(&output));
}

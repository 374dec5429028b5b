//! `toolhost new`, the way a plugin author uses it: scaffold a project in
//! each language, build it with its one documented command (`./build.sh`),
//! and call the plugin it produced through the real binary. The author tests
//! (`an_author_*`) run a copy of the binary from a folder outside the
//! checkout, check that nothing in the project refers to the checkout, add a
//! tool with an enum argument that makes an HTTP request and a tool that never
//! stops, and check the `tools` text, an enum error, the granted request, the
//! refused one and the runaway.
//!
//! The builds use the toolchains `plugins/build.sh` installed (on PATH for
//! Python and JavaScript, cargo offline for Rust) so that no test reaches a
//! package registry.

use crate::common;

use common::server::TestServer;
use common::{plugins_src, shared_cache, stderr, stdout, toolhost};
use serde_json::{Value, json};
use std::path::{Path, PathBuf};
use std::process::{Command, Output};

/// Runs a scaffold's `build.sh` with the toolchains the repository's build installed.
fn build(project: &Path) {
    let plugins = plugins_src().canonicalize().unwrap();
    let path = format!(
        "{}:{}:{}",
        plugins.join("python/.venv/bin").display(),
        plugins.join("js/node_modules/.bin").display(),
        std::env::var("PATH").unwrap_or_default()
    );
    let output = Command::new("bash")
        .arg("build.sh")
        .current_dir(project)
        .env("PATH", path)
        .env("CARGO_NET_OFFLINE", "true")
        // A typed project's build ends with `toolhost embed-docs`: this toolhost.
        .env("TOOLHOST", env!("CARGO_BIN_EXE_toolhost"))
        // Reuse the dependencies the Rust plugins were compiled with.
        .env("CARGO_TARGET_DIR", plugins.join("target"))
        .output()
        .expect("run build.sh");
    assert!(
        output.status.success(),
        "{}: build.sh failed:\n{}\n{}",
        project.display(),
        stdout(&output),
        stderr(&output)
    );
}

/// `toolhost new NAME --lang LANG EXTRA…` in `work`, built with its
/// `build.sh`, its `.wasm` copied into `work/plugins`: the project, and what
/// `new` printed.
fn scaffold(work: &Path, name: &str, lang: &str, extra: &[&str]) -> (PathBuf, String) {
    let plugins = work.join("plugins");
    std::fs::create_dir_all(&plugins).unwrap();
    let project = work.join(name);
    let mut args = vec!["new", name, "--lang", lang];
    args.extend_from_slice(extra);
    let output = toolhost(work, &args);
    assert!(output.status.success(), "{lang}: {}", stderr(&output));
    let said = stdout(&output);
    assert!(said.contains("./build.sh"), "{lang}: says how to build: {said}");
    assert!(project.join("README.md").is_file() && project.join(".gitignore").is_file(), "{lang}");
    build(&project);
    let wasm = project.join(format!("{name}.wasm"));
    assert!(wasm.is_file(), "{lang}: build.sh wrote no {}", wasm.display());
    std::fs::copy(&wasm, plugins.join(format!("{name}.wasm"))).unwrap();
    (project, said)
}

/// Calls a template's counting `tool` in the plugins folder `dir` and checks
/// its counts (its JSON, alone or as the `json` block of its content); the
/// `call --json` report.
fn counts(work: &Path, dir: &str, tool: &str) -> Value {
    let output = toolhost(work, &["--plugins", dir, "call", tool, r#"{"text":"héllo plugin  world"}"#, "--json"]);
    assert!(output.status.success(), "{tool}: {}{}", stdout(&output), stderr(&output));
    let report: Value = serde_json::from_str(&stdout(&output)).unwrap();
    let json = match report["output"]["type"].as_str() {
        Some("json") => &report["output"]["value"],
        _ => report["output"]["value"]
            .as_array()
            .and_then(|blocks| blocks.iter().find(|block| block["type"] == "json"))
            .map(|block| &block["json"])
            .unwrap_or_else(|| panic!("{tool}: no JSON in {report}")),
    };
    let counted: Value = serde_json::from_str(json.as_str().unwrap()).unwrap();
    assert_eq!(counted, json!({ "words": 3, "characters": 19 }), "{tool}");
    report
}

#[test]
fn every_language_scaffolds_a_project_that_builds_and_answers() {
    let work = tempfile::tempdir().unwrap();
    let plugins = work.path().join("plugins");
    for lang in ["rust", "python", "js", "c"] {
        scaffold(work.path(), &format!("count-{lang}"), lang, &[]);
    }

    let dir = plugins.display().to_string();
    let output = toolhost(work.path(), &["--plugins", &dir, "tools", "--json"]);
    assert!(output.status.success(), "{}", stderr(&output));
    let tools: Vec<Value> = serde_json::from_str(&stdout(&output)).unwrap();
    for lang in ["rust", "python", "js", "c"] {
        let tool = format!("count-{lang}");
        let listed = tools.iter().find(|listed| listed["name"] == tool).unwrap_or_else(|| panic!("no {tool}"));
        assert_eq!(listed["title"], "Count words", "{lang}: {listed}");
        // Idempotent as declared; read-only, closed-world and not destructive as its (no) grants say too.
        let hints =
            json!({"readOnlyHint": true, "destructiveHint": false, "idempotentHint": true, "openWorldHint": false});
        assert_eq!(listed["hints"], hints, "{lang}: {listed}");
        assert_eq!(listed["output_schema"]["required"], json!(["words", "characters"]), "{lang}: {listed}");
    }
    for lang in ["rust", "python", "js", "c"] {
        let wasm = plugins.join(format!("count-{lang}.wasm"));
        let output = toolhost(work.path(), &["inspect", &wasm.display().to_string(), "--json"]);
        let inspected: Value = serde_json::from_str(&stdout(&output)).unwrap();
        assert_eq!(inspected["contract"], "0.2.0", "{lang}: {inspected}");
    }
    for lang in ["rust", "python", "js", "c"] {
        let tool = format!("count-{lang}");
        let report = counts(work.path(), &dir, &tool);
        assert!(report["logs"].as_array().unwrap().iter().any(|log| log["message"] == "counted"), "{lang}: {report}");
        // Contract 0.2.0: a text block for people, then the JSON.
        assert_eq!(report["output"]["type"], "content", "{lang}: {report}");
        assert_eq!(report["output"]["value"][0], json!({"type": "text", "text": "3 words, 19 characters"}), "{lang}");

        // Progress goes to stderr as it comes; the blocks to stdout.
        let output = toolhost(work.path(), &["--plugins", &dir, "call", &tool, r#"{"text":"héllo plugin  world"}"#]);
        assert!(output.status.success(), "{lang}: {}", stderr(&output));
        assert!(stderr(&output).contains("progress 1/1: counted"), "{lang}: {}", stderr(&output));
        assert!(stdout(&output).starts_with("3 words, 19 characters\n{"), "{lang}: {}", stdout(&output));

        let output = toolhost(work.path(), &["--plugins", &dir, "call", &tool, r#"{"text":""}"#, "--json"]);
        assert_eq!(output.status.code(), Some(1), "{lang}");
        let report: Value = serde_json::from_str(&stdout(&output)).unwrap();
        assert_eq!(report["error"]["kind"], "invalid_arguments", "{lang}: {report}");
        assert!(report["error"]["message"].as_str().unwrap().contains("`text` is empty"), "{lang}: {report}");
    }
}

#[test]
fn the_printed_next_steps_work_when_typed_in_order() {
    let work = tempfile::tempdir().unwrap();
    let output = toolhost(work.path(), &["new", "word_count", "--lang", "rust"]);
    assert!(output.status.success(), "{}", stderr(&output));
    let said = stdout(&output);
    let steps: Vec<&str> = said.lines().filter_map(|line| line.strip_prefix("  ")).collect();
    assert_eq!(steps.len(), 2, "two steps: {said}");
    assert!(!said.contains("plugins/build.sh"), "{said}");

    // Typed as printed, one after the other in one shell, from where `new` ran.
    let plugins = plugins_src().canonicalize().unwrap();
    let binary = Path::new(env!("CARGO_BIN_EXE_toolhost")).parent().unwrap();
    let path = format!("{}:{}", binary.display(), std::env::var("PATH").unwrap_or_default());
    let output = Command::new("bash")
        .args(["-e", "-c", &steps.join("\n")])
        .current_dir(work.path())
        .env("PATH", path)
        .env("CARGO_NET_OFFLINE", "true")
        .env("CARGO_TARGET_DIR", plugins.join("target"))
        .env("TOOLHOST_CACHE_DIR", shared_cache())
        .env_remove("TOOLHOST_PLUGINS")
        .env_remove("TOOLHOST_CONFIG")
        .output()
        .unwrap();
    assert!(output.status.success(), "{said}\n{}{}", stdout(&output), stderr(&output));
    assert!(stdout(&output).starts_with("3 words, 18 characters\n"), "{}", stdout(&output));

    // The step as an older `new` printed it, typed from inside the project:
    // the error says what to do there, not a step of toolhost's own repository.
    let project = work.path().join("word_count");
    let output = toolhost(&project, &["--plugins", "word_count", "call", "word_count", r#"{"text":"a"}"#]);
    assert_eq!(output.status.code(), Some(2));
    let error = stderr(&output);
    assert!(error.contains("could not read the plugins folder word_count"), "{error}");
    assert!(error.contains("`--plugins .` for the folder you are in"), "{error}");
    assert!(!error.contains("plugins/build.sh"), "{error}");

    // In a checkout of toolhost whose bundled plugins are not built yet, the
    // default folder's error still says how to build them.
    let checkout = work.path().join("checkout");
    std::fs::create_dir_all(checkout.join("plugins")).unwrap();
    std::fs::write(checkout.join("plugins/build.sh"), "#!/bin/sh\n").unwrap();
    let output = toolhost(&checkout, &["tools"]);
    assert_eq!(output.status.code(), Some(2));
    assert!(stderr(&output).contains("`bash plugins/build.sh`"), "{}", stderr(&output));
}

/// A project an older `toolhost new` wrote (contract 0.1.0, with the Rust SDK
/// of its day in `toolhost-sdk/`, kept as it was in `tests/scaffold-0.1.0/`)
/// still builds with its `build.sh`, and today's host runs it.
#[test]
fn a_project_scaffolded_for_contract_0_1_0_still_builds_and_answers() {
    let work = tempfile::tempdir().unwrap();
    let project = work.path().join("legacy-count");
    copy_tree(&Path::new(env!("CARGO_MANIFEST_DIR")).join("../tests/scaffold-0.1.0/rust"), &project);
    build(&project);
    let plugins = work.path().join("plugins");
    std::fs::create_dir_all(&plugins).unwrap();
    std::fs::copy(project.join("legacy-count.wasm"), plugins.join("legacy-count.wasm")).unwrap();
    let dir = plugins.display().to_string();
    let report = counts(work.path(), &dir, "legacy-count");
    assert_eq!(report["output"]["type"], "json", "{report}");
    let output =
        toolhost(work.path(), &["inspect", &plugins.join("legacy-count.wasm").display().to_string(), "--json"]);
    let inspected: Value = serde_json::from_str(&stdout(&output)).unwrap();
    assert_eq!(inspected["contract"], "0.1.0", "{inspected}");
}

fn copy_tree(from: &Path, to: &Path) {
    std::fs::create_dir_all(to).unwrap();
    for entry in std::fs::read_dir(from).unwrap() {
        let entry = entry.unwrap();
        let target = to.join(entry.file_name());
        if entry.file_type().unwrap().is_dir() {
            copy_tree(&entry.path(), &target);
        } else {
            std::fs::copy(entry.path(), &target).unwrap();
        }
    }
}

#[test]
fn every_language_scaffolds_a_typed_function_plugin_that_builds_and_answers() {
    let work = tempfile::tempdir().unwrap();
    let plugins = work.path().join("plugins");
    for lang in ["rust", "python", "js", "c"] {
        // `_` in a plugin's name is `-` in its function's (WIT) name, the tool's.
        let (project, said) = scaffold(work.path(), &format!("typed_{lang}"), lang, &["--typed"]);
        assert!(said.contains(&format!("call typed-{lang} ")), "{lang}: {said}");
        let world = std::fs::read_to_string(project.join("wit/world.wit")).unwrap();
        assert!(world.contains(&format!("export typed-{lang}: func(text: string)")), "{lang}: {world}");
        assert!(!project.join("toolhost-sdk").exists() && !project.join("toolhost.h").exists(), "{lang}: no SDK");
    }

    let dir = plugins.display().to_string();
    let output = toolhost(work.path(), &["--plugins", &dir, "tools", "--json"]);
    assert!(output.status.success(), "{}", stderr(&output));
    let tools: Vec<Value> = serde_json::from_str(&stdout(&output)).unwrap();
    assert_eq!(tools.len(), 4, "{tools:?}");
    for lang in ["rust", "python", "js", "c"] {
        let tool = format!("typed-{lang}");
        let listed = tools.iter().find(|listed| listed["name"] == tool).unwrap_or_else(|| panic!("no {tool}"));
        assert_eq!(listed["input_schema"]["required"], json!(["text"]), "{lang}: {listed}");
        assert_eq!(listed["output_schema"]["required"], json!(["words", "characters"]), "{lang}: {listed}");
        // The doc comments of wit/world.wit, which build.sh embedded after the language's build.
        assert_eq!(listed["description"], "Counts the words and characters of a text.", "{lang}: {listed}");
        assert_eq!(
            listed["output_schema"]["properties"]["words"]["description"], "Its whitespace-separated words.",
            "{lang}: {listed}"
        );

        counts(work.path(), &dir, &tool);

        let output = toolhost(work.path(), &["--plugins", &dir, "call", &tool, r#"{"text":""}"#, "--json"]);
        assert_eq!(output.status.code(), Some(1), "{lang}");
        let report: Value = serde_json::from_str(&stdout(&output)).unwrap();
        assert_eq!(report["error"]["kind"], "tool_failed", "{lang}: {report}");
        assert!(report["error"]["message"].as_str().unwrap().contains("`text` is empty"), "{lang}: {report}");
    }
}

#[test]
fn rust_scaffolds_a_wasi_0_3_async_plugin_that_builds_and_answers() {
    let work = tempfile::tempdir().unwrap();
    let (project, said) = scaffold(work.path(), "async_count", "rust", &["--async"]);
    assert!(said.contains("async (WASI 0.3) typed-function") && said.contains("call async-count "), "{said}");
    let world = std::fs::read_to_string(project.join("wit/world.wit")).unwrap();
    assert!(world.contains("export async-count: async func(text: string)"), "{world}");
    let readme = std::fs::read_to_string(project.join("README.md")).unwrap();
    assert!(readme.contains("--lang rust --async"), "{readme}");

    let dir = work.path().join("plugins").display().to_string();
    let wasm = work.path().join("plugins/async_count.wasm").display().to_string();
    let inspected = stdout(&toolhost(work.path(), &["inspect", &wasm]));
    assert!(inspected.contains("async     async exports"), "{inspected}");
    let output = toolhost(work.path(), &["--plugins", &dir, "tools", "--json"]);
    let tools: Vec<Value> = serde_json::from_str(&stdout(&output)).unwrap();
    assert_eq!(tools[0]["description"], "Counts the words and characters of a text.", "{tools:?}");
    counts(work.path(), &dir, "async-count");
    let output = toolhost(work.path(), &["--plugins", &dir, "call", "async-count", r#"{"text":""}"#, "--json"]);
    let report: Value = serde_json::from_str(&stdout(&output)).unwrap();
    assert_eq!(report["error"]["kind"], "tool_failed", "{report}");

    // Only Rust has the async form; the others say so and write nothing.
    let output = toolhost(work.path(), &["new", "py_async", "--lang", "python", "--async"]);
    assert_eq!(output.status.code(), Some(2), "{}", stdout(&output));
    assert!(stderr(&output).contains("--async is offered for --lang rust only"), "{}", stderr(&output));
    assert!(!work.path().join("py_async").exists());
}

#[test]
fn new_refuses_bad_names_and_existing_folders_and_writes_nothing() {
    let work = tempfile::tempdir().unwrap();
    std::fs::create_dir(work.path().join("taken")).unwrap();
    std::fs::write(work.path().join("taken/keep.txt"), "mine").unwrap();
    std::fs::write(work.path().join("a-file"), "mine").unwrap();
    let cases: [(&[&str], &str); 5] = [
        (&["new", "Word Count", "--lang", "python"], "did you mean `word_count`?"),
        (&["new", "2fast", "--lang", "c"], "starting with a letter"),
        (&["new", "taken", "--lang", "js"], "taken already exists and is not empty"),
        (&["new", "ok", "--lang", "c", "--dir", "a-file"], "a-file already exists and is not a folder"),
        (&["new", "ok", "--lang", "go"], "possible values: rust, python, js, c"),
    ];
    for (args, expected) in cases {
        let output = toolhost(work.path(), args);
        assert_eq!(output.status.code(), Some(2), "{args:?}");
        assert!(stderr(&output).contains(expected), "{args:?}: {}", stderr(&output));
    }
    let mut left: Vec<String> = std::fs::read_dir(work.path())
        .unwrap()
        .map(|entry| entry.unwrap().file_name().to_string_lossy().into_owned())
        .collect();
    left.sort();
    assert_eq!(left, ["a-file", "taken"], "nothing was created");
    assert_eq!(std::fs::read_to_string(work.path().join("taken/keep.txt")).unwrap(), "mine");

    // An empty folder is fine: it is where the project goes.
    std::fs::create_dir(work.path().join("empty")).unwrap();
    let output = toolhost(work.path(), &["new", "fills-it", "--lang", "c", "--dir", "empty"]);
    assert!(output.status.success(), "{}", stderr(&output));
    assert!(work.path().join("empty/tools.c").is_file());
}

/// The second and third tools an author adds, per language: `measure_LANG`
/// (GETs `url`, counts its `unit`: one of "bytes", "words", "lines") and
/// `spin_LANG` (never stops). Each is (file, text to find, text to put there).
fn edits(lang: &str) -> Vec<(&'static str, &'static str, &'static str)> {
    match lang {
        "rust" => vec![(
            "src/lib.rs",
            "    .output::<Counts>()\n];",
            r#"    .output::<Counts>(),
    Tool::new("measure_rust", "Fetches a page and counts its bytes, words or lines.", measure),
    Tool::new("spin_rust", "Never stops.", spin),
];

/// What to count.
#[derive(Deserialize, JsonSchema)]
#[serde(rename_all = "lowercase")]
enum Unit {
    /// Every byte of the body.
    Bytes,
    /// Runs of non-space characters.
    Words,
    /// Lines of text.
    Lines,
}

#[derive(Deserialize, JsonSchema)]
struct MeasureArgs {
    /// The page to fetch.
    url: String,
    /// What to count.
    unit: Unit,
}

#[derive(Serialize)]
struct Measured {
    status: u16,
    count: usize,
}

fn measure(args: MeasureArgs) -> Result<toolhost_sdk::Json<Measured>, ToolError> {
    let response = toolhost_sdk::http::get(&args.url).send(1 << 20)?;
    let text = response.text();
    let count = match args.unit {
        Unit::Bytes => response.body.len(),
        Unit::Words => text.split_whitespace().count(),
        Unit::Lines => text.lines().count(),
    };
    Ok(toolhost_sdk::Json(Measured { status: response.status, count }))
}

#[derive(Deserialize, JsonSchema)]
struct Nothing {}

fn spin(_: Nothing) -> Result<String, ToolError> {
    let mut n = 0u64;
    loop {
        n = std::hint::black_box(n.wrapping_add(1));
    }
}"#,
        )],
        "python" => vec![(
            "src/app.py",
            "        th.json({\"words\": words, \"characters\": characters}),\n    ]\n",
            r#"        th.json({"words": words, "characters": characters}),
    ]


import toolhost_http


@th.tool(
    "measure_python",
    "Fetches a page and counts its bytes, words or lines.",
    {
        "type": "object",
        "required": ["url", "unit"],
        "properties": {
            "url": {"type": "string", "description": "The page to fetch."},
            "unit": {"enum": ["bytes", "words", "lines"], "description": "What to count."},
        },
    },
)
def measure(args):
    try:
        response = toolhost_http.get(args["url"])
    except toolhost_http.Error as err:
        raise th.Failed(str(err))
    text = response.text()
    counts = {"bytes": len(response.body), "words": len(text.split()), "lines": len(text.splitlines())}
    return {"status": response.status, "count": counts[args["unit"]]}


@th.tool("spin_python", "Never stops.", {"type": "object", "properties": {}})
def spin(args):
    n = 0
    while True:
        n += 1
"#,
        )],
        "js" => vec![(
            "app.js",
            "th.json({ words, characters })];\n  },\n);\n",
            r#"th.json({ words, characters })];
  },
);

th.tool(
  {
    name: 'measure_js',
    description: 'Fetches a page and counts its bytes, words or lines.',
    inputSchema: {
      type: 'object',
      required: ['url', 'unit'],
      properties: {
        url: { type: 'string', description: 'The page to fetch.' },
        unit: { enum: ['bytes', 'words', 'lines'], description: 'What to count.' },
      },
    },
  },
  async ({ url, unit }) => {
    let response;
    try {
      response = await fetch(url);
    } catch (err) {
      throw new th.Failed(`could not fetch ${url}: ${err.message}`);
    }
    const body = new Uint8Array(await response.arrayBuffer());
    const text = new TextDecoder().decode(body);
    const counts = {
      bytes: body.length,
      words: text.split(/\s+/).filter(Boolean).length,
      lines: text.split('\n').filter(Boolean).length,
    };
    return { status: response.status, count: counts[unit] };
  },
);

th.tool({ name: 'spin_js', description: 'Never stops.', inputSchema: { type: 'object', properties: {} } }, () => {
  let n = 0;
  for (;;) n++;
});
"#,
        )],
        "c" => vec![
            ("tools.c", "#include \"toolhost.h\"\n", "#include \"toolhost.h\"\n#include \"toolhost_http.h\"\n"),
            (
                "tools.c",
                "    th_tools_init(ret, 1);\n",
                r#"    th_tools_init(ret, 3);
    th_tools_set(ret, 1, "measure_c", "Fetches a page and counts its bytes, words or lines.",
                 "{\"type\":\"object\",\"required\":[\"url\",\"unit\"],\"properties\":{"
                 "\"url\":{\"type\":\"string\",\"description\":\"The page to fetch.\"},"
                 "\"unit\":{\"enum\":[\"bytes\",\"words\",\"lines\"],\"description\":\"What to count.\"}}}");
    th_tools_set(ret, 2, "spin_c", "Never stops.", "{\"type\":\"object\",\"properties\":{}}");
"#,
            ),
            (
                "tools.c",
                "bool exports_toolhost_plugin_tools_call_tool(",
                r#"static bool measure(const th_json *args, th_blocks *ret, exports_toolhost_plugin_tools_call_error_t *err) {
    const char *url = th_json_get(args, "url")->string;
    const char *unit = th_json_get(args, "unit")->string;
    th_http_response response;
    char error[512];
    if (th_http_get(url, 1 << 20, &response, error, sizeof error) != TH_HTTP_OK) {
        return th_failed(err, "%s", error);
    }
    size_t count = 0;
    bool in_run = false;
    for (size_t i = 0; i < response.body.len; i++) {
        char c = response.body.data[i];
        bool gap = strcmp(unit, "lines") == 0 ? c == '\n' : (c == ' ' || c == '\n' || c == '\t' || c == '\r');
        if (!gap && !in_run) count++;
        in_run = !gap;
    }
    if (strcmp(unit, "bytes") == 0) count = response.body.len;
    th_buf out = {0};
    th_buf_printf(&out, "{\"status\":%u,\"count\":%zu}", (unsigned)response.status, count);
    th_http_response_free(&response);
    th_json_buf(ret, &out);
    return true;
}

static bool spin(void) {
    volatile unsigned long n = 0;
    for (;;) n++;
    return false;
}

bool exports_toolhost_plugin_tools_call_tool("#,
            ),
            (
                "tools.c",
                "    } else {\n        ok = th_failed(err, \"this plugin has no tool named",
                "    } else if (strcmp(tool, \"measure_c\") == 0) {\n        ok = measure(args, ret, err);\n    } else if (strcmp(tool, \"spin_c\") == 0) {\n        ok = spin();\n    } else {\n        ok = th_failed(err, \"this plugin has no tool named",
            ),
        ],
        other => panic!("no edits for {other}"),
    }
}

/// The repository's root, as this test binary was built from it.
fn checkout() -> PathBuf {
    plugins_src().join("..").canonicalize().unwrap()
}

/// `toolhost` run from `bin` (a copy outside the checkout) in `cwd`.
fn run_copy(bin: &Path, cwd: &Path, args: &[&str]) -> Output {
    Command::new(bin)
        .args(args)
        .current_dir(cwd)
        .env("TOOLHOST_CACHE_DIR", shared_cache())
        .env_remove("TOOLHOST_PLUGINS")
        .env_remove("TOOLHOST_CONFIG")
        .env_remove("TOOLHOST_LOG")
        .output()
        .expect("run the copied toolhost")
}

/// Every file under `dir`, recursively.
fn files_under(dir: &Path) -> Vec<PathBuf> {
    let mut found = Vec::new();
    for entry in std::fs::read_dir(dir).unwrap() {
        let path = entry.unwrap().path();
        if path.is_dir() { found.extend(files_under(&path)) } else { found.push(path) }
    }
    found
}

/// What an author does in `lang`, from `toolhost new` to a runaway.
fn author(lang: &str) {
    let work = tempfile::tempdir().unwrap();
    let bin = work.path().join("bin/toolhost");
    std::fs::create_dir(work.path().join("bin")).unwrap();
    std::fs::copy(env!("CARGO_BIN_EXE_toolhost"), &bin).unwrap();
    assert!(!work.path().starts_with(checkout()), "the work folder is outside the checkout");

    let name = format!("author-{lang}");
    let output = run_copy(&bin, work.path(), &["new", &name, "--lang", lang]);
    assert!(output.status.success(), "{lang}: {}", stderr(&output));
    let project = work.path().join(&name);
    let checkout = checkout().display().to_string();
    for file in files_under(&project) {
        let text = std::fs::read_to_string(&file).unwrap();
        assert!(!text.contains(&checkout), "{} refers to the checkout {checkout}", file.display());
    }

    for (file, find, put) in edits(lang) {
        let path = project.join(file);
        let text = std::fs::read_to_string(&path).unwrap();
        assert_eq!(text.matches(find).count(), 1, "{lang}: {file} has {find:?} once");
        std::fs::write(&path, text.replace(find, put)).unwrap();
    }
    // What the plugin asks for: the JavaScript build keeps wasi:http for it.
    std::fs::write(project.join(format!("{name}.toml")), "http = [\"http://127.0.0.1\"]\n").unwrap();
    build(&project);

    let granted = TestServer::start();
    let other = TestServer::start();
    let plugins = work.path().join("plugins");
    std::fs::create_dir(&plugins).unwrap();
    for file in [format!("{name}.wasm"), format!("{name}.toml")] {
        std::fs::copy(project.join(&file), plugins.join(&file)).unwrap();
    }
    let config = work.path().join("toolhost.toml");
    std::fs::write(&config, format!("[plugins.{name}]\nhttp = [\"{}\"]\n", granted.origin())).unwrap();
    let (plugins, config) = (plugins.display().to_string(), config.display().to_string());
    let toolhost = |args: &[&str]| {
        let mut all = vec!["--plugins", &plugins, "--config", &config];
        all.extend_from_slice(args);
        run_copy(&bin, work.path(), &all)
    };
    let measure = format!("measure_{lang}");
    let spin = format!("spin_{lang}");

    // The tools text shows the enum's values (with their doc comments in Rust).
    let output = toolhost(&["tools"]);
    assert!(output.status.success(), "{lang}: {}", stderr(&output));
    let text = stdout(&output);
    assert!(stderr(&output).contains("3 tools from 1 plugin\n"), "{lang}: {}", stderr(&output));
    assert!(text.contains(&format!("{measure}  (plugin {name})")), "{lang}: {text}");
    assert!(text.contains("    · unit: string (required) — What to count.\n"), "{lang}: {text}");
    if lang == "rust" {
        assert!(
            text.contains("        one of:\n          \"bytes\" — Every byte of the body.\n          \"words\" — Runs of non-space characters.\n          \"lines\" — Lines of text.\n"),
            "{lang}: {text}"
        );
    } else {
        assert!(text.contains("        one of: \"bytes\", \"words\", \"lines\"\n"), "{lang}: {text}");
    }

    // A value outside the enum names every allowed one.
    let args = json!({ "url": granted.url("/hello"), "unit": "weeks" }).to_string();
    let output = toolhost(&["call", &measure, &args, "--json"]);
    assert_eq!(output.status.code(), Some(1), "{lang}");
    let report: Value = serde_json::from_str(&stdout(&output)).unwrap();
    assert_eq!(report["error"]["kind"], "invalid_arguments", "{lang}: {report}");
    assert_eq!(
        report["error"]["message"],
        r#"invalid arguments: at `/unit`: "weeks" is not one of the allowed values: "bytes", "words", "lines""#,
        "{lang}"
    );

    // The granted server answers; the page is "hello from the test server".
    for (unit, count) in [("bytes", 26), ("words", 5), ("lines", 1)] {
        let args = json!({ "url": granted.url("/hello"), "unit": unit }).to_string();
        let output = toolhost(&["call", &measure, &args, "--json"]);
        let report: Value = serde_json::from_str(&stdout(&output)).unwrap();
        assert_eq!(report["ok"], true, "{lang} {unit}: {report}");
        let measured: Value = serde_json::from_str(report["output"]["value"].as_str().unwrap()).unwrap();
        assert_eq!(measured, json!({ "status": 200, "count": count }), "{lang} {unit}");
        assert_eq!(report["usage"]["http_requests"], 1, "{lang}: {report}");
    }
    assert_eq!(granted.seen(), ["/hello", "/hello", "/hello"], "{lang}");

    // The other one is refused before anything is sent.
    let args = json!({ "url": other.url("/hello"), "unit": "bytes" }).to_string();
    let output = toolhost(&["call", &measure, &args, "--json"]);
    assert_eq!(output.status.code(), Some(1), "{lang}");
    let report: Value = serde_json::from_str(&stdout(&output)).unwrap();
    assert_eq!(report["error"]["kind"], "tool_failed", "{lang}: {report}");
    assert_eq!(report["refused"][0]["target"], other.origin(), "{lang}: {report}");
    assert!(other.seen().is_empty(), "{lang}: nothing reached the server that was not granted");

    // A runaway is stopped by fuel, or by the clock, and the plugin still answers.
    let output = toolhost(&["call", &spin, "{}", "--fuel", "100000000", "--json"]);
    let report: Value = serde_json::from_str(&stdout(&output)).unwrap();
    assert_eq!(report["error"]["kind"], "out_of_fuel", "{lang}: {report}");
    let output = toolhost(&["call", &spin, "{}", "--fuel", "1000000000000", "--timeout", "500ms", "--json"]);
    let report: Value = serde_json::from_str(&stdout(&output)).unwrap();
    assert_eq!(report["error"]["kind"], "timeout", "{lang}: {report}");
    let output = toolhost(&["call", &name, r#"{"text":"still here"}"#]);
    assert!(output.status.success(), "{lang}: {}", stderr(&output));
    // The text block, then the JSON in the plugin's key order: "words" before "characters".
    assert_eq!(stdout(&output), "2 words, 10 characters\n{\n  \"words\": 2,\n  \"characters\": 10\n}\n", "{lang}");
}

#[test]
fn an_author_writes_rust() {
    author("rust");
}

#[test]
fn an_author_writes_python() {
    author("python");
}

#[test]
fn an_author_writes_javascript() {
    author("js");
}

#[test]
fn an_author_writes_c() {
    author("c");
}

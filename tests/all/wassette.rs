//! A Wassette user's folder through the real binary: `wassette_tools`
//! (plugins/testing/wassette_tools, plain WIT interfaces, a policy.yaml
//! beside it, as Wassette's users write components) warned about until its
//! policy is imported, then called with the policy's grants (a folder read
//! at its own path, an ungranted one refused, the policy's host reached and
//! another refused, an environment variable), by `call` and `serve`; the
//! names Wassette gives tools answered with toolhost's; `fs://` grants.

use crate::common;
use common::server::TestServer;
use common::{stderr, stdout, toolhost, toolhost_with_env};
use serde_json::{Value, json};
use std::path::{Path, PathBuf};

/// `plugins/dist-wassette/wassette_tools.wasm`, built by plugins/build.sh.
fn component() -> PathBuf {
    let path = common::plugins_src().join("dist-wassette/wassette_tools.wasm");
    assert!(path.is_file(), "{} is not built: run `bash plugins/build.sh`", path.display());
    path
}

/// A folder laid out as a Wassette user has it: the component, its policy
/// (`NAME.policy.yaml`, as Wassette names a co-located one), a data folder
/// the policy grants and a private one it does not, and a working folder.
struct Folder {
    root: tempfile::TempDir,
}

impl Folder {
    fn new(policy: &str) -> Folder {
        let root = tempfile::tempdir().unwrap();
        for dir in ["plugins", "data", "private", "work"] {
            std::fs::create_dir(root.path().join(dir)).unwrap();
        }
        std::fs::copy(component(), root.path().join("plugins/wassette_tools.wasm")).unwrap();
        std::fs::write(root.path().join("data/a.txt"), "hello from data").unwrap();
        std::fs::write(root.path().join("private/b.txt"), "not yours").unwrap();
        let folder = Folder { root };
        let policy = policy.replace("DATA", &folder.path("data"));
        std::fs::write(folder.root.path().join("plugins/wassette_tools.policy.yaml"), policy).unwrap();
        folder
    }

    fn path(&self, name: &str) -> String {
        std::fs::canonicalize(self.root.path().join(name)).unwrap().display().to_string()
    }

    fn run(&self, args: &[&str]) -> std::process::Output {
        let plugins = self.path("plugins");
        let mut all = vec!["--plugins", plugins.as_str()];
        all.extend_from_slice(args);
        toolhost_with_env(&self.root.path().join("work"), &all, &[("GREETING", "hi there")])
    }
}

fn policy_for(server: &TestServer) -> String {
    format!(
        "# as its author ships it\nversion: \"1.0\"\ndescription: \"wassette_tools\"\npermissions:\n  storage:\n    allow:\n      \
         - uri: \"fs://DATA\"\n        access: [\"read\"]\n  network:\n    allow:\n      - host: \"{}/\"\n  environment:\n    \
         allow:\n      - key: \"GREETING\"\n",
        server.origin()
    )
}

#[test]
fn a_wassette_folder_is_warned_about_until_its_policy_is_imported_then_runs_with_its_grants() {
    let server = TestServer::start();
    let other = TestServer::start();
    let folder = Folder::new(&policy_for(&server));
    let data = folder.path("data");
    let a = format!("{data}/a.txt");

    // Not applied yet: every command that loads the folder names the policy and the fix.
    let listed = folder.run(&["tools"]);
    assert!(listed.status.success(), "{}", stderr(&listed));
    for expected in ["wassette_tools.policy.yaml", "does not apply", "toolhost policy import", &server.origin()] {
        assert!(stderr(&listed).contains(expected), "{expected}: {}", stderr(&listed));
    }
    for tool in ["read-file", "list-folder", "write-file", "get-env", "fetch"] {
        assert!(stdout(&listed).contains(tool), "{tool}: {}", stdout(&listed));
    }
    let refused = folder.run(&["call", "read-file", &json!({ "path": a }).to_string()]);
    assert!(!refused.status.success(), "nothing granted yet: {}", stdout(&refused));
    assert!(stderr(&refused).contains("toolhost policy import"), "{}", stderr(&refused));

    // The name Wassette gives the function is answered with toolhost's.
    let wassette_name = folder.run(&["call", "local_wassette-tools_files_0_1_0_read-file", "{}"]);
    assert!(!wassette_name.status.success());
    assert!(stderr(&wassette_name).contains("did you mean `read-file`?"), "{}", stderr(&wassette_name));

    // Imported: the config holds the grants, each as toolhost writes it.
    let imported = folder.run(&["policy", "import"]);
    assert!(imported.status.success(), "{}{}", stdout(&imported), stderr(&imported));
    for expected in [
        format!("+ http {}", server.origin()),
        format!("+ dirs {data}:{data}:ro"),
        "+ env GREETING".to_owned(),
        "wrote toolhost.toml".to_owned(),
    ] {
        assert!(stdout(&imported).contains(&expected), "{expected}: {}", stdout(&imported));
    }
    let config = std::fs::read_to_string(folder.root.path().join("work/toolhost.toml")).unwrap();
    assert!(config.contains("[plugins.wassette_tools]") && config.contains("# From the Wassette policy"), "{config}");
    let again = folder.run(&["policy", "import"]);
    assert!(stdout(&again).contains("already granted"), "{}", stdout(&again));
    assert_eq!(std::fs::read_to_string(folder.root.path().join("work/toolhost.toml")).unwrap(), config);

    let listed = folder.run(&["tools"]);
    assert!(!stderr(&listed).contains("policy"), "applied now: {}", stderr(&listed));

    // The granted folder, at its own path (the component takes host paths).
    let read = folder.run(&["call", "read-file", &json!({ "path": a }).to_string()]);
    assert!(read.status.success(), "{}", stderr(&read));
    assert!(stdout(&read).contains("hello from data"), "{}", stdout(&read));
    let listed = folder.run(&["call", "list-folder", &json!({ "path": data }).to_string()]);
    assert!(stdout(&listed).contains("a.txt"), "{}{}", stdout(&listed), stderr(&listed));
    let private = format!("{}/b.txt", folder.path("private"));
    let refused = folder.run(&["call", "read-file", &json!({ "path": private }).to_string()]);
    assert!(!refused.status.success() && !stdout(&refused).contains("not yours"), "{}", stdout(&refused));
    assert!(stderr(&refused).contains("cannot read"), "{}", stderr(&refused));
    let written =
        folder.run(&["call", "write-file", &json!({ "path": format!("{data}/new.txt"), "text": "x" }).to_string()]);
    assert!(!written.status.success(), "read-only: {}", stdout(&written));
    assert!(!Path::new(&format!("{data}/new.txt")).exists());

    // The policy's variable, and its host (another is refused).
    let env = folder.run(&["call", "get-env", r#"{"key":"GREETING"}"#]);
    assert!(stdout(&env).contains("hi there"), "{}{}", stdout(&env), stderr(&env));
    let unset = folder.run(&["call", "get-env", r#"{"key":"HOME"}"#]);
    assert!(stdout(&unset).contains("null"), "not granted: {}", stdout(&unset));
    let fetched = folder.run(&["call", "fetch", &json!({ "url": server.url("/hello") }).to_string()]);
    assert!(fetched.status.success() && stdout(&fetched).contains("200"), "{}{}", stdout(&fetched), stderr(&fetched));
    let elsewhere = folder.run(&["call", "fetch", &json!({ "url": other.url("/feed") }).to_string()]);
    assert!(!elsewhere.status.success(), "{}", stdout(&elsewhere));
    assert!(other.seen().is_empty(), "nothing reached the host the policy does not name");

    // `serve`: the same grants, errors as isError, the Wassette name answered.
    let answers = serve(
        &folder,
        &[
            json!({"jsonrpc":"2.0","id":2,"method":"tools/call","params":{"name":"read-file","arguments":{"path":a}}}),
            json!({"jsonrpc":"2.0","id":3,"method":"tools/call","params":{"name":"read-file","arguments":{"path":private}}}),
            json!({"jsonrpc":"2.0","id":4,"method":"tools/call","params":{"name":"local_wassette-tools_web_0_1_0_fetch","arguments":{}}}),
        ],
    );
    assert_ne!(answers[0]["result"]["isError"], json!(true), "{}", answers[0]);
    assert!(answers[0]["result"].to_string().contains("hello from data"), "{}", answers[0]);
    assert_eq!(answers[1]["result"]["isError"], json!(true), "{}", answers[1]);
    assert!(!answers[1].to_string().contains("not yours"));
    let message = answers[2]["error"]["message"].as_str().unwrap_or_default();
    assert!(message.contains("did you mean `fetch`?"), "{}", answers[2]);
}

/// `toolhost serve` over stdio on the folder: the answers to `requests`, in order.
fn serve(folder: &Folder, requests: &[Value]) -> Vec<Value> {
    let mut command = common::stdio::Session::command(&["--plugins", &folder.path("plugins"), "serve"]);
    command.current_dir(folder.root.path().join("work")).env("GREETING", "hi there");
    let mut session = common::stdio::Session::start(command, "wassette-test");
    let answers = requests
        .iter()
        .map(|request| session.ask(request["method"].as_str().unwrap(), request["params"].clone()))
        .collect();
    session.close();
    answers
}

#[test]
fn fs_uris_in_dirs_keep_the_path_and_are_never_a_folder_named_fs() {
    let folder = Folder::new("version: \"1.0\"\npermissions: {}\n");
    let data = folder.path("data");
    let work = folder.root.path().join("work");
    std::fs::write(work.join("toolhost.toml"), format!("[plugins.wassette_tools]\ndirs = [\"fs://{data}\"]\n"))
        .unwrap();
    let read = folder.run(&["call", "read-file", &json!({ "path": format!("{data}/a.txt") }).to_string()]);
    assert!(stdout(&read).contains("hello from data"), "{}{}", stdout(&read), stderr(&read));
    // Relative: refused with the fix, never a folder `fs` beside the config.
    std::fs::write(work.join("toolhost.toml"), "[plugins.wassette_tools]\ndirs = [\"fs://data\"]\n").unwrap();
    let refused = folder.run(&["tools"]);
    assert_eq!(refused.status.code(), Some(2), "{}", stderr(&refused));
    assert!(stderr(&refused).contains("fs:///ABSOLUTE/PATH/data"), "{}", stderr(&refused));
    // A path given bare says how to keep it inside.
    std::fs::write(work.join("toolhost.toml"), format!("[plugins.wassette_tools]\ndirs = [\"{data}\"]\n")).unwrap();
    let refused = folder.run(&["tools"]);
    assert!(stderr(&refused).contains(&format!("`{data}:{data}:ro` (the same path inside")), "{}", stderr(&refused));
}

#[test]
fn a_policy_toolhost_cannot_honour_is_refused_and_nothing_is_written() {
    let folder = Folder::new(
        "version: \"1.0\"\npermissions:\n  network:\n    allow:\n      - host: api.example.com\n    deny:\n      - host: \
         evil.example.com\n",
    );
    let work = folder.root.path().join("work");
    let config = "# mine\n[limits]\nfuel = 5_000_000_000\n";
    std::fs::write(work.join("toolhost.toml"), config).unwrap();
    let refused = folder.run(&["policy", "import"]);
    assert_eq!(refused.status.code(), Some(2));
    assert!(stderr(&refused).contains("no exceptions"), "{}", stderr(&refused));
    assert_eq!(std::fs::read_to_string(work.join("toolhost.toml")).unwrap(), config, "unchanged");
    // The warning at load names the file and why.
    let listed = folder.run(&["tools"]);
    assert!(stderr(&listed).contains("wassette_tools.policy.yaml") && stderr(&listed).contains("no exceptions"));
    // A policy given as the config says what it is.
    let policy = folder.path("plugins/wassette_tools.policy.yaml");
    let wrong = toolhost(&work, &["--config", &policy, "tools"]);
    assert!(stderr(&wrong).contains("toolhost policy import"), "{}", stderr(&wrong));
}

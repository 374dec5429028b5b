//! `toolhost push` and `toolhost pull` against a real OCI registry: Debian's
//! `docker-registry` (the CNCF distribution server), installed by
//! `tests/oci/setup.sh` the first time (a failed install fails the tests) and
//! started by each test on a loopback port with its storage in a temporary
//! folder. Everything goes through the real binary and the real plugins.
//! The signature tests also drive the real `cosign` (Debian 13's 2.5 package,
//! fetched at a pinned version by `tests/oci/cosign.sh` the first time), both
//! ways, offline: every connection it might try beyond this machine goes to a
//! closed port.

use crate::common;

use common::{plugin, stderr, stdout, toolhost_with_env};
use sha2::{Digest, Sha256};
use std::io::{Read, Write};
use std::net::{TcpListener, TcpStream};
use std::path::{Path, PathBuf};
use std::process::{Child, Command, Output, Stdio};
use std::time::{Duration, Instant};

/// Installs docker-registry (once per test binary; setup.sh itself is idempotent).
fn registry_binary() -> &'static str {
    common::install("oci/setup.sh");
    "/usr/bin/docker-registry"
}

/// A registry on 127.0.0.1, its storage in a temporary folder, killed on drop.
pub(crate) struct Registry {
    child: Child,
    port: u16,
    root: tempfile::TempDir,
}

impl Registry {
    pub(crate) fn start() -> Registry {
        Registry::start_with(None, None)
    }

    /// With `htpasswd` (a `user:bcrypt` line), every request needs those
    /// credentials; with `tls` (certificate and key, PEM), it speaks only HTTPS.
    fn start_with(htpasswd: Option<&str>, tls: Option<(&str, &str)>) -> Registry {
        let binary = registry_binary();
        let root = tempfile::tempdir().unwrap();
        let port = TcpListener::bind("127.0.0.1:0").unwrap().local_addr().unwrap().port();
        let auth = match htpasswd {
            Some(line) => {
                let path = root.path().join("htpasswd");
                std::fs::write(&path, format!("{line}\n")).unwrap();
                format!("auth:\n  htpasswd:\n    realm: toolhost-test\n    path: {}\n", path.display())
            }
            None => String::new(),
        };
        let tls = match tls {
            Some((certificate, key)) => {
                std::fs::write(root.path().join("cert.pem"), certificate).unwrap();
                std::fs::write(root.path().join("key.pem"), key).unwrap();
                format!(
                    "  tls:\n    certificate: {}\n    key: {}\n",
                    root.path().join("cert.pem").display(),
                    root.path().join("key.pem").display()
                )
            }
            None => String::new(),
        };
        let config = root.path().join("config.yml");
        std::fs::write(
            &config,
            format!(
                "version: 0.1\nlog:\n  level: error\n  accesslog:\n    disabled: true\nstorage:\n  filesystem:\n    \
                 rootdirectory: {}\n  cache:\n    blobdescriptor: inmemory\n{auth}http:\n  addr: 127.0.0.1:{port}\n{tls}",
                root.path().join("data").display()
            ),
        )
        .unwrap();
        let child = Command::new(binary)
            .arg("serve")
            .arg(&config)
            .stdin(Stdio::null())
            .stdout(Stdio::null())
            .stderr(Stdio::null())
            .spawn()
            .expect("start docker-registry");
        let mut registry = Registry { child, port, root };
        let deadline = Instant::now() + Duration::from_secs(20);
        loop {
            if let Ok((status, _)) = registry.request("GET", "/v2/", &[], b"")
                // 400: an HTTPS registry answering a plain request.
                && (status == 200 || status == 401 || status == 400)
            {
                return registry;
            }
            if let Ok(Some(status)) = registry.child.try_wait() {
                panic!("docker-registry exited at start: {status}");
            }
            assert!(Instant::now() < deadline, "docker-registry did not answer /v2/ within 20 s");
            std::thread::sleep(Duration::from_millis(50));
        }
    }

    pub(crate) fn addr(&self) -> String {
        format!("127.0.0.1:{}", self.port)
    }

    /// Where the registry keeps the blob `digest` (`sha256:…`).
    fn blob_file(&self, digest: &str) -> PathBuf {
        let hex = digest.strip_prefix("sha256:").unwrap();
        self.root.path().join("data/docker/registry/v2/blobs/sha256").join(&hex[..2]).join(hex).join("data")
    }

    /// One plain HTTP/1.1 request; the status and the whole response.
    fn request(
        &self,
        method: &str,
        path: &str,
        headers: &[(&str, &str)],
        body: &[u8],
    ) -> std::io::Result<(u16, String)> {
        let mut stream = TcpStream::connect(("127.0.0.1", self.port))?;
        stream.set_read_timeout(Some(Duration::from_secs(10)))?;
        let mut head = format!(
            "{method} {path} HTTP/1.1\r\nHost: 127.0.0.1:{}\r\nConnection: close\r\nContent-Length: {}\r\n",
            self.port,
            body.len()
        );
        for (name, value) in headers {
            head.push_str(&format!("{name}: {value}\r\n"));
        }
        head.push_str("\r\n");
        stream.write_all(head.as_bytes())?;
        stream.write_all(body)?;
        let mut response = Vec::new();
        stream.read_to_end(&mut response)?;
        let text = String::from_utf8_lossy(&response).into_owned();
        let status = text.split(' ').nth(1).and_then(|code| code.parse().ok()).unwrap_or(0);
        Ok((status, text))
    }

    /// Uploads `bytes` as a blob of `repository`, straight through the
    /// distribution API (to make artifacts toolhost would never push).
    fn upload_blob(&self, repository: &str, bytes: &[u8]) -> String {
        let digest = sha256(bytes);
        let (status, response) = self.request("POST", &format!("/v2/{repository}/blobs/uploads/"), &[], b"").unwrap();
        assert_eq!(status, 202, "{response}");
        let location = response
            .lines()
            .find_map(|line| line.strip_prefix("Location: ").or_else(|| line.strip_prefix("location: ")))
            .expect("an upload location")
            .trim()
            .to_owned();
        let location =
            location.split_once("://").map_or(location.as_str(), |(_, rest)| &rest[rest.find('/').unwrap()..]);
        let separator = if location.contains('?') { '&' } else { '?' };
        let (status, response) = self
            .request(
                "PUT",
                &format!("{location}{separator}digest={digest}"),
                &[("Content-Type", "application/octet-stream")],
                bytes,
            )
            .unwrap();
        assert_eq!(status, 201, "{response}");
        digest
    }
}

impl Drop for Registry {
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}

fn sha256(bytes: &[u8]) -> String {
    let digest = Sha256::digest(bytes);
    format!("sha256:{}", digest.iter().map(|byte| format!("{byte:02x}")).collect::<String>())
}

/// The real binary in `cwd`, with no registry credentials but `env`'s
/// (an empty docker config folder, unless `env` names another).
pub(crate) fn run(cwd: &Path, args: &[&str], env: &[(&str, &str)]) -> Output {
    let docker = tempfile::tempdir().unwrap();
    let docker_config = docker.path().display().to_string();
    let mut all = vec![
        ("DOCKER_CONFIG", docker_config.as_str()),
        ("TOOLHOST_REGISTRY_USERNAME", ""),
        ("TOOLHOST_REGISTRY_PASSWORD", ""),
    ];
    all.extend_from_slice(env);
    toolhost_with_env(cwd, args, &all)
}

pub(crate) fn push(cwd: &Path, file: &Path, reference: &str) -> String {
    let output = run(cwd, &["push", &file.display().to_string(), reference], &[]);
    assert!(output.status.success(), "push failed: {}", stderr(&output));
    let digest = stdout(&output).trim().to_owned();
    assert!(digest.starts_with("sha256:") && digest.len() == 71, "push prints the digest: {digest}");
    digest
}

/// The names in `dir`, sorted, with each file's content.
fn snapshot(dir: &Path) -> Vec<(String, Vec<u8>)> {
    let mut entries: Vec<(String, Vec<u8>)> = std::fs::read_dir(dir)
        .unwrap()
        .map(|entry| {
            let entry = entry.unwrap();
            (entry.file_name().to_string_lossy().into_owned(), std::fs::read(entry.path()).unwrap_or_default())
        })
        .collect();
    entries.sort();
    entries
}

/// A plugins folder with something already in it, to check that a refused pull leaves it alone.
fn occupied_folder() -> tempfile::TempDir {
    let dir = tempfile::tempdir().unwrap();
    std::fs::copy(plugin("echo"), dir.path().join("echo.wasm")).unwrap();
    std::fs::copy(plugin("text"), dir.path().join("hash.wasm")).unwrap();
    dir
}

/// The refusal is one `error:` line, with no Rust Debug dump, and the exit status is not 0.
fn assert_refused(output: &Output, expected: &str) -> String {
    let err = stderr(output);
    assert!(!output.status.success(), "expected a refusal: {err}");
    let lines: Vec<&str> = err.lines().collect();
    assert_eq!(lines.len(), 1, "one line: {err}");
    assert!(lines[0].starts_with("error: ") && lines[0].contains(expected), "expected `{expected}`: {err}");
    for dump in ["Error {", "kind:", "source:", "Some(", "panicked"] {
        assert!(!err.contains(dump), "a Debug dump: {err}");
    }
    err
}

#[test]
fn push_then_pull_by_tag_and_by_digest_into_empty_folders_and_call() {
    let registry = Registry::start();
    let work = tempfile::tempdir().unwrap();
    let reference = format!("{}/plugins/hash:1.0", registry.addr());
    let digest = push(work.path(), &plugin("hash"), &reference);

    // By tag, into a folder that does not exist yet.
    let dir = work.path().join("by-tag");
    let output = run(work.path(), &["pull", &reference, "--dir", &dir.display().to_string()], &[]);
    assert!(output.status.success(), "{}", stderr(&output));
    assert!(stdout(&output).contains(&digest), "{}", stdout(&output));
    assert_eq!(std::fs::read(dir.join("hash.wasm")).unwrap(), std::fs::read(plugin("hash")).unwrap());
    let names: Vec<String> = snapshot(&dir).into_iter().map(|(name, _)| name).collect();
    assert_eq!(names, ["hash.wasm", "toolhost.lock"], "nothing else, no temporary file left");
    let lock = std::fs::read_to_string(dir.join("toolhost.lock")).unwrap();
    assert!(lock.contains(&digest) && lock.contains(&sha256(&std::fs::read(plugin("hash")).unwrap())), "{lock}");
    let call =
        run(work.path(), &["--plugins", &dir.display().to_string(), "call", "sha256", r#"{"text":"hello"}"#], &[]);
    assert!(call.status.success(), "{}", stderr(&call));
    assert!(
        stdout(&call).contains("2cf24dba5fb0a30e26e83b2ac5b9e29e1b161e5c1fa7425e73043362938b9824"),
        "{}",
        stdout(&call)
    );

    // The same again: nothing to do, and it says so.
    let before = snapshot(&dir);
    let again = run(work.path(), &["pull", &reference, "--dir", &dir.display().to_string()], &[]);
    assert!(again.status.success(), "{}", stderr(&again));
    assert!(stdout(&again).contains("unchanged"), "{}", stdout(&again));
    assert_eq!(snapshot(&dir), before);

    // By digest alone, under another name.
    let pinned = format!("{}/plugins/hash@{digest}", registry.addr());
    let dir = work.path().join("by-digest");
    let output = run(work.path(), &["pull", &pinned, "--dir", &dir.display().to_string(), "--name", "digests"], &[]);
    assert!(output.status.success(), "{}", stderr(&output));
    assert_eq!(std::fs::read(dir.join("digests.wasm")).unwrap(), std::fs::read(plugin("hash")).unwrap());
    let call =
        run(work.path(), &["--plugins", &dir.display().to_string(), "call", "sha256", r#"{"text":"hello"}"#], &[]);
    assert!(call.status.success(), "{}", stderr(&call));

    // Tag and digest together.
    let both = format!("{reference}@{digest}");
    let dir = work.path().join("by-both");
    let output = run(work.path(), &["pull", &both, "--dir", &dir.display().to_string()], &[]);
    assert!(output.status.success(), "{}", stderr(&output));
    assert!(dir.join("hash.wasm").is_file());
}

#[test]
fn a_typed_component_is_pushed_and_pulled_like_any_plugin() {
    let registry = Registry::start();
    let work = tempfile::tempdir().unwrap();
    let reference = format!("{}/plugins/typed_shop:1", registry.addr());
    push(work.path(), &plugin("typed_shop"), &reference);
    let dir = tempfile::tempdir().unwrap();
    let output = run(work.path(), &["pull", &reference, "--dir", &dir.path().display().to_string()], &[]);
    assert!(output.status.success(), "{}", stderr(&output));
    let plugins = dir.path().display().to_string();
    let output = run(work.path(), &["--plugins", &plugins, "call", "get-item", r#"{"sku":"A-1"}"#], &[]);
    assert!(output.status.success() && stdout(&output).contains("Anvil"), "{}{}", stdout(&output), stderr(&output));
}

#[test]
fn a_plugin_manifest_travels_in_an_annotation_of_the_one_layer_wasm_artifact() {
    let registry = Registry::start();
    let work = tempfile::tempdir().unwrap();
    let reference = format!("{}/plugins/fetch:2", registry.addr());
    let digest = push(work.path(), &plugin("fetch"), &reference);

    // The artifact has the CNCF Wasm layout: wasm config, the component first.
    let (status, response) = registry
        .request(
            "GET",
            &format!("/v2/plugins/fetch/manifests/{digest}"),
            &[("Accept", "application/vnd.oci.image.manifest.v1+json")],
            b"",
        )
        .unwrap();
    assert_eq!(status, 200, "{response}");
    let body = &response[response.find("\r\n\r\n").unwrap() + 4..];
    let manifest: serde_json::Value = serde_json::from_str(body).unwrap();
    assert_eq!(manifest["mediaType"], "application/vnd.oci.image.manifest.v1+json");
    assert_eq!(manifest["config"]["mediaType"], "application/vnd.wasm.config.v0+json");
    // One layer, as wkg and Wassette expect; the plugin manifest rides in an annotation they ignore.
    assert_eq!(manifest["layers"].as_array().map(Vec::len), Some(1), "{manifest}");
    assert_eq!(manifest["layers"][0]["mediaType"], "application/wasm");
    let shipped = std::fs::read_to_string(plugin("fetch").with_extension("toml")).unwrap();
    assert_eq!(manifest["annotations"]["dev.toolhost.plugin.manifest"], shipped.as_str(), "{manifest}");
    let config = std::fs::read(registry.blob_file(manifest["config"]["digest"].as_str().unwrap())).unwrap();
    let config: serde_json::Value = serde_json::from_slice(&config).unwrap();
    assert_eq!((config["architecture"].as_str(), config["os"].as_str()), (Some("wasm"), Some("wasip2")));
    assert_eq!(config["layerDigests"][0], manifest["layers"][0]["digest"]);
    let exports = config["component"]["exports"].as_array().unwrap();
    assert!(exports.iter().any(|export| export == "toolhost:plugin/tools@0.2.0"), "{config}");

    let dir = tempfile::tempdir().unwrap();
    let output = run(work.path(), &["pull", &reference, "--dir", &dir.path().display().to_string()], &[]);
    assert!(output.status.success(), "{}", stderr(&output));
    let shipped = plugin("fetch").with_extension("toml");
    assert_eq!(std::fs::read(dir.path().join("fetch.toml")).unwrap(), std::fs::read(shipped).unwrap());
    let tools = run(work.path(), &["--plugins", &dir.path().display().to_string(), "tools"], &[]);
    assert!(tools.status.success() && stdout(&tools).contains("fetch"), "{}", stderr(&tools));

    // A new version without a manifest takes away the one the earlier pull wrote.
    let plain = format!("{}/plugins/fetch:3", registry.addr());
    let plain_digest = push(work.path(), &plugin("hash"), &plain);
    // Without a manifest the artifact is the same one-layer shape, without the annotation.
    let (status, response) = registry
        .request(
            "GET",
            &format!("/v2/plugins/fetch/manifests/{plain_digest}"),
            &[("Accept", "application/vnd.oci.image.manifest.v1+json")],
            b"",
        )
        .unwrap();
    assert_eq!(status, 200, "{response}");
    let manifest: serde_json::Value =
        serde_json::from_str(&response[response.find("\r\n\r\n").unwrap() + 4..]).unwrap();
    assert_eq!(manifest["layers"].as_array().map(Vec::len), Some(1), "{manifest}");
    assert_eq!(manifest["layers"][0]["mediaType"], "application/wasm");
    assert!(manifest.get("annotations").is_none_or(|notes| notes.get("dev.toolhost.plugin.manifest").is_none()));
    let output = run(work.path(), &["pull", &plain, "--dir", &dir.path().display().to_string()], &[]);
    assert!(output.status.success(), "{}", stderr(&output));
    let names: Vec<String> = snapshot(dir.path()).into_iter().map(|(name, _)| name).collect();
    assert_eq!(names, ["fetch.wasm", "toolhost.lock"]);
}

#[test]
fn the_config_lists_plugins_by_reference_and_a_bare_pull_syncs_them() {
    let registry = Registry::start();
    let work = tempfile::tempdir().unwrap();
    let hash_digest = push(work.path(), &plugin("hash"), &format!("{}/plugins/hash:1.0", registry.addr()));
    push(work.path(), &plugin("text"), &format!("{}/plugins/text:latest", registry.addr()));
    std::fs::write(
        work.path().join("toolhost.toml"),
        format!(
            "plugins_dir = \"plugins\"\n\
             [plugins.hash]\nsource = \"{0}/plugins/hash:1.0@{hash_digest}\"\n\
             [plugins.words]\nsource = \"{0}/plugins/text\"\n",
            registry.addr()
        ),
    )
    .unwrap();
    let output = run(work.path(), &["pull"], &[]);
    assert!(output.status.success(), "{}", stderr(&output));
    let plugins = work.path().join("plugins");
    assert!(plugins.join("hash.wasm").is_file() && plugins.join("words.wasm").is_file(), "{}", stdout(&output));
    assert_eq!(stdout(&output).matches("pulled").count(), 2, "{}", stdout(&output));
    let call = run(work.path(), &["call", "sha256", r#"{"text":"hello"}"#], &[]);
    assert!(call.status.success(), "{}", stderr(&call));
    assert!(!stderr(&call).contains("warning"), "the folder matches the config: {}", stderr(&call));

    let before = snapshot(&plugins);
    let again = run(work.path(), &["pull"], &[]);
    assert!(again.status.success(), "{}", stderr(&again));
    assert_eq!(stdout(&again).matches("unchanged").count(), 2, "a no-op, said so: {}", stdout(&again));
    assert_eq!(snapshot(&plugins), before);

    // A plugin file changed by hand is noticed at load, and pulled again.
    std::fs::copy(plugin("echo"), plugins.join("words.wasm")).unwrap();
    let tools = run(work.path(), &["tools"], &[]);
    assert!(stderr(&tools).contains("warning: words: words.wasm changed since it was pulled"), "{}", stderr(&tools));
    let repaired = run(work.path(), &["pull"], &[]);
    assert!(repaired.status.success(), "{}", stderr(&repaired));
    assert_eq!(std::fs::read(plugins.join("words.wasm")).unwrap(), std::fs::read(plugin("text")).unwrap());

    // One source that fails: the others are still synced, the failure is one line, the exit status 1.
    let config = std::fs::read_to_string(work.path().join("toolhost.toml")).unwrap();
    std::fs::write(
        work.path().join("toolhost.toml"),
        format!("{config}[plugins.ghost]\nsource = \"{}/plugins/ghost:1\"\n", registry.addr()),
    )
    .unwrap();
    let partly = run(work.path(), &["pull"], &[]);
    assert_eq!(partly.status.code(), Some(1), "{}", stderr(&partly));
    assert_refused(&partly, "ghost:1: not found");
    assert_eq!(stdout(&partly).matches("unchanged").count(), 2, "{}", stdout(&partly));
    assert!(!plugins.join("ghost.wasm").exists());
    let tools = run(work.path(), &["tools"], &[]);
    assert!(stderr(&tools).contains("warning: ghost: the config's source"), "{}", stderr(&tools));
    assert!(!stderr(&tools).contains("words"), "{}", stderr(&tools));
}

#[test]
fn a_tampered_blob_is_refused_and_the_folder_is_unchanged() {
    let registry = Registry::start();
    let work = tempfile::tempdir().unwrap();
    let reference = format!("{}/plugins/hash:1.0", registry.addr());
    push(work.path(), &plugin("hash"), &reference);
    let blob = registry.blob_file(&sha256(&std::fs::read(plugin("hash")).unwrap()));
    let mut bytes = std::fs::read(&blob).unwrap();
    let middle = bytes.len() / 2;
    bytes[middle] ^= 0xff;
    std::fs::write(&blob, bytes).unwrap();

    let dir = occupied_folder();
    let before = snapshot(dir.path());
    let output = run(work.path(), &["pull", &reference, "--dir", &dir.path().display().to_string()], &[]);
    assert_refused(&output, "digest mismatch");
    assert_eq!(snapshot(dir.path()), before, "the folder is exactly as before");
}

#[test]
fn a_wrong_pinned_digest_is_refused_and_the_folder_is_unchanged() {
    let registry = Registry::start();
    let work = tempfile::tempdir().unwrap();
    let reference = format!("{}/plugins/hash:1.0", registry.addr());
    let digest = push(work.path(), &plugin("hash"), &reference);
    let wrong = format!("{reference}@sha256:{}", "0".repeat(64));
    let dir = occupied_folder();
    let before = snapshot(dir.path());
    let output = run(work.path(), &["pull", &wrong, "--dir", &dir.path().display().to_string()], &[]);
    let err = assert_refused(&output, "pinned digest");
    assert!(err.contains(&digest), "says what the tag holds: {err}");
    assert_eq!(snapshot(dir.path()), before);

    // A malformed digest never reaches the registry.
    let output = run(work.path(), &["pull", &format!("{reference}@sha256:abc"), "--dir", "x"], &[]);
    assert_refused(&output, "not a registry reference");
    assert!(!work.path().join("x").exists());
}

#[test]
fn missing_tags_and_repositories_and_a_registry_that_is_down_get_one_clear_line() {
    let registry = Registry::start();
    let work = tempfile::tempdir().unwrap();
    push(work.path(), &plugin("hash"), &format!("{}/plugins/hash:1.0", registry.addr()));
    let dir = occupied_folder();
    let before = snapshot(dir.path());
    let folder = dir.path().display().to_string();
    let cases = [
        (format!("{}/plugins/hash:2.0", registry.addr()), "no tag `2.0`"),
        (format!("{}/plugins/nothing:1.0", registry.addr()), "not found"),
        ("127.0.0.1:1/plugins/hash:1.0".to_owned(), "could not reach the registry at http://127.0.0.1:1"),
        ("ghcr.io/Plugins/Hash".to_owned(), "not a registry reference"),
    ];
    for (reference, expected) in cases {
        let output = run(work.path(), &["pull", &reference, "--dir", &folder], &[]);
        assert_refused(&output, expected);
    }
    let output = run(
        work.path(),
        &["pull", &format!("{}/plugins/hash:1.0", registry.addr()), "--dir", &folder, "--name", "Bad/Name"],
        &[],
    );
    assert_refused(&output, "not a valid plugin name");
    assert_eq!(snapshot(dir.path()), before);
}

#[test]
fn what_is_not_a_component_is_refused_at_push_and_at_pull() {
    let registry = Registry::start();
    let work = tempfile::tempdir().unwrap();
    let text = work.path().join("notes.wasm");
    std::fs::write(&text, "just some text").unwrap();
    let reference = format!("{}/plugins/notes:1", registry.addr());
    let output = run(work.path(), &["push", &text.display().to_string(), &reference], &[]);
    assert_refused(&output, "not a WebAssembly file");
    let output = run(work.path(), &["push", &plugin("not_a_plugin").display().to_string(), &reference], &[]);
    assert_refused(&output, "not a toolhost plugin");
    let (status, _) = registry.request("GET", "/v2/plugins/notes/tags/list", &[], b"").unwrap();
    assert_eq!(status, 404, "nothing was pushed");

    // An artifact in the Wasm layout whose component is not one, made
    // straight through the distribution API.
    let layer = registry.upload_blob("plugins/notes", b"just some text");
    let config = br#"{"architecture":"wasm","os":"wasip2","layerDigests":[]}"#;
    let config_digest = registry.upload_blob("plugins/notes", config);
    let manifest = serde_json::json!({
        "schemaVersion": 2,
        "mediaType": "application/vnd.oci.image.manifest.v1+json",
        "config": {"mediaType": "application/vnd.wasm.config.v0+json", "digest": config_digest, "size": config.len()},
        "layers": [{"mediaType": "application/wasm", "digest": layer, "size": 14}],
    })
    .to_string();
    let (status, response) = registry
        .request(
            "PUT",
            "/v2/plugins/notes/manifests/1",
            &[("Content-Type", "application/vnd.oci.image.manifest.v1+json")],
            manifest.as_bytes(),
        )
        .unwrap();
    assert_eq!(status, 201, "{response}");
    let dir = occupied_folder();
    let before = snapshot(dir.path());
    let output = run(work.path(), &["pull", &reference, "--dir", &dir.path().display().to_string()], &[]);
    assert_refused(&output, "not a WebAssembly file");
    assert_eq!(snapshot(dir.path()), before);

    // A manifest declaring a component larger than toolhost accepts is refused before the download.
    let huge = serde_json::json!({
        "schemaVersion": 2,
        "mediaType": "application/vnd.oci.image.manifest.v1+json",
        "config": {"mediaType": "application/vnd.wasm.config.v0+json", "digest": config_digest, "size": config.len()},
        "layers": [{"mediaType": "application/wasm", "digest": layer, "size": 600u64 << 20}],
    })
    .to_string();
    let (status, response) = registry
        .request(
            "PUT",
            "/v2/plugins/notes/manifests/huge",
            &[("Content-Type", "application/vnd.oci.image.manifest.v1+json")],
            huge.as_bytes(),
        )
        .unwrap();
    assert_eq!(status, 201, "{response}");
    let huge_reference = format!("{}/plugins/notes:huge", registry.addr());
    let output = run(work.path(), &["pull", &huge_reference, "--dir", &dir.path().display().to_string()], &[]);
    assert_refused(&output, "more than the 536870912 bytes toolhost accepts");
    assert_eq!(snapshot(dir.path()), before);
}

/// `reader` / `s3cret-registry-pw`, hashed with bcrypt (what docker-registry's htpasswd takes).
const HTPASSWD: &str = "reader:$2b$05$abcdefghijklmnopqrstuuJLXNwmh0RSxjEum4In3Xp/1wCBcx4Ye";
const PASSWORD: &str = "s3cret-registry-pw";

#[test]
fn credentials_come_from_the_environment_or_the_docker_config_and_are_never_shown() {
    let registry = Registry::start_with(Some(HTPASSWD), None);
    let work = tempfile::tempdir().unwrap();
    let reference = format!("{}/plugins/hash:1.0", registry.addr());
    let file = plugin("hash").display().to_string();

    let output = run(work.path(), &["push", &file, &reference], &[]);
    assert_refused(&output, "TOOLHOST_REGISTRY_USERNAME");
    let env = [("TOOLHOST_REGISTRY_USERNAME", "reader"), ("TOOLHOST_REGISTRY_PASSWORD", "wrong-password")];
    let output = run(work.path(), &["push", &file, &reference], &env);
    assert_refused(&output, "refused the credentials from TOOLHOST_REGISTRY_USERNAME");

    let env = [("TOOLHOST_REGISTRY_USERNAME", "reader"), ("TOOLHOST_REGISTRY_PASSWORD", PASSWORD)];
    let output = run(work.path(), &["-vvv", "push", &file, &reference], &env);
    assert!(output.status.success(), "{}", stderr(&output));
    for shown in [stdout(&output), stderr(&output)] {
        assert!(!shown.contains(PASSWORD), "the password was shown: {shown}");
    }

    // A docker config with a base64 `auth` for the registry.
    let docker = tempfile::tempdir().unwrap();
    use base64::Engine as _;
    let auth = base64::engine::general_purpose::STANDARD.encode(format!("reader:{PASSWORD}"));
    std::fs::write(
        docker.path().join("config.json"),
        format!(r#"{{"auths": {{"http://{}": {{"auth": "{auth}"}}}}}}"#, registry.addr()),
    )
    .unwrap();
    let dir = work.path().join("plugins");
    let docker_config = docker.path().display().to_string();
    let output = run(
        work.path(),
        &["-vvv", "pull", &reference, "--dir", &dir.display().to_string()],
        &[("DOCKER_CONFIG", &docker_config)],
    );
    assert!(output.status.success(), "{}", stderr(&output));
    assert!(dir.join("hash.wasm").is_file());
    for shown in [stdout(&output), stderr(&output)] {
        assert!(!shown.contains(PASSWORD) && !shown.contains(&auth), "the credentials were shown: {shown}");
    }

    let output = run(work.path(), &["pull", &reference, "--dir", &dir.display().to_string(), "--name", "other"], &[]);
    assert_refused(&output, "unauthorized");
}

#[test]
fn a_cache_folder_that_cannot_be_written_does_not_break_a_pulled_plugins_calls() {
    let registry = Registry::start();
    let work = tempfile::tempdir().unwrap();
    let reference = format!("{}/plugins/hash:1.0", registry.addr());
    push(work.path(), &plugin("hash"), &reference);
    let dir = work.path().join("plugins");
    let output = run(work.path(), &["pull", &reference, "--dir", &dir.display().to_string()], &[]);
    assert!(output.status.success(), "{}", stderr(&output));

    // A cache "folder" below a regular file: nothing can be created or written there.
    let blocker = work.path().join("not-a-folder");
    std::fs::write(&blocker, "").unwrap();
    let cache = blocker.join("cache").display().to_string();
    let call = run(
        work.path(),
        &["--plugins", &dir.display().to_string(), "call", "sha256", r#"{"text":"hello"}"#],
        &[("TOOLHOST_CACHE_DIR", &cache)],
    );
    assert!(call.status.success(), "{}", stderr(&call));
    assert!(stdout(&call).contains("2cf24dba"), "{}", stdout(&call));
    for line in stderr(&call).lines().filter(|line| !line.starts_with("ok ·")) {
        assert!(line.starts_with("warning:") || line.contains("WARN"), "at most a warning: {line}");
    }

    // A cache another replica filled, shared read-only (the permissions bind
    // when the tests do not run as root; as root this is a filled cache).
    let shared = work.path().join("shared-cache");
    let cache = shared.display().to_string();
    let args = ["--plugins", &dir.display().to_string(), "call", "sha256", r#"{"text":"hello"}"#];
    let fill = run(work.path(), &args, &[("TOOLHOST_CACHE_DIR", &cache)]);
    assert!(fill.status.success(), "{}", stderr(&fill));
    let set_mode = |mode: u32| {
        use std::os::unix::fs::PermissionsExt;
        for entry in std::fs::read_dir(&shared).unwrap() {
            let path = entry.unwrap().path();
            std::fs::set_permissions(&path, std::fs::Permissions::from_mode(mode & 0o444)).unwrap();
        }
        std::fs::set_permissions(&shared, std::fs::Permissions::from_mode(mode)).unwrap();
    };
    set_mode(0o555);
    let call = run(work.path(), &args, &[("TOOLHOST_CACHE_DIR", &cache)]);
    set_mode(0o755);
    assert!(call.status.success(), "{}", stderr(&call));
    for line in stderr(&call).lines().filter(|line| !line.starts_with("ok ·")) {
        assert!(line.starts_with("warning:") || line.contains("WARN"), "at most a warning: {line}");
    }
}

#[test]
fn pulls_into_one_folder_at_the_same_time_keep_each_others_lock_entries() {
    let registry = Registry::start();
    let work = tempfile::tempdir().unwrap();
    let names = ["hash", "text", "echo", "calc"];
    for name in names {
        push(work.path(), &plugin(name), &format!("{}/plugins/{name}:1", registry.addr()));
    }
    let dir = work.path().join("plugins").display().to_string();
    std::thread::scope(|scope| {
        let pulls: Vec<_> = names
            .iter()
            .map(|name| {
                let reference = format!("{}/plugins/{name}:1", registry.addr());
                let (cwd, dir) = (work.path(), dir.clone());
                scope.spawn(move || run(cwd, &["pull", &reference, "--dir", &dir], &[]))
            })
            .collect();
        for pull in pulls {
            let output = pull.join().unwrap();
            assert!(output.status.success(), "{}", stderr(&output));
        }
    });
    let lock = std::fs::read_to_string(work.path().join("plugins/toolhost.lock")).unwrap();
    for name in names {
        assert!(lock.contains(&format!("[plugins.{name}]")), "{lock}");
    }
    let listed: Vec<String> = snapshot(&work.path().join("plugins")).into_iter().map(|(name, _)| name).collect();
    assert_eq!(listed, ["calc.wasm", "echo.wasm", "hash.wasm", "text.wasm", "toolhost.lock"]);
}

/// A CA made for the test, and a certificate it signed for 127.0.0.1 (PEM: CA, certificate, key).
fn test_ca() -> (String, String, String) {
    use rcgen::{BasicConstraints, CertificateParams, DnType, IsCa, Issuer, KeyPair};
    let ca_key = KeyPair::generate().unwrap();
    let mut ca_params = CertificateParams::new(Vec::<String>::new()).unwrap();
    ca_params.distinguished_name.push(DnType::CommonName, "toolhost registry test CA");
    ca_params.is_ca = IsCa::Ca(BasicConstraints::Unconstrained);
    let root = ca_params.self_signed(&ca_key).unwrap();
    let issuer = Issuer::new(ca_params, ca_key);
    let key = KeyPair::generate().unwrap();
    let params = CertificateParams::new(vec!["127.0.0.1".to_owned(), "localhost".to_owned()]).unwrap();
    let certificate = params.signed_by(&key, &issuer).unwrap();
    (root.pem(), certificate.pem(), key.serialize_pem())
}

#[test]
fn an_https_registry_is_trusted_through_the_configs_ca_file() {
    let (ca, certificate, key) = test_ca();
    let registry = Registry::start_with(None, Some((&certificate, &key)));
    let work = tempfile::tempdir().unwrap();
    let reference = format!("{}/plugins/hash:1.0", registry.addr());
    let file = plugin("hash").display().to_string();

    // Without the CA: refused, saying where to add it (never a fallback to plain HTTP).
    let output = run(work.path(), &["push", &file, &reference], &[]);
    let err = assert_refused(&output, &format!("could not reach the registry at https://{}", registry.addr()));
    assert!(err.contains("certificate") && err.contains("ca_file"), "{err}");

    std::fs::write(work.path().join("ca.pem"), ca).unwrap();
    std::fs::write(work.path().join("toolhost.toml"), "ca_file = \"ca.pem\"\nplugins_dir = \"plugins\"\n").unwrap();
    let digest = push(work.path(), &plugin("hash"), &reference);
    let output = run(work.path(), &["pull", &format!("{reference}@{digest}")], &[]);
    assert!(output.status.success(), "{}", stderr(&output));
    let call = run(work.path(), &["call", "sha256", r#"{"text":"hello"}"#], &[]);
    assert!(call.status.success(), "{}", stderr(&call));
}

/// A registry that lies, on 127.0.0.1: each request's path goes to `answer`,
/// whose bytes are sent back raw before the connection is closed. Stops when dropped.
struct Hostile {
    port: u16,
    stop: std::sync::Arc<std::sync::atomic::AtomicBool>,
    thread: Option<std::thread::JoinHandle<()>>,
}

impl Hostile {
    fn start(answer: impl Fn(&str) -> Vec<u8> + Send + 'static) -> Hostile {
        use std::sync::atomic::{AtomicBool, Ordering};
        let listener = TcpListener::bind("127.0.0.1:0").unwrap();
        listener.set_nonblocking(true).unwrap();
        let port = listener.local_addr().unwrap().port();
        let stop = std::sync::Arc::new(AtomicBool::new(false));
        let stopped = stop.clone();
        let thread = std::thread::spawn(move || {
            while !stopped.load(Ordering::Relaxed) {
                let Ok((mut stream, _)) = listener.accept() else {
                    std::thread::sleep(Duration::from_millis(10));
                    continue;
                };
                let _ = stream.set_nonblocking(false);
                let _ = stream.set_read_timeout(Some(Duration::from_millis(300)));
                let mut request = Vec::new();
                let mut buffer = [0u8; 4096];
                while !request.windows(4).any(|window| window == b"\r\n\r\n") {
                    match stream.read(&mut buffer) {
                        Ok(0) | Err(_) => break,
                        Ok(read) => request.extend_from_slice(&buffer[..read]),
                    }
                }
                let text = String::from_utf8_lossy(&request).into_owned();
                // A TLS hello (the HTTPS probe) is not HTTP: just close.
                let Some(path) = text.strip_prefix("GET ").and_then(|rest| rest.split(' ').next()) else { continue };
                let _ = stream.write_all(&answer(path));
            }
        });
        Hostile { port, stop, thread: Some(thread) }
    }
}

impl Drop for Hostile {
    fn drop(&mut self) {
        self.stop.store(true, std::sync::atomic::Ordering::Relaxed);
        if let Some(thread) = self.thread.take() {
            let _ = thread.join();
        }
    }
}

#[test]
fn a_hostile_registry_cannot_make_toolhost_read_more_than_it_declares() {
    let work = tempfile::tempdir().unwrap();
    let dir = occupied_folder();
    let before = snapshot(dir.path());
    let folder = dir.path().display().to_string();
    let ok = |body: &[u8], content_type: &str, length: bool| {
        let mut response =
            format!("HTTP/1.1 200 OK\r\nContent-Type: {content_type}\r\nConnection: close\r\n").into_bytes();
        if length {
            response.extend_from_slice(format!("Content-Length: {}\r\n", body.len()).as_bytes());
        }
        response.extend_from_slice(b"\r\n");
        response.extend_from_slice(body);
        response
    };

    // An endless manifest (no length given): cut off at 4 MiB.
    let endless = Hostile::start(move |path| match path {
        "/v2/" => ok(b"{}", "application/json", true),
        _ => ok(&vec![b' '; 5 << 20], "application/vnd.oci.image.manifest.v1+json", false),
    });
    let output = run(work.path(), &["pull", &format!("127.0.0.1:{}/x/hash:1", endless.port), "--dir", &folder], &[]);
    assert_refused(&output, "larger than 4194304 bytes");
    drop(endless);

    // A layer declared 100 bytes long that goes on for a mebibyte.
    let small = vec![7u8; 100];
    let layer_digest = sha256(&small);
    let manifest = serde_json::json!({
        "schemaVersion": 2,
        "mediaType": "application/vnd.oci.image.manifest.v1+json",
        "config": {"mediaType": "application/vnd.wasm.config.v0+json", "digest": layer_digest, "size": 100},
        "layers": [{"mediaType": "application/wasm", "digest": layer_digest, "size": 100}],
    })
    .to_string();
    let liar = Hostile::start(move |path| match path {
        "/v2/" => ok(b"{}", "application/json", true),
        path if path.contains("/manifests/") => {
            ok(manifest.as_bytes(), "application/vnd.oci.image.manifest.v1+json", true)
        }
        _ => ok(&vec![7u8; 1 << 20], "application/octet-stream", false),
    });
    let output = run(work.path(), &["pull", &format!("127.0.0.1:{}/x/hash:1", liar.port), "--dir", &folder], &[]);
    assert_refused(&output, "more bytes for the layer");
    drop(liar);

    // A manifest whose Docker-Content-Digest is not its content's.
    let claimed = sha256(b"something else");
    let forger = Hostile::start(move |path| match path {
        "/v2/" => ok(b"{}", "application/json", true),
        _ => {
            let mut response = ok(b"{}", "application/vnd.oci.image.manifest.v1+json", true);
            let at = response.windows(2).position(|window| window == b"\r\n").unwrap() + 2;
            response.splice(at..at, format!("Docker-Content-Digest: {claimed}\r\n").into_bytes());
            response
        }
    });
    let output = run(work.path(), &["pull", &format!("127.0.0.1:{}/x/hash:1", forger.port), "--dir", &folder], &[]);
    assert_refused(&output, "digest mismatch: the registry says the manifest is");
    assert_eq!(snapshot(dir.path()), before);
}

// Signatures: cosign's key-based format, both ways, with the real `cosign`.

/// cosign (Debian 13's 2.5 package), installed by `tests/oci/cosign.sh` the first time.
fn cosign_binary() -> PathBuf {
    common::install("oci/cosign.sh");
    Path::new(env!("CARGO_MANIFEST_DIR")).join("../tests/oci/.tools/cosign/usr/bin/cosign")
}

/// The password of every key pair `key_pair` makes.
const KEY_PASSWORD: &str = "correct horse battery staple";

/// Runs cosign in `cwd` with the keys' password, no registry credentials, its
/// home in `cwd`, and every connection but to this machine sent to a closed
/// port (so nothing reaches the internet, whatever cosign tries).
fn cosign(cwd: &Path, args: &[&str]) -> Output {
    let docker = cwd.join(".docker");
    std::fs::create_dir_all(&docker).unwrap();
    Command::new(cosign_binary())
        .args(args)
        .current_dir(cwd)
        .env("COSIGN_PASSWORD", KEY_PASSWORD)
        .env("HOME", cwd)
        .env("DOCKER_CONFIG", &docker)
        .env("HTTPS_PROXY", "http://127.0.0.1:9")
        .env("HTTP_PROXY", "http://127.0.0.1:9")
        .env("NO_PROXY", "127.0.0.1,localhost")
        .stdin(Stdio::null())
        .output()
        .expect("run cosign")
}

/// `cosign generate-key-pair` in `dir/name/`: the paths of cosign.key and cosign.pub.
pub(crate) fn key_pair(dir: &Path, name: &str) -> (PathBuf, PathBuf) {
    let folder = dir.join(name);
    std::fs::create_dir_all(&folder).unwrap();
    let output = cosign(&folder, &["generate-key-pair"]);
    assert!(output.status.success(), "cosign generate-key-pair: {}", stderr(&output));
    (folder.join("cosign.key"), folder.join("cosign.pub"))
}

/// `cosign sign --key KEY REFERENCE`, offline (no transparency log), over plain HTTP.
pub(crate) fn cosign_sign(cwd: &Path, key: &Path, reference: &str) {
    let key = key.display().to_string();
    let args = [
        "sign",
        "--key",
        &key,
        "--tlog-upload=false",
        "--allow-insecure-registry",
        "--allow-http-registry",
        "--yes",
        reference,
    ];
    let output = cosign(cwd, &args);
    assert!(output.status.success(), "cosign sign: {}{}", stdout(&output), stderr(&output));
}

/// `cosign verify --key PUB REFERENCE`, offline, over plain HTTP.
fn cosign_verify(cwd: &Path, public: &Path, reference: &str) -> Output {
    let public = public.display().to_string();
    let args = [
        "verify",
        "--key",
        &public,
        "--insecure-ignore-tlog",
        "--allow-insecure-registry",
        "--allow-http-registry",
        reference,
    ];
    cosign(cwd, &args)
}

/// `sha256:` and the SHA-256 of a PEM public key's DER: its fingerprint.
pub(crate) fn fingerprint(public: &Path) -> String {
    use base64::Engine as _;
    let text = std::fs::read_to_string(public).unwrap();
    let body: String = text.lines().filter(|line| !line.starts_with("-----")).collect();
    sha256(&base64::engine::general_purpose::STANDARD.decode(body).unwrap())
}

/// The signatures manifest of `digest` in `repository`, as JSON.
fn signatures(registry: &Registry, repository: &str, digest: &str) -> serde_json::Value {
    let tag = format!("{}.sig", digest.replace(':', "-"));
    let (status, response) = registry
        .request(
            "GET",
            &format!("/v2/{repository}/manifests/{tag}"),
            &[("Accept", "application/vnd.oci.image.manifest.v1+json")],
            b"",
        )
        .unwrap();
    assert_eq!(status, 200, "{response}");
    serde_json::from_str(&response[response.find("\r\n\r\n").unwrap() + 4..]).unwrap()
}

/// Stores `manifest` as the signatures of `digest` in `repository`, straight through the API.
fn put_signatures(registry: &Registry, repository: &str, digest: &str, manifest: &serde_json::Value) {
    let tag = format!("{}.sig", digest.replace(':', "-"));
    let (status, response) = registry
        .request(
            "PUT",
            &format!("/v2/{repository}/manifests/{tag}"),
            &[("Content-Type", "application/vnd.oci.image.manifest.v1+json")],
            manifest.to_string().as_bytes(),
        )
        .unwrap();
    assert_eq!(status, 201, "{response}");
}

/// A `toolhost.toml` in `work` trusting `keys` for every repository under `REGISTRY/plugins/`.
pub(crate) fn trust(work: &Path, registry: &Registry, keys: &[&Path], require: bool) {
    let keys: Vec<String> = keys.iter().map(|key| format!("{:?}", key.display().to_string())).collect();
    std::fs::write(
        work.join("toolhost.toml"),
        format!(
            "plugins_dir = \"plugins\"\n[[trust]]\nscope = \"{}/plugins/*\"\nkeys = [{}]\nrequire = {require}\n",
            registry.addr(),
            keys.join(", ")
        ),
    )
    .unwrap();
}

#[test]
fn a_plugin_signed_by_cosign_is_accepted_by_pull_and_its_signer_is_locked() {
    let registry = Registry::start();
    let work = tempfile::tempdir().unwrap();
    let (key, public) = key_pair(work.path(), "publisher");
    let reference = format!("{}/plugins/hash:1.0", registry.addr());
    let digest = push(work.path(), &plugin("hash"), &reference);
    cosign_sign(work.path(), &key, &format!("{}/plugins/hash@{digest}", registry.addr()));
    trust(work.path(), &registry, &[Path::new("publisher/cosign.pub")], true);

    let output = run(work.path(), &["pull", &reference], &[]);
    assert!(output.status.success(), "{}", stderr(&output));
    let said = format!("signature verified with publisher/cosign.pub ({})", fingerprint(&public));
    assert!(stdout(&output).starts_with("pulled hash") && stdout(&output).contains(&said), "{}", stdout(&output));
    let lock = std::fs::read_to_string(work.path().join("plugins/toolhost.lock")).unwrap();
    let signer =
        format!("[plugins.hash.signer]\nkey = \"publisher/cosign.pub\"\nfingerprint = \"{}\"", fingerprint(&public));
    assert!(lock.contains(&digest) && lock.contains(&signer), "{lock}");
    let call = run(work.path(), &["call", "sha256", r#"{"text":"hello"}"#], &[]);
    assert!(call.status.success() && stdout(&call).contains("2cf24dba"), "{}", stderr(&call));
    assert!(!stderr(&call).contains("warning"), "{}", stderr(&call));

    // Pulled again: verified again, nothing written, and it says so.
    let before = snapshot(&work.path().join("plugins"));
    let again = run(work.path(), &["pull", &reference], &[]);
    assert!(again.status.success(), "{}", stderr(&again));
    assert!(stdout(&again).starts_with("unchanged hash") && stdout(&again).contains(&said), "{}", stdout(&again));
    assert_eq!(snapshot(&work.path().join("plugins")), before);

    // Where the scope does not require signatures, an unsigned plugin is taken, and said to be unsigned.
    let unsigned = format!("{}/plugins/text:1", registry.addr());
    push(work.path(), &plugin("text"), &unsigned);
    trust(work.path(), &registry, &[Path::new("publisher/cosign.pub")], false);
    let output = run(work.path(), &["pull", &unsigned], &[]);
    assert!(output.status.success(), "{}", stderr(&output));
    assert!(stdout(&output).contains("not signed, accepted"), "{}", stdout(&output));
    let lock = std::fs::read_to_string(work.path().join("plugins/toolhost.lock")).unwrap();
    assert!(!lock.contains("[plugins.text.signer]"), "{lock}");

    // Once the scope requires signatures, every command that loads the folder says what was pulled without one.
    trust(work.path(), &registry, &[Path::new("publisher/cosign.pub")], true);
    let config = std::fs::read_to_string(work.path().join("toolhost.toml")).unwrap();
    std::fs::write(
        work.path().join("toolhost.toml"),
        format!("{config}[plugins.text]\nsource = \"{unsigned}\"\n[plugins.hash]\nsource = \"{reference}\"\n"),
    )
    .unwrap();
    let tools = run(work.path(), &["tools"], &[]);
    assert!(tools.status.success(), "{}", stderr(&tools));
    let shown = stderr(&tools);
    let warnings: Vec<&str> = shown.lines().filter(|line| line.starts_with("warning:")).collect();
    assert_eq!(warnings.len(), 1, "{}", stderr(&tools));
    assert!(warnings[0].contains("text: ") && warnings[0].contains("without a verified signature"), "{}", warnings[0]);
}

#[test]
fn a_plugin_signed_by_toolhost_push_passes_cosign_verify_and_signatures_accumulate() {
    let registry = Registry::start();
    let work = tempfile::tempdir().unwrap();
    let (key, public) = key_pair(work.path(), "publisher");
    let (other_key, other_public) = key_pair(work.path(), "other");
    let reference = format!("{}/plugins/hash:1.0", registry.addr());
    let file = plugin("hash").display().to_string();
    let key_arg = key.display().to_string();
    // A fixed `created` time: the same plugin pushed again is the same artifact.
    let epoch = ("SOURCE_DATE_EPOCH", "1700000000");
    let output =
        run(work.path(), &["push", "--sign", &key_arg, &file, &reference], &[("COSIGN_PASSWORD", KEY_PASSWORD), epoch]);
    assert!(output.status.success(), "{}", stderr(&output));
    let digest = stdout(&output).trim().to_owned();
    let said = format!("signed {digest} with {key_arg} ({})", fingerprint(&public));
    assert!(stderr(&output).contains(&said), "{}", stderr(&output));

    let verified = cosign_verify(work.path(), &public, &reference);
    assert!(verified.status.success(), "cosign verify: {}{}", stdout(&verified), stderr(&verified));
    assert!(stdout(&verified).contains(&format!("\"docker-manifest-digest\":\"{digest}\"")), "{}", stdout(&verified));
    let refused = cosign_verify(work.path(), &other_public, &reference);
    assert!(!refused.status.success(), "cosign checks the key: {}", stdout(&refused));

    // The signature is stored as cosign stores it: one simple-signing layer, the signature in an annotation.
    let manifest = signatures(&registry, "plugins/hash", &digest);
    assert_eq!(manifest["mediaType"], "application/vnd.oci.image.manifest.v1+json");
    assert_eq!(manifest["layers"].as_array().map(Vec::len), Some(1), "{manifest}");
    let layer = &manifest["layers"][0];
    assert_eq!(layer["mediaType"], "application/vnd.dev.cosign.simplesigning.v1+json");
    assert!(layer["annotations"]["dev.cosignproject.cosign/signature"].is_string(), "{manifest}");

    // cosign appends its signature to toolhost's, and toolhost to both.
    cosign_sign(work.path(), &other_key, &format!("{}/plugins/hash@{digest}", registry.addr()));
    let pkcs8 = rcgen::KeyPair::generate().unwrap();
    std::fs::write(work.path().join("plain.key"), pkcs8.serialize_pem()).unwrap();
    std::fs::write(work.path().join("plain.pub"), pkcs8.public_key_pem()).unwrap();
    // Written 0644 (the umask's): a private key others can read is not used, and nothing is pushed.
    let output = run(work.path(), &["push", "--sign", "plain.key", &file, &reference], &[epoch]);
    assert!(!output.status.success(), "{}", stdout(&output));
    let err = stderr(&output);
    assert!(
        err.contains("could not use the signing key plain.key")
            && err.contains("(mode 0644)")
            && err.contains("nothing was pushed"),
        "{err}"
    );
    std::fs::set_permissions(work.path().join("plain.key"), std::os::unix::fs::PermissionsExt::from_mode(0o600))
        .unwrap();
    let output = run(work.path(), &["push", "--sign", "plain.key", &file, &reference], &[epoch]);
    assert!(output.status.success(), "{}", stderr(&output));
    assert_eq!(stdout(&output).trim(), digest, "the same artifact again");
    assert_eq!(signatures(&registry, "plugins/hash", &digest)["layers"].as_array().map(Vec::len), Some(3));
    for public in [public, other_public, work.path().join("plain.pub")] {
        let verified = cosign_verify(work.path(), &public, &reference);
        assert!(verified.status.success(), "{}: {}", public.display(), stderr(&verified));
    }
    // And toolhost accepts any one of them it trusts.
    trust(work.path(), &registry, &[Path::new("plain.pub")], true);
    let output = run(work.path(), &["pull", &reference], &[]);
    assert!(output.status.success(), "{}", stderr(&output));
    assert!(stdout(&output).contains("signature verified with plain.pub"), "{}", stdout(&output));
}

#[test]
fn unsigned_wrongly_signed_and_tampered_plugins_are_refused_leaving_the_folder_and_lock_alone() {
    let registry = Registry::start();
    let work = tempfile::tempdir().unwrap();
    let (key, _) = key_pair(work.path(), "publisher");
    let (other_key, _) = key_pair(work.path(), "other");
    let repository = |name: &str| format!("{}/plugins/{name}", registry.addr());

    // A folder holding a verified plugin, with its lock.
    let signed = push(work.path(), &plugin("hash"), &format!("{}:1", repository("hash")));
    cosign_sign(work.path(), &key, &format!("{}@{signed}", repository("hash")));
    trust(work.path(), &registry, &[Path::new("publisher/cosign.pub")], true);
    let output = run(work.path(), &["pull", &format!("{}:1", repository("hash"))], &[]);
    assert!(output.status.success(), "{}", stderr(&output));
    let folder = work.path().join("plugins");
    let before = snapshot(&folder);
    let refused = |reference: &str, expected: &str| {
        let output = run(work.path(), &["pull", reference], &[]);
        let err = assert_refused(&output, expected);
        assert!(err.contains(reference) && err.contains("nothing was written"), "{err}");
        assert_eq!(snapshot(&folder), before, "the folder and its lock are as they were");
        err
    };

    // Unsigned, where signatures are required.
    let unsigned = push(work.path(), &plugin("text"), &format!("{}:2", repository("hash")));
    let err = refused(&format!("{}:2", repository("hash")), "not signed");
    assert!(err.contains("requires one") && err.contains("--sign"), "{err}");
    // Every other spelling of the registry falls under the same scope.
    let port = registry.addr().rsplit(':').next().unwrap().to_owned();
    let spelled = |reference: &str| {
        let output = run(work.path(), &["pull", reference], &[]);
        let err = assert_refused(&output, "not signed");
        assert!(err.contains("nothing was written"), "{reference}: {err}");
        assert_eq!(snapshot(&folder), before, "{reference}: the folder and its lock are as they were");
    };
    for host in ["127.1", "2130706433", "0x7f000001", "0177.0.0.1"] {
        spelled(&format!("{host}:{port}/plugins/hash:2"));
    }
    // A scope written for `localhost` covers `LOCALHOST` too.
    let config = std::fs::read_to_string(work.path().join("toolhost.toml")).unwrap();
    std::fs::write(
        work.path().join("toolhost.toml"),
        format!("{config}[[trust]]\nscope = \"localhost:{port}/plugins/*\"\nkeys = [\"publisher/cosign.pub\"]\n"),
    )
    .unwrap();
    spelled(&format!("LOCALHOST:{port}/plugins/hash:2"));
    std::fs::write(work.path().join("toolhost.toml"), config).unwrap();

    // Signed, with a key the config does not trust.
    let other = push(work.path(), &plugin("echo"), &format!("{}:3", repository("hash")));
    cosign_sign(work.path(), &other_key, &format!("{}@{other}", repository("hash")));
    let err = refused(&format!("{}:3", repository("hash")), "signature not trusted");
    assert!(err.contains("publisher/cosign.pub") && err.contains("add the signer's public key"), "{err}");
    // Refused as well where an unsigned plugin would be accepted: a signature that is there must verify.
    trust(work.path(), &registry, &[Path::new("publisher/cosign.pub")], false);
    refused(&format!("{}:3", repository("hash")), "signature not trusted");
    trust(work.path(), &registry, &[Path::new("publisher/cosign.pub")], true);

    // A valid signature copied from another artifact: it names the other digest.
    let genuine = signatures(&registry, "plugins/hash", &signed);
    put_signatures(&registry, "plugins/hash", &unsigned, &genuine);
    let err = refused(&format!("{}:2", repository("hash")), "tampered signature");
    assert!(err.contains(&format!("is for {signed}, not {unsigned}")), "{err}");

    // A signature changed in the manifest: it verifies with no key.
    let mut altered = genuine.clone();
    let text = altered["layers"][0]["annotations"]["dev.cosignproject.cosign/signature"].as_str().unwrap().to_owned();
    let swapped: String = text.chars().rev().collect();
    altered["layers"][0]["annotations"]["dev.cosignproject.cosign/signature"] = swapped.into();
    put_signatures(&registry, "plugins/hash", &signed, &altered);
    let err = refused(&format!("{}:1", repository("hash")), "signature not trusted");
    assert!(err.contains("or altered"), "{err}");

    // A payload blob changed in the registry's storage: its digest no longer matches.
    put_signatures(&registry, "plugins/hash", &signed, &genuine);
    let payload = registry.blob_file(genuine["layers"][0]["digest"].as_str().unwrap());
    let original = std::fs::read(&payload).unwrap();
    std::fs::write(&payload, String::from_utf8(original.clone()).unwrap().replace(&signed, &unsigned)).unwrap();
    let err = refused(&format!("{}:1", repository("hash")), "tampered signature: digest mismatch");
    assert!(err.contains("signature payload"), "{err}");
    std::fs::write(&payload, &original).unwrap();

    // A trusted key file that cannot be read: said, and nothing written.
    trust(work.path(), &registry, &[Path::new("publisher/missing.pub")], true);
    let err = refused(&format!("{}:1", repository("hash")), "could not read the public key publisher/missing.pub");
    assert!(err.contains("[[trust]]"), "{err}");

    // With the trusted key back, the genuine one is still accepted.
    trust(work.path(), &registry, &[Path::new("publisher/cosign.pub")], true);
    let output = run(work.path(), &["pull", &format!("{}:1", repository("hash"))], &[]);
    assert!(output.status.success(), "{}", stderr(&output));

    // A narrower scope with no keys and `require = false` exempts its repository from the broader rule.
    let config = std::fs::read_to_string(work.path().join("toolhost.toml")).unwrap();
    let exempt = format!("{config}[[trust]]\nscope = \"{}\"\nrequire = false\n", repository("hash"));
    std::fs::write(work.path().join("toolhost.toml"), exempt).unwrap();
    let output = run(work.path(), &["pull", &format!("{}:2", repository("hash"))], &[]);
    assert!(output.status.success(), "{}", stderr(&output));
    assert!(!stdout(&output).contains("signature"), "nothing checked, nothing said: {}", stdout(&output));
    let lock = std::fs::read_to_string(folder.join("toolhost.lock")).unwrap();
    assert!(lock.contains(&unsigned) && !lock.contains("[plugins.hash.signer]"), "{lock}");
}

#[test]
fn a_signing_key_that_cannot_sign_stops_the_push_before_anything_is_sent() {
    let registry = Registry::start();
    let work = tempfile::tempdir().unwrap();
    let (key, public) = key_pair(work.path(), "publisher");
    std::fs::write(work.path().join("garbage.key"), "not a key").unwrap();
    std::fs::set_permissions(work.path().join("garbage.key"), std::os::unix::fs::PermissionsExt::from_mode(0o600))
        .unwrap();
    let reference = format!("{}/plugins/hash:1.0", registry.addr());
    let file = plugin("hash").display().to_string();
    let key = key.display().to_string();
    let public = public.display().to_string();
    let cases = [
        (key.as_str(), Some("wrong"), "the password in COSIGN_PASSWORD is wrong"),
        (key.as_str(), None, "it is encrypted: set COSIGN_PASSWORD"),
        (public.as_str(), None, "it is a public key"),
        ("garbage.key", None, "not a PEM file"),
        ("missing.key", None, "could not use the signing key missing.key: no such file"),
    ];
    for (key, password, expected) in cases {
        let docker = tempfile::tempdir().unwrap();
        let mut command = Command::new(env!("CARGO_BIN_EXE_toolhost"));
        command
            .args(["push", "--sign", key, &file, &reference])
            .current_dir(work.path())
            .env("TOOLHOST_CACHE_DIR", common::shared_cache())
            .env("DOCKER_CONFIG", docker.path())
            .env_remove("TOOLHOST_CONFIG")
            .env_remove("COSIGN_PASSWORD");
        if let Some(password) = password {
            command.env("COSIGN_PASSWORD", password);
        }
        let output = command.output().unwrap();
        let err = assert_refused(&output, expected);
        assert!(err.contains("nothing was pushed"), "{err}");
        let (status, _) = registry.request("GET", "/v2/plugins/hash/tags/list", &[], b"").unwrap();
        assert_eq!(status, 404, "nothing was pushed: {key}");
    }
}

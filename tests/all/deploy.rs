//! The Kubernetes manifests in `deploy/` are valid: every object against the
//! Kubernetes JSON schemas of the version below, strictly (an unknown or
//! misspelt field fails), offline, with `kubernetes-validate` (installed,
//! pinned, by `tests/deploy/setup.sh`); and the `toolhost.toml` their
//! ConfigMap mounts is one the real binary accepts. A manifest edited into
//! something Kubernetes would refuse fails here, and so does a broken copy
//! (checked, so that the validator is known to look).

use crate::common;

use std::path::{Path, PathBuf};
use std::process::{Command, Output};

/// The Kubernetes version the manifests are checked against.
const KUBERNETES: &str = "1.33.0";

fn repository() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("..")
}

fn tools() -> PathBuf {
    common::install("deploy/setup.sh");
    repository().join("tests/deploy/.tools/venv/bin")
}

fn validate(files: &[PathBuf]) -> Output {
    Command::new(tools().join("kubernetes-validate"))
        .args(["--strict", "--kubernetes-version", KUBERNETES])
        .args(files)
        .output()
        .expect("run kubernetes-validate")
}

fn manifests() -> Vec<PathBuf> {
    let mut files: Vec<PathBuf> = std::fs::read_dir(repository().join("deploy"))
        .unwrap()
        .map(|entry| entry.unwrap().path())
        .filter(|path| path.extension().is_some_and(|ext| ext == "yaml"))
        .collect();
    files.sort();
    files
}

#[test]
fn every_manifest_is_valid_kubernetes_and_names_the_probes_and_the_store() {
    let files = manifests();
    assert!(files.len() >= 2, "deploy/ holds {files:?}");
    let output = validate(&files);
    let report = format!("{}{}", String::from_utf8_lossy(&output.stdout), String::from_utf8_lossy(&output.stderr));
    assert!(output.status.success(), "{report}");
    for kind in ["deployment/toolhost", "service/toolhost", "configmap/toolhost-config", "secret/toolhost-secrets"] {
        assert!(report.contains(&format!("passed for resource {kind}")), "{kind} was not checked:\n{report}");
    }
    let toolhost = std::fs::read_to_string(repository().join("deploy/toolhost.yaml")).unwrap();
    for needed in ["path: /readyz", "path: /healthz", "[state]", "password_file = \"/secrets/valkey/password\""] {
        assert!(toolhost.contains(needed), "deploy/toolhost.yaml has no `{needed}`");
    }
    assert!(!toolhost.contains("sessionAffinity"), "the Service must be plain round robin");
}

#[test]
fn a_misspelt_field_fails_the_validation() {
    let folder = tempfile::tempdir().unwrap();
    let broken = folder.path().join("toolhost.yaml");
    let text = std::fs::read_to_string(repository().join("deploy/toolhost.yaml")).unwrap();
    std::fs::write(&broken, text.replacen("path: /readyz", "pth: /readyz", 1)).unwrap();
    let output = validate(&[broken]);
    assert!(!output.status.success());
    assert!(String::from_utf8_lossy(&output.stdout).contains("'pth' was unexpected"), "{output:?}");
}

#[test]
fn the_mounted_config_is_one_toolhost_accepts() {
    let folder = tempfile::tempdir().unwrap();
    let config = folder.path().join("toolhost.toml");
    let extract = Command::new(tools().join("python"))
        .args([
            "-c",
            "import sys, yaml\n\
             docs = [d for d in yaml.safe_load_all(open(sys.argv[1])) if d and d['kind'] == 'ConfigMap']\n\
             open(sys.argv[2], 'w').write(docs[0]['data']['toolhost.toml'])",
        ])
        .arg(repository().join("deploy/toolhost.yaml"))
        .arg(&config)
        .output()
        .expect("run python");
    assert!(extract.status.success(), "{extract:?}");
    let plugins = folder.path().join("plugins");
    std::fs::create_dir(&plugins).unwrap();
    let output = Command::new(env!("CARGO_BIN_EXE_toolhost"))
        .arg("--config")
        .arg(&config)
        .arg("--plugins")
        .arg(&plugins)
        .arg("tools")
        .output()
        .expect("run toolhost");
    let stderr = String::from_utf8_lossy(&output.stderr);
    assert!(output.status.success(), "{stderr}");
    // The one plugin it names is pinned by digest and not pulled here.
    assert!(stderr.contains("has not been pulled"), "{stderr}");

    // The same check refuses a config with a misspelt key.
    let text = std::fs::read_to_string(&config).unwrap();
    std::fs::write(&config, text.replace("on_unavailable", "on_unavailabel")).unwrap();
    let output = Command::new(env!("CARGO_BIN_EXE_toolhost"))
        .arg("--config")
        .arg(&config)
        .arg("--plugins")
        .arg(&plugins)
        .arg("tools")
        .output()
        .unwrap();
    assert!(!output.status.success());
    assert!(String::from_utf8_lossy(&output.stderr).contains("on_unavailabel"), "{output:?}");
}

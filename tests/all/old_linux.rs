//! The binary `make dist` ships for glibc (the wheel's, linked by zig against
//! glibc 2.17: `make wheel`, see the Makefile), run on an older Linux than
//! this machine's: Debian 11's C library (glibc 2.31, the oldest Debian still
//! on deb.debian.org), unpacked by tests/old-linux/setup.sh, through that
//! root's own loader, so that no library of this machine is used. It must
//! ask for no glibc symbol newer than 2.17, load nothing from outside that
//! root, compile and call a real plugin, and serve the official MCP client.

use crate::common::{self, plugin_dir, stderr};
use crate::wheel::built_wheel;
use serde_json::Value;
use std::path::{Path, PathBuf};
use std::process::{Command, Output};

fn repo() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("..").canonicalize().unwrap()
}

fn run(command: &mut Command, what: &str) -> Output {
    let output = command.output().unwrap_or_else(|err| panic!("could not run {what}: {err}"));
    assert!(output.status.success(), "{what} failed:\n{}{}", String::from_utf8_lossy(&output.stdout), stderr(&output));
    output
}

/// The `GLIBC_2.x` symbol versions an ELF file names, as (major, minor):
/// the version strings in its dynamic string table (what `objdump -T`
/// shows beside each imported symbol).
fn glibc_versions(elf: &[u8]) -> Vec<(u32, u32)> {
    let mut versions = Vec::new();
    let mut rest = elf;
    while let Some(at) = rest.windows(8).position(|window| window == b"GLIBC_2.") {
        let tail = &rest[at + 6..];
        let end = tail.iter().position(|byte| !(byte.is_ascii_digit() || *byte == b'.')).unwrap_or(tail.len());
        let text = std::str::from_utf8(&tail[..end]).unwrap();
        let mut parts = text.split('.').map(|part| part.parse::<u32>().unwrap_or(0));
        versions.push((parts.next().unwrap_or(0), parts.next().unwrap_or(0)));
        rest = &tail[end..];
    }
    versions.sort_unstable();
    versions.dedup();
    versions
}

#[test]
fn the_dist_binary_asks_for_glibc_2_17_and_runs_on_debian_11s_glibc() {
    let wheel = built_wheel();
    let name = wheel.file_name().unwrap().to_str().unwrap();
    let arch = std::env::consts::ARCH;
    assert!(
        name.contains(&format!("manylinux_2_17_{arch}")),
        "`make wheel` tags its wheel manylinux2014 (glibc 2.17): {name}"
    );

    // The binary as the wheel holds it.
    let work = tempfile::tempdir().unwrap();
    let binary = work.path().join("toolhost");
    let member = format!("toolhost_wasm-{}.data/scripts/toolhost", env!("CARGO_PKG_VERSION"));
    run(
        Command::new("python3")
            .args([
                "-c",
                "import sys, zipfile; open(sys.argv[3], 'wb').write(zipfile.ZipFile(sys.argv[1]).read(sys.argv[2]))",
            ])
            .arg(&wheel)
            .arg(&member)
            .arg(&binary),
        "taking the binary out of the wheel",
    );
    std::fs::set_permissions(&binary, std::os::unix::fs::PermissionsExt::from_mode(0o755)).unwrap();
    let elf = std::fs::read(&binary).unwrap();
    let versions = glibc_versions(&elf);
    assert!(!versions.is_empty(), "the binary names no glibc symbol version: not a glibc binary?");
    assert!(versions.iter().all(|version| *version <= (2, 17)), "glibc symbol versions newer than 2.17: {versions:?}");

    // Debian 11's loader and C library, and nothing of this machine's: the
    // binary runs as shipped (its interpreter /lib64/ld-linux-x86-64.so.2,
    // its libraries by name) in a mount namespace of its own where Debian
    // 11's lib/x86_64-linux-gnu is bound over this machine's, so that the
    // compile workers it starts (itself again, with a cleared environment)
    // run on the same C library. (Run through the loader as a program, its
    // /proc/self/exe would be the loader, and the workers could not start.)
    common::install("old-linux/setup.sh");
    let lib = repo().join("tests/old-linux/.tools/root/lib/x86_64-linux-gnu");
    let wrap = |program: &Path, args: &[&str]| {
        let mut argv: Vec<String> = ["unshare", "--mount", "--map-root-user", "sh", "-c"].map(str::to_owned).to_vec();
        argv.push(
            r#"mount --bind "$0" /lib/x86_64-linux-gnu && test -e /lib/x86_64-linux-gnu/libc-2.31.so && exec "$@""#
                .to_owned(),
        );
        argv.push(lib.display().to_string());
        argv.push(program.display().to_string());
        argv.extend(args.iter().map(|arg| (*arg).to_owned()));
        argv
    };
    let debian11 = |args: &[&str]| {
        let argv = wrap(&binary, args);
        let mut command = Command::new(&argv[0]);
        command.args(&argv[1..]);
        command
    };
    let binary_arg = binary.display().to_string();
    let list = wrap(Path::new("/lib64/ld-linux-x86-64.so.2"), &["--list", &binary_arg]);
    let listed = run(Command::new(&list[0]).args(&list[1..]), "Debian 11's loader listing the binary's libraries");
    let libraries = String::from_utf8_lossy(&listed.stdout).into_owned();
    let resolved: Vec<&str> = libraries.lines().filter_map(|line| line.split(" => ").nth(1)).collect();
    assert!(resolved.iter().any(|path| path.contains("/libc.so.6")), "{libraries}");
    for path in &resolved {
        assert!(
            path.starts_with("/lib/x86_64-linux-gnu/"),
            "a library from outside Debian 11's folder: {path}\n{libraries}"
        );
    }

    let version = run(&mut debian11(&["--version"]), "toolhost --version on Debian 11's glibc");
    assert_eq!(String::from_utf8_lossy(&version.stdout).trim(), format!("toolhost {}", env!("CARGO_PKG_VERSION")));

    // A tool call with a cold compile cache: the binary compiles the plugin
    // with cranelift and runs it, all on the old glibc.
    let plugins = plugin_dir(&["hash", "spin_forever"]);
    let plugins_arg = plugins.path().to_str().unwrap();
    let cache = work.path().join("compiled");
    let call = run(
        debian11(&["--plugins", plugins_arg, "call", "sha256", r#"{"text":"hello"}"#])
            .env("TOOLHOST_CACHE_DIR", &cache),
        "a tool call on Debian 11's glibc",
    );
    assert_eq!(
        String::from_utf8_lossy(&call.stdout).trim(),
        "2cf24dba5fb0a30e26e83b2ac5b9e29e1b161e5c1fa7425e73043362938b9824",
        "{}",
        stderr(&call)
    );

    // `serve` on stdio, driven by the official MCP client.
    common::install("mcp/setup.sh");
    let config = work.path().join("toolhost.toml");
    std::fs::write(&config, "[plugins.spin_forever.limits]\nfuel = 1_000_000_000_000_000\ntimeout = \"3s\"\n").unwrap();
    let mcp = repo().join("tests/mcp");
    let output = run(
        Command::new(mcp.join(".tools/venv/bin/python"))
            .arg(mcp.join("client.py"))
            .args(["--mode", "legacy", "--as-given", "basics", "--"])
            .args(wrap(&binary, &["--plugins", plugins_arg, "--config", &config.display().to_string(), "serve"]))
            .env("TOOLHOST_CACHE_DIR", &cache),
        "the MCP client against toolhost serve on Debian 11's glibc",
    );
    let stdout = String::from_utf8_lossy(&output.stdout);
    let result: Value = serde_json::from_str(stdout.trim()).unwrap_or_else(|err| panic!("{err}: {stdout}"));
    assert_eq!(result["sha256"]["is_error"], false, "{result}");
    assert_eq!(result["sha256"]["text"], "2cf24dba5fb0a30e26e83b2ac5b9e29e1b161e5c1fa7425e73043362938b9824");
    assert_eq!(result["runaway"]["is_error"], true, "{result}");
}

#[test]
fn glibc_versions_are_read_from_the_version_strings() {
    let bytes = b"\0GLIBC_2.2.5\0memcpy\0GLIBC_2.14\0GLIBC_PRIVATE\0GLIBC_2.3.4\0GLIBC_2.14\0";
    assert_eq!(glibc_versions(bytes), [(2, 2), (2, 3), (2, 14)]);
    assert_eq!(glibc_versions(b"GLIBC_2.34"), [(2, 34)]);
    assert!(glibc_versions(b"no versions").is_empty());
}

//! Links the `toolhost` program with packed relative relocations (DT_RELR)
//! where the C library it is built against applies them.
//!
//! The program is position-independent (the kernel places it at a random
//! address) and large: before `main`, the dynamic loader applies about
//! 80,000 relocations, read from 2 MB of relocation records. Packed, those
//! records take kilobytes, so a short-lived process (`toolhost call`, a
//! compile worker) touches fewer pages before it starts. glibc applies them
//! from 2.36 on, and a program linked so needs that glibc; built against an
//! older one (a manylinux container, or zig's glibc 2.17 that `make dist`
//! links the release binaries against: any linker other than the system's),
//! or for another target, it is linked as before.

use std::process::Command;

fn main() {
    println!("cargo:rerun-if-changed=build.rs");
    let target = std::env::var("TARGET").unwrap_or_default();
    let native = std::env::var("HOST").ok().as_deref() == Some(target.as_str());
    let linux_gnu = std::env::var("CARGO_CFG_TARGET_OS").as_deref() == Ok("linux")
        && std::env::var("CARGO_CFG_TARGET_ENV").as_deref() == Ok("gnu");
    // A linker of its own (`--zig`: `CARGO_TARGET_<TRIPLE>_LINKER`, seen here
    // as `RUSTC_LINKER`) links against a C library this system's glibc does
    // not tell.
    let linker_var = format!("CARGO_TARGET_{}_LINKER", target.to_uppercase().replace(['-', '.'], "_"));
    println!("cargo:rerun-if-env-changed={linker_var}");
    let system_linker = std::env::var_os("RUSTC_LINKER").is_none();
    if native && linux_gnu && system_linker && glibc_at_least(2, 36) {
        println!("cargo:rustc-link-arg-bins=-Wl,-z,pack-relative-relocs");
    }
}

/// Whether this system's glibc (`getconf GNU_LIBC_VERSION`: "glibc 2.36")
/// is `major.minor` or later; false when it cannot be told.
fn glibc_at_least(major: u32, minor: u32) -> bool {
    let Ok(out) = Command::new("getconf").arg("GNU_LIBC_VERSION").output() else { return false };
    let text = String::from_utf8_lossy(&out.stdout);
    let Some(version) = text.trim().strip_prefix("glibc ") else { return false };
    let mut parts = version.split('.').map(|part| part.parse::<u32>().ok());
    match (parts.next().flatten(), parts.next().flatten()) {
        (Some(have_major), Some(have_minor)) => (have_major, have_minor) >= (major, minor),
        _ => false,
    }
}

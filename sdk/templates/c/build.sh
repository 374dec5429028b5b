#!/usr/bin/env bash
# Builds __NAME__.wasm, a toolhost plugin, from the C sources here.
#   1. wit-bindgen __WIT_BINDGEN__ (crates.io) writes gen/plugin.{h,c} and the
#      component type (gen/plugin_component_type.o) for the world __WORLD__
#      in wit/ (__WORLD_SAYS__);
#   2. clang compiles for wasm32-wasi against wasi-libc (WASI preview 1);
#   3. wasm-component-ld (it ships with Rust's toolchain) links with wasm-ld and
#      turns the module into a component, adapting WASI preview 1 to preview 2.
#      What the plugin does not call (HTTP, say) is left out.
# The first run installs what is missing: clang, lld and wasi-libc with
# apt-get (as root; otherwise it prints the one command to run), and
# wit-bindgen (and wasm-component-ld, when Rust's toolchain lacks it) with
# cargo install into .tools/ here.
# Usage: ./build.sh   then copy __NAME__.wasm into toolhost's plugins folder.
set -euo pipefail
cd "$(dirname "${BASH_SOURCE[0]}")"
WIT_BINDGEN_VERSION=__WIT_BINDGEN__
export PATH="$PWD/.tools/bin:$PATH"

say() { echo "$*" >&2; }

# Debian packages: clang first, as the compiler-rt package is named after its major version.
if [ -z "${WASI_SYSROOT:-}" ] && command -v dpkg >/dev/null; then
    missing=()
    for pkg in clang lld wasi-libc; do dpkg -s "$pkg" >/dev/null 2>&1 || missing+=("$pkg"); done
    if command -v clang >/dev/null; then
        pkg="libclang-rt-$(clang -dumpversion | cut -d. -f1)-dev-wasm32"
        dpkg -s "$pkg" >/dev/null 2>&1 || missing+=("$pkg")
    fi
    if [ "${#missing[@]}" -gt 0 ]; then
        if [ "$(id -u)" != 0 ]; then
            say "error: the C toolchain is missing; install it with:"
            say "  sudo apt-get install ${missing[*]} && ./build.sh"
            exit 1
        fi
        say "installing ${missing[*]} (apt-get)"
        apt-get update -qq
        DEBIAN_FRONTEND=noninteractive apt-get install -y -qq --no-install-recommends "${missing[@]}" >/dev/null
        # With clang installed, its compiler-rt for wasm32.
        exec "$0" "$@"
    fi
fi
for tool in clang wasm-ld; do
    command -v "$tool" >/dev/null || { say "error: $tool is missing: install clang and lld (LLVM 14 or newer)"; exit 1; }
done

cargo_install() {
    command -v cargo >/dev/null || {
        say "error: $1 is missing and installing it needs cargo: install Rust with rustup (https://rustup.rs), then run ./build.sh again"
        exit 1
    }
    say "installing $1 into .tools (cargo install; a few minutes, once)"
    cargo install --root .tools --locked --quiet "$@"
}
wit-bindgen --version 2>/dev/null | grep -qx "wit-bindgen-cli $WIT_BINDGEN_VERSION" ||
    cargo_install wit-bindgen-cli --version "$WIT_BINDGEN_VERSION" --no-default-features --features c
linker="$(rustc --print sysroot 2>/dev/null)/lib/rustlib/$(rustc -vV 2>/dev/null | sed -n 's/^host: //p')/bin/wasm-component-ld"
if [ ! -x "$linker" ]; then
    command -v wasm-component-ld >/dev/null || cargo_install wasm-component-ld
    linker="$(command -v wasm-component-ld)"
fi

if ! said="$(wit-bindgen c wit --world __WORLD__ --out-dir gen 2>&1)"; then
    say "$said"
    exit 1
fi
target=(--target=wasm32-wasi ${WASI_SYSROOT:+--sysroot="$WASI_SYSROOT"})
rm -rf gen/obj && mkdir -p gen/obj
for source in *.c gen/plugin.c; do
    clang "${target[@]}" -O2 -Wall -Wextra -I gen -I . -c "$source" -o "gen/obj/$(basename "$source" .c).o"
done
# Linked without -O: with it clang would run a `wasm-opt` found on PATH over
# the output, which is a component and not a module.
clang "${target[@]}" -mexec-model=reactor -fuse-ld="$linker" -Wl,--wasm-ld-path="$(command -v wasm-ld)" \
    -Wl,--strip-debug -o __NAME__.wasm gen/obj/*.o gen/plugin_component_type.o -lm
__EMBED_DOCS__
say "built $(pwd)/__NAME__.wasm"

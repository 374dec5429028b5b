#!/usr/bin/env bash
# Builds __NAME__.wasm, a toolhost plugin, from the C sources here.
#   1. wit-bindgen __WIT_BINDGEN__ (crates.io) writes gen/plugin.{h,c} and the
#      component type (gen/plugin_component_type.o) for wit/plugin.wit;
#   2. clang compiles for wasm32-wasi against wasi-libc (WASI preview 1);
#   3. wasm-component-ld (it ships with Rust's toolchain) links with wasm-ld and
#      turns the module into a component, adapting WASI preview 1 to preview 2.
# Missing tools are named with the command that installs them.
# Usage: ./build.sh   then copy __NAME__.wasm into toolhost's plugins folder.
set -euo pipefail
cd "$(dirname "${BASH_SOURCE[0]}")"

need() {
    echo "error: $1 is missing; install it with: $2" >&2
    exit 1
}
command -v clang >/dev/null || need clang "sudo apt-get install clang"
command -v wasm-ld >/dev/null || need wasm-ld "sudo apt-get install lld"
[ -f /usr/lib/wasm32-wasi/libc.a ] || [ -n "${WASI_SYSROOT:-}" ] ||
    need wasi-libc "sudo apt-get install wasi-libc libclang-rt-$(clang -dumpversion | cut -d. -f1)-dev-wasm32 (or set WASI_SYSROOT to a wasi-sdk sysroot)"
wit-bindgen --version 2>/dev/null | grep -qx "wit-bindgen-cli __WIT_BINDGEN__" ||
    need "wit-bindgen __WIT_BINDGEN__" "cargo install wit-bindgen-cli --version __WIT_BINDGEN__ --no-default-features --features c --locked"
linker="$(rustc --print sysroot 2>/dev/null)/lib/rustlib/$(rustc -vV 2>/dev/null | sed -n 's/^host: //p')/bin/wasm-component-ld"
[ -x "$linker" ] || linker="$(command -v wasm-component-ld || true)"
[ -n "$linker" ] || need wasm-component-ld "cargo install wasm-component-ld --locked (or install Rust with rustup, which ships it)"

if ! said="$(wit-bindgen c wit --world toolhost:plugin/plugin@0.1.0 --out-dir gen 2>&1)"; then
    echo "$said" >&2
    exit 1
fi
target=(--target=wasm32-wasi ${WASI_SYSROOT:+--sysroot="$WASI_SYSROOT"} -mexec-model=reactor)
mkdir -p gen/obj
for source in tools.c toolhost.c gen/plugin.c; do
    clang --target=wasm32-wasi ${WASI_SYSROOT:+--sysroot="$WASI_SYSROOT"} -O2 -Wall -Wextra -I gen -I . -c "$source" -o "gen/obj/$(basename "$source" .c).o"
done
# Linked without -O: with it clang would run a `wasm-opt` found on PATH over
# the output, which is a component and not a module.
clang "${target[@]}" -fuse-ld="$linker" -Wl,--wasm-ld-path="$(command -v wasm-ld)" -Wl,--strip-debug \
    -o __NAME__.wasm gen/obj/*.o gen/plugin_component_type.o -lm
echo "built $(pwd)/__NAME__.wasm" >&2

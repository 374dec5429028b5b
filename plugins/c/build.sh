#!/usr/bin/env bash
# Builds the C plugins in this folder into components:
#   plugins/c/NAME/*.c              -> plugins/dist/NAME.wasm
#   plugins/c/misbehaving/NAME/*.c  -> plugins/dist-test/NAME.wasm
#   plugins/c/testing/NAME/*.c      -> plugins/dist-test/NAME.wasm
# Each is compiled with the C SDK and the bindings that wit-bindgen's C
# generator writes. A plugin written with the 0.2.0 SDK (its results are
# `th_blocks`) is compiled as `toolhost new` projects are: against the world
# in sdk/wit-http (contract 0.2.0 plus wasi:http/outgoing-handler) with
# sdk/c/toolhost.c and sdk/c/toolhost_http.c. The others stay on contract
# 0.1.0 (wit/v0.1.0, with the SDK of that version in sdk/c/v0.1.0), which
# proves that plugins built against it still build and load. A plugin's
# manifest (NAME.toml) travels beside its .wasm.
#
# Toolchain, installed here when missing (and skipped when present):
#   clang, lld, wasi-libc, libclang-rt-N-dev-wasm32  Debian packages (apt-get); wasi-libc
#       targets wasm32-wasi, i.e. WASI preview 1, so the linked module imports
#       `wasi_snapshot_preview1`
#   wit-bindgen-cli 0.63.0                            crates.io (cargo install, C generator only)
#   wasm-component-ld                                 ships with Rust's toolchain (rustup), which
#       uses it to link wasm32-wasip2; it runs wasm-ld, then turns the module into a component
#       with the WASI preview-1 adapter it embeds and the component type that wit-bindgen emitted.
#       Falls back to `cargo install wasm-component-ld --version 0.5.21`.
# Usage: bash plugins/c/build.sh (plugins/build.sh calls it).
set -euo pipefail
here="$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)"
repo="$(cd "$here/../.." && pwd)"
dist="$repo/plugins/dist"
dist_test="$repo/plugins/dist-test"
WIT_BINDGEN_VERSION=0.63.0
WASM_COMPONENT_LD_VERSION=0.5.21

say() { echo "c plugins: $*" >&2; }

apt_install() {
    if [ "$(id -u)" != 0 ]; then
        say "missing Debian packages: $*; install them with: sudo apt-get install $*"
        exit 1
    fi
    say "installing $* (apt-get)"
    apt-get update -qq
    DEBIAN_FRONTEND=noninteractive apt-get install -y -qq --no-install-recommends "$@" >/dev/null
}

missing_packages() {
    local pkg
    for pkg in "$@"; do
        dpkg -s "$pkg" >/dev/null 2>&1 || echo "$pkg"
    done
}

# clang first: the compiler-rt package is named after clang's major version.
mapfile -t missing < <(missing_packages clang lld wasi-libc)
if [ "${#missing[@]}" -gt 0 ]; then apt_install "${missing[@]}"; fi
clang_major="$(clang -dumpversion | cut -d. -f1)"
mapfile -t missing < <(missing_packages "libclang-rt-$clang_major-dev-wasm32")
if [ "${#missing[@]}" -gt 0 ]; then apt_install "${missing[@]}"; fi

if ! wit-bindgen --version 2>/dev/null | grep -qx "wit-bindgen-cli $WIT_BINDGEN_VERSION"; then
    say "installing wit-bindgen-cli $WIT_BINDGEN_VERSION (cargo install, a few minutes once)"
    cargo install wit-bindgen-cli --version "$WIT_BINDGEN_VERSION" --no-default-features --features c --locked --quiet
fi

host_triple="$(rustc -vV | sed -n 's/^host: //p')"
linker="$(rustc --print sysroot)/lib/rustlib/$host_triple/bin/wasm-component-ld"
if [ ! -x "$linker" ]; then
    linker="$(command -v wasm-component-ld || true)"
    if [ -z "$linker" ]; then
        say "installing wasm-component-ld $WASM_COMPONENT_LD_VERSION (cargo install)"
        cargo install wasm-component-ld --version "$WASM_COMPONENT_LD_VERSION" --locked --quiet
        linker="$(command -v wasm-component-ld)"
    fi
fi

build="$here/target"
mkdir -p "$build" "$dist" "$dist_test"
# bindings WIT_DIR WORLD OUT_DIR
bindings() {
    local said
    if ! said="$(wit-bindgen c "$1" --world "$2" --out-dir "$3" 2>&1)"; then
        echo "$said" >&2
        exit 1
    fi
}
bindings "$repo/wit/v0.1.0" toolhost:plugin/plugin@0.1.0 "$build/gen"
bindings "$repo/sdk/wit-http" toolhost:plugin-with-http/plugin@0.2.0 "$build/gen-http"

# compile NAME DIR OUT_DIR
compile() {
    local name="$1" dir="$2" out="$3" source
    local objects="$build/obj/$name" gen="$build/gen" sdk="$repo/sdk/c/v0.1.0"
    local sources=("$dir"/*.c)
    # Written with the 0.2.0 SDK (its results are th_blocks): built as
    # `toolhost new` projects are, against sdk/wit-http.
    if grep -qs 'th_blocks' "$dir"/*.c; then
        gen="$build/gen-http"
        sdk="$repo/sdk/c"
        sources+=("$repo/sdk/c/toolhost_http.c")
    fi
    if [ -f "$dir/$name.toml" ]; then
        cp "$dir/$name.toml" "$out/"
    fi
    # The JSON reader and text buffer are one file, shared by both SDK versions.
    sources+=("$sdk/toolhost.c" "$repo/sdk/c/toolhost_json.c")
    rm -rf "$objects"
    mkdir -p "$objects"
    for source in "${sources[@]}" "$gen/plugin.c"; do
        clang --target=wasm32-wasi -O2 -Wall -Wextra -I "$gen" -I "$sdk" \
            -c "$source" -o "$objects/$(basename "$source" .c).o"
    done
    # Linked without -O: with it clang would run a `wasm-opt` found on PATH
    # over the output, which is a component and not a module.
    clang --target=wasm32-wasi -mexec-model=reactor \
        -fuse-ld="$linker" -Wl,--wasm-ld-path="$(command -v wasm-ld)" -Wl,--strip-debug \
        -o "$build/$name.wasm" "$objects"/*.o "$gen/plugin_component_type.o" -lm
    cp "$build/$name.wasm" "$out/"
}

count=0
for dir in "$here"/*/ "$here"/misbehaving/*/ "$here"/testing/*/; do
    dir="${dir%/}"
    compgen -G "$dir/*.c" >/dev/null || continue
    name="$(basename "$dir")"
    case "$dir" in
        "$here"/misbehaving/* | "$here"/testing/*) compile "$name" "$dir" "$dist_test" ;;
        *) compile "$name" "$dir" "$dist" ;;
    esac
    count=$((count + 1))
done
say "built $count"

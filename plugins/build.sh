#!/usr/bin/env bash
# Builds every plugin in this folder from source and copies the components
# where the host and the tests look for them:
#   plugins/dist/          the example plugins (the default plugins directory),
#                          each with its manifest NAME.toml when it has one
#   plugins/dist-test/     test plugins that misbehave on purpose when called, and
#                          testing/* (tools the MCP tests call by fixed names)
#   plugins/dist-broken/   test plugins that break the contract and must not load
#   plugins/dist-wassette/ testing/wassette_tools with its Wassette policy.yaml
# Rust plugins (the cargo workspace here) are built for wasm32-wasip2; the
# Python, JavaScript and C ones by python/build.sh, js/build.sh and
# c/build.sh, each of which installs its toolchain from the registries the
# first time (pip, npm, apt-get, cargo install) and skips that afterwards.
# Usage: bash plugins/build.sh [all|rust|others]
#   rust     only the Rust plugins (quick: `make demo` shows them answering
#            while the other languages' toolchains are still to be installed)
#   others   only the Python, JavaScript and C plugins (after `rust`)
#   all      both (the default)
set -euo pipefail
here="$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)"
cd "$here"
phase="${1:-all}"
case "$phase" in
    all | rust | others) ;;
    *)
        echo "usage: bash plugins/build.sh [all|rust|others] (got '$phase')" >&2
        exit 2
        ;;
esac

if [ "$phase" = others ]; then
    # dist/ must come from the Rust phase: the other languages add to it.
    if [ ! -f dist/echo.wasm ]; then
        echo "plugins/dist has no Rust plugins yet: run 'bash plugins/build.sh rust' first" >&2
        exit 1
    fi
    bash "$here/python/build.sh"
    bash "$here/js/build.sh"
    bash "$here/c/build.sh"
    echo "built $(ls dist/*.wasm | wc -l) plugins into plugins/dist, $(ls dist-test | wc -l) into plugins/dist-test and $(ls dist-broken | wc -l) into plugins/dist-broken" >&2
    exit 0
fi

# The toolchain rust-toolchain.toml names, with its wasm32-wasip2 target
# (a no-op once installed).
(cd "$here/.." && rustup toolchain install >/dev/null)

# Always plugins/target, even when CARGO_TARGET_DIR points the host's build elsewhere.
cargo build --release --target wasm32-wasip2 --workspace --locked --target-dir "$here/target"

out="$here/target/wasm32-wasip2/release"
rm -rf dist dist-test dist-broken
mkdir -p dist dist-test dist-broken
for manifest in */Cargo.toml; do
    name="$(dirname "$manifest")"
    cp "$out/$name.wasm" dist/
    # A plugin's manifest (what it asks for) travels beside its .wasm.
    if [ -f "$name/$name.toml" ]; then
        cp "$name/$name.toml" dist/
    fi
done
for manifest in misbehaving/*/Cargo.toml; do
    name="$(basename "$(dirname "$manifest")")"
    cp "$out/$name.wasm" dist-test/
done
for manifest in testing/*/Cargo.toml; do
    name="$(basename "$(dirname "$manifest")")"
    # wassette_tools goes to dist-wassette (below): its tool names are typed_shop's (`fetch`).
    if [ "$name" != wassette_tools ]; then
        cp "$out/$name.wasm" dist-test/
    fi
done
for manifest in broken/*/Cargo.toml; do
    name="$(basename "$(dirname "$manifest")")"
    cp "$out/$name.wasm" dist-broken/
done
# echo is the trivial tool the tests and benchmarks lean on: keep a copy with the test plugins.
cp dist/echo.wasm dist-test/
# typed_shop without wasi:config, which the benchmarks beside Wassette load
# into both runtimes (a folder of its own: its tools' names are typed_shop's).
cargo build --release --target wasm32-wasip2 --locked --target-dir "$here/target" -p typed_shop --features plain
rm -rf dist-peer
mkdir -p dist-peer
cp "$out/typed_shop.wasm" dist-peer/
# A component as Wassette's users write one, with its policy beside it under
# the name Wassette gives a co-located policy (NAME.policy.yaml); a folder of
# its own, so the other tests' folders hold no policy to warn about.
rm -rf dist-wassette
mkdir -p dist-wassette
cp "$out/wassette_tools.wasm" dist-wassette/
cp testing/wassette_tools/policy.yaml dist-wassette/wassette_tools.policy.yaml
if [ "$phase" = rust ]; then
    echo "built the Rust plugins: $(ls dist/*.wasm | wc -l) into plugins/dist" >&2
    exit 0
fi
bash "$here/python/build.sh"
bash "$here/js/build.sh"
bash "$here/c/build.sh"
echo "built $(ls dist/*.wasm | wc -l) plugins into plugins/dist, $(ls dist-test | wc -l) into plugins/dist-test and $(ls dist-broken | wc -l) into plugins/dist-broken" >&2

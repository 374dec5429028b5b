#!/usr/bin/env bash
# Builds __NAME__.wasm, a toolhost plugin, from this Rust crate.
# Needs Rust through rustup; adds the wasm32-wasip2 target when it is missing.
# Usage: ./build.sh   then copy __NAME__.wasm into toolhost's plugins folder.
set -euo pipefail
cd "$(dirname "${BASH_SOURCE[0]}")"

if ! command -v cargo >/dev/null; then
    echo "error: cargo is not installed: install Rust with rustup (https://rustup.rs), then run ./build.sh again" >&2
    exit 1
fi
if ! rustup target list --installed 2>/dev/null | grep -qx wasm32-wasip2; then
    echo "adding the wasm32-wasip2 Rust target" >&2
    rustup target add wasm32-wasip2
fi

cargo build --release --target wasm32-wasip2
target="${CARGO_TARGET_DIR:-target}"
cp "$target/wasm32-wasip2/release/__CRATE__.wasm" __NAME__.wasm
__EMBED_DOCS__
echo "built $(pwd)/__NAME__.wasm" >&2

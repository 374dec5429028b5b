#!/usr/bin/env bash
# Installs what the wheel test needs to build toolhost's Python wheel, into
# tests/wheel/.tools (gitignored), the first time only:
#   .tools/venv   maturin and ziglang (PyPI), pinned in requirements.txt: zig
#                 is the linker maturin's `--zig` uses to build a binary
#                 against glibc 2.17 (manylinux2014) on any newer machine
# and fetches the crates of every platform in Cargo.lock (`cargo metadata`,
# which maturin runs, reads them all), so that the test itself builds offline.
# The test then installs the wheel it built into a clean virtual environment of
# its own, and drives `toolhost serve` from there with the MCP client that
# tests/mcp/setup.sh installs. A second run checks the pin and installs nothing.
# Any failure exits non-zero with the installer's error: the test fails, it
# never skips.
# Usage: bash tests/wheel/setup.sh
set -euo pipefail
here="$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)"
tools="$here/.tools"
mkdir -p "$tools"

exec 9>"$tools/.lock"
flock 9

# The pins installed last time, kept beside the venv: a changed pin installs again.
if ! cmp -s "$here/requirements.txt" "$tools/venv/.pinned" || ! "$tools/venv/bin/maturin" --version >/dev/null 2>&1; then
    command -v python3 >/dev/null || { echo "wheel test tools: python3 is needed to install maturin" >&2; exit 1; }
    echo "wheel test tools: installing $(tr '\n' ' ' <"$here/requirements.txt")into $tools/venv (pip)" >&2
    python3 -m venv "$tools/venv"
    "$tools/venv/bin/pip" install --quiet --disable-pip-version-check -r "$here/requirements.txt"
    cp "$here/requirements.txt" "$tools/venv/.pinned"
fi

# Without the lock's descriptor (9>&-): cargo may start a compiler cache's
# server (sccache), which would hold the lock for as long as it lives.
(cd "$here/../.." && cargo fetch --locked --quiet 9>&-)

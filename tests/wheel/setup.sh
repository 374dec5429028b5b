#!/usr/bin/env bash
# Installs what the wheel test needs to build toolhost's Python wheel, into
# tests/wheel/.tools (gitignored), the first time only:
#   .tools/venv   maturin (PyPI), pinned in requirements.txt
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

pinned="$(sed -n 's/^maturin==//p' "$here/requirements.txt")"
if [ "$("$tools/venv/bin/maturin" --version 2>/dev/null)" != "maturin $pinned" ]; then
    command -v python3 >/dev/null || { echo "wheel test tools: python3 is needed to install maturin" >&2; exit 1; }
    echo "wheel test tools: installing maturin $pinned into $tools/venv (pip)" >&2
    python3 -m venv "$tools/venv"
    "$tools/venv/bin/pip" install --quiet --disable-pip-version-check -r "$here/requirements.txt"
fi

(cd "$here/../.." && cargo fetch --locked --quiet)

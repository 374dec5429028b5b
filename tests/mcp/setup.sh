#!/usr/bin/env bash
# Installs the third-party MCP clients the MCP tests drive, into
# tests/mcp/.tools (gitignored), the first time only:
#   .tools/venv         the official Python SDK `mcp` (PyPI), pinned in requirements.txt
#   .tools/venv-2025    the same SDK's 2025-11-25 line, pinned in requirements-2025.txt
#   .tools/node22       Node 22 from the npm package `node@22` (the conformance suite needs
#                       Node >= 22; a system Node 20 is not enough)
#   .tools/conformance  @modelcontextprotocol/conformance (npm), pinned in package.json
# A second run checks the pins and installs nothing. Any failure exits non-zero
# with the installer's error: the tests fail, they never skip.
# Usage: bash tests/mcp/setup.sh
set -euo pipefail
here="$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)"
tools="$here/.tools"
say() { echo "mcp test tools: $*" >&2; }
mkdir -p "$tools"

# One installer at a time (tests run in parallel).
exec 9>"$tools/.lock"
flock 9

pinned_mcp="$(sed -n 's/^mcp==//p' "$here/requirements.txt")"
if [ "$("$tools/venv/bin/python" -c 'import importlib.metadata as m; print(m.version("mcp"))' 2>/dev/null)" != "$pinned_mcp" ]; then
    command -v python3 >/dev/null || { say "python3 (3.10 or newer) is needed to install the Python mcp client"; exit 1; }
    say "installing mcp $pinned_mcp into $tools/venv (pip)"
    python3 -m venv "$tools/venv"
    "$tools/venv/bin/pip" install --quiet --disable-pip-version-check -r "$here/requirements.txt"
fi

# The last SDK line of the 2025-11-25 revision, for its experimental tasks
# API (`session.experimental`), which mcp 2.x no longer has.
pinned_mcp_2025="$(sed -n 's/^mcp==//p' "$here/requirements-2025.txt")"
if [ "$("$tools/venv-2025/bin/python" -c 'import importlib.metadata as m; print(m.version("mcp"))' 2>/dev/null)" != "$pinned_mcp_2025" ]; then
    say "installing mcp $pinned_mcp_2025 into $tools/venv-2025 (pip)"
    python3 -m venv "$tools/venv-2025"
    "$tools/venv-2025/bin/pip" install --quiet --disable-pip-version-check -r "$here/requirements-2025.txt"
fi

node22="$tools/node22/node_modules/.bin/node"
if ! "$node22" --version 2>/dev/null | grep -q '^v22\.'; then
    command -v npm >/dev/null || { say "npm is needed to install Node 22 (npm package node@22)"; exit 1; }
    say "installing Node 22 into $tools/node22 (npm package node@22)"
    mkdir -p "$tools/node22"
    (cd "$tools/node22" && [ -f package.json ] || npm init -y >/dev/null)
    (cd "$tools/node22" && npm install --no-audit --no-fund --silent node@22)
    "$node22" --version | grep -q '^v22\.' || { say "node@22 installed no working Node 22"; exit 1; }
fi

conformance="$tools/conformance/node_modules/@modelcontextprotocol/conformance/dist/index.js"
pinned_conformance="$(sed -n 's/.*"@modelcontextprotocol\/conformance": "\(.*\)".*/\1/p' "$here/package.json")"
installed_conformance="$(sed -n 's/^  "version": "\(.*\)",/\1/p' "$tools/conformance/node_modules/@modelcontextprotocol/conformance/package.json" 2>/dev/null || true)"
if [ ! -f "$conformance" ] || [ "$installed_conformance" != "$pinned_conformance" ]; then
    say "installing @modelcontextprotocol/conformance $pinned_conformance into $tools/conformance (npm)"
    mkdir -p "$tools/conformance"
    cp "$here/package.json" "$tools/conformance/package.json"
    (cd "$tools/conformance" && PATH="$(dirname "$node22"):$PATH" npm install --no-audit --no-fund --silent)
    [ -f "$conformance" ] || { say "the conformance package did not install $conformance"; exit 1; }
fi

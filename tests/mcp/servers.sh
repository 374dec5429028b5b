#!/usr/bin/env bash
# Installs the third-party MCP servers the MCP client tests (tests/mcp_client.rs)
# start, into tests/mcp/.tools (gitignored), the first time only:
#   .tools/venv         the official Python SDK `mcp` (PyPI), pinned in requirements.txt;
#                       the tests' own servers (tests/mcp/servers/*.py) are written with it
#   .tools/everything   @modelcontextprotocol/server-everything and the conformance suite
#                       (npm), pinned in servers/package.json
#   .tools/node22       Node 22 from the npm package `node@22` (the conformance suite needs
#                       Node >= 22), shared with setup.sh (the `serve` tests' installer), which
#                       runs first when it is there.
# A second run checks the pins and installs nothing. Any failure exits non-zero with the installer's error: the tests fail,
# they never skip.
# Usage: bash tests/mcp/servers.sh
set -euo pipefail
here="$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)"
tools="$here/.tools"
say() { echo "mcp test servers: $*" >&2; }
mkdir -p "$tools"

if [ -f "$here/setup.sh" ]; then
    bash "$here/setup.sh"
fi

# One installer at a time (tests run in parallel).
exec 9>"$tools/.lock"
flock 9

pinned_mcp="$(sed -n 's/^mcp==//p' "$here/requirements.txt")"
if [ "$("$tools/venv/bin/python" -c 'import importlib.metadata as m; print(m.version("mcp"))' 2>/dev/null)" != "$pinned_mcp" ]; then
    command -v python3 >/dev/null || { say "python3 (3.10 or newer) is needed to install the Python mcp package"; exit 1; }
    say "installing mcp $pinned_mcp into $tools/venv (pip)"
    python3 -m venv "$tools/venv"
    "$tools/venv/bin/pip" install --quiet --disable-pip-version-check -r "$here/requirements.txt"
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

everything="$tools/everything/node_modules/@modelcontextprotocol/server-everything/dist/index.js"
conformance="$tools/everything/node_modules/@modelcontextprotocol/conformance/dist/index.js"
pinned="$(sed -n 's/.*"@modelcontextprotocol\/server-everything": "\(.*\)".*/\1/p' "$here/servers/package.json")"
installed="$(sed -n 's/^  "version": "\(.*\)",/\1/p' "$tools/everything/node_modules/@modelcontextprotocol/server-everything/package.json" 2>/dev/null || true)"
if [ ! -f "$everything" ] || [ ! -f "$conformance" ] || [ "$installed" != "$pinned" ]; then
    command -v npm >/dev/null || { say "npm is needed to install @modelcontextprotocol/server-everything"; exit 1; }
    say "installing @modelcontextprotocol/server-everything $pinned and the conformance suite into $tools/everything (npm)"
    mkdir -p "$tools/everything"
    cp "$here/servers/package.json" "$tools/everything/package.json"
    (cd "$tools/everything" && PATH="$(dirname "$node22"):$PATH" npm install --no-audit --no-fund --silent)
    [ -f "$everything" ] || { say "the npm package did not install $everything"; exit 1; }
    [ -f "$conformance" ] || { say "the npm package did not install $conformance"; exit 1; }
fi

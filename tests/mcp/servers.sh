#!/usr/bin/env bash
# Installs what the MCP client tests (tests/all/mcp_client.rs) need, into
# tests/mcp/.tools (gitignored), the first time only:
#   setup.sh first (shared with the `serve` tests): .tools/venv (the official
#                       Python SDK `mcp`, which the tests' own servers in
#                       servers/*.py are written with), .tools/node22 and
#                       .tools/conformance (the conformance suite)
#   .tools/everything   @modelcontextprotocol/server-everything (npm), pinned in servers/package.json
# A second run checks the pins and installs nothing. Any failure exits non-zero
# with the installer's error: the tests fail, they never skip.
# Usage: bash tests/mcp/servers.sh
set -euo pipefail
here="$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)"
tools="$here/.tools"
say() { echo "mcp test servers: $*" >&2; }

bash "$here/setup.sh"

# One installer at a time (tests run in parallel).
exec 9>"$tools/.lock"
flock 9

everything="$tools/everything/node_modules/@modelcontextprotocol/server-everything/dist/index.js"
pinned="$(sed -n 's/.*"@modelcontextprotocol\/server-everything": "\(.*\)".*/\1/p' "$here/servers/package.json")"
installed="$(sed -n 's/^  "version": "\(.*\)",/\1/p' "$tools/everything/node_modules/@modelcontextprotocol/server-everything/package.json" 2>/dev/null || true)"
if [ ! -f "$everything" ] || [ "$installed" != "$pinned" ]; then
    command -v npm >/dev/null || { say "npm is needed to install @modelcontextprotocol/server-everything"; exit 1; }
    say "installing @modelcontextprotocol/server-everything $pinned into $tools/everything (npm)"
    mkdir -p "$tools/everything"
    cp "$here/servers/package.json" "$tools/everything/package.json"
    (cd "$tools/everything" && npm install --no-audit --no-fund --silent)
    [ -f "$everything" ] || { say "the npm package did not install $everything"; exit 1; }
fi

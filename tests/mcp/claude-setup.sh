#!/usr/bin/env bash
# Installs the Claude Code CLI the first-run test drives (`claude mcp add`,
# `claude mcp list`, which connects to each configured server and says
# whether it did), pinned, into tests/mcp/.tools/claude (gitignored), the
# first time only. It runs offline: `mcp list` needs no account. Any failure
# exits non-zero with npm's error: the test fails, it never skips.
# Usage: bash tests/mcp/claude-setup.sh
set -euo pipefail
here="$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)"
tools="$here/.tools/claude"
pinned="2.1.197"
mkdir -p "$tools"
exec 9>"$tools/.lock"
flock 9
installed="$(sed -n 's/^  "version": "\(.*\)",/\1/p' "$tools/node_modules/@anthropic-ai/claude-code/package.json" 2>/dev/null || true)"
if [ "$installed" != "$pinned" ] || ! "$tools/node_modules/.bin/claude" --version >/dev/null 2>&1; then
    command -v npm >/dev/null || { echo "claude test tools: npm is needed to install Claude Code" >&2; exit 1; }
    echo "claude test tools: installing @anthropic-ai/claude-code $pinned into $tools (npm)" >&2
    printf '{ "private": true, "dependencies": { "@anthropic-ai/claude-code": "%s" } }\n' "$pinned" >"$tools/package.json"
    (cd "$tools" && npm install --no-audit --no-fund --silent)
    "$tools/node_modules/.bin/claude" --version | grep -q "^$pinned " \
        || { echo "claude test tools: npm installed no working claude $pinned" >&2; exit 1; }
fi

#!/usr/bin/env bash
# Builds __NAME__.wasm, a toolhost plugin, from app.js with componentize-js.
# Uses ./node_modules (installed with npm when missing), else a componentize-js
# already on PATH. Needs Node.js 18 or newer.
# Usage: ./build.sh   then copy __NAME__.wasm into toolhost's plugins folder.
set -euo pipefail
cd "$(dirname "${BASH_SOURCE[0]}")"

componentize=node_modules/.bin/componentize-js
if [ ! -x "$componentize" ]; then
    if command -v componentize-js >/dev/null; then
        componentize=componentize-js
    else
        command -v npm >/dev/null || { echo "error: npm is needed: install Node.js 18 or newer" >&2; exit 1; }
        npm install --no-audit --no-fund --loglevel=error
    fi
fi

# WASI features the tool does not use are left out. For a tool that calls
# fetch(), drop `http` from this list, and have the operator grant its hosts
# under [plugins.__NAME__] http = [...] in toolhost.toml.
"$componentize" app.js --wit wit --world-name plugin --disable random clocks http fetch-event -o __NAME__.wasm >/dev/null
echo "built $(pwd)/__NAME__.wasm" >&2

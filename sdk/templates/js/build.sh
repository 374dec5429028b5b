#!/usr/bin/env bash
# Builds __NAME__.wasm, a toolhost plugin, from app.js (and toolhost.js, the
# helper it imports) with componentize-js, against toolhost's contract in wit/.
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

# WASI features the tool does not use are left out. `http` (for fetch()) stays
# when the plugin's manifest __NAME__.toml asks for it (`http = ["https://…"]`);
# the operator grants the hosts under [plugins.__NAME__] http in toolhost.toml.
disabled=(random clocks http fetch-event)
if grep -qs '^http *=' __NAME__.toml; then
    disabled=(random clocks fetch-event)
fi
"$componentize" app.js --wit wit --world-name plugin --disable "${disabled[@]}" -o __NAME__.wasm >/dev/null
__EMBED_DOCS__
echo "built $(pwd)/__NAME__.wasm" >&2

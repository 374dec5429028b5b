#!/usr/bin/env bash
# Builds the JavaScript plugins in this folder into components with componentize-js:
#   plugins/js/NAME/app.js              -> plugins/dist/NAME.wasm
#   plugins/js/misbehaving/NAME/app.js  -> plugins/dist-test/NAME.wasm
#   plugins/js/testing/NAME/app.js      -> plugins/dist-test/NAME.wasm
# componentize-js (npm, pinned in package.json and package-lock.json) embeds
# the StarlingMonkey engine (SpiderMonkey) and the plugin's source, and
# pre-initialises it with Wizer. It is installed into plugins/js/node_modules
# with npm when missing or when the lock file changed; a second run skips it.
# WASI features a tool does not need are disabled (random, clocks, http,
# fetch-event; http stays for a plugin whose manifest NAME.toml asks for it);
# stdio stays so that an uncaught exception is printed where `toolhost -vv`
# shows it. A plugin written with the 0.2.0 helper (its app.js imports
# './toolhost.js') is built as `toolhost new` projects are: against
# wit/v0.2.0, with sdk/js/toolhost.js copied beside it; the others stay on
# contract 0.1.0, which proves that plugins built against it still build and
# load.
# Usage: bash plugins/js/build.sh (plugins/build.sh calls it).
set -euo pipefail
here="$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)"
repo="$(cd "$here/../.." && pwd)"

say() { echo "js plugins: $*" >&2; }

if ! command -v npm >/dev/null; then
    if [ "$(id -u)" != 0 ]; then
        say "Node.js 18 or newer with npm is needed: sudo apt-get install nodejs npm"
        exit 1
    fi
    say "installing nodejs and npm (apt-get)"
    apt-get update -qq
    DEBIAN_FRONTEND=noninteractive apt-get install -y -qq --no-install-recommends nodejs npm >/dev/null
fi

stamp="$here/node_modules/.toolhost-lock-sha256"
want="$(sha256sum "$here/package-lock.json" | cut -d' ' -f1)"
if [ "$(cat "$stamp" 2>/dev/null)" != "$want" ]; then
    say "installing componentize-js (npm install, from package-lock.json)"
    # `npm ci` refuses this lock file: npm leaves the optional platform
    # binaries of other systems out of it. `npm install --no-save` installs
    # the locked versions and leaves the lock file alone.
    (cd "$here" && npm install --no-save --no-audit --no-fund --loglevel=error)
    echo "$want" >"$stamp"
fi

# Components are built into $here/target and rebuilt only when a source is
# newer: the toolchain's output is not byte-for-byte reproducible, and a new
# file would make every host recompile it.
stale() {
    local artifact="$1" dir="$2"
    [ ! -f "$artifact" ] || [ -n "$(find "$dir" "$repo/wit/v0.1.0" "$repo/wit/v0.2.0" "$repo/sdk/js" "$here/build.sh" "$here/package-lock.json" -newer "$artifact" -print -quit)" ]
}

mkdir -p "$here/target" "$repo/plugins/dist" "$repo/plugins/dist-test"
count=0
for dir in "$here"/*/ "$here"/misbehaving/*/ "$here"/testing/*/; do
    dir="${dir%/}"
    [ -f "$dir/app.js" ] || continue
    name="$(basename "$dir")"
    case "$name" in node_modules | target) continue ;; esac
    case "$dir" in
        "$here"/misbehaving/* | "$here"/testing/*) out="$repo/plugins/dist-test" ;;
        *) out="$repo/plugins/dist" ;;
    esac
    # A plugin whose manifest (NAME.toml) asks for HTTP keeps `wasi:http`, so
    # that fetch() works where the operator grants it; the others leave it out.
    disabled=(random clocks http fetch-event)
    if grep -qs '^http *=' "$dir/$name.toml"; then
        disabled=(random clocks fetch-event)
    fi
    source="$dir/app.js" wit="$repo/wit/v0.1.0"
    artifact="$here/target/$name.wasm"
    if stale "$artifact" "$dir"; then
        if grep -qs "from './toolhost.js'" "$dir/app.js"; then
            source="$here/target/src/$name/app.js" wit="$repo/wit/v0.2.0"
            rm -rf "$here/target/src/$name"
            mkdir -p "$here/target/src/$name"
            cp "$dir"/*.js "$repo/sdk/js/toolhost.js" "$here/target/src/$name/"
        fi
        "$here/node_modules/.bin/componentize-js" "$source" --wit "$wit" --world-name plugin \
            --disable "${disabled[@]}" -o "$artifact.tmp" >/dev/null
        mv "$artifact.tmp" "$artifact"
    fi
    cp "$artifact" "$out/"
    # The manifest (what the plugin asks for) travels beside its .wasm.
    if [ -f "$dir/$name.toml" ]; then
        cp "$dir/$name.toml" "$out/"
    fi
    count=$((count + 1))
done
say "built $count"

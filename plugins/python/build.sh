#!/usr/bin/env bash
# Builds the Python plugins in this folder into components with componentize-py:
#   plugins/python/NAME/app.py              -> plugins/dist/NAME.wasm
#   plugins/python/misbehaving/NAME/app.py  -> plugins/dist-test/NAME.wasm
#   plugins/python/testing/NAME/app.py      -> plugins/dist-test/NAME.wasm
# componentize-py (PyPI, pinned in requirements.txt) bundles CPython and the
# standard library into each component and generates the `wit_world` bindings
# for wit/v0.1.0 at build time. It is installed into plugins/python/.venv when
# missing or at another version; a second run skips the install.
# A plugin with a wit/ folder of its own is built against the world in it (a
# component of plain typed functions, not toolhost's contract).
# A plugin written with the 0.2.0 helper (its app.py imports `toolhost`) is
# built as `toolhost new` projects are: against the world in sdk/wit-http
# (contract 0.2.0 plus wasi:http/outgoing-handler) with sdk/python/
# (toolhost.py and toolhost_http.py) bundled beside it. The others stay on
# contract 0.1.0, which proves that plugins built against it still build and
# load. A plugin's manifest (NAME.toml) travels beside its .wasm.
# Usage: bash plugins/python/build.sh (plugins/build.sh calls it).
set -euo pipefail
here="$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)"
repo="$(cd "$here/../.." && pwd)"
venv="$here/.venv"
pinned="$(sed -n 's/^componentize-py==//p' "$here/requirements.txt")"

say() { echo "python plugins: $*" >&2; }

if [ "$("$venv/bin/componentize-py" --version 2>/dev/null)" != "componentize-py $pinned" ]; then
    command -v python3 >/dev/null || { say "python3 is needed (3.9 or newer) to install componentize-py"; exit 1; }
    say "installing componentize-py $pinned into $venv (pip)"
    python3 -m venv "$venv"
    "$venv/bin/pip" install --quiet --disable-pip-version-check -r "$here/requirements.txt"
fi

# Components are built into $here/target and rebuilt only when a source is
# newer: the toolchain's output is not byte-for-byte reproducible, and a new
# file would make every host recompile it.
stale() {
    local artifact="$1" dir="$2"
    [ ! -f "$artifact" ] || [ -n "$(find "$dir" "$repo/wit/v0.1.0" "$repo/wit/v0.2.0" "$repo/sdk/wit-http" "$repo/sdk/python" "$here/build.sh" "$here/requirements.txt" -newer "$artifact" -print -quit)" ]
}

mkdir -p "$here/target" "$repo/plugins/dist" "$repo/plugins/dist-test"
count=0
for dir in "$here"/*/ "$here"/misbehaving/*/ "$here"/testing/*/; do
    dir="${dir%/}"
    [ -f "$dir/app.py" ] || continue
    name="$(basename "$dir")"
    case "$dir" in
        "$here"/misbehaving/* | "$here"/testing/*) out="$repo/plugins/dist-test" ;;
        *) out="$repo/plugins/dist" ;;
    esac
    world=(-d "$repo/wit/v0.1.0" -w toolhost:plugin/plugin@0.1.0)
    paths=(-p "$dir")
    if [ -d "$dir/wit" ]; then
        world=(-d "$dir/wit" -w "$(sed -n 's/^world \([a-z0-9-]*\).*/\1/p' "$dir"/wit/*.wit | head -n 1)")
    elif grep -qsE '^(import toolhost( as [a-z_]+)?|from toolhost import .*)$' "$dir/app.py"; then
        world=(-d "$repo/sdk/wit-http" -w toolhost:plugin-with-http/plugin@0.2.0)
        paths+=(-p "$repo/sdk/python")
    fi
    artifact="$here/target/$name.wasm"
    if stale "$artifact" "$dir"; then
        # -p limits what is bundled to those folders (plus the standard library).
        (cd "$dir" && "$venv/bin/componentize-py" --quiet "${world[@]}" componentize app "${paths[@]}" -o "$artifact.tmp")
        mv "$artifact.tmp" "$artifact"
    fi
    cp "$artifact" "$out/"
    if [ -f "$dir/$name.toml" ]; then
        cp "$dir/$name.toml" "$out/"
    fi
    count=$((count + 1))
done
say "built $count"

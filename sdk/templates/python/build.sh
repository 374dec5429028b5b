#!/usr/bin/env bash
# Builds __NAME__.wasm, a toolhost plugin, from src/ with componentize-py,
# against the world __WORLD__ in wit/ (__WORLD_SAYS__).
# Uses componentize-py __COMPONENTIZE_PY__ from PATH when it is that version,
# else installs it into .venv with pip (python3 3.9 or newer needed).
# Usage: ./build.sh   then copy __NAME__.wasm into toolhost's plugins folder.
set -euo pipefail
cd "$(dirname "${BASH_SOURCE[0]}")"
version=__COMPONENTIZE_PY__

if [ "$(componentize-py --version 2>/dev/null)" = "componentize-py $version" ]; then
    componentize=componentize-py
else
    componentize=.venv/bin/componentize-py
    if [ "$("$componentize" --version 2>/dev/null)" != "componentize-py $version" ]; then
        command -v python3 >/dev/null || { echo "error: python3 is needed to install componentize-py" >&2; exit 1; }
        echo "installing componentize-py $version into .venv" >&2
        python3 -m venv .venv
        .venv/bin/pip install --quiet --disable-pip-version-check "componentize-py==$version"
    fi
fi

# Only src/ is bundled (with the Python standard library): keep .venv out of it.
"$componentize" --quiet -d wit -w __WORLD__ componentize app -p src -o __NAME__.wasm
__EMBED_DOCS__
echo "built $(pwd)/__NAME__.wasm" >&2

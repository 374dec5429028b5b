#!/usr/bin/env bash
# Installs what tests/all/deploy.rs drives, the first time only:
#   .tools/venv   kubernetes-validate (PyPI, pinned in requirements.txt), which
#                 validates manifests offline against the Kubernetes JSON
#                 schemas it ships
# A second run checks and installs nothing. Any failure exits non-zero with the
# installer's error: the tests fail, they never skip.
# Usage: bash tests/deploy/setup.sh
set -euo pipefail
here="$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)"
tools="$here/.tools"
say() { echo "deploy test tools: $*" >&2; }
mkdir -p "$tools"

# One installer at a time (tests run in parallel).
exec 9>"$tools/.lock"
flock 9

pinned="$(sed -n 's/^kubernetes-validate==//p' "$here/requirements.txt")"
if [ "$("$tools/venv/bin/python" -c 'import importlib.metadata as m; print(m.version("kubernetes-validate"))' 2>/dev/null)" != "$pinned" ]; then
    command -v python3 >/dev/null || { say "python3 is needed to install kubernetes-validate"; exit 1; }
    say "installing kubernetes-validate $pinned into $tools/venv (pip)"
    python3 -m venv "$tools/venv"
    "$tools/venv/bin/pip" install --quiet --disable-pip-version-check -r "$here/requirements.txt"
fi

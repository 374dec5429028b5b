#!/usr/bin/env bash
# Installs the OTLP receiver the telemetry tests (tests/all/telemetry.rs) send
# traces to, the first time only:
#   .tools/venv   opentelemetry-proto (OpenTelemetry's own OTLP protobuf
#                 definitions, PyPI) and protobuf, pinned in requirements.txt,
#                 with which receiver.py decodes what toolhost exports
# A second run checks the pins and installs nothing. Any failure exits non-zero
# with the installer's error: the tests fail, they never skip.
# Usage: bash tests/otel/setup.sh
set -euo pipefail
here="$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)"
tools="$here/.tools"
mkdir -p "$tools"
exec 9>"$tools/.lock"
flock 9
pinned="$(sed -n 's/^opentelemetry-proto==//p' "$here/requirements.txt")"
if [ "$("$tools/venv/bin/python" -c 'import importlib.metadata as m; print(m.version("opentelemetry-proto"))' 2>/dev/null)" != "$pinned" ]; then
    command -v python3 >/dev/null || { echo "otel test tools: python3 is needed" >&2; exit 1; }
    echo "otel test tools: installing opentelemetry-proto $pinned into $tools/venv (pip)" >&2
    python3 -m venv "$tools/venv"
    "$tools/venv/bin/pip" install --quiet --disable-pip-version-check -r "$here/requirements.txt"
fi

#!/usr/bin/env bash
# Installs what the load-balancer tests (tests/all/replicas.rs) drive, the first
# time only:
#   haproxy                 Debian's package (apt-get), the load balancer in front
#                           of the `toolhost serve --http` replicas
#   .tools/venv             prometheus-client (PyPI, pinned in requirements.txt),
#                           whose parser reads /metrics as Prometheus would
# plus the MCP clients of tests/mcp/setup.sh (the official Python `mcp` client).
# A second run checks and installs nothing. Any failure exits non-zero with the
# installer's error: the tests fail, they never skip.
# Usage: bash tests/lb/setup.sh
set -euo pipefail
here="$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)"
tools="$here/.tools"
say() { echo "load-balancer test tools: $*" >&2; }
mkdir -p "$tools"

bash "$here/../mcp/setup.sh"

# One installer at a time (tests run in parallel).
exec 9>"$tools/.lock"
flock 9

if ! command -v haproxy >/dev/null 2>&1; then
    if [ "$(id -u)" != 0 ]; then
        say "haproxy is missing; install it with: sudo apt-get install haproxy"
        exit 1
    fi
    say "installing haproxy (apt-get)"
    apt-get update -qq
    # The tests run their own haproxy in the foreground (where systemd runs,
    # Debian also starts its service, whose stock config listens nowhere).
    DEBIAN_FRONTEND=noninteractive apt-get install -y -qq --no-install-recommends haproxy >/dev/null
    command -v haproxy >/dev/null 2>&1 || { say "apt-get installed no haproxy binary"; exit 1; }
fi
# The config the tests write needs 2.2 or newer (`http-check send`, `retry-on`).
version="$(haproxy -v | sed -n 's/^HAProxy version \([0-9]*\)\.\([0-9]*\).*/\1 \2/p')"
read -r major minor <<<"${version:-0 0}"
if [ "$major" -lt 2 ] || { [ "$major" -eq 2 ] && [ "$minor" -lt 2 ]; }; then
    say "haproxy $major.$minor is too old: the tests need 2.2 or newer"
    exit 1
fi

pinned="$(sed -n 's/^prometheus-client==//p' "$here/requirements.txt")"
if [ "$("$tools/venv/bin/python" -c 'import importlib.metadata as m; print(m.version("prometheus-client"))' 2>/dev/null)" != "$pinned" ]; then
    command -v python3 >/dev/null || { say "python3 is needed to install prometheus-client"; exit 1; }
    say "installing prometheus-client $pinned into $tools/venv (pip)"
    python3 -m venv "$tools/venv"
    "$tools/venv/bin/pip" install --quiet --disable-pip-version-check -r "$here/requirements.txt"
fi

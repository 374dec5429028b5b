#!/usr/bin/env bash
# Installs the browser the operator's page tests load the page in: Debian's
# `chromium` package, pinned to the version Debian serves (bookworm-security),
# with apt-get, the first time only. A second run checks the pin and installs
# nothing. Any failure exits non-zero with apt's error: the tests fail, they
# never skip. Needs root (apt-get), as the CI's container runs.
# Usage: bash tests/console/setup.sh
set -euo pipefail
pinned="${TOOLHOST_CHROMIUM_VERSION:-156.0.8078.108-1~deb12u1}"
say() { echo "console test tools: $*" >&2; }

# One installer at a time (tests run in parallel).
exec 9>/tmp/toolhost-console-setup.lock
flock 9

installed="$(dpkg-query -W -f='${Version}' chromium 2>/dev/null || true)"
if [ "$installed" = "$pinned" ] && command -v chromium >/dev/null; then
    exit 0
fi
if [ "$(id -u)" != 0 ]; then
    say "installing chromium $pinned needs root (apt-get); run: sudo bash $0"
    exit 1
fi
say "installing chromium $pinned (apt-get)"
export DEBIAN_FRONTEND=noninteractive
apt-get update -qq >&2
if ! apt-get install -y -qq --no-install-recommends "chromium=$pinned" fonts-dejavu-core >&2; then
    say "chromium $pinned could not be installed: Debian may have replaced it with a newer security update; \
see \`apt-cache policy chromium\` and set the new version in tests/console/setup.sh"
    exit 1
fi
chromium --version >&2

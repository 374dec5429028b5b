#!/usr/bin/env bash
# Installs the browser the operator's page tests load the page in: Debian's
# `chromium` package, pinned to the version Debian serves (bookworm-security),
# with apt-get, the first time only (or the security update that replaced
# the pin, said loudly: Debian serves only its newest Chromium). A second
# run checks the version and installs nothing. Any failure exits non-zero with apt's error: the tests fail, they
# never skip. Needs root (apt-get), as the CI's container runs.
# Usage: bash tests/console/setup.sh
set -euo pipefail
pinned="${TOOLHOST_CHROMIUM_VERSION:-156.0.8078.108-1~deb12u1}"
say() { echo "console test tools: $*" >&2; }

# One installer at a time (tests run in parallel).
exec 9>/tmp/toolhost-console-setup.lock
flock 9

installed="$(dpkg-query -W -f='${Version}' chromium 2>/dev/null || true)"
# The pin, or the security update that replaced it (below).
if [ -n "$installed" ] && dpkg --compare-versions "$installed" ge "$pinned" && command -v chromium >/dev/null; then
    exit 0
fi
if [ "$(id -u)" != 0 ]; then
    say "installing chromium $pinned needs root (apt-get); run: sudo bash $0"
    exit 1
fi
say "installing chromium $pinned (apt-get)"
export DEBIAN_FRONTEND=noninteractive
apt-get update -qq >&2
if apt-cache madison chromium | awk '{print $3}' | grep -qxF "$pinned"; then
    apt-get install -y -qq --no-install-recommends "chromium=$pinned" fonts-dejavu-core >&2
else
    # Debian's security archive serves only its newest Chromium: once an
    # update replaces the pin, the pin cannot be installed at all. Take the
    # update (never an older one) and say so, loudly, so the pin is moved.
    served="$(apt-cache policy chromium | awk '/Candidate:/ {print $2}')"
    if [ -z "$served" ] || [ "$served" = "(none)" ] || ! dpkg --compare-versions "$served" gt "$pinned"; then
        say "chromium $pinned is not served, and no newer chromium is (candidate: ${served:-none}); see \
\`apt-cache policy chromium\`"
        exit 1
    fi
    say "WARNING: chromium $pinned is no longer served (Debian replaced it with the security update $served); \
installing $served: set it as the pin in tests/console/setup.sh"
    apt-get install -y -qq --no-install-recommends "chromium=$served" fonts-dejavu-core >&2
fi
chromium --version >&2

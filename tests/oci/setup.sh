#!/usr/bin/env bash
# Installs the OCI registry the registry tests run: Debian's `docker-registry`
# package (the CNCF distribution server, /usr/bin/docker-registry), through
# apt-get, the first time only. A second run finds it and installs nothing.
# Any failure exits non-zero with apt-get's error: the tests fail, they never skip.
# (The package may try to start its own service on install; without systemd
# nothing starts, and each test runs its own registry on a loopback port anyway.)
# Usage: bash tests/oci/setup.sh   (as root, or with sudo available)
set -euo pipefail
say() { echo "oci test tools: $*" >&2; }
registry=/usr/bin/docker-registry
if [ -x "$registry" ]; then
    exit 0
fi
as_root=()
if [ "$(id -u)" != 0 ]; then
    command -v sudo >/dev/null || { say "$registry is missing and installing it needs root (apt-get install docker-registry)"; exit 1; }
    as_root=(sudo -n)
fi
# One installer at a time: other test setups may be running apt-get too.
wait_lock=(-o DPkg::Lock::Timeout=600)
say "installing Debian's docker-registry (apt-get)"
"${as_root[@]}" env DEBIAN_FRONTEND=noninteractive apt-get "${wait_lock[@]}" update -qq \
    || { say "apt-get update failed"; exit 1; }
"${as_root[@]}" env DEBIAN_FRONTEND=noninteractive apt-get "${wait_lock[@]}" install -y -qq --no-install-recommends docker-registry \
    || { say "apt-get install docker-registry failed"; exit 1; }
[ -x "$registry" ] || { say "apt-get installed docker-registry but $registry is missing"; exit 1; }

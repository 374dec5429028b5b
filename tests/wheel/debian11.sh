#!/usr/bin/env bash
# Unpacks an old Linux's C library for the wheel test to run toolhost's
# binary on: Debian 11's libc6 (glibc 2.31) and libgcc-s1, with patchelf
# (run with this machine's libraries, to point a copy of the binary at that
# loader and those libraries), into
# tests/wheel/.tools/debian11/root (gitignored), the first time only. The
# packages come from this machine's Debian mirror through a private apt state
# (its own sources list, lists and cache, no dpkg status): the system's apt
# sources and installed packages are never touched. Any failure exits
# non-zero with apt's error: the test fails, it never skips.
# Usage: bash tests/wheel/debian11.sh
set -euo pipefail
here="$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)"
base="$here/.tools/debian11"
mkdir -p "$base"
exec 9>"$base/.lock"
flock 9
packages=(libc6 libgcc-s1 patchelf)
if [ -f "$base/root/.done" ]; then exit 0; fi
command -v apt-get >/dev/null && command -v dpkg-deb >/dev/null \
    || { echo "debian11: apt-get and dpkg-deb are needed (a Debian or Ubuntu machine)" >&2; exit 1; }
rm -rf "$base/root" "$base/debs"
mkdir -p "$base/lists/partial" "$base/cache/archives/partial" "$base/debs" "$base/root"
mirror="$(awk '/^URIs:/{print $2; exit}' /etc/apt/sources.list.d/debian.sources 2>/dev/null || true)"
mirror="${mirror:-http://deb.debian.org/debian}"
echo "deb $mirror bullseye main" >"$base/sources.list"
apt=(-o "Dir::Etc::sourcelist=$base/sources.list" -o Dir::Etc::sourceparts=- -o "Dir::State::Lists=$base/lists"
     -o "Dir::Cache=$base/cache" -o Dir::State::status=/dev/null -o APT::Sandbox::User=root)
echo "debian11: fetching ${packages[*]} from $mirror bullseye" >&2
apt-get "${apt[@]}" update -qq
(cd "$base/debs" && apt-get "${apt[@]}" download -qq "${packages[@]}")
for deb in "$base"/debs/*.deb; do dpkg-deb -x "$deb" "$base/root"; done
[ -x "$base/root/lib64/ld-linux-x86-64.so.2" ] || ln -sf ../lib/x86_64-linux-gnu/ld-2.31.so "$base/root/lib64/ld-linux-x86-64.so.2"
touch "$base/root/.done"

#!/usr/bin/env bash
# Installs redis-server for the shared-state tests of tests/shared_state.rs:
# Debian 12 (bookworm)'s `redis-server` and `redis-tools` of the upstream
# release below (the Debian revision is bookworm's current one: security
# updates replace the older revisions on the mirror), with the two libraries they link (liblzf1, libjemalloc2), the
# first time only. They are fetched with `apt-get download` through a private
# sources list and a private state and cache folder (the system's apt sources,
# lists and state are never changed, and no system service is started), from
# the Debian mirror the system's own sources name, and unpacked with dpkg-deb
# into tests/state/.tools/ (ignored by git); the tests run the binary with
# LD_LIBRARY_PATH pointing there. No root needed. A second run finds it and
# installs nothing. Any failure exits non-zero with apt-get's error: the tests
# fail, they never skip.
# Usage: bash tests/state/redis.sh
set -euo pipefail
here="$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)"
tools="$here/.tools"
version="7.0.15"
root="$tools/redis"
say() { echo "redis-server for the tests: $*" >&2; }
mkdir -p "$tools"

# One installer at a time (test binaries may run this at once).
exec 9>"$tools/.lock"
flock 9

works() {
    LD_LIBRARY_PATH="$1/usr/lib/x86_64-linux-gnu:$1/usr/lib/$(uname -m)-linux-gnu" \
        "$1/usr/bin/redis-server" --version 2>/dev/null | grep -q "v=$version "
}
if [ "$(cat "$root/VERSION" 2>/dev/null)" = "$version" ] && works "$root"; then
    exit 0
fi

# The Debian mirror the system uses (deb822 `URIs:` or one-line `deb` entries).
mirror="$(
    {
        sed -n 's/^URIs:[[:space:]]*//p' /etc/apt/sources.list.d/*.sources 2>/dev/null | tr ' ' '\n'
        sed -n 's/^deb[[:space:]]\+\(\[[^]]*\][[:space:]]\+\)\?\([^[:space:]]\+\).*/\2/p' \
            /etc/apt/sources.list /etc/apt/sources.list.d/*.list 2>/dev/null
    } | grep -E '^https?://.*/debian/?$' | head -n 1 || true
)"
[ -n "$mirror" ] || { say "found no Debian mirror in the system's apt sources (/etc/apt/sources.list*) to fetch redis-server from"; exit 1; }
security="${mirror%/debian*}/debian-security"

state="$(mktemp -d "$tools/apt.XXXXXX")"
trap 'rm -rf "$state"' EXIT
mkdir -p "$state/lists/partial" "$state/cache/archives/partial" "$state/download"
{
    echo "deb $mirror bookworm main"
    echo "deb $mirror bookworm-updates main"
    echo "deb $security bookworm-security main"
} >"$state/bookworm.list"
apt=(apt-get -q
    -o "Dir::Etc::sourcelist=$state/bookworm.list" -o "Dir::Etc::sourceparts=-"
    -o "Dir::State::Lists=$state/lists" -o "Dir::Cache=$state/cache")
say "fetching Debian 12's redis-server $version (apt-get download, private lists in $state)"
"${apt[@]}" update >"$state/update.log" 2>&1 || { cat "$state/update.log" >&2; say "apt-get update of bookworm's lists failed"; exit 1; }
(cd "$state/download" && "${apt[@]}" download redis-server redis-tools liblzf1 libjemalloc2) \
    || { say "apt-get download redis-server failed"; exit 1; }
rm -rf "$root.new"
for deb in "$state"/download/*.deb; do
    dpkg-deb -x "$deb" "$root.new"
done
got="$(dpkg-deb -f "$(ls "$state"/download/redis-server_*.deb)" Version)"
case "$got" in 5:"$version"-*) ;; *) say "apt-get downloaded redis-server $got, not the pinned $version (update it here)"; exit 1 ;; esac
works "$root.new" || { say "the unpacked redis-server does not run: $(LD_LIBRARY_PATH="$root.new/usr/lib/$(uname -m)-linux-gnu" "$root.new/usr/bin/redis-server" --version 2>&1 | head -n 3)"; exit 1; }
echo "$version" >"$root.new/VERSION"
rm -rf "$root"
mv "$root.new" "$root"

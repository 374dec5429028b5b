#!/usr/bin/env bash
# Installs cosign for the signature tests of tests/all/oci.rs: Debian 13 (trixie)'s
# `cosign` package, at exactly the version below, the first time only. Debian 12
# has no cosign; trixie's binary runs here as it is. It is fetched with
# `apt-get download` through a private sources list and a private state and
# cache folder (the system's apt sources, lists and state are never changed),
# from the Debian mirror the system's own sources name, and unpacked with
# dpkg-deb into tests/oci/.tools/ (ignored by git). No root needed. A second run
# finds it and installs nothing. Any failure exits non-zero with apt-get's
# error: the tests fail, they never skip.
# Usage: bash tests/oci/cosign.sh
set -euo pipefail
here="$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)"
tools="$here/.tools"
version="2.5.0-2+b5"
root="$tools/cosign"
say() { echo "cosign for the tests: $*" >&2; }
mkdir -p "$tools"

# One installer at a time (test binaries may run this at once).
exec 9>"$tools/.lock"
flock 9

if [ -x "$root/usr/bin/cosign" ] && [ "$(cat "$root/VERSION" 2>/dev/null)" = "$version" ]; then
    exit 0
fi

# The Debian mirror the system uses (deb822 `URIs:` or one-line `deb` entries), for trixie.
mirror="$(
    {
        sed -n 's/^URIs:[[:space:]]*//p' /etc/apt/sources.list.d/*.sources 2>/dev/null | tr ' ' '\n'
        sed -n 's/^deb[[:space:]]\+\(\[[^]]*\][[:space:]]\+\)\?\([^[:space:]]\+\).*/\2/p' \
            /etc/apt/sources.list /etc/apt/sources.list.d/*.list 2>/dev/null
    } | grep -E '^https?://.*/debian/?$' | head -n 1 || true
)"
[ -n "$mirror" ] || { say "found no Debian mirror in the system's apt sources (/etc/apt/sources.list*) to fetch trixie's cosign from"; exit 1; }

state="$(mktemp -d "$tools/apt.XXXXXX")"
trap 'rm -rf "$state"' EXIT
mkdir -p "$state/lists/partial" "$state/cache/archives/partial" "$state/download"
echo "deb $mirror trixie main" >"$state/trixie.list"
apt=(apt-get -q
    -o "Dir::Etc::sourcelist=$state/trixie.list" -o "Dir::Etc::sourceparts=-"
    -o "Dir::State::Lists=$state/lists" -o "Dir::Cache=$state/cache")
say "fetching Debian 13's cosign $version (apt-get download, private lists in $state)"
"${apt[@]}" update >"$state/update.log" 2>&1 || { cat "$state/update.log" >&2; say "apt-get update of trixie's lists failed"; exit 1; }
(cd "$state/download" && "${apt[@]}" download "cosign=$version") \
    || { say "apt-get download cosign=$version failed (is $version still trixie's version? update it here)"; exit 1; }
deb="$(ls "$state"/download/cosign_*.deb)"
got="$(dpkg-deb -f "$deb" Version)"
[ "$got" = "$version" ] || { say "apt-get downloaded cosign $got, not the pinned $version"; exit 1; }
rm -rf "$root.new"
dpkg-deb -x "$deb" "$root.new"
"$root.new/usr/bin/cosign" version >/dev/null 2>&1 || { say "the unpacked cosign does not run: $("$root.new/usr/bin/cosign" version 2>&1 | head -n 3)"; exit 1; }
echo "$version" >"$root.new/VERSION"
rm -rf "$root"
mv "$root.new" "$root"

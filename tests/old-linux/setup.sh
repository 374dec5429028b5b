#!/usr/bin/env bash
# Unpacks an old Linux C library for tests/all/old_linux.rs, into
# tests/old-linux/.tools/root (gitignored), the first time only: Debian 11
# (bullseye, glibc 2.31)'s libc6 (the C library and its loader), at the
# exact version and SHA-256 sum pinned in packages.txt (one package a line;
# the binary needs no other library: zig links the unwinder in). Debian 11 is the oldest Debian suite
# still on deb.debian.org (10 and older moved to archive.debian.org).
# The test runs `make dist`'s binary as shipped in a mount namespace of its
# own (`unshare --mount --map-root-user`) where ROOT/lib/x86_64-linux-gnu is
# bound over this machine's, so the binary meets the old glibc, not this
# machine's.
# apt-get works with a private sources list, lists and cache under .tools/apt
# and an empty dpkg status (`-o Dir::State::status=/dev/null`): the system's
# apt sources and state are never read or changed, and nothing is installed
# into the system; `dpkg-deb -x` unpacks the packages. A second run checks the
# pins and fetches nothing. Any failure exits non-zero with apt's error: the
# test fails, it never skips.
# Usage: bash tests/old-linux/setup.sh
set -euo pipefail
here="$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)"
tools="$here/.tools"
mirror="http://deb.debian.org/debian"
suite="bullseye"
mkdir -p "$tools"

exec 9>"$tools/.lock"
flock 9

if cmp -s "$here/packages.txt" "$tools/root/.pinned" && [ -x "$tools/root/lib/x86_64-linux-gnu/ld-linux-x86-64.so.2" ]; then
    exit 0
fi

fail() { echo "old-linux test tools: $*" >&2; exit 1; }
[ "$(uname -m)" = x86_64 ] || fail "the pinned packages are Debian's amd64 ones; this machine is $(uname -m)"
for tool in apt-get dpkg-deb sha256sum; do
    command -v "$tool" >/dev/null || fail "$tool is needed (a Debian or Ubuntu machine has it)"
done
echo "old-linux test tools: fetching $(cut -d' ' -f1,2 "$here/packages.txt" | tr '\n' ' ')from Debian $suite into $tools/root (apt-get download)" >&2

apt="$tools/apt"
rm -rf "$apt" "$tools/root.new"
mkdir -p "$apt/lists/partial" "$apt/cache/archives/partial" "$apt/debs" "$tools/root.new"
keyring=/usr/share/keyrings/debian-archive-keyring.gpg
[ -f "$keyring" ] || fail "$keyring is missing: apt cannot check Debian's signatures without it (apt-get install debian-archive-keyring)"
echo "deb [signed-by=$keyring] $mirror $suite main" >"$apt/sources.list"
opts=(
    -o "Dir::Etc::sourcelist=$apt/sources.list" -o "Dir::Etc::sourceparts=-"
    -o "Dir::State::Lists=$apt/lists" -o "Dir::Cache=$apt/cache" -o "Dir::State::status=/dev/null"
    -o "APT::Architecture=amd64" -o "APT::Architectures=amd64"
)
# As root, apt downloads as the user _apt, who may not write into this tree.
[ "$(id -u)" != 0 ] || opts+=(-o "APT::Sandbox::User=root")
apt-get "${opts[@]}" -qq update || fail "apt-get update of Debian $suite from $mirror failed (above)"

while read -r name version sum; do
    [ -n "$name" ] || continue
    (cd "$apt/debs" && apt-get "${opts[@]}" -qq download "$name=$version") \
        || fail "apt-get download $name=$version failed (above): if Debian $suite moved on or off $mirror, pin what it has now in $here/packages.txt"
    deb="$apt/debs/${name}_${version//:/%3a}_amd64.deb"
    [ -f "$deb" ] || fail "apt-get download wrote no $deb"
    echo "$sum  $deb" | sha256sum --check --quiet - || fail "$deb is not the pinned file (SHA-256 differs)"
    dpkg-deb -x "$deb" "$tools/root.new"
done <"$here/packages.txt"

[ -x "$tools/root.new/lib/x86_64-linux-gnu/ld-linux-x86-64.so.2" ] || fail "the unpacked libc6 has no lib/x86_64-linux-gnu/ld-linux-x86-64.so.2"
cp "$here/packages.txt" "$tools/root.new/.pinned"
rm -rf "$tools/root" "$apt"
mv "$tools/root.new" "$tools/root"

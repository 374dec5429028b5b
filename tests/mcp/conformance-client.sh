#!/usr/bin/env bash
# The client side of the MCP conformance suite, played by `toolhost`: the suite
# runs `conformance-client.sh URL` (scenario in MCP_CONFORMANCE_SCENARIO); this
# writes a toolhost.toml with `[mcp_servers.conf] url = URL` and does what the
# scenario expects of a client. TOOLHOST_BIN is the toolhost binary.
set -euo pipefail
url="$1"
dir="$(mktemp -d)"
trap 'rm -rf "$dir"' EXIT
mkdir "$dir/plugins"
printf '[mcp_servers.conf]\nurl = "%s"\nrequired = true\n' "$url" > "$dir/toolhost.toml"
run() { "$TOOLHOST_BIN" --config "$dir/toolhost.toml" --plugins "$dir/plugins" "$@"; }
case "${MCP_CONFORMANCE_SCENARIO:-}" in
    initialize) run tools ;;
    tools_call) run call mcp__conf__add_numbers '{"a":2,"b":3}' ;;
    sse-retry) run call mcp__conf__test_reconnection ;;
    *) echo "conformance-client.sh: no steps for scenario '${MCP_CONFORMANCE_SCENARIO:-}'" >&2; exit 1 ;;
esac

#!/usr/bin/env bash
# The last step of `make demo`: let a model use the bundled plugins, when one
# is configured (an API key, TOOLHOST_MODEL, or a local Ollama); otherwise say
# how to point toolhost at one. Usage: bash plugins/demo-model.sh PATH/TO/toolhost
set -uo pipefail
toolhost="$1"
prompt="Use the tools: what is the SHA-256 of the text 'toolhost', and what is (17 * 23) ^ 2? Answer in two short lines."
if [ -n "${TOOLHOST_MODEL:-}${OPENAI_API_KEY:-}${ANTHROPIC_API_KEY:-}" ]; then
    exec "$toolhost" run --yes "$prompt"
fi
ollama="${OLLAMA_URL:-http://127.0.0.1:11434/v1}"
model="$(python3 - "$ollama" <<'PY' 2>/dev/null
import json, sys, urllib.request
with urllib.request.urlopen(sys.argv[1] + "/models", timeout=1) as answer:
    print(json.load(answer)["data"][0]["id"])
PY
)"
if [ -n "$model" ]; then
    exec "$toolhost" run --yes --model "ollama/$model" --base-url "$ollama" "$prompt"
fi
cat <<TXT
No model is configured, so the demo stops here. To watch a model call the plugins:
  export OPENAI_API_KEY=...      (or ANTHROPIC_API_KEY=...)   and run: make demo
  or start Ollama with a tool-capable model (e.g. ollama pull qwen3) and run: make demo
  or: $toolhost run --model PROVIDER/MODEL --base-url URL "your question"
TXT

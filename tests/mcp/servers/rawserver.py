"""A hostile MCP server for toolhost's MCP client tests, written without any
SDK (the standard library only) so that it can send what an SDK would not.
Started by toolhost over stdio: `python3 rawserver.py MODE`.

Modes:
  bad-listing  lists `good`, a tool whose inputSchema is a string, one with
               no inputSchema, one whose schema describes a string, one whose
               schema is not valid JSON Schema, `good` again, and `also_good`
  noisy        writes a line that is not JSON-RPC to stdout before every
               answer, and lists `good` and `also_good`
  deaf         lists `good` and `also_good`, then closes its standard input
               (keeping its output open) and waits: the next request written
               to it meets a closed pipe
Every tool answers `called NAME`.
"""

import json
import os
import sys
import time

mode = sys.argv[1] if len(sys.argv) > 1 else "bad-listing"
OBJECT = {"type": "object", "properties": {"x": {"type": "string"}}}


def tools():
    good = [{"name": "good", "description": "fine", "inputSchema": OBJECT}]
    also = [{"name": "also_good", "inputSchema": {"type": "object"}}]
    if mode in ("noisy", "deaf"):
        return good + also
    return good + [
        {"name": "schema_is_a_string", "inputSchema": "nope"},
        {"name": "no_schema"},
        {"name": "describes_a_string", "inputSchema": {"type": "string"}},
        {"name": "invalid_schema", "inputSchema": {"type": "object", "properties": {"x": {"type": 5}}}},
        {"name": "good", "description": "the same name again", "inputSchema": OBJECT},
    ] + also


def send(message):
    if mode == "noisy":
        sys.stdout.write("Server ready! (a library printing to stdout)\n")
    sys.stdout.write(json.dumps(message) + "\n")
    sys.stdout.flush()


for line in sys.stdin:
    try:
        request = json.loads(line)
    except ValueError:
        continue
    if "id" not in request:
        continue
    method, rid = request.get("method"), request["id"]
    if method == "initialize":
        version = request.get("params", {}).get("protocolVersion", "2025-11-25")
        info = {"name": "rawserver", "version": "1"}
        send({"jsonrpc": "2.0", "id": rid, "result": {"protocolVersion": version, "capabilities": {"tools": {}}, "serverInfo": info}})
    elif method == "tools/list":
        # Deaf: the input is closed before the answer goes out, so no request
        # written after it can land in the pipe's buffer (a race that made
        # toolhost wait for the output to end instead).
        if mode == "deaf":
            os.close(0)
        send({"jsonrpc": "2.0", "id": rid, "result": {"tools": tools()}})
        if mode == "deaf":
            time.sleep(20)
            sys.exit(0)
    elif method == "tools/call":
        text = "called " + request["params"]["name"]
        send({"jsonrpc": "2.0", "id": rid, "result": {"content": [{"type": "text", "text": text}]}})
    else:
        send({"jsonrpc": "2.0", "id": rid, "error": {"code": -32601, "message": "method not found"}})

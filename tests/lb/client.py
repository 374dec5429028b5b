"""Calls `toolhost serve --http` replicas through a load balancer with the
official Python MCP SDK (`mcp`), as an agent would.

Usage (tests/all/replicas.rs runs it with the venv tests/mcp/setup.sh made):
    client.py --mode legacy|2026-07-28 --url http://127.0.0.1:PORT/mcp --count N [--ms MS] [--prefix P]

One client (in legacy mode, one session) calls `slow_echo` N times, one after
the other, with {"text": "P-i", "ms": MS}. Each call's result is printed on
stdout as one JSON line as soon as it is known:
    {"i": 3, "ok": true, "text": "P-3"}    or    {"i": 3, "ok": false, "error": "..."}
and at the end {"done": true, "protocol": "..."}. A failed call is recorded and
the client goes on with the next one; when the SDK's client dies with its
transport, the call it was making is recorded as failed, {"reconnected": true}
is printed and a new client goes on (an agent would reconnect). Only a client
that cannot start exits 1.
"""

import argparse
import asyncio
import json
import sys

from mcp import Client


def emit(record):
    print(json.dumps(record), flush=True)


def text_of(result):
    return "".join(block.text for block in result.content if getattr(block, "type", None) == "text")


async def calls(args, start):
    """Calls from `start` on; returns the index reached when the client died, or None."""
    i = start
    try:
        async with Client(args.url, mode=args.mode, cache=None) as client:
            while i < args.count:
                arguments = {"text": f"{args.prefix}-{i}", "ms": args.ms}
                try:
                    result = await asyncio.wait_for(client.call_tool("slow_echo", arguments), timeout=30)
                    if result.is_error:
                        emit({"i": i, "ok": False, "error": text_of(result)})
                    else:
                        emit({"i": i, "ok": True, "text": text_of(result)})
                except Exception as err:  # noqa: BLE001 - every failure is a result to report
                    emit({"i": i, "ok": False, "error": f"{type(err).__name__}: {err}"})
                i += 1
            emit({"done": True, "protocol": client.protocol_version})
            return None
    except Exception as err:  # noqa: BLE001
        # The SDK's client dies with its transport (e.g. a response cut short):
        # the call it was making failed, and an agent would connect again.
        if i < args.count:
            emit({"i": i, "ok": False, "error": f"client died: {type(err).__name__}: {err}"})
            return i + 1
        raise


async def main():
    parser = argparse.ArgumentParser()
    parser.add_argument("--mode", required=True)
    parser.add_argument("--url", required=True)
    parser.add_argument("--count", type=int, required=True)
    parser.add_argument("--ms", type=int, default=0)
    parser.add_argument("--prefix", default="call")
    args = parser.parse_args()
    start = 0
    while start is not None:
        start = await calls(args, start)
        if start is not None:
            emit({"reconnected": True})


if __name__ == "__main__":
    try:
        asyncio.run(main())
    except Exception as err:  # noqa: BLE001
        print(f"client.py: {type(err).__name__}: {err}", file=sys.stderr)
        sys.exit(1)

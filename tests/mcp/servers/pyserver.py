"""An MCP server written with the official Python SDK (`mcp`), for toolhost's
MCP client tests. Started by toolhost over stdio: `python pyserver.py MODE`.

Modes:
  tools    add_numbers, environment (the names of its environment variables),
           grow (adds the tool `late_tool` and sends tools/list_changed),
           crash (the process exits in the middle of the call), pid (its process id),
           sleep (never answers), was_cancelled (whether a sleep was cancelled)
  hang     never finishes starting (never reads its stdin)
  slow     sleeps PYSERVER_DELAY seconds (default 3), then serves as `tools`

Every start appends the process id to the file PYSERVER_STARTS names, if set.
"""

import asyncio
import os
import sys
import time

from mcp.server.mcpserver import Context, MCPServer

mode = sys.argv[1] if len(sys.argv) > 1 else "tools"
if os.environ.get("PYSERVER_STARTS"):
    with open(os.environ["PYSERVER_STARTS"], "a") as starts:
        starts.write(f"{os.getpid()}\n")
if mode == "slow":
    time.sleep(float(os.environ.get("PYSERVER_DELAY", "3")))
if mode == "hang":
    time.sleep(3600)
    sys.exit(0)

server = MCPServer("pyserver")


@server.tool()
def add_numbers(a: int, b: int) -> str:
    """Adds two integers."""
    return f"The sum of {a} and {b} is {a + b}."


@server.tool()
def environment() -> str:
    """The names of this server's environment variables, sorted."""
    return " ".join(sorted(os.environ))


def late_tool() -> str:
    """Added at run time by grow."""
    return "late tool here"


@server.tool()
async def grow(ctx: Context) -> str:
    """Adds the tool late_tool and says the tool list changed."""
    server.add_tool(late_tool)
    # A 2026-07-28 client hears of it on its subscriptions/listen stream, a
    # 2025-11-25 one by the notification pushed in its session.
    try:
        await ctx.notify_tools_changed()
    except ValueError:
        pass
    await ctx.session.send_tool_list_changed()
    return "grown"


@server.tool()
def crash() -> str:
    """Exits the process in the middle of the call."""
    print("pyserver: crashing on purpose", file=sys.stderr, flush=True)
    os._exit(3)


@server.tool()
def pid() -> str:
    """This server's process id."""
    return str(os.getpid())


cancelled = []


@server.tool()
async def sleep() -> str:
    """Never answers (until cancelled)."""
    try:
        await asyncio.sleep(3600)
    except asyncio.CancelledError:
        cancelled.append("sleep")
        raise
    return "woke up"


@server.tool()
def was_cancelled() -> str:
    """Which calls the client cancelled (notifications/cancelled)."""
    return "cancelled: " + (", ".join(cancelled) or "none")


server.run("stdio")

"""Drives `toolhost serve` with the official Python MCP SDK of the 2025-11-25
revision (`mcp` 1.x, pinned in requirements-2025.txt), through its experimental
tasks API (`session.experimental`): a `tools/call` with `task`, polled with
tasks/get, read with tasks/result, listed and cancelled.

Usage (tests/all/mcp.rs runs it with the venv setup.sh made):
    tasks_2025.py --url http://127.0.0.1:PORT/mcp
    tasks_2025.py -- TOOLHOST --plugins DIR --config FILE

Everything printed on stdout is one JSON object; failures raise (exit 1).
"""

import argparse
import asyncio
import json
import os
import time
import warnings
from contextlib import asynccontextmanager

import mcp.types as types
from mcp import ClientSession
from mcp.client.stdio import StdioServerParameters, stdio_client
from mcp.client.streamable_http import streamablehttp_client
from mcp.shared.exceptions import McpError

warnings.simplefilter("ignore", DeprecationWarning)

ASKED = []


async def on_elicitation(context, params):
    ASKED.append({"message": params.message, "meta": (params.model_dump(by_alias=True, exclude_none=True).get("_meta"))})
    return types.ElicitResult(action="accept", content={"confirm": True})


@asynccontextmanager
async def session(args):
    if args.url:
        connection = streamablehttp_client(args.url)
    else:
        server = StdioServerParameters(command=args.command[0], args=args.command[1:] + ["serve"], env=dict(os.environ))
        connection = stdio_client(server)
    async with connection as streams:
        async with ClientSession(streams[0], streams[1], elicitation_callback=on_elicitation) as client:
            initialized = await client.initialize()
            yield client, initialized


def dump(model):
    return model.model_dump(by_alias=True, mode="json", exclude_none=True)


def error(err):
    return {"code": err.error.code, "message": err.error.message, "data": err.error.data}


async def run_task(client, tool, arguments, ttl=60000):
    """A tool called as a task, polled to its end (reading the result early
    when it needs input, as the revision says); its statuses and result."""
    created = await client.experimental.call_tool_as_task(tool, arguments, ttl=ttl)
    task_id = created.task.taskId
    record = {"created": dump(created), "statuses": [created.task.status], "messages": []}
    async for status in client.experimental.poll_task(task_id):
        if status.status != record["statuses"][-1]:
            record["statuses"].append(status.status)
        if status.statusMessage and status.statusMessage not in record["messages"]:
            record["messages"].append(status.statusMessage)
        if status.status == "input_required":
            # The questions come on the stream of tasks/result, which waits for the end.
            break
    try:
        result = await client.experimental.get_task_result(task_id, types.CallToolResult)
        record["result"] = dump(result)
    except McpError as err:
        record["error"] = error(err)
    record["final"] = dump(await client.experimental.get_task(task_id))
    return record


async def scenario(args):
    out = {}
    async with session(args) as (client, initialized):
        out["protocol"] = initialized.protocolVersion
        out["capabilities"] = dump(initialized.capabilities)
        tools = await client.list_tools()
        out["listed"] = {tool.name: (tool.execution.taskSupport if tool.execution else None) for tool in tools.tools}

        out["slow"] = await run_task(client, "slow_compute", {"seconds": 2.5, "label": "py"})
        out["confirm"] = await run_task(client, "confirm_delete", {"filename": "notes.txt"})
        out["asked"] = ASKED
        out["failing"] = await run_task(client, "failing_job", {})
        out["protocol_error"] = await run_task(client, "protocol_error_job", {})
        # The plugin's limits still apply: its 5 s timeout ends a task of a minute.
        out["timed_out"] = await run_task(client, "slow_compute", {"seconds": 60, "label": "too long"})
        # A longer life than the server keeps tasks: the server's.
        out["long_ttl"] = await run_task(client, "slow_compute", {"seconds": 0, "label": "long"}, ttl=10**12)

        # Cancelled while it runs: the call stops (one call at a time: the
        # next would otherwise wait for it); a second cancel is refused.
        created = await client.experimental.call_tool_as_task("slow_compute", {"seconds": 60, "label": "cancel me"})
        task_id = created.task.taskId
        await asyncio.sleep(1)
        out["cancelled"] = dump(await client.experimental.cancel_task(task_id))
        errors = {}
        try:
            await client.experimental.cancel_task(task_id)
            errors["cancel_again"] = "no error"
        except McpError as err:
            errors["cancel_again"] = error(err)
        try:
            await client.experimental.get_task_result(task_id, types.CallToolResult)
            errors["result_of_cancelled"] = "no error"
        except McpError as err:
            errors["result_of_cancelled"] = error(err)
        started = time.monotonic()
        out["greet_after_cancel"] = dump(await client.call_tool("greet", {"name": "again"}))
        out["greet_after_cancel_seconds"] = time.monotonic() - started

        listed = await client.experimental.list_tasks()
        out["tasks"] = [dump(task) for task in listed.tasks]
        out["next_cursor"] = listed.nextCursor

        # A tool that never runs as a task, asked to; one that only does, called plainly.
        for name, call in [
            ("forbidden", client.experimental.call_tool_as_task("greet", {"name": "Ada"})),
            ("required_plain", client.call_tool("failing_job", {})),
            ("unknown", client.experimental.get_task(task_id[:-4] + "0000")),
            ("bad_cursor", client.experimental.list_tasks(cursor="nonsense")),
        ]:
            try:
                await call
                errors[name] = "no error"
            except McpError as err:
                errors[name] = error(err)
        out["errors"] = errors
        out["greet"] = dump(await client.call_tool("greet", {"name": "Ada"}))
        out["mine"] = task_id

        if args.url:
            # Another session sees none of them.
            async with session(args) as (other, _):
                try:
                    await other.experimental.get_task(out["mine"])
                    out["other_session"] = "no error"
                except McpError as err:
                    out["other_session"] = error(err)
                out["other_session_tasks"] = [dump(task) for task in (await other.experimental.list_tasks()).tasks]
            # A task left running when the session ends (the client DELETEs it).
            orphan = await client.experimental.call_tool_as_task("slow_compute", {"seconds": 60, "label": "orphan"})
            out["orphan"] = orphan.task.taskId
            await asyncio.sleep(1)

    if args.url:
        # The session's end ended its task: the guest stopped (the next call,
        # one at a time, does not wait for it), and its id is no more.
        async with session(args) as (later, _):
            started = time.monotonic()
            out["greet_after_session"] = dump(await later.call_tool("greet", {"name": "later"}))
            out["greet_after_session_seconds"] = time.monotonic() - started
            try:
                await later.experimental.get_task(out["orphan"])
                out["orphan_after_session"] = "no error"
            except McpError as err:
                out["orphan_after_session"] = error(err)
    return out


async def main():
    parser = argparse.ArgumentParser()
    parser.add_argument("--url")
    parser.add_argument("command", nargs="*")
    args = parser.parse_args()
    print(json.dumps(await scenario(args), default=str))


if __name__ == "__main__":
    asyncio.run(main())

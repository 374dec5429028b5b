"""Drives `toolhost serve` with the official Python MCP SDK (`mcp`), as an agent would.

Usage (the Rust tests in tests/all/mcp.rs run it with the venv setup.sh made):
    client.py --mode legacy|2026-07-28 --url http://127.0.0.1:PORT/mcp SCENARIO
    client.py --mode legacy|2026-07-28 --plugins DIR --config FILE -- TOOLHOST SCENARIO

Scenarios:
    basics       list the tools, call sha256, a runaway plugin, an unknown tool,
                 cancel spin_forever, then call again; prints one JSON object
    listchanged  wait (up to 10 s) for tools/list_changed, via a pushed
                 notification (legacy) or subscriptions/listen (2026-07-28),
                 after which the list differs; prints the tool names before
                 and after
    logs         set the log level to debug, call a tool that logs; prints the log
                 notifications received
    quotas       call sha256 three times, then spin_forever twice at once;
                 prints every result (the config sets the quotas)
    typed        the typed_shop test plugin: its output schemas, and calls of
                 get-item (found and missing) and hello
    async        the async_tools test plugin (WASI 0.3): sum, never-resolves (stuck),
                 spin-task cancelled after 0.5 s, then sum again
    content      the content_kinds test plugin (contract 0.2.0): its tools' titles,
                 annotations and output schemas, and every block of show_content,
                 measure's structured content, and lying_image's error
    asking       content_kinds' tools that ask, answered by this client's
                 elicitation, sampling and roots callbacks (a server-to-client
                 request in a session, InputRequiredResult rounds in 2026-07-28);
                 a message containing "bad" gets an answer that breaks the schema
    sdk          with --prefix P (default sdk): the tools P_elicit, P_sample,
                 P_roots, P_batch and P_media of a plugin written with an SDK or
                 helper (sdk_asks in Rust), answered as in `asking`
    undeclared   the same tools, asked by a client without those capabilities
    tasks        (2026-07-28, over HTTP) long calls as MCP tasks, through this SDK's
                 extension API: a `TasksExtension` declares io.modelcontextprotocol/tasks
                 and claims `resultType: "task"`, polling tasks/get and answering
                 inputRequests with tasks/update; then a task cancelled, an unknown
                 id, a task past its plugin's timeout, and a client without the
                 extension
    pages        walk tools/list page by page (nextCursor), then a forged cursor,
                 then call each --call NAME (with {"text": "hi"}); prints the page
                 sizes, every name, the seconds the walk took and each outcome
    firstrun     a first launch with a cold compile cache: how long the connection
                 took, a call of sha256 at once (before it may be loaded), the first
                 tools/list, then (legacy: on each tools/list_changed; 2026-07-28:
                 polling) lists again until every --call NAME is listed, and calls
                 convert_units if it is one of them
    oauth        with --client ID:SECRET:SCOPES --issuer URL: an OAuth client
                 (client credentials) lists the tools and calls the first one it sees

Everything printed on stdout is one JSON object; failures raise (exit 1).
"""

import argparse
import asyncio
import json
import os
import sys
import time

from typing import Any, Literal

from pydantic import ConfigDict, Field

from mcp import Client
from mcp.client.extension import ClientExtension, ResultClaim
from mcp.client.stdio import StdioServerParameters
from mcp.shared.exceptions import MCPError
import mcp_types as types


def content_text(result):
    return "".join(block.text for block in result.content if getattr(block, "type", None) == "text")


def as_json(result):
    return {
        "is_error": bool(result.is_error),
        "text": content_text(result),
        "structured": result.structured_content,
        "meta": result.meta,
    }


async def basics(client):
    out = {"protocol": client.protocol_version}
    listed = await client.list_tools()
    out["tools"] = sorted(tool.name for tool in listed.tools)
    out["annotations"] = {
        tool.name: (tool.annotations.model_dump(exclude_none=True) if tool.annotations else None)
        for tool in listed.tools
    }
    out["schemas"] = {tool.name: tool.input_schema for tool in listed.tools}
    out["sha256"] = as_json(await client.call_tool("sha256", {"text": "hello"}))
    out["runaway"] = as_json(await client.call_tool("spin_forever", {}))
    out["bad_arguments"] = as_json(await client.call_tool("sha256", {"text": 5}))
    try:
        await client.call_tool("nope", {})
        out["unknown"] = None
    except MCPError as err:
        out["unknown"] = {"code": err.code, "message": err.error.message}
    started = time.monotonic()
    try:
        await asyncio.wait_for(client.call_tool("spin_forever", {}), timeout=0.3)
        out["cancelled"] = {"completed": True}
    except (asyncio.TimeoutError, TimeoutError):
        out["cancelled"] = {"completed": False}
    out["cancelled"]["returned_after_s"] = time.monotonic() - started
    started = time.monotonic()
    after = await client.call_tool("sha256", {"text": "still here"})
    out["after_cancel"] = as_json(after)
    out["after_cancel"]["took_s"] = time.monotonic() - started
    return out


async def listchanged(client):
    before = sorted(tool.name for tool in (await client.list_tools()).tools)
    print(json.dumps({"ready": True}), file=sys.stderr, flush=True)
    started = time.monotonic()
    after = before

    async def relist():
        nonlocal after
        after = sorted(tool.name for tool in (await client.list_tools()).tools)
        return after != before

    # A list_changed may also come for what the server's own start loaded
    # after `initialize`: wait for one after which the list differs.
    if client.protocol_version == "2026-07-28":
        async with client.listen(tools_list_changed=True) as subscription:
            print("listening", file=sys.stderr, flush=True)
            async def first():
                async for _event in subscription:
                    if await relist():
                        return
            await asyncio.wait_for(first(), timeout=10)
    else:
        async def first():
            while True:
                await CHANGED.wait()
                CHANGED.clear()
                if await relist():
                    return
        await asyncio.wait_for(first(), timeout=10)
    waited = time.monotonic() - started
    return {"before": before, "after": after, "waited_s": waited}


LOGS = []
CHANGED = asyncio.Event()
STARTED = time.monotonic()


async def firstrun(client, wanted):
    out = {"protocol": client.protocol_version, "connected_s": time.monotonic() - STARTED}
    started = time.monotonic()
    out["early_call"] = as_json(await client.call_tool("sha256", {"text": "hello"}))
    out["early_call"]["took_s"] = time.monotonic() - started
    lists, notified = [], 0
    deadline = time.monotonic() + 300
    while True:
        CHANGED.clear()
        listed = sorted(tool.name for tool in (await client.list_tools()).tools)
        lists.append(listed)
        if all(name in listed for name in wanted):
            break
        remaining = deadline - time.monotonic()
        if remaining <= 0:
            raise TimeoutError(f"{wanted} were never all listed: {listed}")
        if client.protocol_version == "2026-07-28":
            await asyncio.sleep(0.5)
        else:
            await asyncio.wait_for(CHANGED.wait(), timeout=remaining)
            notified += 1
    out["first_list"], out["last_list"], out["notified"] = lists[0], lists[-1], notified
    if "convert_units" in wanted:
        out["late_call"] = as_json(await client.call_tool("convert_units", {"value": 212, "from": "°F", "to": "celsius"}))
    return out


async def quotas(client):
    out = {"sha256": [as_json(await client.call_tool("sha256", {"text": "x"})) for _ in range(3)]}
    first = asyncio.create_task(client.call_tool("spin_forever", {}))
    await asyncio.sleep(0.5)
    out["busy"] = as_json(await client.call_tool("spin_forever", {}))
    out["first"] = as_json(await first)
    out["after"] = as_json(await client.call_tool("spin_forever", {}))
    return out


async def typed(client):
    listed = await client.list_tools()
    out = {"schemas": {tool.name: tool.output_schema for tool in listed.tools}}
    out["item"] = as_json(await client.call_tool("get-item", {"sku": "A-1"}))
    out["missing"] = as_json(await client.call_tool("get-item", {"sku": "Z-9"}))
    out["greet"] = as_json(await client.call_tool("hello", {"name": "MCP", "excited": True}))
    return out


async def async_tools(client):
    out = {"tools": sorted(tool.name for tool in (await client.list_tools()).tools)}
    out["sum"] = as_json(await client.call_tool("sum", {"a": 40, "b": 2}))
    out["stuck"] = as_json(await client.call_tool("never-resolves", {}))
    started = time.monotonic()
    try:
        await asyncio.wait_for(client.call_tool("spin-task", {}), timeout=0.5)
        out["cancelled"] = {"completed": True}
    except (asyncio.TimeoutError, TimeoutError):
        out["cancelled"] = {"completed": False}
    out["cancelled"]["returned_after_s"] = time.monotonic() - started
    out["after_cancel"] = as_json(await client.call_tool("sum", {"a": 1, "b": 2}))
    return out


async def content(client):
    listed = await client.list_tools()
    out = {
        "tools": {
            tool.name: {
                "title": tool.title,
                "annotations": tool.annotations.model_dump(exclude_none=True) if tool.annotations else None,
                "output_schema": tool.output_schema,
            }
            for tool in listed.tools
        }
    }
    shown = await client.call_tool("show_content", {})
    out["show_content"] = [block.model_dump(mode="json", by_alias=True, exclude_none=True) for block in shown.content]
    out["measure"] = as_json(await client.call_tool("measure", {"text": "two words"}))
    out["lying_image"] = as_json(await client.call_tool("lying_image", {}))
    resources = await client.list_resources()
    out["resources"] = sorted(str(resource.uri) for resource in resources.resources)
    templates = await client.list_resource_templates()
    out["templates"] = [template.uri_template for template in templates.resource_templates]
    read = await client.read_resource("test://template/7/data")
    out["read"] = [content.model_dump(mode="json", by_alias=True, exclude_none=True) for content in read.contents]
    try:
        await client.read_resource("test://missing")
        out["missing"] = None
    except MCPError as err:
        out["missing"] = {"code": err.error.code, "message": err.error.message, "data": err.error.data}
    try:
        await client.read_resource("test://huge")
        out["huge"] = None
    except MCPError as err:
        out["huge"] = {"code": err.error.code, "message": err.error.message}
    prompts = await client.list_prompts()
    out["prompts"] = sorted(prompt.name for prompt in prompts.prompts)
    got = await client.get_prompt("test_prompt_with_arguments", {"arg1": "a", "arg2": "b"})
    out["prompt"] = [message.model_dump(mode="json", by_alias=True, exclude_none=True) for message in got.messages]
    return out


ASKED = []


async def on_sampling(context, params):
    ASKED.append({"method": "sampling/createMessage", "max_tokens": params.max_tokens})
    question = params.messages[0].content
    said = getattr(question, "text", "")
    return types.CreateMessageResult(
        role="assistant",
        content=types.TextContent(type="text", text=f"sampled: {said}"),
        model="scripted-model",
        stop_reason="endTurn",
    )


async def on_elicitation(context, params):
    ASKED.append({"method": "elicitation/create", "message": params.message})
    if "bad" in params.message:
        return types.ElicitResult(action="accept", content={"username": 7})
    return types.ElicitResult(action="accept", content={"username": "ada", "email": "ada@example.com", "name": "Ada", "ok": True, "color": "blue"})


async def on_roots(context):
    ASKED.append({"method": "roots/list"})
    return types.ListRootsResult(roots=[types.Root(uri="file:///work/project", name="project")])


async def outcome(client, tool, arguments):
    try:
        return as_json(await client.call_tool(tool, arguments))
    except MCPError as err:
        return {"error": {"code": err.error.code, "message": err.error.message, "data": err.error.data}}


async def asking(client):
    out = {"protocol": client.protocol_version}
    out["elicitation"] = await outcome(client, "test_elicitation", {"message": "Who are you?"})
    out["sampling"] = await outcome(client, "test_sampling", {"prompt": "What is 2+2?"})
    out["roots"] = await outcome(client, "test_input_required_result_list_roots", {})
    out["multi_round"] = await outcome(client, "test_input_required_result_multi_round", {})
    out["bad_answer"] = await outcome(client, "test_elicitation", {"message": "a bad answer please"})
    out["asked"] = ASKED
    return out


async def sdk(client, prefix="sdk"):
    """The tools PREFIX_elicit, _sample, _roots, _batch and _media of a plugin
    written with an SDK or helper (sdk_asks: Rust; py_asks, js_asks, c_asks),
    answered as in `asking`."""
    out = {"protocol": client.protocol_version}
    out["elicit"] = await outcome(client, f"{prefix}_elicit", {})
    out["sample"] = await outcome(client, f"{prefix}_sample", {"prompt": "What is 2+2?"})
    out["roots"] = await outcome(client, f"{prefix}_roots", {})
    out["batch"] = await outcome(client, f"{prefix}_batch", {})
    media = await client.call_tool(f"{prefix}_media", {})
    out["media"] = [block.model_dump(mode="json", by_alias=True, exclude_none=True) for block in media.content]
    out["media_structured"] = media.structured_content
    out["asked"] = ASKED
    return out


async def loaded(client):
    """Waits (up to 120 s) until the server's plugins folder has loaded: a
    list answered while it loads is one page, and may grow; it is whole once
    two lists a second apart agree and a paged answer (nextCursor) or the
    same count says the load is over."""
    deadline = time.monotonic() + 120
    last = None
    while time.monotonic() < deadline:
        listed = await client.list_tools()
        now = (len(listed.tools), listed.next_cursor is not None)
        if now == last:
            return
        last = now
        await asyncio.sleep(1)


async def pages(client, calls):
    await loaded(client)
    out = {"protocol": client.protocol_version, "pages": [], "names": []}
    cursor, first_cursor = None, None
    started = time.monotonic()
    while True:
        listed = await client.list_tools(cursor=cursor)
        out["pages"].append(len(listed.tools))
        out["names"].extend(tool.name for tool in listed.tools)
        cursor = listed.next_cursor
        if cursor is None:
            break
        first_cursor = first_cursor or cursor
        if len(out["pages"]) > 10000:
            raise RuntimeError("the server never stopped giving cursors")
    out["seconds"] = time.monotonic() - started
    if first_cursor:
        middle = len(first_cursor) // 2
        forged = first_cursor[:middle] + ("A" if first_cursor[middle] != "A" else "B") + first_cursor[middle + 1:]
        try:
            await client.list_tools(cursor=forged)
            out["forged"] = "accepted"
        except MCPError as err:
            out["forged"] = {"code": err.code, "message": err.error.message}
        again = await client.list_tools(cursor=first_cursor)
        out["again"] = [tool.name for tool in again.tools]
    out["calls"] = {}
    for name in calls:
        try:
            out["calls"][name] = as_json(await client.call_tool(name, {"text": "hi"}))
        except MCPError as err:
            out["calls"][name] = {"code": err.code, "message": err.error.message}
    return out


async def undeclared(client):
    out = {"protocol": client.protocol_version}
    out["sampling"] = await outcome(client, "test_sampling", {"prompt": "What is 2+2?"})
    out["capabilities"] = await outcome(client, "test_input_required_result_capabilities", {})
    return out


class Memory:
    def __init__(self):
        self.tokens = None
        self.client = None

    async def get_tokens(self):
        return self.tokens

    async def set_tokens(self, tokens):
        self.tokens = tokens

    async def get_client_info(self):
        return self.client

    async def set_client_info(self, client):
        self.client = client


async def oauth(args):
    import httpx2
    from mcp.client.auth.extensions.client_credentials import ClientCredentialsOAuthProvider
    from mcp.client.streamable_http import streamable_http_client

    client_id, secret, scopes = args.client.split(":", 2)
    provider = ClientCredentialsOAuthProvider(
        server_url=args.url, storage=Memory(), client_id=client_id, client_secret=secret,
        scope=scopes.replace(",", " ") or None, issuer=args.issuer,
    )
    out = {}
    async with httpx2.AsyncClient(auth=provider) as http:
        transport = streamable_http_client(args.url, http_client=http)
        async with Client(transport, mode=args.mode, cache=None, elicitation_callback=on_elicitation) as client:
            listed = await client.list_tools()
            out["tools"] = sorted(tool.name for tool in listed.tools)
            if out["tools"]:
                first = out["tools"][0]
                arguments = {"text": "abc", "algorithm": "sha256"} if first == "hash" else {"text": "abc"}
                out["called"] = as_json(await client.call_tool(first, arguments))
            if "test_input_required_result_multi_round" in out["tools"]:
                out["multi_round"] = as_json(await client.call_tool("test_input_required_result_multi_round", {}))
    return out


TASKS = "io.modelcontextprotocol/tasks"


class TaskIdParams(types.RequestParams):
    task_id: str


class UpdateTaskParams(TaskIdParams):
    input_responses: dict[str, Any]


class GetTask(types.Request[TaskIdParams, Literal["tasks/get"]]):
    method: Literal["tasks/get"] = "tasks/get"
    name_param = "taskId"


class UpdateTask(types.Request[UpdateTaskParams, Literal["tasks/update"]]):
    method: Literal["tasks/update"] = "tasks/update"
    name_param = "taskId"


class CancelTask(types.Request[TaskIdParams, Literal["tasks/cancel"]]):
    method: Literal["tasks/cancel"] = "tasks/cancel"
    name_param = "taskId"


class DetailedTask(types.Result):
    """What tasks/get answers (SEP-2663 DetailedTask), every field kept."""

    model_config = ConfigDict(extra="allow")
    result_type: str | None = None
    task_id: str
    status: str
    status_message: str | None = None
    ttl_ms: int | None = None
    poll_interval_ms: int | None = None
    input_requests: dict[str, Any] | None = None
    result: dict[str, Any] | None = None
    error: dict[str, Any] | None = None


class Ack(types.Result):
    model_config = ConfigDict(extra="allow")
    result_type: str | None = None


class CreateTaskResult(types.Result):
    model_config = ConfigDict(extra="allow")
    result_type: Literal["task"] = Field(default="task")
    task_id: str
    status: str
    ttl_ms: int | None = None
    poll_interval_ms: int | None = None


async def get_task(session, task_id):
    return await session.send_request(GetTask(params=TaskIdParams(task_id=task_id)), DetailedTask)


class TasksExtension(ClientExtension):
    """The tasks extension as a client of it would write it with this SDK:
    a task handle is polled until it ends, its questions answered on the way."""

    identifier = TASKS

    def __init__(self, seen):
        self.seen = seen

    def claims(self):
        return [ResultClaim(result_type="task", model=CreateTaskResult, resolve=self.resolve)]

    async def resolve(self, created, ctx):
        record = {"tool": ctx.tool_name, "task_id": created.task_id, "ttl_ms": created.ttl_ms,
                  "poll_interval_ms": created.poll_interval_ms, "statuses": [created.status], "messages": []}
        self.seen.append(record)
        while True:
            await asyncio.sleep(min(created.poll_interval_ms or 1000, 1000) / 1000)
            task = await get_task(ctx.session, created.task_id)
            if task.status != record["statuses"][-1]:
                record["statuses"].append(task.status)
            if task.status_message and task.status_message not in record["messages"]:
                record["messages"].append(task.status_message)
            if task.status == "input_required":
                answers = {key: {"action": "accept", "content": {"confirm": True}} for key in task.input_requests or {}}
                record["asked"] = sorted(answers)
                await ctx.session.send_request(
                    UpdateTask(params=UpdateTaskParams(task_id=created.task_id, input_responses=answers)), Ack)
            elif task.status == "completed":
                return types.CallToolResult.model_validate(task.result)
            elif task.status == "failed":
                raise MCPError(task.error["code"], task.error["message"], task.error.get("data"))
            elif task.status == "cancelled":
                raise RuntimeError(f"task {created.task_id} was cancelled: {task.status_message}")


async def tasks(url):
    seen = []
    out = {}
    # The elicitation callback declares the capability; task questions come through tasks/get.
    async with Client(url, mode="2026-07-28", extensions=[TasksExtension(seen)], elicitation_callback=on_elicitation,
                      cache=None) as client:
        tools = await client.list_tools()
        out["listed"] = {tool.name: (tool.meta or {}).get("toolhost/taskSupport") for tool in tools.tools}
        out["slow"] = as_json(await client.call_tool("slow_compute", {"seconds": 2.5, "label": "py"}))
        out["confirm"] = as_json(await client.call_tool("confirm_delete", {"filename": "notes.txt"}))
        out["failing"] = as_json(await client.call_tool("failing_job", {}))
        try:
            await client.call_tool("protocol_error_job", {})
            out["protocol_error"] = "no error"
        except MCPError as err:
            out["protocol_error"] = {"code": err.code, "message": err.message}
        out["timed_out"] = as_json(await client.call_tool("slow_compute", {"seconds": 60, "label": "too long"}))
        out["greet"] = as_json(await client.call_tool("greet", {"name": "Ada"}))
        out["tasks"] = seen

        # A task cancelled while it runs: the call stops (with one call at a
        # time, the next call would otherwise wait for it).
        session = client.session
        created = await session.call_tool("slow_compute", {"seconds": 60, "label": "cancel me"}, allow_claimed=True)
        out["created"] = created.model_dump(by_alias=True, mode="json")
        await asyncio.sleep(1)
        ack = await session.send_request(CancelTask(params=TaskIdParams(task_id=created.task_id)), Ack)
        again = await session.send_request(CancelTask(params=TaskIdParams(task_id=created.task_id)), Ack)
        out["cancel_acks"] = [ack.model_dump(by_alias=True, mode="json"), again.model_dump(by_alias=True, mode="json")]
        out["after_cancel"] = (await get_task(session, created.task_id)).model_dump(by_alias=True, mode="json")
        started = time.monotonic()
        out["greet_after_cancel"] = as_json(await client.call_tool("greet", {"name": "again"}))
        out["greet_after_cancel_seconds"] = time.monotonic() - started

        errors = {}
        for name, task_id in [("unknown", created.task_id[:-4] + "0000"), ("huge", "x" * 5000),
                              ("other_replica", "gone-replica.0123abcd." + "f" * 32)]:
            try:
                await get_task(session, task_id)
                errors[name] = "no error"
            except MCPError as err:
                errors[name] = {"code": err.code, "message": err.message}
        out["errors"] = errors

    # A client without the extension: optional tools run in the request,
    # required ones are refused with -32021.
    async with Client(url, mode="2026-07-28", cache=None) as plain:
        out["plain_slow"] = as_json(await plain.call_tool("slow_compute", {"seconds": 0, "label": "plain"}))
        try:
            await plain.call_tool("failing_job", {})
            out["plain_required"] = "no error"
        except MCPError as err:
            out["plain_required"] = {"code": err.code, "message": err.message}
    return out


async def on_message(message):
    method = getattr(getattr(message, "root", message), "method", None) or getattr(message, "method", None)
    if method == "notifications/tools/list_changed" or type(message).__name__ == "ToolListChangedNotification":
        CHANGED.set()


async def on_log(params):
    LOGS.append({"level": params.level, "logger": params.logger, "data": params.data})


async def logs(client):
    if client.protocol_version != "2026-07-28":
        await client.set_logging_level("debug")
    result = await client.call_tool("hash", {"text": "abc", "algorithm": "sha256"})
    await asyncio.sleep(0.2)
    return {"result": as_json(result), "logs": LOGS}


async def main():
    parser = argparse.ArgumentParser()
    parser.add_argument("--mode", default="legacy")
    parser.add_argument("--url")
    parser.add_argument("--client")
    parser.add_argument("--issuer")
    parser.add_argument("--prefix", default="sdk")
    parser.add_argument("--call", action="append", default=[])
    parser.add_argument("--serve-arg", action="append", default=[])
    parser.add_argument("--as-given", action="store_true", help="launch COMMAND as given (no `serve` added)")
    parser.add_argument("scenario")
    parser.add_argument("command", nargs="*")
    args = parser.parse_args()
    if args.scenario == "oauth":
        print(json.dumps(await oauth(args), default=str))
        return
    if args.scenario == "tasks":
        print(json.dumps(await tasks(args.url), default=str))
        return
    global STARTED
    STARTED = time.monotonic()
    if args.url:
        server = args.url
    else:
        rest = args.command[1:] if args.as_given else args.command[1:] + ["serve"] + args.serve_arg
        server = StdioServerParameters(command=args.command[0], args=rest, env=dict(os.environ))
    answers = {}
    if args.scenario in ("asking", "sdk"):
        answers = {"sampling_callback": on_sampling, "elicitation_callback": on_elicitation, "list_roots_callback": on_roots}
    client = Client(
        server,
        mode=args.mode,
        **answers,
        message_handler=on_message,
        logging_callback=on_log,
        log_level="debug" if args.mode == "2026-07-28" else None,
        cache=None,
    )
    async with client:
        scenario = {"basics": basics, "listchanged": listchanged, "logs": logs, "quotas": quotas, "typed": typed, "async": async_tools, "content": content,
                    "asking": asking, "sdk": sdk, "undeclared": undeclared, "pages": pages, "firstrun": firstrun}[args.scenario]
        if args.scenario == "sdk":
            result = await scenario(client, args.prefix)
        elif args.scenario in ("pages", "firstrun"):
            result = await scenario(client, args.call)
        else:
            result = await scenario(client)
    print(json.dumps(result, default=str))


if __name__ == "__main__":
    asyncio.run(main())

"""toolhost's Python helper for plugins on contract 0.2.0.

A thin layer over the `wit_world` bindings componentize-py generates: a tool
registry that implements the exported `tools` interface, content builders for
a tool's result, typed errors, logging, and what a running call may ask of the
host (progress, elicitation, sampling, roots).

    import toolhost as th
    from toolhost import Tools  # componentize-py exports this class

    @th.tool("shout", "Upper-cases a text.",
             {"type": "object", "required": ["text"], "properties": {"text": {"type": "string"}}},
             title="Shout", read_only=True)
    def shout(args):
        if not args["text"]:
            raise th.InvalidArguments("`text` is empty")
        th.progress(1, 1, "shouted")
        return [th.text(args["text"].upper()), th.json({"length": len(args["text"])})]

A tool returns a block (th.text, th.json, th.image, th.audio, th.link,
th.embedded_text, th.embedded_blob), a list of them, a `str` (one text block)
or a dict (one JSON block). At most one JSON block per result: it is the
result's structured content, checked against `output_schema` when given.

Requests to the host (th.elicit, th.elicit_url, th.sample, th.roots, th.ask)
are refused unless the operator grants them under [plugins.NAME] in
toolhost.toml (`elicitation = true`, `sampling = true` or `{ max_tokens = N }`, `roots = true`);
say what the plugin asks for in its manifest NAME.toml. A refused or failed
request raises th.RequestError (`kind`: "denied", "unsupported", "limit" or
"failed"); one the tool does not catch becomes the call's `failed` error.

A client that answers statelessly calls the tool again with the answers: the
tool then runs from the start. Ask before changing anything, and ask the same
questions each time.
"""

import json as _json

from componentize_py_types import Err
from wit_world import exports
from wit_world.imports import call as _call
from wit_world.imports import log as _log

try:  # the name componentize-py gives `toolhost:plugin/types` beside wasi:http's `types`
    from wit_world.imports import toolhost_plugin_types as _types
except ImportError:  # the plain contract world
    from wit_world.imports import types as _types

__all__ = [
    "tool", "Tools", "InvalidArguments", "Failed", "RequestError",
    "text", "json", "image", "audio", "link", "embedded_text", "embedded_blob",
    "log", "trace", "debug", "info", "warn", "error",
    "progress", "elicit", "elicit_url", "sample", "roots", "ask",
    "Elicited", "Sampled", "Root", "ask_elicit", "ask_elicit_url", "ask_sample", "ask_roots",
]


# ---- Errors -----------------------------------------------------------------


class InvalidArguments(Exception):
    """The arguments were wrong: the model can fix them and call again."""


class Failed(Exception):
    """The arguments were fine but the tool could not do its job."""


class RequestError(Exception):
    """The host did not answer a request: `kind` is "denied" (not granted to the
    plugin), "unsupported" (the client or front end cannot), "limit" (a budget
    is used up) or "failed"; `message` says more."""

    def __init__(self, kind, message):
        super().__init__(f"{kind}: {message}")
        self.kind = kind
        self.message = message


_REQUEST_ERRORS = {
    _call.RequestError_Denied: "denied",
    _call.RequestError_Unsupported: "unsupported",
    _call.RequestError_Limit: "limit",
    _call.RequestError_Failed: "failed",
}


def _request_error(value):
    return RequestError(_REQUEST_ERRORS.get(type(value), "failed"), value.value)


# ---- Content blocks ---------------------------------------------------------

_ROLES = {"user": _types.Role.USER, "assistant": _types.Role.ASSISTANT}


def _annotations(audience, priority, last_modified):
    if audience is None and priority is None and last_modified is None:
        return None
    if isinstance(audience, str):
        audience = [audience]
    return _types.Annotations(
        audience=[_ROLES[role] for role in (audience or [])],
        priority=None if priority is None else float(priority),
        last_modified=last_modified,
    )


def _block(content, audience, priority, last_modified):
    return _types.Block(content=content, annotations=_annotations(audience, priority, last_modified))


def text(value, *, audience=None, priority=None, last_modified=None):
    """A text block. Each builder takes optional annotations: `audience`
    ("user", "assistant" or a list of them), `priority` (0 to 1) and
    `last_modified` (ISO 8601)."""
    return _block(_types.Content_Text(str(value)), audience, priority, last_modified)


def json(value, *, audience=None, priority=None, last_modified=None):
    """The result's JSON block (its structured content): `value` is dumped as JSON."""
    return _block(_types.Content_Json(_json.dumps(value, separators=(",", ":"))), audience, priority, last_modified)


def image(data, mime_type, *, audience=None, priority=None, last_modified=None):
    """An image: its bytes and MIME type (`image/png`, ...)."""
    return _block(_types.Content_Image(_types.Media(mime_type, bytes(data))), audience, priority, last_modified)


def audio(data, mime_type, *, audience=None, priority=None, last_modified=None):
    """Audio: its bytes and MIME type (`audio/wav`, ...)."""
    return _block(_types.Content_Audio(_types.Media(mime_type, bytes(data))), audience, priority, last_modified)


def link(uri, name, *, title=None, description=None, mime_type=None, size=None,
         audience=None, priority=None, last_modified=None):
    """A link to a resource the client may read or fetch."""
    resource = _types.ResourceLink(uri, name, title, description, mime_type, size)
    return _block(_types.Content_ResourceLink(resource), audience, priority, last_modified)


def embedded_text(uri, value, *, mime_type=None, audience=None, priority=None, last_modified=None):
    """An embedded resource holding text."""
    contents = _types.ResourceContents(uri, mime_type, _types.ResourceBody_Text(value))
    return _block(_types.Content_Embedded(contents), audience, priority, last_modified)


def embedded_blob(uri, data, *, mime_type=None, audience=None, priority=None, last_modified=None):
    """An embedded resource holding bytes."""
    contents = _types.ResourceContents(uri, mime_type, _types.ResourceBody_Blob(bytes(data)))
    return _block(_types.Content_Embedded(contents), audience, priority, last_modified)


def _blocks(result):
    """A tool's return value as the list of blocks call-tool returns."""
    if isinstance(result, _types.Block):
        return [result]
    if isinstance(result, str):
        return [text(result)]
    if isinstance(result, dict):
        return [json(result)]
    if isinstance(result, (list, tuple)) and all(isinstance(block, _types.Block) for block in result):
        return list(result)
    raise TypeError(
        f"a tool returns a block (toolhost.text, toolhost.json, ...), a list of blocks, a str or a dict, "
        f"not {type(result).__name__}"
    )


# ---- Logging ----------------------------------------------------------------

_LEVELS = {
    "trace": _log.Level.TRACE, "debug": _log.Level.DEBUG, "info": _log.Level.INFO,
    "warn": _log.Level.WARN, "error": _log.Level.ERROR,
}


def log(level, message, **fields):
    """Writes a record into the host's log: `log("debug", "counted", words=3)`."""
    _log.log(_LEVELS[level], message, [_log.Field(key, str(value)) for key, value in fields.items()])


def trace(message, **fields):
    log("trace", message, **fields)


def debug(message, **fields):
    log("debug", message, **fields)


def info(message, **fields):
    log("info", message, **fields)


def warn(message, **fields):
    log("warn", message, **fields)


def error(message, **fields):
    log("error", message, **fields)


# ---- The tool registry ------------------------------------------------------


class _Tool:
    def __init__(self, name, description, input_schema, run, title, output_schema, hints):
        self.name = name
        self.description = description
        self.input_schema = input_schema
        self.run = run
        self.title = title
        self.output_schema = output_schema
        self.hints = hints


_TOOLS = {}


def _schema_text(schema):
    return schema if isinstance(schema, str) else _json.dumps(schema)


def tool(name, description, input_schema, *, title=None, output_schema=None,
         read_only=None, destructive=None, idempotent=None, open_world=None):
    """Registers the decorated function `f(args: dict)` as the tool `name`
    (`^[a-zA-Z0-9_-]{1,64}$`). `input_schema` (and `output_schema`) are JSON
    Schemas as dicts (or JSON text) whose `type` is "object". The hints say
    what the tool may do; the host never lets them claim less than the
    plugin's grants allow."""

    def register(run):
        if name in _TOOLS:
            raise ValueError(f"two tools are named `{name}`")
        hints = _types.ToolHints(read_only, destructive, idempotent, open_world)
        _TOOLS[name] = _Tool(name, description, input_schema, run, title, output_schema, hints)
        return run

    return register


class Tools(exports.Tools):
    """The exported `tools` interface over the tools registered with @tool.
    Put `from toolhost import Tools` in app.py."""

    def list_tools(self):
        return [
            _types.Tool(
                name=t.name,
                title=t.title,
                description=t.description,
                input_schema=_schema_text(t.input_schema),
                output_schema=None if t.output_schema is None else _schema_text(t.output_schema),
                hints=t.hints,
            )
            for t in _TOOLS.values()
        ]

    def call_tool(self, name, arguments):
        registered = _TOOLS.get(name)
        if registered is None:
            raise Err(_types.CallError_Failed(f"this plugin has no tool named `{name}`"))
        # The host has already checked the arguments against the tool's schema.
        args = _json.loads(arguments)
        try:
            result = registered.run(args)
        except InvalidArguments as err:
            raise Err(_types.CallError_InvalidArguments(str(err)))
        except Failed as err:
            raise Err(_types.CallError_Failed(str(err)))
        except RequestError as err:
            raise Err(_types.CallError_Failed(str(err)))
        # Any other exception traps; `toolhost -vv call` shows its traceback.
        return _blocks(result)


# ---- What a call may ask ----------------------------------------------------


def progress(done, total=None, message=None):
    """Reports progress: `done` out of `total` (when known), with a short message.
    The host passes a few reports per second on to the client, keeping the latest."""
    _call.progress(float(done), None if total is None else float(total), message)


class Elicited:
    """The user's answer: `action` is "accepted", "declined" or "cancelled";
    `answers` the accepted form's values (a dict; `{}` for a URL), else None.
    True when accepted."""

    def __init__(self, action, answers=None):
        self.action = action
        self.answers = answers

    @property
    def accepted(self):
        return self.action == "accepted"

    def __bool__(self):
        return self.accepted

    def __repr__(self):
        return f"Elicited({self.action!r}, {self.answers!r})"


class Sampled:
    """The model's reply: `text` (None when it is not text), `model`,
    `stop_reason` (or None) and the raw `content`."""

    def __init__(self, reply):
        self.content = reply.content
        self.text = reply.content.value if isinstance(reply.content, _types.Content_Text) else None
        self.model = reply.model
        self.stop_reason = reply.stop_reason

    def __repr__(self):
        return f"Sampled(text={self.text!r}, model={self.model!r})"


class Root:
    """One of the client's roots: `uri` (`file:///...`) and `name` (or None)."""

    def __init__(self, uri, name):
        self.uri = uri
        self.name = name

    def __repr__(self):
        return f"Root({self.uri!r}, {self.name!r})"


def _elicited(answer):
    if isinstance(answer, _call.ElicitAnswer_Accepted):
        answers = _json.loads(answer.value) if answer.value else {}
        if not isinstance(answers, dict):
            raise RequestError("failed", "the host sent answers that are not a JSON object")
        return Elicited("accepted", answers)
    if isinstance(answer, _call.ElicitAnswer_Declined):
        return Elicited("declined")
    return Elicited("cancelled")


def _ask_one(function, request):
    try:
        return function(request) if request is not None else function()
    except Err as err:
        raise _request_error(err.value) from None


def ask_elicit(message, schema):
    """A question for th.ask: a form (see th.elicit)."""
    return _call.Question_Elicit(_call.Elicitation_Form((message, _schema_text(schema))))


def ask_elicit_url(message, url):
    """A question for th.ask: a page to open (see th.elicit_url)."""
    return _call.Question_Elicit(_call.Elicitation_Url((message, url)))


def ask_sample(prompt, **options):
    """A question for th.ask: a sampling request (see th.sample)."""
    return _call.Question_Sample(_sampling_request(prompt, **options))


def ask_roots():
    """A question for th.ask: the client's roots."""
    return _call.Question_Roots()


def elicit(message, schema):
    """Asks the user to fill in a form: `schema` is the JSON Schema (dict) of a
    flat object of strings, numbers, booleans and enums. Returns an Elicited;
    raises RequestError (e.g. "denied" without `elicitation = true`)."""
    return _elicited(_ask_one(_call.elicit, _call.Elicitation_Form((message, _schema_text(schema)))))


def elicit_url(message, url):
    """Asks the user to open `url` (a login, a payment: what must not pass
    through the client). Accepted says only that they went ahead."""
    return _elicited(_ask_one(_call.elicit, _call.Elicitation_Url((message, url))))


def _content(value):
    if isinstance(value, _types.Block):
        return value.content
    if isinstance(value, str):
        return _types.Content_Text(value)
    return value


def _sampling_request(prompt, *, system=None, max_tokens=1000, temperature=None, stop=(),
                      model_hints=(), cost_priority=None, speed_priority=None, intelligence_priority=None):
    if isinstance(prompt, str):
        prompt = [("user", prompt)]
    messages = [_call.Message(_ROLES[role], _content(content)) for role, content in prompt]
    preferences = None
    if model_hints or cost_priority is not None or speed_priority is not None or intelligence_priority is not None:
        preferences = _call.ModelPreferences(list(model_hints), cost_priority, speed_priority, intelligence_priority)
    return _call.SamplingRequest(
        messages=messages,
        system_prompt=system,
        max_tokens=int(max_tokens),
        temperature=None if temperature is None else float(temperature),
        stop_sequences=list(stop),
        preferences=preferences,
    )


def sample(prompt, *, system=None, max_tokens=1000, temperature=None, stop=(),
           model_hints=(), cost_priority=None, speed_priority=None, intelligence_priority=None):
    """Asks the client's model for a message. `prompt` is a str (one user
    message) or a list of (role, content) pairs, role "user" or "assistant",
    content a str or a text/image/audio block. `max_tokens` counts against the
    plugin's sampling grant (`sampling = true` or `{ max_tokens = N }`). Returns a Sampled; raises RequestError."""
    request = _sampling_request(
        prompt, system=system, max_tokens=max_tokens, temperature=temperature, stop=stop,
        model_hints=model_hints, cost_priority=cost_priority, speed_priority=speed_priority,
        intelligence_priority=intelligence_priority,
    )
    return Sampled(_ask_one(_call.sample, request))


def roots():
    """The client's roots (a list of Root): where the user works. Information
    only: they never widen the plugin's folder grants. Needs `roots = true`."""
    return [Root(root.uri, root.name) for root in _ask_one(_call.roots, None)]


def ask(questions):
    """Asks several things at once: `questions` maps keys (1 to 64 of
    `a-z A-Z 0-9 _ -`, unique within the call) to th.ask_elicit(...),
    th.ask_elicit_url(...), th.ask_sample(...) or th.ask_roots(). Returns a dict
    of the same keys, in order, to an Elicited, a Sampled, a list of Root, or
    the RequestError that question met (returned, not raised)."""
    keys = list(questions)
    answers = _call.ask([(key, questions[key]) for key in keys])
    out = {}
    for key, answer in zip(keys, answers):
        if isinstance(answer, Err):
            out[key] = _request_error(answer.value)
            continue
        value = answer.value
        try:
            if isinstance(value, _call.Answer_Elicited):
                out[key] = _elicited(value.value)
            elif isinstance(value, _call.Answer_Sampled):
                out[key] = Sampled(value.value)
            else:
                out[key] = [Root(root.uri, root.name) for root in value.value]
        except RequestError as err:
            out[key] = err
    return out

"""HTTP from a toolhost plugin written in Python, over `wasi:http`.

toolhost sends a request only to a scheme, host and port the operator granted
the plugin (`[plugins.NAME] http = [...]` in toolhost.toml); any other request
fails with `Denied` before anything leaves the machine. Build the plugin
against the world `toolhost:plugin-with-http/plugin@0.2.0` (the scaffold's
build.sh does), which adds `wasi:http/outgoing-handler` to contract 0.2.0.

    import toolhost_http

    response = toolhost_http.get("https://api.example.com/v1/status")
    if response.status == 200:
        data = response.json()

Redirects are not followed: a 3xx comes back as it is, and `response.header("location")`
says where to go next (a new request, checked by the host like the first).
"""

import json
from urllib.parse import urlsplit

from componentize_py_types import Err
from wit_world.imports import outgoing_handler, streams
from wit_world.imports import wasi_http_types as http


class Error(Exception):
    """The request got no response: invalid, refused by the host, or failed."""


class Denied(Error):
    """The host refused the request: this plugin is not granted that scheme, host and port."""


class Response:
    """A response: `status`, `headers` (lower-case names, in order), and the `body` bytes read."""

    def __init__(self, url, status, headers, body, truncated):
        self.url = url
        self.status = status
        self.headers = headers
        self.body = body
        self.truncated = truncated

    def header(self, name):
        """The first header called `name` (any case), or None."""
        name = name.lower()
        return next((value for key, value in self.headers if key == name), None)

    def text(self):
        """The body as text (invalid UTF-8 replaced)."""
        return self.body.decode("utf-8", errors="replace")

    def json(self):
        """The body parsed as JSON."""
        return json.loads(self.body)


def get(url, headers=None, max_body=1 << 20):
    """GETs `url`; reads at most `max_body` bytes of the body (`truncated` says when there was more)."""
    return request("GET", url, headers=headers, max_body=max_body)


def request(method, url, headers=None, body=b"", max_body=1 << 20):
    """Sends `method` to `url` with `headers` (a dict) and `body` (bytes) and reads the response."""
    parts = urlsplit(url)
    if parts.scheme not in ("http", "https") or not parts.netloc:
        raise Error(f"`{url}` is not an http:// or https:// URL (e.g. `https://example.com/path`)")
    origin = f"{parts.scheme}://{parts.netloc}"
    fields = http.Fields.from_list([(name.lower(), value.encode()) for name, value in (headers or {}).items()])
    outgoing = http.OutgoingRequest(fields)
    methods = {"GET": http.Method_Get(), "HEAD": http.Method_Head(), "POST": http.Method_Post(),
               "PUT": http.Method_Put(), "DELETE": http.Method_Delete(), "PATCH": http.Method_Patch()}
    outgoing.set_method(methods.get(method.upper()) or http.Method_Other(method))
    outgoing.set_scheme(http.Scheme_Https() if parts.scheme == "https" else http.Scheme_Http())
    outgoing.set_authority(parts.netloc)
    outgoing.set_path_with_query((parts.path or "/") + (f"?{parts.query}" if parts.query else ""))
    outgoing_body = outgoing.body()
    try:
        pending = outgoing_handler.handle(outgoing, None)
    except Err as err:
        raise _error(err.value, origin) from None
    if body:
        # A stream is a child of its body: it is dropped (`with`) before the body is finished.
        with outgoing_body.write() as stream:
            for start in range(0, len(body), 4096):
                stream.blocking_write_and_flush(body[start:start + 4096])
    http.OutgoingBody.finish(outgoing_body, None)

    while (answer := pending.get()) is None:
        pending.subscribe().block()
    if isinstance(answer, Err):
        raise Error("the response was already taken")
    if isinstance(answer.value, Err):
        raise _error(answer.value.value, origin)
    incoming = answer.value.value
    status = incoming.status()
    received = [(name.lower(), value.decode("utf-8", errors="replace")) for name, value in incoming.headers().entries()]
    incoming_body = incoming.consume()
    data = bytearray()
    truncated = False
    with incoming_body.stream() as stream:
        while True:
            room = max_body - len(data)
            try:
                chunk = stream.blocking_read(min(max(room, 1), 65536))
            except Err as err:
                if isinstance(err.value, streams.StreamError_Closed):
                    break
                raise Error(f"reading the response from {origin} failed: {err.value.value.to_debug_string()}") from None
            if len(chunk) > room:
                data.extend(chunk[:room])
                truncated = True
                break
            data.extend(chunk)
    return Response(url, status, received, bytes(data), truncated)


def _error(code, origin):
    if isinstance(code, http.ErrorCode_HttpRequestDenied):
        return Denied(f"request refused by the host: {origin} is not granted to this plugin")
    if isinstance(code, http.ErrorCode_DestinationIpProhibited):
        return Denied(f"request refused by the host: {origin} resolves to an address this plugin may not reach")
    if isinstance(code, http.ErrorCode_ConnectionLimitReached):
        return Denied("request refused by the host: this call sent as many requests as it may")
    if isinstance(code, http.ErrorCode_ConnectionRefused):
        return Error(f"request failed: {origin} refused the connection")
    if isinstance(code, (http.ErrorCode_ConnectionTimeout, http.ErrorCode_HttpResponseTimeout,
                         http.ErrorCode_ConnectionReadTimeout)):
        return Error(f"request failed: {origin} did not answer in time")
    if isinstance(code, http.ErrorCode_DnsError):
        return Error(f"request failed: {origin}: the host name could not be resolved")
    return Error(f"request failed: {origin}: {type(code).__name__.removeprefix('ErrorCode_')}")

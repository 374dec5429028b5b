"""pagemeta: example toolhost plugin in Python that uses the network.

    page_meta   the status, type, size, title and word count of a web page

It GETs the page through `toolhost_http` (sdk/python/toolhost_http.py, over
`wasi:http/outgoing-handler`), so it reaches only the hosts its operator
grants in toolhost.toml (`[plugins.pagemeta] http = [...]`); pagemeta.toml
beside it says what it asks for. plugins/python/build.sh builds it against
the world `toolhost:plugin-with-http/plugin@0.1.0` (sdk/wit-http) because of
that manifest.
"""

import html
import json
import re

import toolhost_http
from componentize_py_types import Err
from wit_world import exports
from wit_world.imports import log
from wit_world.imports import toolhost_plugin_types as types

SCHEMA = {
    "type": "object",
    "required": ["url"],
    "additionalProperties": False,
    "properties": {
        "url": {"type": "string", "description": "The page, an http:// or https:// URL."},
        "max_bytes": {
            "type": "integer",
            "minimum": 1,
            "maximum": 1048576,
            "default": 262144,
            "description": "Read at most this many bytes of the page.",
        },
    },
}

DESCRIPTION = (
    "Fetches a web page and describes it: HTTP status, content type, size in bytes, "
    'HTML title and word count. Returns JSON {"status", "content_type", "bytes", "truncated", '
    '"title", "words"}. Example: {"url": "https://example.com/"}.'
)


def page_meta(args):
    url = args["url"]
    try:
        response = toolhost_http.get(url, max_body=args.get("max_bytes", 262144))
    except toolhost_http.Denied as err:
        raise Err(types.CallError_Failed(f"could not fetch {url}: {err} (grant it under [plugins.pagemeta] http)"))
    except toolhost_http.Error as err:
        raise Err(types.CallError_Failed(f"could not fetch {url}: {err}"))
    if response.status >= 400:
        raise Err(types.CallError_Failed(f"{url} answered {response.status}"))
    text = response.text()
    title = re.search(r"<title[^>]*>(.*?)</title>", text, re.IGNORECASE | re.DOTALL)
    visible = re.sub(r"<[^>]*>", " ", text)
    log.log(log.Level.DEBUG, "read a page", [log.Field("bytes", str(len(response.body)))])
    return {
        "status": response.status,
        "content_type": response.header("content-type"),
        "bytes": len(response.body),
        "truncated": response.truncated,
        "title": html.unescape(" ".join(title.group(1).split())) if title else None,
        "words": len(html.unescape(visible).split()),
    }


class Tools(exports.Tools):
    def list_tools(self):
        return [types.Tool(name="page_meta", description=DESCRIPTION, input_schema=json.dumps(SCHEMA))]

    def call_tool(self, name, arguments):
        if name != "page_meta":
            raise Err(types.CallError_Failed(f"this plugin has no tool named `{name}`"))
        return types.ToolOutput_Json(json.dumps(page_meta(json.loads(arguments))))

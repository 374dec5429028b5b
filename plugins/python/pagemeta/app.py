"""pagemeta: example toolhost plugin in Python that uses the network.

    page_meta   the status, type, size, title and word count of a web page

It GETs the page through `toolhost_http` (sdk/python/toolhost_http.py, over
`wasi:http/outgoing-handler`), so it reaches only the hosts its operator
grants in toolhost.toml (`[plugins.pagemeta] http = [...]`); pagemeta.toml
beside it says what it asks for. plugins/python/build.sh builds it against
the world `toolhost:plugin-with-http/plugin@0.2.0` (sdk/wit-http: contract
0.2.0 plus wasi:http) because of that manifest, with toolhost.py (the
registry and content blocks used here) and toolhost_http.py beside it.
"""

import html
import json
import re

import toolhost as th
import toolhost_http
from toolhost import Tools  # noqa: F401  (the export componentize-py looks for)

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


@th.tool("page_meta", DESCRIPTION, SCHEMA, title="Describe a web page", read_only=True, open_world=True)
def page_meta(args):
    url = args["url"]
    try:
        response = toolhost_http.get(url, max_body=args.get("max_bytes", 262144))
    except toolhost_http.Denied as err:
        raise th.Failed(f"could not fetch {url}: {err} (grant it under [plugins.pagemeta] http)")
    except toolhost_http.Error as err:
        raise th.Failed(f"could not fetch {url}: {err}")
    if response.status >= 400:
        raise th.Failed(f"{url} answered {response.status}")
    text = response.text()
    title = re.search(r"<title[^>]*>(.*?)</title>", text, re.IGNORECASE | re.DOTALL)
    visible = re.sub(r"<[^>]*>", " ", text)
    th.debug("read a page", bytes=len(response.body))
    return th.json({
        "status": response.status,
        "content_type": response.header("content-type"),
        "bytes": len(response.body),
        "truncated": response.truncated,
        "title": html.unescape(" ".join(title.group(1).split())) if title else None,
        "words": len(html.unescape(visible).split()),
    })

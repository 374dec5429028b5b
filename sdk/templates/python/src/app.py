"""__NAME__: a toolhost plugin in Python. Build it with ./build.sh, which
writes __NAME__.wasm; copy that file into toolhost's plugins folder.

componentize-py generates the `wit_world` bindings from wit/ at build time
(toolhost's contract 0.2.0, and `wasi:http` for toolhost_http.py).
`toolhost.py` (imported as `th`) turns them into a tool registry: each
function decorated with `@th.tool(...)` is a tool, and the `Tools` class
imported below is the export that lists and calls them.

A tool returns content blocks (th.text, th.json, th.image, th.audio,
th.link, th.embedded_text, th.embedded_blob); while it runs it may report
th.progress(...), ask the user (th.elicit), ask the model (th.sample) and
read the client's roots (th.roots), each where the operator grants it under
[plugins.__NAME__] in toolhost.toml. For HTTP, `import toolhost_http` and
call `toolhost_http.get(url)`; it reaches only the hosts granted under
[plugins.__NAME__] http.
"""

import toolhost as th
from toolhost import Tools  # noqa: F401  (the export componentize-py looks for)


@th.tool(
    "__NAME__",
    'Counts the words and characters of a text. Returns JSON {"words", "characters"}.',
    {
        "type": "object",
        "required": ["text"],
        "properties": {"text": {"type": "string", "description": "The text to count."}},
    },
    title="Count words",
    output_schema={
        "type": "object",
        "properties": {"words": {"type": "integer"}, "characters": {"type": "integer"}},
        "required": ["words", "characters"],
    },
    read_only=True,
    idempotent=True,
)
def count(args):
    text = args["text"]
    if text == "":
        # The model can fix its arguments and call again. Raise th.Failed("why")
        # when the arguments were fine but the tool could not do its job.
        raise th.InvalidArguments("`text` is empty: give the text to count")
    words, characters = len(text.split()), len(text)
    th.progress(1, 1, "counted")
    th.debug("counted", words=words)
    # A text block for people and models, and the JSON block (the result's
    # structured content, checked against the output schema).
    return [
        th.text(f"{words} words, {characters} characters"),
        th.json({"words": words, "characters": characters}),
    ]

"""__NAME__: a toolhost plugin in Python. Build it with ./build.sh, which
writes __NAME__.wasm; copy that file into toolhost's plugins folder.

componentize-py generates the `wit_world` bindings from wit/ at build time
(the contract, and `wasi:http` for toolhost_http.py). The `Tools` class below
implements the exported `tools` interface: `list_tools` says which tools
there are (name, description, JSON Schema of the arguments) and `call_tool`
runs one.

For HTTP, `import toolhost_http` and call `toolhost_http.get(url)`; it
reaches only the hosts the operator grants under [plugins.__NAME__] http in
toolhost.toml (say what the plugin needs in __NAME__.toml beside the .wasm).
"""

import json

from componentize_py_types import Err
from wit_world import exports
from wit_world.imports import log
from wit_world.imports import toolhost_plugin_types as types


class InvalidArguments(Exception):
    """The arguments were wrong: the model can fix them and call again."""


class Failed(Exception):
    """The arguments were fine but the tool could not do its job."""


def count(args):
    text = args["text"]
    if text == "":
        raise InvalidArguments("`text` is empty: give the text to count")
    counts = {"words": len(text.split()), "characters": len(text)}
    log.log(log.Level.DEBUG, "counted", [log.Field("words", str(counts["words"]))])
    return counts


# name -> (function, description for the model, JSON Schema of the arguments)
TOOLS = {
    "__NAME__": (
        count,
        'Counts the words and characters of a text. Returns JSON {"words", "characters"}.',
        {
            "type": "object",
            "required": ["text"],
            "properties": {"text": {"type": "string", "description": "The text to count."}},
        },
    ),
}


class Tools(exports.Tools):
    def list_tools(self):
        return [
            types.Tool(name=name, description=description, input_schema=json.dumps(schema))
            for name, (_, description, schema) in TOOLS.items()
        ]

    def call_tool(self, name, arguments):
        if name not in TOOLS:
            raise Err(types.CallError_Failed(f"this plugin has no tool named `{name}`"))
        # The host has already checked the arguments against the tool's schema.
        args = json.loads(arguments)
        try:
            result = TOOLS[name][0](args)
        except InvalidArguments as err:
            raise Err(types.CallError_InvalidArguments(str(err)))
        except Failed as err:
            raise Err(types.CallError_Failed(str(err)))
        # Any other exception traps; `toolhost -vv call` shows its traceback.
        return types.ToolOutput_Json(json.dumps(result))

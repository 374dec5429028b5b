"""py_misbehaves: a test plugin in Python whose tools misbehave on purpose,
so the tests can show that the host's limits and trap handling hold for
CPython inside a component just as for Rust.

One plugin with three tools rather than three plugins, because each Python
component carries its own CPython (about 18 MB to compile).

Tools:
    py_spin_forever   loops forever in Python code: out of fuel, or the timeout
    py_grow_memory    keeps allocating 1 MiB buffers: the memory limit
    py_raises         raises an exception it does not catch: a trap whose message
                      carries the Python traceback
    py_keeps_state    counts its calls in a module-level variable: every call runs
                      in a fresh instance (a fresh copy of the interpreter's heap),
                      so it must answer 1 every time
"""

import json

from wit_world import exports
from wit_world.imports import log, types

EMPTY = json.dumps({"type": "object", "properties": {}})

calls = 0


class Tools(exports.Tools):
    def list_tools(self):
        return [
            types.Tool("py_spin_forever", "Loops forever (test plugin).", EMPTY),
            types.Tool("py_grow_memory", "Allocates memory until stopped (test plugin).", EMPTY),
            types.Tool("py_raises", "Raises an uncaught ValueError (test plugin).", EMPTY),
            types.Tool("py_keeps_state", "Counts its calls in this instance (test plugin).", EMPTY),
        ]

    def call_tool(self, name, arguments):
        log.log(log.Level.INFO, "misbehaving on purpose", [log.Field("tool", name)])
        if name == "py_spin_forever":
            count = 0
            while True:
                count += 1
        if name == "py_grow_memory":
            hoard = []
            while True:
                hoard.append(bytearray(1 << 20))
        if name == "py_raises":
            raise ValueError("py_raises gave up on purpose")
        if name == "py_keeps_state":
            global calls
            calls += 1
            return types.ToolOutput_Text(str(calls))
        return types.ToolOutput_Text("unreachable")

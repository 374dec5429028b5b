"""__NAME__: a toolhost plugin of typed functions. Build it with ./build.sh,
which writes __NAME__.wasm; copy that file into toolhost's plugins folder.

Each function wit/world.wit exports is a tool. componentize-py generates the
`wit_world` module from the world (a record becomes a class, a `result`'s
`err` is raised as `Err`) and the `WitWorld` class below implements it.
"""

import wit_world
from componentize_py_types import Err


class WitWorld(wit_world.WitWorld):
    def __FUNC_SNAKE__(self, text: str) -> wit_world.Counts:
        if not text:
            # An `err` is the tool's error: the model reads it and can call again.
            raise Err("`text` is empty: give the text to count")
        return wit_world.Counts(words=len(text.split()), characters=len(text))

"""py_notes: a test plugin in Python written as plain typed functions
(wit/notes.wit) rather than toolhost's contract, the way other runtimes'
users write tools. componentize-py generates the `wit_world` bindings and
the `WitWorld` class below implements the world's exported functions.
"""

import wit_world
from componentize_py_types import Err


class WitWorld(wit_world.WitWorld):
    def summarize(self, text, max_words):
        words = text.split()
        if max_words is not None:
            words = words[:max_words]
        tags = sorted({word.lower().strip(".,!?") for word in words if len(word) > 6})
        title = " ".join(words[:3])
        return wit_world.Note(title=title, words=len(words), tags=tags, first_word=words[0] if words else None)

    def judge(self, text):
        count = len(text.split())
        if count == 0:
            return wit_world.Verdict_Empty()
        if count < 5:
            return wit_world.Verdict_Short(count)
        return wit_world.Verdict_Long(count)

    def divide(self, a, b):
        if b == 0:
            raise Err("division by zero")
        return a / b

    def count_forever(self):
        n = 0
        while True:
            n += 1

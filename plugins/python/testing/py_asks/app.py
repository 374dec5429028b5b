"""py_asks: what a running call may do through the Python helper
(sdk/python/toolhost.py), for the tests: a form, a sampling request, the
client's roots, a keyed batch of them, and a result of every kind of block.
Its tools answer exactly as sdk_asks (the Rust SDK's) do, so one test checks
both (tests/all/contract_v0_2.rs)."""

import toolhost as th
from toolhost import Tools  # noqa: F401  (the export componentize-py looks for)

NOTHING = {"type": "object", "properties": {}}
PERSON = {
    "type": "object",
    "properties": {
        "username": {"type": "string", "description": "Your user name."},
        "color": {"type": "string", "enum": ["blue", "red"], "description": "Your favourite colour."},
        "ok": {"type": "boolean", "description": "Is all this fine?"},
        "nickname": {"type": "string", "description": "A nickname, if you have one."},
    },
    "required": ["username", "color", "ok"],
}
# The smallest PNG: one transparent pixel.
PIXEL = bytes.fromhex(
    "89504e470d0a1a0a0000000d49484452000000010000000108060000001f15c489"
    "0000000d49444154789c63000100000500010d0a2db40000000049454e44ae426082"
)


def said(person):
    ok = "true" if person["ok"] else "false"
    return f"{person['username']} likes {person['color'].capitalize()} (ok: {ok}, nickname: {person.get('nickname') or 'none'})"


@th.tool("py_elicit", "Asks the user who they are, with a form.", NOTHING)
def elicit(args):
    th.progress(0, 1, "asking")
    answer = th.elicit("Who are you?", PERSON)
    return f"accepted: {said(answer.answers)}" if answer.accepted else answer.action


@th.tool("py_sample", "Asks the client's model to answer a prompt.",
         {"type": "object", "properties": {"prompt": {"type": "string", "description": "What to ask the model."}},
          "required": ["prompt"]})
def sample(args):
    reply = th.sample(args["prompt"], system="Be brief.", max_tokens=100)
    return f"{reply.model} said: {reply.text} ({reply.stop_reason or '?'})"


@th.tool("py_roots", "Lists the client's roots.", NOTHING)
def roots(args):
    return "roots: " + ", ".join(f"{root.uri} ({root.name or '-'})" for root in th.roots())


@th.tool("py_batch", "Asks the user and reads the roots in one batch.", NOTHING)
def batch(args):
    answers = th.ask({"who": th.ask_elicit("Who are you, again?", PERSON), "where": th.ask_roots()})
    lines = []
    for key, answer in answers.items():
        if isinstance(answer, th.RequestError):
            if answer.kind != "unsupported":
                raise answer
            lines.append(f"unsupported: {answer.message}")
        elif key == "who":
            lines.append(f"who: {said(answer.answers)}" if answer.accepted else f"who: {answer.action}")
        else:
            lines.append(f"where: {len(answer)} roots")
    return "\n".join(lines)


@th.tool("py_media", "Returns one block of every kind.", NOTHING, title="Every kind of block", read_only=True)
def media(args):
    return [
        th.text("every kind"),
        th.image(PIXEL, "image/png", audience="user"),
        th.link("test://notes/1", "note-1"),
        th.embedded_text("test://notes/2", "the second note", mime_type="text/plain"),
        th.embedded_blob("test://notes/3", bytes([0, 1, 2]), mime_type="application/octet-stream"),
        th.json({"blocks": 7}),
        th.text("important", priority=0.9),
    ]

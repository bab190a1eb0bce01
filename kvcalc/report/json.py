"""Report -> one JSON document (sorted keys, stable bytes for identical inputs).

The bytes are json.dumps(indent=2, sort_keys=True, ensure_ascii=False)'s. With an indent, the standard library
encodes in Python through nested generators (every chunk climbs each level back up): 2.2 ms for the 24.8 kB
document of a 61-layer MLA plan, ~4 M instructions of a ~446 M cold start (2026-12-02). `_encode` writes the same
bytes by direct recursion into one list (0.75 ms); tests/report/test_json_bytes.py holds it to json.dumps on every
JSON document of the output corpus and on values json.dumps treats specially."""

from __future__ import annotations

import json
from json.encoder import encode_basestring

from ..vocab.records import to_json


def render(report) -> str:
    """Any report record (or plain JSON value) as indented, key-sorted JSON."""
    return dumps(to_json(report)) + "\n"


class _Unusual(Exception):
    """A value outside what _encode writes (a key that is not a string, a float that is not finite, a type
    json.dumps converts itself): the document goes to json.dumps instead."""


def dumps(value) -> str:
    """json.dumps(value, indent=2, sort_keys=True, ensure_ascii=False), the same bytes."""
    out: list[str] = []
    try:
        _encode(value, out, 0)
    except _Unusual:
        return json.dumps(value, indent=2, sort_keys=True, ensure_ascii=False)
    return "".join(out)


def _encode(o, out: list[str], level: int) -> None:
    t = type(o)
    if t is str:
        out.append(encode_basestring(o))
    elif t is dict or t is list:
        if not o:
            out.append("{}" if t is dict else "[]")
            return
        inner = "\n" + "  " * (level + 1)
        out.append(("{" if t is dict else "[") + inner)
        sep = "," + inner
        if t is dict:
            if any(type(k) is not str for k in o):
                raise _Unusual  # json.dumps turns int / float / bool / None keys into strings
            for i, k in enumerate(sorted(o)):
                if i:
                    out.append(sep)
                out.append(encode_basestring(k))
                out.append(": ")
                _encode(o[k], out, level + 1)
        else:
            for i, v in enumerate(o):
                if i:
                    out.append(sep)
                _encode(v, out, level + 1)
        out.append("\n" + "  " * level + ("}" if t is dict else "]"))
    elif o is None:
        out.append("null")
    elif o is True:
        out.append("true")
    elif o is False:
        out.append("false")
    elif t is int:
        out.append(int.__repr__(o))
    elif t is float and o == o and o not in (float("inf"), float("-inf")):
        out.append(float.__repr__(o))
    else:
        raise _Unusual

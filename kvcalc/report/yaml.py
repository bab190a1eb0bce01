"""A raw layout dict + provenance -> schema-v1 layout YAML with a comment on every derived field (`kvcalc init`)."""

from __future__ import annotations

import json

from ..vocab.keys import CHILDREN, KEY

# The sections init writes, in the key table's order; host (the machine's page size and pinned-memory rounding,
# set by flags) is not what a config maps to and is left out.
_SECTIONS = tuple(leaf for leaf in CHILDREN[""] if KEY[leaf].kind == "section" and leaf != "host")


def _order(path: str) -> tuple[str, ...]:
    """A mapping of rows: its keys in the table's order; any other mapping (a Mamba kind's Hugging Face fields,
    LMCache's names) is written sorted."""
    key = KEY.get(path)
    return CHILDREN[path] if key is not None and key.kind == "section" else ()


def _scalar(value) -> str:
    # JSON is valid YAML; strings come out quoted, so '0.20' and 'on' stay strings.
    return json.dumps(value)


def _period(values: list) -> int:
    """Smallest p such that values[i] == values[i % p] for all i (so a layer_pattern can stand for the list)."""
    for p in range(1, len(values) + 1):
        if all(values[i] == values[i % p] for i in range(len(values))):
            return p
    return len(values)  # pragma: no cover


def _comment(text: str) -> str:
    """A comment's text as YAML can hold it: a control character (ESC from a path or a serve line) is written as
    its escape, since YAML allows none, not even in a comment (the file would no longer load)."""
    if text.isprintable():
        return text
    return "".join(c if c.isprintable() else repr(c)[1:-1] for c in text)


def render(top: dict, origin: dict, *, header: str) -> str:
    lines = [f"# {_comment(line)}" for line in header.splitlines()]
    lines.append("schema_version: 1")
    if top.get("engine") is not None:  # issue 24: an SGLang line's layout names its engine (vocab/keys.py engine)
        note = origin.get("engine")
        lines.append(f"engine: {_scalar(top['engine'])}" + (f"  # {_comment(note)}" if note else ""))
    for section in _SECTIONS:
        body = top.get(section)
        if not isinstance(body, dict) or not body:
            continue
        lines.append(f"{section}:")
        lines += _mapping(body, section, origin, indent=2)
    return "\n".join(lines) + "\n"


def _mapping(body: dict, path: str, origin: dict, indent: int) -> list[str]:
    pad = " " * indent
    order = _order(path)
    keys = [k for k in order if k in body] + sorted(k for k in body if k not in order)
    out = []
    for key in keys:
        value = body[key]
        sub = f"{path}.{key}"
        note = origin.get(sub)
        comment = f"  # {_comment(note)}" if note else ""
        if isinstance(value, dict):
            out.append(f"{pad}{key}:{comment}")
            out += _mapping(value, sub, origin, indent + 2)
        elif key == "layer_types" and isinstance(value, list) and _period(value) < len(value):
            pattern = value[:_period(value)]
            out.append(f"{pad}layer_pattern: [{', '.join(pattern)}]{comment or '  #'} (repeated to num_layers)")
        elif isinstance(value, list):
            out.append(f"{pad}{key}: [{', '.join(_scalar(v) for v in value)}]{comment}")
        else:
            out.append(f"{pad}{key}: {_scalar(value)}{comment}")
    return out

"""Report -> one JSON document (sorted keys, stable bytes for identical inputs)."""

from __future__ import annotations

import json

from ..vocab.records import to_json


def render(report) -> str:
    """Any report record (or plain JSON value) as indented, key-sorted JSON."""
    return json.dumps(to_json(report), indent=2, sort_keys=True, ensure_ascii=False) + "\n"

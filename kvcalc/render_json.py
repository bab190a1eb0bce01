"""Report dict -> one JSON document (sorted keys, stable bytes for identical inputs)."""

from __future__ import annotations

import json


def render(report: dict) -> str:
    return json.dumps(report, indent=2, sort_keys=True, ensure_ascii=False) + "\n"

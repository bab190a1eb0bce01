"""Flag values -> layout overrides: {layout key path: (value, the flag that set it)}."""

from __future__ import annotations

import os
from typing import Any

from ..vocab.keys import FLAGS


def overrides(values: dict[str, Any]) -> dict[str, tuple[Any, str]]:
    """Flag values -> {layout key path: (value, the flag that set it)}; unset flags (None) are left out. A path
    given on the command line is the caller's, relative to the working directory (a layout's own paths are
    relative to the layout)."""
    out = {}
    for name, raw in values.items():
        key = FLAGS[name]
        if raw is None or not key.path:
            continue
        value = key.value(raw)
        if key.kind == "path":
            value = os.path.abspath(value)
        out[key.path] = (value, key.named)
    return out

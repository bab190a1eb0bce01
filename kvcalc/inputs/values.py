"""Typed access to one mapping of an input, with errors that name the full key path (and the flag that set it); and
flag values -> layout overrides ({layout key path: (value, the flag that set it)})."""

from __future__ import annotations

import os
import re
from typing import Any

from ..vocab.errors import LayoutError
from ..vocab.keys import FLAGS
from ..vocab.units import SizeError, parse_size, scaled_floor

_HUMAN_INT = r"^\s*(\d+(?:\.\d+)?)\s*([kmgtKMGT]?)\s*$"


class Reader:
    """Typed access to one mapping, with errors that name the full key path."""

    def __init__(self, source: str, flags: dict[str, str]):
        self.source = source
        self.flags = flags

    def where(self, path: str) -> str:
        flag = self.flags.get(path)
        return f"{path} (from {flag})" if flag else path

    def fail(self, path: str, expected: str, got: Any = None, detail: str = "") -> LayoutError:
        return LayoutError(self.source, self.where(path), expected, got, detail=detail)

    def mapping(self, data: Any, path: str, allowed: tuple[str, ...]) -> dict:
        if data is None:
            return {}
        if not isinstance(data, dict):
            raise self.fail(path or "(top level)", "a mapping", type(data).__name__)
        for key in data:
            if not isinstance(key, str) or key not in allowed:
                expected = f"a known key (one of: {', '.join(allowed)})"
                if isinstance(key, str) and len(key) <= 60 and re.fullmatch(r"[A-Za-z0-9_.\-]+", key):
                    raise self.fail(f"{path}.{key}" if path else key, expected, detail="unknown key")
                # Any other key is echoed repr'd and cut (errors._short), never raw: it can hold escapes.
                raise self.fail(path or "(top level)", expected, key, detail="unknown key")
        return data

    def int_(self, value: Any, path: str, *, minimum: int = 0, maximum: int = 1 << 62) -> int:
        if isinstance(value, bool) or not isinstance(value, int):
            raise self.fail(path, f"an integer >= {minimum}", value)
        if value < minimum or value > maximum:
            raise self.fail(path, f"an integer between {minimum} and {maximum}", value)
        return value

    def opt_int(self, d: dict, key: str, path: str, *, minimum: int = 1, default: Any = None) -> Any:
        if d.get(key) is None:
            return default
        return self.int_(d[key], f"{path}.{key}", minimum=minimum)

    def human_int(self, value: Any, path: str, *, minimum: int = 1) -> int:
        """vLLM's human_readable_int: 128K = 131072 (uppercase binary), 128k = 128000 (lowercase decimal)."""
        if isinstance(value, str):
            m = re.match(_HUMAN_INT, value)
            if not m:
                raise self.fail(path, "an integer, or digits with one K/M/G/T (binary) or k/m/g/t (decimal) suffix",
                                value)
            num, unit = m.group(1), m.group(2)
            if unit.isupper():
                if "." in num:
                    raise self.fail(path, "a whole number before an uppercase (binary) suffix", value)
                value = int(num) << {"K": 10, "M": 20, "G": 30, "T": 40}[unit]
            elif unit:
                whole, _, frac = num.partition(".")
                value = scaled_floor(whole, frac, 10 ** {"k": 3, "m": 6, "g": 9, "t": 12}[unit])
            else:
                if "." in num:
                    raise self.fail(path, "a whole number", value)
                value = int(num)
        return self.int_(value, path, minimum=minimum)

    def size(self, value: Any, path: str) -> int:
        try:
            return self.int_(parse_size(value), path, minimum=0)
        except SizeError as e:
            raise self.fail(path, str(e), value) from None

    def choice(self, value: Any, path: str, choices: tuple[str, ...]) -> str:
        if not isinstance(value, str) or value not in choices:
            raise self.fail(path, f"one of {', '.join(choices)}", value)
        return value

    def str_(self, value: Any, path: str) -> str:
        if not isinstance(value, str) or not value.strip() or len(value) > 200:
            raise self.fail(path, "a non-empty string (at most 200 characters)", value)
        if any(ord(c) < 32 for c in value):
            raise self.fail(path, "a string without control characters", value)
        return value

    def per_layer(self, value: Any, path: str, n: int, *, minimum: int) -> tuple[int, ...]:
        if isinstance(value, list):
            if len(value) != n:
                raise self.fail(path, f"an integer or a list of {n} integers (one per layer)", f"a list of {len(value)}")
            return tuple(self.int_(v, f"{path}[{i}]", minimum=minimum) for i, v in enumerate(value))
        return (self.int_(value, path, minimum=minimum),) * n


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

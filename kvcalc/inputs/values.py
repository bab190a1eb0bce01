"""Typed access to one mapping of an input, with errors that name the full key path (and the flag that set it); and
flag values -> layout overrides ({layout key path: (value, the flag that set it)})."""

from __future__ import annotations

import os
import re
from typing import Any

from ..vocab.errors import LayoutError
from ..vocab.keys import CHILDREN, FLAGS, KEY, Key
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
            # A count longer than 30 characters is no setting (and int() of 4,300 digits raises).
            m = re.match(_HUMAN_INT, value) if len(value) <= 30 else None
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

    def key(self, d: dict, path: str) -> Any:
        """One key of a simple kind, read by its row (keys.KEYS): see _read."""
        return _read(self, d, path)

    def section(self, data: Any, path: str) -> dict:
        """A mapping of rows: refuses a key the table has no row for, naming the ones it has."""
        return _section(self, data, path)

    def per_layer(self, value: Any, path: str, n: int, *, minimum: int) -> tuple[int, ...]:
        if isinstance(value, list):
            if len(value) != n:
                raise self.fail(path, f"an integer or a list of {n} integers (one per layer)",
                                f"a list of {len(value)}")
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


# ---------------------------------------------------------------------------------------------------------
# Keys read by their rows (vocab/keys.KEYS).

def written(d: dict, path: str) -> Any:
    """A section's value for one key as written, else the key's default (vocab/keys.KEYS)."""
    key = KEY[path]
    return d.get(key.leaf, key.default)


# path -> (leaf, nullable, default, read(reader, value, path)) of a key of a simple kind, made on its first read
# (validate runs once per sweep point and API call: a read is two lookups and a call).
_READERS: dict[str, tuple] = {}


def _read(r: Reader, d: dict, path: str) -> Any:
    """One key of a simple kind (int, choice, str, bool, human), read by its row: absent, or null where the row
    allows it, gives the row's default; any other value is checked against the row's kind and bounds."""
    try:
        leaf, nullable, default, read = _READERS[path]
    except KeyError:
        leaf, nullable, default, read = _READERS[path] = _reader(KEY[path])
    value = d.get(leaf)
    if value is None and (nullable or leaf not in d):
        return default
    return read(r, value, path)


def _reader(key: Key) -> tuple:
    kind, least, top = key.kind, key.minimum, key.cap or key.maximum
    if kind == "int" and top is None:
        read: Any = lambda r, v, path: r.int_(v, path, minimum=least)  # noqa: E731
    elif kind == "int":
        read = lambda r, v, path: r.int_(v, path, minimum=least, maximum=top)  # noqa: E731
    elif kind == "choice":
        read = lambda r, v, path: r.choice(v, path, key.choices)  # noqa: E731
    elif kind == "human":
        read = lambda r, v, path: r.human_int(v, path, minimum=least)  # noqa: E731
    elif kind == "bool":
        read = _bool_or_null if key.nullable else _bool
    elif kind == "str":
        read = Reader.str_
    else:  # pragma: no cover - a kvcalc bug
        raise TypeError(f"{key.path}: kind {kind} is not read by its row alone")
    return key.leaf, key.nullable, key.default, read


def _bool(r: Reader, value: Any, path: str) -> bool:
    if not isinstance(value, bool):
        raise r.fail(path, "true or false", value)
    return value


def _bool_or_null(r: Reader, value: Any, path: str) -> bool:
    if not isinstance(value, bool):
        raise r.fail(path, "true, false or null", value)
    return value


def _section(r: Reader, data: Any, path: str) -> dict:
    """A mapping of rows: refuses a key the table has no row for, naming the ones it has."""
    return r.mapping(data, path, CHILDREN[path])

"""Size strings to exact byte counts, dtype sizes, and integer helpers.

Every size field goes through `parse_size`, whatever type YAML handed us: PyYAML reads `64G` as a
string, `68_719_476_736` as an int and `6.4e+10` as a float. See ../shared/spec/units.md.
"""

from __future__ import annotations

import math
import re
from functools import cache

# `64G`, `64Gi`, `64GiB` = 64 * 2**30 (vLLM's reading); `64GB` = 64 * 10**9.
_BINARY = {"K": 1 << 10, "M": 1 << 20, "G": 1 << 30, "T": 1 << 40, "P": 1 << 50}
_DECIMAL = {"K": 10**3, "M": 10**6, "G": 10**9, "T": 10**12, "P": 10**15}
_SIZE_PATTERN = r"^\s*([0-9][0-9_]*(?:\.[0-9_]*)?|\.[0-9][0-9_]*)\s*([A-Za-z]*)\s*$"


@cache
def _size_re() -> re.Pattern:
    return re.compile(_SIZE_PATTERN)  # compiled on first use: kvcalc's start-up time is a target


def split_size(value: str) -> tuple[str, str] | None:
    """(number, unit) as _SIZE_PATTERN reads `value`, or None. (A hand-written scanner of the same grammar saved
    0.19 % of a cold start and 0.05 % of the 10,000-point sweep: not worth a second grammar.)"""
    m = _size_re().match(value)
    return None if m is None else (m.group(1), m.group(2))


SIZE_HELP = (
    "64G, 64Gi and 64GiB all mean 64 x 2^30 bytes (vLLM's convention); 64GB means 64 x 10^9 bytes; "
    "a plain number is bytes"
)


class SizeError(ValueError):
    """A size string that does not follow the grammar; the message says what would."""


def parse_size(value: object) -> int:
    """Return the exact number of bytes `value` denotes, or raise SizeError.

    Fractions with a unit are floored after exact rational arithmetic, which equals vLLM's
    `int(X * 2**30)` for GiB units (`0.1G` -> 107,374,182).
    """
    if isinstance(value, bool):
        raise SizeError("a size, not a boolean")
    if isinstance(value, int):
        if value < 0:
            raise SizeError("a non-negative size")
        return value
    if isinstance(value, float):
        # YAML reads 6.4e+10 as a float: exact below 2**53, where every integer is a float; above, the digits
        # written may not be the float's value, so the integer must be written out.
        if not math.isfinite(value) or value < 0 or value != int(value) or value >= 1 << 53:
            raise SizeError("a whole, non-negative number of bytes below 2^53 written as a float (or an integer, or "
                            "a string with a unit, e.g. 64GiB)")
        return int(value)
    if not isinstance(value, str) or len(value) > 40:  # 40 characters: far beyond any real size
        raise SizeError(f"a size such as 64GiB ({SIZE_HELP})")
    known = _PARSED.get(value)
    if known is not None:
        return known  # a sweep reads each of its budgets once per combination of the other axes
    n = _parse_size_text(value)
    if len(_PARSED) >= PARSED_LIMIT:
        _PARSED.clear()
    _PARSED[value] = n
    return n


# Size strings already read (the parse is a pure function of the text): 7.7 % of the 10,000-point sweep's
# instructions, which reads each budget once per combination of the other axes. Cleared when full.
_PARSED: dict[str, int] = {}
PARSED_LIMIT = 1024


def _parse_size_text(value: str) -> int:
    e = re.match(r"^\s*([0-9]+)(?:\.([0-9]*))?[eE]([+-]?[0-9]{1,3})\s*$", value) if "e" in value.lower() else None
    if e:
        # 6.4e10 (a string to YAML 1.1, which wants the sign) means what 6.4e+10 means: exact decimal arithmetic.
        whole, frac, exp = e.group(1), e.group(2) or "", int(e.group(3))
        digits, scale = int(whole + frac), len(frac) - exp
        if scale > 0 and digits % 10 ** scale:
            raise SizeError("a whole number of bytes")
        return digits * 10 ** -scale if scale <= 0 else digits // 10 ** scale
    split = split_size(value)
    if split is None:
        raise SizeError(f"a size such as 64GiB ({SIZE_HELP})")
    number_text, unit = split[0].replace("_", ""), split[1]
    whole, _, frac = number_text.partition(".")
    mult = _unit_multiplier(unit)
    if frac.strip("0") and mult == 1:
        raise SizeError("a whole number of bytes: a fraction needs a unit (e.g. 1.5GiB)")
    return scaled_floor(whole, frac, mult)


def _unit_multiplier(unit: str) -> int:
    if unit in ("", "B", "b"):
        return 1
    if len(unit) == 1:
        if unit in _BINARY:
            return _BINARY[unit]
        if unit.upper() in _BINARY:
            # vLLM reads lowercase as decimal, Kubernetes `m` as milli: too ambiguous to accept.
            raise SizeError(f"an unambiguous unit: '{unit}' is refused; write {unit.upper()}iB (2^n) or "
                            f"{unit.upper()}B (10^n)")
    if len(unit) == 2 and unit[1] == "i" and unit[0] in _BINARY:
        return _BINARY[unit[0]]
    low = unit.lower()
    if len(low) == 3 and low.endswith("ib") and low[0].upper() in _BINARY:
        return _BINARY[low[0].upper()]
    if len(low) == 2 and low.endswith("b") and low[0].upper() in _DECIMAL:
        return _DECIMAL[low[0].upper()]
    raise SizeError(f"a known unit (K/M/G/T, Ki..Ti, KiB..TiB, KB..TB), not '{unit}'")


def scaled_floor(whole: str, frac: str, mult: int) -> int:
    """floor(whole.frac x mult) from the decimal digits, exactly: '0', '1' x 2^30 -> 107,374,182 for 0.1 GiB."""
    scale = 10 ** len(frac)
    return (int(whole or "0") * scale + int(frac or "0")) * mult // scale


def gib_float_to_bytes(gib: float) -> int:
    """vLLM's `--kv-offloading-size X`: `int(X * (1 << 30))`, a float product truncated, as vLLM does it."""
    return int(gib * (1 << 30))


def cdiv(a: int, b: int) -> int:
    return -(-a // b)


def round_up(x: int, align: int) -> int:
    return cdiv(x, align) * align


# Element sizes of the torch dtypes the KV cache uses (bytes).
DTYPE_BYTES = {
    "float32": 4,
    "float16": 2,
    "bfloat16": 2,
    "uint8": 1,
    "int8": 1,
    "float8_e4m3fn": 1,
    "float8_e5m2": 1,
}

# Model dtype spellings accepted in a layout, mapped to the torch dtype name.
MODEL_DTYPES = {
    "bfloat16": "bfloat16",
    "bf16": "bfloat16",
    "float16": "float16",
    "fp16": "float16",
    "half": "float16",
    "float32": "float32",
    "fp32": "float32",
    "float": "float32",
}


def format_bytes(n: int) -> str:
    """Binary units for people: `68,719,476,736` -> `64 GiB`, `3,242,196,992` -> `3.02 GiB`."""
    if n < 1024:
        return f"{n} B"
    for unit, size in (("TiB", 1 << 40), ("GiB", 1 << 30), ("MiB", 1 << 20), ("KiB", 1 << 10)):
        if n >= size:
            if n % size == 0:
                return f"{n // size} {unit}"
            # Rounded to two decimals for display only; the exact integer is always shown beside it.
            hundredths = (n * 100 + size // 2) // size
            return f"{hundredths // 100}.{hundredths % 100:02d} {unit}"
    return f"{n} B"  # pragma: no cover - unreachable


def exact_bytes(n: int | None) -> str:
    """Exact bytes with a binary-unit reading: '68,719,476,736 B (64 GiB)'; '—' for None."""
    if n is None:
        return "—"
    if n < 1024:
        return f"{n:,} B"
    return f"{n:,} B ({format_bytes(n)})"


def gi_quantity(n: int) -> str:
    """Bytes as a Kubernetes quantity in whole Gi, rounded up (68,719,476,737 B -> 65Gi)."""
    return f"{-(-n // (1 << 30))}Gi"


def smallest_gib(cpu_bytes: int) -> float:
    """The smallest --kv-offloading-size with at most 3 decimals whose int(X * 2**30) reaches cpu_bytes."""
    thousandths = cdiv(cpu_bytes * 1000, 1 << 30)
    while int(thousandths / 1000 * (1 << 30)) < cpu_bytes:  # float rounding may land one byte short
        thousandths += 1
    return thousandths / 1000
